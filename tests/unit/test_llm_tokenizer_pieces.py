"""Tokenizer building blocks that need no model file."""

from __future__ import annotations

import re
import sys
import unicodedata

from pte_webgpu.llm import unicode_classes as U
from pte_webgpu.llm.byte_level import byte_to_unicode


def test_letter_and_number_classes_equal_unicode_categories():
    everything = "".join(map(chr, range(sys.maxunicode + 1)))
    for body, major in zip(U.letters_and_numbers(), "LN"):
        matched = set(re.findall(f"[{body}]", everything))
        assert matched == {c for c in everything if unicodedata.category(c)[0] == major}, major


def test_byte_alphabet_is_a_printable_bijection():
    table = byte_to_unicode()
    assert sorted(table) == list(range(256))
    assert len(set(table.values())) == 256
    assert all(c.isprintable() and not c.isspace() for c in table.values())
    assert table[ord("A")] == "A" and table[ord(" ")] == "\u0120"  # 'Ġ'


def test_white_space_class_is_unicode_white_space():
    ws = re.compile(f"[{U.WHITE_SPACE}]")
    expected = {*range(0x09, 0x0E), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029,
                0x202F, 0x205F, 0x3000}
    assert {cp for cp in range(0x10000) if ws.match(chr(cp))} == expected
