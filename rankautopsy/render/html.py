"""One self-contained HTML page: the verdict, an SVG swimlane timeline of every rank, the evidence.

Inline CSS, no script, no network, no external font. The markup is well-formed XML (void elements
closed, no named entities but XML's), and every piece of log text goes through `html.escape`
after losing the code points XML forbids.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from rankautopsy import recache
from rankautopsy.model import Cause, Diagnosis, Evidence, Fate, FirstDeath, RankReport, Verdict
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
    outcome_label,
    outcome_lines,
    rank_ranges,
    rule_text,
    ruled_out_line,
    spans_days,
    summary_line,
    xml_chars,
)
from rankautopsy.render.github import counts_text, decisive_line
from rankautopsy.render.swimlanes import FATE_COLOURS, MIN_CHART_PX, e, lanes, legend, swimlanes

_CODE = recache.compile(r"(?<!`)`([^`\n]+)`(?!`)")
GROUP_ABOVE_RANKS = 32
MAX_GROUPS = 32
EVIDENCE_CHARS = 4000
CELL_CHARS = 300


def render_html(d: Diagnosis) -> str:
    v = d.verdict
    clean_run = is_clean(v)
    body = [_verdict(d, clean_run), _timeline(d)]
    if v.first_death is not None and v.first_death.evidence:
        body.append(_section("Evidence", _evidence(v.first_death.evidence, decisive_line(d))))
    body.append(_section("What to do", _checklist(v.remediation)))
    title = "What the ranks did" if named(v) is None else "What the other ranks did"
    body.append(_section(title, _ranks(d.ranks, spans_days(d)), "ranks"))
    if not clean_run:
        body.append(_section("Reasoning", _list("ol", v.reasoning)))
    body.append(_section("Ruled out", _list("ul", [ruled_out_line(r.rank, r.why) for r in v.ruled_out])))
    if named(v) is not None or clean_run:
        body.append(_section("Notes", _list("ul", v.notes)))
    body.append(_section("Skipped inputs", _list("ul", [f"{s.path}: {s.reason}" for s in d.skipped])))
    body.append(
        f"<footer>Diagnosed by rankautopsy from {len(d.inputs):,} input{'' if len(d.inputs) == 1 else 's'}.</footer>"
    )
    return _page(_title(d, clean_run), "\n".join(b for b in body if b))


def _page(title: str, body: str) -> str:
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8"/>\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1"/>\n'
        f"<title>{e(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n<main>\n{body}\n</main>\n</body>\n</html>\n"
    )


def _title(d: Diagnosis, clean_run: bool) -> str:
    fd = named(d.verdict)
    if fd is not None:
        return f"rankautopsy: {headline(fd)}"
    return f"rankautopsy: {outcome_label(d.verdict)[0]}"


def _section(title: str, body: str, cls: str = "") -> str:
    if not body:
        return ""
    attr = f' class="{cls}"' if cls else ""
    return f"<section{attr}>\n<h2>{e(title)}</h2>\n{body}\n</section>"


def prose(text: str) -> str:
    """`e`, but the `code` spans that rule packs write in their remediation become <code>."""
    parts = _CODE.split(xml_chars(text))
    return "".join(f"<code>{html.escape(p)}</code>" if i % 2 else html.escape(p) for i, p in enumerate(parts))


def _list(tag: str, items: Sequence[str]) -> str:
    if not items:
        return ""
    return f"<{tag}>\n" + "\n".join(f"<li>{e(item)}</li>" for item in items) + f"\n</{tag}>"


def _checklist(items: Sequence[str]) -> str:
    if not items:
        return ""
    rows = [f'<li><label><input type="checkbox"/> <span>{prose(item)}</span></label></li>' for item in items]
    return '<ul class="todo">\n' + "\n".join(rows) + "\n</ul>"


# ---- verdict -----------------------------------------------------------------------------------


def _verdict(d: Diagnosis, clean_run: bool) -> str:
    v = d.verdict
    fd = named(v)
    if fd is not None:
        return _death(fd, v)
    words = outcome_label(v)[1]
    if clean_run:
        return _card("ok", words, "", _list("ul", v.reasoning))
    return _card("unsure", words, "", _list("ul", outcome_lines(v)))


def _card(kind: str, title: str, detail: str, extra: str) -> str:
    parts = [f'<header class="verdict {kind}">', '<p class="tool">rankautopsy</p>', f"<h1>{e(title)}</h1>"]
    parts += [f'<p class="detail">{e(detail)}</p>'] if detail else []
    parts += [extra] if extra else []
    return "\n".join([*parts, "</header>"])


def _death(fd: FirstDeath, v: Verdict) -> str:
    facts = [("when", death_when(fd)), ("phase", PHASE_LABELS[fd.phase]), ("confidence", v.confidence.value)]
    ids = ([fd.host] if fd.host else []) + ([] if fd.pid is None else [f"pid {fd.pid}"])
    facts += [("process", ", ".join(ids))] if ids else []
    facts.append(("rule", rule_text(fd)))
    dl = "".join(f'<div class="fact {k}"><dt>{e(k)}</dt><dd>{e(val)}</dd></div>' for k, val in facts)
    kind = "hang" if fd.cause is Cause.HANG else "dead"
    return _card(kind, headline(fd), fd.detail, f'<dl class="facts">{dl}</dl>')


# ---- timeline ----------------------------------------------------------------------------------


def _timeline(d: Diagnosis) -> str:
    drawn = lanes(d)
    svg = swimlanes(d, drawn, *_picture_words(d))
    if svg is None:
        return _section("Timeline", '<p class="muted">No timestamps were found: there is no timeline to draw.</p>')
    return _section("Timeline", f'{legend(drawn)}\n<div class="chart">\n{svg}\n</div>', "timeline")


def _picture_words(d: Diagnosis) -> tuple[str, str]:
    """The picture's text alternative: its title is the verdict, its description who died, when and why."""
    v, n = d.verdict, len(d.ranks)
    fd = named(v)
    title = f"Timeline of {n:,} rank{'' if n == 1 else 's'} — {summary_line(v)}"
    if fd is None:
        return title, " ".join([outcome_label(v)[1] + ".", *outcome_lines(v)[:2]])
    words = [f"{headline(fd, fd.host, fd.pid)}{f' — {fd.detail}' if fd.detail else ''}, {death_when(fd, 'at')}."]
    counts = counts_text(d.ranks)
    words += [f"The other ranks: {counts}."] if counts else []
    return title, " ".join(words)


