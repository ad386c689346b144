"""``decoders.image(device="mixed")`` and the crop decoders on the GPU path
(``augkit/operators/decoders/nvjpeg.py``: torchvision's batched nvJPEG decode, a per-sample
fall-back to the CPU decoder).

Most tests run the mixed kernels' very code on the CPU (torchvision's ``decode_jpeg`` with
``device="cpu"``: ``ImageDecoder.gpu_decode_device = "cpu"``), on the real photos and on files
made here; the ``gpu``-marked ones run ``device="mixed"`` pipelines on a CUDA device (skipped
without one, by tests/conftest.py).

Tolerance against the CPU decoder (``TOLERANCE``): nvJPEG and libjpeg-turbo differ by their IDCT
and chroma upsampling, so pixels are compared by a mean and a max of |difference|:

- mean <= 2.0 levels: torchvision's own bar for its CUDA decoder against its CPU decoder
  (test/test_image.py, ``test_decode_jpegs_cuda``: ``(cuda - cpu).abs().mean() < 2``);
- max <= 96 levels: room for 4:2:0 chroma upsampling at saturated edges (nvJPEG does not do
  libjpeg's "fancy" upsampling; a quarter of a full chroma step is ~90 levels of R or B).

Both are far from what a wrong image gives: swapping R and B of the colour photos of data/images
moves the mean by 3.0 (Hubble) to 75.6 levels (retina) and the max by 101-255; a transposed
square photo moves the mean by tens of levels (``test_the_tolerance_catches_wrong_images``).
Measured on the CPU here: torchvision's libjpeg-turbo decode equals augkit's CPU decode bit for
bit on all 15 photos (RGB and GRAY), so the CPU tests would pass at 0.
"""

from __future__ import annotations

import functools
import io
import pathlib

import numpy as np
import pytest
from PIL import Image

from augkit import backend, fn, types
from augkit.errors import OperatorError
from augkit.operators.base import RunContext
from augkit.operators.decoders import nvjpeg
from augkit.operators.decoders.image import ImageDecoder, decode_image
from augkit.operators.registry import REGISTRY
from augkit.pipeline import Pipeline
from augkit.tensors import TensorList

TOLERANCE = {"mean": 2.0, "max": 96}
OUTPUT_TYPES = [types.RGB, types.BGR, types.GRAY, types.ANY_DATA]

needs_torchvision = pytest.mark.skipif(
    nvjpeg.unavailable_reason() is not None, reason=f"{nvjpeg.unavailable_reason()}"
)
pytestmark = needs_torchvision


