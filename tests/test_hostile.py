"""Hostile inputs that used to crash the run ("internal error"): each now yields a diagnosis."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_verdict import step_lines

from rankautopsy.model import Outcome
from rankautopsy.pipeline import Options, diagnose

HUGE = "9" * 5000


def _error_json(tmp_path: Path, body: str) -> Path:
    run = tmp_path / "run" / "attempt_0" / "1"
    run.mkdir(parents=True)
    (run / "error.json").write_text(body)
    (run / "stderr.log").write_text(step_lines(1, 3))
    return tmp_path / "run"


@pytest.mark.parametrize(
    "body",
    [
        json.dumps({"message": {"message": "\x1b[0m\n  \n", "extraInfo": {"timestamp": "1764400000"}}}),
        "[" * 5000 + "]" * 5000,
        json.dumps({"message": {"message": "ValueError: x", "extraInfo": {"timestamp": "99999999999999999"}}}),
        json.dumps({"message": {"message": "ValueError: x", "extraInfo": {"timestamp": HUGE}}}),
        json.dumps({"message": {"message": "ValueError: x", "extraInfo": {"timestamp": -5}}}),
        json.dumps({"message": {"message": ["a", "list"], "extraInfo": "not a mapping"}}),
        json.dumps({"message": 12}),
        json.dumps([1, 2, 3]),
        '{"message": {"message": "ValueError: trunc',
    ],
    ids=["blank", "deep", "far-future", "huge", "negative", "wrong-types", "number", "list", "truncated"],
)
def test_a_forged_error_file_never_crashes(tmp_path: Path, body: str) -> None:
    d = diagnose(Options(paths=[str(_error_json(tmp_path, body))]))
    assert d.verdict.outcome in set(Outcome)


def test_a_recorded_exception_keeps_its_time_when_sane(tmp_path: Path) -> None:
    body = json.dumps({"message": {"message": "ValueError: bad sample", "extraInfo": {"timestamp": "1764400000"}}})
    d = diagnose(Options(paths=[str(_error_json(tmp_path, body))]))
    recorded = [e for e in d.events if e.where.source.endswith("error.json")]
    assert recorded and recorded[0].time is not None and recorded[0].time.earliest.year == 2025


@pytest.mark.parametrize(
    "line",
    [
        f"[rank{HUGE}]: Traceback (most recent call last):",
        f"[default{HUGE}]:step 3",
        f"[1,{HUGE}]<stderr>:step 3",
        f"failed (exitcode: -9) local_rank: {HUGE} (pid: {HUGE}) of binary: /usr/bin/python",
        f"2026-11-29 07:00:09,000 INFO [rank {HUGE}] step {HUGE}/100",
        f"srun: error: node01: tasks 0-{HUGE}: Killed",
    ],
)
def test_numbers_beyond_any_rank_or_pid_are_not_parsed(tmp_path: Path, line: str) -> None:
    (tmp_path / "console.log").write_text(step_lines(0, 3) + line + "\n")
    d = diagnose(Options(paths=[str(tmp_path)]))
    assert all(r.rank < 10**9 for r in d.ranks)


@settings(max_examples=40, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda c: st.lists(c) | st.dictionaries(st.text(max_size=8), c),
        max_leaves=30,
    )
)
def test_any_json_in_an_error_file_is_tolerated(tmp_path_factory: pytest.TempPathFactory, value: object) -> None:
    tmp = tmp_path_factory.mktemp("ej")
    d = diagnose(Options(paths=[str(_error_json(tmp, json.dumps({"message": value})))]))
    assert d.verdict.outcome in set(Outcome)


@pytest.mark.parametrize(
    ("text", "max_len", "signed", "want"),
    [
        ("42", 9, False, 42),
        ("-9", 11, True, -9),
        ("-9", 11, False, None),
        ("--5", 11, True, None),  # lstrip("-") once let this reach int() and raise
        ("1234567890", 9, False, None),
        (HUGE, 15, True, None),
        ("²", 9, False, None),
        ("", 9, True, None),
        (None, 9, True, None),
    ],
)
def test_one_bounded_integer_parser(text: str | None, max_len: int, signed: bool, want: int | None) -> None:
    from rankautopsy.numbers import read_int

    assert read_int(text, max_len=max_len, signed=signed) == want


# ---- nothing untrusted reaches a terminal or a report unescaped ----

SPOOF = "ok\u202egnp.exe\u2066x\u2069 zero\u200bwidth\u2060joiner\ufeff line\u2028para\u2029end"


def test_invisible_characters_become_visible_escapes() -> None:
    from rankautopsy.sources.sanitize import clean

    shown = clean(SPOOF)
    for char in "\u202e\u2066\u2069\u200b\u2060\ufeff\u2028\u2029":
        assert char not in shown
        assert f"<U+{ord(char):04X}>" in shown
    assert clean(shown) == shown  # idempotent: a renderer may clean text the sources cleaned
    assert clean("\ufeffstep 1") == "step 1"  # a byte-order mark that starts a text is a signature


def test_an_error_message_never_carries_a_file_name_raw() -> None:
    from rankautopsy.errors import InputError, RulePackError

    name = "logs/\x1b]0;pwned\x07\x1b[2Jrank\n0\u202e.log"
    for text in (str(InputError("no such file or directory", path=name)), str(RulePackError([f"{name}: bad"]))):
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
        assert "\n" not in text and "rank\\n0<U+202E>.log" in text
