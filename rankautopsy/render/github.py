"""GitHub Actions workflow commands: one short annotation, on the line the verdict rests on.

A named first death is one `::error` at its decisive line (a traceback's `Type: message` line,
not its `Traceback` header): the verdict, the cause, one remediation step. Everything else (the
evidence, the other ranks, the whole checklist) is in the Markdown step summary that
`--format github` appends to `$GITHUB_STEP_SUMMARY`. `file=` is relative to `$GITHUB_WORKSPACE`
when the file lies under it, which is what makes GitHub link the annotation to the file.

Escaping follows actions/toolkit `packages/core/src/command.ts`: data escapes `%`, CR and LF;
properties escape `:` and `,` as well.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from rankautopsy.model import Cause, Diagnosis, Evidence, Fate, FirstDeath, Location, RankReport, Verdict
from rankautopsy.render._labels import (
    FATE_LABELS,
    clip,
    death_labels,
    death_when,
    decisive_evidence,
    headline,
    is_clean,
    named,
    outcome_label,
    outcome_lines,
    plain,
)

LINE_CHARS = 240
HINT_CHARS = 300
MAX_OUTCOME_LINES = 3
SUMMARY_HINT = "The job summary has the evidence, what every rank did and the full checklist."
_TRACEBACK = "Traceback (most recent call last)"


def render_github(d: Diagnosis, workspace: str | None = None) -> str:
    """`workspace` defaults to `$GITHUB_WORKSPACE`; pass "" for paths exactly as the report shows them."""
    root = os.environ.get("GITHUB_WORKSPACE", "") if workspace is None else workspace
    v = d.verdict
    fd = named(v)
    title, words = outcome_label(v)
    if fd is not None:
        return _first_death(d, fd, root)
    if not is_clean(v):
        body = "\n".join((words, *outcome_lines(v)[:MAX_OUTCOME_LINES], SUMMARY_HINT))
        return command("error", body, title=f"rankautopsy: {title} ({v.confidence.value})")
    return command("notice", "\n".join((words, *v.reasoning[:MAX_OUTCOME_LINES])), title=f"rankautopsy: {title}")


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, *, title: str, at: Location | None = None, root: str = "") -> str:
    """`::name file=...,line=...,title=...::message` with every value cleaned and escaped."""
    props = [] if at is None or not _is_path(at.source) else [("file", workspace_path(at.source, root))]
    props += [("line", str(at.line))] if props and at is not None else []
    props.append(("title", title))
    rendered = ",".join(f"{key}={escape_property(plain(value))}" for key, value in props)
    return f"::{name} {rendered}::{escape_data(plain(message))}"


def _is_path(source: str) -> bool:
    return bool(source) and source != "<stdin>"


def workspace_path(source: str, root: str) -> str:
    """`source` relative to `root` (POSIX separators) when it lies under it, else as it was given."""
    if not root:
        return source
    for resolve in (os.path.abspath, os.path.realpath):
        try:
            return Path(resolve(source)).relative_to(resolve(root)).as_posix()
        except ValueError:
            continue
    return source


def decisive_line(d: Diagnosis) -> Evidence | None:
    """The one line to point at: the line that states the cause, not the header of its block."""
    fd = d.verdict.first_death
    if fd is None or not fd.evidence:
        return None
    if fd.detail:
        stated = [ev for ev in fd.evidence if fd.detail.strip() and fd.detail.strip() in ev.text]
        if stated:
            return stated[0]
    chosen = decisive_evidence(d) or fd.evidence[0]
    if not chosen.text.lstrip().startswith(_TRACEBACK):
        return chosen
    after = [
        ev
        for ev in fd.evidence
        if ev.where.source == chosen.where.source and ev.where.line > chosen.where.line and ev.text[:1].strip()
    ]
    return max(after, key=lambda ev: ev.where.line, default=chosen)


def _first_death(d: Diagnosis, fd: FirstDeath, root: str) -> str:
    v = d.verdict
    lead = headline(fd, plain(fd.host) if fd.host else None, fd.pid)
    lines = [clip(f"{lead} — {fd.detail}" if fd.detail else lead, LINE_CHARS)]
    facts = [death_when(fd), f"{v.confidence.value} confidence"]
    counts = counts_text(d.ranks)
    lines.append(" · ".join([*facts, counts] if counts else facts))
    hint = _hint(v)
    lines += [clip(hint, HINT_CHARS)] if hint else []
    lines.append(SUMMARY_HINT)
    title = f"rankautopsy: {_who(fd)}" + ("" if fd.cause is Cause.HANG else f" — {death_labels(fd)[1]}")
    decisive = decisive_line(d)
    return command("error", "\n".join(lines), title=title, at=None if decisive is None else decisive.where, root=root)


def _hint(v: Verdict) -> str:
    """The first cause-specific remediation step (rule packs start those with `Fix the cause`)."""
    specific = [step for step in v.remediation if step.lower().startswith("fix the cause")]
    return (specific or list(v.remediation) or [""])[0]


def counts_text(ranks: Sequence[RankReport]) -> str:
    """`2 collateral, 1 torn down`: the ranks that did not die first of their own cause."""
    parts = []
    for fate in (Fate.DIED, Fate.COLLATERAL, Fate.TORN_DOWN):
        n = sum(r.fate is fate for r in ranks)
        parts += [f"{n:,} {FATE_LABELS[fate][0]}"] if n else []
    return ", ".join(parts)


def _who(fd: FirstDeath) -> str:
    if fd.rank is None:
        return "the job ended first" if fd.cause is Cause.TIME_LIMIT else "a process of unknown rank died first"
    return f"rank {fd.rank} {'is the hang culprit' if fd.cause is Cause.HANG else 'died first'}"
