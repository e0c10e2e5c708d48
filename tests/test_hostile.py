"""Hostile inputs that used to crash the run ("internal error"): each now yields a diagnosis."""

from __future__ import annotations

import json
import os
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


# ---- hostile trees: depth, OS errors, symlinks out of the tree, entries that are no regular file ----


def test_a_very_deep_tree_is_walked_without_recursion(tmp_path: Path) -> None:
    from rankautopsy.sources.discover import MAX_DEPTH, discover

    (tmp_path / "rank_0.log").write_text(step_lines(0, 3))
    levels = [str(tmp_path) + "/d" * n for n in range(1, 1001)]
    for level in levels:  # one at a time: pathlib's mkdir(parents=True) and shutil.rmtree recurse
        os.mkdir(level)
    Path(levels[-1], "rank_1.log").write_text(step_lines(1, 3))
    try:
        sources, skipped = discover([str(tmp_path)])
    finally:
        os.unlink(Path(levels[-1], "rank_1.log"))
        for level in reversed(levels):
            os.rmdir(level)
    assert [s.display for s in sources] == [str(tmp_path / "rank_0.log")]
    assert any(f"more than {MAX_DEPTH} directories deep" in s.reason for s in skipped)


@pytest.mark.parametrize("name", ["x" * 300, "a/" * 3000 + "b", "loop"])
def test_an_os_error_on_a_given_path_is_one_clear_line(tmp_path: Path, name: str) -> None:
    from rankautopsy.errors import InputError
    from rankautopsy.sources.discover import discover

    if name == "loop":
        (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(InputError) as caught:
        discover([str(tmp_path / name)])
    text = str(caught.value)
    assert "\n" not in text and ("too long" in text or "symbolic links" in text or "no such" in text)


def test_symlinks_out_of_the_tree_are_skipped_unless_followed(tmp_path: Path) -> None:
    from rankautopsy.sources.discover import discover

    secret = tmp_path / "secret.txt"
    secret.write_text("API_KEY=hunter2\n")
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "passwd.log").write_text("root:x:0:0\n")
    logs = tmp_path / "logs"
    (logs / "sub").mkdir(parents=True)
    (logs / "rank_0.log").write_text(step_lines(0, 3))
    (logs / "sub" / "rank_1.log").write_text(step_lines(1, 3))
    (logs / "stolen.log").symlink_to(secret)
    (logs / "etc").symlink_to(tmp_path / "etc")
    (logs / "inside.log").symlink_to(logs / "sub" / "rank_1.log")  # stays in the tree: followed
    (logs / "again").symlink_to(logs)  # a loop inside the tree: read once
    sources, skipped = discover([str(logs)])
    names = sorted(Path(s.display).name for s in sources)
    assert names == ["inside.log", "rank_0.log", "rank_1.log"]
    outside = {Path(s.path).name for s in skipped if "--follow" in s.reason}
    assert outside == {"stolen.log", "etc"}
    followed, _ = discover([str(logs)], follow=True)
    assert {"stolen.log", "passwd.log"} <= {Path(s.display).name for s in followed}


def test_a_link_into_another_given_path_is_inside(tmp_path: Path) -> None:
    from rankautopsy.sources.discover import discover

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "rank_1.log").write_text(step_lines(1, 3))
    (tmp_path / "a" / "rank_0.log").write_text(step_lines(0, 3))
    (tmp_path / "a" / "peer.log").symlink_to(tmp_path / "b" / "rank_1.log")
    sources, skipped = discover([str(tmp_path / "a"), str(tmp_path / "b")])
    assert "peer.log" in {Path(s.display).name for s in sources} and not skipped


