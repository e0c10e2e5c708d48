"""Sources: prefixes, rank attribution from paths and content, robust reading, discovery."""

from __future__ import annotations

import gzip
import io
import json
import re
from datetime import UTC
from pathlib import Path, PurePath

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rankautopsy.errors import InputError
from rankautopsy.model import StreamKind
from rankautopsy.pipeline import Options, diagnose
from rankautopsy.sources import prefixes
from rankautopsy.sources.clocks import ClockContext
from rankautopsy.sources.discover import Source, classify, discover
from rankautopsy.sources.lines import LineParser, unmark_pytest
from rankautopsy.sources.prefixes import (
    Prefix,
    Profile,
    is_srun_labelled,
    sniff_profile,
    strip_prefixes,
    without_ray_repeats,
)
from rankautopsy.sources.ranks import PathRank, content_rank, content_rank_shapes, rank_from_path
from rankautopsy.sources.read import PIECES, decode, looks_binary, open_bytes, pieces, segments, split_lines, spool
from rankautopsy.sources.sanitize import _clean_unprintable, clean, clean_pieces


@pytest.mark.parametrize(
    ("line", "message", "prefix"),
    [
        (
            "[default2]:[rank2]: Traceback (most recent call last):",
            "Traceback (most recent call last):",
            Prefix(rank=2, local_rank=2),
        ),
        (
            "[default0]:[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog",
            "[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog",
            Prefix(rank=0, local_rank=0),
        ),
        ("[rank3]: [rank3]:     return func(*args, **kwargs)", "    return func(*args, **kwargs)", Prefix(rank=3)),
        (
            "[default1]:2026-11-29 09:24:11,468 INFO [rank 1] step 1/12",
            "2026-11-29 09:24:11,468 INFO [rank 1] step 1/12",
            Prefix(local_rank=1),
        ),
        ("[1,3]<stderr>:Traceback", "Traceback", Prefix(rank=3)),
        ("[1,3]<stdout>: hello", "hello", Prefix(rank=3)),
        ("2016-10-06T00:17:09.669794202Z stderr F boom", "boom", Prefix(stamp="2016-10-06T00:17:09.669794202Z")),
        (
            "[E ProcessGroupNCCL.cpp:481] Some NCCL operations have failed",
            "[E ProcessGroupNCCL.cpp:481] Some NCCL operations have failed",
            Prefix(),
        ),
        (
            "[2026-11-29 07:00:00,123] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 1",
            "[2026-11-29 07:00:00,123] [INFO] [launch.py:319:sigkill_handler] Killing subprocess 1",
            Prefix(),
        ),
        ("RuntimeError: boom", "RuntimeError: boom", Prefix()),
        # accelerate's / transformers' execute_subprocess_async: `print("stderr:", line)` of the child's line
        ("stderr: [rank1]: Traceback (most recent call last):", "Traceback (most recent call last):", Prefix(rank=1)),
        ("stderr:   rank      : 1 (local_rank: 1)", "  rank      : 1 (local_rank: 1)", Prefix()),
        ("stdout: [default0]:step 3", "step 3", Prefix(local_rank=0)),
        ("stderrs: boom", "stderrs: boom", Prefix()),
        # a collector's ISO stamp and a colon before mpirun's --tag-output; mpirun's own --timestamp-output (ctime)
        (
            "2021-03-10T13:22:37.443Z: [1,0]<stderr>:OSError: Caught OSError in DataLoader worker process 3.",
            "OSError: Caught OSError in DataLoader worker process 3.",
            Prefix(rank=0, stamp="2021-03-10T13:22:37.443Z"),
        ),
        (
            "Wed Mar 10 13:22:37 2021[1,2]<stderr>:Traceback (most recent call last):",
            "Traceback (most recent call last):",
            Prefix(rank=2, stamp="Wed Mar 10 13:22:37 2021"),
        ),
        ("Wed Mar 10 13:22:37 2021 was a Wednesday", "Wed Mar 10 13:22:37 2021 was a Wednesday", Prefix()),
        # a terminal's echo of Ctrl-C glued to the next line printed
        ("^CTraceback (most recent call last):", "Traceback (most recent call last):", Prefix()),
        ("^C^C[1,3]<stderr>:Traceback", "Traceback", Prefix(rank=3)),
        ("^C", "", Prefix()),
        (
            "2018-07-30 06:41:52.525932: W tensorflow/core/x.cc:1] y",
            "2018-07-30 06:41:52.525932: W tensorflow/core/x.cc:1] y",
            Prefix(),
        ),
    ],
)
def test_strip_prefixes(line: str, message: str, prefix: Prefix) -> None:
    assert strip_prefixes(line) == (message, prefix)


def test_srun_labels_only_where_the_stream_is_labelled() -> None:
    labelled = [" 0: step 1", " 1: step 1", "12: Traceback (most recent call last):", " 3: done"]
    assert is_srun_labelled(labelled)
    assert not is_srun_labelled(["3: not a label", "step 1", "step 2", "done"])
    assert strip_prefixes("12: Traceback", srun_labels=True) == ("Traceback", Prefix(task=12))
    assert strip_prefixes("12: Traceback") == ("12: Traceback", Prefix())


def test_srun_and_slurmstepds_own_lines_do_not_hide_a_labelled_tail() -> None:
    tail = [f"{t}: 2026-12-06 07:00:02,500 INFO __main__: step 4/10" for t in range(3)] + [
        "srun: Job step aborted: Waiting up to 7 seconds for job step to finish.",
        "srun: got SIGCONT",
        "0: slurmstepd-node01: error: *** STEP 1.0 ON node01 CANCELLED AT 2026-12-06T07:00:02 ***",
        "slurmstepd-node01: error: *** JOB 1 ON node01 CANCELLED AT 2026-12-06T07:00:02 ***",
        "srun: forcing job termination",
        "srun: error: node01: tasks 0-2: Terminated",
    ]
    assert is_srun_labelled(tail)
    assert not is_srun_labelled([line for line in tail if line.startswith("s")])  # srun's own lines alone
    assert not is_srun_labelled([tail[0], *tail[3:5], tail[6]])  # one task's line: too few to tell


def test_a_launchers_banner_does_not_hide_its_labelled_tail() -> None:
    from rankautopsy.sources.prefixes import sniff_profile

    hydra = [f"[1] line {i}" for i in range(5)] + [
        "=" * 83,
        "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES",
        "=   PID 31275 RUNNING AT node01",
        "=   EXIT CODE: 9",
        "=" * 83,
        "YOUR APPLICATION TERMINATED WITH THE EXIT STRING: Segmentation fault (signal 11)",
        "This typically refers to a problem with your application.",
        "Please see the FAQ page for debugging suggestions",
    ]
    assert sniff_profile(hydra).hydra
    pdsh = ["worker-0: step 9", "worker-1: ValueError: bad", "pdsh@launcher: worker-1: ssh exited with exit code 1"]
    assert sniff_profile(pdsh).pdsh


