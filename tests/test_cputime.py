"""User regexes are bounded in CPU time, so that a loaded machine gives the verdict an idle one gives
(fuzz case 67300 of seed 1: a quadratic user pattern was refused at load under load, accepted idle)."""

from __future__ import annotations

import time

import pytest
import regex

from rankautopsy import cputime
from rankautopsy.rulepacks import rule as rule_module
from rankautopsy.scan.matcher import Budget, compile_rules


def _burn(seconds: float) -> str:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass
    return "done"


def test_waiting_on_the_wall_clock_is_not_spending_the_bound() -> None:
    """A call that is slow on the wall clock but uses no CPU (a machine busy with other work) is not
    stopped while it stays within the backstop."""
    value, spent, stopped = cputime.bounded(lambda _: time.sleep(0.15) or "done", 0.1)
    assert (value, stopped) == ("done", False) and spent < 0.1


def test_cpu_time_past_the_bound_stops_a_call_and_so_does_the_backstop() -> None:
    assert cputime.bounded(lambda _: _burn(0.15), 0.05)[::2] == (None, True)
    never = regex.compile(r"ValueError: (x|xx)+y")
    value, _, stopped = cputime.bounded(lambda t: never.search("ValueError: " + "x" * 5000 + "!", timeout=t), 0.05)
    assert (value, stopped) == (None, True)  # the wall-clock backstop ends what would never end


def test_the_load_check_does_not_count_time_another_process_took(monkeypatch: pytest.MonkeyPatch) -> None:
    """The load-time guard on a pattern counts its own CPU time: a search whose wall time is stretched past
    the bound (as another process on a loaded machine stretches it) is not refused for that."""
    quadratic = regex.compile(r"[.]+[,;]")
    line = "waiting" + "." * 2000 + "!"

    stretched = rule_module.SLOW_PATTERN_SECONDS * 1.2  # its wall time on a loaded machine

    class Stretched:  # as regex's wall-clock timeout behaves when other processes hold the CPU
        def search(self, text: str, timeout: float) -> object:
            time.sleep(min(timeout, stretched))
            if timeout < stretched:
                raise TimeoutError
            return quadratic.search(text)

    assert not rule_module._too_slow(Stretched(), [line])  # type: ignore[arg-type]
    assert rule_module._too_slow(regex.compile(r"ValueError: (x|xx)+y"), ["ValueError: " + "x" * 5000 + "!"])


def test_a_budget_drops_a_rule_after_its_cpu_time_not_after_wall_time() -> None:
    rules = compile_rules(rule_module_rules())
    compiled = rules[0]
    budget = Budget(seconds=0.1)
    assert budget.run(compiled, lambda _: time.sleep(0.12) or "slept") == "slept"
    assert compiled.rule.id not in budget.timed_out
    assert budget.run(compiled, lambda _: _burn(0.12)) is None
    assert budget.timed_out == [compiled.rule.id]
    assert budget.run(compiled, lambda _: "later") is None  # dropped on this stream from then on


def rule_module_rules() -> list[object]:
    from rankautopsy.model import Cause, Role, Rule

    return [Rule(id="user.x", title="t", cause=Cause.SEGFAULT, role=Role.CAUSE, pattern="x", builtin=False)]
