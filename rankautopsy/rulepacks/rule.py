"""One rule of a pack: its fields read and checked (role against cause, effects against the facts its
pattern captures, the pattern against catastrophic backtracking) and its examples run."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Hashable, Iterable, Iterator, Mapping, Sequence
from dataclasses import field
from enum import StrEnum
from types import MappingProxyType
from typing import TYPE_CHECKING, TypeVar

from rankautopsy import recache
from rankautopsy.cputime import bounded
from rankautopsy.model import Assembly, Cause, Effect, Example, Location, Role, Rule, StreamKind
from rankautopsy.records import record
from rankautopsy.rulepacks.ruletest import compile_pattern, describe, run_examples
from rankautopsy.rulepacks.yamlsafe import Map, Report, Seq

if TYPE_CHECKING:
    import regex

ID_PATTERN = recache.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*\.[a-z0-9]+(?:-[a-z0-9]+)*$")
STATUSES = ("stable", "preview", "deprecated")
ROOT_CAUSES = frozenset(c for c in Cause if not c.is_symptom and c not in (Cause.PROGRESS, Cause.CONTEXT))
REMEDIATION_FILE = "remediation.yaml"
# CPU time one adversarial line may take before the pattern is refused. A catastrophic pattern takes
# far more; a quadratic one (`[.]+[,;]`) takes 0.1-0.3 s by machine on the 5,000-character line, and
# so close to a lower bound its answer changed from run to run: the scan's own bound handles those.
SLOW_PATTERN_SECONDS = 1.0

_RULE_KEYS = (
    "id", "title", "cause", "role", "streams", "pattern", "ignorecase", "assemble", "why", "falsepositives",
    "remediation", "references", "status", "since", "aliases", "disable", "examples", "effects", "facts",
    "at_start",
)  # fmt: skip
# The facts each effect reads: a rule with the effect must capture at least one group of each tuple
# (an empty tuple: nothing required; exit/teardown without a subject group are about the emitting rank).
EFFECT_FACTS: Mapping[Effect, tuple[frozenset[str], ...]] = {
    Effect.EXIT: (),
    Effect.TEARDOWN: (),
    Effect.JOB_END: (),
    Effect.AFTER_DEATH: (),
    Effect.COMPLETE: (),
    Effect.IDENTITY: (frozenset({"pid", "busid", "host"}),),
    Effect.NAMES_CULPRIT: (frozenset({"culprit", "culprits", "culprit_local_rank"}),),
    Effect.NAMES_WAITER: (frozenset({"ranks"}),),
    Effect.STALLED: (),
    Effect.PREFIX: (frozenset({"rank", "local_rank", "host"}),),
}
_ROLE_CAUSES = {
    Role.CAUSE: ROOT_CAUSES,
    Role.SYMPTOM: frozenset(c for c in Cause if c.is_symptom),
    Role.PROGRESS: frozenset({Cause.PROGRESS}),
    Role.CONTEXT: frozenset({Cause.CONTEXT}),
}

_E = TypeVar("_E", bound=StrEnum)


# ---- one rule ----


def unknown(what: str, value: str, choices: Sequence[str]) -> str:
    import difflib  # only for an unknown name: ~9 ms of every start otherwise

    close = difflib.get_close_matches(value, choices, n=1)
    hint = f"did you mean {close[0]!r}?" if close else "one of: " + ", ".join(choices)
    return f"unknown {what} {value!r} ({hint})"


class Fields:
    """One mapping read field by field; each misuse becomes a problem at the line of its key."""

    def __init__(self, data: Map, report: Report, rule_id: str | None) -> None:
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
        if isinstance(value, Map | Seq):
            self.problem(key, f"{key}: expected a string")
            return ""
        return self.data.raw.get(key, str(value))

    def texts(self, key: str) -> tuple[str, ...]:
        value = self.data.get(key)
        if value is None:
            return ()
        if not isinstance(value, Seq) or any(raw is None for raw in value.raw):
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
            self.problem(key, unknown(key, text, [m.value for m in kind]))
            return None

    def choices(self, key: str, kind: type[_E], *, each: str) -> frozenset[_E]:
        out = set()
        for text in self.texts(key):
            try:
                out.add(kind(text))
            except ValueError:
                self.problem(key, unknown(each, text, [m.value for m in kind]))
        return frozenset(out)


@record
class Disable:
    rule_id: str
    where: Location


@record
class Claim:
    """The names one entry takes (its id and aliases), whether or not the entry is valid."""

    rule_id: str
    names: tuple[str, ...]
    where: Location


ExampleLines = Mapping[tuple[str, str, int], int]  # (rule id, kind, index) -> line of the example


@record
class Pack:
    rules: tuple[Rule, ...] = ()
    disabled: tuple[Disable, ...] = ()
    claims: tuple[Claim, ...] = ()
    example_lines: ExampleLines = field(default_factory=dict)


@record
class Context:
    report: Report
    pack: str
    builtin: bool
    check_examples: bool = True
    example_lines: dict[tuple[str, str, int], int] = field(default_factory=dict)


def read_rule(data: Map, ctx: Context) -> Rule | Disable | None:
    before = len(ctx.report.found)
    rule_id = _read_id(data, ctx)
    fields = Fields(data, ctx.report, rule_id)
    for key in data:
        if key not in _RULE_KEYS:
            fields.problem(key, unknown("key", str(key), _RULE_KEYS))
    if fields.flag("disable"):
        if ctx.builtin:
            fields.problem("disable", "disable: only a user pack can disable a rule")
        where = Location(ctx.report.path, data.key_lines.get("id", data.line))
        return Disable(rule_id, where) if rule_id and len(ctx.report.found) == before else None
    rule = _build_rule(fields, rule_id, ctx)
    return rule if rule is not None and len(ctx.report.found) == before else None


def _read_id(data: Map, ctx: Context) -> str:
    fields = Fields(data, ctx.report, None)
    rule_id = fields.text("id", required=True)
    if rule_id and not ID_PATTERN.match(rule_id):
        fields.problem("id", f"bad id {rule_id!r}: use pack.kebab-case, e.g. kernel.oom-killer")
    elif ctx.builtin and rule_id and not rule_id.startswith(ctx.pack + "."):
        fields.problem("id", f"bad id {rule_id!r}: a rule of pack {ctx.pack!r} is named {ctx.pack}.<name>")
    return rule_id


def _build_rule(fields: Fields, rule_id: str, ctx: Context) -> Rule | None:
    title = fields.text("title", required=True)
    cause = fields.choice("cause", Cause, required=True)
    role = fields.choice("role", Role, required=True)
    if cause is not None and role is not None and cause not in _ROLE_CAUSES[role]:
        allowed = ", ".join(sorted(_ROLE_CAUSES[role]))
        fields.problem("cause", f"cause {cause.value!r} does not fit role {role.value!r} (use one of: {allowed})")
    status = fields.text("status") or "stable"
    if status not in STATUSES:
        fields.problem("status", unknown("status", status, STATUSES))
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
        facts=_read_facts(fields),
        at_start=fields.flag("at_start"),
        match_examples=matches,
        no_match_examples=no_matches,
        source=Location(ctx.report.path, fields.data.key_lines.get("id", fields.data.line)),
        builtin=ctx.builtin,
    )
    ctx.example_lines.update({(rule.id, kind, index): line for (kind, index), line in lines.items()})
    _check_rule(fields, rule, lines, run=ctx.check_examples)
    return rule if cause is not None and role is not None else None


def _read_facts(fields: Fields) -> tuple[tuple[str, str], ...]:
    """Facts every line of the rule states whatever its words (spawn's child that raised exits 1): read
    under the pattern's own, which win."""
    value = fields.data.get("facts")
    if value is None:
        return ()
    if not isinstance(value, Map) or any(
        not isinstance(value.raw.get(k), str) or not str(k).isidentifier() for k in value
    ):
        fields.problem("facts", "facts: expected a mapping of fact name to a quoted value")
        return ()
    said = value.raw.get("exit_cause")
    if said is not None and said not in {c.value for c in ROOT_CAUSES}:
        fields.problem("facts", unknown("exit_cause", said, sorted(c.value for c in ROOT_CAUSES)))
    return tuple(sorted((str(k), value.raw[k]) for k in value))


def _read_aliases(fields: Fields) -> tuple[str, ...]:
    aliases = fields.texts("aliases")
    for alias in aliases:
        if not ID_PATTERN.match(alias):
            fields.problem("aliases", f"bad alias {alias!r}: an alias is an old id, pack.kebab-case")
    return aliases


def _check_rule(fields: Fields, rule: Rule, lines: Mapping[tuple[str, int], int], *, run: bool) -> None:
    if rule.role is Role.CAUSE and not rule.remediation and rule.builtin:
        fields.problem("remediation", "no remediation: a cause rule needs at least one step")
    if not rule.match_examples or not rule.no_match_examples:
        fields.problem("examples", "no examples: add at least one match and one no_match")
    # a built-in pattern's speed is a test of the suite (test_rule_examples), not of every first diagnosis
    if not rule.pattern or not _pattern_ok(fields, rule, timed=run or not rule.builtin):
        return
    _check_effects(fields, rule)
    if not run:
        return
    for result in run_examples([rule]):
        if not result.ok:
            fields.problem_at(lines.get((result.kind, result.index), fields.data.line), describe(result))


def _check_effects(fields: Fields, rule: Rule) -> None:
    groups = set(compile_pattern(rule.pattern, ignorecase=rule.ignorecase).groupindex) | {k for k, _ in rule.facts}
    for effect in sorted(rule.effects):
        for needed in EFFECT_FACTS[effect]:
            if not groups & needed:
                names = ", ".join(f"(?P<{name}>...)" for name in sorted(needed))
                fields.problem("effects", f"effect {effect.value!r} reads a fact the pattern never captures: {names}")
    if "comm_rank" in groups and "nranks" not in groups:
        fields.problem("pattern", "a comm_rank is a global rank only with its communicator's size: capture nranks")


def _pattern_ok(fields: Fields, rule: Rule, *, timed: bool) -> bool:
    import regex  # only where a pack is validated: a cached one is not

    try:
        compiled = compile_pattern(rule.pattern, ignorecase=rule.ignorecase)
    except regex.error as exc:
        fields.problem("pattern", f"bad regex: {exc}")
        return False
    except RecursionError:  # the regex parser recurses: thousands of nested groups
        fields.problem("pattern", "bad regex: nested too deeply")
        return False
    if compiled.search("") is not None:
        fields.problem("pattern", "pattern matches an empty line: it would match every line")
        return False
    if timed and _too_slow(compiled, _near_misses(rule)):
        fields.problem("pattern", "pattern too slow (catastrophic backtracking?)")
        return False
    return True


def _near_misses(rule: Rule) -> Iterator[str]:
    examples = [e.line for e in rule.match_examples] + list(rule.no_match_examples)
    pumped = () if rule.builtin else _pumped([e.line for e in rule.match_examples])
    return itertools.chain(_adversarial(rule.pattern, examples), pumped)


def _pumped(lines: Sequence[str]) -> Iterator[str]:
    """A matching example with one of its characters repeated and the match then broken: the line that
    `ValueError: (x|xx)+y` backtracks on is `ValueError: xxxx...!`, which no single repeated character
    reaches (a user's pattern only: the built-in ones are tested)."""
    for line in lines:
        seen: set[str] = set()
        for i, char in enumerate(line[:200]):
            if char not in seen:
                seen.add(char)
                yield line[:i] + char * 5000 + "!"


def _adversarial(pattern: str, examples: Sequence[str]) -> Iterator[str]:
    """Long near-miss lines: one character repeated (each of the pattern's own: in `ValueError: (x|xx)+y`
    the slow one is the 12th), the examples repeated."""
    chars = dict.fromkeys("a1 " + "".join(c for c in pattern if c.isalnum()))
    for char in chars:
        yield char * 5000 + "!"
    for line in examples:
        yield " ".join([line] * (5000 // (len(line) + 1) + 1)) + "!"


def _too_slow(compiled: regex.Pattern[str], lines: Iterable[str]) -> bool:
    """Whether any line takes the pattern more than SLOW_PATTERN_SECONDS of CPU time (not wall time:
    a loaded machine must not refuse a pattern that an idle one accepts)."""
    for line in lines:
        _, _, stopped = bounded(functools.partial(_search, compiled, line), SLOW_PATTERN_SECONDS)
        if stopped:
            return True
    return False


def _search(compiled: regex.Pattern[str], line: str, timeout: float) -> regex.Match[str] | None:
    return compiled.search(line, timeout=timeout)


def _read_examples(fields: Fields) -> tuple[tuple[Example, ...], tuple[str, ...], dict[tuple[str, int], int]]:
    value = fields.data.get("examples")
    if value is None:
        return (), (), {}
    if not isinstance(value, Map):
        fields.problem("examples", "examples: expected a mapping with `match:` and `no_match:` lists")
        return (), (), {}
    for key in value:
        if key not in ("match", "no_match"):
            fields.problem_at(value.key_lines[key], unknown("examples key", str(key), ("match", "no_match")))
    lines: dict[tuple[str, int], int] = {}
    matches = [_read_match(fields, item, line) for item, line in _items(fields, value, "match", lines)]
    no_matches = [_read_no_match(fields, item, line) for item, line in _items(fields, value, "no_match", lines)]
    return tuple(m for m in matches if m is not None), tuple(n for n in no_matches if n is not None), lines


def _items(fields: Fields, examples: Map, kind: str, lines: dict[tuple[str, int], int]) -> Iterator[tuple[object, int]]:
    value = examples.get(kind)
    if value is None:
        return
    if not isinstance(value, Seq):
        fields.problem_at(examples.key_lines[kind], f"examples: {kind}: expected a list")
        return
    for index, (item, raw, line) in enumerate(zip(value, value.raw, value.item_lines, strict=True)):
        lines[(kind, index)] = line
        yield (raw if raw is not None and item is not None else item), line


def _read_match(fields: Fields, item: object, line: int) -> Example | None:
    if isinstance(item, str):
        return Example(line=item)
    if not isinstance(item, Map):
        fields.problem_at(line, "examples: a match entry is a line, or a mapping with `line:` and `facts:`")
        return None
    entry = Fields(item, fields.report, fields.rule_id)
    for key in item:
        if key not in ("line", "facts"):
            entry.problem(key, unknown("match example key", str(key), ("line", "facts")))
    text = entry.text("line", required=True)
    facts = item.get("facts")
    if facts is None:
        return Example(line=text) if text else None
    if not isinstance(facts, Map) or any(k not in facts.raw or facts[k] is None for k in facts):
        entry.problem("facts", "facts: expected a mapping of fact name to value")
        return None
    return Example(line=text, facts=MappingProxyType({str(k): facts.raw[k] for k in facts}))


def _read_no_match(fields: Fields, item: object, line: int) -> str | None:
    if isinstance(item, str):
        return item
    fields.problem_at(line, "examples: a no_match entry is a line (a string)")
    return None
