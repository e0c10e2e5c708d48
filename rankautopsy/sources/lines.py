"""Sources to lines: each line's message (prefixes stripped, text cleaned), rank, host and time.

A stream is built from the lines the scanner selected (`rankautopsy.scan.selection`), not from every line
of the input: line numbers are real physical numbers, in order, with gaps.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime

from rankautopsy import recache
from rankautopsy.model import StreamKind, TimeSpan
from rankautopsy.records import pickled_fast, record
from rankautopsy.sources.clocks import ClockContext, find_time, parse_kernel_line, wall_from_monotonic
from rankautopsy.sources.discover import Source
from rankautopsy.sources.prefixes import (
    NO_PREFIX,
    Prefix,
    Profile,
    Taught,
    shape_ranks,
    sniff_profile,
    starts_tagged,
    strip_prefixes,
    without_ray_repeats,
)
from rankautopsy.sources.ranks import content_rank, content_rank_shapes
from rankautopsy.sources.read import MAX_LINE, NO_DIGITS, segments, split_lines
from rankautopsy.sources.sanitize import clean

SNIFF_LINES = 2000  # the head of a stream that decides its prefix profile and content-rank header shapes
_STAMP_ONLY = recache.compile(r"^\s*\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?\s*$")
_ENDS_IN_STAMP = recache.compile(r"\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?\s*$", re.MULTILINE)
_STAMP_END = frozenset("0123456789Z]")
# `_ENDS_IN_STAMP` from the colon before the seconds: a literal first character, which `re` looks for
# fast over a whole head (a search from `\d` tried every digit of it)
_STAMP_TAIL = recache.compile(r":\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\]?\s*$", re.MULTILINE)
# What starts a record of its own, never the rest of a wrapped one: an indent, a date, glog's `I1203 07:`,
# a traceback, an exception; NCCL's `host:pid:tid [cudaDev] ` (every level but VERSION, src/debug.cc), or its
# `[cudaDev] ` alone where a paste cut the rest;
# Python logging's default `LEVEL:logger:` (logging.BASIC_FORMAT), as torchrun's own warnings print;
# the kernel's `[  933.631977] `; c10's `[E ProcessGroupNCCL.cpp:828] ` (PyTorch 1.x), `[E1129 07:10:01.1 a.cpp:1] `.
_RECORD_START = recache.compile(
    r"^(?:\s|\[?\d{4}-\d\d-\d\d|[FEWIVC]\d{3,4} \d\d:|Traceback|[A-Za-z_][\w.]*(?:Error|Exception|Warning):"
    r"|[^\s:\[\]]+:\d+:\d+ \[\d+\] |\[\d+\] (?:NCCL [A-Z]|[\w./-]+\.(?:cc|cu|cpp|h):\d+ NCCL )"
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[^\s:]*:|\[ *\d+\.\d+\] "
    r"|\[[FEWIV](?:\d{4} [\d:.]+)? [\w.-]+\.\w+:\d+\] )"
)

Channel = tuple[int | None, int | None]  # (rank, local rank): whose output a line is


@record(frozen=False)
class Stream:
    """One source's selected lines, in parallel lists (index i is the i-th selected logical line)."""

    source: Source
    numbers: list[int] = field(default_factory=list)  # physical line numbers (1-based)
    texts: list[str] = field(default_factory=list)  # messages, prefixes stripped, cleaned
    ranks: list[int | None] = field(default_factory=list)  # global rank, when the line says or the path does
    local_ranks: list[int | None] = field(default_factory=list)
    rank_from: list[str | None] = field(default_factory=list)  # prefix, path, content
    hosts: list[str | None] = field(default_factory=list)
    times: list[TimeSpan | None] = field(default_factory=list)  # the line's own timestamp
    monotonic: list[float | None] = field(default_factory=list)  # kernel lines: seconds since boot
    pids: list[int | None] = field(default_factory=list)  # the emitting process's pid, where a prefix says
    lines_read: int = 0  # logical lines in the whole source, selected or not
    head_ranks: frozenset[int] = frozenset()  # ranks whose lines the head shows by a per-line layer
    gaps: list[int] = field(default_factory=list)  # indices after lines the scan freed or had no room for

    @property
    def kind(self) -> StreamKind:
        return self.source.kind

    def __len__(self) -> int:
        return len(self.texts)


@pickled_fast
@dataclass(frozen=True, slots=True)
class Line:
    """One logical line, parsed."""

    number: int
    text: str
    rank: int | None = None
    local_rank: int | None = None
    rank_from: str | None = None
    host: str | None = None
    time: TimeSpan | None = None
    monotonic: float | None = None
    pid: int | None = None  # the emitting process's, where a prefix says (Ray's `pid=`, mpirun's host:pid)

    @property
    def channel(self) -> Channel:
        return self.rank, self.local_rank


