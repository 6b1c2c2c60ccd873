"""Pure helpers of the op families: dim normalisation, reduction/permute index math,
view shapes, matmul tiling and the pow exponent classes."""


import pytest
from pte_webgpu.errors import FormatError, UnsupportedError
from pte_webgpu.ops import registry
from pte_webgpu.ops.common import contiguous_strides, normalize_dim, normalize_dims, pow2_size
from pte_webgpu.ops.matmul import _shape, linear_dims, threads_per_side, tile_counts
from pte_webgpu.ops.matmul_choice import parse
from pte_webgpu.ops.reduce import reduced_shape, reduction_layout
from pte_webgpu.ops.unary import POW, SQUARE, pow_params
from pte_webgpu.ops.view import permute_gather, squeeze_shape, unsqueeze_shape, view_shape
from pte_webgpu.shaders import compose


@pytest.mark.parametrize("dim,rank,want", [(0, 3, 0), (-1, 3, 2), (-3, 3, 0), (2, 3, 2),
                                           (0, 0, 0), (-1, 0, 0)])
def test_normalize_dim(dim, rank, want):
    assert normalize_dim(dim, rank, "op") == want


@pytest.mark.parametrize("dim,rank", [(3, 3), (-4, 3), (1, 0)])
def test_normalize_dim_out_of_range(dim, rank):
    with pytest.raises(FormatError, match="out of range"):
        normalize_dim(dim, rank, "op")


def test_normalize_dims_sorts_and_refuses_repeats():
    assert normalize_dims([-1, 0], 3, "op") == [0, 2]
    with pytest.raises(FormatError, match="repeat"):
        normalize_dims([1, -2], 3, "op")


def test_contiguous_strides():
    assert contiguous_strides((2, 3, 4)) == [12, 4, 1]
    assert contiguous_strides(()) == []


@pytest.mark.parametrize("limit,want,size", [(256, 64, 64), (256, 65, 128), (128, 1000, 128),
                                             (48, 1000, 32), (256, 1, 1), (256, 3, 4)])
def test_pow2_workgroup(limit, want, size):
    assert pow2_size(limit, want) == size


# --- reductions ------------------------------------------------------------------------
@pytest.mark.parametrize("shape,dims,kept,reduced", [
    ((1, 8, 64), [2], [(8, 64)], [(64, 1)]),               # last dim: lines of 64
    ((3, 7), [0], [(7, 1)], [(3, 7)]),                     # first dim: stride 7
    ((2, 3, 4), [1], [(2, 12), (4, 1)], [(3, 4)]),         # middle dim: outer x R x inner
    ((2, 3, 4, 5), [2, 3], [(6, 20)], [(20, 1)]),          # adjacent reduced dims merge
    ((2, 3, 4), [0, 2], [(3, 4)], [(2, 12), (4, 1)]),      # two separate reduced runs
    ((2, 1, 3), [0, 2], [], [(6, 1)]),                     # merge across a size-1 dim
    ((1, 1), [1], [], []),                                 # nothing but size-1 dims
    ((4, 5), [], [(20, 1)], []),
])
def test_reduction_layout(shape, dims, kept, reduced):
    assert reduction_layout(shape, dims) == (kept, reduced)


def test_reduction_layout_visits_every_element_once():
    shape, dims = (2, 3, 4, 5), [0, 2]
    kept, reduced = reduction_layout(shape, dims)

    def offsets(runs):
        out = [0]
        for size, stride in runs:
            out = [o + i * stride for o in out for i in range(size)]
        return out
    seen = sorted(b + e for b in offsets(kept) for e in offsets(reduced))
    assert seen == list(range(2 * 3 * 4 * 5))


@pytest.mark.parametrize("shape,dims,keep,want", [((2, 3, 4), [1], False, (2, 4)),
                                                  ((2, 3, 4), [1], True, (2, 1, 4)),
                                                  ((2, 3), [0, 1], False, ()),
                                                  ((2, 3), [0, 1], True, (1, 1))])
def test_reduced_shape(shape, dims, keep, want):
    assert reduced_shape(shape, dims, keep) == want


# --- views -----------------------------------------------------------------------------
def test_view_shape_infers_minus_one():
    assert view_shape((2, 3, 4), [6, -1]) == (6, 4)
    assert view_shape((2, 3, 4), [1, 24]) == (1, 24)
    for bad in ([-1, -1], [5, -1], [-2, 12]):
        with pytest.raises(FormatError):
            view_shape((2, 3, 4), bad)


def test_squeeze_and_unsqueeze_shapes():
    assert squeeze_shape((1, 8, 1, 64), [0, 2]) == (8, 64)
    assert squeeze_shape((1, 8, 64), [1]) == (1, 8, 64)  # only size-1 dims go
    assert unsqueeze_shape((8, 64), 0) == (1, 8, 64)
    assert unsqueeze_shape((8, 64), 2) == (8, 64, 1)
    assert normalize_dim(-1, 3, "unsqueeze") == 2  # unsqueeze normalises with rank + 1


