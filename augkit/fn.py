"""Functional operators, DALI's ``nvidia.dali.fn``: ``fn.readers.file``, ``fn.decoders.image``,
``fn.resize``, ``fn.crop_mirror_normalize``, ``fn.python_function``, ``fn.random.uniform``, ...

Each is generated from the operator registry (``augkit.operators``); ``help(fn.resize)`` lists
its arguments. ``fn.resize(x, **kwargs)`` is ``ops.Resize(**kwargs)(x)``.

Example:
    >>> from augkit import fn
    >>> "uniform" in dir(fn.random)
    True
"""

import sys

import augkit.operators  # noqa: F401  (fills the registry)
from augkit.frontends import populate_fn

populate_fn(sys.modules[__name__])

# DALI's split and merge, called by hand in its conditionals tutorial (not in the registry:
# they are the graph nodes of an `if`).
from augkit.conditionals import manual as _conditional  # noqa: E402, F401
