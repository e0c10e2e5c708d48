"""The terminal report, shaped like ruff's, mypy's and rustc's: the verdict and its decisive line first,
one line per group of ranks, a short timeline, the cause's own remediation, and a last line that repeats
the verdict, so the end of a CI log says what happened.

Every line is laid out here, at the console's width: prose wraps at word boundaries (never one word per
line), rows are cut with an ellipsis. All text that comes from the model (log lines, hosts, file names,
rule-pack remediation) reaches rich only as `Text` built from `plain(...)`, so it is never parsed as
markup and never carries an escape sequence, whatever the console's settings.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import IO, TypeVar

from rich.cells import cell_len, chop_cells
from rich.console import Console
from rich.text import Text

from rankautopsy import recache
from rankautopsy.model import (
    Confidence,
    Diagnosis,
    Effect,
    Event,
    Evidence,
    FirstDeath,
    Outcome,
    Role,
    Verdict,
)
from rankautopsy.numbers import read_int
from rankautopsy.records import record
from rankautopsy.render._labels import (
    CAUSE_LABELS,
    FATE_LABELS,
    PHASE_LABELS,
    all_times,
    clip,
    clock,
    common_dir,
    death_when,
    decisive_line,
    exception_line,
    fate_counts,
    fate_groups,
    headline,
    is_clean,
    named,
    outcome_label,
    outcome_lines,
    plain,
    rank_ranges,
    relative,
    remediation_layers,
    rule_text,
    rule_title,
    ruled_out_line,
    summary_line,
    utc,
)

EVIDENCE_CHARS = 240
MIN_WIDTH = 40
KEY_WIDTH = 12  # "confidence" and two spaces
TIMELINE_ROWS = (8, 40)  # (default, --verbose)
RANK_GROUPS = (8, 32)
LIST_ITEMS = (3, 20)  # notes, skipped inputs, unattributed causes
RANK_SHARE = 3  # a rank column takes at most a third of the width
T = TypeVar("T")


@record
class Elided:
    count: int  # items left out at this point


_CONFIDENCE_STYLES = {
    Confidence.HIGH: "bold",
    Confidence.MEDIUM: "yellow",
    Confidence.LOW: "bold yellow",
}
_OUTCOME_STYLES = {
    Outcome.CLEAN: "bold green",
    Outcome.NO_FAILURE: "bold green",
    Outcome.UNDETERMINED: "bold yellow",
    Outcome.FIRST_DEATH: "bold red",
    Outcome.HANG: "bold red",
}


def make_console(file: IO[str] | None = None, width: int | None = None, color: bool = False) -> Console:
    """A console that never interprets text (no markup, emoji, highlighting); colour if asked."""
    return Console(
        file=file,
        width=width,
        height=25 if width is not None else None,  # both known: rich stops asking the terminal each line
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=False,
        color_system="auto" if color else None,
        force_terminal=True if color else None,
    )


def render_terminal(d: Diagnosis, console: Console, *, checklist: bool = False, verbose: bool = False) -> None:
    lines = report_lines(d, console.width, checklist=checklist, verbose=verbose)
    console.print(Text("\n").join(lines), no_wrap=True, overflow="ellipsis", crop=True)


def report_lines(d: Diagnosis, width: int, *, checklist: bool = False, verbose: bool = False) -> list[Text]:
    """The report, one `Text` per screen line, none wider than `width`."""
    report = _Report(d, max(width, MIN_WIDTH), verbose)
    report.verdict()
    report.ranks()
    report.timeline()
    if verbose:
        report.reasoning()
    report.remediation(checklist)
    report.notes()
    summary = Text(plain(_summary(d)), style=_OUTCOME_STYLES[d.verdict.outcome])
    report.lines += [Text(), _cut(summary, report.width)]
    return report.lines


def _summary(d: Diagnosis) -> str:
    """`rank 2 died first: exception (high) — 2 collateral, 1 torn down`."""
    counts = fate_counts(d.ranks)
    return summary_line(d.verdict) + (f" — {counts}" if counts else "")


# ---- text layout -------------------------------------------------------------------------------


def wrap(text: str, width: int) -> list[str]:
    """Greedy word wrap by terminal cells. A word wider than the line is cut; a last line of one word
    takes the word before it, so wrapping never leaves a word alone on a line."""
    lines: list[list[str]] = []
    current: list[str] = []
    used = 0
    for word in text.split():
        if cell_len(word) > width:
            *whole, word = chop_cells(word, width)
            if current:
                lines.append(current)
            lines += [[piece] for piece in whole]
            current, used = [], 0
        extra = cell_len(word) + (1 if current else 0)
        if current and used + extra > width:
            lines.append(current)
            current, used, extra = [], 0, cell_len(word)
        current.append(word)
        used += extra
    if current:
        lines.append(current)
    if len(lines) > 1 and len(lines[-1]) == 1 and len(lines[-2]) > 1:
        moved = [lines[-2][-1], *lines[-1]]
        if cell_len(" ".join(moved)) <= width:
            lines[-2].pop()
            lines[-1] = moved
    return [" ".join(line) for line in lines] or [""]


def _cut(text: Text, width: int) -> Text:
    if cell_len(text.plain) > width:
        text.truncate(width, overflow="ellipsis")
    return text


def _pad(text: str, width: int) -> str:
    return text + " " * max(width - cell_len(text), 0)


class _Report:
    def __init__(self, d: Diagnosis, width: int, verbose: bool) -> None:
        self.d = d
        self.v: Verdict = d.verdict
        self.width = width
        self.verbose = verbose
        self.with_date = len({utc(t).date() for t in all_times(d)}) > 1
        self.base = common_dir(d)
        self.lines: list[Text] = []

    def budget(self, sizes: tuple[int, int]) -> int:
        return sizes[1] if self.verbose else sizes[0]

    def path(self, source: str) -> str:
        return plain(relative(source, self.base))

    def heading(self, title: str) -> None:
        self.lines += [Text(), Text(title, style="bold")]

    def prose(self, text: str, indent: int, marker: str = "", style: str = "") -> None:
        """`text` wrapped under `indent` spaces; `marker` (a bullet, a number) hangs before its first line."""
        lead = " " * indent
        hang = " " * (indent + cell_len(marker))
        for n, line in enumerate(wrap(plain(text), self.width - cell_len(hang))):
            first = n == 0
            self.lines.append(Text(lead + marker if first else hang, style="dim") + Text(line, style=style))

    def row(self, *cells: tuple[str, str]) -> None:
        """One line of (text, style) cells, cut with an ellipsis at the width."""
        text = Text()
        for words, style in cells:
            text.append(plain(words), style=style)
        self.lines.append(_cut(text, self.width))

    def key(self, name: str, value: str, style: str = "") -> None:
        """`  name        value`, the value wrapped under itself."""
        indent = 2 + KEY_WIDTH
        for n, line in enumerate(wrap(plain(value), self.width - indent)):
            lead = Text(_pad(f"  {name}" if n == 0 else "", indent), style="dim")
            self.lines.append(lead + Text(line, style=style))

    # ---- the verdict --------------------------------------------------------------------------

    def verdict(self) -> None:
        fd = named(self.v)
        if fd is not None:
            self.death(fd)
            return
        words = outcome_label(self.v)[1]
        self.prose(words, 0, style=_OUTCOME_STYLES[self.v.outcome])
        self.lines.append(Text())
        self.confidence()
        self.inputs()
        lines = self.v.reasoning if is_clean(self.v) else outcome_lines(self.v)
        if lines:
            self.lines.append(Text())
        for line in lines:
            self.prose(line, 2, "- ")
        self.unattributed()
        if self.v.outcome is Outcome.HANG and self.v.first_death is not None:  # no culprit: the stalls seen
            self.lines.append(Text())
            for ev in self.v.first_death.evidence:
                self.evidence(ev, bold=False)

    def death(self, fd: FirstDeath) -> None:
        self.prose(headline(fd, plain(fd.host) if fd.host else None, fd.pid), 0, style="bold red")
        decisive = decisive_line(self.d)
        if decisive is not None:
            self.lines.append(Text())
            self.evidence(decisive, bold=True)
        self.lines.append(Text())
        self.key("when", f"{death_when(fd)}, during {PHASE_LABELS[fd.phase]}")
        if fd.detail and (decisive is None or fd.detail.strip() not in decisive.text):
            self.key("detail", clip(fd.detail, EVIDENCE_CHARS), "bold")
        self.confidence()
        title = self.d.rule_titles.get(fd.rule, "") if fd.rule is not None else ""
        self.key("rule", f"{rule_text(fd)}: {title}" if title else rule_text(fd))
        others = [ev for ev in fd.evidence if ev is not decisive]
        if others and not self.verbose:
            also = ", ".join(f"{self.path(ev.where.source)}:{ev.where.line}" for ev in others)
            self.row((_pad("  see also", 2 + KEY_WIDTH), "dim"), (also, "dim"))
        self.inputs()
        if others and self.verbose:
            self.lines.append(Text())
            for ev in others:
                self.evidence(ev, bold=False)

    def evidence(self, ev: Evidence, bold: bool) -> None:
        """`path:line` on its own line, the line's text under it (rustc's `-->`, without the art)."""
        self.row(("  ", ""), (f"{self.path(ev.where.source)}:{ev.where.line}", "bold cyan" if bold else "cyan"))
        self.prose(clip(ev.text.strip(), EVIDENCE_CHARS), 4, style="bold" if bold else "")

    def confidence(self) -> None:
        v = self.v
        self.key("confidence", v.confidence.value, _CONFIDENCE_STYLES[v.confidence])
        if v.caps:
            self.key("not higher", "; ".join(v.caps), "dim")

    def inputs(self) -> None:
        n = len(self.d.inputs)
        if not n:
            return
        lines = sum(i.lines for i in self.d.inputs)
        read = f"{n:,} file{'' if n == 1 else 's'}, {lines:,} line{'' if lines == 1 else 's'}"
        where = f"{plain(self.base)}/ — {read}" if self.base else read
        self.key("read", where, "dim")

    def unattributed(self) -> None:
        causes = self.v.unattributed
        shown = causes[: self.budget(LIST_ITEMS)]
        if shown:
            self.lines.append(Text())
        for u in shown:
            self.evidence(u.told or Evidence(u.where, u.text), bold=False)
        if len(causes) > len(shown):
            self.row(("  ", ""), (f"… {len(causes) - len(shown)} more (-v to show)", "dim"))

    # ---- the other ranks ----------------------------------------------------------------------

    def ranks(self) -> None:
        groups = [g for g in fate_groups(self.d) if not (named(self.v) and g.ranks == [self._culprit()])]
        if not groups:
            return
        self.heading("What the ranks did" if named(self.v) is None else "What the other ranks did")
        shown = groups[: self.budget(RANK_GROUPS)]
        many_hosts = len({r.host for r in self.d.ranks}) > 1
        labels = [_ranks_label(g.ranks, self.width // RANK_SHARE) for g in shown]
        column = max(cell_len(label) for label in labels)
        for g, label in zip(shown, labels, strict=True):
            style = FATE_LABELS[g.fate][1]
            self.row(("  ", ""), (_pad(label, column), "bold"), ("  ", ""), (g.text(self.with_date, many_hosts), style))
        if len(groups) > len(shown):
            self.row(("  ", ""), (f"… {len(groups) - len(shown)} more groups (-v to show more)", "dim"))

    def _culprit(self) -> int | None:
        fd = named(self.v)
        return None if fd is None else fd.rank

    # ---- the timeline -------------------------------------------------------------------------

    def timeline(self) -> None:
        fd = self.v.first_death
        runs = _runs(sorted((e for e in self.d.events if _significant(e)), key=_order_key), fd)
        if not runs:
            return
        days = sorted({utc(t).date() for t in all_times(self.d)})
        self.heading(f"Timeline (UTC, {days[0].isoformat()})" if len(days) == 1 else "Timeline (UTC)")
        keep = [_is_first_death_event(run[0], fd) for run in runs]
        items = elide(runs, keep, self.budget(TIMELINE_ROWS))
        shown = [item for item in items if not isinstance(item, Elided)]
        column = max(cell_len(_ranks_text(run, self.width // RANK_SHARE)) for run in shown)
        marked = {_time_mark(run[0]) for run in shown} - {""}
        stamp = self._stamp_width(bool(marked))
        for item in items:
            if isinstance(item, Elided):
                self.row(("  ", ""), (_pad("…", stamp + 2 + column + 2), "dim"), (f"{item.count:,} more", "dim"))
            else:
                self.timeline_row(item, _is_first_death_event(item[0], fd), column, bool(marked))
        if marked:
            legend = [text for mark, text in _TIME_MARKS.items() if mark in marked]
            self.row(("  ", ""), ("; ".join(legend), "dim"))

    def _stamp_width(self, marks: bool) -> int:
        """The timeline's time column: a stamp, and its mark where any row has one."""
        return len(clock(datetime(2000, 1, 1, tzinfo=UTC), self.with_date)) + marks

    def timeline_row(self, run: Sequence[Event], culprit: bool, column: int, marks: bool = False) -> None:
        e = run[0]
        at = clock(None if e.time is None else e.time.earliest, self.with_date)
        at = f"{_time_mark(e) or ' '}{at}" if marks else at
        at = _pad(at, self._stamp_width(marks))  # `?`: no time
        label = CAUSE_LABELS[e.cause][1] if e.role in (Role.CAUSE, Role.SYMPTOM) else rule_title(self.d, e)
        style = "bold red" if culprit else ""
        message = _message(self.d, e)
        alike = _alike(run)
        more = f"{' ' if message else ''}(and {alike - 1:,} more like it)" if alike > 1 else ""
        if len(run) > 1 and (exits := _exits(run)):  # what each rank's exit was, not the first one's words
            message, more = exits, ""
        room = self.width - (2 + cell_len(at) + 2 + column + 2)
        if message and cell_len(f"{label}: {message}") > room:  # a long title leaves the message half the room
            label = clip(label, max(room // 2, 12))
        if alike > len(run) and cell_len(f"{label}: {message}{more}") > room:  # repeats the row alone shows
            more = f" (×{alike:,})"  # (a run over ranks is counted by its rank column)
            left = room - cell_len(f"{label}: {more}")
            message = clip(message, left) if left >= 6 else "…"
        self.row(
            ("  ", ""),
            (at, "dim"),
            ("  ", ""),
            (_pad(_ranks_text(run, column), column), style),
            ("  ", ""),
            (f"{label}: " if message or more else label, style or _role_style(e.role)),
            (message + more, style),
        )

    # ---- reasoning, remediation, notes ---------------------------------------------------------

    def reasoning(self) -> None:
        if self.v.reasoning and not is_clean(self.v) and named(self.v) is not None:
            self.heading("Reasoning")
            for n, line in enumerate(self.v.reasoning, start=1):
                self.prose(self._relative_text(line), 2, f"{n}. ")
        if self.v.ruled_out:
            self.heading("Ruled out")
            for r in self.v.ruled_out:
                self.prose(self._relative_text(ruled_out_line(r.rank, r.why)), 2, "- ")

    def _relative_text(self, text: str) -> str:
        return text.replace(self.base + "/", "") if self.base else text

    def remediation(self, checklist: bool) -> None:
        own, general = remediation_layers(self.v)
        if not own and not general:
            return
        self.heading("What to do")
        steps = [*own, *general] if checklist else own
        for n, step in enumerate(steps, start=1):
            self.prose(step, 2, f"{n}. ")
        fd = self.v.first_death
        if general and not checklist:
            explain = f", or rankautopsy explain {fd.cause.value}" if fd is not None else ""
            noun = "step" if len(general) == 1 else "steps"
            layers = f"+ {len(general)} general {noun}: see --checklist{explain}"
            self.prose(layers, 2, style="dim")

    def notes(self) -> None:
        notes = list(self.v.notes) if named(self.v) is not None or is_clean(self.v) else []
        skipped = [f"skipped {s.path}: {s.reason}" for s in self.d.skipped]
        items = notes + skipped
        if not items:
            return
        self.heading("Notes")
        shown = items[: self.budget(LIST_ITEMS)]
        for item in shown:
            self.prose(self._relative_text(item), 2, "- ")
        if len(items) > len(shown):
            self.row(("  ", ""), (f"… {len(items) - len(shown)} more (-v to show)", "dim"))


# ---- timeline rows -----------------------------------------------------------------------------


def _ranks_text(run: Sequence[Event], room: int) -> str:
    ranks = [e.rank for e in run if e.rank is not None]
    return _ranks_label(ranks, room) if ranks else "-"


def _ranks_label(ranks: Sequence[int], room: int = 10**6) -> str:
    """`ranks 1, 3`; when the ranges do not fit, how many and their span: `7,783 ranks in 1-7999`."""
    unique = sorted(set(ranks))
    label = f"rank{'s' if len(unique) > 1 else ''} {rank_ranges(unique)}"
    if cell_len(label) <= room:
        return label
    return clip(f"{len(unique):,} ranks in {unique[0]}-{unique[-1]}", room)


def _message(d: Diagnosis, e: Event) -> str:
    """What the line says: for a symptom another rule recognised, that rule's title (the survivor's
    exception is long and says less); else a traceback's exception line, or the text without its header."""
    if e.role is Role.SYMPTOM and e.facts.get("classified_by"):
        return rule_title(d, e)
    text = exception_line(e) or _without_header(e.text)
    if any(c.isalpha() for c in text):
        return text
    return _exit_words(e)  # `[1]:` (an entry of a launcher's table) says less than the facts it carries


def _exits(run: Sequence[Event]) -> str:
    """A run of exit reports: `exit code -15 (SIGTERM)`, or per exit, its ranks where the exits differ,
    the fewest first (`exit code 1: rank 2; -15 (SIGTERM): ranks 0-1, 3`). Empty where they state none."""
    ranks: dict[str, list[int]] = {}  # by exit code (or signal): one says `(SIGTERM)`, another not
    words: dict[str, str] = {}
    for e in run:
        if (said := _exit_words(e)) and e.rank is not None:  # a run's events all have ranks (`_same_run`)
            key = e.facts.get("exitcode", "").strip() or said
            ranks.setdefault(key, []).append(e.rank)
            words[key] = max(words.get(key, ""), said, key=len)
    if len(ranks) <= 1:
        return next(iter(words.values()), "")
    order = sorted(ranks, key=lambda key: len(ranks[key]))  # the odd one first: a clipped row still shows it
    parts = [
        f"{words[key] if i == 0 else words[key].removeprefix('exit code ')}: {_ranks_label(ranks[key])}"
        for i, key in enumerate(order)
    ]
    return "; ".join(parts)


def _exit_words(e: Event) -> str:
    """`exit code -15 (SIGTERM)` from the facts an exit report carries (rules/README.md: the exit effect)."""
    if Effect.EXIT not in e.effects:
        return ""
    code, signal = e.facts.get("exitcode", "").strip(), e.facts.get("signal", "").strip()
    words = [f"exit code {code}"] if code else []
    words += [f"({signal})" if code else signal] if signal else []
    return " ".join(words)


def _without_header(text: str) -> str:
    """The message after a glog/c10 header (`W1129 09:24:13.130000 8855 file.py:1028] `): the time is
    in its own column and the source file is noise on one screen."""
    head, sep, rest = text.strip().partition("] ")
    head = head.removeprefix("[")
    if sep and rest.strip() and len(head) < 120 and head[:1] in "FEWIVC" and head[1:5].isdigit():
        text = rest
    elif (m := _LOG_HEADER.match(text.strip())) and m.end() < len(text.strip()):
        text = text.strip()[m.end() :]
    return _PG_TAG.sub("", text.strip(), count=1)


# c10d's `[PG ID 0 PG GUID 0(default_pg) Rank 5] ` before its messages: the rank has its own column
# Python logging's `2026-11-29 07:00:10,000 WARNING ` (or `[2026-11-29 07:00:10,000] [WARNING] `, SGLang's
# `[2025-04-23 21:31:41 TP2] `): the time has its column, and the level says less than the message.
_LOG_HEADER = recache.compile(
    r"\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?"
    r"(?: (?:DP|PP|TP|EP|ATTN_CP|MOE_DP)\d{1,5})*\]?[ \t]+"
    r"(?:\[?(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\]?[ \t:]+)?"
)
_PG_TAG = recache.compile(r"^\[PG ID [^\]]{0,80}\] +(?=\S)")


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


# An event whose line has no stamp shows the times of the stamped lines around it: where its line was written
# among them, which a relay (a launcher's tee, mp.spawn's parent, Ray's driver) writes after the fact.
_TIME_MARKS = {
    "~": "~ no stamp: its neighbours' times",
    "≥": "≥ no stamp: after the last stamp before it",
}


def _time_mark(e: Event) -> str:
    if e.time is None:
        return ""
    return "≥" if e.facts.get("time_open") == "1" else "~" if e.facts.get("time_inferred") == "1" else ""


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
    if a.rule != b.rule or a.cause != b.cause or a.rank is None or b.rank is None:
        return False
    if fd is not None and b.where in {ev.where for ev in fd.evidence}:
        return False  # the evidence heads its own row; the culprit's repeats of it fold into that row
    return _is_first_death_event(a, fd) == _is_first_death_event(b, fd)


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


def _role_style(role: Role) -> str:
    return {Role.CAUSE: "red", Role.SYMPTOM: "yellow"}.get(role, "dim")


def _alike(run: Sequence[Event]) -> int:
    """How many lines a run of alike events stands for: the scan keeps a repeated line's first few and
    its latest, and the first carries how many were seen (`repeats`)."""
    return max(len(run), *((read_int(e.facts.get("repeats"), max_len=15) or 0) for e in run))
