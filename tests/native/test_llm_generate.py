"""Generation (pte_webgpu.llm.generate) natively: greedy tokens equal eager torch's, on the
tiny llama decoders (always) and on SmolLM2-135M from `make llm` (when build/llm has it)."""

import json
import time

import numpy as np
import pytest
from pte_webgpu.errors import InputError
from pte_webgpu.llm.generate import LanguageModel
from pte_webgpu.llm.tokenizer import Tokenizer

from tests.support.llm_models import llm_files, tiny_case, tiny_tokenizer_spec
from tests.support.gpu_thread import run_sync

TINY = ["llama_dynamic_rope", "llama_static_rope", "llama_dynamic_hfrope",
        "llama_static_rope_fp16"]


async def _collect(agen):
    return [x async for x in agen]


@pytest.mark.parametrize("name", TINY)
def test_tiny_greedy_equals_torch_and_the_cache_prefix_is_reused(runtime, name):
    case = tiny_case(name)
    tok = Tokenizer(tiny_tokenizer_spec(case["vocab"], eos_id=0))

    async def go():
        lm = await LanguageModel.load(runtime, case["pte"].read_bytes(), tok)
        try:
            n = len(case["greedy"])
            lm.stop_ids = set()  # the whole continuation, whatever the ids
            got = await _collect(lm.tokens(case["prompt"], max_new_tokens=n))
            first = lm.last
            # another prompt sharing 3 tokens: fed from position 3 over stale rows...
            other = case["prompt"][:3] + [7, 9]
            reused = await _collect(lm.tokens(other, max_new_tokens=4))
            reused_count = lm.last.reused
            lm.reset()  # ...must equal a fresh start
            fresh = await _collect(lm.tokens(other, max_new_tokens=4))
            # text: streamed pieces join to the decoded ids; stops at the eos id (0)
            lm.stop_ids = {0}
            lm.reset()
            pieces = await _collect(lm.generate(ids=case["prompt"], max_new_tokens=n))
            return got, first, reused, reused_count, fresh, pieces, lm.last
        finally:
            lm.close()

    got, first, reused, reused_count, fresh, pieces, last = run_sync(go())
    assert got == case["greedy"]
    assert first.prefill_calls == (1 if case["dynamic"] else len(case["prompt"]))
    assert first.decode_steps == len(got) - 1
    assert reused_count == 3 and reused == fresh
    want = case["greedy"][:case["greedy"].index(0) + 1] if 0 in case["greedy"] else case["greedy"]
    assert last.ids == want
    assert last.stopped == ("eos" if 0 in want else "max_new_tokens")
    assert "".join(pieces) == last.text == tok.decode([i for i in want if i != 0], skip_special=True)
    assert runtime.device.live_buffer_count == 0


def test_stop_strings_and_bad_input(runtime):
    case = tiny_case("llama_dynamic_rope")
    tok = Tokenizer(tiny_tokenizer_spec(case["vocab"]))
    full = tok.decode(case["greedy"], skip_special=True)
    stop = full[2:4]

    async def go():
        lm = await LanguageModel.load(runtime, case["pte"].read_bytes(), tok)
        try:
            lm.stop_ids = set()
            pieces = await _collect(lm.generate(ids=case["prompt"], max_new_tokens=8, stop=[stop]))
            last, errors = lm.last, []
            for bad in ([], [case["vocab"]], [-1]):
                try:
                    await _collect(lm.tokens(bad))
                except InputError as e:
                    errors.append(str(e))
            try:
                await _collect(lm.tokens([5] * 29))
            except InputError as e:
                errors.append(str(e))
            return pieces, last, errors
        finally:
            lm.close()

    pieces, last, errors = run_sync(go())
    assert "".join(pieces) == full[:full.index(stop)] and last.stopped == "stop string"
    assert len(errors) == 4 and "outside the vocab" in errors[1] and "context" in errors[3]


