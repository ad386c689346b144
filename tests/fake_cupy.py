"""A CPU stand-in for CuPy that keeps CuPy's rules, so that the GPU path runs in the CPU suite.

The CI machine has no GPU, and the machine with one is lent rarely and for minutes. The GPU
kernels are NumPy code made array-module generic (``backend.array_module``), so NumPy can run
them; what NumPy cannot show is where they would break on CuPy, whose arrays refuse what NumPy's
accept. This module is CuPy's array rules on NumPy's arithmetic: ``install()`` makes
``augkit.backend`` find it as "cupy" with one CUDA device, and pipelines with ``device="gpu"``
then run their GPU code on the CPU (``AUGKIT_FAKE_GPU=1``, tests/conftest.py; ``make test``
runs the ``gpu`` tests so, less those marked ``cuda``, which need CUDA itself).

CuPy's rules kept (CuPy 14.2, checked against its sources and issues):

- No implicit copy to the host: ``np.asarray(a)``, ``np.array(a)``, OpenCV or Pillow given a
  device array raise ``TypeError`` (CuPy's ``__array__`` does); ``a.get()`` copies.
- A ufunc or operator that mixes a device array with a host array of one or more dimensions
  raises ``TypeError`` ("Unsupported type"); Python and NumPy scalars, and 0-d host arrays,
  are scalars.
- ``a[...] = host`` with a non-scalar host array raises ``ValueError`` (cupy/cupy#593).
- The module's functions take device arrays: a host array of one or more dimensions among
  their arguments raises ``TypeError``, except ``asarray``/``array`` (the copy to the device)
  and ``asnumpy``. Indices may be host arrays.
- Indexing to one element and reductions give 0-d device arrays, not NumPy scalars.
- NumPy names that CuPy 14.2 lacks (``NOT_IN_CUPY``, listed from cupy-cuda13x 14.2) raise
  ``AttributeError``, and ``np.<function>(a)`` dispatches (``__array_function__``) only to a
  function CuPy has.

Not modelled: streams and asynchrony, CuPy's own kernels' rounding (fused or TF32 arithmetic),
memory. Those are what only the real device run (benchmarks/gpu_check.sh) shows.
"""

from __future__ import annotations

import functools
import numbers
import types
from typing import Any

import numpy as np

IMPLICIT = (
    "Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a "
    "NumPy array explicitly."
)

NOT_IN_CUPY = {
    "": frozenset(
        [
            "asmatrix",
            "block",
            "bmat",
            "busday_count",
            "busday_offset",
            "datetime_as_string",
            "datetime_data",
            "einsum_path",
            "frompyfunc",
            "fromregex",
            "geomspace",
            "get_include",
            "getbufsize",
            "geterr",
            "geterrcall",
            "histogram_bin_edges",
            "info",
            "insert",
            "is_busday",
            "isnat",
            "matvec",
            "nanpercentile",
            "nanquantile",
            "nested_iters",
            "polyder",
            "polydiv",
            "polyint",
            "setbufsize",
            "seterr",
            "seterrcall",
            "show_runtime",
            "spacing",
            "test",
            "unstack",
            "vecdot",
            "vecmat",
            "busdaycalendar",
            "bytes_",
            "character",
            "clongdouble",
            "complex256",
            "datetime64",
            "errstate",
            "flexible",
            "float128",
            "longdouble",
            "matrix",
            "memmap",
            "ndenumerate",
            "nditer",
            "object_",
            "recarray",
            "record",
            "str_",
            "timedelta64",
            "void",
        ]
    ),
    "linalg": frozenset(
        [
            "diagonal",
            "matrix_norm",
            "multi_dot",
            "outer",
            "svdvals",
            "tensordot",
            "test",
            "trace",
            "vecdot",
            "vector_norm",
        ]
    ),
    "fft": frozenset({"test"}),
    "random": frozenset(
        [
            "MT19937",
            "PCG64",
            "PCG64DXSM",
            "Philox",
            "SFC64",
            "SeedSequence",
            "get_bit_generator",
            "get_state",
            "set_bit_generator",
            "set_state",
            "test",
        ]
    ),
}
"""Public NumPy names that CuPy 14.2 does not have, by submodule ("" is the top level)."""

