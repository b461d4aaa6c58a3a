"""docs/ADAPTERS.md "Write-back": applying an adapter's write-back to the VTT data and
importing it again (normalised by the engine's ``System.combatant``) gives the
resolution's ``after`` on every field the adapter can write, also for values the engine
defaulted (a maximum, a pool); and a second round trip writes nothing.

Seeded loops over the public fixtures (tests/fixtures/README.md) and the hand-made Roll20
character, in the three systems, several exchanges in a row through the real engine's
``resolve``, with the write-backs applied as Foundry (objects merged key by key, ``-=``
deletions) and the Roll20 Mod script do."""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import adapters
from adapters.core import FIELDS
from engine import builtin_systems
from engine.dice import dice_source
from engine.errors import InvalidCombatant, RulesViolation

from .support import apply_foundry, apply_roll20, ars_class, attr, load, template_actor

SYSTEMS = builtin_systems()
Apply = Callable[[dict[str, Any], list[dict[str, Any]]], dict[str, Any]]


@dataclass
class Sheet:
    """One VTT character: its adapter, data (changed as write-backs are applied) and how
    the platform applies a write-back."""

    adapter_id: str
    data: dict[str, Any]
    apply: Apply

    @property
    def adapter(self) -> adapters.Adapter:
        return adapters.get(self.adapter_id)


# Psionic state as a GM would store it: deliberately incomplete (no maximum, no pool),
# so the engine defaults what is missing and the write-back must keep it.
STATE: dict[str, list[dict[str, Any]]] = {
    "revised-2e": [
        {"kind": "psionicist", "level": 9, "psp": 90, "attacks": ["mind-thrust", "ego-whip"],
         "defenses": ["mind-blank", "thought-shield"]},
        {"psp_max": 70, "level": 9, "attacks": ["psionic-blast", "psychic-crush"],
         "defenses": ["mental-barrier", "tower-of-iron-will"]},
        {"kind": "wild-talent", "level": 4, "psp_max": 40, "attacks": ["id-insinuation"],
         "defenses": ["intellect-fortress"]},
    ],
    "combat-strength": [
        {"attack_strength": 60, "defense_strength": 40},
        {"attack_strength": 35, "attack_strength_max": 50, "defense_strength": 70},
        {"psionic": True, "defense_strength": 25, "conditions": ["dazed"],
         "condition_rounds": {"dazed": 1}},
    ],
    "power-pool": [
        {"psionic": True, "attacks": ["mental-stab", "psionic-wave"],
         "defenses": ["pinnacle-of-will", "blank-mind"]},
        {"psionic": True, "attacks": ["synaptic-overload", "personality-invasion"],
         "defenses": ["barrier-mantra"], "dedicated": [{"purpose": "maintain"}]},
        {"psionic": True, "attacks": ["subconscious-subversion"],
         "defenses": ["cognitive-labyrinth", "imagination-swarm"]},
    ],
}
_PAIRS = {"psp": ("psi_psp", "current"), "psp_max": ("psi_psp", "max"),
          "attack_strength": ("psi_attack_strength", "current"),
          "attack_strength_max": ("psi_attack_strength", "max"),
          "defense_strength": ("psi_defense_strength", "current"),
          "defense_strength_max": ("psi_defense_strength", "max"),
          "pool": ("psi_pool", "current")}


