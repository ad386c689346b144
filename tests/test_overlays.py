"""Overlays (``augkit.overlays``) drawn by ``augkit.viz`` over real photos: boxes, keypoints,
masks and polygons land on the pixels of what they mark, in the tile's scale.

The reference is independent of the overlay code: a rectangle (or a marker, or a region) is
painted into the photo with NumPy, the photo is drawn without overlays (Pillow's resize puts
the painted rectangle where it lands in the tile), and the overlay's own pixels (the exact
colour of their class, which the photo never has there) must coincide with it within 1 px.
"""

from __future__ import annotations

import io

import matplotlib
import numpy as np
import pytest
from PIL import Image

from augkit import TensorList, fn, kinds, overlays, pipeline_def, viz
from augkit.errors import ArgumentError

matplotlib.use("Agg")

PAD = 4
GREEN = (0, 255, 0)
RED = overlays.class_colour(5)  # (214, 39, 40)
WHITE = overlays.class_colour(1)  # boxes without labels (their tags would be of that colour)
# The painted rectangle, in pixels of the photo: columns 60..249, rows 40..199 (edges 250, 200).
LEFT, TOP, RIGHT, BOTTOM = 60, 40, 250, 200


@pytest.fixture(scope="module")
def cat() -> np.ndarray:
    """chelsea_cat.jpg (451 x 300) with a 3 px green rectangle outline painted in."""
    photo = np.asarray(Image.open("data/images/animals/chelsea_cat.jpg").convert("RGB")).copy()
    photo[TOP : TOP + 3, LEFT:RIGHT] = GREEN
    photo[BOTTOM - 3 : BOTTOM, LEFT:RIGHT] = GREEN
    photo[TOP:BOTTOM, LEFT : LEFT + 3] = GREEN
    photo[TOP:BOTTOM, RIGHT - 3 : RIGHT] = GREEN
    return photo


def tile_pixels(picture, tile: int) -> np.ndarray:
    """The first tile of a grid without titles, as an array."""
    pixels = np.asarray(picture.convert("RGB")) if hasattr(picture, "convert") else picture
    return pixels[PAD : PAD + tile, PAD : PAD + tile]


def extent(mask: np.ndarray) -> tuple[int, int, int, int]:
    """(first column, first row, last column, last row) of the True pixels."""
    rows, columns = np.nonzero(mask)
    assert rows.size, "nothing found"
    return int(columns.min()), int(rows.min()), int(columns.max()), int(rows.max())


def exactly(pixels: np.ndarray, colour: tuple[int, int, int]) -> np.ndarray:
    return (pixels == np.array(colour, np.uint8)).all(axis=-1)


def green(pixels: np.ndarray) -> np.ndarray:
    p = pixels.astype(int)
    return (p[..., 1] > 150) & (p[..., 0] < 110) & (p[..., 2] < 110)


def batch(samples, kind) -> TensorList:
    return TensorList([np.asarray(s) for s in samples], kind=kind)


# --- boxes -----------------------------------------------------------------------------------
BOX_ENCODINGS = {
    "relative ltrb": (
        kinds.boxes("ltrb", True),
        lambda w, h: [LEFT / w, TOP / h, RIGHT / w, BOTTOM / h],
    ),
    "absolute ltrb": (kinds.boxes("ltrb", False), lambda w, h: [LEFT, TOP, RIGHT, BOTTOM]),
    "relative xywh": (
        kinds.boxes("xywh", True),
        lambda w, h: [LEFT / w, TOP / h, (RIGHT - LEFT) / w, (BOTTOM - TOP) / h],
    ),
    "absolute xywh": (
        kinds.boxes("xywh", False),
        lambda w, h: [LEFT, TOP, RIGHT - LEFT, BOTTOM - TOP],
    ),
}


