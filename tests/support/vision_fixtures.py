"""The exported pooling, normalization, resampling and padding programs
(tests/fixtures/vision_ops, made by make_vision_ops.py) and what a run of one must show,
shared by the native and the browser tests: every op in the table, each output of
torch's dtype and shape, NaN and infinities where torch has them, integers exactly,
floats within 1e-4 (force_fp16: 2e-2) of torch relative to the output's largest
magnitude."""

import json

import numpy as np

from tests.support.fixture_index import FIXTURES, needed_ops

VISION = FIXTURES / "vision_ops"
INDEX = {e["name"]: e for e in json.loads((VISION / "index.json").read_text())}
NAMES = list(INDEX)


# Programs that stop at load on an op outside this family, and the op the error names
# (none now; take a name out when its op lands: the test then fails until it does).
PENDING: dict[str, str] = {}


def rtol(name: str) -> float:
    return 2e-2 if INDEX[name]["partitioner_compile_options"].get("force_fp16") else 1e-4


def ops_of(name: str) -> set[str]:
    return needed_ops(INDEX[name])


def torch_outputs(name: str) -> list:
    """out0, out1, ... of the program's npz in index order (out10 after out9)."""
    ref = np.load(VISION / f"{name}.npz")
    return [ref[f"out{k}"] for k in range(sum(f.startswith("out") for f in ref.files))]


def check_outputs(name: str, got: list) -> None:
    want = torch_outputs(name)
    assert len(got) == len(want), (len(got), len(want))
    tol = rtol(name)
    for k, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g)
        assert g.dtype == w.dtype and g.shape == w.shape, (k, g.dtype, g.shape, w.dtype, w.shape)
        if w.dtype.kind in "iu":
            np.testing.assert_array_equal(g, w)
            continue
        g64, w64 = g.astype(np.float64), w.astype(np.float64)
        fin = np.isfinite(w64)
        np.testing.assert_array_equal(np.isnan(g64), np.isnan(w64))
        np.testing.assert_array_equal(g64[np.isinf(w64)], w64[np.isinf(w64)])
        scale = np.abs(w64[fin]).max(initial=0.0)
        np.testing.assert_allclose(g64[fin], w64[fin], rtol=tol, atol=tol * max(scale, 1e-30),
                                   err_msg=f"{name} out{k}")
