"""Hits to events. Multi-line facts (a Python traceback and its final `Type: message` line, a
faulthandler dump, one entry of torchrun's failure table) become one event each."""

from __future__ import annotations

import dataclasses
import itertools
import json
import keyword
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from rankautopsy import recache
from rankautopsy.model import (
    ABOUT_ANOTHER,
    FALLS_BACK,
    OPENS_CUT,
    REFINES,
    RELAYS,
    REPORT_LINES,
    REPORT_TAIL,
    Assembly,
    Cause,
    Effect,
    Event,
    Evidence,
    Location,
    Role,
    StreamKind,
    TimeSpan,
)
from rankautopsy.numbers import read_int
from rankautopsy.records import record
from rankautopsy.scan.matcher import Budget, CompiledRule, Hit, facts_of, match_line
from rankautopsy.scan.selection import (  # read as the scan reads them
    ORIGINAL,
    REPEATS,
    TRACEBACK_TAIL,
    UNREAD_REPEATS,
    alike,
)
from rankautopsy.sources.lines import Stream
from rankautopsy.sources.sanitize import without_surrogates

_WINDOW = 2000  # lines of one channel an assembly may look through
# a source line that lost its indent (`lambda: f(`, `else:`) is no exception: a keyword names no class
_KEYWORD = r"(?!(?:" + "|".join(keyword.kwlist) + r")(?::|$))"
# A class defined in a function prints its qualified name: `make.<locals>.ShardError` (3.9+)
_EXC_LINE = recache.compile(
    r"^" + _KEYWORD + r"(?P<exc_type>[A-Za-z_][\w.]*(?:<locals>\.[A-Za-z_][\w.]*)*)(?::(?: (?P<exc_msg>.*))?)?$"
)
_TB_CONTINUE = (
    "Traceback (most recent call last)",
    "Exception Group Traceback",
    "During handling of the above exception",
    "The above exception was the direct cause",
    "[Previous line repeated",
)
_TB_HEADER = "Traceback (most recent call last)"
# CPython's chain separators: the exception above was handled (or is the cause) when the one below was raised
_CHAINED = ("During handling of the above exception", "The above exception was the direct cause")
_FRAMES = " \t│╰╭"  # what a frame line starts with: indentation, or the box of rich's traceback handler
# torch._utils.ExceptionWrapper.reraise: `Caught {type} {where}.`, then `Original ` and the worker's traceback
_CAUGHT = recache.compile(r"^Caught [A-Za-z_][\w.]* (?P<where>.+?)\.$")
# The rest of a `  File "/long/path.py"` frame that a terminal wrapped (at the path's end): `, line 578, in f`.
_FRAME_TAIL = recache.compile(r"^, line \d+, in ")
_FH_LINE = recache.compile(
    r"^(?:$|\s|Thread 0x|Current thread 0x|Stack \(most recent|Extension modules:|Python runtime state:"
    r"|Current thread's C stack|<no Python frame>|Garbage-collecting)"
)
_FH_FRAME = recache.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+) in (?P<func>.+)$')
# at any indent: a paste may have lost it
_TABLE_RULE = recache.compile(r"^(?P<char>[=-])(?P=char){19,}\s*$")  # the table's border and section lines
_TABLE_FIELD = recache.compile(r"^\s*(?P<key>time|host|rank|exitcode|error_file|traceback|msg)\s*:\s?(?P<value>.*)$")
# torch 1.9-1.10 print the error file's record under `msg:`: its `"message": "Type: text"` is what the rank raised
_MSG_MESSAGE = recache.compile(r'^"message": "(?P<message>(?:[^"\\]|\\.)*)"')
_TABLE_RANK = recache.compile(r"(?P<rank>-?\d+) \(local_rank: (?P<local_rank>-?\d+)\)")
_TABLE_EXIT = recache.compile(r"(?P<exitcode>-?\d+) \(pid: (?P<pid>\d+)\)")
_SIGNAL = recache.compile(r"Signal (?P<num>\d+) \((?P<name>SIG\w+)\)")


@dataclass(slots=True)
class Assembled:
    """What an assembler made of the lines from a hit on: where the event ends, and its facts."""

    end: int  # index of the event's last line
    facts: dict[str, str] = field(default_factory=dict)
    lines: list[int] = field(default_factory=list)  # indices of the evidence lines beyond the first
    classify: list[int] = field(default_factory=list)  # lines whose rules may reclassify the event
    chain: list[int] = field(default_factory=list)  # the chained exceptions before the last, latest first
    chained: list[int] = field(default_factory=list)  # the headers of the tracebacks chained under the first


_Key = tuple[int | None, int | None, int | None]


def channel(stream: Stream, i: int) -> _Key:
    """Whose output line i is: its rank, local rank, and the pid of the process a relay names (Ray's)."""
    return stream.ranks[i], stream.local_ranks[i], stream.pids[i]


def _channel_lines(stream: Stream, start: int, stop: int | None = None) -> Iterator[int]:
    """The lines after `start` of its channel (and blank lines of any), up to `stop` (or the window),
    never past lines the scan left unread: what comes after them belongs to something else."""
    key = channel(stream, start)
    gaps = stream.gaps
    unread = gaps[i] if (i := bisect_right(gaps, start)) < len(gaps) else len(stream)
    for j in range(start + 1, min(len(stream), unread, start + _WINDOW if stop is None else stop)):
        if channel(stream, j) == key or not stream.texts[j].strip():
            yield j


