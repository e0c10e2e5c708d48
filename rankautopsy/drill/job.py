"""One rank of the drill's job (run by torchrun): all-reduce a tensor each step, heartbeat, and at
--step on --rank die the --how way. The injector writes its own record of the moment just before.

    python -m torch.distributed.run --nproc-per-node 2 -m rankautopsy.drill.job --how exception --rank 1
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import signal
import sys
import time
from datetime import timedelta
from pathlib import Path

import rankautopsy.runtime as ra


def _args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="one rank of the rankautopsy drill")
    p.add_argument("--how", default="exception")
    p.add_argument("--rank", type=int, default=1)
    p.add_argument("--step", type=int, default=3)
    p.add_argument("--steps", type=int, default=0, help="steps in all (0: run until the injection ends it)")
    p.add_argument("--step-time", type=float, default=0.05)
    p.add_argument("--timeout", type=float, default=30.0, help="process-group timeout (s)")
    p.add_argument("--runtime-dir", default=None)
    p.add_argument("--injected", default=None, help="file for the injector's own record")
    p.add_argument("--heartbeat", type=float, default=0.5)
    p.add_argument("--kernel-log", default=None, help="sigkill: first append the OOM-killer's line for this pid here")
    return p.parse_args(argv)


def _oom_line(pid: int) -> str:
    """The kernel OOM-killer's report (mm/oom_kill.c __oom_kill_process) as `dmesg -T` prints it."""
    stamp = time.strftime("%a %b %e %H:%M:%S %Y", time.localtime())
    return (f"[{stamp}] Out of memory: Killed process {pid} (python) total-vm:9000000kB, anon-rss:8000000kB, "
            "file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:16000kB oom_score_adj:0\n")  # fmt: skip


def _inject(how: str, step: int, injected: str | None, kernel_log: str | None = None) -> None:
    if injected:
        record = {"how": how, "rank": int(os.environ.get("RANK", "-1")), "step": step, "time": time.time()}
        Path(injected).write_text(json.dumps(record) + "\n", encoding="utf-8")
    if how == "exception":
        raise ValueError(f"drill: injected exception at step {step}")
    if how == "sigkill":
        if kernel_log:  # stands in for the kernel, which writes this as it kills
            with open(kernel_log, "a", encoding="utf-8") as out:
                out.write(_oom_line(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    if how == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(60)
    if how == "sigsegv":
        ctypes.string_at(0)
    if how == "exit":
        os._exit(3)
    if how == "hang":
        while True:
            time.sleep(3600)
    raise SystemExit(f"drill: unknown way to die: {how}")


def main(argv: list[str] | None = None) -> None:
    args = _args(argv)
    ra.install(args.runtime_dir, heartbeat_interval=args.heartbeat)
    import torch
    import torch.distributed as dist

    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    rank = dist.get_rank()
    value = torch.ones(64)
    step = 0
    while args.steps <= 0 or step < args.steps:
        step += 1
        if rank == args.rank and step == args.step:
            _inject(args.how, step, args.injected, args.kernel_log)
        dist.all_reduce(value)
        value /= dist.get_world_size()
        ra.heartbeat(step)
        print(f"step {step} done", flush=True)
        time.sleep(args.step_time)
    ra.bounded_barrier(args.timeout)
    dist.destroy_process_group()
    print("training finished", flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
