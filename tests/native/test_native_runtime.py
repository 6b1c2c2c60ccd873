"""The same runtime natively through wgpu (lavapipe here): fixtures match torch."""

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import pte_webgpu
from pte_webgpu.ops.registry import supported_ops

wgpu = pytest.importorskip("wgpu", reason="native backend needs pte-webgpu[native]")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# Shared fixtures plus our own exports (tests/fixtures/extra, made by make_extra.py).
INDEX = json.loads((FIXTURES / "index.json").read_text()) + [
    dict(e, name="extra/" + e["name"])
    for e in json.loads((FIXTURES / "extra" / "index.json").read_text())]


# One thread with its own event loops: the browser tests' sync Playwright keeps an
# asyncio loop running on the main thread, where asyncio.run() would refuse.
_GPU_THREAD = ThreadPoolExecutor(max_workers=1)


def run_sync(coro):
    return _GPU_THREAD.submit(asyncio.run, coro).result()


def _runnable(entry) -> bool:
    ops = {op for delegate in entry["vk_ops"] for op in delegate}
    return ops <= set(supported_ops()) and not entry["non_delegated_ops"] \
        and "fp16" not in entry["name"]


@pytest.fixture(scope="module")
def runtime():
    try:
        rt = run_sync(pte_webgpu.Runtime.create("native"))
    except pte_webgpu.GpuError as e:
        pytest.skip(f"no native adapter: {e}")
    yield rt
    rt.close()


def _run(rt, name, ptd_files=()):
    async def go():
        pte = (FIXTURES / f"{name}.pte").read_bytes()
        data = [(p, (FIXTURES / p).read_bytes()) for p in ptd_files]
        program = await rt.load_program(pte, data)
        try:
            method = await program.load_method()
            ref = np.load(FIXTURES / f"{name}.npz")
            ins = [ref[k] for k in sorted(ref.files) if k.startswith("in")]
            outs = await method.execute(ins)
            return outs, [ref[k] for k in sorted(ref.files) if k.startswith("out")]
        finally:
            program.close()
    return run_sync(go())


@pytest.mark.parametrize("entry", [e for e in INDEX if _runnable(e)], ids=lambda e: e["name"])
def test_fixture_matches_torch_natively(runtime, entry):
    outs, wants = _run(runtime, entry["name"], entry.get("ptd_files", []))
    assert len(outs) == len(wants)
    for got, want in zip(outs, wants):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)
    assert runtime.device.live_buffer_count == 0
