"""JUnit XML: one test case per rank; the first death and its casualties fail, clean ranks pass.

Built with `xml.etree`, which escapes markup; every string first loses the code points that
XML 1.0 cannot carry at all (controls, lone surrogates, U+FFFE/U+FFFF).
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from rankautopsy.model import Cause, Diagnosis, Fate, FirstDeath, Outcome, RankReport, Role, Verdict
from rankautopsy.render._labels import (
    CAUSE_LABELS,
    FATE_LABELS,
    clip,
    headline,
    named,
    outcome_lines,
    rank_events,
    rule_text,
    stamp,
    when_text,
    where,
    xml_chars,
)

SUITE = "rankautopsy"
LINE_CHARS = 1000
MAX_EVENT_LINES = 10
_FAILED = (Fate.FIRST_DEATH, Fate.DIED, Fate.COLLATERAL, Fate.TORN_DOWN)


def render_junit(d: Diagnosis) -> str:
    suite = ET.Element("testsuite", _attrs(name=SUITE))
    _properties(suite, d.verdict)
    for case in _cases(d):
        suite.append(case)
    counts = _attrs(
        tests=str(len(suite.findall("testcase"))),
        failures=str(len(suite.findall("testcase/failure"))),
        errors="0",
        skipped="0",
    )
    suite.attrib.update(counts)
    root = ET.Element("testsuites", {"name": SUITE, **counts})
    root.append(suite)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode")


def _attrs(**values: str) -> dict[str, str]:
    return {key: xml_chars(value) for key, value in values.items()}


def _text(parent: ET.Element, tag: str, text: str, **attrs: str) -> ET.Element:
    element = ET.SubElement(parent, tag, _attrs(**attrs))
    element.text = xml_chars(text)
    return element


def _properties(suite: ET.Element, v: Verdict) -> None:
    props = ET.SubElement(suite, "properties")
    fd = v.first_death
    values = {"outcome": v.outcome.value, "confidence": v.confidence.value}
    if fd is not None:
        values |= {
            "first_death.rank": "" if fd.rank is None else str(fd.rank),
            "first_death.cause": fd.cause.value,
            "first_death.rule": rule_text(fd),
            "first_death.time": when_text(fd.time),
        }
    for name, value in values.items():
        ET.SubElement(props, "property", _attrs(name=name, value=value))


def _cases(d: Diagnosis) -> list[ET.Element]:
    fd = named(d.verdict)
    cases = [_rank_case(d, r) for r in sorted(d.ranks, key=lambda r: r.rank)]
    if fd is not None and fd.rank not in {r.rank for r in d.ranks}:
        name = "job" if fd.rank is None else f"rank {fd.rank}"
        case = ET.Element("testcase", _attrs(classname=SUITE, name=name))
        _text(case, "failure", _death_text(fd, d.verdict), type=fd.cause.value, message=_death_message(fd))
        cases.insert(0, case)
    if fd is None and d.verdict.outcome is Outcome.UNDETERMINED:
        case = ET.Element("testcase", _attrs(classname=SUITE, name="job"))
        message = "the job failed, but the first death cannot be named from these logs"
        _text(case, "failure", "\n".join(outcome_lines(d.verdict)), type="undetermined", message=message)
        cases.insert(0, case)
    return cases


def _rank_case(d: Diagnosis, r: RankReport) -> ET.Element:
    case = ET.Element("testcase", _attrs(classname=SUITE, name=f"rank {r.rank}"))
    fd = named(d.verdict)
    if r.fate is Fate.FIRST_DEATH and fd is not None and fd.rank == r.rank:
        _text(case, "failure", _death_text(fd, d.verdict), type=fd.cause.value, message=_death_message(fd))
    elif r.fate in _FAILED:
        _text(case, "failure", _casualty_text(d, r), type=r.fate.value, message=r.summary or r.fate.value)
    _text(case, "system-out", _facts(r))
    return case


def _death_message(fd: FirstDeath) -> str:
    text = headline(fd, fd.host, fd.pid)
    return f"{text} — {fd.detail}" if fd.detail else text


def _death_text(fd: FirstDeath, v: Verdict) -> str:
    lines = [
        _death_message(fd),
        f"when: {when_text(fd.time)}",
        f"confidence: {v.confidence.value}",
        f"rule: {rule_text(fd)}",
    ]
    lines += ["", "Evidence:", *(f"{where(ev)}: {clip(ev.text, LINE_CHARS)}" for ev in fd.evidence)]
    lines += _numbered("Reasoning:", v.reasoning)
    lines += _numbered("What to do:", v.remediation)
    return "\n".join(lines)


def _numbered(title: str, items: Sequence[str]) -> list[str]:
    return ["", title, *(f"{n}. {item}" for n, item in enumerate(items, start=1))] if items else []


def _casualty_text(d: Diagnosis, r: RankReport) -> str:
    fd = named(d.verdict)
    lines = [f"rank {r.rank}: {FATE_LABELS[r.fate][0]}: {r.summary}"]
    if fd is not None and fd.rank is not None and r.fate is not Fate.DIED:
        what = "hang" if fd.cause is Cause.HANG else "death"
        lines.append(f"A consequence of rank {fd.rank}'s {what} ({CAUSE_LABELS[fd.cause][1]}), not a cause.")
    events = [e for e in rank_events(d, r.events) if e.role in (Role.CAUSE, Role.SYMPTOM)]
    if events:
        lines += ["", "Evidence:"]
        lines += [f"{e.where.source}:{e.where.line}: {clip(e.text, LINE_CHARS)}" for e in events[:MAX_EVENT_LINES]]
    return "\n".join(lines)


def _facts(r: RankReport) -> str:
    facts = [f"fate: {FATE_LABELS[r.fate][0]}", f"host: {r.host or '?'}"]
    facts += [] if r.pid is None else [f"pid: {r.pid}"]
    facts += [] if r.exitcode is None else [f"exit code: {r.exitcode}"]
    facts += [] if r.last_seen is None else [f"last seen: {stamp(r.last_seen, 3)} UTC"]
    facts += [] if r.last_step is None else [f"last step: {r.last_step}"]
    facts += [f"what happened: {r.summary}"] if r.summary else []
    return "\n".join(facts)
