"""The terminal report: the verdict first, then the other ranks, the timeline and what to do.

All text that comes from the model (log lines, hosts, summaries, rule-pack remediation) reaches
rich only as `Text` built from `sanitize.clean(...)`, so it is never parsed as markup and never
carries an escape sequence, whatever the console's settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, TypeVar

from rich import box
from rich.console import Console, Group, NewLine, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.rule import Rule
from rich.table import Table
from rich.text import Text

from rankautopsy.model import (
    Cause,
    Confidence,
    Diagnosis,
    Event,
    Evidence,
    Fate,
    FirstDeath,
    RankReport,
    Role,
    TimeSpan,
    Verdict,
)
from rankautopsy.render._labels import (
    CAUSE_LABELS,
    FATE_LABELS,
    OUTCOME_LABELS,
    PHASE_LABELS,
    RankGroup,
    all_times,
    clip,
    clock,
    evidence_blocks,
    group_ranks,
    headline,
    is_clean,
    named,
    outcome_lines,
    plain,
    rank_ranges,
    rule_text,
    ruled_out_line,
    summary_line,
    utc,
    when_text,
)

EVIDENCE_CHARS = 240
TIMELINE_CHARS = 100
TIMELINE_ROWS = 20
GROUP_ABOVE_RANKS = 64
MAX_RANK_GROUPS = 32
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Elided:
    count: int  # items left out at this point


_CONFIDENCE_STYLES = {
    Confidence.HIGH: "bold",
    Confidence.MEDIUM: "yellow",
    Confidence.LOW: "bold yellow",
}


def make_console(file: IO[str] | None = None, width: int | None = None, color: bool = False) -> Console:
    """A console that never interprets text (no markup, emoji, highlighting); colour if asked."""
    return Console(
        file=file,
        width=width,
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=False,
        color_system="auto" if color else None,
        force_terminal=True if color else None,
    )


def render_terminal(d: Diagnosis, console: Console, *, checklist: bool = False, verbose: bool = False) -> None:
    for part in build_report(d):
        console.print(part)


def build_report(d: Diagnosis) -> list[RenderableType]:
    """The report as rich renderables, in reading order."""
    v = d.verdict
    clean_run = is_clean(v)
    days = sorted({utc(t).date() for t in all_times(d)})
    with_date = len(days) > 1
    timeline = f"Timeline (UTC, {days[0].isoformat()})" if len(days) == 1 else "Timeline (UTC)"
    parts: list[RenderableType] = [_verdict_panel(d, clean_run)]
    ranks_title = "What the ranks did" if named(v) is None else "What the other ranks did"
    parts += _section(ranks_title, _ranks_table(d.ranks, with_date) if d.ranks else None)
    parts += _section(timeline, _timeline(d, with_date))
    parts += _section("Ruled out", _bullets("-", [ruled_out_line(r.rank, r.why) for r in v.ruled_out]))
    if not clean_run:
        parts += _section("Reasoning", _bullets("#", v.reasoning))
    parts += _section("What to do", _bullets("[ ]", v.remediation))
    if named(v) is not None or clean_run:
        parts += _section("Notes", _bullets("-", v.notes))
    skipped = [f"{s.path}: {s.reason}" for s in d.skipped]
    parts += _section("Skipped inputs", _bullets("-", skipped))
    parts += [NewLine(), Text(summary_line(v), style="bold")]
    return parts


def _t(text: str, style: str = "") -> Text:
    return Text(plain(text), style=style)


def _section(title: str, body: RenderableType | None) -> list[RenderableType]:
    if body is None:
        return []
    return [NewLine(), Rule(Text(title, style="bold"), align="left", style="dim"), body]


def _bullets(marker: str, lines: Sequence[str]) -> Table | None:
    if not lines:
        return None
    grid = Table.grid(padding=(0, 1))
    grid.add_column(no_wrap=True, style="dim")
    grid.add_column(overflow="fold")
    for n, line in enumerate(lines, start=1):
        grid.add_row(Text(f"{n}." if marker == "#" else marker), _t(line))
    return grid


# ---- verdict panel ---------------------------------------------------------------------------


def _verdict_panel(d: Diagnosis, clean_run: bool) -> Panel:
    v = d.verdict
    fd = named(v)
    if fd is not None:
        return _death_panel(fd, v)
    title, words = OUTCOME_LABELS[v.outcome]
    if clean_run:
        return _empty_panel(title, words, v.reasoning, "green")
    return _empty_panel(f"{title} ({v.confidence.value})", words, outcome_lines(v), "yellow")


def _empty_panel(title: str, headline: str, lines: Sequence[str], colour: str) -> Panel:
    parts: list[RenderableType] = [Text(headline, style=f"bold {colour}")]
    if lines:
        parts += [Text(), _bullets("-", lines) or Text()]
    return _panel(title, Group(*parts), colour)


def _panel(title: str, body: RenderableType, colour: str) -> Panel:
    heading = Text(f"rankautopsy — {title}", style=f"bold {colour}")
    return Panel(body, title=heading, title_align="left", border_style=colour, padding=(1, 2))


def _death_panel(fd: FirstDeath, v: Verdict) -> Panel:
    hang = fd.cause is Cause.HANG
    grid = Table.grid(padding=(0, 2))
    grid.add_column(style="dim", no_wrap=True)
    grid.add_column(overflow="fold")
    grid.add_row("when", _when(fd.time))
    grid.add_row("phase", Text(PHASE_LABELS[fd.phase]))
    if fd.detail:
        grid.add_row("detail", _t(fd.detail, "bold"))
    grid.add_row("confidence", Text(v.confidence.value, style=_CONFIDENCE_STYLES[v.confidence]))
    if v.caps:
        grid.add_row("not higher", _t("; ".join(v.caps), "dim"))
    grid.add_row("rule", _t(rule_text(fd), "dim"))
    grid.add_row("evidence", _evidence(fd.evidence))
    body = Group(_headline(fd), Text(), grid)
    return _panel("hang culprit" if hang else "first death", body, "red")


def _headline(fd: FirstDeath) -> Text:
    return Text(headline(fd, plain(fd.host) if fd.host else None, fd.pid), style="bold red")


def _evidence(evidence: Sequence[Evidence]) -> RenderableType:
    if not evidence:
        return Text("none kept", style="dim")
    # the path on its own line, each evidence line's number and text under it: a long path never squeezes
    # the text into a column one word wide (a CI log is 80 columns)
    lines: list[RenderableType] = []
    for block in evidence_blocks(evidence):
        lines.append(_t(block[0].where.source, "dim"))
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="dim", no_wrap=True, justify="right")
        grid.add_column(overflow="fold")
        for ev in block:
            grid.add_row(Text(str(ev.where.line)), _t(clip(ev.text, EVIDENCE_CHARS)))
        lines.append(Padding(grid, (0, 0, 0, 2)))
    return Group(*lines)


# ---- times -----------------------------------------------------------------------------------


def _when(span: TimeSpan | None) -> Text:
    return Text(when_text(span), style="dim" if span is None else "")


# ---- ranks -----------------------------------------------------------------------------------


def _ranks_table(ranks: Sequence[RankReport], with_date: bool) -> Table:
    ordered = sorted(ranks, key=lambda r: r.rank)
    if len(ordered) > GROUP_ABOVE_RANKS:
        return _rank_groups(ordered, with_date)
    table = _table()
    table.add_column("rank", justify="right", no_wrap=True)
    table.add_column("host", overflow="fold", max_width=16)
    table.add_column("fate", no_wrap=True)
    table.add_column("last seen", no_wrap=True)
    table.add_column("step", justify="right", no_wrap=True)
    table.add_column("what happened", overflow="fold")
    for r in ordered:
        table.add_row(*_rank_row(r, with_date))
    return table


def _table() -> Table:
    return Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, collapse_padding=True)


def _fate_text(fate: Fate) -> Text:
    label, style = FATE_LABELS[fate]
    return Text(label, style=style)


def _rank_row(r: RankReport, with_date: bool) -> list[Text]:
    style = "bold red" if r.fate is Fate.FIRST_DEATH else ""
    return [
        Text(str(r.rank), style=style),
        _t(r.host or "?"),
        _fate_text(r.fate),
        Text(clock(r.last_seen, with_date)),
        Text("?" if r.last_step is None else str(r.last_step)),
        _t(r.summary, style),
    ]


def _rank_groups(ordered: Sequence[RankReport], with_date: bool) -> Table:
    """Many ranks: one entry per (fate, summary), its ranks as ranges."""
    groups = group_ranks(ordered)
    shown = groups[:MAX_RANK_GROUPS]
    grid = Table.grid(padding=(0, 2))
    grid.add_column(overflow="fold", max_width=28)
    grid.add_column(overflow="fold")
    for g in shown:
        style = "bold red" if g.fate is Fate.FIRST_DEATH else ""
        label = f"rank{'s' if len(g.ranks) > 1 else ''} {rank_ranges(g.ranks)}"
        grid.add_row(Text(label, style=style), _group_text(g, with_date))
    if len(groups) > len(shown):
        grid.add_row(Text(), Text(f"… {len(groups) - len(shown)} more groups", style="dim"))
    return grid


def _group_text(g: RankGroup, with_date: bool) -> Text:
    style = "bold red" if g.fate is Fate.FIRST_DEATH else ""
    text = _fate_text(g.fate).append(": ").append(_t(g.summary, style))
    facts = [f"{len(g.ranks):,} rank{'s' if len(g.ranks) > 1 else ''} on {g.hosts_text()}"]
    if g.seen:
        facts.append(f"last seen {g.seen_text(with_date)}")
    if g.steps:
        facts.append(f"step {g.steps_text()}")
    return text.append("\n" + ", ".join(facts), style="dim")


# ---- timeline --------------------------------------------------------------------------------


def _significant(e: Event) -> bool:
    """Causes and symptoms, and context that is about a rank (launcher context alone is noise)."""
    if e.role is Role.PROGRESS:
        return False
    if e.role is Role.CONTEXT:
        return e.rank is not None
    return e.rank is not None or e.time is not None


def _order_key(e: Event) -> tuple[bool, datetime, int, str, int]:
    at = utc(e.time.earliest) if e.time is not None else datetime.max.replace(tzinfo=UTC)
    return (e.time is None, at, -1 if e.rank is None else e.rank, e.where.source, e.where.line)


def _is_first_death_event(e: Event, fd: FirstDeath | None) -> bool:
    if fd is None:
        return False
    if e.where in {ev.where for ev in fd.evidence}:
        return True
    return e.role is Role.CAUSE and e.rank is not None and e.rank == fd.rank and e.cause is fd.cause


def _runs(events: Sequence[Event], fd: FirstDeath | None) -> list[list[Event]]:
    """Consecutive events of one rule from ranks fold into one run (1,000 timeouts: one row)."""
    runs: list[list[Event]] = []
    for e in events:
        last = runs[-1] if runs else None
        if last and _same_run(last[0], e, fd):
            last.append(e)
        else:
            runs.append([e])
    return runs


def _same_run(a: Event, b: Event, fd: FirstDeath | None) -> bool:
    if a.rule != b.rule or a.rank is None or b.rank is None:
        return False
    return not (_is_first_death_event(a, fd) or _is_first_death_event(b, fd))


def elide(items: Sequence[T], keep: Sequence[bool], budget: int) -> list[T | Elided]:
    """At most `budget` items: the `keep` ones always, then the first and the last ones."""
    if len(items) <= budget:
        return list(items)
    kept = set(sorted(i for i, k in enumerate(keep) if k)[: budget // 2])
    rest = [i for i in range(len(items)) if i not in kept]
    room = budget - len(kept)
    shown = sorted(kept | set(rest[: (room + 1) // 2]) | set(rest[len(rest) - room // 2 :]))
    out: list[T | Elided] = []
    previous = -1
    for i in shown:
        if i > previous + 1:
            out.append(Elided(i - previous - 1))
        out.append(items[i])
        previous = i
    if previous < len(items) - 1:
        out.append(Elided(len(items) - 1 - previous))
    return out


def _timeline(d: Diagnosis, with_date: bool) -> Table | None:
    fd = d.verdict.first_death
    runs = _runs(sorted((e for e in d.events if _significant(e)), key=_order_key), fd)
    if not runs:
        return None
    table = _table()
    table.add_column("time", no_wrap=True)
    table.add_column("rank", justify="right", overflow="fold", max_width=16)
    table.add_column("what", no_wrap=True)
    table.add_column("line", overflow="fold")
    keep = [_is_first_death_event(run[0], fd) for run in runs]
    for item in elide(runs, keep, TIMELINE_ROWS):
        if isinstance(item, Elided):
            gap = Text(f"… {item.count} more", style="dim")
            table.add_row(Text("…", style="dim"), Text(), Text(), gap)
        else:
            table.add_row(*_timeline_row(item, _is_first_death_event(item[0], fd), with_date))
    return table


def _timeline_row(run: Sequence[Event], culprit: bool, with_date: bool) -> list[Text]:
    e = run[0]
    style = "bold red" if culprit else ""
    ranks = [x.rank for x in run if x.rank is not None]
    text = _t(clip(e.text, TIMELINE_CHARS), style)
    if len(run) > 1:
        text.append(f" (and {len(run) - 1:,} more like it)", style="dim")
    return [
        Text(clock(None if e.time is None else e.time.earliest, with_date), style="dim"),
        Text(rank_ranges(ranks) if ranks else "-", style=style),
        Text(e.rule if e.cause is Cause.CONTEXT else CAUSE_LABELS[e.cause][1], style=style or _role_style(e.role)),
        text,
    ]


def _role_style(role: Role) -> str:
    return {Role.CAUSE: "red", Role.SYMPTOM: "yellow"}.get(role, "dim")
