"""DynamicEnv reruns only the host steps that input data can change while the input
shapes repeat (a decode loop), and everything when the shapes change; the grids that
follow actual sizes are set again only when a size they read changed."""

from pte_webgpu.gpu.recording import Dispatch, Recording
from pte_webgpu.runtime.dynamic import DynamicEnv


def _env(calls):
    env = DynamicEnv()

    def position(env):  # like select_as_symint: reads input data
        calls.append("position")
        env.values[("sym", 0, 1)] = env.host_inputs[7]

    def end(env):  # depends on the position
        calls.append("end")
        env.values[("sym", 0, 2)] = env.values[("sym", 0, 1)] + env.shape(-1, 7, (9,))[0]

    def doubled(env):  # depends on the input's shape only
        calls.append("doubled")
        env.values[("shape", 0, 3)] = tuple(2 * d for d in env.shape(-1, 7, (9,)))

    env.steps += [position, end, doubled]
    return env


def _run(env, length, data):
    env.values, env.host_inputs = {("shape", -1, 7): (length,)}, {7: data}
    env.run(Recording())
    return env.values[("sym", 0, 2)], env.values[("shape", 0, 3)]


def test_same_shapes_rerun_only_the_data_steps():
    calls = []
    env = _env(calls)
    assert _run(env, 3, 10) == (13, (6,))
    assert calls == ["position", "end", "doubled"]
    calls.clear()
    assert _run(env, 3, 20) == (23, (6,))  # new data, same shape
    assert calls == ["position", "end"]
    calls.clear()
    assert _run(env, 5, 20) == (25, (10,))  # a new shape: everything again
    assert calls == ["position", "end", "doubled"]


def test_grids_are_set_again_only_when_a_size_they_read_changes():
    calls = []
    env = _env([])

    def grid(env):  # like follow_actual_size's: reads one tensor's actual shape
        calls.append("grid")
        return (env.shape(0, 3, (18,))[0], 1, 1)

    env.grids.append((0, grid, ("shape", 0, 3)))
    recording = Recording([Dispatch("pipeline", "group", (18, 1, 1), "op")])
    grids = []
    for length, data in [(3, 10), (3, 20), (3, 30), (5, 30), (5, 40), (3, 40)]:
        env.values, env.host_inputs = {("shape", -1, 7): (length,)}, {7: data}
        env.run(recording)
        grids.append(recording.steps[0].grid[0])
    assert grids == [6, 6, 6, 10, 10, 6]
    assert len(calls) == 3  # the first run and the two size changes
