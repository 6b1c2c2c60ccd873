"""Runtime options: every build-time choice, typed, with its default, checked once.

    rt = await Runtime.create(options={"float16": "f32", "variants": {"matmul": "dot"}})

A misspelled name, a value of the wrong type or an unknown choice is an
``InputError`` naming the valid ones, raised by ``Runtime.create`` before anything
is loaded. ``RuntimeOptions`` is also a read-only mapping (``options["float16"]``,
``dict(options)``), so code that reads options by name keeps working.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from ..errors import InputError, UnsupportedError
from ..ops import variants as kernel_variants
from .budget import DEFAULT_MAX_ALLOC_BYTES, DEFAULT_MAX_OPS

FLOAT16_CHOICES = ("auto", "f32")


@dataclass(frozen=True)
class RuntimeOptions(Mapping):
    # How float16 tensors are held: "auto" keeps them f16 on adapters with shader-f16
    # (when every op touching them has an f16 kernel); "f32" always widens them to f32.
    float16: str = "auto"
    # Forced kernel variants, {op family: variant name}, e.g. {"rms_norm": "tree-64"};
    # families and names: pte_webgpu.ops.variants.families() (README lists them).
    variants: Mapping = field(default_factory=dict)
    # Bytes of GPU buffers one program may hold (runtime/budget.py, validate.py).
    max_alloc_bytes: int = DEFAULT_MAX_ALLOC_BYTES
    # Ops one load may build (each delegate call builds its graph's ops again).
    max_ops: int = DEFAULT_MAX_OPS
    # Load-time fusion (runtime/fusion.py): linears sharing an input, residual adds and
    # elementwise chains run as fewer dispatches; False builds every op on its own.
    fuse: bool = True

    def __post_init__(self):
        for name in ("max_alloc_bytes", "max_ops"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise InputError(f"option {name}={value!r}: use a positive integer")
        _check_type("float16", self.float16, str)
        _check_type("fuse", self.fuse, bool)
        if self.float16 not in FLOAT16_CHOICES:
            raise InputError(f"option float16={self.float16!r}: use one of "
                             f"{', '.join(map(repr, FLOAT16_CHOICES))}")
        _check_type("variants", self.variants, Mapping)
        try:
            kernel_variants.check_forced(self.variants)
        except UnsupportedError as e:
            raise InputError(f"option variants: {e}") from None
        # Frozen: keep a private copy, so the caller's dict cannot change it later.
        object.__setattr__(self, "variants", dict(self.variants))

    @classmethod
    def of(cls, options) -> "RuntimeOptions":
        """``options`` as RuntimeOptions: None, a dict of option names, or one already."""
        if options is None:
            return cls()
        if isinstance(options, cls):
            return options
        if not isinstance(options, Mapping):
            raise InputError(f"options must be a dict of option names, got "
                             f"{type(options).__name__}; valid options: {', '.join(names())}")
        unknown = [k for k in options if k not in names()]
        if unknown:
            family = str(unknown[0]).removesuffix("_variant")
            hint = (f" (a kernel variant is forced with variants={{{family!r}: ...}})"
                    if family in kernel_variants.families() else "")
            raise InputError(f"unknown runtime option {unknown[0]!r}; valid options: "
                             f"{', '.join(names())}{hint}")
        return cls(**options)

    def replace(self, **changes) -> "RuntimeOptions":
        return RuntimeOptions.of({**dict(self), **changes})

    # --- read-only mapping ----------------------------------------------------------
    def __getitem__(self, name):
        if name not in names():
            raise KeyError(name)
        return getattr(self, name)

    def __iter__(self):
        return iter(names())

    def __len__(self) -> int:
        return len(names())


def names() -> tuple[str, ...]:
    return tuple(f.name for f in fields(RuntimeOptions))


def _check_type(name: str, value, kind: type) -> None:
    if not isinstance(value, kind):
        raise InputError(f"option {name} must be a {kind.__name__}, got "
                         f"{type(value).__name__} {value!r}")
