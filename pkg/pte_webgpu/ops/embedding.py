"""``aten.embedding.default [weight, indices, padding_idx, scale_grad_by_freq, sparse,
out]`` (embedding.wgsl): ``out[..., c] = weight[indices[...], c]``.

``weight`` is a float ``[vocab, dim]`` tensor, ``indices`` int32 or int64 (held as
int32) of any shape, ``out`` the indices' shape plus ``[dim]``. An index outside
``[0, vocab)`` gives a row of zeros (a GPU kernel cannot fail) and sets the op's id
flag: execute raises InputError as torch raises (runtime/id_checks.py; ids straight
from an input are checked on the host first). ``padding_idx``, ``scale_grad_by_freq`` and
``sparse`` only change training (the gradient), so they are ignored.
"""

from __future__ import annotations

from ..errors import FormatError, InputError
from ..shaders.compose import Binding, Entry, Kernel, Uniform
from . import sizes
from .common import elementwise_workgroup
from .exec_ints import follow_actual_size
from .registry import register

PARAMS = Uniform(("numel", "u32"), ("dim", "u32"), ("vocab", "u32"))  # numel = rows * dim
KERNEL = Kernel("embedding", (Binding(0, "weight"), Binding(1, "indices", type="i32"),
                              Binding(2, "out", "read_write"),
                              # count, claimed, position, value (runtime/id_checks.py)
                              Binding(4, "flag", "read_write", "atomic<u32>")), PARAMS,
                uniform_binding=3, snippets=("bad_id",),
                entries=(Entry("main", "item", "params.numel"),))


def reference(read, values, args):
    """out[..., c] = weight[indices[...], c]; an index outside [0, vocab) raises, as torch
    does (and the runtime, runtime/id_checks.py). padding_idx etc. only matter for
    training."""
    weight, indices = read(args[0]), read(args[1])
    if len(weight.shape) != 2:
        raise FormatError(f"embedding: weight {list(weight.shape)} should be [vocab, dim]")
    vocab, dim = weight.shape
    out = []
    for pos, i in enumerate(indices.values):
        i = int(i)
        if not 0 <= i < vocab:
            raise InputError(f"embedding: id {i} at position {pos} is outside [0, {vocab})")
        out += weight.values[i * dim:(i + 1) * dim]
    return out


@register("aten.embedding.default", half=True, reference=reference, args=6,
          sizes=sizes.embedding)
async def build_embedding(ctx, op):
    w_id, idx_id, _padding_idx, _scale_grad, _sparse, out_id = ctx.args(op, 6)
    weight = ctx.float_tensor(w_id, op)
    indices = ctx.int_tensor(idx_id, op)
    out = ctx.float_tensor(out_id, op)
    if len(weight.shape) != 2:
        raise FormatError(f"{op.name}: weight {list(weight.shape)} should be [vocab, dim]",
                          field=ctx.where(op))
    vocab, dim = weight.shape
    if tuple(out.shape) != tuple(indices.shape) + (dim,):
        raise FormatError(f"{op.name}: output {list(out.shape)} should be the indices' shape "
                          f"{list(indices.shape)} plus [{dim}]", field=ctx.where(op))
    if out.numel == 0:
        return
    wg = elementwise_workgroup(ctx)
    pipeline = await ctx.pipeline(KERNEL, {"wg_size": wg}, half=ctx.half(out_id))
    uniform = ctx.uniform(PARAMS.pack(numel=out.numel, dim=dim, vocab=vocab), f"{op.name} params")
    flag = ctx.id_check(idx_id, vocab, op)
    ctx.dispatch(op, pipeline, [(0, w_id), (1, idx_id), (2, out_id), (3, uniform), (4, flag)],
                 ctx.grid(-(-out.numel // wg)))
    follow_actual_size(ctx, out_id, wg)
