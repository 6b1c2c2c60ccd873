"""Runtime → Program → Method, as in ExecuTorch's Python runtime (whose ``Runtime`` is
defined in its ``executorch/runtime/__init__.py`` too).

    rt = await Runtime.create()
    program = await rt.load_program(pte_bytes, data_files=[ptd_bytes])
    method = program.load_method("forward")
    outputs = await method.execute([x])
    program.close()

Loading is where all the work and all the checks happen: parsing, buffers,
constant uploads, pipelines. A program that cannot run fails there, with
nothing left allocated.
"""

from __future__ import annotations

import sys

from .. import formats
from ..errors import ClosedError
from ..model.tensor import Tensor
from .method import Method
from .options import RuntimeOptions
from .program import Program

__all__ = ["Method", "Program", "Runtime", "Tensor"]


def _in_browser() -> bool:
    return sys.platform == "emscripten"


class Runtime:
    def __init__(self, device, options: dict | None = None):
        self.device = device
        self.options = options  # checked by the setter: RuntimeOptions
        self.programs: list[Program] = []
        self.closed = False

    @classmethod
    async def create(cls, backend: str = "auto", options: dict | None = None) -> "Runtime":
        """``backend``: "browser" (navigator.gpu), "native" (wgpu) or "auto".

        ``options``: build-time choices (runtime/options.py, README "Runtime options"),
        e.g. ``{"variants": {"rms_norm": "tree-64"}}`` to force a kernel variant; a
        misspelled name or a wrong type is an InputError naming the valid ones.
        """
        if backend == "auto":
            backend = "browser" if _in_browser() else "native"
        if backend == "browser":
            from ..gpu.browser import BrowserDevice as Device
        elif backend == "native":
            from ..gpu.native import NativeDevice as Device
        else:
            raise ValueError(f"unknown backend {backend!r}; use browser, native or auto")
        options = RuntimeOptions.of(options)  # before the device: a typo costs nothing
        return cls(await Device.create(), options)

    @property
    def options(self) -> RuntimeOptions:
        return self._options

    @options.setter
    def options(self, options) -> None:
        self._options = RuntimeOptions.of(options)

    @property
    def adapter(self):
        """The adapter's AdapterInfo (``.traits``: what kernels decide on)."""
        return self.device.info

    async def load_program(self, pte, data_files=()) -> Program:
        """Parse ``pte`` (bytes-like) with external ``.ptd`` files (bytes or (name, bytes))
        and build every method on the GPU."""
        if self.closed:
            raise ClosedError("this Runtime is closed; create a new one to load programs")
        program = Program(self, formats.open_program(pte, data_files))
        await program._build()
        self.programs.append(program)
        return program

    def __enter__(self) -> "Runtime":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Close every program loaded from this Runtime, then the device."""
        if self.closed:
            return
        self.closed = True
        for p in list(self.programs):  # Program.close removes itself from the list
            p.close()
        self.programs.clear()
        self.device.close()
