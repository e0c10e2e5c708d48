"""The command line: parse options, run the pipeline, render, and turn every failure into one line.

The only package that may import typer; it may import everything else. Nothing imports it.
Commands import the pipeline, rich and the renderers inside their functions, so that `--help`,
`--version` and shell completion stay fast. A command module registers itself with a line below.
"""

import os
import re
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from enum import IntEnum
from types import FrameType
from typing import IO, TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from typer.core import TyperArgument

from rankautopsy import __version__
from rankautopsy.cli.drill import drill_command
from rankautopsy.cli.explain import explain_command
from rankautopsy.cli.rules import rules_app
from rankautopsy.cli.scan import scan_command
from rankautopsy.cli.watch import watch_command
from rankautopsy.errors import InputError, RankautopsyError, UsageError
from rankautopsy.render import Format

if TYPE_CHECKING:
    from datetime import datetime, tzinfo
    from pathlib import Path

    from rankautopsy.model import Diagnosis
    from rankautopsy.sources.read import Spool

PROG = "rankautopsy"
STDIN = "-"
MIN_WIDTH = 40


class Exit(IntEnum):
    NO_DEATH = 0  # clean, or no failure seen
    DEATH = 1  # a first death or hang culprit is named
    ERROR = 2  # bad usage or unreadable input
    UNDETERMINED = 3  # the job failed, but the first death cannot be named from these logs


app = typer.Typer(
    name=PROG,
    help="Name the rank that died first in a distributed training job, when, and why.",
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    no_args_is_help=True,
)
_state: dict[str, Any] = {"debug": False, "command": PROG}


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"{PROG} {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    ctx: typer.Context,
    version: Annotated[
        bool,
        typer.Option("--version", "-V", is_eager=True, callback=_print_version, help="Print the version and exit."),
    ] = False,
) -> None:
    """rankautopsy: post-mortem triage for multi-rank training jobs."""
    if ctx.invoked_subcommand:
        _state["command"] = f"{PROG} {ctx.invoked_subcommand}"
    _adopt(ctx.command)


class _Argument(TyperArgument):
    """An argument shown by its metavariable alone (`PATH...`, `[PACK...]`), not by its Python type."""

    def get_usage_pieces(self, ctx: typer.Context) -> list[str]:  # type: ignore[override]
        name = self.metavar or str(self.name).upper()
        return [name if self.required or name.startswith("[") else f"[{name}]"]


def _adopt(command: object) -> None:
    """Every command's arguments as `_Argument`s (the root callback runs before any subcommand parses)."""
    for param in getattr(command, "params", []):
        if type(param) is TyperArgument:
            param.__class__ = _Argument
    for sub in getattr(command, "commands", {}).values():
        _adopt(sub)


def _formats() -> str:
    return "Output format: " + ", ".join(f.value for f in Format) + "."


def _width(value: int | None) -> int | None:
    if value is not None and value < MIN_WIDTH:
        raise typer.BadParameter(f"{value} columns is too narrow; give {MIN_WIDTH} or more")
    return value


def _skew(value: float) -> float:
    if value < 0:
        raise typer.BadParameter("give zero or more seconds")
    return value


