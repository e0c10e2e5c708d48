"""`rankautopsy rules list|explain|check|test`, run through the real `main()` and its one error handler."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from test_rulepack_errors import BROKEN_PACKS

from rankautopsy import cputime
from rankautopsy.cli import main
from rankautopsy.errors import RulePackError
from rankautopsy.pipeline import Options, diagnose
from rankautopsy.rulepacks.catalogue import catalogue_entry
from rankautopsy.rulepacks.loader import load_rules
from rankautopsy.rulepacks.ruletest import run_examples
from rankautopsy.rulepacks.sources import ENV_VAR, rule_sources, user_rule_paths
from rankautopsy.scan import matcher
from rankautopsy.sources import prefixes

PACKS = Path(__file__).parent / "rulepacks"
BUILTIN = load_rules()


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str

    def error_lines(self) -> list[str]:
        assert self.code == 2, (self.code, self.out, self.err)
        assert "Traceback" not in self.err
        lines = self.err.splitlines()
        assert all(line.startswith("rankautopsy: error: ") for line in lines), lines
        return [line.removeprefix("rankautopsy: error: ") for line in lines]


Cli = Callable[..., Run]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Cli:
    """Run `rankautopsy ARGS` in-process from an empty directory, without RANKAUTOPSY_RULES."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> Run:
        monkeypatch.setattr(sys, "argv", ["rankautopsy", *args])
        with pytest.raises(SystemExit) as exited:
            main()
        captured = capsys.readouterr()
        return Run(int(exited.value.code or 0), captured.out, captured.err)

    return run


def _line_of(rule_id: str) -> int:
    source = next(rule.source for rule in BUILTIN if rule.id == rule_id)
    assert source is not None
    return source.line


# ---- list ----


def test_list_text_has_a_row_per_rule_sorted_by_id(cli: Cli) -> None:
    result = cli("rules", "list")
    assert result.code == 0, result.err
    header, *rows = result.out.splitlines()
    assert header.split() == ["ID", "CAUSE", "ROLE", "DEFINED", "AT", "TITLE"]
    assert [row.split()[0] for row in rows] == sorted(rule.id for rule in BUILTIN)
    oom = next(row for row in rows if row.startswith("kernel.oom-killer "))
    assert oom.split()[1:4] == ["host_oom", "cause", f"rules/kernel.yaml:{_line_of('kernel.oom-killer')}"]
    assert oom.endswith("The kernel OOM-killer killed a process")


def test_list_json_is_the_sorted_catalogue_with_user_rules(cli: Cli) -> None:
    result = cli("rules", "list", "--format", "json", "--rules", str(PACKS / "fluxcap.yaml"))
    assert result.code == 0, result.err
    listed = json.loads(result.out)
    assert [entry["id"] for entry in listed] == sorted([*(r.id for r in BUILTIN), "inhouse.fluxcap-quench"])
    assert next(e for e in listed if e["id"] == "inhouse.fluxcap-quench") == {
        "id": "inhouse.fluxcap-quench",
        "title": "Flux capacitor quench",
        "cause": "python_exception",
        "role": "cause",
        "status": "stable",
        "since": "",
        "aliases": [],
        "builtin": False,
        "defined_at": {"file": str(PACKS / "fluxcap.yaml"), "line": 2},
    }
    assert [e for e in listed if e["builtin"]] == [catalogue_entry(r) for r in sorted(BUILTIN, key=lambda r: r.id)]


def test_list_reads_packs_named_by_the_environment(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, str(PACKS / "override.yaml"))
    ids = [entry["id"] for entry in json.loads(cli("rules", "list", "-f", "json").out)]
    assert "kernel.oom-killer" in ids
    assert "kernel.oom-reaper" not in ids


def test_list_with_a_broken_user_pack_is_exit_2(cli: Cli) -> None:
    path = PACKS / "unknown_cause.yaml"
    assert cli("rules", "list", "--rules", str(path)).error_lines() == [
        f"{path}:4: inhouse.gpu-memory: unknown cause 'gpu_oom' (did you mean 'cuda_oom'?)"
    ]


# ---- explain ----


