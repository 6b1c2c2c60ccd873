"""Every conv variant forced natively (wgpu; lavapipe here) on hand-built graphs at
awkward shapes, f32 and f16, against a float64 numpy convolution; the CPU reference
against the same; conv_with_clamp's bounds."""

import re

import numpy as np
import pytest
from pte_webgpu.errors import FormatError, UnsupportedError
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import ListValue, Null, Scalar
from pte_webgpu.ops import conv
from pte_webgpu.ops.conv_choice import VARIANTS
from pte_webgpu.runtime.storage import Storage

from tests.support.conv_cases import CASES, conv64, conv_graph
from tests.support.graph import G

RNG = np.random.default_rng(19)
FORMS = ["direct", "depthwise", "matmul", "gemm4-8x8", "gemm-8x4k3", "gemm4-16x16k2", "gemm4-8x8k64"]


def _data(case, bias=True, dtype=np.float32):
    _, xs, ws, *rest = case
    x = RNG.standard_normal(xs).astype(dtype)
    w = (RNG.standard_normal(ws) / np.sqrt(np.prod(ws[1:]))).astype(dtype)
    b = RNG.standard_normal(ws[1] * rest[-1] if rest[3] else ws[0]).astype(dtype) if bias else None
    return x, w, b, rest


def _shape(case):
    _, xs, ws, stride, padding, dilation, transposed, _, groups = case
    k = int(np.prod(ws[2:]))
    pointwise = k == 1 and set(stride) == {1} and set(padding) == {0}
    cout = ws[1] * groups if transposed else ws[0]
    return dict(cin=xs[1], cout=cout, groups=groups, k=k, pixels=1, batch=xs[0],
                pointwise=pointwise, transposed=transposed)


def _close(got, want, rtol):
    scale = max(1.0, float(np.abs(want).max()))
    np.testing.assert_allclose(got, want, rtol=rtol, atol=rtol * scale)


def _runnable(device, form, cases):
    v = conv.VARIANTS.check(form)
    return [c for c in cases if VARIANTS.why_not(v, device.info, **_shape(c)) is None]


@pytest.mark.parametrize("form", FORMS)
def test_every_variant_matches_float64(device, form):
    """All the cases the variant runs, as one graph (one pipeline compile per form)."""
    g = G(options={"variants": {"conv": form}})
    checks = []
    for case in _runnable(device, form, CASES):
        x, w, b, rest = _data(case, bias=case[0] != "cin5_s2_d2_p1")
        checks.append((case[0], conv_graph(g, x, w, b, *rest), conv64(x, w, b, *rest)))
    got = g.run(device, *(out for _, out, _ in checks))
    for (name, _, want), have in zip(checks, got):
        _close(have, want, 1e-4)
    assert len(checks) >= {"matmul": 1, "depthwise": 2}.get(form, 9)


@pytest.mark.parametrize("form", ["direct", "depthwise", "gemm4-8x8k2", "matmul"])
def test_f16_forms(device, form):
    if "shader-f16" not in device.info.features:
        pytest.skip("the adapter has no shader-f16")
    cases = [c for c in CASES if c[0] in ("odd_3x3", "depthwise_mult2", "pointwise",
                                          "transposed_op1", "conv1d", "wide_70ch")]
    g = G(Storage(half=True), options={"variants": {"conv": form}})
    checks = []
    for case in _runnable(device, form, cases):
        x, w, b, rest = _data(case, dtype=np.float16)
        checks.append((conv_graph(g, x, w, b, *rest, dtype=dtypes.FLOAT16),
                       conv64(x, w, b, *rest)))
    got = g.run(device, *(out for out, _ in checks))
    for (_, want), have in zip(checks, got):
        np.testing.assert_allclose(have, want, rtol=2e-3, atol=2e-3 * max(1, np.abs(want).max()))


@pytest.mark.parametrize("form", ["direct", "gemm4-8x8", "gemm4-8x8k2", "matmul", "depthwise"])
@pytest.mark.parametrize("bounds", [(0.0, 1.7976931348623157e308), (-0.25, 0.5), (None, 0.1),
                                    (0.5, -0.5)])
