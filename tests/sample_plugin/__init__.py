"""A tiny plugin that proves the plugin path: the ``sample-duel`` rule system and the
``sample.echo`` method, plus deliberately broken entry-point targets for the loader's
tests. Not a real psionics system: a d6 jab against a d6 guard, one focus per hit."""

from __future__ import annotations

import asyncio
import datetime
from collections.abc import Mapping, Sequence
from fractions import Fraction
from types import SimpleNamespace
from typing import Any

import jsonschema

from companion.plugins import MethodSpec, Plugin
from companion.services import Context
from engine.dice import DiceSource
from engine.errors import InvalidCombatant, InvalidInput, RulesViolation
from engine.options import HouseRule
from engine.results import Change, Event, Resolution
from engine.system import JSON, System, schema_problems

COMBATANT_SCHEMA: JSON = {
    "type": "object",
    "required": ["id", "name"],
    "additionalProperties": False,
    "properties": {"id": {"type": "string", "minLength": 1},
                   "name": {"type": "string"},
                   "focus": {"type": "integer", "minimum": 0, "maximum": 20}},
}
REQUEST_SCHEMA: JSON = {
    "type": "object",
    "required": ["attacker", "defender", "attack"],
    "properties": {"attacker": {"type": "object"}, "defender": {"type": "object"},
                   "attack": {"type": "object", "required": ["mode"],
                              "properties": {"mode": {"enum": ["jab"]}}},
                   "defense": {"type": ["object", "null"],
                               "properties": {"mode": {"enum": ["guard"]}}},
                   "options": {"type": "object"}},
}
_COMBATANT = jsonschema.Draft202012Validator(COMBATANT_SCHEMA)


