"""The differential diagnosis: which rank died first (or hung), why, how sure, and who else fell."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from rankautopsy.model import (
    Cause,
    Confidence,
    Event,
    Evidence,
    FirstDeath,
    Phase,
    Role,
    RuledOut,
    TimeSpan,
)
from rankautopsy.timeline import TEARDOWN_RULES, RankState, Timeline, is_symptom

_SIGNAL_CAUSE = {
    -9: Cause.KILLED,
    -11: Cause.SEGFAULT,
    -6: Cause.ABORT,
    -7: Cause.BUS_ERROR,
    -15: Cause.KILLED,
    -8: Cause.SEGFAULT,
    -4: Cause.SEGFAULT,
}
_SHELL_CODES = {137: -9, 139: -11, 134: -6, 135: -7, 143: -15, 136: -8, 132: -4}
_SIGNAL_NAME = {-9: "SIGKILL", -11: "SIGSEGV", -6: "SIGABRT", -7: "SIGBUS", -15: "SIGTERM", -8: "SIGFPE", -4: "SIGILL"}
_RELIABLE = frozenset({"prefix", "path", "pid", "launcher", "local_rank", "content"})


@dataclass(slots=True)
class Candidate:
    """A rank that died of its own cause."""

    rank: int | None  # None: the whole job (a scheduler's time limit)
    cause: Cause
    rule: str
    time: TimeSpan | None
    evidence: list[int] = field(default_factory=list)  # event indices, the decisive one first
    detail: str = ""
    from_exit_only: bool = False
    phase: Phase = Phase.TRAINING
    inferred: bool = False  # the cause is inferred from evidence not tied to this rank


@dataclass(slots=True)
class Findings:
    first: FirstDeath | None
    confidence: Confidence
    candidates: list[Candidate]
    collateral: dict[int, str]  # rank -> what it did (timed out, lost its peer...)
    torn_down: dict[int, str]
    clean: set[int]
    reasoning: list[str]
    ruled_out: list[RuledOut]
    notes: list[str]
    culprit_events: list[int]


def signal_code(code: int | None) -> int | None:
    if code is None:
        return None
    return _SHELL_CODES.get(code, code)


def decide(tl: Timeline, skew: timedelta) -> Findings:
    collateral, torn_down, clean = _bystanders(tl)
    candidates = [c for r in tl.ranks.values() if r.rank not in collateral if (c := _candidate(tl, r)) is not None]
    candidates = [c for c in candidates if c.rank not in torn_down or not c.from_exit_only]
    for c in candidates:
        if c.rank is not None:
            torn_down.pop(c.rank, None)
    candidates += _job_candidates(tl)
    _unattributed_oom(tl, candidates)
    candidates.sort(key=_time_key)
    f = Findings(None, Confidence.HIGH, candidates, collateral, torn_down, clean, [], [], list(tl.notes), [])
    if candidates:
        _name_death(tl, f, skew)
    elif not _name_hang_by_sequence(tl, f):
        _name_hang(tl, f)
    if f.first is not None and f.first.rank is None:
        _stopped_by_scheduler(tl, f)
    elif f.first is not None:
        _stopped_with_the_job(tl, f)
    _rule_out(tl, f)
    return f


def _job_candidates(tl: Timeline) -> list[Candidate]:
    """Causes that end the whole job at once: the scheduler's time limit."""
    for i, e in enumerate(tl.events):
        if e.role is Role.CAUSE and e.rank is None and e.cause is Cause.TIME_LIMIT:
            return [Candidate(None, e.cause, e.rule, e.time, [i], e.text.strip())]
    return []


def _unattributed_oom(tl: Timeline, candidates: list[Candidate]) -> None:
    """A SIGKILLed rank and an OOM kill that names no rank we know (a scheduler's oom_kill event, a pid
    we cannot map): the OOM-killer is the likely sender."""
    ooms = [i for i, e in enumerate(tl.events) if e.rank is None and e.cause is Cause.HOST_OOM and e.role is Role.CAUSE]
    killed = [c for c in candidates if c.cause is Cause.KILLED and c.from_exit_only]
    if ooms and len(killed) == 1:
        c = killed[0]
        c.cause, c.from_exit_only = Cause.HOST_OOM, False
        c.evidence.append(ooms[0])
        c.detail += "; an OOM kill was logged for a process not tied to a rank"
        c.inferred = True


