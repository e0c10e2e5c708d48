"""One self-contained HTML page: the verdict, an SVG swimlane timeline of every rank, the evidence.

Inline CSS, no script, no network, no external font. The markup is well-formed XML (void elements
closed, no named entities but XML's), and every piece of log text goes through `html.escape`
after losing the code points XML forbids.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from rankautopsy.model import Cause, Diagnosis, Event, Evidence, Fate, FirstDeath, RankReport, Role, TimeSpan, Verdict
from rankautopsy.render._labels import (
    CAUSE_LABELS,
    FATE_LABELS,
    OUTCOME_LABELS,
    PHASE_LABELS,
    all_times,
    clip,
    clock,
    decisive_evidence,
    evidence_blocks,
    group_ranks,
    headline,
    is_clean,
    named,
    outcome_lines,
    rank_events,
    rank_ranges,
    rule_text,
    ruled_out_line,
    spans_days,
    stamp,
    utc,
    when_text,
    xml_chars,
)

_CODE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
GROUP_ABOVE_RANKS = 32
MAX_GROUPS = 32
EVIDENCE_CHARS = 4000
CELL_CHARS = 300


def render_html(d: Diagnosis) -> str:
    v = d.verdict
    clean_run = is_clean(v)
    body = [_verdict(d, clean_run), _timeline(d)]
    if v.first_death is not None and v.first_death.evidence:
        body.append(_section("Evidence", _evidence(v.first_death.evidence, decisive_evidence(d))))
    body.append(_section("What to do", _checklist(v.remediation)))
    title = "What the ranks did" if named(v) is None else "What the other ranks did"
    body.append(_section(title, _ranks(d.ranks, spans_days(d)), "ranks"))
    if not clean_run:
        body.append(_section("Reasoning", _list("ol", v.reasoning)))
    body.append(_section("Ruled out", _list("ul", [ruled_out_line(r.rank, r.why) for r in v.ruled_out])))
    if named(v) is not None or clean_run:
        body.append(_section("Notes", _list("ul", v.notes)))
    body.append(_section("Skipped inputs", _list("ul", [f"{s.path}: {s.reason}" for s in d.skipped])))
    body.append(
        f"<footer>Diagnosed by rankautopsy from {len(d.inputs):,} input{'' if len(d.inputs) == 1 else 's'}.</footer>"
    )
    return _page(_title(d, clean_run), "\n".join(b for b in body if b))


def e(text: str) -> str:
    """Text for an element or a quoted attribute: XML-legal code points, markup escaped."""
    return html.escape(xml_chars(text), quote=True)


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8"/>\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1"/>\n'
        f"<title>{e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def _title(d: Diagnosis, clean_run: bool) -> str:
    fd = named(d.verdict)
    if fd is not None:
        return f"rankautopsy: {headline(fd)}"
    return f"rankautopsy: {OUTCOME_LABELS[d.verdict.outcome][0]}"


def _section(title: str, body: str, cls: str = "") -> str:
    if not body:
        return ""
    attr = f' class="{cls}"' if cls else ""
    return f"<section{attr}>\n<h2>{e(title)}</h2>\n{body}\n</section>"


def prose(text: str) -> str:
    """`e`, but the `code` spans that rule packs write in their remediation become <code>."""
    parts = _CODE.split(xml_chars(text))
    return "".join(f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p) for i, p in enumerate(parts))


def _list(tag: str, items: Sequence[str]) -> str:
    if not items:
        return ""
    return f"<{tag}>\n" + "\n".join(f"<li>{e(item)}</li>" for item in items) + f"\n</{tag}>"


def _checklist(items: Sequence[str]) -> str:
    if not items:
        return ""
    rows = [f'<li><label><input type="checkbox"/> <span>{prose(item)}</span></label></li>' for item in items]
    return '<ul class="todo">\n' + "\n".join(rows) + "\n</ul>"


# ---- verdict -----------------------------------------------------------------------------------


def _verdict(d: Diagnosis, clean_run: bool) -> str:
    v = d.verdict
    fd = named(v)
    if fd is not None:
        return _death(fd, v)
    words = OUTCOME_LABELS[v.outcome][1]
    if clean_run:
        return _card("ok", words, "", _list("ul", v.reasoning))
    return _card("unsure", words, "", _list("ul", outcome_lines(v)))


def _card(kind: str, title: str, detail: str, extra: str) -> str:
    parts = [f'<header class="verdict {kind}">', '<p class="tool">rankautopsy</p>', f"<h1>{e(title)}</h1>"]
    parts += [f'<p class="detail">{e(detail)}</p>'] if detail else []
    parts += [extra] if extra else []
    return "\n".join([*parts, "</header>"])


def _death(fd: FirstDeath, v: Verdict) -> str:
    facts = [("when", when_text(fd.time)), ("phase", PHASE_LABELS[fd.phase]), ("confidence", v.confidence.value)]
    ids = ([fd.host] if fd.host else []) + ([] if fd.pid is None else [f"pid {fd.pid}"])
    facts += [("process", ", ".join(ids))] if ids else []
    facts.append(("rule", rule_text(fd)))
    dl = "".join(f'<div class="fact {k}"><dt>{e(k)}</dt><dd>{e(val)}</dd></div>' for k, val in facts)
    kind = "hang" if fd.cause is Cause.HANG else "dead"
    return _card(kind, headline(fd), fd.detail, f'<dl class="facts">{dl}</dl>')


# ---- timeline ----------------------------------------------------------------------------------


def _timeline(d: Diagnosis) -> str:
    lanes = _lanes(d)
    svg = swimlanes(d, lanes)
    if svg is None:
        return _section("Timeline", '<p class="muted">No timestamps were found: there is no timeline to draw.</p>')
    return _section("Timeline", f'{legend(lanes)}\n<div class="chart">\n{svg}\n</div>', "timeline")


# ---- evidence ----------------------------------------------------------------------------------


def _evidence(evidence: Sequence[Evidence], decisive: Evidence | None) -> str:
    return "\n".join(_evidence_block(block, decisive) for block in evidence_blocks(evidence))


def _evidence_block(block: Sequence[Evidence], decisive: Evidence | None) -> str:
    rows = []
    for ev in block:
        cls = ' class="decisive"' if ev == decisive else ""
        text = e(clip(ev.text, EVIDENCE_CHARS))
        rows.append(f'<span{cls}><span class="ln">{ev.where.line}</span>{text}</span>')
    caption = f"<figcaption>{e(block[0].where.source)}</figcaption>"
    return f'<figure class="log">{caption}<pre>{"".join(rows)}</pre></figure>'


# ---- ranks -------------------------------------------------------------------------------------


def _swatch(fate: Fate) -> str:
    return f'<span class="swatch" style="background:{FATE_COLOURS[fate]}"></span>{e(FATE_LABELS[fate][0].lower())}'


def _ranks(ranks: Sequence[RankReport], with_date: bool) -> str:
    if not ranks:
        return ""
    if len(ranks) > GROUP_ABOVE_RANKS:
        return _rank_groups(ranks, with_date)
    head = "<tr><th>rank</th><th>host</th><th>fate</th><th>last seen</th><th>step</th><th>what happened</th></tr>"
    rows = [_rank_row(r, with_date) for r in sorted(ranks, key=lambda r: r.rank)]
    return f"<table>\n<thead>{head}</thead>\n<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>"


def _rank_row(r: RankReport, with_date: bool) -> str:
    cls = ' class="culprit"' if r.fate is Fate.FIRST_DEATH else ""
    cells = [
        f'<td class="num">{r.rank}</td>',
        f"<td>{e(r.host or '?')}</td>",
        f'<td class="fate">{_swatch(r.fate)}</td>',
        f'<td class="time">{clock(r.last_seen, with_date)}</td>',
        f'<td class="num">{"?" if r.last_step is None else r.last_step}</td>',
        f"<td>{e(clip(r.summary, CELL_CHARS))}</td>",
    ]
    return f"<tr{cls}>{''.join(cells)}</tr>"


def _rank_groups(ranks: Sequence[RankReport], with_date: bool) -> str:
    groups = group_ranks(ranks)
    head = "".join(f"<th>{h}</th>" for h in ("ranks", "count", "hosts", "fate", "last seen", "step", "what happened"))
    rows = []
    for g in groups[:MAX_GROUPS]:
        cls = ' class="culprit"' if g.fate is Fate.FIRST_DEATH else ""
        cells = [
            f"<td>{e(rank_ranges(g.ranks))}</td>",
            f'<td class="num">{len(g.ranks):,}</td>',
            f"<td>{e(g.hosts_text())}</td>",
            f'<td class="fate">{_swatch(g.fate)}</td>',
            f'<td class="time">{e(g.seen_text(with_date))}</td>',
            f'<td class="num">{e(g.steps_text())}</td>',
            f"<td>{e(clip(g.summary, CELL_CHARS))}</td>",
        ]
        rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
    more = len(groups) - MAX_GROUPS
    tail = f'\n<p class="muted">… and {more:,} more groups of ranks.</p>' if more > 0 else ""
    return f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>" + tail


# ---- the swimlane picture ----------------------------------------------------------------------

FATE_COLOURS: dict[Fate, str] = {
    Fate.FIRST_DEATH: "#d1242f",
    Fate.DIED: "#8c1d2b",
    Fate.COLLATERAL: "#e09b00",
    Fate.TORN_DOWN: "#8c959f",
    Fate.EXITED_CLEAN: "#2da44e",
    Fate.RUNNING: "#5a7fb8",
    Fate.UNKNOWN: "#b6bdc6",
}
SHAPE_LABELS = {
    "cross": "its own cause (died or hung)",
    "diamond": "collective timeout",
    "triangle": "lost a peer",
    "square": "stopped by the launcher",
    "circle": "clean exit",
}
WIDTH = 1200
LEFT = 96
PLOT_HEIGHT = 560  # the lanes of a big job share this much height
MAX_LANE = 26
MIN_LANE = 0.5
LABEL_GAP = 13
THICK = 6  # lanes at least this tall get lines, shapes and words; thinner ones are rows of a heat map
MAX_MARKS = 8
_SYMPTOM_SHAPES = {
    Cause.COLLECTIVE_TIMEOUT: "diamond",
    Cause.WATCHDOG_ABORT: "diamond",
    Cause.PEER_LOST: "triangle",
    Cause.LAUNCHER_TEARDOWN: "square",
}
_FATE_SHAPES = {
    Fate.FIRST_DEATH: "cross",
    Fate.DIED: "cross",
    Fate.COLLATERAL: "diamond",
    Fate.TORN_DOWN: "square",
    Fate.EXITED_CLEAN: "circle",
}
_TICK_STEPS = (
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900,
    1800, 3600, 7200, 10800, 21600, 43200, 86400, 172800, 604800,
)  # fmt: skip
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class _Mark:
    at: datetime
    shape: str
    label: str
    until: datetime | None = None  # the end of the interval it lies in, if uncertain


@dataclass(frozen=True, slots=True)
class _Lane:
    report: RankReport
    marks: tuple[_Mark, ...]

    @property
    def end(self) -> datetime | None:
        times = [m.at for m in self.marks] + ([self.report.last_seen] if self.report.last_seen else [])
        return max((utc(t) for t in times), default=None)


@dataclass(frozen=True, slots=True)
class _Frame:
    """Where things go: the time window and the lane geometry."""

    t0: datetime
    t1: datetime
    start: datetime  # the first time seen in the job (may lie before t0)
    head: float  # room for the guides' words
    lane: float
    lanes: int

    @property
    def tall(self) -> bool:
        return self.lane * self.lanes > 300  # tall enough to repeat the time axis on top

    @property
    def top(self) -> float:
        return self.head + (18 if self.tall else 4)

    @property
    def thick(self) -> bool:
        return self.lane >= THICK

    @property
    def right(self) -> float:
        return WIDTH - (150 if self.thick else 24)  # room for words after the last marks

    @property
    def bottom(self) -> float:
        return self.top + self.lanes * self.lane

    def x(self, at: datetime) -> float:
        frac = (utc(at) - self.t0) / (self.t1 - self.t0)
        return LEFT + min(1.0, max(0.0, frac)) * (self.right - LEFT)

    def cy(self, i: int) -> float:
        return self.top + (i + 0.5) * self.lane

    def past(self, x: float, share: float) -> bool:
        return x > LEFT + share * (self.right - LEFT)


def _lanes(d: Diagnosis) -> list[_Lane]:
    return [_Lane(r, _marks(d, r)) for r in sorted(d.ranks, key=lambda r: r.rank)]


def _marks(d: Diagnosis, r: RankReport) -> tuple[_Mark, ...]:
    fd = d.verdict.first_death
    events = [ev for ev in rank_events(d, r.events) if ev.time is not None]
    marks: list[_Mark] = []
    if r.fate is Fate.FIRST_DEATH and fd is not None and fd.time is not None:
        marks.append(_Mark(fd.time.earliest, "cross", CAUSE_LABELS[fd.cause][1], fd.time.latest))
        events = [ev for ev in events if ev.role is Role.SYMPTOM]
    else:
        events = [ev for ev in events if ev.role in (Role.CAUSE, Role.SYMPTOM)]
    marks += [_event_mark(ev) for ev in events[:MAX_MARKS]]
    if not marks and r.fate in _FATE_SHAPES and r.last_seen is not None:
        marks.append(_Mark(r.last_seen, _FATE_SHAPES[r.fate], FATE_LABELS[r.fate][0].lower()))
    return tuple(sorted(marks, key=lambda m: utc(m.at)))


def _event_mark(ev: Event) -> _Mark:
    at = ev.time.earliest if ev.time is not None else _EPOCH
    shape = "cross" if ev.role is Role.CAUSE else _SYMPTOM_SHAPES.get(ev.cause, "diamond")
    return _Mark(at, shape, CAUSE_LABELS[ev.cause][1])


def _frame(d: Diagnosis, lanes: Sequence[_Lane], guides: int) -> _Frame | None:
    """From the job's first time to the last lane's end; a long calm before the failure is cut short."""
    marks = [m for lane in lanes for m in lane.marks]
    ends = [utc(t) for m in marks for t in (m.at, m.until or m.at)]
    ends += [utc(r.last_seen) for r in (lane.report for lane in lanes) if r.last_seen is not None]
    times = [utc(t) for t in all_times(d)]
    if not times and not ends:
        return None
    start, end = min(times + ends), max(ends or times)
    focus = min((utc(m.at) for m in marks if m.shape != "circle"), default=None)
    low = start
    if focus is not None and end > focus and end - focus < (end - start) * 0.08:
        low = focus - (end - focus) * 1.5
    pad = max(end - low, timedelta(seconds=1)) * 0.03
    lane = min(MAX_LANE, max(MIN_LANE, PLOT_HEIGHT / max(1, len(lanes))))
    return _Frame(low - pad, end + pad, start, 8 + 17 * guides, lane, len(lanes))


def swimlanes(d: Diagnosis, lanes: Sequence[_Lane]) -> str | None:
    """One lane per rank: alive from the job's start to its last line, then how it ended."""
    guides = _guides(d)
    frame = _frame(d, lanes, len(guides))
    if frame is None:
        return None
    culprit = next((i for i, lane in enumerate(lanes) if lane.report.fate is Fate.FIRST_DEATH), None)
    labelled = _labelled(len(lanes), frame.lane, culprit)
    others = [_lane(lane, i, frame, i in labelled, False) for i, lane in enumerate(lanes) if i != culprit]
    on_top: list[str] = []
    if culprit is not None:
        on_top = [*_culprit_band(frame, culprit), _lane(lanes[culprit], culprit, frame, True, True)]
        on_top += _callout(d, lanes[culprit], culprit, frame)
    cls = "thick" if frame.thick else "thin"
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{cls}" viewBox="0 0 {WIDTH} {frame.bottom + 44:.0f}" '
        f'role="img" aria-label="timeline of {len(lanes)} ranks" font-size="12">'
    )
    drawn = [part for row, guide in enumerate(guides) for part in _guide(guide, row, frame)]
    return "\n".join([head, *_axis(frame), *others, *drawn, *on_top, "</svg>"])


