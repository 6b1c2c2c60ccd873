"""The f16 form of every kernel family (float16 tensors stored as f16, f32 math),
natively where the adapter has shader-f16 (lavapipe does), against numpy in float64
on the float16-rounded inputs."""

import numpy as np
import pytest
from pte_webgpu.model import dtypes
from pte_webgpu.runtime.storage import Storage

from tests.support.activations import ACTIVATIONS, activation_want, check_activation
from tests.support.graph import G

F16 = dtypes.FLOAT16
HALF = Storage(half=True)
RNG = np.random.default_rng(11)


@pytest.fixture(autouse=True)
def needs_shader_f16(device):
    if "shader-f16" not in device.info.features:
        pytest.skip("the adapter has no shader-f16")


def rand16(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float16)


def close16(got, want):
    """Within what rounding the result to float16 allows (plus f32 accumulation)."""
    want16 = want.astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(got.astype(np.float64), want16, atol=2e-3, rtol=2e-3)


def f64(a):
    return a.astype(np.float64)


@pytest.mark.parametrize("name,code", [("aten.add.Tensor", "+"), ("aten.sub.Tensor", "-"),
                                       ("aten.mul.Tensor", "*"), ("aten.div.Tensor", "/")])
def test_binary_broadcast(device, name, code):
    a, b = rand16(5, 1, 7), rand16(1, 6, 1) + np.float16(3)
    g = G(HALF)
    args = [g.input(a, F16), g.input(b, F16)]
    if name in ("aten.add.Tensor", "aten.sub.Tensor"):
        args.append(g.double(1.5))
    out = g.op(name, *args, g.tensor((5, 6, 7), dtype=F16))
    (got,) = g.run(device, out)
    x, y = f64(a), f64(b) * (1.5 if len(args) == 3 else 1.0)
    close16(got, {"+": x + y, "-": x - y, "*": x * y, "/": x / y}[code])


@pytest.mark.parametrize("variant", [None, "tree4-256-split", "row4-16-split", "tile-2x64-inline"])
@pytest.mark.parametrize("width", [130, 64, 4096, 1])
def test_rms_norm(device, width, variant):
    """Each place a rare row can be redone, in the f16 form (float16 rows cannot make an
    f32 sum of squares under- or overflow: this checks the forms compile and leave
    plain rows as they are)."""
    x, w = rand16(3, width), rand16(width) + np.float16(1)
    g = G(HALF, options={"variants": {"rms_norm": variant}} if variant else None)
    out = g.op("et_vk.rms_norm.default", g.input(x, F16), g.const(w, F16), g.double(1e-5),
               g.tensor(x.shape, dtype=F16))
    (got,) = g.run(device, out)
    xx = f64(x)
    close16(got, xx / np.sqrt((xx * xx).mean(-1, keepdims=True) + 1e-5) * f64(w))


@pytest.mark.parametrize("variant", ["tiled", "dot", "gemv4-64x4", "gemv4-32x2", "gemvsg4-32x4",
                                     "gemv8-32x2", "gemvsg8-32x4x4", "gemv8-64x1x8", "gemvsg8-32x4g4",
                                     "gemv8-16x2g4", "gemvsg8-8x2x4g2", "mm4-8x8",
                                     "mm4-16x8"])
@pytest.mark.parametrize("k", [37, 64, 200])  # 64, 200: 8-half loads (200: a ragged sweep)
def test_linear_odd_shape(device, variant, k):
    if variant.startswith("gemvsg") and not {"subgroup", "subgroups"} & device.info.features:
        pytest.skip("the adapter has no subgroups")
    x, w, b = rand16(3, k), rand16(5, k, scale=0.2), rand16(5)
    g = G(HALF, options={"variants": {"matmul": variant}})
    out = g.op("aten.linear.default", g.input(x, F16), g.const(w, F16), g.const(b, F16),
               g.tensor((3, 5), dtype=F16))
    (got,) = g.run(device, out)
    close16(got, f64(x) @ f64(w).T + f64(b))