def test_explain_prints_ruff_style_sections(cli: Cli) -> None:
    result = cli("rules", "explain", "kernel.oom-killer")
    assert result.code == 0, result.err
    headings = [line for line in result.out.splitlines() if line.startswith("#")]
    assert headings == [
        "# kernel.oom-killer: The kernel OOM-killer killed a process",
        "## What it detects",
        "## Why it matters",
        "## Example",
        "## Remediation",
        "## False positives",
        "## References",
        "## Defined at",
    ]
    assert "Cause `host_oom`: out of host memory" in result.out
    assert "    -> pid='4242', comm='pt_main_thread'" in result.out
    assert "Does not match:\n\n    oom_reaper: reaped process 4242" in result.out
    defined = f"rules/kernel.yaml:{_line_of('kernel.oom-killer')} (built-in; status stable, since 0.1)"
    assert result.out.rstrip().endswith(defined)


def test_explain_says_what_a_rule_does_to_the_timeline_and_what_it_states(cli: Cli) -> None:
    result = cli("rules", "explain", "torchrun.mp-spawn-raised")
    assert result.code == 0, result.err
    assert "Effects: exit\nStates on every line: exit_cause='python_exception', exitcode='1'\n" in result.out
    data = json.loads(cli("rules", "explain", "torchrun.mp-spawn-raised", "-f", "json").out)
    assert (data["effects"], data["facts"]) == (["exit"], {"exit_cause": "python_exception", "exitcode": "1"})


def test_explain_says_a_rule_is_tried_on_the_opening_line_alone(cli: Cli) -> None:
    result = cli("rules", "explain", "python.traceback-cut-top")
    assert result.code == 0, result.err
    assert "Matches only an input's opening line (its first with words)" in result.out
    assert json.loads(cli("rules", "explain", "python.traceback-cut-top", "-f", "json").out)["at_start"] is True
    assert json.loads(cli("rules", "explain", "python.traceback", "-f", "json").out)["at_start"] is False


def test_explain_finds_a_user_rule_by_the_alias_it_took_over(cli: Cli) -> None:
    result = cli("rules", "explain", "kernel.segfault", "--rules", str(PACKS / "alias_override.yaml"))
    assert result.code == 0, result.err
    assert result.out.startswith("# inhouse.segv: Segfault, in-house wording\n")
    assert "Also known as: kernel.segfault" in result.out
    assert f"{PACKS / 'alias_override.yaml'}:2 (user pack; status stable)" in result.out


def test_explain_json_has_the_examples_with_their_extracted_facts(cli: Cli) -> None:
    result = cli("rules", "explain", "inhouse.fluxcap-quench", "-f", "json", "--rules", str(PACKS / "fluxcap.yaml"))
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["examples"] == {
        "match": [{"line": "ERROR FLUXCAP-7731 reactor quench on shard 4", "facts": {}, "extracted": {"code": "7731"}}],
        "no_match": ["INFO step 1"],
    }
    assert (data["streams"], data["remediation"], data["role"]) == ([], ["Recalibrate the flux capacitor."], "cause")


def test_explain_unknown_rule_is_one_line_with_a_suggestion(cli: Cli) -> None:
    assert cli("rules", "explain", "kernel.oom-kiler").error_lines() == [
        "unknown rule 'kernel.oom-kiler' (did you mean 'kernel.oom-killer'?)"
    ]
    assert cli("rules", "explain", "zzz").error_lines() == ["unknown rule 'zzz' (see `rankautopsy rules list`)"]


# ---- test ----


def test_test_runs_every_built_in_example(cli: Cli) -> None:
    result = cli("rules", "test")
    assert (result.code, result.err) == (0, "")
    assert result.out == f"{len(run_examples(BUILTIN))} passed, 0 failed\n"


def test_test_reports_a_wrong_fact_as_a_failure_with_the_difference(cli: Cli) -> None:
    failing, good = PACKS / "failing_example.yaml", PACKS / "fluxcap.yaml"
    result = cli("rules", "test", str(failing), str(good))
    assert (result.code, result.err) == (1, "")
    assert result.out.splitlines() == [
        f"{failing}:10: inhouse.wrong-fact: example match[0] facts differ: pid: expected '4243', got '4242': "
        "'worker 4242 died'",
        "3 passed, 1 failed",
    ]