class SampleDuel(System):
    """Jab (d6, costs 1 focus) against guard (d6): a jab higher than the guard (or 4+
    against no guard) takes one focus from the defender."""

    id = "sample-duel"
    name = "Sample duel"
    source = "tests/sample_plugin"

    def house_rules(self) -> Sequence[HouseRule]:
        return [HouseRule("H-SAMPLE-GUARD-BONUS", "A guard adds 1 to its die.", False)]

    def combatant_schema(self) -> JSON:
        return COMBATANT_SCHEMA

    def request_schema(self) -> JSON:
        return REQUEST_SCHEMA

    def describe(self) -> JSON:
        return {"id": self.id, "name": self.name, "source": self.source,
                "modes": {"jab": {"cost": 1}, "guard": {"cost": 0}}, "tables": {},
                "combatant_schema": COMBATANT_SCHEMA,
                "dice_purposes": {"attack": 6, "defense": 6},
                "house_rules": [r.to_json() for r in self.house_rules()]}

    def combatant(self, raw: Mapping[str, Any], path: str = "") -> JSON:
        problems = schema_problems(_COMBATANT, raw, path)
        if problems:
            raise InvalidCombatant(problems)
        return {"focus": 3, **raw}

    def _exchange(self, attacker: JSON, defender: JSON, defense: Any,
                  options: Mapping[str, Any], dice: DiceSource) -> tuple[JSON, JSON, JSON]:
        if attacker["focus"] < 1:
            raise RulesViolation("focus-needed", f"{attacker['name']} has no focus left")
        attack = dice.roll("attack", 6, attacker["id"])
        guard = None
        if defense:
            guard = dice.roll("defense", 6, defender["id"])
            guard += 1 if options.get("H-SAMPLE-GUARD-BONUS") else 0
        hit = attack > guard if guard is not None else attack >= 4
        after_a = {**attacker, "focus": attacker["focus"] - 1}
        after_d = dict(defender)
        if hit:
            after_d["focus"] = max(0, defender["focus"] - 1)
        return after_a, after_d, {"hit": hit, "attack_roll": attack, "guard_roll": guard}

    def resolve(self, request: Mapping[str, Any], dice: DiceSource) -> Resolution:
        self.validate_request(request)
        options = self.options(request.get("options"))
        attacker = self.combatant(request["attacker"], "/attacker")
        defender = self.combatant(request["defender"], "/defender")
        mark = dice.mark()
        after_a, after_d, fields = self._exchange(attacker, defender,
                                                  request.get("defense"), options, dice)
        return Resolution(
            system=self.id, outcome="hit" if fields["hit"] else "miss",
            attacker=Change(attacker["id"], attacker, after_a),
            defender=Change(defender["id"], defender, after_d),
            rolls=dice.rolls_since(mark),
            events=(Event("focus-spent", attacker["id"], {"amount": 1}),),
            summary=f"{attacker['name']} jabs at {defender['name']}: "
                    f"{'hit' if fields['hit'] else 'miss'}",
            fields=fields, unused_dice={k: tuple(v) for k, v in dice.unused().items()})

    def odds(self, request: Mapping[str, Any]) -> JSON:
        self.validate_request(request)
        options = self.options(request.get("options"))
        bonus = 1 if options.get("H-SAMPLE-GUARD-BONUS") else 0
        if request.get("defense"):
            hits = sum(1 for a in range(1, 7) for g in range(1, 7) if a > g + bonus)
            p = Fraction(hits, 36)
        else:
            p = Fraction(3, 6)
        return {"outcomes": {"hit": float(p), "miss": float(1 - p)},
                "damage": {"mean": float(p), "distribution": [[0, float(1 - p)],
                                                              [1, float(p)]],
                           "truncated_mass": 0.0}}

    # -- encounters -------------------------------------------------------------------
    def encounter_new(self, options: Mapping[str, Any] | None) -> JSON:
        return {"round": 1, "options": self.options(options), "combatants": {},
                "order": [], "pending": {}}

    def encounter_add(self, state: Mapping[str, Any], combatant: Mapping[str, Any]
                      ) -> tuple[JSON, str]:
        full = self.combatant(combatant, "/combatant")
        if full["id"] in state["combatants"]:
            raise InvalidInput.at("/combatant/id", "already in the encounter")
        return ({**state, "combatants": {**state["combatants"], full["id"]: full},
                 "order": [*state["order"], full["id"]]}, full["id"])

    def encounter_waiting_for(self, state: Mapping[str, Any]) -> list[str]:
        return [c for c in state["order"] if c not in state["pending"]]

    def encounter_view(self, state: Mapping[str, Any]) -> JSON:
        return {"phase": "declare", "round": state["round"],
                "combatants": state["combatants"],
                "waiting_for": self.encounter_waiting_for(state),
                "declared": sorted(state["pending"])}

    def encounter_declare(self, state: Mapping[str, Any], combatant_id: str,
                          choice: Mapping[str, Any]) -> JSON:
        attack = choice.get("attack")
        if attack is not None and attack.get("mode") != "jab":
            raise InvalidInput.at("/choice/attack/mode", "the only attack is jab")
        return {**state, "pending": {**state["pending"], combatant_id: dict(choice)}}

    def encounter_pending_choices(self, state: Mapping[str, Any]) -> Mapping[str, Any]:
        return dict(state["pending"])

    def encounter_resolve(self, state: Mapping[str, Any], dice: DiceSource,
                          force: bool = False) -> tuple[JSON, JSON]:
        waiting = self.encounter_waiting_for(state)
        if waiting and not force:
            raise RulesViolation("everyone-declares", f"waiting for {', '.join(waiting)}")
        combatants = {k: dict(v) for k, v in state["combatants"].items()}
        exchanges = []
        for cid in state["order"]:
            attack = (state["pending"].get(cid) or {}).get("attack")
            if not attack:
                continue
            target = attack["target"]
            defense = (state["pending"].get(target) or {}).get("defense")
            mark = dice.mark()
            after_a, after_d, fields = self._exchange(
                combatants[cid], combatants[target], defense, state["options"], dice)
            combatants[cid], combatants[target] = after_a, after_d
            exchanges.append({"attacker": cid, "defender": target, **fields,
                              "rolls": [r.to_json() for r in dice.rolls_since(mark)]})
        new_state = {**state, "round": state["round"] + 1, "combatants": combatants,
                     "pending": {}}
        return new_state, {"round": state["round"], "exchanges": exchanges}


