"""The scan's shortcuts read less than the whole input; each must give the diagnosis reading it all gives.

Each test builds logs of the shape the shortcut is for (with Hypothesis: channels interleaved, messages of
several lines, blank lines, chained tracebacks, chunk boundaries anywhere), diagnoses them with the
shortcut and with it turned off, and compares the two diagnoses whole.
"""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankautopsy.pipeline import Options, diagnose
from rankautopsy.scan import selection
from rankautopsy.sources import read

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
        kind = draw(st.sampled_from(["stamped", "plain", "blank", "traceback", "traceback"]))
        if kind == "stamped":
            out.append(f"2026-11-30 03:00:{len(out) % 60:02d},000 INFO [train.py:9] rank {channel} step {len(out)}")
        elif kind == "plain":
            out.append(f"loading shard {len(out)}")
        elif kind == "blank":
            out.append("")
        else:
            frames = draw(st.integers(0, 3))
            out.append("Traceback (most recent call last):")
            for f in range(frames):
                out += [f'  File "/job/data.py", line {10 + f}, in load', "    sample = decode(raw)"]
            out.append(draw(st.sampled_from(["OSError: image file is truncated", "KeyError: 'x'", "StopIteration"])))
            out += draw(st.lists(st.sampled_from(_MESSAGE), max_size=6))  # a message of several lines
            out += draw(st.lists(st.sampled_from(_CONTINUED), max_size=4))
    return out


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
        return "rank3.log", draw(_blocks(3))
    streams = [draw(_blocks(c)) for c in range(2)]
    prefixes = [f"[rank{c}]: " if style == "rank" else f"[default{c}]:" for c in range(2)]
    return "console.log", _interleaved(draw, streams, prefixes)


def _read_all_tails(self: selection._Selection, line: object, blank: bool, number: int, only: object) -> None:
    """A tail that never ends early: it reads TRACEBACK_TAIL lines, as the scan did before tails."""
    for channel, tail in list(self.tails.items()):
        if tail.until < number:
            del self.tails[channel]
            self.traceback_until = max(self.traceback_until, tail.until)


def _both(monkeypatch: pytest.MonkeyPatch, folder: Path, shortcut: str, off: object) -> tuple[object, object]:
    options = Options(paths=[str(folder)], tz=UTC, jobs=1)
    fast = diagnose(options)
    with monkeypatch.context() as patched:
        patched.setattr(selection._Selection, shortcut, off)
        full = diagnose(options)
    return fast, full


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(log=_logs(), chunk=st.sampled_from([0, 256, 1024]))
def test_a_traceback_tail_that_ends_early_gives_the_diagnosis_of_the_whole_tail(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, log: tuple[str, list[str]], chunk: int
) -> None:
    name, lines = log
    folder = tmp_path_factory.mktemp("tail")
    (folder / name).write_text("".join(line + "\n" for line in lines))
    with monkeypatch.context() as patched:  # per example: the fixture is shared by all of them
        if chunk:  # chunk boundaries inside windows and tails; the context keeps the whole log in view, as
            patched.setattr(read, "CHUNK", chunk)  # its last 2,000 lines are at full size (where each rank's
            # last stamped line is looked for)
        fast, full = _both(patched, folder, "_tail_reads", _read_all_tails)
    assert fast == full


def test_a_tail_ends_at_the_first_stamped_line_after_the_exception(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Caught tracebacks followed by stamped records: only the first record after each is read."""
    caught = ["Traceback (most recent call last):", '  File "/job/data.py", line 84, in load', "OSError: truncated"]
    stamped = [f"2026-11-30 03:00:{i:02d},000 INFO [train.py:9] rank 5 step {i}" for i in range(40)]
    (tmp_path / "rank5.log").write_text("".join(line + "\n" for line in [*stamped, *caught, *stamped]))
    taken: list[int] = []
    real = selection._Selection._take
    monkeypatch.setattr(selection._Selection, "_take", lambda s, v, start, n: taken.append(n) or real(s, v, start, n))
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
    (tmp_path / "console.log").write_text("".join(line + "\n" for line in lines))
    fast, full = _both(monkeypatch, tmp_path, "_tail_reads", _read_all_tails)
    assert fast == full
