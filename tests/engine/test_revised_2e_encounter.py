"""revised-2e encounter rounds (RULES.md §1.4 step 1, §1.5, §1.8; API.md "Encounters")."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from engine.dice import RandomDice, SuppliedDice
from engine.errors import (
    DiceNeeded,
    InvalidInput,
    LimitExceeded,
    RulesViolation,
    UnknownCombatant,
)
from engine.revised_2e import SYSTEM, Revised2e

JSON = dict[str, Any]


def psionicist(cid: str, name: str, **more: Any) -> JSON:
    c: JSON = {"id": cid, "name": name, "kind": "psionicist", "level": 4, "psp_max": 40,
               "int": 14, "wis": 13, "mac": 5,
               "attacks": ["mind-thrust", "psychic-crush"],
               "defenses": ["thought-shield", "mental-barrier"]}
    c.update(more)
    return c


def encounter(*combatants: JSON, options: JSON | None = None) -> JSON:
    state = SYSTEM.encounter_new(options)
    for c in combatants:
        state, _ = SYSTEM.encounter_add(state, c)
    return state


ULCEN = psionicist("ulcen", "Ulcen of Tyr")
FENKA = psionicist("fenka", "Fenka of Raam")


def test_declare_then_resolve_one_round() -> None:
    state = encounter(ULCEN, FENKA)
    assert SYSTEM.encounter_waiting_for(state) == ["ulcen", "fenka"]
    state = SYSTEM.encounter_declare(state, "ulcen", {
        "attack": {"mode": "mind-thrust", "multiplier": 4, "range": "short",
                   "target": "fenka"}})
    state = SYSTEM.encounter_declare(state, "fenka", {"defense": {"mode": "thought-shield"}})
    assert SYSTEM.encounter_waiting_for(state) == []
    # needed 17 − 0 − 5 = 12; 10 + 3 (mind thrust vs thought shield) = 13 hits
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"attack": [10], "damage": [1, 2, 3, 4]}))
    assert step["round"] == 1 and state["round"] == 2
    [result] = step["results"]
    assert result["hit"] and result["roll"] == {"natural": 10, "modifier": 3, "modified": 13}
    assert result["defense"] == "thought-shield" and result["damage"] == 10
    fenka = state["combatants"]["fenka"]
    assert fenka["psp"] == 40 - 2 - 10 and fenka["mind"]["last_defense"] == "thought-shield"
    assert state["combatants"]["ulcen"]["psp"] == 40 - 8
    assert state["pending"] == {}
    assert step["summary"].startswith("Round 1: Fenka of Raam raises the thought shield "
                                      "(2 PSPs).")
    assert {c["id"] for c in step["changes"]} == {"ulcen", "fenka"}
    json.dumps(step)  # the step is plain JSON


def test_hidden_choices_are_absent_from_the_view() -> None:
    state = encounter(ULCEN, FENKA)
    before = SYSTEM.encounter_view(state)
    state = SYSTEM.encounter_declare(state, "ulcen", {
        "attack": {"mode": "psychic-crush", "multiplier": 3, "target": "fenka"},
        "defense": {"mode": "mental-barrier"}})
    after = SYSTEM.encounter_view(state)
    assert after["declared"] == ["ulcen"] and after["waiting_for"] == ["fenka"]
    assert after["phase"] == "round" and after["round"] == 1
    # only who has declared changes: nothing of the choice itself
    assert {k: v for k, v in after.items() if k not in ("declared", "waiting_for")} == \
        {k: v for k, v in before.items() if k not in ("declared", "waiting_for")}
    assert "pending" not in json.dumps(after) and "mental-barrier\"}" not in json.dumps(after)


def test_defense_is_paid_once_per_round_against_every_attack() -> None:
    # RULES.md §1.4 step 1: "paid once per round ... protect against every psionic attack"
    state = encounter(ULCEN, FENKA, psionicist("third", "Third"))
    state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
        "mode": "mind-thrust", "target": "fenka"}})
    state = SYSTEM.encounter_declare(state, "third", {"attack": {
        "mode": "mind-thrust", "target": "fenka"}})
    state = SYSTEM.encounter_declare(state, "fenka", {"defense": {"mode": "mental-barrier"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"attack": [2, 3]}))
    assert [r["defense"] for r in step["results"]] == ["mental-barrier"] * 2
    assert [r["hit"] for r in step["results"]] == [False, False]
    raised = [e for e in step["events"] if e["type"] == "defense-raised"]
    assert len(raised) == 1
    assert state["combatants"]["fenka"]["psp"] == 40 - 5


def test_the_round_says_what_each_defense_costs_where_it_is_paid() -> None:
    """RULES.md §1.4 step 1: a defense is paid once per round, at its start. The round's
    text says the cost there, so the PSPs add up: Fenka's 40 less the barrier's 5 and
    the 16 she loses is 19."""
    state = encounter(ULCEN, FENKA)
    state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
        "mode": "mind-thrust", "multiplier": 4, "target": "fenka"}})
    state = SYSTEM.encounter_declare(state, "fenka", {"defense": {"mode": "mental-barrier"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"attack": [18],
                                                                "damage": [4, 4, 4, 4]}))
    assert state["combatants"]["fenka"]["psp"] == 40 - 5 - 16
    assert step["summary"] == (
        "Round 1: Fenka of Raam raises the mental barrier (5 PSPs). Ulcen of Tyr's mind "
        "thrust ×4 strikes Fenka of Raam through the mental barrier (needed 12, rolled 18 − "
        "2 = 16). Fenka of Raam loses 16 PSPs. Ulcen of Tyr pays 8 PSPs.")


def test_a_defense_that_takes_the_last_psps_opens_the_mind_and_the_round_says_so_once(
        ) -> None:
    """Errata (seed 004): "A mind with 0 PSPs is open". Fenka's 2 PSPs pay for the
    thought shield at the start of the round, which opens her mind there: the round's text
    says so at that point, once, and Ulcen's attack then meets an open mind (+2)."""
    state = encounter(ULCEN, {**FENKA, "psp": 2})
    state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
        "mode": "mind-thrust", "target": "fenka"}})
    state = SYSTEM.encounter_declare(state, "fenka", {"defense": {"mode": "thought-shield"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({
        "attack": [12], "damage": [3], "lost-power": [4], "open-duration": [2]}))
    [result] = step["results"]
    assert result["target_was_open"] and result["roll"]["modifier"] == 3 + 2
    assert [e["type"] for e in step["events"]] == [
        "defense-raised", "psp-spent", "mind-opened", "mind-locked"]
    assert step["summary"] == (
        "Round 1: Raising the thought shield (2 PSPs) takes Fenka of Raam's last PSPs and "
        "opens Fenka of Raam's mind. Ulcen of Tyr's mind thrust strikes Fenka of Raam "
        "through the thought shield (needed 12, rolled 12 + 5 = 17). Fenka of Raam loses 0 "
        "PSPs (of 3 damage). Fenka of Raam loses one psionic power for 4 days. Ulcen of "
        "Tyr pays 2 PSPs. Fenka of Raam's mind is locked open for 3 rounds.")


def test_the_round_says_when_a_blow_on_an_open_mind_takes_its_target_down() -> None:
    """Dark Sun revised (RULES.md §1.5): psychic crush on an open mind costs 1d6 hit
    points a step. Fenka, at 5, takes 6: the round's text says she is down, and her
    attack, not yet made, is lost."""
    mind = {"state": "open", "opened_by": "zero-psp", "rounds_open": 2, "locked_rounds": 3}
    state = encounter(ULCEN, {**FENKA, "hp": 5, "mind": mind})
    state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
        "mode": "psychic-crush", "target": "fenka"}})
    state = SYSTEM.encounter_declare(state, "fenka", {"attack": {
        "mode": "mind-thrust", "target": "ulcen"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({
        "attack": [12], "damage": [3], "hp-damage": [6]}))
    assert state["combatants"]["fenka"]["hp"] == -1
    assert step["summary"] == (
        "Round 1: Ulcen of Tyr's psychic crush strikes Fenka of Raam (needed 12, rolled 12 + "
        "2 = 14). Fenka of Raam loses 6 PSPs. Fenka of Raam's open mind takes 6 hit points "
        "of damage. Fenka of Raam is down (−1 hit points). Ulcen of Tyr pays 8 PSPs. Fenka "
        "of Raam's mind thrust is lost: Fenka of Raam is down (0 hit points or fewer).")


def test_force_resolves_missing_choices_as_no_attack_no_defense() -> None:
    state = encounter(ULCEN, FENKA)
    state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
        "mode": "mind-thrust", "target": "fenka"}})
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_resolve(state, RandomDice(1))
    assert err.value.rule == "choices-missing" and "fenka" in err.value.detail
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"attack": [1]}), force=True)
    assert len(step["results"]) == 1 and step["results"][0]["defense"] is None
    assert state["combatants"]["fenka"]["psp"] == 40


