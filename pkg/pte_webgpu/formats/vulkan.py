"""The Vulkan delegate blob: ``VH00`` header, ``VK00`` graph, constant bytes region."""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import FormatError
from ..model import dtypes
from ..model.graph import ConstantRef, Graph, ListValue, Null, OpCall, Scalar, TensorValue
from . import fbs_schema, verify
from ._generated import vkgraph_generated as fb
from .checked_reads import (
    as_view, check_ids, header, magic, scalar_vector, span, text, union_reader,
)

HEADER_MAGIC = b"VH00"
HEADER_SIZE = 30
_LAYOUT = (("header_size", 8, 2), ("flatbuffer_offset", 10, 4), ("flatbuffer_size", 14, 4),
           ("bytes_offset", 18, 4), ("bytes_size", 22, 8))
INLINE_NONE = 2**64 - 1  # VkBytes.offset of a constant held as named data


@dataclass(frozen=True)
class DelegateHeader:
    header_size: int
    flatbuffer_offset: int
    flatbuffer_size: int
    bytes_offset: int
    bytes_size: int


@dataclass
class VulkanDelegate:
    header: DelegateHeader
    graph: Graph
    constant_bytes: memoryview  # the bytes region that inline constants index into


def read_header(blob: memoryview) -> DelegateHeader:
    if len(blob) < HEADER_SIZE:
        raise FormatError(f"Vulkan delegate blob of {len(blob)} bytes is shorter than the "
                          f"{HEADER_SIZE}-byte VH00 header", offset=0)
    magic(blob, 4, HEADER_MAGIC, "Vulkan delegate")
    h = header(blob, DelegateHeader, "VH00", _LAYOUT)
    checks = [
        (h.header_size >= HEADER_SIZE, 8, f"header_size {h.header_size} < {HEADER_SIZE}"),
        (h.flatbuffer_offset >= h.header_size, 10,
         f"flatbuffer_offset {h.flatbuffer_offset} < header_size {h.header_size}"),
        (h.flatbuffer_size > 0, 14, "flatbuffer_size is 0"),
        (h.flatbuffer_offset + h.flatbuffer_size <= len(blob), 14,
         f"flatbuffer [{h.flatbuffer_offset}, +{h.flatbuffer_size}) runs past the "
         f"{len(blob)}-byte blob"),
        (h.bytes_offset >= h.flatbuffer_offset + h.flatbuffer_size, 18,
         f"bytes_offset {h.bytes_offset} overlaps the flatbuffer "
         f"(ends at {h.flatbuffer_offset + h.flatbuffer_size})"),
        (h.bytes_offset + h.bytes_size <= len(blob), 22,
         f"bytes region [{h.bytes_offset}, +{h.bytes_size}) runs past the {len(blob)}-byte blob"),
    ]
    for ok, offset, message in checks:
        if not ok:
            raise FormatError("bad VH00 header: " + message, offset=offset)
    return h


def read_delegate(blob) -> VulkanDelegate:
    """Parse a Vulkan delegate blob (``BackendDelegate.blob``)."""
    blob = as_view(blob)
    h = read_header(blob)
    fb_bytes = span(blob, h.flatbuffer_offset, h.flatbuffer_size, "VK00 flatbuffer")
    verify.verify(fb_bytes, fbs_schema.load("vkgraph"), "Vulkan graph (VK00)")
    # An empty bytes_size with data after bytes_offset means "the rest of the blob".
    size = h.bytes_size or max(0, len(blob) - h.bytes_offset)
    constant_bytes = blob[h.bytes_offset:h.bytes_offset + size]
    return VulkanDelegate(h, _graph(fb.VkGraph.GetRootAs(fb_bytes, 0)), constant_bytes)


