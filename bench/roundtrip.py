"""Round trip of ``Method.execute`` from Python (Pyodide) against the same GPU work done
from plain JS, in one headless Chromium page.

    python bench/roundtrip.py [--fixtures NAME,...] [-n 200] [--output FILE.json]
    pte-webgpu bench --roundtrip [--output FILE.json]

For each fixture (``tests/fixtures/<NAME>.pte`` + ``.npz``) the page loads the program
with our runtime, then alternates blocks of ``await method.execute(inputs)`` (Python)
and of ``window.roundtripJs`` (bench/roundtrip.js: writeBuffer the inputs, one encoder,
copy outputs to staging, submit, mapAsync, copy out, unmap) driving the very same JS
objects the method recorded: pipelines, bind groups, plan buffers, staging buffer. Each
round trip is timed with ``performance.now()`` in the page. Also reported, to locate the
Python overhead: WebGPU API calls per round trip on both paths (counted by wrapping the
GPU* prototypes), the split of one Python execute into its phases, the cost of one
bare ``await`` of a resolved JS promise from Python, and "py+js replay": Python writes
the inputs and awaits one JS function that does the encode/submit/map (what execute
would cost if ``gpu/browser.py`` handed the replay to JS).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_FIXTURES = ["rmsnorm_4x128_eps1e-6", "rmsnorm_1x2x4096_eps1e-6",
                    "extra/rmsnorm_2x1000_eps1e-3", "add_rmsnorm_1x8x64", "add_rmsnorm_2out_4x128"]
TARGET = 1.2  # Python round trip <= 1.2x the plain-JS one

# Python run inside the page.
_PAGE = r'''
import js, struct
from pyodide.ffi import to_js, create_proxy
from pyodide.code import run_js
from pyodide.http import pyfetch
import pte_webgpu
from math import prod
from pte_webgpu.formats import npy
from pte_webgpu.gpu.recording import Dispatch, align4
from pte_webgpu.model import dtypes
from pte_webgpu.runtime.build import upload
from pte_webgpu.runtime.inputs import read_input
from pte_webgpu.runtime.method import gpu_work
from pte_webgpu.model.tensor import output

_obj = lambda v: to_js(v, dict_converter=js.Object.fromEntries)
_now = js.performance.now
_rt = None
_loaded = {}

# Counts calls to every method of the WebGPU interfaces the round trip uses; wrapped only
# while counting (countGpuCalls(true)), so the timed runs call the originals.
run_js("""
window.gpuCalls = 0;
const wrapped = [];
for (const C of [GPUDevice, GPUQueue, GPUCommandEncoder, GPUComputePassEncoder, GPUBuffer]) {
  for (const k of Object.getOwnPropertyNames(C.prototype)) {
    const d = Object.getOwnPropertyDescriptor(C.prototype, k);
    if (k === "constructor" || typeof d.value !== "function") continue;
    const f = d.value;
    wrapped.push([C.prototype, k, f, function (...a) { window.gpuCalls++; return f.apply(this, a); }]);
  }
}
window.countGpuCalls = (on) => { window.gpuCalls = 0;
  for (const [proto, k, f, w] of wrapped) proto[k] = on ? w : f; };
