"""power-pool encounters: one exchange per step, hidden choices, rounds (API.md
"Encounters", RULES.md §3, seed 001_e8815498f41c4da8)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from engine.dice import RandomDice, SuppliedDice
from engine.errors import (
    EngineError,
    InvalidInput,
    LimitExceeded,
    RulesViolation,
    UnknownCombatant,
)
from engine.power_pool import SYSTEM
from engine.revised_2e import SYSTEM as REVISED_2E

from .test_power_pool_helpers import mundane, psionic


def encounter(*combatants: dict[str, Any], options: dict[str, Any] | None = None
              ) -> dict[str, Any]:
    state = SYSTEM.encounter_new(options)
    for c in combatants:
        state, _ = SYSTEM.encounter_add(state, c)
    return state


def test_ids_come_from_the_combatant_or_a_unique_slug_of_its_name() -> None:
    state = SYSTEM.encounter_new(None)
    state, first = SYSTEM.encounter_add(state, mundane("Cave Goblin"))
    state, second = SYSTEM.encounter_add(state, mundane("Cave Goblin"))
    state, third = SYSTEM.encounter_add(state, {"id": "boss", **mundane("Cave Goblin")})
    assert (first, second, third) == ("cave-goblin", "cave-goblin-2", "boss")
    with pytest.raises(InvalidInput) as err:
        SYSTEM.encounter_add(state, {"id": "boss", **mundane("X")})
    assert err.value.problems[0].path == "/combatant/id"


def test_an_encounter_holds_at_most_64_combatants() -> None:
    """API.md limits: "64 combatants per encounter"."""
    state = SYSTEM.encounter_new(None)
    for i in range(64):
        state, _ = SYSTEM.encounter_add(state, mundane(f"Rat {i}", 1, 4))
    with pytest.raises(LimitExceeded):
        SYSTEM.encounter_add(state, mundane("One too many", 1, 4))


def test_a_step_is_one_exchange_with_hidden_choices() -> None:
    """Seed: "The psionic attacker chooses a target, and an attack mode. The defender
    chooses a defence mode". Choices stay hidden until resolution (API.md)."""
    state = encounter(psionic("Ulcen", 3, 6), psionic("Fenka", 2, 6))
    idle = SYSTEM.encounter_view(state)
    assert idle["phase"] == "attack"
    state = SYSTEM.encounter_declare(state, "ulcen",
                                     {"attack": {"mode": "mental-stab", "target": "fenka"}})
    view = SYSTEM.encounter_view(state)
    assert view["phase"] == "defense" and view["waiting_for"] == ["fenka"]
    assert (idle["struck"], view["struck"]) == ([], ["fenka"])
    # apart from who must still choose and who is struck (others may join that defense),
    # the view is what it was before the choice
    public = ("phase", "waiting_for", "declared", "struck")
    assert {k: v for k, v in view.items() if k not in public} == \
        {k: v for k, v in idle.items() if k not in public}
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_resolve(state, RandomDice(1))
    assert err.value.rule == "choices-missing"
    state = SYSTEM.encounter_declare(state, "fenka", {"defense": {"mode": "pinnacle-of-will"}})
    assert {k: v for k, v in SYSTEM.encounter_view(state).items() if k not in public} == \
        {k: v for k, v in idle.items() if k not in public}
    assert SYSTEM.encounter_waiting_for(state) == []
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"attack": [6, 6, 6], "defense": [1, 1]}))
    assert step["exchange"] == 1 and len(step["results"]) == 1
    result = step["results"][0]
    assert result["winner"] == "attacker" and result["defense"]["mode"] == "pinnacle-of-will"
    assert state["combatants"]["fenka"]["controlled_by"] == "ulcen"
    assert step["summary"]


def test_force_treats_a_missing_defense_as_no_defense_mode() -> None:
    state = encounter(psionic("A", 2, 6), psionic("B", 2, 6))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"attack": [1, 1], "defense": [6, 6]}), force=True)
    result = step["results"][0]
    assert result["defense"]["mode"] is None and result["winner"] == "defender"


def test_force_with_no_attack_declared_simply_ends_the_round() -> None:
    """API.md: `resolve` with `force: true` takes a missing choice as no attack: with
    none declared, the round ends though some could still attack."""
    state = encounter(psionic("A", 2, 6), psionic("B", 2, 6))
    state = SYSTEM.encounter_declare(state, "a", {"pass": True})
    state, step = SYSTEM.encounter_resolve(state, RandomDice(1), force=True)
    assert step["results"] == [] and step["summary"] == "Round 1 ends."
    assert step["events"] == [{"type": "round-ended", "combatant": None, "round": 1}]
    assert state["round"] == 2 and SYSTEM.encounter_waiting_for(state) == ["a", "b"]


def test_rounds_end_when_nobody_can_attack_and_timers_tick() -> None:
    """Seed: the attacker is "dazed during the round psionic combat occurs"; a rebuffed
    attacker "is stunned for one round" (through the next round's end)."""
    state = encounter(psionic("A", 2, 6), psionic("B", 2, 6, attacks=[]))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    state = SYSTEM.encounter_declare(state, "b", {"defense": {}})
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"attack": [1, 1], "defense": [6, 6]}))
    a = state["combatants"]["a"]
    # A was the only one able to attack, so round 1 ended: dazed gone, stunned left
    assert step["round"] == 1 and state["round"] == 2
    assert a["conditions"] == ["stunned"] and a["condition_rounds"] == {"stunned": 1}
    # the summary says what ran out, as the other systems' do
    assert step["summary"].endswith("A is no longer dazed. Round 1 ends."), step["summary"]
    assert SYSTEM.encounter_waiting_for(state) == []  # A is stunned: nobody can attack
    state, step = SYSTEM.encounter_resolve(state, RandomDice(1))
    assert step["results"] == [] and state["round"] == 3
    assert state["combatants"]["a"]["conditions"] == []
    assert step["summary"] == "A is no longer stunned. Round 2 ends."


def test_who_attacked_or_passed_in_a_round_may_attack_again_in_the_next() -> None:
    """Seed: "Psionic combat occurs in normal initiative order", round after round: a new
    round waits again for everyone who can attack."""
    state = encounter(psionic("A", 2, 6), psionic("B", 2, 6))
    state = SYSTEM.encounter_declare(state, "a", {"pass": True})
    state = SYSTEM.encounter_declare(state, "b", {"pass": True})
    state, _ = SYSTEM.encounter_resolve(state, RandomDice(1))
    assert state["round"] == 2 and state["acted"] == []
    assert SYSTEM.encounter_waiting_for(state) == ["a", "b"]


def test_every_combatant_s_timers_tick_as_the_round_ends() -> None:
    """`condition_rounds` counts the round ends a condition still lasts, for each
    creature of the encounter, not the first alone."""
    state = encounter(psionic("A", conditions=["frightened"],
                              condition_rounds={"frightened": 1}),
                      psionic("B", conditions=["frightened"],
                              condition_rounds={"frightened": 2}),
                      psionic("C", conditions=["frightened"],
                              condition_rounds={"frightened": 1}))
    for cid in ("a", "b", "c"):
        state = SYSTEM.encounter_declare(state, cid, {"pass": True})
    state, step = SYSTEM.encounter_resolve(state, RandomDice(1))
    cs = state["combatants"]
    assert [cs[c]["condition_rounds"] for c in ("a", "b", "c")] == [{}, {"frightened": 1}, {}]
    assert step["summary"] == ("A is no longer frightened. C is no longer frightened. "
                               "Round 1 ends.")


def test_the_view_shows_every_house_rule_in_force_as_the_other_systems_do() -> None:
    """encounter.get's `options` is every house rule's value, defaults included, as
    revised-2e's and combat-strength's are (it held only those set at creation)."""
    defaults = SYSTEM.options(None)
    assert len(defaults) > 1
    assert SYSTEM.encounter_view(encounter(psionic("A")))["options"] == defaults
    half = SYSTEM.encounter_view(encounter(psionic("A"), options={"H-PP-RECOVERY": "half"}))
    assert half["options"] == {**defaults, "H-PP-RECOVERY": "half"}


def test_an_encounter_with_a_house_rule_it_does_not_know_is_refused_when_made() -> None:
    """Options are checked as the encounter is made, not at its first view or step."""
    with pytest.raises(InvalidInput) as err:
        SYSTEM.encounter_new({"H-PP-RECOVERY": "most"})
    assert err.value.problems[0].path == "/options/H-PP-RECOVERY"


def test_a_creature_with_no_die_in_its_pool_is_not_waited_for() -> None:
    """A puppet set free keeps pool 0 until it rests (seed 001: control expends its
    pool); with no die to roll it could only lose. The round did not end until it
    passed, every round; now it is not waited for, and an attack by it is refused with
    the reason."""
    state = encounter(psionic("A", 2, 6), psionic("B", 2, 6), psionic("Freed", 2, 6, pool=0),
                      psionic("Keeper", 1, 6, pool=0, dedicated=[{"purpose": "levitation"}]))
    assert SYSTEM.encounter_waiting_for(state) == ["a", "b"]
    for cid, why in (("freed", "a long rest gives dice back"), ("keeper", "dedicated")):
        with pytest.raises(RulesViolation) as err:
            SYSTEM.encounter_declare(state, cid, {"attack": {"mode": "mental-stab",
                                                             "target": "a"}})
        assert err.value.rule == "cannot-attack" and why in err.value.detail
    state = SYSTEM.encounter_declare(state, "a", {"pass": True})
    state = SYSTEM.encounter_declare(state, "b", {"pass": True})
    state, step = SYSTEM.encounter_resolve(state, RandomDice(1))
    assert state["round"] == 2 and step["summary"] == "Round 1 ends."


