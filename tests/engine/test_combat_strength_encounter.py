"""combat-strength rounds: intent, ten simultaneous segments (RULES.md 2.3, seed 000)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from engine.combat_strength import SYSTEM
from engine.dice import RandomDice, SuppliedDice
from engine.errors import (
    DiceNeeded,
    InvalidInput,
    LimitExceeded,
    RulesViolation,
    UnknownCombatant,
)
from engine.power_pool import SYSTEM as POWER_POOL

JSON = dict[str, Any]


def psionic(cid: str, attack: int, defense: int, **more: Any) -> JSON:
    return {"id": cid, "name": cid.title(), "attack_strength": attack,
            "defense_strength": defense, **more}


def encounter(*combatants: JSON, options: JSON | None = None) -> JSON:
    state = SYSTEM.encounter_new(options)
    for c in combatants:
        state, _ = SYSTEM.encounter_add(state, c)
    return state


def through_intent(state: JSON, stances: dict[str, str]) -> JSON:
    for cid, stance in stances.items():
        state = SYSTEM.encounter_declare(state, cid, {"stance": stance})
    state, _ = SYSTEM.encounter_resolve(state, RandomDice(0), force=True)
    return state


def test_intent_records_stances_and_combat_strength_then_segment_one() -> None:
    """Seed step 1: 'announce their intent ... record their current Combat Strength'."""
    state = encounter(psionic("ann", 30, 20), psionic("bo", 10, 40))
    assert SYSTEM.encounter_view(state)["phase"] == "intent"
    assert SYSTEM.encounter_waiting_for(state) == ["ann", "bo"]
    state = SYSTEM.encounter_declare(state, "ann", {"stance": "trance"})
    state = SYSTEM.encounter_declare(state, "bo", {"stance": "discipline"})
    state, step = SYSTEM.encounter_resolve(state, RandomDice(0))
    assert step["phase"] == "intent" and step["round"] == 1 and step["results"] == []
    assert step["stances"] == {"ann": "trance", "bo": "discipline"}
    assert step["combat_strength"] == {"ann": 50, "bo": 50}
    view = SYSTEM.encounter_view(state)
    assert (view["phase"], view["round"], view["segment"]) == ("segment", 1, 1)
    assert view["recorded_combat_strength"] == {"ann": 50, "bo": 50}


def test_simultaneous_segment_both_attacks_resolve_from_the_start_states() -> None:
    """Seed iii and RULES 2.3.3.3: all attacks of a segment are simultaneous; two
    combatants knocking each other's defenses to 0 in the same segment both resolve.
    Table A 01-25: mind thrust vs mind blank 12."""
    state = through_intent(encounter(psionic("ann", 20, 4), psionic("bo", 20, 4)),
                           {"ann": "trance", "bo": "trance"})
    for me, foe in (("ann", "bo"), ("bo", "ann")):
        state = SYSTEM.encounter_declare(state, me, {
            "attack": {"mode": "mind-thrust", "target": foe, "range": "short"},
            "defense": {"mode": "mind-blank"}})
    assert SYSTEM.encounter_waiting_for(state) == []
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({}))
    assert step["segment"] == 1 and len(step["results"]) == 2
    for result in step["results"]:
        assert result["table"] == "combat" and result["damage"] == 12
        # each lookup saw its target still defended, at the start-of-segment 4
        assert result["defender"]["before"]["defense_strength"] == 4
    after = SYSTEM.encounter_view(state)["combatants"]
    assert after["ann"]["defense_strength"] == after["bo"]["defense_strength"] == 0
    assert after["ann"]["attack_strength"] == after["bo"]["attack_strength"] == 16
    downs = [e["combatant"] for e in step["events"] if e["type"] == "defenses-down"]
    assert downs == ["ann", "bo"]
    assert SYSTEM.encounter_view(state)["segment"] == 2


def test_order_of_declaration_does_not_change_a_segment() -> None:
    """Simultaneity: the same choices in the other order give the same states."""
    def run(order: list[str]) -> JSON:
        state = through_intent(encounter(psionic("ann", 40, 30), psionic("bo", 30, 20)),
                               {"ann": "trance", "bo": "trance"})
        foes = {"ann": "bo", "bo": "ann"}
        for me in order:
            state = SYSTEM.encounter_declare(state, me, {
                "attack": {"mode": "ego-whip", "target": foes[me]},
                "defense": {"mode": "shield-thoughts"}})
        state, _ = SYSTEM.encounter_resolve(state, RandomDice(5))
        return dict(SYSTEM.encounter_view(state)["combatants"])
    assert run(["ann", "bo"]) == run(["bo", "ann"])


def test_a_second_attack_on_a_mind_its_segment_leaves_defenseless_still_meets_its_defense(
        ) -> None:
    """RULES.md 2.3 step 3.3: 'every lookup uses the states at the start of the segment';
    step 3.4: damage from the combat table beyond the defense strength is lost. Ann's
    and Cy's Mind Thrusts (Combat Strength 24: no bonus die) both meet Bo's Mind Blank
    (table A 01-25: 12), though the first alone takes his 10 defense strength: neither is
    looked up on the defenseless table (band 01-25, MT against 40: W), and his attack
    strength stays 30."""
    state = through_intent(encounter(psionic("ann", 24, 0), psionic("bo", 30, 10),
                                     psionic("cy", 24, 0)),
                           {"ann": "trance", "bo": "trance", "cy": "trance"})
    for me in ("ann", "cy"):
        state = SYSTEM.encounter_declare(state, me, {
            "attack": {"mode": "mind-thrust", "target": "bo"}})
    state = SYSTEM.encounter_declare(state, "bo", {"attack": None,
                                                  "defense": {"mode": "mind-blank"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({}))
    assert [(r["table"], r["damage"]) for r in step["results"]] == [("combat", 12)] * 2
    bo = SYSTEM.encounter_view(state)["combatants"]["bo"]
    assert (bo["attack_strength"], bo["defense_strength"], bo["conditions"]) == (30, 0, [])


def test_bonus_dice_count_the_combat_strength_at_the_segment_s_start_not_at_intent(
        ) -> None:
    """RULES.md 2.4: '+1d6 for every full 25 points of the attacker's current Combat
    Strength (at the start of the segment)'; the Combat Strength recorded at intent (seed
    step 1) is only a record. Ann enters with 40 + 10 = 50 (two bonus dice); Bo's Mind
    Thrust on her Mind Blank in segment 1 (Combat Strength 60: 12 + 1 + 1) takes her
    defense to 0 and her Ego Whip costs 7, so she starts segment 2 with 33: one die."""
    state = through_intent(encounter(psionic("ann", 40, 10), psionic("bo", 30, 30)),
                           {"ann": "trance", "bo": "trance"})
    state = SYSTEM.encounter_declare(state, "ann", {
        "attack": {"mode": "ego-whip", "target": "bo"}, "defense": {"mode": "mind-blank"}})
    state = SYSTEM.encounter_declare(state, "bo", {
        "attack": {"mode": "mind-thrust", "target": "ann"},
        "defense": {"mode": "shield-thoughts"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"damage": [1, 1, 1, 1]}))
    assert [r["bonus_dice"] for r in step["results"]] == [2, 2]
    state = SYSTEM.encounter_declare(state, "ann", {
        "attack": {"mode": "ego-whip", "target": "bo"}})
    state = SYSTEM.encounter_declare(state, "bo", {"attack": None,
                                                  "defense": {"mode": "shield-thoughts"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"damage": [1]}))
    view = SYSTEM.encounter_view(state)
    assert view["recorded_combat_strength"]["ann"] == 50
    assert step["results"][0]["bonus_dice"] == 1
    assert step["results"][0]["damage"] == 3 + 1  # table A 01-25: EW vs Shield Thoughts 3


def test_a_mind_killed_in_a_segment_still_makes_its_attack_of_that_segment() -> None:
    """RULES.md 2.3 step 3.3: 'all attacks of a segment are simultaneous'. Ann's Psychic
    Implosion kills the defenseless Bo (table B 26-50 against up to 59: 75%, d100 1)
    while his Ego Whip finds her with no defense strength (table B 01-25 against up to
    59: 30): it still lands, taking 30 of her attack strength after the 14 she spends
    (40 - 14 - 30, not below 0), and he pays 7 for it."""
    state = through_intent(encounter(psionic("ann", 40, 0), psionic("bo", 10, 10)),
                           {"ann": "trance", "bo": "trance"})
    state = SYSTEM.encounter_declare(state, "ann", {
        "attack": {"mode": "psychic-implosion", "target": "bo"}})
    state = SYSTEM.encounter_declare(state, "bo", {
        "attack": {"mode": "ego-whip", "target": "ann"}, "defense": None})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"implosion": [1]}))
    assert [(r["attacker"]["id"], r["table_value"]) for r in step["results"]] == [
        ("ann", 75), ("bo", 30)]
    after = SYSTEM.encounter_view(state)["combatants"]
    assert after["bo"]["conditions"] == ["dead"] and after["bo"]["attack_strength"] == 3
    assert (after["ann"]["attack_strength"], after["ann"]["defense_strength"]) == (0, 0)


def test_outside_trance_only_shield_thoughts_or_no_defense() -> None:
    """Seed 3.i: 'Anyone acting outside of psionic combat ... must choose either the
    Shield Thoughts Defense Mode or no Defense Mode at all.'"""
    state = through_intent(encounter(psionic("ann", 30, 30), psionic("bo", 30, 30)),
                           {"ann": "trance", "bo": "normal"})
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "bo", {"defense": {"mode": "mind-blank"}})
    assert err.value.rule == "defense-shield-thoughts-only"
    assert "3.i" in err.value.detail
    SYSTEM.encounter_declare(state, "bo", {"defense": {"mode": "shield-thoughts"}})
    SYSTEM.encounter_declare(state, "bo", {"defense": None})


