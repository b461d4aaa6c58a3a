"""Roll20 characters (the bridge's object and VTT Enhancement Suite exports) become
combatants; write-backs are attribute sets with ``max`` only when it changed."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest

import adapters
from engine.errors import InvalidInput

from .support import FIXTURES, apply_roll20, attr, load

SHEET = adapters.get("roll20.adnd2e-revised")
GENERIC = adapters.get("roll20.generic")
VTT_MD_NAMES = {"intelligence", "wisdom", "constitution", "hp", "level-class1",
                "level-class2"}


def ulcen() -> dict[str, Any]:
    data: dict[str, Any] = load("roll20/adnd2e-revised-ulcen.handmade.json")
    return data


def test_handmade_fixture_uses_only_the_sheets_attribute_names() -> None:
    """The hand-made character may only use names the real sheet file (or VTT.md's list
    of AD&D 2E Revised attributes) defines; repeating rows use the fieldset names."""
    html = (FIXTURES / "roll20/adnd2e-revised-psionics-tab.html").read_text(encoding="utf-8")
    names = {n.lower() for n in re.findall(r'name="attr_([^"]+)"', html)}
    sections = re.findall(r'name="(repeating_[^"]+)"', html)
    for row in ulcen()["attribs"]:
        name = row["name"].lower()
        if name.startswith("repeating_"):
            section = next(s for s in sections if name.startswith(s.lower() + "_"))
            name = name.rsplit("_", 1)[1]
            assert section
        assert name in names or name in VTT_MD_NAMES or \
            name.removesuffix("_max") in names, row["name"]


def test_adnd2e_revised_sheet_gives_a_revised_2e_combatant() -> None:
    """VTT.md: PSP / PSP_max, MThAC0, selfMAC, Intelligence, Wisdom, Constitution, HP,
    level-class1, psionic attack and defense rows; numbers stored as strings."""
    got = SHEET.import_(ulcen(), "revised-2e")
    c = got.combatant
    assert (c["id"], c["name"]) == ("-MzUlcen0000000001", "Ulcen of Tyr")
    assert (c["int"], c["wis"], c["con"], c["level"], c["hp"]) == (14, 13, 15, 4, 22)
    assert (c["psp"], c["psp_max"], c["mthac0"], c["mac"]) == (40, 40, 17, 10)
    assert c["attacks"] == ["mind-thrust", "ego-whip"]
    assert c["defenses"] == ["thought-shield", "mental-barrier"]
    assert c["kind"] == "psionicist"
    assert any('"Mind Bar"' in w for w in got.warnings)
    assert any("kind not recorded" in w for w in got.warnings)


def test_attribute_names_match_case_insensitively() -> None:
    """VTT.md: "Attribute names are matched case-insensitively by Roll20 tools"."""
    data = ulcen()
    for row in data["attribs"]:
        row["name"] = row["name"].upper() if row["name"] != "HP" else "hp"
    c = SHEET.import_(data, "revised-2e").combatant
    assert (c["int"], c["psp"], c["hp"], c["mthac0"]) == (14, 40, 22, 17)
    assert c["defenses"] == ["thought-shield", "mental-barrier"]


def test_mthac0_adjustment_and_temporary_mac_are_applied_with_warnings() -> None:
    """The sheet rolls MThAC0 − (1d20 + mthac0adj): an adjustment of +2 is MTHAC0 − 2."""
    data = ulcen()
    attr(data, "mthac0adj")["current"] = "2"
    attr(data, "temp-selfMAC")["current"] = "7"
    got = SHEET.import_(data, "revised-2e")
    assert (got.combatant["mthac0"], got.combatant["mac"]) == (15, 7)
    assert any("adjustment +2" in w for w in got.warnings)
    assert any("temp-selfMAC" in w for w in got.warnings)


def test_psi_attributes_hold_state_the_sheet_lacks() -> None:
    data = ulcen()
    data["attribs"] += [{"name": "psi_kind", "current": "wild-talent", "max": ""},
                        {"name": "psi_conditions", "current": "dazed, confused", "max": ""},
                        {"name": "psi_mind", "current": '{"state":"open","opened_by":"attack"}',
                         "max": ""}]
    c = SHEET.import_(data, "revised-2e").combatant
    assert c["kind"] == "wild-talent"
    assert c["conditions"] == ["dazed", "confused"]
    assert c["mind"] == {"state": "open", "opened_by": "attack"}


def test_updates_set_psp_current_and_max_only_when_each_changed() -> None:
    data = ulcen()
    before = SHEET.import_(data, "revised-2e").combatant
    got = SHEET.updates(data, "revised-2e", before, {**before, "psp": 31})
    assert got == [{"character_id": "-MzUlcen0000000001",
                    "attributes": {"PSP": {"current": 31}}}]
    got = SHEET.updates(data, "revised-2e", before,
                        {**before, "psp": 31, "psp_max": 44, "hp": 18, "mthac0": 3,
                         "mind": {"state": "open", "opened_by": "zero-psp"}})
    assert got == [{"character_id": "-MzUlcen0000000001", "attributes": {
        "PSP": {"current": 31, "max": 44}, "HP": {"current": 18},
        "psi_mind": {"current": '{"state":"open","opened_by":"zero-psp"}'}}}]


def test_vttes_exports_schema_1_and_3_are_read() -> None:
    """schema_version 1 is flat; 3 wraps {type: "character", character: {...}} with the
    id in oldId (the Ilaris export fixture, whose current values are numbers)."""
    flat = {"schema_version": 1, **{k: v for k, v in ulcen().items() if k != "id"}}
    got = SHEET.import_(flat, "revised-2e")
    assert got.combatant["id"] == "ulcen-of-tyr"
    assert any("no id" in w for w in got.warnings)
    v3 = {"schema_version": 3, "type": "character",
          "character": {**{k: v for k, v in ulcen().items() if k != "id"},
                        "oldId": "-MzUlcen0000000001"}}
    c = SHEET.import_(v3, "revised-2e").combatant
    assert (c["id"], c["psp"], c["int"]) == ("-MzUlcen0000000001", 40, 14)
    ilaris = load("roll20/vttes-export-ilaris-empty.json")
    mapped = {"mapping": {"fields": {"hit_dice": "wounds"},
                          "systems": {"power-pool": {"die": {"path": "hit_die",
                                                             "default": 6}}}},
              "character": ilaris}
    got = GENERIC.import_(mapped, "power-pool")
    assert (got.combatant["id"], got.combatant["hit_dice"]) == ("-Ms-HqE59N0Rdp6IIn6-", 8)
    assert got.combatant["die"] == 6
    mapped["mapping"]["systems"]["power-pool"]["die"]["path"] = "wmod"
    with pytest.raises(InvalidInput) as err:  # wmod holds 0, which is no die
        GENERIC.import_(mapped, "power-pool")
    assert err.value.problems[0].path == "/character/character/attribs/1/current"


def test_unsupported_export_version_is_refused() -> None:
    with pytest.raises(InvalidInput) as err:
        SHEET.import_({"schema_version": 9, "attribs": []}, "revised-2e")
    assert err.value.problems[0].path == "/schema_version"


def test_combat_strength_and_power_pool_read_default_psi_attributes() -> None:
    data = ulcen()
    data["attribs"] += [
        {"name": "psi_attack_strength", "current": "60", "max": "80"},
        {"name": "psi_defense_strength", "current": 55, "max": 55},
        {"name": "psi_pool", "current": "3", "max": "4"},
        {"name": "psi_die", "current": "d8", "max": ""},
        {"name": "psi_psionic", "current": "1", "max": ""},
        {"name": "psi_attacks", "current": "Mind Thrust, Psionic Blast", "max": ""},
    ]
    cs = SHEET.import_(data, "combat-strength").combatant
    assert (cs["attack_strength"], cs["attack_strength_max"]) == (60, 80)
    assert (cs["defense_strength"], cs["defense_strength_max"], cs["psionic"]) == \
        (55, 55, True)
    assert cs["attacks"] == ["mind-thrust", "psionic-wave"]
    pp = SHEET.import_(data, "power-pool").combatant
    assert (pp["pool"], pp["hit_dice"], pp["die"], pp["hp"]) == (3, 4, 8, 22)
    before = copy.deepcopy(cs)
    got = SHEET.updates(data, "combat-strength", before,
                        {**before, "attack_strength": 40, "conditions": ["dazed"]})
    assert got == [{"character_id": "-MzUlcen0000000001", "attributes": {
        "psi_attack_strength": {"current": 40}, "psi_conditions": {"current": "dazed"}}}]


def test_power_pool_creature_knowing_a_mode_is_psionic_as_the_engine_defaults() -> None:
    """COMBATANTS.md: psionic defaults to knowing any mode. Modes in psi_attacks make a
    power-pool creature psionic without psi_psionic; one with none is not, with a warning
    (H-PP-NO-POOL); psi_psionic still wins over both."""
    def sheet(*attribs: tuple[str, str]) -> dict[str, Any]:
        base = [("psi_pool", "3"), ("psi_die", "8"), ("level-class1", "3")]
        return {"id": "-MzOgre0000000001", "name": "Ogre", "controlledby": "",
                "attribs": [{"name": n, "current": c, "max": ""} for n, c in [*base, *attribs]]}
    knows = SHEET.import_(sheet(("psi_attacks", "Mental Stab")), "power-pool")
    assert knows.combatant["psionic"] is True
    assert not [w for w in knows.warnings if "psionic" in w]
    blank = SHEET.import_(sheet(), "power-pool")
    assert blank.combatant["psionic"] is False
    assert any("H-PP-NO-POOL" in w for w in blank.warnings)
    told = SHEET.import_(sheet(("psi_attacks", "Mental Stab"), ("psi_psionic", "0")), "power-pool")
    assert told.combatant["psionic"] is False


def test_round_trip_through_attribute_writes() -> None:
    data = ulcen()
    before = SHEET.import_(data, "power-pool").combatant
    after = {**before, "pool": 2, "dedicated": [{"purpose": "control", "target": "x"}],
             "psionic": True, "controlling": [{"id": "x", "kept_by": "die"}], "hp": 9,
             "spell_levels": [1, 2]}
    written = apply_roll20(data, SHEET.updates(data, "power-pool", before, after))
    assert SHEET.import_(written, "power-pool").combatant == after


def test_roll20_generic_reads_mapped_attributes_and_maxima() -> None:
    data = {"mapping": {"fields": {"psp": "Power", "psp_max": "Power|max",
                                   "int": "INT", "level": "Level"},
                        "systems": {"revised-2e": {"kind": {"path": "psi_kind",
                                                            "default": "psionicist"}}}},
            "character": {"id": "-Mchar", "name": "Nia", "attribs": [
                {"name": "power", "current": "12", "max": "20"},
                {"name": "int", "current": 16, "max": ""},
                {"name": "level", "current": "3", "max": ""}]}}
    c = GENERIC.import_(data, "revised-2e").combatant
    assert (c["psp"], c["psp_max"], c["int"], c["level"], c["kind"]) == \
        (12, 20, 16, 3, "psionicist")
    got = GENERIC.updates(data, "revised-2e", c, {**c, "psp": 4})
    assert got == [{"character_id": "-Mchar", "attributes": {"power": {"current": 4}}}]


def test_fixture_paths_exist() -> None:
    assert Path(FIXTURES / "roll20/vttes-export-ilaris-empty.json").is_file()


def test_an_empty_hp_box_with_a_maximum_is_taken_as_full_and_written_back() -> None:
    """docs/ADAPTERS.md "Defaults, with a warning each": an HP box left blank with its
    maximum filled in is the maximum, as dnd5e's missing current hit points are; without
    it Synaptic Overload's damage (power-pool) would have no hit points to lower. The
    write-back fills in the current box."""
    data = ulcen()
    attr(data, "HP")["current"] = ""
    got = SHEET.import_(data, "power-pool")
    assert got.combatant["hp"] == 22
    assert "HP current is empty; taken as its maximum 22" in got.warnings
    before = got.combatant
    assert SHEET.updates(data, "power-pool", before, {**before, "hp": 15}) == [
        {"character_id": "-MzUlcen0000000001", "attributes": {"HP": {"current": 15}}}]
    separate = ulcen()  # VTT.md: "HP / HP_max"
    attr(separate, "HP").update(current="", max="")
    separate["attribs"].append({"name": "HP_max", "current": "19", "max": ""})
    assert SHEET.import_(separate, "revised-2e").combatant["hp"] == 19


def test_an_empty_psp_box_with_a_maximum_is_taken_as_full_with_a_warning() -> None:
    """COMBATANTS.md: psp defaults to psp_max; a sheet's blank PSP box is said to be
    taken so, and spent PSPs go back to that box."""
    data = ulcen()
    attr(data, "PSP")["current"] = ""
    got = SHEET.import_(data, "revised-2e")
    assert (got.combatant["psp"], got.combatant["psp_max"]) == (40, 40)
    assert "PSP current is empty; taken as its maximum 40" in got.warnings
    before = got.combatant
    assert SHEET.updates(data, "revised-2e", before, {**before, "psp": 31}) == [
        {"character_id": "-MzUlcen0000000001", "attributes": {"PSP": {"current": 31}}}]


def test_an_empty_psi_die_is_a_d8_with_a_warning() -> None:
    """docs/ADAPTERS.md: `""` counts as empty; the pool's die is then d8, with a
    warning (the Mod script creates psi_* attributes with empty values)."""
    data = ulcen()
    data["attribs"].append({"name": "psi_die", "current": "", "max": ""})
    got = SHEET.import_(data, "power-pool")
    assert got.combatant["die"] == 8
    assert "psi_die is empty; the pool's die assumed d8" in got.warnings


@pytest.mark.parametrize("formula", ["21-@{level-class1}", "21-ceil(@{level-class1}/2)",
                                     "21 - @{Level-Class1}"])
def test_an_mthac0_formula_leaves_mthac0_to_the_engine_with_a_warning(formula: str) -> None:
    """The sheet's own help (adnd2e-revised-psionics-tab.html) suggests "Psion -
    21-@{level-class#} | Wild Talent - 21-ceil(@{level-class#}/2)" in place of the
    MThAC0 number: the engine derives the same from the level (RULES.md §1.1)."""
    data = ulcen()
    attr(data, "MThAC0")["current"] = formula
    got = SHEET.import_(data, "revised-2e")
    assert "mthac0" not in got.combatant
    assert any(w.startswith("MThAC0 holds a formula") for w in got.warnings)
    attr(data, "MThAC0")["current"] = "twenty"
    with pytest.raises(InvalidInput) as err:  # text that is no formula is still refused
        SHEET.import_(data, "revised-2e")
    assert err.value.problems[0].path == "/attribs/8/current"


def test_an_mthac0_formula_says_the_adjustment_is_not_applied() -> None:
    """docs/ADAPTERS.md: a formula leaves MTHAC0 to the engine "with a warning (also
    when `mthac0adj` is not 0: it is then not applied)"."""
    data = ulcen()
    attr(data, "MThAC0")["current"] = "21-@{level-class1}"
    attr(data, "mthac0adj")["current"] = "2"
    got = SHEET.import_(data, "revised-2e")
    assert "mthac0" not in got.combatant
    assert 'MThAC0 holds a formula ("21-@{level-class1}"); MTHAC0 is derived from the ' \
        "level and the adjustment +2 is not applied" in got.warnings


