"""A tiny CPU/gloo data-parallel job that the accuracy corpus runs under real launchers.

It is deliberately not fixtures/train.py: another model (a small conv net on synthetic
"images"), another loop (DDP backward plus an explicit loss all_reduce and a periodic
barrier-free "eval" all_gather), other messages, and five logging shapes chosen per run.

Where the rank comes from (--rank-from):
  env     RANK / WORLD_SIZE (torchrun, accelerate launch, deepspeed)
  mpi     OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE (mpirun), PMI_RANK / PMI_SIZE (mpich)
  slurm   SLURM_PROCID / SLURM_NTASKS (srun)
  spawn   torch.multiprocessing.spawn (use --spawn N: this script is the parent)

Log shapes (--log-style):
  print    bare print() lines, no timestamps
  logging  Python logging with asctime
  hf       HF-Trainer-like: "[INFO|job.py:123] 2026-11-30 10:00:00,123 >> ..." and {'loss': ...} dicts
  loguru   loguru-like: "2026-11-30 10:00:00.123 | INFO     | __main__:train:42 - ..."
  rank0    logging, but only rank 0 reports progress (the others log only at start)

Faults (--fault KIND:RANK:STEP[:DELAY_S], repeatable). Before firing, the injector appends one
JSON line {"kind", "rank", "pid", "step", "time"} to --side DIR/inject.jsonl, a record that lives
outside the logs and is the ground truth of the corpus. Kinds:
  raise        ValueError from the dataset on a bad sample (main process)
  worker-raise ValueError from the dataset inside a DataLoader worker (needs --workers > 0)
  worker-kill  the DataLoader worker SIGKILLs itself (needs --workers > 0)
  worker-segv  the DataLoader worker segfaults (needs --workers > 0)
  segv         ctypes.string_at(0) (with --faulthandler the dump goes to stderr)
  sigkill      os.kill(getpid(), SIGKILL)
  abort        os.abort()
  exit         sys.exit(3) (--exit-code)
  preinit      FileNotFoundError before init_process_group (STEP ignored)
  leave        the rank leaves the loop and returns from main (exits 0)
  straggle     the rank sleeps --straggle-s seconds before its step (longer than the PG timeout)
  mismatch     the rank calls broadcast where the others all_reduce
  nan          FloatingPointError raised in the loop body (after DELAY_S), not while loading data
  wait         only marks the step in the side record: the generator signals the rank from outside
  memcg-oom    the rank moves itself into a memory cgroup of its own, capped MEMCG_HEADROOM above what
               is charged to it there, and allocates until the kernel's OOM-killer kills it (a real
               kill and kernel log; needs root and cgroup v1 or v2 memory control)
  worker-memcg-oom  the same, inside a DataLoader worker (needs --workers > 0)
  hoard        the rank allocates until something kills it (under a SLURM job's --mem with task/cgroup:
               the kernel's OOM-killer)
  worker-hoard the same, inside a DataLoader worker (needs --workers > 0)
"""

from __future__ import annotations

import argparse
import ctypes
import faulthandler
import json
import logging
import os
import signal
import socket
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

log = logging.getLogger("__main__")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--rank-from", choices=("env", "mpi", "slurm", "spawn"), default="env")
    p.add_argument("--spawn", type=int, default=0, help="world size for torch.multiprocessing.spawn")
    p.add_argument("--log-style", choices=("print", "logging", "hf", "loguru", "rank0"), default="print")
    p.add_argument("--rank-file", default="", help="also log to this path ({rank} substituted)")
    p.add_argument("--redirect", default="", help="dup2 stdout+stderr into this path ({rank} substituted)")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--step-time", type=float, default=0.3)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--pg-timeout", type=float, default=30.0)
    p.add_argument("--fault", action="append", default=[])
    p.add_argument("--faulthandler", action="store_true")
    p.add_argument("--record", action="store_true", help="wrap main in torch.distributed.elastic's @record")
    p.add_argument("--exit-code", type=int, default=3)
    p.add_argument("--fault-once", action="store_true", help="fire faults only in torchrun's first attempt")
    p.add_argument("--straggle-s", type=float, default=60.0)
    p.add_argument("--side", default=os.environ.get("JOB_SIDE", ""))
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--local_rank", type=int, default=-1, help="passed by deepspeed's launch.py (LOCAL_RANK is in env)")
    p.add_argument(
        "--framework",
        choices=("plain", "accelerate"),
        default="plain",
        help="accelerate: let accelerate.Accelerator set up the process group and wrap the model",
    )
    return p.parse_args(argv)


