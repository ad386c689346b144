"""What the filter operators share: which axes of a sample are data axes (DALI's rules), the
per-axis arguments, and a separable correlation in float32 written on OpenCV.

DALI facts (``dali/operators/image/convolution/gaussian_blur.cc``, ``ParseAndValidateDim``;
``dali/kernels/imgproc/convolution/convolution_cpu.h``):

- An input **without a layout** has no channel axis: every dimension is a data axis (at most 3),
  so an unlabelled HWC array is blurred across its channels too, as a volume. Give it a layout
  (``fn.external_source(..., layout="HWC")``) to blur each channel on its own.
- With a layout, a trailing ``C`` is the channel axis; up to two leading ``C``/``F`` axes
  (``CHW``, ``FHWC``, ``FCHW``) are planes processed one by one; what remains (1 to 3 axes) are
  the data axes. A ``C`` or ``F`` anywhere else is refused.
- The separable convolution goes from the innermost data axis to the outermost (W, then H, then
  D), with a float32 intermediate (float64 for float64 inputs: ``float * double``), borders
  reflected without repeating the edge (reflect 101: ``dcb|abcd|cba``; an axis of length 1
  repeats its one value), and the result converted to the output type with ``ConvertSat``.
- The windows are correlated, not flipped (the windows here are all symmetric or, for the
  Laplacian, symmetric too: nothing depends on it).

OpenCV's ``sepFilter2D`` does the two innermost axes (row pass, then column pass, in float);
its border rule ``BORDER_REFLECT_101`` is DALI's. It sums symmetric windows in another order
than DALI's loop, so float32 results can differ in the last bit, and an integer output by one
level where a value lands next to an exact half.

The GPU kernels (``separable_xp``, ``correlate_axis``, ``to_output`` with ``xp``) are written
once against the array module (NumPy or CuPy): the reflect-101 border is one ``xp.take`` with
indices computed on the host, each tap a multiply-add of a shifted slice, summed in window
order (DALI's); the windows stay on the host.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.operators import layouts
from augkit.operators.base import SampleOperator
from augkit.operators.color.cast import convert_sat
from augkit.operators.registry import Arg, InputSpec, kind_policy

_COLOR = kind_policy("color")
FILTER_HINTS = {
    **{
        k: f"filters change the pixel values of images; {k} must not be filtered"
        for k in ("mask", "boxes", "keypoints", "polygons", "vertices")
    },
    "labels": _COLOR["labels"],
    "encoded": _COLOR["encoded"],
}
IMAGE_OR_VOLUME = InputSpec(
    "an image or volume (HW, HWC, CHW, DHWC, FHWC, ...; 1 to 3 data axes)",
    kinds=("image",),
    min_ndim=1,
    hints=FILTER_HINTS,
)

# The dtypes OpenCV filters take as they are; others are converted to float32 first.
_CV_TYPES = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.int16), np.dtype(np.float32))


NUMBER_TYPES = layouts.NUMBER_TYPES  # what gaussian_blur takes


def data_axes(operator: str, layout: str, ndim: int, max_axes: int = 3) -> tuple[int, int, bool]:
    """DALI's reading of a sample's layout for convolutions: ``(leading, axes, has_channels)``:
    how many leading C/F axes to treat as separate planes, how many data axes follow, and
    whether the last axis is channels.

    Raises:
        ValueError: a layout DALI refuses (C in the middle, F after the data axes, too many
            data axes), naming ``operator``.
    """
    if not layout:
        if not 1 <= ndim <= max_axes:
            raise ValueError(
                f"{operator}: an input without a layout is taken as {max_axes} data axes at "
                f"most (no channels), got {ndim} dimensions; give it a layout such as HWC"
            )
        return 0, ndim, False
    if len(layout) != ndim:
        raise ValueError(
            f'{operator}: the layout "{layout}" does not fit a sample with {ndim} dimensions'
        )
    has_channels = layout.endswith("C")
    rest = layout[:-1] if has_channels else layout
    leading = 0
    while leading < len(rest) and rest[leading] in "CF":
        leading += 1
    inner = rest[leading:]
    if "C" in inner or (has_channels and "C" in rest[:leading]):
        raise ValueError(
            f'{operator}: only channel-first or channel-last layouts are supported, got "{layout}"'
        )
    if "F" in inner:
        raise ValueError(
            f"{operator}: for sequences the layout must begin with 'F' or 'CF', got \"{layout}\""
        )
    if leading > 2:
        raise ValueError(f'{operator}: more than one leading F or C axis in layout "{layout}"')
    if not 1 <= len(inner) <= max_axes:
        raise ValueError(
            f'{operator}: the layout "{layout}" has {len(inner)} data axes; this operator '
            f"takes 1 to {max_axes}"
        )
    return leading, len(inner), has_channels


def per_axis(values: Sequence[Any], axes: int, operator: str, name: str) -> tuple[Any, ...]:
    """One value per data axis: ``values`` of length 1 (repeated) or ``axes``."""
    values = tuple(values)
    if len(values) == 1:
        return values * axes
    if len(values) != axes:
        raise ValueError(
            f"{operator}: argument '{name}' takes 1 or {axes} values (one per data axis) for "
            f"this input, got {len(values)}"
        )
    return values


def working_type(dtype: np.dtype) -> np.dtype:
    """The type the correlation sums in: float64 for float64 inputs, float32 otherwise."""
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


def _reflect101(index: np.ndarray, size: int) -> np.ndarray:
    """Indices reflected into ``[0, size)`` without repeating the edge (any distance)."""
    if size == 1:
        return np.zeros_like(index)
    period = 2 * size - 2
    index = np.mod(index, period)
    return np.where(index < size, index, period - index)


def correlate_axis(x: Any, window: np.ndarray, axis: int, xp: Any = np) -> Any:
    """Correlation of ``x`` (an array of ``xp``: NumPy or CuPy) along ``axis`` with ``window``
    (a host array of x's float type), reflect-101 borders, summed in window order as DALI
    sums: the border is one gather (``xp.take`` with reflected indices computed on the host,
    so any window reflects as many times as it needs), then one multiply-add of a shifted
    slice per tap."""
    size = x.shape[axis]
    radius = (len(window) - 1) // 2
    taps = _reflect101(np.arange(-radius, size + radius), size)
    padded = xp.take(x, xp.asarray(taps), axis=axis)
    out = xp.zeros(x.shape, x.dtype)
    index = [slice(None)] * x.ndim
    for k, weight in enumerate(window):
        index[axis] = slice(k, k + size)
        out += padded[tuple(index)] * weight  # the array first: CuPy's operator
    return out


def separable_xp(sample: Any, windows: Sequence[np.ndarray], leading: int, xp: Any) -> Any:
    """``separable`` without OpenCV, on ``sample``'s array module ``xp`` (the GPU kernel):
    ``sample`` in the working type, correlated along each data axis (``leading`` onwards,
    innermost first) by ``correlate_axis``. The windows stay host arrays; their taps enter
    the multiplications as NumPy scalars. Sums in window order (DALI's), so float32 results
    can differ from ``separable``'s (OpenCV's order) in the last bit."""
    work = working_type(sample.dtype)
    values = sample.astype(work)
    for axis in reversed(range(len(windows))):
        values = correlate_axis(values, np.asarray(windows[axis], work), leading + axis, xp)
    return values


def separable(
    cv2: Any,
    sample: np.ndarray,
    windows: Sequence[np.ndarray],
    leading: int,
    has_channels: bool,
) -> np.ndarray:
    """``sample`` correlated along each data axis with ``windows`` (outermost first, float32
    or float64), innermost first, with reflect-101 borders. Returns the working type
    (``working_type``), same shape."""
    work = working_type(sample.dtype)
    windows = [np.asarray(w, work) for w in windows]
    axes = len(windows)
    source = sample if sample.dtype in (*_CV_TYPES, np.float64) else sample.astype(np.float32)
    shape = sample.shape
    planes_shape = (
        int(np.prod(shape[:leading], dtype=np.int64)),
        *shape[leading : leading + axes],
        shape[-1] if has_channels else 1,
    )
    planes = source.reshape(planes_shape)
    out = np.empty(planes_shape, work)
    ddepth = cv2.CV_64F if work == np.float64 else cv2.CV_32F
    one = np.ones(1, work)
    channels = planes_shape[-1]
    chunks = [slice(c, min(c + 512, channels)) for c in range(0, channels, 512)]
    for p in range(planes_shape[0]):
        plane = planes[p]
        if axes == 1:
            # A row of length N: an image of height 1, the column window [1].
            for chunk in chunks:
                row = np.ascontiguousarray(plane[None, :, chunk])
                res = cv2.sepFilter2D(
                    row, ddepth, windows[0], one, borderType=cv2.BORDER_REFLECT_101
                )
                out[p, :, chunk] = res.reshape(plane.shape[0], -1)
            continue
        if axes == 3:
            depth = plane.shape[0]
            for d in range(depth):
                for chunk in chunks:
                    img = np.ascontiguousarray(plane[d][..., chunk])
                    res = cv2.sepFilter2D(
                        img, ddepth, windows[2], windows[1], borderType=cv2.BORDER_REFLECT_101
                    )
                    out[p, d][..., chunk] = res.reshape(img.shape)
            out[p] = correlate_axis(out[p], windows[0], axis=0)
            continue
        for chunk in chunks:
            img = np.ascontiguousarray(plane[..., chunk])
            res = cv2.sepFilter2D(
                img, ddepth, windows[1], windows[0], borderType=cv2.BORDER_REFLECT_101
            )
            out[p][..., chunk] = res.reshape(img.shape)
    return out.reshape(shape)


def to_output(values: Any, dtype: np.dtype, xp: Any = np) -> Any:
    """The float result (an array of ``xp``) as ``dtype``: DALI's ConvertSat (halves away from
    zero, saturated), without NumPy's warnings for values beyond the type (they saturate)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return convert_sat(values, np.dtype(dtype), xp)


