"""Launcher prefixes, stripped from the outside in; what they say about the line is kept.

Only launcher/transport layers are stripped (kubernetes, mpirun, srun, torchrun's tee, PyTorch's
`[rankN]:`), and the headers of logging formats that repeat them on every line of a record (vLLM's,
torch._logging's: a traceback logged through them), whose stamp is kept. Other log-format headers
(timestamps, c10 `[E1129 ...]`, levels) stay in the message: the clocks and the rules read them.
"""

from __future__ import annotations

import functools
import itertools
import re
from dataclasses import dataclass, field, replace
from typing import Any

from rankautopsy import recache
from rankautopsy.cputime import bounded
from rankautopsy.numbers import read_int
from rankautopsy.records import record

# Kubernetes CRI file line: `2016-10-06T00:17:09.669794202Z stdout F msg`, and kubectl --timestamps.
_CRI = recache.compile(r"(?P<stamp>\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z) (?:(?:stdout|stderr) [PF] )?")
# mpirun --tag-output: `[1,3]<stderr>:` (OMPI <= 4) or `[1,3]<stderr>: ` (OMPI 5), optional host:pid.
_MPI = recache.compile(
    r"\[(?:[^,\]\[]+,)?(?P<rank>\d{1,9})\](?:\[(?P<host>[^:\]]+):(?P<pid>\d{1,9})\])?<(?:stdout|stderr|stddiag)>: ?"
)
# Ray's driver relays each worker's output under its actor or task name and pid, with the node's address
# when it is another node (`(RayTrainWorker pid=12404) `, `(pid=12404, ip=10.0.0.7) `), and its own
# daemons' lines as `(raylet) `, `(raylet, ip=10.0.0.7) `, `(autoscaler +1m2s) ` (ray/_private/worker.py
# print_worker_logs). Its log deduplication appends ` [repeated 2x across cluster]`. A task's name may hold
# commas and `=`: SkyPilot names each node's task `worker1, rank=1,` (its node rank, not a worker's).
_RAY = recache.compile(
    r"\((?:(?P<name>[A-Za-z_][^()\n]{0,160}?) )?pid=(?P<pid>\d{1,9})"
    r"(?:, ip=(?P<host>[0-9A-Fa-f.:]{1,45}))?\) ?"
)
# The name in that shape may give the process's rank. vLLM names a worker by its rank in the engine:
# `(VllmWorker rank=2 pid=...)` (0.8), `(VllmWorker TP2 pid=...)`, `(Worker_TP16_EP16 pid=...)` (later: the
# decode-context and expert ranks after TP follow from it; `DP0_`, `PP1_` or `PCP1_` before it leave no rank).
# NeMo-RL's workers name themselves by their repr, torch.distributed's global rank: `MegatronPolicyWorker[rank=8]`.
_WORKER_RANK = recache.compile(
    r"(?:VllmWorker|Worker)(?: rank=(?P<rank>\d{1,9})|[ _]TP(?P<tp>\d{1,9})(?:_DCP\d{1,9})?(?:_EP\d{1,9})?)"
    r"|[A-Za-z_][\w.]{0,80}\[rank=(?P<repr>\d{1,9})\]"
)
_RAY_DAEMON = recache.compile(
    r"\((?:raylet|gcs_server|monitor|log_monitor|dashboard[\w]{0,20}|autoscaler(?: \+[\w.]{1,20})?)"
    r"(?:, ip=(?P<host>[0-9A-Fa-f.:]{1,45}))?\) ?"
)
# Ray colours its prefix (`ESC[36m(Name pid=N)ESC[0m `, `ESC[2mESC[36m(...)`); a paste through a web page
# loses the ESC bytes and keeps `[36m(Name pid=N)[0m ` (GitHub shows no ESC).
_LOST_SGR = recache.compile(r"(?:\[[0-9]{1,3}(?:;[0-9]{1,3}){0,4}m)+")


def _lost_colour_end(line: str, pos: int, *, space: bool = False) -> int:
    """Where the text after `pos` goes on past colour codes whose ESC was lost (and a space, if `space`)."""
    if line.startswith("[", pos) and (m := _LOST_SGR.match(line, pos)):
        pos = m.end()
        if space and line.startswith(" ", pos):
            pos += 1
    return pos


