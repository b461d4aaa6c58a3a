"""The combat-strength round as pure state transitions (RULES.md 2.3).

A round is an ``intent`` step (every combatant declares a stance; Combat Strength
is recorded) followed by ten ``segment`` steps. In a segment every combatant picks
a defense (or none) and, in a trance, an attack; all attacks are looked up from
the states at the start of the segment and their effects applied together.

The state is a plain JSON object the daemon stores verbatim. Pending choices live
under ``pending`` and are never shown by ``view``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from ..dice import DiceSource, still_needed
from ..errors import (
    DiceNeeded,
    InvalidInput,
    LimitExceeded,
    Problem,
    RulesViolation,
    UnknownCombatant,
    json_text,
)
from ..results import Change, Event, Resolution, copy_json, thaw
from ..system import id_source, swap_combatant
from .combatant import combat_strength, dead, incapacitated
from .exchange import (
    Effect,
    Outcome,
    apply_effects,
    check_attacker,
    check_defense,
    check_target,
    strength_events,
    tick,
)
from .rules import H_WAVE_ROUND, SHIELD_MODE, STANCES, WAVE_MODE, Tables

if TYPE_CHECKING:
    from .system import CombatStrength

JSON = dict[str, Any]

MAX_COMBATANTS = 64
SEGMENTS_PER_ROUND = 10
#: where a segment's choice names the combatant it attacks
TARGET_AT = "/choice/attack/target"


def new(system: CombatStrength, options: Mapping[str, Any] | None) -> JSON:
    """A new encounter: round 1, intent phase, no combatants."""
    return {
        "system": system.id,
        "options": system.options(options),
        "round": 1,
        "phase": "intent",
        "segment": None,
        "order": [],
        "combatants": {},
        "stances": {},
        "recorded_combat_strength": {},
        "wave_used": [],
        "pending": {},
        "condition_segments": {},
    }


def _copy(state: Mapping[str, Any]) -> JSON:
    out = thaw(state)
    if not isinstance(out, dict) or out.get("system") != "combat-strength":
        raise InvalidInput.at("/state", "not a combat-strength encounter state")
    return out


def add(system: CombatStrength, state: Mapping[str, Any], raw: Mapping[str, Any]
        ) -> tuple[JSON, str]:
    """The state with one more combatant, and its id."""
    s = _copy(state)
    if len(s["order"]) >= MAX_COMBATANTS:
        raise LimitExceeded(Problem(
            "/combatant", f"an encounter holds at most {MAX_COMBATANTS} combatants"))
    c = system.combatant(raw, "/combatant")
    cid = str(c["id"])
    if cid in s["combatants"]:
        # refused at the field the caller wrote: the id, or the name it was made from
        field, ident = id_source(raw, "/combatant", cid)
        raise InvalidInput.at(field, f"{ident} is already in the encounter")
    s["order"].append(cid)
    s["combatants"][cid] = c
    if s["phase"] == "segment":
        # joining mid-round: it defends but has declared no trance until next intent
        s["stances"][cid] = "normal"
        s["recorded_combat_strength"][cid] = combat_strength(c)
    return s, cid


def replace(system: CombatStrength, state: Mapping[str, Any], combatant_id: str,
             combatant: Mapping[str, Any]) -> JSON:
    """``combatant_id`` taken again from ``combatant``; the round's recorded Combat
    Strength stays, and so does its stance unless it is no longer psionic (then it acts
    normally). Every declared choice is checked again against the combatants as they are
    now, but for what its target allows; one the rules no longer allow is dropped, and
    its combatant must declare again. An attack whose target no longer allows it (now
    dead, or psionic where it was not) stays, and is lost when the segment resolves:
    dropped now, it would tell everyone whom it was aimed at."""
    s = _copy(state)
    c = system.combatant({**combatant, "id": combatant_id}, "/combatant")
    swap_combatant(s, combatant_id, c)
    if not c["psionic"] and combatant_id in s["stances"]:
        s["stances"][combatant_id] = "normal"
    pending, s["pending"] = s["pending"], {}
    for cid, recorded in pending.items():
        choice = {k: v for k, v in recorded.items() if v is not None}
        try:
            s = declare(system, s, cid, choice, targets=False)
        except (RulesViolation, InvalidInput, UnknownCombatant):
            continue
    return s


def _stance(s: Mapping[str, Any], cid: str) -> str:
    return str(s["stances"].get(cid, "normal"))


def _wave_left(system: CombatStrength, s: Mapping[str, Any], cid: str) -> bool:
    opts = s["options"]
    return not (opts.get(H_WAVE_ROUND, True) and cid in s["wave_used"])


def _can_attack(system: CombatStrength, s: Mapping[str, Any], cid: str) -> bool:
    t = system.tables
    c = s["combatants"][cid]
    stance = _stance(s, cid)
    # a dead creature cannot be attacked (target-dead): foes all dead leave no attack
    others = [s["combatants"][o] for o in s["order"]
              if o != cid and dead(t, s["combatants"][o]) is None]
    if stance == "trance":
        affordable = any(t.attacks[m].cost <= c["attack_strength"] for m in c["attacks"])
        return affordable and any(o["psionic"] for o in others)
    if stance == "wave":
        return (WAVE_MODE in c["attacks"]
                and t.attacks[WAVE_MODE].cost <= c["attack_strength"]
                and _wave_left(system, s, cid)
                and any(not o["psionic"] for o in others))
    return False


def _must_choose(system: CombatStrength, s: Mapping[str, Any], cid: str) -> bool:
    """Whether ``cid`` has a choice to make in this step. In a segment: an attack, or a
    defense it may raise. Outside a trance only Shield Thoughts may be (seed step 3.i),
    and the stance is public: one that does not know it has only "no defense" to say."""
    c = s["combatants"][cid]
    if not c["psionic"] or incapacitated(system.tables, c) is not None:
        return False
    if s["phase"] == "intent":
        return True
    usable = c["defenses"] if _stance(s, cid) == "trance" else \
        [d for d in c["defenses"] if d == SHIELD_MODE]
    return bool(c["defense_strength"] > 0 and usable) or _can_attack(system, s, cid)


def waiting_for(system: CombatStrength, state: Mapping[str, Any]) -> list[str]:
    """Ids that still have a choice to make in the current step, in encounter order."""
    s = state
    return [cid for cid in s["order"]
            if cid not in s["pending"] and _must_choose(system, s, cid)]


def view(system: CombatStrength, state: Mapping[str, Any]) -> JSON:
    """What anyone may see: no pending choice, only who has declared."""
    s = thaw(state)
    return {
        "system": s["system"],
        "phase": s["phase"],
        "round": s["round"],
        "segment": s["segment"],
        "options": s["options"],
        "combatants": {cid: s["combatants"][cid] for cid in s["order"]},
        "combat_strength": {cid: combat_strength(s["combatants"][cid]) for cid in s["order"]},
        "stances": s["stances"],
        "recorded_combat_strength": s["recorded_combat_strength"],
        "wave_used": s["wave_used"],
        "waiting_for": waiting_for(system, s),
        "declared": [cid for cid in s["order"] if cid in s["pending"]],
    }


def pending_choices(state: Mapping[str, Any]) -> JSON:
    """The declared choices the next resolve uses, by combatant id
    (``System.encounter_pending_choices``)."""
    return dict(state["pending"])


def declare(system: CombatStrength, state: Mapping[str, Any], cid: str,
            choice: Mapping[str, Any], targets: bool = True) -> JSON:
    """Record ``cid``'s secret choice after checking it against phase and rules
    (without ``targets``, not against what its target allows: ``replace``).

    A second declaration in the same step replaces the first.
    """
    s = _copy(state)
    t = system.tables
    if cid not in s["combatants"]:
        raise UnknownCombatant(cid, "/combatant_id")
    system.validate_choice(choice)
    c = s["combatants"][cid]
    why = incapacitated(t, c)
    if why is not None:
        raise RulesViolation("incapacitated",
                             f"{t.condition_clause(c['name'], why)} and makes no choices")
    if s["phase"] == "intent":
        if "attack" in choice or "defense" in choice:
            raise RulesViolation(
                "intent-declares-stance-only",
                "at intent only a stance is declared; attacks and defenses are picked in each "
                "segment (seed steps 1 and 3)")
        stance = choice.get("stance")
        if stance is None:
            raise InvalidInput.at("/choice/stance",
                                  f"declare one of {json_text(list(STANCES))} at intent")
        if not c["psionic"] and stance != "normal":
            raise RulesViolation("non-psionic-stance",
                                 f"{c['name']} is not psionic and can only act normally")
        s["pending"][cid] = {"stance": stance}
        return s
    if "stance" in choice:
        raise RulesViolation(
            "stance-declared-at-intent",
            "stances are declared at intent, before initiative; this round's are fixed "
            "(seed step 1)")
    stance = _stance(s, cid)
    attack = choice.get("attack")
    defense_obj = choice.get("defense")
    defense = None if defense_obj is None else defense_obj.get("mode")
    if defense is not None and c["defense_strength"] <= 0:
        raise RulesViolation("no-defense-strength",
                             f"{c['name']} has no defense strength left to raise a defense "
                             "(seed step 3.i)")
    mode: str | None = None
    recorded_attack: JSON | None = None
    if attack is not None:
        target_id = str(attack["target"])
        if target_id not in s["combatants"]:
            raise UnknownCombatant(target_id, TARGET_AT)
        mode = str(attack["mode"])
        check_attacker(t, c, s["combatants"][target_id], mode)
        if targets:
            check_target(t, c, s["combatants"][target_id], mode, stance, TARGET_AT)
        elif stance not in ("trance", "wave"):
            # whatever the target: the attacker itself left the stances that attack (no
            # longer psionic, it acts normally)
            raise RulesViolation(
                "attack-requires-trance",
                f"{c['name']} is in the {json_text(stance)} stance and makes no attacks")
        if stance == "wave" and not _wave_left(system, s, cid):
            raise RulesViolation(
                "one-wave-per-round",
                f"{c['name']} has already used Psionic Wave this round (H-CS-WAVE-ROUND)")
        recorded_attack = {"mode": mode, "target": target_id,
                           "range": str(attack.get("range", "short"))}
    check_defense(t, c, defense, stance, mode)
    s["pending"][cid] = {"attack": recorded_attack,
                         "defense": None if defense is None else {"mode": defense}}
    return s


def resolve(system: CombatStrength, state: Mapping[str, Any], dice: DiceSource,
            force: bool = False) -> tuple[JSON, JSON]:
    """Resolve the current step; with ``force`` missing choices are no attack and no
    defense (and the stance ``normal`` at intent)."""
    system.check_dice(dice)
    s = _copy(state)
    missing = waiting_for(system, s)
    if missing and not force:
        raise RulesViolation("choices-missing",
                             f"still waiting for {', '.join(missing)} (or resolve with force)")
    if s["phase"] == "intent":
        return _resolve_intent(system, s)
    return _resolve_segment(system, s, dice)


_STANCE_TEXT = {
    "trance": "enters a psychic trance",
    "discipline": "will use a discipline",
    "wave": "will use Psionic Wave on non-psionic foes",
    "normal": "acts normally",
}


def _intent_line(t: Tables, c: Mapping[str, Any], stance: str) -> str:
    """What the intent step's summary says of ``c``. One a condition stops declared
    nothing, so its stance (``normal``) is no choice of its own: the condition is told
    instead, and of a dead one nothing more. A creature that is not psionic has no
    Combat Strength and no stance to take, only a Psionic Wave to suffer."""
    gone = dead(t, c)
    if gone is not None:
        return t.condition_clause(c["name"], gone)
    strength = f" (Combat Strength {combat_strength(c)})" if c["psionic"] else ""
    why = incapacitated(t, c)
    if why is not None:
        return f"{t.condition_clause(c['name'], why)} and cannot act{strength}"
    if not c["psionic"]:
        return f"{c['name']} is not psionic"
    return f"{c['name']} {_STANCE_TEXT.get(stance, stance)}{strength}"


def _resolve_intent(system: CombatStrength, s: JSON) -> tuple[JSON, JSON]:
    events: list[JSON] = []
    stances: dict[str, str] = {}
    recorded: dict[str, int] = {}
    lines = []
    for cid in s["order"]:
        c = s["combatants"][cid]
        stance = str(s["pending"].get(cid, {}).get("stance") or "normal")
        stances[cid] = stance
        recorded[cid] = combat_strength(c)
        events.append(Event("stance", cid, {"stance": stance,
                                            "combat_strength": recorded[cid]}).to_json())
        lines.append(_intent_line(system.tables, c, stance))
    s.update(phase="segment", segment=1, stances=stances,
             recorded_combat_strength=recorded, wave_used=[], pending={})
    summary = f"Round {s['round']}, intent: " + ("; ".join(lines) or "no combatants") + "."
    step = {"round": s["round"], "phase": "intent", "results": [], "events": events,
            "summary": summary, "stances": stances, "combat_strength": recorded}
    return s, step


def _resolve_segment(system: CombatStrength, s: JSON, dice: DiceSource) -> tuple[JSON, JSON]:
    t = system.tables
    opts = system.options(s["options"])
    start = {cid: s["combatants"][cid] for cid in s["order"]}
    effects: dict[str, list[Effect]] = {cid: [] for cid in s["order"]}
    results: list[Resolution] = []
    attacking: list[str] = []
    lost: list[JSON] = []
    lost_lines: list[str] = []
    for cid in s["order"]:
        attack = (s["pending"].get(cid) or {}).get("attack")
        if attack is None:
            continue
        defender = start[attack["target"]]
        try:
            # every lookup uses the states at the start of the segment (seed step iii);
            # the attacker's own means were checked when it declared or was refreshed
            check_target(t, start[cid], defender, attack["mode"], _stance(s, cid),
                         TARGET_AT)
        except RulesViolation as refused:
            reason = _lost_reason(t, defender)
            lost.append(Event("attack-lost", cid, {
                "target": attack["target"], "mode": attack["mode"], "rule": refused.rule,
                "reason": reason}).to_json())
            lost_lines.append(f"{start[cid]['name']}'s {t.attacks[attack['mode']].name} on "
                              f"{defender['name']} is lost, and costs nothing: {reason}.")
            continue
        attacking.append(cid)

    def attack_of(cid: str, dice: DiceSource) -> tuple[Resolution, Outcome]:
        attack = s["pending"][cid]["attack"]
        attacker, defender = start[cid], start[attack["target"]]
        defense_obj = (s["pending"].get(attack["target"]) or {}).get("defense")
        defense = None if defense_obj is None else defense_obj["mode"]
        resolution, out, _ = system.attack(opts, attacker, defender, attack["mode"],
                                           attack["range"], defense, dice)
        return resolution, out

    for i, cid in enumerate(attacking):
        try:
            resolution, out = attack_of(cid, dice)
        except DiceNeeded as short:
            # the segment's later attacks need dice too: ask for them all at once
            raise still_needed(short, [partial(attack_of, later)
                                       for later in attacking[i + 1:]]) from None
        target_id = s["pending"][cid]["attack"]["target"]
        results.append(resolution)
        effects[cid].append(out.on_attacker)
        effects[target_id].append(out.on_defender)
        if _stance(s, cid) == "wave" and cid not in s["wave_used"]:
            s["wave_used"].append(cid)
    events: list[JSON] = lost
    changes = []
    afters = {cid: apply_effects(start[cid], effects[cid]) for cid in s["order"]}
    landed: dict[str, JSON] = copy_json(afters)
    applied = {cid: _applied(effects[cid]) for cid in s["order"]}
    ended = _count_down(s, start, afters, applied, s["segment"])
    # the segment's summary tells each attack's own share, the conditions that ran out
    # (as end_round does), then where all left them
    lines = lost_lines + [r.summary for r in results] or ["No attacks this segment."]
    lines += [t.condition_ended(afters[str(e.combatant)]["name"], e.data["condition"])
              for e in ended]
    results = [_as_in_segment(r, landed, afters) for r in results]
    for cid in s["order"]:
        after = afters[cid]
        if after != start[cid]:
            changes.append({"id": cid, "before": start[cid], "after": after})
            cost = sum(e.attack_cost for e in effects[cid])
            events += [e.to_json() for e in strength_events(start[cid], after, cost)]
        s["combatants"][cid] = after
    events += [e.to_json() for e in ended]
    round_no, segment = s["round"], s["segment"]
    standing = "; ".join(
        f"{s['combatants'][cid]['name']} attack {s['combatants'][cid]['attack_strength']}, "
        f"defense {s['combatants'][cid]['defense_strength']}"
        for cid in s["order"] if s["combatants"][cid]["psionic"])
    summary = f"Round {round_no}, segment {segment}: " + " ".join(lines)
    if standing:
        summary += f" Now: {standing}."
    s["pending"] = {}
    if segment >= SEGMENTS_PER_ROUND:
        events += _end_round(system, s)
        s.update(round=round_no + 1, phase="intent", segment=None, stances={},
                 recorded_combat_strength={}, wave_used=[])
    else:
        s["segment"] = segment + 1
    step: JSON = {"round": round_no, "segment": segment,
                  "results": [r.to_json() for r in results], "events": events,
                  "summary": summary, "combatants": changes}
    unused = dice.unused()
    if unused:
        step["unused_dice"] = unused
    return s, step


def _lost_reason(t: Tables, defender: Mapping[str, Any]) -> str:
    """Why an attack declared on ``defender`` is lost, now that its sheet has changed
    (``check_target`` refused it)."""
    gone = dead(t, defender)
    if gone is not None:
        return t.condition_clause(defender["name"], gone)
    if defender["psionic"]:
        return (f"{defender['name']} is psionic now, and only an attack from a psychic "
                "trance reaches a psionic mind")
    return (f"{defender['name']} is not psionic now, and only {t.attacks[WAVE_MODE].name} "
            "from the wave stance affects a non-psionic mind")


def _as_in_segment(result: Resolution, landed: Mapping[str, JSON],
                   afters: Mapping[str, JSON]) -> Resolution:
    """An attack's record with the states its two sides end the segment in (``afters``,
    its timed conditions counted down too): the segment's attacks land together (seed
    step iii), so where another one struck either side too (``landed``: where the
    attacks alone left each), its ``after`` shows that as well, and its summary, which
    tells this attack's own share, says where the segment left them. A condition that
    ran out is told once, in the step's summary."""
    sides = (result.attacker, result.defender)
    if all(thaw(c.after) == afters[c.id] for c in sides):
        return result
    summary = result.summary
    ends = [c for c in sides if thaw(c.after) != landed[c.id]]
    if ends:
        left = "; ".join(
            f"{afters[c.id]['name']} attack strength {afters[c.id]['attack_strength']}, "
            f"defense strength {afters[c.id]['defense_strength']}" for c in ends)
        summary = f"{summary} With the segment's other attacks: {left}."
    return dataclasses.replace(
        result,
        attacker=Change(result.attacker.id, result.attacker.before, afters[result.attacker.id]),
        defender=Change(result.defender.id, result.defender.before, afters[result.defender.id]),
        summary=summary)


