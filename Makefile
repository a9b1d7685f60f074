# The two commands: `make demo` and `make test`. Both set everything up on a fresh machine with Python 3.11.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test setup data clean-outputs

demo: setup data
	$(PY) -m frozen_sweep

test: setup
	$(PY) -m pytest -q

setup: $(STAMP)

# torch first and pinned: on these machines 2.13.0 resolves to a local CPU build; an unpinned torch pulls CUDA wheels.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test]'
	touch $@

# The embedded corpus: the Bible modules from Debian (installed when missing; needs root).
data:
	scripts/install_bible.sh

clean-outputs:
	rm -rf outputs/*/
