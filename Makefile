# The project's virtual environment lives in .venv/; every target installs what it needs.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install run test bench browsers clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev,local-models]"
	touch $(STAMP)

install: $(STAMP)

## Serve Concord at http://127.0.0.1:8000 with demo studies (embedded PostgreSQL/Redis unless DATABASE_URL/REDIS_URL are set).
run: install
	$(PY) -m config.launcher run

## The whole test suite on real PostgreSQL, Redis, a Celery worker and headless Chromium.
test: install browsers
	$(PY) -m config.launcher test $(ARGS)

## Benchmarks at a size that ends in minutes; FULL=1 for DESIGN.md's full sizes.
bench: install
	$(PY) -m config.launcher bench $(if $(FULL),--full)

## Debian's Chromium for the browser tests (Playwright drives it; it downloads no browser).
browsers:
	@bash scripts/ensure-chromium.sh

clean:
	rm -rf $(VENV) .pytest_cache
