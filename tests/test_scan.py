"""The bulk scanner: both engines give the same lines and events, and the same hits as a per-line loop."""

from __future__ import annotations

import dataclasses
import gzip
import importlib.util
import io
import json
import os
import re
import threading
import time
import types
from datetime import UTC
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rankautopsy.errors import InputError
from rankautopsy.model import Cause, Effect, Role, Rule, StreamKind
from rankautopsy.pipeline import Options, diagnose
from rankautopsy.render.json import render_json
from rankautopsy.rulepacks.loader import load_rules
from rankautopsy.scan import chunkview, parallel, selection
from rankautopsy.scan import engine as engine_module
from rankautopsy.scan.engine import SMALL_INPUT, Engine, load_hyperscan, load_re2, make_engine
from rankautopsy.scan.matcher import Budget, CompiledRule, compile_rules, facts_of
from rankautopsy.scan.prefilter import CASE_TWINS, Untranslatable, prefilter
from rankautopsy.scan.selection import read_stream
from rankautopsy.sources import read
from rankautopsy.sources.clocks import ClockContext
from rankautopsy.sources.discover import Source, discover
from rankautopsy.sources.lines import parse_text

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
SCENARIOS = sorted(p for p in FIXTURES.iterdir() if (p / "expected.yaml").is_file())
RULES = compile_rules(load_rules())
CTX = ClockContext(UTC, 2026)
HYPERSCAN = load_hyperscan()
ENGINES = ["regex", "re"] + ["hyperscan"] * (HYPERSCAN is not None) + ["re2"] * (load_re2() is not None)
needs_hyperscan = pytest.mark.skipif(HYPERSCAN is None, reason="the hyperscan wheel is not installed here")

Found = set[tuple[str, int, str]]  # (rule id, line number, line text)


@pytest.fixture(autouse=True)
def _no_db_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANKAUTOPSY_CACHE_DIR", str(tmp_path / "cache"))


def _engine(name: str) -> Engine:
    return make_engine(RULES, name)


def _source(path: Path) -> Source | None:
    try:
        sources, _ = discover([str(path.parent)])
    except InputError:  # nothing readable: empty, or binary
        return None
    return next((s for s in sources if s.path == path), None)


def scanned(path: Path, engine: str) -> tuple[Found, list[tuple[int, str]]]:
    """The confirmed hits of one input, and the lines its stream kept."""
    source = _source(path)
    assert source is not None
    read_ = read_stream(source, CTX, _engine(engine))
    hits = {(h.rule.rule.id, read_.stream.numbers[h.index], read_.stream.texts[h.index]) for h in read_.hits}
    return hits, list(zip(read_.stream.numbers, read_.stream.texts, strict=True))


def every_line(path: Path) -> tuple[Found, set[str]]:
    """The reference: every rule on every line of the whole text (and the ids of sampled rules)."""
    source = _source(path)
    assert source is not None
    stream = parse_text(source, read.decode(path.read_bytes()).text, CTX)
    rules = [r for r in RULES if r.applies_to(source.kind)]
    raw = path.read_bytes().split(b"\n")[: chunkview.OPENING_LINES]
    opening = next((n for n, line in enumerate(raw, 1) if not chunkview._ELISION.fullmatch(line)), None)
    first = next((i for i, n in enumerate(stream.numbers) if n == opening), None)
    walk = selection.openings((i, stream.texts[i]) for i in range(first, len(stream))) if first is not None else []
    tried = {stream.numbers[i] for i in walk}  # the opening line, and the lines an excerpt's cut opens on
    hits: Found = set()
    repeats: dict[tuple[str, object, object, tuple[tuple[str, str], ...]], list[tuple[str, int, str]]] = {}
    opened: set[str] = set()  # an opening rule reads one line of the opening
    for i, text in enumerate(stream.texts):
        for r in rules:
            if r.rule.at_start and (stream.numbers[i] not in tried or r.rule.id in opened):
                continue
            if (m := r.pattern.search(text)) is None:
                continue
            if r.rule.at_start:
                opened.add(r.rule.id)
            hit = (r.rule.id, stream.numbers[i], text)
            if _thinned_by_repeats(r.rule):
                facts = tuple(sorted((k, v) for k, v in m.groupdict().items() if v is not None))
                repeats.setdefault((r.rule.id, stream.ranks[i], stream.local_ranks[i], facts), []).append(hit)
            else:
                hits.add(hit)
    for (rule_id, *_), seen in repeats.items():
        # the first REPEATS are kept; of a cause or symptom the latest too, the others are counted
        context = next(r for r in rules if r.rule.id == rule_id).rule.role is Role.CONTEXT
        hits.update(seen[: selection.REPEATS] + ([] if context else seen[-1:]))
    return hits, {r.rule.id for r in rules if r.sampled}


def _thinned_by_repeats(rule: Rule) -> bool:
    """A rule whose hits of one channel and facts the scan keeps only some of (`_Selection._repeated`)."""
    if rule.assemble is not None or rule.role is Role.PROGRESS:
        return False
    return rule.role is not Role.CONTEXT or rule.effects <= {Effect.IDENTITY}


def check_against_every_line(path: Path, engine: str) -> None:
    if _source(path) is None:  # skipped: empty, or binary
        return
    got, _ = scanned(path, engine)
    want, sampled = every_line(path)
    assert {h for h in got if h[0] not in sampled} == {h for h in want if h[0] not in sampled}
    progress = sorted((h for h in want if h[0] in sampled), key=lambda h: h[1])
    assert {h for h in got if h[0] in sampled} <= set(progress)
    if progress:  # the first and the last progress line are always kept
        assert {progress[0], progress[-1]} <= got


# ---- fixtures: both engines, one process and several, the same diagnosis ----


