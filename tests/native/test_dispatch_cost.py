"""bench/dispatch_cost.py natively (lavapipe here): its recordings run every dispatch
they hold (the chain's one buffer counts them), and a run gives each layout's wall time
for both counts and the cost a dispatch adds."""

import struct
import sys
from pathlib import Path

from pte_webgpu.gpu.recording import Recording

from tests.support.gpu_thread import run_sync

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import dispatch_cost  # noqa: E402


def test_a_chain_runs_each_of_its_dispatches(device):
    async def go():
        resources = []
        try:
            steps = await dispatch_cost._steps(device, "chain", 9, resources)
            acc = resources[0]
            staging = device.create_buffer(256, ("map_read", "copy_dst"), "staging")
            resources.append(staging)
            (raw,), _ = await device.run(Recording(steps), [(acc, 256)], staging)
            return struct.unpack("<64f", bytes(raw[:256]))
        finally:
            for buf in resources:
                device.destroy_buffer(buf)
    assert run_sync(go()) == (9.0,) * 64


def test_run_reports_every_layout(device):
    records = run_sync(dispatch_cost.run(device, counts=(4, 12), repeats=2))
    assert [r["layout"] for r in records] == ["chain", "apart", "bound8"]
    for r in records:
        assert r["counts"] == [4, 12] and len(r["wall_us"]) == 2
        assert all(t > 0 for t in r["wall_us"]), r
        assert r["wall_per_dispatch_us"] == (r["wall_us"][1] - r["wall_us"][0]) / 8
        assert ("gpu_per_dispatch_us" in r) == device.info.traits.timestamps
