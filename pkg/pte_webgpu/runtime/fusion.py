"""Load-time fusion: a Vulkan delegate graph rewritten into fewer dispatches before it is
built (build.py), unless the option ``fuse`` is off. A decode step of a small model is
bound by the number of dispatches, not by arithmetic (docs/performance.md), so:

1. linears reading one input (through views) with constant weights, e.g. q/k/v or
   gate/up, become one ``pte_webgpu.fused_linear`` whose weight is theirs stacked at load
   (graph.meta["concat"]; the parts are not uploaded on their own), writing each output;
   4-bit q4gsw linears likewise into ``pte_webgpu.fused_linear_q4gsw``, after their
   group-offset terms are folded in (fusion_q4.py);
2. a linear whose output only feeds (through views) ``add.Tensor(residual, it)`` with
   alpha 1 writes ``residual + linear`` itself (the residual form of the same op);
3. chains of same-shape unary/binary ops (registry ``pointwise``), each output read only
   by the next, become one ``pte_webgpu.fused_elementwise`` (e.g. SwiGLU's sigmoid, mul,
   mul), every step rounded to the stored type as its tensor would be;
4. a convolution whose output only feeds a clamp, relu or hardtanh clamps in its own
   store (et_vk.conv_with_clamp; fusion_conv.py);
5. an rms_norm whose output only a float linear (stacked or not) reads becomes one
   ``pte_webgpu.norm_linear`` (fusion_norm.py): decode's matrix-vector forms normalise
   their rows themselves; first, a clone whose input nothing else reads is dropped (its
   readers read the input), so the fp16 export's final norm -> clone -> lm head folds;
6. a SwiGLU chain (step 3) whose output only a float linear reads becomes one
   ``pte_webgpu.gated_linear`` (fusion_gated.py): decode's matrix-vector forms compute
   silu(gate) * up as they load it, with the chain's own roundings;
7. the llama example's RoPE (``et_vk.apply_rotary_emb``) whose outputs only
   ``sdpa_with_kv_cache`` reads becomes one ``pte_webgpu.sdpa_rope`` (fusion_rope.py):
   the attention turns q and k as it reads them;
8. (opt-in: FOLDS_ON) an attention whose output only a linear reads (the o projection)
   leaves its split form's merge to that linear's matrix-vector prologue (fusion_merge.py;
   a mark in graph.meta["merged"], not a rewrite);
9. a reshape (``VIEWS``) shares its input's memory object, so build.py binds the input's
   buffer instead of recording a copy (a copy ends the compute pass, and it copies the
   tensor's whole bound, e.g. 1024 rows for a decode step's one).

The fused ops are defined in the op library beside their unfused forms
(ops/fused_linear.py, ops/fused_elementwise.py, ops/norm_linear.py,
ops/gated_linear.py, ops/attention.py). Moving an op changes when tensors are
written and last read; the exporter planned shared memory objects (mem_obj_id) for the
original order, so a tensor whose lifetime changed and now overlaps another of its
memory object moves to one where it overlaps nothing (``_repair``); a reshape's input
and output move as one. A fused op never writes a buffer it reads: build.py gives an
output that shares a memory object with an input of its op its own buffer, as for any
op.
"""

from __future__ import annotations

import os
from dataclasses import replace

from ..errors import InputError
from ..model.dtypes import without_leading_ones
from ..model.graph import Graph, ListValue, Null, OpCall, TensorValue
from ..ops import registry
from ..ops.fused_elementwise import FUSED as FUSED_CHAIN
from ..ops.fused_elementwise import MAX_INPUTS
from ..ops.fused_linear import FUSED as FUSED_LINEAR
from ..ops.fused_linear import MAX_SPLIT
from . import fusion_conv, fusion_gated, fusion_merge, fusion_norm, fusion_q4, fusion_rope
from .views import VIEWS, is_one, residual_add

LINEAR = "aten.linear.default"
CLONE = "aten.clone.default"
# A benchmark compares a fold on and off in one run (on one warm GPU): the environment
# variable names folds to leave out, comma-separated (the tests use each ENABLED flag)
FOLDS_OFF = "PTE_WEBGPU_FOLDS_OFF"
OPTIONAL_FOLDS = ("gated", "merge", "norm", "rope")
# Folds left out unless named here: the merge into the o projection made a decode step 3x
# slower on an H100 (every workgroup of the linear redoes the merge: docs/performance.md)
FOLDS_ON = "PTE_WEBGPU_FOLDS_ON"
OPT_IN_FOLDS = ("merge",)