def check_number_image(operator: str, sample: Any, dtypes: Sequence[np.dtype]) -> None:
    """Raise ValueError unless ``sample`` is a non-empty array of one of ``dtypes``."""
    layouts.check_type(f"{operator} takes samples", sample.dtype, dtypes)


# The ``dtype`` argument of the filters that convert (gaussian_blur, laplacian, filter): a type
# of numbers here, the input's own or types.FLOAT once the input is known (``output_type``).
to_output_dtype = layouts.number_dtype(
    "types.FLOAT (default: the input type)",
    "the output is numbers: types.FLOAT or the input type, not {name}",
)
DTYPE_ARG = Arg(
    "dtype", "output type: types.FLOAT (default: the input type)", None, to_output_dtype
)


def output_type(operator: str, in_dtype: np.dtype, dtype: Any) -> np.dtype:
    """The output type of a filter for an input of ``in_dtype``: the ``dtype`` argument (a
    ``types`` value, None: the input's), which must be the input's or float32.

    Example:
        >>> output_type("gaussian_blur", np.dtype(np.uint8), None)
        dtype('uint8')
    """
    out_dtype = in_dtype if dtype is None else np.dtype(dtype.numpy)
    if out_dtype not in (in_dtype, np.dtype(np.float32)):
        raise ValueError(
            f"{operator}: dtype must be types.FLOAT or the input type "
            f"({in_dtype.name}), got {out_dtype.name}"
        )
    return out_dtype


class FilterOperator(SampleOperator):
    """What the filters share: OpenCV, got at build (``setup``), and the input's layout given
    to every kernel call (``layout``); ``check_input`` refuses types outside ``types`` with
    ``operator_name`` in the message (subclasses that check more override it)."""

    operator_name = ""
    types: tuple[np.dtype, ...] = NUMBER_TYPES

    def setup(self) -> None:
        self.cv2 = backend.opencv()

    def batch_args(self, inputs: Sequence[Any]) -> dict[str, Any]:
        return {"layout": inputs[0].layout()}

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        check_number_image(self.operator_name, sample, self.types)
