"""Run rule examples: the same runner serves the test suite, the pack loader and `rankautopsy rules test`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from rankautopsy.model import Rule
from rankautopsy.records import record
from rankautopsy.sources.prefixes import strip_prefixes

if TYPE_CHECKING:
    import regex

ExampleKind = Literal["match", "no_match"]


@record
class ExampleResult:
    rule_id: str
    kind: ExampleKind
    index: int
    line: str
    ok: bool
    message: str  # empty when ok; otherwise what went wrong, with expected vs extracted facts


def compile_pattern(pattern: str, *, ignorecase: bool = False) -> regex.Pattern[str]:
    """Compile a rule pattern with the flags every consumer uses; raises `regex.error`."""
    return _compile(pattern, ignorecase)


@lru_cache(maxsize=2048)
def _compile(pattern: str, ignorecase: bool) -> regex.Pattern[str]:
    import regex  # on first use: a diagnosis from cached packs never compiles with it

    flags = regex.MULTILINE | regex.V0  # `^`/`$` are line anchors, also when a stream is scanned in bulk
    return regex.compile(pattern, flags | (regex.IGNORECASE if ignorecase else 0))


def extract_facts(rule: Rule, line: str) -> dict[str, str] | None:
    """The facts a rule extracts from one raw log line (launcher prefixes stripped), or None."""
    text, _ = strip_prefixes(line)
    found = compile_pattern(rule.pattern, ignorecase=rule.ignorecase).search(text)
    if found is None:
        return None
    return {name: str(value) for name, value in found.groupdict().items() if value is not None}


def run_examples(rules: Sequence[Rule]) -> list[ExampleResult]:
    """Every match and no_match example of every rule, in order."""
    results: list[ExampleResult] = []
    for rule in rules:
        for index, example in enumerate(rule.match_examples):
            message = _match_problem(example.facts, extract_facts(rule, example.line))
            results.append(ExampleResult(rule.id, "match", index, example.line, not message, message))
        for index, line in enumerate(rule.no_match_examples):
            message = _no_match_problem(extract_facts(rule, line))
            results.append(ExampleResult(rule.id, "no_match", index, line, not message, message))
    return results


def describe(result: ExampleResult) -> str:
    """One line for a failed example: `example match[0] facts differ: pid: expected '1', got '2': 'line'`."""
    return f"example {result.kind}[{result.index}] {result.message}: {result.line!r}"


def _match_problem(expected: Mapping[str, str], got: dict[str, str] | None) -> str:
    if got is None:
        return "does not match"
    wrong = [
        f"{name}: expected {value!r}, got {got[name]!r}" if name in got else f"{name}: expected {value!r}, got nothing"
        for name, value in expected.items()
        if got.get(name) != value
    ]
    return "facts differ: " + "; ".join(wrong) if wrong else ""


def _no_match_problem(got: dict[str, str] | None) -> str:
    if got is None:
        return ""
    facts = ", ".join(f"{name}={value!r}" for name, value in got.items())
    return f"matches but must not (facts: {facts})" if facts else "matches but must not"
