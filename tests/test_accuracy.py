"""The accuracy corpus (benchmarks/accuracy/) against its ratchet, and the scorer's own logic.

`test_corpus_*` run every case once, in process, through benchmarks/accuracy/score.py: a case.yaml that
does not follow the format fails, and so does a case listed in ratchet.json that is no longer right.
The other tests check the scoring definitions on synthetic verdicts and a few cases built from fixtures/.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
SCORE_PY = REPO / "benchmarks" / "accuracy" / "score.py"
FIXTURES = REPO / "fixtures"


def _load_scorer() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rankautopsy_accuracy_score", SCORE_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


score = _load_scorer()


# --- the corpus and its ratchet ----------------------------------------------------------------------


def _case_dirs(root: Path) -> list[Path]:
    return [
        p
        for corpus in score.CORPORA
        if (root / corpus).is_dir()
        for p in sorted((root / corpus).iterdir())
        if p.is_dir() and not p.name.startswith((".", "_"))
    ]


@pytest.fixture(scope="module")
def corpus() -> tuple[list[Any], list[Any], list[str]]:
    if not _case_dirs(score.DEFAULT_ROOT):
        pytest.skip(reason="")
    return score.score(score.DEFAULT_ROOT)


def test_corpus_cases_are_well_formed(corpus: tuple[list[Any], list[Any], list[str]]) -> None:
    _, problems, _ = corpus
    if problems:
        pytest.fail("malformed case(s):\n" + "\n".join(f"  {p}" for p in problems), pytrace=False)


def test_corpus_ratchet_holds(corpus: tuple[list[Any], list[Any], list[str]]) -> None:
    results, _, all_ids = corpus
    ratchet = score.load_ratchet(score.RATCHET)
    lost = score.regressions(ratchet, results, all_ids)
    by_id = {r.case.id: r for r in results}
    lines = []
    for cid in lost:
        r = by_id.get(cid)
        if r is None:
            lines.append(f"  {cid}: listed in ratchet.json but no such case (or it is malformed)")
        else:
            why = score._why(r.answer)
            lines.append(
                f"  {cid}: was {ratchet[cid]}, now tool {score.answer_text(r.answer)} vs truth "
                f"{score.truth_text(r.case.truth)}" + (f" — {why}" if why else "")
            )
    if lost:
        pytest.fail(
            "case(s) listed in benchmarks/accuracy/ratchet.json are no longer right:\n" + "\n".join(lines) + "\n"
            "fix the regression; update the ratchet only when a change makes more cases right (README there)",
            pytrace=False,
        )


def test_corpus_death_times_hold(corpus: tuple[list[Any], list[Any], list[str]]) -> None:
    """Where a real job's fault time is known and the tool names its rank with a time, the time holds it."""
    results, _, _ = corpus
    wrong = [
        f"  {r.case.id}: injected {r.case.died_at}, tool {score._time_text(r.answer)}"
        for r in results
        if r.time_held is False
    ]
    assert not wrong, "death times that do not hold the injected time:\n" + "\n".join(wrong)
    assert sum(r.time_held is True for r in results) >= 40  # most are bounded: the check is not vacuous


def test_ratchet_file_is_sorted_json() -> None:
    if not score.RATCHET.is_file():
        return
    data = json.loads(score.RATCHET.read_text())
    assert list(data["cases"]) == sorted(data["cases"])
    for entry in data["cases"].values():
        assert set(entry) == {"outcome", "rank", "cause", "confidence"}


# --- the scoring definitions on synthetic verdicts ---------------------------------------------------


def v1(rank: int | None = None, cause: str | None = None, confidence: str = "high") -> dict[str, Any]:
    """A schema-1 document: no outcome; first_death null when neither rank nor cause is given."""
    first = None if rank is None and cause is None else {"rank": rank, "cause": cause}
    return {
        "schema": 1,
        "verdict": {"first_death": first, "confidence": confidence, "reasoning": ["why 1"], "notes": []},
    }


def v2(outcome: str, rank: int | None = None, cause: str | None = None, confidence: str = "medium") -> dict[str, Any]:
    first = None if rank is None and cause is None else {"rank": rank, "cause": cause}
    return {"schema": 2, "verdict": {"outcome": outcome, "first_death": first, "confidence": confidence}}