def _named(variable: str, allowed) -> set[str]:
    names = {s.strip() for s in os.environ.get(variable, "").split(",") if s.strip()}
    unknown = sorted(names - set(allowed))
    if unknown:
        raise InputError(f"{variable}: unknown fold {unknown[0]!r}; use some of "
                         f"{', '.join(allowed)}")
    return names


def folds_off() -> set[str]:
    """The folds left out: those FOLDS_OFF names, and the opt-in ones FOLDS_ON does not."""
    return _named(FOLDS_OFF, OPTIONAL_FOLDS) | (set(OPT_IN_FOLDS) - _named(FOLDS_ON, OPT_IN_FOLDS))


def fuse(graph: Graph, nbytes, max_binding: int) -> Graph:
    """The rewritten graph (``graph`` itself when nothing fuses). ``nbytes(tensor)``: its
    bytes as stored; ``max_binding``: the largest buffer the adapter binds."""
    off = folds_off()
    f = _Fusion(graph)
    fusion_q4.fold_offsets(f)  # first: its float linear must not be grouped with others
    f.group_linears(nbytes, max_binding)
    fusion_q4.group_q4(f, nbytes, max_binding)
    f.fold_residuals()
    fusion_q4.fold_residuals(f)
    fusion_conv.fold_residuals(f)
    fusion_conv.fold_clamps(f)
    f.chain_pointwise()
    f.drop_dead_views()  # the stacked linears' input reshapes: the norm's other readers
    f.drop_clones()  # before the norms: a clone between a norm and its linear hides it
    if "norm" not in off:
        fusion_norm.fold_norms(f)
    if "gated" not in off:
        fusion_gated.fold_gates(f)
    if "rope" not in off:
        fusion_rope.fold_ropes(f)
    f.drop_dead_views()
    if "merge" not in off:  # last: it marks the attention and linear as they stand
        fusion_merge.mark_merges(f)
    views = [(op.args[0], op.args[-1]) for op in f.placed.values() if op.name in VIEWS]
    if not f.fused and not views:
        return graph
    ops = [op for _, op in sorted(f.placed.items())]
    values = _repair(graph, f.values, f.placed, nbytes, views)
    shared = sum(isinstance(values[a], TensorValue) and isinstance(values[b], TensorValue)
                 and values[a].mem_obj_id == values[b].mem_obj_id >= 0 for a, b in views)
    if shared:
        f.fused["reshapes sharing memory"] = shared
    meta = dict(graph.meta, concat=f.concat, fused=f.fused, merged=f.merged)
    return Graph(values, ops, graph.input_ids, graph.output_ids, graph.constants,
                 graph.version, meta)


