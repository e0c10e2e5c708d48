"""The verdict's outcome, its confidence caps and the exit status, on small logs in the emitters' formats."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import pytest
from test_verdict import run, step_lines, watchdog
from typer.testing import CliRunner

from rankautopsy.cli import app
from rankautopsy.model import Cause, Confidence, Effect, Outcome, Role


def failed(local_rank: int, code: int, pid: int, second: int = 5) -> str:
    return (
        f"E1129 07:10:{second:02d}.000000 4100 torch/distributed/elastic/multiprocessing/api.py:882] "
        f"failed (exitcode: {code}) local_rank: {local_rank} (pid: {pid}) of binary: /usr/bin/python\n"
    )


def test_ranks_that_all_abort_together_are_undetermined_not_a_guess(tmp_path: Path) -> None:
    """Every rank SIGABRTed in the same second (a watchdog's abort): the exits cannot order them."""
    console = step_lines(0, 5) + step_lines(1, 5) + step_lines(2, 5)
    console += "".join(failed(r, -6, 4200 + r) for r in range(3))
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    first = d.verdict.first_death  # the cause they share is known, the rank is not
    assert first is not None and (first.rank, first.cause) == (None, Cause.ABORT)
    assert d.verdict.confidence is Confidence.LOW
    assert any("own logs" in step for step in d.verdict.fetch_next)


@pytest.mark.parametrize(
    ("raised", "cause"),
    [
        ("RuntimeError: NCCL error in: /pytorch/torch/lib/c10d/NCCLUtils.hpp:82, invalid argument, NCCL version 2.4.8",
         Cause.NCCL_ERROR),
        ("ValueError: bad sample 7", Cause.PYTHON_EXCEPTION),
        ("", Cause.SILENT_EXIT),
    ],
)  # fmt: skip
def test_ranks_that_all_exit_1_under_an_exception_tied_to_no_rank_share_its_cause(
    tmp_path: Path, raised: str, cause: Cause
) -> None:
    """srun's exit lines right under an exception no line ties to a rank: the exits are no part of its message,
    and exit status 1 is how Python ends after an uncaught one, so the tie is of that cause, not of silent exits."""
    head = f'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n{raised}\n' if raised else ""
    console = head + (
        "srun: error: node-0: tasks 0-3: Exited with exit code 1\n"
        "srun: error: node-1: tasks 4-7: Exited with exit code 1\n"
    )
    d = run(tmp_path, {"console.log": console})
    first = d.verdict.first_death
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.confidence is Confidence.LOW
    assert first is not None and (first.rank, first.cause) == (None, cause)
    assert [r.rank for r in d.ranks] == list(range(8))


@pytest.mark.parametrize(
    ("own_lines", "cause", "said"),
    [
        (True, Cause.SILENT_EXIT, "exit code 1, no message"),
        (False, Cause.PYTHON_EXCEPTION, "none of the rank's own lines are here"),
    ],
)
def test_an_exit_1_with_no_error_line_says_whether_the_rank_spoke_at_all(
    tmp_path: Path, own_lines: bool, cause: Cause, said: str
) -> None:
    """`no message` is a claim only where the rank's own lines are in the logs. With torchrun's report alone, the
    script's exit status 1 is how Python ends after an uncaught exception, whose traceback is not here."""
    console = (step_lines(1, 3) if own_lines else "") + failed(1, 1, 4201)
    d = run(tmp_path, {"console.log": console})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, cause)
    assert said in first.detail
    assert d.verdict.confidence is Confidence.MEDIUM


@pytest.mark.parametrize(
    "report",
    [
        "mpirun detected that one or more processes exited with non-zero status, thus causing\nthe job to be "
        "terminated. The first process to do so was:\n\n  Process name: [[2663,1],1]\n  Exit code:    1\n",
        "torch.multiprocessing.spawn.ProcessExitedException: process 1 terminated with exit code 1\n",
    ],
)
def test_an_exit_1_of_a_program_not_known_as_a_python_script_stays_an_exit_with_no_message(
    tmp_path: Path, report: str
) -> None:
    """mpirun runs any program; mp.spawn's wrapper reports an exception itself, so its bare exit 1 is a sys.exit."""
    d = run(tmp_path, {"console.log": report})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.SILENT_EXIT)
    assert "no message in these logs" in first.detail


_AGENT = "W0823 16:54:02.337000 4100 torch/distributed/elastic/"
_SIGNALLED = (
    _AGENT
    + "agent/server/api.py:688] Received Signals.SIGTERM death signal, shutting down workers\n"
    + "".join(
        _AGENT + f"multiprocessing/api.py:857] Sending process {p} closing signal SIGTERM\n" for p in (6236, 6239)
    )
    + "Traceback (most recent call last):\n"
    '  File "/usr/local/bin/torchrun", line 33, in <module>\n'
    '  File "/usr/local/lib/python3.10/dist-packages/torch/distributed/run.py", line 900, in main\n'
)  # the agent's own traceback (its SignalException), cut by the excerpt


_FRAMES = [
    "Traceback (most recent call last):",
    '  File "/opt/train.py", line 88, in <module>',
    "ValueError: bad batch",
]


_SUBMITIT = "submitit WARNING (2022-07-12 04:18:45,881) - Caught signal SIGUSR2 on learnfair0293: this job is {case}.\n"


@pytest.mark.parametrize("before", ["", "raise"])
@pytest.mark.parametrize(
    ("stop", "said"),
    [
        (_SIGNALLED, "sacct"),  # torchrun's agent got SIGTERM: who sent it is the thing to fetch
        (_SUBMITIT.format(case="preempted"), "preempted by its scheduler"),  # submitit's SIGUSR2: no stop by number
    ],
)
def test_a_launcher_stopped_from_outside_killed_the_job_unless_a_rank_failed_first(
    tmp_path: Path, before: str, stop: str, said: str
) -> None:
    """A launcher stopped from outside (torchrun's agent signalled; submitit's handler naming a preemption): where
    no rank's own failure comes first, the job was killed (no rank, low); a rank that raised before is still the
    first death."""
    raised = "".join(f"[rank1]:{line}\n" for line in _FRAMES) if before else ""
    d = run(tmp_path, {"console.log": step_lines(0, 3) + raised + stop})
    first = d.verdict.first_death
    if before:
        assert first is not None and (first.rank, first.cause) == (1, Cause.PYTHON_EXCEPTION)
        return
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.confidence is Confidence.LOW
    assert first is not None and (first.rank, first.cause) == (None, Cause.KILLED)
    assert any(said in line for line in [*d.verdict.fetch_next, *d.verdict.reasoning])


_SSH_CHECK = (
    "Traceback (most recent call last):\n"
    '  File "/opt/conda/lib/python3.10/site-packages/deepspeed/launcher/runner.py", line 437, in main\n'
    "    subprocess.check_call(ssh_check_cmd, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL, shell=True)\n"
    "subprocess.CalledProcessError: Command 'ssh -o PasswordAuthentication=no worker-1 hostname' returned non-zero"
    " exit status 255.\n"
)


