"""RoPE folded into the attention (runtime/fusion_rope.py, ops/attention.py SDPA_ROPE): the
exported llama decoders, whose RoPE is et_vk.apply_rotary_emb (interleaved pairs) or
et_vk.apply_rotary_emb_hf (half against half, rows start + s of full tables), a prefill and
decode steps, with the fold on and off (every other fold alike), in each attention form:
the logits agree, and the rope's dispatch is gone from every layer. Against eager torch:
tests/native/test_decoders.py (the fold is on by default)."""

import pytest
from pte_webgpu.runtime import fusion_rope

from tests.support.decoders import DECODERS, INDEX
from tests.support.fusion_check import fusion_report
from tests.support.gpu_thread import run_sync

ROPE = sorted(n for n in INDEX if n.startswith("llama_"))  # interleaved and HF RoPE


def _report(name, monkeypatch, form):
    import pte_webgpu

    args = INDEX[name]["model_args"]
    pte = (DECODERS / f"{name}.pte").read_bytes()
    prompt = 20 if INDEX[name].get("dynamic") else 1

    async def make(fuse):  # fuse: this fold on or off, the others on
        monkeypatch.setattr(fusion_rope, "ENABLED", fuse["fuse"])
        return await pte_webgpu.Runtime.create("native", options={"variants": {"sdpa": form}})
    return run_sync(fusion_report(make, pte, args["vocab_size"], prompt, 3))


@pytest.mark.parametrize("form", ["rows", "elements", "split", "tiles"])
@pytest.mark.parametrize("name", ROPE)
def test_rope_folds_into_every_attention_form(name, form, monkeypatch):
    assert ROPE, "no decoder with the interleaved RoPE op"
    report = _report(name, monkeypatch, form)
    layers = INDEX[name]["model_args"]["n_layers"]
    assert report["fused_ops"]["fused"].get("rope + sdpa") == layers, report["fused_ops"]
    assert "rope + sdpa" not in report["fused_ops"]["unfused"]
    counts = report["dispatches"]
    assert counts["unfused"] - counts["fused"] == layers, counts
    # the same products and roundings (the rope's output rounded to the stored type);
    # a driver may contract a * b - c * d differently inside another kernel
    tol = (1e-3 if "fp16" in name else 1e-5) * report["scale"]
    assert max(report["diffs"]) <= tol, report["diffs"]
