"""The rms_norm variants the native tests force, one by one; rows at the edge of float32."""

import numpy as np

# Both families' candidates (GPU and CPU lists), whatever this adapter is; sg variants
# need browser subgroups (tests/browser/test_rms_norm_variants.py).
VARIANTS = ["tree-64", "tree4-64", "tree4-256", "tree4-1024", "tile4-8x256", "tile4-32x256",
            "tile4-4x64", "tile-2x64", "row4-16", "row4-64", "row-64",
            # the other places a rare row is redone (the names above: the default, -tail)
            "tree4-256-inline", "tile-2x64-inline", "row4-16-inline", "tree-64-split",
            "tree4-256-split", "tile4-8x256-split", "tile-2x64-split", "row4-16-split"]


def subnormal_mean_rows(width):
    """Rows whose float32 sum of squares is a normal float (about 5e-38) while its mean
    over ``width`` is subnormal: a flushing adapter (SwiftShader) made that mean 0 and the
    row inf with eps 0."""
    x = np.zeros((3, width), np.float32)
    x[0, [3, 7]] = (2e-19, -1e-19)
    x[1, ::5] = 8e-20
    x[2, 1] = 2.5e-19
    return x