@pytest.mark.parametrize("shape,perm,out,strides", [
    ((2, 3, 4), [2, 0, 1], [4, 6], [1, 4]),          # dims 0,1 stay adjacent: merged
    ((2, 3, 4), [1, 0, 2], [3, 2, 4], [4, 12, 1]),
    ((1, 5), [1, 0], [5], [1]),                       # only a size-1 dim moves: contiguous
    ((2, 3, 4), [0, 1, 2], [24], [1]),
    ((2, 1, 3), [2, 1, 0], [3, 2], [1, 3]),
])
def test_permute_gather(shape, perm, out, strides):
    assert permute_gather(shape, perm) == (out, strides)


# --- matmul ----------------------------------------------------------------------------
@pytest.mark.parametrize("limit,t", [(256, 8), (128, 8), (64, 8), (63, 4), (16, 4), (3, 1)])
def test_matmul_threads_fit_the_adapter(limit, t):
    assert threads_per_side(limit) == t and t * t <= limit


@pytest.mark.parametrize("m,n,tile,want", [(3, 5, 32, (1, 1)), (33, 64, 32, (2, 4)),
                                           (1, 65, 32, (3, 3)), (100, 7, 16, (1, 7))])
def test_tile_counts(m, n, tile, want):
    assert tile_counts(m, n, tile) == want


@pytest.mark.parametrize("name,k,kernel", [
    ("mm4-16x8", 64, "matmul_tile8_vec4_pf"), ("mm4-8x16", 64, "matmul_tile8_vec4_pf"),
    ("mm4-16x4", 64, "matmul_tile8_vec4_pf"), ("mm4-8x16s4", 64, "matmul_tile8_vec4_pf_split"),
    ("mm4-4x16", 64, "matmul_tile8_vec4"), ("mm4-16x8", 63, "matmul_tile8")])
def test_mm_tiles_prefetch_where_a_lanes_share_fits_its_registers(name, k, kernel):
    # 2 TK / TW vec4s per lane and operand, up to 4 (mm4-4x16: 8, staged as it comes);
    # tests/native/test_ops.py runs each of these variants against numpy
    assert _shape(None, parse(name).for_k(k), 100, 100)[0].name == kernel


def test_linear_dims_flatten_leading_dims():
    assert linear_dims((3, 37), (5, 37), (3, 5), "linear") == (3, 5, 37)
    assert linear_dims((2, 4, 37), (5, 37), (2, 4, 5), "linear") == (8, 5, 37)
    assert linear_dims((37,), (5, 37), (5,), "linear") == (1, 5, 37)
    with pytest.raises(FormatError):
        linear_dims((3, 36), (5, 37), (3, 5), "linear")
    with pytest.raises(FormatError):
        linear_dims((3, 37), (5, 37), (5, 3), "linear")


# --- unary -----------------------------------------------------------------------------
@pytest.mark.parametrize("e,want", [(2, (SQUARE, 2.0, 0, 0)), (2.0, (SQUARE, 2.0, 0, 0)),
                                    (3, (POW, 3.0, 1, 1)), (-4, (POW, -4.0, 1, 0)),
                                    (0.5, (POW, 0.5, 0, 0)), (2.0 ** 30, (POW, 2.0 ** 30, 0, 0)),
                                    (float("inf"), (POW, float("inf"), 0, 0))])
def test_pow_params(e, want):
    assert pow_params(e) == want


def test_every_op_family_has_its_shader():
    for name in ("binary", "unary", "reduce", "matmul"):
        assert "@compute" in compose.shader_source(name)
    ops = set(registry.supported_ops())
    assert {"aten.linear.default", "aten.mean.dim", "aten._softmax.default",
            "aten.permute_copy.default", "et_vk.prepack.default", "aten.add.Scalar"} <= ops


@pytest.mark.parametrize("name", ["binary", "unary", "reduce", "matmul", "rms_norm",
                                  "embedding"])
def test_every_storage_array_has_an_f16_form(name):
    """The f16 form turns every f32 storage array and `elem` into f16, nothing else."""
    import re

    from pte_webgpu.shaders import compose

    wide, half = compose.shader_source(name), compose.shader_source(name, half=True)
    assert half.startswith("enable f16;\n")
    assert re.search(r"var<storage, [a-z_]+> \w+: array<(vec4<)?f32>", wide)
    assert not re.search(r"var<storage, [a-z_]+> \w+: array<(vec4<)?f32>", half)
    assert "alias elem = f16;" in half and "alias elem = f32;" not in half
    assert half.count("var<workgroup>") == wide.count("var<workgroup>")  # untouched
    assert half.count("array<i32>") == wide.count("array<i32>")  # e.g. embedding indices


def test_a_shader_without_an_f16_form_says_so():
    from pte_webgpu.shaders import compose

    with pytest.raises(ValueError, match="no f16 form"):
        compose.shader_source("rms_norm_subgroup", half=True)


