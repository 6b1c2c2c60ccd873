# make setup   host dependencies (editable install, Chromium) and the local Pyodide dist
# make dist    (re)build build/web/pyodide: Pyodide core + our wheel + flatbuffers + lock
# make test    all tests; browser tests drive headless Chromium on the local dist
# make fuzz    100k fuzz cases over the readers;  make bench: parse benchmark

PYTHON ?= python3
# sudo only when not already root
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup dist test fuzz bench

setup:
	command -v chromium >/dev/null || { $(SUDO) apt-get update && $(SUDO) apt-get install -y chromium; }
	$(PYTHON) -m pip install -e '.[test]'
	$(MAKE) dist

dist:
	PYTHONPATH=pkg $(PYTHON) -m pte_webgpu.chromium.dist

test:
	$(PYTHON) -m pytest -q

# >= 100k mutated fixtures through the readers; fails on any non-PteError escape
fuzz:
	PYTHONPATH=pkg $(PYTHON) -m tests.fuzz.run --cases 100000

bench:
	PYTHONPATH=pkg $(PYTHON) bench/bench_parse.py
