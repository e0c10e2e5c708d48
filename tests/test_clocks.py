"""Every timestamp format of the logs, read into UTC intervals (TZ-independent: explicit zones)."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankautopsy.model import TimeSpan
from rankautopsy.sources.clocks import (
    ClockContext,
    KernelStamp,
    find_time,
    live_boot_time,
    live_uptime,
    local_zone,
    parse_boot_time,
    parse_kernel_line,
    parse_torchrun_time,
    wall_from_monotonic,
    year_hint_from_text,
    yearless_stamp,
)

BERLIN = ZoneInfo("Europe/Berlin")
NEW_YORK = ZoneInfo("America/New_York")
BERLIN_2026 = ClockContext(BERLIN, 2026)
UTC_2026 = ClockContext(UTC, 2026)
NY_2026 = ClockContext(NEW_YORK, 2026)

SECOND = timedelta(seconds=1)
MILLI = timedelta(milliseconds=1)
MICRO = timedelta(microseconds=1)


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, micro: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)


# --- find_time: one example per format -----------------------------------------------------

FIND_TIME_CASES = [
    # Python logging default, with `,`, `.` or no fraction (local time)
    (
        "2026-11-29 07:00:00,123 - INFO - x",
        BERLIN_2026,
        at(2026, 11, 29, 6, 0, 0, 123000),
        MILLI,
    ),
    (
        "2026-11-29 07:00:00.123 x",
        BERLIN_2026,
        at(2026, 11, 29, 6, 0, 0, 123000),
        MILLI,
    ),
    ("2026-11-29 07:00:00 x", BERLIN_2026, at(2026, 11, 29, 6), SECOND),
    ("2026-07-09 07:00:00,123 x", BERLIN_2026, at(2026, 7, 9, 5, 0, 0, 123000), MILLI),
    ("2026-11-29 07:00:00,123 x", UTC_2026, at(2026, 11, 29, 7, 0, 0, 123000), MILLI),
    ("2026-11-29 07:00:00 x", NY_2026, at(2026, 11, 29, 12), SECOND),
    # ISO 8601 with T, any fraction, with and without zone
    ("2026-11-29T07:00:00 x", BERLIN_2026, at(2026, 11, 29, 6), SECOND),
    ("2026-11-29T07:00:00Z x", BERLIN_2026, at(2026, 11, 29, 7), SECOND),
    (
        "2026-11-29T07:00:00.5+01:00 x",
        UTC_2026,
        at(2026, 11, 29, 6, 0, 0, 500000),
        100 * MILLI,
    ),
    (
        "2026-11-29T07:00:00.12+05:30 x",
        UTC_2026,
        at(2026, 11, 29, 1, 30, 0, 120000),
        10 * MILLI,
    ),
    (
        "2026-11-29T07:00:00.123456-0500 x",
        UTC_2026,
        at(2026, 11, 29, 12, 0, 0, 123456),
        MICRO,
    ),
    ("2026-11-29T07:00:00+01 x", UTC_2026, at(2026, 11, 29, 6), SECOND),
    (
        "2024-08-02T04:17:40",
        BERLIN_2026,
        at(2024, 8, 2, 2, 17, 40),
        SECOND,
    ),  # slurmstepd
    # Kubernetes CRI file and kubectl --timestamps: UTC, 9-digit fractions
    (
        "2016-10-06T00:17:09.669794202Z stdout F log content 1",
        BERLIN_2026,
        at(2016, 10, 6, 0, 17, 9, 669794),
        MICRO,
    ),
    (
        "2026-11-29T07:00:00.123456789Z Traceback",
        NY_2026,
        at(2026, 11, 29, 7, 0, 0, 123456),
        MICRO,
    ),
    # DeepSpeed and NCCL >= 2.26 (one leading bracket)
    (
        "[2025-12-18 20:27:22,783] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 748089",
        BERLIN_2026,
        at(2025, 12, 18, 19, 27, 22, 783000),
        MILLI,
    ),
    (
        "[2026-11-29 07:00:00] node1:42:43 [0] net_ib.cc:2244 NCCL WARN x",
        BERLIN_2026,
        at(2026, 11, 29, 6),
        SECOND,
    ),
    ("[2026-11-29 07:00:00]", UTC_2026, at(2026, 11, 29, 7), SECOND),
    # c10: the fraction is CLOCK_MONOTONIC, so the interval is the whole second
    (
        "[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] x",
        BERLIN_2026,
        at(2026, 12, 18, 19, 27, 21),
        SECOND,
    ),
    (
        "E1129 07:00:00.123456789 file.cpp:12] msg",
        BERLIN_2026,
        at(2026, 11, 29, 6),
        SECOND,
    ),
    (
        "[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] x",
        BERLIN_2026,
        at(2026, 7, 9, 15, 5, 38),
        SECOND,
    ),
    (
        "[rank0]:[E709 17:05:38.162555850 ProcessGroupNCCL.cpp:632] x",
        BERLIN_2026,
        at(2026, 7, 9, 15, 5, 38),
        SECOND,
    ),
    (
        "[W101 00:00:01.999999999 TCPStore.cpp:1] x",
        UTC_2026,
        at(2026, 1, 1, 0, 0, 1),
        SECOND,
    ),
    # torch Python logging: zero-padded month, whole milliseconds as 6 digits
    (
        "E0709 17:05:39.816000 56204 site-packages/torch/distributed/elastic/multiprocessing/api.py:874] failed",
        BERLIN_2026,
        at(2026, 7, 9, 15, 5, 39, 816000),
        MILLI,
    ),
    (
        "[rank3]:I1129 07:00:00.250000 77 torch/x.py:1] hi",
        UTC_2026,
        at(2026, 11, 29, 7, 0, 0, 250000),
        MILLI,
    ),
    (
        "C1129 07:00:00.001000 77 torch/x.py:1] hi",
        UTC_2026,
        at(2026, 11, 29, 7, 0, 0, 1000),
        MILLI,
    ),
    (
        "V1129 07:00:00.001 77 x.cpp:1] glog-ish",
        UTC_2026,
        at(2026, 11, 29, 7, 0, 0, 1000),
        MILLI,
    ),
    # syslog / journal: no year
    ("Nov 29 07:00:00 host python[12]: x", BERLIN_2026, at(2026, 11, 29, 6), SECOND),
    ("Nov  9 07:00:00 host python[12]: x", BERLIN_2026, at(2026, 11, 9, 6), SECOND),
    (
        "Nov 29 07:00:00.123456 host kernel: x",
        UTC_2026,
        at(2026, 11, 29, 7, 0, 0, 123456),
        MICRO,
    ),
    # ctime (dmesg -T, mpirun --timestamp-output)
    ("Sun Nov 29 07:00:00 2026 x", BERLIN_2026, at(2026, 11, 29, 6), SECOND),
    ("[Sun Mar  1 07:00:00 2026] x", BERLIN_2026, at(2026, 3, 1, 6), SECOND),
    (
        "Sun Oct  1 17:01:10 2017[1,30]<stdout>: x",
        BERLIN_2026,
        at(2017, 10, 1, 15, 1, 10),
        SECOND,
    ),
]


@pytest.mark.parametrize(("line", "ctx", "earliest", "width"), FIND_TIME_CASES)
def test_find_time(line: str, ctx: ClockContext, earliest: datetime, width: timedelta) -> None:
    assert find_time(line, ctx) == TimeSpan(earliest, earliest + width)


def test_c10_fraction_is_not_trusted() -> None:
    early = find_time("[E1129 07:00:00.000000001 a.cpp:1] x", UTC_2026)
    late = find_time("[E1129 07:00:00.999999999 a.cpp:1] x", UTC_2026)
    assert early == late == TimeSpan(at(2026, 11, 29, 7), at(2026, 11, 29, 7, 0, 1))


def test_nine_digit_fraction_is_truncated_not_rounded() -> None:
    span = find_time("2026-11-29T07:00:00.999999999Z x", UTC_2026)
    assert span == TimeSpan(at(2026, 11, 29, 7, 0, 0, 999999), at(2026, 11, 29, 7, 0, 1))


def test_ambiguous_local_time_spans_both_readings() -> None:
    # 02:30 happens twice in Berlin on 2026-10-25 (CEST, then CET)
    span = find_time("2026-10-25 02:30:00 x", BERLIN_2026)
    assert span == TimeSpan(at(2026, 10, 25, 0, 30), at(2026, 10, 25, 1, 30, 1))


def test_year_comes_from_the_context() -> None:
    span = find_time("E1129 07:00:00.123456789 a.cpp:1] x", ClockContext(UTC, 2019))
    assert span is not None
    assert span.earliest == at(2019, 11, 29, 7)


@pytest.mark.parametrize(
    "line",
    [
        "",
        "[",
        "Traceback (most recent call last):",
        "INFO 2026-11-29 07:00:00,123 x",
        "Saved checkpoint at 2026-11-29 07:00:00",
        "loss 1.0 at Nov 29 07:00:00",
        "[rank3]: RuntimeError: raised at 2026-11-29 07:00:00",
        "time      : 2025-07-09_17:05:39",
        "  2026-11-29 07:00:00 indented",
        "[[2026-11-29 07:00:00]",
        "[E ProcessGroupNCCL.cpp:481] Some NCCL operations have failed",
        "E1129 07:00:00 a.cpp:1] no fraction",
        "2026-13-01 07:00:00 month 13",
        "2026-02-30 07:00:00 Feb 30",
        "2026-11-29 07:00:0012",
        "2026-11-29T07:00:00+25:00",
        "E1332 07:00:00.123456789 a.cpp:1] x",
        "X1129 07:00:00.123456789 a.cpp:1] x",
        "Foo 29 07:00:00 host x",
        "Nov 29 07:00 host x",
        "2026-11-29",
    ],
)
def test_find_time_none(line: str) -> None:
    assert find_time(line, BERLIN_2026) is None


def test_torchrun_time() -> None:
    span = parse_torchrun_time(" 2025-07-09_17:05:39 ", BERLIN_2026)
    assert span == TimeSpan(at(2025, 7, 9, 15, 5, 39), at(2025, 7, 9, 15, 5, 40))
    assert parse_torchrun_time("2025-07-09_17:05:39", UTC_2026) == TimeSpan.point(at(2025, 7, 9, 17, 5, 39), SECOND)
    assert parse_torchrun_time("<N/A>", BERLIN_2026) is None
    assert parse_torchrun_time("2025-02-30_17:05:39", BERLIN_2026) is None


@pytest.mark.parametrize(
    ("line", "year"),
    [
        ("[2025-12-18 20:27:22,783] [INFO] x", 2025),
        ("  time      : 2025-07-09_17:05:39", 2025),
        ("[Sun Nov 29 07:00:00 2026] x", 2026),
        (
            "slurmstepd: error: *** JOB 1 ON r1 CANCELLED AT 2024-08-02T04:17:40 ***",
            2024,
        ),
        ("E1129 07:00:00.123456789 a.cpp:1] x", None),
        ("Nov 29 07:00:00 host kernel: x", None),
        ("torch 2.4.0 built 2024-06-01", None),
        ("2026-13-45T07:00:00", None),
        ("port 12026-11-29 07:00:00", None),
    ],
)
def test_year_hint(line: str, year: int | None) -> None:
    assert year_hint_from_text(line) == year


@pytest.mark.parametrize(
    ("line", "kernel", "stamp"),
    [
        ("E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] x", False, "E1206 18:44:12.715298746"),
        ("[rank0]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] x", False, "E1206 18:44:12.715298746"),
        ("INFO 11-08 11:01:30 [core.py:502] x", False, "INFO 11-08 11:01:30"),
        ("Nov 29 07:00:00 host kernel: x", True, "Nov 29 07:00:00"),
        ("[Nov29 07:00] x", True, "Nov29 07:00"),
        ("[2025-12-18 20:27:22,783] [INFO] x", False, None),
        ("[Sun Nov 29 07:00:00 2026] x", True, None),
        ("[ 1234.567890] x", True, None),
        ("no stamp at all", False, None),
    ],
)
def test_yearless_stamp(line: str, kernel: bool, stamp: str | None) -> None:
    """A stamp dated in `ClockContext.year` is found, so the report can say the year is not the log's."""
    assert yearless_stamp(line, kernel) == stamp