@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_and_mean(device, dim):
    x = rand16(3, 7, scale=2.0)
    g = G(HALF)
    xi = g.input(x, F16)
    sm = g.op("aten._softmax.default", xi, g.int(dim), g.bool(False),
              g.tensor(x.shape, dtype=F16))
    mean_shape = (1, 7) if dim == 0 else (3, 1)
    mean = g.op("aten.mean.dim", xi, g.ints([dim]), g.bool(True), g.null(),
                g.tensor(mean_shape, dtype=F16))
    got_sm, got_mean = g.run(device, sm, mean)
    e = np.exp(f64(x) - f64(x).max(axis=dim, keepdims=True))
    close16(got_sm, e / e.sum(axis=dim, keepdims=True))
    close16(got_mean, f64(x).mean(axis=dim, keepdims=True))


def test_unary_and_permute(device):
    x = np.abs(rand16(2, 3, 4)) + np.float16(0.5)
    g = G(HALF)
    xi = g.input(x, F16)
    r = g.op("aten.rsqrt.default", xi, g.tensor(x.shape, dtype=F16))
    s = g.op("aten.sigmoid.default", xi, g.tensor(x.shape, dtype=F16))
    p = g.op("aten.pow.Tensor_Scalar", xi, g.int(3), g.tensor(x.shape, dtype=F16))
    t = g.op("aten.permute_copy.default", xi, g.ints([2, 0, 1]),
             g.tensor((4, 2, 3), dtype=F16))
    got_r, got_s, got_p, got_t = g.run(device, r, s, p, t)
    close16(got_r, 1 / np.sqrt(f64(x)))
    close16(got_s, 1 / (1 + np.exp(-f64(x))))
    close16(got_p, f64(x) ** 3)
    np.testing.assert_array_equal(got_t, f64(x).transpose(2, 0, 1))


EDGES16 = np.array([-np.inf, -65504.0, -100.0, -20.0, -9.0, -6.0, -3.0, -1.0, -0.5, -1e-3,
                    -1e-4, -0.0, 0.0, 1e-4, 1e-3, 0.3, 0.625, 1.0, 2.0, 3.0, 5.0, 9.0, 11.0,
                    20.0, 65504.0, np.inf, np.nan], np.float16)


@pytest.mark.parametrize("case", list(ACTIVATIONS))
def test_activations_at_the_edges(device, case):
    name, extra, fn = ACTIVATIONS[case]
    x = np.concatenate([EDGES16, rand16(100, scale=4.0)])
    g = G(HALF)
    out = g.op(name, g.input(x, F16), *extra(g), g.tensor(x.shape, dtype=F16))
    (got,) = g.run(device, out)
    with np.errstate(over="ignore"):  # results past float16's range are inf, as torch's
        want = activation_want(fn, f64(x)).astype(np.float16)
    # f32 math rounded once to float16: within half a float16 ulp, or the float16 neighbour
    check_activation(got.astype(np.float16), want, x, 1e-3)


@pytest.mark.parametrize("shape", [(5,), (2, 3)])
def test_embedding_f16_weight_int_indices(device, shape):
    """An f16 weight with int32/int64 indices still runs the f16 kernel (ints don't count
    towards an op's one dtype)."""
    from types import SimpleNamespace

    from pte_webgpu.runtime.half import _op_can_use_half

    weight, indices = rand16(9, 7), RNG.integers(-1, 10, shape)
    g = G(HALF)
    out = g.op("aten.embedding.default", g.const(weight, F16),
               g.input(indices, dtypes.INT64), g.int(-1), g.bool(False), g.bool(False),
               g.tensor(shape + (7,), dtype=F16))
    assert _op_can_use_half(SimpleNamespace(values=g.values), g.ops[-1])
    (got,) = g.run(device, out)
    want = np.where(((indices >= 0) & (indices < 9))[..., None],
                    weight[np.clip(indices, 0, 8)], 0).astype(np.float16)
    np.testing.assert_array_equal(got, want.astype(np.float32))
