# ruff: noqa: SIM108, RUF021 - `if`/`else` blocks, not ternaries: DALI refuses `a if node else b`
"""DALI 2.4's conditionals (``@pipeline_def(enable_conditionals=True)``: ``if``/``elif``/``else``,
``and``, ``or``, ``not`` on per-sample DataNodes) on fixed inputs, stored in
``tests/dali_parity/reference/conditionals.npz``; the cases DALI refuses are stored, with the
exception's type and message, in ``tests/dali_parity/reference/conditionals_errors.json``.

Run with DALI's venv, from the repository root::

    env -u VIRTUAL_ENV -u PYTHONPATH benchmarks/_work/dali-venv/bin/python \\
        tests/conditionals_reference.py

The cases are written here once, as plain functions of ``(fn, types, x)`` (``fn``/``types``:
DALI's modules or augkit's; ``x``: the dict of external sources that ``inputs`` makes), so that a
test runs the very same code with augkit: importing this module does not import DALI. Each case
returns a dict ``{output name: DataNode}``; the pipeline definition (``definition`` below) calls
the case and returns the dict's values in order. DALI converts the case with AutoGraph because it
converts every function a pipeline definition calls (recursively); the case's source text is also
stored (``cases`` entry) for a test that prefers to ``exec`` it.

Inputs (fed by ``fn.external_source``, batch ``BATCH``; the predicates are given, not drawn):

- ``img``: six photos of ``data/images`` decoded and resized with Pillow (BILINEAR), uint8 HWC
  (two of them not square);
- ``p``, ``q``, ``r``: bool scalars; ``none``: all False; ``every``: all True;
- ``k``: int32 scalars 0..3 (an ``elif`` chain); ``n``: int32 scalars (zero and negatives
  included, a numeric predicate); ``f``: float32 scalars (one 0.0, one 0.5);
- ``angle``: float32 scalars (degrees, for ``fn.rotate``).

Stored entries (``conditionals.npz``):

- ``input/<name>/<i>``: the inputs;
- ``case/<case>/<output>/<i>``: DALI's output ``<output>`` of case ``<case>`` for sample ``i``
  (its dtype is the array's dtype);
- ``layout/<case>/<output>``: the output's layout;
- ``cases``: JSON ``{case: {"source": text, "outputs": [names], "compare": how}}`` (the text
  includes the module-level helper a case calls; the texts use this module's ``np`` and ``BATCH``)
  where
  ``compare`` is ``"exact"`` (augkit should give the same arrays; for ``fn.resize`` and
  ``fn.rotate`` the tolerance of the operator's own parity test applies) or a sentence saying which
  relation holds (the random cases: DALI's draws are not augkit's, the relation between the draws
  inside and outside a branch is the fact to check).

``conditionals_errors.json``: ``{case: {"type": exception class, "stage": "trace" | "build" |
"run", "operator": the DALI operator named by a run-time error (or null), "message": DALI's own
message (for a run-time error the text after "encountered:", without the "C++ context" line; for
a trace-time error the exception's text without AutoGraph's "in user code" traceback; memory
addresses written 0x...), "source": the case's text}}``.
"""

from __future__ import annotations

import inspect
import json
import pathlib
import re
from collections.abc import Callable
from typing import Any

import numpy as np
from PIL import Image

ROOT = pathlib.Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "dali_parity" / "reference" / "conditionals.npz"
ERRORS_OUT = ROOT / "tests" / "dali_parity" / "reference" / "conditionals_errors.json"
BATCH = 6
PHOTOS = (
    ("animals/chelsea_cat.jpg", (32, 32)),
    ("people/cameraman.jpg", (32, 32)),
    ("objects/coffee_cup.jpg", (24, 40)),
    ("medical/retina_fundus.jpg", (32, 32)),
    ("space/rocket_launch_dscovr.jpg", (40, 24)),
    ("objects/greek_coins.jpg", (32, 32)),
)
P = (True, False, True, True, False, False)
Q = (True, True, False, False, True, False)
R = (False, True, True, False, False, True)
K = (0, 1, 2, 3, 1, 0)
N = (3, -1, 0, 7, 0, -5)
F = (0.0, 0.5, -2.0, 0.0, 1.5, 3.0)
ANGLE = (15.0, -30.0, 45.0, 90.0, 10.0, -5.0)