_RAY_REPEATED = recache.compile(r" \[repeated \d{1,9}x across cluster\](?: \(Ray deduplicates logs by default\..*)?$")
# vLLM's logging format, repeated on every line of a record (its NewLineFormatter), a traceback's too:
# `ERROR 11-08 11:01:30 [core.py:502] ` (`INFO 05-06 16:54:45 worker.py:12] ` before 0.7). Its level and
# date are the line's stamp; the header holds nothing else a rule reads.
_LEVELED = recache.compile(
    r"(?P<stamp>(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d{1,9})?) "
    r"\[?[\w./-]{1,120}:\d{1,9}\] ?"  # the file, relative to vLLM's package where its logger is set so
)
# PyTorch's own logging format (torch._logging's TorchLogsFormatter: torchrun's agent, torch.distributed, the
# test harness), likewise repeated on every line of a record: `E0207 07:54:31.862000 4712 path/api.py:939] `,
# a compile's trace id after it (`[0/0] `). Its stamp is the line's.
_TORCH_HEADER = recache.compile(
    r"(?P<stamp>[FEWIVC]\d{4} \d\d:\d\d:\d\d\.\d{6}) \d{1,9} [^\s\]]{1,300}:\d{1,9}\](?: \[[\d/]{1,40}\])? ?"
)
# `docker compose up` / `docker compose logs`: each line under its container's name padded to the longest,
# `vllm-server-1  | `. Only where it is the stream's shape.
_COMPOSE = recache.compile(r"(?P<name>[A-Za-z0-9][\w.-]{0,62}) *\| ")
# `torchx log` (and `torchx run`'s tee): each line under its app's role and replica, `trainer/0 ` (torchx
# cli/cmd_log.py), then torchrun's tee of the worker with the empty role torchx's dist.ddp gives it, `[3]:`: the
# replica is a node, the number in brackets a local rank on it. Only where it is the stream's shape.
_TORCHX = recache.compile(r"(?P<role>[A-Za-z_][\w.-]{0,62})/(?P<replica>\d{1,9}) (?:\[(?P<lrank>\d{1,9})\]:)?")
# A test harness's tee of its child's streams: `stderr: <line>` (accelerate's and transformers'
# execute_subprocess_async print `label, line`), taken before the child's own layers.
_HARNESS = ("stdout: ", "stderr: ")
# Determined AI's trial logs (`det trial logs`, the web UI): after the record's `[stamp] ` its container id's first
# eight hex digits, ` [rank=N]` where the process is a rank of the trial, ` || `, and its level (`WARNING: `).
_DETERMINED = recache.compile(
    r"(?:[0-9a-f]{8}|\[UNKNOWN CONTAINER\])(?: \[rank=(?P<rank>\d{1,9})\])? \|\| "
    r"(?:(?:TRACE|DEBUG|INFO|WARNING|ERROR|CRITICAL): )?"
)
_CTRL_C = "^C"  # a terminal's echo of Ctrl-C: the next line printed follows it on the same line
# FastChat's and LLaVA's `StreamToLogger`: each line a process wrote to stdout or stderr, logged as a record
# of the logger named after that stream (`%(asctime)s | %(levelname)s | %(name)s | %(message)s`).
_STREAM_RECORD = recache.compile(
    r"(?P<stamp>\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d{1,9})?) "
    r"\| (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) +\| std(?:out|err) \| "
)
# srun --label: ` 3: ` padded task id (P<n> for heterogeneous jobs). Only where the stream is labelled.
_SRUN = recache.compile(r"(?:P\d+ )? *(?P<task>\d{1,9}): ")
# A launcher's own lines, which it never labels (a job's tail is full of them): not held against a stream's
# labelling. srun's and slurmstepd's (slurmstepd's under a task's label are its node's first task's: not that
# task's lines); Hydra's BAD TERMINATION banner and its mpiexec/proxy errors; pdsh's own.
_SLURM_OWN = ("srun: ", "slurmstepd: ", "slurmstepd-", "sbatch: ", "salloc: ")
_HYDRA_OWN = (
    "=====",
    "=   ",
    "YOUR APPLICATION TERMINATED WITH THE EXIT STRING",
    "This typically refers to a problem with your application",
    "Please see the FAQ page for debugging suggestions",
    "[mpiexec@",
    "[proxy:",
)
_PDSH_OWN = ("pdsh@",)
# pdsh (DeepSpeed multi-node): `worker-3: ` host labels. Only where the stream is labelled.
_PDSH = recache.compile(r"(?P<host>[A-Za-z0-9][\w.-]*): ")
_SECONDS = recache.compile(r"[0-9]+(?:\.[0-9]+)?m?s")
# A log collector's layer before a launcher tag (kept only when a tag follows): its timestamp
# (`2026-11-29 07:00:00,123 `, `2026-11-29T07:00:00.123+00:00 `, `[2026-11-29 07:00:00] `, `...123Z: `) and/or
# a host label (`node07: `, with a digit or `-`, so that `Error: [rank3]:` is never read as a host); or Open
# MPI's own --timestamp-output, ctime's date glued to the tag (`Wed Mar 10 13:22:37 2021[1,0]<stderr>:`).
_STAMP = r"\[?(?P<stamp>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?)\]?"
_COLLECTOR_STAMP = recache.compile(_STAMP + ":? ")
_COLLECTOR_HOST = recache.compile(r"(?P<host>(?=[\w.-]*[\d-])[A-Za-z0-9][\w.-]{0,62}): ")
_OMPI_CTIME = recache.compile(
    r"(?P<stamp>(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d "
    r"\d\d:\d\d:\d\d \d{4})(?:<(?:stdout|stderr|stddiag)>:)?"
)
# A collector's stamp on a stream stamped throughout: the above, syslog's `Nov 26 23:08:31 ` (`ts`'s default,
# a CI viewer), or a time of day alone (Jenkins' timestamper plugin), which dates nothing but hides what follows.
_LAYER_STAMP = recache.compile(
    _STAMP
    + r" |(?P<syslog>(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d \d\d:\d\d:\d\d(?:[.,]\d{1,9})?) "
    + r"|\[?(?P<clock>\d\d:\d\d:\d\d(?:[.,]\d{1,9})?)\]? "
)
# A wrapper that logs its child's lines under its own stamp and the record's level (`[2024-09-09 19:22:16]
# [INFO] Traceback ...`: a launcher app, a job runner): the level tag after a layer stamp.
_LEVEL_TAG = recache.compile(r"\[(?:TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|CRITICAL|FATAL)\] ")
# Viewer exports with leading line numbers: `1234  message` / `1234\tmessage` / `[1234] message` (which reads as
# MPICH's `[3] ` rank label but counts up line by line, never going back).
_NUMBERED = recache.compile(r" *(?:(?P<n>\d{1,9})(?:\t| {2,}|: )|\[(?P<b>\d{1,9})\] )")
# A tqdm bar another process left on the line without a newline: `  42%|████▏ | 5/12 [00:01<00:01, 4.5it/s]`.
_TQDM = recache.compile(r" *[0-9]{1,3}%\|[^|\n]{0,200}\| *[^\[\n]{0,40}\[[^\]\n]{0,80}\]")
# torchrun's tee: `[default3]:` (local rank, no space). `[rank3]:` is PyTorch's own, handled below.
_TEE = recache.compile(r"\[(?P<role>[A-Za-z_][\w-]*?)(?P<lrank>\d{1,9})\]:")
# PyTorch: `[rank3]: ` (excepthook, with a space, maybe doubled) or `[rank3]:[E...` (c10 log prefix).
_RANK = recache.compile(r"\[rank(?P<rank>\d{1,9})\]: ?")
# Either, its `[` lost: an excerpt cut at the line's first character (no emitter starts a line so).
_CUT_TAG = recache.compile(r"(?:rank|default)\d{1,9}\]:")
# torchrun's TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE='[${rank}]:' (PyTorch >= 2.2): taken only where it is
# the stream's shape (most lines carry it), since `[12]:` alone could be anything
_TEMPLATE = recache.compile(r"\[(?P<rank>\d{1,9})\]:")
# MPICH's Hydra `mpiexec -l` (`-prepend-rank`): `[3] ` before each line of rank 3's output. Taken only
# where it is the stream's shape, as above.
# Not NCCL's own `[dev] NCCL INFO` / `[dev] file.cc:N NCCL WARN` device tag with its `host:pid:tid ` cut away.
_HYDRA = recache.compile(r"\[(?P<rank>\d{1,9})\] (?!NCCL [A-Z]|[\w./-]{1,200}\.(?:cc|cu|cpp|h):\d{1,6} NCCL )")


