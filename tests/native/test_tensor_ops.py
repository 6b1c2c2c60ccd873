"""The general tensor ops of issue 19 on hand-built graphs, natively: each on the GPU and
through its CPU reference against numpy at normal and edge values (NaN, ±inf, ±0, integer
extremes), in f32 and (where the adapter has shader-f16) f16."""

import numpy as np
import pytest
from pte_webgpu.errors import FormatError, UnsupportedError
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import ListValue
from pte_webgpu.runtime.storage import Storage

from tests.support.graph import G, rand
from tests.support.tensor_ops_graph import check, reference_outputs, same

F32, F16, I32, I64, BOOL = (dtypes.FLOAT32, dtypes.FLOAT16, dtypes.INT32, dtypes.INT64,
                            dtypes.BOOL)
HALF = Storage(half=True)
NAN, INF = np.nan, np.inf
EDGE = np.array([[1.5, -0.0, 0.0, NAN, -2.0, 3.0], [INF, -INF, 2.0, 7.0, -0.0, 0.0],
                 [1.0, 1.0, -5.0, -5.0, 0.25, 0.0]], np.float32)


def f16_graph(device):
    if "shader-f16" not in device.info.features:
        pytest.skip("the adapter has no shader-f16")
    return G(storage=HALF)


# ---------------------------------------------------------------- reductions

def _np_reduce(name, x, dims, keep):
    dims = tuple(dims) if dims else tuple(range(x.ndim))
    x64 = x.astype(np.float64)
    fn = {"aten.sum.dim_IntList": np.sum, "aten.amax.default": np.max,
          "aten.amin.default": np.min, "aten.mean.dim": np.mean}[name]
    return fn(x64, axis=dims, keepdims=keep).astype(np.float32)


@pytest.mark.parametrize("form", ["tree", "lines"])
@pytest.mark.parametrize("name", ["aten.sum.dim_IntList", "aten.amax.default",
                                  "aten.amin.default"])
@pytest.mark.parametrize("shape,dims,keep", [((3, 5, 7), [0, 2], True), ((4, 33), [-1], False),
                                             ((2, 3, 4), [], False)])
def test_dim_reductions(device, name, form, shape, dims, keep):
    g = G(options={"variants": {"reduce": form}})
    x = rand(*shape)
    out_shape = _np_reduce(name, x, dims, keep).shape
    args = [g.input(x), g.ints(dims), g.bool(keep)]
    if name == "aten.sum.dim_IntList":
        args.append(g.null())
    out = g.op(name, *args, g.tensor(out_shape))
    check(device, g, out, _np_reduce(name, x, dims, keep))


@pytest.mark.parametrize("form", ["tree", "lines"])
def test_amax_amin_propagate_nan_and_keep_infinities(device, form):
    for name, want in [("aten.amax.default", [NAN, INF, 1.0]),
                       ("aten.amin.default", [NAN, -INF, -5.0])]:
        g = G(options={"variants": {"reduce": form}})
        out = g.op(name, g.input(EDGE), g.ints([1]), g.bool(False), g.tensor((3,)))
        check(device, g, out, np.array(want, np.float32))
    g = G(options={"variants": {"reduce": form}})  # sum: NaN, inf - inf, exact zeros
    out = g.op("aten.sum.dim_IntList", g.input(EDGE), g.ints([1]), g.bool(True), g.null(),
               g.tensor((3, 1)))
    check(device, g, out, np.array([[NAN], [NAN], [-7.75]], np.float32))


def _log_softmax(x, dim):
    x = x.astype(np.float64)
    top = x.max(axis=dim, keepdims=True)
    return (x - top - np.log(np.exp(x - top).sum(axis=dim, keepdims=True))).astype(np.float32)


@pytest.mark.parametrize("form", ["tree", "lines"])
@pytest.mark.parametrize("shape,dim", [((4, 10), -1), ((3, 6, 5), 1), ((2, 300), 1)])
def test_log_softmax(device, form, shape, dim):
    g = G(options={"variants": {"reduce": form}})
    x = rand(*shape, scale=4.0)
    out = g.op("aten._log_softmax.default", g.input(x), g.int(dim), g.bool(False),
               g.tensor(shape))
    check(device, g, out, _log_softmax(x, dim))


