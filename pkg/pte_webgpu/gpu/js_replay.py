"""A Recording encoded by one JS call (the browser backend's untimed path).

Each Pyodide-to-JS call costs microseconds; encoding op by op makes ~3 per dispatch (a
SmolLM2 decode step: 277 dispatches, ~1180 calls). So a recording is turned once into JS
arrays (its pipelines, bind groups, copies; grids as one Uint32Array; ``pass_plan``'s ops
as (op, slot) pairs) and ``ENCODE_JS`` walks them. Before each use the arrays are checked
against the steps by identity: a grid that changed (dynamic sizes replace a Dispatch) is
written into the grid numbers, sent again with that one call (and the ops, when a grid
turned empty or back); any other change rebuilds them.
"""

from __future__ import annotations

from array import array
from itertools import compress
from operator import is_not

from .recording import BEGIN, DISPATCH, END, Copy, Dispatch, pass_plan

# Runs pass_plan's ops as they are (it decides nothing itself). Named, so a stack shows
# which WebGPU calls it made (tests/browser/test_js_replay.py counts them).
ENCODE_JS = """(function pteEncodeRecording(enc, plan, grids, code) {
  const u32 = (v) => new Uint32Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
  if (grids != null) plan.grids = u32(grids);
  if (code != null) plan.code = u32(code);
  const { pipelines, groups, src, dst, sizes } = plan, g = plan.grids, ops = plan.code;
  let pass = null;
  for (let k = 0; k < ops.length; k += 2) {
    const op = ops[k], i = ops[k + 1];
    if (op === %(DISPATCH)d) {
      pass.setPipeline(pipelines[i]);
      pass.setBindGroup(0, groups[i]);
      pass.dispatchWorkgroups(g[3 * i], g[3 * i + 1], g[3 * i + 2]);
    } else if (op === %(BEGIN)d) {
      pass = enc.beginComputePass();
    } else if (op === %(END)d) {
      pass.end();
      pass = null;
    } else {
      enc.copyBufferToBuffer(src[i], 0, dst[i], 0, sizes[i]);
    }
  }
})""" % {"DISPATCH": DISPATCH, "BEGIN": BEGIN, "END": END}


def _runs(grid) -> bool:
    return bool(grid[0] and grid[1] and grid[2])


class JsRecording:
    """One Recording's JS arrays and the steps they were made from (``Recording.encoded``)."""

    def __init__(self, device, steps: list):
        self.device = device
        self.steps = list(steps)
        # each step's slot: its number among the dispatches, or among the copies
        self.slots, dispatches, copies = [], [], []
        for step in self.steps:
            group = copies if type(step) is Copy else dispatches
            self.slots.append(len(group))
            group.append(step)
        self.grids = array("I", [n for d in dispatches for n in d.grid])
        self.plan = device._obj({
            "pipelines": [d.pipeline for d in dispatches],
            "groups": [d.bind_group for d in dispatches],
            "src": [c.src.handle for c in copies], "dst": [c.dst.handle for c in copies],
            "sizes": [c.size for c in copies]})
        self.grids_dirty, self.code_dirty = True, True

    def _make_code(self) -> array:
        slots = self.slots
        return array("I", [n for op, index in pass_plan(self.steps)
                           for n in (op, slots[index] if index >= 0 else 0)])

    def follow(self, steps: list) -> bool:
        """Bring the arrays in step with ``steps``; False when only a rebuild can."""
        old = self.steps
        if len(steps) != len(old):
            return False
        # the steps that are other objects, found without a Python loop (a decode step has
        # ~550; readout's feed copy is a new object each execute)
        changed = list(compress(range(len(old)), map(is_not, steps, old)))
        if not changed:
            return True
        for index in changed:
            new, was = steps[index], old[index]
            if type(new) is Dispatch and type(was) is Dispatch:
                if new.pipeline is not was.pipeline or new.bind_group is not was.bind_group:
                    return False
                at = 3 * self.slots[index]
                self.grids[at:at + 3] = array("I", new.grid)
                self.grids_dirty = True
                self.code_dirty = self.code_dirty or _runs(new.grid) != _runs(was.grid)
            elif type(new) is Copy and type(was) is Copy:
                if new.src is not was.src or new.dst is not was.dst or new.size != was.size:
                    return False
            else:
                return False
        for index in changed:
            old[index] = steps[index]
        return True

    def encode(self, encoder, encode_fn) -> None:
        """One JS call; the grid numbers and ops go along only when they changed."""
        to_js = self.device.bytes_to_js
        grids = to_js(memoryview(self.grids).cast("B")) if self.grids_dirty else None
        code = to_js(memoryview(self._make_code()).cast("B")) if self.code_dirty else None
        encode_fn(encoder, self.plan, grids, code)
        self.grids_dirty = self.code_dirty = False
