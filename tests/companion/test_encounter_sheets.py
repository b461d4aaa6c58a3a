"""Encounters of VTT sheets given as ``{adapter, data}`` (API.md "Encounters", docs/
RELIABILITY.md "What an encounter keeps of a sheet"): a step stores only what the adapter
reads of the sheet (``kept_data``), the write-backs are made from that and are those of
the whole sheet, the daemon keeps them for a few encounters only, steps an older daemon
stored whole still work, and ``encounter.log`` reads and holds only the steps it answers.

The sheets are real Foundry exports (tests/fixtures/foundry/dnd5e) with the flags a
player can fill (``[{},{},...]``), and the hand-made Roll20 character."""

from __future__ import annotations

import copy
import json
import logging
import weakref
from pathlib import Path
from typing import Any

import pytest

import adapters
from companion.combatants import kept_data
from companion.keys import SERVICES
from companion.methods import encounter as encounter_methods
from companion.methods.encounter import MASKING_DETAILS, _combatant
from companion.services import Services
from companion.store import StepRecord
from tests.adapters.support import ars_class, template_actor
from tests.reliability.play import dice_of

from .combatants import FENKA
from .conftest import Rpc

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
JUNK: list[Any] = [{}] * 5000
PSIONICIST = {"kind": "psionicist", "level": 5, "psp": 50, "psp_max": 50,
              "attacks": ["mind-thrust"], "defenses": ["thought-shield"]}


def zanna(hp: int | None = None, junk: bool = True) -> dict[str, Any]:
    """Zanna (162 KB of Foundry actor) as a revised-2e psionicist, with junk flags."""
    actor = json.loads((FIXTURES / "foundry" / "dnd5e" / "zanna-gnome-wizard.json")
                       .read_text())
    actor["flags"]["mindscape"] = {"revised-2e": dict(PSIONICIST)}
    if junk:
        actor["flags"]["junk"] = JUNK
    if hp is not None:
        actor["system"]["attributes"]["hp"]["value"] = hp
    return {"adapter": "foundry.dnd5e", "data": {"actor": actor, "token": None}}


def ars_psionicist(hp: int = 30) -> dict[str, Any]:
    """An ARS (acks2-arsbase) character whose level is only in its class item: seven
    advancement entries (actor.js getClassLevel); its attributes.level.value stays the
    template's 1, as ARS's level-ups leave it (actor-sheet.js _updateForLevelChange)."""
    actor = template_actor("foundry/ars/template.json", "character", "arsPsion00000001",
                           "Tamar")
    actor["system"]["attributes"]["hp"]["value"] = hp
    actor["items"] = [ars_class("Psionicist", 7, ["1d6"] * 11 + ["2"] * 9)]
    actor["flags"] = {"mindscape": {"revised-2e": {"kind": "psionicist", "psp": 60,
                                                   "attacks": ["mind-thrust"]}}}
    return {"adapter": "foundry.ars", "data": {"actor": actor, "token": None}}


def ulcen() -> dict[str, Any]:
    data = json.loads((FIXTURES / "roll20" / "adnd2e-revised-ulcen.handmade.json")
                      .read_text())
    data["attribs"] += [{"name": f"junk{i}", "current": "x" * 100, "max": ""}
                        for i in range(100)]
    return {"adapter": "roll20.adnd2e-revised", "data": data}


def _services(rpc: Rpc) -> Services:
    services: Services = rpc.client.server.app[SERVICES]
    return services


def _trimmed(sheet: dict[str, Any], system: str = "revised-2e") -> dict[str, Any]:
    return {"adapter": sheet["adapter"],
            "data": adapters.get(sheet["adapter"]).trimmed(sheet["data"], system)}


async def _fight(rpc: Rpc, sheet: dict[str, Any]) -> tuple[str, str]:
    """A revised-2e encounter of ``sheet`` and Fenka, the sheet's mind thrust declared."""
    eid = (await rpc.ok("encounter.create", {"system": "revised-2e"}))["id"]
    cid = (await rpc.ok("encounter.add", {"id": eid, "combatant": sheet}))["combatant_id"]
    await rpc.ok("encounter.add", {"id": eid, "combatant": FENKA})
    await _declare(rpc, eid, cid)
    return eid, cid