def test_log_softmax_of_large_logits_and_infinities(device):
    x = np.array([[1e30, 0.0, -1e30, 5.0], [-INF, 0.0, 1.0, 2.0]], np.float32)
    g = G()
    out = g.op("aten._log_softmax.default", g.input(x), g.int(1), g.bool(False), g.tensor((2, 4)))
    check(device, g, out, _log_softmax(x, 1))  # -1e30 - 1e30 stays finite in f32


def test_reductions_f16(device):
    x = rand(3, 8).astype(np.float16)
    for name, args, shape, want in [
            ("aten.sum.dim_IntList", ([1], False, None), (3,), x.astype(np.float64).sum(1)),
            ("aten.amax.default", ([0], True), (1, 8), x.max(0, keepdims=True)),
            ("aten.amin.default", ([1], False), (3,), x.min(1)),
            ("aten._log_softmax.default", (1, False), (3, 8), _log_softmax(x, 1))]:
        g = f16_graph(device)
        first = g.ints(args[0]) if isinstance(args[0], list) else g.int(args[0])
        rest = [g.bool(args[1])] + ([g.null()] if len(args) == 3 else [])
        out = g.op(name, g.input(x, F16), first, *rest, g.tensor(shape, dtype=F16))
        check(device, g, out, np.asarray(want, np.float32), rtol=2e-2)


def test_reductions_refuse_a_wrong_output_shape(device):
    g = G()
    g.op("aten.amax.default", g.input(rand(3, 4)), g.ints([1]), g.bool(False), g.tensor((4,)))
    with pytest.raises(FormatError, match="amax"):
        g.run(device, g.ops[-1].args[-1])


# ---------------------------------------------------------------- comparisons, bitwise, div

INTS = np.array([[0, 1, -1, 7], [-7, 2147483647, -2147483648, 3]], np.int32)


def _compare(name, x, y):
    op = name.split(".")[1]
    return {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
            "gt": np.greater, "ge": np.greater_equal}[op](x, y)


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_scalar_comparisons_of_floats_and_ints(device, op):
    for x, dtype, s, kind in [(EDGE, F32, 0.0, "double"), (EDGE, F32, 2, "int"),
                              (INTS, I32, 1, "int"), (INTS, I32, 2.5, "double"),
                              (INTS.astype(np.int64), I64, -7, "int")]:
        g = G()
        scalar = g.double(s) if kind == "double" else g.int(s)
        out = g.op(f"aten.{op}.Scalar", g.input(x, dtype), scalar, g.tensor(x.shape, dtype=BOOL))
        check(device, g, out, _compare(f"x.{op}", x, s))


@pytest.mark.parametrize("op", ["eq", "ne", "lt", "le", "gt", "ge"])
def test_tensor_comparisons_broadcast_and_promote(device, op):
    y = np.array([0.0, NAN, -0.0, 7.0, -INF, 1.0], np.float32)
    cases = [(EDGE, F32, y, F32), (INTS, I32, INTS[:1], I32),
             (INTS, I32, np.array([[0.5], [-7.0]], np.float32), F32),
             (np.array([True, False, True]), BOOL, np.array([[1], [0]], np.int32), I32)]
    for x, xt, w, wt in cases:
        shape = np.broadcast_shapes(x.shape, w.shape)
        g = G()
        out = g.op(f"aten.{op}.Tensor", g.input(x, xt), g.input(w, wt),
                   g.tensor(shape, dtype=BOOL))
        check(device, g, out, _compare(f"x.{op}", x.astype(np.float64) if wt is F32 or xt is F32
                                       else x.astype(np.int64), w))


def test_comparisons_f16(device):
    x = EDGE.astype(np.float16)
    g = f16_graph(device)
    out = g.op("aten.gt.Tensor", g.input(x, F16), g.input(x[:1], F16),
               g.tensor(x.shape, dtype=BOOL))
    check(device, g, out, x > x[:1])
    g = f16_graph(device)
    out = g.op("aten.ge.Scalar", g.input(x, F16), g.double(1.0), g.tensor(x.shape, dtype=BOOL))
    check(device, g, out, x >= 1.0)


