"""The command line: parse options, run the pipeline, render, and turn every failure into one line.

The only package that may import typer; it may import everything else. Nothing imports it.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import threading
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta, tzinfo
from enum import IntEnum
from pathlib import Path
from typing import IO, Annotated, NoReturn
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import typer
from rich.console import Console
from rich.status import Status

from rankautopsy.cli.explain import explain_command
from rankautopsy.cli.rules import rules_app
from rankautopsy.errors import RankautopsyError, UsageError
from rankautopsy.model import Diagnosis, Outcome
from rankautopsy.pipeline import DEFAULT_SKEW, Options, diagnose
from rankautopsy.render import Format, render_text
from rankautopsy.render.terminal import make_console, render_terminal
from rankautopsy.rulepacks.sources import user_rule_paths
from rankautopsy.sources.clocks import local_zone, parse_boot_time


class Exit(IntEnum):
    NO_DEATH = 0  # clean, or no failure seen
    DEATH = 1  # a first death or hang culprit is named
    ERROR = 2  # bad usage or unreadable input
    UNDETERMINED = 3  # the job failed, but the first death cannot be named from these logs


_OUTCOME_EXIT = {
    Outcome.CLEAN: Exit.NO_DEATH,
    Outcome.NO_FAILURE: Exit.NO_DEATH,
    Outcome.FIRST_DEATH: Exit.DEATH,
    Outcome.HANG: Exit.DEATH,
    Outcome.UNDETERMINED: Exit.UNDETERMINED,
}


app = typer.Typer(
    name="rankautopsy",
    help="Name the rank that died first in a distributed training job, when, and why.",
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    no_args_is_help=True,
)
app.add_typer(rules_app, name="rules")
app.command("explain")(explain_command)
_state = {"debug": False}


@app.callback()
def _root() -> None:
    """rankautopsy: post-mortem triage for multi-rank training jobs."""


@app.command("diagnose")
def diagnose_command(
    paths: Annotated[list[str], typer.Argument(help="Log files or directories ('-' for stdin).", show_default=False)],
    dmesg: Annotated[
        list[str] | None, typer.Option("--dmesg", help="A kernel log file, or '-' for stdin (repeatable).")
    ] = None,
    rules: Annotated[list[str] | None, typer.Option("--rules", help="An extra rule pack file or directory.")] = None,
    output_format: Annotated[Format, typer.Option("--format", "-f", help="Output format.")] = Format.TERMINAL,
    output: Annotated[
        str | None,
        typer.Option(
            "--output", "-o", help="Write the chosen format to this file; the terminal report goes to stdout."
        ),
    ] = None,
    boot_time: Annotated[
        str | None, typer.Option(help="Boot time of the host whose raw dmesg is given (ISO 8601 or epoch).")
    ] = None,
    clock_skew: Annotated[
        float, typer.Option(help="Seconds of clock skew to tolerate between sources.")
    ] = DEFAULT_SKEW.total_seconds(),
    tz: Annotated[
        str | None, typer.Option("--tz", help="Time zone of log stamps without one (default: local).")
    ] = None,
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when a first death is found or undetermined (1, 3).")
    ] = False,
    color: Annotated[bool | None, typer.Option("--color/--no-color", help="Force colour on or off.")] = None,
    width: Annotated[int | None, typer.Option(help="Terminal width for the report.")] = None,
    checklist: Annotated[
        bool, typer.Option("--checklist", help="The full remediation checklist (timeouts, detection) too.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Reasoning, ruled-out ranks and every evidence line too.")
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display on stderr.")] = False,
) -> None:
    """Diagnose the logs of a crashed or hung job: which rank died first, when, why, and what to do."""
    _state["debug"] = debug
    zone = _zone(tz)
    stdin = sys.stdin.buffer.read() if "-" in [*paths, *(dmesg or [])] else None
    options = Options(
        paths=paths,
        dmesg=dmesg or (),
        rules=[str(p) for p in user_rule_paths(rules or [], Path.cwd())],
        boot_time=_boot(boot_time, zone),
        tz=zone,
        skew=timedelta(seconds=_non_negative(clock_skew)),
        stdin=stdin,
    )
    with _progress(quiet):
        result = diagnose(options)
    use_color = sys.stdout.isatty() if color is None else color
    console = make_console(sys.stdout, width, use_color)
    _emit(result, output_format, output, lambda: render_terminal(result, console, checklist=checklist, verbose=verbose))
    status = _OUTCOME_EXIT[result.verdict.outcome]
    raise typer.Exit(Exit.NO_DEATH if exit_zero else status)


@contextlib.contextmanager
def _progress(quiet: bool, delay: float = 0.5) -> Iterator[None]:
    """A spinner on stderr once a scan takes more than a moment; never when stderr is not a terminal."""
    if quiet or not sys.stderr.isatty():
        yield
        return
    status = Status("rankautopsy: reading the logs...", console=Console(stderr=True))
    timer = threading.Timer(delay, status.start)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        status.stop()


def _emit(result: Diagnosis, fmt: Format, output: str | None, terminal: Callable[[], None]) -> None:
    """The chosen format to stdout, or to --output (written only now that the diagnosis succeeded)
    with the terminal report on stdout; `--format github` also appends the Markdown summary to
    $GITHUB_STEP_SUMMARY when it is set."""
    text = None if fmt is Format.TERMINAL else render_text(result, fmt) + "\n"
    if output is not None:
        _write(Path(output), text if text is not None else _plain_report(result))
        terminal()
    elif text is not None:
        sys.stdout.write(text)
    else:
        terminal()
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if fmt is Format.GITHUB and summary:
        with _opened(Path(summary), "a") as handle:
            handle.write(render_text(result, Format.MARKDOWN) + "\n")


def _plain_report(result: Diagnosis) -> str:
    buffer = io.StringIO()
    render_terminal(result, make_console(buffer, 100, False))
    return buffer.getvalue()


def _write(path: Path, text: str) -> None:
    with _opened(path, "w") as handle:
        handle.write(text)


def _opened(path: Path, mode: str) -> IO[str]:
    try:
        return path.open(mode, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write: {exc.strerror or exc}", path=str(path)) from exc


def _zone(name: str | None) -> tzinfo:
    if name is None:
        return local_zone()
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise UsageError(f"unknown time zone {name!r}") from exc


def _boot(value: str | None, zone: tzinfo) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_boot_time(value, zone)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _non_negative(seconds: float) -> float:
    if seconds < 0:
        raise UsageError("--clock-skew must be zero or more seconds")
    return seconds


def _fail(message: str) -> NoReturn:
    sys.stderr.write(f"rankautopsy: error: {message}\n")
    raise SystemExit(Exit.ERROR)


def main() -> None:
    try:
        code = app(standalone_mode=False)
    except RankautopsyError as exc:
        for line in str(exc).splitlines() or [exc.message]:
            sys.stderr.write(f"rankautopsy: error: {line}\n")
        raise SystemExit(Exit.ERROR) from None
    except typer.Abort:
        _fail("interrupted")
    except typer.exceptions.TyperException as exc:  # usage errors: bad option, missing argument...
        _fail(exc.format_message().replace("\n", " "))
    except KeyboardInterrupt:
        _fail("interrupted")
    except BrokenPipeError:
        raise SystemExit(Exit.ERROR) from None
    except Exception as exc:  # the one place that turns a bug into one line
        if _state["debug"]:
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)")
    raise SystemExit(code if isinstance(code, int) else 0)