async def _declare(rpc: Rpc, eid: str, cid: str) -> None:
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": cid, "choice": {
        "attack": {"mode": "mind-thrust", "target": "fenka", "multiplier": 1}}})
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": "fenka",
                                       "choice": {"defense": None}})


async def _resolve_with_whole_sheet_updates(rpc: Rpc, eid: str, cid: str,
                                            whole: dict[str, Any]) -> list[Any]:
    """Resolve; check the write-back is the one the adapter makes from the whole
    sheet for the combatant's before and after; the write-back."""
    system = _services(rpc).systems["revised-2e"]
    before = _combatant(await rpc.ok("encounter.get", {"id": eid}), cid)
    step = await rpc.ok("encounter.resolve", {"id": eid, "seed": 5})
    after = _combatant(await rpc.ok("encounter.get", {"id": eid}), cid)
    assert before != after, "the step changed nothing: the check would be empty"
    expected = adapters.get(whole["adapter"]).updates(
        whole["data"], "revised-2e", before, after, normalise=system.combatant)
    assert expected and step["updates"] == expected
    updates: list[Any] = step["updates"]
    return updates


# -- what a step stores -----------------------------------------------------------------
async def test_a_step_stores_and_logs_only_what_the_adapter_reads(rpc: Rpc) -> None:
    """An add and a refresh of a 162 KB actor with 5000 junk flags store the trimmed
    sheet; the log shows it; the answers' warnings are those of the whole sheet."""
    services = _services(rpc)
    eid = (await rpc.ok("encounter.create", {"system": "revised-2e"}))["id"]
    added = await rpc.ok("encounter.add", {"id": eid, "combatant": zanna()})
    cid = added["combatant_id"]
    imported = await rpc.ok("adapters.import", {**zanna(), "system": "revised-2e"})
    assert added["warnings"] == imported["warnings"]
    refreshed = await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": cid,
                                                   "combatant": zanna(hp=3)})
    assert refreshed["changed"] == ["hp"] and refreshed["warnings"] == added["warnings"]
    stored = await services.store.steps(eid, states=False)
    assert [s.params["combatant"] for s in stored] == [_trimmed(zanna()),
                                                       _trimmed(zanna(hp=3))]
    log = await rpc.ok("encounter.log", {"id": eid})
    assert [s["params"]["combatant"] for s in log["steps"]] == [
        _trimmed(zanna()), _trimmed(zanna(hp=3))]
    assert len(json.dumps(log)) < 4000 and len(json.dumps(zanna())) > 120_000
    # a junk flag changes nothing kept: the sheet as kept is the same without it
    assert _trimmed(zanna()) == _trimmed(zanna(junk=False))


async def test_an_ars_sheet_kept_by_an_encounter_keeps_its_class_level(rpc: Rpc) -> None:
    """foundry.ars reads a character's level from its class item's advancement entries
    (docs/ADAPTERS.md): the step keeps that item trimmed (entries emptied, each rank's
    hdformula only), and the kept sheet still gives level 7 and MTHAC0 14 (RULES.md
    §1.1: 21 − level): a new encounter fed the logged add has the same combatant, and a
    refresh that changed only the hit points changes only them."""
    services = _services(rpc)
    eid = (await rpc.ok("encounter.create", {"system": "revised-2e"}))["id"]
    cid = (await rpc.ok("encounter.add", {"id": eid, "combatant": ars_psionicist()})
           )["combatant_id"]
    held = _combatant(await rpc.ok("encounter.get", {"id": eid}), cid)
    assert (held["level"], held["mthac0"], held["class_group"]) == (7, 14, "psionicist")
    [stored] = await services.store.steps(eid, states=False)
    kept = stored.params["combatant"]
    assert kept == _trimmed(ars_psionicist()) != ars_psionicist()
    assert kept["data"]["actor"]["items"][0]["system"]["advancement"] == [{}] * 7
    again = (await rpc.ok("encounter.create", {"system": "revised-2e"}))["id"]
    await rpc.ok("encounter.add", {"id": again, "combatant": kept})
    assert _combatant(await rpc.ok("encounter.get", {"id": again}), cid) == held
    refreshed = await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": cid,
                                                   "combatant": ars_psionicist(hp=12)})
    assert refreshed["changed"] == ["hp"]


