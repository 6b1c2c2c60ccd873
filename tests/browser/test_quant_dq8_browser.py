"""8da4w and the 4-bit embedding in headless Chromium (SwiftShader): choose_qparams_affine
+ linear_dq8ca_q4gsw through the real builds, every variant the page can run (dp4 where
the browser has WGSL's packed_4x8_integer_dot_product), odd shapes, one and many rows,
rows of zeros; embedding_q4gsw in both nibble orders. References: the numpy model of
torchao's math in tests/support/quant_dq8.py."""

import base64
from pathlib import Path

import numpy as np
import pytest
from pte_webgpu.ops.linear_dq8 import FORMS

from tests.support.quant_dq8 import Dq8Case, ceil_to, pack_nibbles

pytestmark = pytest.mark.browser

SUPPORT = (Path(__file__).parent / "page_support.py").read_text()

PAGE_CODE = r'''
import base64
from pte_webgpu.model import dtypes
from pte_webgpu.gpu.recording import Recording
from pte_webgpu.model.graph import Graph, ListValue, Null, OpCall, Scalar, TensorValue
from pte_webgpu.ops import choose_qparams, embedding_q4, linear_dq8
from pte_webgpu.runtime.build import BuildContext, Resources


async def run_graph(values, ops, blobs, outs, variant=None):
    """Build ``ops`` on ``values`` with every tensor in a buffer of its own (``blobs``:
    vid -> base64 bytes to upload); the ``outs`` tensors' bytes as base64."""
    device = (await runtime()).device
    resources = Resources(device)
    graph = Graph(values, ops, [], list(outs), [])
    try:
        ctx = BuildContext(device, graph, resources, Recording(), {}, "test",
                           {"variants": {"linear_dq8": variant}} if variant else {})
        for vid, v in enumerate(values):
            if isinstance(v, TensorValue):
                ctx.buffers[vid] = resources.buffer(max(16, -(-ctx.bind_size(vid) // 16) * 16),
                                                    f"value {vid}")
        for vid, data in blobs.items():
            raw = base64.b64decode(data)
            device.write_buffer(ctx.buffers[vid], raw + bytes(-len(raw) % 4))
        from pte_webgpu.ops import registry
        for i, op in enumerate(ops):
            ctx.begin_op(i, op)
            await registry.lookup(op.name, "test")(ctx, op)
        sizes = [ctx.bind_size(v) for v in outs]
        staging = resources.buffer(-(-sum(sizes) // 16) * 16, "staging", ("map_read", "copy_dst"))
        raw, _ = await device.run(ctx.recording, [(ctx.buffers[v], s) for v, s in zip(outs, sizes)],
                                  staging)
        return {"outs": [base64.b64encode(bytes(r)).decode() for r in raw],
                "kernels": ctx.kernels, "packed_dot": device.info.traits.packed_dot}
    finally:
        resources.release()


async def dq8(variant, rows, k, n, group, blobs):
    F, I8, U8, I32 = dtypes.FLOAT32, dtypes.INT8, dtypes.UINT8, dtypes.INT32
    groups = k // group
    values = [TensorValue(F, (rows, k)), Scalar("string", "ASYMMETRIC"),
              ListValue("int_list", (1, k)), Null(), Scalar("int", -128), Scalar("int", 127),
              Null(), Null(), Null(), Scalar("bool", False), TensorValue(F, (rows,)),
              TensorValue(I8, (rows,)), ListValue("value_list", (10, 11)),
              TensorValue(U8, (n, -(-k // 8) * 4)), TensorValue(I32, (groups, -(-n // 8) * 8)),
              TensorValue(F, (groups, -(-n // 4) * 4)), Scalar("int", group),
              TensorValue(F, (n,)), TensorValue(F, (rows, n))]
    ops = [OpCall("torchao.choose_qparams_affine.default", tuple(range(10)) + (12,)),
           OpCall("et_vk.linear_dq8ca_q4gsw.default", (0, 10, 11, 13, 14, 15, 16, 17, 18))]
    return await run_graph(values, ops, {int(k): v for k, v in blobs.items()}, [18, 10, 11],
                           variant)


async def emb(vocab, dim, group, n_ids, low_first, blobs):
    F = dtypes.FLOAT32
    values = [TensorValue(dtypes.UINT8, (vocab, dim // 2)), TensorValue(F, (vocab, dim // group)),
              Scalar("int", group), TensorValue(dtypes.INT32, (n_ids,)),
              Scalar("bool", low_first), TensorValue(F, (n_ids, dim))]
    ops = [OpCall("et_vk.embedding_q4gsw.default", (0, 1, 2, 3, 4, 5))]
    return await run_graph(values, ops, {int(k): v for k, v in blobs.items()}, [5])
'''


