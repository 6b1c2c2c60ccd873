"""Prefill and decode speed of a language model at given context lengths (``pte-webgpu bench
--llm``), the same job in the page (Pyodide) and natively.

For each context c, with N decode steps and a KV cache of L rows (the program's
max_context_len): one execute of ``prefill = min(c, L - N)`` prompt tokens (timed: prefill
tok/s = prefill / time), then N single-token executes at positions prefill .. prefill + N - 1,
each feeding the previous step's greedy token, as ``LanguageModel`` decodes: the argmax on
the GPU (4 bytes read back) and up to ``readout.in_flight()`` later steps submitted before
this one's token is read, fed on the GPU (``readout.LastArgmax``); a step's time is the gap
between two tokens read.
So a context up to L - N is exact; at c = L the prefill is L - N tokens and the last step
sees L - 1 cached tokens (the records say so: ``tokens`` and ``positions``). Before
timing, a short prefill and a decode step build the pipelines (``WARMUP_TOKENS``), then
chained decode steps run for ``ramp_ms`` (``RAMP_MS``) to bring the GPU's clocks up;
each prefill length is run once untimed first unless ``warmup=False`` (the first execute
of a new length also traces its host steps). The ORT Web / transformers.js
(bench/llm_web.js) and torch sides warm up the same way.
"""

from __future__ import annotations

import statistics
import time

from ..errors import InputError, UnsupportedError
from ..model.tensor import Tensor
from ..runtime import Runtime
from .chained_steps import ChainedSteps, int64_tensor
from .generate import LanguageModel, forward_shape
from .step_cost import step_cost

# the first warm-up prefill: more rows than a matrix-vector linear takes (8), so that the
# prefill kernels are built before timing, as the decode ones are by its decode step
WARMUP_TOKENS = 16
# chained decode steps for this long before timing: a GPU left idle while the program loaded
# runs its first steps at a fraction of its clock (Chromium on an H100: 5.1 ms a decode step
# at the first context, 2.9 ms at the third; docs/performance.md); the peers' pages repeat
# their warm-up as long
RAMP_MS = 1000


def prompt_ids(n: int, vocab: int = 49152) -> list[int]:
    """Deterministic prompt ids (the ORT / transformers.js / torch sides use the same)."""
    return [(7 * i + 3) % min(1000, vocab - 1) + 1 for i in range(n)]


def plan(contexts, steps: int, max_context_len: int, prefill_chunk: int) -> list[dict]:
    """Per context: the prefill length and the decode positions (see the module text)."""
    if steps < 1:
        raise InputError(f"decode steps must be >= 1 (got {steps})")
    if prefill_chunk < 2:
        raise InputError("the program takes one token per execute (static shapes): "
                         "prefill cannot be measured as one execute")
    out = []
    for c in contexts:
        if not 1 <= c <= max_context_len:
            raise InputError(f"context {c} is outside 1..{max_context_len} (the program's "
                             "KV cache length)")
        n = min(c, max_context_len - steps, prefill_chunk)
        if n < 1:
            raise InputError(f"{steps} decode steps do not fit a KV cache of {max_context_len}")
        out.append({"context": c, "prefill": n, "steps": steps})
    return out


def host_plan(pte: bytes, data_files, contexts, steps: int) -> list[dict]:
    """``plan`` from the program file on the host (no GPU): bad contexts fail before a
    browser or device starts."""
    from ..formats import open_program

    file = open_program(pte, data_files)
    if "forward" not in [p.name for p in file.plans]:
        raise UnsupportedError("the program has no forward method: not a language model")
    shape = forward_shape(file)
    return plan(contexts, steps, shape["max_context_len"], shape["prefill_chunk"])


def _ids(values) -> Tensor:
    return int64_tensor(values, (1, len(values)))


def _pos(p: int) -> Tensor:
    return int64_tensor([p], (1,))


