"""Launchers' own reports (mpirun/prterun, Hydra, PALS, srun, DeepSpeed, torchrun) through the whole pipeline.

Every log here is written from the emitter's format strings (the rule's `references:` cite them): what
each line does to the timeline comes from its rule's effects.
"""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest

from rankautopsy.model import Cause, Diagnosis, Fate, Outcome
from rankautopsy.pipeline import Options, diagnose


def run(tmp_path: Path, files: dict[str, str]) -> Diagnosis:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return diagnose(Options(paths=[str(tmp_path)], tz=UTC))


def fates(d: Diagnosis) -> dict[int, Fate]:
    return {r.rank: r.fate for r in d.ranks}


def rules(d: Diagnosis) -> set[str]:
    return {e.rule for e in d.events}


def tagged(ranks: range, text: str, space: str = "") -> str:
    return "".join(f"[1,{r}]<stdout>:{space}{text}\n" for r in ranks)


DASHES = "-" * 74 + "\n"


# ---- Open MPI 4 (ORTE) and 5 (PRRTE) ----


def test_ompi4_noticed_signal_names_the_killed_rank(tmp_path: Path) -> None:
    log = (
        tagged(range(4), "step 1")
        + DASHES
        + "Primary job  terminated normally, but 1 process returned\n"
        + "a non-zero exit code. Per user-direction, the job has been aborted.\n"
        + DASHES
        + DASHES
        + "mpirun noticed that process rank 2 with PID 4242 on node node07 exited on signal 9 (Killed).\n"
        + DASHES
    )
    d = run(tmp_path, {"console.log": log})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (2, Cause.KILLED)
    assert fates(d) == {0: Fate.TORN_DOWN, 1: Fate.TORN_DOWN, 2: Fate.FIRST_DEATH, 3: Fate.TORN_DOWN}


def test_ompi_noticed_with_pid_0_keeps_no_pid(tmp_path: Path) -> None:
    log = tagged(range(3), "step 1") + (
        "Mpirun noticed that process rank 1 with PID 0 on node aodexiusi exited on signal 9 (Killed).\n"
    )
    d = run(tmp_path, {"console.log": log})
    first = d.verdict.first_death
    assert first is not None and first.rank == 1
    assert first.pid is None


def test_prrte_wrapped_noticed_names_the_rank_and_keeps_the_signal_line(tmp_path: Path) -> None:
    """PRRTE's help text breaks the sentence: `exited on` / `signal 11 (Segmentation fault).`"""
    log = (
        tagged(range(4), "step 1", space=" ")
        + DASHES
        + "prterun noticed that process rank 3 with PID 4243 on node node07 exited on\n"
        + "signal 11 (Segmentation fault).\n"
        + DASHES
    )
    d = run(tmp_path, {"console.log": log})
    assert "mpi.noticed-signal" in rules(d)  # the signal line is read as its second half, kept as evidence
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (3, Cause.SEGFAULT)
    assert any(ev.text.startswith("signal 11") for ev in first.evidence)


def test_ompi_first_failed_process_is_a_rank_but_a_daemon_is_not(tmp_path: Path) -> None:
    log = (
        tagged(range(4), "step 1")
        + DASHES
        + "A critical communication path was lost to:\n\n"
        + "  My name:      [[6341,0],0]\n  Process name: [[6341,0],2]\n  Node:         node09\n"
        + DASHES
        + "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
        + "the job to be terminated. The first process to do so was:\n\n"
        + "  Process name: [[6341,1],1]\n  Exit code:    1\n"
        + DASHES
    )
    d = run(tmp_path, {"console.log": log})
    first = d.verdict.first_death
    # the exit code is on the next line: until a continuation assembly joins them, rank 1's exit has no code
    assert first is None or first.rank == 1
    assert any(e.rule == "mpi.first-failed-process" and e.facts.get("rank") == "1" for e in d.events)
    assert not any(e.rule == "mpi.first-failed-process" and e.facts.get("rank") == "2" for e in d.events)
    assert fates(d).get(2) is not Fate.FIRST_DEATH


def test_ompi_exited_due_to_process_rank(tmp_path: Path) -> None:
    rank1 = (
        "[1,1]<stderr>:Traceback (most recent call last):\n"
        '[1,1]<stderr>:  File "train.py", line 9, in <module>\n'
        "[1,1]<stderr>:ValueError: bad sample 77\n"
    )
    log = (
        tagged(range(2), "step 1")
        + rank1
        + DASHES
        + "mpirun has exited due to process rank 1 with PID 0 on\n"
        + "node node03 exiting improperly. There are three reasons this could occur:\n"
        + DASHES
    )
    d = run(tmp_path, {"console.log": log})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.PYTHON_EXCEPTION)


# ---- MPICH / Intel MPI Hydra, Cray PALS ----

