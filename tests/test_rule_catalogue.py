"""Catalogue policy for the built-in packs; each test collects every offender before one assert."""

from __future__ import annotations

from rankautopsy.model import Cause, Role, Rule
from rankautopsy.rulepacks.loader import BUILTIN_DIR, builtin_pack_paths, load_rules
from rankautopsy.rulepacks.remediation import load_remediation
from rankautopsy.rulepacks.rule import ROOT_CAUSES
from rankautopsy.rulepacks.ruletest import compile_pattern
from rankautopsy.sources.prefixes import strip_prefixes

RULES = load_rules()

# Named groups have fixed meanings across packs (the timeline and verdict read them by name).
FACT_NAMES = frozenset(
    {
        "rank", "peer_rank", "pg_rank", "watchdog", "local_rank", "pid", "host", "gpu", "pci", "xid", "seq",
        "pg", "comm_rank", "nranks", "busid", "peer", "status",
        "last_enqueued", "last_completed", "op", "timeout_ms", "step", "total_steps", "exitcode",
        "signal", "exc_type", "exc_msg", "comm", "what", "idx", "ranks", "oom", "culprit", "culprits",
        "culprit_local_rank", "world_size", "memory", "at", "memcg", "launcher_raised",
    }
)  # fmt: skip
PACKS = {
    "ascend", "cloud", "composer", "dask", "deepspeed", "flux", "gloo", "horovod", "kernel", "kubernetes", "lightgbm",
    "lightning", "megatron", "mindspore", "mlx", "mpi", "native", "nccl", "neuron", "nvidia", "paddle", "petsc", "rocm",
    "progress", "python", "pytorch", "ray", "runtime", "sglang", "skypilot", "slurm", "tgi", "ucx", "xgboost",
    "torchrun", "vllm", "xla",
}  # fmt: skip
ROLE_CAUSES = {
    Role.CAUSE: ROOT_CAUSES,
    Role.SYMPTOM: {c for c in Cause if c.is_symptom},
    Role.PROGRESS: {Cause.PROGRESS},
    Role.CONTEXT: {Cause.CONTEXT},
}


def test_packs_are_found_under_builtin_dir() -> None:
    assert BUILTIN_DIR.is_dir()
    assert {path.stem for path in builtin_pack_paths()} == PACKS
    assert {rule.source.source for rule in RULES if rule.source} == {f"rules/{p}.yaml" for p in PACKS}


def test_ids_and_aliases_are_unique() -> None:
    names = [name for rule in RULES for name in (rule.id, *rule.aliases)]
    assert sorted({n for n in names if names.count(n) > 1}) == []


def test_ids_are_named_after_their_pack() -> None:
    assert [r.id for r in RULES if r.source is None or f"rules/{r.id.split('.')[0]}.yaml" != r.source.source] == []


def test_role_fits_cause() -> None:
    assert [(r.id, r.role, r.cause) for r in RULES if r.cause not in ROLE_CAUSES[r.role]] == []


def test_every_rule_has_match_and_no_match_examples() -> None:
    assert [r.id for r in RULES if not r.match_examples or not r.no_match_examples] == []


def test_every_rule_explains_itself() -> None:
    assert [r.id for r in RULES if not r.title or not r.why or not r.since] == []


def test_cause_rules_have_remediation() -> None:
    assert [r.id for r in RULES if r.role is Role.CAUSE and not r.remediation] == []


def test_facts_use_the_shared_names() -> None:
    bad = {r.id: sorted(set(_groups(r)) - FACT_NAMES) for r in RULES}
    assert {rule_id: names for rule_id, names in bad.items() if names} == {}


def test_examples_only_name_facts_the_pattern_can_extract() -> None:
    bad = [(r.id, e.line) for r in RULES for e in r.match_examples if not set(e.facts) <= set(_groups(r))]
    assert bad == []


def test_patterns_stay_on_one_line_when_a_stream_is_scanned_in_bulk() -> None:
    """The matcher searches a whole stream at once: a match must never reach into a neighbouring line."""
    offenders = []
    for rule in RULES:
        lines = [e.line for e in rule.match_examples] + list(rule.no_match_examples)
        texts = [strip_prefixes(line)[0] for line in lines]
        starts = [sum(len(t) + 1 for t in texts[:i]) for i in range(len(texts))]
        matches = list(compile_pattern(rule.pattern, ignorecase=rule.ignorecase).finditer("\n".join(texts)))
        found = {max(i for i, s in enumerate(starts) if s <= m.start()) for m in matches}
        if any("\n" in m.group(0) for m in matches) or found != set(range(len(rule.match_examples))):
            offenders.append(rule.id)
    assert offenders == []


def test_patterns_are_cheap() -> None:
    """No leading `.*` (the engine would retry it at every position) and no `\\s`, which can cross lines."""
    assert [r.id for r in RULES if r.pattern.startswith((".*", "(?:.*")) or "\\s" in r.pattern] == []


def test_remediation_covers_every_root_cause() -> None:
    remediation = load_remediation()
    assert sorted(ROOT_CAUSES - set(remediation.fix_cause)) == []
    assert all(remediation.fix_cause.values())
    assert remediation.timeouts
    assert remediation.detection


def _groups(rule: Rule) -> list[str]:
    return list(compile_pattern(rule.pattern, ignorecase=rule.ignorecase).groupindex)
