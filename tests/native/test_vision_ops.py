"""Pooling, batch/group norm and resampling natively (wgpu on lavapipe) on hand-built
graphs at awkward shapes and edge values, f32 and f16, against float64 numpy written from
torch's CPU kernels (tests/support/vision_ops.py); each op's CPU reference is checked on
the same graph."""

from __future__ import annotations

import numpy as np
import pytest
from pte_webgpu.errors import FormatError, UnsupportedError
from pte_webgpu.model import dtypes
from pte_webgpu.runtime.storage import Storage

from tests.support import vision_ops as ref
from tests.support.vision_ops import VG, run_both

F16, I64 = dtypes.FLOAT16, dtypes.BY_NAME["int64"]
HALF = Storage(half=True)
RNG = np.random.default_rng(19)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def close(got, want, rtol=1e-5, atol=1e-5):
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol * max(1.0, np.nanmax(np.abs(
        np.where(np.isfinite(want), want, 0)), initial=0)))


def check_both(g, device, out, want):
    """The GPU within 1e-5 and the op's CPU reference within float32 rounding of want."""
    (got,), (cpu,) = run_both(g, device, out)
    close(got, want)
    close(cpu, want, 1e-6, 1e-6)


def close16(got, want):
    want16 = want.astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(got, want16, atol=2e-3, rtol=2e-3)


def needs_f16(device):
    if "shader-f16" not in device.info.features:
        pytest.skip("the adapter has no shader-f16")


# --- max pool ------------------------------------------------------------------------

def max_pool_graph(x, k, s, p, d, ceil, dtype=dtypes.FLOAT32, storage=None):
    g = VG(storage) if storage else VG()
    want, _ = ref.max_pool(np.zeros(x.shape), k, s, p, d, ceil)
    out, idx = g.tensor(want.shape, dtype=dtype), g.tensor(want.shape, dtype=I64)
    g.op("aten.max_pool2d_with_indices.default", g.input(x, dtype), g.ints(k), g.ints(s),
         g.ints(p), g.ints(d), g.bool(ceil), g.outputs_list(out, idx))
    return g, out, idx


MAX_CASES = [  # kernel, stride, padding, dilation, ceil_mode
    ([3, 3], [2, 2], [1, 1], [1, 1], False),
    ([2], [], [0], [1], False),  # one-int lists, empty stride = kernel
    ([3, 2], [2, 1], [1, 0], [2, 1], True),
    ([3, 3], [2, 2], [0, 0], [1, 1], True),  # ceil adds a partial window
    ([2, 2], [3, 3], [1, 1], [1, 1], True),  # the last window would start in padding
    ([5, 1], [1, 1], [2, 0], [1, 1], False),
]


@pytest.mark.parametrize("case", MAX_CASES, ids=str)
def test_max_pool(device, case):
    x = rand(2, 3, 9, 11)
    g, out, idx = max_pool_graph(x, *case)
    (got, got_i), (cpu, cpu_i) = run_both(g, device, out, idx)
    want, want_i = ref.max_pool(x, *case)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_array_equal(cpu, want)
    np.testing.assert_array_equal(cpu_i, want_i)


def test_max_pool_nan_inf_and_ties(device):
    """NaN wins (the last NaN's index), -inf windows give -inf at the first element, ties
    and +-0 keep the first."""
    x = np.full((1, 2, 4, 6), -np.inf, np.float32)
    x[0, 0, 0, :] = [1, np.nan, 3, np.nan, 2, 2]
    x[0, 0, 1, :] = [np.inf, 0, -0.0, 0.0, 5, 5]
    x[0, 1, 2, :] = [-0.0, 0.0, 7, 7, np.nan, 1]
    case = ([2, 2], [2, 2], [0, 0], [1, 1], False)
    g, out, idx = max_pool_graph(x, *case)
    (got, got_i), (cpu, cpu_i) = run_both(g, device, out, idx)
    want, want_i = ref.max_pool(x, *case)
    for a, b in ((got, want), (cpu, want)):
        np.testing.assert_array_equal(a, b)  # NaN in the same places
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_array_equal(cpu_i, want_i)
    assert np.signbit(got[0, 1, 1, 0]) == np.signbit(want[0, 1, 1, 0])


