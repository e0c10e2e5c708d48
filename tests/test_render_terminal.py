"""The terminal report: golden files at 80 and 120 columns, its shape, and its layout rules.

Goldens come from two kinds of input: hand-built diagnoses (tests/diagnoses.py) and real fixture logs
through the real pipeline, one case per outcome. Regenerate them with
`RANKAUTOPSY_UPDATE_GOLDEN=1 pytest tests/test_render_terminal.py` and review the diff.
"""

from __future__ import annotations

import dataclasses
import io
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

import pytest
from diagnoses import SCENARIOS, exception_diagnosis, span
from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len
from rich.console import Console
from test_render import GOLDEN, check_golden
from typer.testing import CliRunner

from rankautopsy.cli import app
from rankautopsy.model import (
    Cause,
    Confidence,
    Diagnosis,
    Event,
    Fate,
    FirstDeath,
    Location,
    Outcome,
    RankReport,
    Role,
    Verdict,
)
from rankautopsy.pipeline import Options, diagnose
from rankautopsy.render._labels import FateGroup, fate_counts, remediation_layers, summary_line
from rankautopsy.render.terminal import (
    Elided,
    _without_header,
    elide,
    make_console,
    render_terminal,
    report_lines,
    wrap,
)
from rankautopsy.rulepacks.loader import load_rules

ROOT = Path(__file__).resolve().parent.parent
WIDTHS = (80, 120)
WIDE = 10_000  # nothing wraps: the lines a report draws on purpose
FIXTURES = "fixtures"


# ---- the inputs ----


def _head(path: str, lines: int) -> bytes:
    return b"".join((ROOT / path).read_bytes().splitlines(keepends=True)[:lines])


# name -> (outcome, paths, --dmesg, stdin); run from the repository root, as a user would
FIXTURE_CASES: dict[str, tuple[Outcome, list[str], list[str], bytes | None]] = {
    "torchrun_raise": (Outcome.FIRST_DEATH, [f"{FIXTURES}/torchrun-raise-rank2/logs"], [], None),
    "torchrun_oom_dmesg": (
        Outcome.FIRST_DEATH,
        [f"{FIXTURES}/torchrun-sigkill-oom-rank1/logs"],
        [f"{FIXTURES}/torchrun-sigkill-oom-rank1/dmesg.txt"],
        None,
    ),
    "nccl_hang": (Outcome.HANG, [f"{FIXTURES}/nccl-hang-seqnum-rank5/logs"], [], None),
    # only the first node's log of the same hang: the culprit's node is missing
    "one_node_of_a_hang": (Outcome.UNDETERMINED, [f"{FIXTURES}/nccl-hang-seqnum-rank5/logs/node01.log"], [], None),
    "torchrun_clean": (Outcome.CLEAN, [f"{FIXTURES}/torchrun-clean-finish/logs"], [], None),
    # the console of the same clean job piped in while it ran (at step 6 of 8)
    "still_running": (
        Outcome.NO_FAILURE,
        ["-"],
        [],
        _head(f"{FIXTURES}/torchrun-clean-finish/logs/console.log", 24),
    ),
}


@cache
def fixture_diagnosis(name: str) -> Diagnosis:
    _, paths, dmesg, stdin = FIXTURE_CASES[name]
    cwd = Path.cwd()
    os.chdir(ROOT)  # the paths are relative, as a user at the repository root types them
    try:
        return diagnose(Options(paths=paths, dmesg=dmesg, stdin=stdin, tz=UTC))
    finally:
        os.chdir(cwd)


@cache
def builtin_titles() -> dict[str, str]:
    return {r.id: r.title for r in load_rules([])}


# the hand-built diagnoses name some rules that no pack has: their titles, as a pack would write them
HAND_TITLES = {
    "python.uncaught-exception": "Uncaught Python exception",
    "torchrun.child-failed": "torchrun's ChildFailedError table",
    "pytorch.training-complete": "Training finished on this rank",
    "gloo.connection-closed": "Gloo peer closed the connection",
    "kernel.oom-kill-constraint": "OOM-kill summary line (constraint, cgroup, victim pid)",
}


