"""Every real fixture parses, and agrees with executorch's own dumps (.txt) and summaries (.json).

Expected values are read from ``tests/fixtures/NAME.txt`` (dump_parser.py) and
``NAME.json``; nothing about the fixtures is hard-coded here.
"""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

import pytest
from pte_webgpu import formats
from pte_webgpu.app import describe
from pte_webgpu.errors import MissingDataError
from pte_webgpu.formats import NamedData, read_flat_tensor, resolve
from pte_webgpu.formats._generated import program_generated as pfb
from pte_webgpu.formats._generated import vkgraph_generated as vfb
from pte_webgpu.model import dtypes
from pte_webgpu.model.graph import ListValue, Null, Scalar, TensorValue
from pte_webgpu.model.program_file import DelegateCall, KernelCall

from tests.unit.dump_parser import parse_dump

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
NAMES = sorted(p.stem for p in FIXTURES.glob("*.pte"))
VALUE_KIND = {"Tensor": "tensor", "Double": "double", "Int": "int", "IntList": "int_list",
              "Bool": "bool", "None": "null", "DoubleList": "double_list",
              "BoolList": "bool_list", "ValueList": "value_list", "SymInt": "symint",
              "String": "string"}


def test_fixture_set_is_complete():
    index = json.loads((FIXTURES / "index.json").read_text())
    assert sorted(e["name"] for e in index) == NAMES
    assert len(NAMES) == 24


def ptd_paths(name: str) -> list[Path]:
    summary = json.loads((FIXTURES / f"{name}.json").read_text())
    return [FIXTURES / p for p in summary["ptd_files"]]


def load(name: str):
    pte = (FIXTURES / f"{name}.pte").read_bytes()
    files = [(p.name, p.read_bytes()) for p in ptd_paths(name)]
    return pte, files, formats.open_program(pte, files)


@pytest.fixture(scope="module", params=NAMES)
def case(request):
    name = request.param
    pte, files, program = load(name)
    dump = parse_dump((FIXTURES / f"{name}.txt").read_text())
    summary = json.loads((FIXTURES / f"{name}.json").read_text())
    return name, pte, files, program, dump, summary


def vk_dtype(name: str):
    return dtypes.FROM_VK_DATATYPE.get(getattr(vfb.VkDataType, name))


def printed_tolerance(text: str) -> float:
    """Half a unit in the last printed digit of ``text`` (e.g. '0.7173' -> 5e-5)."""
    mant, _, exp = text.lower().partition("e")
    decimals = len(mant.split(".")[1]) if "." in mant else 0
    return 0.5 * 10.0 ** (-decimals) * 10.0 ** int(exp or 0) * 1.0001


# --- container ----------------------------------------------------------------------------------

def test_container(case):
    name, pte, _, program, dump, summary = case
    assert len(pte) == dump.file_size == summary["pte_bytes"]
    assert struct.unpack_from("<I", pte, 0)[0] == dump.root_offset
    assert bytes(pte[4:8]) == dump.identifier
    assert program.version == dump.version
    h = program.header
    if dump.eh00 is None:
        assert h is None
    else:
        assert {"header_length": h.header_length, "program_size": h.program_size,
                "segment_base_offset": h.segment_base_offset,
                "segment_data_size": h.segment_data_size} == dump.eh00
    assert [(s.offset, s.size, s.file_offset) for s in program.segments] == dump.segments
    got_named = [(k, i, program.segments[i].size) for k, i in program.named_data.items()]
    assert sorted(got_named) == sorted(dump.named_data)
    assert sorted(program.named_data) == sorted(summary["pte_named_data_keys"])
    for key, _, size in dump.named_data:
        assert len(program.named_bytes(key)) == size


