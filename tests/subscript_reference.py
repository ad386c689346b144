"""DALI 2.4's indexing of DataNodes (``x[...]``), ``types.Constant`` and ``fn.constant`` on fixed
inputs, stored in ``tests/dali_parity/reference/subscript.npz`` and compared exactly by
``tests/test_subscript.py`` and ``tests/test_constant.py``.

Run with DALI's venv, from the repository root::

    env -u VIRTUAL_ENV -u PYTHONPATH benchmarks/_work/dali-venv/bin/python \\
        tests/subscript_reference.py

The cases are defined here once, as functions of ``(fn, types, newaxis, inputs)`` (DALI's
modules or augkit's), so that the tests run the very same expressions: importing this module
does not import DALI. ``inputs`` holds the pipeline's external sources: ``x`` (uint8 HWC images
of three different shapes), and the per-sample int32 scalars ``i`` (``INDEX``), ``lo`` and
``step``.

Stored entries: ``out/<case>/<sample>`` (DALI's output), ``layout/<case>``; for the cases DALI
refuses, ``error/<case>`` (the exception's type and the last line of its message).
"""

from __future__ import annotations

import pathlib
from collections.abc import Callable
from typing import Any

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "dali_parity" / "reference" / "subscript.npz"
BATCH = 3
SHAPES = ((5, 6, 3), (4, 7, 3), (6, 4, 3))
IMAGES = [
    (np.arange(np.prod(s)).reshape(s) * (7 + k) % 251).astype(np.uint8)
    for k, s in enumerate(SHAPES)
]
INDEX = (1, -1, 3)  # per-sample integer index (axis 0)
LOW = (0, 2, -3)  # per-sample slice start
STEP = (1, 2, -1)  # per-sample slice step

Case = Callable[[Any, Any, Any, dict[str, Any]], Any]