@app.command("diagnose")
def diagnose_command(
    ctx: typer.Context,
    paths: Annotated[
        list[str],
        typer.Argument(metavar="PATH...", help="Log files or directories ('-' for stdin).", show_default=False),
    ],
    dmesg: Annotated[
        list[str] | None,
        typer.Option(
            "--dmesg",
            metavar="[HOST=]FILE",
            help="A kernel log file, or '-' for stdin; HOST= names the node it is from (repeatable).",
        ),
    ] = None,
    rules: Annotated[
        list[str] | None,
        typer.Option("--rules", metavar="PATH", help="An extra rule pack file or directory (repeatable)."),
    ] = None,
    output_format: Annotated[Format, typer.Option("--format", "-f", metavar="FORMAT", help=_formats())] = (
        Format.TERMINAL
    ),
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write the chosen format to this file; the terminal report goes to stdout.",
        ),
    ] = None,
    boot_time: Annotated[
        str | None,
        typer.Option(metavar="TIME", help="Boot time of the host whose raw dmesg is given (ISO 8601 or epoch)."),
    ] = None,
    clock_skew: Annotated[
        float,
        typer.Option(metavar="SECONDS", callback=_skew, help="Seconds of clock skew to tolerate between sources."),
    ] = 2.0,
    tz: Annotated[
        str | None,
        typer.Option("--tz", metavar="ZONE", help="Time zone of log stamps without one (default: local)."),
    ] = None,
    exit_zero: Annotated[
        bool, typer.Option("--exit-zero", help="Exit 0 even when a first death is found or undetermined (1, 3).")
    ] = False,
    color: Annotated[
        bool | None,
        typer.Option("--color/--no-color", help="Force colour on or off (default: NO_COLOR, FORCE_COLOR, a TTY)."),
    ] = None,
    width: Annotated[
        int | None,
        typer.Option(metavar="COLUMNS", callback=_width, help=f"Width of the report ({MIN_WIDTH} or more)."),
    ] = None,
    checklist: Annotated[
        bool, typer.Option("--checklist", help="The full remediation checklist (timeouts, detection) too.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Reasoning, ruled-out ranks and every evidence line too.")
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress display or hints on stderr.")] = False,
    follow: Annotated[
        bool, typer.Option("--follow", "-L", help="Follow symlinks that lead out of the given paths (as ripgrep -L).")
    ] = False,
) -> None:
    """Diagnose the logs of a crashed or hung job: which rank died first, when, why, and what to do."""
    from datetime import timedelta
    from pathlib import Path

    from rankautopsy.model import Outcome
    from rankautopsy.pipeline import Options, diagnose
    from rankautopsy.rulepacks.sources import user_rule_paths

    _state["debug"] = debug
    zone = _zone(tz)
    stdin = _read_stdin([*paths, *(dmesg or [])], quiet)
    with _progress(quiet) as display:
        result = diagnose(
            Options(
                paths=paths,
                dmesg=dmesg or (),
                rules=[str(p) for p in user_rule_paths(rules or [], Path.cwd())],
                boot_time=_boot(boot_time, zone),
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

    _emit(result, output_format, output, terminal)
    exits = {Outcome.FIRST_DEATH: Exit.DEATH, Outcome.HANG: Exit.DEATH, Outcome.UNDETERMINED: Exit.UNDETERMINED}
    raise typer.Exit(Exit.NO_DEATH if exit_zero else exits.get(result.verdict.outcome, Exit.NO_DEATH))


# Listed in `--help` in this order: the main command first, then what runs on nodes and during a run.
app.command("scan")(scan_command)
app.command("watch")(watch_command)
app.command("explain")(explain_command)
app.command("drill")(drill_command)
app.add_typer(rules_app, name="rules")


def use_color(flag: bool | None, stream: IO[str]) -> bool:
    """--color/--no-color, else NO_COLOR (any value), else FORCE_COLOR (any value), else a terminal."""
    if flag is not None:
        return flag
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty()


def _read_stdin(args: list[str], quiet: bool) -> "Spool | None":
    from rankautopsy.sources.read import MAX_INPUT, spool

    if args.count(STDIN) > 1:
        raise typer.BadParameter("'-' (standard input) can be given only once, as a path or as --dmesg")
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
def _progress(quiet: bool, delay: float = 0.5) -> Iterator[_Display | None]:
    """A progress display on stderr once a scan takes more than a moment, cleared when it ends or is
    interrupted; never when stderr is not a terminal."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    display = _Display()
    timer = threading.Timer(delay, display.bar.start)
    timer.start()
    try:
        yield display
    finally:
        timer.cancel()
        timer.join()
        display.bar.stop()


def _emit(result: "Diagnosis", fmt: Format, output: str | None, terminal: Callable[[], None]) -> None:
    """The chosen format to stdout, or to --output (written only now that the diagnosis succeeded)
    with the terminal report on stdout; `--format github` also appends the Markdown summary to
    $GITHUB_STEP_SUMMARY when it is set."""
    from pathlib import Path

    from rankautopsy.render import render_text

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


def _plain_report(result: "Diagnosis") -> str:
    import io

    from rankautopsy.render.terminal import make_console, render_terminal

    buffer = io.StringIO()
    render_terminal(result, make_console(buffer, 100, False))
    return buffer.getvalue()


def _write(path: "Path", text: str) -> None:
    with _opened(path, "w") as handle:
        handle.write(text)


def _opened(path: "Path", mode: str) -> IO[str]:
    try:
        return path.open(mode, encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot write: {exc.strerror or exc}", path=str(path)) from exc


def _zone(name: str | None) -> "tzinfo":
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    from rankautopsy.sources.clocks import local_zone

    if name is None:
        return local_zone()
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise typer.BadParameter(f"unknown time zone {name!r}", param_hint="--tz") from None


def _boot(value: str | None, zone: "tzinfo") -> "datetime | None":
    from rankautopsy.sources.clocks import parse_boot_time

    if value is None:
        return None
    try:
        return parse_boot_time(value, zone)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--boot-time") from None


# ---- one exit path: statuses, one-line errors, signals ----


class _Stopped(BaseException):
    """SIGINT, SIGTERM or SIGHUP: unwind (workers, progress display, temp files), then die of it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame: FrameType | None) -> None:
    raise _Stopped(signum)


_STOPS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


@contextmanager
def _signals() -> Iterator[None]:
    """Stops raise `_Stopped`; a closed stdout (`| head`) ends the process quietly, as it ends `cat`."""
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        yield
        return
    previous = {signum: signal.signal(signum, _stop) for signum in _STOPS}
    if hasattr(signal, "SIGPIPE"):
        previous[signal.SIGPIPE] = signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _die_of(signum: int) -> NoReturn:
    """End as the signal would have ended us, so that a shell sees 128+N and stops its script."""
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    raise SystemExit(128 + signum)  # where the signal does not end the process


def _fail(message: str, hint: str | None = None) -> NoReturn:
    sys.stderr.write(f"{PROG}: error: {message}\n" + (f"{hint}\n" if hint else ""))
    raise SystemExit(Exit.ERROR)


def main() -> None:
    try:
        with _signals():
            code = _run(sys.argv[1:])
            sys.stdout.flush()  # here, where a closed pipe still ends the process quietly
    except _Stopped as stop:
        _die_of(stop.signum)
    raise SystemExit(code)


def _run(args: list[str]) -> int:
    try:
        code = app(args=args, prog_name=PROG, standalone_mode=False)
    except RankautopsyError as exc:
        for line in str(exc).splitlines() or [exc.message]:
            sys.stderr.write(f"{PROG}: error: {line}\n")
        return Exit.ERROR
    except typer.TyperException as exc:  # typer's own click: matched by name, its module is private
        kinds = {kind.__name__ for kind in type(exc).__mro__}
        if "NoArgsIsHelpError" in kinds:  # a bare `rankautopsy`: its help, as usage (clap's way: ruff, rg)
            ctx = getattr(exc, "ctx", None)
            sys.stderr.write(ctx.get_help() + "\n" if ctx is not None else "")
            return Exit.ERROR
        if "UsageError" in kinds:
            _fail(usage_message(exc), f"Try '{_command_path(exc)} --help' for help.")
        _fail(_sentence(exc.format_message()))
    except typer.Abort:
        raise _Stopped(signal.SIGINT) from None
    except Exception as exc:  # the one place that turns a bug into one line
        if _state["debug"]:
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)")
    return code if isinstance(code, int) else 0


