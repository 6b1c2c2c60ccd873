"""Every error the readers can raise, with a message that says what, found what, and where.

Bad inputs are made by byte surgery on real fixtures: field positions are found through the
flatc-generated accessors, so each edit hits exactly the field it names.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pte_webgpu import formats
from pte_webgpu.app import describe
from pte_webgpu.errors import DataTooSmallError, FormatError, MissingDataError, PteError
from pte_webgpu.formats import fbs_schema, read_flat_tensor, resolve, vulkan
from pte_webgpu.formats._generated import flat_tensor_generated as ffb
from pte_webgpu.formats._generated import program_generated as pfb
from pte_webgpu.formats._generated import vkgraph_generated as vfb

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"


def fixture(name: str) -> bytes:
    return (FIXTURES / f"{name}.pte").read_bytes()


def ptds(name: str) -> list[Path]:
    return sorted((FIXTURES / name).glob("*.ptd"))


# --- locating fields ----------------------------------------------------------------------------

def slot(schema: str, table: str, field: str) -> int:
    for f in fbs_schema.load(schema).tables[table]:
        if f.name == field:
            return 4 + 2 * f.slot
    raise KeyError(field)


def field_pos(obj, schema: str, table: str, field: str) -> int:
    """Absolute position of an inline field (scalar or reference) of a generated table object."""
    o = obj._tab.Offset(slot(schema, table, field))
    assert o, f"{table}.{field} is absent in this fixture"
    return obj._tab.Pos + o


def vector_pos(obj, schema, table, field) -> int:
    """Absolute position of the first element of a vector field (its u32 length is 4 before)."""
    return obj._tab.Vector(obj._tab.Offset(slot(schema, table, field)))


def string_pos(obj, schema, table, field) -> int:
    """Absolute position of the first character of a string field."""
    p = field_pos(obj, schema, table, field)
    return p + struct.unpack_from("<I", obj._tab.Bytes, p)[0] + 4


def put(buf: bytearray, pos: int, fmt: str, value) -> bytearray:
    struct.pack_into("<" + fmt, buf, pos, value)
    return buf


def program_root(buf):
    return pfb.Program.GetRootAs(buf, 0)


def vk_root(buf, plan=0, delegate=0):
    """The VkGraph of a segment-held delegate, with positions absolute in the file."""
    program = formats.read_program(bytes(buf))
    d = program.plans[plan].delegates[delegate]
    seg = program.segments[d.index]
    h = vulkan.read_header(d.blob)
    return vfb.VkGraph.GetRootAs(buf, seg.file_offset + h.flatbuffer_offset), seg.file_offset


def fails(exc, data, files=(), *, match=(), offset=None, field=None):
    with pytest.raises(exc) as info:
        formats.open_program(data, files)
    msg = str(info.value)
    for m in match:
        assert m in msg, f"{m!r} not in {msg!r}"
    if offset is not None:
        assert info.value.offset == offset, msg
        assert f"byte offset {offset}" in msg
    if field is not None:
        assert info.value.field == field, msg
        assert field in msg
    return info.value


# --- container ----------------------------------------------------------------------------------

def test_truncated_inside_the_program():
    data = fixture("add_2x3x4")
    program_size = struct.unpack_from("<Q", data, 16)[0]
    fails(FormatError, data[:100], match=(f"program_size {program_size}", "file size 100",
                                          "truncated"), offset=16)


def test_truncated_inside_the_segments():
    data = fixture("add_2x3x4")
    base, size = struct.unpack_from("<QQ", data, 24)
    cut = base + size - 1
    fails(FormatError, data[:cut], match=(f"segments end at {base + size}", f"{cut} bytes"),
          offset=32)


@pytest.mark.parametrize("n", [0, 3, 7])
def test_truncated_to_nothing(n):
    fails(FormatError, fixture("add_2x3x4")[:n], match=(f"{n} bytes is too short",), offset=0)


def test_bad_file_identifier():
    data = bytearray(fixture("add_2x3x4"))
    data[4:8] = b"XT99"
    fails(FormatError, data, match=("expected file identifier 'ET12'", "b'XT99'"), offset=4)


def test_eh00_header_length_too_small():
    data = put(bytearray(fixture("add_2x3x4")), 12, "I", 16)
    fails(FormatError, data, match=("header_length must be >= 24", "found 16"), offset=12)


def test_eh00_segment_base_inside_program():
    data = put(bytearray(fixture("add_2x3x4")), 24, "Q", 64)
    fails(FormatError, data, match=("segment_base_offset 64", "inside the program"), offset=24)


def test_eh00_program_size_past_end():
    data = fixture("add_2x3x4")
    bad = put(bytearray(data), 16, "Q", len(data) + 1)
    fails(FormatError, bad, match=(f"program_size {len(data) + 1}", f"file size {len(data)}"),
          offset=16)


def test_segment_past_end():
    data = bytearray(fixture("mlp_4x32"))
    root = program_root(data)
    n = root.SegmentsLength()
    pos = field_pos(root.Segments(n - 1), "program", "DataSegment", "size")
    put(data, pos, "Q", 10**9)
    fails(FormatError, data, match=(f"segment {n - 1} (1000000000 bytes", "runs past the end",
                                    f"{len(data)}-byte file"),
          field=f"Program.segments[{n - 1}]")


def test_named_data_points_at_missing_segment():
    data = bytearray(fixture("mlp_4x32"))
    nd = program_root(data).NamedData(0)
    put(data, field_pos(nd, "program", "NamedData", "segment_index"), "I", 77)
    fails(FormatError, data, match=("points at segment 77", "there are 6"),
          field="Program.named_data[0]")


def test_vector_claiming_2_31_elements_fails_fast():
    data = bytearray(fixture("block_1x8x64"))
    root = program_root(data)
    put(data, vector_pos(root, "program", "Program", "execution_plan") - 4, "I", 2**31)
    t = time.perf_counter()
    err = fails(FormatError, data, match=("vector of 2147483648 elements", "runs past the end"))
    assert time.perf_counter() - t < 0.5
    assert err.field == "Program.execution_plan"


def test_vk_vector_claiming_2_31_elements_fails_fast():
    data = bytearray(fixture("block_1x8x64"))
    g, _ = vk_root(data)
    put(data, vector_pos(g, "vkgraph", "VkGraph", "values") - 4, "I", 2**31 - 1)
    t = time.perf_counter()
    fails(FormatError, data, match=("Vulkan graph (VK00)", "vector of 2147483647 elements"))
    assert time.perf_counter() - t < 0.5


# --- plan ---------------------------------------------------------------------------------------

def test_plan_input_id_out_of_range():
    data = bytearray(fixture("add_2x3x4"))
    plan = program_root(data).ExecutionPlan(0)
    put(data, vector_pos(plan, "program", "ExecutionPlan", "inputs"), "i", 99)
    fails(FormatError, data, match=("value id 99 is out of range", "3 values"),
          field="Program.execution_plan[0].inputs[0]")


def test_delegate_call_arg_out_of_range():
    data = bytearray(fixture("add_2x3x4"))
    ins = program_root(data).ExecutionPlan(0).Chains(0).Instructions(0)
    call = pfb.DelegateCall()
    call.Init(ins.InstrArgs().Bytes, ins.InstrArgs().Pos)
    put(data, vector_pos(call, "program", "DelegateCall", "args") + 4, "i", -5)
    fails(FormatError, data, match=("value id -5 is out of range",),
          field="Program.execution_plan[0] instruction 0 (delegate) args[1]")


def test_delegate_index_out_of_range():
    name = "rmsnorm_nndefault_1x8x64_eps1e-6"  # instr[2] calls delegate 1 (field present)
    data = bytearray(fixture(name))
    ins = program_root(data).ExecutionPlan(0).Chains(0).Instructions(2)
    call = pfb.DelegateCall()
    call.Init(ins.InstrArgs().Bytes, ins.InstrArgs().Pos)
    assert call.DelegateIndex() == 1
    put(data, field_pos(call, "program", "DelegateCall", "delegate_index"), "i", 5)
    fails(FormatError, data, match=("delegate_index 5 out of range", "2 delegates"),
          field="Program.execution_plan[0] instruction 2 (delegate)")


def test_kernel_call_arg_out_of_range():
    data = bytearray(fixture("rmsnorm_nndefault_1x8x64_eps1e-6"))
    ins = program_root(data).ExecutionPlan(0).Chains(0).Instructions(1)
    call = pfb.KernelCall()
    call.Init(ins.InstrArgs().Bytes, ins.InstrArgs().Pos)
    put(data, vector_pos(call, "program", "KernelCall", "args"), "i", 6)
    fails(FormatError, data, match=("value id 6 is out of range", "6 values"),
          field="Program.execution_plan[0] instruction 1 (kernel) args[0]")


def test_delegate_segment_index_out_of_range():
    data = bytearray(fixture("add_2x3x4"))
    ref = program_root(data).ExecutionPlan(0).Delegates(0).Processed()
    put(data, field_pos(ref, "program", "BackendDelegateDataReference", "index"), "I", 42)
    fails(FormatError, data, match=("'VulkanBackend' refers to segment 42", "there are 2"),
          field="Program.execution_plan[0].delegates[0].processed.index")


def test_unknown_evalue_union_code():
    data = bytearray(fixture("add_2x3x4"))
    ev = program_root(data).ExecutionPlan(0).Values(0)
    data[field_pos(ev, "program", "EValue", "val_type")] = 200
    fails(FormatError, data, match=("unknown EValue type code 200",),
          field="Program.execution_plan[0].values[0].val_type")


def test_unknown_instruction_union_code():
    data = bytearray(fixture("add_2x3x4"))
    ins = program_root(data).ExecutionPlan(0).Chains(0).Instructions(0)
    data[field_pos(ins, "program", "Instruction", "instr_args_type")] = 99
    fails(FormatError, data, match=("unknown or empty instruction (type code 99)",),
          field="Program.execution_plan[0].chains[0].instructions[0].instr_args_type")


def test_invalid_utf8_in_delegate_id():
    data = bytearray(fixture("add_2x3x4"))
    d = program_root(data).ExecutionPlan(0).Delegates(0)
    data[string_pos(d, "program", "BackendDelegate", "id")] = 0xFF
    fails(FormatError, data, match=("not valid UTF-8",),
          field="Program.execution_plan[0].delegates[0].id")


# --- Vulkan delegate ----------------------------------------------------------------------------

def vh00(header_size=30, fb_off=32, fb_size=8, bytes_off=40, bytes_size=4, length=44,
         magic=b"VH00") -> bytes:
    """FORMATS.md 8.3's 44-byte blob (header 30, fb 32+8, bytes 40+4), with edits."""
    head = b"\0\0\0\0" + magic + struct.pack("<HIIIQ", header_size, fb_off, fb_size, bytes_off,
                                             bytes_size)
    return (head + b"\0" * 64)[:length]


