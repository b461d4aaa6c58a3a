"""Exact odds of a power-pool exchange.

Sums of many dice are the costly part (100d20 against 100d20 is the largest legal
contest). ``sum_of_dice`` and ``convolve`` multiply the distributions as big
integers (each weight in its own bit field, so one integer product does the whole
convolution); tests check both against ``engine.odds.Dist`` on small inputs.
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from ..odds import Dist
from .exchange import Plan


def _pack(weights: Mapping[int, int], low: int, high: int, width: int) -> int:
    """The weights as one integer, ``width`` bytes per value from ``low`` to ``high``."""
    buf = bytearray((high - low + 1) * width)
    for v, w in weights.items():
        if w:
            buf[(v - low) * width:(v - low + 1) * width] = w.to_bytes(width, "little")
    return int.from_bytes(bytes(buf), "little")


def _unpack(number: int, low: int, count: int, width: int) -> dict[int, int]:
    raw = number.to_bytes(count * width, "little")
    out: dict[int, int] = {}
    for k in range(count):
        w = int.from_bytes(raw[k * width:(k + 1) * width], "little")
        if w:
            out[low + k] = w
    return out


@lru_cache(maxsize=256)
def sum_of_dice(sides: int, count: int) -> Dist:
    """The distribution of the sum of ``count`` d``sides`` (``count`` ≥ 0)."""
    if count == 0:
        return Dist.constant(0)
    total = sides ** count
    width = (total.bit_length() + 8) // 8  # every weight is at most total
    one = _pack(dict.fromkeys(range(sides), 1), 0, sides - 1, width)
    weights = _unpack(one ** count, count, count * (sides - 1) + 1, width)
    return Dist(weights, total)


def convolve(a: Dist, b: Dist) -> Dist:
    """The sum of two independent values (``Dist.add`` for untruncated dists, fast)."""
    if not a.weights or not b.weights:
        return a.add(b)
    a_lo, a_hi = min(a.weights), max(a.weights)
    b_lo, b_hi = min(b.weights), max(b.weights)
    width = ((a.total * b.total).bit_length() + 8) // 8
    product = _pack(a.weights, a_lo, a_hi, width) * _pack(b.weights, b_lo, b_hi, width)
    count = (a_hi - a_lo) + (b_hi - b_lo) + 1
    return Dist(_unpack(product, a_lo + b_lo, count, width), a.total * b.total)


@dataclass(frozen=True)
class ExactOdds:
    """Exact chances of one exchange (``Fraction``s)."""

    attacker: Fraction
    defender: Fraction
    control: Fraction
    tie: Fraction
    save: Fraction | None  # chance to pass every Blank Mind save; None if none is needed
    damage: Dist  # synaptic overload: the group's own dice when the attacker wins, else 0
    attack: Dist
    defense: Dist


def exact_odds(tables: Mapping[str, Any], plan: Plan) -> ExactOdds:
    """Exact winner, control and damage chances for a checked exchange ``plan``."""
    attack = sum_of_dice(plan.attack_sides, plan.attack_dice)
    parts = [sum_of_dice(s.sides, s.dice).shift(s.bonus) for s in plan.members]
    defense = parts[0]
    for part in parts[1:]:
        defense = convolve(defense, part)
    greater, equal, _less = attack.compare(defense)
    rolls_win = greater + (equal if plan.tie_to == "attacker" else 0)
    save_sides = int(tables["save"]["sides"])
    pass_one = Fraction(max(0, min(save_sides, save_sides - plan.save_target + 1)), save_sides)
    save = pass_one ** len(plan.saves) if plan.saves else None
    win = rolls_win * (save if save is not None else 1)
    controllable = any(
        "instead_of_control" not in tables["modes"].get(s.mode or "", {}) for s in plan.members)
    damage = Dist.constant(0)
    if tables["modes"][plan.mode].get("damage") == "own-defense-dice" and rolls_win:
        damage = _overload_damage(attack, plan, save)
    # A failed Blank Mind save ends the exchange before any pool is rolled: no tie then.
    tie = equal * (save if save is not None else 1)
    return ExactOdds(attacker=win, defender=1 - win, control=win if controllable else Fraction(0),
                     tie=tie, save=save, damage=damage, attack=attack, defense=defense)


def _overload_damage(attack: Dist, plan: Plan, save: Fraction | None) -> Dist:
    """The damage Synaptic Overload deals, over every outcome, as ``resolve``'s ``damage``
    counts it: each member of the defending group takes the sum of its own defense dice,
    so the exchange deals the group's dice total D when the attacker wins (its total A
    beats D + the group's sacrifice bonus b: A > D + b, or ≥ with ties to the attacker)
    and any Blank Mind save passed; otherwise 0 (a loss, a failed save)."""
    group = Dist.constant(0)
    for member in plan.members:
        group = convolve(group, sum_of_dice(member.sides, member.dice))
    bonus = sum(member.bonus for member in plan.members)
    ordered = sorted(attack.weights.items())
    values = [v for v, _ in ordered]
    # above[i] = weight of attack totals >= values[i]
    above = [0] * (len(ordered) + 1)
    for i in range(len(ordered) - 1, -1, -1):
        above[i] = above[i + 1] + ordered[i][1]
    strict = plan.tie_to != "attacker"
    passes, out_of = (save.numerator, save.denominator) if save is not None else (1, 1)
    total = group.total * attack.total * out_of
    weights: dict[int, int] = {}
    for x, wx in group.weights.items():
        need = x + bonus
        i = bisect.bisect_right(values, need) if strict else bisect.bisect_left(values, need)
        if w := wx * above[i] * passes:
            weights[x] = w
    weights[0] = weights.get(0, 0) + total - sum(weights.values())
    return Dist(weights, total)


def odds_json(result: ExactOdds) -> dict[str, Any]:
    """The JSON of ``exchange.odds`` (floats only here)."""
    return {
        "outcomes": {"attacker": float(result.attacker), "defender": float(result.defender)},
        "control": float(result.control),
        "tie": float(result.tie),
        "blank_mind_save": None if result.save is None else float(result.save),
        "damage": result.damage.to_json(),
        "attack_total": {"mean": float(result.attack.mean())},
        "defense_total": {"mean": float(result.defense.mean())},
    }