def test_bitwise_and_logical_ops_on_bools_and_ints(device):
    a = np.array([[True, False, True, False]])
    b = np.array([[True], [False]])
    for name, fn in [("aten.bitwise_and.Tensor", np.bitwise_and),
                     ("aten.bitwise_or.Tensor", np.bitwise_or),
                     ("aten.logical_or.default", np.logical_or)]:
        g = G()
        out = g.op(name, g.input(a, BOOL), g.input(b, BOOL), g.tensor((2, 4), dtype=BOOL))
        check(device, g, out, fn(a, b))
    for name, fn in [("aten.bitwise_and.Tensor", np.bitwise_and),
                     ("aten.bitwise_or.Tensor", np.bitwise_or)]:
        g = G()
        out = g.op(name, g.input(INTS, I32), g.input(INTS[::-1].copy(), I32),
                   g.tensor(INTS.shape, dtype=I32))
        check(device, g, out, fn(INTS, INTS[::-1]))
    for x, dtype, s in [(INTS, I32, 6), (INTS.astype(np.int64), I64, -2), (a, BOOL, True)]:
        for name, fn in [("aten.bitwise_and.Scalar", np.bitwise_and),
                         ("aten.bitwise_or.Scalar", np.bitwise_or)]:
            g = G()
            scalar = g.bool(s) if dtype is BOOL else g.int(s)
            out = g.op(name, g.input(x, dtype), scalar, g.tensor(x.shape, dtype=dtype))
            check(device, g, out, fn(x, s))
        g = G()
        out = g.op("aten.bitwise_not.default", g.input(x, dtype), g.tensor(x.shape, dtype=dtype))
        check(device, g, out, np.invert(x))
    g = G()
    out = g.op("aten.logical_or.default", g.input(EDGE), g.input(INTS[:1, :1].copy(), I32),
               g.tensor(EDGE.shape, dtype=BOOL))
    check(device, g, out, np.logical_or(EDGE, INTS[0, 0]))


def test_bitwise_refuses_floats(device):
    g = G()
    g.op("aten.bitwise_and.Tensor", g.input(EDGE), g.input(EDGE), g.tensor(EDGE.shape))
    with pytest.raises(UnsupportedError, match="bitwise_and"):
        g.run(device, g.ops[-1].args[-1])


def _torch_floor_div(x, y):
    """torch's div(rounding_mode="floor") of floats, in float64 (exact quotients here)."""
    with np.errstate(all="ignore"):
        q = np.floor_divide(x.astype(np.float64), y.astype(np.float64))
        q = np.where(np.isinf(x) & (y != 0), np.nan, q)
        zero = q == 0
        q[zero] = np.copysign(0.0, (x / y)[zero])
    return q.astype(np.float32)


def test_div_floor_and_trunc_of_floats(device):
    x = np.array([7.0, -7.0, 7.0, -7.0, 0.0, -0.0, 1.0, -1.0, 0.0, INF, -INF, 5.0, -5.0, NAN,
                  1e30, 6.0, -0.5, 0.5], np.float32)
    y = np.array([2.0, 2.0, -2.0, -2.0, 3.0, 3.0, 0.0, 0.0, 0.0, 2.0, 3.0, INF, INF, 1.0,
                  3.0, 3.0, 4.0, -4.0], np.float32)
    with np.errstate(all="ignore"):
        trunc = np.trunc(x / y)
    for mode, want in [("floor", _torch_floor_div(x, y)), ("trunc", trunc)]:
        g = G()
        out = g.op("aten.div.Tensor_mode", g.input(x), g.input(y), g.string(mode),
                   g.tensor(x.shape))
        check(device, g, out, want)
    xh, yh = x[:9].astype(np.float16), y[:9].astype(np.float16)
    g = f16_graph(device)
    out = g.op("aten.div.Tensor_mode", g.input(xh, F16), g.input(yh, F16), g.string("floor"),
               g.tensor(xh.shape, dtype=F16))
    check(device, g, out, _torch_floor_div(xh, yh), rtol=2e-2)


