# Entry points (README, CONTRIBUTING.md): `make book` builds the site; `make test` runs the pull-request
# tier, `make test-full` every test; `make page PAGE=book/<...>.md` re-checks one page.
# Each creates .venv on first use and is idempotent; a second run with nothing changed is quick.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
BOOK_STAMP := $(VENV)/.book-installed
DEV_STAMP := $(VENV)/.dev-installed
LAB_STAMP := $(VENV)/.lab-installed
LITE_STAMP := $(VENV)/.lite-installed
# jupyter-cache hashes only code cells, so a change in attn/ or the pins must invalidate it by hand
# (of pyproject.toml, what comes before the tools' settings: the package and its dependencies).
ATTN_HASH = $(shell { cat $$(find attn -name "*.py" | sort) constraints.txt; sed '/^\[tool\.pytest/,$$d' pyproject.toml; } | sha256sum | cut -c1-16)

.PHONY: book execute test test-full unit site nbval page lint sysdeps clean bench copy-task \
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

NB_CACHE := _build/.jupyter_cache
NOTEBOOK_PAGES = $(shell grep -l '^kernelspec:' $$(find book -name '*.md' | sort))  # a kernel in the front matter
NB_TIMEOUT = $(shell sed -n 's/^  timeout: *\([0-9]*\).*/\1/p' _config.yml)  # _config.yml's execute.timeout

# The notebook pages, executed two at a time (jupyter-cache's parallel executor) into the cache the
# build reads, so that the build itself executes none; a page that fails here is executed again by the
# build, which reports it. A page already in the cache is not run again. Needs only the book stack.
execute: $(BOOK_STAMP)
	@mkdir -p _build
	@if [ "$$(cat _build/.attn-hash 2>/dev/null)" != "$(ATTN_HASH)" ]; then \
		echo "attn/ or the pins changed: clearing the execution cache and the doctrees"; \
		rm -rf $(NB_CACHE) _build/.doctrees; fi
	@mkdir -p $(NB_CACHE)
	$(BIN)/jcache notebook -p $(NB_CACHE) add --reader myst_nb_md $(NOTEBOOK_PAGES) >/dev/null
	$(BIN)/jcache project -p $(NB_CACHE) execute --executor local-parallel --timeout $(NB_TIMEOUT)
	@echo $(ATTN_HASH) > _build/.attn-hash

book: execute $(MATHJAX_STAMP) $(LITE_STAMP)
	@# sphinx.ext.viewcode rewrites a module's source page only when the module is newer than it:
	@# when the site's extension, templates, styles or config change, drop those pages so they follow.
	@if [ -e _build/html/_modules/index.html ] && \
		[ -n "$$(find tools _config.yml -type f -newer _build/html/_modules/index.html | head -1)" ]; then \
		rm -rf _build/html/_modules; fi
	$(BIN)/jupyter-book build . -W -n --keep-going
	$(BIN)/python tools/export_executed.py _build
	$(BIN)/python tools/build_lite.py _build
	@echo "Site built: $(CURDIR)/_build/html/index.html"

# System packages the browser, HTML-validity and workflow tests need (Debian): installed only if
# missing (Java runs the Nu Html Checker).
sysdeps:
	@if ! command -v chromium >/dev/null || ! command -v shellcheck >/dev/null || ! command -v java >/dev/null; then \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -qq && \
		$$SUDO apt-get install -y -qq chromium shellcheck default-jre-headless >/dev/null; fi

# The two test tiers, one pytest marker (`full`, pyproject.toml): the pull-request tier (TIER=pr, what
# `make test`, .ci/run and every pull request run) leaves out the tests marked `full`; TIER=full (`make
# test-full`, the workflow's weekly run) runs them all.
TIER ?= pr
NICE ?= nice -n 10
NOT_FULL = $(if $(filter full,$(TIER)),, and not full)

# The test stages; CI runs each as its own job over the build job's artifact (no second build).
# The unit stage over pytest-xdist workers, one test file per worker (module fixtures run once).
UNIT_JOBS ?= 2
unit: $(DEV_STAMP)
	$(NICE) $(BIN)/python -m pytest tests -q -m "not site$(NOT_FULL)" --durations=12 -n $(UNIT_JOBS) --dist loadfile