def test_declare_checks_rules_and_input_paths_now() -> None:
    state = encounter(ULCEN, FENKA)
    with pytest.raises(UnknownCombatant) as unknown:
        SYSTEM.encounter_declare(state, "nobody", {})
    assert (unknown.value.id, unknown.value.path) == ("nobody", "/combatant_id")
    with pytest.raises(InvalidInput) as bad:
        SYSTEM.encounter_declare(state, "ulcen", {"attack": {
            "mode": "mind-thrust", "multiplier": 0, "target": "fenka"}})
    assert bad.value.problems[0].path == "/choice/attack/multiplier"
    with pytest.raises(UnknownCombatant) as unknown:
        SYSTEM.encounter_declare(state, "ulcen", {"attack": {
            "mode": "mind-thrust", "target": "ghost"}})
    assert (unknown.value.id, unknown.value.path) == ("ghost", "/choice/attack/target")
    with pytest.raises(RulesViolation) as rule:
        SYSTEM.encounter_declare(state, "ulcen", {"attack": {
            "mode": "mind-thrust", "multiplier": 5, "target": "fenka"}})
    assert rule.value.rule == "multiplier-above-level"
    poor = encounter(psionicist("poor", "Poor", psp=9), FENKA)
    with pytest.raises(RulesViolation) as rule:
        # 8 PSPs of psychic crush and 2 of thought shield are 10 together
        SYSTEM.encounter_declare(poor, "poor", {
            "attack": {"mode": "psychic-crush", "target": "fenka"},
            "defense": {"mode": "thought-shield"}})
    assert rule.value.rule == "not-enough-psp"


def test_a_round_whose_mind_a_critical_hit_opened_says_it_cannot_pay_to_close_it() -> None:
    """§1.5: "If it cannot or will not pay, it stays open 1d4+1 rounds": Fenka, opened
    while 3 PSPs were left, is not told she may pay 10."""
    mind = {"state": "open", "opened_by": "critical", "last_defense": "mental-barrier"}
    state = encounter(ULCEN, {**FENKA, "psp": 3, "mind": mind})
    _, step = SYSTEM.encounter_resolve(state, SuppliedDice({}), force=True)
    assert step["summary"].endswith("Closing Fenka of Raam's mind in the next round would cost "
                                    "10 PSPs, more than the 3 PSPs it holds.")


def test_critical_opening_stuns_and_closing_costs_twice_the_last_defense() -> None:
    # Seed 004: "if a mind was opened in the round it used the mental barrier defense
    # (costs 5 PSPs), it can close its mind in the next round by spending 10 PSPs"
    state = encounter(ULCEN, FENKA)
    state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
        "mode": "mind-thrust", "multiplier": 4, "target": "fenka"}})
    state = SYSTEM.encounter_declare(state, "fenka", {
        "attack": {"mode": "mind-thrust", "target": "ulcen"},
        "defense": {"mode": "mental-barrier"}})
    # natural 20 − 2 = 18 beats 12 by 6: critical; 4 damage < 10, save 3 fails
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"attack": [20], "damage": [1, 1, 1, 1], "save": [3]}))
    [result] = step["results"]
    assert result["critical"] and result["mind_opened"]
    lost = [e for e in step["events"] if e["type"] == "attack-lost"]
    assert lost and lost[0]["combatant"] == "fenka"  # stunned: her attack is lost
    fenka = state["combatants"]["fenka"]
    assert fenka["mind"]["state"] == "open" and fenka["mind"]["may_pay_to_close"]
    assert "stunned" not in fenka["conditions"]
    assert "initiative-penalty" in fenka["conditions"]
    assert "fenka" in SYSTEM.encounter_waiting_for(state)
    state = SYSTEM.encounter_declare(state, "fenka", {"close": True})
    state = SYSTEM.encounter_declare(state, "ulcen", {})
    psp = state["combatants"]["fenka"]["psp"]
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({}))
    fenka = state["combatants"]["fenka"]
    assert fenka["mind"]["state"] == "closed" and fenka["psp"] == psp - 10
    assert "initiative-penalty" not in fenka["conditions"]


def test_stunned_mind_keeps_its_attack_when_house_rule_h_2e_stun_is_off() -> None:
    state = encounter(ULCEN, FENKA, options={"H-2E-STUN": False})
    state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
        "mode": "mind-thrust", "multiplier": 4, "target": "fenka"}})
    state = SYSTEM.encounter_declare(state, "fenka", {"attack": {
        "mode": "mind-thrust", "target": "ulcen"}})
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"attack": [20, 2], "damage": [4, 4, 1, 1]}))
    assert step["results"][0]["mind_opened"]  # 10 damage = 25% of 40: open, no save
    assert [r["attacker"]["id"] for r in step["results"]] == ["ulcen", "fenka"]
    assert not any(e["type"] == "attack-lost" for e in step["events"])


def test_a_combatant_brought_in_stunned_declares_attacks_only_with_h_2e_stun_off() -> None:
    stunned = {**FENKA, "conditions": ["stunned"]}
    attack = {"attack": {"mode": "mind-thrust", "target": "ulcen"}}
    state = encounter(ULCEN, stunned)
    assert "fenka" not in SYSTEM.encounter_waiting_for(state)
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "fenka", attack)
    assert err.value.rule == "cannot-act"
    state = encounter(ULCEN, stunned, options={"H-2E-STUN": False})
    assert "fenka" in SYSTEM.encounter_waiting_for(state)
    SYSTEM.encounter_declare(state, "fenka", attack)
    # a stun still stops raising a defense
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "fenka", {"defense": {"mode": FENKA["defenses"][0]}})
    assert err.value.rule == "cannot-act"