def test_with_ties_to_the_attacker_an_empty_pool_may_still_attack_unwaited() -> None:
    """H-PP-TIE 'attacker': an attacker rolling nothing wins against a defender that
    rolls nothing too (asleep, no cognitive-labyrinth), so its attack is no sure loss and
    is taken, as exchange.resolve takes it; it is still not waited for."""
    state = encounter(psionic("Freed", 2, 6, pool=0), psionic("B", 2, 6, conditions=["asleep"],
                                                         defenses=["pinnacle-of-will"]),
                      options={"H-PP-TIE": "attacker"})
    assert SYSTEM.encounter_waiting_for(state) == []
    state = SYSTEM.encounter_declare(state, "freed", {"attack": {"mode": "mental-stab",
                                                                 "target": "b"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({}))
    assert state["combatants"]["b"]["controlled_by"] == "freed"
    assert "A tie goes to the attacker" in step["summary"]


def test_a_public_action_says_what_it_did() -> None:
    """A public action changes the encounter when declared; encounter_action gives the
    same state as encounter_declare and its events and summary, for the GM's log."""
    state = encounter(psionic("Ix", 3, 6, controlling=[{"id": "p", "kept_by": "action"},
                                                       {"id": "q", "kept_by": "action"}]),
                      psionic("P", 1, 4, controlled_by="ix", pool=0),
                      psionic("Q", 1, 4, controlled_by="ix", pool=0),
                      psionic("Tired", 4, 6, pool=1))
    cases = [
        ("ix", {"keep": {"target": "p", "by": "die"}}, ["control-kept"],
         "Ix keeps control of P by a die from its pool from now on (2 left)."),
        ("ix", {"release": "p"}, ["control-ended"], "Ix releases P."),
        ("ix", {"cannot_perceive": "q"}, ["control-ended"],
         "Ix loses sight of Q: the control ends."),
        ("tired", {"pass": True}, [], "Tired passes this round."),
        ("tired", {"rest": True}, ["pool-regained"],
         "Tired takes a long rest. Tired regains 3 dice (4 in the pool)."),
    ]
    for cid, choice, types, summary in cases:
        after, said = SYSTEM.encounter_action(state, cid, choice)
        assert after == SYSTEM.encounter_declare(state, cid, choice)
        assert [e["type"] for e in said["events"]] == types, choice
        assert said["summary"] == summary
    resting = encounter(psionic("Ix", 3, 6, controlling=[{"id": "p", "kept_by": "action"}]),
                        psionic("P", 1, 4, controlled_by="ix", pool=0))
    _, said = SYSTEM.encounter_action(resting, "ix", {"rest": True})
    assert said["summary"].startswith("Ix takes a long rest. Ix rests and spends no action")
    assert [e["type"] for e in said["events"]] == ["control-ended"]


def test_attack_phase_waits_for_an_attack_or_a_pass() -> None:
    state = encounter(psionic("A"), psionic("B"))
    assert SYSTEM.encounter_waiting_for(state) == ["a", "b"]
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_resolve(state, RandomDice(1))
    assert err.value.rule == "choices-missing"
    assert err.value.detail == "waiting for an attack or a pass from ['a', 'b']"
    state = SYSTEM.encounter_declare(state, "a", {"pass": True})
    with pytest.raises(RulesViolation) as again:
        SYSTEM.encounter_declare(state, "a", {"pass": True})
    assert again.value.rule == "already-acted"
    assert again.value.detail == "A has already attacked or passed this round"
    state = SYSTEM.encounter_declare(state, "b", {"pass": True})
    state, step = SYSTEM.encounter_resolve(state, RandomDice(1))
    assert state["round"] == 2 and step["exchange"] is None


def test_one_who_attacked_this_round_cannot_pass_as_well() -> None:
    """A pass is logged once: after its attack a creature has acted this round."""
    state = encounter(psionic("A", 3, 6), psionic("B", 3, 6), psionic("C", 3, 6))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    state = SYSTEM.encounter_declare(state, "b", {"defense": {}})
    state, _ = SYSTEM.encounter_resolve(state, RandomDice(4))
    assert state["acted"] == ["a"] and state["round"] == 1
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "a", {"pass": True})
    assert err.value.rule == "already-acted"


def test_attacking_a_puppet_waits_for_its_controller() -> None:
    """Seed: "Psionically attacking a creature under psionic control automatically
    attacks the controller". A controls B; C attacks B; A must defend."""
    state = encounter(psionic("A", 2, 6, controlling=[{"id": "b", "kept_by": "action"}]),
                      psionic("B", 3, 6, controlled_by="a"), psionic("C", 3, 6))
    state = SYSTEM.encounter_declare(state, "c", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    assert SYSTEM.encounter_waiting_for(state) == ["a"]
    with pytest.raises(RulesViolation) as refused:  # the puppet is not the one struck
        SYSTEM.encounter_declare(state, "b", {"defense": {}})
    assert refused.value.rule == "not-defending"
    state = SYSTEM.encounter_declare(state, "a", {"defense": {}})
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"attack": [6, 6, 6], "defense": [1, 1]}))
    assert step["results"][0]["redirected"] == [{"from": "b", "to": "a"}]
    cs = state["combatants"]
    assert cs["a"]["controlled_by"] == "c" and cs["b"]["controlled_by"] is None
    assert cs["c"]["controlling"][0]["id"] == "a"


@pytest.mark.parametrize("targets", [("b", "a"), ("a", "b")])
def test_a_wave_at_a_puppet_and_its_controller_strikes_the_controller_once(
        targets: tuple[str, str]) -> None:
    """Seed: attacking a creature under control "automatically attacks the controller".
    A wave at B and at its controller A gives A's sheet to the exchange twice, as a
    target and as B's controller, the same sheet both times: it is taken, A defends once
    and falls under C's control, and B, whose controller it was, goes free."""
    state = encounter(psionic("A", 2, 6, controlling=[{"id": "b", "kept_by": "action"}]),
                      psionic("B", 3, 6, controlled_by="a"), psionic("C", 3, 6))
    state = SYSTEM.encounter_declare(state, "c", {"attack": {
        "mode": "psionic-wave", "target": targets[0], "targets": [targets[1]]}})
    assert SYSTEM.encounter_waiting_for(state) == ["a"]
    state = SYSTEM.encounter_declare(state, "a", {"defense": {"mode": "pinnacle-of-will"}})
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"attack": [6, 6, 6], "defense": [1, 1]}))
    assert [m["id"] for m in step["results"][0]["defense"]["members"]] == ["a"]
    cs = state["combatants"]
    assert cs["a"]["controlled_by"] == "c" and cs["b"]["controlled_by"] is None
    assert [e["id"] for e in cs["c"]["controlling"]] == ["a"]


def test_wave_targets_each_declare_and_fall_together() -> None:
    state = encounter(psionic("A", 4, 8), psionic("B", 1, 4), psionic("C", 1, 4))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {
        "mode": "psionic-wave", "target": "b", "targets": ["c"]}})
    assert SYSTEM.encounter_waiting_for(state) == ["b", "c"]
    assert SYSTEM.encounter_view(state)["struck"] == ["b", "c"]
    state = SYSTEM.encounter_declare(state, "b", {"defense": {"mode": "pinnacle-of-will"}})
    # the group is led by the mind struck first: only its allies are drawn in, so another
    # mind's are refused rather than dropped
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "c", {"defense": {"allies": ["a"]}})
    assert (err.value.rule, err.value.combatant) == ("allies-first-mind-only", "c")
    state = SYSTEM.encounter_declare(state, "c", {"defense": {}})
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"attack": [8, 8, 8, 8], "defense": [1, 1]}))
    assert step["results"][0]["defense_total"] == 2
    cs = state["combatants"]
    assert cs["b"]["controlled_by"] == cs["c"]["controlled_by"] == "a"
    # Psionic Wave: "all defenders must be released simultaneously"
    state = SYSTEM.encounter_declare(state, "a", {"release": "b"})
    cs = state["combatants"]
    assert cs["b"]["controlled_by"] is None and cs["c"]["controlled_by"] is None
    assert cs["a"]["controlling"] == []


def test_swarm_allies_and_a_joining_psionic() -> None:
    """Seed: Imagination Swarm draws allied non-psionic creatures in; "Psionically active
    creatures may also use this defence mode to participate"."""
    state = encounter(psionic("A", 2, 8), psionic("B", 1, 4), mundane("Guard", 2, 8),
                      psionic("Seer", 1, 6))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    state = SYSTEM.encounter_declare(state, "b", {"defense": {"mode": "imagination-swarm",
                                                              "allies": ["guard"]}})
    state = SYSTEM.encounter_declare(state, "seer", {"defense": {
        "mode": "imagination-swarm"}})
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"attack": [1, 1], "defense": [4, 8, 6]}))
    result = step["results"][0]
    assert result["defense_total"] == 18 and result["winner"] == "defender"
    assert {m["id"] for m in result["defense"]["members"]} == {"b", "guard", "seer"}


