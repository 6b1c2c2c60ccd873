"""The 4-bit weight linears natively (wgpu; lavapipe here): hand-built graphs of odd shapes
(N not a multiple of 8, K not a multiple of 8, groups of 4 and 16, 1 and 37 rows, bias)
with every variant forced, float16 activations, qcs4w, the stacked (fused) form, and the
load checks, against a float64 numpy reference of the dequantized product; then the
quantized tiny-llama programs exported by ExecuTorch (tests/fixtures/quant) step by step
against eager torch of the same quantized model."""

import json
from pathlib import Path

import numpy as np
import pytest
from pte_webgpu.errors import FormatError, UnsupportedError
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import Graph
from pte_webgpu.runtime import fusion
from pte_webgpu.runtime.storage import Storage

from tests.support.decoder_check import decoder_report
from tests.support.gpu_thread import run_sync
from tests.support.graph import G, rand
from tests.support.q4_graphs import (
    Q4GSW, QCS4W, pack_q4gsw, pack_qcs4w, q4gsw_graph, quantize, reference, scales_rows)

VARIANTS = ("dot", "gemv-64", "gemv-4", "gemvsg-8", "gemvsg-32", "tiled")
# (M, N, K, group, bias)
SHAPES = [(1, 20, 48, 16, True), (37, 20, 48, 16, True), (1, 10, 36, 4, False),
          (37, 10, 36, 4, True), (5, 96, 128, 32, False), (70, 33, 64, 32, True)]
QUANT = Path(__file__).parents[1] / "fixtures" / "quant"


def _forced(v):
    return {"variants": {"linear_q4": v}} if v else None


@pytest.mark.parametrize("m,n,k,group,bias", SHAPES)
@pytest.mark.parametrize("variant", VARIANTS + (None,))
def test_q4gsw_every_variant(device, m, n, k, group, bias, variant):
    _check_product(device, m, n, k, group, bias, variant, seed=m)


def _check_product(device, m, n, k, group, bias, variant, seed):
    """One q4gsw linear with ``variant`` forced against the float64 reference."""
    w, s = quantize(n, k, group, seed=seed)
    x = rand(m, k)
    b = rand(n) if bias else None
    g, out = q4gsw_graph(x, w, s, group, b, options=_forced(variant))
    (y,) = g.run(device, out)
    want = reference(x, w, s, b)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-5 * np.abs(want).max())


# the wide decode form (K a multiple of 32): per-chunk and per-word scales, N not a multiple
# of its columns per workgroup, one row; lavapipe's subgroups of 8 take its tree sums, a
# GPU's subgroup of 32 its butterflies
WIDE = ("wide-4-1", "wide-8-2", "wide-16-4", "wide-32-3")
WIDE_SHAPES = [(1, 20, 64, 32, True), (1, 33, 96, 8, True), (1, 96, 128, 16, False),
               (1, 7, 32, 32, False), (1, 50, 256, 64, True), (1, 9, 1024, 32, False)]


@pytest.mark.parametrize("m,n,k,group,bias", WIDE_SHAPES)
@pytest.mark.parametrize("variant", WIDE)
def test_q4gsw_wide_forms(device, m, n, k, group, bias, variant):
    _check_product(device, m, n, k, group, bias, variant, seed=m + 5)


# the keep form (the input held in registers, K split over L lanes): one subgroup or
# several (L > 32), one to four chunks per lane with lanes past the row, N not a multiple
# of the columns per workgroup; SmolLM2's K of 576 and 1536 and K = 4096
KEEP = ("keep-4-32-4", "keep-8-32-8", "keep-16-8-4", "keep-32-4-4", "keep-32-16-8",
        "keep-64-8-4", "keep-128-16-8")
KEEP_SHAPES = [(1, 20, 64, 32, True), (1, 33, 96, 8, True), (1, 50, 256, 64, True),
               (1, 9, 1024, 32, False), (1, 37, 576, 32, True), (1, 21, 1536, 128, False)]


@pytest.mark.parametrize("m,n,k,group,bias", KEEP_SHAPES)
@pytest.mark.parametrize("variant", KEEP)
def test_q4gsw_keep_forms(device, m, n, k, group, bias, variant):
    if k // 32 > 4 * int(variant.split("-")[1]):
        pytest.skip(f"{variant}: K = {k} is over 4 chunks per lane")
    _check_product(device, m, n, k, group, bias, variant, seed=m + 7)


