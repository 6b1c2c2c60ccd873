"""``bench --llm --backend browser``: one headless Chromium, one server. ONNX Runtime Web and
transformers.js (bench/llm_web.js) run first, each in a page of its own that is closed
after it (their 650 MB model and cache leave with it); then ours in the Pyodide page
(pte_webgpu.llm.bench_job). All three follow the same plan (prefill lengths and decode
positions per context).

On SwiftShader the peers' prefill of ~1000 tokens takes over 9 minutes, so a context whose
prefill is longer than ``peer_prefill_max`` tokens gives them no prefill: their decode starts
from a KV cache of the same length filled with zeros on the GPU (``seed_plan``; a step's
time depends on the cache's length, not its values). Their records say which:
``cache: "prefill" | "seeded"``. Ours always prefills.

Files, none committed: build/ortweb (``npm install onnxruntime-web`` there, as for the
rms_norm bench), build/transformersjs (``npm install @huggingface/transformers``), and the
ONNX model (``make llm-onnx``: build/llm-onnx/NAME). A missing one skips that impl with a
line saying what to run.

Beside them, when ``make llm-onnx-genai`` has run: ORT Web's WebGPU EP (ort.webgpu.mjs) on the
graphs of onnxruntime-genai's builder, one impl per folder of build/llm-onnx-genai holding a
genai_config.json ("ort-web-genai int4 webgpu-ep", ...; ``genai_impls``), each with its KV
cache in one GPU buffer per layer shared by past and present, or with graph capture where
the folder was built for it (benchGenaiLlm in bench/llm_web.js). transformers.js runs the same
graphs ("transformers.js genai int4", ...; ``tjs_genai_impls``, benchTjsLlm): its loader's
layout of each folder (``tjs_layout``: config.json from genai_config.json, the graph as
onnx/model[_q4].onnx) in a temporary folder, the weights served from the builder's folder
at data/ and handed to ORT under the graph's own location ("model.onnx.data") as
session_options.externalData; its KV cache on the GPU, grown by one row a step.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
GENAI_DIR = REPO / "build" / "llm-onnx-genai"
ORT_DIST = REPO / "build" / "ortweb" / "node_modules" / "onnxruntime-web" / "dist"
TJS_MODULES = REPO / "build" / "transformersjs" / "node_modules"
TJS_DIST = TJS_MODULES / "@huggingface" / "transformers" / "dist"  # served at /tjs/
TJS_ORT_DIST = TJS_MODULES / "onnxruntime-web" / "dist"  # its own ORT's wasm, at /tjsort/
# what transformers.js's page loads: its bundle (ORT inside), then its ORT's wasm and glue: the
# asyncify build, ORT's WebGPU EP (transformers.js 4.x on "webgpu"; not JSEP, whose files its
# dist also holds)
TJS_FILES = ((TJS_DIST, "transformers.min.js"), (TJS_ORT_DIST, "ort-wasm-simd-threaded.asyncify.mjs"),
             (TJS_ORT_DIST, "ort-wasm-simd-threaded.asyncify.wasm"))
TIMEOUT_MS = 3_600_000  # SwiftShader: a 1024-token prefill takes minutes
# the longest prompt the peers prefill for real by default (ORT Web: 4 min at 256)
PEER_PREFILL_MAX = 256


def seed_plan(todo: list[dict], peer_prefill_max: int) -> list[dict]:
    """The peers' plan: ours' (llm/bench_job.plan), each context marked ``cache: "seeded"``
    where its prefill is longer than ``peer_prefill_max`` tokens, else ``"prefill"``."""
    return [dict(p, cache="seeded" if p["prefill"] > peer_prefill_max else "prefill")
            for p in todo]


def model_name(model: Path) -> str:
    """The ONNX folder's name for a .pte: NAME of NAME[-fp16|-q4].pte[.gz]."""
    name = model.name.removesuffix(".gz").removesuffix(".pte")
    return name.removesuffix("-fp16").removesuffix("-q4")