HYDRA = (
    "\n" + "=" * 83 + "\n"
    "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
    "{who}"
    "{how}"
    "=   CLEANING UP REMAINING PROCESSES\n"
    "=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES\n" + "=" * 83 + "\n"
    "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Terminated (signal 15)\n"
)


def test_hydra_intel_block_names_the_rank_and_its_own_traceback_says_why(tmp_path: Path) -> None:
    rank1 = (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "train.py", line 9, in <module>\n'
        "[rank1]: KeyError: 'label'\n"
    )
    block = HYDRA.format(who="=   RANK 1 PID 9665 RUNNING AT gpu01\n", how="=   KILLED BY SIGNAL: 9 (Killed)\n")
    d = run(tmp_path, {"console.log": "[rank0]: step 1\n[rank1]: step 1\n" + rank1 + block})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.PYTHON_EXCEPTION)
    assert {"mpi.hydra-process", "mpi.hydra-cleanup"} <= rules(d)  # its exit-status line is the process line's tail


def test_hydra_exit_string_is_not_a_rank_death(tmp_path: Path) -> None:
    """The exit string is mpiexec's own status (often the cleanup's SIGTERM): it blames no rank."""
    block = HYDRA.format(who="=   PID 4827 RUNNING AT fv-az1256-113\n", how="=   EXIT CODE: 134\n")
    d = run(tmp_path, {"console.log": "[rank0]: step 1\n[rank1]: step 1\n" + block})
    first = d.verdict.first_death
    assert first is None or first.cause is not Cause.KILLED


def test_pals_rank_lines_first_status_wins_and_sigterm_cascade_is_not_first(tmp_path: Path) -> None:
    log = (
        "x3203c0s25b1n0.hsn.cm.polaris.alcf.anl.gov: rank 25 died from signal 6 and dumped core\n"
        "x3203c0s25b1n0.hsn.cm.polaris.alcf.anl.gov: rank 24 died from signal 15\n"
        "x3203c0s31b0n0.hsn.cm.polaris.alcf.anl.gov: rank 26 died from signal 15\n"
    )
    d = run(tmp_path, {"job.out": log})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (25, Cause.ABORT)


# ---- SLURM ----


def srun_steps(ranks: range) -> str:
    return "".join(f"{r}: 2026-11-29 07:00:01,000 INFO step 1/100\n" for r in ranks)


def test_srun_kill_on_bad_exit_sweeps_the_terminated_tasks(tmp_path: Path) -> None:
    log = srun_steps(range(4)) + (
        "srun: error: node02: task 2: Exited with exit code 1\n"
        "srun: Terminating StepId=1234.0\n"
        "slurmstepd: error: *** STEP 1234.0 ON node01 CANCELLED AT 2026-11-29T07:00:05 ***\n"
        "srun: error: node01: tasks 0-1,3: Terminated\n"
        "srun: Force Terminated StepId=1234.0\n"
    )
    d = run(tmp_path, {"slurm-1234.out": log})
    first = d.verdict.first_death
    assert first is not None and first.rank == 2
    assert fates(d) == {0: Fate.TORN_DOWN, 1: Fate.TORN_DOWN, 2: Fate.FIRST_DEATH, 3: Fate.TORN_DOWN}


@pytest.mark.parametrize(
    ("cancel", "outcome"),
    [
        ("*** JOB 1234 ON node01 CANCELLED AT 2026-11-29T07:00:05 ***", Outcome.UNDETERMINED),
        ("*** JOB 1234 CANCELLED AT 2026-11-29T07:00:05 *** on node01", Outcome.UNDETERMINED),
        ("*** JOB 1234 ON node01 CANCELLED AT 2026-11-29T07:00:05 DUE TO TIME LIMIT ***", Outcome.FIRST_DEATH),
        ("*** JOB 1234 CANCELLED AT 2026-11-29T07:00:05 DUE TO TIME LIMIT on node01 ***", Outcome.FIRST_DEATH),
    ],
)
def test_slurmstepds_older_word_order_ends_the_job_as_the_newer_one_does(
    tmp_path: Path, cancel: str, outcome: Outcome
) -> None:
    """SLURM up to 15.08 put the host after the time (`CANCELLED AT T *** on host`): the same end of the job."""
    log = srun_steps(range(2)) + f"slurmstepd: error: {cancel}\nsrun: error: node01: tasks 0-1: Killed\n"
    d = run(tmp_path, {"slurm-1234.out": log})
    assert d.verdict.outcome is outcome
    first = d.verdict.first_death
    if outcome is Outcome.FIRST_DEATH:
        assert first is not None and (first.rank, first.cause) == (None, Cause.TIME_LIMIT)
    assert fates(d) == {0: Fate.TORN_DOWN, 1: Fate.TORN_DOWN}


