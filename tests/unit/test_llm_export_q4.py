"""What `make llm` produced for 4-bit weights (skips without build/llm's q4 files): the program
is one Vulkan delegate whose linears and embedding are the 4-bit ops (the GGUF's Q4_1 groups
with their offset terms; the tied Q8_0 table as one 8-bit table in two 4-bit halves that
the gather and the lm head share, stored once), within the issue's 110 MB; its eager
reference was made from the same quantized weights as the program, and the quantized
model's top-1 agreement with float64 is recorded and meets the target."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest
from pte_webgpu import formats
from pte_webgpu.app import describe

LLM = Path(__file__).resolve().parents[2] / "build/llm"
NAME = "smollm2-135m-instruct"
PTE = LLM / f"{NAME}-q4.pte"
REFERENCE = LLM / "reference-q4.json"
EXPORT_JSON = LLM / f"{NAME}-q4.export.json"  # convert --dtype q4 -o NAME-q4.pte
# issue 23's target. Measured 103.8 MB: 4-bit linears (53.1 MB) with the GGUF's float16
# scales (6.6 MB) and float32 Q4_1 offsets (13.3 MB), the tied table once (28.3 MB) where
# it was twice (46.2 MB: 127.5 MB in all; docs/llm.md "q4")
MAX_BYTES = 110_000_000


def _json(path: Path) -> dict:
    if not path.is_file():
        pytest.skip(f"build/llm lacks {path.name}: run `make llm`")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def report():
    if not PTE.is_file():
        pytest.skip(f"build/llm lacks {PTE.name}: run `make llm`")
    data = PTE.read_bytes()
    return describe.describe(formats.open_program(data, []), PTE.name, len(data))


def test_q4_program_is_one_delegate_of_4_bit_ops(report):
    hp = _json(EXPORT_JSON)["hparams"]
    forward = next(p for p in report["plans"] if p["name"] == "forward")
    assert [i["kind"] for i in forward["instructions"]] == ["delegate"]
    (delegate,) = forward["delegates"]
    ops = collections.Counter(op["name"] for op in delegate["vulkan"]["ops"])
    n = hp["n_layers"]
    assert ops["et_vk.linear_q4gsw.default"] == 7 * n + 1  # q k v o gate up down, the head
    # each layer's with its Q4_1 offset term (group sums, a float linear, an add: fused at load)
    assert ops["aten.sum.dim_IntList"] == ops["aten.linear.default"] == 7 * n
    assert ops["aten._weight_int8pack_mm.default"] == 0
    assert ops["et_vk.embedding_q4gsw.default"] == 1 and ops["aten.embedding.default"] == 0
    assert ops["aten.cat.default"] == 1  # the head's (x, x) over both halves
    assert PTE.stat().st_size <= MAX_BYTES, PTE.stat().st_size


def test_q4_program_stores_the_tied_table_once():
    hp = _json(EXPORT_JSON)["hparams"]
    program = formats.open_program(PTE.read_bytes(), [])
    sizes = collections.Counter(len(program.named_bytes(key)) for key in program.named_data)
    # [V, 2 D] int4 values, two per byte: both ops' weight, one entry (keys are sha256s)
    assert sizes[hp["vocab_size"] * hp["dim"]] == 1, sizes.most_common(4)


def test_q4_reference_is_of_the_programs_weights():
    ref, export = _json(REFERENCE), _json(EXPORT_JSON)
    entry = export["programs"].get("q4")
    assert entry and entry["file"] == PTE.name, f"{EXPORT_JSON.name} has no q4 program"
    # the GGUF's groups, HQQ's scale search for the rest: two processes quantize alike
    assert ref["weights_sha256"] == entry["weights_sha256"]
    assert ref["quantize"]["preset"] == entry["quantize"] == "q4"
    float_ref = _json(LLM / "reference.json")
    assert [p["prompt_ids"] for p in ref["prompts"]] == [p["prompt_ids"] for p in float_ref["prompts"]]


def test_q4_top1_agreement_with_float64_is_recorded():
    acc = _json(REFERENCE).get("accuracy")
    if not acc:
        pytest.skip("reference-q4.json has no accuracy record: run `make llm-accuracy`")
    assert acc["positions"] == 512 and acc["teacher_forced_texts"] == 4
    assert acc["agree"] == sum(acc["per_text"]) and acc["top1"] == round(acc["agree"] / 512, 4)
    # the target; measured 94.5% (docs/llm.md "q4"; 66.0% when the Q4_1 blocks were
    # requantized)
    assert acc["top1"] >= 0.85, acc
