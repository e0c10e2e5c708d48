"""Accuracy of rankautopsy over a corpus of real and public cases, and the ratchet that keeps it from sliding.

    python benchmarks/accuracy/score.py [--corpus real|public|all] [--case ID] [--root DIR]
                                        [--write] [--update-ratchet]

Every case is a directory `<root>/<corpus>/<case-id>/` with its logs and a `case.yaml` (the format is in
benchmarks/accuracy/README.md). Each case is run through the real CLI, in this process, from the case
directory: `rankautopsy diagnose ARGS [--dmesg P ...] OPTIONS --format json --tz UTC`. Its JSON verdict is
scored against the case's `truth` with the definitions below (also written into the report). A run that
fails (exit status 2, an exception, output that is not the JSON object) is a miss whose error is shown; it
never stops the scorer. A malformed case.yaml is reported by path and reason and scored as nothing.

Exit status: 0; 1 when a case is malformed or a case listed in ratchet.json is no longer right;
2 on bad usage (an unknown --case, a missing --root).
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import json
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
DEFAULT_ROOT = HERE
RATCHET = HERE / "ratchet.json"
REPORT = HERE.parent / "ACCURACY.md"

DEFINITIONS = """\
- A case is *determinate* when truth.outcome is first_death or hang and truth.rank is not null.
  **Rank accuracy** = determinate cases where the tool's outcome is first_death or hang and its
  first_death.rank equals truth.rank, over determinate cases.
- **Cause accuracy** = cases with a non-null truth.cause where the tool's first_death.cause equals it,
  over those cases.
- An answer is **right** when:
  - truth first_death or hang: the tool's outcome is first_death or hang, its rank equals truth.rank
    (when truth.rank is null the tool must not name a rank), and its cause equals truth.cause when that
    is not null; a truth first_death with rank null (a death whose cause is known, not its rank) is
    also met by an undetermined outcome with no rank and that cause: the same finding under the other
    label, as the undetermined truth below already accepts it the other way round;
  - truth undetermined: the tool's outcome is undetermined, or a first_death with rank null whose cause
    equals truth.cause when that is given (naming any rank is wrong);
  - truth clean: the tool's outcome is clean or no_failure.

  Anything else, including a run that failed, is **wrong**.
