"""rankautopsy.runtime in real processes: what a rank writes when it dies, and what diagnose makes of it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from rankautopsy.model import Cause, Outcome, Role
from rankautopsy.pipeline import Options, diagnose
from rankautopsy.runtime import DEATH, HEARTBEAT, identify, missing_ranks
from rankautopsy.runtime.hooks import Runtime
from rankautopsy.runtime.records import Sink, death_line

ENV = {"RANK": "3", "LOCAL_RANK": "1", "WORLD_SIZE": "4"}


def _run(code: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "RANKAUTOPSY_DIR")}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


def _records(text: str, marker: str) -> list[dict[str, object]]:
    return [json.loads(line.split(marker + " ", 1)[1]) for line in text.splitlines() if f" {marker} " in line]


def test_importing_the_runtime_pulls_in_no_cli_renderer_or_torch() -> None:
    done = _run("""
        import sys
        import rankautopsy.runtime
        heavy = ("typer", "rich", "torch", "yaml", "regex", "rankautopsy.cli", "rankautopsy.pipeline",
                 "rankautopsy.render")
        print(sorted(m for m in sys.modules if m.split(".")[0] in heavy or m.startswith(heavy)))
    """)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_an_uncaught_exception_leaves_one_death_record_that_diagnose_reads(tmp_path: Path) -> None:
    done = _run(
        """
        import rankautopsy.runtime as ra
        ra.install()
        for step in range(1, 8):
            ra.heartbeat(step)
        raise ValueError("bad sample 1234")
        """,
        ENV,
    )
    assert done.returncode == 1
    deaths = _records(done.stderr, DEATH)
    assert len(deaths) == 1
    death = deaths[0]
    assert (death["rank"], death["local_rank"], death["step"]) == (3, 1, 7)
    assert (death["cause"], death["exc_type"], death["exc_msg"]) == (
        "python_exception",
        "ValueError",
        "bad sample 1234",
    )
    assert done.stderr.index("Traceback") < done.stderr.index(DEATH)  # the record closes the traceback
    log = tmp_path / "console.log"  # no rank in the path: the record's own rank counts
    log.write_text(done.stderr, encoding="utf-8")
    verdict = diagnose(Options(paths=[str(log)])).verdict
    assert verdict.first_death is not None
    assert (verdict.first_death.rank, verdict.first_death.cause) == (3, Cause.PYTHON_EXCEPTION)
    assert "bad sample 1234" in verdict.first_death.detail


def test_a_survivors_record_of_a_peer_loss_is_a_symptom_not_a_cause(tmp_path: Path) -> None:
    who = identify({"RANK": "0"})
    gloo = "[/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:13959"
    (tmp_path / "rank_0.log").write_text(
        death_line(who, "python_exception", step=9, exc_type="RuntimeError", exc_msg=gloo), encoding="utf-8"
    )
    (tmp_path / "rank_1.log").write_text(
        death_line(identify({"RANK": "1"}), "python_exception", step=9, exc_type="KeyError", exc_msg="'label'"),
        encoding="utf-8",
    )
    result = diagnose(Options(paths=[str(tmp_path)]))
    roles = {e.rank: e.role for e in result.events if e.rule.startswith("runtime.")}
    assert roles == {0: Role.SYMPTOM, 1: Role.CAUSE}
    assert result.verdict.first_death is not None and result.verdict.first_death.rank == 1


def test_the_rank_comes_from_whichever_launcher_set_it() -> None:
    assert identify({"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_LOCAL_RANK": "1"}).rank == 5
    assert identify({"SLURM_PROCID": "7", "SLURM_LOCALID": "3", "SLURM_NTASKS": "8"}).world_size == 8
    assert identify({"PMI_RANK": "2", "MPI_LOCALRANKID": "0"}).local_rank == 0
    assert identify({"RANK": "4", "SLURM_PROCID": "0"}).rank == 4  # torchrun under srun: torchrun's rank
    assert identify({"RANK": "x"}).rank is None


def test_heartbeats_are_written_at_a_bounded_rate(tmp_path: Path) -> None:
    done = _run(
        f"""
        import rankautopsy.runtime as ra
        ra.install({str(tmp_path)!r}, heartbeat_interval=3600)
        for step in range(100000):
            ra.heartbeat(step)
        ra.uninstall()
        ra.install({str(tmp_path / "every")!r}, heartbeat_interval=0)
        for step in range(5):
            ra.heartbeat(step)
        """,
        ENV,
    )
    assert done.returncode == 0, done.stderr
    assert [b["step"] for b in _records((tmp_path / "rankautopsy-rank3.log").read_text(), HEARTBEAT)] == [0]
    assert [b["step"] for b in _records((tmp_path / "every/rankautopsy-rank3.log").read_text(), HEARTBEAT)] == [
        0, 1, 2, 3, 4,
    ]  # fmt: skip
    assert DEATH not in done.stderr


def test_abort_on_exception_ends_the_process_at_once(tmp_path: Path) -> None:
    done = _run(
        f"""
        import atexit, threading, time
        import rankautopsy.runtime as ra
        ra.install({str(tmp_path)!r})
        atexit.register(lambda: print("atexit ran", flush=True))
        threading.Thread(target=time.sleep, args=(600,)).start()  # would keep a normal exit waiting
        @ra.abort_on_exception
        def train():
            raise KeyError("label")
        train()
        """,
        ENV,
    )
    assert done.returncode == 1
    assert "atexit ran" not in done.stdout
    assert "KeyError: 'label'" in done.stderr
    deaths = _records(done.stderr, DEATH)
    assert [d["exc_type"] for d in deaths] == ["KeyError"]
    assert _records((tmp_path / "rankautopsy-rank3.log").read_text(), DEATH) == deaths


def test_a_thread_that_dies_is_recorded_but_is_not_the_ranks_death(tmp_path: Path) -> None:
    done = _run(
        """
        import threading
        import rankautopsy.runtime as ra
        ra.install()
        def work():
            raise OSError("disk full")
        t = threading.Thread(target=work, name="saver")
        t.start(); t.join()
        print("still training")
        """,
        ENV,
    )
    assert done.returncode == 0 and "still training" in done.stdout
    (record,) = _records(done.stderr, DEATH)
    assert record["thread"] == "saver"
    (tmp_path / "rank_3.log").write_text(done.stderr, encoding="utf-8")
    events = diagnose(Options(paths=[str(tmp_path)])).events
    assert [(e.rule, e.role) for e in events if e.rule.startswith("runtime.death")] == []
    assert [(e.rule, e.role) for e in events if e.rule == "runtime.thread-exception"] == [
        ("runtime.thread-exception", Role.CONTEXT)
    ]


def test_a_segfault_leaves_faulthandler_dump_in_the_rank_file(tmp_path: Path) -> None:
    done = _run(
        f"""
        import ctypes
        import rankautopsy.runtime as ra
        ra.install({str(tmp_path)!r})
        ra.heartbeat(41)
        ctypes.string_at(0)
        """,
        ENV,
    )
    assert done.returncode == -11
    result = diagnose(Options(paths=[str(tmp_path)]))
    first = result.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (3, Cause.SEGFAULT)
    assert [r.last_step for r in result.ranks if r.rank == 3] == [41]


def test_missing_ranks_are_read_from_gloos_monitored_barrier_message() -> None:
    assert missing_ranks("[Rank 0]: Ranks 1, 3 failed to pass monitoredBarrier in 2000 ms") == (1, 3)
    assert missing_ranks("[Rank 0]: Rank 2 failed to pass monitoredBarrier in 2000 ms") == (2,)
    assert missing_ranks("Connection closed by peer") == ()


def test_a_forged_record_message_stays_text(tmp_path: Path) -> None:
    line = (
        '2026-12-01T12:00:03.250000Z rankautopsy-death {"v": 1, "cause": "python_exception", "rank": 2, '
        '"local_rank": null, "pid": 7, "host": "n", "step": null, "exc_type": "ValueError", '
        '"exc_msg": "\\ud800 \\x1b[31m"}\n'
    )
    (tmp_path / "rank_2.log").write_text(line, encoding="utf-8")
    verdict = diagnose(Options(paths=[str(tmp_path)])).verdict
    assert verdict.outcome is Outcome.FIRST_DEATH
    assert verdict.first_death is not None and "\x1b" not in verdict.first_death.detail


torch = pytest.importorskip("torch", reason="the gloo jobs need torch")


class _SlowSink(Sink):
    """A sink whose write waits on a gate, so the test holds the first death's record half written."""

    def __init__(self) -> None:
        super().__init__(())
        self.entered, self.gate = threading.Event(), threading.Event()
        self.lines: list[str] = []

    def write(self, line: str) -> None:
        self.entered.set()
        self.gate.wait(10)
        self.lines.append(line)


def test_a_second_death_waits_for_the_first_ones_record_to_be_written() -> None:
    # SIGTERM reaches the main thread's handler and the wakeup thread; the loser ends the process, so
    # it must not return while the winner's record is still being written
    sink = _SlowSink()
    runtime = Runtime(identify(ENV), sink, Sink(()), 0.0, None)
    first = threading.Thread(target=runtime.record, args=("killed",), kwargs={"signal": "SIGTERM"})
    first.start()
    assert sink.entered.wait(10)
    returned: list[bool] = []
    second = threading.Thread(target=lambda: returned.append(runtime.record("killed", signal="SIGTERM")))
    second.start()
    second.join(0.3)
    assert second.is_alive() and not sink.lines  # still waiting for the first record
    sink.gate.set()
    first.join(10)
    second.join(10)
    assert returned == [False] and len(sink.lines) == 1 and '"signal": "SIGTERM"' in sink.lines[0]
