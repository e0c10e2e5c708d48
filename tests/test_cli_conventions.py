"""The conventions users of ruff, ripgrep and pytest expect of a command line, one test each. Behaviour
that belongs to the real process (signals, terminals, pipes) is checked on a real process: a subprocess,
under a pseudo-terminal where a terminal matters."""

from __future__ import annotations

import bz2
import importlib.metadata
import importlib.util
import io
import json
import lzma
import os
import pty
import re
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rankautopsy.cli import main

ROOT = Path(__file__).resolve().parent.parent
RAISE = ROOT / "fixtures" / "torchrun-raise-rank2" / "logs"
OOM = ROOT / "fixtures" / "torchrun-sigkill-oom-rank1"
CLI = [sys.executable, "-m", "rankautopsy"]
JSON_UTC = ("--format", "json", "--tz", "UTC")
HINT = "Try 'rankautopsy diagnose --help' for help."


def run(*args: str, stdin: bytes = b"", env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        [*CLI, *args], input=stdin, capture_output=True, env={**os.environ, **(env or {})}, timeout=300
    )
    return subprocess.CompletedProcess(result.args, result.returncode, result.stdout.decode(), result.stderr.decode())


def first_death(result: subprocess.CompletedProcess[str]) -> tuple[int, str]:
    found = json.loads(result.stdout)["verdict"]["first_death"]
    return found["rank"], found["cause"]


# ---- version, help, usage errors, completion ----


def test_version_is_a_root_option() -> None:
    expected = f"rankautopsy {importlib.metadata.version('rankautopsy')}\n"
    for flag in ("--version", "-V"):
        result = run(flag)
        assert (result.returncode, result.stdout, result.stderr) == (0, expected, "")