- **Death time**: a case whose `injected:` list gives a `time` (`YYYY-MM-DD HH:MM:SS.fff UTC`: when the
  fault was injected into a real job) and whose truth cause is not `hang` has a known death time. Where
  the tool names the truth's rank and gives a time, that time *holds* when the injected time lies in
  [first_death.time.earliest, first_death.time.latest] (1 ms either way, the stamps' resolution), or
  on its bounded side when `time_open` says one end is open; else it is *wrong*. No time given is
  *unknown*, which is never wrong. Not judged: a fault whose death follows its injection by a delay the
  injector cannot record (DELAYED_FAULTS: a rank hoarding memory in a capped cgroup dies when the kernel's
  OOM-killer acts, after its record is written).
- **Calibration**: for each confidence the tool stated (high, medium, low), its answers, right and
  wrong; the headline figure is *wrong answers at high confidence*. Failed runs state no confidence.
- Schema 1 verdicts carry no outcome; it is derived: a first_death is `hang` when its cause is hang,
  else `first_death`; no first_death is `no_failure`.
"""

CORPORA = ("real", "public", "holdout")
LAUNCHERS = (
    "torchrun",
    "torchrun-multinode",
    "mp.spawn",
    "mpirun",
    "mpich",
    "srun",
    "deepspeed",
    "accelerate",
    "lightning",
    "ray",
    "horovod",
    "kubernetes",
    "megatron",
    "nemo",
    "other",
)
TRUTH_OUTCOMES = ("first_death", "hang", "undetermined", "clean")
TOOL_OUTCOMES = ("clean", "first_death", "hang", "undetermined", "no_failure")
CONFIDENCES = ("high", "medium", "low")
SURE = ("high", "medium", "low")
# The root causes of the taxonomy in /work/shared/DESIGN.md (symptoms are never a truth).
CAUSES = (
    "host_oom",
    "cuda_oom",
    "python_exception",
    "segfault",
    "abort",
    "bus_error",
    "cuda_error",
    "gpu_hardware",
    "nccl_error",
    "killed",
    "silent_exit",
    "hang",
    "time_limit",
)
NAMED = ("first_death", "hang")  # outcomes that name a culprit
REQUIRED = ("id", "corpus", "launcher", "source", "description", "args", "truth")
OPTIONAL = ("dmesg", "options", "notes")
TRUTH_KEYS = ("outcome", "rank", "cause", "sure", "why")
# Options a case may not set: the scorer owns the output format and the zone of naive stamps.
RESERVED_OPTIONS = ("--format", "-f", "--output", "-o", "--tz")
ERROR_RUN = "error"  # the calibration row of runs that produced no verdict
TIME_RESOLUTION = timedelta(milliseconds=1)
# job.py's fault kinds whose record precedes the death (by however long the memory takes to fill)
DELAYED_FAULTS = frozenset({"memcg-oom", "worker-memcg-oom", "hoard", "worker-hoard"})


class CaseError(Exception):
    """A case directory that does not follow the format: its path and every reason."""

    def __init__(self, path: Path, reasons: Sequence[str]) -> None:
        self.path = path
        self.reasons = list(reasons)
        super().__init__(f"{path}: " + "; ".join(self.reasons))


@dataclass(frozen=True)
class Truth:
    outcome: str
    rank: int | None
    cause: str | None
    sure: str = "high"
    why: str = ""


@dataclass(frozen=True)
class Case:
    id: str
    corpus: str
    launcher: str
    path: Path
    args: tuple[str, ...]
    truth: Truth
    dmesg: tuple[str, ...] = ()
    options: tuple[str, ...] = ()
    source: str = ""
    description: str = ""
    died_at: datetime | None = None  # when the fault was injected (`injected[0].time`), for the death time

    def argv(self) -> list[str]:
        dmesg = [arg for p in self.dmesg for arg in ("--dmesg", p)]
        return ["diagnose", *self.args, *dmesg, *self.options, "--format", "json", "--tz", "UTC"]


@dataclass(frozen=True)
class Answer:
    """What the tool said (or why it said nothing: `error`)."""

    outcome: str | None
    rank: int | None = None
    cause: str | None = None
    confidence: str | None = None
    note: str = ""
    error: str | None = None
    time: tuple[datetime, datetime] | None = None  # first_death.time
    time_open: str | None = None  # first_death.time_open

    @property
    def named_rank(self) -> bool:
        return self.outcome in NAMED and self.rank is not None


@dataclass(frozen=True)
class Result:
    case: Case
    answer: Answer
    seconds: float = 0.0

    @property
    def right(self) -> bool:
        return is_right(self.case.truth, self.answer)

    @property
    def determinate(self) -> bool:
        return is_determinate(self.case.truth)

    @property
    def rank_ok(self) -> bool:
        return self.determinate and self.answer.outcome in NAMED and self.answer.rank == self.case.truth.rank

    @property
    def cause_ok(self) -> bool:
        return self.case.truth.cause is not None and self.answer.cause == self.case.truth.cause

    @property
    def time_held(self) -> bool | None:
        """Whether the death time holds the injected one; None where it is not judged (see DEFINITIONS)."""
        died = self.case.died_at
        if died is None or not self.time_judged or self.answer.time is None:
            return None
        earliest, latest = self.answer.time
        low = self.answer.time_open == "below" or died >= earliest - TIME_RESOLUTION
        high = self.answer.time_open == "above" or died <= latest + TIME_RESOLUTION
        return low and high

    @property
    def time_judged(self) -> bool:
        """A known death time on the truth's rank, named: judged (`time_held`) or unknown (no time)."""
        return self.case.died_at is not None and self.case.truth.cause != "hang" and self.rank_ok


# --- scoring ---------------------------------------------------------------------------------------------


def is_determinate(truth: Truth) -> bool:
    return truth.outcome in NAMED and truth.rank is not None


def is_right(truth: Truth, answer: Answer) -> bool:
    """The definition of a right answer (see DEFINITIONS)."""
    if answer.error is not None:
        return False
    if truth.outcome in NAMED:
        if truth.outcome == "first_death" and truth.rank is None and answer.outcome == "undetermined":
            return answer.rank is None and truth.cause is not None and answer.cause == truth.cause
        if answer.outcome not in NAMED or answer.rank != truth.rank:
            return False
        return truth.cause is None or answer.cause == truth.cause
    if truth.outcome == "undetermined":
        if answer.rank is not None:
            return False
        if answer.outcome == "undetermined":
            return True
        named_cause = answer.outcome == "first_death" and answer.cause is not None
        return named_cause and (truth.cause is None or answer.cause == truth.cause)
    if truth.outcome == "clean":
        return answer.outcome in ("clean", "no_failure")
    return False


def answer_from_json(doc: Any) -> Answer:
    """The answer in a `--format json` document, schema 1 or 2; a document without a verdict is an error."""
    if not isinstance(doc, dict) or not isinstance(doc.get("verdict"), dict):
        return Answer(outcome=None, error="the JSON output has no verdict object")
    verdict = doc["verdict"]
    first = verdict.get("first_death")
    if first is not None and not isinstance(first, dict):
        return Answer(outcome=None, error="verdict.first_death is neither null nor an object")
    rank = first.get("rank") if first else None
    cause = first.get("cause") if first else None
    if "outcome" in verdict:
        outcome = verdict["outcome"]
    elif first is None:
        outcome = "no_failure"
    else:
        outcome = "hang" if cause == "hang" else "first_death"
    confidence = verdict.get("confidence")
    reasoning = [*_strings(verdict.get("reasoning")), *_strings(verdict.get("notes"))]
    time_open = first.get("time_open") if first else None
    return Answer(
        outcome=outcome if isinstance(outcome, str) else repr(outcome),
        rank=rank if isinstance(rank, int) and not isinstance(rank, bool) else None,
        cause=cause if isinstance(cause, str) else None,
        confidence=confidence if isinstance(confidence, str) else None,
        note=reasoning[0] if reasoning else "",
        time=_span(first.get("time")) if first else None,
        time_open=time_open if isinstance(time_open, str) else None,
    )


def _span(value: Any) -> tuple[datetime, datetime] | None:
    """A JSON time interval, or None where there is none (or it is not one)."""
    try:
        return _iso(value["earliest"]), _iso(value["latest"])
    except (TypeError, KeyError, ValueError):
        return None


def _iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str) and v.strip()] if isinstance(value, list) else []