def test_div_floor_and_trunc_of_ints(device):
    x = np.array([7, -7, 7, -7, 0, 9, -9, 2147483647, -2147483648, 5], np.int32)
    y = np.array([2, 2, -2, -2, 5, 3, 3, 2, 7, 0], np.int32)
    with np.errstate(all="ignore"):
        floor = np.where(y != 0, np.floor_divide(x, np.where(y == 0, 1, y)), 0)
        trunc = np.where(y != 0, np.fix(x / np.where(y == 0, 1, y).astype(np.float64)), 0)
    for mode, want, dt in [("floor", floor, I32), ("trunc", trunc.astype(np.int32), I32),
                           ("floor", floor, I64)]:
        g = G()
        out = g.op("aten.div.Tensor_mode", g.input(x.astype(dt.name), dt),
                   g.input(y.astype(dt.name), dt), g.string(mode), g.tensor(x.shape, dtype=dt))
        check(device, g, out, want)
    g = G()  # int over float: promoted to float, as torch
    out = g.op("aten.div.Tensor_mode", g.input(x[:4], I32), g.input(y[:4].astype(np.float32)),
               g.string("floor"), g.tensor((4,)))
    check(device, g, out, np.floor_divide(x[:4], y[:4]).astype(np.float32))


def test_div_mode_refuses_an_unknown_rounding_mode(device):
    g = G()
    g.op("aten.div.Tensor_mode", g.input(EDGE), g.input(EDGE), g.string("round"),
         g.tensor(EDGE.shape))
    with pytest.raises(FormatError, match="rounding_mode"):
        g.run(device, g.ops[-1].args[-1])


# ---------------------------------------------------------------- argmax / argmin

@pytest.mark.parametrize("name,fn", [("aten.argmax.default", np.nanargmax),
                                     ("aten.argmin.default", np.nanargmin)])
def test_argmax_argmin_first_tie_and_nan_win(device, name, fn):
    x = np.array([[1.0, 3.0, 3.0, -1.0, -1.0], [2.0, NAN, 9.0, NAN, -9.0],
                  [-0.0, 0.0, -0.0, 0.0, -0.0], [-INF, -INF, INF, INF, 0.0]], np.float32)
    nan_first = np.where(np.isnan(x).any(1), np.isnan(x).argmax(1), fn(np.nan_to_num(x, nan=0), 1))
    for dim, keep, want in [(1, False, nan_first), (1, True, nan_first[:, None]),
                            (0, False, fn(np.where(np.isnan(x), 0, x), 0)),
                            (None, False, np.array(6)), (None, True, np.array([[6]]))]:
        if dim == 0:
            want = np.where(np.isnan(x).any(0), np.isnan(x).argmax(0), want)
        for dtype in (I64, I32):
            g = G()
            out = g.op(name, g.input(x), g.null() if dim is None else g.int(dim), g.bool(keep),
                       g.tensor(want.shape, dtype=dtype))
            check(device, g, out, want)


def test_argmax_over_a_long_line_and_f16(device):
    x = rand(3, 700)
    g = G()
    out = g.op("aten.argmax.default", g.input(x), g.int(-1), g.bool(False), g.tensor((3,), dtype=I64))
    check(device, g, out, x.argmax(1))
    xh = rand(5, 6).astype(np.float16)
    g = f16_graph(device)
    out = g.op("aten.argmin.default", g.input(xh, F16), g.int(0), g.bool(False),
               g.tensor((6,), dtype=I64))
    check(device, g, out, xh.argmin(0))


# ---------------------------------------------------------------- element moves

