"""Line arithmetic over a chunk's buffer, and what cheap byte checks tell about its lines.

Line starts are offsets into the buffer; a line's number is counted (newlines) from the nearest offset
whose number is known. Nothing here decodes more than the lines asked for.
"""

from __future__ import annotations

from collections.abc import Iterable

from rankautopsy import recache
from rankautopsy.scan.engine import DIRTY, Match
from rankautopsy.sources.lines import SNIFF_LINES, Channel, LineParser
from rankautopsy.sources.read import MARK_BYTES, MAX_LINE, Chunk, pieces, split_lines

TAIL_LINES, TAIL_BYTES = 2000, 1024 * 1024
_INNER_CR = recache.compile(rb"\r(?!\n)")
_DIRTY = recache.compile(DIRTY)


class View:
    """A chunk's buffer with line arithmetic."""

    def __init__(self, chunk: Chunk) -> None:
        self.chunk = chunk
        self.buf = chunk.buf
        self.context, self.start, self.end, self.base = chunk.context, chunk.start, chunk.end, chunk.base
        self.region = memoryview(chunk.buf)[chunk.start : chunk.end]
        # line starts with known numbers: count newlines from the nearest
        partial = chunk.end > chunk.start and chunk.buf[chunk.end - 1] != 0x0A  # a last line without `\n`
        self._anchors = [(chunk.start, chunk.first_line), (chunk.end, chunk.first_line + chunk.lines - partial)]
        self._known: dict[int, int] = {}  # line start -> number: a hit's is asked for again and again
        self._ends: dict[int, int] = {}  # line start -> end, for the lines of `by_line`'s matches

    def number(self, start: int) -> int:
        """The number of the line starting at `start`."""
        if (known := self._known.get(start)) is not None:
            return known
        marks = self.chunk.marks
        if marks is not None and self.start <= start < self.end:
            k = (start - self.start) // MARK_BYTES
            at, number = self.start + k * MARK_BYTES, self.chunk.first_line + marks[k]
            if len(self._anchors) > 2 and at <= self._anchors[2][0] <= start:  # the line asked last is nearer
                at, number = self._anchors[2]
            number += self.buf.count(b"\n", at, start)
            self._anchors[2:] = [(start, number)]
            self._known[start] = number
            return number
        at, number = self._anchors[0]
        for anchor in self._anchors[1:]:  # the nearest (a loop: min() with a key costs more at 100k calls)
            if abs(anchor[0] - start) < abs(at - start):
                at, number = anchor
        if start >= at:
            number += self.buf.count(b"\n", at, start)
        else:
            number -= self.buf.count(b"\n", start, at)
        self._anchors[2:] = [(start, number)]
        self._known[start] = number
        return number

    def numbers(self, starts: list[int]) -> Iterable[tuple[int, int]]:
        for start in starts:
            yield start, self.number(start)

    def line_end(self, start: int) -> int:
        """Where the line starting at `start` ends (its `\\n`, or the end of the chunk)."""
        end = self.buf.find(b"\n", start, self.end)
        return self.end if end < 0 else end

    def raw(self, start: int) -> bytes:
        end = self._ends.get(start)
        return bytes(self.buf[start : self.line_end(start) if end is None else end])

    def text(self, start: int) -> str:
        return self.raw(start).decode("utf-8", "replace")

    def line_start(self, pos: int) -> int:
        """The start of the line holding `pos - 1` (never before the context: no negative offsets)."""
        return max(self.context, self.buf.rfind(b"\n", self.context, max(pos, self.context)) + 1)

    def next_line(self, pos: int) -> int:
        """The start of the line after the one holding `pos - 1` (or the end)."""
        if pos <= self.context:
            return pos
        nl = self.buf.find(b"\n", pos - 1, self.end)
        return self.end if nl < 0 else nl + 1

    def by_line(self, matches: list[Match], base: int) -> dict[int, set[int]]:
        """Matches (offsets from `base`) grouped by the start of their line."""
        out: dict[int, set[int]] = {}
        end = -1
        rules: set[int] = set()
        context, last, ends = self.context, self.end, self._ends
        rfind, find = self.buf.rfind, self.buf.find
        for pos, rule in sorted(matches):  # in order, a line's bounds are looked for once (a line of a
            at = base + pos  # million `\r` pieces holds a million matches)
            if at <= end:  # a match may be reported at its line's `\n` (a prefilter's `$`)
                rules.add(rule)
                continue
            # `line_start` and `line_end` written out: a call each costs more at 1M lines
            start = rfind(b"\n", context, at) + 1 if at >= context else context
            start = start if start > context else context
            end = find(b"\n", start, last)
            if end < 0:
                end = last
            ends[start] = end
            rules = out.setdefault(start, set())
            rules.add(rule)
        return out

    def tail_start(self) -> int:
        """Where the last TAIL_LINES lines begin, or the first whole line of the last TAIL_BYTES."""
        lo = max(self.context, self.end - TAIL_BYTES)
        lo = lo if lo == self.context else self.next_line(lo)
        return nth_line_feed(self.buf, lo, self.end, TAIL_LINES + (self.end > lo and self.buf[self.end - 1] == 0x0A))


