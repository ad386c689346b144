"""The traced graph: ``DataNode`` (an operator's output, what ``fn.*`` calls return) and
``OperatorNode`` (one use of an operator), and ``Operator``, the base of every ``ops`` class.

Calling an operator never computes anything: it records an ``OperatorNode`` whose outputs are
``DataNode`` objects. ``Pipeline.build()`` walks back from the outputs to find what to run.
Nodes are numbered in creation order; while a pipeline is being defined they are also recorded
in its trace, which is what operator seeds are derived from (``augkit.random``).
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Container, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

import numpy as np

from augkit import backend, scopes, types
from augkit.errors import ArgumentError, AugkitError, GraphError
from augkit.operators.constant import is_constant
from augkit.operators.registry import REGISTRY, REQUIRED, OperatorSchema
from augkit.operators.tensors.subscript import parse as parse_subscript
from augkit.tensors import TensorList

_ids = itertools.count()
_local = threading.local()


@contextmanager
def tracing(nodes: list[OperatorNode]) -> Iterator[list[OperatorNode]]:
    """Record every OperatorNode created inside the block into ``nodes``."""
    stack = _local.__dict__.setdefault("stack", [])
    stack.append(nodes)
    try:
        yield nodes
    finally:
        stack.pop()


def _session() -> Any:
    """The debug session running nodes as they are made, if one is active (duck-typed: it is
    the recorder that can turn a user's array into a node)."""
    stack = _local.__dict__.get("stack")
    recorder = stack[-1] if stack else None
    return recorder if hasattr(recorder, "constant") else None


def _record(node: OperatorNode) -> None:
    stack = _local.__dict__.get("stack")
    if stack:
        stack[-1].append(node)


class DataNode:
    """One output of one operator in a pipeline's graph (DALI's ``DataNode``).

    In a normal pipeline it holds no data: pass it to other operators, or return it from
    ``define_graph`` (or give it to ``set_outputs``) to get its batch from ``Pipeline.run()``.
    In debug mode it holds its batch: ``node.get()``, and ``print(node)`` describes it.
    """

    __slots__ = ("device", "index", "source", "value")

    def __init__(self, source: OperatorNode, index: int, device: str) -> None:
        self.source = source
        self.index = index
        self.device = device
        self.value: Any = None

    def get(self) -> Any:
        """This output's batch (a TensorList), in debug mode.

        Raises:
            GraphError: in a normal pipeline, where nodes hold no data.
        """
        if self.value is None:
            raise GraphError(
                f"{self.name} holds no batch: only nodes of a debug pipeline do "
                f"(Pipeline(..., debug=True) or @pipeline_def(debug=True)); in a normal "
                f"pipeline, make it an output"
            )
        return self.value

    @property
    def name(self) -> str:
        node = self.source
        return node.name if len(node.outputs) == 1 else f"{node.name}[{self.index}]"

    def gpu(self) -> DataNode:
        """This output copied to the GPU (itself when it is already there). The user's own
        copy: the device rule applies to it (``backend.check_device``), as to an operator
        given ``device="gpu"``."""
        return self if self.device == "gpu" else _transfer("_to_gpu", self, asked=True)

    def cpu(self) -> DataNode:
        """This output copied to the host (itself when it is already there)."""
        return self if self.device == "cpu" else _transfer("_to_cpu", self)

    # --- arithmetic (augkit.operators.arithmetic): node <op> node, node <op> constant -------
    def __add__(self, other: Any) -> Any:
        return _expression("add", self, other)

    def __radd__(self, other: Any) -> Any:
        return _expression("add", other, self)

    def __sub__(self, other: Any) -> Any:
        return _expression("sub", self, other)

    def __rsub__(self, other: Any) -> Any:
        return _expression("sub", other, self)

    def __mul__(self, other: Any) -> Any:
        return _expression("mul", self, other)

    def __rmul__(self, other: Any) -> Any:
        return _expression("mul", other, self)

    def __truediv__(self, other: Any) -> Any:
        return _expression("truediv", self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return _expression("truediv", other, self)

    def __floordiv__(self, other: Any) -> Any:
        return _expression("floordiv", self, other)

    def __rfloordiv__(self, other: Any) -> Any:
        return _expression("floordiv", other, self)

    def __mod__(self, other: Any) -> Any:
        return _expression("mod", self, other)

    def __rmod__(self, other: Any) -> Any:
        return _expression("mod", other, self)

    def __pow__(self, other: Any) -> Any:
        return _expression("pow", self, other)

    def __rpow__(self, other: Any) -> Any:
        return _expression("pow", other, self)

    def __and__(self, other: Any) -> Any:
        return _expression("and", self, other)

    def __rand__(self, other: Any) -> Any:
        return _expression("and", other, self)

    def __or__(self, other: Any) -> Any:
        return _expression("or", self, other)

    def __ror__(self, other: Any) -> Any:
        return _expression("or", other, self)

    def __xor__(self, other: Any) -> Any:
        return _expression("xor", self, other)

    def __rxor__(self, other: Any) -> Any:
        return _expression("xor", other, self)

    def __lshift__(self, other: Any) -> Any:
        return _expression("lshift", self, other)

    def __rlshift__(self, other: Any) -> Any:
        return _expression("lshift", other, self)

    def __rshift__(self, other: Any) -> Any:
        return _expression("rshift", self, other)

    def __rrshift__(self, other: Any) -> Any:
        return _expression("rshift", other, self)

    def __neg__(self) -> Any:
        return _expression("neg", self)

    def __pos__(self) -> Any:
        return _expression("pos", self)

    def __invert__(self) -> Any:
        return _expression("invert", self)

    # --- comparisons: per-sample bool nodes, as DALI's (``horizontal=coin == 1``) -----------
    def __eq__(self, other: Any) -> Any:
        return _expression("eq", self, other)

    def __ne__(self, other: Any) -> Any:
        return _expression("ne", self, other)

    def __lt__(self, other: Any) -> Any:
        return _expression("lt", self, other)

    def __le__(self, other: Any) -> Any:
        return _expression("le", self, other)

    def __gt__(self, other: Any) -> Any:
        return _expression("gt", self, other)

    def __ge__(self, other: Any) -> Any:
        return _expression("ge", self, other)

    def __getitem__(self, index: Any) -> DataNode:
        """``x[1:3, :, 0]``, ``x[idx]`` (a per-sample DataNode) with DALI's semantics
        (``augkit.operators.tensors.subscript``): its ``_tensor_subscript``, then
        ``expand_dims`` for new axes."""
        args, new_axes, names, last_new = parse_subscript(index, is_node)
        out = self
        if len(args) > 1 or not (new_axes and last_new):
            out = operator_class(REGISTRY["_tensor_subscript"])(**args)(self)
        if new_axes:
            out = operator_class(REGISTRY["expand_dims"])(axes=new_axes, new_axis_names=names)(out)
        return out

    # Not iterable, though it has __getitem__ (which would make iter() step through indices
    # 0, 1, 2... forever, and ``a, b = node`` say "too many values"): a TypeError at once.
    __iter__ = None

    # Defining __eq__ drops the inherited hash; nodes are dictionary keys by identity (the
    # executor's batches), and object's hash is C-fast where a Python __hash__ costs a call.
    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise TypeError(
            f"{self.name} has no truth value: a DataNode stands for a batch of per-sample "
            f"values that exist only when the pipeline runs. `if node:`, `and`, `or` and `not` "
            f"on it work per sample in a pipeline with conditionals "
            f"(@pipeline_def(enable_conditionals=True)), as in DALI; `while node:` never does. "
            f"Otherwise give it to an operator as a per-sample argument (e.g. fn.flip(x, "
            f"horizontal=fn.random.coin_flip())), or look at its values in debug mode with "
            f"node.get()"
        )

    def __repr__(self) -> str:
        if self.value is None:
            return f"DataNode(name={self.name!r}, device={self.device!r})"
        batch = self.value
        shapes = batch.shape()
        shown = shapes if len(shapes) <= 4 else [*shapes[:3], "...", shapes[-1]]
        return (
            f"DataNode(name={self.name!r}, operator={self.source.schema.class_name!r}, "
            f"dtype={batch.dtype.name}, layout={batch.layout()!r}, batch_size={len(batch)}, "
            f"device={self.device!r}, shapes={shown})"
        ).replace("'...'", "...")


NUMBERS = (bool, int, float, np.generic)


def _expression(op: str, *operands: Any) -> Any:
    """The node of ``op`` on ``operands`` (at least one a DataNode; the others nodes or Python
    ``bool``/``int``/``float``), computed by the internal ``_arithmetic`` operator
    (``augkit.operators.arithmetic``: DALI's type promotion). ``NotImplemented`` for another
    kind of operand (Python then tries the other side, or raises TypeError). A
    ``types.ScalarConstant`` is a NumPy scalar of its type (its dtype takes part in the type
    promotion)."""
    cls = operator_class(REGISTRY["_arithmetic"])
    operands = tuple(x.numpy() if isinstance(x, types.ScalarConstant) else x for x in operands)
    nodes = [x for x in operands if isinstance(x, DataNode)]
    if not nodes or not all(isinstance(x, (DataNode, *NUMBERS)) for x in operands):
        return NotImplemented
    constants = tuple(
        (position, x) for position, x in enumerate(operands) if not isinstance(x, DataNode)
    )
    device = "gpu" if any(node.device == "gpu" for node in nodes) else "cpu"
    return cls(op=op, constants=constants, device=device)(*nodes)


def _value(value: Any) -> DataNode:
    """The node of a Python constant given as an input (``augkit.operators.constant``)."""
    return operator_class(REGISTRY["_value"])(value=value)()


def _constant(**arguments: Any) -> DataNode:
    """``fn.constant(**arguments)``: what ``types.Constant`` makes of a tensor."""
    return operator_class(REGISTRY["constant"])(**arguments)()


types.constant_node = _constant  # types (DALI's enums) is below the graph and imports nothing


def _transfer(schema_name: str, node: DataNode, asked: bool = False) -> DataNode:
    """A copy of ``node`` between host and GPU. ``asked``: the user's ``.gpu()``, which the
    device rule checks (in debug mode and eager now, at build in a pipeline); the copy that
    ``device="gpu"`` implies on CPU data is not asked for: its operator is checked instead."""
    device = "gpu" if schema_name == "_to_gpu" else "cpu"
    session = _session()
    if asked and device == "gpu" and session is not None:
        backend.check_device(f"{node.name}.gpu()", device, True, session.device_id, copy=True)
    made = OperatorNode(REGISTRY[schema_name], device, {}, {}, [node])
    made.asked = asked
    return made.outputs[0]


class OperatorNode:
    """One use of an operator: its schema, device, constant arguments, argument inputs and
    inputs."""

    def __init__(
        self,
        schema: OperatorSchema,
        device: str,
        args: dict[str, Any],
        arg_nodes: dict[str, DataNode],
        inputs: list[DataNode],
        record: bool = True,
        companions: int = 0,
        seed_group: int | None = None,
        scope: Any = "current",
    ) -> None:
        # The conditional scope (``augkit.scopes``): which samples the node computes; None for
        # the whole batch. Inputs made in enclosing scopes are split into it first.
        self.scope: scopes.Scope | None = scopes.current() if scope == "current" else scope
        if schema.role != "conditional":
            # A node runs on the samples of its inputs: inside the scope of an input made in a
            # branch (DALI's split outputs used by hand, fn._conditional.split), else in the
            # scope it is made in.
            for d in (*inputs, *arg_nodes.values()):
                home = d.source.scope if isinstance(d, DataNode) else None
                if (
                    home is not None
                    and home is not self.scope
                    and scopes.encloses(self.scope, home)
                ):
                    self.scope = home
        if self.scope is not None and schema.role != "conditional":
            if schema.makes_batches:
                raise GraphError(
                    f"{schema.class_name} is called inside {self.scope.describe()}: readers "
                    f"and external sources read whole batches, so they must be called outside "
                    f"any `if` on a DataNode (move the call before the `if`)"
                )
            inputs = [_into_scope(d, self.scope) for d in inputs]
            arg_nodes = {k: _into_scope(d, self.scope) for k, d in arg_nodes.items()}
        # Numbered after the splits of its inputs: creation order stays a topological order.
        self.id = next(_ids)
        # How many trailing inputs are the first inputs of the call's other input sets (an
        # operator that moves boxes with images finds their image there; geometric/targets.py).
        self.companions = companions
        self.asked = False  # a copy to the GPU the user asked for (``DataNode.gpu()``)
        # The node whose ordinal gives this node's seed: itself, or the first node of the same
        # multiple-input-set call (those share one seed, as in DALI).
        self.seed_group = self.id if seed_group is None else seed_group
        self.schema = schema
        self.device = device
        self.args = args
        # The arguments the user gave (``args`` holds the defaults too): the viewer's controls.
        self.given: frozenset[str] = frozenset()
        self.arg_nodes = arg_nodes
        self.inputs = inputs
        self.name: str = args.get("name") or f"{schema.class_name.split('.')[-1]}_{self.id}"
        out_device = "gpu" if device in ("gpu", "mixed") else "cpu"
        count = schema.outputs_for(args, len(inputs) - companions)
        self.outputs = [DataNode(self, k, out_device) for k in range(count)]
        if record:
            _record(self)

    def reads(self) -> list[DataNode]:
        """The batches this node needs to run: its inputs, its argument inputs, and the
        selector of its conditional scope (which says which samples it computes). The one
        notion of what a node depends on, which every walk over the graph follows (see
        ``upstream``)."""
        found = [*self.inputs, *self.arg_nodes.values()]
        if self.scope is not None:
            found.append(self.scope.choice.selector)
        return found

    def parents(self) -> list[OperatorNode]:
        """The nodes this one needs: the operators of what it ``reads()`` (its inputs',
        argument inputs' and its conditional scope's selector's)."""
        return [d.source for d in self.reads()]

    def __repr__(self) -> str:
        return f"OperatorNode({self.name!r}, device={self.device!r})"


# --- walks over the graph ---------------------------------------------------------------------
# Every walk that pruning, the executor, the runners and the pipeline make goes through these,
# with one notion of what a node depends on: ``OperatorNode.reads()`` (inputs, argument inputs
# and the selector of the node's conditional scope), ``parents()`` being their operators. Node
# ids follow creation order, and a node is created after everything it reads (its inputs are
# split into its scope first, and an `if`'s condition exists before its branches), so sorting
# by id is a topological order: ``graph_order``.


def graph_order(nodes: Iterable[OperatorNode]) -> list[OperatorNode]:
    """``nodes`` in a topological order: each after every node of ``nodes`` it is computed
    from (creation order, which is also the order of operator seeds)."""
    return sorted(nodes, key=_node_id)


def _node_id(node: OperatorNode) -> int:
    return node.id


def upstream(
    starts: Iterable[OperatorNode], known: Container[DataNode] = frozenset()
) -> list[OperatorNode]:
    """``starts`` and every node they are computed from, in graph order.

    Args:
        starts: where the walk begins (each is in the result).
        known: batches there already, a set or a dict (never a list: ``in`` on a list
            compares with ``==``, which on DataNodes makes nodes). The walk does not go past
            them, so the node that made one is in the result only where something else it
            made is needed: what must be computed again, from the batches at hand, to get
            the batches of ``starts``.
    """
    found: dict[int, OperatorNode] = {}
    stack = list(starts)
    while stack:
        node = stack.pop()
        if node.id in found:
            continue
        found[node.id] = node
        stack.extend(d.source for d in node.reads() if d not in known)
    return [found[k] for k in sorted(found)]


def downstream(nodes: Iterable[OperatorNode], starts: Iterable[OperatorNode]) -> list[OperatorNode]:
    """The nodes of the graph ``nodes`` that are ``starts`` or are computed from one of them
    (through any number of nodes of ``nodes``), in graph order: what must run again when
    ``starts`` change."""
    found = {node.id for node in starts}
    out = []
    for node in graph_order(nodes):
        if node.id in found or any(parent.id in found for parent in node.parents()):
            found.add(node.id)
            out.append(node)
    return out


def first_inputs(data: DataNode) -> list[OperatorNode]:
    """The operator that made ``data``, then the one that made its first input, and so on up
    to a node without inputs (a reader, a source): the *lineage* of a batch, nearest first.
    A second notion beside ``reads``, on purpose: what the batch's values are a transform of
    (an image's flips and crops), not everything they depend on (the flip's coin)."""
    chain = [data.source]
    while chain[-1].inputs:
        chain.append(chain[-1].inputs[0].source)
    return chain


def roots(data: DataNode) -> list[OperatorNode]:
    """The nodes without inputs (readers, sources) that ``data`` is computed from through the
    inputs of each node (every input, but not argument inputs, conditions or a node's
    companions: the data that flows into it), in graph order."""
    found: dict[int, OperatorNode] = {}
    seen: set[int] = set()
    stack = [data.source]
    while stack:
        node = stack.pop()
        if node.id in seen:
            continue
        seen.add(node.id)
        parents = [d.source for d in node.inputs[: len(node.inputs) - node.companions]]
        if not parents:
            found[node.id] = node
        stack += parents
    return [found[k] for k in sorted(found)]


def consumers(nodes: Iterable[OperatorNode]) -> dict[DataNode, list[OperatorNode]]:
    """For every batch that a node of ``nodes`` reads (``OperatorNode.reads``), the nodes of
    ``nodes`` that read it, in the order given; a batch nobody reads is not a key."""
    found: dict[DataNode, list[OperatorNode]] = {}
    for node in nodes:
        for data in node.reads():
            readers = found.setdefault(data, [])
            if not readers or readers[-1] is not node:
                readers.append(node)
    return found


def call_of(node: OperatorNode, nodes: Iterable[OperatorNode]) -> list[OperatorNode]:
    """``node`` and the other nodes of ``nodes`` made by the same call (DALI's multiple input
    sets, ``fn.rotate([images, boxes])``: one node per set, one seed group), in the order
    given; ``[node]`` when none of ``nodes`` is."""
    return [n for n in nodes if n.seed_group == node.seed_group] or [node]


def _into_scope(data: DataNode, scope: scopes.Scope) -> DataNode:
    """``data`` as a node of ``scope``: itself when it was made there, else its samples that
    the scope holds, split off level by level from the scope it was made in (one ``_split``
    node per node and scope, kept in ``Scope.splits``)."""
    if not isinstance(data, DataNode):
        return data
    home = data.source.scope
    if home is scope:
        return data
    path = scope.path_from(home)
    if not path:
        where = home.describe() if home is not None else "the whole batch"
        raise GraphError(
            f"{data.name} was computed in {where} and is used in {scope.describe()}: a value "
            f"made inside an `if` branch exists only for that branch's samples. Assign it in "
            f"every branch and use the variable after the `if`"
        )
    current = data
    for level in path:
        split = level.splits.get(data)
        if split is None:
            choice = level.choice
            split = OperatorNode(
                REGISTRY["_split"],
                current.device,
                {**choice_args(choice), "case": level.case},
                {},
                [current, choice.selector],
                scope=level,
            ).outputs[0]
            level.splits[data] = split
        current = split
    return current


def choice_args(choice: scopes.Choice) -> dict[str, Any]:
    """The arguments that name a choice in its ``_split`` and ``_merge`` nodes."""
    schema = REGISTRY["_split"]
    return {
        **{k: v for k, v in schema.defaults().items() if k not in ("case",)},
        "label": choice.label,
        "names": tuple(choice.names.items()),
        "boolean": choice.boolean,
        "where": choice.where,
    }


def is_node(value: Any) -> bool:
    return isinstance(value, DataNode)


def per_sample_value(schema: OperatorSchema, key: str, value: Any) -> bool:
    """Whether ``value``, given outside a traced graph (debug mode, eager calls), is one value
    per sample of argument ``key``: a TensorList, or a list of arrays (a list of plain numbers
    stays a constant, e.g. ``crop=[100, 100]``)."""
    arg = schema.arguments.get(key)
    if arg is None or not arg.per_sample:
        return False
    if isinstance(value, TensorList):
        return True
    return isinstance(value, list) and bool(value) and all(isinstance(v, np.ndarray) for v in value)


class Operator:
    """Base of every ``augkit.ops`` class: construct with arguments, call with inputs.

    Example:
        >>> from augkit import ops
        >>> resize = ops.Resize(resize_x=300, resize_y=300)
        >>> # inside define_graph: images = resize(decoded)
    """

    schema: ClassVar[OperatorSchema]

    def __init__(self, *values: Any, **kwargs: Any) -> None:
        schema = self.schema
        _refuse_undefined((*values, *kwargs.values()))
        kwargs = schema.named(values, kwargs)
        device = "cpu" if kwargs.get("device") is None else kwargs["device"]
        if device not in schema.devices:
            raise ArgumentError(
                f"{schema.class_name}: device={device!r} is not supported; augkit has "
                f"{schema.class_name} for device {' or '.join(map(repr, schema.devices))}."
            )
        self._device = device
        # DALI's rule: without an explicit device, a call whose inputs include GPU data runs
        # on the GPU (``_call_device``).
        self._device_given = kwargs.get("device") is not None
        self._constants, self._arg_nodes = schema.bind(_batches_as_nodes(schema, kwargs), is_node)
        self._given = _given(kwargs)
        # A required argument that takes per-sample values may come with the call instead, as
        # in DALI (``rotate = ops.Rotate()``, then ``rotate(images, angle=rng())``).
        _check_missing(schema, self._given, at_call=False)
        self._args = {**schema.defaults(), **self._constants}

    @property
    def device(self) -> str:
        return self._device

    def _call_device(self, inputs: Sequence[Any]) -> str:
        """The device of one call: the one given, else "gpu" where an input (or an input of a
        multiple-input-set list) is on the GPU and the operator has a GPU kernel, as DALI
        infers it; else "cpu"."""
        if self._device_given or "gpu" not in self.schema.devices:
            return self._device

        def on_gpu(x: Any) -> bool:
            return isinstance(x, DataNode) and x.device == "gpu"

        for x in inputs:
            if on_gpu(x) or (isinstance(x, (list, tuple)) and any(on_gpu(e) for e in x)):
                return "gpu"
        return self._device

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        schema = self.schema
        _refuse_undefined((*inputs, *kwargs.values()))
        constants, arg_nodes = schema.bind(_batches_as_nodes(schema, kwargs), is_node)
        _check_missing(schema, self._given | _given(kwargs), at_call=True)
        args = {**self._args, **constants}
        arg_nodes = {**self._arg_nodes, **arg_nodes}
        for key, node in arg_nodes.items():
            if node.device != "cpu":
                raise ArgumentError(
                    f"{schema.class_name}: argument '{key}' takes per-sample values from the "
                    f"CPU, but {node.name} is on the GPU; use .cpu() on it."
                )
        high = schema.max_inputs
        if len(inputs) < schema.min_inputs or (high is not None and len(inputs) > high):
            want = (
                f"{schema.min_inputs}"
                if high == schema.min_inputs
                else f"at least {schema.min_inputs}"
                if high is None
                else f"{schema.min_inputs} to {high}"
            )
            raise ArgumentError(f"{schema.class_name}: takes {want} input(s), got {len(inputs)}.")
        # A number, a list of numbers or a NumPy array: DALI's types.Constant, the same value for
        # every sample. (In debug mode a NumPy array is a batch, its first axis the samples.)
        session = _session()
        inputs = tuple(
            _value(x)
            if not isinstance(x, DataNode)
            and is_constant(x)
            and not (session is not None and isinstance(x, np.ndarray))
            else x
            for x in inputs
        )
        if session is not None:
            # Debug mode: a batch given as an input (an array, a TensorList, a list of arrays
            # or tensors) becomes a node holding it, on its device, before the call's device
            # is inferred, so that GPU data given so follows DALI's rule as a GPU node's output
            # does. Only a list of nodes is DALI's multiple input sets.
            inputs = tuple(
                x
                if isinstance(x, DataNode)
                or (isinstance(x, list) and any(isinstance(e, DataNode) for e in x))
                else session.constant(x)
                for x in inputs
            )
        device = self._call_device(inputs)
        if session is not None:
            # Debug mode and eager run the operator now: the device rule that a normal
            # pipeline applies at build, with the session's device_id (its pipeline's; eager's
            # is 0), before a copy to the GPU runs for it. The node does not exist yet: the
            # message names the operator by name= or its class.
            backend.check_device(
                args.get("name") or schema.class_name, device, schema.public, session.device_id
            )
        sets = _input_sets(schema, inputs)
        given = frozenset(self._given | _given(kwargs))
        try:
            results: list[list[DataNode]] = []
            for k, one in enumerate(sets):
                # One seed for the call's nodes, known as each is made (debug mode runs it).
                group = results[0][0].source.id if results and results[0] else None
                companions = _companions(schema, sets, k)
                results.append(
                    self._node(
                        _set_name(args, k), arg_nodes, list(one), given, companions, group, device
                    )
                )
        except AugkitError as exc:
            if _session() is None:
                raise
            # Debug mode: the operator ran inside this call. Drop augkit's inner frames so the
            # traceback ends at the user's line (a user function's own traceback stays in
            # __cause__).
            raise exc.with_traceback(None) from exc.__cause__
        if len(sets) == 1 and not any(isinstance(x, list) for x in inputs):
            as_list = schema.outputs_as_list is not None and schema.outputs_as_list(args)
            return list(results[0]) if as_list else _unpack(results[0])
        # Multiple input sets: one list per output, each with one node per input set (DALI).
        outs = [list(per_output) for per_output in zip(*results, strict=True)]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def _node(
        self,
        args: dict[str, Any],
        arg_nodes: dict[str, DataNode],
        inputs: list[DataNode],
        given: frozenset[str] = frozenset(),
        companions: Sequence[Any] = (),
        seed_group: int | None = None,
        device: str | None = None,
    ) -> list[DataNode]:
        schema = self.schema
        device = device or self._device
        inputs = [*inputs, *companions]
        for k, node in enumerate(inputs):
            if not isinstance(node, DataNode) and _session() is not None:
                node = inputs[k] = _session().constant(node)
            if not isinstance(node, DataNode):
                raise ArgumentError(
                    f"{schema.class_name}: input {k} must be the output of another operator "
                    f"(a DataNode), got {type(node).__name__}. To run operators on arrays "
                    f"directly, use augkit.eager."
                )
            if device == "cpu" and node.device == "gpu":
                why = (
                    f"augkit has {schema.class_name} for the CPU only"
                    if "gpu" not in schema.devices
                    else "a CPU operator cannot read GPU data"
                )
                raise ArgumentError(
                    f"{schema.class_name}(device='cpu'): input {k} ({node.name}) is on the GPU; "
                    f"{why}. Move it with .cpu() first."
                )
            if device == "gpu" and node.device == "cpu":
                inputs[k] = _transfer("_to_gpu", node)  # implied: the operator is checked
        made = OperatorNode(
            schema,
            device,
            args,
            arg_nodes,
            inputs,
            companions=len(companions),
            seed_group=seed_group,
        )
        made.given = given
        return made.outputs


def _refuse_undefined(values: Sequence[Any]) -> None:
    """A variable an ``if`` left undefined in one branch, used: DALI's error (``scopes``)."""
    for value in values:
        for x in value if isinstance(value, list) else (value,):
            if isinstance(x, scopes.Undefined):
                raise x.error()


def _batches_as_nodes(schema: OperatorSchema, kwargs: dict[str, Any]) -> dict[str, Any]:
    """Debug mode: a per-sample argument given as a batch (a TensorList or a list of arrays,
    as eager calls take it) becomes a node holding that batch."""
    session = _session()
    if session is None:
        return kwargs
    return {
        key: session.constant(value) if per_sample_value(schema, key, value) else value
        for key, value in kwargs.items()
    }


def _given(kwargs: dict[str, Any]) -> set[str]:
    """The arguments given a value (``None`` counts as not given, as in DALI)."""
    return {key for key, value in kwargs.items() if value is not None}


def _check_missing(schema: OperatorSchema, given: set[str], at_call: bool) -> None:
    missing = [m for m in schema.missing(given) if at_call or not schema.arguments[m].per_sample]
    if missing:
        names = ", ".join(repr(m) for m in missing)
        raise ArgumentError(f"{schema.class_name}: missing required argument {names}.")


def _input_sets(schema: OperatorSchema, inputs: tuple[Any, ...]) -> list[list[Any]]:
    lengths = {len(x) for x in inputs if isinstance(x, list)}
    if not lengths:
        return [list(inputs)]
    if len(lengths) > 1:
        raise ArgumentError(
            f"{schema.class_name}: input lists (multiple input sets) must all have the same "
            f"length, got lengths {sorted(lengths)}."
        )
    if not schema.input_sets:
        raise ArgumentError(
            f"{schema.class_name}: does not support multiple input sets (lists of inputs); "
            f"call it once per input instead."
        )
    count = lengths.pop()
    return [[x[i] if isinstance(x, list) else x for x in inputs] for i in range(count)]


def _set_name(args: dict[str, Any], k: int) -> dict[str, Any]:
    """The arguments of input set ``k``'s node: a ``name=`` the user gave is the first set's;
    the others are ``name#k`` (node names are unique: ``pipe.nodes()``, ``value(name)``)."""
    if k == 0 or not args.get("name"):
        return args
    return {**args, "name": f"{args['name']}#{k}"}


def _companions(schema: OperatorSchema, sets: list[list[Any]], k: int) -> list[Any]:
    """The companions of input set ``k``'s node: the other sets' first inputs, for an operator
    that moves targets with their images (``OperatorSchema.moves_targets``)."""
    if len(sets) < 2 or not schema.moves_targets:
        return []
    return [one[0] for j, one in enumerate(sets) if j != k and one]


def _unpack(outputs: list[DataNode]) -> Any:
    if not outputs:
        return None
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def docstring(schema: OperatorSchema, style: str) -> str:
    """The generated docstring: the operator's description, then its arguments."""
    lines = [schema.doc.strip(), "", "Args:"]
    for arg in schema.arguments.values():
        default = "required" if arg.default is REQUIRED else f"default {arg.default!r}"
        per_sample = "; may be per-sample (a DataNode)" if arg.per_sample else ""
        lines.append(f"    {arg.name}: {arg.doc} ({default}{per_sample})")
    call = f"fn.{schema.name}" if style == "fn" else f"ops.{schema.class_name}"
    other = f"ops.{schema.class_name}" if style == "fn" else f"fn.{schema.name}"
    lines += ["", f"Called as ``{call}``; the same operator is ``augkit.{other}``."]
    return "\n".join(lines)


_classes: dict[str, type[Operator]] = {}


def operator_class(schema: OperatorSchema) -> type[Operator]:
    """The ``ops`` class of ``schema`` (one class per operator, shared by ``fn``, ``ops``,
    ``eager`` and the expressions on nodes)."""
    cls = _classes.get(schema.name)
    if cls is None:
        short = schema.class_name.rsplit(".", 1)[-1]
        module = "augkit.plugin.pytorch" if schema.module else "augkit.ops"
        cls = type(
            short,
            (Operator,),
            {
                "schema": schema,
                "__doc__": docstring(schema, "ops"),
                "__module__": module,
                "__qualname__": schema.class_name,
            },
        )
        _classes[schema.name] = cls
    return cls