# Lines that say the launcher is ending the whole job: ranks with no end of their own went with it.
JOB_END_RULES = frozenset(
    {"mpi.noticed-signal", "mpi.nonzero-exit", "mpi.first-failed-process", "slurm.step-aborted",
     "slurm.cancelled", "torchrun.child-failed-error", "deepspeed.killing-subprocess"}
)  # fmt: skip


def _stopped_with_the_job(tl: Timeline, f: Findings) -> None:
    ended = next((e for e in tl.events if e.rule in JOB_END_RULES), None)
    if ended is None:
        return
    settled = f.collateral.keys() | f.torn_down.keys() | f.clean | {c.rank for c in f.candidates}
    for r in tl.ranks.values():
        if r.rank not in settled and r.exit is None:
            f.torn_down[r.rank] = (
                f"stopped when the launcher ended the job ({ended.rule}, {ended.where.source}:{ended.where.line})"
            )


def _stopped_by_scheduler(tl: Timeline, f: Findings) -> None:
    settled = f.collateral.keys() | f.clean | {c.rank for c in f.candidates}
    for rank in tl.ranks:
        if rank not in settled:
            f.torn_down.setdefault(rank, "stopped by the scheduler when the job ended")


def _time_key(c: Candidate) -> tuple[int, datetime, datetime]:
    if c.time is None:
        return (1, datetime.max, datetime.max)
    return (0, c.time.latest.replace(tzinfo=None), c.time.earliest.replace(tzinfo=None))


def _bystanders(tl: Timeline) -> tuple[dict[int, str], dict[int, str], set[int]]:
    collateral: dict[int, str] = {}
    torn_down: dict[int, str] = {}
    clean: set[int] = set()
    for r in tl.ranks.values():
        first_symptom = next((i for i in r.events if is_symptom(tl.events[i]) or _recorded(tl, i, Role.SYMPTOM)), None)
        first_cause = next((i for i in r.events if tl.events[i].role is Role.CAUSE), None)
        if first_symptom is not None and (first_cause is None or _precedes(tl, first_symptom, first_cause)):
            collateral[r.rank] = _symptom_summary(tl.events[first_symptom])
        elif r.torn_down is not None:
            torn_down[r.rank] = _teardown_summary(tl.events[r.torn_down])
        elif (r.exit is not None and r.exit.code == 0) or (
            r.exit is None and r.completed is not None and first_cause is None
        ):
            clean.add(r.rank)
    _infer_teardown(tl, collateral, torn_down, clean)
    return collateral, torn_down, clean


def _infer_teardown(tl: Timeline, collateral: dict[int, str], torn_down: dict[int, str], clean: set[int]) -> None:
    """The launcher stopped N pids it never tied to a rank, and N ranks just stop with no end of their
    own: those ranks are the ones it stopped."""
    stopped = [e for e in tl.events if e.rule in TEARDOWN_RULES and e.rank is None]
    settled = collateral.keys() | torn_down.keys() | clean
    silent = [
        r.rank
        for r in tl.ranks.values()
        if r.rank not in settled and r.exit is None and not any(tl.events[i].role is Role.CAUSE for i in r.events)
    ]
    if 0 < len(silent) <= len(stopped):
        pids = ", ".join(str(e.pid) for e in stopped)
        for rank in silent:
            torn_down[rank] = f"torn down by the launcher (it stopped pids {pids}, not tied to ranks in the logs)"


_SYMPTOM_WORDS = {
    Cause.COLLECTIVE_TIMEOUT: "timed out waiting in a collective",
    Cause.PEER_LOST: "lost its connection to a peer",
    Cause.WATCHDOG_ABORT: "aborted by its collective watchdog",
}


