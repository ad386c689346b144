"""The per-operator speed table of the benchmark (``benchmarks/operators.py``) is consistent:
every pair names operators augkit has (a row for one it lacks says so: tested on a made-up
row), the bodies run in augkit as the table runs them, the Albumentations transforms build and
run, and the report computes its ratios and medians. No timing is asserted, and DALI is not
needed."""

from __future__ import annotations

import pathlib
import time

import numpy as np
import pytest
from PIL import Image

from augkit.operators.registry import resolve
from benchmarks import dali_runner
from benchmarks import operators as ops
from benchmarks import report as rp

ROOT = pathlib.Path(__file__).resolve().parents[1]
JPEGS = sorted((ROOT / "data" / "images").glob("*/*.jpg"))

# The operators of the vocabulary issue (DALI names; transforms.* are not image operators),
# the ones augkit had before it, and the table's additions (tensor operators, reductions).
ISSUE_OPERATORS = {
    "random_resized_crop",
    "decoders.image_random_crop",
    "decoders.image_crop",
    "decoders.image_slice",
    "slice",
    "pad",
    "paste",
    "multi_paste",
    "warp_affine",
    "experimental.warp_perspective",
    "water",
    "sphere",
    "jitter",
    "experimental.median_blur",
    "experimental.dilate",
    "experimental.erode",
    "hsv",
    "hue",
    "saturation",
    "brightness",
    "contrast",
    "color_twist",
    "color_space_conversion",
    "equalize",
    "clahe",
    "lookup_table",
    "normalize",
    "gaussian_blur",
    "laplacian",
    "filter",
    "noise.gaussian",
    "noise.salt_and_pepper",
    "noise.shot",
    "erase",
    "grid_mask",
    "jpeg_compression_distortion",
    "transpose",
    "reductions.mean",
    "reductions.std_dev",
}
EXISTING = {
    "brightness_contrast",
    "crop_mirror_normalize",
    "flip",
    "rotate",
    "resize",
    "crop",
    "cast",
}
GPU_ONLY_IN_DALI = {
    "jitter",
    "experimental.median_blur",
    "experimental.dilate",
    "experimental.erode",
}
BATCH = 2  # the consistency runs use small batches of the 320×320 photos


@pytest.fixture(scope="module")
def inputs() -> ops.Inputs:
    """Two batches of BATCH photos resized to 320×320, and BATCH JPEG files per batch."""
    photos = np.stack(
        [
            np.asarray(Image.open(p).convert("RGB").resize((ops.SIZE, ops.SIZE)))
            for p in JPEGS[: 2 * BATCH]
        ]
    )
    jpegs = [np.fromfile(p, dtype=np.uint8) for p in JPEGS[: 2 * BATCH]]
    return ops.Inputs(photos, jpegs)


def test_the_table_covers_the_issue_and_the_existing_operators() -> None:
    names = [pair.name for pair in ops.PAIRS]
    assert len(names) == len(set(names)), "an operator appears twice"
    assert set(names) >= ISSUE_OPERATORS | EXISTING
    assert set(ops.PAIRS_BY_NAME) == set(names)
    assert [p.name for p in ops.PAIRS if not p.counted] == ["external_source"]


def test_gpu_only_operators_are_compared_with_albumentations_only() -> None:
    gpu_only = {pair.name for pair in ops.PAIRS if not pair.dali_cpu}
    assert gpu_only == GPU_ONLY_IN_DALI


@pytest.mark.parametrize("pair", ops.PAIRS, ids=lambda p: p.name)
def test_every_pair_names_operators_augkit_has(pair: ops.OperatorPair) -> None:
    """Every operator of the table is registered (the table's "not in augkit yet" rows served
    while operators were being written; a pair whose operator went missing would otherwise
    drop out of the table, and of the body test below, without a word)."""
    for name in (pair.name, *pair.uses):
        resolve(name)  # KeyError names it
    assert ops.augkit_missing(pair) is None
    assert pair.input in ("images", "jpegs")


def test_make_rows_without_the_side_venv_says_why(inputs: ops.Inputs) -> None:
    rows, contenders = ops.make_rows(ops.PAIRS, inputs, 1, None, "left out with --no-dali", None)
    assert [row.pair for row in rows] == ops.PAIRS
    for row in rows:
        if ops.augkit_missing(row.pair) is None:
            assert {"augkit 1", "augkit 2"} <= set(row.timings)
        else:
            assert row.absent["augkit 1"].startswith("not in augkit yet")
        dali = row.absent["DALI 1"]
        assert ("GPU only" in dali) == (not row.pair.dali_cpu)
        if row.pair.dali_cpu:
            assert "left out with --no-dali" in dali
        if row.pair.albumentations is None:
            assert row.absent["Albumentations"] == ops.NO_TRANSFORM
        else:
            assert "not available" in row.absent["Albumentations"]
    assert all(name.startswith("augkit") for _, name, _ in contenders)


