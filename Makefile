# The project's virtual environment lives in .venv/; every target installs what it needs.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
# `make run` installs what serving needs; tests and benchmarks add the dev tools and local models
# (torch, transformers: several GB a user who only runs human studies does not need).
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: install install-dev run test test-fast screenshots bench docs browsers pgbouncer haproxy clean

# uv installs what serving needs in seconds where pip takes minutes (22 s against 346 s on a busy 2-core
# machine, 2026-12-06), and the dev extras too (`make install-dev` with empty caches 24 s against 143 s, 2026-12-07); where
# uv cannot be had, pip does it. uv does not read pip's configuration: the folders of local wheels that pip
# is configured to look in (find-links, e.g. the CPU build of torch on a machine that has it) are passed on.
UV := $(VENV)/bin/uv
PIP_FIND_LINKS_DIRS := $(shell $(PYTHON) -m pip config list 2>/dev/null | sed -n "s/^[^=]*find-links='\(.*\)'$$/\1/p" | tr ' ' '\n' | sort -u)
UV_DEV := $(UV) pip install -q --python $(PY) $(addprefix --find-links ,$(PIP_FIND_LINKS_DIRS))

# The venv is made without pip and uv put in by the interpreter's own pip (--prefix): seeding pip into a new
# venv cost 5 s of CPU of the first minute. Where that pip is missing or refuses, the venv gets pip of its own.
$(PY):
	@echo "  Creating the virtual environment .venv ($(PYTHON))"
	@$(PYTHON) -m venv --without-pip $(VENV)
	@$(PYTHON) -m pip install -q --disable-pip-version-check --prefix $(VENV) uv 2>/dev/null \
		|| { $(PY) -m ensurepip --default-pip >/dev/null && $(PY) -m pip install -q uv; } || echo "uv not available: installing with pip"
	@# the docs' `.venv/bin/pip install …` steps, by uv, until `make install-dev` puts pip in (it replaces this)
	@test -e $(VENV)/bin/pip || ! test -x $(UV) || { printf '%s\n' '#!/bin/sh' \
		'# This venv was made without pip (Makefile): uv installs into it.' \
		'exec "$$(dirname "$$0")/uv" pip "$$@" --python "$$(dirname "$$0")/python"' > $(VENV)/bin/pip \
		&& chmod +x $(VENV)/bin/pip; }

$(STAMP): pyproject.toml | $(PY)
	@if [ -x $(UV) ]; then echo "  Installing what serving needs into .venv (uv)"; \
		$(UV) pip install -q --python $(PY) -e .; \
	else echo "  Installing what serving needs into .venv (pip, a few minutes)"; $(PY) -m pip install -q -e .; fi
	@touch $(STAMP)

# llama.cpp (the third-party model server of tests/judges_thirdparty) compiles for minutes on a new machine:
# scripts/ensure-llamacpp.sh builds it in the background while the suite runs, and those tests wait for it.
$(DEV_STAMP): pyproject.toml clients/python/pyproject.toml | $(PY)
	@bash scripts/ensure-compilers.sh
	@# pip itself: pip-audit and the background build of llama.cpp (scripts/ensure-llamacpp.sh) call it
	@$(PY) -m pip --version >/dev/null 2>&1 || { rm -f $(VENV)/bin/pip; $(PY) -m ensurepip --default-pip >/dev/null; }
	@# the Python client is its own distribution (httpx, pandas, pyarrow: installed with the rest), hence --no-deps
	@if [ -x $(UV) ]; then echo "  Installing the dev tools and local models into .venv (uv)"; \
		$(UV_DEV) -e ".[dev,local-models]" && $(UV_DEV) --no-deps -e clients/python; \
	else $(PY) -m pip install -q --upgrade pip && $(PY) -m pip install -q -e ".[dev,local-models]" \
		&& $(PY) -m pip install -q --no-deps -e clients/python; fi
	touch $(STAMP) $(DEV_STAMP)

install: $(STAMP)

install-dev: $(DEV_STAMP)

