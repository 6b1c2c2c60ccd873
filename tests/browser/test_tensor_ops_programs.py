"""The tensor-op programs of tests/fixtures/tensor_ops in Pyodide on headless Chromium's
WebGPU against eager torch (tests/support/stepwise_check.py, as natively): fp32 within
1e-4 relative, force_fp16 within 2e-2, integer and bool outputs exact."""

import pytest

from tests.support.tensor_ops_fixtures import CALLS, NAMES, tolerance

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("name", NAMES)
def test_matches_eager_torch_in_the_browser(stepwise_page, name):
    report = stepwise_page.run_python(
        f"await stepwise_report(await runtime(), await fetch_bytes('/fixtures/tensor_ops/{name}.pte'), "
        f"await fetch_bytes('/fixtures/tensor_ops/{name}.npz'), {tolerance(name)})")
    assert report["calls"] == CALLS.get(name, 1), report
    assert report["first"] is None, report
    assert all(c == 0 for counts in report["mismatches"] for c in counts), report