def test_a_stunned_mind_with_no_attack_to_make_is_not_waited_for_even_with_h_2e_stun_off(
        ) -> None:
    """H-2E-STUN off lets a stunned mind attack; its defenses and closing stay stopped
    (``declare`` refuses them). So one with no attack it could make (none known, or
    nobody to make it on) has no choice, and the round does not wait for it; one with an
    attack still is waited for."""
    options = {"H-2E-STUN": False}
    stunned = {**FENKA, "conditions": ["stunned"]}
    no_attack = encounter(ULCEN, {**stunned, "attacks": []}, options=options)
    assert SYSTEM.encounter_waiting_for(no_attack) == ["ulcen"]
    assert SYSTEM.encounter_waiting_for(encounter(stunned, options=options)) == []
    closing = {**stunned, "attacks": [], "mind": {
        "state": "open", "opened_by": "critical", "may_pay_to_close": True,
        "last_defense": "thought-shield", "rounds_open": 1}}
    assert SYSTEM.encounter_waiting_for(encounter(ULCEN, closing, options=options)) == [
        "ulcen"]
    assert SYSTEM.encounter_waiting_for(encounter(ULCEN, stunned, options=options)) == [
        "ulcen", "fenka"]


def test_the_view_prices_closing_for_a_mind_a_critical_hit_opened_last_round() -> None:
    """§1.5: closing costs 2 × the last defense used (mental barrier 5 → 10); the view
    says so before anyone declares, so a VTT can offer it at that price."""
    fenka = psionicist("fenka", "Fenka of Raam", psp=30, mind={
        "state": "open", "opened_by": "critical", "may_pay_to_close": True,
        "last_defense": "mental-barrier"})
    view = SYSTEM.encounter_view(encounter(ULCEN, fenka))
    assert view["close_offers"] == {"fenka": {
        "cost": 10, "defense": "mental-barrier", "basis": "last", "psp": 30,
        "payable": True, "reason": None}}
    poor = SYSTEM.encounter_view(encounter(ULCEN, {**fenka, "psp": 10}))
    assert poor["close_offers"]["fenka"]["reason"] == "last-psp"
    assert SYSTEM.encounter_view(encounter(ULCEN, FENKA))["close_offers"] == {}
    # A stun stops closing even where H-2E-STUN lets the stunned attack: the view offers
    # only what declare takes.
    stunned = {**fenka, "conditions": ["stunned"], "condition_rounds": {"stunned": 0}}
    state = encounter(ULCEN, stunned, options={"H-2E-STUN": False})
    assert SYSTEM.encounter_view(state)["close_offers"]["fenka"]["reason"] == "cannot-act"
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "fenka", {"close": True})
    assert err.value.rule == "cannot-act"


@pytest.mark.parametrize(("psp", "last_psp", "closes"), [
    (10, True, False), (11, True, True), (10, False, True), (9, False, False)])
def test_paying_to_close_must_leave_a_psp_unless_the_house_rule_is_off(
        psp: int, last_psp: bool, closes: bool) -> None:
    """Errata: a mind with 0 PSPs is open, so the last PSPs cannot buy closing it
    (H-2E-CLOSE-LAST-PSP); off, the seed's "enough PSPs" reading: 10 close for 10."""
    fenka = psionicist("fenka", "Fenka of Raam", psp=psp, mind={
        "state": "open", "opened_by": "critical", "may_pay_to_close": True,
        "last_defense": "mental-barrier"})  # closing costs 2 × 5
    state = encounter(ULCEN, fenka, options={"H-2E-CLOSE-LAST-PSP": last_psp})
    if not closes:
        with pytest.raises(RulesViolation) as err:
            SYSTEM.encounter_declare(state, "fenka", {"close": True})
        assert err.value.rule == "cannot-close"
        # the refusal says why, as exchange.round_end_choices would
        assert err.value.detail.startswith("Closing Fenka of Raam's mind would cost 10 PSPs")
        return
    state = SYSTEM.encounter_declare(state, "fenka", {"close": True})
    state, _ = SYSTEM.encounter_resolve(state, SuppliedDice({}), force=True)
    after = state["combatants"]["fenka"]
    assert after["mind"]["state"] == "closed" and after["psp"] == psp - 10


def test_unclosed_critical_mind_locks_1d4_plus_1_then_wisdom_checks_at_minus_3() -> None:
    """Seed 004: "it remains open for 1d4+1 rounds. After that, a successful Wisdom check
    with a -3 penalty closes the mind. One check per round." Locked for 2 rounds, the
    first check comes as the second ends: a mind that passes it is open no longer."""
    fenka = psionicist("fenka", "Fenka of Raam", wis=15, mind={
        "state": "open", "opened_by": "critical", "rounds_open": 1, "may_pay_to_close": True,
        "last_defense": "mental-barrier"})
    state = encounter(ULCEN, fenka)
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"open-duration": [1]}),
                                           force=True)
    assert state["combatants"]["fenka"]["mind"]["locked_rounds"] == 2  # 1d4+1 with a 1
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({}), force=True)
    assert state["combatants"]["fenka"]["mind"]["locked_rounds"] == 1
    # Wisdom 15 − 3 = 12: a 13 fails, a 12 closes
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"wisdom-check": [13]}),
                                           force=True)
    assert state["combatants"]["fenka"]["mind"]["state"] == "open"
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"wisdom-check": [12]}),
                                           force=True)
    assert state["combatants"]["fenka"]["mind"]["state"] == "closed"
    assert "Fenka of Raam's mind closes (Wisdom check 12, rolled 12)." in step["summary"]


def test_zero_psp_mind_is_locked_open_at_end_of_round() -> None:
    # "When attacking a psionic mind, that mind remains closed until it is reduced to 0 PSPs"
    state = encounter(ULCEN, psionicist("weak", "Weak", psp=3))
    state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
        "mode": "mind-thrust", "target": "weak"}})
    state = SYSTEM.encounter_declare(state, "weak", {})
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"attack": [15], "damage": [4], "open-duration": [3]}))
    weak = state["combatants"]["weak"]
    assert weak["psp"] == 0 and weak["mind"]["opened_by"] == "zero-psp"
    assert weak["mind"]["locked_rounds"] == 4
    assert "Weak's mind is locked open for 4 rounds." in step["summary"]
    assert "weak" not in SYSTEM.encounter_waiting_for(state)  # nothing left to spend


@pytest.mark.parametrize("opened_by", ["zero-psp", "critical"])
def test_a_mind_given_already_locked_open_counts_its_lock_down_and_rolls_no_new_one(
        opened_by: str) -> None:
    """A sheet carried over from an earlier fight holds a mind locked open 3 more rounds
    (COMBATANTS.md: locked_rounds, rounds_open defaulting to 0): its lock is counted
    down, not rolled again, and a critical hit's is not offered closing again."""
    weak = psionicist("weak", "Weak", psp=0 if opened_by == "zero-psp" else 20, wis=15,
                      mind={"state": "open", "opened_by": opened_by, "locked_rounds": 3})
    state = encounter(ULCEN, weak)
    assert "weak" not in SYSTEM.encounter_view(state).get("close_offers", {})
    locks = []
    for _ in range(3):
        state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"wisdom-check": [20]}),
                                               force=True)
        locks.append(state["combatants"]["weak"]["mind"]["locked_rounds"])
        assert "locked open for" not in step["summary"], step["summary"]
    assert locks == [2, 1, 0]  # the third round's end is the first Wisdom check
    assert step["summary"] == "Round 3: Weak's mind stays open (Wisdom check 12, rolled 20)."


