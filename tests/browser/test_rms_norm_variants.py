"""Every rms_norm variant in headless Chromium (SwiftShader), subgroup ones included:
fixtures with the variant forced, random rows of widths not divisible by 4 and an
overflowing row, against a float32 reference computed like torch.

The fixture sweep here runs every variant on one fixture of each shape class
(BROWSER_FIXTURES), not on all rms_norm fixtures: the WGSL, the variant's parameters and
the host code that builds the dispatch are the same as natively, where
tests/native/test_rms_norm_variants.py forces every variant on every fixture. What only
the browser can show (Tint's compile, SwiftShader's execution, subgroups) shows on any
fixture of a class; the others of a class differ in what the kernel never sees (the eps
spelling, the export route, where the weight is stored) or in nothing but shape."""

import base64
from pathlib import Path

import numpy as np
import pytest
from pte_webgpu.ops import rms_norm

from tests.support.fixture_index import INDEX, runnable, tolerance
from tests.support.rms_norm_variants import subnormal_mean_rows

pytestmark = pytest.mark.browser

SUPPORT = (Path(__file__).parent / "page_support.py").read_text()
RMS_FIXTURES = [e for e in INDEX if runnable(e) and "rmsnorm" in e["name"]]
# One fixture per shape class (the native sweep runs every variant on all of RMS_FIXTURES).
BROWSER_FIXTURES = {
    "rmsnorm_1x8x64_eps1e-6": "3-D, rows short enough to stay in registers",
    "rmsnorm_3x5x7x256_epsNone": "4-D, 105 rows, the default eps",
    "rmsnorm_1x2x4096_eps1e-6": "rows read twice (too wide for registers)",
    "extra/rmsnorm_3x130_eps1e-5": "width not a multiple of 4 (the f32 entry point)",
    "extra/rmsnorm_5x1_eps1e-5": "width 1",
    "extra/rmsnorm_2x1000_eps1e-3": "width 1000, a large eps",
    "extra/rmsnorm_5d_2x1x3x2x48_eps1e-5": "5-D",
    "extra/rmsnorm_huge_2x64_eps1e-6": "row sums of squares near FLT_MAX, still finite",
    "extra/rmsnorm_overflow_2x64_eps1e-6": "float32 sums that overflow (torch's zeros)",
    "extra/rmsnorm_tiny_2x64_eps1e-6": "subnormal squares, eps dominates",
    "add_rmsnorm_2out_4x128": "a residual add before it, both results outputs",
    "rmsnorm_fp16_1x8x64_eps1e-6": "float16 tensors and weight (the f16 kernel)",
    "rmsnorm_forcefp16_1x8x64_eps1e-6": "force_fp16: f16 inside, f32 inputs and outputs",
    "extra/rmsnorm_70000x4_eps1e-5": "70000 rows: past one grid dimension, the grid folds",
}
FOLD_FIXTURE = "extra/rmsnorm_70000x4_eps1e-5"
VARIANTS = ["tree-64", "tree4-64", "tree4-256", "tile4-4x64", "tile4-8x256", "tile-2x64",
            "row4-16", "row4-64", "row-64", "sg4-4", "sg-4", "sg4-16", "sg4-64",
            # the other places a rare row is redone (the names above: the default, -tail)
            "tree4-256-inline", "row4-16-inline", "sg4-4-inline", "tree4-256-split",
            "tile-2x64-split", "row4-16-split", "sg4-4-split", "sg-4-split", "sg4-64-split"]
SHAPES = [(3, 7), (5, 130), (2, 1027), (6, 64), (2, 4096), (1, 1), (9, 2)]