# A launcher's banner rule (`-----` of Open MPI's help text, `=====` of torchrun's table, Composer's titled
# `----------End global rank 1 STDERR----------`): what follows is the launcher's, not the exception's message.
_RULE = recache.compile(r"^\s*(?:[-=*_#]{10,}|([-=*_#])\1{9,}.*\1{10,})\s*$")
# A record of Python's logging in its default format (`ERROR:torch.distributed...:failed ...`), or one
# of Lightning's rank-prefixed messages (`[rank: 2] Child process with PID ... terminated`): the
# launcher's, not the rest of an exception's message.
_LOG_RECORD = recache.compile(r"^(?:(?:CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG)[: ]|\[rank: \d+\] )")
_SPAWN_HEADER = recache.compile(r"^-- Process (?P<rank>\d+) terminated with the following error:")
# Ray Train (v2) relays one rank's error under `[Rank 1 Error Snippet]:` (its first releases: `[Rank 1]`
# alone on the line; several ranks': `[Rank 0,1 ...]`); Composer's launcher prints a crashed rank's captured
# stderr under `----------Begin global rank 1 STDERR----------`.
_RELAY_HEADER = recache.compile(
    _SPAWN_HEADER.pattern
    + r"|^\[Rank (?P<ray>\d+)(?: Error Snippet\]:|\][ \t]*$)|^-+Begin global rank (?P<composer>\d+) STDERR-+$"
)
# sys.unraisablehook's header (`Exception ignored in: <function X.__del__ ...>`, `... in atexit callback`),
# threading.excepthook's (`Exception in thread Thread-3 (_pin_memory_loop):`), logging's failure to emit a
# record (`--- Logging error ---`), asyncio's handler (`Task exception was never retrieved` / `Exception in
# callback ...`, a `future:` / `handle:` line between), atexit's before 3.10 (`Error in atexit._run_exitfuncs:`):
# Python printed the exception and the process went on, so the traceback under it killed nothing.
_WENT_ON = recache.compile(
    r"^(?:Exception (?:(?P<ignored>ignored)|in thread)\b|(?P<handled>--- Logging error ---$|Task exception was "
    r"never retrieved$|Exception in callback |Error in atexit\._run_exitfuncs:$))"
)
_WENT_ON_DETAIL = ("future: <", "handle: <")  # asyncio's line between its header and the traceback
# torch.distributed.checkpoint's CheckpointException, raised on every rank, prints each failed rank's
# traceback under `Traceback (most recent call last): (RANK N)`: rank N's, wherever it is printed.
_RANK_HEADER = recache.compile(r"Traceback \(most recent call last\): \(RANK (?P<rank>\d+)\)\s*$")


# An uncaught ExceptionGroup (3.11+) is printed in a box: `  + Exception Group Traceback ...`, its frames and
# its own `  | ExceptionGroup: msg (N sub-exceptions)` line under `  |`, then each sub-exception's deeper.
_GROUP_HEADER = "  + Exception Group Traceback"
_BOXED = recache.compile(r"^ *[|+]")
_BOXED_EXC = recache.compile(r"^(?P<indent> *)\| (?P<line>[A-Za-z_][\w.]*(?::.*)?)$")


def _exception_group(stream: Stream, start: int, result: Assembled) -> Assembled:
    """The group's own exception line (the event's), and its sub-exceptions' (latest first), which say
    what went wrong when the group's says only that something in it did."""
    group, subs = None, []
    for j in _channel_lines(stream, start):
        if not _BOXED.match(text := stream.texts[j]):
            break
        result.end = j
        if (m := _BOXED_EXC.match(text)) and (exc := _EXC_LINE.match(m["line"])):
            if group is None and m["indent"] == "  ":
                group = j
                _exception_facts(result.facts, exc)
            elif group is not None:
                subs.append(j)
    if group is not None:
        result.lines.append(group)
        result.classify.append(group)
        result.chain = subs[::-1]
    return result


def _went_on_header(stream: Stream, start: int) -> re.Match[str] | None:
    """The header of a handler that printed the traceback at `start` and let the process go on."""
    above = start - 1
    if above > 0 and stream.texts[above].startswith(_WENT_ON_DETAIL):
        above -= 1
    if above < 0 or channel(stream, above) != channel(stream, start):
        return None
    return _WENT_ON.match(stream.texts[above])


def assemble_traceback(
    stream: Stream,
    start: int,
    memo: dict[int, int | None] | None = None,
    own_line: Callable[[int], bool] | None = None,
) -> Assembled:
    """A traceback from its header to its `Type: message` line. `memo` (per stream) holds where the
    headers already passed through ended: a run of headers is read once, not once per header. A
    message never goes on over a line that `own_line` says is an event of its own (a step: the program's next
    line; a process's end, even where the message goes on with it: Ray's `The actor is dead because ...`)."""
    result = Assembled(start)
    if stream.ranks[start] is None:  # torch.multiprocessing.spawn re-prints a child's traceback under a header
        for j in range(start - 1, max(-1, start - 3), -1):
            if m := _RELAY_HEADER.match(stream.texts[j]):
                result.facts["rank"] = m["rank"] or m["ray"] or m["composer"]
                result.facts["spawn_raised"] = "1"  # spawn, Ray and Composer relay only a child that raised or crashed
    if m := _RANK_HEADER.search(stream.texts[start]):
        result.facts["rank" if stream.ranks[start] is None else "relay_of"] = m["rank"]
    if (m := _went_on_header(stream, start)) is not None:
        result.facts["in_thread" if m["ignored"] is None and m["handled"] is None else "ignored"] = "1"
    memo = {} if memo is None else memo
    if stream.texts[start].startswith(_GROUP_HEADER):
        return _exception_group(stream, start, result)
    if _IPYTHON_HEADER.match(stream.texts[start]):
        at = _ipython_exception_line(stream, start)
    elif (m := _EXC_LINE.match(stream.texts[start])) and m["exc_msg"] is not None:
        at = start  # an excerpt that starts at the exception line (`Type: ` for a message begun on a newline)
    else:
        if start not in memo:
            _exception_line(stream, start, memo)
        at = memo.get(start)
    if at is None or (m := _EXC_LINE.match(stream.texts[at])) is None:
        return result
    texts = stream.texts
    _exception_facts(result.facts, m)
    result.end = at
    result.lines.append(at)
    result.classify.append(at)
    result.chain = _chain(stream, start, at)
    result.chained = [
        j for j in range(start + 1, at) if stream.texts[j].startswith(_TB_HEADER) and _after_separator(stream, j)
    ]
    if _wrapped(stream, at, result):
        return result
    bare = m["exc_type"] == texts[at].rstrip()  # CPython prints a bare type only for an empty message
    tail = bisect_right(stream.numbers, stream.numbers[at] + TRACEBACK_TAIL)  # what the scan reads on to, at most
    for k in itertools.islice(_channel_lines(stream, at, min(tail, start + _WINDOW)), 0 if bare else 4):
        text = texts[k]
        if (
            not text.strip()
            or stream.times[k] is not None
            or (own_line is not None and own_line(k))
            or text.startswith(_TB_CONTINUE)
            or _RULE.match(text)
            or _LOG_RECORD.match(text)
        ):
            break
        result.lines.append(k)
        result.classify.append(k)
        result.end = k
    after = [k for k in itertools.islice(_channel_lines(stream, result.end, tail), 3) if texts[k].strip()]
    if after and _SPAWN_HEADER.match(texts[after[0]]):  # the child's report that spawn relays follows
        result.facts["relayed"] = "1"
        result.classify.append(after[0])  # old spawn's plain `Exception:` is read by it
    return result