def _graph(g) -> Graph:
    values = [_value(g.Values(i), f"VkGraph.values[{i}]") for i in range(g.ValuesLength())]
    n = len(values)
    constants = []
    for i in range(g.ConstantsLength()):
        c = g.Constants(i)
        key = text(c.NamedKey(), f"VkGraph.constants[{i}].named_key") or None
        offset = None if c.Offset() == INLINE_NONE else c.Offset()
        if offset is None and key is None:
            raise FormatError("constant has neither an inline offset nor a named-data key",
                              field=f"VkGraph.constants[{i}]")
        constants.append(ConstantRef(i, offset, c.Length(), key))
    ops = []
    for i in range(g.ChainLength()):
        op = g.Chain(i)
        where = f"VkGraph.chain[{i}]"
        name = text(op.Name(), where + ".name")
        args = scalar_vector(op.ArgsLength(), op.Args)
        check_ids(args, n, f"{where} ({name}) args", "graph")
        ops.append(OpCall(name, args, op.NodeId()))
    inputs = list(scalar_vector(g.InputIdsLength(), g.InputIds))
    outputs = list(scalar_vector(g.OutputIdsLength(), g.OutputIds))
    check_ids(inputs, n, "VkGraph.input_ids", "graph")
    check_ids(outputs, n, "VkGraph.output_ids", "graph")
    for i, v in enumerate(values):
        if isinstance(v, ListValue) and v.kind == "value_list":
            check_ids(v.items, n, f"VkGraph.values[{i}].items", "graph")
        if isinstance(v, TensorValue) and v.constant_id >= len(constants):
            raise FormatError(f"tensor refers to constant {v.constant_id}, but the graph has "
                              f"{len(constants)}", field=f"VkGraph.values[{i}].constant_id")
    for where, ids in (("input_ids", inputs), ("output_ids", outputs)):
        for vid in ids:
            if not isinstance(values[vid], TensorValue):
                raise FormatError(f"value {vid} is a {values[vid].kind}, not a tensor",
                                  field=f"VkGraph.{where}")
    return Graph(values, ops, inputs, outputs, constants, text(g.Version(), "VkGraph.version"))


_T = fb.GraphTypes
_SCALARS = {_T.Int: ("int", fb.Int, "IntVal"), _T.Double: ("double", fb.Double, "DoubleVal"),
            _T.Bool: ("bool", fb.Bool, "BoolVal"), _T.SymInt: ("symint", fb.SymInt, "Value")}
_LISTS = {_T.IntList: ("int_list", fb.IntList), _T.DoubleList: ("double_list", fb.DoubleList),
          _T.BoolList: ("bool_list", fb.BoolList), _T.ValueList: ("value_list", fb.ValueList)}


def _value(v, where: str):
    code = v.ValueType()
    if code in (_T.NONE, _T.Null):
        return Null()
    as_ = union_reader(v.Value(), code, "value", where)
    if code == _T.VkTensor:
        return _tensor(as_(fb.VkTensor), where)
    if code in _SCALARS:
        kind, cls, getter = _SCALARS[code]
        value = getattr(as_(cls), getter)()
        return Scalar(kind, bool(value) if kind == "bool" else value)
    if code == _T.String:
        return Scalar("string", text(as_(fb.String).StringVal(), where))
    if code in _LISTS:
        kind, cls = _LISTS[code]
        obj = as_(cls)
        items = scalar_vector(obj.ItemsLength(), obj.Items)
        return ListValue(kind, tuple(bool(x) for x in items) if kind == "bool_list" else items)
    raise FormatError(f"unknown value type code {code}", field=where + ".value_type")


def _tensor(t, where: str) -> TensorValue:
    dtype = dtypes.FROM_VK_DATATYPE.get(t.Datatype())
    if dtype is None:
        raise FormatError(f"unknown tensor datatype code {t.Datatype()}",
                          field=where + ".datatype")
    staging = t.StagingDatatype()
    if staging != dtypes.VK_UNSET and staging not in dtypes.FROM_VK_DATATYPE:
        raise FormatError(f"unknown staging datatype code {staging}",
                          field=where + ".staging_datatype")
    return TensorValue(dtype, scalar_vector(t.DimsLength(), t.Dims), t.ConstantId(),
                       t.MemObjId(), dtypes.FROM_VK_DATATYPE.get(staging),
                       t.StorageType(), t.MemoryLayout())
