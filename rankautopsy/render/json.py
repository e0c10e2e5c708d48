"""The JSON contract (`schema: 2`): the only place where the model is serialised.

Its JSON Schema ships as rankautopsy/schema/diagnosis-2.json; the changelog is in README's "JSON"."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from json.encoder import encode_basestring
from typing import Any

import rankautopsy
from rankautopsy import recache
from rankautopsy.model import (
    Diagnosis,
    Event,
    Evidence,
    FirstDeath,
    Input,
    Outcome,
    RankReport,
    RuledOut,
    SkippedInput,
    TimeSpan,
    Verdict,
)

SCHEMA = 2
TOOL = "rankautopsy"

JSONObject = dict[str, Any]

_SURROGATE = recache.compile(r"[\ud800-\udfff]")
_C1_AND_DEL = recache.compile(r"[\x7f-\x9f]")


def render_json(d: Diagnosis, version: str | None = None) -> str:
    """One JSON object, keys in contract order, 2-space indent, no trailing newline."""
    doc: JSONObject = {
        "schema": SCHEMA,
        "tool": {"name": TOOL, "version": version or _package_version()},
        "verdict": _verdict(d.verdict),
        "ranks": _Each(d.ranks, _rank),
        "events": _Each(d.events, _event),
        "inputs": [_input(i) for i in d.inputs],
        "skipped": [_skipped(s) for s in d.skipped],
    }
    return dumps(doc)


def dumps(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, indent=2)` for the values the contract holds (dicts with
    string keys, lists, strings, ints, bools, None), byte for byte but for `_safe` applied to each
    string: the standard library's indenting encoder is pure Python, and took most of the time of a
    diagnosis of hundreds of files."""
    out: list[str] = []
    _write(value, "\n", out)
    return "".join(out)


