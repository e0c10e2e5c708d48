"""Renderers: golden outputs for hand-built diagnoses, the JSON contract, and untrusted text.

Regenerate the golden files with `RANKAUTOPSY_UPDATE_GOLDEN=1 pytest tests/test_render.py`
and review the diff.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

from rankautopsy.model import (
    Cause,
    Confidence,
    Diagnosis,
    Event,
    Evidence,
    Fate,
    FirstDeath,
    Input,
    Location,
    Phase,
    RankReport,
    Role,
    RuledOut,
    SkippedInput,
    StreamKind,
    TimeSpan,
    Verdict,
)
from rankautopsy.render import Format
from rankautopsy.render.json import render_json
from rankautopsy.render.terminal import (
    CAUSE_LABELS,
    FATE_LABELS,
    PHASE_LABELS,
    Elided,
    elide,
    make_console,
    rank_ranges,
    render_terminal,
)

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("RANKAUTOPSY_UPDATE_GOLDEN") == "1"
VERSION = "0.0.0-test"
WIDTH = 100
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


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


SCENARIOS: dict[str, Callable[[], Diagnosis]] = {
    "python_exception": exception_diagnosis,
    "host_oom": oom_diagnosis,
    "clean": clean_diagnosis,
    "hang_1024": hang_diagnosis,
}
JSON_GOLDEN = ("python_exception", "host_oom", "clean")


# ---- helpers ----


def terminal_text(d: Diagnosis, console: Console | None = None) -> str:
    out = io.StringIO()
    render_terminal(d, console or make_console(out, WIDTH, color=False))
    return out.getvalue()


def check_golden(name: str, actual: str) -> None:
    """Compare with tests/golden/<name>; trailing spaces (rich pads lines) are not significant."""
    actual = "".join(line.rstrip(" ") + "\n" for line in actual.splitlines())
    path = GOLDEN / name
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}; run with RANKAUTOPSY_UPDATE_GOLDEN=1"
    assert actual == path.read_text(encoding="utf-8"), f"{name} differs; RANKAUTOPSY_UPDATE_GOLDEN=1 to update"


# ---- terminal ----


@pytest.mark.parametrize("name", SCENARIOS)
def test_terminal_golden(name: str) -> None:
    check_golden(f"{name}.txt", terminal_text(SCENARIOS[name]()))


def test_terminal_golden_colour() -> None:
    out = io.StringIO()
    console = Console(
        file=out,
        width=WIDTH,
        color_system="truecolor",
        force_terminal=True,
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=False,
        _environ={},  # NO_COLOR, TERM=dumb etc. of the test run must not change the golden
    )
    render_terminal(exception_diagnosis(), console)
    check_golden("python_exception.ansi", out.getvalue())


def test_verdict_comes_first() -> None:
    text = terminal_text(exception_diagnosis())
    first = text.splitlines()[0]
    assert "rankautopsy — first death" in first
    assert "Rank 2 (node02, pid 2002) died first: uncaught Python exception" in text
    assert text.index("died first") < text.index("What the other ranks did") < text.index("Timeline")


def test_hang_groups_ranks_into_ranges() -> None:
    text = terminal_text(hang_diagnosis())
    assert "rankautopsy — hang culprit" in text
    assert "0-511, 520-1023" in text
    assert "512-516, 518-519" in text
    assert len(text.splitlines()) < 120


def test_clean_run_is_green_no_rank_died() -> None:
    text = terminal_text(clean_diagnosis())
    assert "rankautopsy — no rank died" in text
    assert "Both ranks reached step 5000" in text


def test_abstention_shows_notes() -> None:
    d = exception_diagnosis()
    verdict = Verdict(first_death=None, confidence=Confidence.LOW, notes=("two ranks died within the skew",))
    text = terminal_text(Diagnosis(verdict=verdict, ranks=d.ranks, events=d.events, inputs=d.inputs))
    assert "No first death found" in text
    assert "two ranks died within the skew" in text


def test_every_enum_member_has_a_label() -> None:
    assert set(CAUSE_LABELS) == set(Cause)
    assert set(FATE_LABELS) == set(Fate)
    assert set(PHASE_LABELS) == set(Phase)
    assert set(Format) >= {Format.TERMINAL, Format.JSON}


@pytest.mark.parametrize(
    ("ranks", "expected"),
    [
        ([0], "0"),
        ([0, 1, 2, 4, 5, 9], "0-2, 4-5, 9"),
        ([3, 1, 2, 2], "1-3"),
        (list(range(0, 40, 2)), "0, 2, 4, 6, 8, 10, 12, 14, … (20 ranks)"),
    ],
)
def test_rank_ranges(ranks: list[int], expected: str) -> None:
    assert rank_ranges(ranks) == expected


def test_elide_keeps_first_death_and_counts_the_rest() -> None:
    items = [f"e{i}" for i in range(32)]
    out = elide(items, [i == 15 for i in range(32)], 6)
    assert out == ["e0", "e1", "e2", Elided(12), "e15", Elided(14), "e30", "e31"]
    assert elide(items[:6], [False] * 6, 6) == items[:6]


def test_timeline_folds_runs_and_elides_the_middle() -> None:
    d = exception_diagnosis()
    events = tuple(
        Event(
            rule=f"r{i}",
            cause=Cause.CONTEXT,
            role=Role.CONTEXT,
            where=loc("console.log", i),
            text=f"line {i}",
            time=span(f"07:20:{i:02d}"),
        )
        for i in range(40)
    )
    text = terminal_text(Diagnosis(verdict=d.verdict, ranks=d.ranks, events=d.events + events, inputs=d.inputs))
    assert "ValueError: bad sample 1234" in text.split("Timeline")[1]
    assert "… 25 more" in text


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        (span("07:01:02.345"), "2026-11-29 07:01:02.345 UTC"),
        (span("07:01:02"), "2026-11-29 07:01:02 UTC"),
        (span("07:01:02", 1), "2026-11-29 07:01:02.5 UTC (±0.5 s)"),
        (span("07:01:02", 20), "2026-11-29 07:01:12 UTC (±10 s)"),
        (TimeSpan(at("07:00:00"), at("07:10:00")), "between 2026-11-29 07:00:00 and 07:10:00 UTC"),
        (None, "unknown (no timestamp on the evidence)"),
    ],
)
def test_when_is_rendered_as_point_error_or_interval(when: TimeSpan | None, expected: str) -> None:
    fd = FirstDeath(rank=2, cause=Cause.SEGFAULT, rule="kernel.segfault", time=when)
    verdict = Verdict(first_death=fd, confidence=Confidence.HIGH)
    assert f"when        {expected}" in terminal_text(Diagnosis(verdict=verdict, ranks=(), events=(), inputs=()))


# ---- untrusted text ----

NASTY = (
    "[bold red]x[/] [link=http://e]click[/link] :smile: \x1b[31mred\x1b[0m \x1b]0;title\x07 "
    "nul\x00byte ``` `code` \x9b2J end"
)


def nasty_diagnosis() -> Diagnosis:
    d = exception_diagnosis()
    ev = Evidence(loc("logs/[bold]rank_2[/].log", 7), NASTY)
    fd = FirstDeath(
        rank=2,
        cause=Cause.ABORT,
        rule="[red]rule[/]",
        host="node[blink]02",
        time=span("07:00:00"),
        detail=NASTY,
        evidence=(ev,),
    )
    event = Event(
        rule="r",
        cause=Cause.ABORT,
        role=Role.CAUSE,
        where=ev.where,
        text=NASTY,
        rank=2,
        time=span("07:00:00"),
        facts={"k\x1b": NASTY},
    )
    verdict = Verdict(
        first_death=fd,
        confidence=Confidence.HIGH,
        reasoning=(NASTY,),
        ruled_out=(RuledOut(0, NASTY),),
        remediation=(NASTY,),
        notes=(NASTY,),
    )
    ranks = (RankReport(rank=2, fate=Fate.FIRST_DEATH, host=NASTY, summary=NASTY),)
    return Diagnosis(
        verdict=verdict,
        ranks=ranks,
        events=(event,),
        inputs=d.inputs,
        skipped=(SkippedInput(NASTY, NASTY),),
    )


@pytest.mark.parametrize("markup_console", [False, True])
def test_log_text_renders_literally(markup_console: bool) -> None:
    out = io.StringIO()
    console = (
        Console(file=out, width=WIDTH, color_system=None) if markup_console else make_console(out, WIDTH, color=False)
    )
    render_terminal(nasty_diagnosis(), console)
    text = out.getvalue()
    assert "[bold red]x[/]" in text
    assert "[link=http://e]click[/link]" in text
    assert ":smile:" in text
    assert "logs/[bold]rank_2[/].log:7" in text
    assert "`code`" in text and "```" in text
    assert "\x1b" not in text and "\x00" not in text and "\x07" not in text and "\x9b" not in text


def test_log_text_in_colour_carries_only_our_own_escapes() -> None:
    out = io.StringIO()
    console = Console(file=out, width=WIDTH, color_system="truecolor", force_terminal=True, _environ={})
    render_terminal(nasty_diagnosis(), console)
    text = out.getvalue()
    assert "[bold red]x[/]" in text
    assert "]0;title" not in text
    assert re.sub(r"\x1b\[[0-9;]*m", "", text).count("\x1b") == 0


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_any_text_renders_without_escape_bytes(text: str) -> None:
    ev = Evidence(loc(text, 1), text)
    fd = FirstDeath(rank=0, cause=Cause.ABORT, rule=text, host=text, detail=text, evidence=(ev,))
    d = Diagnosis(
        verdict=Verdict(first_death=fd, confidence=Confidence.LOW, notes=(text,)),
        ranks=(RankReport(rank=0, fate=Fate.FIRST_DEATH, summary=text),),
        events=(),
        inputs=(),
    )
    rendered = terminal_text(d)
    rendered.encode("utf-8")
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", rendered)
    assert json.loads(render_json(d, VERSION))["verdict"]["first_death"]["detail"] is not None


# ---- JSON ----


@pytest.mark.parametrize("name", JSON_GOLDEN)
def test_json_golden(name: str) -> None:
    check_golden(f"{name}.json", render_json(SCENARIOS[name](), VERSION) + "\n")


def _times(doc: Any) -> list[str]:
    found: list[str] = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key in ("earliest", "latest", "last_seen") and value is not None:
                found.append(value)
            else:
                found += _times(value)
    elif isinstance(doc, list):
        for item in doc:
            found += _times(item)
    return found


@pytest.mark.parametrize("name", SCENARIOS)
def test_json_contract(name: str) -> None:
    d = SCENARIOS[name]()
    doc = json.loads(render_json(d, VERSION))
    assert list(doc) == ["schema", "tool", "verdict", "ranks", "events", "inputs", "skipped"]
    assert doc["schema"] == 1
    assert doc["tool"] == {"name": "rankautopsy", "version": VERSION}
    verdict = doc["verdict"]
    assert set(verdict) == {
        "first_death",
        "hang",
        "confidence",
        "reasoning",
        "ruled_out",
        "remediation",
        "notes",
    }
    fd = d.verdict.first_death
    if fd is None:
        assert verdict["first_death"] is None and verdict["hang"] is False
    else:
        assert verdict["first_death"]["rank"] == fd.rank
        assert verdict["first_death"]["cause"] == fd.cause.value
        assert verdict["hang"] == (fd.cause is Cause.HANG)
    assert all(ISO_Z.match(t) for t in _times(doc))
    assert [r["rank"] for r in doc["ranks"]] == [r.rank for r in d.ranks]
    assert all(0 <= i < len(doc["events"]) for r in doc["ranks"] for i in r["events"])
    assert len(doc["inputs"]) == len(d.inputs)


def test_json_times_are_utc_z_with_microseconds() -> None:
    doc = json.loads(render_json(oom_diagnosis(), VERSION))
    assert doc["verdict"]["first_death"]["time"] == {
        "earliest": "2026-11-29T07:01:02.000000Z",
        "latest": "2026-11-29T07:01:03.000000Z",
    }


def test_json_survives_any_text() -> None:
    d = nasty_diagnosis()
    bad = 'lone \ud800 and pair \ud83d\ude00 and \x00 \x1b \x9b \x7f "quoted"'
    fd = FirstDeath(rank=1, cause=Cause.SEGFAULT, rule="r", detail=bad, evidence=(Evidence(loc(bad, 1), bad),))
    d = Diagnosis(
        verdict=Verdict(first_death=fd, confidence=Confidence.LOW),
        ranks=d.ranks,
        events=d.events,
        inputs=d.inputs,
    )
    out = render_json(d, VERSION)
    out.encode("utf-8")
    assert "\x1b" not in out and "\x9b" not in out and "\x00" not in out
    detail = json.loads(out)["verdict"]["first_death"]["detail"]
    assert detail == 'lone \ufffd and pair \U0001f600 and \x00 \x1b \x9b \x7f "quoted"'


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_json_is_valid_utf8_json_for_any_text(text: str) -> None:
    event = Event(
        rule=text,
        cause=Cause.CONTEXT,
        role=Role.CONTEXT,
        where=loc(text, 1),
        text=text,
        host=text,
        facts={text: text},
    )
    d = Diagnosis(
        verdict=Verdict(first_death=None, confidence=Confidence.LOW, notes=(text,)),
        ranks=(),
        events=(event,),
        inputs=(),
        skipped=(SkippedInput(text, text),),
    )
    out = render_json(d, VERSION)
    out.encode("utf-8")
    assert json.loads(out)["events"][0]["line"] == 1


def test_json_version_defaults_without_package_version() -> None:
    assert json.loads(render_json(clean_diagnosis()))["tool"]["version"]


def test_json_renderer_does_not_import_rich() -> None:
    code = "import sys, rankautopsy.render.json; print(sorted(m for m in sys.modules if 'rich' in m))"
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_make_console_colour_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    plain, coloured = io.StringIO(), io.StringIO()
    render_terminal(oom_diagnosis(), make_console(plain, WIDTH, color=False))
    render_terminal(oom_diagnosis(), make_console(coloured, WIDTH, color=True))
    assert "\x1b" not in plain.getvalue()
    assert "\x1b[" in coloured.getvalue()
