"""Character classes that Python's ``re`` lacks, built from ``unicodedata`` (stdlib only).

The split regexes of HF ``tokenizers`` (Oniguruma) use ``\\p{L}`` (letters), ``\\p{N}``
(numbers) and ``\\s`` (Unicode White_Space). Here they are regex class bodies, to be put
inside ``[...]``. Python's own ``\\s`` also takes U+001C..U+001F, so it is spelled out.
"""

from __future__ import annotations

import re
import unicodedata

WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
# Planes 4..16 hold no letters or numbers; scanning stops here.
_SCAN_END = 0x40000
_BODIES: dict[str, str] = {}


def _class_bodies(majors: str) -> dict[str, str]:
    """Class bodies, one per major Unicode category in ``majors`` (one scan of the planes)."""
    parts: dict[str, list[str]] = {m: [] for m in majors}
    run_major, run_start = None, 0
    for cp in range(_SCAN_END + 1):
        major = unicodedata.category(chr(cp))[0] if cp < _SCAN_END else None
        if major != run_major:
            if run_major in parts:
                lo, hi = re.escape(chr(run_start)), re.escape(chr(cp - 1))
                parts[run_major].append(lo if run_start == cp - 1 else f"{lo}-{hi}")
            run_major, run_start = major, cp
    return {m: "".join(p) for m, p in parts.items()}


def letters_and_numbers() -> tuple[str, str]:
    """(\\p{L}, \\p{N}) as class bodies; built once (a scan of ~262k code points)."""
    if not _BODIES:
        _BODIES.update(_class_bodies("LN"))
    return _BODIES["L"], _BODIES["N"]
