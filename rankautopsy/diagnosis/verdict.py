"""The differential diagnosis: which rank died first (or hung), why, how sure, and who else fell.

The outcome and the confidence follow the written rules of README's "How sure it is": every cap on
the confidence is recorded with its reason. Reads the timeline's effects and facts, never rule ids.
May import the model, the timeline and signals; never a renderer or the CLI."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import field, replace
from datetime import datetime, timedelta

from rankautopsy import recache
from rankautopsy.diagnosis.timeline import (
    RankState,
    Timeline,
    exit_code,
    expand_ranks,
    is_symptom,
    own_pid,
    short_host,
)
from rankautopsy.model import (
    FIRST_STATUS,
    HOST_DEVICE,
    LAUNCH_FAILED,
    OPENS_CUT,
    STOPPED_FROM_OUTSIDE,
    Cause,
    Confidence,
    Effect,
    Event,
    Evidence,
    FirstDeath,
    Location,
    Outcome,
    Phase,
    Role,
    RuledOut,
    TimeOpen,
    TimeSpan,
    Unattributed,
)
from rankautopsy.records import record
from rankautopsy.signals import OUTSIDE_STOPS, as_signal, signal_cause, signal_name, signal_number, windows_crash

# How a rank was tied to its line, and whether that channel is reliable enough for `high`.
_RELIABLE = frozenset({"prefix", "excepthook", "path", "pid", "launcher", "local_rank", "gpu"})
_CHANNEL_WORDS = {
    "content": "the rank was read from the message text (a process-group rank, not always the global one)",
    "local_rank_assumed": "a local rank was taken as the global rank (no table maps it, several hosts)",
    "sole": "the job's size, 1, was read from a line (a launch command, a world size): its lines are rank 0's",
}


@record(frozen=False)
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
    # when it died as the report says it: only what bounds it for certain (`_death_bounds`); `time` orders
    reported: tuple[TimeSpan | None, TimeOpen | None] = (None, None)


@record(frozen=False)
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
    outcome: Outcome = Outcome.NO_FAILURE
    caps: list[str] = field(default_factory=list)
    unattributed: list[Unattributed] = field(default_factory=list)
    not_first: list[int] = field(default_factory=list)
    fetch_next: list[str] = field(default_factory=list)
    launch_failed: Event | None = None  # the launcher's line saying it could not start the job

    def cap(self, level: Confidence, why: str) -> None:
        """Lower the confidence to at most `level`, saying why."""
        if _LEVELS[level] < _LEVELS[self.confidence]:
            self.confidence = level
        if why not in self.caps:
            self.caps.append(why)


_LEVELS = {Confidence.LOW: 0, Confidence.MEDIUM: 1, Confidence.HIGH: 2}


def signal_code(code: int | None) -> int | None:
    """An exit status in torchrun's convention: a shell's 137 is -9."""
    signal = as_signal(code)
    return -signal if signal is not None else code


def decide(tl: Timeline, skew: timedelta) -> Findings:
    collateral, torn_down, clean = _bystanders(tl)
    teardown = _first_with(tl, Effect.TEARDOWN)  # once: it bounds every candidate's death (100,000 events)
    began = _training_began(tl)  # once too: every candidate's phase is held against it
    candidates = [
        c
        for r in tl.ranks.values()
        if r.rank not in collateral
        if (c := _candidate(tl, r, teardown, began)) is not None
    ]
    candidates = [c for c in candidates if c.rank not in torn_down or not (c.from_exit_only or c.cause is Cause.KILLED)]
    for c in candidates:
        if c.rank is not None:
            torn_down.pop(c.rank, None)
    candidates += _job_candidates(tl)
    _join_loose_cause(tl, candidates)
    candidates = _without_least_telling(tl, candidates)
    candidates.sort(key=lambda c: _time_key(tl, c))
    f = Findings(None, Confidence.HIGH, candidates, collateral, torn_down, clean, [], [], list(tl.notes), [])
    f.unattributed = _unattributed(tl, candidates)
    if candidates:
        _name_death(tl, f, skew)
    elif not _name_hang_by_sequence(tl, f):
        _name_hang(tl, f)
    undetermined = f.outcome is Outcome.UNDETERMINED  # an exit-only tie: nothing more to settle
    if f.first is not None and f.first.rank is None and not undetermined:
        _stopped_by_scheduler(tl, f)
    elif f.first is not None and not undetermined:
        _stopped_with_the_job(tl, f)
    if f.first is None and not undetermined:
        _settle_without_culprit(tl, f)
    elif f.first is not None and not undetermined:
        _cap_for_the_unseen(tl, f)
    _rule_out(tl, f, skew)
    first = f.first.rank if f.first else None
    if f.outcome is Outcome.HANG and first is None:  # any rank that did not report waiting may be the one stuck
        f.not_first = sorted(f.collateral)
    else:
        f.not_first = sorted((f.collateral.keys() | f.torn_down.keys() | f.clean) - {first})
    return f


def failure_seen(tl: Timeline) -> bool:
    """Any sign that the job did not end well: a cause or symptom line, an abnormal exit, a job's end, a
    launcher's word that a process had died.
    An exit report tied to no rank counts unless it gives status 0: the exit rules match reports of a
    process that ended (a Ray worker "died ... Worker exit type: SYSTEM_ERROR") whether or not they say how."""
    for e in tl.events:
        if e.role in (Role.CAUSE, Role.SYMPTOM) or e.effects & {Effect.JOB_END, Effect.TEARDOWN, Effect.AFTER_DEATH}:
            return True
    if _cut_off(tl):
        return True
    if any(exit_code(tl.events[i].facts) != 0 for i in tl.loose_exits):
        return True
    return any(r.exit is not None and r.exit.code not in (0, None) for r in tl.ranks.values())


def _local_channels_done(tl: Timeline) -> int:
    """How many processes, known only by file and local rank (the nodes of a job whose local ranks map to
    no global one), logged lines; 0 unless every one of them logged its completion."""
    seen: set[tuple[str, str]] = set()
    done: set[tuple[str, str]] = set()
    for e in tl.events:
        if e.rank is None and (local := e.facts.get("emitter_local_rank")) is not None:
            seen.add((e.where.source, local))
            if Effect.COMPLETE in e.effects:
                done.add((e.where.source, local))
    return len(seen) if seen and done == seen else 0


def _settle_without_culprit(tl: Timeline, f: Findings) -> None:
    """No rank named: clean, no failure seen, a hang without a culprit, or undetermined with what is known
    and what to fetch."""
    seen = failure_seen(tl)
    if not seen:
        ended = [r for r in tl.ranks.values() if r.rank in f.clean]
        if tl.ranks and len(ended) == len(tl.ranks) and not _missing_ranks(tl):
            f.outcome, f.confidence = Outcome.CLEAN, Confidence.HIGH
            f.reasoning.append(f"every rank seen ({len(ended)}) finished: an exit 0 or a completion line, no failure")
            return
        if not tl.ranks and (done := _local_channels_done(tl)):
            f.outcome = Outcome.CLEAN
            f.cap(Confidence.MEDIUM, "the processes are known by their local rank on each node only")
            f.reasoning.append(f"every process seen ({done}, by file and local rank) logged its completion, no failure")
            return
    if _hung_without_culprit(tl, f):
        return
    if not seen:
        f.outcome = Outcome.NO_FAILURE
        if f.clean or any(Effect.COMPLETE in e.effects for e in tl.events):
            f.cap(Confidence.MEDIUM, "no failure line, but not every rank logged its end")
        else:
            f.cap(Confidence.LOW, "no failure line, and no rank logged an end: the lines may stop before a failure")
        f.reasoning.append("no failure line was found, and not every rank logged an end (still running, or cut off)")
        f.fetch_next.append(
            "if the job is hung, a stack dump of each rank (`py-spy dump --pid PID`) or its NCCL flight record"
        )
        return
    f.outcome = Outcome.UNDETERMINED
    if (stop := _ended_from_outside(tl, f)) is not None:
        _say_ended_from_outside(f, stop)
        return
    if _every_rank_waited(tl, f):
        return
    f.cap(Confidence.MEDIUM, "the job failed but no first death could be named from these logs")
    if not f.unattributed and (report := _unranked_crash_report(tl)) is not None:
        e = tl.events[report[1]]  # a launcher's return code of a rank it does not name (DeepSpeed's)
        f.unattributed.append(Unattributed(signal_cause(report[0]), e.where, e.text))
    if not f.unattributed and (stop := _launcher_stopped(tl)) is not None:
        _say_killed_from_outside(f, stop)
        return
    causes = {u.cause for u in f.unattributed}
    if len(causes) == 1:
        u = f.unattributed[0]
        f.first = _unranked_seen(tl, u)
        f.cap(Confidence.LOW, "the cause was seen, but on no line tied to a rank")
        at = u.told.where if u.told else u.where
        said = f"{_label(u.cause)} ({u.cause.value}) is seen at {at.source}:{at.line}"
        f.reasoning.append(f"{said}, but no rank is tied to it")
    elif causes:
        f.cap(Confidence.LOW, "several causes were seen, none tied to a rank")
        f.reasoning.append("causes seen without a rank: " + ", ".join(sorted(c.value for c in causes)))
    elif cut := _cut_off(tl):
        _cut_report(cut[0], f)
        _raised_of_unknown_type(tl, cut, f)
    elif (failed := _launch_failed(tl)) is not None:
        f.launch_failed = failed
        f.reasoning.append(
            f"the launcher could not start the job, as it says at {failed.where.source}:{failed.where.line}: no rank"
            " ran there, so none died first"
        )
    else:
        f.reasoning.append(
            "the job failed (symptoms, abnormal exits or a launcher ending it), but no rank left a cause"
        )
    if causes and (head := next((e for e in _cut_off(tl) if _head_cut(e)), None)):
        f.fetch_next.append(_head_to_fetch(head))
    _left_out_of_the_teardown(tl, f)
    _what_to_fetch(tl, f)
    _unmapped_on_other_nodes(tl, f)


def _every_rank_waited(tl: Timeline, f: Findings) -> bool:
    """Every rank of the job's stated size timed out waiting in a collective, and nothing died: each was
    alive inside it, so the job hung with no rank to blame (a collective the ranks called in different
    orders, a stuck network). Not where a rank of the job is missing (it may be the one that died), where
    one only lost its peer (a peer had gone), nor where a cause, a cut traceback or a failed exit is seen."""
    world = tl.world
    if world is None or world < 2 or set(tl.ranks) != set(range(world)) or set(f.collateral) != set(tl.ranks):
        return False
    if f.unattributed or _cut_off(tl) or not _only_stopped(tl, of_ranks=False):
        return False
    if any(_first_symptom_cause(tl, r) not in _WATCHDOG for r in tl.ranks):
        return False
    waits = [i for r in sorted(tl.ranks) for i in tl.ranks[r].events if is_symptom(tl.events[i])][:2]
    f.notes = [n for n in f.notes if n != _NO_SUSPECT]  # every rank of the job is seen here
    detail = f"all {world} ranks of the job timed out waiting in a collective; none died"
    _hang_of_no_rank(tl, f, "all_waited", detail, waits)
    f.cap(Confidence.MEDIUM, "no culprit is named: every rank was waiting, none is shown to have stopped first")
    f.reasoning.append(
        f"all {world} ranks of the job ({ranges(sorted(tl.ranks))}) timed out waiting in a collective and none "
        "died or left a cause: the job hung with all its ranks alive"
    )
    f.fetch_next.append(
        "each rank's NCCL flight record (TORCH_NCCL_TRACE_BUFFER_SIZE, then TORCH_NCCL_DUMP_ON_TIMEOUT=1): which "
        "collective each rank last called, to find the rank that called a different one or none"
    )
    return True


def _left_out_of_the_teardown(tl: Timeline, f: Findings) -> None:
    """A process of the job had died (an `after_death` line: SLURM cancelling a step for a task's failure) and the
    launcher stopped every rank but one (seen, or implied by the ranks above it): that one is where to look. A
    hint, not a verdict: the lines do not say why it was left out."""
    if not any(Effect.AFTER_DEATH in e.effects for e in tl.events) or not f.torn_down:
        return
    settled = f.torn_down.keys() | f.clean | f.collateral.keys()
    left = sorted((tl.ranks.keys() | set(_missing_ranks(tl, True))) - settled)
    if len(left) == 1:
        f.reasoning.append(
            f"a process of the job had died, and the launcher stopped every rank but rank {left[0]}: the likeliest"
            " one to have died first, though no line of it says so"
        )
        f.fetch_next.append(f"the output of rank {left[0]} (its own log, or its exit in the scheduler's record)")


def _cut_report(e: Event, f: Findings) -> None:
    """What an error report cut off says, and what to fetch: the head that named the error, above an excerpt
    that opens inside the report (`cut_off: head`), else the traceback's `Type: message` end."""
    who, at = f"rank {e.rank}" if e.rank is not None else "a process", f"{e.where.source}:{e.where.line}"
    if _head_cut(e):
        f.reasoning.append(
            f"the lines open at {at} inside an error report of {who} whose head, which names the error, is "
            "above the cut: something failed, but the lines do not say what"
        )
        f.fetch_next.append(_head_to_fetch(e))
        return
    if e.facts.get("cut_off") == "relay":
        f.reasoning.append(
            f"{who} relayed at {at} the failure of a process it started, and the relayed report is cut off: a "
            "worker raised, but the lines do not say which or what"
        )
        f.fetch_next.append(f"the output after {at}: the report of the worker it relays")
        return
    f.reasoning.append(
        f"{who} printed a traceback at {at} that is cut off before its `Type: message` line: something raised, "
        "but the lines do not say what"
    )
    whose = f"{who}'s output" if e.rank is not None else "the output"
    f.fetch_next.append(f"the rest of {whose} after {at} (the traceback's end)")


def _raised_of_unknown_type(tl: Timeline, cut: list[Event], f: Findings) -> None:
    """Where all that failed is Python tracebacks cut before their `Type: message` line, a Python exception is
    the cause seen, of a type (and an effect on its process: a caught one, logged, looks the same) the lines
    do not give. Not where an excerpt opens inside a report (its head named the error) or a relay is cut."""
    if any(_head_cut(e) or e.facts.get("cut_off") == "relay" for e in cut):
        return
    own = [e for e in cut if not _process_went_on(e) and not _launchers(tl, e) and not _after_a_wait(tl, e)]
    if not own:
        return
    e = own[0]
    seen = _unranked_death(
        Unattributed(Cause.PYTHON_EXCEPTION, e.where, e.text), e.read_by, _evidence(tl, [tl.events.index(e)])
    )
    f.first = replace(seen, host=e.host, pid=own_pid(e))  # its rule's checklist: the event itself is a context line
    f.cap(Confidence.LOW, "the exception's type is cut off, and whether it ended its process is not in the lines")


def _process_went_on(e: Event) -> bool:
    """A traceback under `Exception ignored in:` or `Exception in thread NAME:`: its process went on."""
    return "ignored" in e.facts or "in_thread" in e.facts


def _after_a_wait(tl: Timeline, cut: Event) -> bool:
    """Whether a symptom of waiting (a collective timeout, a lost peer) came before a cut traceback in its
    source, or is in another: the traceback is as likely that wait's exception (a DistBackendError, the same
    lost peer) as a failure of its own."""
    return any(
        e.role is Role.SYMPTOM and Effect.TEARDOWN not in e.effects
        and (e.where.source != cut.where.source or e.where.line < cut.where.line)
        for e in tl.events
    )  # fmt: skip


def _launchers(tl: Timeline, cut: Event) -> bool:
    """Whether a cut traceback runs through a launcher's own code (`launcher_raised`): a frame of it below the
    header (or its header, IPython's naming spawn's relay), before the next traceback of that source and rank."""
    if "launcher_raised" in cut.facts:
        return True
    later = sorted(
        (e.where.line, "launcher_raised" in e.facts)
        for e in tl.events
        if e.where.source == cut.where.source and e.rank == cut.rank and e.where.line > cut.where.line
        and ("launcher_raised" in e.facts or "exc_type" in e.facts or _is_cut_off(e))
    )  # fmt: skip
    return bool(later) and later[0][1]


def _head_to_fetch(e: Event) -> str:
    return f"the lines before {e.where.source}:{e.where.line} (the head of that report)"


def _ended_from_outside(tl: Timeline, f: Findings) -> Event | None:
    """The line by which the launcher or scheduler ended a job in which nothing had failed: no cause or
    symptom line, every rank seen torn down or finished, every exit a stop signal (scancel, preemption, an
    operator's Ctrl-C). Of several, the one that says when it ended the job (`at`), else the first."""
    if f.unattributed or f.collateral or _cut_off(tl) or not tl.ranks:
        return None
    if any(e.role in (Role.CAUSE, Role.SYMPTOM) or Effect.AFTER_DEATH in e.effects for e in tl.events):
        return None  # a line that says a process of the job had died: not stopped before any death
    if not tl.ranks.keys() <= f.torn_down.keys() | f.clean:
        return None
    if not _only_stopped(tl):
        return None
    ends = [e for e in tl.events if Effect.JOB_END in e.effects and e.rank is None]
    return next((e for e in ends if "at" in e.facts), ends[0] if ends else None)


def _only_stopped(tl: Timeline, of_ranks: bool = True) -> bool:
    """Whether every exit reported, of a rank or tied to none (only those with `of_ranks` false), was a success or
    a stop signal from outside."""
    codes = [exit_code(tl.events[i].facts) for i in tl.loose_exits]
    codes += [r.exit.code for r in tl.ranks.values() if r.exit is not None and of_ranks]
    return all(code in (0, None) or as_signal(code) in OUTSIDE_STOPS for code in codes)


_WHO_ENDED = (
    "who ended the job and why: the scheduler's record (`sacct -j JOBID -o JobID,State,ExitCode,Reason`,"
    " `scontrol show job JOBID`, `kubectl describe pod`), or whoever sent the stop"
)


def _say_ended_from_outside(f: Findings, ended: Event) -> None:
    f.cap(Confidence.MEDIUM, "the job was ended from outside, and the logs do not say by whom")
    f.reasoning.append(
        f"the job was ended from outside ({ended.where.source}:{ended.where.line}: {ended.text.strip()[:160]})"
        " before any rank died: every rank seen was stopped with it, and no cause or symptom line precedes it"
    )
    f.fetch_next.append(_WHO_ENDED)


def _unranked_death(u: Unattributed, rule: str | None = None, told: tuple[Evidence, ...] = ()) -> FirstDeath:
    """A death whose cause a line tied to no rank gives (`rule`: that line's, where it is a rule's own finding;
    `told`: its event's evidence, an exception's `Type: message` line first)."""
    evidence = told or ((u.told,) if u.told else ()) + (Evidence(u.where, u.text),)
    return FirstDeath(
        rank=None, cause=u.cause, rule=rule, detail=evidence[0].text.strip()[:200], method="unattributed",
        evidence=evidence,
    )  # fmt: skip


def _unranked_seen(tl: Timeline, u: Unattributed) -> FirstDeath:
    """`_unranked_death` with what the event at the cause's line adds: its evidence, and the rule that read
    the cause (whose remediation is the one to give) where it read that cause."""
    i = next((i for i, e in enumerate(tl.events) if e.where == u.where), None)
    if i is None:
        return _unranked_death(u)
    e = tl.events[i]
    first = _unranked_death(u, e.read_by if e.cause is u.cause else None, _evidence(tl, [i]))
    return replace(first, host=e.host, pid=own_pid(e))  # the process it happened in, where its line says (Ray's)


def _say_killed_from_outside(f: Findings, stop: Event) -> None:
    """A launcher stopped by a signal from outside, no rank's own failure seen: the job was killed, no rank first."""
    where = f"{stop.where.source}:{stop.where.line}"
    f.unattributed.append(Unattributed(Cause.KILLED, stop.where, stop.text))
    f.first = _unranked_death(f.unattributed[-1], stop.rule)
    if "signal" not in stop.facts:  # a preemption it names: its scheduler stopped it
        cap = "the job was preempted; whether a rank died first is not told"
        said = f"the job was preempted by its scheduler ({where}), and no rank's own failure is seen before it"
    else:
        cap = "the launcher was stopped from outside; by whom, and whether a rank died first, is not told"
        said = (
            f"the launcher received a stop signal from outside ({where}) and shut the job down, and no rank's own"
            " failure is seen before it: the job was killed, by whom the logs do not say"
        )
    f.cap(Confidence.LOW, cap)
    f.reasoning.append(said)
    f.fetch_next.append(_WHO_ENDED)


def _hung_without_culprit(tl: Timeline, f: Findings) -> bool:
    """No rank died and none is named, but a process was alive and stuck (a live stack dump, a hang
    watchdog's report: `Effect.STALLED`) and made no progress after it: the job hung, its culprit unknown.
    Not where a cause, a cut-off traceback or an exit other than a stop signal says that something died, nor
    where a rank gave up waiting (the job then failed of the hang: undetermined, as with timeouts alone)."""
    stalls = [i for i, e in enumerate(tl.events) if Effect.STALLED in e.effects]
    if not stalls or f.unattributed or _cut_off(tl) or _went_on_after(tl, stalls) or _gave_up(tl):
        return False
    if not _only_stopped(tl):
        return False
    if _stalled_but_one(tl, stalls, f):
        return True
    e = tl.events[stalls[0]]
    who = f"rank {e.rank}" if e.rank is not None else "a process"
    _hang_of_no_rank(tl, f, "stalled", e.text.strip()[:200], stalls[:2])
    f.cap(Confidence.MEDIUM, "no culprit is named: the lines show the job stuck, not which rank it waited for")
    f.reasoning.append(f"{who} was alive and stuck, per {e.where.source}:{e.where.line} ({e.rule})")
    f.reasoning.append(
        "no rank died and none is named as the one the others wait for: the job hung, and these lines do not "
        "say on which rank"
    )
    f.fetch_next.append(
        "a stack dump of every rank while it hangs (`py-spy dump --pid PID`): the culprit is the rank not "
        "inside the collective the others wait in"
    )
    return True


def _hang_of_no_rank(tl: Timeline, f: Findings, method: str, detail: str, events: list[int]) -> None:
    """The job hung and no rank is named: `first_death` carries the hang with `rank: null`, shown by `events`."""
    f.outcome = Outcome.HANG
    f.first = FirstDeath(
        rank=None, cause=Cause.HANG, rule=None, method=method, detail=detail, evidence=_evidence(tl, events)
    )
    f.culprit_events = events


def _stalled_but_one(tl: Timeline, stalls: list[int], f: Findings) -> bool:
    """Every rank seen, two or more, is stuck waiting (a store barrier, a stall report) and, of the job's size,
    one rank left no line at all: that one is what they wait for (`Waiting in store based barrier ...
    (world_size=8, worker_count=7)` from seven ranks). One rank alone waiting may be the one node whose log
    is here; a rank at or above the job's size says the size is not the job's."""
    stuck = {r for i in stalls if (r := tl.events[i].rank) is not None}
    missing = _missing_ranks(tl)
    if len(missing) != 1 or len(stuck) < 2 or not set(tl.ranks) <= stuck or max(tl.ranks) >= (tl.world or 0):
        return False
    _name_culprit(tl, f, RankState(missing[0]), Cause.HANG, stalls[:1], "missing")
    f.reasoning.append(
        f"every rank seen ({ranges(sorted(stuck))}) is waiting, and of the job's {tl.world} ranks only rank "
        f"{missing[0]} left no line: the one they wait for"
    )
    f.cap(Confidence.MEDIUM, f"rank {missing[0]} left no line at all: named because the job's size says it exists")
    f.fetch_next.append(f"rank {missing[0]}'s own log, or a stack dump of it (`py-spy dump --pid PID`) while it hangs")
    return True


def _gave_up(tl: Timeline) -> bool:
    """Whether a rank gave up waiting (a timeout, a lost peer, a watchdog's abort that is no stall report):
    then the job failed, it did not only hang."""
    return any(
        e.role is Role.SYMPTOM and e.cause is not Cause.LAUNCHER_TEARDOWN and Effect.STALLED not in e.effects
        for e in tl.events
    )


def _went_on_after(tl: Timeline, stalls: list[int]) -> bool:
    """Whether the last stall's input logged progress or a rank's completion after it."""
    last = tl.events[stalls[-1]]
    return any(
        (e.role is Role.PROGRESS or Effect.COMPLETE in e.effects)
        and e.where.source == last.where.source
        and e.where.line > last.where.line
        for e in tl.events
    )


def _cut_off(tl: Timeline) -> list[Event]:
    """Tracebacks cut off before their exception line (the log ends inside them): a sign of failure, no cause."""
    return [e for e in tl.events if _is_cut_off(e)]


def _cut_off_of(tl: Timeline, r: RankState) -> Event | None:
    return next((tl.events[i] for i in r.events if _is_cut_off(tl.events[i])), None)


def _is_cut_off(e: Event) -> bool:
    return e.facts.get("cut_off") in ("1", "head", "relay") or e.facts.get("type_cut") == "1"


def _head_cut(e: Event) -> bool:
    """A report the lines open in, its head (which named the error) above the cut (`cut_off: head`)."""
    return e.facts.get("cut_off") == "head"


def _what_to_fetch(tl: Timeline, f: Findings) -> None:
    missing = [r for r in _missing_ranks(tl) if r not in tl.quiet]
    if missing:
        f.fetch_next.append(f"the logs of rank(s) {ranges(missing)}: they left no line here")
    if f.unattributed:
        f.fetch_next.append(
            "logs that name the rank on every line: torchrun --tee 3 or --log-dir, srun --label, "
            "mpirun --tag-output, or one file per rank"
        )
    killed = [r for r in tl.ranks.values() if r.exit is not None and as_signal(r.exit.code) == 9]
    if killed and not any(e.cause is Cause.HOST_OOM for e in tl.events):
        hosts = sorted({r.host or "?" for r in killed})
        f.fetch_next.append(
            f"the kernel log of {', '.join(hosts)} (`dmesg -T`, or `journalctl -k`): rank(s) "
            f"{ranges(sorted(r.rank for r in killed))} were SIGKILLed by an unknown sender"
        )
    pids = sorted({p for i in tl.loose_exits if (p := tl.events[i].facts.get("pid")) is not None}, key=int)
    if f.launch_failed is None and not any(r.exit is not None for r in tl.ranks.values()):
        f.fetch_next.append(
            f"the output of the process(es) the launcher saw end (pid {', '.join(pids)}), which no line here ties "
            "to a rank"
            if pids
            else "the launcher's own output (torchrun's failure table, srun/mpirun exit lines)"
        )
    if f.collateral and not missing:
        f.fetch_next.append(
            "every node's log: the ranks here only waited for a peer, so the culprit's log is elsewhere"
        )


def _unmapped_on_other_nodes(tl: Timeline, f: Findings) -> None:
    """Workers this node's agent saw fail by local rank only, where the job has other nodes."""
    if not tl.nodes_elsewhere:
        return
    failed = [e for i in tl.loose_exits if "local_rank" in (e := tl.events[i]).facts and exit_code(e.facts)]
    for e in failed:
        f.notes.append(
            f"local rank {e.facts['local_rank']} failed (exit code {exit_code(e.facts)}, {e.where.source}:"
            f"{e.where.line}) on a node of a job with other nodes (its agent's own lines say so): "
            "its global rank is not in these lines, nor whether another node failed first"
        )
    if failed:
        f.fetch_next.append(
            "the other nodes' logs, and each agent's failure table (`rank: N (local_rank: M)`) to map local ranks"
        )


def _missing_ranks(tl: Timeline, below_highest: bool = False) -> list[int]:
    """The job's ranks that left no line, of its world size; with `below_highest`, where that is unknown, those
    below the highest seen (ranks are numbered from 0, so each of them ran; but the job may have more, so they
    are no list of suspects)."""
    world = tl.world if tl.world is not None or not below_highest else (max(tl.ranks) + 1 if tl.ranks else None)
    if world is None or world > 100_000:
        return []
    return [r for r in range(world) if r not in tl.ranks]


def _unattributed(tl: Timeline, candidates: Sequence[Candidate]) -> list[Unattributed]:
    """Causes on lines tied to no rank, and deaths by a signal that an exit report tied to no rank. Of one
    process's cause lines in one file, the first: what its dying did after it (a segfault in the handler of
    its abort) is no other death; nor is a cause line naming a rank that died of its own cause (MPICH's
    abort message, printed again by its process manager's client)."""
    used = {i for c in candidates for i in c.evidence}
    dead = {str(c.rank) for c in candidates if c.rank is not None}
    causes = [
        e
        for i, e in enumerate(tl.events)
        if e.role is Role.CAUSE
        and e.rank is None
        and i not in used
        and e.cause is not Cause.TIME_LIMIT
        and e.facts.get("rank") not in dead
    ]
    firsts: dict[tuple[str, str | None, int], int] = {}  # a process dies once: the first cause its handler printed
    for e in causes:
        if e.pid is not None:
            key = (e.where.source, e.host, e.pid)
            firsts[key] = min(firsts.get(key, e.where.line), e.where.line)
    loose = [
        Unattributed(e.cause, e.where, e.text, e.lines[0] if "exc_type" in e.facts and e.lines else None)
        for e in causes
        if e.pid is None or firsts[(e.where.source, e.host, e.pid)] == e.where.line
    ]
    for i in tl.loose_exits:
        e = tl.events[i]
        if (signal := as_signal(exit_code(e.facts))) is not None:
            loose.append(Unattributed(Cause.HOST_OOM if "oom" in e.facts else signal_cause(signal), e.where, e.text))
    return loose


def _cap_for_the_unseen(tl: Timeline, f: Findings) -> None:
    """What the logs do not show can lower the confidence in a named culprit."""
    unseen = _missing_ranks(tl, below_highest=True)
    missing = [r for r in unseen if r not in tl.quiet]
    if unseen and f.first is not None and f.first.rank is not None:
        quiet = sorted(set(unseen) & set(tl.quiet))
        told = [f"rank(s) {ranges(missing)} of the job left no log here"] if missing else []
        told += [f"rank(s) {ranges(quiet)} logged lines here but no end and nothing a rule reads"] if quiet else []
        f.cap(Confidence.MEDIUM, "; ".join(told) + ": one of them may have died first")
        if missing:
            f.fetch_next.append(f"the logs of rank(s) {ranges(missing)}")
    first = f.first
    earlier = [
        u
        for u in f.unattributed
        if first is not None
        and first.rank is not None
        and _maybe_before(tl, u, first.time)
        and not _relays(tl, u, first)
    ]
    if earlier:
        u = earlier[0]
        f.cap(Confidence.MEDIUM, f"{_label(u.cause)} tied to no rank ({u.where.source}:{u.where.line}) may be earlier")
        f.notes.append(
            f"{_label(u.cause)} at {u.where.source}:{u.where.line} is tied to no rank and may have come first"
        )
    _cap_for_cut_tracebacks(tl, f)


def _relays(tl: Timeline, u: Unattributed, first: FirstDeath) -> bool:
    """A cause tied to no rank, printed after the named death in the same file, whose exception reads
    word for word as it: the same error relayed by a driver or a controller (Ray's `[Rank 1 Error
    Snippet]`, its log dedup), not another rank's."""
    if not first.evidence or first.evidence[0].where.source != u.where.source:
        return False
    if u.where.line <= first.evidence[0].where.line:
        return False
    at = (u.where.source, u.where.line)
    return any(
        (e.where.source, e.where.line) == at and "exc_type" in e.facts and _detail(e) == first.detail for e in tl.events
    )


def _cap_for_cut_tracebacks(tl: Timeline, f: Findings) -> None:
    """Another rank that raised too, in a traceback the logs cut before its exception line, may have
    died first unless the clocks put it after the named death (its waiting ranks' tracebacks aside)."""
    first = f.first
    if first is None or first.rank is None:
        return
    for e in _cut_off(tl):
        if (said := _cut_rival(e, first, f)) is not None:
            f.cap(Confidence.MEDIUM, said[0])
            f.notes.append(said[1])
            return


def _cut_rival(e: Event, first: FirstDeath, f: Findings) -> tuple[str, str] | None:
    """Why a cut-off report may hide an earlier death than the named one (the cap, the note), else None: another
    process's report the lines open in above the death, or another rank's traceback nothing orders after it."""
    where = f"{e.where.source}:{e.where.line}"
    if e.rank is None and _head_cut(e) and _earlier_line(e, first):
        return (
            f"the lines open inside another process's error report ({where}), cut above",
            f"the lines open at {where} inside an error report of a process no line names, its head above the "
            "cut: that process may have failed first",
        )
    if e.rank is None or e.rank == first.rank or e.rank in f.collateral:
        return None
    if e.time is None or first.time is None or e.time.earliest <= first.time.latest:
        return (
            f"rank {e.rank} raised too ({where}, cut off) and nothing orders it after",
            f"rank {e.rank} printed a traceback cut off before its exception line at {where}: it raised "
            "too, and nothing shows it came after this death",
        )
    return None


def _earlier_line(e: Event, first: FirstDeath) -> bool:
    """Whether the event is printed above the named death's decisive line, in the same input."""
    decisive = first.evidence[0].where if first.evidence else None
    return decisive is not None and decisive.source == e.where.source and e.where.line < decisive.line


def _maybe_before(tl: Timeline, u: Unattributed, death: TimeSpan | None) -> bool:
    event = next((e for e in tl.events if e.where == u.where), None)
    if event is None or event.time is None or death is None:
        return True
    return event.time.earliest <= death.latest


def _job_candidates(tl: Timeline) -> list[Candidate]:
    """Causes that end the whole job at once: the scheduler's time limit."""
    for i, e in enumerate(tl.events):
        if e.role is Role.CAUSE and e.rank is None and e.cause is Cause.TIME_LIMIT:
            reported = (e.time, None) if e.stamped else (None, None)  # its line's stamp, or nothing
            return [Candidate(None, e.cause, e.rule, e.time, [i], e.text.strip(), reported=reported)]
    return []


# The exits each root cause leaves when nothing else is logged (torchrun's convention: negative = signal).
_EXITS_OF: dict[Cause, frozenset[int]] = {
    Cause.HOST_OOM: frozenset({-9}),
    Cause.SEGFAULT: frozenset({-11, -8, -4}),
    Cause.ABORT: frozenset({-6}),
    Cause.BUS_ERROR: frozenset({-7}),
    Cause.PYTHON_EXCEPTION: frozenset({1, 2}),  # 2: argparse's SystemExit, `sys.exit(2)`
    Cause.CUDA_OOM: frozenset({1, -6}),
    Cause.CUDA_ERROR: frozenset({1, -6}),
    Cause.NCCL_ERROR: frozenset({1, -6}),
    Cause.GPU_HARDWARE: frozenset({1, -6, -9, -11}),
}


def _join_loose_cause(tl: Timeline, candidates: list[Candidate]) -> None:
    """One rank died with only an exit status, and one kind of cause was logged on a line tied to no
    rank (a scheduler's oom_kill event, a pid we cannot map, a console line with no prefix) that
    leaves that exit: that cause is the likely one, inferred."""
    loose = [i for i, e in enumerate(tl.events) if e.rank is None and e.role is Role.CAUSE and e.cause in _EXITS_OF]
    exits = [c for c in candidates if c.from_exit_only and c.rank is not None]
    kinds = {tl.events[i].cause for i in loose}
    if len(exits) != 1 or len(kinds) != 1:
        return
    c, cause = exits[0], kinds.pop()
    r = tl.ranks.get(c.rank) if c.rank is not None else None
    code = signal_code(r.exit.code) if r is not None and r.exit is not None else None
    if code not in _EXITS_OF[cause]:
        return
    c.cause, c.from_exit_only, c.inferred = cause, False, True
    c.evidence.append(loose[0])
    e = tl.events[loose[0]]
    said = e.text
    if e.facts.get("exc_type"):  # a traceback's last line, or a C++ terminate and its what() message
        said = ": ".join(v for v in (e.facts["exc_type"], e.facts.get("exc_msg") or e.facts.get("what")) if v)
    c.detail = c.detail.removesuffix(", no message") + (
        f"; {_label(cause)} was logged on a line not tied to a rank: {said.strip()[:160]}"
    )


def _stopped_with_the_job(tl: Timeline, f: Findings) -> None:
    """A line that ends the whole job: ranks with no end of their own went with it."""
    ended = next((e for e in tl.events if Effect.JOB_END in e.effects), None)
    if ended is None:
        return
    settled = f.collateral.keys() | f.torn_down.keys() | f.clean | {c.rank for c in f.candidates}
    for r in tl.ranks.values():
        if r.rank not in settled and r.exit is None:
            f.torn_down[r.rank] = f"stopped when the launcher ended the job ({ended.where.source}:{ended.where.line})"


def _stopped_by_scheduler(tl: Timeline, f: Findings) -> None:
    settled = f.collateral.keys() | f.clean | {c.rank for c in f.candidates}
    for rank in tl.ranks:
        if rank not in settled:
            f.torn_down.setdefault(rank, "stopped by the scheduler when the job ended")


def _time_key(tl: Timeline, c: Candidate) -> tuple[int, datetime, datetime, float, int, str, int]:
    """Earliest death first; deaths the clocks cannot place fall back to the order their lines were
    written in one stream (srun and mpirun print exits in the order they noticed them), but for
    torchrun's failure table, which prints its other failures above the root cause it noticed first. Of
    workers one memory-pressure kill took at once, the one its line says used the most memory comes first."""
    event = tl.events[c.evidence[0]] if c.evidence else None
    order = (event.where.source, event.where.line) if event is not None else ("", 0)
    used = -_bytes(event.facts.get("memory")) if event is not None else 0.0
    other = int(event is not None and event.facts.get("root_cause") == "0")
    if c.time is None:
        return (1, datetime.max, datetime.max, used, other, *order)
    return (0, c.time.latest.replace(tzinfo=None), c.time.earliest.replace(tzinfo=None), used, other, *order)


_SIZE = recache.compile(r"^([0-9]{1,12}(?:\.[0-9]{1,6})?)([KMGT]?)i?B$")


def _bytes(text: str | None) -> float:
    m = _SIZE.match(text or "")
    return float(m[1]) * 1024 ** " KMGT".index(m[2] or " ") if m else 0.0


def _bystanders(tl: Timeline) -> tuple[dict[int, str], dict[int, str], set[int]]:
    collateral: dict[int, str] = {}
    torn_down: dict[int, str] = {}
    clean: set[int] = set()
    for r in tl.ranks.values():
        first_symptom = next(
            (
                i
                for i in r.events
                if (is_symptom(tl.events[i]) or _recorded(tl, i, Role.SYMPTOM))
                and r.rank not in _culprits(tl.events[i])
            ),
            None,
        )  # a line that names this rank as the one the others wait for is no waiting of its own
        first_cause = next((i for i in r.events if tl.events[i].role is Role.CAUSE), None)
        if first_symptom is not None and _died_before(r, tl.events[first_symptom]):
            first_symptom = None  # its waiting came in a later life (a restarted attempt)
        if first_symptom is not None and (first_cause is None or _precedes(tl, first_symptom, first_cause)):
            collateral[r.rank] = _symptom_summary(tl.events[first_symptom])
        elif r.torn_down is not None:
            torn_down[r.rank] = _teardown_summary(tl.events[r.torn_down])
        elif first_cause is None and (ended := _termed_after_job_end(tl, r)) is not None:
            torn_down[r.rank] = f"stopped by SIGTERM after the launcher began ending the job ({_at(ended)})"
        elif (r.exit is not None and r.exit.code == 0) or (
            r.exit is None and r.completed is not None and first_cause is None
        ):
            clean.add(r.rank)
    _infer_teardown(tl, collateral, torn_down, clean)
    return collateral, torn_down, clean


def _termed_after_job_end(tl: Timeline, r: RankState) -> Event | None:
    """The line of the launcher's that began ending the job, where this rank's only end is a SIGTERM
    reported after it in the same stream: the launcher's teardown (horovodrun stops every rank's
    middleman with SIGTERM and names no pid)."""
    if r.exit is None or signal_code(r.exit.code) != -15:
        return None
    reported = tl.events[r.exit.event].where
    return next(
        (e for e in tl.events if Effect.JOB_END in e.effects and e.where.source == reported.source
         and e.where.line < reported.line),
        None,
    )  # fmt: skip


def _at(e: Event) -> str:
    return f"{e.where.source}:{e.where.line}"


def _died_before(r: RankState, symptom: Event) -> bool:
    """The launcher had already seen this rank exit abnormally when it reported the symptom."""
    if Effect.EXIT in symptom.effects:  # the exit report itself (torchrun's table repeats what it recorded)
        return False
    noticed = r.exit.noticed if r.exit is not None and r.exit.code not in (0, None) else None
    return noticed is not None and symptom.time is not None and noticed.latest < symptom.time.earliest


def _infer_teardown(tl: Timeline, collateral: dict[int, str], torn_down: dict[int, str], clean: set[int]) -> None:
    """The launcher stopped N pids it never tied to a rank, and N ranks just stop with no end of their
    own: those ranks are the ones it stopped."""
    stopped = [e for e in tl.events if Effect.TEARDOWN in e.effects and e.rank is None and e.pid is not None]
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


def _without_least_telling(tl: Timeline, candidates: list[Candidate]) -> list[Candidate]:
    """A death read from an uncaught exception whose type is cut off (`type_cut`), or from an error a peer's
    failure can cause as well (`may_follow`), says the least of all: it counts only where no other line says
    more, no other death, cause of no rank, or rank named as waited for."""
    cut = [c for c in candidates if c.evidence and _least_telling(tl.events[c.evidence[0]])]
    if not cut:
        return candidates
    own = {i for c in cut for i in c.evidence}  # an exit's own line may leave its event no rank (the exit has it)
    telling = len(cut) < len(candidates) or any(
        (e.role is Role.CAUSE and e.rank is None and i not in own) or Effect.NAMES_CULPRIT in e.effects
        for i, e in enumerate(tl.events)
    )
    return [c for c in candidates if c not in cut] if telling else candidates


def _least_telling(e: Event) -> bool:
    return e.facts.get("type_cut") == "1" or e.facts.get("may_follow") == "1"


def _candidate(tl: Timeline, r: RankState, teardown: datetime | None, began: datetime | None) -> Candidate | None:
    code = signal_code(r.exit.code) if r.exit else None
    steps = [j for j in r.events if tl.events[j].role is Role.PROGRESS]  # a few: the scan thins them
    last_cause = _last_cause_lines(tl, r)
    causes = [
        i
        for i in r.events
        if tl.events[i].role is Role.CAUSE
        and not _after_its_exit(tl, r, i)
        and not _went_on(tl, r, i, steps, last_cause)
        and not _recovered(tl, i, steps)
    ]
    if causes:
        best = _decisive(tl, causes)
        e = tl.events[best]
        timed = e if (off := _clock_off(tl, r, best)) is None else None
        if off is not None:
            _note_clock_off(tl, r, e, off)
        return Candidate(
            r.rank,
            e.cause,
            e.rule,
            _death_time(tl, r, timed.time if timed else None, timed.facts if timed else {}),
            [best, *(i for i in _support(r) if i != best)],  # a line can be both its cause and its exit
            _detail_with_memcg(tl, e),
            phase=_phase(tl, r, best, began if timed else None),
            reported=_death_bounds(tl, r, timed, teardown),
        )
    recorded = [i for i in r.events if _recorded(tl, i, Role.CAUSE)]
    if recorded:
        e = tl.events[recorded[0]]
        cause = Cause(e.facts["exc_cause"])
        time, reported = _death_time(tl, r, None, {}), _death_bounds(tl, r, None, teardown)
        cut = "exc_type" not in e.facts  # then it says how the rank ended, as an exit status does, not what it raised
        detail = _CUT_RECORD if cut else _detail(e)
        return Candidate(r.rank, cause, e.rule, time, recorded[:1], detail, from_exit_only=cut, reported=reported)
    said = _exit_cause(tl.events[r.exit.event]) if r.exit is not None else None
    if r.exit is None or code == 0:
        return None
    if code is None:  # a monitor saw the process end, not how (vLLM's executor): only what its line states
        if said is None and tl.events[r.exit.event].facts.get("failed") == "1":
            said = Cause.SILENT_EXIT  # a report of failures alone, its code not in the lines
        if said is None:
            return None
        cause, detail = said, f"no exit code: {_label(said)} as far as the lines tell"
    elif said is not None:
        cause, detail = said, f"exit code {code}; {_label(said)}, said by the line that reports the exit"
    elif (crash := windows_crash(code)) is not None:
        cause, detail = crash[1], f"exit code {code} ({crash[0]}, a Windows crash)"
    elif code in _EXITS_OF[Cause.PYTHON_EXCEPTION] and _python_unseen(tl, r):
        cause, detail = Cause.PYTHON_EXCEPTION, f"exit code {code}{_UNSEEN_RAISE[code]}"
    else:
        cause = signal_cause(-code) if code < 0 else Cause.SILENT_EXIT
        detail = f"exit code {code}" + (f" ({signal_name(-code)})" if code < 0 else _no_message(tl, r))
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
        phase=_phase(tl, r, r.exit.event, began),
        reported=_death_bounds(tl, r, None, teardown),
    )


