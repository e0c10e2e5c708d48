"""The one place that cleans untrusted text (log lines, file names, rule fields): ANSI/ESC sequences and
C0/C1 controls (except TAB) go; characters that change how the text around them reads without being
seen (bidi overrides and isolates, zero-width characters, line and paragraph separators) are shown as
visible escapes such as `<U+202E>`, so that no renderer can be used for Trojan-Source-style spoofing."""

from __future__ import annotations

import re

from rankautopsy import recache
from rankautopsy.sources.read import bar_ends, segments

# CSI / OSC / other ESC sequences first, then any remaining C0/C1 control except TAB and LF.
_ANSI = recache.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI ... final byte
    r"|\x1b\][^\x07\x1b\r]*(?:\x07|\x1b\\)?"  # OSC ... BEL or ST (never past a \r: see clean_pieces)
    r"|\x1b[PX^_][^\x1b\r]*(?:\x1b\\)?"  # DCS/SOS/PM/APC strings
    r"|\x1b[@-Z\\-_]"  # two-byte ESC sequences
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
_CONTROLS = recache.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROLS_BUT_CR = recache.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_PIECE_BOM = recache.compile("(?:^|(?<=\r))\ufeff")
_BLANK_PIECE = recache.compile(r"\r[^\S\r]*(?=\r|\Z)")  # a \r and the blank piece after it
# Invisible format characters: zero-width (U+200B-200F, U+2060, U+FEFF), bidi embeddings, overrides and
# isolates (U+202A-202E, U+2066-2069), line and paragraph separators (U+2028, U+2029).
_INVISIBLE = recache.compile("[\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]")
_NAME_BREAKS = recache.compile(r"[\n\t]")
_SURROGATE = recache.compile("[\ud800-\udfff]")


def without_surrogates(text: str) -> str:
    """Text decoded from JSON `\\ud800`-style escapes as proper Unicode: a pair becomes its character,
    a lone surrogate U+FFFD (a lone one cannot be encoded, and every later stage encodes)."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def strip_ansi(text: str) -> str:
    """Remove terminal escape sequences (colour codes and worse); keeps every other character."""
    return _ANSI.sub("", text) if ("\x1b" in text or "\x9b" in text) else text


def _visible(match: re.Match[str]) -> str:
    return f"<U+{ord(match.group()):04X}>"


def clean(text: str) -> str:
    """Text safe to keep and show: no escape sequences, no control characters but TAB and LF, and
    invisible format characters as visible `<U+XXXX>` escapes (a byte-order mark that starts the
    text is dropped: it is an encoding's signature, not content)."""
    if text.isprintable():  # none of those characters is printable: most lines, checked in one C call
        return text
    return _clean_unprintable(text)


def _clean_unprintable(text: str) -> str:
    text = _CONTROLS.sub("", strip_ansi(text))
    if text.startswith("\ufeff"):
        text = text[1:]
    return _INVISIBLE.sub(_visible, text) if not text.isascii() else text


def clean_name(name: str) -> str:
    """A file name or path (or any one-line field) as `clean` shows log text, on one line: a newline
    or TAB in it is shown as `\\n` or `\\t`, so that a name cannot forge a second line of a message."""
    return _NAME_BREAKS.sub(lambda m: "\\n" if m.group() == "\n" else "\\t", clean(name))


def clean_pieces(line: str, limit: int) -> str:
    """One physical line's `\\r`-separated pieces (blank ones dropped, each cut to `limit` characters)
    cleaned, one per line: `"\\n".join(clean(p) for p in pieces)`, but cleaned in one pass over the
    whole line rather than once per piece (a line of a million progress-bar pieces costs the same per
    byte as any other line)."""
    if bar_ends(line):  # text glued to a progress bar's end: rare, then piece by piece
        return "\n".join(clean(part[:limit]) for part in segments(line))
    if line.endswith("\r"):
        line = line[:-1]
    if "\r" not in line:
        return clean(line[:limit])
    pieces = line.split("\r")
    if max(map(len, pieces)) > limit:  # a piece to cut: rare, and then cut one by one
        text = "\r".join([part[:limit] for part in pieces if part.strip()])
    else:
        text = _BLANK_PIECE.sub("", "\r" + line)[1:]
    text = _CONTROLS_BUT_CR.sub("", strip_ansi(text))
    if "\ufeff" in text:
        text = _PIECE_BOM.sub("", text)
    if not text.isascii():
        text = _INVISIBLE.sub(_visible, text)
    return text.replace("\r", "\n")
