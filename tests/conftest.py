"""Shared fixtures. Every test, and every process a test starts, uses a temporary cache directory:
the suite never writes into the user's real cache."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from rankautopsy import pipeline
from rankautopsy.cache import CACHE_ENV, cache_dir
from rankautopsy.scan.matcher import Hit

_CACHE: dict[str, str] = {}


def pytest_configure(config: pytest.Config) -> None:
    """Point the cache at a temporary directory before any test module is imported: modules that load the
    rule packs at import time (collection) would otherwise build and write the user's cache. It starts as a
    copy of the user's cache when there is one: compiling the scanner's databases afresh takes a minute of
    CPU, and a copied entry is used only if its key, size and checksum match, like any other."""
    where = Path(tempfile.mkdtemp(prefix="rankautopsy-test-cache-"))
    _seed(cache_dir(), where)
    _CACHE["where"] = str(where)
    os.environ[CACHE_ENV] = str(where)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The cache goes "off", not back to the user's: recache saves the patterns it compiled at the process's
    exit, after this, and would write them into the user's cache."""
    if "where" not in _CACHE:
        return
    os.environ[CACHE_ENV] = "off"
    shutil.rmtree(str(_CACHE.pop("where")), ignore_errors=True)


@pytest.fixture(scope="session")
def temporary_cache() -> str:
    """The session's cache directory (set in os.environ, so that subprocesses inherit it)."""
    return str(_CACHE["where"])


def _seed(user: Path | None, where: Path) -> None:
    if user is None or not user.is_dir():
        return
    for entry in user.iterdir():
        if entry.is_file() and not entry.is_symlink() and entry.suffix == ".cache":
            shutil.copyfile(entry, where / entry.name)


@pytest.fixture
def kept_tracebacks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Per stream the pipeline builds events of, how many `python.traceback` hits the scan kept."""
    kept: list[int] = []
    real = pipeline.build_events

    def build(stream: object, hits: list[Hit], *args: object) -> object:
        kept.append(sum(h.rule.rule.id == "python.traceback" for h in hits))
        return real(stream, hits, *args)

    monkeypatch.setattr(pipeline, "build_events", build)
    return kept
