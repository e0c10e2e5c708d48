"""Configuration as a user meets it: `[tool.rankautopsy]`, RANKAUTOPSY_RULES, --rules, the cache directory.
Every problem names where the setting came from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from rankautopsy import cache
from rankautopsy.errors import RulePackError
from rankautopsy.rulepacks.sources import ENV_VAR, user_rule_paths

ROOT = Path(__file__).resolve().parent.parent
RAISE = ROOT / "fixtures" / "torchrun-raise-rank2" / "logs"
PACK = Path(__file__).parent / "rulepacks" / "fluxcap.yaml"


def problems(cwd: Path, cli: list[str] | None = None, env: str | None = None) -> list[str]:
    with pytest.raises(RulePackError) as caught:
        user_rule_paths(cli or [], cwd, {} if env is None else {ENV_VAR: env})
    return caught.value.problems


def test_an_unknown_key_is_an_error_naming_the_key_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.rankautopsy]\nrulez = ["p.yaml"]\n')
    assert problems(tmp_path) == [
        f"{tmp_path.resolve() / 'pyproject.toml'}:5: [tool.rankautopsy]: unknown key 'rulez' (known: rules)"
    ]


def test_each_missing_pack_names_its_origin(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.rankautopsy]\nrules = [\n  "ok.yaml",\n  "gone.yaml",\n]\n')
    (tmp_path / "ok.yaml").write_text(PACK.read_text())
    root = tmp_path.resolve()
    assert problems(tmp_path, cli=[str(tmp_path / "flag.yaml")], env=str(tmp_path / "env.yaml")) == [
        f"RANKAUTOPSY_RULES: {tmp_path / 'env.yaml'}: no such file or directory",
        f"{root / 'pyproject.toml'}:4: {root / 'gone.yaml'}: no such file or directory",
        f"--rules: {tmp_path / 'flag.yaml'}: no such file or directory",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "[project\nname = 'broken'\n",  # another project's broken file: not ours to judge
        "[tool.other]\nkey = = 1\n",
    ],
)
def test_a_malformed_pyproject_without_our_table_is_ignored(tmp_path: Path, text: str) -> None:
    (tmp_path / "pyproject.toml").write_text(text)
    assert user_rule_paths([], tmp_path, {}) == []


@pytest.mark.parametrize(
    "text", ["[tool.rankautopsy]\nrules = [\n", "[project]\nx = = 1\n[tool.rankautopsy]\nrules = []\n"]
)
def test_a_malformed_pyproject_with_our_table_is_an_error(tmp_path: Path, text: str) -> None:
    (tmp_path / "pyproject.toml").write_text(text)
    (problem,) = problems(tmp_path)
    assert problem.startswith(f"{tmp_path.resolve() / 'pyproject.toml'}: invalid TOML: ")


@pytest.mark.parametrize(
    "text",
    [
        'tool = { rankautopsy = { rules = ["gone.yaml"] } }\n',
        '[tool]\nrankautopsy.rules = ["gone.yaml"]\n',
        '[tool."rank\\u0061utopsy"]\nrules = ["gone.yaml"]\n',  # the file is parsed only where it may name us
        "[tool.'rankautopsy']\nrules = ['gone.yaml']\n",
    ],
)
def test_every_spelling_of_our_table_is_read(tmp_path: Path, text: str) -> None:
    (tmp_path / "pyproject.toml").write_text(text)
    (problem,) = problems(tmp_path)
    assert problem.endswith(f"{tmp_path.resolve() / 'gone.yaml'}: no such file or directory")


def run(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    return subprocess.run(
        [sys.executable, "-m", "rankautopsy", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**environ, **(env or {})},
        timeout=120,
    )


def test_diagnose_under_a_broken_unrelated_pyproject_runs(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project\n")
    result = run("diagnose", str(RAISE), "--format", "json", cwd=tmp_path)
    assert (result.returncode, result.stderr) == (1, "")


def test_the_cli_names_the_origin_in_one_line_per_problem(tmp_path: Path) -> None:
    result = run("rules", "list", "--rules", "nope.yaml", cwd=tmp_path, env={ENV_VAR: "also-nope"})
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "rankautopsy: error: RANKAUTOPSY_RULES: also-nope: no such file or directory",
        "rankautopsy: error: --rules: nope.yaml: no such file or directory",
    ]


def test_the_cache_follows_the_platform_convention(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(cache.CACHE_ENV)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setattr(sys, "platform", "linux")
    assert cache.cache_dir() == tmp_path / "xdg" / "rankautopsy"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    assert cache.cache_dir() == tmp_path / ".cache" / "rankautopsy"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert cache.cache_dir() == tmp_path / "Library" / "Caches" / "rankautopsy"
    monkeypatch.setenv(cache.CACHE_ENV, "off")
    assert cache.cache_dir() is None


def test_collecting_the_suite_writes_nothing_into_the_users_cache(tmp_path: Path) -> None:
    """Test modules that load the rule packs at import time run before any fixture: the cache must already
    point elsewhere by then (conftest's pytest_configure)."""
    env = {k: v for k, v in os.environ.items() if k != cache.CACHE_ENV}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--collect-only", "tests/test_rules_cli.py"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert collected.returncode == 0, collected.stdout[-2000:]
    assert not (tmp_path / "xdg" / "rankautopsy").exists() or not any((tmp_path / "xdg" / "rankautopsy").iterdir())


def test_the_suite_uses_a_temporary_cache(temporary_cache: str, tmp_path: Path) -> None:
    """conftest points every test and subprocess at a temporary cache: a run writes there, not in ~/.cache."""
    assert cache.cache_dir() == Path(temporary_cache)
    assert not Path(temporary_cache).is_relative_to(Path.home() / ".cache")
    result = run("diagnose", str(RAISE), "--format", "json", cwd=tmp_path)
    assert result.returncode == 1
    assert any(Path(temporary_cache).iterdir())
