"""Quantized programs (tests/fixtures/quant) run step by step in Pyodide on headless
Chromium's WebGPU and match eager torch of the same quantized model (the checks of
tests/native/test_quant_decoders.py, PENDING_OPS included)."""

from pathlib import Path

import pytest

from tests.support.quant_fixtures import NAMES, check_quant_report

pytestmark = pytest.mark.browser

HERE = Path(__file__).parent
SUPPORT = (HERE / "page_support.py").read_text()
CHECK = (HERE.parent / "support" / "decoder_check.py").read_text()


@pytest.fixture(scope="module")
def page(browser_session):
    browser_session.run_python(SUPPORT)
    browser_session.run_python(CHECK)
    return browser_session


@pytest.mark.parametrize("name", NAMES)
def test_quant_steps_match_torch_in_the_browser(page, name):
    report = page.run_python(
        f"await decoder_report(await runtime(), "
        f"await fetch_bytes('/fixtures/quant/{name}.pte'), "
        f"await fetch_bytes('/fixtures/quant/{name}.npz'))")
    check_quant_report(name, report)