@pytest.mark.parametrize("pair", ops.PAIRS, ids=lambda p: p.name)
def test_the_body_runs_in_augkit_as_the_table_runs_it(
    pair: ops.OperatorPair, inputs: ops.Inputs
) -> None:
    from augkit import fn, types
    from augkit.pipeline import Pipeline

    batches = [
        inputs.photos[:BATCH] if pair.input == "images" else inputs.jpegs[:BATCH],
        inputs.photos[BATCH:] if pair.input == "images" else inputs.jpegs[BATCH:],
    ]
    turn = iter(batches * 4)
    pipe = ops.build_pipeline(
        Pipeline, fn, types, pair, lambda: next(turn), 1, ops.SEED, batch_size=BATCH
    )
    try:
        outputs = pipe.run()
    finally:
        pipe.close()
    outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
    assert outputs and all(len(out) == BATCH for out in outputs)


ALBUMENTATIONS_PAIRS = [pair for pair in ops.PAIRS if pair.albumentations is not None]


@pytest.mark.parametrize("pair", ALBUMENTATIONS_PAIRS, ids=lambda p: p.name)
def test_the_albumentations_transform_builds_and_runs(
    pair: ops.OperatorPair, inputs: ops.Inputs
) -> None:
    albumentations = pytest.importorskip("albumentations")
    import cv2

    transform = pair.albumentations(albumentations, cv2)
    out = transform(image=inputs.photos[0])["image"]
    assert isinstance(out, np.ndarray) and out.ndim in (2, 3)


@pytest.mark.parametrize("pair", ops.PAIRS, ids=lambda p: p.name)
def test_the_report_shows_every_call(pair: ops.OperatorPair) -> None:
    body = ops.lambda_text(pair.body)
    assert body.startswith("fn.") or (body == "x" and not pair.counted)
    assert "lambda" not in body.split("(", 1)[0]
    assert body.count("(") == body.count(")")
    albu = ops.lambda_text(pair.albumentations)
    assert albu == "–" if pair.albumentations is None else albu.startswith(("A.", "_jitter("))


def test_inputs_cycle_from_the_start_batch(inputs: ops.Inputs) -> None:
    many = ops.Inputs(np.arange(3 * ops.BATCH_SIZE, dtype=np.uint8).reshape(-1, 1, 1, 1), [])
    source = many.source("images", start=1)
    firsts = [int(source()[0, 0, 0, 0]) for _ in range(4)]
    assert firsts == [32, 64, 0, 32]
    singles = many.images("images", 1, ops.BATCH_SIZE + 1)
    assert [int(s[0, 0, 0]) for s in singles[:2]] == [32, 33]
    assert int(singles[-1][0, 0, 0]) == 64
    with pytest.raises(ValueError, match="unknown input"):
        many.batches("audio")


def test_select() -> None:
    assert ops.select(None) == ops.PAIRS
    assert [p.name for p in ops.select("hue, flip")] == ["hue", "flip"]
    with pytest.raises(ValueError, match="not in the operator table: nope"):
        ops.select("flip,nope")


def test_parse_args_of_the_operator_table() -> None:
    from benchmarks.__main__ import RESULTS, WORK, parse_args

    args = parse_args(["--only", "operators", "--quick", "--ops", "flip,hue"])
    assert [p.name for p in args.op_pairs] == ["flip", "hue"]
    assert (args.op_rounds, args.op_batches, args.op_warmup) == (1, 2, 0)
    assert args.ops_out == WORK / "operators.md"
    full = parse_args(["--only", "operators"])
    assert full.op_pairs == ops.PAIRS and full.ops_out == RESULTS / "operators.md"
    assert (full.op_rounds, full.op_batches, full.op_warmup, full.op_seconds) == (3, 8, 1, 1.0)
    with pytest.raises(SystemExit):
        parse_args(["--only", "operators", "--ops", "nope"])


def _timing(rates: dict[int, float], failed: str | None = None) -> rp.Timing:
    return rp.Timing(rates=dict(rates), failed=failed)