Case = Callable[[Any, Any, dict[str, Any]], dict[str, Any]]


def load_images() -> list[np.ndarray]:
    images = []
    for name, (h, w) in PHOTOS:
        with Image.open(ROOT / "data" / "images" / name) as im:
            rgb = im.convert("RGB").resize((w, h), Image.BILINEAR)
        images.append(np.ascontiguousarray(np.asarray(rgb, dtype=np.uint8)))
    return images


def input_batches() -> dict[str, list[np.ndarray]]:
    """The external sources' batches (the same each iteration), by name."""
    return {
        "img": load_images(),
        "p": [np.array(v, np.bool_) for v in P],
        "q": [np.array(v, np.bool_) for v in Q],
        "r": [np.array(v, np.bool_) for v in R],
        "none": [np.array(False, np.bool_)] * BATCH,
        "every": [np.array(True, np.bool_)] * BATCH,
        "k": [np.array(v, np.int32) for v in K],
        "n": [np.array(v, np.int32) for v in N],
        "f": [np.array(v, np.float32) for v in F],
        "angle": [np.array(v, np.float32) for v in ANGLE],
    }


def inputs(fn: Any, batches: dict[str, list[np.ndarray]]) -> dict[str, Any]:
    """One ``fn.external_source`` per input (``img`` with layout HWC)."""
    nodes = {}
    for name, batch in batches.items():
        layout = "HWC" if name == "img" else None
        nodes[name] = fn.external_source(source=_constant_source(batch), layout=layout)
    return nodes


def _constant_source(batch: list[np.ndarray]) -> Callable[[], list[np.ndarray]]:
    def source() -> list[np.ndarray]:
        return batch

    return source


# ---------------------------------------------------------------------------------------------
# The cases DALI runs. Every `if` below has a DataNode predicate unless said otherwise.


def flip_or_identity(fn, types, x):
    if x["p"]:
        out = fn.flip(x["img"], horizontal=1)
    else:
        out = x["img"]
    return {"out": out}


def flip_or_brightness(fn, types, x):
    if x["p"]:
        out = fn.flip(x["img"], vertical=1)
    else:
        out = fn.brightness_contrast(x["img"], brightness=1.5, contrast=0.5)
    return {"out": out}


def rotate_keep_size(fn, types, x):
    # The angle (an argument input made outside the `if`) is split like the image.
    if x["p"]:
        out = fn.rotate(x["img"], angle=x["angle"], keep_size=True, fill_value=0)
    else:
        out = x["img"]
    return {"out": out}


def resize_in_branches(fn, types, x):
    # The branches give different shapes: the merged batch is ragged.
    if x["q"]:
        out = fn.resize(x["img"], resize_x=20, resize_y=16)
    else:
        out = fn.resize(x["img"], resize_x=12, resize_y=24)
    return {"out": out}


def elif_chain(fn, types, x):
    k = x["k"]
    if k == 0:
        out = fn.flip(x["img"], horizontal=1)
    elif k == 1:
        out = fn.flip(x["img"], vertical=1)
    elif k == 2:
        out = fn.brightness_contrast(x["img"], brightness=0.5)
    else:
        out = x["img"]
    return {"out": out}


def nested_if(fn, types, x):
    n = x["n"]
    if x["p"]:
        if x["q"]:
            out = n + 100
        else:
            out = n + 200
    else:
        if x["q"]:
            out = n + 300
        else:
            out = n + 400
    return {"out": out}


def nested_predicate_from_branch(fn, types, x):
    # The inner predicate is computed inside the outer branch (on that branch's samples only).
    n = x["n"]
    if x["p"]:
        positive = n > 0
        if positive:
            out = n * 10
        else:
            out = n - 10
    else:
        out = n
    return {"out": out}


