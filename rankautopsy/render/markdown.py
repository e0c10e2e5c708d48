"""Markdown for `$GITHUB_STEP_SUMMARY`, tickets and chat (GitHub-flavoured, CommonMark-safe).

Log text is either escaped prose (every Markdown/HTML-significant character backslash-escaped,
newlines folded) or sits in a code fence longer than any backtick run in it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from rankautopsy import recache
from rankautopsy.model import Diagnosis, Evidence, Fate, FirstDeath, RankReport, StreamKind, Verdict
from rankautopsy.render._labels import (
    FATE_LABELS,
    PHASE_LABELS,
    clip,
    clock,
    death_when,
    evidence_blocks,
    group_ranks,
    headline,
    is_clean,
    named,
    one_line,
    outcome_label,
    outcome_lines,
    plain,
    rank_ranges,
    rule_text,
    ruled_out_line,
    spans_days,
)

GROUP_ABOVE_RANKS = 32
MAX_GROUPS = 32
EVIDENCE_CHARS = 2000
CELL_CHARS = 200

_SPECIAL = recache.compile(r"([\\`*_\[\]<>|~&$#@])")
_BLOCK_START = recache.compile(r"^(\d{1,9})([.)])|^([-+=])")
_BACKTICKS = recache.compile(r"`+")
_CODE = recache.compile(r"(?<!`)`([^`]+)`(?!`)")
_INPUT_KINDS = {
    StreamKind.RANK_LOG: "rank log",
    StreamKind.CONSOLE: "console log",
    StreamKind.KERNEL: "kernel log",
    StreamKind.ERROR_JSON: "torchrun error file",
}


def render_markdown(d: Diagnosis) -> str:
    v = d.verdict
    clean_run = is_clean(v)
    parts = [_verdict(d, clean_run)]
    if v.first_death is not None and v.first_death.evidence:
        parts.append(_section("Evidence", _evidence(v.first_death.evidence)))
    title = "What the ranks did" if named(v) is None else "What the other ranks did"
    parts.append(_section(title, _ranks(d.ranks, spans_days(d))))
    parts.append(_section("Ruled out", _list("-", [ruled_out_line(r.rank, r.why) for r in v.ruled_out])))
    if not clean_run:
        parts.append(_section("Reasoning", _list("1.", v.reasoning)))
    parts.append(_section("What to do", _list("- [ ]", v.remediation, prose)))
    if named(v) is not None or clean_run:
        parts.append(_section("Notes", _list("-", v.notes)))
    parts.append(_section("Skipped inputs", _list("-", [f"{s.path}: {s.reason}" for s in d.skipped])))
    parts.append(_footer(d))
    return "\n\n".join(p for p in parts if p)


def escape(text: str) -> str:
    """Prose: one line, every character Markdown or HTML could act on backslash-escaped."""
    return _escape(_squash(text), first=True)


def prose(text: str) -> str:
    """`escape`, but the `code` spans that rule packs write in their remediation stay (safe) code spans."""
    parts = _CODE.split(_squash(text))
    return "".join(code(part) if i % 2 else _escape(part, first=i == 0) for i, part in enumerate(parts))


def _squash(text: str) -> str:
    return " ".join(plain(text).split())


def _escape(text: str, first: bool) -> str:
    text = _SPECIAL.sub(r"\\\1", text)
    return _BLOCK_START.sub(_unblock, text) if first else text


def _unblock(m: re.Match[str]) -> str:
    return f"{m[1]}\\{m[2]}" if m[1] else f"\\{m[3]}"


def fence(text: str, info: str = "") -> str:
    """A code block that no backtick run inside the text can close."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{info}\n{text}\n{ticks}"


def code(text: str) -> str:
    """An inline code span that survives backticks in the text."""
    text = one_line(plain(text))
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith(("`", " ")) or text.endswith(("`", " ")) else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def _section(title: str, body: str) -> str:
    return f"### {title}\n\n{body}" if body else ""


def _list(marker: str, lines: Sequence[str], fmt: Callable[[str], str] = escape) -> str:
    """A list; the marker `1.` numbers the items."""
    marks = [f"{n}." for n in range(1, len(lines) + 1)] if marker == "1." else [marker] * len(lines)
    return "\n".join(f"{mark} {fmt(line)}" for mark, line in zip(marks, lines, strict=True))


# ---- verdict -----------------------------------------------------------------------------------


def _verdict(d: Diagnosis, clean_run: bool) -> str:
    v = d.verdict
    fd = named(v)
    if fd is not None:
        return _death(fd, v)
    words = outcome_label(v)[1]
    if clean_run:
        return "\n\n".join([f"## {escape(words)}", _list("-", v.reasoning)]).rstrip()
    return f"## {escape(words)} · {v.confidence.value} confidence\n\n{_list('-', outcome_lines(v))}"


