"""The tensor operators (augkit/operators/tensors/) against NumPy on real photos: transpose,
reshape, expand_dims, squeeze, stack, cat, one_hot, shapes, copy, zeros_like, ones_like,
full_like, cast_like and peek_image_shape; their layouts as DALI sets them, the documented edge
cases, and bad arguments and inputs giving errors that name the operator."""

from __future__ import annotations

import io
import pathlib
from typing import Any

import numpy as np
import pytest
from PIL import Image

from augkit import backend, eager, fn, types
from augkit.errors import AugkitError
from augkit.operators.tensors.join import _merge
from augkit.pipeline import Pipeline
from augkit.tensors import TensorList


@pytest.fixture(scope="module")
def images(photos: list[np.ndarray]) -> TensorList:
    return TensorList([p[:90, :120] for p in photos[:3]], "HWC")


def _samples(batch: Any) -> list[np.ndarray]:
    return [batch.at(i) for i in range(len(batch))] if isinstance(batch, TensorList) else batch


# --- transpose ------------------------------------------------------------------------------


@pytest.mark.parametrize("perm", [None, [2, 0, 1], [1, 0, 2], [0, 1, 2]], ids=str)
def test_transpose_matches_numpy_and_permutes_the_layout(images: TensorList, perm: Any) -> None:
    out = eager.transpose(images, perm=perm)
    order = perm or [2, 1, 0]
    assert out.layout() == "".join("HWC"[p] for p in order)
    for x, y in zip(_samples(images), _samples(out), strict=True):
        np.testing.assert_array_equal(y, np.transpose(x, order))


@pytest.mark.parametrize(
    "shape, dtype",
    [((5, 7), np.float32), ((5, 7, 3), np.float32), ((5, 7, 4), np.uint16), ((5, 7, 5), np.uint8)],
)
def test_transpose_of_the_first_two_axes_any_pixel_size(shape: tuple, dtype: Any) -> None:
    x = (np.random.default_rng(0).random(shape) * 100).astype(dtype)
    perm = [1, 0, *range(2, len(shape))]
    np.testing.assert_array_equal(eager.transpose([x], perm=perm)[0], np.transpose(x, perm))


def test_transpose_layout_options(images: TensorList) -> None:
    assert eager.transpose(images, perm=[2, 0, 1], transpose_layout=False).layout() == "HWC"
    assert eager.transpose(images, perm=[2, 0, 1], output_layout="XYZ").layout() == "XYZ"
    assert eager.transpose([np.zeros((2, 3))])[0].shape == (3, 2)


def test_transpose_bad_perm() -> None:
    with pytest.raises(AugkitError, match=r"Transpose.*perm.*not a permutation"):
        fn.transpose(perm=[1, 1, 0])
    with pytest.raises(AugkitError, match=r"Transpose.*3 dimensions but perm"):
        eager.transpose([np.zeros((2, 3, 4))], perm=[1, 0])


# --- reshape --------------------------------------------------------------------------------


