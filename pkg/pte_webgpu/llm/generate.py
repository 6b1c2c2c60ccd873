"""Text generation over an exported llama-style program (``pte-webgpu convert``).

The program's ``forward(tokens int64[1, n], input_pos int64[1]) -> logits [1, vocab]`` keeps
the KV cache inside it: a call writes the cache rows ``input_pos .. input_pos + n - 1`` and
attends to rows ``0 .. input_pos + n - 1`` only. So the cache can be rolled back for free by
feeding from an earlier position: ``generate`` reuses the longest prefix of the new prompt
that is already cached (a chat conversation re-rendered each turn only feeds the new turn)
and ``reset()`` forgets everything.

Prefill is ONE execute when the tokens input has a dynamic length (chunks of its bound),
else token by token. Greedy decoding picks each token on the GPU and feeds it to the next
step there (``readout.LastArgmax``): step k + 1 is submitted before step k's token is read
back, so the host's work for one step overlaps the GPU's for the other. Sampling at a
temperature alone runs the same way: the GPU draws each token (``readout.Sample``,
Gumbel-max). With top_k or top_p it reads the logits row of every step (196 KB for a
49152-word vocab, float32) and picks on the host.
"""

from __future__ import annotations

import contextlib
import random
import time
from dataclasses import dataclass, field
from functools import partial

from ..errors import InputError, UnsupportedError
from ..runtime.readout import Sample
from .chained_steps import ChainedSteps, int64_tensor
from .chat_template import ChatTemplate
from .sampling import choose
from .tokenizer import Tokenizer

try:  # numpy is optional (absent in an offline Pyodide)
    import numpy as _np
except ImportError:  # pragma: no cover - the browser path
    _np = None


def last_row(logits, vocab: int):
    """The last ``vocab`` values of an output (``[1, vocab]`` or ``[1, n, vocab]``), flat."""
    if _np is not None and isinstance(logits, _np.ndarray):
        return logits.reshape(-1)[-vocab:]
    if logits.dtype.name == "float32":
        return logits.memoryview().cast("f")[-vocab:]
    flat = logits.tolist()
    while flat and isinstance(flat[0], list):
        flat = [x for row in flat for x in row]
    return flat[-vocab:]


def _argmax(row) -> int:
    if _np is not None and isinstance(row, _np.ndarray):
        return int(_np.argmax(row))  # first index on ties, as torch
    return max(range(len(row)), key=row.__getitem__)  # also the first on ties


def pick(row, rng: random.Random, temperature: float, top_k, top_p) -> int:
    if not temperature:
        return _argmax(row)
    return choose(row, rng, temperature=temperature, top_k=top_k, top_p=top_p)


@dataclass
class Generation:
    """What the last ``generate``/``tokens`` call did (for --json and benchmarks)."""

    prompt_ids: list[int] = field(default_factory=list)
    ids: list[int] = field(default_factory=list)    # generated, including a final stop id
    text: str = ""
    reused: int = 0          # prompt tokens already in the KV cache (not fed again)
    prefill_ms: float = 0.0  # feeding the prompt up to the first token's logits
    prefill_calls: int = 0
    decode_ms: float = 0.0   # the one-token steps after the first token
    decode_steps: int = 0
    stopped: str = ""        # "eos", "stop string", "max_new_tokens" or "context"
    picked_on: str = ""      # "gpu" (greedy, or a temperature alone) or "host" (top_k/top_p)

    @property
    def decode_tok_s(self) -> float:
        return self.decode_steps / (self.decode_ms / 1e3) if self.decode_ms > 0 else 0.0