@pytest.mark.parametrize("variant", ["keep-32-8-8", "keep-64-4-4", "keep-128-16-8"])
def test_q4gsw_keep_k4096(device, variant):
    _check_product(device, 1, 13, 4096, 32, True, variant, seed=11)


@pytest.mark.parametrize("m,k,group,why", [(1, 48, 16, "multiple of 32"),
                                           (1, 64, 4, "multiple of 32"), (2, 64, 32, "one row")])
def test_q4gsw_wide_refuses_what_it_cannot_read(device, m, k, group, why):
    """K not a multiple of 32, groups smaller than a word, more than one row: forcing it
    is a typed error."""
    w, s = quantize(20, k, group)
    g, out = q4gsw_graph(rand(m, k), w, s, group, options=_forced("wide-8-2"))
    with pytest.raises(UnsupportedError, match=f"wide-8-2.*{why}"):
        g.run(device, out)


@pytest.mark.parametrize("m", [1, 37])
@pytest.mark.parametrize("scales", [dtypes.FLOAT32, dtypes.FLOAT16])
def test_q4gsw_float16_activations(device, m, scales):
    """force_fp16 programs on an adapter with shader-f16: f16 input, bias and output, the
    scales float32 or float16 (then the reference takes them rounded to f16 too)."""
    n, k, group = 20, 48, 16
    w, s = quantize(n, k, group, seed=3)
    if scales is dtypes.FLOAT16:
        s = s.astype(np.float16).astype(np.float32)
    x = rand(m, k).astype(np.float16).astype(np.float32)
    b = rand(n).astype(np.float16).astype(np.float32)
    g, out = q4gsw_graph(x, w, s, group, b, storage=Storage(half=True), scales_dtype=scales)
    (y,) = g.run(device, out)
    want = reference(x, w, s, b)
    np.testing.assert_allclose(y, want, rtol=2e-3, atol=2e-3 * np.abs(want).max())


@pytest.mark.parametrize("m,n,k", [(1, 12, 20), (9, 12, 20), (3, 16, 64)])
@pytest.mark.parametrize("variant", ("dot", "gemv-4", "tiled", None))
def test_qcs4w(device, m, n, k, variant):
    rng = np.random.default_rng(m + n + k)
    w = rng.integers(-8, 8, (n, k)).astype(np.int8)
    s = rng.uniform(0.01, 0.2, (n, 1)).astype(np.float32)
    x = rand(m, k)
    g = G(options=_forced(variant))
    xi, out = g.input(x), g.tensor((m, n))
    g.op(QCS4W, xi, g.const(pack_qcs4w(w), dtypes.UINT8), g.const(s[:, 0]), out)
    (y,) = g.run(device, out)
    want = reference(x, w, s)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-5 * np.abs(want).max())


@pytest.mark.parametrize("m", [1, 37])
@pytest.mark.parametrize("parts", [2, 3])
def test_stacked_q4gsw_linears(device, m, parts):
    """Linears sharing an input (q/k/v, gate/up) run as one fused dispatch, each output
    right; N of 20 and 12 (scales padded to 4 differ from N) and a bias."""
    k, group, widths = 48, 16, (20, 12, 32)[:parts]
    x = rand(m, k)
    g = G()
    xi = g.input(x)
    outs, wants = [], []
    for i, n in enumerate(widths):
        w, s = quantize(n, k, group, seed=10 + i)
        b = rand(n)
        out = g.tensor((m, n))
        g.op(Q4GSW, xi, g.const(pack_q4gsw(w), dtypes.UINT8), g.const(scales_rows(s)),
             g.int(group), g.const(b), out)
        outs.append(out)
        wants.append(reference(x, w, s, b))
    ys = g.run(device, *outs)
    for y, want in zip(ys, wants):
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-5 * np.abs(want).max())
    # the fused form ran (not the linears one by one)
    rewritten = fusion.fuse(Graph(g.values, g.ops, g.inputs, outs, g.constants),
                            Storage().nbytes, 1 << 27)
    assert [op.name for op in rewritten.ops] == ["pte_webgpu.fused_linear_q4gsw"]