# --- running the CLI --------------------------------------------------------------------------------------


def run_case(case: Case) -> Result:
    """The real CLI on one case, in this process, from the case directory; never raises."""
    started = time.perf_counter()
    try:
        from typer.testing import CliRunner

        from rankautopsy.cli import app

        with contextlib.chdir(case.path):
            # No user rule packs from the environment, no step summary written anywhere.
            env = {"RANKAUTOPSY_RULES": None, "GITHUB_STEP_SUMMARY": None}
            result = CliRunner().invoke(app, case.argv(), env=env, catch_exceptions=True)
        answer = _answer_of(result)
    except Exception as exc:  # the scorer itself must survive anything the tool does
        answer = Answer(outcome=None, error=f"{type(exc).__name__}: {exc}")
    return Result(case, answer, time.perf_counter() - started)


def _answer_of(result: Any) -> Answer:
    exc = result.exception
    if exc is not None and not isinstance(exc, SystemExit):
        return Answer(outcome=None, error=f"exception {type(exc).__name__}: {_one_line(str(exc))}")
    stderr = _one_line(_stderr(result))
    if result.exit_code == 2:
        return Answer(outcome=None, error=f"exit status 2: {stderr or _one_line(result.output)}")
    try:
        doc = json.loads(result.stdout)
    except ValueError as err:
        return Answer(outcome=None, error=f"exit status {result.exit_code}, output is not JSON ({err}) {stderr}")
    return answer_from_json(doc)


def _stderr(result: Any) -> str:
    try:
        return str(result.stderr)
    except ValueError:  # older click: stderr not captured separately
        return ""


def _one_line(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


# --- cases --------------------------------------------------------------------------------------------


def discover(root: Path, corpus: str = "all") -> tuple[list[Case], list[CaseError]]:
    """Every case under `root/<corpus>/`, sorted by id, and every malformed one."""
    corpora = CORPORA if corpus == "all" else (corpus,)
    cases: list[Case] = []
    problems: list[CaseError] = []
    for name in corpora:
        folder = root / name
        if not folder.is_dir():
            continue
        for path in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith((".", "_"))):
            try:
                cases.append(load_case(path))
            except CaseError as err:
                problems.append(err)
    seen: dict[str, Case] = {}
    for case in cases:
        if case.id in seen:
            problems.append(CaseError(case.path, [f"duplicate id {case.id!r} (also {seen[case.id].path})"]))
        seen.setdefault(case.id, case)
    unique = sorted(seen.values(), key=lambda c: c.id)
    return unique, sorted(problems, key=lambda e: str(e.path))


