"""Plain-language summaries of combat-strength attacks and steps, for the table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .exchange import Outcome, Plan
from .rules import Tables

Combatant = Mapping[str, Any]


def _dice_text(t: Tables, plan: Plan, fields: Mapping[str, Any]) -> str:
    rolls = fields["bonus_rolls"]
    if not rolls:
        return ""
    shown = " + ".join(str(r) for r in rolls)
    return f"{plan.bonus_dice}d{t.bonus_sides} ({shown})"


def attack_summary(t: Tables, plan: Plan, out: Outcome, attacker: Combatant,
                   defender: Combatant, attacker_after: Combatant,
                   defender_after: Combatant) -> str:
    """One paragraph: who attacked whom with what, what the table and dice said, and
    where both strengths stand afterwards."""
    f = out.fields
    a, d = attacker["name"], defender["name"]
    mode = t.attacks[plan.mode].name
    where = "" if plan.range == "short" else f" at {plan.range} range"
    parts = [f"{a} attacks {d} with {mode}{where}"]
    dice = _dice_text(t, plan, f)
    if plan.table == "wave":
        save = f["save"]
        verdict = "and resists" if save["success"] else "and fails"
        parts.append(f"; {d} (not psionic) saves at {save['target']}+ on d20, rolls "
                     f"{save['roll']} {verdict}")
        if f["condition"] is not None:
            parts.append(f": {t.condition_clause(d, f['condition']['id'])} "
                         f"(d100 {f['condition']['roll']})")
    elif plan.table == "defenseless":
        parts.append(f"; {d} is defenseless (defenseless table, attacker band {plan.band}, "
                     f"defender band {plan.defender_band})")
        if plan.percent is not None:
            roll = f["implosion_roll"]
            shown = "no roll" if roll is None else f"d100 {roll}"
            parts.append(f": {plan.percent}% chance, {shown}")
        elif isinstance(plan.table_value, int):
            sum_text = f"{plan.table_value} + {dice} = " if dice else ""
            parts.append(f": {sum_text}{f['damage']} points")
        if f["condition"] is not None:
            parts.append(f" - {t.condition_clause(d, f['condition']['id'])}"
                         f"{_duration(f['condition'])}")
    else:
        assert plan.defense is not None
        parts.append(f" against {t.defenses[plan.defense].name} (band {plan.band})")
        if plan.percent is not None:
            roll = f["implosion_roll"]
            shown = "no roll" if roll is None else f"d100 {roll}"
            parts.append(f": {plan.percent}% to crush, {shown}")
            if dice:
                parts.append(f", {dice} = {f['damage']} damage")
        else:
            sum_text = f"{plan.points} + {dice} = " if dice else ""
            parts.append(f": {sum_text}{f['damage']} damage")
    if f["crushed"]:
        parts.append(f"; {d}'s mind is crushed")
    if f["capped"]:
        parts.append(" (penetration stopped at the cap)")
    parts.append(". ")
    parts.append(f"{a} spends {plan.cost} attack strength "
                 f"({attacker['attack_strength']} → {attacker_after['attack_strength']})")
    if defender["psionic"]:
        parts.append(f"; {d}'s defense strength "
                     + _change(defender["defense_strength"], defender_after["defense_strength"]))
        if defender_after["attack_strength"] != defender["attack_strength"]:
            parts.append(", attack strength " + _change(defender["attack_strength"],
                                                         defender_after["attack_strength"]))
    parts.append(".")
    return "".join(parts)


def _duration(condition: Mapping[str, Any]) -> str:
    duration = condition.get("duration")
    if not duration:
        return ""
    amount, unit = duration["amount"], str(duration["unit"])
    # the tables name units in the plural ("rounds", "turns", "weeks")
    return f" for {amount} {unit.removesuffix('s') if amount == 1 else unit}"


def _change(before: int, after: int) -> str:
    return f"stays at {after}" if before == after else f"{before} → {after}"
