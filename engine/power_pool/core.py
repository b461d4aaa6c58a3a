"""The ``power-pool`` system object: description, schemas, exchange, odds, encounters."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import cached_property
from typing import Any

from ..dice import DiceSource
from ..errors import InvalidInput, Problem, RulesViolation, json_text, pointer
from ..options import HouseRule
from ..results import Event, Resolution, copy_json
from ..schemacheck import QuickValidator
from ..system import JSON, MAX_ROUND_COMBATANTS, System
from ..tables import load_tables
from . import control, encounter
from .combatant import (
    CONDITIONS,
    combatant_schema,
    link_key,
    link_problems,
    normalize,
    slug,
)
from .control import (
    action_upkeep_lines,
    condition_ended,
    die_words,
)
from .encounter import ID_SCHEMA
from .exchange import (
    HOUSE_RULES,
    SYSTEM_ID,
    Plan,
    build_plan,
    puppet_given_again,
    resolve_plan,
)
from .probability import exact_odds, odds_json


class PowerPoolSystem(System):
    """Power pool dice contests (seed 001): each side rolls its pool, the higher total
    wins, and the winner takes psionic control."""

    id = SYSTEM_ID
    name = "Power pool psionic combat"
    source = "seed 001_e8815498f41c4da8 (Psionic Combat Rules, Feb 6, 2015)"
    schemas_tested = True

    def __init__(self, tables: Any | None = None) -> None:
        """``tables`` replaces ``data/tables.json`` (checked against its schema)."""
        self.tables: JSON = load_tables(__package__ or "engine.power_pool", tables)

    # -- description -----------------------------------------------------------------
    def house_rules(self) -> Sequence[HouseRule]:
        """H-PP-TIE, H-PP-GROUP, H-PP-BLANK-SAVE, H-PP-NO-POOL, H-PP-RECOVERY."""
        return HOUSE_RULES

    def combatant_schema(self) -> JSON:
        """The combatant JSON Schema, built from the modes and ladder of the tables."""
        return combatant_schema(self.tables)

    @cached_property
    def _combatant_validator(self) -> QuickValidator:
        return QuickValidator(self.combatant_schema(), check_schema=False)

    def request_schema(self) -> JSON:
        """JSON Schema of an ``exchange.resolve``/``exchange.odds`` request."""
        modes = self.tables["modes"]
        attacks = sorted(m for m, d in modes.items() if d["kind"] == "attack")
        defenses = sorted(m for m, d in modes.items() if d["kind"] == "defense")
        combatant = {k: v for k, v in self.combatant_schema().items() if k != "$schema"}
        count = {"type": "integer", "minimum": 0}
        defense = {
            # not oneOf(null, object): errors then name /defense/mode, not /defense
            "type": ["object", "null"], "additionalProperties": False,
            "properties": {
                "mode": {"enum": [*defenses, None]},
                "pool_dice": count,
                # a level or a list of levels, in one schema (not oneOf) so that an
                # error names the level that is wrong and the bound it breaks
                "sacrifice": {
                    "type": ["integer", "array"], "minimum": 1, "maximum": 9,
                    "maxItems": 200, "items": {"type": "integer", "minimum": 1, "maximum": 9},
                    "description": "spell levels given up (an integer: one spell of "
                                   "that level)"},
            },
        }
        many = {"type": "array", "maxItems": 63, "items": {"$ref": "#/$defs/combatant"}}
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "power-pool exchange",
            "type": "object",
            "required": ["attacker", "defender", "attack"],
            "additionalProperties": False,
            "properties": {
                "system": {"const": SYSTEM_ID},
                "attacker": {"$ref": "#/$defs/combatant"},
                "defender": {"$ref": "#/$defs/combatant"},
                "attack": {
                    "type": "object", "required": ["mode"], "additionalProperties": False,
                    "properties": {
                        "mode": {"enum": attacks},
                        "pool_dice": count,
                        "keep_by": {"enum": ["action", "die"],
                                    "description": "how control is kept if won"},
                        "perceives": {"type": "boolean", "default": True},
                        "decline": {"type": "array", "maxItems": 8, "uniqueItems": True,
                                    "items": {"type": "string", "maxLength": 64},
                                    "description": "effects of the mode the attacker may "
                                                   "choose not to use (subconscious-"
                                                   "subversion: frightened)"},
                    },
                },
                "defense": {"$ref": "#/$defs/defense"},
                "defenders": {**many, "description": "further targets of a psionic-wave"},
                "allies": {**many, "description": "creatures drawn in by imagination-swarm"},
                "defenses": {"type": "object",
                             "additionalProperties": {"$ref": "#/$defs/defense"},
                             "description": "defense of each further defender or psionic "
                                            "ally, by id"},
                "controller": {"$ref": "#/$defs/combatant"},
                "controllers": many,
                "puppets": {**many, "description": "creatures either side controls that "
                                                   "take no other part, each once, "
                                                   "updated when that control ends"},
                "options": {"type": "object"},
                "dice": {"type": "object"},
                "seed": {"type": "integer"},
            },
            "$defs": {"combatant": combatant, "defense": defense},
        }

    def dice_purposes(self) -> list[JSON]:
        """Every purpose a die of this system may have (callers supply dice by these)."""
        ladder = list(self.tables["ladder"])
        save = self.tables["save"]
        return [
            {"purpose": "attack", "sides": ladder, "summed": True,
             "text": "the attacker's pool dice (its hit-die type, upgraded by its mode)"},
            {"purpose": "defense", "sides": ladder, "summed": True,
             "text": "the defending side's pool dice: the struck defender first, then the "
                     "other wave targets and the allies in the order given"},
            {"purpose": save["purpose"], "sides": [save["sides"]], "summed": False,
             "text": "the attacker's save against Blank Mind (one per defender using it, "
                     "in the order struck, until one fails), rolled before any pool die"},
        ]

    def describe(self) -> JSON:
        """``{id, name, source, modes: {attacks, defenses}, tables, combatant_schema,
        request_schema, choice_schema, dice_purposes, house_rules, result_fields}``."""
        modes = self.tables["modes"]

        def listed(kind: str) -> list[JSON]:
            """The modes of one kind with their effect parameters, in table order."""
            return [{"id": m, **copy_json(d)} for m, d in modes.items() if d["kind"] == kind]

        return {
            "id": self.id,
            "name": self.name,
            "source": self.source,
            "modes": {"attacks": listed("attack"), "defenses": listed("defense")},
            "tables": copy_json(self.tables),
            "conditions": list(CONDITIONS),
            "combatant_schema": self.combatant_schema(),
            "request_schema": self.request_schema(),
            "choice_schema": copy_json(encounter.CHOICE_SCHEMA),
            "dice_purposes": self.dice_purposes(),
            "house_rules": [r.to_json() for r in HOUSE_RULES],
            "result_fields": {
                "attack_total": "sum of the attacker's dice (null if Blank Mind stopped it)",
                "defense_total": "sum of the defending group's dice plus sacrificed levels",
                "winner": "attacker or defender",
                "controlled": "whether any defender came under psionic control",
                "outcome_detail": "control, won-without-control (Barrier Mantra), rebuffed "
                                  "or blank-mind-save-failed",
                "effects": "[{effect, combatant, ...}]: controlled (with controller and "
                           "kept_by: die or action, how that creature's control is kept), "
                           "possessed, frightened, stunned (instead of control), damage",
                "attack": "{mode, dice, sides, keep_by}: keep_by as asked; an Imagination "
                          "Swarm group's dice may run out, and each controlled effect's "
                          "kept_by says how that creature is kept",
                "defense": "{mode, members: [{id, role, mode, dice, sides, rolled, "
                           "sacrifice, bonus, rolls}]}",
                "tie": "the totals were equal (H-PP-TIE decided)",
                "blank_mind": "[{against, target, roll, success}] or null",
                "redirected": "[{from, to}]: a controlled target's controller was struck",
                "damage": "Synaptic Overload damage dealt in all",
            },
            "outcomes": ["attacker", "defender"],
            "outcome_details": ["control", "won-without-control", "rebuffed",
                                "blank-mind-save-failed"],
            "encounter": {
                "step": "one exchange",
                "choice": {"attack": "{mode, target, targets?, pool_dice?, keep_by?, "
                                     "perceives?}",
                           "defense": "{mode?, pool_dice?, sacrifice?, allies?: [id]}",
                           "pass": "true: no attack this round",
                           "release": "id: let a controlled creature go (a wave: all)",
                           "keep": "{target, by: die|action}",
                           "cannot_perceive": "id: the controller lost sight of a "
                                              "controlled creature (a link kept by action "
                                              "ends)",
                           "rest": "true: a long rest (H-PP-RECOVERY)"},
            },
        }

    def encounter_choice_is_public(self, choice: Mapping[str, Any]) -> bool:
        """``pass``, ``release``, ``keep``, ``cannot_perceive`` and ``rest`` apply when
        declared; an attack or a defense stays secret until the exchange resolves."""
        return bool(choice) and encounter.PUBLIC_ACTIONS.issuperset(choice)

    def encounter_action(self, state: Mapping[str, Any], combatant_id: str,
                         choice: Mapping[str, Any]) -> tuple[JSON, JSON]:
        """A public action and what it did: a release, a change of how control is kept,
        sight lost, a pass or a long rest, with its events and summary
        (``encounter.act``)."""
        return encounter.act(self, state, combatant_id, choice)

    # -- combatants -------------------------------------------------------------------
    def combatant(self, raw: Mapping[str, Any], path: str = "") -> JSON:
        """The full combatant with defaults (docs/COMBATANTS.md), or InvalidCombatant."""
        return normalize(raw, path, self._combatant_validator)

    def round_end(self, combatant: JSON, choice: Mapping[str, Any], dice: DiceSource,
                  options: Mapping[str, Any]) -> tuple[JSON, list[Event], list[str]]:
        """A round ends: timed conditions (an attacker's daze, a loser's stun) count down.
        What a controller chose for its control is done before (``round_end_between``)."""
        after, events = control.round_passes(combatant)
        return after, events, [condition_ended(after["name"], e) for e in events]

    def round_end_choice_schema(self) -> JSON:
        """A controller's upkeep of its psionic control (§3.4): creatures to let go,
        links to keep another way, creatures it can no longer perceive. Any creature of
        a Psionic Wave's link names the whole link."""
        ids = {"type": "array", "maxItems": MAX_ROUND_COMBATANTS, "uniqueItems": True,
               "items": ID_SCHEMA}
        return {
            "type": "object", "additionalProperties": False,
            "properties": {
                "release": {**ids, "description": "creatures it lets go (a wave: all)"},
                "keep": {"type": "array", "maxItems": MAX_ROUND_COMBATANTS, "items": {
                    "type": "object", "required": ["target", "by"],
                    "additionalProperties": False,
                    "properties": {"target": ID_SCHEMA, "by": {"enum": ["die", "action"]}}},
                    "description": "links kept another way from now on: die (a die of "
                                   "the pool dedicated to each creature of the link, "
                                   "kept until released) or action (an action every "
                                   "round; the dice return)"},
                "cannot_perceive": {**ids, "description": "creatures it can no longer "
                                                          "perceive: a link kept by an "
                                                          "action ends"},
            },
        }

    def round_end_offer(self, combatant: JSON, options: Mapping[str, Any]
                        ) -> tuple[JSON, list[str]]:
        """A controller may release each link (``release: [link]``), keep it the other
        way (``keep: [{...link, by}]``, by a die only with one in its pool) and, for a
        link kept by an action, lose sight of it (``cannot_perceive: [link]``); a link is
        ``{targets, kept_by, wave}``. One that cannot act keeps none the other way, and
        ``ends`` lists its links kept by an action, which end as the round ends whatever
        it chooses."""
        held = control.links(combatant)
        if not held:
            return {}, []
        unable = control.unable_words(self.tables, combatant)
        switches = [{**link, "by": "action" if link["kept_by"] == "die" else "die"}
                    for link in held]
        offer: JSON = {
            "release": held,
            "keep": [] if unable else [
                s for s in switches
                if s["by"] == "action" or combatant["pool"] >= len(s["targets"])],
            "cannot_perceive": [link for link in held if link["kept_by"] == "action"],
        }
        if unable:
            # what ends as the round ends whatever is chosen: nothing to ask about
            offer["ends"] = [link for link in held if link["kept_by"] == "action"]
        return offer, [control_held_line(combatant, link, unable) for link in held]

    def round_end_members(self) -> JSON:
        """``puppets``: creatures the combatants control whose round does not end here."""
        return self._puppets_member("whose round does not end here")

    def rest_members(self) -> JSON:
        """``puppets``: creatures the combatants control that do not rest with them."""
        return self._puppets_member("that do not rest with them")

    def _puppets_member(self, which: str) -> JSON:
        combatant = {k: v for k, v in self.combatant_schema().items() if k != "$schema"}
        return {"puppets": {"type": "array", "maxItems": MAX_ROUND_COMBATANTS,
                            "items": combatant,
                            "description": f"creatures these combatants control {which}: "
                                           "set free (in others) when the control over "
                                           "them ends"}}

    def round_end_between(self, combatants: dict[str, JSON], choices: Mapping[str, Any],
                          request: Mapping[str, Any], options: Mapping[str, Any]
                          ) -> tuple[list[Event], list[str], list[JSON]]:
        """Each controller's choice for its control (``control.upkeep``), then control
        kept by an action ends for a controller that cannot act (``control.
        action_upkeep``); a creature let go is set free when it is among the combatants
        or the ``puppets``."""
        puppets = self.puppets_of(request, combatants, "whose round ends")
        before = dict(puppets)  # the control functions return new objects
        ending = control.ending_with_control(self.tables)
        events: list[Event] = []
        lines: list[str] = []
        for cid, choice in choices.items():
            if not choice:
                continue
            where = pointer("/choices", cid)
            check_upkeep(combatants[cid], choice, where)
            try:
                if choice.get("keep"):
                    control.check_may_keep(self.tables, combatants[cid])
                after, freed, happened = control.upkeep(combatants[cid], choice,
                                                        puppets | combatants, ending)
            except RulesViolation as exc:
                # say whose choice it was (a die switch the pool cannot pay for, a
                # switch by a controller that cannot act)
                raise RulesViolation(exc.rule, f"{exc.detail} ({where})",
                                     combatant=cid) from None
            _settle(combatants, puppets, cid, after, freed)
            events += happened
            lines += control.upkeep_lines(after, choice, happened, puppets | combatants)
        more_events, more_lines = _each_upkeep(
            combatants, puppets,
            lambda c, creatures: control.action_upkeep(self.tables, c, creatures, ending),
            lambda c, happened, creatures: action_upkeep_lines(self.tables, c, happened,
                                                               creatures))
        return events + more_events, lines + more_lines, _changed(before, puppets)

    def rest_between(self, combatants: dict[str, JSON], request: Mapping[str, Any],
                     options: Mapping[str, Any]) -> tuple[list[Event], list[str], list[JSON]]:
        """A resting controller keeps no control by an action (``control.rest_upkeep``);
        a creature let go is set free when it is among the combatants or the
        ``puppets``, before anyone's own rest (one set free rests free)."""
        puppets = self.puppets_of(request, combatants, "that rests")
        before = dict(puppets)
        ending = control.ending_with_control(self.tables)
        events, lines = _each_upkeep(
            combatants, puppets,
            lambda c, creatures: control.rest_upkeep(c, creatures, ending),
            control.rest_upkeep_lines)
        return events, lines, _changed(before, puppets)

    def puppets_of(self, request: Mapping[str, Any], combatants: Mapping[str, Any],
                   which: str) -> dict[str, JSON]:
        """The full ``puppets`` of an ``end_round`` or ``rest`` request by id, none of
        them one of ``combatants`` (``InvalidInput`` naming it; ``which``: what those
        do, for the message)."""
        out: dict[str, JSON] = {}
        for i, raw in enumerate(request.get("puppets") or []):
            p = self.combatant(raw, f"/puppets/{i}")
            if p["id"] in combatants or p["id"] in out:
                raise puppet_given_again(raw, f"/puppets/{i}", p["id"], which)
            out[p["id"]] = p
        # RULES.md §3.4: whom a controller holds, as both sheets say it
        problems = link_problems(
            [(f"/combatants/{i}", c) for i, c in enumerate(combatants.values())]
            + [(f"/puppets/{i}", p) for i, p in enumerate(out.values())])
        if problems:
            raise InvalidInput(problems)
        return out

    def combatant_rest(self, combatant: JSON, request: Mapping[str, Any], dice: DiceSource,
                       options: Mapping[str, Any]) -> tuple[JSON, list[Event], list[str]]:
        """A long rest (seed 001; H-PP-RECOVERY): ``control.long_rest`` (no dice)."""
        after, events = control.long_rest(combatant, options["H-PP-RECOVERY"])
        return after, events, control.long_rest_lines(after, events)

    # -- one exchange -------------------------------------------------------------------
    def plan(self, request: Mapping[str, Any], *, secret_choices: bool = False) -> Plan:
        """Check ``request`` (schema, then rules) and say what every side rolls
        (``secret_choices``: an encounter's, see ``build_plan``)."""
        self.validate_request(request)
        return build_plan(self.tables, self.combatant, request,
                          secret_choices=secret_choices)

    def resolve(self, request: Mapping[str, Any], dice: DiceSource, *,
                secret_choices: bool = False) -> Resolution:
        """One exchange: saves, pools rolled, control and mode effects applied
        (``secret_choices``: an encounter's, see ``build_plan``)."""
        self.check_dice(dice)
        return resolve_plan(self.tables, self.plan(request, secret_choices=secret_choices),
                            dice)

    def defending_places(self, request: Mapping[str, Any]) -> dict[str, list[str]]:
        """Every mind that may defend: the defender, a psionic wave's further defenders,
        the allies (a psionic one joins with its own defense) and the controllers an
        attack may strike in their puppets' place, each with the modes the request gives
        it: its own in ``defenses`` and, for the defender and a controller (struck in
        the place of the mind struck first), ``defense``. A creature given in more than
        one place as a target or controller (a controller that is a target too, or given
        for each of its puppets a wave strikes) is one mind: each of its places has the
        modes of them all. A mode costs nothing: ``knowing`` as ``System``'s."""
        first = (request.get("defense") or {}).get("mode")
        own = {cid: d.get("mode") for cid, d in (request.get("defenses") or {}).items()
               if d}
        places: dict[str, list[str]] = {}
        for place, cid, struck_first in _defending_minds(request):
            given = [first] if struck_first else []
            given.append(own.get(cid))
            places[place] = [m for m in given if m is not None]
        for group in _places_of_one(request).values():
            modes = [m for place in group for m in places[place]]
            for place in group:
                places[place] = modes
        return {place: list(dict.fromkeys(modes)) for place, modes in places.items()}

    def assume_knowing(self, request: Mapping[str, Any], places: Sequence[str]) -> JSON:
        """As ``System``'s, and a creature given in more than one place as a target or
        controller (``defending_places``) gets a knowing sheet in each of them when
        ``places`` names any: the exchange refuses two sheets of one creature that differ,
        its defenses too (``exchange._check_controllers_agree``), and each place's
        knowing sheet, made from the sheet given there, knows the same modes."""
        self.validate_request(request)
        named = [group for group in _places_of_one(request).values()
                 if any(place in group for place in places)]
        more = [place for group in named for place in group if place not in places]
        return super().assume_knowing(request, [*places, *more])

    def odds(self, request: Mapping[str, Any]) -> JSON:
        """Exact ``{outcomes: {attacker, defender}, control, tie, blank_mind_save,
        damage}``; damage is Synaptic Overload's to the whole defending group, 0 when the
        attacker does not win."""
        return odds_json(exact_odds(self.tables, self.plan(request)))

    # -- encounters -------------------------------------------------------------------
    rounds = encounter

    def encounter_pending_choices(self, state: Mapping[str, Any]) -> Mapping[str, Any]:
        return encounter.pending_choices(state)