@pytest.mark.parametrize(
    ("status", "named"), [("Segmentation fault (core dumped)", 3), ("Exited with exit code 1", None)]
)
def test_a_crash_srun_saw_before_it_began_terminating_the_step_comes_first(
    tmp_path: Path, status: str, named: int | None
) -> None:
    """srun's `Terminating` follows the first abnormal exit it saw: a crash reported above it came before the ones
    reported below, whatever their signal. An exit status 1 is no such order: a process returns it on the error it
    raised for a peer's loss, too."""
    log = srun_steps(range(4)) + f"srun: error: node03: task 3: {status}\nsrun: Terminating StepId=1234.0\n"
    log += "".join(f"srun: error: node0{r}: task {r}: {status}\n" for r in (1, 2, 0))
    d = run(tmp_path, {"slurm-1234.out": log})
    first = d.verdict.first_death
    assert first is not None and first.rank == named
    assert d.verdict.outcome is (Outcome.FIRST_DEATH if named is not None else Outcome.UNDETERMINED)


def test_srun_wait_timer_names_the_task_that_exited_while_the_others_ran(tmp_path: Path) -> None:
    """`srun --wait`: the first task's exit starts a timer; srun then lists the task states and kills the tasks
    still running. The task listed as `exited` ended first; the job was not stopped from outside."""
    log = srun_steps(range(5)) + (
        "srun: First task exited 30s ago\n"
        "srun: StepId=1234.0 tasks 0-3: running\n"
        "srun: StepId=1234.0 task 4: exited\n"
        "srun: Terminating StepId=1234.0\n"
        "slurmstepd: error: *** STEP 1234.0 ON node01 CANCELLED AT 2026-11-29T07:00:05 DUE to SIGNAL Killed ***\n"
        "srun: error: node01: tasks 0-3: Killed\n"
    )
    d = run(tmp_path, {"slurm-1234.out": log})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (4, Cause.SILENT_EXIT)
    assert fates(d)[0] is Fate.TORN_DOWN


def test_srun_signal_with_digits_and_core_dump(tmp_path: Path) -> None:
    log = srun_steps(range(2)) + "srun: error: gpu[001-002]: task 1: Bus error (core dumped)\n"
    d = run(tmp_path, {"slurm-1.out": log})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.BUS_ERROR)


def test_slurm_node_failure_ends_the_job_without_blaming_a_torn_down_rank(tmp_path: Path) -> None:
    log = srun_steps(range(4)) + (
        "srun: error: Node failure on node02\n"
        "slurmstepd: error: *** JOB 1235 ON node01 CANCELLED AT 2026-11-29T07:10:05 DUE TO NODE FAILURE, "
        "SEE SLURMCTLD LOG FOR DETAILS ***\n"
        "srun: Job step aborted: Waiting up to 32 seconds for job step to finish.\n"
        "srun: error: node01: tasks 0-1: Killed\n"
    )
    d = run(tmp_path, {"slurm-1235.out": log})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert "slurm.node-failure" in rules(d)
    assert fates(d)[0] is Fate.TORN_DOWN and fates(d)[1] is Fate.TORN_DOWN


def test_slurmd_task_exit_ties_pid_to_task_for_the_kernel_log(tmp_path: Path) -> None:
    slurmd = (
        "[2026-11-29T07:01:02.345] [1234.0] task 0 (4239) exited. Killed by signal 9.\n"
        "[2026-11-29T07:01:03.000] [1234.0] task 1 (4240) exited. Killed by signal 9.\n"
    )
    dmesg = (
        "[Sun Nov 29 07:01:02 2026] Out of memory: Killed process 4239 (python) total-vm:81234567kB, "
        "anon-rss:71234567kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:140000kB oom_score_adj:0\n"
    )
    d = run(tmp_path, {"slurmd.log": slurmd, "dmesg.txt": dmesg})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (0, Cause.HOST_OOM)


# ---- DeepSpeed ----


def ds_spawned(pids: dict[int, int]) -> str:
    return "".join(
        f"[2026-11-29 10:09:46,{700 + k}] [INFO] [launch.py:256:main] process {pid} spawned with command: "
        f"['/usr/bin/python', '-u', 'ds_train.py', '--local_rank={k}']\n"
        for k, pid in pids.items()
    )


def ds_teardown(pids: dict[int, int], code: int) -> str:
    last = max(pids)
    kills = "".join(
        f"[2026-11-29 10:10:06,{228 + k}] [INFO] [launch.py:335:sigkill_handler] Killing subprocess {pid}\n"
        for k, pid in pids.items()
    )
    return kills + (
        f"[2026-11-29 10:10:06,390] [ERROR] [launch.py:341:sigkill_handler] ['/usr/bin/python', '-u', "
        f"'ds_train.py', '--local_rank={last}'] exits with return code = {code}\n"
    )


def test_deepspeed_exit_line_never_blames_the_last_spawned_rank(tmp_path: Path) -> None:
    pids = {0: 11958, 1: 11959, 2: 11960}
    dmesg = (
        "[Sun Nov 29 10:10:05 2026] Out of memory: Killed process 11959 (python) total-vm:81234567kB, "
        "anon-rss:71234567kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:140000kB oom_score_adj:0\n"
    )
    d = run(tmp_path, {"console.log": ds_spawned(pids) + ds_teardown(pids, -9), "dmesg.txt": dmesg})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.HOST_OOM)
    assert fates(d)[2] is not Fate.FIRST_DEATH


def test_deepspeed_exit_line_alone_names_nobody(tmp_path: Path) -> None:
    pids = {0: 11958, 1: 11959}
    d = run(tmp_path, {"console.log": ds_spawned(pids) + ds_teardown(pids, 1)})
    first = d.verdict.first_death
    assert first is None or first.rank != 1
    assert d.verdict.outcome is not Outcome.CLEAN


def test_deepspeed_exits_successfully_is_a_completion(tmp_path: Path) -> None:
    pids = {0: 11958, 1: 11959}
    done = "".join(
        f"[2026-11-29 10:20:00,00{k}] [INFO] [launch.py:367:main] Process {pid} exits successfully.\n"
        for k, pid in pids.items()
    )
    d = run(tmp_path, {"console.log": ds_spawned(pids) + done})
    assert d.verdict.first_death is None
    assert set(fates(d).values()) <= {Fate.EXITED_CLEAN}


# ---- torchrun / Accelerate consoles, collectors' prefixes ----


def test_torchrun_failure_line_wrapped_before_binary(tmp_path: Path) -> None:
    log = (
        "[default0]:2026-11-29 07:00:01,000 INFO step 1/100\n"
        "[default1]:2026-11-29 07:00:01,000 INFO step 1/100\n"
        "E1129 07:00:05.000000 4100 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: -11) "
        "local_rank: 1 (pid: 4243) of\n"
        "binary: /usr/bin/python\n"
    )
    d = run(tmp_path, {"console.log": log})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.SEGFAULT)


def test_collector_timestamp_and_host_before_rank_prefix(tmp_path: Path) -> None:
    log = (
        "2026-11-29T07:00:01.000Z node07: [rank0]: step 1\n"
        "2026-11-29 07:00:01,500 [rank1]: step 1\n"
        "2026-11-29 07:00:02,000 node08: [rank1]: Traceback (most recent call last):\n"
        '2026-11-29 07:00:02,000 node08: [rank1]:   File "train.py", line 9, in <module>\n'
        "2026-11-29 07:00:02,000 node08: [rank1]: ValueError: bad sample 1234\n"
    )
    d = run(tmp_path, {"console.log": log})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.PYTHON_EXCEPTION)
    assert first.time is not None


def test_mp_spawn_terminating_pids_are_victims(tmp_path: Path) -> None:
    log = (
        "W1129 09:26:00.684000 9867 torch/multiprocessing/spawn.py:165] Terminating process 9887 via signal SIGTERM\n"
        "Traceback (most recent call last):\n"
        '  File "main.py", line 40, in <module>\n'
        "    mp.spawn(worker, nprocs=2)\n"
        "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with signal SIGSEGV\n"
    )
    d = run(tmp_path, {"console.log": log})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.SEGFAULT)


# ---- a console that tees the ranks' output beside the per-rank files of --log-dir ----


def _raised(rank: int, message: str, prefix: str = "") -> str:
    lines = ["Traceback (most recent call last):", '  File "/job/train.py", line 9, in <module>', message]
    return "".join(f"{prefix}[rank{rank}]: {line}\n" for line in lines)


def _lost(rank: int, prefix: str = "") -> str:
    message = "RuntimeError: [../gloo/transport/tcp/pair.cc:553] Connection closed by peer [10.0.0.2]:4411"
    return _raised(rank, message, prefix)


TEARDOWN = (
    "W1205 13:15:10.478000 4376 torch/distributed/elastic/multiprocessing/api.py:1028] "
    "Sending process 4382 closing signal SIGTERM\n"
)


def test_a_teed_console_and_the_log_dirs_files_give_one_event_per_record(tmp_path: Path) -> None:
    """torchrun `--tee 3 --log-dir`: each record is in the console and in its rank's file; the console's
    event stands for both and names the file's line."""
    files = {
        "console.log": _raised(1, "ValueError: bad sample 21", "[default1]:") + _lost(0, "[default0]:") + TEARDOWN,
        "logs/run_1/attempt_0/0/stderr.log": _lost(0),
        "logs/run_1/attempt_0/1/stderr.log": _raised(1, "ValueError: bad sample 21"),
    }
    d = run(tmp_path, files)
    f = d.verdict.first_death
    assert f is not None and (f.rank, f.cause) == (1, Cause.PYTHON_EXCEPTION)
    raised = [e for e in d.events if e.facts.get("exc_type")]
    assert [(e.rank, e.where.source.rsplit("/", 1)[-1]) for e in raised] == [(1, "console.log"), (0, "console.log")]
    assert raised[0].facts["copies"].endswith("attempt_0/1/stderr.log:1")


