"""Failure messages read end to end, in the formats their emitters' sources print: c10d store clients,
the elastic rendezvous, MPI aborts (Open MPI, MPICH), horovodrun, Ray's caller-side exceptions, SLURM's
job-step banner, the kernel's hung-task and memory-failure reports; NCCL and the NVIDIA driver; the
frameworks' own ends of a run; CPython's caught tracebacks in logs without timestamps."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_emitter_shapes import first, run, steps

from rankautopsy.model import Cause, Confidence, Diagnosis, Outcome, Role
from rankautopsy.pipeline import Options, diagnose

TRACEBACK = 'Traceback (most recent call last):\n  File "train.py", line 40, in <module>\n    dist.barrier()\n'
HYDRA_BANNER = (
    "===================================================================================\n"
    "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n"
    "=   PID 31340 RUNNING AT node01\n"
    "=   EXIT CODE: 9\n"
    "=   CLEANING UP REMAINING PROCESSES\n"
    "=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES\n"
    "===================================================================================\n"
)


def hung_task(stamp: str, pid: int) -> str:
    return f"[Sun Nov 29 {stamp} 2026] INFO: task pt_main_thread:{pid} blocked for more than 122 seconds.\n"


def nccl_identity(rank: int, pid: int) -> str:
    return f"node01:{pid}:{pid} [{rank}] NCCL INFO cudaDriverVersion 12040\n"


def test_store_clients_that_lost_the_store_host_are_not_its_first_death(tmp_path: Path) -> None:
    files = {f"rank_{r}.log": steps(r, 5) for r in range(3)}
    files["rank_1.log"] += TRACEBACK + "torch.distributed.DistNetworkError: Broken pipe\n"
    files["rank_2.log"] += (
        TRACEBACK + "torch.distributed.DistNetworkError: Failed to send, sent 0 bytes. Connection was likely "
        "closed. Did the remote server shutdown or crash?\n"
    )
    d = run(tmp_path, files)
    assert first(d)[0] == 0
    assert {e.rank for e in d.events if e.role is Role.SYMPTOM} == {1, 2}


def test_a_store_nobody_reached_names_no_rank(tmp_path: Path) -> None:
    timed_out = (
        "torch.distributed.DistNetworkError: The client socket has timed out after 600000ms while trying to "
        "connect to (10.10.12.11, 25000).\n"
    )
    d = run(tmp_path, {f"rank_{r}.log": TRACEBACK + timed_out for r in (1, 2)})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert all(e.cause is Cause.PEER_LOST for e in d.events if e.role is not Role.CONTEXT)


@pytest.mark.parametrize(
    "launcher",
    [
        (  # torchrun's agent, another node having closed the rendezvous
            "torchrun",
            '  File "/opt/torch/distributed/elastic/rendezvous/dynamic_rendezvous.py", line 677, in next_rendezvous\n'
            "    raise RendezvousClosedError\n"
            "torch.distributed.elastic.rendezvous.api.RendezvousClosedError\n",
        ),
        ("horovodrun", "RuntimeError: mpirun failed with exit code 1\n"),  # the launcher it ran failed
    ],
)
def test_a_launchers_own_traceback_is_no_cause(launcher: tuple[str, str], tmp_path: Path) -> None:
    name, tail = launcher
    agent = f'Traceback (most recent call last):\n  File "/usr/bin/{name}", line 8, in <module>\n    sys.exit(main())\n'
    d = run(tmp_path, {f"{name}.log": agent + tail})
    assert d.verdict.first_death is None
    assert not any(e.role is Role.CAUSE for e in d.events)


def test_mpichs_abort_line_names_the_world_rank_not_hydras_pid(tmp_path: Path) -> None:
    console = (
        "step 3\n"
        "Abort(1) on node 2 (rank 2 in comm 0): application called MPI_Abort(MPI_COMM_WORLD, 1) - process 2\n"
        "\n" + HYDRA_BANNER
    )
    assert first(run(tmp_path, {"console.log": console}))[0] == 2


def test_open_mpis_abort_banner_names_the_aborting_rank(tmp_path: Path) -> None:
    console = (
        "step 3\n"
        "--------------------------------------------------------------------------\n"
        "MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD\n"
        "with errorcode 1.\n"
        "\n"
        "NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d)[0] == 3
    assert d.verdict.first_death is not None and d.verdict.first_death.rule == "mpi.abort-invoked"


def test_horovodruns_report_names_the_first_failed_rank(tmp_path: Path) -> None:
    console = (
        "[0]<stdout>:step 1\n[3]<stdout>:step 1\n"
        "RuntimeError: Horovod detected that one or more processes exited with non-zero status, thus causing "
        "the job to be terminated. The first process to do so was:\n"
        "Process name: 3\nExit code: 1\n"
    )
    assert first(run(tmp_path, {"horovodrun.log": console}))[0] == 3


def test_rays_out_of_memory_error_is_host_memory(tmp_path: Path) -> None:
    driver = (
        'Traceback (most recent call last):\n  File "train.py", line 10, in <module>\n    ray.get(refs)\n'
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.\n"
    )
    d = run(tmp_path, {"driver.log": driver})
    assert {e.cause for e in d.events if e.role is Role.CAUSE} == {Cause.HOST_OOM}


def test_a_slurm_step_banner_is_no_training_step(tmp_path: Path) -> None:
    console = (
        "0: step 5\n1: step 5\n"
        "slurmstepd: error: *** STEP 1234.0 ON node12 CANCELLED AT 2026-11-29T07:00:00 DUE TO TIME LIMIT ***\n"
    )
    d = run(tmp_path, {"slurm-1234.out": console})
    assert {e.facts.get("step") for e in d.events if e.role is Role.PROGRESS} == {"5"}
    assert first(d)[1] is Cause.TIME_LIMIT


def test_a_rank_blocked_in_the_kernel_is_the_hang_culprit(tmp_path: Path) -> None:
    files = {f"rank_{r}.log": nccl_identity(r, 4240 + r) + steps(r, 5) for r in range(3)}
    files["dmesg.txt"] = hung_task("07:05:02", 4241)
    assert first(run(tmp_path, files)) == (1, Cause.HANG)


def test_a_rank_that_went_on_after_a_hung_task_report_did_not_die_of_it(tmp_path: Path) -> None:
    files = {f"rank_{r}.log": nccl_identity(r, 4240 + r) + steps(r, 50) for r in range(3)}
    files["rank_2.log"] += 'Traceback (most recent call last):\n  File "train.py", line 40\nValueError: bad shard\n'
    files["dmesg.txt"] = hung_task("07:00:10", 4241)
    assert first(run(tmp_path, files)) == (2, Cause.PYTHON_EXCEPTION)


def test_a_hardware_memory_error_is_the_bus_error_of_that_pid(tmp_path: Path) -> None:
    files = {f"rank_{r}.log": nccl_identity(r, 4240 + r) + steps(r, 5) for r in range(3)}
    files["dmesg.txt"] = (
        "[Sun Nov 29 07:00:07 2026] Memory failure: 0x1a2b3c4: Sending SIGBUS to pt_main_thread:4241 due to "
        "hardware memory corruption\n"
    )
    assert first(run(tmp_path, files)) == (1, Cause.BUS_ERROR)


def test_a_worker_reaped_by_elastics_timer_is_the_hang_of_that_pid(tmp_path: Path) -> None:
    console = (
        "[rank0]: 2026-11-29 07:00:01,000 INFO step 1\n[rank1]: 2026-11-29 07:00:01,000 INFO step 1\n"
        "I1129 07:10:05.000000 4100 torch/distributed/elastic/timer/file_based_local_timer.py:343] Successfully "
        "reaped worker=[4243] with signal=9\n"
        "E1129 07:10:07.000000 4100 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -9) "
        "local_rank: 1 (pid: 4243) of binary: /usr/bin/python\n"
    )
    assert first(run(tmp_path, {"console.log": console})) == (1, Cause.HANG)


def test_a_second_nodes_agent_maps_no_local_rank_to_a_global_one(tmp_path: Path) -> None:
    """The lines of torch 2.13's second agent of a two-node c10d job (its only worker, global rank 1, lost
    its peer when the first node's worker raised): `local_rank: 0` there is not rank 0."""
    node = (
        "W1206 04:44:11.553000 2291 torch/distributed/run.py:865] node_rank is only used for static rdzv_backend. "
        "It will be ignored for rdzv_backend=c10d.\n"
        "2026-12-06 04:44:13,153 INFO rank 1 step 3\n"
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/tmp/rdzv/train.py", line 7, in <module>\n'
        "[rank1]:     t = torch.ones(2); dist.all_reduce(t)\n"
        "[rank1]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
        "closed by peer [127.0.0.1]:27325. This is typically caused by a remote worker crashing.\n"
        "E1206 04:44:13.748000 2291 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) "
        "local_rank: 0 (pid: 2296) of binary: /work/venv/bin/python3\n"
    )
    d = run(tmp_path, {"nodeB.log": node})
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death is None