def _no_message(tl: Timeline, r: RankState) -> str:
    """What an exit status alone leaves unsaid: the rank printed nothing of its failure, or these logs hold
    none of its own lines (only a launcher's report of its exit), so whether it did is not known."""
    return ", no message" if _spoke(tl, r) else ", no message in these logs: none of its own lines are here"


def _spoke(tl: Timeline, r: RankState) -> bool:
    """Whether any of the rank's own lines are here, beyond a launcher's report of its exit or teardown."""
    return (
        r.last_seen is not None
        or r.rank in tl.quiet
        or any(not {Effect.EXIT, Effect.TEARDOWN} & tl.events[i].effects for i in r.events)
    )


def _python_unseen(tl: Timeline, r: RankState) -> bool:
    """A Python script run as a process (the exit report's rule says so: `python_script`) none of whose own
    lines are here: its exit status 1 is then the end of an uncaught exception, likelier than a silent exit,
    which only its own lines, showing none, could tell. Not mp.spawn's `terminated with exit code 1`: its
    wrapper reports what the process raised itself, so an exit status alone there is a `sys.exit`."""
    return r.exit is not None and tl.events[r.exit.event].facts.get("python_script") == "1" and not _spoke(tl, r)


_UNSEEN_RAISE = {
    1: ", the status Python ends with after an uncaught exception; none of the rank's own lines are here to show it",
    2: ", the status of argparse's usage error (a SystemExit); none of the rank's own lines are here to show it",
}