def test_vh00_44_byte_blob_is_valid():
    h = vulkan.read_header(memoryview(vh00()))
    assert (h.header_size, h.flatbuffer_offset, h.flatbuffer_size, h.bytes_offset,
            h.bytes_size) == (30, 32, 8, 40, 4)


@pytest.mark.parametrize("blob,offset,expect", [
    (vh00(length=29), 0, "29 bytes is shorter than the 30-byte VH00 header"),
    (vh00(length=43), 22, "bytes region [40, +4) runs past the 43-byte blob"),
    (vh00(magic=b"VX00"), 4, "expected Vulkan delegate magic b'VH00', found b'VX00'"),
    (vh00(header_size=29), 8, "header_size 29 < 30"),
    (vh00(fb_off=28), 10, "flatbuffer_offset 28 < header_size 30"),
    (vh00(fb_size=0), 14, "flatbuffer_size is 0"),
    (vh00(fb_size=100), 14, "flatbuffer [32, +100) runs past the 44-byte blob"),
    (vh00(bytes_off=36), 18, "bytes_offset 36 overlaps the flatbuffer (ends at 40)"),
    (vh00(bytes_size=5), 22, "bytes region [40, +5) runs past the 44-byte blob"),
], ids=["trunc29", "trunc43", "magic", "header_size", "fb_offset", "fb_size0", "fb_past_end",
        "bytes_overlap", "bytes_past_end"])
