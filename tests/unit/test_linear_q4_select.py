"""The 4-bit linears' variant names, selection rule and forcing (no GPU needed)."""

import pytest
from pte_webgpu.errors import UnsupportedError
from pte_webgpu.gpu.adapter import AdapterTraits
from pte_webgpu.ops.linear_q4_choice import (VARIANTS, Variant, choose, cols_lanes, cols_share,
                                             parse, row_forms)
from pte_webgpu.ops.variants import check_forced


def traits(cpu=True, builtins=True, sizes=(4, 128), invocations=1024, storage=32768):
    return AdapterTraits(cpu, False, builtins, sizes, invocations, storage, True, True)


LAVAPIPE = traits()  # llvmpipe with wgpu-native's "subgroup" feature: 4..128 lanes
SWIFTSHADER_4 = traits(sizes=(4, 4))
CPU_PLAIN = traits(builtins=False, sizes=None)
GPU_SG = traits(cpu=False, sizes=(32, 32))
GPU_PLAIN = traits(cpu=False, builtins=False, sizes=None)


@pytest.mark.parametrize("name", ["dot", "tiled", "gemv-64", "gemvsg-8", "gemv-1", "wide-8-2",
                                  "keep-32-16-4", "keep-8-32-8", "keep-256-4-4", "cols-1", "cols-8-4",
                                  "cols-16"])
def test_names_round_trip(name):
    assert parse(name).name == name


@pytest.mark.parametrize("name", ["gemv-3", "gemv", "mm4-16x8", "gemvsg-2048", "tiled-8",
                                  "keep-32-16", "keep-8-8-4", "keep-32-4-8", "keep-2-64-4",
                                  "keep-512-4-4", "keep-32-12-4", "keep-32-16-2", "cols-3",
                                  "cols-64", "cols", "cols-8-2"])
def test_bad_names_are_refused(name):
    with pytest.raises(UnsupportedError, match="linear_q4 variant"):
        parse(name)


@pytest.mark.parametrize("t,m,want", [
    (LAVAPIPE, 1, "cols-16"), (LAVAPIPE, 8, "cols-16"), (LAVAPIPE, 9, "tiled"),
    (SWIFTSHADER_4, 1, "cols-16"), (CPU_PLAIN, 1, "dot"), (CPU_PLAIN, 37, "tiled"),
    (traits(sizes=(1, 4)), 1, "dot"),  # subgroups that may be narrower than 4: no cols
    (GPU_SG, 1, "wide-32-1"), (GPU_SG, 2, "gemvsg-32"),
    (GPU_SG, 32, "gemvsg-32"), (GPU_SG, 33, "tiled"),
    (GPU_PLAIN, 4, "gemv-64"), (GPU_PLAIN, 500, "tiled"),
    # too small for the forms' workgroups: the no-barrier form
    (traits(cpu=False, builtins=False, invocations=32), 1, "dot"),
    (traits(storage=4096), 100, "dot"),
])
def test_the_rule(t, m, want):
    assert choose(t, m, 64, 64).name == want


@pytest.mark.parametrize("n,k,half,want", [
    (49152, 576, False, "wide-4-4"), (49152, 576, True, "wide-4-1"),
    (4096, 4096, False, "keep-128-8-4"), (4096, 4096, True, "keep-128-8-4"),
    (3072, 576, False, "keep-32-4-4"), (576, 1536, False, "gemv-64"),
    (960, 576, False, "wide-32-1"), (1536, 576, False, "wide-32-1"),
    (4096, 32768, False, "gemvsg-32"),  # K over 4 chunks per lane of 128: no keep form
    (576, 48, False, "gemvsg-32")])  # K not a multiple of 32: no wide form
def test_the_wide_forms_by_shape(n, k, half, want):
    assert choose(GPU_SG, 1, n, k, half, group=16 if k == 48 else 32).name == want


def test_forcing_checks_names_and_adapters():
    check_forced({"linear_q4": "gemvsg-32"})
    with pytest.raises(UnsupportedError, match="linear_q4 variant"):
        check_forced({"linear_q4": "gemv-5"})
    assert VARIANTS.why_not(Variant("gemvsg", 32), CPU_PLAIN) == "needs subgroups"
    assert "exceed" in VARIANTS.why_not(Variant("gemv", 1024), traits(invocations=256))
    assert VARIANTS.why_not(Variant("tiled"), traits(storage=4096)) == \
        "workgroup storage too small"


