"""conv variant names, the selection rule on a table of shapes and adapters, and
forcing (no GPU needed)."""

import pytest
from pte_webgpu.errors import InputError, UnsupportedError
from pte_webgpu.gpu.adapter import AdapterInfo
from pte_webgpu.ops.conv_choice import VARIANTS, Variant, choose, parse
from pte_webgpu.runtime.options import RuntimeOptions


def adapter(backend="native", vendor="", desc="", fallback=False, features=(),
            invocations=256, storage=16384):
    return AdapterInfo(backend, vendor, "", desc, fallback, frozenset(features), {
        "maxComputeInvocationsPerWorkgroup": invocations,
        "maxComputeWorkgroupSizeX": invocations, "maxComputeWorkgroupStorageSize": storage})


SWIFTSHADER = adapter("browser", "google", "", True, ("subgroups",))
LAVAPIPE = adapter("native", "llvmpipe", "llvmpipe (LLVM 15.0.6, 256 bits)", True, (), 1024)
H200 = adapter("native", "NVIDIA", "NVIDIA H200", False, (), 1024, 49152)
SMALL_GPU = adapter("browser", "arm", "Mali", False, (), 128, 4096)


def conv(cin, cout, k=9, pixels=56 * 56, groups=1, batch=1, pointwise=False,
         transposed=False):
    return dict(cin=cin, cout=cout, groups=groups, k=k, pixels=pixels, batch=batch,
                pointwise=pointwise, transposed=transposed)


@pytest.mark.parametrize("name", ["direct", "depthwise", "matmul", "gemm4-16x16", "gemm-8x4",
                                  "gemm4-32x8", "gemm4-8x16k16", "gemm-8x8k3"])
def test_names_round_trip(name):
    assert parse(name).name == name


@pytest.mark.parametrize("name", ["gemm", "gemm4-12x8", "gemm4-16x6", "gemm8-16x8", "tiled",
                                  "", "gemm4-4x8", "gemm4-8x8k0", "gemm4-8x8k65"])
def test_bad_names_are_rejected(name):
    with pytest.raises(UnsupportedError):
        parse(name)


def test_vec4_weights_need_k_divisible_by_4():
    assert parse("gemm4-16x8").for_k(147).name == "gemm-16x8"  # the 7x7 stem of 3 channels
    assert parse("gemm4-16x8").for_k(576).name == "gemm4-16x8"


# (shape, adapter, expected variant)
TABLE = [
    # ResNet-18 at 224: 3x3 at 56/28/14/7, the stem, the 1x1 downsamples
    (conv(64, 64), H200, "gemm4-8x16k16"),  # 49 tiles of 64 lanes; 36 K steps in all
    (conv(256, 256, pixels=56 * 56, batch=4), H200, "gemm4-16x16"),  # 2 x 25 x 4 >= 128
    (conv(128, 128, pixels=28 * 28), H200, "gemm4-8x16k32"),  # 2 x 13 tiles of 64
    (conv(512, 512, pixels=7 * 7), H200, "gemm4-8x16k64"),  # 8 tiles, K = 4608: at most 64
    (conv(3, 64, k=49, pixels=112 * 112), H200, "gemm-8x16k4"),  # K = 147: 10 steps
    (conv(64, 128, k=1, pixels=28 * 28), H200, "gemm4-8x16k4"),  # 1x1 stride 2: 4 K steps
    (conv(144, 24, k=1, pointwise=True), H200, "gemm4-8x16k8"),  # too few out channels
    (conv(576, 96, k=1, pixels=14 * 14, pointwise=True), H200, "matmul"),
    (conv(256, 512, k=1, pixels=7 * 7, pointwise=True), H200, "matmul"),
    # MobileNetV2: depthwise, multiplier 1; expand/project 1x1
    (conv(96, 96, groups=96, pixels=56 * 56), H200, "depthwise"),
    (conv(96, 96, groups=96, pixels=56 * 56), SWIFTSHADER, "depthwise"),
    (conv(16, 96, k=1, pointwise=True), H200, "matmul"),
    # CPU adapters: no barriers
    (conv(64, 64), LAVAPIPE, "direct"),
    (conv(64, 64), SWIFTSHADER, "direct"),
    (conv(16, 96, k=1, pointwise=True), LAVAPIPE, "direct"),
    # transposed, few channels per group, batch > 1 (plan kernels), small adapters
    (conv(64, 32, transposed=True), H200, "direct"),
    (conv(6, 9, groups=3), H200, "direct"),
    (conv(16, 96, k=1, pointwise=True, batch=2), H200, "gemm4-8x16"),
    (conv(64, 64), SMALL_GPU, "gemm4-8x8k16"),  # 64 lanes, 4 KiB: K steps of 8
]


@pytest.mark.parametrize("shape,adapter,want", TABLE)
def test_the_rule_on_a_table_of_shapes(shape, adapter, want):
    pick = choose(adapter, **shape)
    assert pick.name == want
    assert VARIANTS.why_not(pick, adapter, **shape) is None


def test_supported_names_why_not():
    assert "not depthwise" in VARIANTS.why_not(parse("depthwise"), H200, **conv(64, 64))
    assert "transposed" in VARIANTS.why_not(parse("gemm4-8x8"), H200,
                                            **conv(64, 32, transposed=True))
    assert "1x1" in VARIANTS.why_not(parse("matmul"), H200, **conv(64, 64))
    assert "exceed" in VARIANTS.why_not(parse("gemm4-16x8"), SMALL_GPU, **conv(64, 64))
    assert "storage" in VARIANTS.why_not(parse("gemm4-8x32"), SMALL_GPU, **conv(64, 64))
    assert VARIANTS.why_not(Variant("direct"), SMALL_GPU, **conv(64, 32, transposed=True)) is None


def test_candidates_are_runnable_and_distinct():
    got = VARIANTS.candidates(H200, **conv(64, 64))
    assert got and all(VARIANTS.why_not(v, H200, **conv(64, 64)) is None for v in got)
    assert len({v.name for v in got}) == len(got)
    assert {"direct", "gemm4-16x16"} <= {v.name for v in got}
    assert "depthwise" in {v.name for v in VARIANTS.candidates(H200, **conv(8, 8, groups=8))}


def test_forcing_is_checked_when_options_are_made():
    assert RuntimeOptions.of({"variants": {"conv": "gemm4-8x8"}}).variants == {"conv": "gemm4-8x8"}
    with pytest.raises(InputError, match="conv variant 'gemm4-7x8'"):
        RuntimeOptions.of({"variants": {"conv": "gemm4-7x8"}})
