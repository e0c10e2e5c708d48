"""The log shapes that made the scanner slow or wrong (benchmarks/gen_hurting.py makes them big):
each is diagnosed right, and the scan does the work a line needs, not more."""

from __future__ import annotations

import io
from datetime import UTC
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rankautopsy.model import Cause, Outcome
from rankautopsy.pipeline import Options, diagnose
from rankautopsy.rulepacks.loader import load_rules
from rankautopsy.scan import selection
from rankautopsy.scan.matcher import compile_rules, facts_of
from rankautopsy.scan.prefilter import prefilter
from rankautopsy.sources import read
from rankautopsy.sources.read import ChunkReader

TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/job/train.py", line 230, in train',
    "    batch = next(loader)",
    "ValueError: bad sample 4242",
]


def _steps(rank: int, count: int, prefix: str = "") -> list[str]:
    return [
        f"{prefix}2026-11-30 03:00:{i % 60:02d},000 INFO [train.py:212] rank {rank} step {i} loss 2.5"
        for i in range(count)
    ]


def _write(folder: Path, rank: int, lines: list[str]) -> None:
    (folder / f"rank{rank}.log").write_text("".join(line + "\n" for line in lines))


def test_torchruns_rank_template_prefix_is_read_on_every_line(tmp_path: Path) -> None:
    """TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE='[${rank}]:' prefixes every line with the global rank."""
    for rank in range(3):
        tail = [f"[{rank}]:{t}" for t in TRACEBACK] if rank == 1 else []
        _write(tmp_path, rank, _steps(rank, 200, prefix=f"[{rank}]:") + tail)
    result = diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    assert result.verdict.outcome is Outcome.FIRST_DEATH
    assert result.verdict.first_death is not None
    assert (result.verdict.first_death.rank, result.verdict.first_death.cause) == (1, Cause.PYTHON_EXCEPTION)
    assert all(r.last_step == 199 for r in result.ranks)  # the stamps behind the prefix were read


def test_a_numbered_list_is_not_taken_for_a_rank_prefix(tmp_path: Path) -> None:
    lines = [*_steps(0, 50), "[1]: first item", "[2]: second item", *TRACEBACK]
    _write(tmp_path, 0, lines)
    result = diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    assert result.verdict.first_death is not None and result.verdict.first_death.rank == 0


@pytest.mark.parametrize(
    ("pattern", "line", "matches"),
    [
        (r"^[ \t]*\[(?P<idx>[0-9]+)\]:[ \t]*$", b"[5]:2026-11-30 03:00:00,000 INFO step 3\n", False),
        (r"^[ \t]*\[(?P<idx>[0-9]+)\]:[ \t]*$", b"  [5]:  \n", True),
        (r"^[ \t]*\[(?P<idx>[0-9]+)\]:[ \t]*$", b"[5]:\rnext piece\n", True),
        (r"Killed$", b"Killed by the kernel\n", False),
    ],
)
def test_a_line_end_anchor_is_kept_in_the_prefilter(pattern: str, line: bytes, matches: bool) -> None:
    import regex

    assert (regex.search(prefilter(pattern), line) is not None) is matches


def test_a_gap_before_the_line_end_is_split_off_so_the_line_end_is_searched_with_the_literal() -> None:
    """`[0]:` is on every line of a log prefixed `[default0]:`; `[0]:\\n` is not."""
    split = prefilter(r"^[ \t]*\[(?P<idx>[0-9]+)\]:[ \t]*$")
    assert split.startswith(b"(?:\\x5b[0-9]+\\x5d\\x3a[\\x0a\\x0d]|")
    assert prefilter(r"[ \t]*$") == b"[\\x0a\\x0d]"  # nothing in front to search with: unchanged


@given(st.text(alphabet="[]:05 \tx\r\n", max_size=24))
def test_the_split_gap_selects_the_same_lines(line: str) -> None:
    import regex

    joined = rb"\x5b[0-9]+\x5d\x3a[\x09\x20]*[\x0a\x0d]"
    split = prefilter(r"^[ \t]*\[(?P<idx>[0-9]+)\]:[ \t]*$")
    data = line.encode() + b"\n"
    assert (regex.search(split, data) is None) is (regex.search(joined, data) is None)


