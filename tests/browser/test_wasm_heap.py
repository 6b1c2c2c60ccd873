"""Past 2 GiB of wasm heap (a second fp32 SmolLM2 beside the first gets there), Pyodide's
own byte conversions fail: getBuffer and to_bytes raise RangeError, to_js copies the wrong
bytes. gpu/wasm_heap.py goes around them; here a page of its own (its heap never shrinks)
fills 2.2 GB of ballast and then moves bytes both ways, small and large, and runs a fixture
program against torch's outputs."""

from pathlib import Path

import pytest

SUPPORT = (Path(__file__).parent / "page_support.py").read_text()

# Python objects made after this sit past 2 GiB (two: one bytearray may hold < 2 GiB)
BALLAST = "_ballast = [bytearray(1100 << 20), bytearray(1100 << 20)]\n"

ROUND_TRIP = """
import ctypes
from pte_webgpu.gpu.recording import Recording
from pte_webgpu.gpu.wasm_heap import wasm_heap
heap = wasm_heap()
rt = await runtime()
out = {"past": not heap.signed_safe()}
for n in (1000, 300_000, 2_000_000):   # below and above the zero-copy threshold
    big = bytearray(n + (1 << 20))  # malloc'd past the ballast: its end sits past 2 GiB
    data = memoryview(big)[-n:]
    data[:] = bytes((i * 7 + n) % 251 for i in range(n))
    out.setdefault("addresses", []).append(
        ctypes.addressof((ctypes.c_char * n).from_buffer(data)) >= (1 << 31))
    buf = rt.device.create_buffer(n, ("storage", "copy_src", "copy_dst"), "heap test")
    stage = rt.device.create_buffer(n, ("map_read", "copy_dst"), "heap test read")
    try:
        for source in (data, bytes(data)):  # writable, then read-only
            rt.device.write_buffer(buf, source)
            got, _ = await rt.device.run(Recording(), [(buf, n)], stage)
            out.setdefault("gpu_round_trip", []).append(bytes(got[0]) == bytes(data))
        back = heap.to_python(heap.to_js(data))
        out.setdefault("js_round_trip", []).append(bytes(back) == bytes(data))
    finally:
        rt.device.destroy_buffer(buf)
        rt.device.destroy_buffer(stage)
out
"""


@pytest.fixture(scope="module")
def big_heap_page(browser_session):
    page = browser_session.sibling()
    try:
        page.run_python(SUPPORT)
        page.run_python(BALLAST)
        yield page
    finally:
        page.close()


def test_bytes_move_both_ways_past_two_gib(big_heap_page):
    out = big_heap_page.run_python(ROUND_TRIP)
    assert out["past"] is True
    assert all(out["addresses"]), out  # the premise: these objects sit past 2 GiB
    assert all(out["gpu_round_trip"]), out
    assert all(out["js_round_trip"]), out


def test_a_program_runs_and_matches_torch_past_two_gib(big_heap_page):
    result = big_heap_page.run_python("await run_fixture('block_1x8x64', repeat=2)")
    assert result["shapes"] == result["want_shapes"]
    for abs_err, rel_err in result["errors"]:
        assert abs_err <= 1e-4 or rel_err <= 1e-4, result
