# Two entry points (see README): `make book` builds the site, `make test` runs every test.
# Both create .venv on first use and are idempotent; a second run with nothing changed is quick.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
BOOK_STAMP := $(VENV)/.book-installed
DEV_STAMP := $(VENV)/.dev-installed
LAB_STAMP := $(VENV)/.lab-installed
LITE_STAMP := $(VENV)/.lite-installed
# jupyter-cache hashes only code cells, so a change in attn/ must invalidate it by hand.
ATTN_HASH = $(shell cat $$(find attn -name "*.py" | sort) pyproject.toml constraints.txt | sha256sum | cut -c1-16)

.PHONY: book test unit site nbval nbval-changed rehearsal rehearse-unit rehearse-site \
	rehearse-nbval lint sysdeps clean bench copy-task \
	transformer mathjax lab lite lighthouse

$(BOOK_STAMP): requirements.txt constraints.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	$(BIN)/python -m pip install --quiet --no-deps --no-build-isolation -e .
	@touch $@

$(DEV_STAMP): $(LAB_STAMP) requirements-dev.txt
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	@touch $@

# MathJax 3 for the site, from npm (exact version in package-lock.json); copied into the built
# site by tools/sphinx_site/mathjax.py, never committed. `npm ci` recreates node_modules/, hence the stamp.
# The same install brings the test tools axe-core (browser test) and vnu-jar (HTML validity).
MATHJAX_STAMP := node_modules/.mathjax-installed
$(MATHJAX_STAMP): package.json package-lock.json | $(BOOK_STAMP)  # npm from .venv; re-run only when the lock changes
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
	@touch $@

mathjax: $(MATHJAX_STAMP)

# `make lab`: JupyterLab on the book, the MyST .md pages opening as notebooks. Its pins are
# requirements-lab.txt (the test stack includes it); binder/overrides.json, the jupytext viewer
# setting, is the same file Binder's postBuild installs.
$(LAB_STAMP): $(BOOK_STAMP) requirements-lab.txt binder/overrides.json
	$(BIN)/python -m pip install --quiet -r requirements-lab.txt
	install -D -m 644 binder/overrides.json $(VENV)/share/jupyter/lab/settings/overrides.json
	@touch $@

lab: $(LAB_STAMP)
	$(BIN)/jupyter lab --ServerApp.root_dir=book $$([ "$$(id -u)" = 0 ] && echo --allow-root)

# In-browser notebooks (JupyterLite + Pyodide, all served by the site) under _build/html/lite/:
# tools/build_lite.py, after the book build (it takes the downloadable notebooks and the attn wheel).
$(LITE_STAMP): $(BOOK_STAMP) requirements-lite.txt
	$(BIN)/python -m pip install --quiet -r requirements-lite.txt
	@touch $@

lite: $(LITE_STAMP) $(MATHJAX_STAMP)
	$(BIN)/python tools/build_lite.py _build

book: $(BOOK_STAMP) $(MATHJAX_STAMP) $(LITE_STAMP)
	@mkdir -p _build
	@if [ "$$(cat _build/.attn-hash 2>/dev/null)" != "$(ATTN_HASH)" ]; then \
		echo "attn/ or the pins changed: clearing the execution cache and the doctrees"; \
		rm -rf _build/.jupyter_cache _build/.doctrees; fi
	@# sphinx.ext.viewcode rewrites a module's source page only when the module is newer than it:
	@# when the site's extension, templates, styles or config change, drop those pages so they follow.
	@if [ -e _build/html/_modules/index.html ] && \
		[ -n "$$(find tools _config.yml -type f -newer _build/html/_modules/index.html | head -1)" ]; then \
		rm -rf _build/html/_modules; fi
	$(BIN)/jupyter-book build . -W -n --keep-going
	$(BIN)/python tools/export_executed.py _build
	$(BIN)/python tools/build_lite.py _build
	@echo $(ATTN_HASH) > _build/.attn-hash
	@echo "Site built: $(CURDIR)/_build/html/index.html"

# System packages the browser, HTML-validity and workflow tests need (Debian): installed only if
# missing (Java runs the Nu Html Checker).
sysdeps:
	@if ! command -v chromium >/dev/null || ! command -v shellcheck >/dev/null || ! command -v java >/dev/null; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && \
		$$SUDO apt-get install -y -qq chromium shellcheck default-jre-headless >/dev/null; fi

# `make test FULL=1`: every test and every notebook runs, none left out as unchanged (tests/_memo.py).
ifdef FULL
export MEMO := 0
endif

# The test stages. CI runs each as its own job over the build job's artifact (no second build);
# `make test` runs them here after `make book`, all three at once.
SITE_TEST = $(BIN)/python -m pytest tests/test_site.py tests/test_lite.py tests/test_html_valid.py tests/test_reader.py -m site \
	-p no:cacheprovider --durations=12
