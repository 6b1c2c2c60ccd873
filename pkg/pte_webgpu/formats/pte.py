"""The ``.pte`` container: extended header, segments, execution plans, named data.

``read_program(data)`` verifies the whole flatbuffer first (``verify.py``), then
converts it through the flatc-generated accessors into plain dataclasses.
Delegate blobs and named data stay zero-copy views into the caller's buffer.
"""

from __future__ import annotations

from ..errors import FormatError
from ..model import dtypes
from ..model.graph import ListValue, Null, Scalar
from ..model.program_file import (
    BackendDelegate,
    DelegateCall,
    ExecutionPlan,
    ExtendedHeader,
    FreeCall,
    Instruction,
    JumpFalseCall,
    KernelCall,
    MoveCall,
    PlanTensor,
    ProgramFile,
    Segment,
)
from . import fbs_schema, verify
from ._generated import program_generated as fb
from .checked_reads import (
    as_view, byte_vector, check_ids, scalar_vector, text, uint, union_reader,
)

EXTENDED_MAGIC = b"eh00"


def read_extended_header(buf: memoryview) -> ExtendedHeader | None:
    if len(buf) < 12 or bytes(buf[8:12]) != EXTENDED_MAGIC:
        return None
    length = uint(buf, 12, 4, "eh00 header_length")
    if length < 24:
        raise FormatError(f"eh00 header_length must be >= 24, found {length}", offset=12)
    program_size = uint(buf, 16, 8, "eh00 program_size")
    base = uint(buf, 24, 8, "eh00 segment_base_offset")
    data_size = uint(buf, 32, 8, "eh00 segment_data_size") if length >= 32 else 0
    if program_size > len(buf):
        raise FormatError(f"eh00 program_size {program_size} exceeds the file size {len(buf)} "
                          "(truncated file?)", offset=16)
    if base and base < program_size:
        raise FormatError(f"eh00 segment_base_offset {base} lies inside the program "
                          f"({program_size} bytes)", offset=24)
    if base + data_size > len(buf):
        raise FormatError(f"segments end at {base + data_size} but the file has {len(buf)} bytes "
                          "(truncated file?)", offset=32)
    return ExtendedHeader(length, program_size, base, data_size)


def read_program(data) -> ProgramFile:
    """Parse a ``.pte`` file's bytes. Raises FormatError naming the bad spot."""
    buf = as_view(data)
    header = read_extended_header(buf)
    program_bytes = buf[:header.program_size] if header else buf
    verify.verify(program_bytes, fbs_schema.load("program"), "program (ET12)")
    root = fb.Program.GetRootAs(program_bytes, 0)
    base = header.segment_base_offset if header else 0
    segments = []
    for i in range(root.SegmentsLength()):
        s = root.Segments(i)
        seg = Segment(s.Offset(), s.Size(), base + s.Offset())
        if seg.file_offset + seg.size > len(buf):
            raise FormatError(f"segment {i} ({seg.size} bytes at file offset {seg.file_offset}) "
                              f"runs past the end of the {len(buf)}-byte file",
                              field=f"Program.segments[{i}]", offset=seg.file_offset)
        segments.append(seg)
    named = {}
    for i in range(root.NamedDataLength()):
        nd = root.NamedData(i)
        where = f"Program.named_data[{i}]"
        key = text(nd.Key(), where + ".key")
        if nd.SegmentIndex() >= len(segments):
            raise FormatError(f"named data {key!r} points at segment {nd.SegmentIndex()}, "
                              f"but there are {len(segments)}", field=where)
        named.setdefault(key, nd.SegmentIndex())
    program = ProgramFile(buf, header, root.Version(), segments, named)
    cs = root.ConstantSegment()
    if cs is not None and cs.OffsetsLength() > 1:
        if cs.SegmentIndex() >= len(segments):
            raise FormatError(f"constant segment {cs.SegmentIndex()} does not exist "
                              f"({len(segments)} segments)", field="Program.constant_segment")
        program.constant_segment = cs.SegmentIndex()
        program.constant_offsets = scalar_vector(cs.OffsetsLength(), cs.Offsets)
    program.plans = [_plan(root, root.ExecutionPlan(i), i, program)
                     for i in range(root.ExecutionPlanLength())]
    return program