class LanguageModel:
    """A loaded program + tokenizer. ``generate`` streams text pieces; ``reset`` clears the
    cache. ``method`` is the program's ``forward``."""

    def __init__(self, method, tokenizer: Tokenizer | None, *, max_context_len: int,
                 vocab_size: int, prefill_chunk: int, stop_ids=None, program=None):
        self.method, self.tokenizer, self.program = method, tokenizer, program
        self.max_context_len = max_context_len  # KV cache rows
        self.vocab_size = vocab_size
        self.prefill_chunk = prefill_chunk      # tokens one execute takes (1: static program)
        if stop_ids is None:  # end of text, and end of a chat turn where the vocab has one
            stop_ids = [i for i in (tokenizer.eos_id, tokenizer.eot_id) if i is not None] \
                if tokenizer else []
        self.stop_ids = set(stop_ids)
        self._template = None  # compiled at the first chat: a broken one fails only chats
        self.history: list[int] = []  # the tokens whose keys/values the cache holds, in order
        self.last = Generation()

    @classmethod
    async def load(cls, runtime, pte, tokenizer=None, data_files=()) -> "LanguageModel":
        """``tokenizer``: a Tokenizer, its JSON text, or None (token ids only)."""
        program = await runtime.load_program(pte, data_files=data_files)
        try:
            return cls.from_program(program, tokenizer)
        except BaseException:
            program.close()
            raise

    @classmethod
    def from_program(cls, program, tokenizer=None) -> "LanguageModel":
        if isinstance(tokenizer, (str, bytes)):
            tokenizer = Tokenizer.from_json(tokenizer)
        method = program.load_method("forward")
        shape = forward_shape(program.file)
        vocab = shape["vocab"]
        if tokenizer is not None and tokenizer.vocab_size > vocab > 0:
            raise InputError(f"the tokenizer has {tokenizer.vocab_size} tokens, the program's "
                             f"logits only {vocab}")
        return cls(method, tokenizer, max_context_len=shape["max_context_len"], vocab_size=vocab,
                   prefill_chunk=shape["prefill_chunk"], program=program)

    def close(self) -> None:
        if self.program is not None:
            self.program.close()

    def reset(self) -> None:
        """Forget the conversation: the next prompt starts at position 0."""
        self.method.reset()
        self.history = []

    # --- prompts ---------------------------------------------------------------------
    def prompt_ids(self, prompt: str | None = None, messages=None) -> list[int]:
        """Token ids of a plain prompt or of chat messages through the chat template."""
        if (prompt is None) == (messages is None):
            raise InputError("give a prompt or chat messages (exactly one)")
        if self.tokenizer is None:
            raise InputError("this model was loaded without a tokenizer: pass ids=")
        if messages is not None:
            # the template writes BOS where the model wants it, so none is added (as
            # transformers' apply_chat_template)
            return self.tokenizer.encode(self.template.render(messages, add_generation_prompt=True))
        return self.tokenizer.encode(prompt, add_special=True)

    @property
    def template(self) -> ChatTemplate:
        """The tokenizer's chat template (ChatTemplateError when it has none)."""
        if self._template is None:
            if self.tokenizer is None:
                raise InputError("this model was loaded without a tokenizer")
            self._template = ChatTemplate.from_tokenizer(self.tokenizer)
        return self._template

    # --- the loop --------------------------------------------------------------------
    async def _forward(self, ids: list[int], greedy: bool = False, sample=None):
        """Feed ``ids`` after the cached history; the logits of the last one, or with
        ``greedy`` their argmax, found on the GPU (4 bytes read back, not the row), or a
        draw with ``sample``."""
        out = await self.method.execute(
            [int64_tensor(ids, (1, len(ids))), int64_tensor([len(self.history)], (1,))], argmax=greedy,
            sample=sample)
        self.history += ids
        return out[0] if greedy else last_row(out[0], self.vocab_size)

    async def _feed(self, ids: list[int], greedy: bool = False, sample=None):
        reuse = 0
        for a, b in zip(self.history, ids[:-1]):  # the last token is always fed: its logits
            if a != b:
                break
            reuse += 1
        if len(ids) > self.max_context_len:
            raise InputError(f"the prompt has {len(ids)} tokens; the context holds "
                             f"{self.max_context_len}")
        del self.history[reuse:]  # rows past here are overwritten before they are read
        self.last.reused = reuse
        logits = None
        for start in range(reuse, len(ids), self.prefill_chunk):
            logits = await self._forward(ids[start:start + self.prefill_chunk], greedy, sample)
            self.last.prefill_calls += 1
        return logits

    async def tokens(self, ids: list[int], *, max_new_tokens: int = 128, temperature: float = 0.0,
                     top_k: int | None = None, top_p: float | None = None,
                     seed: int | None = None):
        """Yield generated token ids after the prompt ``ids`` (a stop id is yielded, then the
        loop ends). Greedy unless ``temperature`` > 0; then drawn on the GPU unless
        ``top_k`` or ``top_p`` (< 1) asks for the host's sampler."""
        ids = [int(i) for i in ids]
        if not ids:
            raise InputError("the prompt has no tokens")
        if max_new_tokens < 0:
            raise InputError(f"max_new_tokens must be >= 0 (got {max_new_tokens})")
        bad = [i for i in ids if not 0 <= i < self.vocab_size]
        if bad:
            raise InputError(f"token id {bad[0]} is outside the vocab of {self.vocab_size}")
        rng = random.Random(seed)
        self.last = gen = Generation(prompt_ids=list(ids))
        gen.stopped = "max_new_tokens"
        t0 = time.perf_counter()
        # the GPU picks (`logits` then holds the token id): greedy, or a plain temperature
        on_gpu = not temperature or (top_k is None and top_p in (None, 1.0))
        gen.picked_on = "gpu" if on_gpu else "host"
        # draws(n): the n-th token's Sample
        draws = partial(Sample, temperature, rng.getrandbits(32)) if temperature and on_gpu \
            else None
        logits = await self._feed(ids, on_gpu, draws and draws(0))
        gen.prefill_ms = (time.perf_counter() - t0) * 1e3
        if not max_new_tokens:
            return
        steps = self._gpu_steps(logits, max_new_tokens, draws) if on_gpu else \
            self._sampled_steps(logits, max_new_tokens, rng, temperature, top_k, top_p)
        try:
            async for token in steps:
                gen.ids.append(token)
                if token in self.stop_ids:
                    gen.stopped = "eos"  # before the yield: the consumer may stop pulling
                    yield token
                    break
                yield token
        finally:
            # the cache holds the prompt and every generated token but the last (a step
            # run ahead on the GPU is forgotten: its row is overwritten before being read)
            del self.history[len(ids):]
            self.history += gen.ids[:-1]

    def _room(self, generated: int, max_new_tokens: int) -> bool:
        """Whether the token after the ``generated``-th one is wanted and fits the cache."""
        if generated >= max_new_tokens:
            return False
        if len(self.last.prompt_ids) + generated - 1 >= self.max_context_len:
            self.last.stopped = "context"
            return False
        return True

    async def _gpu_steps(self, token: int, max_new_tokens: int, draws=None):
        """Yield the first token, then one per decode step chained on the GPU (argmax, or
        ``draws(n)``'s sample for the n-th: llm/chained_steps.py)."""
        gen = self.last
        start = len(gen.prompt_ids)

        def positions():  # pulled when a step is about to be submitted
            n = 1
            while self._room(n, max_new_tokens):
                yield start + n - 1
                n += 1

        t1 = time.perf_counter()
        first = True
        async for token in ChainedSteps(self.method, token, positions(), draws):
            if not first:
                gen.decode_ms = (time.perf_counter() - t1) * 1e3
                gen.decode_steps += 1
            first = False
            yield token

    async def _sampled_steps(self, logits, max_new_tokens: int, rng, temperature, top_k,
                             top_p):
        gen = self.last
        for n in range(max_new_tokens):
            yield pick(logits, rng, temperature, top_k, top_p)
            if not self._room(n + 1, max_new_tokens):
                return
            t1 = time.perf_counter()
            logits = await self._forward([gen.ids[-1]], False)
            gen.decode_ms += (time.perf_counter() - t1) * 1e3
            gen.decode_steps += 1

    async def generate(self, prompt: str | None = None, *, messages=None, ids=None,
                       max_new_tokens: int = 128, temperature: float = 0.0,
                       top_k: int | None = None, top_p: float | None = None,
                       seed: int | None = None, stop=(), should_stop=None):
        """Yield text pieces as they are decoded (never half a UTF-8 character). Stops at an
        end-of-sequence id, at any of the ``stop`` strings (not yielded), after
        ``max_new_tokens``, or when ``should_stop()`` (asked after each token; e.g. a Stop
        button) is true. ``self.last`` then holds the ids, text and timings; the KV cache
        keeps what was fed, so the next prompt that starts alike reuses it."""
        if self.tokenizer is None:
            raise InputError("this model was loaded without a tokenizer: use tokens()")
        if ids is None:
            ids = self.prompt_ids(prompt, messages)
        elif prompt is not None or messages is not None:
            raise InputError("give a prompt, chat messages or ids (exactly one)")
        stops = [s for s in ([stop] if isinstance(stop, str) else stop) if s]
        decoder = self.tokenizer.stream_decoder(skip_special=True)
        held, text = "", []  # held: text that may be the start of a stop string
        # aclosing: a break below closes the token stream at once (its finally records
        # what the cache holds), not whenever the abandoned generator is collected
        stream = self.tokens(ids, max_new_tokens=max_new_tokens, temperature=temperature,
                             top_k=top_k, top_p=top_p, seed=seed)
        async with contextlib.aclosing(stream):
            async for token in stream:
                if token in self.stop_ids:
                    break
                held += decoder.push(token)
                hit = min((held.find(s) for s in stops if s in held), default=-1)
                if hit >= 0:
                    held = held[:hit]
                    self.last.stopped = "stop string"
                    break
                keep = max((k for s in stops for k in range(len(s), 0, -1)
                            if held.endswith(s[:k])), default=0)
                if len(held) > keep:
                    piece, held = held[:len(held) - keep], held[len(held) - keep:]
                    text.append(piece)
                    yield piece
                if should_stop is not None and should_stop():
                    self.last.stopped = "stopped"
                    break
        if self.last.stopped != "stop string":
            held += decoder.flush()
        if held:
            text.append(held)
            yield held
        self.last.text = "".join(text)


