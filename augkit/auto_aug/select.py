"""DALI 2.4's ``select`` (``nvidia.dali.auto_aug.core._select``): run, for each sample, the op of
a list that a per-sample index picks, as if by ``ops[index](*args, **kwargs)``; and the
per-sample choice the policies (``auto_augment``, ``rand_augment``, ``trivial_augment``) are
built on.

    >>> import numpy as np
    >>> from augkit import fn, pipeline_def
    >>> from augkit.auto_aug import augmentations as a
    >>> from augkit.auto_aug.core import select
    >>> @pipeline_def(batch_size=4, num_threads=1, device_id=None, enable_conditionals=True)
    ... def pipe():
    ...     images = fn.external_source(
    ...         source=lambda: [np.zeros((2, 2, 3), np.uint8)] * 4, batch=True, layout="HWC"
    ...     )
    ...     idx = fn.external_source(source=lambda: [np.int32(k) for k in (0, 1, 1, 0)], batch=True)
    ...     return select([a.invert, a.identity], idx, images)
    >>> (out,) = pipe().run()
    >>> [int(out.at(i)[0, 0, 0]) for i in range(4)]  # invert, identity, identity, invert
    [255, 0, 0, 255]

Decisions and traps:

- DALI writes the choice as a binary tree of ``if idx <= mid`` (AutoGraph turns each into a
  split of the batch); augkit makes one n-way choice, ``augkit.conditionals.select``: each
  branch is defined once, on the samples whose index is its position, and the results are
  merged back in the batch's order. The outputs are the same; the graph has one split and one
  merge instead of ``len(ops) - 1`` of each. An ``int`` index runs ``ops[index]`` alone, and a
  single op is called directly, without a choice (DALI's recursion stops there too, so neither
  needs ``enable_conditionals``).
- A per-sample choice needs the pipeline's conditionals: without ``enable_conditionals=True``
  it is an ``ArgumentError`` carrying the TypeError text DALI's ``DataNode.__bool__`` raises
  at the first ``if`` (pointing at ``@augkit.pipeline_def``), prefixed with the call that needed
  it.
- Every DataNode made before the choice that an op reads (the data, ``shape``, the parts of a
  ``signed_bin(...)``: the bin, the sign and the signed index) is split to the branch's samples
  by the conditionals, as DALI's AutoGraph does. So the per-sample draws (the sign, the bin)
  are made once, before the choice, and a sample draws the same whatever branch it takes.
- ``Augmentation`` ops take the keywords their op accepts (DALI's augmentations drop the
  others, since the same keywords go to every op); a keyword that none of the ops takes is an
  ``UnusedArgException``, as DALI's policies check (its bare ``select`` does not).
- The choice is labelled for ``Pipeline.draws`` and the viewer: ``select`` with the ops' names
  for the public function; the policies name theirs (``rand_augment[0]``...).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from augkit.auto_aug._augmentation import (
    Augmentation,
    MissingArgException,
    accepted_kwargs,
    forbid_unused_kwargs,
)
from augkit.errors import ArgumentError, suggest
from augkit.graph import DataNode

__all__ = ["select"]

# The keywords of Augmentation.__call__ itself (the others go to the op).
_CALL_KEYWORDS = ("data", "magnitude_bin", "num_magnitude_bins")

# DALI 2.4's DataNode.__bool__ text (nvidia/dali/data_node.py), with augkit's decorator.
_NO_CONDITIONALS = (
    '"DataNode" was used in conditional context - it might have been used in truth evaluation '
    "for `if` statement, logical expression or cast to a boolean. To use conditional execution "
    "via `if` statements you need to specify `enable_conditionals=True` in "
    "`@augkit.pipeline_def` decorator. You can read more about conditional execution in specific "
    "section of the Pipeline documentation. Bool conversion can be achieved with the `cast` "
    "operator."
)


def require_conditionals(call_name: str) -> None:
    """Refuse a per-sample choice in a pipeline defined without ``enable_conditionals=True``.

    Raises:
        ArgumentError: naming ``call_name``, with DALI's message.
    """
    from augkit import conditionals  # the layer above the graph; imported when first needed

    if not conditionals.enabled():
        raise ArgumentError(
            f"`{call_name}` chooses an augmentation per sample, which needs conditional "
            f"execution: {_NO_CONDITIONALS}"
        )


def _name(op: Callable[..., Any]) -> str:
    if isinstance(op, Augmentation):
        return op.name
    return getattr(op, "__name__", type(op).__name__)


def _call(op: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``op(*args, **kwargs)``; an ``Augmentation`` gets only the keywords its op takes."""
    if isinstance(op, Augmentation):
        own = {k: v for k, v in kwargs.items() if k in _CALL_KEYWORDS}
        extra = {k: v for k, v in kwargs.items() if k not in _CALL_KEYWORDS}
        kwargs = {**own, **accepted_kwargs(op, extra)}
    return op(*args, **kwargs)


