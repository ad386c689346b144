"""``fn.experimental.median_blur``, ``fn.experimental.dilate``, ``fn.experimental.erode``: DALI runs
them on the GPU only (CV-CUDA's MedianBlur and Morphology); augkit runs them on the CPU and the
GPU, with DALI's documented arguments and CV-CUDA's semantics.

Facts from DALI's sources (``median_blur.cc``, ``morphology/morphology.cc``, ``nvcvop.cc``) and
CV-CUDA's kernels (``median_blur_var_shape.cu``, ``morphology_var_shape.cu``); DALI cannot run
them on a CPU, so the references are ``scipy.ndimage`` (tests/operators/test_morphology.py):

- Sizes and anchors are **(width, height)**, CV-CUDA's ``int2`` order (not DALI's usual
  outermost-first): ``window_size=(5, 3)`` is 5 wide and 3 tall. One value is used for both.
- median_blur: the window starts ``size // 2`` left of and above the pixel, its sizes must be odd
  and positive, the border repeats the edge pixel (replicate), and for each channel the value is
  the element of rank ``n // 2`` of the ``n`` values (the median; n is odd).
- dilate / erode: a rectangular structuring element of ``mask_size`` (default 3x3; -1 in either
  component means 3x3) placed at ``anchor`` (default -1: ``mask // 2`` per axis); ``out = max``
  (dilate) or ``min`` (erode) over it. ``border_mode``: "constant" (default: the neutral value,
  the type's lowest for dilate and highest for erode, so the border never wins), "replicate",
  "reflect" (``cba|abc``), "reflect_101" (``cb|abc``), "wrap". ``iterations`` (constant, >= 1)
  applies the operation that many times, the border handled again each time, as CV-CUDA does.
- Layouts: HW, HWC, CHW, FHWC, FCHW (no layout: HW or HWC); leading C/F axes are planes.
- Types: CV-CUDA takes uint8, uint16 and float32 with 1, 3 or 4 channels; augkit also takes int16
  and any number of channels.

Difference from DALI: for float32 dilation with the constant border CV-CUDA starts from (and
pads with) ``numeric_limits<float>::min()``, the smallest *positive* float, so its outputs are
never below 1.2e-38 (a negative image comes out as 1.2e-38 everywhere); augkit uses -inf, the
neutral value, so a float dilation is a plain maximum.

Kernels: OpenCV (``medianBlur`` for square windows where it allows them, ``dilate``/``erode``
on an explicitly padded plane), ``scipy.ndimage.median_filter`` for other median windows.

GPU (``device="gpu"``; DALI has these three on the GPU only): the same functions written
against the array module (``backend.array_module``: NumPy or CuPy), no OpenCV or scipy, all
planes of a sample at once. The border is one ``xp.take`` per axis with indices computed on the
host (``border_take``: replicate, reflect, reflect_101, wrap) or ``xp.pad`` with the neutral
value (constant). median_blur stacks the window's ``n`` shifted slices along a new last axis,
sorts them (``xp.sort``) and takes element ``n // 2``: the exact median, equal to the CPU
kernel (OpenCV's and scipy's medians are exact too). dilate/erode take the running
``xp.maximum``/``xp.minimum`` of shifted slices, along W then along H: a rectangle's maximum
is separable, and so is the border (a per-axis index map), so the result equals the CPU's
``cv2.dilate``/``cv2.erode`` exactly. CuPy constructs: ``take``, ``pad(mode="constant")``,
``stack``, ``sort(axis=-1)``, ``maximum``/``minimum``, slicing, ``reshape``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.filters import kernels
from augkit.operators.registry import (
    Arg,
    InputSpec,
    OperatorSchema,
    keeps_kind,
    one_of,
    register,
    to_int,
    to_ints,
)

TYPES = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.int16, np.float32))
LAYOUTS = ("HW", "HWC", "FHWC", "CHW", "FCHW")
BORDER_MODES = ("constant", "replicate", "reflect", "reflect_101", "wrap")
IMAGES = InputSpec(
    "images with layout HW, HWC, CHW, FHWC or FCHW",
    kinds=("image",),
    ndims=(2, 3, 4),
    hints=kernels.FILTER_HINTS,
)


def planes_of(operator: str, sample: np.ndarray, layout: str) -> tuple[np.ndarray, tuple]:
    """The sample as ``(planes, H, W, C)`` (a view) and the shape to give the result back."""
    if not layout:
        layout = {2: "HW", 3: "HWC"}.get(sample.ndim, "")
    if layout not in LAYOUTS or len(layout) != sample.ndim:
        raise ValueError(
            f"{operator} takes images with layout {', '.join(LAYOUTS)}; got a sample of shape "
            f"{tuple(sample.shape)}" + (f' and layout "{layout}"' if layout else "")
        )
    h = layout.index("H")
    channels = sample.shape[-1] if layout.endswith("C") else 1
    planes = sample.reshape(-1, sample.shape[h], sample.shape[h + 1], channels)
    return planes, sample.shape


def _median_window(window_size: Any) -> tuple[int, int]:
    """median_blur's (width, height): odd and positive."""
    width, height = _pair(window_size, "experimental.median_blur", "window_size")
    if width < 1 or height < 1 or width % 2 == 0 or height % 2 == 0:
        raise ValueError(
            f"experimental.median_blur: window_size must be odd and positive, got {(width, height)}"
        )
    return width, height