def load_case(path: Path) -> Case:
    """One case directory, validated; raises CaseError with every reason found."""
    file = path / "case.yaml"
    if not file.is_file():
        raise CaseError(path, ["no case.yaml"])
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise CaseError(file, [f"not valid YAML: {_one_line(str(exc), 200)}"]) from None
    if not isinstance(data, dict):
        raise CaseError(file, ["expected a mapping at the top level"])
    reasons = _validate(path, data)
    if reasons:
        raise CaseError(file, reasons)
    t = data["truth"]
    return Case(
        id=data["id"],
        corpus=data["corpus"],
        launcher=data["launcher"],
        path=path.resolve(),
        args=tuple(data["args"]),
        truth=Truth(t["outcome"], t["rank"], t["cause"], t["sure"], t["why"]),
        dmesg=tuple(data.get("dmesg") or ()),
        options=tuple(str(o) for o in data.get("options") or ()),
        source=data["source"],
        description=data["description"],
        died_at=_injected_time(data.get("injected")),
    )


def _injected_time(injected: Any) -> datetime | None:
    """When the first injected fault happened, as a real case's `injected:` list gives it, or None (also for a
    fault whose death comes later, DELAYED_FAULTS)."""
    first = injected[0] if isinstance(injected, list) and injected and isinstance(injected[0], dict) else {}
    if first.get("kind") in DELAYED_FAULTS:
        return None
    text = first.get("time")
    if not isinstance(text, str) or not text.endswith(" UTC"):
        return None
    try:
        return datetime.strptime(text[:-4], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)
    except ValueError:
        return None


def _validate(path: Path, data: Mapping[str, Any]) -> list[str]:
    reasons = [f"missing key {k!r}" for k in REQUIRED if k not in data]
    for key in sorted(map(str, data)):
        # Other keys are the author's metadata (injected faults, pids...), unless they look like a typo.
        if key not in REQUIRED + OPTIONAL and (near := difflib.get_close_matches(key, REQUIRED + OPTIONAL, 1, 0.8)):
            reasons.append(f"unknown key {key!r} (did you mean {near[0]!r}?)")
    if "id" in data and data["id"] != path.name:
        reasons.append(f"id {data['id']!r} is not the directory name {path.name!r}")
    if "corpus" in data and data["corpus"] not in CORPORA:
        reasons.append(f"corpus {data['corpus']!r} is not one of {', '.join(CORPORA)}")
    elif "corpus" in data and data["corpus"] != path.parent.name:
        reasons.append(f"corpus {data['corpus']!r} but the case is under {path.parent.name}/")
    if "launcher" in data and data["launcher"] not in LAUNCHERS:
        reasons.append(f"launcher {data['launcher']!r} is not one of {', '.join(LAUNCHERS)}")
    for key in ("source", "description"):
        if key in data and not (isinstance(data[key], str) and data[key].strip()):
            reasons.append(f"{key} must be a non-empty string")
    if "args" in data:
        reasons += _paths(path, "args", data["args"], required=True)
    if data.get("dmesg") is not None:
        reasons += _paths(path, "dmesg", data["dmesg"], required=False)
    options = data.get("options")
    if options is not None:
        if not isinstance(options, list) or not all(isinstance(o, str | int | float) for o in options):
            reasons.append("options must be a list of strings")
        else:
            taken = [str(o) for o in options if str(o).split("=", 1)[0] in RESERVED_OPTIONS]
            reasons += [f"options may not set {o} (the scorer sets --format json --tz UTC)" for o in taken]
    if "truth" in data:
        reasons += _validate_truth(data["truth"])
    return reasons


def _paths(case: Path, key: str, value: Any, required: bool) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        return [f"{key} must be a list of paths (strings)"]
    if required and not value:
        return [f"{key} must name at least one path"]
    reasons = []
    root = case.resolve()
    for entry in value:
        target = (case / entry).resolve()
        if Path(entry).is_absolute() or not target.is_relative_to(root):
            reasons.append(f"{key}: {entry!r} is not inside the case directory")
        elif not target.exists():
            reasons.append(f"{key}: {entry!r} does not exist")
    return reasons


