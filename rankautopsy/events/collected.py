"""What the map step leaves for the reduce step: typed, mergeable across nodes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from rankautopsy.model import Event, Input, SkippedInput
from rankautopsy.sources.lines import Stream


@dataclass(frozen=True, slots=True, kw_only=True)
class Node:
    """Where a part was scanned: the host, and the boot time that placed its raw kernel stamps."""

    host: str
    boot_time: datetime | None = None
    event_file: str | None = None  # the event file it was read from (None: scanned in this process)


@dataclass(slots=True, kw_only=True)
class Part:
    """One input scanned: what it is, its events, and each channel's last sign of life."""

    input: Input
    events: list[Event]
    stream: Stream | None = None  # its last signs of life (None for torchrun's error.json: no stream)
    notes: list[str] = field(default_factory=list)
    problem: str | None = None  # why it was not read whole, when discovery did not already say


@dataclass(slots=True, kw_only=True)
class Collected:
    """The inputs of one or more nodes, scanned. Parts keep their order; merging concatenates."""

    parts: list[Part] = field(default_factory=list)
    skipped: list[SkippedInput] = field(default_factory=list)  # found at discovery but not read
    year: int | None = None  # the year of the first full date in the inputs (for stamps without one)
    nodes: list[Node] = field(default_factory=list)

    @classmethod
    def merge(cls, collected: Iterable[Collected]) -> Collected:
        out = cls()
        for c in collected:
            out.parts.extend(c.parts)
            out.skipped.extend(c.skipped)
            out.year = out.year if out.year is not None else c.year
            out.nodes.extend(c.nodes)
        return out