def T(outcome: str, rank: int | None, cause: str | None) -> Any:
    return score.Truth(outcome, rank, cause, "high", "synthetic")


JUDGEMENTS = [
    # truth first_death with a rank and a cause
    ("fd-exact", T("first_death", 1, "segfault"), v1(1, "segfault"), True),
    ("fd-other-rank", T("first_death", 1, "segfault"), v1(0, "segfault"), False),
    ("fd-other-cause", T("first_death", 1, "segfault"), v1(1, "python_exception"), False),
    ("fd-nothing-found", T("first_death", 1, "segfault"), v1(), False),
    ("fd-no-rank-named", T("first_death", 1, "segfault"), v1(None, "segfault"), False),
    ("fd-schema2", T("first_death", 1, "segfault"), v2("first_death", 1, "segfault"), True),
    ("fd-said-undetermined", T("first_death", 1, "segfault"), v2("undetermined", 1, "segfault"), False),
    ("fd-as-hang-outcome", T("first_death", 1, "segfault"), v2("hang", 1, "segfault"), True),
    # truth first_death with unknown cause / unknown rank
    ("fd-cause-unknown", T("first_death", 2, None), v1(2, "killed"), True),
    ("fd-cause-unknown-rank-wrong", T("first_death", 2, None), v1(3, "killed"), False),
    ("fd-rank-unknown-right", T("first_death", None, "host_oom"), v1(None, "host_oom"), True),
    ("fd-rank-unknown-named", T("first_death", None, "host_oom"), v1(0, "host_oom"), False),
    ("fd-rank-unknown-undetermined", T("first_death", None, "host_oom"), v2("undetermined", None, "host_oom"), True),
    ("fd-rank-unknown-und-other", T("first_death", None, "host_oom"), v2("undetermined", None, "killed"), False),
    ("fd-rank-unknown-und-no-cause", T("first_death", None, "host_oom"), v2("undetermined"), False),
    # truth hang
    ("hang-schema1", T("hang", 2, "hang"), v1(2, "hang"), True),
    ("hang-schema2", T("hang", 2, "hang"), v2("hang", 2, "hang"), True),
    ("hang-wrong-rank", T("hang", 2, "hang"), v2("hang", 0, "hang"), False),
    ("hang-said-clean", T("hang", 2, "hang"), v2("clean"), False),
    # truth undetermined
    ("und-undetermined", T("undetermined", None, "python_exception"), v2("undetermined"), True),
    ("und-cause-no-rank", T("undetermined", None, "python_exception"), v1(None, "python_exception"), True),
    ("und-other-cause", T("undetermined", None, "python_exception"), v1(None, "segfault"), False),
    ("und-names-rank", T("undetermined", None, "python_exception"), v1(0, "python_exception"), False),
    ("und-undetermined-names-rank", T("undetermined", None, "python_exception"), v2("undetermined", 1), False),
    ("und-no-failure", T("undetermined", None, "python_exception"), v1(), False),
    ("und-no-cause-any-cause", T("undetermined", None, None), v1(None, "killed"), True),
    ("und-no-cause-hang-rank", T("undetermined", None, None), v2("hang", 3, "hang"), False),
    # truth clean
    ("clean-schema1-null", T("clean", None, None), v1(), True),
    ("clean-clean", T("clean", None, None), v2("clean", confidence="high"), True),
    ("clean-no-failure", T("clean", None, None), v2("no_failure"), True),
    ("clean-first-death", T("clean", None, None), v1(0, "python_exception"), False),
    ("clean-undetermined", T("clean", None, None), v2("undetermined"), False),
]


def _timed(earliest: str, latest: str, open_end: str | None = None, rank: int = 1) -> dict[str, Any]:
    doc = v2("first_death", rank, "segfault")
    doc["verdict"]["first_death"]["time"] = {"earliest": f"2026-12-01T{earliest}Z", "latest": f"2026-12-01T{latest}Z"}
    if open_end:
        doc["verdict"]["first_death"]["time_open"] = open_end
    return doc


