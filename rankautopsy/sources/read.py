"""Bytes to lines, robustly: gzip, xz, bzip2 (zstd where `zstandard` is installed), UTF-16 with its byte
order mark (what Windows PowerShell's `>` writes), Docker's json-file logs, undecodable bytes, CRLF, `\\r`-joined
progress bars, huge lines.

Inputs are read in chunks into one reused buffer (`ChunkReader`): memory stays bounded whatever the size
of a file. Each chunk is a run of whole lines, with up to `CONTEXT` bytes of the lines before it kept in
front so that a reader can look back across the chunk boundary.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable, Iterator
from dataclasses import field
from itertools import accumulate
from pathlib import Path
from typing import IO, Any, BinaryIO, Protocol

from rankautopsy import recache
from rankautopsy.records import record

MAX_LINE = 64 * 1024  # longer lines are cut: a rule only needs the head of a line
SNIFF = 8192
CHUNK = 8 * 1024 * 1024  # bytes read per chunk: big enough for the scanner, small enough for the cache
CONTEXT = 1024 * 1024  # bytes of earlier lines kept in front of each chunk
LONG_LINE = 4 * 1024 * 1024  # a physical line longer than this is clipped to it
MAX_INPUT = 8 * 1024**3  # bytes of one input read at most (a file, or a pipe spooled)
_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_IN = 1024 * 1024
_XZ = recache.compile(rb"\xfd7zXZ\x00")
_BZIP2 = recache.compile(rb"BZh[1-9](?:1AY&SY|\x17rE8P\x90)")  # a block, or the end of an empty stream
_ZSTD = recache.compile(rb"\x28\xb5\x2f\xfd")
MAGIC_BYTES = 10  # enough of a head to tell every format above


@record
class Decoded:
    text: str
    problem: str | None = None  # e.g. "truncated gzip: read 1234 bytes"


def is_gzip(head: bytes) -> bool:
    return head.startswith(_GZIP_MAGIC)


def compression(head: bytes) -> str | None:
    """The compression format a stream starts with ("gzip", "xz", "bzip2", "zstd"), if any."""
    if is_gzip(head):
        return "gzip"
    for name, magic in (("xz", _XZ), ("bzip2", _BZIP2), ("zstd", _ZSTD)):
        if magic.match(head):
            return name
    return None


def is_compressed(head: bytes) -> bool:
    return compression(head) is not None


def is_utf16(head: bytes) -> bool:
    """Whether a stream starts with UTF-16's byte order mark (either order)."""
    return head[:2] in (b"\xff\xfe", b"\xfe\xff")


def is_encoded(head: bytes) -> bool:
    """Whether a stream's raw bytes are read through a decoder (`open_bytes`): its head is no sign of binary."""
    return is_compressed(head) or is_utf16(head)


def unreadable_compression(head: bytes) -> str | None:
    """Why a compressed stream cannot be read here (zstd without the `zstandard` package), if it cannot."""
    if compression(head) == "zstd" and _zstd() is None:
        return "zstd-compressed: install the 'zstandard' package to read it (or decompress it first)"
    return None


def _zstd() -> object | None:
    try:
        import zstandard  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        return None
    return zstandard  # type: ignore[no-any-return, unused-ignore]


def inflater() -> Any:
    """zlib's interface to inflate gzip: python-isal's (ISA-L, about twice as fast) where installed,
    else the standard library's. RANKAUTOPSY_GZIP=zlib forces the latter."""
    import zlib  # here, as every decompressor: most logs are not compressed

    if os.environ.get("RANKAUTOPSY_GZIP") != "zlib":
        try:
            from isal import isal_zlib  # type: ignore[import-not-found, unused-ignore]
        except ImportError:
            pass
        else:
            return isal_zlib
    return zlib


