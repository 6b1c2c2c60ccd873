"""rms_norm variant names, the selection rule and forcing (no GPU needed)."""

import pytest
from pte_webgpu.errors import UnsupportedError
from pte_webgpu.gpu.adapter import AdapterInfo
from pte_webgpu.ops import rms_norm
from pte_webgpu.ops.rms_norm import Variant, choose, parse
from pte_webgpu.runtime.options import RuntimeOptions


def adapter(backend="native", vendor="", arch="", desc="", fallback=False, features=(),
            invocations=256):
    return AdapterInfo(backend, vendor, arch, desc, fallback, frozenset(features), {
        "maxComputeInvocationsPerWorkgroup": invocations,
        "maxComputeWorkgroupSizeX": invocations, "maxComputeWorkgroupStorageSize": 16384})


SWIFTSHADER = adapter("browser", "google", "swiftshader", "", True,
                      ("subgroups", "timestamp-query"))
LAVAPIPE = adapter("native", "llvmpipe", "", "llvmpipe (LLVM 15.0.6, 256 bits)", True,
                   ("timestamp-query",), 1024)
H200 = adapter("native", "NVIDIA", "", "NVIDIA H200", False, ("timestamp-query",), 1024)
BROWSER_GPU = adapter("browser", "nvidia", "hopper", "", False, ("subgroups",), 1024)


@pytest.mark.parametrize("name", ["tree-64", "tree4-256", "tile4-16x256", "tile-2x64",
                                  "row4-64", "row-16", "sg4-4", "sg-64", "tree4-256-split",
                                  "tile4-16x256-inline", "sg-4-split", "row-16-inline"])
def test_names_round_trip(name):
    assert parse(name).name == name


def test_rescue_suffix():
    """Where a rare row is redone: a pipeline constant, and a second dispatch for split."""
    assert parse("tree4-256-tail") == parse("tree4-256")  # the default needs no suffix
    assert parse("tree4-256").rescue == rms_norm.DEFAULT_RESCUE == "tail"
    assert parse("tree4-256-split").constants["rescue_mode"] == 2
    assert parse("sg4-4-inline").constants == {"wg_size": 4, "rescue_mode": 0}
    assert parse("tile4-16x256-split").for_width(6).name == "tile-16x256-split"


@pytest.mark.parametrize("name", ["tree", "tree4-100", "tile4-16", "tile4-512x256",
                                  "row4-64x2", "warp-32", "tree4c-256", "", "tree4-256-late",
                                  "tree4-256split", "tree4-256-split-inline"])
def test_bad_names_are_rejected(name):
    with pytest.raises(UnsupportedError):
        parse(name)


def test_variant_shapes():
    assert parse("tree4-256") == Variant("tree", True, 256, 256)
    assert parse("row4-64") == Variant("row", True, 64, 1)
    tile = parse("tile4-16x256")
    assert (tile.lanes, tile.wg_size, tile.rows_per_group) == (16, 256, 16)
    assert tile.workgroups(4096) == 256 and tile.workgroups(4097) == 257
    assert tile.constants == {"wg_size": 256, "lanes": 16, "rescue_mode": 1}
    assert parse("sg4-4").constants == {"wg_size": 4, "rescue_mode": 1}
    assert parse("sg4-4").shader == "rms_norm_subgroup"
    assert parse("tree4-256").entry == "main_vec4" and parse("tree-64").entry == "main"


def test_vec4_falls_back_to_scalar_loads_on_odd_widths():
    v = parse("tile4-16x256")
    assert v.for_width(4096) is v
    assert v.for_width(4095) == Variant("tile", False, 256, 16)
    assert v.for_width(4095).name == "tile-16x256"


def test_seed_design_is_still_a_variant():
    assert parse(rms_norm.SEED) == Variant("tree", False, 64, 64)


@pytest.mark.parametrize("rows,width,want", [
    (1, 4096, "tree4-512"), (32, 4096, "tree4-512"), (512, 4096, "tree4-256"),
    (65536, 4096, "tree4-256"), (64, 256, "tile4-32x256"), (4096, 64, "tile4-8x256"),
    (3, 130, "tile-32x256"), (5, 1, "tile-1x256"), (70000, 4, "tile4-1x256")])
