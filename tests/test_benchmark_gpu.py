"""The GPU benchmark (``benchmarks/gpu.py``) and the prepared GPU run
(``benchmarks/gpu_check.sh``), checked on a machine without a GPU: the benchmark runs in its
degraded mode (CPU rows, "no GPU found" and why), the script parses, and every test file the
script selects imports with nothing but the GPU machine's packages. No timing is asserted."""

from __future__ import annotations

import dataclasses
import pathlib
import subprocess
import sys
import textwrap

import pytest

from augkit.backend import gpu_unavailable_reason
from augkit.operators.registry import REGISTRY
from benchmarks import gpu as bg

ROOT = pathlib.Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_check.sh"
GREP = ["grep", "-rlE", r"pytest\.mark\.gpu", "tests", "--include=*.py"]

# The GPU machine's Python packages (benchmarks/README.md, "The GPU benchmark"), by import name,
# besides the standard library and the repository's own packages.
GPU_MACHINE = {
    "numpy", "torch", "torchvision", "cupy", "cupyx", "cupy_backends", "cv2", "PIL", "scipy",
    "cloudpickle", "matplotlib", "mpl_toolkits", "pytest", "_pytest", "pytest_timeout",
    "pyarrow", "pandas", "augkit", "tests", "benchmarks",
}  # fmt: skip

# Optional there (refused, but augkit falls back without a word): simplejpeg may travel in .whl/.
OPTIONAL = {"simplejpeg"}

# Run by a fresh interpreter: refuses any import, made by a file of this repository, of a
# top-level package that is neither in the standard library nor in GPU_MACHINE, and records it
# (OPTIONAL ones are refused without being recorded: the script must also work without them).
_GUARD = textwrap.dedent(
    """
    import sys

    ROOT, ALLOWED, OPTIONAL = {root!r}, {allowed!r}, {optional!r}
    REFUSED = []

    class Guard:
        def find_spec(self, name, path=None, target=None):
            top = name.partition(".")[0]
            if top in ALLOWED or top in sys.stdlib_module_names or path is not None:
                return None
            frame = sys._getframe(1)
            while frame is not None and frame.f_code.co_filename.startswith("<frozen"):
                frame = frame.f_back
            where = frame.f_code.co_filename if frame is not None else ""
            if where.startswith(ROOT) and "/.venv/" not in where:
                if top not in OPTIONAL:
                        REFUSED.append(f"{{where}} imports {{name}}")
                raise ImportError(f"{{name}} is not on the GPU machine")
            return None

    sys.meta_path.insert(0, Guard())
    """
)


def _guarded(body: str) -> str:
    guard = _GUARD.format(root=str(ROOT), allowed=sorted(GPU_MACHINE), optional=sorted(OPTIONAL))
    return guard + textwrap.dedent(body)


def test_the_degraded_report_has_the_cpu_rows_and_says_no_gpu(tmp_path):
    reason = gpu_unavailable_reason()
    if reason is None:
        pytest.skip("this machine has a GPU: the degraded mode is not what runs here")
    out = tmp_path / "gpu.md"
    code = _guarded(
        f"""
        from benchmarks import gpu
        status = gpu.main(["--quick", "--out", {str(out)!r}])
        assert not REFUSED, REFUSED
        sys.exit(status)
        """
    )
    run = subprocess.run(
        [sys.executable, "-W", "error", "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    text = out.read_text()
    assert "degraded: CPU only" in text and f"**no GPU found**: {reason}" in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    cpu = [r for r in rows if bg.CPU_LABEL in r]
    gpu = [r for r in rows if bg.GPU_LABEL in r]
    assert len(cpu) == len(gpu) == len(bg.WORKLOADS)
    for row in cpu:
        rate = row.split("|")[3].strip().split(" ")[0]
        assert float(rate) > 0, row
    for row in gpu:
        assert f"not available: no GPU found ({reason})" in row
    assert "DALI on the GPU" in text and "`--quick`" in text


def test_the_gpu_rows_run_on_the_fake_gpu(fake_gpu, monkeypatch, tmp_path):
    """Every GPU row of the benchmark, on tests/fake_cupy (CuPy's rules, no device) with the
    mixed decoder's torchvision code on torch's CPU device: what the device run will do, short
    of CUDA itself. No timing is asserted."""
    from augkit.operators.decoders.image import ImageDecoder

    monkeypatch.setattr(ImageDecoder, "gpu_decode_device", "cpu")
    out = tmp_path / "gpu.md"
    assert bg.main(["--quick", "--data", str(ROOT / "data" / "images"), "--out", str(out)]) == 0
    text = out.read_text()
    assert "tests/fake_cupy (no device)" in text and "degraded" not in text
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    gpu = [r for r in rows if bg.GPU_LABEL in r]
    assert len(gpu) == len(bg.WORKLOADS)
    for row in gpu:
        assert "not available" not in row, row
        assert float(row.split("|")[3].strip().split(" ")[0]) > 0, row


def test_a_missing_gpu_kernel_is_named_not_a_crash(monkeypatch):
    schema = REGISTRY["resize"]
    monkeypatch.setitem(REGISTRY, "resize", dataclasses.replace(schema, devices=("cpu",)))
    args = bg.parse_args(["--quick"])
    contenders = bg.make_contenders(args, None)
    by = {(c.workload, c.gpu): c for c in contenders}
    assert by[("decode", True)].failed is None
    for workload in ("a", "b"):
        assert by[(workload, False)].failed is None
        assert "no GPU kernel yet for fn.resize (devices ('cpu',))" in by[(workload, True)].failed


def test_edit_images_xp_is_the_tutorials_function():
    import numpy as np

    from benchmarks.functions import edit_images

    rng = np.random.default_rng(0)
    a, b = (rng.integers(0, 256, (30, 40, 3), dtype=np.uint8) for _ in range(2))
    for got, want in zip(bg.edit_images_xp(a, b), edit_images(a, b), strict=True):
        np.testing.assert_array_equal(got, want)


def test_the_check_script_parses_and_selects_the_gpu_test_files():
    subprocess.run(["bash", "-n", str(SCRIPT)], check=True)
    script = SCRIPT.read_text()
    assert "grep -rlE 'pytest\\.mark\\.gpu' tests --include='*.py'" in script
    for needed in ("-m gpu", "--continue-on-collection-errors", "--timeout=", "--junitxml="):
        assert needed in script
    assert 'python3 -m benchmarks.gpu --out "$OUT/gpu.md"' in script


def test_the_selected_test_files_import_with_the_gpu_machines_packages():
    files = subprocess.run(GREP, cwd=ROOT, capture_output=True, text=True, check=True)
    selected = sorted(files.stdout.split())
    assert "tests/operators/test_gpu_decoder.py" in selected
    code = _guarded(
        f"""
        import pytest
        status = pytest.main(
            ["--collect-only", "-q", "-m", "gpu", "-p", "no:cacheprovider", *{selected!r}]
        )
        assert not REFUSED, REFUSED
        sys.exit(int(status))
        """
    )
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, (run.stdout[-3000:], run.stderr[-3000:])