def _exit_cause(e: Event) -> Cause | None:
    """The cause a line that reports an exit states by its rule (`exit_cause`: spawn's child raised)."""
    try:
        cause = Cause(e.facts.get("exit_cause", ""))
    except ValueError:
        return None
    return None if cause.is_symptom or cause in (Cause.PROGRESS, Cause.CONTEXT) else cause


_CATCHABLE = frozenset({Cause.PYTHON_EXCEPTION, Cause.CUDA_OOM})  # raised in the rank's Python: can be caught


def _went_on(tl: Timeline, r: RankState, index: int, steps: list[int], last_cause: dict[str, int]) -> bool:
    """A Python exception or CUDA OOM that the rank lived past: a step line of the same stream after it
    in the file and in time, before any exit of the rank was noticed (caught and logged, not a death).
    A step stamped at the very time that bounds the exception (the first stamped line under it) counts
    only where another cause of the rank follows that step in the file: a process dies once, and the
    stdout that a crash flushes late lands after everything it wrote to stderr, never before.
    `steps` are the rank's progress events, in its events' order (a rank that caught thousands of
    exceptions has thousands of events: each is held against these few, not against all)."""
    e = tl.events[index]
    if e.cause not in _CATCHABLE or e.time is None:
        return False
    noticed = r.exit.noticed if r.exit is not None else None
    for j in steps:
        p = tl.events[j]
        if p.where.source != e.where.source or p.where.line <= e.where.line or p.time is None:
            continue  # later in the file is not enough: a tee'd stdout and stderr arrive out of order
        later = p.time.earliest > e.time.latest
        if later or (p.time.latest >= e.time.latest and last_cause.get(p.where.source, 0) > p.where.line):
            return noticed is None or noticed.earliest > p.time.latest
    return False


