"""One bounded integer parser for every number read from log text (facts, prefixes, stamps).

A number longer than any rank, pid, step or epoch is not a number there: it is refused before int()
(which refuses past 4,300 digits, and would make a hostile line cost time)."""

from __future__ import annotations


def read_int(text: object, *, max_len: int, signed: bool = True) -> int | None:
    """`text` as an int when it is digits (with a leading `-` if `signed`) of at most `max_len`
    characters in all; otherwise None."""
    if not isinstance(text, str) or not text or len(text) > max_len:
        return None
    digits = text[1:] if signed and text.startswith("-") else text
    return int(text) if digits.isdigit() and digits.isascii() else None
