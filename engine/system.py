"""The interface every rule system implements, and shared validation helpers.

A system is pure: JSON-like data in, JSON-like data or a ``Resolution`` out,
dice from a ``DiceSource`` handed in. The daemon stores and sequences what the
encounter methods return; all round logic lives here.

Encounter state is a plain JSON object owned by the system (the daemon stores it
verbatim after every step). ``encounter_view`` must never reveal a pending choice.
"""

from __future__ import annotations

import inspect
import re
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import cache, cached_property
from typing import Any, ClassVar, Protocol

import jsonschema

from .dice import DiceSource, largest_faces
from .errors import InvalidInput, Problem, UnknownCombatant, json_text, pointer
from .options import HouseRule, resolve_options
from .results import Event, Resolution, copy_json
from .schemacheck import MAX_ERRORS, QuickValidator, first_errors

JSON = dict[str, Any]

#: Most combatants one ``end_round`` takes (as many as an encounter holds).
MAX_ROUND_COMBATANTS = 64

#: The longest combatant id, in every system.
MAX_ID_LENGTH = 64


class Validates(Protocol):
    """What ``schema_problems`` needs of a validator (jsonschema's or ``QuickValidator``)."""

    def iter_errors(self, instance: Any, /) -> Iterator[jsonschema.ValidationError]: ...


def is_down(combatant: Mapping[str, Any]) -> bool:
    """Whether a combatant has hit points and is at 0 or fewer: slain, or dying under
    AD&D's optional rule; either way it acts no more (every system with ``hp``)."""
    hp = combatant.get("hp")
    return hp is not None and hp <= 0


def slug(name: str) -> str:
    """The id made from a combatant's name when it gives none: lower case, its letters,
    marks and digits kept in whatever script they are, every other run of characters
    one hyphen, at most ``MAX_ID_LENGTH`` characters and no hyphen at either end; ""
    for a name with no letter or digit, marks alone (a lone combining accent) included;
    a mark with no letter or digit before it in its word is dropped.
    The name is NFKC-normalised first, so one name typed two ways (a precomposed "ë" or
    "e" and a combining diaeresis) gives one id, but accents are kept: "Zoë" and "Zoé",
    or "影" and "霧", are different creatures. An ASCII name gives the id it always gave
    ("Korr the Red" → "korr-the-red"), which sheets and stored encounters hold."""
    text = unicodedata.normalize("NFKC", name).lower()
    # A mark is kept only on a letter or digit (or a mark kept on one): marks with
    # nothing to sit on show as nothing, or stack on whatever a chat card or a command
    # prints before the id, alone ("\u0301") or first in a word ("\u0301 Bob").
    kept: list[str] = []
    for ch in text:
        kind = unicodedata.category(ch)[0]
        on_letter = kind == "M" and bool(kept) and kept[-1] != " "
        kept.append(ch if kind in "LN" or on_letter else " ")
    return "-".join("".join(kept).split())[:MAX_ID_LENGTH].strip("-")


def id_given(raw: Any) -> bool:
    """Whether the combatant given as ``raw`` came with its own id (else its id is made
    from its name, which another creature may share)."""
    return isinstance(raw, Mapping) and bool(raw.get("id"))


def id_source(raw: Any, path: str, cid: str) -> tuple[str, str]:
    """Where a refusal about the id ``cid`` of the combatant given at ``path`` (as
    ``raw``) points, and how it names that id: ``path/id`` and 'id "x"' when the caller
    gave the id, else ``path/name`` and 'the id made from this name, "x",': a refusal
    names a field the caller wrote."""
    if id_given(raw):
        return f"{path}/id", f"id {json_text(cid)}"
    return f"{path}/name", f"the id made from this name, {json_text(cid)},"


@cache
def _takes_options(kind: type[System]) -> bool:
    """Whether ``kind``'s ``combatant`` takes an ``options`` parameter."""
    return "options" in inspect.signature(kind.combatant).parameters


def swap_combatant(state: JSON, combatant_id: str, combatant: JSON) -> None:
    """Put ``combatant`` (full, normalised) in ``state["combatants"]`` in place of
    ``combatant_id``'s entry, keeping that id (the round logic's ``replace``)."""
    if combatant_id not in state["combatants"]:
        raise UnknownCombatant(combatant_id, "/combatant_id")
    combatant["id"] = combatant_id
    state["combatants"][combatant_id] = combatant