async def test_the_write_back_from_the_kept_sheet_is_that_of_the_whole_sheet(
        rpc: Rpc) -> None:
    for sheet in (zanna(), ulcen()):
        eid, cid = await _fight(rpc, sheet)
        await _resolve_with_whole_sheet_updates(rpc, eid, cid, sheet)
        _services(rpc).adapter_refs.clear()  # as after a restart: read from the log
        await rpc.ok("encounter.undo", {"id": eid})
        await _declare(rpc, eid, cid)
        await _resolve_with_whole_sheet_updates(rpc, eid, cid, sheet)


async def test_the_log_of_kept_sheets_replays(rpc: Rpc) -> None:
    """docs/RELIABILITY.md "The log says everything": a new encounter fed the logged
    adds and refreshes (the kept sheets), choices and dice reaches the same state."""
    eid, cid = await _fight(rpc, zanna())
    await rpc.ok("encounter.resolve", {"id": eid, "seed": 5})
    await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": cid,
                                       "combatant": zanna(hp=2)})
    await _declare(rpc, eid, cid)
    await rpc.ok("encounter.resolve", {"id": eid, "seed": 6})
    log = (await rpc.ok("encounter.log", {"id": eid}))["steps"]
    again = (await rpc.ok("encounter.create", {"system": "revised-2e"}))["id"]
    for step in log:
        params = {"id": again, **step["params"]}
        if step["kind"] == "resolve":
            params = {"id": again, "dice": dice_of(step["rolls"])}
        await rpc.ok(f"encounter.{step['kind']}", params)
    assert [s["kind"] for s in log] == ["add", "add", "declare", "declare", "resolve",
                                        "refresh", "declare", "declare", "resolve"]
    original = await rpc.ok("encounter.get", {"id": eid})
    replayed = await rpc.ok("encounter.get", {"id": again})
    assert {**replayed, "id": eid} == original


