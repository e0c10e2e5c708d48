"""`diagnose`: read the logs, name the first death, render it; and the helpers other commands share.

Typer-free, so that the quick parser (`cli.quick`) can run a diagnosis without importing typer or click:
a bad value raises `OptionError`, which the CLI's one exit path turns into a line and a hint. Imports
the pipeline, rich and the renderers inside its functions, only when they are used.
"""

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING

from rankautopsy.cli import MIN_WIDTH, PROG, STDIN, Exit, _state, verdict_exit
from rankautopsy.errors import InputError, OptionError, UsageError
from rankautopsy.render import Format

if TYPE_CHECKING:
    from datetime import datetime, tzinfo
    from pathlib import Path

    from rankautopsy.model import Diagnosis
    from rankautopsy.sources.read import Spool


def run(
    *,
    paths: Sequence[str],
    dmesg: Sequence[str] = (),
    rules: Sequence[str] = (),
    output_format: Format = Format.TERMINAL,
    output: str | None = None,
    boot_time: str | None = None,
    clock_skew: float = 2.0,
    tz: str | None = None,
    exit_zero: bool = False,
    color: bool | None = None,
    width: int | None = None,
    checklist: bool = False,
    verbose: bool = False,
    debug: bool = False,
    quiet: bool = False,
    follow: bool = False,
) -> int:
    """The whole `diagnose` command once its options are parsed; returns the exit status."""
    from datetime import timedelta
    from pathlib import Path

    from rankautopsy.pipeline import Options, diagnose
    from rankautopsy.rulepacks.sources import user_rule_paths

    _state["debug"] = debug
    zone = zone_of(tz)
    boot = boot_of(boot_time, zone)
    stdin = read_stdin([*paths, *dmesg], quiet)
    with progress(quiet) as display:
        result = diagnose(
            Options(
                paths=list(paths),
                dmesg=list(dmesg),
                rules=[str(p) for p in user_rule_paths(list(rules), Path.cwd())],
                boot_time=boot,
                tz=zone,
                skew=timedelta(seconds=clock_skew),
                stdin=stdin,
                follow=follow,
                planned=display.planned if display else None,
                progress=display.advance if display else None,
            )
        )

    def terminal() -> None:  # rich is imported only when the terminal report is drawn
        from rankautopsy.render.terminal import make_console, render_terminal

        colour = use_color(color, sys.stdout)
        console = make_console(sys.stdout, width, colour)
        console.no_color = not colour  # rich reads NO_COLOR itself, but --color wins over it
        render_terminal(result, console, checklist=checklist, verbose=verbose)

    emit(result, output_format, output, terminal)
    return Exit.NO_DEATH if exit_zero else verdict_exit(result.verdict)


def use_color(flag: bool | None, stream: IO[str]) -> bool:
    """--color/--no-color, else NO_COLOR (any value), else FORCE_COLOR (any value), else a terminal."""
    if flag is not None:
        return flag
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty()


def read_stdin(args: list[str], quiet: bool) -> "Spool | None":
    from rankautopsy.sources.read import MAX_INPUT, spool

    if args.count(STDIN) > 1:
        raise OptionError("'-' (standard input) can be given only once, as a path or as --dmesg")
    if STDIN not in args:
        return None
    if sys.stdin.isatty() and not quiet:
        sys.stderr.write(f"{PROG}: reading from stdin (Ctrl-D to end)...\n")
        sys.stderr.flush()
    try:
        return spool(sys.stdin.buffer, MAX_INPUT)  # on disk as it comes: a pipe of gigabytes is not held in memory
    except OSError as exc:  # a full or unwritable $TMPDIR, a closed stdin
        raise InputError(f"cannot read standard input: {exc.strerror or exc}", path="-") from None


class _Display:
    """Files and bytes read of the total, the rate and the time left, on stderr (a rich.progress)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeRemainingColumn,
            TransferSpeedColumn,
        )

        self.bar = Progress(
            SpinnerColumn(),
            TextColumn("reading the logs"),
            BarColumn(),
            TextColumn("{task.fields[files]}"),
            DownloadColumn(binary_units=True),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self.task = self.bar.add_task("", total=None, files="")
        self.total = self.done = 0

    def planned(self, sizes: Sequence[int]) -> None:
        self.total = len(sizes)
        self.bar.update(self.task, total=sum(sizes), files=f"0/{self.total} files")

    def advance(self, size: int) -> None:
        self.done += 1
        self.bar.update(self.task, advance=size, files=f"{self.done}/{self.total} files")


@contextmanager
def progress(quiet: bool, delay: float = 0.5) -> Iterator[_Display | None]:
    """A progress display on stderr once a scan takes more than a moment, cleared when it ends or is
    interrupted; never when stderr is not a terminal."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    import threading

    display = _Display()
    timer = threading.Timer(delay, display.bar.start)
    timer.start()
    try:
        yield display
    finally:
        timer.cancel()
        timer.join()
        display.bar.stop()


def emit(result: "Diagnosis", fmt: Format, output: str | None, terminal: Callable[[], None]) -> None:
    """The chosen format to stdout, or to --output (written only now that the diagnosis succeeded)
    with the terminal report on stdout; `--format github` also appends the Markdown summary to
    $GITHUB_STEP_SUMMARY when it is set."""
    from pathlib import Path

    from rankautopsy.render import render_text

    text = None if fmt is Format.TERMINAL else render_text(result, fmt)  # its line end written apart: not
    if output is not None:  # a copy of a report of tens of MB
        _write(Path(output), text if text is not None else _plain_report(result), "\n" if text is not None else "")
        terminal()
    elif text is not None:
        sys.stdout.write(text)
        sys.stdout.write("\n")
    else:
        terminal()
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if fmt is Format.GITHUB and summary:
        with _opened(Path(summary), "a") as handle:
            handle.write(render_text(result, Format.MARKDOWN) + "\n")


def _plain_report(result: "Diagnosis") -> str:
    import io

    from rankautopsy.render.terminal import make_console, render_terminal

    buffer = io.StringIO()
    render_terminal(result, make_console(buffer, 100, False))
    return buffer.getvalue()


def _write(path: "Path", text: str, end: str = "") -> None:
    with _opened(path, "w") as handle:
        handle.write(text)
        handle.write(end)


def _opened(path: "Path", mode: str) -> IO[str]:
    try:
        return path.open(mode, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write: {exc.strerror or exc}", path=str(path)) from exc


def zone_of(name: str | None) -> "tzinfo":
    """--tz: a named zone, or the local one."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from rankautopsy.sources.clocks import local_zone

    if name is None:
        return local_zone()
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise OptionError(f"unknown time zone {name!r}", "--tz") from None


def boot_of(value: str | None, zone: "tzinfo") -> "datetime | None":
    """--boot-time, read in `zone` when it names none."""
    from rankautopsy.sources.clocks import parse_boot_time

    if value is None:
        return None
    try:
        return parse_boot_time(value, zone)
    except ValueError as exc:
        raise OptionError(str(exc), "--boot-time") from None


def check_width(value: int | None) -> int | None:
    if value is not None and value < MIN_WIDTH:
        raise OptionError(f"{value} columns is too narrow; give {MIN_WIDTH} or more", "--width")
    return value


def check_skew(value: float) -> float:
    if not value >= 0:  # NaN too
        raise OptionError("give zero or more seconds", "--clock-skew")
    if value > MAX_SKEW:  # inf too: a timedelta holds neither
        raise OptionError(f"give at most {MAX_SKEW:.0f} seconds", "--clock-skew")
    return value


MAX_SKEW = 1e9  # 31 years: more than any clock is off, less than a timedelta's limit