def test_render_operators_pairs_ratios_within_rounds() -> None:
    flip, hue, water, jitter = (ops.PAIRS_BY_NAME[n] for n in ("flip", "hue", "water", "jitter"))
    rows = [
        ops.Row(
            flip,
            {
                "augkit 1": _timing({0: 200.0, 1: 300.0}),
                "augkit 2": _timing({0: 400.0, 1: 500.0}),
                "DALI 1": _timing({0: 100.0, 1: 100.0}),
                "DALI 2": _timing({0: 400.0, 1: 250.0}),
                "Albumentations": _timing({0: 400.0, 1: 600.0}),
            },
        ),
        ops.Row(
            hue,
            {
                "augkit 1": _timing({0: 50.0, 1: 50.0}),
                "augkit 2": _timing({}, failed="RuntimeError: boom | bang"),
                "DALI 1": _timing({0: 100.0, 1: 100.0}),
                "DALI 2": _timing({0: 100.0}),
                "Albumentations": _timing({0: 100.0, 1: 100.0}),
            },
        ),
        ops.Row(water, {}, {"augkit 1": "not in augkit yet: `water`"}),
        ops.Row(
            jitter,
            {"augkit 1": _timing({0: 10.0}), "augkit 2": _timing({0: 20.0})},
            {"DALI 1": "DALI 2.4 runs it on the GPU only", "Albumentations": ops.NO_TRANSFORM},
        ),
    ]
    lines = rp.render_operators(
        rows,
        rounds=2,
        batches=1,
        images=256,
        data=pathlib.Path("data/bench"),
        versions={"augkit": "0", "dali": "2.4.0", "albumentations": "2.0.8", "opencv": "5"},
        dali_missing=None,
        albumentations_missing=None,
        cpu=None,
        quick=True,
        seconds=1.0,
    )
    text = "\n".join(lines)
    table = lines[: lines.index("## The calls")]
    row = {line.split("|")[1].strip(): line for line in table if line.startswith("| `")}
    cells = [c.strip() for c in row["`flip`"].split("|")[1:-1]]
    # augkit 1 thread: median 250; ratios paired within rounds: (2, 3) -> 2.5; (1, 2) -> 1.5;
    # (0.5, 0.5) -> 0.5.
    assert cells[1:7] == ["250", "100", "500", "2.50×", "1.50×", "0.50×"]
    cells = [c.strip() for c in row["`hue`"].split("|")[1:-1]]
    assert cells[4:7] == ["0.50×", "–", "0.50×"]
    assert "augkit, 2 threads failed: RuntimeError: boom \\| bang" in row["`hue`"]
    assert "not in augkit yet: `water`" in row["`water`"]
    assert "GPU only" in row["`jitter`"] and "no such transform" not in row["`jitter`"]
    # Medians over the operators that have both: (2.5, 0.5) -> 1.5; 2 threads: 1.5 only.
    assert "1 thread **1.50×** (2 operators); 2 threads **1.50×** (1)" in text
    assert "augkit / Albumentations **0.50×** (2)" in text
    assert "below it: `hue` 0.50×" in text
    assert "median ≥ 1.5× DALI CPU on one thread: 1.50×: met" in text
    assert "0.50×: **missed**" in text
    assert "not in augkit yet (1, not counted): `water`" in text
    assert "| `flip` | `fn.flip(x, horizontal=1)` | `A.HorizontalFlip(p=1)` |" in text


