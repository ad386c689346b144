"""The zoom panel (``augkit.widgets.zoom``) without a browser: the PNG it displays decoded
back to pixels, the text under the cursor from the dicts ipyevents sends, the histogram's
counts and its SVG, the draws table, showing and hiding, and bad input."""

from __future__ import annotations

import html
import io
import re
import subprocess
import sys
from html.parser import HTMLParser

import numpy as np
import pytest
from PIL import Image

from augkit import ArgumentError, fn, grid, pipeline_def
from augkit.widgets.zoom import Zoom, channel_histogram


def decoded(zoom: Zoom) -> np.ndarray:
    """The pixels of the PNG the zoom's image widget holds."""
    assert zoom.image.format == "png"
    picture = Image.open(io.BytesIO(zoom.image.value))
    assert picture.format == "PNG"
    return np.asarray(picture)


def magnified(pixels: np.ndarray, k: int) -> np.ndarray:
    return np.repeat(np.repeat(pixels, k, axis=0), k, axis=1)


def mouse(kind: str, x: float | None, y: float | None, stamp: float) -> dict:
    """A message as ipyevents' front end sends it for an Image (``_send_dom_event``): the
    event's type as ``event`` and ``type``, modifiers, positions, ``dataX``/``dataY`` in the
    image's own pixels (and their ``arrayX``/``arrayY`` copies), ``target``."""
    message = {
        "event": kind,
        "type": kind,
        "altKey": False,
        "ctrlKey": False,
        "metaKey": False,
        "shiftKey": False,
        "timeStamp": stamp,
        "button": 0,
        "buttons": 0,
        "clientX": 100,
        "clientY": 200,
        "relativeX": x,
        "relativeY": y,
        "boundingRectWidth": 140.0,
        "boundingRectHeight": 70.0,
        "target": {},
    }
    if x is not None:
        message.update(dataX=x, dataY=y, arrayX=x, arrayY=y)
    return message


def send(zoom: Zoom, message: dict) -> None:
    """Deliver ``message`` the way a kernel does: to the Event widget's message handler, which
    calls the callbacks registered with ``on_dom_event``."""
    zoom.events._handle_mouse_msg(zoom.events, message, [])


@pytest.fixture
def rgb() -> np.ndarray:
    """A 10 x 20 (H x W) RGB uint8 image with every pixel different, and a few known ones."""
    sample = np.arange(10 * 20 * 3, dtype=np.uint32).reshape(10, 20, 3) % 256
    sample = sample.astype(np.uint8)
    sample[0, 0] = (1, 2, 3)
    sample[9, 19] = (250, 251, 252)
    sample[4, 7] = (120, 33, 10)
    return sample


class TableCells(HTMLParser):
    """The text of each <td>, row by row (entities decoded, as a browser shows them)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag == "td":
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "td" and self._cell is not None:
            self.rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def table(value: str) -> list[list[str]]:
    parser = TableCells()
    parser.feed(value)
    return parser.rows


def polylines(svg: str) -> list[tuple[str, list[tuple[int, int]]]]:
    """(stroke colour, points) of each polyline of the histogram's SVG."""
    found = []
    for points, colour in re.findall(
        r'<polyline points="([^"]*)" fill="none" stroke="([^"]*)"', svg
    ):
        pairs = [tuple(int(n) for n in p.split(",")) for p in points.split()]
        found.append((colour, pairs))
    return found


def test_png_is_the_sample_magnified_exactly(rgb):
    zoom = Zoom(magnify_below=64)
    zoom.show(rgb, title="people/grace_hopper.jpg · 3 people")
    # The smaller side (10) must reach 64: k = 7, the smallest integer that does.
    assert zoom.magnification == 7
    pixels = decoded(zoom)
    assert pixels.shape == (70, 140, 3)
    np.testing.assert_array_equal(pixels, magnified(rgb, 7))
    assert zoom.sample is not None
    np.testing.assert_array_equal(zoom.sample, rgb)
    assert "people/grace_hopper.jpg · 3 people" in html.unescape(zoom.title.value)
    assert "10×20×3 uint8" in zoom.title.value


def test_magnification_rules():
    zoom = Zoom()  # magnify_below=256
    zoom.show(np.zeros((300, 400, 3), np.uint8))
    assert zoom.magnification == 1
    assert decoded(zoom).shape == (300, 400, 3)
    zoom.show(np.zeros((128, 500, 3), np.uint8))
    assert zoom.magnification == 2
    # A thin strip: the longer side is kept within 4 * 256 (k = 128 would make it 128 000 px).
    zoom.show(np.zeros((2, 1000), np.uint8), layout="HW")
    assert zoom.magnification == 1
    zoom.show(np.zeros((2, 300), np.uint8), layout="HW")
    assert zoom.magnification == 3
    assert decoded(zoom).shape == (6, 900)
    for bad in (0, -3, 2.5, True, "256"):
        with pytest.raises(ArgumentError, match="magnify_below"):
            Zoom(magnify_below=bad)


