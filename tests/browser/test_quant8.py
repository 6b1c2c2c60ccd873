"""The 8-bit fixtures (tests/fixtures/quant8) in Pyodide on headless Chromium's WebGPU:
the same checks as tests/native/test_quant8.py, each linear_q8 variant the page's
adapter can run forced in turn."""

from pathlib import Path

import pytest

from tests.support.quant8 import INDEX, NAMES, check_quant8

pytestmark = pytest.mark.browser

HERE = Path(__file__).parent
SUPPORT = (HERE / "page_support.py").read_text()
CHECK = (HERE.parent / "support" / "quant8_check.py").read_text()
LINEAR = [n for n in NAMES if n.startswith(("q8csw", "q8ta"))]


@pytest.fixture(scope="module")
def page(browser_session):
    browser_session.run_python(SUPPORT)
    browser_session.run_python(CHECK)
    return browser_session


def report(page, name, variant=None):
    options = {"variants": {"linear_q8": variant}} if variant else {}
    return page.run_python(f"""
_rt = await runtime() if not {options!r} else await pte_webgpu.Runtime.create(options={options!r})
try:
    _r = await quant8_report(_rt, await fetch_bytes('/fixtures/quant8/{name}.pte'),
                             await fetch_bytes('/fixtures/quant8/{name}.npz'),
                             {INDEX[name]["tolerance"]!r})
finally:
    if {options!r}:
        _rt.close()
_r
""")


@pytest.mark.parametrize("name", NAMES)
def test_fixture_matches_torch_in_the_browser(page, name):
    check_quant8(name, report(page, name))


def test_the_page_takes_dot4_where_its_wgsl_has_it(page):
    """Chromium lists packed_4x8_integer_dot_product in wgslLanguageFeatures: the rule
    picks dot4 there (and the variants test below runs both forms)."""
    has = page.run_python("(await runtime()).device.info.traits.packed_dot")
    got = report(page, "q8ta_m9_bias")
    picked = {k["variant"] for k in got["kernels"] if k["op"].startswith("et_vk.")}
    assert picked == {"dot4" if has else "unpack"}, (has, got["kernels"])


@pytest.mark.parametrize("variant", ["dot4", "unpack"])
@pytest.mark.parametrize("name", LINEAR)
def test_fixture_with_each_variant_in_the_browser(page, name, variant):
    if variant == "dot4" and not page.run_python("(await runtime()).device.info.traits.packed_dot"):
        pytest.skip("this Chromium's WGSL lacks packed_4x8_integer_dot_product")
    got = report(page, name, variant)
    check_quant8(name, got)
    if "kernels" in got:
        assert {k["variant"] for k in got["kernels"] if k["op"].startswith("et_vk.")} == {variant}
