"""The scan's shortcuts read less than the whole input; each must give the diagnosis reading it all gives.

Each test builds logs of the shape the shortcut is for (with Hypothesis: channels interleaved, messages of
several lines, blank lines, chained tracebacks, chunk boundaries anywhere), diagnoses them with the
shortcut and with it turned off, and compares the two diagnoses whole.
"""

from __future__ import annotations

import dataclasses
from datetime import UTC
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankautopsy import pipeline
from rankautopsy.model import Diagnosis, StreamKind
from rankautopsy.pipeline import Options, diagnose
from rankautopsy.scan import matcher, selection
from rankautopsy.scan.literals import TWINS
from rankautopsy.scan.matcher import Budget, CompiledRule, facts_of, match_line
from rankautopsy.sources import read
from rankautopsy.sources.lines import LineParser

_LAST = "2026-11-30 03:01:00,000 INFO [train.py:9] done"
_MESSAGE = ["  with more detail on a line of its own", "the message goes on here", "and on"]
_CONTINUED = [
    *_MESSAGE,
    "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1)",
    "----------------------------------------",
    "During handling of the above exception, another exception occurred:",
    "Traceback (most recent call last):",
    "[Previous line repeated 996 more times]",
    "-- Process 1 terminated with the following error:",
    "",
]


@st.composite
def _blocks(draw: st.DrawFn, channel: int) -> list[str]:
    """One channel's lines: log records, stamped or not, blank lines, and tracebacks whose exception
    message goes on over lines of every kind an assembly stops at or reads on."""
    out = [f"2026-11-30 03:00:00,000 INFO [train.py:9] rank {channel} step 0"]  # each rank known from its own lines
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["stamped", "plain", "blank", "traceback", "traceback", "ipython", "worker"]))
        if kind == "stamped":
            out.append(f"2026-11-30 03:00:{len(out) % 60:02d},000 INFO [train.py:9] rank {channel} step {len(out)}")
        elif kind == "plain":
            out.append(f"loading shard {len(out)}")
        elif kind == "blank":
            out.append("")
        elif kind == "ipython":  # frame headers unindented: the scan's window closes at the first
            out += [  # one, and its assembly reads on to the exception line
                "ValueError                                Traceback (most recent call last)",
                "<command-1357939202606131> in <module>",
                "----> 1 trainer.fit(model)",
                "",
                "File ~/venv/lib/python3.11/site-packages/torch/multiprocessing/spawn.py:170, in join(self)",
                "--> 170     raise ValueError(",
                "",
                "ValueError: bad sample 17",
            ]
        elif kind == "worker":
            out += _worker(draw)
        else:
            frames = draw(st.integers(0, 3))
            out.append("Traceback (most recent call last):")
            for f in range(frames):
                out += [f'  File "/job/data.py", line {10 + f}, in load', "    sample = decode(raw)"]
            out.append(draw(st.sampled_from(["OSError: image file is truncated", "KeyError: 'x'", "StopIteration"])))
            out += draw(st.lists(st.sampled_from(_MESSAGE), max_size=6))  # a message of several lines
            out += draw(st.lists(st.sampled_from(_CONTINUED), max_size=4))
    return out


def _worker(draw: st.DrawFn) -> list[str]:
    """A DataLoader worker's exception re-raised by its rank: the worker's traceback, of any length and
    maybe chained or cut, is the rest of the message (torch._utils.ExceptionWrapper)."""
    frames = [f'  File "/job/data.py", line {f}, in load' for f in range(draw(st.integers(0, 40)))]
    out = ["Traceback (most recent call last):", *frames[: draw(st.integers(0, 2))]]
    out.append("ValueError: Caught ValueError in DataLoader worker process 1.")
    out += ["Original Traceback (most recent call last):", *frames]
    if draw(st.booleans()):
        out += ["KeyError: 'label'", "", "During handling of the above exception, another exception occurred:", ""]
        out += ["Traceback (most recent call last):", *frames[:3]]
    return out + draw(st.sampled_from([["ValueError: corrupt sample 62"], [], ["", "ValueError: corrupt sample 7"]]))


