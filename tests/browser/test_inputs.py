"""The numpy-free input forms (tests/input_cases.py PURE_CASES) in Pyodide on Chromium's
WebGPU: big-endian bytes, strided memoryviews, lists, bad shapes and dtypes. Each gives
x + 1 exactly as torch would, or an InputError naming input 0 and what was wrong."""

import re

import numpy as np
import pytest

from tests.input_cases import PURE_CASES

pytestmark = pytest.mark.browser

REF = np.random.default_rng(9).standard_normal(24).astype(np.float32)
REF[:5] = [0.0, -0.0, np.inf, -np.inf, np.nan]

RUN_CASES = """
import array, struct
from pte_webgpu import Tensor
rt = await runtime()
program = await rt.load_program(await fetch_bytes('/fixtures/add_2x3x4.pte'))
method = program.load_method()
ref = list(struct.unpack('<24f', bytes.fromhex(REF_HEX)))
ones = (struct.pack('<24f', *[1.0] * 24), (2, 3, 4))
results = []
for name, source in CASES:
    try:
        out, = await method.execute([eval(source), ones])
        results.append([name, 'ok', out.tobytes().hex()])
    except Exception as e:
        results.append([name, type(e).__name__, str(e)])
program.close()
results
"""


@pytest.fixture(scope="module")
def page(browser_session):
    from pathlib import Path

    browser_session.run_python((Path(__file__).parent / "page_support.py").read_text())
    return browser_session


def test_numpy_free_input_forms_in_chromium(page):
    cases = [[name, source] for name, source, _ in PURE_CASES]
    code = f"REF_HEX = {REF.astype('<f4').tobytes().hex()!r}\nCASES = {cases!r}\n" + RUN_CASES
    results = {name: (kind, text) for name, kind, text in page.run_python(code)}
    want = (REF + np.float32(1)).astype("<f4")
    for name, _, expect in PURE_CASES:
        kind, text = results[name]
        if expect == "ok":
            assert kind == "ok", (name, text)
            got = np.frombuffer(bytes.fromhex(text), "<f4")
            np.testing.assert_array_equal(got, want, err_msg=name)
        else:
            assert kind == "InputError" and re.search(expect, text), (name, kind, text)