# Over two pytest-xdist workers, one test file per worker: the crawl (tests/test_site.py, itself two
# browsers) beside the other files, which it would otherwise wait for.
site: $(DEV_STAMP) sysdeps $(MATHJAX_STAMP)  # node_modules: axe-core and vnu-jar
	$(BIN)/python -m pytest -n 2 --dist loadfile tests/test_site.py tests/test_navigation.py tests/test_figures_phone.py tests/test_lite.py tests/test_html_valid.py tests/test_reader.py \
		-m "site$(NOT_FULL)" --durations=12

# nbval re-executes each executed notebook in a fresh kernel and compares its text outputs with the
# build's; over pytest-xdist workers, one notebook per worker at a time. The training pages (their
# full training) are in the full tier (conftest.py marks their cells). A cell's limit is the build's,
# _config.yml's execute.timeout (nbval's own default, 2000 s, interrupted a training cell under load).
NBVAL_JOBS ?= 2
NBVAL_ARGS = --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout $(NB_TIMEOUT)
nbval: $(DEV_STAMP)
	$(NICE) $(BIN)/python -m pytest -n $(NBVAL_JOBS) --dist loadfile $(NBVAL_ARGS) -m "not site$(NOT_FULL)" --durations=5 _build/jupyter_execute

# `make test`: the pages execute while the test stack installs (the installs leave a core idle; they
# run one at a time, -j1: one pip per environment); then the book; then the three stages side by side
# (--output-sync keeps each stage's log whole), unit and nbval at a lower priority (NICE), so that the
# browsers get the cores first.
# Re-running only what failed is pytest's own: `.venv/bin/python -m pytest --lf` (or --ff).
test: $(BOOK_STAMP)
	@$(MAKE) --no-print-directory execute & pid=$$!; \
		$(MAKE) --no-print-directory -j1 $(DEV_STAMP) $(LITE_STAMP) $(MATHJAX_STAMP) sysdeps; status=$$?; \
		wait $$pid && exit $$status
	@$(MAKE) --no-print-directory book
	@$(MAKE) --no-print-directory -j3 --output-sync=target nbval unit site

test-full:
	@$(MAKE) --no-print-directory test TIER=full

# `make page PAGE=book/<...>.md`: the one-page loop (CONTRIBUTING.md). The site is rebuilt (only what
# changed), then that page's nbval, its static checks and its browser visit (the crawl of that page,
# desktop, phone and dark, with axe) run at once; the checks that need every page are left out.
PAGE_STEM = $(basename $(PAGE))
PAGE_TESTS = tests/test_notebooks.py tests/test_pages_static.py tests/test_runnable_notebooks.py \
	tests/test_terms.py tests/test_prose.py tests/test_site.py
WHOLE_SITE = every_page_was_crawled or search_finds or 404_page or sitemap_lists or links_each_static
page: $(DEV_STAMP) sysdeps book
	@test -f "$(PAGE)" || { echo "make page PAGE=book/<...>.md: no page $(PAGE)"; exit 2; }
	SITE_PAGES=$(PAGE_STEM).html $(BIN)/python -m pytest -q -n 3 --dist loadfile $(NBVAL_ARGS) \
		-m "not full" -k "$(notdir $(PAGE_STEM)) or not book/ and not ($(WHOLE_SITE))" \
		_build/jupyter_execute/$(PAGE_STEM).ipynb $(PAGE_TESTS)

lint: $(DEV_STAMP)
	$(BIN)/ruff check attn tests tools bench
	PYTHONPATH=tools $(BIN)/lint-imports --no-cache --no-logo  # pyproject.toml's import contracts

bench: $(DEV_STAMP)
	$(BIN)/python bench/run.py

# Lighthouse 12.2.3 (mobile preset) on seven pages of the built site: prints a table (bench/lighthouse.py).
# Lighthouse comes through npx into a cache outside the repository; `make test` never installs it.
lighthouse: $(DEV_STAMP) sysdeps book
	PYTHONPATH=tests $(BIN)/python bench/lighthouse.py

copy-task: $(BOOK_STAMP)
	$(BIN)/python -m attn.training.copytask

transformer: $(BOOK_STAMP)
	$(BIN)/python -m attn.training.tasks

clean:
	rm -rf _build
