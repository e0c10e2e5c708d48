"""Rank attribution from paths and from a rank field that a logging format puts on every line."""

from __future__ import annotations

import re
from pathlib import PurePath

from rankautopsy import recache
from rankautopsy.records import record

# File names that name one rank: rank_3.log, rank3.out, rank-3.err, log_rank_3.txt, worker-3.log,
# 20251218_rank3.log (DeepSpeed --enable_each_rank_log), node0.rank3.stderr.
# The number ends the word: Ray's `worker-48ada2...-01000000-17541.err` is a worker id, not worker 48.
_RANK_NAME = recache.compile(r"(?:^|[^a-z])rank[_\-.]?(?P<n>\d{1,9})(?![0-9a-z])", re.IGNORECASE)
_WORKER_NAME = recache.compile(
    r"(?:^|[^a-z])(?P<role>worker|master|process|proc)[_\-.]?(?P<n>\d{1,9})(?![0-9a-z])", re.IGNORECASE
)
# Paddle's launcher: <log_dir>/workerlog.N, N the worker's index in its pod (a local rank)
_PADDLE_WORKER = recache.compile(r"^workerlog\.(?P<n>\d{1,9})$")
# WRF's RSL_LITE (WRF, WRF-Chem, COAWST): rsl.error.NNNN and rsl.out.NNNN, NNNN the task's MPI rank
_WRF_RSL = recache.compile(r"^rsl\.(?:error|out)\.(?P<n>\d{4,9})$")
# torchrun --log-dir: <run>/attempt_N/<local_rank>/{stdout,stderr}.log|error.json
_ATTEMPT = recache.compile(r"^attempt_(?P<attempt>\d{1,9})$")


@record
class PathRank:
    rank: int | None = None  # the global rank the path names
    local_rank: int | None = None  # torchrun's per-local-rank directory
    attempt: int | None = None


def rank_from_path(path: PurePath, *, kubeflow: bool = False) -> PathRank:
    """What a path says about the rank that wrote it. `kubeflow`: pods are master-0, worker-i (rank i+1)."""
    parts = path.parts
    if len(parts) >= 3 and (m := _ATTEMPT.match(parts[-3])) and parts[-2].isdigit() and len(parts[-2]) <= 9:
        return PathRank(local_rank=int(parts[-2]), attempt=int(m["attempt"]))
    name = path.name
    if m := _PADDLE_WORKER.match(name):
        return PathRank(local_rank=int(m["n"]))
    if m := _RANK_NAME.search(name) or _WRF_RSL.match(name):
        return PathRank(rank=int(m["n"]))
    if m := _WORKER_NAME.search(name):
        n = int(m["n"])
        if kubeflow and m["role"].lower() == "worker":
            n += 1
        return PathRank(rank=n)
    return PathRank()


# A logging format that names the rank near the start of every line: `[rank 2]`, `[RANK 2]`, `rank=2`,
# `[rank2]`, Lightning's `[rank: 2]`, and the old c10 `[E ProcessGroupNCCL.cpp:563] [Rank 2]`. Trusted only
# where the text before it has the shape most of the stream's lines have (so that "timed out waiting for
# rank 3" in rank 0's message never counts), and never as `[PG ... Rank N]` (read separately, below).
_CONTENT_RANK = recache.compile(r"(?<![\w-])\[?rank(?:: |[ =:_])?(?P<n>\d{1,9})\]?(?=[\s\]:|,])", re.IGNORECASE)
_HEAD = 80
_DIGITS = recache.compile(r"\d+")
_WORDS = recache.compile(r"[A-Za-z_]+")
# Lightning passes the LOCAL rank to `[rank: N]` in these two messages (signal_connector.py,
# subprocess_script.py): they never say which global rank wrote the line.
_LOCAL_RANK_MESSAGES = ("Received SIGTERM", "Child process with PID")
# `[Rank N]` is ProcessGroupNCCL's WorkNCCL prefix: the rank in *that* process group. It is the global
# rank only while the stream shows no sub-group; its shapes carry this mark so that they can be dropped.
_PG_RANK_MARK = "\x00Rank"
# Lines a shape needs before its rank field is read (several naming different ranks, or most lines):
# a generic `rank 3` field three; ProcessGroupNCCL's own `[Rank N]` two, its lines being few (a watchdog's).
_ENOUGH = {False: 3, True: 2}
# ProcessGroupNCCL's own log prefix (createLogPrefix): `[PG ID 0 PG GUID 0(default_pg) Rank 2]` (>= ~2.5),
# `[PG 0 (default_pg) Rank 3]` (~2.4), `[PG 0 Rank 25]` (~2.3). The rank is the one in that process group:
# the global rank only for the default group (id 0, or described as default_pg).
_PG_PREFIX = recache.compile(
    r"\[PG (?:ID )?(?P<id>\d{1,9})(?: PG GUID [^\s(\]]+)? ?(?:\((?P<desc>[^)\]]*)\))? Rank (?P<n>\d{1,9})\]"
)
_PG_HEAD = 200
# The shape that stands for "this stream is PyTorch distributed output": default-PG prefixes in it are read.
_PG_SHAPE = "\x00pg"
_TORCH_DISTRIBUTED = recache.compile(r"\[PG |ProcessGroup(?:NCCL|Gloo)|NCCL INFO|torch[./]distributed|\bc10d\b")


