"""The accuracy corpus's job as a Lightning module: DDP on CPU (gloo), Lightning launches the ranks.

    python lit_job.py --devices 3 --fault raise:1:4

Lightning's DDP strategy re-executes this script for local ranks 1..N-1 (rank 0 is the process
started by the user). Faults use job.py's spec (KIND:RANK:STEP) and write the same side record.
"""

from __future__ import annotations

import argparse
import ctypes
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
from job import Fault, SyntheticImages, TinyNet, record_injection, side_write
from lightning.pytorch.strategies import DDPStrategy
from torch.utils.data import DataLoader

log = logging.getLogger("lit_job")


class LitNet(L.LightningModule):
    def __init__(self, faults: list[Fault], side: str, style: str) -> None:
        super().__init__()
        self.net = TinyNet()
        self.faults, self.side, self.style = faults, side, style

    def on_fit_start(self) -> None:
        side_write(
            self.side,
            "ranks.jsonl",
            {"rank": self.global_rank, "pid": os.getpid(), "host": socket.gethostname(), "time": time.time()},
        )

    def training_step(self, batch, batch_idx):
        step = batch_idx + 1
        for f in self.faults:
            if f.rank != self.global_rank or f.step != step:
                continue
            record_injection(self.side, f.kind, self.global_rank, step)
            if f.kind == "raise":
                raise ValueError(f"corrupt sample in batch {batch_idx}: label tensor has shape (0,)")
            if f.kind == "segv":
                ctypes.string_at(0)
            if f.kind == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            if f.kind == "abort":
                os.abort()
            if f.kind == "straggle":
                time.sleep(60)
        time.sleep(0.3)
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        if self.style == "print":
            print(f"[rank {self.global_rank}] step {step} loss {loss.item():.4f}", flush=True)
        else:
            log.info("step %d loss %.4f", step, loss.item())
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
    a = p.parse_args()
    if a.log_style != "print":
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    side = os.environ.get("JOB_SIDE", "")
    torch.set_num_threads(1)
    ds = SyntheticImages(a.steps * 8 * a.devices + 64, 1234, {}, side, 0)
    trainer = L.Trainer(
        strategy=DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=a.pg_timeout)),
        accelerator="cpu",
        devices=a.devices,
        max_steps=a.steps,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=True,
    )
    trainer.fit(LitNet([Fault(s) for s in a.fault], side, a.log_style), DataLoader(ds, batch_size=8))
    print(f"[rank {trainer.global_rank}] fit finished after {trainer.global_step} steps", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