def _pair(values: tuple[int, ...], operator: str, name: str) -> tuple[int, int]:
    return kernels.per_axis(values, 2, operator, name)  # (width, height)


def border_index(size: int, before: int, after: int, mode: str) -> np.ndarray:
    """The source index of each position of an axis of ``size`` padded by ``before`` and
    ``after`` (host arrays): "replicate" (``aa|ab``), "reflect" (``ba|ab``), "reflect_101"
    (``b|ab``), "wrap"; any distance (reflections repeat, as OpenCV's ``borderInterpolate``)."""
    index = np.arange(-before, size + after)
    if mode == "replicate":
        return np.clip(index, 0, size - 1)
    if mode == "wrap":
        return np.mod(index, size)
    if mode == "reflect":
        index = np.mod(index, 2 * size)
        return np.where(index < size, index, 2 * size - 1 - index)
    if mode == "reflect_101":
        return kernels._reflect101(index, size)
    raise ValueError(f"unknown border mode {mode!r}")


def border_take(x: Any, axis: int, before: int, after: int, mode: str, fill: float, xp: Any) -> Any:
    """``x`` (an array of ``xp``) padded along ``axis``: one ``take`` with host-made indices,
    or, for "constant", ``xp.pad`` with ``fill``."""
    if mode == "constant":
        widths = [(0, 0)] * x.ndim
        widths[axis] = (before, after)
        return xp.pad(x, widths, mode="constant", constant_values=fill)
    return xp.take(x, xp.asarray(border_index(x.shape[axis], before, after, mode)), axis=axis)


def _window_slices(axis: int, size: int, taps: int, ndim: int) -> list[tuple[slice, ...]]:
    """The ``taps`` shifted windows of length ``size`` along ``axis`` of a padded array."""
    index = [slice(None)] * ndim
    out = []
    for k in range(taps):
        index[axis] = slice(k, k + size)
        out.append(tuple(index))
    return out


