"""Load-time fusion (runtime/fusion.py) on the exported llama decoders: it fires where
expected, and the fused build computes what the unfused one does, fp32 and fp16, prefill
rows and decode steps, in the CPU adapter's kernel forms and in the GPU forms (matrix-
matrix tiles for the prefill with matrix-vector twins for decode)."""

import pytest
from pte_webgpu import formats
from pte_webgpu.model.graph import Graph, TensorValue
from pte_webgpu.runtime import fusion
from pte_webgpu.runtime.storage import WIDE

from tests.support.decoders import DECODERS, INDEX
from tests.support.fusion_check import fusion_report, native_runtime, saved_dispatches
from tests.support.gpu_thread import run_sync

LLAMAS = sorted(n for n in INDEX if n.startswith("llama_"))
# per layer: q/k/v as one (2 fewer), gate/up as one (1), o_proj and down_proj each with
# its residual add (2), sigmoid * gate * up as one kernel (2), both norms and that chain
# into the linears after them (3: on GPUs, tests/support/fusion_check.saved_dispatches);
# and the final norm into the lm head (1 per model, GPUs); the RoPE into the attention (1)
SAVED_PER_LAYER = 10
PER_LAYER = {"rms_norm + 3 linears": 1, "rms_norm + 2 linears": 1,
             "linear + residual add": 1, "3 element-wise ops + linear + residual add": 1,
             "rope + sdpa": 1}
PER_MODEL = {"rms_norm + 1 linear": 1}


def _report(name, prompt_len=20, steps=3, **options):
    args = INDEX[name]["model_args"]
    prompt_len = prompt_len if INDEX[name].get("dynamic") else 1
    pte = (DECODERS / f"{name}.pte").read_bytes()

    async def make(fuse):
        return await native_runtime(dict(options, **fuse))
    return run_sync(fusion_report(make, pte, args["vocab_size"], prompt_len, steps))


def _table_slices(name: str) -> int:
    """The RoPE fold's dispatches beyond one a layer: the interleaved tables' two slices
    at input_pos, which the dynamic exports make (runtime/fusion_rope.py)."""
    return 2 if INDEX[name].get("dynamic") and not INDEX[name].get("hf_rope") else 0


def _check(name, report):
    layers = INDEX[name]["model_args"]["n_layers"]
    counts = report["dispatches"]
    assert counts["unfused"] - counts["fused"] == saved_dispatches(
        report, layers, SAVED_PER_LAYER, 1) + layers + _table_slices(name), counts
    assert report["fused_ops"] == {"fused": {k: v * layers for k, v in PER_LAYER.items()}
                                   | PER_MODEL, "unfused": {}}
    # reshapes share their inputs' memory: no copy is left, and memory stays as it was
    # (a reshape given a buffer it never used once doubled SmolLM2's)
    assert report["copies"]["fused"] == 0 < report["copies"]["unfused"], report["copies"]
    # (a tensor whose lifetime a fold changed moves to the object that grows least:
    # with the smallest object that holds it as the only choice, the SwiGLU fold once
    # cost the decoders one more [rows, hidden] object)
    assert report["buffer_bytes"]["fused"] <= 1.05 * report["buffer_bytes"]["unfused"], report
    # the same arithmetic per element; a driver may still contract a * b + c differently
    tol = 1e-5 * report["scale"] if "fp16" not in name else 1e-3 * report["scale"]
    assert max(report["diffs"]) <= tol, report


@pytest.mark.parametrize("name", LLAMAS)
def test_fused_equals_unfused(name):
    _check(name, _report(name))


@pytest.mark.parametrize("name", [n for n in LLAMAS if n.endswith("fp16")])
def test_fused_equals_unfused_with_float16_held_as_f32(name):
    """Stacked float16 weights widened to f32 at upload, part by part at their offsets."""
    _check(name, _report(name, float16="f32"))


@pytest.mark.parametrize("name", [n for n in LLAMAS if INDEX[n].get("dynamic")])
def test_fused_equals_unfused_in_gpu_forms(name, monkeypatch):
    """Lavapipe taken for a GPU (its matrix-vector limit lowered to 8 rows): a 20-row
    prefill runs the tiled matrix-matrix form of every fused linear (split and residual
    epilogues), decode its matrix-vector twin."""
    from pte_webgpu.ops import matmul_choice
    monkeypatch.setattr(matmul_choice, "is_cpu", lambda traits: False)
    monkeypatch.setattr(matmul_choice, "GPU_GEMV_ROWS", 8)
    _check(name, _report(name))


@pytest.mark.parametrize("name", [n for n in LLAMAS if INDEX[n].get("dynamic")])
def test_fused_equals_unfused_in_gpu_gemv_forms(name, monkeypatch):
    """Lavapipe taken for a GPU, its matrix-vector limit as on GPUs (256 rows): one
    matrix-vector form serves the 20-row prefill and decode; decode's rows take it with
    the norm's prologue, the prefill's after the norm's own dispatch (as on the H100,
    where these decoders' norms once stayed dispatches)."""
    from pte_webgpu.ops import matmul_choice
    monkeypatch.setattr(matmul_choice, "is_cpu", lambda traits: False)
    report = _report(name)
    assert not report["cpu"]
    _check(name, report)


