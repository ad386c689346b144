"""JPEG decoding on the GPU for ``device="mixed"``: torchvision's batched nvJPEG decoder, with a
per-sample fall-back to the CPU decoder (``image.decode_image``) for everything it cannot read.

Why torchvision: it is on the GPU machine already (torch + torchvision CUDA builds), its
``torchvision.io.decode_jpeg(list_of_uint8_tensors, device="cuda", mode=...)`` decodes a whole
batch with nvJPEG in one call (the hardware JPEG engine where the GPU has one, A100/H100/H200),
and the same function decodes on the CPU (libjpeg-turbo) with ``device="cpu"``, so the code of
the GPU path is tested on machines without a GPU. nvImageCodec (DALI's own back end) is not
installed there and nothing can be downloaded there. CuPy cannot decode JPEGs.

How (``decode_images``, one call per batch):

- **Which files go to the GPU** (``plan``): an 8-bit baseline/extended/progressive JPEG with 1
  or 3 components (``jpeg.parse``), ending with its EOI marker (a truncated file goes to the
  CPU decoder, which raises its "truncated image data" error as the CPU path does; libjpeg and
  nvJPEG may fill a truncated image with grey instead), within ``max_pixels``, with an EXIF
  orientation this module can read when ``adjust_orientation`` is on (an XMP orientation or
  unreadable EXIF: the CPU decoder, which reads what Pillow reads). Everything else (PNG, BMP,
  TIFF, WebP, GIF, CMYK/YCCK and 12-bit JPEGs, bad files) is decoded by the CPU decoder.
- **Output types**: RGB and BGR decode in torchvision's ``RGB`` mode (BGR: the channels
  reversed on the GPU tensor), GRAY in its ``GRAY`` mode (the luma plane, as the CPU fast path's
  libjpeg gives it), ANY_DATA as GRAY (1 channel) for grey JPEGs and RGB for colour ones, as the
  CPU path. The EXIF orientation is applied on the GPU tensor (flips and transposes, as
  ``jpeg.orient``), since torchvision applies it only on the CPU.
- **Batches and failures**: the files of one mode are decoded in one batched call; when that
  call raises (nvJPEG refuses one file: corrupt entropy data, an unsupported JPEG variant), the
  files are decoded again one by one, so one bad file does not send the batch to the CPU; a
  file that fails alone goes to the CPU decoder, which either decodes it (Pillow is more
  forgiving) or raises the error the user sees with ``device="cpu"`` (``on_error="skip"``
  skips it the same way).
- **Zero copy**: a decoded CHW tensor is permuted to HWC, made contiguous on the GPU and handed
  to CuPy through DLPack (``backend.from_dlpack``): no copy to the host and back.
- ``dct_downscale_hint`` is not applied on the GPU (nvJPEG decodes at full size; the hint only
  *allows* a smaller decode), but is by the CPU fall-back.

Trap: torchvision 0.29 deprecated its image IO: ``decode_jpeg`` warns (``DeprecationWarning``)
on every call, and pytest turns warnings into errors (and ``warnings.catch_warnings`` is not
thread-safe). So this module calls the two operators ``decode_jpeg`` itself calls,
``torch.ops.image.decode_jpegs_cuda(tensors, mode, device)`` and
``torch.ops.image.decode_jpeg(tensor, mode, apply_exif_orientation)``, after importing
``torchvision.io`` (which loads them): the same code, without the warning. Where they are
missing, ``unavailable_reason()`` says so and every file goes to the CPU decoder.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from augkit import backend, types
from augkit.operators.decoders import jpeg

GPU = "torchvision"
"""How ``decode_images`` names a sample decoded by torchvision (on the given device)."""
CPU = "cpu"
"""How ``decode_images`` names a sample given to the CPU decoder."""

_MODES = {"RGB": 3, "GRAY": 1}  # torchvision.io.ImageReadMode values
_EOI = b"\xff\xd9"


@functools.cache
def _image_ops() -> Any:
    import torch

    # loads torchvision's image operators into torch.ops (torchvision has no type information)
    import torchvision.io  # type: ignore[import-untyped]  # noqa: F401

    ops = torch.ops.image
    ops.decode_jpeg  # noqa: B018  (raises when the operator was not loaded)
    ops.decode_jpegs_cuda  # noqa: B018
    return ops


@functools.cache
def unavailable_reason() -> str | None:
    """``None`` when torchvision's JPEG decoder can be used, else why not (plain words)."""
    try:
        _image_ops()
    except ImportError as exc:
        return f"torchvision is not installed ({exc})"
    except Exception as exc:
        return f"torchvision's JPEG decoder cannot be loaded ({type(exc).__name__}: {exc})"
    return None


@dataclass(frozen=True)
class Plan:
    """How one file is decoded by torchvision: its ``mode`` ("RGB" or "GRAY"), whether the
    channels are reversed afterwards (BGR), and the EXIF orientation to apply (1: none)."""

    mode: str
    bgr: bool
    orientation: int