def test_outside_trance_one_that_does_not_know_shield_thoughts_is_not_waited_for() -> None:
    """Seed 3.i leaves such a mind only "no defense" to say, and its stance is public:
    asking it every segment (ten times a round) would learn nothing. One that knows
    Shield Thoughts, or is in a trance, still chooses."""
    without = [d for d in SYSTEM.tables.defenses if d != "shield-thoughts"]
    state = through_intent(encounter(
        psionic("ann", 30, 30), psionic("bo", 30, 30, defenses=without),
        psionic("cy", 30, 30), psionic("dee", 30, 30, defenses=without)),
        {"ann": "trance", "bo": "discipline", "cy": "normal", "dee": "trance"})
    assert state["phase"] == "segment"
    assert SYSTEM.encounter_waiting_for(state) == ["ann", "cy", "dee"]
    # it may still declare its "no defense", as before
    SYSTEM.encounter_declare(state, "bo", {"defense": None})


def test_attacking_with_psychic_implosion_limits_the_attackers_defense() -> None:
    """Seed 3.i: '... or using Psychic Implosion as their attack mode must choose either
    the Shield Thoughts Defense Mode or no Defense Mode at all.'"""
    state = through_intent(encounter(psionic("ann", 30, 30), psionic("bo", 30, 30)),
                           {"ann": "trance", "bo": "trance"})
    implode = {"mode": "psychic-implosion", "target": "bo"}
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "ann", {"attack": implode,
                                                "defense": {"mode": "tower-of-iron-will"}})
    assert err.value.rule == "defense-shield-thoughts-only"
    SYSTEM.encounter_declare(state, "ann", {"attack": implode,
                                            "defense": {"mode": "shield-thoughts"}})


@pytest.mark.parametrize("stance", ["discipline", "wave", "normal"])
def test_only_trance_attacks_in_the_segments(stance: str) -> None:
    """Seed step 2: those not in trance 'forgo making psionic attacks of their own'."""
    state = through_intent(encounter(psionic("ann", 30, 30), psionic("bo", 30, 30)),
                           {"ann": stance, "bo": "trance"})
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "ann", {"attack": {"mode": "mind-thrust",
                                                           "target": "bo"}})
    assert err.value.rule == "attack-requires-trance"


def test_no_defense_without_defense_strength() -> None:
    """Seed 3.i: 'Each combatant with any remaining Psionic Defense Strength selects'."""
    state = through_intent(encounter(psionic("ann", 30, 0, defense_strength_max=10),
                                     psionic("bo", 30, 30)), {"ann": "trance", "bo": "trance"})
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "ann", {"defense": {"mode": "shield-thoughts"}})
    assert err.value.rule == "no-defense-strength"


def test_stance_is_fixed_at_intent_and_intent_takes_only_a_stance() -> None:
    state = encounter(psionic("ann", 30, 30), psionic("bo", 30, 30))
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "ann", {"stance": "trance",
                                                "attack": {"mode": "mind-thrust",
                                                           "target": "bo"}})
    assert err.value.rule == "intent-declares-stance-only"
    state = through_intent(state, {"ann": "trance", "bo": "trance"})
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "ann", {"stance": "normal"})
    assert err.value.rule == "stance-declared-at-intent"


def test_unresolved_choices_refuse_unless_forced() -> None:
    """API.md: resolve once waiting_for is empty, or with force missing choices are no
    attack and no defense."""
    state = through_intent(encounter(psionic("ann", 30, 30), psionic("bo", 30, 30)),
                           {"ann": "trance", "bo": "trance"})
    state = SYSTEM.encounter_declare(state, "ann", {"attack": {"mode": "mind-thrust",
                                                               "target": "bo"}})
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_resolve(state, RandomDice(1))
    assert err.value.rule == "choices-missing" and "bo" in err.value.detail
    dice = SuppliedDice({"condition-duration": [1]})
    state, step = SYSTEM.encounter_resolve(state, dice, force=True)
    # bo raised no defense: the defenseless table (band 26-50, MT vs 60-109: W, 1d4 weeks)
    assert step["results"][0]["table"] == "defenseless"


def test_view_never_shows_a_pending_choice() -> None:
    state = through_intent(encounter(psionic("ann", 30, 30), psionic("bo", 30, 30)),
                           {"ann": "trance", "bo": "trance"})
    state = SYSTEM.encounter_declare(state, "ann", {
        "attack": {"mode": "id-insinuation", "target": "bo", "range": "long"},
        "defense": {"mode": "intellect-fortress"}})
    view = SYSTEM.encounter_view(state)
    assert view["declared"] == ["ann"] and view["waiting_for"] == ["bo"]
    # the combatants list the modes they know; nothing else may name the choice
    hidden = {k: v for k, v in view.items() if k != "combatants"}
    assert "id-insinuation" not in repr(hidden) and "intellect-fortress" not in repr(hidden)
    assert "long" not in repr(hidden)
    assert view["combatants"] == {cid: state["combatants"][cid] for cid in ("ann", "bo")}


def test_the_view_lists_who_has_declared_in_encounter_order() -> None:
    """engine/combat_strength/encounter.py ``view``: only who has declared, in the order
    the combatants joined: the order they declared in is part of the secret."""
    state = through_intent(encounter(psionic("ann", 30, 30), psionic("bo", 30, 30),
                                     psionic("cy", 30, 30)),
                           {"ann": "trance", "bo": "trance", "cy": "trance"})
    for cid in ("cy", "ann"):
        state = SYSTEM.encounter_declare(state, cid, {"defense": {"mode": "mind-blank"}})
    view = SYSTEM.encounter_view(state)
    assert view["declared"] == ["ann", "cy"] and view["waiting_for"] == ["bo"]


def test_ten_segments_then_the_next_rounds_intent() -> None:
    """Seed step 2: 'ten psionic attacks per round (one attack per segment)'."""
    state = through_intent(encounter(psionic("ann", 200, 200), psionic("bo", 200, 200)),
                           {"ann": "trance", "bo": "trance"})
    segments = []
    for _ in range(10):
        state = SYSTEM.encounter_declare(state, "ann", {
            "attack": {"mode": "mind-thrust", "target": "bo"},
            "defense": {"mode": "mind-blank"}})
        state = SYSTEM.encounter_declare(state, "bo", {"defense": {"mode": "mind-blank"}})
        state, step = SYSTEM.encounter_resolve(state, RandomDice(2))
        segments.append(step["segment"])
    assert segments == list(range(1, 11))
    view = SYSTEM.encounter_view(state)
    assert (view["phase"], view["round"], view["segment"]) == ("intent", 2, None)
    assert view["combatants"]["ann"]["attack_strength"] == 200 - 10 * 4
    assert any(e["type"] == "round-ended" for e in step["events"])


def test_timed_conditions_run_out_at_the_end_of_a_round() -> None:
    state = encounter(psionic("ann", 30, 30, conditions=["dazed"],
                              condition_rounds={"dazed": 1}), psionic("bo", 30, 30))
    state = through_intent(state, {"ann": "trance", "bo": "trance"})
    for _ in range(10):
        state, step = SYSTEM.encounter_resolve(state, RandomDice(1), force=True)
    assert SYSTEM.encounter_view(state)["combatants"]["ann"]["conditions"] == []
    assert {"type": "condition-ended", "combatant": "ann", "condition": "dazed"} in \
        step["events"]


def _quiet_steps(state: JSON, stances: dict[str, str], steps: int
                 ) -> Iterator[tuple[JSON, JSON]]:
    """``steps`` steps forced with nothing declared (each new round's intent given the
    ``stances``): the state after each, and its step."""
    for _ in range(steps):
        state, step = SYSTEM.encounter_resolve(state, RandomDice(0), force=True)
        if state["phase"] == "intent":
            state = through_intent(state, stances)
        yield state, step


def _daze_ended(step: JSON, cid: str) -> bool:
    return {"type": "condition-ended", "combatant": cid, "condition": "dazed"} in \
        step["events"]


def test_a_condition_with_no_round_left_ends_at_the_round_s_end_as_between_exchanges(
        ) -> None:
    """docs/COMBATANTS.md: ``condition_rounds`` are the rounds left on a timed
    condition (0 and up), counted in an encounter's segments or one per
    ``exchange.end_round``. A daze a sheet gives with 0 rounds left ends at the first
    round end between single exchanges, and so at the end of the encounter's first
    round too; it was taken as given again in every segment and never ended."""
    sheet = psionic("ann", 30, 30, conditions=["dazed"], condition_rounds={"dazed": 0})
    between = SYSTEM.end_round({"combatants": [sheet]}, SuppliedDice({}))
    assert between["summary"] == "End of the round: Ann is no longer dazed."
    state = through_intent(encounter(sheet, psionic("bo", 30, 30)),
                           {"ann": "trance", "bo": "trance"})
    steps = list(_quiet_steps(state, {"ann": "trance", "bo": "trance"}, 30))
    assert [(step["round"], step["segment"]) for _, step in steps
            if _daze_ended(step, "ann")] == [(1, 10)]
    assert steps[-1][0]["combatants"]["ann"]["conditions"] == []