def test_a_fifo_or_device_in_a_tree_is_skipped_not_read(tmp_path: Path) -> None:
    from rankautopsy.sources.discover import discover

    (tmp_path / "rank_0.log").write_text(step_lines(0, 3))
    os.mkfifo(tmp_path / "pipe.log")
    (tmp_path / "zero.log").symlink_to("/dev/zero")
    sources, skipped = discover([str(tmp_path)], follow=True)
    assert [Path(s.display).name for s in sources] == ["rank_0.log"]
    assert {Path(s.path).name: s.reason for s in skipped} == {
        "pipe.log": "not a regular file",
        "zero.log": "not a regular file",
    }


def test_a_file_name_with_escapes_is_shown_escaped_in_the_report(tmp_path: Path) -> None:
    from rankautopsy.render import Format, render_text

    (tmp_path / "rank_0\x1b]0;pwned\x07\u202e.log").write_text(step_lines(0, 3) + "ValueError: bad sample\n")
    d = diagnose(Options(paths=[str(tmp_path)]))
    for fmt in (Format.JSON, Format.MARKDOWN, Format.HTML, Format.GITHUB, Format.JUNIT):
        out = render_text(d, fmt)
        assert "\x1b" not in out and "\u202e" not in out, fmt
    assert any(i.path.endswith("rank_0<U+202E>.log") for i in d.inputs)


def test_the_cli_follows_links_out_of_the_tree_only_with_follow(tmp_path: Path) -> None:
    import subprocess
    import sys

    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "rank_0.log").write_text(step_lines(0, 3))
    (tmp_path / "secret.log").write_text("hunter2\n")
    (tmp_path / "logs" / "s.log").symlink_to(tmp_path / "secret.log")
    seen = []
    for extra in ([], ["--follow"]):
        run = subprocess.run(
            [sys.executable, "-m", "rankautopsy", "diagnose", str(tmp_path / "logs"), "-f", "json", *extra],
            capture_output=True,
            timeout=120,
        )
        out = json.loads(run.stdout)
        seen.append(([Path(i["path"]).name for i in out["inputs"]], [Path(s["path"]).name for s in out["skipped"]]))
    assert seen == [(["rank_0.log"], ["s.log"]), (["rank_0.log", "s.log"], [])]


# ---- hostile rule packs: YAML bombs, complex keys, packs that are no regular file ----

LAUGHS = "a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 10)
)
COMPLEX_KEY = LAUGHS + "rules:\n  - id: x.y\n    ? *a9\n    : boom\n"
RECURSIVE = "rules: &r\n  - *r\n"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (LAUGHS + "rules: *a9\n", "aliases expand to more than"),
        (COMPLEX_KEY, "a mapping key must be a scalar"),
        ("rules:\n  - id: x.y\n    ? [a, b]\n    : c\n", "a mapping key must be a scalar"),
        (RECURSIVE, "an alias that contains itself"),
        ("rules: " + "[" * 5000 + "]" * 5000 + "\n", "invalid YAML"),
        ("rules:\n" + "".join(" " * i + "-\n" for i in range(1, 2000)), "invalid YAML"),
    ],
    ids=["billion-laughs", "aliased-complex-key", "complex-key", "recursive", "deep-flow", "deep-block"],
)
def test_a_hostile_pack_is_refused_before_construction_in_one_line(tmp_path: Path, text: str, problem: str) -> None:
    import signal

    from rankautopsy.errors import RulePackError
    from rankautopsy.rulepacks.loader import load_rules

    pack = tmp_path / "bomb.yaml"
    pack.write_text(text)
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("the pack was not refused in bounded time"))
    signal.alarm(60)  # a watchdog, not a timing assert: the bomb took 37 s and 9 GB before
    try:
        with pytest.raises(RulePackError) as caught:
            load_rules([pack])
    finally:
        signal.alarm(0)
    problems = caught.value.problems
    assert len(problems) == 1 and problem in problems[0] and len(problems[0]) < 600, problems