def within(got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    got, want = backend.to_cpu(got), backend.to_cpu(want)
    assert got.shape == want.shape, f"{what}: shape {got.shape} != {want.shape}"
    assert got.dtype == np.uint8
    diff = np.abs(got.astype(np.int16) - want.astype(np.int16))
    assert diff.mean() <= TOLERANCE["mean"] and diff.max() <= TOLERANCE["max"], (
        f"{what}: mean |diff| {diff.mean():.3f}, max {diff.max()} (bar: {TOLERANCE})"
    )


def breaks_tolerance(got: np.ndarray, want: np.ndarray) -> bool:
    if got.shape != want.shape:
        return True
    diff = np.abs(got.astype(np.int16) - want.astype(np.int16))
    return diff.mean() > TOLERANCE["mean"] or diff.max() > TOLERANCE["max"]


def cpu_decoder(output_type: types.DALIImageType):
    """The fall-back decode for ``output_type`` (what ``ImageDecoder.cpu_decoder`` gives)."""
    return functools.partial(decode_image, output_type=output_type)


def save(image: Image.Image, fmt: str, **kwargs) -> np.ndarray:
    out = io.BytesIO()
    image.save(out, fmt, **kwargs)
    return np.frombuffer(out.getvalue(), np.uint8)


@pytest.fixture(scope="module")
def photo_bytes(photo_paths) -> list[np.ndarray]:
    datas = [np.fromfile(p, np.uint8) for p in photo_paths]
    for d in datas:
        d.flags.writeable = False  # as the reader gives them
    return datas


@pytest.fixture(scope="module")
def odd(photo_paths) -> dict[str, np.ndarray]:
    """Files made with Pillow from a photo: the GPU decoder's and the CPU decoder's."""
    small = Image.open(photo_paths[0]).convert("RGB").resize((96, 64))
    exif = Image.Exif()
    exif[0x0112] = 6  # displayed rotated 90 degrees clockwise
    return {
        "baseline.jpg": save(small, "JPEG", quality=90),
        "progressive.jpg": save(small, "JPEG", quality=90, progressive=True),
        "grey.jpg": save(small.convert("L"), "JPEG", quality=90),
        "exif_rotated.jpg": save(small, "JPEG", quality=90, exif=exif.tobytes()),
        "cmyk.jpg": save(small.convert("CMYK"), "JPEG", quality=90),
        "image.png": save(small, "PNG"),
        "image.bmp": save(small, "BMP"),
    }


# Where each of ``odd``'s files is decoded by the mixed decoder.
ODD_VIA = {
    "baseline.jpg": nvjpeg.GPU,
    "progressive.jpg": nvjpeg.GPU,
    "grey.jpg": nvjpeg.GPU,
    "exif_rotated.jpg": nvjpeg.GPU,
    "cmyk.jpg": nvjpeg.CPU,  # 4 components: Pillow
    "image.png": nvjpeg.CPU,
    "image.bmp": nvjpeg.CPU,
}


def impl(name: str, device: str = "mixed", **args):
    """The operator ``name`` as a pipeline would build it, with ``args`` over the defaults."""
    schema = REGISTRY[name]
    values = {a.name: a.default for a in schema.args}
    values.update({k: schema.arguments[k].check(v, name) for k, v in args.items()})
    return schema.impl(schema, values, name, 1234, device, 1)


def run(op, datas: list[np.ndarray], names: list[str] | None = None, iteration: int = 0):
    names = names or [f"file{i}.jpg" for i in range(len(datas))]
    ctx = RunContext(iteration, len(datas))
    (out,) = op.run(ctx, [TensorList(datas, "", names)], {})
    return out, ctx


@pytest.fixture
def on_cpu(monkeypatch):
    """The mixed kernels decode with torchvision on the CPU (outputs stay NumPy)."""
    monkeypatch.setattr(ImageDecoder, "gpu_decode_device", "cpu")


# --- the batched decode against the CPU decoder ------------------------------------------------


@pytest.mark.parametrize("output_type", OUTPUT_TYPES, ids=lambda t: t.name)
def test_batched_decode_matches_the_cpu_decoder(photo_bytes, output_type):
    values, via = nvjpeg.decode_images(
        photo_bytes, "cpu", cpu_decoder(output_type), output_type, adjust_orientation=True
    )
    assert via == [nvjpeg.GPU] * len(photo_bytes)  # every photo went to torchvision
    for k, (data, got) in enumerate(zip(photo_bytes, values, strict=True)):
        within(got, decode_image(data, output_type), f"photo {k}, {output_type.name}")


def test_the_tolerance_catches_wrong_images(photo_bytes):
    """The bar has teeth: R and B swapped (colour photos) or the image transposed breaks it."""
    swapped = transposed = 0
    for data in photo_bytes:
        want = decode_image(data, types.RGB)
        if np.abs(want[..., 0].astype(int) - want[..., 2]).max() > 0:  # a colour photo
            assert breaks_tolerance(want[..., ::-1], want)
            swapped += 1
        assert breaks_tolerance(want.transpose(1, 0, 2), want)
        transposed += 1
    assert swapped >= 8 and transposed == len(photo_bytes)


def test_decode_jpegs_gives_chw_tensors_and_none_for_rejects(photo_bytes):
    bad = photo_bytes[0].copy()
    bad[200:-2] = 0  # headers kept, entropy data zeroed, EOI kept
    tensors = nvjpeg.decode_jpegs([photo_bytes[1], bad, photo_bytes[2]], "cpu", "RGB")
    assert tensors[1] is None
    for t, data in zip((tensors[0], tensors[2]), (photo_bytes[1], photo_bytes[2]), strict=True):
        want = decode_image(data, types.RGB, adjust_orientation=False)
        assert tuple(t.shape) == (3, *want.shape[:2]) and str(t.device) == "cpu"


def test_odd_files_take_the_right_path_and_decode_as_the_cpu_decoder(odd):
    names = list(odd)
    for output_type in OUTPUT_TYPES:
        values, via = nvjpeg.decode_images(
            [odd[n] for n in names], "cpu", cpu_decoder(output_type), output_type
        )
        assert dict(zip(names, via, strict=True)) == ODD_VIA
        for name, got in zip(names, values, strict=True):
            within(got, decode_image(odd[name], output_type), f"{name}, {output_type.name}")
    (rotated,), _ = nvjpeg.decode_images([odd["exif_rotated.jpg"]], "cpu", decode_image)
    assert rotated.shape == (96, 64, 3)  # the EXIF orientation applied on the tensor
    (stored,), _ = nvjpeg.decode_images(
        [odd["exif_rotated.jpg"]], "cpu", decode_image, adjust_orientation=False
    )
    assert stored.shape == (64, 96, 3)


def test_a_file_the_gpu_decoder_rejects_alone_goes_to_the_cpu(monkeypatch, photo_bytes):
    """nvJPEG refuses one file of the batch: the batch call fails, every file is retried
    alone, and only that file is decoded by the CPU decoder (which reads it)."""
    real = nvjpeg._image_ops()
    refused = photo_bytes[3].tobytes()
    calls = []

    class Ops:
        def decode_jpeg(self, tensor, mode, exif):
            calls.append(1)
            if tensor.numpy().tobytes() == refused:
                raise RuntimeError("nvjpeg: unsupported JPEG")
            return real.decode_jpeg(tensor, mode, exif)

    monkeypatch.setattr(nvjpeg, "_image_ops", lambda: Ops())
    batch = photo_bytes[:6]
    values, via = nvjpeg.decode_images(batch, "cpu", decode_image)
    assert via == [nvjpeg.GPU] * 3 + [nvjpeg.CPU] + [nvjpeg.GPU] * 2
    assert len(calls) == 4 + 6  # the batch up to the refusal, then each file alone
    for data, got in zip(batch, values, strict=True):
        within(got, decode_image(data), "after a retry")


def test_without_torchvision_everything_is_decoded_on_the_cpu(monkeypatch, photo_bytes):
    monkeypatch.setattr(nvjpeg, "unavailable_reason", lambda: "torchvision is not installed")
    values, via = nvjpeg.decode_images(photo_bytes[:3], "cpu", decode_image)
    assert via == [nvjpeg.CPU] * 3
    for data, got in zip(photo_bytes[:3], values, strict=True):
        np.testing.assert_array_equal(got, decode_image(data))


def test_truncated_and_too_large_jpegs_are_left_to_the_cpu_decoder(photo_bytes):
    data = photo_bytes[0]
    assert nvjpeg.plan(data, types.RGB, True, None) is not None
    assert nvjpeg.plan(data[: len(data) // 2], types.RGB, True, None) is None  # no EOI
    assert nvjpeg.plan(data, types.RGB, True, 100) is None  # over max_pixels


# --- the mixed kernels' code, run on the CPU ---------------------------------------------------


@pytest.mark.parametrize("output_type", OUTPUT_TYPES, ids=lambda t: t.name)
def test_mixed_batch_kernel_equals_the_cpu_kernel(on_cpu, photo_bytes, odd, output_type):
    datas = [*photo_bytes, *odd.values()]
    got, _ = run(impl("decoders.image", output_type=output_type), datas)
    want, _ = run(impl("decoders.image", "cpu", output_type=output_type), datas)
    assert got.layout() == "HWC" and len(got) == len(datas)
    for k in range(len(datas)):
        within(got._samples[k], want._samples[k], f"sample {k}")
        assert not got._samples[k].flags.writeable  # outputs are read-only, as on the CPU


def test_a_corrupt_file_raises_naming_the_sample(on_cpu, photo_bytes):
    truncated = photo_bytes[1][: len(photo_bytes[1]) // 2]
    garbage = np.frombuffer(b"not an image at all" * 10, np.uint8)
    datas = [photo_bytes[0], truncated, garbage, photo_bytes[2]]
    names = ["animals/a.jpg", "animals/truncated.jpg", "animals/garbage.jpg", "animals/b.jpg"]
    with pytest.raises(OperatorError) as info:
        run(impl("decoders.image"), datas, names)
    message = str(info.value)
    assert info.value.sample_index == 1 and "animals/truncated.jpg" in message
    assert "truncated image data" in message
    with pytest.raises(OperatorError, match=r"animals/truncated\.jpg") as cpu_info:
        run(impl("decoders.image", "cpu"), datas, names)
    assert str(cpu_info.value) == message  # the CPU path's words exactly


def test_skip_leaves_bad_files_out_with_their_reasons(on_cpu, photo_bytes, odd):
    truncated = photo_bytes[1][: len(photo_bytes[1]) // 2]
    datas = [photo_bytes[0], truncated, odd["image.png"], np.zeros(0, np.uint8)]
    names = ["a.jpg", "truncated.jpg", "image.png", "empty.jpg"]
    out, ctx = run(impl("decoders.image", on_error="skip"), datas, names)
    assert out._source_info == ["a.jpg", "image.png"]
    within(out._samples[0], decode_image(photo_bytes[0]), "a.jpg")
    within(out._samples[1], decode_image(odd["image.png"]), "image.png")
    skipped = {s.source_info: s.reason for s in ctx.notes.skipped}
    _, cpu_ctx = run(impl("decoders.image", "cpu", on_error="skip"), datas, names)
    assert skipped == {s.source_info: s.reason for s in cpu_ctx.notes.skipped}
    assert "truncated image data" in skipped["truncated.jpg"]
    assert "empty" in skipped["empty.jpg"]


CROPS = [
    ("decoders.image_crop", {"crop": (40, 50), "crop_pos_x": 0.3, "crop_pos_y": 0.7}),
    ("decoders.image_random_crop", {"random_area": (0.1, 0.9)}),
    ("decoders.image_slice", {"rel_start": (0.1, 0.2), "rel_shape": (0.5, 0.4)}),
    ("decoders.image_crop", {"crop": (30, 30), "output_type": types.GRAY}),
]


@pytest.mark.parametrize(("name", "args"), CROPS, ids=lambda x: x if isinstance(x, str) else "")
def test_crop_decoders_cut_the_cpu_paths_windows(on_cpu, photo_bytes, odd, name, args):
    datas = [*photo_bytes[:6], odd["image.png"], odd["exif_rotated.jpg"]]
    for iteration in (0, 1):
        got, _ = run(impl(name, **args), datas, iteration=iteration)
        want, _ = run(impl(name, "cpu", **args), datas, iteration=iteration)
        for k in range(len(datas)):
            within(got._samples[k], want._samples[k], f"{name} sample {k}")


def test_crop_decoder_window_outside_the_image_raises_naming_the_sample(on_cpu, photo_bytes):
    with pytest.raises(OperatorError, match="does not fit in the decoded image") as info:
        run(impl("decoders.image_crop", crop=(5000, 10)), photo_bytes[:2], ["x.jpg", "y.jpg"])
    assert info.value.sample_index == 0 and "x.jpg" in str(info.value)


# --- on a GPU ----------------------------------------------------------------------------------


def _pipe(files: list[str], device: str, op: str = "decoders.image", **args) -> Pipeline:
    pipe = Pipeline(batch_size=len(files), num_threads=2, device_id=0, seed=7)
    decoder = getattr(fn.decoders, op.split(".")[1])
    with pipe:
        jpegs, _ = fn.readers.file(files=files, name="Reader")
        pipe.set_outputs(decoder(jpegs, device=device, **args))
    return pipe


def _batch(files: list[str], device: str, op: str = "decoders.image", **args) -> list:
    pipe = _pipe(files, device, op, **args)
    try:
        (out,) = pipe.run()
        assert out.device == ("gpu" if device == "mixed" else "cpu")
        return list(out._samples)
    finally:
        pipe.close()


@pytest.mark.gpu
@pytest.mark.parametrize("output_type", OUTPUT_TYPES, ids=lambda t: t.name)
def test_gpu_mixed_decoder_matches_the_cpu_decoder(photo_paths, output_type):
    files = [str(p) for p in photo_paths]
    got = _batch(files, "mixed", output_type=output_type)
    want = _batch(files, "cpu", output_type=output_type)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert backend.is_gpu_array(g), type(g)
        within(g, w, f"{files[k]} ({output_type.name})")


@pytest.mark.gpu
@pytest.mark.cuda
def test_gpu_decode_jpegs_on_cuda(photo_bytes):
    tensors = nvjpeg.decode_jpegs(photo_bytes, "cuda:0", "RGB")
    assert all(t is not None and t.is_cuda for t in tensors)
    values, via = nvjpeg.decode_images(photo_bytes, "cuda:0", decode_image)
    assert via == [nvjpeg.GPU] * len(photo_bytes)
    for data, value in zip(photo_bytes, values, strict=True):
        assert backend.is_gpu_array(value) and value.flags.c_contiguous
        within(value, decode_image(data), "decode_images on cuda:0")


@pytest.mark.gpu
def test_gpu_odd_files_and_skipping(tmp_path: pathlib.Path, odd, photo_bytes):
    for name, data in odd.items():
        (tmp_path / name).write_bytes(data.tobytes())
    (tmp_path / "truncated.jpg").write_bytes(photo_bytes[0][:5000].tobytes())
    good = sorted(str(tmp_path / n) for n in odd)
    for output_type in OUTPUT_TYPES:
        got = _batch(good, "mixed", output_type=output_type)
        want = _batch(good, "cpu", output_type=output_type)
        for k, (g, w) in enumerate(zip(got, want, strict=True)):
            assert backend.is_gpu_array(g)
            within(g, w, f"{good[k]} ({output_type.name})")
    files = [*good, str(tmp_path / "truncated.jpg")]
    with pytest.raises(OperatorError, match=r"truncated\.jpg"):
        _batch(files, "mixed")
    pipe = _pipe(files, "mixed", on_error="skip")
    try:
        with pytest.warns(Warning, match="truncated"):
            (out,) = pipe.run()
        assert out.device == "gpu" and len(out) == len(files)
        assert all("truncated" not in s for s in out._source_info)
    finally:
        pipe.close()


@pytest.mark.gpu
@pytest.mark.parametrize(("name", "args"), CROPS, ids=lambda x: x if isinstance(x, str) else "")
def test_gpu_crop_decoders_match_the_cpu(photo_paths, name, args):
    files = [str(p) for p in photo_paths[:8]]
    got = _batch(files, "mixed", name, **args)
    want = _batch(files, "cpu", name, **args)
    for k, (g, w) in enumerate(zip(got, want, strict=True)):
        assert backend.is_gpu_array(g)
        within(g, w, f"{name} {files[k]}")