def test_a_psionic_bystander_may_say_it_stays_out_as_secretly_as_joining() -> None:
    """API.md: no method shows a hidden choice before it is resolved. Joining was the
    only thing a bystander could declare, so `declared` (and the log) told the attacker
    who joined. Staying out (`{"defense": {}}` or a null mode) is declared the same way,
    held as a pending choice, and changes nothing in the exchange. A null defense
    (API.md: as in exchange.resolve, no mode) is the same."""
    state = encounter(psionic("A", 2, 8), psionic("B", 1, 4), psionic("Seer", 1, 6),
                      psionic("Sage", 1, 6))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    joined = SYSTEM.encounter_declare(state, "seer", {"defense": {
        "mode": "imagination-swarm"}})
    out = SYSTEM.encounter_declare(state, "seer", {"defense": {}})
    out = SYSTEM.encounter_declare(out, "sage", {"defense": {"mode": None}})
    assert SYSTEM.encounter_view(joined)["declared"] == ["a", "seer"]
    view = SYSTEM.encounter_view(out)
    assert view["declared"] == ["a", "sage", "seer"] and view["waiting_for"] == ["b"]
    assert SYSTEM.encounter_pending_choices(out) == {
        "a": {"mode": "mental-stab", "target": "b"},
        "seer": {"stays_out": True}, "sage": {"stays_out": True}}
    # joining after staying out, and staying out after joining, replace each other
    back = SYSTEM.encounter_declare(out, "seer", {"defense": {"mode": "imagination-swarm"}})
    assert SYSTEM.encounter_pending_choices(back)["seer"] == {"mode": "imagination-swarm"}
    again = SYSTEM.encounter_declare(joined, "seer", {"defense": {}})
    assert SYSTEM.encounter_pending_choices(again)["seer"] == {"stays_out": True}
    dice = {"attack": [2, 2], "defense": [3]}
    _, alone = SYSTEM.encounter_resolve(SYSTEM.encounter_declare(state, "b", {"defense": {}}),
                                        SuppliedDice(dice))
    _, stayed = SYSTEM.encounter_resolve(SYSTEM.encounter_declare(again, "b", {"defense": {}}),
                                         SuppliedDice(dice))
    assert stayed == alone
    # a null defense is no mode, as exchange.resolve takes it: the same stay-out, and
    # the struck mind's same defense without a mode
    nulled = SYSTEM.encounter_declare(joined, "seer", {"defense": None})
    assert SYSTEM.encounter_pending_choices(nulled)["seer"] == {"stays_out": True}
    _, bare = SYSTEM.encounter_resolve(SYSTEM.encounter_declare(state, "b", {"defense": None}),
                                       SuppliedDice(dice))
    assert bare == alone
    # a new attack starts the defenses over, stay-outs too
    redeclared = SYSTEM.encounter_declare(out, "a", {"attack": {"mode": "mental-stab",
                                                                "target": "b"}})
    assert SYSTEM.encounter_view(redeclared)["declared"] == ["a"]


@pytest.mark.parametrize(("who", "defense"), [
    ("guard", {}),                              # not psionic: it has nothing to join with
    ("puppet", {}),                             # a target: its controller defends for it
    ("seer", {"mode": None, "pool_dice": 1}),   # staying out takes nothing else
])
def test_staying_out_is_for_a_free_psionic_bystander_and_takes_nothing_else(
        who: str, defense: dict[str, Any]) -> None:
    state = encounter(psionic("A", 2, 8), psionic("B", 2, 6, controlling=[
        {"id": "puppet", "kept_by": "action"}]), psionic("Puppet", 1, 4, controlled_by="b"),
        mundane("Guard", 2, 8), psionic("Seer", 1, 6))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "puppet"}})
    before = json.dumps(state, sort_keys=True)
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, who, {"defense": defense})
    assert err.value.rule == "not-defending"
    assert json.dumps(state, sort_keys=True) == before


def test_a_stay_out_survives_a_refresh_unless_the_creature_is_struck_now() -> None:
    """A refresh declares the pending choices again (API.md encounter.refresh): a
    bystander's stay-out stays; one held by a creature that now defends (it controls a
    target) is dropped, as "no mode" would read as its own defense: it declares again."""
    seer = psionic("Seer", 1, 6)
    state = encounter(psionic("A", 2, 8), psionic("B", 1, 4), seer)
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    state = SYSTEM.encounter_declare(state, "seer", {"defense": {}})
    kept = SYSTEM.encounter_replace(state, "seer", {**seer, "pool": 0})
    assert SYSTEM.encounter_view(kept)["declared"] == ["a", "seer"]
    # Both sheets of a control link change one refresh at a time, so a stay-out held by
    # a creature struck now is made here by hand.
    held = encounter(psionic("A", 2, 8), psionic("B", 1, 4, controlled_by="seer", pool=0),
                     psionic("Seer", 1, 6, controlling=[{"id": "b", "kept_by": "action"}]))
    held = SYSTEM.encounter_declare(held, "a", {"attack": {"mode": "mental-stab",
                                                           "target": "b"}})
    held["pending"]["stayed_out"] = ["seer"]
    view = SYSTEM.encounter_view(SYSTEM.encounter_replace(held, "a", held["combatants"]["a"]))
    assert view["struck"] == ["seer"] and view["declared"] == ["a"]
    assert view["waiting_for"] == ["seer"]


def test_a_refresh_keeps_a_struck_defenders_defense_of_no_mode() -> None:
    """`{"defense": {}}` from a struck defender is its own defense (the whole pool, no
    mode), which both VTTs send: a refresh must keep it (it was dropped, and the log's
    dropped_choices told the attacker the defender chose no mode)."""
    c = psionic("C", 1, 6)
    state = encounter(psionic("A", 2, 8), psionic("B", 1, 4), c)
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    state = SYSTEM.encounter_declare(state, "b", {"defense": {}})
    before = SYSTEM.encounter_pending_choices(state)
    after = SYSTEM.encounter_replace(state, "c", {**c, "hit_dice": 2})
    assert SYSTEM.encounter_pending_choices(after) == before
    assert SYSTEM.encounter_waiting_for(after) == []


def test_a_refresh_that_puts_a_defense_over_the_dice_limit_drops_that_defense() -> None:
    """A first mind's own dice and its allies' over 100 are its choice's doing: once a
    refreshed ally's pool puts them there, that defense is dropped and declared again,
    not the refresh refused."""
    guard = mundane("M", 30, 6)
    state = encounter(psionic("A", 40, 6), psionic("L", 40, 6), guard, mundane("N", 30, 6),
                      options={"H-PP-GROUP": "all-dice"})
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "l"}})
    state = SYSTEM.encounter_declare(state, "l", {"defense": {
        "mode": "imagination-swarm", "allies": ["m", "n"]}})
    after = SYSTEM.encounter_replace(state, "m", {**guard, "hit_dice": 50})
    assert "l" not in SYSTEM.encounter_pending_choices(after)
    assert SYSTEM.encounter_waiting_for(after) == ["l"]


@pytest.mark.parametrize("answer", [{"mode": "imagination-swarm"}, {"mode": None}])
@pytest.mark.parametrize("change", [{"conditions": ["asleep"]},
                                    {"defenses": ["pinnacle-of-will"]},
                                    {"hit_dice": 120}])  # a whole pool over the limit
def test_a_refresh_that_rules_a_join_out_does_not_tell_it_from_a_stay_out(
        answer: dict[str, Any], change: dict[str, Any]) -> None:
    """A join the sheets no longer allow becomes a stay-out, so the refresh drops
    nothing either way (a dropped join told the attacker who had joined)."""
    seer = psionic("Seer", 1, 6)
    state = encounter(psionic("A", 2, 8), psionic("B", 1, 4), seer)
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    state = SYSTEM.encounter_declare(state, "seer", {"defense": answer})
    after = SYSTEM.encounter_replace(state, "seer", {**seer, **change})
    assert SYSTEM.encounter_view(after)["declared"] == ["a", "seer"]
    assert SYSTEM.encounter_pending_choices(after)["seer"] == {"stays_out": True}


def test_what_a_declaration_is_told_does_not_depend_on_secret_joins() -> None:
    """Accepting or refusing one declaration must not tell another's secret answer, nor
    the attacker's hidden choice: a struck mind naming a psionic creature among its
    allies is refused the same whether that creature joined, stayed out or said nothing;
    a join the attacker's dice could not keep under control (keep_by die in a wave) is
    accepted all the same (the resolve settles it:
    test_a_wave_the_joins_outgrow_is_kept_by_one_action_when_resolved)."""
    told = []
    for answer in (None, {"mode": "imagination-swarm"}, {"mode": None}):
        state = _wave_kept_by_dice()
        if answer is not None:
            state = SYSTEM.encounter_declare(state, "seer", {"defense": answer})
        with pytest.raises(RulesViolation) as err:
            SYSTEM.encounter_declare(state, "b", {"defense": {
                "mode": "imagination-swarm", "allies": ["seer"]}})
        told.append((err.value.rule, err.value.detail, err.value.combatant))
        # Sage joins: 4 creatures for A's 3 dice when Seer joined, 3 otherwise
        state = SYSTEM.encounter_declare(state, "sage", {"defense": {
            "mode": "imagination-swarm"}})
        assert "sage" in SYSTEM.encounter_view(state)["declared"]
    assert told[0] == told[1] == told[2] and told[0][0] == "ally-psionic"
    assert told[0][2] == "seer"  # the creature refused as an ally is named
    assert told[0][1].startswith("/choice/defense/allies/0: Seer is psionic")


def _wave_kept_by_dice() -> dict[str, Any]:
    """A (3 dice) has declared a psionic wave at B and C, to keep them by a die each;
    Seer and Sage may join."""
    state = encounter(psionic("A", 3, 8), psionic("B", 1, 4), psionic("C", 1, 4),
                      psionic("Seer", 1, 6), psionic("Sage", 1, 6))
    return SYSTEM.encounter_declare(state, "a", {"attack": {
        "mode": "psionic-wave", "target": "b", "targets": ["c"], "keep_by": "die"}})