def test_reshape_shape_rel_shape_src_dims(images: TensorList) -> None:
    x = images.at(0)
    h, w, c = x.shape
    cases = [
        ({"shape": [h * w, c]}, (h * w, c), ""),
        ({"shape": [-1]}, (h * w * c,), ""),
        ({"shape": [w, h, c]}, (w, h, c), "HWC"),
        ({"rel_shape": [0.5, 2, 1]}, (h // 2, w * 2, c), "HWC"),
        ({"rel_shape": [1, -1]}, (h, w * c), ""),
        ({"src_dims": [2, 0, 1]}, (c, h, w), "HWC"),
        ({"src_dims": [-1, 0, 1, 2]}, (1, h, w, c), ""),
        ({"shape": [h, w * c], "layout": "AB"}, (h, w * c), "AB"),
        ({"layout": "XYZ"}, (h, w, c), "XYZ"),
    ]
    for kwargs, shape, layout in cases:
        out = eager.reshape(images, **kwargs)
        assert out.layout() == layout, kwargs
        assert out.at(0).shape == shape, kwargs
        np.testing.assert_array_equal(out.at(0).reshape(-1), x.reshape(-1))


def test_reshape_rel_shape_rounds_half_away_from_zero() -> None:
    x = [np.zeros((10, 3, 1), np.uint8)]
    with pytest.raises(AugkitError, match=r"to \(3, 3, 1\)"):  # 10 * 0.25 = 2.5 -> 3
        eager.reshape(x, rel_shape=[0.25, 1, 1])
    with pytest.raises(AugkitError, match=r"to \(4, 3, 1\)"):  # 3.5 -> 4
        eager.reshape(x, rel_shape=[0.35, 1, 1])


def test_reshape_shape_input_and_per_sample_shape(images: TensorList) -> None:
    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None, seed=1)
    with pipe:
        x = fn.external_source(source=lambda: _samples(images), batch=True, layout="HWC")
        chw = fn.reshape(x, fn.shapes(fn.transpose(x, perm=[2, 0, 1])))
        flat = fn.reshape(x, shape=fn.external_source(source=lambda: [np.array([-1])] * 3))
        pipe.set_outputs(chw, flat)
    chw, flat = pipe.run()
    for i, x in enumerate(_samples(images)):
        assert chw.at(i).shape == (x.shape[2], x.shape[0], x.shape[1])
        assert flat.at(i).shape == (x.size,)
    assert chw.layout() == "HWC" and flat.layout() == ""


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"shape": [5, 5]}, "volume must stay the same"),
        ({"shape": [-1, -1]}, "only one extent may be negative"),
        ({"rel_shape": [1, 1, 1, 1]}, "one more is allowed only when the last is negative"),
        ({"src_dims": [3]}, "not -1 or an axis"),
        ({"shape": [8], "layout": "AB"}, "does not fit"),
    ],
)
def test_reshape_errors_name_the_operator(kwargs: dict, match: str) -> None:
    with pytest.raises(AugkitError, match=rf"Reshape.*{match}"):
        eager.reshape([np.zeros((2, 4))], **kwargs)


def test_reshape_shape_and_rel_shape_are_exclusive() -> None:
    with pytest.raises(AugkitError, match="Reshape: shape and rel_shape are mutually exclusive"):
        fn.reshape(shape=[1], rel_shape=[1.0])


# --- expand_dims / squeeze ------------------------------------------------------------------


def test_expand_dims_and_squeeze_round_trip(images: TensorList) -> None:
    expanded = eager.expand_dims(images, axes=[0, 4], new_axis_names="FK")
    assert expanded.layout() == "FHWCK"
    x = images.at(1)
    np.testing.assert_array_equal(expanded.at(1), x[None, ..., None])
    assert eager.expand_dims(images, axes=[1]).layout() == ""
    assert eager.expand_dims([np.zeros((2, 3))], axes=[2, 0])[0].shape == (1, 2, 1, 3)
    back = eager.squeeze(expanded, axis_names="FK")
    assert back.layout() == "HWC"
    np.testing.assert_array_equal(back.at(1), x)
    assert eager.squeeze(expanded, axes=[4]).layout() == "FHWC"


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: eager.expand_dims([np.zeros(2)], axes=[3]), r"ExpandDims.*out of range"),
        (lambda: fn.expand_dims(axes=[0, 0]), r"ExpandDims.*repeat"),
        (lambda: fn.expand_dims(axes=[-1]), r"ExpandDims.*>= 0"),
        (
            lambda: eager.expand_dims([np.zeros(2)], axes=[0], new_axis_names="X"),
            "needs an input with a layout",
        ),
        (lambda: fn.expand_dims(axes=[0], new_axis_names="XY"), "one per axis"),
        (lambda: eager.squeeze([np.zeros((1, 2))], axes=[1]), r"Squeeze.*extent 1"),
        (lambda: eager.squeeze([np.zeros((1, 2))]), r"Squeeze.*axes or axis_names"),
        (lambda: fn.squeeze(axes=-1), r"Squeeze.*>= 0"),
    ],
)
def test_expand_squeeze_errors(call: Any, match: str) -> None:
    with pytest.raises(AugkitError, match=match):
        call()