def test_lines_without_time_are_cheap() -> None:
    lines = [
        "Traceback (most recent call last):",
        '  File "x.py", line 3',
        "Epoch 1 loss 0.3",
        "x" * 100_000,
    ]
    start = time.perf_counter()
    for _ in range(2_000):
        for line in lines:
            find_time(line, BERLIN_2026)
    per_line = (time.perf_counter() - start) / 8_000
    assert per_line < 20e-6  # generous on purpose: a guard against regressions, not a benchmark


# --- kernel lines --------------------------------------------------------------------------

BOOT = at(2026, 11, 29, 6)

KERNEL_CASES = [
    (
        "[ 1234.567890] Out of memory: Killed process 4242 (python)",
        None,
        1234.56789,
        None,
        "Out of memory: Killed process 4242 (python)",
    ),
    ("[    0.000000] Linux version 6.8", None, 0.0, None, "Linux version 6.8"),
    ("<6>[ 1234.567890] msg", None, 1234.56789, None, "msg"),
    ("kern  :err   : [ 1234.567890] msg", None, 1234.56789, None, "msg"),
    (
        "[Sun Nov 29 07:00:00 2026] msg",
        TimeSpan.point(at(2026, 11, 29, 6), SECOND),
        None,
        None,
        "msg",
    ),
    (
        "[Sun Mar  1 07:00:00 2026] msg",
        TimeSpan.point(at(2026, 3, 1, 6), SECOND),
        None,
        None,
        "msg",
    ),
    (
        "[Sun Nov 29 07:00:00 2026 <    0.000316>] msg",
        TimeSpan.point(at(2026, 11, 29, 6), SECOND),
        None,
        None,
        "msg",
    ),
    (
        "2026-11-29T07:00:00,123456+01:00 msg",
        TimeSpan.point(at(2026, 11, 29, 6, 0, 0, 123456), MICRO),
        None,
        None,
        "msg",
    ),
    (
        "2026-11-29T07:00:00,123456+01:00 usb 1-1: new device",
        TimeSpan.point(at(2026, 11, 29, 6, 0, 0, 123456), MICRO),
        None,
        None,
        "usb 1-1: new device",
    ),
    (
        "Nov 29 07:00:00 node7 kernel: msg",
        TimeSpan.point(at(2026, 11, 29, 6), SECOND),
        None,
        "node7",
        "msg",
    ),
    (
        "Nov 29 07:00:00.123456 node7 kernel: msg",
        TimeSpan.point(at(2026, 11, 29, 6, 0, 0, 123456), MICRO),
        None,
        "node7",
        "msg",
    ),
    (
        "2026-08-18T19:05:24+0200 node7 kernel: msg",
        TimeSpan.point(at(2026, 8, 18, 17, 5, 24), SECOND),
        None,
        "node7",
        "msg",
    ),
    (
        "2026-08-18T19:05:24+0200 node7 vllm[68245]: msg",
        TimeSpan.point(at(2026, 8, 18, 17, 5, 24), SECOND),
        None,
        "node7",
        "vllm[68245]: msg",
    ),
    ("[ 1234.567890] node7 kernel: msg", None, 1234.56789, "node7", "msg"),
    (
        "Dec 23 23:28:17 node7 kernel: [  179.437927] NVRM: Xid (PCI:0000:3b:00): 79",
        TimeSpan.point(at(2026, 12, 23, 22, 28, 17), SECOND),
        179.437927,
        "node7",
        "NVRM: Xid (PCI:0000:3b:00): 79",
    ),
    (
        "2026-12-23T23:28:17.000001+01:00 node7 kernel: [  179.437927] msg",
        TimeSpan.point(at(2026, 12, 23, 22, 28, 17, 1), MICRO),
        179.437927,
        "node7",
        "msg",
    ),
    (
        "Nov 29 07:00:00 node7 systemd[1]: session-1.scope: killed by the OOM killer",
        TimeSpan.point(at(2026, 11, 29, 6), SECOND),
        None,
        "node7",
        "systemd[1]: session-1.scope: killed by the OOM killer",
    ),
]


