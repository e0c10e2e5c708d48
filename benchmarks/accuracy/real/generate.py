"""Regenerate the real-run half of the accuracy corpus: benchmarks/accuracy/real/<case-id>/.

Every scenario below runs benchmarks/accuracy/real/job.py (or lit_job.py) under a real launcher on
this machine (torch.multiprocessing.spawn, torchrun, two torchrun agents as two nodes, Open MPI's
mpirun, SLURM's srun, Lightning, Accelerate, DeepSpeed's launcher, MPICH's mpiexec), injects a real
fault and keeps the bytes the processes printed. The ground truth of each case comes from the
injector's own record (a JSON file written outside the logs the instant before the fault fires, or
the generator's own record when it signals a rank from outside), never from any tool's output.

Each launcher runs in its own UTS and mount namespace (unshare -mu) whose host name is node01
(node02 for the second torchrun agent) and whose /etc/hosts names node01.cluster.internal, so the
host name in the logs is already the placeholder. After the run only these strings are rewritten:
the scratch directory (-> /job, its tmp/ -> /tmp), the virtualenvs (-> /home/user/venv), the Python
installation (-> /usr/local) and, should it leak, the real host name (-> node01). Nothing else in
any line is edited. The kernel's segfault lines and its OOM-killer's reports of a capped memory cgroup
(job.py's memcg faults, a SLURM job's --mem under task/cgroup) are real, kept as the kernel printed them;
a host-wide OOM kill cannot be made here, so the `*-sigkill-oom-*` cases' kernel logs are synthesised
from the kernel's own format (mm/oom_kill.c) at the real time of the kill and for the real pid.

Usage (with the venv that has torch 2.13.0, pyyaml, and for some cases lightning/accelerate,
openmpi-bin, slurm-wlm and munge installed; the deepspeed cases need DeepSpeed in a second venv,
DEEPSPEED_VENV or <this venv>-ds, the mpich cases Debian's mpich):

    python benchmarks/accuracy/real/generate.py --list
    python benchmarks/accuracy/real/generate.py                      # every case, into this directory
    python benchmarks/accuracy/real/generate.py --only mpspawn-segfault-rank1-print --out /tmp/corpus
    python benchmarks/accuracy/real/generate.py --launcher torchrun   # only one launcher's cases

Run it as root (unshare, mount --bind, SLURM daemons). Jobs run one at a time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
JOB = HERE / "job.py"
LIT_JOB = HERE / "lit_job.py"
ACC_JOB = HERE / "acc_job.py"

JOB_PH = "/job"
TMP_PH = "/tmp"
VENV_PH = "/home/user/venv"
PY_PH = "/usr/local"
HOSTS = {0: "node01", 1: "node02"}
DOMAIN = "cluster.internal"
RUN_TIMEOUT_S = 180
ATTEMPTS = 3
# DeepSpeed lives in its own virtualenv (it pulls pydantic, which the tool's venv must not get); that venv reads
# torch from this one through a .pth file. Override with DEEPSPEED_VENV.
DS_VENV = Path(os.environ.get("DEEPSPEED_VENV", sys.prefix + "-ds"))
MPIEXEC_MPICH = "/usr/bin/mpiexec.mpich"  # Debian's mpich (Hydra), by its explicit name: `mpirun` stays Open MPI
KERNEL_KEPT = ("real", "memcg", "memcg-dropped")  # Scenario.dmesg values whose run reads the kernel's lines

# --------------------------------------------------------------------------- scenarios as data


@dataclass
class Scenario:
    id: str
    launcher: str  # the case.yaml launcher value
    runner: str  # spawn | torchrun | torchrun2 | mpirun | srun | lightning | accelerate | notebook | deepspeed | mpich
    description: str
    outcome: str  # first_death | hang | undetermined | clean
    cause: str | None
    sure: str = "high"
    nproc: int = 3
    style: str = "print"
    faults: list[str] = field(default_factory=list)  # job.py --fault specs
    job: list[str] = field(default_factory=list)  # extra job.py args
    largs: list[str] = field(default_factory=list)  # extra launcher args ({logs} substituted)
    console: str | None = "console.log"  # file under logs/ that keeps the launcher's stdout+stderr; None: dropped
    external: tuple[str, int, int] | None = None  # (SIGKILL|SIGTERM, rank, step): the generator signals the rank;
    # (SCANCEL, rank, step): it runs scancel on the job once that rank reaches that step
    dmesg: str | None = None  # "oom": synthesise a kernel OOM-killer log for the killed pid; "real": keep the
    # kernel's own lines printed during the run (dmesg -T), e.g. "python[pid]: segfault at 0 ip ..."; "memcg":
    # keep them too, a real OOM kill of the victim's own cgroup; "memcg-dropped": check the kill, keep no log
    truth_rank: str = "first"  # first: the rank of the earliest injection; none: null (undetermined/clean)
    why: str = ""  # {when} {rank} {pid} {kind} substituted from the injector's record
    notes: str = ""
    options: list[str] = field(default_factory=list)
    needles: list[str] = field(default_factory=list)  # must appear in the kept logs ({pid} = the victim's pid)
    absent: list[str] = field(default_factory=list)  # must not appear in the kept logs ({pid} as in needles)
    env: dict[str, str] = field(default_factory=dict)
    slurm_cgroup: bool = False  # srun/sbatch: a node whose task/cgroup confines each job's memory (--mem)
    slurm_time: str | None = None  # srun/sbatch: the job's --time limit
    interrupt: float | None = None  # Ctrl-C: SIGINT to the launcher's process group this long after the injection


S = Scenario
SCENARIOS: list[Scenario] = []


def add(*scs: Scenario) -> None:
    SCENARIOS.extend(scs)


# ---- torch.multiprocessing.spawn ---------------------------------------------------------------
add(
    S(
        "mpspawn-segfault-rank1-print",
        "mp.spawn",
        "spawn",
        "3 ranks under mp.spawn, plain print logging; rank 1 segfaults at step 4 without faulthandler",
        "first_death",
        "segfault",
        faults=["segv:1:4"],
        why="the injector segfaulted rank 1 (pid {pid}) at {when}; mp.spawn's parent reports process 1 terminated "
        "with signal SIGSEGV",
        needles=["terminated with signal SIGSEGV"],
    ),
    S(
        "mpspawn-segfault-faulthandler-rank2-logging",
        "mp.spawn",
        "spawn",
        "3 ranks under mp.spawn, logging with asctime, faulthandler on; rank 2 segfaults at step 3",
        "first_death",
        "segfault",
        style="logging",
        faults=["segv:2:3"],
        job=["--faulthandler"],
        why="the injector segfaulted rank 2 (pid {pid}) at {when}; faulthandler dumped the stack, the parent "
        "reports SIGSEGV",
        needles=["Fatal Python error: Segmentation fault"],
    ),
    S(
        "mpspawn-raise-rank0-hf",
        "mp.spawn",
        "spawn",
        "2 ranks under mp.spawn, HF-Trainer-like logging; rank 0 raises ValueError on a bad sample at step 5",
        "first_death",
        "python_exception",
        nproc=2,
        style="hf",
        faults=["raise:0:5"],
        why="the dataset raised ValueError in rank 0 (pid {pid}) at {when}; the parent re-raises it as "
        "ProcessRaisedException",
        needles=["ProcessRaisedException"],
    ),
    S(
        "mpspawn-raise-rank2-print",
        "mp.spawn",
        "spawn",
        "4 ranks under mp.spawn, plain print (no timestamps, no rank prefix); rank 2 raises on a bad sample at step 3",
        "first_death",
        "python_exception",
        nproc=4,
        faults=["raise:2:3"],
        why="the dataset raised ValueError in rank 2 (pid {pid}) at {when}; ProcessRaisedException names process 2",
        needles=["Process 2 terminated with the following error"],
    ),
    S(
        "mpspawn-sigkill-self-rank1-loguru",
        "mp.spawn",
        "spawn",
        "3 ranks under mp.spawn, loguru-like format; rank 1 SIGKILLs itself at step 4, no kernel log",
        "first_death",
        "killed",
        style="loguru",
        faults=["sigkill:1:4"],
        why="rank 1 (pid {pid}) sent itself SIGKILL at {when}; nothing says who sent it; mp.spawn reports "
        "signal SIGKILL",
        needles=["terminated with signal SIGKILL"],
    ),
    S(
        "mpspawn-sigkill-oom-rank2-logging",
        "mp.spawn",
        "spawn",
        "3 ranks under mp.spawn, logging with asctime; rank 2 is SIGKILLed from outside at step 5, kernel OOM log",
        "first_death",
        "host_oom",
        style="logging",
        external=("SIGKILL", 2, 5),
        dmesg="oom",
        why="the generator sent SIGKILL to rank 2 (pid {pid}) at {when}, standing in for the OOM-killer; "
        "dmesg.txt names that pid",
        notes="dmesg.txt is synthesised from the kernel's own format (mm/oom_kill.c) for the real pid at the real "
        "time of the kill; the kill itself was a real SIGKILL sent by the generator.",
        needles=["terminated with signal SIGKILL"],
    ),
    S(
        "mpspawn-abort-rank1-rank0only",
        "mp.spawn",
        "spawn",
        "3 ranks under mp.spawn, only rank 0 logs progress; rank 1 calls os.abort() at step 6",
        "first_death",
        "abort",
        style="rank0",
        faults=["abort:1:6"],
        why="the injector called os.abort() in rank 1 (pid {pid}) at {when}; the parent reports SIGABRT",
        needles=["terminated with signal SIGABRT"],
    ),
    S(
        "mpspawn-exit3-rank1-print",
        "mp.spawn",
        "spawn",
        "3 ranks under mp.spawn, plain print; rank 1 calls sys.exit(3) at step 4 without a message",
        "first_death",
        "silent_exit",
        faults=["exit:1:4"],
        why="rank 1 (pid {pid}) called sys.exit(3) at {when} and printed nothing; the parent reports exit code 3",
        needles=["terminated with exit code 3"],
    ),
    S(
        "mpspawn-sigterm-rank0-hf",
        "mp.spawn",
        "spawn",
        "2 ranks under mp.spawn, HF-like logging; the generator sends SIGTERM to rank 0 at step 4",
        "first_death",
        "killed",
        nproc=2,
        style="hf",
        external=("SIGTERM", 0, 4),
        why="the generator sent SIGTERM to rank 0 (pid {pid}) at {when}; no log line says who sent it",
        needles=["terminated with signal SIGTERM"],
    ),
    S(
        "mpspawn-worker-raise-rank1-logging",
        "mp.spawn",
        "spawn",
        "3 ranks under mp.spawn, 2 DataLoader workers each; a worker of rank 1 raises on a bad sample at step 3",
        "first_death",
        "python_exception",
        style="logging",
        faults=["worker-raise:1:3"],
        job=["--workers", "2"],
        why="a DataLoader worker of rank 1 raised ValueError at {when} (worker pid {pid}); rank 1 re-raised it",
        needles=["Caught ValueError in DataLoader worker process"],
    ),
    S(
        "mpspawn-straggler-rank2-print",
        "mp.spawn",
        "spawn",
        "3 ranks under mp.spawn, plain print, 20 s PG timeout; rank 2 sleeps 60 s at step 3, the others time out",
        "undetermined",
        "hang",
        faults=["straggle:2:3"],
        job=["--pg-timeout", "20"],
        truth_rank="none",
        sure="medium",
        why="the injector stopped rank 2 (pid {pid}) at step 3 at {when}; but mp.spawn shows only the first "
        "process to fail (a rank that timed out) and then SIGTERMs the other two, and bare prints carry no rank: "
        "nothing in the logs tells rank 2 from rank 0 (or 1)",
        notes="Ground truth by injection is rank 2 (see injected); the logs cannot tell it, so the truth is "
        "undetermined with the cause the logs do show (a collective timeout: someone hung).",
        needles=["Timed out"],
    ),
    S(
        "mpspawn-straggler-rank1-of2-logging",
        "mp.spawn",
        "spawn",
        "2 ranks under mp.spawn, logging, 20 s PG timeout; rank 1 sleeps 60 s at step 4, rank 0 times out",
        "hang",
        "hang",
        nproc=2,
        style="logging",
        faults=["straggle:1:4"],
        job=["--pg-timeout", "20"],
        sure="medium",
        why="rank 1 (pid {pid}) stopped progressing at step 4 at {when} (alive); process 0 timed out in all_reduce "
        "20 s later and the parent SIGTERMed process 1",
        needles=["Timed out"],
    ),
    S(
        "mpspawn-clean-loguru",
        "mp.spawn",
        "spawn",
        "3 ranks under mp.spawn, loguru-like format; trains 8 steps and finishes",
        "clean",
        None,
        style="loguru",
        job=["--steps", "8"],
        truth_rank="none",
        why="nothing was injected; every rank logged training done",
    ),
    S(
        "mpspawn-preinit-raise-rank1-print",
        "mp.spawn",
        "spawn",
        "3 ranks under mp.spawn, plain print; rank 1 raises FileNotFoundError before init_process_group",
        "first_death",
        "python_exception",
        faults=["preinit:1:0"],
        why="rank 1 (pid {pid}) raised FileNotFoundError at {when}, before init_process_group; the others waited "
        "in the rendezvous",
        needles=["FileNotFoundError"],
    ),
)

# ---- torchrun, one node ------------------------------------------------------------------------
TEE = ["--tee", "3"]
add(
    S(
        "torchrun-raise-rank1-tee-logging",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3, logging with asctime; rank 1 raises ValueError on a bad sample at step 4",
        "first_death",
        "python_exception",
        style="logging",
        largs=TEE,
        faults=["raise:1:4"],
        why="the dataset raised ValueError in rank 1 (pid {pid}) at {when}",
        needles=["ValueError: corrupt sample"],
    ),
    S(
        "torchrun-raise-rank2-notee-print",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun without --tee, plain print; rank 2 raises on a bad sample at step 5",
        "first_death",
        "python_exception",
        largs=[],
        faults=["raise:2:5"],
        why="the dataset raised ValueError in rank 2 (pid {pid}) at {when}; torchrun prefixes the traceback [rank2]:",
        needles=["[rank2]: ValueError"],
    ),
    S(
        "torchrun-segfault-rank0-nofh-hf",
        "torchrun",
        "torchrun",
        "2 ranks under torchrun --tee 3, HF-like logging; rank 0 segfaults at step 3 without faulthandler",
        "first_death",
        "segfault",
        nproc=2,
        style="hf",
        largs=TEE,
        faults=["segv:0:3"],
        why="the injector segfaulted rank 0 (pid {pid}) at {when}; torchrun reports Signal 11 (SIGSEGV)",
        needles=["SIGSEGV"],
    ),
    S(
        "torchrun-segfault-rank2-faulthandler-logdir",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --log-dir --tee 3 with @record, logging; rank 2 segfaults at step 4, faulthandler on",
        "first_death",
        "segfault",
        style="logging",
        largs=[*TEE, "--log-dir", "{logs}/torchrun"],
        faults=["segv:2:4"],
        job=["--faulthandler", "--record"],
        why="the injector segfaulted rank 2 (pid {pid}) at {when}; faulthandler's dump is in its stderr.log",
        needles=["Fatal Python error: Segmentation fault"],
    ),
    S(
        "torchrun-sigkill-oom-rank1-redirects",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --log-dir --redirects 3, loguru-like; rank 1 is SIGKILLed at step 5, kernel OOM log",
        "first_death",
        "host_oom",
        style="loguru",
        largs=["--log-dir", "{logs}/torchrun", "--redirects", "3"],
        external=("SIGKILL", 1, 5),
        dmesg="oom",
        why="the generator sent SIGKILL to rank 1 (pid {pid}) at {when}, standing in for the OOM-killer; dmesg.txt "
        "names that pid",
        notes="dmesg.txt is synthesised from the kernel's own format (mm/oom_kill.c) for the real pid at the real "
        "time of the kill; the kill itself was a real SIGKILL sent by the generator.",
        needles=["SIGKILL"],
    ),
    S(
        "torchrun-sigkill-nodmesg-rank0-print",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3, plain print; the generator SIGKILLs rank 0 at step 4, no kernel log",
        "first_death",
        "killed",
        largs=TEE,
        external=("SIGKILL", 0, 4),
        why="the generator sent SIGKILL to rank 0 (pid {pid}) at {when}; nothing says who",
        needles=["SIGKILL"],
    ),
    S(
        "torchrun-abort-rank1-rankfiles",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun, each rank's stdout+stderr redirected by the script to logs/rank_N.log "
        "(the console is not kept); rank 1 calls os.abort() at step 4",
        "undetermined",
        None,
        style="logging",
        console=None,
        faults=["abort:1:4"],
        job=["--redirect", "{logs}/rank_{{rank}}.log"],
        truth_rank="none",
        why="the injector called os.abort() in rank 1 (pid {pid}) at {when}, but torchrun SIGTERMed ranks 0 and 2 "
        "within a fraction of a second, before they noticed: all three rank files stop after step 3 with no "
        "error, so the kept logs cannot tell which rank died or why",
        notes="Only the per-rank files are kept; torchrun's console (which named SIGABRT and the pid) was dropped, "
        "as a user who only kept the rank files would have it. Ground truth by injection: rank 1, abort.",
        sure="medium",
    ),
    S(
        "torchrun-sigterm-rank2-tee-hf",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3, HF-like logging; the generator sends SIGTERM to rank 2 at step 5",
        "first_death",
        "killed",
        style="hf",
        largs=TEE,
        external=("SIGTERM", 2, 5),
        sure="medium",
        why="the generator sent SIGTERM to rank 2 (pid {pid}) at {when}; torchrun's own teardown SIGTERMs came later",
        needles=["SIGTERM"],
    ),
    S(
        "torchrun-exit3-rank1-tee-loguru",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3, loguru-like; rank 1 calls sys.exit(3) at step 4",
        "first_death",
        "silent_exit",
        style="loguru",
        largs=TEE,
        faults=["exit:1:4"],
        why="rank 1 (pid {pid}) called sys.exit(3) at {when}, printing nothing; torchrun reports exitcode 3",
        needles=["exitcode: 3"],
    ),
    S(
        "torchrun-worker-kill-rank0-logging",
        "torchrun",
        "torchrun",
        "2 ranks under torchrun --tee 3, 2 DataLoader workers each; a worker of rank 0 is SIGKILLed at step 3",
        "first_death",
        "killed",
        nproc=2,
        style="logging",
        largs=TEE,
        faults=["worker-kill:0:3"],
        job=["--workers", "2"],
        why="a DataLoader worker of rank 0 (worker pid {pid}) SIGKILLed itself at {when}; rank 0 then raised "
        "RuntimeError (worker killed by signal)",
        sure="medium",
        notes="The rank process itself died of a RuntimeError raised by the DataLoader; the root cause is the SIGKILL "
        "of its worker, from a sender the logs do not name.",
        needles=["is killed by signal"],
    ),
    S(
        "torchrun-worker-kill-oom-rank1-print",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3, 2 DataLoader workers each, plain print; a worker of rank 1 is SIGKILLed "
        "at step 4, kernel OOM log naming the worker's pid",
        "first_death",
        "host_oom",
        largs=TEE,
        faults=["worker-kill:1:4"],
        job=["--workers", "2"],
        dmesg="oom",
        why="a DataLoader worker of rank 1 (worker pid {pid}) was SIGKILLed at {when}; dmesg.txt names that pid",
        notes="dmesg.txt is synthesised from the kernel's own format (mm/oom_kill.c) for the worker's real pid at the "
        "real time of its SIGKILL (the worker killed itself with SIGKILL).",
        needles=["is killed by signal"],
    ),
    S(
        "torchrun-worker-raise-rank2-hf",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun (no tee), 2 DataLoader workers, HF-like; a worker of rank 2 raises at step 3",
        "first_death",
        "python_exception",
        style="hf",
        faults=["worker-raise:2:3"],
        job=["--workers", "2"],
        why="a DataLoader worker of rank 2 raised ValueError at {when}; rank 2 re-raised it",
        needles=["Caught ValueError in DataLoader worker process"],
    ),
    S(
        "torchrun-preinit-rank2-logging",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3, logging; rank 2 raises FileNotFoundError before init_process_group",
        "first_death",
        "python_exception",
        style="logging",
        largs=TEE,
        faults=["preinit:2:0"],
        why="rank 2 (pid {pid}) raised FileNotFoundError at {when} before init_process_group",
        needles=["FileNotFoundError"],
    ),
    S(
        "torchrun-leave-early-rank1-print",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3, plain print; rank 1 leaves the loop at step 4 and exits 0",
        "first_death",
        "silent_exit",
        largs=TEE,
        faults=["leave:1:4"],
        job=["--pg-timeout", "20"],
        why="rank 1 (pid {pid}) returned from main at {when} without a word and exited 0; the others waited in "
        "all_reduce",
        sure="medium",
    ),
    S(
        "torchrun-straggler-rank0-loguru",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3, loguru-like, 20 s PG timeout; rank 0 sleeps 60 s at step 4",
        "hang",
        "hang",
        style="loguru",
        largs=TEE,
        faults=["straggle:0:4"],
        job=["--pg-timeout", "20"],
        why="rank 0 (pid {pid}) stopped progressing at step 4 at {when} (alive, sleeping); ranks 1 and 2 timed out "
        "20 s later and torchrun tore rank 0 down",
        needles=["Timed out"],
    ),
    S(
        "torchrun-straggler-rank2-rank0only-logdir",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --log-dir (no tee), only rank 0 logs progress, 20 s PG timeout; rank 2 sleeps 60 s "
        "at step 3",
        "hang",
        "hang",
        style="rank0",
        largs=["--log-dir", "{logs}/torchrun"],
        faults=["straggle:2:3"],
        job=["--pg-timeout", "20"],
        sure="medium",
        why="rank 2 (pid {pid}) stopped progressing at step 3 at {when} (alive); ranks 0 and 1 timed out 20 s later",
    ),
    S(
        "torchrun-mismatch-rank1-logging",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3, logging, 20 s PG timeout; rank 1 calls broadcast while the others "
        "all_reduce at step 3",
        "hang",
        "hang",
        style="logging",
        largs=TEE,
        faults=["mismatch:1:3"],
        job=["--pg-timeout", "20"],
        sure="medium",
        why="rank 1 (pid {pid}) entered broadcast instead of all_reduce at {when}; the collectives never matched and "
        "ranks 0 and 2 timed out",
        notes="Mismatched collectives: the culprit is alive and inside a collective, only the wrong one.",
    ),
    S(
        "torchrun-two-deaths-rank2-then-rank0",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3 --monitor-interval 10, logging; rank 2 SIGKILLs itself at step 6, rank 0 "
        "raises FloatingPointError 1 s later",
        "first_death",
        "killed",
        style="logging",
        largs=[*TEE, "--monitor-interval", "10"],
        faults=["sigkill:2:6", "nan:0:6:1.0"],
        job=["--pg-timeout", "30"],
        why="the injector SIGKILLed rank 2 (pid {pid}) at {when}; rank 0's FloatingPointError came 1 s later "
        "(rank 1 lost its peer in between)",
        notes="Two real deaths a second apart; the earlier is the truth. inject.jsonl holds both times.",
        sure="medium",
    ),
    S(
        "torchrun-restart-raise-rank1",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --max-restarts 1 --tee 3, logging; rank 1 raises at step 3, the fault armed in every "
        "attempt",
        "first_death",
        "python_exception",
        style="logging",
        largs=[*TEE, "--max-restarts", "1"],
        faults=["raise:1:3"],
        why="rank 1 (pid {pid}) raised ValueError at {when} in attempt 0; torchrun restarted the group and attempt 1 "
        "failed again",
        needles=["ValueError: corrupt sample"],
    ),
    S(
        "torchrun-restart-raise-rank1-tee-logdir",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --max-restarts 1 --tee 3 --log-dir, logging; rank 1 raises at step 3, the fault armed "
        "in every attempt: every record is in the console and in its attempt's per-rank file",
        "first_death",
        "python_exception",
        style="logging",
        largs=[*TEE, "--max-restarts", "1", "--log-dir", "{logs}/torchrun"],
        faults=["raise:1:3"],
        why="rank 1 (pid {pid}) raised ValueError at {when} in attempt 0; torchrun restarted the group and attempt 1 "
        "failed again",
        needles=["ValueError: corrupt sample"],
    ),
    S(
        "torchrun-restart-segv-rank0-once",
        "torchrun",
        "torchrun",
        "2 ranks under torchrun --max-restarts 1 --tee 3, plain print; rank 0 segfaults at step 3, the fault armed "
        "in attempt 0 only",
        "first_death",
        "segfault",
        nproc=2,
        largs=[*TEE, "--max-restarts", "1"],
        faults=["segv:0:3"],
        job=["--fault-once"],
        sure="medium",
        why="rank 0 (pid {pid}) segfaulted at {when} in attempt 0; whatever attempt 1 did came after it",
        notes="In the recorded run attempt 1 did not train: gloo's connectFullMesh was refused (an address left from "
        "attempt 0), a real torch behaviour of restarts under --standalone.",
    ),
    S(
        "torchrun-clean-tee-hf",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3, HF-like logging; finishes",
        "clean",
        None,
        style="hf",
        largs=TEE,
        truth_rank="none",
        why="nothing was injected; training completed",
    ),
    S(
        "torchrun-clean-logdir-print",
        "torchrun",
        "torchrun",
        "2 ranks under torchrun --log-dir --redirects 3, plain print; finishes",
        "clean",
        None,
        nproc=2,
        largs=["--log-dir", "{logs}/torchrun", "--redirects", "3"],
        truth_rank="none",
        why="nothing was injected; every rank finished",
    ),
    S(
        "torchrun-sigkill-rank1-rankfile-tee",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3, logging to console and to logs/rank_N.log; the generator SIGKILLs rank 1 "
        "at step 4, no kernel log",
        "first_death",
        "killed",
        style="logging",
        largs=TEE,
        external=("SIGKILL", 1, 4),
        job=["--rank-file", "{logs}/rank_{{rank}}.log"],
        why="the generator sent SIGKILL to rank 1 (pid {pid}) at {when}",
        needles=["SIGKILL"],
    ),
)

# ---- two torchrun agents as two nodes --------------------------------------------------------
TWO = [
    "--nnodes",
    "2",
    "--nproc-per-node",
    "2",
    "--rdzv-backend",
    "c10d",
    "--rdzv-endpoint",
    "127.0.0.1:{port}",
    "--rdzv-id",
    "job42",
]
add(
    S(
        "torchrun2-raise-rank3-tee-logging",
        "torchrun-multinode",
        "torchrun2",
        "two torchrun agents (node01, node02) x 2 ranks, --tee 3, logging; global rank 3 (node02 local 1) raises at "
        "step 4; each agent's console is its own file",
        "first_death",
        "python_exception",
        nproc=4,
        style="logging",
        largs=TEE,
        faults=["raise:3:4"],
        why="the dataset raised ValueError in rank 3 (pid {pid}, node02) at {when}",
        needles=["ValueError"],
    ),
    S(
        "torchrun2-segfault-rank1-print",
        "torchrun-multinode",
        "torchrun2",
        "two torchrun agents x 2 ranks, no tee, plain print; global rank 1 (node01 local 1) segfaults at step 3",
        "first_death",
        "segfault",
        nproc=4,
        faults=["segv:1:3"],
        why="the injector segfaulted rank 1 (pid {pid}, node01) at {when}",
        needles=["SIGSEGV"],
    ),
    S(
        "torchrun2-sigkill-oom-rank2-loguru",
        "torchrun-multinode",
        "torchrun2",
        "two torchrun agents x 2 ranks, --tee 3, loguru-like; global rank 2 (node02 local 0) is SIGKILLed at step 4, "
        "kernel OOM log from node02",
        "first_death",
        "host_oom",
        nproc=4,
        style="loguru",
        largs=TEE,
        external=("SIGKILL", 2, 4),
        dmesg="oom",
        why="the generator sent SIGKILL to rank 2 (pid {pid}, node02) at {when}, standing in for the OOM-killer",
        notes="dmesg-node02.txt is synthesised from the kernel's own format (mm/oom_kill.c) for the real pid at the "
        "real time of the kill.",
        needles=["SIGKILL"],
    ),
    S(
        "torchrun2-straggler-rank0-hf",
        "torchrun-multinode",
        "torchrun2",
        "two torchrun agents x 2 ranks, --tee 3, HF-like, 20 s PG timeout; global rank 0 sleeps 60 s at step 3",
        "hang",
        "hang",
        nproc=4,
        style="hf",
        largs=TEE,
        faults=["straggle:0:3"],
        job=["--pg-timeout", "20"],
        sure="medium",
        why="rank 0 (pid {pid}, node01) stopped progressing at step 3 at {when}; the other ranks timed out 20 s later",
    ),
    S(
        "torchrun2-clean-logging",
        "torchrun-multinode",
        "torchrun2",
        "two torchrun agents x 2 ranks, --tee 3, logging; finishes",
        "clean",
        None,
        nproc=4,
        style="logging",
        largs=TEE,
        truth_rank="none",
        why="nothing was injected; both agents finished",
    ),
)

# ---- Open MPI mpirun --tag-output --------------------------------------------------------------
add(
    S(
        "mpirun-raise-rank1-logging",
        "mpirun",
        "mpirun",
        "3 ranks under mpirun --tag-output, logging; rank 1 raises ValueError at step 4",
        "first_death",
        "python_exception",
        style="logging",
        faults=["raise:1:4"],
        why="the dataset raised ValueError in rank 1 (pid {pid}) at {when}",
        needles=["[1,1]<stderr>:"],
    ),
    S(
        "mpirun-segfault-rank2-print",
        "mpirun",
        "mpirun",
        "3 ranks under mpirun --tag-output, plain print; rank 2 segfaults at step 3 without faulthandler",
        "first_death",
        "segfault",
        faults=["segv:2:3"],
        why="the injector segfaulted rank 2 (pid {pid}) at {when}; mpirun reports signal 11",
        needles=["Segmentation fault"],
    ),
    S(
        "mpirun-sigkill-rank0-loguru",
        "mpirun",
        "mpirun",
        "3 ranks under mpirun --tag-output, loguru-like; the generator SIGKILLs rank 0 at step 4, no kernel log",
        "first_death",
        "killed",
        style="loguru",
        external=("SIGKILL", 0, 4),
        why="the generator sent SIGKILL to rank 0 (pid {pid}) at {when}",
    ),
    S(
        "mpirun-exit3-rank2-hf",
        "mpirun",
        "mpirun",
        "3 ranks under mpirun --tag-output, HF-like; rank 2 calls sys.exit(3) at step 3",
        "first_death",
        "silent_exit",
        style="hf",
        faults=["exit:2:3"],
        why="rank 2 (pid {pid}) called sys.exit(3) at {when} without a word",
    ),
    S(
        "mpirun-straggler-rank1-logging",
        "mpirun",
        "mpirun",
        "3 ranks under mpirun --tag-output, logging, 20 s PG timeout; rank 1 sleeps 60 s at step 3",
        "hang",
        "hang",
        style="logging",
        faults=["straggle:1:3"],
        job=["--pg-timeout", "20"],
        why="rank 1 (pid {pid}) stopped progressing at step 3 at {when}; ranks 0 and 2 timed out 20 s later",
    ),
    S(
        "mpirun-clean-print",
        "mpirun",
        "mpirun",
        "3 ranks under mpirun --tag-output, plain print; finishes",
        "clean",
        None,
        truth_rank="none",
        why="nothing was injected; every rank finished",
    ),
)

# ---- SLURM srun --label ------------------------------------------------------------------------
add(
    S(
        "srun-raise-task2-logging",
        "srun",
        "srun",
        "srun -N1 -n3 --label on a one-node SLURM, logging; task 2 raises ValueError at step 4",
        "first_death",
        "python_exception",
        style="logging",
        faults=["raise:2:4"],
        why="the dataset raised ValueError in task 2 (pid {pid}) at {when}",
        needles=["2: "],
    ),
    S(
        "srun-segfault-task1-print",
        "srun",
        "srun",
        "srun -N1 -n3 --label, plain print; task 1 segfaults at step 3",
        "first_death",
        "segfault",
        faults=["segv:1:3"],
        why="the injector segfaulted task 1 (pid {pid}) at {when}",
    ),
    S(
        "srun-sigkill-oom-task0-loguru",
        "srun",
        "srun",
        "srun -N1 -n3 --label, loguru-like; task 0 is SIGKILLed at step 4, kernel OOM log",
        "first_death",
        "host_oom",
        style="loguru",
        external=("SIGKILL", 0, 4),
        dmesg="oom",
        why="the generator sent SIGKILL to task 0 (pid {pid}) at {when}, standing in for the OOM-killer",
        notes="dmesg.txt is synthesised from the kernel's own format (mm/oom_kill.c) for the real pid at the real "
        "time of the kill.",
    ),
    S(
        "srun-straggler-task2-hf",
        "srun",
        "srun",
        "srun -N1 -n3 --label, HF-like, 20 s PG timeout; task 2 sleeps 60 s at step 3",
        "hang",
        "hang",
        style="hf",
        faults=["straggle:2:3"],
        job=["--pg-timeout", "20"],
        sure="medium",
        why="task 2 (pid {pid}) stopped progressing at step 3 at {when}; the others timed out 20 s later",
    ),
    S(
        "srun-two-deaths-task0-then-task2-print",
        "srun",
        "srun",
        "srun -N1 -n3 --label, plain print; task 0 segfaults at step 4, task 2 raises FloatingPointError 1 s later "
        "(srun does not tear the other tasks down)",
        "first_death",
        "segfault",
        faults=["segv:0:4", "nan:2:4:1.0"],
        sure="medium",
        why="the injector segfaulted task 0 (pid {pid}) at {when}; task 2's FloatingPointError came 1 s later "
        "(task 1 lost its peer in between)",
        notes="Two real deaths a second apart; the earlier is the truth. inject.jsonl holds both times.",
    ),
    S(
        "srun-clean-logging",
        "srun",
        "srun",
        "srun -N1 -n3 --label, logging; finishes",
        "clean",
        None,
        style="logging",
        truth_rank="none",
        why="nothing was injected; every task finished",
    ),
)

ACC = ["--framework", "accelerate"]
# ---- Lightning and Accelerate ------------------------------------------------------------------
add(
    S(
        "lightning-raise-rank1",
        "lightning",
        "lightning",
        "Lightning Trainer(strategy='ddp', accelerator='cpu', devices=3); rank 1 raises ValueError in training_step 4",
        "first_death",
        "python_exception",
        faults=["raise:1:4"],
        why="training_step raised ValueError in rank 1 (pid {pid}) at {when}",
        needles=["ValueError"],
    ),
    S(
        "lightning-segfault-rank2",
        "lightning",
        "lightning",
        "Lightning DDP on CPU, 3 devices; rank 2 segfaults in training_step 3",
        "first_death",
        "silent_exit",
        faults=["segv:2:3"],
        sure="medium",
        why="the injector segfaulted rank 2 (pid {pid}) at {when}; nothing in the console records the signal "
        "(Lightning does not report a child's death): rank 2 alone stops logging and the others lose their peer",
        notes="Injected cause: SIGSEGV. The kept logs show only that rank 2 ended without a word, so the cause that "
        "a reader can name is silent_exit.",
    ),
    S(
        "lightning-sigkill-rank0-nodmesg",
        "lightning",
        "lightning",
        "Lightning DDP on CPU, 2 devices; rank 0 SIGKILLs itself in training_step 3, no kernel log",
        "first_death",
        "silent_exit",
        nproc=2,
        faults=["sigkill:0:3"],
        sure="medium",
        why="rank 0 (pid {pid}, the launching process) SIGKILLed itself at {when}; only the shell saw its status 137, "
        "the console shows rank 0 stop and rank 1 lose its peer",
        notes="Injected cause: SIGKILL. Nothing in the kept console names the signal, so the cause a reader can name "
        "is silent_exit.",
    ),
    S(
        "lightning-clean",
        "lightning",
        "lightning",
        "Lightning DDP on CPU, 2 devices; trains and finishes",
        "clean",
        None,
        nproc=2,
        truth_rank="none",
        why="nothing was injected; fit finished",
    ),
    S(
        "accelerate-raise-rank1",
        "accelerate",
        "accelerate",
        "accelerate launch --multi_gpu (on CPU) --num_processes 3 (torchrun underneath), logging; "
        "rank 1 raises at step 4",
        "first_death",
        "python_exception",
        style="logging",
        faults=["raise:1:4"],
        job=ACC,
        why="the dataset raised ValueError in rank 1 (pid {pid}) at {when}",
        needles=["ValueError"],
    ),
    S(
        "accelerate-abort-rank0-loguru",
        "accelerate",
        "accelerate",
        "accelerate launch --multi_gpu (on CPU) --num_processes 2, loguru-like; rank 0 calls os.abort() at step 3",
        "first_death",
        "abort",
        nproc=2,
        style="loguru",
        faults=["abort:0:3"],
        job=ACC,
        why="the injector called os.abort() in rank 0 (pid {pid}) at {when}",
    ),
    S(
        "accelerate-clean-hf",
        "accelerate",
        "accelerate",
        "accelerate launch --multi_gpu (on CPU) --num_processes 2, HF-like; finishes",
        "clean",
        None,
        nproc=2,
        style="hf",
        job=ACC,
        truth_rank="none",
        why="nothing was injected; training completed",
    ),
)

# ---- more Lightning and Accelerate: non-zero ranks, every way to die -----------------------------------------
OOM_NOTE = (
    "dmesg.txt is synthesised from the kernel's own format (mm/oom_kill.c) for the real pid at the real time of the "
    "kill; the kill itself was a real SIGKILL sent by the generator."
)
add(
    S(
        "lightning-raise-rank2-logging",
        "lightning",
        "lightning",
        "Lightning DDP on CPU, 3 devices, Python logging with Lightning's own [rank: N] prefixes (seed_everything, "
        "rank_prefixed_message every log_every_n_steps=2 steps); rank 2 raises ValueError in training_step 5",
        "first_death",
        "python_exception",
        style="logging",
        faults=["raise:2:5"],
        why="training_step raised ValueError in rank 2 (pid {pid}) at {when}; its traceback is the one prefixed "
        "[rank2]:, the others end in Connection closed by peer",
        needles=["[rank2]: ValueError: corrupt sample", "[rank: 2] Seed set to 1234"],
    ),
    S(
        "lightning-segfault-rank1-faulthandler-logging",
        "lightning",
        "lightning",
        "Lightning DDP on CPU, 3 devices, logging with [rank: N] prefixes, PYTHONFAULTHANDLER=1; rank 1 segfaults in "
        "training_step 4",
        "first_death",
        "segfault",
        style="logging",
        faults=["segv:1:4"],
        env={"PYTHONFAULTHANDLER": "1"},
        why="the injector segfaulted rank 1 (pid {pid}) at {when}; faulthandler printed Fatal Python error: "
        "Segmentation fault (no rank on it), ranks 0 and 2 print [rank0]:/[rank2]: tracebacks (Connection closed by "
        "peer), so the dump is rank 1's",
        needles=["Fatal Python error: Segmentation fault"],
    ),
    S(
        "lightning-sigkill-oom-rank1-logging",
        "lightning",
        "lightning",
        "Lightning DDP on CPU, 3 devices, logging with [rank: N] prefixes; rank 1 is SIGKILLed from outside in "
        "training_step 4, kernel OOM log",
        "first_death",
        "host_oom",
        style="logging",
        external=("SIGKILL", 1, 4),
        dmesg="oom",
        why="the generator sent SIGKILL to rank 1 (pid {pid}) at {when}, standing in for the OOM-killer; dmesg.txt "
        "names that pid, which the job logged as [rank: 1] pid {pid}",
        notes=OOM_NOTE + " Lightning itself prints nothing about the dead rank; the link is the job's own pid line.",
        needles=["[rank: 1] pid {pid}"],
    ),
    S(
        "lightning-exit3-rank2-print",
        "lightning",
        "lightning",
        "Lightning DDP on CPU, 3 devices, plain print; rank 2 calls sys.exit(3) in training_step 4 without a message",
        "first_death",
        "silent_exit",
        faults=["exit:2:4"],
        sure="medium",
        why="rank 2 (pid {pid}) called sys.exit(3) at {when} and printed nothing; ranks 0 and 1 print [rank0]:/"
        "[rank1]: tracebacks (Connection closed by peer) and rank 2's '[rank 2] step' lines just stop",
    ),
    S(
        "lightning-straggler-rank1-logging",
        "lightning",
        "lightning",
        "Lightning DDP on CPU, 3 devices, logging with [rank: N] prefixes, 20 s PG timeout; rank 1 sleeps 35 s in "
        "training_step 4, the others time out",
        "hang",
        "hang",
        style="logging",
        faults=["straggle:1:4"],
        job=["--pg-timeout", "20", "--straggle-s", "35", "--log-every", "1"],
        why="rank 1 (pid {pid}) stopped progressing in training_step 4 at {when} (alive, sleeping); ranks 0 and 2 "
        "logged step 4 and timed out 20 s later ([rank0]:/[rank2]: ... Timed out waiting 20000ms), rank 1 logged "
        "its step 4 35 s after the others and only then failed (Connection closed by peer): Lightning's main "
        "process (rank 0) had exited, its child rank 1 ran on",
        needles=["Timed out"],
    ),
    S(
        "lightning-worker-kill-rank2-print",
        "lightning",
        "lightning",
        "Lightning DDP on CPU, 3 devices, 2 DataLoader workers per rank, plain print; a DataLoader worker of rank 2 "
        "is SIGKILLed (by itself) while prefetching batch 7, no kernel log",
        "first_death",
        "killed",
        faults=["worker-kill:2:7"],
        job=["--workers", "2"],
        why="a DataLoader worker of rank 2 (worker pid {pid}) SIGKILLed itself at {when}; rank 2 died of "
        "[rank2]: RuntimeError: DataLoader worker (pid {pid}) is killed by signal: Killed.",
        needles=["is killed by signal: Killed"],
    ),
    S(
        "lightning-preinit-raise-rank2-print",
        "lightning",
        "lightning",
        "Lightning DDP on CPU, 3 devices, plain print; the re-executed rank 2 raises FileNotFoundError before it "
        "builds its Trainer, while rank 0 waits for the process group",
        "first_death",
        "python_exception",
        faults=["preinit:2:0"],
        job=["--pg-timeout", "20"],
        why="rank 2 (pid {pid}) raised FileNotFoundError at {when}, before joining the process group; Lightning's "
        "child-process observer in rank 0 then logged [rank: 2] Child process with PID {pid} terminated with code 1 "
        "and SIGKILLed the rest",
        needles=["[rank: 2] Child process with PID {pid} terminated with code 1", "FileNotFoundError"],
    ),
    S(
        "lightning-preinit-sigkill-oom-rank1-logging",
        "lightning",
        "lightning",
        "Lightning DDP on CPU, 3 devices, logging; the re-executed rank 1 is SIGKILLed from outside before it builds "
        "its Trainer (while loading data), rank 0 waits for the process group; kernel OOM log",
        "first_death",
        "host_oom",
        style="logging",
        external=("SIGKILL", 1, 0),
        dmesg="oom",
        job=["--pg-timeout", "20"],
        why="the generator sent SIGKILL to rank 1 (pid {pid}) at {when}, standing in for the OOM-killer; Lightning's "
        "child-process observer logged [rank: 1] Child process with PID {pid} terminated with code -9 and dmesg.txt "
        "names that pid",
        notes=OOM_NOTE,
        needles=["[rank: 1] Child process with PID {pid} terminated with code -9"],
    ),
    S(
        "accelerate-raise-rank2-tee-logdir-hf",
        "accelerate",
        "accelerate",
        "accelerate launch --multi_gpu (on CPU) --num_processes 3 --tee 3 --log_dir /job/logs/accelerate, HF-like; "
        "rank 2 raises ValueError on a bad sample at step 5",
        "first_death",
        "python_exception",
        style="hf",
        largs=["--tee", "3", "--log_dir", "{logs}/accelerate"],
        faults=["raise:2:5"],
        job=ACC,
        why="the dataset raised ValueError in rank 2 (pid {pid}) at {when}",
        needles=["ValueError: corrupt sample"],
    ),
    S(
        "accelerate-segfault-rank1-print",
        "accelerate",
        "accelerate",
        "accelerate launch --multi_gpu (on CPU) --num_processes 3, plain print; rank 1 segfaults at step 4 without "
        "faulthandler",
        "first_death",
        "segfault",
        faults=["segv:1:4"],
        job=ACC,
        why="the injector segfaulted rank 1 (pid {pid}) at {when}; torchrun under accelerate reports Signal 11 "
        "(SIGSEGV) for local_rank 1",
        needles=["SIGSEGV"],
    ),
    S(
        "accelerate-sigkill-oom-rank2-logging",
        "accelerate",
        "accelerate",
        "accelerate launch --multi_gpu (on CPU) --num_processes 3, logging; rank 2 is SIGKILLed from outside at "
        "step 5, kernel OOM log",
        "first_death",
        "host_oom",
        style="logging",
        external=("SIGKILL", 2, 5),
        dmesg="oom",
        job=ACC,
        why="the generator sent SIGKILL to rank 2 (pid {pid}) at {when}, standing in for the OOM-killer; dmesg.txt "
        "names that pid",
        notes=OOM_NOTE,
        needles=["SIGKILL"],
    ),
    S(
        "accelerate-straggler-rank1-logging",
        "accelerate",
        "accelerate",
        "accelerate launch --multi_gpu (on CPU) --num_processes 3, logging, 20 s PG timeout; rank 1 sleeps 60 s "
        "at step 4, the others time out",
        "hang",
        "hang",
        style="logging",
        faults=["straggle:1:4"],
        job=[*ACC, "--pg-timeout", "20"],
        sure="medium",
        why="rank 1 (pid {pid}) stopped progressing at step 4 at {when} (alive, sleeping); ranks 0 and 2 timed out "
        "20 s later in backward, DDP's gradient all-reduce ([rank0]:/[rank2]: ... Timed out waiting 20000ms), rank 1 "
        "printed no error and torchrun SIGTERMed it",
        needles=["Timed out"],
    ),
    S(
        "accelerate-sigkill-rank1-tee-print",
        "accelerate",
        "accelerate",
        "accelerate launch --multi_gpu (on CPU) --num_processes 3 --tee 3, plain print; the generator SIGKILLs "
        "rank 1 at step 4, no kernel log",
        "first_death",
        "killed",
        largs=["--tee", "3"],
        external=("SIGKILL", 1, 4),
        job=ACC,
        why="the generator sent SIGKILL to rank 1 (pid {pid}) at {when}; nothing says who; torchrun under "
        "accelerate reports Signal 9 (SIGKILL) for local_rank 1",
        needles=["SIGKILL"],
    ),
)

# accelerate.notebook_launcher run as a script (torch elastic's agent in the launching process, ranks forked)
add(
    S(
        "accelerate-notebook-raise-rank1-print",
        "accelerate",
        "notebook",
        "accelerate.notebook_launcher(train, num_processes=3) on CPU (torch elastic in-process, fork), plain print; "
        "rank 1 raises ValueError on a bad sample at step 4",
        "first_death",
        "python_exception",
        faults=["raise:1:4"],
        why="the dataset raised ValueError in rank 1 (pid {pid}) at {when}; torch elastic in the launching process "
        "logs Process 1 terminated with the following error and names rank 1 as the root cause",
        needles=["ValueError: corrupt sample", "Launching training on 3"],
    ),
    S(
        "accelerate-notebook-segfault-rank2-logging",
        "accelerate",
        "notebook",
        "accelerate.notebook_launcher(train, num_processes=3) on CPU, logging; rank 2 segfaults at step 3 (the job "
        "does not enable faulthandler; torch elastic's error handler in the forked rank does)",
        "first_death",
        "segfault",
        style="logging",
        faults=["segv:2:3"],
        why="the injector segfaulted rank 2 (pid {pid}) at {when}",
        needles=["SIGSEGV"],
    ),
)

# ---- more layouts: Ctrl-C on a hang, launcher-side rank filters, per-rank files from the launcher -----
add(
    S(
        "torchrun-hang-ctrlc-rank2-logging",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3, logging, 300 s PG timeout; rank 2 stops at step 3 (sleeps), the user presses "
        "Ctrl-C 8 s later",
        "hang",
        "hang",
        style="logging",
        largs=TEE,
        faults=["straggle:2:3"],
        job=["--pg-timeout", "300", "--straggle-s", "600"],
        interrupt=8.0,
        sure="medium",
        why="rank 2 (pid {pid}) stopped progressing at step 3 at {when}; 8 s later SIGINT reached the whole process "
        "group: the tracebacks show ranks 0 and 1 inside the collective and rank 2 in time.sleep",
        notes="No collective timed out: the job was interrupted by hand (SIGINT to the launcher's process group, as "
        "Ctrl-C in a terminal does).",
    ),
    S(
        "mpspawn-hang-ctrlc-rank1-print",
        "mp.spawn",
        "spawn",
        "3 ranks under mp.spawn, plain print, 300 s PG timeout; rank 1 stops at step 4 (sleeps), the user presses "
        "Ctrl-C 8 s later",
        "undetermined",
        None,
        faults=["straggle:1:4"],
        job=["--pg-timeout", "300", "--straggle-s", "600"],
        interrupt=8.0,
        sure="medium",
        truth_rank="none",
        why="the injector stopped rank 1 (pid {pid}) at step 4 at {when}; 8 s later SIGINT reached every process, "
        "but only the parent printed a KeyboardInterrupt traceback: the untimestamped, unattributed prints end "
        "at step 3 for all ranks, so nothing says which rank hung",
        notes="No collective timed out: the job was interrupted by hand (SIGINT to the process group). Ground truth by "
        "injection: rank 1 hung.",
    ),
    S(
        "torchrun-filter0-segfault-rank2",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3 --local-ranks-filter 0 (only rank 0's output reaches the console), logging; "
        "rank 2 segfaults at step 4",
        "first_death",
        "segfault",
        style="logging",
        largs=[*TEE, "--local-ranks-filter", "0"],
        faults=["segv:2:4"],
        why="the injector segfaulted rank 2 (pid {pid}) at {when}; only torchrun's own lines name it",
        needles=["SIGSEGV"],
    ),
    S(
        "mpirun-outfile-abort-rank1-logging",
        "mpirun",
        "mpirun",
        "3 ranks under mpirun --tag-output --output-filename logs/mpi (per-rank stdout/stderr files) plus the console; "
        "rank 1 calls os.abort() at step 4",
        "first_death",
        "abort",
        style="logging",
        largs=["--output-filename", "{logs}/mpi"],
        faults=["abort:1:4"],
        why="the injector called os.abort() in rank 1 (pid {pid}) at {when}; mpirun reports signal 6",
    ),
    S(
        "mpirun-outfile-worker-raise-rank2-hf",
        "mpirun",
        "mpirun",
        "3 ranks under mpirun --output-filename logs/mpi only (the console is not kept), HF-like, 2 DataLoader "
        "workers; a worker of rank 2 raises at step 3",
        "first_death",
        "python_exception",
        style="hf",
        console=None,
        largs=["--output-filename", "{logs}/mpi"],
        faults=["worker-raise:2:3"],
        job=["--workers", "2"],
        why="a DataLoader worker of rank 2 raised ValueError at {when}; rank 2 re-raised it",
    ),
    S(
        "sbatch-raise-task1-loguru",
        "srun",
        "sbatch",
        "sbatch -N1 -n3 on the one-node SLURM, the batch step runs srun --label; only slurm-<jobid>.out is kept; "
        "task 1 raises ValueError at step 4",
        "first_death",
        "python_exception",
        style="loguru",
        console=None,
        faults=["raise:1:4"],
        why="the dataset raised ValueError in task 1 (pid {pid}) at {when}",
    ),
    S(
        "sbatch-segfault-task2-faulthandler-print",
        "srun",
        "sbatch",
        "sbatch + srun --label, only slurm-<jobid>.out kept, plain print, faulthandler on; task 2 segfaults at step 3",
        "first_death",
        "segfault",
        console=None,
        faults=["segv:2:3"],
        job=["--faulthandler"],
        why="the injector segfaulted task 2 (pid {pid}) at {when}; faulthandler's dump and srun's 'Segmentation "
        "fault' are in slurm-<jobid>.out",
    ),
    S(
        "sbatch-clean-hf",
        "srun",
        "sbatch",
        "sbatch + srun --label, only slurm-<jobid>.out kept, HF-like; finishes",
        "clean",
        None,
        style="hf",
        console=None,
        truth_rank="none",
        why="nothing was injected; every task finished",
    ),
)

# ---- real kernel logs: the kernel here prints "comm[pid]: segfault at ..." for an unhandled SIGSEGV -------
KREAL = "dmesg.txt holds the kernel's own lines printed during the run (dmesg -T on this machine), not synthesised."
add(
    S(
        "mpspawn-segfault-rank0-kernlog-logging",
        "mp.spawn",
        "spawn",
        "3 ranks under mp.spawn, logging; rank 0 segfaults at step 5, no faulthandler; the real kernel log is kept",
        "first_death",
        "segfault",
        style="logging",
        faults=["segv:0:5"],
        dmesg="real",
        notes=KREAL,
        why="the injector segfaulted rank 0 (pid {pid}) at {when}; the kernel logged the segfault of that pid",
    ),
    S(
        "torchrun-segfault-rank1-kernlog-redirects",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --log-dir --redirects 3 (console and per-rank files), print; rank 1 segfaults at "
        "step 4; the real kernel log is kept",
        "first_death",
        "segfault",
        largs=["--log-dir", "{logs}/torchrun", "--redirects", "3"],
        faults=["segv:1:4"],
        dmesg="real",
        notes=KREAL,
        why="the injector segfaulted rank 1 (pid {pid}) at {when}; torchrun and the kernel both name that pid",
    ),
    S(
        "mpirun-segfault-rank0-kernlog-hf",
        "mpirun",
        "mpirun",
        "3 ranks under mpirun --tag-output, HF-like; rank 0 segfaults at step 4; the real kernel log is kept",
        "first_death",
        "segfault",
        style="hf",
        faults=["segv:0:4"],
        dmesg="real",
        notes=KREAL,
        why="the injector segfaulted rank 0 (pid {pid}) at {when}; mpirun reports signal 11 (with PID 0), the kernel "
        "log names the real pid",
    ),
    S(
        "torchrun-worker-segv-rank2-loguru",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3, loguru-like, 2 DataLoader workers; a worker of rank 2 segfaults at step 3",
        "first_death",
        "segfault",
        style="loguru",
        largs=TEE,
        faults=["worker-segv:2:3"],
        job=["--workers", "2"],
        notes="No kernel log: the DataLoader worker's own SIGSEGV handler prints 'ERROR: Unexpected segmentation "
        "fault encountered in worker.' and re-raises the signal, so the kernel prints no 'segfault at' line "
        "(checked on this machine).",
        why="a DataLoader worker of rank 2 (worker pid {pid}) segfaulted at {when}; rank 2 then raised RuntimeError "
        "(worker killed by signal: Segmentation fault)",
        needles=["Segmentation fault"],
    ),
)

# ---- DeepSpeed's launcher (deepspeed CLI: runner.py -> deepspeed.launcher.launch -> one python per rank) -------
# No GPU here: DS_ACCELERATOR=cpu and --num_gpus N give N local slots; launch.py sets RANK/LOCAL_RANK/WORLD_SIZE/
# MASTER_ADDR/MASTER_PORT as torchrun does and passes --local_rank=N; the job uses gloo, not deepspeed.initialize.
DSENV = {"DS_ACCELERATOR": "cpu"}
add(
    S(
        "deepspeed-raise-rank1-logging",
        "deepspeed",
        "deepspeed",
        "deepspeed --num_gpus 3 (DS_ACCELERATOR=cpu, gloo), logging with asctime; rank 1 raises ValueError on a bad "
        "sample at step 4",
        "first_death",
        "python_exception",
        style="logging",
        faults=["raise:1:4"],
        env=DSENV,
        why="the dataset raised ValueError in rank 1 (pid {pid}) at {when}; its traceback is prefixed [rank1]:",
        needles=["[rank1]: ValueError", "exits with return code"],
    ),
    S(
        "deepspeed-segfault-rank2-print",
        "deepspeed",
        "deepspeed",
        "deepspeed --num_gpus 3 (cpu, gloo), plain print; rank 2 segfaults at step 3 without faulthandler",
        "first_death",
        "segfault",
        faults=["segv:2:3"],
        env=DSENV,
        why="the injector segfaulted rank 2 (pid {pid}) at {when}; launch.py says only 'exits with return code = "
        "-11' (signal 11) after the command line of the last rank it spawned (--local_rank=2 whichever rank failed); "
        "ranks 0 and 1 each printed a [rankN]: RuntimeError (gloo: connection closed by peer), which exits 1, and "
        "rank 2 alone printed nothing, so the -11 is rank 2's",
        needles=["exits with return code = -11", "[rank0]: RuntimeError", "[rank1]: RuntimeError"],
    ),
    S(
        "deepspeed-sigkill-oom-rank0-hf",
        "deepspeed",
        "deepspeed",
        "deepspeed --num_gpus 3 (cpu, gloo), HF-like logging; rank 0 is SIGKILLed from outside at step 4, kernel OOM "
        "log",
        "first_death",
        "host_oom",
        style="hf",
        external=("SIGKILL", 0, 4),
        dmesg="oom",
        env=DSENV,
        why="the generator sent SIGKILL to rank 0 (pid {pid}) at {when}, standing in for the OOM-killer; dmesg.txt "
        "names that pid, which launch.py's 'process {pid} spawned with command: [... --local_rank=0 ...]' ties to "
        "rank 0",
        notes="dmesg.txt is synthesised from the kernel's own format (mm/oom_kill.c) for the real pid at the real "
        "time of the kill; the kill itself was a real SIGKILL sent by the generator.",
        needles=["exits with return code"],
    ),
    S(
        "deepspeed-exit3-rank1-loguru",
        "deepspeed",
        "deepspeed",
        "deepspeed --num_gpus 3 (cpu, gloo), loguru-like; rank 1 calls sys.exit(3) at step 4 without a message",
        "first_death",
        "silent_exit",
        style="loguru",
        faults=["exit:1:4"],
        env=DSENV,
        sure="medium",
        why="rank 1 (pid {pid}) called sys.exit(3) at {when} and printed nothing; launch.py's 'exits with return code "
        "= 3' follows the command line of the last rank spawned (--local_rank=2), but rank 2, like rank 0, printed "
        "a [rankN]: RuntimeError (gloo: connection closed by peer), which exits 1: the 3 is the silent rank 1's",
        needles=["exits with return code = 3", "[rank0]: RuntimeError", "[rank2]: RuntimeError"],
    ),
    S(
        "deepspeed-straggler-rank2-logging",
        "deepspeed",
        "deepspeed",
        "deepspeed --num_gpus 3 (cpu, gloo), logging, 20 s PG timeout; rank 2 sleeps 60 s at step 3, the others time "
        "out",
        "hang",
        "hang",
        style="logging",
        faults=["straggle:2:3"],
        job=["--pg-timeout", "20"],
        env=DSENV,
        why="rank 2 (pid {pid}) stopped progressing at step 3 at {when} (alive, sleeping); ranks 0 and 1 timed out "
        "20 s later and launch.py killed rank 2",
        needles=["Timed out"],
    ),
    S(
        "deepspeed-eachranklog-segfault-rank1-faulthandler",
        "deepspeed",
        "deepspeed",
        "deepspeed --num_gpus 3 --enable_each_rank_log logs/ranks (each rank's stdout+stderr in its own "
        "<time>_rankN.log, the console keeps only the launcher's lines), logging, faulthandler on; rank 1 segfaults "
        "at step 4",
        "first_death",
        "segfault",
        style="logging",
        largs=["--enable_each_rank_log", "{logs}/ranks"],
        faults=["segv:1:4"],
        job=["--faulthandler"],
        env=DSENV,
        why="the injector segfaulted rank 1 (pid {pid}) at {when}; faulthandler's 'Fatal Python error: Segmentation "
        "fault' is in the file named _rank1.log",
        needles=["Fatal Python error: Segmentation fault", "exits with return code"],
    ),
    S(
        "deepspeed-clean-hf",
        "deepspeed",
        "deepspeed",
        "deepspeed --num_gpus 2 (cpu, gloo), HF-like logging; finishes",
        "clean",
        None,
        nproc=2,
        style="hf",
        env=DSENV,
        truth_rank="none",
        why="nothing was injected; training completed and launch.py reports every process exiting successfully",
    ),
)

# ---- MPICH (Debian's mpich, Hydra: mpiexec.mpich); ranks read PMI_RANK / PMI_SIZE (--rank-from mpi) -----------
add(
    S(
        "mpich-raise-rank1-logging",
        "mpich",
        "mpich",
        "3 ranks under MPICH's mpiexec (Hydra, no rank labels), logging with asctime; rank 1 raises ValueError at "
        "step 4",
        "first_death",
        "python_exception",
        style="logging",
        faults=["raise:1:4"],
        why="the dataset raised ValueError in rank 1 (pid {pid}) at {when}; its traceback is prefixed [rank1]:",
        needles=["[rank1]: ValueError"],
    ),
    S(
        "mpich-segfault-rank2-print",
        "mpich",
        "mpich",
        "3 ranks under MPICH's mpiexec (no rank labels), plain print, no faulthandler; rank 2 segfaults at step 3",
        "undetermined",
        "segfault",
        faults=["segv:2:3"],
        truth_rank="none",
        sure="medium",
        why="the injector segfaulted rank 2 (pid {pid}) at {when}; Hydra then SIGKILLed the other two at once (they "
        "printed nothing) and its banner names one of them: the PID it shows is a survivor's (the one whose 'worker "
        "N/3 up (pid ...)' line matches) with EXIT CODE: 9, a kill, while the exit string says Segmentation fault "
        "(signal 11) (Hydra ORs every process's wait status into it); the bare prints carry no rank and all ranks "
        "stop at the same step, so the logs show a segfault but not whose",
        notes="Ground truth by injection: rank 2 segfaulted (see injected). In the run kept the banner's PID is a "
        "rank that Hydra killed, not the rank that crashed, so the truth is undetermined with cause segfault.",
        needles=["BAD TERMINATION", "signal 11"],
        absent=["PID {pid} RUNNING AT"],  # the truth above holds only when the banner names a survivor
    ),
    S(
        "mpich-segfault-rank1-label-faulthandler-hf",
        "mpich",
        "mpich",
        "3 ranks under MPICH's mpiexec -l (each line prefixed [rank]), HF-like, faulthandler on; rank 1 segfaults "
        "at step 4",
        "first_death",
        "segfault",
        style="hf",
        largs=["-l"],
        faults=["segv:1:4"],
        job=["--faulthandler"],
        why="the injector segfaulted rank 1 (pid {pid}) at {when}; faulthandler's 'Fatal Python error: Segmentation "
        "fault' dump carries Hydra's [1] prefix (the banner's PID, with EXIT CODE: 9, is another rank, killed by "
        "Hydra's cleanup)",
        needles=["Fatal Python error: Segmentation fault", "BAD TERMINATION"],
    ),
    S(
        "mpich-sigkill-oom-rank1-loguru",
        "mpich",
        "mpich",
        "3 ranks under MPICH's mpiexec (no rank labels), loguru-like; rank 1 is SIGKILLed from outside at step 4, "
        "kernel OOM log",
        "first_death",
        "host_oom",
        style="loguru",
        external=("SIGKILL", 1, 4),
        dmesg="oom",
        why="the generator sent SIGKILL to rank 1 (pid {pid}) at {when}, standing in for the OOM-killer; dmesg.txt "
        "names that pid, which rank 1's first line ('rank 1/3 pid {pid}') ties to rank 1; Hydra's banner names "
        "another rank's PID (killed in its cleanup, EXIT CODE: 9 like the victim)",
        notes="dmesg.txt is synthesised from the kernel's own format (mm/oom_kill.c) for the real pid at the real "
        "time of the kill; the kill itself was a real SIGKILL sent by the generator.",
        needles=["BAD TERMINATION"],
    ),
    S(
        "mpich-exit3-rank2-hf",
        "mpich",
        "mpich",
        "3 ranks under MPICH's mpiexec -l, HF-like; rank 2 calls sys.exit(3) at step 3 without a message",
        "first_death",
        "silent_exit",
        style="hf",
        largs=["-l"],
        faults=["exit:2:3"],
        sure="medium",
        why="rank 2 (pid {pid}) called sys.exit(3) at {when} and printed nothing; mpiexec printed no banner and no "
        "exit code either (it only exited 3): ranks 0 and 1 each printed a [rankN]: RuntimeError (gloo: connection "
        "closed by peer), rank 2 alone ended without a word",
        needles=["[0] [rank0]: RuntimeError", "[1] [rank1]: RuntimeError"],
        absent=["BAD TERMINATION"],
    ),
    S(
        "mpich-straggler-rank1-logging",
        "mpich",
        "mpich",
        "3 ranks under MPICH's mpiexec -l, logging, 20 s PG timeout; rank 1 sleeps 60 s at step 3, the others time out",
        "hang",
        "hang",
        style="logging",
        largs=["-l"],
        faults=["straggle:1:3"],
        job=["--pg-timeout", "20"],
        why="rank 1 (pid {pid}) stopped progressing at step 3 at {when} (alive, sleeping); ranks 0 and 2 timed out "
        "20 s later ([0] [rank0]: / [2] [rank2]: ... Timed out waiting 20000ms) and exited 1, which Hydra does not "
        "treat as a reason to kill the rest: rank 1 woke after its 60 s sleep and only then failed, last, with "
        "Connection closed by peer",
        needles=["Timed out"],
        absent=["BAD TERMINATION"],
    ),
    S(
        "mpich-clean-print",
        "mpich",
        "mpich",
        "3 ranks under MPICH's mpiexec (no rank labels), plain print; finishes",
        "clean",
        None,
        truth_rank="none",
        why="nothing was injected; every rank finished and mpiexec exited 0",
    ),
)

KMEMCG = (
    "A real OOM kill: the victim moved itself into a memory cgroup of its own, capped 96 MiB above its size (as a "
    "SLURM task's or a container's cgroup caps it), and allocated until the kernel's OOM-killer killed it. "
    "dmesg.txt holds the kernel's own lines printed during the run (dmesg -T on this machine), not synthesised."
)
add(
    S(
        "torchrun-memcg-oom-rank1-logging",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3, logging with asctime; rank 1 outgrows its memory cgroup at step 4 and the "
        "kernel's OOM-killer kills it; the real kernel log is kept",
        "first_death",
        "host_oom",
        style="logging",
        largs=TEE,
        faults=["memcg-oom:1:4"],
        dmesg="memcg",
        why="rank 1 (pid {pid}) began hoarding memory in a capped cgroup at {when}; the kernel killed that pid",
        notes=KMEMCG,
        needles=["Signal 9 (SIGKILL)"],
    ),
    S(
        "mpspawn-memcg-oom-rank2-print",
        "mp.spawn",
        "spawn",
        "3 ranks under mp.spawn, plain print; rank 2 outgrows its memory cgroup at step 5 and the kernel's "
        "OOM-killer kills it; the real kernel log is kept",
        "first_death",
        "host_oom",
        faults=["memcg-oom:2:5"],
        dmesg="memcg",
        why="rank 2 (pid {pid}) began hoarding memory in a capped cgroup at {when}; the kernel killed that pid",
        notes=KMEMCG,
        needles=["terminated with signal SIGKILL"],
    ),
    S(
        "torchrun-worker-memcg-oom-rank0-hf",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --tee 3, 2 DataLoader workers each, HF-like; a worker of rank 0 outgrows its memory "
        "cgroup at step 3 and the kernel's OOM-killer kills it; the real kernel log is kept",
        "first_death",
        "host_oom",
        style="hf",
        largs=TEE,
        faults=["worker-memcg-oom:0:3"],
        job=["--workers", "2"],
        dmesg="memcg",
        why="a DataLoader worker of rank 0 (worker pid {pid}) began hoarding memory in a capped cgroup at {when}; "
        "the kernel killed that pid",
        notes=KMEMCG,
        needles=["is killed by signal"],
    ),
    S(
        "accelerate-memcg-oom-rank2-loguru",
        "accelerate",
        "accelerate",
        "accelerate launch --multi_gpu (on CPU) --num_processes 3, loguru-like; rank 2 outgrows its memory cgroup "
        "at step 4 and the kernel's OOM-killer kills it; the real kernel log is kept",
        "first_death",
        "host_oom",
        style="loguru",
        faults=["memcg-oom:2:4"],
        job=ACC,
        dmesg="memcg",
        why="rank 2 (pid {pid}) began hoarding memory in a capped cgroup at {when}; the kernel killed that pid",
        notes=KMEMCG,
        needles=["SIGKILL"],
    ),
    S(
        "torchrun-memcg-oom-rank2-redirects-nodmesg",
        "torchrun",
        "torchrun",
        "3 ranks under torchrun --log-dir --redirects 3, print; rank 2 outgrows its memory cgroup at step 4 and the "
        "kernel's OOM-killer kills it; no kernel log is given to the tool (what a user without dmesg has)",
        "first_death",
        "killed",
        largs=["--log-dir", "{logs}/torchrun", "--redirects", "3"],
        faults=["memcg-oom:2:4"],
        dmesg="memcg-dropped",
        why="rank 2 (pid {pid}) began hoarding memory in a capped cgroup at {when}; torchrun saw it die by SIGKILL, "
        "and without the kernel's log nothing says who sent it",
        notes="A real OOM kill in a memory cgroup (as for the other memcg cases); the kernel's log of it is checked "
        "but not kept, so the case holds only what the launcher and ranks printed.",
        needles=["Signal 9 (SIGKILL)"],
    ),
)

KSLURM = (
    "A real OOM kill under SLURM: the node runs task/cgroup with ConstrainRAMSpace (cgroup v1) and the job asked for "
    "--mem=2G; the victim allocated until the kernel's OOM-killer killed it, and slurmstepd and srun reported it."
)
add(
    S(
        "srun-cgroup-oom-task1-logging",
        "srun",
        "srun",
        "srun -N1 -n3 --mem=2G --label on a one-node SLURM that confines memory with task/cgroup, logging; task 1 "
        "allocates at step 4 until the kernel's OOM-killer kills it; the real kernel log is kept",
        "first_death",
        "host_oom",
        style="logging",
        faults=["hoard:1:4"],
        slurm_cgroup=True,
        dmesg="memcg",
        why="task 1 (pid {pid}) began hoarding memory at {when}; the kernel killed that pid and SLURM reported the "
        "oom-kill event",
        notes=KSLURM + " " + KREAL,
        needles=["oom-kill event", "task 1: Out Of Memory"],
    ),
    S(
        "srun-cgroup-oom-task2-print-nodmesg",
        "srun",
        "srun",
        "srun -N1 -n3 --mem=2G --label on a one-node SLURM that confines memory with task/cgroup, plain print; task 2 "
        "allocates at step 3 until the kernel's OOM-killer kills it; no kernel log is given to the tool",
        "first_death",
        "host_oom",
        faults=["hoard:2:3"],
        slurm_cgroup=True,
        dmesg="memcg-dropped",
        why="task 2 (pid {pid}) began hoarding memory at {when}; the kernel killed that pid and srun named task 2 "
        "Out Of Memory",
        notes=KSLURM + " The kernel's log of it is checked but not kept.",
        needles=["oom-kill event", "task 2: Out Of Memory"],
    ),
    S(
        "sbatch-cgroup-oom-task0-hf",
        "srun",
        "sbatch",
        "sbatch -n3 --mem=2G --wrap 'srun --label ...' on a one-node SLURM that confines memory with task/cgroup, "
        "HF-like, the output in slurm-<jobid>.out; task 0 allocates at step 5 until the kernel's OOM-killer kills it",
        "first_death",
        "host_oom",
        style="hf",
        faults=["hoard:0:5"],
        slurm_cgroup=True,
        dmesg="memcg-dropped",
        console=None,
        why="task 0 (pid {pid}) began hoarding memory at {when}; the kernel killed that pid and srun named task 0 "
        "Out Of Memory",
        notes=KSLURM + " The kernel's log of it is checked but not kept.",
        needles=["oom-kill event", "task 0: Out Of Memory"],
    ),
)

add(
    S(
        "srun-time-limit-logging",
        "srun",
        "srun",
        "srun -N1 -n3 --time=1 --label on a one-node SLURM, logging; the job trains past its one-minute limit and "
        "SLURM cancels the step",
        "undetermined",
        "time_limit",
        style="logging",
        job=["--steps", "600", "--step-time", "0.4"],
        slurm_time="1",
        truth_rank="none",
        why="nothing was injected: the job was still training when SLURM cancelled it at its one-minute time limit",
        needles=["DUE TO TIME LIMIT"],
    ),
    S(
        "sbatch-time-limit-hf",
        "srun",
        "sbatch",
        "sbatch -n3 --time=1 --wrap 'srun --label ...' on a one-node SLURM, HF-like, the output in "
        "slurm-<jobid>.out; the job trains past its one-minute limit and SLURM cancels it",
        "undetermined",
        "time_limit",
        style="hf",
        job=["--steps", "600", "--step-time", "0.4"],
        slurm_time="1",
        console=None,
        truth_rank="none",
        why="nothing was injected: the job was still training when SLURM cancelled it at its one-minute time limit",
        needles=["DUE TO TIME LIMIT"],
    ),
    S(
        "srun-cgroup-worker-oom-task1-loguru",
        "srun",
        "srun",
        "srun -N1 -n3 --mem=2G --label on a one-node SLURM that confines memory with task/cgroup, loguru-like, 2 "
        "DataLoader workers per task; a worker of task 1 allocates at step 3 until the kernel's OOM-killer kills "
        "it; the real kernel log is kept",
        "first_death",
        "host_oom",
        style="loguru",
        faults=["worker-hoard:1:3"],
        job=["--workers", "2"],
        slurm_cgroup=True,
        dmesg="memcg",
        why="a DataLoader worker of task 1 (worker pid {pid}) began hoarding memory at {when}; the kernel killed "
        "that pid, task 1 raised, and SLURM reported the oom-kill event",
        notes=KSLURM + " " + KREAL,
        needles=["oom-kill event", "is killed by signal"],
    ),
)

add(
    S(
        "srun-scancel-print",
        "srun",
        "srun",
        "srun -N1 -n3 --label on a one-node SLURM, plain print; the user cancels the job with scancel when task 0 "
        "reaches step 4",
        "undetermined",
        None,
        external=("SCANCEL", 0, 4),
        truth_rank="none",
        why="the generator ran scancel on the job at {when}: no task died of its own, the user ended the job",
        needles=["CANCELLED AT"],
    ),
    S(
        "sbatch-scancel-logging",
        "srun",
        "sbatch",
        "sbatch -n3 --wrap 'srun --label ...' on a one-node SLURM, logging, the output in slurm-<jobid>.out; the "
        "user cancels the job with scancel when task 2 reaches step 5",
        "undetermined",
        None,
        style="logging",
        external=("SCANCEL", 2, 5),
        console=None,
        truth_rank="none",
        why="the generator ran scancel on the job at {when}: no task died of its own, the user ended the job",
        needles=["CANCELLED AT"],
    ),
)

add(
    S(
        "mpirun-memcg-oom-rank1-logging",
        "mpirun",
        "mpirun",
        "3 ranks under mpirun --tag-output, logging with asctime; rank 1 outgrows its memory cgroup at step 4 and the "
        "kernel's OOM-killer kills it; the real kernel log is kept",
        "first_death",
        "host_oom",
        style="logging",
        faults=["memcg-oom:1:4"],
        dmesg="memcg",
        why="rank 1 (pid {pid}) began hoarding memory in a capped cgroup at {when}; the kernel killed that pid",
        notes=KMEMCG,
        needles=["signal 9"],
    ),
    S(
        "mpich-memcg-oom-rank2-print",
        "mpich",
        "mpich",
        "3 ranks under MPICH's mpiexec (no rank labels), plain print; rank 2 outgrows its memory cgroup at step 3 and "
        "the kernel's OOM-killer kills it; the real kernel log is kept",
        "first_death",
        "host_oom",
        faults=["memcg-oom:2:3"],
        dmesg="memcg",
        why="rank 2 (pid {pid}) began hoarding memory in a capped cgroup at {when}; the kernel killed that pid",
        notes=KMEMCG,
        needles=["BAD TERMINATION"],
    ),
)

add(
    S(
        "lightning-memcg-oom-rank1-logging",
        "lightning",
        "lightning",
        "Lightning Trainer(strategy='ddp', devices=3) on CPU, logging; rank 1 outgrows its memory cgroup at step 4 "
        "and the kernel's OOM-killer kills it; the real kernel log is kept",
        "first_death",
        "host_oom",
        style="logging",
        faults=["memcg-oom:1:4"],
        dmesg="memcg",
        why="rank 1 (pid {pid}) began hoarding memory in a capped cgroup at {when}; the kernel killed that pid",
        notes=KMEMCG,
    ),
)

add(
    S(
        "deepspeed-memcg-oom-rank2-logging",
        "deepspeed",
        "deepspeed",
        "deepspeed --num_gpus 3 (cpu, gloo), logging; rank 2 outgrows its memory cgroup at step 4 and the kernel's "
        "OOM-killer kills it; the real kernel log is kept",
        "first_death",
        "host_oom",
        style="logging",
        faults=["memcg-oom:2:4"],
        dmesg="memcg",
        env=DSENV,
        why="rank 2 (pid {pid}) began hoarding memory in a capped cgroup at {when}; the kernel killed that pid",
        notes=KMEMCG,
        needles=["exits with return code"],
    ),
)

BY_ID = {s.id: s for s in SCENARIOS}
assert len(BY_ID) == len(SCENARIOS), "duplicate case ids"

# --------------------------------------------------------------------------- running


@dataclass
class Run:
    returncode: int = -1
    ranks: dict[int, dict] = field(default_factory=dict)  # rank -> {"pid", "host", "time"}
    injected: list[dict] = field(default_factory=list)  # from inject.jsonl plus the generator's own signals
    comm: dict[int, str] = field(default_factory=dict)  # pid -> /proc/<pid>/comm at the kill
    kernel_before: list[str] = field(default_factory=list)
    kernel_new: list[str] = field(default_factory=list)


def _dmesg_T() -> list[str]:
    r = subprocess.run(["dmesg", "-T"], capture_output=True, text=True, env={**os.environ, "TZ": "UTC"})
    return r.stdout.splitlines()


def _remove_oom_groups() -> None:
    """The memory cgroups job.py's memcg faults made (empty once their process is killed)."""
    for root in (Path("/sys/fs/cgroup/memory"), Path("/sys/fs/cgroup")):
        for group in root.glob("ra-oom-*"):
            with contextlib.suppress(OSError):
                group.rmdir()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _hosts_file(work: Path) -> Path:
    p = work / "hosts"
    lines = ["127.0.0.1 localhost"]
    for i, h in HOSTS.items():
        lines.append(f"127.0.1.{i + 1} {h}.{DOMAIN} {h}")
    p.write_text("\n".join(lines) + "\n")
    return p


