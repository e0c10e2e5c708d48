"""Sources to lines: each line's message (prefixes stripped, text cleaned), rank, host and time."""

from __future__ import annotations

import itertools
import re
from collections import Counter
from dataclasses import dataclass, field

from rankautopsy.clocks import ClockContext, find_time, parse_kernel_line, wall_from_monotonic
from rankautopsy.model import StreamKind, TimeSpan
from rankautopsy.sources.discover import Source
from rankautopsy.sources.prefixes import NO_PREFIX, Profile, sniff_profile, strip_prefixes
from rankautopsy.sources.ranks import content_rank, content_rank_shapes
from rankautopsy.sources.read import split_lines
from rankautopsy.sources.sanitize import clean

_SNIFF_LINES = 2000
_STAMP_ONLY = re.compile(r"^\s*\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?\s*$")


@dataclass(slots=True)
class Stream:
    """One source's lines, in parallel lists (index i is the i-th logical line)."""

    source: Source
    numbers: list[int] = field(default_factory=list)  # physical line numbers (1-based)
    texts: list[str] = field(default_factory=list)  # messages, prefixes stripped, cleaned
    ranks: list[int | None] = field(default_factory=list)  # global rank, when the line says or the path does
    local_ranks: list[int | None] = field(default_factory=list)
    rank_from: list[str | None] = field(default_factory=list)  # prefix, path, content
    hosts: list[str | None] = field(default_factory=list)
    times: list[TimeSpan | None] = field(default_factory=list)  # the line's own timestamp
    monotonic: list[float | None] = field(default_factory=list)  # kernel lines: seconds since boot

    @property
    def kind(self) -> StreamKind:
        return self.source.kind

    def __len__(self) -> int:
        return len(self.texts)


def build_stream(source: Source, ctx: ClockContext) -> Stream:
    stream = Stream(source)
    raw = list(split_lines(source.text))
    if source.kind is StreamKind.KERNEL:
        _fill_kernel(stream, raw, ctx)
    else:
        _fill_log(stream, raw, ctx)
    return stream


def _fill_kernel(stream: Stream, raw: list[tuple[int, str]], ctx: ClockContext) -> None:
    for number, line in raw:
        text = clean(line)
        stamp = parse_kernel_line(text, ctx)
        stream.numbers.append(number)
        stream.texts.append(stamp.rest if stamp else text)
        stream.ranks.append(None)
        stream.local_ranks.append(None)
        stream.rank_from.append(None)
        stream.hosts.append(stamp.host if stamp else None)
        mono = stamp.monotonic if stamp else None
        wall = stamp.wall if stamp else None
        if wall is None and mono is not None and ctx.boot_time is not None:
            wall = wall_from_monotonic(mono, ctx.boot_time)
        stream.times.append(wall)
        stream.monotonic.append(mono)


_RECORD_START = re.compile(
    r"^(?:\s|\[?\d{4}-\d\d-\d\d|[FEWIVC]\d{3,4} \d\d:|Traceback|[A-Za-z_][\w.]*(?:Error|Exception|Warning):)"
)


def _continues(line: str, profile: Profile) -> bool:
    """Whether a line reads as the rest of the line before it, not as a record of its own."""
    return bool(line) and not _RECORD_START.match(line) and strip_prefixes(line, profile=profile)[1] is NO_PREFIX


def unwrap(raw: list[tuple[int, str]], profile: Profile) -> list[tuple[int, str]]:
    """Undo a terminal's hard wrap: when several lines of exactly the same length W are each followed
    by a line that does not start a record, a line of length W continues on the next line."""
    pairs = itertools.pairwise(raw)
    counts = Counter(len(a) for (_, a), (_, b) in pairs if len(a) >= 60 and _continues(b, profile))
    width, hits = counts.most_common(1)[0] if counts else (0, 0)
    if hits < 5 or hits < 0.3 * sum(counts.values()):
        return raw
    out: list[tuple[int, str]] = []
    joining = False
    for number, line in raw:
        if joining and _continues(line, profile):
            out[-1] = (out[-1][0], out[-1][1] + line)
        else:
            out.append((number, line))
        joining = len(line) == width
    return out


def _fill_log(stream: Stream, raw: list[tuple[int, str]], ctx: ClockContext) -> None:
    profile = sniff_profile([line for _, line in raw[:_SNIFF_LINES]])
    raw = unwrap(raw, profile)
    where = stream.source.where
    sample = [line for _, line in raw[:_SNIFF_LINES]]
    shapes = content_rank_shapes([strip_prefixes(clean(line), profile=profile)[0] for line in sample])
    pending: TimeSpan | None = None  # a viewer export's stamp on a line of its own dates the next line
    for number, line in raw:
        text, prefix = strip_prefixes(clean(line), profile=profile)
        rank, origin = prefix.rank, "prefix"
        if rank is None and prefix.task is not None:
            rank = prefix.task
        if rank is None and where.rank is not None:
            rank, origin = where.rank, "path"
        if rank is None and shapes and (found := content_rank(text, shapes)) is not None:
            rank, origin = found, "content"
        local = prefix.local_rank if prefix.local_rank is not None else where.local_rank
        stamp = find_time(prefix.stamp, ctx) if prefix.stamp else None
        stream.numbers.append(number)
        stream.texts.append(text)
        stream.ranks.append(rank)
        stream.local_ranks.append(local)
        stream.rank_from.append(origin if rank is not None else ("local" if local is not None else None))
        stream.hosts.append(prefix.host)
        own = stamp or find_time(text, ctx)
        if own is not None and _STAMP_ONLY.match(text):
            pending = own
        elif own is None and pending is not None and text.strip():
            own, pending = pending, None
        stream.times.append(own)
        stream.monotonic.append(None)
