"""Execute-time integers: SymInt values and the actual sizes of dynamic-shape tensors.

Design. Every tensor keeps the buffer of its upper-bound shape (what the program
declares); an input of a DYNAMIC_BOUND plan tensor may be smaller, and its elements then
sit in the bound's row-major layout ("padded layout": the valid region is the box
``[0, actual_d)`` of every dim). Element-wise and row-wise kernels are correct inside
that box whatever they compute outside it, so their recorded work is unchanged. What
depends on the actual sizes is computed on the host at each execute, before the one
submit, by a short list of host steps recorded at load:

* SymInt ops (``et_vk.select_as_symint`` from a plan input's host data, ``sym_size.int``,
  SymInt ``add``) set values;
* each op that touches a dynamic tensor sets its outputs' actual shapes (ops/sizes.py);
* kernels that must know an actual size or a SymInt (a start position, a sequence length)
  read it from ONE small storage buffer of i32 slots (``DynamicEnv.buffer``), written with
  one ``writeBuffer`` per execute; the WGSL is never re-encoded;
* a dispatch whose size should follow the actual size gives a ``grid_fn``; its grid is
  recomputed from the slots before encoding (the recording is encoded at each execute
  anyway, so this costs a few tuple replacements).

Outputs of dynamic shape are cut out of their padded layout when read back.
"""

from __future__ import annotations

from array import array

from ..errors import InputError, UnsupportedError
from ..gpu.recording import Dispatch
from ..model.graph import Scalar
from ..ops.exec_ints import int_value, is_prefix

SLOTS_PER_BUFFER = 256


class DynamicEnv:
    """One method's execute-time integers. Value keys: ``("sym", graph, vid)`` for a
    SymInt, ``("shape", graph, vid)`` for a tensor's actual shape, anything an op's host
    step sets (e.g. ``("calc", graph, op index, name)``). Slot keys (what kernels read):
    those, ``("size", graph, vid, dim, bound)`` for one actual size, ``("static", n)``.
    Slots live in buffers of SLOTS_PER_BUFFER i32; one op's slots share one buffer."""

    def __init__(self):
        self.chunks: list[list] = []  # per slot buffer: its keys in slot order
        self.buffers: list = []
        self.steps: list = []  # host steps fn(env), in chain order
        # (step index in the recording, fn(env) -> grid, the one value key fn reads)
        self.grids: list = []
        self._grid_keys: list = []
        self._grid_values: list | None = None  # those keys' values when the grids were set
        self._grid_recording = None
        self.dynamic: set[tuple] = set()  # ("shape", graph, vid) keys of dynamic tensors
        self.values: dict[tuple, object] = {}  # per execute: key -> int | shape tuple
        self.host_inputs: dict[int, object] = {}  # plan vid -> host Tensor (per execute)
        self.plan_inputs: set[int] = set()
        # (input shapes, the values no input data can change, the steps that data can):
        # from a traced run; an execute with the same input shapes reruns only those steps
        self._memo: tuple | None = None

    # --- load --------------------------------------------------------------------------
    @property
    def active(self) -> bool:
        return bool(self.steps or self.chunks or self.grids)

    def slots(self, resources, keys) -> tuple:
        """(buffer, [slot index per key]): where a kernel reads these integers."""
        keys = list(keys)
        if len(keys) > SLOTS_PER_BUFFER:
            raise UnsupportedError(f"an op needs {len(keys)} execute-time integers; at most "
                                   f"{SLOTS_PER_BUFFER}")
        if not self.chunks or len(self.chunks[-1]) + len(keys) > SLOTS_PER_BUFFER:
            self.chunks.append([])
            self.buffers.append(resources.buffer(4 * SLOTS_PER_BUFFER,
                                                 "execute-time integers (SymInts, sizes)"))
        chunk = self.chunks[-1]
        at = len(chunk)
        chunk.extend(keys)
        return self.buffers[-1], list(range(at, at + len(keys)))

    def is_dynamic(self, graph: int, vid: int) -> bool:
        return ("shape", graph, vid) in self.dynamic

    # --- execute -----------------------------------------------------------------------
    def shape(self, graph: int, vid: int, bound) -> tuple:
        return self.values.get(("shape", graph, vid), tuple(bound))

    def _slot_value(self, key) -> int:
        if key[0] == "static":
            return int(key[1])
        if key[0] == "size":
            _, graph, vid, dim, bound = key
            shape = self.values.get(("shape", graph, vid))
            return int(shape[dim]) if shape is not None else int(bound)
        value = self.values.get(key, 0)
        return int(value)

    def run(self, recording) -> list[tuple]:
        """Run the host steps, update the dispatch grids that follow actual sizes, and
        return [(slot buffer, bytes)] to write before the submit."""
        self._run_steps()
        if len(self._grid_keys) != len(self.grids):
            self._grid_keys, self._grid_values = [key for _, _, key in self.grids], None
        # a decode loop repeats one set of sizes: the grids are what the last run set
        now = list(map(self.values.get, self._grid_keys))
        if now != self._grid_values or recording is not self._grid_recording:
            steps = recording.steps
            for index, fn, _ in self.grids:
                step, grid = steps[index], fn(self)
                if grid != step.grid:
                    steps[index] = Dispatch(step.pipeline, step.bind_group, grid, step.label)
            self._grid_values, self._grid_recording = now, recording
        # array("i") packs in C (a decode step has ~60 slots); it raises OverflowError
        # past int32 as int.to_bytes did
        return [(buf, array("i", map(self._slot_value, keys)).tobytes())
                for buf, keys in zip(self.buffers, self.chunks)]


    def _run_steps(self) -> None:
        """The host steps. A decode loop repeats one set of input shapes while only input
        data (a position) changes: the first run with those shapes is traced (which keys
        each step reads and writes; which steps read input data), and later runs with the
        same shapes rerun only the steps that depend on input data, the rest reused."""
        signature = tuple(sorted(self.values.items()))
        memo = self._memo
        if memo is not None and memo[0] == signature:
            values = dict(memo[1])
            values.update(self.values)
            self.values = values
            for step in memo[2]:
                step(self)
            return
        values, hosts = _Traced(self.values), _TracedInputs(self.host_inputs)
        self.values, self.host_inputs = values, hosts
        volatile, volatile_keys = [], set()
        try:
            for step in self.steps:
                values.reads, values.writes, hosts.read = set(), set(), False
                step(self)
                if hosts.read or values.reads & volatile_keys:
                    volatile.append(step)
                    volatile_keys |= values.writes
        finally:
            self.values, self.host_inputs = dict(values), dict(hosts)
        stable = {k: v for k, v in self.values.items() if k not in volatile_keys}
        self._memo = (signature, stable, volatile)


