"""``pte-webgpu generate MODEL.pte --prompt TEXT``: stream a language model's answer.

The text goes to stdout as it is decoded. With ``--json`` stdout carries only one final JSON
line (prompt_ids, ids, text, load_s, prefill_ms, decode_tok_s, backend, adapter) and the
streamed text goes to stderr. The browser backend runs the model inside the page (Pyodide
in headless Chromium); each piece comes back to the terminal through a page binding.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import PteError

TOKENIZER_SUFFIX = ".tokenizer.json"


def add_parser(sub) -> None:
    p = sub.add_parser("generate", help="generate text with a language model (.pte + tokenizer)")
    p.add_argument("file", metavar="MODEL.pte")
    p.add_argument("--prompt", required=True, help="the prompt (the user message with --chat)")
    p.add_argument("--chat", action="store_true", help="wrap the prompt in the chat template")
    p.add_argument("--system", help="with --chat: a system message (else the template's default)")
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--temperature", type=float, default=0.0, help="0: greedy (default)")
    p.add_argument("--top-k", type=int)
    p.add_argument("--top-p", type=float)
    p.add_argument("--seed", type=int)
    p.add_argument("--stop", action="append", default=[], metavar="TEXT",
                   help="stop before this text (repeatable)")
    p.add_argument("--tokenizer", metavar="T.json",
                   help=f"default: MODEL{TOKENIZER_SUFFIX} beside the model")
    p.add_argument("--data", action="append", default=[], metavar="F.ptd")
    p.add_argument("--backend", choices=("browser", "native"), default="browser")
    p.add_argument("--json", action="store_true", help="print one JSON line at the end")
    p.set_defaults(func=cmd_generate)


def tokenizer_path(model: str, given: str | None) -> Path:
    if given:
        return Path(given)
    path = Path(model)
    stem = path.name[:-4] if path.name.endswith(".pte") else path.name
    beside = path.with_name(stem + TOKENIZER_SUFFIX)
    if not beside.is_file():
        # a variant (NAME-fp16.pte, NAME.fp16.pte) shares the tokenizer of NAME
        found = sorted(p for p in path.parent.glob("*" + TOKENIZER_SUFFIX)
                       if stem.startswith(p.name[:-len(TOKENIZER_SUFFIX)]))
        if found:
            return found[-1]
        raise PteError(f"no tokenizer beside {model} (looked for {beside.name}); "
                       "pass --tokenizer")
    return beside


def _check_file(path) -> Path:
    path = Path(path)
    if not path.is_file():
        raise PteError(f"cannot read {path}: no such file")
    return path


def _options(args) -> dict:
    if args.max_new_tokens < 0:
        raise PteError(f"--max-new-tokens must be >= 0 (got {args.max_new_tokens})")
    return dict(prompt=args.prompt, chat=args.chat, system=args.system,
                max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                top_k=args.top_k, top_p=args.top_p, seed=args.seed, stop=args.stop)


def cmd_generate(args) -> int:
    model = _check_file(args.file)
    tok = _check_file(tokenizer_path(args.file, args.tokenizer))
    data = [_check_file(p) for p in args.data]
    stream = sys.stderr if args.json else sys.stdout

    def on_piece(text: str) -> None:
        stream.write(text)
        stream.flush()

    options = _options(args)
    if args.backend == "native":
        result = _native(model, tok, data, options, on_piece)
    else:
        result = run_in_browser(model, tok, data, options, on_piece)
    stream.write("\n")
    stream.flush()
    if args.json:
        print(json.dumps(result), flush=True)
    return 0


def _native(model: Path, tok: Path, data: list, options: dict, on_piece) -> dict:
    from ..llm.generate_job import generate_job
    from .run_job import run_coroutine

    return run_coroutine(generate_job(
        model.read_bytes(), tok.read_text(encoding="utf-8"),
        [(p.name, p.read_bytes()) for p in data], backend="native", on_piece=on_piece,
        **options))


def run_in_browser(model: Path, tok: Path, data: list, options: dict, on_piece) -> dict:
    """Run ``generate_job`` in Pyodide in headless Chromium; pieces come back through the
    page binding ``pteGeneratePiece``."""
    from ..chromium import paths
    from ..chromium.dist import ensure_dist, version
    from ..chromium.remote import page_result, quiet
    from ..chromium.server import StaticServer
    from ..chromium.session import BrowserSession

    dist = ensure_dist(log=quiet)
    dist_url = f"/pyodide-{version(dist)[:16]}/"
    with StaticServer({"/": paths.web_root()}) as server:
        server.mount(dist_url, dist, immutable=True)
        # each file served from its own folder, only it (no copies: the model is large)
        urls = []
        for i, path in enumerate([model, tok, *data]):
            real = path.resolve()
            urls.append(server.mount(f"/job{i}/", real.parent, {real.name}) + real.name)
        code = _PAGE_CODE.format(model=urls[0], tokenizer=urls[1], data=urls[2:],
                                 names=[p.name for p in data], options=json.dumps(options))
        with BrowserSession(server.url, index_url=dist_url) as session:
            session.page.expose_function("pteGeneratePiece", on_piece)
            return page_result(session, code)


# The job's PteError comes back as {"error": {type, message}}: the host raises the same
# class with the same text as the native backend.
_PAGE_CODE = """
import json as _json
import js as _js
from pyodide.http import pyfetch as _pyfetch
from pte_webgpu.errors import PteError as _PteError
from pte_webgpu.llm.generate_job import generate_job as _generate_job

async def _get(url):
    return await (await _pyfetch(url)).bytes()

try:
    _data = [(name, await _get(url)) for name, url in zip({names!r}, {data!r})]
    _result = await _generate_job(
        await _get({model!r}), (await _get({tokenizer!r})).decode(), _data,
        backend="browser", on_piece=_js.pteGeneratePiece, **_json.loads({options!r}))
except _PteError as _e:
    _result = {{"error": {{"type": type(_e).__name__, "message": str(_e)}}}}
_result
"""
