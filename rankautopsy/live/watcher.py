"""Watcher: poll the inputs, scan what is new, conclude, and say when the verdict has settled.

A verdict is reported only once it is stable: unchanged for `settle` seconds with the inputs quiet
for as long (a job stops logging once a rank died and the launcher tore it down, or once every rank
waits in a collective), or unchanged for `patience` seconds while the logs keep growing. A hang
culprit waits for `quiet_period`. So a traceback that a rank logs and survives, or a launcher's
teardown still in flight, moves the verdict before it is ever printed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from rankautopsy.errors import InputError
from rankautopsy.events import Collected
from rankautopsy.live.stream import Followed
from rankautopsy.model import Diagnosis, Outcome, StreamKind, Verdict
from rankautopsy.pipeline import Options, YearOf, _load, conclude, today
from rankautopsy.records import record
from rankautopsy.scan.engine import make_engine
from rankautopsy.scan.matcher import CompiledRule
from rankautopsy.sources.discover import Source, discover

STDIN = "-"
SNIFFED = 64 * 1024  # a file smaller than this is re-classified as it grows (its head may change its kind)
_REPORTED = {Outcome.FIRST_DEATH, Outcome.HANG, Outcome.CLEAN, Outcome.UNDETERMINED}


@record(kw_only=True)
class WatchOptions:
    diagnose: Options
    settle: float = 2.0  # seconds a verdict must hold, the inputs quiet, before it is reported
    patience: float = 30.0  # a verdict that holds this long is reported even while the logs grow
    quiet_period: float = 60.0  # a hang culprit (or an undetermined failure) must be this quiet
    rediscover: float = 1.0  # seconds between two walks of the given directories


@record
class Report:
    diagnosis: Diagnosis
    at: float  # the clock reading when it was decided


@record(frozen=False)
class Status:
    streams: int = 0
    lines: int = 0
    verdict: str = "no failure seen"


def verdict_key(v: Verdict) -> tuple[object, ...]:
    first = v.first_death
    return (v.outcome, first.rank if first else None, first.cause if first else None)


@dataclass
class Watcher:
    """The followed streams of a watched job and what was concluded from them."""

    options: WatchOptions
    streams: dict[str, Followed] = field(default_factory=dict)
    stdin: Followed | None = None
    result: Diagnosis | None = None
    key: tuple[object, ...] | None = None
    changed_at: float = 0.0
    grew_at: float = -math.inf
    discovered_at: float = -math.inf
    year: int | None = None
    grown: dict[str, float] = field(default_factory=dict)
    status: Status = field(default_factory=Status)
    rules: list[CompiledRule] = field(default_factory=list)
    open_ids: set[str] = field(default_factory=set)
    sizes: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        rules, taught = _load(self.options.diagnose)
        self.rules = rules
        self.open_ids = {c.rule.id for c in rules if c.rule.assemble is not None}
        self.engine = make_engine(rules, self.options.diagnose.engine)
        self.engine.taught = taught
        self.engine.prepare(set(StreamKind))
        if STDIN in self.options.diagnose.dmesg:
            self.stdin = Followed(Source(display="<stdin>", kind=StreamKind.KERNEL, live=True))

    def push_stdin(self, data: bytes) -> None:
        """Complete lines of the kernel log piped in (`--dmesg -`)."""
        if self.stdin is not None:
            self.stdin.pending += data

    def poll(self, now: float, wall: datetime | None = None) -> Report | None:
        """Read what is new (at `wall`, the wall clock; `now` is a monotonic one), conclude if anything
        grew, and return the verdict once it has settled."""
        if now - self.discovered_at >= self.options.rediscover:
            self._discover()
            self.discovered_at = now
        grew = self._read(now, wall or datetime.now(UTC))
        if grew:
            self.grew_at = now
        if grew or self.result is None:
            self.result = conclude(self._collected(), self.options.diagnose)
            key = verdict_key(self.result.verdict)
            if key != self.key:
                self.key, self.changed_at = key, now
            self._tell()
        return self._settled(now)

    def _discover(self) -> None:
        opts = self.options.diagnose
        sources: list[Source] = []
        for path, dmesg in [*((p, False) for p in opts.paths), *((p, True) for p in opts.dmesg if p != STDIN)]:
            try:  # each on its own: a path that does not exist yet (the job has not started writing) waits
                found, _ = discover([] if dmesg else [path], [path] if dmesg else [], None, follow=opts.follow)
            except InputError:
                continue
            sources += found
        for source in sources:
            if source.path is None:
                continue
            known = self.streams.get(source.display)
            if known is None or (known.offset < SNIFFED and (known.source.kind, known.source.where) != (
                    source.kind, source.where)):  # fmt: skip
                self.streams[source.display] = Followed(source)
            if self.year is None and source.year is not None:
                self.year = source.year

    def _read(self, now: float, wall: datetime) -> bool:
        grew = False
        opts = self.options.diagnose
        year: YearOf = (self.year, None) if self.year is not None else today()
        followed = [*self.streams.values(), *([self.stdin] if self.stdin is not None else [])]
        for stream in followed:
            if stream.changed():  # truncated or rotated: read again from the start
                self.streams[stream.source.display] = stream = Followed(stream.source)
            quiet = now - self.grown.get(stream.source.display, now) >= self.options.settle
            if stream.whole:
                grew = self._read_whole(stream, now, quiet, year) or grew
                continue
            data = stream.read_new(flush=quiet)
            if data:
                stream.feed(data, opts, self.rules, self.engine, year, self.open_ids, read_at=wall)
                self.grown[stream.source.display] = now
                grew = True
            elif stream.source.display not in self.grown:
                self.grown[stream.source.display] = now
        return grew

    def _read_whole(self, stream: Followed, now: float, quiet: bool, year: YearOf) -> bool:
        """A compressed file is read once its size held for the settle period."""
        size = stream.source.path.stat().st_size if stream.source.path and stream.source.path.exists() else 0
        if size != self.sizes.get(stream.source.display):
            self.sizes[stream.source.display] = size
            self.grown[stream.source.display] = now
            return False
        return quiet and stream.feed_whole(self.options.diagnose, self.rules, self.engine, year)

    def _collected(self) -> Collected:
        followed = [*self.streams.values(), *([self.stdin] if self.stdin is not None else [])]
        return Collected(parts=[s.part() for s in followed if s.lines or s.events], year=self.year)

    def _settled(self, now: float) -> Report | None:
        if self.result is None or self.key is None:
            return None
        outcome = self.result.verdict.outcome
        if outcome not in _REPORTED:
            return None
        slow = outcome in (Outcome.HANG, Outcome.UNDETERMINED)
        hold = self.options.quiet_period if slow else self.options.settle
        stable, quiet = now - self.changed_at, now - self.grew_at
        if (stable >= hold and quiet >= hold) or stable >= max(hold, self.options.patience):
            return Report(self.result, now)
        return None

    def _tell(self) -> None:
        assert self.result is not None
        self.status.streams = len(self.result.inputs)
        self.status.lines = sum(i.lines for i in self.result.inputs)
        first = self.result.verdict.first_death
        outcome = self.result.verdict.outcome.value.replace("_", " ")
        self.status.verdict = outcome if first is None else f"{outcome}: rank {first.rank} {first.cause.value}"


def watch_paths(paths: Sequence[str]) -> list[str]:
    """The paths as given, made absolute, so that a directory not yet created can be watched for."""
    return [p if p == STDIN else str(Path(p)) for p in paths]
