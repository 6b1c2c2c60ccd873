"""``pte-webgpu inspect`` on every fixture: text and the documented JSON schema."""

import json

import pytest
from pte_webgpu.app import cli

from tests.support.fixture_index import FIXTURES, INDEX, meta


def _args(entry, *extra):
    return [str(FIXTURES / f"{entry['name']}.pte"),
            *[a for p in entry.get("ptd_files", []) for a in ("--data", str(FIXTURES / p))],
            *extra]


@pytest.mark.parametrize("entry", INDEX, ids=lambda e: e["name"])
def test_inspect_json_lists_what_the_fixture_holds(entry, capsys):
    assert cli.main(["inspect", *_args(entry, "--json")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["schema"] == "pte-webgpu.inspect/1"
    plan = report["plans"][0]
    assert plan["name"] == "forward"
    vk = [d["vulkan"] for d in plan["delegates"]]
    assert [[op["name"] for op in g["ops"]] for g in vk] == entry["vk_ops"]
    expected = meta(entry)
    for graph, summary in zip(vk, expected["delegates"]):
        assert graph["input_ids"] == summary["input_ids"]
        assert graph["output_ids"] == summary["output_ids"]
        assert [c["length"] for c in graph["constants"]] == \
            [c["length"] for c in summary["constants"]]
        assert all(c["resolves_to"] for c in graph["constants"])  # every constant found
    kernels = [i["op"] for i in plan["instructions"] if i["kind"] == "kernel"]
    assert kernels == entry["non_delegated_ops"]
    runs = {op["runs_on"] for g in vk for op in g["ops"]}
    assert runs <= {"gpu", "unsupported"}


@pytest.mark.parametrize("entry", INDEX[:3] + [e for e in INDEX if e.get("ptd_files")],
                         ids=lambda e: e["name"])
def test_inspect_text_names_ops_and_constant_sources(entry, capsys):
    assert cli.main(["inspect", *_args(entry)]) == 0
    text = capsys.readouterr().out
    for ops in entry["vk_ops"]:
        for op in ops:
            assert op in text
    for ptd in entry.get("ptd_files", []):
        assert ptd.rsplit("/", 1)[-1] in text  # constants resolve to the .ptd file


def test_inspect_marks_unsupported_ops(capsys):
    entry = next(e for e in INDEX if e["name"] == "extra/unfold_shrink_1x4x9")
    assert cli.main(["inspect", *_args(entry, "--json")]) == 0
    ops = json.loads(capsys.readouterr().out)["plans"][0]["delegates"][0]["vulkan"]["ops"]
    assert {op["name"]: op["runs_on"] for op in ops} == {
        "aten.abs.default": "gpu", "aten.le.Scalar": "gpu", "aten.where.self": "gpu",
        "aten.relu.default": "gpu", "aten.unfold_copy.default": "unsupported"}


def test_inspect_shows_the_rms_norm_kernel_each_adapter_would_run(capsys):
    entry = next(e for e in INDEX if e["name"] == "rmsnorm_3x5x7x256_eps1e-6")
    assert cli.main(["inspect", *_args(entry, "--json")]) == 0
    op = json.loads(capsys.readouterr().out)["plans"][0]["delegates"][0]["vulkan"]["ops"][0]
    from pte_webgpu.ops import rms_norm
    from pte_webgpu.ops.variants import TYPICAL_ADAPTERS

    assert set(op["kernel_choices"]) == set(TYPICAL_ADAPTERS)
    for adapter, variant in op["kernel_choices"].items():
        assert variant == rms_norm.choose(TYPICAL_ADAPTERS[adapter], 105, 256).name


@pytest.mark.parametrize("entry", INDEX, ids=lambda e: e["name"])
def test_inspect_notes_float16_storage_exactly_when_the_program_has_float16(entry, capsys):
    assert cli.main(["inspect", *_args(entry, "--json")]) == 0
    report = json.loads(capsys.readouterr().out)
    has_fp16 = any(v.get("dtype") == "float16"
                   for p in report["plans"]
                   for v in p["values"] + [v for d in p["delegates"]
                                           for v in d["vulkan"]["values"]])
    assert any("float16" in n for n in report["notes"]) == has_fp16
    assert has_fp16 == ("fp16" in entry["name"])
