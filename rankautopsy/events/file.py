"""The event file: one node's Collected as JSON Lines (gzip when the name ends in .gz).

Line 1 is the header (`{"format": "rankautopsy-events", "schema": 1, ...}`): it is what makes a file an
event file, whatever its name. Then one record per line: `skipped`, `input` (with its stream's last signs
of life), the `event`s of the input before them, and `end` with the counts, so that a cut-off file is
told from a whole one. The shape is `rankautopsy/schema/events-1.json`. Reading trusts nothing: a
record of the wrong shape is an EventFileError naming the line, never a crash further on.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from rankautopsy import __version__
from rankautopsy.errors import InputError
from rankautopsy.events.collected import Collected, Node, Part
from rankautopsy.events.records import Corrupt, event_from, event_record, input_from, input_record, text, when
from rankautopsy.model import SkippedInput
from rankautopsy.sources.read import Data, raw_stream

MAGIC = "rankautopsy-events"
SCHEMA = 1
_HEAD = b'{"format": "' + MAGIC.encode() + b'"'
MAX_LINE = 16 * 1024 * 1024  # a record longer than this is not one this program wrote


class EventFileError(InputError):
    """An event file that cannot be read: another schema version, truncated or corrupt."""

    @property
    def reason(self) -> str:
        """Why, without the path (a skipped input's reason)."""
        return self.message if self.line is None else f"{self.message} (line {self.line})"


def is_event_file(head: bytes) -> bool:
    """Whether the first line of an input (decompressed) is an event file's header."""
    return head.lstrip(b"\xef\xbb\xbf").startswith(_HEAD)


def write(collected: Collected, target: Path) -> int:
    """Write atomically: a temporary file in the target's directory, renamed over it. Returns the bytes."""
    import gzip
    import tempfile  # both only where event files are written or read: a diagnosis loads neither

    directory = target.parent if str(target.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as raw:
            if target.name.endswith(".gz"):
                with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as packed:
                    _write_lines(packed, collected)
            else:
                _write_lines(raw, collected)
            raw.flush()
            os.fsync(raw.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return target.stat().st_size


def write_to(collected: Collected, sink: IO[bytes]) -> int:
    """To a stream (stdout for `-o -`: over ssh or `kubectl exec`), uncompressed. Returns the bytes."""
    count = 0
    for line in lines(collected):
        count += sink.write(line.encode("utf-8") + b"\n")
    sink.flush()
    return count


def _write_lines(sink: io.BufferedIOBase | IO[bytes], collected: Collected) -> None:
    for line in lines(collected):
        sink.write(line.encode("utf-8") + b"\n")


def lines(collected: Collected) -> Iterator[str]:
    """The records of an event file, each one line of JSON."""
    yield _dump(
        {
            "format": MAGIC,
            "schema": SCHEMA,
            "written": datetime.now(UTC).isoformat(),
            "version": __version__,
            "nodes": [{"host": n.host, "boot_time": n.boot_time.isoformat() if n.boot_time else None}
                      for n in collected.nodes],
            "year": collected.year,
        }
    )  # fmt: skip
    events = 0
    for skipped in collected.skipped:
        yield _dump({"type": "skipped", "path": skipped.path, "reason": skipped.reason})
    for part in collected.parts:
        yield _dump(input_record(part))
        for event in part.events:
            yield _dump(event_record(event))
        events += len(part.events)
    yield _dump({"type": "end", "inputs": len(collected.parts), "events": events, "skipped": len(collected.skipped)})


def _dump(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, separators=(", ", ": "))


def read(path: Path | None, data: Data | None, display: str) -> Collected:
    """An event file (a path, or bytes piped in) back into what its node collected."""
    import zlib

    try:
        return _parse(_records(path, data), display)
    except Corrupt as exc:
        raise EventFileError(f"not a readable event file: {exc.why}", path=display, line=exc.line) from None
    except (OSError, EOFError, zlib.error) as exc:
        reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
        raise EventFileError(f"not a readable event file: {reason}", path=display) from None


def _records(path: Path | None, data: Data | None) -> Iterator[tuple[int, Any]]:
    import gzip

    raw = io.BufferedReader(raw_stream(path, data))
    with raw:
        magic = raw.read(2)
        raw.seek(0)
        stream: io.BufferedIOBase | IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if magic == b"\x1f\x8b" else raw
        for number, line in enumerate(_bounded_lines(stream), 1):
            if not line.strip():
                continue
            try:
                yield number, json.loads(line)
            except (ValueError, RecursionError):
                raise Corrupt(number, "a line is not JSON") from None


def _bounded_lines(stream: io.BufferedIOBase | IO[bytes]) -> Iterator[bytes]:
    while line := stream.readline(MAX_LINE + 1):
        if len(line) > MAX_LINE:
            raise Corrupt(None, f"a line longer than {MAX_LINE // 1024**2} MiB")
        yield line


def _parse(records: Iterable[tuple[int, Any]], display: str) -> Collected:
    it = iter(records)
    first = next(it, None)
    if first is None:
        raise Corrupt(None, "empty")
    header = _header(*first)
    out = Collected(year=header["year"], nodes=header["nodes"])
    out.nodes = [Node(host=n.host, boot_time=n.boot_time, event_file=display) for n in out.nodes]
    for number, record in it:
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == "end":
            _check_end(number, record, out)
            return out
        if kind == "skipped":
            out.skipped.append(_skipped(number, record))
        elif kind == "input":
            out.parts.append(input_from(number, record))
        elif kind == "event":
            if not out.parts:
                raise Corrupt(number, "an event before any input")
            out.parts[-1].events.append(event_from(number, record))
        else:
            raise Corrupt(number, "a record of unknown type")
    raise Corrupt(None, "truncated (no end record)")


def _header(number: int, record: Any) -> dict[str, Any]:
    if not isinstance(record, dict) or record.get("format") != MAGIC:
        raise Corrupt(number, "no event-file header on its first line")
    schema = record.get("schema")
    if schema != SCHEMA:
        shown = schema if isinstance(schema, int) and not isinstance(schema, bool) else "unknown"
        raise Corrupt(number, f"schema {shown}; this rankautopsy {__version__} reads schema {SCHEMA}")
    year = record.get("year")
    if year is not None and (not isinstance(year, int) or isinstance(year, bool) or not 1 <= year <= 9999):
        raise Corrupt(number, "a bad year")
    nodes = record.get("nodes")
    if not isinstance(nodes, list) or not all(isinstance(n, dict) for n in nodes):
        raise Corrupt(number, "a bad node list")
    return {"year": year, "nodes": [_node(number, n) for n in nodes]}


def _node(number: int, record: dict[str, Any]) -> Node:
    return Node(host=text(number, record, "host"), boot_time=when(number, record.get("boot_time")))


def _skipped(number: int, record: dict[str, Any]) -> SkippedInput:
    return SkippedInput(text(number, record, "path"), text(number, record, "reason"))


def _check_end(number: int, record: dict[str, Any], out: Collected) -> None:
    events = sum(len(p.events) for p in out.parts)
    counts = (record.get("inputs"), record.get("events"), record.get("skipped"))
    if counts != (len(out.parts), events, len(out.skipped)):
        raise Corrupt(number, "its end record does not match its contents (records lost)")


__all__ = ["MAGIC", "SCHEMA", "EventFileError", "Part", "is_event_file", "lines", "read", "write", "write_to"]