@dataclass(frozen=True, slots=True)
class Prefix:
    """What the stripped prefixes said about one line."""

    rank: int | None = None  # global rank ([rankN]:, mpirun vpid)
    local_rank: int | None = None  # torchrun tee [defaultN]:
    task: int | None = None  # srun --label task id
    host: str | None = None
    pid: int | None = None  # the emitting process's (mpirun's host:pid, Ray's pid=)
    stamp: str | None = None  # a timestamp the transport added (kubernetes)
    ray: bool = False  # relayed by Ray's driver: its dedup suffix may end the line
    # `[rankN]: ` with its space: PyTorch's excepthook tags an uncaught exception's report so (how, not who: no
    # part of the prefix's identity)
    hooked: bool = field(default=False, compare=False)


NO_PREFIX = Prefix()


TAUGHT_SECONDS = 2.0  # what a user's prefix pattern may spend on one stream (as a rule: matcher's timeout)
TAUGHT_LINE = 0.05  # ... and on one line


@record(frozen=False, eq=False)
class Taught:
    """A prefix pattern taught by a rule (a user's launcher), with the time it has left on this stream:
    a pattern that backtracks on every line runs out and is passed over, as a slow rule is dropped."""

    rule_id: str
    pattern: Any
    builtin: bool = False
    left: float = TAUGHT_SECONDS

    def fresh(self) -> Taught:
        return Taught(self.rule_id, self.pattern, self.builtin, TAUGHT_SECONDS)

    @property
    def spent(self) -> bool:
        return self.left <= 0

    def match(self, line: str) -> Any:
        if self.builtin:
            return self.pattern.match(line)
        if self.left <= 0:
            return None
        value, spent, _ = bounded(functools.partial(self._match, line), min(TAUGHT_LINE, self.left))
        self.left -= spent
        return value

    def _match(self, line: str, timeout: float) -> Any:
        return self.pattern.match(line, timeout=timeout)