def test_one_nodes_failure_table_maps_no_local_rank_of_another_node(tmp_path: Path) -> None:
    """Two agents' lines (torch 2.13, c10d): node B's table ties its local rank 0 to rank 1; node A's own
    `local_rank: 0` exit is another process (rank 0's), not a second exit of rank 1."""
    node_a = (
        "[rank0]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection "
        "closed by peer [127.0.0.1]:388.\n"
        "E1206 04:47:56.224000 3636 torch/distributed/elastic/multiprocessing/api.py:1002] failed (exitcode: 1) "
        "local_rank: 0 (pid: 3645) of binary: /work/venv/bin/python3\n"
    )
    node_b = (
        "W1206 04:47:54.000000 3639 torch/distributed/run.py:865] node_rank is only used for static rdzv_backend. "
        "It will be ignored for rdzv_backend=c10d.\n"
        "[rank1]: ValueError: bad sample 17\n"
        "Root Cause (first observed failure):\n[0]:\n  time      : 2026-12-06_04:47:55\n  host      : localhost\n"
        "  rank      : 1 (local_rank: 0)\n  exitcode  : 1 (pid: 3644)\n  error_file: <N/A>\n"
    )
    d = run(tmp_path, {"nodeA.log": node_a, "nodeB.log": node_b})
    exits = {(e.where.source.rsplit("/", 1)[-1], e.rank) for e in d.events if e.rule == "torchrun.worker-failed"}
    assert exits == {("nodeA.log", None)}
    assert first(d)[0] == 1


def nccl_init(host: str, pid: int, rank: int, bus: str) -> str:
    return (
        f"{host}:{pid}:{pid + 58} [0] NCCL INFO comm 0x55df01b24dd{rank} rank {rank} nranks 2 cudaDev {rank} "
        f"nvmlDev {rank} busId {bus} commId 0x2114bc51af4fb978 - Init COMPLETE\n"
    )


def test_an_mmu_fault_xid_is_the_programs_cuda_error_not_the_gpus(tmp_path: Path) -> None:
    files = {
        "rank_0.log": nccl_init("node07", 4242, 0, "3b000")
        + "2026-11-29 07:00:50,000 INFO step 100\n"
        + "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\n",
        "rank_1.log": nccl_init("node07", 4243, 1, "5e000") + "2026-11-29 07:00:50,000 INFO step 100\n",
        "dmesg.txt": "[Sun Nov 29 07:01:02 2026] NVRM: Xid (PCI:0000:3b:00): 31, pid=4242, name=pt_main_thread, Ch "
        "00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_0 faulted @ 0x7f2b_3c000000.\n",
    }
    d = run(tmp_path, files)
    assert first(d) == (0, Cause.CUDA_ERROR)
    assert not any(e.cause is Cause.GPU_HARDWARE for e in d.events)


def test_nccl_2_2x_async_port_error_names_the_rank_whose_nic_failed(tmp_path: Path) -> None:
    lost = (
        "[E1129 07:01:41.123456789 ProcessGroupNCCL.cpp:1595] Process group watchdog thread terminated with "
        "exception: NCCL error: remote process exited or there was a network error, NCCL version 2.21.5\n"
    )
    files = {
        "rank_0.log": nccl_init("node07", 4242, 0, "3b000")
        + "2026-11-29 07:01:00,000 INFO step 101\n"
        + "node07:4242:4310 [0] transport/net_ib.cc:101 NCCL WARN NET/IB : mlx5_0:1 Got async event : port error\n"
        + "[rank0]:"
        + lost,
        "rank_1.log": nccl_init("node08", 5151, 1, "3b000") + "2026-11-29 07:01:00,000 INFO step 101\n[rank1]:" + lost,
    }
    assert first(run(tmp_path, files)) == (0, Cause.NCCL_ERROR)


def test_a_cuda_failure_nccl_logged_at_info_and_cleared_is_no_cause(tmp_path: Path) -> None:
    files = {
        "rank_0.log": steps(0, 5) + "node07:4242:4300 [0] NCCL INFO enqueue.cc:1196 Cuda failure 'invalid argument'\n"
        "2026-11-29 07:00:06,000 INFO [rank 0] step 6/100\n",
        "rank_1.log": steps(1, 5) + TRACEBACK + "ValueError: bad shard 17\n",
    }
    d = run(tmp_path, files)
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)
    assert not any(e.cause is Cause.CUDA_ERROR for e in d.events)


def test_a_traceback_ending_in_a_dataloader_workers_exit_is_its_ranks_death(tmp_path: Path) -> None:
    files = {f"rank_{r}.log": steps(r, 5) for r in range(2)}
    files["rank_1.log"] += TRACEBACK + "RuntimeError: DataLoader worker (pid(s) 48211) exited unexpectedly\n"
    assert first(run(tmp_path, files)) == (1, Cause.PYTHON_EXCEPTION)


def checkpoint_exception(rank: int, failed: int) -> str:
    tag = f"[rank{rank}]: "
    return "".join(
        tag + line + "\n"
        for line in (
            "Traceback (most recent call last):",
            '  File "/opt/torchtitan/torchtitan/components/checkpoint.py", line 512, in save',
            "    dcp.save(state_dict, checkpoint_id=checkpoint_id)",
            f"torch.distributed.checkpoint.api.CheckpointException: CheckpointException ranks:dict_keys([{failed}])",
            f"Traceback (most recent call last): (RANK {failed})",
            '  File "/usr/lib/python3/dist-packages/torch/distributed/checkpoint/filesystem.py", line 387, in _write',
            "    torch.save(data, stream)",
            "OSError: [Errno 28] No space left on device",
        )
    )


