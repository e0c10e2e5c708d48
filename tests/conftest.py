"""Shared fixtures. Every test, and every process a test starts, uses a temporary cache directory:
the suite never reads or writes the user's real cache."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from rankautopsy.cache import CACHE_ENV


@pytest.fixture(autouse=True, scope="session")
def temporary_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One cache for the session (databases are compiled once, as for a user), in a temporary directory;
    set in os.environ so that subprocesses inherit it. A test may still point it elsewhere."""
    where = str(tmp_path_factory.mktemp("cache"))
    before = os.environ.get(CACHE_ENV)
    os.environ[CACHE_ENV] = where
    yield where
    if before is None:
        os.environ.pop(CACHE_ENV, None)
    else:
        os.environ[CACHE_ENV] = before
