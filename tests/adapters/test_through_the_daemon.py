"""Adapters as the daemon uses them: ``adapters.import`` refuses what the engine refuses,
at the place in the data the adapter read; write-backs of exchanges and encounters,
applied as Foundry applies them, import again."""

from __future__ import annotations

import copy
import json
from typing import Any

import adapters
from companion.combatants import ImportedRef, refused_where_read
from engine import builtin_systems
from engine.errors import InvalidInput, Problem
from tests.companion.conftest import Rpc

from .support import apply_foundry, apply_roll20, attr, load

POWER_POOL = builtin_systems()["power-pool"]


def roll20_psionicist(psp: Any, psp_max: Any) -> dict[str, Any]:
    return {"id": "-Mx1", "name": "Xan", "attribs": [
        {"name": "PSP", "current": psp, "max": psp_max},
        {"name": "psi_kind", "current": "psionicist"},
        {"name": "level-class1", "current": "3"},
        {"name": "Intelligence", "current": "15"}, {"name": "Wisdom", "current": "15"}]}


async def test_adapters_import_refuses_more_psps_than_the_maximum_at_the_attribute(
        rpc: Rpc) -> None:
    """COMBATANTS.md: psp may not exceed psp_max. The Foundry module validates a profile
    with adapters.import before saving it, so the engine's refusal must show here, at
    the attribute it was read from (PSP current), with the engine's own message."""
    error = await rpc.error("adapters.import", {"adapter": "roll20.adnd2e-revised",
                                                "data": roll20_psionicist(50, 40)})
    assert error["code"] == -32602
    assert error["data"]["errors"] == [{"path": "/data/attribs/0/current",
                                        "message": "current PSPs 50 exceed the maximum 40"}]


async def test_adapters_import_points_into_foundry_flags_and_keeps_unbound_paths(
        rpc: Rpc) -> None:
    """RULES.md (H-2E-MODE-LIMITS): a level-1 psionicist knows at most one attack mode;
    the modes were read from flags.mindscape.revised-2e.attacks. A level the adapter
    did not read from one place keeps the combatant's path."""
    zanna = load("foundry/dnd5e/zanna-gnome-wizard.json")
    zanna["flags"]["mindscape"] = {"revised-2e": {
        "kind": "psionicist", "psp_max": 20,
        "attacks": ["mind-thrust", "ego-whip", "id-insinuation"]}}
    error = await rpc.error("adapters.import", {"adapter": "foundry.dnd5e",
                                                "system": "revised-2e",
                                                "data": {"actor": zanna, "token": None}})
    paths = [p["path"] for p in error["data"]["errors"]]
    assert paths == ["/data/actor/flags/mindscape/revised-2e/attacks"]
    assert "at most 1 attack mode" in error["data"]["errors"][0]["message"]
    relaxed = await rpc.ok("adapters.import", {
        "adapter": "foundry.dnd5e", "system": "revised-2e",
        "options": {"H-2E-MODE-LIMITS": False}, "data": {"actor": zanna, "token": None}})
    assert len(relaxed["combatant"]["attacks"]) == 3  # under the world's house rules
    error = await rpc.error("adapters.import", {
        "adapter": "foundry.dnd5e", "system": "revised-2e", "options": {"H-NOPE": 1},
        "data": {"actor": zanna, "token": None}})
    assert [p["path"] for p in error["data"]["errors"]] == ["/options/H-NOPE"]
    mapping = {"version": 1, "fields": {"int": "system.abilities.int.value",
                                        "wis": "system.abilities.wis.value"}}
    zanna["flags"]["mindscape"] = {"revised-2e": {"kind": "psionicist", "psp_max": 20}}
    error = await rpc.error("adapters.import", {
        "adapter": "foundry.generic", "system": "revised-2e",
        "data": {"mapping": mapping, "actor": zanna}})
    assert [p["path"] for p in error["data"]["errors"]] == ["/combatant/level"]
    zanna["flags"]["mindscape"]["revised-2e"]["level"] = 1
    ok = await rpc.ok("adapters.import", {"adapter": "foundry.generic",
                                          "system": "revised-2e",
                                          "data": {"mapping": mapping, "actor": zanna}})
    assert ok["combatant"] == {"id": "4Jsv5vYaJ1atUEDV", "name": "Zanna (Gnome Wizard)",
                               "int": 17, "wis": 13, "kind": "psionicist", "psp_max": 20,
                               "level": 1}


