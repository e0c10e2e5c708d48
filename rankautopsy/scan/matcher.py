"""Compile every rule once; confirm the scanner's candidate lines with each rule's own regex.

The scanner (`rankautopsy.scan.engine`) finds candidate lines in bulk with a byte-level prefilter of every rule;
a rule matches a line only if its pattern, compiled here with named groups, matches the line's message.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias, TypeVar

from rankautopsy import __version__, cache, recache
from rankautopsy.cputime import bounded
from rankautopsy.model import Role, Rule, StreamKind
from rankautopsy.records import record
from rankautopsy.scan import literals as literals_module
from rankautopsy.scan import prefilter as prefilter_module
from rankautopsy.scan.literals import TWINS, Literals, required_literals
from rankautopsy.scan.prefilter import Untranslatable, prefilter

if TYPE_CHECKING:
    import regex

_T = TypeVar("_T")
USER_RULE_TIMEOUT = 2.0  # CPU seconds a user's rule may spend on one stream before it is dropped there


AnyPattern: TypeAlias = "re.Pattern[str] | regex.Pattern[str]"
AnyMatch: TypeAlias = "re.Match[str] | regex.Match[str]"


@record
class CompiledRule:
    rule: Rule
    index: int = 0  # position in the rule set
    prefilter: bytes | None = None  # None: no byte-level prefilter, `pattern` scans decoded text
    sampled: bool = False  # a progress rule: the scanner keeps a sample of its lines, not all
    literals: Literals | None = None  # one of these is in every line the rule matches

    @property
    def pattern(self) -> regex.Pattern[str]:
        """The rule's own regex, compiled on first use: most rules never see a candidate line."""
        return _regex(self.rule.pattern, self.rule.ignorecase)

    @property
    def trusted(self) -> AnyPattern:
        """The pattern a built-in rule confirms lines with: compiled with the standard library's `re`
        where it compiles there (`regex`'s V0 is `re`'s syntax and meaning, and `re` searches a line in
        about a quarter of the time; a repeated group name is renamed there), else with `regex`.
        Never a user's rule: only `regex` bounds a search's time."""
        return _trusted(self.rule.pattern, self.rule.ignorecase) if self.rule.builtin else self.pattern

    def applies_to(self, kind: StreamKind) -> bool:
        return not self.rule.streams or kind in self.rule.streams


@functools.cache
def _regex(pattern: str, ignorecase: bool) -> regex.Pattern[str]:
    import regex  # on first use: a run whose built-in rules all compile with `re` never loads it

    return regex.compile(pattern, regex.MULTILINE | regex.V0 | (regex.IGNORECASE if ignorecase else 0))


@functools.cache
def _trusted(pattern: str, ignorecase: bool) -> AnyPattern:
    flags = re.MULTILINE | (re.IGNORECASE if ignorecase else 0)
    renamed, holders = _rename_twins(pattern)
    try:
        compiled = recache.compile(renamed, flags)
    except re.error:
        return _regex(pattern, ignorecase)
    if renamed != pattern:
        _HOLDERS[id(compiled)] = compiled, holders
    return compiled


# `regex` lets a name repeat (one per branch of an alternation), `re` does not: the n-th repeat of a
# name is renamed `<name>_twin_<n>` and its facts are merged back under the name.
_GROUP = recache.compile(r"(?<!\\)\(\?P<(\w+)>")
# Keyed by the pattern's id, kept alive in the value: hashing a compiled `re` pattern hashes its whole
# program, on every hit.
_HOLDERS: dict[int, tuple[re.Pattern[str], tuple[tuple[str, tuple[str, ...]], ...]]] = {}


def _rename_twins(pattern: str) -> tuple[str, tuple[tuple[str, tuple[str, ...]], ...]]:
    """The pattern with repeated group names made unique, and each name with the groups that hold it
    (in the pattern's order, which is also `regex`'s order of names)."""
    holders: dict[str, list[str]] = {}

    def rename(m: re.Match[str]) -> str:
        name = m.group(1)
        held = holders.setdefault(name, [])
        held.append(f"{name}_twin_{len(held)}" if held else name)
        return f"(?P<{held[-1]}>"

    renamed = _GROUP.sub(rename, pattern)
    if all(len(held) == 1 for held in holders.values()) or "(?P=" in pattern:
        return pattern, ()  # a back reference to a repeated name has no `re` equivalent
    return renamed, tuple((name, tuple(held)) for name, held in holders.items())


