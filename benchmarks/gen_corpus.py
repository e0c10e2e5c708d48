"""Generate a benchmark corpus: the per-rank logs of a crashed 64-rank torchrun job with NCCL_DEBUG=INFO.

    python benchmarks/gen_corpus.py /tmp/ra-corpus/1g --size 1G [--files 64] [--seed 7]

Every file is one rank's log as torchrun's `--tee` writes it (`[default<local>]:` prefixes), seeded and
reproducible:

- NCCL init chatter (`NCCL INFO Channel ...`, `Init COMPLETE`), then per training step one
  Python-logging step line (`... INFO [train.py:212] step 1234 loss 2.3141 ...`) and NCCL_DEBUG=INFO
  noise: per-collective `NCCL INFO AllReduce: opCount ...` lines (60 % of the lines in one file of
  eight, 25 % elsewhere), DeepSpeed-style timers, UserWarnings, non-ASCII text (`█`, `✓`);
- `\\r`-joined tqdm progress bars in two files, invalid UTF-8 bytes in two files, CRLF line ends in one;
- benign lines that look alarming (fp16 "Gradient overflow", a rendezvous "Connection refused" retry);
- the failure: rank 37 raises `ValueError: bad sample` at the last step (a `[rank37]:`-prefixed
  traceback); 10 minutes later every other rank's NCCL watchdog times out, says it is taking the process
  down, throws `c10::DistBackendError`, and faulthandler dumps its threads (`Fatal Python error: Aborted`).

The expected verdict is rank 37, python_exception. Sizes: `--size 100M`, `1G`, `2G`, ... (bytes, binary
prefixes); all ranks log the same number of steps, chosen so that the files add up to about `size`.
"""

from __future__ import annotations

import argparse
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

CULPRIT = 37
_START = datetime(2026, 11, 29, 7, 0, 0, tzinfo=UTC)
_STEP = timedelta(milliseconds=850)
_UNITS = {"K": 1024, "M": 1024**2, "G": 1024**3}


def parse_size(text: str) -> int:
    text = text.strip().upper().removesuffix("B").removesuffix("I")
    if text and text[-1] in _UNITS:
        return int(float(text[:-1]) * _UNITS[text[-1]])
    return int(text)


def stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S,") + f"{at.microsecond // 1000:03d}"


# Line templates (str.format fields); kept here so that the generator below reads as a story.
_STARTING = "{stamp} INFO [train.py:88] starting: rank {rank} of {ranks}, pid {pid}"
_CHANNEL = "Channel {ch:02d}/0 : {rank}[{local}] -> {peer}[{peer_local}] [send] via NET/IB/{hca}/GDRDMA"
_GDR = "NET/IB : GPU Direct RDMA Enabled for HCA {hca} 'mlx5_{hca}'"
_INIT = (
    "comm 0x{comm:x} rank {rank} nranks {ranks} cudaDev {local} nvmlDev {local} busId {bus:x}000"
    " commId 0x9a3f1c2b7d6e5f40 - Init COMPLETE"
)
_RETRY = "{stamp} WARNING [rendezvous.py:51] Connection refused, retrying in 1 s (attempt 1/30)"
_STEP_LINE = "{stamp} INFO [train.py:212] step {step} loss {loss:.4f} lr 3.0e-04 tokens/s {tps} \u2713"
_COLL = (
    "AllReduce: opCount {op:x} sendbuff 0x7f{send:09x} recvbuff 0x7f{recv:09x} count {count} datatype 7 op 0"
    " root 0 comm 0x55d0c0de{rank:04x} [nranks={ranks}] stream 0x5616{stream:08x}"
)
_TIMER = (
    "[{stamp}] [INFO] [timer.py:215:stop] epoch=0/micro_step={step}/global_step={step},"
    " RunningAvgSamplesPerSec={a:.2f}, CurrSamplesPerSec={b:.2f}, MemAllocated=21.3GB, MaxMemAllocated=38.9GB"
)
_WARNING = (
    "/opt/venv/lib/python3.11/site-packages/torch/utils/checkpoint.py:91: UserWarning: None of the inputs"
    " have requires_grad=True. Gradients will be None"
)
_OVERFLOW = (
    "{stamp} INFO [loss_scaler.py:183] [deepspeed] OVERFLOW! Rank {rank} Skipping step."
    " Attempted loss scale: 65536, reducing to 32768 (Gradient overflow)"
)
_SHARD = "{stamp} INFO [data.py:77] shard {shard} \u2588\u2588\u2588\u2588\u2588\u2588\u258c 93% prefetched"
_BAR = "Evaluating: {p:3d}%|{bar:<10}| {p}/100 [00:0{s}<00:10, 9.8it/s]"
_GARBAGE = "{stamp} WARNING [io.py:40] corrupt record \udcff\udcfe\udc80 skipped"
_WORK = "WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=16777216, NumelOut=16777216, Timeout(ms)=600000)"
_WATCHDOG = "Watchdog caught collective operation timeout: {work} ran for 600034 milliseconds before timing out."
_PG = "[PG ID 0 PG GUID 0(default_pg) Rank {rank}]"
_DEATH = [
    "[rank{rank}]:[{glog} ProcessGroupNCCL.cpp:632] [Rank {rank}] " + _WATCHDOG,
    "[rank{rank}]:[{glog} ProcessGroupNCCL.cpp:2168] " + _PG + " Timeout at NCCL work: {seq},"
    " last enqueued NCCL work: {seq}, last completed NCCL work: {done}.",
    "[rank{rank}]:[{glog} ProcessGroupNCCL.cpp:670] [Rank {rank}] To avoid data inconsistency,"
    " we are taking the entire process down.",
    "terminate called after throwing an instance of 'c10::DistBackendError'",
    "  what():  " + _PG + " Process group watchdog thread terminated with exception: [Rank {rank}] " + _WATCHDOG,
    "Fatal Python error: Aborted",
    "",
    "Thread 0x00007f{pid:08x} (most recent call first):",
    '  File "/opt/venv/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 2501 in all_reduce',
    '  File "/job/train.py", line 230 in train',
    '  File "/job/train.py", line 301 in <module>',
    "",
]
_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/job/train.py", line 301, in <module>',
    "    main()",
    '  File "/job/train.py", line 230, in train',
    "    batch = next(loader)",
    '  File "/job/data.py", line 144, in __getitem__',
    "    raise ValueError(f'bad sample {{idx}}')",
    "ValueError: bad sample {sample}",
]


