"""Pyodide boots offline in headless Chromium, loads pte-webgpu, and WebGPU works."""

import time

import pte_webgpu
import pytest

pytestmark = pytest.mark.browser


def test_package_version_matches_host(browser_session):
    in_browser = browser_session.run_python("import pte_webgpu\npte_webgpu.__version__")
    assert in_browser == pte_webgpu.__version__


def test_python_exception_comes_back_with_traceback(browser_session):
    from pte_webgpu.chromium.session import BrowserPythonError

    with pytest.raises(BrowserPythonError) as caught:
        browser_session.run_python("def boom():\n    raise ValueError('from the page')\nboom()")
    assert caught.value.type_name == "ValueError"
    assert "from the page" in caught.value.traceback and "boom" in caught.value.traceback


def test_webgpu_adapter_from_python(browser_session):
    started = time.perf_counter()
    info = browser_session.run_python(
        "import js\n"
        "adapter = await js.navigator.gpu.requestAdapter()\n"
        "info = adapter.info\n"
        "{'vendor': info.vendor, 'architecture': info.architecture,\n"
        " 'description': info.description,\n"
        " 'is_fallback': bool(getattr(info, 'isFallbackAdapter', False)),\n"
        " 'features': sorted(adapter.features.values()),\n"
        " 'max_invocations': adapter.limits.maxComputeInvocationsPerWorkgroup}"
    )
    print(f"WebGPU adapter in {time.perf_counter() - started:.3f} s: {info}")
    # Chromium names NVIDIA's GPUs in the description and leaves the architecture empty
    assert info["vendor"] and (info["architecture"] or info["description"])
    assert info["max_invocations"] >= 64


def test_packages_the_dist_does_not_ship_fail_clearly(browser_session):
    """The lock lists only the wheels the dist ships (no Pyodide numpy or micropip is
    offered on PyPI or npm): asking for another package is a plain, immediate error,
    never a 404 or an integrity failure."""
    got = browser_session.run_python(
        "import pyodide_js\n"

        "out = {}\n"
        "for name in ('numpy', 'micropip'):\n"
        "    try:\n"
        "        __import__(name)\n"
        "    except ModuleNotFoundError as e:\n"
        "        out[name] = str(e)\n"
        "try:\n"
        "    await pyodide_js.loadPackage('numpy')\n"
        "except Exception as e:\n"
        "    out['loadPackage'] = str(e)\n"
        "out")
    assert got["numpy"].startswith("No module named 'numpy'")
    assert got["micropip"].startswith("No module named 'micropip'")
    assert "No known package with name 'numpy'" in got["loadPackage"]
