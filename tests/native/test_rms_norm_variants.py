"""Every rms_norm variant natively (wgpu; lavapipe here): the fixtures with the variant
forced, and random rows of widths not divisible by 4, folded grids and overflow,
against a float32 reference computed like torch."""

import numpy as np
import pytest
from pte_webgpu.gpu.recording import Recording
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import Graph, OpCall, Scalar, TensorValue
from pte_webgpu.ops import rms_norm
from pte_webgpu.runtime.build import BuildContext, Resources

from tests.support.fixture_index import INDEX, runnable, tolerance
from tests.support.gpu_thread import run_fixture, run_sync
from tests.support.rms_norm_variants import VARIANTS, subnormal_mean_rows

RMS_FIXTURES = [e for e in INDEX if runnable(e) and "rmsnorm" in e["name"]]
SHAPES = [(3, 7), (5, 130), (2, 1027), (4, 4097), (9, 2), (1, 1), (6, 64), (2, 4096),
          (3, 1000)]


def reference(x, w, eps):
    with np.errstate(over="ignore", invalid="ignore"):  # overflow -> inf -> zeros, as torch
        ms = np.sum(x * x, axis=-1, dtype=np.float32, keepdims=True) / np.float32(x.shape[-1])
        return x * (np.float32(1) / np.sqrt(ms + np.float32(eps))) * w


async def run_variant(device, variant, x, w, eps):
    """One rms_norm dispatch of ``variant`` (None: the rule's choice) on ``x``."""
    rows, width = x.shape
    f32 = dtypes.FLOAT32
    graph = Graph([TensorValue(f32, (rows, width)), TensorValue(f32, (width,)),
                   Scalar("double", eps), TensorValue(f32, (rows, width))],
                  [OpCall("et_vk.rms_norm.default", (0, 1, 2, 3))], [0], [3], [])
    resources = Resources(device)
    try:
        bx, bw, by = (resources.buffer(a.nbytes, n) for a, n in ((x, "x"), (w, "w"), (x, "y")))
        staging = resources.buffer(x.nbytes, "staging", ("map_read", "copy_dst"))
        device.write_buffer(bx, x.tobytes())
        device.write_buffer(bw, w.tobytes())
        ctx = BuildContext(device, graph, resources, Recording(), {}, "test")
        ctx.buffers = {0: bx, 1: bw, 3: by}
        op = graph.ops[0]
        ctx.begin_op(0, op)
        if variant is None:
            await rms_norm.build(ctx, op)
        else:
            v = rms_norm.parse(variant).for_width(width)
            await rms_norm.record(ctx, op, v, [(0, 0), (1, 1), (2, 3)], rows, width, eps)
        (raw,), _ = await device.run(ctx.recording, [(by, x.nbytes)], staging)
        return np.frombuffer(raw[:x.nbytes], np.float32).reshape(rows, width), ctx.kernels
    finally:
        resources.release()


def _data(rows, width, seed=0, scale=2.0):
    rng = np.random.default_rng(seed + rows * 7919 + width)
    return (rng.uniform(-scale, scale, (rows, width)).astype(np.float32),
            rng.uniform(-2, 2, width).astype(np.float32))


def _runnable(runtime, name):
    why = rms_norm.supported(rms_norm.parse(name), runtime.device.info)
    if why:
        pytest.skip(f"{name}: {why}")


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_variant_matches_reference(runtime, variant, shape):
    _runnable(runtime, variant)
    x, w = _data(*shape)
    got, _ = run_sync(run_variant(runtime.device, variant, x, w, 1e-6))
    np.testing.assert_allclose(got, reference(x, w, 1e-6), rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("variant", ["tree4-256", "tile4-8x256", "row4-64", "tree-64"])
def test_rows_beyond_one_grid_dimension_fold(runtime, variant):
    _runnable(runtime, variant)
    x, w = _data(70000 * 64 // rms_norm.parse(variant).rows_per_group // 64 + 3, 4)
    if rms_norm.parse(variant).workgroups(x.shape[0]) <= 65535:
        x, w = _data(70000 * rms_norm.parse(variant).rows_per_group, 4)
    got, _ = run_sync(run_variant(runtime.device, variant, x, w, 1e-5))
    np.testing.assert_allclose(got, reference(x, w, 1e-5), rtol=2e-5, atol=2e-6)


def test_split_rescue_dispatch_folds_its_grid(runtime):
    """-split's second dispatch runs one invocation per row: past 65535 * 64 rows its grid
    folds into y; rare rows at both ends of such a tensor are redone."""
    _runnable(runtime, "row4-64-split")
    x, w = _data(70000 * 64, 4)
    x[[0, -1, -70]] *= np.float32(1e20)
    got, _ = run_sync(run_variant(runtime.device, "row4-64-split", x, w, 1e-5))
    want = reference(x, w, 1e-5)
    rare = [0, x.shape[0] - 1, x.shape[0] - 70]
    x64 = x[rare].astype(np.float64)
    want[rare] = x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + 1e-5) * w
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-6)