def _interleaved(draw: st.DrawFn, streams: list[list[str]], prefixes: list[str]) -> list[str]:
    """The channels' lines in runs of any length: one channel's message may go on a dozen lines later."""
    lines: list[str] = []
    queues = [list(s) for s in streams]
    while any(queues):
        i = draw(st.sampled_from([k for k, q in enumerate(queues) if q]))
        for _ in range(min(len(queues[i]), draw(st.integers(1, 14)))):
            lines.append(prefixes[i] + queues[i].pop(0))
    return lines


@st.composite
def _logs(draw: st.DrawFn) -> tuple[str, list[str]]:
    style = draw(st.sampled_from(["file", "rank", "default"]))
    if style == "file":
        return "rank3.log", [*draw(_blocks(3)), _LAST]
    streams = [draw(_blocks(c)) for c in range(2)]
    prefixes = [f"[rank{c}]: " if style == "rank" else f"[default{c}]:" for c in range(2)]
    return "console.log", _interleaved(draw, streams, prefixes) + [f"{p}{_LAST}" for p in prefixes]


def _small_chunks(patched: pytest.MonkeyPatch, chunk: int) -> None:
    """Chunks of `chunk` bytes (the reader's first buffer holds CONTEXT + CHUNK, so the context shrinks
    too), with a context that holds these small logs whole, as 1 MiB holds what a walk to a stamped
    line reads (64 KiB) at full size."""
    patched.setattr(read, "CHUNK", chunk)
    patched.setattr(read, "CONTEXT", 16 * 1024)


def _read_all_tails(self: selection._Selection, line: object, blank: bool, number: int) -> None:
    """A tail that never ends early: it reads TRACEBACK_TAIL lines, as the scan did before tails."""
    for channel, tail in list(self.tails.items()):
        if tail.until < number:
            del self.tails[channel]
            self.traceback_until = max(self.traceback_until, tail.until)


def _both(monkeypatch: pytest.MonkeyPatch, folder: Path, shortcut: str, off: object) -> tuple[Diagnosis, Diagnosis]:
    options = Options(paths=[str(folder)], tz=UTC, jobs=1)
    fast = diagnose(options)
    with monkeypatch.context() as patched:
        patched.setattr(selection._Selection, shortcut, off)
        full = diagnose(options)
    return fast, full


def _tails_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: list[str]) -> Diagnosis:
    """The diagnosis of a console of these lines, the same with tails that end early as with whole ones."""
    (tmp_path / "console.log").write_text("".join(line + "\n" for line in lines))
    fast, full = _both(monkeypatch, tmp_path, "_tail_reads", _read_all_tails)
    assert fast == full
    return fast


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(log=_logs(), chunk=st.sampled_from([0, 256, 1024]))
def test_a_traceback_tail_that_ends_early_gives_the_diagnosis_of_the_whole_tail(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, log: tuple[str, list[str]], chunk: int
) -> None:
    name, lines = log
    folder = tmp_path_factory.mktemp("tail")
    (folder / name).write_text("".join(line + "\n" for line in lines))
    with monkeypatch.context() as patched:  # per example: the fixture is shared by all of them
        if chunk:  # chunk boundaries inside windows and tails
            _small_chunks(patched, chunk)
        fast, full = _both(patched, folder, "_tail_reads", _read_all_tails)
    assert fast == full


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(log=_logs(), chunk=st.sampled_from([0, 256, 1024]))
def test_the_lines_a_scan_keeps_give_the_diagnosis_of_every_line(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, log: tuple[str, list[str]], chunk: int
) -> None:
    """Windows, tails and a worker's traceback under its re-raise: the scan keeps the lines that decide
    each event (the reference reads the stream whole, as it does a terminal's capture). Only the evidence
    lines may differ: a message that goes on past its tail's TRACEBACK_TAIL lines is read to there."""
    name, lines = log
    folder = tmp_path_factory.mktemp("kept")
    (folder / name).write_text("".join(line + "\n" for line in lines))
    options = Options(paths=[str(folder)], tz=UTC, jobs=1)
    with monkeypatch.context() as patched:
        if chunk:
            _small_chunks(patched, chunk)
        scanned = diagnose(options)
        patched.setattr(LineParser, "sequential", property(lambda self: True))
        whole = diagnose(options)
    assert _decided(scanned) == _decided(whole)


