"""The exported pooling, normalization, resampling and padding programs
(tests/fixtures/vision_ops) in Pyodide on headless Chromium's WebGPU against eager torch,
with the checks of tests/native/test_vision_programs.py."""

from pathlib import Path

import numpy as np
import pytest

from tests.support.vision_fixtures import NAMES, PENDING, check_outputs

pytestmark = pytest.mark.browser

SUPPORT = (Path(__file__).parent / "page_support.py").read_text() + '''

async def run_raw(name):
    """Outputs of fixture ``name`` run on its npz inputs, as (dtype, shape, hex bytes)."""
    rt = await runtime()
    program = await rt.load_program(await fetch_bytes(f"/fixtures/{name}.pte"))
    try:
        arrays = npy.read_npz(await fetch_bytes(f"/fixtures/{name}.npz"))
        inputs = [arrays[k] for k in sorted(arrays) if k.startswith("in")]
        outs = await program.load_method("forward").execute(inputs, as_numpy=False)
        return [(o.dtype.name, list(o.shape), o.tobytes().hex()) for o in outs]
    finally:
        program.close()
'''


@pytest.fixture(scope="module")
def page(browser_session):
    browser_session.run_python(SUPPORT)
    return browser_session


@pytest.mark.parametrize("name", [n for n in NAMES if n not in PENDING])
def test_program_matches_torch_in_the_browser(page, name):
    raw = page.run_python(f"await run_raw({'vision_ops/' + name!r})")
    got = [np.frombuffer(bytes.fromhex(h), np.dtype(d)).reshape(s) for d, s, h in raw]
    check_outputs(name, got)