class _Traced(dict):
    """``DynamicEnv.values`` during a traced run: what the current step reads and writes."""
    reads: set = set()
    writes: set = set()

    def __getitem__(self, key):
        self.reads.add(key)
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.reads.add(key)
        return super().get(key, default)

    def __contains__(self, key):
        self.reads.add(key)
        return super().__contains__(key)

    def __setitem__(self, key, value):
        self.writes.add(key)
        super().__setitem__(key, value)


class _TracedInputs(dict):
    """``DynamicEnv.host_inputs`` during a traced run: whether the step read input data."""
    read = False

    def __getitem__(self, key):
        self.read = True
        return super().__getitem__(key)

    def get(self, key, default=None):
        self.read = True
        return super().get(key, default)


def is_symint(graph_values, vid: int) -> bool:
    value = graph_values[vid]
    return isinstance(value, Scalar) and value.kind == "symint"


# --- the padded layout ------------------------------------------------------------------

def check_dynamic_shape(shape, bound, index: int) -> None:
    if len(shape) != len(bound) or any(not 0 <= s <= b for s, b in zip(shape, bound)):
        raise InputError(f"input {index}: shape {list(shape)} does not fit the upper bound "
                         f"{list(bound)} of this dynamic-shape input")


def _rows(shape, bound, itemsize: int):
    """(offset in the ``shape`` bytes, offset in the ``bound`` bytes, length) of each run
    of the last dim: the box ``shape`` inside the row-major layout of ``bound``."""
    if not shape or 0 in shape:
        return
    run = shape[-1] * itemsize
    strides, acc = [], itemsize
    for b in reversed(bound):
        strides.append(acc)
        acc *= b
    strides.reverse()
    index = [0] * (len(shape) - 1)
    at = 0
    while True:
        yield at, sum(i * st for i, st in zip(index, strides)), run
        at += run
        d = len(index) - 1
        while d >= 0:
            index[d] += 1
            if index[d] < shape[d]:
                break
            index[d] = 0
            d -= 1
        if d < 0:
            return