async def test_a_mapping_source_that_is_wrong_is_refused_at_its_member_by_the_daemon(
        rpc: Rpc) -> None:
    """docs/ADAPTERS.md: the mapping's errors name /mapping/...: through the daemon a
    source with an unknown parse is named at its parse with the ones there are, an
    attribute path a Roll20 name cannot be at the source (not as the source being "not
    valid under any of the given schemas")."""
    zanna = load("foundry/dnd5e/zanna-gnome-wizard.json")
    for source, path, message in [
            ({"path": "system.psp", "parse": "bogus"}, "/data/mapping/fields/psp/parse",
             '"bogus" is not one of ["value", "dice-count", "hit-die", "intelligence"]'),
            ("PSP|MAX", "/data/mapping/fields/psp", '"PSP|MAX" does not match ')]:
        error = await rpc.error("adapters.import", {
            "adapter": "foundry.generic", "system": "revised-2e",
            "data": {"mapping": {"fields": {"psp": source}}, "actor": zanna}})
        assert error["code"] == -32602
        [problem] = error["data"]["errors"]
        assert (problem["path"], problem["message"][:len(message)]) == (path, message)


async def test_exchange_write_back_keeps_a_maximum_the_engine_defaulted(rpc: Rpc) -> None:
    """COMBATANTS.md: attack_strength_max defaults to the current strength. The sheet has
    60 with an empty max: after the attack costs strength, the write-back must also set
    the max, or the next import would take the lowered strength as the maximum."""
    ulcen = load("roll20/adnd2e-revised-ulcen.handmade.json")
    ulcen["attribs"] += [{"name": "psi_attack_strength", "current": "60", "max": ""},
                         {"name": "psi_defense_strength", "current": "40", "max": "40"}]
    result = await rpc.ok("exchange.resolve", {
        "system": "combat-strength",
        "attacker": {"adapter": "roll20.adnd2e-revised", "data": ulcen},
        "defender": {"id": "d", "name": "D", "psionic": True, "attack_strength": 20,
                     "defense_strength": 10},
        "attack": {"mode": "ego-whip"}, "defense": {"mode": "mind-blank"}, "seed": 3})
    spent = result["attacker"]["after"]["attack_strength"]
    assert spent < 60
    assert result["updates"] == [{"character_id": "-MzUlcen0000000001", "attributes": {
        "psi_attack_strength": {"current": spent, "max": 60}}}]
    again = await rpc.ok("adapters.import", {
        "adapter": "roll20.adnd2e-revised", "system": "combat-strength",
        "data": apply_roll20(ulcen, result["updates"])})
    assert again["combatant"]["attack_strength_max"] == 60


async def test_exchange_write_back_derives_as_the_exchange_s_house_rules_do(
        rpc: Rpc) -> None:
    """RULES.md H-2E-WT-MTHAC0 (false: a wild talent's MTHAC0 is 21 − level). The round
    trip normalises with the exchange's options, so the derived MTHAC0 is not pinned in
    the flags (a later level-up on the sheet must still count)."""
    zanna = load("foundry/dnd5e/zanna-gnome-wizard.json")
    zanna["flags"]["mindscape"] = {"revised-2e": {
        "kind": "wild-talent", "level": 4, "psp_max": 40, "attacks": ["mind-thrust"]}}
    result = await rpc.ok("exchange.resolve", {
        "system": "revised-2e", "options": {"H-2E-WT-MTHAC0": False},
        "attacker": {"adapter": "foundry.dnd5e", "data": zanna},
        "defender": {"id": "d", "name": "D", "kind": "nonpsionic"},
        "attack": {"mode": "mind-thrust"}, "seed": 1})
    assert result["attacker"]["after"]["mthac0"] == 17
    update = result["updates"][0]["update"]
    assert "flags.mindscape.revised-2e.mthac0" not in update
    assert update["flags.mindscape.revised-2e.psp"] == result["attacker"]["after"]["psp"]


