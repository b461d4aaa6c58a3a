"""Params schemas shared by several methods (plain dicts, no ``$ref``, so that each
property's schema can stand alone in the OpenRPC document)."""

from __future__ import annotations

from typing import Any

JSON = dict[str, Any]

NO_PARAMS: JSON = {"type": "object", "additionalProperties": False}

SYSTEM_ID: JSON = {"type": "string", "minLength": 1, "maxLength": 100,
                   "description": "a system id from systems.list (revised-2e ...)"}
ENCOUNTER_ID: JSON = {"type": "string", "minLength": 1, "maxLength": 100,
                      "description": "an encounter id from encounter.create"}
COMBATANT_ID: JSON = {"type": "string", "minLength": 1, "maxLength": 200}
REVISION: JSON = {"type": "integer", "minimum": 0,
                  "description": "the revision the caller expects (4009 when it moved on)"}
SEED: JSON = {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1,
              "description": "makes random dice reproducible"}
DICE: JSON = {
    "type": "object",
    "description": "die values by purpose, consumed in rolling order",
    "maxProperties": 64,
    "additionalProperties": {"type": "array", "maxItems": 1000,
                             "items": {"type": "integer"}},
}
OPTIONS: JSON = {"type": "object", "description": "house rules by id: {\"H-...\": value}",
                 "maxProperties": 200}
ADAPTER_REF: JSON = {
    "type": "object",
    "required": ["adapter", "data"],
    "additionalProperties": False,
    "properties": {"adapter": {"type": "string", "description": "an id from adapters.list"},
                   "data": {"description": "raw VTT actor/character JSON"}},
}
COMBATANT: JSON = {
    "type": "object",
    "description": "the system's combatant object (systems.describe combatant_schema), or "
                   "{adapter, data} to import raw VTT data",
}
EXCHANGE_MEMBERS: JSON = {
    "system": SYSTEM_ID,
    "attacker": COMBATANT,
    "defender": COMBATANT,
    "attack": {"type": "object", "description": "the attack: mode and system options"},
    "defense": {"type": ["object", "null"],
                "description": "the defense: mode and system options; null for none"},
    "options": OPTIONS,
}
EXCHANGE: JSON = {
    "type": "object",
    "required": ["system"],
    "description": "further members a system's request_schema names (power-pool: defenders, "
                   "defenses, allies, controller, controllers, puppets) are passed through to "
                   "the system",
    "properties": {**EXCHANGE_MEMBERS, "dice": DICE, "seed": SEED},
}
ODDS: JSON = {
    "type": "object",
    "required": ["system"],
    "description": EXCHANGE["description"],
    "properties": {
        **EXCHANGE_MEMBERS,
        "assume_known": {
            "type": "array", "maxItems": 200, "uniqueItems": True,
            "items": {"type": "string", "maxLength": 32,
                      "pattern": "^/[a-z_]+(/(0|[1-9][0-9]{0,2}))?$"},
            "description": "JSON Pointers to minds of the request that may defend "
                           "(/defender; power-pool also /defenders/N, /allies/N, "
                           "/controller, /controllers/N): the odds are those of each "
                           "knowing the defense the request gives it and able to pay for "
                           "it, for a caller that may not see its sheet (a refusal would "
                           "tell what it knows and holds); a mind without psionics stays "
                           "as it is"},
        "least_chance": {
            "type": "number", "minimum": 0, "maximum": 1,
            "description": "Leave out of outcomes and damage.distribution every entry "
                           "less likely than this, for a caller that wants a short "
                           "answer (combat-strength's penetrating damage has hundreds of "
                           "values); what is left out is summed in left_out, and "
                           "damage.mean and damage.dealt still count everything "
                           "(combat-strength's crushed, which comes with a damage "
                           "value, always stays)"},
    },
    "not": {"anyOf": [{"required": ["dice"]}, {"required": ["seed"]}]},
}
UPDATES: JSON = {"type": "array", "items": {"type": "object"},
                 "description": "write-backs from the adapters of {adapter, data} combatants"}