@pytest.mark.parametrize(
    ("console", "fix"),
    [
        ("ORTE was unable to reliably start one or more daemons.\nThis usually is caused by:\n", "which orted"),
        (_SSH_CHECK, "PasswordAuthentication=no HOST hostname"),
    ],
)
def test_a_launch_that_failed_names_no_rank_and_gives_the_launchers_fix(tmp_path: Path, console: str, fix: str) -> None:
    """The launcher could not start the job (mpirun's daemons, DeepSpeed's ssh check): no rank ran, so none died
    first; the checklist is the failed launch's, and the launcher's output is not asked for: it is what was read."""
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death is None
    assert any("could not start the job" in line for line in d.verdict.reasoning)
    assert d.verdict.remediation and all(step.startswith("Fix the cause: ") for step in d.verdict.remediation)
    assert any(fix in step for step in d.verdict.remediation)
    assert not any("launcher's own output" in step for step in d.verdict.fetch_next)


def test_a_launch_failure_line_after_a_ranks_own_failure_changes_nothing(tmp_path: Path) -> None:
    raised = "".join(f"[rank1]:{line}\n" for line in _FRAMES)
    d = run(
        tmp_path,
        {"console.log": step_lines(0, 3) + raised + "ORTE was unable to reliably start one or more daemons.\n"},
    )
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.PYTHON_EXCEPTION)
    assert not any("could not start the job" in line for line in d.verdict.reasoning)


_SPAWN_RELAY = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 51, in main\n'
    "    mp.spawn(train, nprocs=args.gpus, args=(args,), join=True)\n"
    "Exception: \n"
    "\n"
    "-- Process 1 terminated with the following error:\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/torch/multiprocessing/spawn.py", line 20, in _wrap\n'
    "    fn(i, *args)\n"
    "ValueError: bad sample 7\n"
)


@pytest.mark.parametrize("own", [False, True])
def test_a_rank_known_only_by_spawns_process_index_says_so(tmp_path: Path, own: bool) -> None:
    """spawn's `-- Process N` is the process's index on its node: the global rank only on one node. Where no line of
    the rank's own ties it otherwise, the report says so; where its own prefixed lines do, it does not."""
    before = "".join(f"[rank1]: step {n} loss 0.5\n" for n in range(3)) if own else ""
    d = run(tmp_path, {"console.log": before + _SPAWN_RELAY})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.PYTHON_EXCEPTION)
    assert any("process index" in cap for cap in d.verdict.caps) is not own


@pytest.mark.parametrize("skipped", [False, True])
def test_an_ib_device_nccl_could_not_open_is_skipped_not_a_death(tmp_path: Path, skipped: bool) -> None:
    """NCCL's start-up warns `Call to ibv_open_device failed`, then `NET/IB : Unable to open device X`, and tries
    the next device: the failed call is no death. Without the second line it still reads as the rank's error."""
    console = "node1:4242:4242 [0] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed\n"
    if skipped:
        console += "node1:4242:4242 [0] transport/net_ib.cc:117 NCCL WARN NET/IB : Unable to open device mlx5_6\n"
    d = run(tmp_path, {"console.log": console})
    seen = [u.cause for u in d.verdict.unattributed]
    assert (Cause.NCCL_ERROR in seen) is not skipped


@pytest.mark.parametrize(("code", "exit_line"), [("-1", None), ("1", "exit code 1")])
def test_open_mpis_abort_banner_is_the_aborting_ranks_death(tmp_path: Path, code: str, exit_line: str | None) -> None:
    """Open MPI prints `MPI_ABORT was invoked on rank R` from the rank that called MPI_Abort: with nothing else
    in its lines it died of that abort. A negative error code is no signal: no exit status is read from it."""
    console = f"MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD\nwith errorcode {code}.\n"
    d = run(tmp_path, {"console.log": console})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (0, Cause.ABORT)
    assert (exit_line in first.detail) if exit_line else "no exit code" in first.detail
    assert "called MPI_Abort" in d.verdict.remediation[0]  # the banner's own fix, not C++ terminate's


def test_a_cause_line_that_labels_its_own_process_by_local_rank_names_that_rank(tmp_path: Path) -> None:
    """OLMo's excepthook line carries `rank=N`, its process's local rank: on one host, the rank that died."""
    console = (
        "[2024-04-18 19:06:17] INFO     [olmo.train:816, rank=0] [step=75/739328]\n"
        "[2024-04-18 19:10:41] CRITICAL [olmo.util:158, rank=1] Uncaught OLMoThreadError: data thread 3 failed\n"
    )
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.PYTHON_EXCEPTION)


def test_a_kernel_oom_line_pasted_into_a_console_is_a_host_oom_of_no_rank(tmp_path: Path) -> None:
    console = (
        "[2025-01-08 10:00:00,000] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 410127\n"
        "[856341.770960] Out of memory: Killed process 410126 (python) total-vm:79905000kB, anon-rss:22957108kB,"
        " file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:50000kB oom_score_adj:0\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert [u.cause for u in d.verdict.unattributed] == [Cause.HOST_OOM]
    assert d.verdict.first_death is not None and d.verdict.first_death.rank is None


def test_a_death_of_no_rank_keeps_the_process_its_line_names(tmp_path: Path) -> None:
    """Ray's `(pid=N)` names the worker a segfault happened in, though no rank: the verdict keeps that pid, and the
    report says it, so the worker's own log can be found."""
    console = "(pid=412205) *** SIGSEGV received at time=1765982031 on cpu 95 ***\n"
    d = run(tmp_path, {"console.log": console})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause, first.pid) == (None, Cause.SEGFAULT, 412205)
    from rankautopsy.render._labels import outcome_lines

    assert outcome_lines(d.verdict)[0] == "cause seen: segfault, rank unknown (pid 412205)"


def test_a_job_submitit_saw_timed_out_ended_at_its_time_limit(tmp_path: Path) -> None:
    d = run(tmp_path, {"console.log": step_lines(0, 3) + _SUBMITIT.format(case="timed-out")})
    first = d.verdict.first_death
    assert first is not None and first.cause is Cause.TIME_LIMIT