@pytest.mark.parametrize(("line", "wall", "monotonic", "host", "rest"), KERNEL_CASES)
def test_kernel_line(
    line: str,
    wall: TimeSpan | None,
    monotonic: float | None,
    host: str | None,
    rest: str,
) -> None:
    assert parse_kernel_line(line, BERLIN_2026) == KernelStamp(wall, monotonic, host, rest)


def test_kernel_monotonic_placed_by_boot_time() -> None:
    ctx = ClockContext(BERLIN, 2026, boot_time=BOOT)
    stamp = parse_kernel_line("[ 1234.567890] msg", ctx)
    assert stamp == KernelStamp(
        TimeSpan.point(at(2026, 11, 29, 6, 20, 34, 567890), MICRO),
        1234.56789,
        None,
        "msg",
    )


def test_kernel_line_keeps_its_own_wall_clock_over_boot_time() -> None:
    ctx = ClockContext(UTC, 2026, boot_time=BOOT)
    stamp = parse_kernel_line("Dec 23 23:28:17 node7 kernel: [  179.437927] msg", ctx)
    assert stamp is not None
    assert stamp.wall == TimeSpan.point(at(2026, 12, 23, 23, 28, 17), SECOND)


@pytest.mark.parametrize(
    "line",
    [
        "",
        "-- Boot 0123456789abcdef --",
        "-- No entries --",
        "Out of memory: Killed process 1 (x)",
        "[ abc] msg",
        "<6>msg",
        "kern  :info  : msg",
    ],
)
def test_kernel_line_none(line: str) -> None:
    assert parse_kernel_line(line, BERLIN_2026) is None


