"""Bulk candidate finding: every rule's byte-level prefilter over big chunks of raw bytes at once.

Four engines give the same answer (a test runs each on every fixture):

- `HyperscanEngine`: all prefilters in one Hyperscan database per stream kind, scanned in C; Python
  sees only the matches. Used when the `hyperscan` wheel is importable (it has none for Linux aarch64).
- `Re2Engine`: where Hyperscan is missing, the prefilters as one RE2 alternation and one RE2 set.
- `RegexEngine`: the same prefilters as `regex` bytes patterns, one rule at a time, each on the lines
  that hold one of its required literals (where neither wheel is installed).
- `ReEngine`: `RegexEngine`'s design with the stdlib `re`, for an input of at most `SMALL_INPUT`
  bytes in all, where importing Hyperscan and loading its database take longer than the scan.

`RANKAUTOPSY_ENGINE=hyperscan` (or `re2`, `regex`, `re`) forces one. A rule without a byte-level
prefilter (a pattern the stdlib parser cannot read) is matched by its own regex over the decoded
chunk, in every engine. A match is reported as `(offset, rule index)`, the offset of a byte inside the
line it matched in, or of the line feed that ends it (a prefilter's `$`).
"""

from __future__ import annotations

import functools
import importlib
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rankautopsy import cache, recache
from rankautopsy.model import StreamKind
from rankautopsy.records import record
from rankautopsy.scan.literals import TWINS
from rankautopsy.scan.matcher import Budget, CompiledRule
from rankautopsy.sources.prefixes import Taught


@functools.cache
def load_hyperscan() -> Any:
    """Hyperscan, imported only where it scans (its import and a database load cost more than the
    stdlib engine takes on a small input): None when no wheel is installed (Linux aarch64, musl)."""
    try:
        return importlib.import_module("hyperscan")
    except ImportError:
        return None


ENGINE_ENV = "RANKAUTOPSY_ENGINE"
ENGINES = ("hyperscan", "re2", "regex", "re")
# Up to this many bytes in all, the stdlib engine scans: on a 17 KB fixture it saves ~20 ms of a 0.22 s
# diagnosis (Hyperscan's import and database load); on 135 KB of NCCL_DEBUG=INFO logs the two were level.
SMALL_INPUT = 64 << 10
# The bytes `sanitize.clean` deletes (C0 controls but TAB, LF and CR; DEL; C1 controls in UTF-8):
# a line with one may match only once cleaned, so it is rescanned cleaned.
DIRTY = rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]"

_DIRTY = recache.compile(DIRTY)
_NOT_CONTROL = bytes(b for b in range(256) if not (b < 0x20 or b == 0x7F) or b in b"\t\n\r")
WALK_TAIL = 1024 * 1024  # bytes searched back for the start of an unterminated last line
AHEAD_PARTS = 2  # threads that search a chunk with RE2 on a spare core
Match = tuple[int, int]  # (offset of a byte of the matching line or of its line feed, rule index)
Data = memoryview | bytes | bytearray


@record
class Ahead:
    """A bulk scan made before `find` asked for it (`Engine.scan_ahead`)."""

    rules: tuple[int, ...]  # the rules scanned for
    found: list[Match]
    refused: list[CompiledRule]  # rules the engine could not scan


