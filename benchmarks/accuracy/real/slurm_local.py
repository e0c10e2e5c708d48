"""A one-node SLURM cluster on this machine for the srun cases (Debian slurm-wlm + munge, as root).

start(dir) writes a minimal slurm.conf for a node named node01 (in a UTS namespace, so the tasks see
that host name), starts munged, slurmctld and slurmd, waits until the node is idle, exports
SLURM_CONF, and registers an atexit hook that stops exactly the daemons it started. With cgroup=True
the node confines each job's memory as sites do (task/cgroup with ConstrainRAMSpace on cgroup v1,
proctrack/cgroup, memory a consumable resource): a task that outgrows its job's `--mem` is killed by
the kernel's OOM-killer and slurmstepd reports the oom-kill event.

    python benchmarks/accuracy/real/slurm_local.py    # start, run `srun -n3 --label hostname`, stop
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

CONF = """\
ClusterName=ra
SlurmctldHost=node01(127.0.1.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
SlurmctldPort=6817
SlurmdPort=6818
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmdSpoolDir={d}/spool
StateSaveLocation={d}/state
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
KillWait=5
InactiveLimit=0
MinJobAge=30
NodeName=node01 NodeAddr=127.0.1.1 CPUs=8 Sockets=1 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=8000 State=UNKNOWN
PartitionName=debug Nodes=node01 Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
"""

CGROUP_CONF = "CgroupPlugin=cgroup/v1\nCgroupAutomount=no\nConstrainRAMSpace=yes\nConstrainSwapSpace=no\n"
CGROUP_LINES = {
    "ProctrackType=proctrack/linuxproc": "ProctrackType=proctrack/cgroup",
    "TaskPlugin=task/none": "TaskPlugin=task/cgroup",
    "SelectTypeParameters=CR_Core\n": "SelectTypeParameters=CR_Core_Memory\n",
}

HOSTS = "127.0.0.1 localhost\n127.0.1.1 node01.cluster.internal node01\n127.0.1.2 node02.cluster.internal node02\n"

_started: list[subprocess.Popen] = []


def _ns(d: Path, argv: list[str]) -> list[str]:
    script = f'mount --bind {d / "hosts"} /etc/hosts && hostname node01 && exec "$@"'
    return ["unshare", "-mu", "--fork", "sh", "-c", script, "sh", *argv]


def stop() -> None:
    for p in reversed(_started):
        if p.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
    _started.clear()


def start(d: Path, here: Path | None = None, cgroup: bool = False) -> None:
    if d.exists():
        shutil.rmtree(d)
    for sub in ("spool", "state", "munge"):
        (d / sub).mkdir(parents=True)
    (d / "hosts").write_text(HOSTS)
    conf = CONF.format(d=d)
    if cgroup:
        for old, new in CGROUP_LINES.items():
            conf = conf.replace(old, new)
        (d / "cgroup.conf").write_text(CGROUP_CONF)
    (d / "slurm.conf").write_text(conf)
    os.environ["SLURM_CONF"] = str(d / "slurm.conf")
    sock = d / "munge" / "munge.socket.2"
    os.environ["MUNGE_SOCKET"] = str(sock)  # not read by slurm itself; kept for debugging
    Path("/run/munge").mkdir(parents=True, exist_ok=True)
    logf = open(d / "daemons.log", "ab")  # noqa: SIM115  (the daemons write to it until stop())
    env = dict(os.environ)
    # munged: foreground, as root, the default socket path (slurm's auth/munge plugin uses it)
    _started.append(
        subprocess.Popen(["munged", "-F", "--force"], stdout=logf, stderr=logf, start_new_session=True, env=env)
    )
    atexit.register(stop)
    time.sleep(1)
    _started.append(
        subprocess.Popen(
            _ns(d, ["slurmctld", "-D", "-i", "-f", str(d / "slurm.conf")]),
            stdout=logf,
            stderr=logf,
            start_new_session=True,
            env=env,
        )
    )
    time.sleep(2)
    _started.append(
        subprocess.Popen(
            _ns(d, ["slurmd", "-D", "-f", str(d / "slurm.conf")]),
            stdout=logf,
            stderr=logf,
            start_new_session=True,
            env=env,
        )
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        r = subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=env)
        if r.stdout.strip().startswith("idle"):
            return
        for p in _started:
            if p.poll() is not None:
                raise RuntimeError(f"a SLURM daemon exited ({p.args}); see {d}/daemons.log and {d}/*.log")
        time.sleep(1)
    raise RuntimeError(f"the SLURM node never became idle: sinfo says {r.stdout.strip()!r} {r.stderr.strip()!r}")


if __name__ == "__main__":
    start(Path("/var/tmp/ra-slurm"))
    subprocess.run(_ns(Path("/var/tmp/ra-slurm"), ["srun", "-N1", "-n3", "--label", "hostname"]), check=False)
    stop()
    sys.exit(0)
