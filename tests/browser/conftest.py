"""Every test in tests/browser runs in the page: mark it `browser` even if the mark
was forgotten, so the page-error check of tests/conftest.py always applies."""

import pytest


def pytest_collection_modifyitems(items):
    here = __file__.rsplit("/", 1)[0]
    for item in items:
        if str(item.path).startswith(here + "/"):
            item.add_marker(pytest.mark.browser)
