"""``Adapter.trimmed``: an encounter keeps only what an adapter reads of a sheet
(docs/ADAPTERS.md "What an encounter keeps"), and importing or writing back from that
gives exactly what the whole sheet gives, to the same place (``Adapter.written_to``).

The loops play real exchanges on the public fixtures (tests/fixtures/README.md), the
hand-made Roll20 character and mapped sheets in the three systems, with the write-backs
applied as Foundry and the Roll20 Mod script do, and compare at every step the import
(combatant and warnings) and the write-back made from the whole data and from the
trimmed data. The junk tests fill every place a player or another module can write
with what the adapters never read, and check that none of it is kept."""

from __future__ import annotations

import copy
import json
import random
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import adapters
from adapters.core import FIELDS, project
from engine.errors import InvalidInput

from .support import apply_foundry, apply_roll20, ars_class, attribs_of, load
from .test_foundry import FIGHTER_HD, MAPPING, PSIONICIST_HD, ars_character
from .test_write_back_round_trip import (
    STATE,
    SYSTEMS,
    Sheet,
    foundry_sheets,
    play,
    roll20_sheets,
)

JUNK: list[Any] = [{}] * 2000  # what a player may put in a flag: [{},{},...]
ARS = adapters.get("foundry.ars")


def generic_sheets(system: str, state: dict[str, Any]) -> list[Sheet]:
    """The mapped sheets: a Foundry actor through ``MAPPING``, a Roll20 character
    through a mapping of its own, both with the psionic state."""
    actor = load("foundry/dnd5e/aboleth.json")
    actor["flags"] = {"mindscape": {system: copy.deepcopy(state)}}
    roll20 = load("roll20/adnd2e-revised-ulcen.handmade.json")
    mapping = {"fields": {"int": "Intelligence", "wis": "Wisdom", "hp": "HP",
                          "level": "level-class1", "hit_dice": "level-class1",
                          "die": {"path": "psi_die", "default": 8}, "psp": "PSP",
                          "psp_max": "PSP|max"},
               "npc_attribute": "npc"}
    plain = next(s for s in roll20_sheets(system, state))
    rows = [r for r in attribs_of(plain.data) if r["name"].startswith("psi_")]
    roll20["attribs"].extend(rows)
    return [Sheet("foundry.generic", {"mapping": MAPPING, "actor": actor}, apply_foundry),
            Sheet("roll20.generic", {"mapping": mapping, "character": roll20},
                  apply_roll20)]


def every_sheet(system: str) -> list[Sheet]:
    out = []
    for state in STATE[system]:
        out += [*foundry_sheets(system, state), *roll20_sheets(system, state),
                *generic_sheets(system, state)]
    return out


def same_either_way(sheet: Sheet, system: str, before: Any = None,
                    after: Any = None) -> list[dict[str, Any]]:
    """The import and (given a before and after) the write-back of ``sheet``, checked to
    be the same from its trimmed data; the write-back."""
    return same_from(sheet, sheet.adapter.trimmed(sheet.data, system), system, before, after)


def same_from(sheet: Sheet, cut: Any, system: str, before: Any = None,
              after: Any = None) -> list[dict[str, Any]]:
    """The import and (given a before and after) the write-back of ``sheet``, checked to
    be the same from ``cut``, a part of its data; the write-back."""
    adapter = sheet.adapter
    whole, again = adapter.import_(sheet.data, system), adapter.import_(cut, system)
    assert (again.combatant, again.warnings) == (whole.combatant, whole.warnings)
    assert adapter.written_to(cut, system) == adapter.written_to(sheet.data, system)
    if before is None:
        return []
    normalise = SYSTEMS[system].combatant
    updates = adapter.updates(sheet.data, system, before, after, normalise=normalise)
    assert adapter.updates(cut, system, before, after, normalise=normalise) == updates
    return updates


