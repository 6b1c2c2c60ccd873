"""web/chat.html answering a question on the lent GPU, screenshotted, where Playwright is not
(tools/screenshot_chat.py's job over Chromium's DevTools pipe, with tools/h200_browser_fixtures.py's
Chrome and static server), then the limit check of tests/browser/test_llm_chat_page.py in the
same page: a small program loaded with maxStorageBufferBindingSize lowered to 1024 bytes must
give the page a typed ``GpuLimitError: ...``, as on SwiftShader.

Two steps, because one device call carries at most 64 MiB (working tree + carried paths):

  split (here): python3 tools/h200_chat_screenshot.py split
      --model build/llm/smollm2-135m-instruct-q4.pte --out build/gpuchat --part-mb 28
    writes the model gzipped and cut into OUT/pNN/part (each <= --part-mb MB of 10^6 bytes;
    OUT/p00/model.json names the model, its size, sha256 and the part count) and copies the
    tokenizer (default: MODEL's NAME.tokenizer.json, else the one without -q4/-fp16) into
    OUT/tok/. Earlier pNN/ and tok/ folders in OUT are removed first.
  run (there, after the .gl loaders and `source tools/h200_chromium_env.sh`: CHROME,
      CHROME_LD, FLAGS): python3 tools/h200_chat_screenshot.py --chrome $CHROME
      --dist build/web/pyodide --parts /tmp/gpuchat --question "What is the capital of France?"
      --out $OUT/chat.png --report $OUT/chat.json -- $FLAGS
    --parts DIR: DIR's pNN/part concatenated in order and gunzipped (checked against
    model.json); or --model PATH (a .pte, or a .pte.gz gunzipped to a temp folder).
    --tokenizer defaults to the one file in DIR/tok/. Serves web/ at /, the dist at /pyodide/,
    the model's folder at /llm/, the tokenizer's at /tok/, --limit-program's folder (default:
    tests/fixtures/decoders/llama_dynamic_hfrope.pte) at /fixtures/limit/. Writes the PNG of
    #chat (a 900x700 viewport) and a JSON report: answer, speed, load_wall_s, answer_wall_s,
    model_bytes, heap (window.heapStats), adapter (the page's line and navigator.gpu's info),
    limit_error, error. Exit status 0 only when the chat answered and limit_error starts with
    "GpuLimitError: ".

On the lent GPU (device `run` calls on one held machine, one after the other; carried paths
are copied to /tmp at once, so the last call finds them all). Here first: `make dist` (a
current build/web/pyodide) and the split above. Then:

  calls 1-3, carry [".chromium-parts/pNN"] for NN = 00, 01, 02:
      mkdir -p /tmp/chromium-parts && cp -r .chromium-parts/pNN /tmp/chromium-parts/
  calls 4-6, carry ["build/gpuchat/pNN"] for NN = 00, 01, 02:
      mkdir -p /tmp/gpuchat && cp -r build/gpuchat/pNN /tmp/gpuchat/
  call 7, carry [".chromium-parts/p03", "build/gpuchat/p03", "build/gpuchat/tok",
      "build/web/pyodide", ".gl", ".fonts"] (~56 MB with the tree; .fonts from
      tools/gpu_lane_wheels.sh: without a font the headless shell aborts drawing text):
      for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig;
      mkdir -p /tmp/chromium-parts /tmp/gpuchat && cp -r .chromium-parts/p03 /tmp/chromium-parts/
      && cp -r build/gpuchat/p03 build/gpuchat/tok /tmp/gpuchat/
      && export CHROMIUM_PARTS=/tmp/chromium-parts && source tools/h200_chromium_env.sh
      && python3 tools/h200_chat_screenshot.py --chrome $CHROME --dist build/web/pyodide
         --parts /tmp/gpuchat --out $OUT/chat.png --report $OUT/chat.json -- $FLAGS

Checked here on SwiftShader: tests/browser/test_gpu_chat_screenshot.py (the tiny decoder);
the q4 SmolLM2 from its four parts answered "The capital of France is Paris." (2.4 tok/s).
On an H100 (2026-12-06): the same answer at 143 tok/s, docs/images/chat-smollm2-q4-h100.png.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import hashlib
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tools")]

import h200_browser_fixtures as fx  # noqa: E402

LIMIT_PROGRAM = ROOT / "tests" / "fixtures" / "decoders" / "llama_dynamic_hfrope.pte"
MANIFEST = "model.json"

# tests/browser/test_llm_chat_page.py's test_page_chat_load_returns_a_limit_error_for_the_page,
# its result as JSON
LIMIT_CODE = """
import dataclasses, json
from pyodide.http import pyfetch
from pte_webgpu import Runtime
from pte_webgpu.llm import page_chat
if page_chat._runtime is None:
    page_chat._runtime = await Runtime.create("browser")