async def test_a_power_pool_encounter_s_write_backs_import_again_after_every_step(
        rpc: Rpc) -> None:
    """RULES.md §3: conditions come and go with their rounds (condition_rounds). Foundry
    merges an object written over a stored one, so a condition that ended must be
    deleted ("-=key") or the next import has a timer with no condition ("dazed is not
    among the conditions"). The encounter keeps the data as added, so keys stored by
    earlier write-backs are deleted too."""
    state = {"psionic": True, "attacks": ["mental-stab", "synaptic-overload"],
             "defenses": ["pinnacle-of-will", "blank-mind"]}
    actors = {}
    for fixture in ("zanna-gnome-wizard", "randal-human-fighter"):
        actor = load(f"foundry/dnd5e/{fixture}.json")
        actor["flags"]["mindscape"] = {"power-pool": copy.deepcopy(state)}
        actors[actor["_id"]] = actor
    eid = (await rpc.ok("encounter.create", {"system": "power-pool"}))["id"]
    for actor in actors.values():
        await rpc.ok("encounter.add", {"id": eid, "combatant": {"adapter": "foundry.dnd5e",
                                                                "data": actor}})
    deletions = 0
    for step in range(40):
        view = await rpc.ok("encounter.get", {"id": eid})
        for cid in view.get("waiting_for", []):
            other = next(x for x in actors if x != cid)
            answer = await rpc.call("encounter.declare", {
                "id": eid, "combatant_id": cid,
                "choice": {"attack": {"mode": "mental-stab", "target": other}}})
            if "error" in answer:  # attacked already: it defends (or may not act)
                await rpc.call("encounter.declare", {
                    "id": eid, "combatant_id": cid,
                    "choice": {"defense": {"mode": "pinnacle-of-will"}}})
        resolved = await rpc.call("encounter.resolve", {"id": eid, "seed": step})
        if "error" in resolved:
            break
        for update in resolved["result"]["updates"]:
            actor_id = update["uuid"].rsplit(".", 1)[1]
            deletions += sum("-=" in key for key in update["update"])
            actors[actor_id] = apply_foundry(actors[actor_id], [update])
        for actor in actors.values():
            again = await rpc.ok("adapters.import", {"adapter": "foundry.dnd5e",
                                                     "system": "power-pool", "data": actor})
            POWER_POOL.combatant(again["combatant"])  # what encounter.add would refuse
    assert deletions, "no condition ended: the scenario checked nothing"


async def test_roll20_psps_with_no_maximum_fight_and_keep_their_maximum(rpc: Rpc) -> None:
    """A PSP box with no maximum: the current PSPs are taken as the maximum (warning),
    the mind is a psionicist's, and the maximum is written back with the spent PSPs."""
    sheet = roll20_psionicist("30", "")
    sheet["attribs"] = [a for a in sheet["attribs"] if a["name"] != "psi_kind"]
    sheet["attribs"].append({"name": "psionic-attack-name", "current": "Mind Thrust"})
    imported = await rpc.ok("adapters.import", {"adapter": "roll20.adnd2e-revised",
                                                "data": sheet})
    assert (imported["combatant"]["psp_max"], imported["combatant"]["kind"]) == \
        (30, "psionicist")
    assert any("no PSP maximum" in w for w in imported["warnings"])
    result = await rpc.ok("exchange.resolve", {
        "system": "revised-2e",
        "attacker": {"adapter": "roll20.adnd2e-revised", "data": sheet},
        "defender": {"id": "d", "name": "D", "kind": "nonpsionic"},
        "attack": {"mode": "mind-thrust", "multiplier": 1},
        "dice": {"attack": [10], "damage": [1, 1]}})
    left = result["attacker"]["after"]["psp"]
    assert left < 30
    assert result["updates"][0]["attributes"]["PSP"] == {"current": left, "max": 30}
    assert attr(apply_roll20(sheet, result["updates"]), "PSP")["max"] == 30