def two_outputs_one_if(fn, types, x):
    if x["p"]:
        image = fn.flip(x["img"], horizontal=1)
        number = x["n"] + 1
    else:
        image = x["img"]
        number = x["n"] * 2
    return {"image": image, "number": number}


def changed_in_one_branch(fn, types, x):
    # No `else`: the variable keeps its value (split then merged) where the predicate is False.
    out = x["img"]
    if x["p"]:
        out = fn.flip(out, horizontal=1)
    return {"out": out}


def assigned_in_one_branch_unused(fn, types, x):
    # `scratch` exists in one branch only; not used after the `if`, so it is no output: allowed.
    if x["p"]:
        scratch = fn.flip(x["img"], horizontal=1)
        out = scratch
    else:
        out = x["img"]
    return {"out": out}


def constants_int(fn, types, x):
    if x["p"]:
        out = 1
    else:
        out = 2
    return {"out": out}


def constants_float(fn, types, x):
    if x["p"]:
        out = 0.5
    else:
        out = 1.5
    return {"out": out}


def constants_bool(fn, types, x):
    if x["p"]:
        out = True
    else:
        out = False
    return {"out": out}


def constants_numpy(fn, types, x):
    # A NumPy array is one constant (a whole sample), its dtype and shape kept.
    if x["p"]:
        out = np.array([1, 2], np.uint8)
    else:
        out = np.array([3, 4, 5], np.uint8)
    return {"out": out}


def node_or_constant(fn, types, x):
    # An int32 node in one branch, a Python int in the other: the int becomes an int32 constant.
    if x["p"]:
        out = x["n"]
    else:
        out = 5
    return {"out": out}


def return_in_branches(fn, types, x):
    if x["p"]:
        return {"out": x["n"] + 1}
    return {"out": x["n"] - 1}


def logical_results(fn, types, x):
    p, q, r = x["p"], x["q"], x["r"]
    return {
        "and": p and q,
        "or": p or q,
        "not": not p,
        "and_or": p and q or r,
        "or_and": p or q and r,
        "not_and": not (p and q),
        "not_not": (not p) and (not q),
    }


def logical_not_of_numbers(fn, types, x):
    # `not` takes any scalar type (truth of a number); its result is bool.
    return {"not_int": not x["n"], "not_float": not x["f"]}


def logical_comparisons(fn, types, x):
    n = x["n"]
    return {"range": n > 0 and n < 5, "outside": n < 0 or n > 5, "mixed": x["p"] and n != 0}


def logical_with_constants(fn, types, x):
    p = x["p"]
    return {
        "p_and_true": p and True,
        "p_and_false": p and False,
        "p_or_true": p or True,
        "p_or_false": p or False,
        "true_and_p": True and p,  # plain Python: the result is `p` itself
        "false_or_p": False or p,  # plain Python: the result is `p` itself
    }


def if_on_logical(fn, types, x):
    n = x["n"]
    if x["p"] and x["q"]:
        out = n + 1
    elif x["p"] or x["q"]:
        out = n + 2
    elif not x["r"]:
        out = n + 3
    else:
        out = n + 4
    return {"out": out}


def predicate_from_mean(fn, types, x):
    image = x["img"]
    if fn.reductions.mean(image) > 100:
        out = fn.brightness_contrast(image, brightness=0.5)
    else:
        out = fn.flip(image, horizontal=1)
    return {"out": out, "mean": fn.reductions.mean(image)}


def predicate_int(fn, types, x):
    # An int32 predicate: a sample is True where it is not 0 (negative numbers are True).
    if x["n"]:
        out = x["n"] * 2
    else:
        out = x["n"] - 1
    return {"out": out}


def predicate_float(fn, types, x):
    if x["f"]:
        out = x["f"] * 2
    else:
        out = x["f"] - 1
    return {"out": out}


def no_sample_takes_branch(fn, types, x):
    # Every predicate False: the `if` branch gets an empty batch.
    if x["none"]:
        out = fn.flip(x["img"], horizontal=1)
    else:
        out = fn.brightness_contrast(x["img"], contrast=0.5)
    return {"out": out}


