"""`dmesg -H` / `--time-format reltime` and `--time-format delta` stamps: the minute form is an interval,
the relative forms give order only (the line takes its neighbours' time)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

from rankautopsy.model import Cause
from rankautopsy.pipeline import Options, diagnose
from rankautopsy.sources.clocks import ClockContext, parse_kernel_line

CTX = ClockContext(UTC, 2026)


def test_reltime_minute_stamp_is_the_whole_minute() -> None:
    stamp = parse_kernel_line("[Nov29 07:00] Out of memory: Killed process 4242 (python)", CTX)
    assert stamp is not None and stamp.wall is not None
    assert stamp.wall.earliest == datetime(2026, 11, 29, 7, 0, tzinfo=UTC)
    assert stamp.wall.latest - stamp.wall.earliest == timedelta(minutes=1)
    assert stamp.rest == "Out of memory: Killed process 4242 (python)"


def test_reltime_minute_stamp_is_local_time() -> None:
    stamp = parse_kernel_line("[Mar 1 23:59] msg", ClockContext(timezone(timedelta(hours=2)), 2026))
    assert stamp is not None and stamp.wall is not None
    assert stamp.wall.earliest == datetime(2026, 3, 1, 21, 59, tzinfo=UTC)


def test_relative_stamps_are_stripped_and_carry_no_time() -> None:
    for line in ("[  +0.000123] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
                 "[<    0.000012>] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."):  # fmt: skip
        stamp = parse_kernel_line(line, CTX)
        assert stamp is not None
        assert (stamp.wall, stamp.monotonic) == (None, None)
        assert stamp.rest.startswith("NVRM: Xid")


def test_other_kernel_forms_are_unchanged() -> None:
    raw = parse_kernel_line("[ 1234.567890] msg", CTX)
    assert raw is not None and raw.monotonic == 1234.56789 and raw.wall is None
    assert parse_kernel_line("[Nov29] msg", CTX) is None
    assert parse_kernel_line("[+x] msg", CTX) is None


def test_oom_kill_in_a_reltime_dmesg_is_joined_and_ordered(tmp_path: Path) -> None:
    # rank 0 left no log of its own: torchrun's line names its pid, the kernel log its death
    rank1 = "".join(f"2026-11-29 07:00:{s:02d},000 INFO [rank 1] step {s}/100\n" for s in range(10))
    agent = (
        "E1129 07:00:30.000000 4100 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: -9) "
        "local_rank: 0 (pid: 4242) of binary: /usr/bin/python\n"
    )
    dmesg = (
        "[Nov29 06:59] eth0: link up\n"
        "[  +5.000000] systemd-journald[512]: Received client request to flush runtime journal.\n"
        "[Nov29 07:00] python invoked oom-killer: gfp_mask=0x140dca, order=0, oom_score_adj=0\n"
        "[  +0.000123] Out of memory: Killed process 4242 (pt_main_thread) total-vm:1000kB, anon-rss:900kB, "
        "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:100kB oom_score_adj:0\n"
        "[  +0.010000] oom_reaper: reaped process 4242 (pt_main_thread), now anon-rss:0kB, file-rss:0kB, "
        "shmem-rss:0kB\n"
    )
    (tmp_path / "rank_1.log").write_text(rank1)
    (tmp_path / "agent.log").write_text(agent)
    (tmp_path / "dmesg.txt").write_text(dmesg)
    d = diagnose(Options(paths=[str(tmp_path)], tz=UTC))
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (0, Cause.HOST_OOM)
    oom = next(e for e in d.events if e.rule == "kernel.oom-killer")
    assert oom.time is not None and oom.time.earliest >= datetime(2026, 11, 29, 7, 0, tzinfo=UTC)
    assert oom.text.startswith("Out of memory")