@pytest.mark.parametrize("parts", [2, 3])
@pytest.mark.parametrize("half", [False, True])
@pytest.mark.parametrize("variant", ["wide-8-2", "keep-8-16-4", "keep-64-16-8"])
def test_stacked_q4gsw_wide(device, parts, half, variant):
    """The wide and keep forms over stacked linears (their scales relaid by column across
    the parts, each part's padded to 4) and with float16 activations (f16 scales)."""
    k, group, widths = 64, 32, (20, 12, 36)[:parts]
    x = rand(1, k)
    if half:
        x = x.astype(np.float16).astype(np.float32)
    storage = Storage(half=True) if half else None
    act = dtypes.FLOAT16 if half else dtypes.FLOAT32
    g = G(**({"storage": storage} if storage else {}), options=_forced(variant))
    xi = g.input(x, act)
    outs, wants = [], []
    for i, n in enumerate(widths):
        w, s = quantize(n, k, group, seed=20 + i)
        if half:
            s = s.astype(np.float16).astype(np.float32)
        b = rand(n).astype(np.float16).astype(np.float32) if half else rand(n)
        out = g.tensor((1, n), dtype=act)
        g.op(Q4GSW, xi, g.const(pack_q4gsw(w), dtypes.UINT8), g.const(scales_rows(s), act),
             g.int(group), g.const(b, act), out)
        outs.append(out)
        wants.append(reference(x, w, s, b))
    ys = g.run(device, *outs)
    tol = 2e-3 if half else 1e-5
    for y, want in zip(ys, wants):
        np.testing.assert_allclose(y, want, rtol=tol, atol=2 * tol * np.abs(want).max())


def _bad_graph(w_packed, scales, group, k=48, n=20):
    g = G()
    out = g.tensor((1, n))
    g.op(Q4GSW, g.input(rand(1, k)), g.const(w_packed, dtypes.UINT8), g.const(scales),
         g.int(group), g.null(), out)
    return g, out


def _good(n=20, k=48, group=16):
    w, s = quantize(n, k, group)
    return pack_q4gsw(w), scales_rows(s)


@pytest.mark.parametrize("case,match", [
    ("short weights", r"linear_q4gsw.*packed weights \[20, 16\] are shorter than K = 48"),
    ("short scales", r"linear_q4gsw.*scales \[2, 20\] are shorter.*\[3, 20\]"),
    ("narrow scales", r"linear_q4gsw.*scales \[3, 16\] are shorter"),
    ("group 0", r"linear_q4gsw.*group size 0 must be positive and divide K = 48"),
    ("group 20", r"linear_q4gsw.*group size 20 .* divide K = 48"),
    ("nan scale", r"linear_q4gsw.*scales \[3, 20\].*scale 5 is nan"),
    ("inf scale", r"linear_q4gsw.*scales \[3, 20\].*scale 7 is -inf"),
])
def test_q4gsw_load_checks(device, case, match):
    w, s = _good()
    group = 16
    if case == "short weights":
        w = w[:, :16]
    elif case == "short scales":
        s = s[:2]
    elif case == "narrow scales":
        s = s[:, :16]
    elif case.startswith("group"):
        group = int(case.split()[1])
    elif case == "nan scale":
        s = s.copy()
        s.flat[5] = np.nan
    else:
        s = s.copy()
        s.flat[7] = -np.inf
    g, out = _bad_graph(w, s, group)
    with pytest.raises(FormatError, match=match):
        g.run(device, out)


def test_weight_rows_not_whole_words_are_refused(device):
    """A packer that padded K to 2 instead of 8: a typed error naming op and shape."""
    w, s = quantize(20, 36, 4)
    packed = pack_q4gsw(w)[:, :18]  # 36 weights in 18 bytes per row
    g, out = _bad_graph(packed, scales_rows(s), 4, k=36)
    with pytest.raises(UnsupportedError, match=r"linear_q4gsw.*rows of 18 bytes.*\[20, 18\]"):
        g.run(device, out)


def test_qcs4w_load_checks(device):
    g = G()
    out = g.tensor((1, 12))
    g.op(QCS4W, g.input(rand(1, 20)), g.const(np.zeros((12, 8), np.uint8), dtypes.UINT8),
         g.const(np.ones(12, np.float32)), out)
    with pytest.raises(FormatError, match=r"linear_qcs4w.*\[12, 8\] hold K = 16.*K = 20"):
        g.run(device, out)
    g = G()
    out = g.tensor((1, 12))
    g.op(QCS4W, g.input(rand(1, 20)), g.const(np.zeros((12, 10), np.uint8), dtypes.UINT8),
         g.const(np.full(12, np.nan, np.float32)), out)
    with pytest.raises(FormatError, match=r"linear_qcs4w.default scales \[12\]: scale 0 is nan"):
        g.run(device, out)


