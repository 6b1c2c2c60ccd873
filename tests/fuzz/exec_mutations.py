"""Structure-aware mutators for the load-and-execute fuzzer.

Each takes (rng, Pte) and edits the trees in place (tests/fuzz/ptefile.py): the
instruction chain, the VkGraph's op arguments, value lists and I/O ids, scalars,
tensor dims and dtypes, plan tensors. The rebuilt file is well-formed, so every
case gets past the readers and exercises validation, build and execute.
"""

from __future__ import annotations

import copy
import math
import random

from .ptefile import Pte

INTS = (0, 1, -1, 2, 3, -2, 7, 64, 2**31 - 1, -2**31, 2**32, 2**62, 2**63 - 1, -2**63)
DOUBLES = (0.0, -0.0, 1.0, -1.0, 0.5, 1e-45, 1e-38, 65504.0, 3.4e38, 1e39, 1e308, -1e308,
           math.inf, -math.inf, math.nan)
DIMS = (0, 1, 2, 3, 7, 64, 65535, 2**20, 2**31 - 1, 2**32 - 1)
PLAN_CODES = {"kernel": 1, "delegate": 2, "move": 3, "jump_false": 4, "free": 5}
GRAPH_SCALARS = {2: ("int_val", INTS), 3: ("double_val", DOUBLES), 4: ("bool_val", (0, 1)),
                 11: ("value", (0, 1, -1, 2**31 - 1))}


def _value_id(rng: random.Random, n: int) -> int:
    """Mostly a valid id; sometimes just out of range, negative or huge."""
    r = rng.random()
    if r < 0.85 and n:
        return rng.randrange(n)
    return rng.choice((n, n + 1, -1, 2**31 - 1, 2**32 - 1))


def _instructions(p: Pte) -> list:
    chains = p.plan().setdefault("chains", [{}])
    if not chains:
        chains.append({})
    return chains[0].setdefault("instructions", [])


def _graphs(p: Pte) -> list[dict]:
    return [g for g, _ in p.vk.values()]


def _graph(rng, p: Pte) -> dict | None:
    graphs = _graphs(p)
    return rng.choice(graphs) if graphs else None


# --- the plan's instruction chain -----------------------------------------------------
def chain_arg(rng, p: Pte) -> None:
    """One argument of one call points at another value."""
    calls = [i["instr_args"] for i in _instructions(p) if i["instr_args"].get("args")]
    if calls:
        args = rng.choice(calls)["args"]
        args[rng.randrange(len(args))] = _value_id(rng, len(p.plan().get("values", [])))


def chain_insert(rng, p: Pte) -> None:
    """A new move, free or jump somewhere in the chain."""
    n = len(p.plan().get("values", []))
    chain = _instructions(p)
    kind = rng.choice(("move", "move", "free", "jump_false"))
    if kind == "move":
        args = {"move_from": _value_id(rng, n), "move_to": _value_id(rng, n)}
    elif kind == "free":
        args = {"value_index": _value_id(rng, n)}
    else:
        args = {"cond_value_index": _value_id(rng, n),
                "destination_instruction": rng.choice((0, 1, len(chain), len(chain) + 1, -1))}
    chain.insert(rng.randrange(len(chain) + 1), {"instr_args_type": PLAN_CODES[kind],
                                                 "instr_args": args})


def chain_shuffle(rng, p: Pte) -> None:
    """Duplicate, drop or swap instructions."""
    chain = _instructions(p)
    if not chain:
        return
    r = rng.random()
    i = rng.randrange(len(chain))
    if r < 0.4:
        chain.insert(rng.randrange(len(chain) + 1), copy.deepcopy(chain[i]))
    elif r < 0.7:
        del chain[i]
    else:
        j = rng.randrange(len(chain))
        chain[i], chain[j] = chain[j], chain[i]


def chain_indices(rng, p: Pte) -> None:
    """A call's delegate or operator index, or its instruction type."""
    chain = _instructions(p)
    if not chain:
        return
    ins = rng.choice(chain)
    if rng.random() < 0.3:
        ins["instr_args_type"] = rng.choice((1, 2, 3, 4, 5, 0, 6))
    for key in ("delegate_index", "op_index"):
        if key in ins["instr_args"] or rng.random() < 0.2:
            ins["instr_args"][key] = rng.choice((0, 1, -1, 2**31 - 1))


