"""native_layer_norm with eps 0 in Chromium: SwiftShader flushes the subnormal squared
deviations of rows near 1e-20 (torch on a CPU keeps them), and rows near 1e19 overflow
the float32 sum; the exported programs (tests/fixtures/edge) match a float64 reference.
The rms_norm cases are in test_rms_norm_variants.py."""

from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.browser

EDGE = Path(__file__).parents[1] / "fixtures" / "edge"


@pytest.fixture(scope="module")
def page(browser_session):
    browser_session.run_python((Path(__file__).parent / "page_support.py").read_text())
    return browser_session


@pytest.mark.parametrize("name", ["layernorm_eps0_rows1e-20_4x64", "layernorm_eps0_rows1e19_4x64"])
def test_layer_norm_eps0_rows_match_float64_in_chromium(page, name):
    out = page.run_python(f"await run_edge({name!r})")
    ref = np.load(EDGE / f"{name}.npz")
    x = ref["in0"].astype(np.float64)
    d = x - x.mean(-1, keepdims=True)
    want = d / np.sqrt((d * d).mean(-1, keepdims=True)) * ref["weight"] + ref["bias"]
    got = np.frombuffer(bytes.fromhex(out), np.float32).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
