"""A kernel log's host comes from evidence (its name's host part), never from an extension or a format word."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_verdict import run

OOM = "[Sun Nov 29 07:00:07 2026] Out of memory: Killed process 4242 (python) total-vm:1000kB, anon-rss:900kB\n"


@pytest.mark.parametrize(
    ("name", "host"),
    [
        ("dmesg.txt", None),
        ("dmesg-raw.txt", None),
        ("kern.log", None),
        ("dmesg-iso.log", None),
        ("node07-dmesg.txt", "node07"),
        ("dmesg-node02.txt", "node02"),
        ("kern_gpu-3.log", "gpu-3"),
    ],
)
def test_kernel_log_host_from_its_name(tmp_path: Path, name: str, host: str | None) -> None:
    d = run(tmp_path, {name: OOM})
    hosts = {e.host for e in d.events}
    assert hosts == {host}


def _raw(line: str, seconds: str) -> str:
    """A `dmesg -T` line as plain `dmesg` prints it: seconds since boot instead of the wall clock."""
    return f"[{seconds}] {line.split('] ', 1)[1]}"


REAPED = "[Sun Nov 29 07:00:07 2026] oom_reaper: reaped process 4242 (python), now anon-rss:0kB, file-rss:0kB\n"


def _untimed_note(notes: tuple[str, ...]) -> bool:
    return any("has only seconds since boot" in n for n in notes)


def test_dmesg_and_its_untimed_twin_are_one_set_of_lines(tmp_path: Path) -> None:
    """`dmesg -T > dmesg.txt` and `dmesg > dmesg-raw.txt` of one host: each line is read once, with its time."""
    d = run(tmp_path, {"dmesg.txt": OOM + REAPED, "dmesg-raw.txt": _raw(OOM, " 812.5") + _raw(REAPED, " 812.6")})
    kernel = [e for e in d.events if e.where.source.endswith(".txt")]
    assert sorted(e.rule for e in kernel) == ["kernel.oom-killer", "kernel.oom-reaper"]
    assert all(e.time is not None and e.where.source.endswith("dmesg.txt") for e in kernel)
    assert {e.facts["copies"] for e in kernel} == {f"{tmp_path}/dmesg-raw.txt:1", f"{tmp_path}/dmesg-raw.txt:2"}
    assert any("2 kernel lines also in" in n for n in d.verdict.notes)
    assert not _untimed_note(d.verdict.notes)


def test_an_untimed_kernel_line_without_a_twin_stays_and_says_so(tmp_path: Path) -> None:
    other = OOM.replace("4242", "4343")  # another process: not the same line
    d = run(tmp_path, {"dmesg.txt": OOM, "dmesg-raw.txt": _raw(OOM, " 812.5") + _raw(other, " 813.0")})
    kills = sorted((e.facts["pid"], e.time is None) for e in d.events if e.rule == "kernel.oom-killer")
    assert kills == [("4242", False), ("4343", True)]
    assert any("1 kernel line also in" in n for n in d.verdict.notes)
    assert _untimed_note(d.verdict.notes)  # still true of the line it alone holds


def test_two_timed_kernel_logs_are_not_twins(tmp_path: Path) -> None:
    """Two hosts' `dmesg -T` may hold alike lines: only a line without a wall time is taken for a copy."""
    d = run(tmp_path, {"dmesg-node01.txt": OOM, "dmesg-node02.txt": OOM})
    assert sorted(e.host or "" for e in d.events if e.rule == "kernel.oom-killer") == ["node01", "node02"]
