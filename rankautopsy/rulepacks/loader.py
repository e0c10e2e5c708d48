"""Rule packs: YAML loaded safely, every rule validated, user packs layered over the built-ins.

All problems of all packs are collected before one `RulePackError` is raised; each problem is one line,
`path:line: rule-id: message`. A rule's examples are run at load time: a rule that fails its own
examples is a broken rule (`rules test` defers them, to report failures as test results instead).

Role and cause go together: a `cause` rule names a root cause of the taxonomy, a `symptom` rule one of
the symptoms (collective_timeout, peer_lost, launcher_teardown, watchdog_abort), and `progress` and
`context` rules take the cause of the same name. A context line never carries a root cause, so nothing
downstream can count it as one; its rule id says what it is about.

What a line does to the timeline is its rule's `effects` (a process exited, the launcher tears
survivors down, the job ended, an identity, a symptom naming whom it waits for); each effect reads
facts of fixed names, and a rule whose pattern cannot capture the facts its effect needs is refused.
"""

from __future__ import annotations

import stat
from collections.abc import Iterable, Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

from rankautopsy.errors import RulePackError
from rankautopsy.model import Location, Rule
from rankautopsy.records import record
from rankautopsy.rulepacks import cached
from rankautopsy.rulepacks.rule import (
    REMEDIATION_FILE,
    Claim,
    Context,
    Disable,
    ExampleLines,
    Fields,
    Pack,
    read_rule,
    unknown,
)
from rankautopsy.rulepacks.ruletest import ExampleResult
from rankautopsy.rulepacks.yamlsafe import Map, Report, Seq, parse_yaml


def _builtin_dir() -> Path:
    # the package's own directory, as importlib.resources.files would give it for a package on disk
    # (that import alone costs ~9 ms of every start)
    shipped = Path(__file__).resolve().parents[1] / "_rules"
    if shipped.is_dir():
        return shipped
    return Path(__file__).resolve().parents[2] / "rules"


BUILTIN_DIR: Path = _builtin_dir()


# ---- packs and layers ----


def display_path(path: Path, builtin: bool) -> str:
    if builtin and path.is_relative_to(BUILTIN_DIR):
        return f"rules/{path.relative_to(BUILTIN_DIR).as_posix()}"
    return str(path)


def _read_pack(path: Path, *, builtin: bool, problems: list[str], check_examples: bool = True) -> Pack:
    report = Report(display_path(path, builtin))
    parsed = parse_yaml(path, report)
    pack = Pack()
    if parsed is not None:
        data, duplicates = parsed
        ctx = Context(report, path.stem, builtin, check_examples)
        pack = _read_rules(data, ctx, duplicates=duplicates)
    report.flush(problems)
    return pack


def _read_rules(data: object, ctx: Context, *, duplicates: list[tuple[int, str]]) -> Pack:
    report = ctx.report
    if not isinstance(data, Map):
        report.add(None, None, "not a rule pack: expected a mapping with a `rules:` list")
        return Pack()
    top = Fields(data, report, None)
    for key in data:
        if key not in ("pack", "rules"):
            top.problem(key, unknown("key", str(key), ("pack", "rules")))
    items = data.get("rules")
    if not isinstance(items, Seq):
        top.problem("rules" if "rules" in data else None, "rules: expected a list of rules")
        return Pack()
    _report_duplicates(items, report, duplicates)
    ctx = replace(ctx, pack=top.text("pack") or ctx.pack)
    entries = [_read_entry(item, line, ctx) for item, line in zip(items, items.item_lines, strict=True)]
    return Pack(
        tuple(e for e in entries if isinstance(e, Rule)),
        tuple(e for e in entries if isinstance(e, Disable)),
        tuple(c for item in items if (c := _claim(item, report.path)) is not None),
        MappingProxyType(ctx.example_lines),
    )


def _claim(item: object, path: str) -> Claim | None:
    if not isinstance(item, Map) or not (rule_id := item.raw.get("id")):
        return None
    aliases = item.get("aliases")
    names = tuple(a for a in aliases.raw if a) if isinstance(aliases, Seq) else ()
    return Claim(rule_id, (rule_id, *names), Location(path, item.key_lines.get("id", item.line)))


def _read_entry(item: object, line: int, ctx: Context) -> Rule | Disable | None:
    if not isinstance(item, Map):
        ctx.report.add(line, None, "a rule is a mapping (id:, title:, cause:, role:, pattern:, ...)")
        return None
    return read_rule(item, ctx)


def _report_duplicates(items: Seq, report: Report, duplicates: list[tuple[int, str]]) -> None:
    for line, message in duplicates:
        owner = next((m for m in items if isinstance(m, Map) and m.line <= line <= m.end), None)
        report.add(line, owner.raw.get("id") if owner is not None else None, message)


def _check_unique(claims: Iterable[Claim], problems: list[str]) -> None:
    """Ids and aliases are unique within a layer (the built-ins, or all user packs together)."""
    seen: dict[str, Claim] = {}
    for claim in claims:
        for name in claim.names:
            other = seen.setdefault(name, claim)
            if other is claim:
                continue
            same = name == claim.rule_id == other.rule_id
            what = "duplicate id" if same else f"{name!r} is already used by {other.rule_id}"
            problems.append(f"{_where(claim.where)}: {claim.rule_id}: {what} (at {_where(other.where)})")


def _where(location: Location) -> str:
    return f"{location.source}:{location.line}"


def builtin_pack_paths() -> list[Path]:
    """The built-in rule packs, in load order."""
    found = [*BUILTIN_DIR.glob("*.yaml"), *BUILTIN_DIR.glob("*.yml")]
    return sorted(p for p in found if p.name != REMEDIATION_FILE)


