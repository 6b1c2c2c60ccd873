"""The split attention's merge left to the o projection (runtime/fusion_merge.py,
ops/attention_merge.py) on real exported decoders, natively: with the merge folded into
the linear's matrix-vector prologue, each layer's decode step runs one dispatch fewer and
computes what the merge's own dispatch did; forms that do not take it run that dispatch
first, into the linear's input. The fold is opt-in (PTE_WEBGPU_FOLDS_ON=merge: it was
slower on GPUs), so every test here names it."""

import pytest

from tests.support.decoders import DECODERS, INDEX, fold_report
from tests.support.fusion_check import fusion_report
from tests.support.gpu_thread import native_device, run_sync

pytest.importorskip("wgpu", reason="native backend needs pte-webgpu[native]")
LLAMAS = sorted(n for n in INDEX if n.startswith("llama_"))
STATIC = [n for n in LLAMAS if not INDEX[n].get("dynamic")]


@pytest.fixture(scope="module")
def device():
    yield from native_device()


@pytest.fixture(autouse=True)
def merge_on(monkeypatch):
    from pte_webgpu.runtime import fusion

    monkeypatch.setenv(fusion.FOLDS_ON, "merge")


def _report(name, monkeypatch, variants):
    from pte_webgpu.runtime import fusion_merge

    return fold_report(name, fusion_merge, monkeypatch, {"variants": variants})


@pytest.mark.parametrize("name", STATIC)
def test_the_o_projection_merges_the_attention_parts(name, monkeypatch):
    """A decode program (one row), split attention and gemv linears forced: the o
    projection merges the parts as it loads them."""
    report = _report(name, monkeypatch, {"sdpa": "split", "matmul": "gemv4-64x4"})
    layers = INDEX[name]["model_args"]["n_layers"]
    counts = report["dispatches"]
    assert counts["unfused"] - counts["fused"] == layers, counts
    # the merge kernel's own steps and roundings; a driver may contract them differently
    tol = (1e-3 if "fp16" in name else 1e-5) * report["scale"]
    assert max(report["diffs"]) <= tol, report["diffs"]


@pytest.mark.parametrize("on,off", [("", ""), ("merge", "merge")])
def test_the_environment_leaves_the_merge_out(monkeypatch, on, off):
    """Without PTE_WEBGPU_FOLDS_ON=merge, or with PTE_WEBGPU_FOLDS_OFF=merge (benchmarks:
    the fold on and off in one run), the merge keeps its own dispatch; an unknown fold
    name is an InputError naming the valid ones."""
    from pte_webgpu.errors import InputError
    from pte_webgpu.runtime import fusion

    monkeypatch.setenv(fusion.FOLDS_ON, on)
    monkeypatch.setenv(fusion.FOLDS_OFF, off)
    report = _report("llama_static_rope", monkeypatch, {"sdpa": "split", "matmul": "gemv4-64x4"})
    assert report["dispatches"]["unfused"] == report["dispatches"]["fused"], report
    monkeypatch.setenv(fusion.FOLDS_OFF, "merge,swiglu")
    with pytest.raises(InputError, match="unknown fold 'swiglu'; use some of gated, merge"):
        fusion.folds_off()
    monkeypatch.setenv(fusion.FOLDS_OFF, "")
    monkeypatch.setenv(fusion.FOLDS_ON, "rope")
    with pytest.raises(InputError, match="PTE_WEBGPU_FOLDS_ON: unknown fold 'rope'; use some "
                       "of merge"):
        fusion.folds_off()


@pytest.mark.parametrize("sdpa", ["split", "tiles"])
@pytest.mark.parametrize("name", LLAMAS)
def test_forms_that_do_not_merge_run_the_merge_first(name, sdpa, monkeypatch):
    """The rule's forms on a CPU adapter (and every form of a prefill) do not take the
    merge: its own dispatch writes the linear's input first, the same dispatches run. On
    a GPU the rule's one-row form (gemv) merges: a dispatch a layer fewer."""
    report = _report(name, monkeypatch, {"sdpa": sdpa})
    counts = report["dispatches"]
    layers = INDEX[name]["model_args"]["n_layers"]
    assert counts["unfused"] - counts["fused"] == (0 if report["cpu"] else layers), counts
    if report["cpu"]:
        assert report["exact"], report["diffs"]
    tol = (1e-3 if "fp16" in name else 1e-5) * report["scale"]
    assert max(report["diffs"]) <= tol, report["diffs"]


MERGE_CASES = {  # (query heads, KV heads, head dim, cache rows, start, linear's N)
    "10 parts": (9, 3, 64, 300, 250, 40),  # SmolLM2's heads: parts of 26 rows (the last 16)
    "32 parts of 16 heads": (16, 4, 64, 1024, 1000, 24),  # the most a workgroup holds
    "a part with no rows": (4, 4, 32, 640, 3, 16),  # 20 parts of 1 row over 4 visible rows
    # 1024 factors: more than a linear's workgroup holds, the merge keeps its dispatch
    "too many to merge": (32, 8, 64, 1024, 1000, 24),
}


# the linear after the attention: float (gemv forced), or 4-bit with groups of 32 in the
# one-row forms that take the merge (wide, keep)
LINEAR_FORMS = {"float gemv": ("matmul", "gemv4-64x4"), "q4 wide": ("linear_q4", "wide-8-2"),
                "q4 keep": ("linear_q4", "keep-32-8-4")}


