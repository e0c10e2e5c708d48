"""Renderers: a finished `Diagnosis` in, text out (terminal, JSON, Markdown, GitHub, JUnit, HTML).

Each renderer module is importable on its own. May import the model and `rankautopsy.sources`
(the sanitiser); never the pipeline stages that make a diagnosis, nor the CLI.
"""

from __future__ import annotations

from enum import StrEnum
from typing import assert_never

from rankautopsy.model import Diagnosis


class Format(StrEnum):
    TERMINAL = "terminal"
    JSON = "json"
    MARKDOWN = "markdown"
    GITHUB = "github"
    JUNIT = "junit"
    HTML = "html"


def render_text(d: Diagnosis, fmt: Format) -> str:
    """Every format but the terminal report, as one string (the renderer is imported only when used)."""
    match fmt:
        case Format.TERMINAL:
            raise ValueError("the terminal report needs a rich Console: use render.terminal.render_terminal")
        case Format.JSON:
            from rankautopsy.render.json import render_json

            return render_json(d)
        case Format.MARKDOWN:
            from rankautopsy.render.markdown import render_markdown

            return render_markdown(d)
        case Format.GITHUB:
            from rankautopsy.render.github import render_github

            return render_github(d)
        case Format.JUNIT:
            from rankautopsy.render.junit import render_junit

            return render_junit(d)
        case Format.HTML:
            from rankautopsy.render.html import render_html

            return render_html(d)
        case _:
            assert_never(fmt)
