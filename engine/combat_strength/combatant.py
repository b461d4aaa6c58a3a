"""The combat-strength combatant: schema, defaults and derivations (docs/COMBATANTS.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import InvalidCombatant, Problem, pointer
from ..schemacheck import QuickValidator
from ..system import MAX_ID_LENGTH, schema_problems, slug
from .rules import Tables

#: A ceiling far above any published creature; keeps arithmetic and JSON small.
MAX_STRENGTH = 100_000
MAX_ID = MAX_ID_LENGTH


def combatant_schema(tables: Tables) -> dict[str, Any]:
    """JSON Schema (2020-12) of a combatant as a caller may give it."""
    strength = {"type": "integer", "minimum": 0, "maximum": MAX_STRENGTH}
    ability = {"type": "integer", "minimum": 0, "maximum": 25, "default": 10}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "combat-strength combatant",
        "type": "object",
        "properties": {
            "id": {"type": "string", "minLength": 1, "maxLength": MAX_ID,
                   "description": "unique in an exchange or encounter; made from name if absent"},
            # not empty: the summaries and chat cards name a combatant by it ("Korr
            # attacks Bob"), as in the other systems
            "name": {"type": "string", "minLength": 1, "maxLength": 200},
            "attack_strength": {**strength, "description": "current; defaults to the max"},
            "attack_strength_max": {**strength, "description": "defaults to the current"},
            "defense_strength": {**strength, "description": "current; defaults to the max"},
            "defense_strength_max": {**strength, "description": "defaults to the current"},
            "original_total": {**strength, "description":
                               "original total psionic ability for the defenseless table; "
                               "defaults to attack_strength_max + defense_strength_max"},
            "psionic": {"type": "boolean",
                        "description": "defaults to true when either maximum is above 0"},
            "int": ability,
            "wis": ability,
            # maxItems: as many as there are modes (unique), so a longer list is
            # refused by its length alone (engine/schemacheck.py, Validator)
            "attacks": {"type": "array", "uniqueItems": True, "maxItems": len(tables.attacks),
                        "items": {"enum": list(tables.attacks)},
                        "description": "known attack modes; all five for a psionic if absent"},
            "defenses": {"type": "array", "uniqueItems": True,
                         "maxItems": len(tables.defenses),
                         "items": {"enum": list(tables.defenses)},
                         "description": "known defense modes; all five for a psionic if absent"},
            "conditions": {"type": "array", "uniqueItems": True, "maxItems": 64,
                           "items": {"type": "string", "minLength": 1, "maxLength": 64}},
            "condition_rounds": {
                "type": "object", "maxProperties": 64,
                "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 100_000},
                "description": "rounds left of a timed condition; absent: until removed"},
        },
        "anyOf": [{"required": ["id"]}, {"required": ["name"]}],
        "additionalProperties": False,
    }


def make_id(name: str) -> str:
    """A kebab-case id from a display name ("Korr the Red" → "korr-the-red", "Zoë" →
    "zoë": ``engine.system.slug``); "" for a name with no letter or digit."""
    return slug(name)


class CombatantFactory:
    """Validates and completes combatants against one set of tables."""

    def __init__(self, tables: Tables) -> None:
        self.tables = tables
        self.schema = combatant_schema(tables)
        self._validator = QuickValidator(self.schema, check_schema=False)

    def __call__(self, raw: Mapping[str, Any], path: str = "") -> dict[str, Any]:
        """The full combatant, or ``InvalidCombatant`` with paths under ``path``."""
        if not isinstance(raw, Mapping):
            raise InvalidCombatant(Problem(path, "a combatant must be an object"))
        problems = schema_problems(self._validator, dict(raw), path)
        if problems:
            raise InvalidCombatant(problems)
        name = raw.get("name")
        cid = raw.get("id")
        if cid is None:
            cid = make_id(str(name))
            if not cid:
                problems.append(Problem(f"{path}/name", "no id given and none can be made from "
                                        "this name (it needs a letter or a digit)"))
        if name is None:
            name = cid
        as_max, as_now = _pair(raw, "attack_strength", path, problems)
        ds_max, ds_now = _pair(raw, "defense_strength", path, problems)
        psionic = raw.get("psionic", as_max > 0 or ds_max > 0)
        if not psionic and (as_max > 0 or ds_max > 0):
            problems.append(Problem(f"{path}/psionic", "a non-psionic creature has no attack or "
                                    "defense strength"))
        everything = psionic and "attacks" not in raw
        attacks = list(raw.get("attacks", list(self.tables.attacks) if everything else []))
        everything = psionic and "defenses" not in raw
        defenses = list(raw.get("defenses", list(self.tables.defenses) if everything else []))
        if not psionic and (attacks or defenses):
            problems.append(Problem(f"{path}/psionic",
                                    "a non-psionic creature knows no attack or defense modes"))
        conditions = list(raw.get("conditions", []))
        rounds = dict(raw.get("condition_rounds", {}))
        for key in rounds:
            if key not in conditions:
                problems.append(Problem(pointer(path, "condition_rounds", key),
                                        "names a condition the combatant does not have"))
        if problems:
            raise InvalidCombatant(problems)
        return {
            "id": cid,
            "name": name,
            "psionic": psionic,
            "attack_strength": as_now,
            "attack_strength_max": as_max,
            "defense_strength": ds_now,
            "defense_strength_max": ds_max,
            "original_total": raw.get("original_total", as_max + ds_max),
            "int": raw.get("int", 10),
            "wis": raw.get("wis", 10),
            "attacks": attacks,
            "defenses": defenses,
            "conditions": conditions,
            "condition_rounds": rounds,
        }


def _pair(raw: Mapping[str, Any], field: str, path: str,
          problems: list[Problem]) -> tuple[int, int]:
    """(max, current) of one strength: each defaults to the other, both to 0."""
    now = raw.get(field)
    top = raw.get(f"{field}_max")
    if top is None:
        top = 0 if now is None else now
    if now is None:
        now = top
    if now > top:
        problems.append(Problem(f"{path}/{field}", f"{now} is above {field}_max ({top})"))
    return int(top), int(now)


def combat_strength(combatant: Mapping[str, Any]) -> int:
    """Combat Strength = current attack strength + current defense strength (RULES 2.1)."""
    return int(combatant["attack_strength"]) + int(combatant["defense_strength"])


def incapacitated(tables: Tables, combatant: Mapping[str, Any]) -> str | None:
    """The first condition that keeps the combatant from acting, if any."""
    for condition in combatant["conditions"]:
        if tables.incapacitates(condition):
            return str(condition)
    return None


def dead(tables: Tables, combatant: Mapping[str, Any]) -> str | None:
    """The condition that killed the combatant (one the tables mark ``kills``), if any:
    a dead creature has no mind left to attack, and nothing it could do is worth telling."""
    for condition in combatant["conditions"]:
        if tables.kills(condition):
            return str(condition)
    return None