def _dazed_in_segment(segment: int) -> tuple[JSON, list[tuple[int, int | None]]]:
    """Ann's psionic wave (band 26-50) dazes Bo (defenseless, original 40: letter D,
    1d4 rounds, rolled 1) in ``segment`` of round 1; then every step until Bo is clear,
    as (round, segment) of the steps Bo was still dazed after."""
    state = encounter(psionic("ann", 30, 10), psionic("bo", 40, 40))
    state = through_intent(state, {"ann": "trance", "bo": "normal"})
    for _ in range(segment - 1):
        state, _step = SYSTEM.encounter_resolve(state, RandomDice(0), force=True)
    state = SYSTEM.encounter_declare(state, "ann", {"attack": {
        "mode": "psionic-wave", "target": "bo"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"condition-duration": [1]}),
                                           force=True)
    assert step["results"][0]["condition"]["id"] == "dazed"
    dazed = []
    # bounded: a daze that never ends fails here rather than hanging the test
    for _ in range(100):
        if "dazed" not in state["combatants"]["bo"]["conditions"]:
            break
        dazed.append((step["round"], step.get("segment")))
        state, step = SYSTEM.encounter_resolve(state, RandomDice(0), force=True)
    else:
        pytest.fail("Bo is still dazed after 100 steps")
    assert {"type": "condition-ended", "combatant": "bo", "condition": "dazed"} in \
        step["events"]
    return state, [*dazed, (step["round"], step.get("segment"))]


@pytest.mark.parametrize("segment", [1, 3, 10])
def test_a_condition_lasts_whole_rounds_from_the_segment_it_began_in(segment: int) -> None:
    """Research tables B: 'D dazed 1d4 rounds'; seed step 2: a round is ten segments. A
    condition that begins in segment s of round 1 for one round ends in segment s of
    round 2: it holds for ten segments, whichever segment it began in."""
    _state, steps = _dazed_in_segment(segment)
    segment_steps = [rs for rs in steps if rs[1] is not None]
    assert segment_steps[0] == (1, segment) and segment_steps[-1] == (2, segment)
    assert len(segment_steps) - 1 == 10


def _wave_dazes_bo(state: JSON) -> tuple[JSON, JSON]:
    """Ann's psionic wave dazes Bo for one round (letter D, duration die 1)."""
    state = SYSTEM.encounter_declare(state, "ann", {"attack": {
        "mode": "psionic-wave", "target": "bo"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"condition-duration": [1]}),
                                           force=True)
    assert (step["results"][0]["condition"]["id"], step["results"][0]["condition"]["rounds"]) \
        == ("dazed", 1)
    return state, step


def test_a_condition_given_again_for_the_rounds_it_still_had_lasts_from_then() -> None:
    """Research tables B: 'D dazed 1d4 rounds', counted from the segment it began in. A
    daze of one round given again in segment 5 of round 2, the segment the first one
    runs out in, lasts to segment 5 of round 3; the first one's end does not cut it
    short. Ann's attack strength stays in band 26-50 for both waves (50, then 30)."""
    state = encounter(psionic("ann", 50, 10), psionic("bo", 40, 40))
    state = through_intent(state, {"ann": "trance", "bo": "normal"})
    for _ in range(4):
        state, _step = SYSTEM.encounter_resolve(state, RandomDice(0), force=True)
    state, _step = _wave_dazes_bo(state)  # round 1, segment 5
    while (state["round"], state["segment"]) != (2, 5):
        state, _step = SYSTEM.encounter_resolve(state, RandomDice(0), force=True)
        if state["phase"] == "intent":
            state = through_intent(state, {"ann": "trance", "bo": "normal"})
    state, step = _wave_dazes_bo(state)
    assert state["combatants"]["bo"]["conditions"] == ["dazed"]
    assert not any(e["type"] == "condition-ended" for e in step["events"])
    ended = None
    for _ in range(100):  # bounded: a daze that never ends fails rather than hangs
        state, step = SYSTEM.encounter_resolve(state, RandomDice(0), force=True)
        if state["phase"] == "intent":
            state = through_intent(state, {"ann": "trance", "bo": "normal"})
        if {"type": "condition-ended", "combatant": "bo", "condition": "dazed"} in \
                step["events"]:
            ended = (step["round"], step["segment"])
            break
    assert ended == (3, 5)


def test_a_condition_two_attacks_give_again_in_one_segment_lasts_the_longer_from_then(
        ) -> None:
    """Research tables B: 'D dazed 1d4 rounds'. Bo, dazed two more rounds from outside
    the encounter, is dazed again in segment 1 by Ann's wave for two rounds and by Cy's
    for one: together at least the rounds Bo still had, so the daze lasts two rounds
    from segment 1 (to segment 1 of round 3), not counted as the old one was (at round
    ends), as Cy's shorter one alone would leave it."""
    stances = {"ann": "trance", "bo": "normal", "cy": "trance"}
    bo = psionic("bo", 40, 40, conditions=["dazed"], condition_rounds={"dazed": 2})
    state = through_intent(encounter(psionic("ann", 30, 10), bo, psionic("cy", 30, 10)),
                           stances)
    for me in ("ann", "cy"):
        state = SYSTEM.encounter_declare(state, me, {"attack": {
            "mode": "psionic-wave", "target": "bo"}})
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"condition-duration": [2, 1]}), force=True)
    assert [(r["attacker"]["id"], r["condition"]["id"], r["condition"]["rounds"])
            for r in step["results"]] == [("ann", "dazed", 2), ("cy", "dazed", 1)]
    ended = None
    for _ in range(100):  # bounded: a daze that never ends fails rather than hangs
        state, step = SYSTEM.encounter_resolve(state, RandomDice(0), force=True)
        if state["phase"] == "intent":
            state = through_intent(state, stances)
        if {"type": "condition-ended", "combatant": "bo", "condition": "dazed"} in \
                step["events"]:
            ended = (step["round"], step["segment"])
            break
    assert ended == (3, 1)


def _two_mind_thrusts_at_cy(strength: int, defense: int,
                            ann_bo_defense: JSON | None) -> JSON:
    """Ann and Bo (``strength`` attack strength and ``defense``) each aim a short-range
    Mind Thrust at Cy (the same attack strength, defense 30), who raises Mind Blank; each
    of them raises ``ann_bo_defense``."""
    state = through_intent(encounter(psionic("ann", strength, defense),
                                     psionic("bo", strength, defense),
                                     psionic("cy", strength, 30)),
                           {"ann": "trance", "bo": "trance", "cy": "trance"})
    for me in ("ann", "bo"):
        state = SYSTEM.encounter_declare(state, me, {
            "attack": {"mode": "mind-thrust", "target": "cy", "range": "short"},
            "defense": ann_bo_defense})
    return SYSTEM.encounter_declare(state, "cy", {"attack": None,
                                                  "defense": {"mode": "mind-blank"}})


def test_an_attack_s_record_shows_where_the_segment_left_both_sides() -> None:
    """RULES.md 4: a resolution gives each combatant's state before and after; RULES.md
    2.3.3: a segment's attacks land together. Two Mind Thrusts at Cy's Mind Blank (table
    A 01-25: 12 each) take its defense strength from 30 to 6: each attack's record says
    so, after telling its own 12."""
    state = _two_mind_thrusts_at_cy(20, 0, None)
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({}))
    for result in step["results"]:
        assert result["defender"]["before"]["defense_strength"] == 30
        assert result["defender"]["after"]["defense_strength"] == 6
        assert result["summary"].endswith(
            "Cy's defense strength 30 → 18. With the segment's other attacks: Cy attack "
            "strength 20, defense strength 6.")
    assert state["combatants"]["cy"]["defense_strength"] == 6
    assert "With the segment's other attacks" not in step["summary"]


def test_an_attack_s_record_shows_the_condition_its_segment_ended() -> None:
    """RULES.md 4: a resolution gives "the state of each combatant before and after" and
    "a one-paragraph plain-language summary". Bo brings a daze of one round into the
    encounter; it runs out at the end of round 1, in segment 10, the segment Ann's Mind
    Thrust hits Bo's Shield Thoughts (table A 01-25: 4, plus 1d6 rolled 2). The attack's
    record shows Bo no longer dazed, as the step and the state do, and the step's summary
    says so in end_round's words; the countdown is no other attack."""
    state = encounter(psionic("ann", 30, 10), psionic("bo", 40, 40, conditions=["dazed"],
                                                      condition_rounds={"dazed": 1}))
    state = through_intent(state, {"ann": "trance", "bo": "normal"})
    for _ in range(9):
        state, _step = SYSTEM.encounter_resolve(state, RandomDice(0), force=True)
    state = SYSTEM.encounter_declare(state, "ann", {"attack": {"mode": "mind-thrust",
                                                               "target": "bo"}})
    state = SYSTEM.encounter_declare(state, "bo", {"defense": {"mode": "shield-thoughts"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"damage": [2]}))
    assert step["segment"] == 10
    (result,) = step["results"]
    (bo,) = [c["after"] for c in step["combatants"] if c["id"] == "bo"]
    assert result["defender"]["after"] == bo == state["combatants"]["bo"]
    assert (bo["conditions"], bo["condition_rounds"], bo["defense_strength"]) == ([], {}, 34)
    assert {"type": "condition-ended", "combatant": "bo", "condition": "dazed"} in \
        step["events"]
    assert "Bo's defense strength 40 → 34. Bo is no longer dazed. Now: " in step["summary"]
    assert "With the segment's other attacks" not in result["summary"]


