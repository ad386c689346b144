"""What a parity case is, and the inputs cases run on. NumPy only (the DALI venv loads it).

A case (one row of a family's ``CASES`` list)::

    ParityCase(
        "hue_30",  # unique name within the family
        lambda fn, types, x: fn.hue(x, hue=30.0),
        input="images",  # which of INPUT_SETS ``x`` is
        max_diff=1,
        mean_diff=0.05,  # allowed |augkit - DALI|: largest and mean
        reason="DALI rounds in float32",  # why not bit for bit (docs/dali_parity.md shows it)
    )

``body`` returns one node or a tuple of nodes (every output is compared). Per-sample argument
values that must be the same in both libraries come from an external source, not from
``fn.random.*`` (the two libraries' random streams differ): ``per_sample(fn, [10.0, -20.0, 33.0,
5.0])`` gives one value per sample of the batch.

Tolerances, in the output's units (levels for uint8), checked on every sample of every output:

- exact (the default, ``max_diff=0``): bit for bit DALI's (NaN where DALI has NaN).
- ``max_diff``: the largest |augkit - DALI| allowed; ``None`` allows any (then ``mean_diff``
  must bound the mean).
- ``mean_diff``: the largest mean |augkit - DALI| over a sample; ``None``: not bounded apart.
- ``differing``: at most this many elements of a sample may differ at all (each by at most
  ``max_diff``): "exact but for at most 2 pixels a level off" is ``max_diff=1, differing=2``.
- A case that is not exact must say why in ``reason`` (a ValueError otherwise), and must bound
  how much of a sample may differ (``differing`` or ``mean_diff``): a tolerance that allows
  every element off would let a real bug through. ``note`` is any other remark for the docs.
  Shapes, dtypes and layouts must always be equal.

Decisions and traps:

- The inputs are stored, not recomputed: Pillow's resampling (which made them) may change with
  its version, and then every reference would be stale.
- Bodies must use only arguments that both libraries accept with the same meaning.
- A case is exact only where augkit's computation does not depend on the CPU it runs on.
  OpenCV, NumPy and torch pick SIMD code at run time, and some of those paths round floats
  differently from one CPU to another, so a case exact on the Intel Xeon that stored DALI's
  references can be a level off on another CPU (``filters/filter_gray_large``: exact on an
  AVX-512 AMD EPYC, one pixel off on another EPYC, as with AVX2 or SSE4.2 IPP). Measured by
  running every case with another CPU's dispatch emulated (``tests/test_dali_parity.py``'s
  ``test_matches_dali_on_other_cpus``; ``cv2.setUseOptimized(False)`` shows the same for
  OpenCV), on OpenCV 5.0 with IPP 2026.0, NumPy 2.4 and torch 2.14:

  - ``cv2.filter2D`` correlates through a DFT from 130 taps (8-bit or float32 in and out; 50
    taps for other type pairs: uint8 to float32 changes between 7x7 and 9x9); then its float32
    rounding follows the dispatch of the Intel IPP inside OpenCV (``OPENCV_IPP``): AVX-512 IPP
    (k0) or no IPP give DALI's bits, AVX2 (l9) or SSE4.2 (y8) IPP a pixel a level off
    (``filters/filter_gray_large``: 118.500015 becomes 118.5, which rounds to even).
  - Float multiply-adds that OpenCV's AVX2 dispatch fuses (FMA) and SSE4.x/AVX does not:
    ``filter2D``'s direct loop, ``sepFilter2D`` (gaussian, laplacian), ``warpAffine`` and
    ``warpPerspective`` on floats, ``cv2.transform`` (colour conversions): a few ulps of the
    float32 values (2.4e-6 on [0, 1] for warpPerspective), a level of an integer output where a
    value is next to a half. OpenCV's
    AVX-512 and AVX2 dispatch gave the same bits in every case.
  - NumPy's float32 functions (``exp``, ``sin``, ``arctan2``..., and ``exp`` in the gaussian
    windows) have AVX2 and AVX-512 loops that differ from its baseline loop by an ulp (the
    baseline gives the C library's bits, DALI's); ``fn.transforms``' float32 products too.
  - torch's bilinear resize (the linear resize's fast path): its AVX2/AVX-512 kernel against
    its scalar one (``ATEN_CPU_CAPABILITY=default``), a level on 1-6% of the pixels.
  - Exact on every dispatch: integer and fixed-point paths (``cvtColor``, ``LUT``, Pillow's
    8-bit resampling, ``sumElems`` of integers), libjpeg-turbo's decoding (its SIMD is bit
    exact: ``JSIMD_FORCENONE=1`` changes nothing) and float paths without reassociation.
"""

