"""docs/ADAPTERS.md "Write-back": object fields written so that Foundry's merge leaves
nothing stale, values the engine defaulted kept, derived values left derived, and ``hp``
read and written only where the game system keeps it."""

from __future__ import annotations

from typing import Any

import pytest

import adapters
from engine import builtin_systems
from engine.errors import InvalidInput

from .support import apply_foundry, apply_roll20, attr, load, synthetic_actor, template_actor

SYSTEMS = builtin_systems()
DND5E = adapters.get("foundry.dnd5e")
ARS = adapters.get("foundry.ars")
GENERIC = adapters.get("foundry.generic")
SHEET = adapters.get("roll20.adnd2e-revised")


def aboleth(system: str, state: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = load("foundry/dnd5e/aboleth.json")
    data["flags"]["mindscape"] = {system: state}
    return data


def normalised(adapter: adapters.Adapter, data: Any, system: str) -> dict[str, Any]:
    got: dict[str, Any] = SYSTEMS[system].combatant(adapter.import_(data, system).combatant)
    return got


# -- 1. objects: Foundry merges them key by key ------------------------------------------
def test_an_object_field_is_written_with_deletions_of_the_keys_it_lost() -> None:
    """Foundry's Document.update merges objects recursively: writing {stunned: 1} over a
    stored {dazed: 1, stunned: 2} keeps dazed unless "condition_rounds.-=dazed" is sent,
    after the value (expandObject applies keys in order)."""
    data = aboleth("power-pool", {"psionic": True, "conditions": ["dazed", "stunned"],
                                  "condition_rounds": {"dazed": 1, "stunned": 2}})
    before = normalised(DND5E, data, "power-pool")
    after = {**before, "conditions": ["stunned"], "condition_rounds": {"stunned": 1}}
    update = DND5E.updates(data, "power-pool", before, after)[0]["update"]
    base = "flags.mindscape.power-pool"
    assert list(update) == [f"{base}.conditions", f"{base}.condition_rounds",
                            f"{base}.condition_rounds.-=dazed"]
    assert update[f"{base}.condition_rounds"] == {"stunned": 1}
    assert update[f"{base}.condition_rounds.-=dazed"] is None
    written = apply_foundry(data, [{"uuid": "Actor.shhHtE7b92PefCWB", "update": update}])
    assert written["flags"]["mindscape"]["power-pool"]["condition_rounds"] == {"stunned": 1}
    assert normalised(DND5E, written, "power-pool") == after


def test_a_key_an_object_field_lost_is_deleted_when_the_write_back_is_checked_too(
        ) -> None:
    """docs/ADAPTERS.md "Round trip": with ``normalise`` the write-back is applied to a
    copy as Foundry would apply it and imported again; "a field the re-import already
    gives is not written". The deletion key takes the daze away in that copy too (and
    the value sent stays as it is), so nothing but the changed fields is written."""
    data = aboleth("power-pool", {"psionic": True, "conditions": ["dazed", "stunned"],
                                  "condition_rounds": {"dazed": 1, "stunned": 2}})
    before = normalised(DND5E, data, "power-pool")
    after = {**before, "conditions": ["stunned"], "condition_rounds": {"stunned": 1}}
    [entry] = DND5E.updates(data, "power-pool", before, after,
                            normalise=SYSTEMS["power-pool"].combatant)
    base = "flags.mindscape.power-pool"
    assert entry["update"] == {f"{base}.conditions": ["stunned"],
                               f"{base}.condition_rounds": {"stunned": 1},
                               f"{base}.condition_rounds.-=dazed": None}


def test_an_unlinked_token_masks_a_key_its_base_actor_holds_instead_of_deleting_it() -> None:
    """An unlinked token's actor is its base actor with the token's delta over it:
    deleting a key from the delta lets the base actor's show through (foundryvtt#8400).
    The aboleth (the base actor) was dazed when its copy was placed; once the copy's
    daze ends, the key is written as null in the copy's delta, read as absent, and not
    written again once null."""
    base = aboleth("power-pool", {"psionic": True, "conditions": ["dazed", "stunned"],
                                  "condition_rounds": {"dazed": 1, "stunned": 2}})
    token = {"uuid": "Scene.sc1.Token.tk1", "actorLink": False}
    delta: dict[str, Any] = {"_id": base["_id"]}
    envelope = {"actor": synthetic_actor(base, delta), "token": token}
    before = normalised(DND5E, envelope, "power-pool")
    after = {**before, "conditions": ["stunned"], "condition_rounds": {"stunned": 1}}
    [entry] = DND5E.updates(envelope, "power-pool", before, after)
    assert entry["uuid"] == "Scene.sc1.Token.tk1.Actor.shhHtE7b92PefCWB"
    field = "flags.mindscape.power-pool.condition_rounds"
    assert entry["update"][f"{field}.dazed"] is None
    assert not any("-=" in key for key in entry["update"])
    delta = apply_foundry(delta, [entry])
    envelope = {"actor": synthetic_actor(base, delta), "token": token}
    assert envelope["actor"]["flags"]["mindscape"]["power-pool"]["condition_rounds"] == {
        "dazed": None, "stunned": 1}
    assert normalised(DND5E, envelope, "power-pool") == after
    # The stun ends too: stunned is masked, dazed (null already) is not written again.
    done = {**after, "conditions": [], "condition_rounds": {}}
    [entry] = DND5E.updates(envelope, "power-pool", after, done)
    assert f"{field}.stunned" in entry["update"] and f"{field}.dazed" not in entry["update"]
    delta = apply_foundry(delta, [entry])
    assert normalised(DND5E, {"actor": synthetic_actor(base, delta), "token": token},
                      "power-pool") == done
    # A deletion would have let the base actor's daze back.
    deleted = apply_foundry({"_id": base["_id"]}, [{"uuid": entry["uuid"], "update": {
        field: {}, f"{field}.-=dazed": None}}])
    assert synthetic_actor(base, deleted)["flags"]["mindscape"]["power-pool"][
        "condition_rounds"]["dazed"] == 1


def test_a_null_field_in_the_flags_is_read_as_absent() -> None:
    """An unlinked token's profile editor writes a cleared field as null (the token's
    delta masks the base actor's value): the field then takes its default, as if it
    had never been set."""
    with_null = aboleth("revised-2e", {"kind": "psionicist", "psp": 20, "psp_max": 40,
                                       "level": None, "mind": None})
    without = aboleth("revised-2e", {"kind": "psionicist", "psp": 20, "psp_max": 40})
    assert normalised(DND5E, with_null, "revised-2e") == normalised(DND5E, without,
                                                                   "revised-2e")


def test_masked_keys_inside_the_mind_and_condition_rounds_are_read_as_absent() -> None:
    """A key an unlinked token's write-back masked inside an object field (``mind``,
    ``condition_rounds``: written as null, ``deletions``) is read as absent, as if it
    had never been set, not refused as a null member."""
    mind = {"state": "open", "opened_by": "critical", "rounds_open": 1,
            "last_defense": "mental-barrier"}
    masked = aboleth("revised-2e", {
        "kind": "psionicist", "psp": 20, "psp_max": 40,
        "mind": {**mind, "locked_rounds": None, "may_pay_to_close": None},
        "conditions": ["stunned"], "condition_rounds": {"dazed": None, "stunned": 1}})
    clean = aboleth("revised-2e", {
        "kind": "psionicist", "psp": 20, "psp_max": 40, "mind": mind,
        "conditions": ["stunned"], "condition_rounds": {"stunned": 1}})
    got = normalised(DND5E, masked, "revised-2e")
    assert got == normalised(DND5E, clean, "revised-2e")
    assert got["condition_rounds"] == {"stunned": 1}
    assert got["mind"]["state"] == "open" and got["mind"]["locked_rounds"] == 0


def test_keys_written_since_the_data_was_read_are_deleted_too() -> None:
    """An encounter keeps the actor data as it was added; the write-backs of earlier
    steps put keys there since. ``before`` knows them, so they are deleted as well."""
    data = aboleth("combat-strength", {"defense_strength": 40, "conditions": []})
    before = {**normalised(DND5E, data, "combat-strength"), "conditions": ["dazed"],
              "condition_rounds": {"dazed": 1}}
    after = {**before, "conditions": [], "condition_rounds": {}}
    update = DND5E.updates(data, "combat-strength", before, after)[0]["update"]
    assert update["flags.mindscape.combat-strength.condition_rounds"] == {}
    assert "flags.mindscape.combat-strength.condition_rounds.-=dazed" in update


def test_keys_the_actor_holds_that_before_lacks_are_deleted_too() -> None:
    """docs/ADAPTERS.md "Foundry": each object value is followed by a deletion key "for
    every key the actor holds there (or the ``before`` state held ...)": a daze put in
    the flags since the encounter's ``before`` was taken goes as well, or Foundry's
    merge would keep it."""
    data = aboleth("power-pool", {"psionic": True, "conditions": ["dazed", "stunned"],
                                  "condition_rounds": {"dazed": 1, "stunned": 2}})
    before = {**normalised(DND5E, data, "power-pool"), "conditions": ["stunned"],
              "condition_rounds": {"stunned": 2}}
    after = {**before, "condition_rounds": {"stunned": 1}}
    update = DND5E.updates(data, "power-pool", before, after)[0]["update"]
    field = "flags.mindscape.power-pool.condition_rounds"
    assert update == {field: {"stunned": 1}, f"{field}.-=dazed": None}


def test_a_stored_key_holding_a_dot_gets_no_deletion_key() -> None:
    """``deletions``: "a key holding a dot cannot be named in a dotted path and is left
    alone": ``condition_rounds.-=a.b`` would name ``b`` inside ``a`` to Foundry."""
    state: dict[str, Any] = {"psionic": True, "conditions": ["stunned"],
                             "condition_rounds": {"stunned": 2}}
    before = normalised(DND5E, aboleth("power-pool", state), "power-pool")
    after = {**before, "condition_rounds": {"stunned": 1}}
    state["condition_rounds"]["a.b"] = 1  # put there by something else
    data = aboleth("power-pool", state)
    update = DND5E.updates(data, "power-pool", before, after)[0]["update"]
    assert update == {"flags.mindscape.power-pool.condition_rounds": {"stunned": 1}}


def test_an_unlinked_token_masks_a_key_written_since_its_data_was_read() -> None:
    """The two rules together (docs/ADAPTERS.md "Foundry"): a key the ``before`` state
    holds and the new value lacks is removed even when the actor data read earlier
    lacks it, and on an unlinked token it is masked (set to null in the token's delta),
    so the daze an earlier step wrote there does not stay."""
    base = aboleth("power-pool", {"psionic": True, "conditions": ["stunned"],
                                  "condition_rounds": {"stunned": 2}})
    token = {"uuid": "Scene.sc1.Token.tk1", "actorLink": False}
    envelope = {"actor": base, "token": token}
    before = {**normalised(DND5E, envelope, "power-pool"),
              "conditions": ["dazed", "stunned"],
              "condition_rounds": {"dazed": 1, "stunned": 2}}
    after = {**before, "conditions": ["stunned"], "condition_rounds": {"stunned": 1}}
    [entry] = DND5E.updates(envelope, "power-pool", before, after)
    field = "flags.mindscape.power-pool.condition_rounds"
    assert entry["update"][field] == {"stunned": 1}
    assert entry["update"][f"{field}.dazed"] is None


def test_the_test_fake_of_foundry_merges_objects_and_honours_deletions() -> None:
    """support.apply_foundry plays Foundry's expandObject + mergeObject(performDeletions):
    without the deletion key a stale key stays, with it (after its value) it goes."""
    data = aboleth("power-pool", {"condition_rounds": {"dazed": 1, "stunned": 2}})
    key = "flags.mindscape.power-pool.condition_rounds"
    kept = apply_foundry(data, [{"uuid": "Actor.shhHtE7b92PefCWB",
                                 "update": {key: {"stunned": 1}}}])
    assert kept["flags"]["mindscape"]["power-pool"]["condition_rounds"] == \
        {"dazed": 1, "stunned": 1}
    gone = apply_foundry(data, [{"uuid": "Actor.shhHtE7b92PefCWB",
                                 "update": {key: {"stunned": 1}, f"{key}.-=dazed": None}}])
    assert gone["flags"]["mindscape"]["power-pool"]["condition_rounds"] == {"stunned": 1}
    early = apply_foundry(data, [{"uuid": "Actor.shhHtE7b92PefCWB",
                                  "update": {f"{key}.-=dazed": None, key: {"stunned": 1}}}])
    assert early["flags"]["mindscape"]["power-pool"]["condition_rounds"] == \
        {"dazed": 1, "stunned": 1}


# -- 2. values the engine defaulted, and derived ones ---------------------------------------
def test_a_pool_the_engine_defaulted_is_written_when_it_no_longer_follows() -> None:
    """COMBATANTS.md: pool defaults to hit_dice − dedicated. A die released from a
    maintained power without coming back to the pool leaves pool 17 of 18 with nothing
    dedicated: the next import would default it to 18, so pool is written."""
    data = aboleth("power-pool", {"psionic": True, "dedicated": [{"purpose": "maintain"}]})
    before = normalised(DND5E, data, "power-pool")
    assert (before["hit_dice"], before["pool"]) == (18, 17)
    after = {**before, "dedicated": []}
    plain = DND5E.updates(data, "power-pool", before, after)
    assert plain[0]["update"] == {"flags.mindscape.power-pool.dedicated": []}
    update = DND5E.updates(data, "power-pool", before, after,
                           normalise=SYSTEMS["power-pool"].combatant)
    assert update[0]["update"] == {"flags.mindscape.power-pool.dedicated": [],
                                   "flags.mindscape.power-pool.pool": 17}
    assert normalised(DND5E, apply_foundry(data, update), "power-pool") == after


def test_a_pool_that_follows_once_its_dedicated_dice_are_written_is_not_written() -> None:
    """docs/ADAPTERS.md "Round trip": fields the engine derives from others are tried
    last (`pool` among them), so a pool that hit_dice − dedicated gives once the
    dedicated die is written stays derived, though `dedicated` comes after `pool`
    among the fields (docs/COMBATANTS.md)."""
    data = aboleth("power-pool", {"psionic": True})
    maintain = [{"purpose": "maintain", "target": None}]
    after = {**normalised(DND5E, data, "power-pool"), "dedicated": maintain, "pool": 17}
    update = DND5E.updates(data, "power-pool", after, after,
                           normalise=SYSTEMS["power-pool"].combatant)
    assert update[0]["update"] == {"flags.mindscape.power-pool.dedicated": maintain}
    assert normalised(DND5E, apply_foundry(data, update), "power-pool") == after


def test_foundry_strength_maxima_are_kept_and_the_original_total_stays_derived() -> None:
    """COMBATANTS.md: attack_strength_max defaults to the current strength and
    original_total to the sum of the maxima. Only the maximum needs writing."""
    data = aboleth("combat-strength", {"attack_strength": 60, "defense_strength": 40})
    before = normalised(DND5E, data, "combat-strength")
    after = {**before, "attack_strength": 53}
    update = DND5E.updates(data, "combat-strength", before, after,
                           normalise=SYSTEMS["combat-strength"].combatant)
    assert update[0]["update"] == {"flags.mindscape.combat-strength.attack_strength": 53,
                                   "flags.mindscape.combat-strength.attack_strength_max": 60}


def test_a_derived_mthac0_is_not_written_so_a_level_up_still_counts() -> None:
    """RULES.md §1.1: a psionicist's MTHAC0 is 21 − level. Writing PSPs must not pin the
    MTHAC0 in the flags: after a level-up on the sheet it follows the new level."""
    data = aboleth("revised-2e", {"kind": "psionicist", "level": 5, "psp_max": 50,
                                  "attacks": ["mind-thrust"]})
    before = normalised(DND5E, data, "revised-2e")
    assert before["mthac0"] == 16
    after = {**before, "psp": 40}
    update = DND5E.updates(data, "revised-2e", before, after,
                           normalise=SYSTEMS["revised-2e"].combatant)
    assert update[0]["update"] == {"flags.mindscape.revised-2e.psp": 40}
    written = apply_foundry(data, update)
    written["flags"]["mindscape"]["revised-2e"]["level"] = 6
    assert normalised(DND5E, written, "revised-2e")["mthac0"] == 15


def test_ability_scores_read_from_the_sheet_are_never_written() -> None:
    """docs/ADAPTERS.md "Write-back": "a field that was derived (... abilities) is never
    written": not an ARS NPC's Int read from its stat block line, nor its Wisdom score,
    not even to the store."""
    npc = template_actor("foundry/ars/template.json", "npc", "arsNpc0000000001", "Kobold")
    npc["system"]["hitdice"] = "4"
    npc["system"]["intelligence"] = "Average (8-10)"
    before = normalised(ARS, npc, "revised-2e")
    assert (before["int"], before["wis"]) == (8, 10)
    assert ARS.updates(npc, "revised-2e", before, {**before, "int": 12, "wis": 14}) == []


def test_a_save_or_mac_read_from_a_sheet_box_is_never_written() -> None:
    """docs/ADAPTERS.md "Write-back": a field read from a place of the sheet the adapter
    does not write back to (OSE's and ARS's save vs. paralyzation box, the Roll20
    sheet's selfMAC) is never written, not even to the store, where it would hide the
    box the GM keeps."""
    ose = template_actor("foundry/ose/template.json", "character", "oseChar000000001", "O")
    ose["system"]["saves"]["paralysis"]["value"] = 13
    ars = template_actor("foundry/ars/template.json", "npc", "arsNpc0000000001", "Kobold")
    ars["system"]["saves"]["paralyzation"]["value"] = 14
    for adapter, data in ((adapters.get("foundry.ose"), ose), (ARS, ars)):
        before = normalised(adapter, data, "revised-2e")
        assert before["save_paralyzation"] in (13, 14)
        assert adapter.updates(data, "revised-2e", before,
                               {**before, "save_paralyzation": 9}) == [], adapter.id
    ulcen = load("roll20/adnd2e-revised-ulcen.handmade.json")
    before = normalised(SHEET, ulcen, "revised-2e")
    assert before["mac"] == 10
    assert SHEET.updates(ulcen, "revised-2e", before, {**before, "mac": 6}) == []


# -- 3. hp belongs to the sheet -------------------------------------------------------------
def test_foundry_ignores_hp_in_the_flags_and_writes_damage_to_the_sheet() -> None:
    """docs/ADAPTERS.md: "`hp` never goes to the store: it is written only where it was
    read." A stored flags hp is ignored, with a warning saying where hp is read."""
    data = aboleth("revised-2e", {"kind": "psionicist", "psp_max": 60, "hp": 3})
    got = DND5E.import_(data, "revised-2e")
    assert got.combatant["hp"] == 135
    assert "flags.mindscape.revised-2e.hp is ignored: hp is read from " \
           "system.attributes.hp.value" in got.warnings
    assert DND5E.updates(data, "revised-2e", {"hp": 135}, {"hp": 100}) == [
        {"uuid": "Actor.shhHtE7b92PefCWB", "update": {"system.attributes.hp.value": 100}}]


def test_a_mapping_without_hp_ignores_a_flags_hp_and_writes_no_hp() -> None:
    mapping = {"version": 1, "fields": {"int": "system.abilities.int.value"}}
    data = {"mapping": mapping, "actor": aboleth("power-pool", {"hp": 9, "hit_dice": 3,
                                                                "die": 8})}
    got = GENERIC.import_(data, "power-pool")
    assert "hp" not in got.combatant
    assert any("power-pool.hp is ignored: hp is read from the game system's own data"
               in w for w in got.warnings)
    assert GENERIC.updates(data, "power-pool", {"hp": 9}, {"hp": 4}) == []


# -- 5. PSPs with no maximum ----------------------------------------------------------------
def test_foundry_psps_with_no_maximum_take_the_current_as_the_maximum() -> None:
    data = aboleth("revised-2e", {"psp": 30, "attacks": ["mind-thrust"]})
    got = DND5E.import_(data, "revised-2e")
    assert (got.combatant["psp_max"], got.combatant["kind"]) == (30, "psionicist")
    assert "no PSP maximum recorded; taken as the current PSPs, 30" in got.warnings
    before = SYSTEMS["revised-2e"].combatant(got.combatant)
    after = {**before, "psp": 26}
    update = DND5E.updates(data, "revised-2e", before, after,
                           normalise=SYSTEMS["revised-2e"].combatant)
    assert update[0]["update"] == {"flags.mindscape.revised-2e.psp": 26,
                                   "flags.mindscape.revised-2e.psp_max": 30}


def test_roll20_psps_with_no_maximum_write_the_maximum_into_the_psp_box() -> None:
    data = load("roll20/adnd2e-revised-ulcen.handmade.json")
    attr(data, "PSP")["max"] = ""
    got = SHEET.import_(data, "revised-2e")
    assert got.combatant["psp_max"] == 40
    assert got.sources["psp_max"] == "/attribs/6/max"
    _psp_36_writes_the_maximum_40_beside_it(SHEET, data)


def _psp_36_writes_the_maximum_40_beside_it(adapter: adapters.Adapter, data: Any) -> None:
    """Ulcen's 40 PSPs, read with no maximum, fall to 36: the write-back sets the PSP
    box's max to 40 too, and the sheet so written imports as the combatant after."""
    before = normalised(adapter, data, "revised-2e")
    assert (before["psp"], before["psp_max"]) == (40, 40)
    after = {**before, "psp": 36}
    update = adapter.updates(data, "revised-2e", before, after,
                             normalise=SYSTEMS["revised-2e"].combatant)
    assert update == [{"character_id": "-MzUlcen0000000001",
                       "attributes": {"PSP": {"current": 36, "max": 40}}}]
    assert normalised(adapter, apply_roll20(data, update), "revised-2e") == after


def test_roll20_generic_psps_with_no_maximum_write_the_maximum_in_the_mapping_envelope(
        ) -> None:
    """The same through ``roll20.generic``: the write-back so far is applied to the
    character inside ``{mapping, character}`` before it is imported again, so the
    maximum that would no longer follow the current PSPs is written."""
    character = load("roll20/adnd2e-revised-ulcen.handmade.json")
    attr(character, "PSP")["max"] = ""
    data = {"mapping": {"fields": {"int": "Intelligence", "wis": "Wisdom",
                                   "level": "level-class1", "psp": "PSP",
                                   "psp_max": "PSP|max"}},
            "character": character}
    _psp_36_writes_the_maximum_40_beside_it(adapters.get("roll20.generic"), data)


def test_roll20_psps_with_no_maximum_write_the_maximum_beside_a_second_psp_attribute(
        ) -> None:
    """The Mod script sets the first attribute of a name, as the adapter reads the
    first (docs/ADAPTERS.md): a second ``psp`` attribute, holding other figures, is
    neither read nor taken as the one written."""
    data = load("roll20/adnd2e-revised-ulcen.handmade.json")
    attr(data, "PSP")["max"] = ""
    data["attribs"].append({"name": "psp", "current": "5", "max": "9"})
    _psp_36_writes_the_maximum_40_beside_it(SHEET, data)


def _open_at_zero(before: dict[str, Any]) -> dict[str, Any]:
    """``before`` after its PSPs ran out: 0 PSPs, the mind locked open (RULES.md §1.5)."""
    return {**before, "psp": 0, "conditions": ["stunned"], "mind": {
        **before["mind"], "state": "open", "opened_by": "zero-psp", "locked_rounds": 3}}


def test_psps_run_out_with_no_maximum_recorded_the_maximum_is_written_all_the_same(
        ) -> None:
    """A maximum assumed from the current PSPs would read 0 once they run out, and the
    engine refuses a psionicist with a maximum of 0: the re-import of the write-back so
    far is refused, and the write-back goes on with the fields the data does not hold
    (the assumed maximum, kind) instead of stopping with the sheet left unimportable."""
    system = SYSTEMS["revised-2e"]
    data = aboleth("revised-2e", {"kind": "psionicist", "level": 5, "psp": 8,
                                  "attacks": ["mind-thrust"]})
    before = normalised(DND5E, data, "revised-2e")
    after = _open_at_zero(before)
    update = DND5E.updates(data, "revised-2e", before, after, normalise=system.combatant)
    assert update[0]["update"]["flags.mindscape.revised-2e.psp_max"] == 8
    assert normalised(DND5E, apply_foundry(data, update), "revised-2e") == after
    sheet = load("roll20/adnd2e-revised-ulcen.handmade.json")
    attr(sheet, "PSP").update({"current": "8", "max": ""})
    before = normalised(SHEET, sheet, "revised-2e")
    after = _open_at_zero(before)
    written = SHEET.updates(sheet, "revised-2e", before, after, normalise=system.combatant)
    assert written[0]["attributes"]["PSP"] == {"current": 0, "max": 8}
    assert normalised(SHEET, apply_roll20(sheet, written), "revised-2e") == after


def test_a_refused_re_import_writes_the_assumed_fields_first_and_nothing_more() -> None:
    """After a refused re-import the write-back goes on with what the adapter assumed
    (the maximum taken from the PSPs, the kind taken from them), those first: that makes
    the data importable again, and no other field (the level it holds, what the engine
    defaulted: mental armor, the class group) is written into it besides what changed."""
    system = SYSTEMS["revised-2e"]
    base = "flags.mindscape.revised-2e"
    for stored, assumed in (({"kind": "psionicist"}, ["psp_max"]),
                            ({}, ["kind", "psp_max"])):
        data = aboleth("revised-2e", {**stored, "level": 5, "psp": 8,
                                      "attacks": ["mind-thrust"]})
        before = normalised(DND5E, data, "revised-2e")
        after = _open_at_zero(before)
        [update] = DND5E.updates(data, "revised-2e", before, after,
                                 normalise=system.combatant)
        assert list(update["update"]) == [f"{base}.{name}" for name in (
            "psp", "mind", "conditions", *assumed)]
        assert update["update"][f"{base}.psp_max"] == 8
        assert normalised(DND5E, apply_foundry(data, [update]), "revised-2e") == after
    sheet = load("roll20/adnd2e-revised-ulcen.handmade.json")
    attr(sheet, "PSP").update({"current": "8", "max": ""})
    before = normalised(SHEET, sheet, "revised-2e")
    after = _open_at_zero(before)
    [written] = SHEET.updates(sheet, "revised-2e", before, after, normalise=system.combatant)
    assert list(written["attributes"]) == ["PSP", "psi_mind", "psi_conditions", "psi_kind"]
    assert normalised(SHEET, apply_roll20(sheet, [written]), "revised-2e") == after


@pytest.mark.parametrize(("adapter_id", "template", "kind"), [
    ("foundry.ars", "foundry/ars/template.json", "npc"),
    ("foundry.ose", "foundry/ose/template.json", "monster")])
def test_a_monsters_class_group_is_read_not_assumed_so_never_written(
        adapter_id: str, template: str, kind: str) -> None:
    """docs/ADAPTERS.md: an ARS NPC's and an OSE monster's ``class_group`` is ``monster``,
    read from the sheet's actor type like dnd5e's NPCs'; after a refused re-import only
    what the adapter assumed is written (the PSP maximum, the kind), never the class
    group, which the actor type gives again at every import."""
    adapter = adapters.get(adapter_id)
    system = SYSTEMS["revised-2e"]
    actor = template_actor(template, kind, "monster000000001", "Brain Mole")
    actor["flags"] = {"mindscape": {"revised-2e": {"level": 5, "psp": 8,
                                                   "attacks": ["mind-thrust"]}}}
    before = normalised(adapter, actor, "revised-2e")
    assert before["class_group"] == "monster"
    after = _open_at_zero(before)
    [update] = adapter.updates(actor, "revised-2e", before, after, normalise=system.combatant)
    base = "flags.mindscape.revised-2e"
    assert list(update["update"]) == [f"{base}.{name}" for name in (
        "psp", "mind", "conditions", "kind", "psp_max")]


def test_strengths_run_out_with_no_maxima_recorded_the_maxima_are_written() -> None:
    """combat-strength: maxima left to the engine default to the current strengths; at 0
    they would make the creature non-psionic, which its modes refuse."""
    system = "combat-strength"
    data = aboleth(system, {"attack_strength": 10, "defense_strength": 5,
                            "attacks": ["ego-whip"], "defenses": ["mind-blank"]})
    before = normalised(DND5E, data, system)
    after = {**before, "attack_strength": 0, "defense_strength": 0}
    update = DND5E.updates(data, system, before, after, normalise=SYSTEMS[system].combatant)
    assert update[0]["update"]["flags.mindscape.combat-strength.attack_strength_max"] == 10
    assert normalised(DND5E, apply_foundry(data, update), system) == after


def test_roll20_ignores_a_psi_hp_attribute_with_a_warning() -> None:
    data = load("roll20/adnd2e-revised-ulcen.handmade.json")
    data["attribs"].append({"name": "psi_hp", "current": "5", "max": ""})
    got = SHEET.import_(data, "power-pool")
    assert got.combatant["hp"] == 22
    assert "psi_hp is ignored: hp is read from HP" in got.warnings


def test_dnd5e_hit_points_are_written_no_lower_than_0() -> None:
    """dnd5e's data model gives hp.value and hp.temp a minimum of 0 (Foundry would store 0
    for less): a creature taken below 0 (the engine counts down to −10) is written at 0,
    temporary hit points first, and a second round trip writes nothing."""
    system = "power-pool"
    data = aboleth(system, {"psionic": True, "attacks": ["mental-stab"]})
    before = normalised(DND5E, data, system)
    got = DND5E.updates(data, system, before, {**before, "hp": -7},
                        normalise=SYSTEMS[system].combatant)
    assert got == [{"uuid": "Actor.shhHtE7b92PefCWB",
                    "update": {"system.attributes.hp.value": 0}}]
    again = apply_foundry(data, got)
    assert normalised(DND5E, again, system)["hp"] == 0
    down = normalised(DND5E, again, system)
    assert DND5E.updates(again, system, down, down, normalise=SYSTEMS[system].combatant) == []
    data["system"]["attributes"]["hp"]["temp"] = 5
    before = normalised(DND5E, data, system)
    got = DND5E.updates(data, system, before, {**before, "hp": before["hp"] - 150})
    assert got[0]["update"] == {"system.attributes.hp.temp": 0,
                                "system.attributes.hp.value": 0}


def test_ars_hit_points_are_written_no_lower_than_the_actors_hp_min() -> None:
    """ARS keeps each actor's lowest hit points in attributes.hp.min (0 in its template
    and on every placed NPC token) and its own damage stops there (utilities.js
    adjustActorHealth clamps to [min, max]); a GM playing death at −10 sets −10. The
    write-back stops at the same place, so the sheet holds what ARS would."""
    system = "power-pool"
    actor = template_actor("foundry/ars/template.json", "npc", "arsNpc0000000001", "Orc")
    actor["system"]["attributes"]["hp"].update(value=12, max=12)
    actor["flags"] = {"mindscape": {system: {"psionic": True, "attacks": ["mental-stab"]}}}
    before = normalised(ARS, actor, system)
    got = ARS.updates(actor, system, before, {**before, "hp": -7},
                      normalise=SYSTEMS[system].combatant)
    assert got == [{"uuid": "Actor.arsNpc0000000001",
                    "update": {"system.attributes.hp.value": 0}}]
    assert ARS.updates(ARS.trimmed(actor, system), system, before, {**before, "hp": -7},
                       normalise=SYSTEMS[system].combatant) == got
    down = normalised(ARS, apply_foundry(actor, got), system)
    assert down["hp"] == 0
    assert ARS.updates(apply_foundry(actor, got), system, down, down,
                       normalise=SYSTEMS[system].combatant) == []
    actor["system"]["attributes"]["hp"]["min"] = -10
    got = ARS.updates(actor, system, before, {**before, "hp": -7})
    assert got[0]["update"] == {"system.attributes.hp.value": -7}
    assert ARS.updates(actor, system, before, {**before, "hp": -12})[0]["update"] == \
        {"system.attributes.hp.value": -10}
    # an actor the GM already put below its minimum is not raised to it
    actor["system"]["attributes"]["hp"].update(value=-3, min=0)
    before = normalised(ARS, actor, system)
    assert ARS.updates(actor, system, before, {**before, "hp": -5})[0]["update"] == \
        {"system.attributes.hp.value": -3}
    # with no hp.min recorded, the engine's count is written as it is
    del actor["system"]["attributes"]["hp"]["min"]
    assert ARS.updates(actor, system, before, {**before, "hp": -5})[0]["update"] == \
        {"system.attributes.hp.value": -5}


def test_an_ars_hp_min_that_is_no_number_is_refused_at_its_place() -> None:
    actor = template_actor("foundry/ars/template.json", "character", "arsChar000000001",
                           "Dorn")
    actor["system"]["attributes"]["hp"]["min"] = "dead"
    with pytest.raises(InvalidInput) as err:
        ARS.import_(actor, "revised-2e")
    assert err.value.problems[0].path == "/system/attributes/hp/min"


def test_a_pool_of_more_than_a_hundred_hit_dice_is_written_back() -> None:
    """The adapter reads and writes Hit Dice and pools as far as the engine takes them."""
    data = aboleth("power-pool", {"psionic": True, "attacks": ["mental-stab"]})
    data["system"]["attributes"]["hp"]["formula"] = "120d10 + 360"
    pool = SYSTEMS["power-pool"]
    before = pool.combatant(DND5E.import_(data, "power-pool").combatant)
    assert (before["hit_dice"], before["pool"]) == (120, 120)
    after = {**before, "pool": 119}
    written = apply_foundry(data, DND5E.updates(data, "power-pool", before, after,
                                                normalise=pool.combatant))
    assert pool.combatant(DND5E.import_(written, "power-pool").combatant)["pool"] == 119


@pytest.mark.parametrize("system", ["revised-2e", "combat-strength", "power-pool"])
def test_rounds_left_on_a_condition_it_does_not_have_are_ignored_and_then_cleared(
        system: str) -> None:
    """docs/ADAPTERS.md "Foundry": a store written before write-backs took an ended
    condition's rounds away may hold rounds on a condition the creature does not have,
    which every system refuses (docs/COMBATANTS.md: every key of ``condition_rounds``
    must be among ``conditions``). The adapter leaves such a key out, with a warning
    naming it, and the write-back that writes ``condition_rounds`` deletes it."""
    state: dict[str, Any] = {"conditions": ["dazed"],
                             "condition_rounds": {"dazed": 1, "stunned": 0}}
    state.update({"revised-2e": {"kind": "psionicist", "level": 9, "psp": 90},
                  "combat-strength": {"defense_strength": 40},
                  "power-pool": {"psionic": True}}[system])
    data = aboleth(system, state)
    imported = DND5E.import_(data, system)
    assert imported.combatant["condition_rounds"] == {"dazed": 1}
    assert ('condition_rounds "stunned": rounds left on a condition it does not have '
            "(not among conditions); ignored") in imported.warnings
    before = SYSTEMS[system].combatant(imported.combatant)
    after = {**before, "conditions": [], "condition_rounds": {}}
    updates = DND5E.updates(data, system, before, after,
                            normalise=SYSTEMS[system].combatant)
    field = f"flags.mindscape.{system}.condition_rounds"
    assert f"{field}.-=stunned" in updates[0]["update"]
    written = apply_foundry(data, updates)
    assert written["flags"]["mindscape"][system]["condition_rounds"] == {}
    assert not any("condition_rounds" in w for w in DND5E.import_(written, system).warnings)
