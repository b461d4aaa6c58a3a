"""Plain-language summaries of revised-2e results, written for the table."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.results import Event
from engine.system import is_down

from .tables import Tables


def roll_text(roll: Mapping[str, int]) -> str:
    """'16 − 4 = 12', '15 + 3 = 18' or '16' when nothing modifies the roll."""
    natural, modifier, modified = roll["natural"], roll["modifier"], roll["modified"]
    if modifier == 0:
        return str(natural)
    sign = "+" if modifier > 0 else "−"
    return f"{natural} {sign} {abs(modifier)} = {modified}"


def count(n: int, word: str) -> str:
    """"1 round", "3 rounds"."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def psp(n: int) -> str:
    """"1 PSP", "4 PSPs"."""
    return count(n, "PSP")


def defense_line(tables: Tables, name: str, mode: str, cost: int, opened: bool) -> str:
    """"Fenka raises the mental barrier (5 PSPs).", so the PSPs a defense costs are
    accounted for where it is paid; when paying took ``name``'s last PSPs it says the
    mind opened (``opened``; errata: "A mind with 0 PSPs is open")."""
    shield = f"the {tables.mode_name(mode)} ({psp(cost)})"
    if opened:
        return f"Raising {shield} takes {name}'s last PSPs and opens {name}'s mind."
    return f"{name} raises {shield}."


def down_line(name: str, hp: int) -> str:
    """"Fenka is down (−2 hit points).": at 0 hit points or fewer a combatant acts no
    more (slain, or dying under AD&D's optional rule)."""
    number = f"−{-hp}" if hp < 0 else str(hp)
    return f"{name} is down ({number} hit points)."


def attack_summary(tables: Tables, attacker: Mapping[str, Any], defender: Mapping[str, Any],
                   fields: Mapping[str, Any], attacker_after: Mapping[str, Any],
                   defender_after: Mapping[str, Any]) -> str:
    """One paragraph: the defense raised and its cost when this exchange pays it
    (``defense_psp``), what was attempted, the roll, what it cost and what it did
    (``attacker_after``, ``defender_after``: the two after the attack; the attacker's
    last PSPs open its own mind, and a blow that takes the defender to 0 hit points or
    fewer leaves it down)."""
    a, d = attacker["name"], defender["name"]
    paid = f"{a} pays {psp(fields['psp_spent'])}."
    if attacker["mind"]["state"] != "open" and attacker_after["mind"]["state"] == "open":
        # errata: "A mind with 0 PSPs is open"
        paid += f" That was {a}'s last PSPs: {a}'s mind is open."
    mode = tables.mode_name(fields["mode"])
    m = fields["multiplier"]
    steps = f" ×{m}" if m > 1 else ""
    rng = "" if fields["range"] == "short" else f" at {fields['range']} range"
    numbers = f"(needed {fields['needed']}, rolled {roll_text(fields['roll'])})"
    defense = fields["defense"]
    shield = f" through the {tables.mode_name(defense)}" if defense else ""
    natural = fields["roll"]["natural"]
    raised = ""
    if defense and fields["defense_psp"]:
        # Paying for the defense took the last PSPs and opened the mind before the roll.
        opened = fields["target_was_open"] and defender["mind"]["state"] != "open"
        raised = defense_line(tables, d, defense, fields["defense_psp"], opened) + " "
    if not fields["hit"]:
        auto = " — a natural 1" if natural == int(tables.attack_roll["always_miss"]) else ""
        if defense:
            text = f"{a}'s {mode}{steps}{rng} breaks against {d}'s " \
                   f"{tables.mode_name(defense)} {numbers}{auto}."
        else:
            text = f"{a}'s {mode}{steps}{rng} misses {d} {numbers}{auto}."
        return f"{raised}{text} {paid}"
    parts = [f"{raised}{a}'s {mode}{steps}{rng} strikes {d}{shield} {numbers}."]
    if fields["critical"]:
        parts.append("A critical mental hit!")
    if fields["damage"]:
        lost = fields["psp_lost"]
        extra = "" if lost == fields["damage"] else f" (of {fields['damage']} damage)"
        parts.append(f"{d} loses {psp(lost)}{extra}.")
    save = fields["save"]
    if save is not None:
        verdict = "saves and keeps the mind closed" if save["success"] else "fails the save"
        parts.append(f"{d} {verdict} (save vs. paralyzation {save['target']}, "
                     f"rolled {save['roll']}).")
    if fields["mind_opened"]:
        why = {"attack": "one successful attack opens a nonpsionic mind",
               "zero-psp": "no PSPs left",
               "critical": "critical mental hit"}[fields["opened_by"]]
        parts.append(f"{d}'s mind is forced open ({why}) and {d} is stunned.")
    effect = fields["effect"]
    if effect is not None:
        if "rounds" in effect:
            parts.append(f"{d}'s open mind is {effect['type']} for "
                         f"{count(effect['rounds'], 'round')}.")
        elif "days" in effect:
            parts.append(f"{d} loses one psionic power for {count(effect['days'], 'day')}.")
        else:
            parts.append(f"{d}'s open mind takes {count(effect['amount'], 'hit point')} of "
                         "damage.")
            if is_down(defender_after) and not is_down(defender):
                parts.append(down_line(d, defender_after["hp"]))
    parts.append(paid)
    return " ".join(parts)


