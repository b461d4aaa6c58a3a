"""combat-strength invariants (Hypothesis): strengths stay within 0..max, every die
within its faces, the same dice give the same result, and any input either resolves
or raises an EngineError subclass."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.combat_strength import SYSTEM
from engine.dice import RandomDice, SuppliedDice
from engine.errors import EngineError, InvalidInput

JSON = dict[str, Any]
ATTACKS = list(SYSTEM.tables.attacks)
DEFENSES = list(SYSTEM.tables.defenses)
FAST = settings(max_examples=150, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


@st.composite
def combatants(draw: st.DrawFn, cid: str) -> JSON:
    if draw(st.integers(0, 5)) == 0:
        return {"id": cid, "int": draw(st.integers(0, 25)), "wis": draw(st.integers(0, 25))}
    attack_max = draw(st.integers(0, 250))
    defense_max = draw(st.integers(0, 250))
    return {
        "id": cid,
        "attack_strength": draw(st.integers(0, attack_max)),
        "attack_strength_max": attack_max,
        "defense_strength": draw(st.integers(0, defense_max)),
        "defense_strength_max": defense_max,
        "original_total": draw(st.integers(0, 400)),
        "psionic": True,
        "int": draw(st.integers(0, 25)),
        "wis": draw(st.integers(0, 25)),
    }


@st.composite
def requests(draw: st.DrawFn) -> JSON:
    return {
        "attacker": draw(combatants("a")),
        "defender": draw(combatants("b")),
        "attack": {"mode": draw(st.sampled_from(ATTACKS)),
                   "range": draw(st.sampled_from(["short", "medium", "long"]))},
        "defense": draw(st.one_of(st.none(), st.builds(
            lambda m: {"mode": m}, st.sampled_from(DEFENSES)))),
        "options": draw(st.fixed_dictionaries({}, optional={
            "H-CS-TABLE": st.sampled_from(["bonus-dice", "full-matrix"]),
            "H-CS-DEFENSELESS": st.booleans(),
            "H-CS-IMPLOSION": st.booleans(),
            "H-CS-PEN-CAP": st.integers(0, 100),
        })),
    }


def within_bounds(c: Mapping[str, Any]) -> bool:
    return bool(0 <= c["attack_strength"] <= c["attack_strength_max"]
                and 0 <= c["defense_strength"] <= c["defense_strength_max"])


def explained(err: EngineError) -> bool:
    """An engine error says what is wrong: invalid input names JSON Pointer paths."""
    if isinstance(err, InvalidInput):
        return all(p.path == "" or p.path.startswith("/") for p in err.problems) and bool(
            err.problems)
    return bool(str(err))


@FAST
@given(requests(), st.integers(0, 2**32))
def test_strengths_stay_within_zero_and_max_and_dice_within_faces(req: JSON,
                                                                   seed: int) -> None:
    """RULES 2.3.4: 'not below 0'; strengths never rise above their maxima."""
    try:
        res = SYSTEM.resolve(req, RandomDice(seed))
    except EngineError:
        return
    for change in (res.attacker, res.defender):
        assert within_bounds(change.after)
    for roll in res.rolls:
        assert 1 <= roll.value <= roll.sides
        assert roll.sides == {"damage": 6, "implosion": 100, "save": 20, "wave-effect": 100,
                              "condition-duration": 4}[roll.purpose]
    assert res.fields["damage"] >= 0
    assert res.attacker.after["attack_strength"] == (
        res.attacker.before["attack_strength"] - res.fields["attack_cost"])


@FAST
@given(requests(), st.integers(0, 2**32))
def test_same_dice_give_the_same_result(req: JSON, seed: int) -> None:
    """STYLE.md: replaying the same dice gives the same result - by seed, and by feeding
    the recorded rolls back as supplied dice."""
    try:
        first = SYSTEM.resolve(req, RandomDice(seed))
    except EngineError:
        return
    again = SYSTEM.resolve(req, RandomDice(seed))
    assert again.to_json() == first.to_json()
    supplied: dict[str, list[int]] = {}
    for roll in first.rolls:
        supplied.setdefault(roll.purpose, []).append(roll.value)
    replay = SYSTEM.resolve(req, SuppliedDice(supplied))
    assert replay.to_json() == first.to_json()


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.text(max_size=8)
    | st.sampled_from(ATTACKS + DEFENSES + ["short", "long", "trance"]),
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.sampled_from(["id", "mode", "range", "attack_strength",
                                       "defense_strength", "psionic", "attacks", "x"]),
                      inner, max_size=4),
    max_leaves=12)


@FAST
@given(st.dictionaries(st.sampled_from(["attacker", "defender", "attack", "defense",
                                        "options", "stance", "dice"]),
                       JSON_VALUES, max_size=7),
       st.one_of(st.none(), st.dictionaries(st.sampled_from(["damage", "save", "implosion"]),
                                            st.lists(st.integers(-2, 120), max_size=5))))
def test_any_input_resolves_or_raises_an_engine_error(req: JSON,
                                                      dice: dict[str, list[int]] | None
                                                      ) -> None:
    """Bad input gets a clear error (an EngineError subclass), never a crash. Supplied
    dice are checked as they are given (a value below 1 is no die's face)."""
    try:
        source = RandomDice(1) if dice is None else SuppliedDice(dice)
        res = SYSTEM.resolve(req, source)
        assert res.system == "combat-strength"
    except EngineError as err:
        assert explained(err)
    try:
        odds = SYSTEM.odds(req)
        assert "outcomes" in odds
    except EngineError as err:
        assert explained(err)


@FAST
@given(requests(), st.integers(0, 2**32), st.data())
def test_mutated_requests_resolve_or_raise_an_engine_error(req: JSON, seed: int,
                                                          data: st.DataObject) -> None:
    """Near-valid requests with one field replaced by junk."""
    part = data.draw(st.sampled_from(["attacker", "defender", "attack", "defense"]))
    field = data.draw(st.sampled_from(["attack_strength", "mode", "defense_strength", "id",
                                       "psionic", "range", "original_total"]))
    target = req[part] if isinstance(req.get(part), dict) else {}
    target[field] = data.draw(JSON_VALUES)
    req[part] = target
    try:
        res = SYSTEM.resolve(req, RandomDice(seed))
        assert within_bounds(res.defender.after)
    except EngineError as err:
        assert explained(err)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(combatants("x"), min_size=2, max_size=4), st.integers(0, 2**32), st.data())
