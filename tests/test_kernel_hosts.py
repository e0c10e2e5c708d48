"""A kernel log's host comes from evidence (its name's host part), never from an extension or a format word."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_verdict import run

OOM = "[Sun Nov 29 07:00:07 2026] Out of memory: Killed process 4242 (python) total-vm:1000kB, anon-rss:900kB\n"


@pytest.mark.parametrize(
    ("name", "host"),
    [
        ("dmesg.txt", None),
        ("dmesg-raw.txt", None),
        ("kern.log", None),
        ("dmesg-iso.log", None),
        ("node07-dmesg.txt", "node07"),
        ("dmesg-node02.txt", "node02"),
        ("kern_gpu-3.log", "gpu-3"),
    ],
)
def test_kernel_log_host_from_its_name(tmp_path: Path, name: str, host: str | None) -> None:
    d = run(tmp_path, {name: OOM})
    hosts = {e.host for e in d.events}
    assert hosts == {host}