class _Branch:
    """One op as a branch of the choice (a callable named after the op)."""

    def __init__(self, op: Callable[..., Any]) -> None:
        self.op = op
        self.__name__ = _name(op)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _call(self.op, args, kwargs)


def choose(
    ops: Sequence[Callable[..., Any]],
    index: DataNode | int,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    call_name: str,
    label: str,
    names: Sequence[str] | None = None,
) -> Any:
    """``ops[index](*args, **kwargs)`` per sample, as one labelled choice (what ``select`` and
    the policies call). ``names`` default to the ops' names."""
    if _int_like(index):
        if not 0 <= index < len(ops):
            raise ArgumentError(
                f"{call_name}: the index must be in [0, {len(ops) - 1}], got {index}"
            )
        return _call(ops[int(index)], args, kwargs)
    if len(ops) == 1:
        return _call(ops[0], args, kwargs)
    require_conditionals(call_name)
    from augkit import conditionals

    names = list(names) if names is not None else [_name(op) for op in ops]
    return conditionals.select(
        [_Branch(op) for op in ops], index, args=args, kwargs=kwargs, label=label, names=names
    )


def _int_like(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def select(
    ops: Sequence[Callable[..., Any]], selected_op_idx: DataNode | int, *op_args: Any, **op_kwargs
) -> Any:
    """Applies, to each sample, the op of ``ops`` its index picks, as if by
    ``ops[selected_op_idx](*op_args, **op_kwargs)`` (DALI's ``select``).

    Args:
        ops: the ops (usually ``Augmentation`` objects; any callables of DataNodes).
        selected_op_idx: a DataNode of per-sample ints in ``[0, len(ops) - 1]`` (or a Python
            ``int``: that op for every sample).
        op_args: positional arguments of the ops; each op gets the samples of the DataNodes
            among them (and of any other node made before the choice) that chose it.
        op_kwargs: keyword arguments of the ops, split the same way (a ``signed_bin(...)`` as
            ``magnitude_bin`` too); an ``Augmentation`` gets those its op takes.

    Returns:
        The ops' results merged back in the batch's order (each op must return the same
        structure: a DataNode, or a tuple or list of them).

    Raises:
        ArgumentError: ``ops`` empty or not callables, an index that is neither an int nor a
            DataNode, an ``int`` index out of range, or a per-sample index in a pipeline without
            ``enable_conditionals=True``. ``UnusedArgException``: a keyword no augmentation of
            ``ops`` takes. ``MissingArgException``: an augmentation that needs a keyword that
            was not given.

    Example:
        >>> import inspect
        >>> list(inspect.signature(select).parameters)
        ['ops', 'selected_op_idx', 'op_args', 'op_kwargs']
    """
    if isinstance(ops, (str, bytes)) or not isinstance(ops, Sequence) or len(ops) == 0:
        raise ArgumentError(f"select: `ops` must be a non-empty list of ops, got {ops!r}")
    for op in ops:
        if not callable(op):
            raise ArgumentError(f"select: every op must be callable, got {op!r}")
    if not (_int_like(selected_op_idx) or isinstance(selected_op_idx, DataNode)):
        raise ArgumentError(
            f"select: `selected_op_idx` must be a DataNode of per-sample ints in "
            f"[0, {len(ops) - 1}] (or an int), got {selected_op_idx!r}"
        )
    augs = [op for op in ops if isinstance(op, Augmentation)]
    if len(augs) == len(ops):
        extra = {k: v for k, v in op_kwargs.items() if k not in _CALL_KEYWORDS}
        forbid_unused_kwargs(augs, extra, "select")
    return choose(ops, selected_op_idx, op_args, op_kwargs, call_name="select", label="select")


def check_missing_kwargs(
    augmentations: Sequence[Augmentation],
    kwargs: dict[str, Any],
    call_name: str,
    ref_suite_name: str,
) -> None:
    """Refuse, before anything is built, an augmentation that needs a keyword the call does
    not give: for the shape-relative translations DALI's hint (pass ``shape``, or use the
    ``_no_shape`` ones), otherwise the ``MissingArgException`` the augmentation would raise.

    Raises:
        MissingArgException: naming the augmentation and the argument.
    """
    from augkit.auto_aug import augmentations as a
    from augkit.auto_aug._augmentation import _extra_params

    for aug in augmentations:
        missing = [
            p.name
            for p in _extra_params(aug.op)
            if p.default is inspect.Parameter.empty and p.name not in kwargs
        ]
        if not missing:
            continue
        if missing == ["shape"] and aug.op in (a.translate_x.op, a.translate_y.op):
            message = (
                f"The augmentation `{aug.name}` requires `shape` argument that describes image "
                f"shape (in HWC layout). Please provide it as `shape` argument to "
                f"`{call_name}` call. You can get the image shape from encoded images with "
                f"`fn.peek_image_shape`. Alternatively, you can use "
                f"`translate_x_no_shape`/`translate_y_no_shape` that does not rely on image "
                f"shape, but uses offset from fixed range: for reference see "
                f"`{ref_suite_name}` and its `use_shape` argument. "
            )
        else:
            message = (
                f"The augmentation `{aug.name}` requires following named argument(s) which were "
                f"not provided to the call: {', '.join(missing)}. Please make sure to pass the "
                f"required arguments when calling the augmentation (give them to `{call_name}`)."
            )
        raise MissingArgException(message, augmentation=aug, missing_args=missing)


# --- the policies' shared plumbing -------------------------------------------------------------


def draw_seeds(seed: Any, count: int, call_name: str) -> list[int | None]:
    """One seed per random draw of a policy, derived from the user's ``seed``; ``None`` (the
    pipeline's seed) for each when ``seed`` is ``None`` or -1.

    DALI gives the same ``seed`` to each of its draws, which then come from one random stream
    (the operation index and the sign, or the coin and the sub-policy, are correlated); here
    each draw gets its own seed, ``random.operator_seed(seed, k)``.

    Raises:
        ArgumentError: a seed that is not an int.
    """
    if seed is None or (_int_like(seed) and seed == -1):
        return [None] * count
    if not _int_like(seed) or seed < 0:
        raise ArgumentError(
            f"{call_name}: `seed` must be a non-negative int (or None), got {seed!r}"
        )
    from augkit.random import operator_seed

    return [operator_seed(int(seed), k) for k in range(count)]


def _max_translate_hw(value: Any, arg: str) -> tuple[float, float]:
    """``(height, width)`` of a ``max_translate_*`` argument: a number, or a pair."""

    def ok(x: Any) -> bool:
        return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool)

    if isinstance(value, (tuple, list)) and len(value) == 2 and all(ok(x) for x in value):
        return value[0], value[1]
    if ok(value):
        return value, value
    raise ArgumentError(
        f"The argument `{arg}` must be a number or a (height, width) pair of numbers, "
        f"got {value!r}."
    )