INDEXING: dict[str, Case] = {
    "int": lambda fn, t, na, x: x["x"][1],
    "negative": lambda fn, t, na, x: x["x"][-1],
    "second_axis": lambda fn, t, na, x: x["x"][:, 2],
    "last_axis": lambda fn, t, na, x: x["x"][:, :, 0],
    "scalar": lambda fn, t, na, x: x["x"][0, 1, 2],
    "chained": lambda fn, t, na, x: x["x"][1][2],
    "numpy_int": lambda fn, t, na, x: x["x"][np.int64(2)],
    "bool_index": lambda fn, t, na, x: x["x"][True],
    "slice": lambda fn, t, na, x: x["x"][1:3],
    "slice_open": lambda fn, t, na, x: x["x"][2:],
    "slice_negative": lambda fn, t, na, x: x["x"][-2:, :-1],
    "slice_clamped": lambda fn, t, na, x: x["x"][1:100, -100:2],
    "slice_step": lambda fn, t, na, x: x["x"][::2, 1::3],
    "slice_negative_step": lambda fn, t, na, x: x["x"][::-1, 4:0:-2],
    "slice_empty": lambda fn, t, na, x: x["x"][3:1],
    "several_axes": lambda fn, t, na, x: x["x"][1:3, :, 0],
    "full": lambda fn, t, na, x: x["x"][:, :],
    "none_is_full_slice": lambda fn, t, na, x: x["x"][None],
    "none_then_int": lambda fn, t, na, x: x["x"][None, 1],
    "newaxis": lambda fn, t, na, x: x["x"][na],
    "newaxis_last": lambda fn, t, na, x: x["x"][:, :, :, na],
    "newaxis_named": lambda fn, t, na, x: x["x"][:, na("N")],
    "newaxis_named_int": lambda fn, t, na, x: x["x"][na("A"), 0],
    "newaxis_middle_int": lambda fn, t, na, x: x["x"][:, :, na, 1],
    "node_index": lambda fn, t, na, x: x["x"][x["i"]],
    "node_index_axis1": lambda fn, t, na, x: x["x"][:, x["i"]],
    "node_start": lambda fn, t, na, x: x["x"][x["lo"] :],
    "node_stop": lambda fn, t, na, x: x["x"][: x["lo"]],
    "node_step": lambda fn, t, na, x: x["x"][:: x["step"]],
    "node_all": lambda fn, t, na, x: x["x"][x["lo"] : 5 : x["step"], x["i"]],
    "scalar_constant_index": lambda fn, t, na, x: x["x"][t.Constant(2)],
    "constant_table": lambda fn, t, na, x: t.Constant(np.arange(24).reshape(6, 4))[x["step"] + 1],
    "constant_table_row": lambda fn, t, na, x: t.Constant(np.arange(24).reshape(6, 4))[2, x["i"]],
}
INDEXING_ERRORS: dict[str, Case] = {
    "out_of_range": lambda fn, t, na, x: x["x"][5],
    "out_of_range_negative": lambda fn, t, na, x: x["x"][-7],
    "node_out_of_range": lambda fn, t, na, x: x["x"][x["i"] + 4],
    "too_many": lambda fn, t, na, x: x["x"][0, 0, 0, 0],
    "too_many_full": lambda fn, t, na, x: x["x"][:, :, :, :],
    "zero_step": lambda fn, t, na, x: x["x"][::0],
    "float_node": lambda fn, t, na, x: x["x"][fn.cast(x["i"], dtype=t.FLOAT)],
    "float": lambda fn, t, na, x: x["x"][1.5],
    "string": lambda fn, t, na, x: x["x"]["a"],
    "list": lambda fn, t, na, x: x["x"][[1, 2]],
    "ellipsis": lambda fn, t, na, x: x["x"][...],
    "names_for_some": lambda fn, t, na, x: x["x"][na("A"), na],
}
CONSTANTS: dict[str, Case] = {
    "idata": lambda fn, t, na, x: fn.constant(idata=[1, 2, 3]),
    "idata_one": lambda fn, t, na, x: fn.constant(idata=5),
    "fdata_one": lambda fn, t, na, x: fn.constant(fdata=2.5),
    "fdata_list": lambda fn, t, na, x: fn.constant(fdata=[1.5, 2.5]),
    "fill": lambda fn, t, na, x: fn.constant(fdata=2.5, shape=[2, 3]),
    "shape_layout": lambda fn, t, na, x: fn.constant(
        idata=list(range(6)), shape=[2, 3], layout="HW"
    ),
    "zero_d": lambda fn, t, na, x: fn.constant(idata=[7], shape=[]),
    "float_to_uint8": lambda fn, t, na, x: fn.constant(fdata=[1.7, -1.7, 300.2], dtype=t.UINT8),
    "round_half": lambda fn, t, na, x: fn.constant(fdata=[2.5, -2.5, 0.5, 1.5], dtype=t.INT32),
    "float_saturate": lambda fn, t, na, x: fn.constant(fdata=[1e10, -1e10], dtype=t.INT32),
    "int_to_uint8": lambda fn, t, na, x: fn.constant(idata=[1, -1, 300], dtype=t.UINT8),
    "int_to_bool": lambda fn, t, na, x: fn.constant(idata=[1, 0, 3], dtype=t.BOOL),
    "int_to_int64": lambda fn, t, na, x: fn.constant(idata=[1, 2], dtype=t.INT64),
    "float16": lambda fn, t, na, x: fn.constant(fdata=[1.5, 2.0], dtype=t.FLOAT16),
    "int_saturate": lambda fn, t, na, x: fn.constant(idata=[2**31 + 5, -(2**31) - 5]),
    "C_int64_array": lambda fn, t, na, x: t.Constant(np.arange(6, dtype=np.int64).reshape(2, 3)),
    "C_float64_array": lambda fn, t, na, x: t.Constant(np.linspace(0, 1, 6).reshape(2, 3)),
    "C_uint8_layout": lambda fn, t, na, x: t.Constant(
        np.arange(6, dtype=np.uint8).reshape(2, 3), layout="HW"
    ),
    "C_list": lambda fn, t, na, x: t.Constant([1, 2, 3]),
    "C_mixed": lambda fn, t, na, x: t.Constant([1, 2.5]),
    "C_bools": lambda fn, t, na, x: t.Constant([True, False]),
    "C_scalar_shape": lambda fn, t, na, x: t.Constant(3, shape=[2, 2]),
    "C_scalar_device": lambda fn, t, na, x: t.Constant(3, device="cpu"),
    "C_scalar_dtype_layout": lambda fn, t, na, x: t.Constant(
        3.5, dtype=t.INT32, layout="A", shape=[1]
    ),
    "C_reshape": lambda fn, t, na, x: t.Constant(np.arange(6).reshape(2, 3), shape=[3, 2]),
    "C_dtype_int64": lambda fn, t, na, x: t.Constant(np.arange(6).reshape(2, 3), dtype=t.INT64),
    "C_list_dtype": lambda fn, t, na, x: t.Constant([1, 2, 3], dtype=t.FLOAT),
    "C_empty": lambda fn, t, na, x: t.Constant([]),
    # A ScalarConstant in arithmetic: its dtype takes part in the type promotion.
    "SC_uint8_add": lambda fn, t, na, x: x["x"] + t.Constant(3, t.UINT8),
    "SC_int8_add": lambda fn, t, na, x: x["x"] + t.Constant(np.int8(3)),
    "SC_plain_add": lambda fn, t, na, x: x["x"] + t.Constant(3),
    "SC_float_mul": lambda fn, t, na, x: t.Constant(0.5) * x["x"],
    "SC_float64_mul": lambda fn, t, na, x: x["x"] * t.Constant(np.float64(0.5)),
    "SC_rsub": lambda fn, t, na, x: t.Constant(200, t.UINT8) - x["x"],
    "SC_lt": lambda fn, t, na, x: x["x"] < t.Constant(100, t.UINT8),
    "SC_rgt": lambda fn, t, na, x: t.Constant(100, t.INT16) > x["x"],
    "SC_uint16_mul": lambda fn, t, na, x: x["x"] * t.Constant(300, t.UINT16),
}
CONSTANT_ERRORS: dict[str, Case] = {
    "volume_mismatch": lambda fn, t, na, x: fn.constant(idata=[1, 2, 3, 4], shape=[2, 3]),
    "both_data": lambda fn, t, na, x: fn.constant(idata=[1, 2], fdata=[1.0]),
    "no_data": lambda fn, t, na, x: fn.constant(),
    "float64": lambda fn, t, na, x: fn.constant(fdata=[1.0, 2.0], dtype=t.FLOAT64),
    "layout_mismatch": lambda fn, t, na, x: fn.constant(idata=[1, 2, 3], layout="HW"),
    "nested_list": lambda fn, t, na, x: t.Constant([[1, 2], [3, 4]]),
    "C_string": lambda fn, t, na, x: t.Constant("a"),
}


