"""One input, read once in chunks, down to the lines its Stream needs and the rule hits on them.

Selected, besides every line that a rule matches (confirmed by the rule's own regex):

- of progress lines (step counters), only a sample: each channel's first one in the first SNIFF_LINES
  lines and last one in the tail, and the first and last of each chunk (the pipeline keeps a rank's
  first, last and highest step; steps are taken to grow, so the highest is among the last);
- after a line of an assembling rule, the lines its assembler reads (a traceback's body and the rest of
  its message, a faulthandler dump, a torchrun table entry), and before a table entry those its "Root
  Cause" lookup reads;
- for a line without a timestamp of its own, the nearest earlier and later timestamped lines of its
  channel (and the nearest earlier one of any channel): `line_time` reads its time from them;
- in the tail, the last timestamped line of every channel seen: each rank's last sign of life.

Not selected: a line repeating a context line already kept REPEATS times (counted on the first), and a
traceback repeating one already read REPEATS times that a later repeat in its chunk replaces as the
latest (counted, its window never read). Past the budget of MAX_SELECTED lines, the window of a
traceback that a later one of its channel follows in the chunk (it would be freed at once): cut off,
and past REPEATS such headers and the latest, counted.

Walks to timestamped neighbours are bounded (WALK_BYTES, WALK_LINES); a neighbour further away than that,
or a traceback longer than its window, is not seen. Memory is bounded by the buffer and by what is
selected, never by the size of the input.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import weakref
from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from rankautopsy import recache
from rankautopsy.model import Assembly, Effect, Role, Rule, StreamKind, TimeSpan
from rankautopsy.records import record
from rankautopsy.scan.chunkview import (
    OPENING_LINES,
    ChannelCache,
    View,
    head_end,
    logical_lines,
    opening_line,
    sample,
)
from rankautopsy.scan.engine import Ahead, Engine, Match
from rankautopsy.scan.matcher import AnyMatch, AnyPattern, Budget, CompiledRule, Hit, facts_of
from rankautopsy.sources.clocks import ClockContext
from rankautopsy.sources.discover import Source
from rankautopsy.sources.lines import SNIFF_LINES, Channel, Line, LineParser, Stream, build_stream
from rankautopsy.sources.prefixes import elided
from rankautopsy.sources.read import MAX_LINE, Chunk, ChunkReader, open_bytes, split_lines
from rankautopsy.sources.sanitize import clean_pieces

AFTER = {
    Assembly.TRACEBACK: 400,
    Assembly.FAULTHANDLER: 400,
    Assembly.TORCHRUN_TABLE: 80,
    Assembly.CONTINUED: 3,
    Assembly.RECORD: 0,
    Assembly.WHAT: 3,
}
BEFORE = {
    Assembly.TRACEBACK: 2,
    Assembly.FAULTHANDLER: 0,
    Assembly.TORCHRUN_TABLE: 400,
    Assembly.CONTINUED: 0,
    Assembly.RECORD: 0,
    Assembly.WHAT: 0,
}
TRACEBACK_TAIL = 12  # lines kept after a traceback's `Type: message` line (a message of several lines), at most
MESSAGE_LINES = 4  # of them, the lines of its channel that may go on with the message (`assemble_traceback`)
_NOT_THE_END = ("Traceback", "During handling of the above exception", "The above exception was")
# CPython's header: its assembly reads the message after the exception line as `_Tail` does. Others (IPython's
# `ValueError   Traceback (most recent call last)`, with unindented frame headers) read all TRACEBACK_TAIL lines.
PYTHON_HEADER = "Traceback (most recent call last):"
# torch._utils.ExceptionWrapper re-raises a DataLoader worker's exception with the worker's traceback as the
# rest of its message, under this line (`assemble_traceback` reads on to its last `Type: message` line).
ORIGINAL = "Original Traceback (most recent call last):"
# What a traceback's frame line starts with (indentation, or the box of rich's handler), as its assembly reads.
_FRAME = (" ", "\t", "│", "╰", "╭")
# A line between a header and its exception line that an assembly reads otherwise than a frame (a chained
# traceback, a wrapped frame's rest, a collapsed recursion, an exception group): no repeat is counted there.
_NOT_A_FRAME = ("Traceback", "During handling", "The above exception", "Exception Group", "[Previous line", ", line ")
# A traceback's source line under its frame (`    loss = model(batch)`), or the `^^^^` marks under it (a
# terminal's wrap may leave part of them at column 0). Three spaces are enough: Open MPI's `--tag-output`
# prefix is `[1,3]<stderr>:` up to v4 and `[1,3]<stderr>: ` from v5, so its stripping may take one of them.
_SOURCE_LINE = recache.compile(r" {3,}(?!File \")\S|\s*\^+\s*$")
_FRAME_LINE = recache.compile(r' {0,4}File "')  # CPython's frame line, as `python.traceback-cut-top` reads it
_HEADER_WORDS = "Traceback (most recent call last)"  # in every traceback header: CPython's, IPython's, rich's
# ... and in the `traceback :` field of torchrun's failure table, which no header rule reads: an excerpt that
# opens there is read from the frame under it, as one cut above its header is.
_TABLE_TRACEBACK = recache.compile(r"\s*traceback\s*: Traceback \(most recent call last\):\s*$")
# Source lines an excerpt may open on, above the frame or exception line read as its opening: Python 3.13 shows a
# statement of several lines whole, `~~~^^^` marks under each and `...<N lines>...` for its middle.
OPENING_SOURCE_LINES = 12
# A row of rich's traceback box (a source line, a blank row), and its frame row `│ /x.py:12 in f  │`, which
# `python.traceback-cut-top` reads; the rows of one frame's source and a blank row: RICH_ROWS at most.
_RICH_ROW = recache.compile(r"│.*│\s*$")
_RICH_FRAME = recache.compile(r"│ [^│\n]*\S:[0-9]+ in [^│\s]+ *│\s*$")
RICH_ROWS = 16


def openings(lines: Iterable[tuple[int, str | None]]) -> list[int]:
    """Of an input's lines from its opening one on (position, message), where the opening rules are tried:
    the opening line and, where it is a traceback's source line (an excerpt cut between a frame and its
    code), the lines after it up to the first that is not one, which opens the excerpt as the opening
    line would (at most OPENING_SOURCE_LINES on); in rich's boxed traceback, its rows up to a frame row
    (at most RICH_ROWS on), or to the box's bottom edge and the exception line under it. Where it is
    neither, a frame's line right under it opens the excerpt too: a paste whose selection began at the
    source line's first word lost its indent, or one that opens in torchrun's table at its `traceback :`
    field. A frame's line opens the excerpt alone."""
    out: list[int] = []
    source = rich = boxed = False
    for n, (at, text) in enumerate(lines):
        if boxed:  # rich's box ends over the traceback's `Type: message` line
            out.append(at)
            break
        if n == 0:
            if text is None or (_HEADER_WORDS in text and not _TABLE_TRACEBACK.match(text)):
                return [at]  # a header's own rule reads its frames
            if _FRAME_LINE.match(text):
                return [at]  # a frame opens the excerpt itself: the frames under it are its report's
            rich = _RICH_ROW.match(text) is not None and _RICH_FRAME.match(text) is None
            source = rich or _SOURCE_LINE.match(text) is not None
        elif not source:
            if text is not None and _FRAME_LINE.match(text) is not None:
                out.append(at)
            break
        out.append(at)
        if n > 0 and rich:
            boxed = text is not None and text.startswith("╰") and n < RICH_ROWS
            if not boxed and (n == RICH_ROWS or text is None or _RICH_FRAME.match(text) or not _RICH_ROW.match(text)):
                break
        elif n == OPENING_SOURCE_LINES or text is None or (n > 0 and _SOURCE_LINE.match(text) is None):
            break
    return out