@pytest.mark.parametrize(("why", "tasks"), [("DUE TO TASK FAILURE", "0-1,3"), ("DUE TO PREEMPTION", "0-3")])
def test_a_step_slurm_cancelled_for_a_task_failure_was_not_stopped_from_outside(
    tmp_path: Path, why: str, tasks: str
) -> None:
    """SLURM cancels a step when one of its tasks fails: a task died first, so the job is no stop from outside, as
    a preemption is; the one task srun did not report stopped (rank 2 here) is where to look, a hint, no verdict."""
    outside = why == "DUE TO PREEMPTION"
    console = (
        "".join(f"{r}: step 3\n" for r in range(4))
        + f"slurmstepd: error: *** STEP 1234.0 ON node12 CANCELLED AT 2026-11-29T07:00:00 {why} ***\n"
        + f"srun: error: node12: tasks {tasks}: Terminated\nsrun: Force Terminated StepId=1234.0\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death is None
    assert any("ended from outside" in line for line in d.verdict.reasoning) is outside
    assert any("rank 2 (its own log" in step for step in d.verdict.fetch_next) is not outside


def test_the_named_rule_is_the_one_that_read_the_decisive_line(tmp_path: Path) -> None:
    """A traceback ending in a CUDA OOM: the death's rule is the OOM's rule, which read the exception line and gave
    the cause, not the traceback's, whose title says only that something raised."""
    tb = ["Traceback (most recent call last):", '  File "/opt/train.py", line 88, in <module>',
          "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."]  # fmt: skip
    d = run(tmp_path, {"console.log": step_lines(0, 3) + "".join(f"[rank1]:{line}\n" for line in tb)})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.CUDA_OOM)
    assert first.rule is not None and first.rule != "python.traceback" and "oom" in first.rule


def test_an_abort_after_a_watchdog_fired_is_no_first_death_and_one_before_it_is(tmp_path: Path) -> None:
    """NCCL's watchdog ends a rank it finds stuck with SIGABRT. An exit of -6 that the launcher noticed after a
    watchdog's timeout line (an untagged tee: not tied to a rank) may be that abort: undetermined. An abort
    noticed before any watchdog fired is the first death, the timeouts after it its consequence."""
    timeout = (
        "stderr: [E ProcessGroupNCCL.cpp:461] To avoid data inconsistency, we are taking the entire process down.\n"
        "stderr:   what():  [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
        "OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1808212 milliseconds before timing out.\n"
    )
    after = run(tmp_path / "after", {"console.log": step_lines(0, 3) + timeout + failed(0, -6, 4200)})
    assert after.verdict.outcome is Outcome.UNDETERMINED and after.verdict.first_death is None
    assert after.verdict.confidence is Confidence.LOW
    assert any("watchdog" in r for r in after.verdict.reasoning)
    dump = (
        "[rank4]:[E1129 07:10:04.315831399 ProcessGroupNCCL.cpp:1685] [PG ID 0 PG GUID 0(default_pg) Rank 4] "
        "Observed flight recorder dump signal from another rank via TCPStore.\n"
    )  # another rank's watchdog asked for dumps: it fired
    observed = run(tmp_path / "dump", {"console.log": step_lines(0, 3) + dump + failed(1, -6, 4201)})
    assert observed.verdict.outcome is Outcome.UNDETERMINED and observed.verdict.first_death is None
    before = run(tmp_path / "before", {"console.log": step_lines(0, 3) + failed(1, -6, 4201) + timeout})
    first = before.verdict.first_death
    assert before.verdict.outcome is Outcome.FIRST_DEATH
    assert first is not None and (first.rank, first.cause) == (1, Cause.ABORT)


def test_a_restarted_ranks_later_error_does_not_hide_its_first_death(tmp_path: Path) -> None:
    """torchrun --max-restarts: rank 0 segfaulted (-11), then failed again with an exception later."""
    console = (
        step_lines(0, 3)
        + failed(0, -11, 4200, second=3)
        + "2026-11-29 07:10:20,000 ERROR [rank 0] Traceback (most recent call last):\n"
        + '2026-11-29 07:10:20,000 ERROR [rank 0]   File "train.py", line 3, in <module>\n'
        + "2026-11-29 07:10:20,000 ERROR [rank 0] ValueError: bad sample\n"
    )
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (0, Cause.SEGFAULT)


