"""The ExecuTorch-shaped API natively: method_names, metadata, `with program:` and
`with runtime:`, typed options at Runtime.create, adapter traits of a real adapter."""

import numpy as np
import pte_webgpu
import pytest

from tests.support.fixture_index import FIXTURES
from tests.support.gpu_thread import run_sync

pytest.importorskip("wgpu", reason="native backend needs pte-webgpu[native]")

NAME = "extra/minmax_bcast_3x1x8_4x8"  # a delegate and a non-delegated kernel


def test_program_api_and_with_closes(runtime):
    async def go():
        with await runtime.load_program((FIXTURES / f"{NAME}.pte").read_bytes()) as program:
            names = program.method_names
            meta = program.metadata("forward")
            ref = np.load(FIXTURES / f"{NAME}.npz")
            outs = await program.load_method("forward").execute([ref["in0"], ref["in1"]])
            live = runtime.device.live_buffer_count
        return program, names, meta, outs, live

    program, names, meta, outs, live = run_sync(go())
    assert names == {"forward"} and isinstance(names, set)
    # what metadata says is what execute gives
    assert [o.shape for o in outs] == [t.shape for t in meta.outputs]
    assert [o.dtype.name for o in outs] == [t.dtype for t in meta.outputs]
    assert [(d.backend, d.ops) for d in meta.delegates] == \
        [("VulkanBackend", ("aten.minimum.default",))]
    assert meta.operators == ("aten::maximum.out",) and meta.instruction_count == 2
    assert live > 0 and runtime.device.live_buffer_count == 0  # `with` closed it
    assert program not in runtime.programs
    with pytest.raises(pte_webgpu.InputError, match=r"no method 'nope'.*\['forward'\]"):
        program.metadata("nope")


def test_method_and_program_show_only_their_api(runtime):
    """As ExecuTorch's Python runtime: the plan, buffers, recording and state of a Method
    (and a Program's storage rule and budget) are internals, not attributes to lean on."""
    async def go():
        with await runtime.load_program((FIXTURES / f"{NAME}.pte").read_bytes()) as program:
            method = program.load_method("forward")
            return ({n for n in dir(method) if not n.startswith("_")},
                    {n for n in dir(program) if not n.startswith("_")},
                    method.metadata, program.metadata("forward"))

    method_api, program_api, method_meta, program_meta = run_sync(go())
    assert method_api == {"name", "kernels", "notes", "last_profile", "load_seconds", "closed",
                          "metadata", "input_specs", "execute", "reset", "close"}
    assert program_api == {"runtime", "file", "closed", "method_names", "metadata",
                           "load_method", "close"}
    assert method_meta == program_meta and method_meta.name == "forward"
    assert method_meta.num_inputs() == 2 and method_meta.num_outputs() == 2  # min and max


def test_with_runtime_closes_every_program():
    async def go():
        with await pte_webgpu.Runtime.create("native") as rt:
            await rt.load_program((FIXTURES / f"{NAME}.pte").read_bytes())
            before = rt.device.live_buffer_count
        return rt, before

    rt, before = run_sync(go())
    assert before > 0 and rt.device.live_buffer_count == 0 and rt.programs == []


def test_bad_options_fail_before_any_device():
    with pytest.raises(pte_webgpu.InputError, match="valid options: float16, variants, max_alloc_bytes"):
        run_sync(pte_webgpu.Runtime.create("native", options={"float_16": "f32"}))


def test_options_force_a_variant_of_every_family(runtime):
    """variants={...} reaches matmul and reduce builds too; the choice is recorded."""
    async def go(family, name):
        rt = await pte_webgpu.Runtime.create("native", options={"variants": {family: name}})
        try:
            program = await rt.load_program((FIXTURES / "block_1x8x64.pte").read_bytes())
            kernels = program.load_method().kernels
            program.close()
            return kernels
        finally:
            rt.close()

    for family, ops, names in (("matmul", {"aten.linear.default"}, ("tiled", "dot")),
                               ("reduce", {"aten._softmax.default"}, ("tree", "lines"))):
        for name in names:
            picked = {(k["variant"], k["picked"]) for k in run_sync(go(family, name))
                      if k["op"] in ops}
            assert picked == {(name, "forced")}, (family, name, picked)


def test_adapter_traits_of_the_real_adapter(runtime):
    info = runtime.adapter
    traits = info.traits
    assert traits.max_invocations == min(info.limits["maxComputeInvocationsPerWorkgroup"],
                                         info.limits["maxComputeWorkgroupSizeX"])
    assert traits.shader_f16 == ("shader-f16" in info.features)
    assert not traits.subgroups  # naga: no `enable subgroups;`
    low, high = traits.subgroup_sizes  # wgpu reports them (lavapipe here: 4 to 128)
    assert 1 <= low <= high <= 128
    if "llvmpipe" in info.summary().lower():
        assert traits.is_cpu
