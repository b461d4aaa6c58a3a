"""encounter.log on long encounters (API.md "Encounters"): the pending choices masking
compares are worked out once per stored state and remembered (``PendingMemo``), and
every answer is the one the old path gave by reading every state at every call
(``masking_oracle``), also for a plugin system that keeps its choices elsewhere."""

from __future__ import annotations

import io
import random
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest

from companion import store as store_module
from companion.keys import SERVICES
from companion.methods import encounter as encounter_methods
from companion.methods.encounter import masked_log
from companion.plugins import Plugin
from companion.services import Services
from companion.settings import Limits, Settings
from engine.dice import DiceSource
from engine.system import JSON
from tests.sample_plugin import SampleDuel

from .combatants import FENKA, ULCEN, duelist
from .conftest import GROUP, SAMPLE, Rpc, with_plugins
from .masking_oracle import everything_read, old_log


class VaultDuel(SampleDuel):
    """A plugin-style system whose pending choices are not ``state["pending"]``: it
    keeps them under ``vault``, by round, and a choice marked ``bluff`` is thrown away
    (never held, never resolved). ``pending`` is a decoy that records every declaration
    and is never cleared, so a mask that read ``pending`` as the built-in systems keep
    it would show choices no resolve used."""

    id = "vault-duel"
    name = "Vault duel"

    def encounter_new(self, options: Mapping[str, Any] | None) -> JSON:
        return {**super().encounter_new(options), "vault": {"1": {}}}

    def _held(self, state: Mapping[str, Any]) -> dict[str, Any]:
        return dict(state["vault"][str(state["round"])])

    def encounter_waiting_for(self, state: Mapping[str, Any]) -> list[str]:
        return [c for c in state["order"] if c not in self._held(state)]

    def encounter_view(self, state: Mapping[str, Any]) -> JSON:
        return {**super().encounter_view(state), "declared": sorted(self._held(state))}

    def encounter_declare(self, state: Mapping[str, Any], combatant_id: str,
                          choice: Mapping[str, Any]) -> JSON:
        decoy = super().encounter_declare(state, combatant_id, choice)
        held = self._held(state)
        if choice.get("bluff"):
            held.pop(combatant_id, None)
        else:
            held[combatant_id] = dict(choice)
        return {**decoy, "vault": {**state["vault"], str(state["round"]): held}}

    def encounter_pending_choices(self, state: Mapping[str, Any]) -> Mapping[str, Any]:
        return self._held(state)

    def encounter_resolve(self, state: Mapping[str, Any], dice: DiceSource,
                          force: bool = False) -> tuple[JSON, JSON]:
        new, result = super().encounter_resolve({**state, "pending": self._held(state)},
                                                dice, force)
        return {**new, "pending": state["pending"],
                "vault": {**state["vault"], str(new["round"]): {}}}, result


VAULT_PLUGIN = Plugin(name="vault", version="1.0", systems=(VaultDuel(),))
VAULT = EntryPoint("vault", "tests.companion.test_encounter_log:VAULT_PLUGIN", GROUP)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", plugins=with_plugins(SAMPLE, VAULT),
                    limits=Limits(ws_auth_timeout=0.5), log_stream=io.StringIO())


def _services(rpc: Rpc) -> Services:
    services: Services = rpc.client.server.app[SERVICES]
    return services


async def _agrees_with_the_old_path(rpc: Rpc, eid: str, since: int = 0) -> dict[str, Any]:
    services = _services(rpc)
    record = await services.store.get(eid)
    expected = await old_log(services.store, eid, services.systems[record.system], since)
    answer: dict[str, Any] = await rpc.ok("encounter.log", {"id": eid, "since": since})
    assert answer == expected
    return answer


def _declare(eid: str, cid: str, choice: dict[str, Any]) -> dict[str, Any]:
    return {"id": eid, "combatant_id": cid, "choice": choice}


# -- long logs, every answer against the old path ----------------------------------------
def _duel_choices(ids: list[str], rng: random.Random, cid: str) -> dict[str, Any]:
    target = rng.choice([i for i in ids if i != cid] or ids)
    return rng.choice([{"attack": {"mode": "jab", "target": target}},
                       {"defense": {"mode": "guard"}},
                       {"attack": {"mode": "jab", "target": target},
                        "defense": {"mode": "guard"}},
                       {}, {"bluff": True}])


