"""The probe table: crafted programs and what loading and running each must give.

Each case edits one real fixture (crafts.py) and expects either a typed error (a
PteError subclass name, with words its message must hold) or "ok": the program
runs and its outputs match pte_webgpu.reference, the independent CPU reference,
on the same crafted program. Run natively (test_probe_native.py) and in Chromium
(tests/browser/test_probe_browser.py).
"""

from __future__ import annotations

import copy
import math
import struct
from dataclasses import dataclass

from . import crafts as c

BIG_DIM = 2**32 - 1
MANY_DIMS = 100_000


@dataclass(frozen=True)
class Case:
    name: str
    fixture: str
    craft: object  # (Pte, ptds) -> None (edits in place) or a Crafted
    expect: str  # "ok" or a PteError subclass name
    match: str = ""  # words the error message must contain
    compare: bool = True  # "ok": compare outputs with the CPU reference
    browser: bool = True  # also in the Chromium run

    def build(self) -> c.Crafted:
        p, ptds = c.load(self.fixture)
        made = self.craft(p, ptds)
        return made if isinstance(made, c.Crafted) else c.Crafted(p.build(), ptds)


# --- aliasing --------------------------------------------------------------------------
def delegate_output_is_its_input(p, f):
    c.delegate_call(p)["args"][-1] = c.delegate_call(p)["args"][0]


def graph_op_output_is_its_input(p, f):
    add = c.op(p, "add")
    add["args"][-1] = add["args"][0]


def kernel_output_is_its_input(p, f):  # rmsnorm_nndefault: add.Scalar_out(1, eps, 1, out=2)
    for ins in c.instructions(p):
        if ins["instr_args_type"] == c.KERNEL:
            args = ins["instr_args"]["args"]
            args[-1] = args[-2] = args[0]


def self_move(p, f):
    c.instructions(p).append(c.instruction(c.MOVE, move_from=0, move_to=0))


def move_between_sizes(p, f):  # add_bcast_4x4_4x1: value 1 is [4, 1], value 2 [4, 4]
    c.instructions(p).append(c.instruction(c.MOVE, move_from=1, move_to=2))


def move_input_to_output(p, f):  # the output becomes a copy of input 0
    c.instructions(p).append(c.instruction(c.MOVE, move_from=0, move_to=2))


def two_outputs_one_value(p, f):  # add_rmsnorm_2out: args [in, in, out_a, out_b]
    args = c.delegate_call(p)["args"]
    args[3] = args[2]


# --- ids -------------------------------------------------------------------------------
def delegate_arg_out_of_range(p, f):
    c.delegate_call(p)["args"][0] = 10**6


def graph_op_arg_out_of_range(p, f):
    c.graph_ops(p)[0]["args"][0] = 2**31 - 1


def value_list_item_out_of_range(p, f):  # layernorm: value 8 is the output list
    c.graph_value(p, 8)["items"][0] = 4242


def graph_input_out_of_range(p, f):
    p.graph()["input_ids"][0] = 2**32 - 1


def constant_id_out_of_range(p, f):
    c.graph_value(p, 0)["constant_id"] = 77


def plan_input_negative(p, f):
    p.plan()["inputs"][0] = -1


def huge_mem_obj_ids(p, f):
    for v in c.graph_values(p):
        if v.get("value_type") == c.GV_TENSOR:
            v["value"]["mem_obj_id"] = 2**31 - 1


def kernel_op_index_out_of_range(p, f):
    for ins in c.instructions(p):
        if ins["instr_args_type"] == c.KERNEL:
            ins["instr_args"]["op_index"] = 99


# --- a value used as two kinds, duplicated ids ----------------------------------------
def op_writes_a_constant(p, f):  # rmsnorm: value 3 (the output) claims constant 0
    c.graph_value(p, 3).update(constant_id=0, mem_obj_id=-1)


def op_writes_planned_constant(p, f):  # the same, memory-planned: state (a KV cache)
    c.graph_value(p, 3).update(constant_id=0, mem_obj_id=0)


def state_constants_share_a_key(p, f):
    """Two memory-planned constants naming one key (KV caches of zeros): one buffer each;
    read-only ones sharing it: one upload."""
    weight = c.graph_value(p, 0)
    for mem in (-1, -1, 5, 6):
        c.add_graph_value(p, c.GV_TENSOR, dict(weight, constant_id=0, mem_obj_id=mem))


def graph_value_bound_twice(p, f):  # rmsnorm: graph output := graph input
    p.graph()["output_ids"] = [1]


