"""One fuzz case run in-process: the inputs written to a directory, diagnosed twice, rendered in every
format, under a time bound. A case ends `ok`, `usage` (a documented `RankautopsyError`: one line, exit
2), or a failure: `crash` (any other exception), `hang` (over the bound) or `nondeterministic`."""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from rankautopsy.errors import RankautopsyError
from rankautopsy.pipeline import Options, diagnose
from rankautopsy.render import Format, render_text
from rankautopsy.render.terminal import make_console, render_terminal

FAILURES = ("crash", "hang", "nondeterministic")
BOOT = datetime(2026, 11, 29, 6, 0, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Case:
    """Inputs under `logs/` (relative path -> bytes), kernel logs given with --dmesg, a user rule pack."""

    files: tuple[tuple[str, bytes], ...]
    dmesg: tuple[tuple[str, bytes], ...] = ()
    pack: bytes | None = None
    boot_time: bool = False  # pass --boot-time (raw kernel stamps placed in time)
    label: str = ""  # how the case was made

    @property
    def size(self) -> int:
        return sum(len(b) for _, b in (*self.files, *self.dmesg)) + len(self.pack or b"")


@dataclass(frozen=True, slots=True)
class Result:
    kind: str  # ok, usage, crash, hang, nondeterministic
    seconds: float
    detail: str = ""


class _Timeout(BaseException):
    """Raised by the alarm; a BaseException so that no `except Exception` in the code under test eats it."""


WALL_FACTOR = 10  # the wall-clock bound, in CPU bounds: a case blocked on I/O uses no CPU


@contextlib.contextmanager
def time_bound(seconds: float) -> Iterator[None]:
    """Raise _Timeout in the main thread after `seconds` of this process's CPU time (ITIMER_PROF: a
    loaded machine or `nice` does not count against the case), or after WALL_FACTOR times as long on
    the wall clock (a case that blocks reading uses no CPU)."""

    def _ring(signum: int, frame: object) -> None:
        raise _Timeout

    previous = {sig: signal.signal(sig, _ring) for sig in (signal.SIGPROF, signal.SIGALRM)}
    signal.setitimer(signal.ITIMER_PROF, seconds)
    signal.setitimer(signal.ITIMER_REAL, seconds * WALL_FACTOR)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _safe(name: str) -> str:
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".", "..")]
    return "/".join(parts) or "empty"


def write_case(case: Case, into: Path) -> Options:
    """The case's files under `into` (emptied first), and the options that diagnose them."""
    if into.exists():
        shutil.rmtree(into)
    logs = into / "logs"
    logs.mkdir(parents=True)
    for name, data in case.files:
        path = logs / _safe(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(IsADirectoryError, NotADirectoryError):
            path.write_bytes(data)
    dmesg = []
    for i, (name, data) in enumerate(case.dmesg):
        path = into / f"k{i}-{_safe(name).replace('/', '_')}"
        path.write_bytes(data)
        dmesg.append(str(path))
    rules = []
    if case.pack is not None:
        (into / "pack.yaml").write_bytes(case.pack)
        rules.append(str(into / "pack.yaml"))
    return Options(
        paths=[str(logs)],
        dmesg=dmesg,
        rules=rules,
        tz=UTC,
        jobs=1,
        boot_time=BOOT if case.boot_time else None,
        engine="regex" if rules else None,  # a new user rule per case: Hyperscan would compile each
    )


def outputs(options: Options) -> tuple[str, ...]:
    """The diagnosis in every format (or the usage error's one line), paths made relative."""
    try:
        d = diagnose(options)
    except RankautopsyError as exc:
        return ("usage", str(exc))
    texts = [render_text(d, fmt) for fmt in Format if fmt is not Format.TERMINAL]
    for width in (80, 120):
        buffer = io.StringIO()
        render_terminal(d, make_console(buffer, width, False), verbose=True)
        texts.append(buffer.getvalue())
    return ("ok", *texts)


@dataclass(slots=True)
class Runner:
    """Runs cases in one scratch directory; `seconds` bounds each run of a case (two runs per case)."""

    workdir: Path
    seconds: float = 20.0
    counts: dict[str, int] = field(default_factory=dict)
    slowest: float = 0.0

    def warm_up(self) -> None:
        """Compile the scanner's databases for every stream kind once, unbounded (minutes on a loaded
        machine when the cache is cold): a time bound that cut a compile short would cut every case."""
        step = b"2026-11-29 07:00:00,000 INFO [rank0]: step 1 loss 1.0\n"
        kernel = b"[Sun Nov 29 07:00:01 2026] Out of memory: Killed process 42 (python)\n"
        files = (("rank_0.log", step), ("console.log", step), ("attempt_0/0/error.json", b"{}"))
        outputs(write_case(Case(files, (("dmesg.txt", kernel),)), self.workdir / "case"))

    def run(self, case: Case) -> Result:
        began = time.perf_counter()
        result = self._run(case, began)
        self.counts[result.kind] = self.counts.get(result.kind, 0) + 1
        self.slowest = max(self.slowest, result.seconds)
        return result

    def _run(self, case: Case, began: float) -> Result:
        try:
            options = write_case(case, self.workdir / "case")
            with time_bound(self.seconds):
                first = outputs(options)
            with time_bound(self.seconds):
                second = outputs(options)
        except _Timeout:
            return Result("hang", time.perf_counter() - began, f"over {self.seconds:g} s of CPU")
        except Exception as exc:
            return Result("crash", time.perf_counter() - began, _where(exc))
        seconds = time.perf_counter() - began
        if first != second:
            return Result("nondeterministic", seconds, _first_difference(first, second))
        return Result(first[0], seconds, first[1][:200] if first[0] == "usage" else "")


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    inside = [f for f in frames if f"{os.sep}rankautopsy{os.sep}" in f.filename] or frames
    at = f" at {Path(inside[-1].filename).name}:{inside[-1].lineno}" if inside else ""
    return f"{type(exc).__name__}: {str(exc)[:200]}{at}"


def _first_difference(a: tuple[str, ...], b: tuple[str, ...]) -> str:
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            at = next((k for k, (p, q) in enumerate(zip(x, y, strict=False)) if p != q), min(len(x), len(y)))
            return f"output {i} differs at {at}: {x[at - 40 : at + 40]!r} vs {y[at - 40 : at + 40]!r}"
    return "different number of outputs"
