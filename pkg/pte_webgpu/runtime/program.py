"""A loaded program: the parsed file and every method, built on the GPU at load."""

from __future__ import annotations

from ..errors import ClosedError, InputError
from .budget import Budget, max_alloc_bytes
from .half import program_can_use_half
from .method import Method
from .storage import Storage
from .validate import validate_program


class Program:
    def __init__(self, runtime, file):
        self.runtime = runtime
        self.file = file  # the parsed ProgramFile (formats.open_program)
        self.method_names = [p.name for p in file.plans]
        self.methods: dict[str, Method] = {}
        self._pipelines: dict = {}  # shared by the methods: same shader + constants, one pipeline
        self.closed = False

    async def _build(self) -> None:
        """Build every method; on any failure destroy what was made, then raise."""
        self.storage = Storage(half=self._use_half())
        validate_program(self.file, self.runtime.device, self.runtime.options, self.storage)
        self.budget = Budget(max_alloc_bytes(self.runtime.options))  # charged by Resources
        try:
            for plan in self.file.plans:
                method = Method(self, plan, self.runtime.device, self.storage)
                self.methods[plan.name] = method  # registered first so close() reaches it
                await method._build(self.file, self._pipelines)
        except BaseException:
            self.close()
            raise

    def _use_half(self) -> bool:
        """float16 stays f16 with shader-f16, unless options say {"float16": "f32"}."""
        wanted = self.runtime.options.get("float16", "auto")
        if wanted not in ("auto", "f32"):
            raise InputError(f"option float16={wanted!r}: use 'auto' or 'f32'")
        return (wanted == "auto" and "shader-f16" in self.runtime.device.info.features
                and program_can_use_half(self.file))

    def load_method(self, name: str = "forward") -> Method:
        """The method ``name``, ready to execute (built by Runtime.load_program)."""
        if self.closed:
            raise ClosedError("this program is closed; load it again to run it")
        try:
            return self.methods[name]
        except KeyError:
            raise InputError(f"no method {name!r}; the program has {self.method_names}") from None

    def close(self) -> None:
        """Destroy every GPU buffer of every method; the program cannot run after this."""
        self.closed = True
        for m in self.methods.values():
            m.close()
        self.methods.clear()
        self._pipelines.clear()
        if self in self.runtime.programs:
            self.runtime.programs.remove(self)
        self.runtime.device.flush()  # wgpu frees destroyed buffers' pending writes on a submit