async def test_round_end_choices_read_the_mind_from_the_sheet_and_write_nothing(
        rpc: Rpc) -> None:
    """The Foundry module asks exchange.round_end_choices with the actor as it is: the
    open mind and its last defense come from the flags (RULES.md §1.5: 2 × mental
    barrier's 5 PSPs), and nothing is written back."""
    actor = load("foundry/dnd5e/zanna-gnome-wizard.json")
    actor["flags"]["mindscape"] = {"revised-2e": {
        "kind": "psionicist", "psp": 12, "psp_max": 30, "defenses": ["mental-barrier"],
        "attacks": ["mind-thrust"],
        "mind": {"state": "open", "opened_by": "critical", "rounds_open": 1,
                 "may_pay_to_close": True, "last_defense": "mental-barrier"}}}
    offers = await rpc.ok("exchange.round_end_choices", {
        "system": "revised-2e", "combatants": [{"adapter": "foundry.dnd5e", "data": actor}]})
    [zanna] = offers["combatants"]
    assert zanna["choices"]["close"] == {"cost": 10, "defense": "mental-barrier",
                                         "basis": "last", "psp": 12, "payable": True,
                                         "reason": None}
    assert zanna["name"] == actor["name"] and "updates" not in offers
    # the adapter's warnings about the sheet, as adapters.import gives them
    imported = await rpc.ok("adapters.import", {"adapter": "foundry.dnd5e", "data": actor,
                                                "system": "revised-2e"})
    assert offers["warnings"] == imported["warnings"]


async def test_end_round_write_backs_clear_ended_conditions_on_both_vtts(rpc: Rpc) -> None:
    """exchange.end_round on sheets: a power-pool daze that ran out is deleted from the
    Foundry flags ("-=dazed", as Foundry merges objects) and a revised-2e stun from the
    Roll20 attributes; both sheets import again without the condition."""
    actor = load("foundry/dnd5e/zanna-gnome-wizard.json")
    actor["flags"]["mindscape"] = {"power-pool": {
        "psionic": True, "attacks": ["mental-stab"], "conditions": ["dazed", "stunned"],
        "condition_rounds": {"dazed": 1, "stunned": 2}}}
    foundry = {"adapter": "foundry.dnd5e", "data": actor}
    ended = await rpc.ok("exchange.end_round", {"system": "power-pool",
                                                "combatants": [foundry]})
    [update] = ended["updates"]
    assert "flags.mindscape.power-pool.condition_rounds.-=dazed" in update["update"]
    actor = apply_foundry(actor, ended["updates"])
    again = await rpc.ok("adapters.import", {"adapter": "foundry.dnd5e",
                                             "system": "power-pool", "data": actor})
    assert again["combatant"]["conditions"] == ["stunned"]
    assert again["combatant"]["condition_rounds"] == {"stunned": 1}

    sheet = roll20_psionicist("30", "30")
    sheet["attribs"] += [{"name": "psi_conditions", "current": "stunned"},
                         {"name": "psi_condition_rounds", "current": '{"stunned": 0}'}]
    roll20 = {"adapter": "roll20.adnd2e-revised", "data": sheet}
    ended = await rpc.ok("exchange.end_round", {"system": "revised-2e",
                                                "combatants": [roll20]})
    assert ended["combatants"][0]["before"]["conditions"] == ["stunned"]
    assert ended["combatants"][0]["after"]["conditions"] == []
    sheet = apply_roll20(sheet, ended["updates"])
    again = await rpc.ok("adapters.import", {"adapter": "roll20.adnd2e-revised",
                                             "data": sheet})
    assert again["combatant"].get("conditions", []) == []


async def test_adapters_import_points_inside_an_object_read_from_the_flags(
        rpc: Rpc) -> None:
    """docs/ADAPTERS.md "Errors": a refused value is reported at the place the adapter
    read it; inside an object taken as it stands in the flags, at the key itself
    (COMBATANTS.md: condition_rounds 1-1000 in power-pool; kept_by "die"/"action")."""
    aboleth = load("foundry/dnd5e/aboleth.json")
    flags = "/data/flags/mindscape/power-pool"
    for state, path in (
            ({"conditions": ["dazed", "stunned"],
              "condition_rounds": {"dazed": 2, "stunned": 5000}},
             f"{flags}/condition_rounds/stunned"),
            ({"controlling": [{"id": "a", "kept_by": "die"}, {"id": "b", "kept_by": "sword"}]},
             f"{flags}/controlling/1/kept_by")):
        aboleth["flags"]["mindscape"] = {"power-pool": {"psionic": True, **state}}
        error = await rpc.error("adapters.import", {"adapter": "foundry.dnd5e",
                                                    "system": "power-pool", "data": aboleth})
        assert [p["path"] for p in error["data"]["errors"]] == [path]
    # Roll20 keeps the object as JSON text: the attribute is the place
    sheet = roll20_psionicist("30", "30")
    sheet["attribs"] += [{"name": "psi_conditions", "current": "stunned"},
                         {"name": "psi_condition_rounds", "current": '{"stunned": 5000}'}]
    error = await rpc.error("adapters.import", {"adapter": "roll20.adnd2e-revised",
                                                "system": "power-pool", "data": sheet})
    assert [p["path"] for p in error["data"]["errors"]] == ["/data/attribs/6/current"]


