"""`compile`: `re.compile`, with the compiled program of each pattern kept in the cache between runs.

`re` parses and compiles a pattern in pure Python: the package's ~250 patterns were 25-35 ms of a
small diagnosis's start, more than reading the logs. CPython's `_sre.compile` takes the compiled
program (a list of ints) directly and validates it; this module stores each program with its group
names in one cache entry, keyed by the interpreter's version and `_sre`'s magic and code size, and
builds later runs' patterns from it. A program enters the cache only when the pattern it builds
equals the one `re.compile` builds (`Pattern.__eq__` compares the program), and anything unexpected
(another interpreter, a changed private API, a damaged entry) falls back to `re.compile`. Imports
only `rankautopsy.cache`.
"""

from __future__ import annotations

import atexit
import binascii
import contextlib
import json
import os
import re
import sys
from array import array
from typing import Any, AnyStr

from rankautopsy import cache

try:
    import _sre  # type: ignore[import-not-found]
    from re import _compiler, _parser  # type: ignore[attr-defined]

    _KEY: str | None = cache.key_of("recache 1", sys.version, str(_sre.MAGIC), str(_sre.CODESIZE))
except (ImportError, AttributeError):  # not CPython, or its sre changed: plain re.compile
    _KEY = None

ENTRY = "patterns"
_CODE = "I" if array("I").itemsize == 4 else "L"
_Program = tuple[int, list[int], int, dict[str, int], tuple[str | None, ...]]

# Programs kept: past this, a save keeps only those its run used. Every start reads the whole entry:
# 1,300 programs (test packs of a past session) made a small diagnosis 55 ms slower than the ~300
# built-in ones did.
MAX_KEPT = 768
_programs: dict[tuple[str, str, int], Any] | None = None  # a program, or its row not yet read
_used: set[tuple[str, str, int]] = set()
_added = False


def compile(pattern: AnyStr, flags: int | re.RegexFlag = 0) -> re.Pattern[AnyStr]:
    """The same pattern `re.compile(pattern, flags)` returns."""
    flags = int(flags)
    if _KEY is None or flags & re.DEBUG:
        return re.compile(pattern, flags)
    key = ("b" if isinstance(pattern, bytes) else "s", _text(pattern), flags)
    programs = _loaded()
    _used.add(key)
    program = _built(programs.get(key))
    if program is not None:
        try:
            return _sre.compile(pattern, *program)  # type: ignore[no-any-return]
        except (TypeError, ValueError, RuntimeError, OverflowError):  # RuntimeError: sre's validator
            del programs[key]
    compiled = re.compile(pattern, flags)
    program = _program(pattern, flags, compiled)
    if program is not None:
        programs[key] = program
        _remember()
    return compiled


def _text(pattern: str | bytes) -> str:
    return pattern.decode("latin-1") if isinstance(pattern, bytes) else pattern


def _program(pattern: AnyStr, flags: int, compiled: re.Pattern[AnyStr]) -> _Program | None:
    """What `_sre.compile` needs to build `compiled` again, if it builds the same pattern."""
    try:
        parsed = _parser.parse(pattern, flags)
        code = _compiler._code(parsed, flags)
        groupindex = dict(parsed.state.groupdict)
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        program = (flags | parsed.state.flags, code, parsed.state.groups - 1, groupindex, tuple(indexgroup))
        return program if _sre.compile(pattern, *program) == compiled else None
    except Exception:  # a private API that changed: this pattern is not cached
        return None


def _loaded() -> dict[tuple[str, str, int], Any]:
    global _programs
    if _programs is None:
        body = cache.read(ENTRY, _KEY) if _KEY is not None else None
        _programs = _decode(body) if body is not None else {}
        if len(_programs) > MAX_KEPT:
            _remember()  # an entry past its bound is cut down to this run's programs at exit
    return _programs


def _decode(body: bytes) -> dict[tuple[str, str, int], Any]:
    """The rows by key; a row becomes a program only when its pattern is asked for (`_built`)."""
    try:
        return {(str(row[0]), str(row[1]), int(row[2])): row for row in json.loads(body)}
    except Exception:  # a damaged entry is no entry
        return {}


def _built(row: Any) -> _Program | None:
    if not isinstance(row, list):
        return row  # type: ignore[no-any-return]
    try:
        _kind, _text, _flags, out_flags, code, groups, groupindex, indexgroup = row
        return (
            int(out_flags),
            array(_CODE, binascii.a2b_base64(code)).tolist(),
            int(groups),
            {str(k): int(v) for k, v in groupindex.items()},
            tuple(None if name is None else str(name) for name in indexgroup),
        )
    except Exception:  # a damaged row is no row
        return None


def _encode(programs: dict[tuple[str, str, int], Any]) -> bytes:
    rows: list[list[Any]] = []
    for (kind, text, flags), program in programs.items():
        if isinstance(program, list):  # a row read and not used: kept as it was
            rows.append(program)
            continue
        out_flags, code, groups, groupindex, indexgroup = program
        packed = binascii.b2a_base64(array(_CODE, code).tobytes(), newline=False).decode("ascii")
        rows.append([kind, text, flags, out_flags, packed, groups, groupindex, list(indexgroup)])
    return json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def _remember() -> None:
    """Write the programs at exit, once, from this process (a forked worker's exit is not ours)."""
    global _added
    if not _added:
        _added = True
        atexit.register(_save, os.getpid())


def _save(pid: int) -> None:
    if pid == os.getpid() and _programs and _KEY is not None:
        kept = _programs if len(_programs) <= MAX_KEPT else {k: v for k, v in _programs.items() if k in _used}
        with contextlib.suppress(OSError, ValueError):
            cache.write(ENTRY, _KEY, _encode(kept))
