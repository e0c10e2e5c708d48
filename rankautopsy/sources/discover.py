"""Find the inputs under the paths a user gave, open them, and tell what each one is."""

from __future__ import annotations

import contextlib
import os
import re
import stat
import sys
from collections.abc import Sequence
from dataclasses import field, replace
from pathlib import Path, PurePosixPath

from rankautopsy import recache
from rankautopsy.errors import InputError
from rankautopsy.model import SkippedInput, StreamKind
from rankautopsy.records import record
from rankautopsy.sources.archive import archive_format, members
from rankautopsy.sources.clocks import year_hint_from_text
from rankautopsy.sources.ranks import PathRank, rank_from_path
from rankautopsy.sources.read import (
    MAGIC_BYTES,
    MAX_INPUT,
    SNIFF,
    ChunkReader,
    Data,
    Head,
    Spool,
    is_encoded,
    looks_binary,
    open_bytes,
    read_head,
    spool,
    unreadable_compression,
)
from rankautopsy.sources.sanitize import clean_name

STDIN = "-"
_KERNEL_NAME = recache.compile(r"(?:^dmesg|\.dmesg(?:\.|$)|^kern\.log|^kernel\.log|^journal.*-k)", re.IGNORECASE)
_SKIP_DIRS = frozenset({".git", "__pycache__", ".hg", ".svn"})
# Found in a directory, these are write-ups (a README, an issue's notes, a notebook) that quote log lines
# about the job, not its output: read, their quotes became the job's events.
_DOCUMENTS = (".md", ".markdown", ".rst", ".html", ".htm", ".ipynb")
MAX_DEPTH = 64  # directories below a given path (ripgrep has none; a hostile tree of 10,000 must not crash)
HEAD = 256 * 1024  # bytes read at discovery to classify an input (the rest is read when it is scanned)
_YEAR_CHARS, _YEAR_LINES = 200_000, 2000


@record
class Source:
    """One input stream, classified from its head; its bytes are read again, in chunks, when scanned."""

    display: str
    kind: StreamKind
    path: Path | None = None  # a file, read from disk
    data: Data | None = None  # or bytes piped in (in memory, or spooled to an unnamed file)
    where: PathRank = field(default_factory=PathRank)
    live: bool = False  # piped in from this host right now (raw dmesg stamps can use its boot time)
    problem: str | None = None  # read, but not whole (e.g. a truncated gzip), as far as the head tells
    year: int | None = None  # the year of the first full date in its head
    size: int = 0  # bytes on disk (or piped in)
    host: str | None = None  # the host a kernel log is from, when given (`--dmesg HOST=FILE`)
    compressed: bool = False  # gzip, xz, ..., UTF-16: read through a decoder; `size` says little of the text
    opens: bool = True  # its first line is the input's (not so in `watch`'s window of a followed file)

    def read_text(self, limit: int = 16 * 1024**2) -> str:
        """The whole text of a small input (torchrun's error.json), at most `limit` bytes of it: a forged
        one of gigabytes (or a gzip bomb) must not be read into memory."""
        return read_head(self.path, self.data, min(self.size + 1, limit)).data.decode("utf-8", "replace")


def discover(
    paths: Sequence[str], dmesg: Sequence[str] = (), stdin: Data | None = None, *, follow: bool = False
) -> tuple[list[Source], list[SkippedInput]]:
    """Every readable input under `paths` (and the kernel logs of `dmesg`), plus what was skipped.
    A symlink found in a directory is followed only when its target is inside one of the given paths,
    unless `follow` (as ripgrep's `--follow`): a tree must not pull in `/etc` or a secret."""
    sources: list[Source] = []
    skipped: list[SkippedInput] = []
    kernel = [host_named(arg) for arg in dmesg]
    walk = _Walk(tuple(_resolved(arg) for arg in (*paths, *(a for _, a in kernel)) if arg != STDIN), follow, skipped)
    for arg in paths:
        _collect(arg, None, sources, walk, stdin)
    for host, arg in kernel:
        first = len(sources)
        _collect(arg, StreamKind.KERNEL, sources, walk, stdin)
        sources[first:] = [replace(s, host=host) for s in sources[first:]]
    if not sources:
        named = ", ".join(f"{s.path} ({s.reason})" for s in skipped[:3])
        raise InputError("nothing readable in " + ", ".join(paths or dmesg) + (f": {named}" if named else ""))
    return sources, skipped


