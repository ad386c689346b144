"""What each tile of the picture on screen shows, and the click that opens one in the zoom.

Every picture the viewer draws (a grid, a sweep, a comparison) records its tiles
(``_set_tiles``: batch, sample, title, node), so that a click, ``select(i)`` and ``draws(i)``
work the same on each.

Decisions and traps:

- A click comes from ipyevents on the grid's ``Image``: ``dataX``/``dataY`` are in the
  picture's own pixels whatever its CSS scale, and ``grid.tile_at`` maps them to a tile.
- The zoom follows the tile it shows when the picture is drawn again (a slider moved), and
  hides when that tile is gone.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as widgets
import numpy as np
from ipyevents import Event

from augkit import grid
from augkit.errors import ArgumentError
from augkit.pipeline import Pipeline
from augkit.tensors import TensorList
from augkit.widgets.zoom import Zoom


@dataclasses.dataclass
class _Tile:
    """One tile of the picture on screen: sample ``index`` of ``batch``, titled ``title``,
    sample ``sample`` of node ``node``'s batch (None: a difference, of no node)."""

    batch: TensorList
    index: int
    title: str
    node: str | None
    sample: int


class TileSelection:
    """The viewer's tiles, the zoom under the grid and the clicks that fill it (a part of
    ``augkit.widgets.Viewer``)."""

    # Set by the viewer: the pipeline, the tile side, the grid's Image, the error catcher.
    pipe: Pipeline
    tile: int
    image: widgets.Image
    _act: Callable[[Callable[[], None]], None]

    def _init_tiles(self, columns: int) -> None:
        """The zoom panel, no tiles yet, and the grid's clicks (after ``image`` is made)."""
        self.zoom = Zoom()
        self.zoom.root.add_class("augkit-zoom")
        self.selected: int | None = None  # the tile shown in the zoom
        self._tiles: list[_Tile] = []  # what the grid on screen shows, tile by tile
        self._tile_columns = columns
        self._tile_band = 0
        self._grid_events = Event(source=self.image, watched_events=["click"])
        self._grid_events.on_dom_event(self._on_grid_event)

    def select(self, index: int) -> None:
        """Show tile ``index`` of the grid on screen in the zoom (what a click on it does):
        the sample at full resolution, the values under the cursor, a histogram per channel,
        and what the random operators drew for it (``Pipeline.draws``).

        Raises:
            ArgumentError: no such tile.
        """
        if not 0 <= index < len(self._tiles):
            raise ArgumentError(
                f"select(): no tile {index} (the grid shows {len(self._tiles)} tiles)"
            )
        tile = self._tiles[index]
        draws = self._draws_of(tile)
        layout = tile.batch.layout() or ""
        sample = np.asarray(tile.batch.at(tile.index))
        self.zoom.show(sample, layout=layout, kind=tile.batch.kind, title=tile.title, draws=draws)
        self.selected = index

    def draws(self, index: int) -> dict[str, Any]:
        """What the random operators drew for tile ``index`` of the grid on screen (one
        record of ``Pipeline.draws``: ``{"Rotate_4.angle": 12.4, ...}``)."""
        if not 0 <= index < len(self._tiles):
            raise ArgumentError(f"draws(): no tile {index} (the grid shows {len(self._tiles)})")
        return self._draws_of(self._tiles[index])

    def _draws_of(self, tile: _Tile) -> dict[str, Any]:
        if tile.node is None:  # a difference image: no node, no draws of its own
            return {}
        records = self.pipe.draws(tile.node)
        return records[tile.sample] if tile.sample < len(records) else {}

    def _on_grid_event(self, event: Mapping[str, Any]) -> None:
        """A click on the grid (ipyevents: ``dataX``/``dataY`` in the picture's own pixels):
        the tile under it goes to the zoom."""
        x, y = event.get("dataX"), event.get("dataY")
        if event.get("event", event.get("type")) != "click" or x is None or y is None:
            return
        index = grid.tile_at(x, y, len(self._tiles), self._tile_columns, self.tile, self._tile_band)
        if index is not None:
            self._act(lambda: self.select(index))

    def _set_tiles(self, tiles: list[_Tile], columns: int, titles: Sequence[str]) -> None:
        """Remember what each tile of the picture on screen shows (for clicks, ``select``)."""
        self._tiles = tiles
        self._tile_columns = columns
        self._tile_band = grid.title_height(self.tile) if any(titles) else 0
        if self.selected is not None and self.zoom.root.layout.display != "none":
            if self.selected < len(tiles):
                self.select(self.selected)  # the zoom follows the tile it shows
            else:
                self.zoom.hide()