SYSTEM = SampleDuel()


async def echo(ctx: Context, params: dict[str, Any]) -> dict[str, Any]:
    """``sample.echo``: the params back, and which systems the daemon has."""
    return {"echo": params.get("text"), "systems": sorted(ctx.services.systems)}


ECHO = MethodSpec("sample.echo",
                  {"type": "object", "required": ["text"], "additionalProperties": False,
                   "properties": {"text": {"type": "string", "maxLength": 100}}},
                  echo, "Echo text back (sample plugin).",
                  result={"type": "object"})

PLUGIN = Plugin(name="sample", version="1.0", systems=(SYSTEM,), methods=(ECHO,))


def make_plugin() -> Plugin:
    """A zero-argument factory, as an entry point may name one."""
    return Plugin(name="sample-factory", version="1.0", methods=(
        MethodSpec("factory.ping", {"type": "object"}, echo, "ping"),))


# -- broken targets for the loader's tests ------------------------------------------------
NOT_A_PLUGIN = 42

BAD_SCHEMA = Plugin(name="bad-schema", version="0", methods=(
    MethodSpec("bad.method", {"type": "object", "properties": {"x": {"type": 12}}}, echo,
               "a params schema that does not compile"),))

COLLIDING = Plugin(name="colliding", version="0", methods=(
    MethodSpec("encounter.steal", {"type": "object"}, echo, "a core namespace"),))

NOT_NAMESPACED = Plugin(name="flat", version="0", methods=(
    MethodSpec("echo", {"type": "object"}, echo, "no namespace"),))


def failing_factory() -> Plugin:
    """A factory that raises, with text a client must never see."""
    raise RuntimeError("secret detail from inside the plugin")


def interrupted_factory() -> Plugin:
    """A factory that raises ``KeyboardInterrupt`` (as a Ctrl+C while it runs would)."""
    raise KeyboardInterrupt


async def boom(ctx: Context, params: dict[str, Any]) -> Any:
    """A method with a bug: its exception text must never reach the client."""
    raise RuntimeError("secret detail: /home/gm/.local/share/mindscape/token")


async def unserialisable(ctx: Context, params: dict[str, Any]) -> Any:
    """A method whose result JSON cannot hold."""
    return {"value": object()}


FAULTY = Plugin(name="faulty", version="1.0", methods=(
    MethodSpec("faulty.boom", {"type": "object"}, boom, "always fails"),
    MethodSpec("faulty.unserialisable", {"type": "object"}, unserialisable,
               "returns a value JSON cannot hold"),
))


# -- wrongly built plugins: each is reported and skipped, none stops the daemon --------
async def exits(ctx: Context, params: dict[str, Any]) -> Any:
    """A method that calls ``exit()``: the daemon must answer, not stop."""
    raise SystemExit(3)


async def interrupts(ctx: Context, params: dict[str, Any]) -> Any:
    """A method that raises ``KeyboardInterrupt`` (no real Ctrl+C): answered too."""
    raise KeyboardInterrupt


async def cancels_itself(ctx: Context, params: dict[str, Any]) -> Any:
    """A method that raises ``CancelledError`` of its own (its request was not
    cancelled): answered, the connection kept."""
    raise asyncio.CancelledError


async def never_answers(ctx: Context, params: dict[str, Any]) -> Any:
    """A method that awaits something that never comes."""
    await asyncio.Event().wait()


async def own_timeout(ctx: Context, params: dict[str, Any]) -> Any:
    """A method whose own work times out (not the daemon's limit)."""
    raise TimeoutError


class OwnBaseException(BaseException):
    """A plugin's own ``BaseException`` subclass."""


