"""augkit's import graph (issue 26, "Done when": at most 2 small cycles; none is left, so none
may come back), deferred imports inside functions counted; and no import from a module under
augkit/operators/ up into a front end (``fn``, ``eager``, ``pipeline``, ...). Measured by
tools/import_cycles.py, which reads the sources with ``ast`` and imports nothing."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "tools" / "import_cycles.py"

_spec = importlib.util.spec_from_file_location("import_cycles", SCRIPT)
assert _spec is not None and _spec.loader is not None
import_cycles = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = import_cycles  # dataclasses looks the module up by name
_spec.loader.exec_module(import_cycles)


def test_augkit_has_no_import_cycle():
    edges = import_cycles.imports(ROOT)
    found = import_cycles.cycles(edges)
    assert not found, import_cycles.report(ROOT)


def test_no_operator_module_imports_a_front_end():
    up = import_cycles.upward(import_cycles.imports(ROOT))
    assert not up, "\n".join(map(str, up))


def _package(root: pathlib.Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / "augkit" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_the_script_finds_deferred_cycles_and_upward_imports(tmp_path):
    """A cycle closed by an import inside a function, one at module level through a relative
    import, an upward import, and what does not count: TYPE_CHECKING, an outside package."""
    _package(
        tmp_path,
        {
            "__init__.py": "",
            "a.py": "def f():\n    from augkit import b\n",
            "b.py": "import augkit.a\nimport numpy\n",
            "fn.py": "",
            "pipeline/__init__.py": "from . import runner\n",
            "pipeline/runner.py": "from augkit.pipeline import run\n",
            "operators/__init__.py": "from augkit.operators import base\n",
            "operators/base.py": """\
                from typing import TYPE_CHECKING
                if TYPE_CHECKING:
                    from augkit import a
                def g():
                    from augkit.fn import thing
                """,
        },
    )
    edges = import_cycles.imports(tmp_path)
    assert import_cycles.cycles(edges) == [
        ["augkit.a", "augkit.b"],
        ["augkit.pipeline", "augkit.pipeline.runner"],
    ]
    assert [(e.source, e.target, e.line, e.deferred) for e in import_cycles.upward(edges)] == [
        ("augkit.operators.base", "augkit.fn", 5, True)
    ]
    assert not any(e.target == "augkit.a" and e.source.startswith("augkit.op") for e in edges)
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--root", str(tmp_path), "--count"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out == "cycles=2 modules=4 upward=1\n"
