"""``fn.transforms.*``: DALI's affine transform matrices (``rotation``, ``scale``, ``shear``,
``translation``, ``crop``, ``combine``), for ``fn.warp_affine`` and coordinate transforms.

Each operator makes one float32 matrix of shape (ndim, ndim + 1) per sample (the last column
is the translation: ``y = M[:, :ndim] @ x + M[:, ndim]``); none reads an image.

Decisions and traps, checked against DALI 2.4 by running it (``transform_*.cc``):

- The output layout is "**", as DALI 2.4 gives it.
- Chaining: given an input matrix (one per sample), the new transform is combined with it:
  ``T @ input`` (the input is applied first) by default, ``input @ T`` with
  ``reverse_order=True``; ``fn.transforms.combine(T1, T2, T3)`` is ``T3 @ T2 @ T1`` (reversed:
  ``T1 @ T2 @ T3``). The products are computed in float32 on 3x3 (or (n+1)x(n+1))
  homogeneous matrices, as in DALI; an input of another size than (n, n + 1) is an error (DALI
  takes only float32 there; any real dtype is taken here).
- The number of dimensions comes from the arguments: ``rotation`` is 2-D unless ``axis`` is
  given (3-D, Rodrigues' formula about the normalised axis; a zero axis gives NaN, as in DALI);
  ``translation`` from the length of ``offset`` (a scalar is 1-D: with a 2-D input that is an
  error, as in DALI); ``shear`` from ``shear``/``angles`` (2 values: 2-D, 6: 3-D; exactly one of
  them); ``crop`` from its longest argument (single values are broadcast); ``scale`` from
  ``scale`` when it has several values, else from the input matrix, else from ``ndim``, else 1
  (DALI's odd order: with an input, ``ndim`` is ignored). A ``center`` given as one number is
  broadcast; otherwise it must have ndim values.
- Angles are degrees, converted in float32 (``angle * float32(pi / 180)``) and turned by
  float32 ``cos``/``sin``/``tan``; a positive 2-D rotation is ``[[cos, -sin], [sin, cos]]``
  (counter-clockwise in y-up axes, clockwise on screen when applied to image coordinates).
  With a ``center`` c: ``T(c) @ R @ T(-c)``. Shear angles are ``tan`` of the angle (90
  degrees: a huge factor, not an error, as in DALI).
- ``crop`` maps ``from_start``/``from_end`` onto ``to_start``/``to_end``: scale
  ``(to_end - to_start) / (from_end - from_start)``, then offset ``to_start - from_start *
  scale``; an empty source range gives inf, as in DALI. ``absolute=True`` swaps a start and an
  end where the start is larger.
- augkit supports 1 to 6 dimensions for scale/translation/crop/combine and 2 or 3 for rotation
  and shear, as DALI does; sequences (per-frame arguments) are not supported.
"""

from __future__ import annotations

from typing import Any, overload

import numpy as np

from augkit.operators.base import SampleOperator
from augkit.operators.registry import (
    REQUIRED,
    Arg,
    InputSpec,
    OperatorSchema,
    OutputSpec,
    fixed_kinds,
    register,
    to_bool,
    to_float,
    to_floats,
    to_int,
)

_MAX_NDIM = 6
_F32 = np.float32
_DEG = _F32(np.pi / 180)

MATRIX = InputSpec("affine matrices of shape (ndim, ndim + 1), one per sample", ndims=(2,))
# DALI 2.4 gives its transform matrices the layout "**" (seen by running it).
LAYOUT = "**"
_OUTPUT = fixed_kinds(OutputSpec(ndim=2, layout=LAYOUT, what="affine transform matrices"))


def _input_matrix(sample: Any) -> np.ndarray:
    """An input transform as a float32 (n, n + 1) array.

    Raises:
        ValueError: it is not one.
    """
    array = np.asarray(sample)
    if (
        array.ndim != 2
        or array.dtype.kind not in "fiu"
        or array.shape[0] < 1
        or array.shape[1] != array.shape[0] + 1
    ):
        raise ValueError(
            f"The input, if provided, is expected to be a 2D float tensor with dimensions "
            f"(ndim, ndim+1) representing an affine transform. Got: shape "
            f"{tuple(array.shape)}, type {array.dtype}"
        )
    with np.errstate(over="ignore"):  # beyond float32's range: inf, as DALI's float input
        return array.astype(_F32)


