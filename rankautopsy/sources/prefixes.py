"""Launcher prefixes, stripped from the outside in; what they say about the line is kept.

Only launcher/transport layers are stripped (kubernetes, mpirun, srun, torchrun's tee, PyTorch's
`[rankN]:`). Log-format headers (timestamps, c10 `[E1129 ...]`, levels) stay in the message: the
clocks and the rules read them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Kubernetes CRI file line: `2016-10-06T00:17:09.669794202Z stdout F msg`, and kubectl --timestamps.
_CRI = re.compile(r"(?P<stamp>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) (?:(?:stdout|stderr) [PF] )?")
# mpirun --tag-output: `[1,3]<stderr>:` (OMPI <= 4) or `[1,3]<stderr>: ` (OMPI 5), optional host:pid.
_MPI = re.compile(
    r"\[(?:[^,\]\[]+,)?(?P<rank>\d+)\](?:\[(?P<host>[^:\]]+):(?P<pid>\d+)\])?<(?:stdout|stderr|stddiag)>: ?"
)
# srun --label: ` 3: ` padded task id (P<n> for heterogeneous jobs). Only where the stream is labelled.
_SRUN = re.compile(r"(?:P\d+ )? *(?P<task>\d+): ")
# torchrun's tee: `[default3]:` (local rank, no space). `[rank3]:` is PyTorch's own, handled below.
_TEE = re.compile(r"\[(?P<role>[A-Za-z_][\w-]*?)(?P<lrank>\d+)\]:")
# PyTorch: `[rank3]: ` (excepthook, with a space, maybe doubled) or `[rank3]:[E...` (c10 log prefix).
_RANK = re.compile(r"\[rank(?P<rank>\d+)\]: ?")


@dataclass(frozen=True, slots=True)
class Prefix:
    """What the stripped prefixes said about one line."""

    rank: int | None = None  # global rank ([rankN]:, mpirun vpid)
    local_rank: int | None = None  # torchrun tee [defaultN]:
    task: int | None = None  # srun --label task id
    host: str | None = None
    pid: int | None = None
    stamp: str | None = None  # a timestamp the transport added (kubernetes)


NO_PREFIX = Prefix()


def strip_prefixes(line: str, *, srun_labels: bool = False) -> tuple[str, Prefix]:
    """The message without launcher prefixes, and what they said."""
    if not line or line[0] not in "[0123456789P ":
        return line, NO_PREFIX
    rank = local_rank = task = pid = None
    host = stamp = None
    pos = 0
    if line[0].isdigit() and (m := _CRI.match(line)):
        stamp, pos = m["stamp"], m.end()
    if srun_labels and (m := _SRUN.match(line, pos)):
        task, pos = int(m["task"]), m.end()
    if (m := _MPI.match(line, pos)) is not None:
        rank, pos = int(m["rank"]), m.end()
        host = m["host"]
        pid = int(m["pid"]) if m["pid"] else None
    while line.startswith("[", pos):
        if (m := _RANK.match(line, pos)) is not None:
            rank, pos = int(m["rank"]), m.end()
        elif (m := _TEE.match(line, pos)) is not None:
            local_rank, pos = int(m["lrank"]), m.end()
        else:
            break
    if pos == 0:
        return line, NO_PREFIX
    return line[pos:], Prefix(rank, local_rank, task, host, pid, stamp)


def is_srun_labelled(sample: list[str]) -> bool:
    """Whether most non-empty lines of a stream carry an `srun --label` task id."""
    lines = [line for line in sample if line.strip()]
    if len(lines) < 3:
        return False
    hits = sum(1 for line in lines if _SRUN.match(line))
    return hits >= 0.8 * len(lines)