def _in_host(work: Path, host: str, argv: list[str]) -> list[str]:
    """argv run in a fresh UTS+mount namespace whose host name is `host`."""
    script = f'mount --bind {_hosts_file(work)} /etc/hosts && hostname {host} && exec "$@"'
    return ["unshare", "-mu", "--fork", "sh", "-c", script, "sh", *argv]


def _env(work: Path, port: int) -> dict[str, str]:
    drop = (
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "LOCAL_WORLD_SIZE",
        "MASTER_ADDR",
        "MASTER_PORT",
        "OMPI_",
        "SLURM_",
        "PMI_",
        "TORCHELASTIC",
        "ACCELERATE_",
        "PL_",
        "CUDA_",
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop) or k == "SLURM_CONF"}
    venv_bin = str(Path(sys.executable).parent)
    env.update(
        TZ="UTC",
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS="1",
        TMPDIR=str(work / "tmp"),
        JOB_SIDE=str(work / "side"),
        PATH=venv_bin + ":" + env.get("PATH", "/usr/bin:/bin"),
        MASTER_ADDR="127.0.0.1",
        MASTER_PORT=str(port),
        HOME=str(work / "home"),
    )
    env.pop("VIRTUAL_ENV", None)
    return env


def _job_args(sc: Scenario, logs: Path) -> list[str]:
    a = ["--log-style", sc.style]
    for f in sc.faults:
        a += ["--fault", f]
    ext = sc.external
    if ext:
        a += ["--fault", f"wait:{ext[1]}:{ext[2]}"]
    a += [x.replace("{logs}", str(logs)) for x in sc.job]
    a = [x.replace("{{rank}}", "{rank}") for x in a]
    return a