def test_a_cause_on_no_ranks_line_is_reported_with_rank_null(tmp_path: Path) -> None:
    console = (
        step_lines(0, 5) + step_lines(1, 5) + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    first = d.verdict.first_death
    assert first is not None and first.rank is None and first.cause is Cause.CUDA_OOM
    assert d.verdict.confidence is Confidence.LOW
    assert [u.cause for u in d.verdict.unattributed] == [Cause.CUDA_OOM]


def test_an_unranked_tracebacks_evidence_is_its_exception_line(tmp_path: Path) -> None:
    """Where no rank is tied to a traceback, the line shown and cited is the one that names the error."""
    tb = 'Traceback (most recent call last):\n  File "t.py", line 1, in <module>\n    f()\nValueError: bad sample 7\n'
    d = run(tmp_path, {"console.log": step_lines(0, 5) + step_lines(1, 5) + tb})
    first = d.verdict.first_death
    assert first is not None and first.rank is None and first.cause is Cause.PYTHON_EXCEPTION
    assert first.evidence[0].text == "ValueError: bad sample 7" and first.detail == "ValueError: bad sample 7"
    (told,) = [u.told for u in d.verdict.unattributed]
    assert told is not None and told.where.line == first.evidence[0].where.line == 14
    assert any(r.endswith("console.log:14, but no rank is tied to it") for r in d.verdict.reasoning), d.verdict


def test_no_failure_is_not_clean_without_every_ranks_end(tmp_path: Path) -> None:
    d = run(tmp_path, {"rank_0.log": step_lines(0, 5), "rank_1.log": step_lines(1, 5)})
    assert d.verdict.outcome is Outcome.NO_FAILURE
    assert d.verdict.confidence is Confidence.LOW  # nothing shows an end: the lines may stop before the failure


def test_no_failure_is_medium_when_some_rank_logged_its_end(tmp_path: Path) -> None:
    done = "2026-11-29 07:00:09,000 INFO training completed\n"
    d = run(tmp_path, {"rank_0.log": step_lines(0, 5) + done, "rank_1.log": step_lines(1, 5)})
    assert d.verdict.outcome is Outcome.NO_FAILURE
    assert d.verdict.confidence is Confidence.MEDIUM


def test_clean_needs_every_rank_to_end(tmp_path: Path) -> None:
    done = "2026-11-29 07:00:09,000 INFO training completed\n"
    d = run(tmp_path, {"rank_0.log": step_lines(0, 5) + done, "rank_1.log": step_lines(1, 5) + done})
    assert d.verdict.outcome is Outcome.CLEAN
    assert d.verdict.confidence is Confidence.HIGH


def test_one_ranks_log_alone_is_never_high(tmp_path: Path) -> None:
    tb = 'Traceback (most recent call last):\n  File "t.py", line 1, in <module>\nValueError: bad sample 7\n'
    d = run(tmp_path, {"rank_3.log": step_lines(3, 5) + tb})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (3, Cause.PYTHON_EXCEPTION)
    assert d.verdict.confidence is Confidence.MEDIUM
    assert any("only this rank" in cap for cap in d.verdict.caps)


@pytest.mark.parametrize(
    ("files", "status", "outcome"),
    [
        ({"rank_0.log": step_lines(0, 5), "rank_1.log": step_lines(1, 5)}, 0, "no_failure"),
        ({"console.log": step_lines(0, 5) + step_lines(1, 5) + failed(0, -6, 1) + failed(1, -6, 2)}, 3, "undetermined"),
        ({"console.log": step_lines(0, 5) + step_lines(1, 5) + failed(1, -9, 2)}, 1, "first_death"),
    ],
)
def test_exit_status_follows_the_outcome(tmp_path: Path, files: dict[str, str], status: int, outcome: str) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    result = CliRunner().invoke(app, ["diagnose", str(tmp_path), "--format", "json"])
    assert (result.exit_code, json.loads(result.stdout)["verdict"]["outcome"]) == (status, outcome)
    zero = CliRunner().invoke(app, ["diagnose", str(tmp_path), "--format", "json", "--exit-zero"])
    assert zero.exit_code == 0


@pytest.mark.parametrize(
    ("lines", "rank", "cause"),
    [
        (  # Open MPI 5 / PRRTE breaks the sentence after "exited on" (help-prun.txt)
            [
                "prterun noticed that process rank 2 with PID 4242 on node node01 exited on",
                "signal 11 (Segmentation fault).",
            ],
            2,
            Cause.SEGFAULT,
        ),
        (  # Hydra's banner: the PID line, then the exit status (pmiserv_cb.c)
            [
                "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",
                "=   RANK 1 PID 4241 RUNNING AT node01",
                "",
                "=   KILLED BY SIGNAL: 9 (Killed)",
            ],
            1,
            Cause.KILLED,
        ),
        (  # Open MPI's "first process to do so" block
            ["  Process name: [[41536,1],3]", "  Exit code:    139"],
            3,
            Cause.SEGFAULT,
        ),
    ],
)
def test_a_launcher_message_broken_over_two_lines_is_read_whole(
    tmp_path: Path, lines: list[str], rank: int, cause: Cause
) -> None:
    console = "".join(step_lines(r, 5) for r in range(4)) + "\n".join(lines) + "\n"
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (rank, cause)


def test_the_rank_that_only_lost_its_peers_after_the_others_timed_out_is_the_straggler(tmp_path: Path) -> None:
    def err(rank: int, second: int, what: str) -> str:
        return f"2026-11-29 07:01:{second:02d},000 ERROR [rank {rank}] RuntimeError: {what}\n"

    timeout = (
        "[/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:81] "
        "Timed out waiting 30000ms for recv operation to complete"
    )
    closed = "[/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [127.0.0.1]:1234"
    files = {f"rank_{r}.log": step_lines(r, 4) + err(r, 30, timeout) for r in (0, 1)}
    files["rank_2.log"] = step_lines(2, 4) + err(2, 41, closed)
    d = run(tmp_path, files)
    first = d.verdict.first_death
    assert d.verdict.outcome is Outcome.HANG
    assert first is not None and (first.rank, first.cause) == (2, Cause.HANG)
    assert d.verdict.confidence is Confidence.MEDIUM
    early = run(tmp_path / "early", {**files, "rank_2.log": step_lines(2, 4) + err(2, 10, closed)})
    assert early.verdict.outcome is not Outcome.HANG  # a peer lost before any timeout is not a straggler


def test_a_dataloader_workers_oom_kill_in_the_kernel_log_names_the_sender(tmp_path: Path) -> None:
    """The rank's own line names its worker's pid; the kernel's OOM kill of that pid says who sent SIGKILL."""
    rank1 = step_lines(1, 5) + (
        "2026-11-29 07:00:06,000 ERROR [rank 1] RuntimeError: "
        "DataLoader worker (pid 5150) is killed by signal: Killed.\n"
    )
    oom = (
        "[Sun Nov 29 07:00:05 2026] Out of memory: Killed process 5150 (pt_data_worker) "
        "total-vm:9000kB, anon-rss:8000kB\n"
    )
    files = {"rank_0.log": step_lines(0, 5), "rank_1.log": rank1}
    without = run(tmp_path / "a", files).verdict.first_death
    assert without is not None and (without.rank, without.cause) == (1, Cause.KILLED)
    first = run(tmp_path / "b", {**files, "dmesg.txt": oom}, tz=UTC).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.HOST_OOM)


def test_ctrl_c_is_a_stop_from_outside_and_the_rank_nobody_heard_from_hung(tmp_path: Path) -> None:
    def tb(rank: int, last: str) -> str:
        return (
            f"[rank{rank}]: Traceback (most recent call last):\n"
            f'[rank{rank}]:   File "train.py", line 9, in <module>\n'
            f"[rank{rank}]: {last}\n"
        )

    closed = "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer [::1]:5"
    console = "".join(f"[rank{r}]: step {s}\n" for s in range(3) for r in range(3))
    console += tb(0, closed) + tb(1, closed) + tb(2, "KeyboardInterrupt")
    d = run(tmp_path, {"console.log": console})
    first = d.verdict.first_death
    assert d.verdict.outcome is Outcome.HANG
    assert first is not None and (first.rank, first.cause) == (2, Cause.HANG)