@pytest.mark.parametrize("system", sorted(STATE))
@pytest.mark.parametrize("seed", range(4))
def test_the_trimmed_sheet_imports_and_writes_back_as_the_whole_one(
        system: str, seed: int) -> None:
    rng = random.Random(f"trimmed-{system}-{seed}")
    sheets = every_sheet(system)
    for i, sheet in enumerate(sheets):  # different combatants
        holder = sheet.data.get("actor") or sheet.data.get("character") or sheet.data
        key = "_id" if "_id" in holder else "id"
        holder[key] = f"{holder[key][:12]}{i:04d}"
        same_either_way(sheet, system)
    played = 0
    for pair in play(system, sheets, rng, 24):
        played += 1
        for sheet, side in pair:
            updates = same_either_way(sheet, system, side["before"], side["after"])
            written_to = sheet.adapter.written_to(sheet.data, system)
            sheet.data = sheet.apply(sheet.data, updates)
            same_either_way(sheet, system)
            # a sheet as its write-backs left it is still the one they go to
            assert sheet.adapter.written_to(sheet.data, system) == written_to
    assert played >= 4, "the exchanges were refused: the loop checked too little"


def test_of_a_real_dnd5e_actor_only_what_is_read_is_kept() -> None:
    """zanna-gnome-wizard.json (162 KB: 36 items, skills, spells ...) keeps its id,
    name, type, the sheet's values read, its one class item's level and hit die, and its
    psionic state."""
    actor = load("foundry/dnd5e/zanna-gnome-wizard.json")
    actor["flags"]["mindscape"] = {"revised-2e": {"psp": 30, "kind": "psionicist"}}
    data = {"actor": actor, "token": {"uuid": "Scene.s1.Token.t1", "actorLink": False,
                                      "name": "Zanna on the map"}}
    cut = adapters.get("foundry.dnd5e").trimmed(data, "revised-2e")
    system = actor["system"]
    assert cut == {
        "actor": {
            "_id": actor["_id"], "name": actor["name"], "type": "character",
            "_stats": {"systemId": "dnd5e"},
            "system": {
                "abilities": {k: {"value": system["abilities"][k]["value"]}
                              for k in ("int", "wis", "con")},
                "attributes": {"hp": {k: system["attributes"]["hp"][k]
                                      for k in ("value", "max", "temp")
                                      if k in system["attributes"]["hp"]}},
                "details": {k: system["details"][k] for k in ("level", "originalClass")
                            if k in system["details"]}},
            "items": [{"_id": item["_id"], "name": item["name"], "type": "class",
                       "system": {k: item["system"][k]
                                  for k in ("levels", "hitDice", "hd", "identifier")
                                  if k in item["system"]}}
                      for item in actor["items"] if item["type"] == "class"],
            "flags": {"mindscape": {"revised-2e": {"psp": 30, "kind": "psionicist"}}}},
        "token": {"uuid": "Scene.s1.Token.t1", "actorLink": False,
                  "name": "Zanna on the map"}}
    # the token's name names the combatant: kept, the trimmed sheet imports the same
    assert adapters.get("foundry.dnd5e").import_(cut, "revised-2e").combatant["name"] == \
        "Zanna on the map"
    assert len(cut["actor"]["items"]) == 1 and len(actor["items"]) == 36
    assert len(json.dumps(cut)) * 50 < len(json.dumps(data))