def looks_binary(head: bytes) -> bool:
    """Not a log (a checkpoint, an image, a core file): more than a stray NUL or two in the head, or
    mostly bytes that are neither text nor UTF-8. A crashing process can leave a NUL in its console
    (grep would call the whole log binary); a binary file has NULs everywhere."""
    if not head:
        return False
    if head.count(b"\x00") > max(2, len(head) // 2000):
        return True
    controls = len(head.translate(None, _NOT_CONTROL))  # an ASCII byte in UTF-8 is always that character
    if head.isascii():
        return controls > 0.1 * len(head)
    text = head.decode("utf-8", "replace")
    return text.count("\ufffd") + controls > 0.1 * len(text)


_CONTROLS = bytes([*range(0x09), 0x0B, *range(0x0E, 0x1B), *range(0x1C, 0x20)])  # but tab, newlines, FF, ESC
_NOT_CONTROL = bytes(b for b in range(256) if b not in _CONTROLS)  # deleted, the controls are left


def gunzip(data: bytes) -> Decoded:
    """Decompress as much of a gzip stream as is there; a truncated tail is named, not fatal."""
    import gzip
    import zlib

    try:
        return Decoded(gzip.decompress(data).decode("utf-8", "replace"))
    except (EOFError, OSError, zlib.error):
        pass
    out = bytearray()
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    with contextlib.suppress(zlib.error):
        out += d.decompress(data)
    return Decoded(bytes(out).decode("utf-8", "replace"), truncated(len(out)))


def truncated(size: int, fmt: str = "gzip") -> str:
    return f"truncated {fmt}: read {size} bytes"


def decode(data: bytes) -> Decoded:
    if is_gzip(data[:2]):
        return gunzip(data)
    return Decoded(data.decode("utf-8", "replace"))


PIECES = 64  # a line of more `\r`-separated pieces than this keeps the ends of its runs (see segments)
NO_DIGITS = str.maketrans("", "", "0123456789")


def pieces(line: str) -> list[str]:
    """One physical line (without its `\n`) cut at each `\r`: its non-blank pieces, each clipped."""
    if line.endswith("\r"):
        line = line[:-1]
    if "\r" not in line:
        return [line[:MAX_LINE]]
    return [part[:MAX_LINE] for part in line.split("\r") if part.strip()]


# The end of a tqdm bar, `[elapsed<remaining, rate{postfix}]`, with text right after it: tqdm redraws
# its bar after a `\r` and writes no line feed, so whatever the process (or another) writes next, a
# traceback, a rank's `[rankN]:` line, the launcher's warning, goes on the bar's line. So does mmcv's
# ProgressBar (OpenMMLab), `[>>>  ] 5/500, 2.1 task/s, elapsed: 2s, ETA:   236s`, whose first draw ends
# at `ETA:`.
BAR_END = recache.compile(
    r"\[[0-9:]+(?:<[0-9:?]+)?, *(?:\?|[0-9.]+[kMGT]?)(?:[A-Za-z]+/s|s/[A-Za-z]+)(?:,[^\]\n]*)?\](?=[^\s\]])"
    r"|\] [0-9]+/[0-9]+, (?:[0-9.]+ task/s, )?elapsed: [0-9]+s, ETA:(?: *[0-9]+s)?(?=[^\s])"
)


def segments(line: str) -> list[str]:
    """One physical line as logical lines: a `\r` inside it starts a new one, and so does what follows
    a progress bar's end. Of more than PIECES pieces, a run of pieces that differ only in their numbers
    (a progress bar redrawn in place) keeps its first and last: a terminal shows the last, and the first
    and last step are what a run tells."""
    parts = pieces(line)
    if len(parts) > PIECES:
        parts = _ends_of_runs(line, parts)
    return [piece for part in parts for piece in _unglued(part)] if bar_ends(line) else parts


def bar_ends(line: str) -> bool:
    """Whether a progress bar's end has text glued to it: a quick look for a rate's end first."""
    return ("/s]" in line or "/s," in line or "s/it" in line or "ETA:" in line) and BAR_END.search(line) is not None


def _unglued(part: str) -> list[str]:
    out = []
    while (m := BAR_END.search(part)) is not None:
        out.append(part[: m.end()])
        part = part[m.end() :]
    out.append(part)
    return out


def _ends_of_runs(line: str, parts: list[str]) -> list[str]:
    body = line[:-1] if line.endswith("\r") else line  # as pieces() cut it: one translate, not one per piece
    cut = zip(body.split("\r"), body.translate(NO_DIGITS).split("\r"), strict=True)
    shapes = [shape for part, shape in cut if part.strip()]
    last = len(parts) - 1
    return [
        part
        for i, part in enumerate(parts)
        if i in (0, last) or shapes[i] != shapes[i - 1] or shapes[i] != shapes[i + 1]
    ]


def split_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based physical line number, text) pairs; a `\\r` inside a line starts a new logical line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        for part in segments(line):
            yield number, part


