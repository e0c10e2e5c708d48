"""GitHub Actions workflow commands: `::error` at the first death's evidence, `::warning` per casualty.

Escaping follows actions/toolkit `packages/core/src/command.ts`: data escapes `%`, CR and LF;
properties escape `:` and `,` as well. GitHub shows at most 10 warnings per step, so the
casualties are bounded and the rest summed up in one last warning.
"""

from __future__ import annotations

from collections.abc import Sequence

from rankautopsy.model import Cause, Diagnosis, Event, Fate, FirstDeath, Location, RankReport, Role, Verdict
from rankautopsy.render._labels import (
    CAUSE_LABELS,
    FATE_LABELS,
    OUTCOME_LABELS,
    PHASE_LABELS,
    clip,
    decisive_evidence,
    headline,
    is_clean,
    named,
    outcome_lines,
    plain,
    rank_events,
    rank_ranges,
    when_text,
    where,
)

MAX_WARNINGS = 10
LINE_CHARS = 240
_CASUALTIES = (Fate.DIED, Fate.COLLATERAL, Fate.TORN_DOWN)


def render_github(d: Diagnosis) -> str:
    v = d.verdict
    fd = named(v)
    title, words = OUTCOME_LABELS[v.outcome]
    if fd is not None:
        lines = [_first_death(d, fd, v), *_casualties(d)]
    elif not is_clean(v):
        body = "\n".join((words, *outcome_lines(v)))
        lines = [command("error", body, title=f"rankautopsy: {title} ({v.confidence.value})")]
    else:
        lines = [command("notice", "\n".join((words, *v.reasoning)), title=f"rankautopsy: {title}")]
    return "\n".join(lines)


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, *, title: str, at: Location | None = None) -> str:
    """`::name file=...,line=...,title=...::message` with every value cleaned and escaped."""
    props = [] if at is None else [("file", at.source), ("line", str(at.line))]
    props.append(("title", title))
    rendered = ",".join(f"{key}={escape_property(plain(value))}" for key, value in props)
    return f"::{name} {rendered}::{escape_data(plain(message))}"


def _first_death(d: Diagnosis, fd: FirstDeath, v: Verdict) -> str:
    facts = [f"when: {when_text(fd.time)}", f"phase: {PHASE_LABELS[fd.phase]}", f"confidence: {v.confidence.value}"]
    lines = [headline(fd, plain(fd.host) if fd.host else None, fd.pid), "; ".join(facts)]
    lines += [fd.detail] if fd.detail else []
    lines += [f"{where(ev)}: {clip(ev.text, LINE_CHARS)}" for ev in fd.evidence]
    lines += ["What to do:", *(f"- {step}" for step in v.remediation)] if v.remediation else []
    decisive = decisive_evidence(d)
    title = f"rankautopsy: {_who(fd)}" + ("" if fd.cause is Cause.HANG else f" — {CAUSE_LABELS[fd.cause][1]}")
    return command("error", "\n".join(lines), title=title, at=None if decisive is None else decisive.where)


def _who(fd: FirstDeath) -> str:
    if fd.rank is None:
        return "the job ended first" if fd.cause is Cause.TIME_LIMIT else "a process of unknown rank died first"
    return f"rank {fd.rank} {'is the hang culprit' if fd.cause is Cause.HANG else 'died first'}"


def _casualties(d: Diagnosis) -> list[str]:
    hurt = sorted((r for r in d.ranks if r.fate in _CASUALTIES), key=lambda r: r.rank)
    if len(hurt) <= MAX_WARNINGS:
        return [_casualty(d, r) for r in hurt]
    shown, rest = hurt[: MAX_WARNINGS - 1], hurt[MAX_WARNINGS - 1 :]
    return [*(_casualty(d, r) for r in shown), _more(rest)]


def _casualty(d: Diagnosis, r: RankReport) -> str:
    event = _telling_event(rank_events(d, r.events))
    fd = d.verdict.first_death
    cause = "" if event is None else f" — {CAUSE_LABELS[event.cause][1]}"
    lines = [f"rank {r.rank} ({FATE_LABELS[r.fate][0]}): {r.summary}"]
    lines += [] if event is None else [f"{event.where.source}:{event.where.line}: {clip(event.text, LINE_CHARS)}"]
    if fd is not None and fd.rank is not None and r.fate is not Fate.DIED:
        lines.append(f"A consequence of rank {fd.rank}'s {'hang' if fd.cause is Cause.HANG else 'death'}, not a cause.")
    title = f"rankautopsy: rank {r.rank} {FATE_LABELS[r.fate][0]}{cause}"
    return command("warning", "\n".join(lines), title=title, at=None if event is None else event.where)


def _telling_event(events: Sequence[Event]) -> Event | None:
    """The rank's own cause, else its first symptom."""
    for role in (Role.CAUSE, Role.SYMPTOM):
        found = [e for e in events if e.role is role]
        if found:
            return found[0]
    return None


def _more(rest: Sequence[RankReport]) -> str:
    by_fate: dict[Fate, list[int]] = {}
    for r in rest:
        by_fate.setdefault(r.fate, []).append(r.rank)
    lines = [f"{FATE_LABELS[f][0]}: ranks {rank_ranges(ranks)}" for f, ranks in by_fate.items()]
    title = f"rankautopsy: {len(rest):,} more ranks failed as a consequence"
    return command("warning", "\n".join(lines), title=title)