# ---- evidence ----------------------------------------------------------------------------------


def _evidence(evidence: Sequence[Evidence], decisive: Evidence | None) -> str:
    return "\n".join(_evidence_block(block, decisive) for block in evidence_blocks(evidence))


def _evidence_block(block: Sequence[Evidence], decisive: Evidence | None) -> str:
    rows = []
    for ev in block:
        cls = ' class="decisive"' if ev == decisive else ""
        text = e(clip(ev.text, EVIDENCE_CHARS))
        rows.append(f'<span{cls}><span class="ln">{ev.where.line}</span>{text}</span>')
    caption = f"<figcaption>{e(block[0].where.source)}</figcaption>"
    return f'<figure class="log">{caption}<pre>{"".join(rows)}</pre></figure>'


# ---- ranks -------------------------------------------------------------------------------------


def _swatch(fate: Fate) -> str:
    return f'<span class="swatch" style="background:{FATE_COLOURS[fate]}"></span>{e(FATE_LABELS[fate][0].lower())}'


def _ranks(ranks: Sequence[RankReport], with_date: bool) -> str:
    if not ranks:
        return ""
    if len(ranks) > GROUP_ABOVE_RANKS:
        return _rank_groups(ranks, with_date)
    head = "<tr><th>rank</th><th>host</th><th>fate</th><th>last seen</th><th>step</th><th>what happened</th></tr>"
    rows = [_rank_row(r, with_date) for r in sorted(ranks, key=lambda r: r.rank)]
    table = f"<table>\n<thead>{head}</thead>\n<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>"
    return f'<div class="scroll">{table}</div>'