def _exception_facts(facts: dict[str, str], m: re.Match[str]) -> None:
    facts["exc_type"] = m["exc_type"]
    if m["exc_msg"]:
        facts["exc_msg"] = m["exc_msg"].strip()
    else:
        facts.pop("exc_msg", None)


def _wrapped(stream: Stream, at: int, result: Assembled) -> bool:
    """PyTorch re-raises an exception of a DataLoader worker (a pin-memory thread, a DataParallel replica)
    as `Type: Caught Type in DataLoader worker process 0.` with the worker's whole traceback as the rest of
    its message (`torch._utils.ExceptionWrapper`): the worker's last `Type: message` line says what went
    wrong, and becomes the event's exception (the wrapper's line stays evidence, its `where` a fact). Its
    header is looked for within TRACEBACK_TAIL lines of the exception line, as far as the scan reads on."""
    following = next((k for k in _channel_lines(stream, at) if stream.texts[k].strip()), None)
    if following is None or not stream.texts[following].startswith(ORIGINAL):
        return False
    if stream.numbers[following] - stream.numbers[at] > TRACEBACK_TAIL:
        return False
    original = _last_exception_line(stream, following)
    if original is None or (m := _EXC_LINE.match(stream.texts[original])) is None:
        return False
    if caught := _CAUGHT.match(result.facts.get("exc_msg", "")):
        result.facts["raised"] = caught["where"]
    _exception_facts(result.facts, m)
    result.end = original
    result.lines.insert(0, original)  # the decisive line: the first evidence of an exception
    result.classify.insert(0, original)
    return True


def _last_exception_line(stream: Stream, header: int) -> int | None:
    """The `Type: message` line that ends the traceback at `header`, chained tracebacks included (the
    last exception of a chain is the one raised)."""
    texts, end = stream.texts, None
    for j in _channel_lines(stream, header):
        text = texts[j]
        if not text.strip() or (end is None and (text[0] in _FRAMES or _FRAME_TAIL.match(text))):
            continue
        if text.startswith(_TB_CONTINUE):
            end = None
            continue
        if end is not None or not _EXC_LINE.match(text):
            break
        end = j
    return end


def _telling(cause: Cause, role: Role, by: Hit | None) -> bool:
    """Whether a classification says more than "an exception was raised": a symptom, or another cause."""
    return by is not None and (role is Role.SYMPTOM or (role is Role.CAUSE and cause is not Cause.PYTHON_EXCEPTION))


def _chained_after(stream: Stream, at: int) -> bool:
    """Whether CPython's chain separator follows the exception line at `at` (a blank line between)."""
    following = next((k for k in _channel_lines(stream, at) if stream.texts[k].strip()), None)
    return following is not None and stream.texts[following].startswith(_CHAINED)


def _after_separator(stream: Stream, header: int) -> bool:
    """Whether the traceback header at `header` comes under a chain separator (blank lines between)."""
    j = header - 1
    while j >= 0 and not stream.texts[j].strip():
        j -= 1
    return j >= 0 and stream.texts[j].startswith(_CHAINED)


def _chain(stream: Stream, start: int, at: int) -> list[int]:
    """The exception lines of a chain before its last one (`at`), the latest first."""
    return [
        j
        for j in reversed(range(start + 1, at))
        if stream.texts[j][:1] not in _FRAMES and _EXC_LINE.match(stream.texts[j]) and _chained_after(stream, j)
    ]


# A traceback's frame line, at any indent: a paste may have lost the indent of the source line under it
# (or of every line, frames included), Markdown drops a function name it takes for a tag (`<module>`), and a
# forum's typography sets the path's quotes as `“...”`.
_ANY_FRAME = recache.compile(r'^\s*File (?:"[^"\n]+"|“[^”\n]+”), line [0-9]+, in(?: [^ \t\n]|[ \t]*$)')
_MARKERS = recache.compile(r"^[ \t]*[~^]+[ \t]*$")  # the `^^^^` under a frame's source line (3.11+)


def _is_exception_line(text: str) -> bool:
    """`Type: message`, or a bare type, of a class's name; a lower-case name with a message is one unless the
    message reads as an annotated assignment's (`self.comm: ncclComm_t = ...`), a bare one (`raise`) never."""
    m = _EXC_LINE.match(text)
    if m is None:
        return False
    return m["exc_type"].rsplit(".", 1)[-1][:1].isupper() or (m["exc_msg"] is not None and " = " not in m["exc_msg"])


