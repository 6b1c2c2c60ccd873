"""WebGPU failures reach Python as typed errors (in the page, through pyodide.ffi)."""

import pytest

pytestmark = pytest.mark.browser

SETUP = """
import pte_webgpu
from pte_webgpu.gpu.browser import BrowserDevice
_dev = await BrowserDevice.create()
"""


@pytest.fixture(scope="module")
def page(browser_session):
    browser_session.run_python(SETUP)
    return browser_session


def test_bad_wgsl_is_a_shader_compile_error_with_the_line(page):
    kind, message = page.run_python(
        "try:\n"
        "    await _dev.create_pipeline('@compute @workgroup_size(1) fn main() { let x: f32 = ; }',"
        " 'main', {}, 'broken')\n"
        "    r = [None, '']\n"
        "except pte_webgpu.PteError as e:\n"
        "    r = [type(e).__name__, str(e)]\n"
        "r")
    assert kind == "ShaderCompileError"
    assert "broken" in message and "line 1" in message


def test_validation_error_is_caught_by_error_scopes(page):
    kind, message = page.run_python(
        "await _dev.push_error_scopes()\n"
        "buf = _dev.create_buffer(16, ('storage',), 'tiny')\n"
        "import js\n"
        "# mapping a storage-only buffer for reading is invalid\n"
        "_dev.device.createBuffer(_dev._obj({'size': 16, 'usage': js.GPUBufferUsage.MAP_READ |"
        " js.GPUBufferUsage.STORAGE}))\n"
        "try:\n"
        "    await _dev.pop_error_scopes('making an invalid buffer')\n"
        "    r = [None, '']\n"
        "except pte_webgpu.PteError as e:\n"
        "    r = [type(e).__name__, str(e)]\n"
        "_dev.destroy_buffer(buf)\n"
        "r")
    assert kind == "GpuValidationError"
    assert "making an invalid buffer" in message


def test_lost_device_is_a_device_lost_error(page):
    kind = page.run_python(
        "lost = await BrowserDevice.create()\n"
        "lost.device.destroy()\n"
        "import asyncio\n"
        "for _ in range(50):\n"
        "    if lost.lost_reason: break\n"
        "    await asyncio.sleep(0.02)\n"
        "try:\n"
        "    lost.create_buffer(16, ('storage',), 'after loss')\n"
        "    r = None\n"
        "except pte_webgpu.PteError as e:\n"
        "    r = type(e).__name__\n"
        "r")
    assert kind == "DeviceLostError"