def test_vh00_header_checks(blob, offset, expect):
    with pytest.raises(FormatError) as info:
        vulkan.read_header(memoryview(blob))
    assert expect in str(info.value)
    assert info.value.offset == offset and f"byte offset {offset}" in str(info.value)


def test_vh00_error_through_a_real_program():
    data = bytearray(fixture("add_2x3x4"))
    program = formats.read_program(bytes(data))
    seg = program.segments[program.plans[0].delegates[0].index]
    data[seg.file_offset + 4:seg.file_offset + 8] = b"XH00"
    fails(FormatError, data, match=("expected Vulkan delegate magic", "b'XH00'"), offset=4)


def test_vk_op_arg_out_of_range():
    data = bytearray(fixture("add_2x3x4"))
    g, _ = vk_root(data)
    put(data, vector_pos(g.Chain(0), "vkgraph", "OperatorCall", "args"), "i", 999)
    fails(FormatError, data, match=("value id 999 is out of range", "4 values"),
          field="VkGraph.chain[0] (aten.add.Tensor) args[0]")


def test_vk_output_id_out_of_range():
    data = bytearray(fixture("add_2x3x4"))
    g, _ = vk_root(data)
    put(data, vector_pos(g, "vkgraph", "VkGraph", "output_ids"), "I", 4)
    fails(FormatError, data, match=("value id 4 is out of range",),
          field="VkGraph.output_ids[0]")


