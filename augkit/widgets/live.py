"""Live edits: an open ``Viewer`` follows the functions redefined in the notebook.

After every cell (IPython's ``post_run_cell`` event), each open viewer looks, for each of its
Python operators, at the name its function was defined under (``function.__name__``) in the
user's namespace. A *new* function there (another object: the cell that defines it ran again,
edited or not) replaces the old one through ``Viewer.update``: the same batch, through the new
code, with the controls' values kept. An error in the new code shows in the viewer's error
panel and the old grid stays.

Decisions and traps:

- One callback per shell, registered once (``attach``); it holds the viewers weakly
  (``weakref.WeakSet``), so a viewer that is gone is never updated and is not kept alive.
  ``Viewer.live = False`` stops a viewer following.
- Only a plain function (``inspect.isfunction``) under the same name counts: a lambda, a class
  or a value the name now holds are left alone, and so is a function whose ``__name__`` differs
  from the name it sits under (``brighten = make_brightener(2)`` returning ``inner``), which is
  not a redefinition of ``brighten``.
- A cell that fails (``result.success`` false) changes nothing: its half-made definitions are
  not picked up.
- The hook runs in the kernel's main thread between cells, like a button's callback: nothing
  runs concurrently with the user's code.
"""

from __future__ import annotations

import weakref
from typing import Any

_viewers: weakref.WeakSet[Any] = weakref.WeakSet()
_shells: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def attach(shell: Any) -> None:
    """Register the ``post_run_cell`` callback on ``shell`` (an IPython
    ``InteractiveShell``), once per shell."""
    if shell is None or shell in _shells:
        return

    def after_cell(result: Any) -> None:
        if not getattr(result, "success", True):
            return
        follow(shell.user_ns)

    shell.events.register("post_run_cell", after_cell)
    _shells[shell] = after_cell


def watch(viewer: Any) -> None:
    """Make ``viewer`` follow the cells of the running IPython shell (none: nothing)."""
    _viewers.add(viewer)
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython comes with ipywidgets
        return
    attach(get_ipython())


def follow(namespace: dict[str, Any]) -> None:
    """Update every watched viewer from ``namespace`` (see the module docstring)."""
    for viewer in list(_viewers):
        if getattr(viewer, "live", False):
            viewer._follow(namespace)
