"""Interactive views of a pipeline in Jupyter (ipywidgets): ``Viewer``.

Example:
    >>> from augkit.widgets import Viewer
    >>> Viewer(pipe)  # the last line of a cell: buttons, node picker, grid, sliders
"""

from augkit.widgets.viewer import Viewer

__all__ = ["Viewer"]
