"""The ``power-pool`` system object: description, schemas, exchange, odds, encounters."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property
from typing import Any

from ..dice import DiceSource
from ..options import HouseRule
from ..results import Event, Resolution, copy_json
from ..schemacheck import QuickValidator
from ..system import JSON, System
from ..tables import load_tables
from . import control, encounter
from .combatant import CONDITIONS, combatant_schema, normalize
from .exchange import HOUSE_RULES, SYSTEM_ID, Plan, build_plan, resolve_plan
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
                "sacrifice": {"oneOf": [
                    {"type": "integer", "minimum": 1, "maximum": 9},
                    {"type": "array", "maxItems": 200,
                     "items": {"type": "integer", "minimum": 1, "maximum": 9}}],
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
                        "target": {"type": "string"},
                        "targets": {"type": "array", "items": {"type": "string"}},
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
                "puppets": {**many, "description": "creatures either side controls, "
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
            {"purpose": "attack", "sides": ladder,
             "text": "the attacker's pool dice (its hit-die type, upgraded by its mode)"},
            {"purpose": "defense", "sides": ladder,
             "text": "the defending side's pool dice: the struck defender first, then the "
                     "other wave targets and the allies in the order given"},
            {"purpose": save["purpose"], "sides": [save["sides"]],
             "text": "the attacker's save against Blank Mind (one per defender using it), "
                     "rolled before any pool die"},
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
                "effects": "[{effect, combatant, ...}]: controlled, possessed, frightened, "
                           "stunned (instead of control), damage",
                "attack": "{mode, dice, sides, keep_by}",
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

    # -- combatants -------------------------------------------------------------------
    def combatant(self, raw: Mapping[str, Any], path: str = "") -> JSON:
        """The full combatant with defaults (docs/COMBATANTS.md), or InvalidCombatant."""
        return normalize(raw, path, self._combatant_validator)

    def round_end(self, combatant: JSON, choice: Mapping[str, Any], dice: DiceSource,
                  options: Mapping[str, Any]) -> tuple[JSON, list[Event], list[str]]:
        """A round ends: timed conditions (an attacker's daze, a loser's stun) count down."""
        after, events = control.round_passes(combatant)
        return after, events, [condition_ended(after["name"], e) for e in events]

    def combatant_rest(self, combatant: JSON, request: Mapping[str, Any], dice: DiceSource,
                       options: Mapping[str, Any]) -> tuple[JSON, list[Event], list[str]]:
        """A long rest (seed 001; H-PP-RECOVERY): ``control.long_rest`` (no dice)."""
        after, events = control.long_rest(combatant, options["H-PP-RECOVERY"])
        name = after["name"]
        lines = []
        for e in events:
            if e.type == "pool-regained":
                lines.append(f"{name} regains {dice_count(e.data['amount'])} "
                             f"({after['pool']} in the pool).")
            elif e.type == "powers-ended":
                lines.append(f"{name}'s maintained powers end.")
            else:
                lines.append(condition_ended(name, e))
        return after, events, lines

    # -- one exchange -------------------------------------------------------------------
    def plan(self, request: Mapping[str, Any]) -> Plan:
        """Check ``request`` (schema, then rules) and say what every side rolls."""
        self.validate_request(request)
        return build_plan(self.tables, self.combatant, request)

    def resolve(self, request: Mapping[str, Any], dice: DiceSource) -> Resolution:
        """One exchange: saves, pools rolled, control and mode effects applied."""
        return resolve_plan(self.tables, self.plan(request), dice)

    def odds(self, request: Mapping[str, Any]) -> JSON:
        """Exact ``{outcomes: {attacker, defender}, control, tie, blank_mind_save,
        damage}``; damage is Synaptic Overload's, given the attacker wins."""
        return odds_json(exact_odds(self.tables, self.plan(request)))

    # -- encounters -------------------------------------------------------------------
    rounds = encounter

    def encounter_pending_choices(self, state: Mapping[str, Any]) -> Mapping[str, Any]:
        return encounter.pending_choices(state)


def dice_count(n: int) -> str:
    """"1 die", "3 dice"."""
    return "1 die" if n == 1 else f"{n} dice"


def condition_ended(name: str, event: Event) -> str:
    """"Ix is no longer dazed." for a ``condition-ended`` event."""
    return f"{name} is no longer {event.data['condition']}."
