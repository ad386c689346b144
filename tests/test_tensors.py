"""TensorList and Tensor: DALI's TensorListCPU / TensorCPU API, and notebook display."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from augkit import TensorList, types
from augkit.errors import RaggedBatchError


@pytest.fixture
def ragged() -> TensorList:
    samples = [np.full((4, 6, 3), 10, np.uint8), np.full((5, 2, 3), 200, np.uint8)]
    for s in samples:
        s.flags.writeable = False
    return TensorList(samples, "HWC", ["a/1.jpg", "b/2.jpg"])


@pytest.fixture
def dense() -> TensorList:
    rng = np.random.default_rng(1)
    return TensorList([rng.random((3, 4, 5), dtype=np.float32) for _ in range(3)], "CHW")


def test_at_returns_a_writable_numpy_copy(ragged):
    copy = ragged.at(1)
    assert isinstance(copy, np.ndarray) and copy.flags.writeable
    copy[:] = 0
    assert ragged.at(1).max() == 200


def test_getitem_len_iteration_and_tensor_api(ragged):
    assert len(ragged) == 2
    tensor = ragged[1]
    assert tensor.shape() == (5, 2, 3) and tensor.layout() == "HWC"
    assert tensor.dtype == types.UINT8 and tensor.source_info() == "b/2.jpg"
    np.testing.assert_array_equal(np.asarray(tensor), ragged.at(1))
    assert [t.shape() for t in ragged] == [(4, 6, 3), (5, 2, 3)]
    assert isinstance(ragged[0:1], TensorList) and len(ragged[0:1]) == 1


def test_shapes_layout_dtype_source_info(ragged):
    assert ragged.shape() == [(4, 6, 3), (5, 2, 3)]
    assert ragged.layout() == "HWC"
    assert ragged.dtype == types.UINT8
    assert ragged.source_info() == ["a/1.jpg", "b/2.jpg"]
    assert ragged.source_info(0) == "a/1.jpg"
    assert ragged.as_cpu() is ragged


def test_ragged_batch_refuses_as_array_with_a_clear_message(ragged):
    assert not ragged.is_dense_tensor()
    with pytest.raises(
        RaggedBatchError,
        match=r"sample 0 has shape \(4, 6, 3\) and sample 1 "
        r"has shape \(5, 2, 3\)",
    ):
        ragged.as_array()
    with pytest.raises(RaggedBatchError, match="as_tensor"):
        ragged.as_tensor()


def test_dense_batch_as_array_and_as_tensor(dense):
    assert dense.is_dense_tensor()
    array = dense.as_array()
    assert array.shape == (3, 3, 4, 5) and array.dtype == np.float32
    np.testing.assert_array_equal(array[2], dense.at(2))
    tensor = dense.as_tensor()
    assert tensor.shape() == (3, 3, 4, 5) and tensor.layout() == "NCHW"


def test_image_batch_shows_itself_as_a_png_grid(ragged, dense):
    png = ragged._repr_png_()
    image = Image.open(io.BytesIO(png))
    assert image.format == "PNG" and image.width > image.height
    pixels = np.asarray(image.convert("RGB"))
    # both samples' colours are drawn
    assert (pixels == 10).all(axis=-1).any() and (pixels == 200).all(axis=-1).any()
    assert dense._repr_png_() is not None  # float CHW in [0, 1]


def test_non_image_batch_shows_a_summary():
    labels = TensorList([np.array([i], np.int32) for i in range(6)])
    assert labels._repr_png_() is None
    text = repr(labels)
    assert text.startswith("TensorList(batch_size=6, dtype=INT32")
    assert "..." in text and "(1,)" in text


def test_empty_batch_keeps_its_dtype():
    empty = TensorList([], dtype=np.float32)
    assert len(empty) == 0 and empty.dtype == types.FLOAT
    assert empty._repr_png_() is None