def test_max_pool_f16(device):
    needs_f16(device)
    x = rand(1, 2, 7, 8).astype(np.float16)
    case = ([3, 3], [2, 2], [1, 1], [1, 1], True)
    g, out, idx = max_pool_graph(x, *case, dtype=F16, storage=HALF)
    got, got_i = g.run(device, out, idx)
    want, want_i = ref.max_pool(x.astype(np.float64), *case)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(got_i, want_i)


@pytest.mark.parametrize("k,s,p,d,what", [([2, 2], [0, 1], [0, 0], [1, 1], "stride"),
                                          ([3, 3], [1, 1], [2, 2], [1, 1], "padding"),
                                          ([2, 2, 2], [1], [0], [1], "kernel_size"),
                                          ([9, 9], [1], [0], [1], "too small")])
def test_max_pool_bad_arguments(device, k, s, p, d, what):
    x = rand(1, 1, 5, 5)
    g = VG()
    out, idx = g.tensor((1, 1, 1, 1)), g.tensor((1, 1, 1, 1), dtype=I64)
    g.op("aten.max_pool2d_with_indices.default", g.input(x), g.ints(k), g.ints(s), g.ints(p),
         g.ints(d), g.bool(False), g.outputs_list(out, idx))
    with pytest.raises(FormatError, match=what):
        g.run(device, out)


# --- avg pool ------------------------------------------------------------------------

AVG_CASES = [  # kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
    ([3, 3], [2, 2], [1, 1], False, True, None),
    ([3, 3], [2, 2], [1, 1], True, False, 5),
    ([3, 2], [2, 1], [1, 1], True, False, None),
    ([3, 3], [2, 2], [1, 1], True, True, None),  # the window clamped to the padded input
    ([2], [], [0], False, True, None),
    ([4, 4], [3, 3], [2, 2], True, True, 3),
]


@pytest.mark.parametrize("case", AVG_CASES, ids=str)
def test_avg_pool(device, case):
    k, s, p, ceil, count_pad, div = case
    x = rand(2, 3, 9, 10)
    want = ref.avg_pool(x, k, s, p, ceil, count_pad, div)
    g = VG()
    out = g.tensor(want.shape)
    g.op("aten.avg_pool2d.default", g.input(x), g.ints(k), g.ints(s), g.ints(p),
         g.bool(ceil), g.bool(count_pad), g.null() if div is None else g.int(div), out)
    check_both(g, device, out, want)


def test_avg_pool_f16_and_inf(device):
    needs_f16(device)
    x = rand(1, 2, 6, 7).astype(np.float16)
    x[0, 0, 1, 1] = np.inf
    want = ref.avg_pool(x.astype(np.float64), [3, 3], [2, 2], [1, 1], False, False)
    g = VG(HALF)
    out = g.tensor(want.shape, dtype=F16)
    g.op("aten.avg_pool2d.default", g.input(x, F16), g.ints([3, 3]), g.ints([2, 2]),
         g.ints([1, 1]), g.bool(False), g.bool(False), g.null(), out)
    (got,) = g.run(device, out)
    assert np.isinf(got[0, 0, 0, 0]) and np.isinf(want[0, 0, 0, 0])
    fin = np.isfinite(want)
    close16(got[fin], want[fin])


def test_avg_pool_zero_divisor(device):
    g = VG()
    out = g.tensor((1, 1, 2, 2))
    g.op("aten.avg_pool2d.default", g.input(rand(1, 1, 4, 4)), g.ints([2, 2]), g.ints([2, 2]),
         g.ints([0, 0]), g.bool(False), g.bool(True), g.int(0), out)
    with pytest.raises(FormatError, match="divisor_override"):
        g.run(device, out)


# --- batch norm ----------------------------------------------------------------------