def homogeneous(matrix: np.ndarray) -> np.ndarray:
    """An (n, n + 1) affine matrix as the (n + 1, n + 1) float32 matrix with a last row of
    ``(0, ..., 0, 1)``."""
    n = matrix.shape[0]
    out = np.eye(n + 1, dtype=_F32)
    out[:n] = matrix
    return out


def combine(first: np.ndarray, then: np.ndarray) -> np.ndarray:
    """The transform that applies ``first`` and then ``then`` (both (n, n + 1)): ``then @
    first`` on homogeneous float32 matrices, as DALI multiplies them."""
    return (homogeneous(then) @ homogeneous(first))[:-1].astype(_F32)


@overload
def _vector(values: tuple[float, ...], ndim: int, name: str) -> np.ndarray: ...
@overload
def _vector(values: None, ndim: int, name: str) -> None: ...
@overload
def _vector(values: tuple[float, ...] | None, ndim: int, name: str) -> np.ndarray | None: ...
def _vector(values: tuple[float, ...] | None, ndim: int, name: str) -> np.ndarray | None:
    """A per-dimension argument: ``ndim`` values, or one broadcast to ``ndim``."""
    if values is None:
        return None
    if len(values) == 1:
        return np.full(ndim, values[0], _F32)
    if len(values) != ndim:
        raise ValueError(f"argument '{name}' must have {ndim} values (or 1), got {len(values)}")
    return np.asarray(values, _F32)


def _about_center(linear: np.ndarray, center: np.ndarray | None) -> np.ndarray:
    """``[linear | t]`` with ``t = c - linear @ c`` (the transform about ``center``), float32."""
    ndim = linear.shape[0]
    out = np.zeros((ndim, ndim + 1), _F32)
    out[:, :ndim] = linear
    if center is not None:
        out[:, ndim] = linear @ -center + center
    return out


def rotation_2d(angle: float) -> np.ndarray:
    a = _F32(angle) * _DEG
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s], [s, c]], _F32)


def rotation_3d(axis: np.ndarray, angle: float) -> np.ndarray:
    """Rotation by ``angle`` degrees about ``axis`` (normalised here), float32."""
    a = _F32(angle) * _DEG
    with np.errstate(invalid="ignore", divide="ignore"):
        u = (axis / np.sqrt(np.sum(axis * axis, dtype=_F32))).astype(_F32)
    c, s = np.cos(a), np.sin(a)
    x, y, z = u
    t = _F32(1) - c
    return np.array(
        [
            [c + x * x * t, x * y * t - z * s, x * z * t + y * s],
            [y * x * t + z * s, c + y * y * t, y * z * t - x * s],
            [z * x * t - y * s, z * y * t + x * s, c + z * z * t],
        ],
        _F32,
    )


class TransformImpl(SampleOperator):
    """One transform operator: ``make(ndim_of_input, **args)`` gives the operator's own
    matrix; the kernel chains it with the input matrix, if any."""

    def make(self, in_ndim: int | None, *args: Any, **kwargs: Any) -> np.ndarray:
        """The operator's own matrix from its arguments, which each subclass takes by keyword
        (``*args: Any, **kwargs: Any``: any signature overrides this one)."""
        raise NotImplementedError

    def output_layout(self, index: int, inputs: Any) -> str:
        return LAYOUT

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        _input_matrix(sample)

    def cpu(self, *inputs: np.ndarray, reverse_order: bool = False, **args: Any) -> np.ndarray:
        # float32 arithmetic, as DALI's: values beyond its range give inf or NaN, quietly
        with np.errstate(all="ignore"):
            return self._chain(inputs, reverse_order, args)

    def _chain(self, inputs: Any, reverse_order: bool, args: dict[str, Any]) -> np.ndarray:
        given = _input_matrix(inputs[0]) if inputs else None
        in_ndim = None if given is None else given.shape[0]
        own = self.make(in_ndim, **args)
        if given is None:
            return own
        if own.shape != given.shape:
            raise ValueError(
                f"The input describes a {in_ndim}D transform but other arguments suggest a "
                f"{own.shape[0]}D transform"
            )
        return combine(own, given) if reverse_order else combine(given, own)


class RotationImpl(TransformImpl):
    def make(
        self,
        in_ndim: int | None,
        *,
        angle: float,
        axis: tuple[float, ...] | None,
        center: tuple[float, ...] | None,
        **_: Any,
    ) -> np.ndarray:
        if axis is None:
            return _about_center(rotation_2d(angle), _vector(center, 2, "center"))
        return _about_center(
            rotation_3d(_vector(axis, 3, "axis"), angle), _vector(center, 3, "center")
        )