def _validate_truth(truth: Any) -> list[str]:
    if not isinstance(truth, dict):
        return ["truth must be a mapping"]
    reasons = [f"truth: missing key {k!r}" for k in TRUTH_KEYS if k not in truth]
    reasons += [f"truth: unknown key {k!r}" for k in sorted(map(str, truth)) if k not in TRUTH_KEYS]
    outcome, rank, cause = truth.get("outcome"), truth.get("rank"), truth.get("cause")
    if "outcome" in truth and outcome not in TRUTH_OUTCOMES:
        reasons.append(f"truth.outcome {outcome!r} is not one of {', '.join(TRUTH_OUTCOMES)}")
    if rank is not None and (isinstance(rank, bool) or not isinstance(rank, int) or rank < 0):
        reasons.append(f"truth.rank {rank!r} is not a rank (an int >= 0) or null")
    if cause is not None and cause not in CAUSES:
        reasons.append(f"truth.cause {cause!r} is not a cause id ({', '.join(CAUSES)}) or null")
    if "sure" in truth and truth["sure"] not in SURE:
        reasons.append(f"truth.sure {truth['sure']!r} is not one of {', '.join(SURE)}")
    if "why" in truth and not (isinstance(truth["why"], str) and truth["why"].strip()):
        reasons.append("truth.why must be a non-empty string")
    if outcome == "clean" and (rank is not None or cause is not None):
        reasons.append("truth.outcome clean takes rank: null and cause: null")
    if outcome == "undetermined" and rank is not None:
        reasons.append("truth.outcome undetermined takes rank: null (a known rank is a first_death or hang)")
    if outcome == "hang" and cause not in (None, "hang"):
        reasons.append(f"truth.outcome hang takes cause: hang or null, not {cause!r}")
    return reasons


# --- the ratchet --------------------------------------------------------------------------------------


def load_ratchet(path: Path = RATCHET) -> dict[str, dict[str, Any]]:
    """case id -> the right answer it gave when the ratchet was last updated."""
    if not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    cases = data.get("cases", {}) if isinstance(data, dict) else {}
    if not isinstance(cases, dict):
        raise ValueError(f"{path}: 'cases' must be an object")
    return {str(k): v for k, v in cases.items()}


def ratchet_entry(answer: Answer) -> dict[str, Any]:
    return {"outcome": answer.outcome, "rank": answer.rank, "cause": answer.cause, "confidence": answer.confidence}


def regressions(
    ratchet: Mapping[str, Any], results: Iterable[Result], all_ids: Iterable[str], whole: bool = True
) -> list[str]:
    """Cases listed in the ratchet that were scored and are not right now; with `whole` (every case was in
    scope), also those that no longer exist."""
    scored = {r.case.id: r for r in results}
    existing = set(all_ids)
    lost = {cid for cid in ratchet if cid in scored and not scored[cid].right}
    if whole:
        lost |= {cid for cid in ratchet if cid not in existing}
    return sorted(lost)


def updated_ratchet(
    ratchet: Mapping[str, Any], results: Iterable[Result], all_ids: Iterable[str]
) -> dict[str, dict[str, Any]]:
    """The ratchet with the scored cases replaced by their current right set; unscored existing cases kept.
    Held-out cases never enter it: a ratchet on them would make them cases to tune against."""
    results = [r for r in results if r.case.corpus != "holdout"]
    scored = {r.case.id for r in results}
    existing = set(all_ids)
    kept = {cid: entry for cid, entry in ratchet.items() if cid not in scored and cid in existing}
    kept.update({r.case.id: ratchet_entry(r.answer) for r in results if r.right})
    return dict(sorted(kept.items()))


def write_ratchet(cases: Mapping[str, Any], path: Path = RATCHET) -> None:
    doc = {
        "about": "Cases rankautopsy answers right (benchmarks/accuracy/README.md). tests/test_accuracy.py fails "
        "when one of them is no longer right. Rewrite only with score.py --update-ratchet, after a change "
        "made more cases right.",
        "cases": dict(sorted(cases.items())),
    }
    path.write_text(json.dumps(doc, indent=2, sort_keys=False) + "\n", encoding="utf-8")


