"""Run N fuzz cases of the mutation corpus in this process and print one summary line:

    python -m tests.fuzz.run --cases 100000 [--seed 1] [--seconds 20] [--failures fuzz-failures.jsonl]

Case i of seed s is always the same case (`--start`/`--only` replay one); the exit status is 1 when any
case crashed, hung or gave two different outputs."""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import tempfile
import time
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
    args = parser.parse_args(argv)
    os.environ.setdefault("RANKAUTOPSY_CACHE_DIR", tempfile.mkdtemp(prefix="rankautopsy-fuzz-cache-"))
    indices = [args.only] if args.only is not None else range(args.start, args.start + args.cases)
    with tempfile.TemporaryDirectory(prefix="rankautopsy-fuzz-") as scratch:
        runner = harness.Runner(Path(scratch), args.seconds)
        runner.warm_up()
        began = time.monotonic()
        done = 0
        for index in indices:
            if args.wall is not None and time.monotonic() - began > args.wall:
                break
            case = corpus.mutated_case(args.seed, index)
            result = runner.run(case)
            done += 1
            if result.kind in harness.FAILURES:
                _report(args, index, case, result)
            if done % args.every == 0:
                print(_summary(runner, done, args.seed, time.monotonic() - began), file=sys.stderr, flush=True)
        print(_summary(runner, done, args.seed, time.monotonic() - began), flush=True)
    return 1 if any(runner.counts.get(kind) for kind in harness.FAILURES) else 0


def _report(args: argparse.Namespace, index: int, case: Any, result: Any) -> None:
    line = {"seed": args.seed, "index": index, "kind": result.kind, "detail": result.detail, "label": case.label}
    print(f"fuzz: {result.kind}: case {index} ({case.label}): {result.detail}", file=sys.stderr, flush=True)
    if args.failures is not None:
        with args.failures.open("a", encoding="utf-8") as out:
            out.write(json.dumps(line) + "\n")


def _summary(runner: Any, done: int, seed: int, seconds: float) -> str:
    counts = runner.counts
    parts = ", ".join(f"{counts.get(kind, 0)} {kind}" for kind in ("ok", "usage", *harness.FAILURES))
    rate = done / seconds if seconds else 0.0
    return (
        f"fuzz: {done} cases (seed {seed}) in {seconds:.0f} s, {rate:.1f} cases/s: {parts}; "
        f"slowest case {runner.slowest:.1f} s"
    )


if __name__ == "__main__":
    sys.exit(main())