def test_pixel_text(rgb):
    zoom = Zoom(magnify_below=64)
    assert zoom.pixel_text(0, 0) == ""  # nothing shown yet
    zoom.show(rgb)
    assert zoom.pixel_text(0, 0) == "x 0, y 0: R 1 G 2 B 3"
    assert zoom.pixel_text(19, 9) == "x 19, y 9: R 250 G 251 B 252"
    assert zoom.pixel_text(7, 4) == "x 7, y 4: R 120 G 33 B 10"
    assert zoom.pixel_text(np.int64(7), np.int32(4)) == "x 7, y 4: R 120 G 33 B 10"
    for x, y in ((20, 0), (0, 10), (-1, 0), (0, -1), (100, 100)):
        assert zoom.pixel_text(x, y) == ""
    with pytest.raises(ArgumentError, match="integers"):
        zoom.pixel_text(1.5, 2)


def test_mousemove_gives_the_pixel_under_the_cursor(rgb):
    zoom = Zoom(magnify_below=64)
    zoom.show(rgb)
    k = zoom.magnification
    # Every screen pixel of the k x k square of sample pixel (7, 4) names that pixel.
    for dx, dy in ((0, 0), (k - 1, k - 1), (3, 5)):
        send(zoom, mouse("mousemove", 7 * k + dx, 4 * k + dy, stamp=10.0))
        assert zoom.pixel.value == "x 7, y 4: R 120 G 33 B 10"
    send(zoom, mouse("mousemove", 20 * k - 1, 10 * k - 1, stamp=11.0))
    assert zoom.pixel.value == zoom.pixel_text(19, 9) == "x 19, y 9: R 250 G 251 B 252"
    # Outside: one past the end (ipyevents rounds), negative (a border), no data at all.
    for x, y in ((20 * k, 0), (0, 10 * k), (-1, 3), (3, -2)):
        send(zoom, mouse("mousemove", 7 * k, 4 * k, stamp=12.0))
        assert zoom.pixel.value != ""
        send(zoom, mouse("mousemove", x, y, stamp=12.5))
        assert zoom.pixel.value == ""
    send(zoom, mouse("mousemove", 7 * k, 4 * k, stamp=13.0))
    send(zoom, mouse("mousemove", None, None, stamp=13.5))
    assert zoom.pixel.value == ""
    # The handler itself, as the Viewer's tests may call it.
    zoom._on_event(mouse("mousemove", 0, 0, stamp=14.0))
    assert zoom.pixel.value == "x 0, y 0: R 1 G 2 B 3"


def test_mouseleave_clears_and_a_late_throttled_move_does_not_come_back(rgb):
    zoom = Zoom(magnify_below=64)
    zoom.show(rgb)
    send(zoom, mouse("mousemove", 0, 0, stamp=100.0))
    assert zoom.pixel.value
    send(zoom, mouse("mouseleave", 5, 5, stamp=120.0))
    assert zoom.pixel.value == ""
    # The trailing call of the throttled mousemoves: its event happened before the leave.
    send(zoom, mouse("mousemove", 7, 7, stamp=110.0))
    assert zoom.pixel.value == ""
    send(zoom, mouse("mousemove", 0, 0, stamp=130.0))  # back in
    assert zoom.pixel.value == "x 0, y 0: R 1 G 2 B 3"
    send(zoom, mouse("click", 0, 0, stamp=140.0))  # not watched: ignored
    assert zoom.pixel.value == "x 0, y 0: R 1 G 2 B 3"
    # A reloaded page (or a second view) counts its timeStamps from its own load: a move far
    # older than the leave is from another clock, and shown.
    send(zoom, mouse("mouseleave", 5, 5, stamp=60_000.0))
    assert zoom.pixel.value == ""
    send(zoom, mouse("mousemove", 7, 7, stamp=2_000.0))
    assert zoom.pixel.value == zoom.pixel_text(1, 1) != ""
    send(zoom, mouse("mousemove", 0, 0, stamp=2_030.0))
    assert zoom.pixel.value == "x 0, y 0: R 1 G 2 B 3"


def test_events_widget_watches_the_image_throttled():
    zoom = Zoom()
    assert zoom.events.source is zoom.image
    assert "mousemove" in zoom.events.watched_events
    assert zoom.events.throttle_or_debounce == "throttle"
    assert 10 <= zoom.events.wait <= 50


