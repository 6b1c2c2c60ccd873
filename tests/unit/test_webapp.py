"""webapp on the host: the graph summary, input matching, and errors as page dicts."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from pte_webgpu.app import describe, webapp
from pte_webgpu.errors import InputError
from pte_webgpu.formats import npy
from pte_webgpu.ops import registry

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def run_async(coro):
    # A fresh thread: the browser tests' Playwright keeps an event loop running in this one.
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def summary(name: str, files=()):
    return run_async(webapp.describe_file((FIXTURES / f"{name}.pte").read_bytes(), files, name))


def test_summary_of_a_supported_program():
    method, = summary("add_rmsnorm_1x8x64")["methods"]
    assert method["runnable"] and not method["problems"]
    ops = method["steps"][0]["ops"]
    assert [op["name"] for op in ops] == ["aten.add.Tensor", "et_vk.rms_norm.default"]
    assert ops[1]["args"][1] == "%0 float32[64] const#0"
    constant, = method["steps"][0]["constants"]
    assert constant["resolves_to"] == "pte" and len(constant["first_values"]) == 6


def test_summary_explains_what_cannot_run(monkeypatch):
    # Every fixture op runs today: pretend add.Scalar and mean.dim do not.
    runs = [op for op in registry.supported_ops() if op not in ("aten.add.Scalar", "aten.mean.dim")]
    monkeypatch.setattr(describe, "supported_ops", lambda: runs)
    monkeypatch.setattr(registry, "supported_ops", lambda: runs)
    method, = summary("rmsnorm_nndefault_1x8x64_eps1e-6")["methods"]
    assert not method["runnable"]
    assert any("non-delegated aten::add.Scalar_out" in p for p in method["problems"])
    assert any("aten.mean.dim" in p for p in method["problems"])
    assert "aten.mean.dim" in method["unsupported_ops"]


def test_summary_names_the_unsupported_ops():
    result = summary("extra/conv_pool_1x2x8x8")
    assert not result["runnable"]
    assert result["unsupported_ops"] == ["aten.convolution.default"]  # max-pool runs
    assert summary("extra/activations_3x17")["unsupported_ops"] == []
    assert summary("block_1x8x64")["unsupported_ops"] == []


def test_missing_ptd_is_an_unresolved_constant_not_a_failure():
    method, = summary("rmsnorm_extdata_1x8x64")["methods"]
    assert "not found" in method["steps"][0]["constants"][0]["error"]


def test_page_errors_are_plain_dicts():
    reply = run_async(webapp.page_describe(b"not a program at all", [], "bad.pte"))
    assert not reply["ok"]
    assert reply["error"]["type"] == "FormatError" and "Traceback" not in reply["error"]["message"]
    assert reply["error"]["traceback"].startswith("Traceback")


def test_inputs_match_by_name_then_order():
    specs = [((4, 4), "float32"), ((4, 1), "float32")]
    arrays = npy.read_npz((FIXTURES / "add_bcast_4x4_4x1.npz").read_bytes())
    _, names, _ = webapp.choose_inputs(specs, arrays, 0)
    assert names == ["in0", "in1"]
    _, names, _ = webapp.choose_inputs(specs, {"b": arrays["in0"], "a": arrays["in1"]}, 0)
    assert names == ["b", "a"]
    with pytest.raises(InputError, match="takes 2 inputs"):
        webapp.choose_inputs(specs, {"x": arrays["in0"]}, 0)


def test_random_inputs_are_seeded():
    specs = [((2, 3), "float32")]
    a, b = webapp.random_inputs(specs, 1), webapp.random_inputs(specs, 1)
    assert a[0].tobytes() == b[0].tobytes() != webapp.random_inputs(specs, 2)[0].tobytes()


def test_compare_is_relative_to_the_output_scale():
    assert webapp.compare([1.0, 2.5], [1.0, 2.0]) == (0.5, 0.25)
    assert webapp.compare([float("nan")], [1.0])[0] == float("inf")


@pytest.mark.parametrize("name,vocab", [("extra/embedding_100x16_2x5", 100),
                                        ("extra/token_model_1x6", 50),
                                        ("add_bcast_4x4_4x1", None)])
def test_random_token_ids_stay_within_the_embedding_vocabulary(name, vocab):
    from pte_webgpu import formats

    plan = formats.open_program((FIXTURES / f"{name}.pte").read_bytes()).plan("forward")
    limits = webapp.index_limits(plan)
    assert limits == [vocab] * len(plan.inputs)
    specs = [(tuple(plan.values[v].sizes), plan.values[v].dtype.name) for v in plan.inputs]
    tensors, _, source = webapp.choose_inputs(specs, None, 3, limits)
    if vocab:
        ids = tensors[0].tolist()
        flat = [i for row in ids for i in row]
        assert tensors[0].dtype.name == "int64" and 0 <= min(flat) and max(flat) < vocab
        assert len(set(flat)) > 1 and "integers uniform" in source
    else:
        assert source == "random normal, seed 3"


def test_random_integers_without_a_known_bound_are_small_and_non_negative():
    (t,) = webapp.random_inputs([((64,), "int32")], 0)
    assert t.dtype.name == "int32" and set(t.tolist()) <= set(range(webapp.SMALL_INTS))
    (t,) = webapp.random_inputs([((8,), "int64")], 0, [1])
    assert t.tolist() == [0] * 8


def test_int64_npz_members_are_read():
    arrays = npy.read_npz((FIXTURES / "extra" / "embedding_100x16_2x5.npz").read_bytes())
    assert arrays["in0"].dtype.name == "int64" and arrays["in0"].shape == (2, 5)
    assert arrays["out0"].dtype.name == "float32"


def _dataflows(name):
    summary = run_async(webapp.describe_file((FIXTURES / f"{name}.pte").read_bytes(), [], name))
    return [s["dataflow"] for s in summary["methods"][0]["steps"] if s["kind"] == "delegate"]


def test_dataflow_has_a_node_per_op_and_an_edge_per_tensor_read():
    [flow] = _dataflows("add_rmsnorm_2out_4x128")
    kinds = [n["kind"] for n in flow["nodes"]]
    assert kinds.count("op") == 2 and kinds.count("input") == 2 and kinds.count("output") == 2
    pairs = {(e["from"], e["to"]) for e in flow["edges"]}
    # add reads both inputs; rms_norm reads add's result, which is also output 0
    assert pairs == {("in0", "op0"), ("in1", "op0"), ("op0", "op1"), ("op0", "out0"), ("op1", "out1")}
    layers = {n["id"]: n["layer"] for n in flow["nodes"]}
    assert layers["in0"] < layers["op0"] < layers["op1"] < layers["out1"]


def test_dataflow_leaves_constants_out_of_the_edges_and_counts_them():
    [flow] = _dataflows("block_1x8x64")
    ops = [n for n in flow["nodes"] if n["kind"] == "op"]
    assert sum(n["constants"] for n in ops) >= 3  # rms_norm weight, two linear weights
    for e in flow["edges"]:
        assert e["from"] != e["to"]
    producers = {e["from"] for e in flow["edges"]}
    assert all(n["id"] in producers for n in ops)  # every op's result is read