def test_of_an_ars_characters_class_items_the_level_count_and_hit_dice_are_kept() -> None:
    """foundry.ars reads a character's level from the number of its class items'
    advancement entries and its hit die from their ranks' hdformula (actor.js
    getClassLevel, actor-sheet.js _configureHealth): each advancement entry is kept
    emptied, each rank with its hdformula only (a rank holds some thirty other values:
    saves, THAC0, spell slots), a class sheet's object form as it is. The kept actor
    imports as the whole one, in the three systems, also when every rank and entry is
    filled with junk."""
    psionicist = ars_class("Psionicist", 5, PSIONICIST_HD)
    fighter = ars_class("Fighter", 10, FIGHTER_HD)
    fighter["system"]["ranks"] = {str(n): r for n, r in enumerate(fighter["system"]["ranks"])}
    actor = ars_character(psionicist, fighter)
    actor["items"][0]["system"]["description"] = "z" * 10_000  # an armor: not kept
    cut = ARS.trimmed(actor, "revised-2e")
    assert cut["items"] == [
        {"_id": psionicist["_id"], "name": "Psionicist", "type": "class",
         "system": {"advancement": [{}] * 5,
                    "ranks": [{"hdformula": f} for f in PSIONICIST_HD]}},
        {"_id": fighter["_id"], "name": "Fighter", "type": "class",
         "system": {"advancement": [{}] * 10,
                    "ranks": {str(n): {"hdformula": f} for n, f in enumerate(FIGHTER_HD)}}}]
    junky = copy.deepcopy(actor)
    for item in junky["items"][1:]:
        ranks = item["system"]["ranks"]
        for rank in ranks.values() if isinstance(ranks, dict) else ranks:
            rank["junk"] = JUNK
        for entry in item["system"]["advancement"]:
            entry["junk"] = JUNK
        item["system"]["itemList"] = JUNK
    assert ARS.trimmed(junky, "revised-2e") == cut
    for system in sorted(STATE):
        whole, again = ARS.import_(junky, system), ARS.import_(cut, system)
        assert (again.combatant, again.warnings) == (whole.combatant, whole.warnings)
    assert ARS.import_(cut, "revised-2e").combatant["level"] == 5
    assert ARS.import_(cut, "power-pool").combatant["hit_dice"] == 10
    assert len(json.dumps(cut)) < 3000 < len(json.dumps(actor)) // 5


def test_junk_anywhere_a_foundry_adapter_does_not_read_is_not_kept() -> None:
    """Other modules' flags, another system's state, unknown keys in the state, items
    that are not classes, long texts on the sheet, extra envelope and token keys."""
    for adapter_id, actor in (("foundry.dnd5e", load("foundry/dnd5e/randal-human-fighter.json")),
                              ("foundry.dnd5e", load("foundry/dnd5e/aboleth.json")),
                              ("foundry.generic", load("foundry/dnd5e/aboleth.json"))):
        adapter = adapters.get(adapter_id)
        actor["flags"] = {"mindscape": {"power-pool": {"psionic": True}}}
        clean = {"actor": actor, "token": {"uuid": "Scene.s1.Token.t1", "actorLink": False},
                 **({"mapping": MAPPING} if adapter_id == "foundry.generic" else {})}
        junky = copy.deepcopy(clean)
        a = junky["actor"]
        a["flags"]["junk"] = JUNK
        a["flags"]["mindscape"]["revised-2e"] = {"psp": JUNK}
        a["flags"]["mindscape"]["power-pool"]["junk"] = JUNK
        a["items"].append({"_id": "junkItem00000001", "type": "spell", "name": "x",
                           "system": {"description": {"value": "x" * 100_000}}})
        a["system"]["details"]["biography"] = {"value": "y" * 100_000}
        a["system"]["junk"] = JUNK
        a["prototypeToken"] = {"junk": JUNK}
        junky["token"]["junk"] = JUNK
        junky["junk"] = JUNK
        assert adapter.trimmed(junky, "power-pool") == adapter.trimmed(clean, "power-pool")
        assert adapter.import_(junky, "power-pool") == adapter.import_(clean, "power-pool")
        assert len(json.dumps(adapter.trimmed(junky, "power-pool"))) < 2500