def _recovered(tl: Timeline, index: int, steps: list[int]) -> bool:
    """A stall of the rank (a hang cause: the kernel's hung-task report, torchrun's D-state check) that it
    made progress after, in any of its logs: it was blocked for a while and went on, so it is no death."""
    e = tl.events[index]
    if e.cause is not Cause.HANG or e.time is None:
        return False
    return any((p := tl.events[j].time) is not None and p.earliest > e.time.latest for j in steps)


def _last_cause_lines(tl: Timeline, r: RankState) -> dict[str, int]:
    """The line of the rank's last cause event in each of its sources."""
    last: dict[str, int] = {}
    for i in r.events:
        e = tl.events[i]
        if e.role is Role.CAUSE and e.where.line > last.get(e.where.source, 0):
            last[e.where.source] = e.where.line
    return last


def _after_its_exit(tl: Timeline, r: RankState, index: int) -> bool:
    """A cause line written after the launcher had already seen this rank exit belongs to a later
    life of the rank (a restarted attempt): the first exit was the first death. Not a line naming the
    pid that exited (`_clock_off`)."""
    return _stamped_after_exit(tl, r, index) and not _names_exited_pid(tl, r, index)


def _stamped_after_exit(tl: Timeline, r: RankState, index: int) -> bool:
    noticed = r.exit.noticed if r.exit is not None else None
    if noticed is None or r.exit is None or "time_open" in tl.events[r.exit.event].facts:
        return False  # an exit dated only by an earlier line of its channel may have come any time after
    when = tl.events[index].time
    return when is not None and noticed.latest < when.earliest


