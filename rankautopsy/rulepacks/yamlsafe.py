"""Safe YAML for rule packs: no object construction, duplicate keys reported, every node's line kept
(so that every problem is `path:line:`)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

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


@dataclass(slots=True)
class Report:
    """The problems of one file, kept in line order."""

    path: str
    found: list[tuple[int, str]] = field(default_factory=list)

    def add(self, line: int | None, rule_id: str | None, message: str) -> None:
        where = self.path if line is None else f"{self.path}:{line}"
        who = f" {rule_id}:" if rule_id else ""
        self.found.append((line or 0, f"{where}:{who} {' '.join(message.splitlines())}"))

    def flush(self, problems: list[str]) -> None:
        problems.extend(text for _, text in sorted(self.found, key=lambda item: item[0]))


def parse_yaml(path: Path, report: Report) -> tuple[object, list[tuple[int, str]]] | None:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        report.add(None, None, "cannot read: not UTF-8 text")
        return None
    except OSError as exc:
        report.add(None, None, f"cannot read: {exc.strerror or exc}")
        return None
    fast = FastLineLoader(text)
    try:
        return fast.get_single_data(), fast.duplicates
    except yaml.YAMLError:
        pass
    finally:
        fast.dispose()
    loader = SafeLineLoader(text)
    try:
        return loader.get_single_data(), loader.duplicates
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        report.add(mark.line + 1 if mark else None, None, f"invalid YAML: {exc.problem or exc.context}")
    except yaml.YAMLError as exc:
        report.add(None, None, f"invalid YAML: {exc}")
    finally:
        loader.dispose()
    return None
