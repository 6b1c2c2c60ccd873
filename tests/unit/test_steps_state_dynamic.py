"""Pure-Python pieces of stateful and dynamic runs: how an .npz maps to calls, bool
storage, the padded layout of dynamic-shape tensors, which plan tensors are state."""

import numpy as np
import pytest
from pte_webgpu import formats
from pte_webgpu.app.steps import name_outputs, plan_calls
from pte_webgpu.errors import InputError
from pte_webgpu.model import dtypes
from pte_webgpu.model.tensor import Tensor
from pte_webgpu.runtime import dynamic
from pte_webgpu.runtime.inputs import read_input
from pte_webgpu.runtime.state import mutable_plan_values
from pte_webgpu.runtime.storage import Storage

from tests.support.decoders import DECODERS


def _t(a):
    return read_input(np.asarray(a), 0)


def test_step_inputs_run_in_step_then_input_order():
    arrays = {f"step{k}_in{j}": _t([10 * k + j]) for k in (2, 0, 1, 10, 3, 4, 5, 6, 7, 8, 9)
              for j in (1, 0)}
    mode, calls = plan_calls(arrays)
    assert mode == "steps" and len(calls) == 11
    assert [[t.tolist() for t in c] for c in calls] == \
        [[[10 * k], [10 * k + 1]] for k in range(11)]
    named = name_outputs(mode, [[_t([k])] for k in range(11)])
    assert sorted(named, key=lambda n: int(n[4:n.index("_")])) == \
        [f"step{k}_out0" for k in range(11)]


def test_seq_inputs_split_on_the_leading_axis_and_outputs_stack():
    seq = np.arange(24, dtype=np.int64).reshape(4, 2, 3)
    mode, calls = plan_calls({"seq_in0": _t(seq), "seq_in1": _t(np.ones((4, 1), np.float32))})
    assert mode == "seq" and len(calls) == 4
    assert calls[2][0].shape == (2, 3) and calls[2][0].tolist() == seq[2].tolist()
    out = name_outputs(mode, [[_t(np.full((1, 5), k, np.float32))] for k in range(4)])
    assert out["seq_out0"].shape == (4, 1, 5)
    assert out["seq_out0"].numpy()[:, 0, 0].tolist() == [0, 1, 2, 3]
    with pytest.raises(InputError, match="cannot be stacked"):
        name_outputs(mode, [[_t(np.zeros((k + 1,), np.float32))] for k in range(2)])


def test_plain_inputs_and_bad_mixes():
    assert plan_calls({"in1": _t([1]), "in0": _t([0])})[1][0][0].tolist() == [0]
    with pytest.raises(InputError, match="seq_inJ"):
        plan_calls({"seq_in0": _t(np.zeros((3, 2))), "seq_in1": _t(np.zeros((2, 2)))})
    with pytest.raises(InputError, match="input of step 0 1 is missing|1 is missing"):
        plan_calls({"step0_in0": _t([0]), "step0_in2": _t([2])})


def test_bool_tensors_are_u32_per_element_on_the_gpu():
    s = Storage()
    assert s.dtype(dtypes.BOOL) is dtypes.UINT32
    raw = np.array([True, False, True, True, False]).tobytes()
    held = s.to_storage(raw, dtypes.BOOL)
    assert np.frombuffer(held, "<u4").tolist() == [1, 0, 1, 1, 0]
    assert s.from_storage(np.array([7, 0, 1], "<u4").tobytes(), dtypes.BOOL) == b"\x01\x00\x01"


@pytest.mark.parametrize("shape,bound", [((3, 4), (5, 4)), ((1, 2, 4), (1, 6, 4)),
                                         ((2, 3), (2, 5)), ((2, 1, 3), (4, 2, 3))])
def test_padded_layout_round_trips(shape, bound):
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    padded = dynamic.to_padded(x.tobytes(), shape, bound, 4, "x")
    full = np.zeros(bound, np.float32).reshape(-1)
    full[:len(padded) // 4] = np.frombuffer(padded, np.float32)
    box = full.reshape(bound)[tuple(slice(0, s) for s in shape)]
    assert box.tolist() == x.tolist()
    back = dynamic.from_padded(full.tobytes(), shape, bound, 4)
    assert np.frombuffer(back, np.float32).reshape(shape).tolist() == x.tolist()


def test_dynamic_shape_beyond_the_bound_is_an_input_error():
    with pytest.raises(InputError, match="upper bound"):
        dynamic.check_dynamic_shape((3, 9), (3, 8), 1)


def test_mutable_buffers_of_an_index_put_cache_are_state():
    """The hand-written decoder's 4 KV caches (2 layers x k, v), and nothing else."""
    program = formats.open_program((DECODERS / "hand_indexput_rothalf.pte").read_bytes())
    plan = program.plans[0]
    state = mutable_plan_values(plan)
    assert len(state) == 4
    for vid in state:
        t = plan.values[vid]
        assert t.data_buffer_idx == 0 and vid not in plan.inputs + plan.outputs
        assert t.dtype.name == "float32" and len(t.sizes) == 4


def test_tensor_rows_for_seq_keep_dtype():
    t = Tensor(np.arange(6, dtype=np.int64).tobytes(), (3, 2), "int64")
    mode, calls = plan_calls({"seq_in0": t})
    assert calls[1][0].dtype.name == "int64" and calls[1][0].tolist() == [2, 3]


@pytest.mark.parametrize("name", ["llama_static_rope", "llama_static_hfrope"])
def test_cpu_reference_of_the_decoder_ops_matches_torch_on_the_first_step(name):
    """reference.py runs the llama graph (sdpa_with_kv_cache, RoPE, index, select_copy,
    select_as_symint) in float64: step 0 (empty cache) agrees with eager torch."""
    from pte_webgpu.reference import interpreter as reference

    ref = np.load(DECODERS / f"{name}.npz")
    program = formats.open_program((DECODERS / f"{name}.pte").read_bytes())
    got = reference.run_program(program, [ref["step0_in0"], ref["step0_in1"]])
    np.testing.assert_allclose(got[0].numpy(), ref["step0_out0"], atol=1e-5)