_dev = page_chat._runtime.device
_info = _dev.info
_dev.info = dataclasses.replace(_info, limits={**_info.limits,
                                               "maxStorageBufferBindingSize": 1024})
try:
    _pte = await (await pyfetch(%(url)r)).bytes()
    _r = await page_chat.load(_pte, "{}")
finally:
    _dev.info = _info
json.dumps(_r, default=repr)
"""


# ---------------------------------------------------------------- split (here)
def default_tokenizer(model: Path) -> Path:
    name = model.name.removesuffix(".gz").removesuffix(".pte")
    own = model.with_name(name + ".tokenizer.json")
    if own.is_file():
        return own
    return model.with_name(name.removesuffix("-q4").removesuffix("-fp16") + ".tokenizer.json")


def split(args) -> int:
    model, out = Path(args.model), Path(args.out)
    tok = Path(args.tokenizer) if args.tokenizer else default_tokenizer(model)
    if not tok.is_file():
        print(f"no tokenizer at {tok} (pass --tokenizer)")
        return 2
    data = model.read_bytes()
    if model.name.endswith(".gz"):
        data = gzip.decompress(data)
    name = model.name.removesuffix(".gz")
    packed = gzip.compress(data, compresslevel=9, mtime=0)
    size = int(args.part_mb * 1_000_000)
    if size <= 0:
        print("--part-mb must be positive")
        return 2
    for old in [*out.glob("p[0-9][0-9]"), out / "tok"]:
        if old.is_dir():
            shutil.rmtree(old)
    chunks = [packed[i:i + size] for i in range(0, len(packed), size)]
    if len(chunks) > 100:
        print(f"{len(chunks)} parts: more than pNN can name; raise --part-mb")
        return 2
    for i, chunk in enumerate(chunks):
        (out / f"p{i:02d}").mkdir(parents=True)
        (out / f"p{i:02d}" / "part").write_bytes(chunk)
    (out / "p00" / MANIFEST).write_text(json.dumps(
        {"name": name, "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
         "gz_bytes": len(packed), "parts": len(chunks)}, indent=1))
    (out / "tok").mkdir(parents=True)
    shutil.copy(tok, out / "tok" / tok.name)
    print(f"{name}: {len(data)} bytes, gzipped {len(packed)}, {len(chunks)} part(s) of <= "
          f"{size} bytes in {out}/pNN/part; tokenizer {out}/tok/{tok.name}")
    return 0


# ---------------------------------------------------------------- the model, there
def join_parts(parts: Path, dest: Path) -> Path:
    """DIR/pNN/part concatenated in order and gunzipped into dest/NAME (model.json's name)."""
    folders = sorted(p for p in parts.glob("p[0-9][0-9]") if (p / "part").is_file())
    manifest = next((json.loads((p / MANIFEST).read_text()) for p in folders
                     if (p / MANIFEST).is_file()), None)
    if manifest is None:
        raise SystemExit(f"{parts}: no pNN/{MANIFEST} (is p00 there?); found {folders}")
    want = [f"p{i:02d}" for i in range(manifest["parts"])]
    if [p.name for p in folders] != want:
        raise SystemExit(f"{parts}: parts {[p.name for p in folders]}, want {want}")
    packed = b"".join((p / "part").read_bytes() for p in folders)
    data = gzip.decompress(packed)
    if len(data) != manifest["bytes"] or hashlib.sha256(data).hexdigest() != manifest["sha256"]:
        raise SystemExit(f"{parts}: the joined model is not {manifest['name']} "
                         f"({len(data)} bytes, want {manifest['bytes']}, or its sha256 differs)")
    target = dest / manifest["name"]
    target.write_bytes(data)
    return target


def model_file(args, temp: Path) -> Path:
    if args.parts:
        return join_parts(Path(args.parts), temp)
    model = Path(args.model)
    if model.name.endswith(".gz"):
        target = temp / model.name.removesuffix(".gz")
        with gzip.open(model) as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 24)
        return target
    return model.resolve()


