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
    result = summary("extra/unfold_shrink_1x4x9")
    assert not result["runnable"]
    assert result["unsupported_ops"] == ["aten.unfold_copy.default"]
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


# --- image models (app/image_model.py) ------------------------------------------------------

def test_a_picture_input_is_one_float_nchw_tensor_of_1_or_3_channels():
    from pte_webgpu.app.image_model import image_input

    assert image_input([((1, 3, 224, 224), "float32")]) == {"channels": 3, "height": 224, "width": 224}
    assert image_input([((1, 1, 24, 40), "float16")]) == {"channels": 1, "height": 24, "width": 40}
    for specs in ([((2, 3, 8, 8), "float32")], [((1, 4, 8, 8), "float32")], [((1, 3, 8), "float32")],
                  [((1, 3, 8, 8), "int64")], [((1, 3, 8, 8), "float32")] * 2, []):
        assert image_input(specs) is None, specs


def test_the_page_is_told_which_programs_take_a_picture():
    image = [summary(f"image_page/{n}")["methods"][0]["image_input"]
             for n in ("classifier_3x32x32", "classifier_1x24x40", "segmenter_3x32x32")]
    assert image == [{"channels": 3, "height": 32, "width": 32}, {"channels": 1, "height": 24, "width": 40},
                     {"channels": 3, "height": 32, "width": 32}]
    assert summary("add_2x3x4")["methods"][0]["image_input"] is None


def test_a_classifier_output_is_shown_as_its_top_classes():
    import numpy as np
    from pte_webgpu.app.image_model import output_view

    logits = np.random.default_rng(3).normal(size=12) * 4
    for shape in ([12], [1, 12]):
        view = output_view(shape, logits.tolist())
        p = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
        top = np.argsort(-p, kind="stable")[:5]
        assert view["kind"] == "classes" and view["classes"] == 12
        assert [c["index"] for c in view["top"]] == top.tolist()
        np.testing.assert_allclose([c["probability"] for c in view["top"]], p[top], rtol=1e-12)
        assert [c["logit"] for c in view["top"]] == logits[top].tolist()
    assert len(output_view([3], [0.0, 1.0, 0.0])["top"]) == 3  # fewer than five classes
    ties = output_view([4], [1.0, 2.0, 2.0, 0.0])["top"]
    assert [c["index"] for c in ties] == [1, 2, 0, 3]  # equal ones by index
    for shape in ([1], [2, 6], [1, 1], [1, 2, 3]):
        assert output_view(shape, [0.0] * int(np.prod(shape))) is None, shape


def test_softmax_of_extreme_logits():
    from pte_webgpu.app.image_model import softmax

    assert softmax([1000.0, 0.0]) == [1.0, 0.0]  # shifted: no overflow
    assert softmax([float("inf"), 1.0, float("inf")]) == [0.5, 0.0, 0.5]
    assert all(p != p for p in softmax([1.0, float("nan")]))


def test_a_segmentation_output_is_shown_as_the_class_of_each_pixel():
    import numpy as np
    from pte_webgpu.app.image_model import output_view

    scores = np.random.default_rng(4).normal(size=(1, 4, 3, 5))
    scores[0, :, 0, 0] = [1.0, 3.0, 3.0, 0.0]  # a tie: the first, as torch.argmax
    scores[0, 2, 1, 1] = float("nan")  # NaN wins, as torch.argmax
    view = output_view([1, 4, 3, 5], scores.reshape(-1).tolist())
    want = scores[0].argmax(axis=0)
    want[1, 1] = 2
    assert view["kind"] == "mask" and (view["classes"], view["height"], view["width"]) == (4, 3, 5)
    assert view["argmax"] == want.reshape(-1).tolist() and view["argmax"][0] == 1
    assert view["counts"] == np.bincount(want.reshape(-1), minlength=4).tolist()
    assert output_view([1, 1, 3, 5], [0.0] * 15) is None  # one class: no argmax to show
    assert output_view([2, 4, 3, 5], [0.0] * 120) is None


def test_the_picture_tensor_is_checked():
    from pte_webgpu.app.image_model import picture_tensor

    t = picture_tensor([1, 3, 2, 2], bytes(48))
    assert t.shape == (1, 3, 2, 2) and t.dtype.name == "float32"
    with pytest.raises(InputError, match="needs 48 bytes"):
        picture_tensor([1, 3, 2, 2], bytes(40))
    with pytest.raises(InputError, match=r"\[1, C, H, W\]"):
        picture_tensor([3, 2, 2], bytes(48))
