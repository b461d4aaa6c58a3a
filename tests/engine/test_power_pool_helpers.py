"""Builders shared by the power-pool tests (seed 001_e8815498f41c4da8)."""

from __future__ import annotations

from typing import Any

from engine.dice import SuppliedDice
from engine.power_pool import SYSTEM
from engine.results import Resolution

ALL_ATTACKS = ["mental-stab", "personality-invasion", "psionic-wave",
               "subconscious-subversion", "synaptic-overload"]
ALL_DEFENSES = ["barrier-mantra", "blank-mind", "cognitive-labyrinth", "imagination-swarm",
                "pinnacle-of-will"]


def psionic(name: str, hit_dice: int = 3, die: int = 6, **more: Any) -> dict[str, Any]:
    """A psionic creature knowing every mode unless told otherwise."""
    c: dict[str, Any] = {"name": name, "hit_dice": hit_dice, "die": die,
                         "attacks": list(ALL_ATTACKS), "defenses": list(ALL_DEFENSES)}
    c.update(more)
    return c


def mundane(name: str, hit_dice: int = 2, die: int = 8, **more: Any) -> dict[str, Any]:
    """A creature with a mind but no power pool."""
    c: dict[str, Any] = {"name": name, "hit_dice": hit_dice, "die": die, "psionic": False}
    c.update(more)
    return c


def exchange(attacker: dict[str, Any], defender: dict[str, Any], attack: dict[str, Any],
             defense: dict[str, Any] | None = None, dice: dict[str, list[int]] | None = None,
             **more: Any) -> Resolution:
    """Resolve one exchange with the given physical dice."""
    request: dict[str, Any] = {"attacker": attacker, "defender": defender, "attack": attack,
                               "defense": defense}
    request.update(more)
    return SYSTEM.resolve(request, SuppliedDice(dice or {}))
