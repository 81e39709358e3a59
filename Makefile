# mone: every command a reader needs. `make figures` and `make test` set up .venv on first use.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Tests and notebooks run on the CPU; 8 virtual devices let data-parallel code build a mesh.
export JAX_PLATFORMS ?= cpu
# XLA:CPU's per-step temporaries stay in glibc's heap instead of being mapped and zero-filled anew
# at every step: digits64 training steps 1.2-1.5x faster, same numbers (mone/train/hostmem.py says why; a test
# checks this value against hostmem.TUNABLES). Set GLIBC_TUNABLES yourself, even empty, to override.
export GLIBC_TUNABLES ?= glibc.malloc.arena_max=1:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184

.PHONY: env test figures book book-html book-check lab help FORCE

help:
	@echo "make figures  - run every notebook (default profile) and write results/"
	@echo "make test     - run the test suite (creates .venv on first use)"
	@echo "make book     - build the Jupyter Book from the executed notebooks"
	@echo "make lab      - open the notebooks in JupyterLab, on the kernel make figures uses"
	@echo "make env      - only create the pinned virtualenv in .venv"

# A virtualenv in $(1), with the pinned requirements file $(2) installed.
define venv_with
	test -x $(1)/bin/python || $(PYTHON) -m venv $(1)
	$(1)/bin/python -m pip install -q --disable-pip-version-check -r $(2)
endef

$(STAMP): requirements/lock.txt pyproject.toml
	$(call venv_with,$(VENV),requirements/lock.txt)
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -e .
	$(PY) -m ipykernel install --prefix $(VENV) --name python3 > /dev/null
	touch $@

env: $(STAMP)

# Two pytest workers (pytest-xdist), a test file each at a time: much of the suite is single-threaded
# XLA compilation (tests compile at XLA's lowest backend optimisation level, see tests/conftest.py).
# A file stays on one worker because the notebook tests reuse each other's runs; the image and the
# video chapters are two files, so they run side by side. TEST_WORKERS=0: serial.
TEST_WORKERS ?= 2
test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --durations=25 || { rc=$$?; [ $$rc -eq 5 ] && echo "pytest collected no tests; the suite must never be empty" >&2; exit $$rc; }

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
	$(BOOK_VENV)/bin/python -m mone.chapters.claims book/verdicts.md
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

# The book's verdict changes against the first small profile (book/changes.md) follow the small profile only.
figures: $(EXECUTED)
	$(PY) -m mone.chapters.claims $(VERDICTS)
	$(if $(filter small,$(PROFILE)),$(PY) -m mone.chapters.claims book/first_profile_changes.md --compare results/first_profile)
	$(if $(filter small,$(PROFILE)),$(PY) -m mone.chapters.devices book/devices.md)

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
.PRECIOUS: $(INPUTS)/%.inputs
# A notebook that fails half-way leaves no executed copy that Make would take for finished.
.DELETE_ON_ERROR:
