"""Every example of every built-in rule is its own test: the exact facts it must extract, or no match."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from rankautopsy.model import Rule
from rankautopsy.rulepacks.loader import load_rules
from rankautopsy.rulepacks.ruletest import compile_pattern, extract_facts, run_examples
from rankautopsy.scan.matcher import CompiledRule, facts_of

RULES = load_rules()


def _cases() -> Iterator[object]:
    for rule in RULES:
        for index, example in enumerate(rule.match_examples):
            yield pytest.param(rule, example.line, dict(example.facts), id=f"{rule.id}[match-{index}]")
        for index, line in enumerate(rule.no_match_examples):
            yield pytest.param(rule, line, None, id=f"{rule.id}[no_match-{index}]")


@pytest.mark.parametrize(("rule", "line", "expected"), list(_cases()))
def test_example(rule: Rule, line: str, expected: dict[str, str] | None) -> None:
    facts = extract_facts(rule, line)
    if expected is None:
        assert facts is None, f"{rule.id} must not match, extracted {facts}"
        return
    assert facts is not None, f"{rule.id} does not match"
    assert {name: facts.get(name) for name in expected} == expected


def test_runner_agrees_with_the_tests() -> None:
    assert [r for r in run_examples(RULES) if not r.ok] == []


def _agreement(rule: Rule, line: str) -> tuple[tuple[int, int], list[tuple[str, str]]] | None:
    compiled = CompiledRule(rule)
    found = compiled.trusted.search(line)
    return None if found is None else (found.span(), list(facts_of(found).items()))


def test_built_in_rules_confirm_with_re_exactly_as_with_regex() -> None:
    """A built-in rule confirms lines with the standard library's `re` where its pattern compiles there;
    on every example line and the other rules' examples, it finds what `regex` (the rule's engine) finds."""
    lines = [e.line for r in RULES for e in r.match_examples] + [line for r in RULES for line in r.no_match_examples]
    on_re = 0
    for rule in RULES:
        compiled = CompiledRule(rule)
        on_re += isinstance(compiled.trusted, re.Pattern)
        for line in lines:
            found = compiled.pattern.search(line)
            expected = None if found is None else (found.span(), list(facts_of(found).items()))
            assert _agreement(rule, line) == expected, rule.id
    assert on_re >= len(RULES) * 9 // 10  # repeated group names included: `regex` is seldom imported


def test_built_in_patterns_are_fast_on_near_misses() -> None:
    """The near-miss lines a user pack's pattern is timed on at load: a diagnosis does not time the
    built-in ones, so the suite does (a built-in `(x|xx)+y` would otherwise ship)."""
    from rankautopsy.rulepacks import rule as rule_module

    slow = [
        r.id
        for r in RULES
        if rule_module._too_slow(compile_pattern(r.pattern, ignorecase=r.ignorecase), rule_module._near_misses(r))
    ]
    assert slow == []


def test_a_diagnosis_does_not_time_built_in_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    from rankautopsy.rulepacks import loader
    from rankautopsy.rulepacks import rule as rule_module

    timed: list[object] = []
    monkeypatch.setattr(rule_module, "_too_slow", lambda compiled, lines: timed.append(compiled) or False)
    assert len(loader._validated_builtins()[0]) == len(RULES)
    assert timed == []
    loader.load_pack(loader.builtin_pack_paths()[0], builtin=True)  # with its examples run, as tests do
    assert timed