def test_an_attack_s_record_counts_down_the_longer_condition_it_gives_again() -> None:
    """Research tables B: 'D dazed 1d4 rounds', counted from the segment it began in.
    Ann's psionic wave dazes Bo for two rounds in segment 5 of round 1; her second, in
    segment 5 of round 2, dazes Bo for one round, fewer than the first still has, so the
    first stands and loses a round there: the second attack's record shows one round
    left, as the state does. In segment 5 of round 3, with no attack, the step's summary
    says the daze ended. Ann's attack strength stays in band 26-50 (50, then 30)."""
    def to_segment(state: JSON, round_no: int) -> JSON:
        while (state["round"], state["segment"]) != (round_no, 5):
            state, _step = SYSTEM.encounter_resolve(state, RandomDice(0), force=True)
            if state["phase"] == "intent":
                state = through_intent(state, {"ann": "trance", "bo": "normal"})
        return state

    def wave(state: JSON, roll: int) -> tuple[JSON, JSON]:
        state = SYSTEM.encounter_declare(state, "ann", {"attack": {
            "mode": "psionic-wave", "target": "bo"}})
        return SYSTEM.encounter_resolve(state, SuppliedDice({"condition-duration": [roll]}),
                                        force=True)

    state = through_intent(encounter(psionic("ann", 50, 10), psionic("bo", 40, 40)),
                           {"ann": "trance", "bo": "normal"})
    state, _step = wave(to_segment(state, 1), 2)
    state, step = wave(to_segment(state, 2), 1)
    (result,) = step["results"]
    assert (result["condition"]["id"], result["condition"]["rounds"]) == ("dazed", 1)
    assert result["defender"]["after"]["condition_rounds"] == {"dazed": 1}
    assert result["defender"]["after"] == state["combatants"]["bo"]
    state = to_segment(state, 3)
    state, step = SYSTEM.encounter_resolve(state, RandomDice(0), force=True)
    assert step["summary"] == ("Round 3, segment 5: No attacks this segment. Bo is no "
                               "longer dazed. Now: Ann attack 10, defense 10; Bo attack 40, "
                               "defense 40.")


def test_dice_needed_in_a_segment_counts_every_attack_of_it() -> None:
    """RULES.md 4: "too few supplied dice is the 'dice needed' error naming the purpose,
    sides and count still needed". Two attacks of Combat Strength 60 (two bonus d6 each,
    RULES.md 2.4) in one segment need four d6, not the first attack's two; once some are
    given, what is left."""
    state = _two_mind_thrusts_at_cy(30, 30, {"mode": "mind-blank"})
    for given, needed in (([], 4), ([1, 1], 2), ([1, 1, 1], 1)):
        with pytest.raises(DiceNeeded) as short:
            SYSTEM.encounter_resolve(state, SuppliedDice({"damage": given}))
        assert (short.value.purpose, short.value.sides, short.value.needed) == (
            "damage", 6, needed)
    _state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"damage": [1, 1, 1, 1]}))
    assert len(step["results"]) == 2


def test_incapacitated_combatant_makes_no_choices() -> None:
    """Table B letters (H-CS-DEFENSELESS): K, I, P, R, W, S take a mind out of combat."""
    state = encounter(psionic("ann", 30, 30, conditions=["asleep"]), psionic("bo", 30, 30))
    assert SYSTEM.encounter_waiting_for(state) == ["bo"]
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "ann", {"stance": "trance"})
    assert err.value.rule == "incapacitated"


def test_wave_stance_attacks_non_psionics_once_per_round() -> None:
    """Seed step 2 and H-CS-WAVE-ROUND: Psionic Wave against non-psionic opponents."""
    ogre = {"id": "ogre", "int": 3, "wis": 3}
    state = through_intent(encounter(psionic("ann", 60, 30), ogre), {"ann": "wave"})
    state = SYSTEM.encounter_declare(state, "ann", {
        "attack": {"mode": "psionic-wave", "target": "ogre"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"save": [20]}))
    assert step["results"][0]["table"] == "wave" and step["results"][0]["outcome"] == "saved"
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "ann", {
            "attack": {"mode": "psionic-wave", "target": "ogre"}})
    assert err.value.rule == "one-wave-per-round"


def test_wave_stance_attacks_non_psionics_every_segment_when_the_house_rule_is_off() -> None:
    """H-CS-WAVE-ROUND false: one Psionic Wave per segment rather than per round."""
    ogre = {"id": "ogre", "int": 3, "wis": 3}
    state = through_intent(encounter(psionic("ann", 60, 30), ogre,
                                     options={"H-CS-WAVE-ROUND": False}), {"ann": "wave"})
    for _ in range(2):
        state = SYSTEM.encounter_declare(state, "ann", {
            "attack": {"mode": "psionic-wave", "target": "ogre"}})
        state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"save": [20]}))
        assert step["results"][0]["outcome"] == "saved"
    # everyone sees that Ann has used a wave this round, once
    assert SYSTEM.encounter_view(state)["wave_used"] == ["ann"]


def test_at_most_64_combatants() -> None:
    """API.md limits: 64 combatants per encounter."""
    state = encounter(*[psionic(f"c{i}", 10, 10) for i in range(64)])
    with pytest.raises(LimitExceeded) as err:
        SYSTEM.encounter_add(state, psionic("one-too-many", 10, 10))
    assert err.value.problems[0].path == "/combatant"


def test_a_duplicate_id_is_invalid_input_and_an_unknown_target_an_unknown_combatant(
        ) -> None:
    """API.md "Errors": an unknown combatant is 4004 (``UnknownCombatant``)."""
    state = encounter(psionic("ann", 30, 30))
    with pytest.raises(InvalidInput) as err:
        SYSTEM.encounter_add(state, psionic("ann", 1, 1))
    assert err.value.problems[0].path == "/combatant/id"
    state, _ = SYSTEM.encounter_add(state, psionic("bo", 30, 30))
    state = through_intent(state, {"ann": "trance", "bo": "trance"})
    with pytest.raises(UnknownCombatant) as unknown:
        SYSTEM.encounter_declare(state, "ann", {"attack": {"mode": "mind-thrust",
                                                           "target": "cy"}})
    assert (unknown.value.id, unknown.value.path) == ("cy", "/choice/attack/target")
    with pytest.raises(InvalidInput) as err:
        SYSTEM.encounter_declare(state, "ann", {"attack": {"mode": "mind-thrust"}})
    assert err.value.problems[0].path.startswith("/choice/attack")
    # one that is not in the encounter declares nothing, whatever its choice
    for phase_state in (encounter(psionic("ann", 30, 30)), state):
        with pytest.raises(UnknownCombatant) as unknown:
            SYSTEM.encounter_declare(phase_state, "cy", {"defense": None})
        assert (unknown.value.id, unknown.value.path) == ("cy", "/combatant_id")


def test_step_json_shape() -> None:
    """The step: {round, segment | phase, results, events, summary}."""
    state = through_intent(encounter(psionic("ann", 30, 30), psionic("bo", 30, 30)),
                           {"ann": "trance", "bo": "trance"})
    state = SYSTEM.encounter_declare(state, "ann", {
        "attack": {"mode": "ego-whip", "target": "bo"}, "defense": None})
    state = SYSTEM.encounter_declare(state, "bo", {"defense": {"mode": "mental-barrier"}})
    _, step = SYSTEM.encounter_resolve(state, SuppliedDice({"damage": [3, 4]}))
    assert {"round", "segment", "results", "events", "summary"} <= set(step)
    assert step["results"][0]["system"] == "combat-strength"
    assert "Round 1, segment 1" in step["summary"]
    assert step["combatants"][0]["id"] == "ann"


def test_joining_mid_round_acts_normally_until_the_next_intent() -> None:
    """Seed step 1: the stance is announced before initiative, so a late arrival has none."""
    state = through_intent(encounter(psionic("ann", 30, 30), psionic("bo", 30, 30)),
                           {"ann": "trance", "bo": "trance"})
    state, cid = SYSTEM.encounter_add(state, psionic("cy", 40, 40))
    assert SYSTEM.encounter_view(state)["stances"][cid] == "normal"
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, cid, {"attack": {"mode": "mind-thrust",
                                                         "target": "ann"}})
    assert err.value.rule == "attack-requires-trance"


