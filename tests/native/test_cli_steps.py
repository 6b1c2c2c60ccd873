"""``pte-webgpu run --backend native`` with stepK_inJ and seq_inJ inputs."""

import subprocess
import sys

import numpy as np

from tests.support.decoders import DECODERS, INDEX


def _run(pte, inputs, out, *extra):
    return subprocess.run([sys.executable, "-m", "pte_webgpu", "run", pte, "--inputs", inputs,
                           "--output", out, "--backend", "native", *extra],
                          capture_output=True, text=True, timeout=300)


def test_seq_inputs_give_stacked_seq_outputs(tmp_path):
    """The static llama's steps as seq_in0 [N, 1, 1] / seq_in1 [N, 1]: seq_out0 [N, 1, V];
    --repeat 2 starts each repeat from the reset state, so the outputs stay the same."""
    name = "llama_static_rope"
    ref = np.load(DECODERS / f"{name}.npz")
    n = INDEX[name]["steps"]
    seq = tmp_path / "seq.npz"
    np.savez(seq, seq_in0=np.stack([ref[f"step{k}_in0"] for k in range(n)]),
             seq_in1=np.stack([ref[f"step{k}_in1"] for k in range(n)]))
    out = tmp_path / "out.npz"
    done = _run(DECODERS / f"{name}.pte", seq, out, "--repeat", "2")
    assert done.returncode == 0, done.stderr
    got = np.load(out)
    assert got.files == ["seq_out0"]
    want = np.stack([ref[f"step{k}_out0"] for k in range(n)])
    np.testing.assert_allclose(got["seq_out0"], want, atol=1e-4)


def test_steps_with_a_gap_are_one_line_exit_2(tmp_path):
    name = "llama_static_rope"
    ref = np.load(DECODERS / f"{name}.npz")
    bad = tmp_path / "bad.npz"
    np.savez(bad, step0_in0=ref["step0_in0"], step0_in1=ref["step0_in1"],
             step2_in0=ref["step2_in0"], step2_in1=ref["step2_in1"])
    done = _run(DECODERS / f"{name}.pte", bad, tmp_path / "out.npz")
    assert done.returncode == 2 and "step 1 is missing" in done.stderr
    assert "Traceback" not in done.stderr
