"""Operators as classes, DALI's ``nvidia.dali.ops``: ``ops.readers.File``, ``ops.decoders.Image``,
``ops.Resize``, ``ops.PythonFunction``, ``ops.DLTensorPythonFunction``, ..., and DALI's legacy
aliases (``ops.FileReader``, ``ops.ImageDecoder``).

Create an operator with its arguments, call it with inputs (inside ``define_graph``). Calling it
with lists of inputs runs it once per list element (DALI's "multiple input sets"):

    decode = ops.decoders.Image(output_type=types.RGB)
    images1, images2 = decode([jpegs1, jpegs2])
"""

import sys

import augkit.operators  # noqa: F401  (fills the registry)
from augkit.frontends import populate_ops

populate_ops(sys.modules[__name__])