@pytest.mark.parametrize("tile", [256, 128, 1024])
@pytest.mark.parametrize("encoding", list(BOX_ENCODINGS))
def test_a_box_lands_on_the_rectangle_it_marks(cat, encoding, tile):
    kind, coordinates = BOX_ENCODINGS[encoding]
    height, width = cat.shape[:2]
    images = TensorList([cat], "HWC", kind=kinds.IMAGE)
    boxes = batch([np.array([coordinates(width, height)], np.float32)], kind)
    plain = tile_pixels(viz.render_grid(images, tile=tile), tile)
    drawn = tile_pixels(viz.render_grid(images, boxes=boxes, tile=tile), tile)
    outline = exactly(drawn, WHITE) & ~exactly(plain, WHITE)
    painted = extent(green(plain))
    scale = tile / width
    expected = (LEFT * scale, TOP * scale, RIGHT * scale - 1, BOTTOM * scale - 1)
    assert np.abs(np.subtract(painted, expected)).max() <= 1.0  # the reference itself
    assert np.abs(np.subtract(extent(outline), painted)).max() <= 1, (extent(outline), painted)
    # The outline is a thin frame, not a filled box: the middle of the rectangle is untouched.
    middle = drawn[round(120 * scale), round(150 * scale)]
    assert tuple(middle) == tuple(plain[round(120 * scale), round(150 * scale)])


def test_boxes_given_as_arrays_take_box_format_and_are_relative_by_their_values(cat):
    height, width = cat.shape[:2]
    tile = 256
    reference = tile_pixels(
        viz.render_grid(
            [cat], boxes=batch([[[LEFT, TOP, RIGHT, BOTTOM]]], kinds.boxes("ltrb", False))
        ),
        tile,
    )
    plain = exactly(tile_pixels(viz.render_grid([cat]), tile), WHITE)
    for encoding, format_ in (("absolute xywh", "xywh"), ("relative ltrb", "ltrb")):
        values = [np.array([BOX_ENCODINGS[encoding][1](width, height)], np.float32)]
        drawn = viz.render_grid([cat], boxes=values, box_format=format_)
        outline = exactly(tile_pixels(drawn, tile), WHITE) & ~plain
        expected = extent(exactly(reference, WHITE) & ~plain)
        assert np.abs(np.subtract(extent(outline), expected)).max() <= 1


def test_an_enlarged_small_image_gets_its_box_on_the_same_pixels(cat):
    small = cat[::10, ::10].copy()  # 46 x 30: drawn enlarged, nearest neighbour
    height, width = small.shape[:2]
    box = [6 / width, 4 / height, 25 / width, 20 / height]
    plain = exactly(tile_pixels(viz.render_grid([small], tile=256), 256), WHITE)
    drawn = tile_pixels(viz.render_grid([small], boxes=[np.array([box])], tile=256), 256)
    scale = 256 / width
    expected = (6 * scale, 4 * scale, 25 * scale - 1, 20 * scale - 1)
    assert np.abs(np.subtract(extent(exactly(drawn, WHITE) & ~plain), expected)).max() <= 1


def test_box_colours_follow_the_mask_palette_and_tags_name_the_class(cat):
    boxes = batch([np.array([[0.1, 0.3, 0.4, 0.9], [0.5, 0.3, 0.9, 0.9]])], kinds.BOXES)
    labels = batch([np.array([2, 3], np.int32)], kinds.LABELS)
    drawn = tile_pixels(viz.render_grid([cat], boxes=boxes, labels=labels), 256)
    mask_colours = np.asarray(viz.render_grid(batch([np.array([[2, 3]], np.uint8)], kinds.MASK)))
    for label in (2, 3):
        assert exactly(drawn, overlays.class_colour(label)).sum() > 100
        assert exactly(mask_colours, overlays.class_colour(label)).any()
    named = tile_pixels(
        viz.render_grid([cat], boxes=boxes, labels=labels, class_names={2: "cat", 3: "a dog"}),
        256,
    )
    # The tags hold the names instead of the numbers: other text, other pixels in the tags.
    tags = (slice(0, round(0.3 * 170)), slice(0, 256))
    assert not np.array_equal(named[tags], drawn[tags])
    np.testing.assert_array_equal(named[120:], drawn[120:])  # the boxes below the tags alike


