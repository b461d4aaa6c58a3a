"""revised-2e: exact odds (RULES.md §1.4) against brute-force enumeration of every die.

The oracle resolves the exchange with supplied dice, and whenever it asks for a die it
has not been given (``DiceNeeded``) branches over every face of that die, each branch
weighted 1/sides. So it knows nothing of the odds code: it only runs ``resolve``.
"""

from __future__ import annotations

import copy
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
    """Every chance ``exact_odds`` gives, counted over the leaves: a save is rolled
    where the result has one, an effect happens where it has one (``hp_damage``: its
    amount, 0 where there is none), and ``modifier``, ``defense_psp``, ``target_open``
    and ``effect_types`` are the sets of what the leaves say."""
    out: dict[str, Any] = {"hit": Fraction(0), "critical": Fraction(0),
                           "mind_opened": Fraction(0), "save_rolled": Fraction(0),
                           "effect": Fraction(0), "damage": {}, "psp_spent": {},
                           "needed": {}, "hp_damage": {}, "modifier": set(),
                           "defense_psp": set(), "target_open": set(), "effect_types": set()}
    for weight, r in enumerate_resolutions(request, system):
        out["hit"] += weight * r["hit"]
        out["critical"] += weight * r["critical"]
        out["mind_opened"] += weight * r["mind_opened"]
        out["save_rolled"] += weight * (r["save"] is not None)
        out["effect"] += weight * (r["effect"] is not None)
        hp = r["effect"]["amount"] if r["effect"] and r["effect"]["type"] == "hp-damage" else 0
        for key, value in (("damage", r["damage"]), ("psp_spent", r["psp_spent"]),
                           ("needed", r["needed"]), ("hp_damage", hp)):
            out[key][value] = out[key].get(value, Fraction(0)) + weight
        out["modifier"].add(r["roll"]["modifier"])
        out["defense_psp"].add(r["defense_psp"])
        out["target_open"].add(r["target_was_open"])
        if r["effect"] is not None:
            out["effect_types"].add(r["effect"]["type"])
    assert sum(out["damage"].values()) == 1
    return out


def distribution(probs: dict[int, Fraction]) -> list[list[float]]:
    return [[v, float(p)] for v, p in sorted(probs.items()) if p]


