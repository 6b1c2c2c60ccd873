"""A description of a program for people (text) and tools (JSON, schema below).

JSON schema ``pte-webgpu.inspect/1`` (documented in docs/inspect.md): keys are
only ever added, never renamed or removed, within one schema version.
"""

from __future__ import annotations

import struct

from .. import formats
from ..errors import PteError
from ..model.graph import ListValue, Null, Scalar, TensorValue
from ..model.plan_graph import kernel_op_name
from ..model.program_file import PlanTensor
from ..ops.registry import kernel_choices, supported_ops
from ..runtime.half import program_can_use_half
from ..runtime.storage import WIDE

SCHEMA = "pte-webgpu.inspect/1"
FIRST_VALUES = 6


def describe(program, file_name: str = "", file_size: int | None = None) -> dict:
    """The inspect report of an opened program (see formats.open_program)."""
    h = program.header
    return {
        "schema": SCHEMA,
        "file": {"name": file_name, "size": file_size if file_size is not None
                 else len(program.data)},
        "program_version": program.version,
        "extended_header": None if h is None else {
            "header_length": h.header_length, "program_size": h.program_size,
            "segment_base_offset": h.segment_base_offset,
            "segment_data_size": h.segment_data_size},
        "segments": [{"index": i, "offset": s.offset, "size": s.size,
                      "file_offset": s.file_offset} for i, s in enumerate(program.segments)],
        "named_data": [{"key": k, "segment_index": i, "size": program.segments[i].size}
                       for k, i in program.named_data.items()],
        "data_files": [{"name": f.name, "keys": sorted(f.named_data)}
                       for f in program.named.data_files],
        "plans": [_plan(program, p) for p in program.plans],
        "notes": _notes(program),
    }


def _notes(program) -> list[str]:
    """How the runtime will treat this program, where that differs from the file."""
    graphs = [d.graph.graph for p in program.plans for d in p.delegates if d.graph]
    values = [v for g in graphs for v in g.values] + [v for p in program.plans for v in p.values]
    notes = WIDE.notes(values)
    if any("float16" in n for n in notes) and program_can_use_half(program):
        notes = ["float16 tensors stay float16 on adapters with shader-f16 (kernels accumulate "
                 "in float32), else are stored and computed as float32 (converted at "
                 "upload/download)" if "float16" in n else n for n in notes]
    return notes


def _plan(program, plan) -> dict:
    return {
        "name": plan.name,
        "inputs": plan.inputs,
        "outputs": plan.outputs,
        "non_const_buffer_sizes": plan.non_const_buffer_sizes,
        "values": [dict(id=i, **value_json(v)) for i, v in enumerate(plan.values)],
        "operators": [{"name": n, "overload": o} for n, o in plan.operators],
        "instructions": [dict(index=i, **_instruction(plan, ins))
                         for i, ins in enumerate(plan.instructions)],
        "delegates": [_delegate(program, i, d) for i, d in enumerate(plan.delegates)],
    }


def _runs_on(op_name: str) -> str:
    """Where pte-webgpu runs an op: on the GPU, or nowhere yet."""
    return "gpu" if op_name in supported_ops() else "unsupported"


def _instruction(plan, ins) -> dict:
    out = {"kind": ins.kind}
    if ins.kind == "kernel":
        name, overload = plan.operators[ins.op_index]
        out.update(op_index=ins.op_index, op=f"{name}.{overload}", args=list(ins.args),
                   runs_on=_runs_on(kernel_op_name(name, overload)))
    elif ins.kind == "delegate":
        out.update(delegate_index=ins.delegate_index, args=list(ins.args))
    elif ins.kind == "move":
        out.update(move_from=ins.move_from, move_to=ins.move_to)
    elif ins.kind == "jump_false":
        out.update(cond_value_index=ins.cond_value_index,
                   destination_instruction=ins.destination_instruction)
    else:
        out.update(value_index=ins.value_index)
    return out


def value_json(v) -> dict:
    if isinstance(v, TensorValue):
        return {"kind": "tensor", "dtype": v.dtype.name, "shape": list(v.shape),
                "constant_id": v.constant_id, "mem_obj_id": v.mem_obj_id,
                "staging_dtype": v.staging_dtype.name if v.staging_dtype else None,
                "storage_type": v.storage_type, "memory_layout": v.memory_layout}
    if isinstance(v, PlanTensor):
        return {"kind": "tensor", "dtype": v.dtype.name if v.dtype else f"code{v.scalar_type}",
                "shape": list(v.sizes), "dim_order": list(v.dim_order),
                "data_buffer_idx": v.data_buffer_idx, "memory_id": v.memory_id,
                "memory_offset": v.memory_offset, "shape_dynamism": v.shape_dynamism,
                "external": v.external}
    if isinstance(v, Scalar):
        return {"kind": v.kind, "value": v.value}
    if isinstance(v, ListValue):
        return {"kind": v.kind, "items": list(v.items)}
    assert isinstance(v, Null)
    return {"kind": "null"}