def test_a_message_going_on_past_the_tail_among_other_ranks_lines_is_read_alike_either_way(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the property above: rank 1's message goes on 14 lines below its exception line, past the
    tail the scan reads, among rank 0's; spawn's relay header two lines further on was taken for the
    child's report that follows a relayed traceback, but only where the line between them was unread."""
    r0, r1 = "[rank0]: ", "[rank1]: "
    lines = [
        r1 + "2026-11-30 03:00:08,000 INFO [train.py:9] rank 1 step 8",
        *(r1 + x for x in _TRACEBACK),
        *(r0 + x for x in _TRACEBACK),
        *[r0 + "  with more detail on a line of its own"] * 9,
        *[r1 + "  with more detail on a line of its own"] * 3,
        r1 + "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1)",
        r1 + "-- Process 1 terminated with the following error:",
        r0 + "2026-11-30 03:01:00,000 INFO [train.py:9] done",
    ]
    (tmp_path / "console.log").write_text("".join(line + "\n" for line in lines))
    options = Options(paths=[str(tmp_path)], tz=UTC, jobs=1)
    scanned = diagnose(options)
    monkeypatch.setattr(LineParser, "sequential", property(lambda self: True))
    whole = diagnose(options)
    assert _decided(scanned) == _decided(whole)
    assert [e.role.value for e in scanned.events if e.rule == "python.traceback"] == ["cause", "cause"]


_TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/job/data.py", line 10, in load',
    "    sample = decode(raw)",
    "OSError: image file is truncated",
]


def _decided(d: Diagnosis) -> tuple[object, ...]:
    f = d.verdict.first_death
    return (
        d.verdict.outcome,
        f and (f.rank, f.cause, f.detail, f.time),
        [(e.rank, e.where.line, e.rule, e.cause, e.role, e.time, e.facts) for e in d.events],
    )


def test_a_tail_ends_at_the_first_stamped_line_after_the_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Caught tracebacks followed by stamped records: only the first record after each is read."""
    caught = ["Traceback (most recent call last):", '  File "/job/data.py", line 84, in load', "OSError: truncated"]
    stamped = [f"2026-11-30 03:00:{i:02d},000 INFO [train.py:9] rank 5 step {i}" for i in range(40)]
    (tmp_path / "rank5.log").write_text("".join(line + "\n" for line in [*stamped, *caught, *stamped]))
    taken: list[int] = []
    real = selection._Selection._take
    monkeypatch.setattr(
        selection._Selection, "_take", lambda s, v, start, n, **kw: taken.append(n) or real(s, v, start, n, **kw)
    )
    diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    exception_line = len(stamped) + len(caught)
    assert exception_line + 1 in taken
    assert not [n for n in taken if exception_line + 1 < n <= exception_line + selection.TRACEBACK_TAIL]


def test_a_message_that_goes_on_after_another_ranks_lines_is_read_as_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rank 0's message goes on 21 lines after its exception line, past its own tail but inside rank 1's,
    whose message ends early: rank 1's tail reads its other lines all the same, as an assembly of rank 0
    reads on into them."""
    lines = [
        "[rank0]: 2026-11-30 03:00:00,000 INFO [train.py:9] rank 0 step 0",
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/job/data.py", line 10, in load',
        "[rank0]: OSError: image file is truncated",
        *(f"[rank1]: 2026-11-30 03:00:{i:02d},000 INFO [train.py:9] rank 1 step {i}" for i in range(12)),
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/job/data.py", line 10, in load',
        "[rank1]: OSError: image file is truncated",
        *["[rank1]:   with more detail on a line of its own"] * 5,
        "[rank0]:   with more detail on a line of its own",
        "[rank1]: 2026-11-30 03:00:30,000 INFO [train.py:9] rank 1 step 30",
        "[rank0]: 2026-11-30 03:00:30,000 INFO [train.py:9] rank 0 step 30",
    ]
    _tails_agree(tmp_path, monkeypatch, lines)


