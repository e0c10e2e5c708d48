"""Clocks: every timestamp format of the logs, turned into aware UTC intervals (`TimeSpan`).

A stamp stands for an interval as wide as its resolution: `07:00:01` is [07:00:01, 07:00:02),
`07:00:01,123` is [07:00:01.123, 07:00:01.124). Naive stamps are local time in `ClockContext.tz`;
a local time that a DST change makes ambiguous (or skipped) spans both readings.

Stamps without a year (glog/c10 `E1129`, torch `E0709`, journal `Nov 29`, vLLM's `INFO 11-29`) take `ClockContext.year`.
Year rollover is not guessed within the logs: logs that cross New Year read with one `year` put the
December (or January) lines a year off. Callers pick `year` from a full-date line of the same
inputs (`year_hint_from_text`) so that at most the lines on the other side of New Year are wrong.
Where no line gives one, the year is today's and a date after today is last year's (`not_after`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import field
from datetime import UTC, date, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Protocol, TypeVar
from zoneinfo import ZoneInfo

from rankautopsy import recache
from rankautopsy.model import TimeSpan
from rankautopsy.records import record

__all__ = [
    "ClockContext",
    "KernelStamp",
    "find_time",
    "live_boot_time",
    "live_uptime",
    "local_zone",
    "parse_boot_time",
    "parse_kernel_line",
    "parse_torchrun_time",
    "wall_from_monotonic",
    "year_hint_from_text",
    "yearless_stamp",
]

_SECOND = timedelta(seconds=1)
_MILLI = timedelta(milliseconds=1)
_MICRO = timedelta(microseconds=1)

_MON = "Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec"
_MONTHS = {name: number for number, name in enumerate(_MON.split("|"), 1)}
_WEEKDAY = "Mon|Tue|Wed|Thu|Fri|Sat|Sun"

# Pattern pieces; the builders below read these group names.
_HMS = r"(?P<H>\d\d):(?P<M>\d\d):(?P<S>\d\d)"
_ZONE = r"(?P<zone>[Zz]|[+-]\d\d(?::?\d\d)?)"
_DATE = r"(?P<Y>\d{4})-(?P<mo>\d\d)-(?P<d>\d\d)"
_ISO = _DATE + r"[T ]" + _HMS + r"(?:[.,](?P<frac>\d+))?" + _ZONE + r"?(?!\d)"
_TORCHRUN = _DATE + "_" + _HMS + r"(?:\.(?P<frac>\d+))?"
_GLOG = r"[FEWIVC](?P<md>\d{3,4}) " + _HMS + r"\.(?P<frac>\d{1,9})(?!\d)"
_SYSLOG = rf"(?P<mon>{_MON}) {{1,2}}(?P<d>\d{{1,2}}) {_HMS}(?:\.(?P<frac>\d{{1,9}}))?(?!\d)"
_CTIME = rf"(?:{_WEEKDAY}) (?P<mon>{_MON}) {{1,2}}(?P<d>\d{{1,2}}) {_HMS} (?P<Y>\d{{4}})(?!\d)"
_MONO = r"\[ *(?P<mono>\d{1,10}\.\d{1,9})\]"
# vLLM's logging format: `INFO 11-08 11:01:30 [core.py:502] ` (level, month-day, time; its datefmt has no year)
_LEVELED = r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (?P<mo>\d\d)-(?P<d>\d\d) " + _HMS + r"(?:\.(?P<frac>\d{1,9}))?(?!\d)"


def _compile(pattern: str) -> re.Pattern[str]:
    return recache.compile(pattern, re.ASCII)


# --- local time -----------------------------------------------------------------------


def local_zone() -> tzinfo:
    """The machine's time zone: `TZ` when set, else /etc/localtime, else the current fixed offset."""
    name = os.environ.get("TZ")
    if name is not None:
        return _named_zone(name.removeprefix(":")) or _fixed_local_zone()
    return _system_zone() or _fixed_local_zone()


