"""SymInt arithmetic ops (ops/symint.py): the size arithmetic ExecuTorch's Vulkan partitioner
keeps inside a delegate (a reshape to heads x sequence multiplies two SymInts)."""

import pytest

from pte_webgpu.errors import InputError
from pte_webgpu.ops import registry, symint


@pytest.mark.parametrize("name", ["add", "sub", "mul", "floordiv"])
def test_each_operator_is_registered(name):
    assert name in registry.operator_names()


@pytest.mark.parametrize("name, a, b, want", [
    ("add", 3, 4, 7), ("sub", 3, 4, -1), ("mul", 3, 4, 12),
    ("floordiv", 7, 2, 3), ("floordiv", -7, 2, -4),  # floor, as torch's SymInt division
])
def test_values(name, a, b, want):
    assert symint._arithmetic(name, a, b, "here") == want


def test_floordiv_by_zero_is_an_input_error_naming_the_place():
    with pytest.raises(InputError, match="delegate 0 op 3: SymInt floordiv by zero"):
        symint._arithmetic("floordiv", 5, 0, "delegate 0 op 3")
