"""`rankautopsy drill`: the injected-death test for CI. Exit 0 when diagnose named the rank and cause
and the job ended in bounded time, 1 when not, 2 on bad usage (or without torch)."""

import sys
from typing import Annotated

import typer

HOW_HELP = "How the rank dies: exception, sigkill, sigsegv, exit or hang."


def drill_command(
    how: Annotated[str, typer.Option("--how", metavar="WAY", help=HOW_HELP)] = "exception",
    rank: Annotated[int, typer.Option("--rank", metavar="N", help="The rank that dies.")] = 1,
    step: Annotated[int, typer.Option("--step", metavar="N", help="The step at which it dies.")] = 3,
    nproc: Annotated[int, typer.Option("--nproc", metavar="N", help="Ranks in the job (2 to 64).")] = 2,
    timeout: Annotated[
        float, typer.Option("--timeout", metavar="SECONDS", help="The job's process-group timeout.")
    ] = 30.0,
    margin: Annotated[
        float, typer.Option("--margin", metavar="SECONDS", help="Time allowed beyond the timeout (startup, teardown).")
    ] = 60.0,
    directory: Annotated[
        str | None, typer.Option("--dir", metavar="DIR", help="Where to keep the job's logs (default: a temp dir).")
    ] = None,
) -> None:
    """Run a small CPU gloo job in which one rank dies, and check that diagnose names it (needs torch)."""
    from rankautopsy.drill import run_drill

    result = run_drill(how, rank=rank, step=step, nproc=nproc, timeout=timeout, margin=margin, directory=directory)
    sys.stdout.write(result.summary() + "\n")
    raise typer.Exit(0 if result.passed else 1)
