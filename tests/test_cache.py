"""The per-user cache: used only when an entry proves itself, rebuilt otherwise, never written through a link."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rankautopsy import cache
from rankautopsy.model import Rule
from rankautopsy.rulepacks import cached
from rankautopsy.rulepacks.loader import BUILTIN_DIR, _validated_builtins, builtin_pack_paths, load_rules
from rankautopsy.rulepacks.rule import REMEDIATION_FILE
from rankautopsy.scan.matcher import compile_rules


@pytest.fixture()
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(where))
    return where


def _entry(folder: Path, name: str) -> Path:
    (found,) = folder.glob(f"{name}-*.cache")
    return found


def test_an_entry_round_trips_and_the_directory_is_private(folder: Path) -> None:
    cache.write("x", "k1", b"body")
    assert cache.read("x", "k1") == b"body"
    assert folder.stat().st_mode & 0o777 == 0o700
    assert _entry(folder, "x").stat().st_mode & 0o777 == 0o600


def test_an_entry_for_another_key_or_with_a_wrong_checksum_is_ignored(folder: Path) -> None:
    cache.write("x", "k1", b"body")
    path = _entry(folder, "x")
    path.rename(folder / "x-k2.cache")
    assert cache.read("x", "k2") is None  # its header names k1
    raw = (folder / "x-k2.cache").read_bytes()
    (folder / "x-k1.cache").write_bytes(raw.replace(b"\nbody", b"\nbodY"))
    assert cache.read("x", "k1") is None


def test_a_directory_others_can_write_is_not_used(folder: Path) -> None:
    cache.write("x", "k1", b"body")
    folder.chmod(0o777)
    assert cache.read("x", "k1") is None
    folder.chmod(0o700)
    assert cache.read("x", "k1") == b"body"


def test_a_planted_symlink_is_neither_read_nor_written_through(folder: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_bytes(b"do not touch")
    folder.mkdir(mode=0o700)
    (folder / "x-k1.cache").symlink_to(secret)
    assert cache.read("x", "k1") is None
    cache.write("x", "k1", b"body")
    assert secret.read_bytes() == b"do not touch"
    assert cache.read("x", "k1") == b"body"


def test_an_unwritable_cache_is_no_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(cache.CACHE_ENV, str(blocker / "cache"))
    cache.write("x", "k1", b"body")
    assert cache.read("x", "k1") is None
    monkeypatch.setenv(cache.CACHE_ENV, "off")
    cache.write("x", "k1", b"body")
    assert cache.read("x", "k1") is None


def test_cached_builtin_rules_equal_the_validated_ones(folder: Path) -> None:
    fresh = _validated_builtins()[0]
    built: list[int] = []

    def build() -> tuple[tuple[Rule, ...], tuple[str, ...]]:
        built.append(1)
        return fresh, ()

    paths = builtin_pack_paths()
    assert cached.builtin_rules(paths, build)[0] == fresh
    assert cached.builtin_rules(paths, build)[0] == fresh
    assert built == [1]  # the second came from the cache


def test_a_changed_pack_or_a_forged_entry_is_rebuilt(folder: Path, tmp_path: Path) -> None:
    pack = tmp_path / "a.yaml"
    pack.write_text("rules: []\n")
    fresh = _validated_builtins()[0][:3]
    built: list[int] = []

    def build() -> tuple[tuple[Rule, ...], tuple[str, ...]]:
        built.append(1)
        return fresh, ()

    cached.builtin_rules([pack], build)
    pack.write_text("rules: []  # edited\n")
    cached.builtin_rules([pack], build)
    assert built == [1, 1]
    entry = max(folder.glob("rules-*.cache"), key=os.path.getmtime)
    key = entry.name.removeprefix("rules-").removesuffix(".cache")
    cache.write("rules", key, b'[{"id": 1}]')  # a valid entry whose body is no rule
    assert cached.builtin_rules([pack], build)[0] == fresh
    assert built == [1, 1, 1]


def test_prefilters_from_the_cache_equal_fresh_ones(folder: Path) -> None:
    rules = load_rules()
    first = compile_rules(rules)
    assert list(folder.glob("prefilters-*.cache"))
    again = compile_rules(rules)
    assert [c.prefilter for c in again] == [c.prefilter for c in first]
    entry = _entry(folder, "prefilters")
    entry.write_bytes(entry.read_bytes()[:-5])  # truncated: its checksum fails
    assert [c.prefilter for c in compile_rules(rules)] == [c.prefilter for c in first]


def test_the_remediation_checklist_from_the_cache_equals_the_parsed_one(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rankautopsy.rulepacks import remediation

    path = BUILTIN_DIR / REMEDIATION_FILE
    remediation._load_remediation.cache_clear()
    parsed = remediation._parse_remediation(path)
    assert remediation._load_remediation(path) == parsed  # parsed, then stored
    remediation._load_remediation.cache_clear()

    def no_parse(path: Path) -> None:
        raise AssertionError("parsed although the cache holds it")

    monkeypatch.setattr(remediation, "_parse_remediation", no_parse)
    assert remediation._load_remediation(path) == parsed  # from the cache entry
    remediation._load_remediation.cache_clear()


def test_a_forged_remediation_entry_is_parsed_again(folder: Path, tmp_path: Path) -> None:
    from rankautopsy.rulepacks import remediation

    path = tmp_path / "remediation.yaml"
    path.write_bytes((BUILTIN_DIR / REMEDIATION_FILE).read_bytes())
    remediation._load_remediation.cache_clear()
    parsed = remediation._load_remediation(path)
    key = _entry(folder, "remediation").name.removeprefix("remediation-").removesuffix(".cache")
    for forged in (b"{}", b'{"fix_cause": {"nope": ["x"]}, "timeouts": ["t"], "detection": ["d"]}', b"[1]"):
        cache.write("remediation", key, forged)
        remediation._load_remediation.cache_clear()
        assert remediation._load_remediation(path) == parsed