@pytest.mark.parametrize("linear", list(LINEAR_FORMS))
@pytest.mark.parametrize("case", list(MERGE_CASES))
def test_an_attention_merged_by_its_linear_equals_float64(device, case, linear, monkeypatch):
    """A decode step's attention (split: its cache rows cut into parts), reshaped into a
    linear: the linear merges the parts (one dispatch fewer) and both builds match numpy
    in float64."""
    import numpy as np
    from pte_webgpu.model import dtypes
    from pte_webgpu.runtime import fusion_merge

    from tests.support.graph import DG
    from tests.support.graph import rand
    from tests.support.q4_graphs import Q4GSW, dequantized, pack_q4gsw, quantize, scales_rows

    h, hkv, d, t, start, n = MERGE_CASES[case]
    family, form = LINEAR_FORMS[linear]
    q, k, v = rand(1, 1, h, d), rand(1, 1, hkv, d), rand(1, 1, hkv, d)
    kc, vc = np.zeros((1, t, hkv, d), np.float32), np.zeros((1, t, hkv, d), np.float32)
    kc[:, :start], vc[:, :start] = rand(1, start, hkv, d), rand(1, start, hkv, d)
    if family == "matmul":
        w = rand(n, h * d, scale=0.1)
    else:
        wq, sq = quantize(n, h * d, 32)
        w = dequantized(wq, sq).astype(np.float32)  # what the reference multiplies by
    got, steps = {}, {}
    for merge in (True, False):
        monkeypatch.setattr(fusion_merge, "ENABLED", merge)
        g = DG(options={"variants": {"sdpa": "split", family: form}})
        qi, ki, vi = g.input(q), g.input(k), g.input(v)
        kci, vci = g.state_const(kc), g.state_const(vc)
        out = g.tensor(q.shape)
        g.op("sdpa_with_kv_cache.default", qi, ki, vi, kci, vci, g.int(start), g.int(1),
             g.null(), g.int(0), g.bool(True), g.null(), out)
        x = g.op("aten.view_copy.default", out, g.ints([1, 1, h * d]), g.tensor((1, 1, h * d)))
        if family == "matmul":
            y = g.op("aten.linear.default", x, g.const(w), g.null(), g.tensor((1, 1, n)))
        else:
            y = g.op(Q4GSW, x, g.const(pack_q4gsw(wq), dtypes.UINT8), g.const(scales_rows(sq)),
                     g.int(32), g.null(), g.tensor((1, 1, n)))
        (got[merge],) = g.run(device, y)
        steps[merge] = g.steps
    assert steps[False] - steps[True] == (case != "too many to merge"), steps
    kc[:, start], vc[:, start] = k[:, 0], v[:, 0]
    want = np.zeros((h, d))
    for head in range(h):
        kv = head // (h // hkv)
        scores = kc[0, :start + 1, kv].astype(np.float64) @ q[0, 0, head] / np.sqrt(d)
        p = np.exp(scores - scores.max())
        want[head] = (p / p.sum()) @ vc[0, :start + 1, kv]
    want = want.reshape(-1) @ w.T.astype(np.float64)
    np.testing.assert_allclose(got[True][0, 0], want, atol=2e-5)
    np.testing.assert_allclose(got[False][0, 0], want, atol=2e-5)


def _gpu_rule(monkeypatch):
    """Every op's rule as on a GPU (lavapipe taken for one): split attention, gemv and
    wide/keep linears for one row."""
    from dataclasses import replace

    from pte_webgpu.gpu.adapter import AdapterInfo, traits_of

    monkeypatch.setattr(AdapterInfo, "traits",
                        property(lambda info: replace(traits_of(info), is_cpu=False)))


@pytest.mark.parametrize("name", ["llama_dynamic_rope", "llama_dynamic_hfrope", "llama_dynamic_rope_fp16",
                                  "llama_4w_g32_dynamic", "llama_4w_g32_dynamic_fp16"])
def test_exported_decoders_merge_with_the_gpu_rule(name, monkeypatch):
    """Exported decoders (float, and ExecuTorch's `-qmode 4w`) built by the GPUs' rule:
    a 20-row prefill (the attention's rows form writes the o projection's input), then
    decode steps whose o projections merge the split attention's parts (gemv for float,
    wide for 4-bit): a dispatch a layer fewer, logits as the merge's own dispatch gives."""
    import json

    import pte_webgpu
    from pte_webgpu.runtime import fusion_merge

    from tests.support.quant_fixtures import QUANT

    _gpu_rule(monkeypatch)
    folder = QUANT if "4w" in name else DECODERS
    index = json.loads((QUANT / "index.json").read_text()) if "4w" in name else INDEX
    args = index[name]["model_args"]

    async def make(fuse):
        monkeypatch.setattr(fusion_merge, "ENABLED", fuse["fuse"])
        return await pte_webgpu.Runtime.create("native")
    report = run_sync(fusion_report(make, (folder / f"{name}.pte").read_bytes(),
                                    args["vocab_size"], 20, 3))
    counts = report["dispatches"]
    assert counts["unfused"] - counts["fused"] == args["n_layers"], counts
    tol = (1e-3 if "fp16" in name else 1e-5) * report["scale"]
    assert max(report["diffs"]) <= tol, report["diffs"]
