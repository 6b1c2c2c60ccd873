"""The same runtime natively through wgpu (lavapipe here): fixtures match torch."""

import asyncio
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import pte_webgpu

wgpu = pytest.importorskip("wgpu", reason="native backend needs pte-webgpu[native]")
from tests.fixture_index import FIXTURES, INDEX, runnable, tolerance  # noqa: E402

# One thread with its own event loops: the browser tests' sync Playwright keeps an
# asyncio loop running on the main thread, where asyncio.run() would refuse.
_GPU_THREAD = ThreadPoolExecutor(max_workers=1)


def run_sync(coro):
    return _GPU_THREAD.submit(asyncio.run, coro).result()


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
            method = program.load_method()
            ref = np.load(FIXTURES / f"{name}.npz")
            ins = [ref[k] for k in sorted(ref.files) if k.startswith("in")]
            outs = await method.execute(ins)
            return outs, [ref[k] for k in sorted(ref.files) if k.startswith("out")]
        finally:
            program.close()
    return run_sync(go())


@pytest.mark.parametrize("entry", [e for e in INDEX if runnable(e)], ids=lambda e: e["name"])
def test_fixture_matches_torch_natively(runtime, entry):
    outs, wants = _run(runtime, entry["name"], entry.get("ptd_files", []))
    tol = tolerance(entry)
    assert len(outs) == len(wants)
    for got, want in zip(outs, wants):
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   atol=tol, rtol=tol)
    assert runtime.device.live_buffer_count == 0
