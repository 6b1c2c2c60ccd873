"""Fixtures run in Pyodide on headless Chromium's WebGPU and match torch."""

import json
from pathlib import Path

import pytest
from pte_webgpu.ops.registry import supported_ops

from tests.support.fixture_index import FIXTURES, INDEX, needed_ops, runnable, tolerance

pytestmark = pytest.mark.browser

SUPPORT = (Path(__file__).parent / "page_support.py").read_text()
RUNNABLE = [e for e in INDEX if runnable(e)]
UNSUPPORTED = [e for e in INDEX if not runnable(e)]


@pytest.fixture(scope="module")
def page(browser_session):
    browser_session.run_python(SUPPORT)
    return browser_session


def test_the_rmsnorm_and_add_fixtures_are_all_covered():
    names = {e["name"] for e in RUNNABLE}
    expected = {e["name"] for e in INDEX
                if e["name"].startswith(("rmsnorm_", "add_")) and "fp16" not in e["name"]
                and "nndefault" not in e["name"]}
    assert expected <= names, expected - names


@pytest.mark.parametrize("entry", RUNNABLE, ids=lambda e: e["name"])
def test_fixture_matches_torch(page, entry):
    result = page.run_python(
        f"await run_fixture({entry['name']!r}, {entry.get('ptd_files', [])!r}, repeat=2)")
    assert result["shapes"] == result["want_shapes"]
    tol = tolerance(entry)
    for abs_err, rel_err in result["errors"]:
        assert abs_err <= tol or rel_err <= tol, result


@pytest.mark.parametrize("entry", UNSUPPORTED, ids=lambda e: e["name"])
def test_unsupported_program_names_what_is_missing_and_leaks_nothing(page, entry):
    kind, message, leaked = page.run_python(
        f"await load_error(await fetch_bytes('/fixtures/{entry['name']}.pte'), "
        f"[(p.split('/')[-1], await fetch_bytes('/fixtures/' + p)) "
        f"for p in {entry.get('ptd_files', [])!r}])")
    assert kind == "UnsupportedError", message
    missing = needed_ops(entry) - set(supported_ops())
    assert any(repr(op) in message for op in missing), message
    assert leaked == 0


def test_missing_ptd_names_the_key(page):
    meta = json.loads((FIXTURES / "rmsnorm_extdata_1x8x64.json").read_text())
    key = meta["delegates"][0]["constants"][0]["named_key"]
    kind, message, leaked = page.run_python(
        "await load_error(await fetch_bytes('/fixtures/rmsnorm_extdata_1x8x64.pte'))")
    assert kind == "MissingDataError"
    assert key in message
    assert leaked == 0


def test_corrupted_file_is_a_format_error(page):
    kind, message, leaked = page.run_python(
        "data = bytearray(await fetch_bytes('/fixtures/rmsnorm_4x128_eps1e-6.pte'))\n"
        "data[4:8] = b'XX12'\n"
        "await load_error(bytes(data))")
    assert kind == "FormatError"
    assert "ET12" in message and "byte offset 4" in message
    assert leaked == 0


def test_wrong_input_shape_is_an_input_error(page):
    message = page.run_python(
        "rt = await runtime()\n"
        "program = await rt.load_program(await fetch_bytes('/fixtures/rmsnorm_4x128_eps1e-6.pte'))\n"
        "method = program.load_method()\n"
        "try:\n"
        "    await method.execute([pte_webgpu.Tensor(bytes(4 * 4 * 64), (4, 64))])\n"
        "    message = None\n"
        "except pte_webgpu.InputError as e:\n"
        "    message = str(e)\n"
        "program.close()\n"
        "message")
    assert message and "expected shape [4, 128]" in message and "[4, 64]" in message


def test_close_destroys_every_buffer(page):
    counts = page.run_python(
        "rt = await runtime()\n"
        "before = rt.device.live_buffer_count\n"
        "program = await rt.load_program(await fetch_bytes('/fixtures/add_rmsnorm_2out_4x128.pte'))\n"
        "method = program.load_method()\n"
        "loaded = rt.device.live_buffer_count\n"
        "program.close()\n"
        "[before, loaded, rt.device.live_buffer_count]")
    before, loaded, after = counts
    assert loaded > before
    assert after == before


def test_outputs_without_numpy_are_tensors(page):
    result = page.run_python(
        "import importlib.util\n"
        "rt = await runtime()\n"
        "program = await rt.load_program(await fetch_bytes('/fixtures/add_2x3x4.pte'))\n"
        "method = program.load_method()\n"
        "x = pte_webgpu.Tensor(bytes(range(0, 96)), (2, 3, 4))\n"
        "import array\n"
        "y = (array.array('f', [1.0] * 24), (2, 3, 4))\n"
        "out, = await method.execute([x, y])\n"
        "program.close()\n"
        "[importlib.util.find_spec('numpy') is None, type(out).__name__, list(out.shape),\n"
        " out.dtype.name, len(out.tolist()), out.tolist()[1][2][3]]")
    no_numpy, type_name, shape, dtype, rows, last = result
    assert no_numpy and type_name == "Tensor" and shape == [2, 3, 4] and dtype == "float32"
    assert rows == 2
    import struct
    x_last = struct.unpack("<f", bytes(range(92, 96)))[0]
    assert last == pytest.approx(x_last + 1.0, rel=1e-6)


def test_large_inputs_are_written_without_a_copy_and_stay_correct(page):
    """Inputs past the zero-copy threshold go through a view of the wasm heap."""
    result = page.run_python(
        "import struct\n"
        "from pte_webgpu.gpu.browser import BrowserDevice\n"
        "rt = await runtime()\n"
        "buf = rt.device.create_buffer(1 << 20, ('storage', 'copy_src', 'copy_dst'), 'big')\n"
        "stage = rt.device.create_buffer(1 << 20, ('map_read', 'copy_dst'), 'big read')\n"
        "data = bytes(range(251)) * ((1 << 20) // 251) + bytes((1 << 20) % 251)\n"
        "assert len(data) >= BrowserDevice.ZERO_COPY_BYTES\n"
        "rt.device.write_buffer(buf, data)\n"
        "from pte_webgpu.gpu.recording import Recording\n"
        "out, _ = await rt.device.run(Recording(), [(buf, 1 << 20)], stage)\n"
        "rt.device.destroy_buffer(buf); rt.device.destroy_buffer(stage)\n"
        "out[0] == data")
    assert result is True
