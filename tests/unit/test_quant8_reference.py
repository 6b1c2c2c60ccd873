"""The CPU reference (pte_webgpu.reference, pure Python) runs the 8-bit fixtures
(tests/fixtures/quant8) and matches eager torch as the GPU must (tests/support/quant8.py:
1e-4, or one quantum at a rounding tie of a quantized output)."""

import numpy as np
import pytest
from pte_webgpu import reference
from pte_webgpu.formats import open_program

from tests.support.quant8 import INDEX, NAMES, QUANT8, TIE, expected_load_error


# the interpreter runs tensors at their exported (bound) shapes: dynamic rows are the
# runtime's (tests/native/test_quant8.py runs int8pack_dyn_rows)
@pytest.mark.parametrize("name", [n for n in NAMES if not expected_load_error(n)
                                  and "dynamic_rows" not in INDEX[n]])
def test_reference_matches_torch(name):
    program = open_program((QUANT8 / f"{name}.pte").read_bytes())
    arrays = np.load(QUANT8 / f"{name}.npz")
    for k in range(INDEX[name]["steps"]):
        got = reference.run_program(program, [arrays[f"step{k}_in0"]])[0].numpy()
        want = arrays[f"step{k}_out0"]
        off = np.abs(got - want) > INDEX[name]["tolerance"]
        if off.any():
            tie = arrays[f"step{k}_tie0"]  # only quantized outputs may differ, at ties
            assert np.all(np.abs(np.abs(tie - np.trunc(tie))[off] - 0.5) < TIE), (name, k)
            assert off.sum() <= 2, (name, k)


def test_dynamic_rows_size_rules():
    """ExecuTorch 1.5.1 exports no dynamic-row q8ta program (its pattern pass fails on a
    symbolic batch), so the rule the runtime would run is checked on its own: rows follow
    x, N the weights; quantize/dequantize keep their input's shape."""
    from pte_webgpu.model import dtypes
    from pte_webgpu.model.graph import OpCall, TensorValue
    from pte_webgpu.ops import linear_q8, registry

    values = [TensorValue(dtypes.INT8, (12, 48)), None, None, TensorValue(dtypes.INT8, (21, 48)),
              TensorValue(dtypes.FLOAT32, (12, 21))]
    op = OpCall("et_vk.linear_q8ta_q8csw.default", (0, 1, 2, 3, 4))
    actual = {0: (5, 48)}
    assert linear_q8.q8ta_sizes(op, lambda v: actual[v], None, values) == {4: (5, 21)}
    quantize = registry.find("quantized_decomposed.quantize_per_tensor.default")
    assert quantize.sizes(OpCall(quantize.name, (0, 1, 2, 3, 4, 5, 6)), lambda v: actual[v],
                          None, values) == {6: (5, 48)}


def test_linear_q8_rule_follows_packed_dot():
    """dot4 where the adapter's WGSL has packed_4x8_integer_dot_product, else unpack;
    forcing dot4 without it names why; inspect's typical adapters (current Chromium) dot4."""
    import dataclasses

    from pte_webgpu.ops.linear_q8 import VARIANTS
    from pte_webgpu.ops.variants import TYPICAL_ADAPTERS

    traits = TYPICAL_ADAPTERS["discrete-gpu"].traits
    without = dataclasses.replace(traits, packed_dot=False)
    assert VARIANTS.choose(traits, m=1, n=8, k=16) == "dot4"
    assert VARIANTS.choose(without, m=1, n=8, k=16) == "unpack"
    assert "packed_4x8_integer_dot_product" in VARIANTS.why_not("dot4", without)
    assert VARIANTS.why_not("unpack", without) is None
    assert VARIANTS.typical(m=1, n=8, k=16) == {name: "dot4" for name in TYPICAL_ADAPTERS}
