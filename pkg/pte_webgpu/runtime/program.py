"""A loaded program: parsed file plus the methods built from it."""

from __future__ import annotations

from ..errors import InputError
from .method import Method


class Program:
    def __init__(self, runtime, file):
        self.runtime = runtime
        self._file = file
        self.method_names = [p.name for p in file.plans]
        self.methods: dict[str, Method] = {}
        self._pipelines: dict = {}

    @property
    def file(self):
        """The parsed ProgramFile (formats.open_program)."""
        return self._file

    async def load_method(self, name: str = "forward") -> Method:
        if name in self.methods:
            return self.methods[name]
        if name not in self.method_names:
            raise InputError(f"no method {name!r}; the program has {self.method_names}")
        method = Method(self, self._file.plan(name), self.runtime.device)
        try:
            await method._build(self._file, self._pipelines)
        except BaseException:
            method.close()  # destroy every buffer made before the failure
            raise
        self.methods[name] = method
        return method

    def close(self) -> None:
        for m in self.methods.values():
            m.close()
        self.methods.clear()
        self._pipelines.clear()
