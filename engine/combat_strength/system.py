"""The ``combat-strength`` system: schemas, one exchange, exact odds, description."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from ..dice import DiceSource
from ..errors import InvalidInput, Problem
from ..options import HouseRule
from ..results import Change, Event, Resolution, copy_json
from ..schemacheck import QuickValidator
from ..system import JSON, System, id_source, schema_problems
from . import encounter
from .combatant import CombatantFactory, incapacitated
from .exchange import (
    Outcome,
    Plan,
    apply_effects,
    check_attack,
    check_defense,
    execute,
    plan,
    strength_events,
    tick,
)
from .odds import exact_odds
from .rules import H_PEN_CAP, HOUSE_RULES, RANGES, STANCES, Tables
from .summary import attack_summary

SYSTEM_ID = "combat-strength"


class CombatStrength(System):
    """RULES.md section 2: attack and defense strength, ten segments a round,
    penetrating damage dice (seed 000)."""

    id = SYSTEM_ID
    name = "Combat Strength (ten segments, penetrating dice)"
    source = ("seed 000 'Psionischer Kampf' (an adaptation of AD&D 1st edition psionic "
              "combat); tables from the AD&D 1e DM Screen and Players Handbook")
    schemas_tested = True
    odds_beside_outcomes = frozenset({"crushed"})

    def __init__(self, tables: Any | None = None) -> None:
        """Load the default tables, or ``tables`` (a GM's replacement, same schema)."""
        self.tables = Tables(tables)
        self.make_combatant = CombatantFactory(self.tables)

    # -- description ----------------------------------------------------------------
    def house_rules(self) -> Sequence[HouseRule]:
        """H-CS-TABLE, H-CS-DEFENSELESS, H-CS-IMPLOSION, H-CS-PEN-CAP, H-CS-WAVE-ROUND."""
        return HOUSE_RULES

    def combatant_schema(self) -> JSON:
        """The combatant JSON Schema (docs/COMBATANTS.md, combat-strength); a copy."""
        return copy_json(self.make_combatant.schema)

    def _attack_schema(self, target: bool) -> JSON:
        props: JSON = {"mode": {"enum": list(self.tables.attacks)},
                       "range": {"enum": list(RANGES), "default": "short"}}
        if target:
            props["target"] = {"type": "string", "minLength": 1, "maxLength": 64}
        return {"type": "object", "properties": props,
                "required": ["mode", "target"] if target else ["mode"],
                "additionalProperties": False}

    def _defense_schema(self) -> JSON:
        # null (no defense) or an object, in one schema so that an error points inside
        # it ("/defense/mode": not one of the modes) as revised-2e's do; a mode of null
        # is no defense too
        return {"type": ["object", "null"],
                "properties": {"mode": {"enum": [*self.tables.defenses, None]}},
                "required": ["mode"], "additionalProperties": False}

    def request_schema(self) -> JSON:
        """One exchange: attacker, defender, attack {mode, range}, defense {mode} | null,
        options, and the attacker's stance (default trance, or wave against a
        non-psionic target)."""
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "combat-strength exchange",
            "type": "object",
            "$defs": {"combatant": {k: v for k, v in self.combatant_schema().items()
                                    if k != "$schema"}},
            "properties": {
                "system": {"const": SYSTEM_ID},
                "attacker": {"$ref": "#/$defs/combatant"},
                "defender": {"$ref": "#/$defs/combatant"},
                "attack": self._attack_schema(target=False),
                "defense": self._defense_schema(),
                "options": {"type": "object"},
                "stance": {"enum": list(STANCES)},
                "dice": {"type": "object"},
                "seed": {"type": "integer"},
            },
            "required": ["attacker", "defender", "attack"],
            "additionalProperties": False,
        }

    def choice_schema(self) -> JSON:
        """``encounter.declare`` choice: a stance at intent; attack and defense in a
        segment."""
        return {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "combat-strength choice",
            "type": "object",
            "properties": {
                "stance": {"enum": list(STANCES)},
                # null or an object, said this way so errors point inside the object
                "attack": {**self._attack_schema(target=True), "type": ["object", "null"]},
                "defense": self._defense_schema(),
            },
            "additionalProperties": False,
        }

    @cached_property
    def _choice_validator(self) -> QuickValidator:
        return QuickValidator(self.choice_schema(), check_schema=False)

    def validate_choice(self, choice: Any) -> None:
        """Raise ``InvalidInput`` (paths under ``/choice``) if ``choice`` is malformed."""
        problems = schema_problems(self._choice_validator, choice, "/choice")
        if problems:
            raise InvalidInput(problems)

    def dice_purposes(self) -> list[JSON]:
        """Every purpose a die of this system may have (callers supply dice by these)."""
        t = self.tables
        return [
            {"purpose": "damage", "sides": [t.bonus_sides], "summed": True,
             "text": "bonus damage dice, penetrating: follow-up dice come right after the "
                     "die they follow"},
            {"purpose": "implosion", "sides": [100], "summed": False,
             "text": "d100 against a percentage (Psychic Implosion: crush or death chance)"},
            {"purpose": "save", "sides": [20], "summed": False,
             "text": "the non-psionic target's d20 save against Psionic Wave"},
            {"purpose": "wave-effect", "sides": [100], "summed": False,
             "text": "d100 on the Psionic Wave effect table after a failed save"},
            {"purpose": "condition-duration", "sides": t.duration_sides(), "summed": True,
             "text": "how long a defenseless-table condition lasts"},
        ]

    def describe(self) -> JSON:
        """``{id, name, source, modes, tables, combatant_schema, request_schema,
        choice_schema, dice_purposes, house_rules, result_fields, outcomes, encounter}``."""
        t = self.tables
        return {
            "id": self.id,
            "name": self.name,
            "source": self.source,
            "modes": {
                "attacks": [m.to_json() for m in t.attacks.values()],
                "defenses": [m.to_json() for m in t.defenses.values()],
                "stances": list(STANCES),
                "ranges": list(RANGES),
            },
            "tables": copy_json(t.data),
            "combatant_schema": self.combatant_schema(),
            "request_schema": self.request_schema(),
            "choice_schema": self.choice_schema(),
            "dice_purposes": self.dice_purposes(),
            "house_rules": [r.to_json() for r in self.house_rules()],
            "result_fields": {
                "table": "combat, defenseless or wave (Psionic Wave on a non-psionic)",
                "bonus_dice": "number of penetrating bonus dice rolled",
                "damage": "points dealt (table value plus bonus dice)",
                "attack_cost": "attack strength the mode cost",
                "capped": "a penetration chain reached H-CS-PEN-CAP",
                "crushed": "Psychic Implosion's percentage roll succeeded",
                "condition": "{id, letter, roll, duration, rounds, text} or null",
                "save": "{target, roll, success} or null",
            },
            "outcomes": ["damage", "no-effect", "crushed", "condition", "saved"],
            "encounter": {
                "step": "the intent phase, then each of the round's ten segments",
                "order": "intent: every combatant declares a stance and its Combat Strength "
                         "is recorded; each segment: secret defenses and attacks, then all "
                         "attacks at once, each looked up from the states at the start of "
                         "the segment; supplied dice go to the attacks in the order their "
                         "attackers joined the encounter",
                "choice": {"stance": "at intent: trance (psionic combat: attacks in the "
                                     "segments), discipline (using a psionic discipline), "
                                     "wave (Psionic Wave against non-psionics) or normal "
                                     "(acting outside psionic combat)",
                           "attack": "in a segment: {mode, target, range} or null",
                           "defense": "in a segment: {mode} or null"},
            },
        }

    # -- combatants -------------------------------------------------------------------
    def combatant(self, raw: Mapping[str, Any], path: str = "") -> JSON:
        """Validate and complete a combatant (InvalidCombatant with JSON Pointer paths)."""
        return self.make_combatant(raw, path)

    # -- one exchange --------------------------------------------------------------------
    def _prepare(self, request: Mapping[str, Any]
                 ) -> tuple[JSON, JSON, JSON, str, str, str | None, Event | None]:
        """The checked request; the last item is the event of a declared defense the
        defender cannot use (it is then attacked as defenseless)."""
        if not isinstance(request, Mapping):
            raise InvalidInput.at("", "the request must be an object")
        self.validate_request(request)
        attacker = self.combatant(request["attacker"], "/attacker")
        defender = self.combatant(request["defender"], "/defender")
        if attacker["id"] == defender["id"]:
            field, ident = id_source(request["defender"], "/defender", defender["id"])
            raise InvalidInput(Problem(field, f"{ident} is the attacker's too: give each "
                                              "combatant its own"))
        opts = self.options(request.get("options"))
        attack = request["attack"]
        mode = str(attack["mode"])
        range_ = str(attack.get("range", "short"))
        defense_obj = request.get("defense")
        defense = None if defense_obj is None else defense_obj.get("mode")
        stance = request.get("stance") or ("trance" if defender["psionic"] else "wave")
        check_attack(self.tables, attacker, defender, mode, stance, "/defender")
        # the defender's own stance is not part of an exchange request; only whether
        # it knows the mode is checked (encounters check the stance as well)
        check_defense(self.tables, defender, defense, "trance", None)
        # Seed: those "unable to use a Defense Mode for any reason are attacked according
        # to the Psionic Attacks vs. Defenseless Psionic Targets table"; in an encounter an
        # incapacitated mind cannot declare one at all.
        condition = incapacitated(self.tables, defender)
        unusable = None
        if defense is not None and condition is not None:
            unusable = Event("defense-unusable", str(defender["id"]),
                             {"mode": defense, "condition": condition})
            defense = None
        return attacker, defender, opts, mode, range_, defense, unusable

    def attack(self, opts: Mapping[str, Any], attacker: JSON, defender: JSON, mode: str,
               range_: str, defense: str | None, dice: DiceSource
               ) -> tuple[Resolution, Outcome, Plan]:
        """Look up and roll one legal attack from the given states (nothing stored)."""
        mark = dice.mark()
        p = plan(self.tables, opts, attacker, defender, mode, range_, defense)
        out = execute(self.tables, opts, p, attacker, defender, dice)
        attacker_after = apply_effects(attacker, [out.on_attacker])
        defender_after = apply_effects(defender, [out.on_defender])
        events = [Event("attack", str(attacker["id"]), {
            "target": defender["id"], "mode": mode, "range": range_, "defense": p.defense,
            "table": p.table})]
        events += strength_events(attacker, attacker_after, p.cost)
        events += strength_events(defender, defender_after)
        events += out.events
        summary = attack_summary(self.tables, p, out, attacker, defender, attacker_after,
                                 defender_after)
        resolution = Resolution(
            system=self.id, outcome=out.outcome,
            attacker=Change(str(attacker["id"]), attacker, attacker_after),
            defender=Change(str(defender["id"]), defender, defender_after),
            rolls=dice.rolls_since(mark), events=tuple(events), summary=summary,
            fields=out.fields)
        return resolution, out, p

    def round_end(self, combatant: JSON, choice: Mapping[str, Any], dice: DiceSource,
                  options: Mapping[str, Any]) -> tuple[JSON, list[Event], list[str]]:
        """A round passes: each timed condition loses a round and ends with none left
        (outside an encounter there are no segments to count it from)."""
        events = [e for e in (tick(combatant, x) for x in list(combatant["condition_rounds"]))
                  if e is not None]
        name = combatant["name"]
        return combatant, events, [self.tables.condition_ended(name, e.data["condition"])
                                   for e in events]

    def resolve(self, request: Mapping[str, Any], dice: DiceSource) -> Resolution:
        """One exchange (RULES.md 2.4): the attack is looked up, rolled and applied."""
        self.check_dice(dice)
        attacker, defender, opts, mode, range_, defense, unusable = self._prepare(request)
        resolution, _, _ = self.attack(opts, attacker, defender, mode, range_, defense, dice)
        unused = {k: tuple(v) for k, v in dice.unused().items()}
        events, summary = resolution.events, resolution.summary
        if unusable is not None:
            events = (unusable, *events)
            who = self.tables.condition_clause(defender["name"], unusable.data["condition"])
            summary = (f"{who} and cannot use "
                       f"{self.tables.defenses[unusable.data['mode']].name}: "
                       f"defenseless. {summary}")
        return Resolution(
            system=resolution.system, outcome=resolution.outcome,
            attacker=resolution.attacker, defender=resolution.defender,
            rolls=resolution.rolls, events=events, summary=summary,
            fields=resolution.fields, unused_dice=unused)

    def defending_places(self, request: Mapping[str, Any]) -> dict[str, list[str]]:
        """The defender, with the defense the request gives it (which costs nothing in an
        exchange: ``knowing`` as ``System``'s). No defense, ``null`` or a mode of ``null``
        (which the request schema takes) is none."""
        mode = (request.get("defense") or {}).get("mode")
        return {"/defender": [mode] if mode is not None else []}

    def odds(self, request: Mapping[str, Any]) -> JSON:
        """Exact odds: damage distribution (a penetration chain stops at H-CS-PEN-CAP
        and counts there, as in ``resolve``), the chance the defense strength reaches 0,
        of a crushed mind, of each condition, and of the Psionic Wave save."""
        attacker, defender, opts, mode, range_, defense, _ = self._prepare(request)
        p = plan(self.tables, opts, attacker, defender, mode, range_, defense)
        exact = exact_odds(self.tables, p, defender, int(opts[H_PEN_CAP]))
        out = exact.to_json()
        out.update({"table": p.table, "band": p.band, "defender_band": p.defender_band,
                    "table_value": p.table_value, "bonus_dice": p.bonus_dice,
                    "attack_cost": p.cost})
        return out

    # -- encounters --------------------------------------------------------------------------
    rounds = encounter

    def encounter_pending_choices(self, state: Mapping[str, Any]) -> Mapping[str, Any]:
        return encounter.pending_choices(state)
