"""Which targets belong to an image node (``augkit.overlay_links``), without ipywidgets or
matplotlib: the rule is the graph's, and the viewer only draws what it finds."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

# One pipeline, each line a case of the rule: boxes moved with the images in one call with
# input sets, then flipped by the same coin as the images (bb_flip), the images then resized
# (relative boxes stay right), and the same images flipped without the boxes.
_PIPELINE = """
import numpy as np
from augkit import fn, kinds
from augkit.pipeline import Pipeline
from augkit.overlay_links import overlay_nodes

image = np.zeros((20, 30, 3), np.uint8)
boxes = np.array([[0.1, 0.1, 0.5, 0.5]], np.float32)
pipe = Pipeline(batch_size=2, num_threads=1, device_id=None, seed=1)
with pipe:
    images = fn.external_source(source=lambda: [image] * 2, batch=True, layout="HWC")
    given = fn.python_function(
        fn.external_source(source=lambda: [boxes] * 2, batch=True),
        function=lambda x: x,
        kind=kinds.BOXES,
        name="given",
    )
    rotated, moved = fn.rotate([images, given], angle=10.0)
    coin = fn.random.coin_flip(name="coin")
    flipped = fn.flip(rotated, horizontal=coin, name="flipped")
    flipped_boxes = fn.bb_flip(moved, horizontal=coin, ltrb=True, name="flipped_boxes")
    small = fn.resize(flipped, resize_x=16, resize_y=16, name="small")
    alone = fn.flip(images, name="alone")
    bright = fn.brightness_contrast(small, brightness=1.2, name="bright")
    pipe.set_outputs(bright, alone, flipped_boxes)  # small is no output: only the graph links it
found = {
    name: overlay_nodes(pipe, name)
    for name in ("flipped", "small", "alone", "given", rotated.name)
}
found["rotated"] = found.pop(rotated.name)
found["moved"] = moved.name
pipe.close()
"""


def _run(blocked: tuple[str, ...]) -> dict:
    """``_PIPELINE`` in a fresh interpreter where importing any of ``blocked`` fails; its
    overlays, and which of the blocked modules got into ``sys.modules`` anyway."""
    code = textwrap.dedent(
        f"""
        import json, sys
        for name in {blocked!r}:
            sys.modules[name] = None  # `import name` raises ImportError
        {textwrap.indent(_PIPELINE, "        ").strip()}
        loaded = [n for n in sys.modules if n.split(".")[0] in {blocked!r}]
        loaded = [n for n in loaded if sys.modules[n] is not None]
        print(json.dumps({{"found": found, "loaded": loaded}}))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_overlay_nodes_need_neither_ipywidgets_nor_matplotlib():
    result = _run(("ipywidgets", "matplotlib", "ipyevents"))
    assert result["loaded"] == []
    found = result["found"]
    # Flipped by the same coin as the boxes after one rotate call: the flipped boxes.
    assert found["flipped"] == {"boxes": "flipped_boxes"}
    # A resize of the images alone leaves relative boxes right.
    assert found["small"] == {"boxes": "flipped_boxes"}
    # Rotated with the boxes, not flipped yet: the rotated boxes, not the flipped ones.
    assert found["rotated"] == {"boxes": found["moved"]}
    # The images flipped without the boxes get none; boxes are no image to draw on.
    assert found["alone"] == {}
    assert found["given"] == {}
