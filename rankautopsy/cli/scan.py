"""`rankautopsy scan`: the map step on one node. Reads that node's logs and kernel log, writes an event file.

`--epilogue` is for a scheduler's epilogue or a job's failure path on every node: silent on success,
bounded in time (`--timeout`, 300 s by default there), and never fatal: whatever goes wrong it exits 0,
after one line on stderr, and inputs that do not exist are recorded as skipped instead of failing.
"""

import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rankautopsy.cli import _Unwind
from rankautopsy.errors import RankautopsyError

if TYPE_CHECKING:
    from rankautopsy.events import Collected

EPILOGUE_TIMEOUT = 300.0


class ScanTimeout(RankautopsyError):
    """The scan ran past --timeout."""


def _timeout(value: float | None) -> float | None:
    if value is not None and value <= 0:
        raise typer.BadParameter("give a number of seconds above zero")
    return value


def scan_command(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="[PATH...]", help="This node's log files or directories ('-' for stdin).", show_default=False
        ),
    ] = None,
    output: Annotated[
        str,
        typer.Option(
            "--output", "-o", metavar="FILE", help="The event file to write (gzip when it ends in .gz; '-': stdout)."
        ),
    ] = "",
    dmesg: Annotated[
        list[str] | None,
        typer.Option("--dmesg", metavar="FILE", help="This node's kernel log, or '-' for stdin (repeatable)."),
    ] = None,
    host: Annotated[
        str | None, typer.Option("--host", metavar="NAME", help="This node's name (default: its hostname).")
    ] = None,
    rules: Annotated[
        list[str] | None,
        typer.Option("--rules", metavar="PATH", help="An extra rule pack file or directory (repeatable)."),
    ] = None,
    boot_time: Annotated[
        str | None,
        typer.Option(metavar="TIME", help="Boot time for raw dmesg stamps (default: this host's, if theirs)."),
    ] = None,
    tz: Annotated[
        str | None,
        typer.Option("--tz", metavar="ZONE", help="Time zone of log stamps without one (default: local)."),
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(metavar="SECONDS", callback=_timeout, help="Give up after this long (--epilogue: 300)."),
    ] = None,
    epilogue: Annotated[
        bool,
        typer.Option(
            "--epilogue",
            help="For an epilogue: quiet, bounded in time, exit 0 whatever happens, missing inputs skipped.",
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Nothing on stderr unless it fails.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of internal errors.")] = False,
) -> None:
    """Scan this node's logs into a small event file for `rankautopsy diagnose` (run it on every node)."""
    from rankautopsy.cli import _state

    _state["debug"] = debug
    if not output:
        raise typer.BadParameter("give the event file to write", param_hint="--output")
    limit = timeout if timeout is not None else (EPILOGUE_TIMEOUT if epilogue else None)
    started = time.monotonic()
    try:
        with _bounded(limit):
            written, collected = _scan(paths or [], dmesg or [], host, output, rules, boot_time, tz, epilogue)
    except Exception as exc:
        if not epilogue or debug:
            raise
        why = str(exc) if isinstance(exc, RankautopsyError) else f"{type(exc).__name__}: {exc}"
        sys.stderr.write(f"rankautopsy scan: {why.splitlines()[0] if why else 'failed'} (--epilogue: exit 0)\n")
        raise typer.Exit(0) from None
    if not (quiet or epilogue or output == "-"):
        events = sum(len(p.events) for p in collected.parts)
        sys.stderr.write(
            f"rankautopsy scan: wrote {_shown(output)}: {len(collected.parts)} inputs, {events} events, "
            f"{len(collected.skipped)} skipped, {written:,} bytes in {time.monotonic() - started:.1f} s\n"
        )


def _shown(path: str) -> str:
    from rankautopsy.sources.sanitize import clean_name

    return clean_name(path)


def _scan(
    paths: list[str],
    dmesg: list[str],
    host: str | None,
    output: str,
    rules: list[str] | None,
    boot_time: str | None,
    tz: str | None,
    epilogue: bool,
) -> "tuple[int, Collected]":
    from rankautopsy.cli.diagnose import boot_of, read_stdin, zone_of
    from rankautopsy.errors import InputError
    from rankautopsy.events import Collected, Node
    from rankautopsy.events.file import write, write_to
    from rankautopsy.model import SkippedInput
    from rankautopsy.pipeline import Options, collect
    from rankautopsy.rulepacks.sources import user_rule_paths
    from rankautopsy.sources.clocks import live_boot_time

    if not paths and not dmesg:
        raise typer.BadParameter("give this node's logs (PATH...) or its kernel log (--dmesg)")
    zone = zone_of(tz)
    import socket  # ~3 ms of every start when imported above

    name = host or socket.gethostname()
    missing = [p for p in [*paths, *dmesg] if p != "-" and not Path(p).exists()] if epilogue else []
    paths = [p for p in paths if p not in missing]
    dmesg = [p for p in dmesg if p not in missing]
    options = Options(
        paths=paths,
        dmesg=dmesg,
        rules=[str(p) for p in user_rule_paths(rules or [], Path.cwd())],
        boot_time=boot_of(boot_time, zone),
        tz=zone,
        stdin=read_stdin([*paths, *dmesg], True),
        host=name,
        live_kernel=True,
    )
    try:
        collected = collect(options) if paths or dmesg else Collected()
    except InputError:
        if not epilogue:
            raise
        collected = Collected()  # nothing readable here: the file still says so, and what was looked for
    collected.skipped[:0] = [SkippedInput(p, f"no such file or directory on {name}") for p in missing]
    collected.nodes = [Node(host=name, boot_time=options.boot_time or live_boot_time())]
    try:
        if output == "-":
            return write_to(collected, sys.stdout.buffer), collected
        return write(collected, Path(output)), collected
    except OSError as exc:
        raise InputError(f"cannot write the event file: {exc.strerror or exc}", path=output) from None


class _Expired(_Unwind):
    """Raised by the --timeout timer."""


@contextmanager
def _bounded(seconds: float | None) -> Iterator[None]:
    """Raise ScanTimeout once `seconds` have passed (the worker pool unwinds with it)."""
    if seconds is None or not hasattr(signal, "setitimer"):
        yield
        return

    armed = [True]

    def _expire(signum: int, frame: object) -> None:
        if armed[0]:
            raise _Expired

    previous = signal.signal(signal.SIGALRM, _expire)
    try:  # armed inside: on a loaded machine the timer can fire as setitimer returns, before any later line
        signal.setitimer(signal.ITIMER_REAL, seconds)
        yield
    except _Expired:
        raise ScanTimeout(f"stopped after {seconds:g} s (--timeout); no event file written") from None
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