def _named_zone(name: str) -> tzinfo | None:
    if not name:
        return UTC  # glibc reads an empty TZ as UTC
    try:
        if name.startswith("/"):
            with open(name, "rb") as handle:
                return ZoneInfo.from_file(handle, key=name)
        return ZoneInfo(name)
    except (OSError, ValueError, KeyError):  # ZoneInfoNotFoundError is a KeyError
        return None


def _system_zone() -> tzinfo | None:
    path = Path("/etc/localtime")
    try:
        target = str(path.resolve())
    except (OSError, RuntimeError):
        return None
    if "/zoneinfo/" in target:
        zone = _named_zone(target.split("/zoneinfo/", 1)[1])
        if zone is not None:
            return zone
    return _named_zone(str(path)) if path.exists() else None


def _fixed_local_zone() -> tzinfo:
    return datetime.now().astimezone().tzinfo or UTC


@record
class ClockContext:
    """How to read stamps that lack a zone, a year or a wall clock.

    `year` is used for every stamp without one. Where `not_after` is set (the caller took `year` from
    today's date, no line of the logs gave one), a yearless date after it is read in the year before:
    the logs of a job are never from the future.
    """

    tz: tzinfo = field(default_factory=local_zone)
    year: int = field(default_factory=lambda: datetime.now().year)
    # aware UTC; places raw dmesg monotonic seconds on the wall clock
    boot_time: datetime | None = None
    not_after: date | None = None


@record
class KernelStamp:
    """The clocks of one kernel-log line and the message after them."""

    # the line's wall-clock stamp, else its monotonic seconds placed by ctx.boot_time
    wall: TimeSpan | None
    monotonic: float | None  # seconds since boot, from `[ 1234.567890]`
    host: str | None  # journalctl / syslog host field
    rest: str  # the message after the stamp, host and `kernel: `


def _span(
    date: tuple[int, int, int], m: re.Match[str], micro: int, resolution: timedelta, tz: tzinfo
) -> TimeSpan | None:
    """The interval of a wall-clock reading; None for impossible dates (Feb 30, month 13...)."""
    hour, minute, second = map(int, m.group("H", "M", "S"))
    try:
        wall = datetime(*date, hour, minute, second, micro, tzinfo=UTC)
        low, high = _offsets(tz, (*date, hour, minute))
        return TimeSpan(wall - high, wall - low + resolution)
    except (ValueError, OverflowError):
        return None


_Minute = tuple[int, int, int, int, int]  # local year, month, day, hour, minute

# Zone lookups dominate the cost of a stamped line, and log lines come in runs within a minute.
_OFFSET_CACHE: dict[tuple[tzinfo, _Minute], tuple[timedelta, timedelta]] = {}


def _offsets(tz: tzinfo, minute: _Minute) -> tuple[timedelta, timedelta]:
    """The smallest and largest UTC offset `tz` may mean at this local minute (they differ near DST)."""
    key = (tz, minute)
    found = _OFFSET_CACHE.get(key)
    if found is None:
        if len(_OFFSET_CACHE) > 4096:
            _OFFSET_CACHE.clear()
        local = datetime(*minute, tzinfo=tz)
        first = local.utcoffset() or timedelta(0)
        second = local.replace(fold=1).utcoffset() or timedelta(0)
        found = _OFFSET_CACHE[key] = (min(first, second), max(first, second))
    return found


_RESOLUTIONS = tuple(timedelta(microseconds=10 ** (6 - digits)) for digits in range(7))


def _fraction(digits: str | None) -> tuple[int, timedelta]:
    """Microseconds and resolution of a decimal fraction; beyond 6 digits it is truncated."""
    if not digits:
        return 0, _SECOND
    kept = digits[:6]
    return int(kept) * 10 ** (6 - len(kept)), _RESOLUTIONS[len(kept)]