def test_a_save_vs_paralyzation_of_1_is_read() -> None:
    """COMBATANTS.md: save_paralyzation is 1-20, as the engine takes it."""
    data = ulcen()
    data["attribs"].append({"name": "psi_save_paralyzation", "current": "1", "max": ""})
    assert SHEET.import_(data, "revised-2e").combatant["save_paralyzation"] == 1


def core_tab_mode_rows() -> dict[str, tuple[str, str]]:
    """The Attack Modes and Defense Modes sections of the sheet's "Psionics Core" tab and
    the attribute naming each row, as the tab's include lines fill in the partial's
    ``repeating_psion-#REPLACE1#`` and ``attr_#REPLACE2#`` (tests/fixtures/README.md)."""
    tab = (FIXTURES / "roll20/adnd2e-revised-psionic-core-tab.html").read_text(encoding="utf-8")
    part = (FIXTURES / "roll20/adnd2e-revised-psionic-core-discipline.html") \
        .read_text(encoding="utf-8")
    assert 'name="repeating_psion-#REPLACE1#"' in part and 'name="attr_#REPLACE2#"' in part
    rows = {}
    for title, section, name in re.findall(
            r"insert_psionic-core-discipline\.html_\((Attack Modes|Defense Modes),([^,]+),"
            r"([^,]+),", tab):
        rows[title] = (f"repeating_psion-{section}", name)
    return rows