@pytest.mark.parametrize("argv0", ["slurmstepd", "slurmstepd-node01"])
def test_slurmstepds_own_message_under_its_nodes_first_task_label_is_no_tasks(argv0: str) -> None:
    line = f"0: {argv0}: error: Detected 1 oom-kill event(s) in StepId=1.0. Some of your processes may have been killed"
    message, prefix = strip_prefixes(line, srun_labels=True)
    assert message.startswith(f"{argv0}: error: Detected 1 oom-kill")
    assert prefix.task is None


def test_rays_relay_prefix_names_the_emitting_pid_and_its_daemons_are_stripped() -> None:
    assert strip_prefixes("(RayTrainWorker pid=12404) Traceback (most recent call last):") == (
        "Traceback (most recent call last):",
        Prefix(pid=12404, ray=True),
    )
    assert strip_prefixes("(pid=812, ip=10.0.0.7) step 3") == ("step 3", Prefix(host="10.0.0.7", pid=812, ray=True))
    assert strip_prefixes("(raylet, ip=10.0.0.7) A worker died") == ("A worker died", Prefix(host="10.0.0.7", ray=True))
    assert strip_prefixes("(not a prefix) text") == ("(not a prefix) text", Prefix())
    assert strip_prefixes("[36m(not a prefix)[0m text") == ("[36m(not a prefix)[0m text", Prefix())
    skypilot = "(worker1, rank=1, pid=22249, ip=10.31.0.9)   rank      : 5 (local_rank: 1)"  # its node's rank
    relayed = Prefix(host="10.31.0.9", pid=22249, ray=True)
    assert strip_prefixes(skypilot) == ("  rank      : 5 (local_rank: 1)", relayed)
    assert without_ray_repeats("step 3/10 loss 0.6717 [repeated 8x across cluster]") == "step 3/10 loss 0.6717"
    assert without_ray_repeats("worker up [repeated 2x across cluster] (Ray deduplicates logs by default. Set") == (
        "worker up"
    )


@given(
    st.sampled_from(["RayTrainWorker ", "TrainController ", "_WrappedExecutable ", "worker1, rank=1, ", ""]),
    st.integers(1, 4_194_304),
    st.sampled_from(["", ", ip=10.0.114.132", ", ip=fe80::1"]),
    st.sampled_from(["Traceback (most recent call last):", "step 3", "[rank1]: x", "(nested pid=1) y"]),
    st.sampled_from([("", ""), ("[36m", "[0m"), ("[2m[36m", "[0m")]),
)
def test_ray_relay_prefixes_round_trip(name: str, pid: int, ip: str, message: str, colour: tuple[str, str]) -> None:
    """A relayed process's own `(name pid=N) ` layer is stripped too: its pid is the emitter's. Ray's colour
    codes around its prefix, pasted without their ESC bytes, go with it."""
    text, prefix = strip_prefixes(f"{colour[0]}({name}pid={pid}{ip}){colour[1]} {message}")
    nested = message.startswith("(nested")
    assert prefix.pid == (1 if nested else pid) and prefix.ray
    assert prefix.host == (ip.removeprefix(", ip=") or None)
    assert message.endswith(text) and (text == message or message.startswith("[rank1]") or (nested and text == "y"))


def test_hydra_rank_labels_only_where_the_stream_is_labelled() -> None:
    labelled = [
        "[0] step 1",
        "[1] step 1",
        "[2] Fatal Python error: Segmentation fault",
        "[1] step 2",
        "=   EXIT CODE: 9",
    ]
    profile = sniff_profile(labelled)
    assert profile.hydra and not profile.template
    assert strip_prefixes("[2] [rank2]: Traceback", profile=profile) == ("Traceback", Prefix(rank=2))
    assert strip_prefixes("[2] Fatal Python error", profile=profile) == ("Fatal Python error", Prefix(rank=2))
    assert not sniff_profile(["[1] one", "plain", "plain too", "and more"]).hydra
    assert strip_prefixes("[2] Fatal Python error") == ("[2] Fatal Python error", Prefix())


def test_nccls_device_tag_with_its_host_cut_is_no_hydra_rank_label() -> None:
    """`[0] NCCL INFO ...` / `[0] misc/ibvwrap.cc:212 NCCL WARN ...`: NCCL's `[cudaDev]` with its `host:pid:tid `
    cut by a paste, on every line, is not MPICH's `[rank] ` label; Hydra's label before NCCL's whole prefix is."""
    nccl = [
        "[0] NCCL INFO Bootstrap : Using eth0:10.42.0.4<0>",
        "[0] misc/ibvwrap.cc:212 NCCL WARN Call to ibv_open_device failed",
        "[0] transport/net_ib.cc:117 NCCL WARN NET/IB : Unable to open device mlx5_6",
        "[0] NCCL INFO NET/Socket : Using [0]eth0:10.42.0.4<0>",
    ]
    assert not sniff_profile(nccl).hydra
    labelled = [f"[{r}] node1:42{r}:42{r} [{r}] NCCL INFO ring {i}" for r in range(2) for i in range(3)]
    profile = sniff_profile(labelled)
    assert profile.hydra
    assert strip_prefixes(labelled[4], profile=profile)[1] == Prefix(rank=1)


def test_bracketed_numbers_that_count_up_line_by_line_are_a_viewers_line_numbers_not_ranks() -> None:
    """`[1824] frame #2: ...`, `[1825] ...`: a paste's line numbers, stripped; MPICH's `[3] ` labels of ranks
    printing round robin count up too, but go back, and stay ranks."""
    numbered = [f"[{1824 + i}] {text}" for i, text in enumerate(
        ["frame #2: c10d::ProcessGroupNCCL::watchdogHandler()", "frame #3: clone + 0x44", "",
         "[rank4]:[E602 11:18:52.531176265 ProcessGroupNCCL.cpp:684] [Rank 4] Some NCCL operations have failed"]
    )]  # fmt: skip
    profile = sniff_profile(numbered)
    assert profile.numbered and not profile.hydra
    assert strip_prefixes(numbered[-1], profile=profile)[1].rank == 4
    round_robin = [f"[{r}] step {s}" for s in range(3) for r in range(4)]
    profile = sniff_profile(round_robin)
    assert profile.hydra and not profile.numbered
    assert strip_prefixes(round_robin[5], profile=profile) == ("step 1", Prefix(rank=1))


@given(st.text(max_size=200))
@settings(max_examples=300)
def test_strip_prefixes_never_raises_and_only_removes_a_head(line: str) -> None:
    message, _ = strip_prefixes(line, srun_labels=True)
    assert line.endswith(message)


_TAG_PIECES = st.sampled_from(
    ["[", "]", ":", " ", ",", "<", ">", "rank", "default", "stdout", "stderr", "1", "42", "x", "h:"]
)


@given(st.lists(_TAG_PIECES, max_size=12).map("".join))
@settings(max_examples=500)
def test_a_tag_is_one_of_the_three_launcher_tags(line: str) -> None:
    one_of_three = any(p.match(line) for p in (prefixes._MPI, prefixes._RANK, prefixes._TEE))
    assert prefixes.starts_tagged(line) == (line.startswith("[") and one_of_three)


