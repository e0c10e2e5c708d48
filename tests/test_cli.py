"""The command line as a user meets it: exit codes, one-line errors, read-only inputs."""

from __future__ import annotations

import gzip
import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RAISE = ROOT / "fixtures" / "torchrun-raise-rank2" / "logs"


def run(*args: str, stdin: bytes = b"", cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "rankautopsy", *args], input=stdin, capture_output=True, cwd=cwd, timeout=120
    )


def one_error_line(result: subprocess.CompletedProcess[bytes]) -> str:
    err = result.stderr.decode()
    assert result.returncode == 2, (result.returncode, err)
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("rankautopsy: error: ")
    return lines[0]


def usage_error(result: subprocess.CompletedProcess[bytes], command: str = "diagnose") -> str:
    """A command-line mistake: one error line, then the hint that says where the syntax is explained."""
    err = result.stderr.decode()
    assert result.returncode == 2, (result.returncode, err)
    assert "Traceback" not in err
    first, hint = err.strip().splitlines()
    assert first.startswith("rankautopsy: error: ")
    assert hint == f"Try 'rankautopsy {command} --help' for help."
    return first


def test_missing_path_is_one_line_and_exit_2(tmp_path: Path) -> None:
    line = one_error_line(run("diagnose", str(tmp_path / "nope")))
    assert "no such file or directory" in line and "nope" in line


def test_empty_directory_is_one_line_and_exit_2(tmp_path: Path) -> None:
    assert "nothing readable" in one_error_line(run("diagnose", str(tmp_path)))


def test_directory_of_only_binary_files_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "model.pt").write_bytes(bytes(range(256)) * 64)
    line = one_error_line(run("diagnose", str(tmp_path)))
    assert "binary" in line


def test_bad_option_values_are_one_line(tmp_path: Path) -> None:
    assert "--boot-time: invalid boot time" in usage_error(run("diagnose", str(RAISE), "--boot-time", "yesterday-ish"))
    assert "--tz: unknown time zone" in usage_error(run("diagnose", str(RAISE), "--tz", "Mars/Olympus"))
    assert "--format: unknown value 'pdf'" in usage_error(run("diagnose", str(RAISE), "--format", "pdf"))
    assert usage_error(run("diagnose")) == "rankautopsy: error: missing PATH..."


def test_bad_files_among_good_ones_are_skipped_and_named(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    for f in RAISE.iterdir():
        (logs / f.name).write_bytes(f.read_bytes())
    (logs / "core.bin").write_bytes(b"\x7fELF" + bytes(4096))
    lines = "".join(f"step {i} loss {i * 7919 % 10007}\n" for i in range(5000)).encode()
    (logs / "old.log.gz").write_bytes(gzip.compress(lines)[:2000])
    (logs / "loop").symlink_to(logs)
    (logs / "huge_line.log").write_bytes(b"x" * (10 * 1024 * 1024) + b"\n")
    result = run("diagnose", str(logs), "--format", "json")
    assert result.returncode == 1, result.stderr.decode()
    import json

    report = json.loads(result.stdout)
    skipped = {Path(s["path"]).name: s["reason"] for s in report["skipped"]}
    assert "binary" in skipped["core.bin"]
    assert "truncated gzip" in skipped["old.log.gz"]
    assert any("symlink loop" in reason for reason in skipped.values())
    assert report["verdict"]["first_death"]["rank"] == 2


def test_inputs_are_never_modified(tmp_path: Path) -> None:
    def digest(root: Path) -> dict[str, tuple[str, float]]:
        return {
            str(p): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime)
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }

    before = digest(RAISE)
    names_before = sorted(os.listdir(RAISE))
    run("diagnose", str(RAISE))
    assert digest(RAISE) == before
    assert sorted(os.listdir(RAISE)) == names_before


def test_exit_status_contract() -> None:
    assert run("diagnose", str(RAISE), "--format", "json").returncode == 1
    assert run("diagnose", str(RAISE), "--format", "json", "--exit-zero").returncode == 0


def test_dmesg_from_stdin() -> None:
    fixture = ROOT / "fixtures" / "torchrun-sigkill-oom-rank1"
    dmesg = (fixture / "dmesg.txt").read_bytes()
    result = run("diagnose", str(fixture / "logs"), "--dmesg", "-", "--format", "json", "--tz", "UTC", stdin=dmesg)
    import json

    first = json.loads(result.stdout)["verdict"]["first_death"]
    assert (first["rank"], first["cause"]) == (1, "host_oom")


def test_output_file_gets_the_format_and_stdout_the_report(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    result = run("diagnose", str(RAISE), "--format", "json", "--output", str(out), "--no-color")
    assert result.returncode == 1
    import json

    assert json.loads(out.read_text())["verdict"]["first_death"]["rank"] == 2
    assert "died first" in result.stdout.decode()


def test_output_is_not_created_when_the_diagnosis_fails(tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    one_error_line(run("diagnose", str(tmp_path / "missing"), "--format", "markdown", "--output", str(out)))
    assert not out.exists()


def test_github_format_appends_the_markdown_summary(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    result = subprocess.run(
        [sys.executable, "-m", "rankautopsy", "diagnose", str(RAISE), "--format", "github"],
        capture_output=True,
        env={**os.environ, "GITHUB_STEP_SUMMARY": str(summary)},
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stdout.decode().startswith("::error file=")
    text = summary.read_text()
    assert text.startswith("# earlier step\n") and "Rank 2 died first" in text


def test_no_progress_display_when_stderr_is_not_a_terminal() -> None:
    result = run("diagnose", str(RAISE), "--format", "json")
    assert result.returncode == 1 and result.stderr == b""


def test_progress_display_on_a_terminal_and_silenced_by_quiet() -> None:
    """Under a pseudo-terminal a scan longer than a moment shows a spinner on stderr; --quiet hides it."""
    import pty

    script = (
        "import sys, time; from rankautopsy.cli import diagnose; "
        "ctx = diagnose.progress(quiet=sys.argv[1] == 'quiet', delay=0.0); ctx.__enter__(); time.sleep(0.5); "
        "ctx.__exit__(None, None, None)"
    )
    outputs = {}
    for mode in ("loud", "quiet"):
        chunks: list[bytes] = []

        def read(fd: int, sink: list[bytes] = chunks) -> bytes:
            data = os.read(fd, 1024)
            sink.append(data)
            return data

        pty.spawn([sys.executable, "-c", script, mode], read)
        outputs[mode] = b"".join(chunks)
    assert b"reading the logs" in outputs["loud"]
    assert b"reading the logs" not in outputs["quiet"]
