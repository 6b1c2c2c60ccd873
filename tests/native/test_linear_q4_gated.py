"""SwiGLU folded into the 4-bit linear after it (runtime/fusion_gated.py,
ops/linear_q4_gated.py) natively: the one-row forms (wide, keep: GPUs with subgroups)
and the gemv forms (outside the CPU rule) compute silu(gate) * up as they load the row,
with the chain kernel's own steps and roundings; the others run the chain's own kernel
first, inside the op. Hand-built graphs (a plain linear, one with Q4_1-style offsets,
each with and without the residual add), every form forced, against float64 of the
f32-rounded chain and against the unfused build; an exported 4-bit llama."""

import numpy as np
import pytest
from pte_webgpu.model.graph import Graph
from pte_webgpu.ops.linear_q4_choice import choose
from pte_webgpu.runtime import fusion, fusion_gated
from pte_webgpu.runtime.storage import Storage

from tests.native.test_linear_q4_offsets import _offset_linear
from tests.native.test_linear_q4_residual import _linear
from tests.support.graph import G

GATED_Q4 = "pte_webgpu.gated_linear_q4gsw"
FORMS = ("dot", "gemv-64", "gemvsg-32", "tiled", "wide-8-2", "wide-32-1", "keep-32-8-8",
         "keep-128-8-4", "keep-8-16-4", None)


def _swiglu64(gate, up):
    """The chain as its kernel rounds it: each step to float32."""
    g32 = gate.astype(np.float32)
    s = (1.0 / (1.0 + np.exp(-g32.astype(np.float64)))).astype(np.float32)
    return ((g32 * s).astype(np.float32) * up.astype(np.float32)).astype(np.float64)


def _graph(variant, m, k, n, offsets, residual, seed=0):
    rng = np.random.default_rng(seed)
    gate = (rng.standard_normal((m, k)) * 3).astype(np.float32)
    up = rng.standard_normal((m, k)).astype(np.float32)
    g = G(options={"variants": {"linear_q4": variant}} if variant else None)
    gi, ui = g.input(gate), g.input(up)
    s = g.op("aten.sigmoid.default", gi, g.tensor((m, k)))
    t = g.op("aten.mul.Tensor", gi, s, g.tensor((m, k)))
    h = g.op("aten.mul.Tensor", t, ui, g.tensor((m, k)))
    make = _offset_linear if offsets else _linear
    out, weight, b = make(g, h, m, k, n, 32, seed + k, not offsets)
    want = _swiglu64(gate, up) @ weight.T + (b if b is not None else 0)
    if residual:
        r = rng.standard_normal((m, n)).astype(np.float32)
        out = g.op("aten.add.Tensor", g.input(r), out, g.int(1), g.tensor((m, n)))
        want = want + r
    return g, out, want


def _fused(g, outs):
    return [op.name for op in fusion.fuse(Graph(g.values, g.ops, g.inputs, outs, g.constants),
                                          Storage().nbytes, 1 << 27).ops]


def _close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=3e-5 * np.abs(want).max())


@pytest.mark.parametrize("variant", FORMS)
@pytest.mark.parametrize("offsets,residual", [(False, False), (True, False), (False, True),
                                              (True, True)])
@pytest.mark.parametrize("m,k", [(1, 64), (1, 576), (5, 96)])
def test_gated_q4_every_form(device, variant, offsets, residual, m, k):
    if variant and variant.startswith(("wide", "keep")) and m > 1:
        pytest.skip("the wide and keep forms take one row")
    g, out, want = _graph(variant, m, k, 40, offsets, residual, seed=m + k)
    assert _fused(g, [out]) == [GATED_Q4]  # the chain, the linear (and its offset ops, add)
    _close(g.run(device, out)[0], want)
    # the one-row and gemv forms take the prologue: one dispatch; the others the chain's
    # own too, as do the gemv forms where the rule picked them for a CPU adapter
    form = variant or choose(device.info, m, 40, k, group=32).name
    takes = form.startswith(("wide", "keep")) or variant and form.startswith("gemv") \
        or form.startswith("gemv") and not device.info.traits.is_cpu
    assert g.steps == (1 if takes else 2)