def test_mask_is_coloured_by_class_and_reads_class_ids():
    mask = np.zeros((6, 8), np.uint8)
    mask[1:3, 2:5] = 2
    mask[4, 6] = 14
    mask[5, 0] = 1
    zoom = Zoom(magnify_below=24)
    zoom.show(mask, layout="HW", kind="mask", title="mask tile")
    assert zoom.magnification == 4
    colours = grid.to_display(mask, "HW", "mask")[0]
    assert colours.shape == (6, 8, 3)
    np.testing.assert_array_equal(decoded(zoom), magnified(colours, 4))
    assert zoom.pixel_text(3, 1) == "x 3, y 1: class 2"
    assert zoom.pixel_text(6, 4) == "x 6, y 4: class 14"
    assert zoom.pixel_text(0, 0) == "x 0, y 0: class 0"
    assert "mask" in zoom.title.value
    # One channel of class ids: one gray curve over the ids.
    assert zoom.counts.shape == (1, 256)
    assert zoom.counts[0, 2] == 6 and zoom.counts[0, 14] == 1
    ((colour, _),) = polylines(zoom.histogram.value)
    assert colour == "#555555"
    # An int32 HWC mask of one channel is the same label map.
    zoom.show(mask.astype(np.int32)[..., None], layout="HWC", kind="mask")
    np.testing.assert_array_equal(decoded(zoom), magnified(colours, 4))
    assert zoom.pixel_text(6, 4) == "x 6, y 4: class 14"
    # A soft mask (values not whole) is drawn and read as an image, as the grid does.
    soft = mask.astype(np.float32) / 3
    zoom.show(soft, layout="HW", kind="mask")
    assert zoom.pixel_text(3, 1) == "x 3, y 1: 0.6667"
    assert decoded(zoom).ndim == 2


def test_float_chw_is_shown_transposed_with_its_own_values():
    rng = np.random.default_rng(3)
    chw = rng.uniform(-1.0, 2.0, (3, 12, 16)).astype(np.float32)
    chw[0, 5, 9] = 0.123456
    zoom = Zoom(magnify_below=36)
    zoom.show(chw, layout="CHW", title="normalized")
    assert zoom.magnification == 3
    assert zoom.sample.shape == (12, 16, 3)
    np.testing.assert_array_equal(zoom.sample, np.moveaxis(chw, 0, -1))
    pixels, value_range = grid.to_display(chw, "CHW")
    assert value_range is not None  # rescaled, and the title says from what
    np.testing.assert_array_equal(decoded(zoom), magnified(pixels, 3))
    assert "rescaled from [" in zoom.title.value
    _, g, b = chw[:, 5, 9]
    assert zoom.pixel_text(9, 5) == f"x 9, y 5: R 0.1235 G {g:.4g} B {b:.4g}"
    # layout="" guesses CHW from the shape, as the grid does.
    zoom.show(chw, layout="")
    assert zoom.sample.shape == (12, 16, 3)


def test_gray_and_rgba():
    gray = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    zoom = Zoom(magnify_below=6)
    zoom.show(gray, layout="HW")
    assert zoom.magnification == 2
    pixels = decoded(zoom)
    assert pixels.shape == (6, 8)  # grayscale PNG
    np.testing.assert_array_equal(pixels, magnified(gray, 2))
    assert zoom.pixel_text(1, 2) == "x 1, y 2: 180"
    zoom.show(gray[..., None], layout="HWC")
    assert zoom.pixel_text(1, 2) == "x 1, y 2: 180"
    rgba = np.zeros((3, 4, 4), np.uint8)
    rgba[1, 2] = (10, 20, 30, 40)
    zoom.show(rgba)
    assert zoom.pixel_text(2, 1) == "x 2, y 1: R 10 G 20 B 30 A 40"
    np.testing.assert_array_equal(decoded(zoom), magnified(rgba[..., :3], 2))
    assert zoom.counts.shape == (4, 256)
    assert len(polylines(zoom.histogram.value)) == 4