def test_an_actor_whose_mapping_reads_nothing_of_its_system_data_keeps_it_empty() -> None:
    """An actor must have its system data to be read, also when its mapping takes every
    field from the psionic state store: the trimmed actor keeps ``system`` as an empty
    object. Without it the trimmed actor could not be imported, and an encounter kept
    the whole actor, items and other modules' flags included (API.md: ``encounter.add``
    stores the data "cut down to what the adapter reads of it")."""
    actor = load("foundry/dnd5e/aboleth.json")
    actor["flags"] = {"mindscape": {"power-pool": {"hit_dice": 3, "die": 8, "psionic": True}},
                      "junk": JUNK}
    data = {"mapping": {"version": 1, "fields": {}}, "actor": actor}
    adapter = adapters.get("foundry.generic")
    cut = adapter.trimmed(data, "power-pool")
    assert cut["actor"]["system"] == {}
    assert "items" not in cut["actor"] and set(cut["actor"]["flags"]) == {"mindscape"}
    assert adapter.import_(cut, "power-pool") == adapter.import_(data, "power-pool")
    # system data that is no object is kept as it is, to be refused as the whole is
    actor["system"] = "junk"
    cut = adapter.trimmed(data, "power-pool")
    assert cut["actor"]["system"] == "junk"
    with pytest.raises(InvalidInput) as err:
        adapter.import_(cut, "power-pool")
    assert err.value.problems[0].path == "/actor/system"


@pytest.mark.parametrize(("adapter", "fixture", "member"), [
    ("foundry.dnd5e", "foundry/dnd5e/zanna-gnome-wizard.json", "items"),
    ("roll20.adnd2e-revised", "roll20/adnd2e-revised-ulcen.handmade.json", "attribs"),
])
def test_a_list_that_is_no_array_is_kept_to_be_refused_as_the_whole_sheet_is(
        adapter: str, fixture: str, member: str) -> None:
    """The trimmed sheet imports as the whole one does (docs/ADAPTERS.md "What an
    encounter keeps of a sheet"): an actor's class ``items`` or a Roll20 character's
    ``attribs`` that are no array are kept as they are, so the cut sheet is refused at
    the same place."""
    data = {**load(fixture), member: {"0": "junk"}}
    cut = adapters.get(adapter).trimmed(data, "revised-2e")
    assert cut[member] == {"0": "junk"}
    for sheet in (data, cut):
        with pytest.raises(InvalidInput) as err:
            adapters.get(adapter).import_(sheet, "revised-2e")
        assert err.value.problems[0].path == f"/{member}"


def test_a_token_that_is_no_object_is_kept_to_be_refused_as_the_whole_envelope_is(
        ) -> None:
    """Of the envelope ``trimmed`` keeps the token's uuid, actorLink and name (docs/
    ADAPTERS.md "What an encounter keeps of a sheet"); a token that is no object is
    kept as it is, so the cut envelope is refused at ``/token`` as the whole one is."""
    data = {"actor": load("foundry/dnd5e/aboleth.json"), "token": "Scene.sc1.Token.tk1"}
    adapter = adapters.get("foundry.dnd5e")
    cut = adapter.trimmed(data, "power-pool")
    assert cut["token"] == "Scene.sc1.Token.tk1"
    for envelope in (data, cut):
        with pytest.raises(InvalidInput) as err:
            adapter.import_(envelope, "power-pool")
        assert err.value.problems[0].path == "/token"