def every_sample_takes_branch(fn, types, x):
    if x["every"]:
        out = fn.flip(x["img"], horizontal=1)
    else:
        out = fn.brightness_contrast(x["img"], contrast=0.5)
    return {"out": out}


def if_in_for_loop(fn, types, x):
    # A Python loop (range) around an `if`: unrolled when traced.
    n = x["n"]
    for _ in range(3):
        if x["p"]:
            n = n + 1
        else:
            n = n * 2
    return {"out": n}


def _helper_with_if(image, predicate, fn):
    if predicate:
        return fn.flip(image, horizontal=1)
    return image


def helper_function(fn, types, x):
    # The `if` is in a function the definition calls: DALI converts it too.
    return {"out": _helper_with_if(x["img"], x["q"], fn)}


def python_condition(fn, types, x):
    # Not a DataNode: an ordinary Python `if`, one branch traced.
    if BATCH > 1:
        out = x["n"] + 1
    else:
        out = x["n"] - 1
    return {"out": out}


def layout_kept(fn, types, x):
    if x["p"]:
        out = fn.flip(x["img"], horizontal=1)
    else:
        out = fn.brightness_contrast(x["img"], contrast=2.0)
    return {"out": out}


def random_inputless_in_branch(fn, types, x):
    # fn.random.uniform without inputs inside a branch runs on the whole batch (DALI registers
    # inputless operators in the outermost scope) and the branch takes its samples.
    outside = fn.random.uniform(range=(0.0, 1.0), seed=1234)
    if x["p"]:
        inside = fn.random.uniform(range=(0.0, 1.0), seed=1234)
    else:
        inside = fn.random.uniform(range=(0.0, 1.0), seed=1234) + 10.0
    return {"inside": inside, "outside": outside}


def random_with_input_in_branch(fn, types, x):
    # fn.random.normal with an input inside a branch runs on the branch's samples only: sample
    # j of the branch (in batch order) draws what sample j of a whole batch draws.
    data = fn.cast(x["n"], dtype=types.FLOAT)
    outside = fn.random.normal(data, seed=4321)
    if x["p"]:
        inside = fn.random.normal(data, seed=4321)
    else:
        inside = fn.random.normal(data, seed=4321) + 100.0
    return {"inside": inside, "outside": outside}


CASES: dict[str, Case] = {
    f.__name__: f
    for f in (
        flip_or_identity,
        flip_or_brightness,
        rotate_keep_size,
        resize_in_branches,
        elif_chain,
        nested_if,
        nested_predicate_from_branch,
        two_outputs_one_if,
        changed_in_one_branch,
        assigned_in_one_branch_unused,
        constants_int,
        constants_float,
        constants_bool,
        constants_numpy,
        node_or_constant,
        return_in_branches,
        logical_results,
        logical_not_of_numbers,
        logical_comparisons,
        logical_with_constants,
        if_on_logical,
        predicate_from_mean,
        predicate_int,
        predicate_float,
        no_sample_takes_branch,
        every_sample_takes_branch,
        if_in_for_loop,
        helper_function,
        python_condition,
        layout_kept,
        random_inputless_in_branch,
        random_with_input_in_branch,
    )
}
# Module-level functions a case calls (their source is stored with the case's).
HELPERS: dict[str, tuple[Callable[..., Any], ...]] = {"helper_function": (_helper_with_if,)}
RELATIONS = {
    "random_inputless_in_branch": (
        "inside[i] == outside[i] where p[i]; inside[i] == 10 + (the draw of the same-seed op "
        "outside, sample i) where not p[i]: an inputless op in a branch draws for the whole batch"
    ),
    "random_with_input_in_branch": (
        "the j-th sample of a branch (batch order) gets outside[j] (+100 in the else branch): an "
        "op with inputs in a branch draws as if its sub-batch were a whole batch"
    ),
}


# ---------------------------------------------------------------------------------------------
# The cases DALI refuses.