@record
class Profile:
    """The optional, ambiguous layers a stream carries on most lines (sniffed from its head)."""

    srun: bool = False
    pdsh: bool = False
    numbered: bool = False
    indent: str = ""  # the indent every line of a pasted excerpt shares (a Markdown code block's)
    template: bool = False  # `[${rank}]:` on most lines
    hydra: bool = False  # `[3] ` (mpiexec -l) on most lines
    stamped: bool = False  # a date-and-time heads most lines (`ts`, a viewer, a logging asctime): a layer
    compose: bool = False  # `name  | ` of docker compose on most lines
    torchx: bool = False  # `role/replica ` of torchx on most lines
    taught: tuple[Taught, ...] = ()  # patterns of rules with the `prefix` effect (a user's launcher)


PLAIN = Profile()


def strip_prefixes(line: str, *, srun_labels: bool = False, profile: Profile = PLAIN) -> tuple[str, Prefix]:
    """The message without launcher prefixes, and what they said."""
    srun_labels = srun_labels or profile.srun
    taught = _taught(line, profile.taught) if profile.taught else None
    if taught is None:
        return _strip_builtin(line, srun_labels, profile)
    inner, prefix = _strip_builtin(line[taught[0] :], srun_labels, profile)
    rank, local_rank, host = taught[1:]
    return inner, replace(
        prefix,
        rank=prefix.rank if rank is None else rank,
        local_rank=prefix.local_rank if local_rank is None else local_rank,
        host=prefix.host or host,
    )


