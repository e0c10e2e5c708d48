"""The lines the runtime writes: one death record, a start line, heartbeats. Each begins with its UTC
time (so every log reader places it) and then a fixed marker and one JSON object, keys in a fixed order:

    2026-12-01T12:00:00.123456Z rankautopsy-death {"v": 1, "cause": "python_exception", "rank": 3, ...}

`grep rankautopsy-death` finds the deaths of a whole job; rules/runtime.yaml reads them.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Mapping, Sequence

from rankautopsy.runtime.identity import Identity

DEATH = "rankautopsy-death"
START = "rankautopsy-start"
HEARTBEAT = "rankautopsy-heartbeat"
VERSION = 1
_MESSAGE_LIMIT = 500


def utc_stamp(now: float | None = None) -> str:
    now = time.time() if now is None else now
    whole = int(now)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(whole)) + f".{int((now - whole) * 1e6):06d}Z"


def _line(marker: str, fields: Mapping[str, object], now: float | None = None) -> str:
    return f"{utc_stamp(now)} {marker} {json.dumps({'v': VERSION, **fields})}\n"


def death_line(
    who: Identity,
    cause: str,
    *,
    step: int | None = None,
    signal: str | None = None,
    exc_type: str | None = None,
    exc_msg: str | None = None,
    thread: str | None = None,
    now: float | None = None,
) -> str:
    fields: dict[str, object] = {
        "cause": cause,
        "rank": who.rank,
        "local_rank": who.local_rank,
        "pid": who.pid,
        "host": who.host,
        "step": step,
    }
    if signal is not None:
        fields["signal"] = signal
    if thread is not None:
        fields["thread"] = thread
    if exc_type is not None:
        fields["exc_type"] = exc_type
        fields["exc_msg"] = _one_line(exc_msg or "")[:_MESSAGE_LIMIT]
    return _line(DEATH, fields, now)


def _one_line(text: str) -> str:
    lines = [part.strip() for part in text.splitlines() if part.strip()]
    return " | ".join(lines)


def start_line(who: Identity, now: float | None = None) -> str:
    fields = {"rank": who.rank, "local_rank": who.local_rank, "world_size": who.world_size, "pid": who.pid,
              "host": who.host}  # fmt: skip
    return _line(START, fields, now)


def heartbeat_line(rank: int | None, step: int, now: float | None = None) -> str:
    return _line(HEARTBEAT, {"rank": rank, "step": step}, now)


class Sink:
    """Where the records go: file descriptors written with one os.write per line (atomic for a pipe
    up to PIPE_BUF, so ranks sharing a console do not interleave inside a record)."""

    def __init__(self, fds: Sequence[int]) -> None:
        self.fds = tuple(fds)

    def write(self, line: str) -> None:
        data = line.encode("utf-8", "backslashreplace")
        for fd in self.fds:
            with contextlib.suppress(OSError):  # a closed stderr or a full disk must not crash the crash
                os.write(fd, data)
