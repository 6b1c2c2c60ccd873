"""The shader composer: a kernel's WGSL is a generated prelude (``enable f16;`` for the
f16 form, the element type alias, the uniform ``struct Params``, the binding
declarations; the templates of prelude.wgsl filled in), the shared snippets it asks for
(snippets.wgsl), any WGSL its op family generates (e.g. an op switch from a table) and
its body, ``shaders/<body>.wgsl``, with the libraries it asks for (f32_math.wgsl) at
their line. Python fills in values only: all WGSL text is in the .wgsl files.

``Uniform`` gives both the WGSL struct and the byte packing of one kernel's params, so
the two cannot drift. ``Kernel`` describes one shader; families declare theirs and
refer to them by object, and ``shader_source(name)`` finds a declared one by name.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from string import Template

MAX_RANK = 8
# field type -> (WGSL type, struct code or None for vec8, alignment, size)
_TYPES = {"u32": ("u32", "I", 4, 4), "f32": ("f32", "f", 4, 4), "i32": ("i32", "i", 4, 4),
          "vec8": ("array<vec4<u32>, 2>", None, 16, 32)}


class Uniform:
    """``Uniform(("numel", "u32"), ("alpha", "f32"), ("shape", "vec8"), ...)``: the
    fields of ``struct Params`` in order; padding is inserted where WGSL's layout puts it.
    ``vec8`` is up to eight u32 (shapes, strides) as ``array<vec4<u32>, 2>``."""

    def __init__(self, *fields: tuple[str, str]):
        self.fields: list[tuple[str, str]] = []  # with padding fields
        offset = 0
        for name, kind in fields:
            align, size = _TYPES[kind][2:]
            while offset % align:
                self.fields.append((f"_pad{offset}", "u32"))
                offset += 4
            self.fields.append((name, kind))
            offset += size
        while offset % 16:
            self.fields.append((f"_pad{offset}", "u32"))
            offset += 4
        self.names = {name for name, _ in fields}

    def wgsl(self) -> str:
        fields = "".join(fill("prelude", "field", name=name, type=_TYPES[kind][0])
                         for name, kind in self.fields)
        return fill("prelude", "struct", fields=fields)

    def pack(self, **values) -> bytes:
        """The bytes of one Params; fields not given are zero. Unknown names are an error."""
        unknown = set(values) - self.names
        if unknown:
            raise ValueError(f"Params has no field {sorted(unknown)}")
        out = bytearray()
        for name, kind in self.fields:
            v = values.get(name, 0)
            if kind == "vec8":
                v = list(v or [])
                if len(v) > MAX_RANK:
                    raise ValueError(f"{name}: {len(v)} values exceed {MAX_RANK}")
                out += struct.pack("<8I", *(v + [0] * (MAX_RANK - len(v))))
            elif kind == "f32":
                out += struct.pack("<f", _f32(v))
            else:
                out += struct.pack("<" + _TYPES[kind][1], int(v))
        return bytes(out)


def _f32(v: float) -> float:
    from pte_webgpu.model.f32 import to_f32

    return to_f32(v)


@dataclass(frozen=True)
class Binding:
    """``@group(0) @binding(index) var<storage, access> name: array<type>``; ``type``
    "elem" (f32, or f16 in the f16 form), "elem4" (its vec4), or a fixed WGSL type."""
    index: int
    name: str
    access: str = "read"  # "read" | "read_write"
    type: str = "elem"

    def wgsl(self, half: bool) -> str:
        elem = "f16" if half else "f32"
        t = {"elem": elem, "elem4": f"vec4<{elem}>"}.get(self.type, self.type)
        return fill("prelude", "storage", index=self.index, access=self.access, name=self.name,
                    type=t)


@dataclass(frozen=True)
class Entry:
    """A generated entry point on a grid that may be folded into two dimensions:
    ``per="item"``, one invocation per item, calling ``fn call(i: u32)``; ``per="group"``,
    one workgroup per item, calling ``fn call(g: u32, lane: u32)`` (plus ``sg_size``,
    ``sg_lane`` when ``subgroups``). Items at or past ``count`` (a WGSL expression) return
    at once, uniformly for a whole workgroup in the group form."""
    name: str
    call: str
    count: str
    per: str = "item"
    subgroups: bool = False

    def wgsl(self) -> str:
        form = "per_item" if self.per == "item" else (
            "per_group_subgroups" if self.subgroups else "per_group")
        return fill("prelude", form, name=self.name, call=self.call, count=self.count)


_KERNELS: dict[str, "Kernel"] = {}


@dataclass(frozen=True, eq=False)
class Kernel:
    """One WGSL shader: ``body`` names shaders/<body>.wgsl."""
    body: str
    bindings: tuple
    uniform: Uniform | None
    uniform_binding: int = -1  # -1: right after the last storage binding
    snippets: tuple = ()
    generated: str = ""  # WGSL the family generates (e.g. the op switch of a table)
    half: bool = True  # has an f16 form
    enables: tuple = ()  # e.g. ("subgroups",)
    entries: tuple = ()  # generated entry points (Entry); others are in the body
    library: tuple = ()  # WGSL files (e.g. "f32_math") put whole at the body's $<file> line
    name: str = field(default="")

    def __post_init__(self):
        name = self.name or self.body
        object.__setattr__(self, "name", name)
        if name in _KERNELS:
            raise ValueError(f"kernel {name} declared twice")
        _KERNELS[name] = self

    def source(self, half: bool = False) -> str:
        return _compose(self, half)

    def params(self, **values) -> bytes:
        return self.uniform.pack(**values)


@lru_cache(maxsize=None)
def _compose(k: Kernel, half: bool) -> str:
    if half and not k.half:
        raise ValueError(f"shaders/{k.body}.wgsl has no f16 form")
    parts = [fill("prelude", "enable", name=e) for e in ("f16",) * half + k.enables]
    parts.append(fill("prelude", "alias", elem="f16" if half else "f32",
                      is_f16="true" if half else "false"))
    if k.uniform is not None:
        parts.append(k.uniform.wgsl())
    parts += [b.wgsl(half) for b in k.bindings]
    if k.uniform is not None:
        index = k.uniform_binding
        if index < 0:
            index = max((b.index for b in k.bindings), default=-1) + 1
        parts.append(fill("prelude", "uniform", index=index))
    parts += [snippet(s) for s in k.snippets]
    if k.entries and "flat_index" not in k.snippets:
        parts.append(snippet("flat_index"))
    parts += [e.wgsl() for e in k.entries]
    if k.generated:
        parts.append(k.generated)
    parts.append(_body(k))
    return "\n".join(parts)


def _body(k: Kernel) -> str:
    """shaders/<body>.wgsl, with each ``library`` file's sections (in order, a blank line
    between) at its ``$<file>`` line."""
    text = _read(k.body)
    if not k.library:
        return text
    for name in k.library:
        if not re.search(rf"^\${name}$", text, re.M):
            raise ValueError(f"shaders/{k.body}.wgsl has no ${name} line for its library")
    return Template(text).substitute(
        {name: "\n".join(piece.rstrip("\n") + "\n" for piece in sections(name).values())
         for name in k.library})


def _read(name: str) -> str:
    return resources.files(__package__).joinpath(name + ".wgsl").read_text("utf-8")


@lru_cache(maxsize=None)
def sections(file: str) -> dict[str, str]:
    """The named pieces of ``shaders/<file>.wgsl``: each starts at a ``// ==== name`` line
    and runs to the next one (the text before the first is the file's own comment)."""
    out, name = {}, None
    for line in _read(file).splitlines(keepends=True):
        m = re.match(r"^// ==== (\w+)", line)
        if m:
            name = m.group(1)
            if name in out:
                raise ValueError(f"shaders/{file}.wgsl: section {name} twice")
            out[name] = ""
        elif name:
            out[name] += line
    return out


def snippet(name: str) -> str:
    """A shared WGSL piece of snippets.wgsl, as it is."""
    return sections("snippets")[name]


def fill(file: str, section: str, **values) -> str:
    """A template section of ``shaders/<file>.wgsl`` with its ``$name`` / ``${name}``
    placeholders replaced (WGSL has no ``$``, so the text is WGSL otherwise). A missing
    value is an error, so a template and its caller cannot drift apart silently."""
    try:
        text = sections(file)[section]
    except KeyError:
        raise ValueError(f"shaders/{file}.wgsl has no section {section!r}") from None
    return Template(text).substitute({k: str(v) for k, v in values.items()})


def shader_source(name: str, half: bool = False) -> str:
    """The composed WGSL of the kernel declared as ``name`` (the op families must be
    imported: ``import pte_webgpu.ops``)."""
    try:
        return _KERNELS[name].source(half)
    except KeyError:
        raise ValueError(f"no kernel named {name!r}; declared: {sorted(_KERNELS)}") from None


def alias(name: str, type: str) -> str:
    """``alias name = type;`` (prelude.wgsl's ``word``) as a kernel's ``generated`` part:
    one line, its newline left to the composer's join."""
    return fill("prelude", "word", name=name, type=type).rstrip("\n")


def cases(exprs: list[str]) -> str:
    """The cases of a switch on a table's row: row N returns ``exprs[N]`` (prelude.wgsl's
    ``case``), for a template's ``$cases``."""
    return "".join(fill("prelude", "case", index=i, expr=expr) for i, expr in enumerate(exprs))