@dataclass(frozen=True, slots=True)
class Hit:
    """A rule confirmed on a line of a stream, with the facts its named groups took."""

    rule: CompiledRule
    index: int  # the line's index in its stream
    facts: dict[str, str]


Derived = tuple[bytes | None, Literals | None]  # a rule's prefilter and its required literals


def compile_rule(rule: Rule, index: int = 0, derived: Derived | None = None) -> CompiledRule:
    """A rule ready to scan with (`derived`: its prefilter and literals, when already known)."""
    pre, literals = derived if derived is not None else _derive(rule)
    sampled = rule.role is Role.PROGRESS and not rule.effects  # a line with an effect is never sampled away
    return CompiledRule(rule, index, pre, sampled, literals)


def _derive(rule: Rule) -> Derived:
    try:
        pre = prefilter(rule.pattern, ignorecase=rule.ignorecase)
    except Untranslatable:
        return None, None
    try:
        return pre, required_literals(rule.pattern, ignorecase=rule.ignorecase)
    except Untranslatable:
        return pre, None


def compile_rules(rules: Iterable[Rule]) -> list[CompiledRule]:
    """The rules ready to scan with; their prefilters and literals (slow to derive) come from the
    per-user cache when the same rules were compiled before."""
    listed = list(rules)
    key = cache.key_of(_DERIVED_FORMAT, __version__, *_DERIVERS, *(f"{r.ignorecase:d}{r.pattern}" for r in listed))
    known = _decode(cache.read("prefilters", key), len(listed))
    if known is None:
        known = [_derive(r) for r in listed]
        cache.write("prefilters", key, json.dumps([_encode(d) for d in known]).encode())
    return [compile_rule(rule, index, d) for index, (rule, d) in enumerate(zip(listed, known, strict=True))]


_DERIVED_FORMAT = "2"
# The code that derives prefilters and literals is part of the key: a change to it rebuilds the entry.
_DERIVERS = tuple(Path(module.__file__ or "").read_bytes() for module in (prefilter_module, literals_module))


def _encode(derived: Derived) -> list[object]:
    pre, literals = derived
    needles = [n.hex() for n in literals.needles] if literals is not None else None
    return [pre.hex() if pre is not None else None, needles, bool(literals and literals.folded)]


def _decode(body: bytes | None, count: int) -> list[Derived] | None:
    if body is None:
        return None
    try:
        decoded = [_decode_one(*item) for item in json.loads(body)]
    except (ValueError, TypeError):
        return None
    return decoded if len(decoded) == count else None


def _decode_one(pre: str | None, needles: list[str] | None, folded: bool) -> Derived:
    literals = Literals(tuple(bytes.fromhex(n) for n in needles), bool(folded)) if needles is not None else None
    return (bytes.fromhex(pre) if pre is not None else None), literals


def facts_of(match: AnyMatch) -> dict[str, str]:
    """The named groups that took a value; a repeated name takes the last of its groups that did, as
    in `regex`, where the groups of one name share one number."""
    found = match.groupdict()
    held_by = _HOLDERS.get(id(match.re))
    if held_by is None or held_by[0] is not match.re:
        return found if None not in found.values() else {k: v for k, v in found.items() if v is not None}
    holders = held_by[1]
    facts = {}
    for name, held in holders:
        for group in reversed(held):
            if found[group] is not None:
                facts[name] = found[group]
                break
    return facts


@record(frozen=False)
class Budget:
    """Time left for each user rule on one stream; built-in rules are trusted (checked at load)."""

    seconds: float = field(default_factory=lambda: USER_RULE_TIMEOUT)
    spent: dict[str, float] = field(default_factory=dict)
    timed_out: list[str] = field(default_factory=list)

    def allows(self, compiled: CompiledRule) -> bool:
        return compiled.rule.builtin or compiled.rule.id not in self.timed_out

    def search(self, compiled: CompiledRule, text: str) -> AnyMatch | None:
        """The rule's first match in one line (None also when its time ran out)."""
        if compiled.rule.builtin:
            return compiled.trusted.search(text)
        return self.run(compiled, lambda timeout: compiled.pattern.search(text, timeout=timeout))

    def run(self, compiled: CompiledRule, call: Callable[[float], _T]) -> _T | None:
        """`call(timeout)` within the CPU time the rule has left on this stream; past it, nothing, and
        the rule is dropped here."""
        rule_id = compiled.rule.id
        if rule_id in self.timed_out:
            return None
        value, spent, stopped = bounded(call, self.seconds - self.spent.get(rule_id, 0.0))
        self.spent[rule_id] = self.spent.get(rule_id, 0.0) + spent
        if stopped:
            self.timed_out.append(rule_id)
        return value