NOT_ON_CUPY_NDARRAY = frozenset(
    [
        "ctypes",
        "getfield",
        "resize",
        "setfield",
        "setflags",
        "to_device",
    ]
)
"""``numpy.ndarray`` attributes that ``cupy.ndarray`` does not have."""


def _host_array_error(where: str, value: Any) -> TypeError:
    return TypeError(
        f"Unsupported type {type(value)} in {where}: a NumPy array of shape "
        f"{getattr(value, 'shape', '?')} given to CuPy (copy it with cupy.asarray first)"
    )


def _scalar_or_device(value: Any, where: str) -> Any:
    """An operand of a ufunc: a device array's data, or a scalar; host arrays are refused."""
    if isinstance(value, ndarray):
        return value._a
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value
        raise _host_array_error(where, value)
    if isinstance(value, (numbers.Number, np.generic, bool)) or value is None:
        return value
    raise TypeError(f"Unsupported type {type(value)} in {where}")


def _unwrap(value: Any, where: str) -> Any:
    """A function's argument: device arrays to their data, recursively through lists, tuples
    and dicts; host arrays of one or more dimensions are refused."""
    if isinstance(value, ndarray):
        return value._a
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return value
        raise _host_array_error(where, value)
    if isinstance(value, (list, tuple)):
        return type(value)(_unwrap(v, where) for v in value)
    if isinstance(value, dict):
        return {k: _unwrap(v, where) for k, v in value.items()}
    return value


def _index(key: Any) -> Any:
    """An index: device arrays to their data; host arrays and lists are allowed (CuPy copies
    them to the device)."""
    if isinstance(key, ndarray):
        return key._a
    if isinstance(key, tuple):
        return tuple(_index(k) for k in key)
    return key


def _wrap(value: Any) -> Any:
    """NumPy results as device arrays (scalars as 0-d arrays), recursively."""
    if isinstance(value, np.ndarray):
        return ndarray._of(value)
    if isinstance(value, np.generic):
        return ndarray._of(np.asarray(value))
    if isinstance(value, tuple):
        return tuple(_wrap(v) for v in value)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


