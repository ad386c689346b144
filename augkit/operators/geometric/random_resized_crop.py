"""``fn.random_resized_crop``: a random window (area fraction and aspect ratio drawn from the
sample's stream) resized to ``size``, as DALI's ``RandomResizedCrop`` (the torchvision
``RandomResizedCrop`` augmentation).

How it works: ``crop_window.random_crop_window`` draws the window with DALI's algorithm (its
attempts and its fall-back) from the kernel's ``rng``; the window is cut out and resized to
``size`` as ``fn.resize`` resizes a whole image (``resize_window``: slice + resize).
``resized_crop_window`` exposes the window a sample draws, so that tests (and users) can check
an output against it.

Trade-off (speed against DALI's border pixels): DALI hands the window to its resampler as a
ROI of the whole image, so the filter taps at the window's edge read the pixels beyond it;
augkit resizes the cut window, whose edge taps are renormalised inside it. That lets the
default (uint8, linear) case use torch's antialiased kernel (``resize_torch``), which takes no
ROI: 0.30 ms against 0.96 ms for Pillow's ROI resize of a 250x250 window to 224x224 on one
thread. Only the outermost output rows and columns (about ``scale`` / 2 pixels) can differ
from DALI's ROI resize; inside they are the same filter.

The GPU kernel (``device="gpu"``): the same window, drawn on the host from the same stream,
sliced on the device and resized by ``fn.resize``'s GPU kernel (``resize_hwc_gpu``: DALI's
weights and clamped border taps on the cut window, float32 matrix products on CuPy).

Decisions and traps:

- ``size`` is (H, W); one value gives a square. The output size is exactly ``size``
  (``mode="stretch"``), so ``subpixel_scale`` never moves the window.
- Filters: DALI's defaults are ``interp_type = min_filter = mag_filter = INTERP_LINEAR`` with
  ``antialias=True``, i.e. Triangular (antialiased linear) when shrinking and linear when
  enlarging: what ``fn.resize`` does by default. ``min_filter``/``mag_filter`` given override
  ``interp_type`` for their direction.
- ``random_area`` / ``random_aspect_ratio`` take one value (a fixed value) or a (low, high)
  range; an empty range is refused, as in DALI. ``random_area`` above 1 is allowed (DALI allows
  it): every attempt then fails and the fall-back window is taken.
- The windows are random, so they cannot equal DALI's (different random streams); their
  distribution is DALI's. The fall-back with ``random_area`` > 1 is deterministic (the whole
  image when its aspect ratio is in range), which the parity case uses.
- Layouts HWC and CHW; sequences (FHWC...) are not supported.

Targets (``fn.random_resized_crop([images, masks, boxes, labels], size=224)``; targets.py):
every node of the call has the same seed, and ``geometry`` calls ``resized_crop_window`` with
the sample's generator exactly as the kernel does (one draw, the same window), then scales the
window to ``size`` (``window_geometry``). Masks: nearest neighbour, values and dtype kept;
boxes outside the window are dropped with their labels, the others clipped to it. Trap: in
debug mode the input-set nodes run as they are made, before they share their seed (graph.py),
so each draws its own window unless ``seed=`` is given (reported to the lead).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend, types
from augkit.operators.geometric import resize_torch
from augkit.operators.geometric.crop_window import (
    DEFAULT_AREA,
    DEFAULT_ASPECT_RATIO,
    DEFAULT_NUM_ATTEMPTS,
    random_crop_window,
    window_args,
)
from augkit.operators.geometric.resize import (
    _INPUT_TYPES,
    resize_hwc,
    resize_hwc_gpu,
    use_opencv,
)
from augkit.operators.geometric.targets import Geometry, MovesTargets, image_size, movable
from augkit.operators.layouts import HWC_OR_CHW_IMAGE, check_image
from augkit.operators.registry import (
    REQUIRED,
    Arg,
    OperatorSchema,
    described,
    keeps_kind,
    register,
    to_bool,
    to_dtype,
    to_interp,
    to_ints,
)
from augkit.tensors import TensorList


@described("1 or 2 integers > 0 (H, W)")
def to_size(value: Any) -> tuple[int, int]:
    values = to_ints(low=1)(value)
    if len(values) == 1:
        values = values * 2
    if len(values) != 2:
        raise ValueError(f"expected 1 or 2 integers (H, W), got {len(values)}")
    return values


def resized_crop_window(
    shape: tuple[int, ...], layout: str, rng: np.random.Generator, args: dict[str, Any]
) -> tuple[int, int, int, int]:
    """The window ``(y, x, h, w)`` that ``random_resized_crop`` resizes, for a sample of
    ``shape`` and ``layout`` ("HWC" or "CHW"), drawn from ``rng`` with the operator's
    ``random_aspect_ratio``, ``random_area`` and ``num_attempts``."""
    h_axis, w_axis = (1, 2) if layout == "CHW" else (0, 1)
    return random_crop_window(
        shape[h_axis],
        shape[w_axis],
        rng,
        aspect_ratio=args.get("random_aspect_ratio", DEFAULT_ASPECT_RATIO),
        area=args.get("random_area", DEFAULT_AREA),
        num_attempts=args.get("num_attempts", DEFAULT_NUM_ATTEMPTS),
    )


def resize_window(
    image: np.ndarray,
    window: tuple[int, int, int, int],
    layout: str,
    args: dict[str, Any],
    gpu: bool = False,
) -> np.ndarray:
    """``image``'s ``window`` cut out, then resized to ``args["size"]`` as ``fn.resize``
    resizes a whole image (slice + resize: see the module docstring). ``gpu``: resized by
    ``fn.resize``'s GPU kernel (``resize_hwc_gpu``), on the device of ``image``."""
    y, x, h, w = window
    resize_args = {
        "size": tuple(float(v) for v in args["size"]),
        "mode": "stretch",
        "interp_type": args.get("interp_type"),
        "min_filter": args.get("min_filter"),
        "mag_filter": args.get("mag_filter"),
        "antialias": args.get("antialias", True),
        "dtype": args.get("dtype"),
    }
    if gpu:
        xp = backend.array_module(image)
        if layout == "CHW":
            cut = image[:, y : y + h, x : x + w].transpose(1, 2, 0)
            return xp.ascontiguousarray(resize_hwc_gpu(cut, resize_args).transpose(2, 0, 1))
        return xp.ascontiguousarray(resize_hwc_gpu(image[y : y + h, x : x + w], resize_args))
    if layout == "CHW":
        cut = np.ascontiguousarray(image[:, y : y + h, x : x + w].transpose(1, 2, 0))
        return resize_hwc(cut, resize_args).transpose(2, 0, 1)
    return resize_hwc(np.ascontiguousarray(image[y : y + h, x : x + w]), resize_args)