def _lost_indent(stream: Stream, j: int, after_frame: bool) -> bool:
    """Whether an unindented line is a frame, or the source line under one that lost its indent: after a
    frame, no `Type: message` line itself, and followed by a frame, an indented line or the exception line."""
    text = stream.texts[j]
    if _ANY_FRAME.match(text):
        return True
    if not after_frame or _is_exception_line(text):
        return False
    after = next(
        (t for k in _channel_lines(stream, j) if (t := stream.texts[k]).strip() and not _MARKERS.match(t)), None
    )
    return after is not None and (
        after[0] in _FRAMES or _is_exception_line(after) or _ANY_FRAME.match(after) is not None
    )


def _exception_line(stream: Stream, start: int, memo: dict[int, int | None]) -> None:
    """Where the traceback at `start` ends: its first unindented line that no traceback goes on past,
    if that is a `Type: message` line within the window. Recorded for every header on the way too
    (they end there, each within its own window): a run of headers is read once."""
    texts = stream.texts
    passed, limit, end = [start], start + _WINDOW, None
    after_frame = _ANY_FRAME.match(texts[start]) is not None  # an excerpt that opens on a frame
    for j in _channel_lines(stream, start, len(stream)):
        if j >= limit:
            break
        text = texts[j]
        if not text.strip():
            continue
        if _MARKERS.match(text):
            continue
        if text[0] in _FRAMES or _FRAME_TAIL.match(text) or _lost_indent(stream, j, after_frame):
            after_frame = _ANY_FRAME.match(text) is not None
            continue
        if text.startswith(_TB_CONTINUE):
            passed.append(j)
            limit = j + _WINDOW
            continue
        end = j if _EXC_LINE.match(text) else None
        if end is not None and _chained_after(stream, j):
            continue  # handled, or the cause: the chain goes on to the exception that was raised last
        break
    memo.update((p, end if end is not None and end < p + _WINDOW else None) for p in passed)


# IPython's (Jupyter, Databricks, Colab) traceback: `ValueError        Traceback (most recent call last)`,
# then frames as `<command-1> in <module>` / `File /x.py:12, in f()` / `Cell In[3], line 1` headed lines,
# numbered source lines, `---->` arrows and blank lines, then the `Type: message` line.
_IPYTHON_HEADER = recache.compile(r"^[A-Za-z_][\w.]*? *Traceback \(most recent call last\)$")
_IPYTHON_FRAME = recache.compile(r"^(?:\s|-+>|<|/|~|\.\.?/|[A-Za-z]:\\|File |Cell In ?\[|Input In ?\[|$)")


def _ipython_exception_line(stream: Stream, start: int) -> int | None:
    for j in _channel_lines(stream, start):
        text = stream.texts[j]
        if not _IPYTHON_FRAME.match(text):
            return j if _EXC_LINE.match(text) else None
    return None


def assemble_faulthandler(stream: Stream, start: int) -> Assembled:
    result = Assembled(start)
    current = False
    for j in _channel_lines(stream, start):
        text = stream.texts[j]
        if not _FH_LINE.match(text):
            break
        result.end = j
        if text.startswith("Current thread"):
            current = True
            result.lines.append(j)
        elif current and "where" not in result.facts and (m := _FH_FRAME.match(text)):
            result.facts["where"] = f"{m['func']} ({m['file']}:{m['line']})"
            result.lines.append(j)
    return result


def assemble_table_entry(stream: Stream, start: int) -> Assembled:
    """One entry of torchrun's failure table from its `[N]:` header, or from its first field where an excerpt
    opens inside it (its header, and whether it was the root cause, above the cut: `root_cause: "?"`)."""
    result = Assembled(start)
    key = None
    cut = _TABLE_FIELD.match(stream.texts[start]) is not None
    for j in range(start if cut else start + 1, min(len(stream), start + 60)):
        text = stream.texts[j]
        m = _TABLE_FIELD.match(text)
        if m is not None:
            key, value = m["key"], m["value"].strip()
            if key == "msg":  # torch 1.9-1.10: the error file's JSON record, or a quoted line
                key, value = "traceback", "" if value == "{" else value.strip('"')
                result.facts["table_format"] = "1.9"
            result.facts[f"table_{key}"] = value
            _table_fact(result.facts, key, value)
        elif key == "traceback" and text.startswith("  ") and text.strip():
            if (record := _MSG_MESSAGE.match(text.strip())) is not None:
                result.facts["table_traceback"] = _first_json_line(record["message"])
                key = "record"  # the rest of the record is its call stack: the entry's, not read
            else:
                result.facts["table_traceback"] += "\n" + text.strip()
        elif key == "record" and text.startswith("  ") and text.strip():
            pass
        else:
            break
        result.end = j
        result.lines.append(j)
    under = None if cut else _under_root_cause(stream, start)
    if under is None:
        under = _closed_as_root_cause(stream, result)
    result.facts["root_cause"] = "?" if under is None else "1" if under else "0"
    return result


def _first_json_line(text: str) -> str:
    """The first line of a JSON string's text, its escapes undone."""
    return text.split("\\n", 1)[0].replace('\\"', '"').replace("\\\\", "\\")


def _table_fact(facts: dict[str, str], key: str, value: str) -> None:
    if key == "rank" and (m := _TABLE_RANK.match(value)):
        facts.update(rank=m["rank"], local_rank=m["local_rank"])
    elif key == "exitcode" and (m := _TABLE_EXIT.match(value)):
        facts.update(exitcode=m["exitcode"], pid=m["pid"])
    elif key == "host":
        facts["host"] = value
    elif key == "traceback" and (m := _SIGNAL.search(value)):
        facts["signal"] = m["name"]


def _under_root_cause(stream: Stream, start: int) -> bool | None:
    """Whether the section header above the entry is the root cause's; None where no header is in the lines."""
    for j in range(start - 1, max(-1, start - 400), -1):
        text = stream.texts[j]
        if text.startswith("Root Cause"):
            return True
        if text.startswith(("Failures:", "Other Failures:")):  # torch 1.9-1.10 put the others after the root cause
            return False
    return None