def _teardown_summary(e: Event) -> str:
    signal = e.facts.get("signal", "a signal")
    when = f" at {e.time.earliest:%H:%M:%S}" if e.time is not None else ""
    return f"torn down by the launcher ({signal}{when}, {e.where.source}:{e.where.line})"


def _symptom_summary(e: Event) -> str:
    words = _SYMPTOM_WORDS.get(e.cause, _label(e.cause))
    if "exc_cause" in e.facts and e.facts["exc_cause"] in _SYMPTOM_WORDS:
        words = _SYMPTOM_WORDS[Cause(e.facts["exc_cause"])]
    when = f" at {e.time.earliest:%H:%M:%S}" if e.time is not None else ""
    said = _detail(e) if "exc_type" in e.facts else e.text.strip()
    return f"{words}{when}: {said[:140]}{'…' if len(said) > 140 else ''}"


def _recorded(tl: Timeline, index: int, role: Role) -> bool:
    """A launcher's report of the exception the rank recorded (torchrun's table), of this role."""
    return tl.events[index].facts.get("exc_role") == role.value


def _precedes(tl: Timeline, a: int, b: int) -> bool:
    ea, eb = tl.events[a], tl.events[b]
    if ea.where.source == eb.where.source:
        return ea.where.line < eb.where.line
    if ea.time is not None and eb.time is not None:
        return ea.time.earliest <= eb.time.earliest
    return a < b


def _candidate(tl: Timeline, r: RankState) -> Candidate | None:
    causes = [i for i in r.events if tl.events[i].role is Role.CAUSE]
    code = signal_code(r.exit.code) if r.exit else None
    if causes:
        best = _decisive(tl, causes)
        e = tl.events[best]
        return Candidate(
            r.rank,
            e.cause,
            e.rule,
            _death_time(tl, r, e.time, e.facts),
            [best, *_support(r)],
            _detail(e),
            phase=_phase(tl, r, best),
        )
    recorded = [i for i in r.events if _recorded(tl, i, Role.CAUSE)]
    if recorded:
        e = tl.events[recorded[0]]
        cause = Cause(e.facts["exc_cause"])
        return Candidate(r.rank, cause, e.rule, _death_time(tl, r, None, {}), recorded[:1], _detail(e))
    if code is None or code == 0 or r.exit is None:
        return None
    cause = _SIGNAL_CAUSE.get(code, Cause.SILENT_EXIT if code > 0 else Cause.KILLED)
    detail = f"exit code {code}" + (f" ({_SIGNAL_NAME[code]})" if code in _SIGNAL_NAME else ", no message")
    if r.exit.oom:
        cause, detail = Cause.HOST_OOM, "the scheduler reports it ran out of memory (" + detail + ")"
    time = _death_time(tl, r, None, {})
    return Candidate(
        r.rank,
        cause,
        tl.events[r.exit.event].rule,
        time,
        [r.exit.event],
        detail,
        from_exit_only=True,
        phase=_phase(tl, r, r.exit.event),
    )


def _decisive(tl: Timeline, causes: list[int]) -> int:
    """The most telling cause event of a rank: a kernel OOM beats the SIGKILL it caused, then the earliest."""
    kernel = [i for i in causes if tl.events[i].cause is Cause.HOST_OOM]
    return kernel[0] if kernel else causes[0]


def _support(r: RankState) -> list[int]:
    return [r.exit.event] if r.exit is not None else []


def _death_time(tl: Timeline, r: RankState, own: TimeSpan | None, facts: Mapping[str, str]) -> TimeSpan | None:
    """When the rank died: its event's time, closed by when the launcher noticed (it died before),
    and narrowed by the time its recorded exception was written."""
    noticed = r.exit.noticed if r.exit else None
    open_ended = facts.get("time_open") == "1"
    span = own
    if own is None or open_ended:
        start = own.earliest if own is not None else r.last_seen
        if start is None:
            span = noticed
        else:
            end = noticed.latest if noticed is not None and noticed.latest >= start else (tl.end or start)
            span = TimeSpan(start, max(start, end))
    return _narrow(span, r.died_at)