def var_in_if_only(fn, types, x):
    if x["p"]:
        out = x["n"] + 1
    return {"out": out}  # defined in one branch only


def var_in_else_only(fn, types, x):
    if x["p"]:
        pass
    else:
        out = x["n"] + 1
    return {"out": out}


def return_in_if_only(fn, types, x):
    if x["p"]:
        return {"out": x["n"] + 1}


def tuple_vs_node(fn, types, x):
    if x["p"]:
        out = (x["n"], x["n"])
    else:
        out = x["n"]
    return {"out": out[0]}


def tuple_lengths(fn, types, x):
    if x["p"]:
        out = (x["n"], x["n"])
    else:
        out = (x["n"], x["n"], x["n"])
    return {"out": out[0]}


def dict_keys(fn, types, x):
    if x["p"]:
        out = {"a": x["n"]}
    else:
        out = {"b": x["n"]}
    return {"out": next(iter(out.values()))}


def types_differ(fn, types, x):
    if x["p"]:
        out = x["n"]
    else:
        out = fn.cast(x["n"], dtype=types.FLOAT)
    return {"out": out}


def image_or_int_constant(fn, types, x):
    # The int constant is int32, the image uint8.
    if x["p"]:
        out = x["img"]
    else:
        out = 0
    return {"out": out}


def constants_float_int(fn, types, x):
    if x["p"]:
        out = 1.5
    else:
        out = 2
    return {"out": out}


def ndims_differ(fn, types, x):
    if x["p"]:
        out = x["n"]
    else:
        out = fn.stack(x["n"], x["n"])
    return {"out": out}


def layouts_differ(fn, types, x):
    if x["p"]:
        out = x["img"]
    else:
        out = fn.reshape(x["img"], layout="")
    return {"out": out}


def list_constant_output(fn, types, x):
    # A list is a structure of two constants, not one constant: the output nests DataNodes.
    if x["p"]:
        out = [1, 2]
    else:
        out = [3, 4]
    return {"out": out}


def predicate_not_scalar(fn, types, x):
    if fn.stack(x["p"]):
        out = x["n"] + 1
    else:
        out = x["n"] - 1
    return {"out": out}


def predicate_gpu(fn, types, x):
    if x["p"].gpu():
        out = x["n"] + 1
    else:
        out = x["n"] - 1
    return {"out": out}


def and_int_left(fn, types, x):
    return {"out": x["n"] and x["p"]}


def and_int_right(fn, types, x):
    return {"out": x["p"] and x["n"]}


def or_float_right(fn, types, x):
    return {"out": x["p"] or x["f"]}


def and_python_int_right(fn, types, x):
    # The Python 1 becomes an int32 constant: not bool.
    return {"out": x["p"] and 1}


def and_not_scalar_left(fn, types, x):
    return {"out": fn.stack(x["p"]) and x["q"]}


def or_not_scalar_right(fn, types, x):
    return {"out": x["p"] or fn.stack(x["q"])}


def not_not_scalar(fn, types, x):
    return {"out": not fn.stack(x["p"])}


def and_gpu_left(fn, types, x):
    return {"out": x["p"].gpu() and x["q"]}


def while_on_node(fn, types, x):
    n = x["n"]
    while n < 10:
        n = n + 1
    return {"out": n}


def for_over_node(fn, types, x):
    total = x["n"]
    for value in x["n"]:
        total = total + value
    return {"out": total}


def ternary_on_node(fn, types, x):
    return {"out": x["n"] + 1 if x["p"] else x["n"] - 1}


ERROR_CASES: dict[str, Case] = {
    f.__name__: f
    for f in (
        var_in_if_only,
        var_in_else_only,
        return_in_if_only,
        tuple_vs_node,
        tuple_lengths,
        dict_keys,
        types_differ,
        image_or_int_constant,
        constants_float_int,
        ndims_differ,
        layouts_differ,
        list_constant_output,
        predicate_not_scalar,
        predicate_gpu,
        and_int_left,
        and_int_right,
        or_float_right,
        and_python_int_right,
        and_not_scalar_left,
        or_not_scalar_right,
        not_not_scalar,
        and_gpu_left,
        while_on_node,
        for_over_node,
        ternary_on_node,
    )
}