REPEAT_BLOCK = 64  # frames read for a traceback's repeat key, at most
TRACEBACK_KEYS = 10_000  # distinct tracebacks watched for repeats per stream; later new ones are read as any
# over a header: more than it
_GOES_ON = ("Exception ignored", "Exception in thread", "During handling", "The above exception")
WALK_BYTES = 64 * 1024  # how far to look for a timestamped neighbour
WALK_LINES = 256  # timestamp-looking lines read in one walk, at most
REPEATS = 3  # a line with the same rule, channel and facts is kept this often, then counted
DISTINCT_CAUGHT = 100  # distinct caught tracebacks read per channel; later ones the rank went on from are counted
# The fact on the first of a traceback's repeats that says how many were counted and not read (`_thin_tracebacks`):
# the events' thinning adds them to the count of those read. No rule's group can have this name.
UNREAD_REPEATS = "repeats unread"
_NUMBER = recache.compile(r"[0-9]+")
MAX_SELECTED = 100_000  # lines kept for windows and neighbours; past this only hits are kept
# ... and the window of the latest hit: past the budget each new window first frees the lines the one
# before it took, so the last traceback of a file that logged caught ones by the hundred thousand is read
# whole (the earlier ones past the budget are then cut off)
SPARE = 1_000
_RANK_PREFIX = recache.compile(rb"\[rank([0-9]+)\]")  # as prefixes.py reads them
_MPI_PREFIX = recache.compile(rb"\[(?:[^,\]\[\n]+,)?([0-9]+)\](?:\[[^:\]\n]+:[0-9]+\])?<(?:stdout|stderr|stddiag)>")
WHOLE_BYTES = 8 * 1024 * 1024  # a stream read whole (see `_read_whole`) may be this big, no bigger
SAMPLE_WINDOW = 16 * 1024  # first bytes searched for a chunk's first (or last) progress line

# Every wall-clock stamp the clocks read has hh:mm:ss; kernel lines may have only `[ 123.456789]`.
_STAMPISH = {
    False: recache.compile(rb"[0-9][0-9]:[0-9][0-9]:[0-9][0-9]"),
    True: recache.compile(rb"[0-9][0-9]:[0-9][0-9]:[0-9][0-9]|\[ *[0-9]+\.[0-9]+\]"),
}
_BACK_WINDOW = 512  # bytes before `pos` first searched for the last stamp; then 8 times more, and so on


@record(frozen=False)
class StreamRead:
    """A source read: its stream of selected lines and the rule hits on them."""

    stream: Stream
    hits: list[Hit]
    timed_out: list[str]
    problem: str | None  # the input ended early and damaged (a truncated gzip)
    clipped: int = 0  # lines too long to read whole (their middle was skipped)
    caught_unread: int = 0  # caught tracebacks counted, not read (`_Selection._thin_tracebacks`)


def read_stream(source: Source, ctx: ClockContext, engine: Engine, *, spare_core: bool = False) -> StreamRead:
    """Scan one source once, chunk by chunk; with a `spare_core`, each chunk's bulk scan runs beside the
    count of its lines (in one process of a big file about a tenth faster; where every core has a worker,
    a little slower)."""
    with contextlib.closing(open_bytes(source.path, source.data)) as raw:
        budget = Budget()
        ahead = engine.scan_ahead(source.kind, budget) if spare_core and source.size > WHOLE_BYTES else None
        reader = ChunkReader(raw, ahead=ahead)
        chunks = iter(reader)
        first = next(chunks)
        end = head_end(first)
        whole = first.last and end == first.end  # the head sampled is the whole input
        selection = _Selection(source, ctx, engine, sample(first, end), (first.first_line, end), whole, budget=budget)
        if source.size <= WHOLE_BYTES and selection.parser.sequential:
            stream, hits = _read_whole(selection, [bytes(first.buf[first.start : first.end])], chunks)
            return StreamRead(stream, hits, selection.timed_out(), reader.problem, reader.clipped)
        for chunk in itertools.chain([first], chunks):
            selection.read(chunk)
            if chunk.last:
                selection.tail(chunk)
        stream, hits = selection.result(source)
        return StreamRead(stream, hits, selection.timed_out(), reader.problem, reader.clipped, selection.caught_unread)


def _read_whole(selection: _Selection, parts: list[bytes], chunks: Iterable[Chunk]) -> tuple[Stream, list[Hit]]:
    """A stream whose lines depend on the lines before them, read whole, every line kept (such streams
    are terminal captures and viewer exports: small)."""
    parts += [bytes(chunk.buf[chunk.start : chunk.end]) for chunk in chunks]
    lines = selection.parser.parse_all(list(split_lines(b"".join(parts).decode("utf-8", "replace"))))
    stream = build_stream(selection.source, lines, len(lines) + selection.parser.blank_dropped)
    stream.head_ranks = selection.parser.shape_ranks()
    data = "\n".join(stream.texts).encode("utf-8", "surrogateescape")
    starts = list(
        itertools.accumulate((len(t.encode("utf-8", "surrogateescape")) + 1 for t in stream.texts[:-1]), initial=0)
    )
    candidates: dict[int, set[int]] = {}
    for sampled in (False, True):
        for offset, rule in selection.engine.find(data, selection.kind, selection.budget, sampled=sampled):
            candidates.setdefault(bisect_right(starts, offset) - 1, set()).add(rule)
    opening = next((i for i, text in enumerate(stream.texts[:OPENING_LINES]) if not elided(text)), None)
    if selection.opening_rules and opening is not None:
        for at in openings((i, stream.texts[i]) for i in range(opening, len(stream))):
            candidates.setdefault(at, set()).update(selection.opening_rules)
    hits: list[Hit] = []
    dropped: set[int] = set()
    for index in sorted(candidates):
        for rule in sorted(candidates[index]):
            compiled = selection.rules[rule]
            if (m := selection._matches(rule, stream.texts[index])) is not None:
                facts = facts_of(m)
                repeat = selection._repeated(rule, lines[index].channel, facts, (len(hits), 0))
                if repeat.drop is not None:
                    dropped.add(repeat.drop[0])
                if repeat.keep:
                    hits.append(Hit(compiled, index, facts))
    for seen in selection.repeats.values():
        if seen.seen > REPEATS:
            hits[seen.first[0]].facts["repeats"] = str(seen.seen)
    return stream, [hit for i, hit in enumerate(hits) if i not in dropped]


_RepeatKey = tuple[int, Channel, tuple[tuple[str, str], ...]]
# rule, channel, host, pid, the header's facts, the exception line: what a traceback's event is made of
_TracebackKey = tuple[int, Channel, str | None, int | None, tuple[tuple[str, str], ...], str]
COUNTED_LINE_BYTES = 1024  # lines remembered by `_read_counted`: short ones,
COUNTED_LINES = 4096  # and this many at a time
_HEX = recache.compile(rb"0x[0-9a-fA-F]+")  # what `_shape` blanks, and `_shape_safe` looks for
_HEX_TEXT = recache.compile(r"0x[0-9a-fA-F]+")


@record
class Repeat:
    keep: bool  # keep this hit
    drop: tuple[int, int] | None = None  # the kept hit it replaces as the latest of its repeats


_KEEP, _COUNT = Repeat(True), Repeat(False)


@dataclass(slots=True)
class _Seen:
    """A repeatable hit's repeats (`_repeated`): changed in place, never replaced, so that `_counted` can
    hold on to it."""

    first: tuple[int, int]  # (line, segment) of the first
    seen: int = 0
    last: tuple[int, int] | None = None  # the latest kept


# channel, message, and per rule its key, or once that key is past REPEATS its _Seen (None: no match)
_CountedLine = tuple[Channel, str, dict[int, "_RepeatKey | _Seen | None"]]


@dataclass(slots=True)
class _Walk:
    """A walk ahead for the next timestamped line of a channel, going on in the next chunk."""

    channel: Channel
    budget: int  # bytes left to look through


