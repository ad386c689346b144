"""One row per registered operator: what every registry-wide test needs to use it.

Adding an operator means writing its module and one row in ``CASES`` below, nothing else; the
registry-wide tests read the row:

- ``tests/test_debug.py``: the row's ``body`` runs in a normal pipeline, in debug mode and
  through ``augkit.eager``, which must agree bit for bit;
- ``tests/test_fuzz.py``: drawn arguments and inputs, with what the row holds fixed; at least one
  example must give an output (the kernel ran);
- ``tests/test_bad_arguments.py``: every row's ``body`` builds, and, given a GPU device where
  there is none, is a DeviceError at build;
- ``tests/test_operator_cases.py``: every registered operator has a row, and no row is stale.

A row for an operator ``hue`` (one image input, a required per-sample ``hue`` argument)::

    "hue": OperatorCase(
        input="images",
        body=lambda op, x: (op("hue")(x, hue=_uniform(op, -30, 30)),),
        required={"hue": 10.0},
    ),

Decisions and traps:

- ``body`` calls operators as ``op("hue")(...)``, never ``fn.hue``: the parity tests give it
  ``fn``'s operators in a pipeline and ``augkit.eager``'s outside one, so one body serves both.
  Give random operators' values to per-sample arguments where the operator takes them
  (``_uniform`` below): debug == normal is only worth checking on random draws.
- ``required`` is for the fuzzer, which draws up to three arguments per call and would never
  get past an operator's argument check without them: every argument whose default is
  ``REQUIRED`` must be there (or in ``held``), and so must what the operator needs in practice
  (resize: a size). A drawn value replaces a ``required`` one.
- ``held`` is never drawn: a Python operator's ``function`` (a valid one; its own failures are
  the user's, not augkit's).
- The fuzzer draws how many inputs to give from the schema (``min_inputs``/``max_inputs``) and
  what they are from ``input``: "jpegs" gets encoded files (whole or cut short) or arrays,
  anything else gets arrays.
"""

from __future__ import annotations

import pathlib
from typing import Any

import numpy as np
import pytest

from augkit import types
from augkit.operators.registry import REGISTRY
from tests.cases._row import OperatorCase, _uniform

IMAGES = pathlib.Path(__file__).resolve().parents[1] / "data" / "images"
# The parity tests' batch size (tests/test_debug.py): the external source's row gives batches
# of it.
BATCH = 4


# --- what the rows use ---------------------------------------------------------------------------


def _jitter(image: np.ndarray) -> np.ndarray:
    """Draws from numpy's global generator: seeded per (iteration, sample) by augkit."""
    noise = np.random.randint(0, 8, size=image.shape)
    return (image.astype(np.int32) + noise).astype(np.uint8)


