"""docs/ADAPTERS.md "What every adapter does": Hit Dice as the rule books print them,
mapping files that report their own mistakes, ability scores capped at 25 everywhere,
and warnings without repeats and without end."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import adapters
from adapters.core import FIELDS, MAX_WARNINGS, SCORES, Draft
from adapters.intelligence import MAX_INT_TEXT
from engine import builtin_systems
from engine.errors import InvalidInput

from .support import apply_foundry, load, template_actor

OSE = adapters.get("foundry.ose")
ARS = adapters.get("foundry.ars")
FOUNDRY_GENERIC = adapters.get("foundry.generic")
ROLL20_GENERIC = adapters.get("roll20.generic")
SHEET = adapters.get("roll20.adnd2e-revised")
REVISED = builtin_systems()["revised-2e"]


def ars_npc(hitdice: Any) -> dict[str, Any]:
    actor = template_actor("foundry/ars/template.json", "npc", "arsNpc0000000001", "Kobold")
    actor["system"]["hitdice"] = hitdice
    return actor


def ose_monster(hd: Any) -> dict[str, Any]:
    actor = template_actor("foundry/ose/template.json", "monster", "oseMonster000001",
                           "Goblin")
    actor["system"]["hp"]["hd"] = hd
    return actor


# -- 6. Hit Dice ----------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "count", "warning"), [
    ("1/2", 1, 'Hit Dice "1/2" are less than one die; counted as 1'),
    ("½", 1, 'Hit Dice "½" are less than one die; counted as 1'),
    ("1/4", 1, 'Hit Dice "1/4" are less than one die; counted as 1'),
    ("11+", 11, 'Hit Dice "11+" read as 11; ignored the trailing + (more than that)'),
    ("11+3", 11, 'Hit Dice "11+3" read as 11; ignored +3 (hit points)'),
    ("3*", 3, 'Hit Dice "3*" read as 3; ignored * (special abilities)'),
    ("4+1**", 4, 'Hit Dice "4+1**" read as 4; ignored +1 (hit points), '
                 '** (special abilities)'),
])
def test_monster_hit_dice_as_rule_books_print_them(text: str, count: int,
                                                   warning: str) -> None:
    """AD&D and B/X monster entries: kobolds "1/2" (½), a dragon "11+", an ogre "4+1",
    a starred "3*" (a special ability, for experience only). ARS hitdice and OSE hp.hd
    alike; what is ignored is said in a warning."""
    for adapter, actor in ((ARS, ars_npc(text)), (OSE, ose_monster(text))):
        got = adapter.import_(actor, "power-pool")
        assert got.combatant["hit_dice"] == count
        assert warning in got.warnings
        assert adapter.import_(actor, "revised-2e").combatant["level"] == count


def test_hit_dice_stored_as_a_number_below_one_count_as_one_die() -> None:
    """docs/ADAPTERS.md: less than one die (`1/2`, `½`, `0.5`) counts as 1, a number
    stored so (OSE's hp.hd of 0.5) too, with the warning; 0 is no die at all."""
    got = OSE.import_(ose_monster(0.5), "power-pool")
    assert got.combatant["hit_dice"] == 1
    assert "Hit Dice 0.5 are less than one die; counted as 1" in got.warnings
    got = OSE.import_(ose_monster(0.0), "power-pool")
    assert got.combatant["hit_dice"] == 0
    assert not any("less than one die" in w for w in got.warnings)


@pytest.mark.parametrize("hd", [-1, 1001])
def test_hit_dice_stored_as_a_number_outside_0_to_1000_are_refused_there(hd: int) -> None:
    """docs/COMBATANTS.md: `hit_dice` int ≥ 0, up to the 1000 an adapter reads
    (adapters/core.py FIELDS); OSE's hp.hd holding a number past either end is
    InvalidInput at its place, as it is in the store."""
    with pytest.raises(InvalidInput) as err:
        OSE.import_(ose_monster(hd), "power-pool")
    assert err.value.problems[0].path == "/system/hp/hd"


def test_a_die_written_without_its_count_in_a_formula_is_one_die() -> None:
    """docs/ADAPTERS.md: a roll formula's "Hit Dice are all the dice it rolls"; `d8`
    rolls one."""
    got = OSE.import_(ose_monster("d8 + 2d8"), "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (3, 8)


def test_hit_dice_of_only_spaces_are_none_recorded() -> None:
    """Hit Dice text of spaces holds nothing, so it is not refused: the count is taken
    as 1 with a warning, and the die "assumed d8 when none is recorded"
    (docs/ADAPTERS.md)."""
    got = OSE.import_(ose_monster("   "), "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (1, 8)
    assert "no Hit Dice (hp.hd); taken as 1" in got.warnings


def test_a_hit_dice_formula_with_a_die_ignores_nothing() -> None:
    got = OSE.import_(ose_monster("3d8+2"), "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (3, 8)
    assert not any(w.startswith("Hit Dice") for w in got.warnings)


@pytest.mark.parametrize("sides", [4, 6, 8, 10, 12, 20])
def test_a_hit_die_of_every_size_of_the_ladder_is_read(sides: int) -> None:
    """RULES.md §3.1: `die` (d4, d6, d8, d10, d12, d20), the die-type ladder."""
    got = OSE.import_(ose_monster(f"3d{sides}"), "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (3, sides)


def test_a_formula_of_several_die_sizes_uses_the_size_it_rolls_most_of() -> None:
    """docs/ADAPTERS.md: a roll formula's "die the size it rolls most of (`2d8 + 1d6` →
    3 of d8, with a warning that the sizes differ)", wherever that size comes in it."""
    got = OSE.import_(ose_monster("1d6 + 2d8"), "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (3, 8)
    assert 'Hit Dice "1d6 + 2d8" roll dice of several sizes; counted as 3, the dice of ' \
        'every size' in got.warnings
    assert 'Hit Dice "1d6 + 2d8" roll dice of several sizes; the die taken is d8, the ' \
        'size it rolls most of' in got.warnings


def test_a_formulas_dice_of_one_size_are_summed_wherever_they_come() -> None:
    """docs/ADAPTERS.md: the die is "the size it rolls most of": two d8 terms outweigh
    one d6 that comes first."""
    got = OSE.import_(ose_monster("1d6 + 1d8 + 1d8"), "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (3, 8)


@pytest.mark.parametrize(("text", "message"), [
    ("abc", "expected Hit Dice like '3', '4+1', '11+', '3*', '1/2' or a formula like "
            "'18d10 + 36', got \"abc\""),
    ("3/2", "a fraction of a Hit Die must be above 0 and below 1, got \"3/2\""),
    ("0/4", "a fraction of a Hit Die must be above 0 and below 1, got \"0/4\""),
    ("2/2", "a fraction of a Hit Die must be above 0 and below 1, got \"2/2\""),
    ("1/0", "a fraction of a Hit Die must be above 0 and below 1, got \"1/0\""),
])
def test_hit_dice_that_mean_nothing_are_still_refused(text: str, message: str) -> None:
    with pytest.raises(InvalidInput) as err:
        ARS.import_(ars_npc(text), "power-pool")
    assert [(p.path, p.message) for p in err.value.problems] == [("/system/hitdice",
                                                                  message)]


def no_level_sheets() -> list[tuple[adapters.Adapter, dict[str, Any], str]]:
    """The fixtures with no level recorded, each with the warning that says it was taken
    as 1: Zanna (dnd5e) without her class item, ARS's default character (no class item,
    the template's ``attributes.level.value`` 1) and the Ilaris export (no class level,
    no Hit Dice), as the AD&D 2E Revised sheet reads it."""
    zanna = load("foundry/dnd5e/zanna-gnome-wizard.json")
    zanna["items"] = [i for i in zanna["items"] if i["type"] != "class"]
    ars = template_actor("foundry/ars/template.json", "character", "arsChar000000001", "Ars")
    return [
        (adapters.get("foundry.dnd5e"), zanna, "no class items; level taken as 1"),
        (ARS, ars, "no class item with levels (system.advancement); level taken as 1 from "
                   "system.attributes.level.value, which ARS does not update"),
        (SHEET, load("roll20/vttes-export-ilaris-empty.json"),
         "no class level (level-class1..) nor Hit Dice (hitdice); taken as 1"),
    ]


def test_a_level_taken_as_1_is_said_only_where_it_counts_and_not_over_the_store() -> None:
    """docs/ADAPTERS.md "Defaults, with a warning each": a level taken as 1 is said in
    revised-2e (``level``) and power-pool (``hit_dice``), but not in combat-strength,
    which has neither, and not when the psionic state store sets the field (the level
    used is then the store's, not 1)."""
    for adapter, data, warning in no_level_sheets():
        for system, field in (("revised-2e", "level"), ("power-pool", "hit_dice")):
            got = adapter.import_(data, system)
            assert (got.combatant[field], warning in got.warnings) == (1, True), adapter.id
        assert warning not in adapter.import_(data, "combat-strength").warnings, adapter.id
    for adapter, data, warning in no_level_sheets():
        if "flags" in data:
            data["flags"]["mindscape"] = {"revised-2e": {"level": 5},
                                          "power-pool": {"hit_dice": 5}}
        else:
            data["character"]["attribs"] += [
                {"name": "psi_level", "current": 5, "max": ""},
                {"name": "psi_pool", "current": "", "max": 5}]
        for system, field in (("revised-2e", "level"), ("power-pool", "hit_dice")):
            got = adapter.import_(data, system)
            assert got.combatant[field] == 5, adapter.id
            assert warning not in got.warnings, (adapter.id, system)


COUNTED = 'Hit Dice "1d6 + 2d8" roll dice of several sizes; counted as 3, the dice of every size'
DIE_TAKEN = 'Hit Dice "1d6 + 2d8" roll dice of several sizes; the die taken is d8, the size ' \
    'it rolls most of'


@pytest.mark.parametrize(("system", "store", "said"), [
    ("power-pool", {}, {COUNTED, DIE_TAKEN}),
    ("power-pool", {"hit_dice": 5}, {DIE_TAKEN}),
    ("power-pool", {"die": 6}, {COUNTED}),
    ("power-pool", {"hit_dice": 5, "die": 6}, set()),
    ("revised-2e", {}, {COUNTED}),
    ("revised-2e", {"level": 5}, set()),
    ("combat-strength", {}, set()),
])
@pytest.mark.parametrize("adapter", [OSE, ARS])
def test_a_formula_of_several_sizes_is_said_of_its_count_and_of_its_die_apart(
        adapter: adapters.Adapter, system: str, store: dict[str, Any],
        said: set[str]) -> None:
    """docs/ADAPTERS.md: a formula rolling several die sizes gives the Hit Dice (all its
    dice, 3) and the die (the size it rolls most of, d8), each said in a warning of its
    own, withdrawn when the psionic state store sets that field (the count: power-pool's
    ``hit_dice``, revised-2e's ``level``; the die: ``die``), as what it explains is then
    the store's. A system without the field is told nothing of it."""
    actor = ose_monster("1d6 + 2d8") if adapter is OSE else ars_npc("1d6 + 2d8")
    actor["flags"] = {"mindscape": {system: store}}
    got = adapter.import_(actor, system)
    assert {w for w in got.warnings if "several sizes" in w} == said


def test_a_formula_of_several_sizes_names_no_die_the_sheet_does_not_take_from_it() -> None:
    """docs/ADAPTERS.md: the Roll20 sheet's pool die comes from ``psi_die`` or the class
    group (a monster's d8), never from the Monster Sheet's Hit Dice box, so a formula
    there of several sizes is said of its count only; a die the formula rolls most of
    that is off the ladder is not named either (dnd5e then takes d8, and says so)."""
    monster = {"id": "-MzMonster0000001", "name": "Umber hulk", "attribs": [
        {"name": "hitdice", "current": "1d10 + 2d12", "max": ""}]}
    got = SHEET.import_(monster, "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (3, 8)
    assert [w for w in got.warnings if "several sizes" in w] == [
        'Hit Dice "1d10 + 2d12" roll dice of several sizes; counted as 3, the dice of '
        'every size']
    aboleth = load("foundry/dnd5e/aboleth.json")
    aboleth["system"]["attributes"]["hp"]["formula"] = "1d6 + 2d7"
    got = adapters.get("foundry.dnd5e").import_(aboleth, "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (3, 8)
    assert [w for w in got.warnings if "several sizes" in w] == [
        'Hit Dice "1d6 + 2d7" roll dice of several sizes; counted as 3, the dice of '
        'every size']


def test_a_formula_of_several_sizes_rolled_as_often_says_the_first_is_taken() -> None:
    """docs/ADAPTERS.md: of sizes rolled as often, the die is the first (``1d8 + 1d6``:
    d8), and the warning says so rather than that it is rolled most."""
    got = OSE.import_(ose_monster("1d8 + 1d6"), "power-pool")
    assert got.combatant["die"] == 8
    assert 'Hit Dice "1d8 + 1d6" roll dice of several sizes; the die taken is d8, the ' \
        'first of the sizes it rolls most of' in got.warnings


def test_a_mapped_dice_count_warning_is_withdrawn_when_the_store_sets_the_field() -> None:
    """docs/ADAPTERS.md: a Hit Dice warning is not given when the psionic state store
    sets the field, in a mapping's `parse: "dice-count"` as in the other adapters."""
    mapping = {"version": 1, "fields": {"hit_dice": {"path": "system.hd",
                                                     "parse": "dice-count"}}}
    warning = 'Hit Dice "4+1" read as 4; ignored +1 (hit points)'
    data = generic_actor(mapping, hd="4+1")
    assert warning in FOUNDRY_GENERIC.import_(data, "power-pool").warnings
    data["actor"]["flags"] = {"mindscape": {"power-pool": {"hit_dice": 6}}}
    got = FOUNDRY_GENERIC.import_(data, "power-pool")
    assert got.combatant["hit_dice"] == 6
    assert warning not in got.warnings


# -- 7. monster Intelligence as words --------------------------------------------------------
def ars_npc_int(text: Any) -> dict[str, Any]:
    """An ARS NPC whose stat block line ``system.intelligence`` (the creature template's
    text field, which ARS's stat-block and NPC-text imports fill) holds ``text``."""
    actor = ars_npc("4")
    actor["system"]["intelligence"] = text
    return actor


def roll20_monster_int(text: str) -> dict[str, Any]:
    """A Monster Sheet character (its "Hit Dice" box) whose "Intelligence" box,
    ``monsterintelligence`` (ADnD_2E_Revised/html/tabs/monster-tab.html), holds ``text``."""
    return {"id": "-MzMonster0000001", "name": "Umber hulk", "attribs": [
        {"name": "hitdice", "current": "8", "max": ""},
        {"name": "monsterintelligence", "current": text, "max": ""}]}


@pytest.mark.parametrize(("text", "score", "how"), [
    # the AD&D 2nd edition Monstrous Manual's table, as monster entries print it
    ("Non- (0)", 1, "the stated 0, used as 1: the lowest score a revised-2e combatant has"),
    ("Non-", 1,
     "the band non (0), used as 1: the lowest score a revised-2e combatant has"),
    ("Animal (1)", 1, "the stated 1"),
    ("Semi- (2-4)", 2, "the lowest of the stated 2-4"),
    ("Semi-", 2, "the lowest of the band semi (2-4)"),
    ("Low (5-7)", 5, "the lowest of the stated 5-7"),
    ("Average (8-10)", 8, "the lowest of the stated 8-10"),
    ("Average", 8, "the lowest of the band average (8-10)"),
    ("Very (11-12)", 11, "the lowest of the stated 11-12"),
    ("Highly (13-14)", 13, "the lowest of the stated 13-14"),
    ("Highly", 13, "the lowest of the band high (13-14)"),
    ("Exceptional (15–16)", 15, "the lowest of the stated 15-16"),
    ("Genius (17-18)", 17, "the lowest of the stated 17-18"),
    ("Supra-genius", 19, "the lowest of the band supra-genius (19-20)"),
    ("Godlike (21+)", 21, "the lowest of the stated 21+"),
    ("Low to average (5-10)", 5, "the lowest of the stated 5-10"),
    ("Low to Average", 5, "the lowest of the bands low (5-7) to average (8-10)"),
    ("Average or low", 5, "the lowest of the bands average (8-10) to low (5-7)"),
    ("Low-average", 5, "the lowest of the bands low (5-7) to average (8-10)"),
    ("Avg.", 8, "the lowest of the band average (8-10)"),
    ("Average (8 to 10)", 8, "the lowest of the stated 8-10"),
    ("Semi- (semi-intelligent)", 2, "the lowest of the band semi (2-4)"),
    ("10-8", 8, "the lowest of the stated 10-8"),
    # the Roll20 sheet's own list for the box: the range first
    ("8-10 (Average)", 8, "the lowest of the stated 8-10"),
    ("21+ (Godlike)", 21, "the lowest of the stated 21+"),
    ("0 (Nonintelligent)", 1,
     "the stated 0, used as 1: the lowest score a revised-2e combatant has"),
    ("14", 14, "the stated 14"),
    # docs/ADAPTERS.md: "Ability scores above 25 are used as 25"
    ("25", 25, "the stated 25"),
    ("Godlike (26)", 25, "the stated 26, above the tables' 25: used as 25"),
])
def test_monster_intelligence_given_as_words_is_read_as_a_score(text: str, score: int,
                                                                how: str) -> None:
    """Monstrous Manual: Intelligence 0 non-, 1 animal, 2-4 semi-, 5-7 low, 8-10 average,
    11-12 very, 13-14 highly, 15-16 exceptional, 17-18 genius, 19-20 supra-genius, 21+
    godlike. A number the text states is used (a range's lowest), else the band's lowest
    (docs/ADAPTERS.md); the warning names the field, the text and what it was read as.
    ARS NPCs keep it in system.intelligence, the Roll20 Monster Sheet in
    monsterintelligence."""
    for adapter, data, where, store in (
            (ARS, ars_npc_int(text), "system.intelligence",
             "flags.mindscape.revised-2e.int"),
            (SHEET, roll20_monster_int(text), "monsterintelligence", "psi_int")):
        got = adapter.import_(data, "revised-2e")
        assert got.combatant["int"] == score
        assert f"Int {score} read from {where} {json.dumps(text, ensure_ascii=False)}: " \
               f"{how} ({store} sets it)" in got.warnings
        assert not any("no int score" in w for w in got.warnings)
        assert adapter.import_(adapter.trimmed(data, "revised-2e"), "revised-2e") == got
        assert REVISED.combatant(got.combatant)["int"] == score
        # combat-strength's combatant takes 0: a non-intelligent monster's 0 stays 0
        lowest_in_cs = 0 if "used as 1" in how else score
        assert adapter.import_(data, "combat-strength").combatant["int"] == lowest_in_cs


def test_intelligence_text_no_band_has_is_said_and_the_score_is_read_instead() -> None:
    """Text that names no band (or two numbers, or words beside the band, or only a
    dash) is not guessed at: a warning names the field, and the sheet's score is read as
    before (ARS: system.abilities.int.value; Roll20: Intelligence)."""
    for text in ("Varies", "Average (8-10) but cunning", "8.5", "Low, average or very",
                 "-", "Intelligence"):
        actor = ars_npc_int(text)
        actor["system"]["abilities"]["int"]["value"] = 12
        got = ARS.import_(actor, "revised-2e")
        assert got.combatant["int"] == 12
        assert any(w.startswith(f"system.intelligence {json.dumps(text)} is not an "
                                "Intelligence this adapter reads") for w in got.warnings), text
        data = roll20_monster_int(text)
        data["attribs"].append({"name": "Intelligence", "current": "6", "max": ""})
        got = SHEET.import_(data, "revised-2e")
        assert got.combatant["int"] == 6
        assert any(w.startswith(f"monsterintelligence {json.dumps(text)} is not")
                   for w in got.warnings), text


def test_intelligence_text_is_a_monsters_and_the_state_store_still_wins() -> None:
    """A monster's stat block line is its Intelligence, before the sheet's score box
    (ARS gives every NPC abilities.int 10 and its imports fill only the line). Only a
    monster's is read so: a character's Roll20 sheet keeps its Intelligence score. The
    psionic state store's int overrides the text, as it overrides every sheet value."""
    data = roll20_monster_int("Genius")
    data["attribs"].append({"name": "Intelligence", "current": "9", "max": ""})
    assert SHEET.import_(data, "revised-2e").combatant["int"] == 17
    data["attribs"] += [{"name": "level-class1", "current": "3", "max": ""},
                        {"name": "tab11", "current": "1", "max": ""}]
    got = SHEET.import_(data, "revised-2e")
    assert (got.combatant["int"], got.combatant["level"]) == (9, 3)
    assert not any("monsterintelligence" in w for w in got.warnings)
    data = roll20_monster_int("Genius")
    data["attribs"].append({"name": "psi_int", "current": "16", "max": ""})
    assert SHEET.import_(data, "revised-2e").combatant["int"] == 16
    actor = ars_npc_int("Genius")
    actor["system"]["abilities"]["int"]["value"] = 9
    assert ARS.import_(actor, "revised-2e").combatant["int"] == 17
    actor["flags"] = {"mindscape": {"revised-2e": {"int": 16}}}
    assert ARS.import_(actor, "revised-2e").combatant["int"] == 16


def test_an_ars_characters_intelligence_is_its_score_not_a_stat_block_line() -> None:
    """docs/ADAPTERS.md (foundry.ars ``int``): only an NPC's ``int`` comes from its stat
    block line ``system.intelligence``; a character's is its ability score, whatever
    text its data holds beside it."""
    actor = template_actor("foundry/ars/template.json", "character", "arsChar000000001",
                           "Dorn")
    actor["system"]["abilities"]["int"]["value"] = 15
    actor["system"]["intelligence"] = "Genius"
    got = ARS.import_(actor, "revised-2e")
    assert got.combatant["int"] == 15
    assert not any("Genius" in w for w in got.warnings)


def test_a_system_without_intelligence_says_nothing_of_a_monsters_intelligence_line(
        ) -> None:
    """power-pool has no `int` (docs/COMBATANTS.md): an ARS NPC's stat block line is not
    read for it, so no warning says what it was read as."""
    got = ARS.import_(ars_npc_int("Average (8-10)"), "power-pool")
    assert "int" not in got.combatant
    assert not any("system.intelligence" in w for w in got.warnings), got.warnings


def test_a_blank_intelligence_line_is_no_intelligence_and_is_passed_over_in_silence(
        ) -> None:
    """docs/ADAPTERS.md (foundry.ars `int`): an NPC's `int` comes "from its stat block
    line `system.intelligence` when that holds text or a number ..., else from
    `abilities.int.value`": a line of spaces holds nothing, so nothing is said of it."""
    actor = ars_npc_int("   ")
    actor["system"]["abilities"]["int"]["value"] = 12
    got = ARS.import_(actor, "revised-2e")
    assert got.combatant["int"] == 12
    assert not any("system.intelligence" in w for w in got.warnings), got.warnings


def test_intelligence_text_of_a_stat_blocks_length_is_read_and_longer_is_not() -> None:
    """adapters/intelligence.py: MAX_INT_TEXT is the "longest text read as an
    Intelligence (a stat block's line, not a description)": text of that length is
    read, one character more is not (a warning, and the sheet's score)."""
    text = "Average" + " " * (MAX_INT_TEXT - len("Average"))
    assert ARS.import_(ars_npc_int(text), "revised-2e").combatant["int"] == 8
    actor = ars_npc_int(text + " ")
    actor["system"]["abilities"]["int"]["value"] = 12
    got = ARS.import_(actor, "revised-2e")
    assert got.combatant["int"] == 12
    assert any(w.startswith('system.intelligence "Average" is not an Intelligence')
               for w in got.warnings), got.warnings


def test_intelligence_text_of_1000_characters_is_warned_about_not_refused() -> None:
    """docs/ADAPTERS.md: only "text over 1000 characters is `InvalidInput`"; text of
    1000 is no Intelligence, said in a warning, and the sheet's score is read."""
    got = ARS.import_(ars_npc_int("x" * 1000), "revised-2e")
    assert got.combatant["int"] == 10
    assert any(w.startswith('system.intelligence "xxx') for w in got.warnings)


def test_intelligence_text_that_is_no_text_is_refused_at_its_place() -> None:
    """A hostile value in the stat block's field is InvalidInput there, as for every
    field read."""
    for value in ({"band": "average"}, ["average"], True, "x" * 1001):
        with pytest.raises(InvalidInput) as err:
            ARS.import_(ars_npc_int(value), "revised-2e")
        assert err.value.problems[0].path == "/system/intelligence"


def test_the_intelligence_bands_are_the_quick_mac_tables_bands() -> None:
    """adapters/data/intelligence.json and RULES.md §1.6's quick MAC table (the engine's
    tables.json) name the same Monstrous Manual bands, with the same scores."""
    quick = [(row["min"], row["max"]) for row in REVISED.tables.raw["quick_mac"]["base"]]
    table = json.loads((Path(adapters.__file__).parent / "data/intelligence.json")
                       .read_text(encoding="utf-8"))
    assert [(row["min"], row["max"]) for row in table["bands"]] == quick


# -- 8. mapping files -----------------------------------------------------------------------
def generic_actor(mapping: dict[str, Any], **system: Any) -> dict[str, Any]:
    actor = load("foundry/dnd5e/aboleth.json")
    actor["system"].update(system)
    return {"mapping": mapping, "actor": actor}


def test_a_hit_die_source_holding_a_bare_number_reads_it_as_the_die_size() -> None:
    """docs/ADAPTERS.md: `parse: "hit-die"` on a number reads it as the die's size (8 →
    d8); a number that is no die size, or text naming no die, is ignored with a
    warning, never silently."""
    mapping = {"version": 1, "fields": {"hit_dice": {"path": "system.hd", "parse":
                                                     "dice-count"},
                                        "die": {"path": "system.die", "parse": "hit-die"}}}
    got = FOUNDRY_GENERIC.import_(generic_actor(mapping, hd=3, die=8), "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (3, 8)
    got = FOUNDRY_GENERIC.import_(generic_actor(mapping, hd=3, die="10"), "power-pool")
    assert got.combatant["die"] == 10
    got = FOUNDRY_GENERIC.import_(generic_actor(mapping, hd=3, die=3), "power-pool")
    assert "die" not in got.combatant
    assert "die: 3 (at /actor/system/die) is not a hit die size (4, 6, 8, 10, 12 or 20); " \
           "ignored" in got.warnings
    got = FOUNDRY_GENERIC.import_(generic_actor(mapping, hd=3, die="4+1"), "power-pool")
    assert "die" not in got.combatant
    assert 'die: "4+1" (at /actor/system/die) names no hit die (like \'d8\'); ignored' \
        in got.warnings


@pytest.mark.parametrize("held", [None, "", "absent"])
def test_a_mapped_hit_dice_or_die_path_holding_nothing_is_said(held: Any) -> None:
    """docs/ADAPTERS.md (mapping files): a mapped level, Hit Dice or hit die whose path
    holds nothing (absent, null or "") and that has no default is left out with a
    warning naming the path, as a mapped score is said (the engine then refuses a power
    pool without it); none when a default fills it, and withdrawn when the state store
    sets the field."""
    mapping = {"version": 1, "fields": {"hit_dice": {"path": "system.hd",
                                                     "parse": "dice-count"},
                                        "die": "system.die", "level": "system.lvl"}}
    empty = {} if held == "absent" else {"hd": held, "die": held}  # aboleth has neither
    data = generic_actor(mapping, **empty)
    got = FOUNDRY_GENERIC.import_(data, "power-pool")
    said = {"no hit_dice in system.hd (the mapping gives no default); left out",
            "no die in system.die (the mapping gives no default); left out"}
    assert "hit_dice" not in got.combatant and "die" not in got.combatant
    assert said <= set(got.warnings), got.warnings
    with pytest.raises(InvalidInput):
        builtin_systems()["power-pool"].combatant(got.combatant)
    assert "no level in system.lvl (the mapping gives no default); left out" in \
        FOUNDRY_GENERIC.import_(data, "revised-2e").warnings
    data["actor"]["flags"] = {"mindscape": {"power-pool": {"hit_dice": 4, "die": 6}}}
    got = FOUNDRY_GENERIC.import_(data, "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (4, 6)
    assert not said & set(got.warnings), got.warnings
    mapping["fields"]["hit_dice"]["default"] = 2
    got = FOUNDRY_GENERIC.import_(generic_actor(mapping, **{**empty, "die": 8}),
                                  "power-pool")
    assert (got.combatant["hit_dice"], got.combatant["die"]) == (2, 8)
    assert not any("left out" in w for w in got.warnings), got.warnings
    roll20 = {"mapping": {"version": 1, "fields": {
                  "hit_dice": {"path": "HD|max", "parse": "dice-count"},
                  "die": {"path": "HD", "parse": "hit-die"}}},
              "character": {"id": "c1", "name": "Kel", "attribs": [] if held == "absent"
                            else [{"name": "HD", "current": held, "max": held}]}}
    got = ROLL20_GENERIC.import_(roll20, "power-pool")
    assert {"no hit_dice in HD|max (the mapping gives no default); left out",
            "no die in HD (the mapping gives no default); left out"} <= set(got.warnings)
    roll20["character"]["attribs"].append({"name": "psi_pool", "current": 3, "max": 3})
    roll20["character"]["attribs"].append({"name": "psi_die", "current": 8})
    assert not any("left out" in w
                   for w in ROLL20_GENERIC.import_(roll20, "power-pool").warnings)


def test_a_mapped_path_holding_blank_text_holds_nothing() -> None:
    """docs/ADAPTERS.md (mapping files): blank text (``"  "``, which a number box left
    with a space holds) is nothing, as ``""`` is: the mapping's default is taken, and a
    level, Hit Dice or hit die with no default is left out with a warning naming the
    path; neither the default nor the warning was lost to the spaces."""
    mapping: dict[str, Any] = {"version": 1, "fields": {
        "hit_dice": {"path": "system.hd", "parse": "dice-count", "default": 2},
        "die": {"path": "system.die", "parse": "hit-die"}}}
    got = FOUNDRY_GENERIC.import_(generic_actor(mapping, hd="  ", die=" "), "power-pool")
    assert got.combatant["hit_dice"] == 2 and "die" not in got.combatant
    assert "no die in system.die (the mapping gives no default); left out" in got.warnings
    assert got.sources["hit_dice"] == "/mapping/fields/hit_dice/default"
    roll20 = {"mapping": {"version": 1, "fields": {"level": "Level"}},
              "character": {"id": "c1", "name": "Kel", "attribs": [
                  {"name": "Level", "current": " ", "max": ""}]}}
    assert "no level in Level (the mapping gives no default); left out" in \
        ROLL20_GENERIC.import_(roll20, "revised-2e").warnings


NO_GROUP = ("no class group read from the sheet ({}); the engine takes psionicist for a "
            "psionicist, else warrior (for its save vs. paralyzation); {} sets it")


def test_a_mappings_class_group_warning_says_whether_it_maps_one() -> None:
    """docs/ADAPTERS.md: a character given no class group is left to the engine with a
    warning saying why. A mapping reads no class name, only a ``class_group`` path (a
    value no group names is refused there), so the warning says whether it names none
    or its path holds nothing; the adapters that know a sheet read a class name."""
    mapping: dict[str, Any] = {"version": 1, "fields": {"int": "system.abilities.int.value"}}
    data = generic_actor(mapping)
    data["actor"]["type"] = "character"
    store = "flags.mindscape.revised-2e.class_group"
    assert NO_GROUP.format("the mapping names no class_group", store) in \
        FOUNDRY_GENERIC.import_(data, "revised-2e").warnings
    mapping["systems"] = {"revised-2e": {"class_group": "system.details.group"}}
    for held in (None, ""):
        data["actor"]["system"]["details"]["group"] = held
        assert NO_GROUP.format("nothing in system.details.group, where the mapping reads "
                               "it", store) in \
            FOUNDRY_GENERIC.import_(data, "revised-2e").warnings
    data["actor"]["system"]["details"]["group"] = "priest"
    got = FOUNDRY_GENERIC.import_(data, "revised-2e")
    assert got.combatant["class_group"] == "priest"
    assert not any("class group" in w for w in got.warnings)
    roll20 = {"mapping": {"version": 1, "fields": {"psp": "PSP"}},
              "character": {"id": "c1", "name": "Kel", "attribs": [
                  {"name": "PSP", "current": "20", "max": "20"},
                  {"name": "Group", "current": ""}]}}
    assert NO_GROUP.format("the mapping names no class_group", "psi_class_group") in \
        ROLL20_GENERIC.import_(roll20, "revised-2e").warnings
    roll20["mapping"]["fields"]["class_group"] = "Group"
    assert NO_GROUP.format("nothing in Group, where the mapping reads it",
                           "psi_class_group") in \
        ROLL20_GENERIC.import_(roll20, "revised-2e").warnings
    sheet = {"id": "c2", "name": "Ona", "attribs": [
        {"name": "level-class1", "current": "3"}, {"name": "class1", "current": "Mystic"}]}
    assert NO_GROUP.format("no class name it knows", "psi_class_group") in \
        SHEET.import_(sheet, "revised-2e").warnings


def test_a_mapped_intelligence_source_reads_a_stat_blocks_words() -> None:
    """docs/ADAPTERS.md: `parse: "intelligence"` reads a monster's Intelligence text as
    the monster adapters do, a number as a score, and text that is none as a missing
    score; any field but int is refused at its parse."""
    mapping = {"version": 1, "fields": {"int": {"path": "system.intel",
                                                "parse": "intelligence"}}}
    got = FOUNDRY_GENERIC.import_(generic_actor(mapping, intel="Average (8-10)"),
                                  "revised-2e")
    assert got.combatant["int"] == 8
    assert any(w.startswith('Int 8 read from system.intel "Average (8-10)"')
               for w in got.warnings), got.warnings
    assert FOUNDRY_GENERIC.import_(generic_actor(mapping, intel=14),
                                   "revised-2e").combatant["int"] == 14
    got = FOUNDRY_GENERIC.import_(generic_actor(mapping, intel="Varies"), "revised-2e")
    assert got.combatant["int"] == 10
    assert any(w.startswith('system.intel "Varies" is not an Intelligence')
               for w in got.warnings), got.warnings
    wis = {"version": 1, "fields": {"wis": {"path": "system.w", "parse": "intelligence"}}}
    with pytest.raises(InvalidInput) as err:
        FOUNDRY_GENERIC.import_(generic_actor(wis, w="High"), "revised-2e")
    assert err.value.problems[0].path == "/mapping/fields/wis/parse"
    assert err.value.problems[0].message == '"intelligence" reads only int, not wis'


def test_a_number_in_a_mapped_intelligence_source_is_read_as_a_score() -> None:
    """docs/ADAPTERS.md: `parse: "intelligence"`: "a number is read as a score", as any
    ability score is (one above 25 used as 25 with the score's warning), not as a
    stat block's text read with a warning of how."""
    mapping = {"version": 1, "fields": {"int": {"path": "system.intel",
                                                "parse": "intelligence"}}}
    got = FOUNDRY_GENERIC.import_(generic_actor(mapping, intel=14), "revised-2e")
    assert got.combatant["int"] == 14
    assert not any(w.startswith("Int ") for w in got.warnings), got.warnings
    got = FOUNDRY_GENERIC.import_(generic_actor(mapping, intel=30), "revised-2e")
    assert got.combatant["int"] == 25
    assert "int 30 is above the tables' 25; used as 25" in got.warnings


def test_a_mapped_intelligence_of_0_is_a_non_intelligent_monster_not_a_refusal() -> None:
    """docs/ADAPTERS.md, Monster Intelligence: "Non-intelligent (0) is used as 1, the
    lowest score a revised-2e combatant has", as ARS reads its system.intelligence 0, number or
    text. A mapping's `intelligence` source read the text "0" so but refused the number
    0 as an ability score ("an ability score must be at least 1"), so a Foundry system
    keeping a zombie's Intelligence in a number field could not import it."""
    mapping = {"version": 1, "fields": {"int": {"path": "system.intel",
                                                "parse": "intelligence"}}}
    for intel in (0, "0"):
        got = FOUNDRY_GENERIC.import_(generic_actor(mapping, intel=intel), "revised-2e")
        assert got.combatant["int"] == 1, intel
        assert 'Int 1 read from system.intel "0": the stated 0, used as 1: the lowest ' \
            "score a revised-2e combatant has (flags.mindscape.revised-2e.int sets it)" \
            in got.warnings
    # a plain score of 0 is still refused: 0 is no score a sheet gives
    plain = {"version": 1, "fields": {"int": "system.intel"}}
    with pytest.raises(InvalidInput) as err:
        FOUNDRY_GENERIC.import_(generic_actor(plain, intel=0), "revised-2e")
    assert err.value.problems[0].message == "an ability score must be at least 1"


def test_a_non_intelligent_monster_keeps_int_0_in_combat_strength() -> None:
    """docs/ADAPTERS.md, Monster Intelligence: a non-intelligent monster's 0 is raised to
    the lowest score the system's combatant has: 1 in revised-2e, but combat-strength's
    combatant (and its store, FIELDS) takes 0, and its Psionic Wave counts Int + Wis
    from there (RULES.md §2.7), so there it stays 0, said without "used as". It was read
    as 1 in every system, with a warning calling 1 the lowest score a combatant has."""
    mapping = {"version": 1, "fields": {"int": {"path": "system.intel",
                                                "parse": "intelligence"}}}
    for intel in (0, "0", "Non-"):
        got = FOUNDRY_GENERIC.import_(generic_actor(mapping, intel=intel), "combat-strength")
        assert got.combatant["int"] == 0, intel
        assert builtin_systems()["combat-strength"].combatant(got.combatant)["int"] == 0
        said = [w for w in got.warnings if w.startswith("Int ")]
        assert len(said) == 1 and said[0].startswith("Int 0 read from system.intel ") \
            and "used as" not in said[0], said
    for adapter, data in ((ARS, ars_npc_int("Non- (0)")),
                          (SHEET, roll20_monster_int("0 (Nonintelligent)"))):
        assert adapter.import_(data, "combat-strength").combatant["int"] == 0, adapter.id
        assert adapter.import_(data, "revised-2e").combatant["int"] == 1, adapter.id


def test_a_large_bare_number_in_a_hit_die_source_is_ignored_with_a_warning() -> None:
    """docs/ADAPTERS.md: `parse: "hit-die"`: "a number that is no die size ... leaves
    the field out with a warning", a large one (a hit-point total in the wrong box) too."""
    mapping = {"version": 1, "fields": {"die": {"path": "system.die", "parse": "hit-die"}}}
    got = FOUNDRY_GENERIC.import_(generic_actor(mapping, die=120), "power-pool")
    assert "die" not in got.combatant
    assert "die: 120 (at /actor/system/die) is not a hit die size (4, 6, 8, 10, 12 or " \
           "20); ignored" in got.warnings


def test_a_hit_die_source_s_warning_is_withdrawn_when_the_store_sets_the_die() -> None:
    """docs/ADAPTERS.md: a warning about how the sheet gives the hit die comes "only
    when it does: a die the store sets ... is taken without them", from a mapping's
    `hit-die` source too (its warning stayed, naming a value not used): the flags' die
    is taken and neither warning is given; without the flags both still are."""
    mapping = {"version": 1, "fields": {"die": {"path": "system.die", "parse": "hit-die"}}}
    for die, warning in ((3, "die: 3 (at /actor/system/die) is not a hit die size (4, 6, "
                             "8, 10, 12 or 20); ignored"),
                         ("4+1", "die: \"4+1\" (at /actor/system/die) names no hit die "
                                 "(like 'd8'); ignored")):
        data = generic_actor(mapping, die=die)
        assert warning in FOUNDRY_GENERIC.import_(data, "power-pool").warnings
        data["actor"]["flags"] = {"mindscape": {"power-pool": {"die": 6}}}
        got = FOUNDRY_GENERIC.import_(data, "power-pool")
        assert got.combatant["die"] == 6
        assert not any(w.startswith("die: ") for w in got.warnings), got.warnings


def test_a_hit_die_source_the_adapter_cannot_read_is_refused_unless_the_store_sets_it(
        ) -> None:
    """As in the adapters that know a sheet, a die off the ladder ("3d7") in a mapped
    `hit-die` source is InvalidInput at its place, but not when the store sets the die
    (flags.mindscape.power-pool.die): that die is the one taken (it refused the import)."""
    mapping = {"version": 1, "fields": {"die": {"path": "system.die", "parse": "hit-die"}}}
    data = generic_actor(mapping, die="3d7")
    with pytest.raises(InvalidInput) as err:
        FOUNDRY_GENERIC.import_(data, "power-pool")
    assert err.value.problems[0].path == "/actor/system/die"
    data["actor"]["flags"] = {"mindscape": {"power-pool": {"die": 6}}}
    assert FOUNDRY_GENERIC.import_(data, "power-pool").combatant["die"] == 6


def test_a_mappings_per_system_entry_wins_over_its_fields_entry_for_that_system() -> None:
    """docs/ADAPTERS.md: "`systems` adds or overrides per system": the per-system
    source wins for that system, the `fields` one serves the others."""
    mapping = {"version": 1, "fields": {"int": "system.abilities.int.value"},
               "systems": {"revised-2e": {"int": "system.abilities.wis.value"}}}
    data = generic_actor(mapping)
    assert FOUNDRY_GENERIC.import_(data, "revised-2e").combatant["int"] == 15
    assert FOUNDRY_GENERIC.import_(data, "combat-strength").combatant["int"] == 18


def test_a_per_system_entry_for_a_field_the_system_lacks_is_not_read() -> None:
    """docs/ADAPTERS.md: a mapping names fields "for every system that has the field";
    a per-system entry of a field that system has not (a power-pool level) is not read,
    as such a `fields` entry is not."""
    mapping = {"version": 1,
               "systems": {"power-pool": {"level": "system.details.cr",
                                          "int": "system.abilities.int.value"}}}
    got = FOUNDRY_GENERIC.import_(generic_actor(mapping), "power-pool")
    assert "level" not in got.combatant and "int" not in got.combatant


def test_a_bad_default_in_a_mapping_is_reported_in_the_mapping() -> None:
    mapping = {"version": 1,
               "systems": {"revised-2e": {"level": {"path": "system.nowhere",
                                                    "default": "seventh"}}}}
    with pytest.raises(InvalidInput) as err:
        FOUNDRY_GENERIC.import_(generic_actor(mapping), "revised-2e")
    assert err.value.problems[0].path == "/mapping/systems/revised-2e/level/default"
    roll20 = {"mapping": {"version": 1, "fields": {"psp": {"path": "PSP", "default": -3}}},
              "character": load("roll20/vttes-export-ilaris-empty.json")}
    with pytest.raises(InvalidInput) as err:
        ROLL20_GENERIC.import_(roll20, "revised-2e")
    assert err.value.problems[0].path == "/mapping/fields/psp/default"


def test_foundry_sources_point_at_the_place_each_field_was_read_from() -> None:
    """docs/ADAPTERS.md: ``sources`` is "the JSON Pointer inside ``data`` each field was
    read from, for fields read from one place: ... the mapping ``default`` a value came
    from"; a value derived from several places (a level summed over class items) has
    none."""
    mapping = {"version": 1,
               "systems": {"revised-2e": {"level": {"path": "system.nowhere",
                                                    "default": 4}}}}
    got = FOUNDRY_GENERIC.import_(generic_actor(mapping), "revised-2e")
    assert got.combatant["level"] == 4
    assert got.sources["level"] == "/mapping/systems/revised-2e/level/default"
    zanna = load("foundry/dnd5e/zanna-gnome-wizard.json")
    zanna["flags"]["mindscape"] = {"revised-2e": {"psp": 12}}
    read = adapters.get("foundry.dnd5e").import_(zanna, "revised-2e")
    assert read.sources["hp"] == "/system/attributes/hp/value"
    assert read.sources["psp"] == "/flags/mindscape/revised-2e/psp"
    assert "level" not in read.sources


def test_a_store_value_over_a_mapping_default_is_sourced_from_the_store() -> None:
    """docs/ADAPTERS.md: ``sources`` is "the JSON Pointer inside ``data`` each field was
    read from"; the store wins over the sheet, and over a mapping `default` too, so the
    level the store gives points into the flags, not at the default it replaced."""
    mapping = {"version": 1,
               "systems": {"revised-2e": {"level": {"path": "system.nowhere",
                                                    "default": 4}}}}
    data = generic_actor(mapping)
    data["actor"]["flags"]["mindscape"] = {"revised-2e": {"level": 6}}
    got = FOUNDRY_GENERIC.import_(data, "revised-2e")
    assert got.combatant["level"] == 6
    assert got.sources["level"] == "/actor/flags/mindscape/revised-2e/level"


def test_generic_ability_scores_above_25_are_used_as_25() -> None:
    """docs/ADAPTERS.md: "Ability scores above 25 are used as 25" (every adapter)."""
    mapping = {"version": 1, "fields": {"int": "system.abilities.int.value",
                                        "wis": "system.abilities.wis.value"}}
    data = generic_actor(mapping)
    data["actor"]["system"]["abilities"]["int"]["value"] = 30
    got = FOUNDRY_GENERIC.import_(data, "revised-2e")
    assert (got.combatant["int"], got.combatant["wis"]) == (25, 15)
    assert "int 30 is above the tables' 25; used as 25" in got.warnings
    roll20 = {"mapping": {"version": 1, "fields": {"wis": "Wis"}},
              "character": {"id": "c1", "name": "C", "attribs": [{"name": "Wis",
                                                                  "current": "40"}]}}
    got = ROLL20_GENERIC.import_(roll20, "combat-strength")
    assert got.combatant["wis"] == 25
    assert "wis 40 is above the tables' 25; used as 25" in got.warnings


def test_a_store_ability_score_above_25_is_refused_not_used_as_25() -> None:
    """docs/ADAPTERS.md: only scores read from the sheet are used as 25; the store's
    `int` is the combatant's own field (COMBATANTS.md: int 1-25), so 30 there is
    refused at its place, on Foundry and Roll20 alike, while the same 30 on the sheet
    is used as 25."""
    zanna = load("foundry/dnd5e/zanna-gnome-wizard.json")
    zanna["flags"]["mindscape"] = {"revised-2e": {"int": 30}}
    with pytest.raises(InvalidInput) as err:
        adapters.get("foundry.dnd5e").import_(zanna, "revised-2e")
    assert err.value.problems[0].path == "/flags/mindscape/revised-2e/int"
    assert err.value.problems[0].message == "must be at most 25, got 30"
    ulcen = load("roll20/adnd2e-revised-ulcen.handmade.json")
    ulcen["attribs"].append({"name": "psi_int", "current": "30", "max": ""})
    with pytest.raises(InvalidInput) as err:
        adapters.get("roll20.adnd2e-revised").import_(ulcen, "revised-2e")
    assert err.value.problems[0].path == f"/attribs/{len(ulcen['attribs']) - 1}/current"
    assert err.value.problems[0].message == "must be at most 25, got 30"


def test_a_store_ability_score_takes_the_range_the_system_s_combatant_takes() -> None:
    """docs/ADAPTERS.md: the store's `int`, `wis` and `con` are the combatant's own
    fields, in COMBATANTS.md's range: 1-25 in revised-2e, 0-25 in combat-strength (an
    Int + Wis of 5 or less is a band of its Psionic Wave table, RULES.md §2.7). The
    store refused a combat-strength int of 0 that the engine takes; each system's
    store now takes its schema's bounds, 0 included where the schema has it."""
    for system, schema in ((s, builtin_systems()[s].combatant_schema()["properties"])
                           for s in FIELDS):
        for name in SCORES & set(FIELDS[system]):
            bounds = (FIELDS[system][name].lo, FIELDS[system][name].hi)
            assert bounds == (schema[name]["minimum"], schema[name]["maximum"]), \
                (system, name)
    actor = template_actor("foundry/ose/template.json", "character", "oseChar000000001",
                           "Ose")
    actor["flags"] = {"mindscape": {"combat-strength": {"int": 0, "wis": 3}}}
    got = OSE.import_(actor, "combat-strength")
    assert (got.combatant["int"], got.combatant["wis"]) == (0, 3)
    assert builtin_systems()["combat-strength"].combatant(got.combatant)["int"] == 0
    ulcen = load("roll20/adnd2e-revised-ulcen.handmade.json")
    ulcen["attribs"].append({"name": "psi_int", "current": "0", "max": ""})
    assert SHEET.import_(ulcen, "combat-strength").combatant["int"] == 0
    with pytest.raises(InvalidInput) as err:
        SHEET.import_(ulcen, "revised-2e")
    assert err.value.problems[0].path == f"/attribs/{len(ulcen['attribs']) - 1}/current"
    assert err.value.problems[0].message == "must be at least 1, got 0"


def test_a_store_number_the_adapters_take_is_one_the_system_s_combatant_takes() -> None:
    """docs/ADAPTERS.md: the store holds the combatant's own fields, so a whole number the
    adapters take there is within the bounds of that field in the system's combatant
    schema (COMBATANTS.md). The store took a Mental Armor of 0-100 where the combatant
    takes 0-20, so 21 passed the adapter and was refused by the engine instead; now the
    adapter refuses it at the attribute, in its own words, and takes 20."""
    for system in FIELDS:
        schema = builtin_systems()[system].combatant_schema()["properties"]
        for name, ftype in FIELDS[system].items():
            if ftype.kind != "int":
                continue
            lo, hi = schema[name].get("minimum"), schema[name].get("maximum")
            assert lo is None or (ftype.lo is not None and ftype.lo >= lo), (system, name)
            assert hi is None or (ftype.hi is not None and ftype.hi <= hi), (system, name)
    ulcen = load("roll20/adnd2e-revised-ulcen.handmade.json")
    ulcen["attribs"].append({"name": "psi_mental_armor", "current": "20", "max": ""})
    taken = SHEET.import_(ulcen, "revised-2e").combatant
    assert REVISED.combatant(taken)["mental_armor"] == 20
    ulcen["attribs"][-1]["current"] = "21"
    with pytest.raises(InvalidInput) as err:
        SHEET.import_(ulcen, "revised-2e")
    assert [(p.path, p.message) for p in err.value.problems] == [
        (f"/attribs/{len(ulcen['attribs']) - 1}/current", "must be at most 20, got 21")]


def test_store_psps_and_strengths_take_the_combatant_s_100000() -> None:
    """COMBATANTS.md: PSPs and combat strengths are 0-100000. The store stopped at 10000,
    so a value the engine takes (and the Foundry profile editor's field, built from the
    combatant schema, offers) was refused by the adapter; now the store takes the
    combatant's own maximum, and refuses one past it at the attribute."""
    ulcen = load("roll20/adnd2e-revised-ulcen.handmade.json")
    ulcen["attribs"].append({"name": "psi_psp", "current": "100000", "max": "100000"})
    taken = SHEET.import_(ulcen, "revised-2e").combatant
    assert REVISED.combatant(taken)["psp"] == 100_000
    ulcen["attribs"].append({"name": "psi_attack_strength", "current": "100000", "max": ""})
    strong = SHEET.import_(ulcen, "combat-strength").combatant
    assert builtin_systems()["combat-strength"].combatant(strong)["attack_strength"] == 100_000
    ulcen["attribs"][-2]["current"] = "100001"
    with pytest.raises(InvalidInput) as err:
        SHEET.import_(ulcen, "revised-2e")
    assert [(p.path, p.message) for p in err.value.problems] == [
        (f"/attribs/{len(ulcen['attribs']) - 2}/current", "must be at most 100000, got 100001")]


def test_a_sheet_ability_score_of_25_is_read_without_a_warning() -> None:
    """docs/ADAPTERS.md: only scores "above 25 are used as 25" with a warning; 25 is
    the tables' own top score."""
    roll20 = {"mapping": {"version": 1, "fields": {"wis": "Wis"}},
              "character": {"id": "c1", "name": "C", "attribs": [{"name": "Wis",
                                                                  "current": "25"}]}}
    got = ROLL20_GENERIC.import_(roll20, "combat-strength")
    assert got.combatant["wis"] == 25
    assert not any("25" in w for w in got.warnings), got.warnings


# -- 9. warnings ----------------------------------------------------------------------------
def test_warnings_are_given_once_each_and_at_most_fifty_then_counted() -> None:
    """A sheet with 50,000 mode rows of unknown names must not give an answer of
    megabytes: repeats are dropped, and past MAX_WARNINGS one line counts the rest."""
    def sheet(names: list[str]) -> dict[str, Any]:
        return {"id": "c1", "name": "C", "attribs": [
            {"name": f"repeating_psionic-attacks_-R{i}_psionic-attack-name", "current": n}
            for i, n in enumerate(names)]}

    same = SHEET.import_(sheet(["Mind Bar"] * 50_000), "revised-2e")
    assert sum('"Mind Bar" is not a revised-2e mode' in w for w in same.warnings) == 1
    many = SHEET.import_(sheet([f"Bar {i}" for i in range(50_000)]), "revised-2e")
    assert MAX_WARNINGS == 50 and len(many.warnings) == MAX_WARNINGS + 1
    assert many.warnings[-1].startswith("… and ")
    assert many.warnings[-1].endswith(" more warnings")
    assert len(json.dumps(many.warnings)) < 10_000


def test_fifty_warnings_are_all_given_and_one_more_is_counted_as_one_warning() -> None:
    """docs/API.md (adapters.import): "warnings come without repeats, at most 50 and a
    count of the rest": 50 are given whole, a 51st becomes "… and 1 more warning"."""
    def sheet(unknown: int) -> dict[str, Any]:
        return {"id": "c1", "name": "C", "attribs": [
            {"name": f"repeating_psionic-attacks_-R{i}_psionic-attack-name",
             "current": f"Bar {i}"} for i in range(unknown)]}

    others = len(SHEET.import_(sheet(0), "revised-2e").warnings)
    fifty = SHEET.import_(sheet(MAX_WARNINGS - others), "revised-2e").warnings
    assert len(fifty) == MAX_WARNINGS and not fifty[-1].startswith("… and")
    one_more = SHEET.import_(sheet(MAX_WARNINGS + 1 - others), "revised-2e").warnings
    assert len(one_more) == MAX_WARNINGS + 1
    assert one_more[-1] == "… and 1 more warning"


def test_a_mapping_default_is_used_when_the_path_holds_empty_text_on_both_vtts() -> None:
    """docs/ADAPTERS.md: a default is "used when the path holds nothing"; `""` counts as
    nothing on Foundry as on Roll20."""
    mapping = {"version": 1, "fields": {
        "level": {"path": "system.details.level", "default": 3},
        "psp": {"path": "system.resources.primary.value", "default": 20}}}
    data = generic_actor(mapping)
    data["actor"]["system"]["details"]["level"] = ""
    data["actor"]["system"]["resources"] = {"primary": {"value": "", "max": None}}
    got = FOUNDRY_GENERIC.import_(data, "revised-2e").combatant
    assert (got["level"], got["psp"]) == (3, 20)
    roll20 = {"mapping": {"version": 1, "fields": {"level": {"path": "lvl", "default": 3},
                                                   "psp": {"path": "pp", "default": 20}}},
              "character": {"id": "c1", "name": "C", "attribs": [
                  {"name": "lvl", "current": ""}, {"name": "pp", "current": ""}]}}
    got = ROLL20_GENERIC.import_(roll20, "revised-2e").combatant
    assert (got["level"], got["psp"]) == (3, 20)


def test_an_empty_mapped_place_receives_the_value_assumed_for_it() -> None:
    """docs/ADAPTERS.md: a value the engine or the adapter assumed (a PSP maximum left
    blank) is written back to the mapped place the sheet left empty, not to the store:
    the store wins over the sheet, so it would hide the GM's later entry for good."""
    mapping = {"version": 1, "fields": {"int": "system.abilities.int.value",
                                        "wis": "system.abilities.wis.value",
                                        "psp": "system.resources.primary.value",
                                        "psp_max": "system.resources.primary.max"}}
    data = generic_actor(mapping)
    data["actor"]["system"]["resources"] = {"primary": {"value": 40, "max": None}}
    data["actor"]["flags"]["mindscape"] = {"revised-2e": {"kind": "psionicist",
                                                          "level": 3}}
    before = REVISED.combatant(FOUNDRY_GENERIC.import_(data, "revised-2e").combatant)
    after = {**before, "psp": 33}
    got = FOUNDRY_GENERIC.updates(data, "revised-2e", before, after,
                                  normalise=REVISED.combatant)
    assert got[0]["update"] == {"system.resources.primary.value": 33,
                                "system.resources.primary.max": 40}
    written = apply_foundry(data, got)
    written["actor"]["system"]["resources"]["primary"]["max"] = 60  # the GM's entry
    assert FOUNDRY_GENERIC.import_(written, "revised-2e").combatant["psp_max"] == 60

    roll20 = {"mapping": {"version": 1, "fields": {"psp": "Power", "psp_max": "Power|max"},
                          "systems": {"revised-2e": {"kind": {"path": "psi_kind",
                                                              "default": "psionicist"}}}},
              "character": {"id": "c1", "name": "C", "attribs": [
                  {"name": "power", "current": "", "max": "20"},
                  {"name": "level-class1", "current": "3"}]}}
    before = ROLL20_GENERIC.import_(roll20, "revised-2e").combatant
    assert "psp" not in before  # the engine takes the maximum
    got = ROLL20_GENERIC.updates(roll20, "revised-2e", before, {**before, "psp": 12})
    assert got == [{"character_id": "c1", "attributes": {"power": {"current": 12}}}]
    # write: false keeps the place unwritten (and the value out of the store)
    roll20["mapping"]["fields"]["psp"] = {"path": "Power", "write": False}
    assert ROLL20_GENERIC.updates(roll20, "revised-2e", before, {**before, "psp": 12}) == []


def test_missing_mapped_ability_scores_are_10_with_a_warning() -> None:
    """docs/ADAPTERS.md "Defaults, with a warning each": missing ability scores are 10,
    mapped ones too; the warning names the place the GM fills in."""
    roll20 = {"mapping": {"version": 1, "fields": {"int": "Intelligence", "wis": "Wisdom"}},
              "character": {"id": "c1", "name": "Kel", "attribs": [
                  {"name": "psi_attack_strength", "current": "30"},
                  {"name": "Wisdom", "current": ""}]}}
    got = ROLL20_GENERIC.import_(roll20, "combat-strength")
    assert (got.combatant["int"], got.combatant["wis"]) == (10, 10)
    assert {"no int score in Intelligence; assumed 10",
            "no wis score in Wisdom; assumed 10"} <= set(got.warnings)
    mapping = {"version": 1, "fields": {"int": "system.abilities.int.value",
                                        "wis": "system.nowhere"}}
    data = generic_actor(mapping)
    data["actor"]["system"]["abilities"]["int"]["value"] = None
    got = FOUNDRY_GENERIC.import_(data, "combat-strength")
    assert (got.combatant["int"], got.combatant["wis"]) == (10, 10)
    assert {"no int score in system.abilities.int.value; assumed 10",
            "no wis score in system.nowhere; assumed 10"} <= set(got.warnings)


def test_mode_names_are_read_in_any_width_and_every_unknown_one_is_warned() -> None:
    """Full-width letters are the mode they spell (NFKC); a name in a script no mode
    is spelt in is dropped with a warning, as every unknown name is."""
    zanna = load("foundry/dnd5e/zanna-gnome-wizard.json")
    zanna["flags"]["mindscape"] = {"revised-2e": {
        "psp": 20, "attacks": ["Mind Thrust", "精神突き", "ＥＧＯ ＷＨＩＰ"]}}
    got = adapters.get("foundry.dnd5e").import_(zanna, "revised-2e")
    assert got.combatant["attacks"] == ["mind-thrust", "ego-whip"]
    assert [w for w in got.warnings if "not a revised-2e mode" in w] == [
        'attacks: "精神突き" is not a revised-2e mode; ignored']


@pytest.mark.parametrize("formula", ["36", "135", "4+1"])
def test_a_dnd5e_hit_point_formula_rolling_no_die_is_not_hit_dice(formula: str) -> None:
    """dnd5e rolls its formula: one with no die states hit points, so the Hit Dice
    come from the challenge rating (10 for the aboleth), with a warning saying why."""
    aboleth = load("foundry/dnd5e/aboleth.json")
    aboleth["system"]["attributes"]["hp"]["formula"] = formula
    got = adapters.get("foundry.dnd5e").import_(aboleth, "revised-2e")
    assert got.combatant["level"] == 10
    assert f'hit-point formula "{formula}" rolls no die; Hit Dice taken as 10 from the ' \
        "challenge rating" in got.warnings


def test_a_withdrawn_die_warning_leaves_the_same_words_warned_about_something_else() -> None:
    # The psionic state store setting the die withdraws the warnings about how the sheet
    # gave it, and only those: the same words warned otherwise stay, once each.
    draft = Draft("power-pool")
    draft.warn("no class hit die; assumed d8")
    draft.warn_for("die", "no class hit die; assumed d8")
    draft.warn_for("die", "classes at level 5 with different hit dice (A d6, B d10); "
                          "the pool rolls the largest, d10")
    draft.withdraw("die")
    assert draft.warnings == ["no class hit die; assumed d8"]
