"""Compile every rule once; confirm the scanner's candidate lines with each rule's own regex.

The scanner (`rankautopsy.scan.engine`) finds candidate lines in bulk with a byte-level prefilter of every rule;
a rule matches a line only if its pattern, compiled here with named groups, matches the line's message.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import regex

from rankautopsy.model import Role, Rule, StreamKind
from rankautopsy.scan.prefilter import Untranslatable, prefilter

_T = TypeVar("_T")
USER_RULE_TIMEOUT = 2.0  # seconds a user's rule may spend on one stream before it is dropped there


@dataclass(frozen=True, slots=True)
class CompiledRule:
    rule: Rule
    pattern: regex.Pattern[str]
    index: int = 0  # position in the rule set
    prefilter: bytes | None = None  # None: no byte-level prefilter, `pattern` scans decoded text
    sampled: bool = False  # a progress rule: the scanner keeps a sample of its lines, not all

    def applies_to(self, kind: StreamKind) -> bool:
        return not self.rule.streams or kind in self.rule.streams


@dataclass(frozen=True, slots=True)
class Hit:
    rule: CompiledRule
    index: int  # the line's index in its stream
    facts: dict[str, str]


def compile_rule(rule: Rule, index: int = 0) -> CompiledRule:
    flags = regex.MULTILINE | regex.V0 | (regex.IGNORECASE if rule.ignorecase else 0)
    try:
        bytes_prefilter: bytes | None = prefilter(rule.pattern, ignorecase=rule.ignorecase)
    except Untranslatable:
        bytes_prefilter = None
    sampled = rule.role is Role.PROGRESS and not rule.effects  # a line with an effect is never sampled away
    return CompiledRule(rule, regex.compile(rule.pattern, flags), index, bytes_prefilter, sampled)


def compile_rules(rules: Iterable[Rule]) -> list[CompiledRule]:
    return [compile_rule(rule, index) for index, rule in enumerate(rules)]


def facts_of(match: regex.Match[str]) -> dict[str, str]:
    return {k: v for k, v in match.groupdict().items() if v is not None}


@dataclass(slots=True)
class Budget:
    """Time left for each user rule on one stream; built-in rules are trusted (checked at load)."""

    seconds: float = field(default_factory=lambda: USER_RULE_TIMEOUT)
    spent: dict[str, float] = field(default_factory=dict)
    timed_out: list[str] = field(default_factory=list)

    def allows(self, compiled: CompiledRule) -> bool:
        return compiled.rule.builtin or compiled.rule.id not in self.timed_out

    def search(self, compiled: CompiledRule, text: str) -> regex.Match[str] | None:
        """The rule's first match in one line (None also when its time ran out)."""
        if compiled.rule.builtin:
            return compiled.pattern.search(text)
        return self.run(compiled, lambda timeout: compiled.pattern.search(text, timeout=timeout))

    def run(self, compiled: CompiledRule, call: Callable[[float], _T]) -> _T | None:
        rule_id = compiled.rule.id
        if rule_id in self.timed_out:
            return None
        began = time.perf_counter()
        try:
            return call(max(0.001, self.seconds - self.spent.get(rule_id, 0.0)))
        except TimeoutError:
            self.timed_out.append(rule_id)
            return None
        finally:
            self.spent[rule_id] = self.spent.get(rule_id, 0.0) + time.perf_counter() - began


def verify(text: str, rules: Iterable[CompiledRule], budget: Budget) -> list[tuple[CompiledRule, dict[str, str]]]:
    """The candidate rules that really match one line, with the facts they extract."""
    out = []
    for compiled in rules:
        if (m := budget.search(compiled, text)) is not None:
            out.append((compiled, facts_of(m)))
    return out


def match_line(text: str, rules: Sequence[CompiledRule], kind: StreamKind) -> list[Hit]:
    """The rules that match one line (used to classify the final line of an assembled event)."""
    out = []
    for compiled in rules:
        if compiled.applies_to(kind) and (m := compiled.pattern.search(text)) is not None:
            out.append(Hit(compiled, 0, facts_of(m)))
    return out
