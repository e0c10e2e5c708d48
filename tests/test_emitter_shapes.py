"""Scenarios in the emitters' real formats: Ray Train, Horovod, Lightning, UCX, shells, DataLoader
workers, PyTorch's ProcessGroupNCCL prefixes as a rank source, GPU/PCIe errors seen from the host."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest

from rankautopsy.model import Cause, Confidence, Diagnosis, Fate, Outcome, Phase
from rankautopsy.pipeline import Options, diagnose
from rankautopsy.sources.lines import LineParser
from rankautopsy.sources.ranks import content_rank, content_rank_shapes, default_pg_rank


def run(tmp_path: Path, files: dict[str, str]) -> Diagnosis:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return diagnose(Options(paths=[str(tmp_path)], tz=UTC))


def first(d: Diagnosis) -> tuple[int | None, Cause | None]:
    f = d.verdict.first_death
    return (f.rank, f.cause) if f is not None else (None, None)


def steps(rank: int, n: int, minute: int = 0) -> str:
    return "".join(f"2026-11-29 07:{minute:02d}:{s:02d},000 INFO [rank {rank}] step {s}/100\n" for s in range(n))


def watchdog(rank: int) -> str:
    return (
        f"[rank{rank}]:[E1129 07:10:01.123456789 ProcessGroupNCCL.cpp:632] [PG ID 0 PG GUID 0(default_pg) "
        f"Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, "
        "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.\n"
    )


RAY_IDENTITY = (
    "(TorchTrainer pid=47169) Started distributed worker processes: \n"
    "(TorchTrainer pid=47169) - (node_id=f67b5f412a227b4c6b3ddd85d6f5b1eecd0bd0917efa8f9cd4b5e4da, "
    "ip=10.0.114.132, pid=47314) world_rank=0, local_rank=0, node_rank=0\n"
    "(TorchTrainer pid=47169) - (node_id=f67b5f412a227b4c6b3ddd85d6f5b1eecd0bd0917efa8f9cd4b5e4da, "
    "ip=10.0.114.132, pid=47313) world_rank=1, local_rank=1, node_rank=0\n"
    "(RayTrainWorker pid=47314) Setting up process group for: env:// [rank=0, world_size=2]\n"
)


def test_ray_memory_monitor_kill_is_the_rank_of_that_pid(tmp_path: Path) -> None:
    console = RAY_IDENTITY + (
        "(raylet) A worker died or was killed while executing a task by an unexpected system error. To "
        "troubleshoot the problem, check the logs for the dead worker. RayTask ID: ffffffffffffffff2d4d212e431c850d "
        "Worker ID: e954d96d346a63ed290230032cf56d0d Node ID: 0cca822e450292fc9c2e3ae3955db328 Worker IP address: "
        "10.0.114.132 Worker port: 34379 Worker PID: 47313 Worker exit type: SYSTEM_ERROR Worker exit detail: "
        "Task was killed due to the node running low on memory.\n"
        "Memory on the node (IP: 10.0.114.132, ID: 0cca822e450292fc9c2e3ae3955db328) where the task (actor ID: "
        "5c9ac30f8a9eda34, name=RayTrainWorker.__init__, pid=47313, memory used=24.99GB) was running was 32.62GB / "
        "33.28GB (0.980175), which exceeds the memory usage threshold of 0.95. Ray killed this worker (ID: "
        "a8101629b7605f88) because it was the most recently scheduled task;\n"
    )
    d = run(tmp_path, {"ray-driver.log": console})
    assert d.verdict.outcome is Outcome.FIRST_DEATH
    assert first(d) == (1, Cause.HOST_OOM)


@pytest.mark.parametrize(
    "told",
    [
        "Refer to the documentation on how to address the out of memory issue: "
        "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html. Consider provisioning more "
        "memory on this node or reducing task parallelism by requesting more CPUs per task.",
        "ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory.",
    ],
)
def test_rays_memory_kill_told_by_its_caller_is_no_death_of_the_caller(tmp_path: Path, told: str) -> None:
    d = run(tmp_path, {"ray-driver.log": RAY_IDENTITY + f"(RayTrainWorker pid=47313) {told}\n"})
    assert d.verdict.outcome is Outcome.UNDETERMINED  # pid 47313 (rank 1) got the error; the killed one is unnamed
    assert d.verdict.first_death is not None
    assert (d.verdict.first_death.cause, d.verdict.first_death.rank, d.verdict.first_death.pid) == (
        Cause.HOST_OOM,
        None,
        None,
    )


@pytest.mark.parametrize("colour", [("", ""), ("[36m", "[0m")])  # Ray's colours, pasted without their ESC
def test_each_ray_worker_keeps_its_own_last_step(tmp_path: Path, colour: tuple[str, str]) -> None:
    steps = "".join(
        f"{colour[0]}(RayTrainWorker pid={47314 - i % 2}){colour[1]} 2026-11-29 07:{i // 60:02d}:{i % 60:02d},000 "
        f"INFO step {i // 2 + i % 2}\n"  # rank 1 a step ahead: thinned as one stream, rank 0's last step is lost
        for i in range(3000)  # past the head the scan parses whole: the tail's reading of each process
    )
    death = f"{colour[0]}(RayTrainWorker pid=47313){colour[1]} Fatal Python error: Aborted\n"
    d = run(tmp_path, {"ray-driver.log": RAY_IDENTITY + steps + death})
    assert first(d) == (1, Cause.ABORT)
    rank0 = next(r for r in d.ranks if r.rank == 0)
    assert rank0.last_step == 1499  # a relayed line's stamp bounds nothing (`verdict._death_bounds`): no last seen


def test_rays_worker_died_without_its_pid_is_a_failure_of_no_named_worker(tmp_path: Path) -> None:
    old = "2020-12-18 00:29:43,447\tWARNING worker.py:1091 -- A worker died or was killed while executing task ff0a.\n"
    d = run(tmp_path, {"driver.log": "2020-12-18 00:29:40,000\tINFO worker.py:12 -- Connecting to Ray\n" + old})
    assert (d.verdict.outcome, first(d)) == (Outcome.UNDETERMINED, (None, None))


def test_ray_train_v2_error_header_names_the_failed_rank(tmp_path: Path) -> None:
    console = RAY_IDENTITY + (
        "ray.train.WorkerGroupError: Training failed due to worker errors:\n"
        "[Rank 1 Error Snippet]:\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 9, in train_func\n'
        "ValueError: bad sample 1234\n"
    )
    d = run(tmp_path, {"ray-driver.log": console})
    assert d.verdict.first_death is not None
    assert {e.rule for e in d.events} >= {"ray.worker-error-header", "ray.worker-identity"}


def test_ray_train_v2_older_header_relays_its_ranks_traceback(tmp_path: Path) -> None:
    console = (
        "Training failed due to worker errors:\n"
        "[Rank 0]\n"
        "Traceback (most recent call last):\n"
        '  File "train.py", line 9, in train_func\n'
        '    raise ValueError("error")\n'
        "ValueError: error\n"
    )
    d = run(tmp_path, {"ray-driver.log": console})
    assert first(d) == (0, Cause.PYTHON_EXCEPTION)
    assert d.verdict.first_death is not None and d.verdict.first_death.detail == "ValueError: error"


def test_horovodrun_gloo_rank_tag_and_exit_report(tmp_path: Path) -> None:
    console = (
        "[0]<stdout>:2026-11-29 07:00:01,000 INFO step 1\n"
        "[1]<stdout>:2026-11-29 07:00:01,000 INFO step 1\n"
        "[1]<stderr>:Traceback (most recent call last):\n"
        '[1]<stderr>:  File "train.py", line 12, in <module>\n'
        "[1]<stderr>:KeyError: 'label'\n"
        "Process 1 exit with status code 1.\n"
        "Terminating remaining workers after failure of Process 1.\n"
        "Process 0 exit with status code -15.\n"
        "RuntimeError: Horovod detected that one or more processes exited with non-zero status, thus causing the "
        "job to be terminated. The first process to do so was:\n"
    )
    d = run(tmp_path, {"horovodrun.log": console})
    assert d.verdict.outcome is Outcome.FIRST_DEATH
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)


HOROVOD_SHUT_DOWN = (
    "Horovod has been shut down. This was caused by an exception on one of the ranks or an attempt to "
    "allreduce, allgather or broadcast a tensor after one of the ranks finished execution."
)


def test_horovod_shut_down_on_survivors_is_a_symptom(tmp_path: Path) -> None:
    files = {f"rank_{r}.log": steps(r, 5) for r in range(3)}
    files["rank_1.log"] += (
        'Traceback (most recent call last):\n  File "train.py", line 40, in <module>\nValueError: corrupt shard 17\n'
    )
    for r in (0, 2):
        files[f"rank_{r}.log"] += f"tensorflow.python.framework.errors_impl.AbortedError: {HOROVOD_SHUT_DOWN}\n"
    d = run(tmp_path, files)
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)
    alone = run(tmp_path / "alone", {"rank_0.log": steps(0, 5) + f"AbortedError: {HOROVOD_SHUT_DOWN}\n"})
    assert alone.verdict.outcome is Outcome.UNDETERMINED and alone.verdict.first_death is None


def test_nccl_teardown_after_a_clean_end_is_not_a_failure(tmp_path: Path) -> None:
    files = {}
    for r in range(2):
        files[f"rank_{r}.log"] = steps(r, 5) + (
            f"2026-11-29 07:00:06,000 INFO [rank {r}] training complete\n"
            f"node01:{4100 + r}:{4200 + r} [{r}] NCCL INFO [Service thread] Connection closed by localRank {1 - r}\n"
            f"node01:{4100 + r}:{4300 + r} [{r}] NCCL INFO comm 0x55ad rank {r} nranks 2 cudaDev {r} busId 1a0 - "
            "Abort COMPLETE\n"
        )
    d = run(tmp_path, files)
    assert d.verdict.outcome in (Outcome.CLEAN, Outcome.NO_FAILURE)


def test_store_warnings_after_a_clean_end_are_not_a_failure(tmp_path: Path) -> None:
    """Rank 0 hosts the TCPStore and exits first; the others' heartbeat monitors warn as they go."""
    files = {"rank_0.log": steps(0, 5)}
    for r in (1, 2):
        files[f"rank_{r}.log"] = steps(r, 5) + (
            f"[rank{r}]:[W1129 07:00:06.296197118 ProcessGroupNCCL.cpp:1659] [PG ID 0 PG GUID 0 Rank {r}] Failed to "
            'check the "should dump" flag on TCPStore, (maybe TCPStore server has shut down too early), with error: '
            "Failed to recv, got 0 bytes. Connection was likely closed. Did the remote server shutdown or crash?\n"
            f"[rank{r}]:[W1129 07:00:06.303797152 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=6, "
            "addr=[::ffff:127.0.0.1]:37468, remote=[::ffff:127.0.0.1]:29500): failed to recv, got 0 bytes\n"
        )
    assert run(tmp_path, files).verdict.outcome in (Outcome.CLEAN, Outcome.NO_FAILURE)
    files["rank_1.log"] += (
        'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
        "torch.distributed.DistNetworkError: Failed to recv, got 0 bytes. Connection was likely closed. Did the "
        "remote server shutdown or crash?\n"
    )
    raised = run(tmp_path / "raised", files)
    assert raised.verdict.outcome is not Outcome.NO_FAILURE and first(raised)[1] is not Cause.PYTHON_EXCEPTION


def test_cuda_driver_shutting_down_at_exit_is_not_a_cuda_error(tmp_path: Path) -> None:
    exit_line = "node01:4100:4200 [0] init.cc:1387 NCCL WARN Cuda failure 'driver shutting down'\n"
    files = {f"rank_{r}.log": steps(r, 5) + exit_line.replace("4100", str(4100 + r)) for r in range(2)}
    assert run(tmp_path, files).verdict.outcome in (Outcome.CLEAN, Outcome.NO_FAILURE)
    files["rank_1.log"] += (
        "node01:4101:4201 [0] enqueue.cc:1556 NCCL WARN Cuda failure 'an illegal memory access was encountered'\n"
    )
    assert first(run(tmp_path / "illegal", files)) == (1, Cause.CUDA_ERROR)


IGNORED_AT_EXIT = (
    "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f3b2c1d5e50>\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.10/site-packages/torch/utils/data/dataloader.py", line 1479, in __del__\n'
    "    self._shutdown_workers()\n"
    "RuntimeError: CUDA error: driver shutting down\n"
)


def test_a_traceback_python_ignored_is_no_death(tmp_path: Path) -> None:
    """sys.unraisablehook prints the exception and the process goes on (a __del__ or atexit at exit)."""
    files = {f"rank_{r}.log": steps(r, 5) for r in range(2)}
    files["rank_1.log"] += IGNORED_AT_EXIT
    d = run(tmp_path, files)
    assert d.verdict.outcome in (Outcome.CLEAN, Outcome.NO_FAILURE)
    ignored = [e for e in d.events if "ignored" in e.facts]
    assert [(e.rank, e.role.value) for e in ignored] == [(1, "context")]
    files["rank_0.log"] += 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\nKeyError: 7\n'
    assert first(run(tmp_path / "raised", files)) == (0, Cause.PYTHON_EXCEPTION)


def test_a_threads_traceback_is_no_death_of_its_process(tmp_path: Path) -> None:
    """threading.excepthook prints `Exception in thread NAME:` and the traceback; the process goes on."""
    thread = (
        "Exception in thread Thread-3 (_pin_memory_loop):\n"
        "Traceback (most recent call last):\n"
        '  File "/usr/lib/python3.10/threading.py", line 1016, in _bootstrap_inner\n'
        "    self.run()\n"
        "RuntimeError: Pin memory thread exited unexpectedly\n"
    )
    files = {f"rank_{r}.log": steps(r, 5) for r in range(2)}
    files["rank_1.log"] += thread
    d = run(tmp_path, files)
    assert d.verdict.first_death is None
    assert [(e.rank, e.role.value, e.facts.get("in_thread")) for e in d.events if e.rule == "python.traceback"] == [
        (1, "context", "1")
    ]


HOROVOD_TEARDOWN = (  # horovodrun (gloo) ending the job: its safe_shell_exec thread SIGTERMs each middleman
    "Exception in thread Thread-19:\n"
    "Traceback (most recent call last):\n"
    '  File "/usr/lib/python3.6/threading.py", line 864, in run\n'
    "    self._target(*self._args, **self._kwargs)\n"
    '  File "/usr/local/lib/python3.6/dist-packages/horovod/run/common/util/safe_shell_exec.py", line 152, in '
    "kill_middleman_if_master_thread_terminate\n"
    "    os.kill(middleman_pid, signal.SIGTERM)\n"
    "ProcessLookupError: [Errno 3] No such process\n"
    "Thu Aug 29 16:41:23 2019[2]<stderr>:Terminated\n"
    "Process 2 exit with status code 143.\n"
)


def test_a_sigterm_exit_after_horovodrun_began_its_teardown_is_no_first_death(tmp_path: Path) -> None:
    d = run(tmp_path, {"horovodrun.log": HOROVOD_TEARDOWN})
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death is None
    assert [(r.rank, r.fate) for r in d.ranks] == [(2, Fate.TORN_DOWN)]
    alone = run(tmp_path / "alone", {"horovodrun.log": HOROVOD_TEARDOWN.split("Thu Aug")[1].split("\n", 1)[1]})
    assert first(alone) == (2, Cause.KILLED)  # without the teardown's line, the SIGTERM is its death


AGENT_ON_ONE_OF_TWO_NODES = (  # torchrun's agent (old logging), one node's console of a two-node job
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 426 closing signal SIGTERM\n"
    "WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 427 closing signal SIGTERM\n"
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 3 (pid: 429) of binary: "
    "/usr/bin/python\n"
    "ERROR:torch.distributed.elastic.agent.server.api:Error waiting on exit barrier. Elapsed: 307.28 seconds\n"
)


def test_a_local_rank_is_no_global_rank_where_the_job_has_other_nodes(tmp_path: Path) -> None:
    d = run(tmp_path, {"node.log": AGENT_ON_ONE_OF_TWO_NODES})
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death is None
    assert any(n.startswith("local rank 3 failed (exit code 1") for n in d.verdict.notes)
    one_node = run(tmp_path / "one", {"node.log": AGENT_ON_ONE_OF_TWO_NODES.rsplit("ERROR:", 1)[0]})
    assert first(one_node) == (3, Cause.PYTHON_EXCEPTION)  # one node seen: local is global; exit 1, no own line


def _py_spy(pid: int, frames: list[str]) -> str:
    """`py-spy dump --pid PID` of one process: a header, then each thread's stack, innermost first."""
    stack = "".join(f"    {frame}\n" for frame in frames)
    header = f"Process {pid}: python train.py\nPython v3.10.12 (/usr/bin/python3.10)\n\n"
    return f'{header}Thread {pid} (idle): "MainThread"\n{stack}'


def test_py_spy_dumps_of_every_rank_name_the_one_not_in_the_collective(tmp_path: Path) -> None:
    waiting = ["all_reduce (torch/distributed/distributed_c10d.py:2050)", "train_step (train.py:88)"]
    loading = ["_read_sample (data.py:55)", "__next__ (torch/utils/data/dataloader.py:630)", "train_step (train.py:80)"]
    files = {f"rank_{r}.pyspy.txt": _py_spy(4100 + r, loading if r == 2 else waiting) for r in range(4)}
    d = run(tmp_path, files)
    assert d.verdict.outcome is Outcome.HANG and first(d) == (2, Cause.HANG)
    assert [r.rank for r in d.ranks if r.fate is Fate.COLLATERAL] == [0, 1, 3]
    files["rank_2.pyspy.txt"] = _py_spy(4102, waiting)
    every = run(tmp_path / "every", files)  # all alive and waiting: the job hung, its culprit unseen
    assert every.verdict.outcome is Outcome.HANG and first(every) == (None, Cause.HANG)
    assert every.verdict.not_first == (0, 1, 2, 3)


def test_an_excerpt_that_starts_at_an_exception_line_is_that_ranks_exception(tmp_path: Path) -> None:
    rank3 = '[rank3]: Traceback (most recent call last):\n[rank3]:   File "/app/launcher.py", line 23, in <module>\n'
    opening = "[rank2]: RuntimeError: synNodeCreateWithId failed for node: batch_gemm\n"
    assert first(run(tmp_path / "alone", {"paste.log": opening})) == (2, Cause.PYTHON_EXCEPTION)
    d = run(tmp_path, {"paste.log": opening + rank3})  # rank 3 raised too: before the cut, who knows
    assert first(d) == (None, Cause.PYTHON_EXCEPTION) and d.verdict.outcome is Outcome.UNDETERMINED
    waited = (
        "[rank2]: torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, remote process "
        "exited or there was a network error, NCCL version 2.19.3\n"
    )
    symptom = run(tmp_path / "symptom", {"paste.log": waited + rank3})
    assert first(symptom) != (2, Cause.PYTHON_EXCEPTION)  # classified by its type, as a whole traceback is
    later = run(tmp_path / "later", {"paste.log": steps(2, 3).replace("INFO", "INFO [rank2]") + "RuntimeError: x y\n"})
    assert later.verdict.first_death is None  # only the opening line is read so


HARNESS_TRACEBACK = (  # MultiProcessTestCase's parent raising for its children (an older harness's wording)
    "ERROR: test_gloo_backend_2gpu_module (__main__.DistributedDataParallelTest)\n"
    "Traceback (most recent call last):\n"
    '  File "/lib/torch/testing/_internal/common_distributed.py", line 339, in _check_return_codes\n'
    "    raise RuntimeError(error)\n"
)


