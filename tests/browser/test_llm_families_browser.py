"""The converted tiny GGUFs of tests/fixtures/llm_families (llama, qwen2, qwen3, phi3 plain
and with LongRoPE) in Pyodide on headless Chromium's WebGPU, step by step with the KV cache
as in the native test (tests/native/test_llm_families.py: prefill in one call, then the
reference's tokens one per call): each step's argmax is the float64 reference's token, and
logits are within that test's tolerances. Every prompt of every program (32 steps each);
the q4 programs teacher forced, against the float64 model and the eager q4 one."""

import pytest

from tests.native.test_llm_families import (FP16_LOGIT_TOL, LOGIT_TOL, PROGRAMS, Q4_AGREEMENT,
                                            Q4_PROGRAMS, REFERENCE, REFERENCE_Q4, _model)

pytestmark = pytest.mark.browser
PROMPTS = ("short", "mid", "one")

_PAGE = """
async def _families_steps(name, ids, fed, tops):
    program = await (await runtime()).load_program(await fetch_bytes(f"/fixtures/llm_families/{name}.pte"))
    try:
        method = program.load_method("forward")
        tokens, picked, pos = [], [], 0
        for feed, top in zip([ids] + [[t] for t in fed], tops):
            (logits,) = await method.execute([[feed], [pos]])
            row = logits.tolist()
            while isinstance(row[0], list):
                row = row[-1]
            tokens.append(max(range(len(row)), key=row.__getitem__))
            picked.append([row[i] for i in top])
            pos += len(feed)
        return {"tokens": tokens, "picked": picked}
    finally:
        program.close()
"""


@pytest.fixture(scope="module")
def families_page(support_page):
    support_page.run_python(_PAGE)
    return support_page


@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("program", PROGRAMS)
def test_greedy_decode_in_the_page_equals_the_float64_reference(families_page, program, prompt):
    steps = REFERENCE["models"][_model(program)]["prompts"][prompt]["steps"]
    ids = REFERENCE["models"][_model(program)]["prompts"][prompt]["ids"]
    tops = [[i for i, _ in s["top"]] for s in steps]
    fed = [s["token"] for s in steps][:-1]
    got = families_page.run_python(f"await _families_steps({program!r}, {ids!r}, {fed!r}, {tops!r})")
    tol = FP16_LOGIT_TOL if program.endswith("-fp16") else LOGIT_TOL
    worst = max(abs(g - v) for row, s in zip(got["picked"], steps) for g, (_, v) in zip(row, s["top"]))
    assert worst < tol, f"{program}: logits differ by up to {worst:.3g}"
    for i, (token, s) in enumerate(zip(got["tokens"], steps)):
        if s["gap"] >= 2 * tol:
            assert token == s["token"], f"{program} step {i}: {got['tokens']}"
        else:  # fp16 only: the reference's best two are within the program's precision
            assert token in {j for j, v in s["top"] if v >= s["top"][0][1] - 2 * tol}


@pytest.mark.parametrize("program", Q4_PROGRAMS)
def test_q4_program_in_the_page_agrees_with_the_float64_model(families_page, program):
    """The 4-bit programs in the page (the offset groups of Q4_1 folded into the 4-bit
    kernel there too), teacher forced along the float64 reference's tokens: every pick
    equals the eager q4 model's where that one's top two are apart (reference-q4.json is
    free-running, so only the steps before the first difference from float64 compare), and
    at least Q4_AGREEMENT of all steps equal the float64 model's."""
    agree = total = 0
    for prompt in PROMPTS:
        ref = REFERENCE["models"][_model(program)]["prompts"][prompt]
        tokens = [s["token"] for s in ref["steps"]]
        got = families_page.run_python(
            f"await _families_steps({program!r}, {ref['ids']!r}, {tokens[:-1]!r}, {[[0]] * len(tokens)!r})")
        agree += sum(a == b for a, b in zip(got["tokens"], tokens))
        total += len(tokens)
        q4 = REFERENCE_Q4["models"][_model(program)]["prompts"][prompt]["steps"]
        same = next((i for i, (a, b) in enumerate(zip(q4, tokens)) if a["token"] != b), len(tokens))
        for i, s in enumerate(q4[:same + 1]):
            if s["gap"] >= 2 * LOGIT_TOL:
                assert got["tokens"][i] == s["token"], f"{program} {prompt} step {i}"
    assert agree >= Q4_AGREEMENT * total, f"{program}: {agree} of {total} steps agree"
