"""Broken packs give exact one-line problems (`file:line: rule-id: message`); good user packs layer over built-ins."""

from __future__ import annotations

from pathlib import Path

import pytest

from rankautopsy.errors import RulePackError
from rankautopsy.model import Cause, Role
from rankautopsy.rulepacks.loader import load_pack, load_rules
from rankautopsy.rulepacks.remediation import load_remediation
from rankautopsy.rulepacks.ruletest import extract_facts, run_examples

PACKS = Path(__file__).parent / "rulepacks"


def problems_of(path: Path, *, builtin: bool = False) -> list[str]:
    with pytest.raises(RulePackError) as caught:
        load_pack(path, builtin=builtin)
    return caught.value.problems


# Each deliberately broken pack and the one line it must produce (the CLI tests reuse this table).
BROKEN_PACKS = [
    ("bad_yaml.yaml", "3: invalid YAML: mapping values are not allowed here"),
    ("duplicate_key.yaml", "7: inhouse.twice: duplicate key 'pattern'"),
    ("unknown_cause.yaml", "4: inhouse.gpu-memory: unknown cause 'gpu_oom' (did you mean 'cuda_oom'?)"),
    ("unknown_key.yaml", "7: inhouse.disk-full: unknown key 'remedation' (did you mean 'remediation'?)"),
    ("bad_regex.yaml", "6: inhouse.bad-regex: bad regex: missing ) at position 18"),
    ("catastrophic_regex.yaml", "6: inhouse.slow: pattern too slow (catastrophic backtracking?)"),
    ("catastrophic_late_char.yaml", "6: inhouse.slow-late: pattern too slow (catastrophic backtracking?)"),
    ("missing_examples.yaml", "2: inhouse.untested: no examples: add at least one match and one no_match"),
    (
        "failing_example.yaml",
        "10: inhouse.wrong-fact: example match[0] facts differ: pid: expected '4243', got '4242': 'worker 4242 died'",
    ),
]


@pytest.mark.parametrize(("name", "expected"), BROKEN_PACKS)
def test_broken_pack_gives_one_exact_line(name: str, expected: str) -> None:
    path = PACKS / name
    assert problems_of(path) == [f"{path}:{expected}"]


def test_every_problem_of_a_pack_is_reported() -> None:
    path = PACKS / "many_problems.yaml"
    roles = "collective_timeout, launcher_teardown, peer_lost, watchdog_abort"
    assert problems_of(path) == [
        f"{path}:5: inhouse.symptom-as-cause: cause 'host_oom' does not fit role 'symptom' (use one of: {roles})",
        f"{path}:11: bad id 'Inhouse_Bad': use pack.kebab-case, e.g. kernel.oom-killer",
        f"{path}:27: inhouse.no-pattern: missing 'pattern'",
        f"{path}:31: inhouse.no-pattern: unknown status 'experimental' (one of: stable, preview, deprecated)",
        f"{path}:35: a rule is a mapping (id:, title:, cause:, role:, pattern:, ...)",
        f"{path}:19: inhouse.symptom-as-cause: duplicate id (at {path}:3)",
    ]


def test_problems_of_all_packs_are_collected_before_raising() -> None:
    with pytest.raises(RulePackError) as caught:
        load_rules([PACKS / "unknown_key.yaml", PACKS / "bad_regex.yaml"], builtin=False)
    assert [p.split(": ", 1)[0] for p in caught.value.problems] == [
        f"{PACKS / 'unknown_key.yaml'}:7",
        f"{PACKS / 'bad_regex.yaml'}:6",
    ]
    assert str(caught.value).count("\n") == 1


def test_built_in_packs_need_remediation_and_cannot_disable() -> None:
    path = PACKS / "builtin_without_remediation.yaml"
    assert problems_of(path, builtin=True) == [
        f"{path}:3: inhouse.no-steps: no remediation: a cause rule needs at least one step",
        f"{path}:12: inhouse.switched-off: disable: only a user pack can disable a rule",
    ]


def test_missing_user_pack_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(RulePackError) as caught:
        load_rules([tmp_path / "nope.yaml"])
    assert caught.value.problems == [f"{tmp_path / 'nope.yaml'}: no such file or directory"]