def test_vk_input_is_not_a_tensor():
    data = bytearray(fixture("add_2x3x4"))  # value 2 is Int 1
    g, _ = vk_root(data)
    put(data, vector_pos(g, "vkgraph", "VkGraph", "input_ids"), "I", 2)
    fails(FormatError, data, match=("value 2 is a int, not a tensor",), field="VkGraph.input_ids")


def test_vk_constant_id_out_of_range():
    data = bytearray(fixture("rmsnorm_4x128_eps1e-6"))  # 1 constant; value 1 has constant_id -1
    g, _ = vk_root(data)
    t = vfb.VkTensor()
    v = g.Values(1).Value()
    t.Init(v.Bytes, v.Pos)
    assert t.ConstantId() == -1
    put(data, field_pos(t, "vkgraph", "VkTensor", "constant_id"), "i", 7)
    fails(FormatError, data, match=("refers to constant 7", "has 1"),
          field="VkGraph.values[1].constant_id")


def test_vk_unknown_value_union_code():
    data = bytearray(fixture("add_2x3x4"))
    g, _ = vk_root(data)
    data[field_pos(g.Values(2), "vkgraph", "VkValue", "value_type")] = 77
    fails(FormatError, data, match=("unknown value type code 77",),
          field="VkGraph.values[2].value_type")


def test_vk_unknown_tensor_datatype():
    data = bytearray(fixture("add_2x3x4"))
    g, _ = vk_root(data)
    t = vfb.VkTensor()
    v = g.Values(0).Value()
    t.Init(v.Bytes, v.Pos)
    data[field_pos(t, "vkgraph", "VkTensor", "datatype")] = 99
    fails(FormatError, data, match=("unknown tensor datatype code 99",),
          field="VkGraph.values[0].datatype")


def test_vk_invalid_utf8_in_op_name():
    data = bytearray(fixture("add_2x3x4"))
    g, _ = vk_root(data)
    data[string_pos(g.Chain(0), "vkgraph", "OperatorCall", "name") + 1] = 0xC0
    fails(FormatError, data, match=("not valid UTF-8",), field="VkGraph.chain[0].name")


def test_vk_bad_identifier():
    data = bytearray(fixture("add_2x3x4"))
    g, base = vk_root(data)
    fb_start = base + 32
    data[fb_start + 4:fb_start + 8] = b"VK99"
    fails(FormatError, data, match=("Vulkan graph (VK00)", "expected file identifier 'VK00'",
                                    "b'VK99'"), offset=4)


# --- constants and named data -------------------------------------------------------------------

def only_constant(program):
    d = program.plans[0].delegates[0]
    (c,) = d.graph.graph.constants
    t = next(v for v in d.graph.graph.values if getattr(v, "constant_id", -1) == c.index)
    return d, c, t


