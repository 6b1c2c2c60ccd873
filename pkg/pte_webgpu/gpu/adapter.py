"""What the runtime knows about the adapter: ``AdapterInfo`` (facts both backends fill
as the adapter reports them) and ``AdapterTraits`` (what kernels decide on, derived
from those facts in this one place).

Ops read ``info.traits`` (``ctx.traits`` in a build): never vendor strings or limit
names of their own.
"""

from __future__ import annotations

from dataclasses import dataclass

# WebGPU limit names (camelCase, as navigator.gpu spells them) the runtime relies on.
LIMIT_NAMES = (
    "maxBufferSize", "maxStorageBufferBindingSize", "maxUniformBufferBindingSize",
    "maxComputeWorkgroupStorageSize", "maxComputeInvocationsPerWorkgroup",
    "maxComputeWorkgroupSizeX", "maxComputeWorkgroupSizeY", "maxComputeWorkgroupSizeZ",
    "maxComputeWorkgroupsPerDimension", "maxStorageBuffersPerShaderStage",
    "maxUniformBuffersPerShaderStage", "maxBindingsPerBindGroup",
    "minStorageBufferOffsetAlignment", "minUniformBufferOffsetAlignment",
)
# Features used when the adapter has them.
# "subgroups" is the browser's name, "subgroup" wgpu-native's.
# A timestamp between two dispatches of a pass (profiles of a step as it runs, with its
# barriers; llm/step_cost.py's timeline): wgpu-native's feature, Chromium's (developer
# features on)
IN_PASS_TIMESTAMPS = ("timestamp-query-inside-passes",
                      "chromium-experimental-timestamp-query-inside-passes")
WANTED_FEATURES = ("timestamp-query", "shader-f16", "subgroups", "subgroup", *IN_PASS_TIMESTAMPS)

# The WGSL language feature of dot4I8Packed, pack4xI8 & co.
PACKED_DOT = "packed_4x8_integer_dot_product"
# Software rasterisers: a workgroup runs as SIMD lanes on one CPU thread.
_CPU_WORDS = ("swiftshader", "llvmpipe", "lavapipe", "softpipe", "warp")
# WebGPU's guaranteed defaults, used when an adapter does not report a limit.
_DEFAULT_INVOCATIONS = 256
_DEFAULT_WORKGROUP_STORAGE = 16384


@dataclass(frozen=True)
class AdapterTraits:
    """The adapter as kernels see it."""

    is_cpu: bool  # a software adapter: barriers cost more than arithmetic
    subgroups: bool  # our WGSL may use `enable subgroups;` (subgroupAdd, ...)
    # subgroupAdd & co. usable at all: the browser's "subgroups" (with `enable
    # subgroups;`) or wgpu-native's "subgroup" (naga takes the builtins without it)
    subgroup_builtins: bool
    subgroup_sizes: tuple[int, int] | None  # (min, max) lanes, when reported
    max_invocations: int  # per workgroup, and along x (1-D workgroups)
    workgroup_storage: int  # bytes of var<workgroup> per workgroup
    shader_f16: bool  # f16 storage and arithmetic in WGSL
    timestamps: bool  # timestamp queries (per-dispatch GPU times)
    timestamps_in_pass: bool = False  # between the dispatches of one pass too
    packed_dot: bool = False  # WGSL dot4I8Packed / pack4xI8 (packed_4x8_integer_dot_product)


@dataclass(frozen=True)
class AdapterInfo:
    backend: str  # "browser" or "native"
    vendor: str
    architecture: str
    description: str
    is_fallback: bool
    features: frozenset  # of WANTED_FEATURES, those the device was created with
    limits: dict  # LIMIT_NAMES -> value, as the device was created with
    subgroup_sizes: tuple[int, int] | None = None
    wgsl_features: frozenset = frozenset()  # WGSL language features (wgslLanguageFeatures)

    def summary(self) -> str:
        kind = " (fallback/software)" if self.is_fallback else ""
        name = " ".join(x for x in (self.vendor, self.architecture, self.description) if x)
        return f"{self.backend}: {name or 'unknown adapter'}{kind}"

    @property
    def traits(self) -> AdapterTraits:
        return traits_of(self)


def traits_of(info: AdapterInfo) -> AdapterTraits:
    text = f"{info.vendor} {info.architecture} {info.description}".lower()
    lim = info.limits
    return AdapterTraits(
        is_cpu=bool(info.is_fallback) or any(w in text for w in _CPU_WORDS),
        # Browser only: wgpu-native's WGSL front end (naga) rejects `enable subgroups;`.
        subgroups=info.backend == "browser" and "subgroups" in info.features,
        subgroup_builtins=bool({"subgroups", "subgroup"} & set(info.features)),
        subgroup_sizes=info.subgroup_sizes,
        max_invocations=int(min(lim.get("maxComputeInvocationsPerWorkgroup")
                                or _DEFAULT_INVOCATIONS,
                                lim.get("maxComputeWorkgroupSizeX") or _DEFAULT_INVOCATIONS)),
        workgroup_storage=int(lim.get("maxComputeWorkgroupStorageSize")
                              or _DEFAULT_WORKGROUP_STORAGE),
        shader_f16="shader-f16" in info.features,
        timestamps="timestamp-query" in info.features,
        timestamps_in_pass="timestamp-query" in info.features
        and any(f in info.features for f in IN_PASS_TIMESTAMPS),
        packed_dot=PACKED_DOT in info.wgsl_features,
    )


def subgroup_sizes(low, high) -> tuple[int, int] | None:
    """(min, max) from what an adapter reports; None when it reports no sizes."""
    try:
        low, high = int(low), int(high)
    except (TypeError, ValueError):
        return None
    return (low, high) if 0 < low <= high else None
