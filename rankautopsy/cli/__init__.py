"""The command line: parse options, run the pipeline, render, and turn every failure into one line.

The only package that may import typer; it may import everything else. Nothing imports it.
A plain `diagnose` or `--version` is parsed by `cli.quick`, without typer and click (a third of a small
diagnosis's start); anything else, and anything `quick` is not sure of, goes to the typer app
(`cli.application`). Commands import the pipeline, rich and the renderers inside their functions, so that
`--help`, `--version` and shell completion stay fast.
"""

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import IntEnum
from types import FrameType
from typing import TYPE_CHECKING, Any, NoReturn

from rankautopsy.errors import OptionError, RankautopsyError

if TYPE_CHECKING:
    from typer import Typer

    from rankautopsy.model import Verdict

PROG = "rankautopsy"
STDIN = "-"
MIN_WIDTH = 40


class Exit(IntEnum):
    NO_DEATH = 0  # clean, or no failure seen
    DEATH = 1  # a first death or hang culprit is named
    ERROR = 2  # bad usage or unreadable input
    UNDETERMINED = 3  # the job failed (or hung), but the first death (or culprit) cannot be named from these logs


def verdict_exit(verdict: "Verdict") -> Exit:
    """DEATH where a first death or a hang culprit is named, UNDETERMINED where the job failed or hung and
    none can be, else NO_DEATH."""
    from rankautopsy.model import Outcome
    from rankautopsy.render._labels import named

    if named(verdict) is not None:
        return Exit.DEATH
    return Exit.UNDETERMINED if verdict.outcome in (Outcome.UNDETERMINED, Outcome.HANG) else Exit.NO_DEATH


_state: dict[str, Any] = {"debug": False, "command": PROG}


def __getattr__(name: str) -> "Typer":
    if name == "app":  # the typer app, for tests and tools that drive it (CliRunner)
        from rankautopsy.cli.application import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---- one exit path: statuses, one-line errors, signals ----


class _Unwind(BaseException):
    """Raised by a signal handler to unwind the run: a BaseException, so that no `except Exception` on the way
    swallows it. Python drops one raised where it cannot propagate (a weakref callback, a `__del__`, the
    import system's lock clean-up); `_redeliver` raises it again a moment later."""


class _Stopped(_Unwind):
    """SIGINT, SIGTERM or SIGHUP: unwind (workers, progress display, temp files), then die of it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def _stop(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise _Stopped(signum)


_received: list[int] = []  # the stops the handler raised, kept until the run ends


def raise_if_stopped() -> None:
    """A stop raised again where something swallowed it without a trace: CPython 3.11 can lose one that
    arrives while it compiles a module being imported (`watch` went on polling after a SIGTERM). For a
    loop that would otherwise run on forever; the end of the run checks too."""
    if _received:
        raise _Stopped(_received[-1])


_STOPS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


REDELIVERY = 0.01  # seconds: long enough to have left the frame that dropped the exception


@contextmanager
def _signals() -> Iterator[None]:
    """Stops raise `_Stopped`; a closed stdout (`| head`) ends the process quietly, as it ends `cat`."""
    try:
        previous = {signum: signal.signal(signum, _stop) for signum in _STOPS}
    except ValueError:  # not the main thread, the only one that may set handlers
        yield
        return
    if hasattr(signal, "SIGPIPE"):
        previous[signal.SIGPIPE] = signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    if hasattr(signal, "SIGALRM"):
        previous[signal.SIGALRM] = signal.getsignal(signal.SIGALRM)
    hook, sys.unraisablehook = sys.unraisablehook, _redeliver
    _passed_on[:] = [hook]
    try:
        yield
        if _dropped and isinstance(_dropped[-1], _Stopped):  # dropped so late that its timer has not fired
            _raise_dropped()
        raise_if_stopped()  # swallowed without a trace
    finally:
        _received.clear()
        sys.unraisablehook = hook
        if _dropped:
            signal.setitimer(signal.ITIMER_REAL, 0)
            _dropped.clear()
        for signum, handler in previous.items():
            signal.signal(signum, handler)


_dropped: list[_Unwind] = []  # the one waiting for its timer
_passed_on: list[Callable[["sys.UnraisableHookArgs"], object]] = []  # the hook before ours, for the rest


def _redeliver(unraisable: "sys.UnraisableHookArgs") -> None:
    """An `_Unwind` that Python could not raise comes here instead of unwinding the run: raise it again from
    a short timer (SIGALRM), in whatever frame the main thread has reached by then."""
    exc = unraisable.exc_value
    if not isinstance(exc, _Unwind) or not hasattr(signal, "setitimer"):
        (_passed_on or [sys.__unraisablehook__])[0](unraisable)
        return
    _dropped.append(exc)
    signal.signal(signal.SIGALRM, _raise_dropped)
    signal.setitimer(signal.ITIMER_REAL, REDELIVERY)


def _raise_dropped(signum: int | None = None, frame: FrameType | None = None) -> None:
    if _dropped:
        exc = _dropped.pop()
        _dropped.clear()
        raise exc


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
    from rankautopsy.cli.quick import parse

    try:
        call = parse(args)
        if call is not None:
            return call()
        from rankautopsy.cli.application import invoke

        return invoke(args)
    except OptionError as exc:  # a bad value: named by its option, with the usage hint click would give
        _fail(_sentence(str(exc)), f"Try '{_state['command']} --help' for help.")
    except RankautopsyError as exc:
        for line in str(exc).splitlines() or [exc.message]:
            sys.stderr.write(f"{PROG}: error: {line}\n")
        return Exit.ERROR
    except Exception as exc:  # the one place that turns a bug into one line
        raise_if_stopped()  # not a bug: a stop Python wrapped (in `__set_name__`, a RuntimeError)
        if _state["debug"]:
            raise
        _fail(f"internal error: {type(exc).__name__}: {exc} (run with --debug for the traceback)")


def _sentence(text: str) -> str:
    text = text.strip().rstrip(".").replace("\n", " ")
    return text[:1].lower() + text[1:] if text[1:2].islower() else text