OPENING_LINES = 20  # lines searched for an input's opening line
_ELISION = recache.compile(rb"[ \t\r.]*(?:\xe2\x80\xa6[ \t\r.]*)*")  # `prefixes.elided`, on bytes


def opening_line(view: View) -> int | None:
    """Where the first line with words of a chunk starts (blank lines and a paste's `...` skipped):
    of the first chunk, the input's opening line."""
    pos = view.start
    for _ in range(OPENING_LINES):
        if pos >= view.end:
            return None
        end = view.line_end(pos)
        if _ELISION.fullmatch(view.buf, pos, end) is None:
            return pos
        pos = end + 1
    return None


def logical_lines(chunk: Chunk) -> int:
    """Logical lines of a chunk: one per physical line, or one per non-blank `\\r`-separated piece."""
    buf, end = chunk.buf, chunk.end
    count = chunk.lines
    pos = chunk.start
    if buf.find(b"\r", pos, end) < 0:
        return count
    while (m := _INNER_CR.search(buf, pos, end)) is not None:
        start = buf.rfind(b"\n", chunk.start, m.start()) + 1 or chunk.start
        stop = buf.find(b"\n", m.start(), end)
        stop = end if stop < 0 else stop
        count += len(pieces(bytes(buf[start:stop]).decode("utf-8", "replace"))) - 1
        pos = stop + 1
    return count


def sample(chunk: Chunk, end: int) -> list[str]:
    """The first SNIFF_LINES logical lines: they decide srun labels and content-rank shapes."""
    text = bytes(chunk.buf[chunk.start : end]).decode("utf-8", "replace")
    if "\r" in text:
        return [line for _, line in split_lines(text)][:SNIFF_LINES]
    lines = text.split("\n")  # the common case, without a loop in Python: what split_lines does
    if lines[-1] == "":
        lines.pop()
    lines = lines[:SNIFF_LINES]
    return [line[:MAX_LINE] for line in lines] if max(map(len, lines), default=0) > MAX_LINE else lines


def head_end(chunk: Chunk) -> int:
    """Where the first SNIFF_LINES physical lines of the input end in this chunk."""
    wanted = SNIFF_LINES - chunk.first_line + 1
    if wanted <= 0:
        return chunk.start
    buf, pos = chunk.buf, chunk.start - 1
    for _ in range(wanted):  # a find per line: a split made an object of each (and copied the rest)
        pos = buf.find(b"\n", pos + 1, chunk.end)
        if pos < 0:
            return chunk.end
    return pos + 1


def nth_line_feed(buf: bytes | bytearray, lo: int, hi: int, n: int) -> int:
    """Where the line after the `n`-th line feed counted back from `hi` starts (`lo` if there are fewer
    in `buf[lo:hi]`)."""
    pos = hi
    for _ in range(n):
        pos = buf.rfind(b"\n", lo, pos)
        if pos < 0:
            return lo
    return pos + 1


class ChannelCache:
    """Channels of raw lines, remembered by the launcher prefix bytes that decide them: most lines of a
    stream share a few prefixes, and comparing bytes is much cheaper than parsing."""

    _LIMIT = 64

    def __init__(self, parser: LineParser) -> None:
        self._parser = parser
        self._known: dict[bytes, Channel] = {}

    def channels(self, view: View, start: int) -> list[Channel | None]:
        buf = view.buf
        for head, known in self._known.items():
            if buf.startswith(head, start, view.end):
                if inner_cr(buf, start, view.line_end(start)):
                    break
                return [known]
        raw = view.raw(start)
        text = raw.decode("utf-8", "replace")
        found = self._parser.channels(text)
        if len(found) == 1 and len(self._known) < self._LIMIT:
            channel, taken = found[0]
            key = _prefix_key(raw, text, taken)
            if key is not None and channel is not None:
                self._known[key] = channel
        return [channel for channel, _ in found]


def inner_cr(buf: bytes | bytearray, start: int, end: int) -> bool:
    """Whether a line has a `\\r` other than a last one (it is then several logical lines)."""
    cr = buf.find(b"\r", start, end)
    return 0 <= cr < end - 1


def _prefix_key(raw: bytes, text: str, taken: int) -> bytes | None:
    """The bytes that decide a line's prefixes: those taken and the two after (unless they could start
    another prefix), for a line that cleaning leaves alone, that has one piece, and whose prefixes are
    bracketed launcher tags of 8 characters or more (`[rank3]:`, `[default3]:`, `[1,3]<stderr>:`): every
    other layer (line numbers, tqdm bars, CRI stamps, pdsh and srun labels) is decided by what follows."""
    after = text[taken : taken + 2]
    if taken < 8 or not text.startswith("[") or not after or _may_prefix(after):
        return None
    if _DIRTY.search(raw) or inner_cr(raw, 0, len(raw)):
        return None
    key = text[: taken + len(after)].encode("utf-8")
    return key if raw.startswith(key) else None


def _may_prefix(after: str) -> bool:
    """Whether text may start another launcher prefix (`[rank3]:`, `[default3]:`): a `[` and a letter."""
    return after[0] == "[" and (len(after) < 2 or after[1].isalpha() or after[1] == "_")
