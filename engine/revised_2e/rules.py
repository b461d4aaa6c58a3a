"""Pure rule functions of revised-2e (RULES.md §1): look-ups, derivations, recovery,
attacks per round and the open mind from round to round.

Each function reads its figures from ``Tables`` and takes the house-rule values it
depends on as arguments; none keeps state or rolls dice except through a ``DiceSource``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engine.dice import DiceSource
from engine.errors import InvalidInput
from engine.results import Event, FrozenDict

from ..results import copy_json
from . import house
from .tables import Tables, band_lookup

JSON = dict[str, Any]


# -- derivations ----------------------------------------------------------------------
def derive_mac(tables: Tables, wis: int, intelligence: int, mental_armor: int,
               kind: str) -> int:
    """MAC = base by Wisdom + Int modifier − Mental Armor slots (2 each for a
    psionicist, 1 each for anyone else, a wild talent too), kept within the MAC limits
    (§1.1, Table 74). The seed puts wild talents with nonpsionic beings where it tells
    psionicists apart (the monsters' low MAC modifier table)."""
    base = int(tables.ability_row(wis, "/wis")["base_mac"])
    modifier = int(tables.ability_row(intelligence, "/int")["mac_modifier"])
    per_slot = int(tables.raw["mental_armor"]["psionicist" if kind == "psionicist"
                                              else "other"])
    return tables.clamp_mac(base + modifier - per_slot * mental_armor)


def ceil_div(a: int, b: int) -> int:
    """⌈a / b⌉ for positive ``b`` in exact integers."""
    return -(-a // b)


def mthac0_for(tables: Tables, kind: str, level: int, wild_talent_half: bool) -> int | None:
    """Psionicist 21 − level; wild talent 21 − ceil(level/2) under H-2E-WT-MTHAC0
    (else as a psionicist); a nonpsionic has none."""
    base = int(tables.raw["mthac0"]["base"])
    if kind == "psionicist":
        return base - level
    if kind == "wild-talent":
        return base - (ceil_div(level, 2) if wild_talent_half else level)
    return None


def save_paralyzation(tables: Tables, group: str, level: int, save_0: bool) -> int:
    """Save vs. paralyzation by class group and level (§1.7). Monsters use the monster
    group (warriors of their HD); level 0 saves at the table's level-0 figure under
    H-2E-SAVE-0, else as level 1."""
    if level <= 0:
        if save_0:
            return int(tables.raw["save_paralyzation"]["level_0"])
        level = 1
    return int(band_lookup(tables.save_rows(group), level, "/level")["target"])


def best_save_paralyzation(tables: Tables, classes: Sequence[tuple[str, int]]
                           ) -> tuple[int, int]:
    """The save vs. paralyzation of a character of several classes, each a (class group,
    level) at its own level: the best (lowest) of theirs, as AD&D 2e gives a multi-class
    character the best saving throw of its classes (§1.7 for each). Returns the save and
    the index of the first class that gives it."""
    saves = [save_paralyzation(tables, group, level, False) for group, level in classes]
    best = min(saves)
    return best, saves.index(best)


def known_modes_limit(tables: Tables, kind: str, level: int) -> int:
    """How many attack (and defense) modes a psionic kind knows at ``level`` (§1.1)."""
    return int(band_lookup(tables.raw["known_modes"][kind], level, "/level")["count"])


def quick_mac_range(tables: Tables, intelligence: int) -> tuple[int, int]:
    """The base-MAC range (best, worst) for a monster's Intelligence (seed 004)."""
    row = band_lookup(tables.raw["quick_mac"]["base"], intelligence, "/quick_mac/intelligence")
    return int(row["low"]), int(row["high"])


def quick_mac_modifier(tables: Tables, psionic: str, roll: int) -> int:
    """The MAC modifier for a d10 ``roll`` on the high- or low-psionic table (seed 004)."""
    bands = tables.raw["quick_mac"]["modifier"][psionic]
    return int(band_lookup(bands, roll, "/dice/mac-modifier")["modifier"])


def roll_quick_mac(tables: Tables, intelligence: int, psionic: str, dice: DiceSource,
                   pick_with_die: bool = True, by: str | None = None) -> int:
    """A monster's MAC by the Quick MAC rules: base inside the Intelligence range (a die of
    the range's size, purpose ``mac-base``, H-2E-QUICKMAC-PICK; else the worst value), plus
    a d10 modifier (purpose ``mac-modifier``)."""
    low, high = quick_mac_range(tables, intelligence)
    size = high - low + 1
    base = low + dice.roll("mac-base", size, by) - 1 if pick_with_die and size > 1 else high
    die = int(tables.raw["quick_mac"]["modifier_die"])
    modifier = quick_mac_modifier(tables, psionic, dice.roll("mac-modifier", die, by))
    return tables.clamp_mac(base + modifier)


def editable(c: Mapping[str, Any]) -> JSON:
    """A copy of combatant ``c`` for the rules to change in place.

    A frozen (``freeze``d, normalised) combatant is copied one level deep plus the parts
    the rules change (``mind``, ``conditions``, ``condition_rounds``, ``lost_powers``);
    the rest stays shared, read-only. Anything else is copied whole."""
    if type(c) is not FrozenDict:
        return copy_json(dict(c))
    out = dict(c)
    out["mind"] = dict(c["mind"])
    out["conditions"] = list(c["conditions"])
    out["condition_rounds"] = dict(c["condition_rounds"])
    out["lost_powers"] = list(c["lost_powers"])
    return out


def settle_mac(tables: Tables, c: Mapping[str, Any], dice: DiceSource,
               options: Mapping[str, Any]) -> JSON:
    """``c`` with its MAC fixed: a pending quick MAC is rolled now (once for good)."""
    out = editable(c)
    if out.get("mac") is None and out.get("quick_mac") is not None:
        quick = out["quick_mac"]
        out["mac"] = roll_quick_mac(tables, quick["intelligence"], quick["psionic"], dice,
                                    options[house.QUICKMAC_PICK], out["id"])
    return out


# -- round economy and recovery ---------------------------------------------------------
def attack_rate(tables: Tables, kind: str, level: int) -> tuple[int, int]:
    """(attacks, per rounds) for a psionic kind at ``level`` (§1.8)."""
    if kind not in ("psionicist", "wild-talent") or level < 1:
        return 0, 1
    band = band_lookup(tables.raw["attacks_per_round"][kind], level, "/level")
    return int(band["attacks"]), int(band["rounds"])


def attacks_allowed(tables: Tables, kind: str, level: int, round_number: int,
                    extra_in_even_rounds: bool = True) -> int:
    """Attacks allowed in encounter round ``round_number`` (1-based).

    A rate of a attacks per p rounds is spread evenly: round r gets
    ⌊r·a/p⌋ − ⌊(r−1)·a/p⌋, which for 3 per 2 gives 1, 2, 1, 2 … (H-2E-THREE-PER-TWO;
    false shifts the extra attack to odd rounds: 2, 1, 2, 1 …).
    """
    attacks, rounds = attack_rate(tables, kind, level)
    r = max(round_number, 1)
    if not extra_in_even_rounds and attacks % rounds:
        r += 1
    return (r * attacks) // rounds - ((r - 1) * attacks) // rounds


def recovery_per_hour(tables: Tables, psp_max: int) -> int:
    """PSPs regained per full hour of sleep or meditation: ceil(psp_max / 8)."""
    return ceil_div(psp_max, int(tables.raw["recovery"]["psp_max_divisor"]))


def recover(tables: Tables, c: Mapping[str, Any], hours: int) -> JSON:
    """``c`` after ``hours`` full hours of rest: PSPs up by ceil(max/8) an hour, never above
    the maximum. Partial hours give nothing (§1.8)."""
    if hours < 0:
        raise InvalidInput.at("/hours", "hours of rest cannot be negative")
    out = editable(c)
    gain = recovery_per_hour(tables, out["psp_max"]) * hours
    out["psp"] = min(out["psp_max"], out["psp"] + gain)
    return out


#: Rounds in an hour: a 2e round is a minute.
ROUNDS_PER_HOUR = 60


#: Most rounds of a rest in which an open mind's checks are rolled one by one (RULES.md
#: §4: every unbounded mechanic has a cap, and the result says when it was reached).
MAX_REST_MIND_ROUNDS = 100


def _count_lost_powers(powers: list[JSON], hours: int) -> tuple[list[JSON], list[JSON]]:
    """``powers`` (``{days, hours?}``: whole days still to pass, and the hours of the
    next one already passed) after ``hours`` more, and those that came back."""
    left: list[JSON] = []
    back: list[JSON] = []
    for power in powers:
        passed, part = divmod(power.get("hours", 0) + hours, 24)
        if power["days"] <= passed:
            back.append(power)
        else:
            later: JSON = {"days": power["days"] - passed}
            if part:
                later["hours"] = part
            left.append(later)
    return left, back


def rest(tables: Tables, c: Mapping[str, Any], hours: int, dice: DiceSource,
         options: Mapping[str, Any]) -> tuple[JSON, list[Event]]:
    """``c`` after ``hours`` full hours of sleep or meditation outside any encounter:
    PSPs come back (``recover``); an open mind goes through its rounds (``end_of_round``:
    locked rounds, then a check each round) until it closes, for at most the rounds the
    rest lasts and ``MAX_REST_MIND_ROUNDS`` (``mind-checks-capped`` when that stops it);
    conditions run out as the rounds pass (``condition_rounds``: the rest of the round
    they began in and that many more; one without lasts its round, as at a round's end);
    powers lost for days (``lost_powers``) count down by the days the rest lasts, its
    hours carried over to the next rest (each power's ``hours``, the part of a day
    already passed), so that nightly rests bring them back too."""
    out = recover(tables, c, hours)
    events = []
    gained = out["psp"] - c["psp"]
    if gained:
        events.append(Event("psp-regained", out["id"], {"amount": gained, "hours": hours}))
    rounds = hours * ROUNDS_PER_HOUR
    mind_rounds = 0
    while out["mind"]["state"] == "open" and mind_rounds < min(rounds, MAX_REST_MIND_ROUNDS):
        out, more = end_of_round(tables, out, dice, options)
        events += more
        mind_rounds += 1
    if out["mind"]["state"] == "open" and MAX_REST_MIND_ROUNDS == mind_rounds < rounds:
        events.append(Event("mind-checks-capped", out["id"], {"rounds": mind_rounds}))
    if out["lost_powers"]:
        out["lost_powers"], back = _count_lost_powers(out["lost_powers"], hours)
        if back:
            events.append(Event("powers-return", out["id"], {
                "count": len(back), "days": max(p["days"] for p in back)}))
    passed = rounds - mind_rounds  # end_of_round counted the conditions of its rounds
    for condition in list(out["conditions"]):
        # one with no rounds counted ends at its round's end (count_down_conditions)
        left = out["condition_rounds"].get(condition, 0) + 1 - passed
        if left > 0:
            if condition in out["condition_rounds"]:
                out["condition_rounds"][condition] = left - 1
        else:
            out["conditions"].remove(condition)
            out["condition_rounds"].pop(condition, None)
            events.append(Event("condition-ended", out["id"], {"condition": condition}))
    return out, events


# -- the open mind --------------------------------------------------------------------------
def add_condition(c: JSON, condition: str, rounds: int) -> None:
    """Give ``c`` a condition lasting ``rounds`` more rounds after this one (keeps the
    longer if it already has it)."""
    if condition not in c["conditions"]:
        c["conditions"].append(condition)
        c["condition_rounds"][condition] = rounds
    else:
        c["condition_rounds"][condition] = max(c["condition_rounds"].get(condition, 0), rounds)


def open_mind(c: JSON, opened_by: str, forced: bool) -> Event:
    """Open ``c``'s mind (in place). A mind forced open by an attack is stunned for the
    rest of this round and takes +2 on initiative next round (§1.5); one opened by a
    critical hit may pay to close "in the following round" (``end_of_round``)."""
    mind = c["mind"]
    mind.update({"state": "open", "opened_by": opened_by, "locked_rounds": 0,
                 "may_pay_to_close": False, "rounds_open": 0, "used_power": False})
    if forced:
        add_condition(c, "stunned", 0)
        add_condition(c, "initiative-penalty", 1)
    return Event("mind-opened", c["id"], {"by": opened_by, "forced": forced})


def close_mind(c: JSON, how: str) -> Event:
    """Close ``c``'s mind (in place), keeping its last defense."""
    last = c["mind"].get("last_defense")
    c["mind"] = {"state": "closed", "opened_by": None, "locked_rounds": 0, "last_defense": last,
                 "used_power": False, "may_pay_to_close": False, "rounds_open": 0}
    return Event("mind-closed", c["id"], {"how": how})


def close_offer(tables: Tables, c: Mapping[str, Any], options: Mapping[str, Any]
                ) -> JSON | None:
    """What closing ``c``'s mind by paying costs now (§1.5): ``{cost, defense, basis, psp,
    payable, reason}`` as ``price_closing`` gives it; ``None`` (nothing to choose) unless
    a critical hit opened the mind and the end of that round told it it may pay
    (``may_pay_to_close``)."""
    mind = c["mind"]
    if mind["state"] != "open" or mind["opened_by"] != "critical" or \
            not mind["may_pay_to_close"]:
        return None
    return price_closing(tables, c, options)


def price_closing(tables: Tables, c: Mapping[str, Any], options: Mapping[str, Any]) -> JSON:
    """``{cost, defense, basis, psp, payable, reason}`` of closing ``c``'s mind by paying.

    The cost is 2 × the last defense the mind used (``basis: "last"``); with none, 2 × its
    cheapest known defense under H-2E-NO-LAST-DEF (``"cheapest"``). With
    H-2E-CLOSE-LAST-PSP (the default) paying must leave at least 1 PSP: a mind with 0 PSPs
    is open (errata), so paying the last of them could not close it. ``reason`` says why
    it may not pay: ``no-defense`` (no defense prices it: ``cost`` is ``None``),
    ``no-last-defense`` (none used, and H-2E-NO-LAST-DEF off), ``psp`` (too few) or
    ``last-psp``."""
    offer: JSON = {"cost": None, "defense": c["mind"].get("last_defense"), "basis": "last",
                   "psp": c["psp"], "payable": False, "reason": None}
    if offer["defense"] is None:
        if not c["defenses"]:
            return offer | {"basis": None, "reason": "no-defense"}
        if not options[house.NO_LAST_DEF]:
            return offer | {"basis": None, "reason": "no-last-defense"}
        offer |= {"defense": min(c["defenses"], key=tables.defense_cost), "basis": "cheapest"}
    cost = int(tables.open_mind["close_cost_factor"]) * tables.defense_cost(offer["defense"])
    offer["cost"] = cost
    if cost > c["psp"]:
        offer["reason"] = "psp"
    elif cost == c["psp"] and options[house.CLOSE_LAST_PSP]:
        offer["reason"] = "last-psp"
    else:
        offer["payable"] = True
    return offer


def may_close_by_paying(tables: Tables, c: Mapping[str, Any],
                        options: Mapping[str, Any]) -> int | None:
    """The PSPs ``c`` may pay now to close its mind, or ``None`` if it may not (§1.5,
    ``close_offer``)."""
    offer = close_offer(tables, c, options)
    return offer["cost"] if offer and offer["payable"] else None


def opened_by_critical_this_round(c: Mapping[str, Any]) -> bool:
    """Whether a critical hit opened ``c``'s mind this round: open, its first round not
    yet counted by ``end_of_round``, which will tell it it may pay to close (§1.5, "in
    the following round"). Outside encounters that payment is taken at the end of this
    round, after its bookkeeping (``Revised2e.round_end``), so that the mind starts the
    next round closed, as an encounter's ``close`` choice paid at the start of that
    round leaves it."""
    mind = c["mind"]
    return mind["state"] == "open" and mind["opened_by"] == "critical" and \
        opening_round(mind) and not mind["may_pay_to_close"]


def opening_round(mind: Mapping[str, Any]) -> bool:
    """Whether an open ``mind`` is in the round it opened in (none of its rounds counted
    yet by ``end_of_round``). A mind given already locked open (``locked_rounds`` on a
    sheet carried over from an earlier fight) is past it, whatever its ``rounds_open``:
    its lock counts down, and is not rolled again."""
    return bool(mind["rounds_open"] == 0 and mind["locked_rounds"] == 0)


def count_down_conditions(c: JSON) -> list[Event]:
    """Count ``c``'s timed conditions down at the end of a round (in place): one with 0
    rounds left ends now (``stunned`` lasts the round it was given,
    ``initiative-penalty`` one round more), the others lose a round."""
    events = []
    for condition in list(c["conditions"]):
        left = c["condition_rounds"].get(condition, 0)
        if left <= 0:
            c["conditions"].remove(condition)
            c["condition_rounds"].pop(condition, None)
            events.append(Event("condition-ended", c["id"], {"condition": condition}))
        else:
            c["condition_rounds"][condition] = left - 1
    return events


def roll_open_duration(tables: Tables, dice: DiceSource, by: str) -> int:
    """1d4+1 rounds (purpose ``open-duration``)."""
    d = tables.open_mind["duration"]
    return sum(dice.roll_many("open-duration", int(d["sides"]), int(d["count"]), by)) + int(
        d["bonus"])


def end_of_round(tables: Tables, c: Mapping[str, Any], dice: DiceSource,
                 options: Mapping[str, Any]) -> tuple[JSON, list[Event]]:
    """Bookkeeping for ``c`` at the end of an encounter round (§1.5); returns the new
    combatant and what happened.

    - Conditions count down (``count_down_conditions``).
    - Opened by reaching 0 PSPs: at the end of the opening round it is locked open 1d4+1
      rounds (purpose ``open-duration``).
    - Opened by a critical hit: at the end of the opening round it is told it may pay to
      close (``may_pay_to_close``, event ``mind-may-close``); if it has not paid by the
      end of the next round, it stays open 1d4+1 rounds from then.
    - At the end of the last locked round, and of each round after it, a Wisdom check at
      −3 closes it (d20 ≤ wis − 3, purpose ``wisdom-check``).
    - A nonpsionic mind saves vs. paralyzation each round from the round after it
      opened (purpose ``save``), at −4 if a power was used on it successfully.
    """
    out = editable(c)
    events: list[Event] = []
    mind = out["mind"]
    if mind["state"] == "open":
        # a mind given as open without a cause: a nonpsionic one saves, others check Wisdom
        opened_by = mind["opened_by"] or (
            "attack" if out["kind"] == "nonpsionic" else None)
        first_round = opening_round(mind)
        if opened_by == "attack":
            if not first_round:
                penalty = int(tables.open_mind["nonpsionic_save_penalty"]) \
                    if mind["used_power"] else 0
                target = out["save_paralyzation"] + penalty
                roll = dice.roll("save", tables.save_die, out["id"])
                success = roll >= target
                events.append(Event("mind-save", out["id"],
                                    {"target": target, "roll": roll, "success": success}))
                if success:
                    events.append(close_mind(out, "save"))
        elif opened_by_critical_this_round(out):
            # (not one already told it may pay, a sheet may say so with rounds_open 0:
            # that one is past its opening round and, unpaid, is locked open below)
            mind["may_pay_to_close"] = True
            cost = price_closing(tables, out, options)["cost"]
            events.append(Event("mind-may-close", out["id"], {"cost": cost}))
        elif (opened_by == "zero-psp" and first_round) or mind["may_pay_to_close"]:
            mind["may_pay_to_close"] = False
            mind["locked_rounds"] = roll_open_duration(tables, dice, out["id"])
            events.append(Event("mind-locked", out["id"], {"rounds": mind["locked_rounds"]}))
        elif mind["locked_rounds"] > 1:
            mind["locked_rounds"] -= 1
        else:
            # the last locked round (or one after it) ends: the seed's "after that, a
            # successful Wisdom check ... closes the mind. One check per round", so a mind
            # locked open for 1d4+1 rounds may close as they end, not a round later
            mind["locked_rounds"] = 0
            check = tables.open_mind["wisdom_check"]
            target = out["wis"] - int(check["penalty"])
            roll = dice.roll("wisdom-check", int(check["sides"]), out["id"])
            success = roll <= target
            events.append(Event("wisdom-check", out["id"],
                                {"target": target, "roll": roll, "success": success}))
            if success:
                events.append(close_mind(out, "wisdom-check"))
        if out["mind"]["state"] == "open":
            out["mind"]["rounds_open"] += 1
    events += count_down_conditions(out)
    return out, events