def _labelled(n: int, lane: float, culprit: int | None) -> set[int]:
    k = next(k for k in (2**p for p in range(24)) if k * lane >= LABEL_GAP)
    keep = set(range(0, n, k))
    if culprit is not None:
        keep = {i for i in keep if abs(i - culprit) * lane >= LABEL_GAP} | {culprit}
    return keep


# ---- axis and guides ---------------------------------------------------------------------------


def _ticks(frame: _Frame) -> tuple[float, list[datetime]]:
    span = (frame.t1 - frame.t0).total_seconds()
    step = next((s for s in _TICK_STEPS if span / s <= 9), _TICK_STEPS[-1])
    step_us = round(step * 1_000_000)
    t0_us = (frame.t0 - _EPOCH) // timedelta(microseconds=1)
    t1_us = (frame.t1 - _EPOCH) // timedelta(microseconds=1)
    first = -(-t0_us // step_us) * step_us
    return step, [_EPOCH + timedelta(microseconds=t) for t in range(first, t1_us + 1, step_us)]


def _tick_label(at: datetime, step: float, with_date: bool) -> str:
    if step >= 86400:
        return f"{at:%m-%d}"
    text = f"{at:%H:%M}" if step >= 60 else f"{at:%H:%M:%S}"
    if step < 1:
        digits = 1 if step >= 0.1 else 2 if step >= 0.01 else 3
        text += f".{at.microsecond // 10 ** (6 - digits):0{digits}d}"
    return f"{at:%m-%d} {text}" if with_date else text


def _axis(frame: _Frame) -> list[str]:
    step, ticks = _ticks(frame)
    with_date = utc(frame.t0).date() != utc(frame.t1).date()
    top, bottom = frame.top, frame.bottom
    parts = [_rect("plot", LEFT, top, frame.right - LEFT, bottom - top)]
    for at in ticks:
        x, label = frame.x(at), e(_tick_label(at, step, with_date))
        parts.append(f'<line class="grid" x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{bottom + 4:.1f}"/>')
        parts.append(f'<text class="tick" x="{x:.1f}" y="{bottom + 17:.1f}" text-anchor="middle">{label}</text>')
        if frame.tall:
            parts.append(f'<text class="tick" x="{x:.1f}" y="{top - 5:.1f}" text-anchor="middle">{label}</text>')
    parts.append(f'<text class="axis" x="{LEFT}" y="{bottom + 36:.1f}">{e(_axis_caption(frame))}</text>')
    return parts


def _axis_caption(frame: _Frame) -> str:
    days = sorted({utc(t).date() for t in (frame.t0, frame.t1)})
    text = f"time (UTC, {days[0].isoformat()})" if len(days) == 1 else "time (UTC)"
    if frame.start < frame.t0:
        text += f" · the logs begin {_human(frame.t0 - frame.start)} earlier, at {stamp(frame.start, 0)}"
    return text


def _guides(d: Diagnosis) -> list[tuple[datetime, str, str]]:
    """Dashed lines across every lane: when the first death happened, when the symptoms began."""
    guides: list[tuple[datetime, str, str]] = []
    fd = d.verdict.first_death
    span = fd.time if fd is not None else None
    if fd is not None and span is not None:
        who = "the job" if fd.rank is None else f"rank {fd.rank}"
        what = f"stopped making progress after {clock(span.earliest, False)}"
        if fd.cause is not Cause.HANG:
            what = f"died · {_short_when(span)}"
        guides.append((span.earliest, f"{who} {what}", "death"))
    symptom = _first_symptom(d)
    if symptom is not None:
        at, what = symptom
        after = ""
        if span is not None and at >= utc(span.latest) and at > utc(span.earliest):
            after = f" ({_human(at - utc(span.earliest))} later)"
        guides.append((at, f"{what} from {clock(at, False)}{after}", "symptom"))
    return guides


def _short_when(span: TimeSpan) -> str:
    if span.latest <= span.earliest:
        return clock(span.earliest, False)
    return f"between {clock(span.earliest, False)} and {clock(span.latest, False)}"


def _first_symptom(d: Diagnosis) -> tuple[datetime, str] | None:
    kinds = (
        ((Cause.COLLECTIVE_TIMEOUT, Cause.WATCHDOG_ABORT), "collective timeouts"),
        ((Cause.PEER_LOST,), "peers lost"),
    )
    for causes, what in kinds:
        times = [utc(ev.time.earliest) for ev in d.events if ev.cause in causes and ev.time is not None]
        if times:
            return min(times), what
    return None


def _guide(guide: tuple[datetime, str, str], row: int, frame: _Frame) -> list[str]:
    at, label, cls = guide
    x, y = frame.x(at), 14 + row * 17
    anchor = "end" if frame.past(x, 0.62) else "start"
    tx = x - 5 if anchor == "end" else x + 5
    return [
        f'<line class="guide {cls}" x1="{x:.1f}" y1="{y - 10}" x2="{x:.1f}" y2="{frame.bottom:.1f}"/>',
        f'<text class="guide {cls}" x="{tx:.1f}" y="{y}" text-anchor="{anchor}">{e(label)}</text>',
    ]


def _human(delta: timedelta) -> str:
    s = delta.total_seconds()
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 120:
        return f"{s:.1f} s".replace(".0 s", " s")
    if s < 7200:
        return f"{int(s // 60)} min {int(s % 60)} s".replace(" 0 s", "")
    return f"{int(s // 3600)} h {int(s % 3600 // 60)} min".replace(" 0 min", "")


# ---- lanes -------------------------------------------------------------------------------------


def _rect(cls: str, x: float, y: float, w: float, h: float) -> str:
    return f'<rect class="{cls}" x="{x:.1f}" y="{y:.2f}" width="{w:.1f}" height="{h:.2f}"/>'


def _culprit_band(frame: _Frame, i: int) -> list[str]:
    h = max(frame.lane, 6.0)
    y = frame.cy(i) - h / 2
    return [_rect("culprit-gap", LEFT, y, frame.right - LEFT, h), _rect("culprit-band", 0, y, WIDTH, h)]


def _lane(lane: _Lane, i: int, frame: _Frame, labelled: bool, culprit: bool) -> str:
    r, cy = lane.report, frame.cy(i)
    parts = [f'<g class="lane f-{r.fate.value}" data-rank="{r.rank}">', f"<title>{e(_tooltip(r, lane))}</title>"]
    bar = frame.lane * 0.28 if frame.thick else frame.lane + 0.2
    bar = max(bar, 3.0) if culprit else bar
    if r.last_seen is not None:
        x0, x1 = frame.x(frame.start), frame.x(r.last_seen)
        parts.append(_rect("alive", x0, cy - bar / 2, max(x1 - x0, 1), bar))
        end = _silent(lane)
        if end is not None and (frame.thick or culprit):
            parts.append(f'<line class="silent" x1="{x1:.1f}" y1="{cy:.2f}" x2="{frame.x(end):.1f}" y2="{cy:.2f}"/>')
    parts += [_mark(m, frame, cy, culprit) for m in lane.marks]
    last = lane.marks[-1] if lane.marks else None
    if last is None and r.last_seen is not None:
        last = _Mark(r.last_seen, "", FATE_LABELS[r.fate][0].lower())
    if frame.lane >= LABEL_GAP and last is not None and not culprit:
        parts.append(_what(last, frame, cy))
    if labelled:
        name = f"rank {r.rank}" if frame.lane >= LABEL_GAP or i == 0 or culprit else str(r.rank)
        parts.append(f'<text class="rank" x="{LEFT - 8}" y="{cy + 4:.2f}" text-anchor="end">{name}</text>')
    return "".join(parts) + "</g>"


def _silent(lane: _Lane) -> datetime | None:
    """The end of a rank that fell silent before it ended (its last line came before its end)."""
    end, seen = lane.end, lane.report.last_seen
    return end if end is not None and seen is not None and end > utc(seen) else None


def _mark(m: _Mark, frame: _Frame, cy: float, culprit: bool) -> str:
    x = frame.x(m.at)
    band = ""
    x0, x1 = x, frame.x(m.until or m.at)
    if x1 - x0 > 2:
        h = max(frame.lane * 0.7, 6.0)
        band = _rect("span", x0, cy - h / 2, x1 - x0, h)
    if not frame.thick and not culprit:
        return band + _rect("tick-mark", x - 1.5, cy - frame.lane / 2 - 0.1, 3, frame.lane + 0.2)
    return band + _shape(m.shape, x, cy, min(frame.lane * 0.62, 14.0) if frame.thick else 11.0)


def _shape(shape: str, x: float, y: float, size: float) -> str:
    h = size / 2
    if shape == "cross":
        d = f"M{x - h:.1f} {y - h:.1f}L{x + h:.1f} {y + h:.1f}M{x - h:.1f} {y + h:.1f}L{x + h:.1f} {y - h:.1f}"
        return f'<path class="m cross" d="{d}"/>'
    if shape == "square":
        return _rect("m", x - h * 0.8, y - h * 0.8, size * 0.8, size * 0.8)
    if shape == "circle":
        return f'<circle class="m" cx="{x:.1f}" cy="{y:.1f}" r="{h * 0.8:.1f}"/>'
    if shape == "triangle":
        pts = f"{x:.1f},{y - h:.1f} {x + h:.1f},{y + h:.1f} {x - h:.1f},{y + h:.1f}"
    else:
        pts = f"{x:.1f},{y - h:.1f} {x + h:.1f},{y:.1f} {x:.1f},{y + h:.1f} {x - h:.1f},{y:.1f}"
    return f'<polygon class="m" points="{pts}"/>'


def _what(m: _Mark, frame: _Frame, cy: float) -> str:
    x = frame.x(m.at)
    tx, anchor = (x - 11, "end") if frame.past(x, 1.0) else (x + (11 if m.shape else 6), "start")
    return f'<text class="what" x="{tx:.1f}" y="{cy + 4:.2f}" text-anchor="{anchor}">{e(m.label)}</text>'


def _callout(d: Diagnosis, lane: _Lane, i: int, frame: _Frame) -> list[str]:
    r, fd = lane.report, d.verdict.first_death
    at = lane.marks[0].at if lane.marks else r.last_seen
    if at is None:
        return []
    what = CAUSE_LABELS[fd.cause][1] if fd is not None else FATE_LABELS[r.fate][0]
    text = f"rank {r.rank}: {what}" + (f" — {r.summary}" if r.summary else "")
    x = frame.x(at)
    right, left = WIDTH - x - 12, x - 12
    fits = len(text) * 7.4 <= right
    tx, anchor, room = (x + 12, "start", right) if fits or right >= left else (x - 12, "end", left)
    text = clip(text, max(12, int(room / 7.4)))
    y = frame.cy(i) + (4 if frame.thick else -9)
    return [f'<text class="callout" x="{tx:.1f}" y="{y:.2f}" text-anchor="{anchor}">{e(text)}</text>']


def _tooltip(r: RankReport, lane: _Lane) -> str:
    facts = [f"rank {r.rank}", r.host or "?", FATE_LABELS[r.fate][0].lower()]
    facts += [f"last seen {clock(r.last_seen, True)}"] if r.last_seen else []
    facts += [] if r.last_step is None else [f"step {r.last_step}"]
    marks = "; ".join(f"{m.label} at {clock(m.at, False)}" for m in lane.marks)
    return " · ".join(facts) + (f" — {r.summary}" if r.summary else "") + (f" ({marks})" if marks else "")


def legend(lanes: Sequence[_Lane]) -> str:
    fates = [f for f in Fate if any(lane.report.fate is f for lane in lanes)]
    shapes = {m.shape for lane in lanes for m in lane.marks}
    keys = [
        f'<span class="key"><span class="swatch" style="background:{FATE_COLOURS[f]}"></span>'
        f"{e(FATE_LABELS[f][0].lower())} ({sum(lane.report.fate is f for lane in lanes):,})</span>"
        for f in fates
    ]
    keys += [
        f'<span class="key"><svg viewBox="0 0 14 14">{_shape(s, 7, 7, 11)}</svg>{e(label)}</span>'
        for s, label in SHAPE_LABELS.items()
        if s in shapes
    ]
    if any(_silent(lane) for lane in lanes):
        silent = '<line class="silent" x1="0" y1="7" x2="14" y2="7"/>'
        keys.append(f'<span class="key"><svg viewBox="0 0 14 14">{silent}</svg>silent until its end</span>')
    return '<div class="legend">' + "".join(keys) + "</div>"


_CSS = """
:root{--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--bg:#f6f8fa;--card:#fff;--red:#cf222e;--amber:#bf8700;
--green:#1a7f37;--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;
--sans:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.5 var(--sans)}
main{max-width:1240px;margin:0 auto;padding:20px 24px 32px}
header.verdict,section{background:var(--card);border:1px solid var(--line);border-radius:8px;
padding:14px 20px;margin:0 0 16px}
header.verdict{border-left:6px solid var(--red)}
header.verdict.ok{border-left-color:var(--green)}
header.verdict.unsure{border-left-color:var(--amber)}
.tool{margin:0;color:var(--muted);font-size:12px;letter-spacing:.08em;text-transform:uppercase}
h1{margin:2px 0 4px;font-size:22px;line-height:1.3;color:var(--red)}
header.verdict.ok h1{color:var(--green)}
header.verdict.unsure h1{color:var(--amber)}
.detail{margin:0 0 8px;font:600 15px/1.4 var(--mono);overflow-wrap:anywhere}
.facts{display:flex;flex-wrap:wrap;gap:4px 28px;margin:6px 0 0}
.fact dt{color:var(--muted);font-size:11px;text-transform:uppercase;letter-spacing:.06em}
.fact dd{margin:0;font-weight:600}
.fact.confidence dd{text-transform:uppercase}
.fact.rule dd{font:13px var(--mono)}
h2{font-size:15px;margin:0 0 10px}
ul,ol{margin:0;padding-left:22px}
.muted{color:var(--muted)}
code{font:12.5px var(--mono);background:#eff1f3;border-radius:4px;padding:1px 4px}
.legend{display:flex;flex-wrap:wrap;gap:4px 18px;margin:0 0 8px;font-size:12.5px;color:var(--muted)}
.legend .key{display:inline-flex;align-items:center;gap:5px}
.legend svg{width:14px;height:14px}
.chart svg{display:block;width:100%;height:auto}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px}
figure.log{margin:0 0 10px}
figcaption{font:12px var(--mono);color:var(--muted);margin-bottom:2px}
pre{margin:0;padding:8px 0;background:var(--bg);border:1px solid var(--line);border-radius:6px;
font:12.5px/1.5 var(--mono);white-space:pre-wrap;overflow-wrap:anywhere}
pre>span{display:grid;grid-template-columns:5.5em 1fr;padding:0 12px 0 0}
pre>span.decisive{background:#ffebe9;box-shadow:inset 3px 0 var(--red)}
.ln{padding:0 12px 0 0;text-align:right;color:var(--muted);user-select:none}
.todo{list-style:none;padding-left:0}
.todo li{margin:4px 0}
.todo label{display:flex;gap:8px;align-items:baseline}
table{border-collapse:collapse;width:100%;font-size:13px}
th{text-align:left;color:var(--muted);font-weight:600;border-bottom:1px solid var(--line);padding:4px 10px 4px 0}
td{border-bottom:1px solid #eaeef2;padding:4px 10px 4px 0;vertical-align:top;overflow-wrap:anywhere}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.time,td.fate{white-space:nowrap;font-variant-numeric:tabular-nums}
tr.culprit td{background:#fff0ee;font-weight:600}
footer{color:var(--muted);font-size:12px;text-align:center}
svg text{fill:#57606a;font-family:var(--sans)}
svg .plot{fill:#fbfcfd;stroke:#eaeef2}
svg .grid{stroke:#e6e9ed}
svg .tick,svg .rank{font-size:11px;font-variant-numeric:tabular-nums}
svg .axis{font-size:11.5px}
svg .what{font-size:11px}
svg .callout{font-size:12.5px;font-weight:700;fill:#a40e26;paint-order:stroke;stroke:#fff;stroke-width:4px;
stroke-linejoin:round}
svg .guide{stroke-width:1.5;stroke-dasharray:5 4}
svg line.guide.death{stroke:#d1242f}
svg line.guide.symptom{stroke:#bf8700}
svg text.guide{stroke:none;font-size:12px;font-weight:600}
svg text.guide.death{fill:#a40e26}
svg text.guide.symptom{fill:#8a6100}
svg .culprit-gap{fill:#fff;fill-opacity:.85}
svg .culprit-band{fill:#d1242f;fill-opacity:.1}
.lane .alive{fill:currentColor;fill-opacity:.45}
svg.thin .lane .alive{fill-opacity:.28}
.lane .silent,.legend .silent{stroke:#8c959f;stroke-width:1.5;stroke-dasharray:2 3}
.lane .span{fill:currentColor;fill-opacity:.22}
.lane .m{fill:currentColor;stroke:#fff;stroke-width:1.2}
.lane .m.cross,.legend .m.cross{fill:none;stroke:currentColor;stroke-width:3;stroke-linecap:round}
.legend .m{fill:#57606a}
.legend .m.cross{stroke:#57606a}
.lane .tick-mark{fill:currentColor}
.lane.f-first_death .rank{fill:#a40e26;font-weight:700}
.f-first_death{color:#d1242f}
.f-died{color:#8c1d2b}
.f-collateral{color:#e09b00}
.f-torn_down{color:#8c959f}
.f-exited_clean{color:#2da44e}
.f-running{color:#5a7fb8}
.f-unknown{color:#b6bdc6}
"""