def _rank_row(r: RankReport, with_date: bool) -> str:
    cls = ' class="culprit"' if r.fate is Fate.FIRST_DEATH else ""
    cells = [
        f'<td class="num">{r.rank}</td>',
        f"<td>{e(r.host or '?')}</td>",
        f'<td class="fate">{_swatch(r.fate)}</td>',
        f'<td class="time">{clock(r.last_seen, with_date)}</td>',
        f'<td class="num">{"?" if r.last_step is None else r.last_step}</td>',
        f"<td>{e(clip(r.summary, CELL_CHARS))}</td>",
    ]
    return f"<tr{cls}>{''.join(cells)}</tr>"


def _rank_groups(ranks: Sequence[RankReport], with_date: bool) -> str:
    groups = group_ranks(ranks)
    head = "".join(f"<th>{h}</th>" for h in ("ranks", "count", "hosts", "fate", "last seen", "step", "what happened"))
    rows = []
    for g in groups[:MAX_GROUPS]:
        cls = ' class="culprit"' if g.fate is Fate.FIRST_DEATH else ""
        cells = [
            f"<td>{e(rank_ranges(g.ranks))}</td>",
            f'<td class="num">{len(g.ranks):,}</td>',
            f"<td>{e(g.hosts_text())}</td>",
            f'<td class="fate">{_swatch(g.fate)}</td>',
            f'<td class="time">{e(g.seen_text(with_date))}</td>',
            f'<td class="num">{e(g.steps_text())}</td>',
            f"<td>{e(clip(g.summary, CELL_CHARS))}</td>",
        ]
        rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
    more = len(groups) - MAX_GROUPS
    tail = f'\n<p class="muted">… and {more:,} more groups of ranks.</p>' if more > 0 else ""
    table = f"<table>\n<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>"
    return f'<div class="scroll">{table}</div>{tail}'


