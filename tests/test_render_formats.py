"""Markdown, GitHub annotations, JUnit XML and HTML: golden files, parsing, and escaping per medium.

Regenerate the golden files with `RANKAUTOPSY_UPDATE_GOLDEN=1 pytest tests/test_render_formats.py`
and review the diff.
"""

from __future__ import annotations

import html as htmllib
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest
from diagnoses import SCENARIOS, at, clean_diagnosis, exception_diagnosis, hang_diagnosis, loc, oom_diagnosis, span
from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from test_render import check_golden

from rankautopsy.model import (
    Cause,
    Confidence,
    Diagnosis,
    Event,
    Evidence,
    Fate,
    FirstDeath,
    Input,
    Outcome,
    RankReport,
    Role,
    RuledOut,
    SkippedInput,
    StreamKind,
    TimeSpan,
    Verdict,
)
from rankautopsy.render import Format, render_text
from rankautopsy.render._labels import named, plain
from rankautopsy.render.github import SUMMARY_HINT, escape_data, escape_property, render_github
from rankautopsy.render.html import render_html
from rankautopsy.render.json import render_json
from rankautopsy.render.junit import render_junit, xml_text
from rankautopsy.render.markdown import code, escape, fence, prose, render_markdown
from rankautopsy.render.swimlanes import fit, text_width

RENDERERS: dict[str, Callable[[Diagnosis], str]] = {
    "md": render_markdown,
    "github": lambda d: render_github(d, workspace=""),
    "junit.xml": render_junit,
    "html": render_html,
}
# the 1,024-rank JUnit and HTML files are half a megabyte each: checked by structure, not by golden
BIG = {("hang_1024", "junit.xml"), ("hang_1024", "html")}
_GH_LINE = re.compile(r"^::(?P<cmd>error|warning|notice)(?: (?P<props>[^:]*))?::(?P<msg>.*)$")
_TEXT_ALPHABET = st.characters(codec=None, exclude_categories=())


# ---- the escaping fixture: log text that means something in every medium ----

NASTY = (
    "[bold]x[/] `one` ``two`` ```three``` `````five````` 100% done ::error::pwned ,:%0A "
    '<script>alert("x")</script> &amp; \x1b[31mred\x1b[0m nul\x00 vt\x0b nonchar\ufffe '
    "| *star* _under_ # @someone $math$ ~~gone~~ [link](http://e) <!-- c --> ]]> end"
)
NASTY_FILE = "logs/a,b:c%d::e.log"
CLEAN_NASTY = (
    "[bold]x[/] `one` ``two`` ```three``` `````five````` 100% done ::error::pwned ,:%0A "
    '<script>alert("x")</script> &amp; red nul vt nonchar\ufffe '
    "| *star* _under_ # @someone $math$ ~~gone~~ [link](http://e) <!-- c --> ]]> end"
)


def nasty_diagnosis() -> Diagnosis:
    d = exception_diagnosis()
    evidence = (Evidence(loc(NASTY_FILE, 7), NASTY), Evidence(loc(NASTY_FILE, 8), "second\x1b]0;title\x07 line"))
    fd = FirstDeath(
        rank=2,
        cause=Cause.ABORT,
        rule="rules.`x`,y:z",
        host="node<02>",
        pid=7,
        time=span("07:01:02.345"),
        detail=NASTY,
        evidence=evidence,
    )
    event = Event(
        rule=fd.rule,
        cause=Cause.ABORT,
        role=Role.CAUSE,
        where=evidence[0].where,
        text=NASTY,
        rank=2,
        time=fd.time,
    )
    symptom = Event(
        rule="nccl.watchdog-timeout",
        cause=Cause.COLLECTIVE_TIMEOUT,
        role=Role.SYMPTOM,
        where=loc("logs/rank_0,%::.log", 9),
        text=NASTY,
        rank=0,
        time=span("07:11:02.380"),
    )
    ranks = (
        RankReport(rank=0, fate=Fate.COLLATERAL, host=NASTY, last_seen=at("07:11:02.380"), summary=NASTY, events=(1,)),
        RankReport(rank=2, fate=Fate.FIRST_DEATH, host="node<02>", last_seen=at("07:01:02.345"), summary=NASTY),
    )
    verdict = Verdict(
        outcome=Outcome.FIRST_DEATH,
        first_death=fd,
        confidence=Confidence.HIGH,
        reasoning=(NASTY,),
        ruled_out=(RuledOut(0, NASTY),),
        remediation=(NASTY, "run `py-spy dump --pid <pid>` then `x | y`"),
        notes=(NASTY,),
    )
    return Diagnosis(
        verdict=verdict,
        ranks=ranks,
        events=(event, symptom),
        inputs=d.inputs,
        skipped=(SkippedInput(NASTY_FILE, NASTY),),
    )