def test_junk_anywhere_a_roll20_adapter_does_not_read_is_not_kept() -> None:
    """Attributes the sheet never reads, a second attribute of a name read (``unwrap``
    reads the first), attributes' ids and extra keys, the character's other keys."""
    adapter = adapters.get("roll20.adnd2e-revised")
    clean = load("roll20/adnd2e-revised-ulcen.handmade.json")
    junky = copy.deepcopy(clean)
    junky["attribs"] += [{"name": f"junk{i}", "current": "x" * 1000, "max": ""}
                         for i in range(200)]
    junky["attribs"].append({"name": "psp", "current": "99", "max": "99"})
    junky["attribs"][0]["junk"] = JUNK
    junky["bio"] = "z" * 100_000
    cut = adapter.trimmed(junky, "revised-2e")
    assert cut == adapter.trimmed(clean, "revised-2e")
    assert adapter.import_(junky, "revised-2e") == adapter.import_(clean, "revised-2e")
    assert set(cut) == {"id", "name", "attribs"}
    # every attribute the sheet reads, first of its name, with name, current and max
    assert [row["name"] for row in cut["attribs"]] == [
        row["name"] for row in clean["attribs"]
        if row["name"] not in ("PSP-cost", "PSP-cost2")
        and not row["name"].endswith(("_PSP-cost", "_PSP-cost2"))]
    assert all(set(row) == {"name", "current", "max"} for row in cut["attribs"])


def test_a_vttes_export_keeps_its_envelope() -> None:
    """schema_version 3 wraps the character: the envelope's keys ``unwrap`` reads stay."""
    inner = load("roll20/adnd2e-revised-ulcen.handmade.json")
    data = {"schema_version": 3, "type": "character", "character": inner,
            "junk": JUNK}
    adapter = adapters.get("roll20.adnd2e-revised")
    cut = adapter.trimmed(data, "power-pool")
    assert set(cut) == {"schema_version", "type", "character"}
    assert adapter.import_(cut, "power-pool") == adapter.import_(data, "power-pool")


def test_a_vttes_exports_character_keeps_only_what_unwrap_reads() -> None:
    """The export's character is the character (``unwrap`` unwraps once): members of its
    own beyond its id, name and format keys are not kept, not even one that looks like
    another wrapping."""
    inner = {**load("roll20/adnd2e-revised-ulcen.handmade.json"), "type": "character",
             "character": {"attribs": JUNK}}
    inner["oldId"] = inner.pop("id")  # an export's id
    data = {"schema_version": 3, "type": "character", "character": inner}
    adapter = adapters.get("roll20.adnd2e-revised")
    cut = adapter.trimmed(data, "revised-2e")
    assert set(cut["character"]) == {"oldId", "name", "type", "attribs"}
    assert adapter.import_(cut, "revised-2e") == adapter.import_(data, "revised-2e")


def test_a_character_without_its_mapping_is_trimmed_to_be_refused_as_the_whole_one(
        ) -> None:
    """``roll20.generic`` reads nothing of a bare character but its ``psi_*``
    attributes: the cut character is refused for its missing mapping, at ``/mapping``,
    as the whole one is."""
    data = load("roll20/adnd2e-revised-ulcen.handmade.json")
    adapter = adapters.get("roll20.generic")
    cut = adapter.trimmed(data, "revised-2e")
    assert (cut["id"], cut["attribs"]) == (data["id"], [])
    for character in (data, cut):
        with pytest.raises(InvalidInput) as err:
            adapter.import_(character, "revised-2e")
        assert err.value.problems[0].path == "/mapping"


def test_the_attributes_a_mapping_reads_for_a_maximum_and_a_monster_are_kept() -> None:
    """A mapped maximum (``Power|max``) is read from the attribute ``Power``, and
    ``npc_attribute`` names the attribute whose value marks a monster (docs/ADAPTERS.md,
    mapping files): the cut character keeps both, and is the monster the whole one is."""
    data = {"mapping": {"fields": {"int": "INT", "psp_max": "Power|max"},
                        "npc_attribute": "Sheet_Type", "npc_types": ["monster"]},
            "character": {"id": "-Mc1", "name": "Ogre", "attribs": [
                {"name": "INT", "current": "6", "max": ""},
                {"name": "power", "current": "3", "max": "12"},
                {"name": "sheet_type", "current": "Monster", "max": ""},
                {"name": "bio", "current": "x" * 1000, "max": ""}]}}
    adapter = adapters.get("roll20.generic")
    cut = adapter.trimmed(data, "revised-2e")
    assert [row["name"] for row in cut["character"]["attribs"]] == \
        ["INT", "power", "sheet_type"]
    got = adapter.import_(cut, "revised-2e")
    assert got.combatant["class_group"] == "monster"
    assert got == adapter.import_(data, "revised-2e")