@pytest.mark.parametrize(
    ("doc", "held"),
    [
        (_timed("10:00:00.000000", "10:00:02.000000"), True),
        (_timed("10:00:01.501000", "10:00:02.000000"), True),  # 1 ms: the stamps' resolution
        (_timed("10:00:01.502000", "10:00:02.000000"), False),
        (_timed("10:00:00.000000", "10:00:01.400000"), False),
        (_timed("10:00:02.000000", "10:00:09.000000", "below"), True),  # only its upper end bounds
        (_timed("10:00:00.000000", "10:00:01.000000", "below"), False),
        (_timed("10:00:01.000000", "10:00:01.000000", "above"), True),
        (_timed("10:00:02.000000", "10:00:09.000000", "above"), False),
        (v2("first_death", 1, "segfault"), None),  # no time: unknown, never wrong
        (_timed("10:00:00.000000", "10:00:01.000000", rank=0), None),  # another rank: not judged
    ],
)
def test_death_time_holds_the_injected_time(doc: dict[str, Any], held: bool | None) -> None:
    died = score._injected_time([{"kind": "segv", "time": "2026-12-01 10:00:01.500 UTC"}])
    case = score.Case("c", "real", "torchrun", Path("."), ("logs",), T("first_death", 1, "segfault"), died_at=died)
    result = score.Result(case, score.answer_from_json(doc))
    assert result.time_held is held
    assert result.time_judged is (held is not None or "time" not in doc["verdict"]["first_death"])


@pytest.mark.parametrize("injected", [None, [], [{"time": "2026-12-01 10:00:01"}], [{"time": 3}], "x"])
def test_no_injected_time_is_no_death_time(injected: Any) -> None:
    assert score._injected_time(injected) is None


@pytest.mark.parametrize(("truth", "doc", "right"), [j[1:] for j in JUDGEMENTS], ids=[j[0] for j in JUDGEMENTS])
def test_right_or_wrong(truth: Any, doc: dict[str, Any], right: bool) -> None:
    assert score.is_right(truth, score.answer_from_json(doc)) is right


def test_failed_run_is_wrong_even_for_clean() -> None:
    assert not score.is_right(T("clean", None, None), score.Answer(outcome="no_failure", error="exit status 2: boom"))


@pytest.mark.parametrize(
    ("doc", "outcome"),
    [
        (v1(), "no_failure"),
        (v1(3, "host_oom"), "first_death"),
        (v1(None, "killed"), "first_death"),
        (v1(2, "hang"), "hang"),
        (v2("undetermined", None, "python_exception"), "undetermined"),
        (v2("clean"), "clean"),
        (v2("first_death", 2, "hang"), "first_death"),  # schema 2 says it: no derivation
    ],
)
def test_outcome_read_or_derived(doc: dict[str, Any], outcome: str) -> None:
    assert score.answer_from_json(doc).outcome == outcome


def test_answer_fields_and_note() -> None:
    a = score.answer_from_json(v1(3, "host_oom", "low"))
    assert (a.rank, a.cause, a.confidence, a.note, a.error) == (3, "host_oom", "low", "why 1", None)
    notes_only = {"verdict": {"first_death": None, "confidence": "high", "reasoning": [], "notes": ["n"]}}
    assert score.answer_from_json(notes_only).note == "n"


@pytest.mark.parametrize("doc", [{}, [], {"verdict": None}, {"verdict": {"first_death": 3}}])
def test_document_without_verdict_is_an_error(doc: Any) -> None:
    answer = score.answer_from_json(doc)
    assert answer.error and answer.outcome is None


def _result(cid: str, truth: Any, doc: dict[str, Any], corpus: str = "real", launcher: str = "torchrun") -> Any:
    case = score.Case(id=cid, corpus=corpus, launcher=launcher, path=Path("/nonexistent"), args=("logs",), truth=truth)
    return score.Result(case, score.answer_from_json(doc))