def _strip_builtin(line: str, srun_labels: bool, profile: Profile) -> tuple[str, Prefix]:
    """The built-in layers (kubernetes, collectors, pdsh, srun, mpirun, torchrun, PyTorch), outside in."""
    if line.startswith(_CTRL_C):
        return _strip_builtin(_without_ctrl_c(line), srun_labels, profile)
    if line[:1] in "rd" and _CUT_TAG.match(line):
        return _strip_builtin("[" + line, srun_labels, profile)
    if not line or (
        line[0] not in "[0123456789P ("
        and not profile.pdsh
        and not profile.indent
        and not profile.stamped
        and not profile.compose
        and not profile.torchx
        and ": [" not in line[:80]
        and line[:8] not in _HARNESS
        and not (line[0] in "DIWEC" and _LEVELED.match(line))
        and not (line[0] in "FEWIVC" and _TORCH_HEADER.match(line))
        and not (line[24:25] in ("[", "<") and _OMPI_CTIME.match(line))
    ):
        return line, NO_PREFIX
    rank = local_rank = task = pid = None
    host = stamp = None
    pos = len(profile.indent) if profile.indent and line.startswith(profile.indent) else 0
    if profile.numbered and (m := _NUMBERED.match(line, pos)):
        pos = m.end()
    if profile.compose and (m := _COMPOSE.match(line, pos)):
        pos = m.end()
    if profile.torchx and (m := _TORCHX.match(line, pos)):
        host, pos = f"{m['role']}/{m['replica']}", m.end()
        local_rank = int(m["lrank"]) if m["lrank"] else None
    if "%|" in line[pos : pos + 8] and (m := _TQDM.match(line, pos)):
        pos = m.end()
    if line[pos : pos + 1].isdigit() and (m := _STREAM_RECORD.match(line, pos)) is not None:
        stamp, pos = m["stamp"], m.end()
    elif (m := _stamp_at(line, pos, profile)) is not None:
        found = m.groupdict()  # a time of day alone is no stamp: it dates nothing
        stamp, pos = found.get("stamp") or found.get("syslog"), m.end()
        if profile.stamped and line.startswith("[", pos) and (m := _LEVEL_TAG.match(line, pos)) is not None:
            pos = m.end()
        elif stamp is not None and (m := _DETERMINED.match(line, pos)) is not None:
            pos, rank = m.end(), int(m["rank"]) if m["rank"] else None
    ray = False
    for _ in range(2):  # a process's own `(Name pid=N) ` under Ray's relay of it (vLLM's engine in a Ray actor)
        at = _lost_colour_end(line, pos)
        if not line.startswith("(", at) or not (m := _RAY.match(line, at) or _RAY_DAEMON.match(line, at)):
            break
        pid = int(m["pid"]) if "pid" in m.re.groupindex and m["pid"] else pid
        host, pos, ray = m["host"] or host, _lost_colour_end(line, m.end(), space=True), True
        if "name" in m.re.groupindex and m["name"] and (w := _WORKER_RANK.fullmatch(m["name"])):
            rank = int(w["rank"] or w["tp"] or w["repr"])
    if profile.pdsh and (m := _PDSH.match(line, pos)):
        host, pos = m["host"], m.end()
    if line[pos : pos + 8] in _HARNESS:
        pos += 8
    if srun_labels and (m := _SRUN.match(line, pos)):
        task, pos = int(m["task"]), m.end()
        if line.startswith("slurmstepd", pos):
            task = None  # `_SLURM_OWN`
    if line[pos : pos + 1] != "[" or not _tagged(line, pos + 1):
        pos, stamp, host = _collector(line, pos, stamp, host)
    if (m := _MPI.match(line, pos)) is not None:
        rank, pos = int(m["rank"]), m.end()
        host = m["host"] or host
        pid = int(m["pid"]) if m["pid"] else pid
    if (layer := _rank_layer(profile)) is not None and (m := layer.match(line, pos)) is not None:
        rank, pos = int(m["rank"]), m.end()
    hooked = False
    while line.startswith("[", pos):
        if (m := _RANK.match(line, pos)) is not None:
            rank, pos, hooked = int(m["rank"]), m.end(), line[m.end() - 1] == " "
        elif (m := _TEE.match(line, pos)) is not None:
            local_rank, pos = int(m["lrank"]), m.end()
        else:
            break
    head = line[pos : pos + 1]  # a header repeated on every line of a record (vLLM's, torch's)
    if (head in "DIWEC" and (m := _LEVELED.match(line, pos)) is not None) or (
        head in "FEWIVC" and (m := _TORCH_HEADER.match(line, pos)) is not None
    ):
        stamp, pos = m["stamp"], m.end()
    if pos == 0:
        return line, NO_PREFIX
    return line[pos:], Prefix(rank, local_rank, task, host, pid, stamp, ray, hooked)