def test_another_ranks_blank_line_does_not_end_a_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by the test above in CI: rank 0's blank line, between rank 1's DataLoader wrapper line and
    the worker's `Original Traceback`, ended rank 1's tail too; an assembly reads its own channel only."""
    lines = [
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/job/data.py", line 0, in load',
        "[rank1]: ValueError: Caught ValueError in DataLoader worker process 1.",
        "[rank0]: Traceback (most recent call last):",
        *(f'[rank0]:   File "/job/data.py", line {i}, in load' for i in range(3)),
        "[rank0]: ValueError: corrupt sample 61",
        "[rank0]: ",
        "[rank1]: Original Traceback (most recent call last):",
        *(f'[rank1]:   File "/job/data.py", line {i}, in load' for i in range(10)),  # past what the window read
        "[rank1]: ValueError: corrupt sample 62",
        "[rank0]: 2026-11-30 03:01:00,000 INFO [train.py:9] done",
        "[rank1]: 2026-11-30 03:01:00,000 INFO [train.py:9] done",
    ]
    fast = _tails_agree(tmp_path, monkeypatch, lines)
    assert [e.facts.get("exc_msg") for e in fast.events if e.rank == 1 and e.facts.get("exc_msg")] == [
        "corrupt sample 62"
    ]


# Found by the test above: a tail that ended in a replay (a header on lines a window read already), and
# a window past it that a replayed header's 400 lines would have read on (3c063d9 ended short in both);
# and a message that goes on over another channel's lines a tail left unread (b1b6767 stopped at them).
_REPLAYED = [
    [
        "[rank0]: 2026-11-30 03:00:00,000 INFO [train.py:9] rank 0 step 0",
        "[rank1]: 2026-11-30 03:00:00,000 INFO [train.py:9] rank 1 step 0",
        "[rank1]: Traceback (most recent call last):",
        "[rank1]: OSError: image file is truncated",
        "[rank1]: Traceback (most recent call last):",
        "[rank1]: OSError: image file is truncated",
        "[rank1]: 2026-11-30 03:00:05,000 INFO [train.py:9] rank 1 step 5",
        "[rank1]: Traceback (most recent call last):",
        '[rank1]:   File "/job/data.py", line 10, in load',
        "[rank1]:     sample = decode(raw)",
        "[rank1]: OSError: image file is truncated",
        "[rank0]: 2026-11-30 03:00:01,000 INFO [train.py:9] rank 0 step 1",
        "[rank0]: Traceback (most recent call last):",
        "[rank0]: OSError: image file is truncated",
        "[rank0]:   with more detail on a line of its own",
        "[rank0]: 2026-11-30 03:00:05,000 INFO [train.py:9] rank 0 step 5",
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/job/data.py", line 10, in load',
        "[rank0]:     sample = decode(raw)",
        '[rank0]:   File "/job/data.py", line 11, in load',
        "[rank0]:     sample = decode(raw)",
        "[rank0]: OSError: image file is truncated",
        "[rank0]:   with more detail on a line of its own",
        "[rank0]:   with more detail on a line of its own",
        "[rank1]:   with more detail on a line of its own",
        "[rank1]:   with more detail on a line of its own",
        "[rank1]:   with more detail on a line of its own",
        "[rank1]:   with more detail on a line of its own",
        "[rank1]:   with more detail on a line of its own",
        "[rank1]:   with more detail on a line of its own",
        "[rank1]:   with more detail on a line of its own",
        "[rank1]: 2026-11-30 03:00:17,000 INFO [train.py:9] rank 1 step 17",
        "[rank1]: 2026-11-30 03:00:18,000 INFO [train.py:9] rank 1 step 18",
        "[rank0]:   with more detail on a line of its own",
        "[rank0]:   with more detail on a line of its own",
        "[rank0]: 2026-11-30 03:01:00,000 INFO [train.py:9] done",
        "[rank1]: 2026-11-30 03:01:00,000 INFO [train.py:9] done",
    ],
    [
        "[rank0]: 2026-11-30 03:00:00,000 INFO [train.py:9] rank 0 step 0",
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/job/data.py", line 10, in load',
        "[rank0]:     sample = decode(raw)",
        "[rank0]: OSError: image file is truncated",
        "[rank1]: 2026-11-30 03:00:00,000 INFO [train.py:9] rank 1 step 0",
        "[rank1]: Traceback (most recent call last):",
        "[rank1]: OSError: image file is truncated",
        "[rank1]:   with more detail on a line of its own",
        "[rank1]:   with more detail on a line of its own",
        "[rank1]: 2026-11-30 03:00:05,000 INFO [train.py:9] rank 1 step 5",
        "[rank1]: 2026-11-30 03:00:06,000 INFO [train.py:9] rank 1 step 6",
        "[rank1]: 2026-11-30 03:00:07,000 INFO [train.py:9] rank 1 step 7",
        "[rank1]: 2026-11-30 03:00:08,000 INFO [train.py:9] rank 1 step 8",
        "[rank1]: 2026-11-30 03:00:09,000 INFO [train.py:9] rank 1 step 9",
        "[rank0]:   with more detail on a line of its own",
        "[rank0]:   with more detail on a line of its own",
        "[rank0]:   with more detail on a line of its own",
        "[rank0]:   with more detail on a line of its own",
        "[rank0]: 2026-11-30 03:01:00,000 INFO [train.py:9] done",
        "[rank1]: 2026-11-30 03:01:00,000 INFO [train.py:9] done",
    ],
    [
        "[rank0]: 2026-11-30 03:00:00,000 INFO [train.py:9] rank 0 step 0",
        "[rank1]: 2026-11-30 03:00:00,000 INFO [train.py:9] rank 1 step 0",
        "[rank1]: Traceback (most recent call last):",
        *['[rank1]:   File "/job/data.py", line 10, in load', "[rank1]:     sample = decode(raw)"] * 3,
        "[rank1]: OSError: image file is truncated",
        *["[rank1]:   with more detail on a line of its own"] * 3,
        "[rank0]: Traceback (most recent call last):",
        '[rank0]:   File "/job/data.py", line 10, in load',
        "[rank0]:     sample = decode(raw)",
        "[rank0]: OSError: image file is truncated",
        *["[rank0]:   with more detail on a line of its own"] * 5,
        "[rank0]: loading shard 10",
        "[rank0]: 2026-11-30 03:00:11,000 INFO [train.py:9] rank 0 step 11",
        "[rank0]: 2026-11-30 03:00:12,000 INFO [train.py:9] rank 0 step 12",
        "[rank0]: Traceback (most recent call last):",
        "[rank0]: OSError: image file is truncated",
        *["[rank0]:   with more detail on a line of its own"] * 2,
        "[rank1]:   with more detail on a line of its own",
        *[f"[rank1]: 2026-11-30 03:00:{i},000 INFO [train.py:9] rank 1 step {i}" for i in range(13, 17)],
        "[rank0]: 2026-11-30 03:01:00,000 INFO [train.py:9] done",
        "[rank1]: 2026-11-30 03:01:00,000 INFO [train.py:9] done",
    ],
]


@pytest.mark.parametrize("lines", _REPLAYED)
def test_a_tail_that_ends_in_a_replay_gives_the_diagnosis_of_the_whole_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: list[str]
) -> None:
    _tails_agree(tmp_path, monkeypatch, lines)


_CAUGHT = [
    ("OSError: image file is truncated", '  File "/job/data.py", line 84, in load'),
    ("OSError: image file is truncated", '  File "/job/codec.py", line 12, in decode'),
    ("KeyError: 'label'", '  File "/job/data.py", line 90, in load'),
    ("OSError: image file is truncated (35 bytes not processed)", '  File "/job/data.py", line 84, in load'),
    ("OSError: image file is truncated (7 bytes not processed)", '  File "/job/data.py", line 84, in load'),
    ("Error2: the same message", '  File "/job/data.py", line 84, in load'),
    ("Error3: the same message", '  File "/job/data.py", line 84, in load'),
    (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        '  File "/job/train.py", line 7, in step',
    ),
]


_OVER = [
    "2026-11-30 03:00:00,000 ERROR [data.py:90] skipping a sample",
    "2026-11-30 03:00:00,000 ERROR [data.py:90] skipping a sample",
    "",
    "Exception ignored in: <function f>",
    "During handling of the above exception, another exception occurred:",
]
_UNDER = [
    "2026-11-30 03:00:00,700 WARNING [data.py:91] skipped",
    "2026-11-30 03:00:00,700 WARNING [data.py:91] skipped",
    "",
    "after it",
]


@st.composite
def _caught_log(draw: st.DrawFn) -> list[str]:
    """One rank's log: step records and, between them, caught tracebacks that repeat (the same exception
    from the same or other frames), some chained, some under `Exception ignored in`, some followed by
    an unstamped line or a blank one, and at the end the one that killed it."""
    lines = ["2026-11-30 03:00:00,000 INFO [train.py:9] rank 2 step 0"]
    for i in range(draw(st.integers(1, 40))):
        lines += [f"2026-11-30 03:{i // 60:02d}:{i % 60:02d},500 INFO [train.py:9] rank 2 step {i}"] * draw(
            st.integers(0, 3)
        )
        exception, frame = draw(st.sampled_from(_CAUGHT))
        lines += [draw(st.sampled_from(_OVER)), "Traceback (most recent call last):", frame, "    x = f()", exception]
        lines.append(draw(st.sampled_from(_UNDER)))
    return [*lines, "Traceback (most recent call last):", '  File "/job/train.py", line 1, in main', "ValueError: bad"]


def _no_thinning(self: selection._Selection, view: object, hit_lines: set[int]) -> set[int]:
    return hit_lines


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_caught_log(), chunk=st.sampled_from([0, 512, 2048]), keys=st.sampled_from([0, 1]))
def test_tracebacks_counted_as_repeats_give_the_diagnosis_of_reading_each(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    lines: list[str],
    chunk: int,
    keys: int,
) -> None:
    """`keys`: with the number of tracebacks watched for repeats at 1, the others are read as any."""
    folder = tmp_path_factory.mktemp("repeats")
    (folder / "rank2.log").write_text("".join(line + "\n" for line in lines))
    (folder / "rank3.log").write_text("2026-11-30 03:00:00,000 INFO [train.py:9] rank 3 step 0\n")
    with monkeypatch.context() as patched:
        if keys:
            patched.setattr(selection, "TRACEBACK_KEYS", keys)
        if chunk:
            _small_chunks(patched, chunk)
        fast, full = _both(patched, folder, "_thin_tracebacks", _no_thinning)
    assert fast == full


# derandomized: a random run can draw the known divergence that the strict xfail below records
@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(lines=_caught_log(), chunk=st.sampled_from([0, 512, 2048]), cap=st.sampled_from([0, 1, 3]))
def test_caught_tracebacks_past_the_distinct_cap_counted_unread_give_the_verdict_of_reading_each(
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    lines: list[str],
    chunk: int,
    cap: int,
) -> None:
    """Past the first `cap` distinct caught tracebacks of a process, those its rank went on from are
    counted and not read: the verdict is the one reading each gives, the count is said, and every
    other event is the same (which repeats of a traceback are kept may differ)."""
    folder = tmp_path_factory.mktemp("distinct")
    (folder / "rank2.log").write_text("".join(line + "\n" for line in lines))
    (folder / "rank3.log").write_text("2026-11-30 03:00:00,000 INFO [train.py:9] rank 3 step 0\n")
    with monkeypatch.context() as patched:
        if chunk:
            _small_chunks(patched, chunk)
        full = diagnose(Options(paths=[str(folder)], tz=UTC, jobs=1))
        patched.setattr(selection, "DISTINCT_CAUGHT", cap)
        fast = diagnose(Options(paths=[str(folder)], tz=UTC, jobs=1))
    said = [n for n in fast.verdict.notes if "counted, not read" in n]
    assert dataclasses.replace(fast.verdict, notes=full.verdict.notes) == full.verdict
    counted = int(said[0].split(": ")[1].split(" ")[0].replace(",", "")) if said else 0
    tracebacks = [e for e in full.events if e.rule == "python.traceback"]
    assert len([e for e in fast.events if e.rule == "python.traceback"]) >= len(tracebacks) - counted - 3 * len(said)
    assert [e for e in fast.events if e.rule != "python.traceback"] == [
        e for e in full.events if e.rule != "python.traceback"
    ]


@pytest.mark.xfail(strict=True, reason="known: the cap's reading names another of the alike repeats")
def test_repeats_of_a_caught_traceback_after_the_last_step_are_named_alike_with_and_without_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the property above. Past the last step, the same traceback twice: the full reading thins
    the first of them away (a middle repeat: the first REPEATS and the latest are kept) and names the
    latest; under the cap, the repeats before the step are counted unread and the first after it is
    named. Same rank and cause; the evidence line and its time differ."""
    caught = [
        "2026-11-30 03:00:00,000 ERROR [data.py:90] skipping a sample",
        "Traceback (most recent call last):",
        '  File "/job/data.py", line 84, in load',
        "    x = f()",
        "OSError: image file is truncated",
        "2026-11-30 03:00:00,700 WARNING [data.py:91] skipped",
    ]
    lines = ["2026-11-30 03:00:00,000 INFO [train.py:9] rank 2 step 0", *caught * 3]
    lines += ["2026-11-30 03:00:03,500 INFO [train.py:9] rank 2 step 3", *caught * 2]
    lines += ["Traceback (most recent call last):", '  File "/job/train.py", line 1, in main', "ValueError: bad"]
    (tmp_path / "rank2.log").write_text("".join(line + "\n" for line in lines))
    (tmp_path / "rank3.log").write_text("2026-11-30 03:00:00,000 INFO [train.py:9] rank 3 step 0\n")
    full = diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    monkeypatch.setattr(selection, "DISTINCT_CAUGHT", 0)
    fast = diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    assert dataclasses.replace(fast.verdict, notes=full.verdict.notes) == full.verdict


