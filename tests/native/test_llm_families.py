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


def test_reference_top_two_are_mostly_far_enough_apart_for_argmax_to_be_checked():
    # a step whose two best logits are closer than twice the tolerance may pick either of
    # them (the tests below accept those near the top there); such near ties are rare
    # (measured: 2 of 672 steps, phi3 and gemma3), so nearly every step's token is
    # compared exactly
    close = [(m, p, i, s["gap"]) for m, r in REFERENCE["models"].items()
             for p, pr in r["prompts"].items() for i, s in enumerate(pr["steps"])
             if s["gap"] < 2 * LOGIT_TOL]
    steps = sum(len(pr["steps"]) for r in REFERENCE["models"].values() for pr in r["prompts"].values())
    assert len(close) <= 0.01 * steps, f"steps whose top-2 logits are within 2 x {LOGIT_TOL}: {close}"


def _picks_match(got: list[int], steps: list[dict], tol: float, what: str) -> None:
    """Each pick is the reference's token; where the reference's best two are within twice
    ``tol``, one of the tokens that close to the top."""
    for i, (token, s) in enumerate(zip(got, steps)):
        if s["gap"] >= 2 * tol:
            assert token == s["token"], f"{what} step {i}: {got} != {[s['token'] for s in steps]}"
        else:
            near = {j for j, v in s["top"] if v >= s["top"][0][1] - 2 * tol}
            assert token in near, f"{what} step {i}: {token} not in {near}"


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
        _picks_match(got, steps, tol, f"{program} {name}")


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
    every step's token equal (one of the near-top ones at a near tie), logits within
    LOGIT_TOL (measured 2.6e-5 on lavapipe)."""
    ref = REFERENCE_Q4["models"][_model(program)]
    pte = (FIXTURES / f"{program}.pte").read_bytes()
    for name, prompt in ref["prompts"].items():
        steps = prompt["steps"]
        rows = run_sync(_run(runtime, pte, prompt["ids"], [s["token"] for s in steps][:-1]))
        _picks_match([int(np.argmax(r)) for r in rows], steps, LOGIT_TOL, f"{program} {name}")
        worst = max(abs(row[i] - v) for row, s in zip(rows, steps) for i, v in s["top"])
        assert worst < LOGIT_TOL, f"{program} {name}: logits differ by up to {worst:.3g}"



# issue 22's bar for 4-bit conversions: teacher-forced top-1 agreement with the float64 model
Q4_AGREEMENT = 0.85


@pytest.mark.parametrize("program", Q4_PROGRAMS)
def test_q4_program_agrees_with_the_float64_model(runtime, program):
    """Teacher forced: the q4 program is fed the float64 reference's tokens and at every
    step predicts the next one; its picks equal the float64 model's on at least 85% of the
    steps (3 prompts x 32). The GGUFs hold Q4_0/Q4_1 linears, which the conversion keeps
    as they are (export/exact_q4.py); what is left to differ is the embedding (and an
    8-bit lm head where the GGUF's is Q8_0)."""
    ref = REFERENCE["models"][_model(program)]
    pte = (FIXTURES / f"{program}.pte").read_bytes()
    agree = total = 0
    for prompt in ref["prompts"].values():
        tokens = [s["token"] for s in prompt["steps"]]
        rows = run_sync(_run(runtime, pte, prompt["ids"], tokens[:-1]))
        agree += sum(int(np.argmax(r)) == t for r, t in zip(rows, tokens))
        total += len(tokens)
    assert agree >= Q4_AGREEMENT * total, f"{program}: {agree} of {total} steps agree"
