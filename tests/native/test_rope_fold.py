"""RoPE folded into the attention (runtime/fusion_rope.py, ops/attention.py SDPA_ROPE): the
exported llama decoders, whose RoPE is et_vk.apply_rotary_emb (interleaved pairs) or
et_vk.apply_rotary_emb_hf (half against half, rows start + s of full tables), a prefill and
decode steps, with the fold on and off (every other fold alike), in each attention form:
the logits agree, and the rope's dispatch is gone from every layer. Against eager torch:
tests/native/test_decoders.py (the fold is on by default)."""

import pytest
from pte_webgpu.runtime import fusion_rope

from tests.support.decoders import INDEX, fold_report

ROPE = sorted(n for n in INDEX if n.startswith("llama_"))  # interleaved and HF RoPE


def _report(name, monkeypatch, form):
    return fold_report(name, fusion_rope, monkeypatch, {"variants": {"sdpa": form}})


@pytest.mark.parametrize("form", ["rows", "elements", "split", "tiles"])
@pytest.mark.parametrize("name", ROPE)
def test_rope_folds_into_every_attention_form(name, form, monkeypatch):
    assert ROPE, "no decoder with the interleaved RoPE op"
    report = _report(name, monkeypatch, form)
    layers = INDEX[name]["model_args"]["n_layers"]
    assert report["fused_ops"]["fused"].get("rope + sdpa") == layers, report["fused_ops"]
    assert "rope + sdpa" not in report["fused_ops"]["unfused"]
    # the dynamic exports slice the interleaved tables at input_pos: the fold reads the
    # whole tables, and both slices' dispatches go too
    sliced = 2 if "dynamic_rope" in name else 0
    counts = report["dispatches"]
    assert counts["unfused"] - counts["fused"] == layers + sliced, counts
    # the same products and roundings (the rope's output rounded to the stored type);
    # a driver may contract a * b - c * d differently inside another kernel
    tol = (1e-3 if "fp16" in name else 1e-5) * report["scale"]
    assert max(report["diffs"]) <= tol, report["diffs"]