def test_plans(case):
    _, _, _, program, dump, summary = case
    assert [p.name for p in program.plans] == [p.name for p in dump.plans]
    for plan, dplan in zip(program.plans, dump.plans):
        assert plan.inputs == dplan.inputs
        assert plan.outputs == dplan.outputs
        assert plan.non_const_buffer_sizes == dplan.non_const_buffer_sizes
        assert len(plan.values) == len(dplan.values)
        for v, dv in zip(plan.values, dplan.values):
            if dv["kind"] == "tensor":
                assert v.kind == "tensor"
                assert v.scalar_type == getattr(pfb.ScalarType, dv["scalar_type"])
                assert list(v.sizes) == dv["sizes"]
                assert list(v.dim_order) == dv["dim_order"]
                assert v.data_buffer_idx == dv["data_buffer_idx"]
                assert v.memory_id == dv["memory_id"]
                assert v.memory_offset == dv["memory_offset"]
            else:
                check_scalar_value(v, dv)
        assert [f"{n}.{o}" if o else n for n, o in plan.operators] == dplan.operators \
            == summary["non_delegated_ops"]
        assert len(plan.instructions) == len(dplan.instructions)
        for ins, dins in zip(plan.instructions, dplan.instructions):
            assert list(ins.args) == dins["args"]
            if dins["kind"] == "delegate":
                assert isinstance(ins, DelegateCall)
                assert ins.delegate_index == dins["delegate_index"]
                assert plan.delegates[ins.delegate_index].id == dins["backend"]
            else:
                assert isinstance(ins, KernelCall)
                n, o = plan.operators[ins.op_index]
                assert f"{n}.{o}" == dins["op"]


def check_scalar_value(v, dv):
    if dv["kind"] == "null":
        assert isinstance(v, Null)
    elif dv["kind"] in ("int", "bool"):
        assert isinstance(v, Scalar) and v.kind == dv["kind"]
        assert v.value == dv["value"] and type(v.value) is type(dv["value"])
    elif dv["kind"] == "double":
        assert isinstance(v, Scalar) and v.kind == "double"
        # The dump prints the exact double (repr), so equality is exact.
        assert v.value == dv["value"]
        assert repr(v.value) == dv["text"]
    elif dv["kind"] == "string":
        assert isinstance(v, Scalar) and v.value == dv["value"]
    else:
        assert isinstance(v, ListValue) and v.kind == dv["kind"]
        assert list(v.items) == dv["items"]


# --- delegates ----------------------------------------------------------------------------------

def delegate_pairs(program, dump):
    for plan, dplan in zip(program.plans, dump.plans):
        assert len(plan.delegates) == len(dplan.delegates)
        for d, dd in zip(plan.delegates, dplan.delegates):
            yield plan, d, dd


def test_delegates(case):
    _, _, _, program, dump, summary = case
    pairs = list(delegate_pairs(program, dump))
    assert len(pairs) == sum(len(p.delegates) for p in dump.plans) >= 1
    assert len(summary["delegates"]) == len(pairs)
    for (plan, d, dd), sd in zip(pairs, summary["delegates"]):
        assert d.id == dd.id == sd["id"]
        assert d.location == dd.location
        assert d.index == dd.data_index
        assert {k: v.hex() for k, v in d.compile_specs.items()} == dd.compile_specs \
            == sd["compile_specs"]
        assert len(d.blob) == dd.blob_size
        assert bytes(d.blob[4:8]) == dd.magic
        h = d.graph.header
        assert {"header_size": h.header_size, "flatbuffer_offset": h.flatbuffer_offset,
                "flatbuffer_size": h.flatbuffer_size, "bytes_offset": h.bytes_offset,
                "bytes_size": h.bytes_size} == dd.vh00
        g = d.graph.graph
        assert g.version == dd.version
        assert g.input_ids == dd.input_ids == sd["input_ids"]
        assert g.output_ids == dd.output_ids == sd["output_ids"]
        assert len(g.values) == len(dd.values) == sd["n_values"]
        for v, dv in zip(g.values, dd.values):
            if dv["kind"] == "tensor":
                assert isinstance(v, TensorValue)
                assert v.dtype == vk_dtype(dv["dtype"])
                assert list(v.shape) == dv["dims"]
                assert v.constant_id == dv["constant_id"]
                assert v.mem_obj_id == dv["mem_obj_id"]
                assert v.staging_dtype == vk_dtype(dv["staging"])
                assert v.storage_type == getattr(vfb.VkStorageType, dv["storage"])
                assert v.memory_layout == getattr(vfb.VkMemoryLayout, dv["layout"])
            else:
                check_scalar_value(v, dv)
        assert [op.name for op in g.ops] == dd.chain_names == sd["vk_ops"]
        assert len(g.ops) == len(dd.ops)
        for op, (dname, dargs) in zip(g.ops, dd.ops):
            assert op.name == dname
            assert list(op.args) == [a.id for a in dargs]
            for a in dargs:
                assert g.values[a.id].kind == VALUE_KIND[a.kind]
                if a.const_id is not None:
                    assert g.values[a.id].constant_id == a.const_id
        assert len(g.constants) == len(dd.constants) == len(sd["constants"])
        for c, dc, sc in zip(g.constants, dd.constants, sd["constants"]):
            assert c.index == dc.index
            assert c.length == dc.length == sc["length"]
            assert c.named_key == dc.named_key == (sc["named_key"] or None)
            assert c.offset == dc.offset
            assert (2**64 - 1 if c.offset is None else c.offset) == sc["offset"]


