"""encounter.* (API.md "Encounters"): steps stored before the answer, hidden choices,
revisions, undo, limits; with the sample system and the real revised-2e."""

from __future__ import annotations

import asyncio
import gc
import json
from pathlib import Path
from typing import Any

import pytest

from companion.keys import SERVICES

from .combatants import FENKA, ULCEN, duelist, pool_sheet, written_attributes
from .conftest import Rpc


async def _duel(rpc: Rpc) -> str:
    created = await rpc.ok("encounter.create", {"system": "sample-duel", "name": "Test"})
    assert created["revision"] == 0
    for cid in ("ann", "bob"):
        await rpc.ok("encounter.add", {"id": created["id"], "combatant": duelist(cid)})
    return str(created["id"])


async def test_an_encounter_round_from_create_to_log(rpc: Rpc) -> None:
    eid = await _duel(rpc)
    view = await rpc.ok("encounter.get", {"id": eid})
    assert view["revision"] == 2 and view["waiting_for"] == ["ann", "bob"]
    declared = await rpc.ok("encounter.declare", {
        "id": eid, "combatant_id": "ann",
        "choice": {"attack": {"mode": "jab", "target": "bob"}}})
    assert declared == {"revision": 3, "waiting_for": ["bob"], "updates": []}
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "bob",
                                       "choice": {"defense": {"mode": "guard"}}})
    step = await rpc.ok("encounter.resolve", {"id": eid, "dice": {"attack": [6],
                                                                  "defense": [2]}})
    assert step["revision"] == 5 and step["updates"] == []
    assert step["exchanges"][0]["hit"] is True
    after = await rpc.ok("encounter.get", {"id": eid})
    assert after["combatants"]["bob"]["focus"] == 2 and after["round"] == 2
    log = await rpc.ok("encounter.log", {"id": eid})
    assert [s["kind"] for s in log["steps"]] == ["add", "add", "declare", "declare",
                                                 "resolve"]
    resolve = log["steps"][-1]
    assert [r["value"] for r in resolve["rolls"]] == [6, 2]
    assert log["steps"][2]["params"]["choice"]["attack"]["target"] == "bob"
    listed = await rpc.ok("encounter.list")
    assert [(e["id"], e["revision"], e["name"]) for e in listed] == [(eid, 5, "Test")]
    # API.md encounter.list: [{id, system, name, revision, created_at, updated_at}]
    assert set(listed[0]) == {"id", "system", "name", "revision", "created_at", "updated_at"}
    assert listed[0]["system"] == "sample-duel"
    assert listed[0]["updated_at"] >= listed[0]["created_at"]


async def test_encounter_create_answers_the_id_revision_system_and_name(rpc: Rpc) -> None:
    """API.md: encounter.create {system, name?, options?} -> {id, revision: 0, system,
    name}: the name given (encounter.get shows it too), or null without one."""
    named = await rpc.ok("encounter.create", {"system": "sample-duel", "name": "Tyr"})
    assert named == {"id": named["id"], "revision": 0, "system": "sample-duel",
                     "name": "Tyr"}
    # API.md encounter.get: {id, system, name, revision, ...}
    got = await rpc.ok("encounter.get", {"id": named["id"]})
    assert (got["id"], got["system"], got["name"]) == (named["id"], "sample-duel", "Tyr")
    unnamed = await rpc.ok("encounter.create", {"system": "revised-2e"})
    assert (unnamed["system"], unnamed["name"]) == ("revised-2e", None)
    assert unnamed["id"] != named["id"]
    # a name of at most 200 characters (rpc.discover: maxLength 200)
    long = await rpc.ok("encounter.create", {"system": "sample-duel", "name": "x" * 200})
    assert long["name"] == "x" * 200
    error = await rpc.error("encounter.create", {"system": "sample-duel", "name": "x" * 201})
    assert error["code"] == -32602
    assert [e["path"] for e in error["data"]["errors"]] == ["/name"]


async def test_a_declared_choice_stays_hidden_until_resolved(rpc: Rpc) -> None:
    """API.md: 'choices stay hidden until resolution'; encounter.get 'never another
    side's hidden choice'."""
    eid = await _duel(rpc)
    secret = {"attack": {"mode": "jab", "target": "bob"}}
    answer = await rpc.call("encounter.declare", {"id": eid, "combatant_id": "ann",
                                                  "choice": secret})
    assert "jab" not in json.dumps(answer)
    for method in ("encounter.get", "encounter.log", "encounter.list"):
        params = None if method == "encounter.list" else {"id": eid}
        seen = json.dumps(await rpc.ok(method, params))
        assert "jab" not in seen, method
    log = await rpc.ok("encounter.log", {"id": eid})
    assert log["steps"][-1]["params"] == {"combatant_id": "ann", "choice": None,
                                          "hidden": True}
    await rpc.ok("encounter.resolve", {"id": eid, "force": True, "dice": {"attack": [1]}})
    log = await rpc.ok("encounter.log", {"id": eid})
    assert log["steps"][2]["params"]["choice"] == secret


async def test_the_log_since_a_revision_has_only_the_later_steps(rpc: Rpc) -> None:
    """encounter.log {since}: a client that keeps a copy fetches only new steps, still
    masked until resolved."""
    eid = await _duel(rpc)
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "ann",
                                       "choice": {"attack": {"mode": "jab", "target": "bob"}}})
    whole = await rpc.ok("encounter.log", {"id": eid})
    later = await rpc.ok("encounter.log", {"id": eid, "since": 2})
    assert later["revision"] == whole["revision"] == 3
    assert later["steps"] == whole["steps"][2:]
    assert later["steps"][0]["params"]["hidden"] is True
    assert (await rpc.ok("encounter.log", {"id": eid, "since": 3}))["steps"] == []
    error = await rpc.error("encounter.log", {"id": eid, "since": -1})
    assert error["code"] == -32602 and error["data"]["errors"][0]["path"] == "/since"


async def test_resolve_needs_every_choice_unless_forced(rpc: Rpc) -> None:
    eid = await _duel(rpc)
    error = await rpc.error("encounter.resolve", {"id": eid})
    assert error["code"] == 4001
    forced = await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 7})
    assert forced["exchanges"] == []
    # API.md: the log shows each step's params: the seed, and force (the step was forced)
    resolve = (await rpc.ok("encounter.log", {"id": eid}))["steps"][-1]
    assert (resolve["kind"], resolve["params"]) == ("resolve", {"seed": 7, "force": True})


async def test_a_built_in_system_refuses_an_early_resolve_in_its_own_words(
        rpc: Rpc) -> None:
    """A built-in system refuses a resolve that still waits for choices itself (the
    daemon checks this only for third-party systems): choices-missing with the system's
    own detail, said once."""
    eid = await _revised_duel(rpc)
    error = await rpc.error("encounter.resolve", {"id": eid})
    assert error["code"] == 4001
    assert error["data"] == {"rule": "choices-missing",
                             "detail": "still waiting for ulcen, fenka"}


async def test_undo_reverts_the_last_resolved_step_exactly(rpc: Rpc) -> None:
    eid = await _duel(rpc)
    for cid, target in (("ann", "bob"), ("bob", "ann")):
        await rpc.ok("encounter.declare", {"id": eid, "combatant_id": cid, "choice": {
            "attack": {"mode": "jab", "target": target}}})
    before = await rpc.ok("encounter.get", {"id": eid})
    await rpc.ok("encounter.resolve", {"id": eid, "seed": 3})
    undone = await rpc.ok("encounter.undo", {"id": eid})
    assert undone["undone"] == 5 and undone["revision"] == 6
    restored = await rpc.ok("encounter.get", {"id": eid})
    assert {k: v for k, v in restored.items() if k != "revision"} == \
        {k: v for k, v in before.items() if k != "revision"}
    log = await rpc.ok("encounter.log", {"id": eid})
    assert log["steps"][4]["undone_by"] == 6 and log["steps"][5]["kind"] == "undo"
    # the undone resolve is hidden, and so is the seed its dice came from (API.md)
    assert (log["steps"][4]["hidden"], log["steps"][4]["params"]) == (True, {})
    # the choices are pending again, so they are hidden again
    assert log["steps"][2]["params"]["choice"] is None
    error = await rpc.error("encounter.undo", {"id": eid})
    assert error["code"] == 4001