def schema_problems(validator: Validates, data: Any, prefix: str = "") -> list[Problem]:
    """The schema errors in ``data`` as ``Problem``s with JSON Pointer paths: every one,
    up to ``MAX_ERRORS`` (``first_errors``: a value with more is described by those); an
    ``anyOf``/``oneOf`` of which one branch alone fits the value's type is told by that
    branch's errors (``_specific``)."""
    problems = []
    errors = [e for found in first_errors(validator.iter_errors(data)) for e in _specific(found)]
    for error in errors[:MAX_ERRORS]:
        path = pointer(prefix, *error.absolute_path)
        forbidden = _forbidden_members(error)
        if forbidden:
            problems += [Problem(pointer(path, name), "not allowed here") for name in forbidden]
        else:
            problems.append(Problem(path, schema_message(error)))
    return problems


def _branches(error: jsonschema.ValidationError) -> list[list[jsonschema.ValidationError]]:
    """The errors of each branch of a failed ``anyOf``/``oneOf`` (none for any other)."""
    by_branch: dict[Any, list[jsonschema.ValidationError]] = {}
    if error.validator in ("anyOf", "oneOf"):
        for sub in error.context or ():
            # a branch that is the schema false gives its error no schema path: a
            # branch of its own (jsonschema descends into it without the index)
            where = sub.relative_schema_path[0] if sub.relative_schema_path else id(sub)
            by_branch.setdefault(where, []).append(sub)
    return list(by_branch.values())


def _of_other_type(branch: list[jsonschema.ValidationError]) -> bool:
    """Whether a branch failed because the value itself is not of the branch's type: a
    ``type`` refused at the value, the schema false there (no value is of its type), or
    an ``anyOf``/``oneOf`` there none of whose branches is of the value's type."""
    def refused_by_type(e: jsonschema.ValidationError) -> bool:
        if e.validator in ("type", None):
            return True
        nested = _branches(e)
        return bool(nested) and all(map(_of_other_type, nested))
    return any(not e.relative_path and refused_by_type(e) for e in branch)


def _root_types(branches: list[list[jsonschema.ValidationError]]) -> list[Any]:
    """The types the branches of an ``anyOf``/``oneOf`` take at the value (through any
    nested there), in order, each once."""
    types: list[Any] = []
    for e in (e for b in branches for e in b if not e.relative_path):
        if e.validator == "type":
            kinds: Any = e.validator_value
            types += [kinds] if isinstance(kinds, str) else kinds
        else:
            types += _root_types(_branches(e))
    return list(dict.fromkeys(types))


def _specific(error: jsonschema.ValidationError) -> list[jsonschema.ValidationError]:
    """``error``, or, for an ``anyOf``/``oneOf`` of which one branch alone is of the
    value's type (``[{"type": "null"}, {"type": "object", ...}]``), that branch's own
    errors: they name the member that is wrong and its rule, where the whole value
    being "not valid under any of the given schemas" names neither (a plugin's schema
    may be written so; the built-in ones give such a value one schema of two types)."""
    fitting = [b for b in _branches(error) if not _of_other_type(b)]
    if len(fitting) != 1:
        return [error]
    return [specific for sub in fitting[0] for specific in _specific(sub)]


def _forbidden_members(error: jsonschema.ValidationError) -> list[str]:
    """The members a ``{"not": {"required": [...]}}`` (or ``{"not": {"anyOf": [{"required":
    [...]}, ...]}}``) error is about, present in the object (``exchange.odds`` takes no
    ``dice``); empty for any other error."""
    value: Any = error.validator_value
    if error.validator != "not" or not isinstance(error.instance, dict) \
            or not isinstance(value, dict):
        return []
    branches = value.get("anyOf", [value])
    return [n for b in branches if isinstance(b, dict) and set(b) == {"required"}
            for n in b["required"] if n in error.instance]


_REQUIRED = " is a required property"
#: longest message of one problem
_MAX_MESSAGE = 300