def test_the_runners_albumentations_pass_without_dali(tmp_path: pathlib.Path) -> None:
    """The side venv's Albumentations pass (``op_load``, ``op_pass``), run here: it does not
    import DALI."""
    pytest.importorskip("albumentations")
    photos = np.zeros((ops.BATCH_SIZE, ops.SIZE, ops.SIZE, 3), np.uint8)
    photos[:, :, : ops.SIZE // 2] = 200
    path = tmp_path / "photos.npy"
    np.save(path, photos)
    loaded = dali_runner.run_op_load({"images": str(path), "jpegs": [str(JPEGS[0])]})
    assert loaded["images"] == ops.BATCH_SIZE and loaded["jpegs"] == 1
    assert loaded["albumentations"] and loaded["albumentations_missing"] is None
    reply = dali_runner.run_op_pass(
        {"library": "albumentations", "operator": "flip", "batches": 1, "start": 0}
    )
    assert reply["images"] == ops.BATCH_SIZE and reply["seconds"] > 0
    with pytest.raises(ValueError, match="unknown library"):
        dali_runner.run_op_pass({"library": "torch", "operator": "flip", "batches": 1})


class _FakePipe:
    def __init__(self, sleep: float) -> None:
        self.sleep, self.calls = sleep, 0

    def run(self) -> None:
        self.calls += 1
        time.sleep(self.sleep)


def test_a_pass_stops_after_its_time_but_times_one_batch_at_least() -> None:
    pipe = _FakePipe(0.0)
    assert ops.time_runs(pipe, 3)[0] == 3 and pipe.calls == 4  # one untimed run first
    slow = _FakePipe(0.02)
    done, seconds = ops.time_runs(slow, 1000, seconds=0.05)
    assert 1 <= done < 1000 and slow.calls == done + 1 and seconds >= 0.02 * done
    assert ops.time_runs(_FakePipe(0.02), 1000, seconds=1e-9)[0] == 1
    calls = []
    images = [np.zeros((2, 2, 3), np.uint8)] * 1000
    done, _ = ops.time_albumentations(
        lambda image: calls.append(time.sleep(0.01)), images, seconds=0.03
    )
    assert 1 <= done < 999 and len(calls) == done + 1


def test_the_table_runs_end_to_end_without_the_side_venv(tmp_path: pathlib.Path) -> None:
    """``run_table`` on a small set (32 JPEGs), augkit only: the rows of the operators augkit
    has are timed, the others say why they are not, and the report is written."""
    data = tmp_path / "set"
    for i in range(ops.BATCH_SIZE):
        folder = data / f"class{i % 2}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"photo{i:02d}.jpg").write_bytes(JPEGS[i % len(JPEGS)].read_bytes())
    out = tmp_path / "operators.md"
    settings = ops.TableSettings(
        data_root=data,
        work=tmp_path / "work",
        out=out,
        pairs=ops.select("flip,cast,jitter"),
        rounds=1,
        warmup=0,
        batches=1,
        dali_venv=None,
        dali_missing="left out with --no-dali",
    )
    logged: list[str] = []
    lines = ops.run_table(settings, logged.append)
    assert out.read_text() == "\n".join(lines) + "\n"
    table = lines[: lines.index("## The calls")]
    rows = {line.split("|")[1].strip(): line for line in table if line.startswith("| `")}
    flip = [c.strip() for c in rows["`flip`"].split("|")[1:-1]]
    assert flip[1].isdigit() and flip[2] == "–" and flip[4] == "–"  # augkit only
    assert "DALI not available (left out with --no-dali)" in flip[7]
    if ops.augkit_missing(ops.PAIRS_BY_NAME["jitter"]):
        assert "not in augkit yet: `jitter`" in rows["`jitter`"]
    assert "NVIDIA DALI CPU: **not available** (left out with --no-dali)" in "\n".join(lines)
    assert any("round 1/1" in m for m in logged)
    assert (tmp_path / "work" / "operators_photos.npy").exists()


def test_the_side_venv_gets_albumentations_alone_when_dali_is_there(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A DALI venv without Albumentations gets only Albumentations' step, and a failure of
    that step keeps DALI (the table then says Albumentations is not available)."""
    from benchmarks import dali

    venv = tmp_path / "dali-venv"
    steps: list[str] = []
    monkeypatch.setattr(dali, "_dali_version", lambda python: "2.4.0")
    monkeypatch.setattr(dali, "albumentations_version", lambda python: None)

    def failing_step(name: str, step: list[str], out, env, install_log) -> None:
        steps.append(name)
        raise dali.DaliUnavailable(f"`{name}` exited with status 1")

    monkeypatch.setattr(dali, "_run_step", failing_step)
    logged: list[str] = []
    python = dali.ensure_dali_venv(venv, logged.append)
    assert python == venv / "bin" / "python"
    assert steps == [f"pip install {dali.ALBUMENTATIONS_REQUIREMENT}"]
    assert any("going on without it" in m for m in logged)
    # Both there: nothing is installed.
    steps.clear()
    monkeypatch.setattr(dali, "albumentations_version", lambda python: "2.0.8")
    dali.ensure_dali_venv(venv, logged.append)
    assert steps == []


def test_a_failed_pass_in_the_side_venv_is_told_in_one_line() -> None:
    from benchmarks import dali

    dali_message = (
        "Critical error in pipeline:\nError in CPU operator `nvidia.dali.fn.slice`,\nwhich was "
        'used in the pipeline definition with the following traceback:\n\n  File "x.py", '
        "line 6, in p\n\nencountered:\n\nSlice can't be placed out of bounds with current "
        "policy.\nC++ context: [/opt/dali/slice.h:106] \nCurrent pipeline object is no longer "
        "valid."
    )
    line = dali_runner.one_line(RuntimeError(dali_message))
    assert line == "RuntimeError: Slice can't be placed out of bounds with current policy."

    class Runner:
        def request(self, command: dict) -> dict:
            raise dali.DaliUnavailable(
                f"dali_runner.py answered 'op_pass' with: {line}\nTraceback (most recent...)"
            )

    contender = ops.RunnerOperator(ops.PAIRS_BY_NAME["slice"], Runner(), "dali", 1, 1)
    with pytest.raises(ops.PassFailed) as failed:
        contender.run_pass()
    assert ops.describe(failed.value) == line
