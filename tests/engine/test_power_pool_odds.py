"""power-pool exact odds against brute force (RULES.md §3.2, seed 001_e8815498f41c4da8).

The oracle enumerates every face of every die the exchange rolls (Blank Mind saves
included), resolves each combination with those physical dice through the real
exchange, and counts: the exact odds must equal the counts, to the last fraction.
"""

from __future__ import annotations

import copy
from collections import Counter
from fractions import Fraction
from itertools import product
from typing import Any, NamedTuple

import pytest

from engine.dice import SuppliedDice
from engine.errors import LimitExceeded, RulesViolation
from engine.odds import Dist
from engine.power_pool import SYSTEM, PowerPoolSystem
from engine.power_pool.exchange import resolve_plan
from engine.power_pool.probability import convolve, exact_odds, sum_of_dice

from .test_power_pool_helpers import mundane, psionic


class Counted(NamedTuple):
    """What counting every face says of one exchange."""

    wins: Fraction
    controls: Fraction
    damage: dict[int, Fraction]  # the whole group's, 0 when the attacker does not win
    ties: Fraction
    saved: Fraction  # every Blank Mind save passed
    attack_mean: Fraction | None  # the pools' mean totals; None if they are never rolled
    defense_mean: Fraction | None


def brute_force(request: dict[str, Any], system: PowerPoolSystem = SYSTEM) -> Counted:
    """P(attacker wins), P(control), the distribution of the exchange's ``damage``,
    P(tie), P(every save passed) and the mean totals of the pools, by counting."""
    plan = system.plan(request)
    saves = len(plan.saves)
    save_sides = system.tables["save"]["sides"]
    # the layout of pool dice, read from one resolution whose saves all pass
    probe = resolve_plan(system.tables, plan, SuppliedDice(
        {"save": [save_sides] * saves, "attack": [1] * 100, "defense": [1] * 100}))
    layout = [(r.purpose, r.sides) for r in probe.rolls if r.purpose != "save"]
    wins = controls = ties = total = saved = rolled = attack_sum = defense_sum = 0
    damage: Counter[int] = Counter()
    for save_values in product(range(1, save_sides + 1), repeat=saves):
        for faces in product(*(range(1, s + 1) for _, s in layout)):
            supplied: dict[str, list[int]] = {"save": list(save_values), "attack": [],
                                              "defense": []}
            for (purpose, _), v in zip(layout, faces, strict=True):
                supplied[purpose].append(v)
            out = resolve_plan(system.tables, plan, SuppliedDice(supplied)).to_json()
            total += 1
            ties += bool(out["tie"])
            damage[out["damage"]] += 1
            saved += all(s["success"] for s in out["blank_mind"] or [])
            if out["attack_total"] is not None:
                rolled += 1
                attack_sum += out["attack_total"]
                defense_sum += out["defense_total"]
            if out["winner"] == "attacker":
                wins += 1
                controls += out["controlled"]
    dealt = {v: Fraction(n, total) for v, n in damage.items()}
    return Counted(Fraction(wins, total), Fraction(controls, total), dealt,
                   Fraction(ties, total), Fraction(saved, total),
                   Fraction(attack_sum, rolled) if rolled else None,
                   Fraction(defense_sum, rolled) if rolled else None)


def assert_odds_are_the_counts(odds: dict[str, Any], counted: Counted, saves: int) -> None:
    """``exchange.odds``' JSON: each chance the float of the counted one."""
    assert odds["outcomes"] == {"attacker": float(counted.wins),
                                "defender": float(1 - counted.wins)}
    assert odds["control"] == float(counted.controls)
    assert odds["tie"] == float(counted.ties)
    assert odds["blank_mind_save"] == (float(counted.saved) if saves else None)
    assert odds["damage"]["distribution"] == [
        [v, float(p)] for v, p in sorted(counted.damage.items())]
    assert odds["damage"]["truncated_mass"] == 0
    if counted.attack_mean is not None and counted.defense_mean is not None:
        assert odds["attack_total"] == {"mean": float(counted.attack_mean)}
        assert odds["defense_total"] == {"mean": float(counted.defense_mean)}


