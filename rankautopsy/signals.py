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
# How a job is stopped from outside (Ctrl-C, a closed terminal, a scheduler's or launcher's kill), not a crash.
OUTSIDE_STOPS = frozenset(_BY_NAME[name] for name in ("SIGHUP", "SIGINT", "SIGKILL", "SIGTERM"))


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


_OTHER_CRASHES = [n for n, (name, _, cause) in _TABLE.items() if cause is Cause.SEGFAULT and name != "SIGSEGV"]
_OTHER_CRASH_WORDS = {word.lower(): n for n in _OTHER_CRASHES for word in (_TABLE[n][0], _TABLE[n][1])}
_OTHER_CRASH_WORDS["floating-point exception"] = 8
_OTHER_CRASH_WORDS["erroneous arithmetic operation"] = 8  # Paddle's word for SIGFPE


def other_native_crash(text: str) -> int | None:
    """The signal of a native crash other than SIGSEGV that `text` names (`exit code -8 (SIGFPE)`, `Fatal Python
    error: Illegal instruction`), else None: the segfault cause covers them, its words must not."""
    low = text.lower()
    found = [(low.find(word), n) for word, n in _OTHER_CRASH_WORDS.items() if word in low]
    return min(found)[1] if found and "sigsegv" not in low and "segmentation fault" not in low else None


def crash_words(number: int) -> str:
    """`SIGFPE, floating point exception`."""
    return f"{_TABLE[number][0]}, {_TABLE[number][1].lower()}"


# Windows ends a process that crashed with the NTSTATUS code of the fault as its exit status, which launchers
# print unsigned (`exit code 3221225477`, mp.spawn) or as a 32-bit int (-1073741819): never a signal number.
_NTSTATUS: dict[int, tuple[str, Cause]] = {
    0xC0000005: ("STATUS_ACCESS_VIOLATION", Cause.SEGFAULT),
    0xC000001D: ("STATUS_ILLEGAL_INSTRUCTION", Cause.SEGFAULT),
    0xC00000FD: ("STATUS_STACK_OVERFLOW", Cause.SEGFAULT),
    0xC0000374: ("STATUS_HEAP_CORRUPTION", Cause.ABORT),
    0xC0000409: ("STATUS_STACK_BUFFER_OVERRUN", Cause.ABORT),  # also abort() and __fastfail: a fail-fast exit
}


def windows_crash(code: int | None) -> tuple[str, Cause] | None:
    """The NTSTATUS name and cause of a Windows crash's exit status, else None."""
    if code is None or not -(1 << 31) <= code < (1 << 32):
        return None
    return _NTSTATUS.get(code & 0xFFFFFFFF)
