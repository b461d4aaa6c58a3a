"""Foundry actors from public data (tests/fixtures/README.md) become combatants with the
numbers the sheets hold, and write-backs touch only what changed and was read."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import adapters
from adapters.core import FIELDS, roll_dice
from engine import builtin_systems
from engine.dice import dice_source
from engine.errors import InvalidInput

from .support import apply_foundry, ars_class, load, template_actor

DND5E = adapters.get("foundry.dnd5e")
OSE = adapters.get("foundry.ose")
ARS = adapters.get("foundry.ars")
GENERIC = adapters.get("foundry.generic")


def zanna() -> dict[str, Any]:
    data: dict[str, Any] = load("foundry/dnd5e/zanna-gnome-wizard.json")
    return data


# -- dnd5e 4.x ------------------------------------------------------------------------
def test_dnd5e_pc_abilities_level_and_hit_die_come_from_the_sheet_and_class_item() -> None:
    """Zanna: int 17, wis 13, con 15; one Wizard level with hitDice "d6" (VTT.md: dnd5e
    does not store level, it is summed from class items)."""
    got = DND5E.import_(zanna(), "revised-2e")
    c = got.combatant
    assert (c["id"], c["name"]) == ("4Jsv5vYaJ1atUEDV", "Zanna (Gnome Wizard)")
    assert (c["int"], c["wis"], c["con"], c["level"]) == (17, 13, 15, 1)
    assert c["hp"] == 8
    assert c["class_group"] == "wizard"
    assert c["kind"] == "nonpsionic"
    assert any("nonpsionic" in w for w in got.warnings)
    pool = DND5E.import_(zanna(), "power-pool").combatant
    assert (pool["hit_dice"], pool["die"], pool["hp"]) == (1, 6, 8)


def wizard_and_psion(psion_levels: int) -> dict[str, Any]:
    """Zanna as Wizard 5 with a Psion class item of ``psion_levels`` levels beside."""
    data = zanna()
    wizard = next(i for i in data["items"] if i["type"] == "class")
    wizard["system"]["levels"] = 5
    psion = {**wizard, "_id": "psionClass000001", "name": "Psion",
             "system": {**wizard["system"], "identifier": "psion", "levels": psion_levels}}
    data["items"].append(psion)
    return data


def test_dnd5e_multiclass_psionicist_level_is_its_psion_class_s_in_revised_2e() -> None:
    """RULES.md §1.1 counts the psionicist's level (PSPs, MTHAC0, modes known), as the
    ARS and Roll20 adapters take it: Wizard 5 / Psion 2 is level 2 and a psionicist, with
    a warning; power-pool's Hit Dice stay the character's 7."""
    data = wizard_and_psion(2)
    got = DND5E.import_(data, "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (2, "psionicist")
    assert ("several classes (wizard 5, psion 2); level 2 taken, the psionicist class's "
            "(psion), not the character's 7") in got.warnings
    assert DND5E.import_(data, "power-pool").combatant["hit_dice"] == 7


DND5E_LEVEL_TAKEN = ("several classes (wizard 5, psion 2); level 2 taken, the psionicist "
                     "class's (psion), not the character's 7")
DND5E_GROUP_TAKEN = ("several classes (wizard 5, psion 2); class group psionicist taken from "
                     "the psionicist class (psion); flags.mindscape.revised-2e.class_group "
                     "sets it")


@pytest.mark.parametrize(("store", "said"), [
    ({}, {DND5E_LEVEL_TAKEN, DND5E_GROUP_TAKEN}),
    ({"level": 5}, {DND5E_GROUP_TAKEN}),
    ({"class_group": "wizard"}, {DND5E_LEVEL_TAKEN}),
    ({"level": 5, "class_group": "wizard"}, set()),
])
def test_dnd5e_the_psion_class_taken_is_said_of_its_level_and_of_its_class_group_apart(
        store: dict[str, Any], said: set[str]) -> None:
    """docs/ADAPTERS.md: the psionicist class whose level is taken also gives the
    class group, each said in a warning of its own, withdrawn when the state store sets
    what it explains: with the store's level 5 nothing says level 2 was taken."""
    data = wizard_and_psion(2)
    data["flags"] = {**data.get("flags", {}), "mindscape": {"revised-2e": store}}
    got = DND5E.import_(data, "revised-2e")
    c = got.combatant
    assert (c["level"], c["class_group"]) == (store.get("level", 2),
                                              store.get("class_group", "psionicist"))
    assert {w for w in got.warnings if w.startswith("several classes")} == said, got.warnings


def test_dnd5e_a_psionicist_read_at_its_psion_level_saves_with_its_best_class() -> None:
    """AD&D 2e (PHB, saving throws): a multi-class character uses the best saving throw
    of its classes, each at its own level (RULES.md §1.7). Read at its psion class's own
    level, a Wizard 11 / Psion 4 saves at its wizard's 11, not a psionicist's 13 of
    level 4; said. Wizard 5 / Psion 2 saves at its psion's 13 (a wizard's of 5 is 14).
    Without a psion class the character is read at its dnd5e level, the sum of its
    classes', as the main class: the engine derives the save from those, as before."""
    data = wizard_and_psion(4)
    next(i for i in data["items"] if i["type"] == "class")["system"]["levels"] = 11
    got = DND5E.import_(data, "revised-2e")
    c = got.combatant
    assert (c["level"], c["class_group"], c["save_paralyzation"]) == (4, "psionicist", 11)
    assert ("save vs. paralyzation 11 from wizard 11, the best of wizard 11 / psion 4 "
            "(flags.mindscape.revised-2e.save_paralyzation sets it)") in got.warnings
    got = DND5E.import_(wizard_and_psion(2), "revised-2e")
    assert got.combatant["save_paralyzation"] == 13
    assert ("save vs. paralyzation 13 from psion 2, the best of wizard 5 / psion 2 "
            "(flags.mindscape.revised-2e.save_paralyzation sets it)") in got.warnings
    got = DND5E.import_(zanna_and_fighter(2), "revised-2e")
    assert "save_paralyzation" not in got.combatant
    assert not any(w.startswith("save vs. paralyzation") for w in got.warnings)


def test_dnd5e_a_best_class_save_is_never_written_back() -> None:
    """Import, the engine's resolve and the write-back with its round trip: the PSPs
    spent go to the flags, the save derived from the class levels nowhere."""
    data = wizard_and_psion(4)
    next(i for i in data["items"] if i["type"] == "class")["system"]["levels"] = 11
    data["flags"]["mindscape"] = {"revised-2e": {
        "psp": 30, "psp_max": 30, "attacks": ["mind-thrust"]}}
    engine = builtin_systems()["revised-2e"]
    made = [DND5E.import_(data, "revised-2e").combatant,
            DND5E.import_(load("foundry/dnd5e/aboleth.json"), "revised-2e").combatant]
    result = engine.resolve({"attacker": made[0], "defender": made[1],
                             "attack": {"mode": "mind-thrust"}},
                            dice_source(None, 1)).to_json()
    side = result["attacker"]
    assert side["before"]["save_paralyzation"] == 11
    updates = DND5E.updates(data, "revised-2e", side["before"], side["after"],
                            normalise=engine.combatant)
    assert updates == [{"uuid": "Actor.4Jsv5vYaJ1atUEDV",
                        "update": {"flags.mindscape.revised-2e.psp": side["after"]["psp"]}}]
    again = engine.combatant(DND5E.import_(apply_foundry(data, updates),
                                           "revised-2e").combatant)
    assert again == side["after"]


def test_dnd5e_of_two_psionicist_classes_the_one_with_more_levels_gives_the_level(
        ) -> None:
    """The psionicist class whose level the psionic rules count (RULES.md §1.1) is, of
    two that are a psionicist's (``psion…``), the one with the most levels."""
    data = wizard_and_psion(2)
    psion = data["items"][-1]
    data["items"].append({**psion, "_id": "psionicist000001", "name": "Psionicist",
                          "system": {**psion["system"], "identifier": "psionicist",
                                     "levels": 3}})
    got = DND5E.import_(data, "revised-2e").combatant
    assert (got["level"], got["class_group"]) == (3, "psionicist")


