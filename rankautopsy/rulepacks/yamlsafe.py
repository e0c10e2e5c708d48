"""Safe YAML for rule packs: no object construction, duplicate keys reported, every node's line kept
(so that every problem is `path:line:`).

A pack is untrusted (it can come from a checked-out repository's `pyproject.toml`): it is read only if it
is a regular file of at most `MAX_PACK_BYTES`, and its node graph is checked before any object is built
from it (as pySigma refuses hostile rules before using them): mapping keys must be scalars, and the
document with its aliases expanded must stay within `MAX_NODES` (the billion-laughs bomb, and its worse
form with aliased complex keys, would otherwise cost minutes and gigabytes)."""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Hashable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

MAX_PACK_BYTES = 4 * 1024**2  # the largest built-in pack is ~60 KB
MAX_NODES = 50_000  # YAML nodes with every alias expanded (the largest built-in pack has ~1,600)
MAX_PROBLEM_CHARS = 400  # a problem quotes values from the pack: it stays one readable line

# ---- YAML: safe, duplicate keys reported, every node's line kept ----


class Map(dict[Hashable, object]):
    """A YAML mapping that remembers its lines and the raw text of its scalar values."""

    def __init__(self, line: int, end: int) -> None:
        super().__init__()
        self.line, self.end = line, end
        self.key_lines: dict[Hashable, int] = {}
        self.raw: dict[Hashable, str] = {}


class Seq(list[object]):
    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.item_lines: list[int] = []
        self.raw: list[str | None] = []


class SafeLineLoader(yaml.SafeLoader):
    """PyYAML lets a repeated key silently win; this loader records it as a problem instead."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[tuple[int, str]] = []


# libyaml's parser where PyYAML was built with it (the built-in packs parse ~20x faster); the same safe
# constructors, so the result and every problem's line are the same. A file it refuses is parsed again
# by the pure-Python loader, whose error messages are the ones reported.
_CBase: type[yaml.SafeLoader] | None = getattr(yaml, "CSafeLoader", None)
FastLineLoader: type[SafeLineLoader] = SafeLineLoader
if _CBase is not None:

    class _FastLineLoader(_CBase):  # type: ignore[valid-type,misc]
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.duplicates: list[tuple[int, str]] = []

    FastLineLoader = _FastLineLoader


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _construct_map(loader: SafeLineLoader, node: yaml.MappingNode) -> Map:
    seen: set[str] = set()
    for key_node, _ in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.tag != "tag:yaml.org,2002:merge":
            if key_node.value in seen:
                loader.duplicates.append((_line(key_node), f"duplicate key {key_node.value!r}"))
            seen.add(key_node.value)
    loader.flatten_mapping(node)
    out = Map(_line(node), node.end_mark.line + 1)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        key = key if isinstance(key, Hashable) else str(key)
        out[key] = loader.construct_object(value_node, deep=True)
        out.key_lines[key] = _line(key_node)
        if isinstance(value_node, yaml.ScalarNode):
            out.raw[key] = value_node.value
    return out


def _construct_int(loader: SafeLineLoader, node: yaml.ScalarNode) -> int | str:
    """An integer, or its text when Python will not convert it (more than 4,300 digits): the checks
    that follow then refuse it as a field of the wrong type, with its line, instead of a crash."""
    try:
        return int(yaml.SafeLoader.construct_yaml_int(loader, node))
    except ValueError:
        return str(node.value)


def _construct_seq(loader: SafeLineLoader, node: yaml.SequenceNode) -> Seq:
    out = Seq(_line(node))
    for item in node.value:
        out.append(loader.construct_object(item, deep=True))
        out.item_lines.append(_line(item))
        out.raw.append(item.value if isinstance(item, yaml.ScalarNode) else None)
    return out


_LOADERS: tuple[type[SafeLineLoader], ...] = (SafeLineLoader, FastLineLoader)
for _loader in _LOADERS:
    _loader.add_constructor("tag:yaml.org,2002:map", _construct_map)
    _loader.add_constructor("tag:yaml.org,2002:seq", _construct_seq)
    _loader.add_constructor("tag:yaml.org,2002:int", _construct_int)


@dataclass(slots=True)
class Report:
    """The problems of one file, kept in line order."""

    path: str
    found: list[tuple[int, str]] = field(default_factory=list)

    def add(self, line: int | None, rule_id: str | None, message: str) -> None:
        where = self.path if line is None else f"{self.path}:{line}"
        who = f" {rule_id}:" if rule_id else ""
        text = " ".join(message.splitlines())
        if len(text) > MAX_PROBLEM_CHARS:
            text = text[: MAX_PROBLEM_CHARS - 1] + "…"
        self.found.append((line or 0, f"{where}:{who} {text}"))

    def flush(self, problems: list[str]) -> None:
        problems.extend(text for _, text in sorted(self.found, key=lambda item: item[0]))


def read_pack_text(path: Path) -> str:
    """A pack's text: a regular file (checked on the open file, so that a FIFO or a device swapped in
    cannot block), at most MAX_PACK_BYTES, UTF-8. Raises OSError, ValueError (with the reason)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as stream:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError("not a regular file")
        data = stream.read(MAX_PACK_BYTES + 1)
    if len(data) > MAX_PACK_BYTES:
        raise ValueError(f"larger than {MAX_PACK_BYTES // 1024**2} MiB: not a rule pack")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError("not UTF-8 text") from None