def foundry_sheets(system: str, state: dict[str, Any]) -> list[Sheet]:
    actors = [load("foundry/dnd5e/zanna-gnome-wizard.json"),
              load("foundry/dnd5e/randal-human-fighter.json"),
              load("foundry/dnd5e/aboleth.json"), load("foundry/dnd5e/aboleth-2024.yml")]
    ose = [template_actor("foundry/ose/template.json", "monster", "oseMonster000001",
                          "Goblin"),
           template_actor("foundry/ose/template.json", "character", "oseCharacter0001",
                          "Aleena")]
    ars = [template_actor("foundry/ars/template.json", "npc", "arsNpc0000000001", "Orc"),
           template_actor("foundry/ars/template.json", "character", "arsCharacter0001",
                          "Dorn")]
    ose[1]["system"]["scores"]["int"]["value"] = 14
    ose[1]["system"]["scores"]["wis"]["value"] = 12
    ars[0]["system"]["hitdice"] = "4+1"
    ars[0]["system"]["attributes"]["hp"]["value"] = 25
    # a level-6 psionicist: ARS keeps the level in the class item (support.ars_class)
    ars[1]["items"] = [ars_class("Psionicist", 6, ["1d6"] * 11 + ["2"] * 9)]
    ose[0]["system"]["hp"]["value"] = 7
    sheets = [Sheet("foundry.dnd5e", a, apply_foundry) for a in actors]
    sheets += [Sheet("foundry.ose", a, apply_foundry) for a in ose]
    sheets += [Sheet("foundry.ars", a, apply_foundry) for a in ars]
    for sheet in sheets:
        sheet.data.setdefault("flags", {})["mindscape"] = {system: copy.deepcopy(state)}
    return sheets


def as_text(name: str, value: Any) -> str:
    """A state value as a GM types it into a psi_* attribute (docs/ADAPTERS.md)."""
    if name in ("attacks", "defenses", "conditions"):
        return ", ".join(value)
    if isinstance(value, bool):
        return "1" if value else "0"
    return json.dumps(value) if isinstance(value, dict | list) else str(value)


def roll20_sheets(system: str, state: dict[str, Any]) -> list[Sheet]:
    plain = load("roll20/adnd2e-revised-ulcen.handmade.json")
    blank_max = load("roll20/adnd2e-revised-ulcen.handmade.json")
    blank_max["id"], blank_max["name"] = "-MzBlankMax0000001", "Fenka"
    attr(blank_max, "PSP")["max"] = ""  # PSP current with no maximum (docs/ADAPTERS.md)
    out = []
    for data in (plain, blank_max):
        for name, value in state.items():
            if system == "revised-2e" and name in ("psp", "psp_max", "attacks", "defenses"):
                continue  # the sheet's own PSP box and mode rows
            attribute, part = _PAIRS.get(name, (f"psi_{name}", "current"))
            row = next((r for r in data["attribs"] if r["name"] == attribute), None)
            if row is None:
                row = {"name": attribute, "current": "", "max": ""}
                data["attribs"].append(row)
            row[part] = as_text(name, value)
        out.append(Sheet("roll20.adnd2e-revised", data, apply_roll20))
    return out


def sheets_for(system: str, rng: random.Random) -> list[Sheet]:
    states = STATE[system]
    foundry = [*foundry_sheets(system, states[0]), *foundry_sheets(system, states[1]),
               *foundry_sheets(system, states[2])]
    roll20 = [*roll20_sheets(system, states[0]), *roll20_sheets(system, states[2])]
    picked = rng.sample(foundry, 2) + rng.sample(roll20, 1)
    for i, sheet in enumerate(picked):  # three different combatants
        if sheet.adapter_id.startswith("foundry"):
            sheet.data["_id"] = f"{sheet.data['_id'][:14]}{i:02d}"
        else:
            sheet.data["id"] = f"{sheet.data['id'][:14]}{i:02d}"
    return picked


def exchange(system: str, attacker: dict[str, Any], defender: dict[str, Any],
             rng: random.Random) -> dict[str, Any] | None:
    """One exchange with random dice, or None when the rules forbid it (no PSPs left,
    a controlled or stopped mind ...)."""
    known = SYSTEMS[system].combatant(attacker)["attacks"]
    defenses = SYSTEMS[system].combatant(defender)["defenses"]
    if not known:
        return None
    attack: dict[str, Any] = {"mode": rng.choice(known)}
    defense = ({"mode": rng.choice(defenses)} if defenses and rng.random() < 0.8
               else None)
    if system == "revised-2e":
        attack["multiplier"] = rng.randint(1, 2)
    request = {"attacker": attacker, "defender": defender, "attack": attack,
               "defense": defense}
    try:
        result: dict[str, Any] = SYSTEMS[system].resolve(
            request, dice_source(None, rng.randrange(1 << 30))).to_json()
    except (RulesViolation, InvalidCombatant):
        return None
    return result


