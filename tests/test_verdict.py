"""The differential diagnosis on small logs written from the emitters' exact formats."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

from rankautopsy.diagnosis.timeline import bus_of
from rankautopsy.model import Cause, Confidence, Diagnosis, Fate, Outcome, TimeOpen
from rankautopsy.pipeline import Options, diagnose


def run(tmp_path: Path, files: dict[str, str], **options: object) -> Diagnosis:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return diagnose(Options(paths=[str(tmp_path)], **options))  # type: ignore[arg-type]


def fates(d: Diagnosis) -> dict[int, Fate]:
    return {r.rank: r.fate for r in d.ranks}


def step_lines(rank: int, steps: int, minute: int = 0) -> str:
    return "".join(f"2026-11-29 07:{minute:02d}:{s:02d},000 INFO [rank {rank}] step {s}/100\n" for s in range(steps))


def watchdog(rank: int, seq: int, enqueued: int, completed: int) -> str:
    prefix = (
        f"[rank{rank}]:[E1129 07:10:01.123456789 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) Rank {rank}]"
    )
    return (
        f"{prefix} Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, "
        f"NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
        f"{prefix}  failure detected by watchdog at work sequence id: {seq} PG status: "
        f"last enqueued work: {enqueued}, last completed work: {completed}\n"
    )


def test_rank_behind_in_nccl_sequence_is_the_hang_culprit(tmp_path: Path) -> None:
    files = {f"rank_{r}.log": step_lines(r, 10) + watchdog(r, 4521, 4521, 4520) for r in (0, 1, 3)}
    files["rank_2.log"] = step_lines(2, 10) + watchdog(2, 4520, 4520, 4520)
    d = run(tmp_path, files)
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (2, Cause.HANG)
    assert d.verdict.confidence is Confidence.HIGH
    assert "4520" in first.detail and "4521" in first.detail
    assert fates(d) == {0: Fate.COLLATERAL, 1: Fate.COLLATERAL, 2: Fate.FIRST_DEATH, 3: Fate.COLLATERAL}


def test_a_laggard_itself_waiting_in_a_collective_is_named_below_high_where_the_jobs_size_is_unknown(
    tmp_path: Path,
) -> None:
    """Rank 1 never issued work 215122, but its own 215121 never completed: an unseen rank 2 may be what it waits
    for (the two ranks of a paste, from a real F5-TTS thread). Rank 2 of the test above had completed all it issued."""
    files = {
        "rank_0.log": step_lines(0, 10) + watchdog(0, 215122, 215122, 215121),
        "rank_1.log": step_lines(1, 10) + watchdog(1, 215121, 215121, 215120),
    }
    d = run(tmp_path, files)
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.HANG)
    assert d.verdict.confidence is Confidence.MEDIUM


def test_a_rank_behind_in_enqueues_is_no_culprit_where_another_is_stuck_in_a_collective_it_completed(
    tmp_path: Path,
) -> None:
    """Rank 3 enqueued less, but rank 0 is stuck at work 619725, which rank 3 issued and completed: the lag does
    not explain rank 0's wait (two ranks of a larger job, as pasted from a real torchtune thread)."""
    files = {
        "rank_0.log": step_lines(0, 10) + watchdog(0, 619725, 619732, 619724),
        "rank_3.log": step_lines(3, 10) + watchdog(3, 619727, 619730, 619726),
    }
    d = run(tmp_path, files)
    assert d.verdict.first_death is None or d.verdict.first_death.rank != 3
    assert d.verdict.outcome is not Outcome.HANG or d.verdict.first_death is None


def test_a_rank_mentioned_by_another_rank_is_not_attributed(tmp_path: Path) -> None:
    line = "2026-11-29 07:00:09,000 ERROR [rank 0] timed out waiting for rank 3 to join the barrier\n"
    d = run(tmp_path, {"console.log": step_lines(0, 5) + step_lines(1, 5) + line})
    assert 3 not in fates(d)


