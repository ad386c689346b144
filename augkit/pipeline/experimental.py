"""DALI's ``nvidia.dali.pipeline.experimental``, where DALI's EfficientNet example and others
import ``pipeline_def`` from (debug mode's home in DALI): the same ``pipeline_def`` and
``Pipeline`` as ``augkit.pipeline``, so that ``from augkit.pipeline.experimental import
pipeline_def`` answers the import DALI code makes (``debug=True`` works with either).

Example:
    >>> from augkit.pipeline.experimental import pipeline_def
    >>> from augkit import fn
    >>> @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1, debug=True)
    ... def coins():
    ...     return fn.random.coin_flip(probability=1.0)
    >>> coins().run()[0].as_array().tolist()
    [1, 1]
"""

from augkit.pipeline import Pipeline, pipeline_def

__all__ = ["Pipeline", "pipeline_def"]
