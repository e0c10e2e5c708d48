"""watch's following: files that appear late, truncation and rotation, late evidence, and the command."""

from __future__ import annotations

import json
import lzma
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from rankautopsy.live import Watcher, WatchOptions
from rankautopsy.live.watcher import verdict_key
from rankautopsy.model import Cause, Outcome
from rankautopsy.pipeline import Options, diagnose

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "torchrun-raise-rank2" / "logs" / "console.log"
LATE_SEGFAULT = (
    "2026-11-29 07:00:01,000 [rank 0] step 3\n"
    "Fatal Python error: Segmentation fault\n"
    "\n"
    "Current thread 0x00007f2b9f5b2740 (most recent call first):\n"
    '  File "/opt/train.py", line 55 in train_step\n'
)
RAISE = (
    "2026-11-29 07:00:05,000 [rank 1] step 4\n"
    "Traceback (most recent call last):\n"
    '  File "/opt/train.py", line 60, in <module>\n'
    "ValueError: bad sample 1234\n"
    "2026-11-29 07:00:05,100 [rank 1] exiting\n"
)


def _watcher(paths: list[Path], settle: float = 2.0) -> Watcher:
    options = Options(paths=[str(p) for p in paths])
    return Watcher(WatchOptions(diagnose=options, settle=settle, patience=30.0, rediscover=0))


def test_late_evidence_of_an_earlier_death_changes_the_verdict_before_it_is_reported(tmp_path: Path) -> None:
    (tmp_path / "rank_1.log").write_text(RAISE, encoding="utf-8")
    watcher = _watcher([tmp_path])
    assert watcher.poll(0.0) is None  # rank 1's exception: a verdict, not yet settled
    assert watcher.result is not None and watcher.result.verdict.first_death is not None
    assert watcher.result.verdict.first_death.rank == 1
    (tmp_path / "rank_0.log").write_text(LATE_SEGFAULT, encoding="utf-8")  # flushed late, happened first
    assert watcher.poll(1.0) is None
    report = watcher.poll(4.0)
    assert report is not None and report.diagnosis.verdict.first_death is not None
    assert (report.diagnosis.verdict.first_death.rank, report.diagnosis.verdict.first_death.cause) == (
        0, Cause.SEGFAULT,
    )  # fmt: skip
    assert verdict_key(report.diagnosis.verdict) == verdict_key(diagnose(Options(paths=[str(tmp_path)])).verdict)


def test_truncation_and_rotation_are_followed(tmp_path: Path) -> None:
    log = tmp_path / "rank_1.log"
    log.write_text(RAISE, encoding="utf-8")
    watcher = _watcher([tmp_path])
    watcher.poll(0.0)
    log.write_text("2026-11-29 07:00:06,000 [rank 1] step 9\n", encoding="utf-8")  # truncated and rewritten
    watcher.poll(0.5)
    assert watcher.result is not None and watcher.result.verdict.outcome is Outcome.NO_FAILURE
    log.rename(tmp_path / "old.txt")  # rotated away; a new file takes the name
    log.write_text(RAISE, encoding="utf-8")
    watcher.poll(1.0)
    assert watcher.result is not None and watcher.result.verdict.first_death is not None
    assert watcher.result.verdict.first_death.rank == 1
    assert watcher.streams[str(log)].offset == len(RAISE.encode())  # read once, not twice


def test_only_new_bytes_are_read(tmp_path: Path) -> None:
    log = tmp_path / "rank_0.log"
    log.write_text("".join(f"2026-11-29 07:00:{i % 60:02d},000 [rank 0] step {i}\n" for i in range(5000)))
    watcher = _watcher([tmp_path])
    watcher.poll(0.0)
    followed = watcher.streams[str(log)]
    start = followed.offset
    with log.open("a") as out:
        out.write("2026-11-29 07:01:00,000 [rank 0] step 5000\n")
    watcher.poll(0.5)
    assert followed.offset - start == len("2026-11-29 07:01:00,000 [rank 0] step 5000\n")
    assert len(followed.context) <= 2000
    assert watcher.result is not None and [r.last_step for r in watcher.result.ranks] == [5000]


@pytest.mark.parametrize(("name", "pack"), [("rank_1.log", lambda b: b"\xff\xfe" + b.decode().encode("utf-16-le")),
                                           ("rank_1.log.xz", lzma.compress)])  # fmt: skip
def test_a_file_read_through_a_decoder_is_read_whole_once_it_settles(
    tmp_path: Path, name: str, pack: Callable[[bytes], bytes]
) -> None:
    (tmp_path / name).write_bytes(pack(RAISE.encode()))
    watcher = _watcher([tmp_path])
    watcher.poll(0.0)
    watcher.poll(3.0)
    assert watcher.result is not None and watcher.result.verdict.first_death is not None
    assert (watcher.result.verdict.first_death.rank, watcher.result.verdict.first_death.cause) == (
        1, Cause.PYTHON_EXCEPTION,
    )  # fmt: skip
    assert [i.lines for i in watcher.result.inputs] == [len(RAISE.splitlines())]


