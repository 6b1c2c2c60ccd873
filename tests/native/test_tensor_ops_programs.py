"""The tensor-op programs of tests/fixtures/tensor_ops (exported by ExecuTorch 1.5.1 with the
Vulkan partitioner; some ops left to plan kernels) natively against eager torch, through
tests/support/stepwise_check.py (what the browser test runs), and the CPU reference
interpreter on the fp32 ones."""

import io

import numpy as np
import pytest
from pte_webgpu.formats import open_program
from pte_webgpu.reference import interpreter

from tests.support.gpu_thread import run_sync
from tests.support.stepwise_check import stepwise_report
from tests.support.tensor_ops_fixtures import CALLS, NAMES, TENSOR_OPS, tolerance
from tests.support.tensor_ops_graph import same


def _bytes(name):
    return (TENSOR_OPS / f"{name}.pte").read_bytes(), (TENSOR_OPS / f"{name}.npz").read_bytes()


@pytest.mark.parametrize("name", NAMES)
def test_matches_eager_torch(runtime, name):
    pte, npz = _bytes(name)
    report = run_sync(stepwise_report(runtime, pte, npz, tolerance(name)))
    assert report["calls"] == CALLS.get(name, 1) and report["first"] is None, report
    assert all(c == 0 for counts in report["mismatches"] for c in counts), report
    assert runtime.device.live_buffer_count == 0


@pytest.mark.parametrize("name", [n for n in NAMES if not n.endswith("_fp16") and n not in CALLS])
def test_cpu_reference_matches_eager_torch(name):
    pte, npz = _bytes(name)
    arrays = dict(np.load(io.BytesIO(npz)))
    ins = [arrays[f"in{i}"] for i in range(len(arrays)) if f"in{i}" in arrays]
    got = interpreter.run_program(open_program(pte), ins)
    wants = [arrays[f"out{i}"] for i in range(len(arrays)) if f"out{i}" in arrays]
    assert len(got) == len(wants)
    for i, (g, w) in enumerate(zip(got, wants)):
        same(np.asarray(g.numpy()).reshape(w.shape).astype(w.dtype), w, 1e-4, f"out{i}")