def _gpu(features=(), invocations=1024, storage=32768, backend="native"):
    from pte_webgpu.gpu.adapter import AdapterInfo
    return AdapterInfo(backend, "nvidia", "", "NVIDIA H200", False, frozenset(features),
                       {"maxComputeInvocationsPerWorkgroup": invocations,
                        "maxComputeWorkgroupSizeX": invocations,
                        "maxComputeWorkgroupStorageSize": storage})


@pytest.mark.parametrize("m,k,n,features,want", [
    (1, 4096, 4096, {"subgroup"}, "gemvsg4-32x2x4"),  # decode: 4 loads in flight
    (1, 576, 49152, {"subgroups"}, "gemvsg4-32x4g2"),  # short K, wide N: column groups
    (1, 1536, 576, (), "gemv4-32x1"),
    (1, 2048, 576, (), "gemv4-32x1x4"),
    (3, 37, 2048, (), "gemv-32x2"),  # K % 4 != 0: scalar loads
    (32, 576, 576, (), "gemv4-32x1"),  # prefill rows: matrix-vector up to 256 rows
    (64, 576, 1536, (), "gemv4-32x4"),
    (256, 1536, 576, (), "gemv4-32x4"),
    (257, 576, 1536, (), "mm4-8x16"),  # few tiles, but K too short to split (MIN_SPAN_K)
    (257, 1536, 576, (), "mm4-8x16s4"),  # few tiles: K split (k_splits), spans >= 384
    (1024, 1536, 576, (), "mm4-8x16s4"),
    (1024, 2048, 3072, (), "mm4-16x16s2"),  # 2 spans bring the lanes past SPLIT_LANES
    (2048, 2048, 2048, (), "mm4-16x16"),  # tiles enough
])
def test_matmul_choice_on_a_gpu(m, k, n, features, want):
    from pte_webgpu.ops import matmul_choice
    assert matmul_choice.choose(_gpu(features), m, n, k).name == want


@pytest.mark.parametrize("m,k,n,want", [
    (1, 4096, 4096, "gemvsg8-32x2"),  # float16 decode: 16-byte loads of 8 halves
    (1, 576, 49152, "gemvsg8-32x4g4"),
    (1, 36, 64, "gemvsg4-32x1"),  # K % 8 != 0: vec4 loads
    (4, 4096, 4096, "gemvsg4-32x2"),
])
def test_matmul_choice_for_float16(m, k, n, want):
    from pte_webgpu.ops import matmul_choice
    assert matmul_choice.choose(_gpu({"subgroup"}), m, n, k, half=True).for_k(k).name == want


@pytest.mark.parametrize("n,want", [
    (576, [(1023, "mm4-8x16"), (256, "gemv4-32x4"), (8, "gemv4-32x1")]),  # decode: the same
    (49152, [(1023, "mm4-16x16"), (256, "gemv4-32x4"), (1, "gemv4-32x4g2")]),
])
def test_a_dynamic_linear_records_a_form_per_row_range(n, want):
    """A prefill bound of 1023 rows: the bound's tiles, then each smaller row limit's own
    pick where it differs (the executes of each row range run that one)."""
    from pte_webgpu.ops import matmul_choice
    v = matmul_choice.choose(_gpu(()), 1023, n, 576)
    forms = matmul_choice.row_forms(_gpu(()), 1023, n, 576, v)
    assert [(top, f.name) for top, f in forms] == want


def test_matmul_choice_fits_small_adapters():
    from pte_webgpu.ops import matmul_choice
    from pte_webgpu.ops.variants import TYPICAL_ADAPTERS
    # 16 KB of workgroup storage: 16 x 16 tiles step K by 8; CPU adapters: one SIMD
    # vector per matrix-vector workgroup (4 lanes when the subgroup width is unknown)
    assert matmul_choice.choose(_gpu(storage=16384), 2048, 2048, 2048).name == "mm4-16x16"
    assert matmul_choice.choose(_gpu(storage=8192), 2048, 2048, 2048).name == "mm4-16x8"
    assert matmul_choice.choose(_gpu(invocations=64), 2048, 2048, 2048).name == "mm4-8x16"
    cpu = TYPICAL_ADAPTERS["chromium-swiftshader"]
    assert matmul_choice.choose(cpu, 1, 64, 64).name == "gemvsg4-4x4"
    assert matmul_choice.choose(cpu, 37, 64, 64).name == "mm4-8x8"
    assert matmul_choice.choose(cpu, 1, 64, 63).name == "gemvsg-4x4"  # K % 4: scalar loads
    assert matmul_choice.parse("mm4-8x16s4").splits == 4
    assert matmul_choice.parse("mm-8x8s3").name == "mm-8x8s3"
    for name in ("gemv4-64x3", "mm4-16x6", "gemv4-48x1", "fast", "gemv4-32x1s2", "mm4-8x16s16",
                 "mm4-8x16s0"):
        with pytest.raises(UnsupportedError):
            matmul_choice.parse(name)
