"""A -32602 answer is short, and so is the work of finding it (API.md "Errors" and
"Limits": "-32602 naming the limit, never a hang").

The auditor's requests: 2000 distinct objects (25 KB) as a power-pool ``decline`` (at
most 8) froze the daemon for 10 s, and 8000 for over four minutes, /healthz included;
as revised-2e ``conditions`` (at most 32) alike; 50 000 strings as power-pool
``attacks`` stalled it 3.7 s for an answer of 9.5 MB. ``comparisons`` (tests/conftest.py)
counts jsonschema's pairwise checks of ``uniqueItems``.
"""

from __future__ import annotations

from typing import Any

import pytest

from companion.errors import MAX_LISTED_PROBLEMS
from engine import builtin_systems
from engine.schemacheck import MAX_ERRORS
from tests.companion.combatants import ULCEN
from tests.companion.conftest import Rpc

MIND: dict[str, Any] = {"name": "A", "hit_dice": 8, "die": 8, "psionic": True,
                        "attacks": ["mental-stab"], "defenses": ["blank-mind"]}
OBJECTS = [{"a": i} for i in range(2000)]


async def test_a_declared_decline_far_over_its_limit_is_one_problem_naming_the_limit(
        rpc: Rpc, comparisons: list[int]) -> None:
    eid = (await rpc.ok("encounter.create", {"system": "power-pool"}))["id"]
    for cid in ("a", "b"):
        await rpc.ok("encounter.add", {"id": eid, "combatant": MIND | {"id": cid}})
    error = await rpc.error("encounter.declare", {
        "id": eid, "combatant_id": "a",
        "choice": {"attack": {"mode": "mental-stab", "target": "b", "decline": OBJECTS}}})
    assert error["code"] == -32602
    assert error["data"] == {"errors": [{
        "path": "/choice/attack/decline",
        "message": "has 2000 items; at most 8 are allowed (maxItems)"}]}
    assert comparisons[0] == 0


async def test_conditions_of_distinct_objects_are_one_problem(
        rpc: Rpc, comparisons: list[int]) -> None:
    error = await rpc.error("combatants.rest", {
        "system": "revised-2e", "hours": 1,
        "combatants": [ULCEN | {"conditions": OBJECTS}]})
    assert error["data"] == {"errors": [{
        "path": "/combatants/0/conditions",
        "message": "has 2000 items; at most 32 are allowed (maxItems)"}]}
    assert comparisons[0] == 0


async def test_a_list_of_modes_longer_than_there_are_modes_is_one_problem(
        rpc: Rpc, comparisons: list[int]) -> None:
    """power-pool's ``attacks``: each mode at most once, so at most as many as there
    are (before, each of 50 000 unknown names was a problem of its own)."""
    attacks = [f"a{i}" for i in range(50_000)] + [0]
    modes = len(builtin_systems()["power-pool"].combatant_schema()["properties"]["attacks"]
                ["items"]["enum"])
    error = await rpc.error("exchange.resolve", {
        "system": "power-pool", "attacker": MIND | {"id": "a", "attacks": attacks},
        "defender": MIND | {"id": "b"}, "attack": {"mode": "mental-stab"}, "seed": 1})
    assert error["data"] == {"errors": [{
        "path": "/attacker/attacks",
        "message": f"has 50001 items; at most {modes} are allowed (maxItems)"}]}
    assert comparisons[0] == 0


@pytest.mark.parametrize(("bad", "left_off"), [
    (MAX_LISTED_PROBLEMS, None), (MAX_LISTED_PROBLEMS + 7, 7),
    (5000, MAX_ERRORS - MAX_LISTED_PROBLEMS)])
async def test_an_answer_lists_at_most_50_problems_and_counts_those_left_off(
        rpc: Rpc, bad: int, left_off: int | None) -> None:
    """Beyond the first 50 problems the answer says how many more were found; the check
    stops looking after 1000 (``MAX_ERRORS``)."""
    error = await rpc.error("exchange.end_round", {"system": "revised-2e",
                                                   "combatants": [1] * bad})
    data = error["data"]
    assert data["errors"] == [{"path": f"/combatants/{i}",
                               "message": '1 is not of type "object"'}
                              for i in range(MAX_LISTED_PROBLEMS)]
    assert data.get("left_off") == left_off
    assert set(data) == ({"errors"} if left_off is None else {"errors", "left_off"})
