"""What `make llm` produced: program structure, tokenizer, references (skips without build/llm).

The structure is read with our own reader (pte_webgpu.app.describe) and checked against the GGUF's
hyperparameters recorded by `pte-webgpu convert` (one OUT.export.json per program), and against
what ExecuTorch's Vulkan llama export gives (docs in shared LLAMA.md): one delegate, KV caches
inside it, dynamic-shape prefill.
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest
from pte_webgpu import formats
from pte_webgpu.app import describe

LLM = Path(__file__).resolve().parents[2] / "build/llm"
NAME = "smollm2-135m-instruct"
SUFFIX = {"fp32": "", "fp16": "-fp16"}


def _record(variant: str) -> dict | None:
    """`pte-webgpu convert`'s OUT.export.json of one float program, None before `make llm`."""
    path = LLM / f"{NAME}{SUFFIX[variant]}.export.json"
    return json.loads(path.read_text()) if path.exists() else None


RECORDS = {v: r for v in SUFFIX if (r := _record(v)) is not None}
EXPORT = next(iter(RECORDS.values()), {})  # fp32's where there: its tokenizer is NAME's
HP = EXPORT.get("hparams", {})
needs_export = pytest.mark.skipif(not EXPORT, reason="build/llm has no export record: run `make llm`")


def report_of(variant: str) -> dict:
    path = LLM / RECORDS[variant]["programs"][variant]["file"]
    data = path.read_bytes()
    return describe.describe(formats.open_program(data, []), path.name, len(data))


@pytest.fixture(scope="module", params=list(RECORDS) or [pytest.param("fp32", marks=needs_export)])
def program(request):
    return request.param, RECORDS[request.param], report_of(request.param)


def test_each_record_is_of_its_one_program(program):
    variant, record, _ = program
    assert record["dtype"] == variant and list(record["programs"]) == [variant]
    assert record["programs"][variant]["file"] == f"{NAME}{SUFFIX[variant]}.pte"
    assert (LLM / record["tokenizer"]).is_file()
    assert record["hparams"] == HP and record["gguf"] == EXPORT["gguf"]


def test_constant_methods_carry_the_model_shape(program):
    _, record, report = program
    plans = {p["name"]: p for p in report["plans"]}
    value = {name: plans[name]["values"][plans[name]["outputs"][0]]["value"] for name in plans
             if name != "forward"}
    assert value == {
        "get_max_seq_len": record["max_seq_len"], "get_max_context_len": record["max_context_len"],
        "get_n_layers": HP["n_layers"], "get_vocab_size": HP["vocab_size"], "use_kv_cache": True,
        "use_sdpa_with_kv_cache": True, "enable_dynamic_shape": True,
    }


def test_forward_is_one_delegate_with_dynamic_prefill_and_cache_inside(program):
    variant, record, report = program
    forward = next(p for p in report["plans"] if p["name"] == "forward")
    values = {v["id"]: v for v in forward["values"]}
    tokens, pos = (values[i] for i in forward["inputs"])
    (logits,) = (values[i] for i in forward["outputs"])
    assert (tokens["dtype"], tokens["shape"]) == ("int64", [1, record["max_seq_len"] - 1])
    assert tokens["shape_dynamism"] != 0
    assert (pos["dtype"], pos["shape"]) == ("int64", [1])
    assert (logits["dtype"], logits["shape"]) == ("float32", [1, HP["vocab_size"]])
    assert [i["kind"] for i in forward["instructions"]] == ["delegate"]

    (delegate,) = forward["delegates"]
    assert delegate["compile_specs"]["force_fp16"] == ("01" if variant == "fp16" else "00")
    vk = delegate["vulkan"]
    ops = collections.Counter(op["name"] for op in vk["ops"])
    n = HP["n_layers"]
    assert ops["sdpa_with_kv_cache.default"] == n
    assert ops["et_vk.apply_rotary_emb.default"] == n
    assert ops["et_vk.rms_norm.default"] == 2 * n + 1
    assert ops["aten.linear.default"] == 7 * n + 1  # q k v o gate up down, lm head
    assert ops["aten.embedding.default"] == 1
    # each KV cache: a constant (zeros) with its own memory, [1, context, kv heads, head dim]
    cache_shape = [1, record["max_context_len"], HP["n_kv_heads"], HP["head_dim"]]
    caches = [v for v in vk["values"] if v["kind"] == "tensor" and v.get("shape") == cache_shape]
    assert len(caches) == 2 * n
    assert all(c["constant_id"] >= 0 and c["mem_obj_id"] >= 0 for c in caches)
    floats = {v["dtype"] for v in vk["values"] if v["kind"] == "tensor" and v["dtype"].startswith("float")}
    assert floats == ({"float16"} if variant == "fp16" else {"float32"})


@needs_export
def test_tokenizer_beside_the_program_matches_the_gguf_vocab():
    from pte_webgpu.llm import Tokenizer

    tok = Tokenizer.from_file(LLM / EXPORT["tokenizer"])
    assert tok.vocab_size == HP["vocab_size"]
    assert tok.decode(tok.encode("What is the capital of France?")) == "What is the capital of France?"


@needs_export
@pytest.mark.parametrize("name", ["reference.json", "reference-q4.json"])
def test_reference_prompts_are_what_the_tokenizer_and_chat_template_give(name):
    """The references' prompt ids are still the ones the tests feed (chat prompts through
    the GGUF's Jinja template, which writes no BOS for SmolLM2)."""
    pytest.importorskip("jinja2")
    from pte_webgpu.export.llm_reference import prompt_ids
    from pte_webgpu.llm import ChatTemplate, Tokenizer

    if not (LLM / name).exists():
        pytest.skip(f"build/llm/{name} missing: run `make llm`")
    tok = Tokenizer.from_file(LLM / EXPORT["tokenizer"])
    template = ChatTemplate.from_tokenizer(tok)
    for prompt in json.loads((LLM / name).read_text())["prompts"]:
        assert prompt_ids(tok, template, prompt) == prompt["prompt_ids"], prompt["name"]


def test_reference_eager_model_agrees_with_transformers():
    path = LLM / "reference.json"
    if not path.exists():
        pytest.skip("build/llm/reference.json missing: run `make llm`")
    ref = json.loads(path.read_text())
    # GGUF q/k rows are in the llama example's interleaved RoPE layout: the example model on
    # the raw GGUF rows and transformers (which un-permutes them) give the same logits.
    assert ref["layout_check"]["max_abs_step0_logit_diff_vs_hf"] < 1e-3
    # ...and the same model with q/k rows in rotate-half order does not
    assert ref["layout_check"]["control_rotate_half_rows_diff_vs_hf"] > 1.0
    for prompt in ref["prompts"]:
        assert prompt["eager_ids"] == prompt["hf_ids"], prompt["name"]
    capital = next(p for p in ref["prompts"] if p["name"] == "chat_capital")
    assert "Paris" in capital["eager_text"]
