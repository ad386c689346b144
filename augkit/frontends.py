"""Generates the user-facing front ends from the one registry: functions for ``augkit.fn``
(``fn.readers.file(...)``) and classes for ``augkit.ops`` (``ops.readers.File(...)``, with
DALI's legacy aliases such as ``ops.FileReader``). An operator is written once, in
``augkit.operators``; it appears here by itself.
"""

from __future__ import annotations

import sys
import types as pytypes
from typing import Any

from augkit.graph import docstring, operator_class
from augkit.operators.registry import REGISTRY, OperatorSchema


def make_function(schema: OperatorSchema, module: str) -> Any:
    cls = operator_class(schema)

    def operator_function(*inputs: Any, **kwargs: Any) -> Any:
        if schema.positional and schema.max_inputs == 0:  # fn.external_source(source, 2)
            return cls(*inputs, **kwargs)()
        return cls(**kwargs)(*inputs)

    short = schema.name.rsplit(".", 1)[-1]
    operator_function.__name__ = short
    operator_function.__qualname__ = schema.name
    operator_function.__module__ = module
    operator_function.__doc__ = docstring(schema, "fn")
    return operator_function


def _namespace(root: pytypes.ModuleType, dotted: str) -> tuple[pytypes.ModuleType, str]:
    """The (sub)module of ``root`` that holds the last part of ``dotted``, made as needed."""
    *parents, last = dotted.split(".")
    module = root
    for part in parents:
        child = getattr(module, part, None)
        if child is None:
            child = pytypes.ModuleType(f"{module.__name__}.{part}")
            child.__doc__ = f"The {part} operators of {root.__name__}."
            setattr(module, part, child)
            sys.modules[child.__name__] = child
        module = child
    return module, last


def populate_fn(fn_module: pytypes.ModuleType, where: str = "") -> None:
    """Put a function for every registered operator whose ``module`` is ``where``."""
    for schema in REGISTRY.values():
        if schema.module == where:
            holder, short = _namespace(fn_module, schema.name)
            function = make_function(schema, holder.__name__)
            setattr(holder, short, function)
            for alias in schema.fn_aliases:  # "file_reader", or dotted: "experimental.filter"
                alias_holder, alias_short = _namespace(fn_module, alias)
                setattr(alias_holder, alias_short, function)


def populate_ops(ops_module: pytypes.ModuleType, where: str = "") -> None:
    """Put the class of every registered operator whose ``module`` is ``where``, and its
    legacy aliases."""
    for schema in REGISTRY.values():
        if schema.module == where:
            cls = operator_class(schema)
            holder, short = _namespace(ops_module, schema.class_name)
            setattr(holder, short, cls)
            for alias in schema.aliases:
                alias_holder, alias_short = _namespace(ops_module, alias)
                setattr(alias_holder, alias_short, cls)