async def test_a_wave_named_like_a_creature_held_on_its_own_is_refused_in_the_sheet_s_terms(
        rpc: Rpc) -> None:
    """COMBATANTS.md: a `wave` label equal to the id of a creature held on its own is
    -32602 at that `wave`. The adapter reports it where it read `controlling` (Roll20:
    the attribute, Foundry: the entry in the flags), and the message points at no place
    of the combatant the adapter built, which is not the data the GM sent: it names the
    clash by the label and says what to change."""
    held = [{"id": "w", "kept_by": "action"}, {"id": "y", "kept_by": "action", "wave": "w"}]
    told = ('wave label "w" is also the id of a creature held on its own in the same '
            "controlling: a wave's name must differ from every such id, or the two links "
            "would be one (rename the wave, and the target of each die dedicated to it)")
    aboleth = load("foundry/dnd5e/aboleth.json")
    aboleth["flags"]["mindscape"] = {"power-pool": {"psionic": True, "controlling": held}}
    error = await rpc.error("adapters.import", {"adapter": "foundry.dnd5e",
                                                "system": "power-pool", "data": aboleth})
    assert error["data"]["errors"] == [
        {"path": "/data/flags/mindscape/power-pool/controlling/1/wave", "message": told}]
    sheet = roll20_psionicist("30", "30")
    sheet["attribs"].append({"name": "psi_controlling", "current": json.dumps(held)})
    error = await rpc.error("adapters.import", {"adapter": "roll20.adnd2e-revised",
                                                "system": "power-pool", "data": sheet})
    assert error["data"]["errors"] == [
        {"path": f"/data/attribs/{len(sheet['attribs']) - 1}/current", "message": told}]


async def test_an_encounter_refuses_a_sheet_where_the_adapter_read_the_field(
        rpc: Rpc) -> None:
    """docs/API.md "Combatants from a VTT": encounter.add and encounter.refresh report a
    sheet the engine refuses as adapters.import does, at the place in `data` the field
    was read, under `/combatant/data` (COMBATANTS.md: a `wave` label equal to the id of
    a creature held on its own is refused at that `wave`; condition_rounds 1-1000). The
    combatant the adapter built is not what the GM sent: `/combatant/controlling/1/wave`
    is nowhere in the params. The id, which an adapter reads from no one place, stays
    at `/combatant/id`."""
    held = [{"id": "w", "kept_by": "action"}, {"id": "y", "kept_by": "action", "wave": "w"}]
    told = ('wave label "w" is also the id of a creature held on its own in the same '
            "controlling: a wave's name must differ from every such id, or the two links "
            "would be one (rename the wave, and the target of each die dedicated to it)")
    aboleth = load("foundry/dnd5e/aboleth.json")
    flags = "/combatant/data/flags/mindscape/power-pool"
    sheet = roll20_psionicist("30", "30")
    at = f"/combatant/data/attribs/{len(sheet['attribs'])}/current"
    too_long = "5000 is greater than the maximum of 1000"
    cases = []
    for state, path, message in (
            ({"controlling": held}, f"{flags}/controlling/1/wave", told),
            ({"conditions": ["stunned"], "condition_rounds": {"stunned": 5000}},
             f"{flags}/condition_rounds/stunned", too_long)):
        bad = copy.deepcopy(aboleth)
        bad["flags"]["mindscape"] = {"power-pool": {"psionic": True, **state}}
        cases.append(("foundry.dnd5e", aboleth, bad, [{"path": path, "message": message}]))
    for attribute, value, message in (("psi_controlling", json.dumps(held), told),
                                      ("psi_condition_rounds", '{"stunned": 5000}',
                                       too_long)):
        bad = copy.deepcopy(sheet)
        bad["attribs"].append({"name": attribute, "current": value})
        if attribute == "psi_condition_rounds":
            bad["attribs"].append({"name": "psi_conditions", "current": "stunned"})
        cases.append(("roll20.adnd2e-revised", sheet, bad,
                      [{"path": at, "message": message}]))
    for adapter, good, bad, refused in cases:
        eid = (await rpc.ok("encounter.create", {"system": "power-pool"}))["id"]
        error = await rpc.error("encounter.add", {
            "id": eid, "combatant": {"adapter": adapter, "data": bad}})
        assert error["code"] == -32602
        assert error["data"]["errors"] == refused
        added = await rpc.ok("encounter.add", {
            "id": eid, "combatant": {"adapter": adapter, "data": good}})
        # An id made by the adapter stays at the combatant's id: the Roll20 Mod script
        # takes "/combatant/id ... already in the encounter" as joined already.
        error = await rpc.error("encounter.add", {
            "id": eid, "combatant": {"adapter": adapter, "data": good}})
        assert error["data"]["errors"] == [{
            "path": "/combatant/id",
            "message": f'{json.dumps(added["combatant_id"])} is already in the encounter'}]
        error = await rpc.error("encounter.refresh", {
            "id": eid, "combatant_id": added["combatant_id"],
            "combatant": {"adapter": adapter, "data": bad}})
        assert error["code"] == -32602
        assert error["data"]["errors"] == refused
        assert (await rpc.ok("encounter.get", {"id": eid}))["revision"] == 1


