"""Foundry VTT actors (dnd5e 4.x/5.x, OSE, ARS, any system through a mapping file).

Abilities, level, Hit Dice and hit points come from the game system's own data; the
psionic state no game system has a field for lives in ``flags.mindscape.<system>`` with
the combatant's own field names (``flags.mindscape["revised-2e"].psp``). Flags win over
the sheet, so a GM can override any value. See docs/ADAPTERS.md.
"""

from __future__ import annotations

import math
import re
from abc import abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar

from engine.errors import InvalidInput, json_text, pointer

from .base import Adapter, Imported, Normalise
from .core import (
    FIELDS,
    SHEET_ONLY,
    Binding,
    Draft,
    check_states,
    check_system,
    class_group,
    class_groups,
    decode,
    diff_fields,
    dig,
    finish,
    hit_dice_count,
    hit_die,
    need_list,
    need_object,
    plain_json,
    pool_die,
    project,
    read_state,
    score,
    settle,
    to_bool,
    to_int,
    to_text,
    type_name,
    warn_class_group,
)
from .intelligence import text_intelligence
from .mapping import Mapping as FieldMapping
from .mapping import parse_mapping, read_mapped

_MAX_ID = 64
_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
_TOKEN_UUID = re.compile(r"Scene\.([A-Za-z0-9]{1,64})\.Token\.([A-Za-z0-9]{1,64})"
                         r"(?:\.Actor\.([A-Za-z0-9_-]{1,64}))?")
# A die term anywhere in a hit-point formula ("18d10", "max(2d8, 9)"); a formula with
# none ("36", "4+1") states hit points, which dnd5e rolls as they are.
_ANY_DIE = re.compile(r"\d{0,4}[dD]\d{1,3}")
FLAGS: Final = "flags.mindscape"
_HP_VALUE: Final = "system.attributes.hp.value"
_HP_TEMP: Final = "system.attributes.hp.temp"
#: ARS's lowest hit points for an actor (its own damage stops there: 0 as the template
#: and a placed NPC token have it, −10 where a GM plays death at −10)
_ARS_HP_MIN: Final = "system.attributes.hp.min"
_ARS_HP_MAX: Final = "system.attributes.hp.max"
#: what every Foundry adapter reads of an actor besides its sheet and psionic state
_ACTOR_PATHS: Final = ("_id", "name", "type", "_stats.systemId")
#: the adapter made for each Foundry game system (its id, as ``_stats.systemId`` of an
#: actor's data names it)
_FOR_SYSTEM: Final = {"dnd5e": "foundry.dnd5e", "ose": "foundry.ose", "ars": "foundry.ars",
                      "acks2-arsbase": "foundry.ars"}


@dataclass(frozen=True)
class FoundryActor:
    """An actor taken out of its envelope: the raw object, its JSON Pointer prefix, the
    combatant id (the actor's ``_id``; ``<actor id>-<token id>`` for an unlinked token),
    the uuid to update (the base actor, or the synthetic actor of an unlinked token),
    and whether it is its own (``linked``: not an unlinked token's synthetic actor)."""

    raw: Mapping[str, Any]
    path: str
    id: str
    name: str
    uuid: str
    envelope: Mapping[str, Any] | None
    linked: bool = True


def _actor_of(top: Mapping[str, Any]) -> bool:
    """Whether ``top`` is an envelope holding the actor under ``actor``."""
    return "actor" in top and "system" not in top and "_id" not in top


def unwrap(data: Any, warnings: list[str]) -> FoundryActor:
    """The actor in ``data``: a bare actor object, or ``{"actor": {...}, "token":
    {"uuid": "Scene.<s>.Token.<t>", "actorLink": false, "name"?: "..."}}`` (``mapping``
    allowed too). The token's ``name``, when given, names the combatant: the table knows
    a creature by its token ("Skum"), and an unlinked token's synthetic actor keeps its
    base actor's name ("Aboleth")."""
    top = need_object(data, "")
    envelope: Mapping[str, Any] | None = None
    raw: Mapping[str, Any] = top
    path = ""
    if _actor_of(top):
        envelope = top
        raw = need_object(top["actor"], "/actor")
        path = "/actor"
    ident = raw.get("_id")
    if not isinstance(ident, str) or not _ID.fullmatch(ident):
        raise InvalidInput.at(pointer(path, "_id"), "the actor's _id must be 1-64 letters, "
                              f"digits, '-' or '_', got {json_text(ident, 40)}")
    name = to_text(raw.get("name"), pointer(path, "name"), limit=200)
    if not name or not name.strip():
        warnings.append(f"the actor has no name; using its id {ident}")
        name = ident
    uuid = f"Actor.{ident}"
    token = envelope.get("token") if envelope is not None else None
    if token is not None:
        token = need_object(token, "/token")
        shown = to_text(token.get("name"), "/token/name", limit=200)
        if shown and shown.strip():
            name = shown
        linked = to_bool(token.get("actorLink"), "/token/actorLink")
        if not linked:
            text = to_text(token.get("uuid"), "/token/uuid", limit=300)
            match = _TOKEN_UUID.fullmatch(text or "")
            if not match:
                raise InvalidInput.at("/token/uuid", "an unlinked token needs its uuid "
                                      "'Scene.<scene id>.Token.<token id>'")
            if match.group(3) not in (None, ident):
                raise InvalidInput.at("/token/uuid", f"the token's actor {match.group(3)} "
                                      f"is not the actor given ({ident})")
            uuid = f"Scene.{match.group(1)}.Token.{match.group(2)}.Actor.{ident}"
            # Unlinked copies of one actor are different creatures (three goblins): each
            # is its own combatant, named by its token too.
            combatant_id = f"{ident}-{match.group(2)}"
            if len(combatant_id) > _MAX_ID:
                combatant_id = match.group(2)[:_MAX_ID]
            return FoundryActor(raw, path, combatant_id, name.strip(), uuid, envelope,
                                linked=False)
    return FoundryActor(raw, path, ident, name.strip(), uuid, envelope)


