"""`--dmesg HOST=FILE`: a kernel log's host from the user, never from a guess (issue 12, item 2)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rankautopsy.sources.discover import host_named

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "torchrun-sigkill-oom-rank1"


@pytest.mark.parametrize(
    ("arg", "expected"),
    [
        ("node07=dmesg.txt", ("node07", "dmesg.txt")),
        ("gpu-a100-3.cluster=-", ("gpu-a100-3.cluster", "-")),
        ("dmesg.txt", (None, "dmesg.txt")),
        ("=dmesg.txt", (None, "=dmesg.txt")),
        ("node07=", (None, "node07=")),
        ("bad host=dmesg.txt", (None, "bad host=dmesg.txt")),
    ],
)
def test_a_host_is_read_only_from_a_host_name_before_an_equals_sign(arg: str, expected: tuple[str | None, str]) -> None:
    assert host_named(arg) == expected


def test_a_file_whose_name_holds_an_equals_sign_stays_a_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "node07=dmesg.txt").write_text("x")
    assert host_named("node07=dmesg.txt") == (None, "node07=dmesg.txt")


def _diagnose(tmp_path: Path, dmesg: str) -> dict[str, object]:
    work = tmp_path / "job"
    shutil.copytree(FIXTURE, work)
    done = subprocess.run(
        [sys.executable, "-m", "rankautopsy", "diagnose", "logs", "--dmesg", dmesg, "-f", "json"],
        cwd=work,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert isinstance(data, dict)
    return data


def test_the_named_host_is_the_kernel_events_host(tmp_path: Path) -> None:
    data = _diagnose(tmp_path, "gpu17=dmesg.txt")
    kernel = [e for e in data["events"] if e["source"] == "dmesg.txt"]  # type: ignore[index, union-attr]
    assert kernel and {e["host"] for e in kernel} == {"gpu17"}
    assert data["verdict"]["first_death"]["rank"] == 1  # type: ignore[index]


def test_without_a_name_a_kernel_log_called_dmesg_has_no_host(tmp_path: Path) -> None:
    data = _diagnose(tmp_path, "dmesg.txt")
    kernel = [e for e in data["events"] if e["source"] == "dmesg.txt"]  # type: ignore[index, union-attr]
    assert kernel and {e["host"] for e in kernel} <= {None, "node01"}  # node01 only from the pid join, never "txt"
