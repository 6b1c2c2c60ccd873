"""The test decoders (tests/fixtures/decoders, made by make_decoders.py) and what a run of
one must show, shared by the native and the browser tests."""

import json
from pathlib import Path

import pytest
from pte_webgpu.model.plan_graph import kernel_op_name
from pte_webgpu.ops.registry import supported_ops

DECODERS = Path(__file__).resolve().parents[1] / "fixtures" / "decoders"
INDEX = json.loads((DECODERS / "index.json").read_text())
NAMES = sorted(n for n, e in INDEX.items() if e.get("kind") != "dynamic-shape")


def needed_ops(name: str, index: dict = INDEX) -> set[str]:
    """Delegate ops plus non-delegated kernels of an index entry, as the registry names them."""
    ops = set()
    for method in index[name]["methods"].values():
        for d in method["delegates"]:
            ops |= set(d.get("vk_ops", {}))
        for kernel in method["kernels"]:
            base, overload = kernel.split(".", 1) if "." in kernel else (kernel, "out")
            ops.add(kernel_op_name(base, overload))
    return ops


def missing_ops(name: str) -> set[str]:
    return needed_ops(name) - set(supported_ops())


def check_report(name: str, report: dict) -> None:
    """Every step within the tolerance with torch's argmax; reset restores step 0; state
    carries over. A decoder with ops not in the table must fail at load naming one."""
    missing = missing_ops(name)
    if "unsupported" in report:
        message = report["unsupported"]
        assert missing, f"{name} should load: {message}"
        assert any(repr(op) in message for op in missing), message
        pytest.xfail(f"waits for ops {sorted(missing)}: {message[:160]}")
    assert not missing, f"{name} loaded although {sorted(missing)} are not in the table"
    check_steps(INDEX[name], report)


def check_steps(entry: dict, report: dict) -> None:
    """A run that loaded: every step within the entry's tolerance with torch's argmax in
    every row, reset restores step 0, and state really carries over."""
    tol = entry["tolerance"]
    assert len(report["errors"]) == entry["steps"] >= 7
    for k, err in enumerate(report["errors"]):
        assert err <= tol, (k, report["errors"])
    assert report["argmax"] == report["want_argmax"]
    assert report["reset_error"] <= tol
    if report["state"]:
        # without step 0 the cache lacks its row: far off, where the real run is close
        assert report["skip_step0_error"] > 10 * max(report["errors"]) + 1e-3, report


def fold_report(name: str, fold, monkeypatch, options: dict | None = None) -> dict:
    """fusion_check's report of test decoder ``name`` natively with one fold (a fusion
    module with ENABLED: fusion_rope, fusion_merge) on and off, every other fold on; a
    prefill of 20 rows where the program is dynamic, else 1, then 3 decode steps."""
    import pte_webgpu

    from tests.support.fusion_check import fusion_report
    from tests.support.gpu_thread import run_sync

    args = INDEX[name]["model_args"]
    pte = (DECODERS / f"{name}.pte").read_bytes()
    prompt = 20 if INDEX[name].get("dynamic") else 1

    async def make(fuse):
        monkeypatch.setattr(fold, "ENABLED", fuse["fuse"])
        return await pte_webgpu.Runtime.create("native", options=options)
    return run_sync(fusion_report(make, pte, args["vocab_size"], prompt, 3))
