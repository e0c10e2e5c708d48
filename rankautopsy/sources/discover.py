"""Find the inputs under the paths a user gave, open them, and tell what each one is."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rankautopsy.errors import InputError
from rankautopsy.model import SkippedInput, StreamKind
from rankautopsy.sources.ranks import PathRank, rank_from_path
from rankautopsy.sources.read import SNIFF, decode, is_gzip, looks_binary

STDIN = "-"
_KERNEL_NAME = re.compile(r"(?:^dmesg|\.dmesg(?:\.|$)|^kern\.log|^kernel\.log|^journal.*-k)", re.IGNORECASE)
_SKIP_DIRS = frozenset({".git", "__pycache__", ".hg", ".svn"})
_MAX_FILE = 8 * 1024**3


@dataclass(frozen=True, slots=True)
class Source:
    """One input stream, read into memory and classified."""

    display: str
    kind: StreamKind
    text: str
    where: PathRank = field(default_factory=PathRank)
    live: bool = False  # piped in from this host right now (raw dmesg stamps can use its boot time)
    problem: str | None = None  # read, but not whole (e.g. a truncated gzip)


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
        _add("<stdin>", data, kind, PathRank(), out, skipped, live=True)
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
        data = path.read_bytes()
    except OSError as exc:
        skipped.append(SkippedInput(display, f"unreadable: {exc.strerror or exc}"))
        return
    _add(display, data, kind, rank_from_path(path, kubeflow=kubeflow), out, skipped)


def _add(
    display: str,
    data: bytes,
    kind: StreamKind | None,
    where: PathRank,
    out: list[Source],
    skipped: list[SkippedInput],
    *,
    live: bool = False,
) -> None:
    if not data.strip():
        skipped.append(SkippedInput(display, "empty"))
        return
    if not is_gzip(data[:2]) and looks_binary(data[:SNIFF]):
        skipped.append(SkippedInput(display, "binary: not a text log"))
        return
    decoded = decode(data)
    if not decoded.text.strip():
        skipped.append(SkippedInput(display, decoded.problem or "empty"))
        return
    if looks_binary(decoded.text[:SNIFF].encode("utf-8", "replace")):
        skipped.append(SkippedInput(display, "binary: not a text log"))
        return
    if decoded.problem:
        skipped.append(SkippedInput(display, f"{decoded.problem} (the part before the damage was read)"))
    kind = kind or classify(display, decoded.text, where)
    out.append(Source(display, kind, decoded.text, where, live, decoded.problem))


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
