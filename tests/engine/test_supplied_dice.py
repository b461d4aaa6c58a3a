"""Supplied dice (RULES.md §4: "A supplied value outside the die's faces is invalid
params"): every value is checked before any die is rolled, used or not, so a value no
die of its purpose shows never comes back as ``unused_dice``; at most
``MAX_SUPPLIED_DICE`` values in one call (API.md "Limits")."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine import builtin_systems
from engine.dice import MAX_SIDES, MAX_SUPPLIED_DICE, RandomDice, SuppliedDice, largest_faces
from engine.errors import DiceNeeded, EngineError, InvalidInput, LimitExceeded

from . import test_combat_strength_properties as cs_props
from . import test_revised_2e_properties as r2_props

JSON = dict[str, Any]
SYSTEMS = builtin_systems()
REVISED, STRENGTH = SYSTEMS["revised-2e"], SYSTEMS["combat-strength"]

ULCEN: JSON = {"id": "ulcen", "name": "Ulcen of Tyr", "kind": "psionicist", "level": 4,
               "psp": 40, "psp_max": 40, "int": 14, "wis": 13, "mac": 10,
               "attacks": ["mind-thrust"], "defenses": ["thought-shield"]}
FENKA: JSON = {"id": "fenka", "name": "Fenka", "kind": "psionicist", "level": 3, "psp": 30,
               "psp_max": 30, "int": 12, "wis": 12, "mac": 10, "attacks": ["mind-thrust"],
               "defenses": ["mental-barrier"]}
#: a natural 1 misses (§1.4): no other die is rolled, every other value goes unused
MIND_THRUST: JSON = {"attacker": ULCEN, "defender": FENKA,
                     "attack": {"mode": "mind-thrust", "multiplier": 1, "range": "short"}}
ANN: JSON = {"id": "ann", "name": "Ann", "attack_strength": 100, "defense_strength": 100}
BO: JSON = {"id": "bo", "name": "Bo", "attack_strength": 50, "defense_strength": 50}
#: table A, band 126+: mind thrust against mind blank; five bonus d6
THRUST_AT_BO: JSON = {"attacker": ANN, "defender": BO, "attack": {"mode": "mind-thrust"},
                      "defense": {"mode": "mind-blank"}}


def encounter(system: Any, *combatants: JSON) -> JSON:
    """A new encounter of ``system`` with ``combatants`` in it."""
    state: JSON = system.encounter_new(None)
    for c in combatants:
        state, _ = system.encounter_add(state, c)
    return state


def paths(err: pytest.ExceptionInfo[InvalidInput]) -> list[str]:
    return [p.path for p in err.value.problems]


# -- the dice source ---------------------------------------------------------------------
def test_a_value_no_die_shows_is_refused_when_the_dice_are_given() -> None:
    """Below 1 is never a face; above MAX_SIDES (API.md: 1000 sides per die) neither,
    whatever the purpose, even one no system rolls."""
    with pytest.raises(InvalidInput) as err:
        SuppliedDice({"attack": [1, 0], "anything": [MAX_SIDES, MAX_SIDES + 1, -3]})
    assert paths(err) == ["/dice/attack/1", "/dice/anything/1", "/dice/anything/2"]
    assert err.value.problems[0].message == "0 is not a face of any die (1 to 1000)"
    assert SuppliedDice({"x": [1, MAX_SIDES]}).unused() == {"x": [1, MAX_SIDES]}


def test_a_die_value_is_a_whole_number_not_a_boolean_or_a_string() -> None:
    """``true`` equals 1 in Python but is no die value; nor are 2.0 or "3": each is
    refused where it stands, with the values that are no face beside them."""
    with pytest.raises(InvalidInput) as err:
        SuppliedDice({"attack": [True]})
    assert [p.to_json() for p in err.value.problems] == [
        {"path": "/dice/attack/0", "message": "a die value must be an integer"}]
    with pytest.raises(InvalidInput) as err:
        SuppliedDice({"attack": [1, False, 2.0, "3", 0]})
    assert paths(err) == ["/dice/attack/1", "/dice/attack/2", "/dice/attack/3",
                          "/dice/attack/4"]
    assert [p.message for p in err.value.problems][2:] == [
        "a die value must be an integer", "0 is not a face of any die (1 to 1000)"]


def test_the_dice_of_a_purpose_are_a_list_named_by_a_string() -> None:
    """A string of digits is not a list of values, nor is a purpose that is not a
    string a purpose: each is refused at /dice/<purpose> as a whole."""
    with pytest.raises(InvalidInput) as err:
        SuppliedDice({"attack": "12"})
    assert [p.to_json() for p in err.value.problems] == [
        {"path": "/dice/attack", "message": "must be a list of die values"}]
    with pytest.raises(InvalidInput) as err:
        SuppliedDice({7: [1]})  # type: ignore[dict-item]
    assert [p.to_json() for p in err.value.problems] == [
        {"path": "/dice/7", "message": "must be a list of die values"}]


def test_the_values_checked_are_the_ones_used_though_the_caller_s_list_changes() -> None:
    """Every value is checked when the dice are given: a 0 put into the caller's list
    afterwards is never handed out, and what is left over is a list of the values given."""
    values = [3]
    dice = SuppliedDice({"attack": values, "save": (5, 6)})
    values.append(0)
    assert dice.roll("attack", 20) == 3
    with pytest.raises(DiceNeeded):
        dice.roll("attack", 20)
    assert dice.unused() == {"save": [5, 6]}


def test_check_faces_holds_each_purpose_to_its_largest_die() -> None:
    dice = SuppliedDice({"attack": [20, 21], "damage": [7], "other": [999]})
    with pytest.raises(InvalidInput) as err:
        dice.check_faces({"attack": 20, "damage": 6})
    assert paths(err) == ["/dice/attack/1", "/dice/damage/0"]
    assert err.value.problems[0].message == (
        "21 is not a face of a d20 (1 to 20), the largest die rolled for attack")
    SuppliedDice({"attack": [1, 20], "other": [999]}).check_faces({"attack": 20})
    RandomDice(1).check_faces({"attack": 20})


def test_at_most_max_supplied_dice_in_one_call() -> None:
    """API.md limits: exceeding one is -32602 naming the limit (LimitExceeded at /dice),
    before any value is looked at."""
    assert MAX_SUPPLIED_DICE == 10_000
    SuppliedDice({"a": [1] * 5_000, "b": [1] * 5_000})
    with pytest.raises(LimitExceeded) as err:
        SuppliedDice({"a": [1] * 5_000, "b": [0] * 5_001})
    assert paths(err) == ["/dice"]
    assert err.value.problems[0].message == "10001 supplied dice exceed the limit of 10000"


def test_largest_faces_reads_every_form_of_systems_describe_dice_purposes() -> None:
    """``sides`` as a number or a list, ``sides_by_mode``, ``sides_by_range``."""
    assert largest_faces([
        {"purpose": "a", "sides": 20}, {"purpose": "b", "sides": [4, 6, 20]},
        {"purpose": "c", "sides": None, "sides_by_mode": {"x": 6, "y": 10}},
        {"purpose": "d", "sides": None, "sides_by_range": [2, 3]},
        {"purpose": "e", "sides": None}]) == {"a": 20, "b": 20, "c": 10, "d": 3}
    revised = largest_faces(REVISED.dice_purposes())
    assert (revised["attack"], revised["save"]) == (20, 20)
    assert revised["damage"] == max(int(a["damage"]["sides"])
                                    for a in REVISED.tables.attacks.values())
    assert largest_faces(STRENGTH.dice_purposes()) == {
        "damage": 6, "implosion": 100, "save": 20, "wave-effect": 100,
        "condition-duration": 4}


def test_largest_faces_skips_what_is_not_a_dice_purpose() -> None:
    """A plugin's describe() is not checked: entries that are not objects, lack a
    purpose, or give sizes that are not whole numbers are left out (their values are
    held to the engine's largest die), rather than failing every resolve."""
    assert largest_faces(["attack", None, {"sides": 20}, {"purpose": 7, "sides": 6},
                          {"purpose": "a", "sides": [None, "6", 8, True, -2]},
                          {"purpose": "b", "sides_by_mode": {"x": None}},
                          {"purpose": "c", "sides": 12.5}]) == {"a": 8}
    assert largest_faces([{"purpose": "zero", "sides": 0},
                          {"purpose": "true", "sides": True},
                          {"purpose": "tuple", "sides": (4, 6)}]) == {"tuple": 6}


# -- revised-2e ---------------------------------------------------------------------------
def test_revised_2e_exchange_refuses_unused_values_above_their_d20() -> None:
    """Audit: a natural 1 missed and {attack: [1, 25], save: [99]} came back as unused
    dice; attack and save are d20s (systems.describe dice_purposes)."""
    with pytest.raises(InvalidInput) as err:
        REVISED.resolve(MIND_THRUST, SuppliedDice({"attack": [1, 25], "save": [99]}))
    assert paths(err) == ["/dice/attack/1", "/dice/save/0"]
    with pytest.raises(InvalidInput) as err:
        SuppliedDice({"attack": [1, 25], "damage": [0, -3], "save": [99]})
    assert paths(err) == ["/dice/damage/0", "/dice/damage/1"]
    result = REVISED.resolve(MIND_THRUST, SuppliedDice({"attack": [1, 20], "save": [20]}))
    assert result.to_json()["unused_dice"] == {"attack": [20], "save": [20]}


def test_revised_2e_encounter_refuses_them_and_changes_nothing() -> None:
    """Audit: encounter.resolve {force: true, dice: {attack: [0, 21], save: [-5]}} was
    stored. A refused resolve leaves the state it was given as it was."""
    state = encounter(REVISED, ULCEN, FENKA)
    before = copy.deepcopy(state)
    with pytest.raises(InvalidInput) as err:
        REVISED.encounter_resolve(state, SuppliedDice({"attack": [21], "save": [5]}), True)
    assert paths(err) == ["/dice/attack/0"]
    assert state == before
    _, step = REVISED.encounter_resolve(state, SuppliedDice({"save": [5]}), True)
    assert step["unused_dice"] == {"save": [5]}


def test_revised_2e_end_round_and_rest_refuse_them_too() -> None:
    request: JSON = {"combatants": [FENKA]}
    with pytest.raises(InvalidInput) as err:
        REVISED.end_round(request, SuppliedDice({"wisdom-check": [21]}))
    assert paths(err) == ["/dice/wisdom-check/0"]
    with pytest.raises(InvalidInput) as err:
        REVISED.rest({**request, "hours": 1}, SuppliedDice({"open-duration": [5]}))
    assert paths(err) == ["/dice/open-duration/0"]


# -- combat-strength -----------------------------------------------------------------------
def test_combat_strength_exchange_refuses_unused_values_above_their_die() -> None:
    """Table A needs no d100 here and bonus dice are d6: 101 and 7 are no faces."""
    given_ = {"damage": [1, 1, 1, 1, 1, 7], "implosion": [101], "save": [21]}
    with pytest.raises(InvalidInput) as err:
        STRENGTH.resolve(THRUST_AT_BO, SuppliedDice(given_))
    assert paths(err) == ["/dice/damage/5", "/dice/implosion/0", "/dice/save/0"]
    result = STRENGTH.resolve(THRUST_AT_BO, SuppliedDice(
        {"damage": [1, 1, 1, 1, 1, 6], "implosion": [100], "save": [20]}))
    assert result.to_json()["unused_dice"] == {"damage": [6], "implosion": [100], "save": [20]}


def test_combat_strength_encounter_and_end_round_refuse_them_and_change_nothing() -> None:
    state = encounter(STRENGTH, ANN, BO)
    before = copy.deepcopy(state)
    with pytest.raises(InvalidInput) as err:
        STRENGTH.encounter_resolve(state, SuppliedDice({"condition-duration": [5]}), True)
    assert paths(err) == ["/dice/condition-duration/0"]
    assert state == before
    with pytest.raises(InvalidInput) as err:
        STRENGTH.end_round({"combatants": [ANN]}, SuppliedDice({"save": [21]}))
    assert paths(err) == ["/dice/save/0"]


def test_power_pool_exchange_and_encounter_refuse_them_and_change_nothing() -> None:
    """power-pool's pools roll at most d20s (the die ladder), its save a d20."""
    pool = SYSTEMS["power-pool"]
    ix = {"id": "ix", "name": "Ix", "hit_dice": 2, "die": 6}
    yo = {"id": "yo", "name": "Yo", "hit_dice": 2, "die": 6}
    stab = {"attacker": ix, "defender": yo, "attack": {"mode": "mental-stab"}}
    with pytest.raises(InvalidInput) as err:
        pool.resolve(stab, SuppliedDice({"attack": [1, 1, 25], "defense": [1, 1],
                                         "save": [21]}))
    assert paths(err) == ["/dice/attack/2", "/dice/save/0"]
    state = encounter(pool, ix, yo)
    before = copy.deepcopy(state)
    with pytest.raises(InvalidInput) as err:
        pool.encounter_resolve(state, SuppliedDice({"defense": [21]}), True)
    assert paths(err) == ["/dice/defense/0"] and state == before


# -- what the systems roll stays within what they say ---------------------------------------
@r2_props.FAST
@given(r2_props.legal_requests(), st.integers(0, 2**32))
def test_revised_2e_rolls_no_die_above_its_purpose_s_largest(request: JSON, seed: int
                                                            ) -> None:
    """What check_faces allows is every face the system rolls: a replay of any
    resolution's own dice is never refused."""
    check_rolls(REVISED, request, seed)


@cs_props.FAST
@given(cs_props.requests(), st.integers(0, 2**32))
def test_combat_strength_rolls_no_die_above_its_purpose_s_largest(request: JSON, seed: int
                                                                 ) -> None:
    check_rolls(STRENGTH, request, seed)


def check_rolls(system: Any, request: JSON, seed: int) -> None:
    largest = largest_faces(system.dice_purposes())
    try:
        result = system.resolve(request, RandomDice(seed))
    except EngineError:
        return
    for roll in result.rolls:
        assert roll.sides <= largest[roll.purpose], roll
