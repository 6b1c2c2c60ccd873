"""The chat page's Python side (web/chat.js calls these in Pyodide).

The page downloads the model bytes (with progress, through the Cache API) and hands them
here; the conversation lives here, re-rendered through the chat template each turn, so
the KV cache prefix of the earlier turns is reused (generate.py) and only the new turn is
fed. Each text piece goes to the page's callback as it is decoded.
"""

from __future__ import annotations

import time

from ..errors import PteError
from ..runtime import Runtime
from .generate import LanguageModel

_runtime: Runtime | None = None
_model: LanguageModel | None = None
_messages: list[dict] = []
_stop_asked = False  # stop(): the answer being streamed ends after its current token


async def load(pte, tokenizer_json: str) -> dict:
    """Load the model (bytes-like ``pte``, or a JS Uint8Array) and its tokenizer; replaces
    any loaded one. A model that cannot load here (e.g. a tensor beyond the adapter's
    buffer limits, checked before any upload) gives ``{"error": message}`` for the page
    to show, not a traceback."""
    global _runtime, _model
    unload()
    if hasattr(pte, "to_bytes"):  # a JS Uint8Array: its one copy in the wasm heap; the
        from ..gpu.wasm_heap import wasm_heap  # weights then go to the GPU from views of it

        pte = wasm_heap().to_python(pte)
    try:
        if _runtime is None:
            _runtime = await Runtime.create("browser")
        started = time.perf_counter()
        _model = await LanguageModel.load(_runtime, pte, tokenizer_json)
    except PteError as e:
        return {"error": f"{type(e).__name__}: {e}",
                "adapter": _runtime.adapter.summary() if _runtime else ""}
    return {"load_s": time.perf_counter() - started, "adapter": _runtime.adapter.summary(),
            "context": _model.max_context_len}


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


def stop() -> None:
    """End the answer being streamed after its current token (the page's Stop button). What
    was said stays in the conversation, and its tokens in the KV cache for the next turn."""
    global _stop_asked
    _stop_asked = True


async def send(text: str, on_piece, max_new_tokens: int = 256, temperature: float = 0.0) -> dict:
    """Add the user's message, stream the answer to ``on_piece(piece, tokens_so_far)``."""
    global _stop_asked
    if _model is None:
        raise PteError("no model is loaded")
    _messages.append({"role": "user", "content": text})
    _stop_asked = False
    pieces = []
    try:
        async for piece in _model.generate(messages=list(_messages),
                                           max_new_tokens=max_new_tokens,
                                           temperature=temperature,
                                           should_stop=lambda: _stop_asked):
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