def test_a_wave_the_joins_outgrow_is_kept_by_one_action_when_resolved() -> None:
    """Seed 001, Psionic Wave: "the attacker may use a single action to maintain psionic
    control of all of the defenders simultaneously"; control by die is "a die" dedicated
    to each (README "Groups"). Two secret joins make 4 creatures for A's 3 dice: the
    resolve is not refused (it told A's secret keep_by and how many joined, and nothing
    could get past it, not even force); the wave is kept whole by one action, and the
    step says why."""
    state = SYSTEM.encounter_declare(_wave_kept_by_dice(), "seer", {"defense": {
        "mode": "imagination-swarm"}})
    state = SYSTEM.encounter_declare(state, "sage", {"defense": {"mode": "imagination-swarm"}})
    for cid in ("b", "c"):
        state = SYSTEM.encounter_declare(state, cid, {"defense": {"mode": "blank-mind"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({
        "save": [20, 20], "attack": [8, 8, 8], "defense": [1, 1, 1, 1]}))
    a = state["combatants"]["a"]
    assert {e["id"]: e["kept_by"] for e in a["controlling"]} == {
        "b": "action", "c": "action", "seer": "action", "sage": "action"}
    assert (a["pool"], a["dedicated"]) == (3, [])
    result = step["results"][0]
    assert result["attack"]["keep_by"] == "die"
    assert {e["kept_by"] for e in result["effects"] if e["effect"] == "controlled"} == \
        {"action"}
    assert {"type": "kept-by-action-instead", "combatant": "a", "asked": "die",
            "creatures": 4, "pool": 3} in result["events"]
    assert ("A wins: B, C, Seer and Sage fall under its psionic control as one link (kept "
            "by one action each round for them all). A asked to keep them by a die each, "
            "but its pool holds 3 dice for 4 creatures.") in step["summary"]
    # with as many dice as creatures, the wave is kept by dice as asked
    state = SYSTEM.encounter_declare(_wave_kept_by_dice(), "seer", {"defense": {
        "mode": "imagination-swarm"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({
        "attack": [8, 8, 8], "defense": [1, 1, 1]}), force=True)
    assert {e["kept_by"] for e in state["combatants"]["a"]["controlling"]} == {"die"}
    assert "kept-by-action-instead" not in [e["type"] for e in step["events"]]


@pytest.mark.parametrize("allies", [["cat"], ["cat", "rat"]])
def test_a_first_mind_s_refused_allies_tell_nothing_of_another_struck_mind_s_defense(
        allies: list[str]) -> None:
    """Seed 001, Imagination Swarm: "The defender may choose draw allied non-psionic
    creatures into the psionic combat". Bee, struck first by a wave, names Cat without
    using imagination-swarm: the refusal is the same whether Eel, struck too, secretly
    chose imagination-swarm or not (it said "in a psionic wave only the mind struck
    first ... draws" when Eel had, telling Bee Eel's secret)."""
    told = []
    for eel in (None, {"mode": "blank-mind"}, {"mode": "imagination-swarm"},
                {"mode": "imagination-swarm", "pool_dice": 1}):
        state = encounter(psionic("Att", 4, 8), psionic("Bee", 4, 8), psionic("Eel", 4, 8),
                          mundane("Dog", 2, 6), mundane("Cat", 2, 6), mundane("Rat", 1, 4))
        state = SYSTEM.encounter_declare(state, "att", {"attack": {
            "mode": "psionic-wave", "target": "bee", "targets": ["eel", "dog"]}})
        if eel is not None:
            state = SYSTEM.encounter_declare(state, "eel", {"defense": eel})
        with pytest.raises(RulesViolation) as err:
            SYSTEM.encounter_declare(state, "bee", {"defense": {
                "mode": "blank-mind", "allies": allies}})
        told.append((err.value.rule, err.value.detail, err.value.combatant))
    assert all(t == told[0] for t in told), told
    assert told[0] == ("ally-needs-imagination-swarm", (
        "/choice/defense/allies/0: non-psionic allies are drawn in only by a defender using "
        "imagination-swarm"), "cat")


def stab_at_l_and_swarm(state: dict[str, Any], joins: str) -> dict[str, Any]:
    """A's Mental Stab at L, then each of ``joins`` (ids, in that order) defending with
    Imagination Swarm."""
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "l"}})
    for cid in joins:
        state = SYSTEM.encounter_declare(state, cid, {"defense": {
            "mode": "imagination-swarm"}})
    return state


def test_a_group_over_the_dice_limit_by_secret_choices_is_capped_when_resolved() -> None:
    """API.md limits: at most 100 dice in a pool; RULES.md §4: "Every unbounded mechanic
    has a cap and says in the result when the cap was reached". A defending group over
    it because of others' secret joins is neither refused to the mind declaring (the
    total would tell it who joined) nor at resolve (nobody chose the total, and nothing
    could get past it): the first 100 dice are rolled, the mind struck first first, then
    the joins in the order they came, and the step says so."""
    state = encounter(psionic("A", 40, 6), psionic("L", 40, 6), psionic("J", 35, 6),
                      psionic("K", 35, 6), psionic("M", 10, 6))
    state = stab_at_l_and_swarm(state, "jklm")
    assert SYSTEM.encounter_view(state)["declared"] == ["a", "j", "k", "l", "m"]
    state, step = SYSTEM.encounter_resolve(state, RandomDice(1))
    members = step["results"][0]["defense"]["members"]
    assert [(m["id"], m["dice"]) for m in members] == [
        ("l", 40), ("j", 35), ("k", 25), ("m", 0)]
    defense = [r for r in step["results"][0]["rolls"] if r["purpose"] == "defense"]
    assert len(defense) == 100
    assert {"type": "group-dice-capped", "combatant": None, "dice": 120, "limit": 100,
            "cut": [{"id": "k", "dice": 25, "of": 35}, {"id": "m", "dice": 0, "of": 10}]
            } in step["events"]
    assert ("The group would roll 120 dice, over the limit of 100, so the first 100 are "
            "rolled, the minds struck first, then the allies in the order they came in: K "
            "rolls 25 of its 35 dice, and M none.") in step["summary"]


def test_members_the_dice_limit_leaves_with_no_die_are_told_together() -> None:
    """RULES.md §4: the step says when the cap was reached: the limit reached at a
    member's last die leaves the joins after it none ("K and M roll none")."""
    state = encounter(psionic("A", 40, 6), psionic("L", 50, 6), psionic("J", 50, 6),
                      psionic("K", 10, 6), psionic("M", 10, 6))
    state = stab_at_l_and_swarm(state, "jkml")
    state, step = SYSTEM.encounter_resolve(state, RandomDice(1))
    assert [(m["id"], m["dice"]) for m in step["results"][0]["defense"]["members"]] == [
        ("l", 50), ("j", 50), ("k", 0), ("m", 0)]
    assert ("The group would roll 120 dice, over the limit of 100, so the first 100 are "
            "rolled, the minds struck first, then the allies in the order they came in: K "
            "and M roll none.") in step["summary"]


def test_a_first_mind_over_the_dice_limit_with_its_own_allies_is_refused_at_once() -> None:
    """The first mind's own dice and those of the allies it draws in are its choice
    alone: over the limit, it is refused at its choice's place; another struck mind's
    pool, whatever it secretly chose to roll of it, does not count (it told that
    choice)."""
    crowd = encounter(psionic("A", 40, 6), psionic("L", 60, 6), mundane("M", 30, 6),
                      mundane("N", 30, 6), psionic("E", 45, 6),
                      options={"H-PP-GROUP": "all-dice"})
    crowd = SYSTEM.encounter_declare(crowd, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "l"}})
    with pytest.raises(LimitExceeded) as err:
        SYSTEM.encounter_declare(crowd, "l", {"defense": {
            "mode": "imagination-swarm", "allies": ["m", "n"]}})
    assert [(p.path, p.message) for p in err.value.problems] == [(
        "/choice/defense", "L and the allies it draws in would roll 120 dice; the limit "
                           "is 100")]
    wave = SYSTEM.encounter_declare(crowd, "a", {"attack": {
        "mode": "psionic-wave", "target": "l", "targets": ["e"]}})
    for e in (None, {"pool_dice": 1}, {"mode": "imagination-swarm"}):
        state = wave if e is None else SYSTEM.encounter_declare(wave, "e", {"defense": e})
        state = SYSTEM.encounter_declare(state, "l", {"defense": {
            "mode": "imagination-swarm", "allies": ["m"]}})
        assert SYSTEM.encounter_waiting_for(state) == ([] if e else ["e"])


def test_a_target_whose_whole_pool_passes_the_dice_limit_may_be_attacked() -> None:
    """A struck mind that has not answered rolls its whole pool: nobody chose those 120
    dice, so the attack is taken (it was refused at the defender's /defense/pool_dice,
    which the attacker cannot give, and nobody could attack L at all) and a forced
    resolve rolls the first 100 (group-dice-capped). L's own answer of its whole pool
    is its choice, and refused."""
    state = encounter(psionic("A", 40, 6), psionic("L", 120, 6))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "l"}})
    assert SYSTEM.encounter_waiting_for(state) == ["l"]
    with pytest.raises(LimitExceeded) as err:
        SYSTEM.encounter_declare(state, "l", {"defense": {}})
    assert [p.path for p in err.value.problems] == ["/choice/defense/pool_dice"]
    _, step = SYSTEM.encounter_resolve(state, RandomDice(3), force=True)
    capped = [e for e in step["events"] if e["type"] == "group-dice-capped"]
    assert capped == [{"type": "group-dice-capped", "combatant": None, "dice": 120,
                       "limit": 100, "cut": [{"id": "l", "dice": 100, "of": 120}]}]
    assert ("L would roll 120 dice, over the limit of 100, so it rolls the first 100."
            in step["summary"])
    assert "group" not in step["summary"]