def test_the_rewrite_keeps_memory_objects_apart():
    """Every pooled tensor overlaps no other tensor of its memory object, except a
    reshape's input and output (one piece of memory under two shapes: build.py binds one
    buffer for both, no copy), which then overlap no other; and the parts of a stacked
    weight are no longer uploaded on their own."""
    vk = formats.open_program((DECODERS / "llama_dynamic_rope.pte").read_bytes(), [])
    graph = vk.plans[0].delegates[0].graph.graph
    fused = fusion.fuse(graph, WIDE.nbytes, 1 << 27)
    spans: dict[int, list[int]] = {}
    for place, op in enumerate(fused.ops):
        for vid in fusion._expand(fused.values, op.args):
            t = fused.values[vid]
            if isinstance(t, TensorValue) and t.mem_obj_id >= 0 and not t.is_constant \
                    and vid not in graph.input_ids + graph.output_ids:
                spans.setdefault(vid, [place, place])[1] = place
    same = {}  # a reshape's output -> the tensor whose memory it is (chains followed)
    for op in fused.ops:
        src, dst = op.args[0], op.args[-1]
        if op.name in fusion.VIEWS and fused.values[src].mem_obj_id == fused.values[dst].mem_obj_id:
            same[dst] = same.get(src, src)
    units: dict[int, list[int]] = {}
    for vid, (lo, hi) in spans.items():
        u = units.setdefault(same.get(vid, vid), [lo, hi])
        u[0], u[1] = min(u[0], lo), max(u[1], hi)
    assert len(units) < len(spans)  # reshapes share memory
    for a, (lo, hi) in units.items():
        for b, (lo2, hi2) in units.items():
            if a < b and fused.values[a].mem_obj_id == fused.values[b].mem_obj_id:
                assert hi < lo2 or hi2 < lo, (a, b, units[a], units[b])
    stacked = [p for parts in fused.meta["concat"].values() for p in parts]
    named = {v for op in fused.ops for v in fusion._expand(fused.values, op.args)}
    assert stacked and not set(stacked) & named


def test_a_weight_too_large_for_one_binding_stays_apart():
    vk = formats.open_program((DECODERS / "llama_dynamic_rope.pte").read_bytes(), [])
    graph = vk.plans[0].delegates[0].graph.graph
    fused = fusion.fuse(graph, WIDE.nbytes, 48 * 48 * 4)  # q alone fits, q+k+v do not
    assert "linear x3" not in fused.meta["fused"] and "linear x2" not in fused.meta["fused"]
    assert fused.meta["fused"]["linear + residual"] == 4


# --- hand-built graphs: every matmul form, bias or not, f32 or f16 ---------------------
def _block(storage, dtype, m, bias, variant, fuse):
    """q/k/v-like linears on one input (with or without biases), a linear whose only
    reader is a residual add, SwiGLU's sigmoid * gate * up, and an add with alpha 2 that
    must stay apart; outputs and what fused."""
    import numpy as np

    from tests.support.graph import G

    rng = np.random.default_rng(m * 10 + bias)
    np_t = np.float16 if dtype.name == "float16" else np.float32

    def rand(*shape):
        return rng.standard_normal(shape).astype(np_t)

    options = {"fuse": fuse} | ({"variants": {"matmul": variant}} if variant else {})
    g = G(storage, options)
    x, x2, r = g.input(rand(m, 24), dtype), g.input(rand(m, 16), dtype), g.input(rand(m, 8), dtype)
    gate, up = g.input(rand(m, 20), dtype), g.input(rand(m, 20), dtype)
    outs = []
    for n in (16, 8, 8):  # K = 24, as q, k, v
        b = g.const(rand(n), dtype) if bias else g.null()
        outs.append(g.op("aten.linear.default", x, g.const(rand(n, 24), dtype), b,
                         g.tensor((m, n), dtype=dtype)))
    lin = g.op("aten.linear.default", x2, g.const(rand(8, 16), dtype),
               g.const(rand(8), dtype) if bias else g.null(), g.tensor((m, 8), dtype=dtype))
    outs.append(g.op("aten.add.Tensor", r, lin, g.int(1), g.tensor((m, 8), dtype=dtype)))
    s = g.op("aten.sigmoid.default", gate, g.tensor((m, 20), dtype=dtype))
    t = g.op("aten.mul.Tensor", gate, s, g.tensor((m, 20), dtype=dtype))
    outs.append(g.op("aten.mul.Tensor", t, up, g.tensor((m, 20), dtype=dtype)))
    outs.append(g.op("aten.add.Tensor", up, outs[-1], g.double(2.0),
                     g.tensor((m, 20), dtype=dtype)))
    return g, outs