def _closed_as_root_cause(stream: Stream, entry: Assembled) -> bool | None:
    """Whether the line that closes the entry makes it the root cause: torch 1.11+ prints the root cause last,
    under the other failures, and closes the table with `====`, the other failures' section with `----`;
    torch 1.9-1.10 (its entries' `msg:` field) the other way round. None where no such line follows."""
    after = entry.end + 1
    if after >= len(stream) or not (m := _TABLE_RULE.match(stream.texts[after])):
        return None
    old = entry.facts.get("table_format") == "1.9"
    if not old and "table_host" not in entry.facts and "table_traceback" not in entry.facts:
        return None  # which torch printed it is not in the lines
    return (m["char"] == "=") != old


_CONTINUE_LOOK = 3  # lines after the first that may hold the rest (a blank line between is common)


def _continuation(stream: Stream, start: int) -> Iterator[int]:
    """The lines that may continue the one at `start`: its channel's. A rank read from the line's own
    words (Hydra's `RANK 6 PID ...`) is not the channel of the line under it, which names none."""
    if stream.rank_from[start] != "content":
        return _channel_lines(stream, start)
    keys = (channel(stream, start), (None, stream.local_ranks[start], stream.pids[start]))
    stop = min(len(stream), start + _WINDOW)
    return (j for j in range(start + 1, stop) if channel(stream, j) in keys or not stream.texts[j].strip())


def assemble_continued(stream: Stream, start: int, compiled: CompiledRule, budget: Budget | None = None) -> Assembled:
    """Open MPI 5's `exited on` / `signal 9 (Killed).`, Hydra's `PID ... RUNNING AT` / `EXIT CODE:`: the
    rule's own pattern, re-run on the line joined to the next non-blank line of its channel, fills the
    facts that the second line carries."""
    result = Assembled(start)
    following = [j for j in itertools.islice(_continuation(stream, start), _CONTINUE_LOOK) if stream.texts[j].strip()]
    if not following:
        return result
    j = following[0]
    budget = budget or Budget()
    alone = budget.search(compiled, stream.texts[start])
    joined = budget.search(compiled, stream.texts[start] + " " + stream.texts[j])
    if alone is None or joined is None:
        return result
    more = {k: v for k, v in facts_of(joined).items() if k not in facts_of(alone)}
    if more:
        result.facts.update(more)
        result.end = j
        result.lines.append(j)
    return result


_WHAT = recache.compile(r"^\s*what\(\):\s+(?P<what>\S.*)$")


def assemble_what(stream: Stream, start: int) -> Assembled:
    """libstdc++'s `terminate called after throwing an instance of 'c10::Error'` and, on one of the next
    lines of its channel, `  what():  CUDA error: ...`: the message says what the abort was."""
    result = Assembled(start)
    for j in itertools.islice(_channel_lines(stream, start), 3):
        if m := _WHAT.match(stream.texts[j]):
            result.facts["what"] = m["what"].strip()
            result.lines.append(j)
            result.classify.append(j)
            result.end = j
            break
    return result


_ASSEMBLERS = {
    Assembly.FAULTHANDLER: assemble_faulthandler,
    Assembly.TORCHRUN_TABLE: assemble_table_entry,
    Assembly.WHAT: assemble_what,
}


def build_events(
    stream: Stream, hits: Sequence[Hit], rules: Sequence[CompiledRule], budget: Budget | None = None
) -> list[Event]:
    """Events of one stream, in line order; single-line hits inside an assembled event are absorbed."""
    budget = budget or Budget()  # a user rule's time on this stream, assembly and classification included
    events: list[Event] = []
    absorbed: set[int] = set()
    known = _Known(Stamps.of(stream), stream, rules)
    for hit in sorted(hits, key=lambda h: (h.rule.rule.assemble is None, h.index)):
        if hit.index in absorbed and (hit.rule.rule.assemble is None or hit.index in known.chained):
            continue
        events.append(_event(stream, hit, rules, absorbed, budget, known))
    events.sort(key=lambda e: e.where.line)
    return _thinned(_fallen_back(_refined(_untold_tails(_one_per_line(events)))))


def _refined(events: list[Event]) -> list[Event]:
    """A line that names what an error report's head was of (`REFINES`: the network layer at the bottom of
    MPICH's error stack) gives its cause to the nearest cause of the same process in the `REPORT_LINES` lines
    before it (an untagged stack line, to the nearest of any rank: the head that tagged the report), whose line,
    rank and effects it keeps; the event is then this line's rule's, which says what the cause was and what to do.
    A head on the line itself comes first (LAMMPS's `ERROR on proc N: ...` around the library's own message).
    With no such head it stands alone."""
    out: list[Event | None] = list(events)
    for k, told in enumerate(events):
        if told.facts.get(REFINES) != "1":
            continue
        end = k + 1  # events are in line order: those after it on its own line end where the line changes
        while end < len(events) and events[end].where.line == told.where.line:
            end += 1
        for j in (*range(k + 1, end), *range(k - 1, -1, -1)):
            head = out[j]
            if head is None:
                continue
            if told.where.line - head.where.line > REPORT_LINES:
                break
            ours = told.rank is None or _same_process(head, told)
            if head.role is Role.CAUSE and REFINES not in head.facts and ours:
                own = {name: value for name, value in told.facts.items() if name != REFINES}
                facts = own | dict(head.facts) | {"head_rule": head.rule}
                own_line = told.where == head.where  # LAMMPS's error around the library's message
                lines = head.lines if own_line else (*head.lines, Evidence(told.where, told.text))
                refined = dataclasses.replace(head, rule=told.rule, cause=told.cause, facts=facts, lines=lines)
                out[j], out[k] = refined, None
                break
    return [e for e in out if e is not None]


