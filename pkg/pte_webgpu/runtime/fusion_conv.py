"""Load-time fusion of a convolution and the clamp after it (runtime/fusion.py's step
before the elementwise chains): an ``aten.convolution`` whose output only feeds
``clamp``, ``relu`` or ``hardtanh`` of the same shape and dtype becomes one
``et_vk.conv_with_clamp`` with that op's bounds (ops/conv.py clamps in the store). The
partitioner fuses relu and hardtanh itself (FuseClampPass) where the conv has no other
user; ``clamp`` it leaves (docs/vision-ops.md)."""

from __future__ import annotations

from ..model.graph import Null, OpCall, Scalar

CONV, CONV_CLAMP = "aten.convolution.default", "et_vk.conv_with_clamp.default"
# clamp op -> its argument count (output included)
CLAMPS = {"aten.clamp.default": 4, "aten.hardtanh.default": 4, "aten.relu.default": 2}


def fold_clamps(f) -> None:
    """Fuse on ``f`` (fusion._Fusion) every convolution + clamp pair."""
    for i in sorted(f.placed):
        op = f.placed.get(i)
        if op is None or op.name != CONV or len(op.args) != 10:
            continue
        reader = f._sole_reader(op.args[-1])
        if reader is None or reader <= i:
            continue
        clamp = f.placed[reader]
        conv_out, out = f._tensor(op.args[-1]), f._tensor(clamp.args[-1])
        if CLAMPS.get(clamp.name) != len(clamp.args) or clamp.args[0] != op.args[-1] \
                or conv_out is None or out is None \
                or (tuple(conv_out.shape), conv_out.dtype) != (tuple(out.shape), out.dtype):
            continue
        if clamp.name == "aten.relu.default":
            bounds = (f._add(Scalar("double", 0.0)), f._add(Null()))
        else:
            bounds = clamp.args[1:3]
        # At the clamp's place: the conv's inputs are ready there (_repair: lifetimes).
        f._unlink(i)
        f._unlink(reader)
        f._link(reader, OpCall(CONV_CLAMP, op.args[:-1] + tuple(bounds) + clamp.args[-1:],
                               clamp.node_id))
        f._count("conv + clamp")