def test_open_nonpsionic_mind_saves_each_round_at_minus_4_after_a_power() -> None:
    guard = {"id": "guard", "name": "Guard", "level": 5, "mac": 10}  # warrior 5: saves 11
    state = encounter(ULCEN, guard)
    assert SYSTEM.encounter_waiting_for(state) == ["ulcen"]  # a nonpsionic never chooses
    state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
        "mode": "mind-thrust", "target": "guard"}})
    state, _ = SYSTEM.encounter_resolve(state, SuppliedDice({"attack": [12]}))
    assert state["combatants"]["guard"]["mind"]["opened_by"] == "attack"
    # next round: a hit on the open mind is a power used on it (1d6 days of a lost power)
    state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
        "mode": "mind-thrust", "target": "guard"}})
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"attack": [12], "lost-power": [5], "save": [14]}))
    save = next(e for e in step["events"] if e["type"] == "mind-save")
    assert save["target"] == 11 + 4 and not save["success"]
    assert state["combatants"]["guard"]["lost_powers"] == [{"days": 5}]
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"save": [15]}), force=True)
    assert state["combatants"]["guard"]["mind"]["state"] == "closed"


def test_initiative_order_house_rule_with_plus_2_after_forced_open() -> None:
    ulcen = psionicist("ulcen", "Ulcen of Tyr", conditions=["initiative-penalty"],
                       condition_rounds={"initiative-penalty": 0})
    state = encounter(ulcen, FENKA, options={"H-2E-ORDER": "initiative"})
    state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
        "mode": "mind-thrust", "target": "fenka"}})
    state = SYSTEM.encounter_declare(state, "fenka", {"attack": {
        "mode": "mind-thrust", "target": "ulcen"}})
    # Ulcen rolls 3 (+2 = 5), Fenka 5: ties go to the listed order, so Ulcen first;
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"initiative": [3, 5], "attack": [2, 2]}))
    assert [r["attacker"]["id"] for r in step["results"]] == ["ulcen", "fenka"]
    state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
        "mode": "mind-thrust", "target": "fenka"}})
    state = SYSTEM.encounter_declare(state, "fenka", {"attack": {
        "mode": "mind-thrust", "target": "ulcen"}})
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"initiative": [4, 2], "attack": [2, 2]}))
    assert [r["attacker"]["id"] for r in step["results"]] == ["fenka", "ulcen"]


def test_attack_is_lost_when_earlier_damage_leaves_too_few_psps() -> None:
    # Seed 004: "The number of PSPs an attacker puts into a psionic attack must be declared
    # before the attack roll"; the attacker must still hold them when its turn comes.
    state = encounter(ULCEN, psionicist("fenka", "Fenka of Raam", psp=10))
    state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
        "mode": "mind-thrust", "multiplier": 4, "target": "fenka"}})
    state = SYSTEM.encounter_declare(state, "fenka", {"attack": {
        "mode": "psychic-crush", "target": "ulcen"}})
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"attack": [15], "damage": [1, 1, 1, 1]}))
    lost = [e for e in step["events"] if e["type"] == "attack-lost"]
    assert [e["combatant"] for e in lost] == ["fenka"] and "8 PSPs" in lost[0]["reason"]
    assert state["combatants"]["fenka"]["psp"] == 10 - 4


def test_three_attacks_per_two_rounds_at_level_7() -> None:
    # RULES.md §1.8 "7–12 three per two rounds"; H-2E-THREE-PER-TWO: 1 then 2
    veteran = psionicist("vet", "Veteran", level=7, psp_max=80)
    state = encounter(veteran, FENKA)
    two = {"attacks": [{"mode": "mind-thrust", "target": "fenka"}] * 2}
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "vet", two)
    assert err.value.rule == "too-many-attacks"
    state, _ = SYSTEM.encounter_resolve(state, SuppliedDice({}), force=True)
    state = SYSTEM.encounter_declare(state, "vet", two)
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"attack": [2, 2]}), force=True)
    assert len(step["results"]) == 2


def test_three_attacks_per_two_rounds_two_first_when_the_house_rule_is_off() -> None:
    """H-2E-THREE-PER-TWO false: the extra attack comes in odd rounds (2, 1, 2 ...)."""
    veteran = psionicist("vet", "Veteran", level=7, psp_max=80)
    state = encounter(veteran, FENKA, options={"H-2E-THREE-PER-TWO": False})
    two = {"attacks": [{"mode": "mind-thrust", "target": "fenka"}] * 2}
    state = SYSTEM.encounter_declare(state, "vet", two)
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"attack": [2, 2]}), force=True)
    assert len(step["results"]) == 2
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "vet", two)
    assert err.value.rule == "too-many-attacks"


def test_ids_are_unique_and_the_encounter_holds_at_most_64() -> None:
    state = SYSTEM.encounter_new(None)
    state, first = SYSTEM.encounter_add(state, {"name": "Gith Raider"})
    state, second = SYSTEM.encounter_add(state, {"name": "Gith Raider"})
    assert (first, second) == ("gith-raider", "gith-raider-2")
    with pytest.raises(InvalidInput) as err:
        SYSTEM.encounter_add(state, {"id": "gith-raider"})
    assert err.value.problems[0].path == "/combatant/id"
    for i in range(62):
        state, _ = SYSTEM.encounter_add(state, {"name": f"Guard {i}"})
    with pytest.raises(LimitExceeded):
        SYSTEM.encounter_add(state, {"name": "One too many"})


def test_quick_mac_is_rolled_with_the_first_round() -> None:
    beast = {"id": "beast", "kind": "psionicist", "level": 2, "psp_max": 10,
             "class_group": "monster", "quick_mac": {"intelligence": 9, "psionic": "high"}}
    state = encounter(ULCEN, beast)
    assert state["combatants"]["beast"]["mac"] is None
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"mac-base": [3], "mac-modifier": [1]}), force=True)
    assert state["combatants"]["beast"]["mac"] == 10 + 1 - 1  # 8–10 → 10, +1, MAC 10 at worst
    assert [r["purpose"] for r in step["rolls"]] == ["mac-base", "mac-modifier"]


def test_a_quick_mac_is_rolled_with_the_first_round_whichever_place_it_has_in_the_list(
        ) -> None:
    """Seed 004's Quick MAC is rolled with the first round for every monster still
    without a MAC, the first listed too."""
    beast = {"id": "beast", "kind": "psionicist", "level": 2, "psp_max": 10,
             "class_group": "monster", "quick_mac": {"intelligence": 9, "psionic": "high"}}
    state, step = SYSTEM.encounter_resolve(
        encounter(beast, ULCEN), SuppliedDice({"mac-base": [3], "mac-modifier": [1]}),
        force=True)
    assert state["combatants"]["beast"]["mac"] == 10
    assert {"type": "mac-rolled", "combatant": "beast", "mac": 10} in step["events"]


def test_an_encounter_rolls_a_quick_mac_under_its_own_h_2e_quickmac_pick() -> None:
    """H-2E-QUICKMAC-PICK off for this encounter: Average Int (8–10) gives its worst
    base, 10, with no ``mac-base`` die; a d10 of 10 on the high-psionic table is −4."""
    beast = {"id": "beast", "kind": "psionicist", "level": 2, "psp_max": 10,
             "class_group": "monster", "quick_mac": {"intelligence": 9, "psionic": "high"}}
    state = encounter(ULCEN, beast, options={"H-2E-QUICKMAC-PICK": False})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"mac-modifier": [10]}),
                                           force=True)
    assert state["combatants"]["beast"]["mac"] == 10 - 4
    assert [r["purpose"] for r in step["rolls"]] == ["mac-modifier"]


