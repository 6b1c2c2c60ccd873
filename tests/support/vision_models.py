"""The vision and audio programs (tests/fixtures/vision, made by make_vision.py) and what a run
of one must show, shared by the native and the browser tests.

A program runs when every op it needs (its Vulkan delegates' ops and its plan kernels) is in
the op table, and then must match eager torch within its tolerance relative to the output's
scale (largest |reference|): 1e-4 in fp32, 2e-2 under force_fp16. A program that needs an op
not in the table must fail at load with an UnsupportedError naming one of those ops, and is
reported as an xfail naming them all; once the ops land it runs and must pass.
"""

import json
from pathlib import Path

import pytest
from pte_webgpu.ops.registry import supported_ops

from tests.support.fixture_index import needed_ops

VISION = Path(__file__).resolve().parents[1] / "fixtures" / "vision"
INDEX = {e["name"]: e for e in json.loads((VISION / "index.json").read_text())}
NAMES = sorted(INDEX)


def missing_ops(name: str) -> set[str]:
    return needed_ops(INDEX[name]) - set(supported_ops())


def expect_unsupported(name: str, message: str | None) -> None:
    """For a program with ops missing: the load failed (``message``) naming one; xfail."""
    missing = missing_ops(name)
    assert missing, f"{name} has every op in the table, so it should load: {message}"
    assert message is not None, f"{name} loaded although {sorted(missing)} are not in the table"
    assert any(repr(op) in message for op in missing), (
        f"{name} failed for another reason than its missing ops {sorted(missing)}: {message}")
    pytest.xfail(f"waits for ops {sorted(missing)}")


def check_error(name: str, shapes: list, max_abs: list[float]) -> None:
    """The run's output shapes and largest absolute errors against torch's outputs."""
    entry = INDEX[name]
    assert shapes == [o["shape"] for o in entry["outputs"]], (shapes, entry["outputs"])
    tol = entry["tolerance_rel_to_scale"] * entry["out0_scale"]
    assert max(max_abs) <= tol, (
        f"{name}: largest error {max(max_abs):.3g} > {tol:.3g} "
        f"({entry['tolerance_rel_to_scale']} of the output scale {entry['out0_scale']:.3g})")