def test_a_thousand_distinct_caught_tracebacks_past_the_cap_are_counted_in_a_note(tmp_path: Path) -> None:
    """A data loader that logs a different error for each bad sample and goes on: the first
    DISTINCT_CAUGHT are events, the others are counted in a note, and the fatal one is still read."""
    lines = []
    for i in range(1000):
        stamp = f"2026-11-30 03:{i // 60 % 60:02d}:{i % 60:02d}"
        lines += [
            f"{stamp},000 ERROR [data.py:90] could not decode sample {i}, skipping",
            "Traceback (most recent call last):",
            '  File "/job/data.py", line 84, in load',
            f"OSError: cannot identify image file '{''.join(chr(97 + int(d)) for d in str(i))}.jpg'",
            f"{stamp},500 INFO [train.py:9] rank 2 step {i} loss 2.5",
        ]
    lines += ["Traceback (most recent call last):", '  File "/job/train.py", line 1, in main', "ValueError: bad"]
    (tmp_path / "rank2.log").write_text("".join(line + "\n" for line in lines))
    (tmp_path / "rank3.log").write_text("2026-11-30 03:00:00,000 INFO [train.py:9] rank 3 step 0\n")
    result = diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    assert result.verdict.first_death is not None and result.verdict.first_death.rank == 2
    assert result.verdict.first_death.detail == "ValueError: bad"
    caught = [e for e in result.events if e.rule == "python.traceback" and e.facts.get("exc_type") == "OSError"]
    assert selection.DISTINCT_CAUGHT <= len(caught) <= selection.DISTINCT_CAUGHT + 1
    (note,) = [n for n in result.verdict.notes if "counted, not read" in n]
    assert f"{1000 - len(caught):,} more caught Python tracebacks" in note


