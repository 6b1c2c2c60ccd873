# make setup   host dependencies (editable install, Chromium) and the local Pyodide dist
# make dist    build build/web/pyodide (Pyodide core + our wheel + flatbuffers + lock) when
#              the package changed (content hashes); `run`, `serve` and tests reuse it
# make test    all tests; browser tests drive headless Chromium on the local dist
# make test-gpu  the GPU lane: tests/native (every fixture) on the adapter wgpu picks,
#              summary in docs/gpu-lane.md (tools/gpu_lane.sh; wheels from .whl/ if any)
# make fuzz    100k fuzz cases over the readers;  make bench: parse benchmark
# make fuzz-exec  100k structurally mutated programs through load and execute (native)

PYTHON ?= python3
# sudo only when not already root
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup dist test test-gpu fuzz fuzz-exec bench demo

setup:
	@# chromium: headless WebGPU (SwiftShader); libvulkan1 + mesa: native wgpu on lavapipe
	dpkg -s chromium libvulkan1 mesa-vulkan-drivers >/dev/null 2>&1 || { $(SUDO) apt-get update && $(SUDO) apt-get install -y chromium libvulkan1 mesa-vulkan-drivers; }
	$(PYTHON) -m pip install -e '.[test,native]'
	$(MAKE) dist

dist:
	$(PYTHON) -m pte_webgpu.chromium.dist

test:
	$(PYTHON) -m pytest -q

test-gpu:
	PYTHON=$(PYTHON) tools/gpu_lane.sh

# >= 100k mutated fixtures through the readers; fails on any non-PteError escape
fuzz:
	PYTHONPATH=pkg $(PYTHON) -m tests.fuzz.run --cases 100000

# >= 100k structurally mutated programs loaded and executed natively (wgpu); fails on any
# escape: a non-PteError exception, a hang, a crash, a slow case or a memory blow-up
fuzz-exec:
	PYTHONPATH=pkg $(PYTHON) -m tests.fuzz.run --exec --cases 100000

bench:
	PYTHONPATH=pkg $(PYTHON) bench/bench_parse.py

# The main job on a bundled example: run it in headless Chromium; `run` compares the
# outputs with torch's (out0, out1 in the .npz). The dist is built once, by setup.
DEMO ?= add_rmsnorm_2out_4x128
demo: setup
	$(PYTHON) -m pte_webgpu run tests/fixtures/$(DEMO).pte --inputs tests/fixtures/$(DEMO).npz \
		--output build/$(DEMO).out.npz --repeat 20
