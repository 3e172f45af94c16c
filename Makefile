# Two commands do everything on a fresh machine (Debian/Ubuntu, run as root or with sudo):
#   make demo   - install, then run the main job on the built-in default (no GPU, no LLM key)
#   make test   - install, then run the test suite
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: install system-deps demo test test-fast lint

system-deps:
	@if ! ls /etc/OpenCL/vendors/*pocl* >/dev/null 2>&1 || [ ! -e /usr/include/CL/cl.h ]; then \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	    pocl-opencl-icd ocl-icd-opencl-dev opencl-headers make g++ >/dev/null; fi
	@# a real single-node Slurm for tests/test_slurm.py (--cluster slurm); the test starts and stops the daemons itself
	@if ! command -v slurmctld >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq \
	    slurm-wlm munge >/dev/null; fi

$(BIN)/s2s: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e ".[dev]"
	@touch $@

install: system-deps $(BIN)/s2s

demo: install
	$(BIN)/s2s scan samples/ocl_solver
	$(BIN)/s2s auto samples/ocl_solver --top 4 --max-evals 10 --work s2s-work --patterns s2s-work/patterns.json --diff s2s-auto.diff

test: install
	$(BIN)/python -m pytest -q -n auto tests

test-fast: install   # the developer's loop: everything but the tests marked slow
	$(BIN)/python -m pytest -q -n auto -m "not slow" tests

lint: install
	$(BIN)/ruff check s2s tests bench
	$(BIN)/mypy s2s
