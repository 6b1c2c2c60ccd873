"""How much GPU memory one program may ask for.

A file a few KB long can claim gigabytes (huge tensors, many memory pools, moves
between huge plan tensors). Every buffer a program creates is charged to its
``Budget``; the default cap can be raised with ``Runtime.create(options=
{"max_alloc_bytes": n})``. validate.py checks the program's plan against the
same cap before anything is allocated; this running total is the exact backstop.
"""

from __future__ import annotations

from ..errors import BudgetError, InputError, count

DEFAULT_MAX_ALLOC_BYTES = 4 << 30
# Ops built per load (each delegate call builds its graph's ops again): about 1 ms each
# on a CPU adapter, so a small file repeating one call cannot keep a load busy for minutes.
DEFAULT_MAX_OPS = 20_000


def max_alloc_bytes(options: dict) -> int:
    return _positive(options, "max_alloc_bytes", DEFAULT_MAX_ALLOC_BYTES)


def max_ops(options: dict) -> int:
    return _positive(options, "max_ops", DEFAULT_MAX_OPS)


def _positive(options: dict, name: str, default: int) -> int:
    value = options.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise InputError(f"option {name}={value!r}: use a positive integer")
    return value


class Budget:
    """Bytes of GPU buffers one program holds, against its cap."""

    def __init__(self, limit: int):
        self.limit = limit
        self.used = 0

    def charge(self, size: int, label: str) -> None:
        if self.used + size > self.limit:
            raise BudgetError(f"{label} needs {count(size)} bytes, which would bring the "
                              f"program's buffers to {count(self.used + size)} bytes; the "
                              f"cap is {count(self.limit)} (Runtime option max_alloc_bytes)")
        self.used += size

    def refund(self, size: int) -> None:
        self.used = max(0, self.used - size)