def test_cascading_error_after_a_timeout_is_collateral(tmp_path: Path) -> None:
    """A CUDA OOM raised after the rank already timed out is fallout, not a first death."""
    rank0 = (
        step_lines(0, 9)
        + watchdog(0, 77, 77, 76)
        + (
            "[rank0]: Traceback (most recent call last):\n"
            '[rank0]:   File "train.py", line 3, in <module>\n'
            "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1024.00 EiB. GPU 0 has a total "
            "capacity of 79.14 GiB of which 1.00 GiB is free.\n"
        )
    )
    rank1 = step_lines(1, 5) + (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "train.py", line 9, in step\n'
        "[rank1]: KeyError: 'label'\n"
    )
    d = run(tmp_path, {"rank_0.log": rank0, "rank_1.log": rank1})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.PYTHON_EXCEPTION)
    assert fates(d)[0] is Fate.COLLATERAL


def test_xid_joins_the_rank_on_that_gpu_through_ncclS_bus_id(tmp_path: Path) -> None:
    inits = "".join(
        f"node02:{4700 + r}:{4790 + r} [{r}] NCCL INFO comm 0x55{r} rank {r} nranks 4 cudaDev {r} busId "
        f"{'3b' if r == 2 else f'{r}a'}000 commId 0x9f2a - Init COMPLETE\n"
        for r in range(4)
    )
    console = inits + "".join(step_lines(r, 5) for r in range(4))
    dmesg = (
        "[Sun Nov 29 07:00:06 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=4702, name=python, "
        "GPU has fallen off the bus.\n"
    )
    d = run(tmp_path, {"console.log": console, "dmesg.txt": dmesg}, tz=UTC)
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (2, Cause.GPU_HARDWARE)
    assert bus_of("0000:3b:00") == int("3b000", 16)


def test_slurm_out_of_memory_task_is_host_oom(tmp_path: Path) -> None:
    out = (
        "".join(f"{r:>2}: " + line for r in range(4) for line in step_lines(r, 3).splitlines(keepends=True))
        + "slurmstepd: error: Detected 1 oom_kill event in StepId=1234.0. "
        + "Some of the step tasks have been OOM Killed.\n"
        + "srun: error: node07: task 3: Out Of Memory\n"
        + "srun: error: node07: tasks 0-2: Killed\n"
    )
    d = run(tmp_path, {"slurm-1234.out": out})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (3, Cause.HOST_OOM)


def test_time_limit_ends_the_whole_job(tmp_path: Path) -> None:
    out = "".join(step_lines(r, 5) for r in range(2)) + (
        "slurmstepd: error: *** STEP 1234.0 ON node01 CANCELLED AT 2026-11-29T07:10:00 DUE TO TIME LIMIT ***\n"
    )
    d = run(tmp_path, {"slurm-1234.out": out})
    first = d.verdict.first_death
    assert first is not None and first.rank is None and first.cause is Cause.TIME_LIMIT
    assert set(fates(d).values()) == {Fate.TORN_DOWN}


def test_raw_dmesg_without_boot_time_still_joins_by_pid_and_says_what_it_could_not_order(tmp_path: Path) -> None:
    console = (
        step_lines(0, 5)
        + step_lines(1, 5)
        + (
            "E1129 07:00:06.000000 99 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -9) "
            "local_rank: 1 (pid: 4243) of binary: /usr/bin/python3\n"
        )
    )
    dmesg = (
        "[ 5000.123456] Out of memory: Killed process 4243 (pt_main_thread) total-vm:1kB, anon-rss:1kB, "
        "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:1kB oom_score_adj:0\n"
    )
    d = run(tmp_path, {"console.log": console, "dmesg.txt": dmesg})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.HOST_OOM)
    assert any("seconds since boot" in note for note in d.verdict.notes)