def test_the_intent_summary_tells_what_stops_a_combatant_and_who_is_not_psionic() -> None:
    """Seed step 1: 'combatants should record their current Combat Strength'. Audit: the
    intent summary said "Ann acts normally (Combat Strength 105)" of a dead Ann and "Orc
    acts normally (Combat Strength 0)" of a non-psionic. One a condition stops (table B's
    K and S, table C's coma) is told by that condition, a dead one by it alone; a
    creature that is not psionic has no Combat Strength to record."""
    state = encounter(psionic("ann", 60, 45, conditions=["dead"]), psionic("bo", 30, 30),
                      psionic("cy", 25, 25, conditions=["dazed", "asleep"]),
                      {"id": "orc", "name": "Orc"},
                      {"id": "ogre", "name": "Ogre", "conditions": ["coma"]},
                      psionic("dee", 10, 10))
    assert SYSTEM.encounter_waiting_for(state) == ["bo", "dee"]
    state = SYSTEM.encounter_declare(state, "bo", {"stance": "trance"})
    state = SYSTEM.encounter_declare(state, "dee", {"stance": "normal"})
    state, step = SYSTEM.encounter_resolve(state, RandomDice(0))
    assert step["summary"] == (
        "Round 1, intent: Ann is dead; Bo enters a psychic trance (Combat Strength 60); "
        "Cy is asleep and cannot act (Combat Strength 50); Orc is not psionic; Ogre is in "
        "a coma and cannot act; Dee acts normally (Combat Strength 20).")
    # what is recorded is unchanged: the summary alone told it wrong
    assert step["stances"] == {"ann": "normal", "bo": "trance", "cy": "normal",
                               "orc": "normal", "ogre": "normal", "dee": "normal"}
    assert step["combat_strength"] == {"ann": 105, "bo": 60, "cy": 50, "orc": 0, "ogre": 0,
                                       "dee": 20}


def test_a_mind_killed_in_a_segment_cannot_be_attacked_again() -> None:
    """Table B: the psychic-implosion row is a chance of death (letter K, the condition
    `dead`, marked `kills`); band 26-50 against an original total up to 59 is 75%. Audit:
    Bo, killed, was attacked again and "suffers a psionic wound ... for 4 weeks" on top.
    The attack on Bo is refused where the choice names Bo, and changes nothing; Ann, with
    no defense strength and no living foe, is no longer waited for; the next intent says
    that Bo is dead."""
    state = through_intent(encounter(psionic("ann", 40, 0), psionic("bo", 10, 10)),
                           {"ann": "trance", "bo": "trance"})
    implode = {"attack": {"mode": "psychic-implosion", "target": "bo"}}
    state = SYSTEM.encounter_declare(state, "ann", implode)
    state = SYSTEM.encounter_declare(state, "bo", {"defense": None})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"implosion": [75]}))
    assert step["results"][0]["condition"]["id"] == "dead"
    assert state["combatants"]["bo"]["conditions"] == ["dead"]
    assert SYSTEM.encounter_waiting_for(state) == []
    before = json.dumps(state, sort_keys=True)
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "ann", implode)
    assert (err.value.rule, err.value.combatant) == ("target-dead", "bo")
    assert err.value.detail == ("Bo is dead: there is no mind left to attack "
                                "(/choice/attack/target)")
    assert json.dumps(state, sort_keys=True) == before
    for _ in range(9):
        state, step = SYSTEM.encounter_resolve(state, RandomDice(0))
    assert SYSTEM.encounter_waiting_for(state) == ["ann"]
    state = SYSTEM.encounter_declare(state, "ann", {"stance": "trance"})
    state, step = SYSTEM.encounter_resolve(state, RandomDice(0))
    assert step["summary"] == ("Round 2, intent: Ann enters a psychic trance "
                               "(Combat Strength 26); Bo is dead.")


def test_a_dead_non_psionic_is_no_target_for_a_psionic_wave() -> None:
    """Table C: a Psionic Wave may kill a non-psionic (Int + Wis up to 5: death on 85 or
    less); the dead ogre is not attacked again."""
    ogre = {"id": "ogre", "name": "Ogre", "int": 3, "wis": 2}
    state = through_intent(encounter(psionic("ann", 60, 30), ogre,
                                     options={"H-CS-WAVE-ROUND": False}), {"ann": "wave"})
    wave = {"attack": {"mode": "psionic-wave", "target": "ogre"}}
    state = SYSTEM.encounter_declare(state, "ann", wave)
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"save": [1],
                                                                "wave-effect": [85]}))
    assert step["results"][0]["condition"]["id"] == "dead"
    assert state["combatants"]["ogre"]["conditions"] == ["dead"]
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "ann", wave)
    assert err.value.rule == "target-dead"
    assert err.value.detail == ("Ogre is dead: there is no mind left to attack "
                                "(/choice/attack/target)")


def test_refreshing_a_target_as_dead_keeps_the_attack_on_it_and_loses_it_unpaid() -> None:
    """API.md encounter.refresh: an attack whose target's sheet no longer allows it (now
    dead) is not dropped, which would tell everyone whom it was aimed at: what anyone
    sees is the same whichever creature Ann attacks. The segment then loses it, unpaid
    (event attack-lost), and resolves the rest; refreshing Ann herself keeps it too."""
    def declared_on(target: str) -> JSON:
        state = through_intent(encounter(psionic("ann", 40, 30), psionic("bo", 30, 30),
                                         psionic("cy", 30, 30)),
                               {"ann": "trance", "bo": "trance", "cy": "trance"})
        state = SYSTEM.encounter_declare(state, "ann", {
            "attack": {"mode": "mind-thrust", "target": target}, "defense": None})
        state = SYSTEM.encounter_replace(state, "bo",
                                         psionic("bo", 30, 30, conditions=["dead"]))
        return SYSTEM.encounter_replace(state, "ann", psionic("ann", 40, 29))

    on_bo, on_cy = declared_on("bo"), declared_on("cy")
    assert SYSTEM.encounter_view(on_bo) == SYSTEM.encounter_view(on_cy)
    assert SYSTEM.encounter_waiting_for(on_bo) == ["cy"]
    assert on_bo["pending"]["ann"]["attack"]["target"] == "bo"
    state = SYSTEM.encounter_declare(on_bo, "cy", {"defense": None})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({}))
    assert step["results"] == []
    assert [e for e in step["events"] if e["type"] == "attack-lost"] == [
        {"type": "attack-lost", "combatant": "ann", "target": "bo", "mode": "mind-thrust",
         "rule": "target-dead", "reason": "Bo is dead"}]
    assert step["summary"].startswith(
        "Round 1, segment 1: Ann's Mind Thrust on Bo is lost, and costs nothing: Bo is "
        "dead. Now: Ann attack 40, defense 29;")
    assert state["combatants"]["ann"]["attack_strength"] == 40
    assert state["segment"] == 2
    # Ann's own sheet no longer psionic: her stance is normal, and her attack is dropped
    mine = SYSTEM.encounter_replace(on_bo, "ann", {"id": "ann", "name": "Ann", "int": 10,
                                                   "wis": 10})
    assert mine["stances"]["ann"] == "normal" and "ann" not in mine["pending"]
    # declared on a creature dead already, it is refused as before
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "ann", {"attack": {"mode": "mind-thrust",
                                                           "target": "bo"}})
    assert err.value.rule == "target-dead"


def test_a_wave_on_a_creature_refreshed_as_psionic_is_lost_when_the_segment_resolves(
        ) -> None:
    """Seed step 2: a Psionic Wave from the wave stance strikes non-psionic minds; one
    whose sheet turns out psionic after the wave was declared is not struck by it (and
    the wave is not spent for the round), while Ann's other choice stays hers."""
    ogre = {"id": "ogre", "name": "Ogre", "int": 3, "wis": 2}
    state = through_intent(encounter(psionic("ann", 60, 30), ogre), {"ann": "wave"})
    state = SYSTEM.encounter_declare(state, "ann", {
        "attack": {"mode": "psionic-wave", "target": "ogre"}, "defense": None})
    state = SYSTEM.encounter_replace(state, "ogre", psionic("ogre", 20, 20))
    assert "ann" in state["pending"]
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({}), force=True)
    lost = [e for e in step["events"] if e["type"] == "attack-lost"]
    assert [(e["combatant"], e["rule"], e["reason"]) for e in lost] == [
        ("ann", "attack-requires-trance", "Ogre is psionic now, and only an attack from a "
                                          "psychic trance reaches a psionic mind")]
    assert state["wave_used"] == []
    assert state["combatants"]["ann"]["attack_strength"] == 60


def _ann_and_bo_whip_cy(declaring: tuple[str, str]) -> JSON:
    """The step of a segment where Ann (Combat Strength 50: two bonus dice) and Bo (25:
    one), who joined in that order, each Ego Whip Cy (Mind Blank), declaring in the
    order given, with the damage dice 1, 2 and 3 supplied."""
    state = through_intent(encounter(psionic("ann", 40, 10), psionic("bo", 20, 5),
                                     psionic("cy", 10, 100)),
                           {"ann": "trance", "bo": "trance", "cy": "trance"})
    for me in declaring:
        state = SYSTEM.encounter_declare(state, me, {
            "attack": {"mode": "ego-whip", "target": "cy"}, "defense": None})
    state = SYSTEM.encounter_declare(state, "cy", {"defense": {"mode": "mind-blank"}})
    _state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"damage": [1, 2, 3]}))
    return step