class Engine:
    """Finds candidate lines; subclasses scan the rules that have a byte-level prefilter."""

    name = "engine"

    def __init__(self, rules: Sequence[CompiledRule]) -> None:
        self.rules = list(rules)
        self.by_index = {r.index: r for r in self.rules}
        self.taught: tuple[Taught, ...] = ()  # the patterns of `prefix` rules, stripped from every line
        self._choices: dict[tuple[StreamKind, bool], tuple[list[CompiledRule], list[CompiledRule]]] = {}
        self._opening: dict[StreamKind, frozenset[int]] = {}

    def find(
        self, data: Data, kind: StreamKind, budget: Budget, *, sampled: bool = False, ahead: Ahead | None = None
    ) -> list[Match]:
        """Every match of the kind's rules (the sampled progress rules, or all others) in `data`; `ahead`
        is `scan_ahead`'s bulk scan of the same bytes, used when it was made for the same rules."""
        chosen, bulk = self._allowed(kind, sampled, budget)
        if ahead is not None and not sampled and ahead.rules == tuple(r.index for r in bulk):
            found, refused = ahead.found, ahead.refused
        else:
            found, refused = self._find(data, bulk, budget)
        more = self._last_line(data, bulk, budget)
        more += _text_matches(data, [r for r in chosen if r.prefilter is None] + refused, budget)
        return found + more if more else found

    def opening_rules(self, kind: StreamKind) -> frozenset[int]:
        """The kind's rules that match only an input's opening line (`Rule.at_start`): never scanned for.
        Worked out once per kind, not per stream (512 small files ask 512 times)."""
        if kind not in self._opening:
            self._opening[kind] = frozenset(r.index for r in self.rules if r.rule.at_start and r.applies_to(kind))
        return self._opening[kind]

    def _allowed(
        self, kind: StreamKind, sampled: bool, budget: Budget
    ) -> tuple[list[CompiledRule], list[CompiledRule]]:
        """`_chosen` without the user rules that ran out of time on this stream."""
        chosen, bulk = self._chosen(kind, sampled)
        if budget.timed_out:
            chosen, bulk = [r for r in chosen if budget.allows(r)], [r for r in bulk if budget.allows(r)]
        return chosen, bulk

    def _chosen(self, kind: StreamKind, sampled: bool) -> tuple[list[CompiledRule], list[CompiledRule]]:
        """The kind's rules (the sampled progress rules, or all others), and those with a prefilter:
        the same for every chunk of every stream of the kind."""
        key = (kind, sampled)
        if key not in self._choices:  # an opening line's rules are tried on that line alone (`opening_rules`)
            chosen = [r for r in self.rules if r.applies_to(kind) and r.sampled == sampled and not r.rule.at_start]
            self._choices[key] = chosen, [r for r in chosen if r.prefilter is not None]
        return self._choices[key]

    def _last_line(self, data: Data, rules: list[CompiledRule], budget: Budget) -> list[Match]:
        """A last line with no line feed, scanned again with one: a prefilter's `$` is the line end."""
        if not data or data[-1] == 0x0A or not rules:
            return []
        start = bytes(data[-WALK_TAIL:]).rfind(b"\n") + 1 + max(0, len(data) - WALK_TAIL)
        if start == 0 and len(data) > WALK_TAIL:
            return []  # one huge line: its pieces end in `\r`, which the bulk scan saw
        tail = bytes(data[start:]) + b"\n"
        found, _ = self._find(tail, rules, budget)
        return [(min(start + offset, len(data) - 1), index) for offset, index in found]  # not on the added \n

    def scan_ahead(self, kind: StreamKind, budget: Budget) -> Callable[[memoryview], Ahead] | None:
        """What `find` scans first, as a function of a chunk's bytes that another thread may run while
        this one counts the chunk's lines; None where the scan would hold the GIL (no overlap to gain)."""
        return None

    def _ahead(self, data: memoryview, kind: StreamKind, budget: Budget) -> Ahead:
        _, bulk = self._allowed(kind, False, budget)
        found, refused = self._find(data, bulk, budget)
        return Ahead(tuple(r.index for r in bulk), found, refused)

    def prepare(self, kinds: Iterable[StreamKind]) -> None:
        """Compile now what scanning these kinds of streams needs (before worker processes fork)."""
        for kind in kinds:
            for sampled in (False, True):
                self._prepare([r for r in self.rules if r.applies_to(kind) and r.sampled == sampled])

    def _prepare(self, rules: list[CompiledRule]) -> None:
        pass

    def dirty(self, data: Data) -> list[int]:
        """Offsets of bytes that `clean` would delete."""
        raw = data if isinstance(data, bytes) else bytes(data)
        if not raw.translate(None, _NOT_CONTROL) and b"\xc2" not in raw:  # the common case, at C speed
            return []
        return [m.start() for m in _DIRTY.finditer(raw)]

    def _find(self, data: Data, rules: list[CompiledRule], budget: Budget) -> tuple[list[Match], list[CompiledRule]]:
        """Matches of the rules' prefilters, and the rules whose prefilter the engine cannot scan."""
        raise NotImplementedError


