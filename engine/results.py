"""Immutable records of one resolution.

A ``Resolution`` holds everything a chat card or a write-back needs: each
combatant before and after, every die, structured events, the outcome, a short
summary for the table, the system's own fields, and supplied dice not used.

Its JSON parts are read-only values (``FrozenDict`` and ``FrozenList``, made by
``freeze``). They are ``dict`` and ``list`` subclasses whose changing methods raise
``TypeError``, so ``json`` and ``orjson`` write them as they are and ``to_json`` can hand
them out without copying; ``thaw`` makes a mutable deep copy when one is wanted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn, TypeVar, cast

from .dice import Roll

T = TypeVar("T")


def _read_only(self: Any, *args: Any, **kwargs: Any) -> NoReturn:
    raise TypeError(f"{type(self).__name__} is read-only: thaw() it for a changeable copy")


class _ReadOnly:
    """What ``FrozenDict`` and ``FrozenList`` share: copies are the value itself, and
    pickling rebuilds it from a plain copy (not through the refused ``__setitem__``)."""

    __slots__ = ()

    def __copy__(self: T) -> T:
        return self

    def __deepcopy__(self: T, memo: dict[int, Any]) -> T:
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        plain = dict if isinstance(self, dict) else list
        return (type(self), (plain(self),))  # type: ignore[call-overload]


class FrozenDict(_ReadOnly, dict[str, Any]):
    """A read-only JSON object. Made by ``freeze`` only, so everything in it is frozen
    too (``freeze`` returns one as it is)."""

    __slots__ = ()
    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _read_only
    __ior__ = _read_only

    def __hash__(self) -> int:  # type: ignore[override]
        # like FrozenList's: everything in it is frozen, so hashable too
        return hash(frozenset(self.items()))


class FrozenList(_ReadOnly, list[Any]):
    """A read-only JSON array. Made by ``freeze`` only (see ``FrozenDict``)."""

    __slots__ = ()
    __setitem__ = __delitem__ = append = extend = insert = pop = remove = clear = _read_only
    sort = reverse = _read_only
    __iadd__ = __imul__ = _read_only

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(self))


#: JSON's scalar types, returned as they are without the slower ``Mapping`` check
_SCALARS = frozenset({str, int, float, bool, type(None)})
#: values ``freeze`` returns as they are (checked inline: most values are these)
_FROZEN_ALREADY = _SCALARS | {FrozenDict, FrozenList}


def freeze(value: Any) -> Any:
    """A read-only deep copy of JSON-like data (dicts become ``FrozenDict``, lists and
    tuples ``FrozenList``); frozen data is returned as it is, so freezing a record
    that shares frozen parts costs only its new parts."""
    kind = type(value)
    if kind is dict:
        for v in value.values():
            if type(v) not in _FROZEN_ALREADY:
                break
        else:
            # Scalars and frozen parts only (event data, a mind): one C-level copy.
            return FrozenDict(value)
        return FrozenDict({k: v if type(v) in _FROZEN_ALREADY else freeze(v)
                           for k, v in value.items()})
    if kind is list or kind is tuple:
        return FrozenList([v if type(v) in _FROZEN_ALREADY else freeze(v) for v in value])
    if kind not in _FROZEN_ALREADY and isinstance(value, Mapping):
        return FrozenDict({k: freeze(v) for k, v in value.items()})
    return value


def thaw(value: Any) -> Any:
    """Plain JSON data (new dicts and lists) from ``freeze``'s output or any mapping.

    Also the engine's deep copy of JSON data: cheaper than ``copy.deepcopy``, which
    keeps a memo for shared and cyclic objects that JSON data cannot contain.
    """
    kind = type(value)
    if kind is dict or kind is FrozenDict:
        return {k: v if type(v) in _SCALARS else thaw(v) for k, v in value.items()}
    if kind is list or kind is tuple or kind is FrozenList:
        return [v if type(v) in _SCALARS else thaw(v) for v in value]
    if kind not in _SCALARS and isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    return value


def copy_json(value: T) -> T:
    """A deep copy of JSON data (dicts and lists), as ``thaw`` makes it."""
    return cast(T, thaw(value))


@dataclass(frozen=True)
class Event:
    """Something that happened: ``type`` (kebab-case), who it happened to, and details.
    The details sit beside ``type`` and ``combatant`` in the JSON, so they may not use
    either name."""

    type: str
    combatant: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        taken = sorted({"type", "combatant"} & set(self.data))
        if taken:
            raise ValueError(f"event {self.type!r}: its data may not name {taken}: "
                             "the event's own fields have those names")
        object.__setattr__(self, "data", freeze(self.data))

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "combatant": self.combatant, **self.data}


@dataclass(frozen=True)
class Change:
    """One combatant before and after a resolution (combatant JSON objects)."""

    id: str
    before: Mapping[str, Any]
    after: Mapping[str, Any]

    def __post_init__(self) -> None:
        object.__setattr__(self, "before", freeze(self.before))
        object.__setattr__(self, "after", freeze(self.after))

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class Resolution:
    """The record of one resolved exchange.

    ``attacker`` and ``defender`` are the two principal sides; ``others`` holds any
    further combatant the exchange touched (group members, a controller struck in
    place of its puppet). ``fields`` are the system's own result fields (API.md),
    merged into the top level of ``to_json``.
    """

    system: str
    outcome: str
    attacker: Change
    defender: Change
    rolls: tuple[Roll, ...]
    events: tuple[Event, ...]
    summary: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    others: tuple[Change, ...] = ()
    unused_dice: Mapping[str, Sequence[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", freeze(self.fields))
        object.__setattr__(self, "unused_dice", freeze(self.unused_dice))

    def changes(self) -> dict[str, Change]:
        """Every touched combatant's before/after by combatant id."""
        out = {c.id: c for c in self.others}
        out[self.defender.id] = self.defender
        out[self.attacker.id] = self.attacker
        return out

    def to_json(self) -> dict[str, Any]:
        """The record as JSON data: a new object at the top and for every change, roll
        and event, holding the record's own read-only values below that (``thaw`` the
        answer, or a part, for a changeable copy)."""
        data: dict[str, Any] = {
            "system": self.system,
            "outcome": self.outcome,
            "attacker": self.attacker.to_json(),
            "defender": self.defender.to_json(),
            "rolls": [r.to_json() for r in self.rolls],
            "events": [e.to_json() for e in self.events],
            "summary": self.summary,
            "unused_dice": self.unused_dice,
        }
        if self.others:
            data["others"] = [c.to_json() for c in self.others]
        data.update(self.fields)
        return data
