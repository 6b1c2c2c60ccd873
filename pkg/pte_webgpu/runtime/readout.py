"""Reductions of an output on the GPU before it is read back. Greedy decoding needs only
the argmax of the logits' last row: 4 bytes instead of the row (196 KB for a 49152-token
vocab), and no pass over it on the host (slow in Pyodide). Sampling at a temperature is
the same pass with Gumbel noise added (``Sample``).

The decoding API of ``Method.execute(inputs, argmax=True, wait=..., sample=...)``:
``LastArgmax`` (an input fed with the previous pick on the GPU), ``Sample`` (draw
instead of argmax), ``PendingArgmax`` (what ``wait=False`` returns); inside, one
``Picker`` per method (the argmax pass, the staging buffers taking turns, the picks
not read yet) and ``check_request`` / ``fed_shape`` (the checks of those arguments)."""

from __future__ import annotations

import os
from math import prod

from ..errors import InputError
from ..gpu.recording import Copy, Dispatch, Recording
from ..model.program_file import PlanTensor
from ..ops.common import floor_pow2
from ..shaders.compose import Binding, Kernel, Uniform

PARAMS = Uniform(("offset", "u32"), ("width", "u32"), ("temperature", "f32"), ("seed", "u32"),
                 ("draw", "u32"), ("chunk", "u32"), ("groups", "u32"))
PARAMS_BYTES = len(PARAMS.pack())
# Decode steps a host keeps submitted beyond the one it is reading (llm/generate.py,
# llm/bench_job.py): with one, the GPU idles whenever reading a token back takes longer than
# a step runs (Chromium resolves mapAsync a few ms late: docs/performance.md); each step in
# flight needs its own staging buffer besides the one being read. Eight ahead against four
# (H100, SmolLM2 fp32 and q4 at every context, docs/performance.md): +7-10% tok/s natively,
# +5-13% in Chromium in 5 of 6 cells (four against two had given +2-5% natively).
IN_FLIGHT = 8


def in_flight() -> int:
    """IN_FLIGHT, or PTE_WEBGPU_IN_FLIGHT (1 to 16) where set: how deep the pipelining of
    chained steps is measured to pay (docs/performance.md). Read when a method first picks
    and when a chain starts, so both see the same value."""
    text = os.environ.get("PTE_WEBGPU_IN_FLIGHT", "")
    return min(16, max(1, int(text))) if text.strip().isdigit() else IN_FLIGHT


KERNEL = Kernel("argmax", (Binding(0, "x"), Binding(1, "out", "read_write", type="u32"),
                           Binding(3, "best", "read_write", type="u32")),
                PARAMS, uniform_binding=2, snippets=("bits",))
PER_LANE = 8  # the least elements a lane of the first dispatch ranks (fewer, fuller slices)


class LastArgmax:
    """An input of ``Method.execute``: the argmax index that the method's previous
    ``execute(argmax=True)`` found, copied on the GPU into the input's first element, so
    the next decode step can be submitted before the host has read the last token
    (``execute(..., wait=False)``). ``shape``: the input's shape (one element; default:
    ones of the input's rank)."""

    def __init__(self, shape=None):
        self.shape = None if shape is None else tuple(int(d) for d in shape)


class Sample:
    """``Method.execute(..., argmax=True, sample=Sample(temperature, seed, draw))``: the
    index is drawn from softmax(row / temperature) on the GPU instead of the argmax
    (Gumbel-max: the argmax of row / temperature + Gumbel noise hashed from (seed, draw,
    index)). The same (seed, draw) gives the same index; give each step its own draw."""

    def __init__(self, temperature: float, seed: int = 0, draw: int = 0):
        if not temperature > 0 or temperature == float("inf"):
            raise InputError(f"Sample: temperature {temperature!r} must be a positive number")
        self.temperature = float(temperature)
        self.seed, self.draw = int(seed) & 0xFFFFFFFF, int(draw) & 0xFFFFFFFF


