"""One psionic attack: legality, the table lookup (a ``Plan``), the dice, the effects.

The lookup is split from the dice so that ``resolve`` and the exact odds read the
tables the same way: ``plan`` decides everything the dice do not, ``execute``
rolls, and ``apply_effects`` turns effects into new combatant states. Effects are
plain subtractions clamped at 0, so effects of simultaneous attacks can be applied
in any order with the same result (seed step iii: everything in a segment is
looked up from the states at its start).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..dice import DiceSource
from ..errors import DiceNeeded, RulesViolation, json_text
from ..results import Event
from .combatant import combat_strength, dead, incapacitated
from .rules import (
    H_DEFENSELESS,
    H_IMPLOSION,
    H_PEN_CAP,
    H_TABLE,
    IMPLOSION_MODE,
    SHIELD_MODE,
    TABLE_FULL_MATRIX,
    WAVE_MODE,
    Tables,
)

Combatant = Mapping[str, Any]


# -- legality -------------------------------------------------------------------------
def check_attack(t: Tables, attacker: Combatant, defender: Combatant, mode: str,
                 stance: str, target_at: str) -> None:
    """Refuse an attack the rules forbid (RulesViolation naming the rule); ``target_at``
    is where the request names the defender, for a refusal that is about it."""
    check_attacker(t, attacker, defender, mode)
    # after the attacker's own means: a refusal the attacker alone causes is told as such
    check_target(t, attacker, defender, mode, stance, target_at)


def check_attacker(t: Tables, attacker: Combatant, defender: Combatant, mode: str) -> None:
    """Refuse an attack for the attacker's own sake: itself as its target, a condition
    that stops it, a mode it does not know or cannot pay for."""
    if attacker["id"] == defender["id"]:
        raise RulesViolation("target-is-self", "a combatant cannot attack its own mind")
    why = incapacitated(t, attacker)
    if why is not None:
        raise RulesViolation("attacker-incapacitated",
                             f"{t.condition_clause(attacker['name'], why)} and cannot attack")
    if mode not in attacker["attacks"]:
        raise RulesViolation("attack-mode-not-known",
                             f"{attacker['name']} does not know {t.attacks[mode].name}")
    cost = t.attacks[mode].cost
    if attacker["attack_strength"] < cost:
        raise RulesViolation(
            "attack-strength-too-low",
            f"{t.attacks[mode].name} costs {cost} attack strength; {attacker['name']} has "
            f"{attacker['attack_strength']} (RULES.md 2.3 step 3.ii)")


def check_target(t: Tables, attacker: Combatant, defender: Combatant, mode: str,
                 stance: str, target_at: str) -> None:
    """Refuse an attack for the target's sake: a dead mind, a non-psionic one struck by
    anything but a Psionic Wave from the wave stance, a psionic one struck from outside
    a trance (the stance is the attacker's, fixed for the round; whether the target is
    psionic or dead may change with its sheet)."""
    gone = dead(t, defender)
    if gone is not None:
        # a killed mind would otherwise go on collecting conditions ("is dead", then
        # "suffers a psionic wound")
        raise RulesViolation(
            "target-dead",
            f"{t.condition_clause(defender['name'], gone)}: there is no mind left to attack "
            f"({target_at})", combatant=str(defender["id"]))
    if not defender["psionic"]:
        if mode != WAVE_MODE:
            raise RulesViolation(
                "non-psionic-target-psionic-wave-only",
                f"{defender['name']} is not psionic: only {t.attacks[WAVE_MODE].name} affects "
                "a non-psionic mind (RULES.md 2.7)")
        if stance != "wave":
            raise RulesViolation(
                "wave-stance-for-non-psionic-targets",
                "Psionic Wave against non-psionic opponents is declared as the 'wave' stance "
                "at intent, outside the trance (seed step 2)")
    elif stance != "trance":
        raise RulesViolation(
            "attack-requires-trance",
            f"{attacker['name']} is in the {json_text(stance)} stance: only combatants in a "
            "psychic trance make attacks in the segments (seed steps 2 and 3.ii)")


def check_defense(t: Tables, defender: Combatant, defense: str | None, stance: str,
                  attack_mode: str | None) -> None:
    """Refuse a defense the defender does not know or may not use in its stance."""
    if defense is None:
        return
    if defense not in defender["defenses"]:
        raise RulesViolation("defense-mode-not-known",
                             f"{defender['name']} does not know {t.defenses[defense].name}")
    limited = stance != "trance" or attack_mode == IMPLOSION_MODE
    if limited and defense != SHIELD_MODE:
        why = (f"attacks with {t.attacks[IMPLOSION_MODE].name}" if stance == "trance"
               else f"is in the {json_text(stance)} stance, outside psionic combat")
        raise RulesViolation(
            "defense-shield-thoughts-only",
            f"{defender['name']} {why}, so may pick only {t.defenses[SHIELD_MODE].name} or no "
            "defense (seed step 3.i)")


# -- the lookup -------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    """Everything one attack does that does not depend on dice.

    ``table`` is ``combat``, ``defenseless`` or ``wave``. Damage is ``points`` plus
    ``bonus_dice`` penetrating dice; ``spill`` sends damage beyond defense strength
    into attack strength (defenseless numbers). ``percent`` is a d100 chance of
    ``percent_letter`` (defenseless) or of a crushed mind (combat).
    """

    mode: str
    range: str
    defense: str | None
    table: str
    band: str | None
    defender_band: str | None
    table_value: int | str | None
    bonus_dice: int
    points: int
    spill: bool
    percent: int | None
    percent_letter: str | None
    letter: str | None
    wave_band: str | None
    save_target: int | None
    cost: int


def bonus_dice(t: Tables, attacker: Combatant, range_: str) -> int:
    """+1 die per full ``per`` points of Combat Strength, at most ``max``, less the
    range penalty, never below 0 (seed step iii)."""
    full = min(combat_strength(attacker) // t.bonus_per, t.bonus_max)
    return max(0, full - t.range_penalty[range_])


def plan(t: Tables, opts: Mapping[str, Any], attacker: Combatant, defender: Combatant,
         mode: str, range_: str, defense: str | None) -> Plan:
    """Look the attack up in the right table (RULES.md 2.4-2.7)."""
    cost = t.attacks[mode].cost
    full_matrix = opts[H_TABLE] == TABLE_FULL_MATRIX
    dice = 0 if full_matrix else bonus_dice(t, attacker, range_)
    if not defender["psionic"]:
        band = t.wave_band(int(defender["int"]) + int(defender["wis"]))
        return Plan(mode, range_, None, "wave", None, None, None, 0, 0, False, None, None,
                    None, band, t.wave_save(band, range_), cost)
    if defense is None or defender["defense_strength"] <= 0:
        band = t.band(int(attacker["attack_strength"]))
        column, column_id = t.defender_band(int(defender["original_total"]))
        value = t.defenseless_value(band, mode, column)
        with_dice = 0 if opts[H_DEFENSELESS] else dice
        percent_letter = t.defenseless_percent_letter(mode)
        if isinstance(value, str):
            return Plan(mode, range_, None, "defenseless", band, column_id, value, 0, 0, False,
                        None, None, value, None, None, cost)
        if percent_letter is not None:
            return Plan(mode, range_, None, "defenseless", band, column_id, value, 0, 0, False,
                        value, percent_letter, None, None, None, cost)
        return Plan(mode, range_, None, "defenseless", band, column_id, value, with_dice, value,
                    True, None, None, None, None, None, cost)
    band = t.band(combat_strength(attacker)) if full_matrix else t.combat["default_band"]
    value = t.combat_value(band, mode, defense)
    if t.combat_percent(mode) and opts[H_IMPLOSION]:
        return Plan(mode, range_, defense, "combat", band, None, value, dice, 0, False,
                    value, None, None, None, None, cost)
    return Plan(mode, range_, defense, "combat", band, None, value, dice, value, False,
                None, None, None, None, None, cost)


# -- effects ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Effect:
    """What an attack does to one combatant; applied by ``apply_effects``."""

    damage: int = 0          # defense strength lost; the excess is lost (combat table)
    spill_damage: int = 0    # defense strength lost, the excess from attack strength
    attack_cost: int = 0     # attack strength spent on the mode
    crushed: bool = False    # defense strength to 0
    conditions: tuple[tuple[str, int | None], ...] = ()  # (condition, rounds or None)


def apply_effects(combatant: Combatant, effects: Iterable[Effect]) -> dict[str, Any]:
    """The combatant after ``effects``; strengths never go below 0."""
    out = dict(combatant)
    out["conditions"] = list(combatant["conditions"])
    out["condition_rounds"] = dict(combatant["condition_rounds"])
    effects = list(effects)
    ds = int(out["defense_strength"])
    atk = int(out["attack_strength"])
    ds = max(0, ds - sum(e.damage for e in effects))
    spill = sum(e.spill_damage for e in effects)
    atk = max(0, atk - max(0, spill - ds))
    ds = max(0, ds - spill)
    atk = max(0, atk - sum(e.attack_cost for e in effects))
    if any(e.crushed for e in effects):
        ds = 0
    out["defense_strength"] = ds
    out["attack_strength"] = atk
    for e in effects:
        for condition, rounds in e.conditions:
            _add_condition(out, condition, rounds)
    return out


def _add_condition(c: dict[str, Any], condition: str, rounds: int | None) -> None:
    had = condition in c["conditions"]
    if not had:
        c["conditions"].append(condition)
    timed = c["condition_rounds"]
    if rounds is None:
        # an open-ended condition outlasts any timed one
        timed.pop(condition, None)
    elif not had or condition in timed:
        timed[condition] = max(rounds, timed.get(condition, 0))


def tick(c: dict[str, Any], condition: str) -> Event | None:
    """One round of ``c``'s timed ``condition`` passes (in place); when none is left it
    ends: the ``condition-ended`` event, else ``None``."""
    timed = c["condition_rounds"]
    timed[condition] -= 1
    if timed[condition] > 0:
        return None
    del timed[condition]
    c["conditions"].remove(condition)
    return Event("condition-ended", str(c["id"]), {"condition": condition})


def strength_events(before: Mapping[str, Any], after: Mapping[str, Any],
                    cost: int = 0) -> list[Event]:
    """Events for what changed in one combatant's strengths: ``attack-strength-spent``
    (up to ``cost``, the modes it paid for), ``attack-strength-lost`` (the rest),
    ``defense-strength-lost`` and ``defenses-down``."""
    cid = str(before["id"])
    events = []
    drop = int(before["attack_strength"]) - int(after["attack_strength"])
    spent = min(cost, max(drop, 0))
    lost = int(before["defense_strength"]) - int(after["defense_strength"])
    if spent > 0:
        events.append(Event("attack-strength-spent", cid, {"amount": spent}))
    if drop - spent > 0:
        events.append(Event("attack-strength-lost", cid, {"amount": drop - spent}))
    if lost > 0:
        events.append(Event("defense-strength-lost", cid, {"amount": lost}))
    if int(before["defense_strength"]) > 0 and int(after["defense_strength"]) == 0:
        events.append(Event("defenses-down", cid, {}))
    return events


# -- the dice -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Outcome:
    """One executed attack: its effects, result fields, events and a summary."""

    outcome: str
    on_attacker: Effect
    on_defender: Effect
    fields: dict[str, Any]
    events: list[Event] = field(default_factory=list)
    summary: str = ""


def _roll_bonus(dice: DiceSource, t: Tables, count: int, by: str, cap: int
                ) -> tuple[int, bool, list[int]]:
    total = 0
    capped = False
    each = []
    for i in range(count):
        try:
            die = dice.roll_penetrating("damage", t.bonus_sides, by, cap=cap)
        except DiceNeeded as short:
            # a follow-up ran out: say how many dice the whole attack still needs
            raise DiceNeeded("damage", t.bonus_sides, short.needed + count - i - 1) from None
        total += die.total
        capped = capped or die.capped
        each.append(die.total)
    return total, capped, each


def execute(t: Tables, opts: Mapping[str, Any], p: Plan, attacker: Combatant,
            defender: Combatant, dice: DiceSource) -> Outcome:
    """Roll the dice of plan ``p`` and say what happens (states are not changed here)."""
    by = str(attacker["id"])
    cap = int(opts[H_PEN_CAP])
    events: list[Event] = []
    damage, capped, each = _roll_bonus(dice, t, p.bonus_dice, by, cap)
    damage += p.points
    crushed = False
    implosion_roll: int | None = None
    condition: dict[str, Any] | None = None
    save: dict[str, Any] | None = None
    letter = p.letter
    if p.percent is not None and p.percent > 0:
        implosion_roll = dice.roll("implosion", 100, by)
        if implosion_roll <= p.percent:
            if p.percent_letter is not None:
                letter = p.percent_letter
            crushed = True
    conditions: list[tuple[str, int | None]] = []
    if letter is not None:
        condition = _letter_condition(t, letter, dice, by)
        conditions.append((condition["id"], condition["rounds"]))
    if p.table == "wave":
        assert p.save_target is not None and p.wave_band is not None
        roll = dice.roll("save", 20, by=str(defender["id"]))
        save = {"target": p.save_target, "roll": roll, "success": roll >= p.save_target}
        events.append(Event("save", str(defender["id"]), save))
        if not save["success"]:
            effect_roll = dice.roll("wave-effect", 100, by)
            cid = t.wave_effect(p.wave_band, effect_roll)
            condition = {"id": cid, "letter": None, "roll": effect_roll, "duration": None,
                         "rounds": None, "text": t.conditions[cid]["text"]}
            conditions.append((cid, None))
    if capped:
        events.append(Event("penetration-capped", by, {"cap": cap}))
    on_defender = (Effect(spill_damage=damage, crushed=crushed, conditions=tuple(conditions))
                   if p.spill else
                   Effect(damage=damage, crushed=crushed, conditions=tuple(conditions)))
    on_attacker = Effect(attack_cost=p.cost)
    if crushed:
        outcome = "crushed"
    elif condition is not None:
        outcome = "condition"
    elif save is not None:
        outcome = "saved"
    elif damage > 0:
        outcome = "damage"
    else:
        outcome = "no-effect"
    fields: dict[str, Any] = {
        "table": p.table,
        "band": p.band,
        "defender_band": p.defender_band,
        "table_value": p.table_value,
        "mode": p.mode,
        "defense_mode": p.defense,
        "range": p.range,
        "bonus_dice": p.bonus_dice,
        "bonus_rolls": each,
        "damage": damage,
        "attack_cost": p.cost,
        "capped": capped,
        "crush_chance": p.percent,
        "implosion_roll": implosion_roll,
        "crushed": crushed,
        "condition": condition,
        "save": save,
    }
    if condition is not None:
        events.append(Event("condition", str(defender["id"]), condition))
    if crushed:
        events.append(Event("mind-crushed", str(defender["id"]),
                            {"chance": p.percent, "roll": implosion_roll}))
    return Outcome(outcome, on_attacker, on_defender, fields, events)


def _letter_condition(t: Tables, letter: str, dice: DiceSource, by: str) -> dict[str, Any]:
    reading = t.letters[letter]
    duration: dict[str, Any] | None = None
    rounds: int | None = None
    if reading.duration is not None:
        d = reading.duration
        left = dice.available("condition-duration")
        if left is not None and left < d.count:
            raise DiceNeeded("condition-duration", d.sides, d.count - left)
        amount = sum(dice.roll_many("condition-duration", d.sides, d.count, by))
        duration = {"amount": amount, "unit": d.unit}
        per = t.unit_rounds(d.unit)
        rounds = None if per is None else amount * per
    return {"id": reading.condition, "letter": letter, "roll": None, "duration": duration,
            "rounds": rounds, "text": t.conditions[reading.condition]["text"]}