def _revised_choices(ids: list[str], rng: random.Random, cid: str) -> dict[str, Any]:
    target = rng.choice([i for i in ids if i != cid] or ids)
    attack = {"mode": "mind-thrust", "multiplier": rng.choice([1, 2]),
              "range": "short", "target": target}
    defense = {"mode": "thought-shield" if cid.startswith("ulcen") else "mental-barrier"}
    return rng.choice([{"attack": attack}, {"defense": defense},
                       {"attack": attack, "defense": defense}, {"defense": None}])


def _pool_choices(ids: list[str], rng: random.Random, cid: str) -> dict[str, Any]:
    target = rng.choice([i for i in ids if i != cid] or ids)
    return rng.choice([{"attack": {"mode": "mental-stab", "target": target}},
                       {"defense": {"mode": "blank-mind"}}, {"defense": {}},
                       {"pass": True}, {"rest": True}])


POOL = {"name": "Pool", "hit_dice": 8, "die": 8, "psionic": True,
        "attacks": ["mental-stab"], "defenses": ["blank-mind"]}
Sheet = Callable[[str], dict[str, Any]]
Choices = Callable[[list[str], random.Random, str], dict[str, Any]]
WALKS: dict[str, tuple[Sheet, Choices]] = {
    "sample-duel": (lambda cid: duelist(cid, 20), _duel_choices),
    "vault-duel": (lambda cid: duelist(cid, 20), _duel_choices),
    "revised-2e": (lambda cid: {**(ULCEN if cid.startswith("ulcen") else FENKA),
                                "id": cid, "psp": 400, "psp_max": 400},
                   _revised_choices),
    "power-pool": (lambda cid: {**POOL, "id": cid}, _pool_choices),
}


@pytest.mark.parametrize("system", sorted(WALKS))
async def test_a_long_log_with_undos_and_redeclarations_masks_as_reading_every_state_did(
        rpc: Rpc, system: str) -> None:
    """``_Secrets``'s rules, whatever happens: declarations replaced, thrown away and
    undone, rounds resolved, undone and resolved again. The log is read after every
    step (so the remembered pending choices grow step by step), from a random
    ``since``, then once more with nothing remembered."""
    rng = random.Random(system)
    sheet, choices = WALKS[system]
    eid = (await rpc.ok("encounter.create", {"system": system}))["id"]
    for cid in ("ulcen", "fenka"):
        await rpc.ok("encounter.add", {"id": eid, "combatant": sheet(cid)})
    seen: set[tuple[str, bool]] = set()  # (kind, hidden) of every step logged
    for _ in range(120):
        view = await rpc.ok("encounter.get", {"id": eid})
        ids = sorted(view["combatants"])  # an undo may have taken an add away
        roll = rng.random()
        if roll < 0.55:
            cid = rng.choice(ids)
            answer = await rpc.call("encounter.declare",
                                    _declare(eid, cid, choices(ids, rng, cid)))
        elif roll < 0.77:
            answer = await rpc.call("encounter.resolve", {
                "id": eid, "seed": rng.randrange(1000), "force": rng.random() < 0.7})
        elif roll < 0.9:
            answer = await rpc.call("encounter.undo", {"id": eid})
        elif roll < 0.95 and len(ids) < 4:
            answer = await rpc.call("encounter.add", {
                "id": eid, "combatant": sheet(f"ulcen{rng.randrange(100)}")})
        else:
            cid = rng.choice(ids)
            answer = await rpc.call("encounter.refresh", {
                "id": eid, "combatant_id": cid, "combatant": sheet(cid)})
        # a choice or step the rules refuse is an answer too; a crash is not
        assert answer.get("error", {}).get("code") != -32603, answer
        log = await _agrees_with_the_old_path(
            rpc, eid, rng.randrange(view["revision"] + 2))
        seen.update((s["kind"], bool(s.get("hidden") or s["params"].get("hidden")))
                    for s in log["steps"])
    _services(rpc).pending_memos.clear()
    await _agrees_with_the_old_path(rpc, eid)
    assert {("declare", True), ("declare", False), ("resolve", True), ("resolve", False),
            ("undo", False)} <= seen