# --- stack / cat ----------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [0, 1, 3, -1])
def test_stack_matches_numpy(images: TensorList, axis: int) -> None:
    out = eager.stack(images, images, axis=axis, axis_name="K")
    position = axis % 4
    assert out.layout() == "HWC"[:position] + "K" + "HWC"[position:]
    for x, y in zip(_samples(images), _samples(out), strict=True):
        np.testing.assert_array_equal(y, np.stack([x, x], axis=axis))
    assert eager.stack(images, axis=0).layout() == ""


@pytest.mark.parametrize("axis", [0, 1, 2, -1])
def test_cat_matches_numpy(images: TensorList, axis: int) -> None:
    flipped = eager.flip(images)
    out = eager.cat(images, flipped, axis=axis)
    assert out.layout() == "HWC"
    for x, f, y in zip(_samples(images), _samples(flipped), _samples(out), strict=True):
        np.testing.assert_array_equal(y, np.concatenate([x, f], axis=axis))
    np.testing.assert_array_equal(
        eager.cat(images, images, axis_name="W").at(0), eager.cat(images, images, axis=1).at(0)
    )


@pytest.mark.parametrize(
    "dtype",
    [
        *(np.uint8, np.int8, np.uint16, np.int16, np.int32, np.int64, np.uint64),
        *(np.float16, np.float32, np.float64, bool),
    ],
)
@pytest.mark.parametrize(
    "shapes, axis",
    [
        (((40, 30, 3), (40, 30, 3)), 2),  # HWC along C: cv2.merge
        (((40, 30, 1), (40, 30, 4), (40, 30, 2)), -1),  # several, of several extents
        (((10, 7, 5), (10, 3, 5)), 1),  # short rows along a middle axis
        (((4, 5, 6, 3), (4, 5, 6, 1)), 3),  # 4-D
        (((20, 30, 40), (20, 30, 40)), 2),  # long rows: NumPy's block copies
        (((1, 3), (1, 2)), 1),  # one row
    ],
    ids=str,
)
def test_cat_of_short_rows_is_bytewise_numpy(dtype: Any, shapes: Any, axis: int) -> None:
    """Joining along an axis of short rows goes through cv2.merge (the bytes as 4/2/1-byte
    words): the result must be NumPy's, bit for bit (NaN payloads and -0.0 included)."""
    rng = np.random.default_rng(7)
    parts = [(rng.standard_normal(s) * 1000).astype(dtype) for s in shapes]
    if np.dtype(dtype).kind == "f":
        parts[0].reshape(-1)[:3] = [np.nan, -0.0, np.inf]
        bits = parts[-1].reshape(-1)[:1].view(np.dtype(f"u{np.dtype(dtype).itemsize}"))
        bits |= 1  # a NaN with a payload, or an odd last bit
    out = eager.cat(*[[p, p[::-1].copy()] for p in parts], axis=axis)
    for i in range(2):
        want = np.concatenate([p if i == 0 else p[::-1] for p in parts], axis=axis)
        got = out[i]
        assert got.dtype == want.dtype and got.shape == want.shape
        assert got.tobytes() == want.tobytes()
    axis %= parts[0].ndim
    merged = _merge(backend.opencv(), parts, axis)
    rows = int(np.prod(parts[0].shape[:axis]))
    long_rows = sum(p.nbytes for p in parts) // rows > 64 or rows < 2
    assert (merged is None) == long_rows  # which path ran


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: eager.stack([np.zeros(2)], [np.zeros(3)]), r"Stack.*one shape"),
        (lambda: eager.stack([np.zeros(2)], [np.zeros(2, np.int32)]), r"Stack.*one type"),
        (lambda: eager.stack([np.zeros(2)], axis=3), r"Stack.*out of range"),
        (lambda: eager.cat([np.zeros((2, 3))], [np.zeros((3, 2))]), r"Cat.*differ in extent"),
        (lambda: eager.cat([np.zeros((2, 3))], axis=2), r"Cat.*out of range"),
        (lambda: eager.cat([np.zeros((2, 3))], axis_name="W"), r"Cat.*not an axis"),
        (lambda: fn.cat(axis=0, axis_name="W"), "Cat: axis and axis_name"),
        (
            lambda: eager.cat([np.zeros(2)] * 2, [np.zeros(2)]),
            r"inputs are batches of different sizes",
        ),
    ],
)
def test_join_errors(call: Any, match: str) -> None:
    with pytest.raises(AugkitError, match=match):
        call()


