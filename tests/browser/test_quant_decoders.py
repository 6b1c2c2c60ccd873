"""Quantized programs (tests/fixtures/quant) run step by step in Pyodide on headless
Chromium's WebGPU and match eager torch of the same quantized model (the checks of
tests/native/test_quant_decoders.py, PENDING_OPS included)."""

import pytest

from tests.support.decoder_page import decoder_report
from tests.support.quant_fixtures import NAMES, check_quant_report

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("name", NAMES)
def test_quant_steps_match_torch_in_the_browser(decoder_page, name):
    report = decoder_report(decoder_page, "quant", name)
    check_quant_report(name, report)