def test_a_record_the_console_holds_fewer_times_than_the_files_stays(tmp_path: Path) -> None:
    """A restarted rank raised again in its second attempt, after the console was cut: the first attempt's
    file is the console's copy, the second's record is its own."""
    files = {
        "console.log": _raised(1, "ValueError: bad sample 21", "[default1]:") + _lost(0, "[default0]:"),
        "logs/run_1/attempt_0/1/stderr.log": _raised(1, "ValueError: bad sample 21"),
        "logs/run_1/attempt_1/1/stderr.log": _raised(1, "ValueError: bad sample 21"),
    }
    raised = [e for e in run(tmp_path, files).events if e.facts.get("exc_type") == "ValueError"]
    where = sorted(str(Path(e.where.source).relative_to(tmp_path)) for e in raised)
    assert where == ["console.log", "logs/run_1/attempt_1/1/stderr.log"]


def test_the_same_record_in_two_files_of_one_rank_each_is_two_records(tmp_path: Path) -> None:
    files = {f"logs/run_1/attempt_{a}/1/stderr.log": _raised(1, "ValueError: bad sample 21") for a in (0, 1)}
    files["logs/run_1/attempt_0/0/stderr.log"] = _lost(0)
    d = run(tmp_path, files)
    assert sum(e.facts.get("exc_type") == "ValueError" for e in d.events) == 2
    assert not any("copies" in e.facts for e in d.events)


# ---- MosaicML Composer's launcher (composer/cli/launcher.py) ----

COMPOSER = """\
INFO:composer.cli.launcher:Starting distributed environment on local node for global_rank(0-3)
[batch=2/100]: Train loss/train/total: 2.2871
ERROR:composer.cli.launcher:Rank 2 crashed with exit code 1.
Waiting up to 30 seconds for all training processes to terminate. Press Ctrl-C to exit immediately.
INFO:composer.cli.launcher:Killing global rank 0 (PID 1003409) with SIGTERM
INFO:composer.cli.launcher:Killing global rank 1 (PID 1003410) with SIGTERM
WARNING:composer.cli.launcher:Failed to kill global rank 3 (PID 1003412) with SIGTERM; terminating with SIGKILL instead
Global rank 2 (PID 1003411) exited with code 1
----------Begin global rank 2 STDERR----------
Traceback (most recent call last):
  File "/llm-foundry/scripts/train/train.py", line 242, in main
    trainer.fit()
RuntimeError: CUDA error: an illegal memory access was encountered
----------End global rank 2 STDERR----------
ERROR:composer.cli.launcher:Global rank 2 (PID 1003411) exited with code 1
"""


def test_composers_crashed_rank_is_named_by_the_stderr_the_launcher_prints_for_it(tmp_path: Path) -> None:
    d = run(tmp_path, {"console.log": COMPOSER})
    f = d.verdict.first_death
    assert f is not None and (f.rank, f.cause, f.pid) == (2, Cause.CUDA_ERROR, 1003411)
    assert f.evidence[0].text.startswith("RuntimeError: CUDA error") and "STDERR" not in " ".join(
        ev.text for ev in f.evidence
    )
    assert fates(d) == {0: Fate.TORN_DOWN, 1: Fate.TORN_DOWN, 2: Fate.FIRST_DEATH, 3: Fate.TORN_DOWN}


def test_composers_exit_line_alone_names_the_crashed_rank(tmp_path: Path) -> None:
    crash = "\n".join(COMPOSER.splitlines()[:7]) + "\n"  # the rank's own output went to a file not given
    d = run(tmp_path, {"console.log": crash})
    f = d.verdict.first_death  # a Python script's exit 1, its traceback in the file not given
    assert f is not None and (f.rank, f.cause) == (2, Cause.PYTHON_EXCEPTION)
    assert fates(d)[0] is Fate.TORN_DOWN


SPAWN_PARENT = (
    "Traceback (most recent call last):\n"
    '  File "/opt/train.py", line 90, in <module>\n'
    "    mp.spawn(run, nprocs=8)\n"
    '  File "/usr/lib/python3.10/site-packages/torch/multiprocessing/spawn.py", line 158, in join\n'
    "    raise ProcessRaisedException(msg, error_index, failed_process.pid)\n"
    "torch.multiprocessing.spawn.ProcessRaisedException: \n"
    "\n"
    "-- Process 7 terminated with the following error:\n"
)


