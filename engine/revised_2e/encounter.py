"""Encounter rounds of revised-2e: pure functions over a JSON state the daemon stores.

State (owned here, stored verbatim)::

    {"system": "revised-2e", "round": n, "options": {house-rule overrides},
     "order": [combatant id, ...], "combatants": {id: full combatant},
     "pending": {id: choice}}

A round: every combatant able to act declares in secret (``declare``); ``resolve`` then
(1) rolls any pending Quick MAC, (2) closes the minds that pay to close, (3) raises and
pays every declared defense once, (4) makes the attacks one at a time in the order of
H-2E-ORDER, each against the state the earlier ones left, with the target's defense
already paid, and (5) does the end-of-round bookkeeping (open minds, conditions).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import TYPE_CHECKING, Any

from engine.dice import DiceSource, still_needed
from engine.errors import (
    DiceNeeded,
    InvalidInput,
    LimitExceeded,
    Problem,
    RulesViolation,
    UnknownCombatant,
    json_text,
)
from engine.results import Event
from engine.schemacheck import QuickValidator
from engine.system import schema_problems, swap_combatant

from ..results import copy_json
from . import house
from .combatants import can_act, slug, stopping_conditions
from .exchange import (
    AttackOutcome,
    attack,
    check_attack,
    check_defense,
    close_by_paying,
    declared_cost,
    is_psionic,
    raise_defense,
)
from .rules import attacks_allowed, close_offer, end_of_round, may_close_by_paying, settle_mac
from .text import (
    IN_ENCOUNTERS,
    close_offer_line,
    closes_by_paying,
    defense_line,
    round_end_lines,
)

if TYPE_CHECKING:
    from .system import Revised2e

JSON = dict[str, Any]

MAX_COMBATANTS = 64


def choice_schema(system: Revised2e) -> JSON:
    """JSON Schema of a declared choice: ``attack`` (or ``attacks`` when the round allows
    more than one), ``defense`` and ``close``."""
    one_attack: JSON = {
        "type": "object", "additionalProperties": False, "required": ["mode", "target"],
        "properties": {
            "mode": {"enum": sorted(system.tables.attacks)},
            "multiplier": {"type": "integer", "minimum": 1, "maximum": 100, "default": 1},
            "range": {"enum": ["short", "medium", "long"], "default": "short"},
            "target": {"type": "string", "minLength": 1, "maxLength": 64},
        },
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object", "additionalProperties": False,
        "properties": {
            # null or an object, said this way so errors point inside the object
            "attack": {**one_attack, "type": ["object", "null"]},
            "attacks": {"type": "array", "maxItems": 4, "items": one_attack},
            "defense": {"type": ["object", "null"], "additionalProperties": False,
                        "required": ["mode"],
                        "properties": {"mode": {"enum": sorted(system.tables.defenses)}}},
            "close": {"type": "boolean"},
        },
    }


@cache
def _choice_validator(system: Revised2e) -> QuickValidator:
    return QuickValidator(choice_schema(system), check_schema=False)


def _state(state: Mapping[str, Any]) -> JSON:
    """A deep copy of ``state`` after a check of its outline (it comes from storage)."""
    ok = (isinstance(state, Mapping) and state.get("system") == "revised-2e"
          and isinstance(state.get("round"), int) and isinstance(state.get("order"), list)
          and isinstance(state.get("combatants"), Mapping)
          and isinstance(state.get("pending"), Mapping)
          and isinstance(state.get("options"), Mapping)
          and set(state["order"]) == set(state["combatants"]))
    if not ok:
        raise InvalidInput.at("/state", "not a revised-2e encounter state")
    return copy_json(dict(state))


def new(system: Revised2e, options: Mapping[str, Any] | None) -> JSON:
    """An empty encounter at round 1 with the given house-rule overrides (checked now)."""
    system.options(options)
    return {"system": system.id, "round": 1, "options": dict(options or {}), "order": [],
            "combatants": {}, "pending": {}}


def add(system: Revised2e, state: Mapping[str, Any], combatant: Mapping[str, Any]
        ) -> tuple[JSON, str]:
    """Add a combatant (normalised under the encounter's options). Its id is its own
    ``id`` (which must be new) or the slug of its name made unique with -2, -3 …"""
    s = _state(state)
    if len(s["order"]) >= MAX_COMBATANTS:
        raise LimitExceeded(Problem("/combatant", f"an encounter holds at most "
                                                  f"{MAX_COMBATANTS} combatants"))
    c = system.combatant(combatant, "/combatant", s["options"])
    if isinstance(combatant, Mapping) and combatant.get("id"):
        if c["id"] in s["combatants"]:
            raise InvalidInput.at("/combatant/id",
                                  f"{json_text(c['id'])} is already in the encounter")
    else:
        base = slug(c["name"])
        cid, n = base, 2
        while cid in s["combatants"]:
            suffix = f"-{n}"
            cid = base[:64 - len(suffix)] + suffix
            n += 1
        c["id"] = cid
    s["combatants"][c["id"]] = c
    s["order"].append(c["id"])
    return s, c["id"]


def replace(system: Revised2e, state: Mapping[str, Any], combatant_id: str,
            combatant: Mapping[str, Any]) -> JSON:
    """``combatant_id`` taken again from ``combatant`` under the encounter's options.
    Every declared choice is checked again against the combatants as they are now, in
    the order they were declared; one the rules no longer allow (a mode the sheet no
    longer knows, PSPs it no longer holds, a stun) is dropped, and its combatant must
    declare again."""
    s = _state(state)
    c = system.combatant({**combatant, "id": combatant_id}, "/combatant", s["options"])
    swap_combatant(s, combatant_id, c)
    pending, s["pending"] = s["pending"], {}
    for cid, choice in pending.items():
        try:
            s = declare(system, s, cid, choice)
        except (RulesViolation, InvalidInput, UnknownCombatant):
            continue
    return s


def _allowed(system: Revised2e, s: Mapping[str, Any], c: Mapping[str, Any]) -> int:
    options = system.options(s["options"])
    return attacks_allowed(system.tables, c["kind"], c["level"], s["round"],
                           options[house.THREE_PER_TWO])


def _able_to_act(system: Revised2e, s: Mapping[str, Any], c: Mapping[str, Any]) -> bool:
    """Whether ``c`` has any choice to make this round: it must be free to act and have a
    psionic mind with some legal use of its PSPs (close, a defense, or an attack). A stun
    stops closing and defenses, as ``declare`` holds, whatever H-2E-STUN says of attacks."""
    t = system.tables
    options = system.options(s["options"])
    if not is_psionic(c) or not can_act(c, options[house.STUN]):
        return False
    if can_act(c, stun_stops=True):
        if may_close_by_paying(t, c, options) is not None:
            return True
        if any(t.defense_cost(d) <= c["psp"] for d in c["defenses"]):
            return True
    has_target = len(s["order"]) > 1
    return has_target and _allowed(system, s, c) > 0 and any(
        t.attack_cost(a) <= c["psp"] for a in c["attacks"])


def waiting_for(system: Revised2e, state: Mapping[str, Any]) -> list[str]:
    """Ids (in listed order) of combatants able to act that have not declared."""
    s = _state(state)
    return [cid for cid in s["order"]
            if cid not in s["pending"] and _able_to_act(system, s, s["combatants"][cid])]


def view(system: Revised2e, state: Mapping[str, Any]) -> JSON:
    """What anyone may see: round, combatants' current state, who must still choose and
    who has declared; never a declared choice."""
    s = _state(state)
    return {
        "phase": "round",
        "round": s["round"],
        "order": list(s["order"]),
        "combatants": {cid: s["combatants"][cid] for cid in s["order"]},
        "waiting_for": waiting_for(system, s),
        "declared": [cid for cid in s["order"] if cid in s["pending"]],
        "attacks_allowed": {cid: _allowed(system, s, s["combatants"][cid])
                            for cid in s["order"]},
        "close_offers": _close_offers(system, s),
        "options": system.options(s["options"]),
    }


def _close_offers(system: Revised2e, s: Mapping[str, Any]) -> JSON:
    """For each combatant whose mind a critical hit opened last round, what declaring
    ``close`` this round costs and whether it may (``rules.close_offer``; ``cannot-act``
    when a condition stops it: a stun always stops closing, as ``declare`` holds, whatever
    H-2E-STUN says of attacks)."""
    options = system.options(s["options"])
    offers: JSON = {}
    for cid in s["order"]:
        c = s["combatants"][cid]
        offer = close_offer(system.tables, c, options)
        if offer is None:
            continue
        if stopping_conditions(c, stun_stops=True):
            offer |= {"payable": False, "reason": "cannot-act"}
        offers[cid] = offer
    return offers


def _attacks_of(choice: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    if choice.get("attacks") is not None:
        return list(choice["attacks"])
    return [choice["attack"]] if choice.get("attack") else []


def pending_choices(state: Mapping[str, Any]) -> JSON:
    """The declared choices the next resolve uses, by combatant id
    (``System.encounter_pending_choices``)."""
    return dict(state["pending"])


def declare(system: Revised2e, state: Mapping[str, Any], combatant_id: str,
            choice: Mapping[str, Any]) -> JSON:
    """Record ``combatant_id``'s secret choice for this round, checked now against the
    rules (mode known, multiplier, range, attacks allowed this round, the PSPs for all
    of it together). Declaring again replaces the earlier choice."""
    s = _state(state)
    if combatant_id not in s["combatants"]:
        raise UnknownCombatant(combatant_id, "/combatant_id")
    problems = schema_problems(_choice_validator(system), choice, "/choice")
    if problems:
        raise InvalidInput(problems)
    if choice.get("attack") and choice.get("attacks") is not None:
        raise InvalidInput.at("/choice", "give attack or attacks, not both")
    c = s["combatants"][combatant_id]
    attacks = _attacks_of(choice)
    options = system.options(s["options"])
    # A stun stops defenses and closing; attacks only under H-2E-STUN.
    defends = bool(choice.get("defense") or choice.get("close"))
    stopped = stopping_conditions(c, stun_stops=True) if defends else \
        stopping_conditions(c, options[house.STUN]) if attacks else []
    if stopped:
        raise RulesViolation("cannot-act", f"{c['name']} cannot act this round "
                                           f"({', '.join(stopped)})")
    allowed = _allowed(system, s, c)
    if len(attacks) > allowed:
        raise RulesViolation("too-many-attacks", f"{c['name']} may make {allowed} "
                                                 f"attack(s) in round {s['round']}")
    t = system.tables
    total = 0
    key = "attacks" if choice.get("attacks") is not None else "attack"
    for i, a in enumerate(attacks):
        where = f"/choice/attacks/{i}/target" if key == "attacks" else "/choice/attack/target"
        target = s["combatants"].get(a["target"])
        if target is None:
            raise UnknownCombatant(str(a["target"]), where)
        check_attack(t, c, target, a, options[house.STUN])
        total += declared_cost(t, a)
    if choice.get("close"):
        offer = close_offer(t, c, options)
        if offer is None or not offer["payable"]:
            raise RulesViolation("cannot-close", close_offer_line(t, c["name"], offer,
                                                                  IN_ENCOUNTERS))
        total += offer["cost"]
    if choice.get("defense"):
        check_defense(t, c, choice["defense"]["mode"], paid=False)
        total += t.defense_cost(choice["defense"]["mode"])
    if total > c["psp"]:
        raise RulesViolation("not-enough-psp", f"{c['name']} declares {total} PSPs in all "
                                               f"but holds {c['psp']}")
    s["pending"][combatant_id] = copy_json(dict(choice))
    return s


def _order(system: Revised2e, s: JSON, dice: DiceSource, options: Mapping[str, Any]
           ) -> tuple[list[tuple[str, Mapping[str, Any]]], list[Event]]:
    """The round's attacks in resolution order (H-2E-ORDER)."""
    listed = [(cid, a) for cid in s["order"] for a in _attacks_of(s["pending"].get(cid, {}))]
    if options[house.ORDER] == "listed" or not listed:
        return listed, []
    penalty = int(system.tables.open_mind["initiative_penalty"])
    events: list[Event] = []
    initiative: dict[str, int] = {}
    for cid in s["order"]:
        if _attacks_of(s["pending"].get(cid, {})):
            c = s["combatants"][cid]
            sides = int(system.tables.raw["initiative"]["sides"])
            roll = dice.roll("initiative", sides, cid)
            initiative[cid] = roll + (penalty if "initiative-penalty" in c["conditions"] else 0)
            events.append(Event("initiative", cid, {"roll": roll, "total": initiative[cid]}))
    rank = {cid: i for i, cid in enumerate(s["order"])}
    listed.sort(key=lambda pair: (initiative[pair[0]], rank[pair[0]]))
    return listed, events


def resolve(system: Revised2e, state: Mapping[str, Any], dice: DiceSource,
            force: bool = False) -> tuple[JSON, JSON]:
    """Resolve the round. Without ``force`` every combatant able to act must have declared
    (else RulesViolation ``choices-missing``); with it a missing choice is no attack and no
    defense. Returns the new state and the step ``{round, results, events, summary, rolls,
    changes, unused_dice}``; ``events`` are the round's own (defenses, closing, lost attacks,
    end-of-round checks), each result carries its attack's events."""
    system.check_dice(dice)
    s = _state(state)
    missing = waiting_for(system, s)
    if missing and not force:
        raise RulesViolation("choices-missing", f"still waiting for {', '.join(missing)}")
    t = system.tables
    options = system.options(s["options"])
    start = dice.mark()
    before = copy_json(s["combatants"])
    cs: JSON = s["combatants"]
    events: list[Event] = []
    lines: list[str] = []
    for cid in s["order"]:
        if cs[cid].get("mac") is None and cs[cid].get("quick_mac") is not None:
            cs[cid] = settle_mac(t, cs[cid], dice, options)
            events.append(Event("mac-rolled", cid, {"mac": cs[cid]["mac"]}))
    for cid in s["order"]:
        choice = s["pending"].get(cid, {})
        cost = may_close_by_paying(t, cs[cid], options) if choice.get("close") else None
        if cost is not None:
            events += close_by_paying(cs[cid], cost)
            lines.append(closes_by_paying(cs[cid]["name"], cost))
    raised: dict[str, str] = {}
    for cid in s["order"]:
        defense = s["pending"].get(cid, {}).get("defense")
        c = cs[cid]
        cost = t.defense_cost(defense["mode"]) if defense else 0
        if defense and is_psionic(c) and c["psp"] >= cost:
            raised[cid] = defense["mode"]
            paying = raise_defense(t, c, defense["mode"], paid=False)
            events += paying
            # said here, once: the attacks see a mind already open (errata: "A mind
            # with 0 PSPs is open")
            opened = any(e.type == "mind-opened" for e in paying)
            lines.append(defense_line(t, c["name"], defense["mode"], cost, opened))
    attacks, order_events = _order(system, s, dice, options)
    events += order_events
    results = []

    def lost(attacker: Mapping[str, Any], a: Mapping[str, Any]) -> str | None:
        """Why ``attacker``'s declared attack ``a`` is lost, if it is: dazed and confused
        always stop an attack, a stun only under H-2E-STUN; PSPs spent since."""
        stopped = stopping_conditions(attacker, options[house.STUN])
        if stopped:
            return f"{attacker['name']} is {', '.join(stopped)}"
        if attacker["psp"] < declared_cost(t, a):
            return f"{attacker['name']} no longer holds the {declared_cost(t, a)} PSPs declared"
        return None

    def attack_of(cid: str, a: Mapping[str, Any], dice: DiceSource) -> AttackOutcome:
        request = {k: v for k, v in a.items() if k != "target"}
        return attack(t, options, cs[cid], cs[a["target"]], request, raised.get(a["target"]),
                      dice)

    def counting(cid: str, a: Mapping[str, Any]) -> Callable[[DiceSource], object]:
        """A later attack's dice, as ``still_needed`` counts them (none when it is lost)."""
        return lambda dice: None if lost(cs[cid], a) else attack_of(cid, a, dice)

    for i, (cid, a) in enumerate(attacks):
        attacker, target = cs[cid], cs[a["target"]]
        reason = lost(attacker, a)
        if reason is not None:
            events.append(Event("attack-lost", cid, {"target": a["target"], "reason": reason}))
            lines.append(f"{attacker['name']}'s {t.mode_name(a['mode'])} is lost: {reason}.")
            continue
        mark = dice.mark()
        try:
            outcome = attack_of(cid, a, dice)
        except DiceNeeded as short:
            # the round's later attacks need dice too: ask for them all at once (RULES.md
            # 4: the count still needed), counted from the states as they are now
            raise still_needed(short, [counting(c, later) for c, later in attacks[i + 1:]]
                               ) from None
        # the target's defense was paid when raised at the start of the round
        result = system.resolution(attacker, target, outcome, (), dice, mark, {},
                                   {"defense_psp": 0})
        cs[cid], cs[a["target"]] = outcome.attacker, outcome.defender
        results.append(result.to_json())
        lines.append(result.summary)
    for cid in s["order"]:
        cs[cid], more = end_of_round(t, cs[cid], dice, options)
        events += more
        lines += round_end_lines(cs[cid]["name"], more, IN_ENCOUNTERS,
                                 close_offer(t, cs[cid], options))
    number = s["round"]
    s["round"] = number + 1
    s["pending"] = {}
    step = {
        "round": number,
        "results": results,
        "events": [e.to_json() for e in events],
        "summary": f"Round {number}: " + (" ".join(lines) if lines else "nothing happens."),
        "rolls": [r.to_json() for r in dice.rolls_since(start)],
        "changes": [{"id": cid, "before": before[cid], "after": cs[cid]}
                    for cid in s["order"] if before[cid] != cs[cid]],
        "unused_dice": dice.unused(),
    }
    return s, step
