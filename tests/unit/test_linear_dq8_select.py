"""The linear_dq8 (8da4w) rule without a GPU: matrix-vector up to 4 rows, 4x4 tiles past
them, dot4I8Packed where the adapter has WGSL's packed_4x8_integer_dot_product, scalar
for layouts the word forms cannot read; forcing checks; what inspect shows."""

import pytest
from pte_webgpu.errors import UnsupportedError
from pte_webgpu.gpu.adapter import PACKED_DOT, AdapterInfo
from pte_webgpu.ops.linear_dq8 import FORMS, VARIANTS


def adapter(packed: bool, backend="browser", desc="swiftshader", fallback=True):
    return AdapterInfo(backend, "", "", desc, fallback, frozenset(), {},
                       wgsl_features=frozenset({PACKED_DOT}) if packed else frozenset())


@pytest.mark.parametrize("packed,m,aligned,want", [
    (True, 1, True, "mv-dp4"), (True, 4, True, "mv-dp4"), (True, 5, True, "tile4-dp4"),
    (False, 1, True, "mv-i32"), (False, 37, True, "tile4-i32"),
    (True, 1, False, "scalar"), (False, 37, False, "scalar")])
def test_the_rule(packed, m, aligned, want):
    assert VARIANTS.choose(adapter(packed).traits, m=m, aligned=aligned) == want


def test_packed_dot_comes_from_the_wgsl_features():
    assert adapter(True).traits.packed_dot and not adapter(False).traits.packed_dot


@pytest.mark.parametrize("v", FORMS)
def test_forcing_checks_the_adapter_and_the_layout(v):
    assert VARIANTS.why_not(v, adapter(True), aligned=True) is None
    if v.endswith("dp4"):
        with pytest.raises(UnsupportedError, match="dot4I8Packed"):
            VARIANTS.fit(v, adapter(False), aligned=True)
    if v != "scalar":
        assert "multiple of 8" in VARIANTS.why_not(v, adapter(True), aligned=False)


def test_inspect_shows_the_typical_choice():
    assert VARIANTS.typical(m=1, aligned=True) == {"chromium-swiftshader": "mv-dp4",
                                                   "discrete-gpu": "mv-dp4"}