def test_version_imports_neither_rich_nor_the_pipeline_nor_the_rule_loader() -> None:
    probe = (
        "import sys; sys.argv = ['rankautopsy', '--version']\n"
        "from rankautopsy.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(' '.join(m for m in sys.modules if m.split('.')[0] in ('rich', 'hyperscan', 'yaml', 'regex')"
        " or m in ('rankautopsy.pipeline', 'rankautopsy.render.terminal')))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120).stdout
    assert out.splitlines()[-1] == ""


def test_a_json_diagnosis_from_cached_packs_loads_neither_regex_nor_re2_nor_openssl(tmp_path: Path) -> None:
    """`regex` is for users' rules and the fallback engine, RE2 for where Hyperscan is missing, Hyperscan
    for inputs bigger than these, hashlib's OpenSSL not needed for the cache's digests, typer for help and
    usage mistakes: a built-in diagnosis of a small input (second run: packs cached) loads none."""
    probe = (
        "import sys, io, contextlib; sys.argv = ['rankautopsy', 'diagnose', sys.argv[1], '-f', 'json']\n"
        "from rankautopsy.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        "    try:\n        main()\n    except SystemExit:\n        pass\n"
        "assert '\"first_death\"' in out.getvalue()\n"
        "unwanted = ('regex', 're2', 'hyperscan', '_hashlib', 'rich', 'yaml', 'typer')\n"
        "print(' '.join(m for m in sys.modules if m.split('.')[0] in unwanted))"
    )
    env = {**os.environ, "RANKAUTOPSY_CACHE_DIR": str(tmp_path)}
    for fixture in ("torchrun-raise-rank2", "torchrun-sigkill-oom-rank1", "mpirun5-tag-output-segfault-rank1"):
        logs = str(ROOT / "fixtures" / fixture / "logs")
        runs = [
            subprocess.run([sys.executable, "-c", probe, logs], capture_output=True, text=True, env=env, timeout=120)
        ]
        runs.append(
            subprocess.run([sys.executable, "-c", probe, logs], capture_output=True, text=True, env=env, timeout=120)
        )
        assert [r.returncode for r in runs] == [0, 0], runs[-1].stderr
        assert runs[-1].stdout.splitlines()[-1] == "", fixture


def test_bare_command_prints_its_help_as_usage_and_exits_2() -> None:
    """As ruff (clap) does: the whole help on stderr, status 2; `--help` itself is on stdout, status 0."""
    bare = run()
    assert (bare.returncode, bare.stdout) == (2, "")
    assert bare.stderr.startswith("Usage: rankautopsy [OPTIONS] COMMAND [ARGS]...")
    assert re.search(r"^  diagnose ", bare.stderr, re.MULTILINE)
    helped = run("--help")
    assert (helped.returncode, helped.stderr) == (0, "")
    assert helped.stdout.strip() == bare.stderr.strip()


@pytest.mark.parametrize(
    ("args", "usage"),
    [
        (["diagnose"], "Usage: rankautopsy diagnose [OPTIONS] PATH..."),
        (["rules", "explain"], "Usage: rankautopsy rules explain [OPTIONS] ID"),
        (["rules", "check"], "Usage: rankautopsy rules check [OPTIONS] PACK..."),
        (["rules", "test"], "Usage: rankautopsy rules test [OPTIONS] [PACK...]"),
        (["rules", "list"], "Usage: rankautopsy rules list [OPTIONS]"),
    ],
)
def test_help_names_values_by_metavariable_not_python_type(args: list[str], usage: str) -> None:
    result = run(*args, "--help")
    assert result.returncode == 0
    assert result.stdout.splitlines()[0] == usage
    assert not re.search(r"<[\w\[\]|, ]+>", result.stdout), result.stdout


def test_diagnose_help_metavariables() -> None:
    text = run("diagnose", "--help").stdout
    for shown in (
        "--dmesg [HOST=]FILE",
        "--rules PATH",
        "-o, --output FILE",
        "--width COLUMNS",
        "--tz ZONE",
        "PATH...",
    ):
        assert shown in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--format", "sarif"],
            "--format: unknown value 'sarif'; choose from terminal, json, markdown, github, junit, html",
        ),
        (["--width", "wide"], "--width: 'wide' is not a whole number"),
        (["--width", "39"], "--width: 39 columns is too narrow; give 40 or more"),
        (["--clock-skew", "-1"], "--clock-skew: give zero or more seconds"),
        (["--dmesgg", "x"], "unknown option --dmesgg (did you mean --dmesg?)"),
        (["--dmesg"], "--dmesg needs a value"),
        (["-", "--dmesg", "-"], "'-' (standard input) can be given only once, as a path or as --dmesg"),
        (["-", "-"], "'-' (standard input) can be given only once, as a path or as --dmesg"),
    ],
)
def test_usage_errors_are_in_the_tools_words_with_a_hint(args: list[str], message: str) -> None:
    result = run("diagnose", str(RAISE), *args)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.splitlines() == [f"rankautopsy: error: {message}", HINT]
    assert "Value error" not in result.stderr and "Input should be" not in result.stderr


def test_a_missing_argument_names_its_metavariable() -> None:
    result = run("diagnose")
    assert result.stderr.splitlines() == ["rankautopsy: error: missing PATH...", HINT]
    assert run("nope").stderr.splitlines() == [
        "rankautopsy: error: no such command 'nope'",
        "Try 'rankautopsy --help' for help.",
    ]


def test_a_width_of_40_is_accepted() -> None:
    result = run("diagnose", str(RAISE), "--width", "40")
    assert (result.returncode, result.stderr) == (1, "")
    assert "died first" in result.stdout