@given(st.integers(0, 4095), st.integers(0, 7), st.sampled_from(["Traceback", "  File", "step 3", "[W1129 x] y"]))
def test_prefix_layers_round_trip(rank: int, local: int, message: str) -> None:
    line = f"[default{local}]:[rank{rank}]: {message}"
    assert strip_prefixes(line) == (message, Prefix(rank=rank, local_rank=local))


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("logs/rank_3.log", PathRank(rank=3)),
        ("rank3.out", PathRank(rank=3)),
        ("log_rank_12.txt", PathRank(rank=12)),
        ("worker-3.log", PathRank(rank=3)),
        ("worker-48ada2432610361-01000000-17541.err", PathRank()),  # Ray: a worker id, not worker 48
        ("20251218101010_rank7.log", PathRank(rank=7)),
        ("run_1/attempt_2/5/stderr.log", PathRank(local_rank=5, attempt=2)),
        ("train.log", PathRank()),
        ("checkpoint_5.log", PathRank()),
        ("dmesg.txt", PathRank()),
    ],
)
def test_rank_from_path(path: str, expected: PathRank) -> None:
    assert rank_from_path(PurePath(path)) == expected


def test_kubeflow_worker_pods_are_shifted_by_the_master() -> None:
    assert rank_from_path(PurePath("job-worker-0.log"), kubeflow=True) == PathRank(rank=1)


def test_content_rank_trusts_only_the_stream_header_shape() -> None:
    lines = [f"2026-11-29 07:00:0{i},123 INFO [rank {i % 4}] step {i}" for i in range(8)]
    mention = "2026-11-29 07:00:09,000 ERROR timed out waiting for rank 3 to join"
    shapes = content_rank_shapes([*lines, mention])
    assert [content_rank(x, shapes) for x in lines[:4]] == [0, 1, 2, 3]
    assert content_rank(mention, shapes) is None
    assert content_rank("[PG 0 Rank 3] Timeout at NCCL work: 5", shapes) is None
    assert content_rank_shapes(["no ranks here", "nor here", "step 1"]) == frozenset()


def test_process_group_ranks_of_two_watchdog_lines_are_read() -> None:
    """ProcessGroupNCCL's `[Rank N]` (torch <= 2.1, no `[rankN]:` prefix) on two lines naming two ranks is the
    stream's shape; a generic `rank N` field needs three lines."""
    line = "[E ProcessGroupNCCL.cpp:915] [Rank {r}] NCCL watchdog thread terminated with exception: [Rank {r}] Watch"
    two = [line.format(r=0), "NCCL INFO other", line.format(r=2)]
    assert [content_rank(x, content_rank_shapes(two)) for x in two] == [0, None, 2]
    generic = ["INFO [rank 0] step 1", "x", "INFO [rank 2] step 1"]
    assert content_rank(generic[0], content_rank_shapes(generic)) is None


def test_clean_removes_escape_sequences_and_controls() -> None:
    assert clean("\x1b[31mred\x1b[0m \x1b]0;title\x07ok\x00\x07\ttab") == "red ok\ttab"


def test_clean_changes_no_printable_character() -> None:
    # `clean` returns printable text as it is: what it takes away or escapes must never be printable
    printable = "".join(c for c in map(chr, range(0x110000)) if c.isprintable())
    assert _clean_unprintable(printable) == printable
    assert _clean_unprintable("a\u200bb\x1b[1mc\x7f") != "a\u200bb\x1b[1mc\x7f"


@given(st.text(max_size=300))
def test_clean_leaves_no_control_characters(text: str) -> None:
    out = clean(text)
    assert not any((ord(c) < 32 and c not in "\t\n") or 0x7F <= ord(c) <= 0x9F for c in out)


def test_split_lines_handles_crlf_and_carriage_return_progress_bars() -> None:
    text = "a\r\n 10%|#   |\r 100%|####|\rTraceback (most recent call last):\nb\n"
    assert list(split_lines(text)) == [
        (1, "a"),
        (2, " 10%|#   |"),
        (2, " 100%|####|"),
        (2, "Traceback (most recent call last):"),
        (3, "b"),
    ]


def test_truncated_gzip_is_read_as_far_as_it_goes() -> None:
    data = gzip.compress(("line of a log\n" * 20000).encode())
    decoded = decode(data[: len(data) // 2])
    assert decoded.problem and "truncated gzip" in decoded.problem
    assert decoded.text.startswith("line of a log\n")


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=400), codec=st.sampled_from(["utf-16-le", "utf-16-be"]), size=st.integers(1, 64))
def test_utf16_with_a_bom_is_read_as_its_utf8_bytes(text: str, codec: str, size: int) -> None:
    stream = open_bytes(None, "\ufeff".encode(codec) + text.encode(codec, "surrogatepass"))
    out, buf = bytearray(), bytearray(size)
    while n := stream.readinto(memoryview(buf)):
        out += buf[:n]
    expected = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    assert out.decode("utf-8", "surrogateescape") == expected


def test_binary_sniffing() -> None:
    assert looks_binary(b"\x7fELF\x02\x01\x01" + bytes(500))
    assert not looks_binary("ordinary log line ✓\n".encode() * 100)


def test_classify_by_name_and_content() -> None:
    assert classify("x/dmesg.txt", "hello", PathRank()) is StreamKind.KERNEL
    assert classify("x/attempt_0/1/error.json", "{}", PathRank(local_rank=1)) is StreamKind.ERROR_JSON
    raw = "[ 933.632096] Out of memory: Killed process 1 (python)\n" * 5
    assert classify("x/node7.txt", raw, PathRank()) is StreamKind.KERNEL
    assert classify("x/rank_1.log", "step 1\n", PathRank(rank=1)) is StreamKind.RANK_LOG
    assert classify("x/console.log", "step 1\n", PathRank()) is StreamKind.CONSOLE
    for day in ("Feb  2", "Feb 2", "Feb 12"):  # dmesg -T pads the day; a web page's paste may collapse it
        human = f"[Mon {day} 22:52:45 2026] NVRM: Xid (PCI:0000:4c:00): 94, pid=538574, name=python\n" * 5
        assert classify("x/console.log", human, PathRank()) is StreamKind.KERNEL
        journal = f"{day} 22:52:45 gpu07 kernel: NVRM: Xid (PCI:0000:4c:00): 79, pid=1\n" * 5
        assert classify("x/console.log", journal, PathRank()) is StreamKind.KERNEL
    assert classify("x/console.log", "[Mon Feb 2 22:52:45] no year\n" * 5, PathRank()) is StreamKind.CONSOLE


