"""Archives of logs (tar, plain or compressed; zip) read as folders: the way logs are handed over.

Each regular member is copied, as it is read, into one unnamed temporary file per archive (nothing is
written next to the user's files, and nothing is left behind) and becomes an input of its own, named
`ARCHIVE/MEMBER`. A member whose head is binary is skipped before the rest of it is copied (a model
checkpoint is a zip of tensors); an archive inside an archive is not opened. Imports `read` and `records`.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator
from pathlib import Path
from typing import IO, cast

from rankautopsy.records import record
from rankautopsy.sources.read import (
    CHUNK,
    MAX_INPUT,
    SNIFF,
    Data,
    Spool,
    is_encoded,
    looks_binary,
    open_bytes,
    spool_file,
)

_ZIP = (b"PK\x03\x04", b"PK\x05\x06")  # a member's header, or an empty archive's end
_TAR_MAGIC = slice(257, 262)


def archive_format(head: bytes) -> str | None:
    """The archive a stream's (decompressed) head starts, `tar` or `zip`, or None."""
    if head[:4] in _ZIP:
        return "zip"
    return "tar" if head[_TAR_MAGIC] == b"ustar" else None


@record
class Member:
    """A member of an archive: its name in the archive, and its bytes or why it was not read."""

    name: str
    data: Spool | None
    reason: str | None = None


def members(path: Path | None, data: Data | None, fmt: str) -> Iterator[Member]:
    """The regular files of an archive, in archive order; a damaged archive ends with a Member saying so."""
    spooled = spool_file()
    found = _tar(path, data) if fmt == "tar" else _zip(path, data)
    read = False
    try:
        for name, stream, size in found:
            yield _copied(name, stream, size, spooled)
            read = True
    except _damage() as exc:
        yield Member("", None, f"damaged {fmt} archive: {exc}" + (" (the members before it were read)" if read else ""))


def _damage() -> tuple[type[Exception], ...]:
    import tarfile
    import zipfile
    import zlib

    return (OSError, EOFError, ValueError, NotImplementedError, RuntimeError,  # RuntimeError: a password
            tarfile.TarError, zipfile.BadZipFile, zlib.error)  # fmt: skip


_Found = Iterator[tuple[str, IO[bytes] | str, int]]  # name, its bytes or why they are not read, size


def _tar(path: Path | None, data: Data | None) -> _Found:
    import tarfile

    raw = io.BufferedReader(cast(io.RawIOBase, open_bytes(path, data)), CHUNK)
    with contextlib.closing(raw), tarfile.open(fileobj=raw, mode="r|") as tar:
        for info in tar:
            stream = tar.extractfile(info) if info.isreg() else None
            if stream is not None:
                yield info.name, stream, info.size


def _zip(path: Path | None, data: Data | None) -> _Found:
    import zipfile

    raw: IO[bytes]
    if path is not None:
        raw = open(path, "rb")  # noqa: SIM115 (closed below)
    elif isinstance(data, Spool):
        raw = io.BufferedReader(data.stream())
    else:
        raw = io.BytesIO(data or b"")
    with contextlib.closing(raw), zipfile.ZipFile(raw) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            if info.flag_bits & 0x1:
                yield info.filename, "encrypted: not read", info.file_size
                continue
            with archive.open(info) as stream:
                yield info.filename, stream, info.file_size


def _copied(name: str, stream: IO[bytes] | str, size: int, out: IO[bytes]) -> Member:
    """A member copied to the end of `out`, or skipped with a reason before most of it is copied."""
    if isinstance(stream, str):
        return Member(name, None, stream)
    if size > MAX_INPUT:
        return Member(name, None, "larger than 8 GiB")
    head = stream.read(SNIFF)  # more than a tar header's magic
    if archive_format(head) is not None:
        return Member(name, None, "an archive inside an archive: not read (extract it to read it)")
    if looks_binary(head) and not is_encoded(head):
        return Member(name, None, "binary: not a text log")
    start = out.seek(0, io.SEEK_END)
    out.write(head)
    while piece := stream.read(CHUNK):
        out.write(piece)
    out.flush()
    return Member(name, Spool(out, out.tell() - start, start))
