"""What a method records at load and how it is encoded: buffers, the steps (dispatches
and copies) of a Recording, pass_plan (the one encoding rule both backends follow) and
fold_grid (a grid beyond one dimension's limit folded to two)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import GpuLimitError


@dataclass
class Buffer:
    handle: object
    size: int
    label: str


@dataclass(frozen=True)
class Dispatch:
    pipeline: object
    bind_group: object
    grid: tuple[int, int, int]
    label: str


@dataclass(frozen=True)
class Copy:
    src: Buffer
    dst: Buffer
    size: int
    label: str


@dataclass
class Recording:
    """Work recorded at load: passes of dispatches separated by copies."""

    steps: list = field(default_factory=list)  # Dispatch | Copy, in order
    # a backend's own form of ``steps`` (the browser's JS arrays), checked against them
    # before each use: whoever changes ``steps`` need not know it is there
    encoded: object = field(default=None, repr=False, compare=False)


# What encoding a recording does, step by step: pass_plan's (op, index) pairs.
BEGIN, DISPATCH, END, COPY = range(4)


def pass_plan(steps):
    """The one rule for encoding ``steps`` (both backends, the browser's JS replay too):
    (op, index in ``steps``) pairs. Consecutive dispatches share one compute pass (WebGPU
    orders dispatches within a pass); a copy ends the pass; a dispatch with an empty grid
    (an unused alternative) is left out, and no pass begins for dispatches all left out."""
    open_pass = False
    for index, step in enumerate(steps):
        if type(step) is Copy:
            if open_pass:
                yield END, -1
                open_pass = False
            yield COPY, index
            continue
        grid = step.grid
        if not (grid[0] and grid[1] and grid[2]):
            continue
        if not open_pass:
            yield BEGIN, -1
            open_pass = True
        yield DISPATCH, index
    if open_pass:
        yield END, -1


def dispatch_runs(steps) -> list[list]:
    """The runs of dispatches that ``pass_plan`` puts in one compute pass each (timing
    tools replay them pass by pass)."""
    runs = []
    for op, index in pass_plan(steps):
        if op == BEGIN:
            runs.append([])
        elif op == DISPATCH:
            runs[-1].append(steps[index])
    return runs


def align4(n: int) -> int:
    return max(4, (n + 3) & ~3)


def fold_grid(groups: int, max_per_dim: int) -> tuple[int, int, int]:
    """Workgroup grid for ``groups`` workgroups; beyond one dimension's limit, fold to 2-D.

    Shaders recover the flat workgroup index as ``wid.x + wid.y * nwg.x`` and
    skip indices >= groups.
    """
    if groups <= max_per_dim:
        return (max(groups, 1), 1, 1)
    # A near-square fold wastes at most one partial row of workgroups.
    x = min(max_per_dim, math.isqrt(groups - 1) + 1)
    y = -(-groups // x)
    if y > max_per_dim:
        raise GpuLimitError(f"{groups} workgroups exceed {max_per_dim} x {max_per_dim}")
    return (x, y, 1)
