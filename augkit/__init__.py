"""augkit: prototype image augmentations in Jupyter with DALI's pipeline API, on any machine.

    from augkit import Pipeline, pipeline_def, fn, ops, types

See ``docs/architecture.md`` for the layers and ``README.md`` for the Quickstart.
"""

from augkit import auto_aug, fn, math, ops, types
from augkit.errors import ArgumentError, AugkitError, DeviceError, GraphError, OperatorError
from augkit.pipeline import Pipeline, pipeline_def
from augkit.subscripts import newaxis
from augkit.tensors import Tensor, TensorList

__version__ = "0.1.0"

__all__ = [
    "ArgumentError",
    "AugkitError",
    "DeviceError",
    "GraphError",
    "OperatorError",
    "Pipeline",
    "Tensor",
    "TensorList",
    "auto_aug",
    "fn",
    "math",
    "newaxis",
    "ops",
    "pipeline_def",
    "types",
]
