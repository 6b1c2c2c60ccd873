"""SmolLM2-135M with 4-bit weights (build/llm/smollm2-135m-instruct-q4.pte, `make llm`; skipped
without it) natively: greedy tokens equal eager torch of the same quantized model
(reference-q4.json, llm_reference --quantize q4) for 32 tokens on its 4 prompts, and the
step-0 logits agree with eager torch's."""

import time

import numpy as np
import pytest
from pte_webgpu.llm.generate import LanguageModel

from tests.support.gpu_thread import run_sync
from tests.support.llm_models import llm_files


async def _collect(agen):
    return [x async for x in agen]


@pytest.fixture(scope="module")
def smollm_q4(runtime):
    files = llm_files("-q4")

    async def go():
        return await LanguageModel.load(runtime, files["pte"].read_bytes(), files["tokenizer"].read_text())
    started = time.perf_counter()
    lm = run_sync(go())
    print(f"\nSmolLM2 q4 load: {time.perf_counter() - started:.1f} s")
    yield files, lm
    lm.close()


def test_smollm_q4_step0_logits_match_eager(smollm_q4):
    files, lm = smollm_q4
    ref = np.load(files["logits"])
    for prompt in files["reference"]["prompts"]:
        lm.reset()
        row = np.asarray(run_sync(lm._feed(prompt["prompt_ids"])), dtype=np.float64)
        err = float(np.abs(row - ref[prompt["name"]]).max())
        # the same f32 dequantized weights as eager torch, summed in another order
        assert err <= 2e-3, (prompt["name"], err)
        assert int(np.argmax(row)) == prompt["step0_argmax"], prompt["name"]


@pytest.mark.parametrize("which", ["chat_capital", "chat_haiku", "plain_fox", "plain_code"])
def test_smollm_q4_greedy_equals_eager_torch(smollm_q4, which):
    files, lm = smollm_q4
    prompt = next(p for p in files["reference"]["prompts"] if p["name"] == which)
    want = prompt["eager_ids"]
    assert len(want) == 32 or want[-1] == files["reference"]["eos_id"]
    lm.reset()
    started = time.perf_counter()
    got = run_sync(_collect(lm.tokens(prompt["prompt_ids"], max_new_tokens=len(want))))
    print(f"\nq4 {which}: {len(got)} tokens in {time.perf_counter() - started:.1f} s, prefill "
          f"{lm.last.prefill_ms:.0f} ms, decode {lm.last.decode_tok_s:.2f} tok/s")
    assert got == want