def web_impls(model: Path, onnx_dir: Path | None, log) -> tuple[dict, Path | None]:
    """{impl: spec bits} for the impls whose files are here; the ONNX folder."""
    onnx_dir = onnx_dir or REPO / "build" / "llm-onnx" / model_name(model)
    if not (onnx_dir / "onnx" / "model.onnx").is_file() or not (onnx_dir / "config.json").is_file():
        log(f"no ONNX model in {onnx_dir} (run `make llm-onnx`): skipping ort-web and "
            "transformers.js")
        return {}, None
    impls = {}
    if (ORT_DIST / "ort.mjs").is_file():
        impls["ort-web"] = "benchOrtLlm"
    else:
        log("onnxruntime-web not found (npm install onnxruntime-web in build/ortweb): "
            "skipping ort-web")
    if (TJS_DIST / "transformers.min.js").is_file():
        impls["transformers.js"] = "benchTjsLlm"
    else:
        log("transformers.js not found (npm install @huggingface/transformers in "
            "build/transformersjs): skipping transformers.js")
    return impls, onnx_dir


def genai_impls(genai_dir: Path, plan: list[dict], mode: str | None, log) -> dict:
    """{impl: (folder, spec.genai)} for the builder's folders under ``genai_dir``: mode
    "graph" where its genai_config turns graph capture on, else "shared" (``mode`` overrides);
    the cache holds the plan's longest context and one more step."""
    if not (ORT_DIST / "ort.webgpu.mjs").is_file():
        log("onnxruntime-web not found: skipping ort-web-genai")
        return {}
    return {f"ort-web-genai {folder.name} webgpu-ep": (folder, spec)
            for folder, spec in genai_specs(genai_dir, plan, mode).items()}


def genai_specs(genai_dir: Path, plan: list[dict], mode: str | None = None) -> dict:
    """{folder: spec.genai} for the builder's folders under ``genai_dir`` (genai_impls)."""
    specs = {}
    for folder in sorted(p.parent for p in genai_dir.glob("*/genai_config.json")):
        cfg = json.loads((folder / "genai_config.json").read_text())["model"]
        dec = cfg["decoder"]
        options = {k: v for o in dec.get("session_options", {}).get("provider_options", [])
                   for k, v in o.get("webgpu", {}).items()}
        data = [p.name for p in folder.glob(dec["filename"] + ".data")]
        graph = options.get("enableGraphCapture") == "1"
        spec = {"file": dec["filename"], "external": data[0] if data else None,
                "pastKey": dec["inputs"]["past_key_names"], "pastValue": dec["inputs"]["past_value_names"],
                "presentKey": dec["outputs"]["present_key_names"],
                "presentValue": dec["outputs"]["present_value_names"],
                "positionIds": "position_ids" in dec["inputs"],
                "mode": mode or ("graph" if graph else "shared"),
                "maxLength": max(p["prefill"] + p["steps"] for p in plan) + 1,
                "nLayers": dec["num_hidden_layers"], "kvHeads": dec["num_key_value_heads"],
                "headDim": dec["head_size"], "vocab": cfg["vocab_size"]}
        specs[folder] = spec
    return specs


# the names transformers.js feeds and reads for a decoder (its getKeyValueNames, decoder_forward)
_TJS_NAMES = {"input_ids": "input_ids", "attention_mask": "attention_mask", "position_ids": "position_ids",
              "past_key_names": "past_key_values.%d.key", "past_value_names": "past_key_values.%d.value",
              "logits": "logits", "present_key_names": "present.%d.key",
              "present_value_names": "present.%d.value"}


