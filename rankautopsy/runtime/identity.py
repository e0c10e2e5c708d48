"""Who this process is: rank, local rank, world size and host, from the launchers' environment."""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping

from rankautopsy.records import record

# Read in this order: torchrun (also under srun or mpirun), Open MPI, MPICH/Hydra and PMIx, SLURM.
_RANK = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID")
_LOCAL_RANK = ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID")
_WORLD = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")


@record
class Identity:
    rank: int | None
    local_rank: int | None
    world_size: int | None
    pid: int
    host: str


def _first_int(env: Mapping[str, str], names: tuple[str, ...]) -> int | None:
    for name in names:
        value = env.get(name, "").strip()
        if value.isdigit() and len(value) < 10:
            return int(value)
    return None


def _torch_rank() -> int | None:
    """The default process group's rank, if torch.distributed is already imported and initialised."""
    dist = sys.modules.get("torch.distributed")
    try:
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank())
    except Exception:
        return None
    return None


def identify(env: Mapping[str, str] | None = None) -> Identity:
    env = os.environ if env is None else env
    rank = _first_int(env, _RANK)
    return Identity(
        rank=rank if rank is not None else _torch_rank(),
        local_rank=_first_int(env, _LOCAL_RANK),
        world_size=_first_int(env, _WORLD),
        pid=os.getpid(),
        host=socket.gethostname(),
    )