def test_cli_generate_native_json(tmp_path, capsys):
    from pte_webgpu.app.cli import main

    from tests.support.llm_models import write_tiny_tokenizer

    name = "llama_dynamic_hfrope"
    case = tiny_case(name)
    model = tmp_path / f"{name}.pte"
    model.write_bytes(case["pte"].read_bytes())
    tok_path = write_tiny_tokenizer(tmp_path, name)
    tok = Tokenizer.from_file(tok_path)
    prompt = tok.decode(case["prompt"])
    assert tok.encode(prompt) == case["prompt"]
    n = len(case["greedy"])
    rc = main(["generate", str(model), "--prompt", prompt, "--max-new-tokens", str(n),
               "--backend", "native", "--json"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    result = json.loads(out.strip().splitlines()[-1])
    assert len(out.strip().splitlines()) == 1  # --json: stdout has only the JSON line
    assert result["prompt_ids"] == case["prompt"] and result["ids"] == case["greedy"]
    assert result["text"] == tok.decode(case["greedy"], skip_special=True)
    assert err.startswith(result["text"])  # streamed to stderr with --json
    assert result["backend"] == "native" and result["prefill_calls"] == 1
    assert main(["generate", str(tmp_path / "missing.pte"), "--prompt", "x",
                 "--backend", "native"]) == 2


# --- the real model (make llm) ---------------------------------------------------------
def _load_llm(runtime, variant=""):
    files = llm_files(variant)

    async def go():
        started = time.perf_counter()
        lm = await LanguageModel.load(runtime, files["pte"].read_bytes(),
                                      files["tokenizer"].read_text())
        return lm, time.perf_counter() - started
    lm, load_s = run_sync(go())
    return files, lm, load_s


@pytest.fixture(scope="module")
def smollm(runtime):
    files, lm, load_s = _load_llm(runtime)
    print(f"\nSmolLM2 fp32 load: {load_s:.1f} s")
    yield files, lm
    lm.close()


def _prompt_ids(lm, prompt):
    if prompt["chat"]:
        return lm.prompt_ids(messages=[{"role": "user", "content": prompt["text"]}])
    return lm.prompt_ids(prompt["text"])


def test_smollm_step0_logits_match_eager(smollm):
    files, lm = smollm
    ref = np.load(files["logits"])
    for prompt in files["reference"]["prompts"]:
        ids = _prompt_ids(lm, prompt)
        assert ids == prompt["prompt_ids"], prompt["name"]
        lm.reset()
        row = run_sync(lm._feed(ids))
        err = float(np.abs(np.asarray(row, dtype=np.float64) - ref[prompt["name"]]).max())
        assert err <= 1e-3, (prompt["name"], err)


@pytest.mark.parametrize("which", ["chat_capital", "plain_fox"])
def test_smollm_greedy_equals_eager_torch(smollm, which):
    files, lm = smollm
    prompt = next(p for p in files["reference"]["prompts"] if p["name"] == which)
    want = prompt["eager_ids"][:16]
    lm.reset()
    started = time.perf_counter()
    got = run_sync(_collect(lm.tokens(prompt["prompt_ids"], max_new_tokens=len(want))))
    print(f"\n{which}: {len(got)} tokens in {time.perf_counter() - started:.1f} s, prefill "
          f"{lm.last.prefill_ms:.0f} ms, decode {lm.last.decode_tok_s:.2f} tok/s")
    assert got == want
    assert prompt["hf_ids"][:len(want)] == want  # eager torch agreed with transformers


def test_smollm_fp16_answers(runtime):
    files, lm, _ = _load_llm(runtime, "-fp16")
    try:
        messages = [{"role": "user", "content": "What is the capital of France?"}]
        text = "".join(run_sync(_collect(lm.generate(messages=messages, max_new_tokens=12))))
    finally:
        lm.close()
    assert "Paris" in text, text


@pytest.mark.parametrize("name", ["llama_dynamic_rope", "llama_static_rope_fp16"])
def test_temperature_sampling_is_drawn_on_the_gpu(runtime, name):
    """tokens(temperature=T) without top_k/top_p: every token is drawn on the GPU
    (readout.Sample, chained steps). It equals a host-fed loop of executes with the same
    draws, repeats for a seed, and at a vanishing temperature is the greedy continuation;
    top_k still samples on the host."""
    import random

    from pte_webgpu.runtime.readout import Sample

    case = tiny_case(name)
    prompt, n, temperature, seed = case["prompt"], 8, 1.5, 42

    async def host_fed(method):
        seed32 = random.Random(seed).getrandbits(32)
        ids, pos = [], 0
        feeds = [prompt] if case["dynamic"] else [[t] for t in prompt]
        for k, chunk in enumerate(feeds):
            draw = Sample(temperature, seed32, 0) if k == len(feeds) - 1 else None
            out = await method.execute([np.array([chunk], np.int64), np.array([pos], np.int64)],
                                       argmax=True, sample=draw)
            pos += len(chunk)
        for d in range(1, n):
            ids.append(out[0])
            out = await method.execute([np.array([[ids[-1]]], np.int64),
                                        np.array([pos], np.int64)], argmax=True,
                                       sample=Sample(temperature, seed32, d))
            pos += 1
        return ids + [out[0]]

    async def go():
        lm = await LanguageModel.load(runtime, case["pte"].read_bytes())
        try:
            lm.stop_ids = set()
            got = await _collect(lm.tokens(prompt, max_new_tokens=n, temperature=temperature,
                                           seed=seed))
            again = await _collect(lm.tokens(prompt, max_new_tokens=n, temperature=temperature,
                                             seed=seed))
            other = await _collect(lm.tokens(prompt, max_new_tokens=n, temperature=temperature,
                                             seed=seed + 1))
            cold = await _collect(lm.tokens(prompt, max_new_tokens=n, temperature=1e-6))
            host = await _collect(lm.tokens(prompt, max_new_tokens=n, temperature=temperature,
                                            top_k=3, seed=seed))
            lm.reset()
            want = await host_fed(lm.method)
            return got, again, other, cold, host, want
        finally:
            lm.close()

    got, again, other, cold, host, want = run_sync(go())
    assert got == want == again
    assert other != got  # 8 draws at T = 1.5 over a 64+ word vocab
    assert cold == case["greedy"][:n]
    assert len(host) == n and all(0 <= t < case["vocab"] for t in host)