NOTEBOOK_CELL = """import os, sys
import job
from accelerate import notebook_launcher

args = job.parse_args(sys.argv[1:])
args.framework = "accelerate"
notebook_launcher(job.train, args=(args,), num_processes={n}, use_port=os.environ["MASTER_PORT"])
"""


def _argvs(sc: Scenario, work: Path, port: int) -> list[tuple[str, list[str], str | None]]:
    """[(host, argv, console file name)] for the processes the generator starts."""
    job = work / "job"
    logs = job / "logs"
    py = sys.executable
    bindir = Path(py).parent
    ja = _job_args(sc, logs)
    largs = [x.replace("{logs}", str(logs)).replace("{port}", str(port)) for x in sc.largs]
    cons = sc.console
    if sc.runner == "spawn":
        return [("node01", [py, "job.py", "--spawn", str(sc.nproc), *ja], cons)]
    if sc.runner == "torchrun":
        return [
            (
                "node01",
                [str(bindir / "torchrun"), "--standalone", "--nproc-per-node", str(sc.nproc), *largs, "job.py", *ja],
                cons,
            )
        ]
    if sc.runner == "torchrun2":
        two = [x.replace("{port}", str(port)) for x in TWO]
        out = []
        for node in (0, 1):
            host = HOSTS[node]
            out.append(
                (host, [str(bindir / "torchrun"), *two, "--node-rank", str(node), *largs, "job.py", *ja], f"{host}.log")
            )
        return out
    if sc.runner == "mpirun":
        return [
            (
                "node01",
                [
                    "mpirun",
                    "--allow-run-as-root",
                    "--oversubscribe",
                    "--tag-output",
                    "-np",
                    str(sc.nproc),
                    *largs,
                    "-x",
                    "MASTER_ADDR",
                    "-x",
                    "MASTER_PORT",
                    "-x",
                    "JOB_SIDE",
                    "-x",
                    "OMP_NUM_THREADS",
                    py,
                    "job.py",
                    "--rank-from",
                    "mpi",
                    *ja,
                ],
                cons,
            )
        ]
    mem = [f"--mem={SLURM_MEM}"] if sc.slurm_cgroup else []
    mem += [f"--time={sc.slurm_time}"] if sc.slurm_time else []
    if sc.runner == "srun":
        return [
            (
                "node01",
                ["srun", "-N1", f"-n{sc.nproc}", *mem, "--label", *largs, py, "job.py", "--rank-from", "slurm", *ja],
                cons,
            )
        ]
    if sc.runner == "sbatch":
        step = shlex.join(["srun", "--label", *largs, py, "job.py", "--rank-from", "slurm", *ja])
        out = f"{logs}/slurm-%j.out"
        return [
            (
                "node01",
                ["sbatch", "-W", "-N1", f"-n{sc.nproc}", *mem, "-J", "train", "-o", out, "--wrap", step],
                cons,
            )
        ]
    if sc.runner == "lightning":
        return [("node01", [py, "lit_job.py", "--devices", str(sc.nproc), *ja], cons)]
    if sc.runner == "deepspeed":
        # runner.py -> `python -u -m deepspeed.launcher.launch` -> one `python -u job.py --local_rank=N` per rank
        ds = [str(DS_VENV / "bin" / "deepspeed"), "--num_gpus", str(sc.nproc), "--master_port", str(port)]
        return [("node01", [*ds, *largs, "job.py", *ja], cons)]
    if sc.runner == "mpich":
        return [("node01", [MPIEXEC_MPICH, "-n", str(sc.nproc), *largs, py, "job.py", "--rank-from", "mpi", *ja], cons)]
    if sc.runner == "notebook":
        # what a notebook cell does, as `python -c`: accelerate.notebook_launcher(job.train, ...) from this process
        return [("node01", [py, "-c", NOTEBOOK_CELL.format(n=sc.nproc), *ja], cons)]
    if sc.runner == "accelerate":
        return [
            (
                "node01",
                [
                    str(bindir / "accelerate"),
                    "launch",
                    "--multi_gpu",
                    "--num_processes",
                    str(sc.nproc),
                    "--num_machines",
                    "1",
                    "--main_process_port",
                    str(port),
                    "--mixed_precision",
                    "no",
                    "--dynamo_backend",
                    "no",
                    *largs,
                    "job.py",
                    *ja,
                ],
                cons,
            )
        ]
    raise ValueError(sc.runner)