def test_a_prefilter_starts_at_its_longest_literal() -> None:
    """`] NCCL INFO ` is on most lines of an NCCL_DEBUG=INFO log; `- Init COMPLETE` only on the line sought."""
    init = r"\] NCCL INFO (?:\w+ )?comm 0x[0-9a-f]+ rank (?P<r>[0-9]+) nranks [0-9]+ - Init COMPLETE"
    assert prefilter(init) == b"\\x20\\x2d\\x20Init\\x20COMPLETE"
    assert prefilter(r"abc [0-9]+ def") == b"abc\\x20[0-9]+\\x20def"  # equal runs: the first
    assert prefilter(r"[0-9]+ ab [0-9]+ abcd") == b"\\x20abcd"


_PARTS = st.sampled_from(
    [
        ("ab", ["ab"]),
        ("abcd", ["abcd"]),
        ("[0-9]+", ["7", "42"]),
        (" ", [" "]),
        ("x(?:yz)?", ["x", "xyz"]),
        (r"\w+", ["q", "ab1"]),
        ("] NCCL INFO ", ["] NCCL INFO "]),
    ]
)


@given(parts=st.lists(st.tuples(_PARTS, st.integers(0, 1)), min_size=1, max_size=7), lead=st.text("ab 0", max_size=4))
def test_a_prefilter_finds_every_line_its_pattern_matches(
    parts: list[tuple[tuple[str, list[str]], int]], lead: str
) -> None:
    import re

    import regex

    pattern = "".join(part for (part, _), _ in parts)
    line = lead + "".join(examples[pick % len(examples)] for (_, examples), pick in parts)
    assert re.search(pattern, line) is not None
    assert regex.search(prefilter(pattern), line.encode() + b"\n") is not None


def test_a_large_repeat_bound_is_dropped_from_the_prefilter() -> None:
    assert b"{0,255}" not in prefilter(r'host "(?P<host>[^"\\]{0,255})"')
    assert b"{2,4}" in prefilter(r"x[0-9]{2,4}y")


def test_an_overlong_line_keeps_its_head_and_its_last_piece() -> None:
    bar = "\r".join(f"{i % 100:3d}%|####      | {i}/99999 [00:10<00:10]" for i in range(4000))
    text = f"before\n{bar}\rTraceback (most recent call last):\nValueError: x\n".encode()
    reader = ChunkReader(io.BytesIO(text), chunk=16 * 1024, context=4096)
    lines = b"".join(bytes(c.buf[c.start : c.end]) for c in reader).split(b"\n")
    assert reader.clipped == 1
    assert lines[0] == b"before" and lines[2] == b"ValueError: x"
    assert lines[1].startswith(b"  0%|") and lines[1].endswith(b"\rTraceback (most recent call last):")
    assert len(lines[1]) <= 8 * 1024 + 64  # the middle was not kept


def test_the_traceback_after_an_epoch_long_tqdm_line_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(read, "CHUNK", 256 * 1024)  # the line is longer than a chunk
    monkeypatch.setattr(read, "CONTEXT", 64 * 1024)
    bar = "\r".join(f"Epoch 3: {i % 100:3d}%|#####     | {i}/99999 [01:02<00:10, 9.8it/s]" for i in range(20_000))
    for rank in range(2):
        lines = _steps(rank, 100) + ([bar + "\r" + TRACEBACK[0], *TRACEBACK[1:]] if rank == 1 else [])
        _write(tmp_path, rank, lines)
    result = diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    assert result.verdict.first_death is not None
    assert (result.verdict.first_death.rank, result.verdict.first_death.cause) == (1, Cause.PYTHON_EXCEPTION)
    assert any("read as their head and their last" in n for n in result.verdict.notes)


