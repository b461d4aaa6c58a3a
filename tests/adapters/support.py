"""Shared helpers of the adapter tests: fixture loading, default actors built from
system templates, and applying write-backs the way Foundry and Roll20 do."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def load(relative: str) -> Any:
    """A fixture file (JSON, or YAML for ``.yml``) as fresh data."""
    path = FIXTURES / relative
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".yml":
        return yaml.safe_load(text)
    return json.loads(text)


def _merge(into: dict[str, Any], extra: dict[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = copy.deepcopy(value)


def synthetic_actor(base: dict[str, Any], delta: dict[str, Any]) -> dict[str, Any]:
    """Foundry's synthetic actor of an unlinked token (ActorDelta.applyDelta): the base
    actor's data with the token's delta merged over it, key by key, with no deletions."""
    out = copy.deepcopy(base)
    _merge(out, delta)
    return out


def _template_system(relative: str, document: str, kind: str) -> dict[str, Any]:
    """The ``system`` data Foundry gives a new ``document`` (Actor, Item) of type ``kind``
    from a system's ``template.json``: the type's templates merged in order, then the
    type's own fields."""
    template = load(relative)[document]
    spec = template[kind]
    system: dict[str, Any] = {}
    for part in spec.get("templates", []):
        _merge(system, template["templates"][part])
    _merge(system, {k: v for k, v in spec.items() if k != "templates"})
    return system


def template_actor(relative: str, actor_type: str, actor_id: str, name: str) -> dict[str, Any]:
    """The default actor Foundry creates from a system's ``template.json``."""
    return {"_id": actor_id, "name": name, "type": actor_type,
            "system": _template_system(relative, "Actor", actor_type),
            "items": [], "effects": [], "flags": {}}


def template_item(relative: str, item_type: str, item_id: str, name: str) -> dict[str, Any]:
    """The default item Foundry creates from a system's ``template.json``."""
    return {"_id": item_id, "name": name, "type": item_type,
            "system": _template_system(relative, "Item", item_type), "effects": [], "flags": {}}


def ars_class(name: str, levels: int, hdformulas: list[str], item_id: str | None = None
              ) -> dict[str, Any]:
    """An ARS (acks2-arsbase at 171feb4, tests/fixtures/README.md) class item as the
    system stores it on a character: the template's ``class`` item, one rank per
    ``hdformulas`` entry made as the class sheet's "add rank" makes them (a copy of the
    template's ``rank`` with its level and an id: ``onManage_ClassRanks``,
    src/module/item/item-sheet.js) with that hit-dice formula, and ``levels``
    ``advancement`` entries ``{level, hp}`` as a level-up adds them
    (``_updateForLevelChange`` and ``_configureHealth``, src/module/actor/actor-sheet.js)."""
    item = template_item("foundry/ars/template.json", "class",
                         item_id or f"{name.lower()[:8]:x<8}Class0001", name)
    rank = load("foundry/ars/template.json")["Item"]["rank"]
    item["system"]["ranks"] = [{**copy.deepcopy(rank), "id": f"rank{n:012d}", "level": n,
                                "hdformula": formula}
                               for n, formula in enumerate(hdformulas, start=1)]
    item["system"]["advancement"] = [{"level": n, "hp": 4} for n in range(1, levels + 1)]
    return item


def apply_foundry(data: dict[str, Any], updates: list[dict[str, Any]]) -> dict[str, Any]:
    """A copy of ``data`` with Foundry's ``actor.update({dotted: value})`` applied as
    Foundry does it: ``expandObject`` (dotted keys, in order), then ``mergeObject`` with
    ``performDeletions``: objects merge key by key (a key the new value lacks stays),
    ``-=key`` deletes, arrays and other values replace."""
    data = copy.deepcopy(data)
    actor = data["actor"] if "actor" in data and "_id" not in data else data
    for entry in updates:
        assert entry["uuid"].endswith(f"Actor.{actor['_id']}")
        _merge_deleting(actor, _expand(entry["update"]))
    return data


def _expand(changes: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for dotted, value in changes.items():
        node = out
        *parents, last = dotted.split(".")
        for key in parents:
            if not isinstance(node.get(key), dict):
                node[key] = {}
            node = node[key]
        node[last] = _expand(value) if isinstance(value, dict) else copy.deepcopy(value)
    return out


def _merge_deleting(into: dict[str, Any], changes: dict[str, Any]) -> None:
    for key, value in changes.items():
        if key.startswith("-="):
            into.pop(key[2:], None)
        elif isinstance(value, dict):
            if not isinstance(into.get(key), dict):
                into[key] = {}
            _merge_deleting(into[key], value)
        else:
            into[key] = value


def apply_roll20(data: dict[str, Any], updates: list[dict[str, Any]]) -> dict[str, Any]:
    """A copy of ``data`` with Roll20 attribute writes applied as the Mod script does:
    existing attributes set (matched case-insensitively), missing ones created."""
    data = copy.deepcopy(data)
    rows = attribs_of(data)
    for entry in updates:
        for name, parts in entry["attributes"].items():
            row = next((r for r in rows if r["name"].lower() == name.lower()), None)
            if row is None:
                row = {"name": name, "current": "", "max": ""}
                rows.append(row)
            row.update(parts)
    return data


def attribs_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The attribute list inside any accepted Roll20 envelope."""
    node = data.get("character", data) if "mapping" in data else data
    if node.get("type") == "character" and "character" in node:
        node = node["character"]
    rows: list[dict[str, Any]] = node["attribs"]
    return rows


def attr(data: dict[str, Any], name: str) -> dict[str, Any]:
    """The attribute ``name`` of a Roll20 character (case-insensitive)."""
    return next(r for r in attribs_of(data) if r["name"].lower() == name.lower())