def bn_graph(x, affine, eps=1e-5, dtype=dtypes.FLOAT32, storage=None, np_dtype=np.float32):
    c = x.shape[1]
    w, b = (rand(c).astype(np_dtype), rand(c).astype(np_dtype)) if affine else (None, None)
    mean, var = rand(c).astype(np_dtype), (RNG.random(c) + 0.2).astype(np_dtype)
    g = VG(storage) if storage else VG()
    out = g.tensor(x.shape, dtype=dtype)
    g.op("aten._native_batch_norm_legit_no_training.default", g.input(x, dtype),
         g.const(w, dtype) if affine else g.null(), g.const(b, dtype) if affine else g.null(),
         g.const(mean, dtype), g.const(var, dtype), g.double(0.1), g.double(eps),
         g.outputs_list(out, g.tensor((0,), dtype=dtype), g.tensor((0,), dtype=dtype)))
    return g, out, ref.batch_norm(x.astype(np.float64), w, b, mean, var, eps)


@pytest.mark.parametrize("shape", [(2, 5, 3, 4), (2, 3, 7), (3, 6), (1, 4, 5, 3), (2, 3, 2, 2, 2)])
@pytest.mark.parametrize("affine", [True, False])
def test_batch_norm(device, shape, affine):
    g, out, want = bn_graph(rand(*shape, scale=2.0), affine, eps=1e-3)
    check_both(g, device, out, want)


def test_batch_norm_f16(device):
    needs_f16(device)
    x = rand(2, 3, 4, 4).astype(np.float16)
    g, out, want = bn_graph(x, True, dtype=F16, storage=HALF, np_dtype=np.float16)
    (got,) = g.run(device, out)
    close16(got, want)


# --- group norm ----------------------------------------------------------------------

def gn_graph(x, groups, affine, eps=1e-5, dtype=dtypes.FLOAT32, storage=None):
    n, c = x.shape[:2]
    hw = int(np.prod(x.shape[2:]))
    npt = np.float16 if dtype is F16 else np.float32
    w, b = (rand(c).astype(npt), rand(c).astype(npt)) if affine else (None, None)
    g = VG(storage) if storage else VG()
    ids = (g.tensor(x.shape, dtype=dtype), g.tensor((n, groups), dtype=dtype),
           g.tensor((n, groups), dtype=dtype))
    g.op("aten.native_group_norm.default", g.input(x, dtype),
         g.const(w, dtype) if affine else g.null(), g.const(b, dtype) if affine else g.null(),
         g.int(n), g.int(c), g.int(hw), g.int(groups), g.double(eps), g.outputs_list(*ids))
    return g, ids, ref.group_norm(x, groups, w, b, eps)


@pytest.mark.parametrize("shape,groups", [((2, 6, 5, 7), 3), ((1, 4, 3, 3), 4), ((3, 8, 11), 2),
                                          ((2, 4), 1), ((1, 32, 9, 9), 8)])
@pytest.mark.parametrize("affine", [True, False])
def test_group_norm(device, shape, groups, affine):
    x = rand(*shape, scale=3.0) + 2.0
    g, ids, want = gn_graph(x, groups, affine)
    got, cpu = run_both(g, device, *ids)
    for a, c, w in zip(got, cpu, want):
        close(a, w, 1e-4, 1e-5)
        close(c, w, 1e-6, 1e-6)


@pytest.mark.parametrize("variant", ["tree", "row"])
@pytest.mark.parametrize("shape,groups", [((40, 6, 3, 5), 3), ((2, 4, 33), 2)])
def test_group_norm_variants(device, variant, shape, groups):
    """Both norm kernels forced (layer norm's too: one kernel), with a rare row whose sum
    of squares overflows float32 (the rescaled pass)."""
    x = rand(*shape, scale=3.0)
    x[1] *= np.float32(3e18)
    g, ids, want = gn_graph(x, groups, True)
    g.options = {"variants": {"norm": variant}}
    got = g.run(device, *ids)
    for a, w in zip(got, want):
        close(a, w, 1e-4, 1e-5)


