"""Time `rankautopsy diagnose` against ripgrep, GNU grep and cat on the same generated corpora.

    python benchmarks/bench.py [--sizes 1M,10M,16M:512,100M,1G,4G] [--hurting 200M] [--dir /tmp/rankautopsy-bench]
                               [--runs 3] [--fallback-up-to 100M] [--re2-up-to 1G] [--out benchmarks/RESULTS.md]

First the fixed cost: a diagnosis of a 20 KB fixture against `python3 -c pass` (bytecode cached as an
installed wheel has it, in a prefix under the temp dir). Then for each size: generate the corpus
(benchmarks/gen_corpus.py, 64 rank files, or FILES of them with `SIZE:FILES`) unless it is already
there, write the rule lists (benchmarks/rule_lists.py), run every command once to warm the page cache (and
rankautopsy's cache), then `--runs` rounds of all commands in turn (alternating); each run is timed
from outside, its CPU time and peak RSS read from `/usr/bin/time`. The tables give medians, min–max
and the ratio of medians to `rg -j1` with the rules' own patterns. With `--hurting SIZE`, the six
corpora of benchmarks/gen_hurting.py (NCCL INFO, rank template prefix, caught tracebacks alike and
unlike, a million hits, a tqdm line) are run the same way. The diagnosis of the fast path (Hyperscan, one worker per
core) is compared with one process, with the RE2 engine (the fallback where Hyperscan has no wheel,
timed like the others on sizes up to `--re2-up-to` and on every hurting corpus) and with the pure
`regex` engine (one run, on sizes up to `--fallback-up-to`, hurting corpora included): verdict,
ranks and events must be identical. Needs
`rg` (ripgrep) and `/usr/bin/time` (Debian: `apt-get install -y ripgrep time`).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import gen_corpus  # noqa: E402


@dataclass
class Command:
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    times: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # user + system seconds
    rss_kib: list[int] = field(default_factory=list)
    output: bytes = b""


# Bytecode as an installed wheel has it (pip compiles on install), kept out of the source tree: with
# PYTHONDONTWRITEBYTECODE set, as on this machine, every start would compile ~80 modules (~0.1 s).
PYCACHE = {"PYTHONPYCACHEPREFIX": str(Path(tempfile.gettempdir()) / "rankautopsy-bench-pycache")}


def run(command: Command) -> None:
    """One timed run; the output is kept (a pipe, not /dev/null: grep stops at its first match there)."""
    started = time.perf_counter()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%M %U %S", *command.argv],
        env={**env, **PYCACHE, **command.env},
        capture_output=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1, 3):  # 3: a verdict too (undetermined)
        raise SystemExit(f"{command.name} failed ({done.returncode}): {done.stderr.decode()[-500:]}")
    rss, user, system = done.stderr.decode().strip().splitlines()[-1].split()
    command.times.append(elapsed)
    command.cpu.append(float(user) + float(system))
    command.rss_kib.append(int(rss))
    command.output = done.stdout


def corpus(root: Path, size: str) -> Path:
    """The corpus of `SIZE` (64 files) or `SIZE:FILES`, generated unless it is there already."""
    total, _, files = size.partition(":")
    files = files or "64"
    folder = root / size.replace(":", "-in-")
    stamp = root / f"{folder.name}.generated"
    wanted = f"size={total} files={files} seed=7 generator={(HERE / 'gen_corpus.py').stat().st_mtime_ns}"
    if not stamp.is_file() or stamp.read_text() != wanted:
        shutil.rmtree(folder, ignore_errors=True)
        argv = [sys.executable, str(HERE / "gen_corpus.py"), str(folder), "--size", total, "--files", files]
        subprocess.run(argv, check=True)
        stamp.write_text(wanted)
    return folder


def commands(folder: Path, lists: Path, re2: bool = False) -> list[Command]:
    files = sorted(str(p) for p in folder.glob("*.log"))
    diagnose = [sys.executable, "-m", "rankautopsy", "diagnose", str(folder), "-f", "json", "--tz", "UTC", "-q"]
    return [
        Command("cat > /dev/null (I/O floor)", ["sh", "-c", 'cat "$@" > /dev/null', "cat", *files]),
        Command("rg -j1 (rules)", ["rg", "-j1", "--no-unicode", "-c", "-f", str(lists / "rules.rg"), str(folder)]),
        Command(
            "rg -j1 (prefilters)", ["rg", "-j1", "--no-unicode", "-c", "-f", str(lists / "prefilter.rg"), str(folder)]
        ),
        Command(
            "grep -E -f (C locale)", ["grep", "-c", "-E", "-f", str(lists / "prefilter.ere"), *files], {"LC_ALL": "C"}
        ),
        *([Command(f"rankautopsy, RE2 engine ({os.cpu_count()} cores)", diagnose, {"RANKAUTOPSY_ENGINE": "re2"})]
          if re2 else []),
        Command("rankautopsy diagnose, 1 process", diagnose, {"RANKAUTOPSY_JOBS": "1"}),
        Command(f"rankautopsy diagnose ({os.cpu_count()} cores)", diagnose),
    ]  # fmt: skip


def diagnosis(output: bytes) -> dict[str, object]:
    report = json.loads(output)
    return {key: report[key] for key in ("verdict", "ranks", "events")}


@dataclass
class SizeResult:
    size: str
    folder: Path
    megabytes: float
    commands: list[Command]
    same: dict[str, bool]
    verdict: str


def bench_size(root: Path, size: str, runs: int, fallback: bool, re2: bool) -> SizeResult:
    return bench_folder(root, size, corpus(root, size), runs, fallback, re2)


def bench_folder(root: Path, size: str, folder: Path, runs: int, fallback: bool, re2: bool) -> SizeResult:
    lists = root / "lists"
    megabytes = sum(p.stat().st_size for p in folder.glob("*.log")) / 1e6
    cmds = commands(folder, lists, re2)
    for command in cmds:  # warm-up: page cache, database cache
        run(command)
        command.times.clear()
        command.cpu.clear()
        command.rss_kib.clear()
    for _ in range(runs):
        for command in cmds:
            run(command)
            print(
                f"  {size} {command.name}: {command.times[-1]:.2f} s, {command.rss_kib[-1] / 1024:.0f} MiB", flush=True
            )
    fast, single = cmds[-1], cmds[-2]
    same = {"1 process": diagnosis(single.output) == diagnosis(fast.output)}
    if re2:
        same["RE2 engine"] = diagnosis(cmds[-3].output) == diagnosis(fast.output)
    if fallback:
        slow = Command("fallback engine", fast.argv, {"RANKAUTOPSY_ENGINE": "regex"})
        run(slow)
        print(f"  {size} fallback engine: {slow.times[-1]:.1f} s", flush=True)
        same["fallback engine (regex)"] = diagnosis(slow.output) == diagnosis(fast.output)
    verdict = json.loads(fast.output)["verdict"]
    first = verdict["first_death"]
    said = f"rank {first['rank']}, {first['cause']}" if first and first["rank"] is not None else verdict["outcome"]
    return SizeResult(size, folder, megabytes, cmds, same, said)


FIXTURE = HERE.parent / "fixtures" / "torchrun-raise-rank2" / "logs"


def startup(runs: int) -> str:
    """The fixed cost: a diagnosis of a 20 KB fixture against `python3 -c pass` and `rg -j1`, alternating."""
    cmds = [
        Command("python3 -c pass", [sys.executable, "-c", "pass"]),
        Command("rankautopsy --version", [sys.executable, "-m", "rankautopsy", "--version"]),
        Command(
            "rankautopsy diagnose (20 KB)",
            [sys.executable, "-m", "rankautopsy", "diagnose", str(FIXTURE), "-f", "json", "-q"],
        ),
    ]
    for command in cmds:
        run(command)
        command.times.clear()
    for _ in range(runs):
        for command in cmds:
            run(command)
    base = statistics.median(cmds[0].times)
    out = [
        "## Start: a 20 KB diagnosis",
        "",
        "| command | median s (min–max) | vs `python3 -c pass` |",
        "|---|---:|---:|",
    ]
    for c in cmds:
        median = statistics.median(c.times)
        out.append(f"| {c.name} | {median:.3f} ({min(c.times):.3f}–{max(c.times):.3f}) | {median / base:.1f} |")
    return "\n".join(out) + "\n\n"


def machine() -> list[str]:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        platform.processor(),
    )
    memory = next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines() if "MemTotal" in line)
    versions = [
        subprocess.run(argv, capture_output=True, text=True, check=False).stdout.splitlines()[0]
        for argv in (["rg", "--version"], ["grep", "--version"])
    ]
    import hyperscan

    return [
        f"- CPU: {model}, `nproc` = {os.cpu_count()}; memory {int(memory) / 1024**2:.0f} GiB; {platform.platform()}",
        f"- Python {platform.python_version()}, hyperscan {hyperscan.__version__}; {versions[0]}; {versions[1]}",
    ]


def report(results: list[SizeResult], runs: int, head: str = "") -> str:
    out = ["# Benchmark results", "", "Written by `python benchmarks/bench.py` (see its docstring). Machine:", ""]
    out += machine()
    out += ["", f"Medians of {runs} runs after one warm-up run (page cache warm). MB = 10^6 bytes.", ""]
    out += [head] if head else []
    for result in results:
        rg = statistics.median(next(c for c in result.commands if c.name == "rg -j1 (rules)").times)
        files = len(list(result.folder.glob("*.log")))
        out += [f"## {result.size}: {result.megabytes:,.0f} MB in {files} files (verdict: {result.verdict})", ""]
        out += [
            "| command | median s (min–max) | CPU s | MB/s | vs `rg -j1` (rules) | peak RSS MiB |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for c in result.commands:
            median = statistics.median(c.times)
            ratio = "—" if c.name.startswith("cat") else f"{median / rg:.2f}"
            rate, rss = result.megabytes / median, max(c.rss_kib) / 1024
            spread = f"{median:.2f} ({min(c.times):.2f}–{max(c.times):.2f})"
            out.append(f"| {c.name} | {spread} | {statistics.median(c.cpu):.2f} | {rate:,.0f} | {ratio} | {rss:.0f} |")
        same = ", ".join(f"{name}: {'identical' if ok else 'DIFFERENT'}" for name, ok in result.same.items())
        out += ["", f"Diagnosis (verdict, ranks, events) of the fast path vs {same}.", ""]
    out += ["## Commands", "", "`DIR` is the corpus directory, `FILES` its `rank_*.log` files.", "", "```sh"]
    for c in results[-1].commands:
        env = " ".join(f"{k}={v}" for k, v in c.env.items())
        out.append((env + " " if env else "") + _shown(c.argv, str(results[-1].folder)))
    out += ["```", ""]
    return "\n".join(out)


def _shown(argv: list[str], folder: str) -> str:
    """A command line as one would type it: the corpus as DIR and FILES, rankautopsy by name."""
    argv = ["rankautopsy", *argv[3:]] if argv[1:3] == ["-m", "rankautopsy"] else argv
    if argv[:2] == ["sh", "-c"]:
        argv = ["cat", "FILES", ">", "/dev/null"]
    words = [w for w in argv if not w.endswith(".log")]
    if len(words) < len(argv):
        words.append("FILES")
    return " ".join("DIR" if w == folder else w for w in words)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="100M,1G,2G")
    parser.add_argument("--dir", type=Path, default=Path("/tmp/rankautopsy-bench"))
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--fallback-up-to", default="100M", help="check the `regex` engine on sizes up to this")
    parser.add_argument("--re2-up-to", default="1G", help="time the RE2 engine on sizes up to this")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    parser.add_argument("--hurting", default="", help="also the corpora of gen_hurting.py, each of this size")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(HERE / "rule_lists.py"), str(args.dir / "lists")], check=True)
    limit, re2_limit = gen_corpus.parse_size(args.fallback_up_to), gen_corpus.parse_size(args.re2_up_to)
    head = startup(args.runs * 3)
    results = [
        bench_size(args.dir, size, args.runs, (n := gen_corpus.parse_size(size.split(":")[0])) <= limit, n <= re2_limit)
        for size in args.sizes.split(",")
        if size
    ]
    if args.hurting:
        root = args.dir / f"hurting-{args.hurting}"
        subprocess.run([sys.executable, str(HERE / "gen_hurting.py"), str(root), "--size", args.hurting], check=True)
        n = gen_corpus.parse_size(args.hurting)
        for shape in sorted(p.name for p in root.iterdir() if p.is_dir()):
            folder = root / shape
            results.append(bench_folder(args.dir, f"{shape} ({args.hurting})", folder, args.runs, n <= limit, True))
    args.out.write_text(report(results, args.runs, head))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
