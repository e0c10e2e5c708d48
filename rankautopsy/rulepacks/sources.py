"""Where user rule packs come from: `RANKAUTOPSY_RULES`, the project's `pyproject.toml`, `--rules` flags."""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path

from rankautopsy.errors import RulePackError

ENV_VAR = "RANKAUTOPSY_RULES"


def user_rule_paths(cli_paths: Sequence[str], cwd: Path, environ: Mapping[str, str] | None = None) -> list[Path]:
    """User packs in load order: the environment variable (os.pathsep-separated), then `rules = [...]` of
    `[tool.rankautopsy]` in the nearest `pyproject.toml` at or above `cwd` (relative to that file), then the
    `--rules` flags. Relative entries of the first and last are relative to the working directory."""
    env = os.environ if environ is None else environ
    from_env = [Path(entry) for entry in env.get(ENV_VAR, "").split(os.pathsep) if entry.strip()]
    return [*from_env, *project_rule_paths(cwd), *(Path(p) for p in cli_paths)]


def project_rule_paths(cwd: Path) -> list[Path]:
    """The packs named by the nearest `pyproject.toml` (none when it has no `[tool.rankautopsy]` rules)."""
    pyproject = _nearest_pyproject(cwd.resolve())
    if pyproject is None:
        return []
    tool = _read_toml(pyproject).get("tool", {})
    table = tool.get("rankautopsy", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict) or "rules" not in table:
        return []
    entries = table["rules"]
    if not isinstance(entries, list) or not all(isinstance(e, str) and e for e in entries):
        raise RulePackError([f"{pyproject}: [tool.rankautopsy] rules: expected a list of paths"])
    return [pyproject.parent / entry for entry in entries]


def _nearest_pyproject(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _read_toml(path: Path) -> dict[str, object]:
    try:
        with path.open("rb") as stream:
            return tomllib.load(stream)
    except tomllib.TOMLDecodeError as exc:
        raise RulePackError([f"{path}: invalid TOML: {exc}"]) from exc
    except OSError as exc:
        raise RulePackError([f"{path}: cannot read: {exc.strerror or exc}"]) from exc