def test_test_reports_a_no_match_that_matches(cli: Cli, tmp_path: Path) -> None:
    pack = tmp_path / "pack.yaml"
    pack.write_text((PACKS / "fluxcap.yaml").read_text().replace('"INFO step 1"', '"FLUXCAP-1 reactor quench"'))
    result = cli("rules", "test", str(tmp_path))
    assert result.code == 1
    assert result.out.splitlines() == [
        f"{pack}:10: inhouse.fluxcap-quench: example no_match[0] matches but must not (facts: code='1'): "
        "'FLUXCAP-1 reactor quench'",
        "1 passed, 1 failed",
    ]


def test_test_of_a_pack_that_cannot_load_is_exit_2(cli: Cli) -> None:
    path = PACKS / "bad_regex.yaml"
    assert cli("rules", "test", str(path)).error_lines() == [
        f"{path}:6: inhouse.bad-regex: bad regex: missing ) at position 18"
    ]


# ---- check ----


def test_check_says_ok_per_pack(cli: Cli) -> None:
    result = cli("rules", "check", str(PACKS / "fluxcap.yaml"), str(PACKS / "override.yaml"))
    assert (result.code, result.err) == (0, "")
    assert result.out.splitlines() == [
        f"OK: 1 rule in {PACKS / 'fluxcap.yaml'}",
        f"OK: 1 rule in {PACKS / 'override.yaml'} (disables kernel.oom-reaper)",
    ]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        *BROKEN_PACKS,
        ("disable_unknown.yaml", "2: kernel.no-such-rule: disable: no built-in rule has this id or alias"),
    ],
)
def test_check_gives_one_exact_line_per_problem(cli: Cli, name: str, expected: str) -> None:
    path = PACKS / name
    assert cli("rules", "check", str(path)).error_lines() == [f"{path}:{expected}"]


def test_check_collects_the_problems_of_every_pack(cli: Cli) -> None:
    lines = cli("rules", "check", str(PACKS / "unknown_key.yaml"), str(PACKS / "bad_regex.yaml")).error_lines()
    assert [line.split(": ", 1)[0] for line in lines] == [
        f"{PACKS / 'unknown_key.yaml'}:7",
        f"{PACKS / 'bad_regex.yaml'}:6",
    ]


def test_check_of_a_missing_pack_and_without_packs(cli: Cli, tmp_path: Path) -> None:
    assert cli("rules", "check", str(tmp_path / "nope.yaml")).error_lines() == [
        f"{tmp_path / 'nope.yaml'}: no such file or directory"
    ]
    without = cli("rules", "check")
    assert (without.code, without.err) == (
        2,
        "rankautopsy: error: missing PACK...\nTry 'rankautopsy rules check --help' for help.\n",
    )


def test_rules_commands_run_as_a_program() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "rankautopsy", "rules", "check", str(PACKS / "fluxcap.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != ENV_VAR},
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, f"OK: 1 rule in {PACKS / 'fluxcap.yaml'}\n", "")


# ---- where user packs come from ----


def test_user_rule_paths_are_env_then_pyproject_then_flags(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "src" / "deep").mkdir(parents=True)
    (project / "pyproject.toml").write_text('[tool.rankautopsy]\nrules = ["ops/rules", "/abs/pack.yaml"]\n')
    environ = {ENV_VAR: os.pathsep.join(["/env/one.yaml", "", "/env/two"])}
    assert [e.path for e in rule_sources(["cli.yaml"], project / "src" / "deep", environ)] == [
        Path("/env/one.yaml"),
        Path("/env/two"),
        project.resolve() / "ops" / "rules",
        Path("/abs/pack.yaml"),
        Path("cli.yaml"),
    ]


