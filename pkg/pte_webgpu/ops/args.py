"""The readers of an op's non-tensor arguments (Int, Double, Bool, IntList, SymInt
values of the graph): one set, for the builds and the CPU references.

Builds read ``(ctx, vid, op)`` and raise FormatError naming the op and the value (field:
where the op is); references read a value as ``values[vid]`` and raise FormatError
without a field (the interpreter adds the op).
"""

from __future__ import annotations

from ..errors import FormatError
from ..model.graph import ListValue, Null, Scalar


# --- builds --------------------------------------------------------------------------
def int_arg(ctx, vid: int, op) -> int:
    value = ctx.graph.values[vid]
    if isinstance(value, Scalar) and value.kind == "int":
        return int(value.value)
    raise FormatError(f"{op.name}: value {vid} should be an Int, found {value.kind}",
                      field=ctx.where(op))


def int_or_symint(ctx, vid: int, op) -> int | None:
    """A static Int value, or None for a SymInt (read at execute)."""
    value = ctx.graph.values[vid]
    if isinstance(value, Scalar) and value.kind == "int":
        return int(value.value)
    if isinstance(value, Scalar) and value.kind == "symint":
        return None
    raise FormatError(f"{op.name}: value {vid} should be an Int or SymInt, found {value.kind}",
                      field=ctx.where(op))


def bool_arg(ctx, vid: int, op, default: bool = False) -> bool:
    value = ctx.graph.values[vid]
    if isinstance(value, Null):
        return default
    if isinstance(value, Scalar) and value.kind == "bool":
        return bool(value.value)
    raise FormatError(f"{op.name}: value {vid} should be a Bool, found {value.kind}",
                      field=ctx.where(op))


def int_list_arg(ctx, vid: int, op, allow_null: bool = False) -> list[int] | None:
    """An IntList (an Int is taken as a one-item list); Null gives None when allowed."""
    value = ctx.graph.values[vid]
    if isinstance(value, ListValue) and value.kind == "int_list":
        return [int(x) for x in value.items]
    if isinstance(value, Scalar) and value.kind == "int":
        return [int(value.value)]
    if allow_null and isinstance(value, Null):
        return None
    raise FormatError(f"{op.name}: value {vid} should be an IntList, found {value.kind}",
                      field=ctx.where(op))


# --- values (references; BuildContext.float_scalar) ----------------------------------
_KIND_NAMES = {"bool": "Bool", "int": "Int", "double": "Double"}


def scalar_value(values, vid: int, where: str, kinds=("int", "double"), optional: bool = False,
                 default=None):
    """``values[vid]``'s value as it is (int, float or bool) when it is a Scalar of one of
    ``kinds``; Null gives ``default`` when ``optional``; else a FormatError naming what
    was found (field: ``where``)."""
    v = values[vid]
    if optional and isinstance(v, Null):
        return default
    if isinstance(v, Scalar) and v.kind in kinds:
        return v.value
    names = [_KIND_NAMES[k] for k in kinds]
    wanted = ", ".join(names[:-1]) + " or " + names[-1] if len(names) > 1 else names[0]
    article = "an" if wanted[0] in "AEIOU" else "a"
    raise FormatError(f"value {vid} should be {article} {wanted}, found {v.kind}", field=where)


def number(value, default: float | None = None) -> float:
    """An Int or Double as a float; anything else gives ``default`` (an error when None)."""
    if isinstance(value, Scalar) and value.kind in ("int", "double"):
        return float(value.value)
    if default is None:
        raise FormatError(f"expected an Int or Double argument, found {value.kind}")
    return default


def int_list(value) -> list[int] | None:
    """An IntList (an Int is taken as a one-item list); Null gives None."""
    if isinstance(value, ListValue) and value.kind == "int_list":
        return [int(d) for d in value.items]
    if isinstance(value, Scalar) and value.kind == "int":
        return [int(value.value)]
    if isinstance(value, Null):
        return None
    raise FormatError(f"expected an IntList argument, found {value.kind}")


def ref_int(read, values, vid: int, default: int | None = None) -> int | None:
    """CPU reference: an Int argument, or a SymInt the reference computed (read(vid))."""
    value = values[vid]
    if isinstance(value, Scalar) and value.kind == "int":
        return int(value.value)
    if isinstance(value, Scalar) and value.kind == "symint":
        return int(read(vid))
    return default
