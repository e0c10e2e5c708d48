"""The HTML report in a real headless browser: it renders a picture, with one timeline lane per rank.

Needs Debian's `chromium` (`apt-get install -y chromium`); skipped without it.
"""

from __future__ import annotations

import struct
import subprocess
import zlib
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from diagnoses import hang_diagnosis

from rankautopsy.model import Diagnosis, Fate
from rankautopsy.pipeline import Options, diagnose
from rankautopsy.render.html import FATE_COLOURS, render_html

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
