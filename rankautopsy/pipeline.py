"""diagnose(): the only module that knows the order of the stages. `collect` is the map step (sources and
scan, on the node where the logs are), `conclude` the reduce step (timeline, verdict, report)."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import field, replace
from datetime import UTC, date, datetime, timedelta, tzinfo

from rankautopsy import recache
from rankautopsy.diagnosis.assemble import build_events, classify
from rankautopsy.diagnosis.report import rank_reports, remediation_for
from rankautopsy.diagnosis.timeline import build_timeline
from rankautopsy.diagnosis.verdict import decide
from rankautopsy.events import Collected, Part
from rankautopsy.events.file import EventFileError, is_event_file
from rankautopsy.events.file import read as read_events
from rankautopsy.model import (
    Cause,
    Diagnosis,
    Effect,
    Event,
    Input,
    Location,
    Role,
    SkippedInput,
    StreamKind,
    TimeSpan,
    Verdict,
)
from rankautopsy.numbers import read_int
from rankautopsy.records import record
from rankautopsy.rulepacks.loader import load_rules
from rankautopsy.rulepacks.remediation import load_remediation
from rankautopsy.scan.engine import Engine, make_engine
from rankautopsy.scan.matcher import CompiledRule, compile_rule, compile_rules
from rankautopsy.scan.parallel import run_all, spare_core, worker_count
from rankautopsy.scan.selection import DISTINCT_CAUGHT, read_stream
from rankautopsy.sources.clocks import ClockContext, live_boot_time, live_uptime, local_zone, yearless_stamp
from rankautopsy.sources.discover import Source, damaged, discover
from rankautopsy.sources.lines import Stream, last_signs
from rankautopsy.sources.prefixes import Taught
from rankautopsy.sources.read import LONG_LINE, Data, read_head
from rankautopsy.sources.sanitize import clean, without_surrogates

DEFAULT_SKEW = timedelta(seconds=2)

YearOf = tuple[int, date | None]  # the year of stamps without one, and the latest day they may mean


@record(kw_only=True)
class Options:
    paths: Sequence[str]
    dmesg: Sequence[str] = ()
    rules: Sequence[str] = ()
    builtin_rules: bool = True
    boot_time: datetime | None = None
    tz: tzinfo = field(default_factory=local_zone)
    skew: timedelta = DEFAULT_SKEW
    stdin: Data | None = None
    jobs: int | None = None  # worker processes (None: $RANKAUTOPSY_JOBS, else the cores for big inputs)
    engine: str | None = None  # one of scan.engine.ENGINES (None: $RANKAUTOPSY_ENGINE, else the fastest)
    follow: bool = False  # follow symlinks that leave the given paths (--follow)
    planned: Callable[[Sequence[int]], None] | None = None  # told the byte sizes of the sources to read
    progress: Callable[[int], None] | None = None  # told the bytes of each source as it is read
    host: str | None = None  # scan on a node: its name, for its kernel lines and piped-in input
    live_kernel: bool = False  # scan on a node: its kernel logs are this host's own (raw stamps use its boot time)


def diagnose(options: Options) -> Diagnosis:
    """The map step and the reduce step in one process: `conclude(collect(options), options)`."""
    rules = _load(options)
    return _conclude(_collect(options, rules), options, rules[0])


def collect(options: Options) -> Collected:
    """The map step: every input found, read and scanned into its events and last signs of life."""
    return _collect(options, _load(options))


def conclude(collected: Collected, options: Options) -> Diagnosis:
    """The reduce step: the timeline, the verdict and the report over what one or more nodes collected."""
    return _conclude(collected, options, _load(options)[0])


_Rules = tuple[list[CompiledRule], tuple[Taught, ...]]


def _load(options: Options) -> _Rules:
    from pathlib import Path

    loaded = load_rules([Path(p) for p in options.rules], builtin=options.builtin_rules)
    rules = compile_rules(r for r in loaded if Effect.PREFIX not in r.effects)
    taught = tuple(Taught(r.id, compile_rule(r).pattern, r.builtin) for r in loaded if Effect.PREFIX in r.effects)
    return rules, taught


def _collect(options: Options, loaded: _Rules) -> Collected:
    rules, taught = loaded
    sources, skipped = discover(options.paths, options.dmesg, options.stdin, follow=options.follow)
    sources = [_on_host(s, options.host) for s in sources]
    files = _event_files(sources, skipped)
    raw = [s for s in sources if id(s) not in files]
    scanned = dict(zip(map(id, raw), _scan_all(raw, rules, taught, options, _year_hint(raw)), strict=True))
    out = Collected(skipped=skipped)
    for source in sources:
        if id(source) in files:
            out.add(files[id(source)])
            continue
        out.year = out.year if out.year is not None else source.year
        out.parts.append(_part(source, scanned[id(source)], rules, options.host))
    return out.apart() if files else out


def _part(source: Source, result: Scanned | None, rules: list[CompiledRule], host: str | None) -> Part:
    found = Input(path=source.display, kind=source.kind, rank=source.where.rank, host=host, lines=1)
    if result is None:
        return Part(input=found, events=_on_node(_error_file_events(source, rules), source, host))
    return Part(
        input=replace(found, lines=result.stream.lines_read),
        events=_on_node(result.events, source, host),
        stream=result.stream,
        notes=result.notes,
        problem=result.problem if not source.problem else None,  # else discovery named it already
    )


def _on_host(source: Source, host: str | None) -> Source:
    """Piped in on a node: named for the node, so that many nodes' stdin stay apart."""
    return replace(source, display=f"<stdin on {host}>") if host and source.display == STDIN_NAME else source