def test_the_first_mind_s_dice_over_the_limit_are_no_refusal_of_another_struck_mind() -> None:
    """Only the first mind's own choice is refused for its dice: another mind of the
    wave that declares is never refused for them (the first may still choose fewer)."""
    wave = encounter(psionic("A", 40, 6), psionic("L", 120, 6), psionic("E", 4, 6))
    wave = SYSTEM.encounter_declare(wave, "a", {"attack": {
        "mode": "psionic-wave", "target": "l", "targets": ["e"]}})
    wave = SYSTEM.encounter_declare(wave, "e", {"defense": {"pool_dice": 1}})
    assert SYSTEM.encounter_waiting_for(wave) == ["l"]


def test_a_first_mind_drawing_allies_in_to_exactly_100_dice_is_taken() -> None:
    """API.md limits: "at most 100 dice in one ... pool": 98 dice of its own and two
    allies drawn in (H-PP-GROUP: a die each) are 100, within the limit."""
    state = encounter(psionic("A", 40, 6), psionic("L", 98, 6), mundane("M", 2, 6),
                      mundane("N", 2, 6))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "l"}})
    state = SYSTEM.encounter_declare(state, "l", {"defense": {
        "mode": "imagination-swarm", "allies": ["m", "n"]}})
    assert SYSTEM.encounter_waiting_for(state) == []


@pytest.mark.parametrize(("ally", "rule", "words"), [
    ("dog", "ally-struck", "Dog is struck by this attack and defends itself; it cannot "
                           "also be drawn in"),
    ("eel", "ally-struck", "Eel is struck by this attack and defends itself; it cannot "
                           "also be drawn in"),
    ("att", "ally-attacker", "Att is the attacker; it cannot be drawn into the defense "
                             "against its own attack"),
    ("pup", "ally-struck", "Pup is a target of this attack, which strikes its controller "
                           "in its place; it cannot also be drawn in"),
    ("ix", "ally-struck", "Ix is struck by this attack (in the place of a creature it "
                          "controls) and defends itself; it cannot also be drawn in"),
])
def test_the_attacker_or_a_creature_attacked_is_no_ally_to_draw_in(
        ally: str, rule: str, words: str) -> None:
    """Seed 001, Imagination Swarm: the defender may "draw allied non-psionic creatures
    into the psionic combat"; a creature the attack strikes defends already, and the
    attacker is no ally. Naming one is refused by the rules at the ally's place in the
    choice (it was -32602 'id "dog" is already used at /defenders/1: give each creature
    an id of its own', about a request the caller never wrote)."""
    state = encounter(psionic("Att", 4, 8), psionic("Bee", 4, 8), psionic("Eel", 4, 8),
                      mundane("Dog", 2, 6), mundane("Cat", 2, 6),
                      psionic("Ix", 3, 6, controlling=[{"id": "pup", "kept_by": "action"}]),
                      psionic("Pup", 2, 6, controlled_by="ix", pool=0))
    state = SYSTEM.encounter_declare(state, "att", {"attack": {
        "mode": "psionic-wave", "target": "bee", "targets": ["eel", "dog", "pup"]}})
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "bee", {"defense": {
            "mode": "imagination-swarm", "allies": ["cat", ally]}})
    assert (err.value.rule, err.value.detail, err.value.combatant) == (
        rule, f"/choice/defense/allies/1: {words}", ally)


# -- differential: nothing a side is told depends on another's secret ---------------------
_DEFENSES = ["barrier-mantra", "blank-mind", "cognitive-labyrinth", "imagination-swarm",
             "pinnacle-of-will"]
#: Bee, Eel and Fox roll 110 dice together, over the limit of 100; Att has 3 dice
_ROSTER = [psionic("Att", 3, 8), psionic("Bee", 45, 4), psionic("Eel", 40, 4),
           psionic("Fox", 25, 4), mundane("Dog", 2, 6), mundane("Cat", 2, 6)]
_ATTACKS = [*({"mode": "psionic-wave", "target": "bee", "targets": ["eel"], **more}
              for more in ({}, {"keep_by": "die"}, {"keep_by": "die", "pool_dice": 1})),
            *({"mode": mode, "target": "bee", **more}
              for mode in ("mental-stab", "synaptic-overload")
              for more in ({}, {"keep_by": "die"}))]
_STRUCK = [{"mode": mode, **more} for mode in [*_DEFENSES, None]
           for more in ({}, {"pool_dice": 1})]
_ANSWERS = {"bee": [*_STRUCK, {"mode": "imagination-swarm", "allies": ["dog", "cat"]}],
            "eel": _STRUCK,
            "fox": [{"mode": "imagination-swarm"}, {"mode": None},
                    {"mode": "imagination-swarm", "pool_dice": 1}]}
_PROBES = [{"mode": mode, **more} for mode in ("blank-mind", "imagination-swarm", None)
           for more in ({}, {"allies": ["dog"]}, {"allies": ["cat", "dog"]},
                        {"allies": ["fox"]}, {"pool_dice": 1}, {"sacrifice": 2})]


def _told(state: dict[str, Any], cid: str, defense: dict[str, Any]) -> list[str]:
    """What ``cid`` is told when it declares ``defense``, and a forced resolve after it:
    a refusal, or that it was taken (a resolution itself tells every choice)."""
    try:
        state = SYSTEM.encounter_declare(state, cid, {"defense": defense})
    except EngineError as exc:
        return ["declare refused", type(exc).__name__, str(exc)]
    try:
        SYSTEM.encounter_resolve(state, RandomDice(7), force=True)
    except EngineError as exc:
        return ["resolve refused", type(exc).__name__, str(exc)]
    return ["resolved"]


@pytest.mark.parametrize("prober", ["bee", "eel", "fox"])
def test_no_answer_depends_on_another_side_s_secret_choice(prober: str) -> None:
    """API.md: choices stay hidden until resolution, and no method returns another
    side's hidden choice before then. Whatever the attacker and the other minds chose
    in secret (a sample of them), each declaration ``prober`` may make is refused or
    taken in the same words, and so is the resolve that follows (it refused for the
    attacker's keep_by and a group's dice; a struck mind's allies were refused in words
    telling another's mode)."""
    rng = random.Random(1)
    others = [cid for cid in _ANSWERS if cid != prober]
    secrets: list[dict[str, Any]] = []
    while len(secrets) < 16:
        state = encounter(*_ROSTER)
        try:
            state = SYSTEM.encounter_declare(state, "att", {"attack": rng.choice(_ATTACKS)})
            for cid in others:
                state = SYSTEM.encounter_declare(state, cid, {
                    "defense": rng.choice(_ANSWERS[cid])})
        except EngineError:
            continue  # a combination the rules refuse to its own declarer
        secrets.append(state)
    for probe in _PROBES:
        # who is struck is public (the view's ``struck``): answers may differ by it alone
        told: dict[str, set[str]] = {}
        for state in secrets:
            told.setdefault(json.dumps(SYSTEM.encounter_view(state)["struck"]), set()).add(
                json.dumps(_told(state, prober, probe)))
        assert all(len(answers) == 1 for answers in told.values()), (probe, told)


@pytest.mark.parametrize(("who", "choice", "path"), [
    ("a", {"attack": {"mode": "zap", "target": "b"}}, "/choice/attack/mode"),
    ("a", {"attack": {"mode": "pinnacle-of-will", "target": "b"}}, "/choice/attack/mode"),
    # a creature named twice is refused at the name, not at "/choice/attack/targets/1/id"
    ("a", {"attack": {"mode": "psionic-wave", "target": "b", "targets": ["seer", "b"]}},
     "/choice/attack/targets/1"),
    ("b", {"defense": {"mode": "warp"}}, "/choice/defense/mode"),
    ("seer", {"defense": {"mode": "imagination-swarm", "pool_dice": 101}},
     "/choice/defense/pool_dice"),
    # refused by the choice's own schema, before any rule
    ("a", {"attack": {"mode": "mental-stab", "target": "b", "pool_dice": -1}},
     "/choice/attack/pool_dice"),
])
def test_a_refused_choice_names_its_place_in_the_choice(
        who: str, choice: dict[str, Any], path: str) -> None:
    """API.md "Errors": a path is a JSON Pointer into the params. The exchange request an
    encounter's choices make (`/attack`, `/defenses/seer/pool_dice`) is not what the caller
    sent."""
    state = encounter(psionic("A", 2, 8), psionic("B", 1, 4), mundane("Guard", 2, 8),
                      psionic("Seer", 1, 6))
    if who != "a":
        state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                                 "target": "b"}})
    with pytest.raises(InvalidInput) as err:
        SYSTEM.encounter_declare(state, who, choice)
    assert [p.path for p in err.value.problems] == [path]


def test_a_target_named_twice_is_refused_at_its_own_place_past_ten_targets() -> None:
    """A target named again is refused at its place in the choice, the id the choice
    names (the request's /defenders/10/id is /choice/attack/targets/10), however many
    targets come before it."""
    others = [psionic(f"T{i}", 1, 4) for i in range(10)]
    state = encounter(psionic("A", 2, 8), psionic("B", 1, 4), *others)
    targets = [f"t{i}" for i in range(10)] + ["b"]
    with pytest.raises(InvalidInput) as err:
        SYSTEM.encounter_declare(state, "a", {"attack": {
            "mode": "psionic-wave", "target": "b", "targets": targets}})
    assert [(p.path, p.message) for p in err.value.problems] == [(
        "/choice/attack/targets/10",
        'id "b" is already used at /choice/attack/target: give each creature an id of its '
        "own")]


