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
EXIT_RULES = frozenset(
    {
        "torchrun.worker-failed",
        "torchrun.failure-entry",
        "torchrun.mp-spawn-terminated",
        "slurm.task-exit",
        "mpi.noticed-signal",
        "mpi.first-failed-process",
    }
)
TEARDOWN_RULES = frozenset({"torchrun.closing-signal", "torchrun.forceful-kill", "torchrun.spawn-terminating"})
COMPLETE_RULES = frozenset({"progress.training-complete"})
_SIGNALS = {"SIGKILL": 9, "SIGSEGV": 11, "SIGABRT": 6, "SIGBUS": 7, "SIGTERM": 15, "SIGFPE": 8, "SIGILL": 4}
# strsignal() texts, as srun, bash and mpirun print them
_SIGNAL_TEXTS = {
    "Killed": 9,
    "Segmentation fault": 11,
    "Aborted": 6,
    "Bus error": 7,
    "Terminated": 15,
    "Floating point exception": 8,
    "Illegal instruction": 4,
}
_KERNEL_HOST = re.compile(r"(?:dmesg|kern(?:el)?|journal)[-_.](?P<host>[A-Za-z][\w-]*)", re.IGNORECASE)


@dataclass(slots=True)
class Exit:
    code: int | None  # negative: killed by that signal (torchrun's convention)
    event: int  # index of the event that reported it
    noticed: TimeSpan | None  # when the launcher saw it: the death happened before
    oom: bool = False  # the scheduler says the task ran out of memory


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
    events = [_kernel_host(e, s) for s, evs in zip(_kernel_hosts(per_stream), per_stream, strict=True) for e in evs]
    tl = Timeline(events, {}, {}, [], ctx=ctx)
    local_to_rank = LocalRanks.learn(streams, events)
    tl.events = [_resolve_local(e, local_to_rank) for e in tl.events]
    tl.pids = _pid_map(tl.events, local_to_rank)
    buses = _bus_map(tl.events, tl.pids)
    tl.events = [_join_pid(e, tl.pids, buses) for e in tl.events]
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


class LocalRanks:
    """torchrun's local rank (`[default2]:`, `attempt_0/2/`) to the global rank: learned per input from
    lines that carry both and from the agent's failure table; across inputs only where every table
    agrees; else (one node) the same number."""

    def __init__(self) -> None:
        self.by_source: dict[tuple[str, int], int] = {}
        self.by_host: dict[tuple[str, int], int] = {}
        self.anywhere: dict[int, set[int]] = {}

    @classmethod
    def learn(cls, streams: Sequence[Stream], events: Iterable[Event]) -> LocalRanks:
        known = cls()
        for stream in streams:
            for rank, local in zip(stream.ranks, stream.local_ranks, strict=True):
                if rank is not None and local is not None and stream.rank_from:
                    known.by_source.setdefault((stream.source.display, local), rank)
        for e in events:
            if e.rule == "torchrun.failure-entry" and "rank" in e.facts and "local_rank" in e.facts:
                rank, local = int(e.facts["rank"]), int(e.facts["local_rank"])
                known.by_source.setdefault((e.where.source, local), rank)
                if host := short_host(e.facts.get("host")):
                    known.by_host.setdefault((host, local), rank)
                known.anywhere.setdefault(local, set()).add(rank)
        return known

    def resolve(self, source: str, local: int, host: str | None = None) -> int:
        if (source, local) in self.by_source:
            return self.by_source[(source, local)]
        if host is not None and (host, local) in self.by_host:
            return self.by_host[(host, local)]
        ranks = self.anywhere.get(local, set())
        return next(iter(ranks)) if len(ranks) == 1 else local


def _kernel_hosts(per_stream: Sequence[list[Event]]) -> list[str | None]:
    """The host a kernel log belongs to, from its name (`dmesg-node02.txt`), aligned with per_stream."""
    hosts: list[str | None] = []
    for evs in per_stream:
        source = evs[0].where.source if evs else ""
        m = _KERNEL_HOST.search(source.rsplit("/", 1)[-1])
        hosts.append(m["host"] if m else None)
    return hosts


def _kernel_host(event: Event, host: str | None) -> Event:
    if event.host is not None or host is None or not _is_kernel_rule(event):
        return event
    return dataclasses.replace(event, host=host)


def _is_kernel_rule(event: Event) -> bool:
    return event.rule.startswith(("kernel.", "nvidia."))


def _resolve_local(event: Event, local: LocalRanks) -> Event:
    if event.rank is not None or "emitter_local_rank" not in event.facts:
        return event
    rank = local.resolve(event.where.source, int(event.facts["emitter_local_rank"]), short_host(event.host))
    return dataclasses.replace(event, rank=rank, rank_from="local_rank")