async def test_a_sheet_whose_trimmed_data_imports_differently_is_kept_whole(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """``kept_data`` checks the trimmed data: were an adapter's ``trimmed`` wrong (here
    it loses Intelligence) or broken, the step keeps the whole sheet, and says so in
    the daemon's log, rather than store a sheet that imports differently."""
    adapter = _services(rpc).adapters["foundry.dnd5e"]
    trimmed = adapter.trimmed

    def loses_int(data: Any, system: str) -> Any:
        cut = copy.deepcopy(trimmed(data, system))
        del cut["actor"]["system"]["abilities"]["int"]
        return cut

    def broken(data: Any, system: str) -> Any:
        raise RuntimeError("trimming exploded")

    for wrong in (loses_int, broken):
        monkeypatch.setattr(adapter, "trimmed", wrong)
        caplog.clear()
        with caplog.at_level(logging.WARNING, "mindscape.combatants"):
            eid = (await rpc.ok("encounter.create", {"system": "revised-2e"}))["id"]
            await rpc.ok("encounter.add", {"id": eid, "combatant": zanna()})
        stored = await _services(rpc).store.steps(eid, states=False)
        assert stored[0].params["combatant"] == zanna()
        assert [r.getMessage() for r in caplog.records] == [
            "adapter foundry.dnd5e: its trimmed data imports differently; the whole "
            "data is kept" if wrong is loses_int else
            "adapter foundry.dnd5e: trimming its data failed; the whole data is kept"]


def test_a_sheet_whose_warnings_quote_other_pointers_is_still_kept_trimmed() -> None:
    """A mapped die that names no hit die is warned about with its JSON Pointer, which
    in the trimmed attribute list is another index: only the combatant must agree."""
    sheet = ulcen()
    sheet["data"]["attribs"].append({"name": "HitDie", "current": "7", "max": ""})
    data = {"mapping": {"fields": {"die": {"path": "HitDie", "parse": "hit-die"},
                                   "hit_dice": "level-class1"}},
            "character": sheet["data"]}
    adapter = adapters.get("roll20.generic")
    cut = adapter.trimmed(data, "power-pool")
    whole, again = adapter.import_(data, "power-pool"), adapter.import_(cut, "power-pool")
    assert again.combatant == whole.combatant and again.warnings != whole.warnings
    assert kept_data(adapter, data, "power-pool") == cut


# -- the write-backs' sheets in memory ------------------------------------------------------
async def test_the_sheets_of_a_few_encounters_are_kept_the_least_recently_used_go(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """At most ``ADAPTER_REF_ENCOUNTERS`` encounters' sheets stay in memory, each as
    kept (trimmed); one used again outlives one used once after it; one forgotten is
    read from the log again, with the same write-backs."""
    monkeypatch.setattr(encounter_methods, "ADAPTER_REF_ENCOUNTERS", 2)
    cache = _services(rpc).adapter_refs
    fights = [await _fight(rpc, zanna()) for _ in range(3)]
    (first, cid), (second, _), (third, _) = fights
    written = await _resolve_with_whole_sheet_updates(rpc, first, cid, zanna())
    assert list(cache) == [first]
    assert cache[first] == {cid: ("foundry.dnd5e", _trimmed(zanna())["data"])}
    await rpc.ok("encounter.resolve", {"id": second, "seed": 5})
    await rpc.ok("encounter.undo", {"id": first})  # used again (and read again)
    assert list(cache) == [second, first]
    await rpc.ok("encounter.resolve", {"id": third, "seed": 5})
    assert list(cache) == [first, third]
    await rpc.ok("encounter.undo", {"id": second})
    assert list(cache) == [third, second]
    await _declare(rpc, first, cid)
    assert await _resolve_with_whole_sheet_updates(rpc, first, cid, zanna()) == written
    assert list(cache) == [second, first]
    await rpc.ok("encounter.delete", {"id": first})
    assert list(cache) == [second]


async def test_a_sheet_added_after_the_sheets_are_kept_gets_its_write_backs(
        rpc: Rpc) -> None:
    """API.md: a combatant given as {adapter, data} gets write-backs. One added once the
    encounter's sheets are kept in memory (after its first resolve) is kept with them:
    its step's write-back goes to its sheet, as if it had been there from the start."""
    eid, cid = await _fight(rpc, zanna())
    await rpc.ok("encounter.resolve", {"id": eid, "seed": 5})
    assert eid in _services(rpc).adapter_refs
    sheet = ulcen()
    added = (await rpc.ok("encounter.add", {"id": eid, "combatant": sheet}))["combatant_id"]
    await _declare(rpc, eid, added)
    await rpc.ok("encounter.declare", {"id": eid, "combatant_id": cid,
                                       "choice": {"defense": None}})
    updates = (await rpc.ok("encounter.resolve", {"id": eid, "seed": 5}))["updates"]
    assert [u["character_id"] for u in updates if "character_id" in u] == \
        [sheet["data"]["id"]]


async def test_a_refresh_updates_the_kept_sheet(rpc: Rpc) -> None:
    eid, cid = await _fight(rpc, zanna())
    await rpc.ok("encounter.resolve", {"id": eid, "seed": 5})
    await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": cid,
                                       "combatant": zanna(hp=4)})
    assert _services(rpc).adapter_refs[eid] == {
        cid: ("foundry.dnd5e", _trimmed(zanna(hp=4))["data"])}
    await _declare(rpc, eid, cid)
    await _resolve_with_whole_sheet_updates(rpc, eid, cid, zanna(hp=4))


def _on_token(token_id: str, linked: bool = False, psp: int = 50) -> dict[str, Any]:
    """Zanna, with ``psp`` PSPs, as seen through a token of the scene (docs/FOUNDRY.md:
    an unlinked token's actor is written back through the token)."""
    sheet = zanna(junk=False)
    sheet["data"]["actor"]["flags"]["mindscape"]["revised-2e"]["psp"] = psp
    sheet["data"]["token"] = {"uuid": f"Scene.scene0000000001.Token.{token_id}",
                              "actorLink": linked, "name": "Zanna"}
    return sheet