DOUBLE_SPACED_MIN = 4  # blank lines between the head's lines that make it a double-spaced paste
WRAP_SNIFF = 400  # head lines looked at for a terminal's hard wrap
# pytest's report of a failure puts each line of the exception behind `E` padded to the indent of the source
# line that raised (`E       RuntimeError: ...`); a report starts with its session banner.
_PYTEST_BANNER = recache.compile(r"=+ test session starts =+\s*$")
_MARKED = recache.compile(r"E(?: *$| {3,}\S)")
PYTEST_MARKED = 3  # lines of the head behind the marker that make a stream a pytest report without its banner


class LineParser:
    """Parses the physical lines of one source exactly as if the whole stream were read."""

    def __init__(
        self, source: Source, ctx: ClockContext, sample: list[str], taught: tuple[Taught, ...] = (), whole: bool = False
    ) -> None:
        self.kernel = source.kind is StreamKind.KERNEL
        self._where = source.where
        self._ctx = ctx
        self._sample = sample
        taught = tuple(t.fresh() for t in taught)  # each stream its own time
        self._profile = replace(sniff_profile(sample, whole), taught=taught) if not self.kernel else Profile()
        self._shapes: frozenset[str] | None = None
        self.blank_dropped = 0  # a double-spaced paste's blank lines, read but not kept (`parse_all`)

    def spent(self) -> list[str]:
        """The rules whose taught prefixes ran out of time on this stream."""
        return [t.rule_id for t in self._profile.taught if t.spent]

    @property
    def sequential(self) -> bool:
        """Whether a line's reading depends on the lines before it (a terminal's hard wrap, or a viewer
        export's timestamps on lines of their own): such a stream is read whole (`parse_all`)."""
        if self.kernel:
            return False
        pairs = list(enumerate(self._sample[:WRAP_SNIFF]))  # enough to see a wrap; each line costs a prefix parse
        return self.pytest or self.double_spaced or self._stamps_alone() or unwrap(pairs, self._profile) != pairs

    @functools.cached_property
    def double_spaced(self) -> bool:
        """Whether a blank line follows every line of the head (a paste a page rendered with a blank line
        between lines): a multi-line report (a traceback, torchrun's table) is then read without them."""
        head = self._sample[:WRAP_SNIFF]
        for blank, kept in ((head[1::2], head[0::2]), (head[0::2], head[1::2])):
            if len(blank) >= DOUBLE_SPACED_MIN and _share_blank(blank) >= 0.9 and _share_blank(kept) <= 0.1:
                return True
        return False

    @functools.cached_property
    def pytest(self) -> bool:
        """Whether the stream is pytest's output, whose failure reports mark lines (`unmark_pytest`): read
        once, from the head (`parse_all` replaces the sample)."""
        head = self._sample[:WRAP_SNIFF]
        if any(_PYTEST_BANNER.match(line) for line in head[:20]):
            return True
        return (
            sum(1 for line in head if line[:1] == "E" and _MARKED.match(line) and line.strip() != "E") >= PYTEST_MARKED
        )

    def _stamps_alone(self) -> bool:
        """Whether a line of the head is only a timestamp (checked exactly where one may be)."""
        if not _STAMP_TAIL.search("\n".join(self._sample)):  # no line ends as a stamp does: most heads
            return False
        ends = [line for line in self._sample if line.rstrip()[-1:] in _STAMP_END]  # a stamp ends so
        if not any(_ENDS_IN_STAMP.search(line[-48:]) for line in ends):  # exactly, per line: the joined
            return False  # search is looser (its `\s*$` may run over a line feed)
        return any(_STAMP_ONLY.match(strip_prefixes(clean(line), profile=self._profile)[0]) for line in self._sample)

    def parse(self, number: int, raw: str) -> list[Line]:
        """The logical lines of one physical line (its `\\r`-separated pieces)."""
        one = self._kernel_line if self.kernel else self._log_line
        return [one(number, part) for part in segments(raw)]

    def _kernel_line(self, number: int, line: str) -> Line:
        text = clean(line)
        stamp = parse_kernel_line(text, self._ctx)
        if stamp is None:
            return Line(number, text)
        wall, mono = stamp.wall, stamp.monotonic
        if wall is None and mono is not None and self._ctx.boot_time is not None:
            wall = wall_from_monotonic(mono, self._ctx.boot_time)
        return Line(number, stamp.rest, host=stamp.host, time=wall, monotonic=mono)

    @property
    def srun_labels(self) -> bool:
        return self._profile.srun

    def shape_ranks(self) -> frozenset[int]:
        return shape_ranks(self._sample, self._profile) if not self.kernel else frozenset()

    def channels(self, raw: str) -> list[tuple[Channel | None, int]]:
        """The channel of each logical line of a physical line, cheaply: from its prefixes and path
        (None where the rank could come from the message itself, which only a full parse tells, or from
        the pid a relay names), and how many characters of it the prefixes took."""
        if self.kernel:
            return [((None, None), 0) for _ in segments(raw)]
        out: list[tuple[Channel | None, int]] = []
        for part in segments(raw):
            cleaned = clean(part)
            text, prefix = strip_prefixes(cleaned, profile=self._profile)
            rank, local = self._channel_of(prefix)
            unknown = rank is None and (prefix.pid is not None or self.shapes())  # a relay's pid: the timeline joins it
            out.append((None if unknown else (rank, local), len(cleaned) - len(text)))
        return out

    def _channel_of(self, prefix: Prefix) -> Channel:
        """The channel a line's prefixes and its file's path give (None rank: its words may tell)."""
        rank = prefix.rank if prefix.rank is not None else prefix.task if prefix.task is not None else self._where.rank
        return rank, prefix.local_rank if prefix.local_rank is not None else self._where.local_rank

    def message(self, raw: str, timed: set[Channel]) -> tuple[Channel, str] | None:
        """The channel and message text of a one-piece line whose channel its prefixes or path decide,
        as `parse` gives them, without a Line (None where only a full parse can tell). Its time is
        read only where its channel is not in `timed` yet, and then added to it, as a parse would."""
        if (read := self.one_piece(raw)) is None:
            return None
        channel, text, prefix = read
        if channel not in timed and self.time_of(text, prefix):
            timed.add(channel)
        return channel, text

    def one_piece(self, raw: str) -> tuple[Channel, str, Prefix] | None:
        """The channel, message text and prefixes of a one-piece line whose channel its prefixes or path
        decide, as `parse` gives them, without a Line and its time (None where only a full parse can tell)."""
        if self.kernel or "\r" in raw:
            return None
        text, prefix = self._message(raw[:MAX_LINE])  # as `pieces` clips
        channel = self._channel_of(prefix)
        if channel[0] is None and self.shapes():
            return None
        return channel, text, prefix

    def time_of(self, text: str, prefix: Prefix) -> TimeSpan | None:
        """The time of a line of this message and prefixes, as `parse` reads it."""
        return (find_time(prefix.stamp, self._ctx) if prefix.stamp else None) or find_time(text, self._ctx)

    def _message(self, line: str) -> tuple[str, Prefix]:
        """A line cleaned, its launcher layers stripped, and a relay's dedup suffix dropped."""
        text, prefix = strip_prefixes(clean(line), profile=self._profile)
        return (without_ray_repeats(text) if prefix.ray else text), prefix

    def _log_line(self, number: int, line: str) -> Line:
        text, prefix = self._message(line)
        rank, origin = prefix.rank, "excepthook" if prefix.hooked else "prefix"
        if rank is None and prefix.task is not None:
            rank = prefix.task
        if rank is None and self._where.rank is not None:
            rank, origin = self._where.rank, "path"
        if rank is None and (shapes := self.shapes()) and (found := content_rank(text, shapes)) is not None:
            rank, origin = found, "content"
        local = prefix.local_rank if prefix.local_rank is not None else self._where.local_rank
        return Line(
            number,
            text,
            rank,
            local,
            origin if rank is not None else ("local" if local is not None else None),
            prefix.host,
            self.time_of(text, prefix),
            pid=prefix.pid,
        )

    def shapes(self) -> frozenset[str]:
        """Content-rank header shapes of the stream's head (computed when a line first needs them)."""
        if self._shapes is None:
            messages = [strip_prefixes(clean(line), profile=self._profile)[0] for line in self._sample]
            self._shapes = content_rank_shapes(messages)
        return self._shapes

    def parse_all(self, raw: list[tuple[int, str]]) -> list[Line]:
        """Every logical line of a whole stream, in order: hard wraps undone, and a viewer export's
        timestamp on a line of its own dating the next line that has none."""
        if self.double_spaced:
            kept = [(number, text) for number, text in raw if text.strip()]
            self.blank_dropped, raw = len(raw) - len(kept), kept
        raw = unwrap(unmark_pytest(raw) if self.pytest else raw, self._profile)
        self._sample, self._shapes = [text for _, text in raw[:SNIFF_LINES]], None
        lines = [self._log_line(number, text) for number, text in raw]
        pending: TimeSpan | None = None
        for i, line in enumerate(lines):
            if line.time is not None and _STAMP_ONLY.match(line.text):
                pending = line.time
            elif line.time is None and pending is not None and line.text.strip():
                lines[i] = dataclasses.replace(line, time=pending)
                pending = None
        return lines