def _names_exited_pid(tl: Timeline, r: RankState, index: int) -> bool:
    pid = tl.events[index].facts.get("pid")
    return r.exit is not None and pid is not None and pid == tl.events[r.exit.event].facts.get("pid")


def _clock_off(tl: Timeline, r: RankState, index: int) -> timedelta | None:
    """How far off the clock of a line naming the death of the pid the launcher saw exit is: stamped after
    that exit (positive) or before the rank's own last line (negative). A process dies once, so that line's
    clock is wrong (`dmesg -T` reckons wall time from the boot time, and drifts) and its time says nothing.
    None where the line names another pid or its stamp fits."""
    e, exit_ = tl.events[index], r.exit
    if exit_ is None or exit_.noticed is None or e.time is None or not _names_exited_pid(tl, r, index):
        return None
    if "time_open" in tl.events[exit_.event].facts:
        return None
    if _stamped_after_exit(tl, r, index):
        return e.time.earliest - exit_.noticed.latest
    if r.last_seen is not None and e.time.latest < r.last_seen <= exit_.noticed.latest:
        return e.time.latest - r.last_seen
    return None


def _note_clock_off(tl: Timeline, r: RankState, e: Event, off: timedelta) -> None:
    seconds = f"{abs(off.total_seconds()):.3g} s"
    late = off > timedelta(0)
    how = f"{seconds} after the launcher saw it exit" if late else f"{seconds} before rank {r.rank}'s last line"
    note = (
        f"{e.where.source}:{e.where.line} stamps the death of pid {e.facts['pid']} {how}: that log's clock is off"
        " (`dmesg -T` reckons wall time from the boot time, and drifts); the death is timed by the other logs"
    )
    if note not in tl.notes:
        tl.notes.append(note)


def _decisive(tl: Timeline, causes: list[int]) -> int:
    """The most telling cause event of a rank: a kernel OOM beats the SIGKILL it caused, then the earliest
    that says what it was (an exception whose type is cut off says least)."""
    kernel = [i for i in causes if tl.events[i].cause is Cause.HOST_OOM]
    said = [i for i in causes if not _least_telling(tl.events[i])]
    return kernel[0] if kernel else said[0] if said else causes[0]


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
    recorded = r.died_at
    if recorded is not None and noticed is not None and recorded.earliest > noticed.latest:
        recorded = None  # written after the launcher saw it exit: a later attempt's record
    return _narrow(span, recorded)


def _death_bounds(
    tl: Timeline, r: RankState, death: Event | None, teardown: datetime | None
) -> tuple[TimeSpan | None, TimeOpen | None]:
    """When the rank died, from what bounds it for certain: it was alive at its last stamped line (unless
    that came after what bounds the death: a restarted rank's later life) and at the stamp of a line
    telling its death, and dead by the time the launcher noticed it or began to stop the survivors (it
    does once a rank died; stopping this one says it was alive) and its recorded exception was written
    (torchrun's error file); each where a line's own stamp says so (`Event.stamped`; an unstamped one
    bounds nothing for certain: in a console, relays such as torchrun's tee, mpirun's forwarding and Ray's
    driver, which repeats a line's first stamp, write other processes' lines late and out of order), or,
    for a line with none, `watch` read it (`_seen_by`)."""
    lower: list[datetime] = []
    upper: list[datetime] = []
    if death is not None and death.stamped and death.time is not None:
        lower.append(death.time.earliest)
        upper.append(death.time.latest)
    elif death is not None and (seen := _seen_by(death)) is not None:
        upper.append(seen)
    noticed = r.exit.noticed if r.exit is not None else None
    notice = tl.events[r.exit.event] if r.exit is not None else None
    if noticed is not None and notice is not None and (notice.stamped or "table_time" in notice.facts):
        upper.append(noticed.latest)  # its line's stamp, or torchrun's failure table's time
    elif notice is not None and (seen := _seen_by(notice)) is not None:
        upper.append(seen)
    if teardown is not None and r.torn_down is None:  # the launcher's first; one it stops was alive, it says
        upper.append(teardown)
    if (recorded := r.died_at) is not None and (noticed is None or recorded.earliest <= noticed.latest):
        lower.append(recorded.earliest)
        upper.append(recorded.latest)
    hi = min(upper, default=None)
    if r.last_seen is not None and (hi is None or r.last_seen <= hi):  # else a later life's (a restart)
        lower.append(r.last_seen)
    return _bounded(tl, max(lower, default=None), hi)


def _seen_by(e: Event) -> datetime | None:
    """When `watch` first read the line of an event with no stamp of its own (it was written before)."""
    try:
        return datetime.fromisoformat(e.facts["seen_by"].replace("Z", "+00:00"))
    except (KeyError, ValueError):
        return None


def _first_with(tl: Timeline, effect: Effect) -> datetime | None:
    """The earliest bounded time of a line with the effect (its own stamp, or when `watch` read it)."""
    times = [e.time.latest if e.stamped and e.time else _seen_by(e) for e in tl.events if effect in e.effects]
    return min((t for t in times if t is not None), default=None)


def _before_a_noticed_death(
    tl: Timeline, span: TimeSpan | None, open_: TimeOpen | None
) -> tuple[TimeSpan | None, TimeOpen | None]:
    """The first death's time, closed above by a launcher line that says a process had died by then
    (`Effect.AFTER_DEATH`): that bounds the earliest death only, so it is applied to the one named."""
    hi = _first_with(tl, Effect.AFTER_DEATH)
    lo = span.earliest if span is not None and open_ is not TimeOpen.BELOW else None
    top = span.latest if span is not None and open_ is not TimeOpen.ABOVE else None
    if hi is None or (lo is not None and hi < lo):  # clocks that disagree (two hosts): it says nothing here
        return span, open_
    return _bounded(tl, lo, hi if top is None else min(top, hi))


def _bounded(tl: Timeline, lo: datetime | None, hi: datetime | None) -> tuple[TimeSpan | None, TimeOpen | None]:
    """The interval [lo, hi], its open end closed where the logs begin or end (and said to be open)."""
    if lo is None:
        return (None, None) if hi is None else (TimeSpan(min(tl.start or hi, hi), hi), TimeOpen.BELOW)
    if hi is None:
        return TimeSpan(lo, max(tl.end or lo, lo)), TimeOpen.ABOVE
    return TimeSpan(min(lo, hi), max(lo, hi)), None  # lo > hi: clocks that disagree (two hosts): the hull


def _narrow(span: TimeSpan | None, bound: TimeSpan | None) -> TimeSpan | None:
    if span is None or bound is None:
        return span or bound
    earliest, latest = max(span.earliest, bound.earliest), min(span.latest, bound.latest)
    return TimeSpan(earliest, latest) if earliest <= latest else bound


def _phase(tl: Timeline, r: RankState, death: int, began: datetime | None) -> Phase:
    """Shutdown after the rank completed; start-up where the death is bounded (its own stamp, or stamped
    lines on both sides: one open on the right could be any time later) before the job's training
    progress `began`; else training, which is also all that a job logging no progress can be said to be in."""
    if r.completed is not None and _precedes(tl, r.completed, death):
        return Phase.SHUTDOWN
    e = tl.events[death]
    if began is not None and e.time is not None and "time_open" not in e.facts and e.time.latest <= began:
        return Phase.STARTUP
    return Phase.TRAINING


def _training_began(tl: Timeline) -> datetime | None:
    """The earliest stamp of the job's progress lines, where each has its own (the order of lines alone
    proves nothing: stdout is flushed late, a pytest report prints the traceback over the captured
    output); None where one has none, or the job logged no progress."""
    began = None
    for e in tl.events:
        if e.role is Role.PROGRESS:
            if not e.stamped or e.time is None:
                return None
            began = e.time.earliest if began is None else min(began, e.time.earliest)
    return began


def _detail_with_memcg(tl: Timeline, e: Event) -> str:
    """The detail of a death, and where the kernel's report of an OOM kill says a memory cgroup's limit was hit
    (a SLURM job's, a container's), that it was that limit, not the host's RAM, that ran out."""
    detail = _detail(e)
    if e.cause is not Cause.HOST_OOM or (pid := e.facts.get("pid")) is None:
        return detail
    memcg = next((o.facts["memcg"] for o in tl.events if "memcg" in o.facts and o.facts.get("pid") == pid), None)
    if memcg is None:
        return detail
    note = f"the limit of its memory cgroup {memcg} was reached (the host itself may have had RAM to spare)"
    return note if detail == e.text.strip() else f"{detail}; {note}"


_CUT_RECORD = "an exception its error file recorded; the table's traceback is cut before its `Type: message` line"


def _detail(e: Event) -> str:
    if "exc_type" in e.facts:
        msg = e.facts.get("exc_msg", "")
        return f"{e.facts['exc_type']}: {msg}" if msg else e.facts["exc_type"]
    if "where" in e.facts:
        return f"{e.text.strip()} in {e.facts['where']}"
    return e.text.strip()


_WORDS = {
    Cause.KILLED: "a kill by an unknown sender",
    Cause.HOST_OOM: "a host OOM kill",
    Cause.CUDA_OOM: "a CUDA OOM",
    Cause.CUDA_ERROR: "a CUDA error",
    Cause.NCCL_ERROR: "an NCCL or network error",
    Cause.GPU_HARDWARE: "a GPU hardware fault",
    Cause.PYTHON_EXCEPTION: "a Python exception",
    Cause.SILENT_EXIT: "an exit with no message",
    Cause.HANG: "a hang",
    Cause.TIME_LIMIT: "the time limit",
}


def _label(cause: Cause) -> str:
    """The cause in words that read in a sentence: `a CUDA OOM`, `a segfault`, `an abort`."""
    if cause in _WORDS:
        return _WORDS[cause]
    words = cause.value.replace("_", " ")
    return ("an " if words[0] in "aeiou" else "a ") + words