@pytest.mark.parametrize("size", [1_000, 200_000])  # read whole, and read in chunks
def test_a_context_line_repeated_with_the_same_facts_is_kept_three_times_and_counted(tmp_path: Path, size: int) -> None:
    tag = "node00:52003:52043 [3] NCCL INFO"
    lines = []
    for step in range(size // 2):
        lines += [
            f"2026-11-30 03:00:{step % 60:02d},000 INFO [train.py:212] step {step} loss 2.5",
            f"{tag} cudaDriverVersion 12040",
        ]
    _write(tmp_path, 3, [*lines, *TRACEBACK])
    result = diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    identity = [e for e in result.events if e.rule == "nccl.process-identity"]
    assert len(identity) == 3
    assert identity[0].facts["repeats"] == str(size // 2)
    assert result.verdict.first_death is not None and result.verdict.first_death.host == "node00"  # still joined


def test_a_caught_and_logged_exception_the_rank_lived_past_is_not_its_death(tmp_path: Path) -> None:
    caught = ["2026-11-30 03:00:05,000 ERROR [data.py:90] could not decode sample 7, skipping", *TRACEBACK[:3]]
    caught.append("OSError: image file is truncated (3 bytes not processed)")
    steps = _steps(0, 40)
    _write(tmp_path, 0, [*steps[:5], *caught, *steps[5:]])
    late = [f"2026-11-30 03:01:{i:02d},000 INFO [train.py:212] rank 1 step {i} loss 2.5" for i in range(40)]
    _write(tmp_path, 1, [*late, *TRACEBACK])
    result = diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    assert result.verdict.first_death is not None
    assert (result.verdict.first_death.rank, result.verdict.first_death.cause) == (1, Cause.PYTHON_EXCEPTION)


CAUGHT = [
    "2026-11-30 03:00:38,000 ERROR [data.py:90] could not decode sample 7, skipping",
    *TRACEBACK[:3],
    "OSError: image file is truncated (3 bytes not processed)",
]
STEP_39 = "2026-11-30 03:00:39,000 INFO [train.py:212] rank 0 step 39 loss 2.5"


@pytest.mark.parametrize(
    ("after", "died"),
    [
        # caught, one step (the stamped line that bounds it), then a different, fatal exception
        ([*CAUGHT, STEP_39, *TRACEBACK], "ValueError: bad sample 4242"),
        # fatal, and the stdout the crash flushed after it: nothing of the rank follows
        ([*CAUGHT, STEP_39], "OSError: image file is truncated (3 bytes not processed)"),
        # fatal, an atexit handler's traceback, and then the flushed stdout
        ([*CAUGHT, *TRACEBACK, STEP_39], "OSError: image file is truncated (3 bytes not processed)"),
    ],
)
def test_a_step_at_the_time_that_bounds_an_exception_shows_it_was_lived_past_only_before_another_cause(
    tmp_path: Path, after: list[str], died: str
) -> None:
    """The step under the caught exception is the line its time is bounded by, so it is not later in
    time; a process dies once, so another exception of the rank after that step shows the first was
    caught. Without one, the step may be stdout a crash flushed late: the first stays the death."""
    _write(tmp_path, 0, [*_steps(0, 39), *after])
    _write(tmp_path, 1, _steps(1, 40))
    result = diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    assert result.verdict.first_death is not None
    assert (result.verdict.first_death.rank, result.verdict.first_death.detail) == (0, died)


@pytest.mark.parametrize(
    "budget",
    [
        10_000,  # 300 windows of ~20 lines fit (400-line windows would not)
        2_000,  # they do not: past the budget only the latest window keeps its lines
    ],
)
def test_a_traceback_window_ends_where_the_traceback_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: int
) -> None:
    """Each caught traceback used to take its 400 following lines, until the selection was full and the
    last, fatal traceback was read without its exception line; and past the budget it must still be read
    to its exception line."""

    monkeypatch.setattr(selection, "MAX_SELECTED", budget)
    monkeypatch.setattr(read, "CHUNK", 64 * 1024)
    monkeypatch.setattr(read, "CONTEXT", 16 * 1024)
    caught = ["ERROR [data.py:90] could not decode a sample, skipping", *TRACEBACK[:3], "OSError: truncated"]
    lines: list[str] = []
    for block in range(300):
        step = f"2026-11-30 03:{block // 60:02d}:{block % 60:02d},000 INFO [train.py:212] rank 5 step {block} loss 2.5"
        lines += [step] * 40 + caught
    tail = [f"2026-11-30 03:05:0{i},000 INFO [train.py:212] rank 5 step {300 + i} loss 2.5" for i in range(3)]
    _write(tmp_path, 5, [*lines, *tail, *TRACEBACK])
    _write(tmp_path, 6, _steps(6, 50))
    result = diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    assert result.verdict.first_death is not None
    assert result.verdict.first_death.detail == "ValueError: bad sample 4242"


@pytest.mark.parametrize(("size", "remembered"), [(2_000, 4096), (120_000, 4096), (120_000, 2)])
def test_repeats_counted_without_a_full_parse_give_the_full_parses_diagnosis(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int, remembered: int
) -> None:
    """NCCL identity lines of two communicators and two prefixes, stamped and not, around a traceback
    window: counting a repeat from its message alone (remembered per distinct line, the memory full
    and cleared over and over in the last case) must change nothing the full parse would give."""
    monkeypatch.setattr(selection, "COUNTED_LINES", remembered)
    lines: list[str] = []
    for i in range(size // 4):
        gpu = i % 2
        lines += [
            f"[default{gpu}]:2026-11-30 03:00:{i % 60:02d},000 INFO [train.py:212] step {i} loss 2.5",
            f"[default{gpu}]:node00:5200{gpu}:5204{gpu} [{gpu}] NCCL INFO cudaDriverVersion 12040",
            f"node00:52009:52049 [{gpu}] NCCL INFO comm 0x55d{gpu} rank {gpu} nRanks 2 nNodes 1 localRanks 2 "
            f"localRank {gpu} MNNVL 0",
            f"[default{gpu}]:node00:5200{gpu}:5204{gpu} [{gpu}] NCCL INFO Init COMPLETE",
        ]
        if i == size // 8:
            lines += [f"[default1]:{t}" for t in TRACEBACK[:3]] + ["[default1]:OSError: caught and logged"]
    _write(tmp_path, 0, [*lines, *(f"[default1]:{t}" for t in TRACEBACK)])
    taken: list[int] = []  # lines parsed whole (`_take`), per run
    real = selection._Selection._take
    monkeypatch.setattr(selection._Selection, "_take", lambda *a, **k: taken.append(a[3]) or real(*a, **k))
    fast = diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    parsed = len(taken)
    monkeypatch.setattr(selection._Selection, "_counted", lambda *_: False)  # no line counted, none tallied
    full = diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    assert len(taken) - 2 * parsed > size // 8 or size < 10_000  # counted from their message alone (read in chunks)
    assert fast == full
    assert any(int(e.facts.get("repeats", 0)) > 100 for e in fast.events)


def test_lines_differing_only_in_0x_numbers_are_read_once_unless_a_rule_captured_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A communicator's address and id change on every `Init COMPLETE` line: such lines are parsed once
    per shape, and counted as the full parse counts them. A host name holding `0x1f` is captured by the
    identity rule: lines of three such hosts stay three repeats, never one."""
    lines: list[str] = []
    for i in range(6_000):
        gpu = i % 2
        lines += [
            f"2026-11-30 03:00:{i % 60:02d},000 INFO [train.py:212] step {i} loss 2.5",
            f"node00:5200{gpu}:5204{gpu} [{gpu}] NCCL INFO comm 0x{0x55D0 + i:x} rank {gpu} nranks 2 cudaDev {gpu}"
            f" nvmlDev {gpu} busId 1b000 commId 0x{i * 7919:x} - Init COMPLETE",
            f"gpu0x{i % 3:x}:5200{gpu}:5204{gpu} [{gpu}] NCCL INFO cudaDriverVersion 12040",
        ]
    _write(tmp_path, 0, [*lines, *TRACEBACK])
    parsed, keyed = [], []
    real = selection._Selection._read_counted
    monkeypatch.setattr(selection._Selection, "_read_counted", lambda *a: parsed.append(1) or real(*a))
    real_keys = selection._Selection._counted_keys
    monkeypatch.setattr(selection._Selection, "_counted_keys", lambda *a: keyed.append(1) or real_keys(*a))
    fast = diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    assert 0 < len(parsed) < 1_000  # not once per Init COMPLETE line
    assert 0 < len(keyed) < 1_000  # once tallied, a line alike is counted without its rules' keys
    monkeypatch.setattr(selection._Selection, "_counted", lambda *_: False)
    full = diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    assert fast == full
    counts = [(e.host, int(e.facts["repeats"])) for e in fast.events if "repeats" in e.facts]
    gpus = [(h, n) for h, n in counts if h and h.startswith("gpu")]
    assert sorted(h for h, _ in gpus) == sorted(f"gpu0x{i}" for i in range(3) for _ in (0, 1))
    assert all(n == 1_000 for _, n in gpus)  # each host and GPU: 1 line in 6


_COUNTABLE_EXAMPLES = [
    (rule.id, example.line)
    for rule in load_rules()
    if selection._counts_repeats(rule)
    for example in rule.match_examples
    if "0x" in example.line
]


@pytest.mark.parametrize(("rule_id", "line"), _COUNTABLE_EXAMPLES)
@given(numbers=st.lists(st.integers(0, 2**64), min_size=8, max_size=8))
def test_a_countable_rules_facts_hold_whatever_0x_numbers_a_line_has_where_none_was_captured(
    rule_id: str, line: str, numbers: list[int]
) -> None:
    """What `_counted_keys` takes for granted of every built-in rule whose repeats are counted."""
    compiled = next(c for c in compile_rules(load_rules()) if c.rule.id == rule_id)
    m = compiled.trusted.search(line)
    assert m is not None
    if not selection._shape_safe(m):
        return
    changed = iter(numbers)
    other = selection._HEX_TEXT.sub(lambda _: f"0x{next(changed):x}", line)
    assert (n := compiled.trusted.search(other)) is not None
    assert facts_of(n) == facts_of(m)


def test_countable_rules_have_examples_with_0x_numbers() -> None:
    assert {rule for rule, _ in _COUNTABLE_EXAMPLES} >= {"nccl.init-complete", "pytorch.c10-backtrace-cut-top"}


def test_an_assembly_does_not_read_on_past_lines_the_scan_left_unread() -> None:
    """A traceback whose frames were left unread (past the selection's budget) must not take the
    exception line of a later traceback for its own."""
    from rankautopsy.diagnosis.assemble import assemble_traceback
    from rankautopsy.model import StreamKind
    from rankautopsy.sources.discover import Source
    from rankautopsy.sources.lines import Line, build_stream

    texts = [(10, TRACEBACK[0]), (11, TRACEBACK[1]), (90, TRACEBACK[2]), (91, "OSError: a later one")]
    stream = build_stream(Source("rank0.log", StreamKind.RANK_LOG), [Line(n, t, 0) for n, t in texts], 100)
    assert assemble_traceback(stream, 0).facts.get("exc_type") == "OSError"  # read whole: no gap known
    stream.gaps = [2]  # lines 12-89 unread
    assert "exc_type" not in assemble_traceback(stream, 0).facts


def _letters(i: int) -> str:
    return "".join(chr(ord("a") + int(d)) for d in str(i))


@pytest.mark.parametrize("skip", [True, False])
@pytest.mark.parametrize("chunk", [0, 8 * 1024])
def test_past_the_budget_distinct_tracebacks_are_cut_off_counted_and_never_misread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kept_tracebacks: list[int], chunk: int, skip: bool
) -> None:
    """A rank that logs a caught traceback per bad sample, each with its own message, fills the selection:
    past it, a traceback is cut off (never given a later one's exception line), cut-off ones are kept a
    few per channel and counted, and the fatal one at the end is still read whole. Without the `skip` of
    windows that would be freed at once, each window is read and then freed by the next: a header whose
    lines were freed must not read on into the lines kept after them."""
    monkeypatch.setattr(selection, "MAX_SELECTED", 400)
    monkeypatch.setattr(selection, "DISTINCT_CAUGHT", 10_000)  # else most are counted before the budget is met
    if not skip:
        monkeypatch.setattr(selection._Selection, "_cut_off_past_budget", lambda self, view, hit_lines: hit_lines)
    if chunk:
        monkeypatch.setattr(read, "CHUNK", chunk)
        monkeypatch.setattr(read, "CONTEXT", chunk // 4)
    lines: list[str] = []
    for i in range(600):
        stamp = f"2026-11-30 03:{i // 60:02d}:{i % 60:02d},000"
        lines += [
            f"{stamp} INFO [train.py:212] rank 5 step {i} loss 2.5",
            f"{stamp} ERROR [data.py:90] could not decode sample {i}, skipping",
            *TRACEBACK[:3],
            *TRACEBACK[1:3],
            f"OSError: cannot identify image file '{_letters(i)}.jpg'",  # distinct in more than its numbers
        ]
    step = "2026-11-30 03:11:00,000 INFO [train.py:212] rank 5 step 600 loss 2.5"  # the fatal one's window
    _write(tmp_path, 5, [*lines, step, *TRACEBACK])  # frees the last caught one's body: it is cut off
    _write(tmp_path, 6, _steps(6, 50))
    result = diagnose(Options(paths=[str(tmp_path)], tz=UTC, jobs=1))
    assert result.verdict.first_death is not None
    assert result.verdict.first_death.detail == "ValueError: bad sample 4242"
    tracebacks = [e for e in result.events if e.rule == "python.traceback" and e.rank == 5]
    for e in tracebacks:
        if "exc_msg" in e.facts and e.facts["exc_type"] == "OSError":
            (exception,) = e.lines
            assert exception.where.line == e.where.line + 5  # its own, five lines under its header
            assert exception.text == lines[e.where.line - 1 + 5]
    cut = [e for e in tracebacks if e.facts.get("cut_off") == "1"]
    assert cut, "past a budget of 400 lines, 600 tracebacks cannot all be read"
    chunks = 1 + (tmp_path / "rank5.log").stat().st_size // chunk if chunk else 1
    if skip:
        assert max(kept_tracebacks) <= 400 // 5 + 2 * (selection.REPEATS + 1) + chunks  # not one per traceback
    counted = sum(int(e.facts.get("repeats", "1")) for e in tracebacks if e.facts.get("repeats")) + sum(
        1 for e in tracebacks if "repeats" not in e.facts
    )
    assert counted >= 600  # every caught one is still counted, the fatal one besides
