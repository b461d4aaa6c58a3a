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


def pool_sheet(ref: str, name: str, **attrs: tuple[str, str]) -> dict[str, Any]:
    """A Roll20 character in power-pool: its psi_* attributes by name (current, max)."""
    base = {"psi_pool": ("3", "3"), "psi_die": ("8", ""), "psi_psionic": ("1", ""),
            "psi_attacks": ("Mental Stab", ""), "HP": ("20", "20"), "level-class1": ("3", "")}
    base.update(attrs)
    return {"adapter": "roll20.adnd2e-revised", "data": {
        "id": ref, "name": name, "controlledby": "",
        "attribs": [{"name": k, "current": c, "max": m} for k, (c, m) in base.items()]}}


def written_attributes(updates: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
    """Roll20 write-backs as {(character id, attribute): current}."""
    return {(u["character_id"], name): value.get("current")
            for u in updates for name, value in u["attributes"].items()}
