"""Every fixture through the real pipeline and CLI, against the ground truth in its expected.yaml."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_render import validate_schema
from typer.testing import CliRunner

from rankautopsy.cli import app

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SCENARIOS = sorted(p for p in FIXTURES.iterdir() if (p / "expected.yaml").is_file())


def _expected(fixture: Path) -> dict[str, Any]:
    data = yaml.safe_load((fixture / "expected.yaml").read_text())
    assert isinstance(data, dict)
    return data


def run_json(fixture: Path, args: list[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, dict[str, Any]]:
    monkeypatch.chdir(fixture)
    result = CliRunner().invoke(app, ["diagnose", *args, "--format", "json", "--tz", "UTC"])
    assert result.exit_code in (0, 1, 3), result.output
    doc = json.loads(result.stdout)
    validate_schema(doc)
    return result.exit_code, doc


def check(expected: dict[str, Any], status: int, report: dict[str, Any]) -> None:
    verdict = report["verdict"]
    first = verdict["first_death"]
    want = expected["first_death"]
    if want is None:
        assert first is None, verdict
    else:
        assert first is not None, verdict
        assert (first["rank"], first["cause"]) == (want["rank"], want["cause"]), verdict
        assert first["phase"] == expected.get("phase", "training")
        if "detail_contains" in expected:
            assert expected["detail_contains"] in first["detail"]
        assert first["evidence"], "a named death carries its evidence"
    assert status == expected.get("exit_status", 1 if want else 0)
    fates = {r["rank"]: r["fate"] for r in report["ranks"]}
    for rank in expected.get("collateral", []):
        assert fates.get(rank) in ("collateral", "torn_down"), (rank, fates)


@pytest.mark.parametrize("fixture", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_scenario_verdict(fixture: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _expected(fixture)
    status, report = run_json(fixture, list(expected["args"]), monkeypatch)
    check(expected, status, report)


RAW_DMESG = [p for p in SCENARIOS if "boot_time" in _expected(p)]


@pytest.mark.parametrize("fixture", RAW_DMESG, ids=[p.name for p in RAW_DMESG])
def test_raw_dmesg_with_boot_time(fixture: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same verdict from raw monotonic dmesg stamps placed with --boot-time."""
    expected = _expected(fixture)
    args = [a if a != "dmesg.txt" else "dmesg-raw.txt" for a in expected["args"]]
    status, report = run_json(fixture, [*args, "--boot-time", expected["boot_time"]], monkeypatch)
    check(expected, status, report)
    assert not any("seconds since boot" in n for n in report["verdict"]["notes"])


@pytest.mark.parametrize("fixture", RAW_DMESG, ids=[p.name for p in RAW_DMESG])
def test_raw_dmesg_without_boot_time_says_so(fixture: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _expected(fixture)
    args = [a if a != "dmesg.txt" else "dmesg-raw.txt" for a in expected["args"]]
    _, report = run_json(fixture, args, monkeypatch)
    assert any("seconds since boot" in n for n in report["verdict"]["notes"])
    assert report["verdict"]["first_death"]["rank"] == expected["first_death"]["rank"]