# --- one_hot --------------------------------------------------------------------------------


def test_one_hot_matches_numpy() -> None:
    labels = np.array([[0, 3], [1, 7]], np.int32)
    out = eager.one_hot(TensorList([labels], "AB"), num_classes=4, axis=1, axis_name="K")
    assert out.layout() == "AKB"
    expected = (labels[:, None, :] == np.arange(4)[None, :, None]).astype(np.float32)
    np.testing.assert_array_equal(out.at(0), expected)  # 7 is out of range: all off


def test_one_hot_scalars_and_axis() -> None:
    assert eager.one_hot([np.array([2])], num_classes=4)[0].tolist() == [0, 0, 1, 0]
    assert eager.one_hot([np.array([2])], num_classes=4, axis=-1)[0].shape == (1, 4)
    assert eager.one_hot([np.array([2])], num_classes=4, axis=0)[0].shape == (4, 1)
    assert eager.one_hot([np.array([2, 1])], num_classes=4)[0].shape == (2, 4)
    scalar = eager.one_hot(TensorList([np.array(1)]), num_classes=3, axis_name="K")
    assert scalar.layout() == "K" and scalar.at(0).tolist() == [0, 1, 0]


def test_one_hot_values_truncate_and_wrap() -> None:
    floats = eager.one_hot([np.array([0.7, 1.5, -0.7, 2.99], np.float32)], num_classes=3)[0]
    np.testing.assert_array_equal(floats.argmax(axis=1), [0, 1, 0, 2])
    wrapped = eager.one_hot(
        [np.array([0, 1])], num_classes=3, dtype=types.UINT8, on_value=300, off_value=-2.5
    )[0]
    assert wrapped.dtype == np.uint8 and wrapped.tolist() == [[44, 254, 254], [254, 44, 254]]


def test_one_hot_errors() -> None:
    with pytest.raises(AugkitError, match=r"OneHot.*out of range"):
        eager.one_hot([np.array([1, 2])], num_classes=3, axis=3)
    with pytest.raises(AugkitError, match=r"OneHot.*axis_name needs an input with a layout"):
        eager.one_hot([np.array([1, 2])], num_classes=3, axis_name="K")
    with pytest.raises(AugkitError, match=r"OneHot.*num_classes"):
        fn.one_hot(num_classes=-1)


# --- shapes, copy, *_like --------------------------------------------------------------------


def test_shapes_copy_zeros_ones(images: TensorList) -> None:
    shapes = eager.shapes(images)
    assert shapes.layout() == "" and shapes.at(0).dtype == np.int64
    assert [tuple(s) for s in _samples(shapes)] == images.shape()
    assert eager.shapes(images, dtype=types.FLOAT).at(0).dtype == np.float32
    copy = eager.copy(images)
    assert copy.layout() == "HWC"
    np.testing.assert_array_equal(copy.at(0), images.at(0))
    zeros = eager.zeros_like(images, dtype=types.INT16)
    assert zeros.layout() == "HWC" and zeros.at(0).dtype == np.int16 and not zeros.at(0).any()
    ones = eager.ones_like(images)
    assert ones.at(2).dtype == np.uint8 and (ones.at(2) == 1).all()
    assert ones.at(2).shape == images.at(2).shape
    with pytest.raises(AugkitError, match=r"Shapes.*dtype"):
        fn.shapes(dtype=types.UINT8)


def test_copy_is_a_copy_in_a_pipeline(images: TensorList) -> None:
    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None, seed=1)
    with pipe:
        x = fn.external_source(source=lambda: _samples(images), batch=True, layout="HWC")
        pipe.set_outputs(x, fn.copy(x))
    a, b = pipe.run()
    assert not np.shares_memory(np.asarray(a[0]), np.asarray(b[0]))
    np.testing.assert_array_equal(a.at(0), b.at(0))


