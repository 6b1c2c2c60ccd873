"""Op registry: VkGraph op name -> build function, plus WGSL source loading.

A build function ``async def build(ctx, op)`` validates its arguments, asks
``ctx`` (runtime.build.BuildContext) for pipelines, buffers and uniforms, and
records its dispatches. It runs once, at load.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

from ..errors import UnsupportedError

_OPS: dict = {}


def register(*names: str):
    def wrap(fn):
        for name in names:
            if name in _OPS:
                raise ValueError(f"op {name} registered twice")
            _OPS[name] = fn
        return fn
    return wrap


def supported_ops() -> list[str]:
    _load_all()
    return sorted(_OPS)


def kernel_choices(graph, op) -> dict[str, str]:
    """For ops with adapter-dependent kernels: {typical adapter: variant} (else {})."""
    _load_all()
    from . import rms_norm

    chooser = {"et_vk.rms_norm.default": rms_norm.choices}.get(op.name)
    return chooser(graph, op) if chooser else {}


def lookup(name: str, where: str):
    _load_all()
    try:
        return _OPS[name]
    except KeyError:
        raise UnsupportedError(
            f"op {name!r} ({where}) is not supported by pte-webgpu; supported ops: "
            + ", ".join(sorted(_OPS))) from None


@lru_cache(maxsize=None)
def shader_source(name: str) -> str:
    """WGSL text of ``shaders/<name>.wgsl`` (packaged as pte_webgpu.shaders)."""
    return resources.files("pte_webgpu.shaders").joinpath(name + ".wgsl").read_text("utf-8")


def _load_all() -> None:
    # Importing the op modules runs their @register decorators.
    from . import binary, matmul, reduce, rms_norm, unary, view  # noqa: F401