def test_bad_options_and_states_are_refused() -> None:
    with pytest.raises(InvalidInput) as err:
        SYSTEM.encounter_new({"H-2E-ORDER": "alphabetical"})
    assert err.value.problems[0].path == "/options/H-2E-ORDER"
    with pytest.raises(InvalidInput):
        SYSTEM.encounter_view({"system": "power-pool"})


def test_a_combatant_at_0_hit_points_or_fewer_is_down_and_acts_no_more() -> None:
    """AD&D 2e: at 0 hit points a creature is slain (or dying, under the optional rule);
    either way it is not waited for and makes no choice."""
    state = encounter(ULCEN, psionicist("fenka", "Fenka of Raam", hp=0))
    assert SYSTEM.encounter_waiting_for(state) == ["ulcen"]
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "fenka", {"attack": {
            "mode": "mind-thrust", "multiplier": 1, "range": "short", "target": "ulcen"}})
    assert err.value.rule == "cannot-act" and "down" in err.value.detail


def test_a_refusal_names_the_conditions_in_the_sheet_s_order_and_being_down_last() -> None:
    """A combatant that cannot act is told every condition that stops it, in its sheet's
    order, and then that it is down."""
    dazed = psionicist("fenka", "Fenka of Raam", hp=-3, conditions=["confused", "dazed"],
                       condition_rounds={"confused": 2, "dazed": 2})
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(encounter(ULCEN, dazed), "fenka", {
            "defense": {"mode": "thought-shield"}})
    assert err.value.detail == ("Fenka of Raam cannot act this round (confused, dazed, "
                                "down (0 hit points or fewer))")


def test_a_blow_that_takes_the_last_hit_points_says_the_combatant_is_down() -> None:
    """§1.5: psychic crush on an open mind deals 1d6 hit points per 8 PSPs."""
    fenka = psionicist("fenka", "Fenka of Raam", psp=0, hp=3,
                       mind={"state": "open", "opened_by": "zero-psp"})
    result = SYSTEM.resolve({"attacker": {**ULCEN, "psp": 40}, "defender": fenka,
                             "attack": {"mode": "psychic-crush", "multiplier": 1,
                                        "range": "short"}},
                            SuppliedDice({"attack": [15], "damage": [5], "hp-damage": [5]})
                            ).to_json()
    assert result["defender"]["after"]["hp"] == -2
    assert {"type": "down", "combatant": "fenka", "hp": -2} in result["events"]


def test_a_round_short_of_supplied_dice_asks_for_every_attack_s_die_at_once() -> None:
    """RULES.md 4: "too few supplied dice is the 'dice needed' error naming the purpose,
    sides and count still needed": both attacks of the round need their d20, so a GM
    typing physical dice is asked for two at once; an attack the rules will drop (its
    attacker dazed) asks for none. Nothing changes."""
    def round_with(fenka: JSON) -> JSON:
        state = encounter(ULCEN, fenka)
        state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
            "mode": "mind-thrust", "target": "fenka"}})
        return SYSTEM.encounter_declare(state, "fenka", {"attack": {
            "mode": "mind-thrust", "target": "ulcen"}})

    state = round_with(FENKA)
    with pytest.raises(DiceNeeded) as short:
        SYSTEM.encounter_resolve(state, SuppliedDice({}))
    assert (short.value.purpose, short.value.sides, short.value.needed) == ("attack", 20, 2)
    assert state == round_with(FENKA)
    # Dazed since she declared (as an ego whip on an open mind leaves one): hers is lost.
    dazed = round_with(FENKA)
    dazed["combatants"]["fenka"] |= {"conditions": ["dazed"], "condition_rounds": {"dazed": 2}}
    with pytest.raises(DiceNeeded) as short:
        SYSTEM.encounter_resolve(dazed, SuppliedDice({}))
    assert short.value.needed == 1


@pytest.mark.parametrize(("choice", "path"), [
    ({"attack": {"mode": "mind-thrust", "target": ""}}, "/choice/attack/target"),
    ({"attack": {"mode": "mind-thrust", "target": "fenka", "steps": 2}}, "/choice/attack"),
    ({"defense": {}}, "/choice/defense"),
    ({"attacks": [{"mode": "mind-thrust", "target": "fenka"}] * 5}, "/choice/attacks"),
    ({"attack": {"mode": "mind-thrust", "target": "fenka", "multiplier": 101}},
     "/choice/attack/multiplier"),
    ({"stance": "trance"}, "/choice"),
    ({"close": None}, "/choice/close"),
])
def test_a_malformed_choice_is_invalid_input_naming_its_field(choice: JSON, path: str
                                                              ) -> None:
    """API.md "Encounters": a choice's ``attack`` and ``defense`` are the objects of
    ``exchange.resolve`` (a ``mode``, a ``multiplier`` of 1 to 100, no other field) with a
    ``target`` naming a combatant, beside ``close`` (true or false) and nothing else;
    what does not fit that shape is invalid params at its field, not a rule broken."""
    with pytest.raises(InvalidInput) as bad:
        SYSTEM.encounter_declare(encounter(ULCEN, FENKA), "ulcen", choice)
    assert bad.value.problems[0].path == path


def test_four_attacks_are_refused_by_the_round_s_allowance_not_as_malformed() -> None:
    """RULES.md §1.8: at most two attacks a round at any level; a choice may list up to
    four, so too many is the rule ``too-many-attacks`` saying how many are allowed."""
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(encounter(ULCEN, FENKA), "ulcen", {
            "attacks": [{"mode": "mind-thrust", "target": "fenka"}] * 4})
    assert err.value.rule == "too-many-attacks"


def test_a_null_attack_or_defense_is_no_attack_or_no_defense() -> None:
    """API.md: "A missing ``defense`` (or ``null``) means no defense mode"; an ``attack``
    of ``null`` likewise means none."""
    state = SYSTEM.encounter_declare(encounter(ULCEN, FENKA), "ulcen", {
        "attack": None, "defense": {"mode": "thought-shield"}})
    state = SYSTEM.encounter_declare(state, "fenka", {"attack": {
        "mode": "mind-thrust", "target": "ulcen"}, "defense": None})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"attack": [2]}))
    assert [r["attacker"]["id"] for r in step["results"]] == ["fenka"]
    assert step["results"][0]["defense"] == "thought-shield"


def test_a_stored_state_of_another_system_or_out_of_step_is_refused() -> None:
    """The state comes back from storage, so its outline is checked before use: it must
    say it is a revised-2e encounter at a round numbered by an integer, with its
    ``pending`` choices and ``options`` as objects, and its ``order`` must list exactly
    the combatants it holds."""
    state = encounter(ULCEN, FENKA)
    for broken in ({**state, "system": "power-pool"},
                   {**state, "order": ["ulcen"]},
                   {**state, "order": ["ulcen", "fenka", "ghost"]},
                   {**state, "round": "1"},
                   {**state, "pending": []},
                   {**state, "options": None}):
        with pytest.raises(InvalidInput) as bad:
            SYSTEM.encounter_view(broken)
        assert bad.value.problems[0].path == "/state"


@pytest.mark.parametrize("stored", [None, [], "revised-2e"])
def test_a_stored_state_that_is_no_object_is_refused_as_one(stored: Any) -> None:
    """A state read back from storage that is not even a JSON object is refused as not
    a revised-2e encounter state, as any other broken outline is."""
    with pytest.raises(InvalidInput) as bad:
        SYSTEM.encounter_view(stored)
    assert bad.value.problems[0].path == "/state"


