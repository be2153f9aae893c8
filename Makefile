# Two commands do everything on a fresh machine with Python 3.10+ and pip:
#   make demo   -> creates .venv, installs parallelgraph, runs the seed experiment on the CPU
#   make test   -> creates .venv, installs everything the tests need (and Debian's Chromium for
#                  the browser test when run as root), runs lint + the test suite
#   make lab    -> JupyterLab on the notebooks, with everything installed
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_OUT ?= demo-out

.PHONY: demo test lint bench lab clean chromium

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed-core: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e .
	touch $@

$(VENV)/.installed-all: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e ".[all]"
	touch $@ $(VENV)/.installed-core

demo: $(VENV)/.installed-core
	$(BIN)/parallelgraph demo --out $(DEMO_OUT)

lint: $(VENV)/.installed-all
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python tools/size_gate.py

# The browser test drives Debian's Chromium; install it when we can (root + apt), else the test
# is skipped with its reason.
chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		apt-get update -qq && apt-get install -y -qq chromium >/dev/null; \
	else echo "note: no /usr/bin/chromium and no root apt-get: the browser test will be skipped"; fi

test: lint chromium
	$(BIN)/python -m pytest

bench: $(VENV)/.installed-all
	$(BIN)/python benchmarks/core.py
	$(BIN)/python benchmarks/matmul_kernels.py

# Jupyter refuses to run as root without --allow-root (containers often run as root).
lab: $(VENV)/.installed-all
	$(BIN)/jupyter lab notebooks/ $$([ "$$(id -u)" = 0 ] && echo --allow-root)

clean:
	rm -rf $(VENV) $(DEMO_OUT) .pytest_cache .ruff_cache
	find . -name __pycache__ -prune -exec rm -rf {} +