## Serve Concord at http://127.0.0.1:8000 with demo studies (embedded PostgreSQL/Redis unless DATABASE_URL/REDIS_URL are set).
## The docs site builds in the background when its sources changed (config/run_console.py).
run: install
	@$(PY) -m config.launcher run

## The whole test suite on real PostgreSQL, Redis, a Celery worker and headless Chromium, spread over three
## pytest-xdist workers (tests/parallel.py) on the 2-core machine CI runs on: two left its cores 22% idle while
## tests waited on servers and brokers, three keep them 88% busy (1,013 s against 1,198 s, 2026-12-07). Three
## had loaded it to 10-11 with a full Chromium each; the tests now drive its headless build, a quarter of the
## CPU (docs/reference/test-suite.md). TEST_WORKERS=0 runs it in one process.
TEST_WORKERS ?= 3
PARALLEL = $(if $(filter 0,$(TEST_WORKERS)),,-n $(TEST_WORKERS) --dist loadgroup)
test: install-dev browsers pgbouncer haproxy
	@bash scripts/ensure-llamacpp.sh $(PY)
	$(PY) -m config.launcher test $(PARALLEL) $(ARGS)

## The browser tests, with screenshots of what they see for a person to look at (test-artifacts/). `make test`
## takes none: no test reads them, and they cost (the production walk's full-page shots: 18.6 s of the 41.6 s
## of CPU its browser spent, 2026-12-07; tests/screens.py).
screenshots: install-dev browsers pgbouncer haproxy
	CONCORD_SCREENSHOTS=1 $(PY) -m config.launcher test $(PARALLEL) -m browser $(ARGS)

## The documentation site (mkdocs.yml, docs/) into site/, which Concord serves at /docs/ to signed-in users.
## MkDocs and its theme at the versions the dev extra pins, without the rest of the dev tools.
DOCS_DEPS = $(shell grep -o '"mkdocs[a-z-]*==[^"]*"' pyproject.toml | tr -d '"')
docs: install
	@test -x $(VENV)/bin/mkdocs || { test -x $(UV) && $(UV) pip install -q --python $(PY) $(DOCS_DEPS); } \
		|| $(PY) -m pip install -q $(DOCS_DEPS)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict
	@touch site/.concord-built

## The edit-test loop: statistics, judge parsing and methods, services and the API, with no browser, no model
## library or server written by others and no worker killed (`make test` is the suite CI and the README run).
FAST_TESTS := tests/stats tests/rubrics tests/judges tests/foundation/test_import_graph.py tests/foundation/test_api.py \
	tests/workspace/test_api.py tests/workspace/test_ratings_service.py tests/judges_platform/test_api.py \
	tests/manage/test_services.py
test-fast: install-dev
	$(PY) -m config.launcher test $(PARALLEL) $(FAST_TESTS) -m "not browser" --ignore=tests/judges/test_transformers_local.py $(ARGS)

## Benchmarks at a size that ends in minutes; FULL=1 for DESIGN.md's full sizes.
bench: install-dev pgbouncer haproxy
	@bash scripts/ensure-llamacpp.sh $(PY) --wait
	$(PY) -m config.launcher bench $(if $(FULL),--full)

## Debian's Chromium for the browser tests (Playwright drives it; it downloads no browser), and axe-core
## from npm (pinned in tests/a11y/package-lock.json) for the accessibility checks.
browsers:
	@bash scripts/ensure-chromium.sh
	@bash scripts/ensure-axe.sh

## PgBouncer for the 1,000-rater bench and tests/prod/test_pgbouncer.py (they start it themselves): Debian's
## package, and 1.24.1 built from Debian's source (it keeps prepared statements in transaction mode).
pgbouncer:
	@bash scripts/ensure-pgbouncer.sh

## Debian's HAProxy for tests/prod/test_three_nodes.py and the three-node bench (they start their own, with a
## config file in a temp dir; the package's service is not started).
haproxy:
	@bash scripts/ensure-haproxy.sh

clean:
	rm -rf $(VENV) .pytest_cache site
