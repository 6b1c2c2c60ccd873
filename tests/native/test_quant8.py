"""The 8-bit ops natively (wgpu; lavapipe here): the exported fixtures of
tests/fixtures/quant8 against eager torch of the same quantized model, with each
linear_q8 variant forced, and hand-built graphs at rounding ties, clamps, odd sizes and
bad arguments (typed errors at load naming the op)."""

import numpy as np
import pytest
from pte_webgpu.errors import FormatError, UnsupportedError
from pte_webgpu.model import dtypes

from tests.support.gpu_thread import run_sync
from tests.support.graph import G
from tests.support.quant8 import INDEX, NAMES, QUANT8, check_quant8
from tests.support.quant8_check import quant8_report

LINEAR = [n for n in NAMES if n.startswith(("q8csw", "q8ta"))]
F32 = np.float32


@pytest.mark.parametrize("name", NAMES)
def test_fixture_matches_torch(runtime, name):
    report = run_sync(quant8_report(runtime, (QUANT8 / f"{name}.pte").read_bytes(),
                                    (QUANT8 / f"{name}.npz").read_bytes(),
                                    INDEX[name]["tolerance"]))
    check_quant8(name, report)
    assert runtime.device.live_buffer_count == 0


@pytest.mark.parametrize("variant", ["dot4", "unpack"])
@pytest.mark.parametrize("name", LINEAR)
def test_fixture_with_each_variant(runtime, name, variant, monkeypatch):
    monkeypatch.setenv("PTE_WEBGPU_LINEAR_Q8", variant)
    report = run_sync(quant8_report(runtime, (QUANT8 / f"{name}.pte").read_bytes(),
                                    (QUANT8 / f"{name}.npz").read_bytes(),
                                    INDEX[name]["tolerance"]))
    check_quant8(name, report)
    if "kernels" in report:
        picked = {k["variant"] for k in report["kernels"] if "q8" in k["op"] and "linear" in k["op"]}
        assert picked == {variant}, report["kernels"]


# --- torch's formulas in numpy (torch/ao/quantization/fx/_decomposed.py) -----------------
def quantize(x, scale, zp, qmin, qmax):
    inv = F32(1.0 / scale)  # 1 / scale in double, then the f32 product
    return np.clip(np.round(x.astype(F32) * inv) + zp, qmin, qmax)  # np.round: half to even


def q8_linear(xq, in_scale, in_zp, w, w_scales, bias):
    acc = (xq.astype(np.int64) - in_zp) @ w.astype(np.int64).T
    return acc.astype(np.float64) * (in_scale * w_scales.astype(np.float64)) + (
        0 if bias is None else bias)


def test_quantize_ties_clamps_and_odd_lengths(device):
    """scale 0.5: x*2 lands exactly on halves, which round to even (0.25 -> 0, 0.75 -> 2,
    -0.25 -> -0, 1.25 -> 2); 10 elements leave a partial last word."""
    x = np.array([0.25, 0.75, -0.25, -0.75, 1.25, 100.0, -100.0, 0.0, 2.75, -63.2], F32)
    for dtype, zp, lo, hi in ((dtypes.INT8, 3, -128, 127), (dtypes.UINT8, 128, 0, 255)):
        g = G()
        xi = g.input(x)
        out = g.op("quantized_decomposed.quantize_per_tensor.default", xi, g.double(0.5),
                   g.int(zp), g.int(lo), g.int(hi), g.null(), g.tensor(x.shape, dtype=dtype))
        got = g.run(device, out)[0]
        want = quantize(x, 0.5, zp, lo, hi)
        np.testing.assert_array_equal(got, want)
        assert got[0] == zp and got[1] == zp + 2  # the ties, to even


