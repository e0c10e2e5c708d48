"""The SVG swimlane picture of the HTML report: one lane per rank (a heat map for big jobs), its marks,
time axis, guides for the first death and the first symptom, and the legend. Pure text, no I/O."""

from __future__ import annotations

import html
import unicodedata
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from rankautopsy.model import Cause, Diagnosis, Event, Fate, FirstDeath, RankReport, Role, TimeOpen, TimeSpan
from rankautopsy.records import record
from rankautopsy.render._labels import (
    CAUSE_LABELS,
    FATE_LABELS,
    all_times,
    clock,
    death_labels,
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
MIN_CHART_PX = 1000  # narrower screens scroll the picture sideways instead of shrinking its words
LEFT = 96
PLOT_HEIGHT = 560  # the lanes of a big job share this much height
MAX_LANE = 26
MIN_LANE = 0.5
LABEL_GAP = 14  # lanes at least this far apart can each carry a label of 11 px text
EDGE = 4  # no words closer than this to the picture's sides
TICK_PX, AXIS_PX, GUIDE_PX, LABEL_PX = 11.0, 11.5, 12.0, 11.0  # font sizes, as in the stylesheet
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


@record
class _Mark:
    at: datetime
    shape: str
    label: str
    until: datetime | None = None  # the end of the interval it lies in, if uncertain


@record
class _Lane:
    report: RankReport
    marks: tuple[_Mark, ...]

    @property
    def end(self) -> datetime | None:
        times = [m.at for m in self.marks] + ([self.report.last_seen] if self.report.last_seen else [])
        return max((utc(t) for t in times), default=None)


@record
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


def lanes(d: Diagnosis) -> list[_Lane]:
    return [_Lane(r, _marks(d, r)) for r in sorted(d.ranks, key=lambda r: r.rank)]


def _marks(d: Diagnosis, r: RankReport) -> tuple[_Mark, ...]:
    fd = d.verdict.first_death
    events = [ev for ev in rank_events(d, r.events) if ev.time is not None]
    marks: list[_Mark] = []
    if r.fate is Fate.FIRST_DEATH and fd is not None and (span := _death_span(fd)) is not None:
        marks.append(_Mark(span.earliest, "cross", death_labels(fd)[1], span.latest))
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
        low = _shifted(focus, -(end - focus) * 1.5)
    pad = max(end - low, timedelta(seconds=1)) * 0.03
    lane = min(MAX_LANE, max(MIN_LANE, PLOT_HEIGHT / max(1, len(lanes))))
    return _Frame(_shifted(low, -pad), _shifted(end, pad), start, 8 + 17 * guides, lane, len(lanes))


def _shifted(t: datetime, by: timedelta) -> datetime:
    """`t + by`, held inside the calendar (a log's year 1 or 9999 is a date, its margin may not be)."""
    try:
        return t + by
    except OverflowError:
        return (datetime.min if by < timedelta(0) else datetime.max).replace(tzinfo=t.tzinfo)


def swimlanes(d: Diagnosis, lanes: Sequence[_Lane], title: str = "", desc: str = "") -> str | None:
    """One lane per rank: alive from the job's start to its last line, then how it ended."""
    guides = _guides(d, lanes)
    frame = _frame(d, lanes, len(guides))
    if frame is None:
        return None
    culprit = next((i for i, lane in enumerate(lanes) if lane.report.fate is Fate.FIRST_DEATH), None)
    labelled = _labelled(len(lanes), frame.lane, culprit)
    others = [_lane(lane, i, frame, i in labelled, False) for i, lane in enumerate(lanes) if i != culprit]
    on_top: list[str] = []
    if culprit is not None:
        on_top = [*_culprit_band(frame, culprit), _lane(lanes[culprit], culprit, frame, True, True)]
    cls = "thick" if frame.thick else "thin"
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{cls}" viewBox="0 0 {WIDTH} {frame.bottom + 44:.0f}" '
        'role="img" aria-labelledby="timeline-title timeline-desc" font-size="12">'
    )
    text = title or f"timeline of {len(lanes)} ranks"
    words = [f'<title id="timeline-title">{e(text)}</title>', f'<desc id="timeline-desc">{e(desc or text)}</desc>']
    drawn = _guide_parts(guides, frame)
    return "\n".join([head, *words, *_axis(frame), *others, *drawn, *on_top, "</svg>"])


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
    labels = [_tick_label(at, step, with_date) for at in ticks]
    wide = max((text_width(label, TICK_PX) for label in labels), default=0.0)
    gap = frame.x(ticks[1]) - frame.x(ticks[0]) if len(ticks) > 1 else WIDTH
    every = next(k for k in range(1, len(ticks) + 2) if k * gap >= wide + 10)
    for n, (at, label) in enumerate(zip(ticks, labels, strict=True)):
        x = frame.x(at)
        parts.append(f'<line class="grid" x1="{x:.1f}" y1="{top:.1f}" x2="{x:.1f}" y2="{bottom + 4:.1f}"/>')
        if n % every or not wide / 2 + 2 <= x <= WIDTH - wide / 2 - 2:
            continue
        for y in (bottom + 17, top - 5) if frame.tall else (bottom + 17,):
            parts.append(f'<text class="tick" x="{x:.1f}" y="{y:.1f}" text-anchor="middle">{e(label)}</text>')
    caption = fit(_axis_caption(frame), WIDTH - LEFT - 8, AXIS_PX)
    parts.append(f'<text class="axis" x="{LEFT}" y="{bottom + 36:.1f}">{e(caption)}</text>')
    return parts


