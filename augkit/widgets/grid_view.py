"""The picture of the node shown: its grid (tiles titled, targets drawn over them) or, for a
node that is not drawn, its table of values; the summary line and the overlay checkboxes.

Decisions and traps:

- What a node is follows its data kind (``batch.kind``), never a guess from dtype and shape:
  tiles are titled with the pipeline's first output of kind ``labels`` (a Python function's
  int32 value of shape (1,) is no label, and titles nothing); image and mask nodes are drawn
  (masks coloured by class, ``augkit.grid``); labels, encoded bytes, boxes, keypoints, polygons
  and vertices are shown as a table of values (``augkit.widgets.batch_text``). Only a generic
  node (a Python function's output that gave no ``kind=`` and no image layout) is drawn when
  its samples have an image's shape, as a function may return images unsaid.
- Tiles are titled "source file · label", the label with its class name where a reader knows
  it (``Pipeline.class_names()``: readers.file's class folders, readers.coco's categories):
  "people/grace_hopper.jpg · 3 people". Labels drawn on their boxes are not repeated there.
- The targets drawn over an image node are those ``augkit.overlay_links.overlay_nodes`` links
  to it, worked out once per node. A checkbox per overlay kind present (boxes, masks,
  keypoints, polygons) turns it on and off; that redraws the batch on screen and runs nothing.
- Each photo is fitted to its tile once per batch (``_fitted``): a checkbox or another node's
  overlays redraw the boxes, not the photos.
- Targets that cannot be drawn leave the images drawn without them, and the error shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

import ipywidgets as widgets
import numpy as np

from augkit import grid, overlays, viz
from augkit.errors import ArgumentError, AugkitError
from augkit.overlay_links import overlay_nodes
from augkit.pipeline import Pipeline
from augkit.tensors import TensorList
from augkit.widgets.batch_text import branches_taken, summary_html, values_table
from augkit.widgets.tiles import _Tile


def check_image_format(value: str) -> str:
    """``value`` if it is ``"jpeg"`` or ``"png"``, else the error saying so."""
    if value not in ("jpeg", "png"):
        raise ArgumentError(f"Viewer: image_format must be 'jpeg' or 'png', got {value!r}")
    return value


class GridView:
    """The grid or table of the node shown, its summary and overlay checkboxes (a part of
    ``augkit.widgets.Viewer``)."""

    # Set by the viewer and its other parts.
    pipe: Pipeline
    columns: int
    max_samples: int
    tile: int
    jpeg_quality: int
    node_picker: widgets.Dropdown
    _outputs: list[str]
    _has_batch: bool
    _act: Callable[[Callable[[], object]], None]
    _set_tiles: Callable[..., None]
    _render_compare: Callable[[str, TensorList, TensorList], bool]
    _pinned_note: Callable[[], str]

    def _init_grid_view(self, image_format: str) -> None:
        self.batch: TensorList | None = None
        self._image_format = image_format
        self._targets: dict[str, dict[str, str]] = {}  # node name -> its overlay nodes
        self._class_names: dict[int, str] | None = None
        self._fitted_batch: TensorList | None = None  # the batch whose tiles are fitted
        self._fitted: dict[int, Any] = {}  # tile position -> the photo fitted to it
        self.overlays: dict[str, str] = {}
        self.summary = widgets.HTML()
        self.overlay_toggles = {
            name: widgets.Checkbox(value=True, description=name, indent=False)
            for name in overlays.OVERLAY_KINDS
        }
        for toggle in self.overlay_toggles.values():
            toggle.layout.width = "auto"
            toggle.observe(self._on_toggle, names="value")
        self._toggles_box = widgets.HBox()
        self._toggles_box.layout.display = "none"
        self.image = widgets.Image(format=image_format)
        self.image.add_class("augkit-grid")  # for a page's scripts and tests (no layout)
        self.values = widgets.HTML()

    @property
    def image_format(self) -> str:
        """``"jpeg"`` or ``"png"``: how the grid travels (the next picture drawn uses it)."""
        return self._image_format

    @image_format.setter
    def image_format(self, value: str) -> None:
        self._image_format = check_image_format(value)
        self.image.format = value

    def snapshot(self) -> Any:
        """The picture on screen as an ``IPython.display.Image`` (JPEG or PNG, as it
        travels): the last expression of a cell shows it, and a saved notebook keeps it where
        the live widget shows only text (GitHub)."""
        from IPython.display import Image

        return Image(data=bytes(self.image.value), format=self.image_format)

    def _render(self) -> None:
        """Draw the node the picker shows: beside another (the compare picker), as a grid
        with its overlays, or as a table of values."""
        name = self.node_picker.value
        if name is None:
            return
        batch = self.pipe.value(name)
        self.batch = batch
        shown = batch[: self.max_samples] if len(batch) > self.max_samples else batch
        if grid.looks_like_images(shown) and self._render_compare(name, batch, shown):
            return
        if grid.looks_like_images(shown):
            drawn = self._overlay_batches(name, len(shown))
            on_boxes = "labels" in drawn and self.overlays["labels"] == self._labels_name()
            titles = self._titles(shown, per_box=on_boxes, name=name)
            try:
                self.image.value = self._grid_bytes(shown, titles, drawn)
            except AugkitError:
                if not drawn:
                    raise
                # Targets that cannot be drawn: the images without them, and the error shown.
                self.image.value = self._grid_bytes(shown, titles, {})
                self.image.layout.display = None
                self.values.value = ""
                self.summary.value = summary_html(name, batch, len(shown))
                raise
            self.image.layout.display = None
            self.values.value = ""
            self._set_tiles(
                [_Tile(shown, i, titles[i], name, i) for i in range(len(shown))],
                self.columns,
                titles,
            )
        else:
            self.overlays = {}
            self._show_toggles()
            self.image.layout.display = "none"
            self.values.value = values_table(shown, self._titles(shown))
            self._set_tiles([], self.columns, [])
        self.summary.value = summary_html(name, batch, len(shown)) + self._pinned_note()

    def _grid_bytes(self, shown: TensorList, titles: list[str], drawn: dict[str, Any]) -> bytes:
        """The grid of ``shown`` with the overlays ``drawn`` (``viz.GridOptions``'
        overlays), each photo fitted to its tile once per batch: a toggle or another node's
        overlays redraw the boxes, not the photos."""
        if self._fitted_batch is not self.batch:  # the node's whole batch: a new one per run
            self._fitted_batch, self._fitted = self.batch, {}

        def fit(pixels: np.ndarray, tile: int, position: int) -> Any:
            if position not in self._fitted:
                self._fitted[position] = grid.fit(pixels, tile)
            return self._fitted[position]

        options = self._grid_options(drawn, columns=self.columns, titles=titles)
        return self._encode(viz.render([shown], options, fit))

    def _grid_options(self, drawn: Mapping[str, Any], **options: Any) -> viz.GridOptions:
        """``viz.render``'s options: the overlay batches ``drawn`` (their labels too), this
        pipeline's class names, every sample given, then ``options``."""
        return viz.GridOptions(
            labels=drawn.get("labels"),
            boxes=drawn.get("boxes"),
            masks=drawn.get("masks"),
            keypoints=drawn.get("keypoints"),
            polygons=drawn.get("polygons"),
            vertices=drawn.get("vertices"),
            class_names=self._names(),
            max_samples=None,
            tile=self.tile,
            **options,
        )

    def _encode(self, picture: Any) -> bytes:
        """The grid's bytes as the ``Image`` widget takes them (``image_format``)."""
        if self.image_format == "png":
            return grid.to_png(picture)
        return grid.to_jpeg(picture, self.jpeg_quality)

    def _overlay_batches(self, name: str, count: int) -> dict[str, Any]:
        """The overlays of node ``name`` that are toggled on (the toggles show the kinds it
        has), by ``viz.GridOptions`` field, "labels" included where there is one per box."""
        if name not in self._targets:
            self._targets[name] = overlay_nodes(self.pipe, name)
        self.overlays = dict(self._targets[name])
        self._show_toggles()
        values = {kind: self.pipe.value(node) for kind, node in self.overlays.items()}
        values = {kind: batch for kind, batch in values.items() if len(batch) >= count}
        on = {kind for kind, toggle in self.overlay_toggles.items() if toggle.value}
        drawn: dict[str, Any] = {}
        if "boxes" in values and "boxes" in on:
            drawn["boxes"] = values["boxes"][:count]
            labels = values.get("labels")
            if labels is not None and all(
                labels.at(i).size == values["boxes"].at(i).size // 4 for i in range(count)
            ):
                drawn["labels"] = labels[:count]
        if "mask" in values and "masks" in on:
            drawn["masks"] = values["mask"][:count]
        if "keypoints" in values and "keypoints" in on:
            drawn["keypoints"] = values["keypoints"][:count]
        if "polygons" in values and "vertices" in values and "polygons" in on:
            drawn["polygons"] = values["polygons"][:count]
            drawn["vertices"] = values["vertices"][:count]
        return drawn

    def _show_toggles(self) -> None:
        """A checkbox per overlay kind the shown node has (none: no row)."""
        present = {"masks" if k == "mask" else k for k in self.overlays}
        toggles = [t for k, t in self.overlay_toggles.items() if k in present]
        if list(self._toggles_box.children) != toggles:
            self._toggles_box.children = toggles
        self._toggles_box.layout.display = None if toggles else "none"

    def _on_toggle(self, change: Mapping[str, Any]) -> None:
        # The batches on screen are drawn again, with or without the overlay: nothing runs.
        if self._has_batch:
            self._act(self._render)

    def _names(self) -> dict[int, str]:
        """The class names the pipeline's readers know (``Pipeline.class_names()``)."""
        if self._class_names is None:
            try:
                names = self.pipe.class_names()
            except (TypeError, ValueError, AttributeError):  # a reader's names that are broken
                names = {}  # title and tag with the numbers rather than lose the picture
            self._class_names = names if isinstance(names, dict) else {}
        return self._class_names

    def _titles(
        self, batch: TensorList, per_box: bool = False, name: str | None = None
    ) -> list[str]:
        """Per tile: its source file, then its label (with the class name where known:
        "people/grace_hopper.jpg · 3 people"); when those labels are drawn on the boxes (one
        per box, ``per_box``), they are not repeated in the title. Then, for node ``name`` of
        a pipeline with conditionals, the branches the sample took (``choices``):
        "do_rotate=True", or the operations a policy chose ("rotate, posterize")."""
        taken = branches_taken(self.pipe, name)
        labels = self._labels()
        sources = batch.source_info()
        if not any(sources):
            sources = self._sources()
        names = self._names()
        titles = []
        for i in range(len(batch)):
            parts = []
            if i < len(sources) and sources[i]:
                parts.append(sources[i])
            if labels is not None and i < len(labels) and not per_box:
                value = labels.at(i)
                if value.size == 1:
                    text = grid.label_text(value)
                    name = overlays.class_name(value.ravel()[0], names)
                    parts.append(text if name == text else f"{text} {name}")
                else:
                    parts.append(grid.label_text(value))
            if i < len(taken) and taken[i]:
                parts.append(taken[i])
            titles.append(" · ".join(parts))
        return titles

    def _labels(self) -> TensorList | None:
        """The pipeline's first output of kind labels (the reader's second output), if any."""
        name = self._labels_name()
        return None if name is None else self.pipe.value(name)

    def _labels_name(self) -> str | None:
        for name in self._outputs:
            if name and self.pipe.value(name).kind.name == "labels":
                return name
        return None

    def _sources(self) -> list[str]:
        """The source files of the batch, from the first node that has them (a node computed
        from no input, such as a random operator's, has none of its own): the readers' first
        (an intermediate node a chain let go would be computed again to be asked)."""
        readers = [
            d.name for n in self.pipe.operators() if n.schema.makes_batches for d in n.outputs
        ]
        for name in readers or self.pipe.nodes():
            # no index: the list, one per sample
            sources = cast(list[str], self.pipe.value(name).source_info())
            if any(sources):
                return sources
        return []
