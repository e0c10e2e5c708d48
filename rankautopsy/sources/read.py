"""Bytes to lines, robustly: gzip, undecodable bytes, CRLF, `\\r`-joined progress bars, huge lines."""

from __future__ import annotations

import contextlib
import gzip
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

MAX_LINE = 64 * 1024  # longer lines are cut: a rule only needs the head of a line
SNIFF = 8192
_GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    problem: str | None = None  # e.g. "truncated gzip: read 1234 bytes"


def is_gzip(head: bytes) -> bool:
    return head.startswith(_GZIP_MAGIC)


def looks_binary(head: bytes) -> bool:
    """Not a log (a checkpoint, an image, a core file): NULs in the head, as git and grep judge it,
    or mostly bytes that are neither text nor UTF-8. NULs further on (a log truncated by a crash) are fine."""
    if not head:
        return False
    if b"\x00" in head:
        return True
    text = head.decode("utf-8", "replace")
    bad = text.count("\ufffd") + sum(1 for c in text if c < " " and c not in "\t\n\r\x1b\x0c")
    return bad > 0.1 * len(text)


def gunzip(data: bytes) -> Decoded:
    """Decompress as much of a gzip stream as is there; a truncated tail is named, not fatal."""
    try:
        return Decoded(gzip.decompress(data).decode("utf-8", "replace"))
    except (EOFError, OSError, zlib.error):
        pass
    out = bytearray()
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    with contextlib.suppress(zlib.error):
        out += d.decompress(data)
    return Decoded(bytes(out).decode("utf-8", "replace"), f"truncated gzip: read {len(out)} bytes")


def decode(data: bytes) -> Decoded:
    if is_gzip(data[:2]):
        return gunzip(data)
    return Decoded(data.decode("utf-8", "replace"))


def split_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based physical line number, text) pairs; a `\\r` inside a line starts a new logical line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if line.endswith("\r"):
            line = line[:-1]
        if "\r" in line:
            for part in line.split("\r"):
                if part.strip():
                    yield number, part[:MAX_LINE]
        else:
            yield number, line[:MAX_LINE]