def test_a_checkpoint_exception_on_every_rank_names_the_rank_whose_save_failed(tmp_path: Path) -> None:
    files = {f"rank_{r}.log": steps(r, 5) + checkpoint_exception(r, 3) for r in range(4)}
    d = run(tmp_path, files)
    assert first(d) == (3, Cause.PYTHON_EXCEPTION)
    assert d.verdict.first_death is not None and "No space left" in d.verdict.first_death.detail
    relays = [e for e in d.events if e.facts.get("relay_of") == "3" and e.rank != 3]
    assert len(relays) == 3 and all(e.role is Role.CONTEXT for e in relays)


def test_megatrons_result_validation_names_the_rank_with_the_nan_not_the_exit_16(tmp_path: Path) -> None:
    console = "".join(f"[default{r}]:2026-11-29 07:00:10,100 INFO [rank {r}] step 5 loss 2.25\n" for r in range(4)) + (
        "[default1]:Unexpected result nan on rank 1 at iteration #6 invocation #1 (message='found NaN in local "
        "forward loss calculation')\n"
        "[default0]:Saving a checkpoint and exiting now. Please resume the job from the checkpoint to rerun the "
        "last iteration and establish a diagnostic\n"
        "E1129 07:00:30.816000 56204 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: 16) "
        "local_rank: 0 (pid: 56213) of binary: /usr/bin/python3\n"
    )
    assert first(run(tmp_path, {"console.log": console}))[0] == 1


def test_a_ctrl_c_lightning_caught_is_no_first_death(tmp_path: Path) -> None:
    console = (
        "[default0]:2026-11-29 07:00:05,100 INFO [rank 0] step 5 loss 2.3\n"
        "[default1]:2026-11-29 07:00:05,100 INFO [rank 1] step 5 loss 2.3\n"
        "[default0]:Detected KeyboardInterrupt, attempting graceful shutdown ...\n"
        "E1129 07:00:09.300000 5000 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
        "local_rank: 0 (pid: 8860) of binary: /usr/bin/python3\n"
    )
    assert run(tmp_path, {"console.log": console}).verdict.first_death is None


def test_composers_microbatching_giving_up_is_a_cuda_oom(tmp_path: Path) -> None:
    files = {f"rank_{r}.log": steps(r, 5) for r in range(2)}
    files["rank_1.log"] += (
        TRACEBACK + "RuntimeError: CUDA out of memory or excessive memory allocation retries detected. The train "
        "loop failed with an internal microbatch of size 1.The GPU does not have enough memory to process even 1 "
        "sample during train.\n"
    )
    assert first(run(tmp_path, files)) == (1, Cause.CUDA_OOM)


def test_sglangs_dead_scheduler_is_its_rank_not_the_servers_eoferror(tmp_path: Path) -> None:
    console = (
        "".join(f"[2025-04-23 21:31:01 TP{r}] Load weight begin. avail mem=78.50 GB\n" for r in range(4))
        + "[2025-04-23 21:31:41] Rank 2 scheduler is dead. Please check if there are relevant logs.\n"
        "[2025-04-23 21:31:41] Exit code: -9\n"
        'Traceback (most recent call last):\n  File "/sglang/srt/entrypoints/engine.py", line 740, in _launch\n'
        "    data = scheduler_pipe_readers[i].recv()\nEOFError\n"
    )
    assert first(run(tmp_path, {"console.log": console})) == (2, Cause.KILLED)


CAUGHT = (
    "ERROR:root:skipping bad sample\nTraceback (most recent call last):\n"
    '  File "train.py", line 6, in <module>\n    {}["label"]\n    ~~^^^^^^^^^\n'
    "KeyError: 'label'\n"
)


def test_of_unstamped_deaths_a_traceback_its_rank_went_on_from_is_not_named_first(tmp_path: Path) -> None:
    """CPython 3.11's output, no timestamps: rank 0 logged a caught KeyError and trained on; rank 1 died."""
    files = {
        "rank_0.log": "step 1\nstep 2\n" + CAUGHT + "step 3\nstep 4\nstep 5\nstep 6\n",
        "rank_1.log": "step 1\nstep 2\nstep 3\nstep 4\nstep 5\nstep 6\n"
        + TRACEBACK
        + "ValueError: bad sample 1234 in shard 7\n",
    }
    d = run(tmp_path, files)
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)
    assert any("caught and logged" in note for note in d.verdict.notes)


def test_a_lone_traceback_its_rank_went_on_from_is_no_sure_death(tmp_path: Path) -> None:
    d = run(
        tmp_path, {"rank_0.log": "step 1\nstep 2\nstep 3\n", "rank_1.log": "step 1\nstep 2\n" + CAUGHT + "step 3\n"}
    )
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)
    assert d.verdict.confidence is Confidence.MEDIUM


def test_steps_after_an_exception_line_are_progress_not_its_message(tmp_path: Path) -> None:
    d = run(tmp_path, {"rank_1.log": "step 1\n" + CAUGHT + "step 2\nstep 40\n"})
    (tb,) = [e for e in d.events if e.rule == "python.traceback"]
    assert [ev.text for ev in tb.lines] == ["KeyError: 'label'"]
    assert max(int(e.facts["step"]) for e in d.events if e.role is Role.PROGRESS) == 40


def test_two_nodes_known_by_local_ranks_that_all_finished_are_clean(tmp_path: Path) -> None:
    node = "".join(f"[default{r}]:2026-12-01 11:07:16,767 INFO __main__: step 10/10 loss 0.6\n" for r in range(2))
    node += "".join(f"[default{r}]:2026-12-01 11:07:16,776 INFO __main__: training done: 10 steps\n" for r in range(2))
    second = (
        "W1201 11:07:06.794000 30301 torch/distributed/run.py:865] node_rank is only used for static rdzv_backend. "
        "It will be ignored for rdzv_backend=c10d.\n"
    )
    d = run(tmp_path, {"node01.log": node, "node02.log": second + node})
    assert d.verdict.outcome is Outcome.CLEAN
    assert d.verdict.confidence is Confidence.MEDIUM


def chained(
    *exceptions: str, separator: str = "The above exception was the direct cause of the following exception:"
) -> str:
    return f"\n{separator}\n\n".join(f"{TRACEBACK}{exc}\n" for exc in exceptions)


def test_an_exception_chain_is_one_death_read_from_its_last_telling_exception(tmp_path: Path) -> None:
    during = "During handling of the above exception, another exception occurred:"
    cases = {
        "oom": (
            chained(
                "KeyError: 'sample-17'",
                "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
                separator=during,
            ),
            Cause.CUDA_OOM,
        ),
        "worker": (
            chained(
                "RuntimeError: DataLoader worker (pid 29761) is killed by signal: Killed. ",
                "RuntimeError: DataLoader worker (pid(s) 29761) exited unexpectedly",
            ),
            Cause.KILLED,
        ),
        "plain": (chained("FileNotFoundError: shard 7", "ValueError: checkpoint missing"), Cause.PYTHON_EXCEPTION),
    }
    for name, (text, cause) in cases.items():
        (tmp_path / name).mkdir()
        d = run(tmp_path / name, {"rank_0.log": steps(0, 5), "rank_1.log": steps(1, 5) + text})
        assert first(d) == (1, cause), name
        assert len([e for e in d.events if e.rule == "python.traceback"]) == 1, name