def plan_input_listed_twice(p, f):
    p.plan()["inputs"] = [0, 0]


def graph_inputs_duplicated(p, f):
    g = p.graph()
    g["input_ids"] = [g["input_ids"][0]] * len(g["input_ids"])


def jump_on_an_int(p, f):
    cond = c.add_plan_value(p, c.PV_INT, {"int_val": 1})
    c.instructions(p).insert(0, c.instruction(c.JUMP_FALSE, cond_value_index=cond,
                                              destination_instruction=1))


def plan_input_is_a_scalar(p, f):
    p.plan()["inputs"][0] = c.add_plan_value(p, c.PV_INT, {"int_val": 3})


def delegate_arg_is_a_scalar(p, f):
    c.delegate_call(p)["args"][0] = c.add_plan_value(p, c.PV_DOUBLE, {"double_val": 1.5})


def graph_input_is_a_scalar(p, f):  # add: value 2 is alpha
    p.graph()["input_ids"][0] = 2


# --- cycles ----------------------------------------------------------------------------
def value_list_holds_itself(p, f):
    c.graph_value(p, 8)["items"][0] = 8


def jump_loops(p, f):
    cond = c.add_plan_value(p, c.PV_BOOL, {"bool_val": False})
    c.instructions(p).insert(0, c.instruction(c.JUMP_FALSE, cond_value_index=cond,
                                              destination_instruction=0))


def jump_over_nothing(p, f):  # a constant True condition falls through: runs as before
    cond = c.add_plan_value(p, c.PV_BOOL, {"bool_val": True})
    c.instructions(p).insert(0, c.instruction(c.JUMP_FALSE, cond_value_index=cond,
                                              destination_instruction=1))


# --- huge claimed sizes, amplification, the budget --------------------------------------
def graph_tensor_huge(p, f):  # block: the first op's output
    out = c.graph_ops(p)[0]["args"][-1]
    c.graph_value(p, out)["dims"] = [BIG_DIM, BIG_DIM]


def plan_output_huge(p, f):
    c.plan_tensor(p, p.plan()["outputs"][0])["sizes"] = [2**31 - 1] * 3


def graph_tensor_many_dims(p, f):
    out = c.graph_ops(p)[0]["args"][-1]
    c.graph_value(p, out)["dims"] = [BIG_DIM] * MANY_DIMS


def plan_tensor_many_dims(p, f):
    c.plan_tensor(p, 0)["sizes"] = [2**31 - 1] * MANY_DIMS


def shared_constant_many_tensors(p, f):
    """2000 tensors all naming constant 0: uploaded once, so the load stays small."""
    weight = c.graph_value(p, 0)
    for _ in range(2000):
        c.add_graph_value(p, c.GV_TENSOR, dict(weight, constant_id=0))


def many_constants_one_key(p, f):
    """2000 constant entries naming one named-data key, each with its own tensor."""
    g = p.graph()
    weight = c.graph_value(p, 0)
    for _ in range(2000):
        g["constants"].append(dict(g["constants"][weight.get("constant_id", 0)]))
        c.add_graph_value(p, c.GV_TENSOR, dict(weight, constant_id=len(g["constants"]) - 1))


def many_memory_pools(p, f):
    for m in range(300):  # 300 pools of 32 MiB: 9.4 GiB
        c.add_graph_value(p, c.GV_TENSOR, {"datatype": c.VK_F32, "dims": [8 << 20],
                                           "constant_id": -1, "mem_obj_id": 100 + m})


def moves_between_huge_plan_tensors(p, f):
    big = [c.add_plan_tensor(p, [32 << 20]) for _ in range(80)]  # 80 x 128 MiB
    for a, b in zip(big, big[1:]):
        c.instructions(p).append(c.instruction(c.MOVE, move_from=a, move_to=b))


def repeated_delegate_calls(n):
    def craft(p, f):
        first = c.instructions(p)[0]
        c.instructions(p).extend(copy.deepcopy(first) for _ in range(n))
    return craft


def with_cap(nbytes):
    def craft(p, f):
        return c.Crafted(p.build(), f, {"max_alloc_bytes": nbytes})
    return craft


# --- constant lengths -----------------------------------------------------------------
def _external_plan_constant(p, data: bytes, scalar_type: int):
    """Plan input 1 of an add becomes an external constant named "w" in the PTE."""
    t = c.plan_tensor(p, 1)
    t["scalar_type"] = scalar_type
    t["extra_tensor_info"] = {"fully_qualified_name": b"w", "location": 1}
    p.plan()["inputs"] = [0]
    c.add_named_data(p, "w", data)