# --------------------------------------------------------------------------- faults


class Fault:
    def __init__(self, spec: str) -> None:
        parts = spec.split(":")
        self.kind = parts[0]
        self.rank = int(parts[1])
        self.step = int(parts[2]) if len(parts) > 2 else 0
        self.delay = float(parts[3]) if len(parts) > 3 else 0.0


def side_write(side: str, name: str, obj: dict) -> None:
    if not side:
        return
    os.makedirs(side, exist_ok=True)
    with open(os.path.join(side, name), "a", encoding="utf-8") as f:
        f.write(json.dumps(obj) + "\n")
        f.flush()
        os.fsync(f.fileno())


def record_injection(side: str, kind: str, rank: int, step: int) -> None:
    side_write(
        side, "inject.jsonl", {"kind": kind, "rank": rank, "pid": os.getpid(), "step": step, "time": time.time()}
    )


MEMCG_HEADROOM = 96 * 2**20


def memcg_oom(side: str, kind: str, rank: int, step: int) -> None:
    """Move into a memory cgroup of its own, capped MEMCG_HEADROOM above what is charged to it once there
    (the pages the process already had stay charged to the cgroup it left), then hoard memory: the
    kernel's OOM-killer SIGKILLs this process and logs it, as in a SLURM task's or a container's cgroup."""
    v1 = "/sys/fs/cgroup/memory"
    root, limit_file, usage_file = (
        (v1, "memory.limit_in_bytes", "memory.usage_in_bytes")
        if os.path.isdir(v1)
        else ("/sys/fs/cgroup", "memory.max", "memory.current")
    )
    group = os.path.join(root, f"ra-oom-{os.getpid()}")
    os.makedirs(group, exist_ok=True)
    with open(os.path.join(group, "cgroup.procs"), "w", encoding="ascii") as fh:
        fh.write(str(os.getpid()))
    with open(os.path.join(group, usage_file), encoding="ascii") as fh:
        usage = int(fh.read())
    with open(os.path.join(group, limit_file), "w", encoding="ascii") as fh:
        fh.write(str(usage + MEMCG_HEADROOM))
    hoard(side, kind, rank, step)


def hoard(side: str, kind: str, rank: int, step: int) -> None:
    record_injection(side, kind, rank, step)
    pieces = []
    while True:
        pieces.append(torch.ones(4 * 2**20))  # 16 MiB a piece, touched


# --------------------------------------------------------------------------- data and model


class SyntheticImages(Dataset):
    """16x16 single-channel noise with a label that depends on the mean; a poisoned index raises."""

    def __init__(self, n: int, seed: int, bad: dict[int, tuple[str, int]], side: str, rank: int) -> None:
        self.n, self.seed, self.bad, self.side, self.rank = n, seed, bad, side, rank

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, idx: int):
        bad = self.bad.get(idx)
        if bad is not None:
            kind, step = bad
            if kind not in ("worker-memcg-oom", "worker-hoard"):
                record_injection(self.side, kind, self.rank, step)
            if kind == "worker-kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if kind == "worker-segv":
                ctypes.string_at(0)
            if kind == "worker-memcg-oom":
                memcg_oom(self.side, kind, self.rank, step)
            if kind == "worker-hoard":
                hoard(self.side, kind, self.rank, step)
            raise ValueError(f"corrupt sample {idx}: decoded 0 bytes from shard-{idx // 64:05d}.tar")
        g = torch.Generator().manual_seed(self.seed + idx)
        x = torch.randn(1, 16, 16, generator=g)
        y = int(x.mean() > 0)
        return x, y


class TinyNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc = nn.Linear(4 * 8 * 8, 2)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc(x.flatten(1))


# --------------------------------------------------------------------------- logging shapes


