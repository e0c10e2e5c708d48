"""A real gloo job whose store host dies: the bytes torch prints today on the survivors (TCPStore's
client warnings, `DistNetworkError: <strerror>`) must read as a lost peer, and the silent host as the
first death. Three independent processes, as separate nodes or an srun without kill-on-bad-exit run
them: no launcher stops the survivors before they notice."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from datetime import UTC
from pathlib import Path

import pytest

from rankautopsy.model import Cause, Role
from rankautopsy.pipeline import Options, diagnose

pytest.importorskip("torch", reason="the gloo job needs torch")

WORLD = 3
JOB = textwrap.dedent(
    """
    import logging, os, signal, sys
    from datetime import timedelta
    import torch.distributed as dist

    rank, port = int(sys.argv[1]), sys.argv[2]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD, timeout=timedelta(seconds=30)
    )
    store = dist.distributed_c10d._get_default_store()  # hosted by rank 0
    for step in range(1, 100):
        logging.info("rank %d step %d", rank, step)
        if rank == 0 and step == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        store.set(f"k{rank}_{step}", "1")
        store.wait([f"k{r}_{step}" for r in range(WORLD)])
    """
).replace("WORLD", str(WORLD))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_survivors_of_a_dead_store_host_name_it_first(tmp_path: Path) -> None:
    script, logs = tmp_path / "job.py", tmp_path / "logs"
    script.write_text(JOB, encoding="utf-8")
    logs.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONUNBUFFERED": "1"}
    port = str(_free_port())
    procs = []
    for rank in range(WORLD):
        out = (logs / f"rank_{rank}.log").open("w")
        procs.append(
            subprocess.Popen(
                [sys.executable, "-W", "ignore", str(script), str(rank), port], stdout=out, stderr=out, env=env
            )
        )
    codes = [p.wait(timeout=120) for p in procs]
    assert codes[0] == -9 and codes[1:] == [1, 1], codes

    d = diagnose(Options(paths=[str(logs)], tz=UTC))
    assert d.verdict.first_death is not None and d.verdict.first_death.rank == 0
    lost = {
        e.rank for e in d.events if e.role is Role.SYMPTOM and e.cause in (Cause.PEER_LOST, Cause.COLLECTIVE_TIMEOUT)
    }
    assert lost == {1, 2}
    assert not any(e.cause is Cause.PYTHON_EXCEPTION for e in d.events)