@pytest.mark.parametrize("variant", VARIANTS)
def test_overflowing_sum_is_rescaled_to_the_float64_result(runtime, variant):
    """torch's float32 sum overflows to inf (zeros out); the rescaled pass of the rare
    row follows the exact mean square, beside a normal row left as it was."""
    _runnable(runtime, variant)
    x, w = _data(3, 68, scale=1e20)
    x[1] *= 1e-20
    got, _ = run_sync(run_variant(runtime.device, variant, x, w, 1e-6))
    x64 = x.astype(np.float64)
    want = x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)
    np.testing.assert_allclose(got[1], reference(x[1:2], w, 1e-6)[0], rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("variant", VARIANTS)
def test_a_normal_sum_with_a_subnormal_mean_is_rescaled(runtime, variant):
    _runnable(runtime, variant)
    x = subnormal_mean_rows(68)
    w = _data(1, 68)[1]
    x64 = x.astype(np.float64)
    assert ((x64 * x64).sum(-1) > 1.2e-38).all() and ((x64 * x64).mean(-1) < 1.1e-38).all()
    got, _ = run_sync(run_variant(runtime.device, variant, x, w, 0.0))
    want = x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True)) * w
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("variant", ["tree4-256-split", "row4-16-split", "tile-2x64-split"])
def test_split_form_clears_its_flags_for_the_next_run(runtime, variant):
    """The split form's first dispatch flags rare rows, its second redoes and clears them:
    after each run of the same recording every flag is 0 again (a stale flag would only
    cost time, invisible in the values), and rare rows after plain ones are still redone."""
    x, w = _data(5, 68, scale=1e20)
    x[[1, 3]] *= 1e-20
    plain = _data(5, 68)[0]

    async def go():
        device = runtime.device
        f32 = dtypes.FLOAT32
        graph = Graph([TensorValue(f32, x.shape), TensorValue(f32, (68,)), Scalar("double", 0.0),
                       TensorValue(f32, x.shape)], [OpCall("et_vk.rms_norm.default", (0, 1, 2, 3))],
                      [0], [3], [])
        resources = Resources(device)
        try:
            bx, bw, by = (resources.buffer(x.nbytes, n) for n in ("x", "w", "y"))
            staging = resources.buffer(2 * x.nbytes, "staging", ("map_read", "copy_dst"))
            device.write_buffer(bw, w.tobytes())
            ctx = BuildContext(device, graph, resources, Recording(), {}, "test")
            ctx.buffers = {0: bx, 1: bw, 3: by}
            ctx.begin_op(0, graph.ops[0])
            await rms_norm.record(ctx, graph.ops[0], rms_norm.parse(variant), [(0, 0), (1, 1), (2, 3)],
                                  5, 68, 0.0)
            assert ctx.kernels[-1]["dispatches"] == 2
            (flags,) = [b for b in resources.buffers if "rescue flags" in b.label]
            runs = []
            for data in (x, plain, x):
                device.write_buffer(bx, data.tobytes())
                (y, f), _ = await device.run(ctx.recording, [(by, x.nbytes), (flags, 20)], staging)
                runs.append((np.frombuffer(y, np.float32).reshape(x.shape).copy(),
                             np.frombuffer(f, np.uint32).copy()))
            return runs
        finally:
            resources.release()

    for data, (got, flags) in zip((x, plain, x), run_sync(go())):
        assert not flags.any(), flags
        x64 = data.astype(np.float64)
        want = x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True)) * w
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-7)


def test_the_choice_is_recorded(runtime, monkeypatch):
    monkeypatch.delenv(rms_norm.VARIANTS.env_var, raising=False)
    x, w = _data(4, 4096)
    _, kernels = run_sync(run_variant(runtime.device, None, x, w, 1e-6))
    want = rms_norm.choose(runtime.device.info, 4, 4096).name
    assert kernels[-1]["variant"] == want and kernels[-1]["picked"] == "auto"
    monkeypatch.setenv(rms_norm.VARIANTS.env_var, "tree-64")
    _, kernels = run_sync(run_variant(runtime.device, None, x, w, 1e-6))
    assert kernels[-1]["variant"] == "tree-64" and kernels[-1]["picked"] == "forced"




@pytest.mark.parametrize("variant", VARIANTS)
def test_fixtures_with_the_variant_forced(runtime, variant, monkeypatch):
    _runnable(runtime, variant)
    monkeypatch.setenv(rms_norm.VARIANTS.env_var, variant)
    for entry in RMS_FIXTURES:
        outs, wants = run_fixture(runtime, entry["name"], entry.get("ptd_files", []))
        tol = tolerance(entry)
        for got, want in zip(outs, wants):
            np.testing.assert_allclose(got, want, atol=tol, rtol=tol, err_msg=entry["name"])
    assert runtime.device.live_buffer_count == 0