def stored(raw: Mapping[str, Any], dotted: str) -> Any:
    """The value at ``dotted`` in ``raw``, or ``None`` when a step is missing."""
    value: Any = raw
    for key in dotted.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def deletions(dotted: str, new: Mapping[str, Any], *olds: Any, masked: bool = False
              ) -> dict[str, None]:
    """Foundry's ``"<path>.-=<key>": null`` for every key the ``olds`` objects hold and
    ``new`` lacks (recursively): ``Document.update`` merges objects key by key, so a
    key missing from the value written would otherwise stay. A key holding a dot cannot
    be named in a dotted path and is left alone.

    ``masked``: an unlinked token's synthetic actor is its base actor's data with the
    token's delta merged over it, so deleting a key from the delta lets the base actor's
    show through again (foundryvtt#8400). There the key is set to ``null`` instead (read
    as absent, ``without_nulls``), unless it is ``null`` already."""
    out: dict[str, None] = {}
    old_objects = [old for old in olds if isinstance(old, Mapping)]
    for key in dict.fromkeys(k for old in old_objects for k in old):
        if not isinstance(key, str) or "." in key:
            continue
        if key not in new:
            if not masked:
                out[f"{dotted}.-={key}"] = None
            elif any(old.get(key) is not None for old in old_objects):
                out[f"{dotted}.{key}"] = None
        elif isinstance(new[key], Mapping):
            out.update(deletions(f"{dotted}.{key}", new[key],
                                 *(old.get(key) for old in old_objects), masked=masked))
    return out


def without_nulls(value: Any, depth: int = 4) -> Any:
    """``value`` with every ``null`` member of its objects left out, ``depth`` objects
    deep (the psionic state nests two: ``mind``, ``condition_rounds``; what lies deeper
    is left for the field's check to refuse): a key an unlinked token's write-back
    masked (``deletions``) is absent."""
    if isinstance(value, Mapping) and depth > 0:
        return {k: without_nulls(v, depth - 1) for k, v in value.items() if v is not None}
    return value


def expand(update: Mapping[str, Any]) -> dict[str, Any]:
    """Foundry's ``expandObject``: dotted keys to nested objects, applied in order (so a
    deletion key after its object's value lands inside that value)."""
    out: dict[str, Any] = {}
    for key, value in update.items():
        *parents, last = key.split(".")
        node = out
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[last] = expand(value) if isinstance(value, Mapping) else value
    return out


def merged(original: Mapping[str, Any], changes: Mapping[str, Any]) -> dict[str, Any]:
    """Foundry's ``mergeObject(original, changes, {performDeletions: true})`` as a new
    object: objects merge key by key, ``-=key`` deletes, anything else replaces."""
    out = dict(original)
    for key, value in changes.items():
        if key.startswith("-="):
            out.pop(key[2:], None)
            continue
        old = out.get(key)
        if isinstance(value, Mapping):
            out[key] = merged(old if isinstance(old, Mapping) else {}, value)
        else:
            out[key] = value
    return out


def apply_update(data: Any, update: Mapping[str, Any]) -> Any:
    """``data`` (an actor or its envelope) as Foundry leaves it after
    ``actor.update(update)``; ``data`` itself is not changed."""
    top = need_object(data, "")
    if _actor_of(top):
        return {**top, "actor": merged(need_object(top["actor"], "/actor"), expand(update))}
    return merged(top, expand(update))


