"""Words, times and safe text shared by every renderer (no rich, no I/O)."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from rankautopsy import recache, signals
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
    TimeOpen,
    TimeSpan,
    Verdict,
)
from rankautopsy.sources.sanitize import clean

# cause -> (label in the verdict, short label in the timeline)
CAUSE_LABELS: dict[Cause, tuple[str, str]] = {
    Cause.HOST_OOM: ("out of host memory (OOM-killer)", "host OOM"),
    Cause.CUDA_OOM: ("GPU memory exhausted (CUDA out of memory)", "CUDA OOM"),
    Cause.PYTHON_EXCEPTION: ("uncaught Python exception", "exception"),
    Cause.SEGFAULT: ("segmentation fault (native crash)", "segfault"),
    Cause.ABORT: ("aborted (SIGABRT, C++ terminate, MPI abort)", "abort"),
    Cause.BUS_ERROR: ("bus error (SIGBUS, often /dev/shm too small)", "bus error"),
    Cause.CUDA_ERROR: ("CUDA error (illegal access, device assert, launch failure)", "CUDA error"),
    Cause.GPU_HARDWARE: ("GPU hardware fault (Xid, ECC, fell off the bus)", "GPU hardware"),
    Cause.NCCL_ERROR: ("NCCL / network error at this rank", "NCCL error"),
    Cause.KILLED: ("killed by a signal from an unknown sender", "killed"),
    Cause.SILENT_EXIT: ("exited with no error message seen", "silent exit"),
    Cause.HANG: ("stopped making progress (hang)", "hang"),
    Cause.TIME_LIMIT: ("the scheduler's time limit ended the job", "time limit"),
    Cause.COLLECTIVE_TIMEOUT: ("collective operation timed out", "collective timeout"),
    Cause.PEER_LOST: ("lost the connection to a peer", "peer lost"),
    Cause.LAUNCHER_TEARDOWN: ("stopped by the launcher during teardown", "launcher teardown"),
    Cause.WATCHDOG_ABORT: ("aborted by the NCCL watchdog", "watchdog abort"),
    Cause.PROGRESS: ("training progress", "progress"),
    Cause.CONTEXT: ("context", "context"),
}


def death_labels(fd: FirstDeath) -> tuple[str, str]:
    """The cause's labels (`CAUSE_LABELS`), a native crash by another signal than SIGSEGV named for it."""
    number = signals.other_native_crash(fd.detail) if fd.cause is Cause.SEGFAULT else None
    if number is None:
        return CAUSE_LABELS[fd.cause]
    return f"native crash ({signals.crash_words(number)})", signals.signal_name(number)


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

_SURROGATE = recache.compile(r"[\ud800-\udfff]")
# What XML 1.0 forbids, as the complement of its Char production written out: the negated class
# takes ~6 ms of every start to compile, this one ~0.1 ms.
NOT_XML_CHAR = recache.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


# ---- text --------------------------------------------------------------------------------------


def plain(text: str) -> str:
    """Log text made safe to show: no escapes or controls, no lone surrogates (unprintable)."""
    return _SURROGATE.sub("\ufffd", clean(text))


def xml_chars(text: str) -> str:
    """`plain` text without the code points XML 1.0 forbids (U+FFFE, U+FFFF, surrogates, controls)."""
    return NOT_XML_CHAR.sub("", plain(text))


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
    label = death_labels(fd)[0]
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


_HUNG = ("hang", "Hang: the job stopped making progress, but no culprit can be named")


def named(v: Verdict) -> FirstDeath | None:
    """The first death or hang culprit the verdict names; an undetermined cause without a rank is not one,
    nor a hang without a culprit."""
    if v.outcome is Outcome.HANG and v.first_death is not None and v.first_death.rank is None:
        return None
    return v.first_death if v.outcome in (Outcome.FIRST_DEATH, Outcome.HANG) else None