def test_conv_with_clamp_bounds(device, form, bounds):
    case = next(c for c in CASES if c[0] == ("depthwise_s2" if form == "depthwise" else
                                              "pointwise"))
    x, w, b, rest = _data(case)
    x[0, 0, 0, 0] = np.nan  # NaN stays NaN through the clamp, as in torch
    g = G(options={"variants": {"conv": form}})
    out = conv_graph(g, x, w, b, *rest, clamp=bounds)
    (got,) = g.run(device, out)
    lo, hi = (-np.inf if bounds[0] is None else bounds[0]), bounds[1]
    want = np.minimum(np.maximum(conv64(x, w, b, *rest), lo), hi)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert np.isnan(got).sum() == np.isnan(want).sum() > 0


@pytest.mark.parametrize("case", [c for c in CASES if c[0] in (
    "groups3_rect", "transposed_g2_d2", "conv1d_transposed", "depthwise_mult2")],
    ids=lambda c: c[0])
def test_cpu_reference_matches_float64(case):
    x, w, b, rest = _data(case)
    g = G()
    out = conv_graph(g, x, w, b, *rest)

    class T:
        def __init__(self, a):
            self.shape, self.values = a.shape, [float(v) for v in a.reshape(-1)]

    arrays = {g.inputs[0]: x, g.inputs[0] + 1: w, g.inputs[0] + 2: b}
    got = conv.reference(lambda vid: T(arrays[vid]), g.values, g.ops[0].args)
    np.testing.assert_allclose(np.array(got).reshape(g.values[out].shape),
                               conv64(x, w, b, *rest), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("change,message", [
    (lambda a: a.__setitem__(8, Scalar("int", 2)), "groups 2 does not divide Cin 3"),
    (lambda a: a.__setitem__(3, ListValue("int_list", (1, 1, 1))), "stride [1, 1, 1] needs 2"),
    (lambda a: a.__setitem__(5, ListValue("int_list", (0, 1))), "dilation [0, 1] must be >= 1"),
    (lambda a: a.__setitem__(7, ListValue("int_list", (1, 0))), "output_padding [1, 0] without"),
])
def test_malformed_arguments_are_format_errors(device, change, message):
    x, w, b, rest = _data(CASES[0])
    g = G()
    conv_graph(g, x, w, b, *rest)
    args = list(g.values)
    ids = list(g.ops[0].args)
    vals = [g.values[i] for i in ids]
    change(vals)
    for i, v in zip(ids, vals):
        g.values[i] = v
    with pytest.raises(FormatError, match=re.escape(message)):
        g.run(device, ids[-1])
    assert args  # the graph was built


def test_a_variant_that_cannot_run_the_op_is_refused(device):
    x, w, b, rest = _data(CASES[0])
    g = G(options={"variants": {"conv": "depthwise"}})
    out = conv_graph(g, x, w, b, *rest)
    with pytest.raises(UnsupportedError, match="not depthwise"):
        g.run(device, out)
    assert isinstance(g.values[g.ops[0].args[2]], (Null, type(g.values[0])))


@pytest.mark.parametrize("clamp,args,bounds", [
    ("aten.clamp.default", (-0.3, 0.3), (-0.3, 0.3)), ("aten.relu.default", (), (0.0, np.inf)),
    ("aten.hardtanh.default", (0.0, 6.0), (0.0, 6.0)), ("aten.clamp.default", (None, 0.2),
                                                        (-np.inf, 0.2))])
def test_a_clamp_after_a_conv_is_fused_into_it(device, clamp, args, bounds):
    from pte_webgpu.model.graph import Graph
    from pte_webgpu.runtime import fusion

    x, w, b, rest = _data(CASES[0])
    x[0, 1, 2, 3] = np.nan
    g = G()
    y = conv_graph(g, x, w, b, *rest)
    extra = [g.null() if v is None else g.double(v) for v in args]
    out = g.op(clamp, y, *extra, g.tensor(g.values[y].shape))
    g.outputs = [out]
    graph = Graph(g.values, g.ops, g.inputs, [out], g.constants)
    fused = fusion.fuse(graph, lambda t: 4 * t.numel, 1 << 30)
    assert [op.name for op in fused.ops] == ["et_vk.conv_with_clamp.default"]
    (got,) = g.run(device, out)
    want = np.minimum(np.maximum(conv64(x, w, b, *rest), bounds[0]), bounds[1])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert np.isnan(got).sum() == np.isnan(want).sum() > 0


@pytest.mark.parametrize("pixels", [(7, 9), (23, 17)])  # the GPU rule's gemv (<= 256 rows), tiles
def test_pointwise_through_the_gpu_matmul_forms(device, monkeypatch, pixels):
    """The matmul rule's GPU forms (gemv for up to 256 pixels, mm4 tiles above) store
    through put_conv too: lavapipe taken for a GPU."""
    from pte_webgpu.ops import matmul_choice

    monkeypatch.setattr(matmul_choice, "is_cpu", lambda traits: False)
    x = RNG.standard_normal((1, 12, *pixels)).astype(np.float32)
    w = (RNG.standard_normal((16, 12, 1, 1)) / 4).astype(np.float32)
    b = RNG.standard_normal(16).astype(np.float32)
    rest = ((1, 1), (0, 0), (1, 1), False, (0, 0), 1)
    g = G(options={"variants": {"conv": "matmul"}})
    out = conv_graph(g, x, w, b, *rest, clamp=(-0.5, 0.75))
    (got,) = g.run(device, out)
    want = np.clip(conv64(x, w, b, *rest), -0.5, 0.75)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("form,half", [(f, False) for f in FORMS]
                         + [(f, True) for f in ("direct", "gemm4-8x8k2", "matmul")])
def test_a_residual_add_after_a_conv_is_fused_into_its_store(device, form, half):
    """conv, add.Tensor, relu (ResNet's block end) and conv, add without a clamp become
    pte_webgpu.conv_residual in every variant, f32 and f16, the residual either operand
    of the add; NaN in the residual stays NaN through the relu."""
    from pte_webgpu.model.graph import Graph
    from pte_webgpu.runtime import fusion

    if half and "shader-f16" not in device.info.features:
        pytest.skip("the adapter has no shader-f16")
    dt, npt = (dtypes.FLOAT16, np.float16) if half else (dtypes.FLOAT32, np.float32)
    g = G(Storage(half=half), options={"variants": {"conv": form}})
    checks = []
    for n, case in enumerate(_runnable(device, form, CASES)):
        x, w, b, rest = _data(case, dtype=npt)
        y = conv_graph(g, x, w, b, *rest, dtype=dt)
        shape = g.values[y].shape
        r = RNG.standard_normal(shape).astype(npt)
        r.flat[n % r.size] = np.nan
        operands = (y, g.input(r, dt)) if n % 2 else (g.input(r, dt), y)
        s = g.op("aten.add.Tensor", *operands, g.int(1), g.tensor(shape, dtype=dt))
        want = conv64(x, w, b, *rest) + r
        if n % 3 != 2:
            s = g.op("aten.relu.default", s, g.tensor(shape, dtype=dt))
            want = np.where(np.isnan(want), want, np.maximum(want, 0.0))
        checks.append((s, want))
    outs = [s for s, _ in checks]
    graph = Graph(g.values, g.ops, g.inputs, outs, g.constants)
    fused = fusion.fuse(graph, lambda t: 4 * t.numel, 1 << 30)
    assert {op.name for op in fused.ops} == {"pte_webgpu.conv_residual"}
    assert len(fused.ops) == len(checks) > 0
    got = g.run(device, *outs)
    for have, (_, want) in zip(got, checks):
        _close(have, want, 2e-3 if half else 1e-4)
        assert np.array_equal(np.isnan(have), np.isnan(want))
