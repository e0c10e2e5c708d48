"""Safe YAML for rule packs: no object construction, duplicate keys reported, every node's line kept
(so that every problem is `path:line:`).

A pack is untrusted (it can come from a checked-out repository's `pyproject.toml`): it is read only if it
is a regular file of at most `MAX_PACK_BYTES`, and its node graph is checked before any object is built
from it (as pySigma refuses hostile rules before using them): mapping keys must be scalars, and the
document with its aliases expanded must stay within `MAX_NODES` (the billion-laughs bomb, and its worse
form with aliased complex keys, would otherwise cost minutes and gigabytes).

The parser itself (PyYAML, `yamlparse`) is imported only when a pack is parsed: a diagnosis whose
built-in rules come from the cache never pays for it."""

from __future__ import annotations

import os
import stat
from collections.abc import Hashable
from dataclasses import field
from pathlib import Path

from rankautopsy.records import record

MAX_PACK_BYTES = 4 * 1024**2  # the largest built-in pack is ~60 KB
MAX_NODES = 50_000  # YAML nodes with every alias expanded (the largest built-in pack has ~1,600)
MAX_PROBLEM_CHARS = 400  # a problem quotes values from the pack: it stays one readable line

# ---- YAML: safe, duplicate keys reported, every node's line kept ----


class Map(dict[Hashable, object]):
    """A YAML mapping that remembers its lines and the raw text of its scalar values."""

    def __init__(self, line: int, end: int) -> None:
        super().__init__()
        self.line, self.end = line, end
        self.key_lines: dict[Hashable, int] = {}
        self.raw: dict[Hashable, str] = {}


class Seq(list[object]):
    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.item_lines: list[int] = []
        self.raw: list[str | None] = []


@record(frozen=False)
class Report:
    """The problems of one file, kept in line order."""

    path: str
    found: list[tuple[int, str]] = field(default_factory=list)

    def add(self, line: int | None, rule_id: str | None, message: str) -> None:
        where = self.path if line is None else f"{self.path}:{line}"
        who = f" {rule_id}:" if rule_id else ""
        text = " ".join(message.splitlines())
        if len(text) > MAX_PROBLEM_CHARS:
            text = text[: MAX_PROBLEM_CHARS - 1] + "…"
        self.found.append((line or 0, f"{where}:{who} {text}"))

    def flush(self, problems: list[str]) -> None:
        problems.extend(text for _, text in sorted(self.found, key=lambda item: item[0]))


def read_pack_text(path: Path) -> str:
    """A pack's text: a regular file (checked on the open file, so that a FIFO or a device swapped in
    cannot block), at most MAX_PACK_BYTES, UTF-8. Raises OSError, ValueError (with the reason)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as stream:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        data = stream.read(MAX_PACK_BYTES + 1)
    if len(data) > MAX_PACK_BYTES:
        raise ValueError(f"larger than {MAX_PACK_BYTES // 1024**2} MiB: not a rule pack")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None


def parse_yaml(path: Path, report: Report) -> tuple[object, list[tuple[int, str]]] | None:
    try:
        text = read_pack_text(path)
    except ValueError as exc:
        report.add(None, None, f"cannot read: {exc}")
        return None
    except OSError as exc:
        report.add(None, None, f"cannot read: {exc.strerror or type(exc).__name__}")
        return None
    from rankautopsy.rulepacks.yamlparse import parse_text

    return parse_text(text, report)
