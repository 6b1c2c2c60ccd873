"""One rule for matching an inputs file to a method's inputs, in the page and the CLI.

Arrays named in0, in1, ... are taken by name. Otherwise the file's arrays that are
not expected outputs (out0, out1, ...) are taken in file order, and there must be
exactly as many as the method has inputs. A dtype that differs from the method's is
an error unless a cast was asked for (floats to floats, integers to integers), so
nothing is silently rounded. Arrays named outN are the expected outputs.
"""

from __future__ import annotations

from ..errors import InputError
from ..model import dtypes
from ..model.tensor import Tensor
from ..reference import interpreter as reference

_INT_RANGE = {"int32": (-2**31, 2**31 - 1), "int64": (-2**63, 2**63 - 1)}


def spec_text(specs) -> str:
    """'in0: float32[2, 3], in1: int64[4]' for [(shape, dtype name), ...]."""
    return ", ".join(f"in{i}: {d}{list(s)}" for i, (s, d) in enumerate(specs)) or "none"


def input_names(arrays: dict) -> list[str]:
    return [n for n in arrays if not _is_output_name(n)]


def _is_output_name(name: str) -> bool:
    return name.startswith("out") and name[3:].isdigit()


def expected_outputs(arrays: dict) -> dict[int, Tensor]:
    """{i: array} for members named out0, out1, ..."""
    return {int(n[3:]): a for n, a in arrays.items() if _is_output_name(n)}


def match_inputs(specs, arrays: dict, *, cast: bool = False, source: str = "the inputs file",
                 cast_hint: str = "--cast") -> tuple[list[Tensor], list[str]]:
    """(tensors, names) for the method's inputs ``specs`` [(shape, dtype name)] taken
    from ``arrays`` {name: Tensor}; InputError names what was expected and found."""
    wanted = [f"in{i}" for i in range(len(specs))]
    if all(n in arrays for n in wanted):
        names = wanted
    else:
        names = input_names(arrays)
        if len(names) != len(specs):
            raise InputError(
                f"the method takes {len(specs)} input{'s' * (len(specs) != 1)} ({spec_text(specs)}); "
                f"{source} has {len(names)}: {', '.join(names) or 'none'} (name them "
                f"{', '.join(wanted) or 'nothing'}, or give them in the method's input order)")
    tensors = [_conform(arrays[n], shape, dtype, f"input {i} ({n!r})", cast, cast_hint)
               for i, (n, (shape, dtype)) in enumerate(zip(names, specs))]
    return tensors, names


def _conform(t, shape, dtype_name: str, what: str, cast: bool, cast_hint: str):
    # A smaller size may suit a dynamic-shape input: the runtime checks it against the bound.
    if tuple(t.shape) != tuple(shape) and not _within(t.shape, shape):
        raise InputError(f"{what} has shape {list(t.shape)}; the method expects {list(shape)}")
    have = t.dtype.name
    if have == dtype_name:
        return t
    kinds = [_kind(have), _kind(dtype_name)]
    if not cast or kinds[0] != kinds[1] or kinds[0] is None:
        hint = f" (ask for a cast with {cast_hint})" if kinds[0] == kinds[1] and kinds[0] else ""
        raise InputError(f"{what} is {have}; the method expects {dtype_name}{hint}")
    values = reference.from_tensor(t)
    if kinds[0] == "int":
        low, high = _INT_RANGE[dtype_name]
        if values.values and not (low <= min(values.values) and max(values.values) <= high):
            raise InputError(f"{what}: values outside the {dtype_name} range cannot be cast")
    return reference.to_tensor(values, dtypes.BY_NAME[dtype_name])


def _within(have, bound) -> bool:
    return len(have) == len(bound) and all(0 <= h <= b for h, b in zip(have, bound))


def _kind(name: str) -> str | None:
    if name in reference.FLOAT_DTYPES:
        return "float"
    return "int" if name in reference.INT_DTYPES else None
