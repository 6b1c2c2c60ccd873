"""The exported pooling, normalization, resampling and padding programs
(tests/fixtures/vision_ops) in Pyodide on headless Chromium's WebGPU against eager torch,
with the checks of tests/native/test_vision_programs.py."""

from pathlib import Path

import numpy as np
import pytest

from tests.support.vision_fixtures import NAMES, PENDING, check_outputs

pytestmark = pytest.mark.browser

SUPPORT = (Path(__file__).parent / "page_support.py").read_text() + '''

async def run_raw(name, variants=None):
    """Outputs of fixture ``name`` run on its npz inputs, as (dtype, shape, hex bytes), and
    the norm ops' variants; ``variants``: forced kernels (a Runtime of their own)."""
    rt = await (pte_webgpu.Runtime.create(options={"variants": variants}) if variants
                else runtime())
    program = await rt.load_program(await fetch_bytes(f"/fixtures/{name}.pte"))
    try:
        arrays = npy.read_npz(await fetch_bytes(f"/fixtures/{name}.npz"))
        inputs = [arrays[k] for k in sorted(arrays) if k.startswith("in")]
        method = program.load_method("forward")
        outs = await method.execute(inputs, as_numpy=False)
        kinds = sorted({k.get("variant") for k in method.kernels if "norm" in k["op"]} - {None})
        return [[(o.dtype.name, list(o.shape), o.tobytes().hex()) for o in outs], kinds]
    finally:
        program.close()
        if variants:
            rt.close()
'''


@pytest.fixture(scope="module")
def page(browser_session):
    browser_session.run_python(SUPPORT)
    return browser_session


@pytest.mark.parametrize("name", [n for n in NAMES if n not in PENDING])
def test_program_matches_torch_in_the_browser(page, name):
    raw, _ = page.run_python(f"await run_raw({'vision_ops/' + name!r})")
    check_outputs(name, _arrays(raw))


def _arrays(raw):
    return [np.frombuffer(bytes.fromhex(h), np.dtype(d)).reshape(s) for d, s, h in raw]


@pytest.mark.parametrize("variant", ["tree", "row"])
def test_norm_variants_in_the_browser(page, variant):
    """Group norm (and layer norm's kernel) with each norm variant forced."""
    raw, kinds = page.run_python(f"await run_raw('vision_ops/norm_forms', "
                                 f"{{'norm': {variant!r}}})")
    assert kinds == [variant]
    check_outputs("norm_forms", _arrays(raw))