def test_the_same_id_in_two_user_packs_is_a_problem(tmp_path: Path) -> None:
    copy = tmp_path / "copy.yaml"
    copy.write_text((PACKS / "fluxcap.yaml").read_text())
    with pytest.raises(RulePackError) as caught:
        load_rules([PACKS / "fluxcap.yaml", copy])
    original = PACKS / "fluxcap.yaml"
    assert caught.value.problems == [f"{copy}:2: inhouse.fluxcap-quench: duplicate id (at {original}:2)"]


def test_minimal_user_pack_loads_and_its_examples_pass() -> None:
    (rule,) = load_pack(PACKS / "fluxcap.yaml", builtin=False)
    assert (rule.id, rule.cause, rule.role, rule.builtin) == (
        "inhouse.fluxcap-quench",
        Cause.PYTHON_EXCEPTION,
        Role.CAUSE,
        False,
    )
    assert rule.source is not None
    assert (rule.source.source, rule.source.line) == (str(PACKS / "fluxcap.yaml"), 2)
    assert all(result.ok for result in run_examples([rule]))
    assert extract_facts(rule, "[rank4]: ERROR FLUXCAP-7731 reactor quench on shard 4") == {"code": "7731"}


def test_user_rule_overrides_built_in_in_place_and_disable_removes() -> None:
    builtin = [rule.id for rule in load_rules()]
    rules = load_rules([PACKS / "override.yaml"])
    ids = [rule.id for rule in rules]
    assert ids == [rule_id for rule_id in builtin if rule_id != "kernel.oom-reaper"]
    override = rules[ids.index("kernel.oom-killer")]
    assert (override.title, override.builtin) == ("In-house OOM killer wording", False)
    assert extract_facts(override, "memguard: killed pid 4242 (rss 81 GiB)") == {"pid": "4242"}


def test_user_rule_overrides_built_in_by_alias() -> None:
    ids = [rule.id for rule in load_rules([PACKS / "alias_override.yaml"])]
    assert "kernel.segfault" not in ids
    assert ids.index("inhouse.segv") == [rule.id for rule in load_rules()].index("kernel.segfault")


def test_disabling_an_unknown_rule_is_a_problem() -> None:
    path = PACKS / "disable_unknown.yaml"
    with pytest.raises(RulePackError) as caught:
        load_rules([path])
    assert caught.value.problems == [f"{path}:2: kernel.no-such-rule: disable: no built-in rule has this id or alias"]


def test_user_packs_alone_ignore_disables_of_built_ins() -> None:
    rules = load_rules([PACKS / "fluxcap.yaml", PACKS / "disable_unknown.yaml"], builtin=False)
    assert [rule.id for rule in rules] == ["inhouse.fluxcap-quench"]


def test_broken_remediation_checklist_reports_every_problem(tmp_path: Path) -> None:
    path = tmp_path / "remediation.yaml"
    path.write_text(
        "layers:\n"
        "  fix_cause:\n"
        '    host_oom: ["Add RAM."]\n'
        '    collective_timeout: ["Wait longer."]\n'
        "    hang: []\n"
        '  timeouts: ["Set a timeout."]\n'
        "  detection: []\n"
    )
    assert _remediation_problems(path) == [
        f"{path}:4: unknown root cause 'collective_timeout' (one of: {', '.join(sorted(c.value for c in _roots()))})",
        f"{path}:5: fix_cause: hang: expected a non-empty list of steps",
        f"{path}:7: detection: expected a non-empty list of steps",
    ]


def _remediation_problems(path: Path) -> list[str]:
    with pytest.raises(RulePackError) as caught:
        load_remediation(path)
    return caught.value.problems


def _roots() -> list[Cause]:
    return [c for c in Cause if not c.is_symptom and c not in (Cause.PROGRESS, Cause.CONTEXT)]


def test_facts_a_rule_states_are_names_to_strings_and_a_known_exit_cause() -> None:
    path = PACKS / "bad_facts.yaml"
    causes = (
        "abort, bus_error, cuda_error, cuda_oom, gpu_hardware, hang, host_oom, killed, nccl_error, python_exception"
    )
    assert problems_of(path) == [
        f"{path}:7: inhouse.spawn-raised: unknown exit_cause 'python_oops' (one of: {causes}, segfault, silent_exit,"
        " time_limit)",
        f"{path}:16: inhouse.shapeless-facts: facts: expected a mapping of fact name to a quoted value",
    ]
