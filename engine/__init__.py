"""Mindscape's rules engine: pure psionic-combat rules, no I/O, no asyncio.

Systems: ``revised-2e``, ``combat-strength``, ``power-pool`` (see ``builtin_systems``).
"""

from __future__ import annotations

from importlib import import_module

from .dice import DiceSource, RandomDice, Roll, SuppliedDice, dice_source
from .errors import (
    DiceNeeded,
    DiceSyntaxError,
    EngineError,
    InvalidCombatant,
    InvalidInput,
    LimitExceeded,
    Problem,
    RulesViolation,
    UnknownCombatant,
)
from .options import HouseRule
from .results import Change, Event, Resolution
from .system import System, schema_problems

__all__ = [
    "Change",
    "DiceNeeded",
    "DiceSource",
    "DiceSyntaxError",
    "EngineError",
    "Event",
    "HouseRule",
    "InvalidCombatant",
    "InvalidInput",
    "LimitExceeded",
    "Problem",
    "RandomDice",
    "Resolution",
    "Roll",
    "RulesViolation",
    "SuppliedDice",
    "System",
    "UnknownCombatant",
    "builtin_systems",
    "dice_source",
    "schema_problems",
]

_BUILTIN = ("revised_2e", "combat_strength", "power_pool")


def builtin_systems() -> dict[str, System]:
    """The three built-in systems by id (the daemon finds them through entry points)."""
    out: dict[str, System] = {}
    for name in _BUILTIN:
        system: System = import_module(f"{__name__}.{name}").SYSTEM
        out[system.id] = system
    return out