def outcome_label(v: Verdict) -> tuple[str, str]:
    """The outcome's short label and its words (`OUTCOME_LABELS`), for a hang without a culprit its own."""
    return _HUNG if v.outcome is Outcome.HANG and named(v) is None else OUTCOME_LABELS[v.outcome]


def is_clean(v: Verdict) -> bool:
    return v.outcome in (Outcome.CLEAN, Outcome.NO_FAILURE)


def outcome_lines(v: Verdict) -> list[str]:
    """What a verdict without a named culprit knows, and what would settle it."""
    lines = list(v.reasoning)
    if v.outcome in (Outcome.UNDETERMINED, Outcome.HANG):
        if v.first_death is not None and v.outcome is Outcome.UNDETERMINED:
            fd = v.first_death
            where = ", ".join(x for x in (f"pid {fd.pid}" if fd.pid else "", f"on {fd.host}" if fd.host else "") if x)
            lines.insert(0, f"cause seen: {death_labels(fd)[1]}, rank unknown" + (f" ({where})" if where else ""))
        if v.not_first:
            verb = "did not die first" if v.outcome is Outcome.UNDETERMINED else "reported waiting, not the culprit"
            lines.append(f"{verb}: rank(s) {rank_ranges(v.not_first)}")
        lines += [f"fetch next: {step}" for step in v.fetch_next]
        lines += list(v.notes)
    return lines or ["There were failures, but none could be attributed to a first death."]


_SHORT_OUTCOMES = {
    Outcome.CLEAN: "clean: every rank finished",
    Outcome.NO_FAILURE: "no failure seen, not every rank logged its end",
    Outcome.UNDETERMINED: "undetermined: the first death cannot be named",
    Outcome.HANG: "hang: the job stopped making progress, no culprit named",
}


def summary_line(v: Verdict) -> str:
    """The verdict in one line: `rank 3 died first: host OOM (high)`."""
    fd = named(v)
    if fd is None and v.outcome is Outcome.UNDETERMINED and v.first_death is not None:
        return f"undetermined: {death_labels(v.first_death)[1]} on an unknown rank ({v.confidence.value})"
    if fd is None:
        return f"{_SHORT_OUTCOMES.get(v.outcome, OUTCOME_LABELS[v.outcome][1])} ({v.confidence.value})"
    short = death_labels(fd)[1]
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
    "excerpt": "the lines begin inside it, and other ranks failed too",
    "stalled": "a process was alive and stuck, and made no progress after",
    "all_waited": "every rank of the job timed out waiting in a collective",
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


def decisive_line(d: Diagnosis) -> Evidence | None:
    """The evidence line that says what happened: the one holding the first death's detail (a traceback's
    `Type: message` line, not its header), else `decisive_evidence`."""
    fd = d.verdict.first_death
    detail = fd.detail.strip() if fd is not None else ""
    if fd is not None and detail:
        for ev in fd.evidence:
            if detail in ev.text:
                return ev
    return decisive_evidence(d)


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


def when_text(span: TimeSpan | None, open_end: TimeOpen | None = None) -> str:
    """A point, a point with its error (±), an interval, or a bound with its other end open
    (`FirstDeath.time_open`), in UTC."""
    if span is None:
        return "unknown (no stamped line bounds it)"
    if open_end is TimeOpen.ABOVE:
        return f"at or after {_exact(span.earliest)} UTC"
    if open_end is TimeOpen.BELOW:
        return f"at or before {_exact(span.latest)} UTC"
    width = span.latest - span.earliest
    if width <= timedelta(0):
        return f"{_exact(span.earliest)} UTC"
    if width <= timedelta(minutes=2):
        half, digits = _seconds(width / 2)
        return f"{stamp(span.mid, digits)} UTC (±{half} s)"
    first, last = stamp(span.earliest, 0), stamp(span.latest, 0)
    if first[:10] == last[:10]:
        last = last[11:]
    return f"between {first} and {last} UTC"