def test_the_core_tabs_attack_and_defense_mode_rows_are_read() -> None:
    """The sheet's "Psionics Core" tab (Complete Psionics Handbook) lists the modes as power
    rows of its Attack Modes and Defense Modes sections, not in the Psionics Revised tab's
    attack and defense rows; a character kept there knows its modes too."""
    rows = core_tab_mode_rows()
    attack_section, attack_name = rows["Attack Modes"]
    defense_section, defense_name = rows["Defense Modes"]
    data = ulcen()
    data["attribs"] = [row for row in data["attribs"]
                       if "psionic-attack" not in row["name"]
                       and "psionic-defense" not in row["name"]]
    data["attribs"] += [
        {"name": f"{attack_section}_-MzCore0001_{attack_name}", "current": "Psychic Crush"},
        {"name": f"{attack_section}_-MzCore0002_{attack_name}", "current": "Id Insinuation"},
        {"name": f"{defense_section}_-MzCore0003_{defense_name}", "current": "Mind Blank"},
        {"name": f"{defense_section}_-MzCore0004_{defense_name}", "current": "Tower of Iron Will"}]
    c = SHEET.import_(data, "revised-2e").combatant
    assert c["attacks"] == ["psychic-crush", "id-insinuation"]
    assert c["defenses"] == ["mind-blank", "tower-of-iron-will"]
    # kept by an encounter, and never written: they are the sheet's own rows
    assert SHEET.import_(SHEET.trimmed(data, "revised-2e"), "revised-2e").combatant == c
    assert SHEET.updates(data, "revised-2e", c, {**c, "attacks": ["psychic-crush"]}) == []


