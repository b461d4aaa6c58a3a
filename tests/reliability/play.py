"""Encounters driven the way a VTT drives them, with a ledger of what was acknowledged.

``play`` creates an encounter, adds two combatants and then repeats: declare a choice
for everyone the encounter waits for, resolve (seeded), and every fifth resolve undo it.
Every write names the revision it read, and every answer the daemon gave is written to
the ``Ledger``: afterwards the log must hold each acknowledged step, and ``replay``
rebuilds the encounter from its log alone to show the log says everything.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp

#: Two combatants per system (field names from docs/COMBATANTS.md), strong enough to
#: keep fighting for many steps.
COMBATANTS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "revised-2e": (
        {"id": "ulcen", "name": "Ulcen of Tyr", "kind": "psionicist", "level": 9,
         "psp": 400, "psp_max": 400, "int": 16, "wis": 15, "mac": 6,
         "attacks": ["mind-thrust", "ego-whip"], "defenses": ["thought-shield",
                                                              "mental-barrier"]},
        {"id": "fenka", "name": "Fenka", "kind": "psionicist", "level": 9,
         "psp": 400, "psp_max": 400, "int": 15, "wis": 16, "mac": 6,
         "attacks": ["mind-thrust", "ego-whip"], "defenses": ["thought-shield",
                                                              "mental-barrier"]},
    ),
    "combat-strength": (
        {"id": "ulcen", "name": "Ulcen", "attack_strength": 200, "defense_strength": 200},
        {"id": "fenka", "name": "Fenka", "attack_strength": 200, "defense_strength": 200},
    ),
    "power-pool": (
        {"id": "ulcen", "name": "Ulcen", "hit_dice": 8, "die": 8, "psionic": True,
         "attacks": ["mental-stab"], "defenses": ["blank-mind"]},
        {"id": "fenka", "name": "Fenka", "hit_dice": 8, "die": 8, "psionic": True,
         "attacks": ["mental-stab"], "defenses": ["blank-mind"]},
    ),
}
SYSTEMS = tuple(COMBATANTS)
STALE = 4009
#: Answers that mean "this choice is not allowed now": the driver tries the next one.
REFUSED = (-32602, 4001)


def choices(system: str, view: Mapping[str, Any], combatant_id: str) -> list[dict[str, Any]]:
    """Choices to try, best first, for ``combatant_id`` in the encounter ``view``."""
    others = [c for c in view.get("combatants", {}) if c != combatant_id]
    target = others[0] if others else combatant_id
    if system == "combat-strength":
        if view.get("phase") == "intent":
            return [{"stance": "trance"}, {"stance": "normal"}]
        return [{"attack": {"mode": "ego-whip", "target": target, "range": "short"},
                 "defense": {"mode": "mental-barrier"}},
                {"defense": {"mode": "mental-barrier"}}, {}]
    if system == "revised-2e":
        return [{"attack": {"mode": "mind-thrust", "multiplier": 1, "range": "short",
                            "target": target},
                 "defense": {"mode": "thought-shield"}},
                {"defense": {"mode": "thought-shield"}}, {}]
    if system == "power-pool":
        # One exchange is an attack, then the defender's answer to it.
        return [{"attack": {"mode": "mental-stab", "target": target}},
                {"defense": {"mode": "blank-mind"}}, {"defense": None}]
    return [{}]


class Unreachable(Exception):
    """The daemon did not answer (it was killed, or the connection broke)."""


class Fault(Exception):
    """A JSON-RPC error answer."""

    def __init__(self, error: Mapping[str, Any]) -> None:
        super().__init__(str(error))
        self.code = int(error.get("code", 0))
        self.data = error.get("data")
        self.error = dict(error)


@dataclass(frozen=True)
class Ack:
    """The daemon answered a write with this revision."""

    encounter: str
    revision: int
    kind: str
    seconds: float


@dataclass
class Ledger:
    """What the clients sent and what the daemon acknowledged."""

    acks: list[Ack] = field(default_factory=list)
    #: (encounter, revision the declare would get) -> the choice sent
    sent_choices: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    stale: int = 0
    refused: int = 0
    faults: list[dict[str, Any]] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)

    def acked(self, encounter: str) -> list[Ack]:
        """The acknowledgements of writes to ``encounter``, in order."""
        return [a for a in self.acks if a.encounter == encounter]


class Client:
    """One JSON-RPC caller over HTTP (its own connection pool, like one VTT tab)."""

    def __init__(self, url: str, token: str, ledger: Ledger | None = None,
                 timeout: float = 30.0) -> None:
        self.url = url + "/rpc"
        self.headers = {"Authorization": f"Bearer {token}"}
        self.ledger = ledger if ledger is not None else Ledger()
        self.session = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=timeout))
        self._ids = 0

    async def close(self) -> None:
        """Close the connection pool."""
        await self.session.close()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def call(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """The result, ``Fault`` for an error answer, ``Unreachable`` when no answer."""
        self._ids += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": self._ids}
        if params is not None:
            message["params"] = dict(params)
        started = time.perf_counter()
        try:
            async with self.session.post(self.url, json=message,
                                         headers=self.headers) as response:
                status = response.status
                answer = await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ConnectionError) as error:
            raise Unreachable(f"{method}: {error!r}") from error
        self.ledger.latencies.append(time.perf_counter() - started)
        if status != 200:
            raise Fault({"code": -status, "message": f"HTTP {status}", "data": answer})
        if "error" in answer:
            fault = Fault(answer["error"])
            if fault.code == STALE:
                self.ledger.stale += 1
            elif fault.code in REFUSED:
                self.ledger.refused += 1
            else:
                self.ledger.faults.append({"method": method, **fault.error})
            raise fault
        return answer["result"]

    async def write(self, method: str, params: Mapping[str, Any], kind: str) -> Any:
        """A write whose acknowledgement goes to the ledger."""
        result = await self.call(method, params)
        self.ledger.acks.append(Ack(str(params.get("id", result.get("id"))),
                                    int(result["revision"]), kind, time.monotonic()))
        return result


async def new_encounter(client: Client, system: str, name: str) -> str:
    """Create an encounter of ``system`` with its two combatants; its id."""
    created = await client.call("encounter.create", {"system": system, "name": name})
    encounter = str(created["id"])
    revision = int(created["revision"])
    for combatant in COMBATANTS[system]:
        added = await client.write("encounter.add", {"id": encounter, "revision": revision,
                                                     "combatant": combatant}, "add")
        revision = int(added["revision"])
    return encounter


async def step(client: Client, system: str, encounter: str, number: int) -> None:
    """Declare for everyone waited for, resolve, and undo every fifth resolve.

    Every write names the revision just read; a 4009 ends the step early (someone else
    moved the encounter on), which only happens when clients share the encounter.
    """
    view = await client.call("encounter.get", {"id": encounter})
    revision = int(view["revision"])
    for combatant_id in list(view.get("waiting_for", [])):
        for choice in choices(system, view, combatant_id):
            client.ledger.sent_choices[(encounter, revision + 1)] = choice
            try:
                declared = await client.write(
                    "encounter.declare", {"id": encounter, "combatant_id": combatant_id,
                                          "choice": choice, "revision": revision},
                    "declare")
            except Fault as fault:
                if fault.code in REFUSED:
                    continue
                raise
            revision = int(declared["revision"])
            break
    resolved = await client.write(
        "encounter.resolve", {"id": encounter, "seed": number, "force": True,
                              "revision": revision}, "resolve")
    if number % 5 == 4:
        await client.write("encounter.undo", {"id": encounter,
                                              "revision": int(resolved["revision"])}, "undo")


async def play(client: Client, system: str, deadline: float, name: str = "load",
               encounter: str | None = None, until_unreachable: bool = False) -> str | None:
    """Drive one encounter until ``deadline`` (``time.monotonic``); its id.

    With ``until_unreachable`` a daemon that stops answering ends the game quietly (it
    was killed on purpose); the id is then ``None`` if the encounter was not created.
    """
    try:
        if encounter is None:
            encounter = await new_encounter(client, system, name)
        number = 0
        while time.monotonic() < deadline:
            try:
                await step(client, system, encounter, number)
            except Fault as fault:
                if fault.code != STALE:
                    raise
            number += 1
    except Unreachable:
        if not until_unreachable:
            raise
    return encounter


# -- replaying a log -------------------------------------------------------------------
def dice_of(rolls: list[Mapping[str, Any]]) -> dict[str, list[int]]:
    """Supplied dice (by purpose, in rolling order) that reproduce ``rolls``."""
    dice: dict[str, list[int]] = {}
    for roll in rolls:
        dice.setdefault(str(roll["purpose"]), []).append(int(roll["value"]))
    return dice


async def replay(client: Client, encounter: str,
                 sent_choices: Mapping[tuple[str, int], Mapping[str, Any]]) -> str:
    """A new encounter built only from ``encounter``'s log; its id.

    Resolves get the logged dice; a declaration the log still hides (not resolved yet)
    gets the choice the client sent for that revision.
    """
    original = await client.call("encounter.get", {"id": encounter})
    log = await client.call("encounter.log", {"id": encounter})
    created = await client.call("encounter.create", {
        "system": original["system"], "name": "replay",
        "options": original.get("options") or {}})
    copy = str(created["id"])
    for entry in log["steps"]:
        kind, params = entry["kind"], entry["params"]
        if kind == "add":
            await client.call("encounter.add", {"id": copy, "combatant": params["combatant"]})
        elif kind == "declare":
            choice = params.get("choice")
            if params.get("hidden") or choice is None:
                choice = sent_choices[(encounter, int(entry["revision"]))]
            await client.call("encounter.declare", {
                "id": copy, "combatant_id": params["combatant_id"], "choice": choice})
        elif kind == "resolve":
            call: dict[str, Any] = {"id": copy}
            if entry.get("hidden"):
                # an undone round whose choices are pending again: its dice are hidden
                # with them, and any dice do (the undo after it takes the round back)
                call["seed"] = 0
            else:
                call["dice"] = dice_of(entry["rolls"])
            if "force" in params:
                call["force"] = params["force"]
            await client.call("encounter.resolve", call)
        elif kind == "undo":
            await client.call("encounter.undo", {"id": copy})
        else:
            raise AssertionError(f"unknown step kind {kind!r} in the log")
    return copy


def comparable(view: Mapping[str, Any]) -> dict[str, Any]:
    """An ``encounter.get`` answer without what differs between two encounters."""
    return {k: v for k, v in view.items() if k not in ("id", "name")}


async def run_all(*games: Any) -> list[Any]:
    """``asyncio.gather`` that lets every game finish before raising the first error."""
    results = await asyncio.gather(*games, return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return list(results)