def _on_node(events: list[Event], source: Source, host: str | None) -> list[Event]:
    """Scanned on a node: its kernel lines, which name no host, are that node's."""
    if host is None or source.kind is not StreamKind.KERNEL:
        return events
    return [e if e.host is not None else replace(e, host=host) for e in events]


def _event_files(sources: Sequence[Source], skipped: list[SkippedInput]) -> dict[int, Collected]:
    """The inputs that are event files (by their first line, whatever their name), read. A bad one is
    skipped and named when anything else is readable, else it is the error."""
    found: dict[int, Collected] = {}
    bad: list[EventFileError] = []
    for source in sources:
        if not _is_event_file(source):
            continue
        try:
            found[id(source)] = read_events(source.path, source.data, source.display)
        except EventFileError as exc:
            bad.append(exc)
            found[id(source)] = Collected()
    if bad and len(bad) == len(sources):
        raise bad[0]
    skipped.extend(SkippedInput(exc.path or "", exc.reason) for exc in bad)
    return found


def _conclude(collected: Collected, options: Options, rules: list[CompiledRule]) -> Diagnosis:
    parts = collected.parts
    year, not_after = (collected.year, None) if collected.year is not None else today()
    streams = [p.stream for p in parts if p.stream is not None]
    tl = build_timeline(streams, [p.events for p in parts], ClockContext(options.tz, year, not_after=not_after))
    tl.notes.extend(n for p in parts for n in p.notes if p.input.path not in tl.twinned or n != _untimed(p.input.path))
    if collected.year is None and (undated := _yearless_stamp(tl.events, parts)):
        tl.notes.append(
            f"no line gives the year: stamps such as `{undated}` have none and are dated in the year up to today "
            f"({year}, or {year - 1} for a day after today's)"
        )
    findings = decide(tl, options.skew)
    verdict = Verdict(
        outcome=findings.outcome,
        first_death=findings.first,
        confidence=findings.confidence,
        reasoning=tuple(findings.reasoning),
        ruled_out=tuple(findings.ruled_out),
        remediation=remediation_for(
            findings.first,
            {c.rule.id: c.rule for c in rules},
            load_remediation(),
            findings.launch_failed.read_by if findings.launch_failed is not None else None,
        ),
        notes=tuple(findings.notes),
        caps=tuple(findings.caps),
        unattributed=tuple(findings.unattributed),
        not_first=tuple(findings.not_first),
        fetch_next=tuple(dict.fromkeys(findings.fetch_next)),
    )
    problems = [SkippedInput(p.input.path, p.problem) for p in parts if p.problem]
    return Diagnosis(
        verdict=verdict,
        ranks=rank_reports(tl, findings),
        events=tuple(tl.events),
        inputs=tuple(p.input for p in parts),
        skipped=(*collected.skipped, *problems),
        rule_titles={c.rule.id: c.rule.title for c in rules},
    )


STDIN_NAME = "<stdin>"


def _yearless_stamp(events: Sequence[Event], parts: Sequence[Part]) -> str | None:
    """The first stamp of an event whose date came from no year of its own, else None."""
    kernel = {p.input.path for p in parts if p.input.kind is StreamKind.KERNEL}
    stamps = (yearless_stamp(e.text, e.where.source in kernel) for e in events if e.stamped)
    return next((stamp for stamp in stamps if stamp), None)


def _is_event_file(source: Source) -> bool:
    if source.kind is StreamKind.ERROR_JSON:
        return False
    try:
        return is_event_file(read_head(source.path, source.data, 64).data)
    except OSError:  # gone since it was found: the scan says so
        return False


