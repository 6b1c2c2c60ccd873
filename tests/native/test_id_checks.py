"""Out-of-range ids in exported token models: an InputError naming the value and its
position, as torch raises 'index out of range'. Ids straight from an input are checked
on the host (token_model_1x6); ids that reach the embedding through GPU work (a view, in
token_view_2x3) are caught by the kernel's flag, read back with the outputs. Either way
the next run with good ids is right again, and nothing leaks."""

import numpy as np
import pte_webgpu
import pytest

from tests.support.fixture_index import FIXTURES
from tests.support.gpu_thread import run_sync


def _method(runtime, name):
    program = run_sync(runtime.load_program((FIXTURES / f"{name}.pte").read_bytes()))
    return program, program.load_method()


@pytest.fixture(scope="module")
def token_model(runtime):
    program, method = _method(runtime, "extra/token_model_1x6")
    yield method
    program.close()


@pytest.fixture(scope="module")
def token_view(runtime):
    program, method = _method(runtime, "edge/token_view_2x3")
    yield method
    program.close()


def _ref(name):
    ref = np.load(FIXTURES / f"{name}.npz")
    return ref["in0"], ref["out0"]


@pytest.mark.parametrize("bad, where", [(50, (0, 3)), (-1, (0, 0)), (2 ** 31 - 1, (0, 5))])
def test_input_ids_out_of_range_are_refused_on_the_host(runtime, token_model, bad, where):
    ids, want = _ref("extra/token_model_1x6")
    bad_ids = ids.copy()
    bad_ids[where] = bad
    with pytest.raises(pte_webgpu.InputError,
                       match=rf"input 0: id {bad} at position \[{where[0]}, {where[1]}\] is "
                             r"outside \[0, 50\), the rows of .*aten.embedding.default"):
        run_sync(token_model.execute([bad_ids]))
    (got,) = run_sync(token_model.execute([ids]))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("bad", [[20], [-3], [25, -7, 1000]])
def test_ids_reaching_the_kernel_through_gpu_work_raise_from_the_flag(runtime, token_view, bad):
    ids, want = _ref("edge/token_view_2x3")
    bad_ids = ids.copy().reshape(-1)
    bad_ids[-len(bad):] = bad
    with pytest.raises(pte_webgpu.InputError) as e:
        run_sync(token_view.execute([bad_ids.reshape(ids.shape)]))
    message = str(e.value)
    assert "aten.embedding.default" in message and "outside [0, 20)" in message
    assert f"({len(bad)} id(s) out of range" in message
    value, pos = int(message.split(" id ")[1].split()[0]), int(message.split("position ")[1].split()[0])
    assert value in bad and bad_ids[pos] == value  # one bad id, at its flat position
    (got,) = run_sync(token_view.execute([ids]))  # the flag was reset
    np.testing.assert_array_equal(got, want)


def test_the_view_path_has_no_host_check(token_view):
    """The ids of token_view_2x3 are a view, not the input: only the flag sees them."""
    assert [c.input_index for c in token_view._id_checks.checks] == [None]


def test_nothing_leaks(runtime, token_model, token_view):
    before = runtime.device.live_buffer_count
    for method, ids in ((token_model, np.full((1, 6), 99)), (token_view, np.full((2, 3), 99))):
        with pytest.raises(pte_webgpu.InputError):
            run_sync(method.execute([ids.astype(np.int64)]))
    assert runtime.device.live_buffer_count == before


def test_index_tensor_ids_out_of_range_raise(runtime):
    """x[ids] (aten.index.Tensor, tests/fixtures/edge/index_rows_5x4_3): ids in [-5, 5)
    are right (negative ones from the end, as torch); 5 or -6 are an InputError naming the
    value and its position, where the kernel alone would give a row of zeros."""
    program, method = _method(runtime, "edge/index_rows_5x4_3")
    try:
        ref = np.load(FIXTURES / "edge" / "index_rows_5x4_3.npz")
        x, ids = ref["in0"], ref["in1"]
        (got,) = run_sync(method.execute([x, ids]))
        np.testing.assert_array_equal(got, ref["out0"])
        for bad, pos in ((5, 1), (-6, 2)):
            bad_ids = ids.copy()
            bad_ids[pos] = bad
            with pytest.raises(pte_webgpu.InputError, match=rf"id {bad} at position \[?{pos}\]? "
                                                            r"(of its ids )?is outside \[-5, 5\)"):
                run_sync(method.execute([x, bad_ids]))
        # The kernel's flag alone (as for ids computed on the GPU): host check off.
        for check in method._id_checks.checks:
            check.input_index = None
        bad_ids = ids.copy()
        bad_ids[0] = 7
        with pytest.raises(pte_webgpu.InputError, match=r"aten.index.Tensor: id 7 at position 0 "
                                                        r"of its ids is outside \[-5, 5\)"):
            run_sync(method.execute([x, bad_ids]))
        (got,) = run_sync(method.execute([x, ids]))
        np.testing.assert_array_equal(got, ref["out0"])
    finally:
        program.close()