def test_matplotlib_shows_the_same_overlaid_pixels_as_the_png(cat):
    boxes = batch([np.array([[0.1, 0.2, 0.6, 0.8]])] * 2, kinds.BOXES)
    labels = batch([np.array([5], np.int32)] * 2, kinds.LABELS)
    images = TensorList([cat, cat[:, ::-1]], "HWC", kind=kinds.IMAGE)
    png = np.asarray(viz.render_grid(images, boxes, labels, tile=200))
    shown = [
        np.asarray(a.images[0].get_array())
        for a in viz.image_grid(images, boxes, labels, tile=200).axes
    ]
    assert len(shown) == 2
    height, width = shown[0].shape[:2]
    left = PAD + (200 - width) // 2
    np.testing.assert_array_equal(shown[0], png[PAD : PAD + height, left : left + width])


# --- keypoints, masks, polygons ------------------------------------------------------------------
def test_a_keypoint_dot_is_centred_on_the_marker_it_marks(cat):
    photo = cat.copy()
    cx, cy = 300, 120
    photo[cy - 3 : cy + 4, cx - 3 : cx + 4] = (255, 0, 255)
    height, width = photo.shape[:2]
    for kind, point in (
        (kinds.keypoints(False), [cx + 0.5, cy + 0.5]),
        (kinds.keypoints(True), [(cx + 0.5) / width, (cy + 0.5) / height]),
    ):
        plain = tile_pixels(viz.render_grid([photo]), 256).astype(int)
        drawn = tile_pixels(viz.render_grid([photo], keypoints=batch([[point]], kind)), 256)
        marker = (plain[..., 0] > 180) & (plain[..., 1] < 90) & (plain[..., 2] > 180)
        dot = exactly(drawn, overlays.class_colour(2))
        centre = np.argwhere(marker).mean(axis=0)
        assert dot.sum() > 10
        assert np.abs(np.argwhere(dot).mean(axis=0) - centre).max() <= 1.0


@pytest.mark.parametrize("factor", [1, 2, 3])
def test_a_mask_covers_the_region_it_labels_even_at_another_size(cat, factor):
    height, width = cat.shape[:2]
    region = np.zeros((height, width), np.uint8)
    region[TOP:BOTTOM, LEFT:RIGHT] = 2
    mask = region[::factor, ::factor]  # a smaller label map: scaled with the nearest neighbour
    plain = tile_pixels(viz.render_grid([cat]), 256).astype(int)
    drawn = tile_pixels(viz.render_grid([cat], masks=[mask], mask_alpha=0.5), 256).astype(int)
    changed = np.abs(drawn - plain).max(axis=-1) > 8
    assert np.abs(np.subtract(extent(changed), extent(green(plain.astype(np.uint8))))).max() <= 2
    # Inside: the photo and class 2's colour, half and half; class 0 is left as it is.
    y, x = 60, 60
    expected = 0.5 * plain[y, x] + 0.5 * np.array(overlays.class_colour(2))
    assert np.abs(drawn[y, x] - expected).max() <= 1
    assert (drawn[changed == 0] == plain[changed == 0]).all()
    assert not changed[5:15, 5:15].any()


def test_a_0_1_2_label_map_is_clearly_visible_over_a_dark_photo():
    photo = np.asarray(Image.open("data/images/space/hubble_deep_field.jpg").convert("RGB"))
    mask = np.zeros(photo.shape[:2], np.uint8)
    mask[100:400, 100:400] = 1
    mask[500:800, 500:800] = 2
    plain = tile_pixels(viz.render_grid([photo]), 256).astype(int)
    drawn = tile_pixels(viz.render_grid([photo], masks=[mask]), 256).astype(int)
    scale = 256 / photo.shape[1]
    for (top, left), name in (((250, 250), "class 1"), ((650, 650), "class 2")):
        y, x = round(top * scale), round(left * scale)
        assert (
            np.abs(drawn[y - 5 : y + 5, x - 5 : x + 5] - plain[y - 5 : y + 5, x - 5 : x + 5]).mean()
            > 40
        ), name