_CSS = """
:root{--fg:#1f2328;--muted:#656d76;--line:#d0d7de;--bg:#f6f8fa;--card:#fff;--red:#cf222e;--amber:#bf8700;
--green:#1a7f37;--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace;
--sans:system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:14px/1.5 var(--sans)}
main{max-width:1240px;margin:0 auto;padding:20px 24px 32px;overflow-wrap:break-word}
header.verdict,section{background:var(--card);border:1px solid var(--line);border-radius:8px;
padding:14px 20px;margin:0 0 16px}
header.verdict{border-left:6px solid var(--red)}
header.verdict.ok{border-left-color:var(--green)}
header.verdict.unsure{border-left-color:var(--amber)}
.tool{margin:0;color:var(--muted);font-size:12px;letter-spacing:.08em;text-transform:uppercase}
h1{margin:2px 0 4px;font-size:22px;line-height:1.3;color:var(--red)}
header.verdict.ok h1{color:var(--green)}
header.verdict.unsure h1{color:#9a6700}
.detail{margin:0 0 8px;font:600 15px/1.4 var(--mono);overflow-wrap:anywhere}
.facts{display:flex;flex-wrap:wrap;gap:4px 28px;margin:6px 0 0}
.fact dt{color:var(--muted);font-size:11px;text-transform:uppercase;letter-spacing:.06em}
.fact{min-width:0}
.fact dd{margin:0;font-weight:600;overflow-wrap:anywhere}
.fact.confidence dd{text-transform:uppercase}
.fact.rule dd{font:13px var(--mono)}
h2{font-size:15px;margin:0 0 10px}
ul,ol{margin:0;padding-left:22px}
.muted{color:var(--muted)}
code{font:12.5px var(--mono);background:#eff1f3;border-radius:4px;padding:1px 4px}
.legend{display:flex;flex-wrap:wrap;gap:4px 18px;margin:0 0 8px;font-size:12.5px;color:var(--muted)}
.legend .key{display:inline-flex;align-items:center;gap:5px}
.legend svg{width:14px;height:14px}
.chart{overflow-x:auto;overscroll-behavior-x:contain}
.chart svg{display:block;width:100%;min-width:__MIN_CHART__px;height:auto}
.scroll{overflow-x:auto}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px}
figure.log{margin:0 0 10px}
figcaption{font:12px var(--mono);color:var(--muted);margin-bottom:2px}
pre{margin:0;padding:8px 0;background:var(--bg);border:1px solid var(--line);border-radius:6px;
font:12.5px/1.5 var(--mono);white-space:pre-wrap;overflow-wrap:anywhere}
pre>span{display:grid;grid-template-columns:5.5em 1fr;padding:0 12px 0 0}
pre>span.decisive{background:#ffebe9;box-shadow:inset 3px 0 var(--red)}
.ln{padding:0 12px 0 0;text-align:right;color:var(--muted);user-select:none}
.todo{list-style:none;padding-left:0}
.todo li{margin:4px 0}
.todo label{display:flex;gap:8px;align-items:baseline}
.todo label>span{min-width:0;overflow-wrap:anywhere}
table{border-collapse:collapse;width:100%;font-size:13px}
th{text-align:left;color:var(--muted);font-weight:600;border-bottom:1px solid var(--line);padding:4px 10px 4px 0}
td{border-bottom:1px solid #eaeef2;padding:4px 10px 4px 0;vertical-align:top;overflow-wrap:anywhere}
td.num{text-align:right;font-variant-numeric:tabular-nums}
td.time,td.fate{white-space:nowrap;font-variant-numeric:tabular-nums}
tr.culprit td{background:#fff0ee;font-weight:600}
footer{color:var(--muted);font-size:12px;text-align:center}
@media (max-width:640px){main{padding:12px 8px 24px}header.verdict,section{padding:12px}h1{font-size:19px}}
svg text{fill:#57606a;font-family:var(--sans)}
svg .plot{fill:#fbfcfd;stroke:#eaeef2}
svg .grid{stroke:#e6e9ed}
svg .tick,svg .rank{font-size:11px;font-variant-numeric:tabular-nums}
svg .axis{font-size:11.5px}
svg .what{font-size:11px}
svg .guide{stroke-width:1.5;stroke-dasharray:5 4}
svg line.guide.death{stroke:#d1242f}
svg line.guide.symptom{stroke:#bf8700}
svg text.guide{font-size:12px;font-weight:600;paint-order:stroke;stroke:#fff;stroke-width:3px;stroke-linejoin:round}
svg text.guide.death{fill:#a40e26}
svg text.guide.symptom{fill:#8a6100}
svg .culprit-gap{fill:#fff;fill-opacity:.85}
svg .culprit-band{fill:#d1242f;fill-opacity:.1}
.lane .alive{fill:currentColor;fill-opacity:.45}
svg.thin .lane .alive{fill-opacity:.28}
.lane .silent,.legend .silent{stroke:#8c959f;stroke-width:1.5;stroke-dasharray:2 3}
.lane .span{fill:currentColor;fill-opacity:.22}
.lane .m{fill:currentColor;stroke:#fff;stroke-width:1.2}
.lane .m.cross,.legend .m.cross{fill:none;stroke:currentColor;stroke-width:3;stroke-linecap:round}
.legend .m{fill:#57606a}
.legend .m.cross{stroke:#57606a}
.lane .tick-mark{fill:currentColor}
.lane.f-first_death .rank{fill:#a40e26;font-weight:700}
.f-first_death{color:#d1242f}
.f-died{color:#8c1d2b}
.f-collateral{color:#e09b00}
.f-torn_down{color:#8c959f}
.f-exited_clean{color:#2da44e}
.f-running{color:#5a7fb8}
.f-unknown{color:#b6bdc6}
""".replace("__MIN_CHART__", str(MIN_CHART_PX))