def plan_io(rng, p: Pte) -> None:
    """The plan's inputs or outputs list: an id replaced, repeated or dropped."""
    plan = p.plan()
    key = rng.choice(("inputs", "outputs"))
    ids = plan.setdefault(key, [])
    r = rng.random()
    if ids and r < 0.5:
        ids[rng.randrange(len(ids))] = _value_id(rng, len(plan.get("values", [])))
    elif ids and r < 0.75:
        ids.append(rng.choice(ids))
    elif ids:
        ids.pop(rng.randrange(len(ids)))


def plan_tensor(rng, p: Pte) -> None:
    """A plan tensor's sizes, dtype, dim order, constant index or location."""
    tensors = [v["val"] for v in p.plan().get("values", []) if v.get("val_type") == 5]
    if not tensors:
        return
    t = rng.choice(tensors)
    field = rng.choice(("sizes", "sizes", "scalar_type", "dim_order", "data_buffer_idx",
                        "extra_tensor_info"))
    if field == "sizes":
        _edit_dims(rng, t.setdefault("sizes", []), signed=True)
    elif field == "scalar_type":
        t["scalar_type"] = rng.choice((0, 1, 2, 3, 4, 5, 6, 7, 11, 15, 99))
    elif field == "dim_order":
        order = list(t.get("dim_order", []))
        rng.shuffle(order)
        if rng.random() < 0.3:
            order = [rng.randrange(256) for _ in order]
        t["dim_order"] = bytearray(order)
    elif field == "data_buffer_idx":
        t["data_buffer_idx"] = rng.choice((1, 2, 2**32 - 1))
    else:
        t["extra_tensor_info"] = {"fully_qualified_name": rng.choice((b"w", b"", b"x" * 9)),
                                  "location": rng.choice((0, 1))}


def plan_scalar(rng, p: Pte) -> None:
    """A plan scalar's value, or a plan value turned into another kind."""
    values = p.plan().get("values", [])
    if not values:
        return
    v = rng.choice(values)
    kind = rng.choice((2, 3, 4))
    v["val_type"] = kind
    v["val"] = {2: {"int_val": rng.choice(INTS)}, 3: {"bool_val": rng.random() < 0.5},
                4: {"double_val": rng.choice(DOUBLES)}}[kind]


# --- the Vulkan graph -----------------------------------------------------------------
def graph_op_arg(rng, p: Pte) -> None:
    """One op argument points at another value (or at none)."""
    g = _graph(rng, p)
    if g and g.get("chain"):
        op = rng.choice(g["chain"])
        args = op.setdefault("args", [])
        if args:
            args[rng.randrange(len(args))] = _value_id(rng, len(g.get("values", [])))


def graph_op_shape(rng, p: Pte) -> None:
    """Ops duplicated, dropped, swapped or renamed; an argument added or removed."""
    g = _graph(rng, p)
    if not g or not g.get("chain"):
        return
    ops = g["chain"]
    i = rng.randrange(len(ops))
    r = rng.random()
    if r < 0.25:
        ops.insert(rng.randrange(len(ops) + 1), copy.deepcopy(ops[i]))
    elif r < 0.45:
        del ops[i]
    elif r < 0.65:
        j = rng.randrange(len(ops))
        ops[i], ops[j] = ops[j], ops[i]
    elif r < 0.8:
        other = rng.choice(ops)
        ops[i]["name"] = other.get("name", b"")
    elif ops[i].get("args"):
        if rng.random() < 0.5:
            ops[i]["args"].pop(rng.randrange(len(ops[i]["args"])))
        else:
            ops[i]["args"].insert(rng.randrange(len(ops[i]["args"]) + 1),
                                  _value_id(rng, len(g.get("values", []))))


def graph_value_list(rng, p: Pte) -> None:
    """A value list's items, or the graph's input/output ids."""
    g = _graph(rng, p)
    if not g:
        return
    values = g.get("values", [])
    lists = [v["value"] for v in values if v.get("value_type") == 9]
    targets = [v.setdefault("items", []) for v in lists]
    targets += [g.setdefault("input_ids", []), g.setdefault("output_ids", [])]
    items = rng.choice(targets)
    r = rng.random()
    if items and r < 0.6:
        items[rng.randrange(len(items))] = _value_id(rng, len(values)) & 0xFFFFFFFF
    elif items and r < 0.8:
        items.append(rng.choice(items))
    elif items:
        items.pop(rng.randrange(len(items)))


