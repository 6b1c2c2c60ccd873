"""The split attention's merge left to the o projection (runtime/fusion_merge.py,
ops/attention_merge.py) on real exported decoders, natively: with the merge folded into
the linear's matrix-vector prologue, each layer's decode step runs one dispatch fewer and
computes what the merge's own dispatch did; forms that do not take it run that dispatch
first, into the linear's input."""

import pytest

from tests.support.decoders import DECODERS, INDEX
from tests.support.fusion_check import fusion_report
from tests.support.gpu_thread import native_device, run_sync

pytest.importorskip("wgpu", reason="native backend needs pte-webgpu[native]")
LLAMAS = sorted(n for n in INDEX if n.startswith("llama_"))
STATIC = [n for n in LLAMAS if not INDEX[n].get("dynamic")]


@pytest.fixture(scope="module")
def device():
    yield from native_device()


def _report(name, monkeypatch, variants):
    import pte_webgpu
    from pte_webgpu.runtime import fusion_merge

    args = INDEX[name]["model_args"]
    pte = (DECODERS / f"{name}.pte").read_bytes()
    prompt = 20 if INDEX[name].get("dynamic") else 1

    async def make(fuse):  # fuse: this fold on or off, the others on
        monkeypatch.setattr(fusion_merge, "ENABLED", fuse["fuse"])
        return await pte_webgpu.Runtime.create("native", options={"variants": variants})
    return run_sync(fusion_report(make, pte, args["vocab_size"], prompt, 3))


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


@pytest.mark.parametrize("sdpa", ["split", "tiles"])
@pytest.mark.parametrize("name", LLAMAS)
def test_forms_that_do_not_merge_run_the_merge_first(name, sdpa, monkeypatch):
    """The rule's forms on this CPU adapter (and every form of a prefill) do not take the
    merge: its own dispatch writes the linear's input first, the same dispatches run."""
    report = _report(name, monkeypatch, {"sdpa": sdpa})
    counts = report["dispatches"]
    assert counts["unfused"] == counts["fused"], counts
    assert report["exact"], report["diffs"]


MERGE_CASES = {  # (query heads, KV heads, head dim, cache rows, start, linear's N)
    "10 parts": (9, 3, 64, 300, 250, 40),  # SmolLM2's heads: parts of 26 rows (the last 16)
    "32 parts of 32 heads": (32, 8, 64, 1024, 1000, 24),  # the most factors a workgroup holds
    "a part with no rows": (4, 4, 32, 640, 3, 16),  # 20 parts of 1 row over 4 visible rows
}


@pytest.mark.parametrize("case", list(MERGE_CASES))
def test_an_attention_merged_by_its_linear_equals_float64(device, case, monkeypatch):
    """A decode step's attention (split: its cache rows cut into parts), reshaped into a
    linear: the linear merges the parts (one dispatch fewer) and both builds match numpy
    in float64."""
    import numpy as np
    from pte_webgpu.runtime import fusion_merge

    from tests.native.test_ops_decoder import DG
    from tests.support.graph import rand

    h, hkv, d, t, start, n = MERGE_CASES[case]
    q, k, v = rand(1, 1, h, d), rand(1, 1, hkv, d), rand(1, 1, hkv, d)
    kc, vc = np.zeros((1, t, hkv, d), np.float32), np.zeros((1, t, hkv, d), np.float32)
    kc[:, :start], vc[:, :start] = rand(1, start, hkv, d), rand(1, start, hkv, d)
    w = rand(n, h * d, scale=0.1)
    got, steps = {}, {}
    for merge in (True, False):
        monkeypatch.setattr(fusion_merge, "ENABLED", merge)
        g = DG(options={"variants": {"sdpa": "split", "matmul": "gemv4-64x4"}})
        qi, ki, vi = g.input(q), g.input(k), g.input(v)
        kci, vci = g.state_const(kc), g.state_const(vc)
        out = g.tensor(q.shape)
        g.op("sdpa_with_kv_cache.default", qi, ki, vi, kci, vci, g.int(start), g.int(1),
             g.null(), g.int(0), g.bool(True), g.null(), out)
        x = g.op("aten.view_copy.default", out, g.ints([1, 1, h * d]), g.tensor((1, 1, h * d)))
        y = g.op("aten.linear.default", x, g.const(w), g.null(), g.tensor((1, 1, n)))
        (got[merge],) = g.run(device, y)
        steps[merge] = g.steps
    assert steps[False] - steps[True] == 1, steps
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