async def test_undo_marks_the_steps_after_the_resolve_it_takes_away(rpc: Rpc) -> None:
    """A combatant added and a choice declared after the resolve are gone with it; the log
    marks them undone too, so the steps still in effect are exactly what ``get`` shows."""
    eid = await _duel(rpc)
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "ann", "choice": {
        "attack": {"mode": "jab", "target": "bob"}}})
    await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 3})
    await rpc.ok("encounter.add", {"id": eid, "combatant": duelist("cid")})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "cid", "choice": {
        "attack": {"mode": "jab", "target": "ann"}}})
    undone = await rpc.ok("encounter.undo", {"id": eid})
    assert (undone["undone"], undone["revision"]) == (4, 7)
    view = await rpc.ok("encounter.get", {"id": eid})
    assert "cid" not in json.dumps(view["combatants"])
    steps = (await rpc.ok("encounter.log", {"id": eid}))["steps"]
    assert [(s["revision"], s["kind"], s["undone_by"]) for s in steps] == [
        (1, "add", None), (2, "add", None), (3, "declare", None), (4, "resolve", 7),
        (5, "add", 7), (6, "declare", 7), (7, "undo", None)]
    # ann's choice is pending again and hidden again; so is the voided one
    assert steps[2]["params"]["choice"] is None and steps[5]["params"]["choice"] is None


async def test_unknown_encounter_is_4004(rpc: Rpc) -> None:
    for method, extra in (("encounter.get", {}), ("encounter.log", {}),
                          ("encounter.undo", {}), ("encounter.delete", {}),
                          ("encounter.resolve", {}),
                          ("encounter.add", {"combatant": duelist("x")}),
                          ("encounter.declare", {"combatant_id": "x", "choice": {}})):
        error = await rpc.error(method, {"id": "nope", **extra})
        assert error["code"] == 4004 and error["data"] == {"id": "nope"}, method


async def test_an_encounter_method_refuses_a_member_it_does_not_know(rpc: Rpc) -> None:
    """API.md "Errors": -32602 for invalid params; each encounter method takes only the
    members its row names (rpc.discover: additionalProperties false)."""
    eid = await _duel(rpc)
    for method, params in (("encounter.create", {"system": "sample-duel", "bogus": 1}),
                           ("encounter.get", {"id": eid, "bogus": 1}),
                           ("encounter.resolve", {"id": eid, "force": True, "bogus": 1})):
        error = await rpc.error(method, params)
        assert error["code"] == -32602 and error["data"]["errors"] == [{
            "path": "", "message": 'unexpected member(s) ["bogus"]: not allowed here'}], method
    assert (await rpc.ok("encounter.get", {"id": eid}))["revision"] == 2


async def test_unknown_combatant_is_4004(rpc: Rpc) -> None:
    eid = await _duel(rpc)
    error = await rpc.error("encounter.declare", {"id": eid, "combatant_id": "zed",
                                                  "choice": {}})
    assert error["code"] == 4004 and error["data"] == {"id": "zed"}
    error = await rpc.error("encounter.declare", {
        "id": eid, "combatant_id": "ann", "choice": {"attack": {"mode": "jab",
                                                                "target": "zed"}}})
    assert error["code"] == 4004 and error["data"] == {"id": "zed"}


async def test_every_target_of_a_choice_must_be_in_the_encounter(rpc: Rpc) -> None:
    """API.md encounter.declare: "An unknown combatant or target is 4004", also a target
    in a choice's ``attacks`` (revised-2e's list of attacks), checked by the daemon for
    a system that would not look at them (the sample duel). An attack without a target
    is the system's to refuse (-32602), not an unknown combatant nor a fault."""
    eid = await _duel(rpc)
    error = await rpc.error("encounter.declare", {"id": eid, "combatant_id": "ann",
                                                  "choice": {"attacks": [
                                                      {"mode": "jab", "target": "bob"},
                                                      {"mode": "jab", "target": "zed"}]}})
    assert error["code"] == 4004 and error["data"] == {"id": "zed"}
    assert (await rpc.ok("encounter.get", {"id": eid}))["revision"] == 2
    eid = await _revised_duel(rpc)
    for choice, path in (({"attack": {"mode": "mind-thrust", "multiplier": 1}},
                          "/choice/attack"),
                         ({"attacks": [{"mode": "mind-thrust", "multiplier": 1}]},
                          "/choice/attacks/0")):
        error = await rpc.error("encounter.declare", _declare(eid, "ulcen", choice))
        assert error["code"] == -32602, error
        assert [e["path"] for e in error["data"]["errors"]] == [path]


async def test_a_stale_revision_is_4009_and_changes_nothing(rpc: Rpc) -> None:
    """API.md: 'Calls that change an encounter may name the revision they expect (4009
    if it moved on)'."""
    eid = await _duel(rpc)
    error = await rpc.error("encounter.add", {"id": eid, "combatant": duelist("cy"),
                                              "revision": 1})
    assert error["code"] == 4009 and error["data"] == {"revision": 2}
    assert (await rpc.ok("encounter.get", {"id": eid}))["revision"] == 2
    ok = await rpc.ok("encounter.add", {"id": eid, "combatant": duelist("cy"),
                                        "revision": 2})
    assert ok["revision"] == 3
    # a resolved step (for undo) and a declared choice (for resolve) that a stale call
    # would change
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "ann", "choice": {
        "attack": {"mode": "jab", "target": "bob"}}})
    await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 3})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "bob", "choice": {
        "attack": {"mode": "jab", "target": "ann"}}})
    view = await rpc.ok("encounter.get", {"id": eid})
    log = await rpc.ok("encounter.log", {"id": eid})
    for method, extra in (("encounter.declare", {"combatant_id": "ann", "choice": {
                              "attack": {"mode": "jab", "target": "cy"}}}),
                          ("encounter.resolve", {"force": True}),
                          ("encounter.undo", {}), ("encounter.delete", {})):
        error = await rpc.error(method, {"id": eid, "revision": 0, **extra})
        assert error["code"] == 4009 and error["data"] == {"revision": view["revision"]}, \
            method
        assert await rpc.ok("encounter.get", {"id": eid}) == view, method
        assert await rpc.ok("encounter.log", {"id": eid}) == log, method


async def test_invalid_combatant_names_its_field_and_changes_nothing(rpc: Rpc) -> None:
    eid = await _duel(rpc)
    error = await rpc.error("encounter.add", {"id": eid, "combatant": {"id": "x",
                                                                       "focus": 99}})
    assert error["code"] == -32602
    assert any(e["path"].startswith("/combatant") for e in error["data"]["errors"])
    assert (await rpc.ok("encounter.get", {"id": eid}))["revision"] == 2


async def test_at_most_64_combatants(rpc: Rpc) -> None:
    """API.md "Limits": 64 combatants per encounter."""
    created = await rpc.ok("encounter.create", {"system": "sample-duel"})
    batch = [{"jsonrpc": "2.0", "method": "encounter.add", "id": i,
              "params": {"id": created["id"], "combatant": duelist(f"c{i}")}}
             for i in range(64)]
    answers = await rpc.raw(batch)
    assert all("result" in a for a in answers)
    error = await rpc.error("encounter.add", {"id": created["id"],
                                              "combatant": duelist("one-too-many")})
    assert error["code"] == -32602 and "64" in error["data"]["errors"][0]["message"]


async def test_delete(rpc: Rpc) -> None:
    eid = await _duel(rpc)
    assert await rpc.ok("encounter.delete", {"id": eid}) == {"id": eid, "deleted": True}
    assert (await rpc.error("encounter.get", {"id": eid}))["code"] == 4004
    assert await rpc.ok("encounter.list") == []


async def test_watch_over_plain_http_is_refused(rpc: Rpc) -> None:
    eid = await _duel(rpc)
    error = await rpc.error("encounter.watch", {"id": eid})
    assert error["code"] == -32602 and "WebSocket" in error["data"]["errors"][0]["message"]


async def test_create_rejects_unknown_house_rules(rpc: Rpc) -> None:
    error = await rpc.error("encounter.create", {"system": "revised-2e",
                                                 "options": {"H-NOPE": True}})
    assert error["code"] == -32602
    assert error["data"]["errors"][0]["path"] == "/options/H-NOPE"


