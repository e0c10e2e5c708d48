"""The built-in rule layer kept validated in the per-user cache, so that a diagnosis does not parse
and check every pack on every start.

The cache key is the tool's version and the bytes of every built-in pack: editing a pack, adding one
or upgrading rankautopsy rebuilds the entry. An entry is JSON (never a pickle); one that does not
decode into valid rules is ignored and rebuilt.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rankautopsy import __version__, cache
from rankautopsy.model import Assembly, Cause, Effect, Example, Location, Role, Rule, StreamKind

ENTRY = "rules"
FORMAT = "1"


def builtin_rules(
    paths: Sequence[Path], build: Callable[[], tuple[tuple[Rule, ...], tuple[str, ...]]]
) -> tuple[tuple[Rule, ...], tuple[str, ...]]:
    """The validated built-in rules and their problems: from the cache when the packs are unchanged,
    else from `build()` (stored for next time when the packs have no problems)."""
    try:
        key = cache.key_of(FORMAT, __version__, *(part for p in paths for part in (p.name, p.read_bytes())))
    except OSError:
        return build()
    if (body := cache.read(ENTRY, key)) is not None and (rules := _decode(body)) is not None:
        return rules, ()
    rules, problems = build()
    if not problems:
        cache.write(ENTRY, key, encode(rules))
    return rules, problems


def encode(rules: Sequence[Rule]) -> bytes:
    return json.dumps([_to_json(r) for r in rules], separators=(",", ":")).encode()


def _to_json(rule: Rule) -> dict[str, Any]:
    return {
        "id": rule.id,
        "title": rule.title,
        "cause": rule.cause.value,
        "role": rule.role.value,
        "pattern": rule.pattern,
        "ignorecase": rule.ignorecase,
        "streams": sorted(s.value for s in rule.streams),
        "assemble": rule.assemble.value if rule.assemble else None,
        "why": rule.why,
        "falsepositives": list(rule.falsepositives),
        "remediation": list(rule.remediation),
        "references": list(rule.references),
        "status": rule.status,
        "since": rule.since,
        "aliases": list(rule.aliases),
        "effects": sorted(e.value for e in rule.effects),
        "facts": [list(pair) for pair in rule.facts],
        "at_start": rule.at_start,
        "match": [[e.line, dict(e.facts)] for e in rule.match_examples],
        "no_match": list(rule.no_match_examples),
        "source": [rule.source.source, rule.source.line] if rule.source else None,
        "builtin": rule.builtin,
    }


def _decode(body: bytes) -> tuple[Rule, ...] | None:
    try:
        return tuple(_from_json(item) for item in json.loads(body))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def _from_json(d: dict[str, Any]) -> Rule:
    source = d["source"]
    return Rule(
        id=_str(d["id"]),
        title=_str(d["title"]),
        cause=Cause(d["cause"]),
        role=Role(d["role"]),
        pattern=_str(d["pattern"]),
        ignorecase=bool(d["ignorecase"]),
        streams=frozenset(StreamKind(s) for s in d["streams"]),
        assemble=Assembly(d["assemble"]) if d["assemble"] is not None else None,
        why=_str(d["why"]),
        falsepositives=_strs(d["falsepositives"]),
        remediation=_strs(d["remediation"]),
        references=_strs(d["references"]),
        status=_str(d["status"]),
        since=_str(d["since"]),
        aliases=_strs(d["aliases"]),
        effects=frozenset(Effect(e) for e in d["effects"]),
        facts=tuple((_str(k), _str(v)) for k, v in d["facts"]),
        at_start=bool(d["at_start"]),
        match_examples=tuple(_example(line, facts) for line, facts in d["match"]),
        no_match_examples=_strs(d["no_match"]),
        source=Location(_str(source[0]), int(source[1])) if source is not None else None,
        builtin=bool(d["builtin"]),
    )


def _str(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError("not a string")
    return value


def _strs(values: object) -> tuple[str, ...]:
    if not isinstance(values, list):
        raise TypeError("not a list")
    return tuple(_str(v) for v in values)


def _example(line: object, facts: dict[str, object]) -> Example:
    return Example(line=_str(line), facts={_str(k): _str(v) for k, v in facts.items()})