def test_a_refused_field_read_from_no_one_place_stays_under_the_member_that_gave_it(
        ) -> None:
    """refused_where_read moves a problem to the place in `data` the adapter read the
    field from; a field the adapter derived or defaulted (no source) stays under the
    place the combatant was checked at (`under`), `/combatant` when none was given
    (adapters.import answers with the combatant there); a problem of another member
    keeps its path."""
    ref = ImportedRef("/attacker", "attacker", adapters.get("roll20.adnd2e-revised"),
                      roll20_psionicist("50", "40"), {"id": "-Mx1", "psp": 50, "psp_max": 40},
                      (), {"psp": "/attribs/0/current"})
    refused = InvalidInput([Problem("/attacker/psp", "too many"),
                            Problem("/attacker/mthac0", "derived"),
                            Problem("/defender/psp", "another's")])
    assert [(p.path, p.message) for p in refused_where_read(ref, refused, "/attacker").problems] \
        == [("/attacker/data/attribs/0/current", "too many"), ("/attacker/mthac0", "derived"),
            ("/defender/psp", "another's")]
    alone = InvalidInput([Problem("/psp", "too many"), Problem("/mthac0", "derived")])
    assert [p.path for p in refused_where_read(ref, alone).problems] \
        == ["/attacker/data/attribs/0/current", "/combatant/mthac0"]


async def test_adapters_import_reports_every_refused_value_each_at_its_place(
        rpc: Rpc) -> None:
    """docs/ADAPTERS.md "Errors": a refused value is reported at the place the adapter
    read it; a sheet with two refused values gets both, so the Foundry module shows
    every field to fix at once (COMBATANTS.md: condition_rounds 1-1000; kept_by "die"
    or "action")."""
    aboleth = load("foundry/dnd5e/aboleth.json")
    aboleth["flags"]["mindscape"] = {"power-pool": {
        "psionic": True, "conditions": ["stunned"], "condition_rounds": {"stunned": 5000},
        "controlling": [{"id": "b", "kept_by": "sword"}]}}
    error = await rpc.error("adapters.import", {"adapter": "foundry.dnd5e",
                                                "system": "power-pool", "data": aboleth})
    flags = "/data/flags/mindscape/power-pool"
    assert [p["path"] for p in error["data"]["errors"]] == [
        f"{flags}/condition_rounds/stunned", f"{flags}/controlling/0/kept_by"]


async def test_adapters_import_points_at_the_mapping_default_a_refused_value_came_from(
        rpc: Rpc) -> None:
    """A value taken from a mapping's default is reported there, not at the empty sheet
    path (COMBATANTS.md: psp may not exceed psp_max)."""
    zanna = load("foundry/dnd5e/zanna-gnome-wizard.json")
    zanna["flags"]["mindscape"] = {"revised-2e": {"kind": "psionicist", "psp_max": 40,
                                                  "level": 3}}
    mapping = {"version": 1, "fields": {
        "int": "system.abilities.int.value", "wis": "system.abilities.wis.value",
        "psp": {"path": "system.resources.primary.value", "default": 50}}}
    error = await rpc.error("adapters.import", {
        "adapter": "foundry.generic", "system": "revised-2e",
        "data": {"mapping": mapping, "actor": zanna}})
    assert [p["path"] for p in error["data"]["errors"]] == \
        ["/data/mapping/fields/psp/default"]


