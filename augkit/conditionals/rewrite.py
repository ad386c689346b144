"""The conversion of a pipeline definition's code (DALI does it with a fork of AutoGraph; an
``ast`` rewrite is enough here): ``if``/``elif``/``else``, ``and``, ``or``, ``not`` and
``a if c else b`` become calls of ``augkit.conditionals.statements``, which do what Python
does on Python values and choose per sample on DataNodes.

An ``if`` becomes two functions, one per branch, that take the variables the statement assigns
and return their new values::

    if do_rotate:                          def _if_body_0(result):
        result = fn.rotate(images, ...)        result = fn.rotate(images, ...)
    else:                                      return (result,)
        result = images                    def _if_orelse_0(result):
                                               result = images
                                               return (result,)
                                           (result,) = _ak.if_stmt(do_rotate, _if_body_0,
                                               _if_orelse_0, (result,), ("result",), ...)

and ``a and b`` becomes ``_ak.and_(lambda: a, lambda: b)``.

Decisions and traps:

- The converted function keeps the user's file name and line numbers (the new nodes take the
  ``if``'s), so tracebacks point at the user's lines; it keeps the original's globals (the
  module's, live), defaults and closure cells (a definition inside a test function that reads
  the test's variables works). ``_ak`` reaches the function as one more closure cell.
- Variables an ``if`` assigns are set to ``Undefined`` at the start of the function (where they
  are not parameters), so that passing them to the branch functions never raises
  UnboundLocalError; an ``Undefined`` that is used is DALI's error.
- Only variables read after the ``if`` (at a later line of the function, or anywhere in a loop
  around it) are merged: a branch's temporaries make no merge nodes.
- An ``if`` whose branches ``return`` (other than as the last statement of every branch),
  ``break``, ``continue``, ``yield`` or assign ``global``/``nonlocal`` names stays Python's:
  its test is wrapped so that a DataNode there is a clear error.
- Every call in the definition goes through ``call`` (this module's, one more closure cell of
  the converted function, as ``_ak`` is), which converts the function called when it is the
  user's (``convertible``: not augkit's, the standard library's or an installed
  package's, not marked ``do_not_convert``), as DALI converts helper functions; conversions are
  cached by code object. Nested functions, lambdas and classes written in the definition are
  converted when they are called, not where they are written.
- The source must be readable (``inspect.getsource``): functions typed in a notebook cell are
  (IPython keeps every cell); a function made by ``exec`` of a string is not, and is used as
  it is.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import os
import sysconfig
import textwrap
import types
import weakref
from collections.abc import Callable
from typing import Any, TypeGuard

from augkit.conditionals import statements

_RUNTIME = "_augkit_conditionals_"  # the closure cell of the converted code's `_ak`
_CALL = "_augkit_call_"  # and of `call`, through which it calls every function
_converted: weakref.WeakKeyDictionary[Any, types.CodeType | None] = weakref.WeakKeyDictionary()
_BARRIERS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def do_not_convert(func: Callable[..., Any]) -> Callable[..., Any]:
    """Mark ``func`` so that a definition with conditionals calls it as it is, unconverted
    (DALI's ``nvidia.dali.pipeline.do_not_convert``): for a function that builds other
    functions (a source factory) or whose ``if``s must stay Python's.

    Example:
        >>> from augkit.pipeline import do_not_convert
        >>> @do_not_convert
        ... def source_factory(size):
        ...     return lambda info: size
    """
    func.__augkit_do_not_convert__ = True  # type: ignore[attr-defined]
    return func


def convertible(func: Any) -> bool:
    """Whether a function a converted definition calls is converted too: a Python function
    (or method) of the user's, not augkit's, the standard library's or an installed
    package's, and not marked ``do_not_convert``."""
    func = getattr(func, "__func__", func)
    if not isinstance(func, types.FunctionType) or func.__dict__.get("__augkit_do_not_convert__"):
        return False
    if func.__dict__.get("__augkit_converted__"):
        return False
    filename = os.path.abspath(func.__code__.co_filename)
    return not filename.startswith(_library_dirs())


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    dirs.add(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # augkit
    return tuple(os.path.join(os.path.abspath(d), "") for d in dirs)


def convert(func: Callable[..., Any]) -> Callable[..., Any]:
    """``func`` with its ``if``/``and``/``or``/``not``/conditional expressions made
    per-sample on DataNodes; ``func`` itself when it has none or its source cannot be read.

    Example:
        >>> from augkit.conditionals import convert
        >>> def f(x):
        ...     if x > 1:
        ...         y = "big"
        ...     else:
        ...         y = "small"
        ...     return y
        >>> convert(f)(3)
        'big'
    """
    if isinstance(func, types.MethodType):
        return types.MethodType(convert(func.__func__), func.__self__)
    if not isinstance(func, types.FunctionType) or func.__dict__.get("__augkit_converted__"):
        return func
    code = func.__code__
    if code not in _converted:
        _converted[code] = _convert_code(func)
    new_code = _converted[code]
    if new_code is None:
        return func
    cells = dict(zip(code.co_freevars, func.__closure__ or (), strict=True))
    cells[_RUNTIME] = types.CellType(statements)
    cells[_CALL] = types.CellType(call)
    closure = tuple(cells[name] for name in new_code.co_freevars)
    converted = types.FunctionType(
        new_code, func.__globals__, func.__name__, func.__defaults__, closure
    )
    converted.__kwdefaults__ = func.__kwdefaults__
    converted.__qualname__ = func.__qualname__
    converted.__doc__ = func.__doc__
    converted.__module__ = func.__module__
    converted.__dict__.update(func.__dict__)
    converted.__wrapped__ = func  # type: ignore[attr-defined]
    converted.__augkit_converted__ = True  # type: ignore[attr-defined]
    return converted


def call(function: Any, /, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, the function converted first when it is the user's
    (``convertible``): a helper with an ``if`` on a DataNode works in it too. A converted
    definition calls every function through this."""
    if convertible(function):
        function = convert(function)
    return function(*args, **kwargs)


def _convert_code(func: types.FunctionType) -> types.CodeType | None:
    try:
        source = inspect.getsource(func)
        filename = inspect.getsourcefile(func) or func.__code__.co_filename
    except (OSError, TypeError):
        return None
    # Kept indented as it was (under an `if 1:`), so that column offsets stay the user's.
    first = source.lstrip("\n").splitlines()[0]
    if first[: len(first) - len(first.lstrip())]:
        source, shift = "if 1:\n" + source, 2
    else:
        source, shift = textwrap.dedent(source), 1
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    fdef = tree.body[0].body[0] if shift == 2 else tree.body[0]  # type: ignore[attr-defined]
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)) or fdef.name != func.__name__:
        return None  # a lambda, or source that is not this function's
    if not any(
        isinstance(n, (ast.If, ast.BoolOp, ast.IfExp, ast.Call)) or _is_not(n) for n in _own(fdef)
    ):
        return None  # nothing to convert, and no function called that could need it
    labels = {
        id(n): " ".join((ast.get_source_segment(source, n.test) or "").split())
        for n in ast.walk(fdef)
        if isinstance(n, (ast.If, ast.IfExp))
    }
    ast.increment_lineno(tree, func.__code__.co_firstlineno - shift)
    fdef.decorator_list = []
    _Converter(fdef, labels).convert()
    # type_params: a field from Python 3.12 on, set for it; the 3.11 stubs mypy reads lack it
    factory = ast.FunctionDef(  # type: ignore[call-arg]
        name="_augkit_factory_",
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg=n) for n in (_RUNTIME, _CALL, *func.__code__.co_freevars)],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        ),
        body=[fdef, ast.Return(value=ast.Name(id=fdef.name, ctx=ast.Load()))],
        decorator_list=[],
        returns=None,
        type_params=[],
    )
    ast.copy_location(factory, fdef)
    module = ast.Module(body=[factory], type_ignores=[])
    ast.fix_missing_locations(module)
    code = compile(module, filename, "exec", dont_inherit=True)
    factory_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    return next(
        c
        for c in factory_code.co_consts
        if isinstance(c, types.CodeType) and c.co_name == fdef.name
    )


def _is_not(node: ast.AST) -> TypeGuard[ast.UnaryOp]:
    return isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)


def _own(node: ast.AST) -> list[ast.AST]:
    """The nodes of a function's own code: not those of nested functions, lambdas, classes."""
    found: list[ast.AST] = []
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        found.append(child)
        if not isinstance(child, _BARRIERS):
            stack.extend(ast.iter_child_nodes(child))
    return found


def _assigned(statements: list[ast.stmt]) -> set[str]:
    """The names the statements bind (not inside nested functions or classes, whose own
    names are bound)."""
    names: set[str] = set()
    stack: list[ast.AST] = list(statements)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        elif isinstance(node, ast.Lambda):
            continue
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            # Comprehension variables are their own; only a walrus binds outside.
            names.update(
                n.target.id
                for n in ast.walk(node)
                if isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name)
            )
            continue
        stack.extend(ast.iter_child_nodes(node))
    return names


def _escapes(statements: list[ast.stmt]) -> str | None:
    """What in the statements cannot move into a function of its own (``None``: nothing)."""
    stack: list[tuple[ast.AST, bool]] = [(s, False) for s in statements]
    while stack:
        node, in_loop = stack.pop()
        if isinstance(node, _BARRIERS):
            continue
        if isinstance(node, ast.Return):
            return "returns from the function"
        if isinstance(node, (ast.Break, ast.Continue)) and not in_loop:
            return f"has a `{type(node).__name__.lower()}`"
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            return "yields"
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return f"declares {type(node).__name__.lower()} names"
        loop = in_loop or isinstance(node, (ast.For, ast.While, ast.AsyncFor))
        stack.extend((child, loop) for child in ast.iter_child_nodes(node))
    return None


def _always_returns(statements: list[ast.stmt]) -> bool:
    """Whether the statements end in a ``return`` on every path (a last ``if`` whose branches
    both do counts)."""
    if not statements:
        return False
    last = statements[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and _always_returns(last.body) and _always_returns(last.orelse)


def _returns_last(statements: list[ast.stmt]) -> bool:
    """Whether the branch ends with a ``return`` and has no other way out."""
    return (
        bool(statements)
        and isinstance(statements[-1], ast.Return)
        and _escapes(statements[:-1]) is None
        and _escapes([ast.Expr(value=statements[-1].value or ast.Constant(None))]) is None
    )


_RETURN = "_augkit_return_"
# Calls that must stay where they are written (they read the calling frame).
_FRAME_BUILTINS = frozenset({"super", "locals", "globals", "vars", "eval", "exec", "dir"})


class _Converter:
    """Rewrites one function definition in place."""

    def __init__(
        self, fdef: ast.FunctionDef | ast.AsyncFunctionDef, labels: dict[int, str]
    ) -> None:
        self.fdef = fdef
        self.labels = labels
        self.counter = itertools.count()
        self.initialised: set[str] = set()
        args = fdef.args
        self.params = {
            a.arg
            for a in (*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg)
            if a is not None
        }
        self.declared = {
            name
            for n in _own(fdef)
            if isinstance(n, (ast.Global, ast.Nonlocal))
            for name in n.names
        }
        self.live = self._liveness()

    def _liveness(self) -> dict[int, set[str]]:
        """Per ``if`` (by id): the names read at a later line of the function, or anywhere in
        a loop around the ``if`` (the next iteration reads them)."""
        loads = [
            (n.lineno, n.id)
            for n in ast.walk(self.fdef)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
        ]
        live: dict[int, set[str]] = {}

        def visit(node: ast.AST, loops: list[ast.AST]) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, _BARRIERS):
                    continue
                if isinstance(child, ast.If):
                    end = child.end_lineno or child.lineno
                    names = {name for line, name in loads if line > end}
                    for loop in loops:
                        names |= {
                            n.id
                            for n in ast.walk(loop)
                            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                        }
                    live[id(child)] = names
                is_loop = isinstance(child, (ast.For, ast.While, ast.AsyncFor))
                visit(child, [*loops, child] if is_loop else loops)

        visit(self.fdef, [])
        return live

    def convert(self) -> None:
        self.fdef.body = self._block(self.fdef.body, top=True)
        inits = [
            ast.copy_location(
                ast.Assign(
                    targets=[ast.Name(id=name, ctx=ast.Store())],
                    value=self._call("undefined", [ast.Constant(name)]),
                ),
                self.fdef.body[0],
            )
            for name in sorted(self.initialised - self.params)
        ]
        docstring = (
            self.fdef.body[:1]
            if self.fdef.body
            and isinstance(self.fdef.body[0], ast.Expr)
            and isinstance(self.fdef.body[0].value, ast.Constant)
            and isinstance(self.fdef.body[0].value.value, str)
            else []
        )
        self.fdef.body = [*docstring, *inits, *self.fdef.body[len(docstring) :]]

    # --- statements -----------------------------------------------------------------------
    def _block(self, statements: list[ast.stmt], top: bool = False) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        for k, statement in enumerate(statements):
            rest = statements[k + 1 :]
            if (
                isinstance(statement, ast.If)
                and rest
                and not statement.orelse
                and _always_returns(statement.body)
            ):
                # `if c: ...; return a` then more: the rest runs only when c is false, so it
                # is the `else` branch (and a function's end returns None).
                statement.orelse = list(rest)
                if top and not _always_returns(rest):
                    end = ast.Return(value=ast.Constant(None))
                    statement.orelse.append(ast.copy_location(end, rest[-1]))
                out.extend(self._statement(statement))
                return out
            out.extend(self._statement(statement))
        return out

    def _statement(self, node: ast.stmt) -> list[ast.stmt]:
        if isinstance(node, _BARRIERS):
            return [node]
        if isinstance(node, ast.If):
            return self._if(node)
        self._fields(node)
        return [node]

    def _fields(self, node: ast.AST) -> None:
        """Convert what ``node`` holds: its blocks of statements and its expressions (also
        those in ``with`` items, ``except`` handlers, keywords, comprehensions)."""
        for field, value in ast.iter_fields(node):
            if isinstance(value, list):
                if value and all(isinstance(v, ast.stmt) for v in value):
                    setattr(node, field, self._block(value))
                else:
                    setattr(node, field, [self._child(v) for v in value])
            elif isinstance(value, ast.AST):
                setattr(node, field, self._child(value))

    def _child(self, value: Any) -> Any:
        if isinstance(value, ast.expr):
            return self._expr(value)
        if isinstance(value, ast.AST) and not isinstance(value, _BARRIERS):
            self._fields(value)
        return value

    def _where(self, node: ast.stmt | ast.expr) -> ast.Constant:
        return ast.Constant(f"line {node.lineno} of {self.fdef.name}")

    def _call(self, name: str, args: list[ast.expr], **keywords: ast.expr) -> ast.Call:
        return ast.Call(
            func=ast.Attribute(
                value=ast.Name(id=_RUNTIME, ctx=ast.Load()), attr=name, ctx=ast.Load()
            ),
            args=args,
            keywords=[ast.keyword(arg=k, value=v) for k, v in keywords.items()],
        )

    def _if(self, node: ast.If) -> list[ast.stmt]:
        live = self.live.get(id(node), set())
        label = _label(self.labels.get(id(node), ""))
        node.test = self._expr(node.test)
        # Inner statements first: an inner `if` whose branches return becomes an assignment
        # and a return, which this one then sees at the end of its branch.
        body, orelse = self._block(node.body), self._block(node.orelse)
        plain = (body, orelse)
        returns = _returns_last(body) and _returns_last(orelse)
        if returns:
            body = [*body[:-1], self._return_as_assign(body[-1])]
            orelse = [*orelse[:-1], self._return_as_assign(orelse[-1])]
        why = _escapes(body) or _escapes(orelse)
        names = sorted(
            n for n in _assigned(body) | _assigned(orelse) if not n.startswith("_augkit_if_")
        )
        if why is None and self.declared & set(names):
            why = "assigns global or nonlocal names"
        if why is not None:
            if why == "returns from the function":
                # DALI's words: which branch lacks the return.
                if _always_returns(plain[0]) and not _always_returns(plain[1]):
                    why = "returns:else"
                elif _always_returns(plain[1]) and not _always_returns(plain[0]):
                    why = "returns:if"
            node.body, node.orelse = plain
            node.test = self._call("plain_test", [node.test, self._where(node), ast.Constant(why)])
            return [node]
        self.initialised.update(names)
        k = next(self.counter)
        state = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in names], ctx=ast.Load())
        functions = [
            self._branch(f"_augkit_if_{tag}_{k}_", block, names, node)
            for tag, block in (("body", body), ("orelse", orelse))
        ]
        call = self._call(
            "if_stmt",
            [
                node.test,
                ast.Name(id=functions[0].name, ctx=ast.Load()),
                ast.Name(id=functions[1].name, ctx=ast.Load()),
                state,
                ast.Tuple(elts=[ast.Constant(n) for n in names], ctx=ast.Load()),
                ast.Tuple(
                    elts=[ast.Constant(n in live or (returns and n == _RETURN)) for n in names],
                    ctx=ast.Load(),
                ),
                self._where(node),
                ast.Constant(label),
            ],
        )
        target = ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Store()) for n in names], ctx=ast.Store())
        assign: ast.stmt = (
            ast.Assign(targets=[target], value=call) if names else ast.Expr(value=call)
        )
        out: list[ast.stmt] = [*functions, assign]
        if returns:
            out.append(ast.Return(value=ast.Name(id=_RETURN, ctx=ast.Load())))
        for statement in out:
            ast.copy_location(statement, node)
        return out

    def _return_as_assign(self, node: ast.stmt) -> ast.stmt:
        assert isinstance(node, ast.Return)
        if isinstance(node.value, ast.Name) and node.value.id == _RETURN:
            return ast.copy_location(ast.Pass(), node)  # an inner if's, already assigned
        value = node.value or ast.Constant(None)
        return ast.copy_location(
            ast.Assign(targets=[ast.Name(id=_RETURN, ctx=ast.Store())], value=value), node
        )

    def _branch(
        self, name: str, block: list[ast.stmt], names: list[str], node: ast.If
    ) -> ast.FunctionDef:
        result = ast.Return(
            value=ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in names], ctx=ast.Load())
        )
        # type_params: a field from Python 3.12 on, set for it; the 3.11 stubs mypy reads lack it
        function = ast.FunctionDef(  # type: ignore[call-arg]
            name=name,
            args=ast.arguments(
                posonlyargs=[],
                args=[ast.arg(arg=n) for n in names],
                kwonlyargs=[],
                kw_defaults=[],
                defaults=[],
            ),
            body=[*block, ast.copy_location(result, node)] if block else [result],
            decorator_list=[],
            returns=None,
            type_params=[],
        )
        return ast.copy_location(function, node)

    # --- expressions ----------------------------------------------------------------------
    def _expr(self, node: ast.expr) -> ast.expr:
        if isinstance(node, ast.Lambda):
            return node
        self._fields(node)
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name) and node.func.id in _FRAME_BUILTINS
        ):
            # Functions the definition calls are converted too (DALI's rule), when called.
            new = ast.Call(
                func=ast.Name(id=_CALL, ctx=ast.Load()),
                args=[node.func, *node.args],
                keywords=node.keywords,
            )
            return ast.copy_location(new, node)
        has_walrus = any(isinstance(n, ast.NamedExpr) for n in ast.walk(node))
        if isinstance(node, ast.BoolOp) and not has_walrus:
            name = "and_" if isinstance(node.op, ast.And) else "or_"
            new = self._call(name, [_thunk(v) for v in node.values], where=self._where(node))
            return ast.copy_location(new, node)
        if _is_not(node):
            new = self._call("not_", [node.operand], where=self._where(node))
            return ast.copy_location(new, node)
        if isinstance(node, ast.IfExp) and not has_walrus:
            new = self._call(
                "if_exp",
                [node.test, _thunk(node.body), _thunk(node.orelse)],
                where=self._where(node),
                label=ast.Constant(_label(self.labels.get(id(node), ""))),
            )
            return ast.copy_location(new, node)
        return node


def _thunk(node: ast.expr) -> ast.Lambda:
    lam = ast.Lambda(
        args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=node,
    )
    return ast.copy_location(lam, node)


def _label(text: str) -> str:
    """How draws and the viewer name an ``if``: its condition as written."""
    return "if " + (text if len(text) <= 40 else text[:37] + "...") if text else "if"