def verify(text: str, rules: Iterable[CompiledRule], budget: Budget) -> list[tuple[CompiledRule, dict[str, str]]]:
    """The candidate rules that really match one line, with the facts they extract."""
    out = []
    for compiled in rules:
        if (m := budget.search(compiled, text)) is not None:
            out.append((compiled, facts_of(m)))
    return out


def match_line(text: str, rules: Sequence[CompiledRule], kind: StreamKind, budget: Budget | None = None) -> list[Hit]:
    """The rules that match one line (used to classify the final line of an assembled event); a rule
    whose literals are absent from the line is not run, a user's rule only within its `budget` (a new
    one when none is given)."""
    budget = budget or Budget()
    raw = text.encode("utf-8", "surrogateescape")
    lowered = raw.lower()
    by_needle = _needles(rules, kind)
    candidates = set(by_needle.always)
    if any(twin in raw for twin in TWINS):  # a folded needle may miss a line with `ſ`, `K` or `İ`
        candidates.update(by_needle.folded_rules)
    if len(raw) > _GRAMS_UP_TO:
        for needle, folded, owners in by_needle.needles:
            if needle in (lowered if folded else raw):
                candidates.update(owners)
    else:
        for hay, by_gram in ((raw, by_needle.raw_grams), (lowered, by_needle.folded_grams)):
            for gram in {hay[p : p + _GRAM] for p in range(len(hay) - _GRAM + 1)}.intersection(by_gram):
                for needle, owners in by_gram[gram]:
                    if needle in hay:
                        candidates.update(owners)
        for needle, folded, owners in by_needle.short:
            if needle in (lowered if folded else raw):
                candidates.update(owners)
    out = []
    for i in sorted(candidates):
        compiled = rules[i]
        if (m := budget.search(compiled, text)) is not None:
            out.append(Hit(compiled, 0, facts_of(m)))
    return out


@record
class _Needles:
    """The literals of a rule list's rules for one stream kind, each with the rules that need it: a line
    holding none of a rule's literals is not one it matches, unless the rule's literals are lowered and
    the line has a letter that lowers to no ASCII one but matches one case-insensitively (TWINS)."""

    needles: tuple[tuple[bytes, bool, tuple[int, ...]], ...]  # needle, look in lowered bytes, rule positions
    always: tuple[int, ...]  # rules without literals
    folded_rules: tuple[int, ...]  # rules whose literals are lowered
    # the needles of _GRAM bytes or more by their first _GRAM bytes (in the line's bytes, in its lowered
    # bytes): a short line is looked up once per position, not searched for every needle; and the others
    raw_grams: dict[bytes, list[tuple[bytes, tuple[int, ...]]]]
    folded_grams: dict[bytes, list[tuple[bytes, tuple[int, ...]]]]
    short: tuple[tuple[bytes, bool, tuple[int, ...]], ...]


_GRAM = 4
_GRAMS_UP_TO = 512  # bytes of a line looked up by position; a longer one is searched for each needle


_NEEDLES: dict[tuple[int, int, StreamKind], tuple[Sequence[CompiledRule], _Needles]] = {}


def _needles(rules: Sequence[CompiledRule], kind: StreamKind) -> _Needles:
    """`_Needles` of a rule list, worked out once (the list is kept with them: its id is not reused)."""
    key = (id(rules), len(rules), kind)
    if (known := _NEEDLES.get(key)) is not None and known[0] is rules:
        return known[1]
    owners: dict[tuple[bytes, bool], list[int]] = {}
    always, folded = [], []
    for i, compiled in enumerate(rules):
        if not compiled.applies_to(kind):
            continue
        found = compiled.literals
        if found is None:
            always.append(i)
            continue
        if found.folded:
            folded.append(i)
        for needle in found.needles:
            owners.setdefault((needle, found.folded), []).append(i)
    needles = tuple((n, f, tuple(o)) for (n, f), o in owners.items())
    grams: tuple[dict[bytes, list[tuple[bytes, tuple[int, ...]]]], ...] = ({}, {})
    for needle, in_lowered, held in needles:
        if len(needle) >= _GRAM:
            grams[in_lowered].setdefault(needle[:_GRAM], []).append((needle, held))
    short = tuple(n for n in needles if len(n[0]) < _GRAM)
    made = _Needles(needles, tuple(always), tuple(folded), grams[False], grams[True], short)
    if len(_NEEDLES) > 16:
        _NEEDLES.clear()
    _NEEDLES[key] = (rules, made)
    return made
