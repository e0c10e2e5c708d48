"""What the map step leaves for the reduce step: typed, mergeable across nodes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import field, replace
from datetime import datetime

from rankautopsy.model import Event, Evidence, Input, Location, SkippedInput
from rankautopsy.records import record
from rankautopsy.sources.lines import Stream


@record(kw_only=True)
class Node:
    """Where a part was scanned: the host, and the boot time that placed its raw kernel stamps."""

    host: str
    boot_time: datetime | None = None
    event_file: str | None = None  # the event file it was read from (None: scanned in this process)


@record(frozen=False, kw_only=True)
class Part:
    """One input scanned: what it is, its events, and each channel's last sign of life."""

    input: Input
    events: list[Event]
    stream: Stream | None = None  # its last signs of life (None for torchrun's error.json: no stream)
    notes: list[str] = field(default_factory=list)
    problem: str | None = None  # why it was not read whole, when discovery did not already say


@record(frozen=False, kw_only=True)
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
            out.add(c)
        return out

    def add(self, other: Collected) -> None:
        """Another node's (or input's) collection after this one's, in place."""
        self.parts.extend(other.parts)
        self.skipped.extend(other.skipped)
        self.year = self.year if self.year is not None else other.year
        self.nodes.extend(other.nodes)

    def apart(self) -> Collected:
        """Inputs of the same name from different nodes (each node's `/var/log/dmesg.txt`) renamed
        `host:path`, so that the timeline never takes two nodes' lines for one input's."""
        hosts: dict[str, set[str | None]] = {}
        for part in self.parts:
            hosts.setdefault(part.input.path, set()).add(part.input.host)
        shared = {path for path, on in hosts.items() if len(on) > 1}
        if shared:
            self.parts = [_renamed(p) if p.input.path in shared and p.input.host else p for p in self.parts]
        return self


def _renamed(part: Part) -> Part:
    old, new = part.input.path, f"{part.input.host}:{part.input.path}"

    def moved(where: Location) -> Location:
        return Location(new, where.line) if where.source == old else where

    events = [
        replace(e, where=moved(e.where), lines=tuple(Evidence(moved(x.where), x.text) for x in e.lines))
        for e in part.events
    ]
    stream = part.stream
    if stream is not None:
        stream = replace(stream, source=replace(stream.source, display=new))
    return replace(part, input=replace(part.input, path=new), events=events, stream=stream)