def _share_blank(lines: list[str]) -> float:
    return sum(1 for line in lines if not line.strip()) / len(lines) if lines else 0.0


def unmark_pytest(raw: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """pytest's failure marker taken off: in each run of marked lines, `E` and the run's least padding (the
    exception's own lines keep their indent: a traceback's frames, a multi-line message)."""
    out = list(raw)
    i = 0
    while i < len(out):
        if not _MARKED.match(out[i][1]):
            i += 1
            continue
        end = i
        while end < len(out) and _MARKED.match(out[end][1]):
            end += 1
        pad = min((len(text) - len(text[1:].lstrip(" ")) for _, text in out[i:end] if text[1:].strip()), default=1)
        out[i:end] = [(number, text[pad:] if text[1:].strip() else "") for number, text in out[i:end]]
        i = end
    return out


# Lines of a log share their first characters (a launcher tag, the minute of a timestamp): where those
# alone start a record (`_RECORD_START` and the tags have no end anchor or lookahead, so the whole line
# does too), the answer is known without a match per line
_HEAD = 16


def _starts_record(text: str) -> bool:
    return not text or _RECORD_START.match(text) is not None or starts_tagged(text)


def _continues(line: str, profile: Profile) -> bool:
    """Whether a line reads as the rest of the line before it, not as a record of its own."""
    if not line or _RECORD_START.match(line) or starts_tagged(line):  # the cheap answers first
        return False
    text = clean(line) if "\x1b" in line else line  # a colour code before a launcher's prefix hides it
    return not _RECORD_START.match(text) and strip_prefixes(text, profile=profile)[1] is NO_PREFIX


# A row of a box or table (rich's traceback panel, a tabulate grid) is as wide as its neighbours and
# ends at its border: it is whole, not cut by a terminal's wrap.
_BORDER = frozenset("│┃║╮╯╗╝┐┘|+")
# So is a ruler, drawn to the terminal's width (pytest's `---- Captured stdout call ----`, `_ _ _`, `====`).
_RULER = recache.compile(r"(?:([=\-~*#])\1\1|_ _ _) ?$")


def _whole(line: str) -> bool:
    """A line as wide as a wrap's rows that is whole: a box's row, a ruler, or padded with spaces to the
    terminal's width (rich, Lightning's model summary)."""
    return line[-1] in _BORDER or line.endswith("  ") or _ruler(line)


def _one_format(raw: list[tuple[int, str]], lengths: list[int], rows: list[int]) -> bool:
    """Whether the lines taken for a wrap's rows are records of one format: a line of another length
    reads as one of them but for its numbers (Ray Train's `Reporting training result 9: ...` until the
    step gets a digit more), or the line after most rows reads as that row but for its numbers (records
    whose numbers all keep their width: RETURNN's `ep 272 train, step 339, ce 0.469, ...`). A wrap's row
    is cut: its whole line, at any length, reads otherwise, and the line after it is that line's rest."""
    width = lengths[rows[0]]
    row_shapes = [_shape(raw[i][1]) for i in rows]
    shapes = set(row_shapes)
    pairs = zip(rows, row_shapes, strict=True)
    alike = sum(_shape(raw[i + 1][1]) == shape for i, shape in pairs if i + 1 < len(raw))
    if 2 * alike >= len(rows):
        return True
    return any(n != width and _shape(line) in shapes for n, (_, line) in zip(lengths, raw, strict=True))


# A number in hex is a number too: the kernel's `PCI:0000:dc:00`, `Ch 0000000c` keep their width
_HEX_WORD = recache.compile(r"\b(?:0x)?[0-9a-fA-F]+\b")


def _shape(line: str) -> str:
    """A line but for its numbers, and the spaces that pad them to a width (UCX's `[host:pid :0:tid]`
    writes a 4-digit pid as `3333 `)."""
    return _HEX_WORD.sub("", line).translate(NO_DIGITS).replace(" ", "")


def _ruler(line: str) -> bool:
    return line.rstrip(" ")[-1:] in ("=", "-", "~", "*", "#", "_") and _RULER.search(line) is not None


def unwrap(raw: list[tuple[int, str]], profile: Profile) -> list[tuple[int, str]]:
    """Undo a terminal's hard wrap: when several lines of exactly the same length W are each followed
    by a line that does not start a record, a line of length W continues on the next line."""
    long = [len(line) >= 60 and not _whole(line) for _, line in raw]
    if sum(long) < 5:
        return raw
    known: dict[int, bool] = {}
    heads: dict[str, bool] = {}  # a line's first characters -> whether they already start a record

    def goes_on(i: int) -> bool:  # each line at most once: it strips prefixes
        if i not in known:
            line = raw[i][1]
            head = line[:_HEAD]
            if (starts := heads.get(head)) is None:
                starts = heads[head] = _starts_record(head)
            known[i] = not starts and _continues(line, profile)
        return known[i]

    lengths = [len(line) for _, line in raw]
    longs, seen = [], set()  # a line repeated word for word has one length by nature, not by a wrap
    for i in range(len(raw) - 1):
        if long[i] and raw[i][1] not in seen:
            seen.add(raw[i][1])
            longs.append(i)
    often = {n for n, k in Counter(lengths[i] for i in longs).items() if k >= 5}  # a wrap's width is
    counts = Counter(lengths[i] for i in longs if lengths[i] in often and goes_on(i + 1))  # among these
    width, hits = counts.most_common(1)[0] if counts else (0, 0)
    if hits < 5:
        return raw  # most logs: only the lines after long ones of a repeated length were looked at
    if _one_format(raw, lengths, [i for i in longs if lengths[i] == width and goes_on(i + 1)]):
        return raw
    rest = [i for i in longs if lengths[i] not in often]
    if hits < 0.3 * (sum(counts.values()) + len(rest)) and hits < 0.3 * (
        sum(counts.values()) + sum(goes_on(i + 1) for i in rest)
    ):
        return raw
    shorter = [goes_on(i + 1) for i in range(len(raw) - 1) if len(raw[i][1]) < width and not goes_on(i)]
    if len(shorter) >= 5 and sum(shorter) > 0.5 * len(shorter):
        return raw  # shorter records are as often followed by such a line: the log's shape, not a wrap
    out: list[tuple[int, str]] = []
    joining = False
    for number, line in raw:
        if joining and _continues(line, profile):
            out[-1] = (out[-1][0], out[-1][1] + line)
        else:
            out.append((number, line))
        joining = len(line) == width and not _whole(line)
    return out


def build_stream(source: Source, lines: Iterable[Line], lines_read: int) -> Stream:
    """A stream of parsed lines, in the order given."""
    stream = Stream(source, lines_read=lines_read)
    for line in lines:
        stream.numbers.append(line.number)
        stream.texts.append(line.text)
        stream.ranks.append(line.rank)
        stream.local_ranks.append(line.local_rank)
        stream.rank_from.append(line.rank_from)
        stream.hosts.append(line.host)
        stream.times.append(line.time)
        stream.monotonic.append(line.monotonic)
        stream.pids.append(line.pid)
    return stream


def last_signs(stream: Stream) -> Stream:
    """The stream cut down to each channel's latest timestamped line: all that the timeline reads of it
    (a rank's last sign of life). Kernel lines carry no rank: none is kept."""
    latest: dict[Channel, int] = {}
    if stream.kind is not StreamKind.KERNEL:
        for i, (rank, local, time) in enumerate(zip(stream.ranks, stream.local_ranks, stream.times, strict=True)):
            key = (rank, local)
            if time is not None and (key not in latest or time.earliest > _earliest(stream, latest[key])):
                latest[key] = i
    kept = [
        Line(stream.numbers[i], stream.texts[i], stream.ranks[i], stream.local_ranks[i], stream.rank_from[i],
             stream.hosts[i], stream.times[i], stream.monotonic[i], stream.pids[i])
        for i in sorted(latest.values())
    ]  # fmt: skip
    out = build_stream(stream.source, kept, stream.lines_read)
    out.head_ranks = stream.head_ranks
    return out


def _earliest(stream: Stream, i: int) -> datetime:
    time = stream.times[i]
    assert time is not None
    return time.earliest


def parse_text(source: Source, text: str, ctx: ClockContext, taught: tuple[Taught, ...] = ()) -> Stream:
    """Every line of a text (small inputs and tests: no selection)."""
    raw = list(split_lines(text))
    parser = LineParser(source, ctx, [line for _, line in raw[:SNIFF_LINES]], taught, len(raw) <= SNIFF_LINES)
    if parser.kernel:
        lines = [parsed for number, line in raw for parsed in parser.parse(number, line)]
    else:
        lines = parser.parse_all(raw)
    return build_stream(source, lines, len(lines))