def test_missing_ptd_is_missing_data_naming_the_key():
    name = "rmsnorm_extdata_1x8x64"
    program = formats.open_program(fixture(name))  # the .ptd is not given
    d, c, t = only_constant(program)
    with pytest.raises(MissingDataError) as info:
        resolve(c, t.nbytes, program.named, d.graph.constant_bytes)
    assert not isinstance(info.value, DataTooSmallError)
    assert info.value.key == c.named_key
    assert repr(c.named_key) in str(info.value)
    assert "searched: the .pte named data" in str(info.value)
    # inspect reports it per constant instead of failing
    report = describe.describe(program)
    cj = report["plans"][0]["delegates"][0]["vulkan"]["constants"][0]
    assert cj["resolves_to"] is None and c.named_key in cj["error"]


def test_missing_key_lists_the_files_searched():
    name = "block_extdata_1x8x64"
    first = ptds(name)[0]
    program = formats.open_program(fixture(name), [first])
    keys = {c.named_key for c in program.plans[0].delegates[0].graph.graph.constants}
    missing = sorted(keys - set(program.named.data_files[0].named_data))
    assert missing
    with pytest.raises(MissingDataError) as info:
        program.named.lookup(missing[0])
    assert info.value.key == missing[0]
    assert f"searched: {first.name}, the .pte named data" in str(info.value)


def test_named_data_too_small():
    name = "rmsnorm_extdata_1x8x64"
    (path,) = ptds(name)
    ptd = bytearray(path.read_bytes())
    root = ffb.FlatTensor.GetRootAs(ptd, 0)
    put(ptd, field_pos(root.Segments(0), "flat_tensor", "DataSegment", "size"), "Q", 16)
    program = formats.open_program(fixture(name), [(path.name, bytes(ptd))])
    d, c, t = only_constant(program)
    with pytest.raises(DataTooSmallError) as info:
        resolve(c, t.nbytes, program.named, d.graph.constant_bytes)
    assert not isinstance(info.value, MissingDataError)
    assert (info.value.need, info.value.have) == (t.nbytes, 16)
    msg = str(info.value)
    assert repr(c.named_key) in msg and path.name in msg
    assert f"needs {t.nbytes} bytes but the data holds only 16" in msg


def test_inline_constant_too_small():
    name = "rmsnorm_inlineconst_1x8x64"
    data = bytearray(fixture(name))
    program = formats.read_program(bytes(data))
    seg = program.segments[program.plans[0].delegates[0].index]
    h = vulkan.read_header(program.plans[0].delegates[0].blob)
    # bytes_size 8, and the blob ends there: cut the segment by editing its size
    put(data, seg.file_offset + 22, "Q", 8)
    root = program_root(data)
    put(data, field_pos(root.Segments(program.plans[0].delegates[0].index), "program",
                        "DataSegment", "size"), "Q", h.bytes_offset + 8)
    program = formats.open_program(data)
    d, c, t = only_constant(program)
    with pytest.raises(DataTooSmallError) as info:
        resolve(c, t.nbytes, program.named, d.graph.constant_bytes)
    assert (info.value.need, info.value.have) == (t.nbytes, 8)
    assert "inline constant 0 at offset 0" in str(info.value)


# --- .ptd ---------------------------------------------------------------------------------------

def ptd_bytes():
    (path,) = ptds("rmsnorm_extdata_1x8x64")
    return path.read_bytes()


def test_ptd_bad_magic():
    data = bytearray(ptd_bytes())
    data[8:12] = b"FH99"
    with pytest.raises(FormatError) as info:
        read_flat_tensor(data, "w.ptd")
    assert "w.ptd: expected .ptd header magic b'FH01', found b'FH99'" in str(info.value)
    assert info.value.offset == 8


def test_ptd_truncated():
    data = ptd_bytes()
    with pytest.raises(FormatError) as info:
        formats.open_program(fixture("rmsnorm_extdata_1x8x64"), [("w.ptd", data[:-1])])
    assert f"the file has {len(data) - 1} bytes (truncated file?)" in str(info.value)
    assert info.value.offset == 32
    with pytest.raises(FormatError, match="w.ptd: 20 bytes is too short"):
        read_flat_tensor(data[:20], "w.ptd")