class ScaleImpl(TransformImpl):
    def make(
        self,
        in_ndim: int | None,
        *,
        scale: tuple[float, ...],
        center: tuple[float, ...] | None,
        ndim: int | None,
        **_: Any,
    ) -> np.ndarray:
        n = len(scale) if len(scale) > 1 else in_ndim or ndim or 1
        if n > _MAX_NDIM:
            raise ValueError(f"at most {_MAX_NDIM} dimensions are supported, got {n}")
        factors = _vector(scale, n, "scale")
        return _about_center(np.diag(factors).astype(_F32), _vector(center, n, "center"))


def _shear_ndim(count: int, name: str) -> int:
    for ndim in (2, 3):
        if count == ndim * (ndim - 1):
            return ndim
    raise ValueError(
        f"Shear matrix must have D*(D-1) elements where D is the number of dimensions (2 or "
        f"3). Got {count} elements in '{name}'."
    )


class ShearImpl(TransformImpl):
    def make(
        self,
        in_ndim: int | None,
        *,
        shear: tuple[float, ...] | None,
        angles: tuple[float, ...] | None,
        center: tuple[float, ...] | None,
        **_: Any,
    ) -> np.ndarray:
        if (shear is None) == (angles is None):
            raise ValueError(
                "One and only one of the following arguments is expected: ``shear`` or ``angles``"
            )
        if shear is not None:
            factors = np.asarray(shear, _F32)
            n = _shear_ndim(len(factors), "shear")
        else:
            assert angles is not None  # one of shear and angles (checked above)
            n = _shear_ndim(len(angles), "angles")
            factors = np.tan(np.asarray(angles, _F32) * _DEG)
        linear = np.eye(n, dtype=_F32)
        off_diagonal = [(i, j) for i in range(n) for j in range(n) if i != j]
        for (i, j), value in zip(off_diagonal, factors, strict=True):
            linear[i, j] = value
        return _about_center(linear, _vector(center, n, "center"))


class TranslationImpl(TransformImpl):
    def make(self, in_ndim: int | None, *, offset: tuple[float, ...], **_: Any) -> np.ndarray:
        n = len(offset)
        if n > _MAX_NDIM:
            raise ValueError(f"at most {_MAX_NDIM} dimensions are supported, got {n}")
        out = np.zeros((n, n + 1), _F32)
        out[:, :n] = np.eye(n, dtype=_F32)
        out[:, n] = offset
        return out


class CropImpl(TransformImpl):
    def make(
        self,
        in_ndim: int | None,
        *,
        from_start: tuple[float, ...],
        from_end: tuple[float, ...],
        to_start: tuple[float, ...],
        to_end: tuple[float, ...],
        absolute: bool,
        **_: Any,
    ) -> np.ndarray:
        given = {
            "from_start": from_start,
            "from_end": from_end,
            "to_start": to_start,
            "to_end": to_end,
        }
        sizes = {len(v) for v in given.values()}
        n = max(sizes)
        if not sizes <= {1, n}:
            raise ValueError(
                "Arguments ``from_start``, ``from_end``, ``to_start`` and ``to_end`` should "
                "have the same number of dimensions or be a single element which will be "
                "broadcast to all dimensions"
            )
        if n > _MAX_NDIM:
            raise ValueError(f"at most {_MAX_NDIM} dimensions are supported, got {n}")
        f0, f1, t0, t1 = (_vector(v, n, k) for k, v in given.items())
        if absolute:
            f0, f1 = np.minimum(f0, f1), np.maximum(f0, f1)
            t0, t1 = np.minimum(t0, t1), np.maximum(t0, t1)
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = (t1 - t0) / (f1 - f0)
            shift = t0 - f0 * scale
        out = np.zeros((n, n + 1), _F32)
        out[:, :n] = np.diag(scale)
        out[:, n] = shift
        return out


class CombineImpl(SampleOperator):
    def output_layout(self, index: int, inputs: Any) -> str:
        return LAYOUT

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        _input_matrix(sample)

    def cpu(self, *inputs: np.ndarray, reverse_order: bool = False, **_: Any) -> np.ndarray:
        with np.errstate(all="ignore"):  # float32, as DALI's: inf or NaN, quietly
            return self._combine(inputs, reverse_order)

    def _combine(self, inputs: Any, reverse_order: bool) -> np.ndarray:
        matrices = [_input_matrix(m) for m in inputs]
        for k, m in enumerate(matrices[1:], start=1):
            if m.shape != matrices[0].shape:
                raise ValueError(
                    f"All input transforms are expected to have the same shape. Got: "
                    f"{matrices[0].shape} and {m.shape} for the {k}-th input."
                )
        order = matrices[::-1] if reverse_order else matrices
        out = order[0]
        for m in order[1:]:
            out = combine(out, m)
        return out