def test_wall_from_monotonic() -> None:
    assert wall_from_monotonic(1234.56789, BOOT) == TimeSpan(
        at(2026, 11, 29, 6, 20, 34, 567890), at(2026, 11, 29, 6, 20, 34, 567891)
    )
    span = wall_from_monotonic(0.0, datetime(2026, 11, 29, 7, tzinfo=BERLIN))
    assert span.earliest == BOOT
    assert span.earliest.tzinfo is UTC


# --- boot time -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-29T06:00:00+01:00", at(2026, 11, 29, 5)),
        ("2026-11-29T06:00:00Z", at(2026, 11, 29, 6)),
        ("2026-11-29T06:00:00", at(2026, 11, 29, 5)),
        ("2026-11-29 06:00:00", at(2026, 11, 29, 5)),
        ("  2026-11-29 06:00:00\n", at(2026, 11, 29, 5)),
        ("2026-11-29T06:00:00.123456789-0100", at(2026, 11, 29, 7, 0, 0, 123456)),
        (str(int(at(2026, 11, 29, 6).timestamp())), at(2026, 11, 29, 6)),
        (f"@{int(at(2026, 11, 29, 6).timestamp())}", at(2026, 11, 29, 6)),
        (
            f"{int(at(2026, 11, 29, 6).timestamp())}.5",
            at(2026, 11, 29, 6, 0, 0, 500000),
        ),
    ],
)
def test_parse_boot_time(value: str, expected: datetime) -> None:
    parsed = parse_boot_time(value, BERLIN)
    assert parsed == expected
    assert parsed.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "yesterday",
        "2026-11-29",
        "2026-13-01 00:00:00",
        "1e9",
        "99999999999999999999",
        "2026-11-29T06:00:00+25:00",
        "06:00:00",
        "2026-11-29 06:00:00 trailing",
    ],
)
def test_parse_boot_time_rejects(value: str) -> None:
    with pytest.raises(ValueError, match="boot time"):
        parse_boot_time(value, BERLIN)