# ---- byte streams: plain files, gzip, bytes in memory ----


class Readable(Protocol):
    def readinto(self, buffer: memoryview, /) -> int | None: ...

    def close(self) -> None: ...


class _Decompressing(io.RawIOBase):
    """A compressed stream decompressed as it is read, output bounded per read; a truncated or corrupt
    tail ends it (see `problem`). Subclasses say how the next piece of output is made (`_next`)."""

    def __init__(self, raw: io.RawIOBase | io.BytesIO) -> None:
        self._raw = raw
        self._out = 0
        self.problem: str | None = None
        self._done = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        while not self._done:
            data = self._next(len(view))
            if data:
                view[: len(data)] = data
                self._out += len(data)
                return len(data)
        return 0

    def _next(self, size: int) -> bytes:
        raise NotImplementedError

    def _finish(self, problem: str | None) -> None:
        self.problem, self._done = problem, True

    def close(self) -> None:
        self._raw.close()
        super().close()


class _Gunzip(_Decompressing):
    """A gzip stream; concatenated members are read one after the other."""

    def __init__(self, raw: io.RawIOBase | io.BytesIO) -> None:
        super().__init__(raw)
        import zlib  # not at the top: most logs are not compressed

        self._zlib = inflater()
        self._d: zlib._Decompress = self._zlib.decompressobj(16 + zlib.MAX_WBITS)  # isal's has its interface

    def _next(self, size: int) -> bytes:
        import zlib

        try:
            if self._d.eof:
                return self._next_member(size)
            if self._d.unconsumed_tail:
                return self._d.decompress(self._d.unconsumed_tail, size)
            data = self._raw.read(_GZIP_IN)
            if not data:
                self._finish(truncated(self._out))
                return b""
            return self._d.decompress(data, size)
        except (zlib.error, self._zlib.error):
            self._finish(truncated(self._out))
            return b""

    def _next_member(self, size: int) -> bytes:
        rest = self._d.unused_data + self._raw.read(_GZIP_IN)
        if not is_gzip(rest[:2]):  # the end, or trailing garbage that gzip(1) would warn about
            self._finish(None)
            return b""
        self._d = self._zlib.decompressobj(16 + self._zlib.MAX_WBITS)
        return self._d.decompress(rest, size)


class _Unpack(_Decompressing):
    """An xz, bzip2 or zstd stream; concatenated streams are read one after the other."""

    def __init__(self, raw: io.RawIOBase | io.BytesIO, fmt: str) -> None:
        super().__init__(raw)
        self._fmt = fmt
        self._d = self._new()

    def _new(self) -> Any:
        import bz2
        import lzma

        if self._fmt == "xz":
            return lzma.LZMADecompressor()
        if self._fmt == "bzip2":
            return bz2.BZ2Decompressor()
        return _ZstdFeed()

    def _next(self, size: int) -> bytes:
        import lzma

        try:
            if self._d.eof:
                rest = self._d.unused_data + self._raw.read(_GZIP_IN)
                if compression(rest[:MAGIC_BYTES]) != self._fmt:  # the end (or trailing garbage)
                    self._finish(None)
                    return b""
                self._d = self._new()
                return bytes(self._d.decompress(rest, size))
            if not self._d.needs_input:
                return bytes(self._d.decompress(b"", size))
            data = self._raw.read(_GZIP_IN)
            if not data:
                self._finish(truncated(self._out, self._fmt))
                return b""
            return bytes(self._d.decompress(data, size))
        except (lzma.LZMAError, OSError, EOFError, ValueError):
            self._finish(truncated(self._out, self._fmt))
            return b""


