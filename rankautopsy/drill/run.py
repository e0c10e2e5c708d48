"""run_drill(): launch the job under torchrun, time it, diagnose its logs, and check the verdict."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rankautopsy.errors import UsageError
from rankautopsy.model import Cause, Diagnosis, Outcome
from rankautopsy.pipeline import Options, diagnose
from rankautopsy.records import record

EXPECTED = {
    "exception": Cause.PYTHON_EXCEPTION,
    "sigkill": Cause.KILLED,
    "sigsegv": Cause.SEGFAULT,
    "exit": Cause.SILENT_EXIT,
    "hang": Cause.HANG,
}
HOWS = tuple(EXPECTED)


@record(kw_only=True)
class DrillResult:
    how: str
    rank: int
    step: int
    expected: Cause
    outcome: Outcome | None
    named_rank: int | None
    named_cause: Cause | None
    confidence: str | None
    elapsed: float  # seconds from launch to the launcher's exit
    limit: float  # the bound it had to end within: the process-group timeout plus the margin
    returncode: int | None
    directory: Path
    problems: tuple[str, ...]
    diagnosis: Diagnosis | None

    @property
    def passed(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        named = f"rank {self.named_rank} {self.named_cause.value}" if self.named_cause else "nobody"
        head = "drill passed" if self.passed else "drill FAILED"
        text = (f"{head}: rank {self.rank} died by {self.how} at step {self.step}; diagnose named {named} "
                f"({self.outcome.value if self.outcome else '-'}, {self.confidence or '-'}); the job ended in "
                f"{self.elapsed:.1f} s (bound {self.limit:g} s); logs in {self.directory}")  # fmt: skip
        return "\n".join([text, *(f"  - {p}" for p in self.problems)])


def torch_available() -> bool:
    try:
        return importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):  # a torch that is shadowed or half-removed
        return False


def run_drill(
    how: str = "exception",
    *,
    rank: int = 1,
    step: int = 3,
    nproc: int = 2,
    timeout: float = 30.0,
    margin: float = 60.0,
    directory: str | os.PathLike[str] | None = None,
) -> DrillResult:
    """Run one drill and return what happened; `passed` says whether the job ended within
    `timeout + margin` seconds and `diagnose` named rank `rank` with the cause `how` implies."""
    _check(how, rank, step, nproc, timeout, margin)
    where = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix="rankautopsy-drill-"))
    logs = where / "logs"
    (logs / "torchrun").mkdir(parents=True, exist_ok=True)
    limit = timeout + margin
    started = time.monotonic()
    code, ended = _launch(_command(how, rank, step, nproc, timeout, where), logs / "console.log", limit)
    elapsed = time.monotonic() - started
    problems = [] if ended else [f"the job did not end within {limit:g} s: stopped by the drill"]
    if ended and elapsed > limit:
        problems.append(f"the job took {elapsed:.1f} s, more than the bound of {limit:g} s")
    result = diagnose(Options(paths=[str(logs)]))
    first = result.verdict.first_death
    named_rank, named_cause = (first.rank, first.cause) if first else (None, None)
    expected = EXPECTED[how]
    if result.verdict.outcome not in (Outcome.FIRST_DEATH, Outcome.HANG):
        problems.append(f"diagnose found no first death (outcome {result.verdict.outcome.value})")
    elif named_rank != rank or named_cause is not expected:
        cause = named_cause.value if named_cause else "none"
        problems.append(f"diagnose named rank {named_rank} {cause}, not rank {rank} {expected.value}")
    return DrillResult(how=how, rank=rank, step=step, expected=expected, outcome=result.verdict.outcome,
                       named_rank=named_rank, named_cause=named_cause, confidence=result.verdict.confidence.value,
                       elapsed=elapsed, limit=limit, returncode=code, directory=where, problems=tuple(problems),
                       diagnosis=result)  # fmt: skip


def _check(how: str, rank: int, step: int, nproc: int, timeout: float, margin: float) -> None:
    if how not in EXPECTED:
        raise UsageError(f"unknown way to die {how!r}: one of {', '.join(HOWS)}")
    if not 0 <= rank < nproc:
        raise UsageError(f"--rank {rank} is not a rank of a {nproc}-rank job")
    if step < 1 or nproc < 2 or nproc > 64 or timeout <= 0 or margin < 0:
        raise UsageError("--step must be 1 or more, --nproc 2 to 64, --timeout above 0 and --margin 0 or more")
    if not torch_available():
        raise UsageError("drill needs torch (pip install torch); only this command does")


def _command(how: str, rank: int, step: int, nproc: int, timeout: float, where: Path) -> list[str]:
    logs = where / "logs"
    return [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
        "--log-dir", str(logs / "torchrun"), "--redirects", "3",
        "-m", "rankautopsy.drill.job", "--how", how, "--rank", str(rank), "--step", str(step),
        "--timeout", str(timeout), "--runtime-dir", str(logs / "runtime"), "--injected", str(where / "injected.json"),
    ]  # fmt: skip


def _launch(command: list[str], console: Path, limit: float) -> tuple[int | None, bool]:
    """Run the launcher with its output in `console`; stop it (and its workers) past 1.5 x the bound."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}
    with console.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            return proc.wait(timeout=limit * 1.5), True
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()
            return None, False
