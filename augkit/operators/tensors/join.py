"""``fn.stack`` and ``fn.cat``: join the samples of several inputs, sample by sample, along a new
axis (stack) or an existing one (cat).

Decisions and traps (DALI 2.4, measured on its CPU backend):

- Every input must have one type and one number of dimensions; stack needs equal shapes, cat
  equal extents except along ``axis``. One input is allowed (stack then adds an axis of
  extent 1).
- ``stack``: ``axis`` in ``[-ndim, ndim]`` (``ndim``: the inputs' rank; ``axis=ndim``
  interleaves the values). Without ``axis_name`` the output has no layout; with it, the name is
  inserted into the input's layout at ``axis`` (``HW``, axis 1, ``"C"`` -> ``HCW``), which
  needs an input with a layout.
- ``cat``: ``axis`` in ``[-ndim, ndim - 1]``, or ``axis_name`` (a letter of the layout; not
  both). The layout is the first non-empty layout among the inputs (DALI does not check that
  the others match unless ``axis_name`` is given).

Speed: joining along an axis whose rows are short (HWC images along C: 3 + 3 bytes a pixel),
``np.concatenate`` copies element by element (650 µs for two 320x320x3 uint8 images); there
``cat`` moves the bytes with ``cv2.merge`` (as 4/2/1-byte words, so any type; 120 µs, ~3x
DALI's CPU ``cat``), up to 64 bytes per output row, where NumPy's block copies catch up.
``stack`` is NumPy's (block copies; bound by the memory traffic).

GPU (``device="gpu"``, issue 18): the kernels take the samples' array module
(``backend.array_module``: CuPy): ``stack`` is ``xp.stack`` (``gpu = cpu``), ``cat`` is
``xp.concatenate`` without OpenCV (the checks and the axis are worked out from the shapes on
the host). Both copy bytes unchanged, so the GPU's outputs equal the CPU's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from augkit import backend
from augkit.operators.layouts import exclusive
from augkit.operators.registry import Arg, OperatorSchema, described, register, to_int, to_str
from augkit.operators.tensors.shape import TensorOperator, axis_index
from augkit.tensors import TensorList


@described("one letter")
def _letter(value: Any) -> str:
    value = to_str(value)
    if len(value) != 1:
        raise ValueError(f"expected one letter, got {value!r}")
    return value


def _check_same(samples: Sequence[Any]) -> None:
    first = samples[0]
    for k, s in enumerate(samples[1:], 1):
        if s.dtype != first.dtype or s.ndim != first.ndim:
            raise ValueError(
                f"all inputs must have one type and number of dimensions: input 0 is "
                f"{first.dtype} {first.ndim}-D, input {k} is {s.dtype} {s.ndim}-D"
            )


class _Join(TensorOperator):
    def input_layout(self, inputs: Sequence[TensorList]) -> str:
        return next((x.layout() for x in inputs if x.layout()), "")

    def batch_args(self, inputs: Sequence[TensorList]) -> dict[str, Any]:
        return {"layout": self.input_layout(inputs)}


class Stack(_Join):
    def cpu(self, *samples: Any, axis: int, axis_name: str | None, layout: str, **_: Any) -> Any:
        _check_same(samples)
        ndim = samples[0].ndim
        if not -ndim <= axis <= ndim:
            raise ValueError(f"axis {axis} is out of range [{-ndim}, {ndim}] for {ndim}-D inputs")
        shapes = {s.shape for s in samples}
        if len(shapes) > 1:
            raise ValueError(
                f"stacking needs inputs of one shape, got shapes {[s.shape for s in samples]}"
            )
        if axis_name is not None and ndim and len(layout) != ndim:
            raise ValueError("axis_name needs inputs with a layout (or scalar inputs)")
        return backend.array_module(samples[0]).stack(samples, axis=axis)

    gpu = cpu

    def out_layout(self, in_layout: str, in_ndim: int, out_ndim: int, args: dict) -> str:
        name = args["axis_name"]
        if name is None or len(in_layout) != in_ndim:
            return ""
        axis = args["axis"] % out_ndim
        return in_layout[:axis] + name + in_layout[axis:]


class Cat(_Join):
    cv2: Any = None

    def setup(self) -> None:
        self.cv2 = backend.opencv()

    def axis(self, ndim: int, layout: str, args: dict) -> int:
        if args["axis_name"] is not None:
            if args["axis_name"] not in layout:
                raise ValueError(
                    f'axis_name "{args["axis_name"]}" is not an axis of the layout "{layout}"'
                )
            return layout.index(args["axis_name"])
        return axis_index(args["axis"], ndim)

    def cpu(self, *samples: Any, layout: str, **args: Any) -> Any:
        return self._cat(samples, layout, self.cv2, **args)

    def gpu(self, *samples: Any, layout: str, **args: Any) -> Any:
        """``xp.concatenate`` on the samples' device (no OpenCV)."""
        return self._cat(samples, layout, None, **args)

    def _cat(self, samples: Sequence[Any], layout: str, cv2: Any, **args: Any) -> Any:
        _check_same(samples)
        ndim = samples[0].ndim
        if ndim == 0:
            raise ValueError("cat needs inputs with at least one dimension")
        axis = self.axis(ndim, layout, args)
        for k, s in enumerate(samples[1:], 1):
            for d in range(ndim):
                if d != axis and s.shape[d] != samples[0].shape[d]:
                    raise ValueError(
                        f"inputs may differ in extent only along the concatenation axis "
                        f"({axis}): input 0 has shape {samples[0].shape}, input {k} "
                        f"{s.shape}"
                    )
        if cv2 is not None and len(samples) > 1:
            out = _merge(cv2, samples, axis)
            if out is not None:
                return out
        return backend.array_module(samples[0]).concatenate(samples, axis=axis)

    def out_layout(self, in_layout: str, in_ndim: int, out_ndim: int, args: dict) -> str:
        return in_layout


