"""Reshapes and the walks through them (and over the placed ops) that the fusions share (one module
both import, so neither imports the other). A reshape is the same elements in the same
order: build.py binds its output as an alias of its input (ops/view.py shares or copies
the buffer), and fusion looks through it."""

from __future__ import annotations

from ..model.graph import Scalar

VIEWS = ("aten.view_copy.default", "aten.squeeze_copy.dims", "aten.unsqueeze_copy.default")
ADD = "aten.add.Tensor"


def placed_ops(f, arg_counts: dict):
    """(index, op) of each placed op whose name is a key of ``arg_counts`` with that many
    args, in graph order; an op unlinked by an earlier fold is passed over."""
    for i in sorted(f.placed):
        op = f.placed.get(i)
        if op is not None and arg_counts.get(op.name) == len(op.args):
            yield i, op


def forward_views(f, vid: int):
    """(view ops, last vid, its sole reader) along sole readers from ``vid`` through
    reshapes; ``f`` is a fusion._Fusion."""
    views = []
    reader = f._sole_reader(vid)
    while reader is not None and f.placed[reader].name in VIEWS \
            and reader not in views:  # a cycle of views: a malformed graph
        views.append(reader)
        vid = f.placed[reader].args[-1]
        reader = f._sole_reader(vid)
    return views, vid, reader


def back_views(f, vid: int):
    """(view ops, the vid before them) back through reshapes, each output read once."""
    views = []
    while vid in f.writer and f.placed[f.writer[vid]].name in VIEWS \
            and f.writer[vid] not in views and f._sole_reader(vid) is not None:
        views.append(f.writer[vid])
        vid = f.placed[f.writer[vid]].args[0]
    return views, vid


def add_through_views(f, vid: int):
    """(view ops, vid after them, the add's index, its other operand) when ``vid`` only
    feeds, through reshapes, an ``add.Tensor`` with alpha 1 as exactly one of its two
    operands; else None."""
    views, cur, add_i = forward_views(f, vid)
    if add_i is None:
        return None
    add = f.placed[add_i]
    if add.name != ADD or len(add.args) != 4 or not is_one(f.values[add.args[2]]):
        return None
    a, b = add.args[0], add.args[1]
    if (a == cur) == (b == cur):
        return None
    return views, cur, add_i, b if a == cur else a


def residual_add(f, out_id: int):
    """(view ops, the add's index, the residual, the add's output) when ``out_id`` (a
    linear's output) only feeds, through reshapes, an alpha-1 add whose residual, the
    linear's value there and the sum share one shape and dtype (what a linear's residual
    epilogue can write); else None. The callers check the linear's own output."""
    found = add_through_views(f, out_id)
    if found is None:
        return None
    views, cur, reader, r_id = found
    total = f.placed[reader].args[3]
    r, lin, t = f._tensor(r_id), f._tensor(cur), f._tensor(total)
    if r is None or lin is None or t is None or r.dtype != t.dtype \
            or not tuple(r.shape) == tuple(lin.shape) == tuple(t.shape):
        return None
    return views, reader, r_id, total


def is_one(value) -> bool:
    return isinstance(value, Scalar) and value.is_one()