def inputs(fn: Any, types: Any) -> dict[str, Any]:
    """The external sources every case gets (one batch, the same each iteration)."""

    def scalars(values: tuple[int, ...]) -> Any:
        batch = [np.array(v, np.int32) for v in values]
        return fn.external_source(source=lambda: batch)

    return {
        "x": fn.external_source(source=lambda: IMAGES, layout="HWC"),
        "i": scalars(INDEX),
        "lo": scalars(LOW),
        "step": scalars(STEP),
    }


def main() -> None:
    import warnings

    warnings.filterwarnings("ignore")
    import nvidia.dali as dali
    from nvidia.dali import fn, pipeline_def, types

    store: dict[str, np.ndarray] = {}

    def one(name: str, case: Case) -> None:
        @pipeline_def(batch_size=BATCH, num_threads=1, device_id=None)
        def pipe() -> Any:
            return case(fn, types, dali.newaxis, inputs(fn, types))

        try:
            p = pipe()
            p.build()
            (out,) = p.run()
        except Exception as exc:  # what DALI raises is what is recorded
            lines = [ln for ln in str(exc).splitlines() if ln.strip()]
            tail = [ln for ln in lines if "C++ context" not in ln and "no longer valid" not in ln]
            store[f"error/{name}"] = np.array(f"{type(exc).__name__}: {tail[-1] if tail else ''}")
            print(name, "ERROR", store[f"error/{name}"])
            return
        store[f"layout/{name}"] = np.array(out.layout())
        for k in range(BATCH):
            store[f"out/{name}/{k}"] = np.array(out.at(k))
        print(name, out.at(0).shape, out.at(0).dtype, repr(out.layout()))

    for table in (INDEXING, INDEXING_ERRORS, CONSTANTS, CONSTANT_ERRORS):
        for name, case in table.items():
            one(name, case)
    np.savez_compressed(OUT, **store)
    print("wrote", OUT, len(store), "entries")


if __name__ == "__main__":
    main()