def _read_jsonl(p: Path) -> list[dict]:
    if not p.exists():
        return []
    out = []
    for line in p.read_text().splitlines():
        with contextlib.suppress(ValueError):
            out.append(json.loads(line))
    return out


def _launch(sc: Scenario, work: Path) -> Run:
    port = _free_port()
    env = _env(work, port)
    env.update(sc.env)
    procs: list[subprocess.Popen] = []
    pumps: list[threading.Thread] = []
    for host, argv, cons in _argvs(sc, work, port):
        target = (work / "job" / "logs" / cons) if cons else (work / "console-dropped" / f"{host}.log")
        target.parent.mkdir(parents=True, exist_ok=True)
        p = subprocess.Popen(
            _in_host(work, host, argv),
            cwd=work / "job",
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        procs.append(p)
        if sc.runner == "torchrun2":
            time.sleep(1.0)  # node01's agent first: c10d assigns node ranks in arrival order

        def pump(p: subprocess.Popen = p, target: Path = target) -> None:
            assert p.stdout is not None
            with target.open("wb") as out:
                for raw in iter(p.stdout.readline, b""):
                    out.write(raw)
                    out.flush()

        t = threading.Thread(target=pump, daemon=True)
        t.start()
        pumps.append(t)
    run = Run()
    run.kernel_before = _dmesg_T() if sc.dmesg in KERNEL_KEPT else []
    side = work / "side"
    fired = False
    interrupted = False
    deadline = time.time() + RUN_TIMEOUT_S
    while any(p.poll() is None for p in procs):
        if time.time() > deadline:
            for p in procs:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
            raise RuntimeError(f"{sc.id}: launcher did not finish within {RUN_TIMEOUT_S} s")
        if sc.interrupt is not None and not interrupted:
            recs = [r for r in _read_jsonl(side / "inject.jsonl") if r["kind"] != "wait"]
            if recs and time.time() >= recs[0]["time"] + sc.interrupt:
                for p in procs:
                    os.killpg(p.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
                interrupted = True
        if sc.external and not fired:
            signame, rank, _step = sc.external
            for rec in _read_jsonl(side / "inject.jsonl"):
                if rec["kind"] == "wait" and rec["rank"] == rank:
                    pid = rec["pid"]
                    try:
                        run.comm[pid] = Path(f"/proc/{pid}/comm").read_text().strip()
                    except OSError:
                        run.comm[pid] = "python3"
                    t = time.time()
                    if signame == "SCANCEL":  # the user cancels the whole SLURM job (the cluster runs only this one)
                        subprocess.run(["scancel", "--user", "root"], check=True, timeout=30)
                    else:
                        os.kill(pid, getattr(signal, signame))
                    run.injected.append(
                        {
                            "kind": signame.lower() + "-external",
                            "rank": rank,
                            "pid": pid,
                            "step": rec["step"],
                            "time": t,
                            "by": "generator",
                        }
                    )
                    fired = True
                    break
        time.sleep(0.02)
    for t in pumps:
        t.join(30)
    run.returncode = procs[0].returncode
    _remove_oom_groups()
    if sc.dmesg in KERNEL_KEPT:
        time.sleep(0.5)
        after = _dmesg_T()
        n = len(run.kernel_before)
        # the ring buffer only grows during a short run: the new lines are those past the old end
        if after[:n] == run.kernel_before:
            run.kernel_new = after[n:]
        else:
            old = set(run.kernel_before)
            run.kernel_new = [ln for ln in after if ln not in old]
    for rec in _read_jsonl(side / "ranks.jsonl"):
        run.ranks.setdefault(rec["rank"], rec)
    run.injected += [r for r in _read_jsonl(side / "inject.jsonl") if r["kind"] != "wait"]
    for r in run.injected:
        if r["kind"] == "worker-kill" and r["pid"] not in run.comm:
            run.comm[r["pid"]] = "pt_data_worker"  # a DataLoader worker's /proc/self/comm, observed here
    run.injected.sort(key=lambda r: r["time"])
    return run


# --------------------------------------------------------------------------- normalising


def _normaliser(work: Path):
    pairs: list[tuple[str, str]] = []

    def addp(src: str, dst: str) -> None:
        for s in {src, os.path.realpath(src)}:
            if s and s != "/" and (s, dst) not in pairs:
                pairs.append((s, dst))

    addp(str(work / "job"), JOB_PH)
    addp(str(work / "tmp"), TMP_PH)
    addp(str(work), JOB_PH)
    if sys.prefix != sys.base_prefix:
        addp(sys.prefix, VENV_PH)
    if DS_VENV.is_dir():
        addp(str(DS_VENV), VENV_PH)
    addp(sys.base_prefix, PY_PH)
    pairs.sort(key=lambda p: len(p[0]), reverse=True)
    path_re = re.compile("|".join(re.escape(s) + r"(?=[/\"'\s:),]|$)" for s, _ in pairs), re.M)
    table = dict(pairs)
    real_host = socket.gethostname()
    host_re = None
    if real_host and real_host not in ("localhost", *HOSTS.values()):
        host_re = re.compile(r"(?<![\w./-])" + re.escape(real_host) + r"(?![\w/-]|\.\w)")

    def norm(text: str) -> str:
        text = path_re.sub(lambda m: table[m.group(0)], text)
        if host_re is not None:
            text = host_re.sub(HOSTS[0], text)
        return text

    return norm


def _normalise_tree(root: Path, norm) -> None:
    for f in sorted(root.rglob("*")):
        if f.is_file():
            data = f.read_bytes()
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                continue
            new = norm(text)
            if new != text:
                f.write_bytes(new.encode("utf-8"))


# --------------------------------------------------------------------------- kernel log (synthesised)


def _stamp(t: float) -> str:
    d = datetime.fromtimestamp(t, tz=UTC)
    return "[" + d.strftime("%a %b ") + f"{d.day:2d}" + d.strftime(" %H:%M:%S %Y") + "] "


def _write_oom_dmesg(path: Path, run: Run, victim: int, t_kill: float) -> None:
    comm = run.comm.get(victim, "python3")
    vhost = next((r["host"] for r in run.ranks.values() if r["pid"] == victim), None)
    others = sorted(
        r["pid"] for r in run.ranks.values() if r["pid"] != victim and (vhost is None or r["host"] == vhost)
    )  # that node's tasks only
    lines: list[tuple[float, str]] = [
        (-412.3, "IPv6: ADDRCONF(NETDEV_CHANGE): eth0: link becomes ready"),
        (
            -0.0042,
            f"{comm} invoked oom-killer: gfp_mask=0x140dca(GFP_HIGHUSER_MOVABLE|__GFP_COMP|__GFP_ZERO), "
            "order=0, oom_score_adj=0",
        ),
        (-0.0042, f"CPU: 1 PID: {victim} Comm: {comm} Not tainted 6.1.0-28-amd64 #1 Debian 6.1.119-1"),
        (-0.0042, "Hardware name: QEMU Standard PC (i440FX + PIIX, 1996), BIOS 1.16.2-debian-1.16.2-1 04/01/2014"),
        (-0.0042, "Call Trace:"),
        (-0.0042, " <TASK>"),
        (-0.0042, " dump_stack_lvl+0x44/0x5c"),
        (-0.0042, " dump_header+0x4a/0x211"),
        (-0.0042, " oom_kill_process.cold+0xb/0x10"),
        (-0.0042, " out_of_memory+0x1fd/0x4c0"),
        (-0.0042, " __alloc_pages_slowpath.constprop.0+0xcb9/0xe10"),
        (-0.0042, " __alloc_pages+0x305/0x330"),
        (-0.0042, " __folio_alloc+0x16/0x50"),
        (-0.0042, " vma_alloc_folio+0x9a/0x370"),
        (-0.0042, " __handle_mm_fault+0x91e/0xfb0"),
        (-0.0042, " handle_mm_fault+0xdb/0x2d0"),
        (-0.0042, " do_user_addr_fault+0x191/0x570"),
        (-0.0042, " exc_page_fault+0x70/0x170"),
        (-0.0042, " asm_exc_page_fault+0x22/0x30"),
        (-0.0042, " </TASK>"),
        (-0.0041, "Mem-Info:"),
        (-0.0041, "active_anon:5987312 inactive_anon:14802 isolated_anon:0"),
        (-0.0041, " active_file:203 inactive_file:118 isolated_file:0"),
        (-0.0041, " free:34011 free_pcp:62 free_cma:0"),
        (-0.0040, "Tasks state (memory values in pages):"),
        (-0.0040, "[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name"),
    ]
    for pid in others:
        lines.append(
            (-0.0040, f"[{pid:7d}] {0:5d} {pid:5d} {1_571_532:8d} {143_201:8d} {1_650_688:14d} {0:8d} {0:13d} {comm}")
        )
    lines.append(
        (
            -0.0040,
            f"[{victim:7d}] {0:5d} {victim:5d} {7_614_977:8d} {5_823_105:8d} {11_845_632:14d} {0:8d} {0:13d} {comm}",
        )
    )
    lines += [
        (
            -0.0001,
            "oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
            f"task_memcg=/user.slice/user-0.slice/session-3.scope,task={comm},pid={victim},uid=0",
        ),
        (
            0.0,
            f"Out of memory: Killed process {victim} ({comm}) total-vm:{7_614_977 * 4}kB, "
            f"anon-rss:{5_801_233 * 4}kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:{11_845_632 // 1024}kB "
            "oom_score_adj:0",
        ),
        (0.0412, f"oom_reaper: reaped process {victim} ({comm}), now anon-rss:0kB, file-rss:0kB, shmem-rss:0kB"),
    ]
    path.write_text("".join(_stamp(t_kill + dt) + msg + "\n" for dt, msg in lines), encoding="utf-8")


# --------------------------------------------------------------------------- one case


def _when(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def fault_problems(
    faults: list[str],
    external: tuple[str, int, int] | None,
    outcome: str,
    injected: list[dict],
    returncode: int,
    fired: set[tuple[str, int]],
) -> list[str]:
    """What a run did not do that its scenario declares: a fault that never fired (`fired`: the
    injectors' (kind, rank) records), the generator's external signal, the exit status of its outcome.
    Shared by this generator and generate_ray.py."""
    probs = [
        f"fault {spec} never fired" for spec in faults if (spec.split(":")[0], int(spec.split(":")[1])) not in fired
    ]
    if external and not any(r.get("by") == "generator" for r in injected):
        probs.append("the external signal was never sent")
    if outcome == "clean" and returncode != 0:
        probs.append(f"clean run exited {returncode}")
    if outcome != "clean" and returncode == 0:
        probs.append("faulty run exited 0")
    return probs


def _check(sc: Scenario, run: Run, case: Path) -> list[str]:
    probs = []
    text = ""
    for f in sorted((case / "logs").rglob("*")):
        if f.is_file():
            text += f.read_text(encoding="utf-8", errors="replace")
    expect_inj = bool(sc.faults or sc.external)
    if expect_inj and not run.injected:
        probs.append("the fault never fired")
    fired = {(r["kind"], r["rank"]) for r in run.injected}
    probs += fault_problems(sc.faults, sc.external, sc.outcome, run.injected, run.returncode, fired)
    if sc.runner == "torchrun2":
        for r, rec in run.ranks.items():
            if rec["host"] != HOSTS[r // 2]:
                probs.append(f"rank {r} landed on {rec['host']} (c10d rendezvous ignores --node-rank)")
    victim = run.injected[0]["pid"] if run.injected else None
    for n in sc.needles:
        n = n.replace("{pid}", str(victim))
        if n not in text:
            probs.append(f"missing in logs: {n!r}")
    for n in sc.absent:
        n = n.replace("{pid}", str(victim))
        if n in text:
            probs.append(f"present in logs: {n!r}")
    if sc.dmesg == "real" and victim is not None and not any(f"[{victim}]: segfault" in ln for ln in run.kernel_new):
        probs.append(f"the kernel log has no segfault line for pid {victim}")
    killed = f"Killed process {victim} "
    if sc.dmesg in ("memcg", "memcg-dropped") and not any(killed in ln for ln in run.kernel_new):
        probs.append(f"the kernel log has no OOM kill of pid {victim}")
    size = sum(f.stat().st_size for f in case.rglob("*") if f.is_file())
    if size > 1_000_000:
        probs.append(f"case is {size} bytes")
    return probs


def _prepare(work: Path, sc: Scenario) -> None:
    job = work / "job"
    (job / "logs").mkdir(parents=True)
    (work / "tmp").mkdir()
    (work / "home").mkdir()
    (work / "side").mkdir()
    shutil.copy(JOB, job / "job.py")
    if sc.runner == "lightning":
        shutil.copy(LIT_JOB, job / "lit_job.py")


def run_case(sc: Scenario, out_root: Path) -> Path:
    if sc.runner in ("srun", "sbatch"):
        slurm_up(sc.slurm_cgroup)
    last: list[str] = []
    for attempt in range(1, ATTEMPTS + 1):
        work = Path(tempfile.mkdtemp(prefix="ra-real-"))
        try:
            _prepare(work, sc)
            run = _launch(sc, work)
            case = out_root / sc.id
            if case.exists():
                shutil.rmtree(case)
            case.mkdir(parents=True)
            shutil.copytree(work / "job" / "logs", case / "logs")
            dmesg_files: list[str] = []
            if sc.dmesg == "oom" and run.injected:
                first = run.injected[0]
                host = run.ranks.get(first["rank"], {}).get("host", "node01")
                name = "dmesg.txt" if sc.runner != "torchrun2" else f"dmesg-{host}.txt"
                _write_oom_dmesg(case / name, run, first["pid"], first["time"])
                dmesg_files.append(name)
            if sc.dmesg in ("real", "memcg"):
                (case / "dmesg.txt").write_text("".join(ln + "\n" for ln in run.kernel_new), encoding="utf-8")
                dmesg_files.append("dmesg.txt")
            _normalise_tree(case, _normaliser(work))
            probs = _check(sc, run, case)
            if probs:
                last = probs
                print(f"  attempt {attempt}: {'; '.join(probs)}", file=sys.stderr)
                continue
            _write_case_yaml(sc, run, case, dmesg_files)
            return case
        finally:
            shutil.rmtree(work, ignore_errors=True)
    failed = out_root / sc.id
    if failed.exists() and not (failed / "case.yaml").exists():
        shutil.move(str(failed), str(Path(tempfile.gettempdir()) / f"failed-{sc.id}-{int(time.time())}"))
    raise RuntimeError(f"{sc.id}: {'; '.join(last)}")


def _write_case_yaml(sc: Scenario, run: Run, case: Path, dmesg: list[str]) -> None:
    first = run.injected[0] if run.injected else None
    rank = first["rank"] if (first and sc.truth_rank == "first") else None
    why = sc.why
    if first:
        why = why.format(when=_when(first["time"]), rank=first["rank"], pid=first["pid"], kind=first["kind"])
    doc: dict[str, Any] = {
        "id": sc.id,
        "corpus": "real",
        "launcher": sc.launcher,
        "source": f"python benchmarks/accuracy/real/generate.py --only {sc.id}",
        "description": sc.description,
        "args": ["logs"],
        "dmesg": dmesg,
        "options": sc.options,
        "truth": {"outcome": sc.outcome, "rank": rank, "cause": sc.cause, "sure": sc.sure, "why": why},
    }
    if sc.notes:
        doc["notes"] = sc.notes
    doc["injected"] = [
        {
            "kind": r["kind"],
            "rank": r["rank"],
            "pid": r["pid"],
            "step": r["step"],
            "time": _when(r["time"]),
            **({"by": r["by"]} if "by" in r else {}),
        }
        for r in run.injected
    ]
    doc["ranks"] = {r: {"pid": v["pid"], "host": v["host"]} for r, v in sorted(run.ranks.items())}
    doc["exit_status"] = run.returncode
    (case / "case.yaml").write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=110))


# --------------------------------------------------------------------------- a one-node SLURM

SLURM_DIR = Path("/var/tmp/ra-slurm")
SLURM_MEM = "2G"  # a job's memory under task/cgroup: three ranks of job.py use about 1 GB
_slurm_started = ""  # "", "plain" or "cgroup"


def slurm_up(cgroup: bool = False) -> None:
    """Start munged, slurmctld and slurmd for a one-node cluster named node01 (idempotent; restarted when
    a case wants the other memory confinement, `Scenario.slurm_cgroup`)."""
    global _slurm_started
    if _slurm_started == ("cgroup" if cgroup else "plain"):
        return
    import slurm_local

    if _slurm_started:
        slurm_local.stop()
    slurm_local.start(SLURM_DIR, HERE, cgroup=cgroup)
    _slurm_started = "cgroup" if cgroup else "plain"


# --------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[], help="case id (repeatable)")
    ap.add_argument("--launcher", action="append", default=[], help="only the cases of this runner (repeatable)")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--out", default=str(HERE))
    ap.add_argument("--keep-going", action="store_true")
    ap.add_argument("--table", action="store_true", help="print a Markdown table of the cases found under --out")
    a = ap.parse_args(argv)
    chosen = [s for s in SCENARIOS if (not a.only or s.id in a.only) and (not a.launcher or s.runner in a.launcher)]
    unknown = set(a.only) - set(BY_ID)
    if unknown:
        ap.error(f"unknown case id(s): {', '.join(sorted(unknown))}")
    if a.table:
        print("| case | launcher | outcome | rank | cause | sure | logs kept |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for s in chosen:
            f = Path(a.out) / s.id / "case.yaml"
            if not f.exists():
                continue
            d = yaml.safe_load(f.read_text())
            t = d["truth"]
            kept = sorted(
                {str(p.relative_to(f.parent)).split("/")[1] for p in (f.parent / "logs").rglob("*") if p.is_file()}
            )
            kept += d.get("dmesg") or []
            rank = "—" if t["rank"] is None else t["rank"]
            print(
                f"| `{s.id}` | {d['launcher']} | {t['outcome']} | {rank} | {t['cause'] or '—'} | {t['sure']} | "
                f"{', '.join(kept)} |"
            )
        return 0
    if a.list:
        for s in chosen:
            print(f"{s.id:50s} {s.launcher:20s} {s.outcome:12s} {s.cause}")
        return 0
    out = Path(a.out)
    failed = []
    for s in chosen:
        t0 = time.time()
        print(f"{s.id} ...", flush=True)
        try:
            case = run_case(s, out)
        except Exception as e:
            failed.append(s.id)
            print(f"  FAILED: {e}", flush=True)
            if not a.keep_going:
                return 1
            continue
        truth = yaml.safe_load((case / "case.yaml").read_text())["truth"]
        print(
            f"  made {case} in {time.time() - t0:.0f}s: {truth['outcome']} rank={truth['rank']} cause={truth['cause']}",
            flush=True,
        )
    if failed:
        print("failed: " + ", ".join(failed))
        return 1
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    sys.exit(main())