@dataclass(slots=True)
class _Repeats:
    """A traceback's repeats (`_thin_tracebacks`): the first REPEATS are read, and the latest."""

    first: tuple[int, int]  # (line, segment)
    kept: int = 1  # of the first REPEATS, read
    unread: int = 0  # counted and not read, or read and replaced by a later one as the latest
    latest: tuple[int, int] | None = None  # read last after the first REPEATS


@dataclass(slots=True)
class _Tail:
    """The lines after a traceback's `Type: message` line that its assembly reads: the rest of a message
    of several lines, and the line of its channel after the message. They end at the first of its
    channel's lines that is stamped, that is the one after MESSAGE_LINES, or that follows a blank line
    (a blank line ends a message, and an assembly reads the next line of its channel only). The lines
    it leaves, up to TRACEBACK_TAIL, are read all the same where one is another channel's: an assembly
    of that channel may read on into it (`_others_until`)."""

    pid: int | None  # of the exception line: a relay's processes share a channel
    until: int  # the last line it may take: TRACEBACK_TAIL after the exception line
    more: int = 0  # lines of its channel, not blank, read after the exception line
    ended: bool = False  # a blank line came: the next line of its channel is the last one read
    whole: bool = False  # after another header than CPython's: it reads all TRACEBACK_TAIL lines


@dataclass(slots=True)
class _Memo:
    """Where the last walk of a channel started (walks cover what lies between two hits once)."""

    line: int
    position: int  # in the stream
    found: int = 0  # ahead: the line the walk stopped at


