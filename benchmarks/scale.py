"""Scale of the reduce step: `diagnose` over the event files of 1,000 nodes x 8 ranks.

Each node's torchrun console and `dmesg -T` are generated from the lines of the real two-node fixture
fixtures/multinode-xid79-rank6 (node01's rank 2 is the template of every rank: its NCCL init, 24 step
lines, the watchdog timeout and its C++ stack, the abort; the agent's ChildFailedError table grows to
8 entries), with ranks, pids, hosts, GPUs and the world size rewritten. One rank (node 3's
local rank 6) loses its GPU (Xid 79) at 07:07:37 and goes silent; the other 7,999 time out 10 minutes
later. Every node's logs sit at the same path (`train.log`, `dmesg.txt`), as on a real cluster.

Each node is scanned in this process (`collect` + the event file writer, as `rankautopsy scan` does;
its raw logs are deleted once scanned), then `rankautopsy diagnose` runs in a fresh process over the
first 125, 250, 500 and 1,000 nodes' event files: wall time and peak RSS (the child's ru_maxrss).

    nice -n 10 python benchmarks/scale.py [--nodes 1000] [--steps 125,250,500,1000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXTURE = REPO / "fixtures" / "multinode-xid79-rank6"
PER_NODE = 8
BUSES = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
CULPRIT_NODE, CULPRIT_LOCAL = 3, 6  # on a node every measured subset holds
XID_AT = "07:07:37"

TABLE_ENTRY = """\
[{idx}]:
  time      : 2026-11-29_07:17:35
  host      : {host}.cluster.internal
  rank      : {rank} (local_rank: {local})
  exitcode  : {code} (pid: {pid})  ({name})
  error_file: <N/A>
  traceback : Signal {num} (SIGABRT) received by PID {pid}
"""


def _template() -> tuple[list[str], list[str], list[str]]:
    """node01's agent head, local rank 2's lines, and the agent's traceback before its failure table."""
    lines = (FIXTURE / "logs" / "node01.log").read_text(encoding="utf-8").splitlines()
    agent = [x for x in lines if not x.startswith("[default")]
    head = [x for x in agent if x.startswith("W1129")]
    cut = next(i for i, x in enumerate(agent) if x.startswith("====="))
    tail = [x for x in agent[:cut] if not x.startswith("W1129")]
    rank = [x for x in lines if x.startswith("[default2]:")]
    return head, rank, tail


def _rank_lines(template: list[str], node: int, nodes: int, local: int, pid: int, host: str) -> list[str]:
    g, world = node * PER_NODE + local, nodes * PER_NODE
    out = []
    for line in template:
        line = line.replace("[default2]:", f"[default{local}]:").replace("node01", host).replace("52186", str(pid))
        line = re.sub(r"\b([Rr])ank 2\b", rf"\g<1>ank {g}", line).replace("[rank2]:", f"[rank{g}]:")
        line = line.replace(" of 8,", f" of {world},").replace("nranks 8 ", f"nranks {world} ")
        line = line.replace(":52186 [2] NCCL", f":{pid} [{local}] NCCL").replace(" [2] NCCL", f" [{local}] NCCL")
        line = re.sub(
            r"nRanks 8 nNodes 2 localRanks 4 localRank 2",
            f"nRanks {world} nNodes {nodes} localRanks 8 localRank {local}",
            line,
        )
        line = line.replace(
            "cudaDev 2 nvmlDev 2 busId 3b000", f"cudaDev {local} nvmlDev {local} busId {BUSES[local]}000"
        )
        out.append(line)
    return out


def _silenced(lines: list[str]) -> list[str]:
    """The culprit: its lines up to its last step before the GPU fell off the bus, then nothing."""
    keep = []
    for line in lines:
        m = re.search(r"2026-11-29 (\d\d:\d\d:\d\d)", line)
        if m and m[1] >= XID_AT:
            break
        if "Watchdog" in line or "terminate called" in line:
            break
        keep.append(line)
    return keep


_CLOCK = re.compile(r"(\d\d:\d\d:\d\d)[.,](\d{3})")


def _records(lines: list[str]) -> list[tuple[str, list[str]]]:
    """A rank's lines as (time, a timestamped line and the unstamped lines under it), to interleave."""
    out: list[tuple[str, list[str]]] = []
    for line in lines:
        m = _CLOCK.search(line[:60])
        if m or not out:
            out.append((f"{m[1]}.{m[2]}" if m else "", [line]))
        else:
            out[-1][1].append(line)
    return out


def node_logs(node: int, nodes: int, parts: tuple[list[str], list[str], list[str]]) -> tuple[str, str]:
    head, rank, tail = parts
    host, agent = f"gpu{node:04d}", 20000 + node
    culprit = node == min(CULPRIT_NODE, nodes - 1)
    out = [x.replace("52117", str(agent)) for x in head]
    entries, records = [], []
    for local in range(PER_NODE):
        pid = 30000 + node * 16 + local
        lines = _rank_lines(rank, node, nodes, local, pid, host)
        dead = culprit and local == CULPRIT_LOCAL
        records += _records(_silenced(lines) if dead else lines)
        code, name, num = ("-9", "SIGKILL", 9) if dead else ("-6", "SIGABRT", 6)
        g = node * PER_NODE + local
        entries.append(
            TABLE_ENTRY.format(idx=local, host=host, rank=g, local=local, code=code, pid=pid, name=name, num=num)
        )
    out += [line for _, block in sorted(records, key=lambda r: r[0]) for line in block]  # interleaved by time
    api = "torch/distributed/elastic/multiprocessing/api.py:1002"
    first = f"local_rank: 0 (pid: {30000 + node * 16}) of binary: /home/user/venv/bin/python3"
    out.append(f"E1129 07:17:35.537000 {agent} {api}] failed (exitcode: -6) {first}")
    out += tail
    sep = "=" * 60
    table = [sep, "train.py FAILED", "-" * 60, "Failures:", *"".join(entries[1:]).splitlines(), "-" * 60,
             "Root Cause (first observed failure):", *entries[0].splitlines(), sep]  # fmt: skip
    kernel = [
        f"[Fri Nov 27 19:03:15 2026] mlx5_core 0000:{b}:00.0 mlx5_{i}: Port: 1 Link ACTIVE"
        for i, b in enumerate(BUSES[:4])
    ]
    for local in range(PER_NODE):
        pid = 30000 + node * 16 + local
        if culprit and local == CULPRIT_LOCAL:
            xid = f"NVRM: Xid (PCI:0000:{BUSES[local]}:00): 79, pid={pid}, name=python, GPU has fallen off the bus."
            kernel.insert(4, f"[Sun Nov 29 07:07:37 2026] {xid}")
        else:
            xid = f"NVRM: Xid (PCI:0000:{BUSES[local]}:00): 45, pid={pid}, name=python, channel 0x0000001{local}"
            kernel.append(f"[Sun Nov 29 07:17:35 2026] {xid}")
    return "\n".join(out + table) + "\n", "\n".join(kernel) + "\n"