def _axis_caption(frame: _Frame) -> str:
    days = sorted({utc(t).date() for t in (frame.t0, frame.t1)})
    text = f"time (UTC, {days[0].isoformat()})" if len(days) == 1 else "time (UTC)"
    if frame.start < frame.t0:
        text += f" · the logs begin {_human(frame.t0 - frame.start)} earlier, at {stamp(frame.start, 0)}"
    return text


@record
class _Guide:
    at: datetime
    label: str
    cls: str
    line: bool = True  # a dashed line across the lanes; without it, the words alone, above the culprit


def _guides(d: Diagnosis, lanes: Sequence[_Lane]) -> list[_Guide]:
    """Words above the lanes: when and why the first death happened, when the symptoms began."""
    guides: list[_Guide] = []
    fd = d.verdict.first_death
    span = _death_span(fd) if fd is not None else None
    culprit = next((lane for lane in lanes if lane.report.fate is Fate.FIRST_DEATH), None)
    if fd is not None and (span is not None or culprit is not None):
        who = "the job" if fd.rank is None else f"rank {fd.rank}"
        if span is None:
            what = "died"
        elif fd.time_open:
            what = f"died at or {'after' if fd.time_open is TimeOpen.ABOVE else 'before'} {clock(span.earliest, False)}"
        else:
            what = f"died · {_short_when(span)}"
        if fd.cause is Cause.HANG:
            what = "stopped making progress" + ("" if span is None else f" after {clock(span.earliest, False)}")
        else:
            what += f" · {death_labels(fd)[1]}"
        summary = culprit.report.summary if culprit is not None else fd.detail
        label = f"{who} {what}" + (f" — {summary}" if summary else "")
        if fd.cause is Cause.HANG and summary.startswith("stopped making progress"):
            label = f"{who} {summary}"  # the rank's own summary already says when, in words
        at = span.earliest if span is not None else _lane_end(culprit)
        if at is not None:
            guides.append(_Guide(at, label, "death", span is not None))
    symptom = _first_symptom(d)
    if symptom is not None:
        at, what = symptom
        after = ""
        if span is not None and at >= utc(span.latest) and at > utc(span.earliest):
            after = f" ({_human(at - utc(span.earliest))} later)"
        guides.append(_Guide(at, f"{what} from {clock(at, False)}{after}", "symptom"))
    return guides


def _lane_end(lane: _Lane | None) -> datetime | None:
    if lane is None:
        return None
    return lane.marks[0].at if lane.marks else lane.report.last_seen