class RankLog:
    """One rank's file, written in blocks of lines."""

    def __init__(self, rank: int, ranks: int, seed: int) -> None:
        self.rank, self.ranks = rank, ranks
        self.local = rank % 8
        self.host = f"node{rank // 8:02d}"
        self.pid = 41000 + rank
        self.rng = random.Random(seed * 1000 + rank)
        self.coll_share = 0.6 if rank % 8 == 3 else 0.25
        self.tqdm = rank in (5, 50)
        self.garbage = rank in (11, 42)
        self.crlf = rank == 20
        self.prefix = f"[default{self.local}]:"

    def line(self, text: str) -> str:
        return f"{self.prefix}{text}\n"

    def nccl(self, text: str) -> str:
        return self.line(f"{self.host}:{self.pid}:{self.pid + 71} [{self.local}] NCCL INFO {text}")

    def header(self) -> str:
        ids = {"rank": self.rank, "ranks": self.ranks, "local": self.local, "pid": self.pid, "stamp": stamp(_START)}
        out = [self.line(_STARTING.format(**ids))]
        for ch in range(32):
            peer = (self.rank + 1) % self.ranks
            out.append(self.nccl(_CHANNEL.format(ch=ch, peer=peer, peer_local=peer % 8, hca=ch % 4, **ids)))
            out.append(self.nccl(_GDR.format(hca=ch % 4)))
        out.append(self.nccl(_INIT.format(comm=0x55D0C0DE0000 + self.rank, bus=self.local + 0x18, **ids)))
        out.append(self.line(_RETRY.format(**ids)))
        return "".join(out)

    def step_block(self, step: int) -> str:
        rng = self.rng
        at = stamp(_START + step * _STEP)
        loss = 2.5 - step * 1e-6 + rng.random() / 10
        out = [self.line(_STEP_LINE.format(stamp=at, step=step, loss=loss, tps=rng.randint(180000, 220000)))]
        for _ in range(1 + int(rng.random() * 8 * self.coll_share / (1 - self.coll_share))):
            coll = _COLL.format(
                op=step * 4 + rng.randint(0, 3),
                send=rng.getrandbits(36),
                recv=rng.getrandbits(36),
                count=rng.choice((1, 1024, 4194304, 16777216)),
                rank=self.rank,
                ranks=self.ranks,
                stream=rng.getrandbits(32),
            )
            out.append(self.nccl(coll))
        out += self.extras(step, at)
        return "".join(out)

    def extras(self, step: int, at: str) -> list[str]:
        rng = self.rng
        roll = rng.random()
        out = []
        if roll < 0.05:
            out.append(self.line(_TIMER.format(stamp=at, step=step, a=rng.uniform(150, 190), b=rng.uniform(150, 190))))
        elif roll < 0.07:
            out.append(self.line(_WARNING))
        elif roll < 0.08:
            out.append(self.line(_OVERFLOW.format(stamp=at, rank=self.rank)))
        elif roll < 0.10:
            out.append(self.line(_SHARD.format(stamp=at, shard=rng.randint(0, 4095))))
        if self.tqdm and step % 50 == 0:
            bars = (_BAR.format(p=p, bar="\u2588" * (p // 10), s=p % 10) for p in range(0, 101, 4))
            out.append(self.line("\r".join(bars)))
        if self.garbage and step % 997 == 0:
            out.append(self.line(_GARBAGE.format(stamp=at)))
        return out

    def ending(self, step: int) -> str:
        at = _START + step * _STEP
        if self.rank == CULPRIT:
            return self.traceback(step)
        later = at + timedelta(minutes=10)
        glog = f"E{later:%m%d %H:%M:%S}.{later.microsecond:06d}000"
        seq = step * 4 + 1
        fields = {"rank": self.rank, "glog": glog, "seq": seq, "done": seq - 1, "pid": self.pid}
        work = _WORK.format(seq=seq)
        return "".join(self.line(text.format(work=work, **fields)) for text in _DEATH)

    def traceback(self, step: int) -> str:
        at = stamp(_START + step * _STEP)
        lines = [self.line(f"{at} INFO [train.py:212] loading batch {step} from shard 1877")]
        for text in _TRACEBACK:
            lines.append(f"{self.prefix}[rank{self.rank}]: {text.format(sample=step * 64 + self.rank)}\n")
        return "".join(lines)


def write_rank(path: Path, log: RankLog, steps: int) -> None:
    """Every rank reaches the same step: the others then wait in its collective."""
    with path.open("w", encoding="utf-8", errors="surrogateescape", newline="\r\n" if log.crlf else "\n") as out:
        out.write(log.header())
        for start in range(0, steps, 500):
            out.write("".join(log.step_block(s) for s in range(start, min(steps, start + 500))))
        out.write(log.ending(steps))


def steps_for(size: int, files: int, seed: int) -> int:
    """How many steps make `size` bytes, from a sample of every rank's step blocks."""
    sample, per_step = 200, 0
    for rank in range(files):
        log = RankLog(rank, files, seed + 1)
        per_step += len("".join(log.step_block(s) for s in range(sample)).encode("utf-8", "surrogateescape"))
    return max(1, size * sample // per_step)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="directory to write rank_<N>.log files into (created)")
    parser.add_argument("--size", default="100M", help="total bytes of all files (e.g. 100M, 1G, 2G)")
    parser.add_argument("--files", type=int, default=64)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    steps = steps_for(parse_size(args.size), args.files, args.seed)
    for rank in range(args.files):
        write_rank(args.out / f"rank_{rank}.log", RankLog(rank, args.files, args.seed), steps)
    print(
        f"wrote {args.files} files, {sum(p.stat().st_size for p in args.out.glob('rank_*.log')):,} bytes to {args.out}"
    )


if __name__ == "__main__":
    main()
