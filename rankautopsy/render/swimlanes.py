"""The SVG swimlane picture of the HTML report: one lane per rank (a heat map for big jobs), its marks,
time axis, guides for the first death and the first symptom, and the legend. Pure text, no I/O."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from rankautopsy.model import Cause, Diagnosis, Event, Fate, RankReport, Role, TimeSpan
from rankautopsy.render._labels import (
    CAUSE_LABELS,
    FATE_LABELS,
    all_times,
    clip,
    clock,
    rank_events,
    stamp,
    utc,
    xml_chars,
)


def e(text: str) -> str:
    """Text for an element or a quoted attribute: XML-legal code points, markup escaped."""
    return html.escape(xml_chars(text), quote=True)


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


def lanes(d: Diagnosis) -> list[_Lane]:
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
