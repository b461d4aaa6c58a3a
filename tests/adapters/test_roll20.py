"""Roll20 characters (the bridge's object and VTT Enhancement Suite exports) become
combatants; write-backs are attribute sets with ``max`` only when it changed."""

from __future__ import annotations

import copy
import json
import re
import unicodedata
from pathlib import Path
from typing import Any

import pytest

import adapters
from engine import builtin_systems
from engine.dice import MAX_DICE_PER_POOL, dice_source
from engine.errors import InvalidInput, json_text

from .support import FIXTURES, apply_roll20, attr, load

REVISED = builtin_systems()["revised-2e"]
SHEET = adapters.get("roll20.adnd2e-revised")
GENERIC = adapters.get("roll20.generic")
#: The Roll20 Mod script, whose hand-kept copies of the adapters' reading rules the
#: cross-checks below tie to adapters/.
MOD_SCRIPT = Path(__file__).parents[2] / "vtt-module/roll20/Mindscape.js"
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


@pytest.mark.parametrize("names", [("影", "霧"), ("Zoë", "Zoé")])
def test_ids_made_from_names_keep_their_letters_in_any_script(
        names: tuple[str, str]) -> None:
    """A schema_version 1 export carries no id: the id is made from the name as the
    engine makes one (COMBATANTS.md), so two such characters stay two minds."""
    made = [SHEET.import_({"schema_version": 1, **{k: v for k, v in ulcen().items()
                                                   if k != "id"}, "name": name},
                          "revised-2e").combatant for name in names]
    assert [c["id"] for c in made] == [name.lower() for name in names]
    REVISED.resolve({"attacker": made[0], "defender": made[1],
                     "attack": {"mode": "mind-thrust"}}, dice_source(None, 1))


def test_generic_npc_types_match_the_attribute_whatever_the_case() -> None:
    data = {"mapping": {"fields": {"int": "INT"}, "npc_attribute": "sheet_type",
                        "npc_types": ["Monster"]},
            "character": {"id": "-Mc1", "name": "Ogre", "attribs": [
                {"name": "INT", "current": "6", "max": ""},
                {"name": "sheet_type", "current": "MONSTER", "max": ""}]}}
    assert GENERIC.import_(data, "revised-2e").combatant["class_group"] == "monster"


def test_generic_npc_types_decide_even_for_a_value_that_reads_as_true() -> None:
    """The AD&D 2E Revised sheet's page box tab11 holds "1" on the Character Sheet and
    "2" on the Monster Sheet: with npc_types ["2"], "1" is a character, though "1" alone
    would read as true (as it does without npc_types)."""
    def group(page: str, types: list[str] | None) -> Any:
        mapping: dict[str, Any] = {"fields": {"int": "INT"}, "npc_attribute": "tab11"}
        if types is not None:
            mapping["npc_types"] = types
        data = {"mapping": mapping, "character": {"id": "-Mc1", "name": "Pat", "attribs": [
            {"name": "INT", "current": "12", "max": ""},
            {"name": "tab11", "current": page, "max": ""}]}}
        return GENERIC.import_(data, "revised-2e").combatant.get("class_group")

    assert (group("1", ["2"]), group("2", ["2"])) == (None, "monster")
    assert (group("1", None), group("0", None), group("text", None)) == ("monster", None, None)


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
    defends = SHEET.import_(sheet(("psi_defenses", "Blank Mind")), "power-pool")
    assert defends.combatant["psionic"] is True
    blank = SHEET.import_(sheet(), "power-pool")
    assert blank.combatant["psionic"] is False
    assert any("H-PP-NO-POOL" in w for w in blank.warnings)
    told = SHEET.import_(sheet(("psi_attacks", "Mental Stab"), ("psi_psionic", "0")), "power-pool")
    assert told.combatant["psionic"] is False


@pytest.mark.parametrize(("text", "psionic"), [
    ("1", True), ("on", True), ("Yes", True), ("TRUE", True),
    ("0", False), ("off", False), ("No", False), ("False", False),
])
def test_a_psi_psionic_checkbox_reads_every_text_a_checkbox_stores(text: str,
                                                                   psionic: bool) -> None:
    """adapters/core.py `to_bool`: "JSON true/false, 1/0 or the texts Roll20 checkboxes
    store" (`on`/`off`, `yes`/`no`, in any case); they decide over the strengths."""
    data = ulcen()
    data["attribs"] += [{"name": "psi_attack_strength", "current": "0", "max": "0"},
                        {"name": "psi_psionic", "current": text, "max": ""}]
    assert SHEET.import_(data, "combat-strength").combatant["psionic"] is psionic


@pytest.mark.parametrize("junk", [2, "2", "maybe"])
def test_a_psi_psionic_that_is_no_checkbox_value_is_refused_there(junk: Any) -> None:
    data = ulcen()
    data["attribs"] += [{"name": "psi_psionic", "current": junk, "max": ""}]
    with pytest.raises(InvalidInput) as err:
        SHEET.import_(data, "combat-strength")
    assert err.value.problems[0].message == \
        f"expected true or false, got {json.dumps(junk)}"


def test_psi_lists_split_at_commas_semicolons_and_line_breaks() -> None:
    """docs/ADAPTERS.md: lists of modes or conditions are comma-separated text; a GM's
    typing with semicolons or one name a line reads the same, and punctuation around a
    mode's name is no part of it."""
    data = ulcen()
    data["attribs"] += [
        {"name": "psi_attacks", "current": "Mind Thrust; Ego Whip.\n(Id Insinuation)",
         "max": ""},
        {"name": "psi_conditions", "current": "stunned;dazed\n", "max": ""}]
    got = SHEET.import_(data, "revised-2e").combatant
    assert got["attacks"] == ["mind-thrust", "ego-whip", "id-insinuation"]
    assert got["conditions"] == ["stunned", "dazed"]


def test_a_psi_object_attribute_of_blank_text_is_unset_and_of_huge_text_refused() -> None:
    """docs/ADAPTERS.md: objects are stored "as compact JSON text; `null` as `""`": text
    of spaces is no value either; JSON text longer than 100,000 characters is refused
    there rather than parsed."""
    data = ulcen()
    data["attribs"].append({"name": "psi_mind", "current": "   ", "max": ""})
    assert "mind" not in SHEET.import_(data, "revised-2e").combatant
    data["attribs"][-1]["current"] = json.dumps({"state": "open", "note": "x" * 100_000})
    with pytest.raises(InvalidInput) as err:
        SHEET.import_(data, "revised-2e")
    assert err.value.problems[0].message == "text longer than 100000 characters"


def test_a_combat_strength_mind_is_psionic_when_a_strength_is_recorded_even_spent() -> None:
    """docs/ADAPTERS.md: combat-strength `psionic` is "true only when a strength is
    recorded": a maximum of 60 is one, though the attack strength now stands at 0;
    none recorded is non-psionic, with a warning."""
    data = ulcen()
    data["attribs"] += [{"name": "psi_attack_strength", "current": "0", "max": "60"},
                        {"name": "psi_defense_strength", "current": "0", "max": ""}]
    got = SHEET.import_(data, "combat-strength")
    assert got.combatant["psionic"] is True
    assert not any("non-psionic" in w for w in got.warnings), got.warnings
    got = SHEET.import_(ulcen(), "combat-strength")
    assert got.combatant["psionic"] is False
    assert "no attack or defense strength recorded; taken as non-psionic" in got.warnings


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


def test_roll20_generic_sources_name_the_mapping_default_a_value_came_from() -> None:
    """docs/ADAPTERS.md: ``sources`` holds the JSON Pointer each field was read from,
    the mapping ``default`` a value came from included."""
    data = {"mapping": {"fields": {"psp": "Power", "int": "INT", "level": "Level"},
                        "systems": {"revised-2e": {"kind": {"path": "psi_kind",
                                                            "default": "psionicist"}}}},
            "character": {"id": "-Mchar", "name": "Nia", "attribs": [
                {"name": "power", "current": "12", "max": ""},
                {"name": "int", "current": 16, "max": ""}]}}
    got = GENERIC.import_(data, "revised-2e")
    assert got.sources["kind"] == "/mapping/systems/revised-2e/kind/default"
    assert got.sources["psp"] == "/character/attribs/0/current"


def test_roll20_generic_with_no_hp_mapped_writes_no_hp() -> None:
    """As on Foundry (test_write_back_rules): hp is written back only where it was read,
    never into the state store (no ``psi_hp``)."""
    data = {"mapping": {"fields": {"int": "INT", "level": "Level"}},
            "character": {"id": "-Mchar", "name": "Nia", "attribs": [
                {"name": "int", "current": 16, "max": ""}]}}
    assert GENERIC.updates(data, "power-pool", {"hp": 9}, {"hp": 4}) == []


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
    # "the maximum (HP max, else a separate HP_max attribute)": HP max comes first
    attr(separate, "HP")["max"] = "22"
    got = SHEET.import_(separate, "revised-2e")
    assert got.combatant["hp"] == 22
    assert [w for w in got.warnings if "HP current is empty" in w] == \
        ["HP current is empty; taken as its maximum 22"]


def test_a_separate_psp_max_attribute_is_the_maximum_and_written_back_there() -> None:
    """docs/ADAPTERS.md: ``psp``, ``psp_max`` are "``PSP`` current and max (or a separate
    ``PSP_max`` attribute)", each written back where it was read."""
    data = ulcen()
    attr(data, "PSP")["max"] = ""
    data["attribs"].append({"name": "PSP_max", "current": "50", "max": ""})
    got = SHEET.import_(data, "revised-2e")
    assert (got.combatant["psp"], got.combatant["psp_max"]) == (40, 50)
    before = got.combatant
    assert SHEET.updates(data, "revised-2e", before, {**before, "psp_max": 52}) == [
        {"character_id": "-MzUlcen0000000001", "attributes": {"PSP_max": {"current": 52}}}]


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