def test_full_like_converts_and_broadcasts(images: TensorList) -> None:
    fills = [np.array(7.7), np.array([1, 2, 300]), np.array(-3.6)]
    out = eager.full_like(_samples(images), fills)
    assert eager.full_like(images, TensorList([np.array(7.0)] * 3)).layout() == "HWC"
    for x, y, want in zip(_samples(images), out, ([8], [1, 2, 255], [0]), strict=True):
        assert y.dtype == np.uint8 and y.shape == x.shape
        np.testing.assert_array_equal(y, np.broadcast_to(np.array(want, np.uint8), x.shape))
    with pytest.raises(AugkitError, match=r"FullLike.*does not broadcast"):
        eager.full_like(images, [np.array([1, 2])] * 3)


def test_full_like_in_a_pipeline_with_a_node(images: TensorList) -> None:
    pipe = Pipeline(batch_size=3, num_threads=1, device_id=None, seed=1)
    with pipe:
        x = fn.external_source(source=lambda: _samples(images), batch=True, layout="HWC")
        pipe.set_outputs(fn.full_like(x, fn.reductions.mean(x, axes=[0, 1])))
    (out,) = pipe.run()
    means = np.asarray(images.at(0), np.float64).mean(axis=(0, 1))
    np.testing.assert_allclose(out.at(0)[0, 0], np.floor(means + 0.5), atol=0)


def test_cast_like_converts_as_cast(images: TensorList) -> None:
    values = [np.array([-3.5, 2.5, 254.5, 300.0, np.nan], np.float32)]
    out = eager.cast_like(values, [np.zeros(1, np.uint8)])[0]
    assert out.dtype == np.uint8 and out.tolist() == [0, 3, 255, 255, 0]
    floats = eager.cast_like(images, TensorList([np.zeros(1, np.float32)] * 3))
    assert floats.layout() == "HWC" and floats.at(0).dtype == np.float32


# --- peek_image_shape -----------------------------------------------------------------------


def _encoded(image: Image.Image, fmt: str, **kwargs: Any) -> np.ndarray:
    buffer = io.BytesIO()
    image.save(buffer, fmt, **kwargs)
    return np.frombuffer(buffer.getvalue(), np.uint8)


def test_peek_image_shape_equals_the_decoded_shape(photo_paths: list[pathlib.Path]) -> None:
    files = [np.fromfile(p, np.uint8) for p in photo_paths[:4]]
    shapes = eager.peek_image_shape(files)
    decoded = eager.decoders.image(files)
    for s, d in zip(shapes, decoded, strict=True):
        assert s.dtype == np.int64 and tuple(s) == d.shape
    gray = eager.peek_image_shape(files, image_type=types.GRAY, dtype=types.INT32)
    assert all(g.dtype == np.int32 and g[2] == 1 for g in gray)


def test_peek_image_shape_exif_rotation_and_channels() -> None:
    image = Image.new("RGB", (40, 20))
    exif = image.getexif()
    exif[0x0112] = 6  # rotated 90 degrees
    rotated = _encoded(image, "JPEG", exif=exif.tobytes())
    assert eager.peek_image_shape([rotated])[0].tolist() == [40, 20, 3]
    assert eager.peek_image_shape([rotated], adjust_orientation=False)[0].tolist() == [20, 40, 3]
    rgba = _encoded(Image.new("RGBA", (5, 4)), "PNG")
    assert eager.peek_image_shape([rgba], image_type=types.ANY_DATA)[0].tolist() == [4, 5, 4]
    assert eager.peek_image_shape([rgba])[0].tolist() == [4, 5, 3]


def test_peek_image_shape_bad_inputs() -> None:
    with pytest.raises(AugkitError, match=r"PeekImageShape.*cannot read an image header"):
        eager.peek_image_shape([np.zeros(16, np.uint8)])
    with pytest.raises(AugkitError, match=r"PeekImageShape.*1-D uint8"):
        eager.peek_image_shape([np.zeros((4, 4), np.uint8)])
