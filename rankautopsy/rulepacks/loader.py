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

import difflib
import importlib.resources
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import TypeVar

import regex
import yaml

from rankautopsy.errors import RulePackError
from rankautopsy.model import Assembly, Cause, Effect, Example, Location, Role, Rule, StreamKind
from rankautopsy.rulepacks.ruletest import ExampleResult, compile_pattern, describe, run_examples

ID_PATTERN = regex.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*\.[a-z0-9]+(?:-[a-z0-9]+)*$")
STATUSES = ("stable", "preview", "deprecated")
ROOT_CAUSES = frozenset(c for c in Cause if not c.is_symptom and c not in (Cause.PROGRESS, Cause.CONTEXT))
REMEDIATION_FILE = "remediation.yaml"
SLOW_PATTERN_SECONDS = 0.25  # one adversarial line may take this long before the pattern is refused

_RULE_KEYS = (
    "id", "title", "cause", "role", "streams", "pattern", "ignorecase", "assemble", "why", "falsepositives",
    "remediation", "references", "status", "since", "aliases", "disable", "examples", "effects",
)  # fmt: skip
# The facts each effect reads: a rule with the effect must capture at least one group of each tuple
# (an empty tuple: nothing required; exit/teardown without a subject group are about the emitting rank).
EFFECT_FACTS: Mapping[Effect, tuple[frozenset[str], ...]] = {
    Effect.EXIT: (),
    Effect.TEARDOWN: (),
    Effect.JOB_END: (),
    Effect.COMPLETE: (),
    Effect.IDENTITY: (frozenset({"pid", "busid", "host"}),),
    Effect.NAMES_CULPRIT: (frozenset({"culprit", "culprits", "culprit_local_rank"}),),
    Effect.NAMES_WAITER: (frozenset({"ranks"}),),
}
_ROLE_CAUSES = {
    Role.CAUSE: ROOT_CAUSES,
    Role.SYMPTOM: frozenset(c for c in Cause if c.is_symptom),
    Role.PROGRESS: frozenset({Cause.PROGRESS}),
    Role.CONTEXT: frozenset({Cause.CONTEXT}),
}

_E = TypeVar("_E", bound=StrEnum)


def _builtin_dir() -> Path:
    shipped = importlib.resources.files("rankautopsy") / "_rules"
    if isinstance(shipped, Path) and shipped.is_dir():
        return shipped
    return Path(__file__).resolve().parents[2] / "rules"


BUILTIN_DIR: Path = _builtin_dir()


# ---- YAML: safe, duplicate keys reported, every node's line kept ----


class _Map(dict[Hashable, object]):
    """A YAML mapping that remembers its lines and the raw text of its scalar values."""

    def __init__(self, line: int, end: int) -> None:
        super().__init__()
        self.line, self.end = line, end
        self.key_lines: dict[Hashable, int] = {}
        self.raw: dict[Hashable, str] = {}


class _Seq(list[object]):
    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.item_lines: list[int] = []
        self.raw: list[str | None] = []