def tokenizer_file(args) -> Path:
    if args.tokenizer:
        return Path(args.tokenizer).resolve()
    if args.parts:
        found = sorted((Path(args.parts) / "tok").glob("*.json"))
        if len(found) == 1:
            return found[0].resolve()
        raise SystemExit(f"{args.parts}/tok holds {[f.name for f in found]}: pass --tokenizer")
    return default_tokenizer(Path(args.model)).resolve()


# ---------------------------------------------------------------- the page
def wait_for(chrome: fx.Chrome, condition: str, timeout: float) -> bool:
    """Poll the JS ``condition`` in the page until true (True) or ``timeout`` s (False); a
    navigation that replaces the page's context under a poll is retried."""
    deadline = time.time() + timeout
    while True:
        left = deadline - time.time()
        if left <= 0:
            return False
        chunk = min(left, 30.0)
        expr = (f"new Promise(r => {{ const end = Date.now() + {chunk * 1000:.0f};"
                f" const t = () => {{ let ok = false; try {{ ok = Boolean({condition}); }}"
                " catch (e) {} if (ok) r(true); else if (Date.now() > end) r(false);"
                " else setTimeout(t, 100); }; t(); })")
        try:
            if chrome.evaluate(expr, chunk + 30):
                return True
        except RuntimeError as e:
            if "Chromium closed" in str(e):
                raise
            time.sleep(0.2)  # e.g. the execution context went with a navigation


def text_of(chrome: fx.Chrome, selector: str) -> str:
    return chrome.evaluate(f"document.querySelector({json.dumps(selector)})?.innerText ?? ''")