def test_gather_and_index_select(device):
    x = rand(4, 5, 3)
    idx = np.random.default_rng(3).integers(0, 5, (3, 4, 2)).astype(np.int64)
    g = G()
    out = g.op("aten.gather.default", g.input(x), g.int(1), g.input(idx, I64), g.bool(False),
               g.tensor(idx.shape))
    check(device, g, out, np.take_along_axis(x[:3, :, :2], idx, 1))
    ints = np.arange(12, dtype=np.int32).reshape(3, 4) - 6
    g = G()
    gi = np.array([[0, 0], [3, 1], [2, 2]], np.int32)
    out = g.op("aten.gather.default", g.input(ints, I32), g.int(-1), g.input(gi, I32),
               g.bool(False), g.tensor(gi.shape, dtype=I32))
    check(device, g, out, np.take_along_axis(ints, gi, 1))
    for dim, sel in [(0, [2, 0, 2]), (2, [1]), (-2, [4, 0])]:
        g = G()
        sel = np.array(sel, np.int64)
        want = np.take(x, sel, axis=dim)
        out = g.op("aten.index_select.default", g.input(x), g.int(dim), g.input(sel, I64),
                   g.tensor(want.shape))
        check(device, g, out, want)


def test_gather_out_of_range_sets_the_flag(device):
    g = G()
    out = g.op("aten.gather.default", g.input(rand(2, 3)), g.int(1),
               g.input(np.array([[0, 3], [1, -1]], np.int32), I32), g.bool(False),
               g.tensor((2, 2)))
    (got,) = g.run(device, out)
    assert got[0, 1] == 0 and g.id_flags[0][0] == 2


def test_flip_repeat_and_splits(device):
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4) - 0.5
    x[0, 0, 0] = -0.0
    for dims in ([0], [1, 2], [-1], [0, 1, 2], []):
        g = G()
        out = g.op("aten.flip.default", g.input(x), g.ints(dims), g.tensor(x.shape))
        check(device, g, out, np.flip(x, dims) if dims else x)
    xi = x.astype(np.int32)
    g = G()
    out = g.op("aten.flip.default", g.input(xi, I32), g.ints([1]), g.tensor(x.shape, dtype=I32))
    check(device, g, out, np.flip(xi, 1))
    for reps in ([1, 2, 1], [2, 1, 3, 2], [3, 1, 1]):
        want = np.tile(x, reps)
        g = G()
        out = g.op("aten.repeat.default", g.input(x), g.ints(reps), g.tensor(want.shape))
        check(device, g, out, want)
    b = np.array([[True, False]])
    g = G()
    out = g.op("aten.repeat.default", g.input(b, BOOL), g.ints([2, 2]), g.tensor((2, 4), dtype=BOOL))
    check(device, g, out, np.tile(b, (2, 2)))
    for name, args, parts in [
            ("aten.split_with_sizes_copy.default", lambda g: [g.ints([1, 3]), g.int(2)],
             np.split(x, [1], 2)),
            ("aten.split_copy.Tensor", lambda g: [g.int(2), g.int(1)], np.split(x, [2], 1)),
            ("aten.unbind_copy.int", lambda g: [g.int(0)], [x[0], x[1]])]:
        g = G()
        outs = [g.tensor(p.shape) for p in parts]
        lst = g._add(ListValue("value_list", tuple(outs)))
        g.op(name, g.input(x), *args(g), lst)
        got = g.run(device, *outs)
        for o, r, p in zip(got, reference_outputs(g, outs), parts):
            same(o, p)
            same(r, p)


def test_element_moves_f16(device):
    x = rand(3, 4).astype(np.float16)
    g = f16_graph(device)
    out = g.op("aten.flip.default", g.input(x, F16), g.ints([0, 1]), g.tensor(x.shape, dtype=F16))
    check(device, g, out, np.flip(x).astype(np.float32), rtol=2e-2)
    g = f16_graph(device)
    idx = np.array([[2], [0], [1]], np.int64)
    out = g.op("aten.gather.default", g.input(x, F16), g.int(1), g.input(idx, I64), g.bool(False),
               g.tensor(idx.shape, dtype=F16))
    check(device, g, out, np.take_along_axis(x, idx, 1).astype(np.float32), rtol=2e-2)


