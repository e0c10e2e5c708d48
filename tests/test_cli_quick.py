"""The quick parser (`cli.quick`) against typer: every command line it takes, it binds as typer does;
every option typer declares for `diagnose`, it knows with the same keyword and shape; and the command
lines people type are taken, so that a small diagnosis starts without importing typer."""

from __future__ import annotations

import contextlib
import inspect
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main
from hypothesis import given, settings
from hypothesis import strategies as st

import rankautopsy.cli.application as cli_app
from rankautopsy.cli import quick
from rankautopsy.cli.diagnose import run

ROOT = Path(__file__).resolve().parent.parent
RAISE = ROOT / "fixtures" / "torchrun-raise-rank2" / "logs"
DEFAULTS = {name: p.default for name, p in inspect.signature(run).parameters.items() if p.default is not p.empty}


def typer_binds(args: list[str], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any] | None:
    """The keywords typer calls `diagnose` with, or None when it refuses the line (or prints help)."""
    calls: list[dict[str, Any]] = []

    def record(**kwargs: Any) -> int:
        calls.append(kwargs)
        return 0

    monkeypatch.setattr(cli_app, "run", record)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            cli_app.app(args=["diagnose", *args], prog_name="rankautopsy", standalone_mode=False)
        except Exception:
            return None
    return calls[0] if calls else None


def quick_binds(args: list[str]) -> dict[str, Any] | None:
    kwargs = quick.diagnose_options(args)
    return None if kwargs is None else {**DEFAULTS, **kwargs}


NAMES = [*quick.FLAGS, *quick.VALUES]
TOKENS = st.one_of(
    st.sampled_from(NAMES),
    st.sampled_from(["logs", "-", "", "a=b", "json", "html", "JSON", "UTC", "40", "39", "2.5", "1e3", "nan"]),
    st.sampled_from(["--help", "--", "-vq", "-fjson", "-f=json", "--exit-zero=1", "--nope", "-x", "-1", "--color="]),
    st.builds(lambda n, v: f"{n}={v}", st.sampled_from(NAMES), st.sampled_from(["json", "x", "40", "0.5", "", "-"])),
    st.text(alphabet="-=a1. ", max_size=4),
)


@settings(max_examples=400, deadline=None)
@given(st.lists(TOKENS, max_size=7))
def test_a_line_the_quick_parser_takes_is_bound_exactly_as_typer_binds_it(args: list[str]) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        fast = quick_binds(args)
        if fast is not None:
            assert typer_binds(args, monkeypatch) == fast


GOOD_VALUES = {
    "output_format": ["json", "terminal", "junit"],
    "clock_skew": ["0", "2.5", "10", ".5"],
    "width": ["40", "100"],
}


@st.composite
def well_formed(draw: st.DrawFn) -> list[str]:
    """A line of real options and paths, in any order, each value attached or not."""
    groups: list[list[str]] = []
    for _ in range(draw(st.integers(0, 6))):
        name = draw(st.sampled_from(NAMES))
        if name in quick.FLAGS:
            groups.append([name])
            continue
        keyword = quick.VALUES[name][0]
        value = draw(st.sampled_from(GOOD_VALUES.get(keyword, ["x.log", "-", "n1=d.txt", "UTC", "a b"])))
        groups.append([f"{name}={value}"] if name.startswith("--") and draw(st.booleans()) else [name, value])
    groups.insert(draw(st.integers(0, len(groups))), [draw(st.sampled_from(["logs", "-", "a/b.log"]))])
    return [token for group in groups for token in group]


@settings(max_examples=200, deadline=None)
@given(well_formed())
def test_a_well_formed_line_is_taken_and_bound_as_typer_binds_it(args: list[str]) -> None:
    fast = quick_binds(args)
    assert fast is not None, args
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert typer_binds(args, monkeypatch) == fast


@pytest.mark.parametrize(
    "args",
    [
        ["logs"],
        ["logs", "--dmesg", "-"],
        ["logs", "--dmesg", "node3=dmesg.txt", "--dmesg", "node4=d4.txt", "--format", "json"],
        ["-f", "github", "--exit-zero", "a", "b", "--rules", "mine.yaml", "-o", "report.html"],
        ["logs", "--tz", "UTC", "--boot-time", "2026-11-29T07:00:00+01:00", "--clock-skew", "5", "-q"],
        ["logs", "--width=100", "--no-color", "-v", "--checklist", "--debug", "-L", "--format=markdown"],
    ],
)
def test_the_command_lines_people_type_need_no_typer(args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    fast = quick_binds(args)
    assert fast is not None
    assert typer_binds(args, monkeypatch) == fast


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--help"],
        ["logs", "--help"],
        ["logs", "-vq"],
        ["logs", "--", "-odd-name"],
        ["logs", "--width", "39"],
        ["logs", "--clock-skew", "-1"],
        ["logs", "--format", "sarif"],
        ["logs", "--dmesg"],
        ["logs", "--dmesgg", "x"],
    ],
)
def test_what_needs_typers_help_or_words_goes_to_typer(args: list[str]) -> None:
    assert quick.diagnose_options(args) is None


def test_every_option_typer_declares_is_known_with_its_keyword_and_shape() -> None:
    command = typer.main.get_command(cli_app.app).commands["diagnose"]  # type: ignore[attr-defined]
    declared: set[str] = set()
    for param in command.params:
        if param.param_type_name != "option":
            continue
        for names, value in ((param.opts, True), (param.secondary_opts, False)):
            for name in names:
                declared.add(name)
                if param.is_flag:
                    assert quick.FLAGS[name] == (param.name, value)
                else:
                    keyword, repeats, _ = quick.VALUES[name]
                    assert (keyword, repeats) == (param.name, param.multiple)
    assert declared - {"--help"} == set(quick.FLAGS) | set(quick.VALUES)


def test_a_plain_diagnosis_imports_neither_typer_nor_click_and_help_still_works() -> None:
    probe = (
        "import sys, io, contextlib; sys.argv = ['rankautopsy', 'diagnose', sys.argv[1], '-f', 'json', '-q']\n"
        "from rankautopsy.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try:\n        main()\n    except SystemExit as e:\n        code = e.code\n"
        "assert code == 1 and '\"first_death\"' in out.getvalue(), code\n"
        "print(' '.join(m for m in sys.modules if m.split('.')[0] in ('typer', 'click', 'shellingham')))"
    )
    done = subprocess.run([sys.executable, "-c", probe, str(RAISE)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == ""
    shown = subprocess.run(
        [sys.executable, "-m", "rankautopsy", "diagnose", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert shown.returncode == 0 and "--clock-skew" in shown.stdout and "PATH..." in shown.stdout
