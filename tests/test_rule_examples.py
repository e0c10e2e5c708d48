"""Every example of every built-in rule is its own test: the exact facts it must extract, or no match."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from rankautopsy.model import Rule
from rankautopsy.rulepacks.loader import load_rules
from rankautopsy.rulepacks.ruletest import extract_facts, run_examples

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