class RegexEngine(Engine):
    """The fallback: each prefilter as a `regex` bytes pattern, run on the lines that hold one of its
    required literals (found with `bytes.find`), or over the whole chunk when it has none."""

    name = "regex"

    def __init__(self, rules: Sequence[CompiledRule]) -> None:
        super().__init__(rules)
        self._patterns = {r.index: self._pattern(r) for r in rules if r.prefilter is not None}
        self._literals = {r.index: r.literals for r in rules if r.prefilter is not None}

    def _find(self, data: Data, rules: list[CompiledRule], budget: Budget) -> tuple[list[Match], list[CompiledRule]]:
        raw = data if isinstance(data, bytes) else bytes(data)
        lowered = raw.lower() if any((lit := self._literals[r.index]) and lit.folded for r in rules) else raw
        twins = lowered is not raw and any(twin in raw for twin in TWINS)
        out: list[Match] = []
        for compiled in rules:
            pattern, literals = self._patterns[compiled.index], self._literals[compiled.index]
            if literals is not None and not (literals.folded and twins):
                hay = lowered if literals.folded else raw
                search = functools.partial(_on_lines, raw, hay, literals.needles, pattern, compiled.index)
            else:
                search = functools.partial(_one_per_line, raw, pattern, compiled.index)
            out += search(None) if compiled.rule.builtin else budget.run(compiled, search) or []
        return out, []

    def _pattern(self, compiled: CompiledRule) -> Any:
        import regex  # the fallback's own engine: not loaded where another scans

        return regex.compile(compiled.prefilter)


class ReEngine(RegexEngine):
    """For a small input: the fallback's design with the stdlib `re`, whose compiled programs
    `recache` keeps, for the built-in rules (a user's rule, which needs a time bound, keeps `regex`)."""

    name = "re"

    def _pattern(self, compiled: CompiledRule) -> Any:
        return recache.compile(compiled.prefilter) if compiled.rule.builtin else super()._pattern(compiled)


def _one_per_line(data: bytes, pattern: Any, index: int, timeout: float | None) -> list[Match]:
    """A pattern's matches, at most one per line: after a match the search goes on at the next line."""
    out: list[Match] = []
    pos = 0
    while (m := _search(pattern, data, pos, len(data), timeout)) is not None:
        out.append((m.end() - 1, index))
        pos = data.find(b"\n", m.end() - 1) + 1
        if pos == 0:
            break
    return out


def _search(pattern: Any, data: bytes, start: int, end: int, timeout: float | None) -> Any:
    """A `regex` or an `re` pattern's search (only `regex` takes a time bound, given for user rules)."""
    return pattern.search(data, start, end) if timeout is None else pattern.search(data, start, end, timeout=timeout)


def _on_lines(
    data: bytes, hay: bytes, needles: Sequence[bytes], pattern: Any, index: int, timeout: float | None
) -> list[Match]:
    """A pattern's matches on the lines that contain one of its literals, at most one per line."""
    lines: set[int] = set()
    for needle in needles:
        pos = 0
        while (at := hay.find(needle, pos)) >= 0:
            start = data.rfind(b"\n", 0, at) + 1
            end = data.find(b"\n", at)
            end = len(data) if end < 0 else end
            lines.add(start)
            pos = end + 1
    out: list[Match] = []
    for start in sorted(lines):
        end = data.find(b"\n", start)  # the line feed is searched too: a prefilter's `$` is one
        if (m := _search(pattern, data, start, len(data) if end < 0 else end + 1, timeout)) is not None:
            out.append((m.end() - 1, index))
    return out


