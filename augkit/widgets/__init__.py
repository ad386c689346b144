"""Interactive views of a pipeline in Jupyter (ipywidgets): ``Viewer``.

Example:
    >>> import numpy as np
    >>> from augkit import fn, pipeline_def
    >>> from augkit.widgets import Viewer
    >>> ramp = np.repeat(np.arange(0, 240, 5, dtype=np.uint8), 32 * 3).reshape(48, 32, 3)
    >>> @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=1)
    ... def flips():
    ...     images = fn.external_source(source=lambda: [ramp] * 4, layout="HWC")
    ...     return fn.flip(images, vertical=fn.random.coin_flip(), name="flip")
    >>> pipe = flips()
    >>> viewer = Viewer(pipe)
    >>> viewer  # doctest: +SKIP
    >>> # ^ the last line of a cell shows it: buttons, node picker, grid, sliders
    >>> viewer.node_picker.value
    'flip'
    >>> pipe.close()
"""

from augkit.widgets.viewer import Viewer

__all__ = ["Viewer"]
