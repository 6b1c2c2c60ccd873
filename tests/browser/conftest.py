"""Every test in tests/browser runs in the page: mark it `browser` even if the mark
was forgotten, so the page-error check of tests/conftest.py always applies. ``decoder_page``:
the page with tests/support/decoder_check.py loaded, for the step-by-step program tests
(tests/support/decoder_page.py runs one there); ``stepwise_page``: the page with
tests/support/stepwise_check.py loaded (a program's calls against eager torch's outputs)."""

from pathlib import Path

import pytest

HERE = Path(__file__).parent
PAGE_SUPPORT = (HERE / "page_support.py").read_text()
DECODER_CHECK = (HERE.parent / "support" / "decoder_check.py").read_text()
STEPWISE_CHECK = (HERE.parent / "support" / "stepwise_check.py").read_text()


@pytest.fixture(scope="module")
def support_page(browser_session):
    browser_session.run_python(PAGE_SUPPORT)
    return browser_session


@pytest.fixture(scope="module")
def decoder_page(support_page):
    support_page.run_python(DECODER_CHECK)
    return support_page


@pytest.fixture(scope="module")
def stepwise_page(browser_session):
    browser_session.run_python(PAGE_SUPPORT)
    browser_session.run_python(STEPWISE_CHECK)
    return browser_session


def pytest_collection_modifyitems(items):
    here = __file__.rsplit("/", 1)[0]
    for item in items:
        if str(item.path).startswith(here + "/"):
            item.add_marker(pytest.mark.browser)
