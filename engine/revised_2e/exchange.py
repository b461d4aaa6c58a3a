"""One psionic attack of revised-2e (RULES.md §1.4–1.5): checks, the roll, costs,
damage, critical mental hits, opening the mind and attacks on an open mind.

Everything here works on full (normalised) combatants and returns new ones; the
inputs are never changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.dice import DiceSource
from engine.errors import RulesViolation
from engine.results import Event
from engine.system import is_down

from . import house
from .combatants import PSIONIC_KINDS, can_act, stopping_conditions
from .rules import add_condition, close_mind, editable, open_mind
from .tables import Tables

JSON = dict[str, Any]


def is_psionic(c: Mapping[str, Any]) -> bool:
    """Whether ``c`` has a psionic mind (a PSP pool)."""
    return c["kind"] in PSIONIC_KINDS


def declared_cost(tables: Tables, attack: Mapping[str, Any]) -> int:
    """PSPs declared for ``attack``: cost per step × multiplier (seed: declared before
    the roll)."""
    return tables.attack_cost(attack["mode"]) * int(attack.get("multiplier", 1))


def check_attack(tables: Tables, attacker: Mapping[str, Any], defender: Mapping[str, Any],
                 attack: Mapping[str, Any], stun_stops: bool = True) -> None:
    """Raise ``RulesViolation`` if the rules forbid ``attacker`` making ``attack`` on
    ``defender`` (§1.4 step 2 and the mode table); a stunned attacker may attack when
    ``stun_stops`` is false (H-2E-STUN off)."""
    name = attacker["name"]
    mode = attack["mode"]
    m = int(attack.get("multiplier", 1))
    band = attack.get("range", "short")
    if not is_psionic(attacker):
        raise RulesViolation("nonpsionic-cannot-attack",
                             f"{name} has no psionic mind and cannot make psionic attacks")
    if attacker["id"] == defender["id"]:
        raise RulesViolation("target-is-attacker", f"{name} cannot attack its own mind")
    stopped = stopping_conditions(attacker, stun_stops)
    if stopped:
        raise RulesViolation("attacker-cannot-act", f"{name} is {', '.join(stopped)}")
    if mode not in attacker["attacks"]:
        raise RulesViolation("attack-not-known", f"{name} does not know {mode}")
    if m > attacker["level"]:
        raise RulesViolation("multiplier-above-level",
                             f"multiplier {m} is above {name}'s level {attacker['level']}")
    ranges = tables.ranges(mode)
    if band not in ranges:
        raise RulesViolation("range-beyond-mode",
                             f"{mode} reaches only {', '.join(ranges)} range "
                             f"({max(ranges.values())} yards)")
    cost = declared_cost(tables, attack)
    if attacker["psp"] < cost:
        raise RulesViolation("not-enough-psp",
                             f"{name} declares {cost} PSPs of {mode} but holds {attacker['psp']}")


def check_defense(tables: Tables, defender: Mapping[str, Any], mode: str, paid: bool) -> None:
    """Raise ``RulesViolation`` if ``defender`` may not use defense ``mode`` (§1.2, §1.4)."""
    name = defender["name"]
    if not is_psionic(defender):
        raise RulesViolation("nonpsionic-cannot-defend",
                             f"{name} has no psionic mind and cannot raise {mode}")
    if mode not in defender["defenses"]:
        raise RulesViolation("defense-not-known", f"{name} does not know {mode}")
    if not paid:
        if not can_act(defender):
            raise RulesViolation("defender-cannot-act", f"{name} cannot raise a defense now")
        cost = tables.defense_cost(mode)
        if defender["psp"] < cost:
            raise RulesViolation("not-enough-psp-for-defense",
                                 f"{name} needs {cost} PSPs for {mode} but holds "
                                 f"{defender['psp']}")


def close_by_paying(c: JSON, cost: int) -> list[Event]:
    """``c`` pays ``cost`` PSPs and closes its mind (in place; §1.5, the cost from
    ``may_close_by_paying``)."""
    return [*pay(c, cost, "close"), close_mind(c, "paid")]


def pay(c: JSON, amount: int, reason: str) -> list[Event]:
    """``c`` pays ``amount`` PSPs (in place, never below 0); a psionic mind left at 0
    PSPs opens (errata: 'a mind with 0 PSPs is open')."""
    c["psp"] = max(0, c["psp"] - amount)
    events = [Event("psp-spent", c["id"], {"amount": amount, "for": reason})]
    if c["psp"] == 0 and amount > 0 and c["mind"]["state"] == "closed":
        events.append(open_mind(c, "zero-psp", forced=False))
    return events


def raise_defense(tables: Tables, c: JSON, mode: str, paid: bool) -> list[Event]:
    """Raise defense ``mode`` (in place): pay for it unless already ``paid`` this round,
    and remember it as the last defense used."""
    c["mind"]["last_defense"] = mode
    events = [Event("defense-raised", c["id"], {"mode": mode, "paid_before": paid})]
    if not paid:
        events += pay(c, tables.defense_cost(mode), "defense")
    return events


@dataclass(frozen=True)
class AttackOutcome:
    """What one attack did: the result fields, the new combatants and the events."""

    attacker: JSON
    defender: JSON
    fields: JSON
    events: tuple[Event, ...] = field(default_factory=tuple)


def needed_roll(tables: Tables, attacker: Mapping[str, Any], defender: Mapping[str, Any],
                band: str) -> int:
    """MTHAC0 − Int bonus − effective MAC; the MAC is improved by 2 at medium and 5 at
    long range (§1.4 step 3)."""
    effective_mac = int(defender["mac"]) - tables.range_improvement(band)
    return int(attacker["mthac0"]) - tables.int_bonus(attacker["int"]) - effective_mac


def attack_modifier(tables: Tables, mode: str, defense: str | None, target_open: bool) -> int:
    """Table 76 modifier, +2 against a mind already open (§1.4 step 4)."""
    bonus = int(tables.attack_roll["open_mind_bonus"]) if target_open else 0
    return tables.modifier(mode, defense) + bonus


def is_hit(tables: Tables, natural: int, modified: int, needed: int) -> bool:
    """Natural 1 misses, natural 20 hits, otherwise modified ≥ needed."""
    roll = tables.attack_roll
    if natural == int(roll["always_miss"]):
        return False
    return natural == int(roll["always_hit"]) or modified >= needed


def is_critical(tables: Tables, hit: bool, natural: int, modified: int, needed: int,
                modified_counts: bool) -> bool:
    """Natural 18–20 and the roll beats the needed number by 5 or more (seed); the roll
    is the modified one under H-2E-CRIT-MODS."""
    roll = modified if modified_counts else natural
    return hit and natural in tables.critical_naturals and \
        roll - needed >= tables.critical_margin


def opens_without_save(tables: Tables, damage: int, psp_max: int) -> bool:
    """Damage of 25% or more of the PSP maximum opens the mind with no save (seed)."""
    share = tables.open_without_save
    return damage * share.denominator >= psp_max * share.numerator


def attack(tables: Tables, options: Mapping[str, Any], attacker: Mapping[str, Any],
           defender: Mapping[str, Any], request: Mapping[str, Any], defense: str | None,
           dice: DiceSource) -> AttackOutcome:
    """Resolve one already-checked attack. Dice in rolling order: ``attack`` (d20),
    ``damage`` (m dice, only against a psionic mind), ``save`` (d20, only on a critical
    hit that neither opens outright nor empties the PSPs), then the open-mind effect
    dice (``effect-duration``, ``lost-power`` or ``hp-damage``)."""
    a = editable(attacker)
    d = editable(defender)
    mode = request["mode"]
    m = int(request.get("multiplier", 1))
    band = request.get("range", "short")
    cost = declared_cost(tables, request)
    events: list[Event] = []
    target_open = d["mind"]["state"] == "open"

    needed = needed_roll(tables, a, d, band)
    modifier = attack_modifier(tables, mode, defense, target_open)
    natural = dice.roll("attack", int(tables.attack_roll["sides"]), a["id"])
    modified = natural + modifier
    hit = is_hit(tables, natural, modified, needed)
    critical = is_critical(tables, hit, natural, modified, needed, options[house.CRIT_MODS])

    spent = cost if hit else tables.failed_cost(mode, cost)
    events += pay(a, spent, "attack")

    damage = psp_lost = 0
    save: JSON | None = None
    opened_by: str | None = None
    effect: JSON | None = None
    if hit and is_psionic(d):
        sides, bonus = tables.damage_die(mode)
        damage = sum(dice.roll_many("damage", sides, m, a["id"])) + bonus * m
        psp_lost = min(damage, d["psp"])
        d["psp"] -= psp_lost
        events.append(Event("damage", d["id"], {"amount": damage, "psp_lost": psp_lost}))
    if critical:
        events.append(Event("critical-hit", d["id"], {"by": a["id"]}))
    if hit and not target_open:
        if not is_psionic(d):
            opened_by = "attack"
        elif d["psp"] == 0:
            opened_by = "zero-psp"
        elif critical:
            if opens_without_save(tables, damage, d["psp_max"]):
                opened_by = "critical"
            else:
                roll = dice.roll("save", tables.save_die, d["id"])
                success = roll >= d["save_paralyzation"]
                save = {"target": d["save_paralyzation"], "roll": roll, "success": success}
                events.append(Event("save", d["id"], dict(save)))
                if not success:
                    opened_by = "critical"
        if opened_by is not None:
            events.append(open_mind(d, opened_by, forced=True))
    elif hit and target_open:
        effect, effect_events = _open_mind_effect(tables, d, mode, m, a["id"], dice)
        events += effect_events

    fields: JSON = {
        "hit": hit, "critical": critical, "needed": needed,
        "roll": {"natural": natural, "modifier": modifier, "modified": modified},
        "psp_spent": spent, "damage": damage, "psp_lost": psp_lost,
        "mind_opened": opened_by is not None, "opened_by": opened_by, "save": save,
        "effect": effect, "mode": mode, "multiplier": m, "range": band, "defense": defense,
        "declared_psp": cost, "target_was_open": target_open,
    }
    return AttackOutcome(a, d, fields, tuple(events))


def _open_mind_effect(tables: Tables, d: JSON, mode: str, m: int, by: str,
                      dice: DiceSource) -> tuple[JSON | None, list[Event]]:
    """The effect of a hit on a mind already open (§1.5, Dark Sun revised). Durations
    count from the next round; hit-point damage lowers ``hp`` when the combatant has it."""
    effect = tables.effect(mode)
    if effect is None:
        return None, []
    d["mind"]["used_power"] = True
    count = m if effect["per_step"] else 1
    sides = int(effect["sides"])
    kind = effect["type"]
    if kind in ("dazed", "confused"):
        rounds = sum(dice.roll_many("effect-duration", sides, count, by))
        add_condition(d, kind, rounds)
        return {"type": kind, "rounds": rounds}, [Event(kind, d["id"], {"rounds": rounds})]
    if kind == "lost-power":
        days = sum(dice.roll_many("lost-power", sides, count, by))
        d["lost_powers"].append({"days": days})
        return {"type": kind, "days": days}, [Event(kind, d["id"], {"days": days})]
    amount = sum(dice.roll_many("hp-damage", sides, count, by))
    events = [Event(kind, d["id"], {"amount": amount})]
    if "hp" in d:
        was_down = is_down(d)
        d["hp"] -= amount
        if is_down(d) and not was_down:
            events.append(Event("down", d["id"], {"hp": d["hp"]}))
    return {"type": kind, "amount": amount}, events