async def test_a_refresh_from_another_token_with_the_same_stats_moves_the_write_backs(
        rpc: Rpc) -> None:
    """API.md encounter.refresh: the combatant is taken again from its sheet. Zanna's
    unlinked token placed again (token B) or linked to its actor, with the same stats:
    nothing of the combatant changes, but the write-backs go to the sheet it was last
    taken from (they kept going to token A: a refresh that changed no field stored
    nothing). The same sheet again still stores nothing."""
    services = _services(rpc)
    eid = (await rpc.ok("encounter.create", {"system": "revised-2e"}))["id"]
    cid = (await rpc.ok("encounter.add", {"id": eid, "combatant": _on_token(
        "tokenAAAAAAAAAAA")}))["combatant_id"]
    await rpc.ok("encounter.add", {"id": eid, "combatant": FENKA})
    for linked, address in ((False, "Scene.scene0000000001.Token.tokenBBBBBBBBBBB.Actor."),
                            (True, "Actor.")):
        psp = (await rpc.ok("encounter.get", {"id": eid}))["combatants"][cid]["psp"]
        sheet = _on_token("tokenBBBBBBBBBBB", linked, psp)
        refreshed = await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": cid,
                                                       "combatant": sheet})
        revision = (await rpc.ok("encounter.log", {"id": eid}))["revision"]
        assert (refreshed["changed"], refreshed["revision"]) == ([], revision)
        again = await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": cid,
                                                   "combatant": sheet})
        assert again["revision"] == revision
        for forgotten in (False, True):
            if forgotten:  # read from the log again
                services.adapter_refs.clear()
            await _declare(rpc, eid, cid)
            [update] = (await rpc.ok("encounter.resolve", {"id": eid, "seed": 5}))["updates"]
            assert update["uuid"].startswith(address), update


async def test_a_sheet_stored_whole_by_an_older_daemon_still_works(rpc: Rpc) -> None:
    """A step in the old shape (the whole sheet in its params, as daemons stored them
    before ``kept_data``): the log shows it as stored, the write-back reads it, and only
    what the adapter reads of it is kept in memory."""
    services = _services(rpc)
    system = services.systems["revised-2e"]
    whole = zanna()
    eid = (await rpc.ok("encounter.create", {"system": "revised-2e"}))["id"]
    record = await services.store.get(eid)
    imported = adapters.get("foundry.dnd5e").import_(whole["data"], "revised-2e")
    state, cid = system.encounter_add(record.state, imported.combatant)
    await services.store.append(
        eid, expected_revision=0, kind="add", params={"combatant": whole}, rolls=[],
        result={"combatant_id": cid, "warnings": list(imported.warnings)}, state=state)
    await rpc.ok("encounter.add", {"id": eid, "combatant": FENKA})
    await _declare(rpc, eid, cid)
    await _resolve_with_whole_sheet_updates(rpc, eid, cid, whole)
    assert services.adapter_refs[eid] == {cid: ("foundry.dnd5e", _trimmed(whole)["data"])}
    log = (await rpc.ok("encounter.log", {"id": eid}))["steps"]
    assert log[0]["params"] == {"combatant": whole}


async def test_the_sheets_are_read_from_the_log_newest_first_and_only_the_latest(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """Filling the write-backs' sheets reads an outline of the log, then the adds and
    refreshes in effect newest first; steps taken away by an undo are not read."""
    services = _services(rpc)
    eid, cid = await _fight(rpc, zanna())
    await rpc.ok("encounter.resolve", {"id": eid, "seed": 5})  # revision 5
    for hp in (7, 6):
        await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": cid,
                                           "combatant": zanna(hp=hp)})  # 6, 7
    await _declare(rpc, eid, cid)  # 8, 9
    await rpc.ok("encounter.resolve", {"id": eid, "seed": 5})  # 10
    await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": cid,
                                       "combatant": zanna(hp=1)})  # 11
    await rpc.ok("encounter.undo", {"id": eid})  # 12: takes 10 and 11 away
    read: list[list[int]] = []
    details = services.store.step_details

    def counting(id: str, steps: Any) -> Any:
        steps = list(steps)
        read.append([s.revision for s in steps])
        return details(id, steps)

    monkeypatch.setattr(services.store, "step_details", counting)
    services.adapter_refs.clear()
    await rpc.ok("encounter.resolve", {"id": eid, "seed": 5})
    assert read == [[7, 6, 2, 1]]
    assert services.adapter_refs[eid] == {
        cid: ("foundry.dnd5e", _trimmed(zanna(hp=6))["data"])}


