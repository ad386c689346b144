"""A batch in words, for the viewer: its summary line, the table of values of a node that is
not drawn, and the branches each sample took. Plain text and HTML: no widgets.

Decisions and traps:

- The summary line and the table say the kind, so that a node shown as values tells why
  (``_table_caption``): labels, encoded bytes, boxes, keypoints, polygons and vertices are
  values, not pixels.
- Encoded bytes are shown as their format (from the file's first bytes) and size, never as a
  list of numbers.
"""

from __future__ import annotations

import html
from typing import Any

import numpy as np

from augkit import grid
from augkit.errors import GraphError
from augkit.tensors import TensorList


def summary_html(name: str, batch: TensorList, shown: int) -> str:
    return f"<b>{html.escape(name)}</b>: {html.escape(summary_text(batch, shown))}"


def summary_text(batch: TensorList, shown: int) -> str:
    shapes = batch.shape()
    if not shapes:
        shape = "no samples"
    elif all(s == shapes[0] for s in shapes):
        shape = f"shape {shapes[0]}"
    else:
        shape = f"{len(set(shapes))} shapes: " + ", ".join(map(str, shapes[:3]))
        shape += ", …" if len(shapes) > 3 else ""
    text = (
        f"{len(batch)} samples, {batch.dtype.name}, layout {batch.layout() or 'none'}, "
        f"kind {batch.kind}, {shape}"
    )
    if shown < len(batch):
        text += f"; the first {shown} shown"
    return text


# The first bytes of the file formats a reader may hand over, for the summary of encoded samples.
_MAGIC = (
    (b"\xff\xd8\xff", "JPEG"),
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"GIF8", "GIF"),
    (b"BM", "BMP"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
)


def _table_caption(batch: TensorList) -> str:
    """Why the batch is shown as values: its kind, and what it holds."""
    kind = batch.kind
    name = kind.name
    if name == "labels":
        why = "class numbers (image nodes' tiles are titled with them)"
    elif name == "encoded":
        why = "each sample is a file's bytes; the decoder's node shows the images"
    elif name in grid.NOT_DRAWN_KINDS:
        why = "coordinates, not pixels"
    elif kind.is_generic and batch.dtype.name == "BOOL":
        why = "bool values are not drawn (a Python function's kind='mask' would draw them)"
    else:
        why = "not of an image's shape (HWC, CHW or HW, with 1, 3 or 4 channels)"
    return f"kind {kind}: {why}"


def _encoded_text(array: np.ndarray) -> str:
    """``"JPEG, 41213 bytes: ff d8 ff e0 00 10 …"``: what a file's bytes are, in short."""
    data = array.tobytes() if array.dtype == np.uint8 and array.ndim == 1 else b""
    if not data:
        return f"{array.size} values of {array.dtype}"
    name = next((n for magic, n in _MAGIC if data.startswith(magic)), None)
    if name is None and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        name = "WebP"
    head = " ".join(f"{b:02x}" for b in data[:6]) + (" …" if len(data) > 6 else "")
    return f"{name or 'unknown format'}, {len(data)} bytes: {head}"


def branches_taken(pipe: Any, name: str | None) -> list[str]:
    """Per sample of node ``name``, the branches it took, as a tile's title shows them: an
    ``if`` as "condition=True", a choice among named branches (a policy's operations) by the
    branch's name (an empty name, and auto_augment's "skip", are left out)."""
    if name is None:
        return []
    try:
        records = pipe.choices(name)
    except GraphError:  # debug mode, or nothing run yet: no branches to tell
        return []
    texts = []
    for record in records:
        parts = []
        for label, case in record.items():
            if isinstance(case, bool):
                parts.append(f"{label.removeprefix('if ')}={case}")
            elif case and case != "skip":  # auto_augment's stage that ran nothing
                parts.append(str(case))
        texts.append(", ".join(parts))
    return texts


def values_table(batch: TensorList, titles: list[str]) -> str:
    """An HTML table of a batch that is not drawn: per sample, its values (or a summary of
    them when they are many; for encoded bytes, their format and size), under a caption that
    says the batch's kind."""
    rows = []
    encoded = batch.kind.name == "encoded"
    for i, sample in enumerate(batch):
        array = np.asarray(sample)
        if array.size == 0:
            shown = "(empty)"
        elif encoded:
            shown = _encoded_text(array)
        elif array.size <= 16:
            shown = np.array2string(array, precision=4, separator=", ")
        else:
            shown = f"min {array.min():.4g}, max {array.max():.4g}, mean {array.mean():.4g}"
        rows.append(
            f"<tr><td>{i}</td><td>{html.escape(titles[i])}</td><td>{array.shape}</td>"
            f"<td><code>{html.escape(shown)}</code></td></tr>"
        )
    caption = html.escape(_table_caption(batch))
    return (
        f"<table style='font-size:12px'><caption style='text-align:left'>{caption}</caption>"
        "<tr><th>#</th><th>sample</th><th>shape</th>"
        f"<th>values</th></tr>{''.join(rows)}</table>"
    )
