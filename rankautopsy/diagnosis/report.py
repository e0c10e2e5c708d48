"""What became of every rank, and the checklist for the cause found: the last words of the verdict."""

from __future__ import annotations

from collections.abc import Mapping

from rankautopsy.diagnosis.timeline import RankState, Timeline
from rankautopsy.diagnosis.verdict import Candidate, Findings, signal_code
from rankautopsy.model import Fate, FirstDeath, RankReport, Rule
from rankautopsy.rulepacks.remediation import Remediation


def rank_reports(tl: Timeline, f: Findings) -> tuple[RankReport, ...]:
    died = {c.rank: c for c in f.candidates if c.rank is not None}
    first = f.first.rank if f.first else None
    reports = []
    for rank in sorted(tl.ranks):
        r = tl.ranks[rank]
        fate, summary = _fate(r, f, first, died)
        reports.append(
            RankReport(
                rank=rank,
                fate=fate,
                host=r.host,
                pid=r.pid,
                exitcode=r.exit.code if r.exit else None,
                last_seen=r.last_seen,
                last_step=r.last_step,
                summary=summary,
                events=tuple(r.events),
            )
        )
    return tuple(reports)


def _fate(r: RankState, f: Findings, first: int | None, died: Mapping[int, Candidate]) -> tuple[Fate, str]:
    if r.rank == first and f.first is not None:
        return Fate.FIRST_DEATH, f.first.detail or f.first.cause.value
    if r.rank in died:
        c = died[r.rank]
        return Fate.DIED, f"also died: {c.detail}"
    if r.rank in f.collateral:
        return Fate.COLLATERAL, f.collateral[r.rank] + _exit_note(r)
    if r.rank in f.torn_down:
        return Fate.TORN_DOWN, f.torn_down[r.rank] + _exit_note(r)
    if r.rank in f.clean:
        return Fate.EXITED_CLEAN, "exited cleanly" + (" after training completed" if r.completed is not None else "")
    if r.exit is not None:
        return Fate.UNKNOWN, "exited" + _exit_note(r)
    return Fate.RUNNING, "no sign of an end in its log (still running, or its end was not logged)"


def _exit_note(r: RankState) -> str:
    if r.exit is None or r.exit.code is None:
        return ""
    code = signal_code(r.exit.code)
    return (
        f"; exit code {r.exit.code}"
        if code == r.exit.code
        else f"; exit code {r.exit.code} (signal {-code if code else 0})"
    )


_LAYER_LABELS = ("Fix the cause", "Timeouts", "Detection")


def remediation_for(
    first: FirstDeath | None, rules: Mapping[str, Rule], rem: Remediation, launch_failed: str | None = None
) -> tuple[str, ...]:
    """The three layers: fix the dead rank's cause, bound every collective, detect deaths fast. Where the
    launcher could not start the job (`launch_failed`: its rule), only that rule's fix: nothing ran to time out."""
    if first is None:
        launch = rules.get(launch_failed) if launch_failed is not None else None
        layers: tuple[list[str], ...] = (list(launch.remediation) if launch is not None else [], [], [])
    else:
        rule = rules.get(first.rule) if first.rule is not None else None
        said = dict(rule.facts).get("exit_cause") if rule is not None else None  # an exit line's stated cause
        steps = list(rule.remediation) if rule is not None and first.cause in (rule.cause, said) else []
        layers = (steps or list(rem.fix_cause.get(first.cause, ())), list(rem.timeouts), list(rem.detection))
    return tuple(f"{label}: {step}" for label, layer in zip(_LAYER_LABELS, layers, strict=True) for step in layer)
