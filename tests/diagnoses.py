"""Hand-built diagnoses shared by the renderer tests: fixed data, no current time."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from rankautopsy.model import (
    Cause,
    Confidence,
    Diagnosis,
    Effect,
    Event,
    Evidence,
    Fate,
    FirstDeath,
    Input,
    Location,
    Outcome,
    Phase,
    RankReport,
    Role,
    RuledOut,
    SkippedInput,
    StreamKind,
    TimeSpan,
    Verdict,
)


def at(hms: str, day: int = 29) -> datetime:
    h, m, s = hms.split(":")
    sec = float(s)
    return datetime(2026, 11, day, int(h), int(m), int(sec), round((sec % 1) * 1e6), tzinfo=UTC)


def span(hms: str, resolution: float = 0.0) -> TimeSpan:
    return TimeSpan.point(at(hms), timedelta(seconds=resolution))


def loc(source: str, line: int) -> Location:
    return Location(source, line)


# ---- scenario 1: uncaught Python exception on rank 2, collateral timeouts, torchrun teardown ----


def _nccl_timeout(rank: int, line: int, when: str) -> Event:
    text = (
        f"[rank{rank}]:[E1129 {when} ProcessGroupNCCL.cpp:632] [Rank {rank}] Watchdog caught "
        "collective operation timeout: WorkNCCL(SeqNum=4521, OpType=ALLREDUCE, NumelIn=1, "
        "NumelOut=1, Timeout(ms)=600000) ran for 600034 milliseconds before timing out."
    )
    return Event(
        rule="nccl.watchdog-timeout",
        cause=Cause.COLLECTIVE_TIMEOUT,
        role=Role.SYMPTOM,
        where=loc(f"logs/rank_{rank}.log", line),
        text=text,
        rank=rank,
        host="node01" if rank < 2 else "node02",
        pid=2000 + rank,
        time=span(when),
        facts={"seq": "4521", "op": "ALLREDUCE", "timeout_ms": "600000"},
        rank_from="path",
    )


def exception_diagnosis() -> Diagnosis:
    traceback = (
        Evidence(loc("logs/rank_2.log", 1201), "Traceback (most recent call last):"),
        Evidence(loc("logs/rank_2.log", 1207), '  File "train.py", line 88, in collate'),
        Evidence(loc("logs/rank_2.log", 1208), "ValueError: bad sample 1234"),
    )
    events = (
        Event(
            rule="torchrun.launch",
            cause=Cause.CONTEXT,
            role=Role.CONTEXT,
            where=loc("logs/torchrun.log", 3),
            time=span("07:00:00.000"),
            host="node01",
            text="torch.distributed.run: Starting elastic_operator with launch configs: nproc_per_node=2",
        ),
        Event(
            rule="pytorch.step",
            cause=Cause.PROGRESS,
            role=Role.PROGRESS,
            where=loc("logs/rank_2.log", 1190),
            text="step 1233 loss=2.4411",
            rank=2,
            host="node02",
            pid=2002,
            time=span("07:01:01.002"),
            facts={"step": "1233"},
            rank_from="path",
        ),
        Event(
            rule="python.uncaught-exception",
            cause=Cause.PYTHON_EXCEPTION,
            role=Role.CAUSE,
            where=loc("logs/rank_2.log", 1201),
            text="ValueError: bad sample 1234",
            rank=2,
            host="node02",
            pid=2002,
            time=span("07:01:02.345"),
            lines=traceback,
            facts={"type": "ValueError", "message": "bad sample 1234"},
            rank_from="path",
        ),
        _nccl_timeout(0, 5120, "07:11:02.380"),
        _nccl_timeout(3, 5098, "07:11:02.391"),
        Event(
            rule="torchrun.closing-signal",
            cause=Cause.LAUNCHER_TEARDOWN,
            role=Role.SYMPTOM,
            where=loc("logs/torchrun.log", 88),
            rank=1,
            host="node01",
            pid=2001,
            time=span("07:11:02.950"),
            text="torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 2001 closing signal SIGTERM",
            facts={"pid": "2001", "signal": "SIGTERM"},
            rank_from="launcher",
        ),
        Event(
            rule="torchrun.child-failed",
            cause=Cause.PYTHON_EXCEPTION,
            role=Role.CONTEXT,
            where=loc("logs/torchrun.log", 97),
            rank=2,
            host="node02",
            pid=2002,
            time=span("07:11:05", 1),
            text="[0]: time: 2026-11-29_07:11:05 rank: 2 (local_rank: 0) exitcode: 1 (pid: 2002)",
            facts={"rank": "2", "exitcode": "1", "pid": "2002"},
            rank_from="launcher",
        ),
    )
    ranks = (
        RankReport(
            rank=0,
            fate=Fate.COLLATERAL,
            host="node01",
            pid=2000,
            exitcode=-6,
            last_seen=at("07:11:02.380"),
            last_step=1234,
            summary="timed out in all_reduce (SeqNum 4521) after 600 s",
            events=(3,),
        ),
        RankReport(
            rank=1,
            fate=Fate.TORN_DOWN,
            host="node01",
            pid=2001,
            exitcode=-15,
            last_seen=at("07:01:02.101"),
            last_step=1234,
            summary="killed by torchrun (SIGTERM) during teardown",
            events=(5,),
        ),
        RankReport(
            rank=2,
            fate=Fate.FIRST_DEATH,
            host="node02",
            pid=2002,
            exitcode=1,
            last_seen=at("07:01:02.345"),
            last_step=1233,
            summary="ValueError: bad sample 1234",
            events=(1, 2, 6),
        ),
        RankReport(
            rank=3,
            fate=Fate.COLLATERAL,
            host="node02",
            pid=2003,
            exitcode=-6,
            last_seen=at("07:11:02.391"),
            last_step=1234,
            summary="timed out in all_reduce (SeqNum 4521) after 600 s",
            events=(4,),
        ),
    )
    verdict = Verdict(
        outcome=Outcome.FIRST_DEATH,
        first_death=FirstDeath(
            rank=2,
            cause=Cause.PYTHON_EXCEPTION,
            rule="python.uncaught-exception",
            host="node02",
            pid=2002,
            time=span("07:01:02.345"),
            phase=Phase.TRAINING,
            detail="ValueError: bad sample 1234",
            evidence=traceback,
        ),
        confidence=Confidence.HIGH,
        reasoning=(
            "Rank 2 raised ValueError at 07:01:02.345 and its log ends there; it never reached step 1234.",
            "Ranks 0 and 3 timed out in all_reduce SeqNum 4521 at 07:11:02, 600 s later: the NCCL timeout.",
            "torchrun reported rank 2 as the first failure (exitcode 1) and tore down rank 1.",
        ),
        ruled_out=(
            RuledOut(0, "its collective timeout came 600 s after rank 2 died (symptom, not cause)"),
            RuledOut(1, "killed by torchrun with SIGTERM during teardown"),
            RuledOut(3, "its collective timeout came 600 s after rank 2 died (symptom, not cause)"),
        ),
        remediation=(
            "Fix the cause: find sample 1234 in the dataset and fix or filter it; the traceback "
            "points at collate() in train.py line 88.",
            "Fail fast next time: wrap the data loading in a try/except that logs the sample index and re-raises.",
            "Make it visible sooner: set TORCH_NCCL_ASYNC_ERROR_HANDLING=1 and a shorter NCCL "
            "timeout so the "
            "survivors stop within minutes, not 10 minutes.",
        ),
    )
    inputs = (
        *(
            Input(
                path=f"logs/rank_{r}.log",
                kind=StreamKind.RANK_LOG,
                rank=r,
                host="node01" if r < 2 else "node02",
                lines=5200 + r,
            )
            for r in range(4)
        ),
        Input(path="logs/torchrun.log", kind=StreamKind.CONSOLE, host="node01", lines=112),
    )
    skipped = (SkippedInput("logs/core.2002", "binary file (not a log)"),)
    return Diagnosis(verdict=verdict, ranks=ranks, events=events, inputs=inputs, skipped=skipped)


# ---- scenario 2: the kernel OOM-killer takes rank 3, found in dmesg and joined by pid ----


def oom_diagnosis() -> Diagnosis:
    oom_kill = Evidence(
        loc("dmesg.txt", 811),
        "[Sun Nov 29 07:01:02 2026] oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,"
        "mems_allowed=0-1,global_oom,task_memcg=/user.slice,task=python,pid=4242,uid=1000",
    )
    killed = Evidence(
        loc("dmesg.txt", 812),
        "[Sun Nov 29 07:01:02 2026] Out of memory: Killed process 4242 (python) "
        "total-vm:412345678kB, "
        "anon-rss:398765432kB, file-rss:0kB, shmem-rss:1024kB, UID:1000 pgtables:801234kB "
        "oom_score_adj:0",
    )
    events = (
        Event(
            rule="kernel.oom-kill-constraint",
            cause=Cause.HOST_OOM,
            role=Role.CONTEXT,
            where=oom_kill.where,
            text=oom_kill.text,
            rank=3,
            host="node07",
            pid=4242,
            time=span("07:01:02", 1),
            facts={"pid": "4242", "task": "python"},
            rank_from="pid",
        ),
        Event(
            rule="kernel.oom-killer",
            cause=Cause.HOST_OOM,
            role=Role.CAUSE,
            where=killed.where,
            text=killed.text,
            rank=3,
            host="node07",
            pid=4242,
            time=span("07:01:02", 1),
            facts={"pid": "4242", "comm": "python", "anon_rss_kb": "398765432"},
            rank_from="pid",
        ),
        Event(
            rule="gloo.connection-closed",
            cause=Cause.PEER_LOST,
            role=Role.SYMPTOM,
            where=loc("logs/rank_0.log", 930),
            rank=0,
            host="node07",
            pid=4239,
            time=span("07:01:02.871"),
            text="RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection "
            "closed by peer "
            "[10.0.0.7]:29500",
            rank_from="path",
        ),
        Event(
            rule="gloo.connection-closed",
            cause=Cause.PEER_LOST,
            role=Role.SYMPTOM,
            where=loc("logs/rank_1.log", 931),
            rank=1,
            host="node07",
            pid=4240,
            time=span("07:01:02.874"),
            text="RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection "
            "closed by peer "
            "[10.0.0.7]:29500",
            rank_from="path",
        ),
        Event(
            rule="torchrun.child-failed",
            cause=Cause.KILLED,
            role=Role.CONTEXT,
            where=loc("logs/torchrun.log", 140),
            rank=3,
            host="node07",
            pid=4242,
            time=span("07:01:08", 1),
            text="[1]: time: 2026-11-29_07:01:08 rank: 3 (local_rank: 3) exitcode: -9 (pid: 4242) "
            "error_file: <N/A> traceback: Signal 9 (SIGKILL) received by PID 4242",
            facts={"rank": "3", "exitcode": "-9", "pid": "4242"},
            rank_from="launcher",
        ),
    )
    ranks = (
        RankReport(
            rank=0,
            fate=Fate.COLLATERAL,
            host="node07",
            pid=4239,
            exitcode=1,
            last_seen=at("07:01:02.871"),
            last_step=880,
            summary="lost its peer: gloo connection closed by peer",
            events=(2,),
        ),
        RankReport(
            rank=1,
            fate=Fate.COLLATERAL,
            host="node07",
            pid=4240,
            exitcode=1,
            last_seen=at("07:01:02.874"),
            last_step=880,
            summary="lost its peer: gloo connection closed by peer",
            events=(3,),
        ),
        RankReport(
            rank=2,
            fate=Fate.RUNNING,
            host="node07",
            pid=4241,
            last_seen=at("07:01:01.950"),
            last_step=880,
            summary="its log stops without an end; torchrun tore the job down",
        ),
        RankReport(
            rank=3,
            fate=Fate.FIRST_DEATH,
            host="node07",
            pid=4242,
            exitcode=-9,
            last_seen=at("07:01:01.120"),
            last_step=879,
            summary="SIGKILL from the kernel OOM-killer (anon-rss 380 GiB)",
            events=(0, 1, 4),
        ),
    )
    verdict = Verdict(
        outcome=Outcome.FIRST_DEATH,
        first_death=FirstDeath(
            rank=3,
            cause=Cause.HOST_OOM,
            rule="kernel.oom-killer",
            host="node07",
            pid=4242,
            time=span("07:01:02", 1),
            phase=Phase.TRAINING,
            detail="the kernel killed pid 4242 (python), anon-rss 398765432 kB",
            evidence=(oom_kill, killed),
        ),
        confidence=Confidence.HIGH,
        reasoning=(
            "dmesg on node07 shows the OOM-killer killing pid 4242 at 07:01:02; torchrun says pid 4242 is rank 3.",
            "Rank 3's log ends at 07:01:01.120 with no error of its own.",
            "Ranks 0 and 1 lost their gloo peer less than a second later.",
        ),
        ruled_out=(
            RuledOut(0, "connection closed by peer 0.9 s after rank 3 was killed"),
            RuledOut(1, "connection closed by peer 0.9 s after rank 3 was killed"),
        ),
        remediation=(
            "Fix the cause: reduce host memory per rank (fewer DataLoader workers, no dataset "
            "copies per rank, "
            "pin_memory=False).",
            "Make it visible sooner: watch `free -g` / node memory metrics during the first steps.",
        ),
        notes=("dmesg -T times are derived from the boot time and can drift by a few seconds.",),
    )
    inputs = (
        *(
            Input(
                path=f"logs/rank_{r}.log",
                kind=StreamKind.RANK_LOG,
                rank=r,
                host="node07",
                lines=930 + r,
            )
            for r in range(4)
        ),
        Input(path="logs/torchrun.log", kind=StreamKind.CONSOLE, host="node07", lines=150),
        Input(path="dmesg.txt", kind=StreamKind.KERNEL, host="node07", lines=2048),
    )
    return Diagnosis(verdict=verdict, ranks=ranks, events=events, inputs=inputs)


# ---- scenario 3: a clean run: nothing died ----


def clean_diagnosis() -> Diagnosis:
    events = (
        Event(
            rule="pytorch.step",
            cause=Cause.PROGRESS,
            role=Role.PROGRESS,
            where=loc("logs/rank_0.log", 400),
            text="step 5000 loss=1.02",
            rank=0,
            time=span("08:30:00.5"),
            facts={"step": "5000"},
        ),
        Event(
            rule="pytorch.training-complete",
            cause=Cause.CONTEXT,
            role=Role.CONTEXT,
            where=loc("logs/rank_0.log", 402),
            text="Training completed. Saving final checkpoint.",
            rank=0,
            time=span("08:30:01.25"),
        ),
        Event(
            rule="torchrun.all-exited",
            cause=Cause.CONTEXT,
            role=Role.CONTEXT,
            where=loc("logs/torchrun.log", 51),
            text="torch.distributed.elastic.agent.server.api: [INFO] Local worker group finished "
            "(WorkerState."
            "SUCCEEDED). Waiting 300 seconds for other agents to finish",
            time=span("08:30:04.0"),
        ),
    )
    ranks = tuple(
        RankReport(
            rank=r,
            fate=Fate.EXITED_CLEAN,
            host="gpu-a",
            pid=100 + r,
            exitcode=0,
            last_seen=at("08:30:03.9"),
            last_step=5000,
            summary="finished training and exited with code 0",
        )
        for r in range(2)
    )
    verdict = Verdict(
        outcome=Outcome.CLEAN,
        first_death=None,
        confidence=Confidence.HIGH,
        reasoning=(
            "Both ranks reached step 5000 and exited with code 0.",
            "No error was found in any input.",
        ),
    )
    inputs = (
        Input(path="logs/rank_0.log", kind=StreamKind.RANK_LOG, rank=0, lines=402),
        Input(path="logs/rank_1.log", kind=StreamKind.RANK_LOG, rank=1, lines=399),
        Input(path="logs/torchrun.log", kind=StreamKind.CONSOLE, lines=51),
    )
    return Diagnosis(verdict=verdict, ranks=ranks, events=events, inputs=inputs)


# ---- scenario 4: 1,024 ranks, rank 517 stops making progress, everyone else waits ----

HANG_RANKS = 1024
CULPRIT = 517


def _host(rank: int) -> str:
    return f"node{rank // 8:03d}"


def _hang_rank(rank: int) -> RankReport:
    if rank == CULPRIT:
        return RankReport(
            rank=rank,
            fate=Fate.FIRST_DEATH,
            host=_host(rank),
            pid=9000 + rank % 8,
            last_seen=at("07:00:40.250"),
            last_step=4520,
            summary="stuck after step 4520; never entered all_reduce SeqNum 4521",
            events=(0,),
        )
    if rank // 8 == CULPRIT // 8:
        return RankReport(
            rank=rank,
            fate=Fate.TORN_DOWN,
            host=_host(rank),
            pid=9000 + rank % 8,
            exitcode=-15,
            last_seen=at("07:10:41.000"),
            last_step=4521,
            summary="killed by torchrun (SIGTERM) during teardown",
        )
    return RankReport(
        rank=rank,
        fate=Fate.COLLATERAL,
        host=_host(rank),
        pid=9000 + rank % 8,
        exitcode=-6,
        last_seen=at(f"07:10:40.{rank % 1000:03d}"),
        last_step=4521,
        summary="timed out in all_reduce (SeqNum 4521)",
        events=(1 + rank,) if rank < 30 else (),
    )


def hang_diagnosis() -> Diagnosis:
    stuck = Event(
        rule="pytorch.step",
        cause=Cause.PROGRESS,
        role=Role.PROGRESS,
        where=loc(f"logs/rank_{CULPRIT}.log", 9040),
        text="step 4520 loss=1.87",
        rank=CULPRIT,
        host=_host(CULPRIT),
        time=span("07:00:40.250"),
        facts={"step": "4520"},
        rank_from="path",
    )
    timeouts = tuple(
        Event(
            rule="nccl.watchdog-timeout",
            cause=Cause.COLLECTIVE_TIMEOUT,
            role=Role.SYMPTOM,
            where=loc(f"logs/rank_{r}.log", 9100),
            rank=r,
            host=_host(r),
            time=span(f"07:10:40.{r:03d}"),
            text=f"[Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4521, "
            "OpType=ALLREDUCE, NumelIn=262144, NumelOut=262144, Timeout(ms)=600000)",
            facts={"seq": "4521"},
            rank_from="path",
        )
        for r in range(30)
    )
    hang = Event(
        rule="verdict.hang",
        cause=Cause.HANG,
        role=Role.CAUSE,
        where=stuck.where,
        text=stuck.text,
        rank=CULPRIT,
        host=_host(CULPRIT),
        time=TimeSpan(at("07:00:40.250"), at("07:01:40.250")),
    )
    verdict = Verdict(
        outcome=Outcome.HANG,
        first_death=FirstDeath(
            rank=CULPRIT,
            cause=Cause.HANG,
            rule="verdict.hang",
            host=_host(CULPRIT),
            pid=9005,
            time=TimeSpan(at("07:00:40.250"), at("07:10:40.000")),
            phase=Phase.TRAINING,
            detail="last progress at step 4520; the 1,023 other ranks reached all_reduce SeqNum 4521 and waited",
            evidence=(Evidence(stuck.where, stuck.text),),
        ),
        confidence=Confidence.MEDIUM,
        reasoning=(
            "1,016 ranks timed out in all_reduce SeqNum 4521; rank 517 never logged step 4521.",
            "No rank left an error before the timeouts, and the kernel logs show nothing for node064.",
        ),
        ruled_out=(RuledOut(None, "a network failure: the timeouts name one collective, not a lost peer"),),
        remediation=(
            "Fix the cause: py-spy dump --pid 9005 on node064 the next time it hangs to see where rank 517 is stuck.",
            "Make it visible sooner: set TORCH_NCCL_DUMP_ON_TIMEOUT=1 to get the flight recorder on timeout.",
        ),
        notes=("Only 30 of the 1,016 collective timeouts were kept as events.",),
    )
    inputs = tuple(
        Input(path=f"logs/rank_{r}.log", kind=StreamKind.RANK_LOG, rank=r, host=_host(r), lines=9100)
        for r in range(HANG_RANKS)
    )
    ranks = tuple(_hang_rank(r) for r in range(HANG_RANKS))
    return Diagnosis(verdict=verdict, ranks=ranks, events=(stuck, *timeouts, hang), inputs=inputs)


# ---- scenario 5: a hang that names no culprit: dumps of live processes, the launcher stopped from outside ----


def stalled_diagnosis() -> Diagnosis:
    stall = Event(
        rule="python.py-spy-in-collective",
        cause=Cause.COLLECTIVE_TIMEOUT,
        role=Role.SYMPTOM,
        where=loc("dumps/rank_0.txt", 5),
        text="    all_reduce (torch/distributed/distributed_c10d.py:3252)",
        rank=0,
        facts={"op": "all_reduce"},
        effects=frozenset({Effect.STALLED}),
    )
    events = (
        stall,
        Event(
            rule="python.faulthandler-timeout",
            cause=Cause.CONTEXT,
            role=Role.CONTEXT,
            where=loc("logs/console.log", 17),
            text="Timeout (0:10:00)!",
            time=span("09:40:00.0", 20.0),
            effects=frozenset({Effect.STALLED}),
        ),
        Event(
            rule="torchrun.sending-signal",
            cause=Cause.LAUNCHER_TEARDOWN,
            role=Role.SYMPTOM,
            where=loc("logs/console.log", 21),
            text="Sending process 4201 closing signal SIGTERM",
            rank=1,
            time=span("09:41:07.5"),
        ),
    )
    ranks = (
        RankReport(rank=0, fate=Fate.COLLATERAL, host="gpu-a", pid=4200, last_step=812, events=(0,),
                   summary="waiting in all_reduce (py-spy dump)"),
        RankReport(rank=1, fate=Fate.TORN_DOWN, host="gpu-a", pid=4201, exitcode=-15, last_step=812,
                   last_seen=at("09:41:07.5"), events=(2,), summary="torn down by the launcher (SIGTERM)"),
    )  # fmt: skip
    verdict = Verdict(
        outcome=Outcome.HANG,
        first_death=FirstDeath(
            rank=None,
            cause=Cause.HANG,
            rule=None,
            method="stalled",
            detail=stall.text.strip(),
            evidence=(Evidence(stall.where, stall.text),),
        ),
        confidence=Confidence.MEDIUM,
        caps=("no culprit is named: the lines show the job stuck, not which rank it waited for",),
        reasoning=(
            "rank 0 was alive and stuck, per dumps/rank_0.txt:5 (python.py-spy-in-collective)",
            "no rank died and none is named as the one the others wait for: the job hung, and these lines do not "
            "say on which rank",
        ),
        not_first=(0,),
        fetch_next=(
            "a stack dump of every rank while it hangs (`py-spy dump --pid PID`): the culprit is the rank not "
            "inside the collective the others wait in",
        ),
    )
    inputs = (
        Input(path="dumps/rank_0.txt", kind=StreamKind.RANK_LOG, rank=0, lines=9),
        Input(path="logs/console.log", kind=StreamKind.CONSOLE, lines=40),
    )
    return Diagnosis(verdict=verdict, ranks=ranks, events=events, inputs=inputs)


SCENARIOS: dict[str, Callable[[], Diagnosis]] = {
    "python_exception": exception_diagnosis,
    "host_oom": oom_diagnosis,
    "clean": clean_diagnosis,
    "hang_1024": hang_diagnosis,
    "stalled_hang": stalled_diagnosis,
}