def _death(fd: FirstDeath, v: Verdict) -> str:
    title = f"## {escape(headline(fd))} · {escape(death_when(fd))} · {v.confidence.value} confidence"
    facts = [f"**Phase:** {escape(PHASE_LABELS[fd.phase])}"]
    ids = ([escape(fd.host)] if fd.host else []) + ([] if fd.pid is None else [f"pid {fd.pid}"])
    if ids:
        facts.append(f"**Process:** {', '.join(ids)}")
    facts.append(f"**Rule:** {code(rule_text(fd))}")
    lines = [title, " · ".join(facts)]
    if fd.detail:
        lines.append(f"**{escape(fd.detail)}**")
    return "\n\n".join(lines)


def _evidence(evidence: Sequence[Evidence]) -> str:
    return "\n\n".join(_evidence_block(block) for block in evidence_blocks(evidence))


def _evidence_block(block: Sequence[Evidence]) -> str:
    lines = _numbers(sorted({ev.where.line for ev in block}))
    width = len(str(max(ev.where.line for ev in block)))
    body = "\n".join(f"{ev.where.line:>{width}}  {clip(plain(ev.text), EVIDENCE_CHARS)}" for ev in block)
    return f"{code(block[0].where.source)}, {lines}:\n\n{fence(body, 'text')}"


LISTED_LINES = 6  # runs of lines named in a block's label; more are named by their count


def _numbers(numbers: list[int]) -> str:
    """The lines a block shows, as runs of numbers (the decisive line comes first in the block, and the
    lines need not touch: `lines 125-126, 131`, never `lines 131-125`)."""
    if len(numbers) == 1:
        return f"line {numbers[0]}"
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    if len(runs) > LISTED_LINES:
        return f"{len(numbers)} lines from {numbers[0]} to {numbers[-1]}"
    return "lines " + ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


# ---- ranks -------------------------------------------------------------------------------------


def _cell(text: str) -> str:
    return escape(clip(text, CELL_CHARS))


def _fate(fate: Fate) -> str:
    label = FATE_LABELS[fate][0]
    return f"**{label}**" if fate is Fate.FIRST_DEATH else label


def _ranks(ranks: Sequence[RankReport], with_date: bool) -> str:
    if not ranks:
        return ""
    if len(ranks) > GROUP_ABOVE_RANKS:
        return _rank_groups(ranks, with_date)
    rows = ["| rank | host | fate | last seen | step | what happened |", "| ---: | --- | --- | --- | ---: | --- |"]
    for r in sorted(ranks, key=lambda r: r.rank):
        rank = f"**{r.rank}**" if r.fate is Fate.FIRST_DEATH else str(r.rank)
        step = "?" if r.last_step is None else str(r.last_step)
        cells = [rank, _cell(r.host or "?"), _fate(r.fate), clock(r.last_seen, with_date), step, _cell(r.summary)]
        rows.append(f"| {' | '.join(cells)} |")
    return "\n".join(rows)


def _rank_groups(ranks: Sequence[RankReport], with_date: bool) -> str:
    groups = group_ranks(ranks)
    rows = [
        "| ranks | count | hosts | fate | last seen | step | what happened |",
        "| --- | ---: | --- | --- | --- | --- | --- |",
    ]
    for g in groups[:MAX_GROUPS]:
        cells = [
            rank_ranges(g.ranks),
            f"{len(g.ranks):,}",
            _cell(g.hosts_text()),
            _fate(g.fate),
            g.seen_text(with_date),
            g.steps_text(),
            _cell(g.summary),
        ]
        rows.append(f"| {' | '.join(cells)} |")
    more = len(groups) - MAX_GROUPS
    tail = f"\n\n… and {more:,} more groups of ranks (see the JSON report)." if more > 0 else ""
    return "\n".join(rows) + tail


def _footer(d: Diagnosis) -> str:
    counts: dict[str, int] = {}
    for i in d.inputs:
        counts[_INPUT_KINDS[i.kind]] = counts.get(_INPUT_KINDS[i.kind], 0) + 1
    kinds = ", ".join(f"{n:,} {kind}{'s' if n > 1 else ''}" for kind, n in counts.items())
    read = f"{len(d.inputs):,} input{'s' if len(d.inputs) != 1 else ''}" + (f" ({kinds})" if kinds else "")
    return f"<sub>Diagnosed by rankautopsy from {read}.</sub>"