def test_dynamic_rows_get_decode_twins():
    """A program for prefill and decode (dynamic M): the bound's form, then decode's."""
    forms = row_forms(GPU_SG, 128, 64, 64, choose(GPU_SG, 128, 64, 64))
    assert [(top, v.name) for top, v in forms] == [(128, "tiled"), (32, "gemvsg-32"),
                                                   (1, "wide-32-1")]
    forms = row_forms(LAVAPIPE, 27, 64, 64, choose(LAVAPIPE, 27, 64, 64))
    assert [(top, v.name) for top, v in forms] == [(27, "tiled"), (8, "cols-16")]


def test_cols_needs_whole_word_groups():
    """The cols form reads a group's scale per word: groups of 4 take the dot form."""
    assert choose(SWIFTSHADER_4, 1, 576, 36, group=4).name == "dot"
    assert choose(SWIFTSHADER_4, 1, 49152, 1152, group=32).name == "cols-32"
    assert VARIANTS.why_not(Variant("cols", cols=8), CPU_PLAIN) == \
        "needs subgroups of at least 4 lanes"
    assert cols_share(SWIFTSHADER_4) == 4 and cols_share(traits(sizes=(8, 8))) == 8


def test_scales_computed_at_run_time_keep_the_wide_form_out():
    """The wide form relays constant scales at load: on scales a graph computes, the rule
    takes the subgroup matrix-vector form, and forcing wide is refused naming why."""
    assert choose(GPU_SG, 1, 576, 576).name == "wide-32-1"
    assert choose(GPU_SG, 1, 576, 576, constant_scales=False).name == "gemvsg-32"
    assert [v.name for _, v in row_forms(GPU_SG, 64, 576, 576, Variant("tiled"),
                                         constant_scales=False)] == ["tiled", "gemvsg-32"]
    why = VARIANTS.why_not(parse("wide-32-1"), GPU_SG, m=1, k=576, group=32,
                           constant_scales=False)
    assert why and "constant scales" in why


def test_keep_needs_k_in_four_chunks_per_lane():
    """The keep form holds at most 4 chunks of 32 inputs per lane: K = 4096 needs 32 lanes
    per column or more; 256 lanes need a workgroup that large."""
    assert VARIANTS.why_not(parse("keep-32-16-4"), GPU_SG, m=1, k=4096, group=32) is None
    why = VARIANTS.why_not(parse("keep-16-16-4"), GPU_SG, m=1, k=4096, group=32)
    assert why and "4 chunks" in why
    assert "one row" in VARIANTS.why_not(parse("keep-32-16-4"), GPU_SG, m=2, k=64, group=32)
    why = VARIANTS.why_not(parse("keep-256-4-4"), traits(cpu=False, sizes=(32, 32),
                                                          invocations=128), m=1, k=64)
    assert why and "256 lanes" in why


def test_the_decode_forms_are_for_one_row():
    """The one-row forms' gemv-64 (1536 x 576) is measured for decode only: more rows keep
    gemvsg-32."""
    assert choose(GPU_SG, 1, 576, 1536).name == "gemv-64"
    assert choose(GPU_SG, 2, 576, 1536).name == "gemvsg-32"


def test_cols_workgroups_fit_the_row():
    """Short rows get small workgroups (16 per row where 4 lanes allow), never under the
    lanes sharing an input load; a forced lane count stands."""
    def lanes(n, name="cols-16", share=4):
        return cols_lanes(parse(name), n, share)
    assert [lanes(n) for n in (576, 960, 3072, 49152)] == [4, 4, 8, 32]
    assert lanes(576, share=8) == 8 and lanes(576, "cols-16-32") == 32
    assert lanes(20, "cols-1") == 4
    assert [choose(SWIFTSHADER_4, 1, n, 576, group=32).name for n in (576, 2047, 2048)] == \
        ["cols-16", "cols-16", "cols-32"]
