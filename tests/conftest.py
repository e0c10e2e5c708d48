"""Shared fixtures. Every test, and every process a test starts, uses a temporary cache directory:
the suite never writes into the user's real cache."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from rankautopsy import pipeline
from rankautopsy.cache import CACHE_ENV, cache_dir
from rankautopsy.scan.matcher import Hit


@pytest.fixture(autouse=True, scope="session")
def temporary_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One cache for the session, in a temporary directory, set in os.environ so that subprocesses
    inherit it (a test may still point it elsewhere). It starts as a copy of the user's cache when
    there is one: compiling the scanner's databases afresh takes a minute of CPU, and a copied entry
    is used only if its key, size and checksum match, like any other."""
    where = tmp_path_factory.mktemp("cache")
    _seed(cache_dir(), where)
    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = str(where)
    yield str(where)
    if before is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = before


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