def monster(**extra: str) -> dict[str, Any]:
    """A character of the sheet's Monster Sheet page (its "Hit Dice" box ``hitdice``,
    ``HP`` / ``HP_max``; ADnD_2E_Revised/html/tabs/monster-tab.html): no class level."""
    attribs = [{"name": "hitdice", "current": "8", "max": ""},
               {"name": "HP", "current": "41", "max": "52"},
               {"name": "Intelligence", "current": "18", "max": ""},
               *({"name": k, "current": v, "max": ""} for k, v in extra.items())]
    return {"id": "-MzMind0000000001", "name": "Mind flayer", "attribs": attribs}


def test_a_monster_sheet_gives_its_hit_dice_and_is_a_monster() -> None:
    """The Monster Sheet page has no class levels but a "Hit Dice" box (``hitdice``): its
    Hit Dice are the level (revised-2e) and the pool's dice (power-pool), and the
    creature is a monster (class group "monster"), not a 1st-level character."""
    got = SHEET.import_(monster(), "revised-2e")
    c = got.combatant
    assert (c["level"], c["class_group"], c["hp"], c["int"]) == (8, "monster", 41, 18)
    assert not any("taken as 1" in w for w in got.warnings)
    assert SHEET.import_(monster(), "power-pool").combatant["hit_dice"] == 8
    # hit points still go back to HP
    assert SHEET.updates(monster(), "revised-2e", c, {**c, "hp": 30}) == [
        {"character_id": "-MzMind0000000001", "attributes": {"HP": {"current": 30}}}]