async def test_a_revised_2e_round(rpc: Rpc) -> None:
    """A real system: one revised-2e round declared in secret and resolved with the
    table's dice, stored with those dice."""
    created = await rpc.ok("encounter.create", {"system": "revised-2e", "name": "Tyr"})
    eid = created["id"]
    for combatant in (ULCEN, FENKA):
        await rpc.ok("encounter.add", {"id": eid, "combatant": combatant})
    view = await rpc.ok("encounter.get", {"id": eid})
    assert set(view["waiting_for"]) == {"ulcen", "fenka"}
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "ulcen", "choice": {
        "attack": {"mode": "mind-thrust", "target": "fenka", "multiplier": 1}}})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "fenka", "choice": {
        "defense": {"mode": "mental-barrier"}}})
    step = await rpc.ok("encounter.resolve", {"id": eid, "seed": 5})
    log = await rpc.ok("encounter.log", {"id": eid})
    assert log["steps"][-1]["rolls"], "the dice used are stored with the step"
    assert step["revision"] == log["revision"] == 5
    replay = await rpc.ok("encounter.undo", {"id": eid})
    assert replay["undone"] == 5
    rolls: dict[str, list[int]] = {}
    for roll in log["steps"][-1]["rolls"]:
        rolls.setdefault(roll["purpose"], []).append(roll["value"])
    again = await rpc.ok("encounter.resolve", {"id": eid, "dice": rolls})
    assert _without_revision(again) == _without_revision(step)


def _without_revision(step: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in step.items() if k not in ("revision", "unused_dice")}


async def test_writes_naming_unknown_encounters_leave_no_lock_behind(rpc: Rpc) -> None:
    for n in range(20):
        await rpc.error("encounter.add", {"id": f"nope-{n}", "combatant": duelist("x")})
    eid = await _duel(rpc)
    services = rpc.client.server.app[SERVICES]
    assert services._locks == {}
    assert (await rpc.ok("encounter.get", {"id": eid}))["revision"] == 2


async def test_writes_sent_at_once_without_a_revision_all_succeed_one_after_another(
        rpc: Rpc) -> None:
    """API.md "Encounters": writes to one encounter are serialised. Twenty adds sent at
    once, none naming the revision it expects, are all taken (none is a 4009 stale
    revision from another's write in between), each at a revision of its own."""
    eid = (await rpc.ok("encounter.create", {"system": "sample-duel"}))["id"]
    answers = await asyncio.gather(*(rpc.raw({
        "jsonrpc": "2.0", "method": "encounter.add", "id": n,
        "params": {"id": eid, "combatant": duelist(f"c{n}")}}) for n in range(20)))
    assert all("result" in a for a in answers), [a for a in answers if "error" in a][:1]
    assert sorted(a["result"]["revision"] for a in answers) == list(range(1, 21))


async def test_refused_calls_leave_no_exception_in_a_reference_cycle(rpc: Rpc) -> None:
    """An exception in a reference cycle keeps its traceback's frames (the request's,
    its params') until the garbage collector runs: a client naming unknown encounters
    made the daemon grow between collections. Each refusal below must leave none."""
    eid = await _duel(rpc)
    refusals = [
        ("encounter.resolve", {"id": "nope"}),                        # the store's 4004
        ("encounter.add", {"id": "nope", "combatant": duelist("x")}),  # under the lock
        ("encounter.declare", {"id": eid, "combatant_id": "zed", "choice": {}}),
        ("encounter.add", {"id": eid, "combatant": duelist("cy"), "revision": 0}),
        ("encounter.add", {"id": eid, "combatant": {"id": "x", "focus": 99}}),
        ("encounter.resolve", {"id": eid}),  # choices missing
    ]
    gc.collect()
    gc.disable()
    try:
        for method, params in refusals:
            assert "code" in await rpc.error(method, params), method
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        left = [type(o).__name__ for o in gc.garbage if isinstance(o, BaseException)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert left == []


HIDDEN_CASES = {
    "revised-2e": (ULCEN, FENKA, {"attack": {"mode": "mind-thrust", "multiplier": 1,
                                             "range": "short", "target": "fenka"},
                                  "defense": {"mode": "thought-shield"}}),
    "combat-strength": (
        {"id": "ulcen", "name": "Ulcen", "attack_strength": 200, "defense_strength": 200},
        {"id": "fenka", "name": "Fenka", "attack_strength": 200, "defense_strength": 200},
        {"stance": "trance"}),
    "power-pool": (
        {"id": "ulcen", "name": "Ulcen", "hit_dice": 8, "die": 8, "psionic": True,
         "attacks": ["mental-stab"], "defenses": ["blank-mind"]},
        {"id": "fenka", "name": "Fenka", "hit_dice": 8, "die": 8, "psionic": True,
         "attacks": ["mental-stab"], "defenses": ["blank-mind"]},
        {"attack": {"mode": "mental-stab", "target": "fenka"}}),
}


@pytest.mark.parametrize("system", sorted(HIDDEN_CASES))
async def test_a_declaration_changes_nothing_anyone_can_read_but_who_is_waited_for(
        rpc: Rpc, system: str) -> None:
    """API.md: encounter.get 'never another side's hidden choice'; a declaration may
    only move the revision and the list of who must still choose."""
    first, second, choice = HIDDEN_CASES[system]
    eid = (await rpc.ok("encounter.create", {"system": system}))["id"]
    for combatant in (first, second):
        await rpc.ok("encounter.add", {"id": eid, "combatant": combatant})
    before = await rpc.ok("encounter.get", {"id": eid})
    log_before = await rpc.ok("encounter.log", {"id": eid})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": first["id"],
                                       "choice": choice})
    after = await rpc.ok("encounter.get", {"id": eid})
    # power-pool: the defender answers an attack (seed 001), so the phase may turn to
    # "defense" and the view names the minds struck (others may join their defense);
    # which mode the attack used stays hidden.
    public = {"revision", "waiting_for", "declared", "phase", "struck"}
    assert after.get("struck", []) == (["fenka"] if system == "power-pool" else [])
    assert {k: v for k, v in after.items() if k not in public} == \
        {k: v for k, v in before.items() if k not in public}
    log_after = await rpc.ok("encounter.log", {"id": eid})
    assert log_after["steps"][:-1] == log_before["steps"]
    assert log_after["steps"][-1]["params"] == {"combatant_id": first["id"], "choice": None,
                                                "hidden": True}


@pytest.mark.parametrize("joins", [True, False])
async def test_a_bystander_joining_or_staying_out_reads_the_same_until_resolved(
        rpc: Rpc, joins: bool) -> None:
    """power-pool: a psionic bystander may join a defense by its own choice. Its answer,
    either way, is a declaration that get and log show only as "declared" until the
    exchange is resolved: joining was the only thing it could declare, so seeing it
    declare told the attacker it joined."""
    ulcen, fenka, attack = HIDDEN_CASES["power-pool"]
    seer = {**fenka, "id": "seer", "name": "Seer", "defenses": ["imagination-swarm"]}
    eid = (await rpc.ok("encounter.create", {"system": "power-pool"}))["id"]
    for combatant in (ulcen, fenka, seer):
        await rpc.ok("encounter.add", {"id": eid, "combatant": combatant})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "ulcen", "choice": attack})
    answer = {"mode": "imagination-swarm"} if joins else {"mode": None}
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "seer",
                                       "choice": {"defense": answer}})
    view = await rpc.ok("encounter.get", {"id": eid})
    assert view["declared"] == ["seer", "ulcen"] and view["waiting_for"] == ["fenka"]
    log = await rpc.ok("encounter.log", {"id": eid})
    assert log["steps"][-1]["params"] == {"combatant_id": "seer", "choice": None,
                                          "hidden": True}
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "fenka",
                                       "choice": {"defense": {}}})
    done = await rpc.ok("encounter.resolve", {"id": eid, "seed": 7})
    members = {m["id"] for m in done["results"][0]["defense"]["members"]}
    assert ("seer" in members) is joins
    log = await rpc.ok("encounter.log", {"id": eid})
    shown = [s["params"] for s in log["steps"]
             if s["kind"] == "declare" and s["params"]["combatant_id"] == "seer"]
    assert shown == [{"combatant_id": "seer", "choice": {"defense": answer}}]


