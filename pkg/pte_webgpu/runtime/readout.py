"""Reductions of an output on the GPU before it is read back. Greedy decoding needs only
the argmax of the logits' last row: 4 bytes instead of the row (196 KB for a 49152-token
vocab), and no pass over it on the host (slow in Pyodide)."""

from __future__ import annotations

from ..gpu.interface import Copy, Dispatch, Recording
from ..shaders.compose import Binding, Kernel, Uniform

PARAMS = Uniform(("offset", "u32"), ("width", "u32"))
KERNEL = Kernel("argmax", (Binding(0, "x"), Binding(1, "out", "read_write", type="u32")),
                PARAMS, snippets=("bits",))


class LastArgmax:
    """An input of ``Method.execute``: the argmax index that the method's previous
    ``execute(argmax=True)`` found, copied on the GPU into the input's first element, so
    the next decode step can be submitted before the host has read the last token
    (``execute(..., wait=False)``). ``shape``: the input's shape (one element; default:
    ones of the input's rank)."""

    def __init__(self, shape=None):
        self.shape = None if shape is None else tuple(int(d) for d in shape)


class LastRowArgmax:
    """One extra dispatch after a method's recording: the argmax of an output's last row
    (its last ``width`` valid elements) into a 4-byte buffer, read back alone. Two staging
    buffers take turns, so one execute's index can be read while the next one runs."""

    def __init__(self, device, recording: Recording, dispatch: Dispatch, params, result,
                 stagings, width: int, extra_readbacks: list):
        self.device, self.width, self.params, self.result = device, width, params, result
        self.recording = Recording(list(recording.steps) + [dispatch])
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
        lanes = 1 << (min(256, device.info.traits.max_invocations).bit_length() - 1)
        pipeline = await device.create_pipeline(KERNEL.source(half), "main",
                                                {"wg_size": lanes}, "argmax:main")
        params = resources.buffer(16, "argmax params", ("uniform", "copy_dst"))
        result = resources.buffer(4, "argmax index")
        total = 4 + sum(size for _, size in extra_readbacks)
        stagings = [resources.buffer(total, f"argmax staging {i}", ("map_read", "copy_dst"))
                    for i in range(2)]
        group = device.bind_group(pipeline, [(0, source, source.size), (1, result, 4),
                                             (2, params, 16)], "argmax")
        return cls(device, recording, Dispatch(pipeline, group, (1, 1, 1), "argmax"), params,
                   result, stagings, width, extra_readbacks)

    def prepare(self, valid_elements: int, feeds=()) -> Recording:
        """Point the kernel at the last row of this execute's output; the recording to run
        (copies of the last index into the ``feeds`` buffers, the method's steps, whose
        grids the execute just set, then the argmax). Takes the next staging buffer."""
        self.device.write_buffer(self.params, PARAMS.pack(offset=valid_elements - self.width,
                                                          width=self.width))
        self.recording.steps[:-1] = [Copy(self.result, dst, 4, "last argmax")
                                     for dst in feeds] + self._base.steps
        self.turn = 1 - self.turn
        return self.recording
