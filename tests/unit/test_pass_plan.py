"""gpu/recording.pass_plan, the one encoding rule both backends follow (the browser's JS
encode runs its ops as they are): dispatches share a pass, a copy ends it, an empty grid
is left out and never opens a pass of its own."""

from pte_webgpu.gpu.recording import BEGIN, COPY, DISPATCH, END, Copy, Dispatch, pass_plan


def _d(grid):
    return Dispatch("pipeline", "group", grid, "d")


def _c():
    return Copy("src", "dst", 4, "c")


def test_dispatches_share_a_pass_and_a_copy_ends_it():
    steps = [_d((2, 1, 1)), _d((1, 3, 1)), _c(), _d((1, 1, 1)), _c(), _c()]
    assert list(pass_plan(steps)) == [(BEGIN, -1), (DISPATCH, 0), (DISPATCH, 1), (END, -1),
                                      (COPY, 2), (BEGIN, -1), (DISPATCH, 3), (END, -1),
                                      (COPY, 4), (COPY, 5)]


def test_empty_grids_are_left_out_without_empty_passes():
    steps = [_d((0, 1, 1)), _c(), _d((4, 0, 1)), _d((1, 1, 0)), _c(), _d((0, 1, 1)),
             _d((5, 1, 1)), _d((0, 1, 1))]
    assert list(pass_plan(steps)) == [(COPY, 1), (COPY, 4), (BEGIN, -1), (DISPATCH, 6),
                                      (END, -1)]
    assert list(pass_plan([])) == []
