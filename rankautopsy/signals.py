"""One signal table: every way the emitters write a signal (name, number, strsignal text, 128+N exit
status, torchrun's negative exit code), and the cause a death by that signal implies."""

from __future__ import annotations

from rankautopsy.model import Cause

# number -> (name, strsignal text as srun, bash, mpirun and DataLoader print it, cause of a death by it)
_TABLE: dict[int, tuple[str, str, Cause]] = {
    1: ("SIGHUP", "Hangup", Cause.KILLED),
    2: ("SIGINT", "Interrupt", Cause.KILLED),
    3: ("SIGQUIT", "Quit", Cause.ABORT),
    4: ("SIGILL", "Illegal instruction", Cause.SEGFAULT),
    5: ("SIGTRAP", "Trace/breakpoint trap", Cause.SEGFAULT),
    6: ("SIGABRT", "Aborted", Cause.ABORT),
    7: ("SIGBUS", "Bus error", Cause.BUS_ERROR),
    8: ("SIGFPE", "Floating point exception", Cause.SEGFAULT),
    9: ("SIGKILL", "Killed", Cause.KILLED),
    11: ("SIGSEGV", "Segmentation fault", Cause.SEGFAULT),
    13: ("SIGPIPE", "Broken pipe", Cause.KILLED),
    15: ("SIGTERM", "Terminated", Cause.KILLED),
    24: ("SIGXCPU", "CPU time limit exceeded", Cause.KILLED),
}
_BY_NAME = {name: number for number, (name, _, _) in _TABLE.items()}
_BY_TEXT = {text.lower(): number for number, (_, text, _) in _TABLE.items()}
_BY_TEXT["floating-point exception"] = 8
_BY_TEXT["abort"] = 6


def signal_number(text: str | None) -> int | None:
    """`SIGKILL`, `KILL`, `9`, `Killed`, `Segmentation fault (core dumped)`, `Signals.SIGTERM` -> the number."""
    if not text:
        return None
    word = text.strip().removeprefix("Signals.").removesuffix(" (core dumped)").strip()
    if word.isdigit():
        number = int(word[:4])
        return number if 0 < number < 65 else None
    upper = word.upper()
    if upper in _BY_NAME:
        return _BY_NAME[upper]
    if "SIG" + upper in _BY_NAME:
        return _BY_NAME["SIG" + upper]
    return _BY_TEXT.get(word.lower())


def signal_name(number: int) -> str:
    return _TABLE[number][0] if number in _TABLE else f"signal {number}"


def signal_cause(number: int) -> Cause:
    """What a death by this signal means when nothing else is known of it."""
    return _TABLE[number][2] if number in _TABLE else Cause.KILLED


def as_signal(code: int | None) -> int | None:
    """An exit status in either convention -> the killing signal (torchrun's -9, a shell's 137), else None."""
    if code is None:
        return None
    if code < 0:
        return -code
    if 128 < code < 128 + 65:
        return code - 128
    return None
