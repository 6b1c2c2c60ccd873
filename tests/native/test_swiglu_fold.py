"""SwiGLU folded into the linear after it (runtime/fusion_gated.py, ops/gated_linear.py):
the matrix-vector forms compute silu(gate) * up as they load it, with the chain kernel's
own steps and roundings, so the outputs equal those of the chain's own dispatch exactly
in float32 (fusion_gated.ENABLED off: every other fold as it was); the other forms run the chain's
kernel first, inside the same op. The exported llama decoders (a prefill and decode
steps, GPU rules on lavapipe: one dispatch a layer fewer per decode step) and hand-built
graphs with every matrix-vector form forced, float32 and float16."""

import numpy as np
import pytest
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import Graph
from pte_webgpu.ops import matmul_choice
from pte_webgpu.runtime import fusion, fusion_gated
from pte_webgpu.runtime.storage import WIDE, Storage

from tests.support.decoders import DECODERS, INDEX
from tests.support.fusion_check import fusion_report
from tests.support.graph import G
from tests.support.gpu_thread import run_sync

DYNAMIC = sorted(n for n in INDEX if n.startswith("llama_dynamic_rope"))


def _decoder_report(name, monkeypatch, steps=3, **options):
    """fusion_report with the two builds: this fold on, and off (the rest fused alike)."""
    import pte_webgpu

    args = INDEX[name]["model_args"]
    pte = (DECODERS / f"{name}.pte").read_bytes()

    async def make(fuse):
        monkeypatch.setattr(fusion_gated, "ENABLED", fuse["fuse"])
        return await pte_webgpu.Runtime.create("native", options=dict(options, fuse=True))
    return run_sync(fusion_report(make, pte, args["vocab_size"], 20, steps))


@pytest.mark.parametrize("gemv_rows", [None, 8])
@pytest.mark.parametrize("name", DYNAMIC)
def test_decoder_outputs_equal_and_a_dispatch_a_layer_goes(name, gemv_rows, monkeypatch):
    """Lavapipe taken for a GPU: a 20-row prefill (the matrix-vector form for up to 256
    rows, or with the limit at 8 rows the tiles) runs the chain's own dispatch first;
    decode steps fold it. Logits equal bit for bit; each decode step one dispatch a layer
    fewer."""
    monkeypatch.setattr(matmul_choice, "is_cpu", lambda traits: False)
    if gemv_rows:
        monkeypatch.setattr(matmul_choice, "GPU_GEMV_ROWS", gemv_rows)
    report = _decoder_report(name, monkeypatch)
    assert report["exact"], report["diffs"]
    layers = INDEX[name]["model_args"]["n_layers"]
    counts = report["dispatches"]
    assert counts["unfused"] - counts["fused"] == layers, counts
    assert report["fused_ops"]["fused"]["3 element-wise ops + linear + residual add"] == layers
    assert "3 element-wise ops" not in report["fused_ops"]["fused"]


@pytest.mark.parametrize("name", DYNAMIC)
def test_decoder_in_the_cpu_rule_keeps_the_chain_dispatch(name, monkeypatch):
    """Where the rule is a CPU adapter's (lavapipe as it is), no form takes the prologue
    (every workgroup's redone sigmoids would be work on the same cores): the chain's
    dispatch runs inside the op, the outputs and the count as without the fold."""
    monkeypatch.setattr(matmul_choice, "is_cpu", lambda traits: True)  # on any adapter
    report = _decoder_report(name, monkeypatch, steps=2)
    assert report["exact"], report["diffs"]
    assert report["dispatches"]["unfused"] == report["dispatches"]["fused"]


def _mlp(m, k, n, dtype, storage, options, residual=True, bias=False, seed=0, views=True):
    """gate, up [1, m, k] -> sigmoid, mul, mul (as exported) -> view [m, k] -> linear
    [n, k] (+ residual)."""
    rng = np.random.default_rng(seed)
    np_t = np.float16 if dtype.name == "float16" else np.float32

    def rand(*shape, scale=1.0):
        return (rng.standard_normal(shape) * scale).astype(np_t)

    g = G(storage, options)
    gate = g.input(rand(1, m, k, scale=3.0), dtype)
    up = g.input(rand(1, m, k), dtype)
    s = g.op("aten.sigmoid.default", gate, g.tensor((1, m, k), dtype=dtype))
    t = g.op("aten.mul.Tensor", gate, s, g.tensor((1, m, k), dtype=dtype))
    h = g.op("aten.mul.Tensor", t, up, g.tensor((1, m, k), dtype=dtype))
    if views:
        h = g.op("aten.view_copy.default", h, g.ints([m, k]), g.tensor((m, k), dtype=dtype))
    lin = g.op("aten.linear.default", h, g.const(rand(n, k, scale=0.2), dtype),
               g.const(rand(n), dtype) if bias else g.null(), g.tensor((m, n), dtype=dtype))
    if residual:
        r = g.input(rand(m, n), dtype)
        lin = g.op("aten.add.Tensor", r, lin, g.int(1), g.tensor((m, n), dtype=dtype))
    return g, [lin]


def _both(device, monkeypatch, *args, **kw):
    """The outputs with the fold and without it, and the steps (dispatches and copies)
    each recorded."""
    got, steps = {}, {}
    for enabled in (True, False):
        monkeypatch.setattr(fusion_gated, "ENABLED", enabled)
        g, outs = _mlp(*args, **kw)
        got[enabled] = [np.asarray(a) for a in g.run(device, *outs)]
        steps[enabled] = g.steps
    return got, steps


GEMV = [None, "gemv4-32x1", "gemv4-4x4", "gemvsg4-32x2", "gemv4-64x4x4", "gemv8-32x2x4",
        "gemvsg8-32x4x2", "gemv4-32x1g4"]


