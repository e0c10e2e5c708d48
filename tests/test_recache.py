"""`recache.compile` builds the very pattern `re.compile` builds, from the cache or not, and treats a
damaged or foreign cache entry as no entry."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankautopsy import cache, recache

ROOT = Path(__file__).resolve().parent.parent
PIECES = [r"\d+", r"[a-z]", r"(?P<n>\w+)", r"(?:ab|cd)", r"\[rank(\d+)\]", r"\s*", r"(?!x)", r"$", r"\bword\b", "é+"]
FLAGS = [0, re.I, re.M, re.ASCII, re.I | re.M, re.S]


@contextlib.contextmanager
def empty_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty cache directory and a recache that has read nothing yet."""
    with tempfile.TemporaryDirectory() as folder:
        monkeypatch.setenv(cache.CACHE_ENV, folder)
        monkeypatch.setattr(recache, "_programs", None)
        monkeypatch.setattr(recache, "_used", set())
        monkeypatch.setattr(recache, "_added", True)  # no atexit hook from a test
        yield Path(folder)


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    with empty_cache(monkeypatch) as folder:
        yield folder


def next_run() -> None:
    """What a later process sees: the programs saved, then read again from the cache."""
    recache._save(os.getpid())
    recache._programs = None


def same(a: re.Pattern[str] | re.Pattern[bytes], b: re.Pattern[str] | re.Pattern[bytes]) -> bool:
    return (a, a.flags, a.groups, a.groupindex) == (b, b.flags, b.groups, b.groupindex)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(PIECES), min_size=1, max_size=5), st.sampled_from(FLAGS), st.text(max_size=12))
def test_a_pattern_from_the_cache_is_the_one_re_builds(pieces: list[str], flags: int, text: str) -> None:
    pattern = "".join(pieces)
    if "(?P<n>" in pattern and pattern.count("(?P<n>") > 1:
        pattern = pattern.replace("(?P<n>", "(?:")
    with pytest.MonkeyPatch.context() as monkeypatch, empty_cache(monkeypatch):
        expected = re.compile(pattern, flags)
        first = recache.compile(pattern, flags)
        next_run()
        again = recache.compile(pattern, flags)
        assert isinstance(recache._programs, dict) and isinstance(recache._programs[("s", pattern, flags)], list)
        for got in (first, again):
            assert same(got, expected)
            found, wanted = got.search(text), expected.search(text)
            assert (found and (found.span(), found.groups())) == (wanted and (wanted.span(), wanted.groups()))


def test_bytes_patterns_and_flags_objects_are_cached_too(fresh: Path) -> None:
    pattern = rb"BZh[1-9](?:1AY&SY|\x17rE8P\x90)"
    first = recache.compile(pattern, re.RegexFlag.MULTILINE)
    next_run()
    again = recache.compile(pattern, re.MULTILINE)
    assert same(again, re.compile(pattern, re.M)) and same(first, again)
    assert again.search(b"..BZh91AY&SY..") is not None


@pytest.mark.parametrize(
    "damage",
    [
        lambda rows: b"not json",
        lambda rows: json.dumps({"a": 1}).encode(),
        lambda rows: json.dumps([[*row[:4], "AAAA", *row[5:]] for row in rows]).encode(),  # a program sre refuses
        lambda rows: json.dumps([[*row[:4], "!!", *row[5:]] for row in rows]).encode(),  # not base64
        lambda rows: json.dumps([[*row[:5], "x", *row[6:]] for row in rows]).encode(),
    ],
)
def test_a_damaged_entry_is_no_entry(fresh: Path, damage: object) -> None:
    pattern = r"(?P<rank>\d+)/(?P<world>\d+)"
    recache.compile(pattern)
    next_run()
    assert recache._KEY is not None
    rows = json.loads(cache.read(recache.ENTRY, recache._KEY) or b"[]")
    cache.write(recache.ENTRY, recache._KEY, damage(rows))  # type: ignore[operator]
    recache._programs = None
    assert same(recache.compile(pattern), re.compile(pattern))
    assert recache.compile(pattern).fullmatch("3/8").groupdict() == {"rank": "3", "world": "8"}


def test_an_entry_past_its_bound_keeps_only_the_programs_a_run_used(
    fresh: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recache, "MAX_KEPT", 5)
    for n in range(5):
        recache.compile(f"old{n}")
    next_run()
    assert len(recache._loaded()) == 5  # at the bound: nothing is cut
    recache._used.clear()
    recache.compile("old1")
    recache.compile("new")  # the sixth
    next_run()
    assert sorted(k[1] for k in recache._loaded()) == ["new", "old1"]
    monkeypatch.setattr(recache, "MAX_KEPT", 1)
    recache._used.clear()
    recache._programs = None  # a new run
    monkeypatch.setattr(recache, "_added", False)
    registered: list[object] = []
    monkeypatch.setattr(recache.atexit, "register", lambda *args: registered.append(args))
    recache.compile("new")  # nothing added, but the entry read is past the bound: cut at exit
    assert registered == [(recache._save, os.getpid())]
    next_run()
    assert [k[1] for k in recache._loaded()] == ["new"]


def test_no_cache_at_all_still_compiles(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, "off")
    monkeypatch.setattr(recache, "_programs", None)
    monkeypatch.setattr(recache, "_added", True)
    assert same(recache.compile(r"a(b)?"), re.compile(r"a(b)?"))


def test_a_second_diagnosis_builds_every_pattern_from_the_cache(tmp_path: Path) -> None:
    probe = (
        "import sys, io, contextlib; sys.argv = ['rankautopsy', 'diagnose', sys.argv[1], '-f', 'json']\n"
        "from rankautopsy.cli import main\n"
        "from rankautopsy import recache\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    try:\n        main()\n    except SystemExit:\n        pass\n"
        "rows = [k for k in recache._used if isinstance(recache._programs.get(k), list)]\n"
        "print(len(recache._used), len(rows))"
    )
    env = {**os.environ, cache.CACHE_ENV: str(tmp_path)}
    logs = str(ROOT / "fixtures" / "torchrun-raise-rank2" / "logs")
    runs = [subprocess.run([sys.executable, "-c", probe, logs], capture_output=True, text=True, env=env) for _ in "12"]
    assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr
    used, hits = map(int, runs[1].stdout.split())
    assert used > 50 and hits == used  # every pattern the run asked for came from the first run's programs
    assert runs[0].stdout.split()[1] == "0"
