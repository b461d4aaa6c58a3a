"""combat-strength exact odds against brute-force enumeration of every die sequence.

The oracle feeds each possible sequence of supplied dice to ``resolve`` itself and
weights it by its probability; a penetration chain that reaches the cap counts with the
value ``resolve`` gives it, as ``Dist.penetrating_die`` does, so nothing is truncated.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from fractions import Fraction
from itertools import product
from typing import Any

import pytest

from engine.combat_strength import SYSTEM, CombatStrength
from engine.combat_strength.exchange import plan
from engine.combat_strength.odds import ExactOdds, exact_odds
from engine.dice import SuppliedDice

JSON = dict[str, Any]


def chains(cap: int) -> Iterator[tuple[list[int], Fraction, bool]]:
    """Every sequence one penetrating d6 can show with ``cap`` follow-ups: (values,
    probability, capped)."""
    for sixes in range(cap + 1):
        for last in range(1, 6):
            yield [6] * sixes + [last], Fraction(1, 6 ** (sixes + 1)), False
    yield [6] * (cap + 1), Fraction(1, 6 ** (cap + 1)), True


def exact(req: JSON) -> ExactOdds:
    a = SYSTEM.combatant(req["attacker"])
    d = SYSTEM.combatant(req["defender"])
    opts = SYSTEM.options(req.get("options"))
    defense = None if req.get("defense") is None else req["defense"]["mode"]
    p = plan(SYSTEM.tables, opts, a, d, req["attack"]["mode"],
             req["attack"].get("range", "short"), defense)
    return exact_odds(SYSTEM.tables, p, d, opts["H-CS-PEN-CAP"])


class Oracle:
    """Tallies of outcomes weighted by probability."""

    def __init__(self) -> None:
        self.damage: dict[int, Fraction] = {}
        self.truncated = Fraction(0)
        self.crushed = Fraction(0)
        self.zero = Fraction(0)
        self.conditions: dict[str, Fraction] = {}
        self.outcome: dict[str, Fraction] = {}

    def add(self, req: JSON, dice: dict[str, list[int]], prob: Fraction, capped: bool) -> None:
        res = SYSTEM.resolve(req, SuppliedDice(dice))
        assert res.fields["capped"] == capped
        assert not res.unused_dice, "every enumerated die must be used"
        dmg = res.fields["damage"]
        self.damage[dmg] = self.damage.get(dmg, Fraction(0)) + prob
        self.crushed += prob if res.fields["crushed"] else 0
        self.zero += prob if res.defender.after["defense_strength"] == 0 else 0
        if res.fields["condition"] is not None:
            cid = res.fields["condition"]["id"]
            self.conditions[cid] = self.conditions.get(cid, Fraction(0)) + prob
        self.outcome[res.outcome] = self.outcome.get(res.outcome, Fraction(0)) + prob


def req(attacker: JSON, defender: JSON, mode: str, defense: str | None, cap: int,
        **more: Any) -> JSON:
    return {"attacker": attacker, "defender": defender, "attack": {"mode": mode, **more},
            "defense": None if defense is None else {"mode": defense},
            "options": {"H-CS-PEN-CAP": cap}}


@pytest.mark.parametrize("strength,defense_strength,cap", [(50, 8, 2), (75, 20, 1),
                                                           (30, 1, 0)])
def test_damage_distribution_and_defense_zero_match_enumeration(
        strength: int, defense_strength: int, cap: int) -> None:
    """Seed iv: penetrating bonus dice; table A 01-25 mind thrust vs mental barrier is 0."""
    r = req({"id": "a", "attack_strength": strength, "defense_strength": 0},
            {"id": "b", "attack_strength": 10, "defense_strength": defense_strength},
            "mind-thrust", "mental-barrier", cap)
    n = strength // 25
    oracle = Oracle()
    for combo in product(list(chains(cap)), repeat=n):
        values = [v for c in combo for v in c[0]]
        prob = Fraction(1)
        for c in combo:
            prob *= c[1]
        oracle.add(r, {"damage": values}, prob, any(c[2] for c in combo))
    odds = exact(r)
    assert dict(odds.damage.items()) == oracle.damage
    assert odds.damage.truncated_mass == oracle.truncated
    assert odds.defense_zero == oracle.zero
    assert {k: v for k, v in odds.outcome.items() if v} == oracle.outcome
    data = SYSTEM.odds(r)
    assert data["damage"]["truncated_mass"] == oracle.truncated == 0
    assert sum(data["outcomes"].values()) == pytest.approx(1)


def test_psychic_implosion_crush_chance_matches_enumeration() -> None:
    """H-CS-IMPLOSION: bonus dice only; d100 <= 2 (01-25 vs mind blank) crushes."""
    r = req({"id": "a", "attack_strength": 30, "defense_strength": 0},
            {"id": "b", "attack_strength": 10, "defense_strength": 7},
            "psychic-implosion", "mind-blank", 1)
    oracle = Oracle()
    for values, prob, capped in chains(1):
        for d100 in range(1, 101):
            oracle.add(r, {"damage": values, "implosion": [d100]}, prob / 100, capped)
    odds = exact(r)
    assert dict(odds.damage.items()) == oracle.damage
    assert odds.crushed * (1 - odds.damage.truncated_mass) == oracle.crushed
    assert odds.defense_zero == oracle.zero
    assert {k: v for k, v in odds.outcome.items() if v} == oracle.outcome
    data = SYSTEM.odds(r)
    assert data["outcomes"]["crushed"] == pytest.approx(0.02)
    assert data["crushed"] == float(oracle.crushed) == 0.02


def test_defenseless_chance_of_death_matches_enumeration() -> None:
    """Table B: psychic implosion on a defenseless mind, band 01-25 vs <=59: 72%."""
    r = req({"id": "a", "attack_strength": 20, "defense_strength": 0},
            {"id": "b", "attack_strength": 10, "defense_strength": 10}, "psychic-implosion",
            None, 5)
    oracle = Oracle()
    for d100 in range(1, 101):
        oracle.add(r, {"implosion": [d100]}, Fraction(1, 100), False)
    odds = exact(r)
    assert odds.conditions == oracle.conditions == {"dead": Fraction(72, 100)}
    assert odds.defense_zero == oracle.zero
    assert {k: v for k, v in odds.outcome.items() if v} == oracle.outcome
    assert SYSTEM.odds(r)["outcomes"] == {"0": 1.0, "crushed": 0.72}


@pytest.mark.parametrize("int_wis,range_", [(11, "medium"), (40, "long")])
def test_wave_save_and_effects_match_enumeration(int_wis: int, range_: str) -> None:
    """Table C: save on d20, then d100 on the effect table."""
    r = req({"id": "a", "attack_strength": 40, "defense_strength": 0},
            {"id": "ogre", "int": int_wis // 2, "wis": int_wis - int_wis // 2},
            "psionic-wave", None, 5, range=range_)
    oracle = Oracle()
    saved = Fraction(0)
    for save in range(1, 21):
        first = SYSTEM.resolve(r, SuppliedDice({"save": [save], "wave-effect": [1]}))
        if first.fields["save"]["success"]:
            oracle.add(r, {"save": [save]}, Fraction(1, 20), False)
            saved += Fraction(1, 20)
            continue
        for effect in range(1, 101):
            oracle.add(r, {"save": [save], "wave-effect": [effect]}, Fraction(1, 2000), False)
    odds = exact(r)
    assert {k: v for k, v in odds.conditions.items() if v} == oracle.conditions
    assert {k: v for k, v in odds.outcome.items() if v} == oracle.outcome
    # a mind without defense strength has none after the wave either
    assert odds.defense_zero == oracle.zero == 1
    data = SYSTEM.odds(r)
    assert data["save"] == float(saved)
    assert {k: v for k, v in data["conditions"].items() if v} == {
        k: float(v) for k, v in oracle.conditions.items()}


def wave_by_enumeration(system: CombatStrength, r: JSON) -> tuple[Fraction, dict[str, Fraction]]:
    """The chance to save against ``r``'s psionic wave and of each condition, from
    ``system.resolve`` given every d20 save and, after a failed one, every d100."""
    saved = Fraction(0)
    conditions: dict[str, Fraction] = {}
    for save in range(1, 21):
        first = system.resolve(r, SuppliedDice({"save": [save], "wave-effect": [1]}))
        if first.fields["save"]["success"]:
            saved += Fraction(1, 20)
            continue
        for effect in range(1, 101):
            res = system.resolve(r, SuppliedDice({"save": [save], "wave-effect": [effect]}))
            cid = res.fields["condition"]["id"]
            conditions[cid] = conditions.get(cid, Fraction(0)) + Fraction(1, 2000)
    return saved, conditions


def test_a_wave_save_above_20_is_never_made_and_a_condition_in_two_rows_adds_up() -> None:
    """A GM's table C may ask a save no d20 makes (the shipped one asks 0 to -2 of the
    keenest minds, which always save): its chance is 0, not below it. And it may give
    one condition in two rows of a band: its chance is both rows' shares of the d100."""
    data = copy.deepcopy(SYSTEM.tables.data)
    data["wave"]["save"]["..5"]["short"] = 25
    data["wave"]["effects"]["..5"] = [{"max": 50, "condition": "dead"},
                                      {"max": 85, "condition": "coma"},
                                      {"max": 100, "condition": "dead"}]
    system = CombatStrength(data)
    r = req({"id": "a", "attack_strength": 40, "defense_strength": 0},
            {"id": "ogre", "int": 2, "wis": 3}, "psionic-wave", None, 5)
    saved, conditions = wave_by_enumeration(system, r)
    assert (saved, conditions) == (
        Fraction(0), {"dead": Fraction(65, 100), "coma": Fraction(35, 100)})
    data_out = system.odds(r)
    assert data_out["save"] == float(saved)
    assert data_out["conditions"] == {k: float(v) for k, v in conditions.items()}
    assert data_out["outcome"] == {"condition": 1.0}