ALL = {**SCENARIOS, "escaping": nasty_diagnosis}


# ---- golden files, and every output parses ----


@pytest.mark.parametrize("ext", RENDERERS)
@pytest.mark.parametrize("name", ALL)
def test_golden(name: str, ext: str) -> None:
    if (name, ext) in BIG:
        pytest.skip("checked by structure (too big for a golden file)")
    check_golden(f"{name}.{ext}", RENDERERS[ext](ALL[name]()) + "\n")


@pytest.mark.parametrize("name", ALL)
def test_render_is_deterministic(name: str) -> None:
    for render in RENDERERS.values():
        assert render(ALL[name]()) == render(ALL[name]())


@pytest.mark.parametrize("fmt", [f for f in Format if f is not Format.TERMINAL])
def test_render_text_dispatches_every_format(fmt: Format) -> None:
    d = oom_diagnosis()
    direct = {
        Format.JSON: render_json,
        Format.MARKDOWN: render_markdown,
        Format.GITHUB: render_github,
        Format.JUNIT: render_junit,
        Format.HTML: render_html,
    }
    assert render_text(d, fmt) == direct[fmt](d)


def test_render_text_refuses_the_terminal() -> None:
    with pytest.raises(ValueError, match="Console"):
        render_text(clean_diagnosis(), Format.TERMINAL)


def test_render_package_imports_no_renderer_and_no_rich() -> None:
    code_ = (
        "import sys, rankautopsy.render as r; from rankautopsy.render import render_text, Format\n"
        "before = sorted(m for m in sys.modules if 'rich' in m or m.startswith('rankautopsy.render.'))\n"
        "from rankautopsy.render.html import render_html; import rankautopsy.render.markdown, "
        "rankautopsy.render.github, rankautopsy.render.junit\n"
        "after = sorted(m for m in sys.modules if 'rich' in m)\n"
        "print(before, after)"
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code_], cwd=root, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[] []"


@pytest.mark.parametrize("name", ALL)
def test_junit_parses_one_case_per_rank(name: str) -> None:
    d = ALL[name]()
    root = ET.fromstring(render_junit(d).encode("utf-8"))
    suite = root.find("testsuite")
    assert root.tag == "testsuites" and suite is not None and suite.get("name") == "rankautopsy"
    cases = suite.findall("testcase")
    job = named(d.verdict) is None and d.verdict.outcome in (
        Outcome.UNDETERMINED,
        Outcome.HANG,
    )  # no culprit: a job case
    ranks = [f"rank {r.rank}" for r in sorted(d.ranks, key=lambda r: r.rank)]
    assert [c.get("name") for c in cases] == ["job"] * job + ranks
    failed = {r.rank for r in d.ranks if r.fate in (Fate.FIRST_DEATH, Fate.DIED)}
    skipped = {r.rank for r in d.ranks if r.fate in (Fate.COLLATERAL, Fate.TORN_DOWN)}
    assert suite.get("tests") == str(len(cases)) and suite.get("failures") == str(len(failed) + job)
    assert suite.get("skipped") == str(len(skipped))
    if job:
        failure = cases[0].find("failure")
        assert failure is not None and failure.get("type") == d.verdict.outcome.value
    for case, r in zip(cases[job:], sorted(d.ranks, key=lambda r: r.rank), strict=True):
        failure, skip = case.find("failure"), case.find("skipped")
        if r.rank in skipped:
            assert failure is None and skip is not None and xml_text(r.summary) in skip.get("message", "")
        elif r.rank not in failed:
            assert failure is None and skip is None
        elif r.fate is Fate.FIRST_DEATH:
            assert d.verdict.first_death is not None
            assert failure is not None and failure.get("type") == d.verdict.first_death.cause.value
            assert all(ev.where.source in (failure.text or "") for ev in d.verdict.first_death.evidence)
        else:
            assert failure is not None and failure.get("type") == r.fate.value


