"""Words, times and safe text shared by every renderer (no rich, no I/O)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from rankautopsy.model import (
    Cause,
    Diagnosis,
    Event,
    Evidence,
    Fate,
    FirstDeath,
    Outcome,
    Phase,
    RankReport,
    Role,
    TimeSpan,
    Verdict,
)
from rankautopsy.sources.sanitize import clean

# cause -> (label in the verdict, short label in the timeline)
CAUSE_LABELS: dict[Cause, tuple[str, str]] = {
    Cause.HOST_OOM: ("host RAM exhausted (OOM-killer)", "host OOM"),
    Cause.CUDA_OOM: ("GPU memory exhausted (CUDA out of memory)", "CUDA OOM"),
    Cause.PYTHON_EXCEPTION: ("uncaught Python exception", "exception"),
    Cause.SEGFAULT: ("segmentation fault (native crash)", "segfault"),
    Cause.ABORT: ("aborted (SIGABRT / C++ terminate)", "abort"),
    Cause.BUS_ERROR: ("bus error (SIGBUS, often /dev/shm too small)", "bus error"),
    Cause.CUDA_ERROR: ("CUDA error (illegal access, device assert, launch failure)", "CUDA error"),
    Cause.GPU_HARDWARE: ("GPU hardware fault (Xid, ECC, fell off the bus)", "GPU hardware"),
    Cause.NCCL_ERROR: ("NCCL / network error at this rank", "NCCL error"),
    Cause.KILLED: ("killed by a signal from an unknown sender", "killed"),
    Cause.SILENT_EXIT: ("exited with no message", "silent exit"),
    Cause.HANG: ("stopped making progress (hang)", "hang"),
    Cause.TIME_LIMIT: ("the scheduler's time limit ended the job", "time limit"),
    Cause.COLLECTIVE_TIMEOUT: ("collective operation timed out", "collective timeout"),
    Cause.PEER_LOST: ("lost the connection to a peer", "peer lost"),
    Cause.LAUNCHER_TEARDOWN: ("stopped by the launcher during teardown", "launcher teardown"),
    Cause.WATCHDOG_ABORT: ("aborted by the NCCL watchdog", "watchdog abort"),
    Cause.PROGRESS: ("training progress", "progress"),
    Cause.CONTEXT: ("context", "context"),
}

# fate -> (label, rich style of the terminal report)
FATE_LABELS: dict[Fate, tuple[str, str]] = {
    Fate.FIRST_DEATH: ("FIRST DEATH", "bold red"),
    Fate.DIED: ("died", "red"),
    Fate.COLLATERAL: ("collateral", "yellow"),
    Fate.TORN_DOWN: ("torn down", "yellow"),
    Fate.EXITED_CLEAN: ("exited cleanly", "green"),
    Fate.RUNNING: ("no end logged", ""),
    Fate.UNKNOWN: ("unknown", "dim"),
}

PHASE_LABELS: dict[Phase, str] = {
    Phase.STARTUP: "startup — before the first training step",
    Phase.TRAINING: "training",
    Phase.SHUTDOWN: "shutdown — training completed, the process died on exit",
}

MAX_RANGES = 8

_SURROGATE = re.compile(r"[\ud800-\udfff]")
_NOT_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


# ---- text --------------------------------------------------------------------------------------


def plain(text: str) -> str:
    """Log text made safe to show: no escapes or controls, no lone surrogates (unprintable)."""
    return _SURROGATE.sub("\ufffd", clean(text))


def xml_chars(text: str) -> str:
    """`plain` text without the code points XML 1.0 forbids (U+FFFE, U+FFFF, surrogates, controls)."""
    return _NOT_XML_CHAR.sub("", plain(text))


def one_line(text: str) -> str:
    return " ".join(text.split("\n"))


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def rank_ranges(ranks: Sequence[int]) -> str:
    """`[0, 1, 2, 4, 5]` -> `0-2, 4-5`; very fragmented sets are cut short with a count."""
    runs: list[list[int]] = []
    for r in sorted(set(ranks)):
        if runs and r == runs[-1][1] + 1:
            runs[-1][1] = r
        else:
            runs.append([r, r])
    parts = [str(a) if a == b else f"{a}-{b}" for a, b in runs]
    if len(parts) > MAX_RANGES:
        return ", ".join(parts[:MAX_RANGES]) + f", … ({len(set(ranks))} ranks)"
    return ", ".join(parts)


def where(ev: Evidence) -> str:
    return f"{ev.where.source}:{ev.where.line}"


def ruled_out_line(rank: int | None, why: str) -> str:
    return why if rank is None else f"rank {rank}: {why}"


def evidence_blocks(evidence: Sequence[Evidence]) -> list[list[Evidence]]:
    """Consecutive evidence lines of one source, together (a traceback is one block)."""
    blocks: list[list[Evidence]] = []
    for ev in evidence:
        if blocks and blocks[-1][0].where.source == ev.where.source:
            blocks[-1].append(ev)
        else:
            blocks.append([ev])
    return blocks


# ---- the verdict in words ------------------------------------------------------------------------


def headline(fd: FirstDeath, host: str | None = None, pid: int | None = None) -> str:
    """`Rank 2 (node02, pid 2002) died first: uncaught Python exception`; the caller makes `host` safe."""
    label = CAUSE_LABELS[fd.cause][0]
    if fd.rank is None and fd.cause is Cause.TIME_LIMIT:
        return f"The job ended first: {label}"
    who = "A process of unknown rank" if fd.rank is None else f"Rank {fd.rank}"
    ids = [host] if host else []
    ids += [] if pid is None else [f"pid {pid}"]
    if ids:
        who += f" ({', '.join(ids)})"
    verb = "is the hang culprit" if fd.cause is Cause.HANG else "died first"
    return f"{who} {verb}: {label}"


OUTCOME_LABELS: dict[Outcome, tuple[str, str]] = {
    Outcome.CLEAN: ("clean", "Clean: every rank finished, no failure"),
    Outcome.NO_FAILURE: ("no failure seen", "No failure seen, but not every rank logged its end"),
    Outcome.UNDETERMINED: ("undetermined", "Undetermined: the job failed, but the first death cannot be named"),
    Outcome.FIRST_DEATH: ("first death", "First death"),
    Outcome.HANG: ("hang culprit", "Hang culprit"),
}


def named(v: Verdict) -> FirstDeath | None:
    """The first death or hang culprit the verdict names; an undetermined cause without a rank is not one."""
    return v.first_death if v.outcome in (Outcome.FIRST_DEATH, Outcome.HANG) else None


def is_clean(v: Verdict) -> bool:
    return v.outcome in (Outcome.CLEAN, Outcome.NO_FAILURE)


def outcome_lines(v: Verdict) -> list[str]:
    """What a verdict without a named culprit knows, and what would settle it."""
    lines = list(v.reasoning)
    if v.outcome is Outcome.UNDETERMINED:
        if v.first_death is not None:
            lines.insert(0, f"cause seen: {CAUSE_LABELS[v.first_death.cause][1]}, rank unknown")
        if v.not_first:
            lines.append(f"did not die first: rank(s) {rank_ranges(v.not_first)}")
        lines += [f"fetch next: {step}" for step in v.fetch_next]
        lines += list(v.notes)
    return lines or ["There were failures, but none could be attributed to a first death."]


def summary_line(v: Verdict) -> str:
    """The verdict in one line: `rank 3 died first: host OOM (high)`."""
    fd = named(v)
    if fd is None:
        return f"{OUTCOME_LABELS[v.outcome][1]} ({v.confidence.value})"
    short = CAUSE_LABELS[fd.cause][1]
    if fd.rank is None:
        return f"the job ended first: {short} ({v.confidence.value})"
    verb = "is the hang culprit" if v.outcome is Outcome.HANG else "died first"
    return f"rank {fd.rank} {verb}: {short} ({v.confidence.value})"


def rule_text(fd: FirstDeath) -> str:
    """The rule of the decisive line, or how the culprit was inferred when no line decides it."""
    if fd.rule is not None:
        return fd.rule
    return _METHODS.get(fd.method, fd.method)


_METHODS = {
    "sequence": "inferred: behind the others in NCCL's work sequence",
    "missing": "inferred: the rank the others waited for",
    "lagging": "inferred: its progress lags the others'",
    "named": "inferred: the waiting ranks' messages name it",
    "unattributed": "seen on a line tied to no rank",
    "tie": "every rank in the tie ended the same way",
}


def decisive_evidence(d: Diagnosis) -> Evidence | None:
    """The evidence line the verdict rests on: the first death's cause event, else its first evidence."""
    fd = d.verdict.first_death
    if fd is None or not fd.evidence:
        return None
    kept = {ev.where: ev for ev in fd.evidence}
    for e in d.events:
        if e.role is Role.CAUSE and e.rule == fd.rule and e.rank == fd.rank and e.where in kept:
            return kept[e.where]
    return fd.evidence[0]