def _fixtures():
    index = QUANT / "index.json"
    if not index.exists():
        return []
    return [(name, e) for name, e in sorted(json.loads(index.read_text()).items())
            # 4-bit linears only: quantized embeddings are other ops' tests
            if e.get("qmode") == "4w" and not e.get("embedding_quantize")
            and (QUANT / f"{name}.pte").exists()]


@pytest.mark.parametrize("name,entry", _fixtures(), ids=[n for n, _ in _fixtures()])
def test_quantized_llama_steps_match_eager_torch(runtime, name, entry):
    report = run_sync(decoder_report(runtime, (QUANT / f"{name}.pte").read_bytes(),
                                     (QUANT / f"{name}.npz").read_bytes()))
    assert "unsupported" not in report, report.get("unsupported")
    tol = entry["tolerance"]
    assert len(report["errors"]) >= 6
    assert max(report["errors"]) <= tol, report["errors"]
    assert report["argmax"] == report["want_argmax"]
    assert report["reset_error"] <= tol
    assert {"gemvsg", "dot", "tiled", "gemv", "wide", "cols"} & set(report["linear_variants"])


@pytest.mark.parametrize("variant", VARIANTS)
def test_padding_past_k_reads_no_input(device, variant):
    """K = 36 fills 4.5 words: the padded weights are zero, but the next row's input
    must not be read there (an inf would make row 0 NaN)."""
    n, k, group = 10, 36, 4
    w, s = quantize(n, k, group)
    x = rand(3, k)
    x[1, 0] = np.inf
    x[2, :4] = np.nan
    g, out = q4gsw_graph(x, w, s, group, options=_forced(variant))
    (y,) = g.run(device, out)
    want = reference(x, w, s)
    assert np.isfinite(y[0]).all()
    np.testing.assert_allclose(y[0], want[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(want))


QCS4W_FIXTURES = sorted(json.loads((Path(__file__).parents[1] / "fixtures" / "qcs4w" /
                                    "index.json").read_text()))


@pytest.mark.parametrize("name", QCS4W_FIXTURES)
def test_exported_qcs4w_matches_eager_torch(runtime, name):
    """et_vk.linear_qcs4w as ExecuTorch's PT2E VulkanQuantizer (weight-only, 4 bit) emits
    it, K = 20 included (rows of 10 bytes, repacked at load), against eager torch of the
    converted model."""
    folder = Path(__file__).parents[1] / "fixtures" / "qcs4w"
    arrays = np.load(folder / f"{name}.npz")
    program = run_sync(runtime.load_program((folder / f"{name}.pte").read_bytes()))
    try:
        method = program.load_method("forward")
        assert any(k["op"] == QCS4W for k in method.kernels)
        (out,) = run_sync(method.execute([arrays["in0"]]))
    finally:
        program.close()
    want = arrays["out0"]
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-5 * np.abs(want).max())


@pytest.mark.skipif(not (QUANT / "llama_4w_g32_dynamic.pte").exists(),
                    reason="tests/fixtures/quant not built")
def test_stacked_q4_linears_in_an_exported_llama():
    """Fusion on and off (runtime/fusion_q4.py): q/k/v and gate/up of each layer run as one
    dispatch each, the logits as without fusion."""
    from tests.support.fusion_check import fusion_report, native_runtime

    name = "llama_4w_g32_dynamic"
    args = json.loads((QUANT / "index.json").read_text())[name]["model_args"]
    r = run_sync(fusion_report(native_runtime, (QUANT / f"{name}.pte").read_bytes(),
                               args["vocab_size"], 5, 3))
    layers = args["n_layers"]
    fused = r["fused_ops"]["fused"]

    def stacked(parts):  # with the norm before them folded in or not
        return sum(c for what, c in fused.items() if what.endswith(f"{parts} q4 linears"))
    assert stacked(3) == stacked(2) == layers, fused
    assert r["dispatches"]["unfused"] - r["dispatches"]["fused"] >= 3 * layers, r["dispatches"]
    assert max(r["diffs"]) <= 1e-6 * r["scale"], r["diffs"]
