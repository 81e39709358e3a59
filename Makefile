# mone: every command a reader needs. `make figures` and `make test` set up .venv on first use.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# DEVICE=auto (the default): gpu where `nvidia-smi -L` lists a GPU, else cpu.
# cpu: tests and notebooks run on the CPU (JAX_PLATFORMS=cpu; 8 virtual devices let data-parallel code
# build a mesh), .venv from requirements/lock.txt. gpu: .venv also gets JAX's CUDA plugin
# (requirements/gpu.txt, its own stamp) and JAX is not forced onto the CPU; the tests still are
# (tests/conftest.py). `make test DEVICE=cpu` keeps a GPU machine on the CPU path.
DEVICE ?= auto
ifeq ($(DEVICE),auto)
override DEVICE := $(shell nvidia-smi -L > /dev/null 2>&1 && echo gpu || echo cpu)
endif
ifeq ($(DEVICE),cpu)
export JAX_PLATFORMS ?= cpu
REQUIREMENTS := requirements/lock.txt
STAMP := $(VENV)/.installed
else ifeq ($(DEVICE),gpu)
REQUIREMENTS := requirements/gpu.txt
STAMP := $(VENV)/.installed-gpu
else
$(error DEVICE must be auto, cpu or gpu, got '$(DEVICE)')
endif
# XLA:CPU's per-step temporaries stay in glibc's heap instead of being mapped and zero-filled anew
# at every step: digits64 training steps 1.2-1.5x faster, same numbers (mone/train/hostmem.py says why; a test
# checks this value against hostmem.TUNABLES). Set GLIBC_TUNABLES yourself, even empty, to override.
export GLIBC_TUNABLES ?= glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184

.PHONY: env test test-fast figures book book-html book-check lab gpu-report help FORCE

help:
	@echo "make figures  - run every notebook (default profile) and write results/"
	@echo "make test     - run the test suite (creates .venv on first use)"
	@echo "make test-fast - the suite without its slow tests (notebooks, GPU report, kill-and-resume, multi-process)"
	@echo "make book     - build the Jupyter Book from the executed notebooks"
	@echo "make lab      - open the notebooks in JupyterLab, on the kernel make figures uses"
	@echo "make env      - only create the pinned virtualenv in .venv"
	@echo "make gpu-report - check and time every GPU speed path in one budgeted run (mone/bench/report.py)"

# A virtualenv in $(1), with the pinned requirements file $(2) installed.
define venv_with
	test -x $(1)/bin/python || $(PYTHON) -m venv $(1)
	$(1)/bin/python -m pip install -q --disable-pip-version-check -r $(2)
endef

$(STAMP): $(sort $(REQUIREMENTS) requirements/lock.txt) pyproject.toml
	$(call venv_with,$(VENV),$(REQUIREMENTS))
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -e .
	$(PY) -m ipykernel install --prefix $(VENV) --name python3 > /dev/null
	touch $@

env: $(STAMP)

# Two pytest workers (pytest-xdist), a test file each at a time: much of the suite is single-threaded
# XLA compilation (tests compile with flags that compile fast, see tests/xla_flags.py).
# A file stays on one worker because the notebook tests reuse each other's runs; the image and the
# video chapters are two files, so they run side by side. TEST_WORKERS=0: serial.
TEST_WORKERS ?= 2
PYTEST_EMPTY := { rc=$$?; [ $$rc -eq 5 ] && echo "pytest collected no tests; the suite must never be empty" >&2; exit $$rc; }
test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25 || $(PYTEST_EMPTY)

# Everything but the tests marked slow (notebooks executed, the GPU report run, runs trained to be
# compared, resumed or retrained, several processes started, a check repeated for another variant):
# the loop while changing code, every model kind trained once. `make test` runs them all.
# Test by test: no fast test shares a run with another file's, and a whole file to a worker left
# one worker with the training tests alone at the end. Work stealing (an idle worker takes tests
# queued for the other) ended the suite 4% sooner than fixed batches (--dist load): 179 s against 186.
test-fast: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal -m "not slow" --durations=10 || $(PYTEST_EMPTY)

