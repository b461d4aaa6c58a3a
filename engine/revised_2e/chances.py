"""Exact odds of one revised-2e attack (``exchange.odds``).

Probabilities are ``Fraction``s throughout; floats appear only in ``to_json``. A MAC
still to be rolled by the Quick MAC rules is a mixture over every MAC it can take.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from engine.odds import Dist

from . import house
from .exchange import (
    attack_modifier,
    declared_cost,
    is_critical,
    is_hit,
    is_psionic,
    needed_roll,
    opens_without_save,
)
from .rules import quick_mac_modifier, quick_mac_range
from .tables import Tables

JSON = dict[str, Any]


@dataclass(frozen=True)
class AttackChances:
    """Exact chances of one attack against a defender with a known MAC."""

    hit: Fraction
    critical: Fraction
    mind_opened: Fraction
    save_rolled: Fraction
    damage: Mapping[int, Fraction]
    psp_spent: Mapping[int, Fraction]
    effect: Fraction
    hp_damage: Mapping[int, Fraction]


def save_success(target: int, sides: int) -> Fraction:
    """P(d``sides`` ≥ target)."""
    return Fraction(max(0, min(sides, sides + 1 - target)), sides)


def _mix(into: dict[int, Fraction], weight: Fraction, dist: Dist | Mapping[int, Fraction]
         ) -> None:
    items = dist.items() if isinstance(dist, Dist) else list(dist.items())
    for v, p in items:
        into[v] = into.get(v, Fraction(0)) + weight * p


def attack_chances(tables: Tables, options: Mapping[str, Any], attacker: Mapping[str, Any],
                   defender: Mapping[str, Any], request: Mapping[str, Any],
                   defense: str | None, defender_psp: int, target_open: bool
                   ) -> AttackChances:
    """Chances for a defender whose MAC is fixed, holding ``defender_psp`` PSPs when the
    attack is rolled (after paying for its defense)."""
    mode = request["mode"]
    m = int(request.get("multiplier", 1))
    band = request.get("range", "short")
    cost = declared_cost(tables, request)
    sides = int(tables.attack_roll["sides"])
    needed = needed_roll(tables, attacker, defender, band)
    modifier = attack_modifier(tables, mode, defense, target_open)
    one = Fraction(1, sides)
    psionic_target = is_psionic(defender)
    die_sides, bonus = tables.damage_die(mode)
    damage_on_hit = Dist.die(die_sides).shift(bonus).repeat(m) if psionic_target \
        else Dist.constant(0)
    p_zero = damage_on_hit.p(lambda v: v >= defender_psp)
    p_no_save = damage_on_hit.p(
        lambda v: v < defender_psp and opens_without_save(tables, v, defender["psp_max"]))
    p_save_needed = damage_on_hit.p(
        lambda v: v < defender_psp and not opens_without_save(tables, v, defender["psp_max"]))
    p_fail = 1 - save_success(defender["save_paralyzation"], tables.save_die)
    hit = critical = opened = save_rolled = Fraction(0)
    for natural in range(1, sides + 1):
        modified = natural + modifier
        if not is_hit(tables, natural, modified, needed):
            continue
        hit += one
        crit = is_critical(tables, True, natural, modified, needed, options[house.CRIT_MODS])
        if crit:
            critical += one
        if target_open:
            continue
        if not psionic_target:
            opened += one
        elif crit:
            opened += one * (p_zero + p_no_save + p_save_needed * p_fail)
            save_rolled += one * p_save_needed
        else:
            opened += one * p_zero
    miss = 1 - hit
    damage: dict[int, Fraction] = {}
    _mix(damage, hit, damage_on_hit)
    _mix(damage, miss, {0: Fraction(1)})
    spent: dict[int, Fraction] = {}
    _mix(spent, hit, {cost: Fraction(1)})
    _mix(spent, miss, {tables.failed_cost(mode, cost): Fraction(1)})
    effect = tables.effect(mode) if target_open else None
    hp: dict[int, Fraction] = {}
    p_effect = Fraction(0)
    if effect is not None:
        p_effect = hit
        if effect["type"] == "hp-damage":
            count = m if effect["per_step"] else 1
            _mix(hp, hit, Dist.die(int(effect["sides"])).repeat(count))
            _mix(hp, miss, {0: Fraction(1)})
    return AttackChances(hit, critical, opened, save_rolled, damage, spent, p_effect, hp)


def mac_distribution(tables: Tables, defender: Mapping[str, Any], options: Mapping[str, Any]
                     ) -> dict[int, Fraction]:
    """The defender's MAC: certain when known, else every Quick MAC with its chance."""
    if defender.get("mac") is not None:
        return {int(defender["mac"]): Fraction(1)}
    quick = defender["quick_mac"]
    low, high = quick_mac_range(tables, quick["intelligence"])
    bases = range(low, high + 1) if options[house.QUICKMAC_PICK] else range(high, high + 1)
    die = int(tables.raw["quick_mac"]["modifier_die"])
    out: dict[int, Fraction] = {}
    for base in bases:
        for roll in range(1, die + 1):
            mac = tables.clamp_mac(base + quick_mac_modifier(tables, quick["psionic"], roll))
            out[mac] = out.get(mac, Fraction(0)) + Fraction(1, len(bases) * die)
    return out


