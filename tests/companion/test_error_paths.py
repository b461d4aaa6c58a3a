"""Error paths are JSON Pointers (API.md "Errors", RFC 6901): a member name the client
chose (a dice purpose, a house rule id, a combatant id keying ``defenses`` or
``choices``, a condition) is one reference token, its ``~`` written ``~0`` and its ``/``
``~1``, so ``{"dice": {"a/b": ...}}`` is named at ``/dice/a~1b``, never at the two
members ``/dice/a/b``. The same holds for a path a rule violation's detail names."""

from __future__ import annotations

from typing import Any

from tests.companion.conftest import Rpc

MIND: dict[str, Any] = {"name": "A", "hit_dice": 8, "die": 8, "psionic": True,
                        "attacks": ["mental-stab"],
                        "defenses": ["blank-mind", "imagination-swarm"]}
PAIR: dict[str, Any] = {"system": "power-pool", "attacker": MIND | {"id": "a"},
                        "defender": MIND | {"id": "b"}, "attack": {"mode": "mental-stab"}}


def paths(error: dict[str, Any]) -> list[str]:
    assert error["code"] == -32602, error
    return [p["path"] for p in error["data"]["errors"]]


async def test_a_dice_purpose_with_a_slash_or_a_tilde_is_one_token_of_the_path(
        rpc: Rpc) -> None:
    """The request schema's check of ``dice`` (jsonschema's path) and the engine's check
    of faces both name the purpose as one token."""
    error = await rpc.error("exchange.resolve", PAIR | {"dice": {"a/b": ["x"], "c~d": ["x"]}})
    assert paths(error) == ["/dice/a~1b/0", "/dice/c~0d/0"]
    error = await rpc.error("exchange.resolve", PAIR | {"dice": {"a/b": [0], "c~/d": [1001]}})
    assert paths(error) == ["/dice/a~1b/0", "/dice/c~0~1d/0"]


async def test_an_unknown_house_rule_is_named_by_its_id_as_one_token(rpc: Rpc) -> None:
    error = await rpc.error("exchange.resolve", PAIR | {"options": {"H/1": True, "H~2": 1},
                                                        "seed": 1})
    assert paths(error) == ["/options/H~11", "/options/H~02"]


async def test_a_defense_for_no_creature_of_the_exchange_is_named_by_its_key(
        rpc: Rpc) -> None:
    error = await rpc.error("exchange.resolve", PAIR | {
        "defenses": {"x/y~z": {"mode": "blank-mind"}}, "seed": 1})
    assert paths(error) == ["/defenses/x~1y~0z"]


async def test_a_round_end_choice_for_no_combatant_is_named_by_its_key(rpc: Rpc) -> None:
    error = await rpc.error("exchange.end_round", {
        "system": "power-pool", "combatants": [MIND | {"id": "a"}],
        "choices": {"a/b": {}, "c~d": {}}})
    assert paths(error) == ["/choices/a~1b", "/choices/c~0d"]


async def test_a_condition_s_rounds_for_a_condition_it_lacks_is_named_by_the_condition(
        rpc: Rpc) -> None:
    """combat-strength's ``condition_rounds`` takes any member name."""
    error = await rpc.error("exchange.end_round", {
        "system": "combat-strength",
        "combatants": [{"name": "X", "condition_rounds": {"a/b": 1, "c~d": 1}}]})
    assert paths(error) == ["/combatants/0/condition_rounds/a~1b",
                            "/combatants/0/condition_rounds/c~0d"]


async def test_a_refused_round_end_choice_names_its_place_by_the_controller_s_id(
        rpc: Rpc) -> None:
    """A 4001's detail names the choice's place as a JSON Pointer too."""
    for cid, place in (("a/b", "/choices/a~1b/release/0"), ("c~d", "/choices/c~0d/release/0")):
        error = await rpc.error("exchange.end_round", {
            "system": "power-pool", "combatants": [MIND | {"id": cid}],
            "choices": {cid: {"release": ["zz"]}}})
        assert error["code"] == 4001
        assert error["data"] == {"rule": "not-controlling", "combatant": cid,
                                 "detail": f'A does not control "zz" ({place})'}


async def test_a_psionic_ally_without_its_own_defense_is_told_where_to_give_it(
        rpc: Rpc) -> None:
    """ally-psionic names the member of ``defenses`` the ally's defense goes in."""
    error = await rpc.error("exchange.resolve", PAIR | {
        "defense": {"mode": "imagination-swarm"}, "allies": [MIND | {"id": "c/d~e"}],
        "seed": 1})
    assert error["code"] == 4001 and error["data"]["rule"] == "ally-psionic"
    assert "with its own defense in /defenses/c~1d~0e (imagination-swarm)" \
        in error["data"]["detail"]
