"""JUnit XML: one test case per rank. The first death (and any rank that died of its own cause)
fails; collateral and torn-down ranks are skipped with their story; the others pass.

The document is valid against both common JUnit schemas: Jenkins' (`junit-10.xsd` of the xUnit
plugin) and the stricter Apache Ant one (bare `<testsuites>`, a `package` and `id` on the suite,
at most one outcome per test case, no per-case output: what the passing ranks did is in the
suite's `system-out`). Built with `xml.etree`, which escapes markup; every string first has the
code points that XML 1.0 cannot carry replaced by U+FFFD.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from datetime import datetime

from rankautopsy.model import Cause, Diagnosis, Fate, FirstDeath, Outcome, RankReport, Role, Verdict
from rankautopsy.render._labels import (
    FATE_LABELS,
    NOT_XML_CHAR,
    all_times,
    clip,
    clock,
    death_labels,
    death_when,
    group_ranks,
    headline,
    named,
    outcome_lines,
    plain,
    rank_events,
    rank_ranges,
    rule_text,
    spans_days,
    stamp,
    summary_line,
    utc,
    where,
)
from rankautopsy.render.github import counts_text

SUITE = "rankautopsy"
LINE_CHARS = 1000
MAX_EVENT_LINES = 10
RANK_LINES = 32  # beyond this many ranks, the suite's output lists groups of ranks
_FAILED = (Fate.FIRST_DEATH, Fate.DIED)
_SKIPPED = (Fate.COLLATERAL, Fate.TORN_DOWN)


def xml_text(text: str) -> str:
    """`plain` text with every code point XML 1.0 forbids replaced by U+FFFD."""
    return NOT_XML_CHAR.sub("\ufffd", plain(text))


def render_junit(d: Diagnosis) -> str:
    start, end = _job_span(d)
    suite = ET.Element("testsuite", _attrs(name=SUITE, package=SUITE, id="0"))
    _properties(suite, d.verdict)
    cases = _cases(d, start)
    suite.extend(cases)
    _text(suite, "system-out", _story(d))
    _text(suite, "system-err", "")
    suite.attrib.update(
        _attrs(
            tests=str(len(cases)),
            failures=str(sum(c.find("failure") is not None for c in cases)),
            errors="0",
            skipped=str(sum(c.find("skipped") is not None for c in cases)),
            time=_seconds(start, end),
            hostname=_hostname(d),
        )
    )
    if start is not None:
        suite.set("timestamp", _timestamp(start))  # Ant requires it; without any time in the logs there is none
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def _attrs(**values: str) -> dict[str, str]:
    return {key: xml_text(value) for key, value in values.items()}


def _text(parent: ET.Element, tag: str, text: str, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, tag, _attrs(**attrs))
    element.text = xml_text(text)
    return element


# ---- times and the host ------------------------------------------------------------------------


def _job_span(d: Diagnosis) -> tuple[datetime | None, datetime | None]:
    times = [utc(t) for t in all_times(d)]
    return (min(times), max(times)) if times else (None, None)


def _seconds(start: datetime | None, end: datetime | None) -> str:
    """Seconds between two times, 3 decimals (both schemas' number format); 0 when unknown."""
    if start is None or end is None or end < start:
        return "0.000"
    return f"{(end - start).total_seconds():.3f}"


def _timestamp(at: datetime) -> str:
    """ISO 8601 in UTC without a zone or fractions: the only form the Ant schema accepts."""
    return f"{at.year:04d}-{at:%m-%dT%H:%M:%S}"


def _hostname(d: Diagnosis) -> str:
    """The first death's host, else the one host every rank ran on; `?` when the evidence names none."""
    fd = d.verdict.first_death
    hosts = {r.host for r in d.ranks if r.host}
    host = fd.host if fd is not None and fd.host else (hosts.pop() if len(hosts) == 1 else "")
    return " ".join(plain(host).split()) or "?"


# ---- properties and cases ----------------------------------------------------------------------


def _properties(suite: ET.Element, v: Verdict) -> None:
    props = ET.SubElement(suite, "properties")
    fd = v.first_death
    values = {"outcome": v.outcome.value, "confidence": v.confidence.value}
    if fd is not None:
        values |= {
            "first_death.rank": "" if fd.rank is None else str(fd.rank),
            "first_death.host": fd.host or "",
            "first_death.cause": fd.cause.value,
            "first_death.rule": rule_text(fd),
            "first_death.time": death_when(fd),
        }
    for name, value in values.items():
        ET.SubElement(props, "property", _attrs(name=name, value=value))


def _case(name: str, seconds: str = "0.000") -> ET.Element:
    return ET.Element("testcase", _attrs(classname=SUITE, name=name, time=seconds))


def _cases(d: Diagnosis, start: datetime | None) -> list[ET.Element]:
    fd = named(d.verdict)
    cases = [_rank_case(d, r, start) for r in sorted(d.ranks, key=lambda r: r.rank)]
    if fd is not None and fd.rank not in {r.rank for r in d.ranks}:
        case = _case("job" if fd.rank is None else f"rank {fd.rank}")
        _text(case, "failure", _death_text(fd, d.verdict), type=fd.cause.value, message=_death_message(fd))
        cases.insert(0, case)
    if fd is None and d.verdict.outcome in (Outcome.UNDETERMINED, Outcome.HANG):
        case = _case("job")
        kind = d.verdict.outcome.value
        message = (
            "the job failed, but the first death cannot be named from these logs"
            if d.verdict.outcome is Outcome.UNDETERMINED
            else "the job hung, but no culprit can be named from these logs"
        )
        _text(case, "failure", "\n".join(outcome_lines(d.verdict)), type=kind, message=message)
        cases.insert(0, case)
    return cases


def _rank_case(d: Diagnosis, r: RankReport, start: datetime | None) -> ET.Element:
    case = _case(f"rank {r.rank}", _seconds(start, None if r.last_seen is None else utc(r.last_seen)))
    fd = named(d.verdict)
    if r.fate is Fate.FIRST_DEATH and fd is not None and fd.rank == r.rank:
        _text(case, "failure", _death_text(fd, d.verdict), type=fd.cause.value, message=_death_message(fd))
    elif r.fate in _FAILED:
        _text(case, "failure", _casualty_text(d, r), type=r.fate.value, message=r.summary or r.fate.value)
    elif r.fate in _SKIPPED:
        _text(case, "skipped", _casualty_text(d, r), message=_skip_message(d, r))
    return case


def _death_message(fd: FirstDeath) -> str:
    text = headline(fd, fd.host, fd.pid)
    return f"{text} — {fd.detail}" if fd.detail else text


def _death_text(fd: FirstDeath, v: Verdict) -> str:
    lines = [
        _death_message(fd),
        f"when: {death_when(fd)}",
        f"confidence: {v.confidence.value}",
        f"rule: {rule_text(fd)}",
    ]
    lines += ["", "Evidence:", *(f"{where(ev)}: {clip(ev.text, LINE_CHARS)}" for ev in fd.evidence)]
    lines += _numbered("Reasoning:", v.reasoning)
    lines += _numbered("What to do:", v.remediation)
    return "\n".join(lines)


def _numbered(title: str, items: Sequence[str]) -> list[str]:
    return ["", title, *(f"{n}. {item}" for n, item in enumerate(items, start=1))] if items else []


def _consequence(d: Diagnosis) -> str:
    fd = named(d.verdict)
    if fd is None or fd.rank is None:
        return "a consequence of the failure, not a cause"
    what = "hang" if fd.cause is Cause.HANG else "death"
    return f"a consequence of rank {fd.rank}'s {what} ({death_labels(fd)[1]}), not a cause"


def _skip_message(d: Diagnosis, r: RankReport) -> str:
    story = f"{FATE_LABELS[r.fate][0]}: {r.summary}" if r.summary else FATE_LABELS[r.fate][0]
    return f"{story} — {_consequence(d)}"


def _casualty_text(d: Diagnosis, r: RankReport) -> str:
    lines = [f"rank {r.rank}: {FATE_LABELS[r.fate][0]}: {r.summary}"]
    if r.fate is not Fate.DIED:
        lines.append(_consequence(d)[0].upper() + _consequence(d)[1:] + ".")
    lines += ["", *_facts(r)]
    events = [e for e in rank_events(d, r.events) if e.role in (Role.CAUSE, Role.SYMPTOM)]
    if events:
        lines += ["", "Evidence:"]
        lines += [f"{e.where.source}:{e.where.line}: {clip(e.text, LINE_CHARS)}" for e in events[:MAX_EVENT_LINES]]
    return "\n".join(lines)


def _facts(r: RankReport) -> list[str]:
    facts = [f"host: {r.host or '?'}"]
    facts += [] if r.pid is None else [f"pid: {r.pid}"]
    facts += [] if r.exitcode is None else [f"exit code: {r.exitcode}"]
    facts += [] if r.last_seen is None else [f"last seen: {stamp(r.last_seen, 3)} UTC"]
    facts += [] if r.last_step is None else [f"last step: {r.last_step}"]
    return facts


# ---- the suite's output: the verdict and what every rank did -------------------------------------


def _story(d: Diagnosis) -> str:
    counts = counts_text(d.ranks)
    lines = [summary_line(d.verdict) + (f" — {counts}" if counts else ""), ""]
    with_date = spans_days(d)
    if len(d.ranks) <= RANK_LINES:
        for r in sorted(d.ranks, key=lambda r: r.rank):
            step = "?" if r.last_step is None else r.last_step
            seen = clock(r.last_seen, with_date)
            lines.append(f"rank {r.rank} ({r.host or '?'}): {FATE_LABELS[r.fate][0]}, last seen {seen}, step {step}")
            lines += [f"  {r.summary}"] if r.summary else []
    else:
        for g in group_ranks(d.ranks):
            head = f"ranks {rank_ranges(g.ranks)} ({len(g.ranks):,} on {g.hosts_text()}): {FATE_LABELS[g.fate][0]}"
            lines.append(f"{head}, last seen {g.seen_text(with_date)}, step {g.steps_text()}")
            lines += [f"  {g.summary}"] if g.summary else []
    return "\n".join(lines)
