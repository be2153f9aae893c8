# Two commands do everything on a fresh machine with Python 3.10+ and pip:
#   make demo   -> creates .venv, installs parallelgraph, runs the seed experiment on the CPU
#   make test   -> creates .venv, installs everything the tests need, runs lint + the test suite
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
DEMO_OUT ?= demo-out

.PHONY: demo test lint bench lab clean

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

test: lint
	$(BIN)/python -m pytest

bench: $(VENV)/.installed-all
	$(BIN)/python benchmarks/core.py
	$(BIN)/python benchmarks/matmul_kernels.py

clean:
	rm -rf $(VENV) $(DEMO_OUT) .pytest_cache .ruff_cache
	find . -name __pycache__ -prune -exec rm -rf {} +