// What a JS replay inside gpu/browser.py would do, given prebuilt arrays.
window.replayJs = async (device, steps, outputs, staging, total) => {
  const enc = device.createCommandEncoder();
  let pass = null;
  for (const s of steps) {
    if (s.kind === "copy") { if (pass) { pass.end(); pass = null; }
      enc.copyBufferToBuffer(s.src, 0, s.dst, 0, s.size); continue; }
    if (!pass) pass = enc.beginComputePass();
    pass.setPipeline(s.pipeline); pass.setBindGroup(0, s.bindGroup);
    pass.dispatchWorkgroups(s.grid[0], s.grid[1], s.grid[2]);
  }
  if (pass) pass.end();
  let at = 0;
  for (const [buf, size] of outputs) { enc.copyBufferToBuffer(buf, 0, staging, at, size); at += size; }
  device.queue.submit([enc.finish()]);
  await staging.mapAsync(GPUMapMode.READ, 0, total);
  const out = new Uint8Array(staging.getMappedRange(0, total)).slice();
  staging.unmap();
  return out;
};
""")


async def _fetch(url):
    r = await pyfetch(url)
    if not r.ok:
        raise FileNotFoundError(url)
    return await r.bytes()


async def rt_load(name):
    global _rt
    if _rt is None:
        _rt = await pte_webgpu.Runtime.create()
    arrays = npy.read_npz(await _fetch(f"/fixtures/{name}.npz"))
    program = await _rt.load_program(await _fetch(f"/fixtures/{name}.pte"))
    method = program.load_method()
    gpu = gpu_work(method)  # the recorded work the JS path drives
    inputs = [arrays[k] for k in sorted(arrays) if k.startswith("in")]
    wants = [arrays[k] for k in sorted(arrays) if k.startswith("out")]
    steps = []
    for s in gpu.recording.steps:
        if isinstance(s, Dispatch):
            steps.append({"kind": "dispatch", "pipeline": s.pipeline, "bindGroup": s.bind_group,
                          "grid": list(s.grid)})
        else:
            steps.append({"kind": "copy", "src": s.src.handle, "dst": s.dst.handle, "size": s.size})
    job = _obj({
        "device": gpu.device.device,
        "inputs": [[buf.handle, to_js(memoryview(t.tobytes()))]
                   for buf, t in zip(gpu.inputs, inputs)],
        "outputs": [[b.handle, size] for b, size in gpu.outputs],
        "staging": gpu.staging.handle, "steps": steps})
    replay = [_obj(steps), _obj([[b.handle, align4(size)] for b, size in gpu.outputs]),
              sum(align4(size) for _, size in gpu.outputs)]
    _loaded[name] = (program, method, inputs, wants, job, replay, gpu)
    # Correctness: both paths give the fixture's outputs, byte for byte the same.
    py = await method.execute(inputs, as_numpy=False)
    jsout = [bytes(a.to_py()) for a in await js.roundtripJsOnce(job)]
    def err(a, b):
        a = struct.unpack(f"<{len(a) // 4}f", a); b = struct.unpack(f"<{len(b) // 4}f", b)
        return max((abs(x - y) for x, y in zip(a, b)), default=0.0)
    return {"adapter": _rt.device.info.summary(),
            "kernels": [k.get("variant") or k["op"] for k in method.kernels],
            "dispatches": sum(isinstance(s, Dispatch) for s in gpu.recording.steps),
            "steps": len(gpu.recording.steps), "inputs": len(inputs), "outputs": len(wants),
            "input_bytes": sum(t.nbytes for t in inputs),
            "same_bytes": [p.tobytes() == j for p, j in zip(py, jsout)],
            "max_abs_err": [err(p.tobytes(), w.tobytes()) for p, w in zip(py, wants)]}


async def time_py(name, n):
    _, method, inputs, *_ = _loaded[name]
    out = []
    for _ in range(n):
        t0 = _now()
        await method.execute(inputs)
        out.append(_now() - t0)
    return out


async def time_js(name, n):
    return (await js.roundtripJs(_loaded[name][4], n)).to_py()


async def time_replay(name, n):
    """Python uploads via the runtime, then awaits one JS call for the rest."""
    _, method, inputs, _, _, (steps, outs, total), gpu = _loaded[name]
    dev, jsdev = gpu.device, gpu.device.device
    out = []
    for _ in range(n):
        t0 = _now()
        for buf, t in zip(gpu.inputs, inputs):
            upload(dev, buf, t.memoryview())
        raw = (await js.replayJs(jsdev, steps, outs, gpu.staging.handle, total)).to_bytes()
        out.append(_now() - t0)
    return out


async def count_calls(name):
    _, method, inputs, _, job, *_ = _loaded[name]
    js.countGpuCalls(True)
    try:
        await method.execute(inputs)
        py = int(js.gpuCalls)
        js.gpuCalls = 0
        await js.roundtripJsOnce(job)
        return {"py": py, "js": int(js.gpuCalls)}
    finally:
        js.countGpuCalls(False)


async def phases(name, n):
    """One execute split in its phases (the same code as Method.execute, inlined)."""
    _, method, inputs, *_, gpu = _loaded[name]
    dev, meta, storage = gpu.device, method.metadata, gpu.storage
    acc = {"validate": [], "upload": [], "encode+submit": [], "await map+read": [], "outputs": [],
           "await resolved promise": [], "run_sync resolved promise": [],
           "replayJs sync part": [], "JS: write..submit": []}
    acc["JS: write..submit"] = (await js.roundtripJsSync(_loaded[name][4], n)).to_py()
    r_steps, r_outs, r_total = _loaded[name][5]
    try:
        from pyodide.ffi import run_sync
        run_sync(js.Promise.resolve(0))
    except Exception:
        run_sync = None
    for _ in range(n):
        t0 = _now()
        hosts = [(buf, read_input(x, i, info.dtype))
                 for i, (x, buf, info) in enumerate(zip(inputs, gpu.inputs, meta.inputs))]
        t1 = _now()
        for buf, t in hosts:
            upload(dev, buf, storage.to_storage(t.memoryview(), t.dtype))
        t2 = _now()
        offsets = dev.submit(gpu.recording, gpu.outputs, gpu.staging)
        submitted = _now()
        raw = await dev.read_outputs(gpu.staging, offsets, gpu.outputs)
        t3 = _now()
        outs = []
        for info, data in zip(meta.outputs, raw):
            dtype = dtypes.BY_NAME[info.dtype]
            data = storage.from_storage(data[:prod(info.shape) * storage.dtype(dtype).itemsize], dtype)
            outs.append(output(data, info.shape, dtype, False))
        t4 = _now()
        await js.Promise.resolve(0)
        t5 = _now()
        if run_sync is not None:
            run_sync(js.Promise.resolve(0))
            acc["run_sync resolved promise"].append(_now() - t5)
        t6 = _now()
        p = js.replayJs(dev.device, r_steps, r_outs, gpu.staging.handle, r_total)
        acc["replayJs sync part"].append(_now() - t6)
        await p
        acc["validate"].append(t1 - t0); acc["upload"].append(t2 - t1)
        acc["encode+submit"].append(submitted - t2); acc["await map+read"].append(t3 - submitted)
        acc["outputs"].append(t4 - t3); acc["await resolved promise"].append(t5 - t4)
    return acc


def close(name):
    _loaded.pop(name)[0].close()
'''


def _log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def stats(ms: list[float]) -> dict:
    s = sorted(ms)
    q = statistics.quantiles(s, n=10, method="inclusive") if len(s) > 1 else s * 9
    return {"median_us": statistics.median(s) * 1e3, "p10_us": q[0] * 1e3, "p90_us": q[-1] * 1e3,
            "mean_us": statistics.fmean(s) * 1e3, "n": len(s)}


def measure(session, name: str, n: int, block: int, warmup: int) -> dict:
    info = session.run_python(f"await rt_load({name!r})")
    for fn in ("time_py", "time_js", "time_replay"):
        session.run_python(f"await {fn}({name!r}, {warmup})")
    samples = {"py": [], "js": [], "replay": []}
    # Interleaved blocks: drift on this shared machine hits both paths alike.
    for _ in range(max(1, n // block)):
        samples["py"] += session.run_python(f"await time_py({name!r}, {block})")
        samples["js"] += session.run_python(f"await time_js({name!r}, {block})")
        samples["replay"] += session.run_python(f"await time_replay({name!r}, {block})")
    calls = session.run_python(f"await count_calls({name!r})")
    split = session.run_python(f"await phases({name!r}, {min(n, 100)})")
    session.run_python(f"close({name!r})")
    rec = {"fixture": name, **info, "gpu_calls": calls,
           **{k: stats(v) for k, v in samples.items()},
           "phases_us": {k: statistics.median(v) * 1e3 if v else float("nan")
                         for k, v in split.items()}}
    rec["ratio"] = rec["py"]["median_us"] / rec["js"]["median_us"]
    rec["ratio_replay"] = rec["replay"]["median_us"] / rec["js"]["median_us"]
    return rec


def run(fixtures, n=200, block=20, warmup=20, isolate=True) -> dict:
    from pte_webgpu.chromium.dist import ensure_dist
    from pte_webgpu.chromium.server import StaticServer
    from pte_webgpu.chromium.session import BrowserSession

    dist = ensure_dist(REPO, log=_log)
    mounts = {"/": REPO / "web", "/pyodide/": dist, "/bench/": HERE,
              "/fixtures/": REPO / "tests" / "fixtures"}
    with StaticServer(mounts) as server, \
            BrowserSession(server.url, harness="bench.html", timeout_ms=600_000,
                           isolated=isolate) as session:
        session.page.add_script_tag(path=str(HERE / "roundtrip.js"))
        session.run_python(_PAGE)
        env = session.page.evaluate(
            "() => ({ua: navigator.userAgent, clockStepMs: window.clockStepMs(), "
            "isolated: self.crossOriginIsolated})")
        records = []
        for name in fixtures:
            t0 = time.perf_counter()
            records.append(measure(session, name, n, block, warmup))
            _log(f"  {name}: {time.perf_counter() - t0:.1f} s")
        errors = [m for m in session.console_messages if m.type == "error"] + session.page_errors
        for e in errors[:10]:
            _log(f"  page: {e}")
    return {"env": env, "records": records}


def markdown(result: dict) -> str:
    env, recs = result["env"], result["records"]
    chrome = next((p for p in env["ua"].split() if p.startswith(("Chrome/", "HeadlessChrome/"))), "?")
    lines = [f"{recs[0]['adapter'] if recs else '?'}; {chrome}; performance.now step "
             f"{env['clockStepMs'] * 1e3:.0f} µs (crossOriginIsolated={env['isolated']}). "
             "µs per round trip, median (p10-p90):", "",
             "| fixture | ops (dispatches) | in bytes | Python execute | plain JS | Python / JS "
             "| py + JS replay | replay / JS | WebGPU calls py / js |",
             "|---|---|---|---|---|---|---|---|---|"]
    fmt = lambda s: f"{s['median_us']:.0f} ({s['p10_us']:.0f}-{s['p90_us']:.0f})"  # noqa: E731
    for r in recs:
        ok = "" if all(r["same_bytes"]) else " (outputs differ!)"
        lines.append(f"| {r['fixture']}{ok} | {', '.join(r['kernels'])} ({r['dispatches']}) | "
                     f"{r['input_bytes']} | {fmt(r['py'])} | {fmt(r['js'])} | "
                     f"**{r['ratio']:.2f}x** | {fmt(r['replay'])} | {r['ratio_replay']:.2f}x | "
                     f"{r['gpu_calls']['py']} / {r['gpu_calls']['js']} |")
    lines += ["", "One Python execute by phase, µs (median):", "",
              "| fixture | " + " | ".join(recs[0]["phases_us"]) + " |",
              "|---|" + "---|" * len(recs[0]["phases_us"])] if recs else []
    for r in recs:
        lines.append(f"| {r['fixture']} | " +
                     " | ".join(f"{v:.0f}" for v in r["phases_us"].values()) + " |")
    met = [r["ratio"] <= TARGET for r in recs]
    lines += ["", f"Target Python / JS <= {TARGET}x: " +
              ("met for all" if all(met) else
               "not met for " + ", ".join(r["fixture"] for r, m in zip(recs, met) if not m))]
    return "\n".join(lines)


def main(fixtures=None, n=200, output=None, markdown_path=None, isolate=True) -> int:
    result = run(fixtures or DEFAULT_FIXTURES, n, isolate=isolate)
    text = markdown(result)
    print(text)
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(json.dumps(result, indent=1) + "\n")
        _log(f"wrote {output}")
    if markdown_path:
        Path(markdown_path).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--fixtures", help="comma-separated names under tests/fixtures "
                   f"(default: {','.join(DEFAULT_FIXTURES)})")
    p.add_argument("-n", type=int, default=200, help="round trips per path (default 200)")
    p.add_argument("--output", metavar="FILE.json")
    p.add_argument("--markdown", metavar="FILE.md")
    p.add_argument("--no-isolate", action="store_true", help="serve without COOP/COEP "
                   "(performance.now then steps by 100 µs)")
    a = p.parse_args()
    sys.exit(main(a.fixtures.split(",") if a.fixtures else None, a.n, a.output, a.markdown,
                  not a.no_isolate))