# Element types OpenCV copies channel by channel (cv2.mixChannels, through cv2.merge): the
# bytes of each run are moved as elements of this size, whatever the input type is (not int64:
# cv2 takes an int64 array as int32, values cut).
_CV_WORDS = (np.dtype(np.int32), np.dtype(np.uint16), np.dtype(np.uint8))
_CV_CN_MAX = 512  # OpenCV's most channels per element


def _merge(cv2: Any, samples: Sequence[np.ndarray], axis: int) -> np.ndarray | None:
    """``np.concatenate(samples, axis)`` as ``cv2.merge``, where the contiguous runs that each
    input brings to an output row (its extent along ``axis`` times the inner extent) are short,
    as channels (HWC joined along C): NumPy copies those element by element (6x slower). Bytes
    are moved unchanged (as 4/2/1-byte words), so any type works; ``None`` where it does not
    apply (rows of over 64 bytes: NumPy is as fast there, measured)."""
    first = samples[0]
    outer = math.prod(first.shape[:axis])
    runs = [math.prod(s.shape[axis:]) * s.itemsize for s in samples]
    if outer < 2 or not all(runs) or sum(runs) > 64 or outer > 2**31 - 1:
        return None
    word = next(w for w in _CV_WORDS if all(r % w.itemsize == 0 for r in runs))
    counts = [r // word.itemsize for r in runs]
    if sum(counts) > _CV_CN_MAX:
        return None
    parts = [
        np.ascontiguousarray(s).reshape(-1).view(word).reshape(outer, 1, k)
        for s, k in zip(samples, counts, strict=True)
    ]
    merged = cv2.merge(parts)
    shape = list(first.shape)
    shape[axis] = sum(s.shape[axis] for s in samples)
    return merged.reshape(-1).view(first.dtype).reshape(shape)


register(
    OperatorSchema(
        name="stack",
        class_name="Stack",
        devices=("cpu", "gpu"),
        impl=Stack,
        min_inputs=1,
        max_inputs=None,
        doc=(
            "Joins the inputs' samples (one shape and type) along a new axis ``axis``; "
            "``axis_name`` names it in the layout (else the output has none)."
        ),
        args=[
            Arg("axis", "where the new axis goes, in [-ndim, ndim]", 0, to_int()),
            Arg("axis_name", "the new axis's layout letter", None, _letter),
        ],
    )
)

register(
    OperatorSchema(
        name="cat",
        class_name="Cat",
        devices=("cpu", "gpu"),
        impl=Cat,
        min_inputs=1,
        max_inputs=None,
        validate=exclusive("axis", "axis_name", "axis and axis_name cannot be used together"),
        doc=(
            "Concatenates the inputs' samples along an existing axis, ``axis`` or the layout "
            "letter ``axis_name``; the extents must match along the other axes."
        ),
        args=[
            Arg("axis", "the axis to join along, in [-ndim, ndim - 1]", 0, to_int()),
            Arg("axis_name", "the layout letter of the axis to join along", None, _letter),
        ],
    )
)