def schema_message(error: jsonschema.ValidationError) -> str:
    """jsonschema's message in the caller's terms: values as JSON (``true``, ``null``,
    double quotes), long values cut short, unexpected members named."""
    value: Any = error.validator_value
    instance: Any = error.instance
    if error.validator == "type":
        types = [value] if isinstance(value, str) else list(value)
        return f"{json_text(instance)} is not of type {' or '.join(map(json_text, types))}"
    if error.validator == "enum":
        return f"{json_text(instance)} is not one of {json_text(value, 200)}"
    if error.validator == "const":
        return f"{json_text(instance)} is not {json_text(value)}"
    if error.validator == "required" and error.message.endswith(_REQUIRED):
        missing = [name for name in value if isinstance(instance, dict) and name not in instance]
        named = next((n for n in missing if error.message == f"{n!r}{_REQUIRED}"), None)
        if named is not None:
            return f"{json_text(named)}{_REQUIRED}"
    if error.validator == "additionalProperties" and isinstance(instance, dict) \
            and value is False:
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        patterns = error.schema.get("patternProperties", {}) \
            if isinstance(error.schema, dict) else {}
        # a name a patternProperties pattern matches is not extra (searched with re, as
        # jsonschema does)
        extra = [name for name in instance if name not in known
                 and not any(re.search(p, name) for p in patterns)]
        return f"unexpected member(s) {json_text(extra, 200)}: not allowed here"
    if error.validator == "not":
        return f"must not match the schema {json_text(value, 200)}"
    if error.validator == "anyOf" and isinstance(value, list) and value and all(
            isinstance(b, dict) and set(b) == {"required"} for b in value):
        # a combatant's {"anyOf": [{"required": ["id"]}, {"required": ["name"]}]}
        wanted = " or ".join(" and ".join(map(json_text, b["required"])) for b in value)
        return f"give {wanted}: at least one is required"
    branches = _branches(error)
    branch_types = _root_types(branches)
    if branch_types and all(map(_of_other_type, branches)):
        # of no branch's type: the types there are, as for one schema of several types
        return f"{json_text(instance)} is not of type {' or '.join(map(json_text, branch_types))}"
    # jsonschema writes the value these keywords name after the instance with Python's
    # repr ('^[a-z]+$', 'b'): said again with JSON, as the instance is.
    if error.validator == "pattern" and isinstance(value, str):
        return f"{json_text(instance)} does not match {json_text(value, 200)}"
    if error.validator is None and error.schema is False:
        return f"{json_text(instance)} is not allowed here (the schema false allows nothing)"
    if error.validator == "dependentRequired" and isinstance(value, dict) \
            and isinstance(instance, dict):
        needs = [(name, wanted) for name, names in value.items() if name in instance
                 and isinstance(names, list)
                 for wanted in names if wanted not in instance]
        if needs:
            name, wanted = needs[0]
            return f"{json_text(wanted)} is required with {json_text(name)} (dependentRequired)"
    if error.validator == "items" and value is False and isinstance(instance, list) \
            and isinstance(error.schema, dict):
        allowed = len(error.schema.get("prefixItems", ()))
        return f"has {len(instance)} items; at most {allowed} are allowed (prefixItems, " \
               "then items false)"
    if error.validator in ("maxItems", "maxProperties") and isinstance(instance, list | dict):
        kind = "items" if isinstance(instance, list) else "members"
        return f"has {len(instance)} {kind}; at most {json_text(value)} are allowed " \
               f"({error.validator})"
    message: str = error.message
    head = repr(instance)
    if message.startswith(head):
        message = json_text(instance) + message[len(head):]
    # (jsonschema's messages list every extra member of some keywords' objects)
    return message if len(message) <= _MAX_MESSAGE else message[:_MAX_MESSAGE - 1] + "…"


class RoundLogic(Protocol):
    """A system's round logic: pure functions over its JSON encounter state.

    Each system keeps these in its ``encounter`` module; ``System`` delegates to it.
    The first argument is the system itself.
    """

    def new(self, system: Any, options: Mapping[str, Any] | None, /) -> JSON: ...

    def add(self, system: Any, state: Mapping[str, Any], combatant: Mapping[str, Any], /
            ) -> tuple[JSON, str]: ...

    def view(self, system: Any, state: Mapping[str, Any], /) -> JSON: ...

    def waiting_for(self, system: Any, state: Mapping[str, Any], /) -> list[str]: ...

    def declare(self, system: Any, state: Mapping[str, Any], combatant_id: str,
                choice: Mapping[str, Any], /) -> JSON: ...

    def resolve(self, system: Any, state: Mapping[str, Any], dice: DiceSource,
                force: bool = False, /) -> tuple[JSON, JSON]: ...

    def replace(self, system: Any, state: Mapping[str, Any], combatant_id: str,
                combatant: Mapping[str, Any], /) -> JSON: ...


