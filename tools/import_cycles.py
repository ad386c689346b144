"""Print augkit's import cycles, and any import from an operator module up into a front end.

The graph has one edge per import of an augkit module, read with `ast` (nothing is imported):
module-level imports, and apart from them the deferred ones written inside a function, which
close a cycle as surely at run time (the 21-module circle of issue 26 was closed by four of
them). Imports under `if TYPE_CHECKING:` never run and are left out. `from pkg import name`
is an edge to `pkg.name` where that is a module, else to `pkg`; importing `pkg.sub` runs
`pkg/__init__.py` too, but that is not an edge here (every operator module would be in a cycle
with `augkit.operators`, which imports them to register them, and Python orders that fine).

A cycle is a strongly connected component of two or more modules; for each, the imports
between its modules are printed with file, line and whether they are deferred.

    python tools/import_cycles.py            # the cycles, and the upward imports
    python tools/import_cycles.py --count    # one line: cycles, modules in them, upward imports

tests/test_import_cycles.py holds augkit to at most 2 cycles of at most 3 modules each, and no
upward import (issue 26, "Done when").
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "augkit"
OPERATORS = "augkit.operators"
# The modules a user calls and the clients above the core: an operator module never imports
# these (issue 26 §3), the front ends import the operators.
FRONT_ENDS = tuple(
    f"{PACKAGE}.{name}"
    for name in (
        "fn",
        "ops",
        "eager",
        "frontends",
        "subscripts",
        "pipeline",
        "debug",
        "widgets",
        "viz",
        "plugin",
        "ray",
        "auto_aug",
        "conditionals",
        "math",
    )
)


@dataclass(frozen=True)
class Import:
    """One import of an augkit module: who imports what, where, and whether in a function."""

    source: str
    target: str
    path: str
    line: int
    deferred: bool

    def __str__(self) -> str:
        where = "deferred" if self.deferred else "module level"
        return f"{self.source} -> {self.target}  ({self.path}:{self.line}, {where})"


def modules(root: Path) -> dict[str, Path]:
    """``{module name: file}`` for every .py file of the package under ``root``."""
    found = {}
    for path in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _statements(tree: ast.Module):
    """``(import statement, deferred)`` for every import that can run, in file order."""

    def walk(node: ast.AST, deferred: bool):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for other in child.orelse:
                    yield from walk(other, deferred)
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield child, deferred
            inner = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            yield from walk(child, deferred or inner)

    yield from walk(tree, False)


def _absolute(statement: ast.ImportFrom, name: str, is_package: bool) -> str:
    """The module a ``from`` statement names, relative imports resolved against ``name``."""
    if not statement.level:
        return statement.module or ""
    base = name.split(".")
    base = base[: len(base) - statement.level + (1 if is_package else 0)]
    return ".".join(base + ([statement.module] if statement.module else []))


def imports(root: Path) -> list[Import]:
    """Every import of an augkit module by an augkit module, in module and line order."""
    known = modules(root)
    found = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(), filename=str(path))
        shown = str(path.relative_to(root))
        for statement, deferred in _statements(tree):
            if isinstance(statement, ast.Import):
                targets = [alias.name for alias in statement.names]
            else:
                module = _absolute(statement, name, path.name == "__init__.py")
                targets = [
                    f"{module}.{alias.name}" if f"{module}.{alias.name}" in known else module
                    for alias in statement.names
                ]
            for target in dict.fromkeys(targets):
                if target in known and target != name:
                    found.append(Import(name, target, shown, statement.lineno, deferred))
    return found


def cycles(edges: list[Import]) -> list[list[str]]:
    """The strongly connected components of two or more modules (Tarjan), each sorted, the
    largest first."""
    graph: dict[str, list[str]] = {}
    for edge in edges:
        graph.setdefault(edge.source, []).append(edge.target)
        graph.setdefault(edge.target, [])
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for node in sorted(graph):
            if node not in index:
                visit(node)
    finally:
        sys.setrecursionlimit(limit)
    return sorted(components, key=lambda c: (-len(c), c))


def _under(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def upward(edges: list[Import]) -> list[Import]:
    """The imports from a module under augkit/operators/ into a front end."""
    return [e for e in edges if _under(e.source, (OPERATORS,)) and _under(e.target, FRONT_ENDS)]


def closing(edges: list[Import], component: list[str]) -> list[Import]:
    """The imports between the modules of one cycle."""
    inside = set(component)
    return [e for e in edges if e.source in inside and e.target in inside]


def report(root: Path) -> str:
    """What the script prints: each cycle with its imports, then the upward imports."""
    edges = imports(root)
    found = cycles(edges)
    top = cycles([e for e in edges if not e.deferred])
    up = upward(edges)
    lines = [f"{len(found)} import cycles ({len(top)} with module-level imports alone)"]
    for number, component in enumerate(found, 1):
        lines.append(f"cycle {number}, {len(component)} modules: {', '.join(component)}")
        lines += [f"    {edge}" for edge in closing(edges, component)]
    lines.append(f"{len(up)} imports from an operator module into a front end")
    lines += [f"    {edge}" for edge in up]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--count", action="store_true", help="one line of counts")
    options = parser.parse_args(argv)
    if options.count:
        edges = imports(options.root)
        found = cycles(edges)
        print(f"cycles={len(found)} modules={sum(map(len, found))} upward={len(upward(edges))}")
    else:
        print(report(options.root))
    return 0


if __name__ == "__main__":
    sys.exit(main())