CASES: dict[str, dict[str, Any]] = {
    # mental-stab: 2d4 climbs to 2d8 against 2d6
    "upgrade-mental-stab": {
        "attacker": psionic("A", 2, 4), "defender": psionic("B", 2, 6),
        "attack": {"mode": "mental-stab"}},
    # pinnacle-of-will and partial pools on both sides
    "partial-pools-pinnacle": {
        "attacker": psionic("A", 4, 6), "defender": psionic("B", 3, 4),
        "attack": {"mode": "personality-invasion", "pool_dice": 1},
        "defense": {"mode": "pinnacle-of-will", "pool_dice": 2}},
    # ties to the attacker when the house rule is switched
    "tie-to-attacker": {
        "attacker": psionic("A", 2, 4), "defender": psionic("B", 2, 4),
        "attack": {"mode": "personality-invasion"}, "options": {"H-PP-TIE": "attacker"}},
    # spell sacrifice shifts the defense
    "sacrifice": {
        "attacker": psionic("A", 2, 6), "defender": mundane("Mage", 1, 4, spell_levels=[2]),
        "attack": {"mode": "mental-stab"}, "defense": {"sacrifice": [2]}},
    # a Psionic Wave against a group
    "wave-group": {
        "attacker": psionic("A", 2, 6), "defender": psionic("B", 1, 4),
        "defenders": [psionic("C", 1, 6)], "attack": {"mode": "psionic-wave"}},
    # Imagination Swarm with non-psionic allies (one die each, H-PP-GROUP)
    "swarm-group": {
        "attacker": psionic("A", 1, 8), "defender": psionic("B", 1, 4),
        "attack": {"mode": "personality-invasion"}, "defense": {"mode": "imagination-swarm"},
        "allies": [mundane("Guard", 3, 4), mundane("Dog", 1, 6)]},
    # Blank Mind: the attacker's save comes first
    "blank-mind": {
        "attacker": psionic("A", 2, 4, blank_mind_save=12), "defender": psionic("B", 1, 6),
        "attack": {"mode": "personality-invasion"}, "defense": {"mode": "blank-mind"}},
    # Barrier Mantra: a win without control
    "barrier-mantra": {
        "attacker": psionic("A", 2, 4), "defender": psionic("B", 2, 4),
        "attack": {"mode": "personality-invasion"}, "defense": {"mode": "barrier-mantra"}},
    # Synaptic Overload damage in a group, with a sacrifice bonus
    "overload-group": {
        "attacker": psionic("A", 2, 6), "defender": psionic("B", 2, 4, spell_levels=[1]),
        "allies": [mundane("Guard", 2, 4)], "attack": {"mode": "synaptic-overload"},
        "defense": {"mode": "imagination-swarm", "sacrifice": 1}},
    "overload-pinnacle": {
        "attacker": psionic("A", 3, 4), "defender": psionic("B", 2, 4),
        "attack": {"mode": "synaptic-overload"}, "defense": {"mode": "pinnacle-of-will"}},
    # Synaptic Overload stopped by a failed Blank Mind save deals nothing (a 0, counted)
    "overload-blank-mind": {
        "attacker": psionic("A", 2, 4, blank_mind_save=12), "defender": psionic("B", 1, 6),
        "attack": {"mode": "synaptic-overload"}, "defense": {"mode": "blank-mind"}},
    # an asleep mind struck first rolls nothing, but the psionic ally that joined does,
    # and takes its own dice as damage
    "overload-asleep-joined": {
        "attacker": psionic("A", 2, 4), "defender": psionic("B", 2, 4, conditions=["asleep"]),
        "allies": [psionic("P", 1, 6, id="p")], "defenses": {"p": {"mode": "imagination-swarm"}},
        "attack": {"mode": "synaptic-overload"}},
    # Synaptic Overload against a group where only a joined ally sacrifices a spell:
    # the bonus is the whole group's, not the principal's
    "overload-ally-sacrifice": {
        "attacker": psionic("A", 2, 4), "defender": psionic("B", 1, 4),
        "allies": [psionic("P", 1, 4, id="p", spell_levels=[1])],
        "defenses": {"p": {"mode": "imagination-swarm", "sacrifice": 1}},
        "attack": {"mode": "synaptic-overload"}},
    # a group where only the principal holds Barrier Mantra: a win still takes control
    # (of the ally that does not)
    "barrier-mantra-in-a-group": {
        "attacker": psionic("A", 2, 4), "defender": psionic("B", 1, 4),
        "allies": [psionic("P", 1, 4, id="p")], "defenses": {"p": {"mode": "imagination-swarm"}},
        "attack": {"mode": "personality-invasion"}, "defense": {"mode": "barrier-mantra"}},
    # Synaptic Overload with ties to the attacker (H-PP-TIE): a tie deals damage
    "overload-tie-to-attacker": {
        "attacker": psionic("A", 2, 4), "defender": psionic("B", 2, 4),
        "attack": {"mode": "synaptic-overload"}, "options": {"H-PP-TIE": "attacker"}},
    # an unaware defender rolls nothing
    "unaware": {
        "attacker": psionic("A", 2, 4), "defender": psionic("B", 3, 6, conditions=["asleep"]),
        "attack": {"mode": "synaptic-overload"}},
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_exact_odds_match_brute_force_enumeration(name: str) -> None:
    """RULES.md §3.2 step 4: "Each side rolls all or a declared part of its current pool
    and sums. The higher total wins. Ties go to the defender" — counted face by face."""
    request = CASES[name]
    counted = brute_force(request)
    plan = SYSTEM.plan(request)
    exact = exact_odds(SYSTEM.tables, plan)
    assert exact.attacker == counted.wins
    assert exact.defender == 1 - counted.wins
    assert exact.control == counted.controls
    assert dict(exact.damage.items()) == counted.damage
    assert exact.tie == counted.ties  # a failed Blank Mind save rolls no pools: no tie
    assert_odds_are_the_counts(SYSTEM.odds(request), counted, len(plan.saves))


def test_a_d4_blank_mind_save_is_passed_on_each_mind_and_never_above_the_die() -> None:
    """A GM's table may roll the Blank Mind save on a d4 (``save.sides``): a Psionic
    Wave on two minds in Blank Mind must pass both saves, and against a target of 12
    no d4 passes: the attack never gets through. Counted face by face."""
    tables = copy.deepcopy(dict(SYSTEM.tables))
    tables["save"]["sides"] = 4
    system = PowerPoolSystem(tables)
    two = {"attacker": psionic("A", 1, 4, blank_mind_save=3), "defender": psionic("B", 1, 4),
           "defenders": [psionic("C", 1, 4)], "defenses": {"c": {"mode": "blank-mind"}},
           "attack": {"mode": "psionic-wave"}, "defense": {"mode": "blank-mind"}}
    beyond = {**two, "attacker": psionic("A", 1, 4, blank_mind_save=12), "defenders": [],
              "defenses": {}, "attack": {"mode": "personality-invasion"}}
    for request, saves, saved in ((two, 2, Fraction(1, 4)), (beyond, 1, Fraction(0))):
        counted = brute_force(request, system)
        assert counted.saved == saved
        exact = exact_odds(system.tables, system.plan(request))
        assert (exact.save, exact.attacker, exact.tie) == (
            counted.saved, counted.wins, counted.ties)
        assert_odds_are_the_counts(system.odds(request), counted, saves)


def test_overload_odds_say_how_likely_any_damage_is_not_assuming_a_win() -> None:
    """API.md: dealt.chance is "the chance that any damage is dealt". A Synaptic
    Overload the attacker wins half the time deals damage about half the time, to the
    whole group; the odds said 100% (the principal's, given a win)."""
    out = SYSTEM.odds(CASES["overload-asleep-joined"])
    win = out["outcomes"]["attacker"]
    assert 0 < out["damage"]["dealt"]["chance"] == pytest.approx(win)
    assert out["damage"]["distribution"][0][0] == 0


def test_damage_is_a_zero_distribution_for_other_modes() -> None:
    out = SYSTEM.odds(CASES["upgrade-mental-stab"])
    assert out["damage"]["distribution"] == [[0, 1.0]] and out["damage"]["mean"] == 0


@pytest.mark.parametrize("sides,count", [(4, 0), (4, 1), (6, 3), (20, 2), (8, 7), (12, 5)])
def test_fast_sum_of_dice_matches_repeated_addition(sides: int, count: int) -> None:
    """The big-integer fast path against engine.odds.Dist on small inputs."""
    fast = sum_of_dice(sides, count)
    slow = Dist.die(sides).repeat(count)
    assert fast.items() == slow.items() and fast.total == slow.total


def test_fast_convolution_matches_dist_add_with_negative_values() -> None:
    a = Dist.die(6).repeat(2).shift(3)
    b = Dist.die(4).add(Dist.die(8)).map(lambda v: -v)
    assert convolve(a, b).items() == a.add(b).items()


def test_fast_convolution_of_many_dice_holds_weights_above_either_total() -> None:
    """Each weight of a sum of two 20d6 can be far above 6 ** 20, either part's total:
    the bit fields are wide enough for the product's total, so none runs into the next."""
    twenty = sum_of_dice(6, 20)
    summed = convolve(twenty, twenty)
    assert max(summed.weights.values()) > twenty.total
    assert summed.items() == Dist.die(6).repeat(40).items()


def test_largest_legal_pools_have_exact_odds() -> None:
    """API.md limits: at most 100 dice in a pool; 100d20 against 100d20 (with an overload
    damage distribution) is computed exactly and adds up to one."""
    big = psionic("Big", 100, 20)
    request = {"attacker": big, "defender": {**big, "name": "Other"},
               "attack": {"mode": "synaptic-overload"}}
    exact = exact_odds(SYSTEM.tables, SYSTEM.plan(request))
    assert exact.attacker + exact.defender == 1
    # the contest is symmetric except for ties, which go to the defender
    assert exact.defender - exact.attacker == exact.tie
    assert sum(p for _, p in exact.damage.items()) == 1


def test_odds_refuse_what_a_resolution_refuses_of_choices_made_together() -> None:
    """exchange.odds checks a request as exchange.resolve does: a wave kept by a die each
    with too few dice, and a group over 100 dice, are refused, not settled as an
    encounter's secret choices are."""
    wave = {"attacker": psionic("A", 1, 6), "defender": psionic("B", 1, 4),
            "defenders": [psionic("C", 1, 4)], "attack": {"mode": "psionic-wave",
                                                          "keep_by": "die"}}
    with pytest.raises(RulesViolation) as err:
        SYSTEM.odds(wave)
    assert err.value.rule == "no-die-to-dedicate"
    with pytest.raises(LimitExceeded):
        SYSTEM.odds({**wave, "attack": {"mode": "psionic-wave"},
                     "defender": psionic("B", 60, 4), "defenders": [psionic("C", 60, 4)]})
