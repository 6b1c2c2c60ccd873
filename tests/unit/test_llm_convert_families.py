"""The GGUF side of `pte-webgpu convert` (no torch): each family's hyperparameters and
weight layout from the tiny GGUFs of tests/fixtures/llm_families, and the typed errors for
architectures it does not convert, for missing keys and tensors, and for Phi-3's fused
tensors, LongRoPE factors and sliding window."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gguf")

from pte_webgpu.app import cli  # noqa: E402
from pte_webgpu.errors import FormatError, UnsupportedError  # noqa: E402
from pte_webgpu.export import gguf_arch, gguf_llama  # noqa: E402

FAMILIES = Path(__file__).resolve().parents[1] / "fixtures" / "llm_families"
sys.path.insert(0, str(FAMILIES))
import make_ggufs  # noqa: E402
import family_spec as spec  # noqa: E402


@pytest.fixture(scope="module")
def ggufs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("families")
    for name in spec.MODELS:
        make_ggufs.write(folder / f"{name}.gguf", name)
    return folder


def _hp(path):
    reader = gguf_llama.open_gguf(path)
    return reader, gguf_llama.read_hparams(reader)


@pytest.mark.parametrize("name", list(spec.MODELS))
def test_hyperparameters_come_from_each_architectures_keys(ggufs, name):
    m = spec.MODELS[name]
    _, hp = _hp(ggufs / f"{name}.gguf")
    assert (hp.architecture, hp.dim, hp.n_layers, hp.n_heads, hp.n_kv_heads, hp.head_dim,
            hp.hidden_dim, hp.tied_output) == (m["arch"], m["dim"], m["layers"], m["heads"],
                                               m["kv_heads"], m["head_dim"], m["hidden"], m["tied"])
    assert hp.rope_freq_base == m["rope_base"] and hp.norm_eps == pytest.approx(m["eps"])
    assert (hp.qkv_bias, hp.qk_norm, hp.rope_halves) == (name == "qwen2", name in ("qwen3", "gemma3"),
                                                         name != "llama")
    assert (hp.rope_freq_factors is not None) == (name == "llama")
    window = m.get("gguf_keys", {}).get("attention.sliding_window", m.get("sliding_window", 0))
    assert hp.fused == (m["arch"] == "phi3") and hp.sliding_window == window
    assert (hp.rope_factors_short is not None) == ("longrope" in m)


def test_llama3_rope_factors_span_unscaled_smoothed_and_scaled(ggufs):
    _, hp = _hp(ggufs / "llama.gguf")
    f = hp.rope_freq_factors
    assert f[0] == 1.0 and 1.0 < f[1] < spec.LLAMA3_ROPE["factor"] and f[-1] == spec.LLAMA3_ROPE["factor"]


def test_rotate_half_rows_become_interleaved_pairs():
    # head of 6 rows [a0 a1 a2 | b0 b1 b2] (pairs a_i, b_i) -> a0 b0 a1 b1 a2 b2, per head
    w = np.array([0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32])
    assert gguf_arch.interleave_rows(w, 2).tolist() == [0, 10, 1, 11, 2, 12, 20, 30, 21, 31, 22, 32]
    from pte_webgpu.export.llm_reference import rotate_half_rows  # the inverse, for llama

    m = np.arange(16 * 3).reshape(16, 3)
    assert (rotate_half_rows(gguf_arch.interleave_rows(m, 2), 2) == m).all()


def test_qwen_weights_are_reordered_and_biases_and_norms_kept(ggufs):
    reader, hp = _hp(ggufs / "qwen2.gguf")
    raw = {t.name: gguf_llama.dequantize(t) for t in reader.tensors}
    got = gguf_llama.arrays(reader, hp)
    interleaved = gguf_arch.interleave_rows
    assert (got["layers.0.attention.wq.weight"] == interleaved(raw["blk.0.attn_q.weight"], 4)).all()
    assert (got["layers.1.attention.wk.bias"] == interleaved(raw["blk.1.attn_k.bias"], 2)).all()
    assert (got["layers.0.attention.wv.bias"] == raw["blk.0.attn_v.bias"]).all()  # v keeps its order
    reader, hp = _hp(ggufs / "qwen3.gguf")
    got = gguf_llama.arrays(reader, hp)
    assert got["layers.1.attention.k_norm_fn.weight"].shape == (32,)


@pytest.mark.parametrize("arch", ["gemma", "mamba"])
def test_an_architecture_not_converted_is_an_unsupported_error_naming_it(tmp_path, arch):
    path = tmp_path / f"{arch}.gguf"
    make_ggufs.write(path, "llama", arch=arch)
    with pytest.raises(UnsupportedError,
                       match=f"'{arch}'.*general.architecture.*llama, qwen2, qwen3, gemma2, gemma3, phi3"):
        _hp(path)


@pytest.mark.parametrize("name", ["gemma2", "gemma3"])
def test_gemma_traits_come_from_its_keys_and_llama_cpps_rules(ggufs, name):
    m = spec.MODELS[name]
    _, hp = _hp(ggufs / f"{name}.gguf")
    keys = m["gguf_keys"]
    assert hp.gemma and hp.sliding_window == keys["attention.sliding_window"]
    assert hp.sliding_pattern == {"gemma2": 2, "gemma3": 6}[name]
    assert hp.attn_scale == pytest.approx(m["head_dim"] ** -0.5)  # below 27B: the head size
    assert (hp.attn_softcap, hp.final_softcap) == (keys.get("attn_logit_softcapping"),
                                                   keys.get("final_logit_softcapping"))
    assert hp.rope_local_base == (10000.0 if name == "gemma3" else None)
    assert hp.rope_linear_factor == m.get("rope_linear")


def test_gemma3_sliding_layers_are_five_of_every_six():
    sliding_layer = gguf_arch.sliding_layer
    hp = type("HP", (), {"sliding_window": 8, "sliding_pattern": 6})
    assert [sliding_layer(hp, i) for i in range(12)] == [True] * 5 + [False] + [True] * 5 + [False]
    hp.sliding_pattern = 2
    assert [sliding_layer(hp, i) for i in range(4)] == [True, False, True, False]


def test_linear_rope_scaling_outside_gemma3_stays_unsupported(tmp_path, monkeypatch):
    monkeypatch.setitem(spec.MODELS, "qwen2", {**spec.MODELS["qwen2"], "rope_linear": 2.0})
    make_ggufs.write(tmp_path / "q.gguf", "qwen2")  # writes rope.scaling.type linear
    with pytest.raises(UnsupportedError, match="RoPE scaling 'linear'.*for 'qwen2'"):
        _hp(tmp_path / "q.gguf")


def _unfused(name):
    """Model ``name``'s weights as drawn before make_ggufs fuses them (the same seed and
    draws: only the write differs), to check the split against."""
    return make_ggufs.weights({**spec.MODELS[name], "arch": "llama"}, spec.VOCAB)


def _stored(name: str, drawn: dict) -> dict:
    """The drawn matrices as the GGUF holds them (family_spec's ggml type, dequantized):
    blocks run along rows, so a fused tensor's rows store as its parts' would."""
    from gguf import GGMLQuantizationType, quants

    kind = GGMLQuantizationType[spec.MODELS[name].get("types", spec.TYPES)["matrices"]]
    return {k: np.asarray(quants.dequantize(quants.quantize(v, kind), kind), np.float32)
            if v.ndim == 2 else v for k, v in drawn.items()}


def test_phi3_fused_tensors_split_into_q_k_v_and_gate_then_up(ggufs):
    reader, hp = _hp(ggufs / "phi3.gguf")
    assert {t.name for t in reader.tensors} >= {"blk.1.attn_qkv.weight", "blk.1.ffn_up.weight"}
    assert not {t.name for t in reader.tensors} & {"blk.0.attn_q.weight", "blk.0.ffn_gate.weight"}
    got, drawn = gguf_llama.arrays(reader, hp), _stored("phi3", _unfused("phi3"))
    interleaved = gguf_arch.interleave_rows
    for i in range(2):
        b, layer = f"blk.{i}.", f"layers.{i}."
        assert (got[layer + "attention.wq.weight"] == interleaved(drawn[b + "attn_q.weight"], 4)).all()
        assert (got[layer + "attention.wk.weight"] == interleaved(drawn[b + "attn_k.weight"], 2)).all()
        assert (got[layer + "attention.wv.weight"] == drawn[b + "attn_v.weight"]).all()
        # the GGUF's ffn_up is gate rows then up rows: w1 (SiLU's input) is the first half
        assert (got[layer + "feed_forward.w1.weight"] == drawn[b + "ffn_gate.weight"]).all()
        assert (got[layer + "feed_forward.w3.weight"] == drawn[b + "ffn_up.weight"]).all()
    assert not [k for k in got if "wqkv" in k or "w13" in k]


@pytest.mark.parametrize("tensor, rows, text", [
    ("attn_qkv", 96, r"\[96, 64\]; q \+ k \+ v need 64 \+ 32 \+ 32 = 128 rows of width 64 "
                     r"\(4 heads, 2 KV heads of 16\)"),
    ("ffn_up", 128, r"\[128, 64\]; gate \+ up need 128 \+ 128 = 256 rows of width 64 "
                    r"\(feed_forward_length 128\)"),
])
def test_a_fused_tensor_of_other_rows_is_a_format_error_naming_it_and_the_sizes(
        tmp_path, monkeypatch, tensor, rows, text):
    name = f"blk.1.{tensor}.weight"
    reader, hp = _hp_with(tmp_path, monkeypatch, "phi3", lambda w: {**w, name: w[name][:rows]})
    with pytest.raises(FormatError, match=text) as e:
        gguf_llama.arrays(reader, hp)
    assert e.value.field == name
    with pytest.raises(FormatError, match=text):  # the split itself checks too
        gguf_llama.split_fused(name, gguf_llama.parameter_name(name, hp),
                               np.zeros((rows, 64), np.float32), hp)


def test_longrope_takes_the_short_factors_within_the_original_context(ggufs):
    _, hp = _hp(ggufs / "phi3_longrope.gguf")
    rope = spec.PHI3_LONGROPE
    assert hp.rope_factors_short == pytest.approx(rope["short_factor"])
    assert hp.rope_factors_long == pytest.approx(rope["long_factor"])
    original = rope["original_max_position_embeddings"]
    assert hp.rope_original_context == original
    # as llama.cpp's converter (and transformers' default) from context 192 / original 64
    assert hp.rope_attn_factor == pytest.approx((1 + np.log(3) / np.log(64)) ** 0.5, rel=1e-6)
    assert gguf_arch.longrope(hp, original) == (hp.rope_factors_short, hp.rope_attn_factor)
    assert gguf_arch.longrope(hp, original + 1) == (hp.rope_factors_long, hp.rope_attn_factor)
    _, plain = _hp(ggufs / "phi3.gguf")
    assert gguf_arch.longrope(plain, 10 ** 6) == (None, 1.0)


def test_one_longrope_factor_set_alone_is_a_format_error_naming_the_other(tmp_path, monkeypatch):
    with pytest.raises(FormatError, match="'rope_factors_long.weight' is missing") as e:
        _hp_with(tmp_path, monkeypatch, "phi3_longrope", lambda w: {
            k: a for k, a in w.items() if k != "rope_factors_long.weight"})
    assert e.value.field == "rope_factors_long.weight"


def test_longrope_factors_outside_phi3_stay_unsupported(tmp_path, monkeypatch):
    reader, hp = _hp_with(tmp_path, monkeypatch, "llama", lambda w: {
        **w, "rope_factors_short.weight": np.ones(8, np.float32)})
    with pytest.raises(UnsupportedError, match="rope_factors_short.weight"):
        gguf_llama.arrays(reader, hp)


def test_a_context_past_phi3s_sliding_window_is_refused_before_torch(ggufs, tmp_path, capsys):
    _, hp = _hp(ggufs / "phi3.gguf")
    gguf_arch.check_sliding_window(hp, spec.MAX_SEQ_LEN)  # within the window: no effect
    out = tmp_path / "p.pte"
    assert cli.main(["convert", "-q", str(ggufs / "phi3.gguf"), "--max-seq-len", "48",
                     "--max-context-len", "49", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "context 49 exceeds the sliding attention window of 48 (phi3.attention.sliding_window)" in err
    assert not out.exists()


@pytest.mark.parametrize("key", ["attention.layer_norm_rms_epsilon", "feed_forward_length",
                                 "block_count"])
def test_a_missing_required_key_is_a_format_error_naming_it(tmp_path, key):
    path = tmp_path / "qwen3.gguf"
    make_ggufs.write(path, "qwen3", drop_key=key)
    with pytest.raises(FormatError, match=f"qwen3.{key}") as e:
        _hp(path)
    assert e.value.field == f"qwen3.{key}"


def _hp_with(tmp_path, monkeypatch, arch, change):
    """(reader, hparams) of ARCH's tiny GGUF written with its tensors ``change``d."""
    weights = make_ggufs.weights
    monkeypatch.setattr(make_ggufs, "weights", lambda m, v: change(weights(m, v)))
    path = tmp_path / f"{arch}.gguf"
    make_ggufs.write(path, arch)
    return _hp(path)


def test_a_missing_tensor_is_a_format_error_naming_it(tmp_path, monkeypatch):
    reader, hp = _hp_with(tmp_path, monkeypatch, "qwen2", lambda w: {
        k: a for k, a in w.items() if k != "blk.1.attn_q.bias"})
    with pytest.raises(FormatError, match="blk.1.attn_q.bias"):
        gguf_llama.arrays(reader, hp)


def test_biases_outside_qwen2_stay_unsupported(tmp_path, monkeypatch):
    reader, hp = _hp_with(tmp_path, monkeypatch, "llama", lambda w: {
        **w, "blk.0.attn_q.bias": np.zeros(64, np.float32)})
    with pytest.raises(UnsupportedError, match="blk.0.attn_q.bias"):
        gguf_llama.arrays(reader, hp)


def test_cli_convert_reports_the_architecture_before_needing_torch(tmp_path, capsys):
    path = tmp_path / "g.gguf"
    make_ggufs.write(path, "llama", arch="gemma")
    assert cli.main(["convert", str(path), "-q", "-o", str(tmp_path / "g.pte")]) == 2
    assert "UnsupportedError: GGUF architecture 'gemma' is not converted yet" in capsys.readouterr().err
    assert not (tmp_path / "g.pte").exists()


@pytest.mark.skipif(importlib.util.find_spec("torch") is not None, reason="torch is installed here")
def test_cli_convert_without_torch_names_the_extra(ggufs, tmp_path, capsys):
    assert cli.main(["convert", str(ggufs / "qwen2.gguf"), "-o", str(tmp_path / "q.pte")]) == 2
    err = capsys.readouterr().err
    assert "qwen2 'tiny qwen2': 2 layers" in err  # progress before the check
    assert "convert needs torch" in err and "pte-webgpu[export]" in err


def test_committed_reference_is_of_the_committed_spec():
    ref = json.loads((FAMILIES / "reference.json").read_text())
    assert set(ref["models"]) == set(spec.MODELS) and ref["new_tokens"] == spec.NEW_TOKENS
    for name, r in ref["models"].items():
        assert {p: v["ids"] for p, v in r["prompts"].items()} == spec.PROMPTS
        assert r["config"]["head_dim"] == spec.MODELS[name]["head_dim"]
        assert r["config"]["tie_word_embeddings"] == spec.MODELS[name]["tied"]


@pytest.mark.parametrize("args, text", [
    (["missing.gguf"], "cannot read missing.gguf: no such file"),
    (["{gguf}", "-o", "out.bin"], "the output's name must end in .pte"),
    (["{gguf}", "--dtype", "int8"], "invalid choice: 'int8'"),
    (["{gguf}", "--max-seq-len", "0"], "must be at least 1"),
    (["{gguf}", "--max-seq-len", "64", "--max-context-len", "32"],
     "need 2 <= max-seq-len (64) <= max-context-len (32)"),
])
def test_cli_convert_argument_errors_are_one_line(ggufs, tmp_path, monkeypatch, capsys, args, text):
    monkeypatch.chdir(tmp_path)
    try:  # usage errors leave through argparse (SystemExit 2), the others through main's return
        code = cli.main(["convert", "-q", *(a.format(gguf=ggufs / "qwen2.gguf") for a in args)])
    except SystemExit as e:
        code = e.code
    err = capsys.readouterr().err
    assert code == 2 and text in err and len(err.strip().splitlines()) == 1, err


_TOOLCHAIN = all(importlib.util.find_spec(m) for m in ("torch", "executorch"))


@pytest.mark.skipif(not _TOOLCHAIN, reason="needs the [export] extra (torch, executorch)")
def test_convert_remakes_the_committed_program_byte_for_byte(ggufs, tmp_path):
    # the export venv only (not CI): the committed fixture is what `convert` makes today
    out = tmp_path / "qwen2-fp16.pte"
    assert cli.main(["convert", "-q", str(ggufs / "qwen2.gguf"), "--max-seq-len",
                     str(spec.MAX_SEQ_LEN), "--dtype", "fp16", "-o", str(out)]) == 0
    assert out.read_bytes() == (FAMILIES / "qwen2-fp16.pte").read_bytes()
    assert json.loads((tmp_path / "qwen2-fp16.export.json").read_text())["hparams"]["qkv_bias"]


def test_q4_of_a_vocab_that_is_not_a_multiple_of_8_is_refused_naming_it(ggufs):
    import dataclasses

    from pte_webgpu.export import convert

    _, hp = _hp(ggufs / "qwen2.gguf")
    convert._check_q4_shapes(hp)  # 384 words, width 64, ...: fine
    with pytest.raises(UnsupportedError, match="--dtype q4 needs .* vocab_size 383$"):
        convert._check_q4_shapes(dataclasses.replace(hp, vocab_size=383))
    with pytest.raises(UnsupportedError, match="feed_forward_length 100, feed_forward_length 100 "):
        convert._check_q4_shapes(dataclasses.replace(hp, hidden_dim=100))