def test_a_letter_of_table_b_is_its_condition_for_certain() -> None:
    """Table B, band 01-25 against a total of 59 or less: Mind Thrust on a defenseless
    mind is W, a psionic wound, whatever the dice (they only say for how many weeks).
    Its defense strength stays as it was."""
    r = req({"id": "a", "attack_strength": 10, "defense_strength": 0},
            {"id": "b", "attack_strength": 10, "defense_strength": 7}, "mind-thrust", None, 3)
    oracle = Oracle()
    for weeks in range(1, 5):
        oracle.add(r, {"condition-duration": [weeks]}, Fraction(1, 4), False)
    odds = exact(r)
    assert odds.conditions == oracle.conditions == {"psionic-wound": 1}
    assert odds.defense_zero == oracle.zero == 0
    assert {k: v for k, v in odds.outcome.items() if v} == oracle.outcome
    assert SYSTEM.odds(r)["conditions"] == {"psionic-wound": 1.0}


def test_an_attack_certain_to_do_nothing_lists_no_damage_and_no_crush() -> None:
    """Table A 01-25: Mind Thrust against Mental Barrier is 0, and Combat Strength 10
    earns no bonus die: the attack certainly does nothing. The odds list no chance of
    damage, and no crush among the outcomes of an attack that cannot crush."""
    r = req({"id": "a", "attack_strength": 10, "defense_strength": 0},
            {"id": "b", "attack_strength": 10, "defense_strength": 7},
            "mind-thrust", "mental-barrier", 3)
    oracle = Oracle()
    oracle.add(r, {}, Fraction(1), False)
    odds = exact(r)
    assert {k: v for k, v in odds.outcome.items() if v} == oracle.outcome == {"no-effect": 1}
    data = SYSTEM.odds(r)
    assert data["outcomes"] == {"0": 1.0}
    assert data["outcome"] == {"no-effect": 1.0}


