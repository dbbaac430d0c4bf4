# Two entry points for a fresh machine:
#   make run   -> set up .venv and run the main job (synthetic suite, embedded data)
#   make test  -> set up .venv and run the test suite
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
OUT    ?= runs/synthetic
# optional extras beside the test tools: make install EXTRAS=dev,text,distributed,ann
EXTRAS ?= dev
# test processes (pytest-xdist): one per core; each runs torch on one thread (tests/conftest.py)
TEST_WORKERS ?= auto

.PHONY: install run test quick bench clean check-wheel check-report docs lint

$(STAMP): pyproject.toml
	@echo "setting up $(VENV): pip, torch 2.13.0 (CPU), then pdenets and its extras [$(EXTRAS)]"
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --progress-bar off --upgrade pip
	$(PY) -m pip install --progress-bar off torch==2.13.0
	$(PY) -m pip install --progress-bar off -e '.[$(EXTRAS)]'
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	$(VENV)/bin/pdenets run synthetic --out $(OUT)

quick: $(STAMP)
	$(VENV)/bin/pdenets run synthetic --quick --out $(OUT)-quick

test: $(STAMP)
	$(PY) -m pytest -q -n $(TEST_WORKERS)

lint: $(STAMP)   # what the suite's test_lint and test_types check, alone
	$(VENV)/bin/ruff check src tests benchmarks examples docs/hooks
	$(VENV)/bin/ruff format --check src tests benchmarks examples docs/hooks
	$(VENV)/bin/mypy

docs: $(STAMP)   # the API site (mkdocs + mkdocstrings) from docs/ and the docstrings; warnings are errors -> site/
                 # (its MathJax is fetched once by docs/hooks/mathjax.py into docs/javascripts/vendor/)
	$(PY) -m pip install --quiet -e '.[$(EXTRAS),docs]'
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir site

check-wheel:   # build sdist + wheel, install the wheel in a fresh venv, run the first commands from it
	.ci/check-wheel $(PYTHON)

check-report: $(STAMP)   # every task's --quick report opened in headless Chromium; screenshots in runs/report-check
	.ci/check-reports

bench: $(STAMP)
	$(PY) benchmarks/diffusion.py

clean:
	rm -rf $(VENV) runs .pytest_cache site docs/javascripts/vendor
