"""revised-2e: exact odds (RULES.md §1.4) against brute-force enumeration of every die.

The oracle resolves the exchange with supplied dice, and whenever it asks for a die it
has not been given (``DiceNeeded``) branches over every face of that die, each branch
weighted 1/sides. So it knows nothing of the odds code: it only runs ``resolve``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from engine.dice import SuppliedDice
from engine.errors import DiceNeeded
from engine.revised_2e import SYSTEM, Revised2e


def enumerate_resolutions(request: dict[str, Any], system: Revised2e = SYSTEM
                          ) -> list[tuple[Fraction, dict[str, Any]]]:
    leaves: list[tuple[Fraction, dict[str, Any]]] = []
    stack: list[tuple[dict[str, list[int]], Fraction]] = [({}, Fraction(1))]
    while stack:
        dice, weight = stack.pop()
        try:
            result = system.resolve(request, SuppliedDice(dice)).to_json()
        except DiceNeeded as need:
            for face in range(1, need.sides + 1):
                more = {k: list(v) for k, v in dice.items()}
                more.setdefault(need.purpose, []).append(face)
                stack.append((more, weight / need.sides))
        else:
            leaves.append((weight, result))
    return leaves


def brute_force(request: dict[str, Any], system: Revised2e = SYSTEM) -> dict[str, Any]:
    out: dict[str, Any] = {"hit": Fraction(0), "critical": Fraction(0),
                           "mind_opened": Fraction(0), "damage": {}, "psp_spent": {}}
    for weight, r in enumerate_resolutions(request, system):
        out["hit"] += weight * r["hit"]
        out["critical"] += weight * r["critical"]
        out["mind_opened"] += weight * r["mind_opened"]
        for key in ("damage", "psp_spent"):
            out[key][r[key]] = out[key].get(r[key], Fraction(0)) + weight
    assert sum(out["damage"].values()) == 1
    return out


def psionicist(cid: str, level: int, **more: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"id": cid, "kind": "psionicist", "level": level, "psp_max": 40,
                         "int": 14, "wis": 13, "attacks": ["mind-thrust", "psionic-blast"],
                         "defenses": ["thought-shield", "mental-barrier"]}
    c.update(more)
    return c


ULCEN = psionicist("ulcen", 4)
CASES: dict[str, dict[str, Any]] = {
    # seed 004 critical-hit rules: save below 25% of the maximum, none at or above it
    "critical-save-and-quarter": {"attacker": ULCEN, "defender": psionicist("fenka", 4, mac=3),
                                  "attack": {"mode": "mind-thrust", "multiplier": 2}},
    # a small pool: hits empty it (0 PSPs opens the mind) or take 25% of the maximum
    "zero-psp-and-quarter": {"attacker": ULCEN,
                             "defender": psionicist("weak", 3, mac=10, psp=5, psp_max=9),
                             "attack": {"mode": "mind-thrust", "multiplier": 2}},
    # "When attacking a nonpsionic mind ... one successful attack opens the target's mind"
    "nonpsionic": {"attacker": ULCEN, "defender": {"id": "guard", "wis": 9},
                   "attack": {"mode": "mind-thrust", "multiplier": 1, "range": "long"}},
    # Table 76 modifier and the defense's cost, medium range
    "defended-medium": {"attacker": ULCEN, "defender": psionicist("fenka", 4, mac=4),
                        "attack": {"mode": "mind-thrust", "multiplier": 1, "range": "medium"},
                        "defense": {"mode": "thought-shield"}},
    # H-2E-CRIT-MODS off: the natural roll must beat the needed number by 5
    "crit-on-natural": {"attacker": ULCEN, "defender": psionicist("fenka", 4, mac=5),
                        "attack": {"mode": "mind-thrust"},
                        "defense": {"mode": "mental-barrier", "paid": True},
                        "options": {"H-2E-CRIT-MODS": False}},
    # an open mind: +2 to the roll and psionic blast's hit-point damage
    "open-mind-blast": {"attacker": ULCEN,
                        "defender": psionicist("open", 3, mac=6, hp=20,
                                               mind={"state": "open", "opened_by": "critical"}),
                        "attack": {"mode": "psionic-blast"}},
    # a monster's Quick MAC still to roll: the odds mix over every MAC
    "quick-mac": {"attacker": ULCEN,
                  "defender": {"id": "beast", "kind": "psionicist", "level": 2, "psp_max": 12,
                               "class_group": "monster",
                               "quick_mac": {"intelligence": 5, "psionic": "low"}},
                  "attack": {"mode": "mind-thrust"}},
    # paying for the defense empties the pool: the mind is open before the roll
    "defense-empties-pool": {"attacker": ULCEN,
                             "defender": psionicist("spent", 3, mac=7, psp=2),
                             "attack": {"mode": "mind-thrust"},
                             "defense": {"mode": "thought-shield"}},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_exact_odds_match_enumeration_of_all_dice(case: str) -> None:
    request = CASES[case]
    exact = SYSTEM.exact_odds(request)
    oracle = brute_force(request)
    assert exact["hit"] == oracle["hit"]
    assert exact["critical"] == oracle["critical"]
    assert exact["mind_opened"] == oracle["mind_opened"]
    assert {v: p for v, p in exact["damage"].items() if p} == oracle["damage"]
    assert {v: p for v, p in exact["psp_spent"].items() if p} == oracle["psp_spent"]


def test_odds_json_has_floats_only_at_the_edge_and_no_truncation() -> None:
    request = CASES["critical-save-and-quarter"]
    odds = SYSTEM.odds(request)
    exact = SYSTEM.exact_odds(request)
    assert odds["outcomes"] == {"hit": float(exact["hit"]), "miss": float(1 - exact["hit"])}
    assert odds["critical"] == float(exact["critical"])
    assert odds["mind_opened"] == float(exact["mind_opened"])
    assert odds["damage"]["truncated_mass"] == 0
    mean = sum(v * p for v, p in exact["damage"].items())
    assert odds["damage"]["mean"] == pytest.approx(float(mean))
    assert sum(p for _, p in odds["damage"]["distribution"]) == pytest.approx(1)


def test_open_mind_effect_odds_match_enumeration() -> None:
    # "psionic blast 1d8 hit points per 10 PSPs" on an open mind (RULES.md §1.5)
    request = CASES["open-mind-blast"]
    odds = SYSTEM.odds(request)
    hp: dict[int, Fraction] = {}
    for weight, r in enumerate_resolutions(request):
        amount = r["effect"]["amount"] if r["effect"] else 0
        hp[amount] = hp.get(amount, Fraction(0)) + weight
    assert odds["effect"]["type"] == "hp-damage"
    assert odds["effect"]["hp_damage"]["distribution"] == [
        [v, float(p)] for v, p in sorted(hp.items())]