def test_a_segment_s_attacks_take_supplied_dice_in_the_order_their_attackers_joined(
        ) -> None:
    """RULES.md 2.4: +1d6 per full 25 points of Combat Strength. Ann (Combat Strength 50:
    two dice) joined before Bo (25: one die) and declares after him; the damage dice
    1, 2, 3 go to Ann's attack first (1 and 2), then Bo's (3). systems.describe says so."""
    step = _ann_and_bo_whip_cy(("bo", "ann"))
    assert [(r["attacker"]["id"], r["bonus_rolls"]) for r in step["results"]] == [
        ("ann", [1, 2]), ("bo", [3])]
    assert SYSTEM.describe()["encounter"]["order"].endswith(
        "supplied dice go to the attacks in the order their attackers joined the encounter")


def test_each_attack_of_a_segment_records_only_its_own_dice() -> None:
    """A chat card explains an attack by its own rolls: Ann's two bonus dice (Combat
    Strength 50) and Bo's one (25), rolled in one segment from one dice source, are each
    in their own attack's result, not the later attack's too."""
    step = _ann_and_bo_whip_cy(("ann", "bo"))
    assert [[(r["purpose"], r["value"]) for r in result["rolls"]]
            for result in step["results"]] == [[("damage", 1), ("damage", 2)],
                                               [("damage", 3)]]


def test_a_trance_attack_on_a_creature_refreshed_as_not_psionic_is_lost_when_the_segment_resolves(
        ) -> None:
    """The other way round: Ann's Mind Thrust from a trance on Bo, whose sheet turns out
    not psionic after it was declared, is lost, and its reason says Bo is not psionic
    now and only a Psionic Wave from the wave stance affects such a mind."""
    state = through_intent(encounter(psionic("ann", 60, 30), psionic("bo", 20, 20)),
                           {"ann": "trance", "bo": "trance"})
    state = SYSTEM.encounter_declare(state, "ann", {
        "attack": {"mode": "mind-thrust", "target": "bo"}, "defense": None})
    state = SYSTEM.encounter_replace(state, "bo", {"id": "bo", "name": "Bo", "int": 10,
                                                   "wis": 10})
    assert "ann" in state["pending"]
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({}), force=True)
    assert step["results"] == []
    lost = [e for e in step["events"] if e["type"] == "attack-lost"]
    assert [(e["combatant"], e["rule"], e["reason"]) for e in lost] == [
        ("ann", "non-psionic-target-psionic-wave-only",
         "Bo is not psionic now, and only Psionic Wave from the wave stance affects a "
         "non-psionic mind")]
    assert "Ann's Mind Thrust on Bo is lost, and costs nothing: Bo is not psionic now" in (
        step["summary"])
    assert state["combatants"]["ann"]["attack_strength"] == 60


def test_a_combatant_cannot_attack_its_own_mind() -> None:
    """RULES.md 2.3 step 3.2: a `trance` combatant picks an attack mode and a target; Ann
    naming herself is refused, and she is not recorded as having chosen."""
    state = through_intent(encounter(psionic("ann", 30, 30), psionic("bo", 30, 30)),
                           {"ann": "trance", "bo": "trance"})
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "ann", {
            "attack": {"mode": "mind-thrust", "target": "ann"}})
    assert (err.value.rule, err.value.detail) == (
        "target-is-self", "a combatant cannot attack its own mind")
    assert SYSTEM.encounter_waiting_for(state) == ["ann", "bo"]


def test_a_defense_refused_says_whether_the_stance_or_the_implosion_limits_it() -> None:
    """Seed 3.i names two reasons to allow only Shield Thoughts: being outside psionic
    combat (Bo, 'normal'), or attacking with Psychic Implosion (Ann, in a trance); the
    refusal tells which."""
    state = through_intent(encounter(psionic("ann", 30, 30), psionic("bo", 30, 30)),
                           {"ann": "trance", "bo": "normal"})
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "ann", {
            "attack": {"mode": "psychic-implosion", "target": "bo"},
            "defense": {"mode": "tower-of-iron-will"}})
    assert err.value.detail == ("Ann attacks with Psychic Implosion, so may pick only Shield "
                                "Thoughts or no defense (seed step 3.i)")
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "bo", {"defense": {"mode": "mind-blank"}})
    assert err.value.detail == ('Bo is in the "normal" stance, outside psionic combat, so may '
                                "pick only Shield Thoughts or no defense (seed step 3.i)")


def test_a_new_encounter_checks_its_house_rules_and_shows_each_one_in_effect() -> None:
    """API.md encounter.create {system, name?, options?} and systems.describe's
    `house_rules: [{id, text, default}]`: the options are checked when the encounter is
    made, and what everyone sees names every house rule in effect, those not given at
    their defaults."""
    defaults = {r["id"]: r["default"] for r in SYSTEM.describe()["house_rules"]}
    state = SYSTEM.encounter_new({"H-CS-WAVE-ROUND": False})
    assert SYSTEM.encounter_view(state)["options"] == {**defaults, "H-CS-WAVE-ROUND": False}
    assert SYSTEM.encounter_view(SYSTEM.encounter_new(None))["options"] == defaults
    with pytest.raises(InvalidInput):
        SYSTEM.encounter_new({"H-CS-NO-SUCH-RULE": True})


def test_a_state_of_another_system_is_refused_at_state() -> None:
    """API.md: an encounter belongs to the system it was created for; a power-pool
    encounter's state given to combat-strength is invalid input at /state."""
    other = POWER_POOL.encounter_new(None)
    with pytest.raises(InvalidInput) as err:
        SYSTEM.encounter_add(other, psionic("ann", 30, 30))
    assert err.value.problems[0].path == "/state"


def test_joining_mid_round_records_its_combat_strength() -> None:
    """Seed step 1: 'combatants should record their current Combat Strength'; one that
    joins after intent has its own recorded as it joins (RULES.md 2.1: attack strength
    plus defense strength)."""
    state = through_intent(encounter(psionic("ann", 30, 30), psionic("bo", 30, 30)),
                           {"ann": "trance", "bo": "trance"})
    state, _cid = SYSTEM.encounter_add(state, psionic("cy", 40, 35))
    assert SYSTEM.encounter_view(state)["recorded_combat_strength"] == {
        "ann": 60, "bo": 60, "cy": 75}


def test_a_trance_mind_without_defense_strength_is_waited_for_while_it_can_attack() -> None:
    """RULES.md 2.3 step 3.2: 'every trance combatant with attack strength >= the mode's
    cost secretly picks an attack mode, a target'. Ann has no defense strength left but
    exactly Mind Thrust's 4 (RULES.md 2.2): she still chooses. Cy, with 3, cannot pay
    for any attack, nor can Eve, with 5, who knows only Id Insinuation (10), and Dee's
    only foe is not psionic (seed step 2: a trance attacks psionic minds), so none of
    them has anything to choose."""
    ogre = {"id": "ogre", "name": "Ogre"}
    state = through_intent(encounter(psionic("ann", 4, 0), psionic("bo", 30, 30),
                                     psionic("cy", 3, 0),
                                     psionic("eve", 5, 0, attacks=["id-insinuation"])),
                           {"ann": "trance", "bo": "trance", "cy": "trance",
                            "eve": "trance"})
    assert SYSTEM.encounter_waiting_for(state) == ["ann", "bo"]
    state = through_intent(encounter(psionic("dee", 30, 0), ogre), {"dee": "trance"})
    assert SYSTEM.encounter_waiting_for(state) == []


def test_a_wave_stance_mind_is_waited_for_while_it_has_a_psionic_wave_to_use() -> None:
    """Seed step 2 and H-CS-WAVE-ROUND: the wave stance uses Psionic Wave (cost 20,
    RULES.md 2.2) on non-psionic foes, once a round. With no defense strength to raise a
    defense, Ann (exactly 20) and Bo are waited for; Cy, who does not know Psionic Wave,
    is not. Once Bo's wave is spent, only Ann is waited for in the next segment, and
    everyone sees who has used theirs. Dee, whose only foe is psionic, has no wave to
    use either."""
    no_wave = [m for m in SYSTEM.tables.attacks if m != "psionic-wave"]
    ogre = {"id": "ogre", "name": "Ogre", "int": 3, "wis": 3}
    state = through_intent(encounter(psionic("ann", 20, 0), psionic("bo", 60, 0),
                                     psionic("cy", 60, 0, attacks=no_wave), ogre),
                           {"ann": "wave", "bo": "wave", "cy": "wave"})
    assert SYSTEM.encounter_waiting_for(state) == ["ann", "bo"]
    state = SYSTEM.encounter_declare(state, "bo", {
        "attack": {"mode": "psionic-wave", "target": "ogre"}})
    state, _step = SYSTEM.encounter_resolve(state, SuppliedDice({"save": [20]}), force=True)
    view = SYSTEM.encounter_view(state)
    assert (view["segment"], view["wave_used"], view["waiting_for"]) == (2, ["bo"], ["ann"])
    state = through_intent(encounter(psionic("dee", 60, 0), psionic("eve", 30, 30)),
                           {"dee": "wave", "eve": "trance"})
    assert SYSTEM.encounter_waiting_for(state) == ["eve"]


