"""DALI 2.4's ``nvidia.dali.auto_aug.core._augmentation``, what the automatic augmentation
policies are built from: the ``augmentation`` decorator, the ``Augmentation`` class it makes
and ``signed_bin`` (``augkit.auto_aug.core`` exports them with ``Policy`` and ``select``, as
DALI's ``core`` does): the same names, arguments, defaults and numbers, written anew on augkit's
operators.

An augmentation is a function ``op(data, parameter, **extra)`` of DataNodes. Decorated, it is
called with a *magnitude bin* instead of the parameter::

    >>> from augkit.auto_aug import augmentation
    >>> from augkit import fn
    >>> @augmentation(mag_range=(0, 30), randomly_negate=True)
    ... def my_rotate(data, angle, fill_value=128):
    ...     return fn.rotate(data, angle=angle, fill_value=fill_value, keep_size=True)
    >>> my_rotate.name, my_rotate.mag_range, my_rotate.randomly_negate
    ('my_rotate', (0, 30), True)

and the parameter is ``mag_to_param(magnitudes[magnitude_bin] * (-1) ** random_sign)`` with
``magnitudes = linspace(mag_range[0], mag_range[1], num_magnitude_bins)`` in float32 (or
``mag_range`` itself when it is an ``np.ndarray``). No ``mag_range``: the parameter is ``None``.

Decisions and traps (DALI's, kept):

- Every parameter is computed once, in NumPy, when the pipeline is defined: ``mag_to_param`` of
  each (signed) magnitude, stacked into a table (one shape and dtype for all, or an error).
  Each sample then picks its row by index: ``bin`` (not negated), ``2 * bin + sign`` for a
  negated one (the table interleaves ``m0, -m0, m1, -m1...``); for a Python ``int`` bin the
  table is that bin's row (not negated) or its two signed rows, indexed by the sign.
- The sign is DALI's ``fn.random.uniform(values=[0, 1], dtype=INT32)``: 0 keeps the magnitude,
  1 negates it, each with probability 1/2, drawn from the pipeline's seed like any random
  operator (so reproducible, and the same in debug mode). ``signed_bin(bin)`` draws it once
  before the augmentations, so that a policy choosing among several of them draws one sign per
  sample; calling a ``randomly_negate`` augmentation with an unsigned bin draws its own and
  warns, as DALI does.
- ``param_device``: "cpu" (default), "gpu" or "auto" (the data's device) for the parameter.
- ``aug.augmentation(mag_range=(0, 0.5))`` is a new augmentation of the same op with that
  setting changed; decorating an ``Augmentation`` again is an error (DALI's).

Differences from DALI:

- Errors are ``augkit.ArgumentError`` naming the augmentation and the argument (DALI raises
  plain ``Exception``); the missing-argument one is ``MissingArgException`` (an ArgumentError
  with DALI's ``augmentation`` and ``missing_args`` attributes).
- A magnitude bin out of ``[0, num_magnitude_bins)`` is an error when it is an ``int``, and in
  debug mode (where a DataNode holds its values) for a DataNode too. In a normal pipeline a
  per-sample bin is only known when it runs: an out-of-range one picks the parameter 0 (DALI
  fails in its indexing operator). DALI does not check ``int`` bins (NumPy indexing: -1 is
  the last bin).
- A keyword the op does not take is an error (DALI drops it silently, because its policies
  pass the same keywords to every augmentation; a policy here filters them with
  ``accepted_kwargs`` first, and ``forbid_unused_kwargs`` refuses one that no augmentation
  takes, as DALI's policies do).
- The per-sample pick of a table row is ``fn.lookup_table`` of the index, one per element of
  the parameter (then ``fn.stack`` and ``fn.reshape`` to the parameter's shape), where DALI
  writes ``Constant(table)[index]`` (DataNodes cannot be subscripted by DataNodes in augkit).
  Each lookup converts the table's column to its own dtype, so the
  values are exact. The table has ``types.Constant``'s types: float64 parameters (``[m, 0]``
  is a float64 list) become float32, 64-bit integers 32-bit ones.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeGuard

import numpy as np

from augkit import fn as _fn_module
from augkit import types
from augkit.errors import ArgumentError, suggest
from augkit.graph import DataNode, _value

__all__ = [
    "Augmentation",
    "MissingArgException",
    "UnusedArgException",
    "accepted_kwargs",
    "augmentation",
    "forbid_unused_kwargs",
    "signed_bin",
]

# augkit.fn's functions are made from the operator registry when it is imported (populate_fn):
# mypy cannot see them, so this module reads them through an Any.
fn: Any = _fn_module

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_DEVICES = ("cpu", "gpu", "auto")


class MissingArgException(ArgumentError):
    """An augmentation was called without a named argument its op requires (DALI's name).

    Attributes:
        augmentation: the ``Augmentation``.
        missing_args: the names of the arguments that were not given.
    """

    def __init__(self, message: str, augmentation: Augmentation, missing_args: list[str]):
        super().__init__(message)
        self.augmentation = augmentation
        self.missing_args = missing_args


class UnusedArgException(ArgumentError):
    """A policy was given keywords that none of its augmentations takes (DALI's name).

    Attributes:
        unused_args: the names of those keywords.
    """

    def __init__(self, message: str, unused_args: list[str]):
        super().__init__(message)
        self.unused_args = unused_args


class _Undefined:
    """Default of ``Augmentation.augmentation``'s arguments: "keep the current setting"
    (``None`` is a setting: back to the default)."""


def _extra_params(op: Callable[..., Any]) -> list[inspect.Parameter]:
    """The op's parameters after the data and the parameter: what ``**kwargs`` may fill."""
    params = list(inspect.signature(op).parameters.values())
    out, skipped = [], 0
    for param in params:
        if param.kind in _POSITIONAL and skipped < 2:
            skipped += 1
            continue
        if param.kind in _NAMED:
            out.append(param)
    return out


def _takes_any_kwargs(op: Callable[..., Any]) -> bool:
    return any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in inspect.signature(op).parameters.values()
    )


def accepted_kwargs(aug: Augmentation, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The keywords of ``kwargs`` that ``aug``'s op takes (DALI's
    ``filter_extra_accepted_kwargs``: what a policy passes on to each augmentation)."""
    if _takes_any_kwargs(aug.op):
        return dict(kwargs)
    names = {p.name for p in _extra_params(aug.op)}
    return {k: v for k, v in kwargs.items() if k in names}


def forbid_unused_kwargs(
    augmentations: Iterable[Augmentation], kwargs: dict[str, Any], call_name: str
) -> None:
    """Refuse the keywords that none of ``augmentations`` takes (DALI's policies' check).

    Raises:
        UnusedArgException: naming the call and the keywords.
    """
    augmentations = list(augmentations)
    used = {k for aug in augmentations for k in accepted_kwargs(aug, kwargs)}
    unused = [k for k in kwargs if k not in used]
    if unused:
        subject, verb = ("kwarg", "is") if len(unused) == 1 else ("kwargs", "are")
        raise UnusedArgException(
            f"The {call_name} got unexpected {subject}. The {subject} `{', '.join(unused)}` "
            f"{verb} not used by any of the augmentations.",
            unused_args=unused,
        )


def _int_like(value: Any) -> TypeGuard[int | np.integer]:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def _debug_values(node: DataNode) -> list[np.ndarray] | None:
    """The node's per-sample values in debug mode (None in a normal pipeline)."""
    if node.value is None:
        return None
    batch = node.value
    return [np.asarray(batch.at(i)) for i in range(len(batch))]


def _element(node: DataNode, idx: int) -> DataNode:
    """``node[idx]`` of each sample's 1-D value, as a scalar (DataNodes are not subscriptable
    in augkit)."""
    return fn.reshape(fn.slice(node, start=[idx], shape=[1], axes=[0]), shape=[])


class _SignedMagnitudeBin:
    """A magnitude bin with the sign of its magnitude (what ``signed_bin`` returns)."""

    def __init__(
        self, magnitude_bin: int | DataNode, random_sign: DataNode, signed_magnitude_idx: Any
    ) -> None:
        self._magnitude_bin = magnitude_bin
        self._random_sign = random_sign
        self._signed_magnitude_idx = signed_magnitude_idx

    def __getitem__(self, idx: int) -> _SignedMagnitudeBin:
        """The ``idx``-th signed bin of per-sample vectors of bins and signs (a sequence of
        augmentations applied to each sample, one sign drawn for all at once)."""
        if not _int_like(idx) or idx < 0:
            raise ArgumentError(f"signed_bin: the index must be a non-negative int, got {idx!r}")
        bin_ = self._magnitude_bin  # an int or a DataNode (signed_bin checks it)
        magnitude_bin = _element(bin_, idx) if isinstance(bin_, DataNode) else bin_
        return _SignedMagnitudeBin(
            magnitude_bin,
            _element(self._random_sign, idx),
            _element(self._signed_magnitude_idx, idx),
        )

    @property
    def bin(self) -> int | DataNode:
        return self._magnitude_bin

    @property
    def random_sign(self) -> DataNode:
        return self._random_sign

    @property
    def signed_magnitude_idx(self) -> Any:
        return self._signed_magnitude_idx

    def __repr__(self) -> str:
        return f"signed_bin({self._magnitude_bin!r}, random_sign={self._random_sign!r})"


def signed_bin(
    magnitude_bin: int | DataNode,
    random_sign: DataNode | None = None,
    seed: int | None = None,
    shape: Sequence[int] | None = None,
) -> _SignedMagnitudeBin:
    """``magnitude_bin`` together with the sign of its magnitude, for the augmentations declared
    with ``randomly_negate=True`` (0: the magnitude, 1: its negation).

    Args:
        magnitude_bin: an int, or a DataNode of per-sample ints, in ``[0, num_magnitude_bins)``.
        random_sign: a DataNode of per-sample 0/1 ints; by default drawn by
            ``fn.random.uniform(values=[0, 1], dtype=INT32, seed=seed, shape=shape)``.
        seed: the seed of that draw (default: from the pipeline's seed).
        shape: the shape of each sample's signs (one per augmentation of a sequence).

    Raises:
        ArgumentError: a bin that is neither an int nor a DataNode, or ``random_sign`` given
            with ``seed`` or ``shape``.
    """
    if not (_int_like(magnitude_bin) or isinstance(magnitude_bin, DataNode)):
        raise ArgumentError(
            f"signed_bin: `magnitude_bin` must be an int or a DataNode of per-sample ints from "
            f"[0, num_magnitude_bins - 1], got {magnitude_bin!r}"
        )
    if not isinstance(magnitude_bin, DataNode):  # int-like (checked above): a Python int
        magnitude_bin = int(magnitude_bin)
    if random_sign is not None and (seed is not None or shape is not None):
        raise ArgumentError(
            "signed_bin: `random_sign` cannot be given together with `seed` or `shape`"
        )
    if random_sign is None:
        kwargs: dict[str, Any] = {"values": [0, 1], "dtype": types.INT32}
        if seed is not None:
            kwargs["seed"] = seed
        if shape is not None:
            kwargs["shape"] = shape
        random_sign = fn.random.uniform(**kwargs)
    elif not isinstance(random_sign, DataNode):
        raise ArgumentError(
            f"signed_bin: `random_sign` must be a DataNode of per-sample 0/1 ints, "
            f"got {random_sign!r}"
        )
    # Computed here, before any split of the batch, as DALI does.
    signed_magnitude_idx = 2 * magnitude_bin + random_sign
    return _SignedMagnitudeBin(magnitude_bin, random_sign, signed_magnitude_idx)


def _signed(magnitudes: Sequence[Any] | np.ndarray) -> np.ndarray:
    """``m0, -m0, m1, -m1, ...``: row ``2 * bin + sign`` is the signed magnitude."""
    return np.array([(-1) ** sign * m for m in magnitudes for sign in (0, 1)])


def _narrow(name: str, array: np.ndarray) -> np.ndarray:
    """DALI's ``types.Constant`` types for a parameter table: float64 becomes float32 and
    (u)int64 (u)int32 (an error where a value does not fit)."""
    if array.dtype == np.float64:
        return array.astype(np.float32)
    if array.dtype in (np.int64, np.uint64):
        limits = np.iinfo(np.int32 if array.dtype == np.int64 else np.uint32)
        if array.size and (array.min() < limits.min or array.max() > limits.max):
            raise ArgumentError(
                f"augmentation `{name}`: a parameter from `mag_to_param` does not fit "
                f"{limits.dtype} (DALI's constants have no 64-bit integers)"
            )
        return array.astype(limits.dtype)
    return array


def _gather(table: np.ndarray, index: DataNode) -> DataNode:
    """Each sample's row ``table[index]``: one ``fn.lookup_table`` per element of a row."""
    rows = table.shape[0]
    flat = table.reshape(rows, -1)
    dtype = types.from_numpy(table.dtype)
    keys = list(range(rows))
    columns = [
        fn.lookup_table(index, keys=keys, values=flat[:, j].tolist(), dtype=dtype)
        for j in range(flat.shape[1])
    ]
    node = columns[0] if len(columns) == 1 else fn.stack(*columns)
    return fn.reshape(node, shape=list(table.shape[1:]))


class Augmentation:
    """An op wrapped so that it is called with a magnitude bin (DALI's ``Augmentation``); made
    by the ``@augmentation`` decorator (see ``augmentation`` for the arguments)."""

    def __init__(
        self,
        op: Callable[..., Any],
        mag_range: tuple[float, float] | np.ndarray | None = None,
        randomly_negate: bool | None = None,
        mag_to_param: Callable[[float], Any] | None = None,
        param_device: str | None = None,
        name: str | None = None,
    ) -> None:
        self._op = op
        self._mag_range = mag_range
        self._randomly_negate = randomly_negate
        self._mag_to_param = mag_to_param
        self._param_device = param_device
        self._name = name
        self._validate()

    # --- setup --------------------------------------------------------------------------
    def _validate(self) -> None:
        op = self._op
        if not callable(op):
            raise ArgumentError(f"augmentation: the op must be callable, got {op!r}")
        label = getattr(op, "__name__", repr(op))
        if self._name is not None and not isinstance(self._name, str):
            raise ArgumentError(f"augmentation `{label}`: `name` must be a str, got {self._name!r}")
        positional = [p for p in inspect.signature(op).parameters.values() if p.kind in _POSITIONAL]
        if len(positional) < 2:
            raise ArgumentError(
                f"augmentation `{self.name}`: the op {op!r} takes {len(positional)} positional "
                f"argument(s), but a function decorated with `@augmentation` must take at least "
                f"two: the samples and the parameter"
            )
        mr = self._mag_range
        if mr is not None and not isinstance(mr, np.ndarray):
            ok = (
                isinstance(mr, (tuple, list))
                and len(mr) == 2
                and all(isinstance(x, (int, float, np.number)) for x in mr)
                and not any(isinstance(x, bool) for x in mr)
            )
            if not ok:
                raise ArgumentError(
                    f"augmentation `{self.name}`: `mag_range` must be a (low, high) pair of "
                    f"numbers or an np.ndarray of the magnitudes, got {mr!r}"
                )
        if isinstance(mr, np.ndarray) and (mr.ndim != 1 or len(mr) == 0):
            raise ArgumentError(
                f"augmentation `{self.name}`: an np.ndarray `mag_range` must be a non-empty "
                f"1-D array of magnitudes, got shape {mr.shape}"
            )
        if self._randomly_negate is not None and not isinstance(
            self._randomly_negate, (bool, np.bool_)
        ):
            raise ArgumentError(
                f"augmentation `{self.name}`: `randomly_negate` must be a bool, got "
                f"{self._randomly_negate!r}"
            )
        if self._mag_to_param is not None and not callable(self._mag_to_param):
            raise ArgumentError(
                f"augmentation `{self.name}`: `mag_to_param` must be callable, got "
                f"{self._mag_to_param!r}"
            )
        if self._param_device is not None and self._param_device not in _DEVICES:
            raise ArgumentError(
                f"augmentation `{self.name}`: `param_device` must be one of "
                f"{', '.join(map(repr, _DEVICES))}, got {self._param_device!r}"
            )

    @property
    def op(self) -> Callable[..., Any]:
        return self._op

    @property
    def mag_range(self) -> tuple[float, float] | np.ndarray | None:
        return self._mag_range

    @property
    def mag_to_param(self) -> Callable[[float], Any]:
        return self._mag_to_param or np.array

    @property
    def randomly_negate(self) -> bool:
        return bool(self._randomly_negate)

    @property
    def param_device(self) -> str:
        return self._param_device or "cpu"

    @property
    def name(self) -> str:
        if self._name:
            return self._name
        label: str = getattr(self._op, "__name__", repr(self._op))
        return label

    def _get_config(self) -> dict[str, Any]:
        return {
            "mag_range": self._mag_range,
            "mag_to_param": self._mag_to_param,
            "randomly_negate": self._randomly_negate,
            "param_device": self._param_device,
            "name": self._name,
        }

    def __repr__(self) -> str:
        params = [f"{k}={v!r}" for k, v in self._get_config().items() if v is not None]
        return f"Augmentation({', '.join([repr(self.op), *params])})"

    def augmentation(
        self,
        mag_range: Any = _Undefined,
        randomly_negate: Any = _Undefined,
        mag_to_param: Any = _Undefined,
        param_device: Any = _Undefined,
        name: Any = _Undefined,
        augmentation_cls: type[Augmentation] | None = None,
    ) -> Augmentation:
        """A new augmentation of the same op with the given settings changed (the others
        kept): ``shear_x.augmentation(mag_range=(0, 0.5))``."""
        config = self._get_config()
        changes = dict(
            mag_range=mag_range,
            randomly_negate=randomly_negate,
            mag_to_param=mag_to_param,
            param_device=param_device,
            name=name,
        )
        config.update({k: v for k, v in changes.items() if v is not _Undefined})
        return (augmentation_cls or type(self))(self.op, **config)

    # --- parameters ---------------------------------------------------------------------
    def _magnitudes(self, num_magnitude_bins: Any) -> np.ndarray | None:
        mr = self.mag_range
        if mr is None:
            return None
        if num_magnitude_bins is not None and (
            not _int_like(num_magnitude_bins) or num_magnitude_bins < 1
        ):
            raise ArgumentError(
                f"augmentation `{self.name}`: `num_magnitude_bins` must be a positive int, got "
                f"{num_magnitude_bins!r}"
            )
        if isinstance(mr, np.ndarray):
            if num_magnitude_bins is not None and len(mr) != num_magnitude_bins:
                raise ArgumentError(
                    f"augmentation `{self.name}`: `mag_range` is an np.ndarray of "
                    f"{len(mr)} magnitudes, but `num_magnitude_bins` is {num_magnitude_bins}"
                )
            return mr
        if num_magnitude_bins is None:
            raise ArgumentError(
                f"augmentation `{self.name}`: `num_magnitude_bins` is missing; give it with "
                f"the samples and `magnitude_bin`"
            )
        lo, hi = mr
        return np.linspace(lo, hi, int(num_magnitude_bins), dtype=np.float32)

    def _param_of(self, magnitude: Any) -> np.ndarray:
        param = self.mag_to_param(magnitude)
        if _contains_node(param):
            raise ArgumentError(
                f"augmentation `{self.name}`: `mag_to_param` returned a DataNode; it must "
                f"return NumPy data (the parameters are computed once, when the pipeline is "
                f"defined): move the operators into the augmentation itself"
            )
        return np.array(param)

    def param_table(self, magnitudes: Sequence[Any] | np.ndarray) -> np.ndarray:
        """``mag_to_param`` of each magnitude, stacked (one shape and dtype for all).

        Raises:
            ArgumentError: where two magnitudes give parameters of different shapes or types.
        """
        params = [self._param_of(m) for m in magnitudes]
        first = params[0]
        for param, mag in zip(params, magnitudes, strict=True):
            if param.shape != first.shape or param.dtype != first.dtype:
                raise ArgumentError(
                    f"augmentation `{self.name}`: `mag_to_param` must return arrays of one "
                    f"shape and type for every magnitude: {first.shape} {first.dtype} for "
                    f"{magnitudes[0]}, {param.shape} {param.dtype} for {mag}"
                )
        return _narrow(self.name, np.stack(params))

    def _check_bin(self, magnitude_bin: Any, n: int) -> None:
        if _int_like(magnitude_bin):
            values = [np.asarray(magnitude_bin)]
        elif isinstance(magnitude_bin, DataNode):
            values = _debug_values(magnitude_bin) or []
            for v in values:
                if v.dtype.kind not in "iu":
                    raise ArgumentError(
                        f"augmentation `{self.name}`: `magnitude_bin` must be integers, got "
                        f"{v.dtype}"
                    )
        else:
            raise ArgumentError(
                f"augmentation `{self.name}`: `magnitude_bin` must be an int, a DataNode of "
                f"per-sample ints or a signed_bin(...), got {magnitude_bin!r}"
            )
        for i, v in enumerate(values):
            if v.size and (v.min() < 0 or v.max() >= n):
                where = f" at sample {i}" if isinstance(magnitude_bin, DataNode) else ""
                raise ArgumentError(
                    f"augmentation `{self.name}`: `magnitude_bin` must be in [0, {n - 1}] "
                    f"(num_magnitude_bins={n}), got {v.tolist()}{where}"
                )

    def _param(self, magnitude_bin: Any, num_magnitude_bins: Any, device: str) -> Any:
        magnitudes = self._magnitudes(num_magnitude_bins)
        if magnitudes is None:
            return None
        if magnitude_bin is None:
            raise ArgumentError(
                f"augmentation `{self.name}` has a `mag_range`, so it needs `magnitude_bin` to "
                f"pick the magnitude"
            )
        signed = isinstance(magnitude_bin, _SignedMagnitudeBin)
        self._check_bin(magnitude_bin.bin if signed else magnitude_bin, len(magnitudes))
        if self.randomly_negate and not signed:
            warnings.warn(
                f"The augmentation `{self.name}` was declared with `randomly_negate=True`, but "
                f"an unsigned `magnitude_bin` was passed: it draws its own random signs. To "
                f"draw one sign per sample for several augmentations, call "
                f"`signed_bin(magnitude_bin)` first and pass that.",
                UserWarning,
                stacklevel=3,
            )
            magnitude_bin = signed_bin(magnitude_bin)
            signed = True
        if self.randomly_negate:
            if _int_like(magnitude_bin.bin):
                table = self.param_table(_signed([magnitudes[magnitude_bin.bin]]))
                node = _gather(table, magnitude_bin.random_sign)
            else:
                table = self.param_table(_signed(magnitudes))
                node = _gather(table, magnitude_bin.signed_magnitude_idx)
        else:
            bin_ = magnitude_bin.bin if signed else magnitude_bin
            if _int_like(bin_):
                node = _value(_narrow(self.name, self._param_of(magnitudes[int(bin_)])))
            else:
                node = _gather(self.param_table(magnitudes), bin_)
        return node.gpu() if device == "gpu" else node

    # --- the call -----------------------------------------------------------------------
    def __call__(
        self,
        data: DataNode,
        *,
        magnitude_bin: int | DataNode | _SignedMagnitudeBin | None = None,
        num_magnitude_bins: int | None = None,
        **kwargs: Any,
    ) -> Any:
        """``op(data, param, **kwargs)`` with ``param = mag_to_param(magnitudes[magnitude_bin]
        * (-1) ** random_sign)``.

        Args:
            data: the batch to transform.
            magnitude_bin: an int, a DataNode of per-sample ints, or ``signed_bin(...)``, in
                ``[0, num_magnitude_bins - 1]``; needed when the augmentation has a
                ``mag_range``.
            num_magnitude_bins: the number of bins of ``mag_range``'s linspace.
            kwargs: the op's extra named arguments (e.g. ``fill_value``, ``shape``).

        Raises:
            ArgumentError: a keyword the op does not take, a bin out of range, a missing
                ``num_magnitude_bins``/``magnitude_bin``; ``MissingArgException`` for a
                required extra argument not given.
        """
        if not _takes_any_kwargs(self.op):
            extra = [p.name for p in _extra_params(self.op)]
            for key in kwargs:
                if key not in extra:
                    raise ArgumentError(
                        f"augmentation `{self.name}` got an unexpected keyword argument "
                        f"`{key}` (it takes: {', '.join(extra) or 'none'}).{suggest(key, extra)}"
                    )
        missing = [
            p.name
            for p in _extra_params(self.op)
            if p.default is inspect.Parameter.empty and p.name not in kwargs
        ]
        if missing:
            raise MissingArgException(
                f"The augmentation `{self.name}` requires the named argument(s) "
                f"{', '.join(missing)}, which were not given to the call.",
                augmentation=self,
                missing_args=missing,
            )
        device = self.param_device
        if device == "auto":
            device = getattr(data, "device", None) or "cpu"
        param = self._param(magnitude_bin, num_magnitude_bins, device)
        return self.op(data, param, **kwargs)


def _contains_node(obj: Any) -> bool:
    if isinstance(obj, (tuple, list)):
        return any(_contains_node(x) for x in obj)
    return isinstance(obj, DataNode)


def augmentation(
    function: Callable[..., Any] | None = None,
    *,
    mag_range: tuple[float, float] | np.ndarray | None = None,
    randomly_negate: bool | None = None,
    mag_to_param: Callable[[float], Any] | None = None,
    param_device: str | None = None,
    name: str | None = None,
    augmentation_cls: type[Augmentation] | None = None,
) -> Any:
    """Turns ``function(data, parameter, **extra)`` into an ``Augmentation`` called with a
    magnitude bin instead of the parameter (DALI's ``@augmentation``; bare or with arguments).

    Args:
        function: the op: at least two positional arguments, the batch and the parameter.
        mag_range: ``(low, high)``: the magnitudes are ``linspace(low, high,
            num_magnitude_bins)``; an ``np.ndarray``: the magnitudes themselves; ``None``: the
            op gets ``None`` as its parameter.
        randomly_negate: negate the magnitude of each sample at random (default False).
        mag_to_param: magnitude -> parameter, in NumPy (default ``np.array``); one shape and
            dtype for every magnitude.
        param_device: "cpu" (default), "gpu" or "auto" (the data's device).
        name: the augmentation's name (default: the function's).
        augmentation_cls: the class to make (default ``Augmentation``).

    Raises:
        ArgumentError: ``function`` is not callable or is already an ``Augmentation``, or a
            setting is invalid.
    """

    def decorator(op: Callable[..., Any]) -> Augmentation:
        return (augmentation_cls or Augmentation)(
            op,
            mag_range=mag_range,
            randomly_negate=randomly_negate,
            mag_to_param=mag_to_param,
            param_device=param_device,
            name=name,
        )

    if function is None:
        return decorator
    if isinstance(function, Augmentation):
        raise ArgumentError(
            f"`@augmentation` was applied to the augmentation `{function.name}`, which is "
            f"decorated already: call `{function.name}.augmentation(...)` to change its setup, "
            f"or decorate `{function.name}.op`"
        )
    if not callable(function):
        raise ArgumentError(f"`@augmentation` decorates callables, got {function!r}")
    return decorator(function)