def test_a_mind_whose_only_choice_is_to_pay_to_close_is_waited_for() -> None:
    """§1.5: a mind a critical hit opened "in that round may spend PSPs to close": that
    is a choice, so the round waits for it even from a combatant that knows no mode."""
    fenka = psionicist("fenka", "Fenka of Raam", psp=30, attacks=[], defenses=[], mind={
        "state": "open", "opened_by": "critical", "may_pay_to_close": True,
        "last_defense": "mental-barrier"})
    state = encounter(fenka)
    assert SYSTEM.encounter_waiting_for(state) == ["fenka"]
    state = SYSTEM.encounter_declare(state, "fenka", {"close": True})
    assert SYSTEM.encounter_waiting_for(state) == []


def test_a_mind_holding_exactly_a_defense_s_cost_is_waited_for() -> None:
    """§1.4 step 1: a defense costs its PSPs once a round; Fenka's 2 PSPs buy the
    thought shield (2), though not her psychic crush (8), so the round waits for her."""
    fenka = psionicist("fenka", "Fenka of Raam", psp=2, attacks=["psychic-crush"],
                       defenses=["thought-shield"])
    assert SYSTEM.encounter_waiting_for(encounter(ULCEN, fenka)) == ["ulcen", "fenka"]
    poorer = {**fenka, "psp": 1}
    assert SYSTEM.encounter_waiting_for(encounter(ULCEN, poorer)) == ["ulcen"]


def test_a_combatant_alone_is_not_waited_for_an_attack_it_has_nobody_to_make_on() -> None:
    """An attack needs a target other than the attacker ("cannot attack its own mind"):
    alone in the encounter, Fenka's 2 PSPs buy a mind thrust but nothing she may do, so
    nobody is waited for; once Ulcen joins, she has a choice."""
    fenka = psionicist("fenka", "Fenka of Raam", psp=2, defenses=["mental-barrier"])
    assert SYSTEM.encounter_waiting_for(encounter(fenka)) == []
    assert SYSTEM.encounter_waiting_for(encounter(fenka, ULCEN)) == ["fenka", "ulcen"]


def test_a_round_without_an_attack_allowed_waits_only_for_a_mind_with_another_choice(
        ) -> None:
    """§1.8 spreads a rate of attacks over its rounds (``attacks_per_round``); under a
    GM's table of one attack per two rounds a 4th-level mind has none in round 1, so
    one whose PSPs buy nothing but an attack has no choice to make until round 2."""
    raw = copy.deepcopy(dict(SYSTEM.tables.raw))
    raw["attacks_per_round"]["psionicist"] = [
        {"min": 1, "max": None, "attacks": 1, "rounds": 2}]
    gm = Revised2e(raw)
    fenka = psionicist("fenka", "Fenka of Raam", psp=2, defenses=["mental-barrier"])
    state = gm.encounter_new(None)
    for c in (fenka, ULCEN):
        state, _ = gm.encounter_add(state, c)
    assert gm.encounter_waiting_for(state) == ["ulcen"]
    state, _ = gm.encounter_resolve(state, SuppliedDice({}), force=True)
    assert gm.encounter_waiting_for(state) == ["fenka", "ulcen"]


def test_the_view_gives_every_house_rule_in_force_and_each_one_s_attacks() -> None:
    """RULES.md: every house default is overridable per encounter, so the view says the
    value each one has there (the overrides over the defaults), and how many attacks
    each combatant may declare this round (§1.8: 7–12 three per two rounds, 1 then 2
    under H-2E-THREE-PER-TWO; a nonpsionic none)."""
    veteran = psionicist("vet", "Veteran", level=7, psp_max=80)
    guard = {"id": "guard", "name": "Guard", "level": 5}
    state = encounter(veteran, ULCEN, guard, options={"H-2E-ORDER": "initiative"})
    view = SYSTEM.encounter_view(state)
    assert view["options"] == {r.id: r.default for r in SYSTEM.house_rules()} | {
        "H-2E-ORDER": "initiative"}
    assert view["attacks_allowed"] == {"vet": 1, "ulcen": 1, "guard": 0}
    state, _ = SYSTEM.encounter_resolve(state, SuppliedDice({}), force=True)
    assert SYSTEM.encounter_view(state)["attacks_allowed"] == {"vet": 2, "ulcen": 1,
                                                               "guard": 0}


def test_the_view_offers_a_stunned_mind_no_closing_it_may_pay_for() -> None:
    """§1.5: a mind forced open is stunned; a stun stops closing, so its offer says it
    may not pay, and why."""
    fenka = psionicist("fenka", "Fenka of Raam", psp=30, conditions=["stunned"],
                       condition_rounds={"stunned": 0}, mind={
                           "state": "open", "opened_by": "critical",
                           "may_pay_to_close": True, "last_defense": "mental-barrier"})
    offer = SYSTEM.encounter_view(encounter(ULCEN, fenka))["close_offers"]["fenka"]
    assert (offer["cost"], offer["payable"], offer["reason"]) == (10, False, "cannot-act")


def test_declare_refuses_attack_and_attacks_together_and_names_the_second_target() -> None:
    """choice_schema: ``attack``, or ``attacks`` when the round allows more than one
    (§1.8), never both; a target the encounter does not hold is named at its place in
    the list."""
    veteran = psionicist("vet", "Veteran", level=13, psp_max=80)
    state = encounter(veteran, FENKA)
    thrust = {"mode": "mind-thrust", "target": "fenka"}
    with pytest.raises(InvalidInput) as bad:
        SYSTEM.encounter_declare(state, "vet", {"attack": thrust, "attacks": [thrust]})
    assert bad.value.problems[0].path == "/choice"
    with pytest.raises(UnknownCombatant) as unknown:
        SYSTEM.encounter_declare(state, "vet", {"attacks": [
            thrust, {"mode": "mind-thrust", "target": "ghost"}]})
    assert (unknown.value.id, unknown.value.path) == ("ghost", "/choice/attacks/1/target")


def test_closing_and_a_defense_are_paid_for_together() -> None:
    """§1.5: closing costs 2 × the last defense (mental barrier 5 → 10) and a defense its
    own cost (5): 15 PSPs declared together, more than Fenka's 14."""
    fenka = psionicist("fenka", "Fenka of Raam", psp=14, mind={
        "state": "open", "opened_by": "critical", "may_pay_to_close": True,
        "last_defense": "mental-barrier"})
    state = encounter(ULCEN, fenka)
    SYSTEM.encounter_declare(state, "fenka", {"close": True})
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "fenka", {"close": True,
                                                  "defense": {"mode": "mental-barrier"}})
    assert err.value.rule == "not-enough-psp" and "15 PSPs" in err.value.detail


def test_a_dazed_combatant_may_still_declare_nothing() -> None:
    """A daze stops attacks, defenses and closing (§1.5); a choice of none of them asks
    nothing the daze stops, so it is taken."""
    dazed = psionicist("fenka", "Fenka of Raam", conditions=["dazed"],
                       condition_rounds={"dazed": 2})
    state = SYSTEM.encounter_declare(encounter(ULCEN, dazed), "fenka", {})
    assert SYSTEM.encounter_view(state)["declared"] == ["fenka"]