def test_every_rank_finishing_is_no_death(tmp_path: Path) -> None:
    done = "".join(step_lines(r, 5) + f"2026-11-29 07:00:06,000 INFO [rank {r}] training complete\n" for r in range(3))
    d = run(tmp_path, {"console.log": done})
    assert d.verdict.first_death is None
    assert set(fates(d).values()) == {Fate.EXITED_CLEAN}


def test_a_user_rule_capturing_words_as_a_rank_does_not_break_the_diagnosis(tmp_path: Path) -> None:
    pack = tmp_path.parent / f"{tmp_path.name}-pack.yaml"
    pack.write_text(
        "rules:\n"
        "  - id: inhouse.worker-lost\n"
        "    title: Worker lost\n"
        "    cause: context\n"
        "    role: context\n"
        "    pattern: 'worker (?P<rank>[a-z]+) lost'\n"
        "    examples:\n"
        "      match: ['worker alpha lost']\n"
        "      no_match: ['worker 3 fine']\n"
    )
    d = run(tmp_path, {"console.log": step_lines(0, 3) + "worker alpha lost\n"}, rules=[str(pack)])
    [event] = [e for e in d.events if e.rule == "inhouse.worker-lost"]
    assert event.facts["rank_raw"] == "alpha" and "rank" not in event.facts and event.rank is None


_TRACEBACK = 'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\nValueError: bad sample 7\n'
_FAILED = (
    "[2026-11-29 07:00:06,250] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
    "(exitcode: 1) local_rank: 1 (pid: 4242) of binary: /usr/bin/python3\n"
)
_TEARDOWN = (
    "[2026-11-29 07:00:06,100] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 4241 "
    "closing signal SIGTERM\n"
)


def _when(d: Diagnosis) -> tuple[str | None, str | None, TimeOpen | None]:
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.PYTHON_EXCEPTION)
    if first.time is None:
        return None, None, first.time_open
    return f"{first.time.earliest:%H:%M:%S.%f}", f"{first.time.latest:%H:%M:%S.%f}", first.time_open


def test_a_death_after_the_last_stamp_is_open_above(tmp_path: Path) -> None:
    """Its traceback has no stamp and nothing stamped follows: it died at or after rank 1's last stamp,
    and where the logs end bounds nothing."""
    d = run(tmp_path, {"rank_0.log": step_lines(0, 9), "rank_1.log": step_lines(1, 5) + _TRACEBACK})
    assert _when(d)[::2] == ("07:00:04.000000", TimeOpen.ABOVE)


def test_a_stamped_notice_closes_the_death_time(tmp_path: Path) -> None:
    """torchrun's stamped failure line says when the launcher saw the rank exit: the death came before,
    and after the rank's last stamped line."""
    files = {"rank_0.log": step_lines(0, 9), "rank_1.log": step_lines(1, 5) + _TRACEBACK, "torchrun.log": _FAILED}
    assert _when(run(tmp_path, files)) == ("07:00:04.000000", "07:00:06.251000", None)


def test_the_launchers_first_teardown_bounds_the_first_death(tmp_path: Path) -> None:
    """The launcher stops the survivors once a rank died: a death told by no stamped line of its own
    rank is at or before that, and nothing says since when."""
    files = {"rank_0.log": step_lines(0, 9), "rank_1.log": _TRACEBACK, "torchrun.log": _TEARDOWN + _FAILED}
    assert _when(run(tmp_path, files))[1:] == ("07:00:06.101000", TimeOpen.BELOW)


def test_a_neighbours_stamp_bounds_no_death(tmp_path: Path) -> None:
    """A traceback with no stamp, between other processes' stamped lines in one console (a relay may
    write it late), and no stamped line of its rank or the launcher: when it died is unknown."""
    console = (
        "2026-11-29 07:00:01,000 INFO [rank 0] step 1/100\n" + "[rank1]: " + _TRACEBACK.replace("\n", "\n[rank1]: ")
    )
    console = console.rstrip("[rank1]: ") + "\n2026-11-29 07:00:03,000 INFO [rank 0] step 2/100\n"
    assert _when(run(tmp_path, {"console.log": console})) == (None, None, None)