def hand_diagnosis(name: str) -> Diagnosis:
    return dataclasses.replace(SCENARIOS[name](), rule_titles={**builtin_titles(), **HAND_TITLES})


CASES: dict[str, Callable[[], Diagnosis]] = {
    **{name: (lambda name=name: hand_diagnosis(name)) for name in SCENARIOS},
    **{name: (lambda name=name: fixture_diagnosis(name)) for name in FIXTURE_CASES},
}
GOLDEN_IDS = [(name, width) for name in CASES for width in WIDTHS]


def render(d: Diagnosis, width: int, **kwargs: bool) -> str:
    out = io.StringIO()
    render_terminal(d, make_console(out, width, color=False), **kwargs)
    return out.getvalue()


def section(text: str, title: str) -> list[str]:
    """The lines under a heading, up to the next blank line."""
    lines = text.splitlines()
    start = lines.index(next(line for line in lines if line.startswith(title))) + 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return lines[start:end]


# ---- golden files ----


@pytest.mark.parametrize(("name", "width"), GOLDEN_IDS, ids=[f"{n}-{w}" for n, w in GOLDEN_IDS])
def test_terminal_golden(name: str, width: int) -> None:
    check_golden(f"{name}.{width}.txt", render(CASES[name](), width))


def test_every_golden_text_file_has_a_case() -> None:
    """No stale golden: each .txt here is one this module writes and compares."""
    expected = {f"{name}.{width}.txt" for name, width in GOLDEN_IDS}
    assert {p.name for p in GOLDEN.glob("*.txt")} == expected


def test_fixture_goldens_cover_every_outcome() -> None:
    assert {outcome for outcome, *_ in FIXTURE_CASES.values()} == set(Outcome)
    for name, (outcome, *_) in FIXTURE_CASES.items():
        assert fixture_diagnosis(name).verdict.outcome is outcome, name


def test_terminal_golden_colour() -> None:
    out = io.StringIO()
    console = Console(
        file=out,
        width=80,
        color_system="truecolor",
        force_terminal=True,
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=False,
        _environ={},  # NO_COLOR, TERM=dumb etc. of the test run must not change the golden
    )
    render_terminal(hand_diagnosis("python_exception"), console)
    check_golden("python_exception.ansi", out.getvalue())


# ---- layout rules, on every golden ----


def _lone_words(text: str) -> list[str]:
    """Lines that hold a single word (box and bullet characters aside)."""
    return [line.strip() for line in text.splitlines() if len(line.split()) == 1]


@pytest.mark.parametrize(("name", "width"), GOLDEN_IDS, ids=[f"{n}-{w}" for n, w in GOLDEN_IDS])
def test_no_word_is_left_alone_by_wrapping(name: str, width: int) -> None:
    """A line of one word is one the report draws on purpose (a `path:line`), never a wrapping artefact:
    it must be there when nothing wraps, too."""
    d = CASES[name]()
    golden = (GOLDEN / f"{name}.{width}.txt").read_text(encoding="utf-8")
    wrapped = [w for w in _lone_words(golden) if not w.endswith("…")]
    assert set(wrapped) <= set(_lone_words(render(d, WIDE))), wrapped


@pytest.mark.parametrize(("name", "width"), GOLDEN_IDS, ids=[f"{n}-{w}" for n, w in GOLDEN_IDS])
def test_the_report_fits_and_ends_with_the_verdict(name: str, width: int) -> None:
    d = CASES[name]()
    golden = (GOLDEN / f"{name}.{width}.txt").read_text(encoding="utf-8")
    lines = golden.rstrip("\n").splitlines()
    assert max(cell_len(line) for line in lines) <= width
    last = lines[-1]
    assert last.startswith(summary_line(d.verdict)), last
    assert last.startswith(d.verdict.outcome.value.split("_")[0]) or " died first: " in last or " hang culprit" in last
    assert d.verdict.confidence.value in last
    fd = d.verdict.first_death
    if d.verdict.outcome in (Outcome.FIRST_DEATH, Outcome.HANG) and fd is not None and fd.rank is not None:
        assert f"rank {fd.rank} " in last
    assert sum(line == last for line in lines) == 1  # the summary is said once, at the end