class System(ABC):
    """A psionic combat system: its data, schemas, one exchange, exact odds, rounds."""

    #: kebab-case id used everywhere (``revised-2e``)
    id: str
    #: human name
    name: str
    #: the source text it follows
    source: str
    #: True when the system's tests check every schema it builds against the JSON
    #: Schema meta-schema (the built-in systems: ``tests/engine/test_schemas.py``), so
    #: the engine does not check them again when it first uses them. A plugin's system
    #: keeps the default; the daemon checks a third-party system's schemas when it
    #: loads the plugin, whatever this says (docs/PLUGINS.md).
    schemas_tested: ClassVar[bool] = False
    #: Names among ``odds``' ``outcomes`` that sit beside the mutually exclusive ones
    #: instead of being one of them (combat-strength's ``crushed``: a crush comes with
    #: the damage, not instead of it). ``least_chance`` keeps them, so that
    #: ``left_out.outcomes`` sums only outcomes that exclude one another.
    odds_beside_outcomes: ClassVar[frozenset[str]] = frozenset()

    # -- description --------------------------------------------------------------
    @abstractmethod
    def house_rules(self) -> Sequence[HouseRule]:
        """Every house default of RULES.md for this system."""

    @abstractmethod
    def combatant_schema(self) -> JSON:
        """JSON Schema (2020-12) of a combatant as callers may give it."""

    @abstractmethod
    def request_schema(self) -> JSON:
        """JSON Schema of an exchange request: attacker, defender, attack, defense,
        options and any system-specific members (not ``system``/``dice``/``seed``).
        The built-in systems' ``resolve`` and ``odds`` check their request against it
        (``validate_request``); the daemon does it for a third-party system before
        calling them (docs/PLUGINS.md)."""

    @abstractmethod
    def describe(self) -> JSON:
        """``{id, name, source, modes, tables, combatant_schema, dice_purposes,
        house_rules: [{id, text, default}]}``."""

    def options(self, options: Mapping[str, Any] | None) -> dict[str, Any]:
        """The effective house-rule values for ``options`` (invalid input if unknown)."""
        if not options:
            # The usual call switches nothing: the defaults, worked out once.
            return dict(self._default_options)
        return resolve_options(self.house_rules(), options)

    @cached_property
    def _default_options(self) -> dict[str, Any]:
        return resolve_options(self.house_rules(), None)

    # -- combatants ---------------------------------------------------------------
    @abstractmethod
    def combatant(self, raw: Mapping[str, Any], path: str = "") -> JSON:
        """Validate ``raw``, fill defaults and derivations, return the full combatant.

        Raises ``InvalidCombatant`` with JSON Pointer paths prefixed by ``path``.
        """

    # -- one exchange ---------------------------------------------------------------
    @abstractmethod
    def resolve(self, request: Mapping[str, Any], dice: DiceSource) -> Resolution:
        """Resolve one exchange (API.md ``exchange.resolve`` without dice/seed)."""

    @abstractmethod
    def odds(self, request: Mapping[str, Any]) -> JSON:
        """Exact odds of the exchange: ``{outcomes, damage: {mean, distribution,
        truncated_mass}, ...}`` (floats only here, at the JSON edge)."""

    # -- odds for a caller who may not see a defender's sheet ------------------------------
    def defending_places(self, request: Mapping[str, Any]) -> dict[str, list[str]]:
        """Where ``request`` (valid under ``request_schema``) holds a mind that may raise a
        defense in the exchange, as JSON Pointers (``/defender``), each with the defense
        modes the request gives that mind (empty: none). A system that names none
        (the default) takes no ``assume_known``."""
        return {}

    def knowing(self, combatant: JSON, modes: Sequence[str], request: Mapping[str, Any]
                ) -> JSON:
        """The full ``combatant`` as ``assume_known`` takes it: knowing the defense
        ``modes`` (and only them) and able to pay for them in ``request``, otherwise as it
        is. The default suits a system whose defenses cost nothing in an exchange: a
        combatant whose ``psionic`` is true gets ``defenses`` = ``modes``; any other (one
        without psionics, which no defense is open to) stays as it is."""
        if not modes or combatant.get("psionic") is not True:
            return combatant
        return {**combatant, "defenses": list(modes)}

    def assume_knowing(self, request: Mapping[str, Any], places: Sequence[str]) -> JSON:
        """``request`` with the mind at each JSON Pointer of ``places`` (one of
        ``defending_places``) knowing the defense the request gives it and able to pay for
        it (``knowing``): the odds a caller who may not see that mind's sheet can be told,
        since a refusal ("does not know it", "too few PSPs") or odds that differ would tell
        it what the mind knows and holds. They are the true odds when the mind does know
        the defense and can pay. ``InvalidInput`` (under ``/assume_known``) for a place
        that is no such mind."""
        self.validate_request(request)
        given = self.defending_places(request)
        problems = [
            Problem(f"/assume_known/{i}", (
                f"{json_text(place)} is not a mind that may defend in this exchange "
                f"(one of {', '.join(given) or 'none: ' + self.id + ' assumes nothing'})"))
            for i, place in enumerate(places) if place not in given]
        if problems:
            raise InvalidInput(problems)
        out = dict(request)
        options = self.options(request.get("options"))
        for place in places:
            member, _, index = place[1:].partition("/")
            raw = out[member] if not index else out[member][int(index)]
            mind = self.knowing(self.combatant_under(raw, place, options), given[place],
                                request)
            if index:
                out[member] = [*out[member]]
                out[member][int(index)] = mind
            else:
                out[member] = mind
        return out

    def combatant_under(self, raw: Mapping[str, Any], path: str = "",
                        options: Mapping[str, Any] | None = None) -> JSON:
        """``combatant`` under the house rules ``options``. Most systems' combatants do not
        depend on house rules, so this is ``combatant``; one whose do (revised-2e derives
        MTHAC0 and saves by them) overrides it, or takes them as ``combatant``'s own
        ``options`` parameter (as a plugin's system may)."""
        if options and _takes_options(type(self)):
            with_options: Any = self.combatant
            result: JSON = with_options(raw, path, options=options)
            return result
        return self.combatant(raw, path)

    # -- the end of a round outside any encounter -----------------------------------
    def round_end(self, combatant: JSON, choice: Mapping[str, Any], dice: DiceSource,
                  options: Mapping[str, Any]) -> tuple[JSON, list[Event], list[str]]:
        """What the end of a round does to one full ``combatant`` (a copy it may change)
        given its ``choice`` (``{}`` or valid under ``round_end_choice_schema``) under the
        effective house rules ``options``: the combatant after it, the events and the
        summary's sentences. A system whose combatants carry state from round to round
        (timed conditions, an open mind) defines this; without it ``end_round`` is
        refused (``ends_rounds``)."""
        raise NotImplementedError(f"{self.id} has no end of round outside an encounter")

    def round_end_members(self) -> JSON:
        """JSON Schemas of the members an ``end_round`` request has besides
        ``combatants``, ``choices`` and ``options``, by name (power-pool: ``puppets``)."""
        return {}

    def round_end_between(self, combatants: dict[str, JSON], choices: Mapping[str, Any],
                          request: Mapping[str, Any], options: Mapping[str, Any]
                          ) -> tuple[list[Event], list[str], list[JSON]]:
        """What the end of a round does between combatants, before each one's own
        ``round_end``: ``combatants`` are copies by id, which it may replace; the events,
        the summary's sentences and the changes of others the checked ``request`` names
        (``round_end_members``), as ``{id, before, after}``. A system whose choices reach
        another creature (power-pool: a controller releases one it controls) defines this."""
        return [], [], []

    def round_end_choice_schema(self) -> JSON | None:
        """JSON Schema of what one combatant may choose at the end of a round
        (``end_round``'s ``choices``), or ``None`` when there is nothing to choose."""
        return None

    @property
    def ends_rounds(self) -> bool:
        """Whether ``end_round`` works: the system defines ``round_end``."""
        return type(self).round_end is not System.round_end

    def end_round_schema(self) -> JSON:
        """JSON Schema of an ``end_round`` request."""
        props = self._combatants_members() | self.round_end_members()
        choice = self.round_end_choice_schema()
        if choice is not None:
            props["choices"] = {"type": "object", "maxProperties": MAX_ROUND_COMBATANTS,
                                "additionalProperties": choice}
        return {"type": "object", "required": ["combatants"], "additionalProperties": False,
                "properties": props}

    @cached_property
    def _end_round_validator(self) -> QuickValidator:
        return QuickValidator(self.end_round_schema(), check_schema=not self.schemas_tested)

    def end_round(self, request: Mapping[str, Any], dice: DiceSource) -> JSON:
        """The end of a round for combatants fighting single exchanges (no encounter):
        ``{combatants: [combatant], choices?: {id: choice}, options?, ...}`` to ``{system,
        combatants: [{id, before, after}], events, rolls, summary, unused_dice, others?}``,
        one entry per combatant in the order given (``others``: other creatures the
        round's end changed, ``round_end_between``). Timed conditions count down and open
        minds are checked as an encounter does at its round's end; dice come from
        ``dice`` as in ``resolve``."""
        if not self.ends_rounds:
            raise InvalidInput.at("/system", f"system {self.id} has no end of round "
                                             "outside an encounter")
        self.check_dice(dice)
        combatants, options = self._combatants_of(request, self._end_round_validator)
        choices: Mapping[str, Any] = request.get("choices") or {}
        ids = {c["id"] for c in combatants}
        problems = [Problem(pointer("/choices", cid), f"no combatant has the id {json_text(cid)}")
                    for cid in choices if cid not in ids]
        if problems:
            raise InvalidInput(problems)
        start = dice.mark()
        result = self._each(
            combatants, "End of the round",
            lambda now: self.round_end_between(now, choices, request, options),
            lambda c: self.round_end(c, choices.get(c["id"], {}), dice, options))
        return self._with_dice(result, dice, start)

    def round_end_offer(self, combatant: JSON, options: Mapping[str, Any]
                        ) -> tuple[JSON, list[str]]:
        """What one full ``combatant`` may choose at the end of this round and on what
        terms, by choice (a member of ``round_end_choice_schema``), with the summary's
        sentences; ``({}, [])`` when it has nothing to choose. Nothing changes and no die
        is rolled."""
        return {}, []

    def round_end_choices_schema(self) -> JSON:
        """JSON Schema of a ``round_end_choices`` request."""
        return {"type": "object", "required": ["combatants"], "additionalProperties": False,
                "properties": self._combatants_members()}

    @cached_property
    def _round_end_choices_validator(self) -> QuickValidator:
        return QuickValidator(self.round_end_choices_schema(),
                              check_schema=not self.schemas_tested)

    def round_end_choices(self, request: Mapping[str, Any]) -> JSON:
        """What each combatant may choose at the end of this round, before ``end_round``
        is asked (revised-2e: whether a mind may pay to close, and what it costs):
        ``{combatants: [combatant], options?}`` to ``{system, combatants: [{id, name,
        choices}], summary}``, one entry per combatant in the order given."""
        if not self.ends_rounds:
            raise InvalidInput.at("/system", f"system {self.id} has no end of round "
                                             "outside an encounter")
        combatants, options = self._combatants_of(request, self._round_end_choices_validator)
        entries: list[JSON] = []
        lines: list[str] = []
        for c in combatants:
            choices, said = self.round_end_offer(c, options)
            entries.append({"id": c["id"], "name": c.get("name", c["id"]), "choices": choices})
            lines += said
        summary = " ".join(lines) or "Nobody has anything to choose at the end of this round."
        return {"system": self.id, "combatants": entries, "summary": summary}

    # -- rest outside any encounter -------------------------------------------------------
    def combatant_rest(self, combatant: JSON, request: Mapping[str, Any], dice: DiceSource,
                       options: Mapping[str, Any]) -> tuple[JSON, list[Event], list[str]]:
        """What a rest (``request``, valid under ``rest_schema``) gives one full
        ``combatant`` (a copy it may change) under the effective house rules ``options``,
        with any dice the rounds it lasts need: the combatant after it, the events and the
        summary's sentences. A system whose source says how psionic strength comes back
        defines this; without it ``rest`` is refused (``rests``)."""
        raise NotImplementedError(f"{self.id} has no rule for resting")

    def rest_members(self) -> JSON:
        """JSON Schemas of the members a ``rest`` request has besides ``combatants`` and
        ``options`` (revised-2e: ``hours``), by name; required ones listed under
        ``required``."""
        return {}

    def rest_between(self, combatants: dict[str, JSON], request: Mapping[str, Any],
                     options: Mapping[str, Any]) -> tuple[list[Event], list[str], list[JSON]]:
        """What a rest does between combatants as it starts, before each one's own
        ``combatant_rest``: as ``round_end_between`` (copies by id it may replace; the
        events, the summary's sentences and the changes of others the checked
        ``request`` names, ``rest_members``). A system whose rest reaches another
        creature (power-pool: control kept by an action ends) defines this."""
        return [], [], []

    @property
    def rests(self) -> bool:
        """Whether ``rest`` works: the system defines ``combatant_rest``."""
        return type(self).combatant_rest is not System.combatant_rest

    def rest_schema(self) -> JSON:
        """JSON Schema of a ``rest`` request."""
        members = dict(self.rest_members())
        required = ["combatants", *members.pop("required", [])]
        return {"type": "object", "required": required, "additionalProperties": False,
                "properties": {**self._combatants_members(), **members}}

    @cached_property
    def _rest_validator(self) -> QuickValidator:
        return QuickValidator(self.rest_schema(), check_schema=not self.schemas_tested)

    def rest(self, request: Mapping[str, Any], dice: DiceSource) -> JSON:
        """Rest for combatants outside any encounter: ``{combatants: [combatant], options?,
        ...rest_members}`` to ``{system, combatants: [{id, before, after}], events, rolls,
        summary, unused_dice, others?}``, one entry per combatant in the order given
        (``others``: other creatures the rest changed, ``rest_between``). Recovery is
        fixed by the rules; dice are rolled only for what happens round by round meanwhile
        (revised-2e: an open mind's checks)."""
        if not self.rests:
            raise InvalidInput.at("/system", f"system {self.id} has no rule for resting")
        self.check_dice(dice)
        combatants, options = self._combatants_of(request, self._rest_validator)
        start = dice.mark()
        result = self._each(
            combatants, "After the rest",
            lambda now: self.rest_between(now, request, options),
            lambda c: self.combatant_rest(c, request, dice, options))
        return self._with_dice(result, dice, start)

    # -- what end_round and rest share ----------------------------------------------------
    @staticmethod
    def _combatants_members() -> JSON:
        return {
            "combatants": {"type": "array", "minItems": 1, "maxItems": MAX_ROUND_COMBATANTS,
                           "items": {"type": "object"}},
            "options": {"type": "object"},
        }

    def _combatants_of(self, request: Mapping[str, Any], validator: QuickValidator
                       ) -> tuple[list[JSON], dict[str, Any]]:
        """The checked request's full combatants (each id once) and its effective house
        rules, or ``InvalidInput`` naming every problem."""
        problems = schema_problems(validator, request)
        if problems:
            raise InvalidInput(problems)
        raw_options = request.get("options")
        options = self.options(raw_options)
        combatants = [self.combatant_under(raw, f"/combatants/{i}", raw_options)
                      for i, raw in enumerate(request["combatants"])]
        seen: dict[str, int] = {}
        for i, c in enumerate(combatants):
            cid = str(c["id"])
            if cid in seen:
                field, ident = id_source(request["combatants"][i], f"/combatants/{i}", cid)
                problems.append(Problem(field, (
                    f"{ident} is combatant {seen[cid]}'s too: give each combatant its own")))
            seen.setdefault(cid, i)
        if problems:
            raise InvalidInput(problems)
        return combatants, options

    @staticmethod
    def _with_dice(result: JSON, dice: DiceSource, start: int) -> JSON:
        """``result`` with the dice rolled since ``start`` and supplied dice not used."""
        result["rolls"] = [r.to_json() for r in dice.rolls_since(start)]
        result["unused_dice"] = dice.unused()
        return result

    def _each(self, combatants: Sequence[JSON], title: str,
              between: Callable[[dict[str, JSON]], tuple[list[Event], list[str], list[JSON]]],
              step: Callable[[JSON], tuple[JSON, list[Event], list[str]]]) -> JSON:
        """``between`` on copies of the combatants by id (it may replace them; its
        events, sentences and others' changes come first), then ``step`` on each copy:
        ``{system, combatants: [{id, before, after}], events, summary, others?}``."""
        now = {c["id"]: copy_json(c) for c in combatants}
        first_events, first_lines, others = between(now)
        changes: list[JSON] = []
        events: list[JSON] = [e.to_json() for e in first_events]
        lines: list[str] = list(first_lines)
        for c in combatants:
            after, happened, said = step(now[c["id"]])
            changes.append({"id": c["id"], "before": c, "after": after})
            events += [e.to_json() for e in happened]
            lines += said
        if not lines:
            counted = any(c["before"] != c["after"] for c in changes)
            lines = ["what still lasts counts down." if counted else "nothing changes."]
        result: JSON = {"system": self.id, "combatants": changes, "events": events,
                        "summary": f"{title}: " + " ".join(lines)}
        if others:
            result["others"] = others
        return result

    # -- encounters (pure round logic) ----------------------------------------------
    #: the system's round logic (its ``encounter`` module); the methods below delegate
    rounds: RoundLogic

    def encounter_new(self, options: Mapping[str, Any] | None) -> JSON:
        """A new, empty encounter state (options checked now)."""
        return self.rounds.new(self, options)

    def encounter_add(self, state: Mapping[str, Any], combatant: Mapping[str, Any]
                      ) -> tuple[JSON, str]:
        """Add a combatant (normalised here); returns the new state and its id."""
        return self.rounds.add(self, state, combatant)

    def encounter_view(self, state: Mapping[str, Any]) -> JSON:
        """``{phase, round, ..., combatants: {id: current}, waiting_for, declared}``
        with no pending choice in it."""
        return self.rounds.view(self, state)

    def encounter_waiting_for(self, state: Mapping[str, Any]) -> list[str]:
        """Combatant ids that must still declare before the step can resolve."""
        return self.rounds.waiting_for(self, state)

    def encounter_declare(self, state: Mapping[str, Any], combatant_id: str,
                          choice: Mapping[str, Any]) -> JSON:
        """Record a secret choice (checked against phase and rules now)."""
        return self.rounds.declare(self, state, combatant_id, choice)

    def encounter_replace(self, state: Mapping[str, Any], combatant_id: str,
                          combatant: Mapping[str, Any]) -> JSON:
        """The state with ``combatant_id`` taken again from ``combatant`` (normalised here,
        under its id): the sheet as it is now, after changes made outside the encounter.
        ``UnknownCombatant`` when the encounter has no such combatant; invalid input when
        the system's round logic cannot do it."""
        replace = getattr(getattr(self, "rounds", None), "replace", None)
        if replace is None:
            raise InvalidInput.at("/combatant", f"system {self.id} cannot take a combatant "
                                                "again during an encounter")
        result: JSON = replace(self, state, combatant_id, combatant)
        return result

    def encounter_choice_is_public(self, choice: Mapping[str, Any]) -> bool:
        """Whether a declared ``choice`` is an action everyone sees at once (it changes
        the state when declared) rather than a secret kept until resolution. Every
        choice is secret unless a system says otherwise."""
        return False

    def encounter_action(self, state: Mapping[str, Any], combatant_id: str,
                         choice: Mapping[str, Any]) -> tuple[JSON, JSON]:
        """A public action declared (``encounter_choice_is_public``): the new state, as
        ``encounter_declare`` gives it, and what the action did, ``{events, summary}``
        (events as JSON), which the daemon stores with the step and answers. A system
        that says nothing more keeps this one: no events, an empty summary."""
        return (self.encounter_declare(state, combatant_id, choice),
                {"events": [], "summary": ""})

    def encounter_pending_choices(self, state: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The secret choices ``state`` holds, by combatant id, exactly as the next
        ``encounter_resolve`` would use them (a choice the rules threw away is not in
        it), or ``None`` when the system does not say. The daemon compares these across
        stored states to tell which declarations a resolve really used, so it can show
        those in the log and keep every other one hidden; without them it hides more."""
        return None

    def encounter_resolve(self, state: Mapping[str, Any], dice: DiceSource,
                          force: bool = False) -> tuple[JSON, JSON]:
        """Resolve the current step: the new state and the step's JSON result."""
        return self.rounds.resolve(self, state, dice, force)

    # -- helpers for implementations ---------------------------------------------------
    @cached_property
    def _largest_faces(self) -> dict[str, int]:
        purposes = self.describe().get("dice_purposes")
        return largest_faces(purposes if isinstance(purposes, list) else [])

    def check_dice(self, dice: DiceSource) -> None:
        """Refuse, before any die is rolled, every supplied value that no die of its
        purpose shows (RULES.md §4: "A supplied value outside the die's faces is invalid
        params"), used or not: below 1, above the engine's largest die, or above the
        largest die ``describe()``'s ``dice_purposes`` gives its purpose (an ``attack``
        of 25 where attacks roll d20s). ``resolve``, an encounter's resolve, ``end_round``
        and ``rest`` call it first."""
        dice.check_faces(self._largest_faces)

    @cached_property
    def _request_validator(self) -> QuickValidator:
        return QuickValidator(self.request_schema(), check_schema=not self.schemas_tested)

    def validate_request(self, request: Mapping[str, Any]) -> None:
        """Raise ``InvalidInput`` listing every way ``request`` fails its schema."""
        problems = schema_problems(self._request_validator, request)
        if problems:
            raise InvalidInput(problems)