def generate(root: Path, nodes: int) -> tuple[float, int, int]:
    """Every node's logs, scanned into events/<host>.events.jsonl.gz. Returns seconds, raw and event bytes."""
    from rankautopsy.events import Node
    from rankautopsy.events.file import write
    from rankautopsy.pipeline import Options, _collect, _load

    parts = _template()
    rules = _load(Options(paths=[]))  # once, as one `scan` process per node would each do
    (root / "events").mkdir(parents=True, exist_ok=True)
    started, raw_bytes, event_bytes = time.monotonic(), 0, 0
    here = os.getcwd()
    for node in range(nodes):
        host = f"gpu{node:04d}"
        work = root / "raw" / host
        work.mkdir(parents=True, exist_ok=True)
        log, kernel = node_logs(node, nodes, parts)
        (work / "train.log").write_text(log, encoding="utf-8")
        (work / "dmesg.txt").write_text(kernel, encoding="utf-8")
        raw_bytes += len(log) + len(kernel)
        os.chdir(work)
        try:
            collected = _collect(Options(paths=["train.log"], dmesg=["dmesg.txt"], host=host, tz=UTC, jobs=1), rules)
        finally:
            os.chdir(here)
        collected.nodes = [Node(host=host)]
        event_bytes += write(collected, root / "events" / f"{host}.events.jsonl.gz")
        shutil.rmtree(work)
    return time.monotonic() - started, raw_bytes, event_bytes


def measure(root: Path, count: int, fmt: str = "json") -> dict[str, object]:
    subset = root / f"first-{count}"
    subset.mkdir(exist_ok=True)
    for node in range(count):
        name = f"gpu{node:04d}.events.jsonl.gz"
        if not (subset / name).exists():
            os.link(root / "events" / name, subset / name)  # a hard link: the tool does not follow symlinks out
    argv = [sys.executable, "-m", "rankautopsy", "diagnose", str(subset), "--format", fmt, "--tz", "UTC"]
    with tempfile.TemporaryFile() as out_file, tempfile.TemporaryFile() as err_file:
        started = time.monotonic()
        child = subprocess.Popen(argv, stdout=out_file, stderr=err_file)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.monotonic() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out_file.seek(0)
        err_file.seek(0)
        out, err = out_file.read(), err_file.read()
    peak = usage.ru_maxrss  # KiB on Linux
    report = json.loads(out) if out and fmt == "json" else {}
    first = (report.get("verdict") or {}).get("first_death") or {}
    return {
        "nodes": count,
        "ranks": count * PER_NODE,
        "format": fmt,
        "seconds": round(elapsed, 2),
        "peak_rss_mib": round(peak / 1024),
        "events": len(report.get("events", [])),
        "first_death": (first.get("rank"), first.get("cause")),
        "exit": child.returncode,
        "stderr": err.decode()[-300:],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--steps", default="125,250,500,1000")
    parser.add_argument("--keep", type=Path, help="generate into this directory and keep it (reused if it has events/)")
    parser.add_argument("--formats", default="json,terminal", help="the --format of each measured diagnose")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="ra-scale-"))
    try:
        if (root / "events").is_dir() and len(list((root / "events").iterdir())) >= args.nodes:
            print(f"reusing the event files in {root / 'events'}")
        else:
            _report_generated(args.nodes, *generate(root, args.nodes))
        for count in sorted({int(s) for s in args.steps.split(",") if int(s) <= args.nodes}):
            for fmt in args.formats.split(","):
                print(json.dumps(measure(root, count, fmt)), flush=True)
        _terminal(root, args.nodes)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0


def _report_generated(nodes: int, seconds: float, raw: int, events: int) -> None:
    print(f"generated and scanned {nodes} nodes x {PER_NODE} ranks in {seconds:.1f} s: "
              f"{raw / 1024**2:.1f} MiB of raw logs -> {events / 1024**2:.2f} MiB of event files "
              f"({events / nodes / 1024:.1f} KiB per node)", flush=True)  # fmt: skip


def _terminal(root: Path, nodes: int) -> None:
    terminal = subprocess.run(
        [sys.executable, "-m", "rankautopsy", "diagnose", str(root / "events"), "--no-color", "--width", "100"],
        capture_output=True, text=True,
    )  # fmt: skip
    lines = terminal.stdout.splitlines()
    print(f"terminal report over {nodes * PER_NODE} ranks: {len(lines)} lines; its head:")
    print("\n".join(lines[:60]))


if __name__ == "__main__":
    sys.exit(main())