def test_places_are_translated_for_ids_of_any_text() -> None:
    """Ids are free text (a dot, a colon): the refusal's place is the choice's all the
    same, and a creature "t" never takes the place of "t.2" in the words."""
    state = encounter(psionic("A", 4, 8), {**psionic("T"), "id": "t"},
                      {**psionic("T1"), "id": "t.1"}, {**psionic("T2"), "id": "t.2"})
    state = SYSTEM.encounter_declare(state, "a", {"attack": {
        "mode": "psionic-wave", "target": "t", "targets": ["t.1", "t.2"]}})
    with pytest.raises(InvalidInput) as err:
        SYSTEM.encounter_declare(state, "t.2", {"defense": {"mode": "warp"}})
    assert [p.path for p in err.value.problems] == ["/choice/defense/mode"]
    with pytest.raises(RulesViolation) as rules:
        SYSTEM.encounter_declare(state, "t.1", {"defense": {"mode": "pinnacle-of-will",
                                                            "sacrifice": [1]}})
    assert rules.value.detail.startswith("/choice/defense/sacrifice: ")


def test_places_are_translated_for_ids_holding_a_slash_or_a_tilde() -> None:
    """The exchange request names a further defender's defense at ``/defenses/<id>``
    with the id as one JSON Pointer token (``t~11`` for "t/1"); the encounter finds that
    place all the same, and the refusal is at the choice's place."""
    state = encounter(psionic("A", 4, 8), {**psionic("T"), "id": "t"},
                      {**psionic("T1"), "id": "t/1"}, {**psionic("T2"), "id": "t~2"})
    state = SYSTEM.encounter_declare(state, "a", {"attack": {
        "mode": "psionic-wave", "target": "t", "targets": ["t/1", "t~2"]}})
    for cid in ("t/1", "t~2"):
        with pytest.raises(InvalidInput) as err:
            SYSTEM.encounter_declare(state, cid, {"defense": {"mode": "warp"}})
        assert [p.path for p in err.value.problems] == ["/choice/defense/mode"]


def test_a_puppet_whose_controller_is_not_in_the_encounter_says_to_add_it() -> None:
    state = encounter(psionic("A", 2, 8), psionic("P", 1, 4, controlled_by="far", pool=0))
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                         "target": "p"}})
    assert err.value.rule == "controller-required"
    assert err.value.detail.endswith("add it to the encounter")
    assert "/controller" not in err.value.detail


def test_a_puppet_whose_controller_is_itself_under_control_is_refused_for_the_stale_link(
        ) -> None:
    """RULES.md §3.4: a creature that falls under control holds no control of its own,
    so sheets saying T is C's puppet while C is D's are stale. The encounter's exchange
    gives C as T's controller and, being under control and not taking part, among the
    puppets too: the refusal names the stale link, not the second sheet of C, which the
    encounter's caller never wrote."""
    state = encounter(psionic("X", 1, 6), psionic("D", 2, 6),
                      psionic("C", 2, 6, controlled_by="d"),
                      psionic("T", 2, 6, controlled_by="c"))
    with pytest.raises(InvalidInput) as err:
        SYSTEM.encounter_declare(state, "x", {"attack": {"mode": "mental-stab",
                                                         "target": "t"}})
    [problem] = err.value.problems
    assert problem.path == "/choice/attack/target/controlled_by"
    assert problem.message.startswith("T is under C's control here, but C's controlling")


def test_a_stale_link_of_a_controller_the_encounter_adds_names_it_by_its_id() -> None:
    """RULES.md §3.4: control links are read both ways. The exchange an attack on a
    puppet makes takes its controller, and every other creature under control, from the
    encounter (`/controllers/0`, `/puppets/0` in that request, which the encounter's
    caller never wrote): a stale link of theirs names them by their combatant ids, where
    the encounter holds them (`/combatants/x`), and the request places stay out."""
    state = encounter(psionic("A", 2, 8),
                      psionic("X", 2, 6, controlling=[{"id": "p", "kept_by": "action"}]),
                      psionic("P", 2, 6, controlled_by="x"))
    # X's sheet refreshed after it let P go, P's not yet
    stale = SYSTEM.encounter_replace(state, "x", psionic("X", 2, 6))
    with pytest.raises(InvalidInput) as err:
        SYSTEM.encounter_declare(stale, "a", {"attack": {"mode": "mental-stab",
                                                         "target": "p"}})
    assert [(p.path, p.message) for p in err.value.problems] == [(
        "/choice/attack/target/controlled_by",
        "P is under X's control here, but X's controlling (/combatants/x) does not list it")]
    # Q, also X's, refreshed as Y's: the stale field is X's own, and Q goes as a puppet
    state = encounter(psionic("A", 2, 8),
                      psionic("Y", 2, 6, controlling=[{"id": "q", "kept_by": "action"}]),
                      psionic("X", 2, 6, controlling=[{"id": "p", "kept_by": "action"},
                                                      {"id": "q", "kept_by": "action"}]),
                      psionic("P", 2, 6, controlled_by="x"),
                      psionic("Q", 2, 6, controlled_by="x"))
    stale = SYSTEM.encounter_replace(state, "q", psionic("Q", 2, 6, controlled_by="y"))
    with pytest.raises(InvalidInput) as err:
        SYSTEM.encounter_declare(stale, "a", {"attack": {"mode": "mental-stab",
                                                         "target": "p"}})
    assert [(p.path, p.message) for p in err.value.problems] == [(
        "/combatants/x/controlling/1/id",
        'X controls Q here, but Q\'s controlled_by (/combatants/q) is "y"')]
    # a puppet's own stale field, at its id written as a JSON Pointer writes it
    state = encounter(psionic("A", 2, 8), psionic("Y", 2, 6),
                      {**psionic("Q", 2, 6, controlled_by="y"), "id": "q/1~"})
    with pytest.raises(InvalidInput) as err:
        SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                         "target": "y"}})
    assert [(p.path, p.message) for p in err.value.problems] == [(
        "/combatants/q~11~0/controlled_by",
        "Q is under Y's control here, but Y's controlling (/choice/attack/target) does not "
        "list it")]


def test_a_declared_sacrifice_out_of_range_is_named_at_the_value_with_the_rule() -> None:
    """The choice's defense takes the exchange's sacrifice (a spell level 1 to 9, or a
    list of them): a wrong one is named at /choice/defense/sacrifice (or its item) with
    the bound it breaks, not as not valid "under any of the given schemas"; nothing is
    declared."""
    state = encounter(psionic("A", 2, 8), mundane("Mage", spell_levels=[1]))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "mage"}})
    for sacrifice, path, message in [
            (10, "/choice/defense/sacrifice", "10 is greater than the maximum of 9"),
            ([1, 0], "/choice/defense/sacrifice/1", "0 is less than the minimum of 1")]:
        with pytest.raises(InvalidInput) as err:
            SYSTEM.encounter_declare(state, "mage", {"defense": {"sacrifice": sacrifice}})
        [problem] = err.value.problems
        assert (problem.path, problem.message) == (path, message)
    assert SYSTEM.encounter_view(state)["waiting_for"] == ["mage"]


def test_a_refusal_in_words_names_the_choices_places() -> None:
    state = encounter(psionic("A", 2, 8), psionic("B", 1, 4), psionic("C", 1, 4))
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                         "target": "b", "targets": ["c"]}})
    assert "/choice/attack/targets" in err.value.detail and "/defenders" not in err.value.detail
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "b", {"defense": {"mode": "pinnacle-of-will",
                                                          "sacrifice": 3}})
    assert err.value.detail.startswith("/choice/defense/sacrifice: ")
    with pytest.raises(RulesViolation) as err:  # one joining: /defenses/c in the request
        SYSTEM.encounter_declare(state, "c", {"defense": {"mode": "imagination-swarm",
                                                          "sacrifice": 3}})
    assert err.value.detail.startswith("/choice/defense/sacrifice: ")


def test_a_joining_puppet_attacked_is_refused_at_its_own_choice_not_as_an_ally() -> None:
    """Seed: "Psionically attacking a creature under psionic control automatically
    attacks the controller"; the puppet attacked, joining with imagination-swarm, is
    refused (ally-struck) at its choice, not at the request's `/allies/0` that its join
    makes."""
    state = encounter(psionic("A", 3, 6),
                      psionic("X", 2, 6, controlling=[{"id": "p", "kept_by": "action"}]),
                      psionic("P", 2, 6, controlled_by="x"))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "p"}})
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "p", {"defense": {"mode": "imagination-swarm"}})
    assert err.value.rule == "ally-struck"
    assert err.value.detail.startswith("/choice/defense: P is a target of this attack")


@pytest.mark.parametrize("name", ["B/defense", "B /defenses", "B /defense", "B /defender",
                                  "B /attacker"])
def test_a_name_holding_a_request_place_is_told_as_it_is(name: str) -> None:
    """Names are free text: a request place (`/defense`, `/attacker`) inside one, also as
    a word of its own, is not a place, and the refusal names the creature as it is
    called (not "B /combatants/a is asleep")."""
    state = encounter(psionic("A", 2, 8), psionic(name, 1, 4, conditions=["asleep"],
                                                  defenses=["pinnacle-of-will"]))
    bid = state["order"][1]
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": bid}})
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, bid, {"defense": {"mode": "pinnacle-of-will"}})
    assert err.value.detail.startswith(f"{name} is asleep: ")


