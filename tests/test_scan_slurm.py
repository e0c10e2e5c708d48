"""The SLURM recipe of docs/nodes.md against a real one-node SLURM that the test starts (Debian's
slurm-wlm and munge, as root; benchmarks/accuracy/real/slurm_local.py): a batch script whose training
step fails runs `srun --ntasks-per-node=1 rankautopsy scan --epilogue ...` on every node, and one
`diagnose` over the shared directory names the same first death as `diagnose` over the raw files.
Skipped, with the reason, where SLURM cannot start here."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC
from pathlib import Path
from types import ModuleType

import pytest

from rankautopsy.pipeline import Options, diagnose
from rankautopsy.render.json import render_json

REPO = Path(__file__).resolve().parent.parent
XID = REPO / "fixtures" / "multinode-xid79-rank6"
SLURM_LOCAL = REPO / "benchmarks" / "accuracy" / "real" / "slurm_local.py"

SCRIPT = """\
#!/bin/bash
#SBATCH --job-name=train --nodes=1 --ntasks-per-node=1 --output={out}/slurm-%j.out
srun sh -c 'echo training; exit 3' || {{
  status=$?  # the failure path: one scan per node, where that node's logs and kernel log are
  srun --nodes=$SLURM_NNODES --ntasks-per-node=1 \\
    sh -c 'rankautopsy scan --epilogue {logs} --dmesg {dmesg} -o {shared}/$(hostname).events.jsonl.gz'
  exit $status
}}
"""


def _why_not() -> str | None:
    missing = [
        tool for tool in ("slurmctld", "slurmd", "munged", "sbatch", "sinfo", "unshare") if not shutil.which(tool)
    ]
    if missing:
        return f"not installed: {', '.join(missing)} (apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "the local SLURM runs its daemons as root"
    for port in (6817, 6818):
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.1.1", port)) == 0:
                return f"port {port} is taken (another SLURM is running here)"
    return None


def _slurm_local() -> ModuleType:
    spec = importlib.util.spec_from_file_location("slurm_local", SLURM_LOCAL)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ModuleType, Path]]:
    if (why := _why_not()) is not None:
        pytest.skip(why)
    local = _slurm_local()
    state = tmp_path_factory.mktemp("slurm")
    before = os.environ.get("SLURM_CONF")
    try:
        local.start(state)
    except (RuntimeError, OSError) as exc:
        local.stop()
        pytest.skip(f"SLURM did not start here: {exc}")
    try:
        yield local, state
    finally:
        local.stop()
        if before is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = before


def _report(paths: list[str]) -> dict[str, object]:
    return json.loads(render_json(diagnose(Options(paths=paths, tz=UTC))))  # type: ignore[no-any-return]


def test_the_slurm_recipe_scans_each_node_and_one_diagnose_names_the_first_death(
    slurm: tuple[ModuleType, Path], tmp_path: Path
) -> None:
    local, state = slurm
    shared, out = tmp_path / "shared", tmp_path / "out"
    shared.mkdir()
    out.mkdir()
    script = tmp_path / "job.sbatch"  # node01's share of a two-node job; node02 was scanned elsewhere
    script.write_text(
        SCRIPT.format(out=out, logs=XID / "logs" / "node01.log", dmesg=XID / "dmesg-node01.txt", shared=shared)
    )
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}", "TZ": "UTC"}
    done = subprocess.run(
        local._ns(state, ["sbatch", "--wait", str(script)]), env=env, capture_output=True, timeout=180
    )
    assert done.returncode != 0  # the job failed: its training step exited 3
    written = sorted(p.name for p in shared.iterdir())
    assert written == ["node01.events.jsonl.gz"], (written, *(p.read_text() for p in out.iterdir()))
    other = tmp_path / "node02.events.jsonl.gz"
    argv = [sys.executable, "-m", "rankautopsy", "scan", "-q", "--host", "node02", "--tz", "UTC"]
    subprocess.run(
        [*argv, str(XID / "logs" / "node02.log"), "--dmesg", str(XID / "dmesg-node02.txt"), "-o", str(other)],
        check=True,
    )
    shutil.move(other, shared / other.name)
    raw = _report(
        [
            str(XID / "logs" / "node01.log"),
            str(XID / "dmesg-node01.txt"),
            str(XID / "logs" / "node02.log"),
            str(XID / "dmesg-node02.txt"),
        ]
    )
    merged = _report([str(shared)])
    assert merged["verdict"] == raw["verdict"] and merged["events"] == raw["events"] and merged["ranks"] == raw["ranks"]
    cli = subprocess.run(
        [sys.executable, "-m", "rankautopsy", "diagnose", str(shared), "--format", "json"], capture_output=True, env=env
    )
    assert cli.returncode == 1 and json.loads(cli.stdout)["verdict"]["first_death"]["host"] == "node02"
