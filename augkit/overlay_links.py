"""Which targets belong to an image node: the boxes, masks, keypoints, polygons + vertices and
per-box labels drawn over it (``overlay_nodes``), worked out from the graph alone
(``DataNode.source``, its ``inputs``, ``arg_nodes`` and ``seed_group``), never from the values.
The viewer (``augkit.widgets``) draws them; this module imports neither ipywidgets nor
matplotlib, so the rule is tested without them.

The rule:

1. Every node has a *lineage*: the reader or source it comes from along first inputs, and the
   transformations on the way. A transformation is an operator that moves pixels or
   coordinates: those of ``augkit.operators.geometric`` (flip, rotate, resize, crops, warps,
   paste...), crop_mirror_normalize, the cropping decoders, the box and coordinate operators
   (bb_flip, coord_flip, bbox_rotate, coord_transform, bbox_paste, random_bbox_crop), and a
   Python operator that takes a target or returns several outputs (a function that moves
   boxes takes them and returns them). Colour operators, casts, decoders and a Python
   operator of one image are no transformation: their output keeps its input's targets.
2. A transformation is known by the per-sample values it uses (its argument inputs and its
   inputs after the first: ``fn.flip(images, horizontal=coin)`` and ``fn.bb_flip(boxes,
   horizontal=coin)`` are one transformation, as ``fn.slice(images, anchor, shape)`` is with
   the ``random_bbox_crop`` that drew them), else by its call: the input sets of one call
   (``fn.rotate([images, boxes], angle=...)``) share a ``seed_group``.
3. A target belongs to the image when both lineages are equal; for a mask and for relative
   coordinates, a resize without a region of interest does not count (it leaves fractions of
   the image size right), for absolute coordinates it does. So readers.coco's boxes belong to
   its decoded images, the rotated boxes to the rotated images, and the reader's boxes not to
   the images rotated without them.
4. Of several targets of one kind, the nearest: an output of the image's own operator, then of
   the same call, then of the operators it comes from (nearest first), then the rest (boxes a
   Python function computed from the image).
5. Labels, which geometry does not move, also come from beside the chosen boxes, where those
   come from (readers.coco's labels for the boxes fn.bb_flip flipped); they are drawn on the
   boxes only when every sample has one per box.
6. Where the graph cannot link them (the targets come from another source or reader than the
   image: two external sources), a node that is one of the pipeline's outputs gets the
   pipeline's outputs of the kinds still missing.

Decisions and traps:

- What moves is never listed here: the registry says it (``OperatorSchema.moves_geometry``:
  the operators with target rules in their kernel table, and those whose impl declares
  ``moves_geometry``; ``draws_window``; ``keeps_relative_coordinates``), so a new operator
  declares it in its own module.
- A name that several nodes share cannot be asked for its batch: such a node is never chosen.

Example:
    >>> import numpy as np
    >>> from augkit import fn, kinds
    >>> from augkit.pipeline import Pipeline
    >>> from augkit.overlay_links import overlay_nodes
    >>> boxes = np.array([[0.1, 0.1, 0.5, 0.5]], np.float32)
    >>> pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1)
    >>> with pipe:
    ...     images = fn.external_source(
    ...         source=lambda: [np.zeros((20, 30, 3), np.uint8)] * 2, batch=True, layout="HWC"
    ...     )
    ...     b = fn.python_function(
    ...         fn.external_source(source=lambda: [boxes] * 2, batch=True),
    ...         function=lambda x: x,
    ...         kind=kinds.BOXES,
    ...     )
    ...     rotated, moved = fn.rotate([images, b], angle=10.0)
    ...     pipe.set_outputs(fn.flip(images, name="alone"), rotated, moved)
    >>> overlay_nodes(pipe, rotated.name) == {"boxes": moved.name}
    True
    >>> overlay_nodes(pipe, "alone")  # flipped without the boxes
    {}
    >>> pipe.close()
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from augkit.graph import DataNode, OperatorNode, first_inputs, roots
from augkit.kinds import GENERIC, Kind
from augkit.operators.registry import TARGET_KINDS
from augkit.static_checks import check_kinds

if TYPE_CHECKING:
    from augkit.pipeline import Pipeline

__all__ = ["overlay_nodes"]


def overlay_nodes(pipe: Pipeline, name: str) -> dict[str, str]:
    """The nodes drawn over image node ``name``: target kind ("boxes", "mask", "keypoints",
    "polygons", "vertices", "labels") -> node name, by the rule of the module docstring.
    Empty for a node that is not an image (a mask is no image to draw on)."""
    nodes = pipe.nodes()
    operators = pipe.operators()
    kinds = {d: (s.kind if s is not None else GENERIC) for d, s in check_kinds(operators).items()}
    shown = nodes.get(name)
    if shown is None or kinds.get(shown, GENERIC).name not in ("image", "generic"):
        return {}
    image = _lineage(shown, kinds)
    ancestors = _ancestors(shown)
    found: dict[str, tuple[tuple[tuple[int, int], int], str]] = {}  # kind -> ((rank, order), name)
    every = [d for op in operators for d in op.outputs]
    for order, node in enumerate(every):
        kind = kinds.get(node, GENERIC).name
        if node is shown or kind not in TARGET_KINDS or nodes.get(node.name) is not node:
            continue  # (a name that several nodes share cannot be asked for its batch)
        target = _lineage(node, kinds)
        key: Literal[1, 2] = 2 if kind == "mask" or _relative(kinds[node]) else 1
        same_root = target[0] == image[0] and target[key] == image[key]
        if not same_root and not _joined(image[key], target[key]):
            continue
        rank = _rank(node, shown, ancestors)
        if kind not in found or (rank, order) < found[kind][0]:
            found[kind] = ((rank, order), node.name)
    chosen = {kind: node_name for kind, (_, node_name) in found.items()}
    if "boxes" in chosen and "labels" not in chosen:
        # Labels are not moved by geometry: the ones beside the boxes where they come from
        # (readers.coco's, for boxes that fn.bb_flip flipped); the viewer checks the counts.
        labels = _labels_beside(nodes[chosen["boxes"]], kinds)
        if labels is not None:
            chosen["labels"] = labels
    outputs = pipe.output_names()
    if name in outputs:
        # The pipeline's outputs of the kinds still missing, when the graph cannot link them
        # (they come from other sources than the image: two external sources, two readers).
        roots = _roots(shown)
        for output in outputs:
            output_node = nodes.get(output)
            if output_node is None:
                continue
            kind = kinds.get(output_node, GENERIC).name
            if (
                kind in TARGET_KINDS
                and kind not in chosen
                and not (_roots(output_node) & roots)
                and not _joint_elsewhere(_lineage(output_node, kinds)[1], image[1])
            ):
                chosen[kind] = output
    if ("polygons" in chosen) != ("vertices" in chosen):
        chosen.pop("polygons", None)
        chosen.pop("vertices", None)
    return chosen


def _labels_beside(boxes: DataNode, kinds: Mapping[DataNode, Kind]) -> str | None:
    """The first labels output of the operators ``boxes`` comes from (along first inputs,
    nearest first)."""
    for op in first_inputs(boxes):
        for output in op.outputs:
            if kinds.get(output, GENERIC).name == "labels":
                return output.name
    return None


def _relative(kind: Kind) -> bool:
    """Whether coordinates of ``kind`` are fractions of the image size (so a resize of the
    image alone leaves them right); vertices say nothing (None): taken as relative here, as
    readers.coco's ratio=True gives them, and drawn by their values."""
    if kind.name in ("boxes", "keypoints"):
        return kind.relative is not False
    return True