def _zone_of(zone: str | None, default: tzinfo) -> tzinfo:
    if not zone:
        return default
    if zone in ("Z", "z"):
        return UTC
    digits = zone[1:].replace(":", "")
    minutes = int(digits[:2]) * 60 + int(digits[2:] or 0)
    return timezone(timedelta(minutes=-minutes if zone[0] == "-" else minutes))


# --- builders: one per format, each reads its pattern's groups ------------------------------

_Builder = Callable[[re.Match[str], ClockContext], TimeSpan | None]


def _from_iso(m: re.Match[str], ctx: ClockContext) -> TimeSpan | None:
    micro, resolution = _fraction(m["frac"])
    try:
        tz = _zone_of(m["zone"], ctx.tz)
    except ValueError:  # an offset of 24 h or more
        return None
    return _span((int(m["Y"]), int(m["mo"]), int(m["d"])), m, micro, resolution, tz)


def _from_torchrun(m: re.Match[str], ctx: ClockContext) -> TimeSpan | None:
    micro, resolution = _fraction(m["frac"])
    return _span((int(m["Y"]), int(m["mo"]), int(m["d"])), m, micro, resolution, ctx.tz)


def _glog_fraction(digits: str) -> tuple[int, timedelta]:
    # c10's 9 digits are CLOCK_MONOTONIC nanoseconds, not the wall clock's (§1.1)
    if len(digits) == 9:
        return 0, _SECOND
    if len(digits) == 6:  # torch logging pads whole milliseconds to 6 digits
        return int(digits[:3]) * 1000, _MILLI
    return _fraction(digits)


def _dated(ctx: ClockContext, month: int, day: int) -> tuple[int, int, int]:
    """A yearless month and day in ctx.year, or in the year before where that would be after ctx.not_after."""
    if ctx.not_after is not None:
        try:
            if date(ctx.year, month, day) > ctx.not_after:
                return ctx.year - 1, month, day
        except ValueError:  # Feb 29 of another year, or no date at all: _span says so
            pass
    return ctx.year, month, day