def test_only_the_nearest_pyproject_counts(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.rankautopsy]\nrules = ["outer.yaml"]\n')
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "pyproject.toml").write_text('[project]\nname = "inner"\n')
    assert rule_sources([], inner, {}) == []
    assert [e.path for e in rule_sources([], tmp_path, {})] == [tmp_path.resolve() / "outer.yaml"]


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[tool.rankautopsy]\nrules = "my-pack.yaml"\n', ":2: [tool.rankautopsy] rules: expected a list of paths"),
        ("[tool.rankautopsy]\nrules = [1]\n", ":2: [tool.rankautopsy] rules: expected a list of paths"),
        (
            "[tool.rankautopsy\n",
            ": invalid TOML: Expected ']' at the end of a table declaration (at line 1, column 18)",
        ),
    ],
)
def test_a_bad_pyproject_is_one_line(tmp_path: Path, toml: str, message: str) -> None:
    (tmp_path / "pyproject.toml").write_text(toml)
    with pytest.raises(RulePackError) as caught:
        user_rule_paths([], tmp_path, {})
    assert caught.value.problems == [f"{tmp_path.resolve() / 'pyproject.toml'}{message}"]


def test_list_uses_the_projects_pyproject(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "packs").mkdir()
    (tmp_path / "packs" / "flux.yaml").write_text((PACKS / "fluxcap.yaml").read_text())
    (tmp_path / "pyproject.toml").write_text('[tool.rankautopsy]\nrules = ["packs"]\n')
    listed = json.loads(cli("rules", "list", "-f", "json").out)
    user = [entry for entry in listed if not entry["builtin"]]
    assert [(e["id"], e["defined_at"]) for e in user] == [
        ("inhouse.fluxcap-quench", {"file": str(tmp_path.resolve() / "packs" / "flux.yaml"), "line": 2})
    ]


# ---- a user rule that runs out of time while scanning ----


def test_a_user_rule_over_its_time_bound_is_skipped_and_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pattern passes the load-time guard (5,000-character lines) but is quadratic on a long run of dots."""
    monkeypatch.setattr(matcher, "USER_RULE_TIMEOUT", 0.2)
    log = tmp_path / "rank_0.log"
    log.write_text("2026-11-29 07:00:01,000 INFO step 1\n" + "." * 200_000 + ";\n2026-11-29 07:00:02,000 INFO step 2\n")
    result = diagnose(Options(paths=[str(log)], rules=[str(PACKS / "slow_at_scan.yaml")]))
    assert [n for n in result.verdict.notes if "inhouse.dots-then-semicolon" in n] == [
        f"rule inhouse.dots-then-semicolon exceeded its time bound on {log} and was skipped there"
    ]
    assert not any(event.rule == "inhouse.dots-then-semicolon" for event in result.events)


def test_a_taught_prefix_over_its_time_bound_is_passed_over_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prefix pattern runs on every parsed line: its time is bounded per stream, not only per line
    (2,000 lines at the per-line bound would be 100 s). Past it the tag is not read, and a note says so."""
    monkeypatch.setattr(prefixes, "TAUGHT_SECONDS", 0.002)
    # a CPU clock that moves 1 µs per reading: each match costs 1 µs, so the bound lasts 2,000 matches (past
    # the head's, short of the 20,000 lines) whatever else runs on the machine
    ticks = itertools.count()
    monkeypatch.setattr(cputime, "time", types.SimpleNamespace(thread_time=lambda: next(ticks) * 1e-6))
    pack = tmp_path / "tag.yaml"
    pack.write_text(
        "rules:\n  - id: inhouse.task-tag\n    title: t\n    cause: context\n    role: context\n"
        "    effects: [prefix]\n    pattern: '^<task (?P<rank>[0-9]+)> '\n"
        "    examples: {match: [{line: '<task 3> x', facts: {rank: '3'}}], no_match: ['x']}\n"
    )
    log = tmp_path / "logs" / "console.log"
    log.parent.mkdir()
    line = "<task 3> 2026-11-29 07:00:01,000 RuntimeError: CUDA error: an illegal memory access was encountered\n"
    log.write_text(line * 20_000)
    result = diagnose(Options(paths=[str(log.parent)], rules=[str(pack)], engine="regex", jobs=1))
    assert [n for n in result.verdict.notes if "inhouse.task-tag" in n] == [
        f"rule inhouse.task-tag exceeded its time bound on {log} and was skipped there"
    ]
    ranks = [e.rank for e in result.events if e.rule != "progress.step"]
    assert ranks[0] == 3 and ranks[-1] is None  # read while its time lasted, then passed over
