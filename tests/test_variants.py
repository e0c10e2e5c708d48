"""Real fixtures reshaped the ways real logs arrive: the verdict must not change."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from rankautopsy.pipeline import Options, diagnose
from rankautopsy.render.json import render_json

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
RAISE = ROOT / "torchrun-raise-rank2" / "logs" / "console.log"


def verdict(path: Path) -> tuple[object, ...]:
    report = json.loads(render_json(diagnose(Options(paths=[str(path)]))))
    first = report["verdict"]["first_death"]
    fates = tuple((r["rank"], r["fate"]) for r in report["ranks"])
    return (first["rank"], first["cause"]) if first else None, fates


def _launcher_only(text: str) -> str:
    """What an older torch (no tee, no excepthook prefix) leaves: only torchrun's own lines."""
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("[default"))


RESHAPES: dict[str, Callable[[str], str]] = {
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "ansi-colour": lambda text: "".join(f"\x1b[32m{line}\x1b[0m\n" for line in text.splitlines()),
    "progress-bar-joined": lambda text: text.replace(
        "[default2]:[rank2]: Traceback", " 50%|#####|\r[default2]:[rank2]: Traceback"
    ),
    "nul-tail": lambda text: text + "\x00" * 4096,
    "pasted-in-a-code-block": lambda text: "".join(
        f"    {line}" if line.strip() else line for line in text.splitlines(keepends=True)
    ),
    "pasted-tab-indented": lambda text: "".join(f"\t{line}" for line in text.splitlines(keepends=True)),
}


@pytest.mark.parametrize("name", sorted(RESHAPES))
def test_reshaped_console_keeps_its_verdict(name: str, tmp_path: Path) -> None:
    reshaped = tmp_path / "console.log"
    reshaped.write_text(RESHAPES[name](RAISE.read_text()), newline="")
    assert verdict(reshaped) == verdict(RAISE)


def test_gzip_console_keeps_its_verdict(tmp_path: Path) -> None:
    packed = tmp_path / "console.log.gz"
    packed.write_bytes(gzip.compress(RAISE.read_bytes()))
    assert verdict(packed) == verdict(RAISE)


def test_launcher_lines_alone_name_the_rank_from_torchruns_table(tmp_path: Path) -> None:
    """torchrun's table repeats each rank's recorded exception: rank 2's ValueError is a cause, the
    others' gloo errors are symptoms, and rank 0 was torn down."""
    console = tmp_path / "console.log"
    console.write_text(_launcher_only(RAISE.read_text()))
    first, fates = verdict(console)
    assert first == (2, "python_exception")
    assert dict(fates) == {0: "torn_down", 1: "collateral", 2: "first_death", 3: "collateral"}
