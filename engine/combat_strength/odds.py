"""Exact odds of one combat-strength attack, from the same ``Plan`` resolve uses."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from ..odds import Dist
from .exchange import Plan
from .rules import Tables

Combatant = Mapping[str, Any]


@lru_cache(maxsize=64)
def bonus_damage(count: int, sides: int, cap: int) -> Dist:
    """The sum of ``count`` penetrating d``sides`` with ``cap`` follow-ups each."""
    return Dist.penetrating_dice(count, sides, cap)


@dataclass(frozen=True)
class ExactOdds:
    """Exact chances of one attack (Fractions; ``to_json`` makes floats)."""

    damage: Dist
    crushed: Fraction
    defense_zero: Fraction
    conditions: dict[str, Fraction]
    save: Fraction | None
    outcome: dict[str, Fraction]
    percent_mode: bool

    def to_json(self) -> dict[str, Any]:
        outcomes = {str(v): p for v, p in self.damage.float_items()}
        if self.percent_mode:
            outcomes["crushed"] = float(self.crushed)
        return {
            "outcomes": outcomes,
            "damage": self.damage.to_json(),
            "crushed": float(self.crushed),
            "defense_zero": float(self.defense_zero),
            "conditions": {k: float(v) for k, v in self.conditions.items()},
            "save": None if self.save is None else float(self.save),
            "outcome": {k: float(v) for k, v in self.outcome.items() if v},
        }


def _d100(at_most: int) -> Fraction:
    """P(d100 ≤ at_most)."""
    return Fraction(min(max(at_most, 0), 100), 100)


def exact_odds(t: Tables, p: Plan, defender: Combatant, cap: int) -> ExactOdds:
    """The chances of plan ``p`` against ``defender`` with penetration ``cap``."""
    ds = int(defender["defense_strength"])
    damage = bonus_damage(p.bonus_dice, t.bonus_sides, cap).shift(p.points)
    # 1 while a penetration chain stops at H-CS-PEN-CAP (nothing truncated); kept general
    kept = 1 - damage.truncated_mass
    # a crush (combat) or the percent letter (defenseless) on d100 ≤ percent
    crush = _d100(p.percent) if p.percent is not None and p.percent > 0 else Fraction(0)
    conditions: dict[str, Fraction] = {}
    save: Fraction | None = None
    outcome: dict[str, Fraction] = {}
    if p.table == "wave":
        assert p.save_target is not None and p.wave_band is not None
        save = Fraction(max(0, min(20, 21 - p.save_target)), 20)
        low = 0
        for top, condition in t.wave_effects(p.wave_band):
            share = Fraction(max(0, top - low), 100)
            conditions[condition] = conditions.get(condition, Fraction(0)) + (1 - save) * share
            low = max(low, top)
        outcome = {"saved": save, "condition": 1 - save}
    elif p.letter is not None:
        conditions[t.letters[p.letter].condition] = Fraction(1)
        outcome = {"condition": Fraction(1)}
    elif p.percent_letter is not None:
        conditions[t.letters[p.percent_letter].condition] = crush
        outcome = {"crushed": crush, "no-effect": 1 - crush}
    else:
        hit = damage.p(lambda v: v > 0)
        outcome = {"crushed": crush * kept, "damage": (1 - crush) * hit,
                   "no-effect": (1 - crush) * (kept - hit)}
    # P(defense strength is 0 afterwards): either the damage reaches it or a crush
    if ds <= 0:
        zero = Fraction(1)  # strengths never grow within an exchange
    elif p.table == "wave" or p.letter is not None:
        zero = Fraction(0)
    else:
        reach = damage.p(lambda v: v >= ds)
        zero = crush * kept + (1 - crush) * reach
    return ExactOdds(damage, crush, zero, conditions, save, outcome,
                     p.percent is not None)
