"""The rms_norm variants the native tests force, one by one."""

# Both families' candidates (GPU and CPU lists), whatever this adapter is; sg variants
# need browser subgroups (tests/browser/test_rms_norm_variants.py).
VARIANTS = ["tree-64", "tree4-64", "tree4-256", "tree4-1024", "tile4-8x256", "tile4-32x256",
            "tile4-4x64", "tile-2x64", "row4-16", "row4-64", "row-64",
            # the other places a rare row is redone (the names above: the default, -tail)
            "tree4-256-inline", "tile-2x64-inline", "row4-16-inline", "tree-64-split",
            "tree4-256-split", "tile4-8x256-split", "tile-2x64-split", "row4-16-split"]