def test_declare_refuses_a_defense_the_mind_does_not_know() -> None:
    """RULES.md §1.1: ``defenses`` are the mode ids a mind knows; it raises no other."""
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(encounter(ULCEN, FENKA), "fenka", {
            "defense": {"mode": "tower-of-iron-will"}})
    assert err.value.rule == "defense-not-known"


def test_the_plus_2_after_a_forced_opening_can_put_a_mind_after_a_lower_roll() -> None:
    """§1.5: a mind forced open "takes +2 on initiative next round"; under H-2E-ORDER
    'initiative' the lowest total goes first. Ulcen's 4 + 2 = 6 comes after Fenka's 5;
    only the attackers roll (Third only defends)."""
    ulcen = psionicist("ulcen", "Ulcen of Tyr", conditions=["initiative-penalty"],
                       condition_rounds={"initiative-penalty": 0})
    state = encounter(ulcen, FENKA, psionicist("third", "Third"),
                      options={"H-2E-ORDER": "initiative"})
    for cid, target in (("ulcen", "fenka"), ("fenka", "ulcen")):
        state = SYSTEM.encounter_declare(state, cid, {"attack": {
            "mode": "mind-thrust", "target": target}})
    state = SYSTEM.encounter_declare(state, "third", {"defense": {"mode": "thought-shield"}})
    state, step = SYSTEM.encounter_resolve(
        state, SuppliedDice({"initiative": [4, 5], "attack": [2, 2]}))
    assert [r["attacker"]["id"] for r in step["results"]] == ["fenka", "ulcen"]
    assert [(e["combatant"], e["roll"], e["total"]) for e in step["events"]
            if e["type"] == "initiative"] == [("ulcen", 4, 6), ("fenka", 5, 5)]
    assert [r["by"] for r in step["rolls"] if r["purpose"] == "initiative"] == [
        "ulcen", "fenka"]


def test_a_quick_mac_is_rolled_once_and_the_round_says_what_it_came_to() -> None:
    """Seed 004's Quick MAC is a monster's MAC: rolled with its first round (event
    ``mac-rolled``), then kept, never rolled again."""
    beast = {"id": "beast", "kind": "psionicist", "level": 2, "psp_max": 10,
             "class_group": "monster", "quick_mac": {"intelligence": 9, "psionic": "high"}}
    state, step = SYSTEM.encounter_resolve(
        encounter(ULCEN, beast), SuppliedDice({"mac-base": [3], "mac-modifier": [1]}),
        force=True)
    assert {"type": "mac-rolled", "combatant": "beast", "mac": 10} in step["events"]
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({}), force=True)
    assert step["rolls"] == [] and state["combatants"]["beast"]["mac"] == 10
    assert not any(e["type"] == "mac-rolled" for e in step["events"])


def test_a_mind_that_pays_to_close_is_told_so_in_the_round_s_text_and_events() -> None:
    """Seed 004: a mind opened in the round it used the mental barrier "can close its mind
    in the next round by spending 10 PSPs": the round records the payment and the
    closing, and its text says so."""
    fenka = psionicist("fenka", "Fenka of Raam", psp=30, mind={
        "state": "open", "opened_by": "critical", "may_pay_to_close": True,
        "last_defense": "mental-barrier"})
    state = SYSTEM.encounter_declare(encounter(fenka), "fenka", {"close": True})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({}))
    assert step["events"] == [
        {"type": "psp-spent", "combatant": "fenka", "amount": 10, "for": "close"},
        {"type": "mind-closed", "combatant": "fenka", "how": "paid"}]
    assert step["summary"] == "Round 1: Fenka of Raam pays 10 PSPs and closes its mind."


def test_an_attacker_left_with_exactly_the_declared_psps_still_attacks() -> None:
    """Seed 004 (§1.4 step 2): "the attacker must hold at least" the declared PSPs when
    its turn comes: Fenka, 10 less Ulcen's 2 damage, holds the 8 of her psychic crush."""
    state = encounter(ULCEN, psionicist("fenka", "Fenka of Raam", psp=10))
    state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
        "mode": "mind-thrust", "target": "fenka"}})
    state = SYSTEM.encounter_declare(state, "fenka", {"attack": {
        "mode": "psychic-crush", "target": "ulcen"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"attack": [15, 2],
                                                                "damage": [2]}))
    assert [r["attacker"]["id"] for r in step["results"]] == ["ulcen", "fenka"]
    assert state["combatants"]["fenka"]["psp"] == 10 - 2 - 4  # a miss pays half of 8


def test_an_attack_is_lost_for_want_of_all_its_declared_steps() -> None:
    """Seed 004: "The number of PSPs an attacker puts into a psionic attack must be
    declared before the attack roll": Fenka's mind thrust ×4 declares 8 PSPs, and the 6
    left to her after Ulcen's blow do not make it a smaller attack."""
    state = encounter(ULCEN, psionicist("fenka", "Fenka of Raam", psp=10))
    state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
        "mode": "mind-thrust", "target": "fenka"}})
    state = SYSTEM.encounter_declare(state, "fenka", {"attack": {
        "mode": "mind-thrust", "multiplier": 4, "target": "ulcen"}})
    state, step = SYSTEM.encounter_resolve(state, SuppliedDice({"attack": [15],
                                                                "damage": [4]}))
    [lost] = [e for e in step["events"] if e["type"] == "attack-lost"]
    assert lost["combatant"] == "fenka" and "8 PSPs" in lost["reason"]
    assert state["combatants"]["fenka"]["psp"] == 6


def test_a_round_where_nothing_happens_says_so() -> None:
    """RULES.md §4: every resolution has a one-paragraph plain-language summary, even a
    round in which nobody does anything."""
    _, step = SYSTEM.encounter_resolve(encounter(ULCEN, FENKA), SuppliedDice({}),
                                       force=True)
    assert step["summary"] == "Round 1: nothing happens."
    assert (step["results"], step["events"], step["changes"]) == ([], [], [])


def test_the_round_s_end_counts_down_the_first_listed_combatant_too() -> None:
    """§1.5: a stun lasts the round it was given; at the round's end it ends for every
    combatant, whichever place it has in the list."""
    stunned = psionicist("fenka", "Fenka of Raam", conditions=["stunned"],
                         condition_rounds={"stunned": 0})
    state, step = SYSTEM.encounter_resolve(encounter(stunned, ULCEN), SuppliedDice({}),
                                           force=True)
    assert state["combatants"]["fenka"]["conditions"] == []
    assert {"type": "condition-ended", "combatant": "fenka",
            "condition": "stunned"} in step["events"]


def test_ids_made_from_one_name_count_up_from_2() -> None:
    """An id is the combatant's own or the slug of its name made unique with -2, -3 …"""
    state = SYSTEM.encounter_new(None)
    ids = []
    for _ in range(3):
        state, cid = SYSTEM.encounter_add(state, {"name": "Gith Raider"})
        ids.append(cid)
    assert ids == ["gith-raider", "gith-raider-2", "gith-raider-3"]


def test_a_round_lists_only_its_own_dice_when_one_source_serves_several_rounds() -> None:
    """RULES.md §4: every resolution returns every die it rolled; a dice source a caller
    keeps from round to round does not carry the earlier rounds' dice into the next."""
    dice = SuppliedDice({"attack": [2, 3]})
    state = encounter(ULCEN, FENKA)
    steps = []
    for _ in range(2):
        state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
            "mode": "mind-thrust", "target": "fenka"}})
        state, step = SYSTEM.encounter_resolve(state, dice, force=True)
        steps.append(step)
    assert [[(r["purpose"], r["value"], r["by"]) for r in s["rolls"]] for s in steps] == [
        [("attack", 2, "ulcen")], [("attack", 3, "ulcen")]]


