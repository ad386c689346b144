"""``fn.filter``: correlates each image with its own 2-D filter (the second input), as DALI's CPU
operator does it: with OpenCV's ``filter2D``.

DALI facts (``dali/operators/image/convolution/filter.cc``; checked against DALI 2.4's output):

- It is a **correlation**, not a convolution: the filter is not flipped. With the filter of
  shape ``(r, s)`` and ``anchor`` ``(a, b)``, ``out[y, x] = sum_ij f[i, j] * in[y - a + i, x - b
  + j]``. The anchor defaults to ``(-1, -1)``: the middle, ``r // 2`` and ``s // 2`` (an even
  filter leans up-left); one value is used for both axes; it must lie in ``[-1, extent)``.
- ``border``: "reflect_101" (default, ``dcb|abcd|cba``), "reflect_1001" (``cba|abcd|dcb``),
  "wrap", "clamp" (edge repeated), "constant" (``fill_value``, the optional third input: one
  scalar per sample; 0 when not given; ignored for the other borders). DALI pads for "wrap" and
  for a non-zero constant and filters the padded image; augkit does the same, then crops.
- ``mode="valid"``: only the positions where the whole filter lies inside: the output shrinks by
  ``extent - 1`` per axis (anchor ignored); a filter larger than the image is an error.
- Types (CPU, as DALI's): uint8, int16, uint16, float32 data; float32 filters. ``dtype`` is the
  input type (default) or FLOAT; integer outputs are OpenCV's (round half to even, saturate),
  which is what DALI's CPU gives.
- Layouts: 2 data axes (HW, HWC, CHW, FHWC, FCHW...: leading C/F axes are planes filtered one by
  one, a trailing C is channels, at most 512). An input without a layout is HW (2-D) or
  HWC (3-D).

Speed: the work is cv2.filter2D, the kernel DALI's CPU operator calls too (~140 us for a
320x320 RGB image and a 3x3 filter on one thread, whatever the layout or output type: it is
bound by OpenCV's filtering loop). Around it, each plane is filtered straight into the output
(``dst=``: no fresh result and copy), and a dense batch in "same" mode (the usual source) goes
to the batch kernel, which writes every sample (the per-sample kernel, with its checks and
errors) into one preallocated batch array: fresh per-sample outputs cost page faults (~80 us
per 300 KB image with the batch alive). In the pipeline (interleaved A/B, one thread): 270 ->
257 us an image. Same-run paired ratios vs DALI (benchmarks/operators.py, one thread, a busy
machine): 0.87x before, 1.04-1.37x after; DALI calls the same filter2D: expect about 1x.

Differences from DALI (augkit takes more than DALI's CPU operator, never less): float64 data
(filtered by OpenCV in float64); filters of any numeric type (converted to float32), a 1-D
filter being one row, a scalar a 1x1 filter, an (r, s, 1) array an r x s filter; a fill value
of any real type (converted to the input type with ConvertSat; DALI demands the input's type);
a 3-D input without a layout is taken as HWC (DALI takes it as a volume, which its CPU operator
refuses).

GPU (``device="gpu"``; DALI has ``fn.filter`` on the CPU and the GPU): ``Filter.gpu`` computes
the CPU kernel's function by its definition, on the array module of the sample
(``backend.array_module``: NumPy or CuPy), without OpenCV: the planes in the working type
(float32; float64 for float64 images), the border as one ``xp.take`` per axis with indices made
on the host (``morphology.border_take``; "constant": ``xp.pad`` with the fill value converted
as on the CPU), then one multiply-add of a shifted slice per non-zero filter tap (OpenCV skips
zero taps too), in row-major tap order. The filter and the fill value are per-sample host
values (``backend.to_cpu``: a GPU pipeline moves every input to the device). Integer outputs
are rounded as OpenCV rounds (half to even, ``xp.rint``), then saturated. OpenCV sums in
another order (and through a DFT for filters of 130 taps or more), so the GPU result differs
from the CPU's in the float32 rounding: a level of an integer output where a sum lands next to
a half, float outputs by a few float32 ulps of the values (tests/operators/
test_gpu_distortions.py holds the bounds).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from augkit import backend, types
from augkit.calls import SampleCall
from augkit.operators.base import RunContext, dense_batch
from augkit.operators.color.cast import convert_sat
from augkit.operators.filters import kernels
from augkit.operators.filters.morphology import border_take
from augkit.operators.registry import (
    Arg,
    InputSpec,
    OperatorSchema,
    keeps_kind,
    one_of,
    register,
    to_ints,
)
from augkit.tensors import TensorList

NAME = "filter"
TYPES = tuple(np.dtype(t) for t in (np.uint8, np.int16, np.uint16, np.float32, np.float64))
BORDERS = ("reflect_101", "reflect_1001", "wrap", "clamp", "constant")
IMAGE_2D = InputSpec(
    "images (HW, HWC, CHW, or sequences of them: FHWC, FCHW)",
    kinds=("image",),
    min_ndim=2,
    hints=kernels.FILTER_HINTS,
)


def resolve_anchor(anchor: tuple[int, ...], shape: tuple[int, int]) -> tuple[int, int]:
    """The anchor ``(row, column)`` of a filter of ``shape``: -1 is the middle (rounded down).

    Example:
        >>> resolve_anchor((-1,), (4, 5))
        (2, 2)
    """
    anchor = kernels.per_axis(anchor, 2, NAME, "anchor")
    for value, extent in zip(anchor, shape, strict=True):
        if not -1 <= value < extent:
            raise ValueError(
                f"{NAME}: the anchor must lie within the filter: got anchor {tuple(anchor)} "
                f"with a filter of shape {tuple(shape)}"
            )
    row, column = (extent // 2 if a < 0 else a for a, extent in zip(anchor, shape, strict=True))
    return row, column


# fn.filter's borders as morphology.border_take names them.
_BORDER_MODES = {
    "reflect_101": "reflect_101",
    "reflect_1001": "reflect",
    "wrap": "wrap",
    "clamp": "replicate",
    "constant": "constant",
}


@dataclass(frozen=True)
class _Plan:
    """What both kernels work out from a sample's arguments (host values): the float32 2-D
    filter, its anchor (row, column), the output's type, shape and (H, W), the plane shape
    and the fill value in the input's type."""

    kernel: np.ndarray
    anchor: tuple[int, int]
    out_dtype: np.dtype
    out_shape: tuple[int, ...]
    out_hw: tuple[int, int]
    height: int
    width: int
    channels: int
    has_channels: bool
    fill_value: float

    @staticmethod
    def of(
        sample: Any,
        kernel: Any,
        fill: Any,
        layout: str,
        anchor: tuple[int, ...],
        border: str,
        mode: str,
        dtype: types.DALIDataType | None,
    ) -> _Plan:
        if not layout and sample.ndim == 3:
            layout = "HWC"  # augkit's reading of an unlabelled 3-D image (DALI refuses it)
        leading, axes, has_channels = kernels.data_axes(NAME, layout, sample.ndim)
        if axes != 2:
            raise ValueError(
                f"{NAME}: the CPU filter takes 2 spatial dimensions, got {axes}"
                + (" (give images with channels the layout HWC or CHW)" if axes == 3 else "")
            )
        out_dtype = kernels.output_type(NAME, sample.dtype, dtype)
        kernel = np.asarray(kernel, np.float32)
        kernel = kernel.reshape((1,) * (2 - kernel.ndim) + kernel.shape[:2])
        ay, ax = resolve_anchor(anchor, kernel.shape)
        fh, fw = kernel.shape
        shape = sample.shape
        channels = shape[-1] if has_channels else 1
        if channels > 512:
            raise ValueError(f"{NAME}: the CPU filter takes 1 to 512 channels, got {channels}")
        height, width = shape[leading], shape[leading + 1]
        if mode == "valid":
            if fh > height or fw > width:
                raise ValueError(
                    f'{NAME}: in "valid" mode the filter ({fh}x{fw}) must fit in the image '
                    f"({height}x{width})"
                )
            out_hw = (height - fh + 1, width - fw + 1)
        else:
            out_hw = (height, width)
        out_shape = (*shape[:leading], *out_hw, *shape[leading + 2 :])
        fill_value = 0
        if border == "constant" and fill is not None:
            with np.errstate(over="ignore", invalid="ignore"):
                fill_value = convert_sat(np.asarray(fill).reshape(()), sample.dtype, np).item()
        return _Plan(
            kernel,
            (ay, ax),
            np.dtype(out_dtype),
            out_shape,
            out_hw,
            height,
            width,
            channels,
            has_channels,
            fill_value,
        )