@pytest.mark.parametrize("chunk", [0, 4096])  # one chunk, and about a hundred
@pytest.mark.parametrize("numbered", [False, True])
def test_a_caught_traceback_logged_a_thousand_times_is_read_once_a_chunk_and_kept_four_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept_tracebacks: list[int], chunk: int, numbered: bool
) -> None:
    """The first three and the last of a repeated caught traceback are kept; of the others, only the
    last of each chunk is read, and all are counted. Messages that differ only in their numbers (a
    sample's index, a size) repeat one another."""
    caught = [
        "2026-11-30 03:00:01,000 ERROR [data.py:90] could not decode a sample, skipping",
        "Traceback (most recent call last):",
        '  File "/job/data.py", line 84, in load',
    ]
    message = "OSError: image file is truncated" + (" ({} bytes not processed)" if numbered else "")
    step = "2026-11-30 03:00:02,000 INFO [train.py:9] rank 2 step 5"
    lines = [step]
    for i in range(1000):
        lines += [*caught, message.format(i * 7), step]
    lines += ["Traceback (most recent call last):", "ValueError: bad"]
    (tmp_path / "rank2.log").write_text("".join(line + "\n" for line in lines))
    if chunk:
        _small_chunks(monkeypatch, chunk)
    windows: list[int] = []
    real = selection._Selection._window
    monkeypatch.setattr(
        selection._Selection, "_window", lambda s, v, st, n, *a: windows.append(n) or real(s, v, st, n, *a)
    )
    result = diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    caught_events = [e for e in result.events if e.facts.get("exc_type") == "OSError"]
    assert len(caught_events) == 4
    assert caught_events[0].facts["repeats"] == "1000"
    assert caught_events[-1].facts["exc_msg"].endswith("6993 bytes not processed)" if numbered else "truncated")
    chunks = 1 + (tmp_path / "rank2.log").stat().st_size // chunk if chunk else 1
    # four caught and the fatal one, and at most one a chunk's end cuts (its repeat cannot be told there)
    assert 5 <= kept_tracebacks[0] <= 5 + chunks
    assert 5 <= len(windows) <= 5 + 2 * chunks  # the three first, the last of each chunk, the one it cuts