@pytest.mark.parametrize("name", list(CASES))
def test_one_screen_at_80_columns(name: str) -> None:
    """A CI log's reader sees the whole answer without scrolling far, whatever the number of ranks."""
    assert len(render(CASES[name](), 80).splitlines()) <= 60


# ---- the verdict block ----


def test_the_verdict_comes_first_with_its_decisive_line() -> None:
    d = fixture_diagnosis("torchrun_raise")
    lines = render(d, 80).splitlines()
    assert lines[0] == "Rank 2 (node01, pid 8862) died first: uncaught Python exception"
    at = lines.index("  console.log:44")  # relative to the common input directory, on its own line
    assert lines[at + 1].strip().startswith("ValueError: bad sample 100360 in shard")
    assert any(line.startswith("  read") and "fixtures/torchrun-raise-rank2/logs/" in line for line in lines)


def test_paths_are_relative_to_the_common_input_directory() -> None:
    text = render(fixture_diagnosis("torchrun_oom_dmesg"), 120)
    assert "  dmesg.txt:39" in text.splitlines()  # logs/ and the dmesg beside it: their parent is the base
    assert "see also    logs/console.log:32" in text
    assert "read        fixtures/torchrun-sigkill-oom-rank1/ — 2 files" in text
    text = render(fixture_diagnosis("nccl_hang"), 120)
    assert "  node02.log:103" in text.splitlines()
    assert "fixtures/nccl-hang-seqnum-rank5/logs/node02.log" not in text


def test_an_undetermined_verdict_says_what_to_fetch() -> None:
    text = render(fixture_diagnosis("one_node_of_a_hang"), 80)
    assert text.startswith("Undetermined: the job failed, but the first death cannot be named")
    assert "fetch next: the logs of rank(s) 4-7" in text


# ---- what the other ranks did ----


def test_other_ranks_one_line_per_group_of_the_same_fate() -> None:
    lines = section(render(fixture_diagnosis("torchrun_raise"), 120), "What the other ranks did")
    assert len(lines) == 2
    assert lines[0].startswith("  ranks 1, 3  collateral: peer lost at 09:24:12, step 5")
    assert lines[0].endswith("Gloo peer closed the connection")
    assert lines[1].startswith("  rank 0      torn down at 09:24:13, step 5")


def _many_ranks(world: int) -> Diagnosis:
    """A hang of `world` ranks: every rank but one timed out; a few hundred never logged an end."""
    culprit = world // 2
    events = [
        Event(
            rule="nccl.watchdog-timeout",
            cause=Cause.COLLECTIVE_TIMEOUT,
            role=Role.SYMPTOM,
            where=Location(f"logs/rank_{r}.log", 100),
            text=f"[Rank {r}] Watchdog caught collective operation timeout",
            rank=r,
            time=span("07:10:40"),
        )
        for r in range(world)
        if r != culprit and r % 37
    ]
    index = {e.rank: i for i, e in enumerate(events)}
    ranks = tuple(
        RankReport(
            rank=r,
            fate=Fate.FIRST_DEATH if r == culprit else Fate.COLLATERAL if r in index else Fate.RUNNING,
            host=f"node{r // 8:04d}",
            last_step=4520 if r == culprit else 4521,
            events=(index[r],) if r in index else (),
        )
        for r in range(world)
    )
    fd = FirstDeath(rank=culprit, cause=Cause.HANG, rule=None, method="lagging", time=span("07:00:40"))
    verdict = Verdict(outcome=Outcome.HANG, first_death=fd, confidence=Confidence.MEDIUM)
    return Diagnosis(verdict=verdict, ranks=ranks, events=tuple(events), inputs=())


def test_eight_thousand_ranks_are_groups_not_rows() -> None:
    d = _many_ranks(8000)
    text = render(d, 80)
    lines = section(text, "What the other ranks did")
    assert len(lines) == 2, lines
    # too many ranges for the column: how many, and their span (the JSON report lists them all)
    assert lines[0].startswith("  7,782 ranks in 1-7999  collateral: collective timeout at 07:10:40")
    assert lines[1].startswith("  217 ranks in 0-7992    no end logged, step 4521, on 217 hosts")
    few = section(render(_many_ranks(64), 120), "What the other ranks did")
    assert few[1].startswith("  ranks 0, 37  ")
    assert len(text.splitlines()) < 40
    assert render(d, 120).rstrip().splitlines()[-1].endswith("— 7,782 collateral, 217 no end logged")
    assert fate_counts(d.ranks) == "7,782 collateral, 217 no end logged"


