"""State that persists across executes, and ``Method.reset()``.

Two kinds, both kept in their own GPU buffers for the method's life:

* ExecuTorch mutable buffers: planned plan tensors (no data, not an input or output)
  that an instruction reads before any instruction writes them, e.g. a plain-torch KV
  cache written by ``aten::index_put.out`` + ``aten::copy_``. Their initial value is zero.
* Constant-backed tensors of a Vulkan graph that are also memory-planned
  (``constant_id >= 0`` and ``mem_obj_id >= 0``): the llama custom ops' KV caches,
  updated in place by ``sdpa_with_kv_cache``. Several share one named-data key (equal
  zero bytes are deduplicated), so each gets its own storage; reset restores its data.

Every other tensor is recomputed by each execute, so ``reset`` leaves it alone.
"""

from __future__ import annotations

from ..model.plan_graph import kernel_op, linear_chain
from ..model.program_file import DelegateCall, KernelCall, PlanTensor


def mutable_plan_values(plan) -> set[int]:
    """Plan tensors whose value carries over from one execute to the next."""
    inputs, outputs = set(plan.inputs), set(plan.outputs)
    seen, state = set(), set()
    for _, ins in linear_chain(plan):
        if isinstance(ins, DelegateCall):
            n_in = len(plan.delegates[ins.delegate_index].graph.graph.input_ids) \
                if plan.delegates[ins.delegate_index].graph else len(ins.args)
            reads, writes = ins.args[:n_in], ins.args[n_in:]
        elif isinstance(ins, KernelCall):
            args = kernel_op(plan, ins).args
            reads, writes = args[:-1], args[-1:]
        else:
            continue
        for vid in reads:
            v = plan.values[vid]
            if vid not in seen and vid not in inputs and vid not in outputs and \
                    isinstance(v, PlanTensor) and v.memory_id is not None and \
                    v.data_buffer_idx == 0 and not v.external:
                state.add(vid)
        seen.update(reads)
        seen.update(writes)
    return state


_ZEROS = bytes(1 << 20)


def all_zero(data) -> bool:
    """Whether bytes-like ``data`` is all zero bytes, compared a slice at a time (no copy
    of a large KV cache)."""
    view = memoryview(data).cast("B")
    step = len(_ZEROS)
    return all(view[i:i + step] == _ZEROS[:min(step, len(view) - i)]
               for i in range(0, len(view), step))


class State:
    """The buffers ``reset`` restores: (buffer, size, initial bytes or None for zeros,
    label); each buffer holds that state alone (reset clears all of it)."""

    def __init__(self, device):
        self.device = device
        self.entries: list = []

    def add(self, buf, size: int, initial=None, label: str = "") -> None:
        if initial is not None and all_zero(initial):
            initial = None  # zeros: nothing to keep
        self.entries.append((buf, size, None if initial is None else bytes(initial), label))

    def labels(self) -> list[str]:
        return [label for _, _, _, label in self.entries]

    def reset(self) -> None:
        # zeros are cleared on the GPU, not uploaded: SmolLM2's KV caches are 47 MB, which
        # the page sent to Chromium's GPU process at each reset (a 16-token prefill after
        # one took 39 ms on an H100 against 5 natively)
        self.device.clear_buffers([buf for buf, _, initial, _ in self.entries
                                   if initial is None])
        for buf, _, initial, _ in self.entries:
            if initial:
                self.device.write_buffer(buf, initial + bytes(-len(initial) % 4))
