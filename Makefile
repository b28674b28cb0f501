# Two commands on a fresh machine: `make test` and `make demo`. Both create .venv when missing.
# `make benchmarks` regenerates benchmarks/results/ and BENCHMARKS.md (benchmarks/regenerate.py).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip install --constraint constraints.txt
STAMP := $(VENV)/.installed

.PHONY: install test test-fast test-docs lint demo benchmarks clean

$(STAMP): pyproject.toml constraints.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip
	$(PIP) torch  # pinned by constraints.txt: installed first so pip never resolves a CUDA build
	$(PIP) -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Two pytest workers on two cores: one BLAS/OpenMP thread each, unless the caller says otherwise
test test-fast test-docs: export OMP_NUM_THREADS ?= 1
test test-fast test-docs: export MKL_NUM_THREADS ?= 1
test test-fast test-docs: export OPENBLAS_NUM_THREADS ?= 1

test: lint  # on both cores (pytest-xdist)
	$(BIN)/python -m pytest -q -n 2 -m "not docs"

test-docs: $(STAMP)  # every code block of README.md and docs/ on the real data, on both cores (CI runs it)
	$(BIN)/python -m pytest -q -n 2 --dist loadscope -m docs  # a page's blocks on one worker, in order

test-fast: $(STAMP)  # the tests not marked slow on both cores (pytest-xdist); under CI=true it fails over 90 s in all
	SLOW_GUARD_BUDGET_S=90 $(BIN)/python -m pytest -q -n 2 -m "not slow"  # or on an unmarked test over 5 s

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

demo: $(STAMP)
	$(BIN)/precomet demo -o demo-output

benchmarks: $(STAMP)  # re-run every cheap benchmark, then BENCHMARKS.md; ARGS="--list" / "--only NAME" / "--all"
	$(BIN)/python benchmarks/regenerate.py $(ARGS)

clean:
	rm -rf $(VENV) demo-output .pytest_cache