def _rules() -> list[CompiledRule]:
    return pipeline._load(Options(paths=[]))[0]


_EXAMPLES = sorted(
    {e.line for r in _rules() for e in r.rule.match_examples} | {t for r in _rules() for t in r.rule.no_match_examples}
)


def _every_rule_tried(text: str, rules: list[CompiledRule], kind: StreamKind) -> list[tuple[str, dict[str, str]]]:
    """`match_line` as it was: each rule's literals looked for in turn (its `may_match`)."""
    raw = text.encode("utf-8", "surrogateescape")
    lowered, twins = raw.lower(), any(twin in raw for twin in TWINS)
    budget = Budget()
    out = []
    for compiled in rules:
        found = compiled.literals
        hay = lowered if found is not None and found.folded else raw
        may = found is None or (found.folded and twins) or any(needle in hay for needle in found.needles)
        if compiled.applies_to(kind) and may and (m := budget.search(compiled, text)) is not None:
            out.append((compiled.rule.id, facts_of(m)))
    return out


@settings(max_examples=800, deadline=None)
@given(
    line=st.sampled_from(_EXAMPLES),
    cut=st.integers(0, 200),
    noise=st.text(alphabet="aſKİ :[]0x", max_size=6),
    twins=st.booleans(),
    kind=st.sampled_from(list(StreamKind)),
)
def test_a_line_is_classified_by_the_rules_whose_literals_it_holds_as_by_trying_each_rule(
    line: str, cut: int, noise: str, twins: bool, kind: StreamKind
) -> None:
    """`match_line` finds the rules to run from one table of every rule's literals (an exception line of
    each of thousands of caught tracebacks is classified): the rules every rule tried in turn finds,
    also where a letter is one of the non-ASCII ones a case-insensitive rule matches (`ſ`, `K`, `İ`)."""
    rules = _rules()
    text = line[:cut] + noise + line[cut:]
    if twins:
        text = text.translate(str.maketrans({"s": "ſ", "k": "K", "K": "K"}))
    got = [(h.rule.rule.id, h.facts) for h in match_line(text, rules, kind)]
    assert got == _every_rule_tried(text, rules, kind)
    with pytest.MonkeyPatch.context() as patched:  # a long line: each needle searched for, not looked up
        patched.setattr(matcher, "_GRAMS_UP_TO", 0)
        assert [(h.rule.rule.id, h.facts) for h in match_line(text, rules, kind)] == got