def test_summary_accuracies_and_calibration() -> None:
    results = [
        _result("a", T("first_death", 1, "segfault"), v1(1, "segfault", "high")),  # right
        _result("b", T("first_death", 2, "host_oom"), v1(2, "killed", "high")),  # rank ok, cause wrong
        _result("c", T("hang", 0, "hang"), v1(3, "hang", "medium"), launcher="mpirun"),  # cause ok only
        _result("d", T("undetermined", None, "killed"), v1(None, "killed", "low"), corpus="public"),  # right
        _result("e", T("clean", None, None), v1(), corpus="public"),  # right (no_failure), high
        _result("f", T("first_death", None, None), v1(0, "abort", "high"), launcher="other"),  # wrong, not determinate
    ]
    s = score.summarise(reversed(results))
    assert [r.case.id for r in s.results] == ["a", "b", "c", "d", "e", "f"]
    t = s.total
    assert (t.cases, t.right, t.determinate, t.rank_ok, t.with_cause, t.cause_ok) == (6, 3, 3, 2, 4, 3)
    assert s.calibration == {"high": [4, 2, 2], "medium": [1, 0, 1], "low": [1, 1, 0]}
    assert s.wrong_at_high == 2
    assert [r.case.id for r in s.misses] == ["b", "c", "f"]
    assert list(s.by_corpus) == ["public", "real"] and s.by_corpus["public"].right == 2
    assert list(s.by_launcher) == ["mpirun", "other", "torchrun"]
    assert s.by_launcher["torchrun"].rank_ok == 2 and s.by_launcher["mpirun"].cause_ok == 1
    text = score.render_text(s, [], [], "abc")
    assert text == score.render_text(score.summarise(results), [], [], "abc")  # deterministic
    assert "wrong at high     2" in text and "b: truth first_death/2/host_oom  tool first_death/2/killed/high" in text
    md = score.render_markdown(s, [], "abc", "2026-01-01", "corpus all", 1.0)
    assert "**Rank accuracy**" in md and "| high | 4 | 2 | 2 |" in md and "`abc`" in md


def test_failed_runs_have_their_own_calibration_row() -> None:
    case = score.Case("x", "real", "torchrun", Path("/nonexistent"), ("logs",), T("first_death", 0, "segfault"))
    s = score.summarise([score.Result(case, score.Answer(outcome=None, error="exit status 2: no such file"))])
    assert s.calibration["error"] == [1, 0, 1] and s.wrong_at_high == 0
    assert "exit status 2: no such file" in score.render_text(s, [], [], "abc")


def test_ratchet_regressions_and_update() -> None:
    right = _result("a", T("first_death", 1, "segfault"), v1(1, "segfault"))
    wrong = _result("b", T("first_death", 1, "segfault"), v1(0, "segfault"))
    ratchet = {"a": {}, "b": {}, "gone": {}, "other": {}}
    ids = ["a", "b", "other"]
    assert score.regressions(ratchet, [right, wrong], ids) == ["b", "gone"]
    assert score.regressions(ratchet, [right, wrong], ids, whole=False) == ["b"]
    held = _result("h", T("first_death", 1, "segfault"), v1(1, "segfault"), corpus="holdout")
    updated = score.updated_ratchet(ratchet, [right, wrong, held], [*ids, "h"])
    assert list(updated) == ["a", "other"]  # a right held-out case stays out: nothing is tuned against it
    assert updated["a"] == {"outcome": "first_death", "rank": 1, "cause": "segfault", "confidence": "high"}


# --- case.yaml validation ------------------------------------------------------------------------------


GOOD: dict[str, Any] = {
    "id": "c1",
    "corpus": "real",
    "launcher": "torchrun",
    "source": "generator",
    "description": "d",
    "args": ["logs"],
    "dmesg": [],
    "options": [],
    "truth": {"outcome": "first_death", "rank": 2, "cause": "python_exception", "sure": "high", "why": "w"},
}


def _write_case(
    root: Path, data: dict[str, Any], name: str = "c1", corpus: str = "real", logs: Path | None = None
) -> Path:
    path = root / corpus / name
    path.mkdir(parents=True)
    if logs is not None:
        shutil.copytree(logs, path / "logs")
    else:
        (path / "logs").mkdir()
        (path / "logs" / "console.log").write_text("hello\n")
    (path / "case.yaml").write_text(yaml.safe_dump(data))
    return path