@pytest.mark.parametrize("variant", ["tree", "row"])
def test_group_norm_of_a_normal_sum_with_a_subnormal_mean(device, variant):
    """A group whose float32 sum of squared deviations is normal while their mean is
    subnormal (flushed to 0 by SwiftShader, which made the group inf with eps 0): the
    rescaled pass gives float64's result."""
    x = np.zeros((1, 2, 40), np.float32)
    x[0, 0, [3, 11]] = (2e-19, -1.5e-19)
    x[0, 1] = rand(40)
    g, ids, want = gn_graph(x, 2, False, eps=0.0)
    got = g.run(device, *ids)
    assert np.isfinite(got[0]).all()
    for a, w in zip(got, want):
        close(a, w, 1e-5, 1e-6)


def test_norm_rule():
    """A row per invocation on a CPU adapter with rows enough; trees on GPUs."""
    from pte_webgpu.ops.norm import VARIANTS
    assert VARIANTS.typical(rows=64, width=96) == {"chromium-swiftshader": "row",
                                                   "discrete-gpu": "tree"}
    assert VARIANTS.typical(rows=4, width=96)["chromium-swiftshader"] == "tree"


def test_group_norm_f16(device):
    needs_f16(device)
    x = rand(2, 4, 3, 5).astype(np.float16)
    g, ids, want = gn_graph(x, 2, True, dtype=F16, storage=HALF)
    got = g.run(device, *ids)
    for a, w in zip(got, want):
        close16(a, w)


def test_group_norm_bad_groups(device):
    x = rand(1, 6, 2, 2)
    g, ids, _ = gn_graph(x, 3, False)
    g.values[g.ops[-1].args[6]] = g.values[g.int(4)]
    with pytest.raises(FormatError, match="groups"):
        g.run(device, ids[0])


# --- upsample ------------------------------------------------------------------------

NEAREST_CASES = [  # input (H, W), output_size or None, scale_factors or None
    ((5, 7), None, [2.0, 2.0]),
    ((5, 7), None, [1.5, 1.5]),
    ((5, 7), None, [1.7, 0.6]),
    ((4, 7), None, [2.1, 1.1]),  # 8 = 2 * 4 takes dst >> 1, 7 = 7 copies, whatever the factor
    ((5, 7), [11, 3], None),
    ((3, 3), [7, 10], None),
    ((6, 9), None, [1 / 3, 2.5]),
]


def _out_hw(hw, size, scales):
    return tuple(size) if size else (int(hw[0] * scales[0]), int(hw[1] * scales[1]))


def upsample_graph(x, size, scales, align=None, dtype=dtypes.FLOAT32, storage=None):
    from pte_webgpu.model.graph import ListValue
    g = VG(storage) if storage else VG()
    out = g.tensor(x.shape[:-2] + _out_hw(x.shape[-2:], size, scales), dtype=dtype)
    size_id = g.ints(size) if size else g.null()
    scale_id = g._add(ListValue("double_list", tuple(scales))) if scales else g.null()
    if align is None:
        g.op("aten.upsample_nearest2d.vec", g.input(x, dtype), size_id, scale_id, out)
    else:
        g.op("aten.upsample_bilinear2d.vec", g.input(x, dtype), size_id, g.bool(align),
             scale_id, out)
    return g, out


@pytest.mark.parametrize("hw,size,scales", NEAREST_CASES, ids=str)
def test_upsample_nearest(device, hw, size, scales):
    x = rand(2, 3, *hw)
    g, out = upsample_graph(x, size, scales)
    (got,), (cpu,) = run_both(g, device, out)
    want = ref.upsample_nearest(x, g.values[out].shape[-2:], scales or (None, None))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(cpu, want)


@pytest.mark.parametrize("align", [False, True])
@pytest.mark.parametrize("hw,size,scales", NEAREST_CASES + [((1, 5), [4, 9], None),
                                                            ((6, 6), [1, 1], None),
                                                            ((1, 1), [8, 8], None)], ids=str)
def test_upsample_bilinear(device, hw, size, scales, align):
    x = rand(2, 3, *hw)
    g, out = upsample_graph(x, size, scales, align)
    want = ref.upsample_bilinear(x, g.values[out].shape[-2:], align, scales or (None, None))
    check_both(g, device, out, want)