def test_a_plain_exception_raised_from_a_lost_peer_is_that_ranks_symptom(tmp_path: Path) -> None:
    lost = (
        "torch.distributed.DistBackendError: NCCL error in: NCCLUtils.hpp:275, remote process exited or there was "
        "a network error, NCCL version 2.19.3"
    )
    files = {
        "rank_0.log": steps(0, 5) + TRACEBACK + "ValueError: bad sample 1234\n",
        "rank_1.log": steps(1, 5) + chained(lost, "RuntimeError: Training failed at step 3 on rank 1"),
    }
    d = run(tmp_path, files)
    assert first(d) == (0, Cause.PYTHON_EXCEPTION)
    assert {e.rank for e in d.events if e.role is Role.SYMPTOM} == {1}


def test_tracebacks_a_handler_printed_and_went_on_from_are_no_death(tmp_path: Path) -> None:
    """CPython's handlers that print a traceback and let the process go on (3.8-3.13 wording)."""
    headers = {
        "logging": "--- Logging error ---\n",
        "task": "Task exception was never retrieved\nfuture: <Task finished name='Task-2' coro=<fetch() done> "
        "exception=ConnectionResetError('peer reset')>\n",
        "callback": "Exception in callback cb() at /job/x.py:3\nhandle: <Handle cb() at /job/x.py:3>\n",
        "atexit": "Error in atexit._run_exitfuncs:\n",
    }
    for name, header in headers.items():
        (tmp_path / name).mkdir()
        text = steps(1, 3) + header + TRACEBACK + "ConnectionResetError: peer reset while fetching shard 1\n"
        d = run(tmp_path / name, {"rank_0.log": steps(0, 3), "rank_1.log": text})
        assert d.verdict.first_death is None and not any(e.role is Role.CAUSE for e in d.events), name


def test_an_uncaught_exception_group_is_its_ranks_death_read_through_its_sub_exceptions(tmp_path: Path) -> None:
    """CPython 3.11-3.13 print an uncaught ExceptionGroup in a box, never at column 0."""
    group = (
        "  + Exception Group Traceback (most recent call last):\n"
        '  |   File "/job/train.py", line 3, in <module>\n'
        '  |     raise ExceptionGroup("two loaders failed", [ValueError("bad"), OSError("x")])\n'
        "  | ExceptionGroup: two loaders failed (2 sub-exceptions)\n"
        "  +-+---------------- 1 ----------------\n"
        "    | ValueError: bad sample 1234\n"
        "    +---------------- 2 ----------------\n"
        "    | torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
        "    +------------------------------------\n"
    )
    d = run(tmp_path, {"rank_0.log": steps(0, 5), "rank_1.log": steps(1, 3) + group})
    assert first(d) == (1, Cause.CUDA_OOM)
    assert d.verdict.first_death is not None and d.verdict.first_death.detail.startswith("ExceptionGroup: two loaders")


def test_a_fatal_python_error_of_the_interpreter_is_an_abort(tmp_path: Path) -> None:
    dump = (
        "Fatal Python error: custom extension: invariant broken\nPython runtime state: initialized\n\n"
        "Current thread 0x00007fef4cbebb80 (most recent call first):\n"
        '  File "/job/train.py", line 4 in <module>\n'
    )
    assert first(run(tmp_path, {"rank_0.log": steps(0, 5), "rank_1.log": steps(1, 3) + dump})) == (1, Cause.ABORT)


def test_a_host_allocation_that_failed_in_the_process_is_host_memory(tmp_path: Path) -> None:
    failed = (
        "RuntimeError: [enforce fail at alloc_cpu.cpp:83] data. DefaultCPUAllocator: can't allocate memory: you "
        "tried to allocate 1073741824 bytes. Error code 12 (Cannot allocate memory)\n"
    )
    for name, line in {"torch": failed, "python": "MemoryError\n"}.items():
        (tmp_path / name).mkdir()
        d = run(tmp_path / name, {"rank_0.log": steps(0, 5), "rank_1.log": steps(1, 3) + TRACEBACK + line})
        assert first(d) == (1, Cause.HOST_OOM), name


def test_an_argument_parser_that_refused_torchruns_local_rank_is_the_ranks_death(tmp_path: Path) -> None:
    usage = "usage: train.py [-h] [--local_rank LOCAL_RANK]\ntrain.py: error: unrecognized arguments: --local-rank=1\n"
    d = run(tmp_path, {"rank_1.log": usage})
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)
    assert d.verdict.first_death is not None and "--local-rank=1" in d.verdict.first_death.detail


def test_an_exception_class_defined_in_a_function_is_read_by_its_qualified_name(tmp_path: Path) -> None:
    text = steps(1, 3) + TRACEBACK + "make.<locals>.ShardError: shard 7 is corrupt\n"
    d = run(tmp_path, {"rank_0.log": steps(0, 5), "rank_1.log": text})
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)
    assert d.verdict.first_death is not None and d.verdict.first_death.detail.startswith("make.<locals>.ShardError")


def test_the_ft_rank_monitors_kills_are_a_hang_not_deaths_by_an_unknown_sender(tmp_path: Path) -> None:
    console = "".join(f"[default{r}]:2026-11-29 07:00:10,100 INFO [rank {r}] step 5 loss 2.25\n" for r in range(4))
    console += "".join(
        f"[2026-11-29 07:10:10,1{r}0] [WARNING] [RankMonServer424{r}@gpu-07:{r}] [Cycle 0] Did not get subsequent "
        "heartbeat. Waited 600.00 seconds.\n"
        for r in range(4)
    )
    console += (
        "E1129 07:10:11.816000 56204 torch/distributed/elastic/multiprocessing/api.py:874] failed (exitcode: -9) "
        "local_rank: 1 (pid: 56214) of binary: /usr/bin/python3\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.HANG
    assert d.verdict.first_death is not None and d.verdict.first_death.rank is None


REPO = Path(__file__).parents[1]
REAL_OOM = REPO / "benchmarks/accuracy/real/torchrun-memcg-oom-rank1-logging"


def with_dmesg(logs: Path, dmesg: Path) -> Diagnosis:
    return diagnose(Options(paths=[str(logs)], dmesg=[str(dmesg)], tz=UTC))


def _dmesg_shifted(seconds: int) -> str:
    """The real case's `dmesg -T` lines with their clock moved, as a kernel clock that drifted moves them."""
    out = []
    for line in (REAL_OOM / "dmesg.txt").read_text().splitlines(keepends=True):
        stamp, rest = line[1:].split("]", 1)
        moved = datetime.strptime(stamp, "%a %b %d %H:%M:%S %Y") + timedelta(seconds=seconds)
        out.append(f"[{moved:%a %b} {moved.day:2d} {moved:%H:%M:%S %Y}]{rest}")
    return "".join(out)


@pytest.mark.parametrize("seconds", [-60, -3, 3, 60])
def test_a_kernel_clock_that_drifted_does_not_unmake_the_kill_of_the_pid_that_exited(
    tmp_path: Path, seconds: int
) -> None:
    (tmp_path / "dmesg.txt").write_text(_dmesg_shifted(seconds))
    d = with_dmesg(REAL_OOM / "logs", tmp_path / "dmesg.txt")
    assert first(d) == (1, Cause.HOST_OOM)
    f = d.verdict.first_death
    assert f is not None and f.time is not None and f.phase.value == "training"
    # alive at its last step line (06:43:59.645), dead when torchrun said so (06:43:59.971)
    assert datetime(2026, 12, 6, 6, 43, 59, 645000, UTC) <= f.time.earliest
    assert f.time.latest <= datetime(2026, 12, 6, 6, 43, 59, 971000, UTC)
    assert any("clock is off" in n and "pid 4194" in n for n in d.verdict.notes)


SCANCELLED = (
    "0: step 3/10 loss 1.8504 lr 0.0700\n1: step 3/10 loss 1.8504 lr 0.0700\n"
    "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.\n"
    "0: slurmstepd-node01: error: *** STEP 1.0 ON node01 CANCELLED AT 2026-12-06T06:59:47 ***\n"
    "srun: error: node01: tasks 0-1: Terminated\n"
)


def test_a_job_cancelled_before_any_rank_died_says_it_was_ended_from_outside(tmp_path: Path) -> None:
    d = run(tmp_path, {"console.log": SCANCELLED})
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death is None
    said = " ".join(d.verdict.reasoning)
    assert "ended from outside" in said and "CANCELLED AT 2026-12-06T06:59:47" in said
    assert any("sacct" in n for n in d.verdict.fetch_next)


def test_a_rank_that_raised_before_the_cancel_is_not_hidden_by_it(tmp_path: Path) -> None:
    labelled = "1: " + TRACEBACK.replace("\n  ", "\n1:   ") + "1: ValueError: bad\n"
    raised = SCANCELLED.replace("srun: Job", labelled + "srun: Job")
    d = run(tmp_path, {"console.log": raised})
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)
    assert not any("ended from outside" in r for r in d.verdict.reasoning)