async def raises_own_base_exception(ctx: Context, params: dict[str, Any]) -> Any:
    raise OwnBaseException("secret detail")


async def raises_generator_exit(ctx: Context, params: dict[str, Any]) -> Any:
    raise GeneratorExit


async def recurses_for_ever(ctx: Context, params: dict[str, Any]) -> Any:
    """Its own runaway recursion (RecursionError), whatever its params."""
    def deeper(n: int) -> int:
        return deeper(n + 1)
    return deeper(0)


async def answers_too_deep(ctx: Context, params: dict[str, Any]) -> Any:
    """A result nested deeper than either JSON encoder goes (Python 3.13's writes 3000
    levels)."""
    value: Any = {}
    for _ in range(100_000):
        value = {"a": value}
    return value


UNRULY = Plugin(name="unruly", version="1.0", methods=(
    MethodSpec("unruly.own-base", {"type": "object"}, raises_own_base_exception,
               "raises a BaseException subclass of its own"),
    MethodSpec("unruly.generator-exit", {"type": "object"}, raises_generator_exit,
               "raises GeneratorExit"),
    MethodSpec("unruly.recursion", {"type": "object"}, recurses_for_ever,
               "raises RecursionError of its own"),
    MethodSpec("unruly.too-deep", {"type": "object"}, answers_too_deep,
               "answers a result nested 3000 deep"),
    MethodSpec("unruly.exit", {"type": "object"}, exits, "calls exit()"),
    MethodSpec("unruly.interrupt", {"type": "object"}, interrupts,
               "raises KeyboardInterrupt"),
    MethodSpec("unruly.cancel", {"type": "object"}, cancels_itself,
               "raises CancelledError"),
    MethodSpec("unruly.hang", {"type": "object"}, never_answers, "never answers"),
    MethodSpec("unruly.own-timeout", {"type": "object"}, own_timeout,
               "its own TimeoutError"),
))

OWN_ERROR_CODE = Plugin(name="own-error-code", version="1.0", methods=(
    MethodSpec("owncode.ping", {"type": "object"}, echo, "answers 4100 when it fails",
               errors=(4100,)),))


class NoEncounters(SampleDuel):
    """A system that resolves exchanges but has no round logic (``System.rounds``) and
    none of the encounter hooks of its own."""

    id = "no-encounters"
    name = "No encounters"


for _hook in ("encounter_new", "encounter_add", "encounter_view", "encounter_waiting_for",
              "encounter_declare", "encounter_pending_choices", "encounter_resolve"):
    setattr(NoEncounters, _hook, getattr(System, _hook))

NO_ENCOUNTERS = NoEncounters()


class Careless(SampleDuel):
    """A system whose ``encounter_resolve`` forgets to refuse while choices are missing
    (docs/PLUGINS.md asks it to): the daemon must refuse for it."""

    id = "careless-duel"
    name = "Careless duel"

    def encounter_resolve(self, state: Mapping[str, Any], dice: DiceSource,
                          force: bool = False) -> tuple[JSON, JSON]:
        return super().encounter_resolve(state, dice, force=True)


CARELESS = Plugin(name="careless", version="1.0", systems=(Careless(),))


class NoSource(SampleDuel):
    id = "no-source"
    source = None  # type: ignore[assignment]


class WithoutSource(System):
    """Written from the ABC, forgetting ``source``."""

    id = "without-source"
    name = "Without source"
    house_rules = SampleDuel.house_rules
    combatant_schema = SampleDuel.combatant_schema
    request_schema = SampleDuel.request_schema
    describe = SampleDuel.describe
    combatant = SampleDuel.combatant
    resolve = SampleDuel.resolve
    odds = SampleDuel.odds


class NamelessDuel(SampleDuel):
    id = "nameless-duel"
    name = None  # type: ignore[assignment]


class HashInId(SampleDuel):
    """An id rpc.discover's schema ids cannot hold (a "#" ends a URI)."""

    id = "sample#duel"