def test_upsample_f16(device):
    needs_f16(device)
    x = rand(1, 2, 5, 6).astype(np.float16)
    for align in (None, False, True):
        g, out = upsample_graph(x, None, [1.5, 2.0], align, F16, HALF)
        (got,) = g.run(device, out)
        hw = g.values[out].shape[-2:]
        if align is None:
            np.testing.assert_array_equal(got, ref.upsample_nearest(x, hw, (1.5, 2.0)))
        else:
            close16(got, ref.upsample_bilinear(x.astype(np.float64), hw, align, (1.5, 2.0)))


def test_upsample_bad_arguments(device):
    x = rand(1, 1, 4, 4)
    g, out = upsample_graph(x, [8, 8], None)
    g.values[out] = g.values[g.tensor((1, 1, 8, 9))]
    with pytest.raises(FormatError, match="output shape"):
        g.run(device, out)
    g = VG()
    out = g.tensor((1, 1, 8, 8))
    g.op("aten.upsample_nearest2d.vec", g.input(x), g.null(), g.null(), out)
    with pytest.raises(FormatError, match="exactly one"):
        g.run(device, out)
    g = VG()
    out = g.tensor((4, 8))
    g.op("aten.upsample_nearest2d.vec", g.input(rand(4, 4)), g.ints([4, 8]), g.null(), out)
    with pytest.raises(UnsupportedError, match="rank 2"):
        g.run(device, out)


# --- adaptive avg pool (a plan kernel) -----------------------------------------------

@pytest.mark.parametrize("hw,out_hw", [((9, 11), (3, 4)), ((7, 7), (7, 7)), ((5, 6), (10, 4)),
                                       ((6, 8), (1, 1)), ((5, 9), (2, 1))])
def test_adaptive_avg_pool(device, hw, out_hw):
    x = rand(2, 3, *hw)
    g = VG()
    out = g.tensor((2, 3) + out_hw)
    g.op("aten._adaptive_avg_pool2d.default", g.input(x), g.ints(out_hw), out)
    want = ref.adaptive_avg_pool(x, out_hw)
    check_both(g, device, out, want)


# --- pixel shuffle and padding -------------------------------------------------------

@pytest.mark.parametrize("shape,r", [((1, 8, 3, 5), 2), ((2, 9, 2, 3), 3), ((12, 4, 4), 2),
                                     ((2, 1, 4, 3, 3), 2), ((1, 5, 2, 2), 1)])
def test_pixel_shuffle(device, shape, r):
    x = rand(*shape)
    g = VG()
    want = ref.pixel_shuffle(x, r)
    out = g.tensor(want.shape)
    g.op("aten.pixel_shuffle.default", g.input(x), g.int(r), out)
    (got,), (cpu,) = run_both(g, device, out)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(cpu, want)


PAD_CASES = [((2, 3, 4, 5), [1, 2, 0, 3], 1.5), ((2, 3, 4, 5), [-1, 2, 1, -2], 0.0),
             ((2, 3, 4, 5), [1, 1, 1, 1, 1, 1], -2.0), ((3, 7), [2, -3], float("inf")),
             ((2, 3, 4), [0, 0, 0, 0, 1, 0], 3), ((1, 2, 3, 4, 5), [-2, -2, 1, 0], 0.25),
             ((4,), [3, 1], float("nan"))]


@pytest.mark.parametrize("shape,pad,value", PAD_CASES, ids=str)
def test_constant_pad(device, shape, pad, value):
    x = rand(*shape)
    want = ref.constant_pad(x, pad, value)
    g = VG()
    out = g.tensor(want.shape)
    g.op("aten.constant_pad_nd.default", g.input(x), g.ints(pad),
         g.int(value) if isinstance(value, int) else g.double(value), out)
    (got,), (cpu,) = run_both(g, device, out)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(cpu, want)