def test_encounter_rounds_keep_strengths_within_bounds(people: list[JSON], seed: int,
                                                       data: st.DataObject) -> None:
    """Random choices through a round: every step resolves or is refused by the rules,
    strengths stay within 0..max, and view never carries pending choices."""
    state = SYSTEM.encounter_new(None)
    ids = []
    for i, person in enumerate(people):
        person = {**person, "id": f"c{i}"}
        state, cid = SYSTEM.encounter_add(state, person)
        ids.append(cid)
    dice = RandomDice(seed)
    for _ in range(12):
        for cid in ids:
            choice: JSON
            if state["phase"] == "intent":
                choice = {"stance": data.draw(st.sampled_from(
                    ["trance", "trance", "discipline", "wave", "normal"]))}
            else:
                attack = data.draw(st.one_of(st.none(), st.builds(
                    lambda m, t, r: {"mode": m, "target": t, "range": r},
                    st.sampled_from(ATTACKS), st.sampled_from(ids),
                    st.sampled_from(["short", "medium", "long"]))))
                defense = data.draw(st.one_of(st.none(), st.builds(
                    lambda m: {"mode": m}, st.sampled_from(DEFENSES))))
                choice = {"attack": attack, "defense": defense}
            try:
                state = SYSTEM.encounter_declare(state, cid, choice)
            except EngineError as err:
                assert explained(err)
        view = SYSTEM.encounter_view(state)
        assert "pending" not in view
        state, step = SYSTEM.encounter_resolve(state, dice, force=True)
        # the daemon stores both verbatim as JSON
        state, step = json.loads(json.dumps(state)), json.loads(json.dumps(step))
        for c in state["combatants"].values():
            assert within_bounds(c)
        for result in step["results"]:
            for roll in result["rolls"]:
                assert 1 <= roll["value"] <= roll["sides"]