class ndarray:
    """A device array: NumPy's data behind CuPy's rules (the module docstring)."""

    __slots__ = ("_a",)
    _a: np.ndarray

    def __init__(
        self, shape: Any, dtype: Any = float, memptr: Any = None, strides: Any = None, order="C"
    ) -> None:
        self._a = np.empty(shape, dtype, order=order)

    @classmethod
    def _of(cls, data: np.ndarray) -> ndarray:
        obj = object.__new__(cls)
        obj._a = data
        return obj

    # --- what CuPy refuses or does differently ---
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        raise TypeError(IMPLICIT)

    def get(self, stream: Any = None, order: str = "C", out: Any = None, blocking=True):
        """The data on the host (a copy), as ``cupy.ndarray.get``."""
        if out is not None:
            out[...] = self._a
            return out
        return np.array(self._a, order=order)

    def set(self, arr: np.ndarray, stream: Any = None) -> None:
        self._a[...] = arr

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(value, ndarray):
            value = value._a
        elif isinstance(value, np.ndarray) and value.ndim > 0:
            raise ValueError("non-scalar numpy.ndarray cannot be used for fill")
        elif isinstance(value, (list, tuple)):
            raise TypeError(f"Unsupported type {type(value)} assigned into a cupy.ndarray")
        self._a[_index(key)] = value

    def __getitem__(self, key: Any) -> Any:
        return _wrap(self._a[_index(key)])

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        where = f"cupy.{ufunc.__name__}"
        args = [_scalar_or_device(x, where) for x in inputs]
        out = kwargs.pop("out", None)
        if "where" in kwargs:
            kwargs["where"] = _scalar_or_device(kwargs["where"], where)
        if out is not None:
            for o in out:
                if not isinstance(o, ndarray):
                    raise TypeError(f"{where}: out must be a cupy.ndarray, not {type(o)}")
            getattr(ufunc, method)(*args, out=tuple(o._a for o in out), **kwargs)
            return out[0] if len(out) == 1 else out
        return _wrap(getattr(ufunc, method)(*args, **kwargs))

    def __array_function__(self, func: Any, types_: Any, args: Any, kwargs: Any) -> Any:
        submodule = func.__module__.removeprefix("numpy").strip(".")
        if func.__name__ in NOT_IN_CUPY.get(submodule, frozenset()):
            return NotImplemented
        where = f"numpy.{func.__name__} on a cupy.ndarray"
        return _wrap(func(*_unwrap(args, where), **_unwrap(kwargs, where)))

    # --- NumPy's behaviour otherwise ---
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: ndarray._of(self._a.T))
    device = property(lambda self: _cuda.Device(0))

    def __len__(self) -> int:
        return len(self._a)

    def __iter__(self) -> Any:
        return (_wrap(x) for x in self._a)

    def __float__(self) -> float:
        return float(self._a)

    def __int__(self) -> int:
        return int(self._a)

    def __complex__(self) -> complex:
        return complex(self._a)

    def __bool__(self) -> bool:
        return bool(self._a)

    def __repr__(self) -> str:
        return f"fake_cupy.{np.array_repr(self._a)}"

    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any:
        return self._a.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self) -> Any:
        return self._a.__dlpack_device__()

    def tolist(self) -> Any:
        return self._a.tolist()

    def item(self, *args: Any) -> Any:
        return self._a.item(*args)

    def tobytes(self, order: str = "C") -> bytes:
        return self._a.tobytes(order)

    def __getattr__(self, name: str) -> Any:
        if name in NOT_ON_CUPY_NDARRAY or name.startswith("__"):
            raise AttributeError(f"'cupy.ndarray' object has no attribute '{name}'")
        value = getattr(self._a, name)
        if not callable(value):
            return _wrap(value)

        @functools.wraps(value)
        def method(*args: Any, **kwargs: Any) -> Any:
            where = f"cupy.ndarray.{name}"
            return _wrap(value(*_unwrap(args, where), **_unwrap(kwargs, where)))

        return method


def _binary(ufunc: Any) -> tuple[Any, Any, Any]:
    def forward(self: ndarray, other: Any) -> Any:
        return ufunc(self, other)

    def reflected(self: ndarray, other: Any) -> Any:
        return ufunc(other, self)

    def inplace(self: ndarray, other: Any) -> Any:
        return ufunc(self, other, out=(self,))

    return forward, reflected, inplace


for _name, _ufunc in {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "truediv": np.true_divide,
    "floordiv": np.floor_divide,
    "mod": np.remainder,
    "pow": np.power,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "lshift": np.left_shift,
    "rshift": np.right_shift,
    "matmul": np.matmul,
}.items():
    _f, _r, _i = _binary(_ufunc)
    setattr(ndarray, f"__{_name}__", _f)
    setattr(ndarray, f"__r{_name}__", _r)
    setattr(ndarray, f"__i{_name}__", _i)
for _name, _ufunc in {
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "eq": np.equal,
    "ne": np.not_equal,
}.items():
    setattr(ndarray, f"__{_name}__", _binary(_ufunc)[0])
for _name, _ufunc in {
    "neg": np.negative,
    "pos": np.positive,
    "abs": np.absolute,
    "invert": np.invert,
}.items():
    setattr(ndarray, f"__{_name}__", lambda self, _u=_ufunc: _u(self))
ndarray.__hash__ = None  # type: ignore[assignment]
# backend.is_gpu_array tells CuPy's arrays by their module's name, without importing CuPy.
ndarray.__module__ = "cupy._fake"


