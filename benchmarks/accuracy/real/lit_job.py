"""The accuracy corpus's job as a Lightning module: DDP on CPU (gloo), Lightning launches the ranks.

    python lit_job.py --devices 3 --fault raise:1:4

Lightning's DDP strategy re-executes this script for local ranks 1..N-1 (rank 0 is the process
started by the user). Faults use job.py's spec (KIND:RANK:STEP) and write the same side record:
raise, segv, sigkill, abort, exit (sys.exit(3)), straggle (--straggle-s), wait (the generator
signals the rank from outside), worker-kill (a DataLoader worker SIGKILLs itself; --workers > 0),
preinit (FileNotFoundError in main() before the rank builds its Trainer; STEP ignored); wait with
STEP 0 waits there, before the Trainer, for the generator's signal.

--log-style logging: Python logging with asctime; L.seed_everything() (Lightning's own "[rank: N]
Seed set to ..." on the re-executed ranks); each rank logs its pid once and its loss every
--log-every steps (Trainer(log_every_n_steps=...)) through Lightning's rank_prefixed_message.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import logging
import os
import signal
import socket
import sys
import time
from datetime import timedelta

import lightning as L
import torch
import torch.nn.functional as F
from job import Fault, SyntheticImages, TinyNet, memcg_oom, record_injection, side_write
from lightning.pytorch.strategies import DDPStrategy
from lightning.pytorch.utilities.rank_zero import rank_prefixed_message
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler

log = logging.getLogger("lit_job")


class LitNet(L.LightningModule):
    def __init__(self, faults: list[Fault], side: str, style: str, straggle_s: float = 60.0) -> None:
        super().__init__()
        self.net = TinyNet()
        self.faults, self.side, self.style, self.straggle_s = faults, side, style, straggle_s

    def on_fit_start(self) -> None:
        side_write(
            self.side,
            "ranks.jsonl",
            {"rank": self.global_rank, "pid": os.getpid(), "host": socket.gethostname(), "time": time.time()},
        )
        if self.style != "print":
            msg = f"pid {os.getpid()} host {socket.gethostname()} world_size {self.trainer.world_size}"
            log.info(rank_prefixed_message(msg, self.global_rank))

    def training_step(self, batch, batch_idx):
        step = batch_idx + 1
        for f in self.faults:
            if f.rank != self.global_rank or f.step != step:
                continue
            if f.kind == "memcg-oom":
                memcg_oom(self.side, f.kind, self.global_rank, step)
            record_injection(self.side, f.kind, self.global_rank, step)
            if f.kind == "raise":
                raise ValueError(f"corrupt sample in batch {batch_idx}: label tensor has shape (0,)")
            if f.kind == "segv":
                ctypes.string_at(0)
            if f.kind == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            if f.kind == "abort":
                os.abort()
            if f.kind == "exit":
                sys.exit(3)
            if f.kind == "straggle":
                time.sleep(self.straggle_s)
        time.sleep(0.3)
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        if self.style == "print":
            print(f"[rank {self.global_rank}] step {step} loss {loss.item():.4f}", flush=True)
        elif step % self.trainer.log_every_n_steps == 0:
            log.info(rank_prefixed_message(f"step {step}/{self.trainer.max_steps} loss {loss:.4f}", self.global_rank))
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--devices", type=int, default=2)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--fault", action="append", default=[])
    p.add_argument("--log-style", default="print")
    p.add_argument("--pg-timeout", type=float, default=30.0)
    p.add_argument("--straggle-s", type=float, default=60.0)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--log-every", type=int, default=2)
    a = p.parse_args()
    if a.log_style != "print":
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        L.seed_everything(1234)
    side = os.environ.get("JOB_SIDE", "")
    torch.set_num_threads(1)
    faults = [Fault(s) for s in a.fault]
    # Lightning re-executes this script with LOCAL_RANK set (one node: the global rank); rank 0 has none yet
    rank = int(os.environ.get("LOCAL_RANK", "0"))
    for f in faults:
        # before this rank's Trainer exists: rank 0 is already in fit, waiting for the process group
        if f.rank == rank and f.kind == "preinit":
            record_injection(side, f.kind, rank, 0)
            with open(f"/data/shards/index-{rank:02d}.json", encoding="utf-8") as fh:  # does not exist
                json.load(fh)
        if f.rank == rank and f.kind == "wait" and f.step == 0:  # "loading its shard" until signalled from outside
            record_injection(side, f.kind, rank, 0)
            time.sleep(30)
    n = a.steps * 8 * a.devices + 64
    bad = {}
    for f in faults:
        if f.rank == rank and f.kind == "worker-kill":
            # the DistributedSampler Lightning injects for training: shuffled, seed PL_GLOBAL_SEED or 0, epoch 0
            seed = int(os.environ.get("PL_GLOBAL_SEED", "0"))
            mine = list(DistributedSampler(range(n), num_replicas=a.devices, rank=rank, shuffle=True, seed=seed))
            bad[mine[(f.step - 1) * 8 + 4]] = (f.kind, f.step)
    ds = SyntheticImages(n, 1234, bad, side, rank)
    trainer = L.Trainer(
        strategy=DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=a.pg_timeout)),
        accelerator="cpu",
        devices=a.devices,
        max_steps=a.steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=True,
        log_every_n_steps=a.log_every,
    )
    model = LitNet([f for f in faults if f.kind != "worker-kill"], side, a.log_style, a.straggle_s)
    trainer.fit(model, DataLoader(ds, batch_size=8, num_workers=a.workers))
    print(f"[rank {trainer.global_rank}] fit finished after {trainer.global_step} steps", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