_HOST = recache.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}[A-Za-z0-9])?")


def host_named(arg: str) -> tuple[str | None, str]:
    """`--dmesg HOST=FILE` (or `HOST=-`): the host the kernel log is from, and the path; a path that
    exists as given is a path, whatever it holds."""
    host, eq, path = arg.partition("=")
    if not eq or not path or not _HOST.fullmatch(host) or os.path.lexists(arg):
        return None, arg
    return host, path


def _resolved(arg: str) -> Path | None:
    try:
        return Path(os.path.realpath(arg))
    except (OSError, ValueError):
        return None


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _skip(skipped: list[SkippedInput], display: str, reason: str) -> None:
    skipped.append(SkippedInput(clean_name(display), clean_name(reason)))


def _collect(arg: str, kind: StreamKind | None, out: list[Source], walk: _Walk, stdin: Data | None) -> None:
    skipped = walk.skipped
    if arg == STDIN:
        try:
            data = stdin if stdin is not None else spool(sys.stdin.buffer, MAX_INPUT)
        except OSError as exc:
            raise InputError(f"cannot read standard input: {_reason(exc)}", path=arg) from None
        size = data.size if isinstance(data, Spool) else len(data)
        _add_all(_opened("<stdin>", None, data, size, kind, PathRank(), live=True), out, skipped)
        return
    root = Path(arg)
    try:
        mode = root.stat().st_mode
    except (OSError, ValueError) as exc:  # ENOENT, ENAMETOOLONG, ELOOP, EACCES...; ValueError: a NUL
        reason = _reason(exc) if isinstance(exc, OSError) else "not a valid path"
        raise InputError("no such file or directory" if _missing(exc) else reason, path=arg) from None
    if stat.S_ISREG(mode):
        _add_file(root, arg, kind, out, skipped, named=True)
        return
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):  # given by name: `<(ssh node dmesg -T)`, a named pipe
        _add_all(_piped(root, arg, kind), out, skipped)
        return
    if not stat.S_ISDIR(mode):
        raise InputError("not a regular file or directory", path=arg)
    files = walk.files(root, arg)
    kubeflow = any(re.search(r"master[-_]?0", f.name, re.IGNORECASE) for f in files)
    for path in sorted(files):
        _add_file(path, str(Path(arg) / path.relative_to(root)), kind, out, skipped, kubeflow=kubeflow)


def _piped(path: Path, display: str, kind: StreamKind | None) -> list[Source | SkippedInput]:
    """A pipe can be read only once: its head is sniffed (a device such as /dev/zero is refused before
    the rest is read), then it is spooled like standard input."""
    try:
        with path.open("rb") as stream:
            head = stream.read(HEAD)
            known = is_encoded(head) or archive_format(head)
            if looks_binary(head[:SNIFF]) and not known:
                return [SkippedInput(clean_name(display), "binary: not a text log")]
            data = spool(stream, MAX_INPUT, head)
    except OSError as exc:
        raise InputError(f"cannot read: {_reason(exc)}", path=display) from None
    return _opened(clean_name(display), None, data, data.size, kind, rank_from_path(path), live=True)


def _missing(exc: Exception) -> bool:
    return isinstance(exc, FileNotFoundError)