def test_a_polygon_outlines_the_region_and_is_coloured_by_its_objects_label(cat):
    polygons = batch([np.array([[0, 0, 4]], np.int32)], kinds.POLYGONS)
    corners = [[LEFT, TOP], [RIGHT, TOP], [RIGHT, BOTTOM], [LEFT, BOTTOM]]
    vertices = batch([np.array(corners, np.float32)], kinds.VERTICES)  # pixels: by the values
    plain = tile_pixels(viz.render_grid([cat]), 256)
    drawn = tile_pixels(
        viz.render_grid(
            [cat], polygons=polygons, vertices=vertices, labels=[np.array([5])], titles=[""]
        ),
        256,
    )
    outline = exactly(drawn, RED) & ~exactly(plain, RED)
    assert np.abs(np.subtract(extent(outline), extent(green(plain)))).max() <= 1
    inside = drawn[60:100, 60:100].astype(int) - plain[60:100, 60:100].astype(int)
    assert np.abs(inside).mean() > 5  # a light fill
    relative = batch([np.array(corners, np.float32) / cat.shape[1::-1]], kinds.VERTICES)
    again = viz.render_grid(
        [cat], polygons=polygons, vertices=relative, labels=[np.array([5])], titles=[""]
    )
    relative_outline = exactly(tile_pixels(again, 256), RED) & ~exactly(plain, RED)
    assert np.abs(np.subtract(extent(relative_outline), extent(outline))).max() <= 1


# --- from the kinds: positional batches --------------------------------------------------------
def photo_batch(photos, count: int = 3) -> TensorList:
    return TensorList(photos[:count], "HWC", [f"p{i}.jpg" for i in range(count)], kind=kinds.IMAGE)


def test_boxes_and_labels_after_their_images_are_their_overlays(photos):
    images = photo_batch(photos)
    boxes = batch([np.array([[0.1, 0.1, 0.6, 0.7], [0.3, 0.4, 0.9, 0.9]])] * 3, kinds.BOXES)
    labels = batch([np.array([5, 2], np.int32)] * 3, kinds.LABELS)
    positional = viz.render_grid(images, boxes, labels, tile=128)
    keywords = viz.render_grid(images, boxes=boxes, labels=labels, tile=128)
    np.testing.assert_array_equal(np.asarray(positional), np.asarray(keywords))
    assert exactly(np.asarray(positional), RED).sum() > 50
    figure = viz.image_grid(images, boxes, labels, tile=128)
    assert [a.get_title() for a in figure.axes] == ["p0.jpg", "p1.jpg", "p2.jpg"]  # per box


def test_show_images_of_a_pipelines_outputs_draws_its_boxes(photos):
    boxes = [np.array([[0.2, 0.2, 0.8, 0.8]], np.float32)] * 2

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1)
    def pipe():
        return fn.external_source(
            source=lambda: (photos[:2], boxes, [np.array([5], np.int32)] * 2),
            num_outputs=3,
            layout=["HWC", "", ""],
            kind=["image", "boxes", "labels"],
        )

    p = pipe()
    images, got_boxes, labels = p.run()
    assert got_boxes.kind == kinds.BOXES
    drawn = np.asarray(viz.render_grid(*p.run(), tile=128))
    assert exactly(drawn, RED).sum() > 50
    figure = viz.show_images(images, got_boxes, labels, tile=128)
    assert len(figure.axes) == 2
    import matplotlib.pyplot as plt

    plt.close(figure)  # a file backend keeps what show_images drew open in pyplot
    p.close()


def test_a_mask_of_the_images_size_is_their_overlay_a_mask_alone_is_drawn(photos):
    images = photo_batch(photos, 2)
    masks = batch([(p[..., 0] > 128).astype(np.uint8) * 2 for p in photos[:2]], kinds.MASK)
    assert len(viz.image_grid(images, masks).axes) == 2  # one column: the masks over them
    over = np.asarray(viz.render_grid(images, masks, tile=64))
    np.testing.assert_array_equal(over, np.asarray(viz.render_grid(images, masks=masks, tile=64)))
    alone = np.asarray(viz.render_grid(masks, tile=64))
    assert exactly(alone, overlays.class_colour(2)).any()  # a mask image, coloured by class
    other = batch([np.zeros((8, 8), np.uint8)] * 2, kinds.MASK)  # not the images' size
    assert len(viz.image_grid(images, other).axes) == 4  # drawn beside them, as before


