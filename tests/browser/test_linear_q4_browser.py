"""The 4-bit weight linears in headless Chromium (SwiftShader): hand-built q4gsw graphs of
odd shapes with every variant forced (the subgroup forms with the page's `enable
subgroups;`: gemvsg, and cols, the rule's pick here up to 8 rows) and qcs4w, as
tests/native/test_linear_q4.py does natively (the quantized tiny llamas of
tests/fixtures/quant run in tests/browser/test_quant_decoders.py)."""

import base64
import json
from pathlib import Path

import numpy as np
import pytest

from tests.support.q4_graphs import pack_q4gsw, pack_qcs4w, quantize, reference, scales_rows

pytestmark = pytest.mark.browser

HERE = Path(__file__).parent
SUPPORT = (HERE / "page_support.py").read_text()
CHECK = (HERE.parent / "support" / "decoder_check.py").read_text()
VARIANTS = ("dot", "gemv-64", "gemvsg-8", "gemvsg-32", "tiled", None)

PAGE_CODE = r'''
import base64
from types import SimpleNamespace
from pte_webgpu.formats import NamedData
from pte_webgpu.gpu.recording import Recording
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import ConstantRef, Graph, Null, OpCall, Scalar, TensorValue
from pte_webgpu.runtime.build import Resources, build_delegate


async def q4_linear(op, m, n, k, blobs, s_shape, group, variant, norm=None, up=None):
    """One 4-bit linear built through build_delegate with `variant` forced (None: the
    rule's pick): blobs = base64 of x [m, k] f32, packed weights, scales (of s_shape),
    bias or None; norm = (base64 of an RMSNorm weight [k], eps): the linear reads x
    normalised by et_vk.rms_norm; up = base64 of a second input [m, k]: the linear reads
    SwiGLU silu(x) * up as exported (sigmoid, mul, mul); either fused into one op at load."""
    device = (await runtime()).device
    x, w, s, b = (base64.b64decode(v) if v else None for v in blobs)
    blob, consts, values = bytearray(), [], [TensorValue(dtypes.FLOAT32, (m, k))]
    ops, x_id, inputs = [], 0, [0]

    def const(data, dtype, shape):
        consts.append(ConstantRef(len(consts), len(blob), len(data), None))
        blob.extend(data + bytes(-len(data) % 16))
        values.append(TensorValue(dtype, shape, constant_id=len(consts) - 1))
        return len(values) - 1

    if norm:
        gi = const(base64.b64decode(norm[0]), dtypes.FLOAT32, (k,))
        values += [Scalar("double", norm[1]), TensorValue(dtypes.FLOAT32, (m, k))]
        x_id = len(values) - 1
        ops.append(OpCall("et_vk.rms_norm.default", (0, gi, x_id - 1, x_id)))
    if up:
        values += [TensorValue(dtypes.FLOAT32, (m, k)) for _ in range(4)]
        u_id, sg, t, x_id = range(len(values) - 4, len(values))
        inputs.append(u_id)
        ops += [OpCall("aten.sigmoid.default", (0, sg)), OpCall("aten.mul.Tensor", (0, sg, t)),
                OpCall("aten.mul.Tensor", (t, u_id, x_id))]
    wi = const(w, dtypes.UINT8, (n, len(w) // n))
    si = const(s, dtypes.FLOAT32, tuple(s_shape))
    args = [x_id, wi, si]
    if group:
        values.append(Scalar("int", group))
        args.append(len(values) - 1)
        if b:
            args.append(const(b, dtypes.FLOAT32, (n,)))
        else:
            values.append(Null())
            args.append(len(values) - 1)
    values.append(TensorValue(dtypes.FLOAT32, (m, n)))
    out = len(values) - 1
    graph = Graph(values, ops + [OpCall(op, tuple(args) + (out,))], inputs, [out], consts)
    vk = SimpleNamespace(graph=graph, constant_bytes=memoryview(bytes(blob)))
    resources = Resources(device)
    try:
        io = {i: resources.buffer(len(x), f"input {i}") for i in inputs}
        io[out] = resources.buffer(4 * m * n, "y")
        opts = {"variants": {"linear_q4": variant}} if variant else {}
        recording = Recording()
        ctx = await build_delegate(device, vk, NamedData(None), io, resources, recording, {},
                                   "test", opts)
        device.write_buffer(io[0], x)
        if up:
            device.write_buffer(io[inputs[1]], base64.b64decode(up))
        staging = resources.buffer(4 * m * n, "staging", ("map_read", "copy_dst"))
        (raw,), _ = await device.run(recording, [(io[out], 4 * m * n)], staging)
        return {"y": base64.b64encode(bytes(raw[:4 * m * n])).decode(),
                "kernel": ctx.kernels[-1], "steps": len(recording.steps)}
    finally:
        resources.release()
'''