def _without_ctrl_c(line: str) -> str:
    while line.startswith(_CTRL_C):
        line = line[len(_CTRL_C) :]
    return line


def _stamp_at(line: str, pos: int, profile: Profile) -> re.Match[str] | None:
    """A transport's timestamp at `pos`: Kubernetes' (CRI, kubectl --timestamps), or a collector's on a
    stream stamped throughout."""
    if line[pos : pos + 1].isdigit() and (m := _CRI.match(line, pos)):
        return m
    return _LAYER_STAMP.match(line, pos) if profile.stamped else None


def without_ray_repeats(text: str) -> str:
    """A Ray-relayed message without the ` [repeated Nx across cluster]` its log deduplication adds."""
    return _RAY_REPEATED.sub("", text) if "x across cluster]" in text else text


def _taught(line: str, patterns: tuple[Taught, ...]) -> tuple[int, int | None, int | None, str | None] | None:
    """The first taught prefix at the start of the line: where it ends, and the rank, local rank and host
    it names (a pattern that runs out of time on a line is passed over there)."""
    for pattern in patterns:
        m = pattern.match(line)
        if m is None or m.end() == 0:
            continue
        facts = m.groupdict()
        return m.end(), _small(facts.get("rank")), _small(facts.get("local_rank")), facts.get("host")
    return None


def _small(text: str | None) -> int | None:
    return read_int(text, max_len=9, signed=False)


def starts_tagged(line: str) -> bool:
    """Whether the line starts with a launcher tag (then `strip_prefixes` finds a prefix there)."""
    return line[:1] == "[" and _tagged(line, 1)


def _tagged(line: str, pos: int) -> bool:
    """Whether a launcher tag starts at `pos - 1` (its `[` already seen): `[rank3]:`, `[default3]:`, `[1,3]<`."""
    return _TAG.match(line, pos - 1) is not None


# `_MPI`, `_RANK` or `_TEE`, in one match (a line of a log with no prefix is tried at every `[`)
_TAG = recache.compile("|".join(f"(?:{re.sub(r'[(][?]P<[a-z]+>', '(?:', p.pattern)})" for p in (_MPI, _RANK, _TEE)))


def _collector(line: str, pos: int, stamp: str | None, host: str | None) -> tuple[int, str | None, str | None]:
    """A collector's timestamp (and its level) and/or host label at `pos`, taken only when a launcher tag follows."""
    at, found_stamp, found_host = pos, None, None
    if (m := _COLLECTOR_STAMP.match(line, at) or _OMPI_CTIME.match(line, at)) is not None:
        found_stamp, at = m["stamp"], m.end()
    if (m := _COLLECTOR_HOST.match(line, at)) is not None:
        found_host, at = m["host"], m.end()
    if found_stamp and line.startswith("[", at) and (m := _LEVEL_TAG.match(line, at)) is not None:
        at = m.end()  # a collector's level after its time (`[2024-09-15 20:18:04] [INFO] [rank0]: `)
    if at == pos or not line.startswith("[", at) or not _tagged(line, at + 1):
        return pos, stamp, host
    return at, stamp or found_stamp, found_host or host


def is_srun_labelled(sample: list[str]) -> bool:
    """Whether most non-empty lines of a stream carry an `srun --label` task id."""
    return sniff_profile(sample).srun