def _halves(image: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    w = image.shape[1] // 2
    return image[:, :w], image[:, w:]


def _dlpack_mirror(capsules: list[Any]) -> list[Any]:
    from torch.utils import dlpack

    return [dlpack.to_dlpack(dlpack.from_dlpack(c).flip(1).contiguous()) for c in capsules]


def _torch_brighten(tensor: Any) -> Any:
    return (tensor.float() * 1.25).clamp(0, 255).to(tensor.dtype)


def _numbered(iteration: int) -> list[np.ndarray]:
    """An external source's batch that depends on the iteration."""
    return [np.full((2, 3), iteration * 10 + k, np.int32) for k in range(BATCH)]


def _identity(*xs: Any) -> Any:
    """The fuzzer's Python function: gives back what it gets (any number of inputs)."""
    return xs[0] if len(xs) == 1 else xs


def _dlpack_identity(*capsules: Any) -> Any:
    from torch.utils import dlpack

    out = [
        dlpack.to_dlpack(dlpack.from_dlpack(c).clone()) if not isinstance(c, list) else c
        for c in capsules
    ]
    return out[0] if len(out) == 1 else tuple(out)


# --- the table -----------------------------------------------------------------------------------

CASES: dict[str, OperatorCase] = {
    "cast": OperatorCase(
        input="images",
        body=lambda op, x: (op("cast")(x, dtype=types.INT16),),
        required={"dtype": types.FLOAT},
    ),
    "crop": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("crop")(
                x,
                crop=(12, 20),
                crop_pos_x=_uniform(op, 0, 1),
                crop_pos_y=_uniform(op, 0, 1),
            ),
        ),
    ),
    "crop_mirror_normalize": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("crop_mirror_normalize")(
                x,
                crop=(16, 16),
                crop_pos_x=_uniform(op, 0, 1),
                mirror=op("random.coin_flip")(),
                mean=[120.0, 110.0, 100.0],
                std=[60.0, 55.0, 50.0],
            ),
        ),
    ),
    "decoders.image": OperatorCase(
        input="jpegs",
        body=lambda op, x: (op("decoders.image")(x, output_type=types.RGB),),
    ),
    "dl_tensor_python_function": OperatorCase(
        input="images",
        body=lambda op, x: (op("dl_tensor_python_function")(x, function=_dlpack_mirror),),
        held={"function": _dlpack_identity},
    ),
    "external_source": OperatorCase(
        input="none",
        body=lambda op, x: (op("external_source")(source=_numbered, layout="AB"),),
        source_argument="source",
    ),
    "flip": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("flip")(
                x,
                horizontal=op("random.coin_flip")(),
                vertical=op("random.coin_flip")(probability=0.3),
            ),
        ),
    ),
    "python_function": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("python_function")(x, function=_jitter),
            *op("python_function")(x, function=_halves, num_outputs=2),
        ),
        held={"function": _identity},
    ),
    "random.coin_flip": OperatorCase(
        input="none",
        body=lambda op, x: (op("random.coin_flip")(probability=_uniform(op, 0, 1), shape=[5]),),
    ),
    "random.uniform": OperatorCase(
        input="none",
        body=lambda op, x: (
            op("random.uniform")(range=(-2, 2), shape=[3]),
            op("random.uniform")(values=[1.0, 2.5, 7.0]),
        ),
    ),
    "readers.file": OperatorCase(
        input="none",
        body=lambda op, x: op("readers.file")(
            file_root=str(IMAGES), random_shuffle=True, initial_fill=5, name="second"
        ),
        eager=False,
        required={"file_root": str(IMAGES)},
        required_unless=("files", "file_list"),
    ),
    "resize": OperatorCase(
        input="images",
        body=lambda op, x: (
            op("resize")(x, resize_x=_uniform(op, 10, 40), resize_y=_uniform(op, 10, 40)),
        ),
        required={"resize_x": 7.0, "resize_y": 5.0},
        required_unless=("size", "resize_shorter", "resize_longer"),
    ),
    "rotate": OperatorCase(
        input="images",
        body=lambda op, x: (op("rotate")(x, angle=_uniform(op, -45, 45), fill_value=0),),
        required={"angle": 30.0},
    ),
    "torch_python_function": OperatorCase(
        input="images",
        body=lambda op, x: (op("torch_python_function")(x, function=_torch_brighten),),
        held={"function": _identity},
    ),
}


def _family_rows() -> None:
    """The rows of ``tests/cases/<family>.py`` (``CASES`` there), one file per family of
    operators, merged into ``CASES``: a name in two files is an error."""
    import importlib
    import pkgutil

    from tests import cases as package

    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue  # _row: what a row is
        rows = importlib.import_module(f"tests.cases.{info.name}").CASES
        for name, row in rows.items():
            if name in CASES:
                raise ValueError(f"tests/cases/{info.name}.py: {name} has a row already")
            CASES[name] = row


_family_rows()

# Every operator a user can call (``augkit.fn``, ``augkit.ops``, the plugin), in name order.
PUBLIC = sorted(name for name, schema in REGISTRY.items() if schema.public)


def case(name: str) -> OperatorCase:
    """The row of operator ``name``; a test of an operator without one fails saying so."""
    if name not in CASES:
        pytest.fail(
            f"{name} has no row in tests/operator_cases.py's CASES "
            f"(see tests/test_operator_cases.py)"
        )
    return CASES[name]
