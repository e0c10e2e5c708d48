"""One input or one event as a JSON record, and back, checking every field's type on the way in."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, TypeVar

from rankautopsy.events.collected import Part
from rankautopsy.model import Cause, Effect, Event, Evidence, Input, Location, Role, StreamKind, TimeSpan
from rankautopsy.sources.discover import Source
from rankautopsy.sources.lines import Line, Stream, build_stream
from rankautopsy.sources.prefixes import MAX_HEAD_RANK
from rankautopsy.sources.ranks import PathRank

_MAX_INT = 2**63


class Corrupt(Exception):
    """A record of the wrong shape: where (the line of the file) and why."""

    def __init__(self, line: int | None, why: str) -> None:
        super().__init__(why)
        self.line = line
        self.why = why


# ---- writing ----


def _span(time: TimeSpan | None) -> list[str] | None:
    return None if time is None else [_iso(time.earliest), _iso(time.latest)]


def _iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat()


def event_record(e: Event) -> dict[str, Any]:
    return {
        "type": "event",
        "rule": e.rule,
        "cause": e.cause.value,
        "role": e.role.value,
        "source": e.where.source,
        "line": e.where.line,
        "text": e.text,
        "rank": e.rank,
        "host": e.host,
        "pid": e.pid,
        "time": _span(e.time),
        "facts": dict(e.facts),
        "lines": [[ev.where.source, ev.where.line, ev.text] for ev in e.lines],
        "rank_from": e.rank_from,
        "effects": sorted(x.value for x in e.effects),
    }


def input_record(part: Part) -> dict[str, Any]:
    i, s = part.input, part.stream
    signs = None
    if s is not None:
        rows = zip(s.numbers, s.texts, s.ranks, s.local_ranks, s.rank_from, s.hosts, s.times, s.monotonic, strict=True)
        signs = {
            "lines_read": s.lines_read,
            "head_ranks": sorted(s.head_ranks),
            "signs": [[n, t, r, lr, rf, h, _span(tm), m] for n, t, r, lr, rf, h, tm, m in rows],
        }
    return {
        "type": "input",
        "path": i.path,
        "kind": i.kind.value,
        "rank": i.rank,
        "host": i.host,
        "lines": i.lines,
        "problem": part.problem,
        "notes": list(part.notes),
        "stream": signs,
    }


# ---- reading ----

E = TypeVar("E", bound=StrEnum)


def text(number: int, record: dict[str, Any], key: str) -> str:
    value = record.get(key)
    if not isinstance(value, str):
        raise Corrupt(number, f"{key!r} is not a string")
    return value


def _opt(number: int, value: Any, check: Callable[[Any], bool], what: str) -> Any:
    if value is not None and not check(value):
        raise Corrupt(number, f"{what} of the wrong type")
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and -_MAX_INT < value < _MAX_INT


def _opt_int(number: int, value: Any, what: str) -> int | None:
    return _opt(number, value, _is_int, what)  # type: ignore[no-any-return]


def _opt_str(number: int, value: Any, what: str) -> str | None:
    return _opt(number, value, lambda v: isinstance(v, str), what)  # type: ignore[no-any-return]


def _enum(number: int, kind: type[E], value: Any, what: str) -> E:
    try:
        return kind(value)
    except ValueError:
        raise Corrupt(number, f"an unknown {what}") from None


def when(number: int, value: Any) -> datetime | None:
    if value is None:
        return None
    try:
        at = datetime.fromisoformat(value) if isinstance(value, str) else None
    except ValueError:
        at = None
    if at is None or at.tzinfo is None:
        raise Corrupt(number, "a time that is not an ISO 8601 time with a zone")
    return at.astimezone(UTC)


def _span_from(number: int, value: Any) -> TimeSpan | None:
    if value is None:
        return None
    if not isinstance(value, list) or len(value) != 2:
        raise Corrupt(number, "a time span that is not [earliest, latest]")
    earliest, latest = when(number, value[0]), when(number, value[1])
    if earliest is None or latest is None or latest < earliest:
        raise Corrupt(number, "a time span that ends before it begins")
    return TimeSpan(earliest, latest)


def _facts(number: int, value: Any) -> dict[str, str]:
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise Corrupt(number, "facts that are not strings")
    return value


def _evidence(number: int, value: Any) -> tuple[Evidence, ...]:
    if not isinstance(value, list):
        raise Corrupt(number, "evidence lines that are not a list")
    out = []
    for row in value:
        if not (isinstance(row, list) and len(row) == 3 and isinstance(row[0], str) and _is_int(row[1])
                and isinstance(row[2], str)):  # fmt: skip
            raise Corrupt(number, "an evidence line that is not [source, line, text]")
        out.append(Evidence(Location(row[0], row[1]), row[2]))
    return tuple(out)


def event_from(number: int, r: dict[str, Any]) -> Event:
    effects = r.get("effects")
    if not isinstance(effects, list):
        raise Corrupt(number, "effects that are not a list")
    line = _opt_int(number, r.get("line"), "a line number")
    return Event(
        rule=text(number, r, "rule"),
        cause=_enum(number, Cause, r.get("cause"), "cause"),
        role=_enum(number, Role, r.get("role"), "role"),
        where=Location(text(number, r, "source"), line if line is not None else 0),
        text=text(number, r, "text"),
        rank=_opt_int(number, r.get("rank"), "a rank"),
        host=_opt_str(number, r.get("host"), "a host"),
        pid=_opt_int(number, r.get("pid"), "a pid"),
        time=_span_from(number, r.get("time")),
        facts=_facts(number, r.get("facts")),
        lines=_evidence(number, r.get("lines", [])),
        rank_from=_opt_str(number, r.get("rank_from"), "rank_from"),
        effects=frozenset(_enum(number, Effect, x, "effect") for x in effects),
    )


def input_from(number: int, r: dict[str, Any]) -> Part:
    found = Input(
        path=text(number, r, "path"),
        kind=_enum(number, StreamKind, r.get("kind"), "stream kind"),
        rank=_opt_int(number, r.get("rank"), "a rank"),
        host=_opt_str(number, r.get("host"), "a host"),
        lines=_opt_int(number, r.get("lines"), "a line count") or 0,
    )
    notes = r.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        raise Corrupt(number, "notes that are not strings")
    stream = r.get("stream")
    return Part(
        input=found,
        events=[],
        stream=None if stream is None else _stream(number, found, stream),
        notes=notes,
        problem=_opt_str(number, r.get("problem"), "a problem"),
    )


def _stream(number: int, found: Input, value: Any) -> Stream:
    if not isinstance(value, dict) or not isinstance(value.get("signs"), list):
        raise Corrupt(number, "a stream without its signs of life")
    source = Source(found.path, found.kind, where=PathRank(rank=found.rank))
    lines = [_sign(number, row) for row in value["signs"]]
    stream = build_stream(source, lines, _opt_int(number, value.get("lines_read"), "a line count") or 0)
    heads = value.get("head_ranks", [])  # absent in files written before it was recorded
    if not isinstance(heads, list) or not all(_is_int(r) and 0 <= r < MAX_HEAD_RANK for r in heads):
        raise Corrupt(number, "head ranks that are not ranks")
    stream.head_ranks = frozenset(heads)
    return stream


def _sign(number: int, row: Any) -> Line:
    if not isinstance(row, list) or len(row) != 8:
        raise Corrupt(number, "a sign of life that is not [line, text, rank, local_rank, rank_from, host, time, mono]")
    n, t, rank, local, rank_from, host, time, mono = row
    if not _is_int(n) or not isinstance(t, str):
        raise Corrupt(number, "a sign of life without its line number and text")
    mono = _opt(number, mono, lambda v: isinstance(v, int | float) and not isinstance(v, bool), "a monotonic stamp")
    return Line(
        n,
        t,
        _opt_int(number, rank, "a rank"),
        _opt_int(number, local, "a local rank"),
        _opt_str(number, rank_from, "rank_from"),
        _opt_str(number, host, "a host"),
        _span_from(number, time),
        None if mono is None else float(mono),
    )