def _children(node: yaml.Node) -> Iterator[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            yield key
            yield value
    elif isinstance(node, yaml.SequenceNode):
        yield from node.value


def unsafe_node(root: yaml.Node) -> tuple[int, str] | None:
    """(line, problem) of the first thing that makes a composed document unsafe to construct: a
    mapping key that is not a scalar, an alias that contains itself, or more than MAX_NODES nodes
    once aliases are expanded. Iterative, each node visited once (aliases share their node)."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in _children(node))
            if sizes[key] > MAX_NODES:
                return _line(node), f"aliases expand to more than {MAX_NODES:,} nodes: not a rule pack"
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            return _line(node), "an alias that contains itself: not a rule pack"
        if isinstance(node, yaml.MappingNode):
            for key_node, _ in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    return _line(key_node), "a mapping key must be a scalar, not a list or a mapping"
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))
    return None


def _load(loader: SafeLineLoader, report: Report) -> tuple[object, list[tuple[int, str]]] | None:
    """Compose, check the node graph, then construct (raises yaml.YAMLError)."""
    node = loader.get_single_node()
    if node is None:
        return None, loader.duplicates
    if (unsafe := unsafe_node(node)) is not None:
        report.add(unsafe[0], None, unsafe[1])
        return None
    return loader.construct_document(node), loader.duplicates


def parse_yaml(path: Path, report: Report) -> tuple[object, list[tuple[int, str]]] | None:
    try:
        text = read_pack_text(path)
    except ValueError as exc:
        report.add(None, None, f"cannot read: {exc}")
        return None
    except OSError as exc:
        report.add(None, None, f"cannot read: {exc.strerror or type(exc).__name__}")
        return None
    with contextlib.suppress(yaml.YAMLError, RecursionError):
        fast = FastLineLoader(text)
        try:
            return _load(fast, report)
        finally:
            fast.dispose()
    try:
        loader = SafeLineLoader(text)  # its reader refuses a control character here, as a YAMLError
    except yaml.YAMLError as exc:
        report.add(None, None, f"invalid YAML: {exc}")
        return None
    try:
        return _load(loader, report)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        report.add(mark.line + 1 if mark else None, None, f"invalid YAML: {exc.problem or exc.context}")
    except yaml.YAMLError as exc:
        report.add(None, None, f"invalid YAML: {exc}")
    except RecursionError:
        report.add(None, None, "invalid YAML: nested too deeply")
    finally:
        loader.dispose()
    return None
