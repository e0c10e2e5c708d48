"""Event files: written by `scan`, read by `diagnose` among raw logs, checked against their JSON Schema;
bad ones are one line (exit 2) alone, or skipped and named beside good ones."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from datetime import UTC
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import rankautopsy
from rankautopsy.cli import _run
from rankautopsy.events import Collected
from rankautopsy.events.file import MAGIC, SCHEMA
from rankautopsy.pipeline import Options, collect, conclude, diagnose
from rankautopsy.render.json import render_json

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
XID = FIXTURES / "multinode-xid79-rank6"
RAW = (XID / "logs" / "node01.log", XID / "dmesg-node01.txt", XID / "logs" / "node02.log", XID / "dmesg-node02.txt")
SCHEMA_FILE = Path(rankautopsy.__file__).parent / "schema" / "events-1.json"


def cli(args: list[str]) -> int:
    try:
        return _run(args)
    except SystemExit as exc:  # usage errors leave through SystemExit
        return int(exc.code or 0)


def scan(*args: str | Path) -> int:
    return cli(["scan", "-q", *map(str, args)])


def report(*paths: str | Path, **options: Any) -> Any:
    result = diagnose(Options(paths=[str(p) for p in paths], tz=UTC, **options))
    return json.loads(render_json(result))


def records(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle]


def node01(tmp_path: Path, name: str = "node01.events.jsonl.gz") -> Path:
    out = tmp_path / name
    assert scan(XID / "logs" / "node01.log", "--dmesg", XID / "dmesg-node01.txt", "--host", "node01", "-o", out) == 0
    return out


def node02(tmp_path: Path, name: str = "node02.events.jsonl") -> Path:
    out = tmp_path / name
    assert scan(XID / "logs" / "node02.log", "--dmesg", XID / "dmesg-node02.txt", "--host", "node02", "-o", out) == 0
    return out


def test_every_line_of_an_event_file_matches_the_shipped_schema(tmp_path: Path) -> None:
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    lines = records(node01(tmp_path)) + records(node02(tmp_path))
    for line in lines:
        jsonschema.validate(line, schema, format_checker=jsonschema.FormatChecker())
    kinds = [line.get("type", "header") for line in lines]
    assert kinds.count("header") == 2 and kinds.count("end") == 2 and "event" in kinds and "input" in kinds


def test_the_header_names_the_node_and_the_end_counts_what_came_before(tmp_path: Path) -> None:
    lines = records(node01(tmp_path))
    header, end = lines[0], lines[-1]
    assert header["format"] == MAGIC and header["schema"] == SCHEMA
    assert header["nodes"][0]["host"] == "node01"
    assert end == {
        "type": "end",
        "inputs": sum(1 for r in lines if r.get("type") == "input"),
        "events": sum(1 for r in lines if r.get("type") == "event"),
        "skipped": sum(1 for r in lines if r.get("type") == "skipped"),
    }
    inputs = [r for r in lines if r.get("type") == "input"]
    assert {r["host"] for r in inputs} == {"node01"}


def test_gzip_follows_the_name(tmp_path: Path) -> None:
    assert node01(tmp_path).read_bytes()[:2] == b"\x1f\x8b"
    assert node02(tmp_path).read_bytes()[:1] == b"{"


def test_event_files_give_the_diagnosis_of_the_raw_files(tmp_path: Path) -> None:
    raw = report(
        XID / "logs" / "node01.log", XID / "dmesg-node01.txt", XID / "logs" / "node02.log", XID / "dmesg-node02.txt"
    )
    merged = report(node01(tmp_path), node02(tmp_path))
    for key in ("verdict", "ranks", "events"):
        assert merged[key] == raw[key], key
    assert [i["path"] for i in merged["inputs"]] == [i["path"] for i in raw["inputs"]]


def test_event_files_and_raw_logs_mix(tmp_path: Path) -> None:
    raw = report(
        XID / "logs" / "node01.log", XID / "dmesg-node01.txt", XID / "logs" / "node02.log", XID / "dmesg-node02.txt"
    )
    mixed = report(XID / "logs" / "node01.log", XID / "dmesg-node01.txt", node02(tmp_path))
    assert mixed["verdict"] == raw["verdict"] and mixed["events"] == raw["events"]


def test_an_event_file_is_known_by_its_content_whatever_its_name(tmp_path: Path) -> None:
    odd = node02(tmp_path, "rank_3.log")  # a name that would make it a rank's log
    folder = tmp_path / "shared"
    folder.mkdir()
    shutil.move(odd, folder / "rank_3.log")
    node01(folder, "x.txt.gz")
    result = report(folder)
    assert result["verdict"]["first_death"]["rank"] == 6
    assert all(i["path"].startswith(str(XID)) for i in result["inputs"])


def _bad_files(tmp_path: Path) -> dict[str, Path]:
    good = node02(tmp_path)
    lines = good.read_text(encoding="utf-8").splitlines(keepends=True)
    future = json.loads(lines[0])
    future["schema"] = SCHEMA + 1
    out = {
        "truncated": "".join(lines[: len(lines) // 2]),
        "no end": "".join(lines[:-1]),
        "other schema": json.dumps(future) + "\n" + "".join(lines[1:]),
        "not json": lines[0] + "{nope\n",
        "wrong type": lines[0] + lines[1].replace('"lines": ', '"lines": "many", "x": '),
        "bad cause": lines[0] + "".join(lines[1:]).replace('"cause": "gpu_hardware"', '"cause": "gremlins"'),
    }
    files = {}
    for name, text in out.items():
        path = tmp_path / f"{name.replace(' ', '-')}.jsonl"
        path.write_text(text, encoding="utf-8")
        files[name] = path
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(good.read_bytes())[:-40])
    files["cut gzip"] = cut
    return files


def test_a_bad_event_file_alone_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, path in _bad_files(tmp_path).items():
        assert cli(["diagnose", str(path)]) == 2, name
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(path.name) in err[0] and "event file" in err[0], (name, err)
    assert "schema 2" in _one(tmp_path / "other-schema.jsonl", capsys)
    assert "truncated" in _one(tmp_path / "no-end.jsonl", capsys)


def _one(path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    cli(["diagnose", str(path)])
    return capsys.readouterr().err


def test_bad_event_files_beside_good_ones_are_skipped_and_named(tmp_path: Path) -> None:
    bad = _bad_files(tmp_path)
    result = report(node01(tmp_path), *bad.values())
    skipped = {s["path"]: s["reason"] for s in result["skipped"]}
    assert set(skipped) == {str(p) for p in bad.values()}
    assert all("event file" in reason for reason in skipped.values())
    assert result["verdict"]["outcome"] != "clean"


def test_same_named_inputs_of_two_nodes_stay_apart(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = []
    for host in ("node01", "node02"):
        work = tmp_path / host
        work.mkdir()
        shutil.copy(XID / f"dmesg-{host}.txt", work / "dmesg.txt")
        shutil.copy(XID / "logs" / f"{host}.log", work / "job.log")
        files.append(tmp_path / f"{host}.jsonl")
        monkeypatch.chdir(work)
        assert scan("job.log", "--dmesg", "dmesg.txt", "--host", host, "-o", files[-1]) == 0
    result = report(*files)
    paths = [i["path"] for i in result["inputs"]]
    assert paths == ["node01:job.log", "node01:dmesg.txt", "node02:job.log", "node02:dmesg.txt"]
    first = result["verdict"]["first_death"]
    assert first["rank"] == 6 and first["evidence"][0]["source"] == "node02:dmesg.txt"


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "rankautopsy", *args]


def test_piped_kernel_log_is_named_for_its_node(tmp_path: Path) -> None:
    out = tmp_path / "n2.jsonl"
    done = subprocess.run(
        _cli("scan", "--dmesg", "-", "--host", "node02", "-o", str(out)),
        input=(XID / "dmesg-node02.txt").read_bytes(),
        capture_output=True,
    )
    assert done.returncode == 0 and done.stdout == b""
    assert "wrote" in done.stderr.decode() and len(done.stderr.decode().splitlines()) == 1
    inputs = [r for r in records(out) if r.get("type") == "input"]
    assert [r["path"] for r in inputs] == ["<stdin on node02>"]
    events = [r for r in records(out) if r.get("type") == "event"]
    assert events and {e["host"] for e in events} == {"node02"}


def test_writing_is_atomic_and_only_where_asked(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(XID / "logs", logs)
    before = sorted(p.name for p in logs.iterdir())
    target = tmp_path / "out" / "node.jsonl"
    target.parent.mkdir()
    target.write_text("old contents\n", encoding="utf-8")
    assert scan(logs, "-o", target) == 0
    assert sorted(p.name for p in logs.iterdir()) == before
    assert [p.name for p in target.parent.iterdir()] == ["node.jsonl"]  # no temp file left behind
    assert records(target)[0]["format"] == MAGIC


def test_an_unwritable_target_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert scan(XID / "logs", "-o", tmp_path / "no" / "such" / "dir.jsonl") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot write the event file" in err[0]


def test_scan_needs_an_output_and_an_input(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli(["scan", str(XID / "logs")]) == 2
    assert "--output" in capsys.readouterr().err
    assert cli(["scan", "-o", "x.jsonl"]) == 2
    assert "--dmesg" in capsys.readouterr().err


def _quiet(capfd: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = cli(["scan", *map(str, args)])
    out, err = capfd.readouterr()
    return code, out, err


def test_epilogue_mode_is_silent_and_never_fails(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    out, gone = tmp_path / "node.jsonl.gz", tmp_path / "gone"
    assert _quiet(capfd, "--epilogue", XID / "logs", gone, "-o", out) == (0, "", "")
    host = records(out)[0]["nodes"][0]["host"]
    assert {"type": "skipped", "path": str(gone), "reason": f"no such file or directory on {host}"} in records(out)
    assert _quiet(capfd, "--epilogue", gone, "-o", out) == (0, "", "")
    assert [r.get("type", "header") for r in records(out)] == ["header", "skipped", "end"]
    code, stdout, err = _quiet(capfd, "--epilogue", XID / "logs", "-o", "/proc/nope.jsonl")
    assert (code, stdout) == (0, "") and len(err.splitlines()) == 1 and "exit 0" in err
    code, stdout, err = _quiet(capfd, "-q", gone, "-o", out)
    assert code == 2 and len(err.splitlines()) == 1


def test_an_epilogue_scan_past_its_time_bound_still_exits_0(tmp_path: Path) -> None:
    slow = tmp_path / "big.log"
    line = b"[default0]:2026-11-29 07:00:00,000 INFO step 1 loss 0.5 " + b"x" * 200 + b"\n"
    slow.write_bytes(line * 200_000)  # 52 MB: tens of ms even at a scan's best speed, far past 1 ms
    out = tmp_path / "node.jsonl"
    done = subprocess.run(
        _cli("scan", "--epilogue", "--timeout", "0.001", str(slow), "-o", str(out)), capture_output=True
    )
    assert done.returncode == 0 and "--timeout" in done.stderr.decode() and not out.exists()
    bounded = subprocess.run(_cli("scan", "--timeout", "0.001", str(slow), "-o", str(out)), capture_output=True)
    assert bounded.returncode == 2 and "--timeout" in bounded.stderr.decode() and not out.exists()


def test_dash_writes_the_event_file_to_stdout_for_ssh_and_kubectl_exec(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    code, stdout, err = _quiet(capfd, XID / "logs" / "node02.log", "--host", "node02", "-o", "-")
    assert code == 0 and err == ""
    received = tmp_path / "node02.events"
    received.write_text(stdout, encoding="utf-8")
    assert records(received)[0]["format"] == MAGIC
    assert report(received)["events"] == report(XID / "logs" / "node02.log")["events"]


def test_collected_parts_merge_in_memory_as_they_do_through_files() -> None:
    node_1 = Options(paths=[str(p) for p in RAW[:2]], tz=UTC)
    node_2 = Options(paths=[str(p) for p in RAW[2:]], tz=UTC)
    merged = conclude(Collected.merge([collect(node_1), collect(node_2)]), node_1)
    assert json.loads(render_json(merged)) == report(*RAW)


def test_ranks_seen_only_in_the_head_survive_an_event_file(tmp_path: Path) -> None:
    console = tmp_path / "console.log"
    console.write_text(
        "".join(f"[{r}] 2026-12-01 21:33:1{r},529 INFO rank {r} up\n" for r in range(3))
        + "".join(
            f"[{r}] [rank{r}]: RuntimeError: [../gloo/transport/tcp/pair.cc:553] Connection closed by peer [::1]:1\n"
            for r in range(2)
        )
    )
    out = tmp_path / "node01.events.jsonl"
    assert scan(console, "--host", "node01", "-o", out) == 0
    (kept,) = [r for r in records(out) if r.get("type") == "input"]
    assert kept["stream"]["head_ranks"] == [0, 1, 2]
    assert report(out)["verdict"] == report(console)["verdict"]
    assert report(out)["verdict"]["first_death"]["rank"] == 2
