"""Hypothesis strategies for every input kind: per-rank logs, launcher consoles (with each launcher's
prefix), kernel logs in every clock format, torchrun error.json, gzip/xz streams, and rule packs."""

from __future__ import annotations

import gzip
import json
import lzma

from hypothesis import strategies as st

from fuzz.harness import Case

_HOSTILE = st.characters(codec=None, exclude_categories=("Cs",))
MESSAGES = st.sampled_from(
    [
        "step 12 loss 1.25",
        "Traceback (most recent call last):",
        '  File "train.py", line 7, in <module>',
        "ValueError: bad sample 17",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "[E ProcessGroupNCCL.cpp:474] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42)",
        "Fatal Python error: Segmentation fault",
        "Current thread 0x00007f (most recent call first):",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:",
        "  rank      : 3 (local_rank: 3)",
        "  exitcode  : -9 (pid: 4242)",
        "srun: error: node01: task 3: Killed",
    ]
) | st.text(_HOSTILE, max_size=80)
STAMPS = st.sampled_from(
    ["", "2026-11-29 07:00:0{s},123 INFO ", "[2026-11-29 07:00:0{s},123] [INFO] ", "E1129 07:00:0{s}.123456 ",
     "2026-11-29T07:00:0{s}.5Z ", "[9999-99-99 99:99:9{s}] ", "I1399 25:61:6{s}.1 "]
)  # fmt: skip
PREFIXES = st.sampled_from(["", "[rank{r}]:", "[default{r}]:", "{r}: ", "[1,{r}]<stderr>:", "node0{r}: ", "[rank{r}]"])
KERNEL_STAMPS = st.sampled_from(
    ["[{m:12.6f}] ", "<3>[{m:12.6f}] ", "[Sun Nov 29 07:00:0{s} 2026] ", "Nov 29 07:00:0{s} node07 kernel: ",
     "2026-11-29T07:00:0{s}.123456+00:00 node07 kernel: ", "2026-11-29T07:00:0{s},123456+00:00 "]
)  # fmt: skip


@st.composite
def log_lines(draw: st.DrawFn, rank: int | None) -> bytes:
    lines = []
    for _ in range(draw(st.integers(0, 30))):
        s = draw(st.integers(0, 9))
        prefix = draw(PREFIXES).format(r=rank if rank is not None else draw(st.integers(-1, 99999)))
        lines.append(draw(STAMPS).format(s=s) + prefix + draw(MESSAGES))
    sep = draw(st.sampled_from(["\n", "\r\n", "\r", "\n\x00"]))
    return sep.join(lines).encode("utf-8", "surrogatepass")


@st.composite
def kernel_logs(draw: st.DrawFn) -> bytes:
    stamp = draw(KERNEL_STAMPS)
    lines = [
        stamp.format(m=draw(st.floats(-1, 1e12, allow_nan=False)), s=draw(st.integers(0, 9))) + draw(MESSAGES)
        for _ in range(draw(st.integers(1, 20)))
    ]
    return "\n".join(lines).encode("utf-8", "surrogatepass")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(_HOSTILE, max_size=30),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.sampled_from(["message", "extraInfo", "timestamp"]), c),
    max_leaves=20,
)


def _packed(data: bytes, kind: str) -> bytes:
    return {"gz": gzip.compress, "xz": lzma.compress}[kind](data) if kind else data


@st.composite
def rule_packs(draw: st.DrawFn) -> bytes:
    rule = {
        "id": draw(st.sampled_from(["inhouse.x", "bad id", "a.b"])),
        "title": draw(st.text(_HOSTILE, max_size=20)),
        "cause": draw(st.sampled_from(["python_exception", "host_oom", "nope"])),
        "role": draw(st.sampled_from(["cause", "symptom", "context"])),
        "pattern": draw(st.sampled_from(["ValueError: (?P<msg>.*)", "(x|xx)+y", "(", "step (?P<step>\\d+)", ""])),
        "remediation": ["fix it"],
        "examples": {"match": [draw(MESSAGES)], "no_match": ["nothing here"]},
    }
    return json.dumps({"rules": [rule]}).encode()  # JSON is YAML


@st.composite
def cases(draw: st.DrawFn) -> Case:
    files = []
    for rank in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["", "", "gz", "xz"]))
        files.append((f"rank_{rank}.log" + (f".{kind}" if kind else ""), _packed(draw(log_lines(rank)), kind)))
    if draw(st.booleans()):
        files.append(("console.log", draw(log_lines(None))))
    if draw(st.booleans()):
        files.append((f"attempt_0/{draw(st.integers(0, 3))}/error.json", json.dumps({"message": draw(JSON)}).encode()))
    if not files:
        files.append(("console.log", draw(log_lines(None))))
    dmesg = (("dmesg.txt", draw(kernel_logs())),) if draw(st.booleans()) else ()
    pack = draw(rule_packs()) if draw(st.integers(0, 9)) == 0 else None
    return Case(tuple(files), dmesg, pack, boot_time=draw(st.booleans()), label="hypothesis")
