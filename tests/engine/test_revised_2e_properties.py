"""revised-2e invariants under Hypothesis (STYLE.md "Habits"; RULES.md §1.4–1.5, §4):

- PSPs never below 0 (seed: the target "loses that many PSPs, not below 0") nor above the
  maximum; every die within its faces; the same supplied dice give the same result;
- any input either resolves or raises an ``EngineError`` subclass, nothing else.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.dice import RandomDice, SuppliedDice
from engine.errors import EngineError, InvalidInput, RulesViolation
from engine.revised_2e import SYSTEM

ATTACKS = sorted(SYSTEM.tables.attacks)
DEFENSES = sorted(SYSTEM.tables.defenses)
FAST = settings(max_examples=100, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])


@st.composite
def combatants(draw: st.DrawFn, cid: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(["psionicist", "wild-talent", "nonpsionic"]))
    c: dict[str, Any] = {"id": cid, "name": cid.title(), "kind": kind,
                         "wis": draw(st.integers(1, 25)), "int": draw(st.integers(1, 25))}
    if kind != "nonpsionic":
        psp_max = draw(st.integers(1, 120))
        c.update(level=draw(st.integers(1, 20)), psp_max=psp_max,
                 psp=draw(st.integers(0, psp_max)), class_group="monster",
                 attacks=draw(st.lists(st.sampled_from(ATTACKS), unique=True)),
                 defenses=draw(st.lists(st.sampled_from(DEFENSES), unique=True)))
    else:
        c["level"] = draw(st.integers(0, 20))
    if draw(st.booleans()):
        c["mac"] = draw(st.integers(-10, 10))
    elif draw(st.booleans()):
        c["quick_mac"] = {"intelligence": draw(st.integers(0, 25)),
                          "psionic": draw(st.sampled_from(["high", "low"]))}
    if draw(st.booleans()):
        # each kind's own causes (§1.1): another would close it by the wrong procedure
        causes = ["attack"] if kind == "nonpsionic" else ["critical", "zero-psp"]
        c["mind"] = {"state": "open", "opened_by": draw(st.sampled_from([*causes, None]))}
    if draw(st.booleans()):
        c["hp"] = draw(st.integers(-5, 60))
    return c


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    request: dict[str, Any] = {
        "attacker": draw(combatants("attacker")), "defender": draw(combatants("defender")),
        "attack": {"mode": draw(st.sampled_from(ATTACKS)),
                   "multiplier": draw(st.integers(1, 20)),
                   "range": draw(st.sampled_from(["short", "medium", "long"]))},
        "options": {"H-2E-CRIT-MODS": draw(st.booleans())},
    }
    if draw(st.booleans()):
        request["defense"] = {"mode": draw(st.sampled_from(DEFENSES)),
                              "paid": draw(st.booleans())}
    return request


@st.composite
def legal_requests(draw: st.DrawFn) -> dict[str, Any]:
    """Requests the rules allow: a psionic attacker that knows its mode and holds the
    declared PSPs, a defense the defender knows and can pay for."""
    request = draw(requests())
    a = request["attacker"]
    a["kind"] = draw(st.sampled_from(["psionicist", "wild-talent"]))
    a.setdefault("level", 1)
    a["level"] = max(1, a["level"])
    mode = request["attack"]["mode"]
    if mode == "psychic-crush":
        request["attack"]["range"] = "short"
    a["attacks"] = sorted({*a.get("attacks", []), mode})
    m = draw(st.integers(1, a["level"]))
    request["attack"]["multiplier"] = m
    cost = SYSTEM.tables.attack_cost(mode) * m
    a["psp_max"] = max(a.get("psp_max", 0), cost)
    a["psp"] = draw(st.integers(cost, a["psp_max"]))
    a.pop("mind", None)
    d = request["defender"]
    for side in (a, d):
        if side.get("hp", 1) <= 0:  # at 0 hit points or fewer a combatant acts no more
            side["hp"] = draw(st.integers(1, 60))
    request.pop("defense", None)
    if d["kind"] != "nonpsionic" and d["defenses"] and draw(st.booleans()):
        mode = draw(st.sampled_from(d["defenses"]))
        paid = d["psp"] < SYSTEM.tables.defense_cost(mode) or draw(st.booleans())
        request["defense"] = {"mode": mode, "paid": paid}
    return request


def check_invariants(result: dict[str, Any]) -> None:
    for side in ("attacker", "defender"):
        after = result[side]["after"]
        assert 0 <= after["psp"] <= after["psp_max"]
        # what a resolution hands back is itself a valid combatant, already complete
        assert SYSTEM.combatant(after, f"/{side}") == after
    for roll in result["rolls"]:
        assert 1 <= roll["value"] <= roll["sides"]
    assert result["psp_spent"] >= 0 and result["damage"] >= 0


@FAST
@given(legal_requests(), st.integers(0, 2**32))
def test_psps_stay_within_pool_and_dice_within_faces(request: dict[str, Any],
                                                     seed: int) -> None:
    check_invariants(SYSTEM.resolve(request, RandomDice(seed)).to_json())


@FAST
@given(legal_requests(), st.integers(0, 2**32))
def test_same_supplied_dice_give_the_same_result(request: dict[str, Any], seed: int) -> None:
    first = SYSTEM.resolve(request, RandomDice(seed)).to_json()
    supplied: dict[str, list[int]] = defaultdict(list)
    for roll in first["rolls"]:
        supplied[roll["purpose"]].append(roll["value"])
    again = [SYSTEM.resolve(request, SuppliedDice(supplied)).to_json() for _ in range(2)]
    assert again[0] == again[1]
    assert {k: v for k, v in again[0].items() if k != "unused_dice"} == \
        {k: v for k, v in first.items() if k != "unused_dice"}
    assert again[0]["unused_dice"] == {}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-30, 300) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                max_size=4),
    max_leaves=12)


@st.composite
def mangled_requests(draw: st.DrawFn) -> Any:
    """A valid-looking request with one member, somewhere, replaced by any JSON value."""
    request = draw(requests())
    where = draw(st.sampled_from(["attacker", "defender", "attack", "defense", "options",
                                  "top"]))
    if where == "top":
        return draw(json_values)
    target = request.get(where)
    if isinstance(target, dict) and target and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(target)))
        target[key] = draw(json_values)
    else:
        request[where] = draw(json_values)
    return request


@FAST
@given(mangled_requests(), st.integers(0, 2**32))
def test_any_input_resolves_or_raises_an_engine_error(request: Any, seed: int) -> None:
    for call in (lambda: SYSTEM.resolve(request, RandomDice(seed)).to_json(),
                 lambda: SYSTEM.odds(request)):
        try:
            result = call()
        except InvalidInput as err:
            # bad input names where it is wrong with a JSON Pointer
            assert err.problems and all(p.path == "" or p.path.startswith("/")
                                        for p in err.problems)
        except RulesViolation as err:
            assert err.rule and err.detail
        except EngineError as err:
            assert str(err)
        else:
            assert isinstance(result, dict) and result


@FAST
@given(st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), json_values), max_size=6),
       st.integers(0, 2**32))
def test_encounter_any_declaration_resolves_or_raises_an_engine_error(
        declarations: list[tuple[str, Any]], seed: int) -> None:
    state = SYSTEM.encounter_new(None)
    for cid in ("a", "b", "c"):
        state, _ = SYSTEM.encounter_add(state, {
            "id": cid, "kind": "psionicist", "level": 9, "psp_max": 30, "int": 16, "wis": 15,
            "attacks": ATTACKS, "defenses": DEFENSES, "class_group": "monster"})
    for cid, choice in declarations:
        with contextlib.suppress(EngineError):
            state = SYSTEM.encounter_declare(state, cid, choice)
    state, step = SYSTEM.encounter_resolve(state, RandomDice(seed), force=True)
    for c in state["combatants"].values():
        assert 0 <= c["psp"] <= c["psp_max"]
    assert all(1 <= r["value"] <= r["sides"] for r in step["rolls"])


@st.composite
def fights(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Three rounds of choices for three psionicists that attack one another."""
    rounds = []
    for _ in range(3):
        choices = {}
        for cid in ("a", "b", "c"):
            choice: dict[str, Any] = {}
            if draw(st.booleans()):
                choice["attack"] = {"mode": draw(st.sampled_from(ATTACKS)),
                                    "multiplier": draw(st.integers(1, 3)),
                                    "target": draw(st.sampled_from(
                                        [x for x in "abc" if x != cid]))}
            if draw(st.booleans()):
                choice["defense"] = {"mode": draw(st.sampled_from(DEFENSES))}
            if draw(st.booleans()):
                choice["close"] = True
            choices[cid] = choice
        rounds.append(choices)
    return rounds


@FAST
@given(fights(), st.integers(0, 2**32))
def test_encounter_rounds_keep_psps_within_pools(rounds: list[dict[str, Any]],
                                                 seed: int) -> None:
    state = SYSTEM.encounter_new({"H-2E-ORDER": "initiative"})
    for cid in ("a", "b", "c"):
        state, _ = SYSTEM.encounter_add(state, {
            "id": cid, "kind": "psionicist", "level": 3, "psp_max": 24, "int": 16, "wis": 15,
            "attacks": ATTACKS, "defenses": DEFENSES, "class_group": "monster"})
    dice = RandomDice(seed)
    for choices in rounds:
        for cid, choice in choices.items():
            with contextlib.suppress(EngineError):
                state = SYSTEM.encounter_declare(state, cid, choice)
        state, step = SYSTEM.encounter_resolve(state, dice, force=True)
        for c in state["combatants"].values():
            assert 0 <= c["psp"] <= c["psp_max"]
        assert all(1 <= r["value"] <= r["sides"] for r in step["rolls"])
        assert state["pending"] == {}
