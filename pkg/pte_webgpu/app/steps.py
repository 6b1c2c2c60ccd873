"""How an inputs ``.npz`` maps to calls of one loaded method (``pte-webgpu run``).

* ``stepK_inJ`` arrays: steps K = 0, 1, ... in order on the same method (its state, e.g.
  a KV cache, carries over); step K's outputs are written as ``stepK_outJ``.
* ``seq_inJ`` arrays (leading axis = step): the same, one call per row; the outputs are
  stacked along a new leading axis as ``seq_outJ``.
* otherwise ``inJ`` -> ``outJ``, one call.

Pure Python on ``pte_webgpu.Tensor`` objects (no numpy in an offline Pyodide).
"""

from __future__ import annotations

import re

from ..errors import InputError
from ..model.tensor import Tensor

_STEP = re.compile(r"^step(\d+)_in(\d+)$")
_SEQ = re.compile(r"^seq_in(\d+)$")
_ONE = re.compile(r"^in(\d*)$")


def _ordered(found: dict, what: str) -> list:
    """Values of ``{index: value}`` for 0..n-1; a gap is an error naming it."""
    missing = [i for i in range(len(found)) if i not in found]
    if missing:
        raise InputError(f"inputs .npz: {what} {missing[0]} is missing (found "
                         f"{sorted(found)})")
    return [found[i] for i in range(len(found))]


def plan_calls(arrays: dict) -> tuple[str, list[list]]:
    """(mode, one input list per call); mode is "steps", "seq" or "single"."""
    steps: dict = {}
    for name, value in arrays.items():
        m = _STEP.match(name)
        if m:
            steps.setdefault(int(m.group(1)), {})[int(m.group(2))] = value
    if steps:
        return "steps", [_ordered(ins, f"input of step {k}") for k, ins in
                         enumerate(_ordered(steps, "step"))]
    seq = {int(m.group(1)): v for n, v in arrays.items() if (m := _SEQ.match(n))}
    if seq:
        seq_list = _ordered(seq, "seq_in")
        count = {t.shape[0] if t.shape else None for t in seq_list}
        if len(count) != 1 or None in count:
            raise InputError("inputs .npz: every seq_inJ needs the same leading (step) axis; "
                             f"found shapes {[list(t.shape) for t in seq_list]}")
        n = count.pop()
        return "seq", [[_row(t, k) for t in seq_list] for k in range(n)]
    one = {int(m.group(1) or 0): v for n, v in arrays.items() if (m := _ONE.match(n))}
    return "single", [_ordered(one, "in") if one else []]


def is_output_name(name: str) -> bool:
    return bool(re.match(r"^(out\d+|step\d+_out\d+|seq_out\d+)$", name))


def _row(t: Tensor, k: int) -> Tensor:
    size = t.nbytes // t.shape[0] if t.shape[0] else 0
    return Tensor(t.memoryview()[k * size:(k + 1) * size], t.shape[1:], t.dtype)


def name_outputs(mode: str, results: list[list]) -> dict:
    """Output arrays by name for the calls' ``results`` (one list of Tensors per call)."""
    if mode == "single":
        return {f"out{j}": t for j, t in enumerate(results[0])}
    if mode == "steps":
        return {f"step{k}_out{j}": t for k, outs in enumerate(results)
                for j, t in enumerate(outs)}
    named = {}
    for j in range(len(results[0]) if results else 0):
        parts = [outs[j] for outs in results]
        shapes = {tuple(p.shape) for p in parts}
        if len(shapes) != 1:
            raise InputError(f"seq_out{j} cannot be stacked: its shape changes between steps "
                             f"({sorted(shapes)}); use stepK_inJ inputs")
        data = b"".join(p.tobytes() for p in parts)
        named[f"seq_out{j}"] = Tensor(data, (len(parts),) + shapes.pop(), parts[0].dtype)
    return named