def test_shell_completion_is_offered_and_completes() -> None:
    # the shell is named, so typer's detection (shellingham reading the process tree) is never asked
    script = run("--show-completion", "bash", env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    assert script.returncode == 0
    assert "_RANKAUTOPSY_COMPLETE=complete_bash" in script.stdout
    assert "--install-completion" in run("--help").stdout

    def complete(words: str) -> list[str]:
        env = {"_RANKAUTOPSY_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(words.count(" "))}
        return run(env=env).stdout.split()

    assert complete("rankautopsy diag") == ["diagnose"]
    assert "json" in complete("rankautopsy diagnose --format ")


# ---- colour ----


def in_process(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *args: str) -> str:
    monkeypatch.setattr(sys, "argv", ["rankautopsy", *args])
    with pytest.raises(SystemExit):
        main()
    return capsys.readouterr().out


@pytest.mark.parametrize(
    ("env", "flags", "coloured"),
    [
        ({}, [], False),  # stdout is not a terminal here
        ({"FORCE_COLOR": "1"}, [], True),
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, [], False),
        ({"NO_COLOR": "1"}, ["--color"], True),
        ({"FORCE_COLOR": "1"}, ["--no-color"], False),
    ],
)
def test_no_color_and_force_color_and_the_flags_that_override_both(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    env: dict[str, str],
    flags: list[str],
    coloured: bool,
) -> None:
    for name in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    out = in_process(capsys, monkeypatch, "diagnose", str(RAISE), *flags)
    assert "died first" in out
    assert ("\x1b[" in out) is coloured


# ---- inputs: pipes, stdin, compression ----


def test_a_named_pipe_and_process_substitution_are_read(tmp_path: Path) -> None:
    dmesg = (OOM / "dmesg.txt").read_bytes()
    fifo = tmp_path / "dmesg.fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with fifo.open("wb") as pipe:
            pipe.write(dmesg)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    by_name = run("diagnose", str(OOM / "logs"), "--dmesg", str(fifo), "--format", "json", "--tz", "UTC")
    writer.join(timeout=60)
    assert first_death(by_name) == (1, "host_oom"), by_name.stderr
    substituted = subprocess.run(
        ["bash", "-c", 'exec "$@" --dmesg <(cat "$DMESG")', "bash", *CLI, "diagnose", str(OOM / "logs"), *JSON_UTC],
        capture_output=True,
        text=True,
        env={**os.environ, "DMESG": str(OOM / "dmesg.txt")},
        timeout=300,
    )
    assert first_death(subprocess.CompletedProcess([], 0, substituted.stdout)) == (1, "host_oom"), substituted.stderr


def test_a_device_given_by_name_is_sniffed_not_read_forever() -> None:
    result = run("diagnose", str(RAISE), "/dev/zero", "--format", "json")
    assert result.returncode == 1
    skipped = {s["path"]: s["reason"] for s in json.loads(result.stdout)["skipped"]}
    assert skipped["/dev/zero"] == "binary: not a text log"


@pytest.mark.parametrize(("suffix", "pack"), [(".xz", lzma.compress), (".bz2", bz2.compress)])
def test_xz_and_bzip2_logs_read_like_gzip(tmp_path: Path, suffix: str, pack: object) -> None:
    text = (RAISE / "console.log").read_bytes()
    packed = tmp_path / f"console.log{suffix}"
    packed.write_bytes(pack(text))  # type: ignore[operator]
    cut = tmp_path / f"cut.log{suffix}"
    cut.write_bytes(pack(text)[: len(pack(text)) // 2])  # type: ignore[operator]
    plain = json.loads(run("diagnose", str(RAISE / "console.log"), "--format", "json").stdout)
    result = run("diagnose", str(packed), str(cut), "--format", "json")
    report = json.loads(result.stdout)
    assert report["verdict"]["first_death"]["rank"] == plain["verdict"]["first_death"]["rank"] == 2
    lines = {Path(i["path"]).name: i["lines"] for i in report["inputs"]}
    assert lines[packed.name] == plain["inputs"][0]["lines"]
    fmt = "xz" if suffix == ".xz" else "bzip2"
    assert [s["reason"].split(":")[0] for s in report["skipped"]] == [f"truncated {fmt}"]


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_a_utf16_log_with_its_byte_order_mark_reads_as_its_text(tmp_path: Path, codec: str) -> None:
    """Windows PowerShell's `>` writes UTF-16 with a BOM and CRLF: the same lines, the same verdict."""
    text = (RAISE / "console.log").read_text(encoding="utf-8")
    data = "\ufeff".encode(codec) + text.replace("\n", "\r\n").encode(codec)
    (tmp_path / "console.log").write_bytes(data)

    def death(report: dict[str, Any]) -> str:
        return json.dumps(report["verdict"]["first_death"]).replace(report["inputs"][0]["path"], "")

    plain = json.loads(run("diagnose", str(RAISE / "console.log"), *JSON_UTC).stdout)
    for result in (run("diagnose", str(tmp_path), *JSON_UTC), run("diagnose", "-", *JSON_UTC, stdin=data)):
        report = json.loads(result.stdout)
        assert report["skipped"] == [], report["skipped"]
        assert death(report) == death(plain)
        assert report["inputs"][0]["lines"] == plain["inputs"][0]["lines"]


@pytest.mark.parametrize("spaced", [False, True])
def test_dockers_json_file_log_reads_as_its_text_line_for_line(tmp_path: Path, spaced: bool) -> None:
    """Docker's json-file driver writes each line as a JSON record (`{"log":"...\\n","stream":...,"time":...}`):
    the same lines, numbered as the records, and the same first death; a line that is no record is kept."""
    text = (RAISE / "console.log").read_text(encoding="utf-8").splitlines()
    separators = (", ", ": ") if spaced else (",", ":")
    stamp = "2026-11-29T09:24:11.{:03d}Z"  # docker's time of arrival, before the lines' own times
    records = [
        json.dumps({"log": line + "\n", "stream": "stderr", "time": stamp.format(n)}, separators=separators)
        for n, line in enumerate(text)
    ]
    (tmp_path / "0123abcd-json.log").write_text("\n".join([*records[:3], "not a record", *records[3:]]) + "\n")
    plain = json.loads(run("diagnose", str(RAISE / "console.log"), *JSON_UTC).stdout)
    report = json.loads(run("diagnose", str(tmp_path), *JSON_UTC).stdout)
    assert report["skipped"] == []
    assert report["inputs"][0]["lines"] == plain["inputs"][0]["lines"] + 1
    mine, theirs = report["verdict"]["first_death"], plain["verdict"]["first_death"]
    assert (mine["rank"], mine["cause"]) == (theirs["rank"], theirs["cause"]) == (2, "python_exception")
    line = lambda fd: fd["evidence"][0]["line"]  # noqa: E731
    assert line(mine) == line(theirs) + (1 if line(theirs) > 3 else 0)


@pytest.mark.skipif(importlib.util.find_spec("zstandard") is not None, reason="zstandard installed: .zst is read")
def test_zstd_is_skipped_with_a_reason_without_zstandard(tmp_path: Path) -> None:
    (tmp_path / "console.log.zst").write_bytes(b"\x28\xb5\x2f\xfd" + bytes(64))
    result = run("diagnose", str(RAISE), str(tmp_path / "console.log.zst"), "--format", "json")
    skipped = json.loads(result.stdout)["skipped"]
    assert [s["reason"] for s in skipped] == [
        "zstd-compressed: install the 'zstandard' package to read it (or decompress it first)"
    ]


def read_until(fd: int, needle: bytes, seen: bytearray, limit: float = 120) -> bool:
    """Read a pseudo-terminal into `seen` until `needle` shows up (or the stream ends): a hang guard, not
    a timing assertion."""
    end = time.monotonic() + limit
    while needle not in seen and time.monotonic() < end:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: the other side closed
                return needle in seen
            if not chunk:
                break
            seen += chunk
    return needle in seen


def test_stdin_on_a_terminal_gets_a_hint_and_is_read_to_ctrl_d() -> None:
    log = (RAISE / "console.log").read_bytes()
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*CLI, "diagnose", "-", "--format", "json"], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    os.close(slave)
    try:
        assert proc.stderr is not None
        hint = proc.stderr.readline()
        assert hint == b"rankautopsy: reading from stdin (Ctrl-D to end)...\n"
        for line in log.splitlines(keepends=True):
            os.write(master, line)
        os.write(master, b"\x04")
        out, _ = proc.communicate(timeout=300)
    finally:
        os.close(master)
        proc.kill()
    assert proc.returncode == 1
    assert json.loads(out)["verdict"]["first_death"]["rank"] == 2


_PEAK = (  # the CLI, reporting on stderr the peak memory of its own image (VmHWM: reset by exec)
    "import atexit, runpy, sys\n"
    "atexit.register(lambda: sys.stderr.write([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0]))\n"
    "sys.argv = ['rankautopsy', *sys.argv[1:]]\n"
    "runpy.run_module('rankautopsy', run_name='__main__')\n"
)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads VmHWM from /proc")
def test_stdin_is_spooled_not_held_in_memory() -> None:
    """400 MB piped in: the process stays far below what holding it would take, and the verdict is
    that of the log at its end (the whole stream was read)."""
    line = b"2026-11-29 07:00:00,000 INFO [rank0]: data loader worker heartbeat\n"
    feed = f"import sys; [sys.stdout.buffer.write({line!r} * 100_000) for _ in range(60)]"
    feeder = subprocess.Popen([sys.executable, "-c", feed + "; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read())",
                               str(RAISE / "console.log")], stdout=subprocess.PIPE)  # fmt: skip
    proc = subprocess.run(
        [sys.executable, "-c", _PEAK, "diagnose", "-", *JSON_UTC], stdin=feeder.stdout, capture_output=True, timeout=300
    )
    assert feeder.wait() == 0 and feeder.stdout is not None
    feeder.stdout.close()
    peak_kib = int(proc.stderr.decode().split()[-2])
    assert 60 * 100_000 * len(line) > 400_000_000
    assert peak_kib < 200 * 1024, f"peak {peak_kib} KiB"
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["verdict"]["first_death"]["rank"] == 2


def test_stdin_that_cannot_be_spooled_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full $TMPDIR: one line and status 2, not an internal error."""
    import tempfile

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", full)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"step 1\n")))
    monkeypatch.setattr(sys, "argv", ["rankautopsy", "diagnose", "-"])
    with pytest.raises(SystemExit) as stopped:
        main()
    assert stopped.value.code == 2
    assert capsys.readouterr().err == "rankautopsy: error: -: cannot read standard input: No space left on device\n"


def test_stdin_from_a_pipe_gets_no_hint() -> None:
    result = run("diagnose", "-", "--format", "json", stdin=(RAISE / "console.log").read_bytes())
    assert (result.returncode, result.stderr) == (1, "")


# ---- pipes and signals ----


@pytest.fixture(scope="module")
def many_ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 ranks that each raise: a JSON report of ~700 KB, far more than a pipe holds."""
    root = tmp_path_factory.mktemp("many")
    for rank in range(300):
        (root / f"rank_{rank}.log").write_text(
            "".join(f"2026-11-29 07:00:0{s},000 INFO step {s} loss 1.0\n" for s in range(3))
            + 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\n    main()\n'
            + f"ValueError: bad sample {rank}\n"
        )
    return root


def test_a_closed_stdout_ends_the_run_quietly_with_status_141(many_ranks: Path) -> None:
    """`| head -1` closes the pipe: the process ends as `cat` would (killed by SIGPIPE, 141 in a shell),
    never with a verdict status for a report that was cut, and says nothing."""
    shell = subprocess.run(
        [
            "bash",
            "-o",
            "pipefail",
            "-c",
            '"$@" | head -1 >/dev/null',
            "bash",
            *CLI,
            "diagnose",
            str(many_ranks),
            "-fjson",
        ],
        capture_output=True,
        timeout=300,
    )
    assert (shell.returncode, shell.stderr) == (141, b"")
    proc = subprocess.Popen(
        [*CLI, "diagnose", str(many_ranks), "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(1)
    proc.stdout.close()
    assert (proc.wait(timeout=300), proc.stderr.read()) == (-signal.SIGPIPE, b"")


@pytest.fixture(scope="module")
def big_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four 24 MB rank logs: enough that workers are mid-file when they are frozen."""
    root = tmp_path_factory.mktemp("big")
    block = b"".join(b"2026-11-29 07:00:%02d,000 INFO step %d loss 0.5 padding\n" % (i % 60, i) for i in range(20000))
    for rank in range(4):
        with (root / f"rank_{rank}.log").open("wb") as out:
            for _ in range(24_000_000 // len(block)):
                out.write(block)
    return root


def children(pid: int) -> list[int]:
    found: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            found += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    except OSError:
        pass
    return found


def alive(pid: int) -> bool:
    """Running, not merely a zombie waiting for a reaper (a container's init may never reap)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture
def frozen_workers() -> Iterator[list[int]]:
    """The worker processes of a run, stopped with SIGSTOP while they work, so that a signal reaches the
    main process mid-scan whatever the machine's speed; resumed (SIGCONT) by the test."""
    stopped: list[int] = []
    yield stopped
    for pid in stopped:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def freeze_workers(proc: subprocess.Popen[bytes], into: list[int], count: int = 2) -> None:
    end = time.monotonic() + 600
    while len(into) < count and proc.poll() is None and time.monotonic() < end:
        for pid in children(proc.pid):
            if pid not in into:
                os.kill(pid, signal.SIGSTOP)
                into.append(pid)
        time.sleep(0.002)
    assert len(into) == count, "the run ended before its workers could be seen"


needs_proc = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")


@needs_proc
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_ends_the_workers_and_leaves_no_temp_files(
    big_input: Path, tmp_path: Path, frozen_workers: list[int], stop: signal.Signals, temporary_cache: str
) -> None:
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "RANKAUTOPSY_JOBS": "2", "TMPDIR": str(tmp_path / "tmp")}
    proc = subprocess.Popen(
        [*CLI, "diagnose", str(big_input), "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    freeze_workers(proc, frozen_workers)
    proc.send_signal(stop)
    for pid in frozen_workers:
        os.kill(pid, signal.SIGCONT)
    out, err = proc.communicate(timeout=300)
    assert (proc.returncode, out, err) == (-stop, b"", b"")
    assert [pid for pid in frozen_workers if alive(pid)] == []
    assert list((tmp_path / "tmp").iterdir()) == []
    assert [p.name for p in Path(temporary_cache).iterdir() if p.name.endswith(".tmp")] == []


@needs_proc
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_while_a_helper_thread_scans_ends_the_run_of_it(
    big_input: Path, tmp_path: Path, stop: signal.Signals, temporary_cache: str
) -> None:
    """One process with a core to spare scans each chunk in a helper thread: a stop then reaches the main
    thread while it counts lines or waits for the helper, and still ends the run as the signal would."""
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("the helper thread needs a second core")
    big = tmp_path / "one"
    big.mkdir()
    os.link(big_input / "rank_0.log", big / "rank_0.log")
    env = {**os.environ, "RANKAUTOPSY_JOBS": "1"}
    proc = subprocess.Popen(
        [*CLI, "diagnose", str(big), "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
    )
    end = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < end and len(os.listdir(f"/proc/{proc.pid}/task")) < 2:
        time.sleep(0.0005)
    assert proc.poll() is None, "the run ended before its helper thread was seen"
    proc.send_signal(stop)
    out, err = proc.communicate(timeout=300)
    assert (proc.returncode, out, err) == (-stop, b"", b"")


DROPPED_STOP = """
import os, signal, sys, time, weakref
from rankautopsy import cli

class Locked:
    pass

try:
    with cli._signals():
        held = Locked()
        # a weakref callback, where Python drops what a handler raises (as it does in the import lock's clean-up)
        ref = weakref.ref(held, lambda _ref: os.kill(os.getpid(), signal.SIGTERM))
        del held
        {after}
    print("ran on")
except cli._Stopped as stop:
    print("stopped", stop.signum)
"""


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs POSIX timers")
@pytest.mark.parametrize("after", ["time.sleep(30)", "sum(range(10))"], ids=["mid-run", "at-the-end"])
def test_a_stop_that_python_drops_is_raised_again(after: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", DROPPED_STOP.format(after=after)], capture_output=True, timeout=60, check=False
    )
    assert (done.stdout, done.stderr) == (b"stopped 15\n", b"")


SWALLOWED_STOP = """
import os, signal, sys, time
from rankautopsy import cli

try:
    with cli._signals():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(1)
        except BaseException:
            pass  # as CPython 3.11 lost a stop raised while it compiled a module being imported
        {after}
    print("ran on")
except cli._Stopped as stop:
    print("stopped", stop.signum)
"""


@pytest.mark.parametrize(
    "after",
    ["while True: cli.raise_if_stopped(); time.sleep(0.01)", "sum(range(10))"],
    ids=["a-loop-that-would-run-on", "at-the-end"],
)
def test_a_stop_that_something_swallows_is_raised_again(after: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SWALLOWED_STOP.format(after=after)], capture_output=True, timeout=60, check=False
    )
    assert (done.stdout, done.stderr) == (b"stopped 15\n", b"")


WRAPPED_STOP = """
import os, signal, sys
from rankautopsy import cli
from rankautopsy.cli import quick

class Stops:
    def __set_name__(self, owner, name):
        os.kill(os.getpid(), signal.SIGTERM)  # the handler's stop becomes a RuntimeError here (3.11)

def command():
    class Made:
        field = Stops()
    return 0

quick.parse = lambda args: command
sys.argv = ["rankautopsy", "diagnose", "x"]
cli.main()
"""


def test_a_stop_python_wraps_in_another_exception_ends_the_run_as_the_stop() -> None:
    """A stop raised in `__set_name__` (a class made while the handler runs) reaches the CLI as a
    RuntimeError: the run dies of the signal, not of an 'internal error'."""
    done = subprocess.run([sys.executable, "-c", WRAPPED_STOP], capture_output=True, timeout=60, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (-signal.SIGTERM, b"", b"")


def test_other_dropped_exceptions_are_still_reported() -> None:
    script = DROPPED_STOP.replace("os.kill(os.getpid(), signal.SIGTERM)", "1 / 0").format(after="pass")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60, check=False)
    assert done.stdout == b"ran on\n"
    assert b"Exception ignored" in done.stderr and b"ZeroDivisionError" in done.stderr


@needs_proc
def test_the_progress_display_shows_files_and_bytes_and_is_cleared_on_sigterm(
    big_input: Path, frozen_workers: list[int]
) -> None:
    master, slave = pty.openpty()
    env = {**os.environ, "RANKAUTOPSY_JOBS": "2", "COLUMNS": "150", "TERM": "xterm"}
    proc = subprocess.Popen(
        [*CLI, "diagnose", str(big_input), "--format", "json"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    seen = bytearray()
    try:
        freeze_workers(proc, frozen_workers)
        assert read_until(master, b"/4 files", seen, limit=600), bytes(seen)
        proc.send_signal(signal.SIGTERM)
        for pid in frozen_workers:
            os.kill(pid, signal.SIGCONT)
        proc.wait(timeout=300)
        read_until(master, b"\x00never", seen, limit=5)  # drain what is left
    finally:
        os.close(master)
    assert proc.returncode == -signal.SIGTERM
    text = bytes(seen)
    assert b"reading the logs" in text and b"0/4 files" in text
    assert re.search(rb"\d+(?:\.\d+)? ?/ ?\d+(?:\.\d+)? MiB", text), text[-400:]
    tail = text[text.rindex(b"/4 files") :]
    assert b"\x1b[2K" in tail  # the display's lines erased (rich's transient progress)
    assert b"\x1b[?25h" in tail  # and the cursor shown again
    assert [pid for pid in frozen_workers if alive(pid)] == []