def test_an_attackers_name_holding_a_request_place_is_told_as_it_is() -> None:
    """An attack's refusal names its attacker as it is called, a place in the name and
    all (the request's `/attacker` is told as `/combatants/<id>` elsewhere)."""
    state = encounter(psionic("Ix /attacker", 2, 8, attacks=["mental-stab"]),
                      psionic("B", 1, 4))
    aid = state["order"][0]
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, aid, {"attack": {"mode": "psionic-wave",
                                                         "target": "b"}})
    assert err.value.rule == "mode-not-known"
    assert err.value.detail.startswith("Ix /attacker does not know psionic-wave")


def test_declare_checks_the_rules_and_changes_nothing_on_error() -> None:
    state = encounter(psionic("A"), mundane("Golem", mindless=True))
    before = json.dumps(state, sort_keys=True)
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                         "target": "golem"}})
    assert err.value.rule == "target-mindless"
    with pytest.raises(UnknownCombatant):
        SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                         "target": "nobody"}})
    with pytest.raises(InvalidInput):
        SYSTEM.encounter_declare(state, "a", {"dance": True})
    assert json.dumps(state, sort_keys=True) == before


@pytest.mark.parametrize(("choice", "path"), [
    ({"attack": {"mode": "psionic-wave", "target": "b", "targets": ["ghost"]}},
     "/choice/attack/targets/0"),
    ({"attack": {"mode": "psionic-wave", "target": "b", "targets": ["c", "ghost"]}},
     "/choice/attack/targets/1"),
    ({"release": "ghost"}, "/choice/release"),
    ({"keep": {"target": "ghost", "by": "die"}}, "/choice/keep/target"),
    ({"cannot_perceive": "ghost"}, "/choice/cannot_perceive")])
def test_a_creature_not_in_the_encounter_is_an_unknown_combatant(
        choice: dict[str, Any], path: str) -> None:
    """API.md "Errors": an unknown combatant is 4004, wherever the choice names it."""
    state = encounter(psionic("a", 3, 6), psionic("b", 2, 6), psionic("c", 2, 6))
    with pytest.raises(UnknownCombatant) as err:
        SYSTEM.encounter_declare(state, "a", choice)
    assert (err.value.id, err.value.path) == ("ghost", path)


@pytest.mark.parametrize("choice", [{"pass": True},
                                    {"attack": {"mode": "mental-stab", "target": "b"}}])
def test_a_declarer_not_in_the_encounter_is_an_unknown_combatant(
        choice: dict[str, Any]) -> None:
    """API.md "Errors": an unknown combatant is 4004, the one declaring too."""
    state = encounter(psionic("a", 3, 6), psionic("b", 2, 6))
    with pytest.raises(UnknownCombatant) as err:
        SYSTEM.encounter_declare(state, "ghost", choice)
    assert (err.value.id, err.value.path) == ("ghost", "/combatant_id")


def test_attacking_itself_breaks_a_rule() -> None:
    state = encounter(psionic("a", 3, 6), psionic("b", 2, 6))
    for attack in ({"mode": "mental-stab", "target": "a"},
                   {"mode": "psionic-wave", "target": "b", "targets": ["a"]}):
        with pytest.raises(RulesViolation) as err:
            SYSTEM.encounter_declare(state, "a", {"attack": attack})
        assert err.value.rule == "target-self"


def test_the_attacker_neither_defends_against_nor_stays_out_of_its_own_attack() -> None:
    """Seed: "The defender chooses a defence mode": the attacker is no defender of its
    own attack, nor a bystander that may join it or say it stays out."""
    state = encounter(psionic("A", 3, 6), psionic("B", 2, 6))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    for defense in ({}, {"mode": "imagination-swarm"}):
        with pytest.raises(RulesViolation) as err:
            SYSTEM.encounter_declare(state, "a", {"defense": defense})
        assert (err.value.rule, err.value.detail) == ("not-defending",
                                                      "the attacker does not defend")


def test_only_a_free_psionic_bystander_joins_or_stays_out_and_draws_no_allies() -> None:
    """Seed: "Psionically active creatures may also use this defence mode to
    participate"; drawing allies in is the struck defender's (README "Psionic allies
    join by their own choice"). A guard without psionics, a join naming allies, and
    another's puppet are refused (not-defending)."""
    state = encounter(psionic("A", 3, 6), psionic("B", 2, 6), mundane("Guard"),
                      psionic("Seer", 2, 6),
                      psionic("X", 2, 6, controlling=[{"id": "pup", "kept_by": "action"}]),
                      psionic("Pup", 2, 6, controlled_by="x"))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    for cid, defense in (("guard", {"mode": "imagination-swarm"}),
                         ("seer", {"mode": "imagination-swarm", "allies": ["guard"]}),
                         ("pup", {})):
        with pytest.raises(RulesViolation) as err:
            SYSTEM.encounter_declare(state, cid, {"defense": defense})
        assert err.value.rule == "not-defending", cid


def test_one_attack_per_round() -> None:
    state = encounter(psionic("A", 3, 6), psionic("B", 1, 4), psionic("C", 1, 4))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    state = SYSTEM.encounter_declare(state, "b", {"defense": {}})
    state, _ = SYSTEM.encounter_resolve(state, SuppliedDice({"attack": [1, 1, 1],
                                                             "defense": [4]}))
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                         "target": "c"}})
    assert err.value.rule == "cannot-attack"


def test_keep_and_rest_apply_at_once() -> None:
    """H-PP-RECOVERY: all dice back after a long rest, which outlasts every timed
    condition (as ``combatants.rest``: docs/API.md)."""
    state = encounter(psionic("A", 3, 6, controlling=[{"id": "b", "kept_by": "action"}]),
                      psionic("B", 2, 6, controlled_by="a"),
                      psionic("C", 4, 6, pool=1, conditions=["dazed", "stunned"],
                              condition_rounds={"dazed": 1, "stunned": 2}))
    state = SYSTEM.encounter_declare(state, "a", {"keep": {"target": "b", "by": "die"}})
    assert state["combatants"]["a"]["pool"] == 2
    state = SYSTEM.encounter_declare(state, "c", {"rest": True})
    c = state["combatants"]["c"]
    assert (c["pool"], c["conditions"], c["condition_rounds"]) == (4, [], {})


def test_a_rest_in_an_encounter_gives_back_dice_by_its_own_house_rule() -> None:
    """H-PP-RECOVERY "half" set for the encounter: half the hit dice (rounded up) come
    back, not all of them."""
    state = encounter(psionic("C", 5, 6, pool=0), options={"H-PP-RECOVERY": "half"})
    state = SYSTEM.encounter_declare(state, "c", {"rest": True})
    assert state["combatants"]["c"]["pool"] == 3


def test_a_controller_that_rests_loses_its_control_kept_by_an_action() -> None:
    """Seed 001: "Powers can't be maintained when a creature rests": the link kept by an
    action ends and its puppet is free; the one kept by a die holds, as in
    ``combatants.rest``."""
    state = encounter(psionic("A", 3, 6, controlling=[{"id": "b", "kept_by": "action"},
                                                      {"id": "c", "kept_by": "action"}]),
                      psionic("B", 2, 6, controlled_by="a", conditions=["possessed"]),
                      psionic("C", 2, 6, controlled_by="a"))
    state = SYSTEM.encounter_declare(state, "a", {"keep": {"target": "c", "by": "die"}})
    state = SYSTEM.encounter_declare(state, "a", {"rest": True})
    cs = state["combatants"]
    assert (cs["b"]["controlled_by"], cs["b"]["conditions"]) == (None, [])
    assert cs["c"]["controlled_by"] == "a"
    assert cs["a"]["controlling"] == [{"id": "c", "kept_by": "die", "wave": None}]
    assert (cs["a"]["pool"], len(cs["a"]["dedicated"])) == (2, 1)


def test_a_controller_that_cannot_perceive_loses_only_links_kept_by_action() -> None:
    """Seed 001: "If the controller is dedicating an action to maintain the control,
    they must remain able to perceive the creature each round, but if a die is
    dedicated to it, the link will be maintained until the controller chooses to
    relinquish it"."""
    state = encounter(psionic("A", 3, 6, controlling=[{"id": "b", "kept_by": "action"},
                                                      {"id": "c", "kept_by": "action"}]),
                      psionic("B", 2, 6, controlled_by="a"),
                      psionic("C", 2, 6, controlled_by="a"))
    state = SYSTEM.encounter_declare(state, "a", {"keep": {"target": "c", "by": "die"}})
    state = SYSTEM.encounter_declare(state, "a", {"cannot_perceive": "b"})
    cs = state["combatants"]
    assert cs["b"]["controlled_by"] is None
    assert [e["id"] for e in cs["a"]["controlling"]] == ["c"]
    state = SYSTEM.encounter_declare(state, "a", {"cannot_perceive": "c"})
    assert state["combatants"]["c"]["controlled_by"] == "a"
    before = json.dumps(state, sort_keys=True)
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "a", {"cannot_perceive": "b"})
    assert err.value.rule == "not-controlling"
    assert json.dumps(state, sort_keys=True) == before


def test_releasing_a_creature_not_controlled_is_refused_and_changes_nothing() -> None:
    """Seed 001: control is released by the controller "until the controller chooses to
    relinquish it": a creature it does not control has nothing to release."""
    state = encounter(psionic("A", 3, 6), psionic("B", 2, 6))
    before = json.dumps(state, sort_keys=True)
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "a", {"release": "b"})
    assert err.value.rule == "not-controlling"
    assert json.dumps(state, sort_keys=True) == before


