"""The ExecuTorch-shaped API in Pyodide on Chromium's WebGPU: method_names, metadata,
operator_names, `with` closing, typed options and the adapter's traits."""

import json

import pytest
from pte_webgpu.ops.registry import operator_names

from tests.support.fixture_index import FIXTURES

pytestmark = pytest.mark.browser

NAME = "extra/minmax_bcast_3x1x8_4x8"  # a delegate and a non-delegated kernel

API = f"""
import pte_webgpu
rt = await pte_webgpu.Runtime.create()
with rt:
    arrays = npy.read_npz(await fetch_bytes('/fixtures/{NAME}.npz'))
    with await rt.load_program(await fetch_bytes('/fixtures/{NAME}.pte')) as program:
        meta = program.metadata('forward')
        outs = await program.load_method('forward').execute([arrays['in0'], arrays['in1']])
        live_open = rt.device.live_buffer_count
    live_after = rt.device.live_buffer_count
    try:
        await pte_webgpu.Runtime.create(options={{'variants': {{'matmul': 'fast'}}}})
        bad = None
    except pte_webgpu.InputError as e:
        bad = str(e)
    t = rt.adapter.traits
    result = {{
        'names': sorted(program.method_names), 'is_set': isinstance(program.method_names, set),
        'inputs': [[list(i.shape), i.dtype, list(i.dim_order)] for i in meta.inputs],
        'outputs': [[list(o.shape), o.dtype] for o in meta.outputs],
        'got': [[list(o.shape), o.dtype.name] for o in outs],
        'delegates': [[d.backend, list(d.ops)] for d in meta.delegates],
        'operators': list(meta.operators), 'instructions': meta.instruction_count,
        'operator_names': sorted(pte_webgpu.operator_names()),
        'live_open': live_open, 'live_after': live_after, 'programs': len(rt.programs),
        'bad_option': bad,
        'traits': [t.is_cpu, t.subgroups, t.max_invocations, t.timestamps, t.shader_f16],
        'adapter': rt.adapter.summary(),
    }}
result['closed_live'] = rt.device.live_buffer_count
result
"""


def test_api_in_pyodide(browser_session):
    browser_session.run_python((FIXTURES.parent / "browser" / "page_support.py").read_text())
    r = browser_session.run_python(API)
    want = json.loads((FIXTURES / f"{NAME}.json").read_text())
    assert r["names"] == ["forward"] and r["is_set"]
    assert r["inputs"] == [[i["shape"], i["dtype"], list(range(len(i["shape"])))]
                           for i in want["inputs"]]
    assert r["outputs"] == [[o["shape"], o["dtype"]] for o in want["outputs"]] == r["got"]
    assert r["delegates"] == [["VulkanBackend", ["aten.minimum.default"]]]
    assert r["operators"] == want["non_delegated_ops"] and r["instructions"] == 2
    assert set(r["operator_names"]) == operator_names()  # the same registry in the page
    assert r["live_open"] > 0 and r["live_after"] == 0 and r["programs"] == 0
    assert "matmul variant 'fast'" in r["bad_option"]
    is_cpu, subgroups, invocations, _, f16 = r["traits"]
    if "swiftshader" in r["adapter"].lower():  # a CPU adapter with subgroups, no shader-f16
        assert is_cpu and subgroups and invocations >= 64 and not f16, r
    else:  # a GPU's (the lent NVIDIA one in tools/gpu_browser_tests.sh)
        assert not is_cpu and invocations >= 64, r