def translations(
    use_shape: Any,
    default_translate_abs: float,
    default_translate_rel: float,
    max_translate_abs: Any = None,
    max_translate_rel: Any = None,
) -> list[Augmentation]:
    """``[translate_x, translate_y]`` for a suite (DALI's ``get_translations``): relative to
    each sample's shape (``translate_x``/``translate_y``, mag_range ``(0,
    max_translate_rel)``) with ``use_shape``, else by pixels (``translate_x_no_shape``/
    ``translate_y_no_shape``, ``(0, max_translate_abs)``); both negated at random. A pair
    limits ``(height, width)``: y takes the first, x the second.

    Raises:
        ArgumentError: ``use_shape`` not a bool, ``max_translate_abs`` with ``use_shape``,
            ``max_translate_rel`` without, or a limit that is not a number or a pair.
    """
    from augkit.auto_aug import augmentations as a

    if not isinstance(use_shape, bool):
        raise ArgumentError(
            f"The `use_shape` is a flag that should be set to either True or False, "
            f"got {use_shape}."
        )
    if use_shape:
        if max_translate_abs is not None:
            raise ArgumentError(
                "The argument `max_translate_abs` cannot be used with image shapes. "
                "You may use `max_translate_rel` instead."
            )
        limit, arg = (
            default_translate_rel if max_translate_rel is None else max_translate_rel,
            "max_translate_rel",
        )
        x_aug, y_aug = a.translate_x, a.translate_y
    else:
        if max_translate_rel is not None:
            raise ArgumentError(
                "The argument `max_translate_rel` cannot be used without image shapes. "
                "You may use `max_translate_abs` instead."
            )
        limit, arg = (
            default_translate_abs if max_translate_abs is None else max_translate_abs,
            "max_translate_abs",
        )
        x_aug, y_aug = a.translate_x_no_shape, a.translate_y_no_shape
    height, width = _max_translate_hw(limit, arg)
    return [x_aug.augmentation((0, width), True), y_aug.augmentation((0, height), True)]


