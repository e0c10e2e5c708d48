"""The JUnit report against the two JUnit schemas CI servers use, kept in tests/schemas/
(their origin is in each file's header): Jenkins' xUnit `junit-10.xsd` and the Apache Ant schema.

Every hand-built diagnosis and every real fixture, through the CLI, must validate against both.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
import yaml
from diagnoses import clean_diagnosis, exception_diagnosis
from test_render_formats import ALL
from typer.testing import CliRunner

from rankautopsy.cli import app
from rankautopsy.model import Cause, Confidence, Diagnosis, Fate, FirstDeath, Outcome, Verdict
from rankautopsy.render._labels import NOT_XML_CHAR
from rankautopsy.render.junit import render_junit, xml_text

xmlschema = pytest.importorskip("xmlschema", reason="the dev extra installs xmlschema")

SCHEMAS = Path(__file__).resolve().parent / "schemas"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REAL = sorted(p for p in FIXTURES.iterdir() if (p / "expected.yaml").is_file())


@cache
def schema(name: str) -> object:
    return xmlschema.XMLSchema10(str(SCHEMAS / name))


def check_valid(text: str, *, ant: bool = True) -> ET.Element:
    names = ["jenkins-junit.xsd", "ant-junit.xsd"] if ant else ["jenkins-junit.xsd"]
    for name in names:
        errors = [str(err.reason) for err in schema(name).iter_errors(text)]  # type: ignore[attr-defined]
        assert not errors, f"{name}: {errors[:3]}"
    return ET.fromstring(text.encode("utf-8"))


def test_the_schemas_reject_what_they_should() -> None:
    """The check can fail: the old report (`skipped` on <testsuites>, no timestamp) is refused."""
    old = (
        '<testsuites name="rankautopsy" tests="1" failures="0" errors="0" skipped="0">'
        '<testsuite name="rankautopsy" tests="1" failures="0" errors="0" skipped="0">'
        '<testcase classname="rankautopsy" name="rank 0"/></testsuite></testsuites>'
    )
    for name in ("jenkins-junit.xsd", "ant-junit.xsd"):
        assert list(schema(name).iter_errors(old)), name  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ALL)
def test_every_diagnosis_validates(name: str) -> None:
    d = ALL[name]()
    suite = check_valid(render_junit(d)).find("testsuite")
    assert suite is not None
    assert suite.get("timestamp") and suite.get("time") and suite.get("hostname")


@pytest.mark.parametrize("fixture", REAL, ids=[p.name for p in REAL])
def test_every_real_fixture_validates(fixture: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = yaml.safe_load((fixture / "expected.yaml").read_text())
    monkeypatch.chdir(fixture)
    result = CliRunner().invoke(app, ["diagnose", *expected["args"], "--format", "junit", "--tz", "UTC"])
    assert result.exit_code in (0, 1, 3), result.output
    root = check_valid(result.stdout)
    failed = {c.get("name") for c in root.iter("testcase") if c.find("failure") is not None}
    want = expected["first_death"]
    if want is None:
        assert failed <= {"job"}
    else:
        assert ("job" if want["rank"] is None else f"rank {want['rank']}") in failed
    skipped = {c.get("name") for c in root.iter("testcase") if c.find("skipped") is not None}
    assert {f"rank {r}" for r in expected.get("collateral", [])} <= skipped | failed


def test_timestamp_time_and_hostname_come_from_the_logs() -> None:
    d = exception_diagnosis()
    suite = ET.fromstring(render_junit(d)).find("testsuite")
    assert suite is not None
    assert suite.get("timestamp") == "2026-11-29T07:00:00"  # torchrun's first line
    assert suite.get("time") == "665.000"  # to the launcher's last line, 07:11:05
    assert suite.get("hostname") == "node02"  # the first death's host
    times = {c.get("name"): c.get("time") for c in suite.iter("testcase")}
    assert times["rank 2"] == "62.345" and times["rank 0"] == "662.380"


def test_collateral_and_torn_down_are_skipped_with_their_story() -> None:
    d = exception_diagnosis()
    suite = ET.fromstring(render_junit(d)).find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "1", "3")
    for r in d.ranks:
        case = suite.find(f"testcase[@name='rank {r.rank}']")
        assert case is not None
        if r.fate is Fate.FIRST_DEATH:
            assert case.find("failure") is not None and case.find("skipped") is None
            continue
        skipped = case.find("skipped")
        assert case.find("failure") is None and skipped is not None
        assert skipped.get("message", "").startswith(f"{r.fate.value.replace('_', ' ')}: {r.summary}")
        assert "a consequence of rank 2's death (exception), not a cause" in skipped.get("message", "")
        assert r.host is not None and f"host: {r.host}" in (skipped.text or "")


def test_the_suite_output_ends_the_verdict_and_lists_every_rank() -> None:
    out = ET.fromstring(render_junit(exception_diagnosis())).findtext("testsuite/system-out") or ""
    assert out.splitlines()[0] == "rank 2 died first: exception (high) — 2 collateral, 1 torn down"
    assert "rank 1 (node01): torn down, last seen 07:01:02.101, step 1234" in out


def test_an_undetermined_job_is_a_failure() -> None:
    d = clean_diagnosis()
    d = replace(d, verdict=Verdict(outcome=Outcome.UNDETERMINED, first_death=None, confidence=Confidence.LOW))
    root = check_valid(render_junit(d))
    job = root.find("testsuite/testcase[@name='job']")
    assert job is not None and job.find("failure") is not None
    assert root.find("testsuite").get("failures") == "1"  # type: ignore[union-attr]


def test_without_any_time_only_the_timestamp_is_missing() -> None:
    d = exception_diagnosis()
    fd = FirstDeath(rank=2, cause=Cause.SEGFAULT, rule="kernel.segfault")
    d = replace(
        d,
        events=(),
        ranks=tuple(replace(r, last_seen=None) for r in d.ranks),
        verdict=Verdict(outcome=Outcome.FIRST_DEATH, first_death=fd, confidence=Confidence.LOW),
    )
    suite = check_valid(render_junit(d), ant=False).find("testsuite")
    assert suite is not None and suite.get("timestamp") is None and suite.get("time") == "0.000"


def test_the_forbidden_class_is_the_complement_of_xmls_char_production() -> None:
    """XML 1.0's Char: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]."""

    def allowed(c: int) -> bool:
        return c in (0x9, 0xA, 0xD) or 0x20 <= c <= 0xD7FF or 0xE000 <= c <= 0xFFFD or 0x10000 <= c <= 0x10FFFF

    forbidden = NOT_XML_CHAR.findall("".join(map(chr, range(0x110000))))
    assert [ord(c) for c in forbidden] == [c for c in range(0x110000) if not allowed(c)]


def test_xml_forbidden_code_points_are_replaced_not_dropped() -> None:
    assert xml_text("a\ufffeb\uffffc\ud800d") == "a\ufffdb\ufffdc\ufffdd"
    assert xml_text("tab\tok\nnewline") == "tab\tok\nnewline"


def test_an_odd_host_still_makes_a_valid_hostname() -> None:
    d: Diagnosis = exception_diagnosis()
    fd = d.verdict.first_death
    assert fd is not None
    d = replace(d, verdict=replace(d.verdict, first_death=replace(fd, host="   ")))
    d = replace(d, ranks=tuple(replace(r, host=None) for r in d.ranks))
    suite = check_valid(render_junit(d)).find("testsuite")
    assert suite is not None and suite.get("hostname") == "?"
