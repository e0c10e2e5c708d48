"""Where user rule packs come from: `RANKAUTOPSY_RULES`, the project's `pyproject.toml`, `--rules` flags.

Every problem names where the path or setting came from (`--rules`, `RANKAUTOPSY_RULES`,
`pyproject.toml:LINE`), so that a user knows which of the three to fix.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from rankautopsy.errors import RulePackError
from rankautopsy.records import record

ENV_VAR = "RANKAUTOPSY_RULES"
TABLE = "[tool.rankautopsy]"
KNOWN_KEYS = frozenset({"rules"})  # a key the tool reads from its table: add it here when it is added
_MENTIONS_TABLE = re.compile(r"^\s*\[?\s*tool\s*\.\s*[\"']?rankautopsy\b", re.MULTILINE)
_HEADER = re.compile(r"^\s*\[\s*tool\s*\.\s*[\"']?rankautopsy[\"']?\s*\]", re.MULTILINE)


@record
class RulePath:
    path: Path
    origin: str  # "--rules", "RANKAUTOPSY_RULES" or "/abs/pyproject.toml:LINE"


def user_rule_paths(cli_paths: Sequence[str], cwd: Path, environ: Mapping[str, str] | None = None) -> list[Path]:
    """User packs in load order (see `rule_sources`), each checked to exist; every one that does not
    is named with its origin."""
    found = rule_sources(cli_paths, cwd, environ)
    problems = [f"{entry.origin}: {entry.path}: {why}" for entry in found if (why := _unusable(entry.path))]
    if problems:
        raise RulePackError(problems)
    return [entry.path for entry in found]


def rule_sources(cli_paths: Sequence[str], cwd: Path, environ: Mapping[str, str] | None = None) -> list[RulePath]:
    """The environment variable (os.pathsep-separated), then `rules = [...]` of `[tool.rankautopsy]` in
    the nearest `pyproject.toml` at or above `cwd` (relative to that file), then the `--rules` flags.
    Relative entries of the first and last are relative to the working directory."""
    env = os.environ if environ is None else environ
    from_env = [RulePath(Path(e), ENV_VAR) for e in env.get(ENV_VAR, "").split(os.pathsep) if e.strip()]
    from_cli = [RulePath(Path(p), "--rules") for p in cli_paths]
    return [*from_env, *project_rule_sources(cwd), *from_cli]


def project_rule_paths(cwd: Path) -> list[Path]:
    return [entry.path for entry in project_rule_sources(cwd)]


def project_rule_sources(cwd: Path) -> list[RulePath]:
    """The packs named by the nearest `pyproject.toml` (none when it has no `[tool.rankautopsy]` table).
    A pyproject.toml that cannot be parsed is an error only when it has such a table: a broken file of
    some other project above the working directory must not stop a diagnosis."""
    pyproject = _nearest_pyproject(cwd.resolve())
    if pyproject is None:
        return []
    text = _read_text(pyproject)
    if "rankautopsy" not in text and "\\u" not in text.lower():  # no table of ours, not even \u-escaped
        return []
    import tomllib  # only where a pyproject.toml names the tool

    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        if _MENTIONS_TABLE.search(text):
            raise RulePackError([f"{pyproject}: invalid TOML: {exc}"]) from exc
        return []
    tool = doc.get("tool", {})
    table = tool.get("rankautopsy") if isinstance(tool, dict) else None
    if table is None:
        return []
    lines = _Lines(pyproject, text)
    if not isinstance(table, dict):
        raise RulePackError([f"{lines.at(None)}: {TABLE}: expected a table"])
    unknown = sorted(set(table) - KNOWN_KEYS)
    if unknown:
        known = ", ".join(sorted(KNOWN_KEYS))
        raise RulePackError([f"{lines.at(k)}: {TABLE}: unknown key {k!r} (known: {known})" for k in unknown])
    entries = table.get("rules", [])
    if not isinstance(entries, list) or not all(isinstance(e, str) and e for e in entries):
        raise RulePackError([f"{lines.at('rules')}: {TABLE} rules: expected a list of paths"])
    return [RulePath(pyproject.parent / entry, lines.at("rules", entry)) for entry in entries]


class _Lines:
    """`path:LINE` of a key of the table (or of one string in its value), found in the text: tomllib
    keeps no positions. Without a line, the path alone."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()
        header = _HEADER.search(text)
        self.header = text.count("\n", 0, header.start()) if header else None
        self.start = self.header or 0

    def at(self, key: str | None, value: str | None = None) -> str:
        line = self._find(key, value) if key is not None else self.header
        line = self.header if line is None else line
        line = None if line is None else line + 1
        return f"{self.path}:{line}" if line is not None else str(self.path)

    def _find(self, key: str, value: str | None) -> int | None:
        own = re.compile(rf"^\s*(?:tool\s*\.\s*rankautopsy\s*\.\s*)?[\"']?{re.escape(key)}[\"']?\s*=")
        for number in range(self.start, len(self.lines)):
            if own.match(self.lines[number]):
                return self._value_line(number, value)
        return None

    def _value_line(self, number: int, value: str | None) -> int:
        if value is None:
            return number
        for later in range(number, min(number + 200, len(self.lines))):
            if re.search(rf"[\"']{re.escape(value)}[\"']", self.lines[later]):
                return later
        return number


def _unusable(path: Path) -> str | None:
    try:
        path.stat()
    except FileNotFoundError:
        return "no such file or directory"
    except (OSError, ValueError) as exc:
        return getattr(exc, "strerror", None) or "not a valid path"
    return None


def _nearest_pyproject(start: Path) -> Path | None:
    for folder in (start, *start.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def _read_text(path: Path) -> str:
    try:
        with path.open("rb") as stream:
            return stream.read(4 * 1024 * 1024).decode("utf-8", "replace")
    except OSError as exc:
        raise RulePackError([f"{path}: cannot read: {exc.strerror or exc}"]) from exc
