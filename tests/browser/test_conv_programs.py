"""The exported convolution programs (tests/fixtures/conv) in Pyodide on headless
Chromium's WebGPU (SwiftShader) against eager torch, as natively
(tests/native/test_conv_programs.py): the rule's kernels, and the tiled and depthwise
forms forced on a few."""

from pathlib import Path

import numpy as np
import pytest

from tests.support.conv_fixtures import CONV, NAMES, tolerance

pytestmark = pytest.mark.browser

SUPPORT = (Path(__file__).parent / "page_support.py").read_text()


@pytest.fixture(scope="module")
def page(browser_session):
    browser_session.run_python(SUPPORT)
    return browser_session


def check(name, report):
    """Largest error within the tolerance times the output's largest magnitude."""
    wants = np.load(CONV / f"{name}.npz")
    scale = max(1.0, float(np.abs(wants["out0"]).max()))
    assert report["shapes"] == report["want_shapes"], report
    (abs_err, _), = report["errors"]
    assert abs_err <= tolerance(name) * scale, (name, abs_err, scale)


@pytest.mark.parametrize("name", NAMES)
def test_program_matches_eager_torch_in_the_browser(page, name):
    check(name, page.run_python(f"await run_fixture('conv/{name}')"))


@pytest.mark.parametrize("variant,name", [("gemm4-8x8", "conv2d_3to8_k3"),
                                          ("gemm-8x8", "conv2d_rect_groups3"),
                                          ("matmul", "conv2d_1x1"),
                                          ("gemm4-8x8", "conv2d_relu6_fp16"),
                                          ("depthwise", "conv2d_depthwise_mult2")])
def test_forced_variants_in_the_browser(page, variant, name):
    if name not in NAMES:
        pytest.skip(f"{name} not exported")
    # the adapter's limits (shape-free: each fixture is of its variant's form)
    why = page.run_python(f"_rt = await runtime()\nadapter_supports('conv', {variant!r})") \
        if "gemm" in variant else None
    if why:
        pytest.skip(why)
    check(name, page.run_python(f"await fixture_with_variant('conv', {variant!r}, "
                                f"'conv/{name}', [])"))
