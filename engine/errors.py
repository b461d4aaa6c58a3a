"""The engine's exceptions: one root, precise subclasses with structured fields.

The daemon maps these to JSON-RPC error codes in one place (API.md "Errors"):
``InvalidInput`` and its subclasses are -32602, ``RulesViolation`` is 4001,
``DiceNeeded`` is 4002 and ``UnknownCombatant`` is 4004.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


def json_text(value: Any, limit: int = 80) -> str:
    """``value`` as a caller writes it in a message (JSON: ``true``, ``null``, double
    quotes, not Python's ``True`` and ``['a']``), cut short past ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def pointer_token(key: str | int) -> str:
    """``key`` (a member name or an array index) as one reference token of a JSON
    Pointer: RFC 6901 writes ``~`` as ``~0`` and ``/`` as ``~1``, so a member named
    ``a/b`` is ``/a~1b``, never the two members ``/a/b``."""
    return str(key).replace("~", "~0").replace("/", "~1")


def pointer(path: str, *keys: str | int) -> str:
    """The JSON Pointer ``path`` extended by each of ``keys`` as one token
    (``pointer("/dice", "a/b", 0)`` is ``/dice/a~1b/0``)."""
    return path + "".join("/" + pointer_token(key) for key in keys)


class EngineError(Exception):
    """Root of every error the engine raises on purpose."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input: a JSON Pointer into the params and a message."""

    path: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


class InvalidInput(EngineError):
    """Input that does not fit the shape or the limits the engine accepts."""

    def __init__(self, problems: Sequence[Problem] | Problem) -> None:
        self.problems: tuple[Problem, ...] = (
            (problems,) if isinstance(problems, Problem) else tuple(problems)
        )
        super().__init__("; ".join(f"{p.path or '/'}: {p.message}" for p in self.problems))

    @classmethod
    def at(cls, path: str, message: str) -> InvalidInput:
        """One problem at ``path``."""
        return cls(Problem(path, message))


class InvalidCombatant(InvalidInput):
    """A combatant object that fails its system's schema or derivations."""


class LimitExceeded(InvalidInput):
    """A request beyond a documented limit (dice per pool, penetration, combatants)."""


class DiceSyntaxError(InvalidInput):
    """A dice expression that does not parse; the message names the position."""

    def __init__(self, expr: str, position: int, message: str) -> None:
        self.expr = expr
        self.position = position
        super().__init__(Problem("/expr", f"{message} at position {position}"))


class RulesViolation(EngineError):
    """The rules forbid the request (not enough PSPs, mode not known, ...); ``combatant``
    is the id of the creature the refusal is about, when it is about one (a VTT then
    knows whom to tell, or to leave out, without reading the text)."""

    def __init__(self, rule: str, detail: str, combatant: str | None = None) -> None:
        self.rule = rule
        self.detail = detail
        self.combatant = combatant
        super().__init__(f"{rule}: {detail}")


class DiceNeeded(EngineError):
    """Supplied dice ran out for ``purpose``: ``needed`` more d``sides`` are required."""

    def __init__(self, purpose: str, sides: int, needed: int = 1) -> None:
        self.purpose = purpose
        self.sides = sides
        self.needed = needed
        super().__init__(f"need {needed} more d{sides} for purpose {purpose!r}")


class UnknownCombatant(EngineError):
    """An encounter has no combatant with this id (a target, an ally, a creature to
    release): ``path`` says where the request named it."""

    def __init__(self, id: str, path: str = "") -> None:
        self.id = id
        self.path = path
        super().__init__(f"no combatant {json_text(id)} in this encounter")