@pytest.mark.parametrize("variant", ["keep-32-8-8", "wide-8-2", "gemv-64", "gemvsg-32", None])
def test_folded_equals_the_chain(device, variant, monkeypatch):
    """With this fold off (the offsets and the residual folded alike) the chain's kernel
    writes its output and the linear reads it: the same numbers (the prologue rounds each
    step as the chain's kernel does; bit for bit on lavapipe, while an H100's compiler
    contracts the keep form's arithmetic around the inlined chain differently: within
    1e-5 of the output's scale there, where a dropped or misplaced step misses by O(1))."""
    got = {}
    for enabled in (True, False):
        monkeypatch.setattr(fusion_gated, "ENABLED", enabled)
        g, out, want = _graph(variant, 1, 576, 64, True, True, seed=5)
        got[enabled] = np.asarray(g.run(device, out)[0])
        _close(got[enabled], want)
    scale = float(np.abs(got[False]).max())
    np.testing.assert_allclose(got[True], got[False], rtol=0, atol=1e-5 * scale)


def test_the_fold_off_keeps_the_chain(monkeypatch):
    monkeypatch.setattr(fusion_gated, "ENABLED", False)
    g, out, _ = _graph(None, 1, 64, 16, False, True)
    names = _fused(g, [out])
    assert GATED_Q4 not in names and "pte_webgpu.fused_elementwise" in names


def test_chain_with_another_reader_is_left_alone():
    g, out, _ = _graph(None, 1, 64, 16, False, False)
    h = next(op.args[-1] for op in g.ops if op.name == "aten.mul.Tensor"
             and op.args[-1] in next(o.args for o in g.ops if o.name.startswith("et_vk.linear")))
    extra = g.op("aten.neg.default", h, g.tensor((1, 64)))
    assert GATED_Q4 not in _fused(g, [out, extra])


def test_the_op_reference_agrees(device):
    """The op's CPU reference (the chain rounded per step, then the 4-bit linear with its
    residual in float64) against the GPU's result."""
    from pte_webgpu.ops import cpu_reference as cpu
    from pte_webgpu.ops.registry import find

    g, out, want = _graph(None, 1, 64, 24, True, True, seed=2)
    fused = fusion.fuse(Graph(g.values, g.ops, g.inputs, [out], g.constants),
                        Storage().nbytes, 1 << 27)
    assert [op.name for op in fused.ops] == [GATED_Q4]
    feeds = dict(zip(g.inputs, g.feeds))

    def read(vid):
        t = fused.values[vid]
        if vid in feeds:
            a = np.asarray(feeds[vid], np.float64)
        else:  # a constant: its bytes in the graph's blob
            ref = g.constants[t.constant_id]
            raw = bytes(g.blob[ref.offset:ref.offset + ref.length])
            if t.dtype.name == "uint8":  # packed nibbles, read as integers
                return cpu.Array(tuple(t.shape), np.frombuffer(raw, np.uint8).tolist())
            a = np.frombuffer(raw, np.float32)
        return cpu.Array(tuple(t.shape), np.asarray(a, np.float64).ravel().tolist())
    op = fused.ops[0]
    h, ref = find(op.name).reference(read, fused.values, op.args)
    _close(np.asarray(ref), want.ravel())
    _close(np.asarray(g.run(device, out)[0]).ravel(), np.asarray(ref))


@pytest.mark.parametrize("name", ["llama_4w_g32_dynamic", "llama_4w_g32_dynamic_fp16"])
def test_exported_q4_llama_folds_with_the_gpu_rule(name, monkeypatch):
    """An exported 4-bit llama (ExecuTorch's `-qmode 4w`) with the GPUs' gemv form forced
    (lavapipe's rule would take its CPU forms): a 20-row prefill, then decode steps whose
    down projections compute the chain as they load it. Logits equal the fold switched
    off bit for bit; each decode step one dispatch a layer fewer."""
    import json

    import pte_webgpu
    from pte_webgpu.ops.linear_q4_choice import VARIANTS

    from tests.support.fusion_check import fusion_report
    from tests.support.gpu_thread import run_sync
    from tests.support.quant_fixtures import QUANT

    monkeypatch.setenv(VARIANTS.env_var, "gemv-64")
    entry = json.loads((QUANT / "index.json").read_text())[name]
    args = entry["model_args"]

    async def make(fuse):
        monkeypatch.setattr(fusion_gated, "ENABLED", fuse["fuse"])
        return await pte_webgpu.Runtime.create("native", options={"fuse": True})
    report = run_sync(fusion_report(make, (QUANT / f"{name}.pte").read_bytes(),
                                    args["vocab_size"], 20, 3))
    assert report["exact"], report["diffs"]
    counts = report["dispatches"]
    assert counts["unfused"] - counts["fused"] == args["n_layers"], counts
