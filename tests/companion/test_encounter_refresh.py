"""encounter.refresh: a combatant taken again from its sheet during an encounter, so
that changes made outside it (hit points from a sword, PSPs spent on a power) are not
overwritten by the encounter's next write-back."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from companion.keys import SERVICES

from .combatants import FENKA, duelist
from .conftest import Rpc

SHEET = Path(__file__).resolve().parent.parent / "fixtures" / "roll20" / \
    "adnd2e-revised-ulcen.handmade.json"


def _sheet(**attributes: str) -> Any:
    """Ulcen's Roll20 sheet with some attributes' current values changed."""
    sheet = json.loads(SHEET.read_text())
    for row in sheet["attribs"]:
        if row["name"] in attributes:
            row["current"] = attributes[row["name"]]
    return sheet


async def _encounter(rpc: Rpc) -> tuple[str, str]:
    eid = str((await rpc.ok("encounter.create", {"system": "revised-2e"}))["id"])
    ulcen = (await rpc.ok("encounter.add", {"id": eid, "combatant": {
        "adapter": "roll20.adnd2e-revised", "data": _sheet()}}))["combatant_id"]
    await rpc.ok("encounter.add", {"id": eid, "combatant": FENKA})
    return eid, str(ulcen)


async def _round(rpc: Rpc, eid: str, ulcen: str, seed: int) -> dict[str, Any]:
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": ulcen, "choice": {
        "attack": {"mode": "mind-thrust", "target": "fenka", "multiplier": 1}}})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "fenka",
                                       "choice": {"defense": None}})
    result: dict[str, Any] = await rpc.ok("encounter.resolve", {"id": eid, "seed": seed})
    return result


async def test_a_sheet_changed_outside_the_encounter_is_taken_again(rpc: Rpc) -> None:
    """Ulcen (40 PSPs, 22 hp) spends 10 PSPs on a power and takes a sword blow outside
    the encounter. Refreshed, the encounter holds 30 PSPs and 15 hp, and its next
    write-back spends the attack's PSPs from 30, not from 40."""
    eid, ulcen = await _encounter(rpc)
    refreshed = await rpc.ok("encounter.refresh", {
        "id": eid, "combatant_id": ulcen,
        "combatant": {"adapter": "roll20.adnd2e-revised", "data": _sheet(PSP="30", HP="15")}})
    assert refreshed["changed"] == ["hp", "psp"] and refreshed["revision"] == 3
    assert refreshed["combatant_id"] == ulcen
    view = await rpc.ok("encounter.get", {"id": eid})
    assert (view["combatants"][ulcen]["psp"], view["combatants"][ulcen]["hp"]) == (30, 15)
    step = await _round(rpc, eid, ulcen, seed=2)
    [update] = step["updates"]
    [change] = [c for c in step["changes"] if c["id"] == ulcen]
    assert change["before"]["psp"] == 30
    assert update["attributes"]["PSP"]["current"] == change["after"]["psp"] < 30
    log = await rpc.ok("encounter.log", {"id": eid})
    refresh = log["steps"][2]
    assert refresh["kind"] == "refresh"
    assert refresh["params"]["combatant_id"] == ulcen
    assert refresh["result"]["changed"] == ["hp", "psp"]


async def test_a_declared_choice_the_refreshed_sheet_no_longer_allows_is_dropped(
        rpc: Rpc) -> None:
    """A declaration is checked again when its combatant is taken again: one the sheet
    still allows stays; a ×4 mind thrust (8 PSPs) from a sheet now holding 3 PSPs is
    dropped, and the encounter waits for Ulcen's new choice."""
    eid, ulcen = await _encounter(rpc)
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": ulcen, "choice": {
        "attack": {"mode": "mind-thrust", "target": "fenka", "multiplier": 4}}})
    kept = await rpc.ok("encounter.refresh", {
        "id": eid, "combatant_id": ulcen,
        "combatant": {"adapter": "roll20.adnd2e-revised", "data": _sheet(PSP="30")}})
    assert kept["dropped_choices"] == []
    assert (await rpc.ok("encounter.get", {"id": eid}))["waiting_for"] == ["fenka"]
    dropped = await rpc.ok("encounter.refresh", {
        "id": eid, "combatant_id": ulcen,
        "combatant": {"adapter": "roll20.adnd2e-revised", "data": _sheet(PSP="3")}})
    assert dropped["dropped_choices"] == [ulcen] and dropped["changed"] == ["psp"]
    assert (await rpc.ok("encounter.get", {"id": eid}))["waiting_for"] == [ulcen, "fenka"]
    log = await rpc.ok("encounter.log", {"id": eid})
    assert log["steps"][-1]["result"]["dropped_choices"] == [ulcen]
    assert "mind-thrust" not in json.dumps(log["steps"][-1])