class _Loader(yaml.SafeLoader):
    """PyYAML lets a repeated key silently win; this loader records it as a problem instead."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[int, str]] = []


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> _Map:
    seen: set[str] = set()
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
            if key_node.value in seen:
                loader.duplicates.append((_line(key_node), f"duplicate key {key_node.value!r}"))
            seen.add(key_node.value)
    loader.flatten_mapping(node)
    out = _Map(_line(node), node.end_mark.line + 1)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        key = key if isinstance(key, Hashable) else str(key)
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = _line(key_node)
        if isinstance(value_node, yaml.ScalarNode):
            out.raw[key] = value_node.value
    return out


def _construct_seq(loader: _Loader, node: yaml.SequenceNode) -> _Seq:
    out = _Seq(_line(node))
    for item in node.value:
        out.append(loader.construct_object(item, deep=True))
        out.item_lines.append(_line(item))
        out.raw.append(item.value if isinstance(item, yaml.ScalarNode) else None)
    return out


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
_Loader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)


@dataclass(slots=True)
class _Report:
    """The problems of one file, kept in line order."""

    path: str
    found: list[tuple[int, str]] = field(default_factory=list)

    def add(self, line: int | None, rule_id: str | None, message: str) -> None:
        where = self.path if line is None else f"{self.path}:{line}"
        who = f" {rule_id}:" if rule_id else ""
        self.found.append((line or 0, f"{where}:{who} {' '.join(message.splitlines())}"))

    def flush(self, problems: list[str]) -> None:
        problems.extend(text for _, text in sorted(self.found, key=lambda item: item[0]))


def _parse(path: Path, report: _Report) -> tuple[object, list[tuple[int, str]]] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        report.add(None, None, "cannot read: not UTF-8 text")
        return None
    except OSError as exc:
        report.add(None, None, f"cannot read: {exc.strerror or exc}")
        return None
    loader = _Loader(text)
    try:
        return loader.get_single_data(), loader.duplicates
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        report.add(mark.line + 1 if mark else None, None, f"invalid YAML: {exc.problem or exc.context}")
    except yaml.YAMLError as exc:
        report.add(None, None, f"invalid YAML: {exc}")
    finally:
        loader.dispose()
    return None


# ---- one rule ----


def _unknown(what: str, value: str, choices: Sequence[str]) -> str:
    close = difflib.get_close_matches(value, choices, n=1)
    hint = f"did you mean {close[0]!r}?" if close else "one of: " + ", ".join(choices)
    return f"unknown {what} {value!r} ({hint})"


class _Fields:
    """One mapping read field by field; each misuse becomes a problem at the line of its key."""

    def __init__(self, data: _Map, report: _Report, rule_id: str | None) -> None:
        self.data, self.report, self.rule_id = data, report, rule_id

    def problem(self, key: Hashable | None, message: str) -> None:
        self.problem_at(self.data.key_lines.get(key, self.data.line), message)

    def problem_at(self, line: int, message: str) -> None:
        self.report.add(line, self.rule_id, message)

    def text(self, key: str, *, required: bool = False) -> str:
        value = self.data.get(key)
        if value is None or value == "":
            if required:
                self.problem(None, f"missing {key!r}")
            return ""
        if isinstance(value, _Map | _Seq):
            self.problem(key, f"{key}: expected a string")
            return ""
        return self.data.raw.get(key, str(value))

    def texts(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key)
        if value is None:
            return ()
        if not isinstance(value, _Seq) or any(raw is None for raw in value.raw):
            self.problem(key, f"{key}: expected a list of strings")
            return ()
        return tuple(raw for raw in value.raw if raw is not None)

    def flag(self, key: str) -> bool:
        value = self.data.get(key, False)
        if not isinstance(value, bool):
            self.problem(key, f"{key}: expected true or false")
            return False
        return value

    def choice(self, key: str, kind: type[_E], *, required: bool = False) -> _E | None:
        text = self.text(key, required=required)
        if not text:
            return None
        try:
            return kind(text)
        except ValueError:
            self.problem(key, _unknown(key, text, [m.value for m in kind]))
            return None

    def choices(self, key: str, kind: type[_E], *, each: str) -> frozenset[_E]:
        out = set()
        for text in self.texts(key):
            try:
                out.add(kind(text))
            except ValueError:
                self.problem(key, _unknown(each, text, [m.value for m in kind]))
        return frozenset(out)


@dataclass(frozen=True, slots=True)
class _Disable:
    rule_id: str
    where: Location


@dataclass(frozen=True, slots=True)
class _Claim:
    """The names one entry takes (its id and aliases), whether or not the entry is valid."""

    rule_id: str
    names: tuple[str, ...]
    where: Location


ExampleLines = Mapping[tuple[str, str, int], int]  # (rule id, kind, index) -> line of the example


@dataclass(frozen=True, slots=True)
class _Pack:
    rules: tuple[Rule, ...] = ()
    disabled: tuple[_Disable, ...] = ()
    claims: tuple[_Claim, ...] = ()
    example_lines: ExampleLines = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Context:
    report: _Report
    pack: str
    builtin: bool
    check_examples: bool = True
    example_lines: dict[tuple[str, str, int], int] = field(default_factory=dict)


def _read_rule(data: _Map, ctx: _Context) -> Rule | _Disable | None:
    before = len(ctx.report.found)
    rule_id = _read_id(data, ctx)
    fields = _Fields(data, ctx.report, rule_id)
    for key in data:
        if key not in _RULE_KEYS:
            fields.problem(key, _unknown("key", str(key), _RULE_KEYS))
    if fields.flag("disable"):
        if ctx.builtin:
            fields.problem("disable", "disable: only a user pack can disable a rule")
        where = Location(ctx.report.path, data.key_lines.get("id", data.line))
        return _Disable(rule_id, where) if rule_id and len(ctx.report.found) == before else None
    rule = _build_rule(fields, rule_id, ctx)
    return rule if rule is not None and len(ctx.report.found) == before else None


def _read_id(data: _Map, ctx: _Context) -> str:
    fields = _Fields(data, ctx.report, None)
    rule_id = fields.text("id", required=True)
    if rule_id and not ID_PATTERN.match(rule_id):
        fields.problem("id", f"bad id {rule_id!r}: use pack.kebab-case, e.g. kernel.oom-killer")
    elif ctx.builtin and rule_id and not rule_id.startswith(ctx.pack + "."):
        fields.problem("id", f"bad id {rule_id!r}: a rule of pack {ctx.pack!r} is named {ctx.pack}.<name>")
    return rule_id


def _build_rule(fields: _Fields, rule_id: str, ctx: _Context) -> Rule | None:
    title = fields.text("title", required=True)
    cause = fields.choice("cause", Cause, required=True)
    role = fields.choice("role", Role, required=True)
    if cause is not None and role is not None and cause not in _ROLE_CAUSES[role]:
        allowed = ", ".join(sorted(_ROLE_CAUSES[role]))
        fields.problem("cause", f"cause {cause.value!r} does not fit role {role.value!r} (use one of: {allowed})")
    status = fields.text("status") or "stable"
    if status not in STATUSES:
        fields.problem("status", _unknown("status", status, STATUSES))
    matches, no_matches, lines = _read_examples(fields)
    rule = Rule(
        id=rule_id or "?",
        title=title,
        cause=cause or Cause.CONTEXT,
        role=role or Role.CONTEXT,
        pattern=fields.text("pattern", required=True),
        ignorecase=fields.flag("ignorecase"),
        streams=fields.choices("streams", StreamKind, each="stream kind"),
        assemble=fields.choice("assemble", Assembly),
        why=fields.text("why"),
        falsepositives=fields.texts("falsepositives"),
        remediation=fields.texts("remediation"),
        references=fields.texts("references"),
        status=status,
        since=fields.text("since"),
        aliases=_read_aliases(fields),
        effects=fields.choices("effects", Effect, each="effect"),
        match_examples=matches,
        no_match_examples=no_matches,
        source=Location(ctx.report.path, fields.data.key_lines.get("id", fields.data.line)),
        builtin=ctx.builtin,
    )
    ctx.example_lines.update({(rule.id, kind, index): line for (kind, index), line in lines.items()})
    _check_rule(fields, rule, lines, run=ctx.check_examples)
    return rule if cause is not None and role is not None else None


def _read_aliases(fields: _Fields) -> tuple[str, ...]:
    aliases = fields.texts("aliases")
    for alias in aliases:
        if not ID_PATTERN.match(alias):
            fields.problem("aliases", f"bad alias {alias!r}: an alias is an old id, pack.kebab-case")
    return aliases


def _check_rule(fields: _Fields, rule: Rule, lines: Mapping[tuple[str, int], int], *, run: bool) -> None:
    if rule.role is Role.CAUSE and not rule.remediation and rule.builtin:
        fields.problem("remediation", "no remediation: a cause rule needs at least one step")
    if not rule.match_examples or not rule.no_match_examples:
        fields.problem("examples", "no examples: add at least one match and one no_match")
    if not rule.pattern or not _pattern_ok(fields, rule):
        return
    _check_effects(fields, rule)
    if not run:
        return
    for result in run_examples([rule]):
        if not result.ok:
            fields.problem_at(lines.get((result.kind, result.index), fields.data.line), describe(result))


def _check_effects(fields: _Fields, rule: Rule) -> None:
    groups = set(compile_pattern(rule.pattern, ignorecase=rule.ignorecase).groupindex)
    for effect in sorted(rule.effects):
        for needed in EFFECT_FACTS[effect]:
            if not groups & needed:
                names = ", ".join(f"(?P<{name}>...)" for name in sorted(needed))
                fields.problem("effects", f"effect {effect.value!r} reads a fact the pattern never captures: {names}")
    if "comm_rank" in groups and "nranks" not in groups:
        fields.problem("pattern", "a comm_rank is a global rank only with its communicator's size: capture nranks")


def _pattern_ok(fields: _Fields, rule: Rule) -> bool:
    try:
        compiled = compile_pattern(rule.pattern, ignorecase=rule.ignorecase)
    except regex.error as exc:
        fields.problem("pattern", f"bad regex: {exc}")
        return False
    if compiled.search("") is not None:
        fields.problem("pattern", "pattern matches an empty line: it would match every line")
        return False
    examples = [e.line for e in rule.match_examples] + list(rule.no_match_examples)
    if _too_slow(compiled, _adversarial(rule.pattern, examples)):
        fields.problem("pattern", "pattern too slow (catastrophic backtracking?)")
        return False
    return True


def _adversarial(pattern: str, examples: Sequence[str]) -> Iterator[str]:
    """Long near-miss lines: one character repeated (the pattern's own, too), the examples repeated."""
    chars = dict.fromkeys("a1 " + "".join(c for c in pattern if c.isalnum()))
    for char in list(chars)[:16]:
        yield char * 5000 + "!"
    for line in examples:
        yield " ".join([line] * (5000 // (len(line) + 1) + 1)) + "!"


def _too_slow(compiled: regex.Pattern[str], lines: Iterable[str]) -> bool:
    try:
        for line in lines:
            compiled.search(line, timeout=SLOW_PATTERN_SECONDS)
    except TimeoutError:
        return True
    return False


def _read_examples(fields: _Fields) -> tuple[tuple[Example, ...], tuple[str, ...], dict[tuple[str, int], int]]:
    value = fields.data.get("examples")
    if value is None:
        return (), (), {}
    if not isinstance(value, _Map):
        fields.problem("examples", "examples: expected a mapping with `match:` and `no_match:` lists")
        return (), (), {}
    for key in value:
        if key not in ("match", "no_match"):
            fields.problem_at(value.key_lines[key], _unknown("examples key", str(key), ("match", "no_match")))
    lines: dict[tuple[str, int], int] = {}
    matches = [_read_match(fields, item, line) for item, line in _items(fields, value, "match", lines)]
    no_matches = [_read_no_match(fields, item, line) for item, line in _items(fields, value, "no_match", lines)]
    return tuple(m for m in matches if m is not None), tuple(n for n in no_matches if n is not None), lines


def _items(
    fields: _Fields, examples: _Map, kind: str, lines: dict[tuple[str, int], int]
) -> Iterator[tuple[object, int]]:
    value = examples.get(kind)
    if value is None:
        return
    if not isinstance(value, _Seq):
        fields.problem_at(examples.key_lines[kind], f"examples: {kind}: expected a list")
        return
    for index, (item, raw, line) in enumerate(zip(value, value.raw, value.item_lines, strict=True)):
        lines[(kind, index)] = line
        yield (raw if raw is not None and item is not None else item), line


def _read_match(fields: _Fields, item: object, line: int) -> Example | None:
    if isinstance(item, str):
        return Example(line=item)
    if not isinstance(item, _Map):
        fields.problem_at(line, "examples: a match entry is a line, or a mapping with `line:` and `facts:`")
        return None
    entry = _Fields(item, fields.report, fields.rule_id)
    for key in item:
        if key not in ("line", "facts"):
            entry.problem(key, _unknown("match example key", str(key), ("line", "facts")))
    text = entry.text("line", required=True)
    facts = item.get("facts")
    if facts is None:
        return Example(line=text) if text else None
    if not isinstance(facts, _Map) or any(k not in facts.raw or facts[k] is None for k in facts):
        entry.problem("facts", "facts: expected a mapping of fact name to value")
        return None
    return Example(line=text, facts=MappingProxyType({str(k): facts.raw[k] for k in facts}))


def _read_no_match(fields: _Fields, item: object, line: int) -> str | None:
    if isinstance(item, str):
        return item
    fields.problem_at(line, "examples: a no_match entry is a line (a string)")
    return None


# ---- packs and layers ----


def _display(path: Path, builtin: bool) -> str:
    if builtin and path.is_relative_to(BUILTIN_DIR):
        return f"rules/{path.relative_to(BUILTIN_DIR).as_posix()}"
    return str(path)


def _read_pack(path: Path, *, builtin: bool, problems: list[str], check_examples: bool = True) -> _Pack:
    report = _Report(_display(path, builtin))
    parsed = _parse(path, report)
    pack = _Pack()
    if parsed is not None:
        data, duplicates = parsed
        ctx = _Context(report, path.stem, builtin, check_examples)
        pack = _read_rules(data, ctx, duplicates=duplicates)
    report.flush(problems)
    return pack


def _read_rules(data: object, ctx: _Context, *, duplicates: list[tuple[int, str]]) -> _Pack:
    report = ctx.report
    if not isinstance(data, _Map):
        report.add(None, None, "not a rule pack: expected a mapping with a `rules:` list")
        return _Pack()
    top = _Fields(data, report, None)
    for key in data:
        if key not in ("pack", "rules"):
            top.problem(key, _unknown("key", str(key), ("pack", "rules")))
    items = data.get("rules")
    if not isinstance(items, _Seq):
        top.problem("rules" if "rules" in data else None, "rules: expected a list of rules")
        return _Pack()
    _report_duplicates(items, report, duplicates)
    ctx = replace(ctx, pack=top.text("pack") or ctx.pack)
    entries = [_read_entry(item, line, ctx) for item, line in zip(items, items.item_lines, strict=True)]
    return _Pack(
        tuple(e for e in entries if isinstance(e, Rule)),
        tuple(e for e in entries if isinstance(e, _Disable)),
        tuple(c for item in items if (c := _claim(item, report.path)) is not None),
        MappingProxyType(ctx.example_lines),
    )


def _claim(item: object, path: str) -> _Claim | None:
    if not isinstance(item, _Map) or not (rule_id := item.raw.get("id")):
        return None
    aliases = item.get("aliases")
    names = tuple(a for a in aliases.raw if a) if isinstance(aliases, _Seq) else ()
    return _Claim(rule_id, (rule_id, *names), Location(path, item.key_lines.get("id", item.line)))


def _read_entry(item: object, line: int, ctx: _Context) -> Rule | _Disable | None:
    if not isinstance(item, _Map):
        ctx.report.add(line, None, "a rule is a mapping (id:, title:, cause:, role:, pattern:, ...)")
        return None
    return _read_rule(item, ctx)


def _report_duplicates(items: _Seq, report: _Report, duplicates: list[tuple[int, str]]) -> None:
    for line, message in duplicates:
        owner = next((m for m in items if isinstance(m, _Map) and m.line <= line <= m.end), None)
        report.add(line, owner.raw.get("id") if owner is not None else None, message)


def _check_unique(claims: Iterable[_Claim], problems: list[str]) -> None:
    """Ids and aliases are unique within a layer (the built-ins, or all user packs together)."""
    seen: dict[str, _Claim] = {}
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


def _load_layer(paths: Iterable[Path], *, builtin: bool, problems: list[str]) -> _Pack:
    layer = _layer([_read_pack(path, builtin=builtin, problems=problems) for path in paths])
    _check_unique(layer.claims, problems)
    return layer


def _layer(packs: Sequence[_Pack]) -> _Pack:
    return _Pack(
        tuple(r for p in packs for r in p.rules),
        tuple(d for p in packs for d in p.disabled),
        tuple(c for p in packs for c in p.claims),
    )


@lru_cache(maxsize=1)
def _builtin_layer() -> tuple[_Pack, tuple[str, ...]]:
    problems: list[str] = []
    layer = _load_layer(builtin_pack_paths(), builtin=True, problems=problems)
    return layer, tuple(problems)


def _expand(paths: Iterable[Path], problems: list[str]) -> list[Path]:
    """Pack files from files and directories, each once even when named twice (a dir and a file in it)."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted([*path.glob("*.yaml"), *path.glob("*.yml")])
            if not found:
                problems.append(f"{path}: no rule packs (*.yaml, *.yml) in this directory")
            files += found
        elif path.is_file():
            files.append(path)
        else:
            problems.append(f"{path}: no such file or directory")
    return list({path.resolve(): path for path in files}.values())


def _merge(base: _Pack, user: _Pack, problems: list[str], *, has_builtins: bool) -> list[Rule]:
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
    base = _Pack()
    if builtin:
        base, builtin_problems = _builtin_layer()
        problems += builtin_problems
    user = _load_layer(_expand(user_paths, problems), builtin=False, problems=problems)
    rules = _merge(base, user, problems, has_builtins=builtin) if not problems else []
    if problems:
        raise RulePackError(problems)
    return tuple(rules)


@dataclass(frozen=True, slots=True)
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
        PackContents(_display(path, builtin), p.rules, tuple(d.rule_id for d in p.disabled), p.example_lines)
        for path, p in zip(files, packs, strict=True)
    ]


# ---- remediation checklist ----


@dataclass(frozen=True, slots=True)
class Remediation:
    """Three layers of advice: fix the cause, bound the wait (timeouts), fail fast next time (detection)."""

    fix_cause: Mapping[Cause, tuple[str, ...]]
    timeouts: tuple[str, ...]
    detection: tuple[str, ...]


def load_remediation(path: Path | None = None) -> Remediation:
    """The remediation checklist, from the built-in `remediation.yaml` unless a path is given."""
    return _load_remediation(path or BUILTIN_DIR / REMEDIATION_FILE)


@lru_cache(maxsize=4)
def _load_remediation(path: Path) -> Remediation:
    report = _Report(_display(path, builtin=True))
    result = None
    if (parsed := _parse(path, report)) is not None:
        data, duplicates = parsed
        for line, message in duplicates:
            report.add(line, None, message)
        result = _read_remediation(data, report)
    problems: list[str] = []
    report.flush(problems)
    if problems or result is None:
        raise RulePackError(problems or [f"{report.path}: not a remediation checklist"])
    return result


def _read_remediation(data: object, report: _Report) -> Remediation | None:
    layers = data.get("layers") if isinstance(data, _Map) else None
    if not isinstance(layers, _Map):
        report.add(None, None, "expected a mapping `layers:` with fix_cause, timeouts and detection")
        return None
    fields = _Fields(layers, report, None)
    for key in layers:
        if key not in ("fix_cause", "timeouts", "detection"):
            fields.problem(key, _unknown("layer", str(key), ("fix_cause", "timeouts", "detection")))
    timeouts, detection = fields.texts("timeouts"), fields.texts("detection")
    for key, steps in (("timeouts", timeouts), ("detection", detection)):
        if not steps:
            fields.problem(key, f"{key}: expected a non-empty list of steps")
    fix = layers.get("fix_cause")
    if not isinstance(fix, _Map):
        fields.problem("fix_cause", "fix_cause: expected a mapping of cause id to steps")
        return None
    return Remediation(MappingProxyType(_read_fix_cause(fix, report)), timeouts, detection)


def _read_fix_cause(fix: _Map, report: _Report) -> dict[Cause, tuple[str, ...]]:
    fields = _Fields(fix, report, None)
    out: dict[Cause, tuple[str, ...]] = {}
    for key in fix:
        name = str(key)
        if name not in ROOT_CAUSES:
            fields.problem(key, _unknown("root cause", name, sorted(ROOT_CAUSES)))
        elif not (steps := fields.texts(name)):
            fields.problem(key, f"fix_cause: {name}: expected a non-empty list of steps")
        else:
            out[Cause(name)] = steps
    return out