@pytest.fixture(scope="module")
def page(browser_session):
    browser_session.run_python(SUPPORT)
    browser_session.run_python(PAGE_CODE)
    return browser_session


def b64(a) -> str:
    return base64.b64encode(np.ascontiguousarray(a).tobytes()).decode()


def unb64(s, dtype, count):
    return np.frombuffer(base64.b64decode(s), dtype)[:count]


def dq8_blobs(case):
    groups = case.k // case.group
    sums = np.zeros((groups, ceil_to(case.n, 8)), np.int32)
    sums[:, :case.n] = case.w.reshape(case.n, groups, case.group).sum(-1).T
    ws = np.zeros((groups, ceil_to(case.n, 4)), np.float32)
    ws[:, :case.n] = case.wscale.T
    return {0: b64(case.x), 13: b64(pack_nibbles(case.w)), 14: b64(sums), 15: b64(ws),
            17: b64(case.bias)}


def test_packed_dot_is_reported(page):
    got = page.run_python("(await runtime()).device.info.traits.packed_dot")
    assert isinstance(got, bool)
    print("Chromium adapter packed_4x8_integer_dot_product:", got)


@pytest.mark.parametrize("variant", FORMS)
@pytest.mark.parametrize("rows,k,n,group", [(1, 64, 64, 32), (37, 48, 20, 16), (9, 40, 30, 8),
                                            (3, 48, 20, 12)])
def test_dq8_variants_match_eager_8da4w(page, variant, rows, k, n, group):
    if group % 8 and variant != "scalar":
        pytest.skip("word forms need groups of 8")
    if variant.endswith("dp4") and not page.run_python(
            "(await runtime()).device.info.traits.packed_dot"):
        pytest.skip("this Chromium has no packed_4x8_integer_dot_product")
    case = Dq8Case(rows, k, n, group, seed=rows * 5 + k)
    if rows > 2:
        case.x[1] = 0.0  # a row of zeros: scale eps, zero point -128
    r = page.run_python(f"await dq8({variant!r}, {rows}, {k}, {n}, {group}, "
                        f"{dq8_blobs(case)!r})")
    out = unb64(r["outs"][0], np.float32, rows * n).reshape(rows, n)
    scale, zp = unb64(r["outs"][1], np.float32, rows), unb64(r["outs"][2], np.int8, rows)
    want, want_scale, want_zp = case.reference()
    assert np.array_equal(scale, want_scale) and np.array_equal(zp, want_zp)
    assert np.abs(out - want).max() <= 1e-4 * max(1.0, np.abs(want).max())
    assert r["kernels"][1]["variant"] == variant


@pytest.mark.parametrize("low_first", [True, False])
def test_embedding_q4_matches_the_dequantized_table(page, low_first):
    rng = np.random.default_rng(5)
    vocab, dim, group = 50, 36, 12
    w = rng.integers(-8, 8, (vocab, dim))
    scales = (rng.random((vocab, dim // group)) + 0.1).astype(np.float32)
    ids = rng.integers(0, vocab, 9).astype(np.int32)
    r = page.run_python(f"await emb({vocab}, {dim}, {group}, {len(ids)}, {low_first}, "
                        f"{ {0: b64(pack_nibbles(w, low_first, 2)), 1: b64(scales), 3: b64(ids)}!r})")
    got = unb64(r["outs"][0], np.float32, len(ids) * dim).reshape(len(ids), dim)
    assert np.array_equal(got, (w * np.repeat(scales, group, axis=1)).astype(np.float32)[ids])
