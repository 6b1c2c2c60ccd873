"""Op registry: VkGraph op name -> build function, plus WGSL source loading.

A build function ``async def build(ctx, op)`` validates its arguments, asks
``ctx`` (runtime.build.BuildContext) for pipelines, buffers and uniforms, and
records its dispatches. It runs once, at load.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

from ..errors import UnsupportedError

_OPS: dict = {}
_HALF: set = set()


def register(*names: str, half: bool = False):
    """``half``: the build function also runs float16 tensors stored as f16
    (``ctx.half``), with f32 accumulation."""
    def wrap(fn):
        for name in names:
            if name in _OPS:
                raise ValueError(f"op {name} registered twice")
            _OPS[name] = fn
            if half:
                _HALF.add(name)
        return fn
    return wrap


def has_half(name: str) -> bool:
    _load_all()
    return name in _HALF


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


_STORAGE_F32 = re.compile(r"(var<storage, [a-z_]+> \w+: array<(?:vec4<)?)f32(>)")
_ELEM_F32 = re.compile(r"^alias elem = f32;", re.MULTILINE)


@lru_cache(maxsize=None)
def shader_source(name: str, half: bool = False) -> str:
    """WGSL text of ``shaders/<name>.wgsl`` (packaged as pte_webgpu.shaders).

    ``half``: the f16 form, for shaders written to allow it: every storage array
    of f32 (or vec4<f32>) becomes f16, the alias ``elem`` (the stored type, used
    for writes) becomes f16, and ``enable f16;`` comes first. Reads convert to
    f32 explicitly, so the arithmetic stays f32.
    """
    text = resources.files("pte_webgpu.shaders").joinpath(name + ".wgsl").read_text("utf-8")
    if not half:
        return text
    if not _ELEM_F32.search(text):
        raise ValueError(f"shaders/{name}.wgsl has no f16 form (no `alias elem = f32;`)")
    text = _ELEM_F32.sub("alias elem = f16;", _STORAGE_F32.sub(r"\g<1>f16\2", text))
    return "enable f16;\n" + text


def _load_all() -> None:
    # Importing the op modules runs their @register decorators.
    from . import (attention, binary, embedding, indexing, matmul, norm, reduce, rms_norm,  # noqa: F401
                   rope, symint, unary, view)
