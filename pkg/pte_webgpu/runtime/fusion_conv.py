"""Load-time fusion of a convolution and what its store can take (runtime/fusion.py's
steps before the elementwise chains), in two rules:

- residuals: an ``aten.convolution`` whose output only feeds an ``aten.add.Tensor``
  (alpha 1) with a same-shape, same-dtype other operand, and that add's output, when it
  only feeds a clamp (below), the clamp too, become one ``pte_webgpu.conv_residual``
  (ResNet's conv, add, relu: ops/conv.py adds the residual and clamps in the store);
- clamps: an ``aten.convolution`` whose output only feeds ``clamp``, ``relu`` or
  ``hardtanh`` of the same shape and dtype becomes one ``et_vk.conv_with_clamp`` with
  that op's bounds. The partitioner fuses relu and hardtanh itself (FuseClampPass) where
  the conv has no other user; ``clamp`` it leaves (docs/vision-ops.md).
"""

from __future__ import annotations

from ..model.graph import Null, OpCall, Scalar
from ..ops.conv import RESIDUAL
from .views import placed_ops

CONV, CONV_CLAMP = "aten.convolution.default", "et_vk.conv_with_clamp.default"
ADD = "aten.add.Tensor"
# clamp op -> its argument count (output included)
CLAMPS = {"aten.clamp.default": 4, "aten.hardtanh.default": 4, "aten.relu.default": 2}


def _same(f, a: int, b: int) -> bool:
    """Whether values ``a`` and ``b`` are tensors of one shape and dtype."""
    ta, tb = f._tensor(a), f._tensor(b)
    return ta is not None and tb is not None and \
        (tuple(ta.shape), ta.dtype) == (tuple(tb.shape), tb.dtype)


def _clamp_after(f, vid: int, at: int):
    """(the clamp op's place, its bounds' value ids) when ``vid``'s one reader, after
    place ``at``, is a clamp of the same shape and dtype; else None."""
    reader = f._sole_reader(vid)
    if reader is None or reader <= at:
        return None
    clamp = f.placed[reader]
    if CLAMPS.get(clamp.name) != len(clamp.args) or clamp.args[0] != vid \
            or not _same(f, vid, clamp.args[-1]):
        return None
    if clamp.name == "aten.relu.default":
        return reader, (f._add(Scalar("double", 0.0)), f._add(Null()))
    return reader, clamp.args[1:3]


def fold_residuals(f) -> None:
    """Fuse on ``f`` (fusion._Fusion) every convolution + residual add (+ clamp)."""
    for i, op in placed_ops(f, {CONV: 10}):
        conv_out = op.args[-1]
        reader = f._sole_reader(conv_out)
        if reader is None or reader <= i:
            continue
        add = f.placed[reader]
        alpha = f.values[add.args[2]] if add.name == ADD and len(add.args) == 4 else None
        if not (isinstance(alpha, Scalar) and alpha.is_one()):
            continue
        a, b, total = add.args[0], add.args[1], add.args[3]
        if (a == conv_out) == (b == conv_out):
            continue  # the conv is not exactly one operand
        resid = b if a == conv_out else a
        if not (_same(f, conv_out, total) and _same(f, resid, total)):
            continue
        clamp = _clamp_after(f, total, reader)
        last, bounds, out = reader, (f._add(Null()), f._add(Null())), total
        if clamp is not None:
            last, bounds = clamp
            out = f.placed[last].args[-1]
        # At the last op's place: the residual and the conv's inputs are ready there
        # (fusion._repair keeps the lifetimes that moved apart).
        node = f.placed[last].node_id
        for j in {i, reader, last}:
            f._unlink(j)
        f._link(last, OpCall(RESIDUAL, op.args[:-1] + (resid,) + tuple(bounds) + (out,), node))
        f._count("conv + residual" + (" + clamp" if clamp else ""))


def fold_clamps(f) -> None:
    """Fuse on ``f`` (fusion._Fusion) every convolution + clamp pair."""
    for i, op in placed_ops(f, {CONV: 10}):
        clamp = _clamp_after(f, op.args[-1], i)
        if clamp is None:
            continue
        reader, bounds = clamp
        out = f.placed[reader].args[-1]
        # At the clamp's place: the conv's inputs are ready there (_repair: lifetimes).
        node = f.placed[reader].node_id
        f._unlink(i)
        f._unlink(reader)
        f._link(reader, OpCall(CONV_CLAMP, op.args[:-1] + tuple(bounds) + (out,), node))
        f._count("conv + clamp")