def _shape(text: str) -> str:
    return _WORDS.sub("a", _DIGITS.sub("0", text))


def _rank_token(message: str) -> tuple[int, str] | None:
    m = _CONTENT_RANK.search(message, 0, _HEAD)
    if m is None or "PG" in message[max(0, m.start() - 24) : m.start()]:
        return None
    if message.startswith(_LOCAL_RANK_MESSAGES, m.end() + 1):
        return None
    shape = _shape(message[: m.start()])
    if message.startswith("[Rank", m.start()):
        shape += _PG_RANK_MARK
    return int(m["n"]), shape


def default_pg_rank(message: str) -> int | None:
    """The global rank a ProcessGroupNCCL prefix of the default process group names, or None (no prefix,
    or a sub-group's, whose rank is not the global one)."""
    if "[PG " not in message[:_PG_HEAD]:
        return None
    m = _PG_PREFIX.search(message, 0, _PG_HEAD)
    if m is None:
        return None
    desc = m["desc"]
    default = desc == "default_pg" or (m["id"] == "0" and not desc)
    return int(m["n"]) if default else None


def _sub_group(message: str) -> bool:
    m = _PG_PREFIX.search(message, 0, _PG_HEAD) if "[PG " in message[:_PG_HEAD] else None
    return m is not None and default_pg_rank(message) is None


def content_rank(message: str, shapes: frozenset[str]) -> int | None:
    """The rank a line's own logging header names, or None. A default-PG prefix counts in streams of
    PyTorch distributed output (the `_PG_SHAPE` mark); any other rank field only in a learnt shape."""
    if _PG_SHAPE in shapes and (rank := default_pg_rank(message)) is not None:
        return rank
    token = _rank_token(message)
    return token[0] if token is not None and token[1] in shapes else None


def content_rank_shapes(messages: list[str]) -> frozenset[str]:
    """The header shapes before a rank field that a stream's logging format puts on its lines: a shape
    seen on several lines naming different ranks (an interleaved console), or on most lines. Plus the
    `_PG_SHAPE` mark when the stream is PyTorch distributed output, and without the `[Rank N]` shapes
    when it shows a sub-group (whose `[Rank N]` is not the global rank)."""
    lines = [m for m in messages if m.strip()]
    seen: dict[str, set[int]] = {}
    counts: dict[str, int] = {}
    torch_distributed = sub_groups = False
    for message in lines:
        if (token := _rank_token(message)) is not None:
            rank, shape = token
            seen.setdefault(shape, set()).add(rank)
            counts[shape] = counts.get(shape, 0) + 1
        if _TORCH_DISTRIBUTED.search(message):
            torch_distributed = True
            sub_groups = sub_groups or _sub_group(message)
    shapes = {
        shape
        for shape, n in counts.items()
        if n >= _ENOUGH[shape.endswith(_PG_RANK_MARK)] and (len(seen[shape]) >= 2 or n >= 0.3 * len(lines))
    }
    if sub_groups:
        shapes = {shape for shape in shapes if not shape.endswith(_PG_RANK_MARK)}
    if torch_distributed:
        shapes.add(_PG_SHAPE)
    return frozenset(shapes)