def test_the_tail_of_a_labelled_mpich_job_still_names_its_rank(tmp_path: Path) -> None:
    """A paste of a job's last lines: Hydra's unlabelled BAD TERMINATION banner is a third of them."""
    real = REPO / "benchmarks/accuracy/real/mpich-segfault-rank1-label-faulthandler-hf"
    tail = (real / "logs/console.log").read_text().splitlines(keepends=True)[-25:]
    assert sum(line.startswith("[1] ") for line in tail) < 0.6 * len(tail)
    d = run(tmp_path, {"console.log": "".join(tail)})
    assert first(d) == (1, Cause.SEGFAULT)


def test_an_oom_kill_at_a_cgroups_limit_says_so_and_a_host_wide_one_does_not() -> None:
    f = with_dmesg(REAL_OOM / "logs", REAL_OOM / "dmesg.txt").verdict.first_death
    assert f is not None and f.cause is Cause.HOST_OOM
    assert "limit of its memory cgroup /ra-oom-4194 was reached" in f.detail
    host_wide = REPO / "fixtures/torchrun-sigkill-oom-rank1"
    d = with_dmesg(host_wide / "logs", host_wide / "dmesg.txt")
    assert first(d) == (1, Cause.HOST_OOM) and "cgroup" not in (d.verdict.first_death.detail or "")


def test_a_rank_below_the_highest_seen_that_left_no_line_caps_the_verdict(tmp_path: Path) -> None:
    """A paste of a job's tail: ranks 1 and 2 are seen, rank 0 (which exists: ranks count from 0) is not."""
    tail = (
        "1: [rank1]: RuntimeError: [../gloo/transport/tcp/pair.cc:553] Connection closed by peer [127.0.0.1]:5354\n"
        f"2: [rank2]: {TRACEBACK.rstrip().replace(chr(10), chr(10) + '2: [rank2]: ')}\n"
        "2: [rank2]: FloatingPointError: loss is nan at step 4\n"
        "srun: error: node01: task 1: Exited with exit code 1\n"
        "srun: error: node01: task 2: Exited with exit code 1\n"
    )
    d = run(tmp_path, {"console.log": tail})
    assert first(d) == (2, Cause.PYTHON_EXCEPTION)
    assert d.verdict.confidence is Confidence.MEDIUM
    assert any("rank(s) 0 of the job left no log here" in c for c in d.verdict.caps)
    seen_all = run(tmp_path / "all", {"console.log": "0: step 3/10\n" + tail})
    assert seen_all.verdict.confidence is Confidence.HIGH


def test_the_desync_reports_lagging_rank_is_the_hang_culprit(tmp_path: Path) -> None:
    """TORCH_NCCL_DESYNC_DEBUG's report when every rank has a record: the rank behind the others' sequence."""
    report = (
        "[rank0]:[E515 18:36:47.341808597 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation"
        " timeout: WorkNCCL(SeqNum=241, OpType=ALLREDUCE, NumelIn=6, NumelOut=6, Timeout(ms)=600000) ran for"
        " 600086 milliseconds before timing out.\n"
        "[rank0]:[E515 18:36:47.343377708 ProcessGroupNCCL.cpp:1937] Rank 0\n"
        "\t - [0] Timeout at collective: ALLREDUCE, #315\n"
        "\t - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:\n"
        "\t     [{lag}] finished collective #182, but didn't join collective #183 (count from 1)\n"
        "\t - Snapshot of ranks' latest states:\n"
        "\t   #315 started ranks:\n"
        "\t     [0, 1, 2] started ALLREDUCE\n"
    )
    for lag in (3, 2):
        d = run(tmp_path / str(lag), {"console.log": report.replace("{lag}", str(lag))})
        assert d.verdict.outcome is Outcome.HANG and first(d) == (lag, Cause.HANG)
        assert d.verdict.first_death is not None  # its evidence opens on the line that names it
        assert f"[{lag}] finished collective #182" in d.verdict.first_death.evidence[0].text


def test_ddps_unused_parameter_error_names_the_rank_that_raised_it(tmp_path: Path) -> None:
    message = (
        "RuntimeError: Expected to have finished reduction in the prior iteration before starting a new one. "
        "This error indicates that your module has parameters that were not used in producing loss.\n"
        "Parameter indices which did not receive grad for rank {r}: 282 283\n"
    )
    for r in (1, 3):
        d = run(tmp_path / str(r), {"console.log": TRACEBACK + message.replace("{r}", str(r))})
        assert first(d) == (r, Cause.PYTHON_EXCEPTION)


def test_mpich_before_3_1_ends_with_its_exit_string_and_no_pid_line(tmp_path: Path) -> None:
    banner = HYDRA_BANNER.replace("=   PID 31340 RUNNING AT node01\n", "").replace("EXIT CODE: 9", "EXIT CODE: 135")
    d = run(tmp_path, {"console.log": banner + "APPLICATION TERMINATED WITH THE EXIT STRING: Bus error (signal 7)\n"})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert first(d) == (None, Cause.BUS_ERROR)


@pytest.mark.parametrize(
    ("error", "cause"), [("MPI_ERR_RANK: invalid rank", Cause.ABORT), ("MPI_ERR_OTHER: known error not in list", None)]
)
def test_an_mpi_call_that_failed_on_its_own_arguments_is_its_processs_abort(
    tmp_path: Path, error: str, cause: Cause | None
) -> None:
    """Open MPI's MPI_ERRORS_ARE_FATAL report: a usage error is the caller's; an error a dead peer causes is not."""
    report = "".join(
        f"[bend001:21445] *** {line}\n"
        for line in (
            "An error occurred in MPI_Send",
            "reported by process [139981018365953,21474836480]",
            "on communicator MPI COMMUNICATOR 3 DUP FROM 0",
            error,
            "MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,",
        )
    )
    d = run(tmp_path, {"console.log": report})
    assert first(d) == (None, cause)


