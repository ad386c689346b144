"""Which targets belong to an image node (``augkit.overlay_links``), without ipywidgets or
matplotlib: the rule is the graph's, and the viewer only draws what it finds."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
BLOCKED = ("ipywidgets", "ipyevents", "matplotlib")


def overlays_of_one_pipeline() -> dict[str, dict[str, str]]:
    """``overlay_nodes`` of the nodes of one pipeline, each a case of the rule: images and
    boxes of one source, moved together by one call with input sets, then flipped by the same
    coin (flip and bb_flip), the images then resized (relative boxes stay right) and
    brightened; the same images flipped without the boxes. Run in the child process."""
    import numpy as np

    from augkit import fn, kinds
    from augkit.overlay_links import overlay_nodes
    from augkit.pipeline import Pipeline

    samples = [np.zeros((20, 30, 3), np.uint8)] * 2, [np.array([[0.1, 0.1, 0.5, 0.5]])] * 2
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1)
    with pipe:
        images, boxes = fn.external_source(
            source=lambda: samples,
            num_outputs=2,
            batch=True,
            layout=["HWC", ""],
            kind=[kinds.IMAGE, kinds.BOXES],
            name="source",
        )
        rotated, moved = fn.rotate([images, boxes], angle=10.0)
        coin = fn.random.coin_flip(name="coin")
        flipped = fn.flip(rotated, horizontal=coin, name="flipped")
        flipped_boxes = fn.bb_flip(moved, horizontal=coin, ltrb=True, name="flipped_boxes")
        small = fn.resize(flipped, resize_x=16, resize_y=16, name="small")
        # small is no output: only the graph links it (outputs get the outputs' targets too)
        bright = fn.brightness_contrast(small, brightness=1.2, name="bright")
        alone = fn.flip(images, name="alone")
        pipe.set_outputs(bright, alone, flipped_boxes)
    names = {"images": images.name, "boxes": boxes.name, "rotated": rotated.name}
    found = {key: overlay_nodes(pipe, name) for key, name in names.items()}
    found.update({name: overlay_nodes(pipe, name) for name in ("flipped", "small", "alone")})
    found["names"] = {"boxes": boxes.name, "moved": moved.name}
    pipe.close()
    return found


def test_overlay_nodes_need_neither_ipywidgets_nor_matplotlib():
    code = (
        "import json, sys\n"
        f"for name in {BLOCKED!r}:\n"
        "    sys.modules[name] = None  # importing it raises ImportError\n"
        "from tests.test_overlay_links import overlays_of_one_pipeline\n"
        "found = overlays_of_one_pipeline()\n"
        f"loaded = [n for n, m in sys.modules.items() if m and n.split('.')[0] in {BLOCKED!r}]\n"
        "print(json.dumps({'found': found, 'loaded': loaded}))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["loaded"] == []
    found, names = report["found"], report["found"]["names"]
    # Images and boxes of one source, as it gave them.
    assert found["images"] == {"boxes": names["boxes"]}
    # Rotated with the boxes in one call: the rotated boxes, not the flipped ones.
    assert found["rotated"] == {"boxes": names["moved"]}
    # Flipped by the same coin as the boxes: the flipped boxes.
    assert found["flipped"] == {"boxes": "flipped_boxes"}
    # A resize of the images alone leaves relative boxes right.
    assert found["small"] == {"boxes": "flipped_boxes"}
    # The images flipped without the boxes get none; boxes are no image to draw on.
    assert found["alone"] == {}
    assert found["boxes"] == {}