@pytest.fixture(scope="module")
def page(browser_session):
    browser_session.run_python(SUPPORT)
    browser_session.run_python(CHECK)
    browser_session.run_python(PAGE_CODE)
    browser_session.run_python("await runtime(); None")
    return browser_session


def _b64(a):
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()


def _run(page, op, m, n, k, x, w, s, b, group, variant, norm=None, up=None):
    got = page.run_python(
        f"await q4_linear({op!r}, {m}, {n}, {k}, "
        f"{[_b64(x), _b64(w), _b64(s), _b64(b) if b is not None else None]!r}, "
        f"{list(s.shape)}, {group}, {variant!r}, {norm!r}, "
        f"{_b64(up) if up is not None else None!r})")
    y = np.frombuffer(base64.b64decode(got["y"]), np.float32).reshape(m, n)
    return y, {**got["kernel"], "steps": got["steps"]}


@pytest.mark.parametrize("m,n,k,group,bias", [(1, 20, 48, 16, True), (37, 20, 48, 16, True),
                                              (3, 10, 36, 4, False)])
@pytest.mark.parametrize("variant", VARIANTS)
def test_q4gsw_variants_in_the_browser(page, m, n, k, group, bias, variant):
    w, s = quantize(n, k, group, seed=m)
    rng = np.random.default_rng(m + k)
    x = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32) if bias else None
    y, kernel = _run(page, "et_vk.linear_q4gsw.default", m, n, k, x, pack_q4gsw(w),
                     scales_rows(s), b, group, variant)
    want = reference(x, w, s, b)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-5 * np.abs(want).max())
    assert kernel["picked"] == ("forced" if variant else "auto")
    if variant:
        assert kernel["variant"] == variant


@pytest.mark.parametrize("m,n,k,group,bias", [(1, 33, 40, 8, True), (8, 20, 96, 32, False),
                                              (2, 50, 1152, 32, True)])
@pytest.mark.parametrize("variant", ["cols-32", "cols-16-4", "cols-1"])
def test_cols_forms_in_the_browser(page, m, n, k, group, bias, variant):
    """The CPU form on SwiftShader's subgroups of 4 (Tint's subgroupBroadcast), K % 32 of 8
    and 0, N past its columns; the rule picks it on CPU adapters up to 8 rows (elsewhere
    it runs when forced)."""
    cpu = page.run_python("(await runtime()).device.info.traits.is_cpu")
    w, s = quantize(n, k, group, seed=m + n)
    rng = np.random.default_rng(k)
    x = rng.standard_normal((m, k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32) if bias else None
    for forced in (variant, None):
        y, kernel = _run(page, "et_vk.linear_q4gsw.default", m, n, k, x, pack_q4gsw(w),
                         scales_rows(s), b, group, forced)
        want = reference(x, w, s, b)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-5 * np.abs(want).max())
        if forced or cpu:
            assert kernel["variant"] == (forced or "cols-16")
        else:
            assert not kernel["variant"].startswith("cols"), kernel


@pytest.mark.parametrize("variant", ["wide-8-2", "wide-32-1", "keep-32-8-8", "keep-128-8-4",
                                     "dot", None])
