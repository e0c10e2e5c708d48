"""The package shows the pipeline: each stage imports only the stages before it (data flows one way)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "rankautopsy"
SHARED = {
    "rankautopsy",
    "rankautopsy.model",
    "rankautopsy.errors",
    "rankautopsy.signals",
    "rankautopsy.numbers",
    "rankautopsy.cputime",
    "rankautopsy.records",
    "rankautopsy.cache",
}
# stage -> the other stages it may import (besides the shared modules above)
ALLOWED = {
    "sources": set(),
    "rulepacks": {"sources"},
    "scan": {"sources"},
    "diagnosis": {"sources", "scan", "rulepacks"},
    "events": {"sources"},
    "pipeline": {"sources", "scan", "rulepacks", "diagnosis", "events"},
    "render": {"sources"},
    "runtime": set(),  # imported by training scripts: nothing of the rest
    "drill": {"sources", "scan", "rulepacks", "diagnosis", "events", "pipeline", "runtime"},
    "live": {"sources", "scan", "rulepacks", "diagnosis", "events", "pipeline"},
    "cli": {"sources", "scan", "rulepacks", "diagnosis", "events", "pipeline", "render", "runtime", "drill", "live"},
}


def _stage(path: Path) -> str:
    part = path.relative_to(PACKAGE).parts[0]
    return part.removesuffix(".py")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m.startswith("rankautopsy")}


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if _stage(p) in ALLOWED)


@pytest.mark.parametrize("module", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_stage_imports_only_earlier_stages(module: Path) -> None:
    stage = _stage(module)
    bad = sorted(m for m in _imports(module) - SHARED if m.split(".")[1] not in ALLOWED[stage] | {stage})
    assert bad == [], f"{stage} may import only {sorted(ALLOWED[stage])}"


def test_every_stage_package_says_what_it_owns_and_may_import() -> None:
    for stage in ("sources", "scan", "rulepacks", "diagnosis", "events", "render", "runtime", "drill", "cli"):
        doc = ast.get_docstring(ast.parse((PACKAGE / stage / "__init__.py").read_text(encoding="utf-8")))
        assert doc and "import" in doc, stage