@pytest.mark.parametrize("variant", [None, "dot", "tiled", "mm4-8x8", "mm4-8x8s2", "gemv4-32x1",
                                     "gemv4-4x4", "gemvsg4-32x2"])
@pytest.mark.parametrize("m", [1, 3, 37])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("half", [False, True])
def test_fused_block_equals_unfused(device, variant, m, bias, half):
    import numpy as np
    from pte_webgpu.model import dtypes
    from pte_webgpu.ops import matmul_choice
    from pte_webgpu.runtime.storage import Storage

    if half and "shader-f16" not in device.info.features:
        pytest.skip("the adapter has no shader-f16")
    if variant and matmul_choice.supported(matmul_choice.parse(variant), device.info):
        pytest.skip(f"{variant}: {matmul_choice.supported(matmul_choice.parse(variant), device.info)}")
    storage, dtype = (Storage(half=True), dtypes.FLOAT16) if half else (WIDE, dtypes.FLOAT32)
    got = {}
    for fuse in (True, False):
        g, outs = _block(storage, dtype, m, bias, variant, fuse)
        got[fuse] = g.run(device, *outs)
    # bit-identical on lavapipe; on the H200 float16 results moved by up to two f16 ulps
    # (2^-10 relative each; 10.375 against 10.390625 at 37 rows with a bias): the fused
    # chain and epilogues round where the GPU's own f16 kernels had rounded otherwise, and
    # the SwiGLU products carry a one-ulp change on. Four ulps allowed.
    for a, b in zip(got[True], got[False]):
        np.testing.assert_allclose(a, b, rtol=4e-3 if half else 1e-6,
                                   atol=1e-3 if half else 1e-6)


def test_the_hand_block_fuses_as_expected():
    from pte_webgpu.model import dtypes

    g, outs = _block(WIDE, dtypes.FLOAT32, 3, True, None, True)
    graph = Graph(g.values, g.ops, g.inputs, outs, g.constants)
    fused = fusion.fuse(graph, WIDE.nbytes, 1 << 27)
    assert fused.meta["fused"] == {"linear x3": 1, "linear + residual": 1,
                                   "elementwise x3": 1}
    assert [op.name for op in fused.ops] == [
        "pte_webgpu.fused_linear", "pte_webgpu.fused_linear",
        "pte_webgpu.fused_elementwise", "aten.add.Tensor"]  # alpha 2: on its own


@pytest.mark.parametrize("variant", ["", "-fp16"])
def test_smollm_fused_equals_unfused(variant):
    """SmolLM2-135M from `make llm` (skipped without it): a 12-row prefill (the matrix-
    matrix forms) and decode steps give the same logits fused and unfused, with 11 x 30 + 3
    fewer dispatches per decode step (its RoPE is the interleaved op), fp16's clones read
    as their inputs."""
    from pathlib import Path

    from tests.support.llm_models import llm_files

    pte = Path(llm_files(variant)["pte"]).read_bytes()
    report = run_sync(fusion_report(native_runtime, pte, 49152, 12, 2))
    counts = report["dispatches"]
    # the fp16 export's final norm feeds a clone (a buffer copy): the lm head reads the
    # norm instead, so the norm folds into it as in fp32
    assert counts["unfused"] - counts["fused"] == saved_dispatches(
        report, 30, SAVED_PER_LAYER, 1) + 30 + 2, counts  # + its tables' two slices
    assert report["fused_ops"]["fused"]["rms_norm + 1 linear"] == 1, report["fused_ops"]
    assert max(report["diffs"]) <= 1e-5 * report["scale"], report["diffs"]


def test_cycles_in_a_malformed_graph_end_the_rewrite():
    """Found by make fuzz-exec (seed 77, case 7584): two element-wise ops each reading the
    other's output made the chain walk loop forever at load; cycles of views likewise.
    The rewrite leaves such a graph alone (the build then refuses or runs it)."""
    import numpy as np
    from pte_webgpu.model import dtypes

    from tests.support.graph import G
    g = G()
    x = g.input(np.ones((2, 3), np.float32))
    a, b, c, d = (g.tensor((2, 3)) for _ in range(4))
    g.op("aten.neg.default", b, a)  # reads b, which the next op writes from a
    g.op("aten.neg.default", a, b)
    sizes = g.double(0.0)  # the rewrite reads a view's input and output only
    g.op("aten.view_copy.default", d, sizes, c)  # c from d, d from c: a cycle of views
    g.op("aten.view_copy.default", c, sizes, d)
    g.op("aten.add.Tensor", x, c, g.double(1.0), g.tensor((2, 3), dtype=dtypes.FLOAT32))
    graph = Graph(g.values, g.ops, g.inputs, [g.ops[-1].args[-1]], g.constants)
    fused = fusion.fuse(graph, WIDE.nbytes, 1 << 27)  # returns (before: never)
    assert len(fused.ops) >= 2
