"""The chat page's model list (pte_webgpu.llm.model_list): make llm's names, sizes, the
GGUF's model name from the export record, programs without a tokenizer left out."""

import json

from pte_webgpu.llm.model_list import list_models, write_index


def test_models_with_their_tokenizer_smallest_first(tmp_path):
    for name, size in (("m.pte", 300), ("m-fp16.pte", 150), ("m-q4.pte", 60), ("orphan.pte", 10)):
        (tmp_path / name).write_bytes(b"\0" * size)
    (tmp_path / "m.tokenizer.json").write_text("{}")
    (tmp_path / "m-q4.export.json").write_text(json.dumps({"hparams": {"name": "Tiny M"}}))
    got = list_models(tmp_path)
    assert [(m["file"], m["precision"], m["bytes"]) for m in got] == [
        ("m-q4.pte", "q4 (4-bit weights)", 60), ("m-fp16.pte", "fp16", 150), ("m.pte", "fp32", 300)]
    assert {m["name"] for m in got} == {"Tiny M"} and {m["tokenizer"] for m in got} == {"m.tokenizer.json"}


def test_index_is_rewritten_only_when_it_changes(tmp_path):
    (tmp_path / "a.pte").write_bytes(b"12")
    (tmp_path / "a.tokenizer.json").write_text("{}")
    path = write_index(tmp_path)
    assert json.loads(path.read_text())["models"][0]["name"] == "a"  # no export record
    stamp = path.stat().st_mtime_ns
    write_index(tmp_path)
    assert path.stat().st_mtime_ns == stamp
    (tmp_path / "a.pte").unlink()
    assert json.loads(write_index(tmp_path).read_text()) == {"models": []}