async def test_a_sheet_whose_adapter_is_no_longer_installed_gets_no_write_backs(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """The write-backs go to the sheets of the installed adapters (``_adapter_refs``):
    an encounter whose sheet came through an adapter the daemon no longer has (read
    from the log again) still resolves, with no write-back and no ``updates_failed``
    (that says a write-back failed: none was due)."""
    services = _services(rpc)
    eid, cid = await _fight(rpc, zanna())
    assert (await rpc.ok("encounter.resolve", {"id": eid, "seed": 5}))["updates"]
    monkeypatch.delitem(services.adapters, "foundry.dnd5e")
    for forgotten in (False, True):
        if forgotten:  # read from the log again
            services.adapter_refs.clear()
        await _declare(rpc, eid, cid)
        step = await rpc.ok("encounter.resolve", {"id": eid, "seed": 5})
        assert step["updates"] == [] and "updates_failed" not in step, step


# -- encounter.log reads only what it answers ------------------------------------------------
async def test_the_log_parses_in_full_only_the_steps_it_answers(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """Masking reads an outline (params only of declarations and undos) with the stored
    text of the steps after ``since``; only those are parsed in full, and the log is
    read once."""
    store = _services(rpc).store
    eid, cid = await _fight(rpc, zanna())  # 1 add, 2 add, 3 and 4 declare
    await rpc.ok("encounter.resolve", {"id": eid, "seed": 5})  # 5
    for hp in (7, 6, 5):
        await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": cid,
                                           "combatant": zanna(hp=hp)})  # 6 .. 8
    parsed: list[tuple[int, bool]] = []
    outlined, detailed = store._step, store._detailed

    def outline(row: Any) -> StepRecord:
        record = outlined(row)
        parsed.append((record.revision, bool(record.params)))
        return record

    def in_full(pair: Any) -> StepRecord:
        record = detailed(pair)
        parsed.append((record.revision, True))
        return record

    async def read_again(id: str, revisions: list[int]) -> Any:
        raise AssertionError(f"steps {revisions} read a second time")

    monkeypatch.setattr(store, "_step", outline)
    monkeypatch.setattr(store, "_detailed", in_full)
    monkeypatch.setattr(store, "_detail_rows", read_again)
    await rpc.ok("encounter.log", {"id": eid, "since": 6})
    outlined_steps = [(r, r in (3, 4)) for r in range(1, 9)]
    assert parsed == [*outlined_steps, (7, True), (8, True)]
    assert MASKING_DETAILS == ("declare", "undo")
    parsed.clear()
    everything = await rpc.ok("encounter.log", {"id": eid})
    assert parsed == [*outlined_steps, *((r, True) for r in range(1, 9))]
    assert [s["revision"] for s in everything["steps"]] == list(range(1, 9))


async def test_the_log_never_holds_its_steps_parsed_all_at_once(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each step answered is written as JSON text as soon as it is parsed: of 19
    stored sheets, at most the one being written and the next are alive at any time."""
    store = _services(rpc).store
    eid, cid = await _fight(rpc, zanna())
    for hp in range(1, 19):
        await rpc.ok("encounter.refresh", {"id": eid, "combatant_id": cid,
                                           "combatant": zanna(hp=hp)})
    alive: list[weakref.ref[StepRecord]] = []
    most = 0
    detailed = store._detailed

    def counting(pair: Any) -> StepRecord:
        nonlocal most
        record = detailed(pair)
        if record.params.get("combatant", {}).get("adapter"):
            alive.append(weakref.ref(record))
            most = max(most, sum(1 for ref in alive if ref() is not None))
        return record

    monkeypatch.setattr(store, "_detailed", counting)
    log = await rpc.ok("encounter.log", {"id": eid})
    assert sum(1 for s in log["steps"] if s["kind"] in ("add", "refresh")) == 20
    assert len(alive) == 19 and most == 2  # Fenka is no sheet
