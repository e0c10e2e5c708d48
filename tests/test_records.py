"""`record` behaves as the stdlib dataclass it stands in for: construction, equality, hashing, repr,
immutability, `replace` and pickling."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import FrozenInstanceError, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rankautopsy.records import record


@record
class Point:
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    note: str = field(default="", compare=False, repr=False)


@record(kw_only=True)
class Named:
    name: str
    size: int = 1


@record(frozen=False)
class Counter:
    seen: int = 0


@record
class Derived:
    base: int
    double: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "double", self.base * 2)


@dataclasses.dataclass(frozen=True, slots=True)
class StdPoint:
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)
    note: str = field(default="", compare=False, repr=False)


def test_arguments_bind_as_a_dataclass_binds_them() -> None:
    assert Point(1, 2) == Point(x=1, y=2) == Point(1, y=2)
    assert Point(1).y == 0 and Point(1).tags == []
    assert Point(1).tags is not Point(1).tags
    assert Derived(3).double == 6
    with pytest.raises(TypeError, match="missing required argument: 'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Point(1, z=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        Point(1, x=2)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional arguments"):
        Point(1, 2, [], "", 5)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Named("a")  # type: ignore[misc]
    with pytest.raises(TypeError, match="unexpected keyword argument 'double'"):
        Derived(1, double=2)  # type: ignore[call-arg]


def test_frozen_unless_told() -> None:
    point = Point(1)
    with pytest.raises(FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        del point.x  # type: ignore[misc]
    counter = Counter()
    counter.seen += 1
    assert counter.seen == 1
    with pytest.raises(TypeError):
        hash(counter)
    with pytest.raises(AttributeError):
        point.other = 1  # type: ignore[attr-defined]


def test_equality_ignores_what_is_not_compared_and_other_types() -> None:
    assert Point(1, note="a") == Point(1, note="b")
    assert hash(Named(name="a")) == hash(Named(name="a")) == hash(("a", 1))
    assert Point(1) != Point(2)
    assert Point(1) != StdPoint(1)
    assert Named(name="a") != Point(1)


def test_the_dataclass_functions_work_on_it() -> None:
    point = Point(1, 2, ["t"])
    assert [f.name for f in dataclasses.fields(point)] == ["x", "y", "tags", "note"]
    assert dataclasses.replace(point, y=5) == Point(1, 5, ["t"])
    assert dataclasses.asdict(point) == {"x": 1, "y": 2, "tags": ["t"], "note": ""}
    assert dataclasses.replace(Derived(2), base=4).double == 8
    match point:
        case Point(1, 2):
            pass
        case _:
            pytest.fail("positional pattern did not match")


def test_pickle_and_copy_round_trip() -> None:
    for value in (Point(1, 2, ["a"], "n"), Named(name="x", size=3), Derived(5)):
        assert pickle.loads(pickle.dumps(value)) == value
        assert copy.deepcopy(value) == value
        assert copy.copy(value) == value
    restored = pickle.loads(pickle.dumps(Counter(4)))
    assert restored.seen == 4


values = st.one_of(st.integers(), st.text(max_size=5), st.none(), st.tuples(st.integers()))


@given(x=values, y=values, tags=st.lists(st.text(max_size=3), max_size=3), note=st.text(max_size=3))
def test_repr_eq_and_hash_agree_with_the_stdlib(x: object, y: object, tags: list[str], note: str) -> None:
    ours, theirs = Point(x, y, tags, note), StdPoint(x, y, tags, note)  # type: ignore[arg-type]
    assert repr(ours) == repr(theirs).replace("StdPoint", "Point")
    assert (ours == Point(x, y, list(tags))) == (theirs == StdPoint(x, y, list(tags)))  # type: ignore[arg-type]
    assert _hash_or_error(ours) == _hash_or_error(theirs)


def _hash_or_error(value: object) -> int | str:
    try:
        return hash(value)
    except TypeError as error:
        return str(error)


def test_a_record_without_a_docstring_is_documented_by_its_fields_as_a_dataclass_is() -> None:
    @record
    class Plain:
        a: int
        b: str = "x"

    @record
    class Told:
        """Said."""

        a: int

    assert Plain.__doc__ == "Plain(a, b)"
    assert Told.__doc__ == "Said."


@given(
    values=st.tuples(st.integers(), st.integers(), st.lists(st.text(max_size=2), max_size=2), st.text(max_size=3)),
    positional=st.integers(0, 4),
    named=st.sets(st.sampled_from(["x", "y", "tags", "note"])),
)
def test_any_mix_of_positional_and_named_arguments_binds_as_in_the_stdlib(
    values: tuple[int, int, list[str], str], positional: int, named: set[str]
) -> None:
    """Every field given in order or by name (the fast ways), or some of them: the same fields, or the
    same kind of error, as the stdlib dataclass."""
    args = values[:positional]
    kwargs = {name: value for name, value in zip(("x", "y", "tags", "note"), values, strict=True) if name in named}
    try:
        expected = dataclasses.astuple(StdPoint(*args, **kwargs))  # type: ignore[arg-type]
    except TypeError:
        with pytest.raises(TypeError):
            Point(*args, **kwargs)  # type: ignore[arg-type]
        return
    made = Point(*args, **kwargs)  # type: ignore[arg-type]
    assert (made.x, made.y, made.tags, made.note) == expected


def test_keyword_only_fields_take_no_positional_arguments_even_all_of_them() -> None:
    assert Named(name="a", size=2) == Named(size=2, name="a") != Named(name="a")
    with pytest.raises(TypeError):
        Named("a", 2)  # type: ignore[misc]
    with pytest.raises(TypeError, match="unexpected keyword argument 'double'"):
        Derived(base=1, double=2)  # type: ignore[call-arg]


def test_a_fast_pickled_dataclass_round_trips_every_field_as_a_tuple() -> None:
    from datetime import UTC, datetime

    from rankautopsy.model import Cause, Event, Evidence, Location, Role, TimeSpan
    from rankautopsy.sources.lines import Line

    at = datetime(2026, 12, 5, 9, 0, tzinfo=UTC)
    span = TimeSpan(at, at)
    where = Location("rank1.log", 7)
    event = Event(
        rule="py-exc", cause=Cause.PYTHON_EXCEPTION, role=Role.CAUSE, where=where, text="ValueError: x",
        rank=1, time=span, facts={"type": "ValueError"}, lines=(Evidence(where, "Traceback"),), rank_from="path",
    )  # fmt: skip
    line = Line(7, "ValueError: x", rank=1, local_rank=1, rank_from="path", host="h", time=span, monotonic=2.5, pid=9)
    for value in (span, where, event, line):
        assert isinstance(value.__getstate__(), tuple)  # type: ignore[attr-defined]
        restored = pickle.loads(pickle.dumps(value, pickle.HIGHEST_PROTOCOL))
        assert restored == value
        assert [getattr(restored, f.name) for f in dataclasses.fields(value)] == [
            getattr(value, f.name) for f in dataclasses.fields(value)
        ]
