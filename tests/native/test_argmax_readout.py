"""execute(argmax=True): torch.argmax of output 0's last row, found on the GPU (4 bytes
read back), equals numpy's argmax of the full output the same program returns."""

import numpy as np
import pytest

from tests.support.decoders import DECODERS, INDEX, NAMES
from tests.support.gpu_thread import run_sync

FIXTURES = __import__("pathlib").Path(__file__).resolve().parents[1] / "fixtures"
NAN, INF = float("nan"), float("inf")
ROWS = {  # last rows of x (+ y = 0): torch's order, NaN first, ties to the first index
    "plain": [0.5, 3.0, -1.0, 2.0],
    "tie": [1.0, 7.0, 7.0, 7.0],
    "nan": [1.0, NAN, 9.0, NAN],
    "zeros": [-0.0, 0.0, -0.0, -1.0],
    "tiny": [1e-40, 3e-40, 2e-40, -5.0],
    "inf": [-INF, INF, 5.0, INF],
    "all_neg_inf": [-INF, -INF, -INF, -INF],
}


@pytest.mark.parametrize("fixture,dtype", [("add_2x3x4", np.float32),
                                           ("add_fp16_2x3x4", np.float16)])
@pytest.mark.parametrize("case", sorted(ROWS))
def test_argmax_of_the_last_row_matches_the_full_output(runtime, fixture, dtype, case):
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(dtype)
    x[1, 2] = np.array(ROWS[case], dtype=np.float32).astype(dtype)
    y = np.zeros_like(x)

    async def go():
        program = await runtime.load_program((FIXTURES / f"{fixture}.pte").read_bytes())
        try:
            method = program.load_method()
            full = (await method.execute([x, y]))[0]
            picked = await method.execute([x, y], argmax=True)
            again = (await method.execute([x, y]))[0]  # the plain path still works after it
            return full, picked, again
        finally:
            program.close()

    full, picked, again = run_sync(go())
    row = np.asarray(full, dtype=np.float32).reshape(-1)[-4:]
    assert picked == [int(np.argmax(row))], (row, picked)
    np.testing.assert_array_equal(np.asarray(again), np.asarray(full))


@pytest.mark.parametrize("name", [n for n in NAMES if n.startswith("llama_")])
def test_argmax_readout_follows_prefill_and_decode_steps(runtime, name):
    """Dynamic prefill (the last valid row moves with the prompt length) and decode."""
    prompt = INDEX[name]["prompt"]

    async def go():
        program = await runtime.load_program((DECODERS / f"{name}.pte").read_bytes())
        try:
            method = program.load_method("forward")
            dynamic = INDEX[name].get("dynamic")
            calls = ([(prompt, 0)] if dynamic else [([t], i) for i, t in enumerate(prompt)])
            calls += [([3 + k], len(prompt) + k) for k in range(3)]
            pairs = []
            for tokens, pos in calls:
                ins = [np.array([tokens], dtype=np.int64), np.array([pos], dtype=np.int64)]
                logits = np.asarray((await method.execute(ins))[0], dtype=np.float32)
                picked = await method.execute(ins, argmax=True)  # same cache rows rewritten
                pairs.append((int(np.argmax(logits.reshape(-1)[-logits.shape[-1]:])),
                              picked[0]))
            return pairs
        finally:
            program.close()

    for want, got in run_sync(go()):
        assert got == want


def test_public_wgpu_encoding_path_gives_the_same_outputs(runtime, monkeypatch):
    """Dispatches are encoded by direct C calls where wgpu-py exposes them; the public
    wrappers (the fallback) must give the same results."""
    from pte_webgpu.gpu import native
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    y = np.random.default_rng(3).standard_normal((2, 3, 4)).astype(np.float32)

    async def run():
        program = await runtime.load_program((FIXTURES / "add_2x3x4.pte").read_bytes())
        try:
            return np.asarray((await program.load_method().execute([x, y]))[0])
        finally:
            program.close()

    fast = run_sync(run())
    monkeypatch.setattr(native, "_RAW", [None])
    slow = run_sync(run())
    np.testing.assert_array_equal(fast, x + y)
    np.testing.assert_array_equal(slow, x + y)


@pytest.mark.parametrize("fixture,dtype", [("add_2x3x4", np.float32),
                                           ("add_fp16_2x3x4", np.float16)])