def test_spawn_s_child_that_raised_died_of_an_exception_when_its_traceback_is_cut(tmp_path: Path) -> None:
    """The excerpt ends at spawn's relay header: the child raised (spawn's _wrap exits 1 after it)."""
    d = run(tmp_path, {"console.log": SPAWN_PARENT})
    f = d.verdict.first_death
    assert d.verdict.outcome is Outcome.FIRST_DEATH and f is not None
    assert (f.rank, f.cause) == (7, Cause.PYTHON_EXCEPTION)
    assert "exit code 1" in f.detail and "no message" not in f.detail


def test_spawn_s_child_whose_own_traceback_is_a_symptom_is_not_named(tmp_path: Path) -> None:
    """Where the child's traceback is there, it says what the child died of: here of another's death."""
    child = (
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/site-packages/torch/multiprocessing/spawn.py", line 69, in _wrap\n'
        "    fn(i, *args)\n"
        '  File "/opt/train.py", line 40, in run\n'
        "    dist.all_reduce(t)\n"
        "torch.distributed.DistBackendError: NCCL communicator was aborted on rank 7.\n"
    )
    d = run(tmp_path, {"console.log": SPAWN_PARENT + child})
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death is None


def test_an_agent_that_restarts_a_failed_worker_group_says_the_job_failed(tmp_path: Path) -> None:
    """`Worker group FAILED ... will restart worker group`: a worker died, though no line says which."""
    console = (
        "INFO:torch.distributed.elastic.agent.server.api:[default] Worker group FAILED. 3/3 attempts left; will"
        " restart worker group\n"
        "INFO:torch.distributed.elastic.agent.server.api:[default] Stopping worker group\n"
        "INFO:torch.distributed.elastic.agent.server.api:[default] Rendezvous'ing worker group\n"
        "INFO:torch.distributed.elastic.agent.server.api:[default] Starting worker group\n"
    )
    d = run(tmp_path / "failed", {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death is None
    unhealthy = run(tmp_path / "unhealthy", {"console.log": console.replace("FAILED", "UNHEALTHY")})
    assert unhealthy.verdict.outcome is Outcome.NO_FAILURE


_TABLE = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2023-09-15_08:38:11
  host      : node01
  rank      : 3 (local_rank: 3)
  exitcode  : -7 (pid: 5063)
  error_file: <N/A>
  traceback : Signal 7 (SIGBUS) received by PID 5063
============================================================
"""


@pytest.mark.parametrize(("text", "spaced"), [(_TABLE, False), (_TABLE, True), (_TABLE.replace("\n", "\r\n"), True)])
def test_a_double_spaced_failure_table_is_read(tmp_path: Path, text: str, spaced: bool) -> None:
    """torchrun's table pasted where a page put a blank line after each line: its entries are still read."""
    console = "".join(line + "\n\n" for line in text.splitlines()) if spaced else text
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (3, Cause.BUS_ERROR)
    assert first.evidence[0].where.line == (17 if spaced else 9)  # its `[0]:`, on the paste's own line


@pytest.mark.parametrize(
    "fixture", ["torchrun-raise-rank2", "torchrun-sigkill-oom-rank1", "mpirun5-tag-output-segfault-rank1"]
)
def test_a_double_spaced_paste_reads_as_the_log_itself(tmp_path: Path, fixture: str) -> None:
    """A page that renders a pasted log with a blank line after each line (torchrun's table, a traceback): the
    verdict is the log's own, its evidence on the paste's own line numbers."""
    logs = Path(__file__).resolve().parent.parent / "fixtures" / fixture / "logs"
    files = {p.name: p.read_text() for p in sorted(logs.iterdir()) if p.is_file()}
    spaced = {name: "".join(line + "\n\n" for line in text.splitlines()) for name, text in files.items()}
    plain, paste = run(tmp_path / "plain", files), run(tmp_path / "paste", spaced)
    assert plain.verdict.first_death is not None and paste.verdict.first_death is not None
    assert (paste.verdict.first_death.rank, paste.verdict.first_death.cause) == (
        plain.verdict.first_death.rank,
        plain.verdict.first_death.cause,
    )
    assert [e.where.line * 2 - 1 for e in plain.verdict.first_death.evidence] == [
        e.where.line for e in paste.verdict.first_death.evidence
    ]


def _torchx(lines: list[tuple[int, int, str]]) -> str:
    """`torchx log` of dist.ddp: `role/replica `, then torchrun's tee of the worker with an empty role."""
    return "".join(f"trainer/{replica} [{local}]:{text}\n" for replica, local, text in lines)


_RAISED = ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>', "ValueError: bad sample"]


def test_torchx_one_replica_names_the_local_rank_as_the_rank(tmp_path: Path) -> None:
    step = "2026-01-01 10:00:00,000 INFO step 1"
    log = _torchx([(0, 0, step), (0, 1, step), *((0, 1, text) for text in _RAISED)])
    d = run(tmp_path, {"console.log": log})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause, first.host) == (1, Cause.PYTHON_EXCEPTION, "trainer/0")


def test_torchx_replicas_are_hosts_and_the_death_keeps_its_own(tmp_path: Path) -> None:
    """Local rank 1 runs on both replicas: where the lines cannot map it, the host said is the line's own."""
    step = "2026-01-01 10:00:00,000 INFO step 1"
    log = _torchx([(0, 0, step), (0, 1, step), (1, 0, step), *((1, 1, text) for text in _RAISED)])
    d = run(tmp_path, {"console.log": log})
    first = d.verdict.first_death
    assert first is not None and first.host == "trainer/1"
    assert d.verdict.confidence.value != "high"


def test_paddles_console_alone_names_no_victim_as_the_first_death(tmp_path: Path) -> None:
    """The real console of fixtures/paddle-launch-raise-rank1: Paddle's launcher reports container 0, which only
    timed out waiting for rank 1 (its gloo `TIMEOUT self_rank = 0 pair_rank = 1`)."""
    console = Path(__file__).parent.parent / "fixtures" / "paddle-launch-raise-rank1" / "logs" / "console.log"
    d = run(tmp_path, {"console.log": console.read_text()})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert 0 in d.verdict.not_first


def test_paddles_worker_logs_are_local_ranks_by_their_name(tmp_path: Path) -> None:
    raised = 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\nValueError: bad sample\n'
    d = run(tmp_path, {"log/workerlog.0": "step 1\nstep 2\n", "log/workerlog.1": "step 1\n" + raised})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.PYTHON_EXCEPTION)