def _name_death(tl: Timeline, f: Findings, skew: timedelta) -> None:
    _prefer_one_that_stopped(tl, f, skew)
    first = f.candidates[0]
    others = f.candidates[1:]
    e = tl.events[first.evidence[0]]
    stopping = _teardown_after_crash(tl, first)
    unordered = [c for c in others if not _ordered(tl, first, c, skew)]
    alike = [c for c in unordered if c.from_exit_only and _alike(tl, first, c) and not _reported_after(tl, c, stopping)]
    if first.from_exit_only and alike:
        _undetermined_tie(tl, f, first, alike)
        return
    if first.from_exit_only and _listed_as_other_failure(tl, first):
        _root_cause_unseen(tl, f, first)
        return
    if first.from_exit_only and first.cause is Cause.ABORT and (seen := _watchdog_before(tl, first)) is not None:
        _abort_of_a_watchdog(tl, f, first, seen)
        return
    if e.facts.get(OPENS_CUT) == "1" and (rivals := _rivals(tl, f, first)):
        _undetermined_excerpt(tl, f, first, e, rivals)
        return
    if shared := _sharing_a_device(tl, first, others):
        _one_host_fault(tl, f, first, shared)
        return
    f.outcome = Outcome.FIRST_DEATH
    f.first = _first_death(tl, first)
    f.culprit_events = list(first.evidence)
    f.reasoning.append(_why_first(tl, first, e))
    if _progress_after(tl, first):
        f.cap(Confidence.MEDIUM, "its rank's progress lines follow it in the same file: it may have been caught")
    if unordered:
        ranks = ", ".join(str(c.rank) for c in unordered)
        f.cap(Confidence.MEDIUM, "another death cannot be ordered against it by the clocks")
        source = e.where.source
        by_line = all(c.evidence and tl.events[c.evidence[0]].where.source == source for c in unordered)
        why = (
            f"it was reported first in {source} (line order: the order the launcher noticed the exits)"
            if by_line and first.time is None
            else "its death is bounded earliest"
        )
        f.notes.append(
            f"the clocks cannot order rank {first.rank}'s death against rank(s) {ranks} "
            f"(within {skew.total_seconds():g} s skew or no time); rank {first.rank} is named because {why}"
        )
    if e.facts.get("may_follow") == "1":
        f.cap(
            Confidence.MEDIUM, "a peer's failure can cause the same error: none is in the lines, but one may be unseen"
        )
    if e.facts.get("type_cut") == "1":
        f.cap(
            Confidence.LOW,
            "its exception line is cut off: the type, which says whether it failed of itself or of another rank's "
            "failure (a DistBackendError), is not in the lines",
        )
        f.fetch_next.append(f"the rest of rank {first.rank}'s traceback after {e.where.source}:{e.where.line}")
    if first.from_exit_only:
        f.cap(Confidence.MEDIUM, "the cause is read from an exit status alone, not from a line of the rank's own")
        if others:
            f.cap(Confidence.LOW, "several ranks died and this one left only an exit status")
    if first.inferred:
        f.cap(Confidence.MEDIUM, "the cause is inferred from a line not tied to this rank")
    if first.cause is Cause.TIME_LIMIT and not any(ev.role is Role.PROGRESS for ev in tl.events):
        f.cap(
            Confidence.MEDIUM,
            "no progress line shows the job still working when its limit came: it may have stalled, or lost a rank, "
            "before it",
        )
    if len(tl.ranks) == 1 and not tl.quiet and (tl.world or 2) > 1:
        f.cap(Confidence.MEDIUM, "only this rank's lines were seen: another rank may have died first unseen")
    if first.rank is not None and _by_relayed_index_only(tl, first.rank, e):
        f.cap(
            Confidence.MEDIUM,
            "the rank is the process index in a launcher's report of its failure (mp.spawn's `-- Process N`): the"
            " global rank only where that launcher started every rank (one node)",
        )
    channel = e.rank_from if not first.from_exit_only else "launcher"
    if first.rank is not None and channel not in _RELIABLE:
        f.cap(
            Confidence.MEDIUM,
            _CHANNEL_WORDS.get(channel or "", "the rank was not tied to its line by a reliable channel"),
        )
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
        f.fetch_next.append(f"the kernel log of {host}{when} (`dmesg -T`): who sent the SIGKILL")
    if first.phase is Phase.SHUTDOWN:
        f.reasoning.append(f"rank {first.rank} had completed training before it died: it died on exit")


def _listed_as_other_failure(tl: Timeline, c: Candidate) -> bool:
    """Whether the exit is an entry of torchrun's failure table under `Failures:` (or one whose header the
    excerpt cut away, `root_cause: "?"`), and the table's `Root Cause (first observed failure)` entry is not
    in the lines: the table lists there every failure but the one it names as the root cause."""
    return tl.root_cause_rank is None and any(tl.events[i].facts.get("root_cause") in ("0", "?") for i in c.evidence)


def _root_cause_unseen(tl: Timeline, f: Findings, first: Candidate) -> None:
    f.outcome = Outcome.UNDETERMINED
    cut = any(tl.events[i].facts.get("root_cause") == "?" for i in first.evidence)
    f.reasoning[:] = [
        f"the lines open inside torchrun's failure table, in rank {first.rank}'s entry ({first.detail}): the table "
        "lists every failed worker, and whether this one is its root cause (the failure noticed first) is above the cut"
        if cut
        else f"torchrun's failure table lists rank {first.rank} ({first.detail}) under 'Failures:', where it puts "
        "every failure but its root cause: another rank failed and was noticed first, and its entry is not in "
        "these lines"
    ]
    f.cap(Confidence.LOW, "the failure table's root-cause entry is not in the lines")
    f.fetch_next.append("the rest of torchrun's failure table: its 'Root Cause (first observed failure)' entry")
    _what_to_fetch(tl, f)


_WATCHDOG = frozenset({Cause.COLLECTIVE_TIMEOUT, Cause.WATCHDOG_ABORT})


def _watchdog_before(tl: Timeline, c: Candidate) -> Event | None:
    """A collective watchdog's report (a timeout, its abort, a dump it asked for: `watchdog`) from before
    the launcher noticed this exit: earlier in the same file, or stamped no later. A launcher tears every
    survivor down once one worker has died, so a watchdog that fired before then did not wait for this
    rank's death."""
    exited = tl.events[c.evidence[0]]
    noticed = exited.time
    for e in tl.events:
        if (e.cause not in _WATCHDOG or e.role is not Role.SYMPTOM) and e.facts.get("watchdog") != "1":
            continue
        if e.where.source == exited.where.source:
            if e.where.line < exited.where.line:
                return e
        elif e.time is not None and noticed is not None and e.time.earliest <= noticed.latest:
            return e
    return None


def _abort_of_a_watchdog(tl: Timeline, f: Findings, first: Candidate, seen: Event) -> None:
    """A rank that left only SIGABRT where a watchdog fired first: NCCL's watchdog ends a rank it finds
    stuck with SIGABRT, so the abort may be that watchdog's, and whom it waited for is not in the lines."""
    who = f"rank {seen.rank}" if seen.rank is not None else "a rank"
    f.outcome = Outcome.UNDETERMINED
    f.reasoning[:] = [
        f"rank {first.rank} left only an exit status, {first.detail}, and {who}'s collective watchdog had "
        f"already reported ({seen.where.source}:{seen.where.line}): SIGABRT is how that watchdog ends a rank "
        "it finds stuck, so this abort may be its, not a first death"
    ]
    f.cap(Confidence.LOW, "an abort alone, after a watchdog had fired: the rank it waited for is not in the lines")
    f.fetch_next.append(
        f"the own log (stderr) of rank {first.rank} and the ranks' `Watchdog caught collective operation timeout` lines"
        " (the collective's sequence number shows which rank fell behind)"
    )
    _what_to_fetch(tl, f)


_RAISED = frozenset({Cause.PYTHON_EXCEPTION, Cause.CUDA_OOM, Cause.CUDA_ERROR, Cause.NCCL_ERROR})


def _one_unranked_raise(f: Findings) -> Unattributed | None:
    """The first of the exceptions seen tied to no rank, where they are all of one kind: exit status 1, with
    no line of the rank's own, is how Python ends after an uncaught one."""
    raised = [u for u in f.unattributed if u.cause in _RAISED]
    return raised[0] if len({u.cause for u in raised}) == 1 else None


def _alike(tl: Timeline, first: Candidate, other: Candidate) -> bool:
    """Two exits that cannot be told apart by how they ended: the same cause, or one whose status the lines
    do not give (a failure table's entry cut before its `exitcode`), which may be the other's."""
    return other.cause is first.cause or None in (_exit_status(tl, first), _exit_status(tl, other))


def _teardown_after_crash(tl: Timeline, first: Candidate) -> Location | None:
    """Where the launcher began stopping the job (srun's `Terminating` after the first abnormal exit it saw) after
    reporting first's death by a signal, in the same stream: it had seen that crash before any it reports below.
    Not after an exit status, which a process also returns on the error it raised for a peer's loss."""
    status = _exit_status(tl, first)
    if status is None or status >= 0 or not first.evidence:
        return None
    at = tl.events[first.evidence[0]].where
    marks = [e.where for e in tl.events if Effect.TEARDOWN in e.effects and e.where.source == at.source]
    return min((w for w in marks if w.line > at.line), key=lambda w: w.line, default=None)


def _reported_after(tl: Timeline, c: Candidate, mark: Location | None) -> bool:
    where = tl.events[c.evidence[0]].where if c.evidence else None
    return mark is not None and where is not None and where.source == mark.source and where.line > mark.line


def _exit_status(tl: Timeline, c: Candidate) -> int | None:
    r = tl.ranks.get(c.rank) if c.rank is not None else None
    return r.exit.code if r is not None and r.exit is not None else None


def _undetermined_tie(tl: Timeline, f: Findings, first: Candidate, alike: list[Candidate]) -> None:
    """Several ranks ended the same way (all SIGABRT, all SIGKILL) and nothing orders them: the exits
    alone cannot say who went first (a watchdog's abort hits every rank in the same second)."""
    ranks = sorted(c.rank for c in [first, *alike] if c.rank is not None)
    f.outcome = Outcome.UNDETERMINED
    f.first = FirstDeath(rank=None, cause=first.cause, rule=None, detail=first.detail, method="tie")
    if exit_code(tl.events[first.evidence[0]].facts) == 1 and (u := _one_unranked_raise(f)) is not None:
        told = f"exit code 1, after {_label(u.cause)} tied to no rank ({u.where.source}:{u.where.line})"
        f.first = replace(f.first, cause=u.cause, detail=told)
    f.reasoning[:] = [
        f"rank(s) {ranges(ranks)} all ended with the same exit ({f.first.detail}) and nothing orders them: "
        "an exit status alone cannot say which died first"
    ]
    if len({c.cause for c in [first, *alike]}) > 1:  # a status not in the lines: the others' cause, if they share one
        known = {c.cause for c in [first, *alike] if _exit_status(tl, c) is not None}
        cause = known.pop() if len(known) == 1 else None
        f.first = replace(f.first, cause=cause, detail=f"{_label(cause)} by every status given") if cause else None
        f.reasoning[:] = [
            f"rank(s) {ranges(ranks)} ended together, known by their exits alone, and the lines do not give the "
            "status of every one of them: nothing orders them"
            + (f"; every status they give is {_label(cause)}" if cause else ", and how the first ended is not known")
        ]
    f.cap(Confidence.LOW, "several ranks ended the same way and no line of their own orders them")
    f.fetch_next.append(f"the own logs (stderr) of rank(s) {ranges(ranks)}: the first error line decides it")
    _what_to_fetch(tl, f)


def _sharing_a_device(tl: Timeline, first: Candidate, others: list[Candidate]) -> list[Candidate]:
    """The other deaths of `first`'s host that are the same fault of a device the host's processes share
    (`HOST_DEVICE`: its NIC), reported within `_TOGETHER` of it: the device's one fault reaching each process."""
    host = _host(tl, first.rank)
    if host is None or first.from_exit_only or not _of_a_host_device(tl, first):
        return []
    return [
        c
        for c in others
        if c.cause is first.cause
        and _host(tl, c.rank) == host
        and not c.from_exit_only
        and _of_a_host_device(tl, c)
        and not (first.time is not None and c.time is not None and first.time.before(c.time, _TOGETHER))
    ]


_TOGETHER = timedelta(seconds=1)


def _of_a_host_device(tl: Timeline, c: Candidate) -> bool:
    return tl.events[c.evidence[0]].facts.get(HOST_DEVICE) == "1"


def _one_host_fault(tl: Timeline, f: Findings, first: Candidate, shared: list[Candidate]) -> None:
    """Ranks of one host that reported the same fault of a device they share within a second of each other: one
    fault of that host, not one rank's death first."""
    ranks = sorted(c.rank for c in [first, *shared] if c.rank is not None)
    host = _host(tl, first.rank)
    f.outcome = Outcome.UNDETERMINED
    f.first = FirstDeath(
        rank=None, cause=first.cause, rule=first.rule, host=host, detail=first.detail, method="tie",
        evidence=_evidence(tl, first.evidence[:1]),
    )  # fmt: skip
    f.reasoning[:] = [
        f"rank(s) {ranges(ranks)} of host {host} reported the same fault of a device they share ({first.detail}) "
        "within a second of each other: one fault of that host, not one rank's death first"
    ]
    f.cap(Confidence.LOW, "the ranks of one host met the same fault of their shared device together")
    _what_to_fetch(tl, f)


def _rivals(tl: Timeline, f: Findings, first: Candidate) -> list[int]:
    """The other ranks that died (of a cause of their own, or as an exit reports), or raised in a traceback cut
    before its exception."""
    ranks = {c.rank for c in f.candidates[1:] if c.rank is not None}
    ranks |= {e.rank for e in _cut_off(tl) if e.rank is not None and e.rank not in f.collateral}
    return sorted(ranks - {first.rank})