PAGE_CODE = r'''
import base64, os
from pte_webgpu.model import dtypes
from pte_webgpu.gpu.recording import Recording
from pte_webgpu.model.graph import Graph, OpCall, Scalar, TensorValue
from pte_webgpu.ops import rms_norm
from pte_webgpu.runtime.build import BuildContext, Resources


async def rms_variant(variant, rows, width, x_b64, w_b64, eps):
    """One rms_norm dispatch of `variant` (None: the rule's pick); output as base64."""
    device = (await runtime()).device
    x, w = base64.b64decode(x_b64), base64.b64decode(w_b64)
    f32 = dtypes.FLOAT32
    graph = Graph([TensorValue(f32, (rows, width)), TensorValue(f32, (width,)),
                   Scalar("double", eps), TensorValue(f32, (rows, width))],
                  [OpCall("et_vk.rms_norm.default", (0, 1, 2, 3))], [0], [3], [])
    resources = Resources(device)
    try:
        bx, bw, by = (resources.buffer(len(d), n) for d, n in ((x, "x"), (w, "w"), (x, "y")))
        staging = resources.buffer(len(x), "staging", ("map_read", "copy_dst"))
        device.write_buffer(bx, x)
        device.write_buffer(bw, w)
        ctx = BuildContext(device, graph, resources, Recording(), {}, "test")
        ctx.buffers = {0: bx, 1: bw, 3: by}
        op = graph.ops[0]
        ctx.begin_op(0, op)
        if variant is None:
            await rms_norm.build(ctx, op)
        else:
            v = rms_norm.parse(variant).for_width(width)
            await rms_norm.record(ctx, op, v, [(0, 0), (1, 1), (2, 3)], rows, width, eps)
        (raw,), _ = await device.run(ctx.recording, [(by, len(x))], staging)
        return {"y": base64.b64encode(raw[:len(x)]).decode(), "kernel": ctx.kernels[-1]}
    finally:
        resources.release()
'''


@pytest.fixture(scope="module")
def page(browser_session):
    browser_session.run_python(SUPPORT)
    browser_session.run_python(PAGE_CODE)
    browser_session.run_python("await runtime(); None")
    return browser_session


def reference(x, w, eps):
    with np.errstate(over="ignore", invalid="ignore"):  # overflow -> inf -> zeros, as torch
        ms = np.sum(x * x, axis=-1, dtype=np.float32, keepdims=True) / np.float32(x.shape[-1])
        return x * (np.float32(1) / np.sqrt(ms + np.float32(eps))) * w


def _data(rows, width, scale=2.0):
    rng = np.random.default_rng(rows * 7919 + width)
    return (rng.uniform(-scale, scale, (rows, width)).astype(np.float32),
            rng.uniform(-2, 2, width).astype(np.float32))


def run_in_page(page, variant, x, w, eps):
    b64 = lambda a: base64.b64encode(a.tobytes()).decode()  # noqa: E731
    out = page.run_python(f"await rms_variant({variant!r}, {x.shape[0]}, {x.shape[1]}, "
                          f"{b64(x)!r}, {b64(w)!r}, {eps!r})")
    y = np.frombuffer(base64.b64decode(out["y"]), np.float32).reshape(x.shape)
    return y, out["kernel"]


def _runnable(page, variant):
    why = page.run_python(f"adapter_supports('rms_norm', {variant!r})")
    if why:
        pytest.skip(f"{variant}: {why}")


@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_matches_reference(page, variant):
    _runnable(page, variant)
    for shape in SHAPES:
        x, w = _data(*shape)
        got, _ = run_in_page(page, variant, x, w, 1e-6)
        np.testing.assert_allclose(got, reference(x, w, 1e-6), rtol=2e-5, atol=2e-6,
                                   err_msg=f"{variant} {shape}")


@pytest.mark.parametrize("variant", VARIANTS)
def test_rare_rows_are_rescaled_to_the_float64_result(page, variant):
    """Rows whose float32 sum of squares overflows (|x| ~ 1e20) or is flushed to zero
    (|x| ~ 1e-20: SwiftShader flushes subnormal squares), eps 0: the rescaled pass gives
    the exact mean square's result (torch's float32 gives zeros and inf); a normal row
    beside them is untouched."""
    _runnable(page, variant)
    x, w = _data(3, 68, scale=1e20)
    x[1] *= 1e-40
    x[2] *= 1e-20
    got, _ = run_in_page(page, variant, x, w, 0.0)
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True)) * w
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_normal_sum_with_a_subnormal_mean_is_rescaled(page, variant):
    """SwiftShader flushes a subnormal mean of squares to 0 even where the sum is normal:
    with eps 0 the row was inf; the rare-row test now looks at the mean."""
    _runnable(page, variant)
    x = subnormal_mean_rows(68)
    w = _data(1, 68)[1]
    got, _ = run_in_page(page, variant, x, w, 0.0)
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True)) * w
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)