class FoundryAdapter(Adapter):
    """Shared envelope, flags and write-back logic of the Foundry adapters."""

    vtt = "foundry"
    system = None
    #: the dotted paths of the actor ``sheet`` reads (``trimmed`` keeps only these)
    sheet_paths: tuple[str, ...] = ()
    #: whether ``sheet`` reads the actor's class items
    reads_class_items = False
    #: what ``class_item`` keeps of an item of type ``class``
    class_item_paths: tuple[str, ...] = ()
    #: the game systems (``_stats.systemId``) whose actors ``sheet`` reads; ``None``:
    #: any but those another adapter is made for (``_FOR_SYSTEM``)
    game_systems: frozenset[str] | None = None

    @abstractmethod
    def sheet(self, actor: FoundryActor, draft: Draft, data: Any) -> bool:
        """Read the game system's own data into ``draft``; true for a monster/NPC."""

    def class_item(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """What ``sheet`` reads of a class item (``trimmed`` keeps only that): the dotted
        paths ``class_item_paths`` names."""
        return project(item, self.class_item_paths)

    def actor_paths(self, envelope: Mapping[str, Any] | None, system: str) -> list[str]:
        """Every dotted path of the actor that ``read`` may look at for ``system``
        (items aside): the actor's id, name and type, the sheet's paths and the psionic
        state's fields (``flags.mindscape.<system>.<field>``)."""
        return [*_ACTOR_PATHS, *self.sheet_paths,
                *(f"{FLAGS}.{system}.{name}" for name in FIELDS.get(system, ()))]

    def trimmed(self, data: Any, system: str) -> Any:
        """The actor with only the paths ``actor_paths`` names and, for an adapter that
        reads them, its class items with only what is read of them; of the envelope,
        the token's ``uuid``, ``actorLink`` and ``name`` (it names the combatant) and the
        mapping. A Foundry actor is mostly items (spell and feature texts) and flags that
        other modules, and players, may fill with anything: none of that is read."""
        if not isinstance(data, Mapping) or system not in FIELDS:
            return data
        envelope = data if _actor_of(data) else None
        raw = data["actor"] if envelope is not None else data
        if not isinstance(raw, Mapping):
            return data
        try:
            paths = self.actor_paths(envelope, system)
        except InvalidInput:
            return data
        actor = project(raw, paths)
        if "system" in raw and "system" not in actor:
            # ``read`` refuses an actor without its system data, even when no path read
            # is in it (a mapping that takes every field from the state store)
            actor["system"] = {} if isinstance(raw["system"], Mapping) else raw["system"]
        items = raw.get("items")
        if self.reads_class_items and isinstance(items, list):
            actor["items"] = [self.class_item(item) for item in items
                              if isinstance(item, Mapping) and item.get("type") == "class"]
        elif self.reads_class_items and "items" in raw:
            actor["items"] = items
        if envelope is None:
            return actor
        out: dict[str, Any] = {"actor": actor}
        token = envelope.get("token")
        if isinstance(token, Mapping):
            out["token"] = project(token, ("uuid", "actorLink", "name"))
        elif "token" in envelope:
            out["token"] = token
        if "mapping" in envelope:
            out["mapping"] = envelope["mapping"]
        return out

    def written_to(self, data: Any, system: str) -> Any:
        """The uuid written to (the actor, or an unlinked token's synthetic actor: each
        token is another) and the mapping that says where each field goes."""
        actor = unwrap(data, [])
        envelope = actor.envelope or {}
        return {"uuid": actor.uuid, "mapping": envelope.get("mapping")}

    def read(self, data: Any, system: str) -> tuple[FoundryActor, Draft]:
        """The actor and the assembled draft (shared by import and updates)."""
        draft = Draft(check_system(system, self.id))
        draft.store = f"{FLAGS}.{draft.system}.{{}}".format
        actor = unwrap(data, draft.warnings)
        system_data = actor.raw.get("system")
        if system_data is None:
            raise InvalidInput.at(pointer(actor.path, "system"), "the actor has no system "
                                  "data")
        need_object(system_data, pointer(actor.path, "system"))
        self._check_game_system(actor)
        npc = self.sheet(actor, draft, data)
        flags, flags_path = dig(actor.raw, FLAGS, actor.path)
        state_path = pointer(flags_path, draft.system)
        state = need_object(flags, flags_path).get(draft.system) if flags is not None \
            else None
        if state is not None:
            state = need_object(state, state_path)

            def lookup(name: str) -> tuple[Any, str, Binding] | None:
                if name not in state:
                    return None
                if name in SHEET_ONLY:
                    binding = draft.bindings.get(name)
                    where = (f"from {binding.target}" if binding and binding.target
                             else "from the game system's own data only")
                    draft.warn(f"{FLAGS}.{draft.system}.{name} is ignored: {name} is read "
                               f"{where}")
                    return None
                return (without_nulls(state[name]), pointer(state_path, name),
                        Binding(f"{FLAGS}.{draft.system}.{name}"))

            read_state(draft, lookup)
        finish(draft, npc)
        return actor, draft

    def _check_game_system(self, actor: FoundryActor) -> None:
        """InvalidInput at ``_stats.systemId`` for an actor of a game system this adapter
        does not read (its data would be read from the wrong places). Data without the
        id (older exports, hand-made actors) is read as it is."""
        game = stored(actor.raw, "_stats.systemId")
        path = _pointer_of(actor.path, "_stats.systemId")
        if not isinstance(game, str) or not game:
            return
        made_for = _FOR_SYSTEM.get(game)
        fits = game in self.game_systems if self.game_systems is not None \
            else made_for in (None, self.id)
        if not fits:
            use = made_for or "foundry.generic, with a mapping"
            raise InvalidInput.at(path, f"this is an actor of the Foundry system "
                                  f"{json_text(game, 40)}, which {self.id} does not read; "
                                  f"use {use}")

    def import_(self, data: Any, system: str) -> Imported:
        """The combatant for ``system`` from a Foundry actor (or its envelope)."""
        actor, draft = self.read(data, system)
        sources = {name: _pointer_of(actor.path, binding.target)
                   for name, binding in draft.bindings.items() if binding.target}
        sources.update(draft.origins)
        return draft.imported(actor.id, actor.name, sources)

    def places(self, actor: FoundryActor, draft: Draft, name: str, target: str,
               value: Any) -> dict[str, Any]:
        """Where a changed field read from ``target`` is written: ``{dotted path:
        value}`` (that one place, unless the game system keeps the field in parts)."""
        return {target: value}

    def updates(self, data: Any, system: str, before: Mapping[str, Any],
                after: Mapping[str, Any], *, normalise: Normalise | None = None,
                ) -> list[dict[str, Any]]:
        """``[{"uuid", "update": {dotted.path: value}}]`` for the fields that changed:
        back where they were read, psionic state into ``flags.mindscape.<system>``. An
        object value is followed by ``<path>.-=<key>: null`` for each key the actor
        (or ``before``) holds there and the value lacks, since Foundry merges objects."""
        before, after = check_states(before, after)
        actor, draft = self.read(data, system)
        values: dict[str, tuple[str, Any]] = {}  # dotted path -> (field, value)
        check = Draft(draft.system)

        def write(name: str, value: Any) -> bool:
            value = plain_json(decode(draft.system, name, value, f"/after/{name}", check),
                               f"/after/{name}")
            binding = draft.bindings.get(name)
            if binding is None:
                if name in SHEET_ONLY:
                    return False
                target = f"{FLAGS}.{draft.system}.{name}"
            elif binding.writable:
                target = binding.target
            else:
                return False
            changed = False
            for place, part in self.places(actor, draft, name, target, value).items():
                if place not in values or values[place][1] != part:
                    values[place] = (name, part)
                    changed = True
            return changed

        def update() -> dict[str, Any]:
            out: dict[str, Any] = {}
            for target, (name, value) in values.items():
                out[target] = value
                if isinstance(value, Mapping):
                    out.update(deletions(target, value, stored(actor.raw, target),
                                         before.get(name), masked=not actor.linked))
            return out

        for name, value in diff_fields(draft.system, before, after):
            write(name, value)
        if normalise is not None:
            def reimport() -> Mapping[str, Any]:
                _, again = self.read(apply_update(data, update()), draft.system)
                return normalise(again.imported(actor.id, actor.name).combatant)

            settle(draft.system, after, write, reimport, draft.unread())
        written = update()
        return [{"uuid": actor.uuid, "update": written}] if written else []


def _pointer_of(path: str, dotted: str) -> str:
    """The JSON Pointer of a dotted path under the actor at ``path``."""
    for key in dotted.split("."):
        path = pointer(path, key)
    return path


def _items(actor: FoundryActor) -> list[Any]:
    items = actor.raw.get("items")
    return [] if items is None else need_list(items, pointer(actor.path, "items"))


def _class_items(actor: FoundryActor
                 ) -> Iterator[tuple[Mapping[str, Any], str, Mapping[str, Any], str]]:
    """Each item of type ``class`` of the actor, in order: the item, its JSON Pointer, its
    ``system`` object (empty when null) and that object's pointer. One pass over the
    items, as actors may hold thousands; an item that is no object is InvalidInput."""
    items_path = pointer(actor.path, "items")
    for i, item in enumerate(_items(actor)):
        item_path = pointer(items_path, i)
        item = need_object(item, item_path)
        if item.get("type") != "class":
            continue
        sys_path = pointer(item_path, "system")
        yield item, item_path, need_object(item.get("system") or {}, sys_path), sys_path


class _Levelled(Protocol):
    """A class a character has levels in (``_Class``, ``_ArsClass``)."""

    @property
    def name(self) -> str: ...

    @property
    def levels(self) -> int: ...


_Levels = TypeVar("_Levels", bound=_Levelled)


def _psionicist_class(system: str, classes: Sequence[_Levels]) -> _Levels | None:
    """In revised-2e, the class named a psionicist's (``class_groups``: psion..., anywhere
    in its name) with the most levels: the psionic rules count its own level (PSPs,
    MTHAC0, modes known), not the character's, as the Roll20 adapter takes it too.
    ``None`` in another system or without one."""
    if system != "revised-2e":
        return None
    return max((c for c in classes
                if c.levels and "psionicist" in class_groups(c.name)),
               key=lambda c: c.levels, default=None)


def _tied(classes: Sequence[_Levelled], main: _Levelled, *, psionic: bool) -> bool:
    """Whether another of ``classes`` (of the psionicist ones, when ``psionic``) has as
    many levels as ``main``, the first of them, taken for the level and class group."""
    return any(c is not main and c.levels == main.levels
               and (not psionic or "psionicist" in class_groups(c.name)) for c in classes)


@dataclass
class _Class:
    name: str
    levels: int
    die: int | None
    item_id: str | None


class Dnd5e(FoundryAdapter):
    """dnd5e 4.x (Foundry v12) and 5.x (v13) characters and NPCs."""

    id = "foundry.dnd5e"
    game_systems = frozenset({"dnd5e"})
    description = ("Foundry dnd5e 4.x/5.x actors: abilities, level and hit dice from class "
                   "items (NPCs: the hit-point formula), hit points; psionic state in "
                   "flags.mindscape.<system>")
    sheet_paths = (*(f"system.abilities.{key}.value" for key in ("int", "wis", "con")),
                   *(f"system.attributes.hp.{key}" for key in ("value", "max", "temp",
                                                               "formula")),
                   "system.details.cr", "system.details.level",
                   "system.details.originalClass")
    reads_class_items = True
    class_item_paths = ("_id", "name", "type", "system.levels", "system.hitDice",
                        "system.hd.denomination", "system.identifier")

    def sheet(self, actor: FoundryActor, draft: Draft, data: Any) -> bool:
        """dnd5e: ``system.abilities.*.value``, class items, ``attributes.hp``."""
        base = pointer(actor.path, "system")
        kind = actor.raw.get("type")
        if kind not in ("character", "npc"):
            raise InvalidInput.at(pointer(actor.path, "type"), "a dnd5e actor with a mind is "
                                  f"a 'character' or an 'npc', not {json_text(kind, 40)}")
        system_data = actor.raw["system"]
        for key in ("int", "wis", "con"):
            value, path = dig(system_data, f"abilities.{key}.value", base)
            score(draft, key, value, path, default=10,
                  where=f"system.abilities.{key}.value")
        hp_data, hp_path = dig(system_data, "attributes.hp", base)
        hp_data = {} if hp_data is None else need_object(hp_data, hp_path)
        hp = to_int(hp_data.get("value"), pointer(hp_path, "value"), -10_000, 1_000_000)
        hp_max = to_int(hp_data.get("max"), pointer(hp_path, "max"), 0, 1_000_000)
        temp = to_int(hp_data.get("temp"), pointer(hp_path, "temp"), 0, 1_000_000)
        npc = bool(kind == "npc")
        if npc:
            level, die = self._npc_dice(draft, system_data, hp_data, hp_path, base)
        else:
            # The maximum stands in only for missing current hit points: dnd5e stores a
            # character's as null, so it is computed only then.
            level, die, hp_max = self._classes(actor, draft, system_data, base,
                                               hp_max, need_max=hp is None)
            if hp is None and hp_max is not None:
                hp = hp_max
                draft.warn(f"no current hit points; taken as the maximum {hp_max}")
        if hp is not None and temp:
            # Temporary hit points are lost first (dnd5e: "applied on top of value"), so
            # the creature has both; ``places`` takes a loss off hp.temp first.
            hp += temp
        draft.put("hp", hp, Binding(_HP_VALUE))
        draft.put("level", level, Binding("", writable=False))
        draft.put("hit_dice", level, Binding("", writable=False))
        draft.put("die", die, Binding("", writable=False))
        return npc

    def places(self, actor: FoundryActor, draft: Draft, name: str, target: str,
               value: Any) -> dict[str, Any]:
        """Hit points lost come off ``hp.temp`` first, then ``hp.value`` (the imported
        ``hp`` is their sum); each is written only when it changes. A gain goes to
        ``hp.value``. Neither goes below 0: dnd5e's data model has 0 as their minimum
        (Foundry would store 0 for less), so a creature taken below 0 is written at 0."""
        total = draft.fields.get("hp")
        if name != "hp" or target != _HP_VALUE:
            return {target: value}
        if not isinstance(value, int):
            # Other sheets take an emptied box; dnd5e's hp.value is a whole number.
            raise InvalidInput.at("/after/hp", "dnd5e keeps hit points as a whole number "
                                  f"(system.attributes.hp.value): {json_text(value, 40)} "
                                  "cannot be written")
        temp = to_int(stored(actor.raw, _HP_TEMP), _pointer_of(actor.path, _HP_TEMP), 0,
                      1_000_000)
        if not temp or not isinstance(total, int):
            return {target: max(0, value)}
        sheet_value = total - temp
        lost = total - value
        if lost <= 0:
            return {target: max(0, sheet_value - lost)}
        out: dict[str, Any] = {_HP_TEMP: max(0, temp - lost)}
        if lost > temp:
            out[target] = max(0, sheet_value - (lost - temp))
        return out

    def _npc_dice(self, draft: Draft, system_data: Mapping[str, Any],
                  hp_data: Mapping[str, Any], hp_path: str, base: str) -> tuple[int, int]:
        formula = hp_data.get("formula")
        path = pointer(hp_path, "formula")
        # dnd5e rolls any formula: one this adapter cannot read (a function, a die size
        # off the ladder) gives its Hit Dice from the challenge rating instead, as a
        # missing formula does, rather than refusing the monster.
        unread = f"hit-point formula {json_text(formula, 40)} not read"
        count: int | None = None
        text = to_text(formula, path)
        if text is not None and text.strip() and not _ANY_DIE.search(text):
            # A formula rolling no die ("36", "4+1") states hit points, not Hit Dice.
            unread = f"hit-point formula {json_text(formula, 40)} rolls no die"
        else:
            try:
                count = hit_dice_count(formula, path, draft.warn_level, draft.warn_die)
            except InvalidInput:
                if not isinstance(formula, str):
                    raise
        die = None
        if count is not None:
            try:
                die = hit_die(formula, path)
            except InvalidInput:
                if not isinstance(formula, str):
                    raise
                draft.warn_for("die", f"{unread} for its die; assumed d8")
                die = 8
        if count is None:
            cr, cr_path = dig(system_data, "details.cr", base)
            if isinstance(cr, float) and math.isfinite(cr):
                cr = int(cr)  # fractional challenge ratings (0.5) round down
            count = max(1, to_int(cr, cr_path, 0, 100) or 1)
            what = unread if text is not None and text.strip() else "no hit-point formula"
            draft.warn_level(f"{what}; Hit Dice taken as {count} from the challenge rating")
        if die is None:
            die = 8
            draft.warn_for("die", "no hit die in the hit-point formula; assumed d8")
        if draft.system == "revised-2e":
            draft.put("class_group", "monster")
        return count, die

    def _classes(self, actor: FoundryActor, draft: Draft, system_data: Mapping[str, Any],
                 base: str, hp_max: int | None, *,
                 need_max: bool) -> tuple[int, int, int | None]:
        classes: list[_Class] = []
        unreadable: list[tuple[_Class, InvalidInput]] = []  # a hit die not read, and why
        for item, item_path, item_system, sys_path in _class_items(actor):
            levels = to_int(item_system.get("levels"), pointer(sys_path, "levels"), 0, 30)
            die_text, die_path = item_system.get("hitDice"), pointer(sys_path, "hitDice")
            if die_text is None:  # dnd5e 5.x moved it to hd.denomination
                die_text, die_path = dig(item_system, "hd.denomination", sys_path)
            error: InvalidInput | None = None
            try:
                die = hit_die(die_text, die_path)
            except InvalidInput as unread:
                # refused only where the die is rolled (power-pool: a class of most
                # levels) and the store does not set it; elsewhere the class is read as
                # one with no die
                error, die = unread, None
            identifier = item_system.get("identifier")
            name = to_text(identifier, pointer(sys_path, "identifier"), 200) or ""
            if class_group(name) is None:
                # dnd5e makes the identifier from the name the class was created with: a
                # homebrew or renamed class ("mystic", named Psionicist) may still name a
                # class the table knows. The one text taken serves the psionicist pick,
                # the class group and the best class save alike.
                named = to_text(item.get("name"), pointer(item_path, "name"), 200) or ""
                if not name or class_group(named) is not None:
                    name = named
            item_id = item.get("_id") if isinstance(item.get("_id"), str) else None
            classes.append(_Class(name, levels or 0, die, item_id))
            if error is not None:
                unreadable.append((classes[-1], error))
        level = sum(c.levels for c in classes)
        if not classes:
            # as the other adapters take a character without a level: 1 (a power pool
            # of 0 Hit Dice would be no creature at all)
            details_level, path = dig(system_data, "details.level", base)
            level = to_int(details_level, path, 0, 100) or 1
            draft.warn_level(f"no class items; level taken as {level}")
        # the pool's die: of the classes of most levels, the largest; the class group's
        # class (no psionicist's taken): of those, the first of that die
        main = max(classes, key=lambda c: (c.levels, c.die or 0), default=None)
        top = main.levels if main is not None else 0
        for cls, why in unreadable:
            if cls.levels == top:  # the pool rolls no other class's die
                draft.refuse_for("die", why)
        die = pool_die(draft, top, [(c.name or "the unnamed class", c.die) for c in classes
                                    if c.levels == top and c.die is not None])
        if die is None:
            die = 8
            draft.warn_for("die", "no class hit die; assumed d8")
        psionicist = _psionicist_class(draft.system, classes)
        if psionicist is not None:
            main = psionicist
            if len(classes) > 1:
                listed = ", ".join(f"{c.name} {c.levels}" for c in classes)
                draft.warn_level(f"several classes ({listed}); level {main.levels} taken, the "
                                 f"psionicist class's ({main.name}), not the character's "
                                 f"{level}")
                # That class gives the class group too (below): said apart from the
                # level, as the store may set either without the other.
                warn_class_group(draft, f"several classes ({listed})", main.name, main.name,
                                 psionicist=True, tied=_tied(classes, main, psionic=True))
                # Read at a class's own level, not dnd5e's sum of them, the character
                # saves with the best of its classes, each at its own level (2e).
                draft.classes = tuple((c.name, c.levels) for c in classes if c.levels)
            level = main.levels
        if len(classes) == 1 and classes[0].levels:
            # one class, whose name may write several ("Mage/Psionicist") at its level
            draft.classes = ((classes[0].name, classes[0].levels),)
        if draft.system == "revised-2e" and main is not None:
            group = class_group(main.name)
            if group is not None:
                draft.put("class_group", group)
        if need_max and hp_max is None and classes and "hp" in FIELDS[draft.system]:
            hp_max = self._hp_max(draft, system_data, base, classes)
        return level, die, hp_max

    def _hp_max(self, draft: Draft, system_data: Mapping[str, Any], base: str,
                classes: list[_Class]) -> int:
        """dnd5e's own rule: the original class's die in full at 1st level, the rounded-up
        average (die/2 + 1) for every other level, plus the Con modifier per level."""
        con, con_path = dig(system_data, "abilities.con.value", base)
        con_mod = ((to_int(con, con_path, 0, 1000) or 10) - 10) // 2
        original, _ = dig(system_data, "details.originalClass", base)
        first = next((c for c in classes if c.item_id == original and c.levels), None) \
            or next((c for c in classes if c.levels), None)
        total = 0
        levels = 0
        for cls in classes:
            die = cls.die or 8
            for n in range(cls.levels):
                total += die if cls is first and n == 0 else die // 2 + 1
            levels += cls.levels
        total = max(levels, total + con_mod * levels)
        unread = [cls.name or "the unnamed class" for cls in classes
                  if cls.levels and cls.die is None]
        assumed = (f" (d8 taken for {', '.join(unread)}: no hit die read from "
                   f"{'its class item' if len(unread) == 1 else 'their class items'})"
                   if unread else "")
        draft.warn(f"hit point maximum is not stored; computed {total} from the class hit "
                   f"dice and Con as dnd5e does{assumed}")
        return total


class Ose(FoundryAdapter):
    """Old-School Essentials (vttred/ose) characters and monsters."""

    id = "foundry.ose"
    game_systems = frozenset({"ose"})
    description = ("Foundry OSE actors: scores, level, hp.hd and hit points (monsters: "
                   "Int/Wis/Con 10); psionic state in flags.mindscape.<system>")
    sheet_paths = (*(f"system.scores.{key}.value" for key in ("int", "wis", "con")),
                   "system.hp.hd", "system.hp.value", "system.details.level",
                   "system.details.class", "system.saves.paralysis.value")

    def sheet(self, actor: FoundryActor, draft: Draft, data: Any) -> bool:
        """OSE: ``system.scores.*.value``, ``details.level``, ``hp.{hd,value}``."""
        base = pointer(actor.path, "system")
        kind = actor.raw.get("type")
        if kind not in ("character", "monster"):
            raise InvalidInput.at(pointer(actor.path, "type"), "an OSE actor is a 'character' "
                                  f"or a 'monster', not {json_text(kind, 40)}")
        system_data = actor.raw["system"]
        npc = bool(kind == "monster")
        if npc:
            # OSE monsters have no ability scores (VTT.md): documented defaults.
            for key in ("int", "wis", "con"):
                draft.put(key, 10, Binding("", writable=False))
            draft.warn("OSE monsters have no ability scores; Int, Wis and Con taken as 10")
        else:
            for key in ("int", "wis", "con"):
                value, path = dig(system_data, f"scores.{key}.value", base)
                score(draft, key, value, path, default=10, unset_zero=True,
                      where=f"system.scores.{key}.value")
        hd, hd_path = dig(system_data, "hp.hd", base)
        die = _hit_die_or_refused(draft, hd, hd_path)
        if npc:
            level = hit_dice_count(hd, hd_path, draft.warn_level, draft.warn_die)
            if level is None:
                level = 1
                draft.warn_level("no Hit Dice (hp.hd); taken as 1")
        else:
            level = _class_level(system_data, "details.level", base, draft)
        if die is None:
            die = 8
            draft.warn_for("die", "no hit die in hp.hd; assumed d8 (B/X)")
        hp, hp_path = dig(system_data, "hp.value", base)
        draft.put("hp", to_int(hp, hp_path, -10_000, 1_000_000), Binding("system.hp.value"))
        draft.put("level", level, Binding("", writable=False))
        draft.put("hit_dice", level, Binding("", writable=False))
        draft.put("die", die, Binding("", writable=False))
        save, save_path = dig(system_data, "saves.paralysis.value", base)
        save_value = to_int(save, save_path, 0, 100)
        if save_value is not None and 1 <= save_value <= 20:
            draft.put("save_paralyzation", save_value, Binding("", writable=False))
        elif save_value:
            # 0 is the template's unset value: only a save set outside the d20's range
            # is worth a word (withdrawn when the store sets the save)
            draft.warn_for("save_paralyzation", (
                f"save vs. paralyzation {save_value} in system.saves.paralysis.value is not "
                "1 to 20; ignored, the engine derives the save from the class group and "
                f"level ({draft.store('save_paralyzation')} sets it)"))
        if draft.system == "revised-2e":
            if npc:
                draft.put("class_group", "monster")
            else:
                text, path = dig(system_data, "details.class", base)
                name = to_text(text, path, 200) or ""
                draft.put("class_group", class_group(name))
                if level:
                    # a class name may write several ("Fighter/Psionicist") at its level
                    draft.classes = ((name, level),)
        return npc


def _class_level(system_data: Any, dotted: str, base: str, draft: Draft) -> int:
    """A character's level at ``dotted`` (1, with a warning, when it is not recorded)."""
    value, path = dig(system_data, dotted, base)
    level = to_int(value, path, 0, 100)
    if level is None:
        draft.warn_level("no level; taken as 1")
        return 1
    return level


#: the highest level (or Hit Dice) a combatant may have (``FIELDS``)
_MAX_LEVEL: Final = 100
#: a key JavaScript orders as an array index (``Object.values`` lists those first)
_ARRAY_INDEX = re.compile(r"0|[1-9][0-9]{0,9}")


def _hit_die_or_refused(draft: Draft, value: Any, path: str) -> int | None:
    """The die of a Hit Dice text (``hit_die``: OSE's ``hp.hd`` of any actor, ARS's NPC
    ``hitdice``), ``None`` when it names none or cannot be read (such as a die off the
    ladder, "3d7"): that die is refused only where it is rolled, unless the state store
    sets it (``Draft.refuse_for``). A monster's count of Hit Dice is read apart
    (``hit_dice_count``), so "3d7" still gives 3; a character's level is not read from
    this text."""
    try:
        return hit_die(value, path)
    except InvalidInput as error:
        draft.refuse_for("die", error)
        return None


def _js_values(value: Any, path: str) -> list[tuple[str | int, Any]]:
    """The entries of an array, or of an object in the order JavaScript's
    ``Object.values`` gives them (array-index keys in ascending order, then the others
    as stored), each with its key; none for null. ARS reads a class item's
    ``advancement`` and ``ranks`` so, as its class sheet's form (inputs named
    ``system.ranks.0.hdformula``) may save either array as an object keyed "0", "1" ..."""
    if value is None:
        return []
    if isinstance(value, list):
        return list(enumerate(value))
    if not isinstance(value, Mapping):
        raise InvalidInput.at(path, f"expected an array or object, got {type_name(value)}")
    indexed = sorted((int(key), key) for key in value
                     if isinstance(key, str) and _ARRAY_INDEX.fullmatch(key)
                     and int(key) < 2**32 - 1)
    seen = {key for _, key in indexed}
    return [*((key, value[key]) for _, key in indexed),
            *((key, entry) for key, entry in value.items() if key not in seen)]


def _hdformula_of(rank: Any) -> Any:
    """What is read of one of an ARS class's ranks: its ``hdformula`` (a rank that is no
    object is kept as it is, to be refused as the whole one is)."""
    return project(rank, ("hdformula",)) if isinstance(rank, Mapping) else rank


@dataclass(frozen=True)
class _ArsClass:
    """An ARS class item with levels: its name, level (its advancement entries) and
    ``system`` object with that object's JSON Pointer, whose ranks give its hit die."""

    name: str
    levels: int
    system: Mapping[str, Any]
    path: str


def _is_zero(value: Any) -> bool:
    """Whether ``value`` is 0, as a number or numeric text. ARS's ``hp.max`` is read only
    to say that hit points were never rolled, so anything else there (null, a fraction,
    text, a value below 0) is simply not 0: it refuses nothing, as it did when the
    adapter did not read it, since nothing Mindscape does uses it."""
    try:
        return to_int(value, "") == 0
    except InvalidInput:
        return False


class Ars(FoundryAdapter):
    """ARS-derived AD&D systems (acks2-arsbase and its kin): characters and NPCs."""

    id = "foundry.ars"
    description = ("Foundry ARS (AD&D-style) actors: abilities, save vs. paralyzation, "
                   "level and hit die from class items (NPCs: Hit Dice), hit points; "
                   "psionic state in flags.mindscape.<system>")
    sheet_paths = (*(f"system.abilities.{key}.value" for key in ("int", "wis", "con")),
                   "system.intelligence", "system.hitdice", "system.attributes.level.value",
                   "system.saves.paralyzation.value", "system.attributes.hp.value",
                   _ARS_HP_MAX, _ARS_HP_MIN)
    reads_class_items = True

    def class_item(self, item: Mapping[str, Any]) -> dict[str, Any]:
        """Its ``_id``, ``name`` and ``type``, its ``system.advancement`` with each entry
        emptied (only their number is read) and its ``system.ranks`` with each rank's
        ``hdformula`` only: a rank holds some thirty more values (saves, spell slots)."""
        out = project(item, ("_id", "name", "type", "system.advancement", "system.ranks"))
        system = out.get("system")
        if not isinstance(system, dict):  # absent, or not an object: kept as it is
            return out
        emptied: dict[str, Any] = {}
        advancement = system.get("advancement")
        if isinstance(advancement, list):
            emptied["advancement"] = [{} for _ in advancement]
        elif isinstance(advancement, Mapping):
            emptied["advancement"] = {key: {} for key in advancement}
        ranks = system.get("ranks")
        if isinstance(ranks, list):
            emptied["ranks"] = [_hdformula_of(rank) for rank in ranks]
        elif isinstance(ranks, Mapping):
            emptied["ranks"] = {key: _hdformula_of(rank) for key, rank in ranks.items()}
        out["system"] = {**system, **emptied}
        return out

    def sheet(self, actor: FoundryActor, draft: Draft, data: Any) -> bool:
        """ARS: ``system.abilities.*.value``, ``saves.paralyzation.value``, the class
        items' ``advancement`` and ``ranks`` (NPCs: ``hitdice``), ``attributes.hp.value``."""
        base = pointer(actor.path, "system")
        kind = actor.raw.get("type")
        if kind not in ("character", "npc"):
            raise InvalidInput.at(pointer(actor.path, "type"), "an ARS actor with a mind is a "
                                  f"'character' or an 'npc', not {json_text(kind, 40)}")
        system_data = actor.raw["system"]
        npc = bool(kind == "npc")
        for key in ("int", "wis", "con"):
            if key == "int" and npc:
                # The stat block's own line, which ARS's stat-block and NPC-text imports
                # fill; they leave abilities.int at the template's 10.
                text, text_path = dig(system_data, "intelligence", base)
                if text_intelligence(draft, text, text_path, "system.intelligence"):
                    continue
            value, path = dig(system_data, f"abilities.{key}.value", base)
            score(draft, key, value, path, default=10,
                  where=f"system.abilities.{key}.value")
        die: int | None = None
        group_from: str | None = None  # the class name a character's class group is of
        if npc:
            hd, hd_path = dig(system_data, "hitdice", base)
            level = hit_dice_count(hd, hd_path, draft.warn_level, draft.warn_die)
            die = _hit_die_or_refused(draft, hd, hd_path)
            if level is None:
                level = 1
                draft.warn_level("no Hit Dice (hitdice); taken as 1")
        else:
            level, die, group_from = self._classes(actor, draft, system_data, base)
        if die is None:
            die = 8
            draft.warn_for("die", "no hit die recorded (an NPC's system.hitdice names "
                           "none; a character's class none in its ranks' hdformula); "
                           "assumed d8, AD&D monsters' and the commonest class die "
                           "(flags.mindscape.power-pool.die sets it)")
        save, save_path = dig(system_data, "saves.paralyzation.value", base)
        draft.put("save_paralyzation", to_int(save, save_path, 1, 20),
                  Binding("", writable=False))
        hp_value, hp_path = dig(system_data, "attributes.hp.value", base)
        hp = to_int(hp_value, hp_path, -10_000, 1_000_000)
        draft.put("hp", hp, Binding(_HP_VALUE))
        hp_max, _ = dig(system_data, "attributes.hp.max", base)
        if hp == 0 and _is_zero(hp_max) and "hp" in FIELDS[draft.system]:
            # ARS creates every actor with hit points 0 of 0 (its template) and fills
            # them in only when they are rolled: such a creature is not wounded to 0 but
            # has none on its sheet yet, and the engine counts it down. Said, not guessed
            # (hit points are read from the sheet only: the store cannot set them).
            draft.warn("no hit points on the sheet yet (system.attributes.hp.value and "
                       ".max are both 0): it comes in with 0 hit points, down; roll or "
                       "enter them on the sheet")
        hp_min, hp_min_path = dig(system_data, "attributes.hp.min", base)
        to_int(hp_min, hp_min_path, -10_000, 1_000_000)  # checked here, used by places
        draft.put("level", level, Binding("", writable=False))
        draft.put("hit_dice", level, Binding("", writable=False))
        draft.put("die", die, Binding("", writable=False))
        if draft.system == "revised-2e":
            if npc:
                draft.put("class_group", "monster")
            elif group_from is not None:
                draft.put("class_group", class_group(group_from))
        return npc

    def _classes(self, actor: FoundryActor, draft: Draft, system_data: Mapping[str, Any],
                 base: str) -> tuple[int, int | None, str | None]:
        """A character's level, its hit die (``None`` when no rank names one) and the name
        of the class its class group comes from (the first class item's when no class
        has a level).

        ARS stores no character level: each class item holds one ``system.advancement``
        entry per level gained (``_updateForLevelChange`` in actor-sheet.js adds one and
        never writes ``attributes.level.value``, which stays the template's 1); a class's
        level is their count (``getClassLevel`` in actor.js), the character's the highest
        of them (``getMaxLevel``, which ARS fights and saves with). In revised-2e a
        psionicist class's level is taken instead: that is the level the psionic rules
        count (PSPs, MTHAC0, modes known). Only with no class levels at all is
        ``attributes.level.value`` read, with a warning."""
        classes: list[_ArsClass] = []
        first: str | None = None
        for item, item_path, item_system, sys_path in _class_items(actor):
            name = to_text(item.get("name"), pointer(item_path, "name"), 200) or ""
            if first is None:
                first = name
            path = pointer(sys_path, "advancement")
            levels = len(_js_values(item_system.get("advancement"), path))
            if levels > _MAX_LEVEL:
                raise InvalidInput.at(path, f"a class has at most {_MAX_LEVEL} levels, got "
                                      f"{levels} advancement entries")
            if levels:
                classes.append(_ArsClass(name or "the unnamed class", levels, item_system,
                                         sys_path))
        if not classes:
            value, path = dig(system_data, "attributes.level.value", base)
            stored_level = to_int(value, path, 0, _MAX_LEVEL)
            taken = "1" if stored_level is None else \
                f"{stored_level} from system.attributes.level.value, which ARS does not update"
            draft.warn_level(f"no class item with levels (system.advancement); level taken as "
                             f"{taken}")
            return (1 if stored_level is None else stored_level), None, first
        psionicist = _psionicist_class(draft.system, classes)
        main = psionicist if psionicist is not None else \
            max(classes, key=lambda c: c.levels)  # the first of the highest
        # each class at its own level (a name may write several): the character saves
        # with the best of them
        draft.classes = tuple((c.name, c.levels) for c in classes)
        if len(classes) > 1:
            listed = ", ".join(f"{c.name} {c.levels}" for c in classes)
            why = "the psionicist class's" if psionicist is not None else "the highest"
            draft.warn_level(f"several classes ({listed}); level {main.levels} taken, "
                             f"{why} ({main.name})")
            # That class gives the class group too (``sheet``): said apart from the
            # level, as the store may set either without the other.
            warn_class_group(draft, f"several classes ({listed})", main.name, main.name,
                             psionicist=psionicist is not None,
                             tied=_tied(classes, main, psionic=psionicist is not None))
        # the hit die only where the system rolls it: a class's ranks are not read (nor
        # refused) for a die the combatant has no field for
        die = self._pool_die(draft, classes) if "die" in FIELDS[draft.system] else None
        return main.levels, die, main.name

    def _pool_die(self, draft: Draft, classes: list[_ArsClass]) -> int | None:
        """The hit die of the class of most levels (whose level power-pool takes) and, of
        several with that many, the largest (``pool_die``)."""
        top = max(c.levels for c in classes)
        dice = []
        for cls in classes:
            if cls.levels != top:
                continue
            try:
                die = self._rank_die(draft, cls)
            except InvalidInput as error:
                draft.refuse_for("die", error)  # unless the store sets the die
                continue
            if die is not None:
                dice.append((cls.name, die))
        return pool_die(draft, top, dice)

    @staticmethod
    def _rank_die(draft: Draft, cls: _ArsClass) -> int | None:
        """The die ``cls`` rolls for hit points: ARS rolls the ``hdformula`` of the rank
        of each level gained (``_configureHealth`` in actor-sheet.js, ``ranks[level -
        1]``), so the one of its level, else of the nearest lower rank that names a die
        (past "name level" a rank adds a fixed number, ``"3"``). A formula this adapter
        cannot read (a function such as ``max(1d10, 5)``, a die off the ladder) is
        passed over with a warning: the class sheet takes any text there."""
        ranks_path = pointer(cls.path, "ranks")
        ranks = _js_values(cls.system.get("ranks"), ranks_path)
        for level in range(min(cls.levels, len(ranks)), 0, -1):
            key, rank = ranks[level - 1]
            rank_path = pointer(ranks_path, key)
            formula = need_object(rank, rank_path).get("hdformula")
            try:
                die = hit_die(formula, pointer(rank_path, "hdformula"))
            except InvalidInput:
                if not isinstance(formula, str):
                    raise
                draft.warn_for("die", f"{cls.name}'s level {level} hit-dice formula "
                               f"{json_text(formula, 40)} not read")
                continue
            if die is not None:
                return die
        return None

    def places(self, actor: FoundryActor, draft: Draft, name: str, target: str,
               value: Any) -> dict[str, Any]:
        """Hit points go no lower than the actor's ``hp.min``, where ARS's own damage
        stops (and marks it dead), so the sheet holds what ARS would: 0 for a template
        actor or a placed NPC token, −10 where the GM set it so. An actor already below
        it is not raised to it; one with no ``hp.min`` is written as the engine counts."""
        if name != "hp" or target != _HP_VALUE:
            return {target: value}
        floor = to_int(stored(actor.raw, _ARS_HP_MIN), _pointer_of(actor.path, _ARS_HP_MIN),
                       -10_000, 1_000_000)
        current = draft.fields.get("hp")
        if floor is None or not isinstance(value, int):
            return {target: value}
        if isinstance(current, int):
            floor = min(floor, current)
        return {target: max(floor, value)}


class FoundryGeneric(FoundryAdapter):
    """Any Foundry system, through a mapping of combatant fields to dotted paths."""

    id = "foundry.generic"
    description = ("Any Foundry system: {mapping, actor, token?} where mapping names the "
                   "dotted path of each combatant field (adapters/data/mapping.schema.json)")

    def _check_game_system(self, actor: FoundryActor) -> None:
        """A mapping may read the actors of any game system."""

    def actor_paths(self, envelope: Mapping[str, Any] | None, system: str) -> list[str]:
        """The common paths and each mapped field's (``InvalidInput`` for a mapping
        ``sheet`` would refuse)."""
        paths = super().actor_paths(envelope, system)
        if envelope is None or "mapping" not in envelope:
            return paths
        mapping: FieldMapping = parse_mapping(envelope["mapping"], "/mapping")
        return [*paths, *(source.path for source in mapping.for_system(system).values())]

    def sheet(self, actor: FoundryActor, draft: Draft, data: Any) -> bool:
        """Read each mapped field from its dotted path."""
        if actor.envelope is None or "mapping" not in actor.envelope:
            raise InvalidInput.at("/mapping", "foundry.generic needs {\"mapping\": {...}, "
                                  "\"actor\": {...}}")
        mapping: FieldMapping = parse_mapping(actor.envelope["mapping"], "/mapping")
        draft.class_unread = mapping.class_unread(draft.system)
        for name, source in mapping.for_system(draft.system).items():
            value, path = dig(actor.raw, source.path, actor.path)
            binding = Binding(source.path, writable=source.write)
            read_mapped(draft, name, source, value, path, binding)
        npc = mapping.npc_types and actor.raw.get("type") in mapping.npc_types
        return bool(npc)


ADAPTERS: Final[tuple[FoundryAdapter, ...]] = (Dnd5e(), Ose(), Ars(), FoundryGeneric())
