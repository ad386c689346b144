#!/usr/bin/env bash
# The prepared GPU run (issue 18): on the GPU machine, from the repository root, with $OUT an
# output folder, in under 8 minutes:
#   1. the versions, `nvidia-smi -L`;
#   2. simplejpeg from .whl/ when it travelled (the CPU decoder's fast path, so that the CPU rows
#      are augkit's best; the machine has no package index), installed into /tmp/site;
#   3. the GPU tests: only the test files that contain gpu-marked tests (found with grep, so
#      that modules importing packages missing there, ipywidgets, ray, hypothesis..., are not
#      collected), `-m gpu`, a timeout per test; log $OUT/gpu_tests.log, JUnit $OUT/gpu_tests.xml;
#   4. the GPU benchmark: python3 -m benchmarks.gpu --out $OUT/gpu.md (GPU against CPU, decode,
#      decode + resize to 224x224, the tutorial's pipeline).
# augkit runs from the tree (PYTHONPATH=., no installation). What it cannot do there: measure
# NVIDIA DALI on the GPU (its ~500 MB wheel cannot travel: 64 MiB per copy, no package index).
# Usage (one call of the device tool, carry [".whl", "data/bench"], timeout_s about 540):
#   bash benchmarks/gpu_check.sh
set -u
OUT="${OUT:-/tmp/gpu_check}"
mkdir -p "$OUT"
cd "$(dirname "$0")/.."
export PYTHONPATH=".${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
STATUS=0

echo "== machine"
date -u
python3 --version
nvidia-smi -L || echo "nvidia-smi failed"
nproc

if ls .whl/*.whl >/dev/null 2>&1; then
    echo "== wheels from .whl/"
    ls .whl/
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl && export PYTHONPATH="/tmp/site:$PYTHONPATH"
fi

echo "== versions"
python3 - <<'EOF'
import importlib
for name in ("numpy", "torch", "torchvision", "cupy", "cv2", "PIL", "scipy", "pytest",
             "pytest_timeout", "simplejpeg"):
    try:
        module = importlib.import_module(name)
        print(f"{name} {getattr(module, '__version__', '?')}")
    except Exception as exc:
        print(f"{name}: not importable ({type(exc).__name__}: {exc})")
import torch
print("torch.cuda:", torch.cuda.is_available(), torch.version.cuda,
      torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
from augkit import backend
from augkit.operators.decoders import nvjpeg
print("augkit: gpu_unavailable_reason() =", backend.gpu_unavailable_reason())
print("augkit: nvjpeg.unavailable_reason() =", nvjpeg.unavailable_reason())
EOF

echo "== GPU tests"
mapfile -t FILES < <(grep -rlE 'pytest\.mark\.gpu' tests --include='*.py' | sort)
printf '  %s\n' "${FILES[@]}"
# ~200 gpu-marked tests; CuPy compiles each new elementwise kernel on first use (NVRTC, a
# fresh machine has no kernel cache), so they run on 4 pytest-xdist workers where it is there.
PARALLEL=()
if python3 -c "import xdist" 2>/dev/null; then PARALLEL=(-n 4); fi
timeout 300 python3 -m pytest -m gpu -p no:cacheprovider -q -rs "${PARALLEL[@]}" \
    --continue-on-collection-errors --timeout=120 \
    --junitxml="$OUT/gpu_tests.xml" "${FILES[@]}" >"$OUT/gpu_tests.log" 2>&1
TESTS=$?
tail -n 40 "$OUT/gpu_tests.log"
echo "pytest exit status: $TESTS"
[ "$TESTS" -eq 0 ] || STATUS=1

echo "== GPU benchmark"
timeout 130 python3 -m benchmarks.gpu --out "$OUT/gpu.md" 2>"$OUT/gpu_bench.log"
BENCH=$?
cat "$OUT/gpu.md" 2>/dev/null || tail -n 30 "$OUT/gpu_bench.log"
echo "benchmark exit status: $BENCH"
[ "$BENCH" -eq 0 ] || STATUS=1
exit "$STATUS"