def _narrow(span: TimeSpan | None, bound: TimeSpan | None) -> TimeSpan | None:
    if span is None or bound is None:
        return span or bound
    earliest, latest = max(span.earliest, bound.earliest), min(span.latest, bound.latest)
    return TimeSpan(earliest, latest) if earliest <= latest else bound


def _phase(tl: Timeline, r: RankState, death: int) -> Phase:
    if r.completed is not None and _precedes(tl, r.completed, death):
        return Phase.SHUTDOWN
    return Phase.TRAINING


def _detail(e: Event) -> str:
    if "exc_type" in e.facts:
        msg = e.facts.get("exc_msg", "")
        return f"{e.facts['exc_type']}: {msg}" if msg else e.facts["exc_type"]
    if "where" in e.facts:
        return f"{e.text.strip()} in {e.facts['where']}"
    return e.text.strip()


def _label(cause: Cause) -> str:
    return cause.value.replace("_", " ")


def _name_death(tl: Timeline, f: Findings, skew: timedelta) -> None:
    first = f.candidates[0]
    others = f.candidates[1:]
    e = tl.events[first.evidence[0]]
    unordered = [c for c in others if not _ordered(tl, first, c, skew)]
    f.first = _first_death(tl, first)
    f.culprit_events = list(first.evidence)
    f.reasoning.append(_why_first(tl, first, e))
    if unordered:
        ranks = ", ".join(str(c.rank) for c in unordered)
        f.confidence = Confidence.MEDIUM
        f.notes.append(
            f"the clocks cannot order rank {first.rank}'s death against rank(s) {ranks} "
            f"(within {skew.total_seconds():g} s skew or no time); rank {first.rank} is named "
            "because its death is bounded earliest"
        )
    elif (first.from_exit_only and others) or first.inferred:
        f.confidence = Confidence.MEDIUM
    if first.rank is not None and e.rank_from not in _RELIABLE and not first.from_exit_only:
        f.confidence = Confidence.LOW
    if f.collateral:
        f.reasoning.append(
            f"{len(f.collateral)} other rank(s) only reported symptoms (timeouts, lost peers): "
            "they waited for the dead rank"
        )
    if first.cause is Cause.KILLED and first.rank is not None:
        host = tl.ranks[first.rank].host or "its host"
        when = f" around {first.time.earliest:%Y-%m-%d %H:%M:%S} UTC" if first.time else ""
        f.notes.append(
            f"rank {first.rank} was killed by a signal from an unknown sender; the kernel OOM-killer is the usual "
            f"one: run `dmesg -T | grep -iE 'out of memory|killed process|oom'` on {host}{when}, "
            "or pass that host's kernel log with --dmesg"
        )
    if first.phase is Phase.SHUTDOWN:
        f.reasoning.append(f"rank {first.rank} had completed training before it died: it died on exit")


def _ordered(tl: Timeline, a: Candidate, b: Candidate, skew: timedelta) -> bool:
    """Whether a certainly died before b; clock skew only matters between two hosts' clocks."""
    if a.time is None or b.time is None:
        return False
    host_a, host_b = _host(tl, a.rank), _host(tl, b.rank)
    same_clock = host_a is not None and host_a == host_b
    return a.time.before(b.time, timedelta(0) if same_clock else skew)


def _host(tl: Timeline, rank: int | None) -> str | None:
    return tl.ranks[rank].host if rank is not None and rank in tl.ranks else None


def _why_first(tl: Timeline, c: Candidate, e: Event) -> str:
    basis = f"its exit ({c.detail})" if c.from_exit_only else f"{e.rule} at {e.where.source}:{e.where.line}"
    if c.rank is None:
        return f"the job as a whole was ended first ({_label(c.cause)}), per {basis}, before any rank died"
    if len(tl.ranks) and not [x for x in tl.ranks if x != c.rank]:
        return f"rank {c.rank} is the only rank seen; it died of {_label(c.cause)} per {basis}"
    return f"rank {c.rank} is the earliest rank to die of its own cause ({_label(c.cause)}), per {basis}"


