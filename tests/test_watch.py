"""watch over every fixture, replayed line by line into a temp dir: it never reports a first death
that diagnose over the final files would not name, and once the replay ends it names the same one."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
import yaml

from rankautopsy.live import Watcher, WatchOptions
from rankautopsy.live.watcher import verdict_key
from rankautopsy.pipeline import Options, diagnose

ROOT = Path(__file__).resolve().parent.parent / "fixtures"
FIXTURES = sorted(d for d in ROOT.iterdir() if (d / "expected.yaml").is_file())
SETTLE = 2.0


def _options(base: Path, args: list[str]) -> Options:
    paths, dmesg, rest = [], [], list(args)
    while rest:
        arg = rest.pop(0)
        if arg == "--dmesg":
            dmesg.append(str(base / rest.pop(0)))
        elif arg.startswith("--"):
            raise AssertionError(f"fixture option not handled here: {arg}")
        else:
            paths.append(str(base / arg))
    return Options(paths=paths, dmesg=dmesg)


def _files(fixture: Path, args: list[str]) -> list[Path]:
    named = [fixture / a for a in args if not a.startswith("--")]
    out: list[Path] = []
    for path in named:
        out += sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return out


def replay(fixture: Path, dest: Path, seed: int) -> tuple[list[tuple[object, ...]], Watcher, Options]:
    """Write the fixture's files into `dest` a few lines at a time, in proportion, polling a watcher
    with a fake clock that sometimes pauses past the settle period; return the verdicts it reported."""
    args = yaml.safe_load((fixture / "expected.yaml").read_text())["args"]
    rng = random.Random(seed)
    todo = {f: f.read_bytes().splitlines(keepends=True) for f in _files(fixture, args)}
    options = _options(dest, args)
    watcher = Watcher(WatchOptions(diagnose=options, settle=SETTLE, patience=30.0, quiet_period=60.0, rediscover=0))
    reported: list[tuple[object, ...]] = []
    now = 0.0
    while any(todo.values()):
        for source, lines in todo.items():
            take = rng.randint(1, max(1, len(lines) // 8)) if lines else 0
            target = dest / source.relative_to(fixture)
            target.parent.mkdir(parents=True, exist_ok=True)
            with target.open("ab") as out:
                out.write(b"".join(lines[:take]))
            del lines[:take]
        now += rng.choice([0.05, 0.2, 0.5, SETTLE + 0.5])
        if (report := watcher.poll(now)) is not None:
            reported.append(verdict_key(report.diagnosis.verdict))
    for _ in range(3):  # the job is over: the inputs stay quiet
        now += SETTLE + 0.5
        if (report := watcher.poll(now)) is not None:
            reported.append(verdict_key(report.diagnosis.verdict))
    return reported, watcher, options


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_watch_reports_only_what_diagnose_names_on_the_final_logs(fixture: Path, tmp_path: Path) -> None:
    reported, watcher, options = replay(fixture, tmp_path, seed=len(fixture.name))
    final = verdict_key(diagnose(options).verdict)
    assert all(key == final for key in reported), (reported, final)
    assert watcher.result is not None and verdict_key(watcher.result.verdict) == final