# The GPU report (mone/bench/report.py): every GPU speed path checked against its reference and timed
# (ViT-B/16, ViViT-B/16x2), a per-operation summary and the speed targets, in one process that fits one
# 8-minute call on an H100 (--budget-s 420, a watchdog at 450 s), written to
# results/bench/gpu-report-<device>.json. The lent GPU machine has no package registry, so use its python,
# which already has JAX with the CUDA plugin, instead of the venv (the shell expands $OUT, in double quotes):
#   make gpu-report PY_REPORT=python3 REPORT_ARGS="--json $OUT/gpu-report.json"
# REPORT_ARGS=--tiny runs the same code paths on tiny models on the CPU (about a minute).
PY_REPORT ?= $(PY)
REPORT_ARGS ?=
gpu-report: $(if $(filter $(PY),$(PY_REPORT)),$(STAMP))
	$(PY_REPORT) -m mone.bench --report $(REPORT_ARGS)

# JupyterLab in its own venv (its server stack stays out of the test environment), showing only
# .venv's python3 kernel (JUPYTER_PATH comes first in Jupyter's search): the kernel papermill uses.
LAB_VENV := .venv-lab
LAB_STAMP := $(LAB_VENV)/.installed

$(LAB_STAMP): requirements/lab.txt
	$(call venv_with,$(LAB_VENV),requirements/lab.txt)
	touch $@

# Jupyter refuses to run as root (containers often are) unless told: --allow-root there. LAB_ARGS: more flags.
lab: $(STAMP) $(LAB_STAMP)
	JUPYTER_PATH=$(CURDIR)/$(VENV)/share/jupyter $(LAB_VENV)/bin/jupyter lab notebooks/ \
	  $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)

# The book builds in its own venv: jupyter-book 1.x pins markdown-it-py 3, the main env has 4.
BOOK_VENV := .venv-book
BOOK_STAMP := $(BOOK_VENV)/.installed

$(BOOK_STAMP): requirements/book.txt
	$(call venv_with,$(BOOK_VENV),requirements/book.txt)
	touch $@

# --all: an incremental build would not repeat warnings of unchanged pages, and -W must see them.
# The landing page's verdict table is generated from results/*/claims.json, never typed.
# The book renders the executed chapters: building it executes those whose inputs changed first.
book: figures
	$(MAKE) book-html

# The HTML from the executed chapters as committed, executing nothing: what `make book` renders
# after `make figures`, and what the publishing workflow (.github/workflows/book.yml) runs.
book-html: $(BOOK_STAMP)
	$(BOOK_VENV)/bin/python -m mone.chapters claims book/verdicts.md --tables book/claims.md
	$(BOOK_VENV)/bin/jupyter-book build --all -W --keep-going book

book-check: book
	command -v chromium > /dev/null || { apt-get update -q && apt-get install -y -q chromium; }
	$(BOOK_VENV)/bin/python scripts/check_book.py