async def test_only_the_states_of_new_steps_are_read_again(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stored state never changes: the next call reads only the states of steps
    logged since, those masking compares (after a declaration, before a resolve)."""
    store = _services(rpc).store
    read: list[list[int]] = []
    step_states = store.step_states

    def counting(id: str, revisions: Iterable[int]
                 ) -> AsyncIterator[tuple[int, dict[str, Any]]]:
        read.append(sorted(revisions))
        return step_states(id, revisions)

    monkeypatch.setattr(store, "step_states", counting)
    eid = (await rpc.ok("encounter.create", {"system": "sample-duel"}))["id"]
    for cid in ("ann", "bob", "cy"):
        await rpc.ok("encounter.add", {"id": eid, "combatant": duelist(cid)})
    await rpc.ok("encounter.declare", _declare(eid, "ann", {"defense": {"mode": "guard"}}))
    await _agrees_with_the_old_path(rpc, eid)
    assert read == [[1], [4]]  # the first state (gives it pending choices?), then 4
    read.clear()
    await _agrees_with_the_old_path(rpc, eid, since=4)
    assert read == [[]]
    read.clear()
    await rpc.ok("encounter.declare", _declare(eid, "bob", {"defense": {"mode": "guard"}}))
    await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 3})
    await rpc.ok("encounter.undo", {"id": eid})
    await rpc.ok("encounter.declare", _declare(eid, "cy", {"defense": {"mode": "guard"}}))
    await _agrees_with_the_old_path(rpc, eid)
    assert read == [[5, 8]]  # bob's declaration (also before the resolve), cy's
    read.clear()
    await _agrees_with_the_old_path(rpc, eid)
    assert read == [[]]  # nothing logged since: nothing read again, not even for a resolve
    await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 3})  # 9
    await rpc.ok("encounter.declare", _declare(eid, "ann", {"defense": {"mode": "guard"}}))
    await rpc.ok("encounter.undo", {"id": eid})  # 11: takes 9 and ann's 10 away
    read.clear()
    await _agrees_with_the_old_path(rpc, eid)
    assert read == [[8]]  # before the resolve; a declaration an undo took away is hidden


async def test_at_most_a_few_encounters_are_remembered_and_a_deleted_one_is_forgotten(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encounter_methods, "PENDING_MEMO_ENCOUNTERS", 2)
    memos = _services(rpc).pending_memos
    eids = []
    for n in range(3):
        eid = (await rpc.ok("encounter.create", {"system": "sample-duel"}))["id"]
        for cid in ("ann", "bob"):
            await rpc.ok("encounter.add", {"id": eid, "combatant": duelist(cid)})
        await rpc.ok("encounter.declare", _declare(eid, "ann", {
            "attack": {"mode": "jab", "target": "bob"}}))
        if n != 1:
            await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": n})
        eids.append(eid)
    for eid in [*eids, *eids]:
        await _agrees_with_the_old_path(rpc, eid)
        assert len(memos) <= 2 and next(reversed(memos)) == eid
    await rpc.ok("encounter.delete", {"id": eids[-1]})
    assert list(memos) == [eids[1]]


async def _duel_with_a_declaration(rpc: Rpc) -> str:
    eid: str = (await rpc.ok("encounter.create", {"system": "sample-duel"}))["id"]
    for cid in ("ann", "bob"):
        await rpc.ok("encounter.add", {"id": eid, "combatant": duelist(cid)})
    await rpc.ok("encounter.declare", _declare(eid, "ann", {
        "attack": {"mode": "jab", "target": "bob"}}))
    return eid


async def test_the_encounter_read_last_is_forgotten_last(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """The least recently read goes first (``PENDING_MEMO_ENCOUNTERS``): an encounter
    read again outlives one read once after it."""
    monkeypatch.setattr(encounter_methods, "PENDING_MEMO_ENCOUNTERS", 2)
    memos = _services(rpc).pending_memos
    first, second = await _duel_with_a_declaration(rpc), await _duel_with_a_declaration(rpc)
    for eid in (first, second, first):
        await _agrees_with_the_old_path(rpc, eid)
    third = await _duel_with_a_declaration(rpc)
    await _agrees_with_the_old_path(rpc, third)
    assert list(memos) == [first, third]


async def test_an_id_used_again_gets_a_memo_of_its_own(
        rpc: Rpc, monkeypatch: pytest.MonkeyPatch) -> None:
    """An encounter deleted behind the method's back (its memo kept) and made again
    under the same id is another encounter (``created_at``): what the memo made of
    the old one's states says nothing of the new one's. Here the old revision 3 was
    Ann's jab and 4 its resolve; the new 3 is Ann's guard, 4 Bob's, 5 their resolve,
    which shows Ann's guard, as the old path does."""
    services = _services(rpc)
    eid = await _duel_with_a_declaration(rpc)
    await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 1})
    await _agrees_with_the_old_path(rpc, eid)
    await services.store.delete(eid)
    assert eid in services.pending_memos
    monkeypatch.setattr(store_module, "_new_id", lambda: eid)
    monkeypatch.setattr(store_module, "_now", lambda: "2001-01-01T00:00:00.000Z")
    again = (await rpc.ok("encounter.create", {"system": "sample-duel"}))["id"]
    assert again == eid
    for cid in ("ann", "bob"):
        await rpc.ok("encounter.add", {"id": eid, "combatant": duelist(cid)})
    guard = {"defense": {"mode": "guard"}}
    await rpc.ok("encounter.declare", _declare(eid, "ann", guard))
    await rpc.ok("encounter.declare", _declare(eid, "bob", guard))
    await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 2})
    steps = (await _agrees_with_the_old_path(rpc, eid))["steps"]
    assert steps[2]["params"]["choice"] == guard


