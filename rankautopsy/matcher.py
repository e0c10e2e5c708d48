"""Compile every rule once and scan each stream's text in bulk: the regex engine walks the text,
Python only sees the matches."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import regex

from rankautopsy.model import Rule, StreamKind

USER_RULE_TIMEOUT = 2.0  # seconds a user's rule may spend on one stream before it is dropped


@dataclass(frozen=True, slots=True)
class CompiledRule:
    rule: Rule
    pattern: regex.Pattern[str]

    def applies_to(self, kind: StreamKind) -> bool:
        return not self.rule.streams or kind in self.rule.streams


@dataclass(frozen=True, slots=True)
class Hit:
    rule: CompiledRule
    index: int  # the line's index in its stream
    facts: dict[str, str]


@dataclass(frozen=True, slots=True)
class Scan:
    hits: list[Hit]
    timed_out: list[str]  # ids of user rules that exceeded their time bound on this stream


def compile_rule(rule: Rule) -> CompiledRule:
    flags = regex.MULTILINE | regex.V0 | (regex.IGNORECASE if rule.ignorecase else 0)
    return CompiledRule(rule, regex.compile(rule.pattern, flags))


def compile_rules(rules: Iterable[Rule]) -> list[CompiledRule]:
    return [compile_rule(rule) for rule in rules]


def facts_of(match: regex.Match[str]) -> dict[str, str]:
    return {k: v for k, v in match.groupdict().items() if v is not None}


def scan_texts(texts: Sequence[str], kind: StreamKind, rules: Sequence[CompiledRule]) -> Scan:
    """Every (rule, line) match in a stream; at most one hit per rule and line."""
    joined = "\n".join(texts)
    starts = _line_starts(texts)
    hits: list[Hit] = []
    timed_out: list[str] = []
    for compiled in rules:
        if not compiled.applies_to(kind):
            continue
        timeout = None if compiled.rule.builtin else USER_RULE_TIMEOUT
        try:
            hits.extend(_hits(compiled, joined, starts, timeout))
        except TimeoutError:
            timed_out.append(compiled.rule.id)
    hits.sort(key=lambda h: h.index)
    return Scan(hits, timed_out)


def _hits(compiled: CompiledRule, joined: str, starts: list[int], timeout: float | None) -> list[Hit]:
    found: list[Hit] = []
    last = -1
    for m in compiled.pattern.finditer(joined, timeout=timeout):
        begin = m.start()
        while begin < m.end() and joined[begin] == "\n":  # a leading `\s*` may have eaten blank lines
            begin += 1
        index = bisect_right(starts, begin) - 1
        if index != last:
            found.append(Hit(compiled, index, facts_of(m)))
            last = index
    return found


def _line_starts(texts: Sequence[str]) -> list[int]:
    starts = []
    pos = 0
    for text in texts:
        starts.append(pos)
        pos += len(text) + 1
    return starts


def match_line(text: str, rules: Sequence[CompiledRule], kind: StreamKind) -> list[Hit]:
    """The rules that match one line (used to classify the final line of an assembled event)."""
    out = []
    for compiled in rules:
        if compiled.applies_to(kind) and (m := compiled.pattern.search(text)) is not None:
            out.append(Hit(compiled, 0, facts_of(m)))
    return out
