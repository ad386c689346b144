# augkit developer tasks. `make test` is what CI runs (.ci/run).
PY ?= python3
VENV = .venv
BIN = $(VENV)/bin
STAMP = $(VENV)/.installed
# Debian's Chromium, which the browser test (tests/test_viewer_browser.py) drives with Playwright.
CHROMIUM = /usr/bin/chromium
# Debian's strace, with which tests/test_ray.py checks that a local Ray talks on loopback only.
STRACE = /usr/bin/strace

# Only the folders that exist yet are linted.
LINT_PATHS = $(wildcard augkit tests benchmarks examples)
# Notebooks whose stored outputs pytest checks with nbval.
NOTEBOOKS = $(wildcard notebooks/*.ipynb)

# Jupyter refuses to start as root without this flag.
ifeq ($(shell id -u),0)
LAB_FLAGS = --allow-root
endif

.PHONY: venv test lint format demo lab bench bench-ops dali-venv dali-reference dali-parity clean distclean

venv: $(STAMP) $(CHROMIUM) $(STRACE)

# torch comes through pip on purpose: /etc/xdg/pip caps it at the release on this machine's disk.
$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --upgrade pip
	$(BIN)/python -m pip install -e '.[dev]'
	touch $@

# Installed when missing and we are root; otherwise the browser test fails saying so (set
# AUGKIT_SKIP_BROWSER=1 to skip it instead).
$(CHROMIUM):
	@if [ "$$(id -u)" = 0 ]; then apt-get update && apt-get install -y chromium; \
	else echo "$(CHROMIUM) is missing: install Debian's chromium (as root) for the browser test" >&2; fi

# Installed when missing and we are root; otherwise tests/test_ray.py's network check fails
# saying so.
$(STRACE):
	@if [ "$$(id -u)" = 0 ]; then apt-get update && apt-get install -y strace; \
	else echo "$(STRACE) is missing: install Debian's strace (as root) for tests/test_ray.py" >&2; fi

lint: venv
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)

# The docstrings' examples of augkit/ run too (--doctest-modules); paths given here replace
# pyproject's testpaths, so tests/ is named.
# Then the GPU path once more, on tests/fake_cupy (CuPy's rules on NumPy, no device needed): the
# gpu-marked tests of the files that have them, less those marked cuda (tests/conftest.py).
GPU_TEST_FILES = $(shell grep -rl "pytest.mark.gpu" tests --include='*.py')
test: lint
	$(BIN)/python -m pytest --doctest-modules augkit tests $(if $(NOTEBOOKS),--nbval --nbval-sanitize-with notebooks/nbval_sanitize.cfg $(NOTEBOOKS))
	AUGKIT_FAKE_GPU=1 $(BIN)/python -m pytest -m gpu -q $(GPU_TEST_FILES)

format: venv
	$(BIN)/ruff check --fix $(LINT_PATHS)
	$(BIN)/ruff format $(LINT_PATHS)

# Runs the Python operators notebook headless: the executed copy and its image grids (PNG, saved
# by the notebook where AUGKIT_OUT points) land in out/.
demo: venv
	mkdir -p out
	rm -f out/*.png
	AUGKIT_OUT=$(CURDIR)/out $(BIN)/jupyter nbconvert --to notebook --execute --output-dir out \
		notebooks/python_operators.ipynb
	@ls out/python_operators.ipynb out/*.png

lab: venv
	mkdir -p notebooks
	$(BIN)/jupyter lab --notebook-dir=notebooks --ip=127.0.0.1 $(LAB_FLAGS)

bench: venv
	@if [ -f benchmarks/__main__.py ]; then $(BIN)/python -m benchmarks; \
	elif [ -f benchmarks/run.py ]; then $(BIN)/python benchmarks/run.py; \
	else echo "no benchmarks yet (benchmarks/__main__.py or benchmarks/run.py)" >&2; exit 1; fi

# DALI 2.4 in a side venv (a 424 MB wheel, one time): the benchmark's contender and the source
# of the stored parity references (tests/dali_parity).
DALI_VENV = benchmarks/_work/dali-venv
dali-venv: venv
	$(BIN)/python -c "import pathlib, benchmarks.dali as d; d.ensure_dali_venv(pathlib.Path('$(DALI_VENV)'), print)"

# DALI's outputs of the parity cases, stored in tests/dali_parity/reference/ (FAMILIES=... for
# some of them); then the table of closeness, docs/dali_parity.md.
dali-reference: dali-venv
	env -u VIRTUAL_ENV -u PYTHONPATH $(DALI_VENV)/bin/python tests/dali_parity/generate.py $(FAMILIES)
	env -u VIRTUAL_ENV -u PYTHONPATH $(DALI_VENV)/bin/python tests/dali_parity/coco_reference.py
	env -u VIRTUAL_ENV -u PYTHONPATH $(DALI_VENV)/bin/python tests/iterators_reference.py
	env -u VIRTUAL_ENV -u PYTHONPATH $(DALI_VENV)/bin/python tests/auto_aug_reference.py
	env -u VIRTUAL_ENV -u PYTHONPATH $(DALI_VENV)/bin/python tests/subscript_reference.py
	env -u VIRTUAL_ENV -u PYTHONPATH $(DALI_VENV)/bin/python tests/conditionals_reference.py
	env -u VIRTUAL_ENV -u PYTHONPATH $(DALI_VENV)/bin/python tests/auto_aug_policy_reference.py

dali-parity: venv
	$(BIN)/python -m tests.dali_parity.report

# Only the per-operator speed table (benchmarks/operators.py): augkit, DALI 2.4 CPU and
# Albumentations on 320x320 photos, one thread and two.
bench-ops: venv
	$(BIN)/python -m benchmarks --only operators

clean:
	rm -rf out build dist .pytest_cache .ruff_cache .hypothesis benchmarks/_work
	find . -path ./$(VENV) -prune -o \( -name __pycache__ -o -name '*.egg-info' -o -name .ipynb_checkpoints \) -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