def _first_death(tl: Timeline, c: Candidate) -> FirstDeath:
    r = tl.ranks.get(c.rank) if c.rank is not None else None
    evidence = _evidence(tl, c.evidence)
    return FirstDeath(
        rank=c.rank,
        cause=c.cause,
        rule=c.rule,
        host=r.host if r else tl.events[c.evidence[0]].host,
        pid=r.pid if r else None,
        time=c.time,
        phase=c.phase,
        detail=c.detail,
        evidence=evidence,
    )


def _evidence(tl: Timeline, indices: Sequence[int]) -> tuple[Evidence, ...]:
    """Each event's lines; for an exception, its `Type: message` line first: that is the decisive one."""
    out: list[Evidence] = []
    for i in indices:
        e = tl.events[i]
        head = Evidence(e.where, e.text)
        out.extend([*e.lines[:6], head] if "exc_type" in e.facts and e.lines else [head, *e.lines[:6]])
    return tuple(out)


def _name_hang_by_sequence(tl: Timeline, f: Findings) -> bool:
    """NCCL's watchdog says how far each rank got: a rank whose last enqueued collective is behind the
    others' never issued the collective they are all waiting in."""
    status: dict[tuple[str, int], int] = {}
    for r in tl.ranks.values():
        for i in r.events:
            facts = tl.events[i].facts
            if "last_enqueued" in facts:
                key = (facts.get("pg", "0"), r.rank)
                status[key] = max(status.get(key, -1), int(facts["last_enqueued"]))
    groups: dict[str, dict[int, int]] = {}
    for (pg, rank), seq in status.items():
        groups.setdefault(pg, {})[rank] = seq
    for pg, seqs in sorted(groups.items()):
        low, high = min(seqs.values()), max(seqs.values())
        behind = sorted(rank for rank, seq in seqs.items() if seq == low)
        if len(seqs) >= 2 and low < high and len(behind) == 1:
            _name_sequence_culprit(tl, f, behind[0], low, high, pg, seqs)
            return True
    return False


def _name_sequence_culprit(
    tl: Timeline, f: Findings, rank: int, low: int, high: int, pg: str, seqs: dict[int, int]
) -> None:
    r = tl.ranks[rank]
    mine = [i for i in r.events if "last_enqueued" in tl.events[i].facts][:1]
    theirs = [
        i for other in seqs if other != rank for i in tl.ranks[other].events if "last_enqueued" in tl.events[i].facts
    ][:1]
    f.collateral.pop(rank, None)
    f.first = FirstDeath(
        rank=rank,
        cause=Cause.HANG,
        rule="rankautopsy.behind-in-sequence",
        host=r.host,
        pid=r.pid,
        time=TimeSpan(r.last_seen, r.last_seen) if r.last_seen else None,
        detail=f"never issued collective {low + 1} of process group {pg}: its last enqueued work is {low}, "
        f"the others reached {high}",
        evidence=_evidence(tl, mine + theirs),
    )
    f.culprit_events = mine + theirs
    f.confidence = Confidence.HIGH
    others = sorted(x for x in seqs if x != rank)
    f.reasoning.append(
        f"NCCL's watchdog status: rank {rank} last enqueued work {low} while rank(s) {ranges(others)} enqueued up "
        f"to {high}: rank {rank} never entered the collective the others timed out in"
    )


