"""The chat page's Python side (web/chat.js calls these in Pyodide).

The page downloads the model bytes (with progress, through the Cache API) and hands them
here; the conversation lives here, re-rendered through the chat template each turn, so
the KV cache prefix of the earlier turns is reused (generate.py) and only the new turn is
fed. Each text piece goes to the page's callback as it is decoded.
"""

from __future__ import annotations

import time

from ..errors import GpuLimitError, PteError
from ..formats import open_program
from ..runtime import Runtime
from .generate import LanguageModel

_runtime: Runtime | None = None
_model: LanguageModel | None = None
_messages: list[dict] = []


def check_limits(pte, limits: dict) -> dict:
    """The largest constant tensor against the adapter's buffer limits, before anything is
    uploaded: a clear message instead of a failure halfway through the weights."""
    file = open_program(pte)
    largest = 0
    for plan in file.plans:
        for d in plan.delegates:
            if d.graph:
                for v in d.graph.graph.values:
                    nbytes = getattr(v, "nbytes", None)
                    if isinstance(nbytes, int):
                        largest = max(largest, nbytes)
    for name in ("maxBufferSize", "maxStorageBufferBindingSize"):
        limit = limits.get(name)
        if limit and largest > limit:
            raise GpuLimitError(f"the model's largest tensor is {largest / 2**20:.1f} MiB; this "
                                f"adapter's {name} is {limit / 2**20:.1f} MiB: it cannot run "
                                "here (try the fp16 variant or another browser/GPU)")
    return {"largest_tensor_bytes": largest}


async def load(pte, tokenizer_json: str) -> dict:
    """Load the model (bytes-like ``pte``) and its tokenizer; replaces any loaded one."""
    global _runtime, _model
    if _runtime is None:
        _runtime = await Runtime.create("browser")
    unload()
    if hasattr(pte, "to_bytes"):  # a JS Uint8Array from the page
        pte = pte.to_bytes()
    checked = check_limits(pte, _runtime.adapter.limits)
    started = time.perf_counter()
    _model = await LanguageModel.load(_runtime, pte, tokenizer_json)
    return {"load_s": time.perf_counter() - started, "adapter": _runtime.adapter.summary(),
            "context": _model.max_context_len, **checked}


def unload() -> None:
    global _model
    if _model is not None:
        _model.close()
        _model = None
    _messages.clear()


def new_chat() -> None:
    _messages.clear()
    if _model is not None:
        _model.reset()


async def send(text: str, on_piece, max_new_tokens: int = 256, temperature: float = 0.0) -> dict:
    """Add the user's message, stream the answer to ``on_piece(piece, tokens_so_far)``."""
    if _model is None:
        raise PteError("no model is loaded")
    _messages.append({"role": "user", "content": text})
    pieces = []
    try:
        async for piece in _model.generate(messages=list(_messages),
                                           max_new_tokens=max_new_tokens,
                                           temperature=temperature):
            pieces.append(piece)
            on_piece(piece, len(_model.last.ids))
    except BaseException:
        _messages.pop()
        raise
    gen = _model.last
    _messages.append({"role": "assistant", "content": gen.text})
    return {"text": gen.text, "tokens": len(gen.ids), "reused": gen.reused,
            "prompt_tokens": len(gen.prompt_ids), "prefill_ms": gen.prefill_ms,
            "decode_tok_s": gen.decode_tok_s, "stopped": gen.stopped}