class Out:
    """Writes one message in the chosen shape; `progress` messages are dropped off rank 0 in rank0 style."""

    def __init__(self, style: str, rank: int, world: int, rank_file: str) -> None:
        self.style, self.rank, self.world = style, rank, world
        self.file = None
        if style == "print":
            if rank_file:
                self.file = open(rank_file, "a", encoding="utf-8", buffering=1)  # noqa: SIM115  (open for the whole run)
            return
        fmt = {
            "logging": "%(asctime)s %(levelname)s %(name)s: %(message)s",
            "rank0": "%(asctime)s - %(levelname)s - %(message)s",
            "hf": "[%(levelname)s|%(filename)s:%(lineno)s] %(asctime)s >> %(message)s",
            "loguru": "%(asctime)s.%(msecs)03d | %(levelname)-8s | %(name)s:%(funcName)s:%(lineno)d - %(message)s",
        }[style]
        datefmt = "%Y-%m-%d %H:%M:%S" if style == "loguru" else None
        handlers: list[logging.Handler] = [logging.StreamHandler(sys.stdout)]
        if rank_file:
            handlers.append(logging.FileHandler(rank_file))
        for h in handlers:
            h.setFormatter(logging.Formatter(fmt, datefmt=datefmt))
            log.addHandler(h)
        log.setLevel(logging.INFO)
        log.propagate = False

    def info(self, msg: str, progress: bool = False) -> None:
        if progress and self.style in ("rank0", "hf") and self.rank != 0:
            return
        if self.style == "print":
            print(msg, flush=True)
            if self.file:
                print(msg, file=self.file, flush=True)
        else:
            log.info(msg, stacklevel=2)

    def warning(self, msg: str) -> None:
        if self.style == "print":
            print("WARNING: " + msg, flush=True)
            if self.file:
                print("WARNING: " + msg, file=self.file, flush=True)
        else:
            log.warning(msg, stacklevel=2)


# --------------------------------------------------------------------------- training


def ranks_from(args: argparse.Namespace, spawn_rank: int | None) -> tuple[int, int, int]:
    if args.rank_from == "spawn":
        assert spawn_rank is not None
        return spawn_rank, args.spawn, spawn_rank
    if args.rank_from == "mpi":
        if "OMPI_COMM_WORLD_RANK" in os.environ:
            return (
                int(os.environ["OMPI_COMM_WORLD_RANK"]),
                int(os.environ["OMPI_COMM_WORLD_SIZE"]),
                int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0")),
            )
        return int(os.environ["PMI_RANK"]), int(os.environ["PMI_SIZE"]), int(os.environ.get("MPI_LOCALRANKID", "0"))
    if args.rank_from == "slurm":
        return (
            int(os.environ["SLURM_PROCID"]),
            int(os.environ["SLURM_NTASKS"]),
            int(os.environ.get("SLURM_LOCALID", "0")),
        )
    return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", "0"))


