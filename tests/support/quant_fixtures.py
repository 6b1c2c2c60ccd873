"""The quantized test programs (tests/fixtures/quant, made by make_quant.py) and what a run of
one must show, shared by the native and the browser tests.

PENDING_OPS names the quantized ops the op table does not have yet. A fixture that needs one
of them must fail at load with an UnsupportedError naming one of its pending ops, and with
nothing else; every other fixture must load and match its reference. Empty the set as the
ops land: a fixture whose pending op has landed then fails here until the op leaves the set.
PENDING_LIMITS does the same for a fixture stopped by something that is not an op.
"""

import json
from pathlib import Path

from pte_webgpu.ops.registry import supported_ops

from tests.support.decoders import check_steps, needed_ops

QUANT = Path(__file__).resolve().parents[1] / "fixtures" / "quant"
INDEX = json.loads((QUANT / "index.json").read_text())
NAMES = sorted(INDEX)

PENDING_OPS = {
    "quantized_decomposed.choose_qparams.tensor",  # PT2E dynamic 8da8w
    "quantized_decomposed.quantize_per_tensor.Tensor",  # its plan kernel (Tensor_out)
}

# Fixtures that stop at load on something other than an op: the message part they must give.
PENDING_LIMITS = {
    # PT2E dynamic 8da8w: choose_qparams.tensor hands its scale to the next delegate as a
    # float64 tensor (4 delegates, quantize_per_tensor.Tensor_out between them)
    "pt2e_8da8w_perchannel": "is float64; this runtime supports",
}


def pending_ops(name: str) -> set[str]:
    return needed_ops(name, INDEX) & PENDING_OPS


def check_quant_report(name: str, report: dict) -> None:
    """Pending: an UnsupportedError naming a pending op of this fixture, nothing else.
    Otherwise: every op in the table, every step within the tolerance with torch's argmax."""
    needed = needed_ops(name, INDEX)
    pending = needed & PENDING_OPS
    unknown = needed - PENDING_OPS - set(supported_ops())
    assert not unknown, f"{name} needs ops that are neither in the table nor pending: {unknown}"
    if pending:
        assert "unsupported" in report, (
            f"{name} loaded and ran although it needs {sorted(pending)}: take the ops that "
            f"landed out of PENDING_OPS ({report.get('errors')})")
        message = report["unsupported"]
        if name in PENDING_LIMITS and PENDING_LIMITS[name] in message:
            return
        assert any(repr(op) in message for op in pending), (
            f"{name} failed for another reason than its pending ops {sorted(pending)}: {message}")
        return
    assert name not in PENDING_LIMITS, f"{name} loaded: take it out of PENDING_LIMITS"
    assert "unsupported" not in report, f"{name} should load: {report['unsupported']}"
    check_steps(INDEX[name], report)
