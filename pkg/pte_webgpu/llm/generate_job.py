"""One "generate text with this model" job, the same in the page and natively.

``pte-webgpu generate`` sends the files to wherever the GPU is (Pyodide in Chromium, or
CPython with wgpu) and calls ``generate_job`` there; text pieces go to ``on_piece`` as they
are decoded (awaited when it returns an awaitable: the page's callback into the host), and
the result is JSON-able: the ids, the text and the timings.
"""

from __future__ import annotations

import time

from ..runtime import Runtime
from .generate import LanguageModel


async def generate_job(pte: bytes, tokenizer_json: str, data_files=(), *, prompt: str,
                       chat: bool = False, system: str | None = None, max_new_tokens: int = 128,
                       temperature: float = 0.0, top_k: int | None = None,
                       top_p: float | None = None, seed: int | None = None, stop=(),
                       backend: str = "auto", runtime: Runtime | None = None,
                       on_piece=None) -> dict:
    rt = runtime or await Runtime.create(backend)
    try:
        started = time.perf_counter()
        model = await LanguageModel.load(rt, pte, tokenizer_json, data_files)
        load_s = time.perf_counter() - started
        try:
            messages = None
            if chat:
                messages = ([{"role": "system", "content": system}] if system else []) + \
                    [{"role": "user", "content": prompt}]
            async for piece in model.generate(None if chat else prompt, messages=messages,
                                              max_new_tokens=max_new_tokens,
                                              temperature=temperature, top_k=top_k,
                                              top_p=top_p, seed=seed, stop=stop):
                if on_piece is not None:
                    done = on_piece(piece)
                    if hasattr(done, "__await__"):  # the page binding returns a Promise
                        await done
            gen = model.last
            return {
                "prompt_ids": gen.prompt_ids,
                "ids": gen.ids,
                "text": gen.text,
                "stopped": gen.stopped,
                "picked_on": gen.picked_on,
                "load_s": load_s,
                "prefill_ms": gen.prefill_ms,
                "prefill_calls": gen.prefill_calls,
                "decode_tok_s": gen.decode_tok_s,
                "decode_steps": gen.decode_steps,
                "backend": rt.adapter.backend,
                "adapter": rt.adapter.summary(),
                "notes": model.method.notes,
            }
        finally:
            model.close()
    finally:
        if runtime is None:
            rt.close()