def test_histogram_counts_uint8(rgb):
    zoom = Zoom()
    zoom.show(rgb)
    assert zoom.counts.shape == (3, 256) and zoom.counts.dtype == np.int64
    np.testing.assert_array_equal(zoom.bin_edges, np.arange(257))
    for c in range(3):
        expected, _ = np.histogram(rgb[..., c], bins=256, range=(0, 256))
        np.testing.assert_array_equal(zoom.counts[c], expected)
        np.testing.assert_array_equal(np.histogram(rgb[..., c], bins=zoom.bin_edges)[0], expected)
    svg = zoom.histogram.value
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert ">0</text>" in svg and ">255</text>" in svg
    lines = polylines(svg)
    assert [colour for colour, _ in lines] == ["#d62728", "#2ca02c", "#1f77b4"]
    # The curves are the counts: 256 points left to right, y linear in the count (the
    # scale from the tallest and the lowest bin), the tallest bin at the top of the plot.
    peak = zoom.counts.max()
    assert f"{peak} px per bin at the top<" in svg
    tops = []
    for c, (_, points) in enumerate(lines):
        counts = zoom.counts[c]
        assert len(points) == 256
        xs = [x for x, _ in points]
        assert xs == sorted(set(xs))
        ys = np.array([y for _, y in points], dtype=np.float64)
        high, low = int(np.argmax(counts)), int(np.argmin(counts))
        scale = (ys[low] - ys[high]) / (counts[high] - counts[low])
        np.testing.assert_allclose(ys, ys[high] + (counts[high] - counts) * scale, atol=1.0)
        tops.append(ys[high])
    assert min(tops) == min(y for _, points in lines for _, y in points)


def test_histogram_end_bins_do_not_flatten_the_curve():
    image = np.zeros((20, 20), np.uint8)  # mostly black: a rotation's corners
    image[:5] = np.arange(20, dtype=np.uint8) * 10  # a ramp, 5 pixels per value
    image[5, :3] = 30
    zoom = Zoom()
    zoom.show(image, layout="HW")
    assert zoom.counts[0, 0] == 20 * 15 - 3 + 5 and zoom.counts[0, 30] == 8
    ((_, points),) = polylines(zoom.histogram.value)
    ys = [y for _, y in points]
    baseline = ys[1]  # value 1: no pixel
    assert zoom.counts[0, 1] == 0
    # The scale is the tallest inner bin (8 pixels of value 30); value 0 is clipped to it.
    assert ys[30] == ys[0] < baseline
    assert baseline - ys[10] == pytest.approx((baseline - ys[30]) * 5 / 8, abs=1)
    assert "8 px per bin at the top, ends above" in zoom.histogram.value


def test_histogram_counts_float_and_other_dtypes():
    rng = np.random.default_rng(5)
    image = rng.normal(0.0, 3.0, (30, 40, 3)).astype(np.float32)
    image[0, 0, 1] = np.nan
    image[1, 1, 2] = np.inf
    zoom = Zoom()
    zoom.show(image)
    finite = image[np.isfinite(image)]
    low, high = float(finite.min()), float(finite.max())
    np.testing.assert_allclose(zoom.bin_edges, np.linspace(low, high, 257))
    for c in range(3):
        channel = image[..., c][np.isfinite(image[..., c])]
        expected, edges = np.histogram(channel, bins=256, range=(low, high))
        np.testing.assert_array_equal(zoom.counts[c], expected)
        np.testing.assert_array_equal(zoom.bin_edges, edges)
    assert zoom.counts[0].sum() == 1200 and zoom.counts[1].sum() == 1199
    assert f">{low:.4g}</text>" in zoom.histogram.value
    assert f">{high:.4g}</text>" in zoom.histogram.value
    # int16, all one value: np.histogram's range [v - 0.5, v + 0.5].
    counts, edges = channel_histogram(np.full((4, 5), -7, np.int16))
    assert counts[0].sum() == 20 and edges[0] == -7.5 and edges[-1] == -6.5
    np.testing.assert_array_equal(counts[0], np.histogram(np.full(20, -7), bins=256)[0])
    counts, _ = channel_histogram(np.array([[True, False], [True, True]]))
    assert counts[0, 1] == 3 and counts[0, 0] == 1


def test_draws_table_is_escaped():
    zoom = Zoom()
    record = {
        "rotate.angle": 12.4137,
        "flip.horizontal": 1,
        "crop<b>.window": [0.25, 0.5],
        "note": "<script>alert(1)</script>",
    }
    zoom.show(np.zeros((8, 8, 3), np.uint8), draws=record)
    assert "<script>" not in zoom.draws.value and "<b>" not in zoom.draws.value
    assert table(zoom.draws.value) == [
        ["rotate.angle", "12.41"],
        ["flip.horizontal", "1"],
        ["crop<b>.window", "[0.25, 0.5]"],
        ["note", "<script>alert(1)</script>"],
    ]
    zoom.show(np.zeros((8, 8, 3), np.uint8))
    assert zoom.draws.value == ""
    zoom.show(np.zeros((8, 8, 3), np.uint8), draws={})
    assert zoom.draws.value == ""
    zoom.show(np.zeros((8, 8, 3), np.uint8), title="<i>x</i> & y")
    assert "&lt;i&gt;x&lt;/i&gt; &amp; y" in zoom.title.value


