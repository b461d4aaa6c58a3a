"""Encounter round logic for power-pool: pure functions over a JSON state.

A step is one exchange (API.md "Encounters"). In the ``attack`` phase anyone who can
still attack this round may declare ``{"attack": {mode, target, targets?, pool_dice?,
keep_by?, perceives?}}`` or ``{"pass": true}``; once an attack is declared the phase is
``defense`` and the struck creatures (a controlled target's controller in its place)
declare ``{"defense": {mode?, pool_dice?, sacrifice?, allies?: [id]}}``. A psionic
creature that is not struck may join with ``{"defense": {"mode": "imagination-swarm"}}``,
or say it stays out with ``{"defense": {"mode": null}}`` (``{"defense": {}}``): both are
secret, so that having declared tells nobody which.
Public actions apply at once, between exchanges: ``{"pass": true}``, ``{"release": id}``,
``{"keep": {target, by}}``, ``{"cannot_perceive": id}`` (the controller can no longer
perceive that creature: a link kept by action ends, one kept by a die holds),
``{"rest": true}`` (a long rest: its control kept by an action ends, then
``control.long_rest``). The attacker may declare again to change its attack before
resolution (the defenses then start over).

Seed 001: "Psionic combat occurs in normal initiative order"; a round ends when
nobody is left who can attack this round, and timed conditions (``condition_rounds``:
the number of round ends they still last) tick down then.

State: ``{system, options, round, exchange, order, combatants: {id: combatant},
acted: [id], pending: null | {attacker, attack, defenses: {id: defense},
joins: {id: defense}, stayed_out?: [id]}}`` (``stayed_out`` is absent from states stored
before a creature could say it stays out).

Refusals name places in the choice (``/choice/attack/mode``, ``/choice/defense/allies/0``),
not in the exchange request the choices make (``_in_choice_terms``); a creature the
choice does not name (a target's controller, a creature under control, which the
encounter adds to the exchange itself) is named as the encounter holds it,
``/combatants/<id>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any

from ..dice import MAX_DICE_PER_POOL, DiceSource
from ..errors import (
    InvalidInput,
    LimitExceeded,
    Problem,
    RulesViolation,
    UnknownCombatant,
    json_text,
    pointer,
)
from ..options import resolve_options
from ..results import Event, copy_json, thaw
from ..schemacheck import QuickValidator
from ..system import JSON, is_down, schema_problems, swap_combatant
from . import control
from .combatant import slug
from .exchange import HOUSE_RULES, SYSTEM_ID, Plan, unable_to_attack

if TYPE_CHECKING:
    from .core import PowerPoolSystem

MAX_COMBATANTS = 64

#: a combatant id in a choice
ID_SCHEMA: JSON = {"type": "string", "minLength": 1, "maxLength": 64}
CHOICE_SCHEMA: JSON = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "minProperties": 1,
    "maxProperties": 1,
    "additionalProperties": False,
    "properties": {
        "attack": {
            "type": "object", "required": ["mode", "target"], "additionalProperties": False,
            "properties": {
                "mode": {"type": "string"},
                "target": ID_SCHEMA,
                "targets": {"type": "array", "maxItems": 63, "uniqueItems": True,
                            "items": ID_SCHEMA},
                "pool_dice": {"type": "integer", "minimum": 0},
                "keep_by": {"enum": ["action", "die"]},
                "perceives": {"type": "boolean"},
                "decline": {"type": "array", "maxItems": 8, "uniqueItems": True,
                            "items": {"type": "string", "maxLength": 64}},
            },
        },
        "defense": {
            # null is no defense mode, as in exchange.resolve: {"mode": null}
            "type": ["object", "null"], "additionalProperties": False,
            "properties": {
                "mode": {"type": ["string", "null"]},
                "pool_dice": {"type": "integer", "minimum": 0},
                # as in exchange.resolve: one schema, so errors name the level and bound
                "sacrifice": {
                    "type": ["integer", "array"], "minimum": 1, "maximum": 9,
                    "maxItems": 200, "items": {"type": "integer", "minimum": 1, "maximum": 9}},
                "allies": {"type": "array", "maxItems": 63, "uniqueItems": True,
                           "items": ID_SCHEMA},
            },
        },
        "pass": {"const": True},
        "release": ID_SCHEMA,
        "keep": {"type": "object", "required": ["target", "by"], "additionalProperties": False,
                 "properties": {"target": ID_SCHEMA, "by": {"enum": ["die", "action"]}}},
        "cannot_perceive": ID_SCHEMA,
        "rest": {"const": True},
        "stance": {"type": "null", "description": "not used by power-pool"},
    },
}


#: choices that apply at once when declared, in everyone's sight
PUBLIC_ACTIONS = frozenset({"pass", "release", "keep", "cannot_perceive", "rest"})

#: what a creature that stays out of a defense has pending (``pending_choices``)
STAYS_OUT: JSON = {"stays_out": True}


@cache
def _choice_validator() -> QuickValidator:
    return QuickValidator(CHOICE_SCHEMA, check_schema=False)


def new(system: PowerPoolSystem, options: Mapping[str, Any] | None) -> JSON:
    """An empty encounter in round 1 (``options`` checked now, stored as given)."""
    resolve_options(HOUSE_RULES, options)
    return {"system": SYSTEM_ID, "options": dict(options or {}), "round": 1, "exchange": 0,
            "order": [], "combatants": {}, "acted": [], "pending": None}


def _copy(state: Mapping[str, Any]) -> JSON:
    out: JSON = copy_json(thaw(state))
    return out


def add(system: PowerPoolSystem, state: Mapping[str, Any], raw: Mapping[str, Any]
        ) -> tuple[JSON, str]:
    """The state with one more combatant, and its id (at most 64 per encounter)."""
    out = _copy(state)
    if len(out["order"]) >= MAX_COMBATANTS:
        raise LimitExceeded(Problem("/combatant", (
            f"an encounter holds at most {MAX_COMBATANTS} combatants")))
    c = system.combatant(raw, "/combatant")
    if isinstance(raw, Mapping) and raw.get("id"):
        if c["id"] in out["combatants"]:
            raise InvalidInput.at("/combatant/id",
                                  f"{json_text(c['id'])} is already in the encounter")
    else:
        base, n = slug(c["name"]), 2
        while c["id"] in out["combatants"]:
            suffix = f"-{n}"
            c["id"] = base[:64 - len(suffix)] + suffix
            n += 1
    out["combatants"][c["id"]] = c
    out["order"].append(c["id"])
    return out, str(c["id"])


def replace(system: PowerPoolSystem, state: Mapping[str, Any], combatant_id: str,
            combatant: Mapping[str, Any]) -> JSON:
    """``combatant_id`` taken again from ``combatant`` (who has acted this round stays).
    A pending exchange is declared again against the combatants as they are now: when
    the rules no longer allow its attack, the exchange is dropped and the attacker must
    declare again; a defense or join they no longer allow is dropped alone."""
    out = _copy(state)
    swap_combatant(out, combatant_id, system.combatant({**combatant, "id": combatant_id},
                                                       "/combatant"))
    pending, out["pending"] = out["pending"], None
    if pending is None:
        return out
    choices = [(pending["attacker"], {"attack": pending["attack"]})]
    choices += [(cid, {"defense": d}) for cid, d in pending["defenses"].items()]
    for cid, choice in choices:
        try:
            out = declare(system, out, cid, choice)
        except (RulesViolation, InvalidInput, UnknownCombatant):
            if "attack" in choice:
                return out
    # A bystander's answer, join or stay out, is secret: a join the sheets no longer
    # allow becomes a stay-out rather than being dropped, so that what is dropped never
    # tells the two apart. One struck now (it took control of a target) answers again:
    # "no mode" would read as its own defense.
    stay_out: JSON = {"defense": {}}
    answers: list[tuple[str, JSON]] = [(cid, {"defense": d})
                                       for cid, d in pending["joins"].items()]
    answers += [(cid, stay_out) for cid in pending.get("stayed_out", [])]
    for cid, choice in answers:
        if out["pending"] is None or cid in _struck(out, out["pending"]):
            continue
        for answer in (choice, stay_out):
            try:
                out = declare(system, out, cid, answer)
                break
            except (RulesViolation, InvalidInput, UnknownCombatant):
                continue
    return out


def _can_attack(system: PowerPoolSystem, state: Mapping[str, Any], cid: str,
                declaring: bool = False) -> str | None:
    """Why ``cid`` cannot attack now, or ``None`` if it can. A creature with no die in
    its pool (a puppet set free, one whose every die is dedicated) has nothing to roll:
    it is not waited for, and the round does not stop for it each time. Under the
    default H-PP-TIE it could only lose, and its attack is refused; when ties go to the
    attacker it wins against defenders that roll nothing too, so it may still declare
    one (``declaring``), as ``exchange.resolve`` takes it."""
    c = state["combatants"][cid]
    if cid in state["acted"]:
        return "has already attacked or passed this round"
    if not c["psionic"] or not c["attacks"]:
        return "knows no attack mode"
    why = unable_to_attack(system.tables, c)
    if why is None and c["pool"] < 1 and not (
            declaring and system.options(state["options"])["H-PP-TIE"] == "attacker"):
        why = ("has no die left in its power pool (a long rest gives dice back)"
               if not c["dedicated"] else
               "has no die left in its power pool: every one is dedicated")
    return why


def _targets(pending: Mapping[str, Any]) -> list[str]:
    """The creatures the pending attack names."""
    return [pending["attack"]["target"], *pending["attack"].get("targets", [])]


def _struck(state: Mapping[str, Any], pending: Mapping[str, Any]) -> list[str]:
    """Who defends against the pending attack: each target, or its controller."""
    out: list[str] = []
    for tid in _targets(pending):
        c = state["combatants"][tid]
        cid = c["controlled_by"] if c["controlled_by"] in state["combatants"] else tid
        if cid not in out:
            out.append(cid)
    return out


def _can_choose(system: PowerPoolSystem, c: Mapping[str, Any]) -> bool:
    """A defender that is unaware and knows no mode that works so rolls nothing and has
    no choice to make; nor has one at 0 hit points or fewer (it is not waited for)."""
    if is_down(c):
        return False
    unaware = any(x in system.tables["awareness_conditions"] for x in c["conditions"])
    if not unaware:
        return True
    return any(system.tables["modes"][m].get("defends_while_unaware") for m in c["defenses"])


def waiting_for(system: PowerPoolSystem, state: Mapping[str, Any]) -> list[str]:
    """Attack phase: who can still attack or pass; defense phase: struck creatures that
    have a choice and have not made it."""
    pending = state["pending"]
    if pending is None:
        return [cid for cid in state["order"] if _can_attack(system, state, cid) is None]
    return [cid for cid in _struck(state, pending)
            if cid not in pending["defenses"] and _can_choose(system, state["combatants"][cid])]


def view(system: PowerPoolSystem, state: Mapping[str, Any]) -> JSON:
    """The public state: no pending attack mode or defense in it. In the defense phase
    ``struck`` names the minds that defend (each target, or its controller in its place;
    the first leads the group), as ``waiting_for`` does for those still to choose, so
    that a creature may join their defense by its own choice; ``[]`` otherwise."""
    pending = state["pending"]
    return {
        "system": SYSTEM_ID,
        "phase": "attack" if pending is None else "defense",
        "round": state["round"],
        "exchange": state["exchange"],
        "options": system.options(state["options"]),
        "order": list(state["order"]),
        "combatants": copy_json(thaw(state["combatants"])),
        "acted": list(state["acted"]),
        "waiting_for": waiting_for(system, state),
        "struck": [] if pending is None else _struck(state, pending),
        "declared": [] if pending is None else sorted(
            [pending["attacker"], *pending["defenses"], *pending["joins"],
             *pending.get("stayed_out", [])]),
    }


def _request(state: Mapping[str, Any], pending: Mapping[str, Any]) -> JSON:
    """The ``exchange.resolve`` request the pending choices make."""
    cs = state["combatants"]
    attack = dict(pending["attack"])
    targets = [attack.pop("target"), *attack.pop("targets", [])]
    struck = _struck(state, pending)
    defenses = {k: {x: y for x, y in v.items() if x != "allies"}
                for k, v in pending["defenses"].items()}
    principal = struck[0]
    ally_ids = list(pending["defenses"].get(principal, {}).get("allies", []))
    ally_ids += [j for j in pending["joins"] if j not in ally_ids]
    others = {k: v for k, v in defenses.items() if k != principal}
    others.update({k: dict(v) for k, v in pending["joins"].items()})
    controllers = [cs[c["controlled_by"]] for t in targets
                   if (c := cs[t])["controlled_by"] in cs]
    # every other controlled creature goes along, to be set free if its control ends
    taking_part = {pending["attacker"], *targets, *ally_ids}
    return {
        "attacker": cs[pending["attacker"]],
        "defender": cs[targets[0]],
        "defenders": [cs[t] for t in targets[1:]],
        "attack": attack,
        "defense": defenses.get(principal),
        "defenses": others,
        "allies": [cs[a] for a in ally_ids],
        "controllers": controllers,
        "puppets": [c for cid, c in cs.items()
                    if c["controlled_by"] and cid not in taking_part],
        "options": dict(state["options"]),
    }


def _check_ids(state: Mapping[str, Any], ids: list[str], path: str) -> None:
    for i, cid in enumerate(ids):
        if cid not in state["combatants"]:
            raise UnknownCombatant(cid, f"{path}/{i}")


def pending_choices(state: Mapping[str, Any]) -> JSON:
    """The declared choices the next resolve uses, by combatant id: the pending attack
    and the defenses and joins declared against it (``System.encounter_pending_choices``;
    public actions apply when declared and are never pending)."""
    pending = state["pending"]
    if pending is None:
        return {}
    return {pending["attacker"]: pending["attack"], **pending["defenses"],
            **pending["joins"], **{cid: STAYS_OUT for cid in pending.get("stayed_out", [])}}


def _choice_places(state: Mapping[str, Any], pending: Mapping[str, Any], cid: str,
                   kind: str) -> list[tuple[str, str]]:
    """Where the places of the exchange request ``_request`` makes of ``pending`` are in
    ``cid``'s ``kind`` choice (``attack`` or ``defense``): ``(request place, choice
    place)``, the longer first."""
    if kind == "attack":
        targets = pending["attack"].get("targets", [])
        return [*[(f"/defenders/{i}", f"/choice/attack/targets/{i}")
                  for i in range(len(targets))],
                ("/defenders", "/choice/attack/targets"), ("/defender", "/choice/attack/target"),
                ("/attack", "/choice/attack")]
    struck = _struck(state, pending)
    places: list[tuple[str, str]] = []
    if struck and cid == struck[0]:
        allies = pending["defenses"].get(cid, {}).get("allies", [])
        places += [(f"/allies/{i}", f"/choice/defense/allies/{i}") for i in range(len(allies))]
        places.append(("/defense", "/choice/defense"))
    else:
        leader = pending["defenses"].get(struck[0], {}) if struck else {}
        allies = list(leader.get("allies", []))
        allies += [j for j in pending["joins"] if j not in allies]
        if cid in allies:
            places.append((f"/allies/{allies.index(cid)}", "/choice/defense"))
        places.append((pointer("/defenses", cid), "/choice/defense"))
    return places


def _moved(places: list[tuple[str, str]], path: str) -> str:
    """The request place ``path`` as the choice's place (``places``, the longer first);
    a creature's ``/id`` in the request is the id the choice names. Unchanged when no
    place holds it."""
    for old, new in places:
        if path == old or path.startswith(old + "/"):
            rest = path[len(old):]
            return new + ("" if rest == "/id" and _A_CREATURE.fullmatch(old) else rest)
    return path


def _in_choice_terms(places: list[tuple[str, str]], text: str,
                     names: Sequence[str] = ()) -> str:
    """``text``, a sentence, with each request place of ``places`` it names given as
    the choice's place. A place ends where the text goes on with something that cannot
    be in one (``:``, a blank, ``;``, ``,``, ``)``): ids are free text, so a place found
    as a word would match the start of a longer id. Names are free text too: a place
    inside one of ``names`` (the creatures', "B /defender") is part of that name and
    is left as it is."""
    if not places:
        return text
    named = "|".join(re.escape(old) for old, _ in sorted(places, key=lambda p: -len(p[0])))
    pattern = re.compile(rf"(?<![\w/])(?:{named})(?:/[^\s:;,)]*)?(?=[\s:;,)]|$)")
    # only a name holding a "/" can hold a place
    in_names = [m.span() for name in set(names) if "/" in name
                for m in re.finditer(re.escape(name), text)]

    def moved(m: re.Match[str]) -> str:
        if any(start <= m.start() < end for start, end in in_names):
            return m.group(0)
        return _moved(places, m.group(0))

    return pattern.sub(moved, text)


#: request places that hold a creature, named in a choice by its id
_A_CREATURE = re.compile(r"/(?:defender|defenders/\d+|allies/\d+)")


def _places(state: Mapping[str, Any], pending: Mapping[str, Any], cid: str, kind: str,
            request: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``_choice_places``, then each other place of ``request`` that holds a creature
    (the attacker, a target the choice does not name, the controllers and puppets the
    encounter adds) as that combatant in the encounter, ``/combatants/<id>`` (a JSON
    Pointer into the encounter's ``combatants``, as ``encounter.view`` gives them): a
    stale control link of a target's controller is told by the id the caller knows it
    by, not at ``/controllers/0``, which it never wrote."""
    places = _choice_places(state, pending, cid, kind)
    mapped = {old for old, _ in places}
    return places + [(place, pointer("/combatants", str(c["id"])))
                     for place, c in _creatures(request) if place not in mapped]


def _creatures(request: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Each creature of the exchange ``request`` (an encounter's, ``_request``: stored
    combatants, each with its id and name) with its place there."""
    creatures = [("/attacker", request["attacker"]), ("/defender", request["defender"])]
    for member in ("defenders", "allies", "controllers", "puppets"):
        creatures += [(f"/{member}/{i}", c) for i, c in enumerate(request.get(member) or [])]
    return creatures


def _plan_in_choice_terms(system: PowerPoolSystem, state: Mapping[str, Any],
                          candidate: Mapping[str, Any], cid: str, kind: str) -> None:
    """``system.plan`` of the exchange ``candidate`` makes; a refusal names the places
    in ``cid``'s choice (an encounter's caller never wrote ``/defenses/x`` or
    ``/allies/0/id``), and the creatures the choice does not name by their ids
    (``_places``). Choices are planned as secret choices (``build_plan``): what a
    choice makes only with others' (the group's dice, a wave kept by a die each, which
    the targets' modes and the joins decide) is settled when the exchange is resolved,
    never refused to it; what it makes alone is (``_own_dice``). A defense is planned as
    ``cid`` knows the exchange (``_known_to``)."""
    if kind == "defense":
        candidate = _known_to(candidate, cid)
    request = _request(state, candidate)
    try:
        plan = system.plan(request, secret_choices=True)
        if kind == "defense":
            _own_dice(plan, cid)
    except RulesViolation as exc:
        places = _places(state, candidate, cid, kind, request)
        names = [str(c["name"]) for _, c in _creatures(request)]
        # an encounter's exchange takes its controllers from the encounter
        detail = exc.detail.replace("give it in /controller", "add it to the encounter")
        raise RulesViolation(exc.rule, _in_choice_terms(places, detail, names),
                             exc.combatant) from None
    except InvalidInput as exc:
        places = _places(state, candidate, cid, kind, request)
        names = [str(c["name"]) for _, c in _creatures(request)]
        moved = [Problem(_moved(places, p.path), _in_choice_terms(places, p.message, names))
                 for p in exc.problems]
        raise type(exc)(moved) from None


def _known_to(pending: Mapping[str, Any], cid: str) -> JSON:
    """``pending`` as ``cid``, declaring a defense or a join, knows it: the struck minds
    (public, the view's ``struck``) and its own answer, without the others' secret
    defenses and joins (a struck mind that has not answered defends with its whole pool
    and no mode, as a forced resolve takes it). Whether a declaration is refused, and
    in which words, then never depends on what another side chose in secret (a first
    mind's allies were refused in words telling whether another struck mind used
    imagination-swarm)."""
    return {**pending,
            "defenses": {k: v for k, v in pending["defenses"].items() if k == cid},
            "joins": {k: v for k, v in pending["joins"].items() if k == cid}}


def _own_dice(plan: Plan, cid: str) -> None:
    """Refuse (``LimitExceeded``) the first mind ``cid`` whose own dice and its allies'
    are over the dice limit: that total is its choice alone, and it can lower it. A
    total the others' choices make is capped when resolved (``group-dice-capped``)."""
    lead = plan.principal
    if lead.id != cid:
        return
    own = lead.dice + sum(s.dice for s in plan.members if s.drawn_in)
    if own > MAX_DICE_PER_POOL:
        raise LimitExceeded(Problem("/defense", (
            f"{lead.combatant['name']} and the allies it draws in would roll {own} dice; "
            f"the limit is {MAX_DICE_PER_POOL}")))


def declare(system: PowerPoolSystem, state: Mapping[str, Any], cid: str,
            choice: Mapping[str, Any]) -> JSON:
    """The state with ``cid``'s choice recorded (checked against the rules now)."""
    return _declare(system, state, cid, choice)[0]


def _declare(system: PowerPoolSystem, state: Mapping[str, Any], cid: str,
             choice: Mapping[str, Any]) -> tuple[JSON, list[Event], list[str]]:
    """``declare``, with what a public action did: its events and the summary's
    sentences (``_act``; none for a secret choice)."""
    out = _copy(state)
    if cid not in out["combatants"]:
        raise UnknownCombatant(cid, "/combatant_id")
    problems = schema_problems(_choice_validator(), dict(choice), "/choice")
    if problems:
        raise InvalidInput(problems)
    pending = out["pending"]
    cs = out["combatants"]
    for member, named in (("release", choice.get("release")),
                          ("keep/target", (choice.get("keep") or {}).get("target")),
                          ("cannot_perceive", choice.get("cannot_perceive"))):
        if named is not None and named not in cs:
            raise UnknownCombatant(str(named), f"/choice/{member}")
    if "attack" in choice:
        attack = copy_json(dict(choice["attack"]))
        if pending is not None and pending["attacker"] != cid:
            raise RulesViolation("exchange-pending", (
                "an attack is already declared; resolve that exchange first"))
        # the attacker may change its mind before resolution: the defenses start over
        out["pending"] = None
        why = _can_attack(system, out, cid, declaring=True)
        if why:
            raise RulesViolation("cannot-attack", f"{cs[cid]['name']} {why}")
        _check_ids(out, [attack["target"]], "/choice/attack/target")
        _check_ids(out, attack.get("targets", []), "/choice/attack/targets")
        if cid == attack["target"] or cid in attack.get("targets", []):
            raise RulesViolation("target-self", f"{cs[cid]['name']} cannot attack itself")
        candidate: JSON = {"attacker": cid, "attack": attack, "defenses": {}, "joins": {},
                           "stayed_out": []}
        _plan_in_choice_terms(system, out, candidate, cid, "attack")
        out["pending"] = candidate
    elif "defense" in choice:
        defense = copy_json(dict(choice["defense"] or {}))
        if pending is None:
            raise RulesViolation("no-attack-pending", "nobody has attacked yet")
        _check_ids(out, defense.get("allies", []), "/choice/defense/allies")
        candidate = copy_json(pending)
        stayed_out: list[str] = candidate.setdefault("stayed_out", [])
        if cid in stayed_out:
            stayed_out.remove(cid)
        struck = _struck(out, pending)
        if cid in struck:
            if defense.get("allies") and cid != struck[0]:
                # _request takes the allies of the group's leader only: refuse, never ignore
                raise RulesViolation("allies-first-mind-only", (
                    f"only {cs[struck[0]]['name']}, struck first, draws allies into the "
                    "defending group of this psionic wave"), combatant=cid)
            named = {pending["attacker"], *struck, *_targets(pending)}
            for i, ally in enumerate(defense.get("allies", [])):
                # Decided on what everyone knows: were it judged with the joins, naming
                # a psionic bystander would tell whether it had joined in secret. The
                # attacker and the creatures it attacks are refused by the rules
                # (ally-attacker, ally-struck).
                if cs[ally]["psionic"] and ally not in named:
                    raise RulesViolation("ally-psionic", (
                        f"/choice/defense/allies/{i}: {cs[ally]['name']} is psionic: it is "
                        "not drawn in, it joins the defense by its own choice "
                        "(imagination-swarm)"), combatant=ally)
            candidate["defenses"][cid] = defense
        elif cid == pending["attacker"]:
            raise RulesViolation("not-defending", "the attacker does not defend")
        elif defense.get("mode") and system.tables["modes"].get(
                defense["mode"], {}).get("draws_allies") and cs[cid]["psionic"]:
            if defense.get("allies"):
                raise RulesViolation("not-defending", (
                    "only a struck defender draws allies in"))
            candidate["joins"][cid] = defense
        elif not defense.get("mode") and cs[cid]["psionic"] and not cs[cid]["controlled_by"] \
                and cid not in _targets(pending):
            if set(defense) - {"mode"}:
                raise RulesViolation("not-defending", (
                    f"{cs[cid]['name']} is not struck by this attack: staying out of its "
                    "defense takes nothing but {\"mode\": null}"), combatant=cid)
            candidate["joins"].pop(cid, None)
            stayed_out.append(cid)
            out["pending"] = candidate
            return out, [], []
        else:
            raise RulesViolation("not-defending", (
                f"{cs[cid]['name']} is not struck by this attack (a psionic creature may "
                "join with imagination-swarm, or stay out with no mode)"))
        _plan_in_choice_terms(system, out, candidate, cid, "defense")
        out["pending"] = candidate
    elif pending is not None:
        raise RulesViolation("exchange-pending", (
            f"{json_text(next(iter(choice)))} waits until the declared exchange is resolved"))
    else:
        return out, *_act(system, out, cid, choice)
    return out, [], []


def _act(system: PowerPoolSystem, out: JSON, cid: str, choice: Mapping[str, Any]
         ) -> tuple[list[Event], list[str]]:
    """Apply ``cid``'s public action ``choice`` to ``out`` (in place): its events and
    the summary's sentences. ``release``, ``keep`` and
    ``cannot_perceive`` are a round's end upkeep of that one link (``control.upkeep``);
    ``rest`` ends the control kept by an action (``control.rest_upkeep``), then
    ``control.long_rest``."""
    cs = out["combatants"]
    name = cs[cid]["name"]
    ending = control.ending_with_control(system.tables)
    if "pass" in choice:
        if cid in out["acted"]:
            # logged once: a second pass would say again what changed nothing
            raise RulesViolation("already-acted",
                                 f"{name} has already attacked or passed this round")
        out["acted"].append(cid)
        return [], [f"{name} passes this round."]
    if "rest" in choice:
        rule = system.options(out["options"])["H-PP-RECOVERY"]
        c, freed, ended = control.rest_upkeep(cs[cid], cs, ending)
        cs.update(freed)
        cs[cid], rested = control.long_rest(c, rule)
        return [*ended, *rested], [f"{name} takes a long rest.",
                                   *control.rest_upkeep_lines(c, ended, cs),
                                   *control.long_rest_lines(cs[cid], rested)]
    link = next(k for k in ("release", "keep", "cannot_perceive") if k in choice)
    if link == "keep":
        control.check_may_keep(system.tables, cs[cid])
    upkeep = {link: [choice[link]]}
    c, freed, events = control.upkeep(cs[cid], upkeep, cs, ending)
    cs[cid] = c
    cs.update(freed)
    return events, control.upkeep_lines(c, upkeep, events, cs)


def act(system: PowerPoolSystem, state: Mapping[str, Any], cid: str,
        choice: Mapping[str, Any]) -> tuple[JSON, JSON]:
    """``declare`` of a public action, and what it did: ``{events, summary}``
    (``System.encounter_action``)."""
    out, events, lines = _declare(system, state, cid, choice)
    return out, {"events": [e.to_json() for e in events], "summary": " ".join(lines)}


def _end_round(system: PowerPoolSystem, state: JSON) -> tuple[list[Event], list[str]]:
    """The round ends (in place): a controller that cannot act loses its control kept by
    an action (``control.action_upkeep``), then timed conditions count down. The events,
    and sentences for the summary."""
    events = [Event("round-ended", None, {"round": state["round"]})]
    cs = state["combatants"]
    ending = control.ending_with_control(system.tables)
    lines: list[str] = []
    for cid in state["order"]:
        cs[cid], freed, ended = control.action_upkeep(system.tables, cs[cid], cs, ending)
        cs.update(freed)
        events += ended
        lines += control.action_upkeep_lines(system.tables, cs[cid], ended, cs)
    for cid in state["order"]:
        cs[cid], ended = control.round_passes(cs[cid])
        events += ended
        lines += [control.condition_ended(cs[cid]["name"], e) for e in ended]
    state["round"] += 1
    state["acted"] = []
    return events, lines


def resolve(system: PowerPoolSystem, state: Mapping[str, Any], dice: DiceSource,
            force: bool = False) -> tuple[JSON, JSON]:
    """Resolve the pending exchange; the round ends when nobody can attack any more.

    Without ``force``, anyone in ``waiting_for`` is ``choices-missing``; with it, a
    missing defense is no defense mode (the whole pool rolled) and, with no attack
    declared, the round simply ends. What the secret choices make only together (a wave
    kept by a die each that the joins outgrow, a group over the dice limit) is settled
    and said in the step (``build_plan``'s ``secret_choices``), never refused.
    """
    system.check_dice(dice)
    out = _copy(state)
    waiting = waiting_for(system, out)
    pending = out["pending"]
    if waiting and not force:
        what = "an attack or a pass" if pending is None else "a defense"
        raise RulesViolation("choices-missing", f"waiting for {what} from {waiting}")
    results: list[JSON] = []
    events: list[Event] = []
    summary: list[str] = []
    number = None
    round_at = out["round"]
    if pending is not None:
        # the choices were made apart and in secret: what only they together make is
        # settled, and the step says so (build_plan), never refused
        res = system.resolve(_request(out, pending), dice, secret_choices=True)
        for change in res.changes().values():
            if change.id in out["combatants"]:
                out["combatants"][change.id] = thaw(change.after)
        if pending["attacker"] not in out["acted"]:
            out["acted"].append(pending["attacker"])
        out["pending"] = None
        out["exchange"] += 1
        number = out["exchange"]
        results.append(res.to_json())
        events.extend(res.events)
        summary.append(res.summary)
    if pending is None or not waiting_for(system, out):
        ended = out["round"]
        happened, lines = _end_round(system, out)
        events.extend(happened)
        summary += [*lines, f"Round {ended} ends."]
    step = {"exchange": number, "round": round_at, "results": results,
            "events": [e.to_json() for e in events], "summary": " ".join(summary)}
    return out, step
