"""Data kinds: what the samples of a batch *are*, beside their dtype and layout.

Every ``TensorList`` carries a kind (``batch.kind``), and every operator's schema says which
kinds its inputs accept and which kinds its outputs are (``augkit.operators.registry``), so a
pipeline that hands boxes to a colour operator, or a reader's labels to ``fn.resize``, is refused
when it is built, with a message naming the operator, the input and both kinds.

The kinds (DESIGN.md, "Data kinds"):

- ``image``: pixels (HWC, CHW, HW, ...);
- ``mask``: a label map (an integer class per pixel), transformed by geometry with the nearest
  neighbour, never blended;
- ``boxes``: N×4 coordinates per sample, with a ``box_format`` ("ltrb": left, top, right, bottom;
  "xywh": left, top, width, height) and ``relative`` (coordinates in [0, 1] of the image size) or
  absolute (pixels);
- ``keypoints``: N×2 (x, y) points, relative or absolute;
- ``polygons`` / ``vertices``: DALI's COCO polygon form (``polygons`` rows are [mask_idx,
  start_vertex, end_vertex]; ``vertices`` rows are (x, y));
- ``labels``: class numbers (a reader's second output);
- ``encoded``: a file's bytes, to be decoded;
- ``generic``: anything else, or not known (a Python function's output unless the user says
  what it is). A generic input passes every kind check: augkit never refuses what could run.

Kind names are ``KindName`` members (a ``StrEnum``): each equals its string (``KindName.MASK ==
"mask"``), so the names written as strings in operator schemas, and those in stored data, keep
working; the schemas' declarations are checked against them when an operator is declared
(``augkit.operators.registry``), so a misspelt kind fails at import.

Example:
    >>> from augkit import kinds
    >>> kinds.boxes("xywh", relative=False)
    Kind('boxes', box_format='xywh', relative=False)
    >>> str(kinds.IMAGE), kinds.parse("mask") is kinds.MASK
    ('image', True)
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from augkit.errors import suggest


class KindName(StrEnum):
    """The name of a data kind (see the module docstring). A member is a ``str`` equal to its
    value, with the same hash, and reads as its value (``str``, formatting and ``repr``), so
    it can stand wherever the plain string did, messages included.

    Example:
        >>> KindName.BOXES == "boxes", KindName("mask") is KindName.MASK, [KindName.IMAGE]
        (True, True, ['image'])
    """

    IMAGE = "image"
    MASK = "mask"
    BOXES = "boxes"
    KEYPOINTS = "keypoints"
    POLYGONS = "polygons"
    VERTICES = "vertices"
    LABELS = "labels"
    ENCODED = "encoded"
    GENERIC = "generic"

    def __repr__(self) -> str:
        return repr(self.value)


NAMES: tuple[KindName, ...] = tuple(KindName)


def kind_name(value: Any, where: str = "") -> KindName:
    """The ``KindName`` of a name (a ``KindName`` or its string).

    Raises:
        ValueError: not a kind's name; the message says ``where`` it was given ("in
            accepts"), lists the kinds and suggests the closest.
    """
    try:
        return KindName(value)
    except ValueError:
        close = suggest(value, NAMES) if isinstance(value, str) else ""
        place = f" {where}" if where else ""
        raise ValueError(
            f"unknown data kind {value!r}{place}; the kinds are {', '.join(NAMES)}.{close}"
        ) from None


BOX_FORMATS = ("ltrb", "xywh")


@dataclass(frozen=True)
class Kind:
    """A data kind (see the module docstring).

    Attributes:
        name: one of ``NAMES``.
        box_format: for boxes, "ltrb" or "xywh" (``None`` for other kinds).
        relative: for boxes and keypoints, whether coordinates are fractions of the image size
            (``None`` for other kinds).
    """

    name: KindName
    box_format: str | None = None
    relative: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", kind_name(self.name))
        if self.box_format is not None and self.box_format not in BOX_FORMATS:
            raise ValueError(f"box_format must be 'ltrb' or 'xywh', got {self.box_format!r}")

    @property
    def is_generic(self) -> bool:
        return self.name == "generic"

    def __str__(self) -> str:
        details = [d for d in (self.box_format, _relative(self.relative)) if d]
        return f"{self.name} ({', '.join(details)})" if details else self.name

    def __repr__(self) -> str:
        extra = ""
        if self.box_format is not None:
            extra += f", box_format={self.box_format!r}"
        if self.relative is not None:
            extra += f", relative={self.relative!r}"
        return f"Kind({self.name!r}{extra})"


def _relative(relative: bool | None) -> str:
    if relative is None:
        return ""
    return "relative" if relative else "absolute"


IMAGE = Kind(KindName.IMAGE)
MASK = Kind(KindName.MASK)
BOXES = Kind(KindName.BOXES, "ltrb", True)  # DALI's default box encoding: relative ltrb
KEYPOINTS = Kind(KindName.KEYPOINTS, relative=True)
POLYGONS = Kind(KindName.POLYGONS)
VERTICES = Kind(KindName.VERTICES)
LABELS = Kind(KindName.LABELS)
ENCODED = Kind(KindName.ENCODED)
GENERIC = Kind(KindName.GENERIC)

_PLAIN = {k.name: k for k in (IMAGE, MASK, POLYGONS, VERTICES, LABELS, ENCODED, GENERIC)}


def boxes(box_format: str = "ltrb", relative: bool = True) -> Kind:
    """The kind of boxes in ``box_format`` ("ltrb" or "xywh"), relative or absolute."""
    return Kind(KindName.BOXES, box_format, relative)


def keypoints(relative: bool = True) -> Kind:
    """The kind of (x, y) keypoints, relative or absolute."""
    return Kind(KindName.KEYPOINTS, relative=relative)


def vertices(relative: bool = False) -> Kind:
    """The kind of polygon vertices (x, y), relative (``readers.coco(ratio=True)``) or
    absolute; ``VERTICES`` says neither (a user's data: moved as absolute pixels)."""
    return Kind(KindName.VERTICES, relative=relative)


def parse(value: Any) -> Kind:
    """A ``Kind`` from a ``Kind`` or its name ("image", "boxes", ...; boxes and keypoints by
    name are DALI's defaults: relative, ltrb).

    Raises:
        ValueError: an unknown name.
        TypeError: neither a Kind nor a string.
    """
    if isinstance(value, Kind):
        return value
    if not isinstance(value, str):
        raise TypeError(f"expected a data kind (a name such as 'image', or a Kind), got {value!r}")
    name = kind_name(value)
    if name in _PLAIN:
        return _PLAIN[name]
    return BOXES if name == KindName.BOXES else KEYPOINTS


def from_layout(layout: str) -> Kind:
    """The kind a DALI-style ``layout=`` implies: an image for a layout with H and W axes
    ("HWC", "CHW", "HW", "DHWC", "FHWC", ...), else generic."""
    return IMAGE if layout and "H" in layout and "W" in layout else GENERIC