def _year_hint(sources: Sequence[Source]) -> YearOf:
    """The year of stamps without one, from the first input that gives one; else today's, with the
    latest day such a stamp may mean (tomorrow: a host's clock or zone may run a day ahead)."""
    return next(((s.year, None) for s in sources if s.year is not None), None) or today()


def today() -> tuple[int, date]:
    """This year, and the latest day a stamp without a year may mean in it."""
    now = datetime.now(UTC)
    return now.year, (now + timedelta(days=1)).date()


@record
class Scanned:
    """What the timeline needs of one stream."""

    stream: Stream  # only each channel's latest timestamped line (the stream's last signs of life)
    events: list[Event]
    notes: list[str]
    problem: str | None  # why the input was not read whole (a skipped input's reason)


@record
class _Job:
    source: Source
    ctx: ClockContext
    note: str | None  # how its clock was set


def _scan_all(
    sources: Sequence[Source],
    rules: list[CompiledRule],
    taught: tuple[Taught, ...],
    options: Options,
    year: YearOf,
) -> list[Scanned | None]:
    """Each stream read and turned into events, in worker processes when the input is big."""
    jobs = [_job(s, options, year) for s in sources if s.kind is not StreamKind.ERROR_JSON]
    engine = make_engine(rules, options.engine, _scanned_bytes(jobs))
    engine.taught = taught
    engine.prepare({job.source.kind for job in jobs})
    local = [job for job in jobs if job.source.live]  # piped in: already in this process
    files = [job for job in jobs if not job.source.live]  # on disk (an archive's members spooled there)
    workers = worker_count([job.source.size for job in files], options.jobs)
    work = functools.partial(_scan_job, rules=rules, engine=engine, spare=spare_core(workers))
    if options.planned is not None:
        options.planned([job.source.size for job in jobs])
    told = None if options.progress is None else functools.partial(_told, options.progress)
    done = dict(zip(map(id, files), run_all(files, work, workers, _size, told), strict=True))
    alone = functools.partial(work, spare=spare_core(1))  # piped in: scanned here, after the workers
    done.update((id(job), run_all([job], alone, 1, _size, told)[0]) for job in local)
    by_source = {id(job.source): done[id(job)] for job in jobs}
    return [by_source.get(id(s)) for s in sources]


def _scanned_bytes(jobs: Sequence[_Job]) -> int | None:
    """The bytes the scan will read, when the sizes on disk tell (not for a compressed input)."""
    return None if any(job.source.compressed for job in jobs) else sum(job.source.size for job in jobs)


def _size(job: _Job) -> int:
    return job.source.size


def _told(progress: Callable[[int], None], job: _Job) -> None:
    progress(job.source.size)


def _job(source: Source, options: Options, year: YearOf) -> _Job:
    boot, note = options.boot_time, None
    if boot is None and (source.live or options.live_kernel) and source.kind is StreamKind.KERNEL:
        boot = _live_boot(source)
        if boot is not None:
            note = f"{source.display}: raw kernel stamps placed with this host's boot time {boot:%Y-%m-%d %H:%M:%S} UTC"
    return _Job(source, ClockContext(tz=options.tz, year=year[0], boot_time=boot, not_after=year[1]), note)


def _scan_job(job: _Job, rules: list[CompiledRule], engine: Engine, spare: bool = False) -> Scanned:
    """One stream's events: read it once, build the events of its hits, thin its progress."""
    try:
        read = read_stream(job.source, job.ctx, engine, spare_core=spare)
    except OSError as exc:  # gone or unreadable since it was found
        return Scanned(Stream(job.source), [], [], f"unreadable: {exc.strerror or exc}")
    notes = [job.note] if job.note else []
    notes += [f"rule {r} exceeded its time bound on {job.source.display} and was skipped there" for r in read.timed_out]
    notes += _kernel_notes(read.stream, job.ctx)
    if read.clipped:
        notes.append(
            f"{job.source.display}: {read.clipped} line(s) longer than {LONG_LINE // 2**20} MiB (a progress bar"
            " redrawn with \\r?) were read as their head and their last \\r-separated piece"
        )
    if read.caught_unread:
        notes.append(
            f"{job.source.display}: {read.caught_unread:,} more caught Python tracebacks, each followed by the rank's"
            f" progress, were counted, not read (past the first {DISTINCT_CAUGHT} distinct ones of a process)"
        )
    events = _thin_progress(build_events(read.stream, read.hits, rules))
    if job.source.host is not None:  # `--dmesg HOST=FILE`: what the user says beats a name's guess
        events = [e if e.host else replace(e, host=job.source.host) for e in events]
    problem = damaged(read.problem) if read.problem else None
    return Scanned(last_signs(read.stream), events, notes, problem)