def _fallen_back(events: list[Event]) -> list[Event]:
    """Causes a process went on without (`FALLS_BACK`: the plugin whose set-up failed, NCCL using sockets
    instead): in the `REPORT_LINES` lines before the line that says so, of the same process, they are context."""
    out = list(events)
    for k, fell in enumerate(events):
        if FALLS_BACK not in fell.facts:
            continue
        for j in range(k - 1, -1, -1):
            e = out[j]
            if fell.where.line - e.where.line > REPORT_LINES:
                break
            if e.role is Role.CAUSE and e.cause.value == fell.facts[FALLS_BACK] and _same_process(e, fell):
                out[j] = dataclasses.replace(
                    e, cause=Cause.CONTEXT, role=Role.CONTEXT, facts={**e.facts, "fell_back": "1"}
                )
    return out


def _same_process(a: Event, b: Event) -> bool:
    if a.pid is not None and b.pid is not None:
        return a.pid == b.pid
    return a.rank == b.rank


def _untold_tails(events: list[Event]) -> list[Event]:
    """A report's tail line (`REPORT_TAIL`) counts only where its head was cut away: not after a cause or an
    exception of its channel (Hydra's hint under an ActorDiedError), nor after a symptom of its kind (the C++
    stack under a `Watchdog caught` line), nor after another tail of the same report, in the `REPORT_LINES`
    lines before it; a tail tied to no rank, not after one of any rank (c10's message goes on, unprefixed,
    under the `[rank3]:` line that began it)."""
    out: list[Event] = []
    last: dict[tuple[int | None, str], int] = {}  # (rank, kind) -> the last line of its latest such event
    latest: dict[str, int] = {}  # kind -> the same, of any rank
    for e in events:
        kind = _report_kind(e)
        if kind is None:
            out.append(e)
            continue
        before = latest.get(kind) if e.rank is None else last.get((e.rank, kind))
        told = before is not None and e.where.line - before <= REPORT_LINES
        last[e.rank, kind] = max([e.where.line, *(ev.where.line for ev in e.lines)])
        latest[kind] = max(latest.get(kind, 0), last[e.rank, kind])
        if not (told and e.role in (Role.CAUSE, Role.SYMPTOM) and e.facts.get(REPORT_TAIL) == "1"):
            out.append(e)
    return out


def _report_kind(e: Event) -> str | None:
    """What a report's head and tail share: a cause or an exception, or a symptom of one kind."""
    if e.role is Role.CAUSE or "exc_type" in e.facts:
        return "cause"
    return f"symptom:{e.cause}" if e.role is Role.SYMPTOM else None


def _one_per_line(events: list[Event]) -> list[Event]:
    """Two rules that read one line alike (NCCL's `Cuda failure 'out of memory'` is a CUDA OOM to the
    nccl and the pytorch packs): one event, the first rule's, with the facts and effects of both."""
    out: list[Event] = []
    where: dict[tuple[object, ...], int] = {}
    for e in events:
        key = (e.where.line, e.cause, e.role, e.rank)
        if e.role not in (Role.CAUSE, Role.SYMPTOM) or (i := where.get(key)) is None:
            where.setdefault(key, len(out))
            out.append(e)
            continue
        first = out[i]
        out[i] = dataclasses.replace(first, facts={**e.facts, **first.facts}, effects=first.effects | e.effects)
    return out


@record(frozen=False)
class _Known:
    """What building one stream's events has learnt: where tracebacks end, its timestamped lines, and
    the classification of each final text seen (reused: events repeat)."""

    stamps: Stamps
    stream: Stream
    rules: Sequence[CompiledRule]  # a line a progress or exit rule of them matches is no exception's message
    ends: dict[int, int | None] = field(default_factory=dict)
    chained: set[int] = field(default_factory=set)  # headers of tracebacks chained under an earlier one
    classified: dict[tuple[str, str, Cause, Role], tuple[Cause, Role, Hit | None]] = field(default_factory=dict)

    def is_own_line(self, i: int) -> bool:
        hits = match_line(self.stream.texts[i], self.rules, self.stream.kind)  # the list whose needles are kept
        return any(h.rule.rule.role is Role.PROGRESS or Effect.EXIT in h.rule.rule.effects for h in hits)


def _thinned(events: list[Event]) -> list[Event]:
    """Of events alike in all but their line and time (a caught traceback logged every few hundred
    lines, the numbers in its message aside; 20,000 cut-off headers), the first REPEATS and the latest;
    the first counts them all, with the repeats the scan counted without reading them (UNREAD_REPEATS)."""
    groups: dict[tuple[object, ...], list[int]] = {}
    seen: dict[int, int] = {}  # first of a group -> how many
    keep = [True] * len(events)
    out = list(events)
    for i, e in enumerate(events):
        if e.role is Role.PROGRESS:
            continue
        unread = read_int(e.facts.get(UNREAD_REPEATS), max_len=15) or 0
        if UNREAD_REPEATS in e.facts:
            out[i] = dataclasses.replace(e, facts={k: v for k, v in e.facts.items() if k != UNREAD_REPEATS})
        facts = tuple(sorted((k, alike(v) if k == "exc_msg" else v) for k, v in out[i].facts.items() if k != "repeats"))
        group = groups.setdefault((e.rule, e.cause, e.role, e.rank, e.host, e.pid, e.effects, facts), [])
        if len(group) > REPEATS:
            keep[group.pop()] = False
        group.append(i)
        seen[group[0]] = seen.get(group[0], 0) + 1 + unread
    for first, count in seen.items():
        if count > REPEATS + 1:  # the scan may have counted more already
            counted = max(count, read_int(out[first].facts.get("repeats"), max_len=15) or 0)
            out[first] = dataclasses.replace(out[first], facts={**out[first].facts, "repeats": str(counted)})
    return [e for e, kept in zip(out, keep, strict=True) if kept]


