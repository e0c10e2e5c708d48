"""diagnose(): the only module that knows the order of the stages."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta, tzinfo

from rankautopsy.assemble import build_events, classify
from rankautopsy.clocks import ClockContext, live_boot_time, live_uptime, local_zone, year_hint_from_text
from rankautopsy.lines import Stream, build_stream
from rankautopsy.matcher import CompiledRule, compile_rules, scan_texts
from rankautopsy.model import (
    Cause,
    Confidence,
    Diagnosis,
    Event,
    Input,
    Location,
    Role,
    StreamKind,
    TimeSpan,
    Verdict,
)
from rankautopsy.report import rank_reports, remediation_for
from rankautopsy.rulepacks import load_remediation, load_rules
from rankautopsy.sources.discover import Source, discover
from rankautopsy.sources.sanitize import clean
from rankautopsy.timeline import build_timeline
from rankautopsy.verdict import decide

DEFAULT_SKEW = timedelta(seconds=2)


@dataclass(frozen=True, slots=True, kw_only=True)
class Options:
    paths: Sequence[str]
    dmesg: Sequence[str] = ()
    rules: Sequence[str] = ()
    builtin_rules: bool = True
    boot_time: datetime | None = None
    tz: tzinfo = field(default_factory=local_zone)
    skew: timedelta = DEFAULT_SKEW
    stdin: bytes | None = None


def diagnose(options: Options) -> Diagnosis:
    from pathlib import Path

    sources, skipped = discover(options.paths, options.dmesg, options.stdin)
    rules = compile_rules(load_rules([Path(p) for p in options.rules], builtin=options.builtin_rules))
    year = _year_hint(sources)
    notes: list[str] = []
    streams: list[Stream] = []
    per_stream: list[list[Event]] = []
    for source in sources:
        if source.kind is StreamKind.ERROR_JSON:
            per_stream.append(_error_file_events(source, rules))
            continue
        ctx = _clock(source, options, year, notes)
        stream = build_stream(source, ctx)
        streams.append(stream)
        per_stream.append(_stream_events(stream, rules, notes))
        _kernel_notes(stream, ctx, notes)
    tl = build_timeline(streams, per_stream, ClockContext(tz=options.tz, year=year))
    tl.notes.extend(notes)
    findings = decide(tl, options.skew)
    inputs = tuple(_input(s, streams) for s in sources)
    verdict = Verdict(
        first_death=findings.first,
        confidence=findings.confidence,
        reasoning=tuple(findings.reasoning),
        ruled_out=tuple(findings.ruled_out),
        remediation=remediation_for(findings.first, {c.rule.id: c.rule for c in rules}, load_remediation()),
        notes=tuple(findings.notes),
    )
    return Diagnosis(
        verdict=verdict,
        ranks=rank_reports(tl, findings),
        events=tuple(tl.events),
        inputs=inputs,
        skipped=tuple(skipped),
    )


def _year_hint(sources: Sequence[Source]) -> int:
    for source in sources:
        for line in source.text[:200_000].splitlines()[:2000]:
            if (year := year_hint_from_text(line)) is not None:
                return year
    return datetime.now(UTC).year


def _clock(source: Source, options: Options, year: int, notes: list[str]) -> ClockContext:
    boot = options.boot_time
    if boot is None and source.live and source.kind is StreamKind.KERNEL:
        boot = _live_boot(source)
        if boot is not None:
            notes.append(
                f"{source.display}: raw kernel stamps placed with this host's boot time {boot:%Y-%m-%d %H:%M:%S} UTC"
            )
    return ClockContext(tz=options.tz, year=year, boot_time=boot)


_MONO = re.compile(r"^(?:<\d+>)?\[\s*(\d+\.\d+)\]", re.MULTILINE)


def _live_boot(source: Source) -> datetime | None:
    """Piped in live: the stamps are this host's if none is later than its uptime."""
    stamps = [float(m) for m in _MONO.findall(source.text)]
    uptime = live_uptime()
    if not stamps or uptime is None or max(stamps) > uptime + 1:
        return None
    return live_boot_time()


def _kernel_notes(stream: Stream, ctx: ClockContext, notes: list[str]) -> None:
    if stream.kind is not StreamKind.KERNEL or ctx.boot_time is not None:
        return
    if any(m is not None for m in stream.monotonic) and all(t is None for t in stream.times):
        notes.append(
            f"{stream.source.display} has only seconds since boot: its events are joined to ranks by pid but "
            "not placed in time; pass --boot-time (from `uptime -s` on that host) or `dmesg -T` output"
        )


def _stream_events(stream: Stream, rules: list[CompiledRule], notes: list[str]) -> list[Event]:
    scan = scan_texts(stream.texts, stream.kind, rules)
    for rule_id in scan.timed_out:
        notes.append(f"rule {rule_id} exceeded its time bound on {stream.source.display} and was skipped there")
    return _thin_progress(build_events(stream, scan.hits, rules))


def _thin_progress(events: list[Event]) -> list[Event]:
    """Step lines would be millions of events: keep each rank's first and last, and the highest step."""
    keep: dict[tuple[int | None, str | None], list[int]] = {}
    for i, e in enumerate(events):
        if e.role is Role.PROGRESS and e.rule != "progress.training-complete":
            keep.setdefault((e.rank, e.facts.get("emitter_local_rank")), []).append(i)
    drop: set[int] = set()
    for indices in keep.values():
        top = max(indices, key=lambda i: int(events[i].facts.get("step", "-1") or -1))
        drop.update(set(indices[1:-1]) - {top})
    return [e for i, e in enumerate(events) if i not in drop]


def _error_file_events(source: Source, rules: list[CompiledRule]) -> list[Event]:
    """torchrun's error.json: the exception a rank recorded with @record, and when."""
    try:
        data = json.loads(source.text)
        message = data["message"]
        text = message["message"] if isinstance(message, dict) else str(message)
        extra = message.get("extraInfo", {}) if isinstance(message, dict) else {}
        stamp = int(extra.get("timestamp", "0"))
    except (ValueError, KeyError, TypeError, AttributeError):
        return []
    first = clean(str(text)).strip().splitlines()[0] if str(text).strip() else ""
    exc_type, _, exc_msg = first.partition(": ")
    facts = {"exc_type": exc_type, "exc_msg": exc_msg}
    cause, role, by = classify(first, StreamKind.RANK_LOG, rules, "", Cause.PYTHON_EXCEPTION, Role.CAUSE)
    if by:
        facts["classified_by"] = by
    if source.where.local_rank is not None:
        facts["emitter_local_rank"] = str(source.where.local_rank)
    time = None
    if stamp > 0:
        at = datetime.fromtimestamp(stamp, UTC)
        time = TimeSpan(at, at + timedelta(seconds=1))
    return [
        Event(
            rule="torchrun.error-file",
            cause=cause,
            role=role,
            where=Location(source.display, 1),
            text=first,
            rank=source.where.rank,
            time=time,
            facts=facts,
            rank_from="path" if source.where.rank is not None else None,
        )
    ]


def _input(source: Source, streams: Sequence[Stream]) -> Input:
    lines = next((len(s) for s in streams if s.source is source), 1)
    return Input(path=source.display, kind=source.kind, rank=source.where.rank, lines=lines)


__all__ = ["DEFAULT_SKEW", "Confidence", "Options", "diagnose", "replace"]
