"""What kernels that read execute-time integers share: the slot key of an Int/SymInt
argument, and binding the method's slot buffer (runtime/dynamic.py)."""

from __future__ import annotations

from math import prod

from ..errors import FormatError, UnsupportedError
from ..model.graph import Null, Scalar


def int_key(ctx, op, vid: int, default: int | None = None) -> tuple:
    """Slot key of an Int (static) or SymInt (set at execute) argument; Null -> default."""
    value = ctx.graph.values[vid]
    if isinstance(value, Scalar) and value.kind == "int":
        return ("static", int(value.value))
    if isinstance(value, Scalar) and value.kind == "symint":
        return ("sym", ctx.graph_key, vid)
    if isinstance(value, Null) and default is not None:
        return ("static", default)
    raise FormatError(f"{op.name}: value {vid} should be an Int or SymInt, found {value.kind}",
                      field=ctx.where(op))


def size_key(ctx, vid: int, dim: int) -> tuple:
    """Slot key of tensor ``vid``'s actual size along ``dim`` (its bound when static)."""
    return ("size", ctx.graph_key, vid, dim, ctx.graph.values[vid].shape[dim])


def slots(ctx, op, keys):
    """(buffer, slot indices) of ``keys`` for one op's kernels."""
    if ctx.dyn is None:
        raise UnsupportedError(f"{op.name} ({ctx.where(op)}) needs execute-time integers")
    return ctx.dyn.slots(ctx.resources, keys)


def dispatch_per_element(ctx, op, pipeline, bindings, out_id: int, wg: int) -> None:
    """Record a dispatch of one invocation per element of ``out_id`` (``wg`` per
    workgroup) that follows its actual size."""
    ctx.dispatch(op, pipeline, bindings, ctx.grid(-(-ctx.graph.values[out_id].numel // wg)))
    follow_actual_size(ctx, out_id, wg)


def follow_actual_size(ctx, out_id: int, per, alternative: bool = False,
                       back: int = 1) -> None:
    """Make the dispatch just recorded (``back`` > 1: that many steps back) cover only
    the actual elements of ``out_id`` at
    execute, when ``out_id`` has a dynamic shape whose valid elements are the first ones of
    its buffer (else the bound grid stays). ``per``: invocations per workgroup for a kernel
    with one invocation per element, or ``fn(n) -> workgroups`` covering the first n
    elements (workgroups must take the output in order: flat workgroup g before g + 1).
    ``alternative``: a twin of an earlier dispatch, run only when ``per`` gives workgroups
    (none when the valid elements are not a prefix: the earlier one's full grid runs)."""
    env, graph = ctx.dyn, ctx.graph_key
    if env is None or not env.is_dynamic(graph, out_id):
        return
    groups = per if callable(per) else (lambda n, wg=per: -(-n // wg))
    bound = tuple(ctx.graph.values[out_id].shape)
    full = ctx.recording.steps[-back].grid

    fold, seen = ctx.grid, {}  # actual shape -> grid: decode repeats one shape

    def grid(env):
        shape = env.shape(graph, out_id, bound)
        got = seen.get(shape)
        if got is None:
            if not is_prefix(shape, bound):
                got = (0, 1, 1) if alternative else full
            else:
                n = groups(prod(shape))
                got = fold(n) if n else (0, 1, 1)  # an empty dispatch: an unused alternative
            if len(seen) < 64:
                seen[shape] = got
        return got
    # grid reads nothing but this key's value: env.run skips the grids when no key changed
    env.grids.append((len(ctx.recording.steps) - back, grid, ("shape", graph, out_id)))


def int_value(env, graph_values, graph: int, vid: int, where: str) -> int:
    """An Int or SymInt argument's value at execute time."""
    value = graph_values[vid]
    if isinstance(value, Scalar) and value.kind == "int":
        return int(value.value)
    if isinstance(value, Scalar) and value.kind == "symint":
        key = ("sym", graph, vid)
        if key not in env.values:
            raise UnsupportedError(f"{where}: SymInt value {vid} is read before it is set")
        return int(env.values[key])
    raise UnsupportedError(f"{where}: value {vid} is a {value.kind}, expected an Int or SymInt")


def is_prefix(shape, bound) -> bool:
    """Whether a tensor of ``shape`` laid out as ``bound`` is the first bytes of it."""
    for i, (s, b) in enumerate(zip(shape, bound)):
        if s != b:
            outer = 1
            for d in shape[:i]:
                outer *= d
            return (outer == 1 or s == 0) and tuple(shape[i + 1:]) == tuple(bound[i + 1:])
    return True


def same_places(a_shape, a_bound, b_shape, b_bound) -> bool:
    """Whether a view from ``a`` to ``b`` keeps every valid element at the same offset of
    the padded layouts: true when both are prefixes of their bounds."""
    return is_prefix(a_shape, a_bound) and is_prefix(b_shape, b_bound)
