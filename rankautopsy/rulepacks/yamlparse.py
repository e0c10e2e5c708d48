"""The YAML parser half of `yamlsafe`: PyYAML's safe loaders with duplicate keys reported and lines
kept, and the node-graph check done before any object is built. Imported only when a pack is parsed."""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Iterator

import yaml

from rankautopsy.rulepacks.yamlsafe import MAX_NODES, Map, Report, Seq


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


def parse_text(text: str, report: Report) -> tuple[object, list[tuple[int, str]]] | None:
    """The document and its duplicate keys, or None with the problem added to the report."""
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