def train(args: argparse.Namespace, spawn_rank: int | None = None) -> int:
    rank, world, local_rank = ranks_from(args, spawn_rank)
    if args.redirect:
        path = args.redirect.format(rank=rank)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        sys.stdout = os.fdopen(1, "w", buffering=1, closefd=False)
        sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    if args.faulthandler:
        faulthandler.enable()
    out = Out(args.log_style, rank, world, args.rank_file.format(rank=rank) if args.rank_file else "")
    faults = [Fault(s) for s in args.fault]
    mine = [f for f in faults if f.rank == rank]
    if args.fault_once and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") != "0":
        mine = []
    side_write(
        args.side, "ranks.jsonl", {"rank": rank, "pid": os.getpid(), "host": socket.gethostname(), "time": time.time()}
    )
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)

    if args.log_style == "hf":
        out.info(f"Process rank: {rank}, device: cpu, n_gpu: 0, distributed training: True, 16-bits training: False")
    elif args.log_style == "print":
        print(f"worker {rank}/{world} up (pid {os.getpid()}, local rank {local_rank})", flush=True)
    else:
        out.info(f"rank {rank}/{world} pid {os.getpid()} local_rank {local_rank} host {socket.gethostname()}")

    for f in mine:
        if f.kind == "preinit":
            record_injection(args.side, f.kind, rank, 0)
            with open(f"/data/shards/index-{rank:02d}.json", encoding="utf-8") as fh:  # does not exist
                json.load(fh)

    pg_kwargs: dict = {"backend": "gloo", "timeout": timedelta(seconds=args.pg_timeout)}
    if args.rank_from in ("mpi", "slurm", "spawn"):
        pg_kwargs.update(init_method="env://", rank=rank, world_size=world)
    acc = None
    if args.framework == "accelerate":
        from accelerate import Accelerator
        from accelerate.utils import InitProcessGroupKwargs

        acc = Accelerator(
            cpu=True,
            kwargs_handlers=[InitProcessGroupKwargs(backend="gloo", timeout=timedelta(seconds=args.pg_timeout))],
        )
    else:
        dist.init_process_group(**pg_kwargs)
    out.info(f"process group ready: backend=gloo world_size={world} timeout={args.pg_timeout:g}s")

    # which sample indices are poisoned, for the data faults
    n = args.steps * args.batch * world + 64
    sampler = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=False)
    my_indices = list(iter(sampler))
    bad: dict[int, tuple[str, int]] = {}
    for f in mine:
        if f.kind in ("raise", "worker-raise", "worker-kill", "worker-segv", "worker-memcg-oom", "worker-hoard"):
            idx = my_indices[(f.step - 1) * args.batch + args.batch // 2]
            bad[idx] = (f.kind, f.step)
    ds = SyntheticImages(n, args.seed, bad, args.side, rank)
    loader = DataLoader(
        ds,
        batch_size=args.batch,
        sampler=DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False),
        num_workers=args.workers,
    )
    if acc is not None:
        model = TinyNet()
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        model, opt = acc.prepare(model, opt)
    else:
        model = DDP(TinyNet())
        opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if args.log_style == "hf":
        out.info("***** Running training *****", progress=True)
        out.info(f"  Num examples = {n}", progress=True)
        out.info(f"  Instantaneous batch size per device = {args.batch}", progress=True)
        out.info(f"  Total optimization steps = {args.steps}", progress=True)

    step = 0
    t0 = time.time()
    for x, y in loader:
        step += 1
        if step > args.steps:
            break
        for f in mine:
            if f.step != step:
                continue
            if f.delay:
                time.sleep(f.delay)
            if f.kind in ("segv", "sigkill", "abort", "exit", "leave", "straggle", "wait", "nan"):
                record_injection(args.side, f.kind, rank, step)
            if f.kind == "segv":
                ctypes.string_at(0)
            elif f.kind == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif f.kind == "abort":
                os.abort()
            elif f.kind == "exit":
                sys.exit(args.exit_code)
            elif f.kind == "leave":
                return 0
            elif f.kind == "straggle":
                time.sleep(args.straggle_s)
            elif f.kind == "memcg-oom":
                memcg_oom(args.side, f.kind, rank, step)
            elif f.kind == "hoard":
                hoard(args.side, f.kind, rank, step)
            elif f.kind == "nan":
                raise FloatingPointError(f"loss is nan at step {step} (lr={0.1 * (1 - step / args.steps):.4f})")
        time.sleep(args.step_time)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        if acc is not None:
            acc.backward(loss)
        else:
            loss.backward()
        opt.step()
        t = loss.detach().clone()
        if any(f.kind == "mismatch" and f.step == step for f in mine):
            record_injection(args.side, "mismatch", rank, step)
            dist.broadcast(t, src=rank)
        else:
            dist.all_reduce(t)
        avg = t.item() / world
        lr = 0.1 * (1 - step / args.steps)
        if args.log_style == "hf":
            if rank == 0:
                print(
                    {"loss": round(avg, 4), "learning_rate": round(lr, 6), "epoch": round(step / args.steps, 2)},
                    flush=True,
                )
        else:
            out.info(f"step {step}/{args.steps} loss {avg:.4f} lr {lr:.4f}", progress=True)
    dist.barrier()
    dt = time.time() - t0
    if args.log_style == "hf":
        out.info(
            "\n\nTraining completed. Do not forget to share your model on huggingface.co/models =)\n\n", progress=True
        )
        if rank == 0:
            print(
                {
                    "train_runtime": round(dt, 4),
                    "train_samples_per_second": round(step * args.batch * world / dt, 3),
                    "train_loss": round(avg, 4),
                    "epoch": 1.0,
                },
                flush=True,
            )
    else:
        out.info(f"training done: {min(step, args.steps)} steps in {dt:.1f}s", progress=True)
    dist.destroy_process_group()
    return 0


def spawn_entry(local_rank: int, args: argparse.Namespace) -> None:
    rc = train(args, spawn_rank=local_rank)
    if rc:
        sys.exit(rc)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.spawn:
        import torch.multiprocessing as mp

        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29500")
        args.rank_from = "spawn"
        mp.spawn(spawn_entry, args=(args,), nprocs=args.spawn, join=True)
        return 0
    if args.record:
        from torch.distributed.elastic.multiprocessing.errors import record

        return record(train)(args)
    return train(args)


if __name__ == "__main__":
    sys.exit(main())
