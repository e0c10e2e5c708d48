"""Events on one timeline: ranks joined to pids, launcher exits, last signs of life per rank.

What a line does here comes from its rule's effects and facts (rankautopsy.model.Effect); no rule id
is named. May import the model, clocks, lines and signals; never the verdict, a renderer or the CLI."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from datetime import datetime

from rankautopsy import recache
from rankautopsy.model import NEIGHBOURS_TIME, Cause, Effect, Event, Role, StreamKind, TimeSpan
from rankautopsy.numbers import read_int
from rankautopsy.records import record
from rankautopsy.signals import as_signal, signal_number
from rankautopsy.sources.clocks import ClockContext, find_time, parse_torchrun_time
from rankautopsy.sources.lines import Stream

# A kernel log named for its host: `dmesg-node02.txt`, `node07-dmesg.txt`, `kern_gpu-3.log`. The part
# after the first dot is an extension, never a host; words that name a dmesg format are not hosts either.
_KERNEL_HOST = recache.compile(
    r"^(?:(?:dmesg|kern(?:el)?|journal)[-_](?P<after>[A-Za-z][\w-]*)|(?P<before>[A-Za-z][\w-]*?)[-_](?:dmesg|kern(?:el)?|journal))$",
    re.IGNORECASE,
)
_NOT_HOSTS = frozenset(
    {"raw", "iso", "ctime", "reltime", "delta", "notime", "human", "t", "h", "k", "log", "all", "full", "boot"}
)


@record(frozen=False)
class Exit:
    code: int | None  # negative: killed by that signal (torchrun's convention)
    event: int  # index of the event that reported it
    noticed: TimeSpan | None  # when the launcher saw it: the death happened before
    oom: bool = False  # the scheduler says the task ran out of memory


@record(frozen=False)
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


@record(frozen=False)
class Timeline:
    events: list[Event]
    ranks: dict[int, RankState]
    pids: dict[int, int]  # pid -> rank
    notes: list[str]
    root_cause_rank: int | None = None  # what torchrun's "Root Cause" entry named
    start: datetime | None = None  # the earliest time seen in any input
    end: datetime | None = None  # the latest time seen in any input
    ctx: ClockContext | None = None
    sweeps: dict[str, int] = field(default_factory=dict)  # source -> line from which the launcher tears all down
    loose_exits: list[int] = field(default_factory=list)  # exit reports tied to no rank (a pid we cannot map)
    quiet: list[int] = field(default_factory=list)  # ranks whose lines were seen, with no event of theirs
    nodes_elsewhere: bool = False  # a line says the job has nodes these logs are not from (`other_nodes`)
    world: int | None = None  # the job's size, where a fact states it
    twinned: set[str] = field(default_factory=set)  # kernel inputs without wall times whose every event is another's


def build_timeline(streams: Sequence[Stream], per_stream: Sequence[list[Event]], ctx: ClockContext) -> Timeline:
    kernel = {s.source.display for s in streams if s.kind is StreamKind.KERNEL}
    hosts = _kernel_hosts(per_stream)
    events = [_kernel_host(e, h, kernel) for h, evs in zip(hosts, per_stream, strict=True) for e in evs]
    events, pairs = _without_twins(events, kernel)
    tl = Timeline(events, {}, {}, [], ctx=ctx)
    for (untimed, timed), (paired, whole) in pairs.items():
        tl.notes.append(
            f"{untimed}: {paired} kernel line{'s' * (paired > 1)} also in {timed}, which has their wall times:"
            f" read from {timed}"
        )
        if whole:
            tl.twinned.add(untimed)
    local_to_rank = LocalRanks.learn(streams, events)
    tl.nodes_elsewhere = local_to_rank.nodes_elsewhere
    seen_hosts = len({h for e in tl.events if (h := short_host(e.host)) is not None})
    tl.events = _without_copies([_resolve_local(e, local_to_rank, seen_hosts) for e in tl.events])
    tl.pids = _pid_map(tl.events, local_to_rank)
    buses = _bus_map(tl.events, tl.pids)
    tl.events = [_stated_time(_join_pid(e, tl.pids, buses), ctx) for e in tl.events]
    tl.events.sort(key=_order_key)
    for stream in streams:
        _last_seen(stream, tl, local_to_rank)
    tl.sweeps = _sweeps(tl.events)
    tl.world = world_size(tl.events)
    tl.events = _of_the_sole_rank(tl.events, kernel, tl.nodes_elsewhere)
    for index, event in enumerate(tl.events):
        _apply(tl, index, event, local_to_rank)
    tl.quiet = sorted({r for s in streams for r in _ranks_shown(s)} - set(tl.ranks))
    tl.start = min((s.earliest for s in (e.time for e in tl.events) if s is not None), default=None)
    tl.end = max((s.latest for s in (e.time for e in tl.events) if s is not None), default=None)
    if tl.end is not None:
        seen = [r.last_seen for r in tl.ranks.values() if r.last_seen is not None]
        tl.end = max([tl.end, *seen])
    return tl


# Facts that say how an event was read or timed, not what its lines say.
_HOW_READ = NEIGHBOURS_TIME | {"seen_by", "emitter_pid", "emitter_local_rank", "repeats"}
_COPIES = "copies"  # the fact that names the inputs' lines an event stands for (`_without_copies`)


def _without_copies(events: list[Event]) -> list[Event]:
    """A console that holds several ranks' output (a launcher's `--tee` beside its `--log-dir`, a job's
    stdout beside per-rank files) repeats what each rank's own input holds. An event of an input of one
    rank that says what an event of the console says, for the same rank, is the same record: the console's
    event stands for it (its lines order the ranks) and names it in `copies`. Pairs are made in order, one
    to one, so that what the console holds fewer times (a restarted rank's second traceback) stays."""
    ranks: dict[str, set[int]] = {}
    for e in events:
        if e.rank is not None:
            ranks.setdefault(e.where.source, set()).add(e.rank)
    console: dict[tuple[object, ...], list[int]] = {}
    for i, e in enumerate(events):
        if e.rank is not None and len(ranks[e.where.source]) > 1:
            console.setdefault(_said(e), []).append(i)
    copies: dict[int, list[int]] = {}
    own = [i for i, e in enumerate(events) if e.rank is not None and ranks[e.where.source] == {e.rank}]
    for i in sorted(own, key=lambda i: (events[i].where.source, events[i].where.line)):
        if same := console.get(_said(events[i])):
            copies.setdefault(same.pop(0), []).append(i)
    return _folded(events, copies)


def _folded(events: list[Event], copies: dict[int, list[int]]) -> list[Event]:
    """The events without the copies, each kept event naming its copies' lines in `copies`."""
    if not copies:
        return events
    dropped = {i for found in copies.values() for i in found}
    out = list(events)
    for kept, found in copies.items():
        where = ", ".join(f"{events[i].where.source}:{events[i].where.line}" for i in found)
        out[kept] = dataclasses.replace(out[kept], facts={**out[kept].facts, _COPIES: where})
    return [e for i, e in enumerate(out) if i not in dropped]


def _without_twins(
    events: list[Event], kernel: set[str]
) -> tuple[list[Event], dict[tuple[str, str], tuple[int, bool]]]:
    """`dmesg` and `dmesg -T` of one host, both given: the same kernel lines, in one input with seconds
    since boot only, in the other with wall times. An untimed event of one kernel input that says what a
    timed event of another says (rule, text, pid, host: `_said`) is the same line: the timed one stands for
    it and names it in `copies`. Pairs are made in order, one to one. Also returns, per (untimed input,
    timed input), how many were paired and whether they were all of the untimed input's events."""
    timed: dict[tuple[object, ...], list[int]] = {}
    for i, e in enumerate(events):
        if e.where.source in kernel and e.time is not None:
            timed.setdefault(_said(e), []).append(i)
    copies: dict[int, list[int]] = {}
    counts: dict[str, int] = {}
    paired: dict[tuple[str, str], int] = {}
    for i, e in enumerate(events):
        if e.where.source not in kernel or e.time is not None:
            continue
        counts[e.where.source] = counts.get(e.where.source, 0) + 1
        same = timed.get(_said(e), [])
        if (j := next((j for j in same if events[j].where.source != e.where.source), None)) is not None:
            same.remove(j)
            copies.setdefault(j, []).append(i)
            key = (e.where.source, events[j].where.source)
            paired[key] = paired.get(key, 0) + 1
    pairs = {key: (n, n == counts[key[0]]) for key, n in paired.items()}
    return _folded(events, copies), pairs


def _said(e: Event) -> tuple[object, ...]:
    facts = tuple(sorted((k, v) for k, v in e.facts.items() if k not in _HOW_READ))
    first = e.lines[0].text.strip() if e.lines else None  # a message's other lines may be another output's
    return (e.rank, e.host, e.rule, e.cause, e.role, e.text.strip(), first, facts)


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
        self.nodes_elsewhere = False  # a line says the job has other nodes: an unmapped local rank is unknown

    @classmethod
    def learn(cls, streams: Sequence[Stream], events: Iterable[Event]) -> LocalRanks:
        known = cls()
        for stream in streams:
            for rank, local in zip(stream.ranks, stream.local_ranks, strict=True):
                if rank is not None and local is not None and stream.rank_from:
                    known.by_source.setdefault((stream.source.display, local), rank)
        for e in events:
            if e.effects & {Effect.EXIT, Effect.IDENTITY} and "rank" in e.facts and "local_rank" in e.facts:
                rank, local = int(e.facts["rank"]), int(e.facts["local_rank"])
                known.by_source.setdefault((e.where.source, local), rank)
                if host := short_host(e.facts.get("host")):
                    known.by_host.setdefault((host, local), rank)
                known.anywhere.setdefault(local, set()).add(rank)
        known.nodes_elsewhere = any(e.facts.get("other_nodes") == "1" for e in events)
        return known

    def knows(self, source: str, local: int, host: str | None = None) -> bool:
        """Whether a table or a line tied this local rank to a global one (else resolve() assumes)."""
        by_host = host is not None and (host, local) in self.by_host
        return (source, local) in self.by_source or by_host or self._only(local) is not None

    def resolve(self, source: str, local: int, host: str | None = None) -> int | None:
        """The global rank, or None where other nodes exist and nothing maps this local rank."""
        if (source, local) in self.by_source:
            return self.by_source[(source, local)]
        if host is not None and (host, local) in self.by_host:
            return self.by_host[(host, local)]
        if (rank := self._only(local)) is not None:
            return rank
        return None if self.nodes_elsewhere else local

    def _only(self, local: int) -> int | None:
        """The one global rank any source tied this local rank to, where the job has one node as far as
        the lines tell (with other nodes, each has a local rank N: another file's table is another node's)."""
        ranks = self.anywhere.get(local, set())
        return next(iter(ranks)) if len(ranks) == 1 and not self.nodes_elsewhere else None


def _ranks_shown(stream: Stream) -> set[int]:
    """The ranks a stream shows lines of, even where none is an event: those its layers name in the
    head, and the rank its file's name gives (a rank's own log, or a py-spy dump of it)."""
    own = stream.source.where.rank
    return set(stream.head_ranks) | ({own} if own is not None and stream.lines_read else set())


def _kernel_hosts(per_stream: Sequence[list[Event]]) -> list[str | None]:
    """The host a kernel log belongs to, from its name (`dmesg-node02.txt`), aligned with per_stream."""
    hosts: list[str | None] = []
    for evs in per_stream:
        source = evs[0].where.source if evs else ""
        m = _KERNEL_HOST.match(source.rsplit("/", 1)[-1].split(".", 1)[0])
        host = (m["after"] or m["before"]) if m else None
        hosts.append(host if host and host.lower() not in _NOT_HOSTS else None)
    return hosts


def _kernel_host(event: Event, host: str | None, kernel: set[str]) -> Event:
    if event.host is not None or host is None or event.where.source not in kernel:
        return event
    return dataclasses.replace(event, host=host)


def _resolve_local(event: Event, local: LocalRanks, hosts: int) -> Event:
    if event.rank is not None or "emitter_local_rank" not in event.facts:
        return event
    number, host = int(event.facts["emitter_local_rank"]), short_host(event.host)
    rank = local.resolve(event.where.source, number, host)
    if rank is None:
        return event
    known = local.knows(event.where.source, number, host) or hosts <= 1
    return dataclasses.replace(event, rank=rank, rank_from="local_rank" if known else "local_rank_assumed")


def _pid_map(events: Iterable[Event], local: LocalRanks) -> dict[int, int]:
    """pid -> rank, from identity lines (a rank's own pid, NCCL's init line for the whole-job
    communicator) and from the launcher's exit reports."""
    pids: dict[int, int] = {}
    own = [(e, pid) for e in events if Effect.IDENTITY in e.effects and (pid := own_pid(e)) is not None]
    world = max((_int(e.facts.get("nranks")) or 0 for e, _ in own), default=0)
    for e, pid in own:
        rank = _identity_rank(e, world, local)
        if rank is not None:
            pids.setdefault(pid, rank)
    for e in events:
        if e.pid is None or Effect.EXIT not in e.effects:
            continue
        ranks = subjects(e, local, {})
        if len(ranks) == 1:
            pids.setdefault(e.pid, ranks[0])
    for e in events:  # a rank's own line about a process of its own that died (a DataLoader worker)
        if e.pid is not None and e.rank is not None and e.role is Role.CAUSE and not e.effects:
            pids.setdefault(e.pid, e.rank)
    for e in events:  # a relayed line (Ray's `pid=N`) whose process group names its emitter (`[PG ID 0 ... Rank 1]`)
        if e.rank is None or e.rank_from != "content" or e.facts.get("pg_rank") != str(e.rank):
            continue
        if (emitter := _int(e.facts.get("emitter_pid"))) is not None:
            pids.setdefault(emitter, e.rank)
    return pids


def own_pid(event: Event) -> int | None:
    """The pid of the process an event is about: the one its line states, else the one of the process that
    printed it (Ray's `(RayTrainWorker pid=N) Setting up process group ... [rank=0, ...]` is rank 0's own line)."""
    return event.pid if event.pid is not None else _int(event.facts.get("emitter_pid"))


def _identity_rank(event: Event, world: int, local: LocalRanks) -> int | None:
    if "comm_rank" in event.facts:  # a communicator's rank is the global rank only for the whole job's
        return _int(event.facts["comm_rank"]) if _int(event.facts.get("nranks")) == world else None
    ranks = subjects(event, local, {})
    return ranks[0] if len(ranks) == 1 else None


def _bus_map(events: Iterable[Event], pids: dict[int, int]) -> dict[int, list[tuple[str | None, int]]]:
    """PCI bus id -> (host, rank), from identity lines that name a device: how an Xid finds its rank."""
    buses: dict[int, list[tuple[str | None, int]]] = {}
    for e in events:
        if Effect.IDENTITY not in e.effects or "busid" not in e.facts:
            continue
        rank = pids.get(e.pid) if e.pid is not None else e.rank
        bus = bus_of(e.facts["busid"]) if ":" in e.facts["busid"] else _hex(e.facts["busid"])
        if rank is None or bus is None:
            continue
        entry = (short_host(e.facts.get("host") or e.host), rank)
        if entry not in buses.setdefault(bus, []):
            buses[bus].append(entry)
    return buses


def _hex(text: str) -> int | None:
    try:
        return int(text, 16)
    except ValueError:
        return None


def _int(text: str | None) -> int | None:
    return read_int(text, max_len=11)


_RANGE = recache.compile(r"(\d{1,7})(?:-(\d{1,7}))?")
MAX_LISTED_RANKS = 100_000


def expand_ranks(text: str) -> list[int]:
    """`3,7,9-12` or `[0-3,8]` (srun's task lists, a stall inspector's rank list) -> the ranks."""
    out: list[int] = []
    for m in _RANGE.finditer(text):
        low, high = int(m[1]), int(m[2] or m[1])
        if high < low or len(out) + high - low >= MAX_LISTED_RANKS:
            break
        out.extend(range(low, high + 1))
    return out


def subjects(event: Event, local: LocalRanks, pids: Mapping[int, int]) -> list[int]:
    """The ranks a line is about: a rank (or list) it names, a local rank, a pid; else its emitter."""
    facts = event.facts
    if (rank := _int(facts.get("rank"))) is not None:
        return [rank]
    if "ranks" in facts:
        return expand_ranks(facts["ranks"])
    if (local_rank := _int(facts.get("local_rank"))) is not None:
        host = short_host(facts.get("host") or event.host)
        rank = local.resolve(event.where.source, local_rank, host)
        return [] if rank is None else [rank]
    if event.pid is not None and event.pid in pids:
        return [pids[event.pid]]
    return [event.rank] if event.rank is not None else []


def bus_of(pci: str) -> int | None:
    """`0000:3b:00` (Xid) and NCCL's busId `3b000` name the same device."""
    digits = pci.replace(":", "").replace(".", "")
    try:
        return int(digits + ("0" if "." not in pci else ""), 16)
    except ValueError:
        return None


def _join_pid(event: Event, pids: dict[int, int], buses: dict[int, list[tuple[str | None, int]]]) -> Event:
    """Kernel and launcher lines name a pid (or a GPU): that pid's (GPU's) rank is the rank they are about."""
    if event.rank is not None:
        return event
    if event.pid is not None and event.pid in pids:
        return dataclasses.replace(event, rank=pids[event.pid], rank_from="pid")
    if (emitter := _int(event.facts.get("emitter_pid"))) is not None and emitter in pids:
        return dataclasses.replace(event, rank=pids[emitter], rank_from="pid")
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


_IP = recache.compile(r"^[\d.]+$|:")


def short_host(host: str | None) -> str | None:
    """Hosts differ by source (torchrun's FQDN, NCCL's short name): compare short names. An address, or a
    torchx `role/replica` (its role may be a dotted function name), is no host name to shorten."""
    if not host or _IP.search(host) or "/" in host:
        return host
    return host.split(".", 1)[0]


def _state(tl: Timeline, rank: int) -> RankState:
    if rank not in tl.ranks:
        tl.ranks[rank] = RankState(rank)
    return tl.ranks[rank]


_SUBJECT_FACTS = ("rank", "ranks", "local_rank", "pid")
_KILL_SIGNALS = frozenset({9, 15})


def _of_the_sole_rank(events: list[Event], kernel: set[str], elsewhere: bool) -> list[Event]:
    """A job of one process (a stated world size of 1) has one rank, 0: each of its lines tied to no rank is
    rank 0's. Not a kernel's line (it may be about any process of the host), nor where a line names another
    rank or other nodes. A communicator of one (NCCL's `nranks 1`) is no job of one: a group of one rank is
    common in a bigger job."""
    sizes = {n for e in events if (n := _int(e.facts.get("world_size"))) is not None}
    if sizes != {1} or elsewhere or any(e.rank not in (None, 0) for e in events):
        return events
    return [
        dataclasses.replace(e, rank=0, rank_from="sole") if e.rank is None and e.where.source not in kernel else e
        for e in events
    ]


def world_size(events: Iterable[Event]) -> int | None:
    """The job's size, from the facts that state it (world_size, a whole-job communicator's nranks)."""
    sizes = [n for e in events for k in ("world_size", "nranks") if (n := _int(e.facts.get(k))) is not None]
    sizes = [n for n in sizes if 0 < n <= 1_000_000]
    return max(sizes) if sizes else None


def _sweeps(events: Sequence[Event]) -> dict[str, int]:
    """A teardown line that names no one (srun's `Job step aborted`, a scheduler's cancel) stops every
    survivor: the kill-signal exits its source reports after it are teardown, not deaths."""
    sweeps: dict[str, int] = {}
    for e in events:
        if Effect.TEARDOWN in e.effects and e.rank is None and not any(k in e.facts for k in _SUBJECT_FACTS):
            line = sweeps.get(e.where.source)
            sweeps[e.where.source] = e.where.line if line is None else min(line, e.where.line)
    return sweeps


def _swept(tl: Timeline, event: Event) -> bool:
    start = tl.sweeps.get(event.where.source)
    return start is not None and event.where.line > start and as_signal(exit_code(event.facts)) in _KILL_SIGNALS


def _apply(tl: Timeline, index: int, event: Event, local_to_rank: LocalRanks) -> None:
    if Effect.EXIT in event.effects:
        if not subjects(event, local_to_rank, tl.pids) and not _swept(tl, event):
            tl.loose_exits.append(index)
        for rank in subjects(event, local_to_rank, tl.pids):
            _record_exit(_state(tl, rank), index, event, tl.ctx)
            if _swept(tl, event):
                _tear_down(_state(tl, rank), index)
            if event.facts.get("root_cause") == "1":
                tl.root_cause_rank = rank
        return
    if Effect.TEARDOWN in event.effects and event.rank is None:
        for rank in subjects(event, local_to_rank, tl.pids):
            _tear_down(_state(tl, rank), index)
    if event.rank is None:
        return
    state = _state(tl, event.rank)
    state.events.append(index)
    state.host = state.host or short_host(event.host)
    if Effect.TEARDOWN in event.effects:
        _tear_down(state, index)
    if Effect.COMPLETE in event.effects:
        state.completed = index
    if event.role is Role.PROGRESS and (step := _int(event.facts.get("step"))) is not None:
        state.last_step = step if state.last_step is None else max(state.last_step, step)


def _stated_time(event: Event, ctx: ClockContext) -> Event:
    """An event whose line states when what it tells happened (a rule's `at` fact: SLURM's `CANCELLED AT
    2026-11-29T10:09:40`) takes that time: its line's own, or its neighbours', is when it was written."""
    if "at" not in event.facts or (stated := find_time(event.facts["at"], ctx)) is None:
        return event
    facts = {k: v for k, v in event.facts.items() if k not in NEIGHBOURS_TIME}
    return dataclasses.replace(event, time=stated, facts=facts)


def _tear_down(state: RankState, index: int) -> None:
    if index not in state.events:
        state.events.append(index)
    if state.torn_down is None:
        state.torn_down = index


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
        state.exit = Exit(code, index, noticed, oom="oom" in event.facts)
    elif noticed is not None and (state.exit.noticed is None or noticed.latest < state.exit.noticed.latest):
        state.exit.noticed = noticed


def exit_code(facts: Mapping[str, str]) -> int | None:
    """torchrun's convention: negative codes are signals."""
    if (code := facts.get("exitcode")) is not None:
        return _int(code)
    if "oom" in facts:
        return -9
    number = signal_number(facts.get("signal")) or signal_number(facts.get("what"))
    return -number if number is not None else None


def is_symptom(event: Event) -> bool:
    return event.role is Role.SYMPTOM and event.cause is not Cause.LAUNCHER_TEARDOWN