async def test_secret_choices_the_rules_cannot_take_whole_are_resolved_not_refused(
        rpc: Rpc) -> None:
    """API.md: encounter.resolve "resolves the step once waiting_for is empty, or with
    force". A wave to be kept by a die each, which a secret join outgrows, was refused
    (4001 no-die-to-dedicate) naming the attacker's keep_by and how many joined, with
    nothing waited for and no way past it; it is resolved, kept by one action, and the
    step says so."""
    ulcen, fenka, _ = HIDDEN_CASES["power-pool"]
    mind = {**fenka, "defenses": ["blank-mind", "imagination-swarm"]}
    eid = (await rpc.ok("encounter.create", {"system": "power-pool"}))["id"]
    await rpc.ok("encounter.add", {"id": eid, "combatant": {
        **ulcen, "hit_dice": 2, "attacks": ["psionic-wave"]}})
    for cid in ("bee", "eel", "fox"):
        await rpc.ok("encounter.add", {"id": eid, "combatant": {
            **mind, "id": cid, "name": cid.title(), "hit_dice": 1, "die": 4}})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "ulcen", "choice": {
        "attack": {"mode": "psionic-wave", "target": "bee", "targets": ["eel"],
                   "keep_by": "die"}}})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "fox", "choice": {
        "defense": {"mode": "imagination-swarm"}}})
    step = await rpc.ok("encounter.resolve", {"id": eid, "force": True, "dice": {
        "attack": [8, 8], "defense": [1, 1, 1]}})
    assert {"type": "kept-by-action-instead", "combatant": "ulcen", "asked": "die",
            "creatures": 3, "pool": 2} in step["events"]
    assert "Ulcen asked to keep them by a die each, but its pool holds 2 dice for 3 " \
        "creatures." in step["summary"]


async def test_a_creature_attacked_named_as_an_ally_is_4001_at_its_place_in_the_choice(
        rpc: Rpc) -> None:
    """power-pool: a struck creature named among a defender's allies was -32602 'id "dog"
    is already used at /defenders/1: give each creature an id of its own', about an
    exchange request the caller never wrote."""
    ulcen, fenka, _ = HIDDEN_CASES["power-pool"]
    eid = (await rpc.ok("encounter.create", {"system": "power-pool"}))["id"]
    for combatant in ({**ulcen, "attacks": ["psionic-wave"]},
                      {**fenka, "defenses": ["imagination-swarm"]},
                      {"id": "dog", "name": "Dog", "hit_dice": 2, "die": 6, "psionic": False}):
        await rpc.ok("encounter.add", {"id": eid, "combatant": combatant})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "ulcen", "choice": {
        "attack": {"mode": "psionic-wave", "target": "fenka", "targets": ["dog"]}}})
    error = await rpc.error("encounter.declare", {"id": eid, "combatant_id": "fenka",
                                                  "choice": {"defense": {
                                                      "mode": "imagination-swarm",
                                                      "allies": ["dog"]}}})
    assert (error["code"], error["data"]) == (4001, {
        "rule": "ally-struck", "combatant": "dog", "detail": (
            "/choice/defense/allies/0: Dog is struck by this attack and defends itself; it "
            "cannot also be drawn in")})


async def test_public_actions_are_logged_at_once_and_secret_choices_stay_hidden(
        rpc: Rpc) -> None:
    """power-pool's release, keep, cannot_perceive, pass and rest apply when declared
    (encounter.get shows their effect), so encounter.log shows them at once; an attack
    stays hidden until its exchange resolves."""
    ulcen, fenka, attack = HIDDEN_CASES["power-pool"]
    eid = (await rpc.ok("encounter.create", {"system": "power-pool"}))["id"]
    for combatant in (ulcen, fenka, {**fenka, "id": "kank", "name": "Kank"},
                      {**fenka, "id": "sab", "name": "Sab"}):
        await rpc.ok("encounter.add", {"id": eid, "combatant": combatant})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "ulcen", "choice": attack})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "fenka",
                                       "choice": {"defense": {}}})
    await rpc.ok("encounter.resolve", {"id": eid, "dice": {"attack": [8] * 8,
                                                           "defense": [1] * 8}})
    assert (await rpc.ok("encounter.get", {"id": eid}))["combatants"]["fenka"][
        "controlled_by"] == "ulcen"
    public = [("ulcen", {"keep": {"target": "fenka", "by": "die"}}),
              ("ulcen", {"keep": {"target": "fenka", "by": "action"}}),
              ("ulcen", {"cannot_perceive": "fenka"}),
              ("kank", {"pass": True}),
              ("kank", {"rest": True})]
    said = [await rpc.ok("encounter.declare", {"id": eid, "combatant_id": cid,
                                               "choice": choice}) for cid, choice in public]
    assert (await rpc.ok("encounter.get", {"id": eid}))["combatants"]["fenka"][
        "controlled_by"] is None
    # each answer says what the action did, and its logged step keeps it
    assert [a["summary"] for a in said] == [
        "Ulcen keeps control of Fenka by a die from its pool from now on (7 left).",
        "Ulcen keeps control of Fenka by an action each round from now on; the die "
        "returns (8 in the pool).",
        "Ulcen loses sight of Fenka: the control ends.",
        "Kank passes this round.", "Kank takes a long rest."]
    assert [e["type"] for e in said[2]["events"]] == ["control-ended"]
    logged = (await rpc.ok("encounter.log", {"id": eid}))["steps"][-5:]
    assert [s["result"]["summary"] for s in logged] == [a["summary"] for a in said]
    # (Fenka, set free, has no die in its pool to attack with: Sab attacks)
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "sab",
                                       "choice": {"attack": {"mode": "mental-stab",
                                                             "target": "kank"}}})
    steps = (await rpc.ok("encounter.log", {"id": eid}))["steps"]
    assert [s["params"].get("choice") for s in steps[-6:-1]] == [c for _, c in public]
    assert steps[-1]["params"] == {"combatant_id": "sab", "choice": None, "hidden": True}
    assert "mental-stab" not in json.dumps(steps[-1])


async def test_adapter_combatants_get_write_backs_after_resolve_and_undo(rpc: Rpc) -> None:
    """API.md: a combatant given as {adapter, data} ... the result also carries updates."""
    ulcen_sheet = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "roll20"
                              / "adnd2e-revised-ulcen.handmade.json").read_text())
    eid = (await rpc.ok("encounter.create", {"system": "revised-2e"}))["id"]
    added = await rpc.ok("encounter.add", {"id": eid, "combatant": {
        "adapter": "roll20.adnd2e-revised", "data": ulcen_sheet}})
    assert added["updates"] == [] and added["warnings"]
    ulcen = added["combatant_id"]
    await rpc.ok("encounter.add", {"id": eid, "combatant": FENKA})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": ulcen, "choice": {
        "attack": {"mode": "mind-thrust", "target": "fenka", "multiplier": 1}}})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "fenka",
                                       "choice": {"defense": None}})
    [sheet_psp] = [int(a["current"]) for a in ulcen_sheet["attribs"] if a["name"] == "PSP"]
    step = await rpc.ok("encounter.resolve", {"id": eid, "seed": 2})
    # Ulcen paid PSPs: his sheet is written back, and only his
    assert step["summary"].endswith("Ulcen of Tyr pays 1 PSP.")
    assert step["updates"] == [{"character_id": ulcen_sheet["id"],
                                "attributes": {"PSP": {"current": sheet_psp - 1}}}]
    undone = await rpc.ok("encounter.undo", {"id": eid})
    # undo writes the sheet back as it was before the step
    assert undone["updates"] == [{"character_id": ulcen_sheet["id"],
                                  "attributes": {"PSP": {"current": sheet_psp}}}]


async def _revised_duel(rpc: Rpc) -> str:
    eid = str((await rpc.ok("encounter.create", {"system": "revised-2e"}))["id"])
    for combatant in (ULCEN, FENKA):
        await rpc.ok("encounter.add", {"id": eid, "combatant": combatant})
    return eid


def _declare(eid: str, cid: str, choice: dict[str, Any]) -> dict[str, Any]:
    return {"id": eid, "combatant_id": cid, "choice": choice}


SECRET_ATTACK = {"attack": {"mode": "mind-thrust", "multiplier": 2, "range": "short",
                            "target": "fenka"}}
SECRET_DEFENSE = {"defense": {"mode": "mental-barrier"}}


async def test_an_undone_round_shows_neither_dice_nor_result_while_its_choices_are_pending(
        rpc: Rpc) -> None:
    """API.md: 'choices stay hidden until resolution'. After an undo the round's choices
    are pending again, and the undone resolve's result (which names the modes) would
    show them: its dice and result are hidden until a round in effect uses the same
    choices."""
    eid = await _revised_duel(rpc)
    await rpc.ok("encounter.declare", _declare(eid, "ulcen", SECRET_ATTACK))
    await rpc.ok("encounter.declare", _declare(eid, "fenka", SECRET_DEFENSE))
    await rpc.ok("encounter.resolve", {"id": eid, "seed": 1})
    await rpc.ok("encounter.undo", {"id": eid})
    steps = (await rpc.ok("encounter.log", {"id": eid}))["steps"]
    assert [s["kind"] for s in steps] == ["add", "add", "declare", "declare", "resolve",
                                          "undo"]
    undone = steps[4]
    assert (undone["undone_by"], undone["hidden"], undone["rolls"], undone["result"]) == \
        (6, True, None, None)
    seen = json.dumps(steps[2:])  # the adds list what each combatant knows
    assert "mind-thrust" not in seen and "mental-barrier" not in seen
    # resolved again with the same choices: the round in effect and the undone one show
    await rpc.ok("encounter.resolve", {"id": eid, "seed": 2})
    steps = (await rpc.ok("encounter.log", {"id": eid}))["steps"]
    assert steps[2]["params"]["choice"] == SECRET_ATTACK
    assert steps[3]["params"]["choice"] == SECRET_DEFENSE
    assert "hidden" not in steps[4] and steps[4]["result"] is not None


