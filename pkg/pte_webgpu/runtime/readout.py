"""Reductions of an output on the GPU before it is read back. Greedy decoding needs only
the argmax of the logits' last row: 4 bytes instead of the row (196 KB for a 49152-token
vocab), and no pass over it on the host (slow in Pyodide)."""

from __future__ import annotations

from ..gpu.interface import Dispatch, Recording
from ..shaders.compose import Binding, Kernel, Uniform

PARAMS = Uniform(("offset", "u32"), ("width", "u32"))
KERNEL = Kernel("argmax", (Binding(0, "x"), Binding(1, "out", "read_write", type="u32")),
                PARAMS, snippets=("bits",))


class LastRowArgmax:
    """One extra dispatch after a method's recording: the argmax of an output's last row
    (its last ``width`` valid elements) into a 4-byte buffer, read back alone."""

    def __init__(self, device, recording: Recording, dispatch: Dispatch, params, result,
                 staging, width: int, extra_readbacks: list):
        self.device, self.width, self.params = device, width, params
        self.recording = Recording(list(recording.steps) + [dispatch])
        self.outputs = [(result, 4)] + extra_readbacks
        self.staging = staging
        self._base = recording

    @classmethod
    async def create(cls, device, resources, recording: Recording, source, width: int,
                     half: bool, extra_readbacks: list) -> "LastRowArgmax":
        lanes = 1 << (min(256, device.info.traits.max_invocations).bit_length() - 1)
        pipeline = await device.create_pipeline(KERNEL.source(half), "main",
                                                {"wg_size": lanes}, "argmax:main")
        params = resources.buffer(16, "argmax params", ("uniform", "copy_dst"))
        result = resources.buffer(4, "argmax index")
        total = 4 + sum(size for _, size in extra_readbacks)
        staging = resources.buffer(total, "argmax staging", ("map_read", "copy_dst"))
        group = device.bind_group(pipeline, [(0, source, source.size), (1, result, 4),
                                             (2, params, 16)], "argmax")
        return cls(device, recording, Dispatch(pipeline, group, (1, 1, 1), "argmax"), params,
                   result, staging, width, extra_readbacks)

    def prepare(self, valid_elements: int) -> Recording:
        """Point the kernel at the last row of this execute's output; the recording to run
        (the method's steps, whose grids the execute just set, then the argmax)."""
        self.device.write_buffer(self.params, PARAMS.pack(offset=valid_elements - self.width,
                                                          width=self.width))
        self.recording.steps[:-1] = self._base.steps
        return self.recording