def test_sampling_on_the_gpu_follows_softmax(runtime, fixture, dtype):
    """execute(argmax=True, sample=Sample(T, seed, draw)): 3000 draws of the last row's
    index against softmax(row / T) computed here in float64 (a chi-square test; the
    draws are deterministic for a seed, so this passes or fails the same way each run);
    a tiny temperature gives the argmax, and the same (seed, draw) the same index."""
    from pte_webgpu.runtime.readout import Sample

    x = np.zeros((2, 3, 4), dtype)
    row = np.array([1.0, 2.0, 0.5, -1.0])
    x[1, 2] = row.astype(dtype)
    y = np.zeros_like(x)
    temperature, n = 0.7, 3000

    async def go():
        program = await runtime.load_program((FIXTURES / f"{fixture}.pte").read_bytes())
        try:
            method = program.load_method()
            picks = [(await method.execute([x, y], argmax=True,
                                           sample=Sample(temperature, 12345, d)))[0]
                     for d in range(n)]
            again = (await method.execute([x, y], argmax=True, sample=Sample(temperature, 12345,
                                                                             7)))[0]
            cold = [(await method.execute([x, y], argmax=True, sample=Sample(1e-6, 9, d)))[0]
                    for d in range(20)]
            return picks, again, cold
        finally:
            program.close()

    picks, again, cold = run_sync(go())
    p = np.exp(row / temperature)
    p /= p.sum()
    counts = np.bincount(picks, minlength=4)
    chi2 = float((((counts - n * p) ** 2) / (n * p)).sum())
    assert chi2 < 21.1, (counts.tolist(), (n * p).round(1).tolist())  # 3 dof: p = 1e-4
    assert again == picks[7]
    assert set(cold) == {1}


def test_sample_is_checked(runtime):
    from pte_webgpu.errors import InputError
    from pte_webgpu.runtime.readout import Sample

    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(InputError, match="temperature"):
            Sample(bad)
    x = np.zeros((2, 3, 4), np.float32)

    async def go():
        program = await runtime.load_program((FIXTURES / "add_2x3x4.pte").read_bytes())
        try:
            with pytest.raises(InputError, match="sample"):
                await program.load_method().execute([x, x], sample=Sample(1.0))
        finally:
            program.close()

    run_sync(go())


WIDE = {  # (width, what the row holds): the best in another workgroup's slice than the first
    "ties across slices": (49152, {7: 5.0, 30000: 5.0, 49151: 5.0}),
    "nan in the last slice": (49152, {100: 9.0, 49000: NAN}),
    "best at the end": (40001, {40000: 3.0}),
    "one slice": (300, {299: 2.0, 0: 2.0}),
    "inf and nan": (20000, {5: INF, 19999: INF, 12345: NAN, 12346: NAN}),
}


@pytest.mark.parametrize("case", sorted(WIDE))
def test_a_wide_row_is_ranked_in_slices_then_across_them(case):
    """readout.LastRowArgmax's two dispatches (each workgroup's slice, then the slices'
    best) on rows as wide as a vocab: torch's order across the slices' borders."""
    from pte_webgpu.gpu.recording import Recording
    from pte_webgpu.runtime.build import Resources
    from pte_webgpu.runtime.readout import LastRowArgmax

    from tests.support.gpu_thread import native_device

    width, marks = WIDE[case]
    rows = np.full((3, width), -1.0, np.float32)
    rows[:2] = 100.0  # rows above the last are not ranked
    for j, v in marks.items():
        rows[2, j] = v
    want = int(np.nanargmax(rows[2])) if not np.isnan(rows[2]).any() else \
        int(np.flatnonzero(np.isnan(rows[2]))[0])
    device = next(gen := native_device())

    async def go():
        resources = Resources(device)
        try:
            source = resources.buffer(rows.nbytes, "logits")
            device.write_buffer(source, rows.tobytes())
            reader = await LastRowArgmax.create(device, resources, Recording([]), source,
                                                width, False, [])
            recording = reader.prepare(rows.size)
            raw, _ = await device.run(recording, reader.outputs, reader.staging)
            return reader.groups, int.from_bytes(bytes(raw[0][:4]), "little")
        finally:
            resources.release()
    try:
        groups, got = run_sync(go())
    finally:
        gen.close()
    assert got == want, (got, want)
    assert groups > 1 or width <= 2048, groups
