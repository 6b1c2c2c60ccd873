"""The q8da programs (tests/fixtures/q8da: -E 4,32 and -qmode 8da4w -G 64 -E 4,32 of the
llama export) step by step in Pyodide on headless Chromium's WebGPU, against eager torch
of the same quantized model (the checks of tests/native/test_q8da_programs.py)."""

from pathlib import Path

import pytest

from tests.support.q8da_programs import NAMES, check_report

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
def test_q8da_steps_match_torch_in_the_browser(page, name):
    report = page.run_python(
        f"await decoder_report(await runtime(), "
        f"await fetch_bytes('/fixtures/q8da/{name}.pte'), "
        f"await fetch_bytes('/fixtures/q8da/{name}.npz'))")
    check_report(name, report)
    print(name, "max step error", max(report["errors"]))
