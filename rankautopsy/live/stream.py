"""One followed stream: the new bytes since the last read, scanned with a bounded window of context."""

from __future__ import annotations

import os
from bisect import bisect_left
from collections import deque
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from rankautopsy.events import Part
from rankautopsy.model import Event, Evidence, Input, Location, StreamKind
from rankautopsy.pipeline import Options, YearOf, _error_file_events, _job, _scan_job, _thin_progress
from rankautopsy.scan.engine import Engine
from rankautopsy.scan.matcher import CompiledRule
from rankautopsy.sources.discover import Source
from rankautopsy.sources.lines import Line, Stream, build_stream, last_signs
from rankautopsy.sources.read import docker_lines, is_docker_json

CONTEXT_LINES = 2000  # lines before the new bytes that may be rescanned with them (a traceback's reach)
REACH = 400  # an assembled event that starts this close to the end may still grow: rescanned with what follows
SMALL = 8  # lines always rescanned (a message broken over lines, a line's time from its neighbours)
CONTEXT_BYTES = 1024 * 1024
READ_LIMIT = 16 * 1024 * 1024  # bytes read from one stream per poll, at most
LONE_LINE = 1024 * 1024  # an unterminated line this long is read without waiting for its end


class Followed:
    """A stream's scan so far: its events, its last signs of life, and where reading resumes."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.identity = _identity(source.path)
        self.offset = 0  # bytes consumed (at a line end)
        self.lines = 0  # lines consumed
        self.context: deque[bytes] = deque()
        self.context_bytes = 0
        self.events: list[Event] = []
        self.signs: list[Line] = []
        self.notes: list[str] = []
        self.pending = b""  # an unterminated last line, waiting for its end
        self.resume = 0  # the first line the next window must start at (absolute, 1-based)
        self.reads: list[tuple[int, str]] = []  # (lines consumed after a read, when it was read: ISO, UTC)
        self.records = source.compressed and _docker_json(source.path)  # decoded a read at a time
        whole = (source.compressed and not self.records) or (source.path is not None and source.path.suffix == ".gz")
        self.whole = source.path is not None and whole  # read only whole, once it settles

    def changed(self) -> bool:
        """Whether the file was truncated or replaced (rotated) since the last read."""
        if self.source.path is None or self.whole:
            return False
        ident = _identity(self.source.path)
        if ident is None:
            return False
        size = ident[2]
        return ident[:2] != (self.identity or ident)[:2] or size < self.offset

    def read_new(self, flush: bool = False) -> bytes:
        """The complete lines appended since the last read (with `flush`, an unterminated tail too)."""
        if self.source.path is None:
            data, self.pending = self.pending, b""
            return data
        try:
            with open(self.source.path, "rb") as handle:
                handle.seek(self.offset)
                data = handle.read(READ_LIMIT)
        except OSError:
            return b""
        end = data.rfind(b"\n") + 1
        if end == 0 and not flush and len(data) < LONE_LINE:
            return b""
        if end and not flush:
            data = data[:end]
        self.offset += len(data)
        self.identity = _identity(self.source.path)
        return _records(data) if self.records else data

    def feed(
        self,
        data: bytes,
        options: Options,
        rules: list[CompiledRule],
        engine: Engine,
        year: YearOf,
        open_ids: set[str],
        read_at: datetime | None = None,
    ) -> None:
        """Scan `data` (new complete lines, read at `read_at`) with the lines before it that an event may
        still reach; keep the old events that start before the window, take the window's for the rest.
        `open_ids`: the rules whose events span several lines."""
        if not data:
            return
        if self.source.kind is StreamKind.ERROR_JSON:
            self.events = _error_file_events(self.source, rules)
            return
        again = min(len(self.context), max(SMALL, self.lines - self.resume + 1))
        window = b"".join(list(self.context)[len(self.context) - again :]) + data
        base = self.lines - again  # lines before the window
        scanned = _scan_job(_job(_window_source(self.source, window, base), options, year), rules, engine)
        kept = [e for e in self.events if e.where.line <= base]
        self.lines += data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
        if read_at is not None:
            self.reads.append((self.lines, read_at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")))
        fresh = [self._seen(_moved(e, base)) for e in scanned.events]
        self.events = _thin_progress(kept + fresh)
        signs = [_moved_line(line, base) for line in _lines(scanned.stream)]
        self.signs = _lines(last_signs(build_stream(self.source, self.signs + signs, 0)))
        self.notes = list(dict.fromkeys(self.notes + scanned.notes))[-20:]
        self._remember(data)
        growing = [e.where.line for e in fresh if e.where.line > self.lines - REACH and (
            e.rule in open_ids or e.facts.get("time_open") == "1")]  # fmt: skip
        self.resume = max(self.lines - CONTEXT_LINES, min(growing, default=self.lines) - 2)
        while self.reads and self.reads[0][0] < self.lines - CONTEXT_LINES:  # no later window reaches it
            self.reads.pop(0)

    def _seen(self, event: Event) -> Event:
        """An event whose line has no stamp of its own, with the fact `seen_by`: when its line was first
        read, which it was written before (the verdict's death time takes it as a bound)."""
        if event.stamped:
            return event
        k = bisect_left(self.reads, event.where.line, key=lambda read: read[0])
        if k == len(self.reads):
            return event
        return replace(event, facts={**event.facts, "seen_by": self.reads[k][1]})

    def feed_whole(self, options: Options, rules: list[CompiledRule], engine: Engine, year: YearOf) -> bool:
        """A compressed file, read whole once it stopped changing (and again if it changes); whether it
        was read."""
        assert self.source.path is not None
        ident = _identity(self.source.path)
        if ident is None or (ident == self.identity and self.lines):
            return False
        self.identity = ident
        source = replace(self.source, size=ident[2])
        scanned = _scan_job(_job(source, options, year), rules, engine)
        self.events, self.signs, self.notes = scanned.events, _lines(scanned.stream), scanned.notes
        self.lines = max(1, scanned.stream.lines_read)
        return True

    def _remember(self, data: bytes) -> None:
        for line in data.splitlines(keepends=True)[-CONTEXT_LINES:]:
            self.context.append(line if line.endswith(b"\n") else line + b"\n")
            self.context_bytes += len(line)
        while self.context and (len(self.context) > CONTEXT_LINES or self.context_bytes > CONTEXT_BYTES):
            self.context_bytes -= len(self.context.popleft())

    def part(self) -> Part:
        found = Input(path=self.source.display, kind=self.source.kind, rank=self.source.where.rank, lines=self.lines)
        if self.source.kind is StreamKind.ERROR_JSON:
            return Part(input=found, events=list(self.events))
        stream = build_stream(self.source, self.signs, self.lines)
        return Part(input=found, events=list(self.events), stream=stream, notes=list(self.notes))


def _identity(path: Path | None) -> tuple[int, int, int] | None:
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_size


def _docker_json(path: Path | None) -> bool:
    try:
        with open(path or "", "rb") as handle:
            return is_docker_json(handle.read(16))
    except OSError:
        return False


def _records(data: bytes) -> bytes:
    """Whole json-file lines (and perhaps an unterminated last one), decoded one line out per line in."""
    lines = data.split(b"\n")
    tail = lines.pop()
    return docker_lines([*lines, tail] if tail else lines)


def _window_source(source: Source, window: bytes, base: int) -> Source:
    """The lines after line `base` of a followed file, as an input of their own (which opens the file's
    only where `base` is 0)."""
    return replace(source, path=None, data=window, size=len(window), problem=None, opens=base == 0)


def _lines(s: Stream) -> list[Line]:
    """A stream's lines as Lines, so that two scans' last signs can be merged."""
    return [
        Line(s.numbers[i], s.texts[i], s.ranks[i], s.local_ranks[i], s.rank_from[i], s.hosts[i], s.times[i],
             s.monotonic[i])
        for i in range(len(s.texts))
    ]  # fmt: skip


def _moved_line(line: Line, base: int) -> Line:
    return replace(line, number=line.number + base)


def _moved(event: Event, base: int) -> Event:
    if base == 0:
        return event

    def at(where: Location) -> Location:
        return Location(where.source, where.line + base)

    return replace(event, where=at(event.where), lines=tuple(Evidence(at(x.where), x.text) for x in event.lines))
