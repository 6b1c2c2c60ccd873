"""Size rules: the actual output shapes of an op on dynamic-shape tensors, computed on
the host at each execute (runtime/dynamic.py). A rule ``fn(op, shape, integer, values)
-> {out vid: shape}`` gets the op, ``shape(vid)`` (a tensor's actual shape),
``integer(vid)`` (an Int/SymInt argument's value) and the graph's values. An op names its
rule where it is defined (``register(..., sizes=...)``); these are the shared ones. An op
that reads a dynamic tensor and has no rule is refused at load, naming it.
"""

from __future__ import annotations

from ..errors import FormatError, UnsupportedError
from ..model.graph import ListValue, TensorValue


def _numel(shape) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _out(op):
    return op.args[-1]


def same_as_first(op, shape, integer, values):
    return {_out(op): shape(op.args[0])}


def broadcast(op, shape, integer, values):
    shapes = [shape(a) for a in op.args[:-1] if isinstance(values[a], TensorValue)]
    rank = max(len(s) for s in shapes)
    out = [1] * rank
    for s in shapes:
        for i, d in enumerate((1,) * (rank - len(s)) + tuple(s)):
            out[i] = d if out[i] == 1 else out[i]
    return {_out(op): tuple(out)}


def linear(op, shape, integer, values):
    return {_out(op): tuple(shape(op.args[0])[:-1]) + (values[op.args[1]].shape[0],)}


def reduction(op, shape, integer, values):
    """sum/mean/amax/...(x, dims | Null, keepdim, ...): the kernels reduce the bound's
    elements, so a reduced dim must have its full size (the padded rest is no zero)."""
    bound, s = values[op.args[0]].shape, shape(op.args[0])
    items = getattr(values[op.args[1]], "items", None)
    dims = {d % max(len(s), 1) for d in items} if items else set(range(len(s)))
    moving = [d for d in sorted(dims) if s[d] != bound[d]]
    if moving:
        raise UnsupportedError(f"{op.name}: reduces dim {moving[0]} of a dynamic-shape tensor "
                               f"(actual {list(s)}, bound {list(bound)})")
    keep = bool(getattr(values[op.args[2]], "value", False))
    return {_out(op): tuple(1 if i in dims else n for i, n in enumerate(s)) if keep
            else tuple(n for i, n in enumerate(s) if i not in dims)}


def embedding(op, shape, integer, values):
    return {_out(op): tuple(shape(op.args[1])) + (values[op.args[0]].shape[-1],)}


def squeeze(op, shape, integer, values):
    bound = values[op.args[0]].shape
    dims = {d % max(len(bound), 1) for d in values[op.args[1]].items}
    s = shape(op.args[0])
    return {_out(op): tuple(d for i, d in enumerate(s) if not (i in dims and bound[i] == 1))}


def unsqueeze(op, shape, integer, values):
    s = list(shape(op.args[0]))
    dim = integer(op.args[1])
    s.insert(dim % (len(s) + 1), 1)
    return {_out(op): tuple(s)}


def view(op, shape, integer, values):
    sizes = values[op.args[1]]
    if isinstance(sizes, ListValue) and sizes.kind == "value_list":
        dims = [integer(v) for v in sizes.items]
    elif isinstance(sizes, ListValue):
        dims = list(sizes.items)
    else:  # a Null size list: the output's declared shape
        return {_out(op): tuple(values[_out(op)].shape)}
    n = _numel(shape(op.args[0]))
    if -1 in dims:
        known = _numel(d for d in dims if d != -1)
        dims[dims.index(-1)] = n // known if known else 0
    if _numel(dims) != n:
        raise FormatError(f"{op.name}: sizes {dims} do not hold {n} elements")
    return {_out(op): tuple(dims)}


def permute(op, shape, integer, values):
    s = shape(op.args[0])
    return {_out(op): tuple(s[d % len(s)] for d in values[op.args[1]].items)}


def select(op, shape, integer, values):
    s = list(shape(op.args[0]))
    del s[integer(op.args[1]) % len(s)]
    return {_out(op): tuple(s)}


def slice_range(size: int, start, end, step: int) -> range:
    """Python slicing of ``range(size)``, as torch clamps slice bounds."""
    return range(size)[slice(start, end, step)]


def slice_(op, shape, integer, values):
    s = list(shape(op.args[0]))
    dim = integer(op.args[1]) % len(s)
    start, end, step = (None if values[a].kind == "null" else integer(a) for a in op.args[2:5])
    s[dim] = len(slice_range(s[dim], start, end, step or 1))
    return {_out(op): tuple(s)}


def index(op, shape, integer, values):
    items = [v for v in values[op.args[1]].items if values[v].kind != "null"]
    s = shape(op.args[0])
    return {_out(op): tuple(shape(items[0])) + tuple(s[len(items):])}


def rotary(op, shape, integer, values):
    outs = values[_out(op)].items
    return {outs[0]: shape(op.args[0]), outs[1]: shape(op.args[1])}


def cat(op, shape, integer, values):
    parts = [shape(v) for v in values[op.args[0]].items]
    dim = integer(op.args[1]) % len(parts[0])
    out = list(parts[0])
    out[dim] = sum(p[dim] for p in parts)
    return {_out(op): tuple(out)}


def bmm(op, shape, integer, values):
    a, b = shape(op.args[0]), shape(op.args[1])
    return {_out(op): (a[0], a[1], b[2])}


def expand(op, shape, integer, values):
    s = shape(op.args[0])
    sizes = list(values[op.args[1]].items)
    pad = (1,) * (len(sizes) - len(s)) + tuple(s)
    return {_out(op): tuple(p if want == -1 else want for p, want in zip(pad, sizes))}