def test_a_pipelines_draws_for_one_sample():
    ramp = np.arange(24 * 32 * 3, dtype=np.uint32).reshape(24, 32, 3).astype(np.uint8)

    @pipeline_def(
        batch_size=3, num_threads=1, device_id=None, seed=2, exec_async=False, exec_pipelined=False
    )
    def rotated():
        images = fn.external_source(source=lambda: [ramp] * 3, layout="HWC")
        angle = fn.random.uniform(range=(-30.0, 30.0))
        return fn.rotate(images, angle=angle, keep_size=True, name="rotate")

    pipe = rotated()
    try:
        (batch,) = pipe.run()
        records = pipe.draws("rotate")
        zoom = Zoom()
        zoom.show(batch.at(1), layout=batch.layout(), kind=batch.kind.name, draws=records[1])
        assert table(zoom.draws.value) == [["rotate.angle", f"{records[1]['rotate.angle']:.4g}"]]
        np.testing.assert_array_equal(zoom.sample, batch.at(1))
    finally:
        pipe.close()


def test_show_hide_and_close():
    zoom = Zoom()
    assert zoom.root.layout.display == "none"
    zoom.show(np.zeros((4, 4, 3), np.uint8))
    assert zoom.root.layout.display != "none"
    zoom._on_event(mouse("mousemove", 1, 1, stamp=1.0))
    assert zoom.pixel.value
    zoom.hide()
    assert zoom.root.layout.display == "none"
    assert zoom.pixel.value == ""
    zoom.show(np.ones((4, 4, 3), np.uint8))
    assert zoom.root.layout.display != "none"
    zoom.close_button.click()
    assert zoom.root.layout.display == "none"
    assert zoom.image in zoom.root.children[1].children


@pytest.mark.parametrize(
    ("sample", "arguments", "message"),
    [
        (np.zeros(5, np.uint8), {}, r"shape \(5,\) \(1-D\)"),
        (np.zeros((2, 4, 4, 3), np.uint8), {}, r"shape \(2, 4, 4, 3\) \(4-D\)"),
        (np.zeros((4, 4, 3), np.uint8), {"layout": "NHWC"}, "unknown layout 'NHWC'"),
        (np.zeros((4, 4, 3), np.uint8), {"layout": "WHC"}, "unknown layout 'WHC'"),
        (np.zeros((4, 4), np.uint8), {"layout": "HWC"}, r"shape \(4, 4\).*layout 'HWC'.*'HW'"),
        (np.zeros((4, 4, 3), np.uint8), {"layout": "HW"}, r"shape \(4, 4, 3\).*layout 'HW'"),
        (np.zeros((4, 4, 2), np.uint8), {}, r"shape \(4, 4, 2\).*2 channels"),
        (np.zeros((3, 4, 5), np.uint8), {"layout": "HWC"}, r"shape \(3, 4, 5\).*5 channels"),
        (np.zeros((2, 4, 5), np.uint8), {"layout": ""}, r"shape \(2, 4, 5\).*guessed"),
        (np.zeros((0, 4, 3), np.uint8), {}, r"shape \(0, 4, 3\) is empty"),
        (np.zeros((4, 4, 3), np.complex64), {}, "dtype complex64"),
        (np.zeros((4, 4, 3), np.uint8), {"kind": "labels"}, "kind 'labels'"),
        (np.zeros((4, 4, 3), np.uint8), {"kind": "pixels"}, "kind='pixels'"),
        (np.zeros((4, 4, 3), np.uint8), {"title": 3}, "title"),
        (np.zeros((4, 4, 3), np.uint8), {"draws": [1, 2]}, "draws must be a mapping"),
    ],
)
def test_bad_input_is_refused_and_changes_nothing(sample, arguments, message):
    zoom = Zoom()
    shown = np.full((4, 4, 3), 9, np.uint8)
    zoom.show(shown, title="before")
    before = (zoom.image.value, zoom.title.value, zoom.counts.copy())
    with pytest.raises(ArgumentError, match=message):
        zoom.show(sample, **arguments)
    assert (zoom.image.value, zoom.title.value) == before[:2]
    np.testing.assert_array_equal(zoom.counts, before[2])
    assert zoom.sample is shown


def test_the_module_imports_no_matplotlib():
    code = "import sys, augkit.widgets.zoom; print('matplotlib' in sys.modules)"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == "False"
