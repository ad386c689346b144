"""fn.filter against scipy.ndimage.correlate on real photos: a correlation (the filter is not
flipped), the anchor, every border mode, "valid" mode, per-sample filters and fill values,
layouts, and bad inputs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

from augkit import types
from augkit.errors import AugkitError
from tests.operator_check import check_operator, run_operator

MODES = {
    "reflect_101": "mirror",
    "reflect_1001": "reflect",
    "wrap": "wrap",
    "clamp": "nearest",
    "constant": "constant",
}


@pytest.fixture(scope="module")
def small(photos: list[np.ndarray]) -> list[np.ndarray]:
    out = []
    for p in photos[:3]:
        step = max(1, max(p.shape[:2]) // 90)
        out.append(np.ascontiguousarray(p[::step, ::step]).astype(np.float32))
    return out


def kernel(shape, seed) -> np.ndarray:
    k = np.random.default_rng(seed).uniform(-0.5, 1.0, shape)
    return (k / k.sum()).astype(np.float32)


def reference(image, filt, anchor=(-1, -1), border="reflect_101", fill=0.0):
    anchor = tuple(s // 2 if a < 0 else a for a, s in zip(anchor, filt.shape, strict=True))
    origin = [a - s // 2 for a, s in zip(anchor, filt.shape, strict=True)]
    out = np.empty(image.shape, np.float64)
    for c in range(image.shape[2]):
        out[..., c] = ndimage.correlate(
            image[..., c].astype(np.float64),
            filt.astype(np.float64),
            mode=MODES[border],
            cval=fill,
            origin=origin,
        )
    return out


def run(images, filters, *extra, layout="HWC", **args):
    outs = run_operator(
        "filter", [images, filters, *extra], layout=[layout, ""] + [""] * len(extra), args=args
    )[0][0]
    return [np.asarray(s) for s in outs]


def test_is_a_correlation_not_a_convolution() -> None:
    image = np.zeros((7, 7, 1), np.float32)
    image[3, 3] = 1
    filt = np.arange(9, dtype=np.float32).reshape(3, 3)
    (out,) = run([image], [filt])
    # The impulse response of a correlation is the filter flipped.
    np.testing.assert_array_equal(out[2:5, 2:5, 0], filt[::-1, ::-1])


@pytest.mark.parametrize("border", list(MODES))
def test_borders_match_scipy(small: list[np.ndarray], border: str) -> None:
    filters = [kernel((3, 5), 1), kernel((5, 3), 2), kernel((4, 4), 3)]
    check_operator(
        "filter",
        [small, filters],
        lambda image, filt, **_: reference(image, filt, border=border).astype(np.float32),
        layout=["HWC", ""],
        args={"border": border},
        atol=1e-3,
        expected_layout="HWC",
    )


def test_anchor_and_constant_fill(small: list[np.ndarray]) -> None:
    filters = [kernel((3, 5), 4)] * 3
    fills = [np.float32(v) for v in (0.0, 100.0, 255.0)]
    for anchor in [(0, 0), (2, 4), (1, 3)]:
        outs = run(small, filters, fills, border="constant", anchor=anchor)
        for got, image, filt, fill in zip(outs, small, filters, fills, strict=True):
            want = reference(image, filt, anchor, "constant", float(fill))
            np.testing.assert_allclose(got, want, atol=1e-3)


def test_uint8_rounds_and_saturates(small: list[np.ndarray]) -> None:
    images = [s.astype(np.uint8) for s in small]
    filt = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float32)  # sharpen
    for got, image in zip(run(images, [filt] * 3), images, strict=True):
        want = np.clip(np.rint(reference(image, filt)), 0, 255)
        assert got.dtype == np.uint8
        np.testing.assert_array_equal(got, want)
    (out,) = run(images[:1], [filt], dtype=types.FLOAT)
    assert out.dtype == np.float32 and out.min() < 0


def test_valid_mode_shrinks_and_ignores_the_anchor(small: list[np.ndarray]) -> None:
    filt = kernel((3, 5), 5)
    image = small[0]
    (a,) = run([image], [filt], mode="valid")
    (b,) = run([image], [filt], mode="valid", anchor=(0, 0))
    h, w = image.shape[:2]
    assert a.shape == (h - 2, w - 4, 3)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_allclose(a, reference(image, filt)[1 : h - 1, 2 : w - 2], atol=1e-3)


def test_chw_and_sequences_filter_each_plane(small: list[np.ndarray]) -> None:
    filt = kernel((3, 3), 6)
    image = small[1]
    (hwc,) = run([image], [filt])
    (chw,) = run([np.ascontiguousarray(image.transpose(2, 0, 1))], [filt], layout="CHW")
    np.testing.assert_allclose(chw.transpose(1, 2, 0), hwc, atol=1e-4)
    (seq,) = run([np.stack([image, image])], [filt], layout="FHWC")
    np.testing.assert_allclose(seq[1], hwc, atol=1e-4)


@pytest.mark.parametrize(
    "filt, args, message",
    [
        (np.ones((3, 3), np.float32), {"anchor": (0, 3)}, "anchor must lie within"),
        (np.ones((3, 3), np.float32), {"anchor": (0, 1, 2)}, "1 or 2 values"),
        (np.ones((30, 3), np.float32), {"mode": "valid"}, "must fit in the image"),
        (np.ones((3, 3), np.float32), {"dtype": types.INT32}, "dtype"),
        (np.ones((3, 3, 2), np.float32), {}, "2-D"),
    ],
)
def test_bad_filters_and_arguments(filt, args, message) -> None:
    with pytest.raises(AugkitError, match=message):
        run([np.zeros((8, 8, 3), np.uint8)], [filt], **args)


def test_bad_border_and_types() -> None:
    with pytest.raises(AugkitError, match="border"):
        run([np.zeros((8, 8, 3), np.uint8)], [np.ones((3, 3), np.float32)], border="mirror")
    with pytest.raises(AugkitError, match="int32"):
        run([np.zeros((8, 8, 3), np.int32)], [np.ones((3, 3), np.float32)])


def _filter_pipeline(batch, filters, threads: int, layout: str, **args) -> list[np.ndarray]:
    """fn.filter in a pipeline whose source gives ``batch``: an array (a dense batch: the batch
    kernel) or a list (the per-sample kernel)."""
    from augkit import fn
    from augkit.pipeline import Pipeline

    n = len(batch)
    pipe = Pipeline(batch_size=n, num_threads=threads, device_id=None, seed=1)
    with pipe:
        x = fn.external_source(source=lambda: batch, batch=True, layout=layout)
        f = fn.external_source(source=lambda: filters, batch=True)
        pipe.set_outputs(fn.filter(x, f, **args))
    pipe.build()
    (out,) = pipe.run()
    return [np.asarray(out[i]) for i in range(n)]


@pytest.mark.parametrize("layout", ["HWC", "CHW", "HW"])
@pytest.mark.parametrize(
    "args",
    [{}, {"dtype": types.FLOAT}, {"border": "wrap"}, {"border": "clamp"}, {"anchor": 0}],
)
def test_batch_kernel_equals_per_sample_kernel(
    photos: list[np.ndarray], layout: str, args: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    from augkit.operators.filters.filter import Filter

    taken: list[bool] = []
    batch_kernel = Filter.cpu_batch

    def spy(self, ctx, inputs, arg_inputs):
        out = batch_kernel(self, ctx, inputs, arg_inputs)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(Filter, "cpu_batch", spy)
    side = min(min(p.shape[:2]) for p in photos) // 2
    batch = np.stack([p[:side, :side] for p in photos])
    if layout == "CHW":
        batch = np.ascontiguousarray(batch.transpose(0, 3, 1, 2))
    elif layout == "HW":
        batch = np.ascontiguousarray(batch[..., 1])
    sharpen = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], np.float32)
    filters = np.stack([sharpen * (0.5 + 0.25 * i) for i in range(len(batch))])
    single = _filter_pipeline(list(batch), list(filters), 1, layout, **args)
    assert not any(taken)  # a list of samples: the per-sample kernel
    taken.clear()
    dense = _filter_pipeline(batch, filters, 2, layout, **args)
    assert taken and all(taken)  # a dense batch: the batch kernel
    for a, b, image in zip(dense, single, batch, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape == image.shape
        np.testing.assert_array_equal(a, b)
    if not args and layout == "HW":  # and it is the correlation
        expected = ndimage.correlate(batch[0].astype(np.float64), filters[0], mode="mirror")
        np.testing.assert_array_equal(dense[0], np.clip(np.rint(expected), 0, 255))
