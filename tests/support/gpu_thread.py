"""The one thread native GPU work runs on in tests, and running a fixture there.

The browser tests' sync Playwright keeps an asyncio loop running on the main
thread, where asyncio.run() would refuse; this thread has loops of its own.
"""

import asyncio
from concurrent.futures import ThreadPoolExecutor

_GPU_THREAD = ThreadPoolExecutor(max_workers=1)


def run_sync(coro):
    return _GPU_THREAD.submit(asyncio.run, coro).result()


def native_runtime():
    """Body of a pytest fixture: a native Runtime, closed after the test(s); the test is
    skipped where wgpu finds no adapter."""
    import pte_webgpu
    import pytest
    try:
        rt = run_sync(pte_webgpu.Runtime.create("native"))
    except pte_webgpu.GpuError as e:
        pytest.skip(f"no native adapter: {e}")
    yield rt
    rt.close()


def native_device():
    """Body of a pytest fixture: a bare NativeDevice (for tests that build graphs by hand),
    closed after the test(s); skipped where wgpu finds no adapter."""
    import pytest
    from pte_webgpu.errors import GpuError
    from pte_webgpu.gpu.native import NativeDevice
    try:
        dev = run_sync(NativeDevice.create())
    except GpuError as e:
        pytest.skip(f"no native adapter: {e}")
    yield dev
    dev.close()


def run_fixture(rt, name: str, ptd_files=()):
    """Load ``tests/fixtures/<name>.pte`` (+ .ptd), run it on its npz inputs:
    (outputs, torch reference outputs)."""
    import numpy as np

    from tests.support.fixture_index import FIXTURES

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
