"""`rankautopsy drill` on this machine: real torchrun gloo jobs in which one rank dies."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from rankautopsy.drill import run_drill
from rankautopsy.drill.run import torch_available
from rankautopsy.model import Cause, Outcome

needs_torch = pytest.mark.skipif(
    not torch_available(), reason="the drill runs a torch gloo job: torch is not installed"
)


@needs_torch
def test_the_drill_command_passes_when_diagnose_names_the_injected_exception(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rankautopsy", "drill", "--how", "exception", "--rank", "1", "--step", "2",
         "--dir", str(tmp_path)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("drill passed: rank 1 died by exception at step 2; diagnose named rank 1")
    assert list((tmp_path / "logs/runtime").glob("rankautopsy-rank*.log"))


@needs_torch
@pytest.mark.parametrize("how", ["sigkill", "hang"])
def test_run_drill_as_a_pytest_helper(how: str, tmp_path: Path) -> None:
    result = run_drill(how, rank=0, step=2, timeout=8, directory=tmp_path)
    assert result.passed, result.summary()
    assert result.diagnosis is not None
    first = result.diagnosis.verdict.first_death
    assert first is not None and first.rank == 0
    expected = {"sigkill": (Outcome.FIRST_DEATH, Cause.KILLED), "hang": (Outcome.HANG, Cause.HANG)}[how]
    assert (result.diagnosis.verdict.outcome, first.cause) == expected
    if how == "sigkill":  # no record: the heartbeats say how far rank 0 got
        reports = {r.rank: r for r in result.diagnosis.ranks}
        assert reports[0].last_step is not None and reports[0].last_step <= 1


def test_without_torch_the_drill_is_one_line_and_exit_2() -> None:
    code = "import sys; sys.modules['torch'] = None; from rankautopsy.cli import main; main()"
    done = subprocess.run([sys.executable, "-c", code, "drill"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "rankautopsy: error: drill needs torch (pip install torch); only this command does"
    ]


def test_a_bad_drill_is_refused_before_any_job_starts() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "rankautopsy", "drill", "--how", "meteor"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "unknown way to die 'meteor'" in done.stderr
