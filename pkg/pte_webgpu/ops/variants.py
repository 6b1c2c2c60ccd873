"""Kernel variants: one mechanism for every op family that has several kernels.

A family declares its variants once (``declare``); its build asks ``pick`` for the
kernel of one op. ``pick`` takes the forced name when there is one, checks it against
the family's variants and records the choice on the build context
(``ctx.note_kernel(op, variant=..., picked="auto"|"forced")``, which run, inspect
and the page show). A variant is forced with the Runtime option
``variants={"<family>": "<name>"}`` or, for tests and benchmarks that load through
code they do not control, the environment variable ``PTE_WEBGPU_<FAMILY>``
(e.g. ``PTE_WEBGPU_RMS_NORM=tree-64``); the option wins.

This module imports nothing from the package but errors, like the registry.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

from ..errors import UnsupportedError


@dataclass(frozen=True)
class KernelVariants:
    family: str  # the key in options.variants, e.g. "matmul"
    names: tuple[str, ...]  # every variant, or examples when ``parse`` takes a pattern
    parse: Callable[[str], object] | None = None  # name -> variant, raising when malformed
    doc: str = ""  # one line: what the variants are

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

    def pick(self, ctx, op, auto: Callable[[], object], fit: Callable | None = None):
        """The variant ``op`` runs: the forced one (``fit`` adapts it to this op and
        adapter, raising when it cannot run) or ``auto()``; recorded on ``ctx``."""
        name = self.forced(ctx.options)
        if name:
            variant, how = self.check(name), "forced"
            if fit is not None:
                variant = fit(variant)
        else:
            variant, how = auto(), "auto"
        ctx.note_kernel(op, variant=getattr(variant, "name", variant), picked=how)
        return variant


_FAMILIES: dict[str, KernelVariants] = {}


def declare(family: str, names, parse: Callable | None = None, doc: str = "") -> KernelVariants:
    if family in _FAMILIES:
        raise ValueError(f"kernel variants of {family} declared twice")
    _FAMILIES[family] = KernelVariants(family, tuple(names), parse, doc)
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