def mutual_mind_thrusts() -> tuple[JSON, JSON]:
    """Segment 1 of Ann and Bo (20 attack strength, 4 defense strength each, in a
    trance) Mind Thrusting each other behind Mind Blank: the state and step after it."""
    state = through_intent(encounter(psionic("ann", 20, 4), psionic("bo", 20, 4)),
                           {"ann": "trance", "bo": "trance"})
    for me, foe in (("ann", "bo"), ("bo", "ann")):
        state = SYSTEM.encounter_declare(state, me, {
            "attack": {"mode": "mind-thrust", "target": foe},
            "defense": {"mode": "mind-blank"}})
    return SYSTEM.encounter_resolve(state, SuppliedDice({}))


def test_the_view_tells_each_current_combat_strength_beside_the_recorded_one() -> None:
    """RULES.md 2.1: Combat Strength = current attack strength + current defense
    strength; seed step 1 records it at intent. After the two Mind Thrusts of segment 1
    (table A 01-25: 12 on Mind Blank) each side has 16 + 0 now, and 24 recorded."""
    state, _step = mutual_mind_thrusts()
    view = SYSTEM.encounter_view(state)
    assert view["combat_strength"] == {"ann": 16, "bo": 16}
    assert view["recorded_combat_strength"] == {"ann": 24, "bo": 24}


def test_at_intent_a_defense_alone_is_refused_and_a_stance_is_required() -> None:
    """Seed steps 1 and 3: at intent only a stance is declared; defenses are picked in
    each segment. A choice without a stance says which stances there are."""
    state = encounter(psionic("ann", 30, 30), psionic("bo", 30, 30))
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "ann", {"defense": {"mode": "mind-blank"}})
    assert err.value.rule == "intent-declares-stance-only"
    with pytest.raises(InvalidInput) as invalid:
        SYSTEM.encounter_declare(state, "ann", {})
    assert invalid.value.problems[0].path == "/choice/stance"
    assert SYSTEM.encounter_waiting_for(state) == ["ann", "bo"]


@pytest.mark.parametrize("stance", ["trance", "discipline", "wave"])
def test_a_creature_that_is_not_psionic_can_only_act_normally(stance: str) -> None:
    """RULES.md 2.1: `psionic` false for a non-psionic creature; seed step 1's stances
    other than acting normally are psionic ones."""
    state = encounter(psionic("ann", 30, 30), {"id": "orc", "name": "Orc"})
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "orc", {"stance": stance})
    assert err.value.rule == "non-psionic-stance"
    SYSTEM.encounter_declare(state, "orc", {"stance": "normal"})


def test_the_intent_step_tells_each_stance_and_records_its_combat_strength() -> None:
    """RULES.md 2.3 step 1: each combatant declares `trance` (psionic combat),
    `discipline` (using a psionic discipline), `wave` (Psionic Wave against non-psionic
    opponents) or `normal`, and its Combat Strength is recorded: the summary says each
    in words, and each `stance` event carries the strength recorded."""
    state = encounter(psionic("ann", 30, 20), psionic("bo", 10, 40), psionic("cy", 25, 5),
                      {"id": "ogre", "name": "Ogre"})
    for cid, stance in (("ann", "trance"), ("bo", "discipline"), ("cy", "wave")):
        state = SYSTEM.encounter_declare(state, cid, {"stance": stance})
    _state, step = SYSTEM.encounter_resolve(state, RandomDice(0))
    assert step["summary"] == (
        "Round 1, intent: Ann enters a psychic trance (Combat Strength 50); Bo will use a "
        "discipline (Combat Strength 50); Cy will use Psionic Wave on non-psionic foes "
        "(Combat Strength 30); Ogre is not psionic.")
    assert [(e["combatant"], e["stance"], e["combat_strength"]) for e in step["events"]] == [
        ("ann", "trance", 50), ("bo", "discipline", 50), ("cy", "wave", 30),
        ("ogre", "normal", 0)]


def test_the_intent_of_an_encounter_without_combatants_says_so() -> None:
    """RULES.md 4: every step has a plain-language summary, an empty one too."""
    state, step = SYSTEM.encounter_resolve(SYSTEM.encounter_new(None), RandomDice(0))
    assert step["summary"] == "Round 1, intent: no combatants."
    assert (state["phase"], state["segment"]) == ("segment", 1)