def _dist_json(probs: Mapping[int, Fraction]) -> JSON:
    return Dist.from_probabilities(dict(probs)).to_json()


def exact(tables: Tables, options: Mapping[str, Any], attacker: Mapping[str, Any],
          defender: Mapping[str, Any], request: Mapping[str, Any], defense: str | None,
          defense_cost: int) -> dict[str, Any]:
    """Every chance of the attack as exact ``Fraction``s: hit, critical, mind_opened,
    save_rolled, effect, and distributions {value: p} of damage, psp_spent, hp_damage
    and needed (several values only while a Quick MAC is still to be rolled)."""
    defender_psp = max(0, defender["psp"] - defense_cost)
    # Paying for the defense can empty the pool, and a mind with 0 PSPs is open.
    target_open = defender["mind"]["state"] == "open" or (
        is_psionic(defender) and defense_cost > 0 and defender_psp == 0)
    out: dict[str, Any] = {
        "hit": Fraction(0), "critical": Fraction(0), "mind_opened": Fraction(0),
        "save_rolled": Fraction(0), "effect": Fraction(0), "damage": {}, "psp_spent": {},
        "hp_damage": {}, "needed": {}, "target_open": target_open}
    for mac, weight in sorted(mac_distribution(tables, defender, options).items()):
        d = dict(defender)
        d["mac"] = mac
        ch = attack_chances(tables, options, attacker, d, request, defense, defender_psp,
                            target_open)
        for key in ("hit", "critical", "mind_opened", "save_rolled", "effect"):
            out[key] += weight * getattr(ch, key)
        _mix(out["damage"], weight, ch.damage)
        _mix(out["psp_spent"], weight, ch.psp_spent)
        _mix(out["hp_damage"], weight, ch.hp_damage)
        _mix(out["needed"], weight,
             {needed_roll(tables, attacker, d, request.get("range", "short")): Fraction(1)})
    return out


def odds_json(tables: Tables, options: Mapping[str, Any], attacker: Mapping[str, Any],
              defender: Mapping[str, Any], request: Mapping[str, Any], defense: str | None,
              defense_cost: int) -> JSON:
    """``exchange.odds`` for revised-2e: outcomes {hit, miss}, critical, mind_opened, the
    damage distribution, PSPs spent, the defense's cost and the open-mind effect."""
    ex = exact(tables, options, attacker, defender, request, defense, defense_cost)
    needed = ex["needed"]
    effect_mode = tables.effect(request["mode"]) if ex["target_open"] else None
    return {
        "outcomes": {"hit": float(ex["hit"]), "miss": float(1 - ex["hit"])},
        "critical": float(ex["critical"]),
        "mind_opened": float(ex["mind_opened"]),
        "save_rolled": float(ex["save_rolled"]),
        "needed": next(iter(needed)) if len(needed) == 1 else None,
        "needed_distribution": [[v, float(p)] for v, p in sorted(needed.items())],
        "modifier": attack_modifier(tables, request["mode"], defense, ex["target_open"]),
        "damage": _dist_json(ex["damage"]),
        "psp_spent": _dist_json(ex["psp_spent"]),
        "defense_psp": defense_cost,
        "target_open": ex["target_open"],
        "effect": None if effect_mode is None else {
            "type": effect_mode["type"], "p": float(ex["effect"]),
            **({"hp_damage": _dist_json(ex["hp_damage"])} if ex["hp_damage"] else {})},
    }
