"""install(): faulthandler, a death record on an uncaught exception or SIGTERM, heartbeats.

SIGTERM is caught without delaying the death: Python runs a signal handler only when the main thread
returns to bytecode, which a rank blocked in a collective does not do for minutes. So the C-level
handler's wakeup byte (`signal.set_wakeup_fd`) wakes a small thread that writes the record and ends
the process at once (exit status 143, as a shell reports a SIGTERM death).
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any

from rankautopsy.runtime.identity import Identity, identify
from rankautopsy.runtime.records import Sink, death_line, heartbeat_line, start_line

DEFAULT_INTERVAL = 10.0  # seconds between two heartbeats at most once
_SIGTERM_EXIT = 128 + signal.SIGTERM
_WRITE_WAIT = 2.0  # seconds a second death waits for the first one's record


class Runtime:
    """What install() set up; a context manager that uninstalls on exit."""

    def __init__(self, who: Identity, deaths: Sink, beats: Sink, interval: float, file: IO[bytes] | None) -> None:
        self.who = who
        self.deaths = deaths
        self.beats = beats
        self.interval = interval
        self.file = file
        self.due = 0.0
        self.step: int | None = None
        self.recorded = False
        self.written = threading.Event()
        self.lock = threading.Lock()
        self.saved: dict[str, Any] = {}

    @property
    def path(self) -> str | None:
        return self.file.name if self.file is not None else None

    def record(self, cause: str, **fields: Any) -> bool:
        """Write the death record once; False when one was written already.

        A second caller (SIGTERM reaches both the main thread's handler and the wakeup thread) waits
        for the first one's write before it returns, or it would end the process with the record half
        written. The wait is bounded: the first caller may be the very thread the handler interrupted.
        """
        with self.lock:
            first = not self.recorded
            self.recorded = True
        if not first:
            self.written.wait(_WRITE_WAIT)
            return False
        try:
            self.deaths.write(death_line(self.who, cause, step=self.step, **fields))
        finally:
            self.written.set()
        return True

    def record_exception(self, exc: BaseException, thread: str | None = None) -> bool:
        kind = type(exc)
        name = (
            kind.__qualname__
            if kind.__module__ in ("builtins", "__main__")
            else f"{kind.__module__}.{kind.__qualname__}"
        )
        line = death_line(self.who, "python_exception", step=self.step, exc_type=name, exc_msg=str(exc), thread=thread)
        if thread is not None:  # the rank goes on: a record, but not its death
            self.deaths.write(line)
            return True
        with self.lock:
            if self.recorded:
                return False
            self.recorded = True
        self.deaths.write(line)
        return True

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        uninstall()


_current: Runtime | None = None


def current() -> Runtime | None:
    return _current


def install(
    directory: str | os.PathLike[str] | None = None,
    *,
    heartbeat_interval: float = DEFAULT_INTERVAL,
    to_stderr: bool = True,
    sigterm: bool = True,
) -> Runtime:
    """Make this rank leave evidence. `directory` (default $RANKAUTOPSY_DIR) gets one file per rank,
    `rankautopsy-rank<N>.log`, with the start line, heartbeats, the death record and faulthandler's dumps;
    the death record also goes to stderr (unless `to_stderr` is False). Without a directory, all of it
    goes to stderr. Idempotent: a second call returns the runtime already installed."""
    global _current
    if _current is not None:
        return _current
    who = identify()
    directory = directory if directory is not None else os.environ.get("RANKAUTOPSY_DIR") or None
    file = _open_rank_file(Path(directory), who) if directory is not None else None
    fds = ([2] if to_stderr or file is None else []) + ([file.fileno()] if file is not None else [])
    beats = Sink([file.fileno()] if file is not None else [2])
    runtime = Runtime(who, Sink(fds), beats, max(0.0, heartbeat_interval), file)
    _hook(runtime, sigterm)
    _current = runtime
    beats.write(start_line(who))
    return runtime


def _open_rank_file(directory: Path, who: Identity) -> IO[bytes]:
    directory.mkdir(parents=True, exist_ok=True)
    name = f"rankautopsy-rank{who.rank}.log" if who.rank is not None else f"rankautopsy-pid{who.pid}.log"
    return open(directory / name, "ab", buffering=0)


def _hook(runtime: Runtime, sigterm: bool) -> None:
    saved = runtime.saved
    saved["faulthandler"] = faulthandler.is_enabled()
    faulthandler.enable(file=runtime.file if runtime.file is not None else sys.__stderr__ or sys.stderr)
    saved["excepthook"] = sys.excepthook
    saved["threading.excepthook"] = threading.excepthook
    sys.excepthook = _excepthook
    threading.excepthook = _thread_excepthook
    if sigterm and threading.current_thread() is threading.main_thread():
        _hook_sigterm(runtime)


def _excepthook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    runtime = _current
    previous = runtime.saved["excepthook"] if runtime is not None else sys.__excepthook__
    previous(kind, exc, tb)  # the traceback first: the record, stamped, ends it
    if runtime is not None:
        runtime.record_exception(exc)
        _flush()


def _thread_excepthook(args: threading.ExceptHookArgs) -> None:
    runtime = _current
    previous = runtime.saved["threading.excepthook"] if runtime is not None else threading.__excepthook__
    previous(args)
    if runtime is not None and args.exc_value is not None and not isinstance(args.exc_value, SystemExit):
        runtime.record_exception(args.exc_value, thread=args.thread.name if args.thread else "?")


def _hook_sigterm(runtime: Runtime) -> None:
    previous = signal.getsignal(signal.SIGTERM)
    if previous not in (signal.SIG_DFL, None):
        return  # the script (or its framework) handles SIGTERM itself: leave it alone
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    try:
        old = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    except ValueError:
        os.close(read_fd)
        os.close(write_fd)
        return
    if old != -1:  # someone else (an event loop) owns the wakeup fd: give it back
        signal.set_wakeup_fd(old)
        os.close(read_fd)
        os.close(write_fd)
        return
    signal.signal(signal.SIGTERM, _on_sigterm)
    runtime.saved["sigterm"] = (previous, read_fd, write_fd)
    threading.Thread(target=_wakeups, args=(read_fd,), name="rankautopsy-signals", daemon=True).start()


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    _die_of_sigterm(in_main=True)


def _wakeups(read_fd: int) -> None:
    while True:
        try:
            data = os.read(read_fd, 64)
        except OSError:
            return
        if not data:
            return
        if signal.SIGTERM in data and signal.getsignal(signal.SIGTERM) is _on_sigterm:
            _die_of_sigterm(in_main=False)


def _die_of_sigterm(in_main: bool) -> None:
    runtime = _current
    if runtime is not None:
        runtime.record("killed", signal="SIGTERM")
    _flush()
    if in_main:  # the true death by signal, as without the runtime
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
    os._exit(_SIGTERM_EXIT)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass


def uninstall() -> None:
    """Undo install(): the hooks, the SIGTERM handler and faulthandler as they were."""
    global _current
    runtime, _current = _current, None
    if runtime is None:
        return
    saved = runtime.saved
    sys.excepthook = saved["excepthook"]
    threading.excepthook = saved["threading.excepthook"]
    if "sigterm" in saved and threading.current_thread() is threading.main_thread():
        previous, read_fd, write_fd = saved["sigterm"]
        signal.signal(signal.SIGTERM, previous)
        signal.set_wakeup_fd(-1)
        os.close(write_fd)
        os.close(read_fd)
    if saved["faulthandler"]:
        faulthandler.enable()
    else:
        faulthandler.disable()
    if runtime.file is not None:
        runtime.file.close()


def heartbeat(step: int) -> None:
    """Note that this rank reached `step`; written at most once per interval, so calling it every step
    costs a clock read and a comparison."""
    runtime = _current
    if runtime is None:
        return
    runtime.step = step
    now = time.monotonic()
    if now < runtime.due:
        return
    runtime.due = now + runtime.interval
    runtime.beats.write(heartbeat_line(runtime.who.rank, step))


class AbortOnException:
    """A decorator and a context manager: an exception that escapes it prints its traceback and the death
    record, flushes, and ends the process at once (`os._exit`), so that the launcher sees the death now
    instead of after the other ranks' collective timeout (Python's normal exit can block in atexit hooks
    and in torch's process-group teardown)."""

    def __init__(self, exit_code: int = 1) -> None:
        self.exit_code = exit_code

    def __enter__(self) -> AbortOnException:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc is None or not isinstance(exc, Exception):
            return
        import traceback

        traceback.print_exception(kind, exc, tb, file=sys.stderr)
        _flush()
        runtime = _current or Runtime(identify(), Sink([2]), Sink([2]), DEFAULT_INTERVAL, None)
        runtime.record_exception(exc)
        _flush()
        os._exit(self.exit_code)

    def __call__(self, func: Callable[..., Any]) -> Callable[..., Any]:
        import functools

        @functools.wraps(func)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return wrapped


abort_on_exception = AbortOnException()