class MedianBlur(kernels.FilterOperator):
    def setup(self) -> None:
        super().setup()
        from scipy import ndimage

        self.ndimage = ndimage

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        kernels.check_number_image("experimental.median_blur", sample, TYPES)

    @staticmethod
    def _planes(
        sample: Any, layout: str, window_size: tuple[int, ...]
    ) -> tuple[int, int, Any, tuple[int, ...]] | None:
        """What both kernels filter: the window's (width, height), the planes and the sample's
        shape; None where the median is the sample itself (empty, or a 1x1 window)."""
        width, height = _median_window(window_size)
        planes, shape = planes_of("experimental.median_blur", sample, layout)
        if sample.size == 0 or (width == 1 and height == 1):
            return None
        return width, height, planes, shape

    def cpu(
        self, sample: np.ndarray, *, layout: str, window_size: tuple[int, ...], **_: Any
    ) -> np.ndarray:
        plan = self._planes(sample, layout, window_size)
        if plan is None:
            return sample.copy()
        width, height, planes, shape = plan
        out = np.empty_like(planes)
        channels = planes.shape[-1]
        square = width == height
        cv_ok = square and (sample.dtype == np.uint8 or width <= 5)
        for p, plane in enumerate(planes):
            if cv_ok and channels in (1, 3, 4):
                res = self.cv2.medianBlur(np.ascontiguousarray(plane), width)
                out[p] = res.reshape(plane.shape)
            elif cv_ok:
                for c in range(channels):
                    out[p, ..., c] = self.cv2.medianBlur(np.ascontiguousarray(plane[..., c]), width)
            else:
                out[p] = self.ndimage.median_filter(plane, size=(height, width, 1), mode="nearest")
        return out.reshape(shape)

    def gpu(self, sample: Any, *, layout: str, window_size: tuple[int, ...], **_: Any) -> Any:
        """The exact median on ``sample``'s array module: the window's shifted slices of the
        edge-replicated planes, stacked and sorted (see the module docstring)."""
        plan = self._planes(sample, layout, window_size)
        if plan is None:
            return sample.copy()
        width, height, planes, shape = plan
        xp = backend.array_module(sample)
        _, h, w, _ = planes.shape
        rx, ry = width // 2, height // 2
        padded = border_take(planes, 2, rx, rx, "replicate", 0, xp)
        padded = border_take(padded, 1, ry, ry, "replicate", 0, xp)
        taps = [padded[:, i : i + h, j : j + w] for i in range(height) for j in range(width)]
        ordered = xp.sort(xp.stack(taps, axis=-1), axis=-1)
        return xp.ascontiguousarray(ordered[..., len(taps) // 2]).reshape(shape)


class Morphology(kernels.FilterOperator):
    """Dilation (``maximum``) or erosion (``minimum``) with a rectangle of ones."""

    operation = ""  # "dilate" or "erode"

    def setup(self) -> None:
        super().setup()
        cv2 = self.cv2
        self.apply = cv2.dilate if self.operation == "dilate" else cv2.erode
        self.borders = {
            "replicate": cv2.BORDER_REPLICATE,
            "reflect": cv2.BORDER_REFLECT,
            "reflect_101": cv2.BORDER_REFLECT_101,
            "wrap": cv2.BORDER_WRAP,
        }

    @property
    def label_name(self) -> str:
        return f"experimental.{self.operation}"

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        kernels.check_number_image(self.label_name, sample, TYPES)

    def element(
        self, mask_size: tuple[int, ...], anchor: tuple[int, ...]
    ) -> tuple[tuple[int, int], tuple[int, int]]:
        """The checked ``(width, height)`` of the element and its anchor ``(x, y)``."""
        name = self.label_name
        mw, mh = _pair(mask_size, name, "mask_size")
        if mw == -1 or mh == -1:
            mw = mh = 3
        if mw < 1 or mh < 1:
            raise ValueError(f"{name}: mask_size must be positive (or -1), got {(mw, mh)}")
        ax, ay = _pair(anchor, name, "anchor")
        ax = mw // 2 if ax < 0 else ax
        ay = mh // 2 if ay < 0 else ay
        if ax >= mw or ay >= mh:
            raise ValueError(
                f"{name}: the anchor {(ax, ay)} must lie within the mask {(mw, mh)} (width, height)"
            )
        return (mw, mh), (ax, ay)

    def neutral(self, dtype: np.dtype) -> float:
        if dtype.kind == "f":
            return -np.inf if self.operation == "dilate" else np.inf
        info = np.iinfo(dtype)
        return float(info.min if self.operation == "dilate" else info.max)

    def cpu(
        self,
        sample: np.ndarray,
        *,
        layout: str,
        mask_size: tuple[int, ...],
        anchor: tuple[int, ...],
        iterations: int,
        border_mode: str,
        **_: Any,
    ) -> np.ndarray:
        cv2 = self.cv2
        name = self.label_name
        (mw, mh), (ax, ay) = self.element(mask_size, anchor)
        planes, shape = planes_of(name, sample, layout)
        if sample.size == 0:
            return sample.copy()
        element = np.ones((mh, mw), np.uint8)
        fill = self.neutral(sample.dtype)
        out = np.empty_like(planes)
        channels = planes.shape[-1]
        groups = [slice(c, min(c + 4, channels)) for c in range(0, channels, 4)]
        for p, plane in enumerate(planes):
            for group in groups:
                img = np.ascontiguousarray(plane[..., group])
                for _step in range(iterations):  # (not _: the kernels take **_)
                    if border_mode == "constant":
                        img = self.apply(
                            img,
                            element,
                            anchor=(ax, ay),
                            borderType=cv2.BORDER_CONSTANT,
                            borderValue=[fill] * 4,
                        )
                    elif border_mode != "wrap":
                        # OpenCV's own border: what padding, filtering and cutting gives, in
                        # one pass instead of three copies
                        img = self.apply(
                            img, element, anchor=(ax, ay), borderType=self.borders[border_mode]
                        )
                    else:  # OpenCV's morphology has no BORDER_WRAP: pad, filter, cut
                        padded = cv2.copyMakeBorder(
                            img, ay, mh - ay - 1, ax, mw - ax - 1, self.borders[border_mode]
                        )
                        res = self.apply(padded, element, anchor=(ax, ay))
                        img = np.ascontiguousarray(
                            res[ay : ay + plane.shape[0], ax : ax + plane.shape[1]]
                        )
                out[p, ..., group] = img.reshape(plane.shape[0], plane.shape[1], -1)
        return out.reshape(shape)

    def gpu(
        self,
        sample: Any,
        *,
        layout: str,
        mask_size: tuple[int, ...],
        anchor: tuple[int, ...],
        iterations: int,
        border_mode: str,
        **_: Any,
    ) -> Any:
        """The CPU kernel's function on ``sample``'s array module: per iteration, the border
        and a running maximum (minimum) of shifted slices along W, then along H (see the
        module docstring)."""
        (mw, mh), (ax, ay) = self.element(mask_size, anchor)
        planes, shape = planes_of(self.label_name, sample, layout)
        if sample.size == 0:
            return sample.copy()
        xp = backend.array_module(sample)
        fill = self.neutral(sample.dtype)
        if sample.dtype.kind != "f":
            fill = int(fill)
        reduce = xp.maximum if self.operation == "dilate" else xp.minimum
        _, h, w, _ = planes.shape
        img = planes
        for _step in range(iterations):  # (not _: the kernels take **_)
            for axis, size, taps, before in ((2, w, mw, ax), (1, h, mh, ay)):
                if taps == 1:
                    continue
                padded = border_take(img, axis, before, taps - before - 1, border_mode, fill, xp)
                windows = _window_slices(axis, size, taps, padded.ndim)
                img = padded[windows[0]]
                for window in windows[1:]:
                    img = reduce(img, padded[window])
        if img is planes:  # a 1x1 element: a copy, never the input itself
            img = planes.copy()
        return xp.ascontiguousarray(img).reshape(shape)


class Dilate(Morphology):
    operation = "dilate"


class Erode(Morphology):
    operation = "erode"


_MORPHOLOGY_ARGS = [
    Arg(
        "mask_size",
        "size of the rectangular structuring element, (width, height) or one for both",
        (3, 3),
        to_ints(low=-1),
        per_sample=True,
    ),
    Arg(
        "anchor",
        "the element's anchor, (x, y) or one for both (-1: the centre)",
        (-1, -1),
        to_ints(low=-1),
        per_sample=True,
    ),
    Arg("iterations", "how many times to apply the operation", 1, to_int(1, 1 << 16)),
    Arg(
        "border_mode",
        "how pixels outside the image are read (constant: the neutral value)",
        "constant",
        one_of(*BORDER_MODES),
    ),
]

register(
    OperatorSchema(
        name="experimental.median_blur",
        class_name="experimental.MedianBlur",
        impl=MedianBlur,
        accepts=[IMAGES],
        output_kinds=keeps_kind,
        devices=("cpu", "gpu"),
        doc=(
            "Replaces each pixel, channel by channel, with the median of the window around it, "
            "as DALI's ``fn.experimental.median_blur`` (GPU only in DALI). ``window_size`` is "
            "(width, height) or one value for both, odd, per sample; the border repeats the "
            "edge pixel. Layouts HW, HWC, CHW, FHWC, FCHW; types uint8, uint16, int16, float32."
        ),
        args=[
            Arg(
                "window_size",
                "the window's (width, height), odd, or one value for both",
                (3, 3),
                to_ints(low=1),
                per_sample=True,
            )
        ],
    )
)

for _cls, _name, _what in ((Dilate, "dilate", "maximum"), (Erode, "erode", "minimum")):
    register(
        OperatorSchema(
            name=f"experimental.{_name}",
            class_name=f"experimental.{_name.capitalize()}",
            impl=_cls,
            accepts=[IMAGES],
            output_kinds=keeps_kind,
            devices=("cpu", "gpu"),
            doc=(
                f"Morphological {_name}: each pixel becomes the {_what} of a rectangle of "
                f"``mask_size`` (width, height) placed at ``anchor`` (x, y; -1: the centre), "
                f"``iterations`` times, as DALI's ``fn.experimental.{_name}`` (GPU only in "
                f"DALI). ``border_mode``: constant (neutral: the border never wins), replicate, "
                f"reflect, reflect_101, wrap. Layouts HW, HWC, CHW, FHWC, FCHW; types uint8, "
                f"uint16, int16, float32."
            ),
            args=_MORPHOLOGY_ARGS,
        )
    )