def _plan(root, p, index: int, program: ProgramFile) -> ExecutionPlan:
    where = f"Program.execution_plan[{index}]"
    name = text(p.Name(), where + ".name")
    values = [_evalue(p.Values(i), f"{where}.values[{i}]") for i in range(p.ValuesLength())]
    n_values = len(values)
    inputs = check_ids(scalar_vector(p.InputsLength(), p.Inputs), n_values, where + ".inputs")
    outputs = check_ids(scalar_vector(p.OutputsLength(), p.Outputs), n_values, where + ".outputs")
    operators = []
    for i in range(p.OperatorsLength()):
        op = p.Operators(i)
        operators.append((text(op.Name(), f"{where}.operators[{i}].name"),
                          text(op.Overload(), f"{where}.operators[{i}].overload")))
    delegates = [_delegate(root, p.Delegates(i), f"{where}.delegates[{i}]", program)
                 for i in range(p.DelegatesLength())]
    instructions = []
    for c in range(p.ChainsLength()):
        chain = p.Chains(c)
        for i in range(chain.InstructionsLength()):
            w = f"{where}.chains[{c}].instructions[{i}]"
            instructions.append(_instruction(chain.Instructions(i), w))
    plan = ExecutionPlan(name, values, inputs, outputs, instructions, operators, delegates,
                         list(scalar_vector(p.NonConstBufferSizesLength(),
                                            p.NonConstBufferSizes)))
    _check_instructions(plan, where)
    return plan


def _check_instructions(plan: ExecutionPlan, where: str) -> None:
    n = len(plan.values)
    for i, ins in enumerate(plan.instructions):
        w = f"{where} instruction {i} ({ins.kind})"
        if isinstance(ins, (KernelCall, DelegateCall)):
            check_ids(ins.args, n, w + " args")
        if isinstance(ins, KernelCall) and not 0 <= ins.op_index < len(plan.operators):
            raise FormatError(f"op_index {ins.op_index} out of range "
                              f"({len(plan.operators)} operators)", field=w)
        if isinstance(ins, DelegateCall) and not 0 <= ins.delegate_index < len(plan.delegates):
            raise FormatError(f"delegate_index {ins.delegate_index} out of range "
                              f"({len(plan.delegates)} delegates)", field=w)
        if isinstance(ins, MoveCall):
            check_ids((ins.move_from, ins.move_to), n, w)
        if isinstance(ins, FreeCall):
            check_ids((ins.value_index,), n, w)
        if isinstance(ins, JumpFalseCall):
            check_ids((ins.cond_value_index,), n, w)
            if not 0 <= ins.destination_instruction <= len(plan.instructions):
                raise FormatError(f"jump destination {ins.destination_instruction} out of range "
                                  f"({len(plan.instructions)} instructions)", field=w)


_UNION = fb.KernelTypes


def _evalue(ev, where: str):
    code = ev.ValType()
    if code == _UNION.NONE or code == _UNION.Null:
        return Null()
    as_ = union_reader(ev.Val(), code, "EValue", where)
    if code == _UNION.Int:
        return Scalar("int", as_(fb.Int).IntVal())
    if code == _UNION.Bool:
        return Scalar("bool", bool(as_(fb.Bool).BoolVal()))
    if code == _UNION.Double:
        return Scalar("double", as_(fb.Double).DoubleVal())
    if code == _UNION.String:
        return Scalar("string", text(as_(fb.String).StringVal(), where))
    if code == _UNION.Tensor:
        return _tensor(as_(fb.Tensor), where)
    list_kinds = {_UNION.IntList: ("int_list", fb.IntList),
                  _UNION.DoubleList: ("double_list", fb.DoubleList),
                  _UNION.BoolList: ("bool_list", fb.BoolList),
                  _UNION.TensorList: ("tensor_list", fb.TensorList),
                  _UNION.OptionalTensorList: ("optional_tensor_list", fb.OptionalTensorList)}
    if code in list_kinds:
        kind, cls = list_kinds[code]
        obj = as_(cls)
        return ListValue(kind, scalar_vector(obj.ItemsLength(), obj.Items))
    raise FormatError(f"unknown EValue type code {code}", field=where + ".val_type")


