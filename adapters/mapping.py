"""Mapping files for the generic adapters: which VTT path or attribute holds each
combatant field. Checked against ``adapters/data/mapping.schema.json`` by a validator
compiled once."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

from engine.errors import InvalidInput, Problem, json_text, pointer
from engine.schemacheck import Validator, first_errors
from engine.system import schema_message

from .core import (
    DICE,
    FIELDS,
    SCORES,
    Binding,
    Draft,
    decode,
    hit_dice_count,
    hit_die,
    score,
    score_value,
    to_int,
)
from .intelligence import intelligence_score


@cache
def schema() -> dict[str, Any]:
    """The mapping file's JSON Schema (2020-12)."""
    text = resources.files(__package__).joinpath("data/mapping.schema.json") \
        .read_text(encoding="utf-8")
    loaded: dict[str, Any] = json.loads(text)
    return loaded


@cache
def _validator() -> jsonschema.protocols.Validator:
    Validator.check_schema(schema())
    return Validator(schema())


@dataclass(frozen=True)
class Source:
    """Where one field is read: ``path`` (dotted, or a Roll20 attribute with ``|max``),
    how to parse it, a default, and whether a change is written back there. ``where``
    is the JSON Pointer of the source in the request (``/mapping/fields/hp``), so a bad
    ``default`` is reported there."""

    path: str
    parse: str = "value"
    default: Any = None
    write: bool = True
    where: str = "/mapping"

    def decode(self, system: str, name: str, value: Any, path: str, draft: Draft) -> Any:
        """The field's value from the raw ``value`` found at ``path``."""
        if self.parse == "intelligence" and isinstance(value, str):
            return intelligence_score(draft, value, path, self.path)
        if self.parse == "intelligence" and isinstance(value, int | float) \
                and not isinstance(value, bool) and value == 0:
            # a monster's stated 0 (non-intelligent), as the monster adapters read it,
            # where a score of 0 would be refused
            return intelligence_score(draft, "0", path, self.path)
        if self.parse == "dice-count":
            # said of the field read, and withdrawn when the state store sets it, as the
            # other adapters' Hit Dice warnings are (``Draft.warn_level``)
            value = hit_dice_count(value, path, lambda text: draft.warn_for(name, text))
        elif self.parse == "hit-die":
            value = self._die(name, value, path, draft)
            if value is None:
                return None
        elif name in SCORES:
            return score_value(draft, name, value, path)
        return decode(system, name, value, path, draft)

    @staticmethod
    def _die(name: str, value: Any, path: str, draft: Draft) -> int | None:
        """A hit die from ``d8``-like text, or a bare number that is a die size (``8``);
        text that names no die (``4+1``, a bare ``3``) leaves the field out, with a
        warning about how the sheet gives the field (``Draft.warn_for``: withdrawn when
        the psionic state store sets it, as the other adapters' die warnings are); text
        that cannot be read (``3d7``) is InvalidInput unless the store sets the field
        (``Draft.refuse_for``)."""
        bare = (isinstance(value, int | float) and not isinstance(value, bool)) or \
            (isinstance(value, str) and value.strip().isdigit())
        try:
            sides = to_int(value, path, 0, 1000) if bare else hit_die(value, path)
        except InvalidInput as error:
            # refused once the store is read, unless it sets the field (``finish``)
            draft.refuse_for(name, error)
            return None
        if bare and sides not in DICE:
            draft.warn_for(name, f"{name}: {sides} (at {path}) is not a hit die size (4, 6, "
                           "8, 10, 12 or 20); ignored")
            return None
        if sides is None and str(value).strip():
            draft.warn_for(name, f"{name}: {json_text(value, 40)} (at {path}) names no hit "
                           "die (like 'd8'); ignored")
        return sides

    def default_path(self) -> str:
        """The JSON Pointer of this source's ``default`` in the request."""
        return pointer(self.where, "default")


