"""The language models in a folder (``make llm``'s build/llm), for the chat page's picker:
``models.json`` beside them, one entry per ``.pte`` that has its tokenizer there.

Names follow ``make llm``: NAME.pte (float32), NAME-fp16.pte, NAME-q4.pte (4-bit weights),
all sharing NAME.tokenizer.json; an export record beside them (convert's
NAME[-fp16|-q4].export.json, one per program) gives the model's name from its GGUF.
"""

from __future__ import annotations

import json
from pathlib import Path

INDEX = "models.json"
PRECISIONS = {"-q4": "q4 (4-bit weights)", "-fp16": "fp16", "": "fp32"}


def _stem_and_precision(pte: Path) -> tuple[str, str]:
    name = pte.name.removesuffix(".pte")
    for suffix in ("-q4", "-fp16"):
        if name.endswith(suffix):
            return name.removesuffix(suffix), PRECISIONS[suffix]
    return name, PRECISIONS[""]


def _model_name(folder: Path, stem: str) -> str:
    """The GGUF's model name from an export record of ``stem``, else the stem."""
    for record in sorted(folder.glob(f"{stem}*.export.json")):
        try:
            name = json.loads(record.read_text()).get("hparams", {}).get("name")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(name, str) and name:
            return name
    return stem


def list_models(folder: Path) -> list[dict]:
    """One entry per program with its tokenizer: file, tokenizer, name, precision, bytes;
    the smallest file first (the one a page downloads soonest)."""
    models = []
    for pte in sorted(Path(folder).glob("*.pte")):
        stem, precision = _stem_and_precision(pte)
        tokenizer = pte.with_name(f"{stem}.tokenizer.json")
        if not tokenizer.is_file():
            continue  # not a language model of make llm's (or half written)
        models.append({"file": pte.name, "tokenizer": tokenizer.name,
                       "name": _model_name(Path(folder), stem), "precision": precision,
                       "bytes": pte.stat().st_size})
    return sorted(models, key=lambda m: (m["bytes"], m["file"]))


def write_index(folder: Path) -> Path:
    """Write (or refresh) ``folder/models.json``; returns its path."""
    path = Path(folder) / INDEX
    text = json.dumps({"models": list_models(folder)}, indent=1) + "\n"
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    return path