def test_dnd5e_a_single_class_psion_is_read_at_its_level_with_nothing_to_say() -> None:
    """The warning naming each class is for several (docs/ADAPTERS.md foundry.dnd5e
    ``level``: "with a warning naming each class"); a Psion 3 and nothing else is
    simply level 3, a psionicist."""
    data = zanna()
    psion = next(i for i in data["items"] if i["type"] == "class")
    psion["system"].update(identifier="psion", levels=3)
    got = DND5E.import_(data, "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (3, "psionicist")
    assert not any("several classes" in w for w in got.warnings)


def test_dnd5e_a_psion_class_item_of_no_levels_is_not_the_psionicist_class() -> None:
    """A Psion class item of 0 levels beside Wizard 5 (one dropped, or not yet taken)
    gives no psionicist level: the character is read at its level 5, a wizard."""
    data = wizard_and_psion(0)
    got = DND5E.import_(data, "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (5, "wizard")
    assert not any("psionicist class's" in w for w in got.warnings)
    # nor does its hit die make the classes' dice differ: only the Wizard's is rolled
    data["items"][-1]["system"]["hitDice"] = "d12"
    pool = DND5E.import_(data, "power-pool")
    assert pool.combatant["die"] == 6
    assert not any("different hit dice" in w for w in pool.warnings)


def test_dnd5e_character_without_class_items_is_taken_as_level_1() -> None:
    """As the other adapters take a character with no level: one Hit Die, not a power
    pool of none; with no class hit die, the d8 the OSE and ARS adapters assume too
    (docs/ADAPTERS.md: "else d8 with a warning")."""
    data = zanna()
    data["items"] = [i for i in data["items"] if i["type"] != "class"]
    got = DND5E.import_(data, "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (1, 8)
    assert "no class items; level taken as 1" in got.warnings
    # nor are hit points made up for it: no class dice, no computed maximum
    data["system"]["attributes"]["hp"]["value"] = None
    got = DND5E.import_(data, "power-pool")
    assert "hp" not in got.combatant
    assert not any("hit point maximum" in w for w in got.warnings)


def test_dnd5e_pc_hit_point_maximum_is_computed_as_dnd5e_does_with_a_warning() -> None:
    """VTT.md: "hit points max of a character is null in stored data". dnd5e gives the
    first level's die in full plus Con: Zanna d6 + 2 = 8, Randal d10 + 2 = 12 (their
    stored current hit points). With no current value the computed maximum is used."""
    data = zanna()
    data["system"]["attributes"]["hp"]["value"] = None
    got = DND5E.import_(data, "revised-2e")
    assert got.combatant["hp"] == 8
    assert any("computed 8" in w for w in got.warnings)
    randal: dict[str, Any] = load("foundry/dnd5e/randal-human-fighter.json")
    randal["system"]["attributes"]["hp"]["value"] = None
    got = DND5E.import_(randal, "power-pool")
    assert got.combatant["hp"] == 12
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (1, 10)


def test_dnd5e_hit_point_maximum_is_not_computed_for_a_system_without_hit_points() -> None:
    """combat-strength has no ``hp`` field (docs/COMBATANTS.md): a character without
    current hit points gets no maximum computed, and no warning about one."""
    data = zanna()
    data["system"]["attributes"]["hp"]["value"] = None
    got = DND5E.import_(data, "combat-strength")
    assert "hp" not in got.combatant
    assert not any("hit point maximum" in w for w in got.warnings), got.warnings


def test_dnd5e_pc_with_current_hit_points_gets_no_warning_about_the_maximum() -> None:
    """The stored maximum is null for every dnd5e character; with current hit points the
    maximum is not needed, so nothing is computed and nothing is said about it."""
    for data in (zanna(), load("foundry/dnd5e/randal-human-fighter.json")):
        assert data["system"]["attributes"]["hp"]["max"] is None
        got = DND5E.import_(data, "revised-2e")
        assert got.combatant["hp"] == data["system"]["attributes"]["hp"]["value"]
        assert not [w for w in got.warnings if "maximum" in w], got.warnings


def test_dnd5e_pc_with_a_stored_maximum_keeps_its_current_hit_points() -> None:
    """docs/ADAPTERS.md (foundry.dnd5e ``hp``): the current ``hp.value`` is read; the
    maximum stands in "only when a character's ``value`` is null too". A wounded
    character whose sheet stores its maximum (an override) is read at its current 3."""
    data = zanna()
    data["system"]["attributes"]["hp"].update(value=3, max=8)
    got = DND5E.import_(data, "revised-2e")
    assert got.combatant["hp"] == 3
    assert not [w for w in got.warnings if "maximum" in w], got.warnings


def test_dnd5e_hit_point_maximum_adds_average_dice_for_later_levels() -> None:
    """Level 3 wizard with Con 15: 6 + 4 + 4 + 3 × 2 = 20."""
    data = zanna()
    data["system"]["attributes"]["hp"]["value"] = None
    for item in data["items"]:
        if item["type"] == "class":
            item["system"]["levels"] = 3
    got = DND5E.import_(data, "revised-2e")
    assert (got.combatant["hp"], got.combatant["level"]) == (20, 3)


def test_dnd5e_hit_point_maximum_is_at_least_1_a_level_whatever_the_con() -> None:
    """The computed maximum (docs/ADAPTERS.md foundry.dnd5e ``hp``) adds the Con modifier
    per level; a Con of 1 (−5) would take a 3rd-level wizard to 6 + 4 + 4 − 15 = −1, a
    creature down before any fight: the adapter counts at least 1 a level, 3."""
    data = zanna()
    data["system"]["attributes"]["hp"]["value"] = None
    data["system"]["abilities"]["con"]["value"] = 1
    for item in data["items"]:
        if item["type"] == "class":
            item["system"]["levels"] = 3
    assert DND5E.import_(data, "power-pool").combatant["hp"] == 3


def test_dnd5e_hit_point_maximum_gives_the_full_die_to_the_original_class() -> None:
    """dnd5e's rule (docs/ADAPTERS.md foundry.dnd5e ``hp``): "first level's die in full
    for the original class" (``details.originalClass``, an item id), whichever class
    item comes first; an original class with no levels gives it to the first class
    that has some. Fighter 2 listed before Wizard 1, Con 15: Wizard original 6 + 6 + 6
    + 3 × 2 = 24; Fighter first 10 + 6 + 4 + 6 = 26."""
    data = zanna()
    data["system"]["attributes"]["hp"]["value"] = None
    wizard = next(i for i in data["items"] if i["type"] == "class")
    fighter = {"_id": "fighterClass0001", "name": "Fighter", "type": "class",
               "system": {"identifier": "fighter", "levels": 2, "hitDice": "d10"}}
    unlevelled = {"_id": "psionClass000001", "name": "Psion", "type": "class",
                  "system": {"identifier": "psion", "levels": 0, "hitDice": "d12"}}
    data["items"] = [fighter, *data["items"], unlevelled]
    for original, hp in ((wizard["_id"], 24), (unlevelled["_id"], 26)):
        data["system"]["details"]["originalClass"] = original
        assert DND5E.import_(data, "power-pool").combatant["hp"] == hp, original


def zanna_and_fighter(levels: int) -> dict[str, Any]:
    """Zanna (Wizard 1, d6) with ``levels`` of Fighter (d10) as well."""
    data = zanna()
    data["items"].append({"_id": "fighterClass0001", "name": "Fighter", "type": "class",
                          "system": {"identifier": "fighter", "levels": levels,
                                     "hitDice": "d10"}})
    return data


def test_dnd5e_multiclass_levels_are_summed_and_the_main_class_gives_the_pool_die() -> None:
    """The pool rolls the die of the class of most levels, as every adapter takes it
    (``pool_die``): a Wizard 1 / Fighter 2 rolls the fighter's d10, nothing to warn of
    (the dice of classes of fewer levels are not rolled; it warned of "different hit
    dice" all the same), and a Wizard 3 / Fighter 2 the wizard's d6."""
    data = zanna_and_fighter(2)
    pool = DND5E.import_(data, "power-pool")
    assert (pool.combatant["hit_dice"], pool.combatant["die"]) == (3, 10)
    assert not any("different hit dice" in w for w in pool.warnings), pool.warnings
    next(item for item in data["items"] if item["name"] == "Wizard")["system"]["levels"] = 3
    pool = DND5E.import_(data, "power-pool")
    assert (pool.combatant["hit_dice"], pool.combatant["die"]) == (5, 6)
    assert not any("different hit dice" in w for w in pool.warnings), pool.warnings


def test_dnd5e_of_classes_with_equal_levels_the_larger_hit_die_gives_the_pool_die() -> None:
    """The pool die is the main class's (docs/ADAPTERS.md foundry.dnd5e ``die``: the
    class with most levels); of classes with as many levels, the larger die, whichever
    item comes first: Wizard 1 (d6) and Fighter 1 (d10) roll d10, saying so with each
    class's die, in the words of every adapter (``pool_die``)."""
    data = zanna_and_fighter(1)
    pool = DND5E.import_(data, "power-pool")
    assert (pool.combatant["hit_dice"], pool.combatant["die"]) == (2, 10)
    assert ("classes at level 1 with different hit dice (wizard d6, fighter d10); the "
            "pool rolls the largest, d10") in pool.warnings


def test_dnd5e_npc_hit_dice_come_from_the_hit_point_formula() -> None:
    """Aboleth (SRD 5.1): hp formula "18d10 + 36" gives 18 Hit Dice of d10; int 18."""
    data = load("foundry/dnd5e/aboleth.json")
    c = DND5E.import_(data, "revised-2e").combatant
    assert (c["level"], c["int"], c["wis"], c["con"], c["hp"]) == (18, 18, 15, 15, 135)
    assert c["class_group"] == "monster"
    pool = DND5E.import_(data, "power-pool").combatant
    assert (pool["hit_dice"], pool["die"]) == (18, 10)


def test_dnd5e_5x_yaml_actor_reads_the_same_fields() -> None:
    """The v13-era aboleth (dnd5e 5.3, YAML): "20d10 + 40", int 18, 150 hp."""
    data = load("foundry/dnd5e/aboleth-2024.yml")
    pool = DND5E.import_(data, "power-pool").combatant
    assert (pool["id"], pool["hit_dice"], pool["die"], pool["hp"]) == \
        ("mmAboleth0000000", 20, 10, 150)
    c = DND5E.import_(data, "combat-strength").combatant
    assert (c["int"], c["wis"], c["psionic"]) == (18, 15, False)


def test_dnd5e_5x_class_hit_die_is_read_from_hd_denomination() -> None:
    data = zanna()
    for item in data["items"]:
        if item["type"] == "class":
            del item["system"]["hitDice"]
            item["system"]["hd"] = {"denomination": "d6", "spent": 0}
    assert DND5E.import_(data, "power-pool").combatant["die"] == 6


def zanna_with_hit_die(die: Any) -> dict[str, Any]:
    """Zanna with ``die`` as her Wizard class item's ``system.hitDice``."""
    data = zanna()
    for item in data["items"]:
        if item["type"] == "class":
            item["system"]["hitDice"] = die
    return data


@pytest.mark.parametrize("die", ["d7", "a die", {"x": 1}])
def test_a_dnd5e_class_hit_die_not_read_refuses_only_an_import_that_rolls_it(
        die: Any) -> None:
    """docs/ADAPTERS.md (foundry.dnd5e ``die``): only power-pool rolls the hit die, and
    there the store's die wins: a class's ``hitDice`` the adapter cannot read (a size
    off the ladder, other text, no text) refuses no revised-2e or combat-strength import
    (each refused it at its place) and gives no warning there; in power-pool it is
    InvalidInput at its place unless flags.mindscape.power-pool.die sets the die, which
    is then taken without any warning about the sheet's (it refused that import too)."""
    data = zanna_with_hit_die(die)
    got = DND5E.import_(data, "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (1, "wizard")
    assert not any("die" in w for w in got.warnings), got.warnings
    assert DND5E.import_(data, "combat-strength").combatant["int"] == 17
    with pytest.raises(InvalidInput) as err:
        DND5E.import_(data, "power-pool")
    assert err.value.problems[0].path.endswith("/system/hitDice")
    data["flags"]["mindscape"] = {"power-pool": {"die": 6}}
    got = DND5E.import_(data, "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (1, 6)
    assert not any("die" in w for w in got.warnings), got.warnings
    data["flags"]["mindscape"] = {"power-pool": {"die": None}}  # sets nothing
    with pytest.raises(InvalidInput):
        DND5E.import_(data, "power-pool")


def test_a_dnd5e_hit_die_not_read_of_a_class_the_pool_does_not_roll_refuses_nothing(
        ) -> None:
    """docs/ADAPTERS.md (foundry.dnd5e ``die``): the pool rolls the hit die of the class
    with most levels, so only such a class's die the adapter cannot read refuses a
    power-pool import: Wizard 5 (d6) / Psion 2 with a Psion hitDice of "d7" rolls the
    Wizard's d6 (it was refused, though the same Psion with no hitDice was not), while
    Wizard 5 / Psion 5 is refused at the Psion's hitDice."""
    data = wizard_and_psion(2)
    data["items"][-1]["system"]["hitDice"] = "d7"
    got = DND5E.import_(data, "power-pool").combatant
    assert (got["hit_dice"], got["die"]) == (7, 6)
    data = wizard_and_psion(5)
    data["items"][-1]["system"]["hitDice"] = "d7"
    with pytest.raises(InvalidInput) as err:
        DND5E.import_(data, "power-pool")
    assert err.value.problems[0].path == f"/items/{len(data['items']) - 1}/system/hitDice"


def test_a_dnd5e_hit_point_maximum_computed_says_which_class_die_it_assumed() -> None:
    """docs/ADAPTERS.md (foundry.dnd5e ``hp``): with neither current nor maximum hit
    points stored the maximum is computed from the class dice, which revised-2e reads
    too: a class whose hit die is not read (absent, or one the adapter cannot read) is
    taken as d8, and the warning says so (it said nothing of it): Zanna's Wizard 1 at
    Con 15 has 8 + 2 = 10, not the 6 + 2 of her d6."""
    data = zanna_with_hit_die("d7")
    data["system"]["attributes"]["hp"]["value"] = None
    got = DND5E.import_(data, "revised-2e")
    assert got.combatant["hp"] == 10
    assert "hit point maximum is not stored; computed 10 from the class hit dice and Con " \
        "as dnd5e does (d8 taken for wizard: no hit die read from its class item)" \
        in got.warnings
    data = zanna_with_hit_die("d6")
    data["system"]["attributes"]["hp"]["value"] = None
    assert "hit point maximum is not stored; computed 8 from the class hit dice and Con " \
        "as dnd5e does" in DND5E.import_(data, "revised-2e").warnings


def test_flags_hold_the_psionic_state_and_win_over_derivations() -> None:
    """VTT.md: "keep psionic state in flags.mindscape.* on the actor"."""
    data = zanna()
    data["flags"]["mindscape"] = {"revised-2e": {
        "kind": "wild-talent", "psp": 31, "psp_max": 40,
        "attacks": ["Mind Thrust", "ego-whip"], "defenses": ["thought-shield"],
        "mind": {"state": "closed"}}}
    got = DND5E.import_(data, "revised-2e")
    c = got.combatant
    assert (c["kind"], c["psp"], c["psp_max"]) == ("wild-talent", 31, 40)
    assert c["attacks"] == ["mind-thrust", "ego-whip"]
    assert c["defenses"] == ["thought-shield"]
    assert c["mind"] == {"state": "closed"}
    assert not any("nonpsionic" in w for w in got.warnings)


@pytest.mark.parametrize(("system", "name", "edge", "past"), [
    ("revised-2e", "level", 0, -1),
    ("power-pool", "blank_mind_save", 2, 1),
    ("power-pool", "blank_mind_save", 20, 21),
    ("power-pool", "spell_levels", [9], [10]),
    ("power-pool", "spell_levels", [1], [0]),
])
def test_flags_at_the_edge_of_a_fields_range_are_read_and_past_it_refused_there(
        system: str, name: str, edge: Any, past: Any) -> None:
    """docs/COMBATANTS.md: `level` int ≥ 0, `blank_mind_save` 2–20, spell levels 1–9 (a
    spell's level): the store's value at the edge is read, one past it is InvalidInput
    at its place in the flags."""
    data = zanna()
    data["flags"]["mindscape"] = {system: {name: edge}}
    assert DND5E.import_(data, system).combatant[name] == edge
    data["flags"]["mindscape"] = {system: {name: past}}
    with pytest.raises(InvalidInput) as err:
        DND5E.import_(data, system)
    assert err.value.problems[0].path.startswith(f"/flags/mindscape/{system}/{name}")


def test_an_ability_score_of_25_in_the_flags_is_read_as_it_is() -> None:
    """docs/COMBATANTS.md: `int`, `wis`, `con` int 1–25: the tables' top score, set by
    the GM in the store, is read without a warning."""
    data = zanna()
    data["flags"]["mindscape"] = {"revised-2e": {"int": 25, "wis": 25, "con": 25}}
    got = DND5E.import_(data, "revised-2e")
    assert (got.combatant["int"], got.combatant["wis"], got.combatant["con"]) == (25, 25, 25)
    assert not any("25" in w for w in got.warnings), got.warnings


def test_a_psionic_flag_of_empty_text_is_unset() -> None:
    """adapters/core.py `to_bool`: empty text is no answer, as null is: `psionic` is then
    decided as when the flag is absent (docs/ADAPTERS.md: combat-strength "true only
    when a strength is recorded")."""
    data = zanna()
    data["flags"]["mindscape"] = {"combat-strength": {"psionic": "",
                                                      "attack_strength": 30}}
    assert DND5E.import_(data, "combat-strength").combatant["psionic"] is True


def test_blank_names_in_a_list_flag_are_dropped_and_names_trimmed() -> None:
    """docs/COMBATANTS.md: `conditions` are names: an empty entry names nothing, and
    the spaces around a name are no part of it. An entry may be 200 characters long
    (adapters/core.py `split_names`); a longer one is refused where it is."""
    data = zanna()
    data["flags"]["mindscape"] = {"revised-2e": {
        "conditions": [" stunned ", "", "   ", "x" * 200]}}
    got = DND5E.import_(data, "revised-2e")
    assert got.combatant["conditions"] == ["stunned", "x" * 200]
    data["flags"]["mindscape"] = {"revised-2e": {"conditions": ["x" * 201]}}
    with pytest.raises(InvalidInput) as err:
        DND5E.import_(data, "revised-2e")
    assert err.value.problems[0].path == "/flags/mindscape/revised-2e/conditions/0"


def test_an_imported_combatant_begins_with_its_id_and_name() -> None:
    """adapters/core.py `Draft.imported`: "id and name first, then the fields", so the
    combatant a caller sees (adapters.import's JSON) names itself before its state."""
    data = zanna()
    data["flags"]["mindscape"] = {"revised-2e": {"psp": 12}}
    got = DND5E.import_(data, "revised-2e").combatant
    assert list(got)[:2] == ["id", "name"]


def test_flag_texts_are_read_as_a_gm_types_them() -> None:
    """docs/COMBATANTS.md names the values (`kind` psionicist, `die` d8, a combatant id
    in `controlled_by`); the store's text is read in any case and without the spaces
    around it, and empty text is no value (the kind is then taken as when absent)."""
    data = zanna()
    data["flags"]["mindscape"] = {"revised-2e": {"kind": " Psionicist ", "psp": 10}}
    assert DND5E.import_(data, "revised-2e").combatant["kind"] == "psionicist"
    data["flags"]["mindscape"] = {"revised-2e": {"kind": "", "psp": 10}}
    got = DND5E.import_(data, "revised-2e")
    assert got.combatant["kind"] == "psionicist"
    assert "kind not recorded; a mind with PSPs is taken as a psionicist" in got.warnings
    data["flags"]["mindscape"] = {"power-pool": {"die": "D10",
                                                 "controlled_by": " ogre-1 "}}
    got = DND5E.import_(data, "power-pool")
    assert (got.combatant["die"], got.combatant["controlled_by"]) == (10, "ogre-1")


def test_a_controlled_by_longer_than_a_combatant_id_is_refused_there() -> None:
    """docs/COMBATANTS.md: an `id` is "1–64 chars"; `controlled_by` names one."""
    data = zanna()
    data["flags"]["mindscape"] = {"power-pool": {"controlled_by": "x" * 64}}
    assert DND5E.import_(data, "power-pool").combatant["controlled_by"] == "x" * 64
    data["flags"]["mindscape"] = {"power-pool": {"controlled_by": "x" * 65}}
    with pytest.raises(InvalidInput) as err:
        DND5E.import_(data, "power-pool")
    assert err.value.problems[0].path == "/flags/mindscape/power-pool/controlled_by"


def test_a_score_a_system_has_no_use_for_is_not_warned_about() -> None:
    """combat-strength has no `con` (docs/COMBATANTS.md): a dnd5e Constitution above 25
    is still checked, but no warning says it is used as 25."""
    data = zanna()
    data["system"]["abilities"]["con"]["value"] = 30
    got = DND5E.import_(data, "combat-strength")
    assert "con" not in got.combatant
    assert not any(w.startswith("con ") for w in got.warnings), got.warnings
    assert "con 30 is above the tables' 25; used as 25" in \
        DND5E.import_(data, "revised-2e").warnings


def test_psp_without_kind_is_taken_as_a_psionicist_with_a_warning() -> None:
    data = zanna()
    data["flags"]["mindscape"] = {"revised-2e": {"psp_max": "12"}}
    got = DND5E.import_(data, "revised-2e")
    assert (got.combatant["kind"], got.combatant["psp_max"]) == ("psionicist", 12)
    assert any("psionicist" in w for w in got.warnings)


def test_updates_write_changed_state_to_flags_and_hit_points_to_the_sheet() -> None:
    """Only changed fields; psionic state into flags.mindscape.<system>; hp back to
    system.attributes.hp.value; a derived level is never written."""
    data = zanna()
    data["flags"]["mindscape"] = {"revised-2e": {"kind": "psionicist", "psp": 40,
                                                 "psp_max": 40}}
    before = DND5E.import_(data, "revised-2e").combatant
    after = {**before, "psp": 31, "hp": 5, "level": 9, "mac": 10,
             "mind": {"state": "open", "opened_by": "zero-psp"}}
    got = DND5E.updates(data, "revised-2e", before, after)
    assert got == [{"uuid": "Actor.4Jsv5vYaJ1atUEDV", "update": {
        "flags.mindscape.revised-2e.psp": 31,
        "system.attributes.hp.value": 5,
        "flags.mindscape.revised-2e.mac": 10,
        "flags.mindscape.revised-2e.mind": {"state": "open", "opened_by": "zero-psp"}}}]
    assert DND5E.updates(data, "revised-2e", before, before) == []


def test_unlinked_token_envelope_updates_the_synthetic_actor() -> None:
    """VTT.md: "an unlinked token has its own synthetic actor; updating the base actor
    would change every copy"."""
    actor = load("foundry/dnd5e/aboleth.json")
    data = {"actor": actor, "token": {"uuid": "Scene.sc1.Token.tk1", "actorLink": False}}
    before = DND5E.import_(data, "power-pool").combatant
    got = DND5E.updates(data, "power-pool", before, {**before, "hp": 100, "pool": 17})
    assert got == [{"uuid": "Scene.sc1.Token.tk1.Actor.shhHtE7b92PefCWB",
                    "update": {"system.attributes.hp.value": 100,
                               "flags.mindscape.power-pool.pool": 17}}]
    linked = {"actor": actor, "token": {"uuid": "Scene.sc1.Token.tk1", "actorLink": True}}
    assert DND5E.updates(linked, "power-pool", before, {**before, "hp": 1})[0]["uuid"] == \
        "Actor.shhHtE7b92PefCWB"


def test_unlinked_copies_of_one_actor_are_different_combatants() -> None:
    """Three goblin tokens of one actor are three creatures: each unlinked token gives its
    own combatant id (so all can join an encounter and fight each other); a linked token
    is the actor itself."""
    actor = load("foundry/dnd5e/aboleth.json")
    ids = [DND5E.import_({"actor": actor, "token": {"uuid": f"Scene.sc1.Token.{t}",
                                                    "actorLink": False}},
                         "power-pool").combatant["id"] for t in ("tk1", "tk2")]
    assert ids == ["shhHtE7b92PefCWB-tk1", "shhHtE7b92PefCWB-tk2"]
    linked = DND5E.import_({"actor": actor, "token": {"uuid": "Scene.sc1.Token.tk1",
                                                      "actorLink": True}}, "power-pool")
    assert linked.combatant["id"] == "shhHtE7b92PefCWB"


def test_an_unlinked_copys_id_is_actor_dash_token_up_to_64_characters() -> None:
    """docs/ADAPTERS.md: an unlinked copy's combatant id is ``<actor id>-<token id>``;
    an id is at most 64 characters, so one that would be longer is the token's id
    alone (unique on its scene), and one of exactly 64 is kept whole."""
    actor = load("foundry/dnd5e/aboleth.json")
    token = "tk" + "1" * 14
    for length, expected in ((47, None), (48, token)):
        actor["_id"] = "a" * length
        data = {"actor": actor, "token": {"uuid": f"Scene.sc1.Token.{token}",
                                          "actorLink": False}}
        got = DND5E.import_(data, "power-pool").combatant["id"]
        assert got == (expected or f"{actor['_id']}-{token}"), length
        assert len(got) <= 64


def test_a_token_name_names_the_combatant() -> None:
    """docs/ADAPTERS.md: the token's name, when given, names the combatant: an unlinked
    token's synthetic actor keeps its base actor's name, and the table knows each copy
    by its token ("Skum", not "Aboleth"); the write-back still goes to the copy."""
    actor = load("foundry/dnd5e/aboleth.json")
    token = {"uuid": "Scene.sc1.Token.tk1", "actorLink": False, "name": "Skum"}
    data = {"actor": actor, "token": token}
    got = DND5E.import_(data, "power-pool").combatant
    assert (got["id"], got["name"]) == ("shhHtE7b92PefCWB-tk1", "Skum")
    assert DND5E.updates(data, "power-pool", got, {**got, "pool": 1})[0]["uuid"] == \
        "Scene.sc1.Token.tk1.Actor.shhHtE7b92PefCWB"
    linked = {"actor": actor, "token": {**token, "actorLink": True, "name": "Old One"}}
    assert DND5E.import_(linked, "power-pool").combatant["name"] == "Old One"
    # No name, or a blank one: the actor's.
    for shown in (None, "  "):
        plain = {"actor": actor, "token": {**token, "name": shown}}
        assert DND5E.import_(plain, "power-pool").combatant["name"] == actor["name"]
    with pytest.raises(InvalidInput) as err:
        DND5E.import_({"actor": actor, "token": {**token, "name": ["Skum"]}}, "power-pool")
    assert err.value.problems[0].path == "/token/name"


def test_token_uuid_must_name_scene_and_token() -> None:
    data = {"actor": zanna(), "token": {"uuid": "Actor.x", "actorLink": False}}
    with pytest.raises(InvalidInput) as err:
        DND5E.import_(data, "revised-2e")
    assert err.value.problems[0].path == "/token/uuid"


def test_an_actor_id_that_is_not_1_to_64_letters_digits_dash_or_underscore_is_refused(
        ) -> None:
    """The actor's ``_id`` names the combatant and the uuid written to (docs/ADAPTERS.md
    "Foundry"): it must be 1-64 letters, digits, '-' or '_' as a whole, not only begin
    with them."""
    for bad in ("shhHtE7b92Pe CWB", "shhHtE7b92PefCWB/x", "a" * 65):
        data = load("foundry/dnd5e/aboleth.json")
        data["_id"] = bad
        with pytest.raises(InvalidInput) as err:
            DND5E.import_(data, "power-pool")
        assert err.value.problems[0].path == "/_id", bad
    data = load("foundry/dnd5e/aboleth.json")
    data["_id"] = "a" * 64
    assert DND5E.import_(data, "power-pool").combatant["id"] == "a" * 64


def test_an_actor_without_a_name_is_named_by_its_id_with_a_warning() -> None:
    """A combatant needs a name for the chat cards: an actor whose name is missing or
    blank takes its ``_id``, and the GM is told."""
    for name in (None, "", "   "):
        data = load("foundry/dnd5e/aboleth.json")
        data["name"] = name
        got = DND5E.import_(data, "power-pool")
        assert got.combatant["name"] == "shhHtE7b92PefCWB", name
        assert "the actor has no name; using its id shhHtE7b92PefCWB" in got.warnings


def test_a_combatant_is_named_without_the_spaces_around_its_name() -> None:
    """The name shown in summaries and chat cards is the actor's or token's name as the
    table reads it (docs/ADAPTERS.md "Foundry"): spaces around it are not part of it,
    for an unlinked copy, a linked token or a bare actor alike."""
    actor = load("foundry/dnd5e/aboleth.json")
    token = {"uuid": "Scene.sc1.Token.tk1", "actorLink": False, "name": "  Skum "}
    for data in ({"actor": actor, "token": token},
                 {"actor": actor, "token": {**token, "actorLink": True}}):
        assert DND5E.import_(data, "power-pool").combatant["name"] == "Skum"
    actor["name"] = " Aboleth  "
    assert DND5E.import_(actor, "power-pool").combatant["name"] == "Aboleth"
    unlinked = {"actor": actor, "token": {**token, "name": None}}
    assert DND5E.import_(unlinked, "power-pool").combatant["name"] == "Aboleth"


def test_a_token_that_does_not_say_it_is_linked_is_an_unlinked_copy() -> None:
    """Foundry's token data has actorLink false unless set: a token sent without it is
    written as its own synthetic actor (docs/ADAPTERS.md: updating the base actor would
    change every copy), and is a combatant of its own."""
    actor = load("foundry/dnd5e/aboleth.json")
    data = {"actor": actor, "token": {"uuid": "Scene.sc1.Token.tk1"}}
    got = DND5E.import_(data, "power-pool").combatant
    assert got["id"] == "shhHtE7b92PefCWB-tk1"
    assert DND5E.written_to(data, "power-pool")["uuid"] == \
        "Scene.sc1.Token.tk1.Actor.shhHtE7b92PefCWB"


def test_an_unlinked_token_uuid_is_refused_unless_it_is_the_whole_uuid_of_this_actor(
        ) -> None:
    """docs/ADAPTERS.md: ``token.uuid`` must be ``Scene.<s>.Token.<t>`` or that followed
    by ``.Actor.<actor id>``: text after it, or another actor's id there, would send the
    write-back somewhere else; the actor's own id is accepted."""
    actor = load("foundry/dnd5e/aboleth.json")
    for uuid in ("Scene.sc1.Token.tk1.Item.it1", "Scene.sc1.Token.tk1 ",
                 "Scene.sc1.Token.tk1.Actor.someOtherActor1"):
        data = {"actor": actor, "token": {"uuid": uuid, "actorLink": False}}
        with pytest.raises(InvalidInput) as err:
            DND5E.import_(data, "power-pool")
        assert err.value.problems[0].path == "/token/uuid", uuid
    own = {"actor": actor, "token": {"uuid": "Scene.sc1.Token.tk1.Actor.shhHtE7b92PefCWB",
                                     "actorLink": False}}
    assert DND5E.written_to(own, "power-pool")["uuid"] == \
        "Scene.sc1.Token.tk1.Actor.shhHtE7b92PefCWB"


def test_an_object_with_an_id_is_the_actor_itself_never_an_envelope() -> None:
    """docs/ADAPTERS.md "Foundry": the input is the actor object or the envelope
    ``{"actor", "token"?}``; an object with its own ``_id`` is an actor, so an actor
    that lacks its system data is refused as such, whatever other member it holds."""
    inner = load("foundry/dnd5e/aboleth.json")
    data = {"_id": "outerActor000001", "name": "Outer", "type": "npc", "actor": inner}
    with pytest.raises(InvalidInput) as err:
        DND5E.import_(data, "power-pool")
    assert err.value.problems[0].path == "/system"


def test_an_actor_without_system_data_is_refused_saying_so() -> None:
    """Abilities, level and hit points come from the game system's own data
    (docs/ADAPTERS.md "What every adapter does"): an actor without it, or with null
    there, is refused at ``/system`` saying what is missing."""
    for system in (None, "absent"):
        data = load("foundry/dnd5e/aboleth.json")
        if system is None:
            data["system"] = None
        else:
            del data["system"]
        with pytest.raises(InvalidInput) as err:
            DND5E.import_(data, "power-pool")
        assert err.value.problems[0].path == "/system"
        assert "the actor has no system data" in err.value.problems[0].message


def test_unknown_system_is_refused_clearly() -> None:
    with pytest.raises(InvalidInput) as err:
        DND5E.import_(zanna(), "gurps-psi")
    assert err.value.problems[0].path == "/system"
    assert "revised-2e" in err.value.problems[0].message


def test_update_round_trip_restores_the_after_state() -> None:
    data = zanna()
    data["flags"]["mindscape"] = {"power-pool": {"psionic": True,
                                                 "attacks": ["mental-stab"]}}
    before = DND5E.import_(data, "power-pool").combatant
    after = {**before, "pool": 0, "conditions": ["stunned"], "controlled_by": "aboleth",
             "hp": 3}
    again = DND5E.import_(apply_foundry(data, DND5E.updates(data, "power-pool", before,
                                                             after)), "power-pool")
    assert again.combatant == after


# -- OSE ----------------------------------------------------------------------------
def test_ose_monster_without_scores_gets_documented_defaults() -> None:
    """VTT.md: "OSE monsters have no ability scores, only hp.hd" (template: "1d8")."""
    actor = template_actor("foundry/ose/template.json", "monster", "oseMonster000001",
                           "Goblin")
    got = OSE.import_(actor, "revised-2e")
    c = got.combatant
    assert (c["int"], c["wis"], c["con"]) == (10, 10, 10)
    assert (c["level"], c["hp"], c["class_group"]) == (1, 20, "monster")
    assert any("no ability scores" in w for w in got.warnings)
    pool = OSE.import_(actor, "power-pool").combatant
    assert (pool["hit_dice"], pool["die"], pool["hp"]) == (1, 8, 20)


def test_ose_character_reads_scores_level_and_hit_die() -> None:
    """Template defaults: level 1, hp.hd "1d8", hp 20; unset scores (0) default to 10."""
    actor = template_actor("foundry/ose/template.json", "character", "oseChar000000001",
                           "Aelfric")
    got = OSE.import_(actor, "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (1, 8)
    assert not any("score" in w for w in got.warnings)  # power-pool uses no scores
    got = OSE.import_(actor, "revised-2e")
    assert (got.combatant["int"], got.combatant["wis"]) == (10, 10)
    assert any("no int score" in w for w in got.warnings)
    actor["system"]["scores"]["int"]["value"] = 16
    actor["system"]["scores"]["wis"]["value"] = 12
    actor["system"]["details"]["level"] = 5
    actor["system"]["hp"]["hd"] = "1d6"
    c = OSE.import_(actor, "revised-2e").combatant
    assert (c["int"], c["wis"], c["con"], c["level"]) == (16, 12, 10, 5)
    assert OSE.import_(actor, "power-pool").combatant["die"] == 6


def test_an_ose_hit_die_not_read_refuses_only_a_power_pool_import_without_a_stored_die(
) -> None:
    """docs/ADAPTERS.md (foundry.ose ``die``): ``hp.hd`` with a die off the ladder
    ("3d7") is InvalidInput at /system/hp/hd only in power-pool with no die in
    flags.mindscape.power-pool.die; its count of 3 is read in every system (it refused
    every import, revised-2e's too)."""
    actor = template_actor("foundry/ose/template.json", "monster", "oseMonster000001",
                           "Goblin")
    actor["system"]["hp"]["hd"] = "3d7"
    assert OSE.import_(actor, "revised-2e").combatant["level"] == 3
    with pytest.raises(InvalidInput) as err:
        OSE.import_(actor, "power-pool")
    assert err.value.problems[0].path == "/system/hp/hd"
    actor["flags"] = {"mindscape": {"power-pool": {"die": 6}}}
    got = OSE.import_(actor, "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (3, 6)
    assert not any("die" in w for w in got.warnings), got.warnings


def test_ose_hit_points_write_back_to_hp_value() -> None:
    actor = template_actor("foundry/ose/template.json", "monster", "oseMonster000001",
                           "Goblin")
    before = OSE.import_(actor, "power-pool").combatant
    got = OSE.updates(actor, "power-pool", before, {**before, "hp": 14})
    assert got == [{"uuid": "Actor.oseMonster000001", "update": {"system.hp.value": 14}}]


# -- ARS ----------------------------------------------------------------------------
def test_ars_character_reads_abilities_paralyzation_save_and_level() -> None:
    """ARS template: abilities 10, saves.paralyzation 20, attributes.level 1 (read when
    no class item has levels, as here)."""
    actor = template_actor("foundry/ars/template.json", "character", "arsChar000000001",
                           "Dorn")
    c = ARS.import_(actor, "revised-2e").combatant
    assert (c["int"], c["wis"], c["con"], c["level"]) == (10, 10, 10, 1)
    assert (c["save_paralyzation"], c["hp"]) == (20, 0)
    actor["system"]["abilities"]["int"]["value"] = 17
    actor["system"]["saves"]["paralyzation"]["value"] = 13
    actor["system"]["attributes"]["level"]["value"] = 4
    c = ARS.import_(actor, "revised-2e").combatant
    assert (c["int"], c["save_paralyzation"], c["level"]) == (17, 13, 4)


# ARS keeps a character's level in its class items, never in attributes.level.value
# (acks2-arsbase 171feb4, src/module/actor: actor.js getClassLevel, "the length of the
# advancement array", and _getLevel('max'); actor-sheet.js _updateForLevelChange adds an
# advancement entry and writes saves, THAC0, AC, spell slots, never the level).
FIGHTER_HD = ["1d10"] * 9 + ["3"] * 11  # AD&D: d10 to 9th level, then +3 hit points each
PSIONICIST_HD = ["1d6"] * 11 + ["2"] * 9
THIEF_HD = ["1d6"] * 10 + ["2"] * 10


def ars_character(*classes: dict[str, Any], level: Any = 1) -> dict[str, Any]:
    """The template's character with ``classes`` as items (among other items) and the
    template's ``attributes.level.value``, which no level-up changes."""
    actor = template_actor("foundry/ars/template.json", "character", "arsChar000000001",
                           "Dorn")
    actor["system"]["attributes"]["level"]["value"] = level
    actor["items"] = [{"_id": "armor00000000001", "type": "armor", "name": "Leather",
                       "system": {"advancement": "not a class"}}, *classes]
    return actor


def test_an_ars_characters_level_is_the_number_of_its_class_advancement_entries() -> None:
    """actor.js getClassLevel: a class's level is its advancement entries' count; a
    7th-level psionicist whose attributes.level.value is the template's 1 is level 7,
    with the MTHAC0 (21 − level, RULES.md §1.1) and PSP-pool hit dice of level 7, and
    its hit die the one its rank for level 7 rolls (ranks[6].hdformula "1d6")."""
    actor = ars_character(ars_class("Psionicist", 7, PSIONICIST_HD))
    got = ARS.import_(actor, "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (7, "psionicist")
    assert not any("level" in w for w in got.warnings)
    engine = builtin_systems()["revised-2e"]
    psionic = engine.combatant({**got.combatant, "kind": "psionicist", "psp_max": 60})
    assert psionic["mthac0"] == 14
    pool = ARS.import_(actor, "power-pool").combatant
    assert (pool["hit_dice"], pool["die"]) == (7, 6)


def test_an_ars_character_with_several_classes_takes_the_highest_level_with_a_warning(
        ) -> None:
    """actor.js getMaxLevel (_getLevel('max')): the character's level is the highest of
    its classes' (the level ARS's attack matrix and effective level use). The hit die
    and class group are that class's: a Fighter 6 / Thief 4 rolls d10 and saves as a
    warrior."""
    actor = ars_character(ars_class("Thief", 4, THIEF_HD), ars_class("Fighter", 6, FIGHTER_HD))
    got = ARS.import_(actor, "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (6, "warrior")
    assert "several classes (Thief 4, Fighter 6); level 6 taken, the highest (Fighter)" \
        in got.warnings
    assert ARS.import_(actor, "power-pool").combatant["die"] == 10


ARS_LEVEL_TAKEN = "several classes (Thief 4, Fighter 6); level 6 taken, the highest (Fighter)"
ARS_GROUP_TAKEN = ("several classes (Thief 4, Fighter 6); class group warrior taken from the "
                   "class of the highest level (Fighter); "
                   "flags.mindscape.revised-2e.class_group sets it")


@pytest.mark.parametrize(("store", "said"), [
    ({}, {ARS_LEVEL_TAKEN, ARS_GROUP_TAKEN}),
    ({"level": 5}, {ARS_GROUP_TAKEN}),
    ({"class_group": "rogue"}, {ARS_LEVEL_TAKEN}),
    ({"level": 5, "class_group": "rogue"}, set()),
])
def test_the_class_taken_of_several_is_said_of_its_level_and_of_its_class_group_apart(
        store: dict[str, Any], said: set[str]) -> None:
    """docs/ADAPTERS.md: the class whose level is taken of several also gives the
    revised-2e class group, and each is said in a warning of its own, withdrawn when the
    state store sets what it explains: a store setting only the level (5) leaves no
    word of level 6 taken, but still says where the group came from; one setting only
    the group still says the level taken."""
    actor = ars_character(ars_class("Thief", 4, THIEF_HD), ars_class("Fighter", 6, FIGHTER_HD))
    actor["flags"] = {"mindscape": {"revised-2e": store}}
    got = ARS.import_(actor, "revised-2e")
    c = got.combatant
    assert (c["level"], c["class_group"]) == (store.get("level", 6),
                                              store.get("class_group", "warrior"))
    assert {w for w in got.warnings if w.startswith("several classes")} == said, got.warnings


def test_an_ars_power_pool_is_told_only_the_hit_dice_taken_of_several_classes() -> None:
    """power-pool has no class group: of several classes it is told only the Hit Dice
    taken, withdrawn when the store sets them (flags.mindscape.power-pool.hit_dice)."""
    actor = ars_character(ars_class("Thief", 4, THIEF_HD), ars_class("Fighter", 6, FIGHTER_HD))
    got = ARS.import_(actor, "power-pool")
    assert [w for w in got.warnings if w.startswith("several classes")] == [ARS_LEVEL_TAKEN]
    actor["flags"] = {"mindscape": {"power-pool": {"hit_dice": 5}}}
    got = ARS.import_(actor, "power-pool")
    assert got.combatant["hit_dice"] == 5
    assert not any(w.startswith("several classes") for w in got.warnings), got.warnings


def test_the_class_group_taken_of_classes_at_one_level_says_it_is_the_first_of_them(
        ) -> None:
    """docs/ADAPTERS.md: of classes at the highest level the first gives the class group
    (getMaxLevel's level is theirs alike), and the warning says it is the first of
    them, not the one class of that level: a Thief 6 / Fighter 6 is a rogue; a
    Fighter 6 / Thief 4 still names the class of the highest level."""
    actor = ars_character(ars_class("Thief", 6, THIEF_HD), ars_class("Fighter", 6, FIGHTER_HD))
    got = ARS.import_(actor, "revised-2e")
    assert got.combatant["class_group"] == "rogue"
    assert [w for w in got.warnings if "class group rogue" in w] == [
        "several classes (Thief 6, Fighter 6); class group rogue taken from the first of the "
        "classes of the highest level (Thief); flags.mindscape.revised-2e.class_group "
        "sets it"]


def test_a_multi_class_ars_psionicist_is_read_at_its_psionicist_level() -> None:
    """revised-2e counts PSPs, MTHAC0 and the modes known by the psionicist's level
    (RULES.md §1.1: psionicist MTHAC0 21 − level): a Fighter 6 / Psionicist 4 is read at
    level 4, class group psionicist, with a warning. power-pool has no psionicist class:
    its hit dice are the highest level's, as ARS's own (getMaxLevel)."""
    actor = ars_character(ars_class("Fighter", 6, FIGHTER_HD),
                          ars_class("Psionicist", 4, PSIONICIST_HD))
    got = ARS.import_(actor, "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (4, "psionicist")
    assert "several classes (Fighter 6, Psionicist 4); level 4 taken, the psionicist " \
        "class's (Psionicist)" in got.warnings
    assert "several classes (Fighter 6, Psionicist 4); class group psionicist taken from " \
        "the psionicist class (Psionicist); flags.mindscape.revised-2e.class_group sets it" \
        in got.warnings
    pool = ARS.import_(actor, "power-pool")
    assert (pool.combatant["hit_dice"], pool.combatant["die"]) == (6, 10)


def test_an_ars_power_pool_of_classes_at_one_level_rolls_their_largest_hit_die() -> None:
    """Seed 001: the pool is dice of one type, as many as the Hit Dice. Of classes with
    the most levels, the largest die, whatever the items' order (docs/ADAPTERS.md, as the
    dnd5e and Roll20 adapters take it): a Psionicist 5 / Fighter 5 rolls the fighter's
    d10 either way round (the first item's gave d6 one way, d10 the other)."""
    for classes in ((ars_class("Psionicist", 5, PSIONICIST_HD),
                     ars_class("Fighter", 5, FIGHTER_HD)),
                    (ars_class("Fighter", 5, FIGHTER_HD),
                     ars_class("Psionicist", 5, PSIONICIST_HD))):
        pool = ARS.import_(ars_character(*classes), "power-pool")
        assert (pool.combatant["hit_dice"], pool.combatant["die"]) == (5, 10)
    assert ("classes at level 5 with different hit dice (Fighter d10, Psionicist d6); the "
            "pool rolls the largest, d10") in pool.warnings


def test_a_pool_die_the_flags_set_is_taken_without_a_warning_on_the_sheet_s_die() -> None:
    """docs/ADAPTERS.md: the warnings about the hit die are about the one derived from
    the sheet; the flags' die (flags.mindscape.power-pool.die) overrides it, so none is
    given then (ARS said "the pool rolls the largest, d10" of a Psionicist 5 / Fighter
    5 whose pool rolls the flags' d6, and "assumed d8" of a class with no die; dnd5e
    the same of Wizard 5 / Fighter 5)."""
    derived = ("different hit dice", "assumed d8")
    for adapter, actor in (
            (ARS, ars_character(ars_class("Psionicist", 5, PSIONICIST_HD),
                                ars_class("Fighter", 5, FIGHTER_HD))),
            (ARS, ars_character(ars_class("Psionicist", 5, [""] * 20))),
            (DND5E, zanna_and_fighter(1))):
        got = adapter.import_(actor, "power-pool")
        assert any(text in w for w in got.warnings for text in derived), got.warnings
        actor.setdefault("flags", {})["mindscape"] = {"power-pool": {"die": "d6"}}
        got = adapter.import_(actor, "power-pool")
        assert got.combatant["die"] == 6
        assert not any(text in w for w in got.warnings for text in derived), got.warnings


def test_a_multi_class_ars_character_with_no_save_recorded_saves_with_its_best_class(
        ) -> None:
    """AD&D 2e (PHB, saving throws): a multi-class character uses the best saving throw
    of its classes, each at its own level (RULES.md §1.7). ARS keeps the save in
    saves.paralyzation.value, which wins; with none there, a Fighter 6 / Psionicist 4,
    read at its psionicist level 4, saves at its fighter's 11, not a psionicist's 13
    of level 4, and a Fighter 6 / Priest 5, read at level 6 as a warrior, at its
    priest's 9, not 11; said. One class alone is left to the engine."""
    actor = ars_character(ars_class("Fighter", 6, FIGHTER_HD),
                          ars_class("Psionicist", 4, PSIONICIST_HD))
    actor["system"]["saves"]["paralyzation"]["value"] = 13
    got = ARS.import_(actor, "revised-2e")
    assert got.combatant["save_paralyzation"] == 13
    assert not any(w.startswith("save vs. paralyzation") for w in got.warnings)
    del actor["system"]["saves"]["paralyzation"]
    got = ARS.import_(actor, "revised-2e")
    c = got.combatant
    assert (c["level"], c["class_group"], c["save_paralyzation"]) == (4, "psionicist", 11)
    assert ("save vs. paralyzation 11 from Fighter 6, the best of Fighter 6 / "
            "Psionicist 4 (flags.mindscape.revised-2e.save_paralyzation sets it)"
            ) in got.warnings
    actor = ars_character(ars_class("Fighter", 6, FIGHTER_HD),
                          ars_class("Priest", 5, ["1d8"] * 9 + ["2"] * 11))
    del actor["system"]["saves"]["paralyzation"]
    got = ARS.import_(actor, "revised-2e")
    c = got.combatant
    assert (c["level"], c["class_group"], c["save_paralyzation"]) == (6, "warrior", 9)
    assert ("save vs. paralyzation 9 from Priest 5, the best of Fighter 6 / Priest 5 "
            "(flags.mindscape.revised-2e.save_paralyzation sets it)") in got.warnings
    actor["items"].pop()
    assert "save_paralyzation" not in ARS.import_(actor, "revised-2e").combatant


def test_an_ars_characters_best_class_save_is_never_written_back() -> None:
    """Import, the engine's resolve and the write-back with its round trip: the PSPs
    spent go to the flags, the save derived from the class levels nowhere."""
    actor = ars_character(ars_class("Fighter", 6, FIGHTER_HD),
                          ars_class("Psionicist", 4, PSIONICIST_HD))
    del actor["system"]["saves"]["paralyzation"]
    actor["system"]["attributes"]["hp"]["value"] = 30
    actor["flags"] = {"mindscape": {"revised-2e": {
        "psp": 30, "psp_max": 30, "attacks": ["mind-thrust"]}}}
    target = load("foundry/dnd5e/aboleth.json")
    engine = builtin_systems()["revised-2e"]
    made = [ARS.import_(actor, "revised-2e").combatant,
            DND5E.import_(target, "revised-2e").combatant]
    result = engine.resolve({"attacker": made[0], "defender": made[1],
                             "attack": {"mode": "mind-thrust"}},
                            dice_source(None, 1)).to_json()
    side = result["attacker"]
    assert side["before"]["save_paralyzation"] == 11
    updates = ARS.updates(actor, "revised-2e", side["before"], side["after"],
                          normalise=engine.combatant)
    assert updates == [{"uuid": "Actor.arsChar000000001",
                        "update": {"flags.mindscape.revised-2e.psp": side["after"]["psp"]}}]
    again = engine.combatant(ARS.import_(apply_foundry(actor, updates),
                                         "revised-2e").combatant)
    assert again == side["after"]


def test_an_ars_character_without_class_levels_falls_back_to_its_level_with_a_warning(
        ) -> None:
    """No class item, or only one with no advancement entry yet (the template's
    ``advancement: []``): attributes.level.value is read, saying ARS does not update it;
    the class group still comes from the class item's name, the first one's of several
    (docs/ADAPTERS.md foundry.ars ``class_group``)."""
    got = ARS.import_(ars_character(level=3), "revised-2e")
    assert got.combatant["level"] == 3
    assert "no class item with levels (system.advancement); level taken as 3 from " \
        "system.attributes.level.value, which ARS does not update" in got.warnings
    actor = ars_character(ars_class("Psionicist", 0, PSIONICIST_HD), level=2)
    got = ARS.import_(actor, "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (2, "psionicist")
    del actor["system"]["attributes"]["level"]
    got = ARS.import_(actor, "revised-2e")
    assert got.combatant["level"] == 1
    assert "no class item with levels (system.advancement); level taken as 1" in got.warnings
    # of several class items with no levels, the first gives the class group
    actor["items"].insert(1, ars_class("Fighter", 0, FIGHTER_HD))
    assert ARS.import_(actor, "revised-2e").combatant["class_group"] == "warrior"


def test_an_ars_class_hit_die_is_the_last_one_its_ranks_roll_up_to_its_level() -> None:
    """_configureHealth rolls ranks[level − 1].hdformula at each level: past 9th level
    an AD&D fighter's rank adds "3" (no die), so a 12th-level fighter's die is the d10
    of its 9th rank; a formula the adapter cannot read (Foundry's ``max`` function) is
    passed over with a warning; no rank naming a die (no ranks at all) is d8 with a warning."""
    actor = ars_character(ars_class("Fighter", 12, FIGHTER_HD))
    assert ARS.import_(actor, "power-pool").combatant["die"] == 10
    ranks = actor["items"][1]["system"]["ranks"]
    ranks[8]["hdformula"] = "max(1d10, 5)"
    got = ARS.import_(actor, "power-pool")
    assert got.combatant["die"] == 10
    assert "Fighter's level 9 hit-dice formula \"max(1d10, 5)\" not read" in got.warnings
    del actor["items"][1]["system"]["ranks"]
    got = ARS.import_(actor, "power-pool")
    assert got.combatant["die"] == 8 and any("assumed d8" in w for w in got.warnings)


def test_an_ars_class_hit_die_is_never_taken_from_a_rank_above_its_level() -> None:
    """docs/ADAPTERS.md (foundry.ars ``die``): "the taken class's rank for its level ...,
    else of the nearest lower rank naming one": a 2nd-level character whose class
    rolls 1d6 to 2nd level and 1d10 from 3rd rolls d6, and one whose first ranks name
    no die has none to take from above (d8, with a warning); the 3rd level's d10 counts
    once it is reached."""
    actor = ars_character(ars_class("Oddity", 2, ["1d6", "1d6", "1d10"]))
    assert ARS.import_(actor, "power-pool").combatant["die"] == 6
    actor = ars_character(ars_class("Oddity", 2, ["3", "3", "1d10"]))
    got = ARS.import_(actor, "power-pool")
    assert got.combatant["die"] == 8 and any("assumed d8" in w for w in got.warnings)
    actor = ars_character(ars_class("Oddity", 3, ["1d6", "1d6", "1d10"]))
    assert ARS.import_(actor, "power-pool").combatant["die"] == 10
    # the nearest lower rank may be the first
    actor = ars_character(ars_class("Oddity", 2, ["1d4", "3", "1d10"]))
    assert ARS.import_(actor, "power-pool").combatant["die"] == 4


def test_ars_class_advancement_and_ranks_saved_as_objects_read_as_arrays() -> None:
    """The class sheet's form names its inputs ``system.ranks.{{index}}.hdformula`` and
    ``system.advancement.{{index}}.hp`` (src/templates/item/class-sheet.hbs), so a saved
    sheet may store either array as an object keyed "0", "1" ...; ARS reads both with
    ``Object.values``, whose order puts "10" after "9" whatever order the keys are
    stored in (here "0", "1", "10", "11" ... "19", "2" ...)."""
    fighter = ars_class("Fighter", 11, ["1d10"] * 9 + ["1d12", "3"] + ["3"] * 9)
    as_array = ARS.import_(ars_character(fighter), "power-pool").combatant
    system = fighter["system"]
    system["advancement"] = {str(n): e for n, e in reversed(list(enumerate(
        system["advancement"])))}
    system["ranks"] = dict(sorted((str(n), r) for n, r in enumerate(system["ranks"])))
    as_object = ARS.import_(ars_character(fighter), "power-pool").combatant
    assert as_object == as_array and (as_object["hit_dice"], as_object["die"]) == (11, 12)


def test_ars_class_items_that_are_not_what_ars_stores_are_invalid_input() -> None:
    for where, junk in (("advancement", 5), ("advancement", [{}] * 101), ("ranks", "1d6")):
        fighter = ars_class("Fighter", 3, FIGHTER_HD)
        fighter["system"][where] = junk
        with pytest.raises(InvalidInput) as err:
            ARS.import_(ars_character(fighter), "power-pool")
        assert err.value.problems[0].path == f"/items/1/system/{where}"
    # A rank's formula that is no text is refused at its place; only text (which the
    # class sheet takes, whatever it is) is passed over with a warning.
    for junk in (["1d10"], {"formula": "1d10"}, True):
        fighter = ars_class("Fighter", 3, FIGHTER_HD)
        fighter["system"]["ranks"][2]["hdformula"] = junk
        with pytest.raises(InvalidInput) as err:
            ARS.import_(ars_character(fighter), "power-pool")
        assert err.value.problems[0].path == "/items/1/system/ranks/2/hdformula", junk


def test_an_ars_class_rank_is_read_only_for_a_power_pool_s_die() -> None:
    """Only power-pool rolls a hit die (docs/ADAPTERS.md: every warning about it "only
    in power-pool, the one system that rolls it"): a rank's formula that is no text is
    refused there, at its place, for a class whose die the pool may take (the most
    levels), but read in no other system (revised-2e refused a Psionicist 5 / Fighter 5
    over the fighter's ranks), nor for a class of fewer levels, whose die the pool
    never takes."""
    fighter = ars_class("Fighter", 5, FIGHTER_HD)
    fighter["system"]["ranks"][4]["hdformula"] = {"x": 1}
    actor = ars_character(ars_class("Psionicist", 5, PSIONICIST_HD), fighter)
    assert ARS.import_(actor, "revised-2e").combatant["level"] == 5
    assert "die" not in ARS.import_(actor, "combat-strength").combatant
    with pytest.raises(InvalidInput) as err:
        ARS.import_(actor, "power-pool")
    assert err.value.problems[0].path == "/items/2/system/ranks/4/hdformula"
    actor = ars_character(ars_class("Psionicist", 6, PSIONICIST_HD), fighter)
    got = ARS.import_(actor, "power-pool").combatant
    assert (got["hit_dice"], got["die"]) == (6, 6)


def test_an_ars_hit_die_not_read_refuses_no_import_whose_store_sets_the_die() -> None:
    """docs/ADAPTERS.md (foundry.ars ``die``): the hit die is read only for power-pool,
    and there the store's die wins: a rank's formula that is no text, or an NPC's
    ``system.hitdice`` with a die off the ladder ("3d7", whose count of 3 is still read),
    is InvalidInput at its place only in power-pool with no die in
    flags.mindscape.power-pool.die; with one there, that die is taken without any
    warning about the sheet's (each refused the import), and a revised-2e NPC's
    "3d7" is 3 Hit Dice (it refused that import too)."""
    fighter = ars_class("Fighter", 3, FIGHTER_HD)
    fighter["system"]["ranks"][2]["hdformula"] = {"x": 1}
    character = ars_character(fighter)
    npc = template_actor("foundry/ars/template.json", "npc", "arsNpc0000000001", "Orc")
    npc["system"]["hitdice"] = "3d7"
    assert ARS.import_(npc, "revised-2e").combatant["level"] == 3
    for actor, where in ((character, "/items/1/system/ranks/2/hdformula"),
                         (npc, "/system/hitdice")):
        with pytest.raises(InvalidInput) as err:
            ARS.import_(actor, "power-pool")
        assert err.value.problems[0].path == where
        actor["flags"] = {"mindscape": {"power-pool": {"die": 6}}}
        got = ARS.import_(actor, "power-pool")
        assert (got.combatant["hit_dice"], got.combatant["die"]) == (3, 6)
        assert not any("die" in w for w in got.warnings), got.warnings


def test_ars_npc_hit_dice_from_hitdice_text() -> None:
    """Creature template: hitdice "1"; AD&D monster entries such as "3+3"."""
    actor = template_actor("foundry/ars/template.json", "npc", "arsNpc0000000001", "Orc")
    got = ARS.import_(actor, "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (1, 8)
    assert any("assumed d8" in w for w in got.warnings)
    actor["system"]["hitdice"] = "3+3"
    c = ARS.import_(actor, "revised-2e").combatant
    assert (c["level"], c["class_group"]) == (3, "monster")


NO_HIT_POINTS = ("no hit points on the sheet yet (system.attributes.hp.value and .max are "
                 "both 0): it comes in with 0 hit points, down; roll or enter them on the "
                 "sheet")


def test_an_ars_actor_whose_hit_points_are_not_rolled_comes_in_down_said() -> None:
    """ARS creates an actor with hit points 0 of 0 (the template's ``attributes.hp``) and
    fills them in when they are rolled: imported as they stand the creature is down
    (COMBATANTS.md ``hp``: at 0 or fewer), so the GM is told, in each system with hit
    points, naming the sheet's place. None are made up (hit points are the sheet's
    only). A creature wounded to 0 of a maximum, or with hit points and no maximum, is
    not such a sheet: nothing said."""
    npc = template_actor("foundry/ars/template.json", "npc", "arsNpc0000000001", "Orc")
    character = template_actor("foundry/ars/template.json", "character", "arsChar000000001",
                               "Ars")
    for actor in (npc, character):
        for system in ("revised-2e", "power-pool"):
            got = ARS.import_(actor, system)
            assert got.combatant["hp"] == 0
            assert NO_HIT_POINTS in got.warnings, got.warnings
            assert ARS.import_(ARS.trimmed(actor, system), system) == got
        assert not any("hit points" in w
                       for w in ARS.import_(actor, "combat-strength").warnings)
    npc["system"]["attributes"]["hp"].update(value=0, max=9)
    got = ARS.import_(npc, "revised-2e")
    assert got.combatant["hp"] == 0 and not any("hit points" in w for w in got.warnings)
    npc["system"]["attributes"]["hp"].update(value=7, max=0)  # a max ARS left behind
    got = ARS.import_(npc, "revised-2e")
    assert got.combatant["hp"] == 7 and not any("hit points" in w for w in got.warnings)


@pytest.mark.parametrize("hp_max", ["many", 7.5, -3, True, {"x": 1}, [0], None, "", "absent"])
def test_an_ars_hp_max_the_adapter_cannot_read_refuses_nothing(hp_max: Any) -> None:
    """``hp.max`` is read only to tell hit points never rolled (0 of 0, above); nothing
    Mindscape does uses it, and ARS's data (a template.json system) holds whatever a form,
    a macro or an import wrote there: a value that is no whole number of 0 or more is not
    0, so the actor comes in as it did before the adapter read it, with nothing said.
    0 as text or as 0.0 is 0."""
    npc = template_actor("foundry/ars/template.json", "npc", "arsNpc0000000001", "Orc")
    hp = npc["system"]["attributes"]["hp"]
    if hp_max == "absent":
        del hp["max"]
    else:
        hp["max"] = hp_max
    got = ARS.import_(npc, "revised-2e")
    assert got.combatant["hp"] == 0 and NO_HIT_POINTS not in got.warnings
    assert ARS.import_(ARS.trimmed(npc, "revised-2e"), "revised-2e") == got
    for zero in ("0", " 0 ", 0.0):
        hp["max"] = zero
        assert NO_HIT_POINTS in ARS.import_(npc, "revised-2e").warnings


@pytest.mark.parametrize(("adapter", "kind"), [(DND5E, "vehicle"), (DND5E, "group"),
                                               (OSE, "npc"), (OSE, None)])
def test_a_dnd5e_or_ose_actor_of_another_type_has_no_mind(
        adapter: adapters.Adapter, kind: str | None) -> None:
    """docs/ADAPTERS.md: a dnd5e actor's ``type`` "must be ``character`` or ``npc``
    (vehicles and groups have no mind)"; an OSE actor is a character or a monster."""
    actor = (zanna() if adapter is DND5E else
             template_actor("foundry/ose/template.json", "character", "ose1", "Rolf"))
    actor["type"] = kind
    with pytest.raises(InvalidInput) as err:
        adapter.import_(actor, "revised-2e")
    assert err.value.problems[0].path == "/type"


def test_ars_lootable_has_no_mind() -> None:
    actor = template_actor("foundry/ars/template.json", "lootable", "arsLoot000000001",
                           "Chest")
    with pytest.raises(InvalidInput) as err:
        ARS.import_(actor, "revised-2e")
    assert err.value.problems[0].path == "/type"


# -- generic --------------------------------------------------------------------------
MAPPING = {
    "version": 1,
    "fields": {
        "int": "system.abilities.int.value",
        "wis": "system.abilities.wis.value",
        "hp": "system.attributes.hp.value",
        "hit_dice": {"path": "system.attributes.hp.formula", "parse": "dice-count"},
        "die": {"path": "system.attributes.hp.formula", "parse": "hit-die"},
    },
    "systems": {"revised-2e": {"level": {"path": "system.details.level", "default": 7}}},
    "npc_types": ["npc"],
}


def test_generic_mapping_reads_dotted_paths() -> None:
    actor = load("foundry/dnd5e/aboleth.json")
    data = {"mapping": MAPPING, "actor": actor}
    pool = GENERIC.import_(data, "power-pool").combatant
    assert (pool["hit_dice"], pool["die"], pool["hp"]) == (18, 10, 135)
    c = GENERIC.import_(data, "revised-2e").combatant
    assert (c["int"], c["wis"], c["level"], c["class_group"]) == (18, 15, 7, "monster")


def test_generic_writes_mapped_paths_and_never_derived_ones() -> None:
    data = {"mapping": MAPPING, "actor": load("foundry/dnd5e/aboleth.json")}
    before = GENERIC.import_(data, "power-pool").combatant
    got = GENERIC.updates(data, "power-pool", before,
                          {**before, "hp": 99, "hit_dice": 17, "pool": 16})
    assert got == [{"uuid": "Actor.shhHtE7b92PefCWB", "update": {
        "system.attributes.hp.value": 99, "flags.mindscape.power-pool.pool": 16}}]


def test_where_a_foundry_write_back_goes_names_the_uuid_and_the_mapping() -> None:
    """docs/ADAPTERS.md: ``written_to`` says where the updates go, "Foundry the actor's
    or an unlinked token's uuid and the mapping", so ``encounter.refresh`` keeps a sheet
    whose mapping now sends a field elsewhere."""
    actor = load("foundry/dnd5e/aboleth.json")
    data = {"mapping": MAPPING, "actor": actor,
            "token": {"uuid": "Scene.sc1.Token.tk1", "actorLink": False}}
    assert GENERIC.written_to(data, "power-pool") == {
        "uuid": "Scene.sc1.Token.tk1.Actor.shhHtE7b92PefCWB", "mapping": MAPPING}
    assert DND5E.written_to(actor, "power-pool") == {"uuid": "Actor.shhHtE7b92PefCWB",
                                                     "mapping": None}


def test_generic_mapping_is_checked_against_its_schema() -> None:
    data = {"mapping": {"fields": {"psp": {"path": "a..b"}}}, "actor": zanna()}
    with pytest.raises(InvalidInput) as err:
        GENERIC.import_(data, "revised-2e")
    assert err.value.problems[0].path.startswith("/mapping/fields/psp")
    with pytest.raises(InvalidInput) as err:
        GENERIC.import_({"mapping": {"fields": {"telepathy": "x"}}, "actor": zanna()},
                        "revised-2e")
    assert err.value.problems[0].path.startswith("/mapping/fields")
    with pytest.raises(InvalidInput) as err:
        GENERIC.import_(zanna(), "revised-2e")
    assert err.value.problems[0].path == "/mapping"


@pytest.mark.parametrize("source,path,message", [
    ({"path": "a..b"}, "/mapping/fields/psp/path", '"a..b" does not match '),
    ("a..b", "/mapping/fields/psp", '"a..b" does not match '),
    ({"path": "system.psp", "parse": "bogus"}, "/mapping/fields/psp/parse",
     '"bogus" is not one of ["value", "dice-count", "hit-die", "intelligence"]'),
    ({"path": "system.psp", "write": "yes"}, "/mapping/fields/psp/write",
     '"yes" is not of type "boolean"'),
    ({"path": "system.psp", "writ": True}, "/mapping/fields/psp",
     'unexpected member(s) ["writ"]: not allowed here'),
    ({"parse": "value"}, "/mapping/fields/psp", '"path" is a required property'),
    (3, "/mapping/fields/psp", '3 is not of type "string" or "object"'),
])
def test_a_mapping_source_that_is_wrong_is_named_at_its_member_with_the_rule(
        source: Any, path: str, message: str) -> None:
    """docs/ADAPTERS.md: the mapping is checked against its schema and "errors name
    /mapping/...": a field's source (a path, or {path, parse?, default?, write?}) that is
    wrong is named at the member that is wrong, with the rule, in JSON's words; not as the
    whole source being "not valid under any of the given schemas"."""
    data = {"mapping": {"fields": {"psp": source}}, "actor": zanna()}
    with pytest.raises(InvalidInput) as err:
        GENERIC.import_(data, "revised-2e")
    [problem] = err.value.problems
    assert (problem.path, problem.message[:len(message)]) == (path, message)


def test_the_foundry_modules_envelope_with_no_token_updates_the_base_actor() -> None:
    """vtt-module's combatantRef sends {actor: actor.toObject(), token: null} when no
    token was used."""
    data = {"actor": zanna(), "token": None}
    before = DND5E.import_(data, "revised-2e").combatant
    assert before["id"] == "4Jsv5vYaJ1atUEDV"
    got = DND5E.updates(data, "revised-2e", before, {**before, "hp": 7})
    assert got == [{"uuid": "Actor.4Jsv5vYaJ1atUEDV",
                    "update": {"system.attributes.hp.value": 7}}]
    assert apply_foundry(data, got)["actor"]["system"]["attributes"]["hp"]["value"] == 7


# -- audit fixes ----------------------------------------------------------------------
def test_dnd5e_temporary_hit_points_are_lost_first() -> None:
    """dnd5e's hp.temp is "Temporary HP applied on top of value": the combatant has both
    (Zanna 8 + 10), and damage (power-pool Synaptic Overload lowers hp) comes off
    hp.temp first, then hp.value; each is written when it changes."""
    data = zanna()
    data["system"]["attributes"]["hp"]["temp"] = 10
    before = DND5E.import_(data, "power-pool").combatant
    assert before["hp"] == 18
    small = DND5E.updates(data, "power-pool", before, {**before, "hp": 15})
    assert small == [{"uuid": "Actor.4Jsv5vYaJ1atUEDV",
                      "update": {"system.attributes.hp.temp": 7}}]
    big = DND5E.updates(data, "power-pool", before, {**before, "hp": 5})
    assert big == [{"uuid": "Actor.4Jsv5vYaJ1atUEDV",
                    "update": {"system.attributes.hp.temp": 0,
                               "system.attributes.hp.value": 5}}]
    for got, left in ((small, 15), (big, 5)):
        assert DND5E.import_(apply_foundry(data, got), "power-pool").combatant["hp"] == left
    healed = DND5E.updates(data, "power-pool", before, {**before, "hp": 20})
    assert healed[0]["update"] == {"system.attributes.hp.value": 10}


def test_dnd5e_a_loss_of_exactly_the_temporary_hit_points_writes_only_hp_temp() -> None:
    """docs/ADAPTERS.md (foundry.dnd5e ``hp``): a loss comes off ``hp.temp`` first, then
    ``hp.value``, "and each is written when it changes": Zanna's 10 temporary hit points
    all lost leave her 8 in ``hp.value`` untouched."""
    data = zanna()
    data["system"]["attributes"]["hp"]["temp"] = 10
    before = DND5E.import_(data, "power-pool").combatant
    got = DND5E.updates(data, "power-pool", before, {**before, "hp": 8})
    assert got == [{"uuid": "Actor.4Jsv5vYaJ1atUEDV",
                    "update": {"system.attributes.hp.temp": 0}}]


@pytest.mark.parametrize(("formula", "hit_dice", "die"), [
    ("2d8 + 1d6", 3, 8), ("3d8+2+1", 3, 8), ("(18d10) + 36", 18, 10),
    ("4d8 + @abilities.con.mod", 4, 8)])
def test_dnd5e_npc_hit_point_formulas_dnd5e_rolls_give_their_dice(
        formula: str, hit_dice: int, die: int) -> None:
    """dnd5e's hp.formula is a roll formula: every one it rolls that names dice gives
    those dice as the Hit Dice (several sizes: the die rolled most, with a warning)."""
    data = load("foundry/dnd5e/aboleth.json")
    data["system"]["attributes"]["hp"]["formula"] = formula
    got = DND5E.import_(data, "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (hit_dice, die)
    assert any("several sizes" in w for w in got.warnings) == (formula == "2d8 + 1d6")


def aboleth_with_hp_formula(formula: str) -> Any:
    """The dnd5e aboleth, its hit-point formula ``formula``, read for power-pool."""
    data = load("foundry/dnd5e/aboleth.json")
    data["system"]["attributes"]["hp"]["formula"] = formula
    return DND5E.import_(data, "power-pool")


def assert_challenge_rating_taken_for(formula: str) -> None:
    """The aboleth's ``formula`` is not read: its challenge rating gives 10 Hit Dice of
    d8, with the warning that says so."""
    got = aboleth_with_hp_formula(formula)
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (10, 8)
    assert f'hit-point formula "{formula}" not read; Hit Dice taken as 10 from the ' \
        "challenge rating" in got.warnings


def test_dnd5e_npc_with_a_blank_formula_is_said_to_have_none() -> None:
    """docs/ADAPTERS.md (foundry.dnd5e): "no formula ...: the challenge rating" with a
    warning; a formula of spaces is no formula, and is said so."""
    data = load("foundry/dnd5e/aboleth.json")
    data["system"]["attributes"]["hp"]["formula"] = "   "
    got = DND5E.import_(data, "power-pool")
    assert got.combatant["hit_dice"] == 10
    assert "no hit-point formula; Hit Dice taken as 10 from the challenge rating" in \
        got.warnings


def test_dnd5e_npc_challenge_ratings_past_30_give_as_many_hit_dice() -> None:
    """docs/ADAPTERS.md (foundry.dnd5e): without a formula the challenge rating gives
    the Hit Dice; a homebrew CR past the books' 30 counts as it is, and one past 100 is
    refused at its place."""
    data = load("foundry/dnd5e/aboleth.json")
    data["system"]["attributes"]["hp"]["formula"] = ""
    data["system"]["details"]["cr"] = 35
    assert DND5E.import_(data, "power-pool").combatant["hit_dice"] == 35
    data["system"]["details"]["cr"] = 101
    with pytest.raises(InvalidInput) as err:
        DND5E.import_(data, "power-pool")
    assert err.value.problems[0].path == "/system/details/cr"


def test_dnd5e_npc_formula_the_adapter_cannot_read_falls_back_to_the_challenge_rating(
        ) -> None:
    """docs/ADAPTERS.md (foundry.dnd5e): as with no formula, the challenge rating gives
    the Hit Dice, with a warning, instead of refusing the monster."""
    assert_challenge_rating_taken_for("max(18d10, 100)")
    got = aboleth_with_hp_formula("3d7 + 2")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (3, 8)
    assert any("for its die; assumed d8" in w for w in got.warnings)


def test_a_save_vs_paralyzation_of_1_is_read_from_ars_and_ose() -> None:
    """COMBATANTS.md: save_paralyzation is 1-20 (a high-level character's 1)."""
    ars = template_actor("foundry/ars/template.json", "character", "arsChar000000001", "D")
    ars["system"]["saves"]["paralyzation"]["value"] = 1
    assert ARS.import_(ars, "revised-2e").combatant["save_paralyzation"] == 1
    ose = template_actor("foundry/ose/template.json", "character", "oseChar000000001", "A")
    ose["system"]["saves"]["paralysis"]["value"] = 1
    assert OSE.import_(ose, "revised-2e").combatant["save_paralyzation"] == 1


def test_a_save_vs_paralyzation_of_20_is_read_and_one_past_it_is_not() -> None:
    """docs/ADAPTERS.md (foundry.ose): ``save_paralyzation`` is ``saves.paralysis.value``
    "when 1–20 (the template's 0 is unset)": 20 is read, 0 and 21 leave it to the
    engine; ARS's box takes 1-20 and refuses more."""
    ose = template_actor("foundry/ose/template.json", "character", "oseChar000000001", "A")
    for value, read in ((20, 20), (0, None), (21, None)):
        ose["system"]["saves"]["paralysis"]["value"] = value
        got = OSE.import_(ose, "revised-2e").combatant
        assert got.get("save_paralyzation") == read, value
    ars = template_actor("foundry/ars/template.json", "character", "arsChar000000001", "D")
    ars["system"]["saves"]["paralyzation"]["value"] = 20
    assert ARS.import_(ars, "revised-2e").combatant["save_paralyzation"] == 20
    ars["system"]["saves"]["paralyzation"]["value"] = 21
    with pytest.raises(InvalidInput) as err:
        ARS.import_(ars, "revised-2e")
    assert err.value.problems[0].path == "/system/saves/paralyzation/value"


def test_an_ose_save_vs_paralyzation_outside_1_to_20_is_ignored_with_a_warning() -> None:
    """docs/ADAPTERS.md (foundry.ose): a save set outside 1–20 is left to the engine, as
    the template's unset 0 is, but unlike 0 it was set: the GM is told where it is and
    why it is not read, as the adapters say of other sheet values they drop; the store's
    own save withdraws the warning, as nothing is then derived."""
    ose = template_actor("foundry/ose/template.json", "character", "oseChar000000001", "A")
    ose["system"]["saves"]["paralysis"]["value"] = 21
    got = OSE.import_(ose, "revised-2e")
    assert "save_paralyzation" not in got.combatant
    said = [w for w in got.warnings if "system.saves.paralysis.value" in w]
    assert said == ["save vs. paralyzation 21 in system.saves.paralysis.value is not 1 to "
                    "20; ignored, the engine derives the save from the class group and "
                    "level (flags.mindscape.revised-2e.save_paralyzation sets it)"]
    for value in (0, 20):
        ose["system"]["saves"]["paralysis"]["value"] = value
        assert not any("paralysis" in w for w in OSE.import_(ose, "revised-2e").warnings)
    ose["system"]["saves"]["paralysis"]["value"] = 21
    ose["flags"] = {"mindscape": {"revised-2e": {"save_paralyzation": 12}}}
    stored = OSE.import_(ose, "revised-2e")
    assert stored.combatant["save_paralyzation"] == 12
    assert not any("paralysis" in w for w in stored.warnings)
    # combat-strength and power-pool have no such save: nothing to say
    assert not any("paralysis" in w for w in OSE.import_(ose, "power-pool").warnings)


def test_a_bad_class_identifier_is_reported_where_it_is() -> None:
    data = zanna()
    index = next(i for i, item in enumerate(data["items"]) if item["type"] == "class")
    data["items"][index]["system"]["identifier"] = ["wizard"]
    with pytest.raises(InvalidInput) as err:
        DND5E.import_(data, "revised-2e")
    assert err.value.problems[0].path == f"/items/{index}/system/identifier"


def test_a_class_with_an_empty_identifier_takes_its_name() -> None:
    """dnd5e fills a class's identifier from its name; one left as `""` (items made
    before identifiers, or cleared by hand) is read by the item's name instead, so
    Zanna's Wizard still gives the wizard class group (RULES.md §1.1)."""
    data = zanna()
    for item in data["items"]:
        if item["type"] == "class":
            item["system"]["identifier"] = ""
    assert DND5E.import_(data, "revised-2e").combatant["class_group"] == "wizard"


def test_a_class_whose_identifier_names_no_known_class_is_read_by_its_name() -> None:
    """dnd5e makes a class's identifier from the name it was created with: a class made
    as "Mystic" and named Psionicist, or a homebrew identifier, is read by its name when
    the identifier names no class the adapter knows, for the level the psionic rules
    count (RULES.md §1.1), the class group and the best class save alike (§1.7: Psion 4
    saves at 13, a wizard of 11 at 11). An identifier it knows decides over the name."""
    data = wizard_and_psion(4)
    next(i for i in data["items"] if i["type"] == "class")["system"]["levels"] = 11
    data["items"][-1]["name"] = "Psionicist"
    data["items"][-1]["system"]["identifier"] = "mystic"
    got = DND5E.import_(data, "revised-2e")
    c = got.combatant
    assert (c["level"], c["class_group"], c["save_paralyzation"]) == (4, "psionicist", 11)
    assert ("several classes (wizard 11, Psionicist 4); level 4 taken, the psionicist "
            "class's (Psionicist), not the character's 15") in got.warnings
    alone = zanna()
    wizard = next(i for i in alone["items"] if i["type"] == "class")
    wizard["system"]["identifier"] = "arcanist"
    assert DND5E.import_(alone, "revised-2e").combatant["class_group"] == "wizard"
    wizard["system"]["identifier"] = "cleric"
    assert DND5E.import_(alone, "revised-2e").combatant["class_group"] == "priest"
    wizard["name"], wizard["system"]["identifier"] = "Mystic", "arcanist"
    got = DND5E.import_(alone, "revised-2e")
    assert "class_group" not in got.combatant
    assert any("no class group" in w for w in got.warnings)


def test_a_class_named_for_several_classes_saves_with_the_best_of_them() -> None:
    """AD&D 2e (PHB): a multi-class character uses the best saving throw of its classes.
    A dnd5e class item named "Preserver/Psionicist" at level 1, or an OSE character whose
    class reads "Fighter/Psionicist" at level 2, has both classes at that level: each
    saves at 13, a psionicist's, not 14, a wizard's or a warrior's (RULES.md table 1.7),
    though the group is that of the class written first."""
    data = zanna()
    wizard = next(i for i in data["items"] if i["type"] == "class")
    wizard["name"], wizard["system"]["identifier"] = "Preserver/Psionicist", ""
    got = DND5E.import_(data, "revised-2e")
    c = got.combatant
    assert (c["level"], c["class_group"], c["save_paralyzation"]) == (1, "wizard", 13)
    assert ("save vs. paralyzation 13 from Preserver/Psionicist 1 as a psionicist, the "
            "best of Preserver/Psionicist 1 as a wizard or a psionicist "
            "(flags.mindscape.revised-2e.save_paralyzation sets it)") in got.warnings
    actor = template_actor("foundry/ose/template.json", "character", "oseChar000000001",
                           "Aelfric")
    actor["system"]["details"]["class"] = "Fighter/Psionicist"
    actor["system"]["details"]["level"] = 2
    c = OSE.import_(actor, "revised-2e").combatant
    assert (c["level"], c["class_group"], c["save_paralyzation"]) == (2, "warrior", 13)
    actor["system"]["details"]["class"] = "Fighter"
    assert "save_paralyzation" not in OSE.import_(actor, "revised-2e").combatant


def test_a_formula_with_two_values_in_a_row_is_not_read() -> None:
    """docs/ADAPTERS.md (foundry.dnd5e): "text the adapter cannot read" gives the Hit
    Dice from the challenge rating. "2d8 @abilities.con.mod" lacks the operator between
    its terms, so it is not taken for 2d8."""
    assert roll_dice("2d8 @x") is None
    assert roll_dice("2d8 + @x") == [(2, 8)]
    assert_challenge_rating_taken_for("2d8 @abilities.con.mod")


def test_an_actor_of_another_game_system_is_refused_where_it_says_so() -> None:
    """Foundry's data names the actor's game system in ``_stats.systemId``: an adapter
    made for one system refuses another's actor (its data would be read from the wrong
    places) and names the adapter to use; foundry.generic reads any system's."""
    data = zanna()
    data["_stats"]["systemId"] = "ose"
    with pytest.raises(InvalidInput) as err:
        DND5E.import_(data, "revised-2e")
    assert err.value.problems[0].path == "/_stats/systemId"
    assert "foundry.ose" in err.value.problems[0].message
    data["_stats"]["systemId"] = "pf2e"
    with pytest.raises(InvalidInput) as err:
        DND5E.import_({"actor": data, "token": None}, "revised-2e")
    assert err.value.problems[0].path == "/actor/_stats/systemId"
    assert "foundry.generic" in err.value.problems[0].message
    ose = template_actor("foundry/ose/template.json", "character", "ose1", "Rolf")
    ose["_stats"] = {"systemId": "dnd5e"}
    with pytest.raises(InvalidInput, match=r"foundry\.dnd5e"):
        ARS.import_(ose, "revised-2e")
    ose["_stats"] = {"systemId": "ars"}
    ARS.import_(ose, "revised-2e")
    ose["_stats"] = {"systemId": "some-ars-kin"}
    ARS.import_(ose, "revised-2e")
    GENERIC.import_({"mapping": {"version": 1, "fields": {"hp": "system.hp.value"}},
                     "actor": ose}, "power-pool")


def test_an_actor_whose_data_names_no_game_system_is_read_as_it_is() -> None:
    """docs/ADAPTERS.md "Foundry": "Data without the id is read as it is" (older exports,
    hand-made actors): an empty ``_stats.systemId`` names no system either, so every
    adapter reads the actor."""
    for empty in ("", None):
        data = zanna()
        data["_stats"]["systemId"] = empty
        assert DND5E.import_(data, "revised-2e").combatant["int"] == 17
        ose = template_actor("foundry/ose/template.json", "character", "ose1", "Rolf")
        ose["_stats"] = {"systemId": empty}
        assert OSE.import_(ose, "power-pool").combatant["hit_dice"] == 1


def test_a_hit_die_assumed_is_said_only_to_the_system_that_rolls_it() -> None:
    """Only power-pool has a hit die (the pool's); a die assumed for revised-2e or
    combat-strength would be a warning about nothing the GM sees."""
    npc = template_actor("foundry/ars/template.json", "npc", "ars1", "Ghoul")
    for system, said in (("revised-2e", False), ("combat-strength", False),
                         ("power-pool", True)):
        got = ARS.import_(npc, system)
        assert any("assumed d8" in w for w in got.warnings) is said, system
    data = zanna()
    data["items"] = [item for item in data["items"] if item["type"] != "class"]
    for system, said in (("revised-2e", False), ("power-pool", True)):
        got = DND5E.import_(data, system)
        assert any("assumed d8" in w for w in got.warnings) is said, system


def test_a_class_the_adapter_does_not_know_is_said_with_the_flag_that_sets_it() -> None:
    """The engine takes a missing class group as psionicist for a psionicist, else
    warrior; a character whose class gives none is told so, with the flag to set."""
    ose = template_actor("foundry/ose/template.json", "character", "ose1", "Rolf")
    ose["system"]["details"]["class"] = "Mystic"
    got = OSE.import_(ose, "revised-2e")
    assert "class_group" not in got.combatant
    assert any("no class group" in w and "flags.mindscape.revised-2e.class_group" in w
               for w in got.warnings)
    ose["system"]["details"]["class"] = "Templar"
    got = OSE.import_(ose, "revised-2e")
    assert got.combatant["class_group"] == "priest"
    assert not any("no class group" in w for w in got.warnings)


# -- who has a profile (vtt-module/foundry/mindscape/scripts/rounds.js) ----------------
ROUNDS = (Path(__file__).resolve().parents[2] / "vtt-module" / "foundry" / "mindscape"
          / "scripts" / "rounds.js")
PROFILE_SCRIPT = """
import { AT_REST, CLOSED_MIND, hasProfile } from %s;
let text = "";
process.stdin.setEncoding("utf8").on("data", (part) => { text += part; }).on("end", () => {
  const has = JSON.parse(text).map(([system, profile]) =>
    hasProfile({ flags: { mindscape: { [system]: profile } } }, system));
  const atRest = Object.keys(AT_REST);
  process.stdout.write(JSON.stringify({ atRest, closedMind: CLOSED_MIND, has }));
});
"""


def module_profiles(profiles: list[tuple[str, Any]]) -> dict[str, Any]:
    """rounds.js's ``AT_REST`` members, its ``CLOSED_MIND``, and ``hasProfile`` of an
    actor with each ``(system, profile)`` in ``flags.mindscape``, run through node."""
    node = shutil.which("node")
    assert node, "node (installed with the VTT module's tests) runs the module's own code"
    run = subprocess.run([node, "--input-type=module", "-e",
                          PROFILE_SCRIPT % json.dumps(ROUNDS.as_uri())],
                         check=True, input=json.dumps(profiles), capture_output=True,
                         text=True, timeout=60)
    out: dict[str, Any] = json.loads(run.stdout)
    return out


def test_a_profile_of_only_state_at_rest_is_none_as_the_engine_takes_it() -> None:
    """rounds.js ``hasProfile`` (who takes part in a round's end and a rest) leaves out a
    profile whose every member is state at rest (``AT_REST``), and only such a member's
    values that import as the same combatant as no member: the default closed mind
    (``CLOSED_MIND``, the engine's, as the write-back writes it) or any part of it, empty
    lists and objects, null (a member an unlinked token's write-back masked). Another
    value of those members, one the adapter refuses included, keeps the profile; so does
    anything else (a GM's setting, a member no system knows). Fails if rounds.js drops a
    member of CLOSED_MIND, spells a value another way, or takes a value the engine keeps
    for rest."""
    data = zanna()
    data["flags"].pop("mindscape", None)
    systems = builtin_systems()

    def combatant(system: str, profile: Any) -> Any:
        actor = json.loads(json.dumps(data))
        actor["flags"]["mindscape"] = {system: profile}
        try:
            return systems[system].combatant(DND5E.import_(actor, system).combatant)
        except InvalidInput:
            return "refused"

    plain = {system: systems[system].combatant(DND5E.import_(data, system).combatant)
             for system in FIELDS}
    closed = plain["revised-2e"]["mind"]
    minds = [closed, {}, {"state": "closed"}, {"state": "open"}, {"locked_rounds": 0.0},
             {"dazed": 0}, {"toString": 0}, {"state": "open", "opened_by": None}]
    minds += [{key: value} for key, value in closed.items()]
    minds += [{**closed, key: other} for key, other in (
        ("state", "open"), ("locked_rounds", 2), ("last_defense", "mind-blank"),
        ("used_power", True), ("may_pay_to_close", True), ("rounds_open", 1),
        ("opened_by", "attack"), ("used_power", 0), ("locked_rounds", "0"))]
    values: list[Any] = [None, [], {}, "", 0, False, ["stunned"], [""], {"stunned": None},
                         {"stunned": 2}, {"stunned": "x"}, "g1", *minds]
    names = sorted({name for fields in FIELDS.values() for name in fields} | {"notes"})
    cases = [(system, {name: value}) for system in FIELDS for name in names
             for value in values]
    # What the write-back leaves on a mind with no profile: a psionic attack opens it,
    # then it closes (checked against the adapter below); and emptied state together.
    cases += [("revised-2e", {"mind": closed}),
              ("revised-2e", {"mind": closed, "conditions": [], "condition_rounds": {"dazed": None},
                              "lost_powers": []}),
              ("power-pool", {"conditions": [], "condition_rounds": {}, "dedicated": [],
                              "controlling": [], "controlled_by": None}),
              ("revised-2e", {"mind": closed, "psp": 0})]
    module = module_profiles(cases)
    assert module["closedMind"] == closed
    assert list(module["closedMind"]) == list(closed), "in the engine's order"
    at_rest = set(module["atRest"])
    for (system, profile), has in zip(cases, module["has"], strict=True):
        got = combatant(system, profile)
        if not has:
            assert got == plain[system], (system, profile)
        elif len(profile) == 1:
            [(name, value)] = profile.items()
            # Text of nothing the adapter also reads as none, but only a hand writes it
            # (the write-back and the profile dialog write JSON, and leave a cleared
            # field out): it keeps the profile, as before.
            if name in at_rest and name in FIELDS[system] and value not in (None, "", [""]):
                assert got != plain[system], (system, profile)
    assert module["has"][-4:] == [False, False, False, True]

    # The write-back, as it happens: an attack opens the mind of an actor with no profile
    # and a later round closes it.
    system = systems["revised-2e"]
    before = plain["revised-2e"]
    opened = {**before, "mind": {**closed, "state": "open", "opened_by": "attack"}}
    data_open = apply_foundry(data, DND5E.updates(data, "revised-2e", before, opened))
    now = system.combatant(DND5E.import_(data_open, "revised-2e").combatant)
    data_closed = apply_foundry(data_open, DND5E.updates(data_open, "revised-2e", now, before))
    written = [d["flags"]["mindscape"]["revised-2e"] for d in (data_open, data_closed)]
    assert written[1] == {"mind": closed}
    assert module_profiles([("revised-2e", p) for p in written])["has"] == [True, False]