def _delegate(program, index: int, d) -> dict:
    out = {"index": index, "id": d.id, "location": d.location, "data_index": d.index,
           "size": len(d.blob), "compile_specs": {k: v.hex() for k, v in d.compile_specs.items()}}
    vk = d.graph
    if vk is None:
        return out
    g, h = vk.graph, vk.header
    out["vulkan"] = {
        "header": {"header_size": h.header_size, "flatbuffer_offset": h.flatbuffer_offset,
                   "flatbuffer_size": h.flatbuffer_size, "bytes_offset": h.bytes_offset,
                   "bytes_size": h.bytes_size},
        "version": g.version,
        "input_ids": g.input_ids,
        "output_ids": g.output_ids,
        "values": [dict(id=i, **value_json(v)) for i, v in enumerate(g.values)],
        "ops": [{"index": i, "name": op.name, "node_id": op.node_id, "runs_on": _runs_on(op.name),
                 "args": [{"id": a, "kind": g.values[a].kind} for a in op.args],
                 "kernel_choices": kernel_choices(g, op)}
                for i, op in enumerate(g.ops)],
        "constants": [_constant(program, vk, c) for c in g.constants],
    }
    return out


def _constant(program, vk, ref) -> dict:
    users = [v for v in vk.graph.values if isinstance(v, TensorValue) and
             v.constant_id == ref.index]
    out = {"index": ref.index, "source": ref.source, "offset": ref.offset,
           "length": ref.length, "named_key": ref.named_key}
    tensor = users[0] if users else None
    nbytes = tensor.nbytes if tensor else ref.length
    try:
        found = formats.resolve(ref, nbytes, program.named, vk.constant_bytes)
    except PteError as e:
        out.update(resolves_to=None, error=str(e))
        return out
    out["resolves_to"] = found.source
    if tensor is not None and tensor.dtype.struct_code:
        n = min(FIRST_VALUES, tensor.numel)
        code = "<%d%s" % (n, tensor.dtype.struct_code)
        out["first_values"] = list(struct.unpack_from(code, found.data, 0))
    return out


def render_text(report: dict) -> str:
    """The report as indented text for a terminal."""
    lines = [f"# {report['file']['name']} ({report['file']['size']} bytes)"]
    h = report["extended_header"]
    lines.append("extended header: none" if h is None else
                 "extended header eh00: " + " ".join(f"{k}={v}" for k, v in h.items()))
    lines.append(f"segments ({len(report['segments'])}):")
    lines += [f"  [{s['index']}] offset={s['offset']} size={s['size']} "
              f"file_offset={s['file_offset']}" for s in report["segments"]]
    lines.append(f"named data ({len(report['named_data'])}):")
    lines += [f"  {n['key']} -> segment {n['segment_index']} ({n['size']} bytes)"
              for n in report["named_data"]]
    lines += [f"note: {n}" for n in report["notes"]]
    for f in report["data_files"]:
        lines.append(f"data file {f['name']}: {len(f['keys'])} keys")
    for p in report["plans"]:
        lines.append(f"plan {p['name']!r}: inputs={p['inputs']} outputs={p['outputs']}")
        lines.append(f"  values ({len(p['values'])}):")
        lines += ["    %" + _value_line(v) for v in p["values"]]
        lines.append(f"  instructions ({len(p['instructions'])}):")
        for ins in p["instructions"]:
            detail = {k: v for k, v in ins.items() if k not in ("index", "kind")}
            lines.append(f"    [{ins['index']}] {ins['kind']} " +
                         " ".join(f"{k}={v}" for k, v in detail.items()))
        for d in p["delegates"]:
            lines.append(f"  delegate {d['index']}: {d['id']} ({d['location']} "
                         f"{d['data_index']}, {d['size']} bytes) compile_specs="
                         f"{d['compile_specs'] or '{}'}")
            vk = d.get("vulkan")
            if not vk:
                continue
            hd = vk["header"]
            lines.append("    VH00 " + " ".join(f"{k}={v}" for k, v in hd.items()))
            lines.append(f"    VkGraph version={vk['version']!r} inputs={vk['input_ids']} "
                         f"outputs={vk['output_ids']}")
            lines += ["      %" + _value_line(v) for v in vk["values"]]
            lines.append(f"    ops ({len(vk['ops'])}):")
            for op in vk["ops"]:
                args = ", ".join(f"%{a['id']}:{a['kind']}" for a in op["args"])
                choice = "".join(f"\n          kernel on {a}: {v}"
                                 for a, v in op["kernel_choices"].items())
                lines.append(f"      [{op['index']}] {op['name']}({args})  -> {op['runs_on']}"
                             + choice)
            lines.append(f"    constants ({len(vk['constants'])}):")
            for c in vk["constants"]:
                where = c.get("resolves_to") or "UNRESOLVED: " + c.get("error", "")
                first = c.get("first_values")
                first = " first=" + " ".join(f"{x:.6g}" for x in first) if first else ""
                key = f" key={c['named_key']}" if c["named_key"] else f" offset={c['offset']}"
                lines.append(f"      #{c['index']} {c['length']} bytes{key} -> {where}{first}")
    return "\n".join(lines)


def _value_line(v: dict) -> str:
    head = f"{v['id']} {v['kind']}"
    if v["kind"] == "tensor":
        extra = "".join(f" {k}={v[k]}" for k in ("constant_id", "mem_obj_id", "memory_id")
                        if k in v and v[k] not in (None, -1))
        return f"{head} {v['dtype']}{_short(v['shape'])}{extra}"
    if "value" in v:
        return f"{head} {v['value']!r}"
    if "items" in v:
        return f"{head} {_short(v['items'])}"
    return head


def _short(items: list, keep: int = 32) -> str:
    """A list for the text report; a crafted file's 100k-item list stays one short line
    (--json keeps every item)."""
    if len(items) <= keep:
        return str(items)
    return str(items[:keep])[:-1] + f", ... {len(items) - keep} more]"
