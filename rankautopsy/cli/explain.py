"""`rankautopsy explain CAUSE`: the whole remediation checklist for one cause, offline.

The terminal report shows only the cause-specific steps; this prints them with the general layers
(bound the wait, detect the next death fast) and the rules that report the cause.
"""

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from rankautopsy.cli.rules import OutputFormat
from rankautopsy.errors import UsageError
from rankautopsy.model import Cause, Rule
from rankautopsy.sources.sanitize import clean

if TYPE_CHECKING:  # the rule-pack modules are imported when the command runs, not for --help
    from rankautopsy.rulepacks.remediation import Remediation

EXPLAINED = tuple(c for c in Cause if c not in (Cause.PROGRESS, Cause.CONTEXT))
_SYMPTOM = (
    "A symptom, never a root cause while a cause exists: a rank that shows it waited for, or lost, a rank "
    "that died first. Find that rank (`rankautopsy diagnose LOGS`) and explain its cause instead."
)


def explain_command(
    cause_id: Annotated[
        str, typer.Argument(metavar="CAUSE", help="A cause id, e.g. host_oom or python_exception.", show_default=False)
    ],
    output_format: Annotated[OutputFormat, typer.Option("--format", "-f", help="Output format.")] = OutputFormat.TEXT,
) -> None:
    """What to do about a cause: fix it, bound the wait, detect it fast next time; the rules that report it."""
    from rankautopsy.rulepacks.loader import load_rules
    from rankautopsy.rulepacks.remediation import load_remediation
    from rankautopsy.rulepacks.sources import user_rule_paths

    cause = parse_cause(cause_id)
    rules = [r for r in load_rules(user_rule_paths((), Path.cwd())) if r.cause is cause]
    rem = load_remediation()
    text = explain_json(cause, rem, rules) if output_format is OutputFormat.JSON else explain_text(cause, rem, rules)
    sys.stdout.write(text + "\n")


def parse_cause(value: str) -> Cause:
    """A cause id as the JSON report spells it; `host-oom` and `HOST_OOM` are accepted too."""
    name = value.strip().lower().replace("-", "_")
    for cause in EXPLAINED:
        if cause.value == name:
            return cause
    known = ", ".join(c.value for c in EXPLAINED)
    raise UsageError(f"unknown cause {clean(value)!r}; expected one of: {known}")


def explain_text(cause: Cause, rem: "Remediation", rules: Sequence[Rule]) -> str:
    from rankautopsy.rulepacks.catalogue import CAUSES

    sections = [f"# {cause.value}: {CAUSES[cause]}"]
    if cause.is_symptom:
        sections.append(_section("What it means", [_SYMPTOM]))
    else:
        sections.append(_section("Fix the cause", _numbered(rem.fix_cause.get(cause, ()))))
        sections.append(_section("Bound the wait (timeouts)", _numbered(rem.timeouts)))
        sections.append(_section("Detect it next time", _numbered(rem.detection)))
    shown = [f"- {r.id}: {clean(r.title)}" for r in rules]
    sections.append(_section("Rules that report it", shown or ["(none)"]))
    return "\n\n".join(sections)


def explain_json(cause: Cause, rem: "Remediation", rules: Sequence[Rule]) -> str:
    from rankautopsy.rulepacks.catalogue import CAUSES

    doc = {
        "cause": cause.value,
        "meaning": CAUSES[cause],
        "symptom": cause.is_symptom,
        "fix_cause": [] if cause.is_symptom else list(rem.fix_cause.get(cause, ())),
        "timeouts": [] if cause.is_symptom else list(rem.timeouts),
        "detection": [] if cause.is_symptom else list(rem.detection),
        "rules": [{"id": r.id, "title": clean(r.title)} for r in rules],
    }
    return json.dumps(doc, indent=2, ensure_ascii=False)


def _section(title: str, lines: Sequence[str]) -> str:
    return "\n".join([f"## {title}", "", *lines])


def _numbered(steps: Sequence[str]) -> list[str]:
    return [f"{n}. {clean(step)}" for n, step in enumerate(steps, start=1)] or ["(none)"]
