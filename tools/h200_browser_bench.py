"""``bench --llm --backend browser`` on the lent GPU, where Playwright is not: ours (Pyodide),
ONNX Runtime Web's WebGPU EP and transformers.js on onnxruntime-genai's graphs, in one headless
Chromium driven over its DevTools pipe (tools/h200_browser_fixtures.py's Chrome and server),
the same page code as bench/llm_browser.py (bench/llm_web.js benchGenaiLlm and benchTjsLlm,
its ``_OURS`` job).

Two steps, because the device cannot build anything:

  prepare (here): python3 tools/h200_browser_bench.py prepare --model build/gpullm/X.pte.gz
      --contexts 16,256,1024 --steps 16 [--genai build/llm-onnx-genai] [--out build/gpubench]
    writes OUT/spec.json (the plan of ours, bench/llm_browser.py's genai specs) and each
    builder folder with its weights zeroed and gzipped (a step's time does not depend on
    the weights' values; 86 MB of int4 become ~0.1 MB to carry), their transformers.js layout
    in FOLDER/tjs (bench/llm_browser.py tjs_layout: config.json, onnx/model[_q4].onnx; the
    weights are FOLDER's), OUT/ort: the files of onnxruntime-web the WebGPU EP loads, and
    OUT/tjs: transformers.js's bundle and its own ORT's WebGPU-EP wasm (the asyncify build),
    gzipped (run unzips them).
  run (there, after `source tools/h200_chromium_env.sh`: CHROME, CHROME_LD, FLAGS): python3
      tools/h200_browser_bench.py run --chrome $CHROME --dist DIST --spec OUT/spec.json
      --models build/gpullm --out RESULT.json -- $FLAGS
    one record per phase and context for every impl, as `bench --llm` writes them.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tools"), str(ROOT / "bench")]

import h200_browser_fixtures as fx  # noqa: E402
import llm_browser  # noqa: E402

ORT_FILES = ("ort.webgpu.mjs", "ort-wasm-simd-threaded.asyncify.mjs",
             "ort-wasm-simd-threaded.asyncify.wasm")


def prepare(args) -> None:
    from pte_webgpu.llm.bench_job import host_plan

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)  # ours alone (no builder folders) writes only the spec
    pte = Path(args.model).read_bytes()
    pte = gzip.decompress(pte) if args.model.endswith(".gz") else pte
    contexts = [int(c) for c in args.contexts.split(",")]
    todo = host_plan(pte, [], contexts, args.steps)
    genai = llm_browser.genai_impls(Path(args.genai), todo, None, print)
    tjs = llm_browser.tjs_genai_impls(Path(args.genai), todo, print)
    folders = {}  # builder folder -> its copy here
    for folder, spec in llm_browser.genai_specs(Path(args.genai), todo).items():
        dest = folders[folder] = out / ("genai-" + folder.name)
        shutil.rmtree(dest, ignore_errors=True)  # no file of an earlier prepare is carried
        dest.mkdir(parents=True)
        for f in folder.iterdir():
            if f.name == spec["external"]:  # zeros of the same size, gzipped
                with gzip.open(dest / (f.name + ".gz"), "wb") as z:
                    left = f.stat().st_size
                    while left:
                        z.write(bytes(min(left, 1 << 24)))
                        left -= min(left, 1 << 24)
            elif f.suffix == ".onnx" or f.name in ("genai_config.json", "export.json"):
                shutil.copy(f, dest / f.name)  # not tokenizer.json: 3.5 MB the pages never read
    specs = {impl: {"folder": folders[folder].name, "genai": spec} for impl, (folder, spec) in genai.items()}
    tjs_specs = {}
    for impl, (folder, spec, unfed) in tjs.items():
        tjs_specs[impl] = {"folder": folders[folder].name, "genai": spec, "error": unfed} if unfed else {
            "folder": folders[folder].name, "genai": spec,
            "tjs": llm_browser.tjs_layout(folder, spec, folders[folder] / "tjs")}
    files = [(llm_browser.ORT_DIST, name, "ort") for name in ORT_FILES] if genai else []
    files += [(src, name, "tjs") for src, name in llm_browser.TJS_FILES] if tjs else []
    for src, name, sub in files:  # gzipped: each wasm is 27-28 MB of a call's 64 MiB
        (out / sub).mkdir(parents=True, exist_ok=True)
        with open(src / name, "rb") as f, gzip.open(out / sub / (name + ".gz"), "wb") as dst:
            shutil.copyfileobj(f, dst, 1 << 24)
    version = llm_browser._version(llm_browser.ORT_DIST.parent)
    (out / "spec.json").write_text(json.dumps(
        {"plan": todo, "steps": args.steps, "genai": specs, "ort_version": version,
         "tjs": tjs_specs, "tjs_version": llm_browser.tjs_version(genai=True)}, indent=1))
    print(f"wrote {out}/spec.json: {len(specs)} genai folder(s), {len(tjs_specs)} transformers.js "
          f"job(s), plan {todo}")


def _unzip(folder: Path) -> None:
    for z in folder.glob("*.gz"):
        target = z.with_suffix("")
        if not target.exists():
            with gzip.open(z) as src, open(target, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 24)


_SETTING = """
import os as _os
for _k in {names!r}:
    _os.environ.pop(_k, None)
