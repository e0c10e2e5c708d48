"""Make the Ray Train cases of the real-run accuracy corpus: benchmarks/accuracy/real/ray-*/.

Each scenario runs benchmarks/accuracy/real/ray_job.py the way a Ray user runs a training script,
`python ray_job.py ...` (the driver starts a local Ray instance and a TorchTrainer with 3 gloo
workers on CPU), injects a real fault into one RayTrainWorker and keeps what the user has: the
driver's stdout+stderr in arrival order (`logs/console.log`, as `python ray_job.py ... 2>&1 | tee`)
and, for the cases that say so, a subset of Ray's session log directory
(`logs/ray/session_<...>/logs/`: the non-empty `worker-*.out`/`worker-*.err` files, `raylet.out`,
`gcs_server.out`). Ray's temp dir is put under the scratch directory (`ray.init(_temp_dir=...)`) so
that it reads `/tmp/ray/...` after rewriting.

The ground truth comes from the injector's record in a side file outside the logs (ray_job.py
writes {"kind", "rank", "pid", "step", "time"} the instant before the fault fires) or from the
generator's own record when it SIGKILLs a worker's pid from outside. As in generate.py, the driver
runs in its own UTS and mount namespace whose host name is node01, and after the run only the
scratch directory (-> /job, its tmp/ -> /tmp), the virtualenvs (-> /home/user/venv), the Python
installation (-> /usr/local) and the real host name (-> node01) are rewritten.

Usage (with a venv that has ray[train] and sees torch 2.13.0, e.g. /work/venv-ray):

    python benchmarks/accuracy/real/generate_ray.py --list
    python benchmarks/accuracy/real/generate_ray.py                      # every Ray case, into this directory
    python benchmarks/accuracy/real/generate_ray.py --only ray-raise-rank1 --out /tmp/corpus

Run it as root (unshare, mount --bind), one job at a time. It runs `ray stop --force` after each run.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate as G  # noqa: E402  (helpers only: namespaces, env, side files, path rewriting)

RAY_JOB = HERE / "ray_job.py"
RUN_TIMEOUT_S = 300
ATTEMPTS = 3
# torch comes from this venv (a .pth file in the Ray venv's site-packages): it is rewritten too
# (and any other venv next to it whose processes Ray may list, e.g. in its OOM report's "Top 10 memory users")
EXTRA_VENVS = [p for p in os.environ.get("RAY_GEN_EXTRA_VENVS", "/work/venv:/work/venv-*").split(":") if p]


@dataclass
class Scenario:
    id: str
    description: str
    outcome: str  # first_death | hang | undetermined | clean
    cause: str | None
    sure: str = "high"
    workers: int = 3
    style: str = "print"
    faults: list[str] = field(default_factory=list)  # ray_job.py --fault specs
    job: list[str] = field(default_factory=list)  # extra ray_job.py args
    external: tuple[str, int, int] | None = None  # (signal, rank, step): the generator signals that worker
    session_logs: bool = True  # also keep a subset of Ray's session log directory
    truth_rank: str = "first"  # first: the rank of the earliest injection; none: null
    why: str = ""
    notes: str = ""
    needles: list[str] = field(default_factory=list)  # must appear in console.log ({pid} = the victim's pid;
    # "re:" = a regular expression)
    dmesg: str | None = None  # "oom": synthesise a kernel OOM-killer log for the SIGKILLed pid (generate.py's)
    mem_headroom_gib: float | None = None  # set RAY_memory_usage_threshold to (used now + this) / MemTotal


PGT = ["--pg-timeout", "20"]
SCENARIOS: list[Scenario] = [
    Scenario(
        "ray-raise-rank1",
        "Ray Train TorchTrainer, 3 gloo workers on CPU, print logging; world rank 1 raises RuntimeError at step 4",
        "first_death",
        "python_exception",
        faults=["raise:1:4"],
        job=PGT,
        why="the injector raised RuntimeError in world rank 1 (pid {pid}) at {when}; Ray prints the traceback "
        "under (RayTrainWorker pid={pid}) and the driver raises ray.train.WorkerGroupError with a "
        "'[Rank 1 Error Snippet]'",
        needles=["[Rank 1 Error Snippet]", "RuntimeError: corrupt batch at step 4"],
    ),
    Scenario(
        "ray-raise-rank0-logging-console",
        "Ray Train TorchTrainer, 3 gloo workers, logging with asctime; world rank 0 raises RuntimeError at step 3; "
        "only the driver console is kept",
        "first_death",
        "python_exception",
        style="logging",
        faults=["raise:0:3"],
        job=PGT,
        session_logs=False,
        why="the injector raised RuntimeError in world rank 0 (pid {pid}) at {when}; the driver raises "
        "ray.train.WorkerGroupError with a '[Rank 0 Error Snippet]'",
        needles=["[Rank 0 Error Snippet]", "RuntimeError: corrupt batch at step 3"],
    ),
    Scenario(
        "ray-segfault-rank2",
        "Ray Train TorchTrainer, 3 gloo workers, print logging; world rank 2 segfaults (ctypes.string_at(0)) at step 4",
        "first_death",
        "segfault",
        faults=["segv:2:4"],
        job=PGT,
        why="the injector segfaulted world rank 2 (pid {pid}) at {when}; Ray's handler prints '*** SIGSEGV "
        "received' and 'Fatal Python error: Segmentation fault' under (RayTrainWorker pid={pid}), which the "
        "controller lists as world_rank=2",
        needles=["*** SIGSEGV received", "[Rank 2 Error Snippet]"],
    ),
    Scenario(
        "ray-sigkill-rank2",
        "Ray Train TorchTrainer, 3 gloo workers, logging with asctime; world rank 2's worker process is SIGKILLed "
        "from outside at step 5 (as an OOM-killer would; no kernel log kept)",
        "first_death",
        "silent_exit",
        sure="medium",
        style="logging",
        external=("SIGKILL", 2, 5),
        job=PGT,
        why="the generator sent SIGKILL to world rank 2 (pid {pid}) at {when}; nothing kept records the signal: Ray "
        "reports only that the RayTrainWorker with pid {pid} (world_rank=2) died, 'Worker exit type: SYSTEM_ERROR "
        "Worker exit detail: Worker unexpectedly exits with a connection error code 2. End of file', with the OOM "
        "killer, ray stop --force and SIGSEGV as possible causes (the same lines as for os._exit(3))",
        needles=["Worker PID: {pid} Worker exit type: SYSTEM_ERROR", "[Rank 2 Error Snippet]"],
    ),
    Scenario(
        "ray-sigkill-oom-rank0",
        "Ray Train TorchTrainer, 3 gloo workers, print logging; world rank 0's worker process is SIGKILLed from "
        "outside at step 4, standing in for the kernel OOM-killer (dmesg.txt synthesised)",
        "first_death",
        "host_oom",
        external=("SIGKILL", 0, 4),
        job=PGT,
        dmesg="oom",
        why="the generator sent SIGKILL to world rank 0 (pid {pid}) at {when}, standing in for the OOM-killer; "
        "dmesg.txt says 'Out of memory: Killed process {pid}' at that second and Ray reports the RayTrainWorker "
        "with pid {pid} (world_rank=0) dead with SYSTEM_ERROR",
        notes="dmesg.txt is synthesised (generate.py's _write_oom_dmesg: the kernel's own format, the real pid, "
        "comm and time of the kill); the kill itself is a real SIGKILL sent by the generator.",
        needles=["Worker PID: {pid} Worker exit type: SYSTEM_ERROR", "[Rank 0 Error Snippet]"],
    ),
    Scenario(
        "ray-sigkill-rank1-console",
        "Ray Train TorchTrainer, 3 gloo workers, print logging; world rank 1's worker process is SIGKILLed from "
        "outside at step 4; only the driver console is kept",
        "first_death",
        "silent_exit",
        sure="medium",
        external=("SIGKILL", 1, 4),
        job=PGT,
        session_logs=False,
        why="the generator sent SIGKILL to world rank 1 (pid {pid}) at {when}; nothing kept records the signal: the "
        "console says the RayTrainWorker with pid {pid} (world_rank=1) died with 'Worker exit type: SYSTEM_ERROR', "
        "'connection error code 2. End of file'",
        needles=["Worker PID: {pid} Worker exit type: SYSTEM_ERROR", "[Rank 1 Error Snippet]"],
    ),
    Scenario(
        "ray-exit3-rank1",
        "Ray Train TorchTrainer, 3 gloo workers, print logging; world rank 1 calls os._exit(3) at step 3",
        "first_death",
        "silent_exit",
        faults=["exit:1:3"],
        job=PGT,
        why="world rank 1 (pid {pid}) called os._exit(3) at {when} and printed nothing; Ray reports the "
        "RayTrainWorker with pid {pid} (world_rank=1) dead, 'Worker exit type: SYSTEM_ERROR ... connection error "
        "code 2. End of file'; the exit code is not in any kept log",
        needles=["Worker PID: {pid} Worker exit type: SYSTEM_ERROR", "[Rank 1 Error Snippet]"],
    ),
    Scenario(
        "ray-memmonitor-rank1",
        "Ray Train TorchTrainer, 3 gloo workers, print logging; world rank 1 allocates memory from step 4 on and "
        "Ray's own memory monitor (RAY_memory_usage_threshold set 4 GiB above the node's use) kills the workers",
        "first_death",
        "host_oom",
        sure="medium",
        faults=["hog:1:4"],
        job=PGT,
        mem_headroom_gib=4.0,
        why="world rank 1 (pid {pid}) started allocating 128 MiB every 0.1 s at {when}; the raylet's memory monitor "
        "then killed several workers in one go, pid {pid} among them ('N worker(s) were killed due to the node "
        "running low on memory', 'Selected to kill: ... pid={pid}, actual memory used=...'); its 'Top 10 memory "
        "users' shows pid {pid} (world_rank=1 in the controller's list) far above the other RayTrainWorkers "
        "(0.3 GB). The workers selected die at the same instant, so the rank is the one whose memory use set the "
        "kill off, not necessarily the first pid to vanish (deaths_seen: the order in which the generator saw "
        "the workers' pids go); which other workers Ray selects varies from run to run",
        notes="A real allocation and Ray's real memory monitor (raylet threshold_memory_monitor); only the threshold "
        "is lowered (RAY_memory_usage_threshold, documented) so that a few GiB cross it on this 24 GiB machine. "
        "Ray's 'Top 10 memory users' also lists unrelated processes running on the machine at the time.",
        needles=["were killed due to the node running low on memory", "re:Selected to kill: [^\n]*pid={pid}, actual"],
    ),
    Scenario(
        "ray-straggler-rank2",
        "Ray Train TorchTrainer, 3 gloo workers, logging with asctime, TorchConfig(timeout_s=20); world rank 2 "
        "sleeps 90 s before step 4 (alive, not progressing)",
        "hang",
        "hang",
        sure="medium",
        style="logging",
        faults=["straggle:2:4"],
        job=[*PGT, "--straggle-s", "90"],
        why="the injector stopped world rank 2 (pid {pid}) before step 4 at {when} (alive, sleeping 90 s); ranks 0 "
        "and 1 timed out in gloo after 20000 ms and are the only ranks in Ray's error snippets; rank 2 printed no "
        "error",
        needles=["Timed out waiting 20000ms"],
    ),
    Scenario(
        "ray-clean",
        "Ray Train TorchTrainer, 3 gloo workers, print logging; nothing injected, the run finishes",
        "clean",
        None,
        job=PGT,
        truth_rank="none",
        why="nothing was injected; every worker logged training done and the driver printed the final metrics",
        needles=["Training finished:"],
    ),
]
BY_ID = {s.id: s for s in SCENARIOS}
assert len(BY_ID) == len(SCENARIOS)


@dataclass
class Run:
    returncode: int = -1
    ranks: dict[int, dict] = field(default_factory=dict)
    injected: list[dict] = field(default_factory=list)
    argv: list[str] = field(default_factory=list)
    comm: dict[int, str] = field(default_factory=dict)  # pid -> /proc/<pid>/comm at the kill
    deaths: list[dict] = field(default_factory=list)  # {"rank", "pid", "time"}: a worker pid seen gone from /proc
    # (kept in case.yaml as deaths_seen for the memory-monitor case, where Ray picks which workers to kill)
    env: dict[str, str] = field(default_factory=dict)  # what the generator added to the driver's environment


def _ray_bin() -> str:
    return str(Path(sys.executable).parent / "ray")


def ray_stop() -> None:
    subprocess.run([_ray_bin(), "stop", "--force"], capture_output=True, timeout=120, check=False)


def _argv(sc: Scenario, work: Path) -> list[str]:
    a = [sys.executable, "ray_job.py", "--workers", str(sc.workers), "--log-style", sc.style]
    a += ["--temp-dir", str(work / "tmp" / "ray")]
    for f in sc.faults:
        a += ["--fault", f]
    if sc.external:
        a += ["--fault", f"wait:{sc.external[1]}:{sc.external[2]}"]
    return a + sc.job


def _launch(sc: Scenario, work: Path) -> Run:
    env = G._env(work, G._free_port())
    env.pop("MASTER_ADDR", None)  # Ray Train sets these itself in each worker
    env.pop("MASTER_PORT", None)
    run = Run(argv=_argv(sc, work))
    if sc.mem_headroom_gib is not None:
        mi = dict(ln.split(":", 1) for ln in Path("/proc/meminfo").read_text().splitlines())
        total, avail = (int(mi[k].split()[0]) * 1024 for k in ("MemTotal", "MemAvailable"))
        thr = (total - avail + sc.mem_headroom_gib * 2**30) / total
        run.env["RAY_memory_usage_threshold"] = f"{thr:.3f}"
    env.update(run.env)
    target = work / "job" / "logs" / "console.log"
    p = subprocess.Popen(
        G._in_host(work, "node01", run.argv),
        cwd=work / "job",
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )

    def pump() -> None:
        assert p.stdout is not None
        with target.open("wb") as out:
            for raw in iter(p.stdout.readline, b""):
                out.write(raw)
                out.flush()

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    side = work / "side"
    fired = False
    alive: dict[int, int] = {}  # pid -> rank, the workers that have started and not yet vanished
    seen: set[int] = set()
    deadline = time.time() + RUN_TIMEOUT_S
    try:
        while p.poll() is None:
            for rec in G._read_jsonl(side / "ranks.jsonl"):
                if rec["pid"] not in seen:
                    seen.add(rec["pid"])
                    alive[rec["pid"]] = rec["rank"]
            for pid, rank in list(alive.items()):
                if not Path(f"/proc/{pid}").exists():
                    run.deaths.append({"rank": rank, "pid": pid, "time": time.time()})
                    del alive[pid]
            if time.time() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                raise RuntimeError(f"{sc.id}: the driver did not finish within {RUN_TIMEOUT_S} s")
            if sc.external and not fired:
                signame, rank, _step = sc.external
                for rec in G._read_jsonl(side / "inject.jsonl"):
                    if rec["kind"] == "wait" and rec["rank"] == rank:
                        try:
                            run.comm[rec["pid"]] = Path(f"/proc/{rec['pid']}/comm").read_text().strip()
                        except OSError:
                            run.comm[rec["pid"]] = "python"
                        tk = time.time()
                        os.kill(rec["pid"], getattr(signal, signame))
                        run.injected.append(
                            {
                                "kind": signame.lower() + "-external",
                                "rank": rank,
                                "pid": rec["pid"],
                                "step": rec["step"],
                                "time": tk,
                                "by": "generator",
                            }
                        )
                        fired = True
                        break
            time.sleep(0.02)
        t.join(30)
        run.returncode = p.returncode
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(p.pid, signal.SIGKILL)
        ray_stop()
    for rec in G._read_jsonl(side / "ranks.jsonl"):
        run.ranks.setdefault(rec["rank"], rec)
    run.injected += [r for r in G._read_jsonl(side / "inject.jsonl") if r["kind"] != "wait"]
    run.injected.sort(key=lambda r: r["time"])
    return run


def _normaliser(work: Path):
    base = G._normaliser(work)
    import glob

    extra = [v for pat in EXTRA_VENVS for v in (glob.glob(pat) or [pat])]
    extra = [v for v in extra if os.path.realpath(v) != os.path.realpath(sys.prefix)]
    if not extra:
        return base
    alts = sorted({s for v in extra for s in (v, os.path.realpath(v))}, key=len, reverse=True)
    rx = re.compile("|".join(re.escape(s) + r"(?=[/\"'\s:),]|$)" for s in alts), re.M)

    def norm(text: str) -> str:
        return base(rx.sub(G.VENV_PH, text))

    return norm


def _copy_session_logs(work: Path, logs: Path) -> list[str]:
    """The non-empty worker-*.out/.err files, raylet.out and gcs_server.out of the (only) Ray session."""
    root = work / "tmp" / "ray"
    sessions = sorted(d for d in root.glob("session_2*") if d.is_dir())
    kept: list[str] = []
    for sess in sessions:
        src = sess / "logs"
        dst = logs / "ray" / sess.name / "logs"
        for f in sorted(src.glob("*")):
            if not f.is_file() or f.stat().st_size == 0:
                continue
            if f.name.startswith("worker-") or f.name in ("raylet.out", "gcs_server.out"):
                dst.mkdir(parents=True, exist_ok=True)
                shutil.copy(f, dst / f.name)
                kept.append(str((dst / f.name).relative_to(logs)))
    return kept


def _check(sc: Scenario, run: Run, case: Path) -> list[str]:
    probs = []
    console = (case / "logs" / "console.log").read_text(encoding="utf-8", errors="replace")
    fired = {(r["kind"].replace("-external", ""), r["rank"]) for r in run.injected}
    probs += G.fault_problems(sc.faults, sc.external, sc.outcome, run.injected, run.returncode, fired)
    if len(run.ranks) != sc.workers:
        probs.append(f"only ranks {sorted(run.ranks)} started")
    victim = _first(sc, run)["pid"] if _first(sc, run) else None
    for n in sc.needles:
        n = n.replace("{pid}", str(victim))
        found = re.search(n[3:], console) if n.startswith("re:") else n in console
        if not found:
            probs.append(f"missing in console.log: {n!r}")
    size = sum(f.stat().st_size for f in case.rglob("*") if f.is_file())
    if size > 1_000_000:
        probs.append(f"case is {size} bytes")
    return probs


def _first(sc: Scenario, run: Run) -> dict | None:
    return min(run.injected, key=lambda r: r["time"]) if run.injected else None


def _prepare(work: Path) -> None:
    for d in ("job/logs", "tmp", "home", "side"):
        (work / d).mkdir(parents=True)
    shutil.copy(RAY_JOB, work / "job" / "ray_job.py")


def run_case(sc: Scenario, out_root: Path) -> Path:
    last: list[str] = []
    for attempt in range(1, ATTEMPTS + 1):
        work = Path(tempfile.mkdtemp(prefix="ra-ray-", dir="/tmp"))
        try:
            _prepare(work)
            run = _launch(sc, work)
            case = out_root / sc.id
            if case.exists():
                shutil.rmtree(case)
            case.mkdir(parents=True)
            shutil.copytree(work / "job" / "logs", case / "logs")
            if sc.session_logs:
                _copy_session_logs(work, case / "logs")
            dmesg: list[str] = []
            if sc.dmesg == "oom" and run.injected:
                G._write_oom_dmesg(case / "dmesg.txt", run, run.injected[0]["pid"], run.injected[0]["time"])
                dmesg.append("dmesg.txt")
            norm = _normaliser(work)
            G._normalise_tree(case, norm)
            probs = _check(sc, run, case)
            if probs:
                last = probs
                print(f"  attempt {attempt}: {'; '.join(probs)}", file=sys.stderr)
                continue
            _write_case_yaml(sc, run, case, norm, dmesg)
            return case
        finally:
            shutil.rmtree(work, ignore_errors=True)
    failed = out_root / sc.id
    if failed.exists() and not (failed / "case.yaml").exists():
        shutil.move(str(failed), str(Path(tempfile.gettempdir()) / f"failed-{sc.id}-{int(time.time())}"))
    raise RuntimeError(f"{sc.id}: {'; '.join(last)}")


def _write_case_yaml(sc: Scenario, run: Run, case: Path, norm, dmesg: list[str]) -> None:
    first = _first(sc, run)
    rank = first["rank"] if (first and sc.truth_rank == "first") else None
    why = sc.why
    if first:
        why = why.format(when=G._when(first["time"]), rank=first["rank"], pid=first["pid"], kind=first.get("kind", ""))
    shown = ["python", *[norm(a) for a in run.argv[1:]]]
    doc: dict[str, Any] = {
        "id": sc.id,
        "corpus": "real",
        "launcher": "ray",
        "source": f"python benchmarks/accuracy/real/generate_ray.py --only {sc.id}",
        "description": sc.description,
        "args": ["logs"],
        "dmesg": dmesg,
        "options": [],
        "truth": {"outcome": sc.outcome, "rank": rank, "cause": sc.cause, "sure": sc.sure, "why": why},
    }
    if sc.notes:
        doc["notes"] = sc.notes
    doc["command"] = " ".join([*(f"{k}={v}" for k, v in run.env.items()), *shown])
    doc["injected"] = [
        {
            "kind": r["kind"],
            "rank": r["rank"],
            "pid": r["pid"],
            "step": r["step"],
            "time": G._when(r["time"]),
            **({"by": r["by"]} if "by" in r else {}),
        }
        for r in run.injected
    ]
    if run.deaths and sc.mem_headroom_gib is not None:
        doc["deaths_seen"] = [
            {"rank": d["rank"], "pid": d["pid"], "time": G._when(d["time"]), "by": "generator (/proc poll)"}
            for d in sorted(run.deaths, key=lambda d: d["time"])
        ]
    doc["ranks"] = {r: {"pid": v["pid"], "host": v["host"]} for r, v in sorted(run.ranks.items())}
    doc["exit_status"] = run.returncode
    (case / "case.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=110))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[], help="case id (repeatable)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--out", default=str(HERE))
    ap.add_argument("--keep-going", action="store_true")
    a = ap.parse_args(argv)
    unknown = set(a.only) - set(BY_ID)
    if unknown:
        ap.error(f"unknown case id(s): {', '.join(sorted(unknown))}")
    chosen = [s for s in SCENARIOS if not a.only or s.id in a.only]
    if a.list:
        for s in chosen:
            print(f"{s.id:36s} {s.outcome:12s} {s.cause}")
        return 0
    failed = []
    for s in chosen:
        t0 = time.time()
        print(f"{s.id} ...", flush=True)
        try:
            case = run_case(s, Path(a.out))
        except Exception as e:
            failed.append(s.id)
            print(f"  FAILED: {e}", flush=True)
            if not a.keep_going:
                return 1
            continue
        t = yaml.safe_load((case / "case.yaml").read_text())["truth"]
        print(
            f"  made {case} in {time.time() - t0:.0f}s: {t['outcome']} rank={t['rank']} cause={t['cause']}", flush=True
        )
    if failed:
        print("failed: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