def test_junit_time_limit_of_unknown_rank_is_a_job_case() -> None:
    d = clean_diagnosis()
    fd = FirstDeath(rank=None, cause=Cause.TIME_LIMIT, rule="slurm.time-limit", detail="CANCELLED DUE TO TIME LIMIT")
    d = replace(d, verdict=Verdict(outcome=Outcome.FIRST_DEATH, first_death=fd, confidence=Confidence.HIGH))
    cases = ET.fromstring(render_junit(d)).findall("testsuite/testcase")
    assert cases[0].get("name") == "job"
    failure = cases[0].find("failure")
    assert failure is not None and failure.get("type") == "time_limit"


# ---- HTML structure ----


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.starts: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append((tag, dict(attrs)))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.starts.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse_html(page: str) -> _Tags:
    assert page.startswith("<!DOCTYPE html>\n")
    ET.fromstring(page.removeprefix("<!DOCTYPE html>\n"))  # well-formed as XML too
    tags = _Tags()
    tags.feed(page)
    tags.close()
    return tags


def lanes(tags: _Tags) -> list[str]:
    return [
        attrs.get("data-rank") or ""
        for tag, attrs in tags.starts
        if tag == "g" and "lane" in (attrs.get("class") or "").split()
    ]


@pytest.mark.parametrize("name", ALL)
def test_html_has_one_lane_per_rank(name: str) -> None:
    d = ALL[name]()
    tags = parse_html(render_html(d))
    assert sorted(lanes(tags), key=int) == [str(r.rank) for r in sorted(d.ranks, key=lambda r: r.rank)]


def test_html_is_self_contained() -> None:
    page = render_html(hang_diagnosis())
    tags = parse_html(page)
    assert {tag for tag, _ in tags.starts} >= {"svg", "style", "table"}
    assert not {"script", "link", "img", "iframe", "object", "embed"} & {tag for tag, _ in tags.starts}
    assert not [attrs for _, attrs in tags.starts if "src" in attrs or "href" in attrs]
    assert "url(" not in page and "@import" not in page and "@font-face" not in page
    assert re.findall(r"https?://[^\s\"']+", page) == ["http://www.w3.org/2000/svg"]


def test_html_big_job_labels_a_few_lanes_and_always_the_culprit() -> None:
    page = render_html(hang_diagnosis())
    labels = re.findall(r'<text class="rank"[^>]*>([^<]+)</text>', page)
    assert 16 <= len(labels) <= 64
    assert "rank 517" in labels and "rank 0" in labels
    assert "collective timeouts from 07:10:40.000" in page
    assert "rank 517 stopped making progress after 07:00:40.250" in page


def test_html_small_job_labels_every_lane_and_says_what_ended_it() -> None:
    page = render_html(exception_diagnosis())
    labels = re.findall(r'<text class="rank"[^>]*>([^<]+)</text>', page)
    assert sorted(labels) == ["rank 0", "rank 1", "rank 2", "rank 3"]
    assert "rank 2 died · 07:01:02.345" in page
    assert "collective timeouts from 07:11:02.380 (10 min later)" in page
    assert page.count('class="what"') == 4  # the culprit's lane says what ended it too


def test_html_without_timestamps_says_so() -> None:
    d = exception_diagnosis()
    fd = FirstDeath(rank=2, cause=Cause.SEGFAULT, rule="kernel.segfault")
    ranks = tuple(replace(r, last_seen=None) for r in d.ranks)
    d = replace(
        d,
        events=(),
        ranks=ranks,
        verdict=Verdict(outcome=Outcome.FIRST_DEATH, first_death=fd, confidence=Confidence.LOW),
    )
    page = render_html(d)
    parse_html(page)
    assert "no timeline to draw" in page