def external_plan_constant(p, f):
    _external_plan_constant(p, c.f32(24), c.F32)


def external_plan_constant_short(p, f):
    _external_plan_constant(p, c.f32(2), c.F32)  # 8 bytes for a 96-byte tensor


def external_fp16_constant_odd(p, f):  # add_fp16: 47 bytes for 24 float16
    _external_plan_constant(p, struct.pack("<24e", *range(24))[:47], c.F16)


def delegate_named_constant_short(p, f):
    key = p.graph()["constants"][0]["named_key"]
    p.segments[c.named_segment(p, key)] = bytes(8)


def delegate_inline_constant_past_end(p, f):
    p.graph()["constants"][0]["offset"] = 2**40


def plan_constant_bad_buffer_index(p, f):
    t = c.plan_tensor(p, 1)
    t["data_buffer_idx"] = 5
    p.plan()["inputs"] = [0]


# --- extreme scalars ------------------------------------------------------------------
def doubles(value):
    def craft(p, f):
        for vid in c.scalar_ids(p, c.GV_DOUBLE):
            c.graph_value(p, vid)["double_val"] = value
    return craft


def ints(value):
    def craft(p, f):
        for vid in c.scalar_ids(p, c.GV_INT):
            c.graph_value(p, vid)["int_val"] = value
    return craft


def op_int_list(op_name: str, position: int, value):
    """Every item of the int list an op takes at argument ``position`` set to ``value``."""
    def craft(p, f):
        items = c.graph_value(p, c.op(p, op_name)["args"][position])
        items["items"] = [value] * max(1, len(items.get("items", [])))
    return craft


def op_int_list_long(op_name: str, position: int, value, n: int):
    def craft(p, f):
        c.graph_value(p, c.op(p, op_name)["args"][position])["items"] = [value] * n
    return craft


# --- dtype and layout oddities ---------------------------------------------------------
def plan_input_dtype(code):
    def craft(p, f):
        c.plan_tensor(p, 0)["scalar_type"] = code
    return craft


def graph_input_dtype(code):
    def craft(p, f):
        c.graph_value(p, p.graph()["input_ids"][0])["datatype"] = code
    return craft


def plan_dim_order(order):
    def craft(p, f):
        c.plan_tensor(p, 0)["dim_order"] = bytearray(order)
    return craft


def odd_layouts(p, f):
    for v in c.graph_values(p):
        if v.get("value_type") == c.GV_TENSOR:
            v["value"].update(storage_type=200, memory_layout=201)


def zero_size(p, f):  # add_2x3x4 with every [2, 3, 4] made [2, 0, 4]
    for vid in (0, 1, 2):
        c.plan_tensor(p, vid)["sizes"] = [2, 0, 4]
    for v in c.graph_values(p):
        if v.get("value_type") == c.GV_TENSOR:
            v["value"]["dims"] = [2, 0, 4]


def plan_graph_dtype_mismatch(p, f):
    c.graph_value(p, p.graph()["input_ids"][0])["datatype"] = c.VK_INT32


def unknown_backend(p, f):
    p.plan()["delegates"][0]["id"] = b"XnnpackBackend"


def free_an_input(p, f):
    c.instructions(p).append(c.instruction(c.FREE, value_index=0))


