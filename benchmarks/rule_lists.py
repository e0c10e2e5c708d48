"""The built-in rules as pattern lists for ripgrep and GNU grep, for the benchmark.

    python benchmarks/rule_lists.py OUT_DIR

writes, one pattern per line:

- `rules.rg`: each rule's own pattern in ripgrep's (Rust) syntax: named groups unnamed, lookarounds
  removed (ripgrep's default engine has none; removing them only widens a pattern), possessive
  quantifiers made greedy, case-insensitive rules wrapped in `(?i:...)`;
- `prefilter.rg`: the byte-level prefilters rankautopsy's scanner searches for (see
  rankautopsy/prefilter.py): the same work as our scan, in ripgrep;
- `prefilter.ere`: the same prefilters as GNU extended regular expressions (raw bytes, for LC_ALL=C).
"""

from __future__ import annotations

import sys
from pathlib import Path

from rankautopsy.rulepacks.loader import load_rules
from rankautopsy.scan import prefilter as pf
from rankautopsy.scan.matcher import compile_rules

_LOOKAROUND = ("(?=", "(?!", "(?<=", "(?<!")
_ERE_SPECIAL = set(b".[]()*+?{}|^$\\")


def rg_pattern(pattern: str, ignorecase: bool) -> str:
    text = _drop_lookarounds(pf._unname_groups(pattern))
    text = text.replace("++", "+").replace("*+", "*").replace("?+", "?")
    text = "".join(_bytes_of(c) if ord(c) > 127 else c for c in text)  # --no-unicode takes no `╭`
    return f"(?i:{text})" if ignorecase else text


def _bytes_of(char: str) -> str:
    """A non-ASCII character as one atom of its UTF-8 bytes (so that a quantifier after it applies to all)."""
    return "(?-u:" + "".join(f"\\x{b:02X}" for b in char.encode()) + ")"


def _drop_lookarounds(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "\\":
            out.append(pattern[i : i + 2])
            i += 2
        elif pattern[i] == "[":
            end = pf._class_end(pattern, i)
            out.append(pattern[i:end])
            i = end
        elif pattern.startswith(_LOOKAROUND, i):
            i = _group_end(pattern, i)
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


def _group_end(pattern: str, start: int) -> int:
    depth, i = 0, start
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "[":
            i = pf._class_end(pattern, i)
            continue
        depth += {"(": 1, ")": -1}.get(pattern[i], 0)
        i += 1
        if depth == 0:
            return i
    return i


def ere(pattern: bytes) -> bytes:
    """A prefilter (Hyperscan syntax: `\\xHH` escapes, `(?:`) as a GNU ERE of raw bytes."""
    out = bytearray()
    i = 0
    while i < len(pattern):
        if pattern.startswith(b"(?:", i):
            out += b"("
            i += 3
        elif pattern[i : i + 1] == b"[":
            members, i = _class_members(pattern, i + 1)
            out += _bracket(members)
        else:
            byte, i = _byte(pattern, i)
            out += (
                b"\\" + bytes([byte]) if byte in _ERE_SPECIAL and pattern[i - 1 : i] != bytes([byte]) else bytes([byte])
            )
    return bytes(out)


def _byte(pattern: bytes, i: int) -> tuple[int, int]:
    if pattern.startswith(b"\\x", i):
        return int(pattern[i + 2 : i + 4], 16), i + 4
    return pattern[i], i + 1


def _class_members(pattern: bytes, i: int) -> tuple[set[int], int]:
    members: set[int] = set()
    while pattern[i : i + 1] != b"]":
        lo, i = _byte(pattern, i)
        hi = lo
        if pattern[i : i + 1] == b"-" and pattern[i + 1 : i + 2] != b"]":
            hi, i = _byte(pattern, i + 1)
        members.update(range(lo, hi + 1))
    return members, i + 1


def _bracket(members: set[int]) -> bytes:
    """A C-locale bracket expression: `]` first, `-` last, `^` not first, no NUL (grep stops at one)."""
    members.discard(0)
    rest = sorted(members - {0x5D, 0x2D, 0x5E})
    body = bytearray(b"]" if 0x5D in members else b"")
    start = 0
    while start < len(rest):
        end = start
        while end + 1 < len(rest) and rest[end + 1] == rest[end] + 1:
            end += 1
        body += bytes([rest[start]]) + (b"-" + bytes([rest[end]]) if end > start else b"")
        start = end + 1
    body += b"^" if 0x5E in members else b""
    body += b"-" if 0x2D in members else b""
    return b"[" + bytes(body) + b"]"


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    rules = compile_rules(load_rules())
    (out / "rules.rg").write_text("\n".join(rg_pattern(r.rule.pattern, r.rule.ignorecase) for r in rules) + "\n")
    # a prefilter's line end `[\x0a\x0d]` is, for line-oriented tools, the end of the line or a \r
    prefilters = [r.prefilter.replace(rb"[\x0a\x0d]", rb"(?:\x0d|$)") for r in rules if r.prefilter is not None]
    (out / "prefilter.rg").write_bytes(b"\n".join(prefilters) + b"\n")
    (out / "prefilter.ere").write_bytes(b"\n".join(ere(p) for p in prefilters) + b"\n")
    print(f"{len(rules)} rules -> {out}/rules.rg, prefilter.rg, prefilter.ere")


if __name__ == "__main__":
    main()
