"""Required literals of a prefilter: byte strings one of which every match contains.

The fallback engine looks for them with `bytes.find` (C's memmem, fast) and runs a rule's regex only
on the lines where one occurs, instead of running the regex over the whole chunk. A case-insensitive
rule's literals are lower case, to be looked for in lowered bytes; they leave out the non-ASCII letters
that match ASCII ones (`ſ`, `K`, `İ`), so a chunk containing one of those is scanned in full.
"""

from __future__ import annotations

from rankautopsy.records import record
from rankautopsy.scan.prefilter import CASE_TWINS, Alt, Chars, Lit, Node, Rep, Seq, flatten, superset

MIN_LENGTH = 3  # shorter literals are in too many lines to be worth looking for
MAX_NEEDLES = 16
TWINS = tuple(twin.encode() for twin in CASE_TWINS.values())


@record
class Literals:
    needles: tuple[bytes, ...]
    folded: bool  # look for them in lowered bytes


def required_literals(pattern: str, *, ignorecase: bool = False) -> Literals | None:
    """Literals one of which every match of the rule's prefilter contains, or None."""
    tree = superset(pattern, ignorecase=ignorecase)
    for folded in (False, True):
        found = _of_seq(tree, folded)
        if found is not None and min(map(len, found)) >= MIN_LENGTH:
            return Literals(tuple(sorted(found)), folded)
    return None


def _of_seq(seq: Seq, folded: bool) -> set[bytes] | None:
    """The best literal set of a sequence: its longest literal run, or one of its parts' sets."""
    best: set[bytes] | None = None
    run = bytearray()
    for item in [*flatten(seq), None]:
        byte = _byte(item, folded) if item is not None else None
        if byte is not None:
            run += byte
            continue
        best = _better(best, {bytes(run)} if run else None)
        run = bytearray()
        if item is not None:
            best = _better(best, _of_node(item, folded))
    return best


def _of_node(node: Node, folded: bool) -> set[bytes] | None:
    if isinstance(node, Rep):
        return _of_seq(Seq((node.item,)), folded) if node.lo >= 1 else None
    if isinstance(node, Alt):
        sets = [_of_seq(option, folded) for option in node.options]
        if any(found is None for found in sets):
            return None
        union = {needle for found in sets if found for needle in found}
        return union if len(union) <= MAX_NEEDLES else None
    if isinstance(node, Seq):
        return _of_seq(node, folded)
    return None


def _byte(node: Node, folded: bool) -> bytes | None:
    """The one byte (string) a node stands for, if it is literal (in lowered bytes when `folded`)."""
    if isinstance(node, Lit):
        return node.data
    if isinstance(node, Alt) and folded:  # `(?:[Ss]|ſ)`: the twin is handled by scanning such chunks in full
        first = node.options[0].items
        return _byte(first[0], folded) if len(first) == 1 else None
    if not isinstance(node, Chars) or node.wide:
        return None
    codes = node.codes
    if len(codes) == 1:
        return bytes(codes)
    lower = {bytes([c]).lower() for c in codes}
    return lower.pop() if folded and len(codes) == 2 and len(lower) == 1 else None


def _better(a: set[bytes] | None, b: set[bytes] | None) -> set[bytes] | None:
    """The set whose shortest literal is longer (fewer literals on a tie)."""
    if a is None or b is None:
        return a if b is None else b
    key_a, key_b = (min(map(len, a)), -len(a)), (min(map(len, b)), -len(b))
    return a if key_a >= key_b else b
