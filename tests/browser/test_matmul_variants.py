"""Every matmul (aten.linear) variant in headless Chromium (SwiftShader), subgroup ones
included: odd shapes (K = 1, K not a multiple of 4, N = 1, 70000 rows), with and without
bias, float32 and float16, and the linear fixtures with the variant forced, against
numpy in float64."""

import base64
from pathlib import Path

import numpy as np
import pytest

from tests.support.fixture_index import INDEX, runnable, tolerance

pytestmark = pytest.mark.browser

SUPPORT = (Path(__file__).parent / "page_support.py").read_text()
LINEAR_FIXTURES = [e for e in INDEX if runnable(e)
                   and any(w in e["name"] for w in ("block", "mlp", "linear"))]
VARIANTS = ["tiled", "dot", "gemv4-32x1", "gemv4-64x4", "gemv-128x2", "gemvsg4-32x2",
            "gemvsg4-4x4", "gemvsg4-64x1", "gemvsg4-32x2x4", "gemvsg4-8x2g2", "gemv4-32x4g4",
            "mm4-8x8", "mm4-16x16", "mm-8x16", "mm4-8x16s4", "mm-8x8s3", "mm4-16x4", "mm4-4x16"]
SHAPES = [(3, 37, 5), (1, 1, 1), (70, 45, 33), (1, 256, 1), (9, 64, 130), (2, 6, 7)]

PAGE_CODE = r'''
import base64, os
from pte_webgpu.model import dtypes
from pte_webgpu.gpu.recording import Recording
from pte_webgpu.model.graph import Graph, Null, OpCall, TensorValue
from pte_webgpu.ops import matmul
from pte_webgpu.runtime.build import BuildContext, Resources


async def linear_variant(variant, m, k, n, x_b64, w_b64, b_b64, half):
    """One linear through the real handler with `variant` forced (None: the rule's
    pick); output as base64 (float16 when half)."""
    device = (await runtime()).device
    dt = dtypes.FLOAT16 if half else dtypes.FLOAT32
    es = 2 if half else 4
    blobs = [base64.b64decode(x_b64), base64.b64decode(w_b64)]
    bias = Null() if b_b64 is None else TensorValue(dt, (n,))
    graph = Graph([TensorValue(dt, (m, k)), TensorValue(dt, (n, k)), bias,
                   TensorValue(dt, (m, n))],
                  [OpCall("aten.linear.default", (0, 1, 2, 3))], [0], [3], [])
    resources = Resources(device)
    try:
        def buf(data, size, label):  # sized as float32 tensors, as BuildContext binds them
            b = resources.buffer(-(-size // 16) * 16, label)
            if data:
                device.write_buffer(b, data + bytes(-len(data) % 4))
            return b
        bufs = {0: buf(blobs[0], 4 * m * k, "x"), 1: buf(blobs[1], 4 * n * k, "w"),
                3: buf(b"", 4 * m * n, "y")}
        if b_b64 is not None:
            bufs[2] = buf(base64.b64decode(b_b64), 4 * n, "b")
        staging = resources.buffer(-(-4 * m * n // 16) * 16, "staging", ("map_read", "copy_dst"))
        opts = {"variants": {"matmul": variant}} if variant else {}
        ctx = BuildContext(device, graph, resources, Recording(), {}, "test", opts)
        ctx.buffers = bufs
        ctx.half = lambda vid: half
        op = graph.ops[0]
        ctx.begin_op(0, op)
        await matmul.build_linear(ctx, op)
        (raw,), _ = await device.run(ctx.recording, [(bufs[3], 4 * m * n)], staging)
        return {"y": base64.b64encode(raw[:es * m * n]).decode(), "kernel": ctx.kernels[-1]}
    finally:
        resources.release()
'''


@pytest.fixture(scope="module")
def page(browser_session):
    browser_session.run_python(SUPPORT)
    browser_session.run_python(PAGE_CODE)
    browser_session.run_python("await runtime(); None")
    return browser_session


def _data(m, k, n, dtype=np.float32):
    rng = np.random.default_rng(m * 7919 + k * 31 + n)
    return (rng.uniform(-1, 1, (m, k)).astype(dtype), rng.uniform(-1, 1, (n, k)).astype(dtype),
            rng.uniform(-1, 1, n).astype(dtype))


def run_in_page(page, variant, x, w, b):
    b64 = lambda a: None if a is None else base64.b64encode(a.tobytes()).decode()  # noqa: E731
    half = x.dtype == np.float16
    (m, k), n = x.shape, w.shape[0]
    out = page.run_python(f"await linear_variant({variant!r}, {m}, {k}, {n}, {b64(x)!r}, "
                          f"{b64(w)!r}, {b64(b)!r}, {half})")
    y = np.frombuffer(base64.b64decode(out["y"]), x.dtype).reshape(m, n)
    return y, out["kernel"]


def want(x, w, b):
    return x.astype(np.float64) @ w.astype(np.float64).T + (0 if b is None else b)


def _runnable(page, variant):
    why = page.run_python(f"adapter_supports('matmul', {variant!r})")
    if why:
        pytest.skip(f"{variant}: {why}")


@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_matches_numpy(page, variant):
    _runnable(page, variant)
    for shape in SHAPES:
        x, w, b = _data(*shape)
        for bias in (b, None):
            got, kernel = run_in_page(page, variant, x, w, bias)
            assert kernel["picked"] == "forced"
            np.testing.assert_allclose(got, want(x, w, bias), rtol=1e-5, atol=1e-5,
                                       err_msg=f"{variant} {shape} bias={bias is not None}")


def test_many_rows_fold_the_grid(page):
    x, w, b = _data(70000, 12, 3)
    got, kernel = run_in_page(page, None, x, w, b)
    np.testing.assert_allclose(got, want(x, w, b), rtol=1e-5, atol=1e-5)
    assert kernel["picked"] == "auto"


@pytest.mark.parametrize("variant", VARIANTS)
def test_fixtures_with_the_variant_forced(page, variant):
    _runnable(page, variant)
    assert LINEAR_FIXTURES
    for entry in LINEAR_FIXTURES:
        result = page.run_python(f"await fixture_with_variant('matmul', {variant!r}, {entry['name']!r}, "
                                 f"{entry.get('ptd_files', [])!r})")
        assert result["shapes"] == result["want_shapes"]
        tol = tolerance(entry)
        for abs_err, rel_err in result["errors"]:
            assert abs_err <= tol or rel_err <= tol, (entry["name"], result)