# Facts that the timeline reads as numbers; a user pattern that captures something else under one of
# these names (or a number of more than 15 digits) keeps it as `<name>_raw` instead of breaking the diagnosis.
_NUMERIC = frozenset(
    {"rank", "peer_rank", "pg_rank", "local_rank", "pid", "step", "total_steps", "seq", "last_enqueued",
     "last_completed", "exitcode", "comm_rank", "nranks", "gpu", "xid", "pg", "culprit", "culprit_local_rank",
     "world_size"}
)  # fmt: skip
_INTEGER = recache.compile(r"^-?[0-9]{1,15}$")  # longer is no rank, pid or step (and int() would refuse it)


def _stated(by: Hit) -> dict[str, str]:
    """A hit's facts: its rule's stated ones under those its match captured."""
    return _checked({**dict(by.rule.rule.facts), **by.facts})


def _checked(facts: dict[str, str]) -> dict[str, str]:
    return {(k if k not in _NUMERIC or _INTEGER.match(v) else f"{k}_raw"): v for k, v in facts.items()}


def _event(
    stream: Stream,
    hit: Hit,
    rules: Sequence[CompiledRule],
    absorbed: set[int],
    budget: Budget,
    known: _Known,
) -> Event:
    rule = hit.rule.rule
    facts = _stated(hit)
    if rule.at_start:  # read from the input's opening line, cut inside what it reads: the lines before it are missing
        facts[OPENS_CUT] = "1"
    cause, role, extra, effects = rule.cause, rule.role, [], rule.effects
    if rule.assemble is Assembly.CONTINUED:
        assembled = assemble_continued(stream, hit.index, hit.rule, budget)
        facts.update(_checked(assembled.facts))
        extra = assembled.lines
        absorbed.update(assembled.lines)
    elif rule.assemble is Assembly.RECORD and "exc_type" in facts:
        facts["exc_msg"] = _unescaped(facts.get("exc_msg", ""))
        text = f"{facts['exc_type']}: {facts['exc_msg']}" if facts["exc_msg"] else facts["exc_type"]
        cause, role, by = classify(text, stream.kind, rules, rule.id, cause, role)
        if by is not None:
            facts = {**_stated(by), **facts, "classified_by": by.rule.rule.id}
            effects = effects | by.rule.rule.effects
    elif rule.assemble is not None and rule.assemble is not Assembly.RECORD:
        assembled = (
            assemble_traceback(stream, hit.index, known.ends, known.is_own_line)
            if rule.assemble is Assembly.TRACEBACK
            else _ASSEMBLERS[rule.assemble](stream, hit.index)
        )
        facts.update(_checked(assembled.facts))  # a table's pid of 10,000 digits is no pid
        extra = assembled.lines
        absorbed.update(assembled.lines)
        absorbed.add(hit.index)
        cause, role, by = _classify(stream, assembled.classify, rules, rule.id, cause, role, budget, known)
        known.chained.update(assembled.chained)
        absorbed.update(assembled.chained)
        for j in assembled.chain if not _telling(cause, role, by) else ():  # a plain one raised over a telling one
            if _telling(*(found := _classify(stream, [j], rules, rule.id, cause, role, budget, known))):
                cause, role, by = found
                break
        cut = rule.assemble is Assembly.TRACEBACK and "exc_type" not in assembled.facts and by is None
        if cut and "exc_type" in facts:  # its header named the type (Ray's relay): that is its last line's
            cause, role, by = classify(facts["exc_type"], stream.kind, rules, rule.id, cause, role, budget)
        elif cut and "spawn_raised" not in assembled.facts:
            # PyTorch's excepthook tagged it, or its header says the process died of it: it was not caught
            if facts.get("fatal") == "1" or stream.rank_from[hit.index] == "excepthook":
                facts["type_cut"] = "1"  # an uncaught exception that ended its process, of a type not in the lines
            else:
                cause, role = Cause.CONTEXT, Role.CONTEXT  # cut off before its `Type: message`: says nothing of why
                facts["cut_off"] = "1"  # but something raised: the verdict counts it as a sign of failure
        if by is not None:  # the classifying line's facts and effects are the event's too
            facts = {**_stated(by), **facts, "classified_by": by.rule.rule.id}
            effects = effects | by.rule.rule.effects
        if facts.get(RELAYS) == "1" and "relayed" not in facts:
            facts["cut_off"] = "relay"  # the child's report it relays is cut off: one raised, which and why unsaid
        if "ignored" in assembled.facts or ("in_thread" in assembled.facts and role is not Role.SYMPTOM):
            cause, role, effects = Cause.CONTEXT, Role.CONTEXT, rule.effects  # a thread's wait that ran out stays one
        if assembled.facts.get("relay_of", str(stream.ranks[hit.index])) != str(stream.ranks[hit.index]):
            cause, role, effects = Cause.CONTEXT, Role.CONTEXT, rule.effects  # another rank's, told again here
        if "table_traceback" in facts:
            _recorded_exception(facts, stream.kind, rules, budget)
    time, open_ended = line_time(stream, hit.index, known.stamps)
    if facts.get("spawn_raised") == "1" and stream.times[hit.index] is not None:
        time, open_ended = None, False  # its stamp is the parent's, relaying it after the child died (torch's logger)
    if open_ended:
        facts["time_open"] = "1"  # nothing later in this channel bounds it: the timeline closes it
    elif time is not None and stream.times[hit.index] is None:
        facts["time_inferred"] = "1"  # its line has no stamp: the interval its neighbours leave
    rank, rank_from = stream.ranks[hit.index], stream.rank_from[hit.index]
    if "rank" in facts and rank is None and Effect.EXIT not in effects:
        rank, rank_from = int(facts["rank"]), "launcher"
    elif facts.get(ABOUT_ANOTHER) == "1":
        rank = None  # its printer's label names the process that told it, not the one it is about
    elif rank is None and (local := stream.local_ranks[hit.index]) is not None:
        facts["emitter_local_rank"] = str(local)
    elif rank is None and "local_rank" in facts and not effects & {Effect.EXIT, Effect.IDENTITY}:
        facts["emitter_local_rank"] = facts["local_rank"]  # the line's own label of its process (OLMo's `rank=`)
    if (emitter := stream.pids[hit.index]) is not None and "pid" not in facts and ABOUT_ANOTHER not in facts:
        facts["emitter_pid"] = str(emitter)  # the process that printed it (its prefix says), not its subject
    return Event(
        rule=rule.id,
        cause=cause,
        role=role,
        where=Location(stream.source.display, stream.numbers[hit.index]),
        text=stream.texts[hit.index],
        rank=rank,
        host=stream.hosts[hit.index] or facts.get("host"),
        pid=read_int(facts.get("pid"), max_len=15, signed=False),
        time=time,
        facts=facts,
        lines=tuple(Evidence(Location(stream.source.display, stream.numbers[j]), stream.texts[j]) for j in extra),
        rank_from=rank_from if rank is not None else stream.rank_from[hit.index],
        effects=effects,
    )