def _undetermined_excerpt(tl: Timeline, f: Findings, first: Candidate, e: Event, rivals: list[int]) -> None:
    """The earliest death is read from an excerpt's opening line, cut inside its report, and other ranks
    failed too: what came before the cut is not in the lines (the report's start, and any rank's earlier
    error), and the order in which ranks' output reaches a console is not the order they died in."""
    f.outcome = Outcome.UNDETERMINED
    f.first = FirstDeath(rank=None, cause=first.cause, rule=None, detail=first.detail, method="excerpt")
    where = f"{e.where.source}:{e.where.line}"
    f.reasoning[:] = [
        f"the lines open inside rank {first.rank}'s failure ({_label(first.cause)}, {where}), cut above it, and "
        f"rank(s) {ranges(rivals)} failed too: the lines before the cut may hold an earlier failure, and the "
        "order of the ranks' output is not the order of their deaths"
    ]
    f.cap(Confidence.LOW, "the lines begin inside a failure, and other ranks failed too")
    f.fetch_next.append(f"the lines before {where} (the whole log, from the job's start)")
    _what_to_fetch(tl, f)


def _prefer_one_that_stopped(tl: Timeline, f: Findings, skew: timedelta) -> None:
    """Of deaths the clocks cannot order, one its own log goes on from (the rank's progress lines after its
    cause, in the same file: an exception caught and logged, most likely) is not named before one its log
    ends at. File order alone proves nothing (stdout and stderr reach a file out of order), so it only
    breaks the tie."""
    first = f.candidates[0]
    if not _progress_after(tl, first):
        return
    unordered = [c for c in f.candidates[1:] if not _ordered(tl, first, c, skew)]
    stopped = next((c for c in unordered if not c.from_exit_only and not _progress_after(tl, c)), None)
    if stopped is None:
        return
    f.candidates.remove(stopped)
    f.candidates.insert(0, stopped)
    e = tl.events[first.evidence[0]]
    f.notes.append(
        f"rank {first.rank}'s {_label(first.cause)} ({e.where.source}:{e.where.line}) is followed by that rank's "
        f"progress lines in the same file (caught and logged?); rank {stopped.rank}'s log ends at its own"
    )


def _progress_after(tl: Timeline, c: Candidate) -> bool:
    """Whether the rank's log shows progress after its cause's line, in the same file (and, where both
    are timed, strictly after its time: a tee's stdout lands after the stderr it preceded)."""
    if c.rank is None or c.from_exit_only or not c.evidence or c.rank not in tl.ranks:
        return False
    e = tl.events[c.evidence[0]]
    for i in tl.ranks[c.rank].events:
        p = tl.events[i]
        if p.role is not Role.PROGRESS or p.where.source != e.where.source or p.where.line <= e.where.line:
            continue
        if p.time is None or e.time is None or p.time.earliest > e.time.latest:
            return True
    return False


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


def _death_host(r: RankState | None, decisive: Event) -> str | None:
    """The rank's host, unless the line it died on names another machine (a local rank taken as the
    global one where several hosts have it: the line's own host is where this one ran)."""
    if r is None or r.host is None:
        return decisive.host
    if decisive.host is not None and short_host(decisive.host) != short_host(r.host):
        return decisive.host
    return r.host


