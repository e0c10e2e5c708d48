"""A user pack teaches rankautopsy a launcher it has never seen, end to end, with no code change.

`fluxrun` is invented: it tags every line of a task with `<task N> `, and its console says which task
ended and how, which tasks it reaps, and that the job failed. Without the pack the console means
nothing; with it, the tag attributes each line, the exit line names the rank and its pid joins the
kernel's segfault line to that rank.
"""

from __future__ import annotations

import re
from datetime import UTC
from pathlib import Path

import pytest
from test_verdict import fates, step_lines

from rankautopsy.model import Cause, Confidence, Fate, Outcome
from rankautopsy.pipeline import Options, diagnose

PACK = r"""
pack: fluxrun
rules:
  - id: fluxrun.task-ended
    title: fluxrun saw a task end
    cause: context
    role: context
    effects: [exit]
    pattern: >-
      ^fluxrun: task (?P<rank>[0-9]+) \(pid (?P<pid>[0-9]+)\) ended:
      (?:signal (?P<signal>[0-9]+)|exit (?P<exitcode>[0-9]+))
    examples:
      match:
        - line: "fluxrun: task 2 (pid 4242) ended: signal 11"
          facts: {rank: "2", pid: "4242", signal: "11"}
      no_match:
        - "fluxrun: reaping task 0 (pid 4240)"
  - id: fluxrun.reaping
    title: fluxrun stops a surviving task
    cause: launcher_teardown
    role: symptom
    effects: [teardown]
    pattern: '^fluxrun: reaping task (?P<rank>[0-9]+) \(pid (?P<pid>[0-9]+)\)'
    examples:
      match:
        - line: "fluxrun: reaping task 0 (pid 4240)"
          facts: {rank: "0", pid: "4240"}
      no_match:
        - "fluxrun: task 2 (pid 4242) ended: signal 11"
  - id: fluxrun.task-tag
    title: fluxrun's tag on each line of a task
    cause: context
    role: context
    effects: [prefix]
    pattern: '^<task (?P<rank>[0-9]+)> '
    examples:
      match:
        - line: "<task 3> step 4 loss 2.1"
          facts: {rank: "3"}
      no_match:
        - "fluxrun: task 2 (pid 4242) ended: signal 11"
  - id: fluxrun.job-failed
    title: fluxrun ends the job
    cause: context
    role: context
    effects: [job_end]
    pattern: '^fluxrun: job failed\b'
    examples:
      match:
        - "fluxrun: job failed (1 task crashed)"
      no_match:
        - "fluxrun: job finished"
"""

CONSOLE = (
    "fluxrun: launching 4 tasks\n"
    "fluxrun: task 2 (pid 4242) ended: signal 11\n"
    "fluxrun: reaping task 0 (pid 4240)\n"
    "fluxrun: reaping task 1 (pid 4241)\n"
    "fluxrun: reaping task 3 (pid 4243)\n"
    "fluxrun: job failed (1 task crashed)\n"
)
DMESG = "[Sun Nov 29 07:00:07 2026] python[4242]: segfault at 0 ip 00007f0000001234 sp 00007ffc00000000 error 4\n"


def _logs(tmp_path: Path, *, dmesg: bool) -> list[str]:
    """One console: fluxrun's own lines and every task's lines behind its tag (no file names a rank)."""
    tasks = "".join(
        f"<task {r}> {line}" for r in range(4) for line in step_lines(r, 8 if r == 2 else 10).splitlines(True)
    )
    tasks += "<task 1> RuntimeError: [../gloo/transport/tcp/pair.cc:534] Connection closed by peer [::1]:5\n"
    (tmp_path / "fluxrun.out").write_text(tasks.replace(" INFO [rank ", " INFO [r ") + CONSOLE)
    paths = [str(tmp_path / "fluxrun.out")]
    if dmesg:
        (tmp_path / "dmesg.txt").write_text(DMESG)
        paths.append(str(tmp_path / "dmesg.txt"))
    return paths


def _pack(tmp_path: Path) -> str:
    path = tmp_path / "fluxrun.yaml"
    path.write_text(PACK)
    return str(path)


def test_without_the_pack_the_console_means_nothing(tmp_path: Path) -> None:
    d = diagnose(Options(paths=_logs(tmp_path, dmesg=False)))
    assert d.verdict.first_death is None or d.verdict.first_death.rank is None
    assert d.ranks == ()  # no line is tied to a rank


def test_the_pack_teaches_the_exit_and_the_teardown(tmp_path: Path) -> None:
    d = diagnose(Options(paths=_logs(tmp_path, dmesg=False), rules=[_pack(tmp_path)]))
    first = d.verdict.first_death
    assert d.verdict.outcome is Outcome.FIRST_DEATH
    assert first is not None and (first.rank, first.cause) == (2, Cause.SEGFAULT)
    assert d.verdict.confidence is Confidence.MEDIUM  # an exit status alone never makes it high
    assert fates(d) == {0: Fate.TORN_DOWN, 1: Fate.COLLATERAL, 2: Fate.FIRST_DEATH, 3: Fate.TORN_DOWN}
    assert {r.rank: r.last_step for r in d.ranks} == {0: 9, 1: 9, 2: 7, 3: 9}  # the tag attributed the steps


def test_the_exit_lines_pid_joins_the_kernel_line_to_the_rank(tmp_path: Path) -> None:
    options = Options(paths=_logs(tmp_path, dmesg=True), rules=[_pack(tmp_path)], tz=UTC)
    d = diagnose(options)
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause, first.rule) == (2, Cause.SEGFAULT, "kernel.segfault")
    assert d.verdict.confidence is Confidence.HIGH
    assert first.pid == 4242


@pytest.mark.parametrize("module", sorted((Path(__file__).parent.parent / "rankautopsy").rglob("*.py")))
def test_no_rule_id_is_named_in_python(module: Path) -> None:
    """What a line means lives in the packs: the package's code names no built-in rule id."""
    from rankautopsy.rulepacks.loader import load_rules

    ids = {r.id for r in load_rules()}
    quoted = set(re.findall(r"[\"']([a-z0-9]+\.[a-z0-9-]+)[\"']", module.read_text(encoding="utf-8")))
    assert sorted(quoted & ids) == []