def _pid_map(events: Iterable[Event], local: LocalRanks) -> dict[int, int]:
    """pid -> rank, from the launcher's exit reports and NCCL's init lines for the whole-job communicator."""
    pids: dict[int, int] = {}
    inits = [e for e in events if e.rule == "nccl.init-complete" and e.pid is not None]
    world = max((int(e.facts["nranks"]) for e in inits), default=0)
    for e in inits:
        if int(e.facts["nranks"]) == world and e.pid is not None:
            pids.setdefault(e.pid, int(e.facts["comm_rank"]))
    for e in events:
        if e.pid is None or e.rule not in EXIT_RULES:
            continue
        rank = _exit_rank(e, local)
        if rank is not None:
            pids.setdefault(e.pid, rank)
    return pids


def _bus_map(events: Iterable[Event], pids: dict[int, int]) -> dict[int, list[tuple[str | None, int]]]:
    """PCI bus id -> (host, rank), from NCCL's init lines: how an Xid's PCI address finds its rank."""
    buses: dict[int, list[tuple[str | None, int]]] = {}
    for e in events:
        if e.rule == "nccl.init-complete" and e.pid in pids and "busid" in e.facts:
            entry = (short_host(e.facts.get("host")), pids[e.pid] if e.pid is not None else -1)
            if entry not in buses.setdefault(int(e.facts["busid"], 16), []):
                buses[int(e.facts["busid"], 16)].append(entry)
    return buses


def bus_of(pci: str) -> int | None:
    """`0000:3b:00` (Xid) and NCCL's busId `3b000` name the same device."""
    digits = pci.replace(":", "").replace(".", "")
    try:
        return int(digits + ("0" if "." not in pci else ""), 16)
    except ValueError:
        return None


def _exit_rank(event: Event, local: LocalRanks) -> int | None:
    if "rank" in event.facts:
        return int(event.facts["rank"])
    if "local_rank" in event.facts:
        return local.resolve(event.where.source, int(event.facts["local_rank"]), short_host(event.facts.get("host")))
    return event.rank


def _join_pid(event: Event, pids: dict[int, int], buses: dict[int, list[tuple[str | None, int]]]) -> Event:
    """Kernel and launcher lines name a pid (or a GPU): that pid's (GPU's) rank is the rank they are about."""
    if event.rank is not None:
        return event
    if event.pid is not None and event.pid in pids:
        return dataclasses.replace(event, rank=pids[event.pid], rank_from="pid")
    bus = bus_of(event.facts["pci"]) if "pci" in event.facts else None
    candidates = buses.get(bus, []) if bus is not None else []
    host = short_host(event.host)
    on_host = [rank for h, rank in candidates if host is None or h is None or h == host]
    if len(on_host) == 1:
        return dataclasses.replace(event, rank=on_host[0], rank_from="gpu")
    return event


def _last_seen(stream: Stream, tl: Timeline, local_to_rank: LocalRanks) -> None:
    if stream.kind is StreamKind.KERNEL:
        return
    for rank, local, time in zip(stream.ranks, stream.local_ranks, stream.times, strict=True):
        if time is None:
            continue
        if rank is None and local is not None:
            rank = local_to_rank.resolve(stream.source.display, local)
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


def _apply(tl: Timeline, index: int, event: Event, local_to_rank: LocalRanks) -> None:
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
        state.exit = Exit(code, index, noticed, oom=event.facts.get("what") == "Out Of Memory")
    elif noticed is not None and (state.exit.noticed is None or noticed.latest < state.exit.noticed.latest):
        state.exit.noticed = noticed


def exit_code(facts: Mapping[str, str]) -> int | None:
    """torchrun's convention: negative codes are signals."""
    if (code := facts.get("exitcode")) is not None:
        try:
            return int(code)
        except ValueError:
            return None
    what = (facts.get("what") or "").removesuffix(" (core dumped)")
    if what in _SIGNAL_TEXTS or what == "Out Of Memory":
        return -_SIGNAL_TEXTS.get(what, 9)
    signal = facts.get("signal")
    if signal in _SIGNAL_TEXTS:
        return -_SIGNAL_TEXTS[signal]
    if signal in _SIGNALS:
        return -_SIGNALS[signal]
    if signal and str(signal).isdigit():
        return -int(signal)
    return None


def is_symptom(event: Event) -> bool:
    return event.role is Role.SYMPTOM and event.cause is not Cause.LAUNCHER_TEARDOWN