def _write(value: Any, pad: str, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(_string(value))
    elif value is None or value is True or value is False:
        out.append(_CONSTANTS[value])
    elif isinstance(value, int):
        out.append(int.__repr__(value))
    elif isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner = pad + "  "
        sep = "{" + inner
        for key, item in value.items():
            if (name := _KEYS.get(key)) is None:
                name = _string(key) + ": "
                if len(_KEYS) < _MAX_KEYS:  # the contract's keys, and the facts' names of the rules
                    _KEYS[key] = name
            kind = item.__class__  # exact classes only: a StrEnum or a bool goes the general way
            if kind is str:  # most values: written here, a call per value fewer
                out.append(sep + name + _string(item))
            elif kind is int:
                out.append(sep + name + int.__repr__(item))
            elif item is None:
                out.append(sep + name + "null")
            else:
                out.append(sep + name)
                _write(item, inner, out)
            sep = "," + inner
        out.append(pad + "}")
    elif isinstance(value, _Each):
        _write_each(value, pad, out)
    elif isinstance(value, list | tuple):
        if not value:
            out.append("[]")
            return
        inner = pad + "  "
        sep = "[" + inner
        for item in value:
            kind = item.__class__
            if kind is str:
                out.append(sep + _string(item))
            elif kind is int:
                out.append(sep + int.__repr__(item))
            else:
                out.append(sep)
                _write(item, inner, out)
            sep = "," + inner
        out.append(pad + "]")
    else:
        out.append(json.dumps(value))  # floats (nan, inf) as json writes them; anything else raises


@dataclass(frozen=True)
class _Each:
    """A list written as `_write` writes a list, each item made and joined on its own: a report of tens
    of thousands of events is never held as all their dicts and a million small strings at once."""

    items: Sequence[Any]
    make: Callable[[Any], Any]


def _write_each(value: _Each, pad: str, out: list[str]) -> None:
    if not value.items:
        out.append("[]")
        return
    inner = pad + "  "
    sep = "[" + inner
    for item in value.items:
        part = [sep]
        _write(value.make(item), inner, part)
        out.append("".join(part))
        sep = "," + inner
    out.append(pad + "]")


_CONSTANTS = {None: "null", True: "true", False: "false"}
_KEYS: dict[str, str] = {}  # a key as written, with its colon
_MAX_KEYS = 4096


def iso(at: datetime) -> str:
    """ISO 8601 in UTC with microseconds and `Z`; a naive datetime is taken to be UTC."""
    if at.tzinfo is None:
        return at.isoformat(timespec="microseconds") + "Z"
    return at.astimezone(UTC).isoformat(timespec="microseconds")[:-6] + "Z"  # less its "+00:00"


def _package_version() -> str:
    version = getattr(rankautopsy, "__version__", None)
    return version if isinstance(version, str) and version else "0"


def _string(text: str) -> str:
    encoded = encode_basestring(text)
    return encoded if text.isascii() and "\x7f" not in text else _safe(encoded)


def _safe(text: str) -> str:
    """Lone surrogates become U+FFFD (pairs are joined); DEL and C1 controls are \\u-escaped."""
    if _SURROGATE.search(text):
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return _C1_AND_DEL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _opt_iso(at: datetime | None) -> str | None:
    return None if at is None else iso(at)


def _span(span: TimeSpan | None) -> JSONObject | None:
    if span is None:
        return None
    return {"earliest": iso(span.earliest), "latest": iso(span.latest)}


def _evidence(ev: Evidence) -> JSONObject:
    return {"source": ev.where.source, "line": ev.where.line, "text": ev.text}


def _first_death(fd: FirstDeath | None) -> JSONObject | None:
    if fd is None:
        return None
    return {
        "rank": fd.rank,
        "host": fd.host,
        "pid": fd.pid,
        "cause": fd.cause.value,
        "rule": fd.rule,
        "method": fd.method,
        "phase": fd.phase.value,
        "time": _span(fd.time),
        **({"time_open": fd.time_open.value} if fd.time_open else {}),
        "detail": fd.detail,
        "evidence": [_evidence(ev) for ev in fd.evidence],
    }


def _ruled_out(r: RuledOut) -> JSONObject:
    return {"rank": r.rank, "why": r.why}


def _verdict(v: Verdict) -> JSONObject:
    fd = v.first_death
    return {
        "outcome": v.outcome.value,
        "first_death": _first_death(fd),
        "hang": v.outcome is Outcome.HANG,
        "confidence": v.confidence.value,
        "confidence_caps": list(v.caps),
        "reasoning": list(v.reasoning),
        "ruled_out": [_ruled_out(r) for r in v.ruled_out],
        "not_first": list(v.not_first),
        "unattributed": [
            {"cause": u.cause.value, "source": u.where.source, "line": u.where.line, "text": u.text}
            for u in v.unattributed
        ],
        "fetch_next": list(v.fetch_next),
        "remediation": list(v.remediation),
        "notes": list(v.notes),
    }


def _rank(r: RankReport) -> JSONObject:
    return {
        "rank": r.rank,
        "host": r.host,
        "pid": r.pid,
        "fate": r.fate.value,
        "exitcode": r.exitcode,
        "last_seen": _opt_iso(r.last_seen),
        "last_step": r.last_step,
        "summary": r.summary,
        "events": list(r.events),
    }


def _event(e: Event) -> JSONObject:
    return {
        "rule": e.rule,
        "cause": e.cause.value,
        "role": e.role.value,
        "rank": e.rank,
        "host": e.host,
        "pid": e.pid,
        "time": _span(e.time),
        "source": e.where.source,
        "line": e.where.line,
        "text": e.text,
        "lines": [_evidence(ev) for ev in e.lines],
        "facts": {k: e.facts[k] for k in sorted(e.facts)},
        "effects": sorted(x.value for x in e.effects),
        "rank_from": e.rank_from,
    }


def _input(i: Input) -> JSONObject:
    return {"path": i.path, "kind": i.kind.value, "rank": i.rank, "host": i.host, "lines": i.lines}


def _skipped(s: SkippedInput) -> JSONObject:
    return {"path": s.path, "reason": s.reason}