class LongId(SampleDuel):
    """An id longer than any call may name (SYSTEM_ID: 100 characters)."""

    id = "d" * 101


class PropertyAbort(BaseException):
    """A ``BaseException`` of a plugin's own, raised by a property while it is checked."""


class NameAborts(SampleDuel):
    """A system whose name is a property raising a ``BaseException`` of its own."""

    id = "name-aborts"

    @property
    def name(self) -> str:  # type: ignore[override]
        raise PropertyAbort("secret detail from a property")


class DoubleDashId(SampleDuel):
    """An id of lower-case letters and dashes that is no kebab-case (two dashes)."""

    id = "sample--duel"


class LongestId(SampleDuel):
    """An id exactly as long as a call may name (SYSTEM_ID: 100 characters)."""

    id = "d" * 100


class TwiceListed(SampleDuel):
    """A system its plugin lists twice."""

    id = "twice-duel"


class IdRaises(SampleDuel):
    """A system whose id is a property that fails: an error no check foresaw."""

    @property
    def id(self) -> str:  # type: ignore[override]
        raise RuntimeError("secret detail from a property")


_OBJECT: JSON = {"type": "object"}
#: Entry points name these as ``tests.sample_plugin:WRONGLY_BUILT.<name>``.
WRONGLY_BUILT = SimpleNamespace(
    systems_not_a_tuple=Plugin(name="a", version="1", systems=SYSTEM),  # type: ignore[arg-type]
    systems_none=Plugin(name="a", version="1", systems=None),  # type: ignore[arg-type]
    methods_none=Plugin(name="a", version="1", methods=None),  # type: ignore[arg-type]
    method_not_in_a_tuple=Plugin(name="a", version="1", methods=ECHO),  # type: ignore[arg-type]
    method_name_none=Plugin(name="a", version="1", methods=(
        MethodSpec(None, _OBJECT, echo, "x"),)),  # type: ignore[arg-type]
    params_none=Plugin(name="a", version="1", methods=(
        MethodSpec("a.x", None, echo, "x"),)),  # type: ignore[arg-type]
    description_none=Plugin(name="a", version="1", methods=(
        MethodSpec("a.x", _OBJECT, echo, None),)),  # type: ignore[arg-type]
    result_not_a_schema=Plugin(name="a", version="1", methods=(
        MethodSpec("a.x", _OBJECT, echo, "x", result=[1]),)),  # type: ignore[arg-type]
    errors_not_codes=Plugin(name="a", version="1", methods=(
        MethodSpec("a.x", _OBJECT, echo, "x", errors=("4100",)),)),  # type: ignore[arg-type]
    name_not_text=Plugin(name=object(), version="1"),  # type: ignore[arg-type]
    name_none=Plugin(name=None, version="1"),  # type: ignore[arg-type]
    version_not_text=Plugin(name="a", version=1),  # type: ignore[arg-type]
    system_without_source=WithoutSource(),
    system_source_none=NoSource(),
    system_name_none=NamelessDuel(),
    system_id_raises=Plugin(name="a", version="1", systems=(IdRaises(),)),
    system_id_with_a_hash=Plugin(name="a", version="1", systems=(HashInId(),)),
    system_id_too_long=Plugin(name="a", version="1", systems=(LongId(),)),
    system_name_aborts=Plugin(name="a", version="1", systems=(NameAborts(),)),
    system_id_double_dash=Plugin(name="a", version="1", systems=(DoubleDashId(),)),
    system_listed_twice=Plugin(name="a", version="1", systems=(TwiceListed(), TwiceListed())),
    system_not_a_system=Plugin(name="a", version="1", systems=("sample-duel",)),  # type: ignore[arg-type]
    method_not_a_spec=Plugin(name="a", version="1", methods=("sample.echo",)),  # type: ignore[arg-type]
    name_blank=Plugin(name=" ", version="1"),
    version_blank=Plugin(name="a", version=" \t"),
)
WRONG_SCHEMAS: dict[str, JSON] = {
    "dangling-ref": {"type": "object", "properties": {"x": {"$ref": "#/$defs/nope"}}},
    "ref-loop": {"type": "object", "$defs": {"a": {"$ref": "#/$defs/b"},
                                             "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
                 "properties": {"x": {"$ref": "#/$defs/a"}}},
    "self-ref-root": {"type": "object", "$ref": "#"},
    # a loop where no keyword leads: found by following the $ref
    "ref-loop-outside-keywords": {"type": "object", "x-defs": {"a": {"$ref": "#/x-defs/a"}},
                                  "properties": {"x": {"$ref": "#/x-defs/a"}}},
    # the meta-schema takes any value as a default; rpc.discover could not be written
    "date-default": {"type": "object", "properties": {"x": {
        "default": datetime.date(2020, 1, 1)}}},
}


def _deep(levels: int) -> JSON:
    schema: JSON = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


WRONG_SCHEMAS["nested-400-deep"] = {"type": "object", "properties": {"x": _deep(400)}}

#: A loop of $ref through each keyword that applies its subschema to the value itself.
_LOOPING_BACK = {"$ref": "#/$defs/a"}
for _keyword, _loop in {"anyOf": [_LOOPING_BACK], "oneOf": [_LOOPING_BACK],
                        "not": _LOOPING_BACK, "if": _LOOPING_BACK,
                        "then": _LOOPING_BACK, "else": _LOOPING_BACK,
                        "dependentSchemas": {"x": _LOOPING_BACK}}.items():
    WRONG_SCHEMAS[f"ref-loop-through-{_keyword}"] = {
        "type": "object", "$defs": {"a": {"if": {"required": ["y"]}, _keyword: _loop}},
        "properties": {"x": {"$ref": "#/$defs/a"}}}


def with_schema(schema: JSON) -> Plugin:
    """A plugin whose one method has ``schema`` as its params schema."""
    return Plugin(name="schema", version="1", methods=(
        MethodSpec("schema.x", schema, echo, "x"),))


def with_result_schema(schema: JSON) -> Plugin:
    """A plugin whose one method has ``schema`` as its result schema."""
    return Plugin(name="schema", version="1", methods=(
        MethodSpec("schema.x", _OBJECT, echo, "x", result=schema),))


# Schemas that are fine: references that resolve (a nested $id, a JSON Pointer escape,
# the meta-schema itself) and recursion through a part of the value.
GOOD_SCHEMAS: dict[str, JSON] = {
    "recursive-tree": {"type": "object", "$defs": {"node": {
        "type": "object", "properties": {"children": {"type": "array",
                                                      "items": {"$ref": "#/$defs/node"}}}}},
        "properties": {"root": {"$ref": "#/$defs/node"}}},
    "nested-id": {"type": "object", "$defs": {"b": {"$id": "urn:example:b", "$defs": {
        "c": {"type": "string"}}, "properties": {"q": {"$ref": "#/$defs/c"}}}},
        "properties": {"y": {"$ref": "urn:example:b#/$defs/c"}}},
    "escaped-pointer": {"type": "object", "$defs": {"a/b": {"type": "string"}},
                        "properties": {"x": {"$ref": "#/$defs/a~1b"}}},
    # a members' or names' schema that admits everything (an annotation at most)
    "any-member": {"type": "object", "additionalProperties": {"description": "anything"}},
    "any-name": {"type": "object", "propertyNames": True},
    "meta-schema": {"type": "object", "properties": {
        "schema": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}},
    # two ways to the same subschema are no loop
    "diamond": {"type": "object", "$defs": {"c": {"type": "string"}, "b": {"$ref": "#/$defs/c"}},
                "properties": {"x": {"allOf": [{"$ref": "#/$defs/c"}, {"$ref": "#/$defs/b"}]}}},
}