def window_geometry(
    window: tuple[int, int, int, int], size: tuple[int, int], in_size: tuple[int, int]
) -> Geometry:
    """The transform of resizing ``window`` (y, x, h, w) of an image of (width, height)
    ``in_size`` to ``size`` (H, W): the window's corner goes to (0, 0), its far corner to
    (W, H) (``mode="stretch"`` to a whole size: the scale is exact)."""
    y, x, h, w = window
    sx, sy = size[1] / w, size[0] / h
    return Geometry.scale_translate(sx, sy, -x * sx, -y * sy, in_size, (size[1], size[0]))


class RandomResizedCrop(MovesTargets):
    random = True

    def geometry(
        self, shape: Any, layout: str, args: dict[str, Any], rng: Any, extra: Any = ()
    ) -> Geometry:
        # The kernel's one draw: the same window function, from the same stream.
        window = resized_crop_window(shape, args["layout"], rng, args)
        return window_geometry(window, args["size"], image_size(shape, layout))

    def setup(self) -> None:
        resize_torch.torch_module()  # imported on the building thread (see resize.py)
        use_opencv()

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        check_image("random_resized_crop", sample, layout, ("HWC", "CHW"), _INPUT_TYPES)

    def batch_args(self, inputs: Sequence[TensorList]) -> dict[str, Any]:
        return {"layout": inputs[0].layout() or "HWC"}

    def cpu(self, image: np.ndarray, *, layout: str, rng: np.random.Generator, **args: Any):
        window = resized_crop_window(image.shape, layout, rng, args)
        return np.ascontiguousarray(resize_window(image, window, layout, args))

    def gpu(self, image: Any, *, layout: str, rng: np.random.Generator, **args: Any) -> Any:
        """The GPU kernel: the same window (drawn on the host from the same stream), resized
        by ``fn.resize``'s GPU kernel on the device of ``image``."""
        window = resized_crop_window(image.shape, layout, rng, args)
        return resize_window(image, window, layout, args, gpu=True)


register(
    OperatorSchema(
        name="random_resized_crop",
        class_name="RandomResizedCrop",
        impl=RandomResizedCrop,
        devices=("cpu", "gpu"),
        accepts=[movable(HWC_OR_CHW_IMAGE)],
        output_kinds=keeps_kind,
        doc=(
            "Crops a random window of each image and resizes it to ``size`` (H, W), as DALI's "
            "``fn.random_resized_crop``: the window's area is a fraction ``random_area`` of "
            "the image and its aspect ratio (width/height) is drawn log-uniformly from "
            "``random_aspect_ratio``, with up to ``num_attempts`` tries before DALI's fall-back "
            "window; its position is uniform. The window is resized as ``fn.resize`` resizes "
            "a ROI (default: antialiased linear). Example: "
            "``fn.random_resized_crop(images, size=(224, 224))``. The windows follow DALI's "
            "distribution but not its random values. Layouts HWC and CHW. Moves masks, "
            "boxes, keypoints, vertices and labels with the images when given with them as "
            "input sets (``fn.random_resized_crop([images, masks, boxes, labels], size=224)``): "
            "one window per sample for all of them; boxes outside the window are dropped with "
            "their labels."
        ),
        args=[
            Arg("size", "the output size (H, W), or one value for a square", REQUIRED, to_size),
            *window_args(),
            Arg(
                "interp_type",
                "the filter for both directions (default: linear)",
                types.INTERP_LINEAR,
                to_interp,
                True,
            ),
            Arg(
                "min_filter",
                "the filter when shrinking (None: interp_type; DALI's default is linear)",
                None,
                to_interp,
                True,
            ),
            Arg(
                "mag_filter",
                "the filter when enlarging (None: interp_type; DALI's default is linear)",
                None,
                to_interp,
                True,
            ),
            Arg("antialias", "widen the filter when shrinking (not for INTERP_NN)", True, to_bool),
            Arg("dtype", "output type: the input type (None) or types.FLOAT", None, to_dtype),
            Arg("minibatch_size", "accepted for DALI compatibility; no effect on the CPU", 32),
            Arg("temp_buffer_hint", "accepted for DALI compatibility; no effect on the CPU", 0),
        ],
    )
)
