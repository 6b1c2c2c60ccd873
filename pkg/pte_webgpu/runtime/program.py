"""A loaded program: the parsed file and every method, built on the GPU at load."""

from __future__ import annotations

from ..errors import ClosedError, InputError
from ..model.method_meta import MethodMeta, method_meta
from .budget import Budget, max_alloc_bytes
from .half import program_can_use_half
from .method import Method
from .storage import Storage
from .validate import validate_program


class Program:
    def __init__(self, runtime, file):
        self.runtime = runtime
        self.file = file  # the parsed ProgramFile (formats.open_program)
        self._methods: dict[str, Method] = {}
        self._pipelines: dict = {}  # shared by the methods: same shader + constants, one pipeline
        self.closed = False

    async def _build(self) -> None:
        """Build every method; on any failure destroy what was made, then raise."""
        self._storage = Storage(half=self._use_half())
        options = self.runtime.options
        validate_program(self.file, self.runtime.device, options, self._storage)
        self._budget = Budget(max_alloc_bytes(options))  # charged by Resources
        try:
            for plan in self.file.plans:
                method = Method(plan, self.runtime.device, self._storage, options, self._budget)
                self._methods[plan.name] = method  # registered first so close() reaches it
                await method._build(self.file, self._pipelines)
        except BaseException:
            self.close()
            raise

    def _use_half(self) -> bool:
        """float16 stays f16 with shader-f16, unless options say {"float16": "f32"}."""
        return (self.runtime.options.float16 == "auto"
                and self.runtime.device.info.traits.shader_f16
                and program_can_use_half(self.file))

    @property
    def method_names(self) -> set[str]:
        """The program's method names, as ExecuTorch's Program gives them: a set."""
        return {p.name for p in self.file.plans}

    def metadata(self, name: str) -> MethodMeta:
        """Inputs and outputs (shape, dtype, dim order), delegates and instruction count
        of method ``name``, read from the program (method_meta.py)."""
        for plan in self.file.plans:
            if plan.name == name:
                return method_meta(plan)
        raise InputError(f"no method {name!r}; the program has {sorted(self.method_names)}")

    def load_method(self, name: str = "forward") -> Method:
        """The method ``name``, ready to execute (built by Runtime.load_program)."""
        if self.closed:
            raise ClosedError("this program is closed; load it again to run it")
        try:
            return self._methods[name]
        except KeyError:
            raise InputError(f"no method {name!r}; the program has "
                             f"{sorted(self.method_names)}") from None

    def __enter__(self) -> "Program":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Destroy every GPU buffer of every method; the program cannot run after this."""
        self.closed = True
        for m in self._methods.values():
            m.close()
        self._methods.clear()
        self._pipelines.clear()
        if self in self.runtime.programs:
            self.runtime.programs.remove(self)
        self.runtime.device.flush()  # wgpu frees destroyed buffers' pending writes on a submit
