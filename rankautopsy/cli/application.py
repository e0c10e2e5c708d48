"""The typer application: every command, its options and help, and click's errors in the tool's words.

The only module, with the command modules it registers, that imports typer. `rankautopsy.cli` imports
it only when the quick parser (`cli.quick`) cannot take the command line itself: `--help`, completion,
the other commands, and every usage mistake, which typer explains.
"""

import re
import signal
from collections.abc import Callable
from typing import Annotated, NoReturn, TypeVar

import typer
from typer.core import TyperArgument

from rankautopsy.cli import MIN_WIDTH, PROG, _fail, _sentence, _state, _Stopped
from rankautopsy.cli.diagnose import check_skew, check_width, run
from rankautopsy.cli.drill import drill_command
from rankautopsy.cli.explain import explain_command
from rankautopsy.cli.quick import print_version
from rankautopsy.cli.rules import rules_app
from rankautopsy.cli.scan import scan_command
from rankautopsy.cli.watch import watch_command
from rankautopsy.errors import OptionError
from rankautopsy.render import Format

app = typer.Typer(
    name=PROG,
    help="Name the rank that died first in a distributed training job, when, and why.",
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    no_args_is_help=True,
)


def _print_version(value: bool) -> None:
    if value:
        print_version()
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


_T = TypeVar("_T")


def _checked(check: Callable[[_T], _T], value: _T) -> _T:
    try:
        return check(value)
    except OptionError as exc:  # click names the option and adds its usage hint
        raise typer.BadParameter(exc.message) from None


def _width(value: int | None) -> int | None:
    return _checked(check_width, value)


def _skew(value: float) -> float:
    return _checked(check_skew, value)


@app.command("diagnose")
def diagnose_command(
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
    code = run(
        paths=paths,
        dmesg=dmesg or [],
        rules=rules or [],
        output_format=output_format,
        output=output,
        boot_time=boot_time,
        clock_skew=clock_skew,
        tz=tz,
        exit_zero=exit_zero,
        color=color,
        width=width,
        checklist=checklist,
        verbose=verbose,
        debug=debug,
        quiet=quiet,
        follow=follow,
    )
    raise typer.Exit(code)


# Listed in `--help` in this order: the main command first, then what runs on nodes and during a run.
app.command("scan")(scan_command)
app.command("watch")(watch_command)
app.command("explain")(explain_command)
app.command("drill")(drill_command)
app.add_typer(rules_app, name="rules")


def invoke(args: list[str]) -> int:
    """The command line through typer; click's own failures become the tool's one-line errors."""
    try:
        code = app(args=args, prog_name=PROG, standalone_mode=False)
    except typer.TyperException as exc:  # typer's own click: matched by name, its module is private
        failure(exc)
    except typer.Abort:
        raise _Stopped(signal.SIGINT) from None
    return code if isinstance(code, int) else 0


def failure(exc: "typer.TyperException") -> NoReturn:
    kinds = {kind.__name__ for kind in type(exc).__mro__}
    if "NoArgsIsHelpError" in kinds:  # a bare `rankautopsy`: its help, as usage (clap's way: ruff, rg)
        import sys

        ctx = getattr(exc, "ctx", None)
        sys.stderr.write(ctx.get_help() + "\n" if ctx is not None else "")
        raise SystemExit(2)
    if "UsageError" in kinds:
        _fail(usage_message(exc), f"Try '{_command_path(exc)} --help' for help.")
    _fail(_sentence(exc.format_message()))


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
