"""Parse the fixture ``NAME.txt`` dumps (written by executorch's own deserializers).

The dumps are the independent reference the readers are checked against, so the
parser is strict: a line it does not recognise is an error, not silently skipped.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

_INTS = re.compile(r"-?\d+")


def ints(text: str) -> list[int]:
    return [int(x) for x in _INTS.findall(text)]


def kv(text: str) -> dict[str, str]:
    """``a=1 b=foo`` -> {"a": "1", "b": "foo"} (values without spaces)."""
    return dict(re.findall(r"(\w+)=(\S+)", text))


@dataclass
class FirstValues:
    dtype: str  # "FLOAT32", "FLOAT16"
    dims: list[int]
    n: int
    values: list[str]  # as printed, so the test can derive the printed precision


@dataclass
class DumpConstant:
    index: int
    inline: bool
    offset: int | None  # None for UINT64_MAX (named)
    length: int
    named_key: str | None
    target: str  # "inline", "pte" or "external"
    target_file: str | None = None  # the .ptd base name for "external"
    pte_segment_size: int | None = None
    inline_range: tuple[int, int] | None = None  # blob[a:b]
    first: FirstValues | None = None


@dataclass
class DumpOpArg:
    id: int
    kind: str  # Tensor, Double, Int, IntList, Bool, None, ...
    const_id: int | None = None


@dataclass
class DumpDelegate:
    index: int
    id: str
    location: str
    data_index: int
    compile_specs: dict[str, str] = field(default_factory=dict)
    blob_size: int = 0
    magic: bytes = b""
    vh00: dict[str, int] = field(default_factory=dict)
    version: str = ""
    input_ids: list[int] = field(default_factory=list)
    output_ids: list[int] = field(default_factory=list)
    values: list[dict] = field(default_factory=list)
    chain_names: list[str] = field(default_factory=list)
    ops: list[tuple[str, list[DumpOpArg]]] = field(default_factory=list)
    constants: list[DumpConstant] = field(default_factory=list)


@dataclass
class DumpPlan:
    name: str
    inputs: list[int] = field(default_factory=list)
    outputs: list[int] = field(default_factory=list)
    non_const_buffer_sizes: list[int] = field(default_factory=list)
    values: list[dict] = field(default_factory=list)
    operators: list[str] = field(default_factory=list)
    instructions: list[dict] = field(default_factory=list)
    delegates: list[DumpDelegate] = field(default_factory=list)


@dataclass
class DumpPtd:
    name: str
    size: int
    identifier: bytes
    fh: dict[str, int] = field(default_factory=dict)
    version: int = 0
    segments: list[tuple[int, int, int]] = field(default_factory=list)
    named_data: list[tuple[str, int]] = field(default_factory=list)


@dataclass
class Dump:
    file_size: int = 0
    root_offset: int = 0
    identifier: bytes = b""
    eh00: dict[str, int] | None = None
    version: int = 0
    segments: list[tuple[int, int, int]] = field(default_factory=list)  # offset, size, abs
    named_data: list[tuple[str, int, int]] = field(default_factory=list)  # key, seg, size
    ptd_files: list[DumpPtd] = field(default_factory=list)
    plans: list[DumpPlan] = field(default_factory=list)


def _value(body: str) -> dict:
    """A value line after ``%N `` / ``[N] ``."""
    kind, _, rest = body.partition(" ")
    rest = rest.strip()
    if kind == "VkTensor":
        f = kv(rest)
        return {"kind": "tensor", "dtype": f["dtype"], "dims": ints(re.search(
            r"dims=\[([^\]]*)\]", rest).group(1)), "constant_id": int(f["constant_id"]),
            "mem_obj_id": int(f["mem_obj_id"]), "storage": f["storage"],
            "layout": f["layout"], "staging": f["staging"]}
    if kind == "Tensor":
        m = re.fullmatch(r"(\w+) sizes=\[([^\]]*)\] dim_order=\[([^\]]*)\] data_buffer_idx=(\d+)"
                         r"(?: alloc\(mem_id=(\d+),off=(\d+)\))?", rest)
        assert m, body
        return {"kind": "tensor", "scalar_type": m.group(1), "sizes": ints(m.group(2)),
                "dim_order": ints(m.group(3)), "data_buffer_idx": int(m.group(4)),
                "memory_id": None if m.group(5) is None else int(m.group(5)),
                "memory_offset": 0 if m.group(6) is None else int(m.group(6))}
    if kind == "Double":
        return {"kind": "double", "text": rest, "value": float(rest)}
    if kind == "Int":
        return {"kind": "int", "value": int(rest)}
    if kind == "Bool":
        assert rest in ("True", "False"), body
        return {"kind": "bool", "value": rest == "True"}
    if kind == "Null":
        return {"kind": "null"}
    if kind in ("IntList", "DoubleList", "BoolList", "ValueList"):
        snake = {"IntList": "int_list", "DoubleList": "double_list", "BoolList": "bool_list",
                 "ValueList": "value_list"}[kind]
        return {"kind": snake, "items": list(ast.literal_eval(rest))}
    if kind == "String":
        return {"kind": "string", "value": ast.literal_eval(rest)}
    raise ValueError(f"unknown value line: {body!r}")


def _op_args(text: str) -> list[DumpOpArg]:
    out = []
    for m in re.finditer(r"%(\d+):(\w+)(?:\[[^\]]*\]\w*)?(?:,const#(\d+))?", text):
        out.append(DumpOpArg(int(m.group(1)), m.group(2),
                             None if m.group(3) is None else int(m.group(3))))
    return out


def parse_dump(text: str) -> Dump:
    d = Dump()
    plan: DumpPlan | None = None
    dele: DumpDelegate | None = None
    ptd: DumpPtd | None = None
    const: DumpConstant | None = None
    section = "top"
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if m := re.fullmatch(r"# (\S+)\s+\((\d+) bytes\)", line):
            d.file_size = int(m.group(2))
        elif m := re.fullmatch(r"flatbuffer root offset=(\d+) file_identifier=(b'.*')", line):
            d.root_offset, d.identifier = int(m.group(1)), ast.literal_eval(m.group(2))
        elif line.startswith("extended header:"):
            if "magic=" in line:
                f = kv(line)
                d.eh00 = {"header_length": int(f["length"]),
                          "program_size": int(f["program_size"]),
                          "segment_base_offset": int(f["segment_base_offset"]),
                          "segment_data_size": int(f["segment_data_size"])}
        elif m := re.fullmatch(r"Program\.version=(\d+)", line):
            d.version = int(m.group(1))
        elif line.startswith(("constant_buffer ", "backend_delegate_data ")):
            pass  # neither is used by these fixtures (entries=0), checked by the test
        elif m := re.fullmatch(r"segments \((\d+)\):", line):
            section = "segments"
        elif m := re.fullmatch(r"segment\[(\d+)\] offset=(\d+) size=(\d+) \(abs file offset (\d+)\)",
                               line):
            seg = (int(m.group(2)), int(m.group(3)), int(m.group(4)))
            (ptd.segments if section == "ptd" else d.segments).append(seg)
        elif re.fullmatch(r"named_data \((\d+)\):", line):
            section = "named"
        elif m := re.fullmatch(r"key=(\S+) segment_index=(\d+) size=(\d+)", line):
            d.named_data.append((m.group(1), int(m.group(2)), int(m.group(3))))
        elif re.fullmatch(r"external \.ptd files \((\d+)\):", line):
            section = "ptd"
        elif m := re.fullmatch(r"file (\S+): (\d+) bytes, flatbuffer id=(b'.*')", line):
            ptd = DumpPtd(m.group(1), int(m.group(2)), ast.literal_eval(m.group(3)))
            d.ptd_files.append(ptd)
        elif line.startswith("FH header:"):
            f = kv(line)
            ptd.fh = {k: int(v) for k, v in f.items() if k != "magic"}
            ptd.fh["magic"] = ast.literal_eval(f["magic"])
        elif m := re.fullmatch(r"FlatTensor version=(\d+)", line):
            ptd.version = int(m.group(1))
        elif m := re.fullmatch(r"named_data key=(\S+) segment_index=(\d+) layout=None", line):
            ptd.named_data.append((m.group(1), int(m.group(2))))
        elif m := re.fullmatch(r"== execution_plan\[(\d+)\] name='(.*)'", line):
            plan = DumpPlan(m.group(2))
            d.plans.append(plan)
            dele, section = None, "plan"
        elif m := re.fullmatch(r"inputs=\[(.*)\] outputs=\[(.*)\] non_const_buffer_sizes=\[(.*)\]",
                               line):
            plan.inputs, plan.outputs = ints(m.group(1)), ints(m.group(2))
            plan.non_const_buffer_sizes = ints(m.group(3))
        elif re.fullmatch(r"values \((\d+)\):", line):
            pass
        elif m := re.fullmatch(r"\[(\d+)\] (.*)", line):
            assert int(m.group(1)) == len(plan.values), line
            plan.values.append(_value(m.group(2)))
        elif m := re.fullmatch(r"operators \(non-delegated kernels\): (\[.*\])", line):
            plan.operators = ast.literal_eval(m.group(1))
        elif re.fullmatch(r"chain\[(\d+)\] inputs=\[\] outputs=\[\]", line):
            pass
        elif m := re.fullmatch(r"instr\[(\d+)\] DelegateCall delegate=(\d+) \((\w+)\) args=\[(.*)\]",
                               line):
            plan.instructions.append({"kind": "delegate", "delegate_index": int(m.group(2)),
                                      "backend": m.group(3), "args": ints(m.group(4))})
        elif m := re.fullmatch(r"instr\[(\d+)\] KernelCall op=(\S+) args=\[(.*)\]", line):
            plan.instructions.append({"kind": "kernel", "op": m.group(2),
                                      "args": ints(m.group(3))})
        elif m := re.fullmatch(r"-- delegate\[(\d+)\] id=(\w+) processed=\((\w+), index=(\d+)\)",
                               line):
            dele = DumpDelegate(int(m.group(1)), m.group(2), m.group(3).lower(), int(m.group(4)))
            plan.delegates.append(dele)
            const = None
        elif m := re.fullmatch(r"compile_spec (\S+) = ([0-9a-f]*)", line):
            dele.compile_specs[m.group(1)] = m.group(2)
        elif m := re.fullmatch(r"blob: (\d+) bytes, first 4 bytes=\w+, magic=(b'.*')", line):
            dele.blob_size, dele.magic = int(m.group(1)), ast.literal_eval(m.group(2))
        elif line.startswith("VH00 header:"):
            dele.vh00 = {k: int(v) for k, v in kv(line).items()}
        elif line.startswith("VkGraph flatbuffer file_identifier="):
            assert line.endswith("b'VK00'"), line
        elif m := re.fullmatch(r"VkGraph version='(.*?)' .*", line):
            dele.version = m.group(1)
        elif m := re.fullmatch(r"input_ids=\[(.*)\] output_ids=\[(.*)\]", line):
            dele.input_ids, dele.output_ids = ints(m.group(1)), ints(m.group(2))
        elif m := re.fullmatch(r"%(\d+) (.*)", line):
            assert int(m.group(1)) == len(dele.values), line
            dele.values.append(_value(m.group(2)))
        elif m := re.fullmatch(r"chain \((\d+) ops\): (\[.*\])", line):
            dele.chain_names = ast.literal_eval(m.group(2))
            assert len(dele.chain_names) == int(m.group(1))
        elif m := re.fullmatch(r"node (\d+): ([\w.]+)\((.*)\)", line):
            assert int(m.group(1)) == len(dele.ops), line
            dele.ops.append((m.group(2), _op_args(m.group(3))))
        elif re.fullmatch(r"constants \((\d+)\):", line):
            pass
        elif m := re.fullmatch(r"const\[(\d+)\] offset=UINT64_MAX length=(\d+) named_key=(\S+) "
                               r"-> (.*)", line):
            const = DumpConstant(int(m.group(1)), False, None, int(m.group(2)), m.group(3), "")
            target = m.group(4)
            if t := re.fullmatch(r"external (\S+)", target):
                const.target, const.target_file = "external", t.group(1).rsplit("/", 1)[-1]
            elif t := re.fullmatch(r"PTE named_data \(segment size (\d+)\)", target):
                const.target, const.pte_segment_size = "pte", int(t.group(1))
            else:
                raise ValueError(f"unknown constant target: {line!r}")
            dele.constants.append(const)
        elif m := re.fullmatch(r"const\[(\d+)\] INLINE offset=(\d+) length=(\d+) named_key='' "
                               r"-> blob\[(\d+):(\d+)\]", line):
            const = DumpConstant(int(m.group(1)), True, int(m.group(2)), int(m.group(3)), None,
                                 "inline", inline_range=(int(m.group(4)), int(m.group(5))))
            dele.constants.append(const)
        elif m := re.fullmatch(r"as (\w+)\[([^\]]*)\]: n=(\d+) first=\[(.*)\]", line):
            const.first = FirstValues(m.group(1), ints(m.group(2)), int(m.group(3)),
                                      m.group(4).split())
        else:
            raise ValueError(f"dump line not understood: {raw!r}")
    return d
