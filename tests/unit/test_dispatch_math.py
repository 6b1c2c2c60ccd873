"""Pure functions that pick grids and broadcast strides (rms_norm sizes: test_rms_norm_select)."""

import pytest
from pte_webgpu.errors import FormatError, GpuLimitError
from pte_webgpu.gpu.recording import fold_grid
from pte_webgpu.ops.binary import broadcast_strides


@pytest.mark.parametrize("groups", [1, 65535, 65536, 70000, 10**6, 65535 * 65535])
def test_fold_grid_covers_every_workgroup_within_limits(groups):
    x, y, z = fold_grid(groups, 65535)
    assert z == 1 and x <= 65535 and y <= 65535
    assert x * y >= groups
    assert x * y - groups < x  # at most one partial row wasted


def test_fold_grid_refuses_more_than_two_dimensions_hold():
    with pytest.raises(GpuLimitError):
        fold_grid(65535 * 65535 + 1, 65535)


@pytest.mark.parametrize("shape,out,strides", [
    ((2, 3, 4), (2, 3, 4), [12, 4, 1]),
    ((1, 3, 1), (2, 3, 4), [0, 1, 0]),
    ((4, 1), (4, 4), [1, 0]),
    ((4,), (3, 4), [0, 1]),
    ((), (2, 2), [0, 0]),
    ((1,), (2, 3, 4, 5), [0, 0, 0, 0]),
])
def test_broadcast_strides(shape, out, strides):
    assert broadcast_strides(shape, out, "add") == strides


def test_broadcast_mismatch_is_a_format_error():
    with pytest.raises(FormatError, match="does not broadcast"):
        broadcast_strides((3,), (2, 4), "aten.add.Tensor")


@pytest.mark.parametrize("sizes,order,ok", [
    ((2, 3, 4), (0, 1, 2), True), ((2, 3, 4), (), True), ((1, 3, 1, 1), (0, 2, 3, 1), True),
    ((2, 3, 4, 5), (0, 2, 3, 1), False), ((2, 3), (1, 0), False), ((2, 3), (0, 0), False)])
def test_row_major_dim_orders(sizes, order, ok):
    """channels_last and other real permutations are refused; size-1 moves are fine."""
    from pte_webgpu.runtime.method import _row_major

    assert _row_major(sizes, order) is ok