def _command_path(exc: Exception) -> str:
    ctx = getattr(exc, "ctx", None)
    return str(ctx.command_path) if ctx is not None else _state["command"]


_CHOICE = re.compile(r"(?:Value error, )?(.+?) is not one of (.+?)\.?")
_NOT_A = re.compile(r"(.+?) is not a valid (int|integer|float|number)\.?")
_NOUNS = {"int": "a whole number", "integer": "a whole number", "float": "a number", "number": "a number"}


def usage_message(exc: typer.TyperException) -> str:
    """A usage error in the tool's own words: click's phrasing never reaches a user."""
    kind = type(exc).__name__
    param = getattr(exc, "param", None)
    name = _param_name(param) if param is not None else None
    if kind == "NoSuchOption":
        option = str(getattr(exc, "option_name", ""))
        import difflib  # only for a mistyped option: ~9 ms of every start otherwise

        guess = difflib.get_close_matches(option, getattr(exc, "possibilities", None) or [], n=1)
        return f"unknown option {option}" + (f" (did you mean {guess[0]}?)" if guess else "")
    if kind == "MissingParameter" and name is not None:
        return f"missing {name}"
    if kind == "BadOptionUsage" and "requires an argument" in exc.message:
        return f"{getattr(exc, 'option_name', 'an option')} needs a value"
    if kind == "BadParameter":
        hint = getattr(exc, "param_hint", None)
        where = name or (hint if isinstance(hint, str) else None)
        return f"{where}: {_bad_value(exc)}" if where else _bad_value(exc)
    return _sentence(exc.message)


def _param_name(param: object) -> str:
    opts = [o for o in getattr(param, "opts", []) if o.startswith("-")]
    return max(opts, key=len) if opts else str(getattr(param, "metavar", None) or getattr(param, "name", "argument"))


def _bad_value(exc: typer.TyperException) -> str:
    if m := _CHOICE.fullmatch(exc.message):
        return f"unknown value {m[1]}; choose from {m[2].replace(chr(39), '')}"
    if m := _NOT_A.fullmatch(exc.message):
        return f"{m[1]} is not {_NOUNS[m[2]]}"
    return _sentence(exc.message)


def _sentence(text: str) -> str:
    text = text.strip().rstrip(".").replace("\n", " ")
    return text[:1].lower() + text[1:] if text[1:2].islower() else text