def test_rows_beyond_one_grid_dimension_fold(page):
    x, w = _data(70000, 4)
    got, kernel = run_in_page(page, None, x, w, 1e-5)
    np.testing.assert_allclose(got, reference(x, w, 1e-5), rtol=2e-5, atol=2e-6)
    assert kernel["picked"] == "auto"


def test_the_rule_picks_barrier_free_kernels_on_swiftshader(page):
    info = page.run_python("_runtime.device.info.summary()")
    if "swiftshader" not in info:
        pytest.skip(f"not SwiftShader: {info}")
    for rows, want in ((8, "sg4-4"), (64, "row4-16")):
        x, w = _data(rows, 4096)
        _, kernel = run_in_page(page, None, x, w, 1e-6)
        assert kernel["variant"] == want, kernel


def _browser_fixtures(variant):
    """BROWSER_FIXTURES for `variant`. The fold fixture is left to the native sweep for
    variants of one row per workgroup of more than 64 invocations (tree4-256*): 70000
    such workgroups take 20-45 s each under SwiftShader, and they fold through the same
    group_index (snippets.wgsl) and rms_norm.wgsl as tree-64 and tree4-64 do here."""
    v = rms_norm.parse(variant)
    slow_fold = v.rows_per_group == 1 and v.wg_size > 64
    return [e for e in RMS_FIXTURES if e["name"] in BROWSER_FIXTURES
            and not (slow_fold and e["name"] == FOLD_FIXTURE)]


def test_the_browser_fixtures_are_rms_norm_fixtures_and_fold_in_the_browser():
    """Each class's fixture exists and is runnable; each shader file folds its grid in
    the browser with some variant (more than 65535 workgroups on the fold fixture)."""
    assert sorted(e["name"] for e in RMS_FIXTURES if e["name"] in BROWSER_FIXTURES) == \
        sorted(BROWSER_FIXTURES)
    folding = {rms_norm.parse(v).shader for v in VARIANTS
               if rms_norm.parse(v).for_width(4).workgroups(70000) > 65535
               and any(e["name"] == FOLD_FIXTURE for e in _browser_fixtures(v))}
    assert folding == {rms_norm.parse(v).shader for v in VARIANTS}, folding


@pytest.mark.parametrize("variant", VARIANTS)
def test_fixtures_with_the_variant_forced(page, variant):
    _runnable(page, variant)
    for entry in _browser_fixtures(variant):
        result = page.run_python(f"await fixture_with_variant('rms_norm', {variant!r}, {entry['name']!r}, "
                                 f"{entry.get('ptd_files', [])!r})")
        assert result["shapes"] == result["want_shapes"]
        tol = tolerance(entry)
        for abs_err, rel_err in result["errors"]:
            assert abs_err <= tol or rel_err <= tol, (entry["name"], result)


EPS0 = ["rmsnorm_eps0_rows1e-20_4x64", "rmsnorm_eps0_rows1e19_4x64",
        "rmsnorm_eps0_rows1e-25_4x64", "rmsnorm_eps0_rows3e19_4x64"]


@pytest.mark.parametrize("name", EPS0)
def test_exported_eps0_rows_near_underflow_and_overflow_match_float64(page, name):
    """Rare rows in Chromium: SwiftShader flushes the subnormal squares of rows near
    1e-20 and the float32 sum of rows near 1e19 overflows; eps 0. The exported program's
    output matches a float64 reference (torch's float32 gives inf and zeros)."""
    out = page.run_python(f"await run_edge({name!r})")
    ref = np.load(Path(__file__).parents[1] / "fixtures" / "edge" / f"{name}.npz")
    x, w = ref["in0"].astype(np.float64), ref["weight"].astype(np.float64)
    want = x / np.sqrt((x * x).mean(-1, keepdims=True)) * w
    got = np.frombuffer(bytes.fromhex(out), np.float32).reshape(want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
