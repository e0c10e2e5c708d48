"""Rule patterns turned into byte-level prefilters: a byte regex that matches every line a rule matches.

A rule is written for one decoded line with its launcher prefixes stripped (Unicode classes, `^`/`$`
at the message, lookarounds). The scanner walks raw bytes in bulk instead, so each pattern becomes a
*superset* in the syntax that Hyperscan and `regex` bytes patterns share: anchors, `\\b` and lookarounds
dropped, backreferences widened, every class widened to the UTF-8 bytes of the characters it may match,
`\\n` and `\\r` never matched (a rule sees one `\\r`-separated piece of one line) except by a `$`,
which becomes the `\\n` or `\\r` that ends the piece. Leading and trailing
optional parts are trimmed, and what precedes the longest literal: only the existence of a match on a
line is asked. The rule's own regex then confirms each candidate line.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any

from rankautopsy.records import record

_sre: Any = importlib.import_module("re._parser")  # the stdlib parser: no public API, no stubs

_IGNORECASE = 2
_ALL = frozenset(range(128))
_NEVER = frozenset({0x0A, 0x0D})  # a rule sees one piece of one line: no line feed, no carriage return
_DIGITS = frozenset(range(0x30, 0x3A))
_WORD = frozenset(c for c in range(128) if chr(c).isalnum() or c == 0x5F)
_SPACE = frozenset({0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x1C, 0x1D, 0x1E, 0x1F, 0x20})
_CATEGORIES = {
    "CATEGORY_DIGIT": _DIGITS,
    "CATEGORY_NOT_DIGIT": _ALL - _DIGITS,
    "CATEGORY_WORD": _WORD,
    "CATEGORY_NOT_WORD": _ALL - _WORD,
    "CATEGORY_SPACE": _SPACE,
    "CATEGORY_NOT_SPACE": _ALL - _SPACE,
}
# The only non-ASCII characters that `regex` (V0, IGNORECASE) matches to ASCII letters (tested).
CASE_TWINS = {"i": "\u0130", "k": "\u212a", "s": "\u017f"}
_HIGH = frozenset(range(0x80, 0x100))
_LITERAL_RUN = 3  # literal bytes in a row worth starting a prefilter at
_MAX_BOUND = 64  # repeat bounds above this are dropped from prefilters (see `_loose`)
_BROAD = 12  # classes with more members than this say little about a line
_WIDE_BYTES = 4  # UTF-8 bytes of one character; a U+FFFD of `errors="replace"` stands for 1 to 3 bytes


class Untranslatable(ValueError):
    """The pattern has no byte-level prefilter: it is matched by `regex` over decoded text instead."""


@record
class Chars:
    """One character: the bytes it may be (a byte of 0x80 or more stands for itself), and whether it may be
    any non-ASCII character (1 to 4 bytes)."""

    codes: frozenset[int]
    wide: bool = False


@record
class Lit:
    data: bytes  # the UTF-8 bytes of one non-ASCII character


@record
class Seq:
    items: tuple[Node, ...] = ()


@record
class Alt:
    options: tuple[Seq, ...]


@record
class Rep:
    item: Node
    lo: int
    hi: int | None  # None: unbounded


Node = Chars | Lit | Seq | Alt | Rep
# `$` ends a piece of a line: the `\n` or `\r` after it (the engines scan the last line with a `\n`
# after it). Kept, since a rule for a line that is only `[3]:` would otherwise match every line of a
# log with torchrun's `[${rank}]:` prefix.
LINE_END = Chars(frozenset({0x0A, 0x0D}))


def prefilter(pattern: str, *, ignorecase: bool = False) -> bytes:
    """The byte-level superset of a rule pattern; raises `Untranslatable`."""
    return _emit(_split_end_gap(superset(pattern, ignorecase=ignorecase))).encode("ascii")


def _split_end_gap(seq: Seq) -> Seq:
    """`x[ \t]*$` written `x$|x[ \t]+$`: Hyperscan then searches for `x` with the line end, where `x` alone
    may be on every line (`[0]:` of torchrun's table, under a `[default0]:` prefix: 1.6x slower scans)."""
    *body, gap, end = seq.items if len(seq.items) >= 2 else (None, None)
    if end != LINE_END or not isinstance(gap, Rep) or gap.lo != 0 or not body:
        return seq
    return Seq((Alt((Seq((*body, end)), Seq((*body, Rep(gap.item, 1, gap.hi), end)))),))


@functools.lru_cache(maxsize=2048)  # a rule's prefilter and its required literals both start from it
def superset(pattern: str, *, ignorecase: bool = False) -> Seq:
    """The prefilter as a tree of nodes; raises `Untranslatable`."""
    try:
        parsed = _sre.parse(_unname_groups(pattern), _IGNORECASE if ignorecase else 0)
    except Exception as exc:  # re.error, and whatever else the private parser raises on `regex`-only syntax
        raise Untranslatable(f"not parsable by the stdlib parser: {exc}") from exc
    icase = ignorecase or bool(parsed.state.flags & _IGNORECASE)
    tree = _trim(_seq(parsed, icase))
    if _min_len(tree) == 0:
        raise Untranslatable("matches an empty line once anchors and lookarounds are relaxed")
    return tree


# ---- named groups: `regex` allows a name twice, the stdlib parser does not ----


def _unname_groups(pattern: str) -> str:
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "\\":
            out.append(pattern[i : i + 2])
            i += 2
        elif char == "[":
            end = _class_end(pattern, i)
            out.append(pattern[i:end])
            i = end
        elif pattern.startswith(("(?P<", "(?<"), i) and pattern[i + 3 : i + 4] not in ("=", "!"):
            close = pattern.find(">", i)
            if close < 0:
                raise Untranslatable("unterminated group name")
            out.append("(")
            i = close + 1
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    i = start + 1
    if pattern[i : i + 1] == "^":
        i += 1
    if pattern[i : i + 1] == "]":
        i += 1
    while i < len(pattern):
        if pattern[i] == "\\":
            i += 2
            continue
        if pattern[i] == "]":
            return i + 1
        i += 1
    return len(pattern)


# ---- parse tree to nodes ----


def _seq(items: Any, icase: bool) -> Seq:
    return Seq(tuple(_node(str(op), av, icase) for op, av in items))


def _node(op: str, av: Any, icase: bool) -> Node:
    if op == "LITERAL":
        return _literal(av, icase)
    if op == "NOT_LITERAL":
        return Chars(_ALL - _cased(av, icase), wide=True)
    if op == "ANY":
        return Chars(_ALL, wide=True)
    if op == "IN":
        return _in(av, icase)
    if op == "BRANCH":
        return Alt(tuple(_seq(branch, icase) for branch in av[1]))
    if op == "SUBPATTERN":
        _, add, remove, items = av
        return _seq(items, (icase or bool(add & _IGNORECASE)) and not remove & _IGNORECASE)
    if op == "ATOMIC_GROUP":
        return _seq(av, icase)
    if op in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
        lo, hi, items = av
        return Rep(_seq(items, icase), lo, None if hi == _sre.MAXREPEAT else hi)
    if op == "AT" and str(av) in ("AT_END", "AT_END_STRING"):
        return LINE_END
    if op in ("AT", "ASSERT", "ASSERT_NOT"):
        return Seq()  # zero-width: dropping a condition only widens the match
    if op == "GROUPREF":
        return Rep(Chars(_ALL, wide=True), 0, None)
    if op == "GROUPREF_EXISTS":
        _, yes, no = av
        return Alt((_seq(yes, icase), _seq(no, icase) if no is not None else Seq()))
    raise Untranslatable(f"unsupported construct {op}")


def _literal(code: int, icase: bool) -> Node:
    char = chr(code)
    if code < 128:
        twin = CASE_TWINS.get(char.lower()) if icase else None
        chars = Chars(_cased(code, icase))
        return Alt((Seq((chars,)), Seq((Lit(twin.encode()),)))) if twin else chars
    if icase or char == "\ufffd" or 0xD800 <= code < 0xE000:
        return Chars(_ascii_twins(char) if icase else frozenset(), wide=True)
    return Lit(char.encode())


def _cased(code: int, icase: bool) -> frozenset[int]:
    char = chr(code)
    if icase and char.isascii() and char.isalpha():
        return frozenset({ord(char.lower()), ord(char.upper())})
    return frozenset({code})


def _ascii_twins(char: str) -> frozenset[int]:
    import regex  # deriving prefilters is cached: most runs never get here

    pattern = regex.compile(regex.escape(char), regex.IGNORECASE | regex.V0)
    return frozenset(c for c in range(128) if pattern.fullmatch(chr(c)))


def _in(items: Any, icase: bool) -> Chars:
    members: set[int] = set()
    wide = negate = False
    for op, av in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            chars = _literal(av, icase)
            members |= _flat_ascii(chars)
            wide = wide or not isinstance(chars, Chars) or chars.wide
        elif name == "RANGE":
            lo, hi = av
            for code in range(lo, min(hi, 127) + 1):
                members |= _cased(code, icase)
            wide = wide or hi >= 128 or (icase and any(lo <= ord(c) <= hi for c in "IKSiks"))
            if icase and hi >= 128:
                twins = [low for low, twin in CASE_TWINS.items() if lo <= ord(twin) <= hi]
                members |= {ord(c) for low in twins for c in low + low.upper()}
        elif name == "CATEGORY":
            members |= _CATEGORIES.get(str(av), _ALL)
            wide = True
        else:
            raise Untranslatable(f"unsupported class item {name}")
    if negate:
        return Chars(_ALL - members, wide=True)
    return Chars(frozenset(members), wide)


def _flat_ascii(node: Node) -> frozenset[int]:
    if isinstance(node, Chars):
        return node.codes
    if isinstance(node, Alt):
        return frozenset().union(*(_flat_ascii(item) for option in node.options for item in option.items))
    return frozenset()


# ---- trimming: only whether a line has a match matters, not where it ends ----


def _min_len(node: Node) -> int:
    if isinstance(node, Chars):
        return 1
    if isinstance(node, Lit):
        return len(node.data)
    if isinstance(node, Seq):
        return sum(_min_len(item) for item in node.items)
    if isinstance(node, Alt):
        return min((_min_len(option) for option in node.options), default=0)
    return node.lo * _min_len(node.item)


def flatten(seq: Seq) -> list[Node]:
    out: list[Node] = []
    for item in seq.items:
        if isinstance(item, Seq):
            out.extend(flatten(item))
        else:
            out.append(item)
    return out


def _trim(seq: Seq) -> Seq:
    items = _trim_end(flatten(seq))
    items = list(reversed(_trim_end(list(reversed(items)), backwards=True)))
    return Seq(tuple(_from_literal(items)))


def _from_literal(items: list[Node]) -> list[Node]:
    """Start at the longest run of literal bytes (the first of equals): Hyperscan anchors its search on a
    literal, and what lies in front of that one makes it run its automaton wherever a frequent part matches:
    classes (`:[0-9]+ [[0-9]+] NCCL INFO ...`), or a shorter literal that most lines of a chatty log hold
    (`] NCCL INFO ` before `comm 0x... - Init COMPLETE`: without it, scans of NCCL_DEBUG=INFO logs are 1.6x
    faster). Dropping the front only widens the prefilter: the rule's own regex confirms each line."""
    best, best_len, run = -1, _LITERAL_RUN - 1, 0
    for i, item in enumerate(items):
        run = run + _literal_bytes(item) if _literal_bytes(item) else 0
        if run > best_len:
            best, best_len = i, run
    if best < 0:
        return items
    first = best
    while first > 0 and _literal_bytes(items[first - 1]):
        first -= 1
    return items[first:]


def _literal_bytes(node: Node) -> int:
    if isinstance(node, Lit):
        return len(node.data)
    return 1 if isinstance(node, Chars) and not node.wide and len(node.codes) == 1 else 0


def _trim_end(items: list[Node], *, backwards: bool = False) -> list[Node]:
    """Shorten one end of a sequence to what a match must contain there: what may match nothing goes,
    a repeat keeps its minimum, and a broad class goes while something selective remains (a trailing
    `[^\\n]*x` would report a match at every byte of the line)."""
    while items:
        last = items[-1]
        if _min_len(last) == 0 or (_broad(last) and _min_len(Seq(tuple(items[:-1]))) > 0):
            items.pop()
        elif isinstance(last, Rep) and last.lo == 1:
            items[-1:] = flatten(Seq((last.item,)))
        elif isinstance(last, Rep):
            items[-1] = Rep(_narrow(last.item), last.lo, last.lo)
            return items
        elif isinstance(last, Alt):
            items[-1] = Alt(tuple(_trim_option(option, backwards) for option in last.options))
            return items
        else:
            items[-1] = _narrow(last)
            return items
    return items


def _broad(node: Node) -> bool:
    """A class that most bytes of a log line belong to (or a repeat of one)."""
    if isinstance(node, Rep):
        return _broad(node.item)
    if isinstance(node, Seq) and len(node.items) == 1:
        return _broad(node.items[0])
    return isinstance(node, Chars) and len(node.codes - _NEVER) > _BROAD


def _narrow(node: Node) -> Node:
    """At an end of the pattern one byte of a character is enough: its first or last byte is in the class."""
    if isinstance(node, Seq) and len(node.items) == 1:
        return _narrow(node.items[0])
    if isinstance(node, Chars) and node.wide:
        return Chars(node.codes | _HIGH)
    return node


def _trim_option(option: Seq, backwards: bool) -> Seq:
    items = flatten(option)
    if backwards:
        return Seq(tuple(reversed(_trim_end(list(reversed(items)), backwards=True))))
    return Seq(tuple(_trim_end(items)))


# ---- emission: the syntax both Hyperscan and `regex` bytes patterns read ----


def _emit(node: Node) -> str:
    if isinstance(node, Chars):
        text = _class(node)
        return text + f"{{1,{_WIDE_BYTES}}}" if node.wide else text
    if isinstance(node, Lit):
        return "".join(_byte(b) for b in node.data)
    if isinstance(node, Seq):
        return "".join(_emit(item) for item in node.items)
    if isinstance(node, Alt):
        return _emit_alt(node)
    return _emit_rep(node)


def _emit_alt(node: Alt) -> str:
    filled = [option for option in node.options if option.items]
    body = "(?:" + "|".join(_emit(option) for option in filled) + ")"
    return body + "?" if len(filled) < len(node.options) else body


def _emit_rep(node: Rep) -> str:
    item = node.item
    while isinstance(item, Seq) and len(item.items) == 1:
        item = item.items[0]
    if node.hi == 0 or (isinstance(item, Seq) and not item.items):
        return ""
    if isinstance(item, Chars) and item.wide:
        hi = None if node.hi is None else node.hi * _WIDE_BYTES
        return _class(item) + _bounds(node.lo, _loose(hi))
    inner = _emit(item)
    body = inner if isinstance(item, Chars) and not item.wide else f"(?:{inner})"
    return body + _bounds(node.lo, _loose(node.hi))


def _loose(hi: int | None) -> int | None:
    """A large upper bound is dropped: Hyperscan builds a state per repeat up to it (`[^"]{0,255}` of
    wide characters made one rule's database too large to compile), and no bound only widens the match."""
    return None if hi is not None and hi > _MAX_BOUND else hi


def _bounds(lo: int, hi: int | None) -> str:
    if hi is None:
        return {0: "*", 1: "+"}.get(lo, f"{{{lo},}}")
    if (lo, hi) == (0, 1):
        return "?"
    return f"{{{lo}}}" if lo == hi else f"{{{lo},{hi}}}"


def _class(chars: Chars) -> str:
    if chars == LINE_END:
        return "[\\x0a\\x0d]"
    members = sorted((chars.codes | (_HIGH if chars.wide else frozenset())) - _NEVER)
    if not members:
        raise Untranslatable("a character class that matches nothing")
    if len(members) == 1:
        return _byte(members[0])
    return "[" + "".join(_range(lo, hi) for lo, hi in _runs(members)) + "]"


def _runs(members: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for code in members:
        if runs and runs[-1][1] == code - 1:
            runs[-1] = (runs[-1][0], code)
        else:
            runs.append((code, code))
    return runs


def _range(lo: int, hi: int) -> str:
    return _byte(lo) if lo == hi else f"{_byte(lo)}-{_byte(hi)}"


def _byte(code: int) -> str:
    char = chr(code)
    return char if char.isascii() and char.isalnum() else f"\\x{code:02x}"
