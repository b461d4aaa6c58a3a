"""Combatants used by the daemon's tests (API.md's exchange example and its opponent)."""

from __future__ import annotations

from typing import Any

ULCEN: dict[str, Any] = {
    "id": "ulcen", "name": "Ulcen of Tyr", "kind": "psionicist", "level": 4, "psp": 40,
    "psp_max": 40, "int": 14, "wis": 13, "mac": 10, "attacks": ["mind-thrust"],
    "defenses": ["thought-shield"]}
FENKA: dict[str, Any] = {
    "id": "fenka", "name": "Fenka", "kind": "psionicist", "level": 3, "psp": 30,
    "psp_max": 30, "int": 12, "wis": 12, "mac": 10, "attacks": ["mind-thrust"],
    "defenses": ["mental-barrier"]}
#: API.md "exchange.resolve" example.
EXCHANGE: dict[str, Any] = {
    "system": "revised-2e", "attacker": ULCEN, "defender": FENKA,
    "attack": {"mode": "mind-thrust", "multiplier": 4, "range": "short"},
    "defense": {"mode": "mental-barrier"},
    "options": {"H-2E-CRIT-MODS": True},
    "dice": {"attack": [20], "damage": [4, 4, 3, 1], "save": [7]},
}


def duelist(cid: str, focus: int = 3) -> dict[str, Any]:
    """A sample-duel combatant (tests/sample_plugin)."""
    return {"id": cid, "name": cid.title(), "focus": focus}