def test_html_cuts_a_long_calm_before_the_failure() -> None:
    d = exception_diagnosis()
    start = replace(d.events[0], time=TimeSpan(at("01:00:00"), at("01:00:00")))
    page = render_html(replace(d, events=(start, *d.events[1:])))
    assert "the logs begin 5 h 45 min earlier, at 2026-11-29 01:00:00" in page


# ---- Markdown ----


def md_html(text: str) -> str:
    return MarkdownIt("commonmark").enable("table").enable("strikethrough").render(text)


def test_markdown_heading_names_rank_cause_when_confidence() -> None:
    first = render_markdown(exception_diagnosis()).splitlines()[0]
    assert first == "## Rank 2 died first: uncaught Python exception · 2026-11-29 07:01:02.345 UTC · high confidence"


def test_markdown_groups_ranks_beyond_32() -> None:
    text = render_markdown(hang_diagnosis())
    assert "| 0-511, 520-1023 | 1,016 | 127 hosts | collateral |" in text
    assert len(text.splitlines()) < 60


def test_markdown_checklist_is_task_items() -> None:
    text = render_markdown(oom_diagnosis())
    assert "- [ ] Make it visible sooner: watch `free -g` / node memory metrics during the first steps." in text


@given(st.text(alphabet=_TEXT_ALPHABET), st.sampled_from(["", "x ", "- [ ] ", "| a | "]))
def test_markdown_escape_renders_back_to_the_text(text: str, before: str) -> None:
    squashed = " ".join(plain(text).split())
    rendered = md_html(f"{before}{escape(text)}")
    inner = re.sub(r"^(<ul>\n<li>|<p>)|(</li>\n</ul>|</p>)\n$", "", rendered)
    assert "<" not in inner
    assert htmllib.unescape(inner).strip() == f"{before.removeprefix('- ')}{squashed}".strip()


@given(st.text(alphabet=_TEXT_ALPHABET))
def test_markdown_fence_survives_any_backticks(text: str) -> None:
    body = plain(text).replace("\r", "")
    rendered = md_html(fence(body, "text"))
    blocks = re.findall(r"<pre><code[^>]*>(.*?)</code></pre>", rendered, re.S)
    assert len(blocks) == 1
    assert htmllib.unescape(blocks[0]) == body + "\n"


def test_markdown_code_span_survives_backticks() -> None:
    for text in ["a`b", "``", "`start", "end`", "x ``` y ````` z"]:
        assert md_html(code(text)) == f"<p><code>{htmllib.escape(text, quote=False)}</code></p>\n"


def test_markdown_escaping_fixture() -> None:
    text = render_markdown(nasty_diagnosis())
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", text)
    fences = re.findall(r"^(`{3,})text$", text, re.M)
    assert fences == ["``````"]  # longer than the five backticks in the log
    rendered = md_html(text)
    assert "<script>" not in rendered and "<!--" not in rendered and "<a " not in rendered
    assert "<strong>star" not in rendered and "<em>" not in rendered and "<del>" not in rendered
    assert htmllib.escape(CLEAN_NASTY) in rendered  # inside the code block, byte for byte
    flat = htmllib.unescape(re.sub(r"<[^>]+>", "", rendered))
    assert '<script>alert("x")</script> &amp;' in flat
    assert "| *star* _under_ # @someone $math$ ~~gone~~ [link](http://e)" in flat
    assert rendered.count("<table>") == 1 and rendered.count("<tr>") == 3  # a `|` in a cell splits nothing
    assert "<code>py-spy dump --pid &lt;pid&gt;</code>" in rendered


# ---- GitHub workflow commands ----


def unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(text: str) -> str:
    return unescape_data(text.replace("%3A", ":").replace("%2C", ","))


def commands(text: str) -> list[tuple[str, dict[str, str], str]]:
    out = []
    for line in text.split("\n"):
        m = _GH_LINE.match(line)
        assert m, f"not a workflow command: {line!r}"
        props = dict(p.split("=", 1) for p in (m["props"] or "").split(",") if p)
        out.append((m["cmd"], {k: unescape_property(v) for k, v in props.items()}, unescape_data(m["msg"])))
    return out


def test_github_escapes_like_actions_toolkit() -> None:
    assert escape_data("100%\r\n:,") == "100%25%0D%0A:,"
    assert escape_property("100%\r\n:,") == "100%25%0D%0A%3A%2C"
    assert escape_property("%3A") == "%253A"