def _from_glog(m: re.Match[str], ctx: ClockContext) -> TimeSpan | None:
    month_day = int(m["md"])
    micro, resolution = _glog_fraction(m["frac"])
    return _span(_dated(ctx, month_day // 100, month_day % 100), m, micro, resolution, ctx.tz)


def _from_leveled(m: re.Match[str], ctx: ClockContext) -> TimeSpan | None:
    micro, resolution = _fraction(m["frac"])
    return _span(_dated(ctx, int(m["mo"]), int(m["d"])), m, micro, resolution, ctx.tz)


def _from_syslog(m: re.Match[str], ctx: ClockContext) -> TimeSpan | None:
    micro, resolution = _fraction(m["frac"])
    return _span(_dated(ctx, _MONTHS[m["mon"]], int(m["d"])), m, micro, resolution, ctx.tz)


def _from_ctime(m: re.Match[str], ctx: ClockContext) -> TimeSpan | None:
    return _span((int(m["Y"]), _MONTHS[m["mon"]], int(m["d"])), m, 0, _SECOND, ctx.tz)


# --- find_time ------------------------------------------------------------------------


@record
class _Format:
    starts: str  # the characters a stamp of this format can begin with
    pattern: re.Pattern[str]
    build: _Builder


_FORMATS = (
    _Format("12", _compile(_ISO), _from_iso),
    _Format("FEWIVC", _compile(_GLOG), _from_glog),
    _Format("DIWEC", _compile(_LEVELED), _from_leveled),
    _Format("JFMASOND", _compile(_SYSLOG), _from_syslog),
    _Format("MTWFS", _compile(_CTIME), _from_ctime),
)


class _Dispatched(Protocol):
    @property
    def starts(self) -> str: ...


_D = TypeVar("_D", bound=_Dispatched)


def _by_first_char(formats: tuple[_D, ...]) -> dict[str, tuple[_D, ...]]:
    """The formats to try for each first character, in table order."""
    chars = {char for fmt in formats for char in fmt.starts}
    return {char: tuple(fmt for fmt in formats if char in fmt.starts) for char in chars}


_BY_FIRST = _by_first_char(_FORMATS)
_RANK_PREFIX = _compile(r"\[rank\d+\]:\[?")


def _stamp_start(text: str) -> int:
    """Where a stamp may begin: after one `[`, or after c10's own `[rankN]:` (and its `[`)."""
    if text[:1] != "[":
        return 0
    if text.startswith("[rank"):
        m = _RANK_PREFIX.match(text)
        return m.end() if m else 1
    return 1


def find_time(text: str, ctx: ClockContext) -> TimeSpan | None:
    """The timestamp that heads a log line (after launcher prefixes were already stripped by the caller), or None."""
    pos = _stamp_start(text)
    for fmt in _BY_FIRST.get(text[pos : pos + 1], ()):
        m = fmt.pattern.match(text, pos)
        if m is not None:
            return fmt.build(m, ctx)
    return None


_TORCHRUN_RE = _compile(_TORCHRUN)


def parse_torchrun_time(value: str, ctx: ClockContext) -> TimeSpan | None:
    """The `time : 2025-07-09_17:05:39` value of torchrun's ChildFailedError table (local, 1 s)."""
    m = _TORCHRUN_RE.fullmatch(value.strip())
    return _from_torchrun(m, ctx) if m else None


_YEAR_HINT = _compile(
    rf"(?<!\d)(?P<Y>(?:19|20)\d\d)-(?P<mo>\d\d)-(?P<d>\d\d)[T _]\d\d:\d\d"
    rf"|(?:{_WEEKDAY}) (?:{_MON}) [ \d]\d \d\d:\d\d:\d\d (?P<Y2>(?:19|20)\d\d)(?!\d)"
)


def year_hint_from_text(text: str) -> int | None:
    """The year of the first full date-and-time anywhere in the line (ISO or ctime), or None."""
    for m in _YEAR_HINT.finditer(text):
        if m["Y2"]:
            return int(m["Y2"])
        if 1 <= int(m["mo"]) <= 12 and 1 <= int(m["d"]) <= 31:
            return int(m["Y"])
    return None


# --- kernel logs ----------------------------------------------------------------------


@record
class _KernelForm:
    starts: str
    pattern: re.Pattern[str]
    wall: _Builder | None  # None: the form carries only monotonic seconds
    order_only: bool = False  # a relative stamp: it orders the line after the one before, no time of its own


# `dmesg -H` / `--time-format reltime` (util-linux sys-utils/dmesg.c, print_reltime): the local minute
# `[Nov29 07:00] ` (strftime "%b%d %H:%M") on the first line of each minute, else the seconds since the line
# before, `[  +0.000316] `; `--time-format delta` prints `[<    0.000012>] `. The minute form is an
# interval of a whole minute (no year: ctx.year); the relative forms carry no time, only their order.
_RELTIME = rf"\[(?P<mon>{_MON})(?P<d>[ \d]?\d) (?P<H>\d\d):(?P<M>\d\d)\] ?"
_RELTIME_DELTA = r"\[ *\+ *\d{1,10}\.\d{1,9}\] ?|\[< *\d{1,10}\.\d{1,9}>\] ?"
_MINUTE = timedelta(minutes=1)


def _from_reltime(m: re.Match[str], ctx: ClockContext) -> TimeSpan | None:
    """`[Nov29 07:00]`: the whole local minute, in ctx.year."""
    day = _dated(ctx, _MONTHS[m["mon"]], int(m["d"]))
    hour, minute = int(m["H"]), int(m["M"])
    try:
        wall = datetime(*day, hour, minute, tzinfo=UTC)
        low, high = _offsets(ctx.tz, (*day, hour, minute))
        return TimeSpan(wall - high, wall - low + _MINUTE)
    except (ValueError, OverflowError):
        return None


_KERNEL_TAIL = rf"(?P<host>\S+) kernel: (?:{_MONO} ?)?"
_KERNEL_FORMS = (
    # raw dmesg, `dmesg -r` (after its `<6>`), journalctl short-monotonic
    _KernelForm("[", _compile(_MONO + r" ?(?:(?P<host>\S+) kernel: )?"), None),
    # dmesg -T, with or without the delta
    _KernelForm("[", _compile(r"\[" + _CTIME + r"(?: <[ \d.]+>)?\] ?"), _from_ctime),
    # dmesg --time-format iso, journalctl short-iso, rsyslog's RFC 3339 files
    _KernelForm(
        "12",
        _compile(_ISO + rf" ?(?:{_KERNEL_TAIL}|(?P<ihost>\S+) (?=[^\s\[\]]+\[\d+\]: ))?"),
        _from_iso,
    ),
    # journalctl short / short-precise, rsyslog kern.log (both clocks)
    _KernelForm(
        "JFMASOND",
        _compile(_SYSLOG + rf" (?:{_KERNEL_TAIL}|(?P<ihost>\S+) )"),
        _from_syslog,
    ),
    # dmesg -H / --time-format reltime: `[Nov29 07:00] ` and `[  +0.000316] `; --time-format delta
    _KernelForm("[", _compile(_RELTIME), _from_reltime),
    _KernelForm("[", _compile(_RELTIME_DELTA), None, order_only=True),
)
_KERNEL_BY_FIRST = _by_first_char(_KERNEL_FORMS)
# the `<6>` of `dmesg -r`, the `kern  :info  : ` of `dmesg -x`
_KERNEL_PREFIX = _compile(r"<\d{1,3}>|[a-z]{2,8} *:[a-z]{3,7} *: ")


def _kernel_start(text: str) -> int:
    """Where a kernel-log line's stamp may begin: after `dmesg -r`'s `<6>` or `dmesg -x`'s facility and level."""
    prefix = _KERNEL_PREFIX.match(text) if text[:1] == "<" or text[:1].islower() else None
    return prefix.end() if prefix else 0


_YEARLESS: frozenset[_Builder] = frozenset({_from_glog, _from_leveled, _from_syslog, _from_reltime})


def yearless_stamp(text: str, kernel: bool = False) -> str | None:
    """The stamp that heads this line (a message, or a kernel-log line) when it has no year of its own, so
    that its date took `ClockContext.year`; else None."""
    if kernel:
        pos = _kernel_start(text)
        forms = ((f.pattern, f.wall) for f in _KERNEL_BY_FIRST.get(text[pos : pos + 1], ()))
    else:
        pos = _stamp_start(text)
        forms = ((f.pattern, f.build) for f in _BY_FIRST.get(text[pos : pos + 1], ()))
    for pattern, build in forms:
        if m := pattern.match(text, pos):
            hosts = [m.start(g) for g in ("host", "ihost") if g in pattern.groupindex and m.start(g) >= 0]
            return text[pos : min(hosts, default=m.end())].strip(" []:") if build in _YEARLESS else None
    return None


def parse_kernel_line(text: str, ctx: ClockContext) -> KernelStamp | None:
    """The clocks of one kernel-log line, or None when it has no kernel stamp. Reads:

    - raw dmesg `[ 1234.567890] msg`, `dmesg -r` `<6>[ 1234.567890] msg`, `dmesg -x` `kern  :err   : [...] msg`;
    - `dmesg -T` `[Sun Nov 29 07:00:00 2026] msg` (%e pads the day: `[Sun Mar  1 ...]`), also with its delta;
    - `dmesg --time-format iso` `2026-11-29T07:00:00,123456+01:00 msg`;
    - journalctl short `Nov 29 07:00:00 host kernel: msg`, short-precise (`.123456`),
      short-iso `2026-08-18T19:05:24+0200 host kernel: msg`, short-monotonic `[ 1234.567890] host kernel: msg`;
    - rsyslog kern.log `Dec 23 23:28:17 host kernel: [  179.437927] msg` (both clocks filled);
    - `dmesg -H` / `--time-format reltime` `[Nov29 07:00] msg` (the whole minute, ctx.year) and
      `[  +0.000316] msg`, `--time-format delta` `[<    0.000012>] msg`: relative stamps, which give the
      line no time (it takes its neighbours') but are stripped from `rest`.

    Journal lines of other programs keep their `ident[pid]: ` in `rest`.
    """
    pos = _kernel_start(text)
    for form in _KERNEL_BY_FIRST.get(text[pos : pos + 1], ()):
        m = form.pattern.match(text, pos)
        if m is not None:
            return _kernel_stamp(form, m, text, ctx)
    return None


def _kernel_stamp(form: _KernelForm, m: re.Match[str], text: str, ctx: ClockContext) -> KernelStamp | None:
    groups = m.groupdict()
    if form.order_only:
        return KernelStamp(None, None, None, text[m.end() :])
    mono = float(groups["mono"]) if groups.get("mono") else None
    wall = form.wall(m, ctx) if form.wall else _boot_relative(mono, ctx.boot_time)
    if wall is None and mono is None:
        return None
    return KernelStamp(wall, mono, groups.get("host") or groups.get("ihost"), text[m.end() :])


def _boot_relative(seconds: float | None, boot_time: datetime | None) -> TimeSpan | None:
    if seconds is None or boot_time is None:
        return None
    try:
        return wall_from_monotonic(seconds, boot_time)
    except OverflowError:
        return None


def wall_from_monotonic(seconds: float, boot_time: datetime) -> TimeSpan:
    """Kernel monotonic seconds (µs resolution) on the wall clock; ignores time spent suspended."""
    return TimeSpan.point(boot_time.astimezone(UTC) + timedelta(seconds=seconds), _MICRO)


# --- boot time ------------------------------------------------------------------------

_EPOCH = _compile(r"@?[+-]?\d+(?:\.\d+)?")
_BOOT_ISO = _compile(_ISO)


def parse_boot_time(value: str, tz: tzinfo) -> datetime:
    """For the --boot-time option: ISO 8601 (with or without zone; naive = tz), `YYYY-MM-DD HH:MM:SS`,
    or a Unix epoch number (`@` allowed). Raises ValueError with a clear message otherwise."""
    text = value.strip()
    if _EPOCH.fullmatch(text):
        return _from_epoch(text.removeprefix("@"), value)
    m = _BOOT_ISO.fullmatch(text)
    span = _from_iso(m, ClockContext(tz, 1970)) if m else None
    if span is None:
        raise ValueError(
            f"invalid boot time {value!r}: expected ISO 8601 (2026-11-29T07:00:00+01:00), "
            "'YYYY-MM-DD HH:MM:SS' in local time, or seconds since the Unix epoch"
        )
    return span.earliest


def _from_epoch(number: str, value: str) -> datetime:
    try:
        return datetime.fromtimestamp(float(number), UTC)
    except (OverflowError, OSError, ValueError) as error:
        raise ValueError(f"invalid boot time {value!r}: epoch seconds out of range") from error


def live_boot_time() -> datetime | None:
    """This host's boot time from /proc/stat btime (None if unreadable)."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            for line in stat:
                if line.startswith("btime "):
                    return datetime.fromtimestamp(int(line.split()[1]), UTC)
    except (OSError, ValueError, IndexError, OverflowError):
        return None
    return None


def live_uptime() -> float | None:
    """Seconds since boot from /proc/uptime (None if unreadable)."""
    try:
        with open("/proc/uptime", encoding="ascii") as uptime:
            return float(uptime.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