def test_moves_refuse_bad_arguments(device):
    g = G()
    g.op("aten.repeat.default", g.input(rand(2, 3)), g.ints([2]), g.tensor((4, 3)))
    with pytest.raises(FormatError, match="repeats"):
        g.run(device, g.ops[-1].args[-1])
    g = G()
    g.op("aten.flip.default", g.input(rand(2, 3)), g.ints([0, -2]), g.tensor((2, 3)))
    with pytest.raises(FormatError, match="repeated"):
        g.run(device, g.ops[-1].args[-1])


# ---------------------------------------------------------------- mm, addmm

def _prepacked(g, w):
    """A constant mat2 as the partitioner writes it: et_vk.prepack into a tensor."""
    return g.op("et_vk.prepack.default", g.const(w), g.tensor(w.shape))


@pytest.mark.parametrize("m,k,n", [(4, 8, 6), (1, 33, 5), (70, 16, 40)])
def test_mm_of_constant_and_computed_mat2(device, m, k, n):
    a, w = rand(m, k), rand(k, n)
    want = (a.astype(np.float64) @ w).astype(np.float32)
    for mat2 in (_prepacked, lambda g, w: g.const(w), lambda g, w: g.input(w)):
        g = G()
        out = g.op("aten.mm.default", g.input(a), mat2(g, w), g.tensor((m, n)))
        check(device, g, out, want)


def test_addmm_every_bias_form_and_scale(device):
    m, k, n = 5, 12, 7
    a, w = rand(m, k), rand(k, n)
    prod = a.astype(np.float64) @ w
    for bias, beta, alpha in [(rand(n), 1, 1), (rand(n), 0.5, 2.0), (rand(m, n), 1, 1),
                              (rand(m, 1), 1, -1.5), (rand(1, n), 2, 1),
                              (np.full(n, np.nan, np.float32), 0, 1)]:
        want = (alpha * prod + (beta * bias if beta else 0)).astype(np.float32)
        for mat2 in (_prepacked, lambda g, w: g.input(w)):
            g = G()
            scalars = [g.int(beta) if isinstance(beta, int) else g.double(beta),
                       g.int(alpha) if isinstance(alpha, int) else g.double(alpha)]
            out = g.op("aten.addmm.default", g.const(bias), g.input(a), mat2(g, w), *scalars,
                       g.tensor((m, n)))
            check(device, g, out, want)


def test_mm_addmm_f16(device):
    a, w, b = (rand(6, 16).astype(np.float16), rand(16, 9).astype(np.float16),
               rand(9).astype(np.float16))
    want = (a.astype(np.float64) @ w + b).astype(np.float32)
    for mat2 in (_prepacked, lambda g, w: g.input(w, F16)):
        g = f16_graph(device)
        out = g.op("aten.addmm.default", g.const(b, F16), g.input(a, F16),
                   mat2(g, w) if mat2 is not _prepacked else
                   g.op("et_vk.prepack.default", g.const(w, F16), g.tensor(w.shape, dtype=F16)),
                   g.int(1), g.int(1), g.tensor((6, 9), dtype=F16))
        check(device, g, out, want, rtol=2e-2)


def test_mm_refuses_mismatched_shapes(device):
    g = G()
    g.op("aten.mm.default", g.input(rand(3, 4)), g.input(rand(5, 2)), g.tensor((3, 2)))
    with pytest.raises(FormatError, match="mm"):
        g.run(device, g.ops[-1].args[-1])


# ---------------------------------------------------------------- rope (complex pairs)