class LastRowArgmax:
    """Two extra dispatches after a method's recording: the argmax of an output's last row
    (its last ``width`` valid elements) into a 4-byte buffer, read back alone (the best of
    each slice of the row, then the best of those). ``in_flight() + 1`` staging buffers
    take turns, so up to ``in_flight()`` executes can run ahead of the one whose index is
    being read."""

    def __init__(self, device, recording: Recording, dispatches: list, params, result,
                 stagings, width: int, extra_readbacks: list, chunk: int, groups: int):
        self.device, self.width, self.params, self.result = device, width, params, result
        self.chunk, self.groups = chunk, groups
        self.tail = dispatches
        self.recording = Recording(list(recording.steps) + dispatches)
        self.outputs = [(result, 4)] + extra_readbacks
        self.stagings, self.turn = stagings, 0
        self.ran = False  # whether ``result`` holds an index yet (for LastArgmax inputs)
        self._base = recording

    @property
    def staging(self):
        return self.stagings[self.turn]

    @classmethod
    async def create(cls, device, resources, recording: Recording, source, width: int,
                     half: bool, extra_readbacks: list) -> "LastRowArgmax":
        lanes = floor_pow2(min(256, device.info.traits.max_invocations))
        # slices of at least PER_LANE elements a lane, and no more slices than the second
        # dispatch has lanes (each of its lanes takes one slice's best)
        chunk = max(-(-width // lanes), lanes * PER_LANE)
        groups = -(-width // chunk)
        stages = [await device.create_pipeline(KERNEL.source(half), entry, {"wg_size": lanes},
                                               f"argmax:{entry}") for entry in ("main", "finish")]
        params = resources.buffer(PARAMS_BYTES, "argmax params", ("uniform", "copy_dst"))
        result = resources.buffer(4, "argmax index")
        best = resources.buffer(8 * groups, "argmax slices' best")
        total = 4 + sum(size for _, size in extra_readbacks)
        stagings = [resources.buffer(total, f"argmax staging {i}", ("map_read", "copy_dst"))
                    for i in range(in_flight() + 1)]
        common = [(2, params, PARAMS_BYTES), (3, best, 8 * groups)]
        binds = [[(0, source, source.size)] + common, [(1, result, 4)] + common]  # each reads
        dispatches = [Dispatch(stage, device.bind_group(stage, b, f"argmax {i}"), grid, "argmax")
                      for i, (stage, b, grid) in enumerate(zip(stages, binds,
                                                               [(groups, 1, 1), (1, 1, 1)]))]
        return cls(device, recording, dispatches, params, result, stagings, width,
                   extra_readbacks, chunk, groups)

    def prepare(self, valid_elements: int, feeds=(), sample: Sample | None = None) -> Recording:
        """Point the kernel at the last row of this execute's output (sampled with
        ``sample``); the recording to run (copies of the last index into the ``feeds``
        buffers, the method's steps, whose grids the execute just set, then the argmax).
        Takes the next staging buffer."""
        noise = {} if sample is None else {"temperature": sample.temperature,
                                           "seed": sample.seed, "draw": sample.draw}
        self.device.write_buffer(self.params, PARAMS.pack(
            offset=valid_elements - self.width, width=self.width, chunk=self.chunk,
            groups=self.groups, **noise))
        self.recording.steps[:] = [Copy(self.result, dst, 4, "last argmax")
                                   for dst in feeds] + self._base.steps + self.tail
        self.turn = (self.turn + 1) % len(self.stagings)
        return self.recording


# --- the decoding API of Method.execute ---------------------------------------------------
def check_request(argmax: bool, wait: bool, sample, profile: bool) -> None:
    """``execute``'s decoding arguments, checked before anything is read."""
    if not wait and (not argmax or profile):
        raise InputError("execute(wait=False) needs argmax=True and profile=False")
    if sample is not None and not (argmax and isinstance(sample, Sample)):
        raise InputError("execute(sample=...) takes a readout.Sample, with argmax=True")


def fed_shape(x: LastArgmax, i: int, want, argmax: bool, dynamic: bool) -> tuple:
    """The shape of input ``i`` fed on the GPU by ``x``, checked against the plan's
    ``want`` (a PlanTensor; ``dynamic``: its shape may vary)."""
    if not argmax:
        raise InputError(f"input {i}: LastArgmax() is fed by execute(argmax=True) only")
    shape = (1,) * len(want.sizes) if x.shape is None else x.shape
    if want.dtype.name not in ("int32", "int64") or prod(shape) != 1 or \
            len(shape) != len(want.sizes):
        raise InputError(f"input {i}: LastArgmax{list(shape)} fills one element of an "
                         f"int32/int64 input; this one is {want.dtype.name}"
                         f"{list(want.sizes)}")
    if tuple(want.sizes) != shape and not dynamic:
        raise InputError(f"input {i}: expected shape {list(want.sizes)}, got "
                         f"{list(shape)}")
    return shape


def index_of(raw) -> list[int]:
    """``[index]``: the picked index from the read-back bytes (the first output)."""
    return [int.from_bytes(bytes(raw[0][:4]), "little")]


class Picker:
    """The GPU picks of one Method (``execute(argmax=True)``): the argmax pass appended to
    its recording, made on first use, and the picks submitted without waiting
    (``wait=False``) that are not read yet. Per execute: ``ready`` (before the run),
    then ``run`` (wait) or ``submit`` (returns a ``PendingArgmax``)."""

    def __init__(self, method: str, device, resources, recording: Recording, id_checks):
        self._method, self._device, self._resources = method, device, resources
        self._base, self._id_checks = recording, id_checks
        self._reader: LastRowArgmax | None = None
        self._unread: list[PendingArgmax] = []

    @property
    def recording(self) -> Recording | None:
        """What a pick submits: the LastArgmax copies, the method's steps, the argmax
        (as the last pick set them); None before the first pick."""
        return None if self._reader is None else self._reader.recording

    async def ready(self, plan, plan_buffers: dict, storage, fed: bool) -> None:
        """Before the run: the argmax pass of output 0 of ``plan`` (its buffer in
        ``plan_buffers``, held as ``storage`` says), made the first time; a LastArgmax
        input (``fed``) needs a pick to copy; the pending pick whose staging buffer this
        one takes is read first."""
        if self._reader is None:
            vid = plan.outputs[0] if plan.outputs else None
            value = plan.values[vid] if vid is not None else None
            if not isinstance(value, PlanTensor) or value.dtype.name not in ("float32",
                                                                            "float16") \
                    or not value.sizes or not value.sizes[-1]:
                raise InputError(f"method {self._method!r}: argmax needs output 0 to be a "
                                 "float tensor with a last dim")
            self._reader = await LastRowArgmax.create(
                self._device, self._resources, self._base, plan_buffers[vid], value.sizes[-1],
                storage.dtype(value.dtype).name == "float16", self._id_checks.readbacks())
        reader = self._reader
        if fed and not reader.ran:
            raise InputError("LastArgmax input: no execute(argmax=True) ran before")
        # this execute's staging buffer: the one whose last index must be read first
        taken = reader.stagings[(reader.turn + 1) % len(reader.stagings)]
        for pending in [p for p in self._unread if p.staging is taken]:
            await pending.result()

    async def run(self, valid_elements: int, feeds, sample, profile: bool):
        """Run one pick and wait: (raw, times) as ``GpuDevice.run`` gives them."""
        reader = self._reader
        recording = reader.prepare(valid_elements, feeds, sample)
        raw, times = await self._device.run(recording, reader.outputs, reader.staging,
                                            profile=profile)
        reader.ran = True
        return raw, times

    def submit(self, valid_elements: int, feeds, sample) -> "PendingArgmax":
        """Submit one pick without waiting for it."""
        reader = self._reader
        recording = reader.prepare(valid_elements, feeds, sample)
        staging = reader.staging
        offsets = self._device.submit(recording, reader.outputs, staging)
        reader.ran = True
        pending = PendingArgmax(self, staging, offsets, reader.outputs,
                                len(reader.stagings) - 1)
        self._unread.append(pending)
        return pending


class PendingArgmax:
    """The result of ``execute(argmax=True, wait=False)``: ``await pending`` (or
    ``await pending.result()``) gives ``[index]`` once the GPU has run the step.
    ``depth``: how many picks can be submitted beyond it before one waits for a staging
    buffer (the picker's, fixed when it was made)."""

    def __init__(self, picker: Picker, staging, offsets, outputs, depth: int):
        self._picker, self.staging, self.depth = picker, staging, depth
        self._offsets, self._outputs = offsets, outputs
        self._value: list[int] | None = None

    async def result(self) -> list[int]:
        if self._value is None:
            picker = self._picker
            if self not in picker._unread:
                raise InputError("this step's result was lost: an earlier read of it failed")
            try:
                raw = await picker._device.read_outputs(self.staging, self._offsets,
                                                        self._outputs)
            finally:
                picker._unread.remove(self)
            picker._id_checks.check_readback(raw)
            self._value = index_of(raw)
        return self._value

    def __await__(self):
        return self.result().__await__()