def _with(**changes: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(GOOD))
    for key, value in changes.items():
        if key.startswith("truth_"):
            data["truth"][key.removeprefix("truth_")] = value
        elif value is _DROP:
            del data[key]
        else:
            data[key] = value
    return data


_DROP = object()


def test_good_case_loads(tmp_path: Path) -> None:
    metadata = {"injected": [{"kind": "segv", "rank": 2}], "ranks": {0: {"pid": 1}}, "exit_status": 1}
    case = score.load_case(_write_case(tmp_path, {**GOOD, **metadata}))
    assert case.truth == score.Truth("first_death", 2, "python_exception", "high", "w")
    assert case.argv() == ["diagnose", "logs", "--format", "json", "--tz", "UTC"]


def test_argv_order_and_paths_inside_the_case(tmp_path: Path) -> None:
    (tmp_path / "real" / "c1").mkdir(parents=True)
    (tmp_path / "real" / "c1" / "k.txt").write_text("")
    path = _write_case(tmp_path, _with(id="c2", dmesg=["../c1/k.txt"]), name="c2")
    assert any("not inside the case directory" in r for r in _reasons(path))
    path3 = _write_case(tmp_path, _with(id="c3", dmesg=["logs/console.log"], options=["--clock-skew", "5"]), name="c3")
    assert score.load_case(path3).argv() == [
        "diagnose", "logs", "--dmesg", "logs/console.log", "--clock-skew", "5", "--format", "json", "--tz", "UTC",
    ]  # fmt: skip


def _reasons(path: Path) -> list[str]:
    with pytest.raises(score.CaseError) as info:
        score.load_case(path)
    return info.value.reasons


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (_with(truth=_DROP), "missing key 'truth'"),
        (_with(args=_DROP), "missing key 'args'"),
        (_with(dmseg=["logs/console.log"]), "unknown key 'dmseg' (did you mean 'dmesg'?)"),
        (_with(option=["--clock-skew", "1"]), "unknown key 'option' (did you mean 'options'?)"),
        (_with(id="other"), "is not the directory name"),
        (_with(corpus="private"), "corpus 'private' is not one of"),
        (_with(corpus="public"), "but the case is under real/"),
        (_with(launcher="slurm"), "launcher 'slurm' is not one of"),
        (_with(source=""), "source must be a non-empty string"),
        (_with(args=[]), "args must name at least one path"),
        (_with(args=["missing.log"]), "args: 'missing.log' does not exist"),
        (_with(args="logs"), "args must be a list of paths"),
        (_with(dmesg=["/etc/hostname"]), "is not inside the case directory"),
        (_with(options=["--format", "terminal"]), "options may not set --format"),
        (_with(options=["--tz=Europe/Paris"]), "options may not set --tz=Europe/Paris"),
        (_with(truth_outcome="crash"), "truth.outcome 'crash' is not one of"),
        (_with(truth_rank=True), "truth.rank True is not a rank"),
        (_with(truth_rank="2"), "truth.rank '2' is not a rank"),
        (_with(truth_cause="collective_timeout"), "truth.cause 'collective_timeout' is not a cause id"),
        (_with(truth_sure="certain"), "truth.sure 'certain' is not one of"),
        (_with(truth_why=""), "truth.why must be a non-empty string"),
        (_with(truth_extra=1), "truth: unknown key 'extra'"),
        (_with(truth_outcome="clean"), "truth.outcome clean takes rank: null and cause: null"),
        (_with(truth_outcome="undetermined"), "truth.outcome undetermined takes rank: null"),
        (_with(truth_outcome="hang"), "truth.outcome hang takes cause: hang or null"),
    ],
)
def test_malformed_case_is_reported(tmp_path: Path, data: dict[str, Any], message: str) -> None:
    reasons = _reasons(_write_case(tmp_path, data))
    assert any(message in r for r in reasons), reasons