def sniff_profile(sample: list[str], whole: bool = False) -> Profile:
    """Which ambiguous layers most lines of a stream carry: srun task labels, pdsh host labels,
    leading line numbers. A layer is only stripped where it is the stream's shape, never on a hunch.
    The sample is the `whole` stream when the stream ends within it."""
    lines = list(filter(str.strip, sample))
    if len(lines) < 3:
        return PLAIN
    if indent := _paste_indent(lines):
        lines = [line[len(indent) :] if line.startswith(indent) else line for line in lines]
    numbered = _mostly(lines, _NUMBERED) and _counting(lines)
    if numbered:
        lines = [line[m.end() :] if (m := _NUMBERED.match(line)) else line for line in lines]
    hosts = _labelled_lines(lines, _PDSH, _PDSH_OWN)
    labels = [m["host"] for line in hosts if (m := _PDSH.match(line))] if _mostly(hosts, _PDSH) else []
    pdsh = len(labels) >= max(2, 0.8 * len(hosts)) and len(set(labels)) <= max(8, len(hosts) // 20)
    pdsh = pdsh and all(  # a host name has a digit or `-`; a label of digits alone is srun's task id, and one
        # of seconds (`0.060s`) a time since the job's start (Flux's eventlog)
        any(c.isdigit() or c == "-" for c in label) and not label.isdigit() and not _SECONDS.fullmatch(label)
        for label in set(labels)
    )
    if pdsh:
        lines = [line[m.end() :] if (m := _PDSH.match(line)) else line for line in lines]
    compose = _compose_layer(lines)
    if compose:
        lines = [line[m.end() :] if (m := _COMPOSE.match(line)) else line for line in lines]
    torchx = _torchx_layer(lines)
    if torchx:
        lines = [line[m.end() :] if (m := _TORCHX.match(line)) else line for line in lines]
    stamped = _stamp_layer(lines, whole)  # the layers below are judged as before: a `[12345] ` after a stamp is a pid
    template = _mostly(lines, _TEMPLATE, 0.6)
    hydra = not template and _labelled(lines, _HYDRA, _HYDRA_OWN, 0.6)
    return Profile(
        srun=_labelled(lines, _SRUN, _SLURM_OWN),
        pdsh=pdsh,
        numbered=numbered,
        indent=indent,
        template=template,
        hydra=hydra,
        stamped=stamped,
        compose=compose,
        torchx=torchx,
    )


def _compose_layer(lines: list[str]) -> bool:
    """Whether most lines carry docker compose's `name  | `, of a few containers (a table's `a | b` rows
    name many)."""
    if not _mostly(lines, _COMPOSE):
        return False
    names = {m["name"] for line in lines if (m := _COMPOSE.match(line))}
    return len(names) <= max(8, len(lines) // 20)


def _torchx_layer(lines: list[str]) -> bool:
    """Whether most lines carry torchx's `role/replica `, of a few roles and replicas (a path's `dir/2 `
    is no such layer: its names vary)."""
    if not _mostly(lines, _TORCHX):
        return False
    names = {(m["role"], m["replica"]) for line in lines if (m := _TORCHX.match(line))}
    return len(names) <= max(8, len(lines) // 20)


def _stamp_layer(lines: list[str], whole: bool) -> bool:
    """Whether a date-and-time (or a time of day) heads most lines. Then it is read as a layer, its time
    the line's: a collector's (`ts`, a log viewer, a CI's timestamper), which stamps a traceback's frames
    too and hides them otherwise, or a logging format's own asctime, whose records read the same with it
    stripped. A head of a few lines may be all a long line's clip leaves a scan with, and not a whole
    read: there every line must carry it, and the head be the `whole` stream (a short excerpt)."""
    if len(lines) >= _STAMPED_LINES:
        return _mostly(lines, _LAYER_STAMP)
    return whole and all(map(_LAYER_STAMP.match, lines))


_STAMPED_LINES = 10

ELIDED = " \t\r.\u2026"  # a line of these alone is blank, or where a paste's poster cut (`...`)


def elided(line: str) -> bool:
    """Whether a line is blank or a paste's `...` alone (`chunkview.opening_line` reads the bytes alike)."""
    return not line.strip(ELIDED)


def _paste_indent(lines: list[str]) -> str:
    """The indent (a tab, or two characters or more) that every line shares, as an excerpt pasted into a
    code block has it; none where it would leave a traceback's frame at column 0 (Python indents frames
    under their header: the indent is then the log's own). A line of dots alone is where the poster cut.
    An excerpt quoted in Markdown or a mail has `> ` on every line (`>` alone on its blank ones): that
    marker, and the indent under it; or on its first line alone (Markdown quotes the lines under it too,
    lazily): that marker alone, taken off the lines that start with it."""
    if lines and all(line.startswith("> ") or line.rstrip() == ">" for line in lines):
        inner = [line[2:] for line in lines if line.startswith("> ") and line[2:].strip()]
        return "> " + (_paste_indent(inner) if inner else "")
    if lines[0].startswith("> ") and not any(line.startswith(">") for line in lines[1:]):
        return "> "
    lines = [line for line in lines if not elided(line)] if lines[0][:1] in ELIDED else lines
    indent = lines[0][: len(lines[0]) - len(lines[0].lstrip(" \t"))] if lines else ""
    for line in lines[1:]:
        if len(indent) < 2 and indent != "\t":  # it only shrinks: most heads end here, at their first line
            return ""
        while indent and not line.startswith(indent):
            indent = indent[:-1]
    if len(indent) < 2 and indent != "\t":
        return ""
    rest = [line[len(indent) :] for line in lines]
    return "" if any(line.startswith('File "') for line in rest) else indent


def _rank_layer(profile: Profile) -> re.Pattern[str] | None:
    """The layer that carries a global rank on every line of a rank's output, where the stream has one
    (torchrun's template and Hydra's label exclude each other: `sniff_profile` takes one)."""
    return _TEMPLATE if profile.template else _HYDRA if profile.hydra else None


MAX_HEAD_RANK = 10**6  # ranks a head is read for (and an event file may record)
_AT_LINE_START = {layer: recache.compile("^" + layer.pattern, re.M) for layer in (_TEMPLATE, _HYDRA)}


def shape_ranks(sample: list[str], profile: Profile) -> frozenset[int]:
    """The ranks whose lines a stream's head shows through the layer its every line carries (Hydra's
    `[3] `, torchrun's `[${rank}]:` template): a rank that printed something, even if nothing the scan
    keeps. One search over the head, only where the stream has such a layer."""
    if (layer := _rank_layer(profile)) is None:
        return frozenset()
    found = (int(m["rank"]) for m in _AT_LINE_START[layer].finditer("\n".join(sample)))
    return frozenset(rank for rank in found if rank < MAX_HEAD_RANK)


def _labelled_lines(lines: list[str], pattern: re.Pattern[str], own: tuple[str, ...]) -> list[str]:
    """The lines but the launcher's `own`; none where no line carries the label `pattern` (most streams:
    one pass in C decides, and nothing is filtered)."""
    if not any(map(pattern.match, lines)):
        return []
    return [line for line in lines if not line.startswith(own)]


def _labelled(lines: list[str], pattern: re.Pattern[str], own: tuple[str, ...], share: float = 0.8) -> bool:
    """Whether most lines but the launcher's `own` (at least two) carry the launcher's label `pattern`."""
    rest = _labelled_lines(lines, pattern, own)
    return len(rest) >= 2 and _mostly(rest, pattern, share)


def _mostly(lines: list[str], pattern: re.Pattern[str], share: float = 0.8) -> bool:
    """Whether at least `share` of the lines start with `pattern`; it stops in the block of lines where
    the misses decide (matched a block at a time in C: a Python loop per line cost twice as much). A
    block is no longer than the misses still allowed, plus one: most streams carry no such layer, and
    the first block of misses then decides."""
    allowed = len(lines) - share * len(lines)  # misses that still leave `share`
    misses, at = 0, 0
    while at < len(lines):
        size = min(_MOSTLY_BLOCK, int(allowed - misses) + 1)
        block = lines[at : at + size]
        misses += len(block) - len(list(filter(None, map(pattern.match, block))))
        if misses > allowed:
            return False
        at += size
    return True


_MOSTLY_BLOCK = 256


def _counting(lines: list[str]) -> bool:
    found = [m for line in lines if (m := _NUMBERED.match(line))]
    numbers = [int(m["n"] or m["b"]) for m in found]
    steps = sum(1 for a, b in itertools.pairwise(numbers) if b == a + 1)
    if any(m["b"] for m in found) and any(b <= a for a, b in itertools.pairwise(numbers)):
        return False  # ranks' `[3] ` labels, interleaved round robin, count up too, but go back
    return steps >= 0.7 * max(1, len(numbers) - 1)