async def test_roll20_adapters_import_points_at_the_mapping_default_a_refused_value_came_from(
        rpc: Rpc) -> None:
    """The same on Roll20 (roll20.generic): the PSP box is empty, so the mapping's
    default 50 is the value, and above the maximum 40 it is refused there."""
    mapping = {"version": 1, "fields": {
        "int": "Intelligence", "wis": "Wisdom", "level": "level-class1",
        "psp": {"path": "PSP", "default": 50}, "psp_max": "PSP|max"}}
    error = await rpc.error("adapters.import", {
        "adapter": "roll20.generic", "system": "revised-2e",
        "data": {"mapping": mapping, "character": roll20_psionicist("", "40")}})
    assert error["data"]["errors"] == [{"path": "/data/mapping/fields/psp/default",
                                        "message": "current PSPs 50 exceed the maximum 40"}]


async def test_synaptic_overload_lowers_the_hit_points_of_a_blank_roll20_hp_box(
        rpc: Rpc) -> None:
    """RULES.md §3 (Synaptic Overload lowers hp): an HP box left blank is taken as its
    maximum, so the damage is written back to the box instead of being lost."""
    sheet = load("roll20/adnd2e-revised-ulcen.handmade.json")
    attr(sheet, "HP")["current"] = ""
    aboleth = load("foundry/dnd5e/aboleth.json")
    aboleth["flags"]["mindscape"] = {"power-pool": {"psionic": True,
                                                    "attacks": ["synaptic-overload"]}}
    for seed in range(40):
        result = await rpc.ok("exchange.resolve", {
            "system": "power-pool",
            "attacker": {"adapter": "foundry.dnd5e", "data": aboleth},
            "defender": {"adapter": "roll20.adnd2e-revised", "data": sheet},
            "attack": {"mode": "synaptic-overload"}, "seed": seed})
        left = result["defender"]["after"].get("hp")
        if left is not None and left < 22:
            break
    else:
        raise AssertionError("no seed dealt damage: the scenario checked nothing")
    [update] = [u for u in result["updates"] if "character_id" in u]
    assert update["attributes"]["HP"] == {"current": left}


async def test_a_nameless_character_or_actor_fights_in_combat_strength_by_its_id(
        rpc: Rpc) -> None:
    """COMBATANTS.md: every system refuses an empty ``name`` (combat-strength too, since
    22fb87f). A Roll20 character with an empty name, and a Foundry actor with a blank
    name on an unlinked token with a blank name, must still fight: the adapters name
    them by their id (ADAPTERS.md), never send the empty name on to that refusal."""
    ulcen = load("roll20/adnd2e-revised-ulcen.handmade.json")
    ulcen["name"] = ""
    ulcen["attribs"] += [{"name": "psi_attack_strength", "current": "60", "max": "60"},
                         {"name": "psi_defense_strength", "current": "40", "max": "40"}]
    zanna = load("foundry/dnd5e/zanna-gnome-wizard.json")
    zanna["name"] = "  "
    zanna["flags"]["mindscape"] = {"combat-strength": {"attack_strength": 20,
                                                       "defense_strength": 10}}
    token = {"uuid": "Scene.sc1.Token.tk1", "actorLink": False, "name": " "}
    result = await rpc.ok("exchange.resolve", {
        "system": "combat-strength",
        "attacker": {"adapter": "roll20.adnd2e-revised", "data": ulcen},
        "defender": {"adapter": "foundry.dnd5e", "data": {"actor": zanna, "token": token}},
        "attack": {"mode": "ego-whip"}, "defense": {"mode": "mind-blank"}, "seed": 3})
    attacker, defender = result["attacker"]["after"], result["defender"]["after"]
    assert (attacker["id"], attacker["name"]) == ("-MzUlcen0000000001", "-MzUlcen0000000001")
    assert (defender["id"], defender["name"]) == (f"{zanna['_id']}-tk1", zanna["_id"])
    assert result["summary"].startswith("-MzUlcen0000000001 attacks ")