def _moves(op: OperatorNode, kinds: Mapping[DataNode, Kind]) -> bool:
    """Whether ``op`` moves pixels or coordinates (see the module docstring)."""
    schema = op.schema
    if schema.role == "python":
        with_targets = any(kinds.get(d, GENERIC).name in TARGET_KINDS for d in op.inputs)
        return with_targets or len(op.outputs) > 1
    return schema.moves_geometry


def _scales_only(op: OperatorNode) -> bool:
    """A resize without a region of interest: relative coordinates stay right."""
    return op.schema.keeps_relative_coordinates(op.given)


def _token(op: OperatorNode) -> Any:
    """What links the calls of one transformation: the per-sample values (argument inputs
    and inputs after the first) it shares with others, else its call (``seed_group``)."""
    if op.companions:  # one call with several input sets: its sets moved together
        return ("joint", op.seed_group)
    own = op.inputs[1:]
    shared = {d.source.id for d in (*own, *op.arg_nodes.values())}
    if op.schema.draws_window:
        shared.add(op.id)
    return frozenset(shared) if shared else ("call", op.seed_group)


def _lineage(node: DataNode, kinds: Mapping[DataNode, Kind]) -> tuple[int, tuple, tuple]:
    """(root operator id, the transformations from it to ``node``, the same without the
    resizes that only scale), following each operator's first input."""
    chain = first_inputs(node)
    moving = [op for op in reversed(chain) if _moves(op, kinds)]
    strict = tuple(_token(op) for op in moving)
    relaxed = tuple(_token(op) for op in moving if not _scales_only(op))
    return chain[-1].id, strict, relaxed


def _joined(image: tuple, target: tuple) -> bool:
    """Whether two lineages meet in one call with several input sets (``fn.rotate([images,
    boxes])``, whatever each came from before) and take the same steps from there on."""
    for i, token in enumerate(image):
        if isinstance(token, tuple) and token[:1] == ("joint",) and token in target:
            return image[i:] == target[target.index(token) :]
    return False


def _joint_elsewhere(target: tuple, image: tuple) -> bool:
    """Whether ``target`` was moved in a call with input sets that ``image`` was not in (it
    belongs to that call's images)."""
    return any(isinstance(t, tuple) and t[:1] == ("joint",) and t not in image for t in target)


def _ancestors(node: DataNode) -> dict[int, int]:
    """Operator id -> distance, along first inputs from ``node``'s operator (0) up."""
    return {op.id: distance for distance, op in enumerate(first_inputs(node))}


def _roots(node: DataNode) -> set[int]:
    """The ids of the sources and readers ``node`` is computed from (every input)."""
    return {op.id for op in roots(node)}


def _rank(node: DataNode, shown: DataNode, ancestors: Mapping[int, int]) -> tuple[int, int]:
    """Nearest first: an output of the shown node's own call, of the same multiple-input-set
    call, of an operator it comes from (nearest first), then the rest (computed from it)."""
    op = node.source
    if op is shown.source:
        return 0, 0
    if op.seed_group == shown.source.seed_group:
        return 1, 0
    if op.id in ancestors:
        return 2, ancestors[op.id]
    return 3, 0