def _first_death(tl: Timeline, c: Candidate) -> FirstDeath:
    r = tl.ranks.get(c.rank) if c.rank is not None else None
    evidence = _evidence(tl, c.evidence)
    time, time_open = _before_a_noticed_death(tl, *c.reported)
    decisive = tl.events[c.evidence[0]]
    return FirstDeath(
        rank=c.rank,
        cause=c.cause,
        rule=decisive.read_by if decisive.rule == c.rule else c.rule,
        host=_death_host(r, decisive),
        pid=r.pid if r else None,
        time=time,
        time_open=time_open,
        phase=c.phase,
        detail=c.detail,
        evidence=evidence,
        method="exit_status" if c.from_exit_only else ("job_cause" if c.rank is None else "own_cause"),
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
    others' never issued the collective they are all waiting in. Not where another rank is stuck in an
    earlier one, which that rank did issue (its last completed work is below the laggard's last enqueued)."""
    status: dict[tuple[str, int], int] = {}
    done: dict[tuple[str, int], int] = {}
    for r in tl.ranks.values():
        for i in r.events:
            facts = tl.events[i].facts
            if "last_enqueued" in facts:
                key = (facts.get("pg", "0"), r.rank)
                status[key] = max(status.get(key, -1), int(facts["last_enqueued"]))
                if "last_completed" in facts:
                    done[key] = max(done.get(key, -1), int(facts["last_completed"]))
    groups: dict[str, dict[int, int]] = {}
    for (pg, rank), seq in status.items():
        groups.setdefault(pg, {})[rank] = seq
    for pg, seqs in sorted(groups.items()):
        low, high = min(seqs.values()), max(seqs.values())
        behind = sorted(rank for rank, seq in seqs.items() if seq == low)
        stuck_earlier = any(done.get((pg, rank), low) < low for rank in seqs if rank not in behind)
        if len(seqs) >= 2 and low < high and len(behind) == 1 and not stuck_earlier:
            stuck = done.get((pg, behind[0]), low) < low  # its own last collective never completed
            _name_sequence_culprit(tl, f, behind[0], low, high, pg, seqs, stuck)
            return True
    return False


def _name_sequence_culprit(
    tl: Timeline, f: Findings, rank: int, low: int, high: int, pg: str, seqs: dict[int, int], stuck: bool
) -> None:
    r = tl.ranks[rank]
    mine = [i for i in r.events if "last_enqueued" in tl.events[i].facts][:1]
    theirs = [
        i for other in seqs if other != rank for i in tl.ranks[other].events if "last_enqueued" in tl.events[i].facts
    ][:1]
    f.collateral.pop(rank, None)
    time, time_open = _bounded(tl, r.last_seen, None)  # it stopped after its last sign of life
    f.first = FirstDeath(
        rank=rank,
        cause=Cause.HANG,
        rule=None,
        method="sequence",
        host=r.host,
        pid=r.pid,
        time=time,
        time_open=time_open,
        detail=f"never issued collective {low + 1} of process group {pg}: its last enqueued work is {low}, "
        f"the others reached {high}",
        evidence=_evidence(tl, mine + theirs),
    )
    f.culprit_events = mine + theirs
    f.outcome = Outcome.HANG
    others = sorted(x for x in seqs if x != rank)
    f.reasoning.append(
        f"NCCL's watchdog status: rank {rank} last enqueued work {low} while rank(s) {ranges(others)} enqueued up "
        f"to {high}: rank {rank} never entered the collective the others timed out in"
    )
    if tl.world is None and stuck:
        f.cap(
            Confidence.MEDIUM,
            f"rank {rank} is itself waiting in work {low} and the job's size is not in the lines: "
            "a rank that left none may be what it waits for",
        )


_NO_SUSPECT = (
    "every rank seen reported a symptom (timeout or lost peer) and none left a cause: "
    "the culprit may be a rank whose log is missing, or another host"
)


def _name_hang(tl: Timeline, f: Findings) -> None:
    """No rank left a cause: the rank the others waited for, by elimination, votes, or lagging progress."""
    reporters = set(f.collateral)
    if not reporters:
        if not _name_by_votes(tl, f):
            _name_laggard(tl, f)
        return
    alive = _named_waiters(tl) | reporters
    suspects = [r for r in tl.ranks.values() if r.rank not in alive and r.rank not in f.clean]
    cause_of: dict[int, Cause] = {}
    if not suspects:  # a rank that left early with exit 0 while the others waited for it
        suspects = [r for r in tl.ranks.values() if r.rank in f.clean and r.completed is None and r.rank not in alive]
        cause_of = {r.rank: Cause.SILENT_EXIT for r in suspects}
    outside = _outside_the_collective(tl, reporters) if not suspects else None
    if outside is not None:  # it lost its peers only after the others had timed out waiting for it
        reporters.discard(outside)
        alive.discard(outside)
        f.collateral.pop(outside, None)
        suspects = [tl.ranks[outside]]
    voted = _votes(tl)
    unseen = sorted({rank for rank in (*_missing_ranks(tl), *tl.quiet) if rank not in alive})
    if voted is not None and voted not in alive:
        suspects = [_state_or_new(tl, voted)]
    elif not suspects and len(unseen) == 1:
        suspects = [_state_or_new(tl, unseen[0])]
    if not suspects:
        f.notes.append(_NO_SUSPECT)
        return
    culprit = min(suspects, key=_progress_key)
    if voted != culprit.rank and outside is None and (cut := _cut_off_of(tl, culprit)) is not None:
        f.notes.append(
            f"rank {culprit.rank} is the only rank that reported no wait, but its traceback at "
            f"{cut.where.source}:{cut.where.line} is cut off before its exception: it may report the same wait"
        )
        return  # not eliminated: what it raised is unknown, so it is not known to have reported nothing
    lost = sum(1 for r in reporters if _first_symptom_cause(tl, r) is Cause.PEER_LOST)
    vanished = lost > len(reporters) / 2 and culprit.torn_down is None  # stopped alive: it hung
    crash = report[0] if vanished and culprit.exit is None and (report := _unranked_crash_report(tl)) else None
    logged = _unranked_crash(tl) if vanished and culprit.exit is None and crash is None else None
    cause = cause_of.get(culprit.rank) or (
        signal_cause(crash) if crash else logged[0] if logged else Cause.SILENT_EXIT if vanished else Cause.HANG
    )
    naming = [i for i, e in enumerate(tl.events) if Effect.NAMES_CULPRIT in e.effects] if voted == culprit.rank else []
    evidence = naming[:1] + [i for i in culprit.events if tl.events[i].role is Role.PROGRESS][-1:]
    waits = [i for r in reporters for i in tl.ranks[r].events if is_symptom(tl.events[i])]
    evidence += sorted(waits, key=lambda i: (tl.events[i].cause is not Cause.COLLECTIVE_TIMEOUT, i))[:1]
    if culprit.torn_down is not None:
        evidence.append(culprit.torn_down)
    _name_culprit(tl, f, culprit, cause, evidence, "missing")
    stopped_alive = culprit.torn_down is not None and cause is Cause.HANG
    if voted is not None and voted == culprit.rank:
        f.reasoning.append(f"the waiting ranks' own messages name rank {culprit.rank} as the one they wait for")
        f.cap(Confidence.MEDIUM, "the culprit is named by the waiting ranks' messages, not by a line of its own")
    elif outside is not None:
        f.reasoning.append(
            f"rank {culprit.rank} never timed out in the collective the others timed out in: it only lost its "
            "peers after they had given up on it"
        )
        f.cap(Confidence.MEDIUM, "named because it reported a lost peer, not a timeout, after the others timed out")
    elif len(suspects) == 1:
        f.reasoning.append(f"rank {culprit.rank} is the only rank that did not report a timeout or lost peer")
        if not (len(reporters) >= 2 and stopped_alive):
            f.cap(Confidence.MEDIUM, "named by elimination: the only rank that did not report waiting")
    else:
        f.reasoning.append(
            f"rank {culprit.rank} made the least progress of the {len(suspects)} ranks that reported nothing"
        )
        f.cap(Confidence.LOW, "several ranks reported nothing; the one with the least progress is named")
    if culprit.rank in tl.quiet:
        f.cap(Confidence.MEDIUM, f"rank {culprit.rank} left no failure line: named because its lines show it ran")
    elif culprit.rank not in tl.ranks or not culprit.events:
        f.cap(
            Confidence.MEDIUM, f"rank {culprit.rank} left no line at all: named because the job's size says it exists"
        )
    f.reasoning.append(
        f"{len(reporters)} rank(s) ({ranges(sorted(reporters))}) waited in a collective for it and reported it"
    )
    if stopped_alive:
        f.reasoning.append(f"rank {culprit.rank} was still alive when the launcher stopped it: it hung, it did not die")
    if crash:
        f.reasoning.append(
            f"the only crash signal an exit report tied to no rank gives is {signal_name(crash)}, and rank "
            f"{culprit.rank} is the only rank without a failure of its own: taken as its death"
        )
    if logged and f.first is not None:
        e = tl.events[logged[1]]
        f.first = replace(f.first, evidence=(*f.first.evidence, Evidence(e.where, e.text)))
        f.reasoning.append(
            f"the only crash logged on a line tied to no rank is {_label(logged[0])} ({e.where.source}:"
            f"{e.where.line}), and rank {culprit.rank} is the only rank without a failure of its own: "
            "taken as its death"
        )


_CRASH_CAUSES = (Cause.SEGFAULT, Cause.BUS_ERROR, Cause.ABORT)


def _unranked_crash(tl: Timeline) -> tuple[Cause, int] | None:
    """The one kind of death logged on lines tied to no rank (faulthandler's dump with no prefix, the
    kernel's OOM kill of a pid no line maps), and its first line; None when there are several kinds."""
    found = [
        (e.cause, i)
        for i, e in enumerate(tl.events)
        if e.rank is None and e.role is Role.CAUSE and e.cause in (*_CRASH_CAUSES, Cause.HOST_OOM)
    ]
    return found[0] if found and len({c for c, _ in found}) == 1 else None


def _by_relayed_index_only(tl: Timeline, rank: int, e: Event) -> bool:
    """Whether a rank is known only by the index a launcher relaying its child's failure gave it (mp.spawn's `--
    Process N terminated`): a local index on one node of several, which no line of the rank's own confirms."""
    return e.facts.get("spawn_raised") == "1" and all(
        tl.events[i].rank_from in (None, "launcher") for i in tl.ranks[rank].events
    )


def _launch_failed(tl: Timeline) -> Event | None:
    """The first line of a launcher saying it could not start the job (`LAUNCH_FAILED`), where no rank spoke."""
    if any(e.rank is not None for e in tl.events):
        return None
    return next((e for e in tl.events if e.facts.get(LAUNCH_FAILED) == "1"), None)


def _launcher_stopped(tl: Timeline) -> Event | None:
    """The first line of a launcher saying it was stopped from outside (`STOPPED_FROM_OUTSIDE`): by a stop
    signal where it names the signal it got, or by the preemption it names."""
    return next((e for e in tl.events if e.facts.get(STOPPED_FROM_OUTSIDE) == "1" and _a_stop(e.facts)), None)


def _a_stop(facts: Mapping[str, str]) -> bool:
    return "signal" not in facts or signal_number(facts["signal"]) in OUTSIDE_STOPS


def _unranked_crash_report(tl: Timeline) -> tuple[int, int] | None:
    """The one crash signal in exit reports and job-level return codes tied to no rank, such as the DeepSpeed
    launcher's `exits with return code = -11`, and the first event that reports it. Not a kill, which may be the
    launcher's own, unless the line gives the first failed process's own status (`FIRST_STATUS`)."""
    reports = sorted(
        [*tl.loose_exits, *(i for i, e in enumerate(tl.events) if e.rank is None and Effect.JOB_END in e.effects)]
    )
    found = [(n, i) for i in reports if (n := as_signal(exit_code(tl.events[i].facts))) is not None]
    if not found or len({n for n, _ in found}) > 1:
        return None
    cause, first = signal_cause(found[0][0]), tl.events[found[0][1]]
    if cause in _CRASH_CAUSES or (cause is Cause.KILLED and first.facts.get(FIRST_STATUS) == "1"):
        return found[0]
    return None


def _name_culprit(tl: Timeline, f: Findings, culprit: RankState, cause: Cause, evidence: list[int], how: str) -> None:
    time, time_open = _bounded(tl, culprit.last_seen, None)  # it went quiet after its last sign of life
    if cause is not Cause.HANG:  # it vanished: a death, the first
        time, time_open = _before_a_noticed_death(tl, time, time_open)
    f.collateral.pop(culprit.rank, None)
    f.torn_down.pop(culprit.rank, None)
    f.clean.discard(culprit.rank)
    f.outcome = Outcome.HANG if cause is Cause.HANG else Outcome.FIRST_DEATH
    f.first = FirstDeath(
        rank=culprit.rank,
        cause=cause,
        rule=None,
        method=how,
        host=culprit.host,
        pid=culprit.pid,
        time=time,
        time_open=time_open,
        detail=_hang_detail(culprit, cause),
        evidence=_evidence(tl, evidence),
    )
    f.culprit_events = evidence


def _name_by_votes(tl: Timeline, f: Findings) -> bool:
    """No rank's line reported waiting, but lines that name whom they wait for agree on one rank
    (a stall inspector's missing ranks, a store timeout naming the root)."""
    voted = _votes(tl)
    if voted is None or voted in f.clean:
        return False
    naming = [i for i, e in enumerate(tl.events) if Effect.NAMES_CULPRIT in e.effects][:2]
    ready = [i for i, e in enumerate(tl.events) if Effect.NAMES_WAITER in e.effects][:2]
    _name_culprit(tl, f, _state_or_new(tl, voted), Cause.HANG, naming or ready, "named")
    if naming:
        f.reasoning.append(f"the waiting lines name rank {voted} as the one they wait for, and nothing contradicts it")
    else:
        f.reasoning.append(f"every list of ready ranks leaves out rank {voted}: the others wait for it")
    f.cap(Confidence.MEDIUM, "the culprit is named by the waiting ranks' messages, not by a line of its own")
    if not naming and tl.world is None:
        f.cap(Confidence.LOW, "the job's size is not in the lines: a rank above those listed may be missing too")
    return True


def _name_laggard(tl: Timeline, f: Findings) -> None:
    """A job stopped from outside with no cause and no waiting rank: the rank whose progress lags
    behind every other is the likely hang, at most at medium."""
    if not failure_seen(tl):
        return
    stepped = [r for r in tl.ranks.values() if r.last_step is not None and r.rank not in f.clean]
    if len(stepped) < 2:
        return
    stepped.sort(key=_progress_key)
    laggard, next_slowest = stepped[0], stepped[1]
    if laggard.last_step is None or next_slowest.last_step is None or laggard.last_step >= next_slowest.last_step:
        return
    evidence = [i for i in laggard.events if tl.events[i].role is Role.PROGRESS][-1:]
    _name_culprit(tl, f, laggard, Cause.HANG, evidence, "lagging")
    f.reasoning.append(
        f"the job was stopped with no cause logged; rank {laggard.rank} reached step {laggard.last_step}, "
        f"every other rank at least {next_slowest.last_step}"
    )
    f.cap(Confidence.MEDIUM, "named only because its progress lags: the job was stopped from outside")


def _outside_the_collective(tl: Timeline, reporters: set[int]) -> int | None:
    """Every rank reported a symptom: those that timed out were inside the collective; the one rank
    that only lost its peers, no earlier than the first timeout, was not in it (a straggler)."""
    timed_out = [r for r in reporters if _first_symptom_cause(tl, r) is Cause.COLLECTIVE_TIMEOUT]
    lost = [r for r in reporters if _first_symptom_cause(tl, r) is Cause.PEER_LOST]
    if len(lost) != 1 or len(timed_out) < 1 or len(timed_out) + 1 != len(reporters):
        return None
    first_timeout = min((t for r in timed_out if (t := _first_symptom_time(tl, r)) is not None), default=None)
    when = _first_symptom_time(tl, lost[0])
    if first_timeout is not None and when is not None and when < first_timeout:
        return None
    return lost[0]


def _first_symptom_time(tl: Timeline, rank: int) -> datetime | None:
    for i in tl.ranks[rank].events:
        e = tl.events[i]
        if is_symptom(e):
            return e.time.earliest if e.time is not None else None
    return None


def _state_or_new(tl: Timeline, rank: int) -> RankState:
    return tl.ranks.get(rank) or RankState(rank)


def _first_symptom_cause(tl: Timeline, rank: int) -> Cause | None:
    events = tl.ranks[rank].events
    return next((tl.events[i].cause for i in events if is_symptom(tl.events[i])), None)


def _votes(tl: Timeline) -> int | None:
    """The rank that symptom lines name as the one they wait for, when they agree."""
    named: set[int] = set()
    for e in tl.events:
        if Effect.NAMES_CULPRIT not in e.effects:
            continue
        if here := _culprits(e):
            named |= here
        elif (local := e.facts.get("culprit_local_rank", "")).isdigit() and e.rank is not None:
            named.add(int(local) + (e.rank - e.rank % _node_width(tl)))
    if not named:
        return _left_out(tl)
    return next(iter(named)) if len(named) == 1 else None


def _left_out(tl: Timeline) -> int | None:
    """The one rank every list of ready ranks leaves out (Horovod's `NAME [ready ranks: 0, 1, 3]`), among the
    ranks that must exist: the job's world size where known, else those below the highest rank listed. Only
    symptom lines count: a rank waiting at start-up (a context line) may wait for one that never started."""
    lists = [
        set(expand_ranks(e.facts["ranks"]))
        for e in tl.events
        if Effect.NAMES_WAITER in e.effects and e.role is Role.SYMPTOM
    ]
    left: set[int] = set()
    for ready in lists:
        top = tl.world if tl.world is not None else max(ready)
        left |= set(range(min(top, 100_000))) - ready
    return next(iter(left)) if len(left) == 1 else None


def _culprits(e: Event) -> set[int]:
    """The global ranks a symptom line names as the ones it waits for."""
    if Effect.NAMES_CULPRIT not in e.effects:
        return set()
    if e.facts.get("culprit", "").isdigit():
        return {int(e.facts["culprit"])}
    return set(expand_ranks(e.facts["culprits"])) if "culprits" in e.facts else set()


def _node_width(tl: Timeline) -> int:
    """Ranks per node, when every host holds the same number of them (else 1: local equals global)."""
    per_host: dict[str, int] = {}
    for r in tl.ranks.values():
        if r.host:
            per_host[r.host] = per_host.get(r.host, 0) + 1
    widths = set(per_host.values())
    return widths.pop() if len(widths) == 1 and len(per_host) > 1 else max(len(tl.ranks), 1)


def _named_waiters(tl: Timeline) -> set[int]:
    return {rank for e in tl.events if Effect.NAMES_WAITER in e.effects for rank in expand_ranks(e.facts["ranks"])}


def _hang_detail(r: RankState, cause: Cause) -> str:
    step = f" after step {r.last_step}" if r.last_step is not None else ""
    seen = f", last seen {r.last_seen.strftime('%H:%M:%S')}" if r.last_seen else ""
    if cause is Cause.HANG:
        what, taken = "stopped making progress", ""
    elif cause is Cause.SILENT_EXIT:
        what, taken = "vanished without a message", ""
    else:  # a crash seen where no rank is named (a launcher's return code, an unprefixed dump)
        what, taken = "vanished", f"; {_label(cause)} tied to no rank is taken as its death"
    return f"{what}{step}{seen}{taken}; the other ranks waited for it"


def _progress_key(r: RankState) -> tuple[int, datetime]:
    step = r.last_step if r.last_step is not None else -1
    seen = r.last_seen.replace(tzinfo=None) if r.last_seen else datetime.min
    return (step, seen)


def _rule_out(tl: Timeline, f: Findings, skew: timedelta) -> None:
    first = f.first.rank if f.first else None
    named = f.candidates[0] if f.first is not None and f.candidates and f.candidates[0].rank == first else None
    tied = f.outcome is Outcome.UNDETERMINED  # a tie, an excerpt, a host's one fault: none of them is ruled out
    for c in f.candidates[1:] if f.first is not None and not tied else []:
        if named is None or _ordered(tl, named, c, skew):
            why = f"it died of {_label(c.cause)} too, but later ({_when(c.time)})"
        else:  # see the note `_name_death` wrote
            why = f"it died of {_label(c.cause)} too ({_when(c.time)}); the clocks cannot order it against rank {first}"
        f.ruled_out.append(RuledOut(c.rank, why))
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


_STAMP = timedelta(milliseconds=1)  # a stamp's own width: one time, not an interval


def _when(span: TimeSpan | None) -> str:
    if span is None:
        return "time unknown"
    earliest, latest = (t.strftime("%H:%M:%S.%f")[:-3] for t in (span.earliest, span.latest))
    return earliest if span.latest - span.earliest <= _STAMP else f"{earliest}–{latest}"


def ranges(ranks: Sequence[int]) -> str:
    """`0-2, 4, 6-7` for [0, 1, 2, 4, 6, 7]."""
    spans: list[tuple[int, int]] = []
    for r in ranks:
        if spans and r == spans[-1][1] + 1:
            spans[-1] = (spans[-1][0], r)
        else:
            spans.append((r, r))
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