from __future__ import annotations

import importlib
import pathlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
REFERENCE = HERE / "reference"
INPUTS_FILE = REFERENCE / "inputs.npz"
PHOTOS_DIR = HERE.parents[1] / "data" / "images"
# The photos of the input sets (resized; "jpegs" are the resized photos encoded as JPEG files).
PHOTOS = [
    "animals/chelsea_cat.jpg",
    "objects/coffee_cup.jpg",
    "people/astronaut_eileen_collins.jpg",
    "space/hubble_deep_field.jpg",
]

# name -> layout of each input set in inputs.npz (samples stored as "<set>/<i>").
INPUT_SETS = {
    "images": "HWC",  # 4 photos, uint8 RGB, different sizes (about 48-80 pixels a side)
    "gray": "HWC",  # the same photos as 1-channel uint8 (HWC with C=1)
    "float": "HWC",  # the photos as float32 in [0, 1]
    "chw": "CHW",  # the photos transposed to CHW, uint8
    "jpegs": "",  # the 4 photos as small JPEG files (1-D uint8 arrays; one 4:4:4, three 4:2:0)
    "vectors": "",  # 4 float32 1-D arrays of different lengths (tensor and maths operators)
    "matrices": "",  # 4 float32 2-D arrays (3x4, 5x2, ...) with negative values
    # Annotations of the 4 photos (the same 4 samples, in the same order):
    "boxes": "",  # float32 (n, 4) boxes, relative ltrb in [0, 1], n = 3, 1, 0, 5
    "box_labels": "",  # int32 (n, 1) class ids of those boxes
    "masks": "HWC",  # uint8 (h, w, 1) label maps of the photos' sizes (values 0, 1, 2, 3)
    "keypoints": "",  # float32 (k, 2) relative (x, y) points, k = 4, 2, 1, 3
}
# ``input=("images", "boxes", "box_labels")`` gives the body a tuple of nodes, one per set.


@dataclass(frozen=True)
class ParityCase:
    name: str
    body: Callable[[Any, Any, Any], Any]
    input: str | tuple[str, ...] = "images"
    max_diff: float | None = 0
    mean_diff: float | None = None
    differing: int | None = None
    reason: str = ""
    note: str = ""
    family: str = ""

    @property
    def exact(self) -> bool:
        """Bit for bit DALI's output."""
        return self.max_diff == 0

    def __post_init__(self) -> None:
        names = self.input if isinstance(self.input, tuple) else (self.input,)
        if not names or any(name not in INPUT_SETS for name in names):
            raise ValueError(
                f"{self.name}: input must be one of {sorted(INPUT_SETS)}, or a tuple of them"
            )
        if self.exact:
            if self.mean_diff or self.differing is not None or self.reason:
                raise ValueError(
                    f"{self.name}: an exact case (max_diff=0) takes no mean_diff, differing or "
                    "reason"
                )
            return
        if not self.reason.strip():
            raise ValueError(f"{self.name}: a case that is not exact must give its reason")
        if self.differing is None and self.mean_diff is None:
            raise ValueError(
                f"{self.name}: bound how much of a sample may differ (differing or mean_diff)"
            )
        if self.differing is not None and (self.differing < 1 or self.max_diff is None):
            raise ValueError(f"{self.name}: differing is a count >= 1, with a max_diff")

    def tolerance(self) -> str:
        """The tolerance in words, for the docs: "max / mean", and "on <= k a sample"."""
        if self.exact:
            return "exact"
        text = f"{'any' if self.max_diff is None else f'{self.max_diff:g}'} / "
        text += "–" if self.mean_diff is None else f"{self.mean_diff:g}"
        if self.differing is not None:
            text += f", on ≤ {self.differing} a sample"
        return text


def differences(ours: np.ndarray, theirs: np.ndarray) -> np.ndarray:
    """|ours - theirs| per element, in float64: 0 where equal (NaN where both are NaN, equal
    infinities), infinite where only one is NaN."""
    a, b = ours.astype(np.float64), theirs.astype(np.float64)
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    with np.errstate(invalid="ignore"):
        diff = np.where(same, 0.0, np.abs(a - b))
    return np.where(np.isnan(diff), np.inf, diff)


