"""The torch back end of ``fn.resize``: torch's antialiased bilinear uint8 kernel (a port of
Pillow-SIMD's AVX2 resampler) for the resizes where it computes what Pillow's BILINEAR does.

When ``resize.py`` uses it (everything else goes to Pillow or NumPy as before):

- torch is installed (``augkit[torch]``; the core never needs it) and its CPU kernels were
  built for AVX2 or AVX-512 (``torch.backends.cpu.get_cpu_capability()``): elsewhere (ARM,
  old x86) torch runs a generic kernel that was not measured;
- uint8 in and uint8 out, 1 to 4 channels (torch's AVX kernel handles C ≤ 4);
- the filter is Pillow's BILINEAR on both axes (DALI's default: Triangular when shrinking,
  Linear when enlarging; ``antialias=True``);
- the source window is the whole image: no ROI, and a rounded output size equal to the exact
  one (e.g. ``resize_x=300, resize_y=300``) or ``subpixel_scale=False``. DALI's sub-pixel
  window adjustment moves the window by a fraction of a pixel, which torch's ``interpolate``
  cannot express (its ``scale_factor`` anchors the window at 0, DALI centres it).
- ``BACKEND`` is not "pillow". It is read from ``AUGKIT_RESIZE_BACKEND`` ("auto", the default,
  "torch" or "pillow") when this module is imported; tests and benchmarks may set it.

Why (measured on the 2-core benchmark machine, 256 photos of 300–1200 px to 300×300): 0.42 ms
per image against 2.1 ms for Pillow 13's BILINEAR (5×), and a mean 0.03 levels from Pillow's
output over those photos (0.02–0.13 for other sizes and 1–4 channels on the test photos, never
more than 2 levels on a pixel: both kernels use Pillow's weights in fixed point and round
slightly differently). The kernel releases the GIL: 2 threads run it at 1.6–1.8× one thread,
and decode (simplejpeg) + resize at 1.8×.

Traps:

- ``torch.from_numpy`` warns on a read-only array (and pytest turns warnings into errors):
  read-only samples go through a DLPack 1.0 capsule (zero-copy, no warning); NumPy < 2.1
  cannot export those, and then the array is copied.
- torch allocates a 1×C×H×W output as NCHW even for a channels-last input (pytorch issue
  68430), which costs a repacking copy; the input view is re-strided first, as torchvision's
  ``resize`` does, so the output comes back channels-last and its HWC view is contiguous.
- Threads: the uint8 AVX kernel has no ``parallel_for`` (it loops over the batch), so torch's
  intra-op thread count does not matter and is left alone; augkit's own threads give the
  parallelism. torch's float kernels are parallel but, on one thread, no faster than Pillow's
  float path (2.7 ms each here), so float resizes stay on Pillow and never oversubscribe the
  cores.
- torch is imported once, by ``fn.resize`` when the pipeline is built (about a second, on the
  thread that builds it), never lazily on a pool thread: a half-imported torch seen by another
  thread can crash the process.
"""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

BACKEND: str = os.environ.get("AUGKIT_RESIZE_BACKEND", "auto").strip().lower() or "auto"
"""The resize back end asked for: "auto" (torch where installed and fast), "torch" or
"pillow"."""

_FAST_CAPABILITIES = ("AVX2", "AVX512")
_torch: Any = None
_loaded = False
_lock = threading.Lock()


def _load() -> Any:
    try:
        import torch
        import torch.nn.functional
        import torch.utils.dlpack
    except ImportError:
        return None
    try:
        capability = torch.backends.cpu.get_cpu_capability()
    except Exception:
        return None
    return torch if capability in _FAST_CAPABILITIES else None


def torch_module() -> Any:
    """torch when the fast kernel can be used here, else ``None`` (imports torch once)."""
    global _torch, _loaded
    if BACKEND == "pillow":
        return None
    if not _loaded:
        with _lock:
            if not _loaded:
                _torch = _load()
                _loaded = True
    return _torch


def backend() -> str:
    """The back end ``fn.resize`` uses for the resizes torch can do: "torch" or "pillow"."""
    return "torch" if torch_module() is not None else "pillow"


def supports(image: np.ndarray, out_dtype: np.dtype) -> bool:
    """Whether ``resize`` can take this image (dtype and channels; not the geometry)."""
    return (
        image.dtype == np.uint8
        and out_dtype == np.uint8
        and 1 <= image.shape[2] <= 4
        and image.size > 0  # empty images keep Pillow's error message
        and torch_module() is not None
    )


def _as_tensor(torch: Any, array: np.ndarray) -> Any:
    if any(s < 0 for s in array.strides):
        array = np.ascontiguousarray(array)
    if array.flags.writeable:
        return torch.from_numpy(array)
    try:
        capsule = array.__dlpack__(max_version=(1, 0))
    except (TypeError, BufferError):  # NumPy < 2.1: no read-only export
        return torch.from_numpy(np.array(array))
    return torch.utils.dlpack.from_dlpack(capsule)


def resize(image: np.ndarray, out_hw: tuple[int, int]) -> np.ndarray:
    """Pillow's BILINEAR resize of the whole uint8 (H, W, C) ``image`` to ``out_hw``, computed
    by torch: an (H, W, C) uint8 view of torch's output (no copy), contiguous when ``image``
    is (for a CHW image seen as HWC, it is the CHW result seen the same way)."""
    torch = torch_module()
    h, w, c = image.shape
    t = _as_tensor(torch, image).permute(2, 0, 1).unsqueeze(0)
    if image.flags.c_contiguous:
        # channels-last: re-stride the batch dimension so that torch keeps the memory format
        t = t.as_strided((1, c, h, w), (h * w * c, 1, w * c, c))
    out = torch.nn.functional.interpolate(
        t, size=out_hw, mode="bilinear", antialias=True, align_corners=False
    )
    return out[0].permute(1, 2, 0).numpy()