def test_a_time_the_line_states_is_its_events_time(tmp_path: Path) -> None:
    """SLURM says when it cancelled the job (`CANCELLED AT ...`); its line has no stamp of its own."""
    slurm = "slurmstepd: error: *** JOB 1234 ON node01 CANCELLED AT 2026-11-29T07:00:30 DUE TO TIME LIMIT ***\n"
    d = run(tmp_path, {"rank_0.log": step_lines(0, 9), "slurm-1234.out": slurm}, tz=UTC)
    first = d.verdict.first_death
    assert first is not None and first.cause is Cause.TIME_LIMIT and first.time_open is None
    assert (
        first.time is not None
        and f"{first.time.earliest:%H:%M:%S}..{first.time.latest:%H:%M:%S}" == "07:00:30..07:00:31"
    )


def test_a_teardown_that_stops_the_rank_does_not_bound_its_death(tmp_path: Path) -> None:
    """The launcher stops only processes still alive: its SIGTERM to rank 1's pid says rank 1 was alive
    then, so only the notice after it bounds rank 1's death."""
    stop_rank_1 = _TEARDOWN.replace("process 4241", "process 4242")
    files = {"rank_0.log": step_lines(0, 9), "rank_1.log": _TRACEBACK, "torchrun.log": stop_rank_1 + _FAILED}
    assert _when(run(tmp_path, files))[1:] == ("07:00:06.251000", TimeOpen.BELOW)


def _oom_at(rank: int, second: int) -> str:
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
    return step_lines(rank, 3) + f"2026-11-29 07:00:{second:02d},000 ERROR [rank {rank}] {oom}\n"


def test_a_death_the_clocks_cannot_order_is_not_ruled_out_as_later(tmp_path: Path) -> None:
    files = {"rank_0.log": _oom_at(0, 10), "rank_1.log": _oom_at(1, 11)}  # within the 2 s skew of two clocks
    d = run(tmp_path, files, tz=UTC)
    assert d.verdict.first_death is not None and d.verdict.first_death.rank == 0
    assert {r.rank: r.why for r in d.verdict.ruled_out}[1] == (
        "it died of a CUDA OOM too (07:00:11.000); the clocks cannot order it against rank 0"
    )
    files["rank_1.log"] = _oom_at(1, 30)
    d = run(tmp_path, files, tz=UTC)
    assert {r.rank: r.why for r in d.verdict.ruled_out}[1] == "it died of a CUDA OOM too, but later (07:00:30.000)"


_DS = "[2026-11-29 07:00:{:02d},{:03d}] [{}] [launch.py:{}:sigkill_handler] {}\n"
_DS_SWEEP = "".join(_DS.format(9, 100 + k, "INFO", 253, f"Killing subprocess {4200 + k}") for k in range(3))
_DS_EXIT = _DS.format(9, 250, "ERROR", 259, "['python', '-u', 'train.py', '--local_rank=2'] exits with return code = 1")


def test_deepspeeds_return_code_line_closes_the_first_deaths_time(tmp_path: Path) -> None:
    """DeepSpeed prints `exits with return code` only after its poll found a rank exited non-zero: the
    first death came before that stamp, though no line of the rank's own bounds it."""
    console = "[rank1]: " + _TRACEBACK.rstrip("\n").replace("\n", "\n[rank1]: ") + "\n" + _DS_SWEEP
    assert _when(run(tmp_path, {"console.log": console + _DS_EXIT}))[1:] == ("07:00:09.251000", TimeOpen.BELOW)
    assert _when(run(tmp_path, {"console.log": console}))[1:] == (None, None)  # its sweep alone: maybe a SIGTERM
