"""Logs handed over as an archive: a tar (plain or compressed) or a zip given by name reads as the folder
it was made from; one found in a folder, a binary member and an archive inside it are named, not read."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from rankautopsy.pipeline import Options, diagnose

LOGDIR = Path(__file__).resolve().parent.parent / "fixtures" / "torchrun-logdir-raise-rank1"


def _tar(dest: Path, mode: str) -> Path:
    with tarfile.open(dest, mode) as tar:
        tar.add(LOGDIR / "logs", arcname="logs")
    return dest


def _zip(dest: Path, extra: dict[str, bytes] | None = None) -> Path:
    with zipfile.ZipFile(dest, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted((LOGDIR / "logs").rglob("*")):
            if path.is_file():
                archive.write(path, "logs/" + path.relative_to(LOGDIR / "logs").as_posix())
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return dest


def _summary(paths: list[str], prefix: str, jobs: int | None = None) -> tuple[object, ...]:
    """The verdict and each input's name (under the archive's) and line count."""
    found = diagnose(Options(paths=paths, jobs=jobs))
    death = found.verdict.first_death
    assert death is not None
    inputs = sorted((i.path.removeprefix(prefix), i.lines) for i in found.inputs)
    return death.rank, death.cause, death.evidence[0].text, death.evidence[0].where.line, inputs


@pytest.mark.parametrize("name", ["logs.tar", "logs.tar.gz", "logs.tar.xz", "logs.tar.bz2", "logs.zip"])
def test_an_archive_named_reads_as_the_folder_it_was_made_from(tmp_path: Path, name: str) -> None:
    mode = {"logs.tar": "w", "logs.tar.gz": "w:gz", "logs.tar.xz": "w:xz", "logs.tar.bz2": "w:bz2"}
    archive = _zip(tmp_path / name) if name.endswith(".zip") else _tar(tmp_path / name, mode[name])
    folder = _summary([str(LOGDIR / "logs")], str(LOGDIR) + "/")
    assert _summary([str(archive)], str(archive) + "/") == folder
    assert _summary([str(archive)], str(archive) + "/", jobs=2) == folder  # members scanned in workers
    assert folder[:2] == (1, "python_exception")
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]  # nothing extracted next to it


def test_an_archive_piped_in_reads_as_its_members(tmp_path: Path) -> None:
    data = _tar(tmp_path / "logs.tgz", "w:gz").read_bytes()
    result = subprocess.run(
        [sys.executable, "-m", "rankautopsy", "diagnose", "-", "--format", "json"],
        input=data, capture_output=True, timeout=300,
    )  # fmt: skip
    report = json.loads(result.stdout)
    assert report["verdict"]["first_death"]["rank"] == 1
    assert all(i["path"].startswith("<stdin>/logs/") for i in report["inputs"])


def test_an_archive_found_in_a_folder_is_named_not_read(tmp_path: Path) -> None:
    _tar(tmp_path / "old-run.tar.gz", "w:gz")
    (tmp_path / "rank_0.log").write_text("2026-11-29 09:24:00,000 INFO step 1\n")
    found = diagnose(Options(paths=[str(tmp_path)]))
    assert found.verdict.first_death is None
    assert [(s.path, s.reason) for s in found.skipped] == [
        (f"{tmp_path}/old-run.tar.gz", "a tar archive: name it to read the logs in it")
    ]


def test_a_utf16_member_is_read_as_its_text(tmp_path: Path) -> None:
    """A member is sniffed as a file is: a UTF-16 log (its byte order mark) is text, not binary."""
    text = (LOGDIR / "logs").rglob("stderr.log")
    logs = {f"logs/{p.relative_to(LOGDIR / 'logs').as_posix()}": p.read_text() for p in text}
    archive = tmp_path / "windows.zip"
    with zipfile.ZipFile(archive, "w") as packed:
        for name, content in logs.items():
            packed.writestr(name, "\ufeff".encode("utf-16-le") + content.encode("utf-16-le"))
    found = diagnose(Options(paths=[str(archive)]))
    assert found.skipped == ()
    assert found.verdict.first_death is not None and found.verdict.first_death.rank == 1


def test_binary_members_and_archives_inside_are_named_and_skipped(tmp_path: Path) -> None:
    inner = io.BytesIO()
    with zipfile.ZipFile(inner, "w") as nested:
        nested.writestr("rank_3.log", "Traceback (most recent call last):\nValueError: not read\n")
    extra = {"ckpt/model.pt": bytes(range(256)) * 64, "nested.zip": inner.getvalue(), "notes/README.md": b"# run\n"}
    archive = _zip(tmp_path / "run.zip", extra)
    found = diagnose(Options(paths=[str(archive)]))
    assert found.verdict.first_death is not None and found.verdict.first_death.rank == 1
    assert {s.path.removeprefix(f"{archive}/"): s.reason for s in found.skipped if s.reason != "empty"} == {
        "ckpt/model.pt": "binary: not a text log",
        "nested.zip": "an archive inside an archive: not read (extract it to read it)",
        "notes/README.md": "a document, not a log",
    }


def test_a_cut_archive_is_read_up_to_the_cut_and_said_so(tmp_path: Path) -> None:
    whole = _tar(tmp_path / "logs.tar", "w").read_bytes()
    cut = tmp_path / "cut.tar"
    cut.write_bytes(whole[: len(whole) * 2 // 3])
    found = diagnose(Options(paths=[str(cut)]))
    assert 0 < len(found.inputs) < len(diagnose(Options(paths=[str(tmp_path / "logs.tar")])).inputs)
    (reason,) = [s.reason for s in found.skipped if s.path == str(cut)]
    assert reason.startswith("damaged tar archive: ") and reason.endswith("(the members before it were read)")