def _core_message(exc: BaseException, stage: str) -> tuple[str, str | None]:
    """DALI's own message of ``exc`` and, for a run-time error, the operator it names."""
    text = str(exc)
    operator = None
    match = re.search(r"Error in (?:CPU|GPU|MIXED) operator `([^`]+)`", text)
    if match:
        operator = match.group(1)
    if "encountered:" in text:
        text = text.split("encountered:", 1)[1]
    elif "in user code:" in text:
        # AutoGraph's wrapper: a traceback, then "    ExcType: message" (indented).
        name = type(exc).__name__
        at = text.rfind(f"\n    {name}: ")
        text = text[at + len(f"\n    {name}: ") :] if at >= 0 else text
        text = "\n".join(line[4:] if line.startswith("    ") else line for line in text.split("\n"))
    lines = [
        line.rstrip()
        for line in text.strip().split("\n")
        if "C++ context" not in line and "no longer valid" not in line
    ]
    message = "\n".join(lines).strip()
    message = re.sub(r"0x[0-9a-fA-F]+", "0x...", message)
    return message, operator


def main() -> None:
    import warnings

    warnings.filterwarnings("ignore")
    from nvidia.dali import fn, pipeline_def, types

    batches = input_batches()
    store: dict[str, np.ndarray] = {}
    for name, batch in batches.items():
        for i, sample in enumerate(batch):
            store[f"input/{name}/{i}"] = sample

    case_output_names: dict[str, list[str]] = {}

    def definition(case: Case) -> Callable[[], Any]:
        def pipe() -> Any:
            results = case(fn, types, inputs(fn, batches))
            case_output_names[case.__name__] = list(results.keys())
            return tuple(results.values())

        return pipe

    meta: dict[str, dict[str, Any]] = {}
    for name, case in CASES.items():
        p = pipeline_def(
            definition(case),
            enable_conditionals=True,
            batch_size=BATCH,
            num_threads=1,
            device_id=None,
            seed=7,
        )()
        p.build()
        outs = p.run()
        output_names = case_output_names[name]
        for output_name, out in zip(output_names, outs, strict=True):
            store[f"layout/{name}/{output_name}"] = np.array(out.layout())
            for i in range(BATCH):
                store[f"case/{name}/{output_name}/{i}"] = np.array(out.at(i))
        helpers = [inspect.getsource(h) for h in HELPERS.get(name, ())]
        meta[name] = {
            "source": "\n\n".join([*helpers, inspect.getsource(case)]),
            "outputs": output_names,
            "compare": RELATIONS.get(name, "exact"),
        }
        shapes = [(o, np.array(outs[j].at(0)).dtype.name) for j, o in enumerate(output_names)]
        print(f"{name}: {shapes}")
    store["cases"] = np.array(json.dumps(meta, indent=1))

    errors: dict[str, dict[str, Any]] = {}
    for name, case in ERROR_CASES.items():
        stage = "trace"
        try:
            p = pipeline_def(
                definition(case),
                enable_conditionals=True,
                batch_size=BATCH,
                num_threads=1,
                device_id=None,
                seed=7,
            )()
            stage = "build"
            p.build()
            stage = "run"
            p.run()
        except Exception as exc:  # what DALI raises is what is recorded
            message, operator = _core_message(exc, stage)
            errors[name] = {
                "type": type(exc).__name__,
                "stage": stage,
                "operator": operator,
                "message": message,
                "source": inspect.getsource(case),
            }
            print(f"{name}: {stage} {type(exc).__name__}: {message.splitlines()[0][:100]}")
        else:
            raise AssertionError(f"DALI accepted the error case {name}")

    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **store)
    ERRORS_OUT.write_text(json.dumps(errors, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size / 1e6:.2f} MB, {len(store)} entries)")
    print(f"wrote {ERRORS_OUT} ({len(errors)} cases)")


if __name__ == "__main__":
    main()