def test_rule_on_a_discrete_gpu(rows, width, want):
    assert choose(H200, rows, width).name == want


def test_rule_clamps_to_the_adapter():
    small = adapter(invocations=128)
    assert choose(small, 1, 4096).name == "tree4-128"
    assert choose(small, 4096, 64).name == "tile4-8x128"


@pytest.mark.parametrize("rows,width,want", [
    (1, 4096, "sg4-4"), (15, 4096, "sg4-4"), (32, 4096, "row4-16"), (2048, 4096, "row4-16"),
    (64, 256, "row4-16"), (4096, 64, "row4-16"), (3, 1027, "sg-4"), (3, 7, "sg-4"),
    (100, 7, "row-16")])
def test_rule_on_swiftshader(rows, width, want):
    assert choose(SWIFTSHADER, rows, width).name == want


def test_rule_on_lavapipe_never_uses_subgroups():
    # CPU adapter (no barriers) but native: naga has no `enable subgroups;`.
    assert choose(LAVAPIPE, 2048, 4096).name == "row4-16"
    assert choose(LAVAPIPE, 1, 4096).name == "row4-16"
    assert LAVAPIPE.traits.is_cpu and not LAVAPIPE.traits.subgroups


def test_cpu_detection():
    assert SWIFTSHADER.traits.is_cpu and not H200.traits.is_cpu
    assert adapter(desc="SwiftShader Device (Subzero)").traits.is_cpu


@pytest.mark.parametrize("a", [SWIFTSHADER, LAVAPIPE, H200, BROWSER_GPU],
                         ids=["swiftshader", "lavapipe", "h200", "browser-gpu"])
@pytest.mark.parametrize("width", [64, 4096, 4095, 7])
def test_candidates_and_choice_run_on_their_adapter(a, width):
    cands = rms_norm.candidates(a, width)
    assert cands and len(set(cands)) == len(cands)
    assert all(rms_norm.supported(v, a) is None for v in cands)
    assert rms_norm.SEED in [v.name for v in cands]
    for rows in (1, 4096):
        assert rms_norm.supported(choose(a, rows, width), a) is None
    if width % 4:
        assert not any(v.vec4 for v in cands)


class Ctx:
    """What VARIANTS.pick reads and writes of a build context."""

    def __init__(self, **options):
        self.options = RuntimeOptions.of(options)
        self.noted = {}

    def note_kernel(self, op, **info):
        self.noted = info


def pick(adapter, rows, width, **options):
    ctx = Ctx(**options)
    variant = rms_norm.VARIANTS.pick(ctx, "op", adapter, rows=rows, width=width)
    assert ctx.noted == {"variant": variant.name, "picked": ctx.noted["picked"]}
    return variant, ctx.noted["picked"]


def test_forcing_by_environment_and_option(monkeypatch):
    monkeypatch.delenv(rms_norm.VARIANTS.env_var, raising=False)
    assert pick(H200, 512, 4096) == (parse("tree4-256"), "auto")
    monkeypatch.setenv(rms_norm.VARIANTS.env_var, "tree-64")
    assert pick(H200, 512, 4096) == (parse("tree-64"), "forced")
    # An explicit build option wins over the environment.
    forced = {"variants": {"rms_norm": "row4-64"}}
    assert pick(H200, 512, 4096, **forced)[0].name == "row4-64"
    assert pick(H200, 512, 4095, **forced)[0].name == "row-64"


def test_forcing_what_the_adapter_cannot_run_fails_clearly(monkeypatch):
    with pytest.raises(UnsupportedError, match="subgroups"):
        pick(H200, 8, 64, variants={"rms_norm": "sg4-4"})
    with pytest.raises(UnsupportedError, match="invocations"):
        pick(SWIFTSHADER, 8, 64, variants={"rms_norm": "tree4-1024"})
    monkeypatch.setenv(rms_norm.VARIANTS.env_var, "fast")  # the environment is checked too
    with pytest.raises(UnsupportedError, match="unknown rms_norm variant"):
        pick(H200, 8, 64)
