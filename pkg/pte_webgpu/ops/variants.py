"""Kernel variants: one mechanism for every op family that has several kernels.

A family declares its variants once (``declare``) with its own rule: ``parse`` (a name
to a variant, raising when malformed; or a fixed list of names), ``choose(traits,
**shape)`` (the auto rule), ``supported(variant, traits, **shape)`` (why it cannot run
here, None when it can), ``adapt(variant, **shape)`` (the same variant as this op runs
it, e.g. scalar loads on a width vec4 loads do not divide) and ``measure(traits,
**shape)`` (the variants worth measuring, for bench/). A family's ``shape`` is keyword
arguments of its own (matmul: m, n, k, half; rms_norm: rows, width).

Its build asks ``pick`` for the kernel of one op. ``pick`` takes the forced name when
there is one, checks it against the family's variants, fits it to the op and adapter
(``fit``: UnsupportedError naming why it cannot run) and records the choice on the build
context (``ctx.note_kernel(op, variant=..., picked="auto"|"forced")``, which run,
inspect and the page show). A variant is forced with the Runtime option
``variants={"<family>": "<name>"}`` or, for tests and benchmarks that load through
code they do not control, the environment variable ``PTE_WEBGPU_<FAMILY>``
(e.g. ``PTE_WEBGPU_RMS_NORM=tree-64``); the option wins. ``candidates`` lists what
bench/ measures and ``typical`` what inspect shows (the choice on TYPICAL_ADAPTERS).

This module imports nothing from the package but errors and gpu/adapter.py.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from ..errors import UnsupportedError
from ..gpu.adapter import PACKED_DOT, AdapterInfo

# Two adapters ``inspect`` shows the choice for, without a GPU at hand.
TYPICAL_ADAPTERS = {
    "chromium-swiftshader": AdapterInfo(
        "browser", "google", "swiftshader", "", True, frozenset({"subgroups"}),
        {"maxComputeInvocationsPerWorkgroup": 256, "maxComputeWorkgroupSizeX": 256,
         "maxComputeWorkgroupStorageSize": 32768},
        wgsl_features=frozenset({PACKED_DOT})),  # measured: Chromium's SwiftShader has it
    "discrete-gpu": AdapterInfo(
        "browser", "", "", "discrete GPU", False, frozenset(),
        {"maxComputeInvocationsPerWorkgroup": 1024, "maxComputeWorkgroupSizeX": 1024,
         "maxComputeWorkgroupStorageSize": 32768},
        wgsl_features=frozenset({PACKED_DOT})),
}


def traits_of(adapter):
    """An adapter's traits: ``adapter`` an AdapterInfo, or already its AdapterTraits."""
    return getattr(adapter, "traits", adapter)


def name_of(variant) -> str:
    return getattr(variant, "name", variant)


@dataclass(frozen=True)
class KernelVariants:
    family: str  # the key in options.variants, e.g. "matmul"
    names: tuple[str, ...]  # every variant, or examples when ``parse`` takes a pattern
    parse: Callable[[str], object] | None = None  # name -> variant, raising when malformed
    doc: str = ""  # one line: what the variants are
    choose: Callable | None = None  # (traits, **shape) -> variant: the auto rule
    supported: Callable | None = None  # (variant, traits, **shape) -> why not | None
    adapt: Callable | None = None  # (variant, **shape) -> the variant as this op runs it
    measure: Callable | None = None  # (traits, **shape) -> variants worth measuring

    @property
    def env_var(self) -> str:
        return f"PTE_WEBGPU_{self.family.upper()}"

    def check(self, name: str):
        """The variant ``name`` stands for; UnsupportedError naming the valid ones."""
        if self.parse is not None:
            return self.parse(name)
        if name not in self.names:
            raise UnsupportedError(f"{self.family} variant {name!r}: use one of "
                                   f"{', '.join(self.names)}")
        return name

    def forced(self, options) -> str | None:
        """The forced name: the option first, else the environment; None when neither."""
        wanted = getattr(options, "variants", None) or {}
        name = wanted.get(self.family) or os.environ.get(self.env_var, "")
        return name.strip() or None

    def why_not(self, variant, adapter, **shape) -> str | None:
        """Why ``variant`` cannot run on ``adapter`` (info or traits); None when it can."""
        if self.supported is None:
            return None
        return self.supported(variant, traits_of(adapter), **shape)

    def fit(self, variant, adapter: AdapterInfo, traits=None, **shape):
        """A forced ``variant`` as this op runs it; UnsupportedError when ``adapter``
        (``traits``, when given, stand for its traits) cannot run it."""
        if self.adapt is not None:
            variant = self.adapt(variant, **shape)
        why = self.why_not(variant, traits or adapter.traits, **shape)
        if why:
            raise UnsupportedError(f"{self.family} variant {name_of(variant)!r} cannot run "
                                   f"on {adapter.summary()}: {why}")
        return variant

    def pick(self, ctx, op, adapter: AdapterInfo | None = None, traits=None, **shape):
        """The variant ``op`` runs: the forced one (fitted to this op and adapter) or the
        family's ``choose``; recorded on ``ctx``. ``adapter``: ctx.device.info unless
        given; ``traits``: the adapter's, or what stands for them (e.g. less features)."""
        adapter = adapter or ctx.device.info
        traits = traits or adapter.traits
        name = self.forced(ctx.options)
        if name:
            variant = self.fit(self.check(name), adapter, traits, **shape)
            how = "forced"
        else:
            variant, how = self.choose(traits, **shape), "auto"
        ctx.note_kernel(op, variant=name_of(variant), picked=how)
        return variant

    def candidates(self, adapter, **shape) -> list:
        """The variants worth measuring on ``adapter`` (bench/), each once, all runnable."""
        traits = traits_of(adapter)
        out = []
        for v in self.measure(traits, **shape):
            if self.why_not(v, traits, **shape) is None and v not in out:
                out.append(v)
        return out

    def typical(self, **shape) -> dict[str, str]:
        """The variant each of TYPICAL_ADAPTERS would run (what inspect shows)."""
        return {name: name_of(self.choose(a.traits, **shape))
                for name, a in TYPICAL_ADAPTERS.items()}


_FAMILIES: dict[str, KernelVariants] = {}


def declare(family: str, names, parse: Callable | None = None, doc: str = "",
            **rule) -> KernelVariants:
    """Declare ``family``'s variants; ``rule``: choose, supported, adapt, measure."""
    if family in _FAMILIES:
        raise ValueError(f"kernel variants of {family} declared twice")
    _FAMILIES[family] = KernelVariants(family, tuple(names), parse, doc, **rule)
    return _FAMILIES[family]


def families() -> dict[str, KernelVariants]:
    """Every family with variants (filled when ``pte_webgpu.ops`` is imported)."""
    return dict(_FAMILIES)


def check_forced(wanted: dict) -> None:
    """Validate ``{family: name}`` (Runtime options) before any load."""
    for family, name in wanted.items():
        if family not in _FAMILIES:
            raise UnsupportedError(f"no op family {family!r} has kernel variants; "
                                   f"families: {', '.join(sorted(_FAMILIES))}")
        if not isinstance(name, str) or not name.strip():
            raise UnsupportedError(f"{family!r} must map to a variant name (str), got "
                                   f"{name!r}")
        _FAMILIES[family].check(name.strip())