def graph_scalar(rng, p: Pte) -> None:
    """An int, double, bool or symint of the graph set to an extreme; an int list's items."""
    g = _graph(rng, p)
    if not g:
        return
    values = [v for v in g.get("values", []) if v.get("value_type") in GRAPH_SCALARS or
              v.get("value_type") == 6]
    if not values:
        return
    v = rng.choice(values)
    if v["value_type"] == 6:
        items = v["value"].setdefault("items", [])
        if items and rng.random() < 0.7:
            items[rng.randrange(len(items))] = rng.choice(INTS)
        else:
            items.append(rng.choice(INTS))
        return
    key, pool = GRAPH_SCALARS[v["value_type"]]
    v["value"][key] = rng.choice(pool)


def graph_tensor(rng, p: Pte) -> None:
    """A graph tensor's dims, dtype, constant or memory object."""
    g = _graph(rng, p)
    if not g:
        return
    tensors = [v["value"] for v in g.get("values", []) if v.get("value_type") == 5]
    if not tensors:
        return
    t = rng.choice(tensors)
    field = rng.choice(("dims", "dims", "datatype", "constant_id", "mem_obj_id", "layout"))
    if field == "dims":
        _edit_dims(rng, t.setdefault("dims", []), signed=False)
    elif field == "datatype":
        t["datatype"] = rng.choice((0, 1, 2, 3, 4, 5, 6, 7))
    elif field == "constant_id":
        t["constant_id"] = rng.choice((-1, 0, 1, 2, len(g.get("constants", []))))
    elif field == "mem_obj_id":
        t["mem_obj_id"] = rng.choice((-1, 0, 1, 2, 3, 2**31 - 1))
    else:
        t["storage_type"] = rng.choice((0, 1, 2, 200))
        t["memory_layout"] = rng.choice((0, 1, 2, 200))


def graph_kind(rng, p: Pte) -> None:
    """A graph value becomes another kind (a tensor an int, an int a list, ...)."""
    g = _graph(rng, p)
    if not g or not g.get("values"):
        return
    v = rng.choice(g["values"])
    kind = rng.choice((1, 2, 3, 4, 6, 9))
    v["value_type"] = kind
    v["value"] = {1: {}, 2: {"int_val": rng.choice(INTS)},
                  3: {"double_val": rng.choice(DOUBLES)}, 4: {"bool_val": True},
                  6: {"items": [rng.choice(INTS)]},
                  9: {"items": [_value_id(rng, len(g["values"]))]}}[kind]


def _edit_dims(rng, dims: list, signed: bool) -> None:
    r = rng.random()
    if dims and r < 0.5:
        dims[rng.randrange(len(dims))] = rng.choice(DIMS + ((-1,) if signed else ()))
    elif r < 0.7:
        dims.insert(rng.randrange(len(dims) + 1), rng.choice((1, 1, 2, 0)))
    elif dims and r < 0.9:
        dims.pop(rng.randrange(len(dims)))
    else:
        dims[:] = [rng.choice(DIMS)] * rng.choice((1, 17, 1000))
    if not signed:
        dims[:] = [d & 0xFFFFFFFF for d in dims]
    else:
        dims[:] = [max(-2**31, min(d, 2**31 - 1)) for d in dims]


MUTATORS = {f.__name__: f for f in (
    chain_arg, chain_insert, chain_shuffle, chain_indices, plan_io, plan_tensor, plan_scalar,
    graph_op_arg, graph_op_shape, graph_value_list, graph_scalar, graph_tensor, graph_kind)}


def mutate(rng: random.Random, base: Pte) -> tuple[str, bytes]:
    """(description, file bytes) of 1-3 stacked structural edits of ``base``."""
    p = base.copy()
    names = [rng.choice(list(MUTATORS)) for _ in range(rng.choice((1, 1, 2, 3)))]
    for name in names:
        MUTATORS[name](rng, p)
    return "+".join(names), p.build()
