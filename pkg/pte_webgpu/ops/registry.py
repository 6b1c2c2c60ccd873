"""Op registry: VkGraph op name -> its one definition (``OpDef``).

It imports no op family: each family registers its ops when imported, and
``ops/__init__.py`` is the one place that imports the families (so importing
anything under ``pte_webgpu.ops`` fills the registry first).

A build function ``async def build(ctx, op)`` validates its arguments, asks ``ctx``
(runtime.build.BuildContext) for pipelines, buffers and uniforms, and records its
dispatches; it runs once, at load. A reference function ``fn(read, values, args)``
computes the same op on the CPU in pure Python (ops/cpu.py; run by reference.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..errors import UnsupportedError


@dataclass(frozen=True)
class OpDef:
    name: str
    build: Callable
    reference: Callable | None = None  # fn(read, values, args) -> flat output values
    args: int | None = None  # argument count (outputs included)
    half: bool = False  # build also runs float16 tensors stored as f16 (ctx.half)
    choices: Callable | None = None  # (graph, op) -> {typical adapter: kernel variant}
    sizes: Callable | None = None  # actual output shapes on dynamic-shape inputs (ops/sizes.py)
    # Same-shape elementwise ops a fused kernel can chain (runtime/fusion.py):
    # ("unary", row) of ops/unary.py's table, ("binary", row) of ops/binary.py's.
    pointwise: tuple | None = None


_OPS: dict[str, OpDef] = {}


def define(name: str, build: Callable, reference: Callable | None = None,
           args: int | None = None, half: bool = False, choices: Callable | None = None,
           sizes: Callable | None = None, pointwise: tuple | None = None) -> None:
    if name in _OPS:
        raise ValueError(f"op {name} registered twice")
    _OPS[name] = OpDef(name, build, reference, args, half, choices, sizes, pointwise)


def register(*names: str, half: bool = False, reference: Callable | None = None,
             args: int | None = None, choices: Callable | None = None,
             sizes: Callable | None = None):
    """Decorator form of ``define`` for a build function serving ``names``."""
    def wrap(fn):
        for name in names:
            define(name, fn, reference, args, half, choices, sizes)
        return fn
    return wrap


def find(name: str) -> OpDef | None:
    return _OPS.get(name)


def has_half(name: str) -> bool:
    return name in _OPS and _OPS[name].half


def supported_ops() -> list[str]:
    return sorted(_OPS)


def operator_names() -> set[str]:
    """The op names this runtime runs (VkGraph spelling, e.g. ``aten.add.Tensor``; a
    non-delegated kernel ``aten::add.Scalar_out`` runs as ``aten.add.Scalar``)."""
    return set(_OPS)


def reference_ops() -> list[str]:
    """Ops with a CPU reference."""
    return sorted(n for n, d in _OPS.items() if d.reference is not None)


def kernel_choices(graph, op) -> dict[str, str]:
    """For ops with adapter-dependent kernels: {typical adapter: variant} (else {})."""
    d = _OPS.get(op.name)
    return d.choices(graph, op) if d and d.choices else {}


def lookup(name: str, where: str):
    try:
        return _OPS[name].build
    except KeyError:
        raise UnsupportedError(
            f"op {name!r} ({where}) is not supported by pte-webgpu; supported ops: "
            + ", ".join(sorted(_OPS))) from None