# -- a plugin whose pending choices are elsewhere in the state ----------------------------
async def test_a_plugin_keeping_its_choices_elsewhere_is_masked_by_its_own_pending_choices(
        rpc: Rpc) -> None:
    """The daemon asks the system (``encounter_pending_choices``) and nothing else: a
    bluff the vault-duel rules throw away stays hidden after the round, though its
    decoy ``pending`` holds it; the round's real choices show."""
    eid = (await rpc.ok("encounter.create", {"system": "vault-duel"}))["id"]
    for cid in ("ann", "bob"):
        await rpc.ok("encounter.add", {"id": eid, "combatant": duelist(cid)})
    jab = {"attack": {"mode": "jab", "target": "bob"}}
    guard = {"defense": {"mode": "guard"}}
    await rpc.ok("encounter.declare", _declare(eid, "ann", jab))
    await rpc.ok("encounter.declare", _declare(eid, "bob", {"bluff": True, **guard}))
    await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 1})
    await rpc.ok("encounter.declare", _declare(eid, "bob", guard))
    await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 2})
    await rpc.ok("encounter.undo", {"id": eid})
    await rpc.ok("encounter.resolve", {"id": eid, "force": True, "seed": 2})
    steps = (await _agrees_with_the_old_path(rpc, eid))["steps"]
    assert [s["kind"] for s in steps] == ["add", "add", "declare", "declare", "resolve",
                                          "declare", "resolve", "undo", "resolve"]
    assert steps[2]["params"]["choice"] == jab
    assert steps[3]["params"] == {"combatant_id": "bob", "choice": None, "hidden": True}
    assert steps[5]["params"]["choice"] == guard
    assert "hidden" not in steps[6] and steps[6]["result"] is not None
    # The test has teeth: a mask that took "pending" for the pending choices (as
    # SQLite's json_extract of a key the built-in systems use would) shows the bluff,
    # and hides the undone round, whose decoy names a choice from the round before.
    services = _services(rpc)
    system = services.systems["vault-duel"]

    class ReadsPending(VaultDuel):
        def encounter_pending_choices(self, state: Mapping[str, Any]) -> Mapping[str, Any]:
            return dict(state["pending"])

    stored = await services.store.steps(eid)
    reads_pending = ReadsPending()
    wrong = masked_log(stored, reads_pending, everything_read(stored, reads_pending, ""))
    assert wrong[3]["params"]["choice"] == {"bluff": True, **guard}
    assert wrong[6]["hidden"] is True
    assert masked_log(stored, system, everything_read(stored, system, "")) == steps
