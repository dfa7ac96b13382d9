# The two commands of the README: `make demo` and `make test`.
# Both create .venv when absent and install syntrans editable with its test, plot and reproduce extras.
#
# torch is never left for pip to choose: a constraints file pins it, through PIP_CONSTRAINT on every pip call, and
# fairseq is built against that torch (below). The pin is the torch already in .venv when there is one (a GPU
# user's build is kept), else the base interpreter's torch (the venv then sees it
# through --system-site-packages), else TORCH_VERSION (the CPU wheel these
# machines carry); letting pip choose torch would pull several GB of CUDA packages.

PYTHON ?= python3
# fairseq is built from its source distribution (C++ extensions against torch). Its build requirements are installed
# into the venv first, torch pinned, and the build runs without pip's build isolation: an isolated build environment
# does not see PIP_CONSTRAINT (pip >= 25.3 keeps build constraints apart), so it would install the newest torch, a CUDA
# build of about 5 GB, only to compile against it. scripts/install_fairseq.py compiles only the three extensions
# syntrans runs (BLEU scorer, batching, token blocks; 1.5 min instead of 6 on 2 cores); FAIRSEQ_FULL=1 lets pip build
# all six (ninja compiles them on every core, MAX_JOBS).
BUILD_REQUIRES := torch numpy cython ninja packaging
# pip installs uv (a registry package), which installs everything else with pip's own configuration of this machine
# (scripts/uv_pip.py: its indexes, wheel folders and constraints; pip itself where uv fails): 3 min → about 1.5 min
# on 2 cores. INSTALLER=pip keeps pip throughout.
INSTALLER ?= uv
NO_UV := $(if $(filter pip,$(INSTALLER)),SYNTRANS_NO_UV=1)
FAIRSEQ_FULL ?=
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
TORCH_VERSION ?= 2.13.0
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.syntrans-installed
CONSTRAINTS := $(VENV)/constraints.txt

.PHONY: install test test-fast test-durations demo benchmark reproduce-smoke clean

install: $(STAMP)

$(VPY):
	@if $(PYTHON) -c "import torch" >/dev/null 2>&1; then \
	  echo "[setup] base $(PYTHON) has torch: creating $(VENV) with --system-site-packages to keep it"; \
	  $(PYTHON) -m venv --system-site-packages $(VENV); \
	else \
	  $(PYTHON) -m venv $(VENV); \
	fi

$(STAMP): $(VPY) setup.py
	@v=$$($(VPY) -c "import torch; print(torch.__version__)" 2>/dev/null || echo $(TORCH_VERSION)); \
	  echo "torch==$$v" > $(CONSTRAINTS); echo "[setup] pinning torch==$$v ($(CONSTRAINTS))"
	PIP_CONSTRAINT=$(abspath $(CONSTRAINTS)) $(VPY) -m pip install --quiet $(INSTALLER)
	$(NO_UV) PIP_CONSTRAINT=$(abspath $(CONSTRAINTS)) $(VPY) scripts/uv_pip.py install --quiet setuptools wheel \
	  $(BUILD_REQUIRES)
	@if [ -z "$(FAIRSEQ_FULL)" ]; then \
	  $(NO_UV) PIP_CONSTRAINT=$(abspath $(CONSTRAINTS)) $(VPY) scripts/install_fairseq.py build/fairseq; fi
	$(NO_UV) PATH=$(abspath $(VENV))/bin:$$PATH MAX_JOBS=$(JOBS) PIP_CONSTRAINT=$(abspath $(CONSTRAINTS)) \
	  $(VPY) scripts/uv_pip.py install --quiet --no-build-isolation -e ".[test,plot,reproduce]"
	@touch $(STAMP)

# one pytest worker per core (pytest-xdist), each test file on one worker (its module fixtures built once), the files
# handed out in collection order (tests/conftest.py puts the longest first, by measured time: tests/file_order.py; xdist's own reordering, by the number of
# tests in a file, would start the longest file last and leave one worker alone with it at the end)
test: install
	$(VPY) -m pytest -q -n auto --dist loadfile --no-loadscope-reorder tests

# the quick tier (about a minute): the tests marked `fast` (pure functions, single-module model tests)
test-fast: install
	$(VPY) -m pytest -q -m fast tests

# tests/file_durations.json, the per-file times a fresh clone orders the files by, from the last full run's cache
test-durations: install
	$(VPY) tests/file_order.py --write

demo: install
	PATH=$(abspath $(VENV))/bin:$$PATH bash scripts/demo.sh

reproduce-smoke: install
	PATH=$(abspath $(VENV))/bin:$$PATH bash scripts/reproduce_smoke.sh

benchmark: install
	$(VPY) scripts/benchmark.py

clean:
	rm -rf $(VENV) build *.egg-info
