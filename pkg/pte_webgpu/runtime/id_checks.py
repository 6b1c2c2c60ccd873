"""Out-of-range ids (embedding rows): torch raises, so must we, without a GPU kernel
ever reading outside a table.

An op that indexes by ids asks ``BuildContext.id_check`` for a flag buffer of four u32:
[ids out of range, claimed, position, value]. Its kernel counts every bad id and the
first invocation to claim the flag records one (position, value); execute zeroes the
flags before the submit and reads them back with the outputs (same staging copy), then
raises ``InputError`` if one is set. Ids that come straight from a plan input are also
checked on the host before anything runs, so the error names the input, the value and
its position there.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..errors import InputError

FLAG_BYTES = 16  # atomic<u32> count, claimed; u32 position; i32 value


@dataclass
class IdCheck:
    flag: object  # gpu Buffer
    vid: int  # the ids tensor in its graph
    vocab: int
    where: str  # "instruction 0 delegate 0 op 0 aten.embedding.default"
    input_index: int | None = None  # the plan input the ids are, if they are one
    low: int = 0  # -vocab where negative ids count from the end (index.Tensor)


class IdChecks:
    """The id checks of one Method."""

    def __init__(self):
        self.checks: list[IdCheck] = []

    def add(self, checks, plan_vid_of, plan_inputs) -> None:
        """``checks`` of one delegate or kernel; ``plan_vid_of(vid)``: the plan value a
        graph value is (None inside a delegate)."""
        for c in checks:
            pid = plan_vid_of(c.vid)
            c.input_index = plan_inputs.index(pid) if pid in plan_inputs else None
            self.checks.append(c)

    def readbacks(self) -> list:
        """(buffer, bytes) for each flag, appended to the outputs the staging copy reads."""
        return [(c.flag, FLAG_BYTES) for c in self.checks]

    def reset(self, upload, device) -> None:
        for c in self.checks:
            upload(device, c.flag, bytes(FLAG_BYTES))

    def check_inputs(self, hosts: list, shapes: list) -> None:
        """Host ids (int32 storage bytes, one per input) against each table's rows."""
        for c in self.checks:
            if c.input_index is None:
                continue
            data = hosts[c.input_index]
            if data is None:  # fed on the GPU (readout.LastArgmax): the kernel's flag checks it
                continue
            values = struct.unpack(f"<{len(data) // 4}i", data)
            for pos, v in enumerate(values):
                if not c.low <= v < c.vocab:
                    raise InputError(f"input {c.input_index}: id {v} at position "
                                     f"{_unravel(pos, shapes[c.input_index])} is outside "
                                     f"[{c.low}, {c.vocab}), the rows of {c.where} (torch "
                                     "raises 'index out of range')")

    def check_readback(self, raw: list) -> None:
        """``raw``: everything one staging copy read back; the flags are its tail
        (``readbacks`` come after the outputs)."""
        flags = len(self.checks)
        self.check_flags(raw[len(raw) - flags:] if flags else [])

    def check_flags(self, raw: list) -> None:
        """``raw``: the flags' bytes as read back, in ``readbacks`` order."""
        for c, data in zip(self.checks, raw):
            count, _claimed, pos, value = struct.unpack("<IIIi", bytes(data[:FLAG_BYTES]))
            if count:
                raise InputError(f"{c.where}: id {value} at position {pos} of its "
                                 f"{'ids' if c.input_index is None else 'input ids'} is "
                                 f"outside [{c.low}, {c.vocab}) ({count} id(s) out of range; torch "
                                 "raises 'index out of range'); the outputs were discarded")


def _unravel(pos: int, shape) -> list[int]:
    index = []
    for d in reversed(tuple(shape)):
        index.append(pos % d if d else 0)
        pos //= d if d else 1
    return index[::-1]

