"""Decoder language models run step by step natively (wgpu) and match eager torch."""

import re

import pytest
from pte_webgpu.runtime.method import gpu_work

from tests.support.decoder_check import decoder_report
from tests.support.decoders import DECODERS, INDEX, NAMES, check_report
from tests.support.gpu_thread import run_sync


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


@pytest.mark.parametrize("gemv_rows", [8, 24])
@pytest.mark.parametrize("name", [n for n in NAMES if INDEX[n].get("dynamic")])
def test_dynamic_decoder_with_gpu_matmul_forms(runtime, name, gemv_rows, monkeypatch):
    """Lavapipe taken for a GPU (matmul_choice.is_cpu False): the prefill-sized linears record a
    tiled product and its matrix-vector twin, and each execute runs the one its actual
    rows call for (the other's grid is empty); prefill and decode both match torch. The
    GPUs' matrix-vector limit lowered to the bound's scale: 8 (the 20-row prefill takes
    the tiles) or 24 (it takes the matrix-vector form)."""
    from pte_webgpu.ops import matmul_choice
    monkeypatch.setattr(matmul_choice, "is_cpu", lambda traits: False)
    monkeypatch.setattr(matmul_choice, "GPU_GEMV_ROWS", gemv_rows)
    pte = (DECODERS / f"{name}.pte").read_bytes()
    npz = (DECODERS / f"{name}.npz").read_bytes()
    report = run_sync(decoder_report(runtime, pte, npz))
    check_report(name, report)
    kinds = report["linear_variants"]
    assert "mm" in kinds and any(k.startswith("gemv") for k in kinds), kinds


@pytest.mark.parametrize("name", [n for n in NAMES if INDEX[n].get("dynamic")])
def test_dynamic_decoder_with_split_k_tiles(runtime, name, monkeypatch):
    """The GPU rule with K split down to spans of 4 (matmul_choice.k_splits; the tiny
    decoders' K is 16-64): the 20-row prefill's tiles write partial sums that a second
    dispatch adds through each linear's epilogue (split outputs, residual adds), both
    dispatches covering only the actual rows; prefill and decode match torch."""
    from pte_webgpu.ops import matmul_choice
    monkeypatch.setattr(matmul_choice, "is_cpu", lambda traits: False)
    monkeypatch.setattr(matmul_choice, "GPU_GEMV_ROWS", 8)
    monkeypatch.setattr(matmul_choice, "MIN_SPAN_K", 4)
    pte = (DECODERS / f"{name}.pte").read_bytes()
    npz = (DECODERS / f"{name}.npz").read_bytes()
    report = run_sync(decoder_report(runtime, pte, npz))
    check_report(name, report)
    assert any(re.search(r"^mm.*s[2-8]$", v) for v in report["linear_variant_names"]), report


@pytest.mark.parametrize("name", [n for n in NAMES if INDEX[n].get("dynamic")])
def test_decode_step_dispatches_only_the_actual_rows(runtime, name, monkeypatch):
    """One token through a program whose sequence length is dynamic: the element-wise,
    row-wise and matmul kernels follow the actual size, so the step dispatches far fewer
    workgroups than a full-length one (before: the bound's, at every decode step). One
    matmul form throughout, so that workgroup counts compare."""
    import numpy as np
    monkeypatch.setenv("PTE_WEBGPU_MATMUL", "dot")

    async def workgroups(program, length):
        method = program.load_method("forward")
        tokens = np.zeros((1, length), dtype=np.int64)
        await method.execute([tokens, np.array([0], dtype=np.int64)])
        recording = gpu_work(method).recording
        return sum(s.grid[0] * s.grid[1] * s.grid[2] for s in recording.steps
                   if hasattr(s, "grid") and s.label in ("aten.linear.default",
                                                         "et_vk.rms_norm.default",
                                                         "aten.mul.Tensor",
                                                         "pte_webgpu.fused_linear",
                                                         "pte_webgpu.fused_elementwise"))

    async def go():
        program = await runtime.load_program((DECODERS / f"{name}.pte").read_bytes())
        try:
            bound = INDEX[name]["model_args"]["max_seq_len"] - 1
            return await workgroups(program, 1), await workgroups(program, bound)
        finally:
            program.close()

    one, full = run_sync(go())
    assert one * 4 < full, (one, full)


@pytest.mark.parametrize("form", ["elements", "split", "tiles"])
@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("llama_")])
def test_decoder_with_the_other_attention_kernels(runtime, name, form, monkeypatch):
    """The other sdpa_with_kv_cache kernels give the same steps as the one lavapipe picks
    (a workgroup per query row and head): one invocation per output element, and the GPUs'
    split (a decode step's cache rows split across workgroups, then combined; prefills of
    a dynamic program keep the rows kernel)."""
    monkeypatch.setenv("PTE_WEBGPU_SDPA", form)
    pte = (DECODERS / f"{name}.pte").read_bytes()
    npz = (DECODERS / f"{name}.npz").read_bytes()
    report = run_sync(decoder_report(runtime, pte, npz))
    check_report(name, report)


@pytest.mark.parametrize("name", [n for n in NAMES if INDEX[n].get("dynamic")])
def test_dynamic_decoder_with_the_split_rms_norm(name, monkeypatch):
    """rms_norm's -split form records two dispatches over a dynamic output; prefill and
    decode steps still match torch, and a one-token step runs one workgroup of the first
    (two over the 27-row bound; the second pass's 64 rows per workgroup make one either
    way here, so its following the actual size is not checked by this test). Unfused:
    fused, the norms run inside the linears after them (test_norm_linear.py)."""
    import pte_webgpu
    from pte_webgpu.ops import rms_norm
    monkeypatch.setenv(rms_norm.VARIANTS.env_var, "row4-16-split")
    runtime = run_sync(pte_webgpu.Runtime.create("native", options={"fuse": False}))
    pte = (DECODERS / f"{name}.pte").read_bytes()
    npz = (DECODERS / f"{name}.npz").read_bytes()
    check_report(name, run_sync(decoder_report(runtime, pte, npz)))
    import numpy as np

    async def grids(length):
        program = await runtime.load_program(pte)
        try:
            method = program.load_method("forward")
            await method.execute([np.zeros((1, length), dtype=np.int64),
                                  np.array([0], dtype=np.int64)])
            return [s.grid for s in gpu_work(method).recording.steps
                    if getattr(s, "label", "") == "et_vk.rms_norm.default"]
        finally:
            program.close()

    try:
        one = run_sync(grids(1))
        bound = run_sync(grids(27))
    finally:
        runtime.close()
    assert one and len(one) % 2 == 0, one  # two dispatches per op
    assert all(g[0] * g[1] * g[2] == 1 for g in one), one  # one row: one workgroup each
    # 27 rows: the layers' norms two workgroups of 16 in the first dispatch, one of 64 in
    # the second; the final norm sees the last row alone
    assert bound[:-2] == [(2, 1, 1), (1, 1, 1)] * (len(bound) // 2 - 1), bound