def test_pytorchs_multi_process_test_harness_names_the_process_that_raised(tmp_path: Path) -> None:
    old = run(tmp_path / "old", {"ci.log": HARNESS_TRACEBACK + "RuntimeError: Processes 1 exited with error code 10\n"})
    assert first(old) == (1, Cause.PYTHON_EXCEPTION)  # the harness's error code 10: an exception in that process
    now = (
        "Process 0 terminated with exit code 10, terminating remaining processes.\n"
        + HARNESS_TRACEBACK
        + "RuntimeError: Process 0 exited with error code 10 and exception:\n"
    )
    assert first(run(tmp_path / "now", {"ci.log": now})) == (0, Cause.PYTHON_EXCEPTION)
    every = run(
        tmp_path / "every", {"ci.log": "AssertionError: False is not true : Expected zero exit code but got -11\n"}
    )
    assert every.verdict.outcome is Outcome.UNDETERMINED and first(every) == (None, Cause.SEGFAULT)  # all alike


RAY_RELAY = (
    "2026-11-29 07:00:09,494\tERROR tune.py:1037 -- Trials did not complete: [TorchTrainer_294c7_00000]\n"
    "ray.exceptions.RayTaskError({inner}): ray::_Inner.train() (pid=1118696, ip=192.168.100.1, "
    "actor_id=3bc85d14332ec96de463c9f801000000, repr=TorchTrainer)\n"
    '  File "/env/lib/python3.10/site-packages/ray/tune/trainable/trainable.py", line 331, in train\n'
    "    raise skipped from exception_cause(skipped)\n"
)


def test_ray_relays_the_remote_traceback_under_its_task_error_line(tmp_path: Path) -> None:
    """Ray prints the remote traceback with `RayTaskError(T): ray::...` in place of its header."""
    whole = RAY_RELAY.format(inner="AssertionError") + "AssertionError: empty batch\n"
    d = run(tmp_path, {"driver.log": whole})
    relayed = [e for e in d.events if e.rule == "ray.task-error-relayed"]
    assert [(e.cause, e.facts.get("exc_msg")) for e in relayed] == [(Cause.PYTHON_EXCEPTION, "empty batch")]
    peer = RAY_RELAY.format(inner="DistBackendError") + (
        "torch.distributed.DistBackendError: [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 "
        "milliseconds before timing out.\n"
    )
    symptom = run(tmp_path / "peer", {"driver.log": peer})
    assert [e.role.value for e in symptom.events if e.rule == "ray.task-error-relayed"] == ["symptom"]
    cut = run(tmp_path / "cut", {"driver.log": RAY_RELAY.format(inner="AssertionError")})
    assert [(e.cause, e.rank) for e in cut.events if e.rule == "ray.task-error-relayed"] == [
        (Cause.PYTHON_EXCEPTION, None)
    ]
    accelerator = run(tmp_path / "accel", {"driver.log": RAY_RELAY.format(inner="AcceleratorError")})
    assert [e.cause for e in accelerator.events if e.rule == "ray.task-error-relayed"] == [Cause.CUDA_ERROR]


def test_horovod_stall_inspector_names_the_missing_rank(tmp_path: Path) -> None:
    stall = (
        "[2026-11-29 07:10:00.181832: W /tmp/pip-req-build/horovod/common/stall_inspector.cc:105] One or more "
        "tensors were submitted to be reduced, gathered or broadcasted by subset of ranks and are waiting for "
        "remainder of ranks for more than 60 seconds. This may indicate that different ranks are trying to submit "
        "different tensors or that only subset of ranks is submitting tensors, which will cause deadlock.\n"
        "Missing ranks:\n"
        "2: [allreduce.layer1.0.conv1.weight, allreduce.layer1.0.bn1.weight]\n"
    )
    files = {f"rank_{r}.log": steps(r, 10) for r in range(4)}
    files["rank_0.log"] += stall
    d = run(tmp_path, files)
    assert d.verdict.first_death is not None and d.verdict.first_death.rank == 2


def test_horovod_ready_lists_name_the_one_rank_they_all_leave_out(tmp_path: Path) -> None:
    ready = "".join(f"HorovodBroadcast_{name}_0 [ready ranks: 5, 6, 3, 1, 4, 0], \n" for name in ("conv1", "fc", "bn"))
    d = run(tmp_path, {"console.log": "Stalled ops: " + ready})
    assert (d.verdict.outcome, d.verdict.first_death and d.verdict.first_death.rank) == (Outcome.HANG, 2)
    assert d.verdict.confidence is Confidence.LOW  # the job's size is not in the lines: rank 7 may be missing too


def test_ranks_waiting_at_start_up_name_no_hang_culprit(tmp_path: Path) -> None:
    barrier = (
        "[2026-11-29 07:10:00,326][torch.distributed.distributed_c10d][INFO] - Waiting in store based barrier to "
        "initialize process group for rank: 0, key: store_based_barrier_key:1 (world_size=2, worker_count=1, "
        "timeout=0:30:00)\n"
    )
    d = run(tmp_path, {"console.log": barrier})
    assert first(d)[0] is None  # rank 1 may never have started: the job hung at start-up, no rank is named


def test_the_one_rank_all_the_others_wait_for_in_the_store_barrier_is_the_hang_culprit(tmp_path: Path) -> None:
    waiting = "INFO:root:Waiting in store based barrier to initialize process group for rank: {}, key: "
    waiting += "store_based_barrier_key:1 (world_size=8, worker_count=7, timeout=0:30:00)\n"
    d = run(tmp_path, {"console.log": "".join(waiting.format(r) for r in (0, 6, 2, 1, 7, 3, 5, 0))})
    assert (d.verdict.outcome, first(d)) == (Outcome.HANG, (4, Cause.HANG))
    assert d.verdict.confidence is Confidence.MEDIUM  # rank 4 left no line: named by the job's size alone


def test_a_rank_above_the_stated_size_names_no_missing_rank(tmp_path: Path) -> None:
    waiting = "INFO:root:Waiting in store based barrier to initialize process group for rank: {}, key: "
    waiting += "store_based_barrier_key:1 (world_size=2, worker_count=3, timeout=0:30:00)\n"
    d = run(tmp_path, {"console.log": "".join(waiting.format(r) for r in (0, 2, 0))})
    assert first(d)[0] is None


def test_hydras_exit_status_without_its_process_line_is_a_death_of_an_unnamed_process(tmp_path: Path) -> None:
    banner = "=" * 83 + "\n=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES\n=   EXIT CODE: {}\n"
    banner += "=   CLEANING UP REMAINING PROCESSES\n=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES\n" + "=" * 83 + "\n"
    d = run(tmp_path, {"console.log": "Running on m199\n" + banner.format(134)})
    assert (d.verdict.outcome, first(d)) == (Outcome.UNDETERMINED, (None, Cause.ABORT))  # 134 = 128 + SIGABRT
    with_pid = banner.replace("PROCESSES\n=   EXIT", "PROCESSES\n=   PID 4774 RUNNING AT node1\n=   EXIT")
    d = run(tmp_path / "pid", {"console.log": with_pid.format(139)})
    assert first(d) == (None, Cause.SEGFAULT)
    assert [e.rule for e in d.events if e.rule.startswith("mpi.hydra-")].count("mpi.hydra-exit-status") == 0  # absorbed


def test_a_kernels_device_assert_is_its_ranks_cuda_error_when_the_exception_is_cut(tmp_path: Path) -> None:
    asserts = "".join(
        f"/pytorch/aten/src/ATen/native/cuda/Indexing.cu:1284: indexSelectLargeIndex: block: [37,0,0], "
        f"thread: [{t},0,0] Assertion `srcIndex < srcSelectDimSize` failed.\n"
        for t in range(64)
    )
    cut = 'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n    loss.backward()\n'
    d = run(tmp_path, {"rank_0.log": steps(0, 10), "rank_1.log": steps(1, 10) + asserts + cut})
    assert first(d) == (1, Cause.CUDA_ERROR)
    assert d.verdict.first_death is not None and "srcIndex < srcSelectDimSize" in d.verdict.first_death.detail


FR_TRACE = (  # torchfrtrace's report (torch/distributed/flight_recorder, PyTorch >= 2.7 wording)
    "Not all ranks joining collective, sequence number: 31117\n"
    "internal record id: 31116\n"
    "group info: 0:default_pg\n"
    "collective: nccl:all_reduce\n"
    "missing ranks: {MISSING}\n"
    "input sizes: [[1571911]]\n"
    "output sizes: [[1571911]]\n"
    "world size: 8\n"
    "expected ranks: {0, 1, 2, 3, 4, 5, 6, 7}\n"
    "collective state: scheduled\n"
)


def test_the_flight_recorder_analysis_names_the_one_rank_missing_from_a_collective(tmp_path: Path) -> None:
    one = run(tmp_path / "one", {"fr_trace.txt": FR_TRACE.replace("MISSING", "5")})
    assert one.verdict.outcome is Outcome.HANG and first(one) == (5, Cause.HANG)
    several = run(tmp_path / "several", {"fr_trace.txt": FR_TRACE.replace("MISSING", "3, 4, 5, 6, 7")})
    assert several.verdict.outcome is Outcome.UNDETERMINED and several.verdict.first_death is None


RAY_TERMINATE = (  # Ray's std::terminate handler (src/ray/util/logging.cc) in a verl worker
    "(WorkerDict pid=3490362) [2025-11-18 20:32:23,675 E 3490362 3490490] logging.cc:118: Unhandled exception: "
    "N3c1016DistBackendErrorE. what(): [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog thread "
    "terminated with exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2635, "
    "OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for 1800024 milliseconds before timing out.\n"
    "(WorkerDict pid=3490362) [2025-11-18 20:32:23,675 E 3490362 3490490] logging.cc:125: Stack trace: \n"
    "(WorkerDict pid=3490362)  /env/lib/python3.12/site-packages/ray/_raylet.so(+0x152da9a) [0x7c3c5f72da9a] "
    "ray::operator<<()\n"
    "(WorkerDict pid=3490362) /env/lib/python3.12/site-packages/ray/_raylet.so(+0x15309a2) [0x7c3c5f7309a2] "
    "ray::TerminateHandler()\n"
)


def test_rays_terminate_handler_is_an_abort_and_a_watchdogs_is_its_ranks_wait(tmp_path: Path) -> None:
    waited = run(tmp_path / "waited", {"driver.log": RAY_TERMINATE})
    assert waited.verdict.first_death is None and waited.verdict.unattributed == ()
    assert [(r.rank, r.fate) for r in waited.ranks] == [(1, Fate.COLLATERAL)]
    frames = RAY_TERMINATE.split("\n", 2)[2]  # an excerpt that starts at the stack: the abort, no rank
    cut = run(tmp_path / "cut", {"driver.log": frames})
    assert cut.verdict.outcome is Outcome.UNDETERMINED
    assert [u.cause for u in cut.verdict.unattributed] == [Cause.ABORT]


def test_lightning_child_exit_joins_the_kernel_oom_kill(tmp_path: Path) -> None:
    console = (
        "Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/4\n"
        "2026-11-29 07:00:05,000 INFO [rank 0] step 5/100\n"
        "[rank: 3] Child process with PID 4242 terminated with code -9. Forcefully terminating all other processes "
        "to avoid zombies 🧟\n"
    )
    dmesg = (
        "[Sun Nov 29 07:00:04 2026] Out of memory: Killed process 4242 (pt_main_thread) total-vm:1000kB, "
        "anon-rss:900kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:100kB oom_score_adj:0\n"
    )
    d = run(tmp_path, {"lightning.log": console, "dmesg.txt": dmesg})
    assert first(d) == (3, Cause.HOST_OOM)


def test_ucx_caught_signal_on_a_rank_is_its_segfault(tmp_path: Path) -> None:
    files = {f"rank_{r}.log": steps(r, 10) + watchdog(r) for r in (0, 1, 3)}
    files["rank_2.log"] = steps(2, 8) + (
        "[gpu-node07:4242 :0:4242] Caught signal 11 (Segmentation fault: address not mapped to object "
        "at address 0x10)\n"
        "==== backtrace (tid:   4242) ====\n"
        " 0  /usr/lib/libucs.so.0(ucs_handle_error+0x2d4) [0x7f0a1c2d4]\n"
    )
    d = run(tmp_path, files)
    assert d.verdict.outcome is Outcome.FIRST_DEATH
    assert first(d) == (2, Cause.SEGFAULT)


def test_bare_shell_line_names_the_native_crash(tmp_path: Path) -> None:
    files = {f"rank_{r}.log": steps(r, 10) + watchdog(r) for r in (0, 2, 3)}
    files["rank_1.log"] = steps(1, 8) + "Bus error (core dumped)\n"
    d = run(tmp_path, files)
    assert first(d) == (1, Cause.BUS_ERROR)


def test_dataloader_signal_text_maps_through_the_signal_classes(tmp_path: Path) -> None:
    files = {f"rank_{r}.log": steps(r, 10) + watchdog(r) for r in (0, 1)}
    files["rank_2.log"] = steps(2, 8) + (
        "[rank2]: Traceback (most recent call last):\n"
        '[rank2]:   File "train.py", line 3, in <module>\n'
        "[rank2]: RuntimeError: DataLoader worker (pid 5150) is killed by signal: Aborted.\n"
    )
    d = run(tmp_path, files)
    assert first(d) == (2, Cause.ABORT)


def test_pcie_aer_error_finds_the_rank_on_that_gpu(tmp_path: Path) -> None:
    init = (
        "gpu01:{pid}:{pid} [{r}] NCCL INFO comm 0x7f00 rank {r} nranks 4 cudaDev {r} busId {bus:x}000 - Init COMPLETE\n"
    )
    files = {
        f"rank_{r}.log": init.format(pid=4000 + r, r=r, bus=0x3A + r) + steps(r, 10) + (watchdog(r) if r != 1 else "")
        for r in range(4)
    }
    files["dmesg-gpu01.txt"] = (
        "[Sun Nov 29 07:00:09 2026] nvidia 0000:3b:00.0: AER: Uncorrected (Fatal) error received: 0000:3b:00.0\n"
    )
    d = run(tmp_path, files)
    assert first(d) == (1, Cause.GPU_HARDWARE)


def test_default_pg_prefix_is_a_global_rank_and_a_sub_group_is_not() -> None:
    assert default_pg_rank("[PG ID 0 PG GUID 0(default_pg) Rank 3] Process group watchdog thread terminated") == 3
    assert default_pg_rank("[PG 0 Rank 25] Heartbeat monitor timed out!") == 25
    assert default_pg_rank("[PG 0 (default_pg) Rank 7] Timeout at NCCL work: 6075") == 7
    assert default_pg_rank("  what():  [PG ID 0 PG GUID 0(default_pg) Rank 1] Process group watchdog") == 1
    assert default_pg_rank("[PG ID 12 PG GUID 99(EXPERT_MODEL_PARALLEL_GROUP) Rank 4] failure detected") is None
    assert default_pg_rank("[PG ID 1 PG GUID 1 Rank 0]  failure detected by watchdog") is None
    assert default_pg_rank("[Rank 3] Watchdog caught collective operation timeout") is None


def test_default_pg_prefix_counts_only_in_pytorch_distributed_streams() -> None:
    torch_head = ["[E ProcessGroupNCCL.cpp:632] some NCCL operations failed", "step 1", "step 2"]
    shapes = content_rank_shapes(torch_head)
    assert content_rank("[PG ID 0 PG GUID 0(default_pg) Rank 3] watchdog thread terminated", shapes) == 3
    assert content_rank("[PG ID 2 PG GUID 5 Rank 3] watchdog thread terminated", shapes) is None
    plain = content_rank_shapes(["no ranks here", "nor here", "step 1"])
    assert content_rank("[PG ID 0 PG GUID 0(default_pg) Rank 3] x", plain) is None


def test_old_rank_prefix_is_learnt_unless_the_stream_shows_a_sub_group() -> None:
    lines = [f"[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout" for r in range(4)]
    assert [content_rank(x, content_rank_shapes(lines)) for x in lines] == [0, 1, 2, 3]
    sub = [*lines, "[PG ID 3 PG GUID 7(TENSOR_MODEL_PARALLEL_GROUP) Rank 1] failure detected by watchdog"]
    assert content_rank(lines[2], content_rank_shapes(sub)) is None


def test_lightning_rank_prefix_is_a_content_rank_but_not_in_its_local_rank_messages() -> None:
    lines = [f"[rank: {r}] Seed set to 42" for r in range(4)]
    shapes = content_rank_shapes(lines)
    assert [content_rank(x, shapes) for x in lines] == [0, 1, 2, 3]
    assert content_rank("[rank: 1] Received SIGTERM: 15", shapes) is None
    assert content_rank("[rank: 1] Child process with PID 4242 terminated with code -9.", shapes) is None


IPYTHON_HEAD = (
    "---------------------------------------------------------------------------\n"
    "ProcessExitedException                    Traceback (most recent call last)\n"
    "<command-1357939202606131> in <module>\n"
    "----> 1 trainer.fit(model)\n"
    "\n"
    "/databricks/python/lib/python3.8/site-packages/pytorch_lightning/trainer/trainer.py in fit(self, model)\n"
    "    551         self.checkpoint_connector.resume_start()\n"
    "--> 553         self._run(model)\n"
    "\n"
    "File ~/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py:170, in ProcessContext.join(self)\n"
    "    168 if exitcode < 0:\n"
    "--> 170     raise ProcessExitedException(\n"
    "\n"
)


def test_an_ipython_traceback_runs_to_its_type_line(tmp_path: Path) -> None:
    head = IPYTHON_HEAD.replace("ProcessExitedException  ", "ValueError              ")
    d = run(tmp_path, {"rank_2.log": steps(2, 3) + head + "ValueError: bad sample 17\n"})
    assert first(d) == (2, Cause.PYTHON_EXCEPTION)
    assert d.verdict.first_death is not None and "bad sample 17" in d.verdict.first_death.detail


def test_an_ipython_traceback_cut_before_its_type_line_is_a_failure_without_a_cause(tmp_path: Path) -> None:
    d = run(tmp_path, {"cell.log": IPYTHON_HEAD})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert d.verdict.first_death is None


PADDLE_ABORT = (
    "INFO 2021-05-16 22:14:00,648 launch_utils.py:307] terminate all the procs\n"
    "ERROR 2021-05-16 22:14:00,649 launch_utils.py:545] ABORT!!! Out of all 4 trainers, the trainer process "
    "with rank=[{ranks}] was aborted. Please check its log.\n"
    "INFO 2021-05-16 22:14:03,652 launch_utils.py:307] terminate all the procs\n"
)


def test_paddles_launcher_list_of_dead_trainers_is_a_failure_but_not_an_order(tmp_path: Path) -> None:
    d = run(tmp_path, {"console.log": PADDLE_ABORT.format(ranks="1, 2, 3")})
    assert d.verdict.outcome is Outcome.UNDETERMINED  # not "no failure": the launcher saw trainers die
    assert {e.rank for e in d.events if e.rank is not None} == set()
    assert any(e.facts.get("ranks") == "1, 2, 3" for e in d.events)