# --- the summary --------------------------------------------------------------------------------------


@dataclass
class Tally:
    cases: int = 0
    right: int = 0
    determinate: int = 0
    rank_ok: int = 0
    with_cause: int = 0
    cause_ok: int = 0
    time_judged: int = 0
    time_held: int = 0
    time_wrong: int = 0

    def add(self, r: Result) -> None:
        self.cases += 1
        self.right += r.right
        self.determinate += r.determinate
        self.rank_ok += r.rank_ok
        self.with_cause += r.case.truth.cause is not None
        self.cause_ok += r.cause_ok
        self.time_judged += r.time_judged
        self.time_held += r.time_held is True
        self.time_wrong += r.time_held is False

    def time_text(self) -> str:
        unknown = self.time_judged - self.time_held - self.time_wrong
        return f"{self.time_held} hold, {self.time_wrong} wrong, {unknown} unknown (of {self.time_judged})"


@dataclass
class Summary:
    results: list[Result]
    total: Tally = field(default_factory=Tally)
    by_corpus: dict[str, Tally] = field(default_factory=dict)
    by_launcher: dict[str, Tally] = field(default_factory=dict)
    calibration: dict[str, list[int]] = field(default_factory=dict)  # confidence -> [answers, right, wrong]

    @property
    def misses(self) -> list[Result]:
        return [r for r in self.results if not r.right]

    @property
    def wrong_at_high(self) -> int:
        return self.calibration.get("high", [0, 0, 0])[2]


def summarise(results: Iterable[Result]) -> Summary:
    ordered = sorted(results, key=lambda r: r.case.id)
    summary = Summary(ordered)
    summary.calibration = {level: [0, 0, 0] for level in CONFIDENCES}
    for r in ordered:
        summary.total.add(r)
        summary.by_corpus.setdefault(r.case.corpus, Tally()).add(r)
        summary.by_launcher.setdefault(r.case.launcher, Tally()).add(r)
        level = ERROR_RUN if r.answer.error is not None else (r.answer.confidence or "none")
        row = summary.calibration.setdefault(level, [0, 0, 0])
        row[0] += 1
        row[1 if r.right else 2] += 1
    summary.by_corpus = dict(sorted(summary.by_corpus.items()))
    summary.by_launcher = dict(sorted(summary.by_launcher.items()))
    return summary


def fraction(k: int, n: int) -> str:
    return "—" if n == 0 else f"{k}/{n} ({100 * k / n:.1f}%)"


def truth_text(t: Truth) -> str:
    return f"{t.outcome}/{_r(t.rank)}/{t.cause or '-'}"


def answer_text(a: Answer) -> str:
    if a.error is not None:
        return "error"
    return f"{a.outcome}/{_r(a.rank)}/{a.cause or '-'}/{a.confidence or '-'}"


def _r(rank: int | None) -> str:
    return "-" if rank is None else str(rank)


def _why(a: Answer) -> str:
    if a.error is not None:
        return a.error
    return a.note or "(no reasoning or note given)"


# --- reports ------------------------------------------------------------------------------------------


def render_text(summary: Summary, problems: Sequence[CaseError], ratchet_lines: Sequence[str], commit: str) -> str:
    """The compact plain-text report (deterministic: no times, no dates)."""
    t = summary.total
    by_corpus = ", ".join(f"{name} {tally.cases}" for name, tally in summary.by_corpus.items())
    out = [
        f"rankautopsy accuracy at {commit}: {t.cases} case(s)" + (f" ({by_corpus})" if by_corpus else ""),
        f"  right answers     {fraction(t.right, t.cases)}",
        f"  rank accuracy     {fraction(t.rank_ok, t.determinate)}",
        f"  cause accuracy    {fraction(t.cause_ok, t.with_cause)}",
        f"  wrong at high     {summary.wrong_at_high}",
        f"  death time        {t.time_text()}",
        "",
        "calibration (confidence: answers right wrong)",
    ]
    out += [f"  {level:<8} {row[0]:>4} {row[1]:>5} {row[2]:>5}" for level, row in summary.calibration.items()]
    for title, table in (("corpus", summary.by_corpus), ("launcher", summary.by_launcher)):
        out += ["", f"by {title} (cases, right, rank accuracy, cause accuracy)"]
        width = max([len(name) for name in table] + [8])
        out += [
            f"  {name:<{width}} {x.cases:>4}  right {fraction(x.right, x.cases):<16} "
            f"rank {fraction(x.rank_ok, x.determinate):<16} cause {fraction(x.cause_ok, x.with_cause)}"
            for name, x in table.items()
        ]
    misses = summary.misses
    out += ["", f"misses ({len(misses)})"]
    for r in misses:
        out.append(f"  {r.case.id}: truth {truth_text(r.case.truth)}  tool {answer_text(r.answer)}")
        if why := _why(r.answer):
            out.append(f"      {_one_line(why, 200)}")
    if wrong_times := [r for r in summary.results if r.time_held is False]:
        out += ["", f"death times that do not hold the injected time ({len(wrong_times)})"]
        out += [
            f"  {r.case.id}: injected {r.case.died_at:%H:%M:%S.%f}, tool {_time_text(r.answer)}" for r in wrong_times
        ]
    if problems:
        out += ["", f"malformed cases ({len(problems)})"]
        out += [f"  {p}" for p in problems]
    if ratchet_lines:
        out += ["", *ratchet_lines]
    return "\n".join(out) + "\n"


