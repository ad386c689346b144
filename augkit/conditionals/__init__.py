"""DALI's conditionals: ``if``/``elif``/``else``, ``and``, ``or`` and ``not`` on per-sample
DataNodes in a pipeline definition, with ``enable_conditionals=True``.

    >>> from augkit import fn, pipeline_def, types
    >>> @pipeline_def(batch_size=8, num_threads=1, device_id=None, seed=1, enable_conditionals=True)
    ... def pipe():
    ...     x = fn.random.uniform(range=(0, 10))
    ...     if fn.random.coin_flip(probability=0.3, dtype=types.BOOL):
    ...         x = x + 100
    ...     return x
    >>> (values,) = pipe().run()

Each sample takes its own branch; the operators in a branch compute only the samples that take
it, and what the branches assign is merged back in sample order. How: the definition's code is
converted (``rewrite``) into calls of ``statements``, which split the batch into conditional
scopes (``augkit.scopes``) and merge it again (``augkit.operators.conditional``).

``select(branches, index, args, kwargs)`` makes the same per-sample choice among several
functions, for library code (``augkit.auto_aug``'s policies); ``enabled()`` says whether the
pipeline being defined has conditionals.
"""

from augkit.conditionals.rewrite import convert, do_not_convert
from augkit.conditionals.statements import enabled, enabling, select

__all__ = ["convert", "do_not_convert", "enabled", "enabling", "select"]