def _exact(at: datetime) -> str:
    """A time as its stamp gave it: milliseconds where it has a fraction, whole seconds where not."""
    return stamp(at, 3 if utc(at).microsecond else 0)


def death_when(fd: FirstDeath, after: str = "") -> str:
    """When the first death happened, as `when_text` says it; with `after` (a word such as "at") put
    before the points it reads well before, not before "between", "at or after" or "at or before"."""
    text = when_text(fd.time, fd.time_open)
    return f"{after} {text}" if after and fd.time is not None and text[0].isdigit() else text


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


# ---- what each rank did, in groups of the same story -------------------------------------------

_FATE_ORDER = {fate: n for n, fate in enumerate(Fate)}


def exception_line(e: Event) -> str | None:
    """`Type: message` of an event that carries an exception (a traceback's point, not its header)."""
    kind = e.facts.get("exc_type")
    if not kind:
        return None
    message = e.facts.get("exc_msg", "").strip()
    return f"{kind}: {message}" if message else kind


def rule_title(d: Diagnosis, e: Event) -> str:
    """What the line is, in the words of the rule that classified it (its id when no title is known)."""
    return d.rule_titles.get(e.read_by, e.read_by)


def defining_event(d: Diagnosis, r: RankReport) -> Event | None:
    """The event that tells this rank's fate: its own cause, the symptom it waited on, its teardown."""
    if r.fate in (Fate.FIRST_DEATH, Fate.DIED):
        roles = (Role.CAUSE,)
    elif r.fate in (Fate.COLLATERAL, Fate.TORN_DOWN):
        roles = (Role.SYMPTOM,)
    else:
        return None
    own = [e for e in rank_events(d, r.events) if e.role in roles and e.rank == r.rank]
    if not own:
        return None
    teardown = r.fate is Fate.TORN_DOWN
    return min(own, key=lambda e: (teardown != (e.cause is Cause.LAUNCHER_TEARDOWN), _time_key(e)))


def _time_key(e: Event) -> datetime:
    return utc(e.time.earliest) if e.time is not None else datetime.max.replace(tzinfo=UTC)


def story(d: Diagnosis, e: Event, fate: Fate) -> tuple[str, str]:
    """(`peer lost`, `Gloo peer closed the connection`): the cause in short, and the rule's title."""
    # a traceback's own rule says only "traceback": the rule that classified it, or its type, says more
    classified = bool(e.facts.get("classified_by"))
    detail = rule_title(d, e) if classified else e.facts.get("exc_type") or rule_title(d, e)
    if fate is Fate.TORN_DOWN and e.cause is Cause.LAUNCHER_TEARDOWN:
        return "", detail  # "torn down: launcher teardown" would say it twice
    return CAUSE_LABELS[e.cause][1], detail


@dataclass
class FateGroup:
    """Ranks with the same fate and the same story, whatever their times, steps and hosts."""

    fate: Fate
    cause: str  # the defining event's cause, in short ("" when the fate says it)
    detail: str  # its rule's title
    ranks: list[int] = field(default_factory=list)
    hosts: set[str] = field(default_factory=set)
    times: list[datetime] = field(default_factory=list)  # of each rank's defining event
    seen: list[datetime] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)
    exitcodes: set[int | None] = field(default_factory=set)

    def add(self, r: RankReport, e: Event | None) -> None:
        self.ranks.append(r.rank)
        self.hosts.add(r.host or "?")
        if e is not None and e.time is not None:
            self.times.append(e.time.earliest)
        self.seen.extend([r.last_seen] if r.last_seen else [])
        self.steps.extend([] if r.last_step is None else [r.last_step])
        self.exitcodes.add(r.exitcode)

    def label(self) -> str:
        return f"rank{'s' if len(self.ranks) > 1 else ''} {rank_ranges(self.ranks)}"

    def text(self, with_date: bool, many_hosts: bool) -> str:
        """`collateral: peer lost at 09:24:12, step 5, exit code -15 — Gloo peer closed the connection`:
        the facts a reader compares first, the rule's words last (they are the first cut at 80 columns)."""
        words = FATE_LABELS[self.fate][0].lower() + (f": {self.cause}" if self.cause else "")
        if self.times:
            words += f" at {_between(self.times, with_date)}"
        elif self.seen:
            words += f", last seen {_between(self.seen, with_date)}"
        steps = sorted(set(self.steps))
        if steps:
            words += f", step {steps[0]}" if len(steps) == 1 else f", steps {steps[0]}-{steps[-1]}"
        code = next(iter(self.exitcodes)) if len(self.exitcodes) == 1 else None
        if code is not None and not (code == 0 and self.fate is Fate.EXITED_CLEAN):
            words += f", exit code {code}"
        if many_hosts:
            words += f", on {plain(min(self.hosts))}" if len(self.hosts) == 1 else f", on {len(self.hosts):,} hosts"
        return words + (f" — {self.detail}" if self.detail else "")