def test_the_monster_page_shown_wins_over_class_levels() -> None:
    """``tab11`` is the sheet's page switch (2: Monster Sheet). A sheet showing it is a
    monster's even with class levels filled in; one showing the character page with
    class levels is a character's, its Hit Dice box ignored."""
    got = SHEET.import_(monster(**{"level-class1": "3", "tab11": "2"}), "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (8, "monster")
    assert any("Monster Sheet is shown" in w for w in got.warnings)
    c = SHEET.import_(monster(**{"level-class1": "3", "class1": "Psionicist"}),
                      "revised-2e").combatant
    assert (c["level"], c["class_group"]) == (3, "psionicist")


def test_the_class_beside_the_level_taken_gives_the_class_group() -> None:
    """The sheet names each class beside its level (``class1`` by ``level-class1``, from
    its list Warrior/Wizard/Priest/Rogue/Psion, Fighter, Mage, Thief ...); the class of
    the highest level gives the 2e class group. An unknown class is said, with the
    attribute that sets it."""
    data = ulcen()
    data["attribs"] += [{"name": "class1", "current": "Psion", "max": ""},
                        {"name": "class2", "current": "Thief", "max": ""}]
    attr(data, "level-class2")["current"] = "6"
    got = SHEET.import_(data, "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (6, "rogue")
    attr(data, "class2")["current"] = "Mystic"
    got = SHEET.import_(data, "revised-2e")
    assert "class_group" not in got.combatant
    assert any("no class group" in w and "psi_class_group" in w for w in got.warnings)
    # psi_class_group overrides
    data["attribs"].append({"name": "psi_class_group", "current": "wizard", "max": ""})
    assert SHEET.import_(data, "revised-2e").combatant["class_group"] == "wizard"


def test_temporary_and_stored_points_beside_hp_and_psp_are_said_not_counted() -> None:
    """The sheet keeps Temp HP, Temp PSP and Stored PSP beside HP and PSP; the engine has
    no place for them, so a box holding points is named in a warning, not ignored in
    silence (and not guessed into HP or PSP)."""
    data = ulcen()
    attr(data, "tempPSP")["current"] = "6"
    data["attribs"] += [{"name": "storedPSP", "current": "12", "max": "20"},
                        {"name": "tempHP", "current": "4", "max": ""}]
    got = SHEET.import_(data, "revised-2e")
    assert (got.combatant["psp"], got.combatant["hp"]) == (40, 22)
    for text in ("tempPSP holds 6", "storedPSP holds 12", "tempHP holds 4"):
        assert any(text in w for w in got.warnings), text
    # combat-strength has neither hit points nor PSPs: nothing to say there
    got = SHEET.import_(data, "combat-strength")
    assert not any("holds" in w for w in got.warnings)


def test_a_monster_with_class_levels_is_still_a_monster() -> None:
    """The Monster Sheet shown with no Hit Dice filled in but a class level (a drow
    fighter written up as a monster): the level counts, the class group is monster's."""
    data = monster(**{"level-class1": "5", "class1": "Fighter", "tab11": "2"})
    data["attribs"] = [row for row in data["attribs"] if row["name"] != "hitdice"]
    c = SHEET.import_(data, "revised-2e").combatant
    assert (c["level"], c["class_group"]) == (5, "monster")


ROW = "repeating_psionic-attacks_-MzRowAtk00000001"


def test_an_attack_rows_own_mthac0_that_differs_is_named_in_a_warning() -> None:
    """The Psionics Revised tab gives every attack row its own MThAC0 and MThAC0 Adj.
    boxes (``repeating_psionic-attacks_<row>_MThAC0``, ``_mthac0adj``); the sheet's
    ``MThAC0`` is its first row's. The engine gives a combatant one MTHAC0 for every mode
    (RULES.md §1.1), so a row whose own value (less its adjustment) differs is named, and
    the one read is kept."""
    data = ulcen()
    assert not any("MThAC0 1" in w for w in SHEET.import_(data, "revised-2e").warnings)
    attr(data, f"{ROW}_MThAC0")["current"] = "15"
    got = SHEET.import_(data, "revised-2e")
    assert got.combatant["mthac0"] == 17
    assert (f'attack row "Ego Whip" has its own MThAC0 15 ({ROW}_MThAC0): not used; every '
            "attack uses the one read from MThAC0, 17") in got.warnings
    assert SHEET.import_(SHEET.trimmed(data, "revised-2e"), "revised-2e") == got
    # the row's adjustment counts as the first row's does: 19 − 2 is 17, the same
    attr(data, f"{ROW}_MThAC0")["current"] = "19"
    attr(data, f"{ROW}_mthac0adj")["current"] = "2"
    assert not any("has its own MThAC0" in w
                   for w in SHEET.import_(data, "revised-2e").warnings)
    attr(data, f"{ROW}_mthac0adj")["current"] = "1"
    assert (f'attack row "Ego Whip" has its own MThAC0 19 with adjustment +1, MTHAC0 18 '
            f"({ROW}_MThAC0): not used; every attack uses the one read from MThAC0, 17") \
        in SHEET.import_(data, "revised-2e").warnings
    # with no MThAC0 of its own the character's is derived: the row's is still not used
    attr(data, f"{ROW}_mthac0adj")["current"] = "0"
    data["attribs"] = [row for row in data["attribs"] if row["name"] != "MThAC0"]
    got = SHEET.import_(data, "revised-2e")
    assert "mthac0" not in got.combatant
    assert (f'attack row "Ego Whip" has its own MThAC0 19 ({ROW}_MThAC0): not used; every '
            "attack uses one derived from the level") in got.warnings


def test_attack_rows_that_name_no_mode_or_hold_no_number_are_not_compared() -> None:
    """A row naming no attack mode (a power listed there) is not an attack the engine
    plays; a formula or blank box is not a number to compare."""
    data = ulcen()
    attr(data, f"{ROW}_MThAC0")["current"] = "12"
    assert any("has its own MThAC0 12" in w for w in SHEET.import_(data, "revised-2e").warnings)
    for value in ("21-@{level-class1}", "", "abc"):
        attr(data, f"{ROW}_MThAC0")["current"] = value
        assert not any("has its own MThAC0" in w
                       for w in SHEET.import_(data, "revised-2e").warnings), value
    attr(data, f"{ROW}_MThAC0")["current"] = "12"
    attr(data, f"{ROW}_psionic-attack-name")["current"] = "Contact"
    assert not any("has its own MThAC0" in w
                   for w in SHEET.import_(data, "revised-2e").warnings)