# nbval over pytest-xdist workers, one notebook per worker at a time (each notebook has its own kernel;
# the site's outputs and stated times come from the build, never from this re-execution).
NBVAL_JOBS ?= 2
NBVAL_ARGS = --dist loadfile --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg \
	-p no:cacheprovider
NBVAL_TEST = $(BIN)/python -m pytest -n $(NBVAL_JOBS) $(NBVAL_ARGS)

# The unit stage over pytest-xdist workers, one test file per worker (module fixtures run once).
UNIT_JOBS ?= 2
unit: $(DEV_STAMP)
	$(BIN)/python -m pytest tests -q -m "not site and not rehearsal" -p no:cacheprovider --durations=12 \
		-n $(UNIT_JOBS) --dist loadfile

site: $(DEV_STAMP) sysdeps $(MATHJAX_STAMP)  # node_modules: axe-core and vnu-jar
	$(SITE_TEST)

nbval: $(DEV_STAMP)
	$(NBVAL_TEST) _build/jupyter_execute

# The workflow's test jobs rehearsed (tests/ci_rehearsal.py): each on a fresh clone of HEAD plus the
# build's artifact, as GitHub Actions runs it, side by side (each job has its own workspace).
REHEARSE = $(BIN)/python -m pytest -m rehearsal -p no:cacheprovider -rA \
	tests/test_ci_rehearsal.py::test_the_job_passes_on_a_fresh_clone_plus_the_artifact
rehearse-unit rehearse-site rehearse-nbval: rehearse-%: $(DEV_STAMP) sysdeps
	$(REHEARSE)[$*]

rehearsal: $(DEV_STAMP) sysdeps
	@$(MAKE) --no-print-directory -j3 --output-sync=target rehearse-unit rehearse-site rehearse-nbval

# `make test`: book, then the three test stages side by side.
# * On a fresh clone (a clean tree whose stages never passed here: CI's case), each stage runs as its
#   workflow job, rehearsed on a fresh clone plus the build's artifact; nothing runs twice. What the
#   jobs kept (the notebooks' pass, the tests' records, the browser visits) is then taken over, so the
#   next `make test` is incremental.
# * Otherwise each stage re-runs only what changed, by content: nbval re-executes only the notebooks
#   whose code, outputs or dependencies (attn/, pins) changed (tools/stages.py), so a prose edit
#   re-executes nothing; the unit and browser stages leave out each test that passed before on
#   byte-identical inputs: the code, the files it read, the pages the local server sent it
#   (tests/_memo.py). A test that starts a process (other than the browser) always runs.
# The browser stage mostly waits on the browser, so it shares the cores with the other two;
# --output-sync keeps each stage's log in one piece.
test: $(DEV_STAMP) sysdeps book
	@if git rev-parse --git-dir >/dev/null 2>&1 && [ -z "$$(git status --porcelain --untracked-files=no)" ] && \
		[ ! -d _build/.stage-keys ]; then \
		echo "make test: a fresh clone: the three stages run as the workflow's jobs (tests/ci_rehearsal.py)"; \
		$(MAKE) --no-print-directory rehearsal && \
		$(BIN)/python tools/stages.py pass nbval && $(BIN)/python tests/ci_rehearsal.py --adopt; \
	else \
		$(MAKE) --no-print-directory -j3 --output-sync=target nbval-changed unit site; fi

nbval-changed: $(DEV_STAMP)
	@todo="$$(if [ -n "$(FULL)" ]; then find _build/jupyter_execute -name '*.ipynb' | sort; \
		else $(BIN)/python tools/stages.py todo nbval; fi)"; \
	if [ -z "$$todo" ]; then echo "nbval: every executed notebook passed as it is now"; else \
		count=$$(echo $$todo | wc -w); echo "nbval: $$count notebook(s) changed"; \
		$(BIN)/python -m pytest -n $$([ $$count -gt 1 ] && echo $(NBVAL_JOBS) || echo 0) $(NBVAL_ARGS) $$todo && \
		$(BIN)/python tools/stages.py pass nbval $$todo; fi

lint: $(DEV_STAMP)
	$(BIN)/ruff check attn tests tools bench

bench: $(DEV_STAMP)
	$(BIN)/python bench/run.py

# Lighthouse 12.2.3 (mobile preset) on seven pages of the built site: prints a table (bench/lighthouse.py).
# Lighthouse comes through npx into a cache outside the repository; `make test` never installs it.
lighthouse: $(DEV_STAMP) sysdeps book
	$(BIN)/python bench/lighthouse.py

copy-task: $(BOOK_STAMP)
	$(BIN)/python -m attn.training.copytask

transformer: $(BOOK_STAMP)
	$(BIN)/python -m attn.training.tasks

clean:
	rm -rf _build
