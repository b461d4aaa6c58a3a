"""Import → the real engine's ``resolve`` with supplied dice → updates → the write-back
applied to the raw VTT data → import again gives the after state (STYLE.md: data flows
one way, VTT JSON → adapter → combatant → engine → resolution → adapter → patch)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import adapters
from engine import SuppliedDice, builtin_systems

from .support import apply_foundry, apply_roll20, attr, load, template_actor

SYSTEMS = builtin_systems()
Apply = Callable[[dict[str, Any], list[dict[str, Any]]], dict[str, Any]]


def settle(adapter_id: str, data: dict[str, Any], system: str, side: dict[str, Any],
           apply: Apply) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Write one side's after state back and import it again (normalised)."""
    adapter = adapters.get(adapter_id)
    updates = adapter.updates(data, system, side["before"], side["after"])
    again = adapter.import_(apply(data, updates), system).combatant
    return updates, SYSTEMS[system].combatant(again)


def resolve(system: str, attacker: dict[str, Any], defender: dict[str, Any],
            attack: dict[str, Any], defense: dict[str, Any] | None,
            dice: dict[str, list[int]]) -> dict[str, Any]:
    request = {"system": system, "attacker": attacker, "defender": defender,
               "attack": attack, "defense": defense}
    result: dict[str, Any] = SYSTEMS[system].resolve(request, SuppliedDice(dice)).to_json()
    return result


def test_revised_2e_mind_thrust_on_a_nonpsionic_aboleth_round_trips() -> None:
    """RULES.md §1.4/§1.5: a hit on a nonpsionic mind opens it (opened_by "attack");
    the attacker pays 2 PSPs for a one-step mind thrust. Both sides are written to
    Foundry flags and come back as the engine left them."""
    zanna = load("foundry/dnd5e/zanna-gnome-wizard.json")
    zanna["flags"]["mindscape"] = {"revised-2e": {
        "kind": "psionicist", "psp": 40, "psp_max": 40,
        "attacks": ["mind-thrust"], "defenses": ["thought-shield"]}}
    aboleth = load("foundry/dnd5e/aboleth.json")
    dnd5e = adapters.get("foundry.dnd5e")
    result = resolve("revised-2e", dnd5e.import_(zanna, "revised-2e").combatant,
                     dnd5e.import_(aboleth, "revised-2e").combatant,
                     {"mode": "mind-thrust", "multiplier": 1}, None,
                     {"attack": [20], "damage": [4], "save": [7]})
    assert result["outcome"] == "hit"
    updates, again = settle("foundry.dnd5e", zanna, "revised-2e", result["attacker"],
                            apply_foundry)
    assert updates == [{"uuid": "Actor.4Jsv5vYaJ1atUEDV",
                        "update": {"flags.mindscape.revised-2e.psp": 38}}]
    assert again == result["attacker"]["after"]
    updates, again = settle("foundry.dnd5e", aboleth, "revised-2e", result["defender"],
                            apply_foundry)
    assert "flags.mindscape.revised-2e.mind" in updates[0]["update"]
    assert not any(k.startswith("system.") for k in updates[0]["update"])
    assert again == result["defender"]["after"]
    assert again["mind"]["state"] == "open"


def test_revised_2e_roll20_psionicist_against_an_ose_monster_round_trips() -> None:
    ulcen = load("roll20/adnd2e-revised-ulcen.handmade.json")
    attr(ulcen, "PSP")["current"] = "3"  # the attack spends 2 of the 3 left
    goblin = template_actor("foundry/ose/template.json", "monster", "oseGoblin0000001",
                            "Goblin")
    goblin["flags"]["mindscape"] = {"revised-2e": {"kind": "wild-talent", "level": 1,
                                                   "psp": 6, "psp_max": 6,
                                                   "defenses": ["mind-blank"]}}
    sheet, ose = adapters.get("roll20.adnd2e-revised"), adapters.get("foundry.ose")
    result = resolve("revised-2e", sheet.import_(ulcen, "revised-2e").combatant,
                     ose.import_(goblin, "revised-2e").combatant,
                     {"mode": "mind-thrust", "multiplier": 1},
                     {"mode": "mind-blank"}, {"attack": [19], "damage": [3], "save": [10]})
    updates, again = settle("roll20.adnd2e-revised", ulcen, "revised-2e",
                            result["attacker"], apply_roll20)
    assert updates[0]["attributes"]["PSP"] == {"current": result["attacker"]["after"]["psp"]}
    assert again == result["attacker"]["after"]
    _, again = settle("foundry.ose", goblin, "revised-2e", result["defender"], apply_foundry)
    assert again == result["defender"]["after"]


def test_combat_strength_exchange_round_trips_through_psi_attributes() -> None:
    """RULES.md §2.2: the attack costs attack strength (mind thrust 4); damage comes off
    the defender's strengths. Roll20 stores both in psi_* attributes."""
    ulcen = load("roll20/adnd2e-revised-ulcen.handmade.json")
    ulcen["attribs"] += [{"name": "psi_attack_strength", "current": "60", "max": "60"},
                         {"name": "psi_defense_strength", "current": "50", "max": "50"}]
    rival = load("roll20/adnd2e-revised-ulcen.handmade.json")
    rival["id"], rival["name"] = "-MzRival000000001", "Fenka"
    rival["attribs"] += [{"name": "psi_attack_strength", "current": "40", "max": "40"},
                         {"name": "psi_defense_strength", "current": "45", "max": "45"}]
    sheet = adapters.get("roll20.adnd2e-revised")
    result = resolve("combat-strength", sheet.import_(ulcen, "combat-strength").combatant,
                     sheet.import_(rival, "combat-strength").combatant,
                     {"mode": "mind-thrust"}, {"mode": "mental-barrier"},
                     {"damage": [3, 2, 1, 4, 5, 2, 2, 3, 1, 1], "implosion": [50],
                      "save": [10], "wave-effect": [50], "condition-duration": [2]})
    for data, side in ((ulcen, "attacker"), (rival, "defender")):
        _, again = settle("roll20.adnd2e-revised", data, "combat-strength", result[side],
                          apply_roll20)
        assert again == result[side]["after"]
    assert result["attacker"]["after"]["attack_strength"] == 56


def test_power_pool_contest_round_trips_on_dnd5e_actors() -> None:
    """RULES.md §3.2: each side rolls its pool; the defender wins ties. The 5.x YAML
    aboleth (20d10) attacks Randal (1 Hit Die of d10)."""
    aboleth = load("foundry/dnd5e/aboleth-2024.yml")
    aboleth["flags"]["mindscape"] = {"power-pool": {"psionic": True,
                                                    "attacks": ["mental-stab"]}}
    randal = load("foundry/dnd5e/randal-human-fighter.json")
    dnd5e = adapters.get("foundry.dnd5e")
    result = resolve("power-pool", dnd5e.import_(aboleth, "power-pool").combatant,
                     dnd5e.import_(randal, "power-pool").combatant,
                     {"mode": "mental-stab", "pool_dice": 2}, None,
                     {"attack": [12, 9], "defense": [3], "save": [10]})
    assert result["winner"] == "attacker"
    for data, side in ((aboleth, "attacker"), (randal, "defender")):
        updates, again = settle("foundry.dnd5e", data, "power-pool", result[side],
                                apply_foundry)
        assert all(k.startswith(("flags.mindscape.power-pool.", "system.attributes.hp"))
                   for u in updates for k in u["update"])
        assert again == result[side]["after"]
    assert result["defender"]["after"]["controlled_by"] == "mmAboleth0000000"
