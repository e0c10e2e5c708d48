"""`rankautopsy watch`: follow a running job's logs and print the verdict as soon as it settles.

Quiet until then, apart from a status line when stderr is a terminal. SIGINT and SIGTERM end it
cleanly, as they end every command: the status line cleared, then the process dies of the signal.
"""

import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rankautopsy.render import Format

if TYPE_CHECKING:
    from rankautopsy.live import Watcher
    from rankautopsy.model import Diagnosis


def _positive(value: float) -> float:
    if value <= 0:
        raise typer.BadParameter("give a number of seconds above zero")
    return value


def _not_negative(value: float) -> float:
    if value < 0:
        raise typer.BadParameter("give zero or more seconds")
    return value


def watch_command(
    paths: Annotated[
        list[str],
        typer.Argument(
            metavar="PATH...", help="Log files or directories to follow (may not exist yet).", show_default=False
        ),
    ],
    dmesg: Annotated[
        list[str] | None,
        typer.Option("--dmesg", metavar="FILE", help="A kernel log to follow, or '-' for stdin (`dmesg -w`)."),
    ] = None,
    rules: Annotated[
        list[str] | None,
        typer.Option("--rules", metavar="PATH", help="An extra rule pack file or directory (repeatable)."),
    ] = None,
    output_format: Annotated[Format, typer.Option("--format", "-f", metavar="FORMAT", help="Output format.")] = (
        Format.TERMINAL
    ),
    output: Annotated[
        str | None, typer.Option("--output", "-o", metavar="FILE", help="Write the chosen format to this file.")
    ] = None,
    on_first_death: Annotated[
        str | None,
        typer.Option("--on-first-death", metavar="CMD", help="Run CMD (by the shell) with the JSON verdict on stdin."),
    ] = None,
    exit_status: Annotated[
        bool, typer.Option("--exit", help="End with diagnose's exit status (1 a death, 3 undetermined), not 0.")
    ] = False,
    settle: Annotated[
        float,
        typer.Option(metavar="SECONDS", callback=_not_negative, help="How long a verdict must hold, the logs quiet."),
    ] = 2.0,
    patience: Annotated[
        float,
        typer.Option(
            metavar="SECONDS", callback=_not_negative, help="Report a verdict that held this long even while logs grow."
        ),
    ] = 30.0,
    quiet_period: Annotated[
        float, typer.Option(metavar="SECONDS", callback=_not_negative, help="How long a hang culprit must stay quiet.")
    ] = 60.0,
    interval: Annotated[
        float, typer.Option(metavar="SECONDS", callback=_positive, help="Seconds between two looks at the logs.")
    ] = 0.5,
    tz: Annotated[str | None, typer.Option("--tz", metavar="ZONE", help="Time zone of stamps without one.")] = None,
    boot_time: Annotated[
        str | None, typer.Option(metavar="TIME", help="Boot time of the host whose raw dmesg is given.")
    ] = None,
    clock_skew: Annotated[
        float, typer.Option(metavar="SECONDS", callback=_not_negative, help="Clock skew to tolerate between sources.")
    ] = 2.0,
    color: Annotated[bool | None, typer.Option("--color/--no-color", help="Force colour on or off.")] = None,
    width: Annotated[int | None, typer.Option(metavar="COLUMNS", help="Width of the report.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No status line on stderr.")] = False,
) -> None:
    """Follow a running job's logs; print the first death (or hang culprit) seconds after it happens."""
    from datetime import timedelta

    from rankautopsy.cli import Exit, raise_if_stopped, verdict_exit
    from rankautopsy.cli.diagnose import boot_of, emit, use_color, zone_of
    from rankautopsy.live import Watcher, WatchOptions
    from rankautopsy.pipeline import Options
    from rankautopsy.render.terminal import make_console, render_terminal
    from rankautopsy.rulepacks.sources import user_rule_paths

    if (dmesg or []).count("-") > 1 or "-" in paths:
        raise typer.BadParameter("'-' (standard input) can be followed only as --dmesg -, once")
    zone = zone_of(tz)
    options = Options(
        paths=paths,
        dmesg=dmesg or (),
        rules=[str(p) for p in user_rule_paths(rules or [], Path.cwd())],
        boot_time=boot_of(boot_time, zone),
        tz=zone,
        skew=timedelta(seconds=clock_skew),
    )
    watcher = Watcher(WatchOptions(diagnose=options, settle=settle, patience=patience, quiet_period=quiet_period))
    lines = _stdin_lines() if "-" in (dmesg or []) else None
    status = _StatusLine(enabled=not quiet and sys.stderr.isatty())
    try:  # SIGINT and SIGTERM unwind from here (the CLI's one exit path), the status line cleared
        report = None
        while report is None:
            raise_if_stopped()
            while lines is not None and not lines.empty():
                watcher.push_stdin(lines.get_nowait())
            report = watcher.poll(time.monotonic())
            if report is None:
                status.show(watcher)
                time.sleep(interval)
    finally:
        status.clear()
    result = report.diagnosis
    colour = use_color(color, sys.stdout)
    console = make_console(sys.stdout, width, colour)
    emit(result, output_format, output, lambda: render_terminal(result, console))
    sys.stdout.flush()
    code = verdict_exit(result.verdict)
    if on_first_death and code is Exit.DEATH:
        _run_hook(on_first_death, result)
    raise typer.Exit(int(code) if exit_status else 0)


def _stdin_lines() -> queue.Queue[bytes]:
    """Complete lines of stdin, read by a thread (a pipe from `dmesg -w` never ends)."""
    lines: queue.Queue[bytes] = queue.Queue()

    def pump() -> None:
        for line in iter(sys.stdin.buffer.readline, b""):
            if line.endswith(b"\n"):
                lines.put(line)

    threading.Thread(target=pump, name="rankautopsy-stdin", daemon=True).start()
    return lines


def _run_hook(command: str, result: "Diagnosis") -> None:
    from rankautopsy.render import render_text

    verdict = render_text(result, Format.JSON)
    try:
        done = subprocess.run(command, shell=True, input=verdict.encode("utf-8"), timeout=300, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        sys.stderr.write(f"rankautopsy watch: --on-first-death failed: {exc}\n")
        return
    if done.returncode != 0:
        sys.stderr.write(f"rankautopsy watch: --on-first-death exited with status {done.returncode}\n")


class _StatusLine:
    """One line on a terminal's stderr, rewritten at most once a second, cleared before the report."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.shown = 0.0
        self.width = 0

    def show(self, watcher: "Watcher") -> None:
        now = time.monotonic()
        if not self.enabled or now - self.shown < 1.0:
            return
        self.shown = now
        s = watcher.status
        from rankautopsy.sources.sanitize import clean_name

        text = clean_name(f"rankautopsy watch: {s.streams} stream(s), {s.lines} line(s); {s.verdict}")
        columns = max(20, os.get_terminal_size(2).columns - 1) if sys.stderr.isatty() else 80
        text = text[:columns]
        sys.stderr.write("\r" + text + " " * max(0, self.width - len(text)))
        sys.stderr.flush()
        self.width = len(text)

    def clear(self) -> None:
        if self.enabled and self.width:
            sys.stderr.write("\r" + " " * self.width + "\r")
            sys.stderr.flush()
