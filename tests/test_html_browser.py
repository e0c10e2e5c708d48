"""The HTML report in a real headless browser: it renders a picture, with one timeline lane per rank;
at a desktop and a phone width no two labels overlap, none is clipped or too small to read, the
picture scrolls sideways in its box on a phone, and every text meets WCAG AA contrast.

Needs Debian's `chromium` (`apt-get install -y chromium`); skipped without it.
"""

from __future__ import annotations

import html as htmllib
import json
import os
import re
import struct
import subprocess
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
import yaml
from diagnoses import at, exception_diagnosis, hang_diagnosis
from typer.testing import CliRunner

from rankautopsy.cli import app
from rankautopsy.model import Confidence, Diagnosis, Fate, Outcome, TimeSpan, Verdict
from rankautopsy.pipeline import Options, diagnose
from rankautopsy.render.html import FATE_COLOURS, render_html
from rankautopsy.render.swimlanes import MIN_CHART_PX

CHROMIUM = Path("/usr/bin/chromium")
FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "torchrun-hang-rank2" / "logs"


def rgb(fate: Fate) -> tuple[int, ...]:
    return tuple(int(FATE_COLOURS[fate][i : i + 2], 16) for i in (1, 3, 5))


pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium (apt-get install -y chromium)"),
]


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'profile'}",
    ]
    return subprocess.run([str(CHROMIUM), *flags, *args], capture_output=True, timeout=180, check=True)


def screenshot(page: Path, png: Path) -> None:
    chromium(page.parent, f"--screenshot={png}", "--window-size=1280,900", page.as_uri())


def dump_dom(page: Path) -> str:
    return chromium(page.parent, "--dump-dom", page.as_uri()).stdout.decode("utf-8")


# ---- reading a PNG without Pillow ----