_os.environ.update({assign!r})
"""


def _settings(text: str) -> list[tuple[str, dict]]:
    """``"base: nomerge:PTE_WEBGPU_FOLDS_OFF=merge"`` -> [(label, {VAR: value}), ...]."""
    out = []
    for item in text.split():
        label, _, assign = item.partition(":")
        pairs = dict(a.split("=", 1) for a in assign.split(";") if a)
        out.append((label, pairs))
    return out


def _ours_jobs(args):
    """(round, program, setting) in the order they run: rounds outermost, so that a clock
    ramp or a warm cache favours no setting."""
    for r in range(1, args.rounds + 1):
        for name in args.programs.split(","):
            for setting in args.settings:
                yield r, name, setting


def run(args) -> int:
    from pte_webgpu.llm.bench_job import summarize

    spec = json.loads(Path(args.spec).read_text())
    base = Path(args.spec).parent
    tjs = spec.get("tjs", {})
    _unzip(base / "ort")
    _unzip(base / "tjs")
    # the first prefix that matches serves (fx.serve_mounts): the longer ones first
    mounts = [("/pyodide/", Path(args.dist).resolve()), ("/bench/", ROOT / "bench"),
              ("/ort/", base / "ort"), ("/tjs/", base / "tjs"), ("/tjsort/", base / "tjs"),
              ("/job0/", Path(args.models).resolve()), ("/", ROOT / "web")]
    for impl, g in [*spec["genai"].items(), *tjs.items()]:
        _unzip(base / g["folder"])
        mounts.insert(0, (f"/models/{g['folder']}/", base / g["folder"]))
    for impl, g in tjs.items():  # transformers.js's layout, the weights at data/
        mounts[:0] = [(f"/models/tjs-{g['folder']}/data/", base / g["folder"]),
                      (f"/models/tjs-{g['folder']}/", base / g["folder"] / "tjs")]
    httpd = fx.serve_mounts(mounts)
    root = f"http://127.0.0.1:{httpd.server_address[1]}/"
    chrome = fx.Chrome(args.chrome, args.flags, args.log)
    plan = spec["plan"]
    records, summary = [], {"flags": args.flags, "errors": {}}

    def bench_page():
        chrome.evaluate("new Promise(r => { const t = () => window.llmWebReady ? r(1)"
                        " : setTimeout(t, 50); t(); })", 60)

    def peer(impl, call, version) -> list[dict]:
        """One peer's records (none when it fails: one impl must not lose the others)."""
        t0 = time.time()
        try:
            got = chrome.evaluate(call, args.timeout)
        except Exception as e:  # noqa: BLE001 - reported with the run, the next impl goes on
            print(f"{impl} failed: {str(e)[:500]}")
            summary["errors"][impl] = str(e)[:2000]
            return []
        print(f"{impl}: {time.time() - t0:.0f} s")
        return [dict(summarize(r), impl=impl, version=version, load_s=got["load_ms"] / 1e3)
                for r in got["records"]]

    try:
        chrome.open(root + "bench/llm_web.html")
        bench_page()
        summary["adapter_js"] = chrome.evaluate(fx.ADAPTER_JS)
        for impl, g in ({} if args.ours_only else spec["genai"]).items():
            gspec = g["genai"]
            job = {"model": g["folder"], "plan": plan, "warmup": True, "profile": False,
                   "keepLogits": False, "genai": gspec,
                   **{k: gspec[k] for k in ("nLayers", "kvHeads", "headDim", "vocab")}}
            version = f"onnxruntime-web {spec['ort_version']} (webgpu-ep, {gspec['mode']})"
            records += peer(impl, f"window.benchGenaiLlm({json.dumps(job)})", version)
        for impl, g in ({} if args.ours_only else tjs).items():  # each in a fresh page
            if g.get("error"):
                print(f"{impl} failed: {g['error']}")
                summary["errors"][impl] = g["error"]
                continue
            gspec = g["genai"]
            job = {"model": f"tjs-{g['folder']}", "plan": plan, "warmup": True, "tjs": g["tjs"],
                   **{k: gspec[k] for k in ("nLayers", "kvHeads", "headDim", "vocab")}}
            version = spec["tjs_version"]
            chrome.call("Page.navigate", {"url": root + "bench/llm_web.html"})
            time.sleep(1.0)
            bench_page()
            records += peer(impl, f"window.benchTjsLlm({json.dumps(job)})", version)
        chrome.call("Page.navigate", {"url": root + "harness.html?indexURL=/pyodide/"})
        time.sleep(1.0)
        chrome.wait_for_pyodide("window.pteBenchProgress = (t) => console.log('ours: ' + t);"
                                " return true;")
        # a setting is the page's os.environ while the program builds (fusion.folds_off,
        # variants' PTE_WEBGPU_<FAMILY>): each one alone, the others' variables cleared
        names = sorted({k for _, a in args.settings for k in a})
        for _round, name, (label, assign) in _ours_jobs(args):
            code = _SETTING.format(names=names, assign=assign)
            code += llm_browser._OURS.format(
                url=f"/job0/{name}", contexts=[p["context"] for p in plan],
                steps=spec["steps"], warmup=True, profile=False)
            code += "\nimport json as _json\n_json.dumps(_result, default=repr)"
            impl = f"ours {name}" + ("" if label == "base" else f" [{label}]")
            t0 = time.time()
            result = json.loads(chrome.python(code, args.timeout))
            if "error" in result:
                print(f"{impl} failed: {result['error']}")
                continue
            print(f"{impl}: {time.time() - t0:.0f} s")
            records += [dict(r, impl=impl, round=_round) for r in result["records"]]
    finally:
        chrome.finish(summary, httpd, 100)
    adapter = summary.get("adapter_js") or {}
    for r in records:
        r["adapter"] = f"browser: {adapter.get('vendor')} {adapter.get('architecture')}"
        r.pop("ms_all", None)
    summary["records"] = records
    Path(args.out).write_text(json.dumps(summary, indent=1, default=repr))
    for r in records:
        print(f"{r['impl'][:60]:60s} {r['phase']:8s} ctx {r['context']:5d} "
              f"{r['ms_per_token']:8.3f} ms/token {r['tok_s']:9.1f} tok/s")
    return 0 if records else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--model", required=True)
    p.add_argument("--contexts", default="16,256,1024")
    p.add_argument("--steps", type=int, default=16)
    p.add_argument("--genai", default=str(llm_browser.GENAI_DIR))
    p.add_argument("--out", default="build/gpubench")
    r = sub.add_parser("run")
    r.add_argument("--chrome", required=True)
    r.add_argument("--dist", required=True)
    r.add_argument("--spec", required=True)
    r.add_argument("--models", default="build/gpullm")
    r.add_argument("--programs", default="smollm2-135m-instruct.pte.gz,"
                   "smollm2-135m-instruct-q4.pte.gz")
    r.add_argument("--out", default="h200-browser-bench.json")
    r.add_argument("--log", default="/tmp/h200-bench-chromium.log")
    r.add_argument("--timeout", type=float, default=540.0)
    r.add_argument("--settings", type=_settings, default=_settings("base:"),
                   help="ours under each LABEL:VAR=VALUE[;VAR=VALUE] in turn (space-separated;"
                        " default \"base:\"), records' impl gains [LABEL] past base")
    r.add_argument("--rounds", type=int, default=1)
    r.add_argument("--ours-only", action="store_true",
                   help="skip the peers (e.g. to time ours under other Chromium flags)")
    r.add_argument("flags", nargs="*")
    args = ap.parse_args(argv)
    if args.cmd == "prepare":
        prepare(args)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
