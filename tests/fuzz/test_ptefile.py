"""ptefile/fbtree rebuild every fixture into a file the readers see as the same program."""

from __future__ import annotations

import pytest
from pte_webgpu import formats

from .exec_harness import load_bases
from .ptefile import Pte


def _summary(program) -> list:
    out = []
    for plan in program.plans:
        graphs = [(d.graph.graph.values, d.graph.graph.ops, d.graph.graph.input_ids,
                   d.graph.graph.output_ids, d.graph.graph.constants,
                   bytes(d.graph.constant_bytes)) for d in plan.delegates if d.graph]
        out.append((plan.name, plan.values, plan.inputs, plan.outputs, plan.instructions,
                    plan.operators, graphs))
    return out


@pytest.mark.parametrize("base", load_bases(), ids=lambda b: b.name)
def test_rebuilt_fixture_reads_the_same(base):
    from .mutations import FIXTURES

    path = FIXTURES / f"{base.name}.pte"
    path = path if path.exists() else FIXTURES / "extra" / f"{base.name}.pte"
    original = formats.open_program(path.read_bytes(), base.ptds)
    rebuilt = formats.open_program(Pte.parse(path.read_bytes()).build(), base.ptds)
    assert _summary(rebuilt) == _summary(original)
    for key in original.named_data:
        assert bytes(rebuilt.named_bytes(key)) == bytes(original.named_bytes(key))