class Filter(kernels.FilterOperator):
    """cv2.filter2D per plane, with DALI's border handling."""

    def setup(self) -> None:
        self.cv2 = backend.opencv()
        cv2 = self.cv2
        self.simple_borders = {
            "reflect_101": cv2.BORDER_REFLECT_101,
            "reflect_1001": cv2.BORDER_REFLECT,
            "clamp": cv2.BORDER_REPLICATE,
        }

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        if index == 0:
            kernels.check_number_image(NAME, sample, TYPES)
        elif index == 1:
            if sample.dtype.kind not in "biuf":
                raise ValueError(f"{NAME}: the filter must be numbers, got {sample.dtype.name}")
            if (sample.ndim > 2 and sample.shape[2:] != (1,)) or 0 in sample.shape:
                raise ValueError(
                    f"{NAME}: the filter must be a non-empty 2-D array, got shape "
                    f"{tuple(sample.shape)}"
                )
        elif sample.size != 1 or sample.dtype.kind not in "biuf":
            raise ValueError(
                f"{NAME}: fill_value must be one number per sample, got an array of shape "
                f"{tuple(sample.shape)} and type {sample.dtype.name}"
            )

    def cpu(
        self,
        sample: np.ndarray,
        kernel: np.ndarray,
        fill: np.ndarray | None = None,
        *,
        layout: str,
        anchor: tuple[int, ...],
        border: str,
        mode: str,
        dtype: types.DALIDataType | None,
        out: np.ndarray | None = None,
        **_: Any,
    ) -> np.ndarray:
        """The filtered sample; into ``out`` (a contiguous array of the output's shape and
        type) when the batch kernel gives one."""
        cv2 = self.cv2
        plan = _Plan.of(sample, kernel, fill, layout, anchor, border, mode, dtype)
        kernel, out_dtype, out_shape, out_hw = (
            plan.kernel,
            plan.out_dtype,
            plan.out_shape,
            plan.out_hw,
        )
        (ay, ax), (fh, fw) = plan.anchor, kernel.shape
        height, width, channels = plan.height, plan.width, plan.channels
        has_channels, fill_value = plan.has_channels, plan.fill_value
        if sample.size == 0:
            return np.empty(out_shape, out_dtype)
        ddepth = -1 if out_dtype == sample.dtype else cv2.CV_32F
        planes = sample.reshape(-1, height, width, channels)
        if out is None:
            out = np.empty(out_shape, out_dtype)
        result = out
        out = out.reshape((planes.shape[0], *out_hw, channels))
        for p, plane in enumerate(planes):
            plane = np.ascontiguousarray(plane)
            if mode == "valid":
                res = cv2.filter2D(plane, ddepth, kernel, anchor=(ax, ay))
                res = res[ay : ay + out_hw[0], ax : ax + out_hw[1]]
            elif border in self.simple_borders or (border == "constant" and fill_value == 0):
                code = self.simple_borders.get(border, cv2.BORDER_CONSTANT)
                # Straight into the output (no copy of a fresh result).
                target = out[p] if has_channels else out[p].reshape(out_hw)
                res = cv2.filter2D(
                    plane, ddepth, kernel, dst=target, anchor=(ax, ay), borderType=code
                )
                if res is target:
                    continue
            else:
                code = cv2.BORDER_WRAP if border == "wrap" else cv2.BORDER_CONSTANT
                padded = cv2.copyMakeBorder(
                    plane, ay, fh - ay - 1, ax, fw - ax - 1, code, value=[fill_value] * 4
                )
                res = cv2.filter2D(padded, ddepth, kernel, anchor=(ax, ay))
                res = res[ay : ay + height, ax : ax + width]
            out[p] = res.reshape(*out_hw, channels)
        return result

    def gpu(
        self,
        sample: Any,
        kernel: Any,
        fill: Any = None,
        *,
        layout: str,
        anchor: tuple[int, ...],
        border: str,
        mode: str,
        dtype: types.DALIDataType | None,
        out: Any = None,
        **_: Any,
    ) -> Any:
        """The CPU kernel's correlation on ``sample``'s array module, without OpenCV: the
        border by ``take``/``pad``, one multiply-add of a shifted slice per filter tap (see the
        module docstring). The filter and fill value are read on the host."""
        xp = backend.array_module(sample)
        kernel = backend.to_cpu(kernel)
        fill = None if fill is None else backend.to_cpu(fill)
        plan = _Plan.of(sample, kernel, fill, layout, anchor, border, mode, dtype)
        if sample.size == 0:
            return xp.empty(plan.out_shape, plan.out_dtype)
        work = kernels.working_type(sample.dtype)
        weights = plan.kernel.astype(work)
        (ay, ax), (fh, fw) = plan.anchor, weights.shape
        oh, ow = plan.out_hw
        values = sample.reshape(-1, plan.height, plan.width, plan.channels).astype(work)
        if mode == "same":
            code = _BORDER_MODES[border]
            fill_value = plan.fill_value
            values = border_take(values, 2, ax, fw - ax - 1, code, fill_value, xp)
            values = border_take(values, 1, ay, fh - ay - 1, code, fill_value, xp)
        result = xp.zeros((values.shape[0], oh, ow, plan.channels), work)
        for i in range(fh):
            for j in range(fw):
                if weights[i, j] != 0:  # OpenCV leaves zero taps out too
                    result += values[:, i : i + oh, j : j + ow] * weights[i, j]
        if plan.out_dtype.kind == "f":
            result = result.astype(plan.out_dtype)
        else:  # OpenCV's saturate_cast: round half to even, saturate
            info = np.iinfo(plan.out_dtype)
            result = xp.clip(xp.rint(result), info.min, info.max).astype(plan.out_dtype)
        result = result.reshape(plan.out_shape)
        if out is not None:
            out[...] = result
            return out
        return result

    def cpu_batch(
        self, ctx: RunContext, inputs: Sequence[TensorList], arg_inputs: dict[str, TensorList]
    ) -> list[TensorList] | None:
        """A dense batch in "same" mode (the output has the batch's shape): the per-sample
        kernel, each sample written into one preallocated output (a fresh result per sample
        and its copy cost about 15% of the filtering); the same values, and the same errors."""
        x = dense_batch(inputs)
        if x is None or not isinstance(x, np.ndarray) or self.args.get("mode") != "same":
            return None
        if x.dtype not in TYPES or x.ndim < 3 or len(x) == 0 or x[0].size == 0:
            return None
        dtype = self.args.get("dtype")
        out_dtype = x.dtype if dtype is None else np.dtype(dtype.numpy)
        if out_dtype not in (x.dtype, np.dtype(np.float32)):
            return None  # the per-sample kernel names the error
        out = np.empty(x.shape, out_dtype)
        call = SampleCall.of(self, ctx, inputs, arg_inputs)
        ctx.map(lambda i: call.write(i, [batch.samples[i] for batch in inputs], out[i]), len(x))
        return [self.dense_output(out, inputs)]