def closes_by_paying(name: str, cost: int) -> str:
    """"Kara pays 10 PSPs and closes its mind."."""
    return f"{name} pays {psp(cost)} and closes its mind."


@dataclass(frozen=True)
class CloseWhen:
    """When a mind a critical hit opened may pay to close (§1.5, "in the following
    round"), in the words of one way of running rounds: ``opened``, when the hit must
    have opened it for it to pay now; ``pays``, when a mind the end of the opening round
    told it may pay can do so."""

    opened: str
    pays: str


#: An encounter: the ``close`` choice is declared in the round after the opening one and
#: paid at its start.
IN_ENCOUNTERS = CloseWhen(opened="last round", pays="in the next round")
#: Outside encounters (``exchange.end_round``): at the end of the opening round, after its
#: bookkeeping; a mind that did not pay then (``may_pay_to_close``) still may at the end of
#: the next round, before its bookkeeping.
OUTSIDE_ENCOUNTERS = CloseWhen(opened="this round or the last",
                               pays="at the end of the next round")


def close_offer_line(tables: Tables, name: str, offer: Mapping[str, Any] | None,
                     when: CloseWhen, stopped: Sequence[str] = ()) -> str:
    """Whether ``name`` may pay to close its mind and for how much (``rules.close_offer``,
    ``None`` when it may not; ``when``: how these rounds are run; ``stopped``: the
    conditions that stop it acting)."""
    if offer is None:
        return f"{name}'s mind is not one a critical hit opened {when.opened}: it cannot " \
               "pay to close it now."
    cost, defense = offer["cost"], offer["defense"]
    if stopped:
        return f"{name} cannot close its mind ({', '.join(stopped)})."
    if cost is None:
        return unpriced_line(name, offer["reason"])
    basis = "the last defense it used" if offer["basis"] == "last" else \
        "its cheapest defense"
    price = f"{psp(cost)} (twice the {tables.mode_name(defense)}, {basis})"
    if offer["reason"] == "psp":
        return f"Closing {name}'s mind would cost {price}, more than the " \
               f"{psp(offer['psp'])} it holds."
    if offer["reason"] == "last-psp":
        return f"Closing {name}'s mind would cost {price}, its last PSPs: a mind with none " \
               "is open, so it cannot pay (H-2E-CLOSE-LAST-PSP)."
    return f"{name} may pay {price} to close its mind."


def unpriced_line(name: str, reason: str | None) -> str:
    """Why ``name``'s mind has no price to close by paying (``reason``:
    ``rules.price_closing``'s, ``no-last-defense`` or ``no-defense``)."""
    if reason == "no-last-defense":
        return f"{name}'s mind cannot close by paying: it has used no defense to price it " \
               "(H-2E-NO-LAST-DEF is off)."
    return f"{name}'s mind cannot close by paying: it has no defense to price it."