@record(frozen=False)
class _Selection:
    source: Source
    ctx: ClockContext
    engine: Engine
    sample: list[str]
    head: tuple[int, int]  # (first line of a chunk, where the input's first SNIFF_LINES end in it)
    whole: bool  # the sample is the whole input
    parser: LineParser = field(init=False)
    prefixes: ChannelCache = field(init=False)
    kind: StreamKind = field(init=False)
    rules: dict[int, CompiledRule] = field(init=False)
    countable: frozenset[int] = field(init=False)  # rules whose repeats are counted, not kept (`_counts_repeats`)
    opening_rules: frozenset[int] = field(init=False)  # rules tried on the opening line alone (`Rule.at_start`)
    untaught: bool = field(init=False)  # no user's prefix: lines may be remembered (`_read_counted`)
    budget: Budget = field(default_factory=Budget)
    lines: dict[int, list[Line]] = field(default_factory=dict)
    found: dict[int, dict[tuple[int, int], dict[str, str]]] = field(default_factory=dict)  # line -> hits
    done: set[int] = field(default_factory=set)  # hit lines whose surroundings are selected
    window_until: int = 0  # select every line up to this number (an assembler reads them)
    tracebacks: dict[Channel, bool] = field(default_factory=dict)  # open traceback windows: a frame seen?
    tails: dict[Channel, _Tail] = field(default_factory=dict)  # closed ones still reading after the exception
    whole_tails: set[Channel] = field(default_factory=set)  # open ones under another header than CPython's
    unread: dict[Channel, int] = field(default_factory=dict)  # tails ended early: the lines they left (to)
    assembling: set[Channel] = field(default_factory=set)  # channels with a hit an assembly reads on from
    traceback_until: int = 0  # where the closed traceback windows end
    other_until: int = 0  # where the windows of other assemblies end
    filled: tuple[int, int, int] = (-1, -1, 0)  # windows are filled up to: (chunk's first line, line, its end)
    back: dict[Channel, _Memo] = field(default_factory=dict)
    ahead: dict[Channel, _Memo] = field(default_factory=dict)
    pending: list[_Walk] = field(default_factory=list)
    unstamped: tuple[int, int] = (0, 0)  # stream positions [lo, hi) a walk ahead found no stamp-like text in
    spare: list[int] = field(default_factory=list)  # lines windows took past the budget, not hits: a heap
    stamped: set[Channel] = field(default_factory=set)  # channels with a timestamped line selected
    logical: int = 0  # logical lines read
    repeats: dict[_RepeatKey, _Seen] = field(
        default_factory=dict
    )  # repeatable hits: where the first is, how many were seen, where the latest kept one is
    counted_lines: dict[bytes, _CountedLine] = field(default_factory=dict)  # `_read_counted`
    # a counted line's rules and the repeats they count, by the key of its `counted_lines` entry (`_counted`)
    tallies: dict[bytes, tuple[frozenset[int], tuple[_Seen, ...]]] = field(default_factory=dict)
    trusted: dict[int, AnyPattern] = field(default_factory=dict)  # `_counted`'s patterns, looked up once
    traceback_repeats: dict[_TracebackKey, _Repeats] = field(default_factory=dict)  # `_thin_tracebacks`
    distinct: dict[tuple[Channel, str | None, int | None], int] = field(default_factory=dict)  # ... per channel
    caught_unread: int = 0  # caught tracebacks past a channel's DISTINCT_CAUGHT, counted and not read
    cut_off: dict[tuple[int, Channel], _Repeats] = field(default_factory=dict)  # `_cut_off_past_budget`
    unread_runs: list[tuple[int, int]] = field(default_factory=list)  # line numbers freed, or left for room
    skipped: set[int] = field(default_factory=set)  # kept cut-off headers, their windows never read
    dropped: set[int] = field(default_factory=set)  # spare lines that were hits no longer kept (`_drop`)
    opened: set[int] = field(default_factory=set)  # opening rules that matched (`_matches`)

    def __post_init__(self) -> None:
        self.parser = LineParser(self.source, self.ctx, self.sample, self.engine.taught, self.whole)
        self.prefixes = ChannelCache(self.parser)
        self.kind = self.source.kind
        self.rules = self.engine.by_index
        self.countable = _countable(self.engine)
        self.untaught = not self.engine.taught
        self.opening_rules = self.engine.opening_rules(self.kind) if self.source.opens else frozenset()

    def _messages(self, view: View, pos: int) -> Iterator[tuple[int, str | None]]:
        """The chunk's lines from `pos` on, each with its message (None: a line of several pieces)."""
        while pos < view.end:
            raw = view.text(pos)
            if (read := self.parser.message(raw, self.stamped)) is not None:
                yield pos, read[1]
            else:  # its channel is for the words to say: a full parse
                parsed = self.parser.parse(view.chunk.first_line, raw)
                yield pos, parsed[0].text if len(parsed) == 1 else None
            pos = view.next_line(pos + 1)

    def timed_out(self) -> list[str]:
        """User rules dropped on this stream for running out of time (their patterns or prefixes)."""
        return [*self.budget.timed_out, *(r for r in self.parser.spent() if r not in self.budget.timed_out)]

    # ---- per chunk ----

    def read(self, chunk: Chunk) -> None:
        self.logical += logical_lines(chunk)
        if len(self.done) > MAX_SELECTED:  # only hits of this chunk and of its context are surrounded again
            floor = chunk.first_line - chunk.buf.count(b"\n", chunk.context, chunk.start)
            self.done = {number for number in self.done if number >= floor}
        view = View(chunk)
        self._go_on(view)
        ahead = chunk.ahead if isinstance(chunk.ahead, Ahead) else None
        candidates = view.by_line(self.engine.find(view.region, self.kind, self.budget, ahead=ahead), view.start)
        cleaned = self._cleaned(view, view.start, view.end)
        for start, rules in cleaned.main.items():
            candidates.setdefault(start, set()).update(rules)
        if self.opening_rules and chunk.first_line == 1 and (opening := opening_line(view)) is not None:
            for start in openings(self._messages(view, opening)):
                candidates.setdefault(start, set()).update(self.opening_rules)
        hit_lines = self._confirm(view, candidates, main=True)
        hit_lines |= self._sampled(view, cleaned)
        self._surround(view, self._thin_tracebacks(view, hit_lines))

    def tail(self, chunk: Chunk) -> None:
        """The last lines: each channel's last progress line and last timestamped line."""
        view = View(chunk)
        begin = view.tail_start()
        if not self._one_key(view, begin, view.end):  # else the last chunk's last progress line is the one
            candidates = view.by_line(self._sampled_in(view, begin, view.end), 0)
            for start, rules in self._cleaned(view, begin, view.end).sampled.items():
                candidates.setdefault(start, set()).update(rules)
            self._surround(view, self._per_channel(view, candidates, backwards=True))
        self._last_seen(view, begin)

    def result(self, source: Source) -> tuple[Stream, list[Hit]]:
        for (rule, _, _), seen in self.repeats.items():
            if seen.seen > REPEATS:
                number, seg = seen.first
                self.found[number][(seg, rule)]["repeats"] = str(seen.seen)
        for key, tb in self.traceback_repeats.items():
            self._note_unread(key[0], tb)
        for (rule, _), tb in self.cut_off.items():
            self._note_unread(rule, tb)
        order = sorted(self.lines)
        index: dict[tuple[int, int], int] = {}
        for number in order:
            for seg in range(len(self.lines[number])):
                index[(number, seg)] = len(index)
        hits = [
            Hit(self.rules[rule], index[(number, seg)], facts)
            for number, found in self.found.items()
            for (seg, rule), facts in found.items()
        ]
        hits.sort(key=lambda h: (h.index, h.rule.index))
        parsed = [line for number in order for line in self.lines[number]]
        stream = build_stream(source, parsed, self.logical)
        stream.head_ranks = self.parser.shape_ranks()
        stream.gaps = self._gaps(stream.numbers)
        return stream, hits

    def _gaps(self, numbers: list[int]) -> list[int]:
        """The stream's indices with an `unread` line before them: a line an assembly may need that was
        freed or never read for want of room. Lines the scan leaves because no assembly reads them
        (another channel's, past a tail) make no gap: an assembly reads on over them as over a whole file."""
        runs = sorted([*self.unread_runs, *((n + 1, n + 1) for n in self.skipped)])
        if not runs:
            return []
        starts = [lo for lo, _ in runs]
        reach = list(itertools.accumulate((hi for _, hi in runs), max))  # the furthest run end so far
        gaps = []
        for i in range(1, len(numbers)):
            before, at = numbers[i - 1], numbers[i]
            if at > before + 1 and (j := bisect_left(starts, at)) and reach[j - 1] > before:
                gaps.append(i)
        return gaps

    def _note_unread(self, rule: int, tb: _Repeats) -> None:
        """The tracebacks counted and not read, on the first of them that is kept."""
        if tb.unread:
            number, seg = tb.first
            facts = self.found[number][(seg, rule)]
            facts[UNREAD_REPEATS] = str(tb.unread + int(facts.get(UNREAD_REPEATS, "0")))

    # ---- candidates to hits ----

    def _confirm(self, view: View, candidates: dict[int, set[int]], main: bool = False) -> set[int]:
        """Confirm candidate lines with the rules' own regexes: the starts of lines a candidate rule matches.
        In a chunk's `main` pass, no line has a hit yet: a line past the windows whose rules all count
        repeats is counted without its number (`_counted`)."""
        hit_lines: set[int] = set()
        past = self._past_windows(view) if main else view.end  # else: sampled progress rules, which keep
        countable, tallies, remembered, untaught = self.countable, self.tallies, self.counted_lines, self.untaught
        limit = COUNTED_LINE_BYTES  # of a line answered by its shape (`_counted_keys`)
        for start in sorted(candidates):
            rules = candidates[start]
            if start >= past and rules <= countable:
                raw = view.raw(start)
                # `_counted`'s quick answer written out (NCCL repeats its lines by the million): the line's
                # tally, or its shape's where it is not remembered itself and may be answered so (`_counted_keys`)
                key, tally = raw, tallies.get(raw)
                if tally is None and untaught and b"0x" in raw and len(raw) <= limit and raw not in remembered:
                    key = _shape(raw)
                    tally = tallies.get(key)
                if tally is not None and tally[0] == rules:
                    for repeats in tally[1]:
                        repeats.seen += 1
                    continue
                if self._counted(raw, rules, key):
                    continue
            number = view.number(start)
            found = self.found.setdefault(number, {})
            fresh = number not in self.lines
            for seg, line in enumerate(self._take(view, start, number, spare=False)):
                for index in sorted(candidates[start]):
                    if (seg, index) in found:
                        hit_lines.add(start)
                    elif (m := self._matches(index, line.text)) is not None:
                        facts = facts_of(m)
                        repeat = self._repeated(index, line.channel, facts, (number, seg))
                        if repeat.keep:
                            found[(seg, index)] = facts
                            hit_lines.add(start)
                        if repeat.drop is not None:
                            self._drop(repeat.drop, index)
            if not found:
                del self.found[number]
                if fresh and number > self.window_until:
                    del self.lines[number]  # parsed only to be confirmed: not a selected line
                elif fresh and len(self.lines) > MAX_SELECTED:
                    heapq.heappush(self.spare, number)  # a window's line: freed as the window's others are
        return hit_lines

    def _past_windows(self, view: View) -> int:
        """Where the chunk's first line past every window starts (the end: none is)."""
        pos = view.start
        for _ in range(max(0, self.window_until - view.chunk.first_line + 1)):
            pos = view.buf.find(b"\n", pos, view.end) + 1
            if pos == 0:
                return view.end
        return pos

    def _counted(self, raw: bytes, rules: set[int], key: bytes) -> bool:
        """A line only repeating context lines already kept REPEATS times (NCCL's identity lines, once per
        communicator and rank), with no tally yet: counted on the first without a full parse (no time, no
        Line). False where any of its rules still wants it kept, so that the result is the one the full
        parse gives (a timestamped line marks its channel as the parse does). A line whose rules all count
        is tallied under `key` (itself, or its shape: `_confirm`): the next one alike is counted at once."""
        read = self._counted_keys(raw, rules, None if key is raw else key)
        if read is None:
            return False
        by_rule = read[2]
        counts = []
        for index in rules:
            known = by_rule[index]
            if known is None:
                continue
            if not isinstance(known, _Seen):
                seen = self.repeats.get(known)
                if seen is None or seen.seen < REPEATS:
                    return False
                known = by_rule[index] = seen  # counted from now on: it only grows
            counts.append(known)
        for seen in counts:
            seen.seen += 1  # as `_repeated` counts a context line
        if counts and self.counted_lines.get(key) is read:
            self.tallies[key] = (frozenset(rules), tuple(counts))
        return bool(counts)

    def _counted_keys(self, raw: bytes, rules: set[int], shape: bytes | None) -> _CountedLine | None:
        """`_read_counted` with the repeat key of each of `rules` worked out. A line that differs from one
        read before only in its `0x` numbers (a communicator's address, its id) gets that line's answer,
        where that line's rules captured none of them (`_shape_safe`), nor did its prefixes hold one.
        `shape` is the line's `_shape` where it is not remembered itself and may be answered so (`_confirm`)."""
        line = self.counted_lines.get(raw)
        if line is not None and rules <= line[2].keys():
            return line
        hexed = b"0x" in raw
        if shape is not None and (shaped := self.counted_lines.get(shape)) is not None and rules <= shaped[2].keys():
            return shaped
        if line is None and (line := self._read_counted(raw)) is None:
            return None
        channel, text, by_rule = line
        safe = shape is not None and raw.endswith(said := text.encode()) and b"0x" not in raw[: len(raw) - len(said)]
        for index in rules - by_rule.keys():
            m = self._trusted(index).search(text)  # a countable rule is a built-in one
            by_rule[index] = None if m is None else _repeat_key(index, channel, facts_of(m))
            if m is not None and hexed and not _shape_safe(m):
                safe = False
                if shape is None:  # a line whose shape may be remembered: no longer
                    unsafe = _shape(raw)
                    self.counted_lines.pop(unsafe, None)
                    self.tallies.pop(unsafe, None)
        if safe and shape is not None and line is self.counted_lines.get(raw):
            self.counted_lines[shape] = line
        return line

    def _trusted(self, index: int) -> AnyPattern:
        if (pattern := self.trusted.get(index)) is None:
            pattern = self.trusted[index] = self.rules[index].trusted
        return pattern

    def _read_counted(self, raw: bytes) -> _CountedLine | None:
        """A line's channel and message, and its repeat key per rule, worked out once per distinct short
        line: NCCL repeats many lines word for word, and every part is a function of the line's bytes
        (its time, too, which marked its channel the first time). Not with a user's taught prefix, whose
        time bound could end between two repeats."""
        if (known := self.counted_lines.get(raw)) is not None:
            return known
        read = self.parser.message(raw.decode("utf-8", "replace"), self.stamped)
        if read is None:
            return None
        line: _CountedLine = (*read, {})
        if len(raw) <= COUNTED_LINE_BYTES and self.untaught:
            if len(self.counted_lines) >= COUNTED_LINES:
                self.counted_lines.clear()
                self.tallies.clear()
            self.counted_lines[raw] = line
        return line

    def _matches(self, index: int, text: str) -> AnyMatch | None:
        """Rule `index`'s match on `text`, or None; an opening rule that matched once is not tried again:
        it reads one line of the opening (the lines after an excerpt's first may each look like one)."""
        if index in self.opened:
            return None
        m = self.budget.search(self.rules[index], text)
        if m is not None and index in self.opening_rules:
            self.opened.add(index)
        return m

    def _repeated(self, index: int, channel: Channel, facts: dict[str, str], where: tuple[int, int]) -> Repeat:
        """What to do with a hit that repeats a line of the same rule, channel and facts (an NCCL
        identity line per communicator, an OOM line printed over and over): the first REPEATS are kept,
        later ones counted on the first. Of a cause or symptom, the latest is kept too (the verdict
        reads whether a rank went on after it), replacing the one kept before it (`drop`)."""
        rule = self.rules[index].rule
        if rule.assemble is not None or rule.role is Role.PROGRESS:
            return _KEEP
        if rule.role is Role.CONTEXT and rule.effects - {Effect.IDENTITY}:
            return _KEEP
        key = _repeat_key(index, channel, facts)
        if (seen := self.repeats.get(key)) is None:
            seen = self.repeats[key] = _Seen(where)
        seen.seen += 1
        if seen.seen <= REPEATS:
            return _KEEP
        if rule.role is Role.CONTEXT:
            return _COUNT
        last, seen.last = seen.last, where
        return Repeat(True, last)

    def _drop(self, where: tuple[int, int], index: int) -> None:
        number, seg = where
        found = self.found.get(number, {})
        found.pop((seg, index), None)
        if not found:
            self.found.pop(number, None)
            if len(self.lines) > MAX_SELECTED:  # no longer a hit: freed as a window's lines are, but its
                heapq.heappush(self.spare, number)  # absence hides nothing an assembly reads (no gap)
                self.dropped.add(number)

    def _note_assembling(self, numbers: Iterable[int]) -> None:
        """The channels of hits an assembly reads on from, noted before any window is filled: a window
        may read past a later hit (`_others_until`)."""
        for number in numbers:
            for seg, index in self.found.get(number, {}):
                if self.rules[index].rule.assemble is not None:
                    self.assembling.add(self.lines[number][seg].channel)

    def _thin_tracebacks(self, view: View, hit_lines: set[int]) -> set[int]:
        """Tracebacks that repeat one before (a caught exception logged over and over), counted as the
        events they make are thinned (`assemble._thinned`): the first REPEATS and the latest are read,
        and of those between, the ones a later repeat in this chunk replaces as the latest are counted
        without reading their windows. Only where nothing could read their lines otherwise: the only
        assemblies of the stream are of their channel, and each is a header and frames of one channel,
        its exception line right under them, and a stamped line of its channel right under that."""
        keyed = []
        numbered = list(view.numbers(sorted(hit_lines)))
        self._note_assembling(number for _, number in numbered)
        for start, number in numbered:
            keyed_at = self._traceback_key(view, start, number, hit_lines)
            if keyed_at is not None:
                keyed.append((start, number, *keyed_at))
        last = {key: i for i, (_, _, key, _) in enumerate(keyed)}
        progress: dict[Channel, tuple[int, TimeSpan]] | None = None  # worked out once a channel is past the cap
        for i, (start, number, key, after) in enumerate(keyed):
            seen = self.traceback_repeats.get(key)
            if seen is None and self.distinct.get(key[1:4], 0) >= DISTINCT_CAUGHT:
                progress = self._last_progress(numbered) if progress is None else progress
                if _went_on(progress, key[1], number, after):
                    self.caught_unread += 1
                    self._uncount((number, 0), key[0], start, hit_lines)
                    continue
            if seen is None:
                if len(self.traceback_repeats) < TRACEBACK_KEYS:
                    self.traceback_repeats[key] = _Repeats((number, 0))
                    self.distinct[key[1:4]] = self.distinct.get(key[1:4], 0) + 1
            elif seen.kept < REPEATS:
                seen.kept += 1
            elif last[key] != i:  # a later repeat in this chunk is the latest: this one is counted
                seen.unread += 1
                self._uncount((number, 0), key[0], start, hit_lines)
            else:
                self._replace_latest(seen, (number, 0), key[0])
        return self._cut_off_past_budget(view, hit_lines) if not self._room() else hit_lines

    def _uncount(self, where: tuple[int, int], rule: int, start: int, hit_lines: set[int]) -> None:
        """A traceback counted, not read: no longer a hit, its header's line freed unless a window keeps it."""
        self._drop(where, rule)
        hit_lines.discard(start)
        if where[0] > self.window_until and where[0] not in self.found:
            del self.lines[where[0]]  # parsed only to be confirmed

    def _last_progress(self, numbered: list[tuple[int, int]]) -> dict[Channel, tuple[int, TimeSpan]]:
        """Per progress key, the chunk's last stamped progress hit: its line and time."""
        out: dict[Channel, tuple[int, TimeSpan]] = {}
        for _, number in numbered:
            for seg, index in self.found.get(number, {}):
                line = self.lines[number][seg]
                if self.rules[index].rule.role is Role.PROGRESS and line.time is not None:
                    key = _progress_key(line.channel)
                    if number > out.get(key, (0, line.time))[0]:
                        out[key] = (number, line.time)
        return out

    def _replace_latest(self, seen: _Repeats, where: tuple[int, int], rule: int) -> None:
        """A traceback that is the latest of its repeats so far, in place of the one before (counted)."""
        if seen.latest is not None:
            self._drop(seen.latest, rule)
            seen.unread += 1
        seen.latest = where

    def _traceback_hit(self, number: int) -> tuple[int, dict[str, str], Line] | None:
        """The rule, facts and header of a line whose one hit is a traceback's, in one piece."""
        hits = self.found.get(number, {})
        if len(hits) != 1 or len(self.lines[number]) != 1:
            return None
        (((_, index), facts),) = hits.items()
        if self.rules[index].rule.assemble is not Assembly.TRACEBACK:
            return None
        return index, facts, self.lines[number][0]

    def _cut_off_past_budget(self, view: View, hit_lines: set[int]) -> set[int]:
        """Past the budget, each window frees the lines of the one before (`_free_spare`): a traceback
        with a later one of its channel in this chunk would be read only to be cut off. Its window is
        not read, and of such cut-off headers of one rule and channel, the first REPEATS and the latest
        are kept, the others counted on the first (memory bounded however many tracebacks a rank logs)."""
        headers: list[tuple[int, int, Channel, int]] = []  # start, number, channel, rule
        for start in sorted(hit_lines):
            number = view.number(start)
            if (hit := self._traceback_hit(number)) is not None:
                headers.append((start, number, hit[2].channel, hit[0]))
        last = {channel: number for _, number, channel, _ in headers}
        for start, number, channel, index in headers:
            if last[channel] == number:
                continue
            hit_lines.discard(start)
            self.done.add(number)
            self.skipped.add(number)
            seen = self.cut_off.get((index, channel))
            if seen is None:
                self.cut_off[(index, channel)] = _Repeats((number, 0))
            elif seen.kept < REPEATS:
                seen.kept += 1
            else:  # the one before is freed with the next window's lines (`_drop`)
                if seen.latest is not None:
                    self.skipped.discard(seen.latest[0])
                self._replace_latest(seen, (number, 0), index)
        return hit_lines

    def _traceback_key(
        self, view: View, start: int, number: int, hit_lines: set[int]
    ) -> tuple[_TracebackKey, TimeSpan] | None:
        """What makes a traceback's event the same as another's (`_thin_tracebacks`), and the time of the
        stamped line under its exception; None where it cannot be told from the lines read here."""
        if (hit := self._traceback_hit(number)) is None:
            return None
        index, facts, header = hit
        if header.rank is None or header.time is not None:
            return None
        if not header.text.startswith(PYTHON_HEADER):  # what follows another header is read otherwise
            return None
        if number <= self.window_until or self.assembling != {header.channel} or self._chained(view, start, header):
            return None
        pos = view.next_line(start + 1)
        for n in range(number + 1, number + 1 + REPEAT_BLOCK):
            if pos >= view.end or pos in hit_lines:  # a hit on its lines: the event absorbs it
                return None
            read = self._read_counted(view.raw(pos))
            if read is None or read[0] != header.channel or not read[1].strip():
                return None
            text = read[1]
            if text.startswith(_FRAME):
                pos = view.next_line(pos + 1)
                continue
            if text.startswith(_NOT_A_FRAME):
                return None
            if (after := self._stamp_after(view, view.next_line(pos + 1), n + 1, header)) is None:
                return None
            kind, colon, message = text.partition(":")
            said = kind + colon + alike(message)
            return (index, header.channel, header.host, header.pid, tuple(sorted(facts.items())), said), after
        return None

    def _chained(self, view: View, start: int, header: Line) -> bool:
        """Whether a traceback's header may go on from the line over it, which its assembly reads: unless
        that is a line of its channel, not blank, that no traceback reads on from (`Exception ignored in`,
        `During handling of the above exception`), or it cannot be read here."""
        if start <= view.context:
            return True
        read = self._read_counted(view.raw(view.line_start(start - 1)))
        return read is None or read[0] != header.channel or not read[1].strip() or read[1].startswith(_GOES_ON)

    def _stamp_after(self, view: View, pos: int, number: int, header: Line) -> TimeSpan | None:
        """The time of the line at `pos` where it is stamped and of the header's channel and process: the
        exception's message ends over it, and no relay's header (`-- Process N terminated`) follows."""
        if pos >= view.end:
            return None
        raw = view.text(pos)
        if (read := self.parser.one_piece(raw)) is None:  # else: the parse's answer without a Line
            lines = self.parser.parse(number, raw)
            if len(lines) != 1 or (lines[0].channel, lines[0].pid) != (header.channel, header.pid):
                return None
            return None if lines[0].text.startswith("-- ") else lines[0].time
        channel, text, prefix = read
        if (channel, prefix.pid) != (header.channel, header.pid) or text.startswith("-- "):
            return None
        return self.parser.time_of(text, prefix)

    def _sampled(self, view: View, cleaned: _Cleaned) -> set[int]:
        """Progress lines: all in the head, and the first and last confirmed ones of the chunk."""
        hits: set[int] = set()
        head_end = self._head_end(view.chunk) if view.chunk.first_line <= SNIFF_LINES else view.start
        if head_end > view.start and not self._one_key(view, view.start, head_end):
            head = view.by_line(self._sampled_in(view, view.start, head_end), 0)
            for start, rules in cleaned.sampled.items():
                if start < head_end:
                    head.setdefault(start, set()).update(rules)
            hits |= self._per_channel(view, head, backwards=False)
        dirty = sorted(cleaned.sampled.items())
        first = _earliest(
            self._confirmed(view, self._windows(view, view.start, view.end, False), False),
            self._confirmed(view, ({s: r} for s, r in dirty), False),
        )
        if first is None:
            return hits
        last = _latest(
            self._confirmed(view, self._windows(view, first, view.end, True), True),
            self._confirmed(view, ({s: r} for s, r in reversed(dirty)), True),
        )
        return hits | {first} | ({last} if last is not None else set())

    def _head_end(self, chunk: Chunk) -> int:
        if self.head[0] != chunk.first_line:
            self.head = (chunk.first_line, head_end(chunk))
        return self.head[1]

    def _one_key(self, view: View, lo: int, hi: int) -> bool:
        """Whether every progress line in [lo, hi) has the same thinning key: the file names the rank, and
        no prefix in the range names another (then a range's first and last progress lines suffice)."""
        rank = self.source.where.rank
        if rank is None or self.parser.srun_labels:
            return False
        named = {int(n) for n in _RANK_PREFIX.findall(view.buf, lo, hi) if len(n) <= 9}  # no rank has more digits
        if view.buf.find(b"<std", lo, hi) >= 0:
            named.update(int(n) for n in _MPI_PREFIX.findall(view.buf, lo, hi) if len(n) <= 9)
        return named <= {rank}

    def _per_channel(self, view: View, candidates: dict[int, set[int]], *, backwards: bool) -> set[int]:
        """For each thinning key, the first (or last) candidate line that a progress rule really matches."""
        covered: set[Channel] = set()
        hits: set[int] = set()
        for start in sorted(candidates, reverse=backwards):
            keys = [c if c is None else _progress_key(c) for c in self.prefixes.channels(view, start)]
            if all(k is not None and k in covered for k in keys):
                continue
            if self._confirm(view, {start: candidates[start]}):
                hits.add(start)
                number = view.number(start)
                lines = self.lines[number]
                confirmed = [seg for seg, rule in self.found[number] if rule in candidates[start]]
                covered.update(_progress_key(lines[seg].channel) for seg in confirmed)
        return hits

    def _confirmed(self, view: View, windows: Iterable[dict[int, set[int]]], backwards: bool) -> int | None:
        """The first (or last) candidate line in the windows that a rule really matches."""
        for candidates in windows:
            for start in sorted(candidates, reverse=backwards):
                if self._confirm(view, {start: candidates[start]}):
                    return start
        return None

    def _windows(self, view: View, lo: int, hi: int, backwards: bool) -> Iterable[dict[int, set[int]]]:
        """Candidate progress lines, window by growing window from one end of [lo, hi)."""
        size = SAMPLE_WINDOW
        while lo < hi:
            if backwards:
                cut = max(lo, view.line_start(max(lo, hi - size)))
                yield view.by_line(self._sampled_in(view, cut, hi), 0)
                hi = cut
            else:
                cut = min(hi, view.next_line(lo + size))
                yield view.by_line(self._sampled_in(view, lo, cut), 0)
                lo = cut
            size *= 4

    def _sampled_in(self, view: View, lo: int, hi: int) -> list[Match]:
        data = memoryview(view.buf)[lo:hi]
        return [(lo + off, i) for off, i in self.engine.find(data, self.kind, self.budget, sampled=True)]

    def _cleaned(self, view: View, lo: int, hi: int) -> _Cleaned:
        """Lines with bytes that `clean` deletes, cleaned and scanned again."""
        out = _Cleaned()
        dirty: list[int] = []
        line_end = -1
        for off in sorted(self.engine.dirty(memoryview(view.buf)[lo:hi])):
            if lo + off >= line_end:  # one look per line, however many dirty bytes it holds
                dirty.append(view.line_start(lo + off + 1))
                line_end = view.next_line(lo + off + 1)
        if not dirty:
            return out
        texts = [clean_pieces(view.text(start), MAX_LINE).encode("utf-8", "surrogateescape") for start in dirty]
        owners = dirty
        starts = [0]
        for text in texts[:-1]:
            starts.append(starts[-1] + len(text) + 1)
        data = b"\n".join(texts)
        for sampled, into in ((False, out.main), (True, out.sampled)):
            for offset, rule in self.engine.find(data, self.kind, self.budget, sampled=sampled):
                into.setdefault(owners[bisect_right(starts, offset) - 1], set()).add(rule)
        return out

    # ---- what a hit needs around it ----

    def _surround(self, view: View, hit_lines: set[int]) -> None:
        numbered = list(view.numbers(sorted(hit_lines)))
        self._note_assembling(number for _, number in numbered)
        for start, number in numbered:
            if number not in self.done:
                self.done.add(number)
                self._around(view, start, number)

    def _around(self, view: View, start: int, number: int) -> None:
        walked: set[Channel] = set()
        for seg, index in self.found.get(number, {}):
            rule = self.rules[index].rule
            if rule.assemble is Assembly.TRACEBACK:
                header = self.lines[number][seg]
                self._open_traceback(header.channel, number, header.text.startswith(PYTHON_HEADER))
            elif rule.assemble is not None:
                self.other_until = max(self.other_until, number + AFTER[rule.assemble])
            if rule.assemble is not None:
                self._window(view, start, number, BEFORE[rule.assemble], AFTER[rule.assemble])
            line = self.lines[number][seg]
            if line.time is None and line.channel not in walked and self._room():
                walked.add(line.channel)
                self._walk_back(view, start, number, line.channel)
                self._walk_ahead(view, start, number, line.channel)

    def _window(self, view: View, start: int, number: int, before: int, after: int) -> None:
        if not self._room():
            self._free_spare(number - before)
        pos = start
        for n in range(number - 1, number - 1 - before, -1):
            if pos <= view.context:
                break
            pos = view.line_start(pos - 1)
            self._take(view, pos, n)
        self.window_until = max(self.window_until, number + after)
        if not self.tracebacks:  # a traceback's header on lines read already, its end among them too
            self.window_until = self._traceback_window()
        self._fill_window(view, start, number)

    def _fill_window(self, view: View, start: int, number: int) -> None:
        pos, n = start, number
        chunk, line, end = self.filled
        if chunk == view.chunk.first_line and number <= line:  # walked already: go on from there
            pos, n = end, line + 1
        while True:
            if self.unread and n > self.window_until:  # tails that ended early (here, or in a replay)
                self.traceback_until = max(self.traceback_until, self._others_until(view, pos, n))
                self.window_until = max(self.window_until, self.traceback_until)
            if not (n <= self.window_until and pos < view.end and self._window_room()):
                break
            lines = self._take(view, pos, n)
            if (self.tracebacks or self.tails) and self._traceback_ends(lines, n):
                self.window_until = self._traceback_window()
            pos, n = view.next_line(pos + 1), n + 1
        if n <= self.window_until and pos < view.end:  # out of room: the rest of the window is unread
            self.unread_runs.append((n, n))
        if pos != start:
            self.filled = (view.chunk.first_line, n - 1, pos)

    def _open_traceback(self, channel: Channel, number: int, python: bool = True) -> None:
        """A traceback header's window. One opened on lines a window already walked takes its state from
        them (each line is walked once, however many headers a window holds); one still open goes on."""
        if channel in self.tracebacks:
            return
        self.tracebacks[channel] = False
        if not python:
            self.whole_tails.add(channel)
        earlier = self.tails.pop(channel, None)  # its lines were read: the replay is the new one's
        for n in range(number, self.filled[1] + 1):
            if self._traceback_ends([line for line in self.lines.get(n, ()) if line.channel == channel], n, channel):
                self.window_until = self._traceback_window()
            if channel not in self.tracebacks and channel not in self.tails:
                break
        if earlier is not None and channel not in self.tails:
            self.tails[channel] = earlier

    def _traceback_ends(self, lines: list[Line], number: int, only: Channel | None = None) -> bool:
        """Whether the last open traceback window ends at this line: its channel's first unindented line
        after a frame (the `Type: message` line; a chained traceback's header is a hit of its own), and
        the last tail after one has read what it needs (`_Tail`). A replay of one channel's lines (`only`)
        moves that channel's windows alone."""
        for line in lines:
            blank = not line.text.strip()
            if self.tails and self._reopens(line, number):
                continue
            if self.tails:
                self._tail_reads(line, blank, number)
            framed = self.tracebacks.get(line.channel)
            if framed is None or blank:
                continue
            if line.text[:1] in " \t":
                self.tracebacks[line.channel] = True
            elif framed and not line.text.startswith(_NOT_THE_END):
                del self.tracebacks[line.channel]
                whole = line.channel in self.whole_tails
                self.whole_tails.discard(line.channel)
                self.tails[line.channel] = _Tail(line.pid, number + TRACEBACK_TAIL, whole=whole)
        return not self.tracebacks

    def _reopens(self, line: Line, number: int) -> bool:
        """Whether this line, right after an exception line of its channel, starts the traceback of a
        DataLoader worker (`ORIGINAL`) that the exception's message holds: its window opens as a header's."""
        tail = self.tails.get(line.channel)
        if tail is None or tail.pid != line.pid or tail.ended or tail.more or not line.text.startswith(ORIGINAL):
            return False
        del self.tails[line.channel]
        self.tracebacks[line.channel] = False
        self.window_until = max(self.window_until, number + AFTER[Assembly.TRACEBACK])
        return True

    def _tail_reads(self, line: Line, blank: bool, number: int) -> None:
        """One line read on after exception lines: which tails it ends (its own channel's: an assembly
        reads no other channel's lines, and a replay of one channel's lines holds only those)."""
        for channel, done in list(self.tails.items()):
            if done.until < number:  # read to its last line
                del self.tails[channel]
                self.traceback_until = max(self.traceback_until, done.until)
        if blank:  # the end of a message of its own channel and process
            if (ended := self.tails.get(line.channel)) is not None and ended.pid == line.pid:
                ended.ended = True
            return
        tail = self.tails.get(line.channel)
        if tail is None or tail.pid != line.pid or tail.whole:
            return
        if tail.ended or line.time is not None or tail.more == MESSAGE_LINES:
            del self.tails[line.channel]
            self.traceback_until = max(self.traceback_until, number)
            self.unread[line.channel] = max(tail.until, self.unread.get(line.channel, 0))
        else:
            tail.more += 1

    def _others_until(self, view: View, pos: int, number: int) -> int:
        """Where the window must go on to after tails that ended early: to the last line they left, if
        one of those lines is of another channel with an assembly (0: none needs reading). An assembly
        reads on from its hit: one of a hit past these lines reads within its own window."""
        until, theirs = max(self.unread.values()), set(self.unread)
        self.unread.clear()
        if self.assembling <= theirs:
            return 0
        while number <= until:
            if pos >= view.end:
                return 0 if view.chunk.last else until
            if any(channel not in theirs for channel in self.prefixes.channels(view, pos)):
                return until
            pos, number = view.next_line(pos + 1), number + 1
        return 0

    def _traceback_window(self) -> int:
        """Where the window ends once no traceback in it is open: at the last line a tail may still read."""
        return max(self.other_until, self.traceback_until, *(tail.until for tail in self.tails.values()))

    def _walk_back(self, view: View, start: int, number: int, channel: Channel) -> None:
        memo = self.back.get(channel)
        floor, floor_at = (memo.line, memo.position - view.base) if memo and memo.line < number else (0, -1)
        if memo is None or memo.line < number:
            self.back[channel] = _Memo(number, view.base + start)
        lo = max(view.context, start - WALK_BYTES, floor_at)
        pos = start
        for _ in range(WALK_LINES):
            found = _last_stamp(view.buf, lo, pos, self.parser.kernel)
            if found is None:
                return
            pos = view.line_start(found)
            n = number - view.buf.count(b"\n", pos, start)
            if n <= floor or self._stamped(self._take(view, pos, n), channel):
                return

    def _walk_ahead(self, view: View, start: int, number: int, channel: Channel) -> None:
        memo = self.ahead.get(channel)
        if (memo and memo.line <= number < memo.found) or any(w.channel == channel for w in self.pending):
            return
        self.ahead[channel] = _Memo(number, view.base + start, number + 1)
        self._ahead_from(view, view.next_line(start + 1), number + 1, _Walk(channel, WALK_BYTES))

    def _ahead_from(self, view: View, pos: int, number: int, walk: _Walk) -> None:
        stop = min(view.end, pos + walk.budget)
        walk.budget -= stop - pos
        for _ in range(WALK_LINES):
            m = _STAMPISH[self.parser.kernel].search(view.buf, self._unseen(view, pos), stop)
            if m is None:
                self.unstamped = (view.base + pos, view.base + stop)
                break
            line_start = view.line_start(m.start())
            number += view.buf.count(b"\n", pos, line_start)
            pos = view.next_line(line_start + 1)
            if self._stamped(self._take(view, line_start, number), walk.channel):
                self.ahead[walk.channel].found = number
                return
            number += 1
        else:
            walk.budget = 0
        self.ahead[walk.channel].found = number
        if walk.budget > 0 and not view.chunk.last:
            self.pending.append(walk)

    def _unseen(self, view: View, pos: int) -> int:
        """Where a search for stamp-like text from `pos` must begin: past what an earlier walk found none
        in (hits one after another without stamps each walk the same bytes otherwise), from the start of
        the line that range ended in (a match lies within one line and may straddle its end)."""
        lo, hi = self.unstamped
        if not lo <= view.base + pos < hi:
            return pos
        return max(pos, view.line_start(hi - view.base))

    def _go_on(self, view: View) -> None:
        """Windows and walks ahead that the previous chunk ended in the middle of."""
        if self.window_until >= view.chunk.first_line:
            self._fill_window(view, view.start, view.chunk.first_line)
        walks, self.pending = self.pending, []
        for walk in walks:
            self._ahead_from(view, view.start, view.chunk.first_line, walk)

    def _last_seen(self, view: View, begin: int) -> None:
        """From the end back, the last timestamped line of every channel seen timestamped."""
        missing = {c for c in self.stamped if c != (None, None)}
        pos, number = view.end, view.number(view.end)
        while missing and pos > begin:
            found = _last_stamp(view.buf, begin, pos, self.parser.kernel)
            if found is None:
                return
            line_start = view.line_start(found)
            number -= view.buf.count(b"\n", line_start, pos)
            missing -= {line.channel for line in self._take(view, line_start, number) if line.time is not None}
            pos = line_start

    # ---- lines ----

    def _take(self, view: View, start: int, number: int, spare: bool = True) -> list[Line]:
        """A line, parsed once; past the budget it is `spare` (freed for later windows) unless it may be
        a hit (`_confirm`, which makes it spare if it is not one)."""
        parsed = self.lines.get(number)
        if parsed is None:
            parsed = self.lines[number] = self.parser.parse(number, view.text(start))
            self.stamped.update(line.channel for line in parsed if line.time is not None)
            if spare and len(self.lines) > MAX_SELECTED:
                heapq.heappush(self.spare, number)
        return parsed

    @staticmethod
    def _stamped(lines: list[Line], channel: Channel) -> bool:
        return any(line.time is not None and line.channel == channel for line in lines)

    def _room(self) -> bool:
        return len(self.lines) < MAX_SELECTED

    def _window_room(self) -> bool:
        return len(self.lines) < MAX_SELECTED or len(self.spare) < SPARE

    def _free_spare(self, keep_from: int) -> None:
        """Past the budget: the lines the windows before took, but their hits and what the next window
        (from line `keep_from`) reads, make room for the next. `spare` is a heap: each line is freed once,
        however many windows come (a rank that logged a hundred thousand caught tracebacks)."""
        spare, runs = self.spare, self.unread_runs
        while spare and spare[0] < keep_from:
            number = heapq.heappop(spare)
            dropped = number in self.dropped
            self.dropped.discard(number)
            if number not in self.found and self.lines.pop(number, None) is not None and not dropped:
                if runs and runs[-1][1] == number - 1:
                    runs[-1] = (runs[-1][0], number)
                else:
                    runs.append((number, number))


