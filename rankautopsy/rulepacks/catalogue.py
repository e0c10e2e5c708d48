"""The rule catalogue as data: what `rules list` and `rules explain` print (text or JSON), and the README table.

`python -m rankautopsy.rulepacks.catalogue --readme README.md` rewrites the table between the README's markers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from enum import StrEnum
from pathlib import Path

from rankautopsy.errors import RankautopsyError, UsageError
from rankautopsy.model import Cause, Role, Rule
from rankautopsy.rulepacks.loader import load_rules
from rankautopsy.rulepacks.ruletest import extract_facts
from rankautopsy.sources.sanitize import clean

README_START = "<!-- rules-table:start -->"
README_END = "<!-- rules-table:end -->"
README_COMMAND = "python -m rankautopsy.rulepacks.catalogue --readme README.md"


class OutputFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


CAUSES: dict[Cause, str] = {
    Cause.HOST_OOM: (
        "out of host memory: the kernel OOM-killer (the host's RAM, or a cgroup's or container's limit),"
        " SLURM or Kubernetes OOM kill"
    ),
    Cause.CUDA_OOM: "GPU memory exhausted (CUDA out of memory, allocator failures)",
    Cause.PYTHON_EXCEPTION: "an uncaught Python exception",
    Cause.SEGFAULT: "SIGSEGV / native crash",
    Cause.ABORT: "SIGABRT / C++ `terminate called` / an MPI library's abort, raised by the rank itself",
    Cause.BUS_ERROR: "SIGBUS, typically /dev/shm too small for DataLoader workers",
    Cause.CUDA_ERROR: "illegal memory access, device-side assert, unspecified launch failure",
    Cause.GPU_HARDWARE: "NVIDIA Xid, ECC error, GPU fallen off the bus, NVLink error",
    Cause.NCCL_ERROR: "a NCCL/network error that originates at that rank",
    Cause.KILLED: "SIGKILL/SIGTERM from an unknown sender",
    Cause.SILENT_EXIT: "the process ended with no message at all",
    Cause.HANG: "the rank stopped making progress without dying",
    Cause.TIME_LIMIT: "the scheduler ended the whole job at its time limit",
    Cause.COLLECTIVE_TIMEOUT: "a collective operation timed out waiting for its peers",
    Cause.PEER_LOST: "the connection to a peer rank was lost",
    Cause.LAUNCHER_TEARDOWN: "the launcher or scheduler stopped the rank while tearing the job down",
    Cause.WATCHDOG_ABORT: "the NCCL watchdog aborted the process",
    Cause.PROGRESS: "training progress (steps, epochs, completion)",
    Cause.CONTEXT: "context: not a death and not a consequence of one",
}

ROLES: dict[Role, str] = {
    Role.CAUSE: "A rank that emits this line died of it: the earliest such death is the first death the verdict "
    "names, and its remediation comes from this rule.",
    Role.SYMPTOM: "A consequence of another rank's death: a rank that shows only symptoms is collateral, never "
    "the first death while any rank left a cause.",
    Role.PROGRESS: "Progress: it tells how far each rank got; when no rank left a cause, the rank that made the "
    "least progress is the hang culprit.",
    Role.CONTEXT: "Context: shown as evidence (pids, hosts, exit codes) and used to join lines to ranks, never "
    "counted as a cause.",
}


# ---- list ----


def catalogue_entry(rule: Rule) -> dict[str, object]:
    """The fields of one rule in `rules list --format json` (a stable schema)."""
    return {
        "id": rule.id,
        "title": rule.title,
        "cause": rule.cause.value,
        "role": rule.role.value,
        "status": rule.status,
        "since": rule.since,
        "aliases": list(rule.aliases),
        "builtin": rule.builtin,
        "defined_at": _defined_at(rule),
    }


def list_json(rules: Iterable[Rule]) -> str:
    return json.dumps([catalogue_entry(rule) for rule in _sorted(rules)], indent=2, ensure_ascii=False)


def list_text(rules: Iterable[Rule]) -> str:
    rows = [("ID", "CAUSE", "ROLE", "DEFINED AT", "TITLE")]
    rows += [(r.id, r.cause.value, r.role.value, _where(r), clean(r.title)) for r in _sorted(rules)]
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join("  ".join([*(c.ljust(w) for c, w in zip(row[:4], widths, strict=True)), row[4]]) for row in rows)


def _sorted(rules: Iterable[Rule]) -> list[Rule]:
    return sorted(rules, key=lambda rule: rule.id)


def _defined_at(rule: Rule) -> dict[str, object] | None:
    return None if rule.source is None else {"file": rule.source.source, "line": rule.source.line}


def _where(rule: Rule) -> str:
    return "?" if rule.source is None else f"{rule.source.source}:{rule.source.line}"


# ---- explain ----


def find_rule(rules: Sequence[Rule], name: str) -> Rule:
    """The rule with this id, or whose aliases hold it; an unknown name is a usage error with a suggestion."""
    by_name = {rule.id: rule for rule in rules}
    for rule in rules:
        by_name.update({alias: rule for alias in rule.aliases if alias not in by_name})
    if name in by_name:
        return by_name[name]
    import difflib  # only for an unknown name

    close = difflib.get_close_matches(name, list(by_name), n=1)
    hint = f"did you mean {close[0]!r}?" if close else "see `rankautopsy rules list`"
    raise UsageError(f"unknown rule {clean(name)!r}", hint=hint)


def explain_data(rule: Rule) -> dict[str, object]:
    """Everything `rules explain --format json` says about a rule."""
    return {
        **catalogue_entry(rule),
        "cause_meaning": CAUSES[rule.cause],
        "role_meaning": ROLES[rule.role],
        "streams": sorted(kind.value for kind in rule.streams),
        "pattern": rule.pattern,
        "ignorecase": rule.ignorecase,
        "assemble": rule.assemble.value if rule.assemble else None,
        "effects": sorted(e.value for e in rule.effects),
        "facts": dict(rule.facts),
        "at_start": rule.at_start,
        "why": rule.why.strip(),
        "falsepositives": list(rule.falsepositives),
        "remediation": list(rule.remediation),
        "references": list(rule.references),
        "examples": {
            "match": [
                {"line": e.line, "facts": dict(e.facts), "extracted": extract_facts(rule, e.line)}
                for e in rule.match_examples
            ],
            "no_match": list(rule.no_match_examples),
        },
    }


def explain_json(rule: Rule) -> str:
    return json.dumps(explain_data(rule), indent=2, ensure_ascii=False)


def explain_text(rule: Rule) -> str:
    """ruff-style sections, Markdown, offline."""
    sections = [
        f"# {rule.id}: {clean(rule.title)}",
        _section("What it detects", _detects(rule)),
        _section("Why it matters", _matters(rule)),
        _section("Example", _example(rule)),
        _section("Remediation", _bullets(rule.remediation) or _no_remediation(rule)),
        _section("False positives", _bullets(rule.falsepositives)),
        _section("References", _bullets(rule.references)),
        _section("Defined at", _definition(rule)),
    ]
    return "\n\n".join(sections)


def _section(title: str, lines: Sequence[str]) -> str:
    return "\n".join([f"## {title}", "", *(lines or ["(none)"])])


def _detects(rule: Rule) -> list[str]:
    streams = ", ".join(sorted(kind.value for kind in rule.streams)) or "every stream"
    lines = [clean(rule.title) + "."]
    if rule.why:
        lines += ["", clean(" ".join(rule.why.split()))]
    lines += ["", f"Pattern: `{rule.pattern}`" + (" (ignoring case)" if rule.ignorecase else ""), f"Streams: {streams}"]
    if rule.assemble is not None:
        lines.append(f"Grows into a multi-line event: {rule.assemble.value}")
    if rule.effects:
        lines.append(f"Effects: {', '.join(sorted(e.value for e in rule.effects))}")
    if rule.at_start:
        lines.append("Matches only an input's opening line (its first with words)")
    if rule.facts:
        lines.append("States on every line: " + clean(", ".join(f"{k}={v!r}" for k, v in rule.facts)))
    return lines


def _matters(rule: Rule) -> list[str]:
    return [f"Cause `{rule.cause.value}`: {CAUSES[rule.cause]}.", f"Role `{rule.role.value}`: {ROLES[rule.role]}"]


def _example(rule: Rule) -> list[str]:
    lines = ["Matches (the facts extracted under each line):", ""]
    for example in rule.match_examples:
        facts = extract_facts(rule, example.line)
        shown = ", ".join(f"{k}={v!r}" for k, v in (facts or {}).items()) or "no facts"
        lines += [f"    {clean(example.line)}", f"    -> {clean(shown)}", ""]
    if rule.no_match_examples:
        lines += ["Does not match:", "", f"    {clean(rule.no_match_examples[0])}"]
    return lines


def _bullets(items: Iterable[str]) -> list[str]:
    return [f"- {clean(' '.join(item.split()))}" for item in items]


def _no_remediation(rule: Rule) -> list[str]:
    if rule.role is Role.CAUSE:
        return []
    return ["None of its own: not a cause, so the report's checklist follows the first death's cause instead."]


def _definition(rule: Rule) -> list[str]:
    kind = "built-in" if rule.builtin else "user pack"
    extra = f", since {rule.since}" if rule.since else ""
    lines = [f"{_where(rule)} ({kind}; status {rule.status}{extra})"]
    if rule.aliases:
        lines.append("Also known as: " + ", ".join(rule.aliases))
    return lines


# ---- the README table ----


def readme_table(rules: Iterable[Rule]) -> str:
    rows = ["| id | cause | role | effects | title |", "| --- | --- | --- | --- | --- |"]
    rows += [
        f"| `{r.id}` | `{r.cause.value}` | {r.role.value} | {', '.join(sorted(r.effects))} | {_cell(r.title)} |"
        for r in _sorted(rules)
    ]
    return "\n".join(rows)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def with_table(readme: str, table: str) -> str:
    """The README text with the table between its markers replaced."""
    start, end = readme.find(README_START), readme.find(README_END)
    if start < 0 or end < start:
        raise UsageError(f"no {README_START} ... {README_END} markers in the README")
    return readme[: start + len(README_START)] + "\n" + table + "\n" + readme[end:]


def update_readme(path: Path, *, check: bool = False) -> bool:
    """Rewrite the table of built-in rules in the README (only between the markers); True if it changed."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"cannot read: {exc.strerror or exc}", path=str(path)) from exc
    new = with_table(text, readme_table(load_rules()))
    if new != text and not check:
        path.write_text(new, encoding="utf-8")
    return new != text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rankautopsy.rulepacks.catalogue", description=__doc__)
    parser.add_argument("--readme", type=Path, required=True, help="The README whose rule table to rewrite.")
    parser.add_argument("--check", action="store_true", help="Exit 1 if the table is stale; write nothing.")
    args = parser.parse_args(argv)
    try:
        changed = update_readme(args.readme, check=args.check)
    except RankautopsyError as exc:
        sys.stderr.write(f"rankautopsy: error: {exc}\n")
        return 2
    if args.check and changed:
        sys.stderr.write(f"{args.readme}: the rule table is stale; run `{README_COMMAND}`\n")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