class _Fusion:
    def __init__(self, graph: Graph):
        self.values = list(graph.values)
        self.placed = {i: op for i, op in enumerate(graph.ops)}  # original index -> op
        self.keep = set(graph.input_ids) | set(graph.output_ids)
        self.concat: dict[int, tuple] = {}  # new weight/bias vid -> the constants stacked
        self.fused: dict[str, int] = {}  # what fired (graph.meta["fused"])
        self.merged: dict[int, int] = {}  # fusion_merge.py's marks (graph.meta["merged"])
        self._index()

    # --- the graph as it stands -------------------------------------------------------
    def _index(self) -> None:
        self.readers: dict[int, set[int]] = {}
        self.writer: dict[int, int] = {}
        for i, op in self.placed.items():
            self._link(i, op)

    def _link(self, i: int, op: OpCall) -> None:
        self.placed[i] = op
        for vid in _expand(self.values, op.args[:-1]):
            self.readers.setdefault(vid, set()).add(i)
        for vid in _expand(self.values, op.args[-1:]):
            self.writer[vid] = i

    def _unlink(self, i: int) -> None:
        op = self.placed.pop(i)
        for vid in _expand(self.values, op.args[:-1]):
            self.readers[vid].discard(i)
        for vid in _expand(self.values, op.args[-1:]):
            if self.writer.get(vid) == i:
                del self.writer[vid]

    def _sole_reader(self, vid: int) -> int | None:
        """The one op reading ``vid`` (None when several, none, or it is graph I/O)."""
        readers = self.readers.get(vid, ())
        return next(iter(readers)) if len(readers) == 1 and vid not in self.keep else None

    def _root(self, vid: int) -> int:
        """``vid`` before any reshape."""
        seen = set()  # a cycle of views (a malformed graph) ends the walk
        while vid in self.writer and self.placed[self.writer[vid]].name in VIEWS \
                and vid not in seen:
            seen.add(vid)
            vid = self.placed[self.writer[vid]].args[0]
        return vid

    def _add(self, value) -> int:
        self.values.append(value)
        return len(self.values) - 1

    def _tensor(self, vid: int) -> TensorValue | None:
        v = self.values[vid]
        return v if isinstance(v, TensorValue) else None

    def _count(self, what: str) -> None:
        self.fused[what] = self.fused.get(what, 0) + 1

    # --- 1. linears sharing an input ----------------------------------------------------
    def _linear_parts(self, i: int):
        """(x, weight, bias|None, out) of a linear with constant weight (and bias)."""
        op = self.placed[i]
        if op.name != LINEAR or len(op.args) != 4:
            return None
        x, w, b, out = (self._tensor(a) for a in op.args)
        if x is None or w is None or out is None or not w.is_constant or w.mem_obj_id >= 0 \
                or len(w.shape) != 2 or not x.shape or x.shape[-1] != w.shape[1]:
            return None
        if not isinstance(self.values[op.args[2]], Null) and (
                b is None or not b.is_constant or b.mem_obj_id >= 0 or b.dtype != w.dtype):
            return None
        return op.args

    def group_linears(self, nbytes, max_binding: int) -> None:
        groups: dict[tuple, list[int]] = {}
        for i in sorted(self.placed):
            parts = self._linear_parts(i)
            if parts is None:
                continue
            x_id, w_id, b_id, out_id = parts
            w, x = self.values[w_id], self.values[x_id]
            root = self._tensor(self._root(x_id))
            if root is None or root.is_constant:
                continue  # a constant or state input (written in place): left alone
            key = (self._root(x_id), tuple(x.shape), w.dtype, self.values[out_id].dtype,
                   isinstance(self.values[b_id], Null))
            groups.setdefault(key, []).append(i)
        for members in groups.values():
            for start in range(0, len(members) - 1, MAX_SPLIT):
                chunk = members[start:start + MAX_SPLIT]
                if len(chunk) > 1:
                    self._group(chunk, nbytes, max_binding)

    def _group(self, chunk: list[int], nbytes, max_binding: int) -> None:
        ops = [self.placed[i] for i in chunk]
        weights = [op.args[1] for op in ops]
        w0 = self.values[weights[0]]
        stacked = TensorValue(w0.dtype, (sum(self.values[w].shape[0] for w in weights),
                                         w0.shape[1]))
        b_id, biases = ops[0].args[2], [op.args[2] for op in ops]
        bias = None if isinstance(self.values[b_id], Null) else TensorValue(
            self.values[b_id].dtype, (stacked.shape[0],))
        # parts meet at their byte offsets only when none is padded to 4 bytes
        for whole, parts in ((stacked, weights), (bias, biases)):
            if whole is not None and (nbytes(whole) > max_binding or nbytes(whole) != sum(
                    nbytes(self.values[p]) for p in parts)):
                return  # the linears stay apart
        w_id = self._add(stacked)
        self.concat[w_id] = tuple(weights)
        if bias is not None:
            b_id = self._add(bias)
            self.concat[b_id] = tuple(biases)
        outs = self._add(ListValue("value_list", tuple(op.args[3] for op in ops)))
        no_residual = self._add(Null())
        # At the first linear's place: its input is ready there; the others' outputs are
        # written earlier than before (_repair keeps their memory apart).
        for i in chunk:
            self._unlink(i)
        self._link(chunk[0], OpCall(FUSED_LINEAR, (ops[0].args[0], w_id, b_id, no_residual,
                                                   outs), ops[0].node_id))
        self._count(f"linear x{len(chunk)}")

    # --- 2. residual adds into a linear's epilogue ------------------------------------
    def fold_residuals(self) -> None:
        for i in sorted(self.placed):
            if i not in self.placed:
                continue
            parts = self._linear_parts(i)
            if parts is not None:
                self._fold(i, parts)

    def _fold(self, i: int, parts) -> None:
        x_id, w_id, b_id, out_id = parts
        found = residual_add(self, out_id)
        if found is None:
            return
        views, reader, r_id, s = found
        add, total, out = self.placed[reader], self.values[s], self.values[out_id]
        if total.dtype != out.dtype \
                or without_leading_ones(out.shape) != without_leading_ones(total.shape):
            return  # (same rows, so a dynamic row count pads both alike)
        outs = self._add(ListValue("value_list", (s,)))
        # At the add's place: the residual is ready there (it may be written after the
        # linear); the linear's input lives until then (_repair).
        for j in [i, reader] + views:
            self._unlink(j)
        self._link(reader, OpCall(FUSED_LINEAR, (x_id, w_id, b_id, r_id, outs), add.node_id))
        self._count("linear + residual")

    # --- 3. elementwise chains --------------------------------------------------------
    def _pointwise(self, i: int):
        """(kind, row, tensor operands) of a same-shape elementwise op, else None."""
        op = self.placed[i]
        d = registry.find(op.name)
        if d is None or d.pointwise is None or d.args != len(op.args):
            return None
        kind, row = d.pointwise
        operands = list(op.args[:2] if kind == "binary" else op.args[:1])
        if kind == "binary" and len(op.args) == 4 and not is_one(self.values[op.args[2]]):
            return None
        out = self._tensor(op.args[-1])
        if out is None or out.dtype.name not in ("float32", "float16"):
            return None
        for vid in operands:
            t = self._tensor(vid)
            if t is None or tuple(t.shape) != tuple(out.shape) or t.dtype != out.dtype:
                return None
        return (0 if kind == "unary" else 1), row, operands

    def chain_pointwise(self) -> None:
        for i in sorted(self.placed):
            if i in self.placed and self._pointwise(i) is not None:
                self._chain(i)

    def _chain(self, first: int) -> None:
        places, steps, inputs, results = [], [], [], []
        i = first
        while True:
            kind, row, operands = self._pointwise(i)
            new = [v for v in dict.fromkeys(operands) if v not in inputs + results]
            if len(inputs) + len(new) >= MAX_INPUTS:
                break
            inputs += new
            places.append(i)
            steps.append((kind, row, operands))
            results.append(self.placed[i].args[-1])
            reader = self._sole_reader(results[-1])
            # a reader at or before its writer: a malformed (cyclic) graph, left as it is
            if reader is None or reader <= i or self._pointwise(reader) is None:
                break
            i = reader
        if len(places) < 2:
            return
        # registers: the inputs, then each step's result
        reg = {v: k for k, v in enumerate(inputs + results)}
        program = []
        for kind, row, operands in steps:
            program += [kind, row, reg[operands[0]], reg[operands[-1]] if kind else 0]
        prog = self._add(ListValue("int_list", tuple(program)))
        last = self.placed[places[-1]]
        # At the last op's place: every input is ready there (_repair: their lifetimes).
        for j in places:
            self._unlink(j)
        self._link(places[-1], OpCall(FUSED_CHAIN, tuple(inputs) + (prog, results[-1]),
                                      last.node_id))
        self._count(f"elementwise x{len(places)}")

    # --- clean-up ---------------------------------------------------------------------
    def drop_clones(self) -> None:
        """A clone whose input nothing else reads (the fp16 export's final norm -> clone ->
        lm head): its readers read the input instead, and the copy is gone. Only where
        dtype and shape agree, the clone keeps the default memory format, and neither
        tensor is graph I/O (readers that take it inside a list keep the clone)."""
        for i, op in list(self.placed.items()):
            if op.name != CLONE or len(op.args) != 3 or \
                    not isinstance(self.values[op.args[1]], Null):
                continue
            x_id, out_id = op.args[0], op.args[2]
            x, out = self._tensor(x_id), self._tensor(out_id)
            readers = self.readers.get(out_id, set())
            if x is None or out is None or x.dtype != out.dtype or \
                    tuple(x.shape) != tuple(out.shape) or x.is_constant or \
                    {x_id, out_id} & self.keep or self._sole_reader(x_id) != i or \
                    not readers or any(out_id not in self.placed[r].args for r in readers):
                continue
            self._unlink(i)
            for r in sorted(readers):
                reader = self.placed[r]
                self._unlink(r)
                self._link(r, replace(reader, args=tuple(x_id if a == out_id else a
                                                         for a in reader.args)))
            self._count("clone read as its input")

    def drop_dead_views(self) -> None:
        """View copies whose output nothing reads any more (the inputs of linears that
        another linear's dispatch now computes); last first, so a chain of them goes."""
        for i in sorted(self.placed, reverse=True):
            op = self.placed[i]
            if op.name in VIEWS and op.args[-1] not in self.keep \
                    and not self.readers.get(op.args[-1]):
                self._unlink(i)