def alike(message: str) -> str:
    """An exception's message with its numbers blanked: caught exceptions that differ only in a count, an
    index or a size (`image file is truncated (3500 bytes not processed)`) repeat one another."""
    return _NUMBER.sub("#", message)


def _shape(raw: bytes) -> bytes:
    """A counted line's shape: its `0x` numbers blanked (NCCL gives each communicator an address and an id),
    marked with a line feed, which no line holds, so that a shape never equals a line."""
    return b"\n" + _HEX.sub(b"0x", raw)


def _shape_safe(match: AnyMatch) -> bool:
    """Whether a match's groups captured no part of a `0x` number of its line: another line with other
    such numbers, the same otherwise, gives the same facts (`_counted_keys`)."""
    groups = [match.span(g) for g in range(1, match.re.groups + 1)]
    numbers = [m.span() for m in _HEX_TEXT.finditer(match.string)]
    return not any(start < hi and lo < end for lo, hi in numbers for start, end in groups)


def _repeat_key(index: int, channel: Channel, facts: dict[str, str]) -> _RepeatKey:
    """What makes two hits repeats of one another: the rule, the channel and the facts (in the order of
    its pattern's groups, one order per rule: `facts_of`)."""
    return index, channel, tuple(facts.items())


_COUNTABLE: weakref.WeakKeyDictionary[Engine, frozenset[int]] = weakref.WeakKeyDictionary()