def test_odds_json_shape_api_md() -> None:
    """API.md: {outcomes: {name: p}, damage: {mean, distribution, truncated_mass}}, and
    the project's dealt beside them."""
    r = req({"id": "a", "attack_strength": 60, "defense_strength": 40},
            {"id": "b", "attack_strength": 10, "defense_strength": 30}, "ego-whip",
            "shield-thoughts", 100, range="medium")
    data = SYSTEM.odds(r)
    assert set(data["damage"]) == {"mean", "distribution", "truncated_mass", "dealt"}
    assert data["bonus_dice"] == 3 and data["table"] == "combat"
    # 3 + 3 penetrating d6: smallest 6; a penetrating d6 averages m = 3.5 + (m - 1)/6 = 4
    assert data["damage"]["distribution"][0][0] == 6
    assert data["damage"]["mean"] == pytest.approx(3 + 3 * 4)
    assert data["damage"]["truncated_mass"] == 0
    # every attack deals some, and the least is the lowest value of the distribution
    assert data["damage"]["dealt"]["chance"] == 1 and data["damage"]["dealt"]["least"] == 6
    assert 0 < data["defense_zero"] < 1


def test_odds_stop_a_chain_at_the_cap_given_and_name_the_lookup_they_used() -> None:
    """RULES.md 2.3 step 4: a penetrating die's follow-ups stop at H-CS-PEN-CAP, and the
    odds count a chain there as resolve does. Combat Strength 40: one bonus die; Ego
    Whip on Shield Thoughts is 3 (table A 01-25); with a cap of 1 the most is
    3 + 6 + 5 = 14, at 1/36. Without a defense, table B: band 26-50 (attack strength 30)
    against an original total of 60-109 is 30 points; Ego Whip costs 7 either way."""
    ann = {"id": "ann", "attack_strength": 30, "defense_strength": 10}
    bo = {"id": "bo", "attack_strength": 20, "defense_strength": 40}
    data = SYSTEM.odds(req(ann, bo, "ego-whip", "shield-thoughts", 1))
    assert data["damage"]["distribution"][-1] == [14, pytest.approx(1 / 36)]
    assert (data["table"], data["band"], data["table_value"], data["bonus_dice"],
            data["attack_cost"]) == ("combat", "01-25", 3, 1, 7)
    data = SYSTEM.odds(req(ann, bo, "ego-whip", None, 1))
    assert (data["table"], data["band"], data["defender_band"], data["table_value"],
            data["bonus_dice"], data["attack_cost"]) == (
        "defenseless", "26-50", "60-109", 30, 0, 7)


def test_only_a_psionic_wave_has_a_save_in_the_odds() -> None:
    """RULES.md 2.7: the save on d20 belongs to table C alone; the odds of an attack on a
    psionic mind, defended or not, give no save chance (null, not 0)."""
    ann = {"id": "ann", "attack_strength": 30, "defense_strength": 10}
    bo = {"id": "bo", "attack_strength": 20, "defense_strength": 40}
    assert SYSTEM.odds(req(ann, bo, "ego-whip", "shield-thoughts", 1))["save"] is None
    assert SYSTEM.odds(req(ann, bo, "ego-whip", None, 1))["save"] is None
    ogre = {"id": "ogre", "int": 5, "wis": 6}
    assert SYSTEM.odds(req(ann, ogre, "psionic-wave", None, 1))["save"] is not None