def test_a_traceback_cut_off_before_its_exception_line_names_no_rank(tmp_path: Path) -> None:
    """Untagged, a traceback may be a caught exception's, logged: cut before its type, it names no death, only
    a Python exception seen. Tagged by PyTorch's excepthook (`[rank3]: `), it ended that rank, its type unknown."""
    cut = 'step 1\nTraceback (most recent call last):\n  File "train.py", line 9, in <module>\n    run()\n'
    d = run(tmp_path / "cut", {"rank_3.log": cut, "rank_2.log": "step 1\n"})
    assert d.verdict.first_death is not None
    assert (d.verdict.first_death.rank, d.verdict.first_death.cause) == (None, Cause.PYTHON_EXCEPTION)
    assert (d.verdict.outcome, d.verdict.confidence) == (Outcome.UNDETERMINED, Confidence.LOW)
    assert any(
        "rank 3 printed a traceback at " in r and "rank_3.log:2 that is cut off" in r for r in d.verdict.reasoning
    )
    assert any(step.startswith("the rest of rank 3's output") for step in d.verdict.fetch_next)
    whole = cut + "ValueError: bad sample\n"
    first = run(tmp_path / "whole", {"rank_3.log": whole, "rank_2.log": "step 1\n"}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (3, Cause.PYTHON_EXCEPTION)
    tagged = "".join(f"[rank3]: {line}\n" for line in cut.splitlines()[1:])
    hooked = run(tmp_path / "hooked", {"console.log": "[rank2]:[I1129 07:00:00.1 x.cpp:1] step 1\n" + tagged}).verdict
    assert hooked.first_death is not None and (hooked.first_death.rank, hooked.confidence) == (3, Confidence.LOW)
    assert any("the rest of rank 3's traceback" in step for step in hooked.fetch_next)


@pytest.mark.parametrize(
    "frame",
    [
        '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/run.py", line 762, in main',
        '  File "/opt/conda/lib/python3.10/site-packages/torch/multiprocessing/spawn.py", line 160, in join',
        'File "E:\\env\\lib\\site-packages\\accelerate\\commands\\launch.py", line 734, in multi_gpu_launcher',
    ],
)
def test_a_launchers_traceback_cut_off_is_no_python_exception_of_the_job(tmp_path: Path, frame: str) -> None:
    """torchrun, mp.spawn's parent and Accelerate raise in their own code because a worker failed: their
    traceback cut before its ChildFailedError says a worker failed, not that the job's code raised."""
    console = f'step 1\nTraceback (most recent call last):\n  File "/usr/bin/torchrun", line 8, in <module>\n{frame}\n'
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert d.verdict.first_death is None
    worker = console.replace(frame, '  File "train.py", line 9, in <module>')
    first = run(tmp_path / "worker", {"console.log": worker}).verdict.first_death
    assert first is not None and first.cause is Cause.PYTHON_EXCEPTION


def test_a_cut_traceback_whose_process_went_on_gives_no_cause(tmp_path: Path) -> None:
    """Under `Exception ignored in:` (a `__del__` that raised at shutdown) the process went on: cut before its
    type, the traceback is no Python exception that ended anything."""
    cut = 'Traceback (most recent call last):\n  File "llm.py", line 732, in __del__\n    self.shutdown()\n'
    ignored = run(tmp_path / "ignored", {"console.log": "Exception ignored in: <function LLM.__del__>\n" + cut})
    assert ignored.verdict.first_death is None or ignored.verdict.first_death.cause is not Cause.PYTHON_EXCEPTION
    raised = run(tmp_path / "raised", {"console.log": "step 1\n" + cut}).verdict.first_death
    assert raised is not None and raised.cause is Cause.PYTHON_EXCEPTION


def test_a_cut_traceback_under_a_collective_timeout_gives_no_cause(tmp_path: Path) -> None:
    """After a collective timeout in its output, a traceback cut before its type is as likely that wait's
    DistBackendError as a failure of its own: the verdict gives no cause. Before it, it is the cause seen."""
    timeout = (
        "[E ProcessGroupNCCL.cpp:821] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, "
        "OpType=ALLGATHER, Timeout(ms)=1800000) ran for 1808940 milliseconds before timing out.\n"
    )
    cut = 'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n    run()\n'
    under = run(tmp_path / "under", {"console.log": timeout + cut}).verdict
    assert under.outcome is Outcome.UNDETERMINED
    assert under.first_death is None or under.first_death.cause is not Cause.PYTHON_EXCEPTION
    above = run(tmp_path / "above", {"console.log": "step 1\n" + cut.replace("    run()\n", "") + timeout}).verdict
    assert above.first_death is not None and above.first_death.cause is Cause.PYTHON_EXCEPTION


def test_a_rank_whose_traceback_is_cut_is_not_eliminated_as_the_one_that_reported_nothing(tmp_path: Path) -> None:
    """Rank 1 lost its peer; rank 2's traceback ends before its exception. Its exception may be the same
    lost peer: it is not "the only rank that did not report waiting", and nothing else names a culprit."""
    closed = (
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:544] Connection closed by peer [10.0.0.5]:36068"
    )
    frames = '[rank{r}]: Traceback (most recent call last):\n[rank{r}]:   File "train.py", line 9, in <module>\n'
    steps = "".join(f"[rank{r}]: step {s}\n" for s in range(3) for r in (1, 2))
    lost = steps + frames.format(r=1) + f"[rank1]: {closed}\n"
    untagged = 'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n    run()\n'
    d = run(tmp_path, {"console.log": lost, "rank_2.log": untagged})  # a caught exception's, logged, reads so too
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death is None
    assert any("rank 2 is the only rank that reported no wait, but its traceback at" in n for n in d.verdict.notes)
    tagged = run(tmp_path / "tagged", {"console.log": lost + frames.format(r=2) + "[rank2]:     run()\n"}).verdict
    assert tagged.first_death is not None and (tagged.first_death.rank, tagged.confidence) == (2, Confidence.LOW)
    hung = run(tmp_path / "silent", {"console.log": lost}).verdict  # rank 2: nothing after its steps
    assert hung.first_death is not None and hung.first_death.rank == 2  # named: it vanished, nothing hides a report


def test_a_restarted_rank_that_only_waited_in_its_second_life_died_first_in_its_first(tmp_path: Path) -> None:
    """Attempt 0: rank 0 segfaults. Attempt 1: both ranks fail to reconnect (symptoms only)."""
    mesh = (
        "RuntimeError: Gloo connectFullMesh failed with [../third_party/gloo/gloo/transport/tcp/pair.cc:152] "
        "timed out connecting: SO_ERROR: Connection refused, remote=[127.0.1.1]:21921"
    )
    console = (
        step_lines(0, 3)
        + step_lines(1, 3)
        + failed(0, -11, 4200, second=3)
        + "".join(f"2026-11-29 07:10:30,000 ERROR [rank {r}] {mesh}\n" for r in (0, 1))
        + failed(0, 1, 4300, second=31)
    )
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (0, Cause.SEGFAULT)


def test_an_exit_report_tied_to_no_rank_still_says_how_a_process_died(tmp_path: Path) -> None:
    """Hydra names a pid no line ties to a rank, and its exit status: the cause is known, the rank is not."""
    block = (
        "===================================================================================\n"
        "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
        "=   PID 4827 RUNNING AT node01\n"
        "=   EXIT CODE: 9\n"
        "=   CLEANING UP REMAINING PROCESSES\n"
        "=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES\n"
        "===================================================================================\n"
    )
    d = run(tmp_path, {"console.log": step_lines(0, 3) + step_lines(1, 3) + block})
    first = d.verdict.first_death
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert first is not None and (first.rank, first.cause) == (None, Cause.KILLED)


_ACTOR_DIED = (
    "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
    "\tclass_name: RayTrainWorker\n\tpid: 43514\n\tip: 127.0.0.1\n"
    "The actor is dead because its worker process has died. Worker exit type: {}\n"
)
_END_OF_FILE = "Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file."
_DRIVER_FRAMES = (
    "Traceback (most recent call last):\n"
    '  File "/verl/trainer/main_ppo.py", line 64, in main\n'
    "    run_ppo(config)\n"
    '  File "/verl/single_controller/ray/base.py", line 46, in func\n'
    "    output = ray.get(output)\n"
)


@pytest.mark.parametrize("frames", ["", _DRIVER_FRAMES])
@pytest.mark.parametrize(
    ("exit_type", "exits", "seen"),
    [
        (f"SYSTEM_ERROR {_END_OF_FILE}", 1, []),  # the process vanished: how, Ray cannot tell
        (f"INTENDED_USER_EXIT {_END_OF_FILE}", 0, []),
        ("NODE_OUT_OF_MEMORY Worker exit detail: Task was killed due to the node running low on memory.", 1,
         [Cause.HOST_OOM]),
    ],
)  # fmt: skip
def test_a_dead_ray_actor_tied_to_no_rank_fails_the_job_and_only_a_failed_exit_is_an_exit(
    tmp_path: Path, frames: str, exit_type: str, exits: int, seen: list[Cause]
) -> None:
    """The driver's ActorDiedError (bare, or ending its traceback) is a call that failed: the job failed, of a
    process no line maps to a rank (pid 43514). The sentence under it that says how the actor ended is an exit
    of its own, not part of the caller's exception, unless the exit was intended; Ray's memory monitor's is a
    host OOM."""
    console = step_lines(0, 3) + step_lines(1, 3) + frames + _ACTOR_DIED.format(exit_type)
    d = run(tmp_path, {"console.log": console})
    first = d.verdict.first_death
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert (first.rank, first.cause) == (None, seen[0]) if first is not None else not seen  # a cause, no rank
    assert [e.cause for e in d.events if e.role is Role.SYMPTOM] == [Cause.PEER_LOST]
    assert len([e for e in d.events if Effect.EXIT in e.effects]) == exits
    assert [u.cause for u in d.verdict.unattributed] == seen