class _Recoding(_Decompressing):
    """Text re-encoded as it is read, line for line (line numbers hold); subclasses say how (`_recode`)."""

    def __init__(self, raw: io.RawIOBase | io.BytesIO) -> None:
        super().__init__(raw)
        self._pending = b""

    def _next(self, size: int) -> bytes:
        while not self._pending:
            data = self._raw.read(_GZIP_IN) or b""
            self._pending = self._recode(data)
            if not data and not self._pending:
                self._finish(None)
                return b""
        out, self._pending = self._pending[:size], self._pending[size:]
        return out

    def _recode(self, data: bytes) -> bytes:
        """The output of the next raw bytes (`b""` at the end: what is still held back)."""
        raise NotImplementedError


class _Utf16(_Recoding):
    """UTF-16 text re-encoded as UTF-8 as it is read: line feeds stay one per line, so line numbers hold."""

    def __init__(self, raw: io.RawIOBase | io.BytesIO) -> None:
        super().__init__(raw)
        import codecs

        self._decoder = codecs.getincrementaldecoder("utf-16")("replace")  # the BOM says the order

    def _recode(self, data: bytes) -> bytes:
        return self._decoder.decode(data, not data).encode("utf-8", "surrogateescape")


# Docker's json-file logging driver (and Kubernetes nodes on the Docker runtime, /var/log/containers/*.log): one
# JSON object a line, `{"log":"msg\n","stream":"stderr","time":"2024-05-01T10:00:00.123456789Z"}`.
_DOCKER_JSON = recache.compile(rb'\{ ?"log": ?"')


def is_docker_json(head: bytes) -> bool:
    return _DOCKER_JSON.match(head) is not None


def docker_lines(lines: list[bytes]) -> bytes:
    """Docker's json-file records as the CRI file lines Kubernetes' own runtimes write (`TIME STREAM F msg`),
    which the prefix layers read: one line out per record, so line numbers hold; a line that is no record
    is passed on as it is."""
    import json  # not at the top: most logs are no such records

    return b"".join(_docker_line(json.loads, line) for line in lines)


def _docker_line(loads: Callable[[bytes], Any], line: bytes) -> bytes:
    try:
        record = loads(line)
        text, stream, time = record["log"], record.get("stream", "stdout"), record.get("time", "")
    except (ValueError, TypeError, KeyError, AttributeError):
        return line + b"\n"
    if not all(isinstance(x, str) for x in (text, stream, time)):
        return line + b"\n"
    text = text[:-1] if text.endswith("\n") else text
    return f"{time} {stream} F {text.replace(chr(10), ' ')}\n".encode("utf-8", "surrogateescape")


class _DockerJson(_Recoding):
    """A json-file log read as `docker_lines` makes it."""

    def __init__(self, raw: io.RawIOBase | io.BytesIO) -> None:
        super().__init__(raw)
        self._rest = b""

    def _recode(self, data: bytes) -> bytes:
        if not data:  # the end: an unterminated last line, if any
            rest, self._rest = self._rest, b""
            return docker_lines([rest]) if rest else b""
        lines = (self._rest + data).split(b"\n")
        self._rest = lines.pop()
        return docker_lines(lines)


class _ZstdFeed:
    """zstandard's decompressor behind the interface of lzma's and bz2's (`decompress(data, max_length)`)."""

    def __init__(self) -> None:
        module: Any = _zstd()
        self._d = module.ZstdDecompressor().decompressobj()
        self._pending = b""
        self.unused_data = b""

    @property
    def eof(self) -> bool:
        return not self._pending and bool(getattr(self._d, "eof", False))

    @property
    def needs_input(self) -> bool:
        return not self._pending

    def decompress(self, data: bytes, size: int) -> bytes:
        if data:
            self._pending += self._d.decompress(data)
            self.unused_data = getattr(self._d, "unused_data", b"")
        out, self._pending = self._pending[:size], self._pending[size:]
        return out