def test_an_empty_psi_die_is_the_class_s_hit_die_with_a_warning() -> None:
    """docs/ADAPTERS.md: `""` counts as empty (the Mod script creates psi_* attributes
    with empty values); the pool's die is then the 2e hit die of the class named beside
    the level taken (the pool is the creature's Hit Dice), d8 for a monster or a class
    the adapter does not know, with a warning."""
    data = ulcen()
    data["attribs"].append({"name": "psi_die", "current": "", "max": ""})
    got = SHEET.import_(data, "power-pool")
    assert got.combatant["die"] == 8
    assert "psi_die is empty; the pool's die taken as d8" in got.warnings
    data["attribs"] += [{"name": "class1", "current": "Fighter", "max": ""},
                        {"name": "class2", "current": "Mage", "max": ""}]
    attr(data, "level-class1")["current"] = "6"
    attr(data, "level-class2")["current"] = "4"
    got = SHEET.import_(data, "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (6, 10)
    assert "psi_die is empty; the pool's die taken as d10, the hit die of a warrior" \
        in got.warnings
    attr(data, "level-class2")["current"] = "7"
    assert SHEET.import_(data, "power-pool").combatant["die"] == 4


def test_a_class_name_with_a_symbol_beside_it_gives_that_class_s_die() -> None:
    """docs/ADAPTERS.md: a class name is read by its runs of letters, and a symbol is
    none ("™" is no "TM" joined to the word): "Fighter™" rolls a warrior's d10 (it was
    d8, no class known), "Mage№2" a wizard's d4."""
    for name, die in (("Fighter™", 10), ("Mage№2", 4)):
        data = ulcen()
        data["attribs"] += [{"name": "psi_die", "current": "", "max": ""},
                            {"name": "class1", "current": name, "max": ""}]
        assert SHEET.import_(data, "power-pool").combatant["die"] == die


def test_an_empty_psi_die_of_a_psionicist_is_d6_and_of_a_monster_d8() -> None:
    """The 2e hit die of a psionicist is d6 (Player's Handbook: rogues and psionicists
    d6); a monster's is d8, even where the sheet also holds a class level (of a
    psionicist, here) that the Monster Sheet shown sets aside; a character with neither
    a class level nor Hit Dice gets d8."""
    data = ulcen()
    data["attribs"] += [{"name": "psi_die", "current": "", "max": ""},
                        {"name": "class1", "current": "Psionicist", "max": ""}]
    got = SHEET.import_(data, "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (4, 6)
    assert "psi_die is empty; the pool's die taken as d6, the hit die of a psionicist" \
        in got.warnings
    flayer = monster(**{"psi_die": "", "level-class1": "3", "class1": "Psionicist",
                        "tab11": "2"})
    got = SHEET.import_(flayer, "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (8, 8)
    assert "psi_die is empty; the pool's die taken as d8, a monster's hit die" \
        in got.warnings
    nobody = {"id": "-MzNobody000000001", "name": "Nobody",
              "attribs": [{"name": "psi_die", "current": "", "max": ""},
                          {"name": "class1", "current": "Fighter", "max": ""}]}
    got = SHEET.import_(nobody, "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (1, 8)
    assert "psi_die is empty; the pool's die taken as d8" in got.warnings


def test_an_empty_psi_die_of_several_classes_at_one_level_is_their_largest_hit_die(
        ) -> None:
    """Seed 001: the pool is dice of one type, as many as the creature's Hit Dice; of the
    classes at the level taken the largest hit die (docs/ADAPTERS.md), whatever the order
    they are written in: a Fighter/Psionicist's and a Psionicist/Fighter's is the
    fighter's d10 (the first written gave d10 for one and d6 for the other), as Fighter 5
    beside Psionicist 5 in two boxes, either way round."""
    dice, warned = [], []
    for class1, class2 in (("Fighter/Psionicist", None), ("Psionicist/Fighter", None),
                           ("Fighter", "Psionicist"), ("Psionicist", "Fighter")):
        data = ulcen()
        attr(data, "level-class1")["current"] = "5"
        data["attribs"] += [{"name": "psi_die", "current": "", "max": ""},
                            {"name": "class1", "current": class1, "max": ""}]
        if class2 is not None:
            data["attribs"].append({"name": "class2", "current": class2, "max": ""})
            attr(data, "level-class2")["current"] = "5"
        got = SHEET.import_(data, "power-pool")
        dice.append((got.combatant["hit_dice"], got.combatant["die"]))
        warned.append([w for w in got.warnings if "hit di" in w])
    assert dice == [(5, 10)] * 4
    taken = "psi_die is empty; the pool's die taken as d10, the hit die of a warrior"
    assert warned[0] == ['classes at level 5 with different hit dice ("Fighter/Psionicist" '
                         'as a warrior d10, "Fighter/Psionicist" as a psionicist d6); the '
                         "pool rolls the largest, d10", taken]
    assert warned[3] == ['classes at level 5 with different hit dice ("Psionicist" d6, '
                         '"Fighter" d10); the pool rolls the largest, d10', taken]
    data = ulcen()
    data["attribs"] += [{"name": "psi_die", "current": "", "max": ""},
                        {"name": "class1", "current": "Thief/Psionicist", "max": ""}]
    got = SHEET.import_(data, "power-pool")
    assert got.combatant["die"] == 6
    assert "psi_die is empty; the pool's die taken as d6, the hit die of a rogue" \
        in got.warnings


@pytest.mark.parametrize("text", ["21-@{level-class1}", "21-ceil(@{level-class1}/2)",
                                  "21 - @{Level-Class1}", "[[21-@{level-class1}]]", "21-4",
                                  "@{misc-mod}", "twenty"])
def test_mthac0_text_that_is_no_number_is_derived_from_the_level_with_a_warning(
        text: str) -> None:
    """The sheet rolls its MThAC0 box inside [[...]] ("[[@{MThAC0}-(1d20+...)]]",
    adnd2e-revised-psionics-tab.html), so any roll expression is legal there, and its own
    help suggests "Psion - 21-@{level-class#} | Wild Talent - 21-ceil(@{level-class#}/2)"
    in place of the number: text that is no number leaves MTHAC0 to the engine, which
    derives it from the level (COMBATANTS.md: psionicist 21 - level), with a warning
    naming the text and the MTHAC0 derived."""
    data = ulcen()
    attr(data, "MThAC0")["current"] = text
    got = SHEET.import_(data, "revised-2e")
    assert "mthac0" not in got.combatant
    assert REVISED.combatant(got.combatant)["mthac0"] == 17
    assert (f"MThAC0 holds {json.dumps(text)}, not a whole number (the sheet rolls whatever "
            "its box holds); MTHAC0 derived from the level instead (psionicist, "
            "COMBATANTS.md): 21 - 4 = 17") in got.warnings
    assert SHEET.import_(SHEET.trimmed(data, "revised-2e"), "revised-2e") == got


@pytest.mark.parametrize("number", ["150", "-101", "17.5", 17.5, "12345678901"])
def test_an_mthac0_number_out_of_range_or_not_whole_is_still_refused(number: Any) -> None:
    """A number in the box is read as a number: one the adapter cannot take is refused
    at its place, as before (a roll expression is not)."""
    data = ulcen()
    attr(data, "MThAC0")["current"] = number
    with pytest.raises(InvalidInput) as err:
        SHEET.import_(data, "revised-2e")
    assert err.value.problems[0].path == "/attribs/8/current"


@pytest.mark.parametrize("number", ["-100", "100", " 100 ", "+100"])
def test_an_mthac0_number_within_minus_100_and_100_is_read(number: str) -> None:
    """docs/ADAPTERS.md: only a number "not whole or not within −100..100" is refused:
    the bounds themselves are read, in either box."""
    data = ulcen()
    attr(data, "MThAC0")["current"] = number
    assert SHEET.import_(data, "revised-2e").combatant["mthac0"] == int(number)
    attr(data, "MThAC0")["current"] = "17"
    attr(data, "mthac0adj")["current"] = number
    assert SHEET.import_(data, "revised-2e").combatant["mthac0"] == 17 - int(number)


def test_an_mthac0_expression_says_the_adjustment_is_not_applied() -> None:
    """docs/ADAPTERS.md: MThAC0 text that is no number leaves MTHAC0 to the engine "with
    a warning (also when `mthac0adj` is not 0: it is then not applied)"."""
    data = ulcen()
    attr(data, "MThAC0")["current"] = "21-@{level-class1}"
    attr(data, "mthac0adj")["current"] = "2"
    got = SHEET.import_(data, "revised-2e")
    assert "mthac0" not in got.combatant
    assert 'MThAC0 holds "21-@{level-class1}", not a whole number (the sheet rolls ' \
        "whatever its box holds); MTHAC0 derived from the level instead (psionicist, " \
        "COMBATANTS.md): 21 - 4 = 17; the adjustment +2 is not applied" in got.warnings


@pytest.mark.parametrize("text", ["@{misc-mod}", "1d4", "+2 vs undead"])
def test_an_mthac0_adjustment_that_is_no_number_is_ignored_with_a_warning(text: str) -> None:
    """The sheet adds mthac0adj to its roll inside [[...]] too ("(@{mthac0adj})"), so
    any expression is legal there; the engine takes a number, so it is ignored, said.
    A number out of range is still refused."""
    data = ulcen()
    attr(data, "mthac0adj")["current"] = text
    got = SHEET.import_(data, "revised-2e")
    assert got.combatant["mthac0"] == 17
    assert (f"mthac0adj holds {json.dumps(text)}, not a whole number; the adjustment is "
            "ignored") in got.warnings
    attr(data, "mthac0adj")["current"] = "101"
    with pytest.raises(InvalidInput) as err:
        SHEET.import_(data, "revised-2e")
    assert err.value.problems[0].path == "/attribs/9/current"


def test_a_never_set_mthac0_is_said_to_show_its_default_20_and_the_derived_one_named() -> None:
    """adnd2e-revised-psionics-tab.html: the MThAC0 box has value="20", which the sheet
    shows and rolls but Roll20 does not store, so a character who never set it has no
    MThAC0 attribute. The engine derives MTHAC0 from the level instead (COMBATANTS.md),
    which may not be the 20 the sheet shows: said, with the MTHAC0 derived (both readings
    of a wild talent's, H-2E-WT-MTHAC0). Not said when psi_mthac0 gives it, nor for a
    nonpsionic mind, which has none."""
    data = ulcen()
    data["attribs"] = [row for row in data["attribs"] if row["name"] != "MThAC0"]
    got = SHEET.import_(data, "revised-2e")
    assert "mthac0" not in got.combatant
    assert ("MThAC0 was never set: the sheet shows and rolls its default 20; MTHAC0 derived "
            "from the level instead (psionicist, COMBATANTS.md): 21 - 4 = 17") in got.warnings
    assert SHEET.import_(SHEET.trimmed(data, "revised-2e"), "revised-2e") == got
    wild = copy.deepcopy(data)
    wild["attribs"].append({"name": "psi_kind", "current": "wild-talent", "max": ""})
    assert ("MThAC0 was never set: the sheet shows and rolls its default 20; MTHAC0 derived "
            "from the level instead (wild-talent, COMBATANTS.md): 21 - ceil(4/2) = 19, or "
            "21 - 4 = 17 when H-2E-WT-MTHAC0 is off") \
        in SHEET.import_(wild, "revised-2e").warnings
    cleared = ulcen()
    attr(cleared, "MThAC0")["current"] = ""
    assert any(w.startswith("MThAC0 is empty; MTHAC0 derived from the level instead")
               for w in SHEET.import_(cleared, "revised-2e").warnings)
    told = copy.deepcopy(data)
    told["attribs"].append({"name": "psi_mthac0", "current": "15", "max": ""})
    got = SHEET.import_(told, "revised-2e")
    assert got.combatant["mthac0"] == 15
    assert not any(w.startswith("MThAC0") for w in got.warnings)
    # (the attack row's own 17 is named against the 15 used)
    assert any(w.endswith("every attack uses the one read from psi_mthac0, 15")
               for w in got.warnings)
    mundane = copy.deepcopy(data)
    mundane["attribs"] = [row for row in mundane["attribs"] if row["name"] != "PSP"]
    got = SHEET.import_(mundane, "revised-2e")
    assert got.combatant["kind"] == "nonpsionic"
    assert not any("MThAC0" in w for w in got.warnings)
    # the other systems have no MTHAC0
    assert not any("MThAC0" in w for w in SHEET.import_(data, "power-pool").warnings)


def test_a_save_vs_paralyzation_of_1_is_read() -> None:
    """COMBATANTS.md: save_paralyzation is 1-20, as the engine takes it."""
    data = ulcen()
    data["attribs"].append({"name": "psi_save_paralyzation", "current": "1", "max": ""})
    assert SHEET.import_(data, "revised-2e").combatant["save_paralyzation"] == 1


def core_tab_mode_rows(tab: str, partial: str) -> dict[str, tuple[str, str]]:
    """The Attack Modes and Defense Modes sections of one revision of the sheet's
    "Psionics Core" tab (its file and the partial it includes) and the attribute naming
    each row: the partial's fieldset name and first attribute, with its ``#REPLACEn#``
    filled in from the tab's include line as the sheet's build does
    (tests/fixtures/README.md)."""
    tab_text = (FIXTURES / "roll20" / tab).read_text(encoding="utf-8")
    part = (FIXTURES / "roll20" / partial).read_text(encoding="utf-8")
    rows = {}
    for args in re.findall(r"insert_psionic-core-discipline\.html_\(((?:Attack|Defense) "
                           r"Modes,[^)]*)\)", tab_text):
        values = args.split(",")
        filled = re.sub(r"#REPLACE(\d+)#", lambda m, v=values: v[int(m.group(1))], part)
        section = re.search(r'<fieldset name="([^"]+)"', filled)
        name = re.search(r'name="attr_([^"]+)"', filled)
        assert section is not None and name is not None
        rows[values[0]] = (section.group(1), name.group(1))
    return rows


#: the two revisions of the Psionics Core tab found, each with its partial
CORE_TABS = {
    "earlier": ("adnd2e-revised-psionic-core-earlier.html",
                "adnd2e-revised-psionic-core-discipline.html"),
    "current": ("adnd2e-revised-psionic-core-tab.html",
                "adnd2e-revised-psionic-core-discipline-current.html"),
}


def test_both_revisions_of_the_core_tab_keep_their_mode_rows_in_the_same_sections() -> None:
    """The earlier partial names its section ``repeating_psion-#REPLACE1#`` and the tab
    of its time passes ``attack5``; the current one ``repeating_#REPLACE1#`` and its tab
    ``psion-attack5`` (as sheetWorkers.js's PSIONIC_CORE_SECTIONS has it): the same rows.
    The name earlier versions of this adapter read, ``repeating_psion-psion-attack5``,
    is what the earlier partial gives with the current tab, a pair no revision had."""
    for tab, partial in CORE_TABS.values():
        assert core_tab_mode_rows(tab, partial) == {
            "Attack Modes": ("repeating_psion-attack5", "psionattacking"),
            "Defense Modes": ("repeating_psion-defense5", "psiondefending")}, tab
    assert core_tab_mode_rows("adnd2e-revised-psionic-core-tab.html",
                              "adnd2e-revised-psionic-core-discipline.html") == {
        "Attack Modes": ("repeating_psion-psion-attack5", "psionattacking"),
        "Defense Modes": ("repeating_psion-psion-defense5", "psiondefending")}


def core_tab_character(rows: dict[str, tuple[str, str]]) -> dict[str, Any]:
    """Ulcen with the modes kept in the Psionics Core tab's rows ``rows`` (as
    ``core_tab_mode_rows`` gives them) instead of the Psionics Revised tab's."""
    attack_section, attack_name = rows["Attack Modes"]
    defense_section, defense_name = rows["Defense Modes"]
    data = ulcen()
    data["attribs"] = [row for row in data["attribs"]
                       if "psionic-attack" not in row["name"]
                       and "psionic-defense" not in row["name"]]
    data["attribs"] += [
        {"name": f"{attack_section}_-MzCore0001_{attack_name}", "current": "Psychic Crush"},
        {"name": f"{attack_section}_-MzCore_002_{attack_name}", "current": "Id Insinuation"},
        {"name": f"{defense_section}_-MzCore0003_{defense_name}", "current": "Mind Blank"},
        {"name": f"{defense_section}_-MzCore0004_{defense_name}", "current": "Tower of Iron Will"}]
    return data


@pytest.mark.parametrize("revision", sorted(CORE_TABS))
def test_the_core_tabs_attack_and_defense_mode_rows_are_read(revision: str) -> None:
    """The sheet's "Psionics Core" tab (Complete Psionics Handbook) lists the modes as power
    rows of its Attack Modes and Defense Modes sections, not in the Psionics Revised tab's
    attack and defense rows; a character kept there knows its modes too (the section
    names read out of each revision of the tab; a row id may hold '_')."""
    data = core_tab_character(core_tab_mode_rows(*CORE_TABS[revision]))
    c = SHEET.import_(data, "revised-2e").combatant
    assert c["attacks"] == ["psychic-crush", "id-insinuation"]
    assert c["defenses"] == ["mind-blank", "tower-of-iron-will"]
    # kept by an encounter, and never written: they are the sheet's own rows
    assert SHEET.import_(SHEET.trimmed(data, "revised-2e"), "revised-2e").combatant == c
    assert SHEET.updates(data, "revised-2e", c, {**c, "attacks": ["psychic-crush"]}) == []


def test_rows_of_the_name_earlier_versions_read_are_still_read() -> None:
    """``repeating_psion-psion-attack5`` / ``-defense5`` (the earlier partial with the
    current tab): no revision found stores rows there, but this adapter read them before,
    so it still does."""
    data = core_tab_character({
        "Attack Modes": ("repeating_psion-psion-attack5", "psionattacking"),
        "Defense Modes": ("repeating_psion-psion-defense5", "psiondefending")})
    c = SHEET.import_(data, "revised-2e").combatant
    assert (c["attacks"], c["defenses"]) == (["psychic-crush", "id-insinuation"],
                                             ["mind-blank", "tower-of-iron-will"])


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


def test_the_page_shown_decides_only_a_sheet_holding_both_hit_dice_and_class_levels() -> None:
    """``tab11`` is the sheet's page switch (2ESheet-base.html: 1 Character Sheet, 2
    Monster Sheet, 3 DM Screen, 4 Sheet Settings); it records the page last clicked. A
    sheet holding both Hit Dice and class levels is read as the page shown: a monster's
    on the Monster Sheet, else a character's, its Hit Dice box ignored; both said."""
    got = SHEET.import_(monster(**{"level-class1": "3", "tab11": "2"}), "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (8, "monster")
    assert "the Monster Sheet is shown (tab11 = 2): Hit Dice taken from hitdice, 8; class " \
        "levels (level-class1=3) ignored" in got.warnings
    for page in ({}, {"tab11": "1"}, {"tab11": "3"}):
        got = SHEET.import_(monster(**{"level-class1": "3", "class1": "Psionicist", **page}),
                            "revised-2e")
        assert (got.combatant["level"], got.combatant["class_group"]) == (3, "psionicist")
        assert "the sheet has both Hit Dice (hitdice 8) and class levels (level-class1=3), " \
            "and the Monster Sheet page is not the one shown (tab11): read as a " \
            "character, the Hit Dice ignored" in got.warnings


def test_the_class_beside_the_level_taken_gives_the_class_group() -> None:
    """The sheet names each class beside its level (``class1`` by ``level-class1``, from
    its list Warrior/Wizard/Priest/Rogue/Psion, Fighter, Mage, Thief ...); with no
    psionicist among them the class of the highest level gives the level and the 2e
    class group, said. An unknown class is said, with the attribute that sets it (of
    several classes, in the warning on the save, which it then sets no longer)."""
    data = ulcen()
    data["attribs"] += [{"name": "class1", "current": "Fighter", "max": ""},
                        {"name": "class2", "current": "Thief", "max": ""}]
    attr(data, "level-class2")["current"] = "6"
    got = SHEET.import_(data, "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (6, "rogue")
    assert "several class levels (level-class1=4, level-class2=6); level taken as the " \
        "highest, 6 (no class is named a psionicist's: Psion...)" in got.warnings
    attr(data, "class2")["current"] = "Mystic"
    got = SHEET.import_(data, "revised-2e")
    assert "class_group" not in got.combatant
    assert not any("class group" in w for w in got.warnings if w.startswith("several"))
    assert any('"Mystic" 6 left out' in w for w in got.warnings)
    alone = ulcen()
    alone["attribs"].append({"name": "class1", "current": "Mystic", "max": ""})
    got = SHEET.import_(alone, "revised-2e")
    assert "class_group" not in got.combatant
    assert any("no class group" in w and "psi_class_group" in w for w in got.warnings)
    # psi_class_group overrides
    data["attribs"].append({"name": "psi_class_group", "current": "wizard", "max": ""})
    assert SHEET.import_(data, "revised-2e").combatant["class_group"] == "wizard"


LEVEL_TAKEN = ("several class levels (level-class1=4, level-class2=6); level taken as the "
               "highest, 6 (no class is named a psionicist's: Psion...)")
GROUP_TAKEN = ('several class levels (level-class1=4, level-class2=6); class group rogue '
               'taken from the class of the highest level ("Thief", class2); psi_class_group '
               'sets it')


@pytest.mark.parametrize(("store", "said"), [
    ({}, {LEVEL_TAKEN, GROUP_TAKEN}),
    ({"psi_level": "5"}, {GROUP_TAKEN}),
    ({"psi_class_group": "wizard"}, {LEVEL_TAKEN}),
    ({"psi_level": "5", "psi_class_group": "wizard"}, set()),
])
def test_the_class_level_taken_of_several_is_said_of_its_level_and_of_its_class_group_apart(
        store: dict[str, str], said: set[str]) -> None:
    """docs/ADAPTERS.md: the class beside the level taken of several also gives the
    revised-2e class group, and each is said in a warning of its own, withdrawn when the
    state store sets what it explains: with psi_level 5 alone nothing says level 6 was
    taken, but the group's origin still is; with psi_class_group alone the level taken
    still is."""
    data = ulcen()
    data["attribs"] += [{"name": "class1", "current": "Fighter", "max": ""},
                        {"name": "class2", "current": "Thief", "max": ""},
                        *({"name": k, "current": v, "max": ""} for k, v in store.items())]
    attr(data, "level-class2")["current"] = "6"
    got = SHEET.import_(data, "revised-2e")
    c = got.combatant
    assert (c["level"], c["class_group"]) == (int(store.get("psi_level", 6)),
                                              store.get("psi_class_group", "rogue"))
    assert {w for w in got.warnings if w.startswith("several class")} == said, got.warnings


def test_of_class_levels_as_high_the_first_on_the_sheet_gives_the_class_group() -> None:
    """docs/ADAPTERS.md: of class levels as high, the first on the sheet (class1 before
    class2, class9 before class10, whatever order the attributes come in) gives the
    class group, and the warning says it is the first of them, not the one class of
    that level."""
    data = ulcen()
    data["attribs"] = [a for a in data["attribs"] if not a["name"].startswith("level-class")]
    data["attribs"] += [{"name": "level-class2", "current": "4", "max": ""},
                        {"name": "class2", "current": "Thief", "max": ""},
                        {"name": "level-class1", "current": "4", "max": ""},
                        {"name": "class1", "current": "Fighter", "max": ""}]
    got = SHEET.import_(data, "revised-2e")
    assert got.combatant["class_group"] == "warrior"
    assert [w for w in got.warnings if "class group" in w and w.startswith("several")] == [
        'several class levels (level-class2=4, level-class1=4); class group warrior taken '
        'from the first of the classes of the highest level ("Fighter", class1); '
        'psi_class_group sets it']
    for a in data["attribs"]:
        a["name"] = {"level-class2": "level-class10", "class2": "class10",
                     "level-class1": "level-class9", "class1": "class9"}.get(a["name"],
                                                                             a["name"])
    assert SHEET.import_(data, "revised-2e").combatant["class_group"] == "warrior"


def test_a_power_pool_is_told_only_the_hit_dice_taken_of_several_class_levels() -> None:
    """power-pool has no class group: of several class levels it is told only the Hit
    Dice taken, withdrawn when psi_pool's max sets them."""
    data = ulcen()
    data["attribs"] += [{"name": "class1", "current": "Fighter", "max": ""},
                        {"name": "class2", "current": "Thief", "max": ""}]
    attr(data, "level-class2")["current"] = "6"
    got = SHEET.import_(data, "power-pool")
    assert [w for w in got.warnings if w.startswith("several class")] == \
        ["several class levels (level-class1=4, level-class2=6); level taken as the highest, 6"]
    data["attribs"].append({"name": "psi_pool", "current": "5", "max": "5"})
    got = SHEET.import_(data, "power-pool")
    assert got.combatant["hit_dice"] == 5
    assert not any(w.startswith("several class") for w in got.warnings), got.warnings


@pytest.mark.parametrize("named", ["Psionicist", "Psion", "psionicist (Dark Sun)"])
def test_a_multi_class_psionicist_fights_at_its_psionicist_level(named: str) -> None:
    """The sheet's MThAC0 help: "Be sure to insert your relevant class level" (21 -
    @{level-class#}): a Fighter 6 / Psionicist 4's psionic level is 4, not 6, and the
    class group the psionicist's (the sheet's class list spells it Psion). Its derived
    MTHAC0 is 21 - 4 = 17; said. A power pool's Hit Dice are the character's, the
    highest level (as the ARS adapter takes them)."""
    data = ulcen()
    data["attribs"] = [row for row in data["attribs"] if row["name"] != "MThAC0"]
    data["attribs"] += [{"name": "class1", "current": "Fighter", "max": ""},
                        {"name": "class2", "current": named, "max": ""}]
    attr(data, "level-class1")["current"] = "6"
    attr(data, "level-class2")["current"] = "4"
    got = SHEET.import_(data, "revised-2e")
    c = got.combatant
    assert (c["level"], c["class_group"]) == (4, "psionicist")
    assert REVISED.combatant(c)["mthac0"] == 17
    assert (f"several class levels (level-class1=6, level-class2=4); level taken as the "
            f"psionicist class's ({json.dumps(named)}, level-class2), 4") in got.warnings
    assert (f"several class levels (level-class1=6, level-class2=4); class group psionicist "
            f"taken from the psionicist class ({json.dumps(named)}, class2); psi_class_group "
            "sets it") in got.warnings
    pool = SHEET.import_(data, "power-pool")
    assert pool.combatant["hit_dice"] == 6
    assert ("several class levels (level-class1=6, level-class2=4); level taken as the "
            "highest, 6") in pool.warnings


def test_a_class_box_is_read_by_its_class_words_not_its_race() -> None:
    """A GM writes the race in the class box ("Half-elf Cleric"): the class group is the
    cleric's (a priest), as the elf is a class only alone (BECMI); so is the save of a
    character of two such boxes (RULES.md table 1.7: a priest of level 5 saves at 9, a
    warrior of level 2 at 14). A box naming a psionicist anywhere ("Fighter/Psionicist")
    is still the psionicist's class, whose level the psionic rules count; its group is
    that of the class written first, as for any box of several classes."""
    alone = ulcen()
    alone["attribs"].append({"name": "class1", "current": "Half-elf Cleric", "max": ""})
    assert SHEET.import_(alone, "revised-2e").combatant["class_group"] == "priest"
    data = fighter_and_psionicist(2, 5, "Half-elf Cleric")
    attr(data, "class1")["current"] = "Half-Elf Fighter"
    got = SHEET.import_(data, "revised-2e")
    assert got.combatant["save_paralyzation"] == 9
    assert ('save vs. paralyzation 9 from "Half-elf Cleric" 5, the best of "Half-Elf '
            'Fighter" 2 / "Half-elf Cleric" 5 (psi_save_paralyzation sets it)') \
        in got.warnings
    data = fighter_and_psionicist(6, 4, "Fighter/Psionicist")
    attr(data, "class1")["current"] = "Thief"
    got = SHEET.import_(data, "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (4, "warrior")


def test_a_box_naming_several_classes_saves_with_the_best_of_them() -> None:
    """AD&D 2e (PHB): a multi-class character uses the best saving throw of its classes.
    A GM who writes "Mage/Psionicist" in one box beside one level has both classes at it:
    at level 3 the psionicist's save, 13, beats the wizard's 14 (RULES.md table 1.7),
    though the group is the wizard's, written first; a Fighter/Psionicist of level 9
    saves as a warrior, 8, not as a psionicist, 11. A box of one class is unchanged."""
    for box, level, group, save in (("Mage/Psionicist", 3, "wizard", 13),
                                    ("Fighter/Psionicist", 9, "warrior", 8)):
        data = ulcen()
        data["attribs"].append({"name": "class1", "current": box, "max": ""})
        attr(data, "level-class1")["current"] = str(level)
        c = SHEET.import_(data, "revised-2e").combatant
        assert (c["level"], c["class_group"], c["save_paralyzation"]) == (level, group, save)
        assert REVISED.combatant(c)["save_paralyzation"] == save
    data = ulcen()
    data["attribs"].append({"name": "class1", "current": "Mage/Psionicist", "max": ""})
    attr(data, "level-class1")["current"] = "3"
    got = SHEET.import_(data, "revised-2e")
    assert ('save vs. paralyzation 13 from "Mage/Psionicist" 3 as a psionicist, the best '
            'of "Mage/Psionicist" 3 as a wizard or a psionicist (psi_save_paralyzation '
            'sets it)') in got.warnings
    data["attribs"][-1]["current"] = "Psionicist"
    got = SHEET.import_(data, "revised-2e")
    assert "save_paralyzation" not in got.combatant
    assert not any("save vs. paralyzation" in w for w in got.warnings)


def fighter_and_psionicist(fighter: int = 6, psionicist: int = 4,
                           second: str = "Psionicist") -> dict[str, Any]:
    """Ulcen as a Fighter ``fighter`` / ``second`` ``psionicist`` (class1, class2)."""
    data = ulcen()
    data["attribs"] += [{"name": "class1", "current": "Fighter", "max": ""},
                        {"name": "class2", "current": second, "max": ""}]
    attr(data, "level-class1")["current"] = str(fighter)
    attr(data, "level-class2")["current"] = str(psionicist)
    return data


def test_a_multi_class_character_saves_vs_paralyzation_with_its_best_class() -> None:
    """AD&D 2e (PHB, saving throws): a multi-class character uses the best saving throw
    of its classes, each at its own level (RULES.md §1.7). A Fighter 6 / Psionicist 4
    fights at its psionicist level 4, but saves at 11, a warrior's of level 6, not 13, a
    psionicist's of level 4; said. When the psionicist class saves best, that is the
    one named (Psionicist 9, 11, against Fighter 2's 14)."""
    got = SHEET.import_(fighter_and_psionicist(), "revised-2e")
    c = got.combatant
    assert (c["level"], c["class_group"], c["save_paralyzation"]) == (4, "psionicist", 11)
    assert REVISED.combatant(c)["save_paralyzation"] == 11
    assert ('save vs. paralyzation 11 from "Fighter" 6, the best of "Fighter" 6 / '
            '"Psionicist" 4 (psi_save_paralyzation sets it)') in got.warnings
    got = SHEET.import_(fighter_and_psionicist(2, 9), "revised-2e")
    assert got.combatant["save_paralyzation"] == 11
    assert ('save vs. paralyzation 11 from "Psionicist" 9, the best of "Fighter" 2 / '
            '"Psionicist" 9 (psi_save_paralyzation sets it)') in got.warnings


def test_a_knight_beside_a_class_makes_no_multi_class() -> None:
    """A knight is a class only when no class is written beside it (docs/ADAPTERS.md): a
    "Mage (Knight of the Post)" 9 is a wizard, whose save the engine derives from the
    wizard's row (it saved at 8 "as a warrior, the best of" a wizard and a warrior), and
    a "Cleric (Knight)" 9 a priest, whose power pool rolls the priest's d8 (it rolled a
    warrior's d10 and saved at 7 as the best of a priest and a warrior)."""
    for name, group in (("Mage (Knight of the Post)", "wizard"), ("Cleric (Knight)", "priest")):
        data = ulcen()
        attr(data, "level-class1")["current"] = "9"
        data["attribs"] += [{"name": "psi_die", "current": "", "max": ""},
                            {"name": "class1", "current": name, "max": ""}]
        got = SHEET.import_(data, "revised-2e")
        assert got.combatant["class_group"] == group
        assert "save_paralyzation" not in got.combatant, got.warnings
    assert SHEET.import_(data, "power-pool").combatant["die"] == 8


def test_a_multi_class_characters_save_leaves_out_a_class_of_no_known_group() -> None:
    """A class the adapter knows no 2e class group of ("Mystic") has no saving throw row
    to read: the best of the others is taken, and the warning says which was left out.
    With no class of a known group the engine derives the save as before."""
    got = SHEET.import_(fighter_and_psionicist(4, 6, "Mystic"), "revised-2e")
    assert (got.combatant["level"], got.combatant["save_paralyzation"]) == (6, 13)
    assert ('save vs. paralyzation 13 from "Fighter" 4, the best of "Fighter" 4 / "Mystic" '
            '6 ("Mystic" 6 left out: no class group known for it; psi_save_paralyzation '
            'sets it)') in got.warnings
    data = fighter_and_psionicist(4, 6, "Mystic")
    attr(data, "class1")["current"] = "Seer"
    got = SHEET.import_(data, "revised-2e")
    assert "save_paralyzation" not in got.combatant
    assert not any(w.startswith("save vs. paralyzation") for w in got.warnings)


def test_the_best_class_save_warning_quotes_the_class_boxes_as_the_others_do() -> None:
    """The sheet takes any text in a class box: the warning on the save quotes each, cut
    short at 40 characters, as the one on the level taken quotes the psionicist class
    (a box with a line break or a long note must not spill into the GM's chat as it
    stands); a class whose box is empty is named by the level-classN beside it."""
    named = 'Psionicist "Dark Sun"\nsee the notes tab for the kit and its powers'
    got = SHEET.import_(fighter_and_psionicist(2, 9, named), "revised-2e")
    quoted = json_text(named, 40)
    assert f"level taken as the psionicist class's ({quoted}, level-class2), 9" in \
        got.warnings[0]
    assert (f'save vs. paralyzation 11 from {quoted} 9, the best of "Fighter" 2 / '
            f"{quoted} 9 (psi_save_paralyzation sets it)") in got.warnings
    data = fighter_and_psionicist(6, 3)
    attr(data, "class2")["current"] = ""
    got = SHEET.import_(data, "revised-2e")
    assert ('save vs. paralyzation 11 from "Fighter" 6, the best of "Fighter" 6 / '
            "level-class2 3 (level-class2 3 left out: no class group known for it; "
            "psi_save_paralyzation sets it)") in got.warnings


def test_a_stored_save_or_class_group_decides_over_the_best_class() -> None:
    """The psionic state store wins over what the adapter reads: psi_save_paralyzation
    is the save; psi_class_group or psi_level, the GM's own reading of the character,
    leave the save to the engine (from that group and level), as for one class. A
    single-class character, a monster and the other systems get no derived save."""
    data = fighter_and_psionicist()
    data["attribs"].append({"name": "psi_save_paralyzation", "current": "9", "max": ""})
    got = SHEET.import_(data, "revised-2e")
    assert got.combatant["save_paralyzation"] == 9
    assert not any(w.startswith("save vs. paralyzation") for w in got.warnings)
    for name, value in (("psi_class_group", "psionicist"), ("psi_level", "5")):
        data = fighter_and_psionicist()
        data["attribs"].append({"name": name, "current": value, "max": ""})
        got = SHEET.import_(data, "revised-2e")
        assert "save_paralyzation" not in got.combatant
        assert not any(w.startswith("save vs. paralyzation") for w in got.warnings)
    assert "save_paralyzation" not in SHEET.import_(ulcen(), "revised-2e").combatant
    data = fighter_and_psionicist()
    data["attribs"] += [{"name": "hitdice", "current": "6", "max": ""},
                        {"name": "tab11", "current": "2", "max": ""}]
    assert SHEET.import_(data, "revised-2e").combatant["class_group"] == "monster"
    assert "save_paralyzation" not in SHEET.import_(data, "revised-2e").combatant
    for system in ("combat-strength", "power-pool"):
        got = SHEET.import_(fighter_and_psionicist(), system)
        assert not any(w.startswith("save vs. paralyzation") for w in got.warnings)


def test_the_best_class_save_is_never_written_back() -> None:
    """The save comes from the class levels, as the level does: a full exchange (import,
    the engine's resolve, the write-back with its round trip) writes the PSPs spent and
    no psi_save_paralyzation, and the sheet read again still saves at 11."""
    data = fighter_and_psionicist()
    target = ulcen()
    target["id"], target["name"] = "-MzTarget000000001", "Target"
    made = [SHEET.import_(d, "revised-2e").combatant for d in (data, target)]
    result = REVISED.resolve({"attacker": made[0], "defender": made[1],
                              "attack": {"mode": "mind-thrust"}},
                             dice_source(None, 1)).to_json()
    side = result["attacker"]
    assert side["before"]["save_paralyzation"] == 11
    updates = SHEET.updates(data, "revised-2e", side["before"], side["after"],
                            normalise=REVISED.combatant)
    assert updates == [{"character_id": "-MzUlcen0000000001",
                        "attributes": {"PSP": {"current": side["after"]["psp"]}}}]
    again = REVISED.combatant(SHEET.import_(apply_roll20(data, updates),
                                            "revised-2e").combatant)
    assert again == side["after"]
    assert again["save_paralyzation"] == 11


@pytest.mark.parametrize("system", ["revised-2e", "combat-strength", "power-pool"])
def test_an_export_without_an_id_is_given_one_from_its_name_and_said(system: str) -> None:
    """docs/ADAPTERS.md, Roll20 input: an export with no id, _id or oldId gets the id
    the engine makes from its name ("Zoë" → zoë), or "character" when the name has no
    letter or digit, in every system (not the engine's "combatant", nor combat-strength's
    refusal), with a warning that its write-back will not find it; no name at all is
    the id's, said too."""
    said = '(id, _id or oldId); using "{}", which Roll20 will not find for write-back'
    for name, ident in (("Zoë the Bold", "zoë-the-bold"), ("!!!", "character"),
                        ("  ", "character")):
        data = load("roll20/vttes-export-ilaris-empty.json")
        del data["character"]["oldId"]
        data["character"]["name"] = name
        got = SHEET.import_(data, system)
        assert got.combatant["id"] == ident, name
        assert f"the character has no id {said.format(ident)}" in got.warnings
        if name.strip():
            assert got.combatant["name"] == name
        else:
            assert got.combatant["name"] == ident
            assert f"the character has no name; using its id {ident}" in got.warnings
        assert builtin_systems()[system].combatant(
            {**got.combatant, "die": 8} if system == "power-pool" else got.combatant
        )["id"] == ident


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
    assert "tempHP holds 4: not counted (only HP is read and written back); add them to " \
        "HP to count them" in got.warnings
    assert "storedPSP holds 12: not counted (only PSP is read and written back); add " \
        "them to PSP to count them" in got.warnings
    # combat-strength has neither hit points nor PSPs: nothing to say there
    got = SHEET.import_(data, "combat-strength")
    assert not any("holds" in w for w in got.warnings)


def test_a_character_left_on_the_monster_page_without_hit_dice_is_still_a_character() -> None:
    """``tab11`` 2 only says the Monster Sheet page was the last clicked: a character
    with class levels and no Hit Dice is read as a character (its class group, for its
    saves, and its Intelligence score, not the Monster Sheet's box), with a warning
    naming tab11 and why."""
    data = ulcen()
    data["attribs"] += [{"name": "class1", "current": "Psion", "max": ""},
                        {"name": "tab11", "current": "2", "max": ""},
                        {"name": "monsterintelligence", "current": "Low (5-7)", "max": ""}]
    got = SHEET.import_(data, "revised-2e")
    c = got.combatant
    assert (c["level"], c["class_group"], c["int"]) == (4, "psionicist", 14)
    assert "the Monster Sheet page is shown (tab11 = 2) but holds no Hit Dice (hitdice), " \
        "and class levels are filled in (level-class1=4): read as a character (tab11 " \
        "only records the page last clicked)" in got.warnings
    assert not any("monsterintelligence" in w for w in got.warnings)
    assert SHEET.import_(SHEET.trimmed(data, "revised-2e"), "revised-2e") == got


NO_MONSTER_HIT_DICE = "no Hit Dice (hitdice) on the Monster Sheet; taken as 1"
MONSTER_PAGE_ONLY = ("read as a monster only because the Monster Sheet is the page shown "
                     "(tab11 = 2): the sheet has neither Hit Dice nor a class level; "
                     "psi_class_group sets its class group")


def test_a_sheet_on_the_monster_page_with_neither_hit_dice_nor_class_levels_is_a_monster(
        ) -> None:
    """With neither Hit Dice nor a class level the page shown is the only hint the sheet
    gives: on the Monster Sheet it is a monster of 1 Hit Die (its Intelligence from the
    Monster Sheet's box), said; elsewhere a 1st-level character, said."""
    data = monster(tab11="2", monsterintelligence="Genius")
    data["attribs"] = [row for row in data["attribs"] if row["name"] != "hitdice"]
    got = SHEET.import_(data, "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"], got.combatant["int"]) == \
        (1, "monster", 17)
    assert {NO_MONSTER_HIT_DICE, MONSTER_PAGE_ONLY} <= set(got.warnings), got.warnings
    data["attribs"] = [row for row in data["attribs"] if row["name"] != "tab11"]
    got = SHEET.import_(data, "revised-2e")
    assert got.combatant["level"] == 1 and "class_group" not in got.combatant
    assert "no class level (level-class1..) nor Hit Dice (hitdice); taken as 1" in got.warnings


@pytest.mark.parametrize("intelligence", ["", "Genius"])
def test_a_monster_read_from_the_page_alone_is_said_until_the_store_sets_its_class_group(
        intelligence: str) -> None:
    """docs/ADAPTERS.md: a sheet of neither Hit Dice nor class levels read as a monster
    because the Monster Sheet page is shown is told two things, each withdrawn when the
    state store sets what it explains: its level taken as 1 (gone once the store sets
    the level, which is then no longer 1) and, in revised-2e, that the page alone makes
    it a monster, whose class group is "monster" (its Monster Intelligence box, empty
    or not, says nothing of the group: gone once the store sets the class group). In
    power-pool, with no class group, the level's goes with the store's Hit Dice."""
    data = monster(tab11="2", monsterintelligence=intelligence)
    data["attribs"] = [row for row in data["attribs"] if row["name"] != "hitdice"]
    data["attribs"].append({"name": "psi_level", "current": "3", "max": ""})
    got = SHEET.import_(data, "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (3, "monster")
    assert MONSTER_PAGE_ONLY in got.warnings
    assert not any("taken as 1" in w for w in got.warnings), got.warnings
    data["attribs"].append({"name": "psi_class_group", "current": "warrior", "max": ""})
    got = SHEET.import_(data, "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (3, "warrior")
    assert not any("Monster Sheet" in w for w in got.warnings), got.warnings
    data["attribs"] = [row for row in data["attribs"] if row["name"] != "psi_level"]
    got = SHEET.import_(data, "revised-2e")
    assert got.combatant["level"] == 1 and NO_MONSTER_HIT_DICE in got.warnings
    assert MONSTER_PAGE_ONLY not in got.warnings
    data["attribs"].append({"name": "psi_pool", "current": "3", "max": "3"})
    got = SHEET.import_(data, "power-pool")
    assert got.combatant["hit_dice"] == 3 and not any("Monster Sheet" in w
                                                      for w in got.warnings), got.warnings
    data["attribs"] = [row for row in data["attribs"] if row["name"] != "psi_pool"]
    assert NO_MONSTER_HIT_DICE in SHEET.import_(data, "power-pool").warnings


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
    # a whole number below 0 is a number all the same (only "no whole number" is not)
    attr(data, f"{ROW}_MThAC0")["current"] = "-2"
    assert any("has its own MThAC0 -2" in w for w in SHEET.import_(data, "revised-2e").warnings)
    attr(data, f"{ROW}_MThAC0")["current"] = "12"
    attr(data, f"{ROW}_psionic-attack-name")["current"] = "Contact"
    assert not any("has its own MThAC0" in w
                   for w in SHEET.import_(data, "revised-2e").warnings)


def test_the_core_tabs_temporary_psionic_modifiers_are_added_to_the_scores() -> None:
    """The Psionics Core tab's "Temporary Psionic Ability Score modifier" boxes
    (``psion-int-mod``, ``psion-wis-mod``, ``psion-con-mod``) are added to the scores by
    the sheet's worker (sheetWorkers.js: setupStaticCalculateTotal('intelligence-psi',
    ['intelligence','psion-int-mod']), and Wisdom and Constitution alike) into the
    scores its powers roll against; every use the engine makes of a score is psionic
    (the MAC, the attack's Int bonus, the Wisdom check that closes a mind), so it takes
    the modified scores, each with a warning."""
    data = ulcen()
    data["attribs"] = [row for row in data["attribs"] if row["name"] != "selfMAC"]
    unmodified = SHEET.import_(data, "revised-2e").combatant
    data["attribs"] += [{"name": "psion-int-mod", "current": "2", "max": ""},
                        {"name": "psion-wis-mod", "current": "-1", "max": ""},
                        {"name": "psion-con-mod", "current": "0", "max": ""}]
    got = SHEET.import_(data, "revised-2e")
    c = got.combatant
    assert (c["int"], c["wis"], c["con"]) == (16, 12, 15)
    assert "Intelligence 14 with the Psionics Core tab's temporary psionic modifier " \
        "psion-int-mod +2: int 16" in got.warnings
    assert "Wisdom 13 with the Psionics Core tab's temporary psionic modifier " \
        "psion-wis-mod -1: wis 12" in got.warnings
    assert not any("psion-con-mod" in w for w in got.warnings)
    # the MAC the engine derives is that of the modified scores
    mac = REVISED.combatant(c)["mac"]
    assert mac == REVISED.combatant({**unmodified, "int": 16, "wis": 12})["mac"]
    assert mac != REVISED.combatant(unmodified)["mac"]
    assert SHEET.import_(SHEET.trimmed(data, "revised-2e"), "revised-2e") == got
    assert SHEET.import_(data, "combat-strength").combatant["int"] == 16


def test_a_temporary_psionic_modifier_that_cannot_apply_is_said() -> None:
    """A modifier box holding no whole number (the worker counts it 0) is ignored; one
    beside no score, or beside a monster's Intelligence read from the Monster Sheet's
    box, is not applied; a score taken below 1 is 1, the lowest score; each said."""
    data = ulcen()
    data["attribs"] += [{"name": "psion-int-mod", "current": "two", "max": ""},
                        {"name": "psion-con-mod", "current": "-20", "max": ""}]
    got = SHEET.import_(data, "revised-2e")
    assert (got.combatant["int"], got.combatant["con"]) == (14, 1)
    assert 'psion-int-mod holds "two", not a whole number; ignored' in got.warnings
    assert "Constitution 15 with the Psionics Core tab's temporary psionic modifier " \
        "psion-con-mod -20: con 1 (at least 1, the lowest score)" in got.warnings
    data["attribs"] = [row for row in data["attribs"] if row["name"] != "Wisdom"]
    data["attribs"].append({"name": "psion-wis-mod", "current": "3", "max": ""})
    got = SHEET.import_(data, "revised-2e")
    assert got.combatant["wis"] == 10
    assert "psion-wis-mod +3 is not applied: no Wisdom score to add it to" in got.warnings
    flayer = monster(monsterintelligence="Genius", **{"psion-int-mod": "2"})
    got = SHEET.import_(flayer, "revised-2e")
    assert got.combatant["int"] == 17
    assert "psion-int-mod +2 is not applied: int is read from monsterintelligence, not " \
        "Intelligence" in got.warnings


def test_a_character_id_of_64_characters_is_read_and_one_of_65_refused() -> None:
    """A character id is "1-64 letters, digits, '-' or '_'" (the refusal's own words):
    the longest id is read as the character's, one character more is refused at its
    place."""
    data = ulcen()
    data["id"] = "-Mz" + "a" * 61
    assert SHEET.import_(data, "revised-2e").combatant["id"] == data["id"]
    data["id"] += "a"
    with pytest.raises(InvalidInput) as err:
        SHEET.import_(data, "revised-2e")
    assert err.value.problems[0].path == "/id"


def test_a_two_digit_class_level_and_its_class_are_read() -> None:
    """docs/ADAPTERS.md: the level is that of the class named a psionicist's among
    ``level-class1``, ``level-class2``, ... (the Mod script sends ``level-class`` and
    ``class`` with one or two digits: Mindscape.js ``ADND2E_READ``): a Psion 7 in
    ``class10`` is read at level 7, and kept when the sheet is trimmed."""
    data = ulcen()
    data["attribs"] += [{"name": "level-class10", "current": "7", "max": ""},
                        {"name": "class10", "current": "Psion", "max": ""}]
    got = SHEET.import_(data, "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (7, "psionicist")
    assert ('several class levels (level-class1=4, level-class10=7); level taken as the '
            'psionicist class\'s ("Psion", level-class10), 7') in got.warnings
    assert SHEET.import_(SHEET.trimmed(data, "revised-2e"), "revised-2e") == got


@pytest.mark.parametrize("version", [1, 2, 3])
def test_every_export_schema_version_from_1_to_3_is_read(version: int) -> None:
    """The refusal of other versions says "VTT Enhancement Suite exports of
    schema_version 1-3 are read": each of them, flat, gives the character; 0, 4 and
    ``true`` (not a version number) are refused at ``/schema_version``."""
    flat = {**ulcen(), "schema_version": version}
    assert SHEET.import_(flat, "revised-2e").combatant["psp"] == 40
    for other in (0, 4, True):
        with pytest.raises(InvalidInput) as err:
            SHEET.import_({**flat, "schema_version": other}, "revised-2e")
        assert err.value.problems[0].path == "/schema_version"


def test_a_name_of_200_characters_is_read_and_a_longer_one_refused() -> None:
    """A character's name is text of at most 200 characters (longer is refused at its
    place, as any text the adapter reads past its limit)."""
    data = {**ulcen(), "name": "Ulcen " + "x" * 194}
    assert SHEET.import_(data, "revised-2e").combatant["name"] == data["name"]
    with pytest.raises(InvalidInput) as err:
        SHEET.import_({**data, "name": data["name"] + "x"}, "revised-2e")
    assert err.value.problems[0].path == "/name"


def test_the_id_is_id_else_underscore_id_else_old_id() -> None:
    """docs/ADAPTERS.md: "The id is ``id``, ``_id`` or ``oldId``", in that order: a
    character carrying more than one (an export's ``oldId`` beside the id Roll20 gave
    the character since) is written back under the first."""
    data = {**ulcen(), "_id": "-MzUnderscore00001", "oldId": "-MzOld000000000001"}
    assert SHEET.import_(data, "revised-2e").combatant["id"] == "-MzUlcen0000000001"
    del data["id"]
    assert SHEET.import_(data, "revised-2e").combatant["id"] == "-MzUnderscore00001"
    assert SHEET.written_to(data, "revised-2e")["character_id"] == "-MzUnderscore00001"


def test_a_name_is_read_without_its_surrounding_spaces_and_a_blank_one_is_none() -> None:
    """A name of spaces only is no name: the id stands in, with a warning."""
    data = {**ulcen(), "name": "  Ulcen of Tyr \n"}
    assert SHEET.import_(data, "revised-2e").combatant["name"] == "Ulcen of Tyr"
    got = SHEET.import_({**data, "name": "   "}, "revised-2e")
    assert got.combatant["name"] == "-MzUlcen0000000001"
    assert "the character has no name; using its id -MzUlcen0000000001" in got.warnings


def test_a_flat_character_saying_its_type_is_read_as_it_stands() -> None:
    """Only a schema_version 3 export wraps the character (``{"type": "character",
    "character": {...}}``, docs/ADAPTERS.md): a flat character that says its type and
    holds no ``character`` member is read, and written to, as it stands."""
    data = {**ulcen(), "type": "character"}
    got = SHEET.import_(data, "revised-2e")
    assert got.combatant == SHEET.import_(ulcen(), "revised-2e").combatant
    before = REVISED.combatant(got.combatant)
    after = {**before, "psp": 31}
    written = apply_roll20(data, SHEET.updates(data, "revised-2e", before, after,
                                                normalise=REVISED.combatant))
    assert REVISED.combatant(SHEET.import_(written, "revised-2e").combatant) == after


def test_a_character_with_neither_id_nor_name_is_called_character() -> None:
    """docs/ADAPTERS.md: an export without an id gets one made from its name, with a
    warning; with no name either there is nothing to make it from: "character"."""
    flat = {"schema_version": 1, "attribs": ulcen()["attribs"]}
    got = SHEET.import_(flat, "revised-2e")
    assert (got.combatant["id"], got.combatant["name"]) == ("character", "character")
    assert any('using "character"' in w for w in got.warnings)
    assert "the character has no name; using its id character" in got.warnings


def test_a_character_without_an_id_named_by_marks_alone_is_called_character() -> None:
    """docs/ADAPTERS.md: an export without an id whose name has no letter or digit gets
    "character"; a name of combining marks alone (no letter for them to sit on) has
    none, and made an id of those marks, which a chat card or a command shows as
    nothing."""
    flat = {"schema_version": 1, "name": "\u0301\u0308", "attribs": ulcen()["attribs"]}
    got = SHEET.import_(flat, "revised-2e")
    assert (got.combatant["id"], got.combatant["name"]) == ("character", "\u0301\u0308")
    assert any('using "character"' in w for w in got.warnings)


def test_an_attribute_with_an_empty_name_is_refused_at_its_place() -> None:
    data = ulcen()
    data["attribs"].append({"name": "", "current": "3", "max": ""})
    with pytest.raises(InvalidInput) as err:
        SHEET.import_(data, "revised-2e")
    assert err.value.problems[0].path == f"/attribs/{len(data['attribs']) - 1}/name"


@pytest.mark.parametrize("part", ["current", "max"])
@pytest.mark.parametrize("junk", [{"score": 14}, [14]])
def test_an_attribute_part_that_is_no_text_nor_number_is_refused_at_its_place(
        part: str, junk: Any) -> None:
    """docs/ADAPTERS.md: "``current``/``max`` may be text or numbers": an object or an
    array is refused where it stands, even in a part the sheet does not read
    (Intelligence has no maximum)."""
    data = ulcen()
    attr(data, "Intelligence")[part] = junk
    with pytest.raises(InvalidInput) as err:
        SHEET.import_(data, "revised-2e")
    assert (err.value.problems[0].path, err.value.problems[0].message) == \
        (f"/attribs/0/{part}", "expected text or a number")


def test_a_field_cleared_is_written_as_empty_text_and_a_list_as_comma_separated_text(
        ) -> None:
    """docs/ADAPTERS.md, Roll20 output values: "lists of modes or conditions as
    comma-separated text" (as ``psi_conditions`` is read: "dazed, confused") and "``null``
    as ``""``": an attribute emptied, which reads as absent again."""
    data = ulcen()
    data["attribs"].append({"name": "psi_mthac0", "current": "15", "max": ""})
    before = SHEET.import_(data, "revised-2e").combatant
    got = SHEET.updates(data, "revised-2e", before,
                        {**before, "mthac0": None, "conditions": ["dazed", "confused"]})
    assert got == [{"character_id": "-MzUlcen0000000001", "attributes": {
        "psi_mthac0": {"current": ""}, "psi_conditions": {"current": "dazed, confused"}}}]
    again = SHEET.import_(apply_roll20(data, got), "revised-2e").combatant
    assert (again["mthac0"], again["conditions"]) == (17, ["dazed", "confused"])


def test_a_maximum_read_from_a_psi_pair_is_written_back_to_its_max() -> None:
    """docs/ADAPTERS.md, the ``psi_*`` pairs: ``attack_strength_max`` is
    ``psi_attack_strength`` max, read from there and written back there, the current
    left as it is."""
    data = ulcen()
    data["attribs"].append({"name": "psi_attack_strength", "current": "60", "max": "80"})
    got = SHEET.import_(data, "combat-strength")
    assert got.sources["attack_strength_max"] == f"/attribs/{len(data['attribs']) - 1}/max"
    before = got.combatant
    assert SHEET.updates(data, "combat-strength", before,
                         {**before, "attack_strength_max": 90}) == [
        {"character_id": "-MzUlcen0000000001",
         "attributes": {"psi_attack_strength": {"max": 90}}}]


def test_an_empty_psi_attribute_of_a_field_read_from_the_sheet_is_not_warned_of() -> None:
    """docs/ADAPTERS.md: ``""`` counts as empty; a blank or null ``psi_hp`` (as the Mod
    script creates an attribute) holds nothing to ignore, so nothing is said of it; one
    holding a figure is ignored with a warning, HP being read from the sheet."""
    data = ulcen()
    data["attribs"].append({"name": "psi_hp", "current": "", "max": ""})
    got = SHEET.import_(data, "revised-2e")
    assert got.combatant["hp"] == 22
    assert not any("psi_hp" in w for w in got.warnings)
    attr(data, "psi_hp")["current"] = None
    assert not any("psi_hp" in w for w in SHEET.import_(data, "revised-2e").warnings)
    attr(data, "psi_hp")["current"] = "9"
    assert any("psi_hp is ignored" in w for w in SHEET.import_(data, "revised-2e").warnings)


def test_a_mapped_character_is_written_to_with_its_mapping() -> None:
    """docs/ADAPTERS.md: a write-back's place is, on Roll20, the character id and the
    mapping (``Adapter.written_to``): the mapping of a ``{mapping, character}`` envelope,
    none for a bare character."""
    mapping = {"fields": {"int": "Intelligence", "level": "level-class1"}}
    assert GENERIC.written_to({"mapping": mapping, "character": ulcen()}, "revised-2e") == \
        {"character_id": "-MzUlcen0000000001", "mapping": mapping}
    assert SHEET.written_to(ulcen(), "revised-2e") == \
        {"character_id": "-MzUlcen0000000001", "mapping": None}


def test_mthac0_boxes_holding_only_spaces_are_empty() -> None:
    """docs/ADAPTERS.md: a box left empty gives the derivation, said as empty (not as a
    roll expression); an adjustment box of spaces is no adjustment, so nothing is said of
    it."""
    data = ulcen()
    attr(data, "MThAC0")["current"] = "  "
    attr(data, "mthac0adj")["current"] = "   "
    got = SHEET.import_(data, "revised-2e")
    assert "mthac0" not in got.combatant
    assert not any("mthac0adj" in w or "adjustment" in w for w in got.warnings)
    assert "MThAC0 is empty; MTHAC0 derived from the level instead (psionicist, " \
        "COMBATANTS.md): 21 - 4 = 17" in got.warnings


def test_a_class_level_of_0_is_no_class_level() -> None:
    """docs/ADAPTERS.md: the level is the highest of the class levels filled in: a
    second class at 0 is no second class (no "several class levels"), and a sheet whose
    only class level is 0 is a 1st-level character, as one with none, said."""
    data = ulcen()
    attr(data, "level-class2")["current"] = "0"
    got = SHEET.import_(data, "revised-2e")
    assert got.combatant["level"] == 4
    assert not any("several class levels" in w for w in got.warnings)
    attr(data, "level-class1")["current"] = "0"
    got = SHEET.import_(data, "revised-2e")
    assert got.combatant["level"] == 1
    assert "no class level (level-class1..) nor Hit Dice (hitdice); taken as 1" in \
        got.warnings


def test_the_monster_page_is_read_from_tab11_whatever_spaces_surround_it() -> None:
    """``tab11`` 2 is the Monster Sheet page (2ESheet-base.html), its value compared
    without the spaces around it."""
    data = monster(tab11=" 2 ")
    data["attribs"] = [row for row in data["attribs"] if row["name"] != "hitdice"]
    got = SHEET.import_(data, "revised-2e")
    assert (got.combatant["level"], got.combatant["class_group"]) == (1, "monster")


def test_attack_rows_left_blank_leave_the_attacks_to_psi_attacks() -> None:
    """docs/ADAPTERS.md: state the sheet has no field for lives in ``psi_*``: a sheet
    whose attack rows name nothing (rows added and left blank, or a Monster Sheet with
    none) gives no attacks of its own, so attacks the engine records go to
    ``psi_attacks``."""
    for data in (ulcen(), monster()):
        for row in data["attribs"]:
            if row["name"].endswith("psionic-attack-name"):
                row["current"] = ""
        data["attribs"].append(
            {"name": f"{ROW.replace('-MzRowAtk', '-MzRowNew')}_psionic-attack-name",
             "current": "", "max": ""})
        before = SHEET.import_(data, "revised-2e").combatant
        assert "attacks" not in before
        got = SHEET.updates(data, "revised-2e", before, {**before, "attacks": ["ego-whip"]})
        assert got == [{"character_id": data["id"],
                        "attributes": {"psi_attacks": {"current": "ego-whip"}}}]


def test_a_temporary_psionic_modifier_taking_a_score_to_exactly_1_says_no_floor() -> None:
    """docs/ADAPTERS.md: "A sum below 1 is 1": a sum of exactly 1 is the sum, said
    without the note of the floor."""
    data = ulcen()
    data["attribs"].append({"name": "psion-con-mod", "current": "-14", "max": ""})
    got = SHEET.import_(data, "revised-2e")
    assert got.combatant["con"] == 1
    assert "Constitution 15 with the Psionics Core tab's temporary psionic modifier " \
        "psion-con-mod -14: con 1" in got.warnings


def test_a_score_of_0_is_refused_with_a_temporary_psionic_modifier_beside_it_too() -> None:
    """An ability score must be at least 1 (the adapter refuses 0 at its place): the
    modifier beside it is added to no score, so it does not make a 0 readable."""
    data = ulcen()
    attr(data, "Intelligence")["current"] = "0"
    data["attribs"].append({"name": "psion-int-mod", "current": "2", "max": ""})
    with pytest.raises(InvalidInput) as err:
        SHEET.import_(data, "revised-2e")
    assert (err.value.problems[0].path, err.value.problems[0].message) == \
        ("/attribs/0/current", "an ability score must be at least 1")


def test_the_sheets_mac_box_is_read_not_written_back() -> None:
    """docs/ADAPTERS.md marks the sheet's boxes written back (``hp``, ``psp``,
    ``psp_max``); ``mac`` is read from ``selfMAC`` and never written there."""
    data = ulcen()
    before = SHEET.import_(data, "revised-2e").combatant
    assert before["mac"] == 10
    assert SHEET.updates(data, "revised-2e", before, {**before, "mac": 8}) == []


def test_temporary_points_are_said_only_beside_the_box_they_would_go_to() -> None:
    """docs/ADAPTERS.md: a Temp HP, Temp PSP or Stored PSP box holding points is said
    when the sheet's own HP or PSP box is read for the system: power-pool reads HP and
    no PSPs, and PSPs that come from psi_psp alone leave no PSP box to add them to."""
    data = ulcen()
    attr(data, "tempPSP")["current"] = "6"
    data["attribs"] += [{"name": "storedPSP", "current": "12", "max": "20"},
                        {"name": "tempHP", "current": "4", "max": ""}]
    got = SHEET.import_(data, "power-pool")
    assert [w.split(":")[0] for w in got.warnings if " holds " in w] == ["tempHP holds 4"]
    data["attribs"] = [a for a in data["attribs"] if a["name"] not in ("PSP", "HP")]
    data["attribs"].append({"name": "psi_psp", "current": "30", "max": "40"})
    got = SHEET.import_(data, "revised-2e")
    assert (got.combatant["psp"], got.combatant.get("hp")) == (30, None)
    assert not any(" holds " in w for w in got.warnings)


def test_a_temporary_points_box_holding_no_number_is_no_reason_to_refuse() -> None:
    """Temp HP and Temp PSP are not read (only named when they hold points): text there
    is neither refused nor said."""
    data = ulcen()
    attr(data, "tempPSP")["current"] = "lots"
    data["attribs"].append({"name": "tempHP", "current": "2.5", "max": ""})
    got = SHEET.import_(data, "revised-2e")
    assert got.combatant["psp"] == 40
    assert not any("tempPSP" in w or "tempHP" in w for w in got.warnings)


def test_an_empty_tab11_is_not_the_monster_page() -> None:
    """Only ``tab11`` 2 is the Monster Sheet page: a sheet with neither Hit Dice nor
    class levels whose page box is empty is a 1st-level character."""
    data = monster(tab11="")
    data["attribs"] = [row for row in data["attribs"] if row["name"] != "hitdice"]
    got = SHEET.import_(data, "revised-2e")
    assert got.combatant["level"] == 1 and "class_group" not in got.combatant
    assert "no class level (level-class1..) nor Hit Dice (hitdice); taken as 1" in got.warnings


def test_the_mod_scripts_text_fields_are_those_whose_spaces_the_adapters_take() -> None:
    """Mindscape.js ``TEXT_FIELDS`` lists the fields whose text of only spaces the
    adapters take as given (a list naming nothing, a flag or choice then refused); for
    any other field such text is no value, and the mapped attribute counts. The Mod
    script keeps that list by hand: it must name exactly the fields ``decode`` answers
    something other than "no value" for, in any system."""
    script = MOD_SCRIPT.read_text(encoding="utf-8")
    found = re.search(r"const TEXT_FIELDS = new Set\(\[([^\]]*)\]\)", script)
    assert found, "Mindscape.js no longer has TEXT_FIELDS"
    listed = set(re.findall(r"'([a-z_]+)'", found.group(1)))
    given = set()
    for system, fields in adapters.core.FIELDS.items():
        for name in fields:
            try:
                read = adapters.core.decode(system, name, "   ", f"/psi_{name}",
                                            adapters.core.Draft(system))
            except InvalidInput:
                read = "refused"
            if read is not None:
                given.add(name)
    assert listed == given


def test_the_mod_scripts_spaces_are_those_python_strips() -> None:
    """Mindscape.js ``SPACE`` is the class of characters its ``strip`` takes off the ends
    of an attribute's text, as the adapters' ``str.strip()`` does (``to_int``, a ref,
    ``parse_json_text``): exactly those ``str.isspace`` holds. JavaScript's ``trim``
    differs (it strips U+FEFF, and keeps U+001C..U+001F and U+0085)."""
    script = MOD_SCRIPT.read_text(encoding="utf-8")
    found = re.search(r"const SPACE = /(\[[^\]]*\])/;", script)
    assert found, "Mindscape.js no longer has SPACE"
    space = re.compile(found.group(1))
    assert [c for c in range(0x110000) if space.fullmatch(chr(c))] == \
        [c for c in range(0x110000) if chr(c).isspace()]


def test_the_mod_scripts_json_fields_are_those_whose_null_the_adapters_take_as_none() -> None:
    """Mindscape.js ``JSON_FIELDS`` lists the fields whose text ``null`` (with JSON's
    spaces around it) the adapters read as no value (``parse_json_text``), so the mapped
    attribute counts; any other field takes that text as given (a value or a refusal).
    Kept by hand: it must name exactly those, in any system."""
    script = MOD_SCRIPT.read_text(encoding="utf-8")
    found = re.search(r"const JSON_FIELDS = new Set\(\[([^\]]*)\]\)", script)
    assert found, "Mindscape.js no longer has JSON_FIELDS"
    listed = set(re.findall(r"'([a-z_]+)'", found.group(1)))
    for text in ("null", " \tnull\r\n"):
        none = set()
        for system, fields in adapters.core.FIELDS.items():
            for name in fields:
                try:
                    read = adapters.core.decode(system, name, text, f"/psi_{name}",
                                                adapters.core.Draft(system))
                except InvalidInput:
                    read = "refused"
                if read is None:
                    none.add(name)
        assert listed == none, text


def test_the_mod_scripts_whole_numbers_are_those_to_int_reads() -> None:
    """Mindscape.js ``sheetPoints`` reads a number as ``to_int`` does: its ``INT_TEXT`` is
    ``_INT_TEXT`` with Python's ``\\d`` spelled ``\\p{Nd}`` (JavaScript's ``\\d`` is ASCII
    only), which is the same class; and ``digitValue`` takes a digit's value as its
    distance from the first digit of its block, modulo ten, which is what ``int()`` makes
    of every digit Python knows (the mathematical digits lie in five runs side by side).
    The bounds it reads PSPs and strengths within, 0 to ``POINTS_MOST``, are their
    fields' (``_INT0``)."""
    script = MOD_SCRIPT.read_text(encoding="utf-8")
    found = re.search(r"const INT_TEXT = /\^(.*)\$/u;", script)
    assert found, "Mindscape.js no longer has INT_TEXT"
    # JavaScript's \d would take only ASCII digits, where Python's takes every script's.
    assert r"\d" not in found.group(1)
    assert found.group(1).replace(r"\p{Nd}", r"\d") == adapters.core._INT_TEXT.pattern
    digits = [c for c in range(0x110000) if re.fullmatch(r"\d", chr(c))]
    assert digits == [c for c in range(0x110000) if unicodedata.category(chr(c)) == "Nd"]
    held = set(digits)
    for c in digits:
        first = c
        while first - 1 in held:
            first -= 1
        assert int(chr(c)) == (c - first) % 10, hex(c)
    most = re.search(r"const POINTS_MOST = (\d+);", script)
    assert most, "Mindscape.js no longer has POINTS_MOST"
    points = {"revised-2e": ("psp", "psp_max"),
              "combat-strength": ("attack_strength", "attack_strength_max",
                                  "defense_strength", "defense_strength_max")}
    for system, names in points.items():
        for name in names:
            ftype = adapters.core.FIELDS[system][name]
            assert (ftype.lo, ftype.hi) == (0, int(most.group(1))), name


def _script_set(name: str) -> set[str]:
    """The names a ``const NAME = new Set([...])`` of Mindscape.js lists."""
    script = MOD_SCRIPT.read_text(encoding="utf-8")
    found = re.search(rf"const {name} = new Set\(\[([^\]]*)\]\)", script)
    assert found, f"Mindscape.js no longer has {name}"
    return set(re.findall(r"'([a-z_]+)'", found.group(1)))


def test_the_mod_scripts_list_fields_are_the_text_fields_whose_spaces_name_nothing() -> None:
    """Mindscape.js ``LIST_FIELDS`` are the fields of ``TEXT_FIELDS`` whose text of only
    spaces the adapters read as a list naming nothing, so a round's end leaves out a
    fighter with only that (``hasPsionics``); the others, a flag or a choice, refuse it,
    so the fighter is sent for the refusal to name the attribute."""
    lists, texts = _script_set("LIST_FIELDS"), _script_set("TEXT_FIELDS")
    assert lists <= texts
    for spaces in ("   ", "\u3000", "\x85\x1c"):
        for system, fields in adapters.core.FIELDS.items():
            for name in set(fields) & texts:
                draft = adapters.core.Draft(system)
                if name in lists:
                    assert adapters.core.decode(system, name, spaces, "/x", draft) == [], name
                else:
                    with pytest.raises(InvalidInput):
                        adapters.core.decode(system, name, spaces, "/x", draft)


def test_the_mod_scripts_empty_states_are_those_the_engine_takes_for_none() -> None:
    """Mindscape.js ``EMPTY_STATE`` gives, for fields of ``JSON_FIELDS``, the empty JSON
    that a character's ``psi_*`` attribute may hold (the write-back writes "{}" once a
    daze's rounds are out) and that makes the same combatant as no attribute at all, so
    a round's end leaves out a fighter with only that. Every other JSON field refuses an
    empty object and an empty list."""
    script = MOD_SCRIPT.read_text(encoding="utf-8")
    found = re.search(r"const EMPTY_STATE = \{([^}]*(?:\{\}[^}]*)*)\};", script)
    assert found, "Mindscape.js no longer has EMPTY_STATE"
    empty = dict(re.findall(r"([a-z_]+): '([^']*)'", found.group(1)))
    json_fields = _script_set("JSON_FIELDS")
    assert set(empty) <= json_fields
    systems = builtin_systems()
    for system, fields in adapters.core.FIELDS.items():
        for name in set(fields) & json_fields:
            for text in ("{}", "[]"):
                data = monster(**{f"psi_{name}": text})
                plain = systems[system].combatant(SHEET.import_(monster(), system).combatant)
                if empty.get(name) == text:
                    got = systems[system].combatant(SHEET.import_(data, system).combatant)
                    assert got == plain, (system, name)
                else:
                    with pytest.raises(InvalidInput):
                        systems[system].combatant(SHEET.import_(data, system).combatant)


def test_the_mod_scripts_closed_mind_is_the_engines_default_mind() -> None:
    """Mindscape.js ``CLOSED_MIND`` is the engine's default mind (revised-2e's
    ``closed_mind``) as the companion writes it in ``psi_mind`` once a mind a psionic
    attack opened closes again: every member, each value of its JSON type. A character
    with it in ``psi_mind`` is the same combatant as one without ``psi_mind``, and so is
    one with any of its members alone, so a round's end leaves out a fighter with only
    that (``isClosedMind``); another value of a member makes another combatant."""
    script = MOD_SCRIPT.read_text(encoding="utf-8")
    found = re.search(r"const CLOSED_MIND = '([^']*)';", script)
    assert found, "Mindscape.js no longer has CLOSED_MIND"
    text = found.group(1)
    system = builtin_systems()["revised-2e"]
    plain = system.combatant(SHEET.import_(monster(), "revised-2e").combatant)

    def imported(mind: str) -> Any:
        return system.combatant(SHEET.import_(monster(psi_mind=mind), "revised-2e").combatant)

    # What the companion writes: the engine's mind, in its order and spacing.
    assert adapters.roll20.encode("revised-2e", "mind", plain["mind"]) == text
    assert json.dumps(json.loads(text), sort_keys=True) == \
        json.dumps(dict(plain["mind"]), sort_keys=True)
    assert imported(text) == plain
    for key, value in json.loads(text).items():
        assert imported(json.dumps({key: value})) == plain, key
    for key, other in (("state", "open"), ("locked_rounds", 2), ("last_defense", "mind-blank"),
                       ("used_power", True), ("may_pay_to_close", True), ("rounds_open", 1),
                       ("opened_by", "attack")):
        assert imported(json.dumps({**json.loads(text), key: other})) != plain, key


def test_the_mod_scripts_longest_json_text_is_the_adapters() -> None:
    """Mindscape.js ``MAX_JSON_TEXT`` is ``adapters.core.MAX_TEXT``: a psi_* state longer
    than that, no state in itself (a closed mind padded with spaces), the companion refuses,
    so a round's end must send the fighter for the refusal to name it; one of exactly that
    length it reads as no state."""
    script = MOD_SCRIPT.read_text(encoding="utf-8")
    found = re.search(r"const MAX_JSON_TEXT = (\d+);", script)
    assert found, "Mindscape.js no longer has MAX_JSON_TEXT"
    assert int(found.group(1)) == adapters.core.MAX_TEXT
    system = builtin_systems()["revised-2e"]
    plain = system.combatant(SHEET.import_(monster(), "revised-2e").combatant)
    fits = "{}".ljust(adapters.core.MAX_TEXT)
    assert system.combatant(SHEET.import_(monster(psi_mind=fits), "revised-2e").combatant) == plain
    with pytest.raises(InvalidInput, match="longer than"):
        SHEET.import_(monster(psi_mind=fits + " "), "revised-2e")


def test_the_mod_scripts_state_pairs_are_state_attribute() -> None:
    """Mindscape.js ``STATE_PAIRS`` lists the fields ``state_attribute`` keeps as the
    current and maximum of one attribute, where they are; every other field is kept in
    ``psi_<field>``'s current. Its ``stateField`` reads them back from an attribute's
    part, and reads no other maximum (nor ``psi_psp_max``)."""
    script = MOD_SCRIPT.read_text(encoding="utf-8")
    found = re.search(r"const STATE_PAIRS = \{([^}]*)\};", script)
    assert found, "Mindscape.js no longer has STATE_PAIRS"
    pairs = {name: (attr, part) for name, attr, part in
             re.findall(r"([a-z_]+): \['([a-z_]+)', '([a-z]+)'\]", found.group(1))}
    kept = {name: adapters.roll20.state_attribute(name) for name in adapters.core.ALL_FIELDS}
    shared = {attr for attr, part in kept.values() if part == "max"}
    assert pairs == {name: place for name, place in kept.items() if place[0] in shared}
    assert all(place == (f"psi_{name}", "current") for name, place in kept.items()
               if place[0] not in shared)


def test_only_the_first_psi_attribute_of_a_name_and_a_pairs_maximum_are_read() -> None:
    """Of attributes sharing a name in any case the adapters read the first, and of a
    ``psi_*`` attribute only its current value unless it keeps a pair: a round's end
    (Mindscape.js ``hasPsionics``) judges a fighter by the same."""
    def read(*attribs: tuple[str, str, str]) -> dict[str, Any]:
        data = monster()
        data["attribs"] += [{"name": n, "current": c, "max": m} for n, c, m in attribs]
        return dict(SHEET.import_(data, "revised-2e").combatant)

    assert "conditions" not in read(("psi_conditions", "", ""), ("PSI_Conditions", "dazed", ""))
    assert read(("PSI_Conditions", "dazed", ""), ("psi_conditions", "", ""))["conditions"] \
        == ["dazed"]
    assert "conditions" not in read(("psi_conditions", "", "dazed"))
    assert read(("psi_psp", "", "7"))["psp_max"] == 7
    assert "psp_max" not in read(("psi_psp_max", "7", ""))


def test_the_mod_scripts_pool_dice_limit_is_the_engines() -> None:
    """Mindscape.js refuses ``--dice`` and ``--defense-dice`` above ``MAX_POOL_DICE``,
    naming the option, where the companion would refuse the number alone: it must be the
    engine's limit of dice per pool (``engine.dice.MAX_DICE_PER_POOL``), and 0 must be a
    count the power-pool schemas take (a side may roll none of its pool)."""
    script = MOD_SCRIPT.read_text(encoding="utf-8")
    found = re.search(r"const MAX_POOL_DICE = (\d+);", script)
    assert found, "Mindscape.js no longer has MAX_POOL_DICE"
    assert int(found.group(1)) == MAX_DICE_PER_POOL
    schema = builtin_systems()["power-pool"].request_schema()
    for where in (schema["properties"]["attack"], schema["$defs"]["defense"]):
        assert where["properties"]["pool_dice"] == {"type": "integer", "minimum": 0}


def test_the_mod_script_reads_a_mode_name_as_mode_id_does_with_the_same_aliases() -> None:
    """Mindscape.js ``normaliseMode`` reads a sheet's mode names (the defense buttons'
    ``knownDefenses``, a round's end's ``sheetKnowsModes``) as ``adapters.core.mode_id``
    does: NFKC, stripped, lower case, each run of characters other than a-z and 0-9 one
    hyphen, none at the ends. It dropped digits, so a row "Ego Whip 2" named ego-whip
    for the script and no mode for the companion. Its ``DEFENSE_ALIASES`` are the
    adapters' ``ALIASES`` that name a defense; the revised-2e ones, the only system whose
    attack rows the script reads, name no attack."""
    script = MOD_SCRIPT.read_text(encoding="utf-8")
    found = re.search(r"const normaliseMode = \(text\) => String\(text \|\| ''\)"
                      r"\.normalize\('NFKC'\)\.trim\(\)\.toLowerCase\(\)"
                      r"\.replace\(/(\[[^\]]*\]\+)/g, '-'\)\.replace\(/\^-\|-\$/g, ''\);",
                      script)
    assert found, "Mindscape.js no longer has normaliseMode in the shape read here"
    runs = re.compile(found.group(1))

    def normalise_mode(text: str) -> str:
        # JavaScript's trim() and str.strip() differ only in characters the runs take.
        lowered = unicodedata.normalize("NFKC", text).strip().lower()
        return runs.sub("-", lowered).removeprefix("-").removesuffix("-")

    names = ["Ego Whip 2", "Mind Blank 2", "2 Mind Thrust", "ＥＧＯ ＷＨＩＰ",
             "Ｍｉｎｄ Ｂｌａｎｋ ２", " Tower of Iron-Will! ", "Thought_Shield",
             "psionic blast ", "Ψ Mind Thrust",
             "ThoughtShield", "mind--blank", "Intellect Fortress (3)", "\u2028Mind Blank\t"]
    for name in names:
        assert normalise_mode(name) == adapters.core.mode_id(name), name

    aliases = re.search(r"const DEFENSE_ALIASES = \{(.*?)\n  \};", script, re.DOTALL)
    assert aliases, "Mindscape.js no longer has DEFENSE_ALIASES"
    listed: dict[str, dict[str, str]] = {}
    for system, pairs in re.findall(r"'([a-z0-9-]+)': \{([^}]*)\}", aliases.group(1)):
        listed[system] = dict(re.findall(r"'?([a-z0-9-]+)'?: '([a-z0-9-]+)'", pairs))
    defenses = {system: {name: mode for name, mode in table.items()
                         if mode in adapters.core.DEFENSES[system]}
                for system, table in adapters.core.ALIASES.items()}
    assert listed == {system: table for system, table in defenses.items() if table}
    assert not set(adapters.core.ALIASES["revised-2e"].values()) & \
        adapters.core.ATTACKS["revised-2e"]


def test_the_mod_scripts_mode_rows_are_those_the_adapter_reads() -> None:
    """Mindscape.js ``ATTACK_ROW`` and ``DEFENSE_ROW`` name the AD&D sheet's attributes
    the adapter reads attack and defense modes from (``adapters.roll20._SECTIONS``, each
    section's repeating rows and its first row outside them), in any case: a round's end
    sends a revised-2e fighter with no PSPs whose rows name a mode (``sheetKnowsModes``),
    and the defense buttons offer the modes of the defense rows (``knownDefenses``)."""
    script = MOD_SCRIPT.read_text(encoding="utf-8")
    rows = {}
    for field, name in (("attacks", "ATTACK_ROW"), ("defenses", "DEFENSE_ROW")):
        found = re.search(rf"const {name} = /(\^.*\$)/i;", script)
        assert found, f"Mindscape.js no longer has {name}"
        rows[field] = re.compile(found.group(1), re.IGNORECASE)
    sections = adapters.roll20._SECTIONS
    for field, pattern, first in sections:
        name = (pattern.pattern.replace("\\-", "-").replace("(.+)", "-Mx_1")
                .replace("(?:", "").replace(")", ""))
        assert pattern.fullmatch(name), name
        for each in filter(None, (name, name.upper(), first)):
            other = "defenses" if field == "attacks" else "attacks"
            assert rows[field].fullmatch(each) and not rows[other].fullmatch(each), each