def test_quantize_dequantize_tensor_forms(device):
    """Scale and zero point as tensors (.tensor overloads): the same results as the
    Double/Int form; dequantize (q - zp) * scale exactly as torch (f32 product)."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(37) * 2).astype(F32)
    scale, zp = F32(0.0371), -5
    g = G()
    xi = g.input(x)
    q = g.op("quantized_decomposed.quantize_per_tensor.tensor", xi, g.const(np.array([scale])),
             g.const(np.array([zp], np.int32), dtypes.INT32), g.int(-128), g.int(127), g.null(),
             g.tensor(x.shape, dtype=dtypes.INT8))
    out = g.op("quantized_decomposed.dequantize_per_tensor.default", q, g.double(float(scale)),
               g.int(zp), g.int(-128), g.int(127), g.null(), g.null(), g.tensor(x.shape))
    got_q, got = g.run(device, q, out)
    want_q = quantize(x, float(scale), zp, -128, 127)
    np.testing.assert_array_equal(got_q, want_q)
    np.testing.assert_array_equal(got, ((want_q - zp).astype(F32) * scale).astype(F32))


def linear_graph(op, x, w, w_scales, bias, in_scale=0.02, in_zp=-3, out_q=(0.05, 4),
                 relu=False, sums=None, options=None, k_out=None):
    """x float [M, K] quantized in the graph, then ``op``; sums: what the file claims."""
    g = G(options=options)
    n = w.shape[0]
    xi = g.input(x)
    xq = g.op("quantized_decomposed.quantize_per_tensor.default", xi, g.double(in_scale),
              g.int(in_zp), g.int(-128), g.int(127), g.null(),
              g.tensor(x.shape, dtype=dtypes.INT8))
    sums = w.astype(np.int32).sum(1) if sums is None else sums
    args = [xq, g.double(in_scale), g.int(in_zp), g.const(w, dtypes.INT8),
            g.const(sums.astype(np.int32), dtypes.INT32), g.const(w_scales)]
    bias_arg = g.null() if bias is None else g.const(bias)
    shape = (x.shape[0], k_out or n)
    if op == "et_vk.linear_q8ta_q8csw.default":
        out = g.op(op, *args, bias_arg, g.tensor(shape))
    else:
        out = g.op(op, *args, g.double(out_q[0]), g.int(out_q[1]), bias_arg,
                   g.string("relu" if relu else "none"), g.tensor(shape, dtype=dtypes.INT8))
    return g, xq, out


@pytest.mark.parametrize("variant", ["dot4", "unpack"])
@pytest.mark.parametrize("relu", [False, True])
def test_q8ta_linear_integer_math(device, variant, relu):
    """Odd N (7, scales/bias padded to 8 as the serializer does), weights at -127/127, the
    file's weight sums wrong on purpose (the kernel sums the weights itself)."""
    rng = np.random.default_rng(5)
    m, n, k = 3, 7, 20
    x = (rng.standard_normal((m, k)) * 1.5).astype(F32)
    w = rng.integers(-127, 128, (n, k)).astype(np.int8)
    w[0, :] = 127
    w[1, :] = -127
    w_scales = np.abs(rng.standard_normal(8)).astype(F32) * 0.01 + 1e-3
    bias = rng.standard_normal(8).astype(F32) * 0.1
    for op in ("et_vk.q8ta_linear.default", "et_vk.linear_q8ta_q8csw.default"):
        g, xq, out = linear_graph(op, x, w, w_scales, bias, relu=relu,
                                  sums=rng.integers(-999, 999, 8),
                                  options={"variants": {"linear_q8": variant}})
        got_xq, got = g.run(device, xq, out)
        v = q8_linear(got_xq, 0.02, -3, w, w_scales[:n], bias[:n])
        if op == "et_vk.linear_q8ta_q8csw.default":
            np.testing.assert_allclose(got, v, rtol=0, atol=1e-5)
            continue
        v = np.maximum(v, 0) if relu else v
        want = np.clip(np.round(v / 0.05) + 4, -128, 127)
        off = got != want  # only at ties of the float64 value (f32 math in the kernel)
        frac = np.abs(v / 0.05 - np.floor(v / 0.05) - 0.5)
        assert np.all(frac[off] < 1e-3) and np.all(np.abs(got - want) <= 1), (got, want)