def test_github_is_one_short_error_at_the_decisive_line() -> None:
    cmds = commands(render_github(oom_diagnosis(), workspace=""))
    assert [c[0] for c in cmds] == ["error"]
    _, props, msg = cmds[0]
    assert props == {"file": "dmesg.txt", "line": "812", "title": "rankautopsy: rank 3 died first — host OOM"}
    assert msg.split("\n") == [
        "Rank 3 (node07, pid 4242) died first: out of host memory (OOM-killer)"
        " — the kernel killed pid 4242 (python), anon-rss 398765432 kB",
        "2026-11-29 07:01:02.5 UTC (±0.5 s) · high confidence · 2 collateral",
        "Fix the cause: reduce host memory per rank (fewer DataLoader workers, no dataset copies per rank,"
        " pin_memory=False).",
        SUMMARY_HINT,
    ]


def test_github_points_at_the_exception_line_not_the_traceback_header() -> None:
    _, props, msg = commands(render_github(exception_diagnosis(), workspace=""))[0]
    assert (props["file"], props["line"]) == ("logs/rank_2.log", "1208")  # `ValueError: bad sample 1234`
    assert "Traceback" not in msg and "What to do" not in msg and "Fail fast" not in msg


def test_github_a_thousand_ranks_are_still_one_annotation() -> None:
    cmds = commands(render_github(hang_diagnosis(), workspace=""))
    assert [c[0] for c in cmds] == ["error"]
    assert cmds[0][1]["title"] == "rankautopsy: rank 517 is the hang culprit"
    assert " · 1,016 collateral, 7 torn down" in cmds[0][2]


def test_github_clean_run_is_a_notice() -> None:
    cmds = commands(render_github(clean_diagnosis()))
    assert [(c[0], c[1]) for c in cmds] == [("notice", {"title": "rankautopsy: clean"})]


def test_github_escaping_fixture() -> None:
    text = render_github(nasty_diagnosis(), workspace="")
    assert "\r" not in text and "\x1b" not in text and "\x00" not in text and "\x0b" not in text
    cmds = commands(text)  # one line per command: no log text starts a line of its own
    assert [c[0] for c in cmds] == ["error"]
    _, props, msg = cmds[0]
    assert props["file"] == NASTY_FILE and props["line"] == "7"
    lead = "Rank 2 (node<02>, pid 7) died first: aborted (SIGABRT, C++ terminate, MPI abort)"
    assert msg.split("\n")[0].startswith(f"{lead} — {CLEAN_NASTY[:100]}")
    assert CLEAN_NASTY in msg.split("\n")  # the remediation hint, unclipped
    assert props["title"] == "rankautopsy: rank 2 died first — abort"


# ---- JUnit and HTML escaping ----


def test_junit_escaping_fixture() -> None:
    text = render_junit(nasty_diagnosis())
    assert "\x00" not in text and "\x0b" not in text and "\ufffe" not in text and "\x1b" not in text
    root = ET.fromstring(text.encode("utf-8"))
    failure = root.find("testsuite/testcase[@name='rank 2']/failure")
    assert failure is not None and failure.text is not None
    assert CLEAN_NASTY.replace("\ufffe", "\ufffd") in failure.text
    assert failure.get("message", "").endswith(CLEAN_NASTY.replace("\ufffe", "\ufffd"))
    assert "<script>" not in text and "&lt;script&gt;" in text


def test_html_escaping_fixture() -> None:
    page = render_html(nasty_diagnosis())
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ufffe\uffff]", page)
    tags = parse_html(page)
    assert "script" not in {tag for tag, _ in tags.starts}
    assert CLEAN_NASTY.replace("\ufffe", "") in "".join(tags.text)
    assert "<code>py-spy dump --pid &lt;pid&gt;</code>" in page


