"""Renderers: a finished `Diagnosis` in, text out. Each renderer module is importable on its own."""

from __future__ import annotations

from enum import StrEnum


class Format(StrEnum):
    TERMINAL = "terminal"
    JSON = "json"
