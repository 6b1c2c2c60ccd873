"""The vision and audio programs of tests/fixtures/vision run in Pyodide on headless
Chromium's WebGPU and match eager torch (the checks of tests/native/test_vision_models.py,
the xfail of a program whose ops are not all in the table included)."""

import pytest

from tests.support.vision_models import NAMES, check_error, expect_unsupported, missing_ops

pytestmark = pytest.mark.browser


@pytest.mark.parametrize("name", NAMES)
def test_vision_program_matches_torch_in_the_browser(support_page, name):
    if missing_ops(name):
        kind, message, leaked = support_page.run_python(
            f"await load_error(await fetch_bytes('/fixtures/vision/{name}.pte'))")
        assert kind in (None, "UnsupportedError") and leaked == 0, (kind, message, leaked)
        expect_unsupported(name, message if kind else None)
    result = support_page.run_python(f"await run_fixture('vision/{name}')")
    check_error(name, result["shapes"], [abs_err for abs_err, _ in result["errors"]])