async def test_a_refresh_undone_with_a_hidden_round_is_hidden_with_it(rpc: Rpc) -> None:
    """A sheet taken after the round holds what the round wrote: Fenka's PSPs after her
    mental barrier, Ulcen's after his thrust. Undone with the round, that refresh would
    tell the choices pending again, so it is masked as the round is, and shown again
    with it."""
    eid = await _revised_duel(rpc)
    await rpc.ok("encounter.declare", _declare(eid, "ulcen", SECRET_ATTACK))
    await rpc.ok("encounter.declare", _declare(eid, "fenka", SECRET_DEFENSE))
    resolved = await rpc.ok("encounter.resolve", {"id": eid, "seed": 1})
    sheet = next(c["after"] for c in resolved["changes"] if c["id"] == "fenka")
    assert sheet["psp"] < FENKA["psp"]
    await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": "fenka",
                                       "combatant": {**sheet, "hp": 3}})
    await rpc.ok("encounter.undo", {"id": eid})
    steps = (await rpc.ok("encounter.log", {"id": eid}))["steps"]
    assert [s["kind"] for s in steps[4:]] == ["resolve", "refresh", "undo"]
    refresh = steps[5]
    assert (refresh["hidden"], refresh["result"], refresh["undone_by"]) == (True, None, 7)
    assert refresh["params"] == {"combatant_id": "fenka"}
    assert '"psp":' + str(sheet["psp"]) not in json.dumps(steps[2:], separators=(",", ":"))
    await rpc.ok("encounter.resolve", {"id": eid, "seed": 2})
    steps = (await rpc.ok("encounter.log", {"id": eid}))["steps"]
    assert "hidden" not in steps[5] and steps[5]["params"]["combatant"]["hp"] == 3


async def test_a_choice_changed_after_an_undo_keeps_the_undone_round_hidden(
        rpc: Rpc) -> None:
    """The defender changes its mind after the undo: the undone round used a choice no
    round in effect ever used, so it stays hidden for good (and so does that choice)."""
    eid = await _revised_duel(rpc)
    await rpc.ok("encounter.declare", _declare(eid, "ulcen", SECRET_ATTACK))
    await rpc.ok("encounter.declare", _declare(eid, "fenka", SECRET_DEFENSE))
    await rpc.ok("encounter.resolve", {"id": eid, "seed": 1})
    await rpc.ok("encounter.undo", {"id": eid})
    await rpc.ok("encounter.declare", _declare(eid, "fenka", {"defense": None}))
    await rpc.ok("encounter.resolve", {"id": eid, "seed": 2})
    steps = (await rpc.ok("encounter.log", {"id": eid}))["steps"]
    assert steps[2]["params"]["choice"] == SECRET_ATTACK  # used by the round in effect
    assert steps[3]["params"] == {"combatant_id": "fenka", "choice": None, "hidden": True}
    assert steps[4]["hidden"] is True and steps[4]["result"] is None
    assert steps[6]["params"]["choice"] == {"defense": None}


async def test_a_replaced_declaration_is_never_shown(rpc: Rpc) -> None:
    """A combatant that declares again replaces its choice: the first one was never used,
    so resolving the round shows only the second (a bluff or a change of mind stays
    private)."""
    eid = await _revised_duel(rpc)
    await rpc.ok("encounter.declare", _declare(eid, "ulcen", {
        "attack": {"mode": "mind-thrust", "multiplier": 3, "range": "long",
                   "target": "fenka"}}))
    await rpc.ok("encounter.declare", _declare(eid, "ulcen", SECRET_ATTACK))
    await rpc.ok("encounter.declare", _declare(eid, "fenka", SECRET_DEFENSE))
    await rpc.ok("encounter.resolve", {"id": eid, "seed": 1})
    steps = (await rpc.ok("encounter.log", {"id": eid}))["steps"]
    assert steps[2]["params"] == {"combatant_id": "ulcen", "choice": None, "hidden": True}
    assert steps[3]["params"]["choice"] == SECRET_ATTACK
    assert steps[4]["params"]["choice"] == SECRET_DEFENSE
    assert '"long"' not in json.dumps(steps[2:])


async def test_a_defense_the_rules_threw_away_is_never_shown(rpc: Rpc) -> None:
    """power-pool: an attacker that declares again starts the defenses over, so a
    defense declared against the first attack was never used and stays hidden."""
    ulcen, fenka, attack = HIDDEN_CASES["power-pool"]
    eid = (await rpc.ok("encounter.create", {"system": "power-pool"}))["id"]
    for combatant in (ulcen, fenka):
        await rpc.ok("encounter.add", {"id": eid, "combatant": combatant})
    await rpc.ok("encounter.declare", _declare(eid, "ulcen", attack))
    await rpc.ok("encounter.declare", _declare(eid, "fenka", {
        "defense": {"mode": "blank-mind"}}))
    await rpc.ok("encounter.declare", _declare(eid, "ulcen", attack))
    await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 4})
    steps = (await rpc.ok("encounter.log", {"id": eid}))["steps"]
    assert [s["params"].get("hidden") for s in steps[2:5]] == [True, True, None]
    assert steps[3]["params"] == {"combatant_id": "fenka", "choice": None, "hidden": True}


async def test_a_system_that_does_not_give_its_pending_choices_gets_the_coarser_mask(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without ``encounter_pending_choices`` a declaration shows once any round in effect
    followed it, and an undone round's dice and result never show."""
    system = rpc.client.server.app[SERVICES].systems["sample-duel"]
    monkeypatch.setattr(system, "encounter_pending_choices", lambda state: None)
    eid = await _duel(rpc)
    await rpc.ok("encounter.declare", _declare(eid, "ann", {
        "attack": {"mode": "jab", "target": "bob"}}))
    await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 1})
    await rpc.ok("encounter.undo", {"id": eid})
    steps = (await rpc.ok("encounter.log", {"id": eid}))["steps"]
    assert steps[2]["params"]["hidden"] is True
    assert steps[3]["hidden"] is True and steps[3]["result"] is None
    await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 1})
    steps = (await rpc.ok("encounter.log", {"id": eid}))["steps"]
    assert steps[2]["params"]["choice"]["attack"]["mode"] == "jab"
    assert steps[3]["hidden"] is True


async def test_the_coarser_mask_hides_a_choice_an_undo_took_away_for_good(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """API.md encounter.log: "A choice that no resolve in effect ever used stays hidden
    for good: ... one an undo took away", also without ``encounter_pending_choices``:
    Bob's choice declared after a round that was then undone is hidden, though a later
    round is in effect."""
    system = rpc.client.server.app[SERVICES].systems["sample-duel"]
    monkeypatch.setattr(system, "encounter_pending_choices", lambda state: None)
    eid = await _duel(rpc)
    await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 1})  # 3
    await rpc.ok("encounter.declare", _declare(eid, "bob", {
        "attack": {"mode": "jab", "target": "ann"}}))  # 4
    await rpc.ok("encounter.undo", {"id": eid})  # 5: takes 3 and 4 away
    await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 1})  # 6
    steps = (await rpc.ok("encounter.log", {"id": eid}))["steps"]
    assert [(s["kind"], s["undone_by"]) for s in steps[2:]] == [
        ("resolve", 5), ("declare", 5), ("undo", None), ("resolve", None)]
    assert steps[3]["params"] == {"combatant_id": "bob", "choice": None, "hidden": True}


async def test_the_log_of_a_system_no_longer_installed_still_hides_pending_choices(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """API.md encounter.log: a declaration is hidden until a resolve in effect used it.
    The log of an encounter whose system is no longer installed stays readable, with
    the coarser mask: Ann's resolved choice shows, Bob's pending one does not."""
    eid = await _duel(rpc)
    await rpc.ok("encounter.declare", _declare(eid, "ann", {
        "attack": {"mode": "jab", "target": "bob"}}))  # 3
    await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 1})  # 4
    await rpc.ok("encounter.declare", _declare(eid, "bob", {
        "attack": {"mode": "jab", "target": "ann"}}))  # 5
    monkeypatch.delitem(rpc.client.server.app[SERVICES].systems, "sample-duel")
    steps = (await rpc.ok("encounter.log", {"id": eid}))["steps"]
    assert steps[2]["params"]["choice"] == {"attack": {"mode": "jab", "target": "bob"}}
    assert steps[4]["params"] == {"combatant_id": "bob", "choice": None, "hidden": True}


