"""What the generation tests run: the tiny llama decoders (tests/fixtures/decoders) with a
small byte-level tokenizer made here, and the real model of `make llm` (build/llm/, skipped
when absent) with its eager-torch / transformers reference (reference.json)."""

import json
from pathlib import Path

import pytest
from pte_webgpu.llm.tokenizer import FORMAT, byte_to_unicode

from tests.support.decoders import DECODERS, INDEX

REPO = Path(__file__).resolve().parents[2]
LLM_DIR = REPO / "build" / "llm"
LLM_NAME = "smollm2-135m-instruct"
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# ids 3..97: printable ASCII and space; then lead and continuation bytes of é, €, 😀 so that
# greedy ids of a random model also make multi-byte and broken UTF-8 sequences
HIGH_BYTES = [0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80, 0xC2, 0xB0, 0xE4, 0xB8, 0xAD]
CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
          "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
          "{{ '<|im_start|>assistant\\n' }}{% endif %}")


def tiny_tokenizer_spec(vocab_size: int, eos_id: int = 2) -> dict:
    """A byte-level BPE for a tiny decoder's vocab: specials, single bytes, no merges."""
    chars = byte_to_unicode()
    vocab = SPECIALS + [chars[b] for b in range(0x20, 0x7F)] + [chars[b] for b in HIGH_BYTES]
    assert len(vocab) == vocab_size, (len(vocab), vocab_size)
    return {"format": FORMAT, "model": "byte_level_bpe", "pre_tokenizer": "smollm",
            "vocab": vocab, "merges": [], "special_tokens": {t: i for i, t in enumerate(SPECIALS)},
            "added_tokens": {}, "bos_id": 1, "eos_id": eos_id, "add_bos": False,
            "add_eos": False, "chat_template": CHATML}


def tiny_case(name: str) -> dict:
    """The decoder NAME: its .pte, prompt and eager torch's greedy continuation."""
    entry = INDEX[name]
    prompt = entry["prompt"]
    greedy = entry["argmax"] if entry["dynamic"] else entry["argmax"][len(prompt) - 1:]
    return {"pte": DECODERS / f"{name}.pte", "prompt": prompt, "greedy": greedy,
            "dynamic": entry["dynamic"], "vocab": entry["model_args"]["vocab_size"]}


def write_tiny_tokenizer(folder: Path, name: str, eos_id: int = 2) -> Path:
    path = folder / f"{name}.tokenizer.json"
    path.write_text(json.dumps(tiny_tokenizer_spec(INDEX[name]["model_args"]["vocab_size"],
                                                   eos_id)))
    return path


# quantized variants are other models: each has its own eager reference (llm_reference --quantize)
REFERENCES = {"-q4": "reference-q4"}


def llm_files(variant: str = "") -> dict:
    """build/llm's model (variant "", "-fp16" or "-q4"), tokenizer and the eager reference of
    that model; skip the test when `make llm` has not made them."""
    pte = LLM_DIR / f"{LLM_NAME}{variant}.pte"
    tok = LLM_DIR / f"{LLM_NAME}.tokenizer.json"
    ref = LLM_DIR / f"{REFERENCES.get(variant, 'reference')}.json"
    missing = [p.name for p in (pte, tok, ref) if not p.is_file()]
    if missing:
        pytest.skip(f"build/llm lacks {missing}: run `make llm`")
    return {"pte": pte, "tokenizer": tok, "reference": json.loads(ref.read_text()),
            "logits": ref.with_name(ref.stem + "_logits.npz")}
