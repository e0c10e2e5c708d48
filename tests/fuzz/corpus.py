"""A mutation corpus built from `fixtures/`: each case is a fixture's logs (real runs) with one to three
hostile mutations, sometimes a kernel log in another clock format, a forged error.json, a compressed
file, or a hostile user rule pack. Deterministic: case `i` of seed `s` is always the same case."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import random
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from fuzz.harness import Case

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures"
PACKS = ROOT / "tests" / "rulepacks"
MAX_CASE = 6 * 1024 * 1024  # bytes per case after mutation: keeps the rate of cases up

Mutator = Callable[[bytes, random.Random], bytes]


@lru_cache(maxsize=1)
def seeds() -> tuple[tuple[tuple[str, bytes], ...], ...]:
    """Each fixture's input files (relative to its logs directory), in a stable order."""
    out = []
    for logs in sorted(FIXTURES.glob("*/logs")):
        files = tuple((p.relative_to(logs).as_posix(), p.read_bytes()) for p in sorted(logs.rglob("*")) if p.is_file())
        if files:
            out.append(files)
    return tuple(out)


@lru_cache(maxsize=1)
def pack_seeds() -> tuple[bytes, ...]:
    return tuple(p.read_bytes() for p in sorted(PACKS.glob("*.yaml")))


# ---- byte-level mutations ----


def _at(data: bytes, rng: random.Random) -> int:
    return rng.randrange(len(data) + 1)


def _line_start(data: bytes, rng: random.Random) -> int:
    at = _at(data, rng)
    return data.rfind(b"\n", 0, at) + 1


def _insert(data: bytes, rng: random.Random, piece: bytes, *, at_line: bool = False) -> bytes:
    at = _line_start(data, rng) if at_line else _at(data, rng)
    return data[:at] + piece + data[at:]


def bit_flips(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return b"\x80"
    buf = bytearray(data)
    for _ in range(rng.randint(1, 16)):
        i = rng.randrange(len(buf))
        buf[i] ^= 1 << rng.randrange(8)
    return bytes(buf)


def truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: _at(data, rng)]


def duplicate(data: bytes, rng: random.Random) -> bytes:
    a = _at(data, rng)
    b = min(len(data), a + rng.randint(1, 4096))
    return data[:b] + data[a:b] * rng.randint(2, 200) + data[b:]


def carriage_returns(data: bytes, rng: random.Random) -> bytes:
    choice = rng.randrange(3)
    if choice == 0:
        return data.replace(b"\n", b"\r\n")
    if choice == 1:
        return data.replace(b"\n", b"\r", rng.randint(1, 50))
    return _insert(data, rng, b"\r" * rng.randint(1, 5))


def nuls(data: bytes, rng: random.Random) -> bytes:
    for _ in range(rng.randint(1, 3)):
        data = _insert(data, rng, b"\x00" * rng.choice((1, 1, 2, 500)))
    return data


_BAD_UTF8 = (b"\xff", b"\xfe", b"\xc0\xaf", b"\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\xc2\x9b31m")


def invalid_utf8(data: bytes, rng: random.Random) -> bytes:
    for _ in range(rng.randint(1, 8)):
        data = _insert(data, rng, rng.choice(_BAD_UTF8))
    return data


def utf16(data: bytes, rng: random.Random) -> bytes:
    return data.decode("utf-8", "replace").encode(rng.choice(("utf-16", "utf-16-le", "utf-16-be", "utf-32")))


_DIGITS = re.compile(rb"\d+")


def huge_numbers(data: bytes, rng: random.Random) -> bytes:
    runs = list(_DIGITS.finditer(data[:200_000]))
    if not runs:
        return _insert(data, rng, b"9" * 5000)
    for m in rng.sample(runs, min(len(runs), rng.randint(1, 5))):
        big = rng.choice((b"9" * rng.randint(16, 40), b"1" * 4301, b"9" * 10_000, b"-" + b"9" * 5000))
        data = data[: m.start()] + big + data[m.end() :] if len(data) >= m.end() else data
    return data


_DATE = re.compile(rb"(\d{4})-(\d\d)-(\d\d)([T ])(\d\d):(\d\d):(\d\d)")
_BAD_DATES = (
    b"0000-00-00T00:00:00", b"9999-12-31T23:59:59", b"99999-01-01T00:00:00", b"2026-13-45T25:61:61",
    b"1969-12-31T23:59:60", b"2026-02-30T24:00:00", b"0001-01-01 00:00:00",
)  # fmt: skip
_BAD_STAMPS = (
    b"[99999999999.999999] ", b"[-1.000000] ", b"[Mon Nov 99 07:00:00 2026] ", b"[Xyz Abc 31 99:99:99 99999] ",
    b"Feb 30 25:61:61 node01 kernel: ", b"E1399 99:99:99.999999 ", b"[2026-13-01 07:00:00,999] ",
    b"1764400000999999999 ", b"2026-11-29T07:00:00,123456+99:99 ",
)  # fmt: skip


