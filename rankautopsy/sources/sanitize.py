"""The one place that cleans log text: ANSI/ESC sequences and C0/C1 controls (except TAB) go."""

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


def strip_ansi(text: str) -> str:
    """Remove terminal escape sequences (colour codes and worse); keeps every other character."""
    return _ANSI.sub("", text) if ("\x1b" in text or "\x9b" in text) else text


def clean(text: str) -> str:
    """Text safe to keep and show: no escape sequences, no control characters but TAB and LF."""
    return _CONTROLS.sub("", strip_ansi(text))