def writable(adapter: adapters.Adapter, sheet: Sheet, system: str, name: str) -> bool:
    """Whether the adapter can write ``name`` for this sheet (docs/ADAPTERS.md)."""
    read = adapter.read(sheet.data, system)[1]  # both VTT bases have read()
    binding = read.bindings.get(name)
    return binding.writable if binding is not None else name != "hp"


def play(system: str, sheets: list[Sheet], rng: random.Random, tries: int
         ) -> Iterator[tuple[tuple[Sheet, dict[str, Any]], ...]]:
    """``tries`` exchanges between two of ``sheets`` drawn by ``rng``, each imported as
    its sheet stands then: for each the rules allowed, its two sheets with their sides
    of the result (the caller writes them back before the next)."""
    for _ in range(tries):
        a, d = rng.sample(sheets, 2)
        result = exchange(system, a.adapter.import_(a.data, system).combatant,
                          d.adapter.import_(d.data, system).combatant, rng)
        if result is not None:
            yield (a, result["attacker"]), (d, result["defender"])


@pytest.mark.parametrize("system", sorted(STATE))
@pytest.mark.parametrize("seed", range(12))
def test_applying_a_write_back_and_importing_again_gives_the_after_state(
        system: str, seed: int) -> None:
    rng = random.Random(f"{system}-{seed}")
    sheets = sheets_for(system, rng)
    normalise = SYSTEMS[system].combatant
    played = 0
    for pair in play(system, sheets, rng, 6):
        played += 1
        for sheet, side in pair:
            adapter = sheet.adapter
            updates = adapter.updates(sheet.data, system, side["before"], side["after"],
                                      normalise=normalise)
            sheet.data = sheet.apply(sheet.data, updates)
            again = normalise(adapter.import_(sheet.data, system).combatant)
            after = side["after"]
            wrong = {name: (after[name], again.get(name)) for name in FIELDS[system]
                     if name in after and again.get(name) != after[name]
                     and writable(adapter, sheet, system, name)}
            assert not wrong, (sheet.adapter_id, updates)
            # nothing new on a second round trip
            assert adapter.updates(sheet.data, system, after, after,
                                   normalise=normalise) == []
    assert played, "every exchange was refused: the loop checked nothing"


def test_a_write_back_the_engine_refuses_to_re_import_never_fails() -> None:
    """A normaliser that refuses the re-imported data never fails a write-back: each
    refusal writes the next field of ``after`` the data does not hold (here the maximum
    its blank box left to the engine), until none is left to write."""
    data = load("roll20/adnd2e-revised-ulcen.handmade.json")
    data["attribs"].append({"name": "psi_attack_strength", "current": "60", "max": ""})
    sheet = adapters.get("roll20.adnd2e-revised")

    def refuse(raw: Any) -> Any:
        raise InvalidCombatant.at("/attack_strength", "refused")

    before = {"attack_strength": 60, "attack_strength_max": 60}
    after = {"attack_strength": 53, "attack_strength_max": 60}
    assert sheet.updates(data, "combat-strength", before, after, normalise=refuse) == [
        {"character_id": "-MzUlcen0000000001",
         "attributes": {"psi_attack_strength": {"current": 53, "max": 60}}}]
    assert sheet.updates(data, "combat-strength", before, after,
                         normalise=SYSTEMS["combat-strength"].combatant) == [
        {"character_id": "-MzUlcen0000000001",
         "attributes": {"psi_attack_strength": {"current": 53, "max": 60}}}]