def rank_events(d: Diagnosis, indices: Iterable[int]) -> list[Event]:
    return [d.events[i] for i in indices if 0 <= i < len(d.events)]


# ---- times -----------------------------------------------------------------------------------


def utc(at: datetime) -> datetime:
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def stamp(at: datetime, digits: int) -> str:
    """`YYYY-MM-DD HH:MM:SS` with `digits` (0-6) decimals of the second, rounded."""
    step = 10 ** (6 - digits)
    at = utc(at)
    at += timedelta(microseconds=(at.microsecond + step // 2) // step * step - at.microsecond)
    text = f"{at:%Y-%m-%d %H:%M:%S}"
    return f"{text}.{at.microsecond // step:0{digits}d}" if digits else text


def _seconds(delta: timedelta) -> tuple[str, int]:
    """`delta` in seconds with at most 3 decimals, and the number of decimals used."""
    text = f"{delta.total_seconds():.3f}".rstrip("0").rstrip(".")
    text = "0.001" if text == "0" else text
    return text, len(text.partition(".")[2])


def when_text(span: TimeSpan | None) -> str:
    """A point, a point with its error (±), or an interval, in UTC."""
    if span is None:
        return "unknown (no timestamp on the evidence)"
    width = span.latest - span.earliest
    if width <= timedelta(0):
        return f"{stamp(span.earliest, 3 if utc(span.earliest).microsecond else 0)} UTC"
    if width <= timedelta(minutes=2):
        half, digits = _seconds(width / 2)
        return f"{stamp(span.mid, digits)} UTC (±{half} s)"
    first, last = stamp(span.earliest, 0), stamp(span.latest, 0)
    if first[:10] == last[:10]:
        last = last[11:]
    return f"between {first} and {last} UTC"


def clock(at: datetime | None, with_date: bool) -> str:
    if at is None:
        return "?"
    at = utc(at)
    text = f"{at:%H:%M:%S}.{at.microsecond // 1000:03d}"
    return f"{at:%m-%d} {text}" if with_date else text


def all_times(d: Diagnosis) -> Iterable[datetime]:
    yield from (e.time.earliest for e in d.events if e.time is not None)
    yield from (r.last_seen for r in d.ranks if r.last_seen is not None)


def spans_days(d: Diagnosis) -> bool:
    return len({utc(t).date() for t in all_times(d)}) > 1


# ---- many ranks --------------------------------------------------------------------------------


@dataclass
class RankGroup:
    """Ranks that met the same fate with the same summary (for reports of hundreds of ranks)."""

    fate: Fate
    summary: str
    ranks: list[int] = field(default_factory=list)
    hosts: set[str] = field(default_factory=set)
    seen: list[datetime] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)

    def add(self, r: RankReport) -> None:
        self.ranks.append(r.rank)
        self.hosts.add(r.host or "?")
        self.seen.extend([r.last_seen] if r.last_seen else [])
        self.steps.extend([] if r.last_step is None else [r.last_step])

    def hosts_text(self) -> str:
        return plain(min(self.hosts)) if len(self.hosts) == 1 else f"{len(self.hosts):,} hosts"

    def seen_text(self, with_date: bool) -> str:
        seen = sorted({clock(t, with_date) for t in self.seen})
        if not seen:
            return "?"
        return seen[0] + (f" … {seen[-1]}" if len(seen) > 1 else "")

    def steps_text(self) -> str:
        steps = sorted(set(self.steps))
        if not steps:
            return "?"
        return str(steps[0]) + (f"-{steps[-1]}" if len(steps) > 1 else "")


def group_ranks(ranks: Iterable[RankReport]) -> list[RankGroup]:
    """One group per (fate, summary), the first death's group first, then in rank order."""
    groups: dict[tuple[Fate, str], RankGroup] = {}
    for r in sorted(ranks, key=lambda r: (r.fate is not Fate.FIRST_DEATH, r.rank)):
        groups.setdefault((r.fate, r.summary), RankGroup(r.fate, r.summary)).add(r)
    return list(groups.values())