def test_constants_resolve_and_decode(case):
    name, pte, files, program, dump, _ = case
    ptd_names = {n for n, _ in files}
    for plan, d, dd in delegate_pairs(program, dump):
        vk = d.graph
        for c, dc in zip(vk.graph.constants, dd.constants):
            users = [v for v in vk.graph.values
                     if isinstance(v, TensorValue) and v.constant_id == c.index]
            assert users, f"{name}: constant {c.index} has no tensor"
            t = users[0]
            assert dc.first is not None
            assert t.dtype == vk_dtype(dc.first.dtype)
            assert list(t.shape) == dc.first.dims and t.numel == dc.first.n
            found = resolve(c, t.nbytes, program.named, vk.constant_bytes)
            assert isinstance(found.data, memoryview) and len(found.data) == t.nbytes
            if dc.target == "inline":
                assert found.source == "inline"
                a, b = dc.inline_range
                assert c.offset == dc.offset and vk.header.bytes_offset + c.offset == a
                assert bytes(found.data) == bytes(d.blob[a:a + t.nbytes])
            elif dc.target == "pte":
                assert found.source == "pte"
                assert len(program.named_bytes(c.named_key)) == dc.pte_segment_size
            else:
                assert found.source == dc.target_file and dc.target_file in ptd_names
            # zero-copy: the view's exporter is the buffer the bytes came from
            origin = pte if found.source in ("inline", "pte") else dict(files)[found.source]
            assert found.data.obj is origin
            n = min(len(dc.first.values), t.numel)
            got = struct.unpack_from(f"<{n}{t.dtype.struct_code}", found.data, 0)
            for g_, text in zip(got, dc.first.values):
                assert math.isclose(g_, float(text), rel_tol=0,
                                    abs_tol=printed_tolerance(text)), (name, c.index, got)
    # the inspect report agrees with the resolution above
    report = describe.describe(program)
    for p in report["plans"]:
        for dj in p["delegates"]:
            for cj in dj["vulkan"]["constants"]:
                assert cj["resolves_to"] is not None, cj


def test_ptd_files(case):
    name, _, files, program, dump, summary = case
    assert [n for n, _ in files] == [Path(p).name for p in summary["ptd_files"]]
    assert sorted(n for n, _ in files) == sorted(p.name for p in dump.ptd_files)
    by_name = {f.name: f for f in program.named.data_files}
    raw = dict(files)
    for dp in dump.ptd_files:
        f = by_name[dp.name]
        assert len(raw[dp.name]) == dp.size
        assert bytes(raw[dp.name][4:8]) == dp.identifier
        h = f.header
        assert dp.fh == {"magic": b"FH01", "length": h.header_length,
                         "flatbuffer_offset": h.flatbuffer_offset,
                         "flatbuffer_size": h.flatbuffer_size,
                         "segment_base_offset": h.segment_base_offset,
                         "segment_data_size": h.segment_data_size}
        assert sorted(f.named_data) == sorted(k for k, _ in dp.named_data)
        for key, seg in dp.named_data:
            _, size, abs_off = dp.segments[seg]
            view = f.get(key)
            assert len(view) == size
            assert view.obj is raw[dp.name]
            assert bytes(view) == raw[dp.name][abs_off:abs_off + size]


