# augkit developer tasks. `make test` is what CI runs (.ci/run).
PY ?= python3
VENV = .venv
BIN = $(VENV)/bin
STAMP = $(VENV)/.installed
# Every package the venv holds, at one version each: `make lock` writes it, `make venv` installs
# exactly it (uv pip sync), whatever PyPI released since. pyproject.toml keeps the ranges a user
# of the library needs; this is what the project tests with.
LOCK = requirements.lock
# uv, the installer, at the version the lock pins (pip only bootstraps it into the venv).
UV_VERSION = $(shell sed -n 's/^uv==//p' $(LOCK))
UV = $(BIN)/uv
PIP_QUIET = -q --disable-pip-version-check
# uv reads none of pip's configuration: pip's package sources (indexes, find-links), passed on.
# Where pip has several that hold one pinned version, the first one listed wins.
UV_SOURCES = $(shell $(PY) tools/pip_sources.py) --index-strategy unsafe-best-match
# `make lock UPGRADE=1` takes every package's newest release; `UPGRADE='ipython jupyterlab'` those.
UPGRADE ?=
UV_UPGRADE = $(if $(filter 1 all,$(UPGRADE)),--upgrade,$(addprefix --upgrade-package=,$(UPGRADE)))
# Debian's Chromium, which the browser test (tests/test_viewer_browser.py) drives with Playwright.
CHROMIUM = /usr/bin/chromium
# Debian's strace, with which tests/test_ray.py checks that a local Ray talks on loopback only.
STRACE = /usr/bin/strace

# Only the folders that exist yet are linted.
LINT_PATHS = $(wildcard augkit tests benchmarks examples tools)
# Notebooks whose stored outputs pytest checks with nbval.
NOTEBOOKS = $(wildcard notebooks/*.ipynb)

# Jupyter refuses to start as root without this flag.
ifeq ($(shell id -u),0)
LAB_FLAGS = --allow-root
endif

.PHONY: venv lock test-tools test lint typecheck format demo lab bench bench-ops dali-venv dali-reference dali-parity clean distclean

# The Python venv: all `make demo` and `make lab` need.
venv: $(STAMP)

# Debian's Chromium and strace: what only the tests need besides the venv.
test-tools: $(CHROMIUM) $(STRACE)

# The venv's Python, and uv in it at the lock's version. The venv starts without pip (its install
# and removal would cost seconds): the system's pip bootstraps uv into it, or where there is none,
# the venv's own, from ensurepip. uv pip sync then puts in the lock's pip like any package.
define venv_with_uv
test -x $(BIN)/python || $(PY) -m venv --without-pip $(VENV)
	$(UV) --version 2>/dev/null | grep -qx 'uv $(UV_VERSION)\( .*\)\?' || \
	$(PY) -m pip --python $(BIN)/python install $(PIP_QUIET) uv==$(UV_VERSION) || \
	{ $(BIN)/python -m ensurepip >/dev/null && $(BIN)/python -m pip install $(PIP_QUIET) uv==$(UV_VERSION); }
endef

# A changed lock (or pyproject.toml) reinstalls: uv pip sync adds, removes and changes packages
# until the venv holds the lock's versions and nothing else, then augkit itself goes in, editable,
# with none of its dependencies (the lock has them) and the lock's setuptools to build it.
$(STAMP): $(LOCK) pyproject.toml
	$(venv_with_uv)
	$(UV) pip sync --python $(BIN)/python $(UV_SOURCES) $(LOCK)
	$(UV) pip install --python $(BIN)/python --no-deps --no-build-isolation -e .
	touch $@

# Resolves pyproject.toml's `dev` extra (which includes torch, notebook, jpeg, ray), uv and pip
# into the lock, keeping its pins where they still fit (UPGRADE= above to move them), then writes
# binder/requirements.txt's pins from it. Needs the network (PyPI). An unchanged lock keeps its
# date, so that it does not reinstall the venv.
lock:
	$(venv_with_uv)
	cp $(LOCK) $(LOCK).new
	printf 'uv\npip\n' | $(UV) pip compile -q pyproject.toml --extra dev - --output-file $(LOCK).new \
		--python $(BIN)/python $(UV_SOURCES) $(UV_UPGRADE) --custom-compile-command 'make lock' \
		|| { rm -f $(LOCK).new; exit 1; }
	if cmp -s $(LOCK).new $(LOCK); then rm $(LOCK).new; else mv $(LOCK).new $(LOCK); fi
	$(BIN)/python tools/binder_requirements.py

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

# mypy over augkit/ (pyproject.toml's [tool.mypy]: which modules it reports on, and why in
# docs/architecture.md, "Type checking"). Its cache, .mypy_cache, makes a rerun take a second.
typecheck: venv
	$(BIN)/mypy

# The docstrings' examples of augkit/ run too (--doctest-modules); paths given here replace
# pyproject's testpaths, so tests/ is named.
# Then the GPU path once more, on tests/fake_cupy (CuPy's rules on NumPy, no device needed): the
# gpu-marked tests of the files that have them, less those marked cuda (tests/conftest.py).
GPU_TEST_FILES = $(shell grep -rl "pytest.mark.gpu" tests --include='*.py')
test: lint typecheck test-tools
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
	rm -rf out build dist .pytest_cache .ruff_cache .mypy_cache .hypothesis benchmarks/_work
	find . -path ./$(VENV) -prune -o \( -name __pycache__ -o -name '*.egg-info' -o -name .ipynb_checkpoints \) -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