def _death_span(fd: FirstDeath) -> TimeSpan | None:
    """The first death's time as the picture draws it: an open end is only where the logs begin or end,
    so only the bounded one is drawn."""
    span = fd.time
    if span is None or fd.time_open is None:
        return span
    at = span.earliest if fd.time_open is TimeOpen.ABOVE else span.latest
    return TimeSpan(at, at)


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


def _guide_words(guide: _Guide, frame: _Frame) -> tuple[float, float, str, str]:
    """Where a guide's words go: beside its line where they fit, else shifted (and cut short) to stay
    inside the picture. Returns the words' left and right ends, the `x` to draw at and its anchor."""
    x = frame.x(guide.at)
    label = fit(guide.label, WIDTH - 2 * EDGE, GUIDE_PX, bold=True)
    width = text_width(label, GUIDE_PX, bold=True)
    if x + 5 + width <= WIDTH - EDGE:
        return x + 5, x + 5 + width, label, "start"
    if x - 5 - width >= EDGE:
        return x - 5 - width, x - 5, label, "end"
    left = max(EDGE, WIDTH - EDGE - width)
    return left, left + width, label, "start"


def _guide_parts(guides: Sequence[_Guide], frame: _Frame) -> list[str]:
    """One row of words per guide, then the lines: a line starts below every row whose words it would cross."""
    placed = [_guide_words(guide, frame) for guide in guides]
    words, lines = [], []
    for row, (guide, (left, right, label, anchor)) in enumerate(zip(guides, placed, strict=True)):
        y = _row_y(row)
        tx = left if anchor == "start" else right
        words.append(f'<text class="guide {guide.cls}" x="{tx:.1f}" y="{y}" text-anchor="{anchor}">{e(label)}</text>')
        if not guide.line:
            continue
        x = frame.x(guide.at)
        crossed = [r for r, (a, b, _, _) in enumerate(placed) if r >= row and a - 2 <= x <= b + 2]
        y1 = _row_y(max(crossed)) + 5 if crossed else y - 10
        lines.append(f'<line class="guide {guide.cls}" x1="{x:.1f}" y1="{y1}" x2="{x:.1f}" y2="{frame.bottom:.1f}"/>')
    return lines + words


def _row_y(row: int) -> int:
    return 14 + row * 17


# ---- how wide words are drawn (no font metrics here: an estimate that errs on the wide side) ----


def text_width(text: str, size: float, bold: bool = False) -> float:
    """An upper estimate of the drawn width, in user units, of `text` at `size` in a sans-serif."""
    units = 0.0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        if unicodedata.east_asian_width(ch) in ("W", "F"):
            units += 1.05
        elif ch in " .,:;!|'il" or ch == "·":
            units += 0.42
        elif ch.isupper() or ch in "mwMW@%&—":
            units += 0.92
        else:
            units += 0.68
    return units * size * (1.07 if bold else 1.0)


def fit(text: str, room: float, size: float, bold: bool = False) -> str:
    """`text`, cut short with an ellipsis until its estimated width fits `room`."""
    if text_width(text, size, bold) <= room:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if text_width(text[:mid] + "…", size, bold) <= room:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + "…"


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
    if frame.lane >= LABEL_GAP and last is not None:
        parts.append(_what(last, frame, cy))
    if labelled:
        name = f"rank {r.rank}" if frame.lane >= LABEL_GAP or i == 0 or culprit else str(r.rank)
        name = fit(name, LEFT - 8 - EDGE, LABEL_PX, bold=culprit)
        parts.append(f'<text class="rank" x="{LEFT - 8}" y="{cy + 4:.2f}" text-anchor="end">{e(name)}</text>')
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
    tx = max(frame.x(m.at) + (11 if m.shape else 6), frame.x(m.until or m.at) + 6)  # past its interval's band
    label = fit(m.label, WIDTH - EDGE - tx, LABEL_PX)
    return f'<text class="what" x="{tx:.1f}" y="{cy + 4:.2f}" text-anchor="start">{e(label)}</text>'


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
