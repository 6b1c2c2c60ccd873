"""Decoder language models run step by step in Pyodide on headless Chromium's WebGPU
and match eager torch (the same checks as tests/native/test_decoders.py)."""

from pathlib import Path

import pytest

from tests.support.decoder_page import decoder_report
from tests.support.decoders import INDEX, NAMES, check_report
from tests.support.fusion_check import saved_dispatches

pytestmark = pytest.mark.browser

HERE = Path(__file__).parent


@pytest.mark.parametrize("name", NAMES)
def test_decoder_steps_match_torch_in_the_browser(decoder_page, name):
    report = decoder_report(decoder_page, "decoders", name)
    check_report(name, report)


def test_dynamic_rows_and_constant_methods_in_the_browser(decoder_page):
    page, name = decoder_page, "dyn_mlp_constmethods"
    got = page.run_python(f"""
from pte_webgpu.app import steps as _steps
_arrays = npy.read_npz(await fetch_bytes('/fixtures/decoders/{name}.npz'))
_mode, _calls = _steps.plan_calls(_arrays)
_program = await (await runtime()).load_program(
    await fetch_bytes('/fixtures/decoders/{name}.pte'))
try:
    _method = _program.load_method()
    _rows = []
    for _k, _inputs in enumerate(_calls):
        _out = (await _method.execute(_inputs))[0]
        _rows.append([list(_out.shape), max_errors(_out, _arrays[f"step{{_k}}_out0"])[0]])
    _consts = {{n: (await _program.load_method(n).execute([]))[0]
               for n in {sorted(INDEX[name]["constant_methods"])!r}}}
finally:
    _program.close()
[_rows, _consts]
""")
    rows, consts = got
    assert consts == INDEX[name]["constant_methods"]
    assert len({r[0][0] for r in rows}) > 4
    for shape, err in rows:
        assert err <= 1e-5, rows


@pytest.mark.parametrize("name", ["llama_dynamic_hfrope", "llama_dynamic_rope_fp16"])
def test_decoder_with_flash_attention_tiles_in_the_browser(decoder_page, name):
    """sdpa's ``tiles`` form forced in the page: a prefill's query rows in tiles sharing
    K/V tiles in workgroup memory (its barriers and workgroup arrays on Chromium's WGSL
    compiler), decode steps split; the steps still match torch."""
    report = decoder_page.run_python(f"""
_rt = await pte_webgpu.Runtime.create(options={{"variants": {{"sdpa": "tiles"}}}})
try:
    _r = await decoder_report(_rt, await fetch_bytes('/fixtures/decoders/{name}.pte'),
                              await fetch_bytes('/fixtures/decoders/{name}.npz'))
finally:
    _rt.close()
_r
""")
    check_report(name, report)


@pytest.mark.parametrize("name,matmul", [("llama_static_rope", "gemv4-64x4"),
                                         ("llama_static_hfrope", "gemvsg4-32x4")])
def test_o_projection_merges_the_attention_in_the_browser(decoder_page, name, matmul):
    """The split attention's merge folded into the o projection's matrix-vector prologue
    (ops/attention_merge.py) in the page, split and gemv forms forced: a dispatch a layer
    fewer, the logits those of the merge's own dispatch."""
    page = decoder_page
    page.run_python((HERE.parent / "support" / "fusion_check.py").read_text())
    args = INDEX[name]["model_args"]
    report = page.run_python(f"""
import os as _os
from pte_webgpu.runtime import fusion as _fusion, fusion_merge as _merge

_os.environ[_fusion.FOLDS_ON] = "merge"  # opt-in

async def _make(options):
    _merge.ENABLED = options["fuse"]
    return await pte_webgpu.Runtime.create(
        options={{"variants": {{"sdpa": "split", "matmul": "{matmul}"}}}})
try:
    _r = await fusion_report(_make, await fetch_bytes('/fixtures/decoders/{name}.pte'),
                             {args['vocab_size']}, 1, 3)
finally:
    _merge.ENABLED = True
    _os.environ.pop(_fusion.FOLDS_ON)
_r
""")
    counts = report["dispatches"]
    assert counts["unfused"] - counts["fused"] == args["n_layers"], counts
    assert max(report["diffs"]) <= 1e-5 * report["scale"], report["diffs"]


@pytest.mark.parametrize("name", ["llama_dynamic_rope", "llama_static_rope_fp16"])
def test_fused_equals_unfused_in_the_browser(decoder_page, name):
    """Load-time fusion (runtime/fusion.py) in the page: the fused build of a decoder (its
    linears' split and residual epilogues in the browser's kernel forms, the element-wise
    chain, the norms folded into the linears, the RoPE into the attention) computes what
    the unfused one does, and runs 11 fewer dispatches per layer and one fewer for the
    final norm on GPUs (8 and none on CPU adapters, where the norms and the SwiGLU chain
    stay their own dispatch)."""
    page = decoder_page
    page.run_python((HERE.parent / "support" / "fusion_check.py").read_text())
    args = INDEX[name]["model_args"]
    prompt_len = 20 if INDEX[name].get("dynamic") else 1
    report = page.run_python(
        f"await fusion_report(lambda options: pte_webgpu.Runtime.create(options=options), "
        f"await fetch_bytes('/fixtures/decoders/{name}.pte'), {args['vocab_size']}, "
        f"{prompt_len}, 3)")
    counts = report["dispatches"]
    # SwiftShader: the norms and the SwiGLU chain stay dispatches of their own
    # (fusion_check.saved_dispatches)
    # + the RoPE fold's: one a layer, and the dynamic export's two table slices
    slices = 2 if INDEX[name].get("dynamic") else 0
    assert counts["unfused"] - counts["fused"] == saved_dispatches(
        report, args["n_layers"], 10, 1) + args["n_layers"] + slices, report
    assert report["copies"]["fused"] == 0 < report["copies"]["unfused"], report["copies"]
    tol = (1e-3 if "fp16" in name else 1e-5) * report["scale"]
    assert max(report["diffs"]) <= tol, report