CASES = [
    # aliasing
    Case("delegate output is its input", "add_2x3x4", delegate_output_is_its_input,
         "FormatError", "both input"),
    Case("graph op output is its input", "add_2x3x4", graph_op_output_is_its_input,
         "FormatError", "also reads"),
    Case("kernel output is its input", "rmsnorm_nndefault_1x8x64_eps1e-6",
         kernel_output_is_its_input, "FormatError", "also reads"),
    Case("self move", "add_2x3x4", self_move, "FormatError", "onto itself"),
    Case("move between sizes", "add_bcast_4x4_4x1", move_between_sizes, "FormatError",
         "differ"),
    Case("move input to output", "add_2x3x4", move_input_to_output, "ok"),
    Case("two graph outputs on one plan value", "add_rmsnorm_2out_4x128",
         two_outputs_one_value, "FormatError", "both bound"),
    # ids
    Case("delegate arg out of range", "add_2x3x4", delegate_arg_out_of_range, "FormatError",
         "out of range"),
    Case("graph op arg out of range", "add_2x3x4", graph_op_arg_out_of_range, "FormatError",
         "out of range"),
    Case("value list item out of range", "layernorm_5x96", value_list_item_out_of_range,
         "FormatError", "out of range"),
    Case("graph input out of range", "add_2x3x4", graph_input_out_of_range, "FormatError",
         "out of range"),
    Case("constant id out of range", "rmsnorm_1x8x64_eps1e-6", constant_id_out_of_range,
         "FormatError", "constant 77"),
    Case("plan input negative", "add_2x3x4", plan_input_negative, "FormatError",
         "out of range"),
    Case("huge mem_obj ids", "block_1x8x64", huge_mem_obj_ids, "ok"),
    Case("kernel op index out of range", "rmsnorm_nndefault_1x8x64_eps1e-6",
         kernel_op_index_out_of_range, "FormatError", "op_index"),
    # two kinds, duplicates
    Case("op writes a constant", "rmsnorm_1x8x64_eps1e-6", op_writes_a_constant,
         "FormatError", "constant"),
    Case("op writes a memory-planned constant", "rmsnorm_1x8x64_eps1e-6",
         op_writes_planned_constant, "ok"),
    Case("graph value bound to two plan values", "rmsnorm_1x8x64_eps1e-6",
         graph_value_bound_twice, "FormatError", "bound to plan values"),
    Case("plan input listed twice", "add_2x3x4", plan_input_listed_twice, "FormatError",
         "twice"),
    Case("graph inputs duplicated", "add_2x3x4", graph_inputs_duplicated, "FormatError",
         "twice"),
    Case("jump on an int", "add_2x3x4", jump_on_an_int, "FormatError", "condition"),
    Case("plan input is a scalar", "add_2x3x4", plan_input_is_a_scalar, "UnsupportedError",
         "int"),
    Case("delegate arg is a scalar", "add_2x3x4", delegate_arg_is_a_scalar,
         "UnsupportedError", "double"),
    Case("graph input is a scalar", "add_2x3x4", graph_input_is_a_scalar, "FormatError",
         "not a tensor"),
    # cycles
    Case("value list holds itself", "layernorm_5x96", value_list_holds_itself, "FormatError",
         "nest"),
    Case("jump loops", "add_2x3x4", jump_loops, "UnsupportedError", "loops"),
    Case("jump falls through", "add_2x3x4", jump_over_nothing, "ok"),
    # huge sizes, amplification, budget
    Case("graph tensor of 2^64 elements", "block_1x8x64", graph_tensor_huge, "GpuLimitError",
         "cannot be loaded here"),
    Case("plan output of 2^93 elements", "add_2x3x4", plan_output_huge, "GpuLimitError",
         "no GPU buffer holds"),
    Case("graph tensor of 100k dims", "block_1x8x64", graph_tensor_many_dims,
         "UnsupportedError", "100000 dimensions"),
    Case("plan tensor of 100k dims", "add_2x3x4", plan_tensor_many_dims, "UnsupportedError",
         "100000 dimensions"),
    Case("one constant shared by 2000 tensors", "block_1x8x64", shared_constant_many_tensors,
         "ok"),
    Case("2000 constants naming one key", "block_1x8x64", many_constants_one_key, "ok"),
    Case("300 memory pools of 32 MiB", "add_2x3x4", many_memory_pools, "BudgetError",
         "max_alloc_bytes"),
    Case("moves between 80 plan tensors of 128 MiB", "add_2x3x4",
         moves_between_huge_plan_tensors, "BudgetError", "max_alloc_bytes"),
    Case("3000 calls of a 12-op delegate", "block_1x8x64", repeated_delegate_calls(3000),
         "BudgetError", "max_ops"),
    Case("50 calls of a 12-op delegate", "block_1x8x64", repeated_delegate_calls(50), "ok"),
    Case("cap of 1000 bytes", "block_1x8x64", with_cap(1000), "BudgetError", "cap is 1000"),
    Case("cap raised", "block_1x8x64", with_cap(64 << 30), "ok"),
    Case("cap not a number", "add_2x3x4", with_cap("lots"), "InputError", "max_alloc_bytes"),
    # constant lengths
    Case("external plan constant", "add_2x3x4", external_plan_constant, "ok"),
    Case("external plan constant short", "add_2x3x4", external_plan_constant_short,
         "DataTooSmallError", "needs 96 bytes"),
    Case("odd-length fp16 constant", "add_fp16_2x3x4", external_fp16_constant_odd,
         "DataTooSmallError", "needs 48 bytes"),
    Case("delegate named constant short", "rmsnorm_1x8x64_eps1e-6",
         delegate_named_constant_short, "DataTooSmallError", "needs 256 bytes"),
    Case("inline constant past the end", "rmsnorm_inlineconst_1x8x64",
         delegate_inline_constant_past_end, "DataTooSmallError", "inline constant"),
    Case("plan constant with no buffer", "add_2x3x4", plan_constant_bad_buffer_index,
         "FormatError", "data_buffer_idx"),
    # extreme scalars
    Case("rms_norm eps NaN", "rmsnorm_1x8x64_eps1e-6", doubles(math.nan), "ok"),
    Case("rms_norm eps inf", "rmsnorm_1x8x64_eps1e-6", doubles(math.inf), "ok"),
    # beyond f32: torch's float32 result (the value rounds to inf) or a typed refusal
    Case("rms_norm eps -1e308", "rmsnorm_1x8x64_eps1e-6", doubles(-1e308), "ok|PteError"),
    Case("layer_norm eps 1e308", "layernorm_5x96", doubles(1e308), "ok|PteError"),
    Case("add alpha 1e308", "add_alpha2.5_4x8", doubles(1e308), "ok|PteError"),
    Case("add alpha 2^63-1 as int", "add_2x3x4", ints(2**63 - 1), "ok"),
    Case("softmax dim 2^62", "elementwise_3out_2x8x16", ints(2**62), "FormatError", "dim"),
    Case("softmax dim -2^63", "elementwise_3out_2x8x16", ints(-2**63), "FormatError", "dim"),
    Case("mean dims 2^62", "rmsnorm_fp16_unfused_1x8x64_eps1e-6", op_int_list("mean", 1, 2**62),
         "FormatError", "dim"),
    Case("pow exponent 1e300", "rmsnorm_fp16_unfused_1x8x64_eps1e-6", doubles(1e300), "ok"),
    Case("clamp bounds NaN", "activations_3x17", doubles(math.nan), "ok"),
    Case("layer_norm shape 2^62", "layernorm_5x96", op_int_list("layer_norm", 1, 2**62),
         "FormatError", ""),
    Case("layer_norm shape of 100k items", "layernorm_5x96",
         op_int_list_long("layer_norm", 1, 2**62, MANY_DIMS), "UnsupportedError",
         "100000 items"),
    Case("view sizes of 100k items", "block_1x8x64", op_int_list_long("view_copy", 1, 2**62,
                                                                      MANY_DIMS),
         "UnsupportedError", "100000 items"),
    Case("to_dim_order dim order 2^62", "rmsnorm_fp16_unfused_1x8x64_eps1e-6",
         op_int_list("to_dim_order", 6, 2**62), "UnsupportedError", "dim order"),
    # dtypes and layouts
    Case("plan input float64", "add_2x3x4", plan_input_dtype(c.F64), "UnsupportedError",
         "float64"),
    Case("plan input unknown dtype", "add_2x3x4", plan_input_dtype(99), "UnsupportedError",
         "ScalarType 99"),
    Case("graph input float64", "add_2x3x4", graph_input_dtype(c.VK_F64), "InputError",
         "does not fit"),
    Case("graph input unknown dtype", "add_2x3x4", graph_input_dtype(120), "FormatError",
         "datatype"),
    Case("plan and graph dtypes differ", "add_2x3x4", plan_graph_dtype_mismatch,
         "InputError", "does not fit"),
    Case("channels-last dim order", "rmsnorm_3x5x7x256_eps1e-6", plan_dim_order([0, 2, 3, 1]),
         "UnsupportedError", "dim order"),
    Case("garbage dim order", "add_2x3x4", plan_dim_order([7, 7, 7]), "UnsupportedError",
         "dim order"),
    Case("odd storage types and layouts", "block_1x8x64", odd_layouts, "ok"),
    Case("zero-size tensors", "add_2x3x4", zero_size, "ok"),
    # the chain
    Case("unknown backend", "add_2x3x4", unknown_backend, "UnsupportedError", "XnnpackBackend"),
    Case("free an input", "add_2x3x4", free_an_input, "ok"),
]


def accepts(expect: str, outcome: str) -> bool:
    """Whether ``outcome`` ("ok" or an error class name) is one ``expect`` allows:
    "ok", an error class (or a subclass of it), or several joined by "|"."""
    from pte_webgpu import errors
    for want in expect.split("|"):
        if want == "ok":
            if outcome == "ok":
                return True
        elif outcome != "ok" and hasattr(errors, outcome) and \
                issubclass(getattr(errors, outcome), getattr(errors, want)):
            return True
    return False