def _tensor(t, where: str) -> PlanTensor:
    alloc = t.AllocationInfo()
    extra = t.ExtraTensorInfo()
    sizes = scalar_vector(t.SizesLength(), t.Sizes)
    if any(s < 0 for s in sizes):
        raise FormatError(f"tensor sizes {list(sizes)} have a negative dimension",
                          field=where + ".sizes")
    return PlanTensor(
        scalar_type=t.ScalarType(),
        dtype=dtypes.FROM_SCALAR_TYPE.get(t.ScalarType()),
        sizes=sizes,
        dim_order=scalar_vector(t.DimOrderLength(), t.DimOrder),
        data_buffer_idx=t.DataBufferIdx(),
        memory_id=alloc.MemoryId() if alloc else None,
        memory_offset=(alloc.MemoryOffsetLow() | alloc.MemoryOffsetHigh() << 32) if alloc else 0,
        shape_dynamism=t.ShapeDynamism(),
        fully_qualified_name=text(extra.FullyQualifiedName(), where) if extra else "",
        external=bool(extra and extra.Location() == fb.TensorDataLocation.EXTERNAL),
    )


_INSTR = fb.InstructionArguments


def _instruction(ins, where: str) -> Instruction:
    code = ins.InstrArgsType()
    table = ins.InstrArgs()
    kinds = {_INSTR.KernelCall: fb.KernelCall, _INSTR.DelegateCall: fb.DelegateCall,
             _INSTR.MoveCall: fb.MoveCall, _INSTR.JumpFalseCall: fb.JumpFalseCall,
             _INSTR.FreeCall: fb.FreeCall}
    if code not in kinds or table is None:
        raise FormatError(f"unknown or empty instruction (type code {code})",
                          field=where + ".instr_args_type")
    obj = kinds[code]()
    obj.Init(table.Bytes, table.Pos)
    if code == _INSTR.KernelCall:
        return KernelCall(obj.OpIndex(), scalar_vector(obj.ArgsLength(), obj.Args))
    if code == _INSTR.DelegateCall:
        return DelegateCall(obj.DelegateIndex(), scalar_vector(obj.ArgsLength(), obj.Args))
    if code == _INSTR.MoveCall:
        return MoveCall(obj.MoveFrom(), obj.MoveTo())
    if code == _INSTR.JumpFalseCall:
        return JumpFalseCall(obj.CondValueIndex(), obj.DestinationInstruction())
    return FreeCall(obj.ValueIndex())


def _delegate(root, d, where: str, program: ProgramFile) -> BackendDelegate:
    ident = text(d.Id(), where + ".id")
    ref = d.Processed()
    if ref is None:
        raise FormatError(f"delegate {ident!r} has no processed data reference",
                          field=where + ".processed")
    specs = {}
    for i in range(d.CompileSpecsLength()):
        spec = d.CompileSpecs(i)
        specs[text(spec.Key(), f"{where}.compile_specs[{i}].key")] = bytes(byte_vector(spec, 6))
    index = ref.Index()
    if ref.Location() == fb.DataLocation.SEGMENT:
        if index >= len(program.segments):
            raise FormatError(f"delegate {ident!r} refers to segment {index}, but there are "
                              f"{len(program.segments)}", field=where + ".processed.index")
        return BackendDelegate(ident, "segment", index, specs, program.segment_bytes(index))
    if ref.Location() == fb.DataLocation.INLINE:
        if index >= root.BackendDelegateDataLength():
            raise FormatError(f"delegate {ident!r} refers to inline data {index}, but there are "
                              f"{root.BackendDelegateDataLength()}",
                              field=where + ".processed.index")
        blob = byte_vector(root.BackendDelegateData(index), 4)
        return BackendDelegate(ident, "inline", index, specs, blob)
    raise FormatError(f"delegate {ident!r} has unknown data location {ref.Location()}",
                      field=where + ".processed.location")