def _unescaped(text: str) -> str:
    """A death record's message is a JSON string body; its escapes read back (a forged one stays as is)."""
    try:
        value = json.loads(f'"{text}"')
    except ValueError:
        return text
    return without_surrogates(value) if isinstance(value, str) else text


def _recorded_exception(facts: dict[str, str], kind: StreamKind, rules: Sequence[CompiledRule], budget: Budget) -> None:
    """torchrun's table repeats the exception a rank recorded: what it was, and whether it was the
    rank's own failure or a symptom of another's (a peer loss, a timeout)."""
    lines = [line.strip() for line in facts["table_traceback"].splitlines() if line.strip()]
    if not lines or lines[0].startswith(("Signal ", "To enable traceback", "<N/A>")):
        return
    m = _EXC_LINE.match(lines[-1])
    if m is None:
        # @record wrote it: an exception ended the rank, and the excerpt cut the field before its type
        if lines[0].startswith("Traceback (most recent call last)"):
            facts["exc_cause"], facts["exc_role"] = Cause.PYTHON_EXCEPTION.value, Role.CAUSE.value
            facts["type_cut"] = "1"
        return
    facts["exc_type"] = m["exc_type"]
    if m["exc_msg"]:
        facts["exc_msg"] = m["exc_msg"].strip()
    cause, role, _ = classify(lines[-1], kind, rules, "", Cause.PYTHON_EXCEPTION, Role.CAUSE, budget)
    facts["exc_cause"], facts["exc_role"] = cause.value, role.value


def _classify(
    stream: Stream,
    lines: list[int],
    rules: Sequence[CompiledRule],
    own: str,
    cause: Cause,
    role: Role,
    budget: Budget,
    known: _Known,
) -> tuple[Cause, Role, Hit | None]:
    key = ("\n".join(stream.texts[j] for j in lines), own, cause, role)
    if key not in known.classified:  # a caught traceback logged every few hundred lines: classified once
        known.classified[key] = classify(key[0], stream.kind, rules, own, cause, role, budget)
    return known.classified[key]


def classify(
    text: str,
    kind: StreamKind,
    rules: Sequence[CompiledRule],
    own: str,
    cause: Cause,
    role: Role,
    budget: Budget | None = None,
) -> tuple[Cause, Role, Hit | None]:
    """An assembled event takes the cause of the most telling rule that matches its final lines:
    a traceback that ends in a gloo timeout is a symptom, one that ends in a CUDA OOM is a cuda_oom;
    of two symptoms, one that names whom it waited for."""
    if not text:
        return cause, role, None
    hits = [h for h in match_line(text, rules, kind, budget) if h.rule.rule.id != own and h.rule.rule.assemble is None]
    hits.sort(key=lambda h: Effect.NAMES_CULPRIT not in h.rule.rule.effects)  # stable: else in the packs' order
    for wanted in (Role.SYMPTOM, Role.CAUSE, Role.CONTEXT):
        for h in hits:
            if h.rule.rule.role is wanted:
                return h.rule.rule.cause, wanted, h
    return cause, role, None


@record
class Stamps:
    """The indices of a stream's timestamped lines, all of them and by channel (built once per stream)."""

    every: list[int]
    by_channel: dict[_Key, list[int]]

    @classmethod
    def of(cls, stream: Stream) -> Stamps:
        every = [j for j, t in enumerate(stream.times) if t is not None]
        by_channel: dict[_Key, list[int]] = {}
        for j in every:
            by_channel.setdefault(channel(stream, j), []).append(j)
        return cls(every, by_channel)


def line_time(stream: Stream, i: int, stamps: Stamps | None = None) -> tuple[TimeSpan | None, bool]:
    """A line's own time, else the interval between its channel's timestamped neighbours; the flag
    says that no later line bounds it (the interval then only holds its earliest possible time)."""
    if (own := stream.times[i]) is not None:
        return own, False
    stamps = stamps or Stamps.of(stream)
    mine = stamps.by_channel.get(channel(stream, i), [])
    before = _neighbour(stream, mine, i, -1) or _neighbour(stream, stamps.every, i, -1)
    after = _neighbour(stream, mine, i, 1) or _neighbour(stream, stamps.every, i, 1)
    if before is None:
        return (None, False) if after is None else (TimeSpan(after.earliest, after.earliest), False)
    if after is None or after.earliest < before.earliest:
        return TimeSpan(before.earliest, before.latest), True
    return TimeSpan(before.earliest, after.latest), False


def _neighbour(stream: Stream, stamped: list[int], i: int, step: int) -> TimeSpan | None:
    """The nearest of the timestamped lines `stamped` before (step -1) or after line `i`, within the window."""
    k = bisect_right(stamped, i) if step > 0 else bisect_left(stamped, i) - 1
    if 0 <= k < len(stamped) and abs(stamped[k] - i) <= _WINDOW * 5:
        return stream.times[stamped[k]]
    return None
