"""Real PyTorch jobs, end to end: fixtures/generate.py runs a scenario, the CLI diagnoses it.

The integration tests need torch (a CPU build; `pip install torch==2.13.0`) in the interpreter
running pytest and are skipped without it. Each one launches a small gloo job (4 ranks, a few
steps) and takes 10-30 s on 2 cores. The fast tests at the end only read fixtures/ and need
no torch: they keep the committed fixtures and generate.SCENARIOS in agreement.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from test_render import validate_schema

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"

# one of each kind of death the generator can produce cheaply; about a minute in total
INTEGRATION_SCENARIOS = [
    "torchrun-raise-rank2",
    "torchrun-sigkill-oom-rank1",
    "torchrun-hang-rank2",
    "torchrun-clean-finish",
]


def _load_generate() -> ModuleType:
    spec = importlib.util.spec_from_file_location("rankautopsy_fixture_generate", FIXTURES / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


generate = _load_generate()


def _diagnose(fixture: Path, args: list[str]) -> tuple[int, dict[str, Any]]:
    env = dict(os.environ, TZ="UTC")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run(
        [sys.executable, "-m", "rankautopsy", "diagnose", *args, "--format", "json", "--tz", "UTC"],
        cwd=fixture,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode in (0, 1, 3), f"exit {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.returncode, json.loads(proc.stdout)


def _check(expected: dict[str, Any], status: int, report: dict[str, Any]) -> None:
    assert report["schema"] == 2
    validate_schema(report)
    first = report["verdict"]["first_death"]
    want = expected["first_death"]
    if want is None:
        assert first is None, report["verdict"]
    else:
        assert first is not None, report["verdict"]
        assert (first["rank"], first["cause"]) == (want["rank"], want["cause"]), report["verdict"]
        assert first["phase"] == expected["phase"], report["verdict"]
        if "detail_contains" in expected:
            assert expected["detail_contains"] in first.get("detail", ""), report["verdict"]
    assert status == expected["exit_status"], report["verdict"]


@pytest.mark.integration
@pytest.mark.parametrize("name", INTEGRATION_SCENARIOS)
def test_real_run_gets_the_injected_verdict(name: str, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    fixture = generate.run_scenario(name, tmp_path)
    assert fixture == tmp_path / name
    expected = yaml.safe_load((fixture / "expected.yaml").read_text(encoding="utf-8"))

    status, report = _diagnose(fixture, list(expected["args"]))
    _check(expected, status, report)

    for alt in expected.get("alt_args", []):  # e.g. raw monotonic dmesg placed with --boot-time
        status, report = _diagnose(fixture, list(alt))
        _check(expected, status, report)


# --------------------------------------------------------------------------- no torch needed

_GROUND_TRUTH_KEYS = ("first_death", "phase", "collateral", "exit_status", "detail_contains")
COMMITTED = sorted(n for n in generate.SCENARIOS if (FIXTURES / n / "expected.yaml").is_file())


def test_every_scenario_is_committed() -> None:
    assert set(COMMITTED) == set(generate.SCENARIOS)


@pytest.mark.parametrize("name", COMMITTED)
def test_committed_fixture_matches_its_scenario(name: str) -> None:
    fixture = FIXTURES / name
    committed = yaml.safe_load((fixture / "expected.yaml").read_text(encoding="utf-8"))
    spec = generate.SCENARIOS[name]
    for key in _GROUND_TRUTH_KEYS:
        assert committed.get(key) == spec.expected.get(key), key
    for arg in committed["args"]:
        if not arg.startswith("-"):
            assert (fixture / arg).exists(), arg
    assert (fixture / "README.md").is_file()
    for f in fixture.rglob("*"):
        if f.is_file():
            assert f.stat().st_size < 100_000, f
            text = f.read_text(encoding="utf-8")
            assert "rankautopsy-gen-" not in text, f"scratch path leaked into {f}"
