"""Events on one timeline: ranks joined to pids, launcher exits, last signs of life per rank."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from rankautopsy.clocks import ClockContext, parse_torchrun_time
from rankautopsy.lines import Stream
from rankautopsy.model import Cause, Event, Role, StreamKind, TimeSpan

# Launcher rules whose facts report a worker's exit (exitcode, pid, rank or local rank).
EXIT_RULES = frozenset({"torchrun.worker-failed", "torchrun.failure-entry", "torchrun.mp-spawn-terminated"})
TEARDOWN_RULES = frozenset({"torchrun.closing-signal", "torchrun.forceful-kill", "torchrun.spawn-terminating"})
COMPLETE_RULES = frozenset({"progress.training-complete"})
_SIGNALS = {"SIGKILL": 9, "SIGSEGV": 11, "SIGABRT": 6, "SIGBUS": 7, "SIGTERM": 15, "SIGFPE": 8, "SIGILL": 4}


@dataclass(slots=True)
class Exit:
    code: int | None  # negative: killed by that signal (torchrun's convention)
    event: int  # index of the event that reported it
    noticed: TimeSpan | None  # when the launcher saw it: the death happened before


@dataclass(slots=True)
class RankState:
    rank: int
    host: str | None = None
    pid: int | None = None
    events: list[int] = field(default_factory=list)
    last_seen: datetime | None = None
    last_step: int | None = None
    exit: Exit | None = None
    torn_down: int | None = None  # index of the launcher's teardown event for this rank
    completed: int | None = None  # index of its "training complete" event
    died_at: TimeSpan | None = None  # when its recorded exception was written (torchrun's error file)


@dataclass(slots=True)
class Timeline:
    events: list[Event]
    ranks: dict[int, RankState]
    pids: dict[int, int]  # pid -> rank
    notes: list[str]
    root_cause_rank: int | None = None  # what torchrun's "Root Cause" entry named
    end: datetime | None = None  # the latest time seen in any input
    ctx: ClockContext | None = None


def build_timeline(streams: Sequence[Stream], per_stream: Sequence[list[Event]], ctx: ClockContext) -> Timeline:
    events = [e for evs in per_stream for e in evs]
    tl = Timeline(events, {}, {}, [], ctx=ctx)
    local_to_rank = _local_rank_map(events)
    tl.events = [_resolve_local(e, local_to_rank) for e in tl.events]
    tl.pids = _pid_map(tl.events, local_to_rank)
    tl.events = [_join_pid(e, tl.pids) for e in tl.events]
    tl.events.sort(key=_order_key)
    for stream in streams:
        _last_seen(stream, tl, local_to_rank)
    for index, event in enumerate(tl.events):
        _apply(tl, index, event, local_to_rank)
    tl.end = max((s.latest for s in (e.time for e in tl.events) if s is not None), default=None)
    if tl.end is not None:
        seen = [r.last_seen for r in tl.ranks.values() if r.last_seen is not None]
        tl.end = max([tl.end, *seen])
    return tl


def _order_key(event: Event) -> tuple[int, datetime, str, int]:
    if event.time is None:
        return (1, datetime.max.replace(tzinfo=None), event.where.source, event.where.line)
    return (0, event.time.earliest.replace(tzinfo=None), event.where.source, event.where.line)


def _local_rank_map(events: Iterable[Event]) -> dict[int, int]:
    mapping: dict[int, int] = {}
    for e in events:
        if e.rule == "torchrun.failure-entry" and "rank" in e.facts and "local_rank" in e.facts:
            mapping[int(e.facts["local_rank"])] = int(e.facts["rank"])
    return mapping


def _resolve_local(event: Event, mapping: dict[int, int]) -> Event:
    """A line known only by torchrun's local rank: global rank via the failure table, else (one node) the same."""
    if event.rank is not None or "emitter_local_rank" not in event.facts:
        return event
    local = int(event.facts["emitter_local_rank"])
    return dataclasses.replace(event, rank=mapping.get(local, local), rank_from="local_rank")


def _pid_map(events: Iterable[Event], local_to_rank: dict[int, int]) -> dict[int, int]:
    pids: dict[int, int] = {}
    for e in events:
        if e.pid is None or e.rule not in EXIT_RULES:
            continue
        rank = _exit_rank(e, local_to_rank)
        if rank is not None:
            pids.setdefault(e.pid, rank)
    return pids