class HyperscanEngine(Engine):
    """All prefilters of a stream kind in one Hyperscan block-mode database."""

    name = "hyperscan"

    def __init__(self, rules: Sequence[CompiledRule]) -> None:
        super().__init__(rules)
        self._dirty_db = _database((DIRTY,), (0,)).db

    def scan_ahead(self, kind: StreamKind, budget: Budget) -> Callable[[memoryview], Ahead] | None:
        return functools.partial(self._ahead, kind=kind, budget=budget)  # Hyperscan scans without the GIL

    def dirty(self, data: Data) -> list[int]:
        found: list[int] = []
        self._dirty_db.scan(data, match_event_handler=lambda _i, _f, to, _fl, _c: found.append(to - 1))
        return found

    def _prepare(self, rules: list[CompiledRule]) -> None:
        if rules := [r for r in rules if r.prefilter is not None]:
            self._database(rules)

    def _find(self, data: Data, rules: list[CompiledRule], budget: Budget) -> tuple[list[Match], list[CompiledRule]]:
        if not rules:
            return [], []
        compiled = self._database(rules)  # Hyperscan runs in linear time: no budget needed
        found: list[Match] = []
        append = found.append
        if compiled.db is not None:
            compiled.db.scan(data, match_event_handler=lambda i, _f, to, _fl, _c: append((to - 1, i)))
        return found, [r for r in rules if r.index in compiled.refused]

    def _database(self, rules: list[CompiledRule]) -> _Compiled:
        return _database(tuple(r.prefilter or b"" for r in rules), tuple(r.index for r in rules))


@record
class _Compiled:
    db: Any  # None when Hyperscan refused every pattern
    refused: frozenset[int]  # ids of patterns Hyperscan cannot compile, even in its prefilter mode


@functools.cache
def _database(patterns: tuple[bytes, ...], ids: tuple[int, ...]) -> _Compiled:
    """A compiled database, from the on-disk cache when the same one was compiled before."""
    hyperscan = load_hyperscan()
    key = cache.key_of(hyperscan.__version__, repr((patterns, ids)))
    if (cached := _load(key)) is not None:
        return cached
    try:
        compiled = _Compiled(_compile(patterns, ids, (0,) * len(patterns)), frozenset())
    except hyperscan.error:  # some pattern needs Hyperscan's prefilter mode, or cannot be compiled at all
        flags = {i: _flag(p) for p, i in zip(patterns, ids, strict=True)}
        kept = [(p, i, flag) for p, i in zip(patterns, ids, strict=True) if (flag := flags[i]) is not None]
        db = _compile([k[0] for k in kept], [k[1] for k in kept], [k[2] for k in kept]) if kept else None
        compiled = _Compiled(db, frozenset(i for i, flag in flags.items() if flag is None))
    _store(key, compiled)
    return compiled


def _compile(patterns: Sequence[bytes], ids: Sequence[int], flags: Sequence[int]) -> Any:
    hyperscan = load_hyperscan()
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=list(patterns), ids=list(ids), flags=list(flags))
    return db


def _flag(pattern: bytes) -> int | None:
    """How Hyperscan takes a pattern: exactly (0), approximately (its prefilter mode), or not (None)."""
    hyperscan = load_hyperscan()
    for flag in (0, int(hyperscan.HS_FLAG_PREFILTER)):
        try:
            _compile([pattern], [0], [flag])
        except hyperscan.error:
            continue
        return flag
    return None


def _load(key: str) -> _Compiled | None:
    hyperscan = load_hyperscan()
    body = cache.read("hs", key)
    if body is None:
        return None
    head, _, db_bytes = body.partition(b"\n")
    try:
        refused = frozenset(int(i) for i in head.split(b",") if i)
        db = hyperscan.loadb(db_bytes, mode=hyperscan.HS_MODE_BLOCK) if db_bytes else None
        if db is not None:
            db.scratch = hyperscan.Scratch(db)  # a loaded database comes without one
        return _Compiled(db, refused)
    except (ValueError, hyperscan.error):
        return None


def _store(key: str, compiled: _Compiled) -> None:
    hyperscan = load_hyperscan()
    body = hyperscan.dumpb(compiled.db) if compiled.db is not None else b""
    cache.write("hs", key, ",".join(map(str, sorted(compiled.refused))).encode() + b"\n" + body)


def _text_matches(data: Data, rules: list[CompiledRule], budget: Budget) -> list[Match]:
    """Rules without a prefilter: their own pattern over the decoded chunk (undecodable bytes kept as
    surrogates so that offsets map back to bytes)."""
    if not rules:
        return []
    text = bytes(data).decode("utf-8", "surrogateescape")
    out: list[Match] = []
    for compiled in rules:
        found = budget.run(compiled, functools.partial(_starts, compiled, text))
        out += [(offset, compiled.index) for offset in _byte_offsets(text, found or [])]
    return out