# ---- the timeline ----


def test_the_timeline_shows_what_happened_not_traceback_headers_or_rule_ids() -> None:
    d = fixture_diagnosis("torchrun_raise")
    timeline = section(render(d, 120), "Timeline")
    assert not any("Traceback (most recent call last)" in line for line in timeline)
    assert any("rank 2" in line and "exception: ValueError: bad sample 100360" in line for line in timeline)
    assert any("torchrun saw a worker fail" in line for line in timeline)  # a rule's title
    rules = {e.rule for e in d.events} | {str(e.facts.get("classified_by")) for e in d.events}
    assert not any(rule in line for rule in rules for line in timeline)
    assert not any("W1129 09:24:13" in line for line in timeline)  # the glog header: its time has a column


def test_timeline_is_bounded_and_says_how_many_more() -> None:
    d = exception_diagnosis()
    events = tuple(
        Event(
            rule=f"r{i}",
            cause=Cause.CONTEXT,
            role=Role.CONTEXT,
            where=Location("console.log", i),
            text=f"line {i}",
            rank=0,
            time=span(f"07:20:{i:02d}"),
        )
        for i in range(40)
    )
    d = dataclasses.replace(d, events=d.events + events)
    timeline = section(render(d, 80), "Timeline")
    assert any("ValueError: bad sample 1234" in line for line in timeline)  # the first death is always kept
    elided = [int(m.group(1)) for line in timeline if (m := re.search(r"… +(\d+) more$", line))]
    assert len(timeline) - len(elided) == 8 and sum(elided) == 44 - 8  # 4 runs of the diagnosis, 40 added
    assert len(section(render(d, 80, verbose=True), "Timeline")) > 30


def _repeated_oom(tmp_path: Path, times: int) -> Diagnosis:
    """Rank 1 prints NCCL's `Cuda failure 'out of memory'` over and over (two packs read it as a CUDA OOM)."""
    steps = "".join(f"2026-11-29 07:00:0{s},000 INFO [rank 0] step {s}/100\n" for s in range(3))
    oom = "".join(
        f"2026-11-29 07:00:10,{i:03d} WARNING [rank 1] NCCL WARN Cuda failure 'out of memory'\n" for i in range(times)
    )
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "r.log").write_text(steps + oom)
    return diagnose(Options(paths=[str(tmp_path)]))


def test_a_line_repeated_by_the_culprit_is_one_row_that_counts_them_all(tmp_path: Path) -> None:
    d = _repeated_oom(tmp_path, 500)
    causes = [e for e in d.events if e.role is Role.CAUSE]
    assert len({e.where.line for e in causes}) == len(causes)  # one event per line, not one per pack
    assert causes[0].facts["repeats"] == "500"
    for width, count in ((140, "(and 499 more like it)"), (80, "(×500)")):
        rows = [line for line in section(render(d, width), "Timeline") if "CUDA OOM" in line]
        assert len(rows) == 1 and rows[0].endswith(count), rows
        assert "07:00:10,000 WARNING" not in rows[0]  # logging's header: the time has its column
    few = [line for line in section(render(_repeated_oom(tmp_path / "few", 2), 140), "Timeline") if "OOM" in line]
    assert len(few) == 1 and few[0].endswith("(and 1 more like it)")