def test_live_clocks_are_sane() -> None:
    boot, uptime = live_boot_time(), live_uptime()
    now = datetime.now(UTC)
    if boot is not None:
        assert boot <= now
        assert boot.utcoffset() == timedelta(0)
    if uptime is not None:
        assert uptime >= 0


def test_local_zone_honours_tz(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "Europe/Berlin")
    assert local_zone() == BERLIN
    monkeypatch.setenv("TZ", ":America/New_York")
    assert local_zone() == NEW_YORK
    monkeypatch.setenv("TZ", "")
    assert local_zone() is UTC
    monkeypatch.setenv("TZ", "Not/A_Zone")
    assert isinstance(local_zone(), tzinfo)
    monkeypatch.delenv("TZ")
    assert isinstance(local_zone(), tzinfo)


def test_context_defaults() -> None:
    ctx = ClockContext()
    assert isinstance(ctx.tz, tzinfo)
    assert ctx.year == datetime.now().year
    assert ctx.boot_time is None


# --- properties ----------------------------------------------------------------------------

MONTHS = (
    "Jan",
    "Feb",
    "Mar",
    "Apr",
    "May",
    "Jun",
    "Jul",
    "Aug",
    "Sep",
    "Oct",
    "Nov",
    "Dec",
)
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def _hms(d: datetime) -> str:
    return f"{d.hour:02d}:{d.minute:02d}:{d.second:02d}"


