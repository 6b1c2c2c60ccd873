"""The mask and KV-cache ops in Pyodide on headless Chromium's WebGPU: the exported
programs of tests/fixtures/masks_kv (causal-mask chain with NaN/-inf/-0, cat, expand_copy,
bmm; a plain-torch KV cache through index_put/copy_/index/any/mul.Scalar/scalar_tensor,
six steps) against eager torch (tests/support/stepwise_check.py, as natively)."""

import pytest

pytestmark = pytest.mark.browser


# masks_fp16: every float VkTensor float16 (force_fp16), against torch's float32
@pytest.mark.parametrize("name,calls,tol", [("masks", 1, 1e-5), ("kv_cache", 6, 1e-5),
                                            ("masks_fp16", 1, 2e-2)])
def test_matches_eager_torch_in_the_browser(stepwise_page, name, calls, tol):
    report = stepwise_page.run_python(
        f"await stepwise_report(await runtime(), await fetch_bytes('/fixtures/masks_kv/{name}.pte'), "
        f"await fetch_bytes('/fixtures/masks_kv/{name}.npz'), {tol})")
    assert report["calls"] == calls
    assert report["first"] is None, report
    assert all(c == 0 for counts in report["mismatches"] for c in counts), report