async def test_an_encounter_of_a_system_no_longer_installed_is_invalid_params_at_id(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """An encounter whose system is no longer installed is read and changed no more:
    -32602 at /id (the encounter given), naming the system it needs and those known."""
    eid = await _duel(rpc)
    monkeypatch.delitem(rpc.client.server.app[SERVICES].systems, "sample-duel")
    for method in ("encounter.get", "encounter.resolve"):
        error = await rpc.error(method, {"id": eid})
        assert error["code"] == -32602, method
        assert error["data"]["errors"] == [{
            "path": "/id", "message": 'unknown system "sample-duel"; known: '
                                      '["combat-strength", "power-pool", "revised-2e"]'}]


async def test_every_creature_a_choice_names_must_be_in_the_encounter(rpc: Rpc) -> None:
    """API.md "Errors": 4004 for an unknown combatant, also as an ally or a creature to
    release; a malformed ``attacks`` is -32602, not a fault."""
    ulcen, fenka, _ = HIDDEN_CASES["power-pool"]
    eid = (await rpc.ok("encounter.create", {"system": "power-pool"}))["id"]
    for combatant in (ulcen, fenka):
        await rpc.ok("encounter.add", {"id": eid, "combatant": combatant})
    for choice in ({"release": "ghost"}, {"keep": {"target": "ghost", "by": "die"}},
                   {"attack": {"mode": "mental-stab", "target": "fenka",
                               "targets": ["ghost"]}}):
        error = await rpc.error("encounter.declare", _declare(eid, "ulcen", choice))
        assert (error["code"], error["data"]) == (4004, {"id": "ghost"}), choice
    for attacks in (-1, True, {"mode": "x"}):
        error = await rpc.error("encounter.declare", _declare(eid, "ulcen",
                                                              {"attacks": attacks}))
        assert error["code"] == -32602, attacks
    assert (await rpc.ok("encounter.get", {"id": eid}))["revision"] == 2


async def test_whole_numbers_written_as_2_0_count_dice(rpc: Rpc) -> None:
    """JSON Schema's ``integer`` accepts 2.0: such a pool must roll, not fault, and the
    encounter it is stored in must still resolve."""
    ulcen, fenka, attack = HIDDEN_CASES["power-pool"]
    eid = (await rpc.ok("encounter.create", {"system": "power-pool"}))["id"]
    body = json.dumps({"jsonrpc": "2.0", "method": "encounter.add", "id": 1, "params": {
        "id": eid, "combatant": {**ulcen, "hit_dice": 8}}}).replace('"hit_dice": 8',
                                                                    '"hit_dice": 8.0')
    assert "8.0" in body
    response = await rpc.client.post("/rpc", data=body, headers=rpc.auth)
    assert "result" in await response.json()
    await rpc.ok("encounter.add", {"id": eid, "combatant": fenka})
    await rpc.ok("encounter.declare", _declare(eid, "ulcen", attack))
    step = await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 5})
    assert step["revision"] == 4
    state = await rpc.ok("encounter.get", {"id": eid})
    assert type(state["combatants"]["ulcen"]["hit_dice"]) is int


_DUEL_CHOICES = ({"attack": {"mode": "jab", "target": "bob"}},
                 {"attack": {"mode": "jab", "target": "ann"}},
                 {"defense": {"mode": "guard"}}, {})


async def _play(rpc: Rpc, ops: list[tuple[str, Any]]) -> list[dict[str, Any]]:
    """Play ``ops`` on a new sample-duel encounter; its log without the times."""
    eid = await _duel(rpc)
    for op, arg in ops:
        if op == "declare":
            await rpc.ok("encounter.declare", _declare(eid, *arg))
        elif op == "resolve":
            await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": arg})
        else:
            await rpc.call("encounter.undo", {"id": eid})  # 4001 when nothing is left
    steps = (await rpc.ok("encounter.log", {"id": eid}))["steps"]
    return [{k: v for k, v in s.items() if k != "created_at"} for s in steps]


@pytest.mark.parametrize("seed", range(16))
async def test_the_log_says_nothing_of_a_hidden_choice_whatever_happened_around_it(
        rpc: Rpc, seed: int) -> None:
    """Differential check of encounter.log's masking over random histories of declares,
    resolves and undos: changing the choice of any declaration the log hides (pending,
    pending again after an undo, replaced, taken away by an undo) must not change one
    byte of the log, undone rounds' dice and results included."""
    import random
    rng = random.Random(seed)
    ops: list[tuple[str, Any]] = []
    for n in range(rng.randint(4, 16)):
        kind = rng.choice(["declare", "declare", "declare", "resolve", "undo"])
        if kind == "declare":
            ops.append(("declare", (rng.choice(["ann", "bob"]),
                                    rng.choice(_DUEL_CHOICES[:3]))))
        else:
            ops.append((kind, n))
    ops.append(("declare", ("ann", _DUEL_CHOICES[0])))
    log = await _play(rpc, ops)
    declare_ops = [i for i, (op, _) in enumerate(ops) if op == "declare"]
    declares = [s for s in log if s["kind"] == "declare"]
    hidden = [(i, s) for i, s in zip(declare_ops, declares, strict=True)
              if s["params"].get("hidden")]
    assert hidden, "the last op declares, so something is hidden"
    for i, step in hidden:
        combatant, original = ops[i][1]
        other = next(c for c in _DUEL_CHOICES if c != original)
        changed = [*ops[:i], ("declare", (combatant, other)), *ops[i + 1:]]
        assert await _play(rpc, changed) == log, step["revision"]


async def test_two_unlinked_tokens_of_one_foundry_actor_join_as_two_combatants(
        rpc: Rpc) -> None:
    """Three goblin tokens of one actor are three creatures (docs/FOUNDRY.md)."""
    aboleth = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "foundry"
                          / "dnd5e" / "aboleth.json").read_text())
    eid = (await rpc.ok("encounter.create", {"system": "power-pool"}))["id"]
    ids = []
    for token in ("tokA", "tokB"):
        added = await rpc.ok("encounter.add", {"id": eid, "combatant": {
            "adapter": "foundry.dnd5e",
            "data": {"actor": aboleth, "token": {"uuid": f"Scene.s1.Token.{token}",
                                                 "actorLink": False}}}})
        ids.append(added["combatant_id"])
    assert ids[0] != ids[1] and all(i.startswith(aboleth["_id"]) for i in ids)


async def test_a_system_that_resolves_a_list_of_results_is_answered_with_them(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """API.md: encounter.resolve answers "the resolved step (same shape as an exchange
    result, or a list of them) and revision"."""
    system = rpc.client.server.app[SERVICES].systems["sample-duel"]
    resolve = system.encounter_resolve

    def as_list(state: Any, dice: Any, force: bool = False) -> Any:
        new_state, step = resolve(state, dice, force)
        return new_state, list(step["exchanges"])

    monkeypatch.setattr(system, "encounter_resolve", as_list)
    eid = await _duel(rpc)
    await rpc.ok("encounter.declare", _declare(eid, "ann", {
        "attack": {"mode": "jab", "target": "bob"}}))
    answer = await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 1})
    assert answer["revision"] == 4 and answer["updates"] == []
    assert [r["attacker"] for r in answer["results"]] == ["ann"]
    assert (await rpc.ok("encounter.log", {"id": eid}))["steps"][-1]["kind"] == "resolve"


async def test_a_step_that_is_neither_an_object_nor_a_list_is_a_fault_and_stores_nothing(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """API.md encounter.resolve: the answer is the resolved step, an object or a list of
    them, and "an error answer always means nothing was stored". A plugin's step of any
    other kind (text) is a fault (-32603), answered before anything is stored."""
    system = rpc.client.server.app[SERVICES].systems["sample-duel"]
    resolve = system.encounter_resolve

    def as_text(state: Any, dice: Any, force: bool = False) -> Any:
        return resolve(state, dice, force)[0], "ann jabs at bob"

    monkeypatch.setattr(system, "encounter_resolve", as_text)
    eid = await _duel(rpc)
    error = await rpc.error("encounter.resolve", {"id": eid, "force": True, "seed": 1})
    assert error["code"] == -32603
    assert (await rpc.ok("encounter.get", {"id": eid}))["revision"] == 2


def _sheet_ulcen() -> Any:
    return json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "roll20"
                       / "adnd2e-revised-ulcen.handmade.json").read_text())


