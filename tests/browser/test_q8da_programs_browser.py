"""The q8da programs (tests/fixtures/q8da: -E 4,32 and -qmode 8da4w -G 64 -E 4,32 of the
llama export) step by step in Pyodide on headless Chromium's WebGPU, against eager torch
of the same quantized model (the checks of tests/native/test_q8da_programs.py)."""

import pytest

from tests.support.decoder_page import decoder_report
from tests.support.q8da_programs import NAMES, check_report

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("name", NAMES)
def test_q8da_steps_match_torch_in_the_browser(decoder_page, name):
    report = decoder_report(decoder_page, "q8da", name)
    check_report(name, report)
    print(name, "max step error", max(report["errors"]))