async def llm_bench_job(pte: bytes, data_files=(), *, contexts, steps: int = 8,
                        warmup: bool = True, profile: bool = False, backend: str = "auto",
                        ramp_ms: float = RAMP_MS,
                        runtime: Runtime | None = None, progress=None) -> dict:
    """Records {phase, context, tokens | positions, ms, tok_s, ...} (decode records also
    ``greedy``: the prefill's token and each step's, to compare impls by); with
    ``profile`` one more decode step per context with per-op GPU times, and each prefill
    record's ``cost``; each decode record's ``cost``: where a step's time goes
    (llm/step_cost.py)."""
    say = progress or (lambda text: None)
    rt = runtime or await Runtime.create(backend)
    try:
        started = time.perf_counter()
        model = await LanguageModel.load(rt, pte, None, data_files)
        load_s = time.perf_counter() - started
        method = model.method
        try:
            todo = plan(contexts, steps, model.max_context_len, model.prefill_chunk)
            say(f"loaded in {load_s:.1f} s; warming up")
            n = min(WARMUP_TOKENS, todo[0]["prefill"])
            first = await method.execute([_ids(prompt_ids(n, model.vocab_size)), _pos(0)],
                                         argmax=True)
            await method.execute([_ids(first), _pos(n)], argmax=True)
            await _ramp(method, first, n + 1, model.max_context_len, ramp_ms)
            records, profiles = [], {}
            timestamps = "timestamp-query" in rt.adapter.features
            for p in todo:
                n, c = p["prefill"], p["context"]
                prompt = _ids(prompt_ids(n, model.vocab_size))
                if warmup:
                    say(f"context {c}: untimed prefill of {n} tokens")
                    await method.execute([prompt, _pos(0)], argmax=True)
                say(f"context {c}: prefill of {n} tokens")
                method.reset()
                t0 = time.perf_counter()
                token = await method.execute([prompt, _pos(0)], argmax=True)
                ms = (time.perf_counter() - t0) * 1e3
                records.append({"phase": "prefill", "context": c, "tokens": n, "ms": [ms]})
                if profile:  # the prefill's dispatches timed again (its cache rows rewritten)
                    records[-1]["cost"] = await step_cost(method, timestamps)
                say(f"context {c}: {n / ms * 1e3:.2f} tok/s prefill; {steps} decode steps")
                # chained as LanguageModel decodes (llm/chained_steps.py)
                chain = ChainedSteps(method, token[0], range(n, n + steps))
                times, greedy = [], []
                t0 = None
                async for picked in chain:
                    t1 = time.perf_counter()
                    if t0 is not None:
                        times.append((t1 - t0) * 1e3)
                    t0 = t1
                    greedy.append(picked)
                # the host's whole work for a step while chained (inputs, host steps,
                # encode, submit): the step's floor when the host is the bottleneck
                cost = dict(await step_cost(method, timestamps),
                            host_us=statistics.median(chain.host_us))
                records.append({"phase": "decode", "context": c, "greedy": greedy,
                                "positions": [n, n + steps - 1], "ms": times, "cost": cost})
                if profile:  # the last position again (its cache row is rewritten)
                    await method.execute([_ids(greedy[-1:]), _pos(n + steps - 1)], argmax=True,
                                         profile=True)
                    profiles[str(c)] = method.last_profile
            return {"records": [summarize(r) for r in records], "load_s": load_s,
                    "profiles": profiles, "backend": rt.adapter.backend,
                    "timestamps": timestamps,
                    "adapter": rt.adapter.summary(),
                    "max_context_len": model.max_context_len,
                    "prefill_chunk": model.prefill_chunk}
        finally:
            model.close()
    finally:
        if runtime is None:
            rt.close()


async def _ramp(method, token: list, start: int, max_len: int, ms: float) -> None:
    """Decode steps chained as the timed ones (positions ``start`` .. ``max_len`` - 1, then
    again) for ``ms``: a busy GPU, so that its clocks are up before the first context; a
    warm-up with the host waiting between steps left an H100's first context at half speed
    in Chromium."""
    end = time.perf_counter() + ms / 1e3
    span = max(1, max_len - start)

    def positions():
        k = 0
        while time.perf_counter() < end:
            yield start + k % span
            k += 1

    async for _ in ChainedSteps(method, token[0], positions()):
        pass


def summarize(rec: dict) -> dict:
    """Add tok_s and ms_per_token to a record with its ``ms`` list (prefill: one execute
    of ``tokens``; decode: one token per entry)."""
    ms = rec["ms"]
    if rec["phase"] == "prefill":
        total = statistics.median(ms)
        rec.update(tok_s=rec["tokens"] / total * 1e3, ms_per_token=total / rec["tokens"])
    else:
        rec.update(tok_s=len(ms) / sum(ms) * 1e3, ms_per_token=statistics.median(ms),
                   steps=len(ms))
    return rec
