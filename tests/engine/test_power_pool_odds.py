"""power-pool exact odds against brute force (RULES.md §3.2, seed 001_e8815498f41c4da8).

The oracle enumerates every face of every die the exchange rolls (Blank Mind saves
included), resolves each combination with those physical dice through the real
exchange, and counts: the exact odds must equal the counts, to the last fraction.
"""

from __future__ import annotations

from collections import Counter
from fractions import Fraction
from itertools import product
from typing import Any

import pytest

from engine.dice import SuppliedDice
from engine.odds import Dist
from engine.power_pool import SYSTEM
from engine.power_pool.exchange import resolve_plan
from engine.power_pool.probability import convolve, exact_odds, negate, sum_of_dice

from .test_power_pool_helpers import mundane, psionic


def brute_force(request: dict[str, Any]
                ) -> tuple[Fraction, Fraction, dict[int, Fraction], Fraction]:
    """P(attacker wins), P(control), the distribution of the exchange's ``damage`` (the
    whole group's, 0 when the attacker does not win) and P(tie), by counting."""
    plan = SYSTEM.plan(request)
    saves = len(plan.saves)
    # the layout of pool dice, read from one resolution whose saves all pass
    probe = resolve_plan(SYSTEM.tables, plan, SuppliedDice(
        {"save": [20] * saves, "attack": [1] * 100, "defense": [1] * 100}))
    layout = [(r.purpose, r.sides) for r in probe.rolls if r.purpose != "save"]
    save_sides = SYSTEM.tables["save"]["sides"]
    wins = controls = ties = total = 0
    damage: Counter[int] = Counter()
    for save_values in product(range(1, save_sides + 1), repeat=saves):
        for faces in product(*(range(1, s + 1) for _, s in layout)):
            supplied: dict[str, list[int]] = {"save": list(save_values), "attack": [],
                                              "defense": []}
            for (purpose, _), v in zip(layout, faces, strict=True):
                supplied[purpose].append(v)
            out = resolve_plan(SYSTEM.tables, plan, SuppliedDice(supplied)).to_json()
            total += 1
            ties += bool(out["tie"])
            damage[out["damage"]] += 1
            if out["winner"] == "attacker":
                wins += 1
                controls += out["controlled"]
    dealt = {v: Fraction(n, total) for v, n in damage.items()}
    return Fraction(wins, total), Fraction(controls, total), dealt, Fraction(ties, total)


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
    wins, controls, damage, ties = brute_force(request)
    exact = exact_odds(SYSTEM.tables, SYSTEM.plan(request))
    assert exact.attacker == wins
    assert exact.defender == 1 - wins
    assert exact.control == controls
    assert dict(exact.damage.items()) == damage
    assert exact.tie == ties  # a failed Blank Mind save rolls no pools: no tie
    out = SYSTEM.odds(request)
    assert out["outcomes"]["attacker"] == pytest.approx(float(wins))
    assert out["damage"]["truncated_mass"] == 0


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
    b = negate(Dist.die(4).add(Dist.die(8)))
    assert convolve(a, b).items() == a.add(b).items()


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