# --- the schemas -----------------------------------------------------------------------------

_REVERSE = Arg(
    "reverse_order",
    "combine as input @ T (the input transform applied last) instead of T @ input",
    False,
    to_bool,
)
_CENTER = Arg(
    "center", "the centre of the transform (ndim values, or one for all)", None, to_floats(), True
)

_CHAINING = """
Given an input matrix (one per sample, e.g. another ``fn.transforms`` output), the result is
this transform applied after it (``reverse_order=True``: before it)."""


def _register(name: str, impl: type, doc: str, args: list[Arg]) -> None:
    register(
        OperatorSchema(
            name=f"transforms.{name}",
            class_name=f"transforms.{name.capitalize()}",
            impl=impl,
            doc=doc + _CHAINING,
            args=[*args, _REVERSE],
            min_inputs=0,
            max_inputs=1,
            accepts=[MATRIX],
            output_kinds=_OUTPUT,
        )
    )


_register(
    "rotation",
    RotationImpl,
    """A rotation matrix (2x3 float32; 3x4 about ``axis``), as DALI's
``fn.transforms.rotation``: ``angle`` degrees, ``[[cos, -sin], [sin, cos]]``, about ``center``
(default: the origin).

Example, in a pipeline definition::

    mt = fn.transforms.rotation(angle=fn.random.uniform(range=(-30, 30)), center=(160, 120))
    images = fn.warp_affine(images, matrix=mt, inverse_map=False, fill_value=0)
""",
    [
        Arg("angle", "degrees", REQUIRED, to_float(), True),
        Arg("axis", "3-D only: the rotation axis (3 values)", None, to_floats(), True),
        _CENTER,
    ],
)
_register(
    "scale",
    ScaleImpl,
    """A scaling matrix, as DALI's ``fn.transforms.scale``: one factor per dimension (or one
for all, with ``ndim`` or an input matrix), about ``center`` (default: the origin).""",
    [
        Arg("scale", "the factors, one per dimension", REQUIRED, to_floats(), True),
        _CENTER,
        Arg("ndim", "the number of dimensions, for a single factor", None, to_int(1, _MAX_NDIM)),
    ],
)
_register(
    "shear",
    ShearImpl,
    """A shear matrix, as DALI's ``fn.transforms.shear``: ``shear`` factors (2-D:
``(shear_x, shear_y)``; 3-D: ``xy, xz, yx, yz, zx, zy``) or ``angles`` in degrees (the factor is
their tangent), about ``center``.""",
    [
        Arg("shear", "the shear factors (2 or 6 values)", None, to_floats(), True),
        Arg("angles", "the shear angles in degrees (2 or 6 values)", None, to_floats(), True),
        _CENTER,
    ],
)
_register(
    "translation",
    TranslationImpl,
    """A translation matrix, as DALI's ``fn.transforms.translation``: ``offset`` (one value per
dimension).""",
    [Arg("offset", "the translation vector", REQUIRED, to_floats(), True)],
)
_register(
    "crop",
    CropImpl,
    """A matrix mapping one box onto another, as DALI's ``fn.transforms.crop``: ``from_start``
goes to ``to_start`` and ``from_end`` to ``to_end`` (single values are broadcast), e.g. to
bring coordinates into a crop window.""",
    [
        Arg("from_start", "lower bound of the source space", (0.0,), to_floats(), True),
        Arg("from_end", "upper bound of the source space", (1.0,), to_floats(), True),
        Arg("to_start", "lower bound of the destination space", (0.0,), to_floats(), True),
        Arg("to_end", "upper bound of the destination space", (1.0,), to_floats(), True),
        Arg("absolute", "swap a start and an end where the start is larger", False, to_bool),
    ],
)

register(
    OperatorSchema(
        name="transforms.combine",
        class_name="transforms.Combine",
        impl=CombineImpl,
        doc="""Combine two or more affine matrices, as DALI's ``fn.transforms.combine``:
``combine(T1, T2, T3)`` applies T1, then T2, then T3 (``T3 @ T2 @ T1``); with
``reverse_order=True``, T3 first (``T1 @ T2 @ T3``).""",
        args=[_REVERSE],
        min_inputs=2,
        max_inputs=99,
        accepts=[MATRIX] * 99,
        output_kinds=_OUTPUT,
    )
)
