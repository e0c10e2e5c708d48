"""Rank attribution from paths and from a rank field that a logging format puts on every line."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePath

# File names that name one rank: rank_3.log, rank3.out, rank-3.err, log_rank_3.txt, worker-3.log,
# 20251218_rank3.log (DeepSpeed --enable_each_rank_log), node0.rank3.stderr.
_RANK_NAME = re.compile(r"(?:^|[^a-z])rank[_\-.]?(?P<n>\d+)(?!\d)", re.IGNORECASE)
_WORKER_NAME = re.compile(r"(?:^|[^a-z])(?P<role>worker|master|process|proc)[_\-.]?(?P<n>\d+)(?!\d)", re.IGNORECASE)
# torchrun --log-dir: <run>/attempt_N/<local_rank>/{stdout,stderr}.log|error.json
_ATTEMPT = re.compile(r"^attempt_(?P<attempt>\d+)$")


@dataclass(frozen=True, slots=True)
class PathRank:
    rank: int | None = None  # the global rank the path names
    local_rank: int | None = None  # torchrun's per-local-rank directory
    attempt: int | None = None


def rank_from_path(path: PurePath, *, kubeflow: bool = False) -> PathRank:
    """What a path says about the rank that wrote it. `kubeflow`: pods are master-0, worker-i (rank i+1)."""
    parts = path.parts
    if len(parts) >= 3 and (m := _ATTEMPT.match(parts[-3])) and parts[-2].isdigit():
        return PathRank(local_rank=int(parts[-2]), attempt=int(m["attempt"]))
    name = path.name
    if m := _RANK_NAME.search(name):
        return PathRank(rank=int(m["n"]))
    if m := _WORKER_NAME.search(name):
        n = int(m["n"])
        if kubeflow and m["role"].lower() == "worker":
            n += 1
        return PathRank(rank=n)
    return PathRank()


# A logging format that names the rank near the start of every line: `[rank 2]`, `[RANK 2]`, `rank=2`,
# `[rank2]`. Trusted only where the text before it has the shape most of the stream's lines have (so that
# "timed out waiting for rank 3" in rank 0's message never counts), and never as `[PG ... Rank N]`.
_CONTENT_RANK = re.compile(r"(?<![\w-])\[?rank[ =:_]?(?P<n>\d+)\]?(?=[\s\]:|,])", re.IGNORECASE)
_HEAD = 80
_DIGITS = re.compile(r"\d+")
_WORDS = re.compile(r"[A-Za-z_]+")


def _shape(text: str) -> str:
    return _WORDS.sub("a", _DIGITS.sub("0", text))


def _rank_token(message: str) -> tuple[int, str] | None:
    m = _CONTENT_RANK.search(message, 0, _HEAD)
    if m is None or "PG" in message[max(0, m.start() - 24) : m.start()]:
        return None
    if message.startswith("[Rank", m.start()):
        return None
    return int(m["n"]), _shape(message[: m.start()])


def content_rank(message: str, shapes: frozenset[str]) -> int | None:
    """The rank a line's own logging header names, or None."""
    token = _rank_token(message)
    return token[0] if token is not None and token[1] in shapes else None


def content_rank_shapes(messages: list[str]) -> frozenset[str]:
    """The header shapes before a rank field that a stream's logging format puts on its lines: a shape
    seen on several lines naming different ranks (an interleaved console), or on most lines."""
    lines = [m for m in messages if m.strip()]
    seen: dict[str, set[int]] = {}
    counts: dict[str, int] = {}
    for message in lines:
        if (token := _rank_token(message)) is not None:
            rank, shape = token
            seen.setdefault(shape, set()).add(rank)
            counts[shape] = counts.get(shape, 0) + 1
    return frozenset(
        shape for shape, n in counts.items() if n >= 3 and (len(seen[shape]) >= 2 or n >= 0.3 * len(lines))
    )