def _rope_complex(x, f):
    n, c = x.shape[-2:]
    cs = f.reshape(n, c // 2, 2).astype(np.float64)
    xr = x.reshape(*x.shape[:-1], c // 2, 2).astype(np.float64)
    re = xr[..., 0] * cs[..., 0] - xr[..., 1] * cs[..., 1]
    im = xr[..., 0] * cs[..., 1] + xr[..., 1] * cs[..., 0]
    return np.stack([re, im], -1).reshape(x.shape).astype(np.float32)


def test_apply_rotary_emb_interleaved(device):
    x, f = rand(2, 5, 8), rand(1, 5, 4, 2)
    g = G()
    out = g.op("et_vk.apply_rotary_emb_interleaved.default", g.input(x), g.const(f),
               g.tensor(x.shape))
    check(device, g, out, _rope_complex(x, f))
    xh, fh = x.astype(np.float16), f.reshape(5, 8).astype(np.float16)
    g = f16_graph(device)
    out = g.op("et_vk.apply_rotary_emb_interleaved.default", g.input(xh, F16), g.input(fh, F16),
               g.tensor(x.shape, dtype=F16))
    check(device, g, out, _rope_complex(xh, fh), rtol=2e-2)
    g = G()
    g.op("et_vk.apply_rotary_emb_interleaved.default", g.input(x), g.input(rand(5, 6)),
         g.tensor(x.shape))
    with pytest.raises(FormatError, match="freqs_cis"):
        g.run(device, g.ops[-1].args[-1])


# ---------------------------------------------------------------- et_vk.sdpa

def _sdpa(q, k, v, mask=None, scale=None):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    scale = 1 / np.sqrt(q.shape[-1]) if scale is None else scale
    x = q @ np.swapaxes(k, -1, -2) * scale
    if mask is not None:
        x = x + mask
    with np.errstate(invalid="ignore"):
        x = np.exp(x - x.max(-1, keepdims=True))
        return (x / x.sum(-1, keepdims=True) @ v).astype(np.float32)


@pytest.mark.parametrize("mask_shape", [None, (5, 7), (1, 2, 1, 7), (2, 1, 5, 7)])
def test_sdpa_with_and_without_a_mask(device, mask_shape):
    q, k, v = rand(2, 2, 5, 8), rand(2, 2, 7, 8), rand(2, 2, 7, 6)
    mask = None if mask_shape is None else rand(*mask_shape)
    if mask is not None:
        mask.reshape(-1)[::5] = -INF
    g = G()
    m_id = g.null() if mask is None else g.input(mask)
    scale = None if mask_shape == (5, 7) else 0.3
    out = g.op("et_vk.sdpa.default", g.input(q), g.input(k), g.input(v), m_id,
               g.null() if scale is None else g.double(scale), g.tensor((2, 2, 5, 6)))
    check(device, g, out, _sdpa(q, k, v, mask, scale))


def test_sdpa_fully_masked_row_is_nan_and_f16(device):
    q, k, v = rand(1, 3, 4), rand(1, 6, 4), rand(1, 6, 4)
    mask = np.zeros((3, 6), np.float32)
    mask[1] = -INF
    g = G()
    out = g.op("et_vk.sdpa.default", g.input(q), g.input(k), g.input(v), g.input(mask), g.null(),
               g.tensor((1, 3, 4)))
    check(device, g, out, _sdpa(q, k, v, mask))
    qh, kh, vh = (a.astype(np.float16) for a in (q, k, v))
    g = f16_graph(device)
    out = g.op("et_vk.sdpa.default", g.input(qh, F16), g.input(kh, F16), g.input(vh, F16),
               g.null(), g.null(), g.tensor((1, 3, 4), dtype=F16))
    check(device, g, out, _sdpa(qh, kh, vh), rtol=2e-2)


# ---------------------------------------------------------------- update_cache

def test_update_cache_writes_rows_at_start_pos(device):
    from pte_webgpu.runtime.dynamic import DynamicEnv
    from tests.support.gpu_thread import run_sync
    cache, value = rand(1, 8, 2, 4), rand(1, 3, 2, 4)
    for start in (0, 5):
        g = G()
        c = g.input(cache)
        g.op("update_cache.default", g.input(value), c, g.int(start), g.tensor((1,)))
        g.outputs = [c]
        (got,) = run_sync(g._run(device, env=DynamicEnv()))
        want = cache.copy()
        want[:, start:start + 3] = value
        np.testing.assert_array_equal(got, want)
    g = G()
    c = g.input(cache)
    g.op("update_cache.default", g.input(value), c, g.int(6), g.tensor((1,)))
    g.outputs = [c]
    with pytest.raises(Exception, match="do not fit"):
        run_sync(g._run(device, env=DynamicEnv()))
