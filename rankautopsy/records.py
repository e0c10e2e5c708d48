"""`record`: a dataclass whose definition costs no compile, for types made a few times per run.

A stdlib dataclass compiles generated source for each method it adds: about 4 M instructions per
frozen class, which for the sixty-odd types of the pipeline is nearly a third of a small diagnosis. A
record is a real dataclass (`fields`, `replace`, `asdict` and pattern matching work) whose
methods are shared, generic functions. Its `__init__` binds arguments in Python, a few times
slower per call than a generated one, so types made per line or per hit stay `@dataclass`.
Imports nothing of the package.
"""

from __future__ import annotations

import dataclasses
import inspect  # imported by dataclasses anyway
from collections.abc import Callable
from operator import attrgetter
from typing import Any, TypeVar, dataclass_transform, overload

_T = TypeVar("_T")
_MISSING: Any = dataclasses.MISSING
_dataclass = dataclasses.dataclass
_set = object.__setattr__


@overload
def record(cls: type[_T], /) -> type[_T]: ...
@overload
def record(*, frozen: bool = True, eq: bool = True, kw_only: bool = False) -> Callable[[type[_T]], type[_T]]: ...


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def record(
    cls: type[_T] | None = None, /, *, frozen: bool = True, eq: bool = True, kw_only: bool = False
) -> type[_T] | Callable[[type[_T]], type[_T]]:
    """A slotted dataclass, frozen unless told, with shared methods; `@record` or `@record(...)`."""

    def make(cls: type[_T]) -> type[_T]:
        if cls.__doc__ is None:  # else dataclass writes one from inspect.signature: most of its cost
            cls.__doc__ = f"{cls.__name__}({', '.join(inspect.get_annotations(cls))})"
        made = _dataclass(cls, init=False, repr=False, eq=False, frozen=False, slots=True, kw_only=kw_only)
        _install(made, frozen, eq)
        return made

    return make if cls is None else make(cls)


def _install(cls: type, frozen: bool, eq: bool) -> None:
    fields = dataclasses.fields(cls)
    names = tuple(f.name for f in fields)
    methods: dict[str, object] = {
        "__init__": _init(cls, fields),
        "__repr__": _repr(tuple(f.name for f in fields if f.repr)),
    }
    if eq:
        key = _key(tuple(f.name for f in fields if f.compare))
        methods |= {"__eq__": _eq(key), "__hash__": _hash(key) if frozen else None}
    if frozen:
        methods |= {"__setattr__": _frozen_set, "__delattr__": _frozen_delete, **_state_methods(names)}
    for name, method in methods.items():
        setattr(cls, name, method)


def pickled_fast(cls: type[_T]) -> type[_T]:
    """A slotted, frozen stdlib dataclass whose pickled state is a tuple of its fields: the stdlib's own
    state methods call `dataclasses.fields` per object, most of the cost of shipping a worker's events."""
    for name, method in _state_methods(tuple(f.name for f in dataclasses.fields(cls))).items():  # type: ignore[arg-type]
        setattr(cls, name, method)
    return cls


def _state_methods(names: tuple[str, ...]) -> dict[str, object]:
    """`__getstate__` and `__setstate__` with the fields' values as a tuple, in the fields' order."""
    state = _key(names)
    return {"__getstate__": lambda self: state(self), "__setstate__": _setstate(names)}


def _init(cls: type, fields: tuple[dataclasses.Field[Any], ...]) -> Callable[..., None]:
    positional = tuple(f.name for f in fields if f.init and not f.kw_only)
    accepted = frozenset(f.name for f in fields if f.init)
    plan: tuple[tuple[str, bool, Any, Any], ...] = tuple((f.name, f.init, f.default, f.default_factory) for f in fields)
    post_init = getattr(cls, "__post_init__", None)
    title = f"{cls.__qualname__}.__init__()"
    names = tuple(f.name for f in fields)
    whole = len(accepted) == len(plan)  # every field is an argument
    in_order = whole and len(positional) == len(plan)

    def __init__(self: object, *args: object, **kwargs: object) -> None:
        if in_order and not kwargs and len(args) == len(plan):  # every field, in order: nothing to default
            for name, value in zip(names, args, strict=True):
                _set(self, name, value)
        elif whole and not args and kwargs.keys() == accepted:  # every field, by name
            for name, value in kwargs.items():
                _set(self, name, value)
        else:
            _bind(self, args, kwargs)
        if post_init is not None:
            post_init(self)

    def _bind(self: object, args: tuple[object, ...], kwargs: dict[str, object]) -> None:
        if len(args) > len(positional):
            raise TypeError(f"{title} takes {len(positional) + 1} positional arguments but {len(args) + 1} were given")
        given = dict(zip(positional, args, strict=False))
        for name, value in kwargs.items():
            if name in given:
                raise TypeError(f"{title} got multiple values for argument {name!r}")
            if name not in accepted:
                raise TypeError(f"{title} got an unexpected keyword argument {name!r}")
            given[name] = value
        for name, init, default, factory in plan:
            value = given.get(name, _MISSING) if init else _MISSING
            if value is _MISSING:
                if default is not _MISSING:
                    value = default
                elif factory is not _MISSING:
                    value = factory()
                elif init:
                    raise TypeError(f"{title} missing required argument: {name!r}")
                else:
                    continue
            _set(self, name, value)

    return __init__


def _repr(names: tuple[str, ...]) -> Callable[[object], str]:
    def __repr__(self: object) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
        return f"{type(self).__qualname__}({shown})"

    return __repr__


def _key(names: tuple[str, ...]) -> Callable[[object], tuple[Any, ...]]:
    if len(names) == 1:
        return _one(names)
    return attrgetter(*names) if names else (lambda _self: ())


def _one(names: tuple[str, ...]) -> Callable[[object], tuple[Any, ...]]:
    get = attrgetter(*names)
    return lambda self: (get(self),)


def _eq(key: Callable[[object], tuple[Any, ...]]) -> Callable[[object, object], bool]:
    def __eq__(self: object, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return key(self) == key(other)

    return __eq__


def _hash(key: Callable[[object], tuple[Any, ...]]) -> Callable[[object], int]:
    return lambda self: hash(key(self))


def _setstate(names: tuple[str, ...]) -> Callable[[object, tuple[Any, ...]], None]:
    def __setstate__(self: object, state: tuple[Any, ...]) -> None:
        for name, value in zip(names, state, strict=True):
            _set(self, name, value)

    return __setstate__


def _frozen_set(self: object, name: str, value: object) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delete(self: object, name: str) -> None:
    raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")