def per_sample(fn: Any, values: list[Any], dtype: Any = np.float32) -> Any:
    """An external source giving sample ``i`` the value ``values[i]`` (as a 0-D array, or an
    N-D one when the values are lists): the same per-sample argument in DALI and augkit."""
    batch = [np.asarray(v, dtype=dtype) for v in values]
    return fn.external_source(source=lambda: batch, batch=True)


def load_inputs(path: pathlib.Path = INPUTS_FILE) -> dict[str, list[np.ndarray]]:
    """The input sets: name -> list of samples."""
    with np.load(path) as stored:
        sets: dict[str, list[np.ndarray]] = {}
        for key in sorted(stored.files, key=lambda k: (k.split("/")[0], int(k.split("/")[1]))):
            name, _ = key.split("/")
            sets.setdefault(name, []).append(stored[key])
    return sets


def families() -> dict[str, list[ParityCase]]:
    """Every family's cases: ``cases_<family>.py`` -> its ``CASES``, each case tagged."""
    found: dict[str, list[ParityCase]] = {}
    for info in sorted(pkgutil.iter_modules([str(HERE)]), key=lambda i: i.name):
        if not info.name.startswith("cases_"):
            continue
        family = info.name.removeprefix("cases_")
        module = importlib.import_module(f"{__package__}.{info.name}")
        cases = [ParityCase(**{**c.__dict__, "family": family}) for c in module.CASES]
        names = [c.name for c in cases]
        if len(set(names)) != len(names):
            raise ValueError(f"cases_{family}.py: case names repeat")
        found[family] = cases
    return found


def reference_file(family: str) -> pathlib.Path:
    return REFERENCE / f"{family}.npz"


def flatten(outputs: list[list[np.ndarray]], layouts: list[str]) -> dict[str, np.ndarray]:
    """Outputs (per output, per sample) as npz entries "<output>/<sample>", plus the layouts."""
    entries = {f"{k}/{i}": s for k, samples in enumerate(outputs) for i, s in enumerate(samples)}
    entries["layouts"] = np.array(layouts, dtype="U16")
    return entries


def stored_outputs(family: str) -> dict[str, tuple[list[list[np.ndarray]], list[str]]]:
    """DALI's stored outputs of a family: case name -> (per output, per sample; layouts)."""
    path = reference_file(family)
    result: dict[str, tuple[list[list[np.ndarray]], list[str]]] = {}
    with np.load(path, allow_pickle=False) as stored:
        per_case: dict[str, dict[str, np.ndarray]] = {}
        for key in stored.files:
            case, rest = key.split(":", 1)
            per_case.setdefault(case, {})[rest] = stored[key]
    for case, entries in per_case.items():
        layouts = [str(s) for s in entries.pop("layouts").tolist()]
        outputs: list[list[np.ndarray]] = []
        for key in sorted(entries, key=lambda k: tuple(int(p) for p in k.split("/"))):
            k, _ = (int(p) for p in key.split("/"))
            while len(outputs) <= k:
                outputs.append([])
            outputs[k].append(entries[key])
        result[case] = (outputs, layouts)
    return result


def _giving(batch: list[np.ndarray]) -> Callable[[], list[np.ndarray]]:
    return lambda: batch


def run_case(pipeline_class: Any, fn: Any, types: Any, case: ParityCase, inputs: dict) -> Any:
    """``case`` run once on its input set by a library (DALI's or augkit's ``Pipeline``, ``fn``
    and ``types``): one iteration, one thread, the whole input set as the batch. Returns
    (outputs: per output, per sample; layouts)."""
    names = case.input if isinstance(case.input, tuple) else (case.input,)
    batches = [inputs[name] for name in names]
    batch = batches[0]
    pipe = pipeline_class(batch_size=len(batch), num_threads=1, device_id=None, seed=1234)
    with pipe:
        nodes = tuple(
            fn.external_source(source=_giving(b), batch=True, layout=INPUT_SETS[name] or None)
            for name, b in zip(names, batches, strict=True)
        )
        x = nodes if isinstance(case.input, tuple) else nodes[0]
        outs = case.body(fn, types, x)
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        pipe.set_outputs(*outs)
    pipe.build()
    result = pipe.run()
    outputs = [[np.array(out.at(i)) for i in range(len(batch))] for out in result]
    layouts = [str(out.layout() or "") for out in result]
    del pipe
    return outputs, layouts