async def _ulcen_attacks_fenka(rpc: Rpc) -> tuple[str, str]:
    eid = (await rpc.ok("encounter.create", {"system": "revised-2e"}))["id"]
    ulcen = (await rpc.ok("encounter.add", {"id": eid, "combatant": {
        "adapter": "roll20.adnd2e-revised", "data": _sheet_ulcen()}}))["combatant_id"]
    await rpc.ok("encounter.add", {"id": eid, "combatant": FENKA})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": ulcen, "choice": {
        "attack": {"mode": "mind-thrust", "target": "fenka", "multiplier": 1}}})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "fenka",
                                       "choice": {"defense": None}})
    return eid, ulcen


async def test_a_resolve_whose_write_back_fails_is_still_answered_as_done(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """The step is stored before its write-back is made: once stored, the answer says it
    is done, and that the write-back failed (an error id for the log), never an error
    (which would tell the client that nothing happened)."""
    eid, _ = await _ulcen_attacks_fenka(rpc)
    before = await rpc.ok("encounter.get", {"id": eid})
    adapter = rpc.client.server.app[SERVICES].adapters["roll20.adnd2e-revised"]

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("write-back exploded")

    monkeypatch.setattr(adapter, "updates", broken)
    step = await rpc.ok("encounter.resolve", {"id": eid, "seed": 2})
    assert step["revision"] == before["revision"] + 1 and step["updates"] == []
    assert set(step["updates_failed"]) == {"error_id"} and "exploded" not in json.dumps(step)
    assert (await rpc.ok("encounter.get", {"id": eid}))["revision"] == step["revision"]


async def test_an_undo_whose_write_back_fails_is_still_answered_as_done(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """The undo is stored before its write-back is made: the answer says it is done, and
    that the write-back failed (with an error id for the log), never an error."""
    eid, _ = await _ulcen_attacks_fenka(rpc)
    step = await rpc.ok("encounter.resolve", {"id": eid, "seed": 2})
    adapter = rpc.client.server.app[SERVICES].adapters["roll20.adnd2e-revised"]

    def broken(*_args: Any, **_kwargs: Any) -> Any:
        raise RuntimeError("write-back exploded")

    monkeypatch.setattr(adapter, "updates", broken)
    undone = await rpc.ok("encounter.undo", {"id": eid})
    assert undone["revision"] == step["revision"] + 1 and undone["updates"] == []
    assert set(undone["updates_failed"]) == {"error_id"}
    assert (await rpc.ok("encounter.get", {"id": eid}))["revision"] == undone["revision"]


async def test_a_public_action_answers_with_the_write_backs_it_makes(rpc: Rpc) -> None:
    """A release frees the puppet and gives the controller its die back at once: the
    answer writes that to both sheets (else the refresh before the next resolve would
    take the stale sheets back and lose it). A secret choice's answer writes nothing."""
    eid = (await rpc.ok("encounter.create", {"system": "power-pool"}))["id"]
    for ref, name in (("-Ma", "Athas"), ("-Mb", "Borys")):
        await rpc.ok("encounter.add", {"id": eid, "combatant": pool_sheet(ref, name)})
    secret = await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "-Ma", "choice": {
        "attack": {"mode": "mental-stab", "target": "-Mb", "keep_by": "die"}}})
    assert secret["updates"] == []
    passed = await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "-Mb",
                                                "choice": {"defense": {}}})
    assert passed["updates"] == []
    won = await rpc.ok("encounter.resolve", {"id": eid, "dice": {"attack": [8, 8, 8],
                                                                 "defense": [1, 1, 1]}})
    assert written_attributes(won["updates"])[("-Mb", "psi_controlled_by")] == "-Ma"
    released = await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "-Ma",
                                                  "choice": {"release": "-Mb"}})
    assert set(released) == {"revision", "waiting_for", "updates", "events", "summary"}
    written = written_attributes(released["updates"])
    assert written[("-Mb", "psi_controlled_by")] == ""
    assert written[("-Ma", "psi_controlling")] == "[]"
    view = await rpc.ok("encounter.get", {"id": eid})
    assert view["combatants"]["-Mb"]["controlled_by"] is None
    # A rest (H-PP-RECOVERY) fills Borys's pool, emptied while he was controlled.
    rested = await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "-Mb",
                                                "choice": {"rest": True}})
    assert written_attributes(rested["updates"])[("-Mb", "psi_pool")] == 3


async def test_an_attack_on_a_dead_mind_is_4001_target_dead_and_stores_nothing(
        rpc: Rpc) -> None:
    """API.md 4001: "target dead (combat-strength `target-dead`)", with `combatant` the
    creature the refusal is about; a refused write changes nothing. Table B letter K: the
    condition `dead`, marked `kills`."""
    ann = {"id": "ann", "name": "Ann", "attack_strength": 60, "defense_strength": 60}
    bo = {"id": "bo", "name": "Bo", "attack_strength": 30, "defense_strength": 30,
          "conditions": ["dead"]}
    error = await rpc.error("exchange.resolve", {
        "system": "combat-strength", "attacker": ann, "defender": bo,
        "attack": {"mode": "mind-thrust"}, "seed": 1})
    assert error["code"] == 4001 and error["data"] == {
        "rule": "target-dead", "combatant": "bo",
        "detail": "Bo is dead: there is no mind left to attack (/defender)"}
    eid = (await rpc.ok("encounter.create", {"system": "combat-strength"}))["id"]
    for combatant in (ann, bo):
        await rpc.ok("encounter.add", {"id": eid, "combatant": combatant})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "ann",
                                       "choice": {"stance": "trance"}})
    intent = await rpc.ok("encounter.resolve", {"id": eid})
    assert intent["summary"] == ("Round 1, intent: Ann enters a psychic trance "
                                 "(Combat Strength 120); Bo is dead.")
    log_before = await rpc.ok("encounter.log", {"id": eid})
    error = await rpc.error("encounter.declare", {
        "id": eid, "combatant_id": "ann",
        "choice": {"attack": {"mode": "mind-thrust", "target": "bo"}}})
    assert error["code"] == 4001 and error["data"] == {
        "rule": "target-dead", "combatant": "bo",
        "detail": "Bo is dead: there is no mind left to attack (/choice/attack/target)"}
    assert await rpc.ok("encounter.log", {"id": eid}) == log_before


async def test_undo_with_nothing_resolved_is_4001_naming_the_rule(rpc: Rpc) -> None:
    """docs/API.md "Errors": undo with nothing to undo is 4001
    `undo-needs-a-resolved-step`."""
    created = await rpc.ok("encounter.create", {"system": "sample-duel"})
    assert await rpc.error("encounter.undo", {"id": created["id"]}) == {
        "code": 4001, "message": "The rules forbid it",
        "data": {"rule": "undo-needs-a-resolved-step",
                 "detail": "the encounter has no resolved step left to undo"}}


# -- whole rounds worked by hand from RULES.md, then driven through the daemon ---------

def _public(view: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in view.items() if k != "revision"}


async def _undo_and_redo_match(rpc: Rpc, eid: str, dice: dict[str, list[int]]) -> None:
    """Resolve with `dice`, undo, check `get` is as before; resolve again, check `get` is
    as after the first resolve (API.md: 'undo reverts the last resolved step exactly')."""
    before = _public(await rpc.ok("encounter.get", {"id": eid}))
    await rpc.ok("encounter.resolve", {"id": eid, "dice": dice})
    after = _public(await rpc.ok("encounter.get", {"id": eid}))
    await rpc.ok("encounter.undo", {"id": eid})
    assert _public(await rpc.ok("encounter.get", {"id": eid})) == before
    await rpc.ok("encounter.resolve", {"id": eid, "dice": dice})
    assert _public(await rpc.ok("encounter.get", {"id": eid})) == after