def test_data_an_adapter_cannot_read_is_kept_whole() -> None:
    """Nothing is guessed for data import refuses (not an object, an unusable
    mapping, a system the adapters do not build for)."""
    zanna = load("foundry/dnd5e/zanna-gnome-wizard.json")
    bad_mapping = {"mapping": {"fields": {"psp": {"path": "a..b"}}}, "actor": zanna}
    cases = [(adapters.get("foundry.dnd5e"), [1, 2], "revised-2e"),
             (adapters.get("foundry.dnd5e"), zanna, "a-plugin-system"),
             (adapters.get("foundry.generic"), bad_mapping, "revised-2e"),
             (adapters.get("roll20.generic"), {"mapping": 1, "character": {}}, "power-pool"),
             (adapters.get("roll20.adnd2e-revised"),
              load("roll20/adnd2e-revised-ulcen.handmade.json"), "a-plugin-system")]
    for adapter, data, system in cases:
        assert adapter.trimmed(data, system) is data
    with pytest.raises(InvalidInput):
        adapters.get("foundry.generic").import_(bad_mapping, "revised-2e")


def test_project_keeps_what_dig_reads_at_each_path() -> None:
    root = {"a": {"b": {"c": 1, "d": 2}, "e": None, "f": [1, 2], "g": 3},
            "h": {"i": {}}}
    before = copy.deepcopy(root)
    assert project(root, ["a.b.c", "a.e.x", "a.f.0", "a.g.x", "a.missing.x", "h.i.j",
                          "zz"]) == {
        "a": {"b": {"c": 1}, "e": None, "f": [1, 2], "g": 3}, "h": {"i": {}}}
    # a path kept whole and a longer one inside it, either way round
    assert project(root, ["a.b", "a.b.c"]) == {"a": {"b": {"c": 1, "d": 2}}}
    assert project(root, ["a.b.c", "a.b"]) == {"a": {"b": {"c": 1, "d": 2}}}
    assert root == before


def test_every_combatant_field_of_the_psionic_state_is_kept() -> None:
    """``flags.mindscape.<system>`` keeps each field the adapters read there."""
    actor = load("foundry/dnd5e/aboleth.json")
    for system, fields in FIELDS.items():
        actor["flags"] = {"mindscape": {system: {name: None for name in fields}}}
        cut = adapters.get("foundry.dnd5e").trimmed(actor, system)
        assert cut["flags"]["mindscape"][system] == {name: None for name in fields}


# The Foundry module sends an actor cut down to what the adapters may read
# (vtt-module/foundry/mindscape/scripts/requests.js `sentActor`): a round's end of a dozen
# spell-heavy characters would otherwise pass the companion's 1 MiB a request. Run here
# through node on the same sheets, so that the module and the adapters cannot drift.
SENT_ACTOR = (Path(__file__).resolve().parents[2] / "vtt-module" / "foundry" / "mindscape"
              / "scripts" / "requests.js")
SEND_SCRIPT = """
import { sentActor } from %s;
let text = "";
process.stdin.setEncoding("utf8").on("data", (part) => { text += part; }).on("end", () => {
  const sheets = JSON.parse(text);
  const sent = sheets.map(([adapter, data]) =>
    ({ ...data, actor: sentActor(data.actor, adapter, data.mapping ?? null) }));
  process.stdout.write(JSON.stringify(sent));
});
"""