def test_each_image_batch_takes_the_batches_after_it(photos):
    images = photo_batch(photos, 2)
    boxes = batch([np.array([[0.1, 0.1, 0.9, 0.9]])] * 2, kinds.BOXES)
    labels = batch([np.array([5], np.int32)] * 2, kinds.LABELS)
    picture = np.asarray(viz.render_grid(images, boxes, labels, images, tile=64))
    left, right = picture[:, : PAD + 64], picture[:, PAD + 64 + PAD :]
    assert exactly(left, RED).any() and not exactly(right, RED).any()


def test_explicit_keywords_win_over_positional_batches(photos):
    images = photo_batch(photos, 1)
    positional = batch([np.array([[0.1, 0.1, 0.3, 0.3]])], kinds.BOXES)
    keyword = batch([np.array([[0.5, 0.5, 0.9, 0.9]])], kinds.BOXES)
    labels = [np.array([5])]
    both = np.asarray(viz.render_grid(images, positional, boxes=keyword, labels=labels))
    only = np.asarray(viz.render_grid(images, boxes=keyword, labels=labels))
    np.testing.assert_array_equal(both, only)


def test_what_cannot_be_matched_is_a_clear_error(photos):
    images = photo_batch(photos, 2)
    boxes = batch([np.array([[0.1, 0.1, 0.5, 0.5]])] * 2, kinds.BOXES)
    with pytest.raises(ArgumentError, match=r"^batch 0 is of kind boxes.*after the images"):
        viz.render_grid(boxes, images)
    with pytest.raises(
        ArgumentError, match=r"batch 2 is a second boxes batch for the images of batch 0 \(batch 1"
    ):
        viz.render_grid(images, boxes, boxes)
    polygons = batch([np.array([[0, 0, 3]], np.int32)] * 2, kinds.POLYGONS)
    with pytest.raises(ArgumentError, match=r"polygons and vertices go together"):
        viz.render_grid(images, polygons)
    bad = batch([np.array([[0.1, 0.1, 0.5]]), np.array([[0.1, 0.1, 0.5, 0.5]])], kinds.BOXES)
    with pytest.raises(ArgumentError, match=r"^batch 1, sample 0: boxes: expected N x 4"):
        viz.render_grid(images, bad)
    with pytest.raises(ArgumentError, match=r"^boxes=, sample 0: boxes: expected N x 4"):
        viz.show_images(images, boxes=bad)
    labels = batch([np.array([1, 2, 3], np.int32)] * 2, kinds.LABELS)
    with pytest.raises(ArgumentError, match=r"batch 2, sample 0: 3 labels for 1 boxes"):
        viz.image_grid(images, boxes, labels)
    with pytest.raises(ArgumentError, match=r"masks=, sample 0: masks: expected a label map"):
        viz.render_grid(images, masks=[np.zeros((4, 4, 3))] * 2)
    with pytest.raises(ArgumentError, match=r"boxes= has 1 samples for 2 images"):
        viz.render_grid(images, boxes=[np.zeros((0, 4))])
    # Non-finite and empty boxes are no error: nothing is drawn for them.
    empty = [np.zeros((0, 4)), np.array([[np.nan, 0.1, 0.5, 0.5]])]
    plain = np.asarray(viz.render_grid(images))
    np.testing.assert_array_equal(np.asarray(viz.render_grid(images, boxes=empty)), plain)


def test_class_names_title_per_image_labels(photos):
    images = photo_batch(photos, 2)
    labels = batch([np.array([3], np.int32), np.array([0], np.int32)], kinds.LABELS)
    figure = viz.image_grid(images, labels=labels, class_names=["animals", "b", "c", "people"])
    assert [a.get_title() for a in figure.axes] == ["p0.jpg · 3 people", "p1.jpg · 0 animals"]


def test_png_of_an_overlaid_grid_decodes_to_the_picture(photos):
    images = photo_batch(photos, 2)
    boxes = batch([np.array([[0.1, 0.1, 0.5, 0.5]])] * 2, kinds.BOXES)
    png = viz.image_grid_png(images, boxes, tile=96)
    decoded = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    np.testing.assert_array_equal(decoded, np.asarray(viz.render_grid(images, boxes, tile=96)))