def test_a_docker_json_file_log_is_followed_a_read_at_a_time(tmp_path: Path) -> None:
    """Docker's json-file records are decoded as they are appended, not held back until the file settles."""
    record = lambda line: json.dumps({"log": line + "\n", "stream": "stderr", "time": "2026-11-29T07:00:09Z"})  # noqa: E731
    lines = RAISE.splitlines()
    log = tmp_path / "0123abcd-json.log"
    log.write_text("".join(record(line) + "\n" for line in lines[:1]))
    watcher = _watcher([tmp_path], settle=60.0)
    watcher.poll(0.0)
    with log.open("a") as out:
        out.write("".join(record(line) + "\n" for line in lines[1:]))
    watcher.poll(0.5)  # still growing: a file read only whole would not be read yet
    assert watcher.result is not None and watcher.result.verdict.first_death is not None
    assert watcher.result.verdict.first_death.cause is Cause.PYTHON_EXCEPTION
    assert verdict_key(watcher.result.verdict) == verdict_key(diagnose(Options(paths=[str(tmp_path)])).verdict)
    assert [i.lines for i in watcher.result.inputs] == [len(lines)]
    assert watcher.streams[str(log)].offset == log.stat().st_size


def _watch(args: list[str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "rankautopsy", "watch", *args],
        cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def test_the_command_prints_the_verdict_runs_the_hook_and_exits_with_diagnoses_status(tmp_path: Path) -> None:
    logs = tmp_path / "logs"  # does not exist yet when watch starts
    hook = tmp_path / "hook.json"
    proc = _watch(
        ["logs", "--format", "json", "--exit", "--settle", "0.5", "--interval", "0.1",
         "--on-first-death", f"cat > {hook}"],
        tmp_path,
    )  # fmt: skip
    time.sleep(1.0)
    logs.mkdir()
    with (logs / "console.log").open("w") as out:
        for line in FIXTURE.read_text().splitlines(keepends=True):
            out.write(line)
            out.flush()
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 1, stderr
    printed = json.loads(stdout)["verdict"]
    final = diagnose(Options(paths=[str(logs)])).verdict
    assert final.first_death is not None
    assert (printed["first_death"]["rank"], printed["first_death"]["cause"]) == (2, final.first_death.cause.value)
    assert json.loads(hook.read_text())["verdict"] == printed
    assert stderr == ""  # not a terminal: no status line


def _catches_sigterm(pid: int) -> bool:
    """Whether the process has its SIGTERM handler in place yet (Linux: SigCgt in /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    return False


def test_sigterm_ends_it_cleanly(tmp_path: Path) -> None:
    proc = _watch([str(tmp_path), "--interval", "0.1"], tmp_path)
    deadline = time.monotonic() + 120
    while not _catches_sigterm(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=60)
    assert (proc.returncode, stdout, stderr) == (-signal.SIGTERM, "", "")  # as every command dies of it


def test_the_kernel_log_can_be_piped_in(tmp_path: Path) -> None:
    (tmp_path / "rank_1.log").write_text(
        "2026-11-29 07:00:00,000 [rank 1] pid 4242 started\n2026-11-29 07:00:05,000 [rank 1] step 4\n",
        encoding="utf-8",
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "rankautopsy", "watch", str(tmp_path), "--dmesg", "-", "--format", "json",
         "--settle", "0.5", "--interval", "0.1"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdin is not None
    proc.stdin.write("[Sun Nov 29 07:00:06 2026] Out of memory: Killed process 4242 (python) total-vm:1kB\n")
    proc.stdin.flush()
    stdout, stderr = proc.communicate(timeout=120)
    verdict = json.loads(stdout)["verdict"]
    assert verdict["first_death"]["cause"] == "host_oom", stderr


def test_watch_bounds_an_unstamped_death_by_when_it_read_its_line(tmp_path: Path) -> None:
    """print() logs carry no stamps: the line was written before watch read it, so the death came
    before that read, and a later read does not move it."""
    from datetime import UTC, datetime

    from rankautopsy.model import TimeOpen

    unstamped = '[rank 1] step 3\nTraceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
    log = tmp_path / "rank_1.log"
    log.write_text(unstamped + "ValueError: bad sample 7\n", encoding="utf-8")
    (tmp_path / "rank_0.log").write_text("[rank 0] step 3\n", encoding="utf-8")
    watcher = _watcher([tmp_path])
    first_read = datetime(2026, 12, 5, 12, 0, 1, 250000, tzinfo=UTC)
    watcher.poll(0.0, first_read)
    with log.open("a", encoding="utf-8") as out:
        out.write("[rank 1] cleaning up\n")
    watcher.poll(1.0, datetime(2026, 12, 5, 12, 0, 9, tzinfo=UTC))
    assert watcher.result is not None
    first = watcher.result.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.PYTHON_EXCEPTION)
    assert first.time is not None and (first.time.latest, first.time_open) == (first_read, TimeOpen.BELOW)