# --- resolution order, shards, zero-copy -------------------------------------------------------

def test_extdata_two_shards_each_key_from_its_file():
    name = "block_extdata_1x8x64"
    _, files, program = load(name)
    dump = parse_dump((FIXTURES / f"{name}.txt").read_text())
    assert len(files) == 2 and len(dump.ptd_files) == 2
    owner = {key: p.name for p in dump.ptd_files for key, _ in p.named_data}
    sources = set()
    for _, d, dd in delegate_pairs(program, dump):
        for c, dc in zip(d.graph.graph.constants, dd.constants):
            data, source = program.named.lookup(c.named_key)
            assert source == owner[c.named_key] == dc.target_file
            sources.add(source)
    assert sources == {n for n, _ in files}  # both shards are really used
    # Without one shard, its keys are missing (and named), the others still resolve.
    only_first = formats.open_program((FIXTURES / f"{name}.pte").read_bytes(), files[:1])
    for key, src in owner.items():
        if src == files[0][0]:
            assert only_first.named.lookup(key)[1] == src
        else:
            with pytest.raises(MissingDataError) as e:
                only_first.named.lookup(key)
            assert e.value.key == key and key in str(e.value) and files[0][0] in str(e.value)


def test_ptd_is_consulted_before_pte_named_data():
    """A .ptd holding a key that the PTE also holds wins, as in ExecuTorch's merged map."""
    pte_name = "rmsnorm_extdata_1x8x64"  # the .ptd's key ...
    other = "rmsnorm_1x8x64_eps1e-6"  # ... is also PTE named data here (same seeded weight)
    (ptd_path,) = ptd_paths(pte_name)
    ptd_bytes = ptd_path.read_bytes()
    ptd = read_flat_tensor(ptd_bytes, ptd_path.name)
    pte = (FIXTURES / f"{other}.pte").read_bytes()
    plain = formats.open_program(pte)
    shared = sorted(set(ptd.named_data) & set(plain.named_data))
    assert shared, "fixtures changed: no key shared between the .ptd and the .pte"
    key = shared[0]
    assert plain.named.lookup(key)[1] == "pte"
    both = formats.open_program(pte, [(ptd_path.name, ptd_bytes)])
    data, source = both.named.lookup(key)
    assert source == ptd_path.name
    assert data.obj is ptd_bytes
    # and resolve() through the graph picks the .ptd copy too
    for d in both.plans[0].delegates:
        for c in d.graph.graph.constants:
            if c.named_key == key:
                found = resolve(c, c.length, both.named, d.graph.constant_bytes)
                assert found.source == ptd_path.name and found.data.obj is ptd_bytes
    # a NamedData with no files falls back to the PTE
    assert NamedData(both, []).lookup(key)[1] == "pte"


def test_constants_are_zero_copy_views_of_a_mutable_input():
    name = "rmsnorm_4x128_eps1e-6"
    buf = bytearray((FIXTURES / f"{name}.pte").read_bytes())
    program = formats.open_program(buf)
    d = program.plans[0].delegates[0]
    c = d.graph.graph.constants[0]
    found = resolve(c, c.length, program.named, d.graph.constant_bytes)
    assert type(found.data) is memoryview and found.data.obj is buf
    assert d.blob.obj is buf
    seg = program.segments[program.named_data[c.named_key]]
    before = bytes(found.data[:4])
    buf[seg.file_offset] ^= 0xFF  # write through the caller's buffer ...
    assert found.data[0] == before[0] ^ 0xFF  # ... shows through the view
    assert found.data.readonly


def test_inline_constant_is_a_view_into_the_blob():
    name = "rmsnorm_inlineconst_1x8x64"
    buf = bytearray((FIXTURES / f"{name}.pte").read_bytes())
    program = formats.open_program(buf)
    d = program.plans[0].delegates[0]
    (c,) = d.graph.graph.constants
    found = resolve(c, c.length, program.named, d.graph.constant_bytes)
    assert found.source == "inline" and found.data.obj is buf
    seg = program.segments[d.index]
    pos = seg.file_offset + d.graph.header.bytes_offset + c.offset
    buf[pos] ^= 0x55
    assert found.data[0] == buf[pos]
