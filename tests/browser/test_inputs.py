"""The numpy-free input forms (tests/input_cases.py PURE_CASES) in Pyodide on Chromium's
WebGPU: big-endian bytes, strided memoryviews, lists, bad shapes and dtypes. Each gives
x + 1 exactly as torch would, or an InputError naming input 0 and what was wrong."""

import re

import numpy as np
import pytest

from tests.support.fixture_index import FIXTURES
from tests.support.input_cases import PURE_CASES

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


def test_out_of_range_ids_in_chromium(page):
    """Host check (token_model_1x6: ids are the input) and the kernel's flag
    (token_view_2x3: ids pass a view) on SwiftShader; good ids after a bad run are right."""
    names = ("extra/token_model_1x6", "edge/token_view_2x3")
    refs = [np.load(FIXTURES / f"{n}.npz") for n in names]
    good = [[n, list(r["in0"].shape), r["in0"].reshape(-1).tolist()] for n, r in zip(names, refs)]
    result = page.run_python(f"GOOD = {good!r}\n" + """
import struct
rt = await runtime()
out = []
for name, shape, ids in GOOD:
    program = await rt.load_program(await fetch_bytes(f'/fixtures/{name}.pte'))
    method = program.load_method()
    bad = list(ids)
    bad[3] = 50 if 'model' in name else 20
    try:
        await method.execute([(struct.pack(f'<{len(bad)}q', *bad), tuple(shape))])
        out.append([None, None])
    except pte_webgpu.InputError as e:
        again, = await method.execute([(struct.pack(f'<{len(ids)}q', *ids), tuple(shape))])
        out.append([str(e), again.tobytes().hex()])
    program.close()
out""")
    (model_error, model_good), (view_error, view_good) = result
    assert re.search(r"input 0: id 50 at position \[0, 3\] is outside \[0, 50\)", model_error)
    assert re.search(r"aten.embedding.default: id 20 at position 3 of its ids is outside "
                     r"\[0, 20\) \(1 id\(s\) out of range", view_error)
    for got, ref in ((model_good, refs[0]), (view_good, refs[1])):
        np.testing.assert_allclose(np.frombuffer(bytes.fromhex(got), "<f4"),
                                   ref["out0"].reshape(-1), rtol=1e-5, atol=1e-6)
