"""One typed hierarchy for everything that can go wrong.

Every message says what was expected, what was found and where (byte offset,
field path, key or op name), so a user can fix the input without a debugger.
"""

from __future__ import annotations


class PteError(Exception):
    """Base of every error raised by pte_webgpu."""


class FormatError(PteError):
    """The bytes do not follow the .pte / VH00 / VK00 / .ptd format."""

    def __init__(self, message: str, *, offset: int | None = None, field: str | None = None):
        where = []
        if field:
            where.append(field)
        if offset is not None:
            where.append(f"byte offset {offset}")
        super().__init__(f"{message} (at {', '.join(where)})" if where else message)
        self.offset = offset
        self.field = field


class MissingDataError(PteError):
    """A constant refers to named data that no file provides."""

    def __init__(self, key: str, searched: list[str]):
        super().__init__(
            f"named data key {key!r} not found; searched: {', '.join(searched) or 'nothing'}"
        )
        self.key = key


class DataTooSmallError(PteError):
    """Named or inline data exists but holds fewer bytes than the tensor needs."""

    def __init__(self, what: str, need: int, have: int):
        super().__init__(f"{what}: tensor needs {need} bytes but the data holds only {have}")
        self.need = need
        self.have = have


class UnsupportedError(PteError):
    """Valid input that this runtime does not implement (op, dtype, instruction)."""


class InputError(PteError):
    """Inputs given to Method.execute do not match the program's plan."""


class ChatTemplateError(PteError):
    """A chat template that does not compile or fails to render: its syntax, an error while
    rendering, or the template refusing the conversation (its ``raise_exception``)."""

    def __init__(self, template: str, problem: str, *, line: int | None = None):
        where = f", line {line}" if line else ""
        super().__init__(f"chat template ({template}{where}): {problem}")
        self.template = template
        self.problem = problem
        self.line = line


class GpuError(PteError):
    """Base of errors reported by the WebGPU device."""


class ShaderCompileError(GpuError):
    """A WGSL module failed to compile; carries the compiler's messages."""


class GpuValidationError(GpuError):
    """A WebGPU validation or out-of-memory error caught by an error scope."""


class DeviceLostError(GpuError):
    """The GPU device was lost; the Runtime must be created again."""


class GpuLimitError(GpuError):
    """The work needs more than the adapter's limits allow."""


class ClosedError(InputError):
    """The Runtime, Program or Method was closed; load the program again to run it."""


class BudgetError(PteError):
    """A program asks for more memory than the runtime allows (see Runtime options
    ``max_alloc_bytes``) or than the adapter's limits permit."""


def count(n: int) -> str:
    """An integer for a message; very large ones abbreviated, so that formatting stays
    cheap and within Python's int-to-str digit limit."""
    if n < 10**18:
        return str(n)
    return f"about 2^{n.bit_length() - 1}"