@given(st.text(alphabet=_TEXT_ALPHABET))
def test_junit_and_html_are_well_formed_for_any_text(text: str) -> None:
    ev = Evidence(loc(text, 1), text)
    fd = FirstDeath(rank=0, cause=Cause.ABORT, rule=text, host=text, detail=text, evidence=(ev,), time=span("07:00:00"))
    d = Diagnosis(
        verdict=Verdict(
            outcome=Outcome.FIRST_DEATH, first_death=fd, confidence=Confidence.LOW, notes=(text,), remediation=(text,)
        ),
        ranks=(RankReport(rank=0, fate=Fate.FIRST_DEATH, host=text, summary=text, last_seen=at("07:00:00")),),
        events=(),
        inputs=(Input(path=text, kind=StreamKind.RANK_LOG),),
        skipped=(SkippedInput(text, text),),
    )
    ET.fromstring(render_junit(d).encode("utf-8"))
    parse_html(render_html(d)).close()
    for line in render_github(d).split("\n"):
        assert _GH_LINE.match(line)
    render_markdown(d).encode("utf-8")


def test_json_renderer_still_matches_its_golden_through_render_text() -> None:
    doc = json.loads(render_text(exception_diagnosis(), Format.JSON))
    assert doc["verdict"]["first_death"]["rank"] == 2


@given(st.text(alphabet=_TEXT_ALPHABET))
def test_markdown_prose_makes_nothing_but_code_spans(text: str) -> None:
    rendered = md_html(f"- [ ] {prose(text)}")
    assert set(re.findall(r"</?([a-z]+)", rendered)) <= {"ul", "li", "code", "p"}


def svg_words(page: str) -> tuple[str, str]:
    title = re.search(r'<title id="timeline-title">([^<]*)</title>', page)
    desc = re.search(r'<desc id="timeline-desc">([^<]*)</desc>', page)
    assert title and desc and 'aria-labelledby="timeline-title timeline-desc"' in page
    return htmllib.unescape(title[1]), htmllib.unescape(desc[1])


def test_html_picture_title_and_desc_state_the_verdict() -> None:
    title, desc = svg_words(render_html(exception_diagnosis()))
    assert title == "Timeline of 4 ranks — rank 2 died first: exception (high)"
    assert desc.startswith(
        "Rank 2 (node02, pid 2002) died first: uncaught Python exception — ValueError: bad sample 1234"
    )
    assert "at 2026-11-29 07:01:02.345 UTC" in desc and "2 collateral, 1 torn down" in desc
    title, desc = svg_words(render_html(hang_diagnosis()))
    assert "rank 517 is the hang culprit" in title and "Rank 517 (node064, pid 9005) is the hang culprit" in desc


def test_html_first_death_words_sit_above_the_lanes_not_on_its_lane() -> None:
    page = render_html(exception_diagnosis())
    assert 'class="callout"' not in page
    guide = re.search(r'<text class="guide death" x="[\d.]+" y="(\d+)"[^>]*>([^<]*)</text>', page)
    top = re.search(r'<rect class="plot" x="[\d.]+" y="([\d.]+)"', page)
    assert guide and top and float(guide[1]) < float(top[1])
    assert guide[2] == "rank 2 died · 07:01:02.345 · exception — ValueError: bad sample 1234"


def test_html_evidence_marks_the_exception_line_as_decisive() -> None:
    page = render_html(exception_diagnosis())
    assert '<span class="decisive"><span class="ln">1208</span>ValueError: bad sample 1234</span>' in page


def test_swimlane_words_that_do_not_fit_are_cut_to_fit() -> None:
    assert text_width("界", 12) > text_width("x", 12) > text_width("i", 12)
    long = "W" * 400
    cut = fit(long, 300, 12, bold=True)
    assert cut.endswith("…") and text_width(cut, 12, bold=True) <= 300 < text_width(long, 12, bold=True)
    assert fit("short", 300, 12) == "short"


def test_markdown_names_an_evidence_blocks_lines_as_the_runs_it_shows() -> None:
    from rankautopsy.render.markdown import LISTED_LINES, _numbers

    assert _numbers([131]) == "line 131"
    assert _numbers([125, 126, 131]) == "lines 125-126, 131"  # the decisive line 131 was listed first
    assert _numbers([7, 8]) == "lines 7-8"
    spread = list(range(0, 4 * (LISTED_LINES + 1), 4))
    assert _numbers(spread) == f"{len(spread)} lines from 0 to {spread[-1]}"