def _defending_minds(request: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """Each place of the exchange ``request`` holding a mind that may defend
    (``defending_places``), with that mind's id (given, or made from its name) and
    whether it may be struck first (the defender, a controller)."""
    minds = [("/defender", request["defender"], True)]
    for member, struck_first in (("defenders", False), ("allies", False),
                                 ("controllers", True)):
        minds += [(f"/{member}/{i}", raw, struck_first)
                  for i, raw in enumerate(request.get(member) or [])]
    if request.get("controller") is not None:
        minds.append(("/controller", request["controller"], True))
    return [(place, raw.get("id") or slug(str(raw.get("name", ""))), struck_first)
            for place, raw, struck_first in minds]


def _places_of_one(request: Mapping[str, Any]) -> dict[str, list[str]]:
    """The places of the exchange ``request`` where it gives one creature as a target
    or a controller, by its id: a controller that is a target too, or given for each of
    its puppets a wave strikes, has several. Allies are left out: one with the id of a
    creature struck is refused (``ally-struck``), and its sheet is not compared."""
    out: dict[str, list[str]] = {}
    for place, cid, _ in _defending_minds(request):
        if not place.startswith("/allies/"):
            out.setdefault(cid, []).append(place)
    return out


def check_upkeep(controller: Mapping[str, Any], choice: Mapping[str, Any], path: str) -> None:
    """Each creature named in ``choice`` is one ``controller`` controls, and no link is
    named twice (``not-controlling`` / ``InvalidInput``)."""
    key_of = {e["id"]: link_key(e) for e in controller["controlling"]}
    named: dict[str, str] = {}
    problems = []
    for member in ("cannot_perceive", "release", "keep"):
        for i, item in enumerate(choice.get(member, [])):
            target = item["target"] if member == "keep" else item
            where = f"{path}/{member}/{i}" + ("/target" if member == "keep" else "")
            if target not in key_of:
                raise RulesViolation("not-controlling", (
                    f"{controller['name']} does not control {json_text(target)} ({where})"),
                    combatant=str(controller["id"]))
            key = key_of[target]
            if key in named:
                problems.append(Problem(where, (
                    f"{json_text(target)} is held by the control {named[key]} already "
                    "chooses for (a psionic wave's creatures share one): one choice each")))
            named.setdefault(key, where)
    if problems:
        raise InvalidInput(problems)


def control_held_line(controller: Mapping[str, Any], link: Mapping[str, Any],
                      unable: str | None = None) -> str:
    """"Ix controls one creature by an action each round; it may release it, keep it by
    a die instead or lose sight of it." for a round's end offer (the creatures are ids
    here, which only the VTT can name); ``unable``: why the controller cannot act
    (``control.unable_words``), which leaves it no other way to keep the link."""
    count = len(link["targets"])
    held, it = (("one creature", "it") if count == 1 else
                (f"{count} creatures of one psionic wave", "them"))
    name = controller["name"]
    die, dice = die_words(count)
    if unable is not None and link["kept_by"] == "die":
        return (f"{name} controls {held} by {die} from its pool; it may release {it} (it "
                f"is {unable} and cannot act: it keeps {it} by {die}).")
    if unable is not None:
        return (f"{name} controls {held} by an action each round but is {unable} and "
                f"cannot spend it: the control ends as this round ends.")
    if link["kept_by"] == "die":
        return (f"{name} controls {held} by {die} from its pool; it may release {it} or "
                f"keep {it} by an action instead ({dice}).")
    other = f", keep {it} by {die} instead" if controller["pool"] >= count else ""
    return (f"{name} controls {held} by an action each round; it may release {it}{other} "
            f"or lose sight of {it}.")


def _settle(combatants: dict[str, JSON], puppets: dict[str, JSON], cid: str, after: JSON,
            freed: Mapping[str, JSON]) -> None:
    """Put controller ``cid`` ``after`` its upkeep, and each creature it ``freed``, where
    it was given (among ``combatants`` or ``puppets``)."""
    combatants[cid] = after
    for pid, puppet in freed.items():
        (combatants if pid in combatants else puppets)[pid] = puppet


def _each_upkeep(combatants: dict[str, JSON], puppets: dict[str, JSON],
                 upkeep: Callable[[JSON, dict[str, JSON]],
                                  tuple[JSON, dict[str, JSON], list[Event]]],
                 said: Callable[[JSON, list[Event], dict[str, JSON]], list[str]]
                 ) -> tuple[list[Event], list[str]]:
    """``upkeep`` for each of ``combatants`` in turn (given it and every creature given,
    ``_settle`` putting back what it changed), and its events and the sentences
    ``said`` of them."""
    events: list[Event] = []
    lines: list[str] = []
    for cid in list(combatants):
        after, freed, happened = upkeep(combatants[cid], puppets | combatants)
        _settle(combatants, puppets, cid, after, freed)
        events += happened
        lines += said(after, happened, puppets | combatants)
    return events, lines


def _changed(before: Mapping[str, JSON], now: Mapping[str, JSON]) -> list[JSON]:
    """``{id, before, after}`` of each creature of ``now`` that differs from ``before``."""
    return [{"id": pid, "before": before[pid], "after": c}
            for pid, c in now.items() if c != before[pid]]
