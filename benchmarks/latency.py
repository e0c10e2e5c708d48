"""Latency of `rankautopsy watch`: from a rank's death to the printed verdict, on real torchrun gloo jobs.

    nice -n 10 python benchmarks/latency.py [--runs 1] [--ways exception,sigkill,sigkill-dmesg,sigsegv]
                                            [--timeout 300] [--settle 2] [--out FILE]

For each way: `rankautopsy watch` is started on an empty directory first, then a 3-rank CPU gloo job
(rankautopsy.drill.job under torchrun, process-group timeout --timeout seconds) in which rank 1 dies
at step 20. The injector writes its own wall-clock time just before the death; the benchmark stamps the
moment watch's JSON verdict arrives on its stdout. `sigkill-dmesg` also appends the OOM-killer's line
for that pid to a kernel log that watch follows (written by the injector, standing in for the kernel).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

WAYS = {"exception": ("exception", "python_exception"), "sigkill": ("sigkill", "killed"),
        "sigkill-dmesg": ("sigkill", "host_oom"), "sigsegv": ("sigsegv", "segfault")}  # fmt: skip


def _watch(logs: Path, dmesg: Path | None, settle: float) -> tuple[subprocess.Popen[bytes], dict[str, float]]:
    args = [sys.executable, "-m", "rankautopsy", "watch", str(logs), "--format", "json", "--settle", str(settle),
            "--interval", "0.2", "--quiet"] + (["--dmesg", str(dmesg)] if dmesg else [])  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    seen: dict[str, float] = {}

    def read() -> None:
        assert proc.stdout is not None
        first = proc.stdout.read(1)
        seen["verdict"] = time.time()
        seen["text"] = (first + proc.stdout.read()).decode()  # type: ignore[assignment]

    threading.Thread(target=read, daemon=True).start()
    return proc, seen


def run_once(way: str, timeout: float, settle: float) -> dict[str, object]:
    how, expected = WAYS[way]
    where = Path(tempfile.mkdtemp(prefix=f"rankautopsy-latency-{way}-"))
    logs, injected = where / "logs", where / "injected.json"
    dmesg = where / "dmesg.txt" if way == "sigkill-dmesg" else None
    if dmesg:
        dmesg.write_text("")
    watch, seen = _watch(logs, dmesg, settle)
    time.sleep(3)  # watch is up and following an empty place before the job starts
    (logs / "torchrun").mkdir(parents=True)
    job = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=3",
           "--log-dir", str(logs / "torchrun"), "--redirects", "3", "-m", "rankautopsy.drill.job",
           "--how", how, "--rank", "1", "--step", "20", "--timeout", str(timeout),
           "--runtime-dir", str(logs / "runtime"), "--injected", str(injected)] + (
        ["--kernel-log", str(dmesg)] if dmesg else [])  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    with (logs / "console.log").open("wb") as out:
        proc = subprocess.Popen(job, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.time() + timeout + 120
        job_end = None
        while ("verdict" not in seen or job_end is None) and time.time() < deadline:
            if job_end is None and proc.poll() is not None:
                job_end = time.time()
            time.sleep(0.02)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    watch.wait(timeout=60) if "verdict" in seen else watch.kill()
    died = json.loads(injected.read_text())["time"] if injected.exists() else None
    verdict = json.loads(str(seen["text"]))["verdict"] if "text" in seen and str(seen["text"]).strip() else {}
    first = verdict.get("first_death") or {}
    return {
        "way": way, "expected": expected, "named_rank": first.get("rank"), "named_cause": first.get("cause"),
        "right": first.get("rank") == 1 and first.get("cause") == expected,
        "latency_s": round(seen["verdict"] - died, 2) if died and "verdict" in seen else None,
        "job_ended_after_s": round(job_end - died, 2) if died and job_end else None, "dir": str(where),
    }  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--ways", default=",".join(WAYS))
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--settle", type=float, default=2.0)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    rows = [run_once(way, args.timeout, args.settle) for _ in range(args.runs) for way in args.ways.split(",")]
    print("| way | named | right | death → verdict (s) | death → job end (s) |\n|---|---|---|---:|---:|")
    for r in rows:
        print(f"| {r['way']} | rank {r['named_rank']} {r['named_cause']} | {r['right']} | {r['latency_s']} "
              f"| {r['job_ended_after_s']} |")  # fmt: skip
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
