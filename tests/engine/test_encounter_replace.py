"""``System.encounter_replace`` (the engine side of ``encounter.refresh``): a combatant
taken again, for each built-in system, without touching anything else."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine import builtin_systems
from engine.dice import RandomDice, SuppliedDice
from engine.errors import InvalidInput, UnknownCombatant

JSON = dict[str, Any]
SYSTEMS = builtin_systems()

#: Two combatants per system, and a field the sheet changed with its new value.
CASES: dict[str, tuple[JSON, JSON, str, Any]] = {
    "revised-2e": ({"id": "kara", "kind": "psionicist", "level": 3, "psp_max": 30, "int": 14,
                    "wis": 13, "attacks": ["mind-thrust"]},
                   {"id": "vel", "kind": "nonpsionic", "int": 10, "wis": 10}, "psp", 12),
    "combat-strength": ({"id": "kara", "attack_strength": 40, "defense_strength": 40},
                        {"id": "vel", "attack_strength": 20, "defense_strength": 20},
                        "attack_strength", 15),
    "power-pool": ({"id": "kara", "hit_dice": 4, "die": 8},
                   {"id": "vel", "hit_dice": 2, "die": 6}, "pool", 1),
}


def _encounter(system_id: str) -> tuple[Any, JSON]:
    system = SYSTEMS[system_id]
    first, second, _, _ = CASES[system_id]
    state = system.encounter_new(None)
    for c in (first, second):
        state, _ = system.encounter_add(state, c)
    return system, state


@pytest.mark.parametrize("system_id", sorted(CASES))
def test_replace_takes_the_new_values_under_the_same_id(system_id: str) -> None:
    system, state = _encounter(system_id)
    first, _, field, value = CASES[system_id]
    kept = copy.deepcopy(state)
    new = system.encounter_replace(state, "kara", {**first, "id": "other", field: value})
    assert state == kept, "the state given is not changed"
    view, old_view = system.encounter_view(new), system.encounter_view(state)
    assert view["combatants"]["kara"][field] == value
    assert view["combatants"]["vel"] == old_view["combatants"]["vel"]
    assert sorted(view["combatants"]) == ["kara", "vel"]


@pytest.mark.parametrize("system_id", sorted(CASES))
def test_replace_refuses_an_unknown_id_and_an_invalid_combatant(system_id: str) -> None:
    system, state = _encounter(system_id)
    first, _, field, _ = CASES[system_id]
    with pytest.raises(UnknownCombatant):
        system.encounter_replace(state, "nobody", first)
    with pytest.raises(InvalidInput) as bad:
        system.encounter_replace(state, "kara", {**first, field: "many"})
    assert [p.path for p in bad.value.problems] == [f"/combatant/{field}"]


# -- declared choices are checked again --------------------------------------------------
def _psionicist(cid: str, **more: Any) -> JSON:
    return {"id": cid, "name": cid.title(), "kind": "psionicist", "level": 9, "psp": 90,
            "psp_max": 90, "int": 18, "wis": 13, "attacks": ["mind-thrust", "ego-whip"],
            "defenses": ["thought-shield", "mental-barrier"], **more}


def test_revised_2e_a_choice_the_refreshed_sheet_no_longer_allows_is_dropped() -> None:
    """A level-2 sheet cannot make a ×9 mind thrust it no longer knows: the choice goes,
    and the round waits for a new one (it is not carried out)."""
    system = SYSTEMS["revised-2e"]
    state = system.encounter_new(None)
    for cid in ("bane", "vic"):
        state, _ = system.encounter_add(state, _psionicist(cid))
    state = system.encounter_declare(state, "bane", {
        "attack": {"mode": "mind-thrust", "target": "vic", "multiplier": 9},
        "defense": {"mode": "mental-barrier"}})
    state = system.encounter_declare(state, "vic", {"defense": {"mode": "thought-shield"}})
    weaker = system.encounter_replace(state, "bane", _psionicist(
        "bane", level=2, attacks=["ego-whip"], defenses=["thought-shield"]))
    assert system.encounter_waiting_for(weaker) == ["bane"]
    assert list(system.encounter_pending_choices(weaker)) == ["vic"]
    same = system.encounter_replace(state, "bane", _psionicist("bane", psp=80))
    assert system.encounter_pending_choices(same) == system.encounter_pending_choices(state)


def test_power_pool_an_attack_the_refreshed_sheet_no_longer_allows_drops_the_exchange(
        ) -> None:
    """An attacker now asleep cannot attack: the pending exchange goes (it would have
    stuck the encounter), and the round goes on without it."""
    system = SYSTEMS["power-pool"]
    pp = {"hit_dice": 4, "die": 6, "psionic": True, "attacks": ["mental-stab"]}
    state = system.encounter_new(None)
    for cid in ("a", "b"):
        state, _ = system.encounter_add(state, {"id": cid, **pp})
    state = system.encounter_declare(state, "a", {"attack": {"mode": "mental-stab",
                                                             "target": "b"}})
    asleep = system.encounter_replace(state, "a", {"id": "a", **pp, "conditions": ["asleep"]})
    assert system.encounter_pending_choices(asleep) == {}
    assert system.encounter_waiting_for(asleep) == ["b"]
    system.encounter_resolve(asleep, SuppliedDice({}), True)  # not stuck
    kept = system.encounter_replace(state, "a", {"id": "a", **pp, "pool": 3})
    assert system.encounter_pending_choices(kept) == system.encounter_pending_choices(state)


def test_combat_strength_an_attack_of_a_refreshed_sleeper_is_dropped() -> None:
    system = SYSTEMS["combat-strength"]
    a = {"id": "a", "attack_strength": 40, "defense_strength": 40,
         "attacks": ["mind-thrust"], "defenses": ["mind-blank"]}
    b = {"id": "b", "attack_strength": 40, "defense_strength": 40}
    state = system.encounter_new(None)
    for c in (a, b):
        state, _ = system.encounter_add(state, c)
    state = system.encounter_declare(state, "a", {"stance": "trance"})
    state = system.encounter_declare(state, "b", {"stance": "normal"})
    state, _ = system.encounter_resolve(state, SuppliedDice({}), False)
    state = system.encounter_declare(state, "a", {"attack": {"mode": "mind-thrust",
                                                             "target": "b"}})
    asleep = system.encounter_replace(state, "a", {**a, "conditions": ["asleep"]})
    assert "a" not in system.encounter_pending_choices(asleep)
    system.encounter_resolve(asleep, RandomDice(1), True)  # not stuck


def test_combat_strength_a_refreshed_sheet_leaves_every_choice_still_allowed_declared(
        ) -> None:
    """engine/combat_strength/encounter.py ``replace``: every declared choice is checked
    again and kept while the rules allow it: Cy's sheet, taken again with less attack
    strength, leaves all three secret choices of the segment as they were declared."""
    system = SYSTEMS["combat-strength"]
    state = system.encounter_new(None)
    for cid in ("ann", "bo", "cy"):
        state, _ = system.encounter_add(state, {"id": cid, "attack_strength": 40,
                                                "defense_strength": 40})
    for cid in ("ann", "bo", "cy"):
        state = system.encounter_declare(state, cid, {"stance": "trance"})
    state, _ = system.encounter_resolve(state, SuppliedDice({}), False)
    choices = {
        "ann": {"attack": {"mode": "ego-whip", "target": "bo", "range": "short"},
                "defense": None},
        "bo": {"attack": None, "defense": {"mode": "mind-blank"}},
        "cy": {"attack": {"mode": "mind-thrust", "target": "ann", "range": "long"},
               "defense": {"mode": "mental-barrier"}},
    }
    for cid, choice in choices.items():
        state = system.encounter_declare(state, cid, choice)
    state = system.encounter_replace(state, "cy", {"id": "cy", "attack_strength": 10,
                                                   "attack_strength_max": 40,
                                                   "defense_strength": 40})
    assert system.encounter_pending_choices(state) == choices
    assert state["combatants"]["cy"]["attack_strength"] == 10


def test_combat_strength_a_sheet_refreshed_as_not_psionic_at_intent_drops_its_stance(
        ) -> None:
    """RULES.md 2.3 step 1: stances are declared at intent and fixed when it resolves;
    RULES.md 2.1: a creature that is not psionic has none but acting normally. Ann's
    trance, declared at intent, is dropped when her sheet turns out not psionic, she
    is no longer waited for, and no stance is shown before intent resolves."""
    system = SYSTEMS["combat-strength"]
    state = system.encounter_new(None)
    for c in ({"id": "ann", "attack_strength": 30, "defense_strength": 30},
              {"id": "bo", "attack_strength": 30, "defense_strength": 30}):
        state, _ = system.encounter_add(state, c)
    state = system.encounter_declare(state, "ann", {"stance": "trance"})
    state = system.encounter_replace(state, "ann", {"id": "ann", "int": 12, "wis": 9})
    view = system.encounter_view(state)
    assert (view["stances"], view["declared"], view["waiting_for"]) == ({}, [], ["bo"])


@pytest.mark.parametrize("system_id", sorted(CASES))
def test_the_sheet_s_own_id_gives_way_to_the_encounter_s(system_id: str) -> None:
    """A refreshed sheet is taken "under the same id": its own id (a VTT's, which may be
    longer than an encounter allows) is not checked, and a sheet with no name is named
    by the id it holds in the encounter."""
    system, state = _encounter(system_id)
    first, _, _, _ = CASES[system_id]
    new = system.encounter_replace(state, "kara", {**first, "id": "x" * 80})
    assert new["combatants"]["kara"]["id"] == "kara"
    assert new["combatants"]["kara"]["name"] == "kara"


def test_revised_2e_a_stored_choice_that_no_longer_fits_is_dropped_not_refused() -> None:
    """Every declared choice is checked again on a refresh; one of a combatant the
    encounter no longer holds, or one that no longer fits the choice's shape (a state
    stored before the shape changed), is dropped like one the rules refuse, and the
    refresh goes on."""
    system = SYSTEMS["revised-2e"]
    state = system.encounter_new(None)
    for cid in ("bane", "vic"):
        state, _ = system.encounter_add(state, _psionicist(cid))
    state = system.encounter_declare(state, "vic", {"defense": {"mode": "thought-shield"}})
    stale = {**state, "pending": {**state["pending"], "ghost": {},
                                  "bane": {"attack": {"mode": "mind-thrust", "target": "vic",
                                                      "steps": 2}}}}
    new = system.encounter_replace(stale, "bane", _psionicist("bane", psp=80))
    assert system.encounter_pending_choices(new) == {"vic": {"defense": {
        "mode": "thought-shield"}}}


def test_a_system_without_round_logic_refuses_to_take_a_combatant_again() -> None:
    """A plugin's system with no ``rounds`` cannot: invalid params at ``/combatant``,
    naming the system (``System.encounter_replace``)."""
    from tests.sample_plugin import NO_ENCOUNTERS

    with pytest.raises(InvalidInput) as err:
        NO_ENCOUNTERS.encounter_replace({}, "a", {"id": "a", "name": "A"})
    assert [(p.path, p.message) for p in err.value.problems] == [(
        "/combatant", "system no-encounters cannot take a combatant again during an encounter")]
