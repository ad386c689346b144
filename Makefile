# augkit developer tasks. `make test` is what CI runs (.ci/run).
PY ?= python3
VENV = .venv
BIN = $(VENV)/bin
STAMP = $(VENV)/.installed
# Debian's Chromium, which the browser test (tests/test_viewer_browser.py) drives with Playwright.
CHROMIUM = /usr/bin/chromium

# Only the folders that exist yet are linted.
LINT_PATHS = $(wildcard augkit tests benchmarks examples)
# Notebooks whose stored outputs pytest checks with nbval.
NOTEBOOKS = $(wildcard notebooks/*.ipynb)

# Jupyter refuses to start as root without this flag.
ifeq ($(shell id -u),0)
LAB_FLAGS = --allow-root
endif

.PHONY: venv test lint format demo lab bench clean distclean

venv: $(STAMP) $(CHROMIUM)

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

lint: venv
	$(BIN)/ruff check $(LINT_PATHS)
	$(BIN)/ruff format --check $(LINT_PATHS)

# The docstrings' examples of augkit/ run too (--doctest-modules); paths given here replace
# pyproject's testpaths, so tests/ is named.
test: lint
	$(BIN)/python -m pytest --doctest-modules augkit tests $(if $(NOTEBOOKS),--nbval --nbval-sanitize-with notebooks/nbval_sanitize.cfg $(NOTEBOOKS))

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

clean:
	rm -rf out build dist .pytest_cache .ruff_cache .hypothesis benchmarks/_work
	find . -path ./$(VENV) -prune -o \( -name __pycache__ -o -name '*.egg-info' -o -name .ipynb_checkpoints \) -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV)