def test_a_glog_failure_signal_names_the_crashing_pid(tmp_path: Path) -> None:
    console = (
        'W1212 04:02:33.400863 24044 init.cc:205] *** Aborted at 1576123353 (unix time) try "date -d @1576123353"\n'
        "W1212 04:02:33.403934 24044 init.cc:205] *** SIGSEGV (@0x0) received by PID 24044 (TID 0x7f6406bd7740) "
        "from PID 0; stack trace: ***\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED  # no line ties pid 24044 to a rank
    assert any(e.cause is Cause.SEGFAULT and e.pid == 24044 for e in d.events)


def _deepspeed_console(code: int) -> str:
    spawn = (
        "".join(
            f"[2026-12-01 21:29:01,98{r}] [INFO] [launch.py:245:main] process 2733{8 + r} spawned with command: "
            f"['/venv/bin/python3.11', '-u', 'job.py', '--local_rank={r}']\n"
            for r in range(2)
        )
        + "[2026-12-01 21:29:02,004] [INFO] [launch.py:245:main] process 27340 spawned with command: "
        + ("['/venv/bin/python3.11', '-u', 'job.py', '--local_rank=2']\n")
    )
    lost = "".join(
        f"[rank{r}]: Traceback (most recent call last):\n"
        f'[rank{r}]:   File "/job/job.py", line 346, in train\n'
        f"[rank{r}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
        "[127.0.1.1]:10670\n"
        for r in range(2)
    )
    return (
        spawn
        + lost
        + (
            "[2026-12-01 21:29:15,252] [ERROR] [launch.py:259:sigkill_handler] ['/venv/bin/python3.11', '-u', "
            f"'job.py', '--local_rank=2'] exits with return code = {code}\n"
        )
    )


def test_the_launchers_unranked_crash_signal_is_the_eliminated_ranks_death(tmp_path: Path) -> None:
    assert first(run(tmp_path / "segv", {"console.log": _deepspeed_console(-11)})) == (2, Cause.SEGFAULT)
    assert first(run(tmp_path / "kill", {"console.log": _deepspeed_console(-9)})) == (2, Cause.KILLED)


def test_the_launchers_crash_signal_with_no_rank_to_give_it_to_is_a_cause_without_a_rank(tmp_path: Path) -> None:
    """The launcher's kill trail and its return code alone (a paste of the launcher's last lines): a rank
    aborted, which one the line cannot say (its command is the last-spawned rank's). A kill is such a cause too:
    the code is the first failed child's own, recorded before the launcher kills the others (launch.py)."""
    trail = "".join(
        f"[2024-06-11 08:32:2{i},631] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 54927{i}\n"
        for i in range(5)
    )
    end = (
        "[2024-06-11 08:32:25,643] [ERROR] [launch.py:325:sigkill_handler] ['/venv/bin/python', '-u', 'train.py', "
        "'--local_rank=4'] exits with return code = {}\n"
    )
    aborted = run(tmp_path / "abrt", {"console.log": trail + end.format(-6)})
    assert aborted.verdict.first_death is not None
    assert (aborted.verdict.first_death.rank, aborted.verdict.first_death.cause) == (None, Cause.ABORT)
    assert aborted.verdict.confidence is Confidence.LOW
    killed = run(tmp_path / "kill", {"console.log": trail + end.format(-9)})
    assert killed.verdict.first_death is not None
    assert (killed.verdict.first_death.rank, killed.verdict.first_death.cause) == (None, Cause.KILLED)
    assert killed.verdict.confidence is Confidence.LOW


_OOM_LAST_LINE = (
    "[rank5]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 56.00 MiB. GPU 5 has a total capacity "
    "of 79.33 GiB of which 49.81 MiB is free.\n"
)
_RANK6_RAISING = (
    "[rank6]: Traceback (most recent call last):\n"
    '[rank6]:   File "/app/src/launcher.py", line 185, in <module>\n'
    "[rank6]:     run_exp()\n"
    '[rank6]:   File "/app/src/train/workflow.py", line 52, in run_sft\n'
    "[rank6]:     model = load_model(tokenizer, model_args)\n"
)


def test_an_excerpt_opening_inside_one_ranks_failure_names_no_rank_when_another_failed_too(tmp_path: Path) -> None:
    """A paste (or `tail`) that begins at rank 5's exception line, its traceback cut above, then rank 6
    raising: what came before the cut may hold an earlier failure, and the ranks' output order is not
    their death order. Alone, or with its traceback whole, rank 5 is named."""
    cut = run(tmp_path / "cut", {"console.log": _OOM_LAST_LINE + _RANK6_RAISING})
    assert cut.verdict.outcome is Outcome.UNDETERMINED
    assert cut.verdict.first_death is not None and cut.verdict.first_death.method == "excerpt"
    assert first(cut) == (None, Cause.CUDA_OOM) and cut.verdict.confidence is Confidence.LOW
    assert first(run(tmp_path / "alone", {"console.log": _OOM_LAST_LINE})) == (5, Cause.CUDA_OOM)
    whole = (
        "[rank5]: Traceback (most recent call last):\n"
        '[rank5]:   File "/app/src/train/workflow.py", line 52, in run_sft\n'
        "[rank5]:     model = load_model(tokenizer, model_args)\n"
    )
    assert first(run(tmp_path / "whole", {"console.log": whole + _OOM_LAST_LINE + _RANK6_RAISING})) == (
        5,
        Cause.CUDA_OOM,
    )


def test_a_rank_seen_only_by_its_hydra_label_is_the_one_the_others_lost(tmp_path: Path) -> None:
    start = "".join(
        f"[{r}] [INFO|job.py:256] 2026-12-01 21:33:1{r},529 >> Process rank: {r}, device: cpu\n" for r in range(3)
    )
    lost = "".join(
        f"[{r}] [rank{r}]: Traceback (most recent call last):\n"
        f'[{r}] [rank{r}]:   File "/job/job.py", line 346, in train\n'
        f"[{r}] [rank{r}]: RuntimeError: [../gloo/transport/tcp/pair.cc:553] Connection closed by peer [::1]:1579\n"
        for r in range(2)
    )
    d = run(tmp_path / "three", {"console.log": start + lost})
    assert first(d) == (2, Cause.SILENT_EXIT)
    assert any("its lines show it ran" in why for why in d.verdict.caps)
    two = "".join(line + "\n" for line in start.splitlines() if not line.startswith("[2]"))
    assert run(tmp_path / "two", {"console.log": two + lost}).verdict.first_death is None


def test_a_wrapped_frame_and_the_agents_logging_record_do_not_end_or_join_the_traceback(tmp_path: Path) -> None:
    console = (
        "Traceback (most recent call last):\n"
        '  File "/envs/th110/lib/python3.8/site-packages/torch/nn/parallel/distributed.py"\n'
        ", line 578, in __init__\n"
        "    dist._verify_model_across_ranks(self.process_group, parameters)\n"
        "ValueError: bad sample 17\n"
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 51428) of "
        "binary: /envs/th110/bin/python\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (0, Cause.PYTHON_EXCEPTION)
    assert d.verdict.first_death is not None and "bad sample 17" in d.verdict.first_death.detail


def test_a_ray_workers_traceback_is_the_rank_of_its_relay_pid(tmp_path: Path) -> None:
    console = (
        RAY_IDENTITY
        + "(RayTrainWorker pid=47313) Error in training function:\n"
        + "(RayTrainWorker pid=47313) Traceback (most recent call last):\n"
        + '(RayTrainWorker pid=47313)   File "/job/ray_job.py", line 124, in train_loop\n'
        + "(RayTrainWorker pid=47313) ValueError: bad sample 17 [repeated 2x across cluster]\n"
        + "(TrainController pid=47169) [Rank 1 Error Snippet]:\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)
    assert d.verdict.first_death is not None and d.verdict.first_death.detail.endswith("bad sample 17")


def test_of_workers_one_memory_kill_took_the_biggest_user_is_named(tmp_path: Path) -> None:
    def selected(pid: int, used: str) -> str:
        return (
            f"(TrainController pid=47169) Selected to kill: (Actor(1ffc8e54965a5271f7615541{pid}): job ID=01000000, "
            f"task name=RayTrainWorker.__init__, required resources={{CPU_group_d7: 1}}, pid={pid}, "
            f"actual memory used={used}, worker ID=263fa920ee3466adb348928cbd479942909d7604042a5a1ffc817e90)\n"
        )

    d = run(tmp_path, {"console.log": RAY_IDENTITY + selected(47314, "0.30GB") + selected(47313, "2.16GB")})
    assert first(d) == (1, Cause.HOST_OOM)


def test_rays_error_snippet_ties_the_relayed_traceback_to_its_rank_and_a_relay_is_no_other_death(
    tmp_path: Path,
) -> None:
    driver = (
        "ray.train.WorkerGroupError: Training failed due to worker errors:\n"
        "[Rank 1 Error Snippet]:\n"
        "Traceback (most recent call last):\n"
        '  File "/job/ray_job.py", line 124, in train_loop\n'
        "ValueError: bad sample 17\n"
        "(TrainController pid=47169) Traceback (most recent call last): [repeated 2x across cluster]\n"
        "(TrainController pid=47169) ValueError: bad sample 17 [repeated 2x across cluster]\n"
    )
    d = run(tmp_path, {"console.log": RAY_IDENTITY + driver})
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)
    assert not [cap for cap in d.verdict.caps if "tied to no rank" in cap]


def _lost(rank: int) -> str:
    return (
        f"[rank{rank}]: RuntimeError: [../third_party/gloo/gloo/transport/tcp/pair.cc:553] Connection closed by peer "
        "[127.0.1.1]:10670\n"
    )


def test_the_one_crash_logged_with_no_rank_is_the_death_of_the_rank_the_others_lost(tmp_path: Path) -> None:
    steps3 = steps(0, 3) + steps(1, 2) + steps(2, 3)
    dump = "Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f2b9f5b2740 (most recent call first):\n"
    d = run(tmp_path / "one", {"console.log": steps3 + dump + _lost(0) + _lost(2)})
    assert first(d) == (1, Cause.SEGFAULT)
    assert d.verdict.confidence.value == "medium"
    kernel = "[Sun Nov 29 07:00:05 2026] Out of memory: Killed process 4242 (python) total-vm:1kB, anon-rss:1kB\n"
    two = run(tmp_path / "two", {"console.log": steps3 + dump + _lost(0) + _lost(2), "dmesg.txt": kernel})
    assert first(two) == (1, Cause.SILENT_EXIT)  # a segfault and an OOM kill, both with no rank: neither is taken


def test_lightnings_rank_prefixed_child_exit_does_not_continue_an_exception_message(tmp_path: Path) -> None:
    console = (
        "Initializing distributed: GLOBAL_RANK: 2, MEMBER: 3/3\n"
        "Traceback (most recent call last):\n"
        '  File "/job/lit_job.py", line 112, in main\n'
        "FileNotFoundError: [Errno 2] No such file or directory: '/data/shards/index-02.json'\n"
        "[rank: 2] Child process with PID 28764 terminated with code 1. Forcefully terminating all other processes\n"
    )
    events = run(tmp_path, {"console.log": console}).events
    (tb,) = [e for e in events if e.rule == "python.traceback"]
    assert tb.cause is Cause.PYTHON_EXCEPTION and "classified_by" not in tb.facts


def test_ranks_seen_by_their_labels_are_not_unseen(tmp_path: Path) -> None:
    start = "".join(f"[{r}] rank {r} up\n" for r in range(3))
    raised = '[1] Traceback (most recent call last):\n[1]   File "/job/job.py", line 3, in f\n[1] ValueError: bad\n'
    d = run(tmp_path, {"console.log": start + raised})
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)
    assert not [cap for cap in d.verdict.caps if "only this rank's lines were seen" in cap]


def test_a_syntax_error_has_no_traceback_header_and_is_still_a_failure(tmp_path: Path) -> None:
    report = '  File "train.py", line 143\n    opt = f(x=1))\n               ^\nSyntaxError: invalid syntax\n'
    d = run(tmp_path, {"console.log": report * 4})
    assert d.verdict.outcome is Outcome.UNDETERMINED  # not "no failure": every rank refused the script
    assert {u.cause for u in d.verdict.unattributed} == {Cause.PYTHON_EXCEPTION}


def _worker_reraise(rank: int, where: str, original: list[str], frames: int = 3) -> str:
    """torch._utils.ExceptionWrapper.reraise: the worker's traceback is the rest of the message."""
    body = [f'  File "/job/data.py", line {10 + f}, in load_{f}\n    sample = decode(raw)' for f in range(frames)]
    first = original[-1].split(":")[0]
    return "".join(
        f"[rank{rank}]: {line}\n"
        for line in [
            "Traceback (most recent call last):",
            '  File "/job/train.py", line 80, in <module>',
            "    for batch in loader:",
            f"{first}: Caught {first} {where}.",
            "Original Traceback (most recent call last):",
            *"\n".join(body).splitlines(),
            *original,
        ]
    )


def test_a_dataloader_workers_exception_is_named_by_its_own_last_line(tmp_path: Path) -> None:
    """The rank re-raises it as `Caught ValueError in DataLoader worker process 2.`; the worker's own
    `Type: message` line, 30 frames later, says which sample: it is the death's detail and evidence."""
    original = ["ValueError: corrupt sample 62: decoded 0 bytes from shard-00000.tar"]
    d = run(tmp_path, {"console.log": steps(0, 3) + _worker_reraise(1, "in DataLoader worker process 2", original, 15)})
    f = d.verdict.first_death
    assert f is not None and (f.rank, f.cause) == (1, Cause.PYTHON_EXCEPTION)
    assert f.detail == original[0]
    assert f.evidence[0].text == original[0]
    event = next(e for e in d.events if e.rank == 1 and "exc_type" in e.facts)
    assert event.facts["raised"] == "in DataLoader worker process 2"
    assert any(ev.text.endswith("Caught ValueError in DataLoader worker process 2.") for ev in event.lines)


def test_a_replicas_cuda_oom_under_its_re_raise_is_a_cuda_oom(tmp_path: Path) -> None:
    """DataParallel's replicas re-raise the same way: the original line decides the cause. A chained
    original ends at its last exception."""
    original = [
        "KeyError: 'x'",
        "",
        "During handling of the above exception, another exception occurred:",
        "",
        "Traceback (most recent call last):",
        '  File "/job/model.py", line 7, in forward',
        "    y = self.net(x)",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    ]
    d = run(tmp_path, {"console.log": steps(0, 3) + _worker_reraise(3, "in replica 0 on device 0", original)})
    assert first(d) == (3, Cause.CUDA_OOM)
    assert d.verdict.first_death is not None and d.verdict.first_death.detail.startswith("torch.OutOfMemoryError")


def test_a_message_that_only_mentions_an_original_traceback_is_read_as_before(tmp_path: Path) -> None:
    cut = _worker_reraise(2, "in DataLoader worker process 0", ["ValueError: bad"]).splitlines(keepends=True)[:-1]
    d = run(tmp_path, {"console.log": steps(0, 3) + "".join(cut)})  # the original cut before its last line
    f = d.verdict.first_death
    assert f is not None and f.detail == "ValueError: Caught ValueError in DataLoader worker process 0."


def test_an_open_mpi_signal_block_pasted_indented_is_a_segfault(tmp_path: Path) -> None:
    """opal's signal handler block as an issue thread quotes it: in a code block, four spaces in."""
    block = (
        "[h06c0901:07661] *** Process received signal ***\n"
        "[h06c0901:07661] Signal: Segmentation fault (11)\n"
        "[h06c0901:07661] Signal code: Address not mapped (1)\n"
        "[h06c0901:07661] Failing at address: 0x2ae83e011880\n"
        "[h06c0901:07661] [ 0] /usr/lib64/libpthread.so.0(+0xf5e0)[0x2ae7a1f685e0]\n"
        "[h06c0901:07661] *** End of error message ***\n"
    )
    pasted = run(tmp_path / "pasted", {"console.log": "".join(f"    {line}\n" for line in block.splitlines())})
    assert pasted.verdict.outcome is Outcome.UNDETERMINED
    assert pasted.verdict.first_death is not None and pasted.verdict.first_death.cause is Cause.SEGFAULT


HEADLESS = (
    '[rank3]:   File "/opt/train.py", line 307, in <module>\n'
    "[rank3]:     main()\n"
    '[rank3]:   File "/opt/train.py", line 242, in train\n'
    "[rank3]:     loss = model(batch)\n"
)


def test_an_excerpt_that_starts_inside_a_traceback_is_read_from_its_first_frame(tmp_path: Path) -> None:
    d = run(tmp_path / "a", {"console.log": "\n...\n" + HEADLESS + "[rank3]: ValueError: bad sample 17\n"})
    assert first(d) == (3, Cause.PYTHON_EXCEPTION)
    f = d.verdict.first_death
    assert f is not None and f.detail == "ValueError: bad sample 17"
    bare = HEADLESS.replace("[rank3]: ", "")
    cut = run(tmp_path / "b", {"console.log": bare})  # cut at both ends: something raised, not what
    assert cut.verdict.outcome is Outcome.UNDETERMINED
    hooked = run(tmp_path / "c", {"console.log": HEADLESS})  # PyTorch's excepthook tagged it: it was not caught
    assert first(hooked) == (3, Cause.PYTHON_EXCEPTION) and hooked.verdict.confidence is Confidence.LOW


def test_a_frame_right_under_the_opening_line_opens_the_excerpt_and_one_further_down_does_not(tmp_path: Path) -> None:
    """A paste whose selection began at a source line's first word lost that line's indent: the frame under it
    opens the excerpt. Past that line a frame is in the middle of a log, not at an excerpt's cut."""
    lost = "return trainer.fit(model)\n" + HEADLESS + "[rank3]: ValueError: bad sample 17\n"
    assert first(run(tmp_path / "lost", {"console.log": lost})) == (3, Cause.PYTHON_EXCEPTION)
    d = run(
        tmp_path / "far", {"console.log": "[rank3]: step 1\n[rank3]: step 2\n" + HEADLESS + "[rank3]: ValueError: x\n"}
    )
    assert d.verdict.outcome is Outcome.NO_FAILURE and {e.rule for e in d.events} == {"progress.step"}
    header = "[rank3]: Traceback (most recent call last):\n" + HEADLESS + "[rank3]: ValueError: bad sample 17\n"
    assert [e.rule for e in run(tmp_path / "header", {"console.log": header}).events] == ["python.traceback"]


def test_an_excerpt_cut_at_its_first_character_keeps_the_rank_tag_that_lost_its_bracket(tmp_path: Path) -> None:
    """A paste whose selection began one character late: `rank3]: ` is PyTorch's `[rank3]: ` tag, and
    `default1]:` torchrun's tee, so the header under it is read as a header of that rank."""
    header = "rank3]: Traceback (most recent call last):\n" + HEADLESS + "[rank3]: ValueError: bad sample 17\n"
    d = run(tmp_path / "rank", {"console.log": header})
    assert [e.rule for e in d.events] == ["python.traceback"] and first(d) == (3, Cause.PYTHON_EXCEPTION)
    cut = run(tmp_path / "frame", {"console.log": HEADLESS[1:] + "[rank3]: ValueError: bad sample 17\n"})
    assert first(cut) == (3, Cause.PYTHON_EXCEPTION)
    tee = "default1]:Traceback (most recent call last):\n" + HEADLESS.replace("[rank3]:", "[default1]:")
    tee += "[default1]:ValueError: bad sample 17\n"
    (event,) = run(tmp_path / "tee", {"console.log": tee}).events
    assert event.rule == "python.traceback" and event.facts["exc_type"] == "ValueError"
    words = run(tmp_path / "words", {"console.log": "ranking]: Traceback (most recent call last):\n"})
    assert words.events == ()  # not a tag, and no header at the start of its line


