"""The remediation checklist (`rules/remediation.yaml`): fix the cause, bound the wait, detect deaths fast."""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

from rankautopsy import __version__, cache
from rankautopsy.errors import RulePackError
from rankautopsy.model import Cause
from rankautopsy.records import record
from rankautopsy.rulepacks.loader import BUILTIN_DIR, display_path
from rankautopsy.rulepacks.rule import REMEDIATION_FILE, ROOT_CAUSES, Fields, unknown
from rankautopsy.rulepacks.yamlsafe import Map, Report, parse_yaml

# ---- remediation checklist ----


@record
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
    try:
        key = cache.key_of(_CACHE_FORMAT, __version__, path.read_bytes())
    except OSError:
        return _parse_remediation(path)
    if (body := cache.read(_CACHE_ENTRY, key)) is not None and (cached := _decode(body)) is not None:
        return cached
    result = _parse_remediation(path)
    cache.write(_CACHE_ENTRY, key, _encode(result))
    return result


# the checked checklist, as JSON in the per-user cache, keyed by the file's bytes and the tool's version
_CACHE_ENTRY = "remediation"
_CACHE_FORMAT = "1"


def _encode(r: Remediation) -> bytes:
    fix = {cause.value: list(steps) for cause, steps in r.fix_cause.items()}
    return json.dumps({"fix_cause": fix, "timeouts": list(r.timeouts), "detection": list(r.detection)}).encode()


def _decode(body: bytes) -> Remediation | None:
    try:
        d = json.loads(body)
        fix = {Cause(name): _texts(steps) for name, steps in d["fix_cause"].items()}
        timeouts, detection = _texts(d["timeouts"]), _texts(d["detection"])
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    if not (timeouts and detection and fix) or not all(fix.values()) or not set(fix) <= ROOT_CAUSES:
        return None
    return Remediation(MappingProxyType(fix), timeouts, detection)


def _texts(values: object) -> tuple[str, ...]:
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise TypeError("not a list of strings")
    return tuple(values)


def _parse_remediation(path: Path) -> Remediation:
    report = Report(display_path(path, builtin=True))
    result = None
    if (parsed := parse_yaml(path, report)) is not None:
        data, duplicates = parsed
        for line, message in duplicates:
            report.add(line, None, message)
        result = _read_remediation(data, report)
    problems: list[str] = []
    report.flush(problems)
    if problems or result is None:
        raise RulePackError(problems or [f"{report.path}: not a remediation checklist"])
    return result


def _read_remediation(data: object, report: Report) -> Remediation | None:
    layers = data.get("layers") if isinstance(data, Map) else None
    if not isinstance(layers, Map):
        report.add(None, None, "expected a mapping `layers:` with fix_cause, timeouts and detection")
        return None
    fields = Fields(layers, report, None)
    for key in layers:
        if key not in ("fix_cause", "timeouts", "detection"):
            fields.problem(key, unknown("layer", str(key), ("fix_cause", "timeouts", "detection")))
    timeouts, detection = fields.texts("timeouts"), fields.texts("detection")
    for key, steps in (("timeouts", timeouts), ("detection", detection)):
        if not steps:
            fields.problem(key, f"{key}: expected a non-empty list of steps")
    fix = layers.get("fix_cause")
    if not isinstance(fix, Map):
        fields.problem("fix_cause", "fix_cause: expected a mapping of cause id to steps")
        return None
    return Remediation(MappingProxyType(_read_fix_cause(fix, report)), timeouts, detection)


def _read_fix_cause(fix: Map, report: Report) -> dict[Cause, tuple[str, ...]]:
    fields = Fields(fix, report, None)
    out: dict[Cause, tuple[str, ...]] = {}
    for key in fix:
        name = str(key)
        if name not in ROOT_CAUSES:
            fields.problem(key, unknown("root cause", name, sorted(ROOT_CAUSES)))
        elif not (steps := fields.texts(name)):
            fields.problem(key, f"fix_cause: {name}: expected a non-empty list of steps")
        else:
            out[Cause(name)] = steps
    return out
