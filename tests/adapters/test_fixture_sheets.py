"""Each public fixture (tests/fixtures/README.md) read field by field as its sheet holds
it, where no other test pins those fields: the number a GM sees on the sheet is the
combatant's, and a change written back lands in the sheet's own place and reads back.
The expected values were written down from the raw files before running the adapters."""

from __future__ import annotations

from typing import Any

import adapters
from engine import builtin_systems

from .support import apply_foundry, apply_roll20, attr, load, template_actor

SYSTEMS = builtin_systems()
DND5E = adapters.get("foundry.dnd5e")
ARS = adapters.get("foundry.ars")
SHEET = adapters.get("roll20.adnd2e-revised")


def test_randal_is_a_level_1_warrior_with_the_sheets_scores_and_hit_points() -> None:
    """randal-human-fighter.json: abilities int 9, wis 13, con 15; hp.value 12; one
    Fighter class item (identifier "fighter", levels 1, hitDice "d10"): a warrior
    (docs/ADAPTERS.md class groups), one Hit Die of d10."""
    data = load("foundry/dnd5e/randal-human-fighter.json")
    got = DND5E.import_(data, "revised-2e")
    c = got.combatant
    assert (c["id"], c["name"]) == ("2Pdtnswo8Nj2nafY", "Randal (Human Fighter)")
    assert (c["int"], c["wis"], c["con"], c["hp"]) == (9, 13, 15, 12)
    assert (c["level"], c["class_group"], c["kind"]) == (1, "warrior", "nonpsionic")
    assert got.warnings == ("no psionic state recorded; taken as nonpsionic",)
    pool = DND5E.import_(data, "power-pool")
    assert {k: pool.combatant[k] for k in ("hp", "hit_dice", "die", "psionic")} == \
        {"hp": 12, "hit_dice": 1, "die": 10, "psionic": False}


def test_randal_losing_hit_points_and_psps_writes_the_sheet_and_the_flags() -> None:
    """A GM's psionic state in the flags (PSPs 30 of 40): 5 hit points and 7 PSPs lost go
    to system.attributes.hp.value (hp.temp is null: nothing to take first) and
    flags.mindscape.revised-2e.psp, and the actor then reads as the after state."""
    data = load("foundry/dnd5e/randal-human-fighter.json")
    data["flags"]["mindscape"] = {"revised-2e": {"kind": "psionicist", "psp": 30,
                                                 "psp_max": 40}}
    normalise = SYSTEMS["revised-2e"].combatant
    before = normalise(DND5E.import_(data, "revised-2e").combatant)
    after = {**before, "hp": 7, "psp": 23}
    updates = DND5E.updates(data, "revised-2e", before, after, normalise=normalise)
    assert updates == [{"uuid": "Actor.2Pdtnswo8Nj2nafY",
                        "update": {"flags.mindscape.revised-2e.psp": 23,
                                   "system.attributes.hp.value": 7}}]
    assert normalise(DND5E.import_(apply_foundry(data, updates), "revised-2e").combatant) \
        == after


def test_the_5x_aboleth_is_a_monster_of_20_hit_dice_with_con_15() -> None:
    """aboleth-2024.yml: con 15, hp formula "20d10 + 40": level 20, a monster; its
    temp of null adds nothing to hp.value 150."""
    got = DND5E.import_(load("foundry/dnd5e/aboleth-2024.yml"), "revised-2e")
    c = got.combatant
    assert (c["int"], c["wis"], c["con"], c["hp"]) == (18, 15, 15, 150)
    assert (c["level"], c["class_group"]) == (20, "monster")
    assert got.warnings == ("no psionic state recorded; taken as nonpsionic",)


def test_ars_default_npc_reads_the_templates_scores_save_and_hit_points() -> None:
    """The ARS template's NPC: abilities 10, saves.paralyzation 20, hp.value 0 of hp.max
    0 (not rolled yet: said, as it comes in down), hitdice "1", intelligence "" (a blank
    line: no Intelligence, so nothing is said of it)."""
    npc = template_actor("foundry/ars/template.json", "npc", "arsNpc0000000001", "Orc")
    got = ARS.import_(npc, "revised-2e")
    c = got.combatant
    assert (c["int"], c["wis"], c["con"], c["save_paralyzation"], c["hp"]) == \
        (10, 10, 10, 20, 0)
    assert (c["level"], c["class_group"]) == (1, "monster")
    assert got.warnings == (
        "no hit points on the sheet yet (system.attributes.hp.value and .max are both 0): "
        "it comes in with 0 hit points, down; roll or enter them on the sheet",
        "no psionic state recorded; taken as nonpsionic")


def test_the_ilaris_export_read_as_an_adnd_2e_revised_sheet_says_what_it_lacks() -> None:
    """vttes-export-ilaris-empty.json (schema_version 3, no name, no AD&D attribute):
    the id from oldId, named by it; scores 10, level 1, each assumption said; no HP
    attribute, so no hit points."""
    got = SHEET.import_(load("roll20/vttes-export-ilaris-empty.json"), "revised-2e")
    assert got.combatant == {"id": "-Ms-HqE59N0Rdp6IIn6-", "name": "-Ms-HqE59N0Rdp6IIn6-",
                             "int": 10, "wis": 10, "con": 10, "level": 1,
                             "kind": "nonpsionic"}
    assert got.warnings == (
        "the character has no name; using its id -Ms-HqE59N0Rdp6IIn6-",
        "no class level (level-class1..) nor Hit Dice (hitdice); taken as 1",
        "no int score in Intelligence; assumed 10",
        "no wis score in Wisdom; assumed 10",
        "no con score in Constitution; assumed 10",
        "no psionic state recorded; taken as nonpsionic",
        "no class group read from the sheet (no class name it knows); the engine takes "
        "psionicist for a psionicist, else warrior (for its save vs. paralyzation); "
        "psi_class_group sets it")


def test_the_ilaris_exports_psps_spent_go_to_psi_psp_inside_the_export() -> None:
    """PSPs recorded in psi_psp (30 of 40) of the schema_version 3 export: 7 spent are
    written to psi_psp's current for the character of oldId, and read back."""
    data: dict[str, Any] = load("roll20/vttes-export-ilaris-empty.json")
    data["character"]["attribs"].append({"name": "psi_psp", "current": 30, "max": 40})
    normalise = SYSTEMS["revised-2e"].combatant
    before = normalise(SHEET.import_(data, "revised-2e").combatant)
    assert (before["kind"], before["psp"], before["psp_max"]) == ("psionicist", 30, 40)
    after = {**before, "psp": 23}
    updates = SHEET.updates(data, "revised-2e", before, after, normalise=normalise)
    assert updates == [{"character_id": "-Ms-HqE59N0Rdp6IIn6-",
                        "attributes": {"psi_psp": {"current": 23}}}]
    again = apply_roll20(data, updates)
    assert attr(again, "psi_psp") == {"name": "psi_psp", "current": 23, "max": 40}
    assert normalise(SHEET.import_(again, "revised-2e").combatant) == after