async def test_undoing_the_resolve_before_a_refresh_takes_it_away(rpc: Rpc) -> None:
    eid, ulcen = await _encounter(rpc)
    first = await _round(rpc, eid, ulcen, seed=2)
    spent = first["updates"][0]["attributes"]["PSP"]["current"]
    await rpc.ok("encounter.refresh", {
        "id": eid, "combatant_id": ulcen,
        "combatant": {"adapter": "roll20.adnd2e-revised",
                      "data": _sheet(PSP=str(spent - 5))}})
    undone = await rpc.ok("encounter.undo", {"id": eid})
    assert undone["updates"][0]["attributes"]["PSP"]["current"] == 40
    log = await rpc.ok("encounter.log", {"id": eid})
    assert [s["undone_by"] is not None for s in log["steps"] if s["kind"] == "refresh"] == \
        [True]


async def test_a_plain_combatant_object_may_be_given_too(rpc: Rpc) -> None:
    eid, ulcen = await _encounter(rpc)
    tired = {**FENKA, "id": "someone-else", "psp": 12}
    refreshed = await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": "fenka",
                                                   "combatant": tired})
    assert refreshed["changed"] == ["psp"]
    view = await rpc.ok("encounter.get", {"id": eid})
    assert sorted(view["combatants"]) == sorted(["fenka", ulcen])
    assert view["combatants"]["fenka"]["psp"] == 12


async def test_refresh_refusals_change_nothing(rpc: Rpc) -> None:
    eid, ulcen = await _encounter(rpc)
    before = await rpc.ok("encounter.log", {"id": eid})
    unknown = await rpc.error("encounter.refresh", {"id": eid, "combatant_id": "nobody",
                                                    "combatant": FENKA})
    assert unknown["code"] == 4004
    stale = await rpc.error("encounter.refresh", {"id": eid, "combatant_id": "fenka",
                                                  "combatant": FENKA, "revision": 1})
    assert stale["code"] == 4009
    bad = await rpc.error("encounter.refresh", {"id": eid, "combatant_id": "fenka",
                                                "combatant": {**FENKA, "psp": 99}})
    assert bad["code"] == -32602
    assert [e["path"] for e in bad["data"]["errors"]] == ["/combatant/psp"]
    sheet = _sheet(PSP="50")
    wrong = await rpc.error("encounter.refresh", {
        "id": eid, "combatant_id": ulcen,
        "combatant": {"adapter": "roll20.adnd2e-revised", "data": sheet}})
    assert wrong["code"] == -32602
    assert copy.deepcopy(await rpc.ok("encounter.log", {"id": eid})) == before


async def test_a_system_whose_round_logic_cannot_refresh_says_so(rpc: Rpc) -> None:
    eid = (await rpc.ok("encounter.create", {"system": "sample-duel"}))["id"]
    await rpc.ok("encounter.add", {"id": eid, "combatant": duelist("ann")})
    error = await rpc.error("encounter.refresh", {"id": eid, "combatant_id": "ann",
                                                  "combatant": duelist("ann", 1)})
    assert error["code"] == -32602
    assert error["data"]["errors"][0]["path"] == "/combatant"


async def test_a_sheet_that_did_not_change_stores_nothing(rpc: Rpc) -> None:
    """A VTT may refresh every sheet before each step: one that says what the encounter
    holds already adds no step, and nobody watching is told of a change."""
    eid, ulcen = await _encounter(rpc)
    same = await rpc.ok("encounter.refresh", {
        "id": eid, "combatant_id": ulcen,
        "combatant": {"adapter": "roll20.adnd2e-revised", "data": _sheet()}})
    # the adapter's warnings about the sheet are answered all the same
    warnings = (await rpc.ok("adapters.import", {"adapter": "roll20.adnd2e-revised",
                                                 "data": _sheet()}))["warnings"]
    assert warnings and same == {"combatant_id": ulcen, "revision": 2, "changed": [],
                                 "dropped_choices": [], "warnings": warnings}
    assert len((await rpc.ok("encounter.log", {"id": eid}))["steps"]) == 2