def test_ptd_segment_index_out_of_range():
    path = ptds("block_extdata_1x8x64")[0]  # 3 segments; named_data[1] -> segment 1
    data = bytearray(path.read_bytes())
    nd = ffb.FlatTensor.GetRootAs(data, 0).NamedData(1)
    put(data, field_pos(nd, "flat_tensor", "NamedData", "segment_index"), "I", 9)
    with pytest.raises(FormatError) as info:
        read_flat_tensor(data, "w.ptd")
    assert "points at segment 9, but there are 3" in str(info.value)
    assert info.value.field == "named_data[1]"


def test_ptd_bad_identifier():
    data = bytearray(ptd_bytes())
    data[4:8] = b"FT99"
    with pytest.raises(FormatError, match=r"w.ptd \(FT01\): expected file identifier 'FT01'"):
        read_flat_tensor(data, "w.ptd")


def test_ptd_invalid_utf8_key():
    data = bytearray(ptd_bytes())
    nd = ffb.FlatTensor.GetRootAs(data, 0).NamedData(0)
    data[string_pos(nd, "flat_tensor", "NamedData", "key")] = 0xFE
    with pytest.raises(FormatError) as info:
        read_flat_tensor(data, "w.ptd")
    assert "not valid UTF-8" in str(info.value) and info.value.field == "w.ptd named_data[0].key"


def test_every_reader_error_is_a_pte_error():
    for cls in (FormatError, MissingDataError, DataTooSmallError):
        assert issubclass(cls, PteError)
    assert not issubclass(MissingDataError, DataTooSmallError)
    assert not issubclass(DataTooSmallError, MissingDataError)


# --- CLI ----------------------------------------------------------------------------------------

def cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "pkg"))
    return subprocess.run([sys.executable, "-m", "pte_webgpu", "inspect", *args],
                          capture_output=True, text=True, env=env, timeout=60)


def test_cli_bad_file_exit_2_one_line(tmp_path):
    bad = tmp_path / "bad.pte"
    data = bytearray(fixture("add_2x3x4"))
    data[4:8] = b"XT99"
    bad.write_bytes(data)
    r = cli(str(bad))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pte-webgpu: error: ")
    assert "expected file identifier 'ET12'" in lines[0] and r.stdout == ""


def test_cli_missing_ptd_exit_2(tmp_path):
    r = cli(str(FIXTURES / "rmsnorm_extdata_1x8x64.pte"), "--data", str(tmp_path / "nope.ptd"))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot read" in lines[0] and "nope.ptd" in lines[0]


def test_cli_good_file_exit_0():
    name = "block_extdata_1x8x64"
    r = cli(str(FIXTURES / f"{name}.pte"), *sum((["--data", str(p)] for p in ptds(name)), []),
            "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    consts = report["plans"][0]["delegates"][0]["vulkan"]["constants"]
    assert consts and all(c["resolves_to"] for c in consts)


def test_unreadable_data_file_path_is_a_pte_error(tmp_path):
    from pte_webgpu import PteError, formats

    pte = (Path(__file__).resolve().parents[1] / "fixtures" / "rmsnorm_extdata_1x8x64.pte")
    with pytest.raises(PteError, match="cannot read data file .*missing.ptd"):
        formats.open_program(pte.read_bytes(), [tmp_path / "missing.ptd"])


def test_negative_plan_tensor_size_is_a_format_error():
    """Plan sizes are signed in the schema; a negative one must not reach allocation."""
    from pte_webgpu.formats import read_program

    data = bytearray((FIXTURES / "add_2x3x4.pte").read_bytes())
    program = read_program(bytes(data))
    sizes = program.plans[0].values[0].sizes
    # find the first plan tensor's sizes vector [2, 3, 4] (int32 LE) and negate its 3
    needle = struct.pack("<3i", *sizes)
    at = bytes(data).index(needle)
    struct.pack_into("<i", data, at + 4, -3)
    with pytest.raises(FormatError, match="negative dimension"):
        read_program(bytes(data))