def _repair(graph: Graph, values: list, placed: dict, nbytes, views=()) -> list:
    """A tensor whose lifetime (first write to last read, in original op places) changed
    and now overlaps another tensor of its memory object moves to a memory object whose
    tensors it overlaps none of: the one that grows least (the smallest that holds it,
    else the largest of those that do not), a new one only where it overlaps a tensor of
    every object (later moved tensors may share that: those of different layers never
    overlap). The rest keep the
    exporter's plan. ``views``: (input, output) of reshapes; an output of the same size
    joins its input as one unit (one memory object, their lifetimes joined), placed by
    the same rule."""
    io = set(graph.input_ids) | set(graph.output_ids)

    def spans(ops) -> dict[int, tuple[int, int]]:
        out: dict[int, list[int]] = {}
        for place, op in ops:
            for vid in _expand(values, op.args):
                t = values[vid]
                if isinstance(t, TensorValue) and t.mem_obj_id >= 0 and t.constant_id < 0 \
                        and vid not in io:
                    span = out.setdefault(vid, [place, place])
                    span[0], span[1] = min(span[0], place), max(span[1], place)
        return {vid: tuple(span) for vid, span in out.items()}

    before = spans(enumerate(graph.ops))
    after = spans(sorted(placed.items()))
    root: dict[int, int] = {}  # a reshape's output -> the unit it joins (its input's)
    for src, dst in views:
        if src in after and dst in after and nbytes(values[src]) == nbytes(values[dst]):
            root[dst] = root.get(src, src)
    members: dict[int, list[int]] = {}
    for vid in after:
        members.setdefault(root.get(vid, vid), []).append(vid)
    span = {u: (min(after[v][0] for v in vs), max(after[v][1] for v in vs))
            for u, vs in members.items()}
    pools: dict[int, list[int]] = {}  # memory object -> its units
    for u in members:
        pools.setdefault(values[u].mem_obj_id, []).append(u)
    sizes = {m: max(nbytes(values[u]) for u in us) for m, us in pools.items()}
    fresh = max((t.mem_obj_id for t in values if isinstance(t, TensorValue)), default=0) + 1
    out = list(values)

    def clear(pool, unit) -> bool:
        lo, hi = span[unit]
        return all(u == unit or hi < span[u][0] or span[u][1] < lo for u in pool)

    for unit in sorted(members):
        mem = values[unit].mem_obj_id
        pool, size = pools[mem], nbytes(values[unit])
        joined = len(members[unit]) > 1
        if not clear(pool, unit) and (joined or span[unit] != before.get(unit)):
            pool.remove(unit)
            # the object it overlaps nothing in that grows least (none: it holds it),
            # smallest first; a new one only where every object overlaps it
            free = sorted((max(0, size - sizes[m]), sizes[m], m) for m, us in pools.items()
                          if us and clear(us, unit))
            if free:
                mem = free[0][2]
            else:
                mem, fresh = fresh, fresh + 1
            sizes[mem] = max(sizes.get(mem, 0), size)
            pools.setdefault(mem, []).append(unit)
        for vid in members[unit]:
            if out[vid].mem_obj_id != mem:
                out[vid] = replace(values[vid], mem_obj_id=mem)
    return out


def _expand(values, ids) -> list[int]:
    out = []
    for vid in ids:
        v = values[vid]
        out.extend(v.items if isinstance(v, ListValue) and v.kind == "value_list" else (vid,))
    return out