# Executes the notebooks, in order, into book/notebooks/ (the book renders those copies);
# results go to results/<notebook>/. Paths stay relative so that no local path is recorded in the
# executed notebooks. One target per executed chapter: it reruns when its notebook, a module of
# mone/ it imports, a committed result it reads (results/runs, weights, calibration, bench: a run
# that lands) or a parameter changed, judged by content (scripts/chapter_inputs.py writes
# .cache/figures/, rewritten only when different): a fresh clone gives every file the same time.
# `make figures SEED=1 DATA_DIR=/data/tfds PROFILE=paper` forwards the notebooks' parameters.
PROFILE ?= small
SEED ?=
DATA_DIR ?=
# A bad parameter stops Make here, in one line naming it, before anything runs, builds or is deleted
# (scripts/figures_parameters.py, on the system's python3: .venv may not exist yet).
ifneq ($(filter figures book book-check %.ipynb,$(MAKECMDGOALS)),)
PARAMETER_PROBLEM := $(shell $(PYTHON) scripts/figures_parameters.py '$(PROFILE)' '$(SEED)' '$(DATA_DIR)')
ifneq ($(PARAMETER_PROBLEM),)
$(error $(PARAMETER_PROBLEM))
endif
endif
NB_PARAMS := $(if $(SEED),seed=$(SEED)) $(if $(DATA_DIR),data_dir=$(DATA_DIR))
CHAPTERS := $(basename $(notdir $(wildcard notebooks/[0-9]*.ipynb)))
# The smoke profile (a check that every notebook runs) must never overwrite real results.
ifeq ($(PROFILE),smoke)
NB_OUT := .cache/smoke/notebooks
VERDICTS := .cache/smoke/verdicts.md
export MONE_RESULTS_DIR := $(CURDIR)/.cache/smoke/results
export MONE_CACHE_DIR := $(CURDIR)/.cache/smoke
else
NB_OUT := book/notebooks
VERDICTS := book/verdicts.md
endif
INPUTS := .cache/figures/$(PROFILE)$(if $(SEED),-seed$(SEED))
EXECUTED := $(foreach c,$(CHAPTERS),$(NB_OUT)/$(c).ipynb)

# The book's verdict changes against the first small profile (book/changes.md) and at three seeds
# (book/seed_changes.md), and the ten-seed plan's readout (book/ten_seeds.md), follow the small
# profile only.
figures: $(EXECUTED)
	$(PY) -m mone.chapters claims $(VERDICTS) --tables $(dir $(VERDICTS))claims.md --figures $(if $(filter small,$(PROFILE)),--readme README.md)
	$(if $(filter small,$(PROFILE)),$(PY) -m mone.chapters claims book/first_profile_changes.md --compare results/first_profile)
	$(if $(filter small,$(PROFILE)),$(PY) -m mone.chapters claims book/seed_plan_changes.md --results results/five_seeds --compare results/three_seeds --kind trained --compare-figure results/seed_plan_changes.png --labels '3 seeds' '5 seeds')
	$(if $(filter small,$(PROFILE)),$(PY) -m mone.chapters readout book/ten_seed_readout.md --plan results/seed_plan_10.json --figure results/ten_seeds.png)
	$(if $(filter small,$(PROFILE)),$(PY) -m mone.chapters devices book/devices.md)
	$(if $(filter small,$(PROFILE)),$(PY) -m mone.chapters throughput book/training_throughput.md)
	$(if $(filter small,$(PROFILE)),$(PY) -m mone.chapters recalibration-page book/calibration.md --replaced book/calibration_replaced.md)
	$(if $(filter small,$(PROFILE)),$(PY) -m mone.chapters speed book/speed_investigations.md)

# In order: a chapter reuses the runs of the chapters before it.
$(foreach i,$(shell seq 2 $(words $(CHAPTERS))),$(eval $(word $(i),$(EXECUTED)): | $(word $(shell expr $(i) - 1),$(EXECUTED))))

$(INPUTS)/%.inputs: FORCE $(STAMP)
	@mkdir -p $(@D)
	@$(PY) scripts/chapter_inputs.py notebooks/$*.ipynb $(PROFILE) $(NB_PARAMS) > $@.tmp
	@if cmp -s $@.tmp $@; then rm $@.tmp; else mv $@.tmp $@; fi

$(NB_OUT)/%.ipynb: $(INPUTS)/%.inputs
	@mkdir -p $(@D)
	@echo "papermill notebooks/$*.ipynb (profile=$(PROFILE) $(NB_PARAMS))"
	$(PY) scripts/run_notebook.py notebooks/$*.ipynb $@ $(PROFILE) $(NB_PARAMS)

FORCE:
# A chapter executes into a temporary file that replaces its executed notebook only once it has run
# to the end (scripts/run_notebook.py): a chapter that fails or is killed leaves the committed copy
# as it was, older than its inputs, so the next `make figures` redoes it. Make must never delete an
# executed notebook on an error or an interrupt: it is a committed file.
.PRECIOUS: $(INPUTS)/%.inputs $(NB_OUT)/%.ipynb