# ---- piped input, spooled ----


@record
class Spool:
    """Bytes piped in (stdin, a named pipe), copied as they came into an unnamed temporary file: held
    on disk, not in memory, and gone with the process however it ends (nothing to clean up)."""

    file: IO[bytes] = field(compare=False, repr=False)
    size: int
    start: int = 0  # where in the file its bytes begin (an archive's members share one file)

    def stream(self) -> io.RawIOBase:
        return _Pread(self.file.fileno(), self.size, self.start)

    def __reduce__(self) -> tuple[Callable[[int, int, int], Spool], tuple[int, int, int]]:
        return _respool, (self.file.fileno(), self.size, self.start)  # back from a forked worker


_SPOOLED: dict[int, IO[bytes]] = {}  # this process's spool files by descriptor (a fork shares them)


def _respool(fd: int, size: int, start: int) -> Spool:
    return Spool(_SPOOLED[fd], size, start)


def spool_file() -> IO[bytes]:
    """An unnamed temporary file that Spools may hold (gone with the process however it ends)."""
    import tempfile

    out = tempfile.TemporaryFile()  # noqa: SIM115 (open for the process's life: its sources read it)
    _SPOOLED[out.fileno()] = out
    return out


def spool(stream: BinaryIO, limit: int, head: bytes = b"") -> Spool:
    """`head` (already read) and the rest of `stream` (a buffered reader), at most `limit` bytes."""
    out = spool_file()
    size = len(head)
    out.write(head)
    while size < limit:
        want = min(CHUNK, limit - size)
        piece = stream.read(want)  # a buffered read is short only at the end (a terminal's Ctrl-D is
        out.write(piece)  # not sticky: reading on would wait for more)
        size += len(piece)
        if len(piece) < want:
            break
    out.flush()
    return Spool(out, size)