def test_an_attack_declared_at_long_range_is_rolled_at_that_range() -> None:
    """§1.4 step 3: the target's MAC is improved by 5 at long range, so Ulcen (MTHAC0 17)
    needs 17 − 0 against Fenka's MAC 5, not the 12 of short range."""
    state = SYSTEM.encounter_declare(encounter(ULCEN, FENKA), "ulcen", {"attack": {
        "mode": "mind-thrust", "range": "long", "target": "fenka"}})
    _, step = SYSTEM.encounter_resolve(state, SuppliedDice({"attack": [15]}), force=True)
    [result] = step["results"]
    assert result["needed"] == 17 and not result["hit"]


def test_a_multiplier_of_100_is_the_choice_s_largest_and_a_level_100_mind_may_declare_it(
        ) -> None:
    """API.md "Encounters": a choice's ``multiplier`` is 1 to 100, as in
    ``exchange.resolve``; §1.4 allows up to the attacker's level, so a level-100 mind with
    the PSPs declares 100 steps."""
    master = psionicist("ulcen", "Ulcen of Tyr", level=100, psp_max=10_000)
    state = SYSTEM.encounter_declare(encounter(master, FENKA), "ulcen", {"attack": {
        "mode": "mind-thrust", "multiplier": 100, "target": "fenka"}})
    assert state["pending"]["ulcen"]["attack"]["multiplier"] == 100


def test_a_combatant_whose_id_is_64_characters_long_may_be_a_target() -> None:
    """An id is up to 64 characters (the combatant schema), so a choice's ``target``
    takes one that long."""
    long_id = "f" * 64
    state = encounter(ULCEN, psionicist(long_id, "Fenka of Raam"))
    state = SYSTEM.encounter_declare(state, "ulcen", {"attack": {
        "mode": "mind-thrust", "target": long_id}})
    assert state["pending"]["ulcen"]["attack"]["target"] == long_id


def test_the_view_gives_the_combatants_in_the_encounter_s_order_whatever_the_stored_one(
        ) -> None:
    """The view's ``combatants`` come in the order of ``order`` (the order they were
    added), even from a stored state whose object lists them otherwise."""
    state = encounter(ULCEN, FENKA)
    reordered = {**state, "combatants": dict(reversed(state["combatants"].items()))}
    assert list(SYSTEM.encounter_view(reordered)["combatants"]) == ["ulcen", "fenka"]


def test_a_declared_choice_is_stored_as_a_copy_the_caller_s_later_changes_leave_alone(
        ) -> None:
    """The state is plain data the daemon stores: a choice declared is kept as it was
    then, sharing nothing with the caller's objects."""
    choice: JSON = {"attack": {"mode": "mind-thrust", "target": "fenka"},
                    "defense": {"mode": "thought-shield"}}
    state = SYSTEM.encounter_declare(encounter(ULCEN, FENKA), "ulcen", choice)
    choice["attack"]["multiplier"] = 4
    choice["defense"]["mode"] = "mental-barrier"
    assert state["pending"]["ulcen"] == {"attack": {"mode": "mind-thrust", "target": "fenka"},
                                         "defense": {"mode": "thought-shield"}}


def test_initiative_is_rolled_on_the_tables_die() -> None:
    """H-2E-ORDER 'initiative': d10 each with the shipped tables; a GM's table giving
    another die size is rolled on that die."""
    def first_rolls(system: Revised2e) -> list[tuple[str, int]]:
        state = system.encounter_new({"H-2E-ORDER": "initiative"})
        for c in (ULCEN, FENKA):
            state, _ = system.encounter_add(state, c)
        state = system.encounter_declare(state, "ulcen", {"attack": {
            "mode": "mind-thrust", "target": "fenka"}})
        _, step = system.encounter_resolve(state, RandomDice(7), force=True)
        return [(r["purpose"], r["sides"]) for r in step["rolls"]][:1]

    assert first_rolls(SYSTEM) == [("initiative", 10)]
    raw = copy.deepcopy(dict(SYSTEM.tables.raw))
    raw["initiative"]["sides"] = 6
    assert first_rolls(Revised2e(raw)) == [("initiative", 6)]


def test_the_view_lists_who_has_declared_in_the_encounter_s_order_not_the_declarations(
        ) -> None:
    """The view's ``declared`` follows the encounter's order, as ``waiting_for`` does,
    whatever order the choices came in."""
    state = SYSTEM.encounter_declare(encounter(ULCEN, FENKA), "fenka", {
        "defense": {"mode": "thought-shield"}})
    state = SYSTEM.encounter_declare(state, "ulcen", {"defense": {"mode": "thought-shield"}})
    assert SYSTEM.encounter_view(state)["declared"] == ["ulcen", "fenka"]


def test_an_attack_lost_to_conditions_names_every_one_that_stops_it() -> None:
    """RULES.md §1.5: dazed and confused each stop an attack; an attacker that is both
    by the time its attack comes is told both, as a refused declaration would be."""
    state = SYSTEM.encounter_declare(encounter(ULCEN, FENKA), "ulcen", {"attack": {
        "mode": "mind-thrust", "target": "fenka"}})
    state["combatants"]["ulcen"] |= {"conditions": ["dazed", "confused"],
                                     "condition_rounds": {"dazed": 2, "confused": 2}}
    _, step = SYSTEM.encounter_resolve(state, SuppliedDice({}), force=True)
    [lost] = [e for e in step["events"] if e["type"] == "attack-lost"]
    assert lost["reason"] == "Ulcen of Tyr is dazed, confused"
    assert "mind thrust is lost: Ulcen of Tyr is dazed, confused." in step["summary"]


def test_a_defense_the_mind_cannot_pay_for_is_refused_by_its_own_rule_and_figures() -> None:
    """RULES.md §1.4 step 1: a defense costs its PSPs when raised; declaring one the mind
    cannot pay is refused as that defense's cost, as an exchange refuses it."""
    state = encounter(ULCEN, psionicist("fenka", "Fenka of Raam", psp=3))
    with pytest.raises(RulesViolation) as err:
        SYSTEM.encounter_declare(state, "fenka", {"defense": {"mode": "mental-barrier"}})
    assert (err.value.rule, err.value.detail) == (
        "not-enough-psp-for-defense", "Fenka of Raam needs 5 PSPs for mental-barrier but holds 3")


def test_combatants_added_and_taken_again_are_derived_under_the_encounter_s_house_rules(
        ) -> None:
    """H-2E-WT-MTHAC0 off for this encounter: a level-5 wild talent's MTHAC0 is 21 − 5,
    not 21 − ceil(5/2), when it is added and when its sheet is taken again."""
    talent = {"id": "kel", "name": "Kel", "kind": "wild-talent", "level": 5, "psp_max": 20,
              "int": 12, "wis": 12, "attacks": ["mind-thrust"]}
    state = encounter(ULCEN, talent, options={"H-2E-WT-MTHAC0": False})
    assert state["combatants"]["kel"]["mthac0"] == 16
    state = SYSTEM.encounter_replace(state, "kel", {**talent, "psp": 10})
    assert state["combatants"]["kel"]["mthac0"] == 16