def _same(fold, chain, half: bool) -> None:
    """float32: bit for bit. float16: a GPU compiler may round the chain's f16 steps
    differently inside another kernel (an H100 did), so within a few f16 ulps of the
    output's scale; a fold that drops or misplaces a step misses by O(1)."""
    if not half:
        np.testing.assert_array_equal(fold, chain)
        return
    scale = float(np.abs(chain.astype(np.float64)).max()) or 1.0
    np.testing.assert_allclose(fold.astype(np.float64), chain.astype(np.float64), rtol=0,
                               atol=8e-3 * scale)


@pytest.mark.parametrize("variant", GEMV)
@pytest.mark.parametrize("m", [1, 3, 6])
@pytest.mark.parametrize("half", [False, True])
def test_every_matrix_vector_form_equals_the_chain(device, monkeypatch, variant, m, half):
    if half and "shader-f16" not in device.info.features:
        pytest.skip("the adapter has no shader-f16")
    if variant:
        why = matmul_choice.supported(matmul_choice.parse(variant), device.info)
        if why:
            pytest.skip(why)
    else:  # the GPU rule picks a matrix-vector form for these rows
        monkeypatch.setattr(matmul_choice, "is_cpu", lambda traits: False)
    storage, dtype = (Storage(half=True), dtypes.FLOAT16) if half else (WIDE, dtypes.FLOAT32)
    options = {"variants": {"matmul": variant}} if variant else {}
    for residual, bias, k in ((True, False, 64), (False, True, 40), (True, True, 24)):
        got, steps = _both(device, monkeypatch, m, k, 20, dtype, storage, options, residual,
                           bias, seed=m * 10 + k)
        _same(got[True][0], got[False][0], half)
        assert steps[True] == steps[False] - 1, steps  # the chain's dispatch is gone


@pytest.mark.parametrize("variant", [None, "mm4-8x8", "tiled", "dot"])
def test_a_tile_form_runs_the_chain_first(device, monkeypatch, variant):
    """Many rows (a prefill): the tiles read the chain's output, written by its own
    dispatch recorded inside the op."""
    monkeypatch.setattr(matmul_choice, "is_cpu", lambda traits: False)
    options = {"variants": {"matmul": variant}} if variant else {}
    got, steps = _both(device, monkeypatch, 37, 48, 24, dtypes.FLOAT32, WIDE, options)
    np.testing.assert_array_equal(got[True][0], got[False][0])
    assert steps[True] == steps[False], steps  # the chain's dispatch, inside the op
    assert np.isfinite(got[True][0]).all()


def test_the_op_reference_agrees(device):
    """The op's CPU reference (the chain rounded per step, then the linear in float64)
    against the GPU's fold."""
    from pte_webgpu.ops import cpu_reference as cpu
    from pte_webgpu.ops.registry import find

    g, outs = _mlp(3, 16, 8, dtypes.FLOAT32, WIDE, {}, bias=True)
    fused = fusion.fuse(Graph(g.values, g.ops, g.inputs, outs, g.constants), WIDE.nbytes, 1 << 27)
    assert [op.name for op in fused.ops] == ["pte_webgpu.gated_linear"]
    feeds = dict(zip(g.inputs, g.feeds))

    def read(vid):
        t = fused.values[vid]
        if vid in feeds:
            a = feeds[vid]
        else:  # a constant: its bytes in the graph's blob
            ref = g.constants[t.constant_id]
            a = np.frombuffer(bytes(g.blob[ref.offset:ref.offset + ref.length]), np.float32)
        return cpu.Array(tuple(t.shape), np.asarray(a, np.float64).ravel().tolist())
    op = fused.ops[0]
    h, out = find(op.name).reference(read, fused.values, op.args)
    got = np.asarray(g.run(device, *outs)[0]).ravel()
    np.testing.assert_allclose(got, out, rtol=1e-5, atol=1e-5 * np.abs(out).max())


def _fused_names(g, outs, keep=()):
    graph = Graph(g.values, g.ops, g.inputs, list(outs) + list(keep), g.constants)
    return [op.name for op in fusion.fuse(graph, WIDE.nbytes, 1 << 27).ops]


def test_only_swiglu_read_by_one_linear_folds():
    g, outs = _mlp(2, 8, 4, dtypes.FLOAT32, WIDE, {})
    assert _fused_names(g, outs) == ["pte_webgpu.gated_linear"]
    g, outs = _mlp(2, 8, 4, dtypes.FLOAT32, WIDE, {}, residual=False, views=False)
    assert _fused_names(g, outs) == ["pte_webgpu.gated_linear"]
    # the chain's output read by something else too: the chain stays a dispatch
    g, outs = _mlp(2, 8, 4, dtypes.FLOAT32, WIDE, {}, views=False)
    h = next(op.args[-1] for op in g.ops if op.name == "aten.linear.default")
    chain_out = next(op.args[0] for op in g.ops if op.name == "aten.linear.default")
    assert h != chain_out
    assert "pte_webgpu.gated_linear" not in _fused_names(g, outs, keep=[chain_out])
    # sigmoid(g) * up (no gate factor): not SwiGLU, left as the chain
    g = G()
    a, b = g.input(np.ones((2, 8), np.float32)), g.input(np.ones((2, 8), np.float32))
    s = g.op("aten.sigmoid.default", a, g.tensor((2, 8)))
    t = g.op("aten.mul.Tensor", s, b, g.tensor((2, 8)))
    out = g.op("aten.linear.default", t, g.const(np.ones((4, 8), np.float32)), g.null(),
               g.tensor((2, 4)))
    assert _fused_names(g, [out]) == ["pte_webgpu.fused_elementwise", "aten.linear.default"]