@pytest.mark.parametrize(
    "failure",
    [
        _DRIVER_FRAMES + "ray.exceptions.WorkerCrashedError: The worker died unexpectedly while executing this task. "
        "Check python-core-worker-*.log files for more information.\n",
        "[2025-11-23 22:52:54,526 E 51567 51567] core_worker_process.cc:223: Failed to register worker to Raylet: "
        "IOError: Failed to read data from the socket: End of file worker_id=01000000ffffffffffffffffffffffff\n",
    ],
)
def test_a_ray_process_lost_to_a_dead_worker_or_raylet_fails_the_job(tmp_path: Path, failure: str) -> None:
    """The caller's WorkerCrashedError, a core worker that cannot register with its raylet: the job failed,
    of a process the lines do not name."""
    d = run(tmp_path, {"console.log": step_lines(0, 3) + step_lines(1, 3) + failure})
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death is None
    assert [e.cause for e in d.events if e.role is Role.SYMPTOM] == [Cause.PEER_LOST]


def _rich_traceback(width: int) -> str:
    """What rich's traceback handler (`rich.traceback.install()`) prints, from rich itself."""
    import io

    from rich.console import Console
    from rich.traceback import Traceback

    def load(sample: int) -> None:
        raise ValueError(f"bad sample {sample} in shard /data/train-0001.tar")

    try:
        load(7)
    except ValueError:
        out = io.StringIO()
        Console(file=out, width=width, color_system=None).print(Traceback(width=width))
        return out.getvalue()
    raise AssertionError("unreachable")


@pytest.mark.parametrize("width", [80, 120])
def test_rich_tracebacks_are_tracebacks_and_their_box_is_no_hard_wrap(tmp_path: Path, width: int) -> None:
    box = _rich_traceback(width)
    assert box.startswith("╭") and "Traceback (most recent call last)" in box.splitlines()[0]
    files = {"rank_0.log": step_lines(0, 5), "rank_1.log": step_lines(1, 5) + box}
    d = run(tmp_path, files)
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.PYTHON_EXCEPTION)
    assert "ValueError: bad sample 7" in first.detail
    lines = {Path(i.path).name: i.lines for i in d.inputs}
    assert lines["rank_1.log"] == 5 + box.count("\n")  # every row of the box read as its own line


def test_intel_mpis_rank_in_the_bad_termination_block_gets_the_status_on_the_line_under_it(tmp_path: Path) -> None:
    """`RANK 6 PID ... RUNNING AT` names its rank in its own words; `KILLED BY SIGNAL` under it names none."""
    block = "".join(
        "===================================================================================\n"
        "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
        f"=   RANK {r} PID {2447372 + r} RUNNING AT node0009\n"
        "=   KILLED BY SIGNAL: 9 (Killed)\n"
        "===================================================================================\n\n"
        for r in (6, 7)
    )
    d = run(tmp_path, {"console.log": block})
    assert d.verdict.outcome is Outcome.UNDETERMINED  # two SIGKILLs in one burst: nothing orders them
    assert {r.rank: r.exitcode for r in d.ranks} == {6: -9, 7: -9}


@pytest.mark.parametrize("relay", ["torch.multiprocessing.spawn.ProcessRaisedException: ", "Exception:"])
def test_spawns_relay_of_a_childs_exception_is_that_death_not_another(tmp_path: Path, relay: str) -> None:
    """mp.spawn's parent re-raises (ProcessRaisedException; a plain `Exception:` before torch 1.8) with the
    child's traceback under `-- Process 5 terminated with the following error:`, which spawn prints only
    for a raise: rank 5 raised, even where the paste cuts its traceback before the exception line."""
    parent = [
        "Traceback (most recent call last):",
        '  File "main.py", line 472, in <module>',
        "    main()",
        '  File "torch/multiprocessing/spawn.py", line 103, in join',
        "    raise Exception(msg)",
        relay,
        "",
        "-- Process 5 terminated with the following error:",
        "Traceback (most recent call last):",
        '  File "torch/multiprocessing/spawn.py", line 11, in _wrap',
        "    fn(i, *args)",
        '  File "main.py", line 301, in train',
        "    for i, (input, target) in enumerate(train_loader):",
    ]
    d = run(tmp_path, {"console.log": "\n".join(parent) + "\n"})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (5, Cause.PYTHON_EXCEPTION)
    assert d.verdict.unattributed == ()  # the parent's re-raise is no other death


def test_an_exception_message_ends_at_the_launchers_banner_rule(tmp_path: Path) -> None:
    """mpirun's help text right under an untagged traceback is not the rest of the exception's message
    (it reclassified the traceback as mpirun's context line): the one rank that died raised it."""
    console = (
        "Traceback (most recent call last):\n"
        '  File "model_selection.py", line 723, in <module>\n'
        "    log(part_data[0][0])\n"
        "IndexError: list index out of range\n"
        "-------------------------------------------------------\n"
        "Primary job  terminated normally, but 1 process returned\n"
        "a non-zero exit code.. Per user-direction, the job has been aborted.\n"
        "-------------------------------------------------------\n"
        "--------------------------------------------------------------------------\n"
        "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
        "the job to be terminated. The first process to do so was:\n\n"
        "  Process name: [[35302,1],0]\n"
        "  Exit code:    1\n"
        "--------------------------------------------------------------------------\n"
    )
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (0, Cause.PYTHON_EXCEPTION)
    assert "IndexError" in first.detail


def test_another_ranks_cut_off_traceback_that_nothing_orders_keeps_the_verdict_below_high(tmp_path: Path) -> None:
    """Rank 7's CUDA OOM, and rank 4's traceback cut before its exception line, no time on either. (Rank 7's
    traceback is whole: an excerpt that opens at its exception line names no rank at all.)"""
    console = (
        "[rank7]: Traceback (most recent call last):\n"
        '[rank7]:   File "launcher.py", line 23, in <module>\n'
        "[rank7]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 270.00 MiB. GPU 7 has a total "
        "capacity of 23.65 GiB of which 208.06 MiB is free.\n"
        "[rank4]: Traceback (most recent call last):\n"
        '[rank4]:   File "launcher.py", line 23, in <module>\n'
        "[rank4]:     launch()\n"
    )
    d = run(tmp_path, {"console.log": console})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (7, Cause.CUDA_OOM)
    assert d.verdict.confidence is Confidence.MEDIUM
    assert any("rank 4 printed a traceback cut off" in n for n in d.verdict.notes)