def test_discover_reports_bad_yaml_missing_file_and_duplicates(tmp_path: Path) -> None:
    _write_case(tmp_path, GOOD)
    _write_case(tmp_path, _with(corpus="public"), corpus="public")  # same id in the other corpus
    (tmp_path / "real" / "no-yaml").mkdir()
    bad = tmp_path / "real" / "bad-yaml"
    bad.mkdir()
    (bad / "case.yaml").write_text("id: [unclosed\n")
    (tmp_path / "real" / "_helpers").mkdir()  # ignored, like files next to the cases
    (tmp_path / "real" / "job.py").write_text("")
    cases, problems = score.discover(tmp_path)
    assert [c.id for c in cases] == ["c1"]
    text = "\n".join(map(str, problems))
    assert "no-yaml: no case.yaml" in text and "not valid YAML" in text and "duplicate id 'c1'" in text
    assert len(problems) == 3


# --- end to end: the real CLI on cases built from fixtures ----------------------------------------------


def _fixture_case(root: Path, name: str, fixture: str, truth: dict[str, Any], **extra: Any) -> Path:
    data = _with(id=name, **extra)
    data["truth"] = {"sure": "high", "why": "from the fixture's expected.yaml", **truth}
    return _write_case(root, data, name=name, logs=FIXTURES / fixture / "logs")


def test_scorer_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "corpus"
    _fixture_case(
        root, "raise-rank2", "torchrun-raise-rank2", {"outcome": "first_death", "rank": 2, "cause": "python_exception"}
    )
    _fixture_case(root, "clean", "torchrun-clean-finish", {"outcome": "clean", "rank": None, "cause": None})
    _fixture_case(
        root, "deliberately-wrong-truth", "torchrun-raise-rank2", {"outcome": "first_death", "rank": 0, "cause": None}
    )
    _fixture_case(
        root, "run-fails", "torchrun-raise-rank2",
        {"outcome": "first_death", "rank": 2, "cause": None}, options=["--clock-skew", "-1"],
    )  # fmt: skip
    ratchet = root / "ratchet.json"
    assert score.main(["--root", str(root), "--update-ratchet"]) == 0
    listed = json.loads(ratchet.read_text())["cases"]
    assert sorted(listed) == ["clean", "raise-rank2"]
    assert listed["raise-rank2"] == {
        "outcome": "first_death",
        "rank": 2,
        "cause": "python_exception",
        "confidence": "high",
    }
    assert listed["clean"]["outcome"] in ("clean", "no_failure") and listed["clean"]["rank"] is None
    out = capsys.readouterr().out
    assert "misses (2)" in out and "run-fails: truth first_death/2/-  tool error" in out
    assert "--clock-skew" in out and "give zero or more seconds" in out
    assert "deliberately-wrong-truth: truth first_death/0/-  tool first_death/2/python_exception/high" in out

    # the same run again: the ratchet holds, and the report is the same
    assert score.main(["--root", str(root), "--write"]) == 0
    again = capsys.readouterr().out
    assert again.split("\nratchet:")[0] == out.split("\nratchet:")[0]
    assert "ratchet: 2 case(s) listed, 0 no longer right, 0 newly right" in again
    md = (root / "ACCURACY.md").read_text()
    assert "## Misses (2)" in md and "`deliberately-wrong-truth`" in md

    # a listed case that is no longer right fails the run and is named
    data = yaml.safe_load((root / "real" / "raise-rank2" / "case.yaml").read_text())
    data["truth"]["rank"] = 1
    (root / "real" / "raise-rank2" / "case.yaml").write_text(yaml.safe_dump(data))
    assert score.main(["--root", str(root)]) == 1
    assert "NO LONGER RIGHT: raise-rank2" in capsys.readouterr().out
    results, _, ids = score.score(root)
    assert score.regressions(score.load_ratchet(ratchet), results, ids) == ["raise-rank2"]

    # one case, and an unknown one
    assert score.main(["--root", str(root), "--case", "clean"]) == 0
    assert "1 case(s)" in capsys.readouterr().out
    assert score.main(["--root", str(root), "--case", "nope"]) == 2


def test_malformed_case_fails_the_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write_case(tmp_path, _with(launcher="slurm"))
    assert score.main(["--root", str(tmp_path)]) == 1
    assert "malformed cases (1)" in capsys.readouterr().out
