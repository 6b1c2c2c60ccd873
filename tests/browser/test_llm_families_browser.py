"""The converted tiny GGUFs of tests/fixtures/llm_families (llama, qwen2, qwen3, phi3 plain
and with LongRoPE) in Pyodide on headless Chromium's WebGPU, step by step with the KV cache
as in the native test (tests/native/test_llm_families.py: prefill in one call, then the
reference's tokens one per call): each step's argmax is the float64 reference's token, and
logits are within that test's tolerances. Every prompt of every program (32 steps each)."""

import pytest

from tests.native.test_llm_families import (FP16_LOGIT_TOL, LOGIT_TOL, PROGRAMS, REFERENCE,
                                            _model)

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
