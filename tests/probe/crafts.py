"""Editing helpers for crafted programs: real fixtures changed at the flatbuffer level
(tests/fuzz/ptefile.py), one meaning at a time, everything else left as exported."""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from pathlib import Path

from tests.fuzz.ptefile import Pte

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"

# union codes (program.fbs KernelTypes / InstructionArguments, vkgraph.fbs GraphTypes)
PV_INT, PV_BOOL, PV_DOUBLE, PV_TENSOR = 2, 3, 4, 5
KERNEL, DELEGATE, MOVE, JUMP_FALSE, FREE = 1, 2, 3, 4, 5
GV_INT, GV_DOUBLE, GV_BOOL, GV_TENSOR, GV_INT_LIST, GV_VALUE_LIST = 2, 3, 4, 5, 6, 9
F32, F16, F64, I32 = 6, 5, 7, 3  # ScalarType codes
VK_BOOL, VK_INT32, VK_F32, VK_F64 = 0, 3, 5, 6  # VkDataType codes


def fixture_path(name: str) -> Path:
    path = FIXTURES / f"{name}.pte"
    return path if path.exists() else FIXTURES / "extra" / f"{name}.pte"


def load(name: str) -> tuple[Pte, list[tuple[str, bytes]]]:
    path = fixture_path(name)
    summary = json.loads(path.with_suffix(".json").read_text())
    ptds = [(Path(p).name, (path.parent / p).read_bytes()) for p in summary["ptd_files"]]
    return Pte.parse(path.read_bytes()), ptds


@dataclass
class Crafted:
    """A program to load: bytes, .ptd files and the Runtime options to load it with."""

    pte: bytes
    ptds: list = field(default_factory=list)
    options: dict = field(default_factory=dict)


# --- plan ------------------------------------------------------------------------------
def instructions(p: Pte) -> list:
    return p.plan()["chains"][0]["instructions"]


def instruction(kind: int, **args) -> dict:
    return {"instr_args_type": kind, "instr_args": args}


def delegate_call(p: Pte, index: int = 0) -> dict:
    return [i for i in instructions(p) if i["instr_args_type"] == DELEGATE][index]["instr_args"]


def plan_values(p: Pte) -> list:
    return p.plan()["values"]


def plan_tensor(p: Pte, vid: int) -> dict:
    return plan_values(p)[vid]["val"]


def add_plan_value(p: Pte, val_type: int, val: dict) -> int:
    plan_values(p).append({"val_type": val_type, "val": val})
    return len(plan_values(p)) - 1


def add_plan_tensor(p: Pte, sizes, scalar_type: int = F32, **extra) -> int:
    return add_plan_value(p, PV_TENSOR, dict(scalar_type=scalar_type, sizes=list(sizes),
                                             dim_order=bytearray(range(len(sizes))), **extra))


def add_named_data(p: Pte, key: str, data: bytes) -> None:
    p.segments.append(bytes(data))
    p.program.setdefault("named_data", []).append(
        {"key": key.encode(), "segment_index": len(p.segments) - 1})


# --- the (first) Vulkan graph ----------------------------------------------------------
def graph_values(p: Pte) -> list:
    return p.graph()["values"]


def graph_value(p: Pte, vid: int) -> dict:
    return graph_values(p)[vid]["value"]


def graph_ops(p: Pte) -> list:
    return p.graph()["chain"]


def op(p: Pte, name: str) -> dict:
    return next(o for o in graph_ops(p) if name in o["name"].decode())


def add_graph_value(p: Pte, value_type: int, value: dict) -> int:
    graph_values(p).append({"value_type": value_type, "value": value})
    return len(graph_values(p)) - 1


def scalar_ids(p: Pte, value_type: int) -> list[int]:
    return [i for i, v in enumerate(graph_values(p)) if v.get("value_type") == value_type]


def named_segment(p: Pte, key: bytes) -> int:
    return next(n["segment_index"] for n in p.program["named_data"] if n["key"] == key)


def f32(n: int, start: float = 0.5) -> bytes:
    return struct.pack(f"<{n}f", *(start + 0.25 * i for i in range(n)))