def round_end_lines(name: str, events: Sequence[Event], when: CloseWhen,
                    offer: Mapping[str, Any] | None = None) -> list[str]:
    """The summary's sentences for ``name``'s end-of-round events (§1.5): a mind's
    checks and lock, and conditions that ended. ``offer``: what closing the mind by paying
    costs (``rules.close_offer`` of the combatant after its round), for a mind a critical
    hit opened this round, so that one that cannot pay is not told it may, nor told the
    wrong time (``when``)."""
    lines = []
    for e in events:
        if e.type in ("mind-save", "wisdom-check"):
            check = "save vs. paralyzation" if e.type == "mind-save" else "Wisdom check"
            verdict = "closes" if e.data["success"] else "stays open"
            lines.append(f"{name}'s mind {verdict} ({check} {e.data['target']}, "
                         f"rolled {e.data['roll']}).")
        elif e.type == "mind-locked":
            lines.append(f"{name}'s mind is locked open for {e.data['rounds']} rounds.")
        elif e.type == "mind-may-close":
            lines.append(may_close_line(name, e.data["cost"], offer, when))
        elif e.type == "condition-ended":
            lines.append(condition_ended(name, e.data["condition"]))
    return lines


def may_close_line(name: str, cost: int | None, offer: Mapping[str, Any] | None,
                   when: CloseWhen) -> str:
    """What the end of the round a critical hit opened ``name``'s mind says of closing it
    by paying later (``offer``: ``rules.price_closing``'s, when known; ``when.pays``:
    when it can)."""
    reason = offer["reason"] if offer else None
    if cost is None:
        return unpriced_line(name, reason)
    if offer is not None and reason == "psp":
        return f"Closing {name}'s mind {when.pays} would cost {psp(cost)}, more than " \
               f"the {psp(offer['psp'])} it holds."
    if offer is not None and reason == "last-psp":
        return f"Closing {name}'s mind {when.pays} would cost {psp(cost)}, its last " \
               "PSPs: a mind with none is open, so it cannot pay (H-2E-CLOSE-LAST-PSP)."
    return f"{name} may pay {psp(cost)} to close its mind {when.pays}."


def condition_ended(name: str, condition: str) -> str:
    """"Kara is no longer stunned.", "Kara's initiative penalty ends."."""
    if condition == "initiative-penalty":
        return f"{name}'s initiative penalty ends."
    return f"{name} is no longer {condition}."


def rest_lines(name: str, before: Mapping[str, Any], after: Mapping[str, Any],
               events: Sequence[Event], most_mind_rounds: int) -> list[str]:
    """The summary's sentences for ``name``'s rest (§1.8, rules ``rest``): PSPs and powers
    back, conditions ended, and how an open mind fared (``most_mind_rounds``: the cap on
    the rounds of checks a rest rolls)."""
    lines = []
    checks = [e for e in events if e.type in ("mind-save", "wisdom-check")]
    for e in events:
        if e.type == "psp-regained":
            lines.append(f"{name} regains {psp(e.data['amount'])} ({after['psp']} of "
                         f"{after['psp_max']}).")
        elif e.type == "condition-ended":
            lines.append(condition_ended(name, e.data["condition"]))
        elif e.type == "powers-return":
            n = e.data["count"]
            lines.append(f"{name} regains {'a power' if n == 1 else f'{n} powers'} "
                         "lost to mind thrust.")
        elif e.type == "mind-closed":
            how = ""
            if checks:
                last = checks[-1]
                kind = "save" if last.type == "mind-save" else "Wisdom check"
                how = (f" ({kind} {last.data['target']}, rolled {last.data['roll']}, "
                       f"after {len(checks)} {'try' if len(checks) == 1 else 'tries'})")
            lines.append(f"{name}'s mind closes during the rest{how}.")
    if after["mind"]["state"] == "open" and before["mind"]["state"] == "open":
        capped = any(e.type == "mind-checks-capped" for e in events)
        lines.append(f"{name}'s mind is still open after the rest" + (
            f": {most_mind_rounds} rounds of checks are the most a rest rolls; end "
            "rounds to go on." if capped else "."))
    return lines