def test_an_excerpt_that_opens_in_torchrun_s_table_at_its_traceback_field_is_read_from_the_frame(
    tmp_path: Path,
) -> None:
    """torchrun's failure table repeats the error file's traceback in its `traceback :` field; an excerpt cut
    above the field's line (the table's rank and host gone) is a traceback cut at its top."""
    table = (
        "  traceback : Traceback (most recent call last):\n"
        '    File "/usr/lib/python3/site-packages/torch/distributed/elastic/multiprocessing/errors/__init__.py",'
        " line 357, in wrapper\n"
        "      return f(*args, **kwargs)\n"
        '    File "/job/train.py", line 96, in train\n'
        "      self.step(batch)\n"
    )
    d = run(tmp_path / "cut", {"console.log": table})
    assert [(e.rule, e.facts.get("cut_off")) for e in d.events] == [("python.traceback-cut-top", "1")]
    assert d.verdict.outcome is Outcome.UNDETERMINED
    whole = run(tmp_path / "whole", {"console.log": table + "  RuntimeError: shapes differ\n"})
    assert [e.facts.get("exc_type") for e in whole.events] == ["RuntimeError"]


def test_an_exception_of_a_bare_type_has_no_message_to_read_on_into_the_launcher_s_line(tmp_path: Path) -> None:
    """CPython prints `Type` alone only for an exception whose message is empty: the line under it is not
    the rest of a message (here srun's report of the task that raised, its own event)."""
    log = (
        "Traceback (most recent call last):\n"
        '  File "/env/lib/python3.10/site-packages/torch/distributed/elastic/rendezvous/api.py", line 635, in run\n'
        "    raise RendezvousClosedError()\n"
        "torch.distributed.elastic.rendezvous.api.RendezvousClosedError\n"
        "srun: error: node7: task 1: Exited with exit code 1\n"
    )
    d = run(tmp_path, {"console.log": log})
    tb = next(e for e in d.events if e.rule == "python.traceback")
    assert tb.facts["exc_type"] == "torch.distributed.elastic.rendezvous.api.RendezvousClosedError"
    assert [x.text for x in tb.lines] == ["torch.distributed.elastic.rendezvous.api.RendezvousClosedError"]
    assert "exitcode" not in tb.facts and "slurm.task-exit" in {e.rule for e in d.events}


def test_fastchat_s_stderr_logged_as_records_is_read_as_the_lines_it_wrote(tmp_path: Path) -> None:
    """FastChat and LLaVA log every line a process writes to stderr as a record of the logger `stderr`: under
    the record's stamp, level and name the line is what the process wrote, tags and tracebacks included."""
    wrote = [
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/srv/fastchat/serve/vllm_worker.py", line 290, in <module>',
        "[rank0]:     engine = AsyncLLMEngine.from_engine_args(engine_args)",
        "[rank0]: ValueError: The model's max seq len (32768) is larger than the KV cache can hold",
    ]
    records = "".join(f"2024-10-14 01:39:{49 + i // 4:02d} | ERROR | stderr | {line}\n" for i, line in enumerate(wrote))
    d = run(tmp_path, {"console.log": "2024-10-14 01:39:40 | INFO | model_worker | Loading the model\n" + records})
    assert first(d) == (0, Cause.PYTHON_EXCEPTION)
    f = d.verdict.first_death
    assert f is not None and f.detail.startswith("ValueError: The model's max seq len")
    assert f.time is not None and f"{f.time.earliest:%H:%M:%S}" == "01:39:49"


def test_an_excerpt_that_opens_in_rich_s_box_is_read_to_the_exception_under_its_bottom_edge(tmp_path: Path) -> None:
    """A paste cut inside rich's traceback box, above any frame row: the box's bottom edge is followed by the
    `Type: message` line, which opens the excerpt as an exception line at its top would (the builtin
    `Exception` raised as it is, too)."""
    box = (
        "│   113 │   │   # We need to convert a slow tokenizer to build the backend          │\n"
        "│   114 │   │   fast_tokenizer = convert_slow_tokenizer(slow_tokenizer)             │\n"
        "╰─────────────────────────────────────────────────────────────────────────────────╯\n"
        "Exception: expected value at line 1 column 1\n"
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 24024) of "
        "binary: /opt/conda/bin/python\n"
    )
    d = run(tmp_path, {"console.log": box})
    assert first(d) == (0, Cause.PYTHON_EXCEPTION)
    f = d.verdict.first_death
    assert f is not None and "Exception: expected value at line 1 column 1" in f.detail


def test_a_wrapper_s_stamp_and_level_tag_on_every_line_leave_the_child_s_traceback_readable(tmp_path: Path) -> None:
    """An app that runs the job logs each line of its child under its own stamp and the record's level
    (`[2024-09-09 19:22:16] [INFO] ...`): under both, the child's traceback reads as it was written."""
    steps = [f"[2024-09-09 19:22:{s:02d}] [INFO] [rank1]: step {s}" for s in range(12)]
    child = [
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/job/train.py", line 88, in <module>',
        "[rank1]:     loss = model(batch)",
        "[rank1]: ValueError: bad sample 17",
    ]
    lines = steps + [f"[2024-09-09 19:22:16] [ERROR] {line}" for line in child]
    d = run(tmp_path, {"console.log": "".join(line + "\n" for line in lines)})
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)
    f = d.verdict.first_death
    assert f is not None and f.detail == "ValueError: bad sample 17"


def _vllm(pid: int, name: str, level: str, second: int, where: str, lines: list[str]) -> str:
    """vLLM's record: its header on every line (NewLineFormatter), under the worker's process prefix."""
    head = f"({name} pid={pid}) " if name else ""
    return "".join(f"{head}{level} 11-08 11:01:{second:02d} [{where}] {line}\n" for line in lines)


VLLM_TRACEBACK = [
    "WorkerProc failed.",
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.10/dist-packages/vllm/v1/executor/multiproc_executor.py", line 541, in worker_main',
    "    worker.worker_busy_loop()",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.10 GiB",
]


def test_vllm_headers_on_every_line_are_read_as_a_layer_and_its_worker_prefix_names_the_rank(tmp_path: Path) -> None:
    console = (
        _vllm(0, "", "INFO", 10, "core.py:75", ["Initializing a V1 LLM engine with config: tp=2"])
        + _vllm(4101, "VllmWorker TP1", "ERROR", 28, "multiproc_executor.py:546", VLLM_TRACEBACK)
        + _vllm(0, "", "ERROR", 29, "multiproc_executor.py:135", ["Worker proc VllmWorker-1 died unexpectedly, "
                "shutting down executor."])
        + _vllm(0, "", "ERROR", 30, "core.py:502", ["EngineCore encountered a fatal error.",
                "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) "
                "for the root cause."])
    )  # fmt: skip
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (1, Cause.CUDA_OOM)
    f = d.verdict.first_death
    assert f is not None and f.time is not None and (f.time.earliest.month, f.time.earliest.day) == (11, 8)


def test_a_vllm_worker_that_died_without_a_word_is_that_ranks_death(tmp_path: Path) -> None:
    died = "Worker proc VllmWorker-3 died unexpectedly, shutting down executor."
    compose = (
        "".join(
            f"llm-server-1  | {line}"
            for line in (
                _vllm(0, "", "INFO", 1, "loggers.py:116", [f"Engine 000: Avg generation throughput: {n}.0 tokens/s"])
                for n in range(9)
            )
        )
        + "llm-server-1  | "
        + _vllm(0, "", "ERROR", 29, "multiproc_executor.py:135", [died])
    )
    d = run(tmp_path, {"console.log": compose})
    assert first(d) == (3, Cause.SILENT_EXIT)
    assert d.verdict.outcome is Outcome.FIRST_DEATH


SGLANG_FRAMES = (
    '  File "/sglang/python/sglang/srt/managers/scheduler.py", line 2015, in run_scheduler_process\n'
    "    scheduler.event_loop_normal()\n"
)


def test_an_sglang_scheduler_that_hit_an_exception_is_its_tp_ranks_death_even_cut(tmp_path: Path) -> None:
    head = "[2025-04-23 21:31:41 TP2] Scheduler hit an exception: Traceback (most recent call last):\n"
    d = run(tmp_path / "whole", {"console.log": head + SGLANG_FRAMES + "RuntimeError: Triton Error [CUDA]: out\n"})
    assert first(d) == (2, Cause.PYTHON_EXCEPTION)
    cut = run(tmp_path / "cut", {"console.log": head + SGLANG_FRAMES})
    assert first(cut) == (2, Cause.PYTHON_EXCEPTION)  # SGLang's own words say the process died of it
    grouped = run(tmp_path / "dp", {"console.log": head.replace(" TP2]", " DP1 TP2]") + SGLANG_FRAMES})
    f = grouped.verdict.first_death
    assert f is not None and f.rank is None  # a TP rank under a DP label repeats across groups


def _raised(rank: int, stamp: str, then: str = "") -> str:
    return (
        f"{stamp} ERROR [rank {rank}] init failed\n"
        "Traceback (most recent call last):\n"
        '  File "/job/train.py", line 12, in main\n'
        "ValueError: bad config\n"
    ) + (f"{then} INFO [rank {rank}] process exiting\n" if then else "")


def test_a_death_stamped_before_every_progress_line_is_in_start_up(tmp_path: Path) -> None:
    """Only a death bounded on both sides: one whose time is open on the right could be any time later
    (a rank that logs no steps of its own may crash long after its last stamped line)."""
    bounded = _raised(1, "2026-11-29 07:01:00,000", then="2026-11-29 07:01:01,000")
    cases = {
        "early": {"rank_0.log": steps(0, 5, minute=5), "rank_1.log": bounded},
        "open": {"rank_0.log": steps(0, 5, minute=5), "rank_1.log": _raised(1, "2026-11-29 07:01:00,000")},
        "late": {"rank_0.log": steps(0, 5), "rank_1.log": bounded},
        "none": {"rank_1.log": bounded},  # no progress at all: nothing says start-up
    }
    phases = {}
    for name, files in cases.items():
        f = run(tmp_path / name, files).verdict.first_death
        assert f is not None and f.rank == 1
        phases[name] = f.phase
    assert phases == {"early": Phase.STARTUP, "open": Phase.TRAINING, "late": Phase.TRAINING, "none": Phase.TRAINING}


def test_line_order_alone_never_puts_a_death_in_start_up(tmp_path: Path) -> None:
    """A pytest report prints the traceback over the captured output, whose step lines are unstamped."""
    report = _raised(1, "2026-11-29 07:01:00,000") + "".join(f"rank 1 step {s}\n" for s in range(3))
    d = run(tmp_path, {"rank_1.log": report})
    assert d.verdict.first_death is not None and d.verdict.first_death.phase is Phase.TRAINING


def test_an_excerpt_that_opens_on_a_frames_source_line_is_read_from_the_frame_under_it(tmp_path: Path) -> None:
    source = "[rank3]:     sys.exit(main())\n[rank3]:              ^^^^^^\n"
    d = run(tmp_path / "a", {"console.log": "\n" + source + HEADLESS + "[rank3]: ValueError: bad sample 17\n"})
    assert first(d) == (3, Cause.PYTHON_EXCEPTION)
    wrapped = (
        "[rank3]:     x = self.experts(dispatched_input)\n[rank3]:         ^^\n^^^^^^^^^^^^^^^^^^^^\n"  # a wrap's rest
    )
    d = run(tmp_path / "w", {"console.log": wrapped + HEADLESS + "[rank3]: ValueError: bad sample 17\n"})
    assert first(d) == (3, Cause.PYTHON_EXCEPTION)
    config = '    "lr": 0.1,\n    "epochs": 3\n}\nstep 1\n'  # an indented opening that no frame follows is nothing
    assert run(tmp_path / "b", {"console.log": config}).verdict.outcome is Outcome.NO_FAILURE
    ompi4 = (  # `--tag-output` up to Open MPI 4 puts no space after the tag: its stripping takes a source line's first
        "[1,1]<stderr>:    labels=context[:, 1:], logits=output['logits'][:, :-1]))\n"
        '[1,1]<stderr>:  File "/usr/lib/python3.5/dist-packages/tensorflow/python/ops/array_ops.py", line 525, in '
        "_slice_helper\n[1,1]<stderr>:    name=name)\n"
    )
    d = run(tmp_path / "t", {"console.log": ompi4})
    assert d.verdict.outcome is Outcome.UNDETERMINED and any(e.facts.get("cut_off") == "1" for e in d.events)


def _entry(index: int, rank: int, code: int) -> str:
    return (
        f"[{index}]:\n  time      : 2026-11-29_10:08:22\n  host      : node01\n"
        f"  rank      : {rank} (local_rank: {rank})\n  exitcode  : {code} (pid: {4000 + rank})\n"
        "  error_file: <N/A>\n  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
    )


def test_a_failure_table_cut_before_its_root_cause_names_no_first_death(tmp_path: Path) -> None:
    """torchrun lists under `Failures:` every failure but its root cause (ChildFailedError.format_msg)."""
    head = "============================================================\ntrain.py FAILED\n" + "-" * 60 + "\n"
    cut = run(tmp_path / "cut", {"console.log": head + "Failures:\n" + _entry(1, 1, 1)})
    assert cut.verdict.outcome is Outcome.UNDETERMINED and cut.verdict.first_death is None
    assert "under 'Failures:'" in cut.verdict.reasoning[0]
    whole = (
        head
        + "Failures:\n"
        + _entry(1, 1, 1)
        + "-" * 60
        + "\nRoot Cause (first observed failure):\n"
        + _entry(0, 0, -9)
    )
    assert first(run(tmp_path / "whole", {"console.log": whole})) == (0, Cause.KILLED)
    old = head + "Root Cause:\n" + _entry(0, 0, -9) + "Other Failures:\n" + _entry(1, 1, 1)  # torch 1.9-1.10's order
    events = run(tmp_path / "old", {"console.log": old}).events
    entries = {e.rank: e.facts["root_cause"] for e in events if "root_cause" in e.facts}
    assert entries == {0: "1", 1: "0"}


def test_a_processs_later_crash_lines_are_what_its_dying_did_not_another_death(tmp_path: Path) -> None:
    """Open MPI's handler reports an abort, then MXM's a segfault in the same process (its handler chain)."""
    block = (
        "[gpu07:40360] *** Process received signal ***\n"
        "[gpu07:40360] Signal: Aborted (6)\n"
        "[gpu07:40360] *** End of error message ***\n"
        "[gpu07:40360:0] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x5)\n"
        "[gpu07:40361] *** Process received signal ***\n"
        "[gpu07:40361] Signal: Aborted (6)\n"
    )
    d = run(tmp_path, {"console.log": block})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert d.verdict.first_death is not None and d.verdict.first_death.cause is Cause.ABORT
    assert [u.cause for u in d.verdict.unattributed] == [Cause.ABORT, Cause.ABORT]


