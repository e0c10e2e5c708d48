"""The data model shared by every stage: small, frozen, typed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum

from rankautopsy.records import pickled_fast, record


class Cause(StrEnum):
    """Root causes and symptoms; the values are the stable ids of the JSON contract."""

    HOST_OOM = "host_oom"
    CUDA_OOM = "cuda_oom"
    PYTHON_EXCEPTION = "python_exception"
    SEGFAULT = "segfault"
    ABORT = "abort"
    BUS_ERROR = "bus_error"
    CUDA_ERROR = "cuda_error"
    GPU_HARDWARE = "gpu_hardware"
    NCCL_ERROR = "nccl_error"
    KILLED = "killed"
    SILENT_EXIT = "silent_exit"
    HANG = "hang"
    TIME_LIMIT = "time_limit"
    # symptoms: consequences of another rank's death, never a root cause while a cause exists
    COLLECTIVE_TIMEOUT = "collective_timeout"
    PEER_LOST = "peer_lost"
    LAUNCHER_TEARDOWN = "launcher_teardown"
    WATCHDOG_ABORT = "watchdog_abort"
    # neither: progress and context lines
    PROGRESS = "progress"
    CONTEXT = "context"

    @property
    def is_symptom(self) -> bool:
        return self in _SYMPTOMS


_SYMPTOMS = frozenset({Cause.COLLECTIVE_TIMEOUT, Cause.PEER_LOST, Cause.LAUNCHER_TEARDOWN, Cause.WATCHDOG_ABORT})


class Role(StrEnum):
    CAUSE = "cause"
    SYMPTOM = "symptom"
    PROGRESS = "progress"
    CONTEXT = "context"


class Effect(StrEnum):
    """What a rule's line does to the timeline, beyond its cause and role. The facts each effect reads
    are named in rules/README.md; the timeline and the verdict read effects and facts, never rule ids."""

    EXIT = "exit"  # a process or rank ended: rank|ranks|local_rank|pid, exitcode|signal, oom
    TEARDOWN = "teardown"  # the launcher is stopping a survivor: rank|ranks|local_rank|pid, signal
    JOB_END = "job_end"  # the launcher or scheduler is ending the whole job
    AFTER_DEATH = "after_death"  # a process of the job has died by now: the first death came before this line
    COMPLETE = "complete"  # the emitting rank finished its work
    IDENTITY = "identity"  # ties rank|comm_rank+nranks|local_rank, pid, host, busid together
    NAMES_CULPRIT = "names_culprit"  # a symptom that names whom it waits for: culprit|culprits|culprit_local_rank
    NAMES_WAITER = "names_waiter"  # names ranks that are alive and waiting: ranks (their complement is suspect)
    STALLED = "stalled"  # printed by a process alive and stuck (a live stack dump, a hang watchdog): the job hung
    PREFIX = "prefix"  # a launcher's tag at the start of each line: rank|local_rank|host; stripped before matching


class Outcome(StrEnum):
    """What the verdict could establish; the values are the stable ids of the JSON contract."""

    CLEAN = "clean"  # positive evidence that every rank finished, and no failure line
    FIRST_DEATH = "first_death"  # a first death is named (its rank may be null for a job-wide cause)
    HANG = "hang"  # a culprit that stopped without dying
    UNDETERMINED = "undetermined"  # the job failed or was stopped, but the first death cannot be named
    NO_FAILURE = "no_failure"  # no failure seen, and no positive evidence that every rank finished


class StreamKind(StrEnum):
    RANK_LOG = "rank_log"  # one rank's output
    CONSOLE = "console"  # a launcher console: ranks interleaved, launcher lines unprefixed
    KERNEL = "kernel"  # dmesg / journalctl -k / kern.log
    ERROR_JSON = "error_json"  # torchrun's per-rank error file


class Confidence(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class Fate(StrEnum):
    FIRST_DEATH = "first_death"  # the culprit (a death, or a hang culprit)
    DIED = "died"  # died of its own cause, but after the first death
    COLLATERAL = "collateral"  # timed out / lost its peer because of the first death
    TORN_DOWN = "torn_down"  # killed by the launcher or scheduler during teardown
    EXITED_CLEAN = "exited_clean"
    RUNNING = "running"  # no sign of an end: still running, or its end was not logged
    UNKNOWN = "unknown"


class TimeOpen(StrEnum):
    """The end of a first death's time that no stamped line bounds: its `time` is closed there only by
    where the logs begin or end."""

    ABOVE = "above"  # it died at or after time.earliest
    BELOW = "below"  # it died at or before time.latest


class Phase(StrEnum):
    STARTUP = "startup"  # before the first training progress
    TRAINING = "training"
    SHUTDOWN = "shutdown"  # after training completed


@pickled_fast
@dataclass(frozen=True, slots=True)
class TimeSpan:
    """When something happened: an interval of aware UTC datetimes (a point has earliest == latest)."""

    earliest: datetime
    latest: datetime

    @classmethod
    def point(cls, at: datetime, resolution: timedelta = timedelta(0)) -> TimeSpan:
        return cls(at, at + resolution)

    @property
    def mid(self) -> datetime:
        return self.earliest + (self.latest - self.earliest) / 2

    def before(self, other: TimeSpan, skew: timedelta = timedelta(0)) -> bool:
        """True when this interval certainly ends before the other begins, allowing for skew.
        A stamp's interval is half-open ([07:00:01, 07:00:02) for a seconds stamp): touching is before."""
        end = self.latest + skew
        return end < other.earliest or (end == other.earliest and self.earliest < self.latest)


