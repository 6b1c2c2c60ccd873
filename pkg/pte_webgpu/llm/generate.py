"""Text generation over an exported llama-style program (UNFINISHED: not yet run on a model).

Written against the public Method API for programs from ``pte_webgpu.export.llm``:
``forward(tokens int64[1, n], input_pos int64[1]) -> logits float32[1, vocab]`` with the KV
cache inside the program, so positions must be fed in order and ``reset()`` starts over.
The runtime cannot run these programs until dynamic shapes, SymInt values and
``sdpa_with_kv_cache`` land there; until then nothing here is tested end to end.
Known gaps: logits are read back every token (no on-GPU argmax yet).
"""

from __future__ import annotations

import array
import random

from ..errors import InputError
from ..runtime.tensor import Tensor
from .chat import ChatTemplate
from .sampling import choose
from .tokenizer import Tokenizer


def _int64(values: list[int], shape) -> Tensor:
    return Tensor(array.array("q", values), shape, "int64")


def _row(logits):
    """The single row of a [1, vocab] output as a flat float sequence."""
    if hasattr(logits, "reshape") and hasattr(logits, "dtype") and not isinstance(logits, Tensor):
        return logits.reshape(-1)  # numpy
    flat = logits.tolist()
    return flat[0] if flat and isinstance(flat[0], list) else flat


class LanguageModel:
    """A loaded program + tokenizer. ``generate`` streams text; ``reset`` clears the cache."""

    def __init__(self, method, tokenizer: Tokenizer, *, max_seq_len: int, max_context_len: int,
                 stop_ids=None):
        self.method = method
        self.tokenizer = tokenizer
        self.max_seq_len = max_seq_len          # prefill chunks hold at most max_seq_len - 1
        self.max_context_len = max_context_len  # KV cache length
        self.stop_ids = set(stop_ids if stop_ids is not None else [tokenizer.eos_id])
        self.template = ChatTemplate.from_template(tokenizer.chat_template) if tokenizer.chat_template \
            else None
        self.position = 0
        self.last_ids: list[int] = []

    @classmethod
    async def load(cls, runtime, pte: bytes, tokenizer_json: str, data_files=()) -> "LanguageModel":
        program = await runtime.load_program(pte, data_files=data_files)
        constants = {}
        for name in ("get_max_seq_len", "get_max_context_len"):
            (value,) = await program.load_method(name).execute([])
            constants[name] = int(value)
        return cls(program.load_method("forward"), Tokenizer.from_json(tokenizer_json),
                   max_seq_len=constants["get_max_seq_len"],
                   max_context_len=constants["get_max_context_len"])

    def reset(self) -> None:
        """Forget the conversation: the next prompt starts at position 0."""
        self.position = 0
        self.last_ids = []

    def prompt_ids(self, prompt: str | None = None, messages=None) -> list[int]:
        if (prompt is None) == (messages is None):
            raise InputError("give a prompt or chat messages (exactly one)")
        if messages is not None:
            if self.template is None:
                raise InputError("this model has no chat template")
            prompt = self.template.render(messages, add_generation_prompt=True)
        return self.tokenizer.encode(prompt, add_special=self.position == 0)

    async def _forward(self, ids: list[int]):
        out = await self.method.execute([_int64(ids, (1, len(ids))), _int64([self.position], (1,))])
        self.position += len(ids)
        return _row(out[0])

    async def _prefill(self, ids: list[int]):
        if self.position + len(ids) > self.max_context_len:
            raise InputError(f"{self.position} cached + {len(ids)} prompt tokens exceed the "
                             f"context of {self.max_context_len}; call reset()")
        logits, chunk = None, self.max_seq_len - 1
        for start in range(0, len(ids), chunk):
            logits = await self._forward(ids[start:start + chunk])
        return logits

    async def generate(self, prompt: str | None = None, *, messages=None, max_new_tokens: int = 128,
                       temperature: float = 0.0, top_k: int | None = None, top_p: float | None = None,
                       seed: int | None = None, stop=()):
        """Yield text pieces as they are decoded. Greedy unless ``temperature`` > 0."""
        ids = self.prompt_ids(prompt, messages)
        if not ids:
            raise InputError("the prompt encodes to no tokens")
        rng = random.Random(seed)
        stops = [s for s in ([stop] if isinstance(stop, str) else stop) if s]
        decoder = self.tokenizer.stream_decoder(skip_special=True)
        logits = await self._prefill(ids)
        self.last_ids = []
        held = ""  # text that may be the start of a stop string
        for _ in range(max_new_tokens):
            token = choose(logits, rng, temperature=temperature, top_k=top_k, top_p=top_p)
            self.last_ids.append(token)
            if token in self.stop_ids:
                break
            held += decoder.push(token)
            hit = min((held.find(s) for s in stops if s in held), default=-1)
            if hit >= 0:
                if held[:hit]:
                    yield held[:hit]
                return
            keep = max((k for s in stops for k in range(len(s), 0, -1) if held.endswith(s[:k])), default=0)
            if len(held) > keep:
                yield held[:len(held) - keep]
                held = held[len(held) - keep:]
            if self.position >= self.max_context_len:
                break
            logits = await self._forward([token])
        held += decoder.flush()
        if held:
            yield held