@record(frozen=False)
class _Walk:
    """An iterative directory walk: bounded depth, each directory read once (symlink loops), every OS
    error one skipped entry, and symlinks out of the given roots not followed unless asked."""

    roots: tuple[Path | None, ...]
    follow: bool
    skipped: list[SkippedInput]
    seen: set[tuple[int, int]] = field(default_factory=set)

    def files(self, root: Path, arg: str) -> list[Path]:
        found: list[Path] = []
        self.seen.clear()
        stack: list[tuple[Path, int]] = [(root, 0)]
        while stack:
            folder, depth = stack.pop()
            shown = str(Path(arg) / folder.relative_to(root))
            entries = self._entries(folder, shown)
            for entry in entries:
                self._visit(entry, shown, depth, found, stack)
        return found

    def _entries(self, folder: Path, shown: str) -> list[os.DirEntry[str]]:
        try:
            st = folder.stat()
            if (st.st_dev, st.st_ino) in self.seen:
                _skip(self.skipped, shown, "symlink loop: directory already read")
                return []
            self.seen.add((st.st_dev, st.st_ino))
            with os.scandir(folder) as it:
                return sorted(it, key=lambda e: e.name)
        except OSError as exc:
            _skip(self.skipped, shown, f"unreadable: {_reason(exc)}")
            return []

    def _visit(
        self, entry: os.DirEntry[str], shown: str, depth: int, found: list[Path], stack: list[tuple[Path, int]]
    ) -> None:
        display = f"{shown}/{entry.name}"
        try:
            if entry.is_symlink() and not self.follow and not self._inside(entry.path):
                _skip(self.skipped, display, "a symlink out of the given paths: not followed (--follow reads it)")
                return
            if entry.is_dir():
                if entry.name in _SKIP_DIRS:
                    return
                if depth + 1 > MAX_DEPTH:
                    _skip(self.skipped, display, f"more than {MAX_DEPTH} directories deep: not read")
                    return
                stack.append((Path(entry.path), depth + 1))
            elif entry.name.lower().endswith(_DOCUMENTS):
                _skip(self.skipped, display, "a document, not a log (name it to read it)")
            else:
                found.append(Path(entry.path))
        except OSError as exc:
            _skip(self.skipped, display, f"unreadable: {_reason(exc)}")

    def _inside(self, path: str) -> bool:
        target = _resolved(path)
        return target is not None and any(r is not None and target.is_relative_to(r) for r in self.roots)


def _add_file(
    path: Path,
    display: str,
    kind: StreamKind | None,
    out: list[Source],
    skipped: list[SkippedInput],
    *,
    kubeflow: bool = False,
    named: bool = False,
) -> None:
    display = clean_name(display)
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            _skip(skipped, display, "not a regular file")
            return
        if st.st_size > MAX_INPUT:
            _skip(skipped, display, "larger than 8 GiB")
            return
        where = rank_from_path(path, kubeflow=kubeflow)
        found = _opened(display, path, None, st.st_size, kind, where, named=named)
    except OSError as exc:
        _skip(skipped, display, f"unreadable: {_reason(exc)}")
        return
    _add_all(found, out, skipped)


def _opened(
    display: str,
    path: Path | None,
    data: Data | None,
    size: int,
    kind: StreamKind | None,
    where: PathRank,
    *,
    named: bool = True,
    live: bool = False,
) -> list[Source | SkippedInput]:
    """An input, or the members of an archive given by name (one found in a folder is named, not read:
    a model checkpoint is a zip)."""
    head = read_head(path, data, HEAD)
    fmt = archive_format(head.data)
    if fmt is None:
        return [_source(display, path, data, size, kind, where, head, live=live)]
    if not named:
        return [SkippedInput(display, f"a {fmt} archive: name it to read the logs in it")]
    return _members(display, path, data, fmt, kind)


def _members(
    display: str, path: Path | None, data: Data | None, fmt: str, kind: StreamKind | None
) -> list[Source | SkippedInput]:
    listed = list(members(path, data, fmt))
    kubeflow = any(re.search(r"master[-_]?0", m.name, re.IGNORECASE) for m in listed)
    found: list[Source | SkippedInput] = []
    for member in listed:
        shown = clean_name(f"{display}/{member.name}") if member.name else display
        if member.data is None:
            found.append(SkippedInput(shown, clean_name(member.reason or "not read")))
        elif member.name.lower().endswith(_DOCUMENTS):
            found.append(SkippedInput(shown, "a document, not a log"))
        else:
            where = rank_from_path(PurePosixPath(member.name), kubeflow=kubeflow)
            found.append(_source(shown, None, member.data, member.data.size, kind, where))
    return found