@pickled_fast
@dataclass(frozen=True, slots=True)
class Location:
    """Where a line is: its input and line number."""

    source: str  # the input's display path
    line: int  # 1-based


@pickled_fast
@dataclass(frozen=True, slots=True)
class Evidence:
    """A line shown as evidence, where it is."""

    where: Location
    text: str  # sanitized log text


@pickled_fast
@dataclass(frozen=True, slots=True, kw_only=True)
class Event:
    """One fact found in the logs by one rule (a multi-line event is still one Event)."""

    rule: str
    cause: Cause
    role: Role
    where: Location
    text: str
    rank: int | None = None  # the rank that emitted it (never a rank merely mentioned)
    host: str | None = None
    pid: int | None = None
    time: TimeSpan | None = None
    facts: Mapping[str, str] = field(default_factory=dict)
    lines: tuple[Evidence, ...] = ()  # extra evidence lines of a multi-line event
    rank_from: str | None = None  # how the rank was attributed: path, prefix, excepthook, pid, launcher, content
    effects: frozenset[Effect] = frozenset()  # its rule's, and those of the rule that classified it

    @property
    def read_by(self) -> str:
        """The rule whose reading the event is: the one that classified its line (a cause rule reading an
        exception's `Type: message`), else its own."""
        return self.facts.get("classified_by") or self.rule

    @property
    def stamped(self) -> bool:
        """Whether its time is its line's own stamp, not one its neighbours lend it (`NEIGHBOURS_TIME`)."""
        return self.time is not None and not NEIGHBOURS_TIME & self.facts.keys()


# The facts of an event whose line has no stamp and whose time its stamped neighbours give (assemble.py).
NEIGHBOURS_TIME = frozenset({"time_inferred", "time_open"})
# The fact of an event read from an input's opening line, cut inside it (an `at_start` rule): lines before are missing.
OPENS_CUT = "opens_cut"
# The static fact of a rule whose line is inside a longer report whose head line names the cause (c10's
# `Exception raised from c10_cuda_check_implementation` under `CUDA error: ...`): it speaks only when no cause
# or exception of its channel was read in the REPORT_LINES lines before it (assemble.py).
REPORT_TAIL = "report_tail"
REPORT_LINES = 60
# The static fact of a rule whose line, inside an error report, names what the report's head cause was of (the
# network layer at the bottom of MPICH's error stack under its `Abort(...)` line): the nearest cause of the same
# process in the REPORT_LINES lines before it takes this line's cause and shows it as evidence (assemble.py).
REFINES = "refines"
# The static fact of a rule whose line says that a launcher itself received a stop signal (`signal`) from outside
# and stopped the job (torchrun's `Received 15 death signal`), or that the scheduler preempted it (submitit's
# `this job is preempted`, no `signal`): where no rank's own failure is seen, the job was killed, by whom the logs
# do not say (verdict.py).
STOPPED_FROM_OUTSIDE = "stopped_from_outside"
# The static fact of a rule whose line says that the launcher could not start the job (mpirun's daemons did not
# start, DeepSpeed's runner could not ssh to a host): no rank ran there, so none died first; the fix is that
# rule's remediation (verdict.py, report.py).
LAUNCH_FAILED = "launch_failed"
# The static fact of a rule whose line says that the process went on without what just failed (`falls_back: CAUSE`:
# a network plugin's set-up failed and NCCL uses its sockets): the events of that cause the same process reported in
# the `REPORT_LINES` lines before it were no death (assemble.py).
FALLS_BACK = "falls_back"
# The static fact of a rule whose line gives the exit status of the job's first failed process, as that process ended
# (the DeepSpeed launcher's `exits with return code = N`, recorded before it stops the others): a kill signal in it was
# not the launcher's teardown (verdict.py).
FIRST_STATUS = "first_status"
# The static fact of a rule whose line reports another process's end (Ray's memory-monitor kill, told by the caller
# that got its error): the process that printed it, as its label says, is not its subject (assemble.py).
ABOUT_ANOTHER = "about_another"
# The static fact of a rule whose line reports a fault of a device that the processes of a host share (a NIC's
# catastrophic error): the ranks of one host that report it within a second of each other met one fault of that
# host, and none of them died first (verdict.py).
HOST_DEVICE = "host_device"
# The static fact of a rule whose exception relays a child's failure in its message (spawn's
# `ProcessRaisedException: ` over `-- Process N terminated with the following error:`): where the relayed report is
# cut off, a worker raised and the lines say neither which nor what (assemble.py: `cut_off: relay`).
RELAYS = "relays"


