"""``fn.segmentation.select_masks``: DALI 2.4's selection of COCO-style polygons by mask id.

Inputs: ``mask_ids`` (1-D integers, no duplicates), ``polygons`` (int32 (P, 3) rows
``[mask_id, start_vertex, end_vertex)``) and ``vertices`` ((V, D) of any type, any D). Outputs:
the selected ``polygons`` (int32 (n, 3), start/end renumbered into the new vertices) and their
``vertices`` (the input's type), no layout.

Decisions and traps (checked against DALI 2.4, which differs from its own documentation):

- **One polygon per mask id**: DALI 2.4 keeps, for each selected mask id, only the *last*
  polygon of that id in ``polygons`` (``[[1, 0, 2], [0, 0, 3], [1, 5, 9]]`` with
  ``mask_ids=[1]`` gives only the polygon of vertices 5..8), and the outputs follow the order
  of ``mask_ids``, not the order of ``polygons`` (``mask_ids=[2, 0]`` gives mask 2's polygon
  first). The documentation's example (input order) is not what DALI does; augkit does what
  DALI does, so that the numbers match.
- ``reindex_masks=True`` replaces each mask id with its index in ``mask_ids``.
- Errors, as in DALI: a mask id in ``mask_ids`` that no polygon has, a duplicated mask id, a
  polygon whose vertex range is outside ``vertices`` or whose end is before its start.
  An empty ``mask_ids`` gives empty outputs ((0, 3) and (0, D)).
- Speed: vectorised NumPy (one dictionary of the last polygon per id, one gather of the
  vertices).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from augkit import kinds
from augkit.operators.base import SampleOperator
from augkit.operators.registry import (
    Arg,
    InputSpec,
    OperatorSchema,
    OutputSpec,
    fixed_kinds,
    register,
    to_bool,
)

NAME = "segmentation.select_masks"


class SelectMasks(SampleOperator):
    def output_layout(self, index: int, inputs: Any) -> str:
        return ""

    def empty_dtype(self, index: int) -> Any:
        return np.int32 if index == 0 else None

    def check_input(self, index: int, sample: Any, layout: str) -> None:
        what = ("mask_ids", "polygons", "vertices")[index]
        if not isinstance(sample, np.ndarray) or sample.dtype.kind not in "iu" + (
            "bf" if index == 2 else ""
        ):
            got = getattr(sample, "dtype", type(sample).__name__)
            kind = "numbers" if index == 2 else "integers"
            raise ValueError(f"{NAME}: input '{what}' must hold {kind}; got {got}")
        if index == 0 and sample.ndim != 1:
            raise ValueError(
                f"{NAME}: input 'mask_ids' must be 1-D, got {sample.ndim} dimensions "
                f"{tuple(sample.shape)}"
            )
        if index == 1 and (sample.ndim != 2 or sample.shape[1] != 3):
            raise ValueError(
                f"{NAME}: input 'polygons' must be (n, 3) rows [mask_id, start, end), got "
                f"shape {tuple(sample.shape)}"
            )
        if index == 2 and sample.ndim != 2:
            raise ValueError(
                f"{NAME}: input 'vertices' must be 2-D (n, coordinates), got shape "
                f"{tuple(sample.shape)}"
            )

    def cpu(
        self,
        mask_ids: np.ndarray,
        polygons: np.ndarray,
        vertices: np.ndarray,
        *,
        reindex_masks: bool,
        **_: Any,
    ) -> tuple[np.ndarray, np.ndarray]:
        ids = mask_ids.astype(np.int64).tolist()
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ValueError(f"{NAME}: mask id {dup} appears more than once in mask_ids")
        polys = polygons.astype(np.int64)
        nvert = vertices.shape[0]
        bad = (polys[:, 1] < 0) | (polys[:, 2] > nvert) | (polys[:, 2] < polys[:, 1])
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"{NAME}: polygon {row} ({polys[row].tolist()}) has a vertex range outside "
                f"the {nvert} vertices (or its end before its start)"
            )
        last = {int(m): r for r, m in enumerate(polys[:, 0].tolist())}
        missing = [i for i in ids if i not in last]
        if missing:
            raise ValueError(f"{NAME}: mask id {missing[0]} (in mask_ids) is in no polygon")
        rows = polys[[last[i] for i in ids]] if ids else np.zeros((0, 3), np.int64)
        counts = rows[:, 2] - rows[:, 1]
        ends = np.cumsum(counts)
        out = np.empty((len(ids), 3), np.int32)
        out[:, 0] = np.arange(len(ids)) if reindex_masks else rows[:, 0]
        out[:, 1] = ends - counts
        out[:, 2] = ends
        if len(ids) and ends[-1]:
            starts = np.repeat(rows[:, 1] - (ends - counts), counts)
            index = starts + np.arange(int(ends[-1]))
            picked = vertices[index]
        else:
            picked = np.zeros((0, vertices.shape[1]), vertices.dtype)
        return out, picked


register(
    OperatorSchema(
        name=NAME,
        class_name="segmentation.SelectMasks",
        impl=SelectMasks,
        min_inputs=3,
        max_inputs=3,
        num_outputs=2,
        accepts=[
            InputSpec("1-D mask ids", kinds=("labels",), ndims=(1,)),
            InputSpec("polygons (n, 3)", kinds=("polygons",), ndims=(2,)),
            InputSpec("vertices (n, coordinates)", kinds=("vertices",), ndims=(2,)),
        ],
        output_kinds=fixed_kinds(
            OutputSpec(kind=kinds.POLYGONS, ndim=2, layout=""),
            OutputSpec(kind=kinds.VERTICES, ndim=2, layout=""),
        ),
        doc=(
            "Selects the polygons (COCO form: rows [mask_id, start_vertex, end_vertex)) of the "
            "masks in ``mask_ids`` and their vertices. As DALI 2.4 does, one polygon per mask "
            "id is kept (the last of that id) and the outputs follow ``mask_ids``' order; "
            "``reindex_masks`` replaces the ids with their index in ``mask_ids``."
        ),
        args=[
            Arg(
                "reindex_masks",
                "replace the mask ids with their index in mask_ids",
                False,
                to_bool,
            ),
        ],
    )
)