class _Pread(io.RawIOBase):
    """A Spool read at its own offset (os.pread): readers in this process and forked workers share
    the file descriptor, never its position."""

    def __init__(self, fd: int, size: int, start: int = 0) -> None:
        self._fd, self._size, self._pos, self._start = fd, size, 0, start

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = os.pread(self._fd, min(len(view), max(0, self._size - self._pos)), self._start + self._pos)
        view[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos


Data = bytes | Spool  # what an input that is not a file on disk holds


def raw_stream(path: Path | None, data: Data | None) -> io.RawIOBase | io.BytesIO:
    """The undecoded bytes of a file, of bytes in memory or of a Spool, from their start."""
    if isinstance(data, Spool):
        return data.stream()
    return io.BytesIO(data) if data is not None else open(path or "", "rb", buffering=0)


def open_bytes(path: Path | None, data: Data | None) -> Readable:
    """The decompressed bytes of a file (or of data piped in), as a stream; UTF-16 as UTF-8."""
    raw = raw_stream(path, data)
    try:
        head = raw.read(MAGIC_BYTES) or b""
        raw.seek(0)
    except OSError:
        raw.close()
        raise
    fmt = compression(head)
    if is_utf16(head):
        return _Utf16(raw)
    if is_docker_json(head):
        return _DockerJson(raw)
    if fmt == "gzip":
        return _Gunzip(raw)
    if fmt is None or unreadable_compression(head):
        return raw
    return _Unpack(raw, fmt)


@record
class Head:
    data: bytes  # the first bytes, decompressed
    problem: str | None  # the stream ended early, damaged
    compressed: bool


def read_head(path: Path | None, data: Data | None, size: int) -> Head:
    """The first `size` decompressed bytes of a file or of data piped in."""
    with contextlib.closing(open_bytes(path, data)) as stream:
        buf = bytearray(size)
        view = memoryview(buf)
        got = 0
        while got < size and (n := stream.readinto(view[got:]) or 0):
            got += n
        return Head(bytes(buf[:got]), getattr(stream, "problem", None), isinstance(stream, _Decompressing))


# ---- chunks ----


@record(frozen=False)
class Chunk:
    """A run of whole lines `buf[start:end]` (the last ends with `\\n` except at the end of the input),
    after `buf[context:start]`, the lines before it that are still in the buffer. The buffer is reused:
    a chunk is valid until the reader moves on. The `last` chunk may be empty."""

    buf: bytearray
    context: int
    start: int
    end: int
    context_line: int  # 1-based number of the line at `context`
    first_line: int  # 1-based number of the line at `start`
    base: int = 0  # position in the stream of `buf[0]` (bytes after clipping long lines)
    lines: int = 0  # physical lines in `buf[start:end]`
    last: bool = False
    ahead: object = None  # what the reader's `ahead` made of `buf[start:end]` while it counted the lines
    marks: list[int] | None = None  # line feeds in `buf[start:start + k * MARK_BYTES]`, for each k


AHEAD_BYTES = 1 << 20  # chunks smaller than this are scanned after their lines are counted, not beside it


# The line count keeps a count every MARK_BYTES, so that a line's number is counted from the mark before
# it, not again from the chunk's start or the hit before (a hit every few hundred lines counted each
# chunk twice); above MARK_BYTES * MARKS_UP_TO bytes one count is made, as before.
MARK_BYTES = 8192
MARKS_UP_TO = 4096


def _count_lines(buf: bytearray, start: int, end: int) -> tuple[int, list[int] | None]:
    """The physical lines of `buf[start:end]`, and its marks (`Chunk.marks`)."""
    partial = end > start and buf[end - 1] != 0x0A
    if end - start > MARK_BYTES * MARKS_UP_TO or end - start < 2 * MARK_BYTES:
        return buf.count(b"\n", start, end) + partial, None
    count, full = buf.count, end - (end - start) % MARK_BYTES
    marks = list(accumulate((count(b"\n", at, at + MARK_BYTES) for at in range(start, full, MARK_BYTES)), initial=0))
    return marks[-1] + count(b"\n", full, end) + partial, marks


FIRST_BUFFER = 256 * 1024  # a reader starts in this much and moves to CONTEXT + CHUNK if the input fills it
_buffers: dict[int, bytearray] = {}


def _buffer(size: int) -> bytearray:
    """One buffer per size (the first, small one and the full one) for the whole process: inputs are
    read one after the other, and a fresh buffer costs a page fault per 4 KiB (9 MiB: ~5 ms)."""
    if size not in _buffers:
        if len(_buffers) > 1:
            _buffers.clear()
        _buffers[size] = bytearray(size)
    return _buffers[size]


class ChunkReader:
    """Chunks of whole lines from a byte stream, in one buffer of CONTEXT + CHUNK bytes. A line longer
    than LONG_LINE keeps its head and its last `\\r`-separated piece; its middle is not read."""

    def __init__(
        self,
        stream: Readable,
        chunk: int | None = None,
        context: int | None = None,
        ahead: Callable[[memoryview], object] | None = None,
    ) -> None:
        chunk, context = chunk or CHUNK, context or CONTEXT  # read here: tests shrink them
        self._stream = stream
        self._ahead = ahead
        self._context = context
        self._long = min(LONG_LINE, chunk // 2)
        self._size = context + chunk
        self.buf = _buffer(min(FIRST_BUFFER, self._size))
        self.lines = 0  # physical lines handed out so far
        self.clipped = 0  # lines too long for the buffer: their middle was not read
        self._keep = 0  # where the kept last piece of a clipped line goes

    @property
    def problem(self) -> str | None:
        return getattr(self._stream, "problem", None)

    def __iter__(self) -> Iterator[Chunk]:
        buf = self.buf
        ctx = start = filled = base = 0
        ctx_line = 1
        skipping = False
        while True:
            filled, skipping, eof = self._fill(filled, skipping)
            buf = self.buf  # grown, maybe
            end = filled if eof else buf.rfind(b"\n", start, filled) + 1
            if end == 0 and not eof:
                if filled - start < self._long:
                    continue
                filled, skipping = self._clip(start, filled)
                continue  # read on to the line's end
            (lines, marks), ahead = self._lines(buf, start, end)
            yield Chunk(buf, ctx, start, end, ctx_line, self.lines + 1, base, lines, eof, ahead, marks)
            self.lines += lines
            if eof:
                return
            dropped, ctx_line = self._compact(ctx, end, filled)
            base += dropped
            ctx, start, filled = 0, end - dropped, filled - dropped

    def _lines(self, buf: bytearray, start: int, end: int) -> tuple[tuple[int, list[int] | None], object]:
        """The physical lines of `buf[start:end]` and their marks, and `ahead` of those bytes, run in
        another thread while this one counts: a scan that lets go of the GIL (Hyperscan, RE2) then
        overlaps with the count, which does not, on a second core."""
        if self._ahead is None or end - start < AHEAD_BYTES:
            return _count_lines(buf, start, end), None
        import threading

        ahead, box, region = self._ahead, [], memoryview(buf)[start:end]
        scanning = threading.Event()

        def work() -> None:
            scanning.set()
            try:
                box.append((True, ahead(region)))
            except BaseException as exc:  # raised here, in the reading thread
                box.append((False, exc))

        thread = threading.Thread(target=work, name="rankautopsy-scan-ahead", daemon=True)
        thread.start()
        scanning.wait()  # the scan holds the GIL until it is in C: counting first would leave it waiting
        try:
            lines = _count_lines(buf, start, end)
        finally:
            thread.join()
        region.release()
        ok, value = box[0]
        if not ok:
            raise value  # type: ignore[misc]
        return lines, value

    def _clip(self, start: int, filled: int) -> tuple[int, bool]:
        """Cut the middle out of a line too long for the buffer: keep its head up to a `\\r` and, read on
        to its end, its last `\\r`-separated piece (a tqdm bar redrawn for a whole epoch, then the
        `Traceback` header printed after it). The line keeps its number."""
        half = self._long // 2
        cut = self.buf.rfind(b"\r", start + half // 2, start + half)
        if cut < 0:  # no piece boundary in reach: one byte of the head becomes one
            cut = start + half
            self.buf[cut] = 0x0D
        self._keep = cut + 1
        self.clipped += 1
        return self._skip(self._keep, filled - self._keep)

    def _skip(self, filled: int, n: int) -> tuple[int, bool]:
        """Bytes read into `buf[filled:filled + n]` of a clipped line: only the piece after the latest
        `\\r` is kept (at most half of LONG_LINE of it); whether the line goes on past them."""
        buf, keep, end = self.buf, self._keep, filled + n
        newline = buf.find(b"\n", filled, end)
        piece = buf.rfind(b"\r", keep, end if newline < 0 else newline)
        if piece >= 0:
            moved = end - piece - 1
            buf[keep : keep + moved] = buf[piece + 1 : end]
            newline = newline - (piece + 1) + keep if newline >= 0 else -1
            end = keep + moved
        if newline >= 0:
            return end, False
        return min(end, keep + self._long // 2), True

    def _fill(self, filled: int, skipping: bool) -> tuple[int, bool, bool]:
        """Read until the buffer is full or the input ends; of a clipped line, keep only its last piece."""
        while filled < self._size:
            if filled == len(self.buf):  # the same chunks as if the full buffer had been used from the start
                full = _buffer(self._size)
                full[:filled] = self.buf[:filled]
                self.buf = full
            n = self._stream.readinto(memoryview(self.buf)[filled:]) or 0
            if n == 0:
                return filled, skipping, True
            if skipping:
                filled, skipping = self._skip(filled, n)
                continue
            filled += n
        return filled, skipping, False

    def _compact(self, ctx: int, start: int, filled: int) -> tuple[int, int]:
        """Keep the last CONTEXT bytes of whole lines before `start` and the partial line after it;
        the bytes dropped from the front, and the number of the first line kept."""
        buf = self.buf
        keep = max(ctx, start - self._context)
        if keep > ctx:
            keep = buf.find(b"\n", keep - 1, start) + 1 or start
        kept_line = self.lines + 1 - buf.count(b"\n", keep, start)
        buf[: filled - keep] = buf[keep:filled]
        return keep, kept_line
