"""The public API without a GPU: method metadata against what the exporter recorded,
operator_names, typed Runtime options, kernel variants and adapter traits."""

import json

import pte_webgpu
import pytest
from pte_webgpu import formats
from pte_webgpu.gpu.adapter import AdapterInfo, subgroup_sizes
from pte_webgpu.model.method_meta import method_meta
from pte_webgpu.model.program_file import KernelCall
from pte_webgpu.ops import variants
from pte_webgpu.runtime.options import RuntimeOptions, names

from tests.support.fixture_index import FIXTURES

# Every fixture whose export script wrote its json (inputs, outputs, delegates' ops); the
# benchmarks' own fixtures (vision_bench/) describe themselves otherwise.
DESCRIBED = sorted(p for p in FIXTURES.rglob("*.json")
                   if p.with_suffix(".pte").exists() and p.name != "index.json"
                   and {"inputs", "delegates"} <= set(json.loads(p.read_text())))


@pytest.mark.parametrize("path", DESCRIBED, ids=lambda p: p.stem)
def test_metadata_matches_the_export(path):
    meta_json = json.loads(path.read_text())
    file = formats.open_program(path.with_suffix(".pte").read_bytes(),
                                [(p, (path.parent / p).read_bytes())
                                 for p in meta_json.get("ptd_files", [])])
    (plan,) = file.plans
    meta = method_meta(plan)
    assert meta.name == "forward"
    for infos, want in ((meta.inputs, meta_json["inputs"]), (meta.outputs, meta_json["outputs"])):
        assert len(infos) == len(want)
        for info, w in zip(infos, want):
            assert info.kind == "tensor"
            assert info.shape == tuple(w["shape"]) and info.sizes() == info.shape
            assert info.dtype == w["dtype"]
            assert info.dim_order == tuple(range(len(w["shape"])))  # contiguous exports
            itemsize = {"float32": 4, "float16": 2, "int64": 8, "int32": 4,
                        "bool": 1}[w["dtype"]]
            n = 1
            for d in w["shape"]:
                n *= d
            assert info.nbytes == n * itemsize
    assert [d.backend for d in meta.delegates] == [d["id"] for d in meta_json["delegates"]]
    assert [list(d.ops) for d in meta.delegates] == [d["vk_ops"] for d in meta_json["delegates"]]
    assert sorted(meta.operators) == sorted(meta_json["non_delegated_ops"])
    # one call per delegate and per kernel call (an operator may be called more than once;
    # these exports have no moves or jumps)
    kernel_calls = sum(isinstance(i, KernelCall) for i in plan.instructions)
    assert meta.instruction_count == len(meta.delegates) + kernel_calls
    assert kernel_calls >= len(meta.operators)
    assert meta.num_inputs() == len(meta.inputs) and meta.num_outputs() == len(meta.outputs)
    assert meta.input_tensor_meta(0) is meta.inputs[0]
    with pytest.raises(IndexError):
        meta.output_tensor_meta(len(meta.outputs))


def test_operator_names_is_the_set_the_runtime_runs():
    ops = pte_webgpu.operator_names()
    assert isinstance(ops, set)
    assert {"aten.cos.default", "et_vk.rms_norm.default", "aten.linear.default",
            "aten.add.Scalar"} <= ops
    assert "aten.unfold_copy.default" not in ops  # unfold_shrink_1x4x9 is the refused example


# --- options -------------------------------------------------------------------------
def test_options_have_types_and_defaults():
    opts = RuntimeOptions()
    assert (opts.float16, opts.variants) == ("auto", {})
    assert dict(opts) == {"float16": "auto", "variants": {}, "max_alloc_bytes": 4 << 30,
                          "max_ops": 20_000, "fuse": True} and set(names()) == set(opts)
    given = {"variants": {"matmul": "dot"}}
    opts = RuntimeOptions.of(given)
    given["variants"]["matmul"] = "tiled"  # a later change to the caller's dict is not seen
    assert opts.variants == {"matmul": "dot"} and opts["variants"] == {"matmul": "dot"}
    assert RuntimeOptions.of(opts) is opts and RuntimeOptions.of(None) == RuntimeOptions()