def _exit_rank(event: Event, local_to_rank: dict[int, int]) -> int | None:
    if "rank" in event.facts:
        return int(event.facts["rank"])
    if "local_rank" in event.facts:
        local = int(event.facts["local_rank"])
        return local_to_rank.get(local, local)
    return event.rank


def _join_pid(event: Event, pids: dict[int, int]) -> Event:
    """Kernel and launcher lines name a pid: that pid's rank is the rank they are about."""
    if event.pid is None or event.pid not in pids or event.rank is not None:
        return event
    return dataclasses.replace(event, rank=pids[event.pid], rank_from="pid")


def _last_seen(stream: Stream, tl: Timeline, local_to_rank: dict[int, int]) -> None:
    if stream.kind is StreamKind.KERNEL:
        return
    for rank, local, time in zip(stream.ranks, stream.local_ranks, stream.times, strict=True):
        if time is None:
            continue
        if rank is None and local is not None:
            rank = local_to_rank.get(local, local)
        if rank is None:
            continue
        state = _state(tl, rank)
        if state.last_seen is None or time.earliest > state.last_seen:
            state.last_seen = time.earliest


_IP = re.compile(r"^[\d.]+$|:")


def short_host(host: str | None) -> str | None:
    """Hosts differ by source (torchrun's FQDN, NCCL's short name): compare short names."""
    if not host or _IP.search(host):
        return host
    return host.split(".", 1)[0]


def _state(tl: Timeline, rank: int) -> RankState:
    if rank not in tl.ranks:
        tl.ranks[rank] = RankState(rank)
    return tl.ranks[rank]


def _apply(tl: Timeline, index: int, event: Event, local_to_rank: dict[int, int]) -> None:
    if event.rule in EXIT_RULES:
        rank = _exit_rank(event, local_to_rank)
        if rank is None:
            return
        state = _state(tl, rank)
        _record_exit(state, index, event, tl.ctx)
        if event.rule == "torchrun.failure-entry" and event.facts.get("root_cause") == "1":
            tl.root_cause_rank = rank
        return
    if event.rank is None:
        return
    state = _state(tl, event.rank)
    state.events.append(index)
    state.host = state.host or short_host(event.host)
    if event.rule in TEARDOWN_RULES and state.torn_down is None:
        state.torn_down = index
    if event.rule in COMPLETE_RULES:
        state.completed = index
    if event.role is Role.PROGRESS and "step" in event.facts:
        step = int(event.facts["step"])
        state.last_step = step if state.last_step is None else max(state.last_step, step)


def _record_exit(state: RankState, index: int, event: Event, ctx: ClockContext | None) -> None:
    state.events.append(index)
    state.pid = state.pid or event.pid
    state.host = state.host or short_host(event.facts.get("host"))
    code = exit_code(event.facts)
    noticed = event.time
    table = parse_torchrun_time(event.facts["table_time"], ctx) if ctx and "table_time" in event.facts else None
    if table is not None:
        # torchrun's `time` is when the rank recorded its exception (error file), else when the agent noticed.
        if event.facts.get("table_error_file", "<N/A>") != "<N/A>":
            state.died_at = table
        if noticed is None or table.latest < noticed.latest:
            noticed = table
    if state.exit is None or (state.exit.code is None and code is not None):
        state.exit = Exit(code, index, noticed)
    elif noticed is not None and (state.exit.noticed is None or noticed.latest < state.exit.noticed.latest):
        state.exit.noticed = noticed


def exit_code(facts: Mapping[str, str]) -> int | None:
    """torchrun's convention: negative codes are signals."""
    if (code := facts.get("exitcode")) is not None:
        try:
            return int(code)
        except ValueError:
            return None
    signal = facts.get("signal")
    if signal in _SIGNALS:
        return -_SIGNALS[signal]
    if signal and str(signal).isdigit():
        return -int(signal)
    return None


def is_symptom(event: Event) -> bool:
    return event.role is Role.SYMPTOM and event.cause is not Cause.LAUNCHER_TEARDOWN