def png_pixels(data: bytes) -> tuple[int, int, int, list[bytes]]:
    """Width, height, bytes per pixel and the unfiltered rows of an 8-bit RGB/RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        header = body if kind == b"IHDR" else header
        idat += body if kind == b"IDAT" else b""
        pos += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour in (2, 6), f"unexpected PNG format: depth {depth}, colour type {colour}"
    bpp = 3 if colour == 2 else 4
    raw, stride, rows = zlib.decompress(idat), width * bpp, []
    previous = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        _unfilter(kind, line, previous, bpp)
        rows.append(bytes(line))
        previous = line
    return width, height, bpp, rows


def _unfilter(kind: int, line: bytearray, up: bytearray, bpp: int) -> None:
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        b = up[i]
        c = up[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + a) & 0xFF
        elif kind == 2:
            line[i] = (line[i] + b) & 0xFF
        elif kind == 3:
            line[i] = (line[i] + (a + b) // 2) & 0xFF
        elif kind == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 0xFF


def colours(png: Path) -> Counter[tuple[int, ...]]:
    """How many pixels of each colour (every other column: enough to see what is there)."""
    width, _, bpp, rows = png_pixels(png.read_bytes())
    return Counter(tuple(row[x * bpp : x * bpp + 3]) for row in rows for x in range(0, width, 2))


def near(colour: tuple[int, ...], target: tuple[int, ...], tolerance: int = 24) -> bool:
    return all(abs(a - b) <= tolerance for a, b in zip(colour, target, strict=True))


# ---- reading the DOM the browser built ----


class _Lanes(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.ranks: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "g" and "lane" in (found.get("class") or "").split():
            self.ranks.append(found.get("data-rank") or "")


def lanes_in(dom: str) -> list[str]:
    parser = _Lanes()
    parser.feed(dom)
    return parser.ranks


def check_in_browser(d: Diagnosis, tmp_path: Path) -> None:
    page, png = tmp_path / "report.html", tmp_path / "report.png"
    page.write_text(render_html(d), encoding="utf-8")
    screenshot(page, png)
    assert png.exists() and png.stat().st_size > 0
    seen = colours(png)
    assert len(seen) > 1, "the screenshot is blank"
    assert any(near(c, rgb(Fate.FIRST_DEATH)) for c in seen), "the first death's red is not on the screen"
    amber = sum(n for c, n in seen.items() if near(c, rgb(Fate.COLLATERAL)))
    assert amber >= 120, f"only {amber} amber pixels: the collateral ranks' markers are not drawn"
    assert sorted(lanes_in(dump_dom(page)), key=int) == [str(r.rank) for r in sorted(d.ranks, key=lambda r: r.rank)]


def test_real_fixture_renders_a_timeline(tmp_path: Path) -> None:
    d = diagnose(Options(paths=[str(FIXTURE)]))
    assert d.verdict.first_death is not None and len(d.ranks) == 4
    check_in_browser(d, tmp_path)


def test_a_thousand_ranks_render_a_timeline(tmp_path: Path) -> None:
    check_in_browser(hang_diagnosis(), tmp_path)


def test_png_reader_sees_a_single_colour() -> None:
    row = b"\x00" + b"\x10\x20\x30" * 4
    ihdr = struct.pack(">IIBBBBB", 4, 2, 8, 2, 0, 0, 0)
    data = b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(row * 2)) + _chunk(b"IEND", b"")
    width, height, bpp, rows = png_pixels(data)
    assert (width, height, bpp) == (4, 2, 3) and rows == [b"\x10\x20\x30" * 4] * 2


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


# ---- the layout, measured by the browser: labels, clipping, text size, contrast ----

# Runs inside the report (an iframe of the phone's or the desktop's width; headless Chromium's window
# is never narrower than 500 px) and writes what it measured into the parent page, which --dump-dom prints.
MEASURE_JS = (Path(__file__).resolve().parent / "browser_measure.js").read_text(encoding="utf-8")
DESKTOP, PHONE = (1280, 900), (390, 844)
MIN_TEXT_PX = 9.0  # no label of the picture may be drawn smaller than this
_RGB = re.compile(r"rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)")


def measure(report: str, tmp: Path, size: tuple[int, int]) -> dict[str, Any]:
    width, height = size
    inner = report.replace("</body>", f"<script>{MEASURE_JS}</script>\n</body>")
    wrapper = (
        '<!DOCTYPE html><html><body style="margin:0">'
        f'<iframe style="border:0;display:block" width="{width}" height="{height}" '
        f'srcdoc="{htmllib.escape(inner, quote=True)}"></iframe></body></html>'
    )
    page = tmp / f"measure-{width}.html"
    page.write_text(wrapper, encoding="utf-8")
    dom = chromium(tmp, f"--window-size={width + 40},{height + 40}", "--dump-dom", page.as_uri()).stdout.decode()
    found = re.search(r'<pre id="measured">(.*?)</pre>', dom, re.S)
    assert found, "the measuring script did not run"
    data: dict[str, Any] = json.loads(htmllib.unescape(found[1]))
    assert data["width"] <= width, data["width"]
    return data


def overlaps(a: list[float], b: list[float]) -> bool:
    return min(a[2], b[2]) - max(a[0], b[0]) > 0.5 and min(a[3], b[3]) - max(a[1], b[1]) > 0.5


def layout_problems(m: dict[str, Any]) -> list[str]:
    problems = []
    labels = [lab for lab in m["labels"] if lab["text"].strip()]
    for n, a in enumerate(labels):
        box, svg = a["box"], m["svgs"][a["svg"]]["box"]
        if box[0] < svg[0] - 0.5 or box[2] > svg[2] + 0.5 or box[1] < svg[1] - 0.5 or box[3] > svg[3] + 0.5:
            problems.append(f"clipped: {a['text']!r} {box} outside {svg}")
        if a["px"] < MIN_TEXT_PX:
            problems.append(f"too small: {a['text']!r} at {a['px']:.1f} px")
        problems += [
            f"overlap: {a['text']!r} and {b['text']!r}"
            for b in labels[n + 1 :]
            if a["svg"] == b["svg"] and overlaps(box, b["box"])
        ]
    return problems


def parse_colour(text: str) -> tuple[tuple[float, float, float], float]:
    found = _RGB.match(text)
    assert found, f"not a colour: {text}"
    alpha = 1.0 if found[4] is None else float(found[4])
    return (float(found[1]), float(found[2]), float(found[3])), alpha


def over(top: tuple[float, ...], alpha: float, below: tuple[float, ...]) -> tuple[float, float, float]:
    r, g, b = (alpha * t + (1 - alpha) * u for t, u in zip(top, below, strict=True))
    return r, g, b


def luminance(rgb: tuple[float, ...]) -> float:
    def channel(c: float) -> float:
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def background(layers: list[dict[str, Any]]) -> tuple[float, float, float]:
    """What is painted under a point: the layers (topmost first) composited over white."""
    colour: tuple[float, float, float] = (255.0, 255.0, 255.0)
    for layer in reversed(layers):
        rgb, alpha = parse_colour(layer["colour"])
        colour = over(rgb, alpha * layer["alpha"], colour)
    return colour


def contrast_problems(m: dict[str, Any]) -> list[str]:
    """WCAG 2 AA: 4.5:1 for text, 3:1 for large text (24 px, or 18.66 px bold)."""
    problems = []
    for t in m["texts"]:
        large = t["px"] >= 24 or (t["px"] >= 18.66 and int(t["weight"]) >= 700)
        need = 3.0 if large else 4.5
        fg, alpha = parse_colour(t["colour"])
        for layers in t["samples"]:
            bg = background(layers)
            ratio = contrast(over(fg, alpha * t["opacity"], bg), bg)
            if ratio < need:
                problems.append(f"{t['tag'].lower()}.{t['cls']} {t['text']!r}: {t['colour']} on {bg} is {ratio:.2f}:1")
                break
    return problems


def test_contrast_arithmetic_matches_wcag_examples() -> None:
    assert contrast((0, 0, 0), (255, 255, 255)) == pytest.approx(21.0)
    assert contrast((118, 118, 118), (255, 255, 255)) == pytest.approx(4.54, abs=0.01)  # #767676, the AA edge
    assert background([{"colour": "rgba(0, 0, 0, 0.5)", "alpha": 1}]) == pytest.approx((127.5, 127.5, 127.5))
    assert overlaps([0, 0, 10, 10], [9, 9, 20, 20]) and not overlaps([0, 0, 10, 10], [10, 0, 20, 10])


def undetermined() -> Diagnosis:
    d = exception_diagnosis()
    fd = d.verdict.first_death
    assert fd is not None
    verdict = Verdict(
        outcome=Outcome.UNDETERMINED,
        first_death=replace(fd, rank=None),
        confidence=Confidence.LOW,
        reasoning=("Two ranks raised within the same second; their clocks are not comparable.",),
        fetch_next=("the kernel log of node02 (dmesg -T)",),
    )
    ranks = tuple(replace(r, fate=Fate.DIED if r.rank == 2 else r.fate) for r in d.ranks)
    return replace(d, verdict=verdict, ranks=ranks)


def long_words() -> Diagnosis:
    """A death near the right edge with a long, unbreakable summary, and very long host and rule names."""
    d = exception_diagnosis()
    fd = d.verdict.first_death
    assert fd is not None
    late = TimeSpan(at("07:11:01"), at("07:11:01"))
    word = "x" * 60 + "W" * 40 + "界" * 30
    fd = replace(fd, time=late, detail=word, host="h" * 90, rule="r." + "y" * 120)
    ranks = tuple(
        replace(r, last_seen=at("07:11:01"), summary=word, host="h" * 90) if r.rank == 2 else r for r in d.ranks
    )
    return replace(d, verdict=replace(d.verdict, first_death=fd), ranks=ranks)


def html_reports() -> dict[str, Callable[[], str]]:
    from test_render_formats import ALL

    made = {**ALL, "undetermined": undetermined, "long_words": long_words}
    reports: dict[str, Callable[[], str]] = {name: (lambda f=f: render_html(f())) for name, f in made.items()}
    for fixture in REAL:
        reports[fixture.name] = lambda fixture=fixture: real_html(fixture)
    return reports


def real_html(fixture: Path) -> str:
    args = yaml.safe_load((fixture / "expected.yaml").read_text())["args"]
    cwd = Path.cwd()
    os.chdir(fixture)
    try:
        result = CliRunner().invoke(app, ["diagnose", *args, "--format", "html", "--tz", "UTC"])
    finally:
        os.chdir(cwd)
    assert result.exit_code in (0, 1, 3), result.output
    return result.stdout


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REAL = sorted(p for p in FIXTURES.iterdir() if (p / "expected.yaml").is_file())
REPORTS = html_reports()


@pytest.mark.parametrize("size", [DESKTOP, PHONE], ids=["desktop", "phone"])
@pytest.mark.parametrize("name", REPORTS)
def test_labels_never_overlap_or_clip_and_text_keeps_its_contrast(
    name: str, size: tuple[int, int], tmp_path: Path
) -> None:
    m = measure(REPORTS[name](), tmp_path, size)
    assert m["labels"] or "no timeline" in name
    assert not layout_problems(m)
    assert not contrast_problems(m)
    assert m["pageWidth"] <= m["width"], f"the page itself scrolls sideways: {m['wide'][:5]}"
    for svg in m["svgs"]:
        assert svg["box"][2] - svg["box"][0] >= MIN_CHART_PX - 1
        if size is PHONE:
            assert svg["scrollWidth"] > svg["clientWidth"], "on a phone the picture scrolls sideways in its box"


def test_the_measure_sees_overlap_clipping_small_text_and_poor_contrast(tmp_path: Path) -> None:
    """The checks above can fail: a picture with each fault drawn on purpose is caught on each."""
    page = (
        '<!DOCTYPE html><html><body><main><div class="chart">'
        '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1200 100" style="width:1200px">'
        '<text x="2" y="30" text-anchor="end" font-size="12">clipped at the left</text>'
        '<text x="300" y="30" font-size="12">one label</text><text x="310" y="32" font-size="12">another</text>'
        '<text x="600" y="30" font-size="5">tiny</text>'
        '<text x="800" y="30" font-size="12" fill="#bbbbbb">faint</text>'
        "</svg></div></main></body></html>"
    )
    m = measure(page, tmp_path, DESKTOP)
    found = layout_problems(m)
    assert any(p.startswith("clipped: 'clipped at the left'") for p in found), found
    assert "overlap: 'one label' and 'another'" in found
    assert any(p.startswith("too small: 'tiny'") for p in found)
    assert any("'faint'" in p for p in contrast_problems(m))