def assert_odds_are_the_counts(request: dict[str, Any], system: Revised2e = SYSTEM
                               ) -> dict[str, Any]:
    """``exact_odds`` and the JSON of ``exchange.odds``, every member, against the
    counts of ``brute_force`` (which it returns)."""
    oracle = brute_force(request, system)
    exact = system.exact_odds(request)
    for key in ("hit", "critical", "mind_opened", "save_rolled", "effect"):
        assert exact[key] == oracle[key], key
    for key in ("damage", "psp_spent", "needed"):
        assert {v: p for v, p in exact[key].items() if p} == oracle[key], key
    (modifier,), (defense_psp,), (target_open,) = (
        oracle["modifier"], oracle["defense_psp"], oracle["target_open"])
    odds = system.odds(request)
    needed = oracle["needed"]
    assert {k: v for k, v in odds.items() if k not in ("damage", "psp_spent", "effect")} == {
        "outcomes": {"hit": float(oracle["hit"]), "miss": float(1 - oracle["hit"])},
        "critical": float(oracle["critical"]), "mind_opened": float(oracle["mind_opened"]),
        "save_rolled": float(oracle["save_rolled"]),
        "needed": next(iter(needed)) if len(needed) == 1 else None,
        "needed_distribution": distribution(needed), "modifier": modifier,
        "defense_psp": defense_psp, "target_open": target_open}
    assert odds["damage"]["distribution"] == distribution(oracle["damage"])
    assert odds["psp_spent"]["distribution"] == distribution(oracle["psp_spent"])
    if not target_open:
        assert odds["effect"] is None and oracle["effect"] == 0
        return oracle
    (effect_type,) = oracle["effect_types"]
    assert odds["effect"]["type"] == effect_type
    assert odds["effect"]["p"] == float(oracle["effect"])
    if effect_type == "hp-damage":
        assert exact["hp_damage"] == oracle["hp_damage"]
        assert odds["effect"]["hp_damage"]["distribution"] == distribution(oracle["hp_damage"])
    else:
        assert "hp_damage" not in odds["effect"]
    return oracle


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
    # a pool below a quarter of the maximum: a critical hit that empties it opens the
    # mind with no save, one that does not needs the save
    "pool-below-a-quarter": {"attacker": ULCEN, "defender": psionicist("low", 4, mac=3, psp=3),
                             "attack": {"mode": "mind-thrust", "multiplier": 2}},
    # a MAC of 0 is a MAC known, not one still to roll by the Quick MAC rules
    "mac-zero": {"attacker": ULCEN, "defender": psionicist("zero", 4, mac=0),
                 "attack": {"mode": "mind-thrust"}},
    # a pool already empty, with no defense paid for: the mind is not open (yet)
    "empty-pool-no-defense": {"attacker": ULCEN, "defender": psionicist("dry", 3, mac=7, psp=0),
                              "attack": {"mode": "mind-thrust"}},
    # H-2E-QUICKMAC-PICK off: the Quick MAC's base is the worst of its range
    "quick-mac-worst-base": {
        "attacker": ULCEN, "options": {"H-2E-QUICKMAC-PICK": False},
        "defender": {"id": "beast", "kind": "psionicist", "level": 2, "psp_max": 12,
                     "class_group": "monster", "quick_mac": {"intelligence": 5, "psionic": "low"}},
        "attack": {"mode": "mind-thrust"}},
    # paying for the defense empties the pool: the mind is open before the roll
    "defense-empties-pool": {"attacker": ULCEN,
                             "defender": psionicist("spent", 3, mac=7, psp=2),
                             "attack": {"mode": "mind-thrust"},
                             "defense": {"mode": "thought-shield"}},
    # the same defense paid earlier this round: not paid again, the pool stays closed
    "defense-paid-keeps-pool": {"attacker": ULCEN,
                                "defender": psionicist("spent", 3, mac=7, psp=2),
                                "attack": {"mode": "mind-thrust"},
                                "defense": {"mode": "thought-shield", "paid": True}},
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_exact_odds_match_enumeration_of_all_dice(case: str) -> None:
    """Every chance of the odds, exact and in the JSON, is its count over every die."""
    assert_odds_are_the_counts(CASES[case])


def test_a_gm_table_s_small_save_die_and_an_effect_not_per_step_match_enumeration() -> None:
    """A GM's table may roll the save vs. paralyzation on a d4 (a target of 13 is then
    never made: every critical hit that needs the save opens the mind) and give psionic
    blast's hit-point damage once, not per step (``per_step`` false): 1d2 at any
    multiplier, where per step (as shipped) it is 2d2 at a multiplier of 2. (Its
    damage is made 1d2 here, to keep the enumeration small.)"""
    raw = copy.deepcopy(dict(SYSTEM.tables.raw))
    raw["save_paralyzation"]["sides"] = 4
    raw["attacks"]["psionic-blast"]["damage"] = {"sides": 2, "bonus": 0}
    raw["open_mind"]["effects"]["psionic-blast"].update(sides=2, per_step=False)
    gm = Revised2e(raw)
    closed = {"attacker": ULCEN, "defender": psionicist("fenka", 4, mac=3, save_paralyzation=13),
              "attack": {"mode": "psionic-blast", "multiplier": 2}}
    oracle = assert_odds_are_the_counts(closed, gm)
    assert oracle["save_rolled"] > 0 and oracle["mind_opened"] == oracle["save_rolled"]
    opened = {**closed, "defender": psionicist(
        "open", 3, mac=6, hp=20, mind={"state": "open", "opened_by": "critical"})}
    assert set(assert_odds_are_the_counts(opened, gm)["hp_damage"]) == {0, 1, 2}
    raw["open_mind"]["effects"]["psionic-blast"]["per_step"] = True
    per_step = Revised2e(raw)
    assert set(assert_odds_are_the_counts(opened, per_step)["hp_damage"]) == {0, 2, 3, 4}


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
