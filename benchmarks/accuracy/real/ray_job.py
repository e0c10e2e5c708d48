"""A tiny CPU/gloo data-parallel job run under Ray Train (ray.train.torch.TorchTrainer) for the accuracy corpus.

The driver (`python ray_job.py ...`) starts a local Ray instance (`ray.init(num_cpus=..., _temp_dir=...)`)
and runs `TorchTrainer(train_loop, scaling_config=ScalingConfig(num_workers=N, use_gpu=False,
resources_per_worker={"CPU": 1}), torch_config=TorchConfig(backend="gloo", timeout_s=...))`. Ray Train
sets up the gloo process group in each RayTrainWorker actor; the loop is the same spirit as job.py: a
small MLP on synthetic 16x16 "images" (another model than job.py's conv net), DDP via
`ray.train.torch.prepare_model`, an explicit loss `all_reduce` per step, `ray.train.report` per step.

Log shapes (--log-style):
  print    bare print() lines (Ray prefixes them with "(RayTrainWorker pid=N)" on the driver)
  logging  Python logging with asctime and the world rank in the logger name ("train.rank1")

Faults (--fault KIND:RANK:STEP, repeatable; RANK is the Ray Train world rank). Before firing, the
injector appends one JSON line {"kind", "rank", "pid", "step", "time"} to --side DIR/inject.jsonl,
outside the logs. Kinds:
  raise     RuntimeError raised from the loop body (a "corrupt batch")
  segv      ctypes.string_at(0)
  exit      os._exit(3)
  straggle  the rank sleeps --straggle-s seconds before its step (longer than the PG timeout)
  hog       the rank allocates and touches --hog-mb MiB, 128 MiB every 0.1 s, then holds it for 60 s (for
            Ray's own memory monitor, run with a RAY_memory_usage_threshold the hog crosses)
  wait      only marks the step in the side record: the generator signals the rank's pid from outside
"""

from __future__ import annotations

import argparse
import ctypes
import json
import logging
import os
import socket
import sys
import time


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=3)
    p.add_argument("--num-cpus", type=int, default=4)
    p.add_argument("--log-style", choices=("print", "logging"), default="print")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--step-time", type=float, default=0.3)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--straggle-s", type=float, default=60.0)
    p.add_argument("--hog-mb", type=int, default=6144)
    p.add_argument("--fault", action="append", default=[])
    p.add_argument("--side", default=os.environ.get("JOB_SIDE", ""))
    p.add_argument("--temp-dir", default="", help="ray.init(_temp_dir=...)")
    p.add_argument("--storage", default="", help="RunConfig(storage_path=...)")
    p.add_argument("--name", default="tinymlp-gloo")
    p.add_argument("--seed", type=int, default=1234)
    return p.parse_args(argv)


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


def train_loop(config: dict) -> None:
    """Runs in each RayTrainWorker actor."""
    import ray.train
    import ray.train.torch
    import torch
    import torch.distributed as dist
    import torch.nn as nn
    import torch.nn.functional as F

    ctx = ray.train.get_context()
    rank, world = ctx.get_world_rank(), ctx.get_world_size()
    style, side = config["log_style"], config["side"]
    if style == "logging":
        lg = logging.getLogger(f"train.rank{rank}")
        if not lg.handlers:
            h = logging.StreamHandler(sys.stdout)
            h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
            lg.addHandler(h)
        lg.setLevel(logging.INFO)
        lg.propagate = False
        say = lg.info
    else:

        def say(msg: str) -> None:
            print(msg, flush=True)

    side_write(
        side, "ranks.jsonl", {"rank": rank, "pid": os.getpid(), "host": socket.gethostname(), "time": time.time()}
    )
    mine = []
    for spec in config["faults"]:
        kind, r, step = spec.split(":")[:3]
        if int(r) == rank:
            mine.append((kind, int(step)))
    torch.manual_seed(config["seed"])
    torch.set_num_threads(1)
    say(f"worker rank {rank}/{world} pid {os.getpid()} host {socket.gethostname()} backend {dist.get_backend()}")

    model = nn.Sequential(nn.Flatten(), nn.Linear(256, 32), nn.ReLU(), nn.Linear(32, 2))
    model = ray.train.torch.prepare_model(model)  # DDP
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(config["seed"] + rank)
    steps, batch = config["steps"], config["batch"]
    t0 = time.time()
    for step in range(1, steps + 1):
        for kind, at in mine:
            if at != step:
                continue
            record_injection(side, kind, rank, step)
            if kind == "raise":
                raise RuntimeError(f"corrupt batch at step {step}: expected 256 features, got 0 (shard-{rank:03d})")
            if kind == "segv":
                ctypes.string_at(0)
            elif kind == "exit":
                os._exit(3)
            elif kind == "straggle":
                time.sleep(config["straggle_s"])
            elif kind == "hog":
                held = []
                for _ in range(config["hog_mb"] // 128):
                    held.append(bytearray(b"\x01" * (128 << 20)))
                    time.sleep(0.1)
                time.sleep(60)
        x = torch.randn(batch, 1, 16, 16, generator=g)
        y = (x.mean(dim=(1, 2, 3)) > 0).long()
        time.sleep(config["step_time"])
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        t = loss.detach().clone()
        dist.all_reduce(t)
        avg = t.item() / world
        lr = 0.05 * (1 - step / steps)
        say(f"step {step}/{steps} loss {avg:.4f} lr {lr:.4f}")
        ray.train.report({"step": step, "loss": avg})
    say(f"training done: {steps} steps in {time.time() - t0:.1f}s")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    import ray
    import ray.train
    from ray.train.torch import TorchConfig, TorchTrainer

    init_kw: dict = {"num_cpus": args.num_cpus}
    if args.temp_dir:
        init_kw["_temp_dir"] = args.temp_dir
    ray.init(**init_kw)
    config = {
        "log_style": args.log_style,
        "side": args.side,
        "faults": args.fault,
        "steps": args.steps,
        "step_time": args.step_time,
        "batch": args.batch,
        "straggle_s": args.straggle_s,
        "hog_mb": args.hog_mb,
        "seed": args.seed,
    }
    run_kw: dict = {"name": args.name, "failure_config": ray.train.FailureConfig(max_failures=0)}
    if args.storage:
        run_kw["storage_path"] = args.storage
    trainer = TorchTrainer(
        train_loop,
        train_loop_config=config,
        scaling_config=ray.train.ScalingConfig(
            num_workers=args.workers, use_gpu=False, resources_per_worker={"CPU": 1}
        ),
        torch_config=TorchConfig(backend="gloo", timeout_s=args.pg_timeout),
        run_config=ray.train.RunConfig(**run_kw),
    )
    result = trainer.fit()
    print(f"Training finished: {result.metrics}", flush=True)
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