def test_a_stream_read_whole_opens_on_source_lines_as_a_chunked_one_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole read (a hard wrap, pytest's report) tries the opening rules on the same lines, and an
    input of source lines alone, with no line after them, is nothing."""
    monkeypatch.setattr(LineParser, "sequential", property(lambda self: True))
    source = "[rank3]:     sys.exit(main())\n[rank3]:              ^^^^^^\n"
    d = run(tmp_path / "a", {"console.log": source + HEADLESS + "[rank3]: ValueError: bad sample 17\n"})
    assert first(d) == (3, Cause.PYTHON_EXCEPTION)
    assert run(tmp_path / "b", {"console.log": "    x = f()\n    y = g()\n"}).verdict.outcome is Outcome.NO_FAILURE


def test_an_excerpt_that_opens_in_richs_traceback_box_is_read_from_its_frame_row(tmp_path: Path) -> None:
    """rich's handler boxes a traceback: an excerpt cut inside the box opens on a frame's source rows, with
    the frame row (`│ /x.py:12 in f │`) further down; a boxed table (Lightning's summary) has no frame row."""
    rows = [
        "│   1019 │   │   │   return None                                               │",
        "│   1020 │   │   raise RuntimeError(f'Unexpected state {self.state}')          │",
        "│   1021                                                                       │",
        "│                                                                              │",
        "│ /usr/lib/python3.10/site-packages/lightning/pytorch/loops/fit_loop.py:201 in │",
        "│ run                                                                          │",
        "│ /usr/lib/python3.10/site-packages/lightning/pytorch/loops/fit_loop.py:355 in run │",
    ]
    d = run(tmp_path / "rich", {"console.log": "\n".join(rows) + "\n"})
    assert d.verdict.outcome is Outcome.UNDETERMINED and any(e.facts.get("cut_off") == "1" for e in d.events)
    table = [
        "│ 0 │ model   │ LlamaForCausalLM │ 6.7 B  │",
        "│ 1 │ loss_fn │ CrossEntropyLoss │ 0      │",
        "└───┴─────────┴──────────────────┴────────┘",
        "Epoch 0: 100%|██████████| 10/10 [00:01<00:00, 9.12it/s]",
    ]
    assert run(tmp_path / "table", {"console.log": "\n".join(table) + "\n"}).verdict.outcome is Outcome.NO_FAILURE


def _c10_cuda_report(prefix: str, message: str | None) -> str:
    """c10's report of a failed CUDA check under the NCCL watchdog, its `CUDA error:` head line optional."""
    lib = "(0x7fc966f2a718 in /usr/lib/python3/dist-packages/torch/lib/libc10_cuda.so)"
    lines = (
        []
        if message is None
        else [
            "[E1129 07:10:01.123456789 ProcessGroupNCCL.cpp:1595] [PG ID 0 PG GUID 0(default_pg) Rank 1] "
            f"Process group watchdog thread terminated with exception: CUDA error: {message}",
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
            "be incorrect.",
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
            "",
        ]
    )
    lines += [
        "Exception raised from c10_cuda_check_implementation at /pytorch/c10/cuda/CUDAException.cpp:43 (most recent "
        "call first):",
        f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x57 {lib}",
        f"frame #1: c10::detail::torchCheckFail(char const*, char const*, unsigned, std::string const&) + 0x6 {lib}",
        f"frame #2: c10::cuda::c10_cuda_check_implementation(int, char const*, char const*, int, bool) + 0x118 {lib}",
        f"frame #3: c10d::ProcessGroupNCCL::WorkNCCL::finishedGPUExecutionInternal() const + 0x56 {lib}",
        f"frame #4: c10d::ProcessGroupNCCL::WorkNCCL::isCompleted() + 0x58 {lib}",
    ]
    return "".join(f"{prefix}{line}\n" for line in lines)


def test_a_failed_cuda_check_whose_error_line_was_cut_is_a_cuda_error(tmp_path: Path) -> None:
    """The excerpt keeps only c10's frames of the watchdog's CUDA check: a CUDA error, on no rank the lines name."""
    frames = _c10_cuda_report("", None).splitlines(keepends=True)[2:]  # opens on frame #1
    d = run(tmp_path, {"console.log": "".join(frames)})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert first(d) == (None, Cause.CUDA_ERROR)
    assert len([e for e in d.events if e.cause is Cause.CUDA_ERROR]) == 1  # one report, one cause


@pytest.mark.parametrize(
    ("message", "cause"),
    [
        ("uncorrectable ECC error encountered", Cause.GPU_HARDWARE),
        ("an illegal memory access was encountered", Cause.CUDA_ERROR),
    ],
)
def test_a_failed_cuda_check_adds_nothing_under_its_own_error_line(tmp_path: Path, message: str, cause: Cause) -> None:
    """Under its `CUDA error:` line, the check's report is that line's: the rank's one cause is what the line says."""
    d = run(tmp_path, {"console.log": steps(0, 3) + _c10_cuda_report("[rank1]:", message) + steps(0, 2, minute=11)})
    assert first(d) == (1, cause)
    assert [e.cause for e in d.events if e.rank == 1 and e.role.value == "cause"] == [cause]


def _watchdog_timeout_report(prefix: str, head: bool) -> str:
    """The NCCL watchdog's timeout with c10's C++ stack, its `Watchdog caught` line optional."""
    lib = "(0x7f6aaafa5672 in /opt/venv/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so)"
    lines = [
        "[E1129 07:40:01.123456789 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: "
        "WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600081 milliseconds "
        "before timing out.",
    ][: int(head)]
    lines += [
        "Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:632 (most "
        "recent call first):",
        f"frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 {lib}",
        "frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
        f"std::ratio<1l, 1000l> > >) + 0x282 {lib}",
        f"frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 {lib}",
        f"frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d {lib}",
    ]
    return "".join(f"{prefix}{line}\n" for line in lines)


def test_the_watchdogs_timeout_stack_without_its_message_is_still_a_collective_timeout(tmp_path: Path) -> None:
    """c10's frames of WorkNCCL::checkTimeout, the message above them cut away: a job that failed of a timeout (no
    rank named), not one with no failure; under the message, the frames add no second timeout."""
    frames = _watchdog_timeout_report("", head=False).splitlines(keepends=True)[2:]  # opens on frame #1
    d = run(tmp_path / "cut", {"console.log": "".join(frames)})
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death is None
    assert [e.cause for e in d.events if e.role.value == "symptom"] == [Cause.COLLECTIVE_TIMEOUT]
    d = run(tmp_path / "whole", {"console.log": steps(0, 3) + _watchdog_timeout_report("[rank1]:", head=True)})
    assert [e.rule for e in d.events if e.cause is Cause.COLLECTIVE_TIMEOUT] == ["pytorch.nccl-watchdog-timeout"]


_PG = "[PG ID 0 PG GUID 0(default_pg) Rank {r}]"
_DUMPING = {
    "trace": "[rank{r}]:[E626 16:48:25.440243908 ProcessGroupNCCL.cpp:670] Stack trace of the failed collective not "
    "found, potentially because FlightRecorder is disabled. You can enable it by setting TORCH_NCCL_TRACE_BUFFER_SIZE "
    "to a non-zero value.",
    "dump": "[rank{r}]:[E626 16:48:25.440228878 ProcessGroupNCCL.cpp:1533] " + _PG + " ProcessGroupNCCL preparing to "
    "dump debug info. Include stack trace: 1",
    "observed": "[rank{r}]:[E626 16:48:25.110800000 ProcessGroupNCCL.cpp:1685] " + _PG + " Observed flight recorder "
    "dump signal from another rank via TCPStore.",
    "own": "[rank{r}]:[E430 05:09:49.553722875 ProcessGroupNCCL.cpp:1743] " + _PG + " Received a dump signal due to "
    "a collective timeout from this local ",  # a viewer's hard wrap after `local`
}


@pytest.mark.parametrize("kinds", [["trace", "dump"], ["observed"], ["own", "dump"]])
def test_ranks_dumping_their_flight_records_are_waiters_of_a_failed_job(tmp_path: Path, kinds: list[str]) -> None:
    """Lines of ProcessGroupNCCL's failure path (the watchdog's stack of the failed collective, the debug dump,
    another rank's dump signal observed, a timeout of its own) say that the job failed and that the rank that
    printed them was alive and waiting: no rank among them is the culprit, nor is the job free of failure."""
    lines = [_DUMPING[kinds[i % len(kinds)]].format(r=r) for i, r in enumerate((1, 3, 5, 7))]
    d = run(tmp_path, {"console.log": "\n".join(lines) + "\n"})
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death is None
    assert {e.rank for e in d.events if e.role.value == "symptom"} == {1, 3, 5, 7}


_BARRIER = "02/21/2022 13:46:{s} - INFO - torch.distributed.distributed_c10d -   "
_SHAPES = {
    "store barrier that completed": (
        _BARRIER.format(s=14) + "Waiting in store based barrier to initialize process group for rank: 3, key: "
        "store_based_barrier_key:1 (world_size=6, worker_count=4, timeout=0:30:00)\n"
        + _BARRIER.format(s=15)
        + "Rank 0: Completed store-based barrier for key:store_based_barrier_key:1 with 6 nodes.\n",
        Outcome.NO_FAILURE, None,
    ),
    "HCCL socket timeout under torch_npu's error": (
        "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "/x/distributed_c10d.py", line 2501, in all_reduce\n'
        "[rank1]:     work = group.allreduce([tensor], opts)\n"
        "[rank1]: RuntimeError: InnerRunOpApi:torch_npu/csrc/framework/OpParamMaker.cpp:281 OPS function error: "
        "HcclAllreduce, error code is 6\n"
        "[rank1]: EI0006: [PID: 1292363] 2025-04-08-18:07:20.444.436 Getting socket times out. Reason: Remote Rank did "
        "not send the data in time. Please check the reason for the rank being stuck\n",
        Outcome.UNDETERMINED, None,
    ),
    "Open MPI's daemons that did not start": (
        "ORTE was unable to reliably start one or more daemons.\nThis usually is caused by:\n",
        Outcome.UNDETERMINED, None,
    ),
    "the store's server that could not listen": (
        "[W socket.cpp:464] [c10d] The server socket has failed to bind to [::]:12355 (errno: 98 - Address already in "
        "use).\ntorch.distributed.DistNetworkError: The server socket has failed to listen on any local network "
        "address. The server socket has failed to bind to [::]:12355 (errno: 98 - Address already in use).\n",
        Outcome.UNDETERMINED, Cause.PYTHON_EXCEPTION,
    ),
    "Neuron's collectives timing out in their bootstrap": (
        "".join(
            f"2023-Aug-01 16:14:43.0{n}10 332066:3325{n} [{n}] bootstrap.cc:89 CCOM WARN Timeout waiting for incoming "
            "connection (waited 120 sec)\n"
            for n in (26, 27, 31)
        ),
        Outcome.UNDETERMINED, None,
    ),
    "kubectl's pod that ended in Error": (
        "NAME                  READY   STATUS    RESTARTS   AGE\n"
        "pytorchjob-master-0   1/1     Running   0          12m\n"
        "pytorchjob-worker-0   0/1     Error     0          12m\n",
        Outcome.UNDETERMINED, None,
    ),
    "kubectl's pod that was OOMKilled": (
        "NAME                  READY   STATUS      RESTARTS     AGE\n"
        "pytorchjob-worker-3   0/1     OOMKilled   2 (5m ago)   1h\n",
        Outcome.UNDETERMINED, Cause.HOST_OOM,
    ),
    "a DataLoader worker's traceback cut above its Original header": (
        "Original Traceback (most recent call last):\n"
        '  File "/venv/torch/utils/data/_utils/worker.py", line 287, in _worker_loop\n'
        "    data = fetcher.fetch(index)\nIndexError: _Map_base::at\n",
        Outcome.UNDETERMINED, Cause.PYTHON_EXCEPTION,
    ),
}  # fmt: skip


@pytest.mark.parametrize("shape", list(_SHAPES))
def test_what_an_emitter_prints_reads_as_it_means(tmp_path: Path, shape: str) -> None:
    """A start-up barrier that completed is no hang; HCCL's socket timeout makes the collective's error a symptom;
    mpirun's daemons that did not start end the job; a worker's re-raised traceback is an exception, rank unknown."""
    text, outcome, cause = _SHAPES[shape]
    d = run(tmp_path, {"console.log": text})
    assert d.verdict.outcome is outcome
    assert first(d) == (None, cause)


def _torch_logged(header: str, lines: list[str]) -> str:
    return "".join(f"{header} {line}\n" for line in lines)


def test_a_traceback_logged_through_torchs_logger_is_read_under_its_header_and_a_relay_dates_no_death(
    tmp_path: Path,
) -> None:
    """torch._logging repeats its header on every line of a record: MultiProcessTestCase's `Caught exception:`
    is rank 1's own exception; the elastic agent's log of a spawned child's error is a relay, written after the
    child died, so its stamp is no time of that death (the failure table's, and the teardown, bound it)."""
    own = _torch_logged("[rank1]:E1129 07:10:05.000000 4712 common_distributed.py:939]", [
        "Caught exception: ", "Traceback (most recent call last):", '  File "/t/test_dist.py", line 77, in test_x',
        "    fn()", "AssertionError: Tensor-likes are not close!",
    ])  # fmt: skip
    d = run(tmp_path / "own", {"console.log": steps(0, 3, minute=10) + own})
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)
    assert d.verdict.first_death is not None and d.verdict.first_death.detail.startswith("AssertionError")
    agent = "E1129 07:10:09.000000 30180 torch/distributed/elastic/multiprocessing/api.py:836]"
    relay = _torch_logged(agent, [
        "failed (exitcode: 1) local_rank: 1 (pid: 30189) of fn: train (start_method: fork)",
        "Traceback (most recent call last):", '  File "/venv/torch/multiprocessing/spawn.py", line 211, in join',
        "    raise ProcessRaisedException(msg, error_index, failed_process.pid)",
        "torch.multiprocessing.spawn.ProcessRaisedException: ", "", "-- Process 1 terminated with the following error:",
        "Traceback (most recent call last):", '  File "/job/job.py", line 143, in __getitem__',
        "    raise ValueError(f'corrupt sample {idx}')", "ValueError: corrupt sample 85",
    ])  # fmt: skip
    teardown = _torch_logged("W1129 07:10:08.000000 30180 torch/multiprocessing/spawn.py:165]",
                             ["Terminating process 30188 via signal SIGTERM"])  # fmt: skip
    d = run(tmp_path / "relay", {"console.log": steps(0, 3, minute=10) + teardown + relay})
    death = d.verdict.first_death
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)
    assert death is not None and death.time is not None
    assert death.time.latest.second <= 8  # before the teardown, not at the relay's 07:10:09


_HYDRA_HINT = "Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.\n"
_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 192.00 MiB. GPU 1 has a total capacity of 79.15 "
    "GiB of which 104.88 MiB is free.\n"
)


@pytest.mark.parametrize(
    ("tail", "cause"), [(_OOM + "\n" + _HYDRA_HINT, Cause.CUDA_OOM), (_HYDRA_HINT, Cause.PYTHON_EXCEPTION)]
)
def test_hydra_says_its_job_raised_unless_the_exception_is_shown(tmp_path: Path, tail: str, cause: Cause) -> None:
    """Hydra's hint after the job's exception: the exception decides the cause; alone, the hint says one was raised."""
    head = "Error executing job with overrides: ['trainer.devices=2']\n"
    d = run(tmp_path, {"rank_1.log": head + tail, "rank_0.log": steps(0, 3)})
    assert first(d) == (1, cause)
    assert [e.cause for e in d.events if e.rank == 1 and e.role.value == "cause"] == [cause]


_FLAT = (
    "Traceback (most recent call last):\n"
    'File "/megatron/initialize.py", line 181, in _initialize_distributed\n'
    "torch.distributed.init_process_group(\n"
    'File "/usr/lib/python3.8/site-packages/torch/distributed/rendezvous.py", line 142, in _tcp_rendezvous_handler\n'
    "store = TCPStore(result.hostname, result.port, world_size, start_daemon, timeout)\n"
    'File "/sglang/srt/distributed/device_communicators/pynccl.py", line 110, in __init__\n'
    "self.comm: ncclComm_t = self.nccl.ncclCommInitRank(\n"  # an annotated source line: no `Type: message`
    'File "<frozen importlib._bootstrap>", line 1004, in _find_and_load_unlocked\n'
    "RuntimeError: Address already in use\n"
)


@pytest.mark.parametrize("header", [True, False])
def test_a_traceback_pasted_without_its_indents_ends_at_its_exception_line(tmp_path: Path, header: bool) -> None:
    """Every frame and source line at column 0 (a paste that lost its indents): each frame's source line is
    read as such, not as the end; a frame with no source (a frozen module) may be followed by the exception."""
    rank1 = steps(1, 3) + _FLAT if header else _FLAT.split("\n", 1)[1]  # else an excerpt opening on a frame
    d = run(tmp_path, {"rank_1.log": rank1, "rank_0.log": steps(0, 3)})
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)
    assert d.verdict.first_death is not None and "Address already in use" in d.verdict.first_death.detail


_RENDERED = (
    "Traceback (most recent call last):\n"
    'File "/dev/shm/train.py", line 344, in\n'  # Markdown took `<module>` for a tag and dropped it
    "model = hugectr.Model(solver, reader, optimizer)\n"
    "^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"  # 3.11's markers, at column 0 too
    'File "/lib/site-packages/hugectr/model.py", line 12, in __init__\n'
    "self._init(comm)\n"
    "~~~~~~~~~~^^^^^^\n"
    "RuntimeError: Runtime error: MPI_ERR_OTHER: known error not in list\n"
)


def test_a_traceback_from_a_rendered_page_ends_at_its_exception_line(tmp_path: Path) -> None:
    """A thread shown as Markdown loses the indents, `<module>` and the markers' indent: still one traceback."""
    d = run(tmp_path, {"rank_1.log": steps(1, 3) + _RENDERED, "rank_0.log": steps(0, 3)})
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)
    assert d.verdict.first_death is not None and "MPI_ERR_OTHER" in d.verdict.first_death.detail


def test_a_ranks_line_written_after_a_progress_bar_is_that_ranks(tmp_path: Path) -> None:
    """tqdm redraws after a `\\r` and writes no line feed: rank 1's prefixed watchdog line goes on the bar's line."""
    bar = "Epoch 0:   1%|          | 5/500 [00:05<08:15,  1.00it/s]"  # a description before it
    watchdog = (
        "[rank{r}]:[E318 07:39:53.713449198 ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation "
        "timeout: WorkNCCL(SeqNum=610, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600018 "
        "milliseconds before timing out.\n"
    )
    for redrawn in ("", "\r"):  # as a terminal kept it, and as a paste shows it
        console = redrawn + bar + watchdog.format(r=1) + watchdog.format(r=7)
        d = run(tmp_path, {"console.log": console})
        waited = {e.rank for e in d.events if e.role.value == "symptom"}
        assert waited == {1, 7}, (redrawn, d.events)


def test_a_lambdas_source_line_that_lost_its_indent_is_no_exception_line(tmp_path: Path) -> None:
    """`lambda: hydra.run(` under a frame whose `<lambda>` Markdown dropped reads as `Type: message` by shape
    only: a keyword names no class, so the traceback, cut after the next frame, stays cut."""
    cut = (
        "Traceback (most recent call last):\n"
        'File "/hydra/_internal/utils.py", line 458, in\n'
        "lambda: hydra.run(\n"
        'File "/hydra/core/utils.py", line 260, in return_value\n'
        "raise self._return_value\n"
    )
    d = run(tmp_path, {"rank_1.log": steps(1, 3) + cut, "rank_0.log": steps(0, 3)})
    tracebacks = [e for e in d.events if e.rule == "python.traceback"]
    assert tracebacks and all("exc_type" not in e.facts for e in tracebacks)


def test_the_debug_wrappers_collective_mismatch_ends_the_rank_that_raised_it(tmp_path: Path) -> None:
    """TORCH_DISTRIBUTED_DEBUG=DETAIL raises it on the rank that compared fingerprints: a failure, not context."""
    mismatch = (
        '[rank1]: Traceback (most recent call last):\n[rank1]:   File "train.py", line 9, in <module>\n'
        "[rank1]:     dist.all_reduce(t)\n"
        "[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=12, OpType=BARRIER), but Rank 0 is running collective: "
        "CollectiveFingerPrint(SequenceNumber=12, OpType=ALLREDUCE).\n"
    )
    d = run(tmp_path, {"console.log": "[rank0]: step 1\n[rank1]: step 1\n" + mismatch})
    assert first(d) == (1, Cause.PYTHON_EXCEPTION)


def test_a_failure_table_entry_that_lost_its_indent_still_names_its_rank(tmp_path: Path) -> None:
    table = (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
        "============================================================\n"
        "train.py FAILED\n"
        "------------------------------------------------------------\n"
        "Failures:\n"
        "<NO_OTHER_FAILURES>\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "time : 2026-11-29_07:00:04\n"
        "host : node01\n"
        "rank : 5 (local_rank: 5)\n"
        "exitcode : -9 (pid: 4242)\n"
        "error_file: <N/A>\n"
        "traceback : Signal 9 (SIGKILL) received by PID 4242\n"
        "============================================================\n"
    )
    d = run(tmp_path, {"console.log": table})
    assert first(d) == (5, Cause.KILLED)


def test_a_cause_read_under_a_cut_report_head_asks_for_the_lines_above(tmp_path: Path) -> None:
    frames = _c10_cuda_report("", None).splitlines(keepends=True)[2:]
    d = run(tmp_path, {"console.log": "".join(frames)})
    assert any(s.endswith("console.log:1 (the head of that report)") for s in d.verdict.fetch_next), d.verdict