@pytest.mark.parametrize(
    ("what", "cause"),
    [
        ("CUDA error: an illegal memory access was encountered", Cause.CUDA_ERROR),
        ("CUDA out of memory. Tried to allocate 2.00 GiB", Cause.CUDA_OOM),
        ("std::bad_alloc", Cause.ABORT),
    ],
)
def test_a_cpp_terminate_takes_the_cause_its_what_line_names(tmp_path: Path, what: str, cause: Cause) -> None:
    """libstdc++ prints `what():` under `terminate called after throwing`: the untagged pair is one cause,
    the one its message names, and mp.spawn's SIGABRT report ties it to process 3."""
    console = (
        "terminate called after throwing an instance of 'c10::Error'\n"
        f"  what():  {what}\n"
        "Exception raised from c10_cuda_check_implementation at ../c10/cuda/CUDAException.cpp:44\n"
        "torch.multiprocessing.spawn.ProcessExitedException: process 3 terminated with signal SIGABRT\n"
    )
    d = run(tmp_path, {"console.log": console})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (3, cause)
    assert [e.cause for e in d.events if e.role is Role.CAUSE] == [cause]  # the pair is one event
    assert f"c10::Error: {what}" in first.detail


# ---- a hang without a culprit: processes alive and stuck (Effect.STALLED), no death, no rank named ----

HANG_FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "torchrun-hang-faulthandler-pyspy-rank1" / "logs"


def pyspy(pid: int, frames: list[str]) -> str:
    body = "".join(f"    {frame}\n" for frame in frames)
    head = f"Process {pid}: python train.py\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
    return f'{head}Thread {pid} (idle): "MainThread"\n{body}'


IN_ALL_REDUCE = [
    "all_reduce (torch/distributed/distributed_c10d.py:3252)",
    "train (train.py:40)",
    "<module> (train.py:90)",
]


def test_a_real_console_of_interleaved_hang_dumps_is_a_hang_without_a_culprit(tmp_path: Path) -> None:
    """faulthandler's `Timeout (0:00:08)!` on both ranks, interleaved, then the launcher stopped from outside:
    a hang, but nothing says whose; exit status 3, as for any verdict that names no culprit."""
    log = tmp_path / "console.log"
    log.write_bytes((HANG_FIXTURE / "console.log").read_bytes())
    result = CliRunner().invoke(app, ["diagnose", str(log), "--format", "json"])
    verdict = json.loads(result.stdout)["verdict"]
    assert result.exit_code == 3
    assert verdict["outcome"] == "hang" and verdict["hang"] is True
    first = verdict["first_death"]
    assert (first["rank"], first["cause"], first["method"]) == (None, "hang", "stalled")
    assert verdict["confidence"] == "medium"
    assert any("py-spy dump" in step for step in verdict["fetch_next"])
    assert verdict["not_first"] == []  # torn down is not ruled out: either rank may be the one stuck


def test_progress_after_the_hang_timer_is_no_hang(tmp_path: Path) -> None:
    """A timer armed once fires on a slow step; the rank then went on: nothing hung."""
    d = run(tmp_path, {"rank0.log": "Timeout (0:05:00)!\n" + step_lines(0, 5)})
    assert d.verdict.outcome is Outcome.NO_FAILURE


def test_ranks_that_gave_up_waiting_make_the_job_failed_not_only_hung(tmp_path: Path) -> None:
    """A stall and then the watchdog's timeouts: the job failed of it, and who hung is unknown: undetermined,
    as with the timeouts alone."""
    from test_verdict import watchdog

    files = {f"rank{r}.log": step_lines(r, 5) + "Timeout (0:05:00)!\n" + watchdog(r, 9, 9, 8) for r in range(2)}
    assert run(tmp_path, files).verdict.outcome is Outcome.UNDETERMINED


def test_a_death_beside_a_dump_is_no_bare_hang(tmp_path: Path) -> None:
    console = pyspy(4200, IN_ALL_REDUCE) + "Segmentation fault (core dumped)\n"
    assert run(tmp_path, {"console.log": console}).verdict.outcome is Outcome.UNDETERMINED


def test_the_rank_waiting_in_the_store_barrier_is_never_the_one_waited_for(tmp_path: Path) -> None:
    """torch 1.x logs this every 10 s at start-up while ranks are missing: rank 0 is alive and waiting."""
    line = (
        "[2025-03-11 05:21:{s:02d},421][torch.distributed.distributed_c10d][INFO] - Waiting in store based barrier to "
        "initialize process group for rank: 0, key: store_based_barrier_key:1 (world_size=4, worker_count=1, "
        "timeout=0:30:00)\n"
    )
    d = run(tmp_path, {"console.log": "".join(line.format(s=s) for s in (4, 14, 24))})
    assert d.verdict.outcome is Outcome.HANG
    assert d.verdict.first_death is not None and d.verdict.first_death.rank is None


@pytest.mark.parametrize(
    ("code", "cause"), [(3221225477, Cause.SEGFAULT), (-1073741819, Cause.SEGFAULT), (3221226505, Cause.ABORT)]
)
def test_a_windows_crash_status_is_the_crash_it_names(tmp_path: Path, code: int, cause: Cause) -> None:
    """Windows exits a crashed process with the fault's NTSTATUS (0xC0000005, an access violation;
    0xC0000409, a fail-fast abort), printed unsigned or as a 32-bit int: never a signal number."""
    console = (
        "Traceback (most recent call last):\n"
        '  File "C:\\\\train.py", line 9, in <module>\n'
        "    mp.spawn(run, nprocs=2)\n"
        f"torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with exit code {code}\n"
    )
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (0, cause)
    assert "a Windows crash" in first.detail


def test_an_excerpt_that_opens_inside_a_faulthandler_dump_is_a_failure_whose_head_is_missing(tmp_path: Path) -> None:
    """faulthandler's frames (`line N in f`, no comma) under a cut head: something failed, ask for the head."""
    dump = "".join(
        f'(pid=40210)   File "/usr/lib/python3.10/site-packages/ray/{m}.py", line {n} in {f}\n'
        for m, n, f in [("worker", 289, "main_loop"), ("default_worker", 850, "<module>")]
    )
    d = run(tmp_path, {"console.log": dump})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert any("console.log:1 inside an error report" in r for r in d.verdict.reasoning), d.verdict.reasoning
    assert any(s.endswith("console.log:1 (the head of that report)") for s in d.verdict.fetch_next)
    later = run(tmp_path / "later", {"console.log": "(pid=40210) step 1\n(pid=40210) step 2\n" + dump})
    assert later.verdict.outcome is Outcome.NO_FAILURE


