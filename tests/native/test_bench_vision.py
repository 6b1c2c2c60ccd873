"""`pte-webgpu bench --vision` natively on a tiny real exported image model
(tests/fixtures/vision_bench, made by bench/vision_export.py): the records, the output
check against eager torch, GPU time and the copy kernel; the conv shapes' one-op programs;
and torch's side where torch is installed (CUDA on a GPU machine, else the CPU)."""

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import pte_webgpu
from pte_webgpu.app import cli

from tests.support.gpu_thread import _GPU_THREAD

pytest.importorskip("wgpu", reason="native backend needs pte-webgpu[native]")
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import vision_bench  # noqa: E402
import vision_shapes  # noqa: E402

HERE = REPO / "tests" / "fixtures" / "vision_bench"
TINY = HERE / "tiny_mlp.pte"


def test_bench_vision_records_latency_gpu_time_copy_and_the_output_check(tmp_path, capsys):
    out, md = tmp_path / "v.json", tmp_path / "v.md"
    code = _GPU_THREAD.submit(cli.main, [
        "bench", "--vision", str(TINY), "--backend", "native", "--runs", "5", "--warmup", "2",
        "--no-torch", "--output", str(out), "--markdown", str(md), "-q"]).result()
    assert code == 0, capsys.readouterr().err
    records = json.loads(out.read_text())
    ours, *copies = records
    assert ours["impl"] == "ours" and ours["backend"] == "native" and ours["file"] == TINY.name
    assert ours["samples"] == len(ours["ms"]) == 5 and ours["group"] == 1
    assert ours["min_ms"] <= ours["p10_ms"] <= ours["median_ms"] <= ours["p90_ms"] <= ours["max_ms"]
    assert ours["input"] == [1, 3, 8, 8] and ours["image"] == "tiny_mlp.npz in0"
    check = ours["vs_reference"]  # eager torch's out0 for the same in0
    assert check["max_rel"] < 1e-5 and check["top1_equal"], check
    if ours["timestamps"]:
        assert ours["gpu_pass_ms"] > 0 and ours["gpu_profile_ms"] > 0 and ours["dispatches"] >= 2
        assert "aten.linear.default" in {row["op"] for row in ours["profile"]}
    # the copy kernel over the weights: Linear(192, 32) and Linear(32, 10), float32
    assert [c["variant"] for c in copies] == ["copy4-256", "copy4-64x16"]
    assert all(c["weights_bytes"] == 4 * (192 * 32 + 32 + 32 * 10 + 10) and c["us"] > 0
               for c in copies)
    assert "| ours | native: " in md.read_text()


def test_conv_programs_are_timed_or_name_the_missing_op(tmp_path):
    convs = vision_shapes.parse_convs("3x3s1-4x8-4,1x1s2-4x8-8")
    assert vision_bench.conv_list(None, HERE / "convs") == convs[::-1]  # the folder's, sorted
    out = tmp_path / "c.json"
    assert _GPU_THREAD.submit(vision_bench.main_convs, HERE / "convs", convs, torch=False,
                              via="programs", output=out, progress=lambda text: None).result() == 0
    records = json.loads(out.read_text())
    ours = [r for r in records if r["impl"] == "ours"]
    assert [r["shape"] for r in ours] == [c.name for c in convs]
    if "aten.convolution.default" in pte_webgpu.operator_names():
        for r, conv in zip(ours, convs):
            assert r["us"] > 0 and r["tflops"] == pytest.approx(conv.flops / r["us"] / 1e6)
            assert "aten.convolution.default" in r["ops"]
        assert {r["variant"] for r in records if r["impl"] == "copy"} == {"copy4-256",
                                                                          "copy4-64x16"}
    else:
        assert all("aten.convolution.default" in r["error"] for r in ours), ours


def test_conv_variants_through_conv_gpu_where_it_exists(tmp_path):
    if vision_bench.conv_gpu_module() is None:
        pytest.skip("bench/conv_gpu.py is not in this checkout")
    (conv,) = vision_shapes.parse_convs("3x3s2-8x9-8")
    out = tmp_path / "g.json"
    assert _GPU_THREAD.submit(vision_bench.main_convs, tmp_path, [conv], torch=False,
                              via="conv_gpu", output=out, progress=lambda text: None).result() == 0
    records = json.loads(out.read_text())
    ours = [r for r in records if r["impl"] == "ours"]
    assert sum(r["variant"].startswith("chosen") for r in ours) == 1 and len(ours) >= 2
    assert all(r["shape"] == conv.name and r["us"] > 0 for r in ours)
    assert all(r["tflops"] == pytest.approx(conv.flops / r["us"] / 1e6) for r in ours)
    assert "chosen" in vision_bench.conv_markdown(records)


def test_torch_side_runs_the_same_module_with_the_same_weights():
    torch = pytest.importorskip("torch", reason="the torch side runs where torch is installed")
    import vision_torch

    ref = np.load(HERE / "tiny_mlp.npz")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    got = vision_torch.model_records("tiny_mlp", "ci", ref["in0"], device=device, runs=3,
                                     warmup=1, compile=False, progress=lambda text: None)
    # on CUDA the eager forward captured as a CUDA graph too (compile=False: no torch.compile)
    eager = next(r for r in got["records"] if r["impl"] == "torch-eager")
    assert eager["samples"] == 3
    assert {r["impl"] for r in got["records"]} <= {"torch-eager", "torch-cuda-graph"}
    np.testing.assert_allclose(got["outputs"]["torch-eager"], ref["out0"], rtol=1e-5, atol=1e-6)
    (conv,) = vision_torch.conv_records(vision_shapes.parse_convs("3x3s1-4x8-4"), device,
                                        progress=lambda text: None)
    assert conv["us"] > 0 and conv["shape"] == "3x3s1-4x8-4"
