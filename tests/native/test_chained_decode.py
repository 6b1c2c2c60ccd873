"""Decode steps chained on the GPU (runtime/readout.LastArgmax, execute(wait=False)): the
next step is submitted before the last token is read, fed by that token on the GPU; the
ids equal host-fed greedy steps (and so eager torch's), and misuse is an InputError."""

import numpy as np
import pytest
from pte_webgpu.errors import InputError
from pte_webgpu.runtime.readout import LastArgmax

from tests.support.llm_models import tiny_case
from tests.support.gpu_thread import run_sync


def _ids(values):
    return np.array([values], dtype=np.int64)


@pytest.mark.parametrize("name", ["llama_dynamic_rope", "llama_static_rope_fp16"])
def test_chained_steps_equal_host_fed_steps(runtime, name):
    case = tiny_case(name)
    prompt, steps = case["prompt"], 6

    async def host_fed(method):
        ids = []
        for pos, tok in enumerate(prompt):  # token by token: works for static programs too
            (last,) = await method.execute([_ids([tok]), np.array([pos], np.int64)],
                                           argmax=True)
        for n in range(steps):
            ids.append(last)
            (last,) = await method.execute([_ids([last]), np.array([len(prompt) + n],
                                                                   np.int64)], argmax=True)
        return ids

    async def chained(method):
        for pos, tok in enumerate(prompt):
            (first,) = await method.execute([_ids([tok]), np.array([pos], np.int64)],
                                            argmax=True)
        # every step fed on the GPU, all submitted before any is read (readout.STAGINGS in flight at most)
        pending = []
        for n in range(steps - 1):
            fed = _ids([first]) if n == 0 else LastArgmax()
            pending.append(await method.execute([fed, np.array([len(prompt) + n], np.int64)],
                                                argmax=True, wait=False))
        return [first] + [(await p)[0] for p in pending]

    async def go():
        program = await runtime.load_program(case["pte"].read_bytes())
        try:
            method = program.load_method("forward")
            want = await host_fed(method)
            method.reset()
            got = await chained(method)
            return want, got
        finally:
            program.close()

    want, got = run_sync(go())
    assert got == want
    assert want == case["greedy"][:steps] or not case["dynamic"]
    assert runtime.device.live_buffer_count == 0


def test_misuse_is_an_input_error(runtime):
    case = tiny_case("llama_dynamic_rope")

    async def go():
        program = await runtime.load_program(case["pte"].read_bytes())
        errors = []
        try:
            method = program.load_method("forward")
            pos = np.array([0], np.int64)
            for kwargs, inputs in [
                    ({"argmax": True}, [LastArgmax(), pos]),  # nothing picked yet
                    ({}, [LastArgmax(), pos]),  # needs argmax
                    ({"wait": False}, [_ids([3]), pos]),  # wait=False needs argmax
                    ({"argmax": True}, [_ids([3]), pos]),  # fine: now an index exists
                    ({"argmax": True}, [LastArgmax((1, 2)), pos]),  # two elements
                    # the position is read on the host (a SymInt): it cannot come from the GPU
                    ({"argmax": True}, [_ids([3]), LastArgmax((1,))])]:
                try:
                    await method.execute(inputs, **kwargs)
                    errors.append(None)
                except InputError as e:
                    errors.append(str(e))
            return errors
        finally:
            program.close()

    errors = run_sync(go())
    assert errors[0] and "no execute(argmax=True) ran before" in errors[0]
    assert errors[1] and "execute(argmax=True) only" in errors[1]
    assert errors[2] and "wait=False" in errors[2]
    assert errors[3] is None
    assert errors[4] and "fills one element" in errors[4]
    assert errors[5] and "input 1: its values are read on the host" in errors[5]
