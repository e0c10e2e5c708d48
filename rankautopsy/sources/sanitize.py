"""The one place that cleans untrusted text (log lines, file names, rule fields): ANSI/ESC sequences and
C0/C1 controls (except TAB) go; characters that change how the text around them reads without being
seen (bidi overrides and isolates, zero-width characters, line and paragraph separators) are shown as
visible escapes such as `<U+202E>`, so that no renderer can be used for Trojan-Source-style spoofing."""

from __future__ import annotations

import re

# CSI / OSC / other ESC sequences first, then any remaining C0/C1 control except TAB and LF.
_ANSI = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI ... final byte
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC ... BEL or ST
    r"|\x1b[PX^_][^\x1b]*(?:\x1b\\)?"  # DCS/SOS/PM/APC strings
    r"|\x1b[@-Z\\-_]"  # two-byte ESC sequences
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
)
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Invisible format characters: zero-width (U+200B-200F, U+2060, U+FEFF), bidi embeddings, overrides and
# isolates (U+202A-202E, U+2066-2069), line and paragraph separators (U+2028, U+2029).
_INVISIBLE = re.compile("[\u200b-\u200f\u2028-\u202e\u2060\u2066-\u2069\ufeff]")
_NAME_BREAKS = re.compile(r"[\n\t]")


def strip_ansi(text: str) -> str:
    """Remove terminal escape sequences (colour codes and worse); keeps every other character."""
    return _ANSI.sub("", text) if ("\x1b" in text or "\x9b" in text) else text


def _visible(match: re.Match[str]) -> str:
    return f"<U+{ord(match.group()):04X}>"


def clean(text: str) -> str:
    """Text safe to keep and show: no escape sequences, no control characters but TAB and LF, and
    invisible format characters as visible `<U+XXXX>` escapes (a byte-order mark that starts the
    text is dropped: it is an encoding's signature, not content)."""
    text = _CONTROLS.sub("", strip_ansi(text))
    if text.startswith("\ufeff"):
        text = text[1:]
    return _INVISIBLE.sub(_visible, text) if not text.isascii() else text


def clean_name(name: str) -> str:
    """A file name or path (or any one-line field) as `clean` shows log text, on one line: a newline
    or TAB in it is shown as `\\n` or `\\t`, so that a name cannot forge a second line of a message."""
    return _NAME_BREAKS.sub(lambda m: "\\n" if m.group() == "\n" else "\\t", clean(name))
