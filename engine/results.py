"""Immutable records of one resolution.

A ``Resolution`` holds everything a chat card or a write-back needs: each
combatant before and after, every die, structured events, the outcome, a short
summary for the table, the system's own fields, and supplied dice not used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar, cast

from .dice import Roll

T = TypeVar("T")


#: JSON's scalar types, returned as they are without the slower ``Mapping`` check
_SCALARS = frozenset({str, int, float, bool, type(None)})


def freeze(value: Any) -> Any:
    """A read-only deep copy of JSON-like data (dicts become mapping proxies, lists tuples)."""
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict or kind is MappingProxyType:
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if kind is list or kind is tuple:
        return tuple([freeze(v) for v in value])
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    return value


def thaw(value: Any) -> Any:
    """Plain JSON data (new dicts and lists) from ``freeze``'s output or any mapping.

    Also the engine's deep copy of JSON data: cheaper than ``copy.deepcopy``, which
    keeps a memo for shared and cyclic objects that JSON data cannot contain.
    """
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict or kind is MappingProxyType:
        return {k: thaw(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [thaw(v) for v in value]
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    return value


def copy_json(value: T) -> T:
    """A deep copy of JSON data (dicts and lists), as ``thaw`` makes it."""
    return cast(T, thaw(value))


@dataclass(frozen=True)
class Event:
    """Something that happened: ``type`` (kebab-case), who it happened to, and details."""

    type: str
    combatant: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", freeze(self.data))

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "combatant": self.combatant, **thaw(self.data)}


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
        return {"id": self.id, "before": thaw(self.before), "after": thaw(self.after)}


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
    unused_dice: Mapping[str, tuple[int, ...]] = field(default_factory=dict)

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
        data: dict[str, Any] = {
            "system": self.system,
            "outcome": self.outcome,
            "attacker": self.attacker.to_json(),
            "defender": self.defender.to_json(),
            "rolls": [r.to_json() for r in self.rolls],
            "events": [e.to_json() for e in self.events],
            "summary": self.summary,
            "unused_dice": thaw(self.unused_dice),
        }
        if self.others:
            data["others"] = [c.to_json() for c in self.others]
        data.update(thaw(self.fields))
        return data
