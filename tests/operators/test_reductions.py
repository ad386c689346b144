"""``fn.reductions.*`` (augkit/operators/reductions.py) against NumPy on real photos: values,
DALI's output and accumulation types (wrapping integer accumulators, truncated integer means),
axes / axis_names / keep_dims and layouts, empty reductions, NaNs, std_dev/variance with their
mean input and ddof, and bad arguments."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from augkit import eager, fn, types
from augkit.errors import AugkitError
from augkit.pipeline import Pipeline
from augkit.tensors import TensorList


@pytest.fixture(scope="module")
def images(photos: list[np.ndarray]) -> TensorList:
    return TensorList([p[:120, :160] for p in photos[:4]], "HWC")


AXES = [None, (0, 1), (2,), (0,), (1, 2), (0, 2), ()]


@pytest.mark.parametrize("axes", AXES, ids=str)
def test_sum_mean_min_max_match_numpy(images: TensorList, axes: Any) -> None:
    kw = {} if axes is None else {"axes": list(axes)}
    np_axes = axes if axes is None else tuple(axes)
    sums = eager.reductions.sum(images, **kw)
    means = eager.reductions.mean(images, **kw)
    mins = eager.reductions.min(images, **kw)
    maxs = eager.reductions.max(images, **kw)
    for i, x in enumerate(images):
        x = np.asarray(x)
        s = x.astype(np.uint64).sum(axis=np_axes)
        n = x.size if axes is None else int(np.prod([x.shape[a] for a in axes]))
        np.testing.assert_array_equal(sums.at(i), s)
        assert sums.at(i).dtype == np.uint64 and means.at(i).dtype == np.float32
        np.testing.assert_array_equal(means.at(i), s.astype(np.float32) * np.float32(1 / n))
        np.testing.assert_array_equal(mins.at(i), x.min(axis=np_axes))
        np.testing.assert_array_equal(maxs.at(i), x.max(axis=np_axes))
        assert mins.at(i).dtype == np.uint8


@pytest.mark.parametrize("axes", [None, (0, 1), (2,), (1,)], ids=str)
def test_mean_square_rms_std_variance_match_numpy(images: TensorList, axes: Any) -> None:
    kw = {} if axes is None else {"axes": list(axes)}
    mean = eager.reductions.mean(images, **kw)
    ms = eager.reductions.mean_square(images, **kw)
    rms = eager.reductions.rms(images, **kw)
    std = eager.reductions.std_dev(images, mean, **kw)
    var = eager.reductions.variance(images, mean, ddof=1, **kw)
    for i, x in enumerate(images):
        x = np.asarray(x, np.float64)
        np.testing.assert_allclose(ms.at(i), (x**2).mean(axis=axes), rtol=1e-6)
        np.testing.assert_allclose(rms.at(i), np.sqrt((x**2).mean(axis=axes)), rtol=1e-6)
        np.testing.assert_allclose(std.at(i), x.std(axis=axes), rtol=1e-5, atol=1e-4)
        np.testing.assert_allclose(var.at(i), x.var(axis=axes, ddof=1), rtol=1e-5, atol=1e-3)
        assert std.at(i).dtype == var.at(i).dtype == np.float32


def test_float_input(images: TensorList) -> None:
    floats = [np.asarray(x, np.float32) / 255 for x in images]
    sums = eager.reductions.sum(floats, axes=[0, 1])
    means = eager.reductions.mean(floats, axes=2)
    for x, s, m in zip(floats, sums, means, strict=True):
        assert s.dtype == np.float32
        np.testing.assert_allclose(s, x.astype(np.float64).sum(axis=(0, 1)), rtol=1e-6)
        np.testing.assert_allclose(m, x.astype(np.float64).mean(axis=2), rtol=1e-6)


def test_default_types_per_input_type() -> None:
    expected = {
        np.uint8: np.uint64,
        np.uint16: np.uint64,
        np.uint32: np.uint64,
        np.int8: np.int64,
        np.int16: np.int64,
        np.int32: np.int64,
        np.int64: np.int64,
        np.float32: np.float32,
    }
    for dtype, want in expected.items():
        x = [np.arange(6, dtype=dtype).reshape(2, 3)]
        assert eager.reductions.sum(x)[0].dtype == want
        assert eager.reductions.mean(x)[0].dtype == np.float32
        assert eager.reductions.max(x)[0].dtype == dtype


def test_integer_outputs_wrap_and_truncate() -> None:
    x = [np.arange(24, dtype=np.uint8)]
    assert eager.reductions.sum(x, dtype=types.UINT8)[0] == 276 % 256
    assert eager.reductions.mean(x, dtype=types.UINT8)[0] == (276 % 256) // 24
    assert eager.reductions.mean([np.array([10, 11], np.uint8)], dtype=types.UINT8)[0] == 10
    assert eager.reductions.mean([np.array([-3, -4], np.int16)], dtype=types.INT16)[0] == -3
    assert eager.reductions.mean([np.full(3, 100, np.int8)], dtype=types.INT8)[0] == 14
    assert eager.reductions.rms([np.array([3, 4], np.uint8)], dtype=types.UINT8)[0] == 3
    assert eager.reductions.sum(x, dtype=types.FLOAT)[0].dtype == np.float32


@pytest.mark.parametrize(
    "name, dtype, given",
    [
        ("sum", np.uint8, types.INT32),
        ("sum", np.int64, types.FLOAT),
        ("sum", np.uint8, types.INT64),
        ("mean", np.uint8, types.UINT64),
        ("mean_square", np.uint8, types.UINT8),
        ("rms", np.uint8, types.UINT16),
    ],
)
def test_unsupported_type_pairs_are_refused(name: str, dtype: Any, given: Any) -> None:
    with pytest.raises(AugkitError, match=f"dtype types.{given.name} is not supported"):
        getattr(eager.reductions, name)([np.ones(3, dtype)], dtype=given)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.bool_])
def test_unsupported_input_types_are_refused(dtype: Any) -> None:
    with pytest.raises(AugkitError, match="takes integer or float32 data"):
        eager.reductions.sum([np.ones(3, dtype)])


def test_empty_reductions_and_nans() -> None:
    assert eager.reductions.sum([np.ones((0, 3), np.uint8)])[0] == 0
    assert np.isnan(eager.reductions.mean([np.ones(0, np.float32)])[0])
    assert eager.reductions.min([np.ones((0, 3), np.uint8)])[0] == 255
    assert eager.reductions.max([np.ones(0, np.int8)])[0] == -128
    assert eager.reductions.min([np.ones(0, np.float32)])[0] == np.finfo(np.float32).max
    nans = [np.array([1.0, np.nan, 0.5], np.float32)]
    assert eager.reductions.min(nans)[0] == 0.5 and eager.reductions.max(nans)[0] == 1.0


def test_layouts_keep_dims_and_axis_names(images: TensorList) -> None:
    per_channel = eager.reductions.mean(images, axis_names="HW")
    assert per_channel.layout() == "C" and per_channel.at(0).shape == (3,)
    kept = eager.reductions.max(images, axis_names="HW", keep_dims=True)
    assert kept.layout() == "HWC" and kept.at(0).shape == (1, 1, 3)
    assert eager.reductions.sum(images).layout() == ""
    assert eager.reductions.sum(images, axes=-1).layout() == "HW"
    named = eager.reductions.sum(images, axis_names="HW").at(1)
    np.testing.assert_array_equal(named, eager.reductions.sum(images, axes=[0, 1]).at(1))


def test_std_dev_mean_shapes_ddof_and_pipeline(images: TensorList) -> None:
    x = [np.arange(6, dtype=np.float32).reshape(2, 3)]
    keep = eager.reductions.mean(x, axes=1, keep_dims=True)
    flat = eager.reductions.mean(x, axes=1)
    for mean in (keep, flat):
        np.testing.assert_allclose(eager.reductions.std_dev(x, mean, axes=1)[0], [0.8164966] * 2)
    assert np.isinf(eager.reductions.std_dev(x, [np.float32(0)], ddof=6)[0])
    assert np.isnan(eager.reductions.std_dev(x, [np.float32(0)], ddof=7)[0])
    assert eager.reductions.variance(x, [np.float32(0)], ddof=7)[0] < 0
    with pytest.raises(AugkitError, match="one per output element"):
        eager.reductions.std_dev(x, [np.zeros(3, np.float32)], axes=1)

    pipe = Pipeline(batch_size=4, num_threads=2, device_id=None, seed=1)
    with pipe:
        data = fn.external_source(source=lambda: list(images), batch=True, layout="HWC")
        mean = fn.reductions.mean(data, axes=[0, 1])
        pipe.set_outputs(fn.reductions.std_dev(data, mean, axes=[0, 1]))
    (out,) = pipe.run()
    for i in range(4):
        want = np.asarray(images.at(i), np.float64).std(axis=(0, 1))
        np.testing.assert_allclose(out.at(i), want, rtol=1e-5)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"axes": [0, 0]}, "axes repeat"),
        ({"axes": 3}, "out of range"),
        ({"axis_names": "Z"}, "not in the layout"),
    ],
)
def test_bad_axes_name_the_operator(images: TensorList, kwargs: dict, match: str) -> None:
    with pytest.raises(AugkitError, match=rf"Sum.*{match}"):
        eager.reductions.sum(images, **kwargs)


def test_axes_with_axis_names_is_refused() -> None:
    with pytest.raises(AugkitError, match=r"reductions\.Sum: axes and axis_names"):
        fn.reductions.sum(axes=0, axis_names="H")


def test_different_batch_sizes_of_data_and_mean_are_an_error() -> None:
    with pytest.raises(AugkitError, match="inputs are batches of different sizes"):
        eager.reductions.std_dev([np.ones(3, np.float32)] * 2, [np.float32(1)])


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32])
@pytest.mark.parametrize("axes", [None, (0, 1), (1,)], ids=str)
def test_integer_squares_are_exact(dtype: Any, axes: Any) -> None:
    info = np.iinfo(dtype)
    rng = np.random.default_rng(3)
    x = rng.integers(max(info.min, -(2**20)), min(info.max, 2**20), (31, 17, 3), endpoint=True)
    x = x.astype(dtype)
    kw = {} if axes is None else {"axes": list(axes)}
    squares = (x.astype(np.float64) ** 2).sum(axis=axes)
    n = x.size if axes is None else int(np.prod([x.shape[a] for a in axes]))
    want = squares.astype(np.float32) * np.float32(1 / n)
    np.testing.assert_array_equal(eager.reductions.mean_square([x], **kw)[0], want)
    mean = eager.reductions.mean([x], **kw)
    std = eager.reductions.std_dev([x], mean, **kw)[0]
    np.testing.assert_allclose(std, x.astype(np.float64).std(axis=axes), rtol=1e-5)
