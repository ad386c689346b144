"""Pin and pick: keep the samples on screen while tweaking, or choose them by file or label.

Pinning keeps the first reader's ``source_info`` of the batch on screen: Rerun draws anew on
those samples, Reset starts the next epoch and shows them again (``Pipeline.pick``), controls
and edits recompute them; only Next batch moves on (and unpins).

Decisions and traps:

- The pick box takes numbers and class names as labels, anything else as file names; a list
  that mixes them is taken as file names (a name that is no file is then an error).
- ``pin_button`` is set from code by ``pin()``; ``_pinning`` keeps that from acting again.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import ipywidgets as widgets

from augkit.errors import GraphError
from augkit.pipeline import Pipeline
from augkit.tensors import TensorList
from augkit.widgets.batch_text import summary_html


class PinAndPick:
    """The pin button and the pick box (a part of ``augkit.widgets.Viewer``)."""

    # Set by the viewer and its other parts.
    pipe: Pipeline
    batch: TensorList | None
    max_samples: int
    node_picker: widgets.Dropdown
    summary: widgets.HTML
    _act: Callable[[Callable[[], object]], None]
    _ran: Callable[[Any], None]
    _refresh: Callable[[], None]
    _names: Callable[[], dict[int, str]]

    def _init_pinning(self) -> None:
        self.pinned: list[str] | None = None  # the pinned samples' names (pin(), pick())
        self._pinning = False  # the pin button is being set from code: do not act
        self.pin_button = widgets.ToggleButton(
            value=False,
            description="Pin",
            icon="thumb-tack",
            tooltip="keep these samples (by file): Rerun and Reset keep them, Next batch moves on",
        )
        self.pick_box = widgets.Text(
            value="",
            placeholder="file names or labels, comma-separated; Enter",
            description="pick",
            continuous_update=False,
        )
        self.pin_button.observe(self._on_pin, names="value")
        self.pick_box.observe(self._on_pick_box, names="value")

    def pin(self, on: bool = True) -> None:
        """Keep the samples on screen (by file) while tweaking: Rerun draws anew on them,
        Reset starts the next epoch and shows them again, controls and edits recompute them;
        only Next batch moves on (and unpins). ``pin(False)`` lets go.

        Raises:
            GraphError: a pipeline without a reader (an external source's samples have no
                names to keep).
        """
        if not on:
            self.pinned = None
        else:
            names = self._reader_sources()
            if not names:
                raise GraphError(
                    "pin(): this pipeline's samples come from no reader, so there are no file "
                    "names to keep them by"
                )
            self.pinned = names
        self._pinning = True
        try:
            self.pin_button.value = self.pinned is not None
        finally:
            self._pinning = False
        self._show_pinned()

    def pick(
        self,
        names: Sequence[str] | str | None = None,
        *,
        labels: Sequence[int | str] | int | str | None = None,
    ) -> None:
        """Show chosen samples, by file name (``"grace_hopper.jpg"``, or the reader's
        ``"people/grace_hopper.jpg"``) or by label (numbers or class names: the first
        batch's worth of them), and pin them (``pin``). See ``Pipeline.pick``.

        Raises:
            ArgumentError: a name or label no sample has (nothing on screen changes).
        """
        self.pipe.pick(names, labels=labels)
        self._ran(())
        self.pin(True)
        self._refresh()

    def _on_pin(self, change: Mapping[str, Any]) -> None:
        if not self._pinning:
            self._act(lambda: self.pin(bool(change["new"])))

    def _on_pick_box(self, change: Mapping[str, Any]) -> None:
        text = str(change["new"]).strip()
        if not text:
            return
        items = [item.strip() for item in text.split(",") if item.strip()]
        # Numbers and class names are labels; anything else is a file name.
        classes = set(self._names().values())
        as_labels = all(item.lstrip("-").isdigit() or item in classes for item in items)
        if as_labels:
            labels = [int(i) if i.lstrip("-").isdigit() else i for i in items]
            self._act(lambda: self.pick(labels=labels))
        else:
            self._act(lambda: self.pick(items))

    def _reader_sources(self) -> list[str]:
        """The names of the samples on screen, as the first reader gave them ([] if none)."""
        for op in self.pipe.operators():
            if op.schema.role == "reader" and op.outputs:
                return list(self.pipe.value(op.outputs[0].name).source_info())
        return []

    def _show_pinned(self) -> None:
        if self.batch is not None and self.node_picker.value is not None:
            shown = min(len(self.batch), self.max_samples)
            self.summary.value = (
                summary_html(self.node_picker.value, self.batch, shown) + self._pinned_note()
            )

    def _pinned_note(self) -> str:
        if self.pinned is None:
            return ""
        return html.escape(f" · pinned: {len(self.pinned)} samples (Next batch moves on)")
