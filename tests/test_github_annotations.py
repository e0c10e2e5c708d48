"""`--format github` through the CLI: one annotation per run, at the decisive line of a real log,
with `file=` relative to `$GITHUB_WORKSPACE`; the step summary carries the detail."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
import yaml
from diagnoses import exception_diagnosis
from test_render_formats import commands
from typer.testing import CliRunner

from rankautopsy.cli import app
from rankautopsy.render.github import render_github, workspace_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REAL = sorted(p for p in FIXTURES.iterdir() if (p / "expected.yaml").is_file())


def run_github(fixture: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, workspace: Path) -> tuple[str, str]:
    expected = yaml.safe_load((fixture / "expected.yaml").read_text())
    summary = tmp_path / "summary.md"
    monkeypatch.chdir(fixture)
    monkeypatch.setenv("GITHUB_WORKSPACE", str(workspace))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = CliRunner().invoke(app, ["diagnose", *expected["args"], "--format", "github", "--tz", "UTC"])
    assert result.exit_code in (0, 1, 3), result.output
    return result.stdout, summary.read_text(encoding="utf-8")


@pytest.mark.parametrize("fixture", REAL, ids=[p.name for p in REAL])
def test_every_fixture_is_one_short_annotation_with_its_detail_in_the_summary(
    fixture: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    out, summary = run_github(fixture, monkeypatch, tmp_path, FIXTURES)
    cmds = commands(out.rstrip("\n"))
    assert len(cmds) == 1
    name, props, msg = cmds[0]
    assert len(msg.split("\n")) <= 5 and len(msg) <= 1200
    assert "Timeouts:" not in msg and "Detection:" not in msg  # the general layers stay in the summary
    if "file" in props:
        assert not props["file"].startswith("/")
        assert props["file"].startswith(f"{fixture.name}/")  # relative to the workspace, not to the cwd
        lines = (FIXTURES / props["file"]).read_text(encoding="utf-8", errors="replace").splitlines()
        decisive = lines[int(props["line"]) - 1]
        assert not decisive.lstrip().startswith("Traceback"), decisive
    if name == "error":
        assert summary.startswith("## ") and "### What to do" in summary


def test_a_real_traceback_is_annotated_at_its_exception_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    out, _ = run_github(FIXTURES / "torchrun-raise-rank2", monkeypatch, tmp_path, FIXTURES)
    _, props, msg = commands(out.rstrip("\n"))[0]
    assert props["file"] == "torchrun-raise-rank2/logs/console.log"
    line = (FIXTURES / props["file"]).read_text(encoding="utf-8").splitlines()[int(props["line"]) - 1]
    assert re.search(r"ValueError: bad sample \d+", line)
    assert msg.startswith("Rank 2 ")


def test_file_is_relative_to_the_workspace_only_when_it_lies_under_it(tmp_path: Path) -> None:
    inside = tmp_path / "ws" / "logs" / "rank_0.log"
    assert workspace_path(str(inside), str(tmp_path / "ws")) == "logs/rank_0.log"
    assert workspace_path(str(inside), str(tmp_path / "elsewhere")) == str(inside)
    assert workspace_path("logs/rank_0.log", "") == "logs/rank_0.log"
    here = Path.cwd()
    assert workspace_path("logs/rank_0.log", str(here.parent)) == f"{here.name}/logs/rank_0.log"


def test_symlinked_workspace_still_relativizes(tmp_path: Path) -> None:
    (tmp_path / "real" / "logs").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    target = tmp_path / "link" / "logs" / "r.log"
    assert workspace_path(str(target), str(tmp_path / "real")) == "logs/r.log"


def test_the_workspace_comes_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_WORKSPACE", str(Path.cwd().parent))
    _, props, _ = commands(render_github(exception_diagnosis()))[0]
    assert props["file"] == f"{Path.cwd().name}/logs/rank_2.log"
    monkeypatch.delenv("GITHUB_WORKSPACE")
    _, props, _ = commands(render_github(exception_diagnosis()))[0]
    assert props["file"] == "logs/rank_2.log"


def test_stdin_is_not_a_file_to_point_at() -> None:
    from dataclasses import replace

    from rankautopsy.model import Evidence, Location

    d = exception_diagnosis()
    fd = d.verdict.first_death
    assert fd is not None
    ev = (Evidence(Location("<stdin>", 3), "ValueError: bad sample 1234"),)
    d = replace(d, verdict=replace(d.verdict, first_death=replace(fd, evidence=ev)), events=())
    _, props, _ = commands(render_github(d, workspace=os.sep))[0]
    assert "file" not in props and "line" not in props
