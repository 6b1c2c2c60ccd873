"""8da4w natively: torchao.choose_qparams_affine and et_vk.linear_dq8ca_q4gsw on graphs
built by hand in the serializer's layouts (odd N, K, groups, one row, many rows, rows of
zeros and constant rows), every kernel variant, against an independent numpy reference of
torchao's math (tests/support/quant_dq8.py); bad layouts fail at load with typed errors."""

import numpy as np
import pytest
from pte_webgpu.errors import FormatError, UnsupportedError
from pte_webgpu.ops.linear_dq8 import FORMS
from pte_webgpu.runtime.storage import Storage

from tests.support.quant_dq8 import Dq8Case

SHAPES = [(1, 64, 64, 32), (37, 48, 20, 16), (1, 48, 20, 16), (5, 128, 36, 128), (9, 40, 30, 8)]


def run(device, case, variant=None):
    case.options = {"variants": {"linear_dq8": variant}} if variant else None
    g, out, scale, zp = case.graph()
    return g.run(device, out, scale, zp)


@pytest.mark.parametrize("rows,k,n,group", SHAPES)
def test_qparams_match_torchao_bit_for_bit(device, rows, k, n, group):
    case = Dq8Case(rows, k, n, group, seed=rows + k)
    _, scale, zp = run(device, case)
    _, want_scale, want_zp = case.reference()
    assert np.array_equal(scale, want_scale) and np.array_equal(zp, want_zp)


@pytest.mark.parametrize("variant", FORMS)
@pytest.mark.parametrize("rows,k,n,group", SHAPES)
def test_linear_matches_eager_8da4w(device, rows, k, n, group, variant):
    case = Dq8Case(rows, k, n, group, seed=3 * rows + n)
    aligned = group % 8 == 0
    if not aligned and variant != "scalar":
        pytest.skip("word forms need groups of 8")
    out, _, _ = run(device, case, variant)
    want, _, _ = case.reference()
    assert np.abs(out - want).max() <= 1e-4 * max(1.0, np.abs(want).max())


def test_zero_constant_and_tie_rows(device):
    case = Dq8Case(5, 48, 20, 16, seed=9)
    case.x[0] = 0.0  # scale 0 -> eps, zero point -128
    case.x[1] = 1e-37  # (hi - lo) / 255 below the smallest normal -> eps
    case.x[2] = -3.0  # constant negative row
    # scale 1/16 exactly (hi - lo = 255/16): x * 16 lands on halves, rounded to even
    case.x[3] = (np.arange(48) - 24 + 0.5) / 16
    case.x[3, :2] = (-8.0, 7.9375)
    # lo / scale = -100.5: the zero point's own tie (-100, not -101)
    case.x[4] = np.linspace(-6.28125, 9.65625, 48, dtype=np.float32)
    out, scale, zp = run(device, case)
    want, want_scale, want_zp = case.reference()
    assert scale[0] == scale[1] == np.float32(2.0 ** -126) and zp[0] == -128
    assert scale[3] == scale[4] == np.float32(1 / 16) and zp[3] == 0 and zp[4] == -28
    assert np.array_equal(scale, want_scale) and np.array_equal(zp, want_zp)
    assert np.abs(out - want).max() <= 1e-5


@pytest.mark.parametrize("stored_half", [True, False], ids=["f16", "f32-storage"])
@pytest.mark.parametrize("variant", ["mv-i32", "tile4-dp4", "scalar"])
@pytest.mark.parametrize("shape", [(1, 64, 64, 32), (37, 48, 20, 16)])
def test_float16_programs(device, variant, shape, stored_half):
    """force_fp16: float16 x, scales and output, stored as f16 (with shader-f16) or as f32
    (as in Chromium without it); f32 math, the f16 scale rounded before its zero point.
    Seed 11's rows 5 and 12 take another zero point from the unrounded scale."""
    if stored_half and not device.info.traits.shader_f16:
        pytest.skip("no shader-f16 here")
    case = Dq8Case(*shape, seed=11, storage=Storage(half=stored_half))
    if shape[0] > 1:
        case.x[1] = 0.0  # eps: float16's smallest normal
    out, scale, zp = run(device, case, variant)
    want, want_scale, want_zp = case.reference()
    if shape[0] > 1:
        assert scale[1] == 2.0 ** -14 and zp[1] == -128
    assert np.array_equal(scale, want_scale) and np.array_equal(zp, want_zp)
    assert np.abs(out - want).max() <= 2e-3 * max(1.0, np.abs(want).max())  # f16 output


def test_auto_choice_is_noted(device):
    from pte_webgpu.ops.linear_dq8 import VARIANTS
    traits = device.info.traits
    assert VARIANTS.choose(traits, m=1, aligned=True).startswith("mv")
    assert VARIANTS.choose(traits, m=37, aligned=True).startswith("tile4")
    assert VARIANTS.choose(traits, m=37, aligned=False) == "scalar"


@pytest.mark.parametrize("bad,match", [
    (dict(group=0), "group size 0 does not divide K = 48"),
    (dict(group=20), "group size 20 does not divide K = 48"),
    (dict(packed=np.zeros((20, 16), np.uint8)), r"weights \[20, 16\] should be"),
    (dict(sums=np.zeros((3, 8), np.int32)), r"weight sums \[3, 8\] should be"),
    (dict(scales=np.zeros((2, 20), np.float32)), r"weight scales \[2, 20\] should be"),
])
def test_bad_layouts_fail_at_load(device, bad, match):
    case = Dq8Case(3, 48, 20, 16)
    g, out, _, _ = case.graph(**bad)
    with pytest.raises(FormatError, match=match) as e:
        g.run(device, out)
    assert "linear_dq8ca_q4gsw" in str(e.value)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_non_finite_weight_scales_fail_at_load(device, value):
    case = Dq8Case(3, 48, 20, 16)
    ws = np.full((3, 20), 0.01, np.float32)
    ws[1, 7] = value
    g, out, _, _ = case.graph(scales=ws)
    with pytest.raises(FormatError, match="weight scales .* holds"):
        g.run(device, out)


def test_forcing_dp4_where_missing_is_refused(device):
    from dataclasses import replace
    from pte_webgpu.ops.linear_dq8 import VARIANTS
    traits = replace(device.info.traits, packed_dot=False)
    assert "dot4I8Packed" in VARIANTS.why_not("mv-dp4", traits, aligned=True)
    with pytest.raises(UnsupportedError):
        VARIANTS.fit("tile4-i32", device.info, traits, aligned=False)