def test_a_pack_that_is_no_regular_file_is_refused_not_read(tmp_path: Path) -> None:
    from rankautopsy.errors import RulePackError
    from rankautopsy.rulepacks.loader import load_rules
    from rankautopsy.rulepacks.yamlsafe import MAX_PACK_BYTES

    packs = tmp_path / "packs"
    packs.mkdir()
    os.mkfifo(packs / "fifo.yaml")
    (packs / "zero.yaml").symlink_to("/dev/zero")
    (packs / "big.yaml").write_text("#" * (MAX_PACK_BYTES + 1))
    with pytest.raises(RulePackError) as caught:
        load_rules([packs])
    by_name = {Path(p.split(":")[0]).name: p for p in caught.value.problems}
    assert "not a regular file" in by_name["fifo.yaml"] and "not a regular file" in by_name["zero.yaml"]
    assert "larger than" in by_name["big.yaml"]


# ---- a user's regex is bounded wherever it runs: scan, assembly, classification ----

EVIL_PACK = """rules:
  - id: inhouse.evil
    title: A pattern that backtracks catastrophically on a near miss
    cause: python_exception
    role: cause
    pattern: 'ValueError: (x|xx)+y'
    remediation: ["Fix the pattern."]
    examples:
      match: ["ValueError: xxy"]
      no_match: ["ValueError: z"]
"""


def test_a_catastrophic_user_pattern_cannot_hang_assembly_or_classification(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import signal

    from rankautopsy.errors import RulePackError
    from rankautopsy.rulepacks import rule as rule_module
    from rankautopsy.rulepacks.loader import load_rules

    pack = tmp_path / "evil.yaml"
    pack.write_text(EVIL_PACK)
    with pytest.raises(RulePackError, match="pattern too slow"):
        load_rules([pack])  # the load check pumps its example: `ValueError: xxxx...!`
    monkeypatch.setattr(rule_module, "_too_slow", lambda *_: False)  # one that the check misses
    assert load_rules([pack])  # only the run can bound it
    near_miss = "ValueError: " + "x" * 40 + " (why)"  # 2**40 paths for (x|xx)+ before a y that is not next
    logs = tmp_path / "logs"
    logs.mkdir()
    traceback = ["Traceback (most recent call last):", '  File "train.py", line 1, in <module>', near_miss]
    (logs / "rank_1.log").write_text(step_lines(1, 3) + "\n".join([*traceback, near_miss, ""]) * 3)
    (logs / "rank_0.log").write_text(step_lines(0, 3))
    signal.signal(signal.SIGALRM, lambda *_: pytest.fail("a user's pattern hung the diagnosis"))
    signal.alarm(120)  # a watchdog: each user rule has 2 s per stream in the scan and 2 s in assembly
    try:
        d = diagnose(Options(paths=[str(logs)], rules=[str(pack)], jobs=1, engine="regex"))
    finally:
        signal.alarm(0)
    assert d.verdict.outcome in set(Outcome)


# ---- `\r`-packed lines with control bytes: cleaned in one pass ----

_PIECE_CHARS = st.sampled_from(list("ab \t\r\x1b[]0;m\x07\\P\x01\x7f\x9b\ufeff\u202e\u200bé"))


@settings(max_examples=300, deadline=None)
@given(st.text(_PIECE_CHARS, max_size=60), st.integers(min_value=1, max_value=8))
def test_clean_pieces_is_clean_of_each_segment(line: str, limit: int) -> None:
    from rankautopsy.sources import read
    from rankautopsy.sources.sanitize import clean, clean_pieces

    pieces = [p[:limit] for p in read.segments(line)]
    assert clean_pieces(line, limit) == "\n".join(clean(p) for p in pieces)


def test_a_pack_with_a_control_character_is_one_clear_problem(tmp_path: Path) -> None:
    from rankautopsy.errors import RulePackError
    from rankautopsy.rulepacks.loader import load_rules

    pack = tmp_path / "ctl.yaml"
    pack.write_text("rules:\n  - id: a.b\n    title: x\x0by\n")  # found by the fuzzer: ReaderError escaped
    with pytest.raises(RulePackError) as caught:
        load_rules([pack])
    assert len(caught.value.problems) == 1 and "invalid YAML" in caught.value.problems[0]