def _call(function: Any, name: str, args: tuple, kwargs: dict) -> Any:
    where = f"cupy.{name}"
    return _wrap(function(*_unwrap(args, where), **_unwrap(kwargs, where)))


class _Module(types.ModuleType):
    """``cupy`` (or one of its submodules): NumPy's functions under CuPy's rules."""

    def __init__(self, name: str, numpy_module: Any, missing: frozenset[str]) -> None:
        super().__init__(name)
        self._numpy = numpy_module
        self._missing = missing

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") or name in self._missing:
            raise AttributeError(f"module '{self.__name__}' has no attribute '{name}'")
        value = getattr(self._numpy, name)
        if isinstance(value, type) or not callable(value):
            return value

        @functools.wraps(value)
        def function(*args: Any, **kwargs: Any) -> Any:
            return _call(value, name, args, kwargs)

        return function


class _Context:
    """What a CUDA device or stream is to code that only enters, uses and waits on it."""

    def __enter__(self) -> _Context:
        return self

    def __exit__(self, *exc: Any) -> None:
        return None

    def use(self) -> _Context:
        return self

    def synchronize(self) -> None:
        return None


class _Device(_Context):
    def __init__(self, device: int | None = 0) -> None:
        self.id = device or 0


class _Stream(_Context):
    def __init__(self, null: bool = False, non_blocking: bool = False, ptr: int = 0) -> None:
        self.ptr = ptr


_cuda = types.SimpleNamespace(
    runtime=types.SimpleNamespace(
        getDeviceCount=lambda: 1,
        deviceSynchronize=lambda: None,
        getDeviceProperties=lambda device: {"name": b"tests/fake_cupy (no device)"},
    ),
    Device=_Device,
    Stream=_Stream,
    get_current_stream=lambda device=None: _Stream(),
    get_device_id=lambda: 0,
)


def _asarray(a: Any, dtype: Any = None, order: Any = None, *, blocking: bool = False) -> ndarray:
    if isinstance(a, ndarray):
        return a if dtype is None or np.dtype(dtype) == a.dtype else a.astype(dtype)
    return ndarray._of(np.array(_index(a), dtype=dtype, order=order or "K"))


def _array(a: Any, dtype: Any = None, copy: bool = True, order: str = "K", ndmin: int = 0):
    data = a._a if isinstance(a, ndarray) else a
    return ndarray._of(np.array(data, dtype=dtype, copy=True, order=order, ndmin=ndmin))


def _asnumpy(a: Any, stream: Any = None, order: str = "C", out: Any = None) -> np.ndarray:
    return a.get(order=order, out=out) if isinstance(a, ndarray) else np.asarray(a, order=order)


def _get_array_module(*args: Any) -> Any:
    return cupy if any(isinstance(a, ndarray) for a in args) else np


def _from_dlpack(obj: Any) -> ndarray:
    return ndarray._of(np.from_dlpack(obj))


def _fuse(*args: Any, **kwargs: Any) -> Any:
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda f: f


cupy = _Module("cupy", np, NOT_IN_CUPY[""])
for _sub in ("linalg", "fft", "random"):
    setattr(cupy, _sub, _Module(f"cupy.{_sub}", getattr(np, _sub), NOT_IN_CUPY[_sub]))
cupy.ndarray = ndarray
cupy.cuda = _cuda
cupy.asarray = _asarray
cupy.array = _array
cupy.asanyarray = _asarray
cupy.asnumpy = _asnumpy
cupy.get_array_module = _get_array_module
cupy.from_dlpack = _from_dlpack
cupy.fuse = _fuse


def install() -> None:
    """``augkit.backend`` finds this module as CuPy, with one CUDA device, for the rest of the
    process (tests/conftest.py, ``AUGKIT_FAKE_GPU=1``)."""
    import sys

    from augkit import backend

    sys.modules["cupy"] = cupy  # tests and users' functions that import cupy get it too
    backend._cupy.cache_clear()
    backend.gpu_unavailable_reason.cache_clear()