def _starts(compiled: CompiledRule, text: str, timeout: float | None) -> list[int]:
    return [m.start() for m in compiled.pattern.finditer(text, timeout=timeout)]


def _byte_offsets(text: str, positions: Iterable[int]) -> list[int]:
    out, char, byte = [], 0, 0
    for pos in sorted(positions):
        byte += len(text[char:pos].encode("utf-8", "surrogateescape"))
        char = pos
        out.append(byte)
    return out


@functools.cache
def load_re2() -> Any:
    """google-re2, imported only where it scans (where Hyperscan is missing, or asked for): None
    when it is not installed."""
    try:
        return importlib.import_module("re2")
    except ImportError:
        return None


class Re2Engine(Engine):
    """Where Hyperscan is missing (Linux aarch64): the prefilters of a rule list as one RE2 alternation,
    which finds in one linear pass each line where any matches, and as one RE2 set, which says of each
    such line which rules match there (a pass per matching rule made this engine 8x `rg -j1`). RE2 runs
    in linear time, in C, on raw bytes (Latin-1 mode). A prefilter never matches a line feed but as the
    one that ends its line (`prefilter`), so a line holds each of its matches whole."""

    name = "re2"

    def __init__(self, rules: Sequence[CompiledRule]) -> None:
        super().__init__(rules)
        re2 = load_re2()
        self._options = re2.Options()
        self._options.encoding = re2.Options.Encoding.LATIN1
        self._options.never_capture = True
        self._options.max_mem = 256 << 20
        self._options.log_errors = False  # a refused prefilter is handled, not logged to stderr by absl
        self._compiled: dict[tuple[int, ...], _Re2Rules] = {}

    def _prepare(self, rules: list[CompiledRule]) -> None:
        self._rules([r for r in rules if r.prefilter is not None])

    def _rules(self, rules: list[CompiledRule]) -> _Re2Rules:
        key = tuple(r.index for r in rules)
        if key not in self._compiled:
            re2 = load_re2()
            patterns, kept = re2.Set.SearchSet(self._options), []
            for compiled in rules:
                try:
                    patterns.Add(compiled.prefilter)
                except re2.error:
                    continue  # refused: its own regex scans the decoded text
                kept.append(compiled)
            patterns.Compile()
            union = b"|".join(b"(?:" + (r.prefilter or b"") + b")" for r in kept)
            refused = frozenset(key) - {r.index for r in kept}
            first = _first_span(re2.compile(union, self._options)) if kept else None
            self._compiled[key] = _Re2Rules(first, patterns, kept, refused)
        return self._compiled[key]

    def scan_ahead(self, kind: StreamKind, budget: Budget) -> Callable[[memoryview], Ahead] | None:
        return functools.partial(self._ahead, kind=kind, budget=budget)  # RE2 searches without the GIL

    def _ahead(self, data: memoryview, kind: StreamKind, budget: Budget) -> Ahead:
        """On a spare core, the chunk in AHEAD_PARTS runs of whole lines, each searched in a thread of its
        own (RE2 is slower than the line count beside it): a match lies in one line, so the runs' matches
        are the chunk's."""
        _, bulk = self._allowed(kind, False, budget)
        raw = bytes(data)
        cuts = [0]
        for part in range(1, AHEAD_PARTS):
            cut = raw.find(b"\n", max(cuts[-1], len(raw) * part // AHEAD_PARTS)) + 1
            cuts.append(cut or len(raw))
        cuts.append(len(raw))
        runs: list[tuple[list[Match], list[CompiledRule]] | BaseException] = [([], [])] * (len(cuts) - 1)

        def scan(i: int) -> None:
            try:
                runs[i] = self._search(raw, cuts[i], cuts[i + 1], bulk)
            except BaseException as exc:  # raised below, in the thread that asked
                runs[i] = exc

        threads = [threading.Thread(target=scan, args=(i,), name="rankautopsy-re2") for i in range(1, len(runs))]
        for thread in threads:
            thread.start()
        scan(0)
        for thread in threads:
            thread.join()
        found: list[Match] = []
        refused: list[CompiledRule] = []
        for run in runs:
            if isinstance(run, BaseException):
                raise run
            found += run[0]
            refused = run[1]  # the same for every run
        return Ahead(tuple(r.index for r in bulk), found, refused)

    def _find(self, data: Data, rules: list[CompiledRule], budget: Budget) -> tuple[list[Match], list[CompiledRule]]:
        raw = data if isinstance(data, bytes) else bytes(data)
        return self._search(raw, 0, len(raw), rules)

    def _search(
        self, raw: bytes, pos: int, end: int, rules: list[CompiledRule]
    ) -> tuple[list[Match], list[CompiledRule]]:
        """`_find` over the whole lines of `raw[pos:end]` (offsets in `raw`)."""
        if not rules:
            return [], []
        compiled = self._rules(rules)
        refused = [r for r in rules if r.index in compiled.refused]
        if compiled.first is None:
            return [], refused
        search, which, kept = compiled.first, compiled.set.Match, compiled.kept
        out: list[Match] = []
        while (span := search(raw, pos, end)) is not None:
            first = raw.rfind(b"\n", 0, span[0]) + 1
            stop = raw.find(b"\n", max(first, span[1] - 1), end)
            stop = end if stop < 0 else stop + 1  # with its line feed: a prefilter's `$`
            out += [(stop - 1, kept[i].index) for i in which(raw[first:stop]) or ()]  # a byte of the line
            pos = stop
        return out, refused


def _first_span(union: Any) -> Callable[[bytes, int, int], tuple[int, int] | None]:
    """The span of the alternation's first match in `raw[pos:end]`, by google-re2's wrapped RE2 object
    where it has one (its `search` builds a generator and a match object around each call: half the
    time of a line of NCCL INFO found), else by `search`."""
    inner, anchor = getattr(union, "_regexp", None), getattr(getattr(load_re2(), "_Anchor", None), "UNANCHORED", None)
    if inner is not None and anchor is not None and _answers(inner, anchor):
        match = inner.Match

        def wrapped(raw: bytes, pos: int, end: int) -> tuple[int, int] | None:
            span = match(anchor, raw, pos, end)[0]
            return None if span[0] < 0 else span

        return wrapped
    return lambda raw, pos, end: None if (m := union.search(raw, pos, end)) is None else m.span()


def _answers(inner: Any, anchor: Any) -> bool:
    """Whether the wrapped object answers as the google-re2 this was written for does (no match: `(-1, -1)`)."""
    try:
        return tuple(inner.Match(anchor, b"", 0, 0)[0]) == (-1, -1)
    except Exception:  # another google-re2: its public API then
        return False


@record
class _Re2Rules:
    # the first match of every kept prefilter as one alternation (`_first_span`; None: RE2 refused them all)
    first: Callable[[bytes, int, int], tuple[int, int] | None] | None
    set: Any  # the same as an RE2 set, run on the lines the alternation finds
    kept: list[CompiledRule]  # in the set's order
    refused: frozenset[int]  # indexes of the rules whose prefilter RE2 cannot compile


def make_engine(rules: Sequence[CompiledRule], name: str | None = None, size: int | None = None) -> Engine:
    """The engine to use: `name`, else $RANKAUTOPSY_ENGINE, else the stdlib one for an input of at
    most SMALL_INPUT bytes in all (`size`), else Hyperscan when it is installed, else RE2."""
    wanted = (name or os.environ.get(ENGINE_ENV) or "").strip().lower()
    if wanted not in ("", *ENGINES):
        raise ValueError(f"unknown scan engine {wanted!r} ({', '.join(ENGINES[:-1])} or {ENGINES[-1]})")
    if wanted == "re" or (not wanted and size is not None and size <= SMALL_INPUT):
        return ReEngine(rules)
    if wanted == "regex" or (wanted == "re2" and load_re2() is None):
        return RegexEngine(rules)
    if wanted == "re2" or (load_hyperscan() is None and load_re2() is not None):
        return Re2Engine(rules)
    return HyperscanEngine(rules) if load_hyperscan() is not None else RegexEngine(rules)
