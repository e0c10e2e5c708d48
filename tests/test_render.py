"""Renderers: golden outputs for hand-built diagnoses, the JSON contract, and untrusted text.

Regenerate the golden files with `RANKAUTOPSY_UPDATE_GOLDEN=1 pytest tests/test_render.py`
and review the diff.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from diagnoses import SCENARIOS, at, clean_diagnosis, exception_diagnosis, loc, oom_diagnosis, span
from hypothesis import given
from hypothesis import strategies as st
from rich.console import Console

import rankautopsy
from rankautopsy.model import (
    Cause,
    Confidence,
    Diagnosis,
    Event,
    Evidence,
    Fate,
    FirstDeath,
    Outcome,
    Phase,
    RankReport,
    Role,
    RuledOut,
    SkippedInput,
    TimeOpen,
    TimeSpan,
    Verdict,
)
from rankautopsy.render import Format, render_text
from rankautopsy.render import json as rjson
from rankautopsy.render._labels import CAUSE_LABELS, FATE_LABELS, PHASE_LABELS, rank_ranges
from rankautopsy.render.json import render_json
from rankautopsy.render.terminal import make_console, render_terminal

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("RANKAUTOPSY_UPDATE_GOLDEN") == "1"
VERSION = "0.0.0-test"
WIDTH = 100
ISO_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


JSON_GOLDEN = ("python_exception", "host_oom", "clean")


# ---- helpers ----


def terminal_text(d: Diagnosis, console: Console | None = None) -> str:
    out = io.StringIO()
    render_terminal(d, console or make_console(out, WIDTH, color=False))
    return out.getvalue()


def check_golden(name: str, actual: str) -> None:
    """Compare with tests/golden/<name>; trailing spaces (rich pads lines) are not significant."""
    actual = "".join(line.rstrip(" ") + "\n" for line in actual.splitlines())
    path = GOLDEN / name
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(actual, encoding="utf-8")
    assert path.exists(), f"missing golden file {path}; run with RANKAUTOPSY_UPDATE_GOLDEN=1"
    assert actual == path.read_text(encoding="utf-8"), f"{name} differs; RANKAUTOPSY_UPDATE_GOLDEN=1 to update"


# ---- terminal (the layout and its goldens: tests/test_render_terminal.py) ----


def test_every_enum_member_has_a_label() -> None:
    assert set(CAUSE_LABELS) == set(Cause)
    assert set(FATE_LABELS) == set(Fate)
    assert set(PHASE_LABELS) == set(Phase)
    assert set(Format) >= {Format.TERMINAL, Format.JSON}


@pytest.mark.parametrize(
    ("ranks", "expected"),
    [
        ([0], "0"),
        ([0, 1, 2, 4, 5, 9], "0-2, 4-5, 9"),
        ([3, 1, 2, 2], "1-3"),
        (list(range(0, 40, 2)), "0, 2, 4, 6, 8, 10, 12, 14, … (20 ranks)"),
    ],
)
def test_rank_ranges(ranks: list[int], expected: str) -> None:
    assert rank_ranges(ranks) == expected


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        (span("07:01:02.345"), "2026-11-29 07:01:02.345 UTC"),
        (span("07:01:02"), "2026-11-29 07:01:02 UTC"),
        (span("07:01:02", 1), "2026-11-29 07:01:02.5 UTC (±0.5 s)"),
        (span("07:01:02", 20), "2026-11-29 07:01:12 UTC (±10 s)"),
        (TimeSpan(at("07:00:00"), at("07:10:00")), "between 2026-11-29 07:00:00 and 07:10:00 UTC"),
        (None, "unknown (no stamped line bounds it)"),
    ],
)
def test_when_is_rendered_as_point_error_or_interval(when: TimeSpan | None, expected: str) -> None:
    fd = FirstDeath(rank=2, cause=Cause.SEGFAULT, rule="kernel.segfault", time=when)
    verdict = Verdict(outcome=Outcome.FIRST_DEATH, first_death=fd, confidence=Confidence.HIGH)
    assert f"when        {expected}" in terminal_text(Diagnosis(verdict=verdict, ranks=(), events=(), inputs=()))


@pytest.mark.parametrize(
    ("open_end", "expected"),
    [
        (TimeOpen.ABOVE, "at or after 2026-11-29 07:01:02.345 UTC"),
        (TimeOpen.BELOW, "at or before 2026-11-29 07:01:09.500 UTC"),
    ],
)
def test_a_death_time_with_an_open_end_gives_only_its_bound_in_every_format(open_end: TimeOpen, expected: str) -> None:
    """Where only the start or the end of the logs closes it, no format gives the death a width (± or between)."""
    fd = FirstDeath(
        rank=2,
        cause=Cause.PYTHON_EXCEPTION,
        rule="python.traceback",
        time=TimeSpan(at("07:01:02.345"), at("07:01:09.5")),
        time_open=open_end,
    )
    d = Diagnosis(
        verdict=Verdict(outcome=Outcome.FIRST_DEATH, first_death=fd, confidence=Confidence.HIGH),
        ranks=(),
        events=(),
        inputs=(),
    )
    for fmt in Format:
        if fmt is Format.JSON:
            continue
        text = terminal_text(d) if fmt is Format.TERMINAL else render_text(d, fmt)
        assert expected in text, fmt
        assert "±" not in text and "between" not in text, fmt
    doc = json.loads(render_json(d, VERSION))
    validate_schema(doc)
    assert doc["verdict"]["first_death"]["time_open"] == open_end.value
    assert "time_open" not in json.loads(render_json(exception_diagnosis(), VERSION))["verdict"]["first_death"]


# ---- untrusted text ----

NASTY = (
    "[bold red]x[/] [link=http://e]click[/link] :smile: \x1b[31mred\x1b[0m \x1b]0;title\x07 "
    "nul\x00byte ``` `code` \x9b2J end"
)


def nasty_diagnosis() -> Diagnosis:
    d = exception_diagnosis()
    ev = Evidence(loc("logs/[bold]rank_2[/].log", 7), NASTY)
    fd = FirstDeath(
        rank=2,
        cause=Cause.ABORT,
        rule="[red]rule[/]",
        host="node[blink]02",
        time=span("07:00:00"),
        detail=NASTY,
        evidence=(ev,),
    )
    event = Event(
        rule="r",
        cause=Cause.ABORT,
        role=Role.CAUSE,
        where=ev.where,
        text=NASTY,
        rank=2,
        time=span("07:00:00"),
        facts={"k\x1b": NASTY},
    )
    verdict = Verdict(
        outcome=Outcome.FIRST_DEATH,
        first_death=fd,
        confidence=Confidence.HIGH,
        reasoning=(NASTY,),
        ruled_out=(RuledOut(0, NASTY),),
        remediation=(NASTY,),
        notes=(NASTY,),
    )
    ranks = (RankReport(rank=2, fate=Fate.FIRST_DEATH, host=NASTY, summary=NASTY),)
    return Diagnosis(
        verdict=verdict,
        ranks=ranks,
        events=(event,),
        inputs=d.inputs,
        skipped=(SkippedInput(NASTY, NASTY),),
    )


@pytest.mark.parametrize("markup_console", [False, True])
def test_log_text_renders_literally(markup_console: bool) -> None:
    out = io.StringIO()
    console = (
        Console(file=out, width=WIDTH, color_system=None) if markup_console else make_console(out, WIDTH, color=False)
    )
    render_terminal(nasty_diagnosis(), console)
    text = out.getvalue()
    assert "[bold red]x[/]" in text
    assert "[link=http://e]click[/link]" in text
    assert ":smile:" in text
    assert "  [bold]rank_2[/].log:7\n" in text  # the evidence path, literally, on its own line
    assert "    [bold red]x[/] [link=http://e]click[/link]" in text  # the literal text under it
    assert "`code`" in text and "```" in text
    assert "\x1b" not in text and "\x00" not in text and "\x07" not in text and "\x9b" not in text


def test_log_text_in_colour_carries_only_our_own_escapes() -> None:
    out = io.StringIO()
    console = Console(file=out, width=WIDTH, color_system="truecolor", force_terminal=True, _environ={})
    render_terminal(nasty_diagnosis(), console)
    text = out.getvalue()
    assert "[bold red]x[/]" in text
    assert "]0;title" not in text
    assert re.sub(r"\x1b\[[0-9;]*m", "", text).count("\x1b") == 0


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_any_text_renders_without_escape_bytes(text: str) -> None:
    ev = Evidence(loc(text, 1), text)
    fd = FirstDeath(rank=0, cause=Cause.ABORT, rule=text, host=text, detail=text, evidence=(ev,))
    d = Diagnosis(
        verdict=Verdict(outcome=Outcome.FIRST_DEATH, first_death=fd, confidence=Confidence.LOW, notes=(text,)),
        ranks=(RankReport(rank=0, fate=Fate.FIRST_DEATH, summary=text),),
        events=(),
        inputs=(),
    )
    rendered = terminal_text(d)
    rendered.encode("utf-8")
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", rendered)
    assert json.loads(render_json(d, VERSION))["verdict"]["first_death"]["detail"] is not None


# ---- JSON ----


@pytest.mark.parametrize("name", JSON_GOLDEN)
def test_json_golden(name: str) -> None:
    check_golden(f"{name}.json", render_json(SCENARIOS[name](), VERSION) + "\n")


SCHEMA_FILE = Path(rankautopsy.__file__).parent / "schema" / "diagnosis-2.json"


def validate_schema(doc: Any) -> None:
    """The shipped JSON Schema accepts the document (the contract and the renderer agree)."""
    import jsonschema

    jsonschema.validate(doc, json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))


def test_schema_rejects_a_confident_undetermined_verdict() -> None:
    doc = json.loads(render_json(SCENARIOS["python_exception"](), VERSION))
    doc["verdict"] |= {"outcome": "undetermined", "first_death": None, "confidence": "high"}
    with pytest.raises(Exception, match="high"):
        validate_schema(doc)


def _times(doc: Any) -> list[str]:
    found: list[str] = []
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key in ("earliest", "latest", "last_seen") and value is not None:
                found.append(value)
            else:
                found += _times(value)
    elif isinstance(doc, list):
        for item in doc:
            found += _times(item)
    return found


@pytest.mark.parametrize("name", SCENARIOS)
def test_json_contract(name: str) -> None:
    d = SCENARIOS[name]()
    doc = json.loads(render_json(d, VERSION))
    assert list(doc) == ["schema", "tool", "verdict", "ranks", "events", "inputs", "skipped"]
    assert doc["schema"] == 2
    assert doc["tool"] == {"name": "rankautopsy", "version": VERSION}
    verdict = doc["verdict"]
    validate_schema(doc)
    assert verdict["outcome"] == d.verdict.outcome.value
    fd = d.verdict.first_death
    if fd is None:
        assert verdict["first_death"] is None and verdict["hang"] is False
    else:
        assert verdict["first_death"]["rank"] == fd.rank
        assert verdict["first_death"]["cause"] == fd.cause.value
        assert verdict["hang"] == (d.verdict.outcome is Outcome.HANG)
    assert all(ISO_Z.match(t) for t in _times(doc))
    assert [r["rank"] for r in doc["ranks"]] == [r.rank for r in d.ranks]
    assert all(0 <= i < len(doc["events"]) for r in doc["ranks"] for i in r["events"])
    assert len(doc["inputs"]) == len(d.inputs)


def test_json_times_are_utc_z_with_microseconds() -> None:
    doc = json.loads(render_json(oom_diagnosis(), VERSION))
    assert doc["verdict"]["first_death"]["time"] == {
        "earliest": "2026-11-29T07:01:02.000000Z",
        "latest": "2026-11-29T07:01:03.000000Z",
    }


def test_json_survives_any_text() -> None:
    d = nasty_diagnosis()
    bad = 'lone \ud800 and pair \ud83d\ude00 and \x00 \x1b \x9b \x7f "quoted"'
    fd = FirstDeath(rank=1, cause=Cause.SEGFAULT, rule="r", detail=bad, evidence=(Evidence(loc(bad, 1), bad),))
    d = Diagnosis(
        verdict=Verdict(outcome=Outcome.FIRST_DEATH, first_death=fd, confidence=Confidence.LOW),
        ranks=d.ranks,
        events=d.events,
        inputs=d.inputs,
    )
    out = render_json(d, VERSION)
    out.encode("utf-8")
    assert "\x1b" not in out and "\x9b" not in out and "\x00" not in out
    detail = json.loads(out)["verdict"]["first_death"]["detail"]
    assert detail == 'lone \ufffd and pair \U0001f600 and \x00 \x1b \x9b \x7f "quoted"'


@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
def test_json_is_valid_utf8_json_for_any_text(text: str) -> None:
    event = Event(
        rule=text,
        cause=Cause.CONTEXT,
        role=Role.CONTEXT,
        where=loc(text, 1),
        text=text,
        host=text,
        facts={text: text},
    )
    d = Diagnosis(
        verdict=Verdict(outcome=Outcome.UNDETERMINED, first_death=None, confidence=Confidence.LOW, notes=(text,)),
        ranks=(),
        events=(event,),
        inputs=(),
        skipped=(SkippedInput(text, text),),
    )
    out = render_json(d, VERSION)
    out.encode("utf-8")
    assert json.loads(out)["events"][0]["line"] == 1


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet=st.characters(codec=None, exclude_categories=())),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(alphabet=st.characters(codec=None, exclude_categories=())), inner, max_size=4)
    ),
    max_leaves=30,
)


def _safe_reference(text: str) -> str:
    """What the JSON contract makes of text: lone surrogates U+FFFD, DEL and C1 controls \\u-escaped."""
    text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return re.sub(r"[\x7f-\x9f]", lambda m: f"\\u{ord(m.group()):04x}", text)


@given(_JSON_VALUES)
def test_json_writer_is_the_standard_librarys_indent_2_made_safe(value: Any) -> None:
    assert rjson.dumps(value) == _safe_reference(json.dumps(value, ensure_ascii=False, indent=2))


@given(st.datetimes(datetime(1000, 1, 2), datetime(9999, 12, 30), timezones=st.none() | st.timezones()))
def test_json_times_are_utc_with_microseconds(at: datetime) -> None:
    utc = at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)
    assert rjson.iso(at) == utc.replace(tzinfo=None).isoformat(sep="T", timespec="microseconds") + "Z"
    assert ISO_Z.match(rjson.iso(at))


def test_json_version_defaults_without_package_version() -> None:
    assert json.loads(render_json(clean_diagnosis()))["tool"]["version"]


def test_json_renderer_does_not_import_rich() -> None:
    code = "import sys, rankautopsy.render.json; print(sorted(m for m in sys.modules if 'rich' in m))"
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_make_console_colour_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    plain, coloured = io.StringIO(), io.StringIO()
    render_terminal(oom_diagnosis(), make_console(plain, WIDTH, color=False))
    render_terminal(oom_diagnosis(), make_console(coloured, WIDTH, color=True))
    assert "\x1b" not in plain.getvalue()
    assert "\x1b[" in coloured.getvalue()


@given(st.lists(_JSON_VALUES, max_size=5), st.integers(0, 3))
def test_a_list_written_item_by_item_is_the_list_written_whole(items: list[Any], depth: int) -> None:
    """Ranks and events are written one at a time (`_Each`): the same bytes as the list they make."""
    whole: Any = [dict(item=i) for i in items]
    each: Any = rjson._Each(items, lambda i: dict(item=i))
    for _ in range(depth):
        whole, each = {"k": whole}, {"k": each}
    assert rjson.dumps(each) == rjson.dumps(whole)