def exclude(
    augmentations: Sequence[Augmentation], excluded: Any, suite_name: str
) -> list[Augmentation]:
    """The suite without the augmentations named in ``excluded``.

    Raises:
        ArgumentError: ``excluded`` is not a list of names, or names an augmentation the suite
            does not have (DALI's message, the suite's names in its order).
    """
    names = [aug.name for aug in augmentations]
    if excluded is None:
        excluded = []
    if isinstance(excluded, str) or not isinstance(excluded, (list, tuple, set, frozenset)):
        raise ArgumentError(
            f"The `excluded` must be a list of names of augmentations of the {suite_name} "
            f"suite, got {excluded!r}."
        )
    for name in excluded:
        if name not in names:
            raise ArgumentError(
                f"The `{name}` was specified in `excluded`, but the {suite_name} suite does not "
                f"contain augmentation with this name. The augmentations in the suite are: "
                f"{', '.join(names)}.{suggest(str(name), names)}"
            )
    return [aug for aug in augmentations if aug.name not in excluded]


def check_augmentations(augmentations: Any, call_name: str) -> list[Augmentation]:
    """``augmentations`` as a list, every one an ``Augmentation``.

    Raises:
        ArgumentError: not a list or tuple, or an element that is not an ``Augmentation``.
    """
    if not isinstance(augmentations, (list, tuple)):
        raise ArgumentError(
            f"{call_name}: `augmentations` must be a list of augmentations, got {augmentations!r}"
        )
    for aug in augmentations:
        if not isinstance(aug, Augmentation):
            raise ArgumentError(
                f"{call_name}: every element of `augmentations` must be an Augmentation (a "
                f"function decorated with `@augmentation`), got {aug!r}"
            )
    return list(augmentations)


def check_num_magnitude_bins(num_magnitude_bins: Any) -> None:
    """Raises ArgumentError (DALI's message) for a ``num_magnitude_bins`` that is not a
    positive int."""
    if not _int_like(num_magnitude_bins) or num_magnitude_bins < 1:
        raise ArgumentError(
            f"The `num_magnitude_bins` must be a positive integer, got {num_magnitude_bins}."
        )