def _bound_nbytes(bound, itemsize: int) -> int:
    n = itemsize
    for b in bound:
        n *= b
    return n


def to_padded(data, shape, bound, itemsize: int, what: str):
    """Host bytes of ``shape`` -> bytes to write at the start of a ``bound`` buffer."""
    if is_prefix(shape, bound):
        return data
    src, out = memoryview(data).cast("B"), bytearray(_bound_nbytes(bound, itemsize))
    for a, b, n in _rows(shape, bound, itemsize):
        out[b:b + n] = src[a:a + n]
    return bytes(out)


def from_padded(data, shape, bound, itemsize: int):
    """Bytes of a ``bound`` buffer -> the ``shape`` box, row-major."""
    if is_prefix(shape, bound):
        n = itemsize
        for s in shape:
            n *= s
        return data[:n]
    src, out = memoryview(data).cast("B"), bytearray()
    for _, b, n in _rows(shape, bound, itemsize):
        out += src[b:b + n]
    return bytes(out)


# --- load: which tensors are dynamic, and the host steps that size them ----------------

def enter_delegate(env: DynamicEnv, graph: int, input_ids, plan_ids: dict) -> None:
    """A delegate input is dynamic when its plan tensor is; it takes that actual shape."""
    for gid in input_ids:
        pid = plan_ids[gid]
        if env.is_dynamic(-1, pid):
            env.dynamic.add(("shape", graph, gid))
            env.steps.append(_copy_shape(("shape", -1, pid), ("shape", graph, gid)))


def leave_delegate(env: DynamicEnv, graph: int, output_ids, plan_ids: dict) -> None:
    for gid in output_ids:
        pid = plan_ids[gid]
        if env.is_dynamic(graph, gid):
            env.dynamic.add(("shape", -1, pid))
            env.steps.append(_copy_shape(("shape", graph, gid), ("shape", -1, pid)))


def _copy_shape(src: tuple, dst: tuple):
    def step(env):
        if src in env.values:
            env.values[dst] = env.values[src]
    return step


def _expand(values, ids) -> list[int]:
    out = []
    for vid in ids:
        v = values[vid]
        out.extend(v.items if getattr(v, "kind", "") == "value_list" else (vid,))
    return out


def track(ctx, op) -> None:
    """Before op ``op`` is built: if it reads a dynamic tensor or a SymInt, its tensor
    outputs are dynamic and a host step computes their actual shapes (ops/sizes.py)."""
    from ..ops import registry

    env, g, values = ctx.dyn, ctx.graph_key, ctx.graph.values
    if env is None or not op.args:
        return
    reads = _expand(values, op.args[:-1])
    results = [v for v in _expand(values, op.args[-1:]) if values[v].kind == "tensor"]
    if not results:
        return  # a SymInt op: its build function adds its own host step
    if not any(env.is_dynamic(g, v) or is_symint(values, v) for v in reads):
        return
    definition = registry.find(op.name)
    rule = definition.sizes if definition is not None else None
    if rule is None:
        raise UnsupportedError(f"op {op.name!r} ({ctx.where(op)}) reads a dynamic-shape "
                               "tensor or a SymInt, and pte-webgpu has no rule for its "
                               "output sizes")
    for vid in results:
        env.dynamic.add(("shape", g, vid))
    where = ctx.where(op)

    def step(env):
        def shape(vid):
            return env.shape(g, vid, values[vid].shape)

        def integer(vid):
            return int_value(env, values, g, vid, where)

        for vid, s in rule(op, shape, integer, values).items():
            bound = values[vid].shape
            if len(s) != len(bound) or any(a > b for a, b in zip(s, bound)):
                raise InputError(f"{where}: actual size {list(s)} exceeds the bound "
                                 f"{list(bound)} the program was exported with")
            env.values[("shape", g, vid)] = tuple(s)
    env.steps.append(step)