async def test_a_refresh_that_only_drops_a_choice_is_stored(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """API.md encounter.refresh: nothing is stored only when no field differs, no choice
    is dropped and the write-backs go to the same sheet. A system whose rules throw away
    the choice of a combatant taken again (the sample duel, made to) drops Ann's choice
    though her fields are the same: the refresh is stored and she must declare again."""
    system = rpc.client.server.app[SERVICES].systems["sample-duel"]

    def replace(state: Mapping[str, Any], combatant_id: str,
                combatant: Mapping[str, Any]) -> dict[str, Any]:
        return {**state, "pending": {k: v for k, v in state["pending"].items()
                                     if k != combatant_id}}

    monkeypatch.setattr(system, "encounter_replace", replace)
    eid = (await rpc.ok("encounter.create", {"system": "sample-duel"}))["id"]
    for cid in ("ann", "bob"):
        await rpc.ok("encounter.add", {"id": eid, "combatant": duelist(cid)})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "ann", "choice": {
        "attack": {"mode": "jab", "target": "bob"}}})
    refreshed = await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": "ann",
                                                   "combatant": duelist("ann")})
    assert refreshed == {"combatant_id": "ann", "revision": 4, "changed": [],
                         "dropped_choices": ["ann"], "warnings": []}
    view = await rpc.ok("encounter.get", {"id": eid})
    assert (view["revision"], view["waiting_for"]) == (4, ["ann", "bob"])


async def test_an_undone_refresh_gives_the_sheet_back_its_write_backs(rpc: Rpc) -> None:
    """A refresh that replaced Ulcen's sheet by a plain combatant object is taken away by
    undoing the resolve before it: the undo then writes Ulcen's sheet back as it was,
    because the encounter's link to the sheet is the one in effect again."""
    eid, ulcen = await _encounter(rpc)
    await _round(rpc, eid, ulcen, seed=2)
    view = await rpc.ok("encounter.get", {"id": eid})
    plain = {k: v for k, v in view["combatants"][ulcen].items() if k != "mac"}
    await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": ulcen,
                                       "combatant": {**plain, "psp": 10}})
    undone = await rpc.ok("encounter.undo", {"id": eid})
    [update] = undone["updates"]
    assert update["attributes"]["PSP"]["current"] == 40


async def test_a_sheet_replaced_by_a_combatant_object_gets_no_more_write_backs(
        rpc: Rpc) -> None:
    """API.md encounter.refresh takes a combatant from its sheet "or a combatant
    object"; write-backs go where it was last taken from: once Ulcen is a plain object,
    his next step writes nothing to the sheet he came from."""
    eid, ulcen = await _encounter(rpc)
    assert (await _round(rpc, eid, ulcen, seed=2))["updates"]
    view = await rpc.ok("encounter.get", {"id": eid})
    plain = {k: v for k, v in view["combatants"][ulcen].items() if k != "mac"}
    await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": ulcen,
                                       "combatant": {**plain, "psp": 30}})
    step = await _round(rpc, eid, ulcen, seed=2)
    assert step["updates"] == [] and "updates_failed" not in step


async def test_a_combatant_object_naming_another_id_is_taken_with_a_warning(
        rpc: Rpc) -> None:
    """API.md: refresh keeps the combatant's id. A combatant object whose own id names
    someone else (Ulcen's sheet sent for Fenka) is most often the wrong one sent: it is
    taken, under Fenka's id, and the caller is told; the same id says nothing."""
    eid, _ = await _encounter(rpc)
    other = {**FENKA, "id": "ulcen", "psp": 12}
    refreshed = await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": "fenka",
                                                   "combatant": other})
    assert refreshed["combatant_id"] == "fenka" and refreshed["changed"] == ["psp"]
    assert refreshed["warnings"] == [
        'the combatant given names the id "ulcen"; it was taken as "fenka", whose id stays']
    same = await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": "fenka",
                                              "combatant": {**FENKA, "psp": 11}})
    assert same["warnings"] == []