def forward_shape(file) -> dict:
    """What a llama-style program's ``forward`` takes, read from its ProgramFile (no GPU):
    {max_context_len (KV cache rows), prefill_chunk (tokens one execute takes), vocab}."""
    plan = file.plan("forward")  # the program model: dynamism, the logits shape
    if len(plan.inputs) != 2 or len(plan.outputs) != 1:
        raise UnsupportedError(
            f"forward takes {len(plan.inputs)} inputs and gives {len(plan.outputs)} outputs; "
            "a llama-style program has (tokens int64[1, n], input_pos int64[1]) -> logits")
    tok, pos = (plan.values[v] for v in plan.inputs)
    tok_shape, pos_shape = tuple(getattr(tok, "sizes", ())), tuple(getattr(pos, "sizes", ()))
    tok_dtype, pos_dtype = (getattr(getattr(v, "dtype", None), "name", type(v).__name__)
                            for v in (tok, pos))
    if tok_dtype != "int64" or len(tok_shape) != 2 or tok_shape[0] != 1 \
            or pos_dtype != "int64" or pos_shape != (1,):
        raise UnsupportedError(
            f"forward inputs are {tok_dtype}{list(tok_shape)} and {pos_dtype}"
            f"{list(pos_shape)}; expected tokens int64[1, n] and input_pos int64[1]")
    logits = plan.values[plan.outputs[0]]
    consts = constants(file)
    context = consts.get("get_max_context_len") or consts.get("get_max_seq_len")
    if not context:
        raise UnsupportedError("the program has no get_max_context_len/get_max_seq_len "
                               "method: its KV cache length is unknown")
    dynamic = bool(getattr(tok, "shape_dynamism", 0))
    return {"max_context_len": int(context), "prefill_chunk": int(tok_shape[1]) if dynamic else 1,
            "vocab": int(logits.sizes[-1]) if getattr(logits, "sizes", None) else 0}


def constants(file) -> dict:
    """The values of a ProgramFile's constant methods (get_max_seq_len, ...), ints only."""
    found = {}
    for plan in file.plans:
        if plan.name == "forward" or plan.inputs or len(plan.outputs) != 1:
            continue
        value = plan.values[plan.outputs[0]]
        if getattr(value, "kind", None) == "int":
            found[plan.name] = int(value.value)
    return found
