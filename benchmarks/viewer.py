"""``python -m benchmarks.viewer``: how fast the viewer redraws a 4 x 4 grid of 300 x 300 photos.

Three times, each the median of ``--repeat`` runs:

- render: the grid of the node shown, drawn with Pillow and encoded as PNG (the viewer's path);
- slider move: from a new value of a slider to the new PNG in the ``Image`` widget, with the
  Python function recomputed on the cached batch (``set_function`` + ``rerun([operator])``);
- matplotlib: the same grid as a matplotlib figure saved as PNG (``augkit.viz.image_grid``),
  the path the viewer does not take, for the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from augkit import Pipeline, fn, types, viz
from augkit.widgets import Viewer

ROOT = Path(__file__).resolve().parent.parent


def brighten(image, amount=20):
    return np.clip(image.astype(np.int16) + amount, 0, 255).astype(np.uint8)


def median_ms(action: Callable[[int], object], repeat: int) -> float:
    times = []
    for k in range(repeat):
        start = time.perf_counter()
        action(k)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="runs per measure (median)")
    args = parser.parse_args()

    pipe = Pipeline(batch_size=16, num_threads=2, device_id=None, seed=0)
    with pipe:
        jpegs, labels = fn.readers.file(file_root=str(ROOT / "data" / "images"))
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        images = fn.resize(images, resize_x=300, resize_y=300)
        pipe.set_outputs(fn.python_function(images, function=brighten, name="brighten"), labels)
    viewer = Viewer(pipe, columns=4, max_samples=16, tile=200)
    assert viewer.error.value == "", viewer.error.value
    slider = viewer.sliders["brighten"]["amount"]

    def move(k: int) -> None:
        before = viewer.image.value
        slider.value = 10 + k % 2 * 20  # alternate: every move is a change
        assert viewer.image.value != before

    render = median_ms(lambda _: viewer._render(), args.repeat)
    moved = median_ms(move, args.repeat)
    batch = viewer.batch
    matplotlib = median_ms(lambda _: viz.image_grid(batch).savefig(_Sink(), format="png"), 5)
    size = len(viewer.image.value) / 1024
    pipe.close()
    rows = [
        ("render (Pillow + PNG)", render, ""),
        ("slider move -> new PNG", moved, ""),
        ("matplotlib figure -> PNG", matplotlib, f"  ({matplotlib / render:.0f}x render)"),
    ]
    print(f"4 x 4 grid of 300 x 300 photos, tile 200, PNG {size:.0f} KiB (medians)")
    for name, ms, note in rows:
        print(f"  {name:<28} {ms:7.1f} ms{note}")


class _Sink:
    """A file that forgets what is written (savefig needs one)."""

    def write(self, data: bytes) -> int:
        return len(data)


if __name__ == "__main__":
    main()