def screenshot(chrome: fx.Chrome, selector: str, out: Path) -> int:
    rect = chrome.evaluate(
        f"(() => {{ const r = document.querySelector({json.dumps(selector)})"
        ".getBoundingClientRect(); return {x: r.left + window.scrollX, y: r.top + window.scrollY,"
        " width: r.width, height: r.height}; })()")
    shot = chrome.call("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True, "clip": {**rect, "scale": 1}})
    data = base64.b64decode(shot["data"])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    return len(data)


def run(args) -> int:
    if bool(args.parts) == bool(args.model):
        print("pass one of --model and --parts")
        return 2
    temp = Path(tempfile.mkdtemp(prefix="h200-chat-"))
    report: dict = {"question": args.question, "flags": args.flags}
    httpd = chrome = None
    try:
        model = model_file(args, temp)
        tok = tokenizer_file(args)
        limit = Path(args.limit_program).resolve()
        report.update(model=model.name, model_bytes=model.stat().st_size, tokenizer=tok.name)
        httpd = fx.serve_mounts([("/pyodide/", Path(args.dist).resolve()),
                                 ("/llm/", model.parent), ("/tok/", tok.parent),
                                 ("/fixtures/limit/", limit.parent), ("/", ROOT / "web")])
        root = f"http://127.0.0.1:{httpd.server_address[1]}/"
        # its own profile (a later --user-data-dir wins over the driver's): an empty Cache API
        chrome = fx.Chrome(args.chrome, [*args.flags, f"--user-data-dir={temp / 'profile'}"],
                           args.log)
        chrome.open("about:blank")
        chrome.call("Emulation.setDeviceMetricsOverride",
                    {"width": 900, "height": 700, "deviceScaleFactor": 1, "mobile": False})
        t0 = time.time()
        chrome.call("Page.navigate", {"url": f"{root}chat.html?model=/llm/{model.name}"
                                      f"&tokenizer=/tok/{tok.name}"})
        ready = wait_for(chrome, "window.chatReady === true || (document.querySelector('#error')"
                         " && !document.querySelector('#error').hidden)", args.timeout)
        report["load_wall_s"] = round(time.time() - t0, 2)
        report["status"] = text_of(chrome, "#status")
        report["heap"] = chrome.evaluate("window.heapStats ?? null")
        report["adapter"] = {"page": text_of(chrome, "#adapter"),
                             "navigator_gpu": chrome.evaluate(fx.ADAPTER_JS)}
        error = text_of(chrome, "#error") if ready else f"not ready in {args.timeout:.0f} s"
        if error:
            report["error"] = error
            print(f"chat did not load: {error}")
        else:
            print(f"loaded in {report['load_wall_s']:.1f} s: {report['status']}")
            chrome.evaluate(f"""(() => {{ const input = document.querySelector('#input');
                input.value = {json.dumps(args.question)};
                input.dispatchEvent(new Event('input', {{bubbles: true}}));
                document.querySelector('#send').click(); }})()""")
            t1 = time.time()
            done = wait_for(chrome, "document.querySelector('.assistant[data-done=true]') ||"
                            " !document.querySelector('#error').hidden", args.timeout)
            report["answer_wall_s"] = round(time.time() - t1, 2)
            report["answer"] = text_of(chrome, ".assistant")
            report["speed"] = text_of(chrome, "#speed")
            error = text_of(chrome, "#error") if done else f"no answer in {args.timeout:.0f} s"
            if error:
                report["error"] = error
                print(f"chat failed: {error}")
            report["png_bytes"] = screenshot(chrome, "#chat", Path(args.out))
            report["screenshot"] = str(args.out)
            print(f"answer ({report['answer_wall_s']:.1f} s): {report['answer']!r}\n"
                  f"speed: {report['speed']}\nwrote {args.out} ({report['png_bytes']} bytes)")
        try:
            got = json.loads(chrome.python(LIMIT_CODE % {"url": f"/fixtures/limit/{limit.name}"},
                                           args.timeout))
            report["limit_error"] = got.get("error")
            report["limit_adapter"] = got.get("adapter")
        except Exception as e:  # noqa: BLE001 - recorded; the exit status says it failed
            report["limit_error"] = None
            report["limit_failure"] = f"{type(e).__name__}: {e}"[:3000]
        print(f"limit check: {report['limit_error'] or report.get('limit_failure')}")
    except SystemExit as e:
        report["error"] = str(e.code)
        print(report["error"])
    except Exception as e:  # noqa: BLE001 - written to the report
        report["error"] = f"{type(e).__name__}: {e}"[:3000]
        print(f"FATAL: {report['error']}")
    finally:
        if chrome is not None:
            report["console_tail"] = chrome.console[-100:]
            chrome.close()
        if httpd is not None:
            httpd.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
        Path(args.report).parent.mkdir(parents=True, exist_ok=True)
        Path(args.report).write_text(json.dumps(report, indent=1, default=repr))
        print(f"wrote {args.report}")
    ok = (not report.get("error") and report.get("answer") and report.get("png_bytes")
          and str(report.get("limit_error")).startswith("GpuLimitError: "))
    return 0 if ok else 1


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["split"]:
        sp = argparse.ArgumentParser(prog="h200_chat_screenshot.py split",
                                     description="gzip a model and cut it into OUT/pNN/part")
        sp.add_argument("--model", required=True)
        sp.add_argument("--out", default="build/gpuchat")
        sp.add_argument("--part-mb", type=float, default=28.0)
        sp.add_argument("--tokenizer", help="default: MODEL's NAME.tokenizer.json")
        return split(sp.parse_args(argv[1:]))
    if argv[:1] == ["run"]:
        argv = argv[1:]
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chrome", required=True)
    ap.add_argument("--dist", required=True, help="the Pyodide dist folder")
    ap.add_argument("--model", help="a .pte, or a .pte.gz")
    ap.add_argument("--parts", help="a folder of pNN/part (split's OUT)")
    ap.add_argument("--tokenizer")
    ap.add_argument("--question", default="What is the capital of France?")
    ap.add_argument("--limit-program", default=str(LIMIT_PROGRAM))
    ap.add_argument("--out", default="chat.png")
    ap.add_argument("--report", default="chat.json")
    ap.add_argument("--log", default="/tmp/h200-chat-chromium.log")
    ap.add_argument("--timeout", type=float, default=900.0,
                    help="seconds for each of: the load, the answer, the limit check")
    ap.add_argument("flags", nargs="*")
    return run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
