"""The power-pool combatant: its JSON Schema, defaults and cross-field checks.

RULES.md §3.1, docs/COMBATANTS.md. A power pool is ``hit_dice`` dice of the
creature's hit-die type (seed 001: "A power pool is composed of dice of equal type
and number to a creature's hit dice"). ``pool`` is what is available now; each
entry of ``dedicated`` is one die set aside, so ``pool + len(dedicated)`` never
exceeds ``hit_dice``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidCombatant, Problem, json_text
from ..system import JSON, MAX_ID_LENGTH, Validates, schema_problems
from ..system import slug as name_slug

CONDITIONS: tuple[str, ...] = (
    "unaware", "surprised", "stunned", "asleep", "unconscious", "dazed", "frightened",
    "possessed",
)

#: The purpose of a die dedicated to keeping psionic control (RULES.md §3.4).
CONTROL_PURPOSE = "control"


def slug(name: str) -> str:
    """A combatant id made from its name (``engine.system.slug``: lower case, letters
    and digits of any script, words joined by hyphens), "combatant" for a name with
    no letter or digit."""
    return name_slug(name) or "combatant"


def combatant_schema(tables: Mapping[str, Any]) -> JSON:
    """JSON Schema (2020-12) of a power-pool combatant as callers may give it."""
    modes = tables["modes"]
    attacks = sorted(m for m, d in modes.items() if d["kind"] == "attack")
    defenses = sorted(m for m, d in modes.items() if d["kind"] == "defense")
    ident = {"type": "string", "minLength": 1, "maxLength": MAX_ID_LENGTH}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "power-pool combatant",
        "type": "object",
        "required": ["hit_dice", "die"],
        "anyOf": [{"required": ["id"]}, {"required": ["name"]}],
        "additionalProperties": False,
        "properties": {
            "id": {**ident, "description": "unique in an exchange or encounter; "
                   "made from name when absent"},
            "name": {"type": "string", "minLength": 1, "maxLength": 200},
            "hit_dice": {"type": "integer", "minimum": 0, "maximum": 1000,
                         "description": "number of dice in the full power pool"},
            "die": {"enum": list(tables["ladder"]), "description": "the hit-die type"},
            "pool": {"type": "integer", "minimum": 0,
                     "description": "dice available now; default hit_dice - len(dedicated) "
                                    "(0 while controlled)"},
            "dedicated": {
                "type": "array", "maxItems": 1000,
                "description": "one entry per die set aside (maintained powers, control)",
                "items": {
                    "type": "object", "required": ["purpose"], "additionalProperties": False,
                    "properties": {"purpose": {"type": "string", "minLength": 1},
                                   "target": {"type": ["string", "null"]}},
                },
            },
            "psionic": {"type": "boolean",
                        "description": "psionically active; default: knows any mode"},
            "mindless": {"type": "boolean", "default": False},
            # maxItems: as many as there are modes (conditions), each once, so a longer
            # list is refused by its length alone (engine/schemacheck.py, Validator)
            "attacks": {"type": "array", "uniqueItems": True, "maxItems": len(attacks),
                        "items": {"enum": attacks}},
            "defenses": {"type": "array", "uniqueItems": True, "maxItems": len(defenses),
                         "items": {"enum": defenses}},
            "conditions": {"type": "array", "uniqueItems": True,
                           "maxItems": len(CONDITIONS), "items": {"enum": list(CONDITIONS)}},
            "condition_rounds": {
                "type": "object",
                "description": "for timed conditions: how many more round ends they last",
                "propertyNames": {"enum": list(CONDITIONS)},
                "additionalProperties": {"type": "integer", "minimum": 1, "maximum": 1000},
            },
            "controlled_by": {"type": ["string", "null"], "minLength": 1},
            "controlling": {
                "type": "array",
                "items": {
                    "type": "object", "required": ["id", "kept_by"],
                    "additionalProperties": False,
                    "properties": {
                        "id": ident,
                        "kept_by": {"enum": ["die", "action"]},
                        "wave": {"type": ["string", "null"],
                                 "description": "Psionic Wave group label: released together"},
                    },
                },
            },
            "spell_levels": {"type": "array", "maxItems": 200,
                             "items": {"type": "integer", "minimum": 1, "maximum": 9}},
            "blank_mind_save": {"type": ["integer", "null"], "minimum": 2, "maximum": 20,
                                "description": "d20 target of the save against Blank Mind; "
                                               "null uses H-PP-BLANK-SAVE"},
            "hp": {"type": ["integer", "null"]},
        },
    }


def link_key(entry: Mapping[str, Any]) -> str:
    """The control link an entry of ``controlling`` belongs to: its wave or its id.
    Wave labels and the ids of creatures held on their own share this one namespace, so
    a sheet may not give a wave the id of a creature it holds on its own
    (``cross_problems``), and the engine never does (``control.establish``)."""
    wave = entry.get("wave")
    return str(wave) if wave else str(entry["id"])


def normalize(raw: Mapping[str, Any], path: str,
              validator: Validates) -> JSON:
    """Validate ``raw`` and return the full combatant with every default filled in."""
    if not isinstance(raw, Mapping):
        raise InvalidCombatant(Problem(path, "a combatant must be an object"))
    problems = schema_problems(validator, dict(raw), path)
    if problems:
        raise InvalidCombatant(problems)
    c: JSON = {k: _copy(v) for k, v in raw.items()}
    name = c.get("name") or c["id"]
    cid = c.get("id") or slug(name)
    dedicated = [{"purpose": d["purpose"], "target": d.get("target")}
                 for d in c.get("dedicated", [])]
    controlled_by = c.get("controlled_by")
    hit_dice: int = c["hit_dice"]
    attacks = list(c.get("attacks", []))
    defenses = list(c.get("defenses", []))
    pool_default = 0 if controlled_by else max(hit_dice - len(dedicated), 0)
    out: JSON = {
        "id": cid,
        "name": name,
        "hit_dice": hit_dice,
        "die": c["die"],
        "pool": c.get("pool", pool_default),
        "dedicated": dedicated,
        "psionic": c.get("psionic", bool(attacks or defenses)),
        "mindless": c.get("mindless", False),
        "attacks": attacks,
        "defenses": defenses,
        "conditions": list(c.get("conditions", [])),
        "condition_rounds": dict(c.get("condition_rounds", {})),
        "controlled_by": controlled_by,
        "controlling": [{"id": e["id"], "kept_by": e["kept_by"], "wave": e.get("wave")}
                        for e in c.get("controlling", [])],
        "spell_levels": list(c.get("spell_levels", [])),
        "blank_mind_save": c.get("blank_mind_save"),
        "hp": c.get("hp"),
    }
    problems = cross_problems(out, path)
    if problems:
        raise InvalidCombatant(problems)
    return out


def cross_problems(c: Mapping[str, Any], path: str) -> list[Problem]:
    """Checks one field's schema cannot make: pool and dedicated dice against hit dice,
    control links against their dedicated dice, timers against conditions."""
    problems: list[Problem] = []
    hit_dice = c["hit_dice"]
    if c["pool"] > hit_dice:
        problems.append(Problem(f"{path}/pool",
                                f"pool {c['pool']} exceeds hit_dice {hit_dice}"))
    elif c["pool"] + len(c["dedicated"]) > hit_dice:
        problems.append(Problem(
            f"{path}/dedicated",
            f"pool {c['pool']} plus {len(c['dedicated'])} dedicated dice exceed "
            f"hit_dice {hit_dice}"))
    if c["controlled_by"] is not None:
        if c["controlled_by"] == c["id"]:
            problems.append(Problem(f"{path}/controlled_by", "a creature cannot control itself"))
        if c["pool"] != 0:
            problems.append(Problem(f"{path}/pool",
                                    "a creature under psionic control has a pool of 0"))
        # seed 001: "Any powers being maintained by the controlled creature end and the
        # power dice used to maintain them are expended" (control kept by a die included)
        if c["dedicated"]:
            problems.append(Problem(f"{path}/dedicated", (
                "a creature under psionic control keeps no dice dedicated: its maintained "
                "powers ended and their dice were expended")))
        if c["controlling"]:
            problems.append(Problem(f"{path}/controlling", (
                "a creature under psionic control holds no control of its own: it ended "
                "when the creature fell under control")))
    for cond in c["condition_rounds"]:
        if cond not in c["conditions"]:
            problems.append(Problem(f"{path}/condition_rounds/{cond}",
                                    f"{json_text(cond)} is not among the conditions"))
    seen: set[str] = set()
    link_kept: dict[str, str] = {}
    for i, entry in enumerate(c["controlling"]):
        if entry["id"] == c["id"]:
            problems.append(Problem(f"{path}/controlling/{i}/id",
                                    "a creature cannot control itself"))
        if entry["id"] in seen:
            problems.append(Problem(f"{path}/controlling/{i}/id",
                                    f"{json_text(entry['id'])} is listed twice"))
        seen.add(entry["id"])
        key = link_key(entry)
        if link_kept.setdefault(key, entry["kept_by"]) != entry["kept_by"]:
            problems.append(Problem(f"{path}/controlling/{i}/kept_by",
                                    "a Psionic Wave's control is kept one way for all"))
    # a wave named like a creature held on its own would share its link key: keeping,
    # releasing or counting the dice of the one would do it to the other too. The message
    # names no other place: an adapter moves the problem's path to where it read the
    # field, and a path written into the text would point into the combatant it built.
    alone = {e["id"] for e in c["controlling"] if not e["wave"]}
    told: set[str] = set()
    for i, entry in enumerate(c["controlling"]):
        wave = entry["wave"]
        if wave and wave in alone and wave not in told:
            told.add(wave)
            problems.append(Problem(f"{path}/controlling/{i}/wave", (
                f"wave label {json_text(wave)} is also the id of a creature held on its own "
                "in the same controlling: a wave's name must differ from every such id, or "
                "the two links would be one (rename the wave, and the target of each die "
                "dedicated to it)")))
    # every creature held by a die has exactly one die dedicated to its link (a Psionic
    # Wave's link one for each of its creatures), and back
    die_links = Counter(link_key(e) for e in c["controlling"] if e["kept_by"] == "die")
    dice_for = Counter(d["target"] for d in c["dedicated"] if d["purpose"] == CONTROL_PURPOSE)
    for key in sorted(set(die_links) | set(dice_for), key=str):
        if die_links[key] != dice_for[key]:
            problems.append(Problem(
                f"{path}/dedicated",
                f"control of {json_text(key)}: {dice_for[key]} die dedicated with purpose "
                f"'control', {die_links[key]} needed (kept_by 'die' needs one die per "
                "creature held)"))
    return problems


def link_problems(given: Sequence[tuple[str, Mapping[str, Any]]]) -> list[Problem]:
    """Control links that the creatures given together (each with the path it came
    from) tell two ways: a controller's ``controlling`` names a creature given whose
    ``controlled_by`` is someone else, or a creature's ``controlled_by`` names a
    controller given that does not list it. Either way one of the two sheets is stale,
    and acting on it would free or redirect the wrong creature."""
    by_id: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for path, c in given:
        by_id.setdefault(c["id"], (path, c))
    problems: list[Problem] = []
    for path, c in by_id.values():
        for i, entry in enumerate(c["controlling"]):
            held = by_id.get(entry["id"])
            if held is not None and held[1]["controlled_by"] != c["id"]:
                problems.append(Problem(f"{path}/controlling/{i}/id", (
                    f"{c['name']} controls {held[1]['name']} here, but {held[1]['name']}'s "
                    f"controlled_by ({held[0]}) is {json_text(held[1]['controlled_by'])}")))
        controller = by_id.get(c["controlled_by"]) if c["controlled_by"] else None
        if controller is not None and all(e["id"] != c["id"]
                                           for e in controller[1]["controlling"]):
            problems.append(Problem(f"{path}/controlled_by", (
                f"{c['name']} is under {controller[1]['name']}'s control here, but "
                f"{controller[1]['name']}'s controlling ({controller[0]}) does not list it")))
    return problems


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_copy(v) for v in value]
    return value