def _ymd(d: datetime) -> str:
    return f"{d.year:04d}-{d.month:02d}-{d.day:02d}"


def _ms(d: datetime) -> str:
    return f"{d.microsecond // 1000:03d}"


def _offset(d: datetime, colon: bool) -> str:
    minutes = int((d.utcoffset() or timedelta(0)).total_seconds()) // 60
    sign, minutes = ("-", -minutes) if minutes < 0 else ("+", minutes)
    return f"{sign}{minutes // 60:02d}{':' if colon else ''}{minutes % 60:02d}"


def _ctime(d: datetime) -> str:  # strftime "%a %b %e %H:%M:%S %Y", C locale
    return f"{WEEKDAYS[d.weekday()]} {MONTHS[d.month - 1]} {d.day:2d} {_hms(d)} {d.year}"


def _untrusted_ns(d: datetime) -> int:
    return (d.microsecond * 7919 + 123) % 1_000_000_000


# Each formatter gets the instant in the emitter's local zone, following the emitter's format string.
LINE_FORMATS: dict[str, Callable[[datetime], str]] = {
    "python-logging": lambda d: f"{_ymd(d)} {_hms(d)},{_ms(d)} - INFO - msg",
    "python-logging-dot": lambda d: f"{_ymd(d)} {_hms(d)}.{_ms(d)} msg",
    "python-logging-seconds": lambda d: f"{_ymd(d)} {_hms(d)} msg",
    "iso-naive": lambda d: f"{_ymd(d)}T{_hms(d)}.{d.microsecond:06d} msg",
    "iso-offset": lambda d: f"{_ymd(d)}T{_hms(d)}.{d.microsecond:06d}{_offset(d, True)} msg",
    "iso-basic-offset": lambda d: f"{_ymd(d)}T{_hms(d)}{_offset(d, False)} msg",
    "iso-utc-ns": lambda d: f"{_ymd(d.astimezone(UTC))}T{_hms(d.astimezone(UTC))}.{d.microsecond:06d}789Z stdout F m",
    "slurm": lambda d: f"{_ymd(d)}T{_hms(d)}",
    "deepspeed": lambda d: f"[{_ymd(d)} {_hms(d)},{_ms(d)}] [INFO] [launch.py:319:sigkill_handler] x",
    "nccl": lambda d: f"[{_ymd(d)} {_hms(d)}] node1:42:43 [0] NCCL WARN x",
    "c10": lambda d: f"[E{d.month * 100 + d.day} {_hms(d)}.{_untrusted_ns(d):09d} ProcessGroupNCCL.cpp:629] x",
    "c10-ranked": lambda d: f"[rank7]:[W{d.month * 100 + d.day} {_hms(d)}.{_untrusted_ns(d):09d} a.cpp:1] x",
    "torch": lambda d: f"E{d.month:02d}{d.day:02d} {_hms(d)}.{_ms(d)}000 56204 torch/x.py:874] x",
    "glog": lambda d: f"I{d.month:02d}{d.day:02d} {_hms(d)}.{d.microsecond:06d} 12345 a.cpp:1] x",
    "syslog": lambda d: f"{MONTHS[d.month - 1]} {d.day:2d} {_hms(d)} host python[3]: x",
    "journal-precise": lambda d: f"{MONTHS[d.month - 1]} {d.day:02d} {_hms(d)}.{d.microsecond:06d} host x",
    "ctime": lambda d: f"{_ctime(d)}[1,3]<stdout>: x",
    "ctime-bracketed": lambda d: f"[{_ctime(d)}] x",
}

