"""A user's regex run under a bound counted in this thread's CPU time, not on the wall clock.

A verdict must not depend on how loaded the machine is: a wall-clock bound refused a user's pattern
on a busy machine that it accepted on an idle one (fuzz case 67300 of seed 1). The `regex` module's
own timeout is wall-clock; it stays only as a backstop, WALL_FACTOR times the bound, so that a search
that would never end is still stopped. Imports nothing of rankautopsy."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

WALL_FACTOR = 2.0  # the backstop, in CPU bounds: a search on a machine this loaded still finishes
_T = TypeVar("_T")


def bounded(call: Callable[[float], _T], seconds: float) -> tuple[_T | None, float, bool]:
    """`call(wall_timeout)` given `seconds` of CPU time: its value (None when stopped), the CPU time it
    used, and whether it was stopped (the backstop fired, or it used more than `seconds`)."""
    began = time.thread_time()
    try:
        value: _T | None = call(max(0.001, seconds) * WALL_FACTOR)
        stopped = False
    except TimeoutError:
        value, stopped = None, True
    spent = time.thread_time() - began
    if spent > seconds:
        value, stopped = None, True
    return value, spent, stopped