def sent_by_foundry(sheets: list[Sheet]) -> list[dict[str, Any]]:
    """Each Foundry sheet's data as the module sends it."""
    node = shutil.which("node")
    assert node, "node (installed with the VTT module's tests) runs the module's own code"
    script = SEND_SCRIPT % json.dumps(SENT_ACTOR.as_uri())
    run = subprocess.run([node, "--input-type=module", "-e", script], check=True,
                         input=json.dumps([[s.adapter_id, s.data] for s in sheets]),
                         capture_output=True, text=True, timeout=60)
    sent: list[dict[str, Any]] = json.loads(run.stdout)
    return sent


def same_as_sent(sheets: list[Sheet], system: str,
                 sides: list[tuple[Any, Any]] | None = None) -> None:
    """The import (and with ``sides``, each sheet's write-back) from what the module sends
    is the import (and write-back) from the whole actor."""
    for i, (sheet, sent) in enumerate(zip(sheets, sent_by_foundry(sheets), strict=True)):
        same_from(sheet, sent, system, *(sides[i] if sides is not None else ()))


def with_junk(sheet: Sheet) -> Sheet:
    """``sheet`` with what another module or a player may add to an actor: flags of its
    own, effects, items of every other type."""
    data = copy.deepcopy(sheet.data)
    actor = data["actor"]
    actor.setdefault("flags", {})["other-module"] = {"notes": JUNK}
    actor["effects"] = [{"_id": "e1", "name": "Bless", "changes": JUNK}]
    actor.setdefault("items", []).append({"_id": "i1", "name": "Scroll", "type": "loot",
                                          "system": {"description": {"value": "x" * 5000}}})
    return Sheet(sheet.adapter_id, data, sheet.apply)


@pytest.mark.parametrize("system", sorted(STATE))
def test_what_the_foundry_module_sends_imports_and_writes_back_as_the_whole_actor(
        system: str) -> None:
    rng = random.Random(f"sent-{system}")
    sheets = [s for s in every_sheet(system) if s.adapter_id.startswith("foundry.")]
    for i, sheet in enumerate(sheets):
        if "actor" not in sheet.data:  # as the module sends every actor
            sheet.data = {"actor": sheet.data, "token": None}
        # different combatants
        sheet.data["actor"]["_id"] = f"{sheet.data['actor']['_id'][:12]}{i:04d}"
    sheets = [with_junk(s) if i % 2 else s for i, s in enumerate(sheets)]
    same_as_sent(sheets, system)
    played = 0
    for pair in play(system, sheets, rng, 12):
        played += 1
        same_as_sent([sheet for sheet, _side in pair], system,
                     [(side["before"], side["after"]) for _sheet, side in pair])
        for sheet, side in pair:
            updates = sheet.adapter.updates(sheet.data, system, side["before"],
                                            side["after"],
                                            normalise=SYSTEMS[system].combatant)
            sheet.data = sheet.apply(sheet.data, updates)
    assert played >= 4, "the exchanges were refused: the loop checked too little"
    same_as_sent(sheets, system)


def test_the_foundry_module_sends_a_real_character_in_a_few_kilobytes() -> None:
    """zanna-gnome-wizard.json (162 KB as exported): what the module sends keeps its
    system data and its one class item's level and hit die, not its 35 other items."""
    actor = load("foundry/dnd5e/zanna-gnome-wizard.json")
    actor["flags"]["mindscape"] = {"revised-2e": {"psp": 30, "kind": "psionicist"}}
    sheet = Sheet("foundry.dnd5e", {"actor": actor, "token": None}, apply_foundry)
    [sent] = sent_by_foundry([sheet])
    assert [item["type"] for item in sent["actor"]["items"]] == ["class"]
    assert sent["actor"]["system"] == actor["system"]
    assert set(sent["actor"]["flags"]) == {"mindscape"}
    assert len(json.dumps(sent)) * 8 < len(json.dumps(sheet.data))
    # a round's end of the 64 combatants an encounter may hold stays within 1 MiB
    assert 64 * len(json.dumps(sent)) < 1024 * 1024