def expect_load_error(device, error, words, build):
    g, *_, out = build()
    with pytest.raises(error) as e:
        g.run(device, out)
    for word in words:
        assert word in str(e.value), str(e.value)


@pytest.mark.parametrize("case", ["nan_scale", "short_scales", "zero_out_scale", "tiny_out_scale",
                                  "negative_in_scale", "k_not_4", "weight_shape", "short_sums",
                                  "inf_bias_len"])
def test_bad_arguments_fail_at_load(device, case):
    rng = np.random.default_rng(1)
    n, k = 5, 8
    x = rng.standard_normal((2, k)).astype(F32)
    w = rng.integers(-127, 128, (n, k)).astype(np.int8)
    s = np.full(8, 0.01, F32)
    op = "et_vk.q8ta_linear.default"
    kw = {}
    error, words = FormatError, [op]
    if case == "nan_scale":
        s[2] = np.nan
        words += ["weight scales", "nan"]
    elif case == "short_scales":
        s = s[:n - 1]
        words += ["weight scales", "needs 5"]
    elif case == "zero_out_scale":
        kw["out_q"] = (0.0, 0)
        words += ["output scale"]
    elif case == "tiny_out_scale":  # 1 / 1e-39 overflows float32
        kw["out_q"] = (1e-39, 0)
        words += ["inverse"]
    elif case == "negative_in_scale":  # the quantize before the linear names it first
        kw["in_scale"] = -0.5
        words = ["quantize_per_tensor", "scale -0.5"]
    elif case == "k_not_4":
        x, w, error = x[:, :6], w[:, :6], UnsupportedError
        words += ["multiple of 4"]
    elif case == "weight_shape":
        kw["k_out"] = n + 1
        words += ["shapes disagree"]
    elif case == "short_sums":
        kw["sums"] = np.zeros(n - 2, np.int32)
        words += ["weight sums"]
    else:
        op = "et_vk.linear_q8ta_q8csw.default"
        words = [op, "bias"]
        kw["bias"] = np.zeros(n - 1, F32)
    bias = kw.pop("bias", None)
    expect_load_error(device, error, words, lambda: linear_graph(op, x, w, s, bias, **kw))


def test_weight_int8pack_any_k(device):
    """K = 13 (not a multiple of 4: weights read byte by byte), N = 6."""
    rng = np.random.default_rng(9)
    x = rng.standard_normal((4, 13)).astype(F32)
    w = rng.integers(-128, 128, (6, 13)).astype(np.int8)
    s = (np.abs(rng.standard_normal(6)) * 0.01).astype(F32)
    g = G()
    out = g.op("aten._weight_int8pack_mm.default", g.input(x), g.const(w, dtypes.INT8),
               g.const(s), g.tensor((4, 6)))
    got = g.run(device, out)[0]
    np.testing.assert_allclose(got, (x.astype(np.float64) @ w.T.astype(np.float64)) * s,
                               rtol=1e-5, atol=1e-6)


