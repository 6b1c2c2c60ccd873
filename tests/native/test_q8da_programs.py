"""Real programs natively: the llama export with -E 4,32 (et_vk.embedding_q4gsw) and with
-qmode 8da4w -G 64 -E 4,32 (choose_qparams_affine + linear_dq8ca_q4gsw), a prompt then
seven greedy decode steps against eager torch (tests/support/q8da_programs.py)."""

import pytest

from tests.support.decoder_check import decoder_report
from tests.support.gpu_thread import run_sync
from tests.support.q8da_programs import DIR, NAMES, check_report


@pytest.mark.parametrize("name", NAMES)
def test_steps_match_eager_torch(runtime, name):
    report = run_sync(decoder_report(runtime, (DIR / f"{name}.pte").read_bytes(),
                                     (DIR / f"{name}.npz").read_bytes()))
    check_report(name, report)


@pytest.mark.parametrize("variant", ["mv-i32", "tile4-i32", "scalar", "mv-dp4"])
def test_8da4w_steps_match_with_each_variant_forced(variant):
    import pte_webgpu
    rt = run_sync(pte_webgpu.Runtime.create("native", options={"variants": {"linear_dq8": variant}}))
    try:
        name = "llama_8da4w_g64_emb4g32_dynamic"
        report = run_sync(decoder_report(rt, (DIR / f"{name}.pte").read_bytes(),
                                         (DIR / f"{name}.npz").read_bytes()))
        check_report(name, report)
        program = run_sync(rt.load_program((DIR / f"{name}.pte").read_bytes()))
        picks = {(k.get("variant"), k.get("picked")) for k in program.load_method("forward").kernels
                 if k["op"] == "et_vk.linear_dq8ca_q4gsw.default"}
        assert picks == {(variant, "forced")}
    finally:
        rt.close()


@pytest.mark.parametrize("bad", [96, -1])
def test_token_ids_outside_the_4bit_table_raise(runtime, bad):
    import numpy as np
    import pte_webgpu
    program = run_sync(runtime.load_program((DIR / "llama_emb4g32_dynamic.pte").read_bytes()))
    method = program.load_method("forward")
    with pytest.raises(pte_webgpu.InputError, match=rf"id {bad} at position \[0, 1\] is outside "
                                                    r"\[0, 96\).*embedding_q4gsw"):
        run_sync(method.execute([np.array([[5, bad, 3]]), np.array([0])]))
