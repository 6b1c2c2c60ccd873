"""Converted tiny GGUFs of four architectures (tests/fixtures/llm_families: llama with an
untied lm head and Llama 3 RoPE scaling, qwen2 with q/k/v biases, qwen3 with q/k norms,
phi3 with fused q/k/v and gate/up, plain and with LongRoPE),
run step by step with their KV cache: each step's greedy token equals the float64
reference (transformers' own model from the same GGUF, full forward passes, no cache),
and the logits of the reference's top 8 tokens agree within LOGIT_TOL.

The programs are fed the reference's tokens (prefill of the prompt in one call, then one
token per call), so a step's argmax is compared on the same context as the reference's.
"""

import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.gpu_thread import run_sync

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "llm_families"
REFERENCE = json.loads((FIXTURES / "reference.json").read_text())
# float32 programs against a float64 model: measured worst |difference| 2.4e-5 on lavapipe
# (phi3 2.0e-5, phi3_longrope 1.8e-5; |logit| up to 17; the eager fp32 torch model of the
# export: 1.6e-5); 5e-4 leaves room for other adapters' summation orders.
LOGIT_TOL = 5e-4
# force_fp16 programs (weights and, with shader-f16, activations in half precision): measured
# worst 0.037 on lavapipe (f16 activations)
FP16_LOGIT_TOL = 0.15
# float programs (against the float64 reference) and q4 ones (against the eager q4 model)
PROGRAMS = sorted(p.name[:-4] for p in FIXTURES.glob("*.pte") if not p.name.endswith("-q4.pte"))
Q4_PROGRAMS = sorted(p.name[:-4] for p in FIXTURES.glob("*-q4.pte"))
REFERENCE_Q4 = json.loads((FIXTURES / "reference-q4.json").read_text())


def _model(program: str) -> str:
    return program.split("-")[0]


def test_every_model_has_a_program():
    assert {_model(p) for p in PROGRAMS} == set(REFERENCE["models"])
    assert {_model(p) for p in Q4_PROGRAMS} == set(REFERENCE_Q4["models"])


def test_reference_top_two_are_far_enough_apart_for_argmax_to_be_checked():
    # if a step's two best logits were closer than twice the tolerance, an fp32 program could
    # pick either; none is, so every fp32 step's token is compared exactly below
    close = [(m, p, i, s["gap"]) for m, r in REFERENCE["models"].items()
             for p, pr in r["prompts"].items() for i, s in enumerate(pr["steps"])
             if s["gap"] < 2 * LOGIT_TOL]
    assert not close, f"steps whose top-2 logits are within 2 x {LOGIT_TOL}: {close}"


async def _run(runtime, pte: bytes, ids: list[int], fed: list[int]) -> list[np.ndarray]:
    """Logits after the prompt, then after each fed token."""
    program = await runtime.load_program(pte)
    try:
        method = program.load_method("forward")
        (logits,) = await method.execute([np.array([ids], np.int64), np.array([0], np.int64)])
        out = [np.asarray(logits, np.float64).reshape(-1)]
        for pos, token in enumerate(fed, start=len(ids)):
            (logits,) = await method.execute([np.array([[token]], np.int64),
                                              np.array([pos], np.int64)])
            out.append(np.asarray(logits, np.float64).reshape(-1))
        return out
    finally:
        program.close()


@pytest.mark.parametrize("program", PROGRAMS)
def test_greedy_tokens_equal_the_float64_reference(runtime, program):
    ref = REFERENCE["models"][_model(program)]
    fp16 = program.endswith("-fp16")
    tol = FP16_LOGIT_TOL if fp16 else LOGIT_TOL
    pte = (FIXTURES / f"{program}.pte").read_bytes()
    for name, prompt in ref["prompts"].items():
        steps = prompt["steps"]
        tokens = [s["token"] for s in steps]
        rows = run_sync(_run(runtime, pte, prompt["ids"], tokens[:-1]))
        got = [int(np.argmax(r)) for r in rows]
        worst = max(abs(row[i] - v) for row, s in zip(rows, steps) for i, v in s["top"])
        assert worst < tol, f"{program} {name}: logits differ by up to {worst:.3g}"
        for i, (token, s) in enumerate(zip(got, steps)):
            if s["gap"] >= 2 * tol:
                assert token == s["token"], f"{program} {name} step {i}: {got} != {tokens}"
            else:
                # only fp16 (test above): the reference's two best are within twice the
                # program's tolerance, so either may win; the pick must be one of those close
                # to the top (measured on lavapipe: every fp16 pick equals the reference's)
                near = {j for j, v in s["top"] if v >= s["top"][0][1] - 2 * tol}
                assert token in near, f"{program} {name} step {i}: {token} not in {near}"


@pytest.mark.parametrize("program", [p for p in PROGRAMS if not p.endswith("-fp16")])
def test_language_model_generates_the_reference_tokens(runtime, program, tmp_path):
    """The user's path: LanguageModel with the GGUF's own tokenizer (what convert writes
    beside the program), greedy picks chained on the GPU, free-running from the prompt."""
    pytest.importorskip("gguf")
    import sys

    sys.path.insert(0, str(FIXTURES))
    import make_ggufs
    from pte_webgpu.export import gguf_llama, tokenizer_json
    from pte_webgpu.llm.generate import LanguageModel
    from pte_webgpu.llm.tokenizer import Tokenizer

    make_ggufs.write(tmp_path / "m.gguf", _model(program))
    tok = Tokenizer(tokenizer_json.tokenizer_dict(gguf_llama.open_gguf(tmp_path / "m.gguf")))
    ref = REFERENCE["models"][_model(program)]["prompts"]

    async def go():
        lm = await LanguageModel.load(runtime, (FIXTURES / f"{program}.pte").read_bytes(), tok)
        try:
            lm.stop_ids = set()  # the whole continuation, whatever the ids
            out = {}
            for name, prompt in ref.items():
                lm.reset()
                out[name] = [t async for t in lm.tokens(prompt["ids"], max_new_tokens=len(prompt["steps"]))]
            return out
        finally:
            lm.close()

    got = run_sync(go())
    assert got == {name: [s["token"] for s in p["steps"]] for name, p in ref.items()}


@pytest.mark.parametrize("program", Q4_PROGRAMS)
def test_q4_program_equals_the_eager_quantized_model(runtime, program):
    """4-bit weights (convert --dtype q4: et_vk.linear_q4gsw, with qwen2's biases, and
    embedding_q4gsw) against the model they were lowered from, run eagerly in float32
    (make_q4_references.py; the weights' sha256 equals the program's export record):
    every step's token equal, logits within LOGIT_TOL (measured 2.6e-5 on lavapipe)."""
    ref = REFERENCE_Q4["models"][_model(program)]
    pte = (FIXTURES / f"{program}.pte").read_bytes()
    for name, prompt in ref["prompts"].items():
        steps = prompt["steps"]
        assert min(s["gap"] for s in steps) >= 2 * LOGIT_TOL
        rows = run_sync(_run(runtime, pte, prompt["ids"], [s["token"] for s in steps][:-1]))
        assert [int(np.argmax(r)) for r in rows] == [s["token"] for s in steps], name
        worst = max(abs(row[i] - v) for row, s in zip(rows, steps) for i, v in s["top"])
        assert worst < LOGIT_TOL, f"{program} {name}: logits differ by up to {worst:.3g}"