def test_an_old_agents_failed_worker_group_is_a_failed_job(tmp_path: Path) -> None:
    console = (
        "INFO:torch.distributed.elastic.agent.server.api:Local worker group finished (FAILED). Waiting 300 seconds "
        "for other agents to finish\n"
        "INFO:torch.distributed.elastic.agent.server.api:Done waiting for other agents. Elapsed: 0.0007 seconds\n"
    )
    assert run(tmp_path / "failed", {"console.log": console}).verdict.outcome is Outcome.UNDETERMINED
    done = console.replace("(FAILED)", "(SUCCEEDED)")
    assert run(tmp_path / "done", {"console.log": done}).verdict.outcome is not Outcome.UNDETERMINED


def test_mpich_processes_failing_mpi_init_aborted_with_no_rank(tmp_path: Path) -> None:
    stack = (
        "Fatal error in internal_Init: Other MPI error, error stack:\n"
        "internal_Init(45298).....: MPI_Init(argc=0x7fffffff68fc, argv=0x7fffffff68f0) failed\n"
        "MPIR_pmi_kvs_put(278)....: PMI_KVS_Put returned -1\n"
        "aborting job:\n"
    )
    d = run(tmp_path, {"console.log": stack * 2})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert d.verdict.first_death is not None and d.verdict.first_death.cause is Cause.ABORT
    assert d.verdict.first_death.rank is None


def test_a_collectors_time_and_level_before_pytorchs_rank_tag_are_stripped_in_a_short_paste(tmp_path: Path) -> None:
    head = "[2024-09-15 20:18:04] [INFO] [rank1]:"
    console = (
        "[2024-09-15 20:18:01] [INFO] enable fp8 training for Text Encoder.\n"
        f"{head} Traceback (most recent call last):\n"
        f'{head}   File "train.py", line 519, in <module>\n'
        f"{head} ValueError: bad config\n"
    )
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.PYTHON_EXCEPTION)


