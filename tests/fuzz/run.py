"""Run N fuzz cases of the mutation corpus in this process and print one summary line:

    python -m tests.fuzz.run --cases 100000 [--seed 1] [--seconds 20] [--jobs 2] [--failures fuzz-failures.jsonl]

Case i of seed s is always the same case (`--start`/`--only` replay one); the exit status is 1 when any
case crashed, hung or gave two different outputs."""

from __future__ import annotations

import argparse
import atexit
import functools
import importlib
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `fuzz.*`, as pytest imports it
harness: Any = importlib.import_module("fuzz.harness")
corpus: Any = importlib.import_module("fuzz.corpus")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.run", description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0, help="index of the first case")
    parser.add_argument("--only", type=int, default=None, help="run just this case index")
    parser.add_argument("--seconds", type=float, default=20.0, help="time bound of each run of a case")
    parser.add_argument("--wall", type=float, default=None, help="stop after this many seconds in all")
    parser.add_argument("--failures", type=Path, default=None, help="append failing cases here (JSON lines)")
    parser.add_argument("--every", type=int, default=1000, help="a progress line on stderr every N cases")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes, each running its share of cases")
    args = parser.parse_args(argv)
    os.environ.setdefault("RANKAUTOPSY_CACHE_DIR", tempfile.mkdtemp(prefix="rankautopsy-fuzz-cache-"))
    indices = [args.only] if args.only is not None else range(args.start, args.start + args.cases)
    tally = _Tally()
    began = time.monotonic()
    with multiprocessing.get_context("fork").Pool(
        max(1, args.jobs), _start_worker, (args.seconds,), maxtasksperchild=None
    ) as pool:
        for index, kind, seconds, detail, label in pool.imap_unordered(
            functools.partial(_run_one, args.seed), indices, chunksize=8
        ):
            if args.wall is not None and time.monotonic() - began > args.wall:
                pool.terminate()
                break
            tally.add(kind, seconds)
            if kind in harness.FAILURES:
                _report(args, index, label, kind, detail)
            if tally.done % args.every == 0:
                print(tally.summary(args.seed, time.monotonic() - began), file=sys.stderr, flush=True)
    print(tally.summary(args.seed, time.monotonic() - began), flush=True)
    return 1 if any(tally.counts.get(kind) for kind in harness.FAILURES) else 0


_RUNNER: Any = None


def _start_worker(seconds: float) -> None:
    global _RUNNER
    scratch = tempfile.mkdtemp(prefix="rankautopsy-fuzz-")
    atexit.register(shutil.rmtree, scratch, True)
    _RUNNER = harness.Runner(Path(scratch), seconds)
    _RUNNER.warm_up()


def _run_one(seed: int, index: int) -> tuple[int, str, float, str, str]:
    case = corpus.mutated_case(seed, index)
    result = _RUNNER.run(case)
    return index, result.kind, result.seconds, result.detail, case.label


@dataclass
class _Tally:
    counts: dict[str, int] = field(default_factory=dict)
    done: int = 0
    slowest: float = 0.0

    def add(self, kind: str, seconds: float) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1
        self.done += 1
        self.slowest = max(self.slowest, seconds)

    def summary(self, seed: int, seconds: float) -> str:
        parts = ", ".join(f"{self.counts.get(kind, 0)} {kind}" for kind in ("ok", "usage", *harness.FAILURES))
        rate = self.done / seconds if seconds else 0.0
        return (
            f"fuzz: {self.done} cases (seed {seed}) in {seconds:.0f} s, {rate:.1f} cases/s: {parts}; "
            f"slowest case {self.slowest:.1f} s"
        )


def _report(args: argparse.Namespace, index: int, label: str, kind: str, detail: str) -> None:
    line = {"seed": args.seed, "index": index, "kind": kind, "detail": detail, "label": label}
    print(f"fuzz: {kind}: case {index} ({label}): {detail}", file=sys.stderr, flush=True)
    if args.failures is not None:
        with args.failures.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")


if __name__ == "__main__":
    sys.exit(main())