def _source(
    display: str,
    path: Path | None,
    data: Data | None,
    size: int,
    kind: StreamKind | None,
    where: PathRank,
    head: Head | None = None,
    *,
    live: bool = False,
) -> Source | SkippedInput:
    """Classify an input from its head, or say why it is skipped."""
    head = head or read_head(path, data, HEAD)
    if not head.compressed and (why := unreadable_compression(head.data[:MAGIC_BYTES])):
        return SkippedInput(display, why)
    if not head.compressed and looks_binary(head.data[:SNIFF]):
        return SkippedInput(display, "binary: not a text log")
    if not head.data.strip() and not _has_text(path, data, len(head.data)):
        return SkippedInput(display, head.problem or "empty")
    text = head.data.decode("utf-8", "replace")
    if looks_binary(text[:SNIFF].encode("utf-8", "replace")):
        return SkippedInput(display, "binary: not a text log")
    kind = kind or classify(display, text, where)
    return Source(display, kind, path, data, where, live, head.problem, _year(text), size, compressed=head.compressed)


def _has_text(path: Path | None, data: Data | None, skip: int) -> bool:
    """Whether anything but white space follows a blank head (read in chunks, never whole)."""
    if skip < HEAD:
        return False
    with contextlib.closing(open_bytes(path, data)) as stream:
        return any(chunk.buf[chunk.start : chunk.end].strip() for chunk in ChunkReader(stream))


def _year(text: str) -> int | None:
    head = text[:_YEAR_CHARS]
    first = head[:4096].splitlines()[:_YEAR_LINES][:-1]  # most logs date their first lines; the last may be cut
    year = _first_year(first)
    return year if year is not None else _first_year(head.splitlines()[len(first) : _YEAR_LINES])


def _first_year(lines: list[str]) -> int | None:
    return next((year for line in lines if (year := year_hint_from_text(line)) is not None), None)


def _add_all(found: list[Source | SkippedInput], out: list[Source], skipped: list[SkippedInput]) -> None:
    for one in found:
        _add(one, out, skipped)


def _add(found: Source | SkippedInput, out: list[Source], skipped: list[SkippedInput]) -> None:
    if isinstance(found, SkippedInput):
        skipped.append(found)
        return
    if found.problem:
        skipped.append(SkippedInput(found.display, damaged(found.problem)))
    out.append(found)


def damaged(problem: str) -> str:
    return f"{problem} (the part before the damage was read)"


def classify(display: str, text: str, where: PathRank) -> StreamKind:
    name = Path(display).name
    if name == "error.json":
        return StreamKind.ERROR_JSON
    if _KERNEL_NAME.search(name) or _sniff_kernel(text):
        return StreamKind.KERNEL
    if where.rank is not None or where.local_rank is not None:
        return StreamKind.RANK_LOG
    return StreamKind.CONSOLE


# A day of the month is padded to two characters; a paste from a web page may have collapsed the space.
_KERNEL_LINE = recache.compile(
    r"^(?:<\d+>)?\[\s*\d+\.\d{6}\] "  # raw dmesg
    r"|^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} {1,2}\d{1,2} \d\d:\d\d:\d\d \d{4}[^\]]*\] "  # dmesg -T
    r"|^(?:[A-Z][a-z]{2} {1,2}\d{1,2} \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\S+) \S+ kernel: "  # journal / kern.log
    r"|^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{6}[+-]\d\d:?\d\d "  # dmesg --time-format iso
)


def _sniff_kernel(text: str) -> bool:
    """Whether at least 60 % of the first 200 non-blank lines are kernel lines (it stops at the miss that
    decides)."""
    lines = [line for line in text[:65536].splitlines()[:200] if line.strip()]
    misses = len(lines) - 0.6 * len(lines)  # allowed
    for line in lines:
        if not _KERNEL_LINE.match(line):
            misses -= 1
            if misses < 0:
                return False
    return bool(lines)