def _countable(engine: Engine) -> frozenset[int]:
    """The engine's rules whose repeats are counted (`_counts_repeats`), worked out once, not per stream."""
    if engine not in _COUNTABLE:
        _COUNTABLE[engine] = frozenset(r.index for r in engine.rules if _counts_repeats(r.rule))
    return _COUNTABLE[engine]


def _counts_repeats(rule: Rule) -> bool:
    """A built-in context rule whose repeats `_repeated` counts rather than keeps."""
    return rule.builtin and rule.role is Role.CONTEXT and rule.assemble is None and not rule.effects - {Effect.IDENTITY}


def _went_on(progress: dict[Channel, tuple[int, TimeSpan]], channel: Channel, number: int, after: TimeSpan) -> bool:
    """Whether a caught traceback's rank logged progress after it: a progress line of its rank later in the
    chunk (`progress`: the last of each) and stamped strictly later than the line under its exception. The
    rank lived past it, as the verdict reads a caught exception (`verdict._went_on`): it is no death."""
    step = progress.get(_progress_key(channel))
    return step is not None and step[0] > number and step[1].earliest > after.latest


def _progress_key(channel: Channel) -> Channel:
    """What the pipeline thins progress events by: the rank, or the local rank of a line without one."""
    rank, local = channel
    return (rank, None) if rank is not None else (None, local)


@record(frozen=False)
class _Cleaned:
    """Candidate rules of dirty lines, found on their cleaned text: line start -> rule indices."""

    main: dict[int, set[int]] = field(default_factory=dict)
    sampled: dict[int, set[int]] = field(default_factory=dict)


def _earliest(*starts: int | None) -> int | None:
    return min((s for s in starts if s is not None), default=None)


def _latest(*starts: int | None) -> int | None:
    return max((s for s in starts if s is not None), default=None)


def _last_stamp(buf: bytes | bytearray, lo: int, pos: int, kernel: bool) -> int | None:
    """Where, in the last line of `buf[lo:pos]` that holds a stamp-looking match, one such match starts
    (None: no line does). Searched forward in windows that grow back from `pos`: a match holds no line
    feed, so the last match of a window lies in the last line with one, as in a reverse search."""
    pattern, width = _STAMPISH[kernel], _BACK_WINDOW
    while True:
        start = max(lo, pos - width)
        last = deque(pattern.finditer(buf, start, pos), maxlen=1)
        if last:
            return last[0].start()
        if start == lo:
            return None
        width *= 8