def _name_hang(tl: Timeline, f: Findings) -> None:
    reporters = set(f.collateral)
    if not reporters:
        f.confidence = Confidence.HIGH
        if tl.ranks:
            f.reasoning.append("no rank left a cause, a symptom or an abnormal exit")
        return
    suspects = [r for r in tl.ranks.values() if r.rank not in reporters and r.rank not in f.clean]
    if not suspects:
        f.confidence = Confidence.LOW
        f.notes.append(
            "every rank seen reported a symptom (timeout or lost peer) and none left a cause: "
            "the culprit may be a rank whose log is missing, or another host"
        )
        return
    culprit = min(suspects, key=_progress_key)
    peer_lost = sum(1 for r in reporters if "peer lost" in f.collateral[r])
    cause = Cause.SILENT_EXIT if peer_lost > len(reporters) / 2 else Cause.HANG
    evidence = [i for i in culprit.events if tl.events[i].role is Role.PROGRESS][-1:]
    waits = [i for r in reporters for i in tl.ranks[r].events if is_symptom(tl.events[i])]
    evidence += sorted(waits, key=lambda i: (tl.events[i].cause is not Cause.COLLECTIVE_TIMEOUT, i))[:1]
    if culprit.torn_down is not None:
        evidence.append(culprit.torn_down)
    time = TimeSpan(culprit.last_seen, culprit.last_seen) if culprit.last_seen else None
    f.first = FirstDeath(
        rank=culprit.rank,
        cause=cause,
        rule="rankautopsy.missing-from-collective",
        host=culprit.host,
        pid=culprit.pid,
        time=time,
        detail=_hang_detail(culprit, cause),
        evidence=_evidence(tl, evidence),
    )
    f.culprit_events = evidence
    alive = culprit.torn_down is not None and cause is Cause.HANG
    if len(suspects) == 1 and len(reporters) >= 2 and alive:
        f.confidence = Confidence.HIGH
    else:
        f.confidence = Confidence.MEDIUM if len(suspects) == 1 else Confidence.LOW
    f.reasoning.append(
        f"rank {culprit.rank} is the only rank that did not report a timeout or lost peer"
        if len(suspects) == 1
        else f"rank {culprit.rank} made the least progress of the {len(suspects)} ranks that reported nothing"
    )
    f.reasoning.append(
        f"{len(reporters)} rank(s) ({ranges(sorted(reporters))}) waited in a collective for it and reported it"
    )
    if alive:
        f.reasoning.append(f"rank {culprit.rank} was still alive when the launcher stopped it: it hung, it did not die")


def _hang_detail(r: RankState, cause: Cause) -> str:
    step = f" after step {r.last_step}" if r.last_step is not None else ""
    seen = f", last seen {r.last_seen.strftime('%H:%M:%S')}" if r.last_seen else ""
    what = "stopped making progress" if cause is Cause.HANG else "vanished without a message"
    return f"{what}{step}{seen}; the other ranks waited for it"


def _progress_key(r: RankState) -> tuple[int, datetime]:
    step = r.last_step if r.last_step is not None else -1
    seen = r.last_seen.replace(tzinfo=None) if r.last_seen else datetime.min
    return (step, seen)


def _rule_out(tl: Timeline, f: Findings) -> None:
    first = f.first.rank if f.first else None
    for c in f.candidates[1:]:
        f.ruled_out.append(RuledOut(c.rank, f"it died of {_label(c.cause)} too, but later ({_when(c.time)})"))
    for rank, what in sorted(f.collateral.items()):
        f.ruled_out.append(RuledOut(rank, f"only a symptom: {what}"))
    for rank, what in sorted(f.torn_down.items()):
        f.ruled_out.append(RuledOut(rank, what))
    root = tl.root_cause_rank
    if root is not None and first is not None and root != first:
        f.ruled_out.append(
            RuledOut(
                root,
                "torchrun's 'Root Cause (first observed failure)' names it, but that records when the agent "
                f"noticed a failure, not when a rank died; rank {first} died first",
            )
        )


def _when(span: TimeSpan | None) -> str:
    return "time unknown" if span is None else span.earliest.strftime("%H:%M:%S.%f")[:-3]


def ranges(ranks: Sequence[int]) -> str:
    """`0-2, 4, 6-7` for [0, 1, 2, 4, 6, 7]."""
    spans: list[tuple[int, int]] = []
    for r in ranks:
        if spans and r == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], r)
        else:
            spans.append((r, r))
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