register(
    OperatorSchema(
        name=NAME,
        class_name="Filter",
        impl=Filter,
        devices=("cpu", "gpu"),
        min_inputs=2,
        max_inputs=3,
        accepts=[IMAGE_2D, None, None],
        output_kinds=keeps_kind,
        doc=(
            "Correlates each image with its own 2-D float32 filter, the second input (one per "
            "sample), as DALI's ``fn.filter``: ``out[y, x] = sum f[i, j] * in[y - a + i, x - b + "
            "j]`` for the anchor ``(a, b)`` (default: the filter's middle). It is a correlation: "
            "the filter is not flipped. ``border`` handles the positions outside the image "
            '("reflect_101", "reflect_1001", "wrap", "clamp", "constant" with the optional third '
            'input fill_value, 0 by default); ``mode="valid"`` keeps only the positions where '
            "the filter lies inside (the output shrinks). Types: uint8, int16, uint16, float32, "
            "float64; "
            "``dtype`` is the input type or FLOAT. Leading C/F axes (CHW, FHWC) are filtered "
            "plane by plane."
        ),
        args=[
            Arg(
                "anchor",
                "the filter's position over the input, (row, column) or one for both "
                "(-1: the middle)",
                (-1,),
                to_ints(low=-1),
                per_sample=True,
            ),
            Arg(
                "border",
                "how positions outside the image are read",
                "reflect_101",
                one_of(*BORDERS),
            ),
            Arg(
                "mode",
                '"same" (output size = input size) or "valid"',
                "same",
                one_of("same", "valid"),
            ),
            kernels.DTYPE_ARG,
        ],
    )
)