def test_spawns_relay_whose_childs_report_is_cut_off_is_a_failure_of_no_known_worker(tmp_path: Path) -> None:
    parent = (
        "Traceback (most recent call last):\n"
        '  File "train_net.py", line 163, in <module>\n'
        "    launch(\n"
        '  File "torch/multiprocessing/spawn.py", line 160, in join\n'
        "    raise ProcessRaisedException(msg, error_index, failed_process.pid)\n"
        "torch.multiprocessing.spawn.ProcessRaisedException: \n"
    )
    cut = run(tmp_path / "cut", {"console.log": parent})
    assert cut.verdict.outcome is Outcome.UNDETERMINED and first(cut) == (None, None)
    assert any("relayed report is cut off" in r for r in cut.verdict.reasoning)
    child = "\n-- Process 1 terminated with the following error:\n" + TRACEBACK + "KeyError: 'image_id'\n"
    whole = run(tmp_path / "whole", {"console.log": parent + child})
    assert first(whole) == (1, Cause.PYTHON_EXCEPTION)


@pytest.mark.parametrize(
    "ending",
    [
        "slurmstepd: error:  mpi/pmix_v4: _errhandler: dgx142 [24]: pmixp_client_v2.c:211: Error handler invoked: "
        "status = -61, source = [slurm.pmix.50357.0:199]\n",
        "2022-11-15 19:26:36,618\tERROR tune.py:773 -- Trials did not complete: [TorchTrainer_96bfe_00000]\n",
    ],
)
def test_a_job_its_runner_ended_for_a_failure_it_does_not_place_failed(tmp_path: Path, ending: str) -> None:
    """slurmstepd's PMIx error handler kills the step; Ray Tune logs the trials that failed: the job failed,
    and neither line says which process failed first."""
    d = run(tmp_path, {"console.log": steps(0, 3) + ending})
    assert d.verdict.outcome is Outcome.UNDETERMINED and first(d) == (None, None)


def _ib_fault(rank: int, host: str, second: str) -> str:
    return (
        f"2019-06-02T16:13:{second}Z [1,{rank}]<stdout>:{host}:81{rank}:86{rank} [0] transport/net_ib.cu:80 NCCL WARN "
        "NET/IB : Got async event : local catastrophic error\n"
    )


@pytest.mark.parametrize(
    ("faults", "named"),
    [
        ([(12, "node57", "44.884"), (14, "node57", "44.888"), (13, "node57", "44.888")], None),
        ([(12, "node57", "44.884"), (14, "node58", "44.888")], 12),
        ([(12, "node57", "44.884"), (14, "node57", "49.888")], 12),
    ],
)
def test_ranks_of_one_host_that_met_their_nics_fault_together_are_one_fault_of_that_host(
    tmp_path: Path, faults: list[tuple[int, str, str]], named: int | None
) -> None:
    """A NIC's catastrophic error reaches every process of its host that uses it: reports from one host within a
    second are that host's fault, and none of its ranks died first; across hosts, or seconds apart, the first."""
    d = run(tmp_path, {"console.log": "".join(_ib_fault(*fault) for fault in faults)})
    assert first(d) == (named, Cause.NCCL_ERROR)
    if named is None:
        assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death.host == "node57"


def test_a_rank_horovodrun_terminated_in_its_teardown_is_not_its_first_death(tmp_path: Path) -> None:
    """horovodrun's teardown threads SIGTERM each rank (`kill_middleman_if_master_thread_terminate`); the shell's
    `Terminated` and the 143 of a rank after them are that stop, not a kill of its own."""
    teardown = (
        "Exception in thread Thread-19:\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/local/lib/python3.6/dist-packages/horovod/run/common/util/safe_shell_exec.py", line 152, in '
        "kill_middleman_if_master_thread_terminate\n"
        "    os.kill(middleman_pid, signal.SIGTERM)\n"
        "ProcessLookupError: [Errno 3] No such process\n\n"
        "[2]<stderr>:Terminated\n"
        "Process 2 exit with status code 143.\n"
    )
    d = run(tmp_path, {"console.log": teardown})
    assert first(d)[0] is None and d.verdict.outcome is Outcome.UNDETERMINED


@pytest.mark.parametrize("end", ["RuntimeError: no such model: x\n", ""])
def test_an_actor_whose_constructor_raised_failed_the_job(tmp_path: Path, end: str) -> None:
    """Ray's `Exception raised in creation task` in the actor's own process, its traceback under it: the exception
    line says why; cut before it, a Python exception of a type not said is the cause seen, of no rank."""
    tag = "(PolicyWorker pid=343603) "
    report = (
        "Exception raised in creation task: The actor died because of an error raised in its creation task, "
        "ray::lm_policy-0-2:PolicyWorker.__init__() (pid=343603, ip=10.182.0.80, actor_id=87eda0)\n"
        '  File "/app/policy_worker.py", line 266, in __init__\n'
        "    torch.distributed.broadcast(buf, src=0)\n" + end
    )
    lines = ["Loading state dict from rank 0...", *report.splitlines()]
    d = run(tmp_path, {"console.log": "".join(tag + line + "\n" for line in lines)})
    assert d.verdict.outcome is Outcome.UNDETERMINED and first(d) == (None, Cause.PYTHON_EXCEPTION)
    assert any("type is cut off" in cap for cap in d.verdict.caps) == (end == "")


@pytest.mark.parametrize(
    ("job", "error", "expected"),
    [
        ("947981.0", "Fatal error in PMPI_Comm_connect: Invalid port", (519, Cause.ABORT)),
        ("unknown", "application called MPI_Abort(MPI_COMM_WORLD, 1) - process 0", (None, Cause.ABORT)),
        ("947981.0", "Fatal error in PMPI_Iprobe: Other MPI error", (519, Cause.ABORT)),
    ],
)
def test_a_cray_mpich_abort_is_its_ranks_own_end_unless_a_peer_can_have_caused_it(
    tmp_path: Path, job: str, error: str, expected: tuple[int | None, Cause | None]
) -> None:
    """Cray MPICH's `MPICH ERROR [Rank R] [job id J] ... - Abort(code) (rank r in comm 0): message`: the aborting
    rank's own end, as upstream's `Abort(code) on node R`; where PMI gave it no rank (`job id unknown`) its `Rank 0`
    is none; `Other MPI error` (a dead peer causes it too) is the rank's abort where no other rank failed."""
    line = (
        f"MPICH ERROR [Rank 519] [job id {job}] [Tue Jun 11 15:11:42 2024] [c1207] - Abort(539602063) "
        f"(rank 519 in comm 0): {error}, error stack:\n"
    )
    assert first(run(tmp_path, {"console.log": line})) == expected


def test_a_survivors_mpi_error_abort_is_not_before_the_peer_that_crashed(tmp_path: Path) -> None:
    """Rank 0's `Abort(...) on node 0 ...: Other MPI error` follows rank 1's segfault, which only Hydra reports."""
    console = (
        "[0] Abort(805965583) on node 0 (rank 0 in comm 0): Fatal error in internal_Allreduce: Other MPI error, "
        "error stack:\n"
        + HYDRA_BANNER.replace("PID 31340", "RANK 1 PID 31340").replace("EXIT CODE: 9", "KILLED BY SIGNAL: 11")
    )
    assert first(run(tmp_path, {"console.log": console})) == (1, Cause.SEGFAULT)