@given(st.binary(max_size=300) | st.text(max_size=100).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_a_head_is_judged_binary_as_its_decoded_text_is(head: bytes) -> None:
    text = head.decode("utf-8", "replace")
    bad = text.count("\ufffd") + len(re.findall("[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]", text))
    expected = head.count(b"\x00") > max(2, len(head) // 2000) or bad > 0.1 * len(text)
    assert looks_binary(head) == (expected and bool(head))


_SPLIT_TEXT = st.lists(
    st.sampled_from(["2026-11-29 07:00", "x", "\n", "\r", "\r\n", "\x1c", "\u2028", "[ 12.000001] ", "kernel: ", "Mon"])
    | st.sampled_from(["Jan 01 10:00:00 host kernel: oom", "Wed Dec  2 07:00:00 2026", "1999-01-01T00:00", " " * 700]),
    max_size=60,
).map("".join)


@given(_SPLIT_TEXT)
@settings(max_examples=300)
def test_the_heads_year_and_kernel_sniff_read_the_lines_a_full_split_gives(text: str) -> None:
    from rankautopsy.sources import discover as found
    from rankautopsy.sources.clocks import year_hint_from_text

    years = (year_hint_from_text(line) for line in text[:200_000].splitlines()[:2000])
    assert found._year(text) == next((y for y in years if y is not None), None)
    kernel = [line for line in text[:65536].splitlines()[:200] if line.strip()]
    expected = bool(kernel) and sum(1 for line in kernel if found._KERNEL_LINE.match(line)) >= 0.6 * len(kernel)
    assert found._sniff_kernel(text) == expected


def test_discover_reports_missing_and_empty(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        discover([str(tmp_path / "missing")])
    with pytest.raises(InputError, match="nothing readable"):
        discover([str(tmp_path)])


def test_discover_skips_and_names_bad_files(tmp_path: Path) -> None:
    (tmp_path / "rank_0.log").write_text("step 1\n")
    (tmp_path / "core").write_bytes(bytes(4096))
    (tmp_path / "empty.log").write_text("")
    (tmp_path / "loop").symlink_to(tmp_path)
    sources, skipped = discover([str(tmp_path)])
    assert [s.display for s in sources] == [str(tmp_path / "rank_0.log")]
    reasons = {Path(s.path).name: s.reason for s in skipped}
    assert "binary" in reasons["core"]
    assert reasons["empty.log"] == "empty"
    assert any("symlink loop" in r for r in reasons.values())


def test_a_write_up_found_in_a_directory_is_skipped_but_read_when_named(tmp_path: Path) -> None:
    """A README or an issue's notes beside the logs quote log lines: read, they became the job's events."""
    (tmp_path / "rank_0.log").write_text("step 1\n")
    notes = tmp_path / "NOTES.md"
    notes.write_text("rank 1 died:\n\n    [rank1]: RuntimeError: CUDA error: an illegal memory access\n")
    sources, skipped = discover([str(tmp_path)])
    assert [Path(s.display).name for s in sources] == ["rank_0.log"]
    assert [(Path(s.path).name, s.reason) for s in skipped] == [
        ("NOTES.md", "a document, not a log (name it to read it)")
    ]
    sources, skipped = discover([str(tmp_path), str(notes)])
    assert sorted(Path(s.display).name for s in sources) == ["NOTES.md", "rank_0.log"]


def test_sniff_profile_finds_pdsh_labels_and_line_numbers() -> None:
    pdsh = ["worker-0: step 1", "worker-1: Traceback (most recent call last):", "worker-1:   File x", "worker-0: ok"]
    profile = sniff_profile(pdsh)
    assert profile.pdsh and not profile.srun
    assert strip_prefixes(pdsh[1], profile=profile) == ("Traceback (most recent call last):", Prefix(host="worker-1"))
    numbered = ["1  2026-11-29 a", "2  [rank1]: Traceback", "3  hello", "4  x"]
    profile = sniff_profile(numbered)
    assert profile.numbered
    assert strip_prefixes(numbered[1], profile=profile) == ("Traceback", Prefix(rank=1))


def test_a_timestamp_on_every_line_is_a_layer_and_the_lines_time(tmp_path: Path) -> None:
    """A collector (moreutils' `ts`, a log viewer) stamps every line, a traceback's frames too."""
    lines = [f"2025-10-18 15:15:{s:02d} step {s}" for s in range(20)] + [
        "2025-10-18 15:15:23 Traceback (most recent call last):",
        '2025-10-18 15:15:23   File "train.py", line 9, in <module>',
        "2025-10-18 15:15:23     main()",
        "2025-10-18 15:15:23 ValueError: bad sample 7",
    ]
    profile = sniff_profile(lines)
    assert profile.stamped
    assert strip_prefixes(lines[21], profile=profile) == (
        '  File "train.py", line 9, in <module>',
        Prefix(stamp="2025-10-18 15:15:23"),
    )
    assert not sniff_profile(["step 1", "2025-10-18 15:15:23 a", "step 2", "step 3", "step 4"]).stamped
    for clock, stamp in (("09:34:27 ", None), ("Nov 26 23:08:31 ", "Nov 26 23:08:31")):  # Jenkins, syslog
        other = sniff_profile([clock + line.split(" ", 2)[2] for line in lines])
        assert other.stamped
        assert strip_prefixes(clock + "Traceback (most recent call last):", profile=other) == (
            "Traceback (most recent call last):",
            Prefix(stamp=stamp),
        )
    (tmp_path / "rank_3.log").write_text("\n".join(lines) + "\n")
    found = diagnose(Options(paths=[str(tmp_path)], tz=UTC))
    death = found.verdict.first_death
    assert death is not None and (death.rank, death.cause.value) == (3, "python_exception")
    assert death.evidence[0].text == "ValueError: bad sample 7" and death.time is not None


def test_a_short_excerpt_stamped_on_every_line_is_a_layer_when_it_is_the_whole_stream(tmp_path: Path) -> None:
    """Nine stamped frames of a traceback cut at both ends: a stream that short has the layer only where
    every line carries it and the head is the whole stream (a scan's head may be cut short by a long line)."""
    frames = [
        f'[2024-07-08 15:29:47]   File "/opt/data.py", line {n}, in load'
        if n % 2
        else f"[2024-07-08 15:29:47]     x = load({n})"
        for n in range(9)
    ]
    assert sniff_profile(frames, whole=True).stamped
    assert not sniff_profile(frames).stamped
    assert not sniff_profile([*frames[:8], "step 9"], whole=True).stamped
    (tmp_path / "console.log").write_text("\n".join(frames) + "\n")
    found = diagnose(Options(paths=[str(tmp_path)], tz=UTC))
    assert found.verdict.outcome.value == "undetermined"
    assert any("cut off before its `Type: message`" in line for line in found.verdict.reasoning)


def test_an_excerpt_pasted_indented_is_read_without_its_indent() -> None:
    pasted = ["    [h06:07661] Signal: Segmentation fault (11)", "    Traceback (most recent call last):",
              '      File "train.py", line 3, in <module>', "        main()", "    ValueError: x"]  # fmt: skip
    profile = sniff_profile(pasted)
    assert profile.indent == "    "
    assert strip_prefixes(pasted[0], profile=profile)[0] == "[h06:07661] Signal: Segmentation fault (11)"
    assert strip_prefixes(pasted[2], profile=profile)[0] == '  File "train.py", line 3, in <module>'
    assert strip_prefixes("unindented", profile=profile)[0] == "unindented"


def test_an_indent_that_frames_need_is_the_logs_own() -> None:
    frames = ['  File "train.py", line 3, in <module>', "    main()", '  File "x.py", line 9, in main', "    f()"]
    assert sniff_profile(frames).indent == ""
    assert sniff_profile(["  a", "  b", "c", "  d"]).indent == ""  # not every line
    assert sniff_profile([" a", " b", " c"]).indent == ""  # one space: not a paste's
    assert sniff_profile(["...", "  a", "  b", "  \u2026", "  c"]).indent == "  "  # where the poster cut
    assert sniff_profile(["\u2026", "    a", "    b", "    c"]).indent == "    "


def test_labels_of_digits_alone_are_srun_task_ids_not_pdsh_hosts() -> None:
    labelled = ["2: Traceback (most recent call last):", '2:   File "train.py", line 3', "2:     main()", "2: x"]
    profile = sniff_profile(labelled)
    assert profile.srun and not profile.pdsh
    assert strip_prefixes(labelled[0], profile=profile) == ("Traceback (most recent call last):", Prefix(task=2))


def test_sniff_profile_ignores_messages_that_look_like_labels() -> None:
    assert sniff_profile(["RuntimeError: x", "INFO: y", "Traceback: z", "WARNING: a"]) == Profile()
    assert sniff_profile(["3: not a label", "step 1", "step 2", "done"]) == Profile()


def test_a_tqdm_bar_left_on_the_line_is_not_the_message() -> None:
    line = " 42%|█████▏     | 5/12 [00:01<00:01,  4.56it/s][rank1]: Traceback (most recent call last):"
    assert strip_prefixes(line) == ("Traceback (most recent call last):", Prefix(rank=1))


def test_unwrap_joins_a_terminals_hard_wrap_but_not_records_of_equal_length() -> None:
    from rankautopsy.sources.lines import unwrap

    width = 70
    wrapped = []
    for i in range(6):
        text = f"[rank{i}]: RuntimeError: peer {i} closed the connection while we waited for the all_reduce to finish"
        wrapped += [text[:width], text[width:]]
    numbered = list(enumerate(wrapped, start=1))
    joined = unwrap(numbered, Profile())
    assert len(joined) == 6 and joined[0] == (1, wrapped[0] + wrapped[1])
    steps = [(i, f"2026-11-29 07:00:{i:02d},000 INFO [rank 0] step {i:03d}/100 loss 2.3108 lr 3e-4") for i in range(20)]
    assert unwrap(steps, Profile()) == steps


@pytest.mark.parametrize(
    "record",
    [
        "node00:52000:52040 [0] NCCL INFO comm 0x55d0c0de0000 rank 0 nRanks 8 nNodes 1 localRanks 8",
        "gpu-a100-7.cluster:1234:9876 [3] transport/net_ib.cc:2244 NCCL WARN NET/IB : Got completion",
        "WARNING:torch.distributed.run:Setting OMP_NUM_THREADS environment variable for each process",
        "INFO:__main__:rank 0 loaded the checkpoint",
        "[E ProcessGroupNCCL.cpp:828] [Rank 6] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1)",
        "[W1129 07:10:01.123456789 socket.cpp:752] [c10d] The client socket has failed to connect to [node01]:29500",
    ],
)
def test_records_without_a_timestamp_are_no_wrapped_rest(record: str) -> None:
    """Lines of one width (a training loop's step lines) followed by NCCL's or Python logging's records:
    the log's shape, not a terminal's wrap; joined, the records would be lost into the step lines."""
    from rankautopsy.sources.lines import unwrap

    steps = [f"2026-11-30 03:00:{i:02d},000 INFO [train.py:212] rank 0 step {i:03d} loss 2.5166" for i in range(12)]
    raw = list(enumerate(line for step in steps for line in (step, record)))
    assert unwrap(raw, Profile()) == raw


def test_c10_records_of_one_width_are_no_wrap() -> None:
    """PyTorch 1.x's c10 header `[E ProcessGroupNCCL.cpp:828]` starts a record: six watchdog lines that all
    came out 193 characters wide (the ranks' numbers of one width) are six records, not one wrapped line."""
    from rankautopsy.sources.lines import unwrap

    raw = [
        (i, f"[E ProcessGroupNCCL.cpp:828] [Rank {r}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum="
         f"{seq}, OpType={op}, Timeout(ms)=1800000) ran for 18027{i}{i} milliseconds before timing out.")
        for i, (r, seq, op) in enumerate([(1, 15173, "ALLREDUCE"), (6, 15170, "BROADCAST"), (0, 15173, "ALLREDUCE"),
                                          (7, 15170, "BROADCAST"), (3, 15173, "ALLREDUCE"), (2, 15173, "ALLREDUCE")])
    ]  # fmt: skip
    assert len({len(text) for _, text in raw}) == 1
    assert unwrap(raw, Profile()) == raw


def test_records_of_one_format_are_no_wrap() -> None:
    """Ray Train's report line has one width until the step number gets a digit more: lines that read the
    same but for their numbers are records of one format, and the print after each report (the rank's
    progress) stays a line of its own."""
    from rankautopsy.sources.lines import unwrap

    def report(step: int) -> str:
        return f"Reporting training result {step}: TrainingReport(metrics={{'step': {step}, 'loss': 0.74}}) from rank 0"

    raw = list(enumerate(line for step in range(1, 11) for line in (report(step), f"step {step + 1}/10 loss 0.7444")))
    assert len({len(report(step)) for step in range(1, 10)}) == 1 and len(report(10)) > len(report(9))
    assert unwrap(raw, Profile()) == raw
    assert len(unwrap(raw[:-2], Profile())) < len(raw) - 2  # without the wider line it reads as a wrap


def test_records_whose_numbers_are_padded_to_a_width_are_no_wrap() -> None:
    """UCX pads a pid to five places (`[gpu023:3333 :0:3423]`): its crash lines from processes with 4- and
    5-digit pids differ in length by one, read the same but for their numbers and padding, and stay apart."""
    from rankautopsy.sources.lines import unwrap

    line = "[{host}:{pid:<5}:0:{tid}] Caught signal 11 (Segmentation fault: address not mapped to object at address "
    line += "0x{a:x})"
    pids = [(29733, 29762), (29892, 29959), (3333, 3423), (3310, 3403), (3297, 3387), (29727, 29741), (29814, 29875),
            (3265, 3349), (3260, 3355), (29808, 29866), (3320, 3405)]  # fmt: skip
    raw = [(n, line.format(host="gpu024" if pid > 9999 else "gpu023", pid=pid, tid=tid, a=0x7FC023B50760 + n))
           for n, (pid, tid) in enumerate(pids, 1)]  # fmt: skip
    assert len({len(text) for _, text in raw}) == 2
    assert unwrap(raw, Profile()) == raw


def test_a_record_as_wide_as_the_wrap_does_not_hide_the_wrap() -> None:
    """Only the rows a wrap is read from are compared: a whole record that happens to be as wide, with a
    twin a digit shorter, says nothing about them."""
    from rankautopsy.sources.lines import unwrap

    width = 70
    wrapped = []
    for i in range(6):
        text = f"[rank{i}]: RuntimeError: peer {i} closed the connection while we waited for the all_reduce to finish"
        wrapped += [text[:width], text[width:]]
    step = "2026-11-29 07:00:00,000 INFO [rank 0] step {} loss 2.3108 lr 3e-4 grad"
    records = [step.format(10).ljust(width, "m")[:width], step.format(9).ljust(width - 1, "m")[: width - 1]]
    assert [len(r) for r in records] == [width, width - 1]
    joined = unwrap(list(enumerate(records + wrapped)), Profile())
    assert len(joined) == 2 + 6 and joined[2][1] == wrapped[0] + wrapped[1]


def test_lines_padded_to_the_terminals_width_are_whole() -> None:
    """Lightning's model summary pads each row to the terminal's width: rows of one width, each followed
    by a line that starts no record, and yet nothing was cut."""
    from rankautopsy.sources.lines import unwrap

    rows = [f"{name} params: {n}" for n in (554, 12, 0, 9_000) for name in ("Trainable", "Non-trainable", "Total")]
    raw = list(enumerate(f"{row:<80}" if i % 2 == 0 else row for i, row in enumerate(rows)))
    assert unwrap(raw, Profile()) == raw


def test_a_ruler_at_the_wrap_width_is_whole_and_the_wrap_is_still_joined() -> None:
    from rankautopsy.sources.lines import unwrap

    width = 80
    rulers = [f" Captured {what} call ".center(width, "-") for what in ("stdout", "stderr", "log")]
    rulers += ["_ " * (width // 2), "=" * width]  # pytest's `_ _ _` ends in a space
    wrapped = []
    for i in range(6):
        text = f"[rank{i}]: RuntimeError: peer {i} closed the connection while we waited for the all_reduce to end, ok"
        wrapped += [text[:width], text[width:]]
    lines = [line for ruler in rulers for line in (ruler, "rank 2 step 0")] + wrapped
    joined = unwrap(list(enumerate(lines)), Profile())
    assert [text for _, text in joined[: 2 * len(rulers)]] == lines[: 2 * len(rulers)]
    assert len(joined) == 2 * len(rulers) + 6


_WRAP_HEADS = st.sampled_from(["", "[rank1]: ", "[default0]:", "[1,0]<stdout>:", "2026-11-29 07:00 ", "  ", "x"])
_WRAP_LINES = st.lists(
    st.tuples(_WRAP_HEADS, st.sampled_from([5, 64, 64, 64, 80]), st.sampled_from(["a", " ", ":", "Error:", "]"])),
    min_size=8,
    max_size=40,
).map(lambda items: [(head + body * width)[: max(width, len(head))] for head, width, body in items])


@given(_WRAP_LINES)
@settings(max_examples=300)
def test_unwrap_reads_a_lines_head_once_for_all_lines_that_share_it(texts: list[str]) -> None:
    from rankautopsy.sources import lines

    raw = list(enumerate(texts))
    for line in texts:  # what the shared head says holds for the whole line
        assert not (lines._starts_record(line[: lines._HEAD]) and lines._continues(line, Profile()))
    fast = lines.unwrap(raw, Profile())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(lines, "_HEAD", 10**9)  # the head is the whole line: one check per line
        assert lines.unwrap(raw, Profile()) == fast


def test_a_stray_nul_from_a_crash_does_not_make_a_log_binary() -> None:
    from rankautopsy.sources.read import looks_binary

    log = b"".join(b"[default0]:2026-12-01 11:12:45.559 | INFO | step %d\n" % i for i in range(100))
    assert not looks_binary(log[:2000] + b"\x00" + log[2000:])
    assert looks_binary(bytes(range(256)) * 8)  # a checkpoint-like blob
    assert looks_binary(log[:500] + b"\x00" * 64 + log[500:])


_PIECE = st.one_of(
    st.builds(lambda n, m: f" {n}%|{'#' * m}| {n}/100 [00:01<00:02, 3.2it/s]", st.integers(0, 100), st.integers(0, 3)),
    st.sampled_from(["step 5 loss 2.0", "x", "Traceback (most recent call last):", "", "   "]),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_PIECE, max_size=3 * PIECES))
def test_a_redrawn_line_keeps_the_ends_of_its_runs(parts: list[str]) -> None:
    line = "\r".join(parts)
    every, kept = pieces(line), segments(line)
    if len(every) <= PIECES:
        assert kept == every
        return
    assert kept[0] == every[0] and kept[-1] == every[-1]
    shape = [re.sub("[0-9]", "", p) for p in every]
    want = [p for i, p in enumerate(every) if i in (0, len(every) - 1) or shape[i] not in (shape[i - 1], shape[i + 1])]
    assert set(want) <= set(kept)  # every piece that differs from a neighbour in more than numbers is kept
    it = iter(every)
    assert all(piece in it for piece in kept)  # in order, nothing invented


def test_a_spool_is_read_by_each_reader_at_its_own_offset() -> None:
    """Piped bytes spooled once; readers (the head sniff, the scan, forked workers) never share a position."""
    data = b"".join(b"line %d\n" % i for i in range(100_000))
    held = spool(io.BytesIO(data[1000:]), 10**9, head=data[:1000])
    assert held.size == len(data)
    a, b = held.stream(), held.stream()
    got_a, got_b = [], []
    while True:
        x, y = a.read(7777), b.read(3333)  # interleaved
        got_a.append(x or b"")
        got_b.append(y or b"")
        if not x and not y:
            break
    assert b"".join(got_a) == data and b"".join(got_b) == data
    assert spool(io.BytesIO(data), 1000).size == 1000  # the limit holds


def test_a_long_line_repeated_word_for_word_is_no_terminal_wrap() -> None:
    from rankautopsy.sources.lines import unwrap

    warning = "(PlacementGroupCleaner pid=12343) Failed to query Ray Train Controller actor state; retrying"
    raw = list(enumerate([warning, "and this line is its own record", warning, "another record", warning] * 3))
    assert unwrap(raw, Profile()) == raw
    wrapped = [f"{n:03d} " + "x" * 76 for n in range(8)]  # distinct rows of one width, each cut mid-word
    raw = list(enumerate(line for row in wrapped for line in (row, "rest of that record")))
    assert len(unwrap(raw, Profile())) == len(wrapped)


# ---- pytest's failure marker ----

CTX = ClockContext(UTC, 2026)

MARKED_REPORT = [
    "    def test_all_reduce(self) -> None:",
    ">       mp.spawn(_work, args=(4, 29533), nprocs=4, join=True)",
    "E       torch.multiprocessing.spawn.ProcessRaisedException: ",
    "E       ",
    "E       -- Process 2 terminated with the following error:",
    "E       Traceback (most recent call last):",
    'E         File "/job/test_dist.py", line 14, in _work',
    'E           raise ValueError(f"bad sample 4242 in shard {rank}")',
    "E       ValueError: bad sample 4242 in shard 2",
    "",
    "/home/user/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py:211: ProcessRaisedException",
]


def test_pytests_marker_comes_off_each_run_of_marked_lines_keeping_their_own_indent() -> None:
    out = [text for _, text in unmark_pytest(list(enumerate(MARKED_REPORT)))]
    assert out[:2] == MARKED_REPORT[:2] and out[9:] == MARKED_REPORT[9:]
    assert out[2:9] == [
        "torch.multiprocessing.spawn.ProcessRaisedException: ",
        "",
        "-- Process 2 terminated with the following error:",
        "Traceback (most recent call last):",
        '  File "/job/test_dist.py", line 14, in _work',
        '    raise ValueError(f"bad sample 4242 in shard {rank}")',
        "ValueError: bad sample 4242 in shard 2",
    ]


@given(
    st.lists(st.tuples(st.integers(0, 8), st.text(alphabet="Ex:-(", max_size=10)), max_size=30),
    st.sampled_from([3, 7, 11]),
)
def test_unmarking_takes_off_the_marker_and_the_indent_its_block_shares(block: list[tuple[int, str]], pad: int) -> None:
    lines = [" " * indent + text for indent, text in block]
    raw = list(
        enumerate(
            ["E" + " " * pad + line if text else "E" for line, (_, text) in zip(lines, block, strict=True)] + ["x"]
        )
    )
    shared = min((indent for indent, text in block if text), default=0)
    out = unmark_pytest(raw)
    assert [n for n, _ in out] == [n for n, _ in raw]
    assert [t for _, t in out] == [
        line[shared:] if text else "" for line, (_, text) in zip(lines, block, strict=True)
    ] + ["x"]


def test_a_stream_is_a_pytest_report_by_its_banner_or_by_marked_lines() -> None:
    source = Source("pytest.log", StreamKind.CONSOLE)
    banner = ["=" * 29 + " test session starts " + "=" * 30, "platform linux -- Python 3.11.7"]
    assert LineParser(source, CTX, banner).pytest
    assert LineParser(source, CTX, MARKED_REPORT).pytest
    assert not LineParser(source, CTX, ["E1203 13:54:11.894 glog line", "Error: E   x", "E"] * 5).pytest


@given(
    st.sampled_from(["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]),
    st.integers(1, 12),
    st.integers(1, 28),
    st.sampled_from(
        [
            "[core.py:502] ",
            "multiproc_executor.py:135] ",
            "[gpu_model_runner.py:2011] ",
            "[v1/executor/multiproc_executor.py:932] ",
        ]
    ),
    st.sampled_from(
        [
            "",
            "(VllmWorker TP3 pid=4101) ",
            "(VllmWorker rank=3 pid=4101) ",
            "(Worker_TP3_EP3 pid=4101) ",
            "(Worker_TP3_DCP1_EP3 pid=4101) ",
            "(Worker_DP1_TP3_EP7 pid=4101) ",
            "(EngineCore_DP0 pid=77) ",
        ]
    ),
    st.sampled_from(["Traceback (most recent call last):", '  File "/x.py", line 1, in f', "step 3", ""]),
    st.sampled_from(["", "(LLMRayActor pid=585804) "]),
)
def test_vllms_header_is_a_layer_whose_date_is_the_lines_stamp(
    level: str, month: int, day: int, where: str, worker: str, message: str, relay: str
) -> None:
    """Under Ray's relay too: the engine's own `(Name pid=N) ` in a Ray actor's output is a second layer."""
    stamp = f"{level} {month:02d}-{day:02d} 11:01:29"
    text, prefix = strip_prefixes(f"{relay}{worker}{stamp} {where}{message}")
    assert text == message and prefix.stamp == stamp
    assert prefix.rank == (3 if "Worker" in worker and "_DP" not in worker else None)  # its rank in the engine
    assert prefix.pid == (int(worker.split("pid=")[1][:-2]) if worker else 585804 if relay else None)
    assert strip_prefixes(f"{message} {stamp} {where}")[1].stamp is None  # only at the head of a line


@given(
    st.sampled_from("FEWIVC"),
    st.integers(1, 12),
    st.sampled_from(["torch/distributed/elastic/multiprocessing/api.py:836] ", "common_distributed.py:939] [0/0] "]),
    st.sampled_from(["", "[rank1]:", "[default0]:"]),
    st.sampled_from(["Traceback (most recent call last):", '  File "/x.py", line 1, in f', "ValueError: bad", ""]),
)
def test_torchs_logging_header_is_a_layer_whose_date_is_the_lines_stamp(
    level: str, month: int, where: str, tag: str, message: str
) -> None:
    """torch._logging repeats `E0207 07:54:31.862000 4712 path:N] ` on every line of a record (a logged
    traceback), under PyTorch's `[rankN]:` or the tee's `[default0]:`."""
    stamp = f"{level}{month:02d}07 07:54:31.862000"
    text, prefix = strip_prefixes(f"{tag}{stamp} 4712 {where}{message}")
    assert text == message and prefix.stamp == stamp
    assert prefix.rank == (1 if tag == "[rank1]:" else None)
    assert strip_prefixes(f"{message} {stamp} 4712 {where}")[1].stamp is None  # only at the head of a line
    c10 = f"[{stamp} ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout"
    assert strip_prefixes(c10)[0] == c10  # c10's C++ header is no layer: one line a record


def test_docker_composes_container_column_is_a_layer_where_it_is_the_streams_shape() -> None:
    lines = [f"llm-server-1  | INFO 11-08 11:01:{s:02d} [loggers.py:116] throughput {s}" for s in range(8)]
    lines += ["llm-server-1  | Traceback (most recent call last):", 'router-1      |   File "/x.py", line 1, in f']
    profile = sniff_profile(lines)
    assert profile.compose
    assert strip_prefixes(lines[-2], profile=profile) == ("Traceback (most recent call last):", Prefix())
    assert strip_prefixes(lines[-1], profile=profile)[0] == '  File "/x.py", line 1, in f'
    table = [f"| {n} | {n * 2} |" for n in range(10)]  # a Markdown table's cells are no containers
    assert not sniff_profile(table).compose
    rows = [f"row{n} | value {n}" for n in range(40)]  # a table of many names is no compose output
    assert not sniff_profile(rows).compose
    assert strip_prefixes(lines[0])[0] == lines[0]  # nor is the column stripped off a stream not shaped so


def test_an_excerpt_quoted_in_markdown_is_read_without_its_quote_marks() -> None:
    quoted = [
        "> [rank0]: Traceback (most recent call last):",
        '>   File "/x.py", line 1, in f',
        ">",
        "> [rank0]: ValueError: x",
    ]
    profile = sniff_profile(quoted)
    assert profile.indent == "> "
    assert strip_prefixes(quoted[0], profile=profile) == ("Traceback (most recent call last):", Prefix(rank=0))
    assert strip_prefixes(quoted[1], profile=profile)[0] == '  File "/x.py", line 1, in f'
    code = [
        ">     [rank1]: step 3",
        ">     [rank1]: step 4",
        ">     [rank1]: RuntimeError: boom",
    ]  # a code block in a quote
    assert sniff_profile(code).indent == ">     "
    assert not sniff_profile(["not all", "> of these", "lines are quoted"]).indent
    lazy = ["> 2025-10-18 15:15:23 [rank2]: Traceback (most recent call last):", "2025-10-18 15:15:23 step", "x"]
    profile = sniff_profile(lazy)  # Markdown quotes the lines under a quoted first line too: its marker alone
    assert profile.indent == "> "
    assert strip_prefixes(lazy[0], profile=profile)[0] == "Traceback (most recent call last):"
    assert strip_prefixes("> a later line", profile=profile)[0] == "a later line"


def test_untimed_records_whose_numbers_keep_their_width_are_no_wrap() -> None:
    """RETURNN's step lines have no stamp and one width (every number keeps its digits): each is followed
    by another that reads the same but for its numbers, which a wrapped line's rest never does. Joined,
    the excepthook's line after them would be lost into the last one."""
    from rankautopsy.sources.lines import unwrap

    steps = [
        f"ep 272 train, step {339 + i // 4}, ce 0.4{i % 10}9, ctc_4 1.077, fer 0.077, mem_usage:cuda:{i % 4} 7.5GB"
        for i in range(11)
    ]
    raw = list(
        enumerate(
            [
                *steps,
                "Unhandled exception <class 'RuntimeError'> in thread <_MainThread(MainThread, started 1)>, proc 2834.",
            ]
        )
    )
    assert unwrap(raw, Profile()) == raw


@given(
    st.lists(st.text(st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), max_size=40), max_size=30)
)
def test_dockers_json_records_decode_to_one_line_each(texts: list[str]) -> None:
    """Whatever each record holds (escapes, quotes, colour codes, `\\r`), one line out per record, in order."""
    stamp = "2026-11-29T09:24:11.123456789Z"
    data = "".join(
        json.dumps({"log": t + "\n", "stream": "stderr", "time": stamp}, separators=(",", ":")) + "\n"
        for t in ["first", *texts]
    ).encode()
    stream = open_bytes(None, data)
    out = io.BufferedReader(stream).read().decode("utf-8", "surrogateescape")  # type: ignore[arg-type]
    assert out.split("\n")[:-1] == [f"{stamp} stderr F {t}" for t in ["first", *texts]]


_BAR = " 40%|####      | 2/5 [00:01<00:02,  1.50it/s, loss=0.31]"


@pytest.mark.parametrize(
    ("line", "want"),
    [
        (_BAR + "[rank1]: Traceback (most recent call last):", [_BAR, "[rank1]: Traceback (most recent call last):"]),
        ("\r" + _BAR + "\r" + _BAR + "W1014 03:47:41.1 1 api.py:9] x", [_BAR, _BAR, "W1014 03:47:41.1 1 api.py:9] x"]),
        ("T: 0%| | 2/13 [00:16<2:57:59,  8.2s/it]Traceback", ["T: 0%| | 2/13 [00:16<2:57:59,  8.2s/it]", "Traceback"]),
        ("Epoch 0: 0/? [00:00, ?it/s]ERROR: boom", ["Epoch 0: 0/? [00:00, ?it/s]", "ERROR: boom"]),
        (_BAR, [_BAR]),  # nothing after it
        (_BAR + " done", [_BAR + " done"]),  # tqdm's own postfix space: the bar's line
        ("[00:01<00:02] [rank1]: x", ["[00:01<00:02] [rank1]: x"]),  # no rate: no bar
        (
            "[    ] 0/500, elapsed: 0s, ETA:Traceback (most recent",
            ["[    ] 0/500, elapsed: 0s, ETA:", "Traceback (most recent"],
        ),
        (
            "[>> ] 5/500, 2.1 task/s, elapsed: 2s, ETA:   236s[rank1]: x",
            ["[>> ] 5/500, 2.1 task/s, elapsed: 2s, ETA:   236s", "[rank1]: x"],
        ),
        ("[>> ] 5/500, 2.1 task/s, elapsed: 2s, ETA:   236s", ["[>> ] 5/500, 2.1 task/s, elapsed: 2s, ETA:   236s"]),
    ],
)
def test_what_a_process_writes_after_a_progress_bar_is_a_line_of_its_own(line: str, want: list[str]) -> None:
    assert segments(line) == want
    assert clean_pieces(line, 1000) == "\n".join(want)  # what the scanner rescans is what the parser reads


@given(
    st.lists(
        st.sampled_from(["0: step 1", "12: loss 2.3", "srun: error: node1: task 3: Killed", "plain line"]), max_size=700
    ),
    st.sampled_from([0.6, 0.8, 1.0]),
)
def test_a_layer_is_the_streams_shape_by_its_share_of_lines_whatever_the_blocks(lines: list[str], share: float) -> None:
    """`_mostly` stops early block by block, and `_labelled` first asks whether any line has the label: both
    say what counting every line says."""
    label = re.compile(r"\d+: ")
    assert prefixes._mostly(lines, label, share) == (sum(bool(label.match(x)) for x in lines) >= share * len(lines))
    rest = [x for x in lines if not x.startswith(prefixes._SLURM_OWN)]
    counted = len(rest) >= 2 and sum(bool(label.match(x)) for x in rest) >= share * len(rest)
    assert prefixes._labelled(lines, label, prefixes._SLURM_OWN, share) == counted


def test_the_excepthooks_rank_tag_is_told_from_c10s() -> None:
    """`[rank2]: ` with a space is PyTorch's excepthook on an uncaught exception's report; `[rank0]:[E...` c10's."""
    assert strip_prefixes("[default2]:[rank2]: Traceback (most recent call last):")[1].hooked
    assert strip_prefixes("[rank3]: [rank3]:     return func(*args, **kwargs)")[1].hooked
    assert not strip_prefixes("[rank0]:[E1218 20:27:21.426415540 ProcessGroupNCCL.cpp:629] [Rank 0] Watchdog")[1].hooked
    assert not strip_prefixes("[default2]:Traceback (most recent call last):")[1].hooked


@pytest.mark.parametrize(
    ("line", "message", "rank"),
    [
        ("[2022-06-09T09:22:31.405194Z] 8de2ca81 || [0]:", "[0]:", None),
        ("[2024-02-27T21:35:32.106313Z] fa88a9df [rank=3] || ERROR: Traceback (most recent call last):",
         "Traceback (most recent call last):", 3),
        ("[2022-06-09T09:22:31.405Z] not a container || x", "not a container || x", None),
    ],
)  # fmt: skip
def test_determineds_trial_log_prefix_is_a_layer_with_its_rank(line: str, message: str, rank: int | None) -> None:
    """`[stamp] <container id[:8]>[ [rank=N]] || [LEVEL: ]` (Determined's trial logs), on a stamped stream."""
    stripped, prefix = strip_prefixes(line, profile=Profile(stamped=True))
    assert (stripped, prefix.rank) == (message, rank)
