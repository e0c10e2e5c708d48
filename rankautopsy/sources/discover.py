"""Find the inputs under the paths a user gave, open them, and tell what each one is."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rankautopsy.errors import InputError
from rankautopsy.model import SkippedInput, StreamKind
from rankautopsy.sources.clocks import year_hint_from_text
from rankautopsy.sources.ranks import PathRank, rank_from_path
from rankautopsy.sources.read import SNIFF, ChunkReader, looks_binary, open_bytes, read_head

STDIN = "-"
_KERNEL_NAME = re.compile(r"(?:^dmesg|\.dmesg(?:\.|$)|^kern\.log|^kernel\.log|^journal.*-k)", re.IGNORECASE)
_SKIP_DIRS = frozenset({".git", "__pycache__", ".hg", ".svn"})
_MAX_FILE = 8 * 1024**3
HEAD = 256 * 1024  # bytes read at discovery to classify an input (the rest is read when it is scanned)
_YEAR_CHARS, _YEAR_LINES = 200_000, 2000


@dataclass(frozen=True, slots=True)
class Source:
    """One input stream, classified from its head; its bytes are read again, in chunks, when scanned."""

    display: str
    kind: StreamKind
    path: Path | None = None  # a file, read from disk
    data: bytes | None = None  # or bytes piped in
    where: PathRank = field(default_factory=PathRank)
    live: bool = False  # piped in from this host right now (raw dmesg stamps can use its boot time)
    problem: str | None = None  # read, but not whole (e.g. a truncated gzip), as far as the head tells
    year: int | None = None  # the year of the first full date in its head
    size: int = 0  # bytes on disk (or piped in)

    def read_text(self) -> str:
        """The whole text (small inputs only, such as torchrun's error.json)."""
        return read_head(self.path, self.data, self.size + 1).data.decode("utf-8", "replace")


def discover(
    paths: Sequence[str], dmesg: Sequence[str] = (), stdin: bytes | None = None
) -> tuple[list[Source], list[SkippedInput]]:
    """Every readable input under `paths` (and the kernel logs of `dmesg`), plus what was skipped."""
    sources: list[Source] = []
    skipped: list[SkippedInput] = []
    for arg in paths:
        _collect(arg, None, sources, skipped, stdin)
    for arg in dmesg:
        _collect(arg, StreamKind.KERNEL, sources, skipped, stdin)
    if not sources:
        named = ", ".join(f"{s.path} ({s.reason})" for s in skipped[:3])
        raise InputError("nothing readable in " + ", ".join(paths or dmesg) + (f": {named}" if named else ""))
    return sources, skipped


def _collect(
    arg: str, kind: StreamKind | None, out: list[Source], skipped: list[SkippedInput], stdin: bytes | None
) -> None:
    if arg == STDIN:
        data = stdin if stdin is not None else sys.stdin.buffer.read()
        _add(_source("<stdin>", None, data, len(data), kind, PathRank()), out, skipped)
        return
    root = Path(arg)
    if not root.exists():
        raise InputError("no such file or directory", path=arg)
    if root.is_file():
        _add_file(root, arg, kind, out, skipped)
        return
    if not root.is_dir():
        raise InputError("not a regular file or directory", path=arg)
    files = list(_walk(root, skipped))
    kubeflow = any(re.search(r"master[-_]?0", f.name, re.IGNORECASE) for f in files)
    for path in sorted(files):
        _add_file(path, str(Path(arg) / path.relative_to(root)), kind, out, skipped, kubeflow=kubeflow)


def _walk(root: Path, skipped: list[SkippedInput]) -> Iterator[Path]:
    seen: set[tuple[int, int]] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        st = os.stat(dirpath)
        if (st.st_dev, st.st_ino) in seen:
            skipped.append(SkippedInput(dirpath, "symlink loop: directory already read"))
            dirnames[:] = []
            continue
        seen.add((st.st_dev, st.st_ino))
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        for name in filenames:
            yield Path(dirpath) / name


def _add_file(
    path: Path,
    display: str,
    kind: StreamKind | None,
    out: list[Source],
    skipped: list[SkippedInput],
    *,
    kubeflow: bool = False,
) -> None:
    try:
        if not path.is_file():
            skipped.append(SkippedInput(display, "not a regular file"))
            return
        if path.stat().st_size > _MAX_FILE:
            skipped.append(SkippedInput(display, "larger than 8 GiB"))
            return
        source = _source(display, path, None, path.stat().st_size, kind, rank_from_path(path, kubeflow=kubeflow))
    except OSError as exc:
        skipped.append(SkippedInput(display, f"unreadable: {exc.strerror or exc}"))
        return
    _add(source, out, skipped)


def _source(
    display: str, path: Path | None, data: bytes | None, size: int, kind: StreamKind | None, where: PathRank
) -> Source | SkippedInput:
    """Classify an input from its head, or say why it is skipped."""
    head = read_head(path, data, HEAD)
    if not head.gzip and looks_binary(head.data[:SNIFF]):
        return SkippedInput(display, "binary: not a text log")
    if not head.data.strip() and not _has_text(path, data, len(head.data)):
        return SkippedInput(display, head.problem or "empty")
    text = head.data.decode("utf-8", "replace")
    if looks_binary(text[:SNIFF].encode("utf-8", "replace")):
        return SkippedInput(display, "binary: not a text log")
    kind = kind or classify(display, text, where)
    return Source(display, kind, path, data, where, data is not None, head.problem, _year(text), size)


def _has_text(path: Path | None, data: bytes | None, skip: int) -> bool:
    """Whether anything but white space follows a blank head (read in chunks, never whole)."""
    if skip < HEAD:
        return False
    with contextlib.closing(open_bytes(path, data)) as stream:
        return any(chunk.buf[chunk.start : chunk.end].strip() for chunk in ChunkReader(stream))


def _year(text: str) -> int | None:
    for line in text[:_YEAR_CHARS].splitlines()[:_YEAR_LINES]:
        if (year := year_hint_from_text(line)) is not None:
            return year
    return None


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


_KERNEL_LINE = re.compile(
    r"^(?:<\d+>)?\[\s*\d+\.\d{6}\] "  # raw dmesg
    r"|^\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}[^\]]*\] "  # dmesg -T
    r"|^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\S+) \S+ kernel: "  # journal / kern.log
    r"|^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d,\d{6}[+-]\d\d:?\d\d "  # dmesg --time-format iso
)


def _sniff_kernel(text: str) -> bool:
    lines = [line for line in text[:65536].splitlines()[:200] if line.strip()]
    if not lines:
        return False
    return sum(1 for line in lines if _KERNEL_LINE.match(line)) >= 0.6 * len(lines)