def test_the_task_xlas_coordination_service_lost_is_the_one_the_others_waited_for(tmp_path: Path) -> None:
    steps_seen = "".join(f"I1115 16:00:39.451110 14042787724 trainer.py:501] Training: step {s}\n" for s in (197, 198))
    lost = (
        "2022-11-15 16:03:15.140058: E external/org_tensorflow/tensorflow/core/distributed_runtime/coordination/"
        "coordination_service.cc:954] /job:jax_worker/replica:0/task:37 has been set to ERROR in coordination "
        "service: UNAVAILABLE: Task /job:jax_worker/replica:0/task:37 heartbeat timeout. This indicates that the "
        "remote task has failed, got preempted, or crashed unexpectedly.\n"
    )
    d = run(tmp_path, {"console.log": steps_seen + lost})
    assert first(d)[0] == 37


def test_a_tpus_fatal_error_interrupt_is_accelerator_hardware(tmp_path: Path) -> None:
    line = (
        "(train_lm_task pid=39298, ip=10.130.0.55) E0827 23:43:41.200122   39475 synchronous_driver.cc:820] "
        "[/dev/accel0 tpu1013:pe1:0] !!!! FATAL ERROR !!!! for [/dev/accel0 tpu1013:pe1:0] , fatal_error: true\n"
    )
    d = run(tmp_path, {"console.log": line})
    assert first(d) == (None, Cause.GPU_HARDWARE)


def test_the_ofi_plugins_failed_libfabric_call_is_a_network_error_of_its_rank(tmp_path: Path) -> None:
    """aws-ofi-nccl's `NET/OFI Couldn't open AV. RC: -22, ...` under torchrun's rank tag: that rank's own network
    failure; unless the same process then says `initialization failed` (it was the plugin's set-up: NCCL goes on
    over sockets)."""
    failed = (
        "[rank3]:ip-10-0-1-23:4242:4300 [3] create_nccl_ofi_component:459 NCCL WARN NET/OFI Couldn't open AV. "
        "RC: -22, ERROR: Invalid argument\n"
    )
    fallback = "[rank1]:ip-10-0-1-23:4240:4240 [1] NCCL WARN NET/OFI aws-ofi-nccl initialization failed\n"
    assert first(run(tmp_path / "a", {"console.log": fallback + failed})) == (3, Cause.NCCL_ERROR)
    at_set_up = failed + fallback.replace("[rank1]:", "[rank3]:").replace(":4240:4240 [1]", ":4242:4300 [3]")
    assert first(run(tmp_path / "b", {"console.log": at_set_up})) == (None, None)  # the plugin's set-up: NCCL went on


def test_a_replica_the_training_operator_saw_exit_nonzero_failed_the_job(tmp_path: Path) -> None:
    event = (
        "1.708507856644096e+09\tDEBUG\tevents\tError pod pytorch-simple-worker-0 container pytorch exitCode: 1 "
        'terminated message: \t{"type": "Warning"}\n'
    )
    running = 'time="2024-02-21T09:30:56Z" level=info msg="PyTorchJob=pytorch-simple, ReplicaType=Master running=1"\n'
    d = run(tmp_path, {"operator.log": running + event})
    assert d.verdict.outcome is Outcome.UNDETERMINED and first(d)[0] is None


def test_the_engine_core_vllms_client_saw_die_is_named_by_its_data_parallel_rank(tmp_path: Path) -> None:
    line = "ERROR 01-29 08:37:48 [core_client.py:564] Engine core proc EngineCore_DP1 died unexpectedly, shutting\n"
    assert first(run(tmp_path, {"console.log": line})) == (1, Cause.SILENT_EXIT)


def test_nvshmems_failed_set_up_is_a_communication_failure_of_no_rank(tmp_path: Path) -> None:
    lines = "".join(
        f"2025-12-15 14:39:19.18{n}  [s6]: /src/host/init/init.cu:nvshmemi_check_state_and_init:1117: nvshmem "
        "initialization failed, exiting \n"
        for n in (1, 5)
    )
    d = run(tmp_path, {"console.log": lines})
    assert d.verdict.outcome is Outcome.UNDETERMINED and first(d) == (None, Cause.NCCL_ERROR)


@pytest.mark.parametrize(("code", "cause"), [(-9, Cause.KILLED), (-11, Cause.SEGFAULT), (1, None)])
def test_the_deepspeed_launchers_return_code_is_its_first_failed_processs_own(
    tmp_path: Path, code: int, cause: Cause | None
) -> None:
    """`exits with return code = N` is the status of the first child the launcher found dead, recorded before it
    kills the others: a -9 there was a kill from outside the launcher, of a rank the line does not name."""
    launcher = (
        "[2024-01-02 10:00:05,001] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 4242\n"
        "[2024-01-02 10:00:05,002] [INFO] [launch.py:315:sigkill_handler] Killing subprocess 4243\n"
        f"[2024-01-02 10:00:05,090] [ERROR] [launch.py:321:sigkill_handler] ['python', '-u', 'train.py', "
        f"'--local_rank=1'] exits with return code = {code}\n"
    )
    d = run(tmp_path, {"console.log": launcher})
    assert d.verdict.outcome is Outcome.UNDETERMINED and first(d) == (None, cause)


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        ("an illegal memory access was encountered", Cause.CUDA_ERROR),
        ("invalid argument", Cause.NCCL_ERROR),
        ("initialization error", Cause.NCCL_ERROR),
    ],
)
def test_nccls_failed_cuda_call_is_a_kernel_fault_only_when_the_error_says_so(
    tmp_path: Path, error: str, cause: Cause
) -> None:
    """NCCL's `Cuda failure '...'`: a kernel's fault on the GPU (an illegal address) is a CUDA error; its own call
    failing while it maps NVLS or shared memory (`invalid argument`) is NCCL's failure."""
    line = f"[rank3]:node07:4242:4300 [3] transport/nvls.cc:251 NCCL WARN Cuda failure 1 '{error}'\n"
    assert first(run(tmp_path, {"console.log": line})) == (3, cause)


def test_an_agent_that_waited_in_vain_at_the_exit_barrier_ended_a_job_that_failed_elsewhere(tmp_path: Path) -> None:
    agent = (
        "INFO:torch.distributed.elastic.agent.server.api:Local worker group finished (WorkerState.SUCCEEDED). "
        "Waiting 300 seconds for other agents to finish\n"
        "ERROR:torch.distributed.elastic.agent.server.api:Error waiting on exit barrier. Elapsed: 315.77 seconds\n"
    )
    d = run(tmp_path, {"console.log": agent})
    assert d.verdict.outcome is Outcome.UNDETERMINED and first(d) == (None, None)


@pytest.mark.parametrize(
    "line",
    [
        "22: slurmstepd: error: pyxis: container start failed with error code: 1\n",
        "slurmstepd: error:  mpi/pmix_v3: pmixp_coll_ring_reset_if_to: adas-ml [0]: pmixp_coll_ring.c:742: "
        "0x14ce0c02cb20: collective timeout seq=0\n",
        "It looks like pmix_init failed for some reason; your parallel process is\nlikely to abort.\n",
    ],
)
def test_a_job_that_failed_at_its_launch_failed_with_no_rank_first(tmp_path: Path, line: str) -> None:
    """pyxis's container that did not start, the PMIx fence that timed out, a PMIx client that could not start."""
    d = run(tmp_path, {"console.log": line})
    assert d.verdict.outcome is Outcome.UNDETERMINED and first(d) == (None, None)