def test_torch_1_9s_table_record_under_msg_gives_the_exception_the_rank_raised(tmp_path: Path) -> None:
    console = (
        "Root Cause:\n"
        "[0]:\n"
        "  time: 2021-09-14_22:01:06\n"
        "  rank: 0 (local_rank: 0)\n"
        "  exitcode: 1 (pid: 1092727)\n"
        "  error_file: /tmp/torchelastic_aeyvjbpe/none_8zuih7tj/attempt_0/0/error.json\n"
        "  msg:\n"
        "    {\n"
        '      "message": "RuntimeError: bad sample 17 \\"x\\"",\n'
        '      "extraInfo": {\n'
        '        "py_callstack": "Traceback (most recent call last):\\n  File \\"train.py\\", line 9"\n'
        "      }\n"
        "    }\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.first_death is not None
    assert (d.verdict.first_death.rank, d.verdict.first_death.cause) == (0, Cause.PYTHON_EXCEPTION)
    assert d.verdict.first_death.detail == 'RuntimeError: bad sample 17 "x"'


@pytest.mark.parametrize(
    ("line", "cause"),
    [
        (
            "mpiexec has exited due to process rank 0 with PID 0 on\nnode errorThor exiting improperly.",
            Cause.SILENT_EXIT,
        ),
        ('prterun has exited due to process rank 0 with PID 0 on node dgx13 calling\n"abort".', Cause.ABORT),
    ],
)
def test_mpiruns_exited_due_to_line_alone_is_that_ranks_end(tmp_path: Path, line: str, cause: Cause) -> None:
    banner = "-" * 74 + "\n"
    d = run(tmp_path, {"console.log": banner + line + "\n" + banner})
    assert d.verdict.first_death is not None
    assert (d.verdict.first_death.rank, d.verdict.first_death.cause) == (0, cause)


def test_torchx_roles_named_after_a_dotted_function_are_a_layer_too(tmp_path: Path) -> None:
    """NeMo-Run names a torchx role after its task's qualified name: `nemo.collections.llm.api.pretrain/0 `,
    then torchrun's `[default0]:` tee and PyTorch's `[rank0]: `."""
    frames = ['  File "/opt/train.py", line 3, in <module>', "    main()", "ValueError: bad sample"]
    role = "nemo.collections.llm.api.pretrain/0 [default0]:"
    log = "".join(f"{role}[rank0]:{text}\n" for text in ["Traceback (most recent call last):", *frames])
    d = run(tmp_path, {"console.log": f"{role}step 1\n" + log})
    first = d.verdict.first_death
    assert first is not None
    assert (first.rank, first.cause, first.host) == (0, Cause.PYTHON_EXCEPTION, "nemo.collections.llm.api.pretrain/0")


_BUS = "ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm).\n"


def test_a_launch_command_of_one_process_makes_every_untagged_failure_rank_0s(tmp_path: Path) -> None:
    """`torch.distributed.launch --nproc_per_node=1` with no `--nnodes`: a job of one rank, whose lines are rank 0's."""
    console = "$ python -m torch.distributed.launch --nproc_per_node=1 train.py --epochs 2\nready to train!\n" + _BUS
    d = run(tmp_path, {"console.log": console})
    first = d.verdict.first_death
    assert d.verdict.outcome is Outcome.FIRST_DEATH
    assert first is not None and (first.rank, first.cause) == (0, Cause.BUS_ERROR)


@pytest.mark.parametrize(
    "command",
    [
        "torchrun --nproc_per_node=1 --nnodes=2 --node_rank=1 --master_addr=10.0.0.1 train.py",
        "torchrun --nproc_per_node=2 train.py",
        "x:1:1 [0] NCCL INFO comm 0x7f55 rank 0 nranks 1 cudaDev 0 nvmlDev 0 - Init COMPLETE",
    ],
)
def test_no_rank_is_taken_for_untagged_failures_of_a_bigger_or_unstated_job(tmp_path: Path, command: str) -> None:
    """Other nodes, two processes, or only a communicator of one (a group of a bigger job): the rank stays unknown."""
    d = run(tmp_path, {"console.log": command + "\nready to train!\n" + _BUS})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (None, Cause.BUS_ERROR)


_CRAY_HEAD = (
    "MPICH ERROR [Rank 409] [job id 3072903.0] [Wed Aug 31 00:41:07 2022] [nid001780] - Abort(740940175) "
    "(rank 409 in comm 0): Fatal error in PMPI_Send: Other MPI error, error stack:\n"
)
_OFI_STACK = (
    "PMPI_Send(163).................: MPI_Send(buf=0x7fad8a147f90, count=1706944, MPI_CHAR, dest=408) failed\n"
    "MPID_Progress_wait(184)........: \n"
    "MPIDI_OFI_handle_cq_error(1059): OFI poll failed (ofi_events.c:1061:MPIDI_OFI_handle_cq_error:"
    "Input/output error - CANCELED)\n"
)


def test_the_network_layer_at_the_bottom_of_mpichs_error_stack_is_the_aborted_ranks_cause(tmp_path: Path) -> None:
    """Cray MPICH's abort names the rank; the untagged stack under it ends in libfabric's completion error: the
    abort was of a network error at that rank, shown with both lines, and the fix is the network rule's."""
    d = run(tmp_path, {"console.log": _CRAY_HEAD + _OFI_STACK})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (409, Cause.NCCL_ERROR)
    assert first.rule == "mpi.mpich-stack-network-error"
    assert [e.where.line for e in first.evidence][:2] == [1, 4]


def test_a_network_stack_line_with_no_head_before_it_is_a_network_error_of_no_rank(tmp_path: Path) -> None:
    d = run(tmp_path, {"console.log": "step 3 done\n" + _OFI_STACK})
    first = d.verdict.first_death
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert first is not None and (first.rank, first.cause) == (None, Cause.NCCL_ERROR)
