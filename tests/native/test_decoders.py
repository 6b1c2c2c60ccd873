"""Decoder language models run step by step natively (wgpu) and match eager torch."""

import pytest

from tests.decoder_check import decoder_report
from tests.decoders import DECODERS, INDEX, NAMES, check_report
from tests.native.gpu_thread import run_sync


@pytest.mark.parametrize("name", NAMES)
def test_decoder_steps_match_torch(runtime, name):
    pte = (DECODERS / f"{name}.pte").read_bytes()
    npz = (DECODERS / f"{name}.npz").read_bytes()
    report = run_sync(decoder_report(runtime, pte, npz))
    check_report(name, report)
    assert runtime.device.live_buffer_count == 0


def test_llama_caches_are_state_with_their_own_buffers(runtime):
    """The custom-op KV caches share one named-data key; each still gets its own buffer."""
    async def go():
        program = await runtime.load_program((DECODERS / "llama_static_rope.pte").read_bytes())
        try:
            method = program.load_method()
            return [buf.handle for buf, *_ in method._state.entries]
        finally:
            program.close()

    handles = run_sync(go())
    n_layers = INDEX["llama_static_rope"]["model_args"]["n_layers"]
    assert len(handles) == 2 * n_layers
    assert len({id(h) for h in handles}) == len(handles)