def test_pytorchs_fatal_signal_handler_names_the_crashing_process(tmp_path: Path) -> None:
    """c10::FatalSignalHandler's `SIGABRT(6), PID: N, Thread T:` before each thread's frames: that pid's abort."""
    dump = (
        "SIGABRT(6), PID: 4119976, Thread 4119976: \n"
        " frame #0: c10::FatalSignalHandler::stacktraceSignalHandler(bool) + 0x8a (0x7f02042fd65a in libc10.so)\n"
        "frame #3: ccl_executor::wait(ccl_request const*) + 0x58 (0x7f01ff86dcd8 in libccl.so.1)\n"
    )
    d = run(tmp_path, {"console.log": dump})
    assert first(d) == (None, Cause.ABORT) and any(e.pid == 4119976 for e in d.events)


def test_a_psm_assertion_is_its_ranks_abort(tmp_path: Path) -> None:
    line = "machine:rank1: Assertion failure at psm3/ptl_am/ptl.c:196: nbytes == req->req_data.recv_msglen\n"
    assert first(run(tmp_path, {"console.log": line})) == (1, Cause.ABORT)


def test_a_terminate_after_the_failure_it_ends_with_is_that_failures_tail(tmp_path: Path) -> None:
    """oneCCL's worker caught Level Zero's out-of-device-memory, then the process terminates on the exception that
    carries it: one failure, a GPU memory exhaustion, not an abort beside it."""
    lines = (
        "2024:05:29-19:16:18:(202165) |CCL_ERROR| worker.cpp:338 ccl_worker_func: worker 0 caught internal exception: "
        "oneCCL: ze_call.cpp:28 do_call: EXCEPTION: ze error at zeCommandQueueExecuteCommandLists, code: "
        "ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY\n"
        "terminate called after throwing an instance of 'ccl::v1::exception'\n"
    )
    assert first(run(tmp_path, {"console.log": lines})) == (None, Cause.CUDA_OOM)


def test_an_mpich_abort_a_peer_can_cause_names_its_rank_only_where_no_other_rank_failed(tmp_path: Path) -> None:
    """MPICH's abort on `Other MPI error` (an invalid communicator, a failed GPU IPC mapping, a network error):
    alone, that rank's abort at `medium`; beside another rank's failure, wherever printed, the other's."""
    abort = (
        "Abort(203042319) on node 4092 (rank 4092 in comm 0): Fatal error in PMPI_Wait: Other MPI error, error stack:\n"
        "PMPI_Wait(205)..................: MPI_Wait(request=0x7ffd5b0155cc, status=0x1) failed\n"
        "MPIDU_Sched_progress_state(1036): Invalid communicator\n"
    )
    alone = run(tmp_path / "alone", {"console.log": abort})
    assert first(alone) == (4092, Cause.ABORT) and alone.verdict.confidence is Confidence.MEDIUM
    peer = "step 3\nFatal Python error: Segmentation fault\n"
    beside = run(tmp_path / "beside", {"console.log": abort, "rank_7.log": peer})
    assert first(beside) == (7, Cause.SEGFAULT)


_LAMMPS_THERMO = "Step Temp E_pair\n  100 300.0 -1234.5\n  200 301.2 -1234.1\n"


@pytest.mark.parametrize(
    ("message", "cause"),
    [
        ("Bond atoms 1021 1022 missing at step 41300 (src/MOLECULE/ntopo_bond_all.cpp:59)", Cause.ABORT),
        (
            "DeePMD-kit C API Error: DeePMD-kit Error: CUDA Runtime library throws an error: an illegal memory "
            "access was encountered, in file /w/prod_env_mat.cu: 625 (src/pair_deepmd.cpp:634)",
            Cause.CUDA_ERROR,
        ),
        (
            "DeePMD-kit C API Error: DeePMD-kit Error: CUDA Runtime library throws an error: out of memory, in "
            "file /w/prod_env_mat.cu: 625 (src/pair_deepmd.cpp:634)",
            Cause.CUDA_OOM,
        ),
    ],
)
def test_lammps_error_on_one_proc_names_that_rank_and_the_library_error_it_carries(
    tmp_path: Path, message: str, cause: Cause
) -> None:
    """LAMMPS's Error::one names the process that hit the error, then MPI_Abort ends the rest; a GPU
    runtime error DeePMD-kit raised into it is what that process died of."""
    d = run(tmp_path, {"log.lammps": _LAMMPS_THERMO + f"ERROR on proc 5: {message}\nLast command: run 1000\n"})
    assert first(d) == (5, cause)
    decisive = next(e for e in d.events if e.rank == 5 and e.role is Role.CAUSE)
    assert all(ev.where != decisive.where for ev in decisive.lines)  # its line once, not again as "see also"


def test_wrfs_fatal_called_in_a_tasks_rsl_file_names_that_task(tmp_path: Path) -> None:
    """RSL_LITE writes one rsl.error.NNNN per MPI task; wrf_error_fatal3 prints its banner there and aborts.
    The other tasks' files are here with nothing a rule reads: they logged lines, they did not go unseen."""
    files = {f"rsl.error.{r:04d}": f" taskid: {r} hostname: node01\n Ntasks in X 2, ntasks in Y 2\n" for r in range(4)}
    files["rsl.error.0002"] += (
        "-------------- FATAL CALLED ---------------\nFATAL CALLED FROM FILE:  <stdin>  LINE:    2963\n"
        " mismatch_landmask_ivgtyp\n-------------------------------------------\n"
    )
    d = run(tmp_path, files)
    assert first(d) == (2, Cause.ABORT)
    assert d.verdict.confidence is Confidence.MEDIUM
    assert any("0-1 logged lines here" in why for why in d.verdict.caps)
    assert not any("left no log here" in why for why in d.verdict.caps)


def test_gfortrans_signal_report_is_the_crash_of_the_process_that_printed_it(tmp_path: Path) -> None:
    """libgfortran's backtrace handler prints the signal it got, then re-raises it; gdb's own report (a comma)
    is not a crash of the job."""
    crash = "Program received signal SIGSEGV: Segmentation fault - invalid memory reference.\n"
    console = "".join(f"[1,{r}]<stdout>: iteration 10 residual 1.0e-3\n" for r in range(3))
    console += f"[1,2]<stderr>:\n[1,2]<stderr>:{crash}[1,2]<stderr>:\n[1,2]<stderr>:Backtrace for this error:\n"
    assert first(run(tmp_path / "mpi", {"console.log": console})) == (2, Cause.SEGFAULT)
    gdb = "Program received signal SIGSEGV, Segmentation fault.\n0x00005555 in main () at t.c:4\n"
    assert run(tmp_path / "gdb", {"console.log": gdb}).verdict.first_death is None


def test_mvapichs_mpispawn_names_the_rank_whose_signal_aborted_the_job(tmp_path: Path) -> None:
    console = (
        "[n01:mpispawn_0][child_handler] MPI process (rank: 3, pid: 39547) terminated with signal 11 -> abort job\n"
        "[n01:mpispawn_0][readline] Unexpected End-Of-File on file descriptor 6. MPI process died?\n"
        "[n01:mpirun_rsh][process_mpispawn_connection] mpispawn_0 from node n01 aborted: MPI process error (1)\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (3, Cause.SEGFAULT)
    assert d.ranks[0].pid == 39547