def tjs_unfed(folder: Path) -> str | None:
    """Why transformers.js cannot run the builder's graph in ``folder`` (an input it does not
    feed, a name it does not use), or None."""
    dec = json.loads((folder / "genai_config.json").read_text())["model"]["decoder"]
    for key, name in {**dec["inputs"], **dec["outputs"]}.items():
        if _TJS_NAMES.get(key) != name:
            return f"transformers.js does not feed or read the graph's {key} {name!r}"
    return None


def tjs_genai_impls(genai_dir: Path, plan: list[dict], log) -> dict:
    """{impl: (folder, spec.genai, why not | None)}: transformers.js on the builder's folders
    ("transformers.js genai <folder>"); an impl whose graph it cannot feed keeps the reason
    (its record says it, bench/llm_browser.py run)."""
    if not (TJS_DIST / "transformers.min.js").is_file():
        log("transformers.js not found (make llm-web-deps): skipping transformers.js genai")
        return {}
    return {f"transformers.js genai {folder.name}": (folder, spec, tjs_unfed(folder))
            for folder, spec in genai_specs(genai_dir, plan).items()}


def hf_config(genai_config: dict) -> dict:
    """config.json in Hugging Face's form, as transformers.js reads it, from genai_config.json."""
    cfg = genai_config["model"]
    dec = cfg["decoder"]
    return {"model_type": cfg["type"], "vocab_size": cfg["vocab_size"], "hidden_size": dec["hidden_size"],
            "num_hidden_layers": dec["num_hidden_layers"], "num_attention_heads": dec["num_attention_heads"],
            "num_key_value_heads": dec["num_key_value_heads"], "head_dim": dec["head_size"],
            "max_position_embeddings": cfg.get("context_length", 2048),
            **{k: cfg[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id") if k in cfg}}


def tjs_layout(folder: Path, gspec: dict, dest: Path) -> dict:
    """Write what transformers.js loads for the builder's graph in ``folder`` into ``dest``:
    config.json and generation_config.json (hf_config), onnx/model.onnx (the graph, < 1 MB),
    or onnx/model_q4.onnx where it holds MatMulNBits (dtype "q4": transformers.js names its
    file so; the dtype picks nothing else). The weights stay in ``folder``, to be served at
    ``data/`` under the model's URL: returns spec.tjs {dtype, externalData: [{path: the
    graph's location string, data: "data/<it>"}]}."""
    genai = json.loads((folder / "genai_config.json").read_text())
    graph = (folder / gspec["file"]).read_bytes()
    dtype = "q4" if b"MatMulNBits" in graph else "fp32"
    (dest / "onnx").mkdir(parents=True, exist_ok=True)
    config = hf_config(genai)
    (dest / "config.json").write_text(json.dumps(config, indent=1))
    (dest / "generation_config.json").write_text(json.dumps(
        {k: config[k] for k in ("bos_token_id", "eos_token_id", "pad_token_id") if k in config}))
    shutil.copy(folder / gspec["file"], dest / "onnx" / ("model_q4.onnx" if dtype == "q4" else "model.onnx"))
    # emptyCache: the graph's past_key_values.* name their head dim "kv_cache_dim" (benchTjsLlm)
    tspec = {"dtype": dtype, "emptyCache": True}
    if gspec["external"]:
        if gspec["external"].encode() not in graph:  # ORT matches externalData's path to it
            raise ValueError(f"{folder / gspec['file']} does not name {gspec['external']} as its "
                             "external data")
        tspec["externalData"] = [{"path": gspec["external"], "data": "data/" + gspec["external"]}]
    return tspec


def tjs_version(genai: bool = False) -> str:
    """transformers.js's version and its ORT's; ``genai``: of its rows on the builder's graphs."""
    return (f"@huggingface/transformers {_version(TJS_MODULES / '@huggingface' / 'transformers')} "
            f"(onnxruntime-web {_version(TJS_MODULES / 'onnxruntime-web')}, webgpu-ep"
            + (", KV cache grown on the GPU)" if genai else ")"))


def _version(package: Path) -> str:
    try:
        return json.loads((package / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return "?"


_OURS = """
import gzip as _gzip
import js as _js
from pyodide.http import pyfetch as _pyfetch
from pte_webgpu.errors import PteError as _PteError
from pte_webgpu.llm.bench_job import llm_bench_job as _job

_pte = await (await _pyfetch({url!r})).bytes()
if {url!r}.endswith(".gz"):
    _pte = _gzip.decompress(_pte)
try:
    _result = await _job(_pte, contexts={contexts!r}, steps={steps}, warmup={warmup},
                         profile={profile}, backend="browser", progress=_js.pteBenchProgress)
except _PteError as _e:
    _result = {{"error": {{"type": type(_e).__name__, "message": str(_e)}}}}
del _pte
_result
"""


def run(model: Path, todo: list[dict], *, web: bool = True, onnx_dir: Path | None = None,
        warmup: bool = True, profile: bool = False, peer_prefill_max: int = PEER_PREFILL_MAX,
        genai_dir: Path | None = None, genai_mode: str | None = None, keep_logits: bool = False,
        ours: bool = True, progress=print) -> tuple[dict, list[dict]]:
    """``genai_dir``: the builder's folders (default: build/llm-onnx-genai where the ONNX model
    is build/llm-onnx's, or none is found); ``genai_mode``
    forces "grow" | "shared" | "graph" for them; ``keep_logits``: their decode records keep
    each run's logits row; ``ours=False``: the peers alone (result ``{"web_errors": ...}``); result
    ``web_errors``: {impl: why it has no records}."""
    from pte_webgpu.chromium import paths
    from pte_webgpu.chromium.dist import ensure_dist, version
    from pte_webgpu.chromium.remote import remote_error
    from pte_webgpu.chromium.server import StaticServer
    from pte_webgpu.chromium.session import BrowserSession
    from pte_webgpu.llm.bench_job import summarize

    dist = ensure_dist(log=progress)
    dist_url = f"/pyodide-{version(dist)[:16]}/"
    impls, onnx_dir = web_impls(model, onnx_dir, progress) if web else ({}, None)
    plan = seed_plan(todo, peer_prefill_max)
    # the builder's graphs of build/ beside build/llm-onnx's, or those of genai_dir
    genai_dir = genai_dir or (GENAI_DIR if onnx_dir is None or onnx_dir.parent.parent == REPO / "build"
                              else None)
    genai = genai_impls(genai_dir, plan, genai_mode, progress) if web and genai_dir else {}
    tjs_genai = tjs_genai_impls(genai_dir, plan, progress) if web and genai_dir else {}
    web_records, web_profiles, web_errors = [], {}, {}
    with tempfile.TemporaryDirectory(prefix="pte-tjs-genai-") as tjs_tmp, \
            StaticServer({"/": paths.web_root(), "/bench/": HERE}) as server:
        server.mount(dist_url, dist, immutable=True)
        real = model.resolve()
        url = server.mount("/job0/", real.parent, {real.name}) + real.name
        if impls:
            name = model_name(model)
            server.mount(f"/models/{name}/", onnx_dir)
            server.mount("/ort/", ORT_DIST)
            server.mount("/tjs/", TJS_DIST)
            server.mount("/tjsort/", TJS_ORT_DIST)
            config = json.loads((onnx_dir / "config.json").read_text())
            spec = {"model": name, "nLayers": config["num_hidden_layers"],
                    "kvHeads": config["num_key_value_heads"], "headDim": config["head_dim"],
                    "vocab": config["vocab_size"], "plan": seed_plan(todo, peer_prefill_max),
                    "warmup": warmup,
                    "profile": profile}
            versions = {"ort-web": f"onnxruntime-web {_version(ORT_DIST.parent)} (jsep)",
                        "transformers.js": tjs_version()}
        with BrowserSession(server.url, index_url=dist_url, timeout_ms=TIMEOUT_MS,
                            progress=progress) as session:
            adapter = session.run_python(
                "from pte_webgpu.gpu.browser import BrowserDevice as _D\n"
                "_d = await _D.create()\n_s = _d.info.summary()\n_d.close()\n_s")
            jobs = [(impl, fn, spec, versions[impl]) for impl, fn in impls.items()]
            for impl, (folder, gspec) in genai.items():
                name = "genai-" + folder.name
                server.mount(f"/models/{name}/", folder)
                server.mount("/ort/", ORT_DIST)
                jobs.append((impl, "benchGenaiLlm", {
                    "model": name, "plan": plan, "warmup": warmup, "profile": profile,
                    "keepLogits": keep_logits, "genai": gspec,
                    **{k: gspec[k] for k in ("nLayers", "kvHeads", "headDim", "vocab")}},
                    f"onnxruntime-web {_version(ORT_DIST.parent)} (webgpu-ep, {gspec['mode']})"))
            for impl, (folder, gspec, unfed) in tjs_genai.items():
                if unfed:
                    progress(f"{impl} failed: {unfed}")
                    web_errors[impl] = unfed
                    continue
                name = "tjs-genai-" + folder.name
                tspec = tjs_layout(folder, gspec, Path(tjs_tmp) / name)
                server.mount(f"/models/{name}/", Path(tjs_tmp) / name)
                if gspec["external"]:
                    server.mount(f"/models/{name}/data/", folder, {gspec["external"]})
                server.mount("/tjs/", TJS_DIST)
                server.mount("/tjsort/", TJS_ORT_DIST)
                jobs.append((impl, "benchTjsLlm", {
                    "model": name, "plan": plan, "warmup": warmup, "tjs": tspec,
                    **{k: gspec[k] for k in ("nLayers", "kvHeads", "headDim", "vocab")}},
                    tjs_version(genai=True)))
            for impl, fn, spec, impl_version in jobs:
                progress(f"{impl}: loading the ONNX model ({impl_version})")
                page = session.page.context.browser.new_page()  # a context of its own
                page.set_default_timeout(TIMEOUT_MS)
                page.on("console", lambda m, impl=impl: m.text.startswith("llm-bench: ") and
                        progress(f"{impl}: {m.text.removeprefix('llm-bench: ')}"))
                started = time.perf_counter()
                try:
                    page.goto(f"{server.url}bench/llm_web.html")
                    page.wait_for_function("window.llmWebReady === true")
                    got = page.evaluate(f"spec => window.{fn}(spec)", spec)
                except Exception as e:  # one impl failing must not lose the others
                    progress(f"{impl} failed: {str(e).splitlines()[0]}")
                    web_errors[impl] = str(e)[:2000]
                    continue
                finally:
                    page.close()
                progress(f"{impl}: {time.perf_counter() - started:.0f} s "
                         f"(load {got['load_ms'] / 1e3:.1f} s)")
                web_records += [dict(summarize(r), impl=impl, version=impl_version,
                                     load_s=got["load_ms"] / 1e3) for r in got["records"]]
                for c, rows in (got.get("profiles") or {}).items():
                    if isinstance(rows, list):
                        web_profiles[f"{impl} {c}"] = rows
                    else:
                        progress(f"{impl}: no profile at context {c}: {rows}")
            if not ours:
                return {"web_errors": web_errors}, [dict(r, adapter=adapter) for r in web_records]
            session.page.expose_function("pteBenchProgress", lambda text: progress(f"ours: {text}"))
            progress("ours: loading the program in Pyodide")
            result = session.run_python(_OURS.format(
                url=url, contexts=[p["context"] for p in todo], steps=todo[0]["steps"],
                warmup=warmup, profile=profile))
    if "error" in result:
        raise remote_error(result["error"]["type"], result["error"]["message"])
    for r in web_records:
        r["adapter"] = adapter
    result["web_profiles"] = web_profiles
    result["web_errors"] = web_errors
    return result, web_records