def test_tunes_trials_did_not_complete_is_the_run_ending_not_an_exception_beside_the_oom_kill(tmp_path: Path) -> None:
    """The driver's TuneError sums up the trials' failures; the cgroup OOM kill is the one cause the lines show."""
    console = (
        "slurmstepd: error: Detected 8 oom-kill event(s) in step 59137890.batch cgroup. Some of your processes may "
        "have been killed by the cgroup out-of-memory handler.\n"
        "Traceback (most recent call last):\n"
        '  File "tune_run.py", line 88, in <module>\n'
        '    raise TuneError("Trials did not complete", errored_trials)\n'
        "ray.tune.error.TuneError: ('Trials did not complete', [seed:5591])\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (None, Cause.HOST_OOM)
    assert Cause.PYTHON_EXCEPTION not in {u.cause for u in d.verdict.unattributed}


def test_hydras_hint_under_an_exception_that_is_a_symptom_adds_no_cause(tmp_path: Path) -> None:
    """Hydra reports the driver's ActorDiedError (another process died): its hint is no exception of its own."""
    console = (
        "Traceback (most recent call last):\n"
        '  File "main_ppo.py", line 41, in main\n'
        "    ray.get(runner.run.remote(config))\n"
        "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.\n"
        "\n" + _HYDRA_HINT
    )
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.first_death is None
    assert not d.verdict.unattributed


_SGLANG_TAIL = (
    "Traceback (most recent call last):\n"
    '  File "/sglang/srt/model_executor/model_runner.py", line 484, in load_model\n'
    "raise ValueError(\n"  # the paste lost this source line's indent
    "ValueError: TP rank 1 could finish the model loading, but there are other ranks that didn't finish loading. "
    "It is likely due to unexpected failures (e.g. OOM) or a slow node.\n"
)


def test_a_source_line_that_lost_its_indent_does_not_end_the_traceback(tmp_path: Path) -> None:
    """The exception line under it is read: here SGLang's barrier timeout, a symptom of another rank."""
    d = run(tmp_path, {"rank_1.log": steps(1, 3) + _SGLANG_TAIL, "rank_0.log": steps(0, 3)})
    assert d.verdict.first_death is None or d.verdict.first_death.rank != 1
    waited = [e for e in d.events if e.rank == 1 and e.role.value == "symptom"]
    assert waited and waited[0].cause is Cause.COLLECTIVE_TIMEOUT


def test_a_line_after_a_cut_traceback_is_not_taken_for_its_source_unless_the_traceback_goes_on(tmp_path: Path) -> None:
    """A traceback cut after a frame, then the program's next record: the traceback stays cut, and a later
    exception of the same channel is not pulled into it."""
    cut = 'Traceback (most recent call last):\n  File "train.py", line 9, in <module>\n'
    later = "step 4 done\nstep 5 done\nValueError: bad sample 12\n"
    d = run(tmp_path, {"rank_1.log": steps(1, 3) + cut + later, "rank_0.log": steps(0, 3)})
    tracebacks = [e for e in d.events if e.rule == "python.traceback"]
    assert tracebacks and "exc_type" not in tracebacks[0].facts


_PY313_TOP = [
    "    model_engine, ds_optimizer, _, ds_scheduler = deepspeed.initialize(",
    "                                                  ~~~~~~~~~~~~~~~~~~~~^",
    "        model=model,",
    "        ^^^^^^^^^^^^",
    "    ...<3 lines>...",
    "        config=ds_config",
    "        ^^^^^^^^^^^^^^^^",
    "    )",
    "    ^",
    '  File "/env/lib/python3.13/site-packages/deepspeed/__init__.py", line 193, in initialize',
    "    engine = DeepSpeedEngine(args=args, model=model)",
    "RuntimeError: NCCL error: remote process exited or there was a network error",
]


def test_an_excerpt_that_opens_on_a_python_313_statement_of_several_lines_reads_the_traceback(tmp_path: Path) -> None:
    """Python 3.13 shows a multi-line statement whole above its frame; the frame under it opens the excerpt."""
    d = run(tmp_path, {"rank_0.log": "".join(f"[rank0]:{line}\n" for line in _PY313_TOP)})
    tracebacks = [e for e in d.events if "exc_type" in e.facts]
    assert tracebacks and tracebacks[0].facts["exc_type"] == "RuntimeError"


def test_c10s_message_going_on_unprefixed_under_a_ranked_head_is_that_ranks(tmp_path: Path) -> None:
    """torchrun's `[rank3]:` heads the watchdog's line only; the c10 report under it is unprefixed and is no
    second, unranked CUDA error. Frames of another process above, cut at their head, lower the confidence."""
    report = _c10_cuda_report("", "an illegal memory access was encountered").splitlines(keepends=True)
    other = "frame #5: <unknown function> + 0x129c6c (0x798ee1329c6c in /lib/x86_64-linux-gnu/libc.so.6)\n\n"
    d = run(tmp_path, {"console.log": other + "[rank3]:" + "".join(report)})
    assert first(d) == (3, Cause.CUDA_ERROR)
    assert not d.verdict.unattributed
    assert any("another process's error report" in c for c in d.verdict.caps), d.verdict.caps
    alone = run(tmp_path / "alone", {"console.log": "[rank3]:" + "".join(report)})
    assert not alone.verdict.unattributed and not any("another process" in c for c in alone.verdict.caps)


def test_a_google_failure_signal_handler_line_with_a_help_link_is_a_segfault(tmp_path: Path) -> None:
    console = (
        "I1121 10:00:00.000000 11743 main.cc:10] step 5\n"
        "*** SIGSEGV (@(nil)), see go/stacktraces#s15 received by PID 11743 (TID 12350) on cpu 17; stack trace: ***\n"
        "PC: @     0x7facba4a8de2  (unknown)  (unknown)\n"
    )
    d = run(tmp_path, {"rank3.log": console})
    assert first(d) == (3, Cause.SEGFAULT)


def test_an_xla_device_out_of_memory_under_a_traceback_is_a_device_oom(tmp_path: Path) -> None:
    console = (
        "Traceback (most recent call last):\n"
        '  File "train.py", line 40, in <module>\n'
        "    state = train_step(state, batch)\n"
        "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate "
        "33762398024 bytes.\n"
    )
    d = run(tmp_path, {"rank1.log": console, "rank0.log": "step 1\n"})
    assert first(d) == (1, Cause.CUDA_OOM)


def test_mpich_abort_printed_twice_by_one_rank_is_no_death_tied_to_no_rank(tmp_path: Path) -> None:
    # MPICH's simple PMI prints the abort message again under `[cli_R]: aborting job:`: the second copy
    # names the same rank and is no other, unranked death that may have come first
    console = "".join(
        f"application called MPI_Abort(MPI_COMM_WORLD, 1) - process {r}[cli_{r}]: aborting job:\n"
        f"application called MPI_Abort(MPI_COMM_WORLD, 1) - process {r}\n"
        for r in (2, 0, 1, 3)
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (2, Cause.ABORT)
    assert d.verdict.unattributed == ()
    evidence = d.verdict.first_death.evidence if d.verdict.first_death else ()
    assert [e.where.line for e in evidence] == [1]  # the line is its cause and its exit: shown once


def test_paddles_launcher_names_the_failed_worker_by_its_local_rank(tmp_path: Path) -> None:
    console = (
        "LAUNCH INFO 2022-11-21 02:35:54,384 Pod failed\n"
        "LAUNCH ERROR 2022-11-21 02:35:54,385 Container failed !!!\n"
        "Container rank 2 status failed cmd ['/usr/bin/python3', '-u', 'train.py'] code -9 log log/workerlog.2\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (2, Cause.KILLED)


def test_torch_npus_hccl_error_is_the_ranks_own_unless_it_waited_for_a_peer(tmp_path: Path) -> None:
    def log(code: int) -> str:
        return (
            "[rank2]: Traceback (most recent call last):\n"
            '[rank2]:   File "train.py", line 12, in <module>\n'
            "[rank2]:     dist.all_reduce(t)\n"
            "[rank2]: RuntimeError: create_config:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:149 HCCL function "
            f"error: HcclAllReduce(sendBuf, recvBuf, count), error code is {code}\n"
        )

    assert first(run(tmp_path / "own", {"rank2.log": log(7)})) == (2, Cause.NCCL_ERROR)
    waited = run(tmp_path / "peer", {"rank2.log": log(9)})
    assert waited.verdict.first_death is None or waited.verdict.first_death.cause is not Cause.NCCL_ERROR


def test_msruns_failed_worker_is_a_failed_job_with_no_rank_to_name(tmp_path: Path) -> None:
    head = "[WARNING] ME(162078:2814735,MainProcess):2025-03-10-09:40:12.4{n}.000 [msrun/_api.py:31{n}] "
    console = (
        head.format(n=6) + "Worker process 162150 exit with exception.\n"
        + head.format(n=8) + "There's worker exits with exception, kill all other workers.\n"
    )  # fmt: skip
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    # msrun's own output is what was given: what is missing is the failed worker's, known by its pid
    assert any("pid 162150" in step for step in d.verdict.fetch_next)
    assert not any("launcher's own output" in step for step in d.verdict.fetch_next)


def test_kernel_xid_lines_pasted_in_a_console_are_read_one_by_one(tmp_path: Path) -> None:
    """Xid 45 lines of one width differ in hex digits only: records of one format, not a terminal's wrap;
    the driver names the NVLink Xid (149) the cleanup follows, so the GPU faulted."""
    console = "".join(
        f"kernel: NVRM: Xid (PCI:0000:{bus}:00): 45, pid=181899{n}, name=python3, Ch 0000000{ch} caused by previous "
        f"Xid 14{9 if bus == 'dc' else 5}\n"
        for bus, n, ch in [("dc", 0, 1), ("ed", 2, "c"), ("ba", 9, 2), ("97", 7, 3), ("dc", 0, 2), ("ba", 9, 3)]
    )
    d = run(tmp_path, {"console.log": console})
    assert d.inputs[0].lines == 6
    assert d.verdict.first_death is not None and d.verdict.first_death.cause is Cause.GPU_HARDWARE
    assert any("a GPU hardware fault" in step for step in d.verdict.reasoning)


def test_ray_train_v1s_run_failed_error_is_a_failed_run_not_no_failure(tmp_path: Path) -> None:
    console = (
        "File ~/venv/lib/python3.10/site-packages/ray/train/base_trainer.py:638, in BaseTrainer.fit(self)\n"
        "--> 638     raise TrainingFailedError(\n"
        "TrainingFailedError: The Ray Train run failed. Please inspect the previous error messages for a cause. "
        "After fixing the issue (assuming that the error is not caused by your own application logic, but rather "
        "an error such as OOM), you can restart the run from scratch or continue this run.\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED


def test_a_worker_the_raylet_found_dead_at_start_is_a_failed_job(tmp_path: Path) -> None:
    console = "".join(
        f"(raylet) [2025-10-31 17:08:05,{ms} E 24507 24507] (raylet) worker_pool.cc:586: Some workers of the worker "
        f"process({pid}) have not registered within the timeout. The process is {state}\n"
        for ms, pid, state in [
            (490, 26154, "dead, probably it crashed during start."),
            (550, 26158, "dead, probably it crashed during start."),
        ]
    )
    assert run(tmp_path / "dead", {"console.log": console}).verdict.outcome is Outcome.UNDETERMINED
    dead, alive = "dead, probably it crashed during start.", "still alive, probably it's hanging during start."
    slow = console.replace(dead, alive)
    assert run(tmp_path / "slow", {"console.log": slow}).verdict.outcome is Outcome.NO_FAILURE


def test_a_tune_status_with_errored_trials_is_a_failed_run(tmp_path: Path) -> None:
    status = "== Status ==\nNumber of trials: 29 (8 ERROR, 1 RUNNING, 20 TERMINATED)\n"
    assert run(tmp_path / "err", {"console.log": status}).verdict.outcome is Outcome.UNDETERMINED
    fine = status.replace("8 ERROR, ", "")
    assert run(tmp_path / "ok", {"console.log": fine}).verdict.outcome is not Outcome.UNDETERMINED


def test_paddles_fatal_cuda_sync_is_a_cuda_error_and_glogs_abort_after_it_no_second_cause(tmp_path: Path) -> None:
    console = (
        "F0305 11:02:17.482913  3817 device_context.cc:318] cudaStreamSynchronize an illegal memory access was "
        "encountered errno: 77\n"
        "*** Check failure stack trace: ***\n"
        "    @     0x7f351fda3f5d  google::LogMessage::Fail()\n"
    )
    d = run(tmp_path, {"workerlog.2": console})
    assert first(d) == (2, Cause.CUDA_ERROR)
    assert not any(e.cause is Cause.ABORT for e in d.events)


def test_tgis_launcher_names_the_shard_that_a_signal_ended(tmp_path: Path) -> None:
    console = (
        "2024-08-11T09:36:20.110000Z  INFO shard-manager: text_generation_launcher: Starting shard rank=0\n"
        "2024-08-11T09:36:20.110400Z  INFO shard-manager: text_generation_launcher: Starting shard rank=1\n"
        "2024-08-11T09:36:31.932515Z ERROR shard-manager: text_generation_launcher: Shard complete standard error "
        "output:\n"
        " rank=1\n"
        "2024-08-11T09:36:31.932556Z ERROR shard-manager: text_generation_launcher: Shard process was signaled to "
        "shutdown with signal 9 rank=1\n"
        "2024-08-11T09:36:32.029976Z ERROR text_generation_launcher: Shard 1 failed to start\n"
        "2024-08-11T09:36:32.030017Z  INFO text_generation_launcher: Shutting down shards\n"
        "2024-08-11T09:36:32.530000Z  INFO shard-manager: text_generation_launcher: Shard terminated rank=0\n"
    )
    d = run(tmp_path, {"tgi.log": console})
    assert d.verdict.outcome is Outcome.FIRST_DEATH
    assert first(d) == (1, Cause.KILLED)


def test_a_test_harness_process_exiting_after_its_caught_exception_is_that_ranks_death(tmp_path: Path) -> None:
    head = "[rank{r}]:[2023-08-11 22:19:06,{ms}] torch.testing._internal.common_distributed: [ERROR] "
    console = (
        head.format(r=2, ms=571)
        + "Caught exception: \n"
        + head.format(r=2, ms=571)
        + "Traceback (most recent call last):\n"
        + head.format(r=2, ms=571)
        + '  File "test_distributed_spawn.py", line 57, in run_test\n'
        + head.format(r=2, ms=571)
        + "AssertionError: 3 != 4\n"
        + head.format(r=2, ms=573)
        + " exiting process 2 with exit code: 10\n"
        + head.format(r=1, ms=901)
        + " exiting process 1 with exit code: 10\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (2, Cause.PYTHON_EXCEPTION)


def test_nccls_argument_check_is_the_ranks_nccl_error(tmp_path: Path) -> None:
    console = (
        "[1,1]<stdout>:node2:126624:126758 [1] misc/argcheck.cc:39 NCCL WARN Broadcast : invalid root 0 (root "
        "should be in the 0..-1 range)\n"
        "[1,1]<stdout>:node2:126624:126758 [1] NCCL INFO enqueue.cc:1450 -> 4\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (1, Cause.NCCL_ERROR)


def test_horovods_failed_cuda_call_under_cxx_terminate_is_a_cuda_error(tmp_path: Path) -> None:
    console = (
        "[1,3]<stderr>:terminate called after throwing an instance of 'std::logic_error'\n"
        "[1,3]<stderr>:  what():  cudaEventQuery failed: an illegal memory access was encountered\n"
        "[1,3]<stderr>:[c102:70259] *** Process received signal ***\n"
        "[1,3]<stderr>:[c102:70259] Signal: Aborted (6)\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (3, Cause.CUDA_ERROR)


@pytest.mark.parametrize(
    ("lines", "cause"),
    [
        (
            ["Segmentation fault: 11", "", "Stack trace:", "  [bt] (0) /opt/lib/libmxnet.so(+0x3a14c70) [0x7f13]"],
            Cause.SEGFAULT,
        ),
        (
            [
                "*** Process received signal ***",
                "Signal: Segmentation fault (11)",
                "Signal code: Invalid permissions (2)",
            ],
            Cause.SEGFAULT,
        ),
        (
            [
                "*** An error occurred in MPI_Init_thread",
                "*** on a NULL communicator",
                "[host1:71142] Local abort before MPI_INIT completed completed successfully, but am not able to "
                "aggregate error messages, and not able to guarantee that all other processes were killed!",
            ],
            Cause.ABORT,
        ),
    ],
)
def test_a_crash_whose_process_is_unnamed_is_its_cause_with_no_rank(
    tmp_path: Path, lines: list[str], cause: Cause
) -> None:
    d = run(tmp_path, {"console.log": "\n".join(lines) + "\n"})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert first(d) == (None, cause)


@pytest.mark.parametrize(
    ("check", "cause"),
    [
        ("Check failed: error == cudaSuccess (2 vs. 0)  out of memory", Cause.CUDA_OOM),
        ("Check failed: error == cudaSuccess (4 vs. 0)  unspecified launch failure", Cause.CUDA_ERROR),
    ],
)
def test_caffes_cuda_check_names_the_cuda_failure_and_the_aborts_after_it_add_none(
    tmp_path: Path, check: str, cause: Cause
) -> None:
    console = (
        f"F0903 14:31:26.106397 92421 syncedmem.cpp:56] {check}\n"
        "*** Check failure stack trace: ***\n"
        "    @     0x7fd08aa5c5cd  google::LogMessage::Fail()\n"
        "Aborted (core dumped)\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (None, cause)
    assert not any(e.cause is Cause.ABORT for e in d.events)


def test_horovods_lost_http_store_is_a_symptom_on_every_worker(tmp_path: Path) -> None:
    line = (
        "Mon Jun  7 11:51:57 2021[{r}]<stderr>:[2021-06-07 11:51:57.95{r}365: E /tmp/horovod/common/gloo/"
        "http_store.cc:96] HTTP GET request failed too many times, aborting\n"
    )
    d = run(tmp_path, {"console.log": line.format(r=2) + line.format(r=1)})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert d.verdict.first_death is None
    assert {e.cause for e in d.events if e.rank is not None} == {Cause.PEER_LOST}


def test_open_mpis_reporting_process_ties_its_pid_to_its_rank(tmp_path: Path) -> None:
    console = (
        "[node6116:69399] *** An error occurred in MPI_Allgather\n"
        "[node6116:69399] *** reported by process [2361982977,159]\n"
        "[node6116:69399] *** on communicator MPI_COMM_WORLD\n"
        "[node6116:69399] Signal: Segmentation fault (11)\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (159, Cause.SEGFAULT)


def test_ucxs_retry_exceeded_is_a_lost_peer_not_a_cause(tmp_path: Path) -> None:
    line = "[master:{p}:0:{p}] ib_mlx5_log.c:139  Transport retry count exceeded on mlx5_0:1/IB (synd 0x15 vend 0x81)\n"
    d = run(tmp_path, {"console.log": line.format(p=19546) + line.format(p=19545)})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert d.verdict.first_death is None
    assert {e.cause for e in d.events} == {Cause.PEER_LOST}


def test_two_ranks_on_one_gpu_is_an_nccl_error_of_neither_first(tmp_path: Path) -> None:
    line = (
        "[{r},{r}]<stderr>:ubun:237534{r}:2375387 [0] init.cc:573 NCCL WARN Duplicate GPU detected : rank {r} and "
        "rank {o} both on CUDA device 1000\n"
    )
    d = run(tmp_path, {"console.log": line.format(r=1, o=0) + line.format(r=0, o=1)})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert {e.cause for e in d.events if e.rank is not None} == {Cause.NCCL_ERROR}


def test_xgboost_on_spark_failing_its_training_is_a_failed_job_with_no_rank(tmp_path: Path) -> None:
    console = (
        "18/10/24 17:09:54 INFO RabitTracker: Tracker Process ends with exit code 1\n"
        "18/10/24 17:09:54 INFO XGBoostSpark: Rabit returns with exit code 1\n"
        "18/10/24 17:09:54 ERROR ApplicationMaster: User class threw exception: ml.dmlc.xgboost4j.java.XGBoostError: "
        "XGBoostModel training failed\n"
    )
    d = run(tmp_path, {"driver.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert d.verdict.first_death is None


def test_nccl_tests_failed_nccl_call_is_an_nccl_error_of_its_host(tmp_path: Path) -> None:
    console = (
        "#  Rank  2 Group  0 Pid 3164639 on    fengyun device  0 [0x01] NVIDIA RTX A6000\n"
        "fengyun: Test NCCL failure common.cu:959 'internal error - please report this issue to the NCCL "
        "developers / '\n"
        " .. fengyun pid 3164639: Test failure common.cu:844\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.first_death is not None
    assert (d.verdict.first_death.cause, d.verdict.first_death.host) == (Cause.NCCL_ERROR, "fengyun")


def test_an_excerpt_opening_on_an_exception_whose_message_begins_on_the_next_line(tmp_path: Path) -> None:
    """PyTorch's pipelining raises `RuntimeError(f"\\n  Failed to run stage backward: ...")`: Python prints
    `RuntimeError: ` alone, the message indented under it."""
    console = (
        "[rank1]: RuntimeError: \n"
        "[rank1]:         Failed to run stage backward:\n"
        "[rank1]:         Stage output: ('Tensor(torch.Size([10]), grad=True)',)\n"
    )
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.PYTHON_EXCEPTION)


def test_an_excerpt_opening_inside_load_state_dicts_error_is_that_ranks_exception_read_once(tmp_path: Path) -> None:
    mismatch = (
        "[rank1]:        size mismatch for model.layers.{i}.q_proj.weight: copying a param with shape "
        "torch.Size([1024, 1024]) from checkpoint, the shape in current model is torch.Size([4096, 4096]).\n"
    )
    d = run(tmp_path, {"console.log": "".join(mismatch.format(i=i) for i in range(4))})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.PYTHON_EXCEPTION)
    assert [e.where.line for e in d.events if e.cause is Cause.PYTHON_EXCEPTION] == [1]


def test_pytests_summary_of_a_multi_process_test_names_the_process_that_raised(tmp_path: Path) -> None:
    console = (
        "=========================== short test summary info ============================\n"
        "FAILED [2.8097s] distributed/fsdp/test_shard_utils.py::TestShardUtils::test_chunk - RuntimeError: "
        "Process 2 exited with error code 10 and exception:\n"
    )
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (2, Cause.PYTHON_EXCEPTION)


def test_a_tune_trials_error_record_is_a_failed_run(tmp_path: Path) -> None:
    record = (
        "Failure # 1 (occurred at 2022-10-06_22-19-24)\n"
        "ray::TrainTrainable.train() (pid=23308, ip=10.210.128.193, repr=TensorflowTrainer)\n"
    )
    assert run(tmp_path / "err", {"error.txt": record}).verdict.outcome is Outcome.UNDETERMINED
    done = "Trial train_fn_00000 completed after 10 iterations at 2023-08-21 10:31:05. Total running time: 2min\n"
    assert run(tmp_path / "ok", {"console.log": done}).verdict.outcome is Outcome.NO_FAILURE


def test_torch_1_9s_banner_of_a_worker_failed_without_an_error_file_is_a_failed_job(tmp_path: Path) -> None:
    stars = "*" * 70 + "\n"
    banner = stars + "CHILD PROCESS FAILED WITH NO ERROR_FILE".center(70) + "\n" + stars
    d = run(tmp_path, {"console.log": banner})
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death is None


def test_open_mpis_abort_banner_with_error_code_zero_is_that_ranks_abort(tmp_path: Path) -> None:
    """An application that ends its run with MPI_Abort(comm, 0) still stopped every other rank: no clean exit."""
    banner = (
        "--------------------------------------------------------------------------\n"
        "MPI_ABORT was invoked on rank 3 in communicator MPI_COMM_WORLD\n"
        "with errorcode {code}.\n"
        "\n"
        "NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.\n"
        "You may or may not see output from other processes, depending on\n"
        "exactly when Open MPI kills them.\n"
        "--------------------------------------------------------------------------\n"
    )
    for code in (0, 1):
        d = run(tmp_path / str(code), {"console.log": banner.format(code=code)})
        first = d.verdict.first_death
        assert first is not None and (first.rank, first.cause) == (3, Cause.ABORT), code
        assert d.verdict.unattributed == ()


def test_an_excerpt_opening_on_open_mpis_abort_note_is_an_abort_of_an_unnamed_rank(tmp_path: Path) -> None:
    note = (
        "NOTE: invoking MPI_ABORT causes Open MPI to kill all MPI processes.\n"
        "You may or may not see output from other processes, depending on\n"
        "exactly when Open MPI kills them.\n"
    )
    d = run(tmp_path, {"console.log": note})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert {e.cause for e in d.events if e.rank is None} == {Cause.ABORT}


def test_a_numbered_nccl_error_from_a_check_macro_is_an_nccl_error(tmp_path: Path) -> None:
    console = "Unhandled exception: St13runtime_error. what(): NCCL Error 5: invalid usage\n"
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert [e.cause for e in d.events] == [Cause.NCCL_ERROR]


def test_flowers_crashed_simulation_is_a_failed_run(tmp_path: Path) -> None:
    console = (
        "ERROR :     Your simulation crashed :(. This could be because of several reasons. The most common are: \n"
        "         > Your system couldn't fit a single VirtualClient: try lowering `client_resources`.\n"
    )
    assert run(tmp_path, {"console.log": console}).verdict.outcome is Outcome.UNDETERMINED


def test_sglangs_report_of_a_scheduler_dead_at_start_is_that_schedulers_exit_not_another_exception(
    tmp_path: Path,
) -> None:
    console = (
        '  File "/sgl-workspace/sglang/python/sglang/srt/entrypoints/engine.py", line 1277, in '
        "_wait_for_scheduler_ready\n"
        "    raise _scheduler_died_error(i, scheduler_procs[i])\n"
        "RuntimeError: Rank 1 scheduler died during initialization (exit code: -9). If exit code is -9 (SIGKILL), a "
        "common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.\n"
    )
    d = run(tmp_path, {"console.log": console})
    first = d.verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.KILLED)
    assert not any(e.cause is Cause.PYTHON_EXCEPTION for e in d.events)


def test_dmlcs_fatal_logged_before_it_throws_is_an_abort(tmp_path: Path) -> None:
    """ps-lite's (BytePS's) dmlc logging: the fatal message under two headers, then its stack."""
    console = (
        "[07:48:18] src/postoffice.cc:25: Creating Van: zmq\n"
        "[07:48:18] 3rdparty/ps-lite/include/dmlc/logging.h:276: [07:48:18] src/./zmq_van.h:121: Reached max retry "
        "for bind: Address already in use. errno = 98\n"
        "\n"
        "Stack trace returned 10 entries:\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert [e.cause for e in d.events if e.cause is not Cause.CONTEXT] == [Cause.ABORT]


def test_a_lost_grpc_peer_is_a_symptom_of_a_failed_run(tmp_path: Path) -> None:
    for i, line in enumerate(
        (
            "ERROR:tensorflow:/job:worker/task:4 encountered the following error when processing closure: "
            "UnavailableError():Graph execution error:",
            "E external/xla/xla/pjrt/distributed/client.cc:96] Coordination service agent in error status: "
            "DEADLINE_EXCEEDED: Deadline Exceeded",
            "\tstatus = StatusCode.UNAVAILABLE",
        )
    ):
        d = run(tmp_path / str(i), {"console.log": line + "\n"})
        assert d.verdict.outcome is Outcome.UNDETERMINED, line
        assert [e.cause for e in d.events] == [Cause.PEER_LOST]


def test_mpiruns_own_time_limit_ends_the_job_as_a_schedulers_does(tmp_path: Path) -> None:
    banner = (
        "--------------------------------------------------------------------------\n"
        "The user-provided time limit for job execution has been reached:\n"
        "\n"
        "  Timeout: 180 seconds\n"
        "\n"
        "The job will now be aborted.  Please check your code and/or\n"
        "adjust/remove the job execution time limit (as specified by --timeout\n"
        "command line option or MPIEXEC_TIMEOUT environment variable).\n"
    )
    first = run(tmp_path, {"console.log": banner}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (None, Cause.TIME_LIMIT)


def test_a_dask_worker_its_nanny_terminated_for_memory_is_a_host_oom_of_no_rank(tmp_path: Path) -> None:
    console = (
        "distributed.nanny.memory - WARNING - Worker tcp://127.0.0.1:49477 (pid=59029) exceeded 95% memory budget. "
        "Restarting...\n"
        "distributed.nanny - WARNING - Restarting worker\n"
        "KilledWorker: Attempted to run task ('read-0c9d', 3) on 4 different workers, but all those workers died "
        "while running it.\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert [e.cause for e in d.events if e.cause is not Cause.CONTEXT] == [Cause.HOST_OOM]


def test_a_dask_worker_the_nanny_saw_killed_is_a_death_of_no_rank(tmp_path: Path) -> None:
    console = (
        "distributed.nanny - INFO - Worker process 9018 was killed by signal 9\n"
        "distributed.nanny - WARNING - Restarting worker\n"
        "distributed.worker - INFO -       Start worker at:   tcp://192.168.0.26:42173\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert (d.verdict.outcome, first(d)) == (Outcome.UNDETERMINED, (None, Cause.KILLED))


def test_the_nannys_older_memory_kill_with_two_spaces_is_a_host_oom(tmp_path: Path) -> None:
    console = (
        "distributed.nanny - WARNING - Worker exceeded 95% memory budget.  Restarting\n"
        "distributed.nanny - WARNING - Worker process 22204 was killed by unknown signal\n"
        "distributed.nanny - WARNING - Restarting worker\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert (d.verdict.outcome, first(d)) == (Outcome.UNDETERMINED, (None, Cause.HOST_OOM))


def test_gloos_libuv_assert_is_an_abort_of_the_process_that_printed_it(tmp_path: Path) -> None:
    console = (
        "(pid=8582) [/tmp/pip-install/horovod/third_party/gloo/gloo/transport/uv/libuv.h:602] uv_read_start: "
        "connection already in progress\n"
        "2021-02-25 08:46:29,995\tWARNING worker.py:1107 -- A worker died or was killed while executing task ff19.\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (None, Cause.ABORT)


def test_open_mpis_crash_handler_with_the_pid_cut_from_its_prefix_is_a_segfault(tmp_path: Path) -> None:
    console = (
        "[primary_node] *** Process received signal ***\n"
        "[primary_node] Signal: Segmentation fault (11)\n"
        "[primary_node] Signal code: Address not mapped (1)\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (None, Cause.SEGFAULT)


def test_tensorflows_collective_abort_on_an_unreachable_peer_is_a_symptom_of_a_failed_run(tmp_path: Path) -> None:
    console = (
        "2019-05-20 12:05:41.304485: W tensorflow/core/common_runtime/base_collective_executor.cc:203] "
        "BaseCollectiveExecutor::StartAbort Unavailable: OS Error\n"
        "2019-05-20 12:05:41.308031: E tensorflow/core/common_runtime/ring_reducer.cc:369] Aborting RingReduce with "
        "Unavailable: OS Error\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert {e.cause for e in d.events} == {Cause.PEER_LOST}


def test_a_datasets_end_in_tensorflows_collective_executor_is_no_failure(tmp_path: Path) -> None:
    console = (
        "2021-03-02 10:11:12.000001: W tensorflow/core/common_runtime/base_collective_executor.cc:217] "
        "BaseCollectiveExecutor::StartAbort Out of range: End of sequence\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.NO_FAILURE


def test_xgboost_sparks_aborted_job_is_a_failed_run_of_no_named_worker(tmp_path: Path) -> None:
    console = (
        "ERROR XGBoostSpark: the job was aborted due to \n"
        "ml.dmlc.xgboost4j.java.XGBoostError: [12:58:58] /workspace/src/collective/result.cc:78: \n"
        "- [tracker.cc:286|12:58:58]: Failed to accept connection.\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert (d.verdict.outcome, first(d)) == (Outcome.UNDETERMINED, (None, None))
    assert "xgboost.spark-training-failed" in {e.rule for e in d.events}


def test_petscs_signal_handler_names_the_rank_that_crashed(tmp_path: Path) -> None:
    console = (
        "Fri Dec 16 12:30:35 2016 >> Removed 0 islands (0 cells).\n"
        "[0]PETSC ERROR: ------------------------------------------------------------------------\n"
        "[0]PETSC ERROR: Caught signal number 11 SEGV: Segmentation Violation, probably memory access out of range\n"
        "[0]PETSC ERROR: Try option -start_in_debugger or -on_error_attach_debugger\n"
        "[1]PETSC ERROR: Caught signal number 15 Terminate: Some process (or the batch system) has told this process "
        "to end\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (0, Cause.SEGFAULT)
    assert Cause.LAUNCHER_TEARDOWN in {e.cause for e in d.events if e.rank == 1}


def test_mpichs_pmi_client_that_cannot_reach_its_process_manager_fails_the_launch(tmp_path: Path) -> None:
    console = (
        "distributed.scheduler - INFO - Clear task state\n"
        "[cli_1]: write_line error; fd=6 buf=:cmd=init pmi_version=1 pmi_subversion=1\n"
        ":\n"
        "system msg for write_line failure : Invalid argument\n"
        "[cli_1]: Unable to write to PMI_fd\n"
        "[cli_2]: Error reading initack on 11\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert (d.verdict.outcome, first(d)) == (Outcome.UNDETERMINED, (None, None))
    assert "mpi.mpich-pmi-client-failed" in {e.rule for e in d.events}


def test_follys_signal_handler_ties_a_crash_to_its_pid(tmp_path: Path) -> None:
    console = (
        "*** Aborted at 1752197205 (Unix time, try 'date -d @1752197205') ***\n"
        "*** Signal 11 (SIGSEGV) (0x0) received by PID 4242 (pthread TID 0x7f69aaf7e340) (linux TID 4242) (code: "
        "address not mapped to object), stack trace: ***\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (None, Cause.SEGFAULT)
    assert d.verdict.first_death is not None and d.verdict.first_death.pid == 4242


def test_follys_report_of_a_sigterm_is_a_stop_from_outside(tmp_path: Path) -> None:
    console = (
        "*** Signal 15 (SIGTERM) (0x8bb63000c9049) received by PID 823809 (pthread TID 0x7f69aaf7e340) (linux TID "
        "823809) (maybe from PID 823369, UID 572259) (code: 0), stack trace: ***\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert (d.verdict.outcome, first(d)) == (Outcome.UNDETERMINED, (None, None))
    assert {e.rule for e in d.events} == {"native.failure-signal-term"}


def test_an_argparse_error_of_no_rank_is_the_cause_of_the_one_rank_that_exited_2(tmp_path: Path) -> None:
    console = (
        "usage: train.py [-h] [--local_rank LOCAL_RANK]\n"
        "train.py: error: unrecognized arguments: --local-rank=0\n"
        "[2024-03-16 03:30:01,302] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 2) "
        "local_rank: 0 (pid: 380) of binary: /usr/bin/python\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (0, Cause.PYTHON_EXCEPTION)
    assert d.verdict.confidence is not Confidence.HIGH  # the cause is joined to the exit, not read on rank 0's line


def test_a_native_cuda_checks_exit_is_a_cuda_error_and_its_oom_a_cuda_oom(tmp_path: Path) -> None:
    check = "CUDA error (/sgl-kernel/build/_deps/repo-flash-attention-src/hopper/flash_fwd_launch_template.h:166): {}\n"
    d = run(tmp_path, {"console.log": check.format("no kernel image is available for execution on the device")})
    assert first(d) == (None, Cause.CUDA_ERROR)
    d = run(tmp_path, {"console.log": check.format("out of memory")})
    assert first(d) == (None, Cause.CUDA_OOM)


def test_glibcs_heap_check_is_an_abort_of_the_rank_that_printed_it(tmp_path: Path) -> None:
    console = (
        "[1,0]<stdout>:Train Epoch: 1 [0/60000]\tLoss: 2.3\n"
        "[1,2]<stderr>:free(): invalid pointer\n"
        "[1,2]<stderr>:[node01:04242] *** Process received signal ***\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (2, Cause.ABORT)
    older = "*** Error in `python': munmap_chunk(): invalid pointer: 0x0000558401442530 ***\n"
    d = run(tmp_path, {"console.log": older})
    assert first(d) == (None, Cause.ABORT)


def test_a_traceback_a_forum_set_in_curly_quotes_and_without_indents_is_read_to_its_exception(tmp_path: Path) -> None:
    console = (
        "File “/opt/conda/lib/python3.6/site-packages/torch/distributed/rendezvous.py”, line 95, in "
        "_tcp_rendezvous_handler\n"
        "store = TCPStore(result.hostname, result.port, start_daemon)\n"
        "RuntimeError: Address already in use\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (None, Cause.PYTHON_EXCEPTION)
    assert d.verdict.first_death is not None and d.verdict.first_death.detail == "RuntimeError: Address already in use"


def test_a_table_entry_whose_recorded_traceback_is_cut_is_a_python_exception_of_unknown_type(tmp_path: Path) -> None:
    console = (
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2026-01-13_09:20:58\n"
        "  host      : node0\n"
        "  rank      : 0 (local_rank: 0)\n"
        "  exitcode  : 1 (pid: 1016)\n"
        "  error_file: /tmp/torchelastic_ey36uo59/attempt_0/0/error.json\n"
        "  traceback : Traceback (most recent call last):\n"
        '    File "/app/train.py", line 112, in __init__\n'
        "      dist_utils.set_determinism(\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (0, Cause.PYTHON_EXCEPTION)
    assert d.verdict.confidence is Confidence.LOW  # its type, which may be another rank's failure, is cut


def test_a_programs_nccl_check_macro_is_a_nccl_error_and_a_peers_exit_seen_there_is_not(tmp_path: Path) -> None:
    check = "Failed, NCCL error /src/plugins/ncclPlugin/allreducePlugin.cpp:183 '{}'\n"
    d = run(tmp_path, {"console.log": check.format("unknown result code")})
    assert first(d) == (None, Cause.NCCL_ERROR)
    d = run(tmp_path, {"console.log": check.format("remote process exited or there was a network error")})
    assert Cause.NCCL_ERROR not in {e.cause for e in d.events}


def test_a_traceback_header_after_a_stray_backtick_and_space_is_a_failure_of_its_rank(tmp_path: Path) -> None:
    console = (
        "[rank8]:` Traceback (most recent call last):\n"
        '[rank8]:   File "/x/swift/cli/_megatron/sft.py", line 7, in <module>\n'
        "[rank8]:     megatron_sft_main()\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED  # cut before its type: something raised, not what
    assert [(e.rule, e.rank) for e in d.events] == [("python.traceback", 8)]


def test_a_lost_tensorpipe_peer_is_a_symptom_of_a_failed_run(tmp_path: Path) -> None:
    console = (
        "[W tensorpipe_agent.cpp:312] RPC agent for worker0 encountered error when reading incoming request: EOF: "
        "end of file\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert [e.cause for e in d.events] == [Cause.PEER_LOST]


def test_lightgbms_socket_error_is_a_lost_peer(tmp_path: Path) -> None:
    console = "[LightGBM] [Info] Connected to rank 0\n[LightGBM] [Fatal] Socket recv error, code: 104\n"
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert [e.cause for e in d.events] == [Cause.PEER_LOST]


def test_mpichs_failed_internal_assertion_is_an_abort(tmp_path: Path) -> None:
    console = (
        "Assertion failed in file src/mpid/ch4/src/init_comm.c at line 72: in_use == 0\n"
        "/opt/mpich/lib/libmpi.so.12(+0x1d86514) [0x14763ac07514]\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert [e.cause for e in d.events] == [Cause.ABORT]


def test_intel_mpis_missing_fabric_is_that_ranks_network_failure(tmp_path: Path) -> None:
    console = (
        "[0] [0] MPI startup(): Multi-threaded optimized library\n"
        "[1] node1.329747PSM2 can't open hfi unit: -1 (err=23)\n"
        "[1] [1] MPI startup(): ofi fabric is not available and fallback fabric is not enabled\n"
    )
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.NCCL_ERROR)


def test_a_legion_error_then_gasnets_fatal_signal_is_that_processs_abort(tmp_path: Path) -> None:
    console = (
        "[0 - 400036f6f840]    3.522337 {5}{runtime}: [error 67] LEGION ERROR: Mapper selected a concurrent "
        "variant 2 for point task t (UID 128)\n"
        "For more information see:\n"
        "\n"
        "*** Caught a fatal signal (proc 0): SIGABRT(6)\n"
        "NOTICE: Before reporting bugs, run with GASNET_BACKTRACE=1 in the environment to generate a backtrace. \n"
    )
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (0, Cause.ABORT)


def test_gasnets_fatal_signal_alone_is_that_processs_exit_by_the_signal(tmp_path: Path) -> None:
    first = run(tmp_path, {"console.log": "*** Caught a fatal signal: SIGSEGV(11) on node 2/4\n"}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (2, Cause.SEGFAULT)


def test_gasnets_fatal_error_is_a_network_failure_of_that_process(tmp_path: Path) -> None:
    console = (
        "*** FATAL ERROR (proc 3): in gasnetc_ofi_init() at /src/ofi-conduit/gasnet_ofi.c:1365: fi_domain failed: "
        "-22(Invalid argument)\n"
    )
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (3, Cause.NCCL_ERROR)


def test_a_ray_node_marked_dead_is_a_failed_run_of_no_rank(tmp_path: Path) -> None:
    console = (
        "2024-05-08 14:22:55,484\tINFO worker.py:1740 -- Connected to Ray cluster.\n"
        "(raylet) The node with node id: 0f2197 and address: 10.0.0.51 and node name: 10.0.0.51 has been marked "
        "dead because the detector has missed too many heartbeats from it. This can happen when a (1) raylet "
        "crashes unexpectedly (OOM, etc.)\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death is None


def test_mpichs_internal_abort_names_the_process_that_aborted(tmp_path: Path) -> None:
    console = (
        "Assertion failed in file .../mpich2-1.1.1p1/src/util/wrappers/mpiu_shm_wrappers.h at line 927: seg_sz > 0\n"
        "internal ABORT - process 3\n"
    )
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (3, Cause.ABORT)


def test_cray_mpichs_fatal_error_and_mpts_terminated_rank_name_their_rank(tmp_path: Path) -> None:
    cray = (
        "Rank 526 [Wed Feb 14 12:04:40 2018] [c4-1c2s5n2] Fatal error in PMPI_Group_range_incl: Invalid argument, "
        "error stack:\n"
    )
    first = run(tmp_path / "cray", {"console.log": cray}).verdict.first_death
    assert first is not None and (first.rank, first.cause, first.host) == (526, Cause.ABORT, "c4-1c2s5n2")
    lost = cray.replace("Invalid argument", "Other MPI error")
    assert run(tmp_path / "lost", {"console.log": lost}).verdict.first_death is None
    mpt = "-1:MPT ERROR: MPI_COMM_WORLD rank 48 has terminated without calling MPI_Finalize()\n-1:\taborting job\n"
    first = run(tmp_path / "mpt", {"console.log": mpt}).verdict.first_death
    assert first is not None and first.rank == 48


def test_fluxs_first_task_exit_names_its_task_rank_and_host(tmp_path: Path) -> None:
    console = (
        "0.060s: flux-shell[0]: FATAL: task-exit: sh: task rank 1 on host ubuntu failed and exit-on-error is set\n"
        "0.060s: job.exception fSuWV8vK type=exec severity=0 sh: task rank 1 on host ubuntu failed and exit-on-error "
        "is set\n"
        "flux-job: task(s) Terminated\n"
    )
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.host) == (1, "ubuntu")


def test_tensorpipes_warning_at_a_graceful_shutdown_is_no_failure(tmp_path: Path) -> None:
    """torch 1.6-1.7 logged a remote's graceful shutdown as a pipe error, marked as expected."""
    console = (
        "[W tensorpipe_agent.cpp:404] RPC agent for worker1 encountered error when reading incoming request from "
        "worker0: EOF: end of file (this is expected to happen during shutdown)\n"
    )
    assert run(tmp_path / "quiet", {"console.log": console}).verdict.outcome is Outcome.NO_FAILURE
    sent = (
        "RPC agent for parameter_server encountered error when sending response to request #4 to trainer_1: eof "
        "(this error originated at tensorpipe/transport/shm/connection_impl.cc:259)\n"
    )
    assert run(tmp_path / "lost", {"console.log": sent}).verdict.outcome is Outcome.UNDETERMINED


def test_a_store_timeout_for_the_nccl_unique_id_names_the_root_it_waited_for(tmp_path: Path) -> None:
    """Newer ProcessGroupNCCL names the root in the message itself, without the older closing sentence."""
    waited = (
        "[rank7]: torch.distributed.DistBackendError: [7] is setting up NCCL communicator and retrieving ncclUniqueId "
        "from [0] via c10d key-value store by key '0', but store->get('0') got error: wait timeout after 600000ms, "
        "keys: //worker/attempt_0/default_pg\n"
    )
    found = run(tmp_path / "timeout", {"console.log": waited}).verdict
    assert found.outcome is Outcome.HANG and found.first_death is not None and found.first_death.rank == 0
    gone = waited.replace(
        "wait timeout after 600000ms, keys: //worker/attempt_0/default_pg", "Connection reset by peer"
    )
    assert run(tmp_path / "gone", {"console.log": gone}).verdict.outcome is Outcome.UNDETERMINED


def test_skypilots_driver_lines_say_the_job_failed_without_naming_a_rank(tmp_path: Path) -> None:
    """SkyPilot lists every node's return code, in the order it started them: a failure, but no rank."""
    console = (
        "(setup pid=2061) I'm a bad worker, failing...\n"
        "ERROR: Job 1's setup failed. Failed workers: (pid=2061, returncode=1). See error logs above for more "
        "details.\n"
    )
    assert run(tmp_path / "setup", {"console.log": console}).verdict.outcome is Outcome.UNDETERMINED
    run_failed = (
        "(worker1, rank=1, pid=2540, ip=10.0.0.5) step 7\nERROR: Job 2 failed with return code list: [137, 1]\n"
    )
    found = run(tmp_path / "run", {"console.log": run_failed}).verdict
    assert found.outcome is Outcome.UNDETERMINED and found.first_death is None
    succeeded = "(head, rank=0, pid=2934) step 7\n✓ Job finished (status: SUCCEEDED).\n"
    assert run(tmp_path / "ok", {"console.log": succeeded}).verdict.outcome is Outcome.NO_FAILURE


def test_mlxs_ring_socket_errors_are_a_lost_neighbour(tmp_path: Path) -> None:
    console = "[ring] Receiving from socket 51 failed with errno 54\n[ring] Too many send/recv errors. Aborting...\n"
    found = run(tmp_path, {"console.log": console}).verdict
    assert found.outcome is Outcome.UNDETERMINED and found.first_death is None


def test_a_collective_timeout_raised_in_a_thread_is_still_a_timeout(tmp_path: Path) -> None:
    """A thread's uncaught exception does not end the process, but a wait that ran out there still did."""
    thread = (
        "Exception in thread Thread-9:\n"
        "Traceback (most recent call last):\n"
        '  File "/opt/conda/lib/python3.6/threading.py", line 916, in _bootstrap_inner\n'
        "    self.run()\n"
        '  File "../communication.py", line 654, in _recv\n'
        "    group=sub_process_group)\n"
        "RuntimeError: [../third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:72] Timed out waiting 1800000ms for "
        "recv operation to complete\n"
    )
    assert run(tmp_path / "timeout", {"console.log": thread}).verdict.outcome is Outcome.UNDETERMINED
    raised = thread.replace(thread.splitlines()[-1], "ValueError: bad sample 7")
    assert run(tmp_path / "raised", {"console.log": raised}).verdict.outcome is Outcome.NO_FAILURE


def test_nemo_rls_worker_repr_names_its_rank_and_a_wrapped_out_of_memory_error_is_cuda_oom(tmp_path: Path) -> None:
    """NeMo-RL's workers' repr is `Name[rank=N]`, torch.distributed's rank: in Ray's prefix and in RayTaskError."""
    relayed = (
        "ray.exceptions.RayTaskError(OutOfMemoryError): ray::DTensorPolicyWorkerV2.get_logprobs() (pid=2671339, "
        "ip=10.65.16.209, actor_id=d5836b60449efbd220b3c2f406000000, repr=DTensorPolicyWorkerV2[rank=3])\n"
        '  File "/opt/nemo_rl/models/policy/workers/dtensor_policy_worker_v2.py", line 653, in get_logprobs\n'
    )
    first = run(tmp_path / "relayed", {"console.log": relayed}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (3, Cause.CUDA_OOM)
    own = (
        "(MegatronPolicyWorker[rank=8] pid=3294808, ip=10.0.0.7) Traceback (most recent call last):\n"
        '(MegatronPolicyWorker[rank=8] pid=3294808, ip=10.0.0.7)   File "/opt/train.py", line 9, in step\n'
        "(MegatronPolicyWorker[rank=8] pid=3294808, ip=10.0.0.7) ValueError: bad sample 7\n"
    )
    first = run(tmp_path / "own", {"console.log": own}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (8, Cause.PYTHON_EXCEPTION)


def test_an_ascend_vector_core_exception_is_a_device_fault_of_its_rank(tmp_path: Path) -> None:
    console = (
        "[rank2]: RuntimeError: aclrtSynchronizeEvent(event_), error code is 507035\n"
        "[rank2]: [Error]: The vector core execution is abnormal.\n"
    )
    first = run(tmp_path / "fault", {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (2, Cause.CUDA_ERROR)
    timeout = console.replace("507035", "507046").replace(
        "[rank2]: [Error]: The vector core execution is abnormal.\n", ""
    )
    first = run(tmp_path / "timeout", {"console.log": timeout}).verdict.first_death
    assert first is None or first.cause is not Cause.CUDA_ERROR


def test_a_torchrun_table_entry_cut_before_its_exit_code_is_still_that_ranks_failure(tmp_path: Path) -> None:
    table = (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
        "============================================================\n"
        "train.py FAILED\n"
        "------------------------------------------------------------\n"
        "Failures:\n"
        "  <NO_OTHER_FAILURES>\n"
        "------------------------------------------------------------\n"
        "Root Cause (first observed failure):\n"
        "[0]:\n"
        "  time      : 2023-03-07_06:11:16\n"
        "  host      : node3\n"
        "  rank      : 5 (local_rank: 1)\n"
    )
    first = run(tmp_path, {"console.log": table}).verdict.first_death
    assert first is not None and (first.rank, first.host) == (5, "node3")


def test_an_mpich_fatal_error_in_an_mpi_call_is_an_abort_of_no_named_rank(tmp_path: Path) -> None:
    console = (
        "Fatal error in PMPI_Comm_rank: Invalid communicator, error stack:\n"
        "PMPI_Comm_rank(122): MPI_Comm_rank(MPI_COMM_NULL, rank=0xa508ac) failed\n"
        "PMPI_Comm_rank(75).: Null communicator\n"
    )
    found = run(tmp_path / "misuse", {"console.log": console}).verdict
    assert found.outcome is Outcome.UNDETERMINED and found.first_death is not None
    assert found.first_death.cause is Cause.ABORT and found.first_death.rank is None
    lost = console.replace("Invalid communicator", "Other MPI error")
    first = run(tmp_path / "lost", {"console.log": lost}).verdict.first_death
    assert first is None or first.cause is not Cause.ABORT


def test_open_mpis_init_failure_banner_is_the_abort_of_the_rank_that_printed_it(tmp_path: Path) -> None:
    banner = [
        "It looks like MPI runtime init failed for some reason; your parallel process is",
        "likely to abort.  There are many reasons that a parallel process can",
        "  local size",
        '  --> Returned "Not found" (-13) instead of "Success" (0)',
    ]
    tagged = "".join(f"[1,42]<stderr>:{line}\n" for line in banner)
    first = run(tmp_path / "tagged", {"console.log": tagged}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (42, Cause.ABORT)
    pmix = "It looks like pmix_init failed for some reason; your parallel process is\n"
    first = run(tmp_path / "pmix", {"console.log": pmix}).verdict.first_death
    assert first is None or first.cause is not Cause.ABORT


def test_an_excerpt_opening_on_a_ray_task_errors_remote_header_is_a_traceback_cut_at_its_top(tmp_path: Path) -> None:
    console = (
        "ray::MegatronTrainRayActor.train() (pid=76563, ip=10.1.49.166, actor_id=37d82bcbdafcda12f1eef52b02000000, "
        "repr=<slime.backends.megatron_utils.actor.MegatronTrainRayActor object at 0x7fbbb1353e60>)\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        '  File "/opt/slime/backends/megatron_utils/actor.py", line 340, in train\n'
        "    return self.train_actor(rollout_id, rollout_data)\n"
    )
    found = run(tmp_path / "cut", {"console.log": console}).verdict
    assert found.outcome is Outcome.UNDETERMINED
    raised = console + "ValueError: bad sample 7\n"
    first = run(tmp_path / "raised", {"console.log": raised}).verdict.first_death
    assert first is not None and first.cause is Cause.PYTHON_EXCEPTION


def test_an_uncaught_exception_whose_type_is_cut_off_names_its_rank_only_where_nothing_says_more(
    tmp_path: Path,
) -> None:
    """`[rankN]: ` is PyTorch's excepthook: that rank died of the exception, whatever its cut-off type was."""
    cut = "[rank5]: Traceback (most recent call last):\n" + HEADLESS.replace("[rank3]", "[rank5]")
    alone = run(tmp_path / "alone", {"console.log": cut}).verdict
    assert alone.first_death is not None and (alone.first_death.rank, alone.confidence) == (5, Confidence.LOW)
    oom = (
        "step 3 loss 2.1\nTraceback (most recent call last):\n"
        '  File "/opt/train.py", line 242, in train\n'
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
    )
    told = run(tmp_path / "told", {"rank_2.log": oom, "console.log": cut}).verdict.first_death
    assert told is not None and (told.rank, told.cause) == (2, Cause.CUDA_OOM)
    unranked = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n" + cut
    assert run(tmp_path / "unranked", {"console.log": unranked}).verdict.outcome is Outcome.UNDETERMINED


def test_a_torchrun_table_field_of_a_sigkill_without_its_entry_header_is_a_kill_of_no_named_rank(
    tmp_path: Path,
) -> None:
    field = "...\ntraceback : Signal 9 (SIGKILL) received by PID 4242\n"  # the excerpt opens at it: no entry
    found = run(tmp_path / "fields", {"console.log": field}).verdict
    assert found.first_death is not None and (found.first_death.rank, found.first_death.cause) == (None, Cause.KILLED)
    term = field.replace("Signal 9 (SIGKILL)", "Signal 15 (SIGTERM)")
    first = run(tmp_path / "term", {"console.log": term}).verdict.first_death
    assert first is None or first.cause is not Cause.KILLED


@pytest.mark.parametrize(
    ("said", "cause"),
    [("Segmentation fault: 11 (11)", Cause.SEGFAULT), ("Bus error: 10 (10)", Cause.BUS_ERROR),
     ("Abort trap: 6 (6)", Cause.ABORT)],
)  # fmt: skip
def test_open_mpis_crash_handler_on_macos_names_the_signal_with_its_number(
    tmp_path: Path, said: str, cause: Cause
) -> None:
    """Open MPI prints strsignal(): macOS's `Segmentation fault: 11`, then ` (11)`."""
    console = f"[mac01:08691] *** Process received signal ***\n[mac01:08691] Signal: {said}\n"
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause, first.pid) == (None, cause, 8691)


def test_deepspeeds_failed_cublas_gemm_is_a_device_error_of_its_rank(tmp_path: Path) -> None:
    gemm = "!!!! kernel execution error. (m: 768, n: 4608, k: 3072, error: 13)\n"
    log = "step 3\n" + gemm * 3 + 'Traceback (most recent call last):\n  File "run_squad.py", line 9, in <module>\n'
    first = run(tmp_path / "failed", {"rank_2.log": log, "rank_1.log": "step 3\n"}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (2, Cause.CUDA_ERROR)
    alloc = log.replace("error: 13", "error: 3")
    first = run(tmp_path / "alloc", {"rank_2.log": alloc, "rank_1.log": "step 3\n"}).verdict.first_death
    assert first is None or first.cause is not Cause.CUDA_ERROR


def test_open_mpis_failed_exec_of_the_application_is_a_launch_failure_not_no_failure(tmp_path: Path) -> None:
    execve = (
        'Open MPI tried to fork a new process via the "execve" system call but\n'
        "failed.  Open MPI checks many things before attempting to launch a\n"
        "child process, but nothing is perfect. Your job will now\nabort.\n\n"
        "  Local host:        imre\n  Application name:  /home/imre/caffe\n  Error:             Permission denied\n"
        "[imre:21345] 3 more processes have sent help message help-orte-odls-default.txt / execve error\n"
    )
    found = run(tmp_path / "execve", {"console.log": execve}).verdict
    assert found.outcome is Outcome.UNDETERMINED and found.first_death is None
    assert any("could not start the job" in r for r in found.reasoning)
    missing = (
        "mpirun was unable to launch the specified application as it could not access\n"
        "or execute an executable:\n\nExecutable: ./a.out\nNode: box0101\n\n"
        "while attempting to start process rank 17.\n2 total processes failed to start\n"
    )
    assert run(tmp_path / "missing", {"console.log": missing}).verdict.outcome is Outcome.UNDETERMINED


def test_an_excerpt_opening_inside_a_torchrun_table_entry_is_that_ranks_failure_not_a_first_death(
    tmp_path: Path,
) -> None:
    entry = (
        "  time      : 2022-04-06_11:46:18\n  host      : cn102\n  rank      : 7 (local_rank: 3)\n"
        "  exitcode  : 1 (pid: 5002)\n  error_file: /tmp/torchelastic_x/attempt_0/3/error.json\n"
        "  traceback : Traceback (most recent call last):\n"
    )
    d = run(tmp_path / "cut", {"console.log": entry})
    assert d.verdict.outcome is Outcome.UNDETERMINED
    assert any("open inside torchrun's failure table, in rank 7's entry" in r for r in d.verdict.reasoning)
    whole = "Root Cause (first observed failure):\n[0]:\n" + entry
    first = run(tmp_path / "whole", {"console.log": whole}).verdict.first_death
    assert first is not None and first.rank == 7


def test_rllibs_worker_crashed_line_says_a_process_failed_without_naming_it(tmp_path: Path) -> None:
    crashed = (
        "(pid=1279) 2019-12-29 10:34:31,348\tINFO trainer.py:366 -- Worker crashed during call to train(). "
        "To attempt to continue training without the failed worker, set `'ignore_worker_failures': True`.\n"
    )
    d = run(tmp_path, {"console.log": "== Status ==\nNumber of trials: 1 ({'RUNNING': 1})\n" + crashed})
    assert d.verdict.outcome is Outcome.UNDETERMINED and d.verdict.first_death is None


def test_nccls_cuda_failure_is_tied_to_its_rank_through_the_pid_of_an_old_init_line(tmp_path: Path) -> None:
    """NCCL before 2.7 logs `comm 0x.. rank 1 nranks 2 cudaDev 0 nvmlDev 0 - Init COMPLETE` without a busId;
    its WARN lines carry `host:pid:tid`, the same pid."""
    console = (
        "ubuntu:107847:107878 [0] NCCL INFO comm 0x7fab54002730 rank 0 nranks 2 cudaDev 0 nvmlDev 0 - Init COMPLETE\n"
        "ubuntu:107848:107879 [0] NCCL INFO comm 0x7fab54002731 rank 1 nranks 2 cudaDev 0 nvmlDev 0 - Init COMPLETE\n"
        "ubuntu:107848:107848 [0] enqueue.cc:197 NCCL WARN Cuda failure 'invalid device function'\n"
        "ubuntu:107848:107848 [0] NCCL INFO misc/group.cc:148 -> 1\n"
    )
    first = run(tmp_path, {"console.log": console}).verdict.first_death
    assert first is not None and (first.rank, first.cause) == (1, Cause.NCCL_ERROR)


@pytest.mark.parametrize(("closing", "named"), [("=" * 60, True), ("-" * 60, False)])
def test_the_line_that_closes_a_table_entry_says_whether_it_is_the_root_cause(
    tmp_path: Path, closing: str, named: bool
) -> None:
    """torch 1.11+ prints the root cause last and closes the table with `====`; the other failures' section
    ends with `----`: an entry cut at its top is the root cause when `====` follows it."""
    entry = (
        "  rank      : 1 (local_rank: 1)\n  exitcode  : 1 (pid: 8181)\n  error_file: <N/A>\n"
        "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
    )
    d = run(tmp_path, {"console.log": entry + closing + "\n"})
    first = d.verdict.first_death
    assert (first is not None and first.rank == 1) == named
    assert (d.verdict.outcome is Outcome.UNDETERMINED) != named


def test_open_mpis_usage_error_is_tied_to_its_rank_through_the_reporting_pid(tmp_path: Path) -> None:
    console = (
        "[g32n01:32314] *** An error occurred in MPI_Allreduce\n"
        "[g32n01:32314] *** reported by process [2154496201,608]\n"
        "[g32n01:32314] *** on communicator MPI_COMM_WORLD\n"
        "[g32n01:32314] *** MPI_ERR_COMM: invalid communicator\n"
        "[g32n01:32314] *** MPI_ERRORS_ARE_FATAL (processes in this communicator will now abort,\n"
    )
    d = run(tmp_path, {"console.log": console})
    assert first(d) == (608, Cause.ABORT)