def _load_layer(paths: Iterable[Path], *, builtin: bool, problems: list[str]) -> Pack:
    """A user pack's examples run as it loads; the built-in packs' run in the test suite and in
    `rules test` and `rules check`, not on every diagnosis (they cost more than a small diagnosis)."""
    read = [_read_pack(path, builtin=builtin, problems=problems, check_examples=not builtin) for path in paths]
    layer = _layer(read)
    _check_unique(layer.claims, problems)
    return layer


def _layer(packs: Sequence[Pack]) -> Pack:
    return Pack(
        tuple(r for p in packs for r in p.rules),
        tuple(d for p in packs for d in p.disabled),
        tuple(c for p in packs for c in p.claims),
    )


@lru_cache(maxsize=1)
def _builtin_layer() -> tuple[Pack, tuple[str, ...]]:
    """The built-in rules, validated once per version of the packs (see `cached`)."""
    rules, problems = cached.builtin_rules(builtin_pack_paths(), _validated_builtins)
    return Pack(rules), problems


def _validated_builtins() -> tuple[tuple[Rule, ...], tuple[str, ...]]:
    problems: list[str] = []
    layer = _load_layer(builtin_pack_paths(), builtin=True, problems=problems)
    return layer.rules, tuple(problems)


def _expand(paths: Iterable[Path], problems: list[str]) -> list[Path]:
    """Pack files from files and directories, each once even when named twice (a dir and a file in it)."""
    files: list[Path] = []
    for path in paths:
        try:
            mode = path.stat().st_mode
        except (OSError, ValueError) as exc:  # ENOENT, ENAMETOOLONG, ELOOP, EACCES, a NUL in the name
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not a valid path"
            problems.append(f"{path}: {reason[:1].lower()}{reason[1:]}")
            continue
        if stat.S_ISDIR(mode):
            found = sorted([*path.glob("*.yaml"), *path.glob("*.yml")])
            if not found:
                problems.append(f"{path}: no rule packs (*.yaml, *.yml) in this directory")
            files += found
        else:  # a file, or what is not one: `parse_yaml` refuses it in one line, without reading it
            files.append(path)
    return list({_identity(path): path for path in files}.values())


def _identity(path: Path) -> Path | str:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: the pack's read names it
        return str(path)


def _merge(base: Pack, user: Pack, problems: list[str], *, has_builtins: bool) -> list[Rule]:
    """User rules replace the built-in with the same id or alias in place; `disable` removes it."""
    merged: list[Rule | None] = list(base.rules)
    index = {name: i for i, rule in enumerate(base.rules) for name in (rule.id, *rule.aliases)}
    for disable in user.disabled:
        if disable.rule_id in index:
            merged[index[disable.rule_id]] = None
        elif has_builtins:
            problems.append(
                f"{_where(disable.where)}: {disable.rule_id}: disable: no built-in rule has this id or alias"
            )
    for rule in user.rules:
        hits = sorted({index[name] for name in (rule.id, *rule.aliases) if name in index})
        if not hits:
            merged.append(rule)
            continue
        merged[hits[0]] = rule
        for i in hits[1:]:
            merged[i] = None
    return [rule for rule in merged if rule is not None]


def load_pack(path: Path, *, builtin: bool, check_examples: bool = True) -> list[Rule]:
    """The rules of one pack file (`disable:` entries are applied by `load_rules`, not here).
    With `check_examples=False` failing examples are not load problems: `run_examples` reports them."""
    problems: list[str] = []
    pack = _read_pack(path, builtin=builtin, problems=problems, check_examples=check_examples)
    _check_unique(pack.claims, problems)
    if problems:
        raise RulePackError(problems)
    return list(pack.rules)


def load_rules(user_paths: Sequence[Path] = (), *, builtin: bool = True) -> tuple[Rule, ...]:
    """The built-in rules, then the user packs (files, or directories of *.yaml / *.yml) over them."""
    problems: list[str] = []
    base = Pack()
    if builtin:
        base, builtin_problems = _builtin_layer()
        problems += builtin_problems
    user = _load_layer(_expand(user_paths, problems), builtin=False, problems=problems)
    rules = _merge(base, user, problems, has_builtins=builtin) if not problems else []
    if problems:
        raise RulePackError(problems)
    return tuple(rules)


@record
class PackContents:
    """One pack file as `rules check` and `rules test` see it."""

    path: str  # as problems show it: `rules/<name>.yaml` for a built-in pack, else the path given
    rules: tuple[Rule, ...]
    disabled: tuple[str, ...]
    example_lines: ExampleLines

    def line_of(self, result: ExampleResult) -> int | None:
        return self.example_lines.get((result.rule_id, result.kind, result.index))


def read_packs(paths: Sequence[Path], *, builtin: bool = False, check_examples: bool = True) -> list[PackContents]:
    """Each pack file (directories expanded), validated as `load_rules` validates it, every problem of every
    pack in one `RulePackError`. User packs are checked against the built-ins (a `disable:` needs a target)."""
    problems: list[str] = []
    files = _expand(paths, problems)
    packs = [_read_pack(path, builtin=builtin, problems=problems, check_examples=check_examples) for path in files]
    user = _layer(packs)
    _check_unique(user.claims, problems)
    if not builtin and not problems:
        base, builtin_problems = _builtin_layer()
        problems += builtin_problems
        _merge(base, user, problems, has_builtins=True)
    if problems:
        raise RulePackError(problems)
    return [
        PackContents(display_path(path, builtin), p.rules, tuple(d.rule_id for d in p.disabled), p.example_lines)
        for path, p in zip(files, packs, strict=True)
    ]
