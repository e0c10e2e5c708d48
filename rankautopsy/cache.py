"""The per-user cache of things that are slow to rebuild and cheap to check (validated rule packs,
compiled scanner databases). Any stage may import it; it imports nothing of the package.

A cache entry is trusted only as far as it proves itself: its header records the entry's key, the
body's size and its BLAKE2b digest, and an entry whose header does not match what the caller asks for is
ignored (and rebuilt by the caller). Bodies are data (JSON, or a Hyperscan serialisation), never
pickles. The directory is created 0700 and used only when it is a real directory owned by this user
and not writable by others; entries are written through `O_EXCL` temp files and renamed into place,
so a planted symlink is never written through. Every failure means "no cache", never an error.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from pathlib import Path

try:  # hashlib loads OpenSSL, ~7 % of the imports of a small diagnosis
    from _blake2 import blake2b
except ImportError:  # an interpreter built without it
    from hashlib import blake2b

CACHE_ENV = "RANKAUTOPSY_CACHE_DIR"  # a directory, or "off"
MAGIC = b"rankautopsy-cache 2"
MAX_ENTRY = 64 * 1024 * 1024  # bytes: larger entries are neither written nor read


def cache_dir() -> Path | None:
    """$RANKAUTOPSY_CACHE_DIR ("off": none), else the platform's user cache directory, as platformdirs
    names it: ~/Library/Caches/rankautopsy on macOS, %LOCALAPPDATA%\\rankautopsy\\Cache on Windows,
    else $XDG_CACHE_HOME/rankautopsy (an absolute one), else ~/.cache/rankautopsy."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen == "off":
        return None
    if chosen:
        return Path(chosen)
    local = os.environ.get("LOCALAPPDATA")
    if sys.platform == "win32" and local and Path(local).is_absolute():
        return Path(local) / "rankautopsy" / "Cache"
    base = os.environ.get("XDG_CACHE_HOME")
    if sys.platform != "darwin" and base and Path(base).is_absolute():
        return Path(base) / "rankautopsy"
    try:
        home = Path.home()
    except RuntimeError:  # no home directory
        return None
    return home / ("Library/Caches" if sys.platform == "darwin" else ".cache") / "rankautopsy"


def key_of(*parts: bytes | str) -> str:
    """A cache key: the BLAKE2b of the parts, each length-prefixed so that no two lists collide."""
    digest = blake2b(digest_size=20)
    for part in parts:
        raw = part.encode("utf-8", "surrogateescape") if isinstance(part, str) else part
        digest.update(len(raw).to_bytes(8, "big") + raw)
    return digest.hexdigest()


def read(name: str, key: str) -> bytes | None:
    """The body stored under `name` for `key`, or None when there is none or it does not check out."""
    folder = _usable_dir(create=False)
    if folder is None:
        return None
    try:
        fd = os.open(folder / _file(name, key), os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_ENTRY + 256 or info.st_uid != os.getuid():
            return None
        header, _, body = handle.read(MAX_ENTRY + 256).partition(b"\n")
    return body if header == _header(key, body) else None


def write(name: str, key: str, body: bytes) -> None:
    """Store `body` under `name` for `key`, atomically; best effort (a cache that cannot be written is
    no cache)."""
    if len(body) > MAX_ENTRY:
        return
    folder = _usable_dir(create=True)
    if folder is None:
        return
    temp = folder / f".{_file(name, key)}.{os.urandom(8).hex()}.tmp"
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except OSError:
        return
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(_header(key, body) + b"\n" + body)
        os.replace(temp, folder / _file(name, key))
    except BaseException as exc:  # a stop (SIGTERM, Ctrl-C) mid-write must not leave the temp file either
        with contextlib.suppress(OSError):
            temp.unlink()
        if not isinstance(exc, OSError):
            raise


def _file(name: str, key: str) -> str:
    return f"{name}-{key}.cache"


def _header(key: str, body: bytes) -> bytes:
    return b" ".join((MAGIC, key.encode(), str(len(body)).encode(), blake2b(body).hexdigest().encode()))


def _usable_dir(*, create: bool) -> Path | None:
    """The cache directory, if it is a real directory of this user's that nobody else can write."""
    folder = cache_dir()
    if folder is None:
        return None
    if create:
        with contextlib.suppress(OSError):
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        info = folder.lstat()
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        return None
    return folder