async def test_revised_2e_rounds_of_a_critical_opening_a_paid_close_and_a_zero_psp_lock(
        rpc: Rpc) -> None:
    """RULES.md §1.4-1.5 over four rounds. Ulcen MTHAC0 17, Fenka 18; both MAC 10."""
    eid = (await rpc.ok("encounter.create", {"system": "revised-2e"}))["id"]
    for combatant in (ULCEN, FENKA):
        await rpc.ok("encounter.add", {"id": eid, "combatant": combatant})

    async def declare(ulcen: dict[str, Any], fenka: dict[str, Any]) -> None:
        for cid, choice in (("ulcen", ulcen), ("fenka", fenka)):
            await rpc.ok("encounter.declare", {"id": eid, "combatant_id": cid,
                                               "choice": choice})

    async def state() -> tuple[int, dict[str, Any]]:
        view = await rpc.ok("encounter.get", {"id": eid})
        return view["round"], {cid: (c["psp"], c["mind"]["state"], c["mind"]["opened_by"],
                                     c["mind"]["locked_rounds"])
                               for cid, c in view["combatants"].items()}

    def thrust(target: str, m: int) -> dict[str, Any]:
        return {"mode": "mind-thrust", "target": target, "multiplier": m}

    # round 1: needs 7; 12 − 2 (vs mental barrier) hits for 3 + 2. Fenka pays 5 for the
    # barrier, Ulcen 4 for the hit
    await declare({"attack": thrust("fenka", 2)}, {"defense": {"mode": "mental-barrier"}})
    await rpc.ok("encounter.resolve", {"id": eid, "dice": {"attack": [12],
                                                           "damage": [3, 2]}})
    assert await state() == (2, {"ulcen": (36, "closed", None, 0),
                                 "fenka": (20, "closed", None, 0)})
    # round 2: Fenka needs 8; natural 19 + 3 (vs thought shield) beats it by 5 or more, a
    # critical hit; 12 damage is at least a quarter of Ulcen's 40, so his mind opens
    # without a save. Both defenses are paid again in the new round
    await declare({"defense": {"mode": "thought-shield"}},
                  {"attack": thrust("ulcen", 3), "defense": {"mode": "mental-barrier"}})
    await _undo_and_redo_match(rpc, eid, {"attack": [19], "damage": [4, 4, 4]})
    assert await state() == (3, {"ulcen": (22, "open", "critical", 0),
                                 "fenka": (9, "closed", None, 0)})
    offer = (await rpc.ok("encounter.get", {"id": eid}))["close_offers"]["ulcen"]
    assert (offer["cost"], offer["defense"]) == (4, "thought-shield")
    # round 3: Ulcen pays 2 × thought shield to close, then 2 for the shield; Fenka hits
    # a closed mind (10 + 3 ≥ 8) for 2
    await declare({"close": True, "defense": {"mode": "thought-shield"}},
                  {"attack": thrust("ulcen", 1)})
    await rpc.ok("encounter.resolve", {"id": eid, "dice": {"attack": [10], "damage": [2]}})
    assert await state() == (4, {"ulcen": (14, "closed", None, 0),
                                 "fenka": (7, "closed", None, 0)})
    # round 4: 16 damage takes Fenka to 0 PSPs: locked open 1d4+1 = 4 rounds
    await declare({"attack": thrust("fenka", 4)}, {})
    await rpc.ok("encounter.resolve", {"id": eid, "dice": {
        "attack": [10], "damage": [4, 4, 4, 4], "open-duration": [3]}})
    assert await state() == (5, {"ulcen": (6, "closed", None, 0),
                                 "fenka": (0, "open", "zero-psp", 4)})


async def test_combat_strength_segments_of_a_defended_and_a_defenseless_mind(
        rpc: Rpc) -> None:
    """RULES.md §2.3-2.6: a simultaneous segment where Ann, raising no defense, is read
    on the defenseless table and its overflow takes her attack strength; then a segment
    undone and resolved again."""
    eid = (await rpc.ok("encounter.create", {"system": "combat-strength"}))["id"]
    for cid, attack, defense in (("ann", 30, 20), ("cy", 40, 60)):
        await rpc.ok("encounter.add", {"id": eid, "combatant": {
            "id": cid, "name": cid.title(), "attack_strength": attack,
            "defense_strength": defense, "attacks": ["mind-thrust", "ego-whip"],
            "defenses": ["mental-barrier", "shield-thoughts"]}})
        await rpc.ok("encounter.declare", {"id": eid, "combatant_id": cid,
                                           "choice": {"stance": "trance"}})
    await rpc.ok("encounter.resolve", {"id": eid})

    async def strengths() -> tuple[int, dict[str, tuple[int, int]]]:
        view = await rpc.ok("encounter.get", {"id": eid})
        return view["segment"], {cid: (c["attack_strength"], c["defense_strength"])
                                 for cid, c in view["combatants"].items()}

    def whip(mode: str, target: str) -> dict[str, Any]:
        return {"mode": mode, "target": target, "range": "short"}

    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "ann", "choice": {
        "attack": whip("ego-whip", "cy")}})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "cy", "choice": {
        "attack": whip("ego-whip", "ann"), "defense": {"mode": "mental-barrier"}}})
    # Ann on Cy's barrier: table 0 + 2d6 (Combat Strength 50) = 3. Cy on Ann, who raised
    # none: attack strength 26-50 against an original total up to 59 is 35 points, 20
    # of defense and 15 of attack; each pays 7 for the ego whip
    await rpc.ok("encounter.resolve", {"id": eid, "dice": {"damage": [1, 2]}})
    assert await strengths() == (2, {"ann": (8, 0), "cy": (33, 57)})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "ann", "choice": {
        "attack": whip("mind-thrust", "cy")}})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "cy", "choice": {
        "defense": {"mode": "mental-barrier"}}})
    # mind thrust on mental barrier is 0, and Combat Strength 8 gives no bonus dice
    await _undo_and_redo_match(rpc, eid, {})
    assert await strengths() == (3, {"ann": (4, 0), "cy": (33, 57)})


async def test_power_pool_an_attack_on_a_puppet_strikes_its_controller_who_keeps_it(
        rpc: Rpc) -> None:
    """RULES.md §3.2-3.4: control kept by a die outlasts the round; an attack on the
    puppet strikes the controller; the rebuffed attacker loses a die and is stunned
    through the next round; a release gives the die back."""
    eid = (await rpc.ok("encounter.create", {"system": "power-pool"}))["id"]
    modes = {"attacks": ["mental-stab"], "defenses": ["pinnacle-of-will"]}
    for combatant in ({"id": "ulcen", "name": "Ulcen", "hit_dice": 3, "die": 6, **modes},
                      {"id": "fenka", "name": "Fenka", "hit_dice": 2, "die": 6, **modes},
                      {"id": "gob", "name": "Gob", "hit_dice": 2, "die": 8,
                       "psionic": False}):
        await rpc.ok("encounter.add", {"id": eid, "combatant": combatant})

    async def declare(cid: str, choice: dict[str, Any]) -> dict[str, Any]:
        return await rpc.ok("encounter.declare", {"id": eid, "combatant_id": cid,
                                                  "choice": choice})

    async def pools() -> tuple[int, list[str], dict[str, Any]]:
        view = await rpc.ok("encounter.get", {"id": eid})
        return view["round"], view["waiting_for"], {
            cid: (c["pool"], len(c["dedicated"]), c["controlled_by"], c["condition_rounds"])
            for cid, c in view["combatants"].items()}

    # 3d10 (mental stab: d6 two steps up) for 18 against Gob's 2d8 for 5
    await declare("ulcen", {"attack": {"mode": "mental-stab", "target": "gob",
                                       "keep_by": "die"}})
    await declare("gob", {"defense": {}})
    await rpc.ok("encounter.resolve", {"id": eid, "dice": {"attack": [6, 6, 6],
                                                           "defense": [2, 3]}})
    assert await pools() == (1, ["fenka"], {
        "ulcen": (2, 1, None, {"dazed": 1}), "fenka": (2, 0, None, {}),
        "gob": (0, 0, "ulcen", {})})
    # Fenka's 2d10 for 10 strikes Ulcen, whose 2d8 (pinnacle of will) make 16
    view = await declare("fenka", {"attack": {"mode": "mental-stab", "target": "gob"}})
    assert view["waiting_for"] == ["ulcen"]
    await declare("ulcen", {"defense": {"mode": "pinnacle-of-will"}})
    await _undo_and_redo_match(rpc, eid, {"attack": [5, 5], "defense": [8, 8]})
    assert await pools() == (2, ["ulcen"], {
        "ulcen": (2, 1, None, {}), "fenka": (1, 0, None, {"stunned": 1}),
        "gob": (0, 0, "ulcen", {})})
    await declare("ulcen", {"release": "gob"})
    assert await pools() == (2, ["ulcen"], {
        "ulcen": (3, 0, None, {}), "fenka": (1, 0, None, {"stunned": 1}),
        "gob": (2, 0, None, {})})
