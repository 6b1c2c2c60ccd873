"""The 8-bit fixtures (tests/fixtures/quant8) and what a run of one must show, shared by
the native and the browser tests."""

import json
from pathlib import Path

QUANT8 = Path(__file__).resolve().parents[1] / "fixtures" / "quant8"
INDEX = json.loads((QUANT8 / "index.json").read_text())
NAMES = sorted(n for n, e in INDEX.items() if "export_error" not in e)
# a value the output quantize rounds lies this close to a half: ours and torch's float
# sums (both f32, in different orders) may round it to neighbouring integers
TIE = 1e-3




def expected_load_error(name: str):
    """(error class name, words its message holds) for a fixture that must fail at load:
    the two linear_q8ta_q8csw programs without bias (int8_output), and torchao's
    Int8WeightOnlyConfig, whose int8 weights are permuted by a plan kernel
    (aten::permute_copy.out of an int8 tensor: unsupported, typed)."""
    if int8_output(name):
        return "InputError", ["int8", "float32"]
    if INDEX[name]["kind"] == "torchao-int8wo":
        return "UnsupportedError", ["permute_copy", "int8"]
    return None


def int8_output(name: str) -> bool:
    """ExecuTorch 1.5.1 serializes linear_q8ta_q8csw WITHOUT bias with an int8 output
    tensor (its meta function runs F.linear on the int8 input without dequantizing it;
    with a bias, int8 + float32 bias promotes to float32), while the plan's output is
    float32: the program contradicts itself and must fail at load, typed."""
    e = INDEX[name]
    return e["kind"] == "pt2e-static" and not e["bias"]


def check_quant8(name: str, report: dict) -> None:
    """Every step within the fixture's tolerance of eager torch; where the output is
    quantized, an element may differ only by one quantum and only where the value
    rounded sits at a tie (see TIE)."""
    expected = expected_load_error(name)
    if expected:
        assert report.get("load_error") == expected[0], report
        assert all(w in report["message"] for w in expected[1]), report
        return
    assert "load_error" not in report, report
    steps = report["steps"]
    assert len(steps) == INDEX[name]["steps"] >= 3
    for k, step in enumerate(steps):
        assert step["shape_ok"], (k, step)
        for i, ours, torch, tie in step["bad"]:
            assert tie is not None, (name, k, i, ours, torch, step["max_err"])
            assert abs(abs(tie - int(tie)) - 0.5) < TIE, (name, k, i, ours, torch, tie)
        assert step["n_bad"] <= 2, (name, k, step)
