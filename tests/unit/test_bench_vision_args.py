"""`pte-webgpu bench --vision` argument errors (exit 2, one line, before any GPU or browser),
bench/vision_shapes.py's conv shapes, and the records' checks and tables of
bench/vision_bench.py, on records of the shape the runs write."""

import contextlib
import io
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from pte_webgpu.app import cli

from tests.support.cli import one_line_exit_2

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))
import vision_bench  # noqa: E402
import vision_job  # noqa: E402
import vision_shapes  # noqa: E402

FIXTURES = REPO / "tests" / "fixtures"
TINY = FIXTURES / "vision_bench" / "tiny_mlp.pte"


def cli_run(*args):
    """The CLI in this process (a subprocess takes seconds to start on a loaded machine):
    its exit status and what it wrote on stderr."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = cli.main([str(a) for a in args])
        except SystemExit as e:  # argparse's usage errors
            code = e.code
    return SimpleNamespace(returncode=code, stderr=err.getvalue())


@pytest.mark.parametrize("args, fragment", [
    (["--op", "linear"], "--vision does not take --op"),
    (["--shapes", "1x64"], "--vision does not take --shapes"),
    (["--contexts", "16"], "--vision does not take --contexts"),
    (["--steps", "3"], "--vision does not take --steps"),
    (["--profile"], "--vision does not take --profile"),
    (["--runs", "0"], "--runs"),
    (["--warmup", "-1"], "--warmup"),
    (["--onnx", "m.onnx"], "--onnx is for --backend browser"),
    (["--torch-model", "resnet18:huge"], "NAME:ci or NAME:full"),
    (["--inputs", "/nonexistent/x.npz"], "cannot read --inputs"),
    (["--llm", TINY], "one model at a time"),
])
def test_bad_vision_arguments_exit_2_with_one_line(args, fragment):
    one_line_exit_2(cli_run("bench", "--vision", TINY, "--backend", "native", *args), fragment)


def test_browser_only_and_native_only_flags(tmp_path):
    one_line_exit_2(cli_run("bench", "--vision", TINY, "--backend", "browser", "--torch-model",
                            "tiny_mlp"), "--torch-model is for --backend native")
    one_line_exit_2(cli_run("bench", "--llm", TINY, "--runs", "3"), "--llm does not take --runs")


def test_a_program_that_is_not_an_image_model_or_an_image_of_another_shape(tmp_path):
    one_line_exit_2(cli_run("bench", "--vision", tmp_path / "no.pte"), "cannot read")
    # two inputs: not one image
    one_line_exit_2(cli_run("bench", "--vision", FIXTURES / "add_2x3x4.pte"),
                    "an image model takes one float32 input")
    np.savez(tmp_path / "x.npz", in0=np.zeros([1, 3, 4, 4], np.float32))
    one_line_exit_2(cli_run("bench", "--vision", TINY, "--inputs", tmp_path / "x.npz"),
                    "in0 is [1, 3, 4, 4], the program takes [1, 3, 8, 8]")
    (tmp_path / "bad.pte.gz").write_bytes(b"not gzip")
    one_line_exit_2(cli_run("bench", "--vision", tmp_path / "bad.pte.gz"), "gzip")


def test_conv_shapes_are_resnet18s_and_round_trip_by_name():
    convs = vision_shapes.RESNET18_CONVS
    assert [c.name for c in vision_shapes.parse_convs(None)] == [c.name for c in convs]
    assert all(vision_shapes.parse_conv(c.name) == c for c in convs)
    stem = vision_shapes.parse_conv("7x7s2-3x224-64")
    assert (stem.pad, stem.out_hw, stem.kind) == (3, 112, "7x7 s2")
    assert stem.flops == 2 * 64 * 112 * 112 * 3 * 49
    three = {(c.cin, c.hw) for c in convs if c.k == 3 and c.stride == 1}
    assert three == {(64, 56), (128, 28), (256, 14), (512, 7)}
    assert {c.out_hw for c in convs if c.k == 1} == {28, 14, 7}
    for bad in ("3x5s1-64x56-64", "3x3s1-64x56", "3x3-64x56-64", "3x3s0-64x56-64",
                "2x2s1-4x1-4"):
        with pytest.raises(ValueError, match="conv shape"):
            vision_shapes.parse_conv(bad)


def test_spread_is_order_free_and_names_the_quantiles():
    s = vision_job.spread([5.0, 1.0, 3.0, 2.0, 4.0])
    assert s == {"median_ms": 3.0, "min_ms": 1.0, "max_ms": 5.0, "p10_ms": 1.0, "p90_ms": 5.0,
                 "samples": 5}
    assert vision_job.spread(list(range(11)))["p90_ms"] == 9


def test_checks_compare_each_output_with_the_reference_and_ours():
    want = np.array([[1.0, -2.0, 4.0]], np.float32)
    outputs = {"ours": want + 1e-6, "ort-web jsep": want[:, ::-1].copy(),
               "torch-eager": want.copy()}
    records = [{"impl": "ours"}, {"impl": "ort-web", "variant": "ort-web jsep"},
               {"impl": "torch-eager"}, {"impl": "copy", "variant": "copy4-256"}]
    problems = vision_bench.attach_checks(records, outputs, want, "float32")
    ours, ort, eager, copy = records
    assert ours["vs_reference"]["max_rel"] < 1e-6 and ours["vs_reference"]["top1_equal"]
    assert ort["vs_reference"]["max_abs"] == pytest.approx(3.0)
    assert not ort["vs_reference"]["top1_equal"] and not ort["vs_ours"]["top1_equal"]
    assert eager["vs_ours"]["max_abs"] == pytest.approx(1e-6, rel=0.1)
    assert "vs_reference" not in copy
    assert problems == ["ort-web jsep: output differs from the reference by 7.50e-01 of its "
                        "largest value"]
    # no reference (a seeded image): shapes only, nothing flagged
    records = [{"impl": "ours"}]
    assert vision_bench.attach_checks(records, {"ours": want}, None, "float32") == []
    assert records[0]["vs_reference"] == {"shape": [1, 3], "want_shape": None}


def _latency(impl, median, **more):
    return dict({"impl": impl, "median_ms": median, "p10_ms": median * 0.9, "p90_ms": median * 1.2,
                 "min_ms": median * 0.8, "adapter": "gpu", "file": "m.pte"}, **more)


def test_the_table_gives_ours_over_each_peer():
    records = [_latency("ours", 2.0, gpu_pass_ms=1.25, gpu_profile_ms=1.5,
                        vs_reference={"max_abs": 1e-6, "max_rel": 1e-7, "top1_equal": True}),
               _latency("torch-eager", 4.0, gpu_median_ms=3.0),
               _latency("ort-web", 1.0, variant="ort-web jsep"),
               {"impl": "torch-compile (reduce-overhead)", "error": "BackendCompilerFailed: x"},
               {"impl": "copy", "variant": "copy4-256", "us": 10.0, "gbps": 100.0,
                "timing": "timestamps", "weights_bytes": 1_000_000}]
    text = vision_bench.markdown(records)
    assert "| ours | gpu | 2.000 | 1.800-2.400 | 1.600 | 1.250 / 1.500 | 1.0e-07 | - |" in text
    assert "| torch-eager | gpu | 4.000 |" in text and "| 0.50x |" in text
    assert "3.000 (CUDA events, forward)" in text
    assert "| ort-web jsep | gpu | 1.000 |" in text and "| 2.00x |" in text
    assert "torch-compile (reduce-overhead) failed: BackendCompilerFailed: x" in text
    assert "copy kernel over the weights (1.00 MB): 10.0 µs, 100.0 GB/s" in text


def test_the_conv_table_gives_speed_over_cudnn_per_kind():
    conv = vision_shapes.parse_conv("3x3s1-64x56-64")
    records = [{"impl": "ours", "shape": conv.name, "kind": conv.kind, "us": 20.0,
                "tflops": 1.0, "variant": "gemm-64x64"},
               {"impl": "copy", "shape": conv.name, "kind": conv.kind, "us": 5.0},
               {"impl": "copy", "shape": conv.name, "kind": conv.kind, "us": 4.0},
               {"impl": "torch-cudnn", "shape": conv.name, "kind": conv.kind, "us": 10.0,
                "tflops": 2.0},
               {"impl": "ours", "shape": "1x1s2-64x56-128", "kind": "1x1 s2",
                "error": "UnsupportedError: aten.convolution.default"}]
    text = vision_bench.conv_markdown(records)
    assert "| 3x3s1-64x56-64 | 3x3 s1 | 20.0 (gemm-64x64) | 1 | 10.0 | 2 | 0.50x | 4.0 | - |" \
        in text
    assert "3x3 s1: ours / cuDNN speed, geometric mean over 1 shapes: 0.50x" in text
    assert "UnsupportedError: aten.convolution.default" in text
    # conv_gpu's records: the rule's pick is the row, the fastest variant beside it
    records[0]["variant"] = "gemm-64x64"
    records += [{"impl": "ours", "shape": conv.name, "kind": conv.kind, "us": 25.0,
                 "tflops": 0.8, "variant": "chosen direct"},
                {"impl": "ours", "shape": conv.name, "kind": conv.kind, "us": 5.0,
                 "variant": "split 1st dispatch", "part": True}]
    text = vision_bench.conv_markdown(records)
    assert "| 3x3s1-64x56-64 | 3x3 s1 | 25.0 (chosen direct) | 0.8 | 10.0 | 2 | 0.40x | 4.0 | " \
        "20.0 (gemm-64x64) |" in text


def test_the_files_beside_a_program_and_the_torch_module_they_name(tmp_path):
    assert vision_bench.beside(TINY, ".onnx") == TINY.with_suffix(".onnx")
    fp16 = tmp_path / "m-fp16.pte"
    fp16.touch()
    (tmp_path / "m.npz").touch()
    (tmp_path / "m.json").write_text('{"model": "resnet18", "size": "ci"}')
    assert vision_bench.beside(fp16, ".npz") == tmp_path / "m.npz"
    assert vision_bench.beside(fp16, ".onnx") is None
    assert vision_bench.torch_target(fp16, None) == ("resnet18", "ci")
    assert vision_bench.torch_target(fp16, "mobilenet_v2") == ("mobilenet_v2", "full")
    assert vision_bench.torch_target(tmp_path / "other.pte", None) is None
    assert vision_bench.torch_target(TINY, None) == ("tiny_mlp", "ci")


def test_the_image_is_the_npz_in0_else_seeded():
    x, ref, source = vision_bench.image_for([1, 3, 8, 8], TINY.with_suffix(".npz"))
    assert source == "tiny_mlp.npz in0" and ref.shape == (1, 10) and x.dtype == np.float32
    y, none, source = vision_bench.image_for([1, 3, 8, 8], None)
    assert none is None and source == "seeded normal"
    assert np.array_equal(y, vision_bench.image_for([1, 3, 8, 8], None)[0])
    shape, dtype = vision_bench.input_spec(TINY.read_bytes())
    assert (shape, dtype) == ([1, 3, 8, 8], "float32")
    assert vision_bench.program_dtype(TINY.read_bytes()) == "float32"
