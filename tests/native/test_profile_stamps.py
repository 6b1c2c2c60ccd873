"""``execute(profile=True)`` natively, both ways of timing: a timed pass per dispatch (the
per-pass floor) and, where the device has timestamps inside passes, the step's own passes
with a timestamp after each dispatch. Same outputs as an unprofiled execute, a row per
op, every dispatch that ran timed, the ones left out (empty grids) at 0. (Which total is
larger depends on the adapter: lavapipe runs the stamped step slower.)"""

from dataclasses import replace

import numpy as np
import pytest
import pte_webgpu

from tests.support.decoders import DECODERS
from tests.support.gpu_thread import run_sync

pytest.importorskip("wgpu", reason="native backend needs pte-webgpu[native]")
NAME = "llama_dynamic_rope"


def _profiled(monkeypatch, stamped: bool):
    from pte_webgpu.gpu.adapter import AdapterInfo, traits_of

    monkeypatch.setattr(AdapterInfo, "traits", property(
        lambda info: replace(traits_of(info), timestamps_in_pass=stamped
                             and traits_of(info).timestamps_in_pass)))

    async def go():
        with await pte_webgpu.Runtime.create("native") as rt:
            if stamped and not rt.device.info.traits.timestamps_in_pass:
                pytest.skip("this adapter has no timestamps inside passes")
            if "timestamp-query" not in rt.adapter.features:
                pytest.skip("this adapter has no timestamps")
            program = await rt.load_program((DECODERS / f"{NAME}.pte").read_bytes())
            method = program.load_method("forward")
            prompt = np.arange(3, 9, dtype=np.int64)[None]  # 6 rows: empty alternatives
            plain = await method.execute([prompt, np.array([0], np.int64)])
            got = await method.execute([prompt, np.array([0], np.int64)], profile=True)
            return plain, got, method.last_profile, method.kernels
    return run_sync(go())


@pytest.mark.parametrize("stamped", [False, True], ids=["pass-per-dispatch", "inside-passes"])
def test_profile_times_every_dispatch_and_keeps_outputs(monkeypatch, stamped):
    plain, got, rows, kernels = _profiled(monkeypatch, stamped)
    for a, b in zip(plain, got):
        np.testing.assert_array_equal(a, b)
    assert [r["op"] for r in rows] == [k["op"] for k in kernels]
    timed = [r for r in rows if r["dispatches"]]
    assert timed and all(r["us"] >= 0 for r in rows)
    assert sum(r["us"] for r in timed) > 0
    assert all(r["us"] == 0 for r in rows if not r["dispatches"])

