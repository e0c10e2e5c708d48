"""The fuzzing suite (tests/fuzz): a bounded run in CI, the long run behind `-m fuzz_long`, and every
crash the fuzzer found kept as a regression example. Each case runs in-process under a time bound and
must end in a diagnosis or a documented usage error, identically twice."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fuzz import corpus
from fuzz.harness import FAILURES, Case, Runner
from fuzz.strategies import cases
from hypothesis import HealthCheck, given, settings

CI_CASES = int(os.environ.get("RANKAUTOPSY_FUZZ_CASES", "40"))
LONG_CASES = int(os.environ.get("RANKAUTOPSY_FUZZ_LONG_CASES", "5000"))


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runner]:
    warm = Runner(tmp_path_factory.mktemp("fuzz"), seconds=20.0)
    warm.warm_up()
    yield warm


def _check(runner: Runner, case: Case) -> None:
    result = runner.run(case)
    assert result.kind not in FAILURES, f"{result.kind}: {case.label}: {result.detail}"


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(case=cases())
def test_generated_inputs_of_every_kind(runner: Runner, case: Case) -> None:
    _check(runner, case)


@pytest.mark.parametrize("index", range(CI_CASES))
def test_mutated_fixtures(runner: Runner, index: int) -> None:
    _check(runner, corpus.mutated_case(2026, index))


@pytest.mark.fuzz_long
def test_mutated_fixtures_long(runner: Runner, request: pytest.FixtureRequest) -> None:
    if "fuzz_long" not in (request.config.getoption("-m") or ""):
        pytest.skip("the long fuzz run: pytest -m fuzz_long (RANKAUTOPSY_FUZZ_LONG_CASES cases)")
    failed = []
    for index in range(LONG_CASES):
        case = corpus.mutated_case(7, index)
        result = runner.run(case)
        if result.kind in FAILURES:
            failed.append(f"{index}: {result.kind}: {case.label}: {result.detail}")
    assert not failed, "\n".join(failed[:20])


def test_the_mutation_corpus_is_deterministic() -> None:
    assert corpus.mutated_case(3, 17) == corpus.mutated_case(3, 17)
    assert corpus.mutated_case(3, 17) != corpus.mutated_case(3, 18)


def test_the_harness_reports_a_crash_and_a_hang(runner: Runner, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from fuzz import harness

    case = Case((("rank_0.log", b"step 1\n"),))
    monkeypatch.setattr(harness, "diagnose", lambda options: 1 / 0)
    assert runner.run(case).kind == "crash"
    quick = Runner(runner.workdir, seconds=0.2)

    def spin(options: object) -> None:  # Python bytecode on the CPU (a C loop would not see the signal)
        while True:
            pass

    monkeypatch.setattr(harness, "diagnose", spin)
    assert quick.run(case).kind == "hang"
    monkeypatch.setattr(harness, "diagnose", lambda options: time.sleep(60))  # blocks: the wall bound
    assert quick.run(case).kind == "hang"


# ---- what the fuzzer found: each a regression example ----

_LAUGHS = b"a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + b"".join(
    b"a%d: &a%d [" % (i, i) + b", ".join([b"*a%d" % (i - 1)] * 10) + b"]\n" for i in range(1, 10)
)
FOUND = {
    "file-name-escapes": Case((("rank_0\x1b]0;t\x07\u202e.log", b"step 1\nValueError: x\n"),)),
    "deep-error-json": Case((("attempt_0/1/error.json", b"[" * 100_000 + b"]" * 100_000), ("r.log", b"x\n"))),
    "aliased-complex-key-pack": Case((("rank_0.log", b"step 1\n"),), pack=_LAUGHS + b"rules:\n  - ? *a9\n    : x\n"),
    "cr-packed-control-byte": Case((("console.log", b"\x07" + b"x\r" * 200_000 + b"\nValueError: y\n"),)),
    "huge-numbers": Case((("console.log", b"[rank" + b"9" * 5000 + b"]: step " + b"9" * 5000 + b"\n"),)),
    "rank-prefix-4301-digits": Case((("rank_2.log", b"step 1\n[rank" + b"1" * 4301 + b"]: step 2\n" * 3),)),
    "nested-groups-pattern": Case(
        (("rank_0.log", b"step 1\n"),),
        pack=b"rules:\n  - id: a.b\n    title: t\n    cause: segfault\n    role: cause\n    pattern: '"
        + b"(" * 5000
        + b"x"
        + b")" * 5000
        + b"'\n    remediation: [x]\n    examples: {match: [x], no_match: [y]}\n",
    ),
    "many-traceback-headers": Case(
        (("node01.log", b"2026-11-29 07:00:00,000 INFO step 7\n" + b"Traceback (most recent call last):\n" * 20_000),)
    ),
    "table-pid-10000-digits": Case(
        (
            (
                "console.log",
                b"Root Cause (first observed failure):\n[0]:\n  time      : 2026-11-29_10:08:22\n  host      : node01\n"
                b"  rank      : 2 (local_rank: 2)\n  exitcode  : 1 (pid: " + b"9" * 10_000 + b")\n",
            ),
        )
    ),
    "year-26-beside-2026": corpus.mutated_case(1, 7604),  # the margin of a frame from year 26 left the calendar
    "utf16-log": Case((("rank_1.log", "step 1\nValueError: bad\n".encode("utf-16")),)),
    "lone-surrogate-in-error-json": Case(
        (
            ("attempt_0/0/error.json", b'{"message": {"message": "ValueError: bad \\udfd6 sample", "extraInfo": {}}}'),
            ("attempt_0/0/stderr.log", b"step 1\nValueError: bad sample\n"),
        )
    ),
    "lone-surrogates-mutated": corpus.mutated_case(1, 69149),  # a JSON \\udfd6 reached a UTF-8 encode
    "pack-int-of-5000-digits": Case(
        (("rank_0.log", b"step 1\n"),), pack=b"rules:\n  - id: a.b\n    title: t\n    since: " + b"9" * 5000 + b"\n"
    ),
    "pack-int-mutated": corpus.mutated_case(1, 88879),  # a 4,697-digit YAML int reached int()
    "quadratic-pattern-under-load": corpus.mutated_case(1, 67300),  # refused or not by the wall clock's load
    "truncated-xz": Case((("rank_1.log.xz", corpus.compress(b"step 1\n" * 100, corpus.random.Random(4))[1][:40]),)),
}


@pytest.mark.parametrize("name", FOUND)
def test_found_by_the_fuzzer(runner: Runner, name: str) -> None:
    _check(runner, FOUND[name])


def test_a_case_writes_only_inside_its_directory(tmp_path: Path) -> None:
    from fuzz.harness import write_case

    options = write_case(Case((("../../escape.log", b"x\n"), ("/abs.log", b"y\n"))), tmp_path / "case")
    assert not (tmp_path / "escape.log").exists()
    assert sorted(p.name for p in Path(options.paths[0]).iterdir()) == ["abs.log", "escape.log"]