def _time_text(a: Answer) -> str:
    if a.time is None:
        return "no time"
    earliest, latest = a.time
    return f"{earliest:%H:%M:%S.%f}..{latest:%H:%M:%S.%f}" + (f" (open {a.time_open})" if a.time_open else "")


def _md(text: str) -> str:
    return _one_line(text, 240).replace("|", "\\|").replace("`", "'")


def render_markdown(
    summary: Summary, problems: Sequence[CaseError], commit: str, date: str, scope: str, seconds: float
) -> str:
    t = summary.total
    lines = [
        "# rankautopsy accuracy",
        "",
        f"Written by `python benchmarks/accuracy/score.py --write` on {date}, rankautopsy commit `{commit}`, "
        f"scope: {scope}.",
        "",
        "## How it was measured",
        "",
        "Every case under `benchmarks/accuracy/<corpus>/<case-id>/` (its logs and a `case.yaml` with the truth a "
        "careful human established; format in `benchmarks/accuracy/README.md`) was run through the real CLI, in "
        "process, from the case directory: `rankautopsy diagnose ARGS [--dmesg P ...] OPTIONS --format json --tz "
        "UTC`, with no user rule packs. Its JSON verdict was scored against the truth:",
        "",
        DEFINITIONS.rstrip(),
        "",
        f"{t.cases} case(s) in {seconds:.1f} s ({seconds / t.cases if t.cases else 0:.2f} s per case).",
        "",
        "## Headline",
        "",
        "| measure | value |",
        "|---|---|",
        f"| right answers | {fraction(t.right, t.cases)} |",
        f"| rank accuracy | {fraction(t.rank_ok, t.determinate)} |",
        f"| cause accuracy | {fraction(t.cause_ok, t.with_cause)} |",
        f"| **wrong answers at high confidence** | **{summary.wrong_at_high}** |",
        f"| death time (injected time held) | {t.time_text()} |",
        "",
        "## Calibration",
        "",
        "| tool confidence | answers | right | wrong |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {level} | {a} | {r} | {w} |" for level, (a, r, w) in summary.calibration.items()]
    for title, table in (("corpus", summary.by_corpus), ("launcher", summary.by_launcher)):
        lines += [
            "",
            f"## By {title}",
            "",
            f"| {title} | cases | right | rank accuracy | cause accuracy |",
            "|---|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {name} | {x.cases} | {fraction(x.right, x.cases)} | {fraction(x.rank_ok, x.determinate)} "
            f"| {fraction(x.cause_ok, x.with_cause)} |"
            for name, x in table.items()
        ]
    misses = summary.misses
    lines += ["", f"## Misses ({len(misses)})", ""]
    if misses:
        lines += [
            "| case | truth (outcome/rank/cause) | tool (outcome/rank/cause/confidence) "
            "| tool's first reasoning line |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| `{r.case.id}` | {truth_text(r.case.truth)} | {answer_text(r.answer)} | {_md(_why(r.answer))} |"
            for r in misses
        ]
    else:
        lines.append("None.")
    if problems:
        lines += ["", f"## Malformed cases ({len(problems)})", ""]
        lines += [f"- {_md(str(p))}" for p in problems]
    lines += [
        "",
        "## Every case",
        "",
        "| case | corpus | launcher | truth | tool | right |",
        "|---|---|---|---|---|---|",
    ]
    lines += [
        f"| `{r.case.id}` | {r.case.corpus} | {r.case.launcher} | {truth_text(r.case.truth)} "
        f"| {answer_text(r.answer)} | {'yes' if r.right else '**no**'} |"
        for r in summary.results
    ]
    return "\n".join(lines) + "\n"


