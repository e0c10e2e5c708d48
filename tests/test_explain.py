"""`rankautopsy explain CAUSE`: the whole checklist of a cause, run through the real `main()`."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from rankautopsy.cli import main
from rankautopsy.cli.explain import EXPLAINED
from rankautopsy.model import Cause, Role
from rankautopsy.rulepacks.loader import load_rules
from rankautopsy.rulepacks.remediation import load_remediation
from rankautopsy.rulepacks.sources import ENV_VAR

REM = load_remediation()
BUILTIN = load_rules()


def run(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["rankautopsy", *args])
    with pytest.raises(SystemExit) as exited:
        main()
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out, captured.err


@pytest.fixture(autouse=True)
def _no_user_rules(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)


def _numbered(text: str, heading: str) -> list[str]:
    body = text.split(f"## {heading}\n\n", 1)[1].split("\n\n## ", 1)[0]
    return [re.sub(r"^\d+\. ", "", line) for line in body.splitlines()]


def test_a_cause_prints_its_steps_then_the_general_layers_and_its_rules(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(["explain", "host_oom"], capsys, monkeypatch)
    assert (code, err) == (0, "")
    assert out.startswith("# host_oom: out of host memory")
    assert _numbered(out, "Fix the cause") == list(REM.fix_cause[Cause.HOST_OOM])
    assert _numbered(out, "Bound the wait (timeouts)") == list(REM.timeouts)
    assert _numbered(out, "Detect it next time") == list(REM.detection)
    assert "- kernel.oom-killer: The kernel OOM-killer killed a process" in out.splitlines()


@pytest.mark.parametrize("spelling", ["python-exception", "PYTHON_EXCEPTION", " python_exception "])
def test_the_cause_id_is_read_as_users_type_it(
    spelling: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(["explain", spelling], capsys, monkeypatch)
    assert code == 0 and out.startswith("# python_exception: ")


def test_a_symptom_says_it_is_never_the_root_cause(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(["explain", "peer_lost"], capsys, monkeypatch)
    assert code == 0
    assert "never a root cause" in out and "## Fix the cause" not in out
    assert "- gloo.connection-closed: Gloo peer closed the connection" in out.splitlines()


def test_json_has_every_layer_and_the_rules_of_the_cause(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, _ = run(["explain", "segfault", "--format", "json"], capsys, monkeypatch)
    doc = json.loads(out)
    assert code == 0 and doc["cause"] == "segfault" and doc["symptom"] is False
    assert doc["fix_cause"] == list(REM.fix_cause[Cause.SEGFAULT]) and doc["timeouts"] == list(REM.timeouts)
    expected = sorted(r.id for r in BUILTIN if r.cause is Cause.SEGFAULT)
    assert sorted(r["id"] for r in doc["rules"]) == expected and expected


def test_every_root_cause_has_its_own_steps() -> None:
    """What the report's `rankautopsy explain CAUSE` hint promises exists for each cause it can name."""
    roots = [c for c in EXPLAINED if not c.is_symptom]
    assert [c for c in roots if not REM.fix_cause.get(c)] == []
    assert {r.cause for r in BUILTIN if r.role is Role.CAUSE} <= set(EXPLAINED)


def test_an_unknown_cause_is_one_line_and_status_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, err = run(["explain", "\x1b[31mbogus"], capsys, monkeypatch)
    assert code == 2 and out == ""
    assert len(err.splitlines()) == 1 and "Traceback" not in err and "\x1b" not in err
    assert err.startswith("rankautopsy: error: unknown cause ") and "host_oom" in err
