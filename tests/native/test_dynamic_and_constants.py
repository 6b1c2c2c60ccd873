"""Dynamic-shape inputs (DYNAMIC_BOUND) and constant methods, natively."""

import numpy as np
import pte_webgpu
import pytest

from tests.support.decoders import DECODERS, INDEX
from tests.support.gpu_thread import run_sync

DYN = "dyn_mlp_constmethods"


def _with_program(runtime, name, fn):
    async def go():
        program = await runtime.load_program((DECODERS / f"{name}.pte").read_bytes())
        try:
            return await fn(program)
        finally:
            program.close()
    return run_sync(go())


def test_dynamic_rows_follow_the_input_size(runtime):
    ref = np.load(DECODERS / f"{DYN}.npz")

    async def go(program):
        method = program.load_method()
        return [(await method.execute([ref[f"step{k}_in0"]]))[0]
                for k in range(INDEX[DYN]["steps"])]

    outs = _with_program(runtime, DYN, go)
    sizes = set()
    for k, got in enumerate(outs):
        want = ref[f"step{k}_out0"]
        assert got.shape == want.shape
        sizes.add(got.shape[0])
        np.testing.assert_allclose(got, want, atol=1e-5, rtol=1e-5)
    assert len(sizes) > 4  # 1 .. 12 rows, in no particular order
    assert runtime.device.live_buffer_count == 0


@pytest.mark.parametrize("shape", [(13, 24), (4, 25), (24,), (0, 24, 1)])
def test_a_dynamic_input_beyond_its_bound_is_an_input_error(runtime, shape):
    async def go(program):
        with pytest.raises(pte_webgpu.InputError, match="input 0"):
            await program.load_method().execute([np.zeros(shape, np.float32)])
    _with_program(runtime, DYN, go)


def test_constant_methods_return_their_values(runtime):
    async def go(program):
        got = {}
        for name in INDEX[DYN]["constant_methods"]:
            got[name] = await program.load_method(name).execute([])
        return got

    got = _with_program(runtime, DYN, go)
    assert got == {k: [v] for k, v in INDEX[DYN]["constant_methods"].items()}
    assert type(got["is_row_wise"][0]) is bool and type(got["get_rows_bound"][0]) is int


def test_llama_export_metadata_methods(runtime):
    args = INDEX["llama_dynamic_rope"]["model_args"]

    async def go(program):
        names = ("get_max_seq_len", "get_vocab_size", "get_n_layers", "use_kv_cache",
                 "enable_dynamic_shape", "use_sdpa_with_kv_cache", "get_max_context_len")
        return {n: (await program.load_method(n).execute([]))[0] for n in names}

    got = _with_program(runtime, "llama_dynamic_rope", go)
    assert got == {"get_max_seq_len": args["max_seq_len"], "get_vocab_size": args["vocab_size"],
                   "get_n_layers": args["n_layers"], "use_kv_cache": True,
                   "enable_dynamic_shape": True, "use_sdpa_with_kv_cache": True,
                   "get_max_context_len": args["max_context_len"]}


def test_dynamic_prefill_of_any_length_then_decode(runtime):
    """Prefill lengths the reference never used: split the prompt into two prefills of
    2 + 3 tokens; the decode steps after it still match torch (same KV cache contents)."""
    name = "llama_dynamic_rope"
    ref = np.load(DECODERS / f"{name}.npz")
    toks, pos = ref["step0_in0"], ref["step0_in1"]

    async def go(program):
        method = program.load_method()
        await method.execute([toks[:, :2], pos])
        first = await method.execute([toks[:, 2:], pos + 2])
        rest = [await method.execute([ref[f"step{k}_in0"], ref[f"step{k}_in1"]])
                for k in range(1, INDEX[name]["steps"])]
        return [first] + rest

    outs = _with_program(runtime, name, go)
    for k, out in enumerate(outs):
        np.testing.assert_allclose(out[0], ref[f"step{k}_out0"], atol=1e-4, rtol=0)


def test_a_position_beyond_the_kv_cache_is_an_input_error(runtime):
    name = "llama_static_rope"
    rows = INDEX[name]["model_args"]["max_context_len"]

    async def go(program):
        method = program.load_method()
        with pytest.raises(pte_webgpu.InputError, match="KV cache"):
            await method.execute([np.array([[3]]), np.array([rows])])
        # the method still works afterwards
        return await method.execute([np.array([[3]]), np.array([0])])

    out = _with_program(runtime, name, go)
    assert out[0].shape == (1, INDEX[name]["model_args"]["vocab_size"])