def test_rms_norm_folded_in_the_browser(page, variant):
    """et_vk.rms_norm then a q4gsw linear: one op at load (ops/linear_q4_norm.py); the
    one-row forms normalise in their prologue (Tint's WGSL, SwiftShader's subgroups), one
    dispatch, the others after the norm's own, against float64."""
    m, n, k, group, eps = 1, 40, 96, 32, 1e-5
    w, s = quantize(n, k, group, seed=5)
    rng = np.random.default_rng(k)
    x = rng.standard_normal((m, k)).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, k).astype(np.float32)
    y, kernel = _run(page, "et_vk.linear_q4gsw.default", m, n, k, x, pack_q4gsw(w),
                     scales_rows(s), None, group, variant, (_b64(gamma), eps))
    x64 = x.astype(np.float64)
    normed = (x64 / np.sqrt((x64 * x64).mean(-1, keepdims=True) + eps) * gamma)
    want = reference(normed.astype(np.float32), w, s)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-5 * np.abs(want).max())
    assert kernel["op"] == "pte_webgpu.norm_linear_q4gsw"
    one_row = (variant or kernel["variant"]).startswith(("wide", "keep"))
    assert kernel["steps"] == (1 if one_row else 2), kernel


@pytest.mark.parametrize("variant", ["wide-8-2", "wide-32-1", "keep-32-8-8", "keep-128-8-4",
                                     "dot", None])
def test_swiglu_folded_in_the_browser(page, variant):
    """SwiGLU (sigmoid, mul, mul) then a q4gsw linear: one op at load
    (ops/linear_q4_gated.py); the one-row forms compute the chain as they load the row
    (Tint's WGSL, SwiftShader's subgroups), one dispatch, the others after the chain's
    own, against float64 of the chain rounded to float32 step by step."""
    m, n, k, group = 1, 40, 96, 32
    w, s = quantize(n, k, group, seed=6)
    rng = np.random.default_rng(k + 1)
    gate = (rng.standard_normal((m, k)) * 3).astype(np.float32)
    up = rng.standard_normal((m, k)).astype(np.float32)
    y, kernel = _run(page, "et_vk.linear_q4gsw.default", m, n, k, gate, pack_q4gsw(w),
                     scales_rows(s), None, group, variant, up=up)
    sig = (1.0 / (1.0 + np.exp(-gate.astype(np.float64)))).astype(np.float32)
    h = ((gate * sig).astype(np.float32) * up).astype(np.float32)
    want = reference(h, w, s)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-5 * np.abs(want).max())
    assert kernel["op"] == "pte_webgpu.gated_linear_q4gsw"
    one_row = (variant or kernel["variant"]).startswith(("wide", "keep"))
    assert kernel["steps"] == (1 if one_row else 2), kernel


@pytest.mark.parametrize("m", [1, 9])
def test_qcs4w_in_the_browser(page, m):
    n, k = 12, 20
    rng = np.random.default_rng(m)
    w = rng.integers(-8, 8, (n, k)).astype(np.int8)
    s = rng.uniform(0.01, 0.2, (n, 1)).astype(np.float32)
    x = rng.standard_normal((m, k)).astype(np.float32)
    y, _ = _run(page, "et_vk.linear_qcs4w.default", m, n, k, x, pack_qcs4w(w), s[:, 0], None,
                0, None)
    want = reference(x, w, s)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=2e-5 * np.abs(want).max())


@pytest.mark.parametrize("name", sorted(json.loads((HERE.parent / "fixtures" / "qcs4w" /
                                                    "index.json").read_text())))
def test_exported_qcs4w_in_the_browser(page, name):
    """et_vk.linear_qcs4w as PT2E's VulkanQuantizer (4-bit weight-only) exports it, against
    eager torch of the converted model."""
    result = page.run_python(f"await run_fixture('qcs4w/{name}')")
    assert result["shapes"] == result["want_shapes"]
    (abs_err, _), = result["errors"]
    assert abs_err <= 2e-5, result
