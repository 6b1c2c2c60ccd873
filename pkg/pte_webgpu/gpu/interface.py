"""The small GPU interface the runtime uses; backends: browser.py, native.py.

Only this folder touches WebGPU. Work is recorded once at load as a list of
steps (dispatches and buffer copies); ``run`` replays it with one command
encoder and one submit, then maps the output staging buffers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..errors import GpuLimitError

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
WANTED_FEATURES = ("timestamp-query", "shader-f16", "subgroups")


@dataclass(frozen=True)
class AdapterInfo:
    backend: str  # "browser" or "native"
    vendor: str
    architecture: str
    description: str
    is_fallback: bool
    features: frozenset
    limits: dict

    def summary(self) -> str:
        kind = " (fallback/software)" if self.is_fallback else ""
        name = " ".join(x for x in (self.vendor, self.architecture, self.description) if x)
        return f"{self.backend}: {name or 'unknown adapter'}{kind}"


@dataclass
class Buffer:
    handle: object
    size: int
    label: str


@dataclass(frozen=True)
class Dispatch:
    pipeline: object
    bind_group: object
    grid: tuple[int, int, int]
    label: str


@dataclass(frozen=True)
class Copy:
    src: Buffer
    dst: Buffer
    size: int
    label: str


@dataclass
class Recording:
    """Work recorded at load: passes of dispatches separated by copies."""

    steps: list = field(default_factory=list)  # Dispatch | Copy, in order


def encode_steps(steps, begin_pass, dispatch, copy) -> None:
    """Walk recorded steps: consecutive dispatches share one compute pass (WebGPU orders
    dispatches within a pass); a buffer copy has to end the pass first."""
    compute = None
    for step in steps:
        if isinstance(step, Copy):
            if compute is not None:
                compute.end()
                compute = None
            copy(step)
            continue
        if compute is None:
            compute = begin_pass()
        dispatch(compute, step)
    if compute is not None:
        compute.end()


def align4(n: int) -> int:
    return max(4, (n + 3) & ~3)


def fold_grid(groups: int, max_per_dim: int) -> tuple[int, int, int]:
    """Workgroup grid for ``groups`` workgroups; beyond one dimension's limit, fold to 2-D.

    Shaders recover the flat workgroup index as ``wid.x + wid.y * nwg.x`` and
    skip indices >= groups.
    """
    if groups <= max_per_dim:
        return (max(groups, 1), 1, 1)
    # A near-square fold wastes at most one partial row of workgroups.
    x = min(max_per_dim, math.isqrt(groups - 1) + 1)
    y = -(-groups // x)
    if y > max_per_dim:
        raise GpuLimitError(f"{groups} workgroups exceed {max_per_dim} x {max_per_dim}")
    return (x, y, 1)


class GpuDevice:
    """Base class: bookkeeping shared by backends. Subclasses implement the _hooks."""

    info: AdapterInfo

    def __init__(self, info: AdapterInfo):
        self.info = info
        self.live_buffers: set[int] = set()
        self._buffers: dict[int, Buffer] = {}

    # --- resources -------------------------------------------------------------------
    def create_buffer(self, size: int, usage: tuple[str, ...], label: str) -> Buffer:
        size = align4(size)
        limit = self.info.limits.get("maxBufferSize")
        if limit and size > limit:
            raise GpuLimitError(f"buffer {label!r} needs {size} bytes; the adapter's "
                                f"maxBufferSize is {limit}")
        buf = Buffer(self._create_buffer(size, usage, label), size, label)
        self._buffers[id(buf)] = buf
        return buf

    def destroy_buffer(self, buf: Buffer) -> None:
        if self._buffers.pop(id(buf), None) is not None:
            self._destroy_buffer(buf.handle)

    @property
    def live_buffer_count(self) -> int:
        return len(self._buffers)

    def limit(self, name: str, default: int) -> int:
        return int(self.info.limits.get(name) or default)

    # --- hooks for backends ------------------------------------------------------------
    def _create_buffer(self, size, usage, label):
        raise NotImplementedError

    def _destroy_buffer(self, handle):
        raise NotImplementedError

    def write_buffer(self, buf: Buffer, data, offset: int = 0) -> None:
        raise NotImplementedError

    async def create_pipeline(self, wgsl: str, entry: str, constants: dict, label: str):
        """Compile and build a compute pipeline; ShaderCompileError / GpuValidationError."""
        raise NotImplementedError

    def bind_group(self, pipeline, entries: list[tuple[int, Buffer, int]], label: str):
        """entries: (binding, buffer, byte size) for group 0 of ``pipeline``."""
        raise NotImplementedError

    async def run(self, recording: Recording, reads: list[tuple[Buffer, Buffer, int]],
                  timestamps=None) -> list[bytes]:
        """Encode ``recording`` plus copies src→staging, submit once, return staging bytes."""
        raise NotImplementedError

    async def push_error_scopes(self) -> None:
        raise NotImplementedError

    async def pop_error_scopes(self, what: str) -> None:
        """Raise GpuValidationError if anything since push_error_scopes failed."""
        raise NotImplementedError

    def close(self) -> None:
        for buf in list(self._buffers.values()):
            self.destroy_buffer(buf)