def test_releasing_a_creature_another_now_controls_leaves_that_control_alone() -> None:
    """Seed 001: the controller "chooses to relinquish" its own link only. A's sheet
    still lists B, but B's says Y holds it now (an encounter's sheets are taken as
    given): A's release ends A's link and B stays under Y's control."""
    state = encounter(psionic("A", 3, 6, controlling=[{"id": "b", "kept_by": "action"}]),
                      psionic("B", 2, 6, controlled_by="y"))
    after, said = SYSTEM.encounter_action(state, "a", {"release": "b"})
    cs = after["combatants"]
    assert cs["a"]["controlling"] == [] and cs["b"]["controlled_by"] == "y"
    assert said["summary"] == "A releases B."


def test_releasing_control_leaves_a_power_maintained_on_the_same_creature() -> None:
    """RULES.md §3.4: control is kept by a die "dedicated" with purpose `control`; a die
    set aside for another power aimed at B is not the link's and stays set aside when
    A lets B go (here the link was kept by an action: no die comes back)."""
    power = {"purpose": "telepathy", "target": "b"}
    state = encounter(psionic("A", 3, 6, pool=2, dedicated=[power],
                              controlling=[{"id": "b", "kept_by": "action"}]),
                      psionic("B", 2, 6, controlled_by="a"))
    a = SYSTEM.encounter_declare(state, "a", {"release": "b"})["combatants"]["a"]
    assert (a["pool"], a["dedicated"], a["controlling"]) == (2, [power], [])


def _sleeping_controller() -> dict[str, Any]:
    """A asleep, holding B by an action and C by a die."""
    return psionic("A", 3, 6, pool=2, conditions=["asleep"],
                   controlling=[{"id": "b", "kept_by": "action"},
                                {"id": "c", "kept_by": "die"}],
                   dedicated=[{"purpose": "control", "target": "c"}])


def test_a_controller_that_cannot_act_loses_control_kept_by_an_action() -> None:
    """Seed 001: control is "maintained ... by the controller using an action each
    round"; a sleeping controller spends none, so at the round's end that link ends.
    "If a die is dedicated to it, the link will be maintained until the controller
    chooses to relinquish it": C stays controlled."""
    state = encounter(_sleeping_controller(), psionic("B", 2, 6, controlled_by="a"),
                      psionic("C", 2, 6, controlled_by="a"))
    assert SYSTEM.encounter_waiting_for(state) == []
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({}), force=True)
    cs = state["combatants"]
    assert cs["b"]["controlled_by"] is None and cs["c"]["controlled_by"] == "a"
    assert [e["id"] for e in cs["a"]["controlling"]] == ["c"]
    assert {"type": "control-ended", "combatant": "b",
            "controller": "a", "reason": "controller-cannot-act"} in step["events"]
    assert ("A is asleep and cannot spend the action that keeps its control of B: the "
            "control ends. Round 1 ends.") in step["summary"]


def test_a_controller_that_cannot_act_cannot_change_how_it_keeps_control() -> None:
    """Switching a link to a die (or to an action) is something the controller does:
    asleep, A cannot, so its link kept by an action still ends as the round ends
    (refused with controller-cannot-act; the state is unchanged)."""
    state = encounter(_sleeping_controller(), psionic("B", 2, 6, controlled_by="a"),
                      psionic("C", 2, 6, controlled_by="a"))
    kept = json.dumps(state, sort_keys=True)
    for target, by in (("b", "die"), ("c", "action")):
        with pytest.raises(RulesViolation) as err:
            SYSTEM.encounter_declare(state, "a", {"keep": {"target": target, "by": by}})
        assert (err.value.rule, err.value.combatant) == ("controller-cannot-act", "a")
        assert err.value.detail.startswith("A is asleep and cannot act")
    assert json.dumps(state, sort_keys=True) == kept
    state = SYSTEM.encounter_declare(state, "a", {"release": "c"})
    assert state["combatants"]["c"]["controlled_by"] is None


def test_a_stunned_controller_cannot_change_how_it_keeps_control() -> None:
    """Seed 001: a rebuffed attacker "is stunned for one round"; stunned is among the
    table's `cannot_act_conditions`, so it cannot take up a die for its link either."""
    state = encounter(psionic("A", 3, 6, conditions=["stunned"], condition_rounds={
        "stunned": 2}, controlling=[{"id": "b", "kept_by": "action"}]),
        psionic("B", 2, 6, controlled_by="a"))
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "a", {"keep": {"target": "b", "by": "die"}})
    assert err.value.rule == "controller-cannot-act"
    assert err.value.detail.startswith("A is stunned and cannot act")


def test_only_actions_that_apply_at_once_are_public() -> None:
    """Public actions change the state when declared; attacks and defenses are secret
    until the exchange resolves (API.md: choices stay hidden until resolution)."""
    for choice in ({"pass": True}, {"release": "b"}, {"keep": {"target": "b", "by": "die"}},
                   {"cannot_perceive": "b"}, {"rest": True}):
        assert SYSTEM.encounter_choice_is_public(choice), choice
    for choice in ({"attack": {"mode": "mental-stab", "target": "b"}}, {"defense": {}},
                   {"stance": None}, {}):
        assert not SYSTEM.encounter_choice_is_public(choice), choice
    assert not REVISED_2E.encounter_choice_is_public({"pass": True})


def test_attacker_may_change_its_attack_before_resolution() -> None:
    state = encounter(psionic("A", 2, 6), psionic("B", 1, 4), psionic("C", 1, 4))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    state = SYSTEM.encounter_declare(state, "b", {"defense": {}})
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "c", {"attack": {"mode": "mental-stab",
                                                         "target": "a"}})
    assert err.value.rule == "exchange-pending"
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "c", {"rest": True})
    assert err.value.rule == "exchange-pending"
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "c"}})
    assert SYSTEM.encounter_waiting_for(state) == ["c"]


def test_a_creature_at_0_hit_points_or_fewer_is_down_and_attacks_no_more() -> None:
    """AD&D: at 0 hit points a creature is slain or dying; it is not waited for."""
    state = encounter(psionic("a", 3, 6), psionic("b", 2, 6, hp=0))
    assert SYSTEM.encounter_waiting_for(state) == ["a"]
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "b", {"attack": {"mode": "mental-stab",
                                                         "target": "a"}})
    assert err.value.rule == "cannot-attack" and "down" in err.value.detail
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    assert SYSTEM.encounter_waiting_for(state) == []  # nobody to wait for in defense


def test_a_creature_that_is_down_rolls_nothing_in_defense() -> None:
    """RULES.md §3.2 step 2: an unconscious defender rolls nothing (unless its mode works
    while unaware); a creature at 0 hit points or fewer is at least that."""
    state = encounter(psionic("a", 3, 6), psionic("b", 2, 6, hp=0))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"attack": [1, 1, 1]}))
    result = step["results"][0]
    assert result["defense_total"] == 0 and result["winner"] == "attacker"
    assert "b, down, rolls nothing" in step["summary"]


def test_an_unaware_defender_with_other_conditions_too_has_no_choice() -> None:
    """RULES.md §3.2 step 2: an asleep defender "may defend only with
    cognitive-labyrinth; otherwise it rolls nothing": one asleep and frightened that
    knows no such mode is not waited for, nor one that is neither; a frightened one is
    aware and chooses its defense."""
    for conditions, waited in ((["asleep", "frightened"], []), (["frightened"], ["b"]),
                               ([], ["b"])):
        state = encounter(psionic("A"), psionic("B", conditions=conditions,
                                                defenses=["pinnacle-of-will"]))
        state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                                 "target": "b"}})
        assert SYSTEM.encounter_waiting_for(state) == waited, conditions


def test_an_unaware_defender_knowing_cognitive_labyrinth_is_waited_for() -> None:
    """RULES.md §3.2 step 2: an asleep defender "may defend only with
    cognitive-labyrinth": knowing it, it has that choice to make."""
    state = encounter(psionic("A"), psionic("B", conditions=["asleep"],
                                            defenses=["cognitive-labyrinth"]))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    assert SYSTEM.encounter_waiting_for(state) == ["b"]


def test_a_wave_at_two_puppets_of_one_controller_strikes_that_controller_once() -> None:
    """Seed: "Psionically attacking a creature under psionic control automatically
    attacks the controller": X, holding both targets, defends once for them."""
    state = encounter(psionic("A", 3, 6),
                      psionic("X", 2, 6, controlling=[{"id": "b", "kept_by": "action"},
                                                      {"id": "c", "kept_by": "action"}]),
                      psionic("B", 2, 6, controlled_by="x"),
                      psionic("C", 2, 6, controlled_by="x"))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {
        "mode": "psionic-wave", "target": "b", "targets": ["c"]}})
    assert SYSTEM.encounter_waiting_for(state) == ["x"]
    assert SYSTEM.encounter_view(state)["struck"] == ["x"]


def test_a_rebuffed_attacker_s_puppet_in_the_encounter_is_set_free() -> None:
    """Seed: when the defender wins, "Any psionic control the attacker is exerting over
    other creatures ceases immediately": P, in the encounter, is free after the step."""
    state = encounter(psionic("A", 2, 6, controlling=[{"id": "p", "kept_by": "action"}]),
                      psionic("B", 2, 6), psionic("P", 2, 6, controlled_by="a",
                                                  conditions=["possessed"]))
    state = SYSTEM.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    state = SYSTEM.encounter_declare(state, "b", {"defense": {}})
    state, _ = SYSTEM.encounter_resolve(state, SuppliedDice({"attack": [1, 1],
                                                             "defense": [6, 6]}))
    cs = state["combatants"]
    assert cs["a"]["controlling"] == []
    assert (cs["p"]["controlled_by"], cs["p"]["conditions"]) == (None, [])
