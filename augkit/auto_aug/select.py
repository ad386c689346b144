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

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from augkit.auto_aug._augmentation import (
    Augmentation,
    _int_like,
    accepted_kwargs,
    forbid_unused_kwargs,
)
from augkit.errors import ArgumentError
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
    index: DataNode | int | np.integer,
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