def test_open_mpi_failing_to_kill_a_process_is_a_job_being_ended(tmp_path: Path) -> None:
    console = (
        "--------------------------------------------------------------------------\n"
        "WARNING: A process refused to die despite all the efforts!\n"
        "This process may still be running and/or consuming resources.\n\nHost: node10\nPID:  53846\n\n"
    )
    d = run(tmp_path, {"console.log": "step 1\n" + console})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert d.verdict.first_death is None


def test_sagemakers_report_of_a_failed_job_is_the_job_ending_not_an_exception_of_a_rank(tmp_path: Path) -> None:
    """The SDK's UnexpectedStatusException is raised in the notebook that waits on the job: the job failed,
    but that exception is no training process's death."""
    notebook = (
        "UnexpectedStatusException: Error for Training job vit-fsdp-2023-06-14-22-27-25-988: Failed. Reason: "
        "AlgorithmError: ExecuteUserScriptError:\nExitCode 134\n"
    )
    d = run(tmp_path, {"console.log": notebook})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert d.verdict.first_death is None
    assert not d.verdict.unattributed


_PADDLE_ABORT = (
    "ERROR 2021-05-24 17:17:14,611 launch_utils.py:545] ABORT!!! Out of all 4 trainers, the trainer process with "
    "rank=[{ranks}] was aborted. Please check its log.\n"
    "INFO 2021-05-24 17:17:14,611 launch_utils.py:327] terminate all the procs\n"
)


@pytest.mark.parametrize(("ranks", "named"), [("3", 3), ("0, 1", None)])
def test_paddles_launcher_names_the_one_trainer_it_found_dead_not_one_of_several(
    tmp_path: Path, ranks: str, named: int | None
) -> None:
    """One trainer dead at the launcher's poll died first; several dead at one poll are a set, not an order."""
    d = run(tmp_path, {"console.log": _PADDLE_ABORT.format(ranks=ranks)})
    assert d.verdict.outcome is (Outcome.FIRST_DEATH if named is not None else Outcome.UNDETERMINED)
    assert (d.verdict.first_death.rank if d.verdict.first_death else None) == named


def test_an_excerpt_that_opens_in_open_mpis_crash_backtrace_is_a_crash_whose_head_is_cut(tmp_path: Path) -> None:
    frames = "".join(
        f"[cx50:02128] [{n:2d}] /usr/lib/python3/tensorflow/libtf.so(+0x2f2e2{n:02d})[0x7f3c50a232{n:02d}]\n"
        for n in range(5, 9)
    )
    d = run(tmp_path, {"console.log": frames})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert any(s.endswith("console.log:1 (the head of that report)") for s in d.verdict.fetch_next)


def test_ranks_of_a_tie_are_not_ruled_out_as_later(tmp_path: Path) -> None:
    """torchrun's table: ranks 1-3 all exit 1 in the same second and none left a line: a tie, so none of them is
    said to have died later than another."""
    entry = (
        "[{r}]:\n  time      : 2022-11-29_17:14:20\n  host      : GPU236\n  rank      : {r} (local_rank: {r})\n"
        "  exitcode  : 1 (pid: 4914{r})\n  error_file: <N/A>\n"
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
    )
    table = (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n" + "=" * 60 + "\ntrain.py FAILED\n"
        + "-" * 60 + "\nFailures:\n" + "".join(entry.format(r=r) for r in (2, 3)) + "-" * 60
        + "\nRoot Cause (first observed failure):\n" + entry.format(r=1) + "=" * 60 + "\n"
    )  # fmt: skip
    d = run(tmp_path, {"console.log": table})
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death.method == "tie"
    assert not any("later" in r.why for r in d.verdict.ruled_out)


@pytest.mark.parametrize(("code", "cause"), [(1, Cause.PYTHON_EXCEPTION), (-7, Cause.BUS_ERROR)])
def test_a_tie_whose_root_cause_entry_is_cut_before_its_exit_takes_the_cause_the_others_give(
    tmp_path: Path, code: int, cause: Cause
) -> None:
    """The Root Cause entry (rank 1) is cut before its `exitcode`; rank 3 failed in the same second with a status:
    nothing orders them, and every status the lines give is the tie's cause."""
    head = "[{n}]:\n  time      : 2026-09-07_13:02:58\n  host      : localhost\n  rank      : {r} (local_rank: {r})\n"
    table = (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n" + "=" * 60 + "\ntrain.py FAILED\n"
        + "-" * 60 + "\nFailures:\n" + head.format(n=1, r=3) + f"  exitcode  : {code} (pid: 14692)\n"
        + "  error_file: <N/A>\n" + "-" * 60 + "\nRoot Cause (first observed failure):\n" + head.format(n=0, r=1)
    )  # fmt: skip
    d = run(tmp_path, {"console.log": table})
    first = d.verdict.first_death
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.confidence is Confidence.LOW
    assert first is not None and (first.rank, first.cause, first.method) == (None, cause, "tie")
    assert any("every status they give is" in step for step in d.verdict.reasoning)


def _barrier_done(rank: int, world: int) -> str:
    return (
        f"INFO:torch.distributed.distributed_c10d:Rank {rank}: Completed store-based barrier for "
        f"key:store_based_barrier_key:1 with {world} nodes.\n"
    )


def test_every_rank_of_the_job_waiting_in_a_collective_is_a_hang_without_a_culprit(tmp_path: Path) -> None:
    """Both ranks of a two-rank job timed out in the same collective and neither died: it hung, on no one rank."""
    d = run(tmp_path, {f"rank{r}.log": _barrier_done(r, 2) + step_lines(r, 3) + watchdog(r, 9, 9, 8) for r in (0, 1)})
    assert d.verdict.outcome is Outcome.HANG
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause, first.method) == (None, Cause.HANG, "all_waited")
    assert d.verdict.confidence is Confidence.MEDIUM
    assert any("flight record" in step for step in d.verdict.fetch_next)


def test_ranks_waiting_in_a_job_of_unknown_size_stay_undetermined(tmp_path: Path) -> None:
    """Without the job's size, a rank that left no line may be the one that died: no hang is claimed."""
    d = run(tmp_path, {f"rank{r}.log": step_lines(r, 3) + watchdog(r, 9, 9, 8) for r in (0, 1)})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert d.verdict.first_death is None


_TIME_LIMIT = "slurmstepd: error: *** JOB 313794 ON node049 CANCELLED AT 2021-09-26T15:36:54 DUE TO TIME LIMIT ***\n"


@pytest.mark.parametrize(
    ("before", "confidence"), [("", Confidence.MEDIUM), ("step 40/100 loss 0.52\n", Confidence.HIGH)]
)
def test_a_time_limit_is_high_only_where_a_progress_line_shows_the_job_was_working(
    tmp_path: Path, before: str, confidence: Confidence
) -> None:
    """A job that hung, or lost a rank to a failure no rule reads, also runs into its limit: without a progress line
    the time limit is no certain first end."""
    d = run(tmp_path, {"slurm-313794.out": "Floating point exception!\n" + before + _TIME_LIMIT})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (None, Cause.TIME_LIMIT)
    assert d.verdict.confidence is confidence