def _applied(effects: list[Effect]) -> dict[str, int]:
    """The timed conditions ``effects`` give, with the most rounds each."""
    out: dict[str, int] = {}
    for effect in effects:
        for condition, rounds in effect.conditions:
            if rounds is not None:
                out[condition] = max(rounds, out.get(condition, 0))
    return out


def _count_down(s: JSON, start: Mapping[str, Any], afters: dict[str, JSON],
                applied: Mapping[str, Mapping[str, int]], segment: int) -> list[Event]:
    """Timed conditions last whole rounds of ten segments from the segment they began in
    (research tables B: "dazed 1d4 rounds"): each loses a round when that segment comes
    round again, and ends when none is left. One that began outside the encounter counts
    at the end of each round. A condition given again (``applied``: this segment's, by
    combatant) for at least the rounds it still had lasts from now, which ends later than
    the old one; for fewer rounds the old one ends later and stands. Changes ``afters``
    (fresh copies) and the state's record of when each condition began
    (``condition_segments``); returns the ``condition-ended`` events."""
    began = s.setdefault("condition_segments", {})
    events = []
    for cid in s["order"]:
        c = afters[cid]
        timed = c["condition_rounds"]
        had = start[cid]["condition_rounds"]
        mine = {k: v for k, v in began.get(cid, {}).items() if k in timed}
        for condition in list(timed):
            # only a condition this segment gave counts as given again: one it did not
            # give, with 0 rounds left, would otherwise be "given again" every segment
            again = applied[cid].get(condition)
            if condition not in had or (again is not None and again >= had[condition]):
                mine[condition] = segment  # (re)applied in this segment
                continue
            if mine.get(condition, SEGMENTS_PER_ROUND) != segment:
                continue
            ended = tick(c, condition)
            if ended is not None:
                mine.pop(condition, None)
                events.append(ended)
        if mine:
            began[cid] = mine
        else:
            began.pop(cid, None)
    return events


def _end_round(system: CombatStrength, s: JSON) -> list[JSON]:
    """The round ends (timed conditions were counted in their segments)."""
    return [Event("round-ended", None, {"round": s["round"]}).to_json()]
