"""Generate the logs that hurt a log scanner: one corpus per shape, each about `--size` bytes.

    python benchmarks/gen_hurting.py DIR --size 1G [--only nccl-info,prefixed,...]

Every corpus is 8 per-rank files of a job in which rank 5 raises `ValueError: bad sample` at the end
(the expected verdict: rank 5, python_exception); what hurts is the bulk before it:

- `nccl-info`: NCCL_DEBUG=INFO from a job that builds communicators all the time (pipeline
  stages, `new_group` per step): about a quarter of the lines are NCCL lines, many of them
  `Init COMPLETE`, `Bootstrap : Using` and `cudaDriverVersion` lines that rules read identities from;
- `prefixed`: `TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE='[${rank}]:'` (torchrun's own rank prefix on
  every line), so a byte-level prefilter for prefixes matches every line;
- `caught-tracebacks`: a data loader that logs a caught exception with its traceback every 500 lines
  (`logger.exception`), then goes on; `caught-distinct` the same, each exception's message different
  in more than its numbers (no two tracebacks are repeats: every one is an event);
- `million-hits`: one rank logs NCCL identity lines (`cudaDriverVersion`, `Init COMPLETE`: lines
  rules match) on every step, a million of them;
- `tqdm-line`: tqdm redraws one bar with `\\r` for a whole epoch (a 16 MiB line with no `\\n`), and
  the exception's `Traceback` header lands at its end.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

from gen_corpus import parse_size

CULPRIT = 5
RANKS = 8
_START = datetime(2026, 11, 30, 3, 0, 0, tzinfo=UTC)


def _stamp(at: datetime) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S,") + f"{at.microsecond // 1000:03d}"


def _step(rank: int, step: int, rng: random.Random) -> str:
    at = _START + timedelta(milliseconds=700 * step)
    return f"{_stamp(at)} INFO [train.py:212] rank {rank} step {step} loss {2.5 - step * 1e-6 + rng.random() / 10:.4f}"


def _nccl(rank: int, step: int, rng: random.Random) -> list[str]:
    host, pid, local = f"node{rank // 8:02d}", 52000 + rank, rank % 8
    tag = f"{host}:{pid}:{pid + 40} [{local}] NCCL INFO"
    comm = 0x55D0C0DE0000 + step
    if step % 3:
        return [
            f"{tag} AllReduce: opCount {step:x} sendbuff 0x7f{rng.getrandbits(36):09x} recvbuff"
            f" 0x7f{rng.getrandbits(36):09x} count 4194304 datatype 7 op 0 root 0 comm 0x{comm:x} [nranks=8]"
        ]
    return [
        f"{tag} cudaDriverVersion 12040",
        f"{tag} Bootstrap : Using eth0:10.1.{rank // 8}.{rank % 8 + 10}<0>",
        f"{tag} comm 0x{comm:x} rank {rank} nRanks 8 nNodes 1 localRanks 8 localRank {local} MNNVL 0",
        f"{tag} Channel 00/0 : {rank}[{local}] -> {(rank + 1) % 8}[{(local + 1) % 8}] via P2P/CUMEM",
        f"{tag} comm 0x{comm:x} rank {rank} nranks 8 cudaDev {local} nvmlDev {local} busId {0x18 + local:x}000"
        f" commId 0x{rng.getrandbits(60):x} - Init COMPLETE",
    ]


_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/job/train.py", line 301, in <module>',
    "    main()",
    '  File "/job/train.py", line 230, in train',
    "    batch = next(loader)",
    '  File "/job/data.py", line 144, in __getitem__',
    "    raise ValueError(f'bad sample {idx}')",
]


def _death(rank: int, step: int) -> list[str]:
    return [*_TRACEBACK, f"ValueError: bad sample {step * 8 + rank}"]


def _caught(step: int, distinct: bool = False) -> list[str]:
    at = _stamp(_START + timedelta(milliseconds=700 * step))
    # a message that names its sample in words: no repeat (one that differs only in numbers repeats one before)
    bad = "".join(chr(ord("a") + int(d)) for d in str(step)) if distinct else "3 bytes"
    return [
        f"{at} ERROR [data.py:90] could not decode sample {step}, skipping",
        "Traceback (most recent call last):",
        '  File "/job/data.py", line 84, in __getitem__',
        "    image = decode(raw)",
        '  File "/job/codec.py", line 12, in decode',
        "    raise OSError('image file is truncated')",
        f"OSError: image file is truncated ({bad} not processed)",
    ]


def _retry(step: int) -> list[str]:
    """Lines that identity rules match, on every step (a job that re-creates communicators all the time)."""
    tag = "node00:52003:52043 [3] NCCL INFO"
    return [
        f"{tag} cudaDriverVersion 12040",
        f"{tag} comm 0x{0x55D0C0DE0000 + step:x} rank 3 nranks 8 cudaDev 3 nvmlDev 3 busId 1b000"
        f" commId 0x{step:x} - Init COMPLETE",
    ]


def _lines(shape: str, rank: int, budget: int, rng: random.Random) -> Iterator[str]:
    step, written = 0, 0
    while written < budget:
        block = [_step(rank, step, rng)]
        now = _stamp(_START + timedelta(milliseconds=700 * step))
        if shape == "nccl-info":
            block += _nccl(rank, step, rng) if rng.random() < 0.45 else []
            block.append(f"{now} INFO [data.py:40] batch {step} of shard {step % 512} ready")
            block.append(f"{now} INFO [optim.py:77] grad norm {rng.random() * 4:.3f} clip 1.0")
        elif shape in ("caught-tracebacks", "caught-distinct"):
            block += [f"{now} INFO [data.py:40] batch {step} ready"] * 3
            if step % 125 == 0:
                block += _caught(step, distinct=shape == "caught-distinct")
        elif shape == "million-hits":
            block += _retry(step) if rank == 3 else [f"{now} INFO [data.py:40] batch {step} ready"]
        else:
            block += [f"{now} INFO [data.py:40] batch {step} of shard {step % 512} ready"] * 2
        text = "\n".join(block) + "\n"
        written += len(text)
        step += 1
        yield text
    yield "\n".join(_death(rank, step) if rank == CULPRIT else _collateral(rank, step)) + "\n"


def _collateral(rank: int, step: int) -> list[str]:
    return [
        *_TRACEBACK[:5],
        "RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer"
        f" [10.1.0.{10 + CULPRIT}]:{29500 + rank}",
    ]


def _tqdm_tail(rank: int) -> str:
    """An epoch of `\\r` redraws with no newline, then (on the culprit) the traceback header after it."""
    pieces, size, i = [], 0, 0
    while size < 16 * 1024 * 1024:
        piece = f"Epoch 3: {i % 100:3d}%|{'#' * (i % 100 // 10):<10}| {i}/99999 [01:02<00:10, 9.8it/s, loss=2.31]"
        pieces.append(piece)
        size += len(piece) + 1
        i += 1
    return "\r".join(pieces) + "\r"


def write(shape: str, folder: Path, size: int, seed: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(RANKS):
        rng = random.Random(seed * 100 + rank)
        prefix = f"[{rank}]:" if shape == "prefixed" else ""
        with (folder / f"rank{rank}.log").open("w", encoding="utf-8") as out:
            lines = list(_lines(shape, rank, size // RANKS, rng))
            if shape == "tqdm-line" and rank == CULPRIT:
                lines.insert(-1, _tqdm_tail(rank))
            for text in lines:
                out.write(text if not prefix else "".join(prefix + line + "\n" for line in text.splitlines()))


SHAPES: dict[str, Callable[..., None]] = {
    name: write
    for name in ("nccl-info", "prefixed", "caught-tracebacks", "caught-distinct", "million-hits", "tqdm-line")
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dir", type=Path)
    parser.add_argument("--size", default="1G")
    parser.add_argument("--only", default=",".join(SHAPES))
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    for shape in args.only.split(","):
        write(shape, args.dir / shape, parse_size(args.size), args.seed)
        print(f"{args.dir / shape}: {sum(p.stat().st_size for p in (args.dir / shape).iterdir()):,} bytes")


if __name__ == "__main__":
    main()