def test_embedding_byte_groups_zero_points_and_bad_ids(device):
    """[V, G] scales with float zero points (the op's general form); an id outside the
    table sets the id flag (execute raises, runtime/id_checks.py); short scales fail at
    load."""
    rng = np.random.default_rng(2)
    v, d, groups = 6, 8, 2
    w = rng.integers(-128, 128, (v, d)).astype(np.int8)
    s = (np.abs(rng.standard_normal((v, groups))) * 0.05).astype(F32)
    zp = rng.integers(-4, 5, (v, groups)).astype(F32)
    ids = np.array([[5, 0, 3, 9]], np.int32)
    g = G()
    out = g.op("quantized_decomposed.embedding_byte.dtype", g.const(w, dtypes.INT8), g.const(s),
               g.const(zp), g.int(-128), g.int(127), g.input(ids, dtypes.INT32), g.int(6),
               g.tensor((1, 4, d)))
    got = g.run(device, out)[0]
    wd = (w.reshape(v, groups, d // groups) - zp[:, :, None]).astype(F32) * s[:, :, None]
    np.testing.assert_array_equal(got[0, :3], wd.reshape(v, d)[ids[0, :3]])
    assert got[0, 3].tolist() == [0.0] * d and g.id_flags[0][0] == 1  # id 9 flagged
    g = G()
    out = g.op("quantized_decomposed.embedding_byte.dtype", g.const(w, dtypes.INT8),
               g.const(s[:v - 1]), g.null(), g.int(-128), g.int(127), g.input(ids, dtypes.INT32),
               g.int(6), g.tensor((1, 4, d)))
    with pytest.raises(FormatError, match="embedding_byte.*scales"):
        g.run(device, out)


@pytest.mark.parametrize("form", ["affine_groups_uint8", "affine_float_zp", "channel_axis1",
                                  "channel_no_zp"])
def test_weight_dequantize_blocks_and_zero_points(device, form):
    """torchao.dequantize_affine over [1, 4] groups (uint8 with int32 zero points; int8
    with float ones) and dequantize_per_channel along either axis: (q - zp) * scale in
    f32, as torch."""
    rng = np.random.default_rng(4)
    r, c = 6, 12
    g = G()
    if form.startswith("affine"):
        unsigned = form.endswith("uint8")
        q = rng.integers(0 if unsigned else -128, 256 if unsigned else 128, (r, c))
        q = q.astype(np.uint8 if unsigned else np.int8)
        s = (np.abs(rng.standard_normal((r, 3))) * 0.02).astype(F32)
        zp = rng.integers(-9, 10, (r, 3)).astype(np.int32 if unsigned else F32)
        zp_id = g.const(zp, dtypes.INT32 if unsigned else dtypes.FLOAT32)
        out = g.op("torchao.dequantize_affine.default",
                   g.const(q, dtypes.UINT8 if unsigned else dtypes.INT8), g.ints([1, 4]),
                   g.const(s), zp_id, g.null(), g.int(0 if unsigned else -128),
                   g.int(255 if unsigned else 127), g.int(6), g.tensor((r, c)))
        want = (q.astype(F32) - np.repeat(zp.astype(F32), 4, 1)) * np.repeat(s, 4, 1)
    else:
        axis = 1 if form == "channel_axis1" else 0
        q = rng.integers(-128, 128, (r, c)).astype(np.int8)
        s = (np.abs(rng.standard_normal(q.shape[axis])) * 0.02).astype(F32)
        zp = rng.integers(-5, 6, q.shape[axis]).astype(np.int32)
        zp_id = g.const(zp, dtypes.INT32) if axis else g.null()
        out = g.op("quantized_decomposed.dequantize_per_channel.default",
                   g.const(q, dtypes.INT8), g.const(s), zp_id, g.int(axis), g.int(-128),
                   g.int(127), g.null(), g.null(), g.tensor((r, c)))
        shape = (1, c) if axis else (r, 1)
        want = (q.astype(F32) - (zp.reshape(shape) if axis else 0)).astype(F32) * s.reshape(shape)
    got = g.run(device, out)[0]
    np.testing.assert_array_equal(got, want.astype(F32))


def test_weight_dequantize_bad_blocks_fail_at_load(device):
    q = np.zeros((4, 6), np.int8)
    for block, scales, words in (([1, 4], 8, "does not tile"), ([1, 3], 7, "7 scales for 8")):
        g = G()
        out = g.op("torchao.dequantize_affine.default", g.const(q, dtypes.INT8), g.ints(block),
                   g.const(np.full(scales, 0.1, F32)), g.null(), g.null(), g.int(-128),
                   g.int(127), g.int(6), g.tensor((4, 6)))
        with pytest.raises(FormatError, match=words):
            g.run(device, out)