@dataclass(frozen=True)
class Mapping:
    """A validated mapping file."""

    fields: dict[str, Source] = field(default_factory=dict)
    systems: dict[str, dict[str, Source]] = field(default_factory=dict)
    npc_types: tuple[str, ...] = ()
    npc_attribute: str | None = None

    def for_system(self, system: str) -> dict[str, Source]:
        """The sources of ``system``'s fields (per-system entries win)."""
        merged = {k: v for k, v in self.fields.items() if k in FIELDS[system]}
        merged.update({k: v for k, v in self.systems.get(system, {}).items()
                       if k in FIELDS[system]})
        return merged

    def class_unread(self, system: str) -> str:
        """Why no class group was read, as ``finish``'s warning gives it
        (``Draft.class_unread``), when neither the sheet nor the state store gave one: a
        mapping reads no class name, only ``class_group`` at the path it names, if any
        (a value there that names no group is refused, a default always taken)."""
        source = self.for_system(system).get("class_group")
        if source is None:
            return "the mapping names no class_group"
        return f"nothing in {source.path}, where the mapping reads it"


#: the fields left out with a warning when their mapped path holds nothing and the
#: mapping gives no default (``read_mapped``): the level or Hit Dice and the hit die,
#: which the adapters that know a sheet warn of when missing
_SAID_WHEN_MISSING = frozenset({"level", "hit_dice", "die"})


def read_mapped(draft: Draft, name: str, source: Source, value: Any, path: str,
                binding: Binding) -> None:
    """Read one mapped field into ``draft``: the ``value`` found at its ``path``, else
    (absent, null, or blank text: ``""``, ``"  "``) the mapping's default; an ability
    score still missing is 10, with a warning; a level, Hit Dice or hit die still
    missing is left out, with a warning. A field left out is still bound to its mapped
    place, so a value assumed for it later (by the engine or this adapter) is written
    back there (when the source may be written), not to the psionic state store, where
    it would hide the GM's later entry for good (the store wins)."""
    origin = None
    if value is None or (isinstance(value, str) and not value.strip()):
        value, path = source.default, source.default_path()
        origin = path
    decoded = None if value is None else source.decode(draft.system, name, value, path,
                                                       draft)
    if decoded is not None:
        draft.put(name, decoded, binding, origin=origin)
    elif name in SCORES:
        score(draft, name, None, path, default=10, where=source.path)
    else:
        draft.bind(name, binding)
        if value is None and name in _SAID_WHEN_MISSING:
            # The other adapters say when the sheet gives no level, Hit Dice or hit die
            # (and assume one); a mapping assumes nothing, but says so as well, naming
            # its path: the engine refuses a power pool without them. Withdrawn when the
            # state store sets the field, as those warnings are.
            draft.warn_for(name, f"no {name} in {source.path} (the mapping gives no "
                           "default); left out")


#: the fields each ``parse`` other than ``value`` may read (any field: not listed)
_PARSE_FIELDS = {"intelligence": ("int",)}


def _source(name: str, raw: Any, where: str) -> Source:
    if isinstance(raw, str):
        return Source(raw, where=where)
    parse = raw.get("parse", "value")
    if name not in _PARSE_FIELDS.get(parse, (name,)):
        raise InvalidInput.at(pointer(where, "parse"), f"{json_text(parse)} reads only "
                              f"{', '.join(_PARSE_FIELDS[parse])}, not {name}")
    return Source(raw["path"], parse, raw.get("default"),
                  bool(raw.get("write", parse == "value")), where)


def parse_mapping(raw: Any, path: str) -> Mapping:
    """A ``Mapping`` from the mapping file's JSON; InvalidInput at ``path`` + the
    schema error's location otherwise."""
    errors = first_errors(_validator().iter_errors(raw))
    if errors:
        problems = []
        for error in errors:
            where = pointer(path, *error.absolute_path)
            # the engine's words: the value as JSON, the member that is not allowed
            problems.append(Problem(where, schema_message(error)))
        raise InvalidInput(problems)
    fields_path, systems_path = pointer(path, "fields"), pointer(path, "systems")
    return Mapping(
        {k: _source(k, v, pointer(fields_path, k)) for k, v in raw.get("fields", {}).items()},
        {s: {k: _source(k, v, pointer(pointer(systems_path, s), k)) for k, v in f.items()}
         for s, f in raw.get("systems", {}).items()},
        tuple(raw.get("npc_types", ())),
        raw.get("npc_attribute"),
    )