@record(kw_only=True)
class Input:
    path: str
    kind: StreamKind
    rank: int | None = None
    host: str | None = None
    lines: int = 0


@record
class SkippedInput:
    path: str
    reason: str


@record(kw_only=True)
class RankReport:
    rank: int
    fate: Fate
    host: str | None = None
    pid: int | None = None
    exitcode: int | None = None
    last_seen: datetime | None = None
    last_step: int | None = None
    summary: str = ""  # one line: what happened to this rank
    events: tuple[int, ...] = ()  # indices into Diagnosis.events


@record(kw_only=True)
class FirstDeath:
    rank: int | None
    cause: Cause
    rule: str | None  # the rule of the decisive event; None when inferred from the whole timeline
    host: str | None = None
    pid: int | None = None
    time: TimeSpan | None = None
    time_open: TimeOpen | None = None  # the end of `time` that is only where the logs begin or end
    phase: Phase = Phase.TRAINING
    detail: str = ""  # e.g. "ValueError: bad sample 1234"
    evidence: tuple[Evidence, ...] = ()
    # own_cause, exit_status, job_cause, sequence, missing, lagging, named, unattributed, tie, stalled
    method: str = "own_cause"


@record
class RuledOut:
    rank: int | None
    why: str


@record(kw_only=True)
class Verdict:
    outcome: Outcome
    first_death: FirstDeath | None
    confidence: Confidence
    reasoning: tuple[str, ...] = ()
    ruled_out: tuple[RuledOut, ...] = ()
    remediation: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # what could not be decided or read
    caps: tuple[str, ...] = ()  # why the confidence is not higher (the rules of README's "Confidence")
    unattributed: tuple[Unattributed, ...] = ()  # causes seen that no rank could be tied to
    not_first: tuple[int, ...] = ()  # ranks that certainly did not die first
    fetch_next: tuple[str, ...] = ()  # what evidence would settle it


@record
class Unattributed:
    """A cause seen in the logs that no rank could be tied to ("a CUDA OOM, rank unknown")."""

    cause: Cause
    where: Location
    text: str
    told: Evidence | None = None  # the line that says what it was, where that is not `where` (an exception's)


@record(kw_only=True)
class Diagnosis:
    verdict: Verdict
    ranks: tuple[RankReport, ...]
    events: tuple[Event, ...]
    inputs: tuple[Input, ...]
    skipped: tuple[SkippedInput, ...] = ()
    rule_titles: Mapping[str, str] = field(default_factory=dict)  # rule id -> title, for the reports' words


class Assembly(StrEnum):
    """How a rule's first line grows into a multi-line event."""

    TRACEBACK = "traceback"  # Python traceback up to its final `Type: message` line
    FAULTHANDLER = "faulthandler"  # `Fatal Python error: ...` and the thread dump under it
    TORCHRUN_TABLE = "torchrun-table"  # one `[N]:` block of torchrun's ChildFailedError table
    CONTINUED = "continued"  # a message the emitter breaks over two lines: the rule's pattern re-run on both
    RECORD = "record"  # a structured death record: its exc_type/exc_msg facts classify it like a traceback's last line
    WHAT = "what"  # C++'s `terminate called after throwing ...` and the `what():` line under it, which classifies it


@record(kw_only=True)
class Example:
    line: str
    facts: Mapping[str, str] = field(default_factory=dict)  # the facts expected (subset check: exact values)


@record(kw_only=True)
class Rule:
    """A rule of a pack, as loaded and validated. Compiled regexes live in the matcher, not here."""

    id: str  # pack.kebab-case
    title: str
    cause: Cause
    role: Role
    pattern: str  # `regex` module syntax; matched against one line with its prefixes stripped
    ignorecase: bool = False
    streams: frozenset[StreamKind] = frozenset()  # empty: every stream kind
    assemble: Assembly | None = None
    why: str = ""
    falsepositives: tuple[str, ...] = ()
    remediation: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    status: str = "stable"
    since: str = ""
    aliases: tuple[str, ...] = ()
    effects: frozenset[Effect] = frozenset()
    facts: tuple[tuple[str, str], ...] = ()  # what every line of the rule states, under what it captures
    at_start: bool = False  # matches only an input's opening line: an excerpt cut inside what it reads
    match_examples: tuple[Example, ...] = ()
    no_match_examples: tuple[str, ...] = ()
    source: Location | None = None  # pack file and line of the rule's `id:`
    builtin: bool = True
