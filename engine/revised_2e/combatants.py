"""The revised-2e combatant: its JSON Schema and the derivations of RULES.md §1.1.

``normalise`` turns what a caller gives (often just level, PSPs, Int and Wis) into the
full combatant the rules work on: kind, MTHAC0, MAC, save vs. paralyzation, mind state.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.errors import InvalidCombatant, Problem, json_text, pointer
from engine.schemacheck import QuickValidator
from engine.system import is_down, schema_problems
from engine.system import slug as name_slug

from ..results import FrozenDict, FrozenList
from . import house
from .rules import derive_mac, known_modes_limit, mthac0_for, save_paralyzation
from .tables import Tables

JSON = dict[str, Any]

KINDS = ("psionicist", "wild-talent", "nonpsionic")
PSIONIC_KINDS = ("psionicist", "wild-talent")
CLASS_GROUPS = ("warrior", "priest", "rogue", "wizard", "psionicist", "monster")
CONDITIONS_THAT_STOP_ACTION = ("stunned", "dazed", "confused")

MAX_LEVEL = 100
MAX_PSP = 100_000


def combatant_schema(tables: Tables) -> JSON:
    """JSON Schema (2020-12) of a revised-2e combatant as callers may give it."""
    attack_ids = sorted(tables.attacks)
    defense_ids = sorted(tables.defenses)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "revised-2e combatant (RULES.md §1.1, docs/COMBATANTS.md)",
        "type": "object",
        "additionalProperties": False,
        "anyOf": [{"required": ["id"]}, {"required": ["name"]}],
        "properties": {
            "id": {"type": "string", "minLength": 1, "maxLength": 64,
                   "description": "unique within an exchange or encounter; from name when absent"},
            "name": {"type": "string", "minLength": 1, "maxLength": 200},
            "kind": {"enum": list(KINDS),
                     "description": "nonpsionic when psp_max is 0 or absent"},
            "level": {"type": "integer", "minimum": 0, "maximum": MAX_LEVEL,
                      "description": "class level (monsters: Hit Dice); required for "
                                     "psionic kinds"},
            "class_group": {"enum": list(CLASS_GROUPS),
                            "description": "save table group; psionic kinds default "
                                           "psionicist, others warrior"},
            "psp": {"type": "integer", "minimum": 0, "maximum": MAX_PSP,
                    "description": "current PSPs, default psp_max"},
            "psp_max": {"type": "integer", "minimum": 0, "maximum": MAX_PSP},
            "mthac0": {"type": ["integer", "null"], "minimum": -100, "maximum": 100,
                       "description": "psionicist 21 − level; wild talent 21 − ceil(level/2) "
                                      "(H-2E-WT-MTHAC0); null for a nonpsionic"},
            "int": {"type": "integer", "minimum": 1, "maximum": 25},
            "wis": {"type": "integer", "minimum": 1, "maximum": 25},
            "con": {"type": "integer", "minimum": 1, "maximum": 25},
            "mac": {"type": ["integer", "null"], "minimum": -10, "maximum": 10,
                    "description": "Wis base + Int modifier − Mental Armor slots; null with "
                                   "quick_mac = rolled when first needed"},
            "quick_mac": {
                "type": "object", "additionalProperties": False,
                "required": ["intelligence", "psionic"],
                "description": "Quick MAC for a monster (seed 004), used when mac is absent: "
                               "base MAC by Intelligence (purpose mac-base, "
                               "H-2E-QUICKMAC-PICK) plus a d10 modifier (purpose "
                               "mac-modifier) on the high- or low-psionic table. Rolled with "
                               "the first exchange or encounter round that needs it.",
                "properties": {"intelligence": {"type": "integer", "minimum": 0, "maximum": 25},
                               "psionic": {"enum": ["high", "low"]}},
            },
            "mental_armor": {"type": "integer", "minimum": 0, "maximum": 20,
                             "description": "Mental Armor slots: −2 MAC each for a "
                                            "psionicist, −1 each for anyone else (a wild "
                                            "talent too)"},
            "save_paralyzation": {"type": "integer", "minimum": 1, "maximum": 20},
            "attacks": {"type": "array", "uniqueItems": True, "maxItems": len(attack_ids),
                        "items": {"enum": attack_ids}},
            "defenses": {"type": "array", "uniqueItems": True, "maxItems": len(defense_ids),
                         "items": {"enum": defense_ids}},
            "mind": {
                "type": "object", "additionalProperties": False,
                "properties": {
                    "state": {"enum": ["closed", "open"]},
                    "opened_by": {"enum": ["critical", "zero-psp", "attack", None]},
                    "locked_rounds": {"type": "integer", "minimum": 0, "maximum": 1000,
                                      "description": "round ends it stays locked open "
                                                     "for; the Wisdom checks begin as "
                                                     "the last of them ends"},
                    "last_defense": {"enum": [*defense_ids, None]},
                    "used_power": {"type": "boolean",
                                   "description": "a power was used on this open mind "
                                                  "successfully (nonpsionic save at −4)"},
                    "may_pay_to_close": {"type": "boolean",
                                         "description": "opened by a critical hit last "
                                                        "round: may pay 2 × last defense"},
                    "rounds_open": {"type": "integer", "minimum": 0, "maximum": 100_000},
                },
            },
            "conditions": {"type": "array", "uniqueItems": True, "maxItems": 32,
                           "items": {"type": "string", "minLength": 1, "maxLength": 40}},
            "condition_rounds": {"type": "object",
                                 "additionalProperties": {"type": "integer", "minimum": 0,
                                                          "maximum": 100_000},
                                 "description": "more rounds a condition lasts after this "
                                                "one; every key must be among conditions"},
            "hp": {"type": "integer", "minimum": -1_000_000, "maximum": 1_000_000,
                   "description": "hit points, lowered by psionic blast and psychic crush "
                                  "on an open mind"},
            "lost_powers": {"type": "array", "maxItems": 1000,
                            "items": {"type": "object", "additionalProperties": False,
                                      "required": ["days"],
                                      "properties": {
                                          "days": {"type": "integer", "minimum": 0},
                                          "hours": {"type": "integer", "minimum": 0,
                                                    "maximum": 23,
                                                    "description": "of the next day, "
                                                    "already passed in rests"}}},
                            "description": "powers lost to mind thrust on an open mind, "
                                           "each for the days still to pass"},
        },
    }


def slug(name: str) -> str:
    """An id made from a name (``engine.system.slug``: lower case, letters and digits of
    any script, runs of other characters become '-'), "combatant" for a name with no
    letter or digit."""
    return name_slug(name) or "combatant"


def closed_mind() -> JSON:
    """The default mind state: closed, nothing pending."""
    return {"state": "closed", "opened_by": None, "locked_rounds": 0, "last_defense": None,
            "used_power": False, "may_pay_to_close": False, "rounds_open": 0}


class Normaliser:
    """Validates and completes combatants for one set of tables (schema compiled once)."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self.schema = combatant_schema(tables)
        self._validator = QuickValidator(self.schema, check_schema=False)

    def validate(self, raw: Any, path: str) -> None:
        """Raise ``InvalidCombatant`` listing every schema error of ``raw``."""
        problems = schema_problems(self._validator, raw, path)
        if problems:
            raise InvalidCombatant(problems)

    def normalise(self, raw: Mapping[str, Any], path: str, options: Mapping[str, Any],
                  validated: bool = False, frozen: bool = False) -> JSON:
        """The full combatant for ``raw`` (validated unless ``validated``), derivations
        filled in under the house rules in ``options``; read-only (``freeze``d) when
        ``frozen``. ``raw`` is not changed and shares nothing with the answer."""
        if not validated:
            self.validate(raw, path)
        # One level is enough: every container a valid combatant holds is rebuilt below.
        c: JSON = dict(raw)
        problems: list[Problem] = []

        def bad(field: str, message: str) -> None:
            problems.append(Problem(f"{path}/{field}", message))

        c["id"] = c.get("id") or slug(str(c.get("name", "")))
        c["name"] = c.get("name") or c["id"]
        psp_max = c.get("psp_max", 0)
        kind = c.get("kind") or ("psionicist" if psp_max > 0 else "nonpsionic")
        c["kind"] = kind
        psionic = kind in PSIONIC_KINDS
        if psionic:
            if psp_max < 1:
                bad("psp_max", f"a {kind} needs a PSP maximum of 1 or more")
            if c.get("level", 0) < 1:
                bad("level", f"a {kind} needs a level (monsters: Hit Dice) of 1 or more")
        else:
            for field in ("psp", "psp_max"):
                if c.get(field, 0) != 0:
                    bad(field, "a nonpsionic mind has no PSPs (give kind or psp_max > 0)")
            for field in ("attacks", "defenses"):
                if c.get(field):
                    bad(field, "a nonpsionic mind knows no psionic modes")
        c["psp_max"] = psp_max
        c["psp"] = c.get("psp", psp_max)
        if c["psp"] > psp_max:
            bad("psp", f"current PSPs {c['psp']} exceed the maximum {psp_max}")
        c["level"] = c.get("level", 0)
        c["class_group"] = c.get("class_group") or ("psionicist" if psionic else "warrior")
        c["attacks"] = list(c.get("attacks", []))
        c["defenses"] = list(c.get("defenses", []))
        if psionic and options[house.MODE_LIMITS] and c["class_group"] != "monster" \
                and c["level"] >= 1:
            limit = known_modes_limit(self.tables, kind, c["level"])
            for field in ("attacks", "defenses"):
                if len(c[field]) > limit:
                    noun = "attack" if field == "attacks" else "defense"
                    bad(field, f"a level-{c['level']} {kind} knows at most {limit} {noun} "
                               f"mode(s), not {len(c[field])} ({house.MODE_LIMITS})")
        quick = c.get("quick_mac")
        mac_given = c.get("mac") is not None
        if psionic and not mac_given and quick is None:
            for field in ("int", "wis"):
                if field not in c:
                    bad(field, f"a {kind} needs {field} to derive its MAC (or give mac)")
        default = int(self.tables.raw["default_ability"])
        default_int = max(1, quick["intelligence"]) if quick else default
        c["int"] = c.get("int", default_int)
        c["wis"] = c.get("wis", default)
        c["con"] = c.get("con", default)
        c["mental_armor"] = c.get("mental_armor", 0)
        given_mind = c.get("mind") or {}
        opened_by = given_mind.get("opened_by")
        # §1.1/§1.4: a nonpsionic mind opens on a hit, a psionic one by a critical hit or at
        # 0 PSPs; each closes by its own procedure (§1.5), so a cause of the other kind
        # would close it the wrong way.
        causes = ("critical", "zero-psp") if psionic else ("attack",)
        if given_mind.get("state") == "open" and opened_by is not None \
                and opened_by not in causes:
            bad("mind/opened_by", f"a {kind} mind is not opened by {json_text(opened_by)}: "
                                  f"it opens by {' or '.join(causes)} (RULES.md §1.1)")
        conditions = c.get("conditions", ())
        for condition in c.get("condition_rounds", {}):
            # as combat-strength and power-pool: rounds left on a condition the creature
            # does not have would count down nothing, and hide a sheet's stale state
            if condition not in conditions:
                bad(pointer("condition_rounds", condition),
                    f"{json_text(condition)} is not among the conditions")
        if problems:
            raise InvalidCombatant(problems)
        if not mac_given:
            c["mac"] = None if quick else derive_mac(
                self.tables, c["wis"], c["int"], c["mental_armor"], kind)
        if "mthac0" not in c or (c["mthac0"] is None and psionic):
            c["mthac0"] = mthac0_for(self.tables, kind, c["level"], options[house.WT_MTHAC0])
        if not psionic:
            c["mthac0"] = None
        if "save_paralyzation" not in c:
            c["save_paralyzation"] = save_paralyzation(
                self.tables, c["class_group"], c["level"], options[house.SAVE_0])
        mind = closed_mind()
        mind.update(c.get("mind", {}))
        # Every container is new. Each holds scalars only (a lost power is {"days": n}),
        # so building them read-only gives what freeze(c) would, at half the cost.
        array, obj = (FrozenList, FrozenDict) if frozen else (list, dict)
        c["attacks"] = array(c["attacks"])
        c["defenses"] = array(c["defenses"])
        c["mind"] = obj(mind)
        c["conditions"] = array(c.get("conditions", ()))
        c["condition_rounds"] = obj(c.get("condition_rounds", {}))
        c["lost_powers"] = array([obj(p) for p in c.get("lost_powers", ())])
        if quick is not None:
            c["quick_mac"] = obj(quick)
        return FrozenDict(c) if frozen else c


#: how ``stopping_conditions`` names a combatant at 0 hit points or fewer
DOWN = "down (0 hit points or fewer)"


def stopping_conditions(c: Mapping[str, Any], stun_stops: bool = True) -> list[str]:
    """The conditions of ``c`` that stop it acting this round, in its own order, and
    ``DOWN`` at 0 hit points or fewer; a stun counts only when ``stun_stops`` (house
    default H-2E-STUN)."""
    stopped = [x for x in c["conditions"] if x in CONDITIONS_THAT_STOP_ACTION
               and (stun_stops or x != "stunned")]
    return [*stopped, DOWN] if is_down(c) else stopped


def can_act(c: Mapping[str, Any], stun_stops: bool = True) -> bool:
    """Whether a combatant is free to choose attacks and defenses this round."""
    return not stopping_conditions(c, stun_stops)