def bad_dates(data: bytes, rng: random.Random) -> bytes:
    dates = list(_DATE.finditer(data[:200_000]))
    if dates and rng.random() < 0.6:
        for m in rng.sample(dates, min(len(dates), rng.randint(1, 10))):
            data = data[: m.start()] + rng.choice(_BAD_DATES) + data[m.end() :]
        return data
    for _ in range(rng.randint(1, 5)):
        data = _insert(
            data, rng, rng.choice(_BAD_STAMPS) + b"Out of memory: Killed process 42 (python)\n", at_line=True
        )
    return data


def long_line(data: bytes, rng: random.Random) -> bytes:
    unit = rng.choice((b"x", b"ab ", b"[rank3]: ", b"Traceback ", b"\xe2\x80\xae"))
    return _insert(data, rng, unit * (rng.choice((70_000, 300_000, 1_500_000)) // len(unit)) + b"\n", at_line=True)


def cr_packed(data: bytes, rng: random.Random) -> bytes:
    piece = rng.choice((b" 45%|####      | 45/100 [00:01<00:02, 3.2it/s]", b"x", b"step 5", b"\x1b[2K"))
    line = b"\x07" + b"\r".join([piece] * rng.choice((1000, 20_000, 200_000))) + b"\n"
    return _insert(data, rng, line, at_line=True)


_ESCAPES = (
    b"\x1b]0;pwned\x07", b"\x1b[2J\x1b[H", b"\x1b[31m", b"\x1bP+q\x1b\\", b"\x9b6n", b"\x1b]8;;http://e\x1b\\x",
    "\u202e\u2066evil\u2069\u200b\ufeff\u2028\u2029".encode(), b"[bold]x[/]", b"::error::pwned", b"<script>",
)  # fmt: skip


def escapes(data: bytes, rng: random.Random) -> bytes:
    for _ in range(rng.randint(1, 10)):
        data = _insert(data, rng, rng.choice(_ESCAPES))
    return data


_MANY = (
    b"Traceback (most recent call last):\n",
    b"Out of memory: Killed process 4242 (python) total-vm:1kB\n",
    b"[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n",
    b"[E ProcessGroupNCCL.cpp:474] [Rank 3] Watchdog caught collective operation timeout\n",
    b"torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n",
    b"  rank      : 3 (local_rank: 3)\n",
)


def many_headers(data: bytes, rng: random.Random) -> bytes:
    return _insert(data, rng, rng.choice(_MANY) * rng.choice((100, 2000, 20_000)), at_line=True)


def splice(data: bytes, rng: random.Random) -> bytes:
    other = rng.choice(rng.choice(seeds()))[1]
    lines, more = data.split(b"\n"), other.split(b"\n")
    at = rng.randrange(len(lines) + 1)
    a = rng.randrange(len(more))
    return b"\n".join(lines[:at] + more[a : a + rng.randint(1, 200)] + lines[at:])


BYTE_MUTATORS: tuple[Mutator, ...] = (
    bit_flips, truncate, duplicate, carriage_returns, nuls, invalid_utf8, utf16, huge_numbers, bad_dates,
    long_line, cr_packed, escapes, many_headers, splice,
)  # fmt: skip


# ---- whole inputs: compression, error.json, kernel logs, rule packs ----


def compress(data: bytes, rng: random.Random) -> tuple[str, bytes]:
    kind = rng.choice(("gz", "gz", "xz", "bz2"))
    packed = {"gz": gzip.compress, "xz": lzma.compress, "bz2": bz2.compress}[kind](data)
    if rng.random() < 0.4:
        packed = packed[: rng.randrange(len(packed) + 1)]  # truncated stream
    elif rng.random() < 0.3:
        packed = bit_flips(packed, rng)
    return kind, packed


def error_json(rng: random.Random) -> bytes:
    choice = rng.randrange(6)
    if choice == 0:
        return b"[" * 100_000 + b"]" * 100_000
    if choice == 1:  # written as text: json.dumps itself recurses
        depth = rng.choice((50, 900, 3000))
        closing = b"}" * depth if rng.random() < 0.5 else b""
        return b'{"message": ' * depth + b'"ValueError: deep"' + closing
    stamp = rng.choice(("1764400000", 1764400000, -5, "9" * 5000, 1e308, "nan", None, [1], {"a": 1}, 99999999999999))
    message = rng.choice(("ValueError: bad sample", "", "\x1b[0m\n \n", "\u202eRuntimeError: x", "9" * 5000, None, 7))
    body = {"message": {"message": message, "extraInfo": {"timestamp": stamp, "py_callstack": "x"}}}
    text = json.dumps(body).encode()
    return truncate(text, rng) if choice == 5 else text


_KERNEL_LINES = (
    b"Out of memory: Killed process 4242 (python) total-vm:123456kB, anon-rss:1234kB",
    b"NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, GPU has fallen off the bus.",
    b"python[4242]: segfault at 0 ip 00007f sp 00007f error 4 in libc.so.6",
    b"oom-kill:constraint=CONSTRAINT_MEMCG,task=python,pid=4242,uid=0",
)


def kernel_log(rng: random.Random) -> tuple[str, bytes]:
    """A kernel log in one of the clock formats (raw dmesg, -T, journalctl, kern.log, iso), maybe mutated."""
    fmt = rng.randrange(5)
    lines = []
    for i in range(rng.randint(1, 60)):
        sec = 3600 + i * rng.choice((0.001, 1, 60))
        text = rng.choice(_KERNEL_LINES)
        if fmt == 0:
            stamp = f"[{sec:12.6f}] "
        elif fmt == 1:
            stamp = f"[Sun Nov 29 07:{i % 60:02d}:{i % 60:02d} 2026] "
        elif fmt == 2:
            stamp = f"Nov 29 07:{i % 60:02d}:00 node07 kernel: "
        elif fmt == 3:
            stamp = f"2026-11-29T07:{i % 60:02d}:00.123456+00:00 node07 kernel: "
        else:
            stamp = f"2026-11-29T07:{i % 60:02d}:00,123456+00:00 "
        lines.append(stamp.encode() + text)
    data = b"\n".join(lines) + b"\n"
    if rng.random() < 0.5:
        data = rng.choice(BYTE_MUTATORS)(data, rng)
    return rng.choice(("dmesg.txt", "kern.log", "journal-k.txt", "node07.dmesg")), data


_BOMBS = (
    b"a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
    + b"".join(b"a%d: &a%d [" % (i, i) + b", ".join([b"*a%d" % (i - 1)] * 10) + b"]\n" for i in range(1, 10))
    + b"rules:\n  - id: x.y\n    ? *a9\n    : boom\n",
    b"rules: &r\n  - *r\n",
    b"rules: " + b"[" * 3000 + b"]" * 3000,
    b"rules:\n  - id: inhouse.evil\n    title: t\n    cause: python_exception\n    role: cause\n"
    b"    pattern: 'ValueError: (x|xx)+y'\n    remediation: [fix]\n"
    b"    examples:\n      match: ['ValueError: xxy']\n      no_match: ['ValueError: z']\n",
    b"!!python/object/apply:os.system ['echo pwned']\n",
    b"rules:\n  - id: a.b\n    pattern: '" + b"(" * 5000 + b"'\n",
)


def rule_pack(rng: random.Random) -> bytes:
    if rng.random() < 0.3:
        return rng.choice(_BOMBS)
    data = rng.choice(pack_seeds())
    for _ in range(rng.randint(0, 3)):
        data = rng.choice((bit_flips, truncate, duplicate, huge_numbers, escapes, invalid_utf8, nuls))(data, rng)
    return data


# ---- cases ----


def mutated_case(seed: int, index: int) -> Case:
    """Case `index` of the corpus for `seed`."""
    rng = random.Random(f"{seed}:{index}")
    files = list(rng.choice(seeds()))
    labels = []
    for _ in range(rng.randint(1, 3)):
        k = rng.randrange(len(files))
        mutate = rng.choice(BYTE_MUTATORS)
        name, data = files[k]
        files[k] = (name, mutate(data, rng)[:MAX_CASE])
        labels.append(f"{mutate.__name__}({name})")
    if rng.random() < 0.15:
        k = rng.randrange(len(files))
        kind, packed = compress(files[k][1], rng)
        files[k] = (f"{files[k][0]}.{kind}", packed)
        labels.append(kind)
    if rng.random() < 0.1:
        files.append((f"attempt_0/{rng.randrange(4)}/error.json", error_json(rng)))
        labels.append("error.json")
    dmesg: tuple[tuple[str, bytes], ...] = ()
    if rng.random() < 0.2:
        dmesg = (kernel_log(rng),)
        labels.append(f"kernel:{dmesg[0][0]}")
    pack = None
    if rng.random() < 0.05:
        pack = rule_pack(rng)
        labels.append("pack")
    return Case(tuple(files), dmesg, pack, boot_time=rng.random() < 0.3, label=f"{seed}:{index} " + " ".join(labels))