def test_constant_pad_f16_and_errors(device):
    needs_f16(device)
    x = rand(2, 3, 5).astype(np.float16)
    g = VG(HALF)
    out = g.tensor((2, 4, 7), dtype=F16)
    g.op("aten.constant_pad_nd.default", g.input(x, F16), g.ints([1, 1, 0, 1]), g.double(0.1),
         out)
    (got,) = g.run(device, out)
    np.testing.assert_array_equal(got, ref.constant_pad(x, [1, 1, 0, 1], np.float16(0.1)))
    g = VG()
    out = g.tensor((2, 3, 0))
    g.op("aten.constant_pad_nd.default", g.input(rand(2, 3, 5)), g.ints([-3, -3]), g.double(0),
         out)
    with pytest.raises(FormatError, match="size -1"):
        g.run(device, out)


# --- grid sampler (a plan kernel) ----------------------------------------------------

@pytest.mark.parametrize("mode", [0, 1])
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample(device, mode, padding, align):
    x = rand(2, 3, 5, 7)
    grid = (RNG.random((2, 4, 6, 2)) * 3.0 - 1.5).astype(np.float32)
    grid[0, 0, 0] = [-1, 1]
    grid[0, 0, 1] = [1, -1]
    grid[0, 0, 2] = [0, 0]
    grid[1, 0, 0] = [np.nan, 0]
    grid[1, 0, 1] = [np.inf, 0.2]
    grid[1, 0, 2] = [-7.3, 9.1]  # several reflections
    grid[1, 1, 0] = [2 / 7 - 1, 2 / 5 - 1]  # a pixel corner: nearest's half-way case
    g = VG()
    out = g.tensor((2, 3, 4, 6))
    g.op("aten.grid_sampler_2d.default", g.input(x), g.input(grid), g.int(mode),
         g.int(padding), g.bool(align), out)
    want = ref.grid_sample(x, grid, mode, padding, align)
    check_both(g, device, out, want)


def test_grid_sample_f16_and_bicubic(device):
    needs_f16(device)
    x = rand(1, 2, 4, 5).astype(np.float16)
    grid = (RNG.random((1, 3, 3, 2)) * 2 - 1).astype(np.float16)
    g = VG(HALF)
    out = g.tensor((1, 2, 3, 3), dtype=F16)
    g.op("aten.grid_sampler_2d.default", g.input(x, F16), g.input(grid, F16), g.int(0),
         g.int(0), g.bool(False), out)
    (got,) = g.run(device, out)
    close16(got, ref.grid_sample(x, grid, 0, 0, False))
    g = VG()
    out = g.tensor((1, 2, 3, 3))
    g.op("aten.grid_sampler_2d.default", g.input(rand(1, 2, 4, 5)), g.input(rand(1, 3, 3, 2)),
         g.int(2), g.int(0), g.bool(False), out)
    with pytest.raises(UnsupportedError, match="bicubic"):
        g.run(device, out)


def test_abs_of_ints(device):
    """aten.abs on int32 (the plan kernel of F.pad's reflect decomposition)."""
    x = np.array([[-3, 0, 7], [-1234567, 5, -1]], np.int32)  # exact through float32 reads
    g = VG()
    out = g.tensor(x.shape, dtype=dtypes.BY_NAME["int32"])
    g.op("aten.abs.default", g.input(x, dtypes.BY_NAME["int32"]), out)
    got, cpu = run_both(g, device, out)
    np.testing.assert_array_equal(got[0], np.abs(x))
    np.testing.assert_array_equal(cpu[0], np.abs(x))


def test_clamp_of_ints(device):
    """aten.clamp on int32 with Int and Null bounds (F.pad's replicate decomposition)."""
    i32 = dtypes.BY_NAME["int32"]
    x = np.array([[-3, 0, 7], [-1234567, 5, 9]], np.int32)
    for lo, hi in ((0, 5), (None, 4), (-2, None)):
        g = VG()
        out = g.tensor(x.shape, dtype=i32)
        g.op("aten.clamp.default", g.input(x, i32), g.null() if lo is None else g.int(lo),
             g.null() if hi is None else g.int(hi), out)
        got, cpu = run_both(g, device, out)
        np.testing.assert_array_equal(got[0], np.clip(x, lo, hi))
        np.testing.assert_array_equal(cpu[0], np.clip(x, lo, hi))