KERNEL_FORMATS: dict[str, Callable[[datetime], str]] = {
    "dmesg-T": lambda d: f"[{_ctime(d)}] msg",
    "dmesg-T-delta": lambda d: f"[{_ctime(d)} <    0.000316>] msg",
    "dmesg-iso": lambda d: f"{_ymd(d)}T{_hms(d)},{d.microsecond:06d}{_offset(d, True)} msg",
    "journal-short": lambda d: f"{MONTHS[d.month - 1]} {d.day:02d} {_hms(d)} host kernel: msg",
    "journal-precise": lambda d: f"{MONTHS[d.month - 1]} {d.day:02d} {_hms(d)}.{d.microsecond:06d} host kernel: msg",
    "journal-iso": lambda d: f"{_ymd(d)}T{_hms(d)}{_offset(d, False)} host kernel: msg",
    "kern.log": lambda d: f"{MONTHS[d.month - 1]} {d.day:2d} {_hms(d)} host kernel: [  179.437927] msg",
}

ZONES = st.sampled_from(
    [
        UTC,
        BERLIN,
        NEW_YORK,
        ZoneInfo("Asia/Kolkata"),
        ZoneInfo("Australia/Lord_Howe"),
        timezone(-timedelta(hours=3.5)),
    ]
)
INSTANTS = st.datetimes(min_value=datetime(1971, 1, 2), max_value=datetime(2099, 12, 30)).map(
    lambda d: d.replace(tzinfo=UTC)
)


def _contains(span: TimeSpan | None, instant: datetime) -> bool:
    return span is not None and span.earliest <= instant < span.latest


@settings(max_examples=60, deadline=None)
@given(instant=INSTANTS, zone=ZONES, name=st.sampled_from(sorted(LINE_FORMATS)))
def test_round_trip_find_time(instant: datetime, zone: tzinfo, name: str) -> None:
    local = instant.astimezone(zone)
    line = LINE_FORMATS[name](local)
    assert _contains(find_time(line, ClockContext(zone, local.year)), instant), line


@settings(max_examples=40, deadline=None)
@given(instant=INSTANTS, zone=ZONES, name=st.sampled_from(sorted(KERNEL_FORMATS)))
def test_round_trip_kernel(instant: datetime, zone: tzinfo, name: str) -> None:
    local = instant.astimezone(zone)
    line = KERNEL_FORMATS[name](local)
    stamp = parse_kernel_line(line, ClockContext(zone, local.year))
    assert stamp is not None, line
    assert _contains(stamp.wall, instant), line
    assert stamp.rest == "msg"


@settings(max_examples=40, deadline=None)
@given(instant=INSTANTS, monotonic=st.integers(0, 10**12))
def test_round_trip_monotonic(instant: datetime, monotonic: int) -> None:
    seconds = monotonic / 1e6
    stamp = parse_kernel_line(f"[{seconds:12.6f}] msg", ClockContext(UTC, 2026, boot_time=instant))
    assert stamp is not None
    assert stamp.monotonic == pytest.approx(seconds)
    assert _contains(stamp.wall, instant + timedelta(microseconds=monotonic))


