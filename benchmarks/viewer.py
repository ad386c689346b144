"""``python -m benchmarks.viewer``: how fast the viewer answers, against issue 15's targets.

The grid is the issue's: 16 tiles of 300 x 300 (``Viewer(pipe, columns=4, max_samples=16,
tile=300)``) of a batch of 16 photos (``data/images``: decode, resize to 300 x 300, a random
rotation, then the Python function ``brighten``, whose ``amount`` the slider sets). Each figure
is the median of ``--repeat`` runs, all in one run:

- slider move, server side: from a new value of the slider to the new bytes in the ``Image``
  widget (``set_function``, ``rerun(["brighten"])`` of the cached batch, the grid drawn and
  encoded), with JPEG (the viewer's default, ``image_format="jpeg"``, quality 90) and with PNG
  (``image_format="png"``), and the bytes of one update of each; target <= 40 ms;
- its parts: the rerun alone, and the encoding alone of the same 16-tile picture in each format
  (``augkit.grid.to_jpeg`` / ``to_png``), so that the drawing is the rest;
- a sweep: ``viewer.sweep("brighten", "amount", 5 values, samples=8)``, five reruns, the
  control's own value put back, the 5 x 8 grid drawn and encoded; target <= 0.5 s;
- render: the grid of the node shown drawn and encoded again (the viewer's ``_render``), and the
  same grid as a matplotlib figure saved as PNG (``augkit.viz.image_grid``, the path the viewer
  does not take) for the ratio;
- the browser: key press -> new grid decoded in Chromium, measured by the JupyterLab browser
  test (``tests/test_viewer_browser.py``) and read here from ``tests/artifacts/viewer_timing.json``
  when that file exists (with its date: it may come from another run); target <= 100 ms.

The table gives the ratios measured / target (below 1 meets it) and is written to
``benchmarks/results/viewer.md`` (``--out``). Nothing is asserted: the figures are a shared
2-core machine's.

Traps: every move alternates between two values, so each is a change (a slider set to its own
value sends nothing); the first moves are untimed (Pillow's and NumPy's first-call costs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from augkit import Pipeline, fn, grid, types, viz
from augkit.widgets import Viewer
from benchmarks import machine as mc
from benchmarks import report as rp

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
TIMING_FILE = ROOT / "tests" / "artifacts" / "viewer_timing.json"
BATCH, COLUMNS, TILE = 16, 4, 300
SERVER_TARGET_MS = 40.0
SWEEP_TARGET_MS = 500.0
BROWSER_TARGET_MS = 100.0
SWEEP_VALUES = (0, 25, 50, 75, 100)
SWEEP_SAMPLES = 8


def brighten(image, amount=20):
    return np.clip(image.astype(np.int16) + amount, 0, 255).astype(np.uint8)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.viewer", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--repeat", type=int, default=20, help="runs per measure (median)")
    parser.add_argument(
        "--out", type=Path, default=RESULTS / "viewer.md", help="the Markdown report"
    )
    parser.add_argument(
        "--timing",
        type=Path,
        default=TIMING_FILE,
        help="the browser test's timing (default tests/artifacts/viewer_timing.json)",
    )
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error(f"--repeat must be >= 1, got {args.repeat}")
    return args


def median_ms(action: Callable[[int], object], repeat: int) -> float:
    times = []
    for k in range(repeat):
        start = time.perf_counter()
        action(k)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def make_pipe() -> Pipeline:
    pipe = Pipeline(batch_size=BATCH, num_threads=2, device_id=None, seed=0)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=str(ROOT / "data" / "images"))
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        images = fn.resize(images, resize_x=TILE, resize_y=TILE)
        angle = fn.random.uniform(range=(-20.0, 20.0))
        images = fn.rotate(images, angle=angle, keep_size=True, fill_value=0)
        pipe.set_outputs(fn.python_function(images, function=brighten, name="brighten"), labels)
    return pipe


def make_viewer(pipe: Pipeline, image_format: str) -> Viewer:
    viewer = Viewer(
        pipe,
        columns=COLUMNS,
        max_samples=BATCH,
        tile=TILE,
        params={"brighten": {"amount": (0, 100, 5)}},
        image_format=image_format,
    )
    if viewer.error.value:
        raise RuntimeError(f"the viewer shows an error: {viewer.last_error!r}")
    if _format(viewer.image.value) != image_format.upper():
        raise RuntimeError(
            f"asked for {image_format}, the viewer sends {_format(viewer.image.value)}"
        )
    return viewer


def time_moves(viewer: Viewer, repeat: int) -> tuple[float, int]:
    """The median ms of a slider move, server side, and the bytes of one update."""
    slider = viewer.sliders["brighten"]["amount"]

    def move(k: int) -> None:
        before = viewer.image.value
        slider.value = 30 if slider.value == 10 else 10  # alternate: every move is a change
        if viewer.image.value == before or viewer.last_error is not None:
            raise RuntimeError(f"a slider move did not redraw the grid: {viewer.last_error!r}")

    for k in range(3):  # untimed: first-call costs
        move(k)
    return median_ms(move, repeat), len(viewer.image.value)


def read_browser_timing(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def ratio(ms: float, target: float) -> str:
    return f"{ms / target:.2f}"


def report(figures: dict, browser: dict | None, args: argparse.Namespace) -> str:
    kib = figures["bytes"]
    rows = [
        (
            "slider move, server side, JPEG q90 (default)",
            f"{figures['move_jpeg']:.1f}",
            f"{kib['jpeg'] / 1024:.0f} KiB",
            f"≤ {SERVER_TARGET_MS:.0f} ms",
            ratio(figures["move_jpeg"], SERVER_TARGET_MS),
        ),
        (
            'slider move, server side, PNG (`image_format="png"`)',
            f"{figures['move_png']:.1f}",
            f"{kib['png'] / 1024:.0f} KiB",
            f"≤ {SERVER_TARGET_MS:.0f} ms",
            ratio(figures["move_png"], SERVER_TARGET_MS),
        ),
        ('  of which: `rerun(["brighten"])`', f"{figures['rerun']:.1f}", "", "", ""),
        ("  of which: JPEG q90 encoding", f"{figures['encode_jpeg']:.1f}", "", "", ""),
        ("  of which: PNG encoding (zlib level 1)", f"{figures['encode_png']:.1f}", "", "", ""),
        (
            f"sweep, {len(SWEEP_VALUES)} values × {SWEEP_SAMPLES} samples "
            f"({figures['sweep_format']})",
            f"{figures['sweep']:.1f}",
            f"{kib['sweep'] / 1024:.0f} KiB",
            f"≤ {SWEEP_TARGET_MS:.0f} ms",
            ratio(figures["sweep"], SWEEP_TARGET_MS),
        ),
        ("render: the grid drawn + encoded again (JPEG)", f"{figures['render']:.1f}", "", "", ""),
        (
            "matplotlib figure → PNG, the same grid",
            f"{figures['matplotlib']:.1f}",
            "",
            "",
            f"({figures['matplotlib'] / figures['render']:.0f}× render)",
        ),
    ]
    if browser is None:
        rows.append(
            (
                "browser: key press → new grid decoded",
                "not measured",
                "",
                f"≤ {BROWSER_TARGET_MS:.0f} ms",
                "",
            )
        )
        browser_note = (
            f"The browser row needs `{rp.shown(args.timing)}`: run `.venv/bin/pytest "
            "tests/test_viewer_browser.py -k jupyterlab` (it writes it), then this again."
        )
    else:
        rows.append(
            (
                f"browser: key press → new grid decoded ({browser['format'].upper()})",
                f"{browser['median_ms']:.1f} (max {browser['max_ms']:.1f})",
                f"{browser['bytes'] / 1024:.0f} KiB",
                f"≤ {BROWSER_TARGET_MS:.0f} ms",
                ratio(browser["median_ms"], BROWSER_TARGET_MS),
            )
        )
        arrived = browser.get("arrived_median_ms", float("nan"))
        browser_note = (
            f"The browser row is read from `{rp.shown(args.timing)}` (JupyterLab in headless "
            f"Chromium, {browser['presses']} arrow keys one at a time, measured in the page "
            "from the key press to `img.decode()` of the new grid; medians: the new bytes were "
            f"in the page after {arrived:.1f} ms, the next animation frame after "
            f"{browser['frame_median_ms']:.1f} ms), measured {browser['measured']}, not in this "
            "run: rerun the browser test first for figures of the same moment."
        )
    lines = [
        "# The viewer's speed (issue 15)",
        "",
        *mc.machine_info(ROOT, 4),
        f"- {BATCH} photos of `data/images` decoded, resized to {TILE}×{TILE}, rotated by a "
        f"random angle, then `brighten` (a Python function); `Viewer(pipe, columns={COLUMNS}, "
        f"max_samples={BATCH}, tile={TILE})`; medians of {args.repeat} runs "
        "(`python -m benchmarks.viewer`)",
        "",
        "| measure | ms (median) | bytes per update | target | measured / target |",
        "| --- | --- | --- | --- | --- |",
        *(f"| {' | '.join(row)} |" for row in rows),
        "",
        "Server side: from the slider's new value to the new bytes in the `Image` widget "
        "(the Python function rerun on the cached batch, nothing read or decoded again, the grid "
        "drawn and encoded); the drawing is what is left of it after the rerun and the encoding. "
        + browser_note,
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    figures: dict = {"bytes": {}}
    pipe = make_pipe()
    try:
        for image_format in ("jpeg", "png"):
            viewer = make_viewer(pipe, image_format)
            ms, size = time_moves(viewer, args.repeat)
            figures[f"move_{image_format}"], figures["bytes"][image_format] = ms, size
        # The parts, on the last viewer's batch: the rerun, then each encoding of one picture.
        figures["rerun"] = median_ms(lambda _: pipe.rerun(["brighten"]), args.repeat)
        picture = grid.render(pipe.value("brighten")[:BATCH], columns=COLUMNS, tile=TILE)
        figures["encode_jpeg"] = median_ms(lambda _: grid.to_jpeg(picture, 90), args.repeat)
        figures["encode_png"] = median_ms(lambda _: grid.to_png(picture), args.repeat)

        viewer = make_viewer(pipe, "jpeg")
        figures["render"] = median_ms(lambda _: viewer._render(), args.repeat)
        batch = viewer.batch
        figures["matplotlib"] = median_ms(lambda _: _matplotlib_png(batch), 5)

        def sweep(_: int) -> None:
            viewer.sweep("brighten", "amount", SWEEP_VALUES, samples=SWEEP_SAMPLES)

        sweep(0)  # untimed
        figures["sweep"] = median_ms(sweep, args.repeat)
        figures["bytes"]["sweep"] = len(viewer.image.value)
        figures["sweep_format"] = _format(viewer.image.value)
    finally:
        pipe.close()
    text = report(figures, read_browser_timing(args.timing), args)
    rp.publish(text, args.out)
    return 0


def _matplotlib_png(batch: object) -> None:
    import matplotlib.pyplot as plt

    figure = viz.image_grid(batch)
    try:
        figure.savefig(_Sink(), format="png")
    finally:
        plt.close(figure)


def _format(data: bytes) -> str:
    """The format of encoded image bytes, by their first bytes (the widget may hold a
    memoryview)."""
    data = bytes(data[:4])
    if data.startswith(b"\x89PNG"):
        return "PNG"
    if data.startswith(b"\xff\xd8"):
        return "JPEG"
    return "unknown format"


class _Sink:
    """A file that forgets what is written (savefig needs one)."""

    def write(self, data: bytes) -> int:
        return len(data)


if __name__ == "__main__":
    sys.exit(main())