END_ROUND: JSON = {
    "type": "object",
    "required": ["system", "combatants"],
    "additionalProperties": False,
    "properties": {
        "system": SYSTEM_ID,
        "combatants": {"type": "array", "minItems": 1, "items": COMBATANT,
                       "description": "everyone whose round ends (at most max_combatants)"},
        "choices": {"type": "object", "maxProperties": 64,
                    "additionalProperties": {"type": "object"},
                    "description": "what a combatant chooses at the round's end, by id "
                                   "(systems.describe round_end_schema; revised-2e: "
                                   "{\"close\": true} pays to close a mind a critical hit "
                                   "opened; power-pool: {\"release\": [id], \"keep\": "
                                   "[{\"target\": id, \"by\": \"die\"}], "
                                   "\"cannot_perceive\": [id]} for a controller's "
                                   "control)"},
        "puppets": {"type": "array", "items": COMBATANT,
                    "description": "power-pool: creatures the combatants control whose "
                                   "round does not end here, written back (others) when "
                                   "the control over them ends"},
        "options": OPTIONS,
        "dice": DICE,
        "seed": SEED,
    },
}
#: exchange.end_round's params without the choices and dice it asks about.
ROUND_END_CHOICES: JSON = END_ROUND | {"properties": {
    "system": SYSTEM_ID,
    "combatants": END_ROUND["properties"]["combatants"] | {
        "description": "everyone whose round is about to end (at most max_combatants)"},
    "options": OPTIONS,
}}
REST: JSON = {
    "type": "object",
    "required": ["system", "combatants"],
    "description": "further members the system's rest schema names (systems.describe "
                   "rest_schema) are passed through to it and checked there",
    "properties": {
        "system": SYSTEM_ID,
        "combatants": END_ROUND["properties"]["combatants"] | {
            "description": "everyone who rests (at most max_combatants)"},
        "options": OPTIONS,
        "hours": {"type": "integer", "description": "revised-2e: full hours of sleep or "
                                                    "meditation (1 to 1000)"},
        "puppets": {"type": "array", "items": COMBATANT,
                    "description": "power-pool: creatures the combatants control that do "
                                   "not rest with them, written back (others) when the "
                                   "control over them ends"},
        "dice": DICE,
        "seed": SEED,
    },
}


# -- results ---------------------------------------------------------------------------
# What the encounter methods answer, for the OpenRPC document (and checked against real
# answers by the tests). Members a system adds to a view or a step are left open.
def answer(required: list[str], **members: JSON) -> JSON:
    """An object result schema: ``members`` described, those named in ``required`` always
    present, others allowed."""
    return {"type": "object", "required": required, "properties": members}


REVISION_NOW: JSON = {"type": "integer", "minimum": 0,
                      "description": "the encounter's revision after the call"}
WARNINGS: JSON = {"type": "array", "items": {"type": "string"},
                  "description": "what an adapter could not read from the sheet"}
COMBATANT_IDS: JSON = {"type": "array", "items": COMBATANT_ID}
ENCOUNTER_NAME: JSON = {"type": ["string", "null"], "description": "as given at creation"}
UPDATES_FAILED: JSON = {"type": "object", "required": ["error_id"],
                        "properties": {"error_id": {"type": "string"}},
                        "description": "the write-backs could not be made; the daemon's "
                                       "log has the error id's cause (the step is stored)"}
ROLLS: JSON = {"type": "array", "items": {
    "type": "object", "required": ["purpose", "sides", "value"],
    "properties": {"purpose": {"type": "string"}, "sides": {"type": "integer"},
                   "value": {"type": "integer"},
                   "by": {"type": ["string", "null"]},
                   "follows": {"type": ["integer", "null"]}}},
    "description": "every die rolled or supplied, in rolling order"}
ENCOUNTER_SUMMARY: JSON = answer(
    ["id", "system", "name", "revision", "created_at", "updated_at"],
    id=ENCOUNTER_ID, system=SYSTEM_ID, name=ENCOUNTER_NAME, revision=REVISION_NOW,
    created_at={"type": "string", "description": "ISO 8601, UTC"},
    updated_at={"type": "string", "description": "ISO 8601, UTC"})
LOGGED_STEP: JSON = answer(
    ["revision", "kind", "params", "rolls", "result", "created_at", "undone_by"],
    revision={"type": "integer", "minimum": 1},
    kind={"enum": ["add", "refresh", "declare", "resolve", "undo"]},
    params={"type": "object", "description": "the call's params as stored, but on a "
                                             "hidden step: a declaration's are combatant_id, "
                                             "choice null and hidden true; an undone "
                                             "resolve's lack dice and seed, a refresh's "
                                             "its combatant"},
    rolls={"type": ["array", "null"], "description": "null while hidden"},
    result={"description": "what the call answered, as stored (null while hidden)"},
    created_at={"type": "string", "description": "ISO 8601, UTC"},
    undone_by={"type": ["integer", "null"],
               "description": "the revision of the undo that reverted this step"},
    hidden={"const": True, "description": "present on a step that would tell a choice not "
                                          "yet resolved (a declaration, or an undone "
                                          "resolve and a refresh it took away)"})