def plan(
    data: np.ndarray,
    output_type: types.DALIImageType,
    adjust_orientation: bool,
    max_pixels: int | None,
) -> Plan | None:
    """How torchvision decodes ``data`` (1-D uint8 bytes), or ``None`` when the CPU decoder
    must (see the module docstring: which files go to the GPU)."""
    if data.ndim != 1 or data.dtype != np.uint8 or data.size < 4:
        return None
    if data[-2:].tobytes() != _EOI:
        return None
    try:
        # numpy's stubs declare ndarray.__buffer__ only for Python >= 3.12
        info = jpeg.parse(memoryview(np.ascontiguousarray(data)))  # type: ignore[arg-type]
    except Exception:
        return None
    if info is None:
        return None
    if max_pixels is not None and info.width * info.height > max_pixels:
        return None  # the CPU decoder refuses it with its message
    orientation = 1
    if adjust_orientation:
        if info.orientation is None:
            return None
        orientation = info.orientation if 1 <= info.orientation <= 8 else 1
    if output_type == types.GRAY:
        mode = "GRAY"
    elif output_type == types.ANY_DATA:
        mode = "GRAY" if info.components == 1 else "RGB"
    elif output_type in (types.RGB, types.BGR):
        mode = "RGB"
    else:
        return None
    return Plan(mode, output_type == types.BGR, orientation)


def _tensor(data: np.ndarray) -> Any:
    import torch

    # A copy of the bytes: the reader's arrays are read-only, and torch warns about those.
    return torch.from_numpy(np.array(data, dtype=np.uint8, copy=True))


def decode_jpegs(datas: Sequence[np.ndarray], device: str, mode: str) -> list[Any]:
    """torchvision's decode of JPEG files (1-D uint8 arrays) on the torch ``device`` ("cpu",
    "cuda:0"...): one CHW uint8 tensor per file, or ``None`` for a file it rejects.

    One batched call on CUDA (nvJPEG); when it raises, each file is decoded alone, so that only
    the files that fail alone are ``None``.
    """
    if not datas:
        return []
    ops = _image_ops()
    tensors = [_tensor(d) for d in datas]
    value = _MODES[mode]
    if device.startswith("cuda"):
        import torch

        where = torch.device(device)

        def batch(ts: list[Any]) -> list[Any]:
            return list(ops.decode_jpegs_cuda(ts, value, where))

    else:

        def batch(ts: list[Any]) -> list[Any]:
            return [ops.decode_jpeg(t, value, False) for t in ts]

    try:
        return batch(tensors)
    except Exception:
        if len(tensors) == 1:
            return [None]
    out: list[Any] = []
    for t in tensors:
        try:
            out.append(batch([t])[0])
        except Exception:
            out.append(None)
    return out


def to_hwc(tensor: Any, how: Plan) -> Any:
    """A decoded CHW tensor as a contiguous HWC tensor, its channels reversed for BGR and the
    EXIF orientation applied (as ``jpeg.orient`` does on NumPy arrays)."""
    x = tensor.permute(1, 2, 0)
    if how.bgr:
        x = x.flip(2)
    o = how.orientation
    if o == 2:
        x = x.flip(1)
    elif o == 3:
        x = x.flip((0, 1))
    elif o == 4:
        x = x.flip(0)
    elif o == 5:
        x = x.permute(1, 0, 2)
    elif o == 6:
        x = x.permute(1, 0, 2).flip(1)
    elif o == 7:
        x = x.flip((0, 1)).permute(1, 0, 2)
    elif o == 8:
        x = x.permute(1, 0, 2).flip(0)
    return x.contiguous()


def decode_images(
    datas: Sequence[np.ndarray],
    device: str,
    cpu_decode: Callable[[np.ndarray], np.ndarray],
    output_type: types.DALIImageType = types.RGB,
    adjust_orientation: bool = True,
    max_pixels: int | None = None,
    map: Callable[[Callable[[int], Any], int], list[Any]] | None = None,
) -> tuple[list[Any], list[str]]:
    """Decode a batch: JPEGs with torchvision on the torch ``device``, the rest with
    ``cpu_decode`` (one sample's bytes -> a NumPy HWC array; ``map(fn, n)`` spreads those calls
    over the pipeline's threads).

    Returns:
        (values, via): per sample, an HWC uint8 array (CuPy for a CUDA ``device``, NumPy for
        "cpu" and for what the CPU decoder decoded) or the exception the CPU decoder raised;
        and how it was decoded (``GPU`` or ``CPU``).
    """
    n = len(datas)
    values: list[Any] = [None] * n
    via = [CPU] * n
    plans: list[Plan | None] = (
        [None] * n
        if unavailable_reason()
        else [plan(d, output_type, adjust_orientation, max_pixels) for d in datas]
    )
    for mode in _MODES:
        chosen = {i: pl for i, pl in enumerate(plans) if pl is not None and pl.mode == mode}
        picked = list(chosen)
        if not picked:
            continue
        decoded = decode_jpegs([datas[i] for i in picked], device, mode)
        for i, tensor in zip(picked, decoded, strict=True):
            if tensor is None:
                continue
            values[i] = backend.from_dlpack(
                to_hwc(tensor, chosen[i]), "cpu" if device == "cpu" else "gpu"
            )
            via[i] = GPU
    rest = [i for i in range(n) if via[i] == CPU]

    def one(k: int) -> Any:
        try:
            return cpu_decode(datas[rest[k]])
        except Exception as exc:
            return exc

    results = (map or (lambda f, m: [f(k) for k in range(m)]))(one, len(rest))
    for i, value in zip(rest, results, strict=True):
        values[i] = value
    return values, via