@pytest.mark.parametrize("options,message", [
    ({"float_16": "f32"}, "unknown runtime option 'float_16'; valid options: float16, "
                          "variants, max_alloc_bytes, max_ops, fuse"),
    ({"fuse": 1}, "fuse must be a bool, got int"),
    ({"max_ops": 0}, "max_ops=0: use a positive integer"),
    ({"rms_norm_variant": "tree-64"}, r"variants=\{'rms_norm': ...\}"),
    ({"float16": 16}, "float16 must be a str, got int"),
    ({"float16": "half"}, "float16='half': use one of 'auto', 'f32'"),
    ({"variants": "dot"}, "variants must be a Mapping"),
    ({"variants": {"fft": "x"}}, "no op family 'fft'.*matmul, norm, reduce, rms_norm"),
    ({"variants": {"matmul": "fast"}}, "matmul variant 'fast'"),
    ({"variants": {"reduce": None}}, "'reduce' must map to a variant name"),
    ({"variants": {"rms_norm": "tree4-100"}}, "rms_norm variant 'tree4-100'"),
    (["float16"], "options must be a dict"),
])
def test_bad_options_name_what_is_valid(options, message):
    with pytest.raises(pte_webgpu.InputError, match=message):
        RuntimeOptions.of(options)


def test_the_readme_documents_every_option_and_family():
    readme = (FIXTURES.parents[1] / "README.md").read_text()
    table = readme[readme.index("### Runtime options"):]
    for name in names():
        assert f"| `{name}` |" in table, name
    for family in variants.families():
        assert f'"{family}"' in table, family


def test_every_family_with_variants_is_declared_once():
    fams = variants.families()
    assert set(fams) >= {"rms_norm", "matmul", "reduce", "sdpa", "linear_q8", "linear_q4",
                         "linear_dq8", "conv", "norm"}
    for fam in fams.values():
        assert fam.env_var == f"PTE_WEBGPU_{fam.family.upper()}"
        for name in fam.names:
            fam.check(name)  # the listed names are valid
    with pytest.raises(ValueError, match="twice"):
        variants.declare("matmul", ("x",))


# --- adapter traits ------------------------------------------------------------------
def info(backend="browser", vendor="", desc="", fallback=False, features=(), limits=None,
         sizes=None):
    return AdapterInfo(backend, vendor, "", desc, fallback, frozenset(features),
                       limits or {}, sizes)


def test_traits_are_derived_once_for_both_backends():
    swift = info("browser", "google", "", True, {"subgroups", "timestamp-query"},
                 {"maxComputeInvocationsPerWorkgroup": 256, "maxComputeWorkgroupSizeX": 128,
                  "maxComputeWorkgroupStorageSize": 32768}, (4, 4)).traits
    assert swift.is_cpu and swift.subgroups and swift.subgroup_sizes == (4, 4)
    assert (swift.max_invocations, swift.workgroup_storage) == (128, 32768)
    assert swift.timestamps and not swift.shader_f16
    lavapipe = info("native", "llvmpipe", "llvmpipe (LLVM 15)", False,
                    {"subgroups", "shader-f16"}).traits
    # a CPU by its name; subgroups never natively (naga has no `enable subgroups;`)
    assert lavapipe.is_cpu and not lavapipe.subgroups and lavapipe.shader_f16
    gpu = info("native", "NVIDIA", "NVIDIA H200").traits
    assert not gpu.is_cpu and gpu.max_invocations == 256 and gpu.workgroup_storage == 16384
    # the builtins without `enable subgroups;`: wgpu-native's "subgroup" feature (naga)
    assert swift.subgroup_builtins and lavapipe.subgroup_builtins and not gpu.subgroup_builtins
    assert info("native", "NVIDIA", "NVIDIA H200", features={"subgroup"}).traits.subgroup_builtins


@pytest.mark.parametrize("low,high,want", [(4, 128, (4, 128)), (None, None, None),
                                           (0, 32, None), (64, 32, None), ("8", "8", (8, 8))])
def test_subgroup_sizes_as_reported(low, high, want):
    assert subgroup_sizes(low, high) == want