def _fixture_json(fixture: Path, monkeypatch: pytest.MonkeyPatch, **options: object) -> dict[str, object]:
    expected = yaml.safe_load((fixture / "expected.yaml").read_text())
    args = list(expected["args"])
    paths = [a for i, a in enumerate(args) if not a.startswith("-") and (i == 0 or args[i - 1] != "--dmesg")]
    dmesg = [args[i + 1] for i, a in enumerate(args) if a == "--dmesg"]
    monkeypatch.chdir(fixture)
    result = diagnose(Options(paths=paths, dmesg=dmesg, tz=UTC, **options))  # type: ignore[arg-type]
    data = json.loads(render_json(result))
    assert isinstance(data, dict)
    return data


@needs_hyperscan
@pytest.mark.parametrize("fixture", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_engines_and_workers_agree_on_every_fixture(fixture: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reference = _fixture_json(fixture, monkeypatch, engine="hyperscan", jobs=1)
    assert _fixture_json(fixture, monkeypatch, engine="regex", jobs=1) == reference
    assert _fixture_json(fixture, monkeypatch, engine="re", jobs=1) == reference
    assert _fixture_json(fixture, monkeypatch, engine="hyperscan", jobs=2) == reference
    if load_re2() is not None:
        assert _fixture_json(fixture, monkeypatch, engine="re2", jobs=1) == reference


def test_an_engine_can_be_forced_and_an_unknown_one_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENGINES:
        monkeypatch.setenv("RANKAUTOPSY_ENGINE", name)
        assert make_engine(RULES).name == name
    monkeypatch.setenv("RANKAUTOPSY_ENGINE", "pcre")
    with pytest.raises(ValueError, match="unknown scan engine"):
        make_engine(RULES)


@needs_hyperscan
def test_a_small_input_is_scanned_by_the_stdlib_engine_unless_one_is_forced(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RANKAUTOPSY_ENGINE", raising=False)
    assert make_engine(RULES, size=0).name == "re"
    assert make_engine(RULES, size=SMALL_INPUT).name == "re"
    assert make_engine(RULES, size=SMALL_INPUT + 1).name == "hyperscan"
    assert make_engine(RULES).name == "hyperscan"
    assert make_engine(RULES, "hyperscan", size=10).name == "hyperscan"
    monkeypatch.setenv("RANKAUTOPSY_ENGINE", "regex")
    assert make_engine(RULES, size=10).name == "regex"


@needs_hyperscan
def test_a_compressed_input_is_not_taken_for_small_by_its_size_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Logs shrink ten times and more in gzip: its size on disk does not bound the bytes to scan."""
    from rankautopsy import pipeline

    monkeypatch.delenv("RANKAUTOPSY_ENGINE", raising=False)
    chosen: list[str] = []

    def recording(*args: object, **kwargs: object) -> Engine:
        engine = make_engine(*args, **kwargs)  # type: ignore[arg-type]
        chosen.append(engine.name)
        return engine

    monkeypatch.setattr(pipeline, "make_engine", recording)
    text = (FIXTURES / "torchrun-raise-rank2" / "logs" / "console.log").read_bytes()
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "console.log").write_bytes(text)
    (tmp_path / "packed").mkdir()
    (tmp_path / "packed" / "console.log.gz").write_bytes(gzip.compress(text))
    deaths = [
        diagnose(Options(paths=[str(tmp_path / name)], tz=UTC)).verdict.first_death for name in ("plain", "packed")
    ]
    assert chosen == ["re", "hyperscan"]
    assert [(d.rank, d.cause, d.rule) for d in deaths if d is not None] == [
        (2, Cause.PYTHON_EXCEPTION, "python.traceback")
    ] * 2


@pytest.mark.parametrize("engine", ENGINES)
def test_fixture_logs_give_the_hits_of_every_line(engine: str) -> None:
    for log in sorted(FIXTURES.glob("*/logs/**/*")):
        if log.is_file() and log.name != "error.json" and log.suffix != ".gz":
            check_against_every_line(log, engine)


# ---- inputs that break naive readers ----

TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/job/train.py", line 230, in train',
    "    batch = next(loader)",
    "ValueError: bad sample 1234",
]


def _log(lines: list[str], end: str = "\n") -> bytes:
    return "".join(line + end for line in lines).encode()


def _steps(count: int, prefix: str = "") -> list[str]:
    return [f"{prefix}2026-11-29 07:00:{i % 60:02d},000 INFO step {i} loss 2.0" for i in range(count)]


TRICKY = {
    "crlf": _log([*_steps(30), *TRACEBACK, "Killed"], end="\r\n"),
    "carriage-returns": _log(
        [
            *_steps(5),
            "Epoch 1:  10%|#  | 1/10\rEpoch 1:  50%|#####  | 5/10\rTraceback (most recent call last):",
            *TRACEBACK[1:],
        ]
    ),
    "nuls": _log(_steps(400)) + b"\x00" * 5000 + _log(["Trace\x00back (most recent call last):", *TRACEBACK[1:]]),
    "invalid-utf8": _log(_steps(10))
    + b"\xff\xfe garbage \xc3\n"
    + _log(["RuntimeError: CUDA error: an illegal \xe9 access"]),
    "ansi": _log(["\x1b[31mTraceback (most recent call last):\x1b[0m", *TRACEBACK[1:], "\x1b[1mstep 7\x1b[0m"]),
    "prefixed-anchors": _log(
        [f"[default{r}]:[rank{r}]: {line}" for r in range(3) for line in TRACEBACK]
        + ["[1,2]<stderr>:Fatal Python error: Segmentation fault", "2026-11-29T07:00:00.1Z stderr F [0]:"]
    ),
    "case-twins": _log(["ſtep 12", "\u212ailled", "gloo/é.cc:12] Connection closed by peer"]),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("name", sorted(TRICKY))
def test_tricky_inputs_give_the_hits_of_every_line(name: str, engine: str, tmp_path: Path) -> None:
    path = tmp_path / "rank_0.log"
    path.write_bytes(TRICKY[name])
    check_against_every_line(path, engine)


INFLATERS = ["zlib", *(["isal"] if importlib.util.find_spec("isal") else [])]


@pytest.mark.parametrize("inflater", INFLATERS)
@pytest.mark.parametrize("engine", ENGINES)
def test_gzip_and_truncated_gzip(engine: str, inflater: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANKAUTOPSY_GZIP", inflater)
    assert read.inflater().__name__.startswith(inflater)
    data = _log([*_steps(3000), *TRACEBACK])
    (tmp_path / "rank_0.log.gz").write_bytes(gzip.compress(data))
    check_against_every_line(tmp_path / "rank_0.log.gz", engine)
    members = tmp_path / "rank_2.log.gz"  # logrotate's appended members, and gzip(1)'s trailing zeros
    members.write_bytes(gzip.compress(data[:50_000]) + gzip.compress(data[50_000:]) + b"\0" * 16)
    assert scanned(members, engine)[1] == scanned(tmp_path / "rank_0.log.gz", engine)[1]
    damaged = tmp_path / "rank_1.log.gz"
    damaged.write_bytes(gzip.compress(data)[:3000])
    source = _source(damaged)
    assert source is not None
    result = read_stream(source, CTX, _engine(engine))
    assert result.problem is not None and "truncated gzip" in result.problem
    assert result.stream.lines_read > 100


@pytest.mark.parametrize("engine", ENGINES)
def test_a_ten_megabyte_line(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "rank_0.log"
    path.write_bytes(_log([*_steps(3), "x" * (10 * 1024 * 1024), "Killed", *TRACEBACK]))
    got, _ = scanned(path, engine)
    assert ("python.traceback", 6, "Traceback (most recent call last):") in got
    check_against_every_line(path, engine)


@pytest.mark.parametrize("engine", ENGINES)
def test_small_chunks_split_tracebacks_and_lines_between_them(
    engine: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(read, "CHUNK", 4096)
    monkeypatch.setattr(read, "CONTEXT", 1024)
    lines = [
        *_steps(70),
        *TRACEBACK,
        *_steps(70),
        "[default3]:" + TRACEBACK[0],
        *("[default3]:" + t for t in TRACEBACK[1:]),
    ]
    path = tmp_path / "rank_0.log"
    path.write_bytes(_log(lines))
    check_against_every_line(path, engine)
    source = _source(path)
    assert source is not None
    result = read_stream(source, CTX, _engine(engine))
    kept = dict(zip(result.stream.numbers, result.stream.texts, strict=True))
    assert all(number in kept for number in range(71, 75)), "a traceback's body is kept across chunks"


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("steps", [20, 20_000])  # in the first buffer; past it, into the full one
def test_what_an_earlier_input_left_in_the_buffer_is_never_read(engine: str, steps: int, tmp_path: Path) -> None:
    stale = b"step 99999 Traceback (most recent call last):\n" * ((read.CHUNK + read.CONTEXT) // 40 + 1)
    read._buffers.clear()
    for size in (read.FIRST_BUFFER, read.CHUNK + read.CONTEXT):
        read._buffers[size] = bytearray(stale[:size])
    path = tmp_path / "rank_0.log"
    path.write_bytes(_log([*_steps(steps), *TRACEBACK]))
    assert (path.stat().st_size > read.FIRST_BUFFER) == (steps > 20)
    check_against_every_line(path, engine)
    _, kept = scanned(path, engine)
    assert max(number for number, _ in kept) <= steps + 4


@needs_hyperscan
@pytest.mark.parametrize("name", sorted(TRICKY))
def test_both_engines_keep_the_same_lines(name: str, tmp_path: Path) -> None:
    path = tmp_path / "console.log"
    path.write_bytes(TRICKY[name])
    assert scanned(path, "regex") == scanned(path, "hyperscan")


# ---- bounded selection ----


@pytest.mark.parametrize("engine", ENGINES)
def test_a_long_run_of_steps_yields_few_progress_events(engine: str, tmp_path: Path) -> None:
    path = tmp_path / "rank_0.log"
    path.write_bytes(_log([f"2026-11-29 07:00:00,000 INFO step {i} loss 2.0" for i in range(200_000)]))
    result = diagnose(Options(paths=[str(path)], tz=UTC, engine=engine, jobs=1))
    progress = [e for e in result.events if e.rule == "progress.step"]
    assert 2 <= len(progress) <= 4
    assert result.ranks[0].last_step == 199_999
    assert result.inputs[0].lines == 200_000


@pytest.mark.parametrize("chained", [False, True])
def test_a_run_of_traceback_headers_is_walked_once(
    chained: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each header opens a window; lines a window already walked are not walked again for the next one
    (20,000 headers once took 400 walks per header), and the run still ends at its exception line."""
    one = ["Traceback (most recent call last):", '  File "t.py", line 1, in <module>', "ValueError: x", ""]
    lines = one * 5_000 if chained else [one[0]] * 5_000 + one[1:]
    path = tmp_path / "rank_0.log"
    path.write_bytes(_log(["2026-11-29 07:00:00,000 INFO step 1 loss 2.0", *lines]))
    walks = 0
    take = selection._Selection._take

    def counted(self: selection._Selection, view: object, start: int, number: int, spare: bool = True) -> object:
        nonlocal walks
        walks += 1
        return take(self, view, start, number, spare)  # type: ignore[arg-type]

    monkeypatch.setattr(selection._Selection, "_take", counted)
    result = diagnose(Options(paths=[str(path)], tz=UTC, engine="regex", jobs=1))
    assert walks < 5 * len(lines) + 1_000  # a few looks per line (confirm, neighbours), not 400
    tracebacks = [e for e in result.events if e.facts.get("exc_type") == "ValueError"]
    assert {e.facts["exc_msg"] for e in tracebacks} == {"x"}
    counted = sum(int(e.facts.get("repeats", 0)) for e in tracebacks)
    assert len(tracebacks) <= 8  # alike: the first three and the latest, the first counting them all
    if chained:  # two groups: those with a timestamped neighbour in reach, and those without
        assert counted == 5_000
        assert tracebacks[-1].where.line == len(lines) - 2  # the last header (after the step line)
    else:  # a header further than the window from the exception line is cut off: context
        assert 1_000 < counted < 2_000
        first = next(e for e in result.events if e.where.line == 2)
        assert first.role is Role.CONTEXT and "exc_type" not in first.facts


@pytest.mark.parametrize("gap", [3_000, 40])  # past WALK_BYTES of unstamped hits, and within it
def test_a_run_of_unstamped_hits_looks_for_a_stamped_neighbour_once(
    gap: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each unstamped hit walks ahead for its channel's next stamped line. Bytes an earlier walk found
    no stamp-like text in are not searched again (3,000 hits once each searched the same 64 KB), and
    what the walks find is what searching every byte again finds, the stamp the last range cut too."""
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB."
    lines = ["2026-11-29 07:00:00,000 INFO step 1 loss 2.0", *[oom] * gap,
             "2026-11-29 07:00:09,000 INFO step 2 loss 2.0", *[oom] * gap, "RuntimeError: done"]  # fmt: skip
    path = tmp_path / "rank_0.log"
    path.write_bytes(_log(lines))
    searched = 0

    class Counting:
        def __init__(self, pattern: object) -> None:
            self.pattern = pattern

        def search(self, buf: bytes, pos: int, endpos: int) -> object:
            nonlocal searched
            searched += endpos - pos
            return self.pattern.search(buf, pos, endpos)  # type: ignore[attr-defined]

        def finditer(self, buf: bytes, pos: int, endpos: int) -> object:  # the search back for a stamp
            nonlocal searched
            searched += endpos - pos
            return self.pattern.finditer(buf, pos, endpos)  # type: ignore[attr-defined]

    monkeypatch.setattr(selection, "_STAMPISH", {k: Counting(p) for k, p in selection._STAMPISH.items()})
    options = Options(paths=[str(path)], tz=UTC, engine="regex", jobs=1)
    once = diagnose(options)
    assert searched < 4 * path.stat().st_size + 2 * selection.WALK_BYTES
    monkeypatch.setattr(selection._Selection, "_unseen", lambda self, view, pos: pos)
    assert diagnose(options) == once
    ooms = [e for e in once.events if e.rule == "pytorch.cuda-oom"]
    assert ooms[0].time is not None and ooms[0].time.earliest.second == 0
    assert ooms[-1].time is not None and ooms[-1].time.earliest.second == 9


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cause_line_repeated_keeps_its_first_and_latest(engine: str, tmp_path: Path) -> None:
    """A caught CUDA OOM logged after every step: the first REPEATS and the latest are events, the
    first counts them all, and the death is the latest one, the one the rank did not go on past."""
    oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB."
    lines = []
    for i in range(3_000):
        stamp = f"2026-11-29 07:{i // 60 % 60:02d}:{i % 60:02d}"
        lines += [f"{stamp},000 INFO [rank1]: step {i} loss 2.0", f"{stamp},500 ERROR [rank1]: {oom}"]
    (tmp_path / "rank_1.log").write_bytes(_log(lines))
    (tmp_path / "rank_0.log").write_bytes(
        _log(["2026-11-29 07:00:00,000 INFO [rank0]: step 0 loss 2.0", "2026-11-29 08:10:00,000 ERROR [rank0]: "
              "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600001 "
              "milliseconds before timing out."])
    )  # fmt: skip
    result = diagnose(Options(paths=[str(tmp_path)], tz=UTC, engine=engine, jobs=1))
    ooms = [e for e in result.events if e.rule == "pytorch.cuda-oom"]
    assert [e.where.line for e in ooms] == [2, 4, 6, 6_000]
    assert ooms[0].facts["repeats"] == "3000"
    assert result.verdict.first_death is not None
    assert result.verdict.first_death.rank == 1
    assert result.verdict.first_death.evidence[0].where.line == 6_000


# ---- the prefilter is a superset of its rule ----


@pytest.mark.parametrize("compiled", RULES, ids=[r.rule.id for r in RULES])
def test_every_rule_example_passes_its_prefilter(compiled: CompiledRule) -> None:
    assert compiled.prefilter is not None, compiled.rule.id
    if compiled.rule.at_start:  # never scanned for: its prefilter is checked as if it were
        compiled = dataclasses.replace(compiled, rule=dataclasses.replace(compiled.rule, at_start=False))
    engine = make_engine([compiled], "regex")
    kind = next(iter(compiled.rule.streams), StreamKind.CONSOLE)
    for example in compiled.rule.match_examples:
        assert engine.find(example.line.encode(), kind, Budget(), sampled=compiled.sampled), example.line


def test_case_twins_are_the_only_non_ascii_case_matches() -> None:
    import regex

    text = "".join(chr(c) for c in range(0x80, 0x3000) if not 0xD800 <= c < 0xE000) + "\u212a"
    for letter in "abcdefghijklmnopqrstuvwxyz":
        found = set(regex.findall("(?i)" + letter, text, flags=regex.V0))
        assert found == ({CASE_TWINS[letter]} if letter in CASE_TWINS else set()), letter


def test_a_pattern_the_stdlib_cannot_parse_has_no_prefilter() -> None:
    with pytest.raises(Untranslatable):
        prefilter(r"\p{Lu}+ failed")


# ---- property: random logs from the rules' own example lines ----

EXAMPLES = sorted({e.line for r in RULES for e in r.rule.match_examples})
NOISE = st.sampled_from(
    [
        "",
        "   ",
        "INFO all good",
        "[default1]:noise 12:00:00",
        "2026-11-29 07:00:01,000 INFO hello",
        "stepping",
        "x" * 300,
    ]
)
PREFIX = st.sampled_from(["", "[default2]:", "[rank1]: ", "[1,3]<stderr>:", "2026-11-29T07:00:00.123Z stderr F "])
LINE = st.one_of(st.sampled_from(EXAMPLES), NOISE, st.text(max_size=40))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.tuples(PREFIX, LINE), max_size=40), crlf=st.booleans(), engine=st.sampled_from(ENGINES))
def test_random_logs_give_the_hits_of_every_line(
    lines: list[tuple[str, str]], crlf: bool, engine: str, tmp_path: Path
) -> None:
    path = tmp_path / "console.log"
    text = "".join(prefix + line.replace("\n", " ") + ("\r\n" if crlf else "\n") for prefix, line in lines)
    path.write_bytes(text.encode("utf-8", "surrogateescape") or b"x\n")
    check_against_every_line(path, engine)


def _candidate_lines(engine: Engine, data: bytes) -> set[tuple[int, int]]:
    """(line start, rule index) of every candidate `find` gives, each offset taken to its line (that of the
    line feed ending it, too)."""
    found = engine.find(data, StreamKind.CONSOLE, Budget())
    return {(data.rfind(b"\n", 0, offset) + 1, index) for offset, index in found}


@pytest.mark.skipif(load_re2() is None, reason="google-re2 is not installed here")
@settings(max_examples=60, deadline=None)
@given(lines=st.lists(st.tuples(PREFIX, LINE, LINE), max_size=30), cr=st.booleans(), last=st.booleans())
def test_re2_finds_each_line_and_rule_the_regex_engine_finds(
    lines: list[tuple[str, str, str]], cr: bool, last: bool
) -> None:
    """RE2's one pass (the alternation of every prefilter, then the set on each line it finds) gives the
    candidates of running each prefilter alone: lines with two rules, empty lines, `\\r` pieces, a last
    line without a line feed."""
    joiner = "\r" if cr else " "
    text = "".join(p + a.replace("\n", " ") + joiner + b.replace("\n", " ") + "\n" for p, a, b in lines)
    data = text.encode("utf-8", "surrogateescape")
    data = data[:-1] if last and data else data
    assert _candidate_lines(_engine("re2"), data) == _candidate_lines(_engine("regex"), data)


@pytest.mark.skipif(load_re2() is None, reason="google-re2 is not installed here")
def test_re2_passes_a_prefilter_it_refuses_to_the_rules_own_regex_and_says_nothing(
    capfd: pytest.CaptureFixture[str],
) -> None:
    good, other = RULES[0], RULES[2]
    refused = dataclasses.replace(RULES[1], prefilter=b"a(?<=b)c")  # RE2 has no lookbehind
    line = other.rule.match_examples[0].line.encode()
    found, passed_on = _engine("re2")._find(b"noise\n" + line + b"\n", [good, refused, other], Budget())
    assert passed_on == [refused]
    assert {index for _, index in found} == {other.index}
    assert capfd.readouterr().err == ""


@pytest.mark.skipif(load_re2() is None, reason="google-re2 is not installed here")
@given(
    lines=st.lists(st.sampled_from(["", "ab", "x ab c12", "c", "zz c999 ab", "nothing"]), max_size=12),
    lo=st.integers(0, 20),
    cut=st.integers(0, 20),
)
def test_re2s_first_match_is_the_same_by_its_wrapped_object_and_by_search(lines: list[str], lo: int, cut: int) -> None:
    """The RE2 engine asks google-re2's wrapped object for each match where it can, else its public
    `search`: both give every match's span, in order, within the bounds asked."""
    re2 = load_re2()
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1
    options.never_capture = True
    union = re2.compile(b"ab|c[0-9]+", options)
    public = types.SimpleNamespace(search=union.search)  # what a google-re2 without the wrapped object offers
    data = "\n".join(lines).encode()
    end = max(0, len(data) - cut)
    spans = {}
    for name, first in (("wrapped", engine_module._first_span(union)), ("public", engine_module._first_span(public))):
        pos, found = min(lo, end), []
        while (span := first(data, pos, end)) is not None:
            found.append(tuple(span))
            pos = span[1]
        spans[name] = found
    expected = [m.span() for m in re.finditer(rb"ab|c[0-9]+", data[:end])]
    assert spans["wrapped"] == spans["public"] == [s for s in expected if s[0] >= min(lo, end)]


def test_many_small_files_or_much_input_get_a_worker_per_core(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RANKAUTOPSY_JOBS", raising=False)
    monkeypatch.setattr(parallel, "_cores", lambda: 4)
    assert parallel.worker_count([1000] * (parallel.PARALLEL_FILES - 1)) == 1
    assert parallel.worker_count([1000] * parallel.PARALLEL_FILES) == 4
    assert parallel.worker_count([parallel.PARALLEL_BYTES, 1]) == 2  # no more workers than files
    assert parallel.worker_count([parallel.PARALLEL_BYTES * 4]) == 1  # one file: one worker
    assert parallel.worker_count([1, 1], wanted=3) == 3


@given(st.lists(st.integers(0, 10**6), max_size=300), st.integers(1, 8))
def test_the_pool_runs_every_job_once_in_batches_and_returns_them_in_order(weights: list[int], workers: int) -> None:
    order = sorted(range(len(weights)), key=lambda i: -weights[i])
    batches = parallel._batches(order, workers)
    assert [i for batch in batches for i in batch] == order
    assert all(batches) and len(batches) <= max(1, workers * parallel.BATCHES_PER_WORKER * 2)


def test_a_pool_of_forked_workers_gives_each_jobs_result_in_job_order() -> None:
    jobs = [f"job {i}" for i in range(50)]
    assert parallel.run_all(jobs, str.upper, 2, len) == [j.upper() for j in jobs]


def _forked_pids(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    pids: list[int] = []
    real = parallel._fork

    def fork(inherited: list[int]) -> object:
        worker = real(inherited)
        pids.append(worker.pid)
        return worker

    monkeypatch.setattr(parallel, "_fork", fork)
    return pids


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # a zombie (not reaped) still answers
    except ProcessLookupError:
        return True
    return False


def _fails_on_seven(job: int) -> int:
    if job == 7:
        raise ValueError("job seven")
    return job


def _dies_on_seven(job: int) -> int:
    if job == 7:
        os._exit(3)  # as the kernel's OOM killer would leave it: no results
    return job


def test_a_workers_error_is_raised_here_with_its_traceback_and_every_worker_is_reaped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pids = _forked_pids(monkeypatch)
    with pytest.raises(ValueError, match="job seven") as raised:
        parallel.run_all(list(range(40)), _fails_on_seven, 2, lambda _: 1)
    assert any("in a rankautopsy worker process" in note for note in raised.value.__notes__)
    assert len(pids) == 2 and all(_gone(pid) for pid in pids)


def test_a_worker_that_dies_ends_the_run_with_an_error_not_a_hang(monkeypatch: pytest.MonkeyPatch) -> None:
    pids = _forked_pids(monkeypatch)
    with pytest.raises(RuntimeError, match="ended without its results"):
        parallel.run_all(list(range(40)), _dies_on_seven, 2, lambda _: 1)
    assert all(_gone(pid) for pid in pids)


def test_each_job_is_told_done_here_and_a_stop_here_stops_the_busy_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    pids = _forked_pids(monkeypatch)
    told: list[int] = []
    assert parallel.run_all(list(range(30)), abs, 2, lambda _: 1, told.append) == list(range(30))
    assert sorted(told) == list(range(30))

    def stop(job: int) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        parallel.run_all([0.2] * 30, time.sleep, 2, lambda _: 1, stop)
    assert len(pids) == 4 and all(_gone(pid) for pid in pids)


def test_the_pool_works_with_descriptors_past_select_s_limit() -> None:
    """`watch` on a thousand ranks holds a thousand logs open: the pool's pipes then have numbers that
    select() refuses (FD_SETSIZE, 1,024)."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if max(soft, hard if hard != resource.RLIM_INFINITY else 4096) < 1200:
        pytest.skip("this machine allows fewer than 1,200 open files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1200), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1100)]
    try:
        assert parallel.run_all(list(range(20)), abs, 2, lambda _: 1) == list(range(20))
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def _twin_pattern(branches: list[list[str]], tail: str | None) -> str:
    def group(name: str) -> str:
        return f"(?P<{name}>{name}[0-9]*)"

    alternatives = "|".join("".join(group(name) for name in branch) for branch in branches)
    return f"(?:{alternatives})" + (f"{group(tail)}?" if tail else "")


@settings(max_examples=300, deadline=None)
@given(
    branches=st.lists(st.lists(st.sampled_from("abc"), min_size=1, max_size=3), min_size=1, max_size=4),
    tail=st.sampled_from([None, "a", "b"]),
    line=st.text(alphabet="abc12x", max_size=14),
)
def test_repeated_group_names_give_under_re_the_facts_regex_gives(
    branches: list[list[str]], tail: str | None, line: str
) -> None:
    """A built-in rule with one group name in several branches (or twice in a row) is confirmed by `re`
    with the repeats renamed: the same span, and the same facts in the same order as `regex`."""
    rule = dataclasses.replace(load_rules()[0], pattern=_twin_pattern(branches, tail), ignorecase=False)
    compiled = CompiledRule(rule)
    by_regex, by_re = compiled.pattern.search(line), compiled.trusted.search(line)
    assert (by_re is None) == (by_regex is None)
    if by_re is not None and by_regex is not None:
        assert by_re.span() == by_regex.span()
        assert list(facts_of(by_re).items()) == list(facts_of(by_regex).items())


STAMPISH_LINES = [b"12:34:56 up", b"[ 12.500] k", b"[3.1]", b"noise", b"1:2:3", b"99:99:9", b"", b"x" * 700]


@settings(max_examples=300, deadline=None)
@given(
    lines=st.lists(st.sampled_from(STAMPISH_LINES), max_size=40),
    kernel=st.booleans(),
    data=st.data(),
)
def test_the_last_stamp_is_in_the_line_a_reverse_search_finds(
    lines: list[bytes], kernel: bool, data: st.DataObject
) -> None:
    import regex

    buf = b"\n".join(lines)
    lo = data.draw(st.integers(0, len(buf)))
    pos = data.draw(st.integers(lo, len(buf)))
    reverse = regex.compile(selection._STAMPISH[kernel].pattern, regex.REVERSE).search(buf, lo, pos)
    found = selection._last_stamp(buf, lo, pos, kernel)
    assert (found is None) == (reverse is None)
    if found is not None and reverse is not None:
        assert buf.rfind(b"\n", 0, found) == buf.rfind(b"\n", 0, reverse.start())


# ---- the head and tail bounds and sniffs against the plain (slower) ways they replaced ----

_BYTES_LINES = st.lists(st.sampled_from([b"", b"x", b"abc def", b"\r", b"y" * 50]), max_size=60).map(b"\n".join)


@settings(max_examples=200)
@given(body=_BYTES_LINES, lead=st.integers(0, 5), wanted=st.integers(-3, 70))
def test_the_head_ends_where_a_split_of_its_first_lines_ends(body: bytes, lead: int, wanted: int) -> None:
    from rankautopsy.scan.chunkview import head_end
    from rankautopsy.sources.lines import SNIFF_LINES

    first_line = SNIFF_LINES + 1 - wanted
    buf = bytearray(b"\n" * lead + body)
    chunk = read.Chunk(buf, 0, lead, len(buf), 1, first_line)
    lines = bytes(buf[lead:]).split(b"\n", max(wanted, 0))
    expected = lead if wanted <= 0 else len(buf) - len(lines[-1]) if len(lines) > wanted else len(buf)
    assert head_end(chunk) == expected


@settings(max_examples=200)
@given(body=_BYTES_LINES, lo=st.integers(0, 40), n=st.integers(0, 70))
def test_the_nth_line_feed_back_is_where_a_right_split_puts_it(body: bytes, lo: int, n: int) -> None:
    from rankautopsy.scan.chunkview import nth_line_feed

    lo = min(lo, len(body))
    lines = body[lo:].rsplit(b"\n", n)
    assert nth_line_feed(body, lo, len(body), n) == (lo if len(lines) <= n else lo + len(lines[0]) + 1)


_HEAD_LINES = st.lists(
    st.sampled_from(
        ["", "  ", "12  x", "host1: y", "[3]: z", "[3] w", "0: v", "P7 4: u", "plain", "2026-11-29 07:00:00"]
    ),
    max_size=40,
)


@given(lines=_HEAD_LINES, share=st.sampled_from([0.6, 0.8]))
def test_mostly_counts_the_misses_a_line_by_line_loop_counts(lines: list[str], share: float) -> None:
    from rankautopsy.sources import prefixes

    for pattern in (prefixes._NUMBERED, prefixes._PDSH, prefixes._TEMPLATE, prefixes._HYDRA, prefixes._SRUN):
        misses = sum(1 for line in lines if not pattern.match(line))
        assert prefixes._mostly(lines, pattern, share) == (misses <= len(lines) - share * len(lines))


_STAMPISH = st.sampled_from(
    [
        "2026-11-29 07:00:00",
        "[2026-11-29T07:00:00.123Z]",
        "07:00:00,5+01:00 ",
        "x 12:00:00",
        "[rank1]: 2026-11-29 07:00:01",
        "a:12",
        "plain",
    ]
)


@settings(max_examples=300)
@given(sample=st.lists(_STAMPISH, max_size=4))
def test_a_head_is_found_to_have_stamps_alone_as_a_line_by_line_search_finds(sample: list[str]) -> None:
    from rankautopsy.sources import lines as lines_module
    from rankautopsy.sources.prefixes import PLAIN, strip_prefixes
    from rankautopsy.sources.sanitize import clean

    parser = lines_module.LineParser.__new__(lines_module.LineParser)
    parser._sample, parser._profile, parser.kernel = sample, PLAIN, False
    tails = any(lines_module._ENDS_IN_STAMP.search(line[-48:]) for line in sample)
    alone = any(lines_module._STAMP_ONLY.match(strip_prefixes(clean(line))[0]) for line in sample)
    assert parser._stamps_alone() == (tails and alone)


# ---- the bulk scan beside the line count ----


def _big_log(path: Path) -> Path:
    """Over WHOLE_BYTES, with hits in many chunks: identity lines, repeated OOMs, a traceback at the end."""
    block = _log(
        [
            *_steps(40_000),
            "node0:1:2 [0] NCCL INFO cudaDriverVersion 12040",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        ]
    )
    path.write_bytes(block * (3 * selection.WHOLE_BYTES // len(block) + 1) + _log(TRACEBACK))
    return path


AHEAD_ENGINES = [name for name in ("hyperscan", "re2") if name in ENGINES]  # those that scan without the GIL


@pytest.mark.parametrize("name", AHEAD_ENGINES)
def test_the_scan_ahead_of_the_line_count_finds_what_the_scan_after_it_finds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    source = _source(_big_log(tmp_path / "rank_3.log"))
    assert source is not None and source.size > selection.WHOLE_BYTES
    engine = _engine(name)
    scanned: list[int] = []
    make = type(engine).scan_ahead

    def counted(self: Engine, kind: StreamKind, budget: Budget) -> object:
        ahead = make(self, kind, budget)
        assert ahead is not None
        return lambda region: (scanned.append(len(region)), ahead(region))[1]

    big_in_main: list[int] = []
    scan = type(engine)._find

    def watched(self: Engine, data: bytes, rules: list[CompiledRule], budget: Budget) -> object:
        if threading.current_thread() is threading.main_thread() and len(data) >= read.AHEAD_BYTES:
            big_in_main.append(len(data))
        return scan(self, data, rules, budget)

    monkeypatch.setattr(type(engine), "scan_ahead", counted)
    monkeypatch.setattr(type(engine), "_find", watched)
    beside = read_stream(source, CTX, engine, spare_core=True)
    assert big_in_main == []  # every big chunk's bulk scan came from the thread
    scanned_beside = list(scanned)
    after = read_stream(source, CTX, engine)  # no spare core: scanned after the count
    assert scanned == scanned_beside
    assert sum(scanned_beside) > source.size // 2 and len(scanned_beside) >= 3  # chunks scanned beside the count
    assert [(h.rule.rule.id, h.index, h.facts) for h in beside.hits] == [
        (h.rule.rule.id, h.index, h.facts) for h in after.hits
    ]
    assert beside.stream.texts == after.stream.texts and beside.stream.lines_read == after.stream.lines_read
    assert {h.rule.rule.id for h in beside.hits} >= {"pytorch.cuda-oom", "python.traceback"}


_AHEAD_LINES = [
    "2026-11-30 03:00:01,000 INFO [train.py:212] step 12 loss 2.5",
    "node0:1:2 [0] NCCL INFO cudaDriverVersion 12040",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    "Traceback (most recent call last):",
    "RuntimeError: NCCL communicator was aborted on rank 3.",
    "",
    "x" * 300,
]


@pytest.mark.skipif(load_re2() is None, reason="google-re2 is not installed here")
@pytest.mark.parametrize("parts", [1, 2, 3, 7])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(picks=st.lists(st.integers(0, len(_AHEAD_LINES) - 1), max_size=40), last_feed=st.booleans())
def test_re2_searching_a_chunk_in_runs_of_lines_finds_what_one_search_finds(
    monkeypatch: pytest.MonkeyPatch, parts: int, picks: list[int], last_feed: bool
) -> None:
    """RE2's scan ahead cuts a chunk into runs of whole lines, one thread each: the matches are the same,
    in the same order, wherever the cuts fall (a run may be empty; the last line may lack its feed)."""
    from rankautopsy.scan import engine as engine_module

    monkeypatch.setattr(engine_module, "AHEAD_PARTS", parts)
    engine = _engine("re2")
    data = "\n".join(_AHEAD_LINES[i] for i in picks).encode() + (b"\n" if last_feed and picks else b"")
    budget = Budget()
    _, bulk = engine._allowed(StreamKind.RANK_LOG, False, budget)
    ahead = engine._ahead(memoryview(data), StreamKind.RANK_LOG, budget)
    assert (ahead.found, ahead.refused) == engine._find(data, bulk, budget)


def test_the_reader_hands_each_chunk_what_ahead_made_of_its_bytes_and_raises_what_it_raised() -> None:
    data = b"".join(b"line %d of the log\n" % i for i in range(400_000))
    chunks = read.ChunkReader(io.BytesIO(data), ahead=bytes)
    seen = [(c.ahead, bytes(c.buf[c.start : c.end]), c.lines) for c in chunks]
    assert sum(lines for _, _, lines in seen) == 400_000
    assert all(made == raw for made, raw, _ in seen if made is not None)
    assert sum(len(raw) for made, raw, _ in seen if made is not None) > len(data) // 2

    def fails(region: memoryview) -> object:
        raise LookupError("in the scanning thread")

    with pytest.raises(LookupError, match="scanning thread"):
        list(read.ChunkReader(io.BytesIO(data), ahead=fails))


@pytest.mark.skipif(load_re2() is None, reason="google-re2 is not installed here")
def test_an_error_in_a_thread_of_re2s_scan_ahead_is_raised_to_the_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    engine = _engine("re2")
    search = type(engine)._search

    def failing(self: Engine, raw: bytes, pos: int, end: int, rules: list[CompiledRule]) -> object:
        if threading.current_thread() is not threading.main_thread():
            raise MemoryError("in the second run")
        return search(self, raw, pos, end, rules)  # type: ignore[attr-defined]

    monkeypatch.setattr(type(engine), "_search", failing)
    data = "\n".join(_AHEAD_LINES * 4).encode()
    with pytest.raises(MemoryError, match="second run"):
        engine._ahead(memoryview(data), StreamKind.RANK_LOG, Budget())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    sizes=st.lists(st.integers(0, 700), min_size=1, max_size=400),
    lead=st.integers(0, 3),
    tail=st.sampled_from([b"", b"no line feed", b"x" * 20]),
    order=st.randoms(use_true_random=False),
    asked=st.integers(1, 60),
)
def test_a_line_number_counted_from_the_count_s_marks_is_the_number_a_plain_count_gives(
    monkeypatch: pytest.MonkeyPatch, sizes: list[int], lead: int, tail: bytes, order: object, asked: int
) -> None:
    """Lines of any length (many in one mark, or one over many), numbers asked in any order: counted from
    the mark before a line, or from the line asked just before, the number is the line feeds before it."""
    from rankautopsy.scan.chunkview import View

    monkeypatch.setattr(read, "MARK_BYTES", 64)  # marks every 64 bytes: lines cross them, and fill them
    monkeypatch.setattr(chunkview, "MARK_BYTES", 64)
    context = b"ctx\n" * lead
    body = b"".join(b"y" * n + b"\n" for n in sizes) + tail
    buf = bytearray(context + body)
    start, end = len(context), len(buf)
    lines, marks = read._count_lines(buf, start, end)
    assert lines == body.count(b"\n") + bool(tail)
    assert (marks is None) == (len(body) < 2 * 64 or len(body) > 64 * read.MARKS_UP_TO)
    chunk = read.Chunk(buf, 0, start, end, 1, lead + 1, 0, lines, True, None, marks)
    starts = [start] + [start + i + 1 for i, byte in enumerate(body) if byte == 0x0A and start + i + 1 < end]
    picks = [starts[i % len(starts)] for i in range(asked)]
    order.shuffle(picks)  # type: ignore[attr-defined]
    view = View(chunk)
    for at in picks:
        assert view.number(at) == lead + 1 + buf.count(b"\n", start, at)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_opening_line_s_rule_is_tried_there_alone_by_every_engine(engine: str, tmp_path: Path) -> None:
    """`at_start` rules are in no engine's scan: the opening line (blank and `...` lines skipped) is
    tried with them in the first chunk, and a frame further down is no hit of theirs."""
    frames = '  File "/opt/train.py", line 307, in <module>\n    main()\nValueError: bad sample 17\n'
    path = tmp_path / "console.log"
    path.write_text("\n...\n" + frames + "".join(f"step {i}\n" for i in range(20000)) + frames)
    hits, _ = scanned(path, engine)
    assert {(rule, number) for rule, number, _ in hits if rule.startswith("python.")} == {
        ("python.traceback-cut-top", 3)
    }


def test_a_followed_file_s_window_opens_the_input_only_at_its_first_line(tmp_path: Path) -> None:
    """`watch` scans each window of new lines as an input: one that starts at a frame of a traceback the
    window before read is no excerpt cut at its top."""
    from rankautopsy.live.stream import _window_source

    frames = b'  File "/opt/train.py", line 307, in <module>\n    main()\nValueError: bad sample 17\n'
    path = tmp_path / "rank_3.log"
    path.write_bytes(frames)
    source = _source(path)
    assert source is not None
    for base, want in ((0, {"python.traceback-cut-top"}), (12, set())):
        read_ = read_stream(_window_source(source, frames, base), CTX, _engine("hyperscan" if HYPERSCAN else "re"))
        assert {h.rule.rule.id for h in read_.hits} == want


@pytest.mark.parametrize("engine", ENGINES)
def test_an_opening_rule_reads_one_line_of_an_opening_it_matches_on_several(engine: str, tmp_path: Path) -> None:
    """An excerpt that opens inside load_state_dict's message: each of its indented lines could open the
    excerpt (`openings`), and the message is one exception, read once."""
    mismatch = "        size mismatch for w{i}: copying a param with shape torch.Size([1]) from checkpoint, the shape\n"
    path = tmp_path / "console.log"
    path.write_text("".join(mismatch.format(i=i) for i in range(5)) + "step 1\n")
    hits, _ = scanned(path, engine)
    assert [(rule, number) for rule, number, _ in hits if rule.startswith("python.")] == [
        ("python.state-dict-error-cut-top", 1)
    ]