def _between(times: Sequence[datetime], with_date: bool) -> str:
    seen = sorted({hms(t, with_date) for t in times})
    dash = " – " if with_date else "-"  # `12-04 05:59:20-12-08 03:12:50` reads as four dates
    return seen[0] if len(seen) == 1 else f"{seen[0]}{dash}{seen[-1]}"


def hms(at: datetime, with_date: bool) -> str:
    at = utc(at)
    return f"{at:%m-%d %H:%M:%S}" if with_date else f"{at:%H:%M:%S}"


def fate_groups(d: Diagnosis) -> list[FateGroup]:
    """One group per fate and story: the first death's first, then by fate and lowest rank."""
    groups: dict[tuple[Fate, str, str], FateGroup] = {}
    for r in sorted(d.ranks, key=lambda r: (_FATE_ORDER[r.fate], r.rank)):
        e = defining_event(d, r)
        cause, detail = story(d, e, r.fate) if e is not None else ("", "")
        groups.setdefault((r.fate, cause, detail), FateGroup(r.fate, cause, detail)).add(r, e)
    return list(groups.values())


def fate_counts(ranks: Iterable[RankReport]) -> str:
    """`2 collateral, 1 torn down`: every rank but the culprit, by fate."""
    counts: dict[Fate, int] = {}
    for r in ranks:
        if r.fate is not Fate.FIRST_DEATH:
            counts[r.fate] = counts.get(r.fate, 0) + 1
    ordered = sorted(counts.items(), key=lambda item: _FATE_ORDER[item[0]])
    return ", ".join(f"{n:,} {FATE_LABELS[fate][0].lower()}" for fate, n in ordered)


# ---- remediation layers ------------------------------------------------------------------------

FIX_CAUSE = "Fix the cause: "  # the label the diagnosis puts on the cause-specific steps


def remediation_layers(v: Verdict) -> tuple[list[str], list[str]]:
    """The cause-specific steps (their label removed), and the general ones (timeouts, detection)."""
    own = [step.removeprefix(FIX_CAUSE) for step in v.remediation if step.startswith(FIX_CAUSE)]
    return own, [step for step in v.remediation if not step.startswith(FIX_CAUSE)]


# ---- paths -------------------------------------------------------------------------------------


def common_dir(d: Diagnosis) -> str:
    """The deepest directory holding every input read (`""` when they share none worth naming)."""
    paths = [i.path for i in d.inputs if i.path and not i.path.startswith(("<", "-"))]
    if not paths:
        return ""
    try:
        common = os.path.commonpath([os.path.dirname(p) or "." for p in paths])
    except ValueError:  # absolute and relative paths mixed
        return ""
    return "" if common in (".", "", os.sep) else common


def relative(path: str, base: str) -> str:
    prefix = base.rstrip(os.sep) + os.sep
    return path[len(prefix) :] if base and path.startswith(prefix) else path