def test_a_time_read_from_the_lines_around_an_event_is_marked(tmp_path: Path) -> None:
    """Own stamp: no mark. No stamp, between two stamped lines: `~`. No stamped line after it: `≥`
    (it may have come any time later). The legend names only the marks shown."""
    tb = ["Traceback (most recent call last):", '  File "t.py", line 1, in <module>']
    (tmp_path / "rank_0.log").write_text("\n".join([
        "2026-11-29 07:00:00,000 INFO [rank0]: step 1 loss 2.0", *tb, "ValueError: bad sample",
        "2026-11-29 07:00:05,000 ERROR [rank0]: RuntimeError: CUDA error: an illegal memory access was encountered",
        "2026-11-29 07:00:06,000 INFO [rank0]: step 2 loss 2.0"]) + "\n")  # fmt: skip
    (tmp_path / "rank_1.log").write_text("\n".join([
        "2026-11-29 07:00:01,000 INFO [rank1]: step 1 loss 2.0",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB."]) + "\n")  # fmt: skip
    rows = section(render(diagnose(Options(paths=[str(tmp_path)], tz=UTC)), 120), "Timeline")
    by_text = {text: next(r for r in rows if text in r) for text in ("ValueError", "CUDA error", "CUDA OOM")}
    assert by_text["ValueError"].lstrip().startswith("~07:00:00.000")
    assert by_text["CUDA error"].lstrip().startswith("07:00:05.000")
    assert by_text["CUDA OOM"].lstrip().startswith("≥07:00:01.000")
    assert rows[-1].strip() == "~ no stamp: its neighbours' times; ≥ no stamp: after the last stamp before it"
    stamped = section(render(_repeated_oom(tmp_path / "stamped", 2), 140), "Timeline")
    assert not any(r.lstrip()[:1] in "~≥" for r in stamped)  # every line stamped: no marks, no legend


def test_elide_keeps_first_death_and_counts_the_rest() -> None:
    items = [f"e{i}" for i in range(32)]
    out = elide(items, [i == 15 for i in range(32)], 6)
    assert out == ["e0", "e1", "e2", Elided(12), "e15", Elided(14), "e30", "e31"]
    assert elide(items[:6], [False] * 6, 6) == items[:6]


# ---- what to do ----


def test_the_cause_comes_first_and_the_general_layers_fold_into_one_line() -> None:
    d = fixture_diagnosis("torchrun_raise")
    own, general = remediation_layers(d.verdict)
    assert own and general  # the diagnosis labels its layers as the renderer expects
    todo = section(render(d, 120), "What to do")
    assert todo[0].startswith(f"  1. {own[0][:40]}")
    assert todo[-1] == f"  + {len(general)} general steps: see --checklist, or rankautopsy explain python_exception"
    full = section(render(d, 120, checklist=True), "What to do")
    numbered = [line for line in full if re.match(r"  \d+\. ", line)]
    assert len(numbered) == len(d.verdict.remediation)
    assert any(line.startswith(f"  {len(own) + 1}. Timeouts: ") for line in full)


def test_verbose_adds_reasoning_ruled_out_and_every_evidence_line() -> None:
    d = fixture_diagnosis("torchrun_raise")
    short, long = render(d, 80), render(d, 80, verbose=True)
    assert "Reasoning" not in short and "Ruled out" not in short
    assert "\nReasoning\n" in long and "\nRuled out\n" in long
    assert "  console.log:25" in long.splitlines()  # the traceback's first line, with its text under it
    assert "see also    console.log:25, console.log:84" in short
    assert "fixtures/torchrun-raise-rank2/logs/console.log" not in long  # reasoning's paths made relative too


def test_cli_checklist_and_verbose_reach_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    args = ["diagnose", f"{FIXTURES}/torchrun-raise-rank2/logs", "--tz", "UTC", "--no-color", "--width", "80"]
    plain, full = CliRunner().invoke(app, args), CliRunner().invoke(app, [*args, "--checklist", "-v"])
    assert plain.exit_code == full.exit_code == 1
    assert plain.stdout == render(fixture_diagnosis("torchrun_raise"), 80)
    assert "Timeouts: " not in plain.stdout and "Timeouts: " in full.stdout
    assert "\nReasoning\n" in full.stdout


# ---- wrapping ----


def test_wrap_never_leaves_the_last_word_alone() -> None:
    assert wrap("instead of waiting forever", 20) == ["instead of", "waiting forever"]
    assert wrap("one two three", 80) == ["one two three"]
    assert wrap("x" * 25 + " tail", 10) == ["x" * 10, "x" * 10, "xxxxx tail"]


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cc", "Cs", "Zl", "Zp"))), st.integers(8, 60))
def test_wrap_keeps_every_character_within_the_width(text: str, width: int) -> None:
    lines = wrap(text, width)
    assert all(cell_len(line) <= width for line in lines)
    assert "".join("".join(lines).split()) == "".join(text.split())


@given(st.integers(1, 400))
def test_any_width_renders_without_error(width: int) -> None:
    lines = report_lines(hand_diagnosis("host_oom"), width)
    assert all(cell_len(line.plain) <= max(width, 40) for line in lines)


def test_times_keep_their_error_and_phase() -> None:
    fd = FirstDeath(rank=2, cause=Cause.SEGFAULT, rule="kernel.segfault", time=span("07:01:02", 1))
    verdict = Verdict(outcome=Outcome.FIRST_DEATH, first_death=fd, confidence=Confidence.HIGH)
    text = render(Diagnosis(verdict=verdict, ranks=(), events=(), inputs=()), 80)
    assert "  when        2026-11-29 07:01:02.5 UTC (±0.5 s), during training" in text.splitlines()


def test_an_undetermined_cause_without_a_rank_is_named_in_the_summary() -> None:
    fd = FirstDeath(rank=None, cause=Cause.CUDA_OOM, rule="pytorch.cuda-oom")
    verdict = Verdict(outcome=Outcome.UNDETERMINED, first_death=fd, confidence=Confidence.LOW)
    lines = render(Diagnosis(verdict=verdict, ranks=(), events=(), inputs=()), 80).splitlines()
    assert lines[0] == "Undetermined: the job failed, but the first death cannot be named"
    assert "  - cause seen: CUDA OOM, rank unknown" in lines
    assert lines[-1] == "undetermined: CUDA OOM on an unknown rank (low)"


@pytest.mark.parametrize(
    ("with_date", "days", "said"),
    [
        (False, (4, 4), "peer lost at 03:12:50-05:59:20 —"),
        (True, (4, 8), "peer lost at 12-04 05:59:20 – 12-08 03:12:50 —"),
    ],
)
def test_a_group_of_ranks_dated_over_days_reads_as_two_times_not_four_dates(
    with_date: bool, days: tuple[int, int], said: str
) -> None:
    group = FateGroup(Fate.COLLATERAL, "peer lost", "Gloo peer closed the connection")
    group.times = [
        datetime(2026, 12, day, hour, minute, second, tzinfo=UTC)
        for day, (hour, minute, second) in zip(days, [(5, 59, 20), (3, 12, 50)], strict=True)
    ]
    assert said in group.text(with_date, many_hosts=False)


def test_a_logging_header_leaves_the_timeline_row_its_message() -> None:
    assert _without_header("[2025-04-23 21:31:41 TP2] Scheduler hit an exception: x") == "Scheduler hit an exception: x"
    assert _without_header("[2025-04-23 21:31:41 DP1 TP2 EP2] Scheduler hit an exception: x") == (
        "Scheduler hit an exception: x"
    )
    assert _without_header("2026-11-29 07:00:10,000 WARNING lost peer") == "lost peer"
    assert _without_header("W1129 09:24:13.130000 8855 file.py:1028] Sending SIGTERM") == "Sending SIGTERM"


_TORCHRUN_SIGNAL = (
    "[2026-11-30 10:00:00,000] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: {code})"
    " local_rank: 1 (pid: 4242) of binary: /usr/bin/python3\n"
)


@pytest.mark.parametrize(
    ("code", "said", "unsaid"),
    [
        (-8, "native crash (SIGFPE, floating point exception)", "segmentation"),
        (-4, "SIGILL", "segmentation"),
        (-11, "segmentation fault", "SIGFPE"),
    ],
)
def test_a_native_crash_is_named_for_its_signal(tmp_path: Path, code: int, said: str, unsaid: str) -> None:
    """The segfault cause covers SIGILL and SIGFPE too; the headline must not call those a segmentation fault."""
    (tmp_path / "console.log").write_text(_TORCHRUN_SIGNAL.format(code=code))
    d = diagnose(Options(paths=[str(tmp_path)]))
    assert d.verdict.first_death is not None and d.verdict.first_death.cause is Cause.SEGFAULT
    head = render(d, WIDE).splitlines()[0]
    assert said in head and unsaid not in head, head
    assert unsaid not in summary_line(d.verdict)