def test_a_segment_step_lists_the_combatants_it_changed_and_what_each_attack_spent() -> None:
    """Seed step v: 'attack strength -= cost, defense strength -= damage' (RULES.md 2.3
    step 3.4); RULES.md 4: a result gives the state of each combatant before and after.
    Ann's Mind Thrust (cost 4, Combat Strength 24: no bonus die) on Bo's Mind Blank
    (table A 01-25: 12): the step lists Ann and Bo, not Cy, whom nothing touched; Ann's
    4 are spent, not lost, and a trance attack uses up no Psionic Wave."""
    state = through_intent(encounter(psionic("ann", 20, 4), psionic("bo", 20, 30),
                                     psionic("cy", 20, 30)),
                           {"ann": "trance", "bo": "trance", "cy": "trance"})
    state = SYSTEM.encounter_declare(state, "ann", {
        "attack": {"mode": "mind-thrust", "target": "bo"}, "defense": None})
    state = SYSTEM.encounter_declare(state, "bo", {"defense": {"mode": "mind-blank"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({}), force=True)
    assert [(c["id"], c["after"]["attack_strength"], c["after"]["defense_strength"])
            for c in step["combatants"]] == [("ann", 16, 4), ("bo", 20, 18)]
    assert step["events"] == [
        {"type": "attack-strength-spent", "combatant": "ann", "amount": 4},
        {"type": "defense-strength-lost", "combatant": "bo", "amount": 12}]
    assert SYSTEM.encounter_view(state)["wave_used"] == []


def test_an_attacker_struck_defenseless_in_its_segment_spends_its_cost_and_loses_the_rest(
        ) -> None:
    """Seed step v and RULES.md 2.4: Ann pays 4 for her Mind Thrust (long range: no bonus
    die) while Bo's Ego Whip finds her with no defense (table B 01-25, EW vs <=59: 30):
    her 4 defense strength go, and the 26 beyond them come from her attack strength. Of
    the 30 it drops, 4 are spent and 26 lost."""
    state = through_intent(encounter(psionic("ann", 40, 4), psionic("bo", 20, 30)),
                           {"ann": "trance", "bo": "trance"})
    state = SYSTEM.encounter_declare(state, "ann", {
        "attack": {"mode": "mind-thrust", "target": "bo", "range": "long"}, "defense": None})
    state = SYSTEM.encounter_declare(state, "bo", {
        "attack": {"mode": "ego-whip", "target": "ann"}, "defense": {"mode": "mind-blank"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({}))
    ann = SYSTEM.encounter_view(state)["combatants"]["ann"]
    assert (ann["attack_strength"], ann["defense_strength"]) == (40 - 26 - 4, 0)
    assert [e for e in step["events"] if e["combatant"] == "ann"] == [
        {"type": "attack-strength-spent", "combatant": "ann", "amount": 4},
        {"type": "attack-strength-lost", "combatant": "ann", "amount": 26},
        {"type": "defense-strength-lost", "combatant": "ann", "amount": 4},
        {"type": "defenses-down", "combatant": "ann"}]


def test_a_wave_segment_tells_only_psionic_minds_standing_and_the_dice_left_over() -> None:
    """RULES.md 2.7: the non-psionic target saves on d20 (18+ at Int + Wis 6); a
    non-psionic has no strengths to tell. API.md: 'Supplied dice the resolution did not
    need are listed in the result as unused_dice'."""
    ogre = {"id": "ogre", "name": "Ogre", "int": 3, "wis": 3}
    state = through_intent(encounter(psionic("ann", 60, 30), ogre), {"ann": "wave"})
    state = SYSTEM.encounter_declare(state, "ann", {
        "attack": {"mode": "psionic-wave", "target": "ogre"}, "defense": None})
    _state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"save": [20, 5],
                                                                 "damage": [1]}))
    assert step["summary"] == (
        "Round 1, segment 1: Ann attacks Ogre with Psionic Wave; Ogre (not psionic) saves "
        "at 18+ on d20, rolls 20 and resists. Ann spends 20 attack strength (60 → 40). "
        "Now: Ann attack 40, defense 30.")
    assert step["unused_dice"] == {"save": [5], "damage": [1]}


def test_a_segment_with_no_psionic_mind_says_only_that_nothing_happened() -> None:
    """RULES.md 4: a one-paragraph summary; with no attack and no psionic mind there is
    no standing to tell."""
    state = encounter({"id": "orc", "name": "Orc"}, {"id": "ogre", "name": "Ogre"})
    state, _step = SYSTEM.encounter_resolve(state, RandomDice(0))
    state, step = SYSTEM.encounter_resolve(state, RandomDice(0))
    assert step["summary"] == "Round 1, segment 1: No attacks this segment."
    assert (step["results"], step["events"], step["combatants"]) == ([], [], [])
    assert "unused_dice" not in step


def test_the_next_intent_shows_no_stance_recorded_strength_or_wave_of_the_last_round(
        ) -> None:
    """RULES.md 2.3 step 1: stances are declared and Combat Strength recorded at each
    round's intent; H-CS-WAVE-ROUND: one Psionic Wave per round. After the tenth segment,
    before anyone declares again, none of the last round's is shown."""
    ogre = {"id": "ogre", "name": "Ogre", "int": 3, "wis": 3}
    state = through_intent(encounter(psionic("ann", 60, 30), ogre), {"ann": "wave"})
    state = SYSTEM.encounter_declare(state, "ann", {
        "attack": {"mode": "psionic-wave", "target": "ogre"}, "defense": None})
    state, _step = SYSTEM.encounter_resolve(state, SuppliedDice({"save": [20]}))
    for _ in range(9):
        state, _step = SYSTEM.encounter_resolve(state, RandomDice(0), force=True)
    view = SYSTEM.encounter_view(state)
    assert (view["phase"], view["round"]) == ("intent", 2)
    assert (view["stances"], view["recorded_combat_strength"], view["wave_used"]) == (
        {}, {}, [])


def test_an_attack_s_record_shows_where_the_segment_left_its_attacker() -> None:
    """RULES.md 4: a resolution gives each combatant's state before and after; RULES.md
    2.3.3: a segment's attacks land together. Ann and Bo Mind Thrust each other's Mind
    Blank (table A 01-25: 12, on defense strength 4): each record's attacker has paid 4
    and lost its defenses to the other's attack, as the state says."""
    state, step = mutual_mind_thrusts()
    for result in step["results"]:
        attacker = result["attacker"]
        assert attacker["after"] == state["combatants"][attacker["id"]]
        assert (attacker["after"]["attack_strength"],
                attacker["after"]["defense_strength"]) == (16, 0)


def test_an_attack_s_record_shows_the_attacker_s_own_condition_its_segment_ended() -> None:
    """Ann's daze, one round left when she joined, runs out at the end of round 1, in
    segment 10, where she Ego Whips Bo: her attack's record shows her after the segment
    as the state does, no longer dazed."""
    ann = psionic("ann", 30, 10, conditions=["dazed"], condition_rounds={"dazed": 1})
    state = through_intent(encounter(ann, psionic("bo", 30, 30)),
                           {"ann": "trance", "bo": "trance"})
    for _ in range(9):
        state, _step = SYSTEM.encounter_resolve(state, RandomDice(0), force=True)
    state = SYSTEM.encounter_declare(state, "ann", {"attack": {
        "mode": "ego-whip", "target": "bo"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"damage": [1]}), force=True)
    assert step["segment"] == 10
    after = step["results"][0]["attacker"]["after"]
    assert after == state["combatants"]["ann"] and after["conditions"] == []


def _when_bo_s_daze_ends(state: JSON) -> tuple[int, int]:
    """Steps without attacks (Ann in a trance, Bo acting normally) until Bo's daze ends:
    the (round, segment) it ends in; bounded, so a daze that never ends fails rather
    than hangs."""
    for _state, step in _quiet_steps(state, {"ann": "trance", "bo": "normal"}, 100):
        if _daze_ended(step, "bo"):
            return step["round"], step["segment"]
    pytest.fail("Bo is still dazed after 100 steps")


def test_a_condition_given_again_from_outside_after_a_cure_counts_at_the_round_s_end(
        ) -> None:
    """Research tables B: 'D dazed 1d4 rounds', counted from the segment it began in;
    one that began outside the encounter counts at the end of each round (COMBATANTS.md
    condition_rounds: counted in an encounter's segments). Ann's wave dazes Bo in
    segment 3; the GM then refreshes Bo cured, and in segment 5 dazed again for one
    round from outside: that daze runs out at the end of round 1 (segment 10), not
    when the cured one would have, in segment 3 of round 2."""
    state = through_intent(encounter(psionic("ann", 30, 10), psionic("bo", 40, 40)),
                           {"ann": "trance", "bo": "normal"})
    for _ in range(2):
        state, _step = SYSTEM.encounter_resolve(state, RandomDice(0), force=True)
    state, _step = _wave_dazes_bo(state)  # round 1, segment 3
    state = SYSTEM.encounter_replace(state, "bo", psionic("bo", 40, 40))
    state, _step = SYSTEM.encounter_resolve(state, RandomDice(0), force=True)
    state = SYSTEM.encounter_replace(state, "bo", psionic(
        "bo", 40, 40, conditions=["dazed"], condition_rounds={"dazed": 1}))
    assert _when_bo_s_daze_ends(state) == (1, 10)


def test_a_daze_given_from_outside_right_after_one_ran_out_counts_at_the_round_s_end(
        ) -> None:
    """Research tables B: 'D dazed 1d4 rounds', counted from the segment it began in;
    one that began outside the encounter counts at the end of each round. Bo's daze
    from segment 3 runs out in segment 3 of round 2; the GM at once refreshes Bo dazed
    again for one round: that one runs out at the end of round 2 (segment 10), not in
    segment 3 of round 3."""
    state, steps = _dazed_in_segment(3)
    assert steps[-1] == (2, 3)
    state = SYSTEM.encounter_replace(state, "bo", psionic(
        "bo", 40, 40, conditions=["dazed"], condition_rounds={"dazed": 1}))
    assert _when_bo_s_daze_ends(state) == (2, 10)


def test_the_round_ended_event_names_the_round_that_ended() -> None:
    """Seed step 2: a round is ten segments; after the tenth the round's end is told
    with its own number, and the next round's intent follows."""
    state = through_intent(encounter(psionic("ann", 30, 30), psionic("bo", 30, 30)),
                           {"ann": "trance", "bo": "trance"})
    for _ in range(10):
        state, step = SYSTEM.encounter_resolve(state, RandomDice(0), force=True)
    assert (step["round"], step["segment"]) == (1, 10)
    assert [e for e in step["events"] if e["type"] == "round-ended"] == [
        {"type": "round-ended", "combatant": None, "round": 1}]
    assert (state["round"], state["phase"]) == (2, "intent")


@pytest.mark.parametrize("choice,path", [
    ({"attack": {"mode": "mind-thrust", "target": ""}}, "/choice/attack/target"),
    ({"attack": {"mode": "mind-thrust", "target": "b" * 65}}, "/choice/attack/target"),
    ({"attack": {"mode": "mind-thrust", "target": "bo", "multiplier": 4}}, "/choice/attack"),
    ({"attack": {"mode": "mind-bullet", "target": "bo"}}, "/choice/attack/mode"),
    ({"attack": {"mode": "mind-thrust", "target": "bo", "range": "far"}},
     "/choice/attack/range"),
    ({"attack": {"mode": "mind-thrust"}}, "/choice/attack"),
    ({"defense": {"mode": "mind-blank", "paid": True}}, "/choice/defense"),
    ({"defense": {"mode": "tower"}}, "/choice/defense/mode"),
    ({"defense": None, "initiative": 3}, "/choice"),
])
def test_a_malformed_choice_is_invalid_input_where_it_is_wrong(choice: JSON,
                                                               path: str) -> None:
    """API.md encounter.declare: `choice` = {stance?, attack?: {..., target:
    combatant_id}, defense?} with the same attack and defense objects as exchange.resolve
    (combat-strength: `mode` and `range`); a combatant id is 1-64 characters
    (COMBATANTS.md). A target no id could be is malformed, not an unknown combatant.
    Each problem is named at the member that is wrong (a member that is not allowed,
    or a missing one, at the object that has or lacks it), not as the whole attack or
    defense matching "none of the given schemas"; and nothing is declared."""
    state = through_intent(encounter(psionic("ann", 30, 30), psionic("bo", 30, 30)),
                           {"ann": "trance", "bo": "trance"})
    with pytest.raises(InvalidInput) as err:
        SYSTEM.encounter_declare(state, "ann", choice)
    assert [p.path for p in err.value.problems] == [path]
    assert "any of the given schemas" not in err.value.problems[0].message
    assert SYSTEM.encounter_view(state)["declared"] == []


def test_a_stance_the_rules_do_not_have_is_invalid_input() -> None:
    """RULES.md 2.3 step 1: the stances are `trance`, `discipline`, `wave` and
    `normal`; any other is refused where the choice names it."""
    state = encounter(psionic("ann", 30, 30), psionic("bo", 30, 30))
    with pytest.raises(InvalidInput) as err:
        SYSTEM.encounter_declare(state, "ann", {"stance": "frenzy"})
    assert [p.path for p in err.value.problems] == ["/choice/stance"]


def test_the_pending_choices_are_the_declared_ones_the_next_resolve_uses() -> None:
    """API.md encounter.declare: choices stay hidden until resolution; the engine gives
    them, by combatant and as the next resolve will use them (a range not named is
    short), to the daemon (`System.encounter_pending_choices`), never to the view."""
    state = encounter(psionic("ann", 30, 30), psionic("bo", 30, 30))
    state = SYSTEM.encounter_declare(state, "ann", {"stance": "trance"})
    assert SYSTEM.encounter_pending_choices(state) == {"ann": {"stance": "trance"}}
    state = through_intent(state, {"bo": "trance"})
    state = SYSTEM.encounter_declare(state, "ann", {
        "attack": {"mode": "mind-thrust", "target": "bo"},
        "defense": {"mode": "mind-blank"}})
    assert SYSTEM.encounter_pending_choices(state) == {"ann": {
        "attack": {"mode": "mind-thrust", "target": "bo", "range": "short"},
        "defense": {"mode": "mind-blank"}}}