_MONO = recache.compile(r"^(?:<\d+>)?\[\s*(\d+\.\d+)\]", re.MULTILINE)


def _live_boot(source: Source) -> datetime | None:
    """Piped in live: the stamps are this host's if none is later than its uptime."""
    stamps = [float(m) for m in _MONO.findall(source.read_text())]
    uptime = live_uptime()
    if not stamps or uptime is None or max(stamps) > uptime + 1:
        return None
    return live_boot_time()


def _kernel_notes(stream: Stream, ctx: ClockContext) -> list[str]:
    if stream.kind is not StreamKind.KERNEL or ctx.boot_time is not None:
        return []
    if any(m is not None for m in stream.monotonic) and all(t is None for t in stream.times):
        return [_untimed(stream.source.display)]
    return []


def _untimed(display: str) -> str:
    """The note on a kernel log with only seconds since boot (dropped where a `dmesg -T` input gave every
    one of its events a time: `Timeline.twinned`)."""
    return (
        f"{display} has only seconds since boot: its events are joined to ranks by pid but "
        "not placed in time; pass --boot-time (from `uptime -s` on that host) or `dmesg -T` output"
    )


def _thin_progress(events: list[Event]) -> list[Event]:
    """Step lines would be millions of events: keep each rank's (or relayed process's) first and last, and the
    highest step."""
    keep: dict[tuple[int | None, str | None, str | None], list[int]] = {}
    for i, e in enumerate(events):
        if e.role is Role.PROGRESS and not e.effects:  # a relay's pid is a rank's once the timeline joins it
            keep.setdefault((e.rank, e.facts.get("emitter_local_rank"), e.facts.get("emitter_pid")), []).append(i)
    drop: set[int] = set()
    for indices in keep.values():
        top = max(indices, key=lambda i: int(events[i].facts.get("step", "-1") or -1))
        drop.update(set(indices[1:-1]) - {top})
    return [e for i, e in enumerate(events) if i not in drop]


def _error_file_events(source: Source, rules: list[CompiledRule]) -> list[Event]:
    """torchrun's error.json: the exception a rank recorded with @record, and when. Any shape is
    tolerated (a forged or truncated file yields no event or no time, never a crash)."""
    text, stamp = _recorded_error(source.read_text())
    lines = clean(text).strip().splitlines()
    first = lines[0].strip() if lines else ""
    if not first:
        return []
    exc_type, _, exc_msg = first.partition(": ")
    facts = {"exc_type": exc_type, "exc_msg": exc_msg}
    cause, role, by = classify(first, StreamKind.ERROR_JSON, rules, "", Cause.CONTEXT, Role.CONTEXT)
    if by is None:
        return []
    if source.where.local_rank is not None:
        facts["emitter_local_rank"] = str(source.where.local_rank)
    time = None
    if stamp is not None:
        at = datetime.fromtimestamp(stamp, UTC)
        time = TimeSpan(at, at + timedelta(seconds=1))
    return [
        Event(
            rule=by.rule.rule.id,
            cause=cause,
            role=role,
            where=Location(source.display, 1),
            text=first,
            rank=source.where.rank,
            time=time,
            facts={**by.facts, **facts},
            rank_from="path" if source.where.rank is not None else None,
            effects=by.rule.rule.effects,
        )
    ]


_EPOCH_RANGE = (1, 253_402_300_799)  # 1970 .. 9999-12-31: what datetime can hold


def _recorded_error(raw: str) -> tuple[str, int | None]:
    """The message and the timestamp of torchrun's error file, whatever its shape."""
    try:
        data = json.loads(raw[:4_000_000])
    except (ValueError, RecursionError):
        return "", None
    message = data.get("message") if isinstance(data, dict) else None
    text = message.get("message") if isinstance(message, dict) else message
    extra = message.get("extraInfo") if isinstance(message, dict) else None
    stamp = extra.get("timestamp") if isinstance(extra, dict) else None
    return (without_surrogates(text) if isinstance(text, str) else ""), _epoch(stamp)


def _epoch(value: object) -> int | None:
    text = str(value).strip() if isinstance(value, int | str) and not isinstance(value, bool) else ""
    number = read_int(text, max_len=12, signed=False)
    return number if number is not None and _EPOCH_RANGE[0] <= number <= _EPOCH_RANGE[1] else None


__all__ = ["DEFAULT_SKEW", "Collected", "Options", "collect", "conclude", "diagnose"]