def tool_commit() -> str:
    """The git commit of the rankautopsy package being measured, `+dirty` when its code or rules differ."""
    import rankautopsy

    repo = Path(rankautopsy.__file__).resolve().parent.parent
    try:
        head = _git(repo, "rev-parse", "--short=12", "HEAD")
        dirty = _git(repo, "status", "--porcelain", "--", "rankautopsy", "rules")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+dirty" if dirty else "")


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, timeout=30
    ).stdout.strip()


# --- the command ----------------------------------------------------------------------------------------


def score(
    root: Path = DEFAULT_ROOT, corpus: str = "all", case_id: str | None = None
) -> tuple[list[Result], list[CaseError], list[str]]:
    """Run and score every case in scope: (results, malformed cases, ids of every well-formed case)."""
    cases, problems = discover(root, corpus)
    all_ids = [c.id for c in discover(root, "all")[0]]
    if case_id is not None:
        cases = [c for c in cases if c.id == case_id]
        problems = [p for p in problems if p.path.name == case_id or p.path.parent.name == case_id]
    return [run_case(c) for c in cases], problems, all_ids


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", choices=[*CORPORA, "all"], default="all")
    parser.add_argument("--case", dest="case_id", metavar="ID", help="score only this case")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="corpus root (default: %(default)s)")
    parser.add_argument("--write", action="store_true", help=f"also write {REPORT.name}")
    parser.add_argument("--update-ratchet", action="store_true", help="rewrite ratchet.json with the right set")
    parser.add_argument("--ratchet", type=Path, help="ratchet file (default: ratchet.json under --root)")
    parser.add_argument("--report", type=Path, default=None, help="where --write writes (default: %(default)s)")
    args = parser.parse_args(argv)
    root: Path = args.root.resolve()
    ratchet_path: Path = args.ratchet or root / "ratchet.json"
    report_path: Path = args.report or (REPORT if root == DEFAULT_ROOT else root / "ACCURACY.md")
    if not root.is_dir():
        print(f"score.py: error: no corpus root {root}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    results, problems, all_ids = score(root, args.corpus, args.case_id)
    seconds = time.perf_counter() - started
    if args.case_id is not None and not results and not problems:
        print(f"score.py: error: no case {args.case_id!r} in corpus {args.corpus}", file=sys.stderr)
        return 2
    ratchet = load_ratchet(ratchet_path)
    lost = regressions(ratchet, results, all_ids, whole=args.case_id is None and args.corpus == "all")
    summary = summarise(results)
    newly = sorted(r.case.id for r in results if r.right and r.case.id not in ratchet)
    ratchet_lines = [f"ratchet: {len(ratchet)} case(s) listed, {len(lost)} no longer right, {len(newly)} newly right"]
    ratchet_lines += [f"  NO LONGER RIGHT: {cid}" for cid in lost]
    ratchet_lines += [f"  newly right: {cid}" for cid in newly]
    if args.update_ratchet:
        write_ratchet(updated_ratchet(ratchet, results, all_ids), ratchet_path)
        ratchet_lines.append(f"ratchet updated: {ratchet_path}")
    commit = tool_commit()
    sys.stdout.write(render_text(summary, problems, ratchet_lines, commit))
    per_case = seconds / len(results) if results else 0.0
    print(f"score.py: {len(results)} case(s) in {seconds:.1f} s ({per_case:.2f} s per case)", file=sys.stderr)
    if args.write:
        scope = f"corpus {args.corpus}" + (f", case {args.case_id}" if args.case_id else "")
        date = datetime.now(UTC).strftime("%Y-%m-%d")
        report_path.write_text(render_markdown(summary, problems, commit, date, scope, seconds), encoding="utf-8")
        print(f"score.py: wrote {report_path}", file=sys.stderr)
    return 1 if problems or (lost and not args.update_ratchet) else 0


if __name__ == "__main__":
    raise SystemExit(main())