STAMPISH = st.from_regex(
    r"\A\[?(?:[FEWIVCX]\d{3,5} \d\d:\d\d:\d\d\.\d{1,12}"
    r"|\d{4}-\d\d-\d\d[T _]\d\d:\d\d:\d\d(?:[.,]\d{0,12})?(?:Z|[+-]\d\d:?\d\d)?"
    r"|(?:Sun |Mon )?(?:Jan|Feb|Nov) [ \d]\d \d\d:\d\d:\d\d(?: \d{4})?\]?"
    r"|<\d>\[ *\d{1,12}\.\d{1,12}\])",
    fullmatch=False,
)


@st.composite
def mangled_lines(draw: st.DrawFn) -> str:
    """A well-formed stamp of any format, cut short or with a character replaced."""
    formats = {**LINE_FORMATS, **KERNEL_FORMATS}
    line = formats[draw(st.sampled_from(sorted(formats)))](draw(INSTANTS).astimezone(draw(ZONES)))
    cut = draw(st.integers(0, len(line)))
    return line[:cut] + draw(st.text(max_size=3)) + line[cut + draw(st.integers(0, 2)) :]


TEXT = st.one_of(st.text(max_size=80), STAMPISH, mangled_lines())


@settings(max_examples=150, deadline=None)
@given(text=TEXT, zone=ZONES, year=st.integers(1, 9999))
def test_find_time_never_raises(text: str, zone: tzinfo, year: int) -> None:
    span = find_time(text, ClockContext(zone, year))
    assert span is None or span.earliest <= span.latest


@settings(max_examples=150, deadline=None)
@given(
    text=TEXT,
    zone=ZONES,
    year=st.integers(1, 9999),
    boot=st.one_of(st.none(), st.sampled_from([at(1, 1, 1), BOOT, at(9999, 12, 31, 23)])),
)
def test_parse_kernel_line_never_raises(text: str, zone: tzinfo, year: int, boot: datetime | None) -> None:
    stamp = parse_kernel_line(text, ClockContext(zone, year, boot_time=boot))
    assert stamp is None or isinstance(stamp.rest, str)


_WATCHDOG = "[rank{r}]:[E1206 18:44:1{r}.715298746 ProcessGroupNCCL.cpp:607] [Rank {r}] Watchdog caught collective \
operation timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600061 \
milliseconds before timing out.\n"


@pytest.mark.parametrize(("head", "said"), [("", True), ("[2024-12-06 18:30:00,000] [INFO] start\n", False)])
def test_a_date_whose_year_no_line_gives_is_said_to_be_guessed(tmp_path: Path, head: str, said: bool) -> None:
    from rankautopsy.pipeline import Options, diagnose

    (tmp_path / "console.log").write_text(head + _WATCHDOG.format(r=0) + _WATCHDOG.format(r=1))
    d = diagnose(Options(paths=[str(tmp_path)], tz=UTC))
    notes = [n for n in (*d.verdict.notes, *d.verdict.reasoning) if "gives the year" in n]
    assert bool(notes) is said, d.verdict
    assert not said or "`E1206 18:44:10.715298746`" in notes[0]
    now = datetime.now(UTC)  # no year given: Dec 6 of the year up to tomorrow
    this_year = now.year if date(now.year, 12, 6) <= (now + timedelta(days=1)).date() else now.year - 1
    assert {e.time.earliest.year for e in d.events if e.time} == {2024 if head else this_year}


@pytest.mark.parametrize(
    ("line", "year"),
    [
        ("E1219 03:01:55.123456 1 api.py:1] x", 2025),  # after the latest day: the year before
        ("E1207 23:59:59.123456 1 api.py:1] x", 2026),  # the latest day itself
        ("Nov 29 07:00:01 node01 kernel: x", 2026),
        ("Dec 31 07:00:01 node01 kernel: x", 2025),
        ("INFO 12-19 07:00:01 worker.py:1] x", 2025),
    ],
)
def test_a_date_without_a_year_is_never_after_the_latest_day_it_may_mean(line: str, year: int) -> None:
    ctx = ClockContext(UTC, 2026, not_after=date(2026, 12, 7))
    span = find_time(line, ctx)
    assert span is not None and span.earliest.year == year
    assert find_time(line, ClockContext(UTC, 2026)).earliest.year == 2026  # a year the logs gave is kept as is
