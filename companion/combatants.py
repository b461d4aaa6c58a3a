"""Combatants given as ``{"adapter": ID, "data": RAW}``: import them, and later turn
their before/after into the adapter's write-back ``updates``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from adapters.base import Adapter, Imported, Normalise
from adapters.core import SYSTEMS as ADAPTED_SYSTEMS
from engine.dice import DiceSource, dice_source
from engine.errors import InvalidInput, LimitExceeded, Problem
from engine.system import System

from .services import Services

log = logging.getLogger("mindscape.combatants")

#: The params members that hold a combatant, or a list of them, each of which may be
#: given as ``{adapter, data}``: the built-in systems' names for them (a plugin system
#: takes no ``{adapter, data}``, docs/PLUGINS.md). Named, not left over: a member such
#: as combat-strength's ``stance``, power-pool's ``defenses`` or a rest's ``hours`` is
#: never read as a sheet, whatever its value.
COMBATANT_MEMBERS = frozenset({"attacker", "defender", "defenders", "allies", "controller",
                               "controllers", "puppets", "combatants"})


@dataclass(frozen=True)
class ImportedRef:
    """One adapter-given combatant: where it was, its adapter and raw data, the result,
    where in the data each field was read (``sources``), and the system's normaliser its
    write-backs are checked with."""

    path: str
    role: str
    adapter: Adapter
    data: Any
    combatant: dict[str, Any]
    warnings: tuple[str, ...]
    sources: Mapping[str, str] = field(default_factory=dict)
    normalise: Normalise | None = None


def normaliser(system: System, options: Any = None) -> Normalise:
    """``system.combatant`` under the house rules ``options`` (``combatant_under``:
    revised-2e derives MTHAC0 and saves by house rules), so a write-back's round trip
    derives values as the resolution did."""
    if options:
        return partial(system.combatant_under, options=options)
    return system.combatant


def is_adapter_ref(value: Any) -> bool:
    """``{"adapter": ..., "data": ...}`` and nothing else."""
    return isinstance(value, dict) and set(value) == {"adapter", "data"}


def import_ref(services: Services, ref: Mapping[str, Any], system_id: str, path: str,
               role: str, options: Any = None) -> ImportedRef:
    """Import one ``{adapter, data}`` for ``system_id`` (house rules ``options``);
    errors name ``path``."""
    adapter = services.adapter(ref.get("adapter"), f"{path}/adapter")
    if adapter.system is not None and adapter.system != system_id:
        raise InvalidInput.at(f"{path}/adapter", f"adapter {adapter.id} is made for "
                                                 f"{adapter.system}, not {system_id}")
    if system_id not in ADAPTED_SYSTEMS:
        # a plugin's system: no adapter knows its combatants (the adapter's own refusal
        # would point inside the VTT data, where nothing is wrong)
        raise InvalidInput.at(f"{path}/adapter", (
            f"adapter {adapter.id} builds combatants for {', '.join(ADAPTED_SYSTEMS)}, not "
            f"{system_id}: give this system's combatant object instead"))
    try:
        imported = adapter.import_(ref["data"], system_id)
    except InvalidInput as exc:
        raise type(exc)([Problem(f"{path}/data{p.path}", p.message)
                         for p in exc.problems]) from None
    return ImportedRef(path, role, adapter, ref["data"], dict(imported.combatant),
                       tuple(imported.warnings), dict(imported.sources),
                       normaliser(services.system(system_id), options))


def refused_where_read(ref: ImportedRef, exc: InvalidInput, under: str = ""
                       ) -> InvalidInput:
    """``exc``, the system's refusal of ``ref.combatant`` (its paths in the combatant,
    below ``under`` when the combatant was checked at that place of a request, as an
    encounter's ``/combatant``), with each problem moved to the place in the sheet the
    adapter read the field from: ``<ref.path>/data<source>``, or below it when the value
    was taken as it stands there (an object in Foundry flags). A field derived or
    defaulted, read from no one place, keeps ``<under>/<field>...`` (without ``under``,
    ``/combatant/<field>...``: where ``adapters.import`` answers with the combatant); a
    problem not below ``under`` keeps its path. The engine's messages are kept as they
    are."""
    problems = []
    for p in exc.problems:
        if under and not (p.path == under or p.path.startswith(f"{under}/")):
            problems.append(p)
        else:
            problems.append(Problem(_source_of(ref, p.path[len(under):], under or "/combatant"),
                                    p.message))
    return type(exc)(problems)


def _source_of(ref: ImportedRef, path: str, derived_under: str) -> str:
    """A problem's path in the combatant (``/<field>...``) as the place in ``/data`` the
    adapter read the field from (``/<field>/<key>...`` below it when the value was
    taken as it stands there, an object in Foundry flags); below ``derived_under``
    when it was derived or defaulted."""
    field, _, rest = path[1:].partition("/") if path.startswith("/") else ("", "", "")
    source = ref.sources.get(field)
    if source is None:
        return f"{derived_under}{path}"
    if rest and field in ref.combatant and _at(ref.data, source) == ref.combatant[field]:
        return f"{ref.path}/data{source}/{rest}"
    return f"{ref.path}/data{source}"


_MISSING = object()


def _at(data: Any, path: str) -> Any:
    """The value at JSON Pointer ``path`` in ``data``, or ``_MISSING``."""
    node = data
    for token in path.split("/")[1:]:
        key = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isascii() and key.isdigit() \
                and int(key) < len(node):
            node = node[int(key)]
        else:
            return _MISSING
    return node


def kept_data(adapter: Adapter, data: Any, system_id: str,
              imported: Imported | None = None) -> Any:
    """What an encounter keeps of an ``{adapter, data}`` combatant's ``data`` (in its log
    and for its write-backs): ``adapter.trimmed(data)``, only what the adapter reads,
    when importing that gives the combatant ``data`` gives (``imported``, when known
    already); else ``data`` whole. The log's replay reads the kept data as it would the
    whole: the check makes that hold even if an adapter's ``trimmed`` were wrong, at the
    cost of the memory it saves. (Warnings are not compared: one may quote a JSON
    Pointer, and a Roll20 attribute's index is another in the trimmed list.)"""
    try:
        cut = adapter.trimmed(data, system_id)
        if cut is data or cut == data:
            return data
        whole = imported if imported is not None else adapter.import_(data, system_id)
        again = adapter.import_(cut, system_id)
    except Exception:
        # Only stored data comes here, which this adapter imported once already.
        log.exception("adapter %s: trimming its data failed; the whole data is kept",
                      adapter.id)
        return data
    if dict(again.combatant) == dict(whole.combatant):
        return cut
    log.warning("adapter %s: its trimmed data imports differently; the whole data is kept",
                adapter.id)
    return data


def import_combatants(services: Services, params: Mapping[str, Any], system_id: str
                      ) -> tuple[dict[str, Any], list[ImportedRef]]:
    """``params`` with every top-level ``{adapter, data}`` (also inside top-level lists,
    as power-pool ``allies``/``defenders``) replaced by the imported combatant."""
    out = dict(params)
    refs: list[ImportedRef] = []
    options = params.get("options")
    for key, value in params.items():
        if key not in COMBATANT_MEMBERS:
            continue
        if is_adapter_ref(value):
            ref = import_ref(services, value, system_id, f"/{key}", key, options)
            refs.append(ref)
            out[key] = ref.combatant
        elif isinstance(value, list) and any(is_adapter_ref(v) for v in value):
            items = []
            for i, item in enumerate(value):
                if is_adapter_ref(item):
                    ref = import_ref(services, item, system_id, f"/{key}/{i}", key,
                                     options)
                    refs.append(ref)
                    items.append(ref.combatant)
                else:
                    items.append(item)
            out[key] = items
    return out, refs


def warnings_of(refs: list[ImportedRef]) -> list[str]:
    """Every import warning, prefixed with where the combatant was given."""
    return [f"{r.path}: {w}" for r in refs for w in r.warnings]


def exchange_updates(refs: list[ImportedRef], system_id: str,
                     result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Write-backs for each imported combatant from an exchange result's before/after
    (``attacker``, ``defender``, ``others``; ``combatants`` of an end of round)."""
    changes: dict[str, Mapping[str, Any]] = {}
    for change in (*(result.get("others") or ()), *(result.get("combatants") or ())):
        if isinstance(change, Mapping):
            changes[str(change.get("id"))] = change
    for role in ("defender", "attacker"):
        change = result.get(role)
        if isinstance(change, Mapping):
            changes.setdefault(str(change.get("id")), change)
    updates: list[dict[str, Any]] = []
    for ref in refs:
        change = changes.get(str(ref.combatant.get("id")))
        if change is None and ref.role in ("attacker", "defender"):
            change = result.get(ref.role)
        if isinstance(change, Mapping) and change.get("before") != change.get("after"):
            updates.extend(ref.adapter.updates(ref.data, system_id, change["before"],
                                               change["after"], normalise=ref.normalise))
    return updates


def combatants_request(services: Services, params: Mapping[str, Any], system: System
                       ) -> tuple[dict[str, Any], list[ImportedRef]]:
    """The request of a method on a list of ``combatants`` outside any encounter
    (``exchange.end_round``, ``exchange.round_end_choices``, ``combatants.rest``): at most
    ``max_combatants``, each ``{adapter, data}`` imported, without ``system``."""
    limit = services.settings.limits.max_combatants
    if len(params["combatants"]) > limit:
        raise LimitExceeded(Problem("/combatants", f"at most {limit} combatants (limit "
                                                   "max_combatants)"))
    request, refs = import_combatants(services, params, system.id)
    request.pop("system")
    return request, refs


def answer_with_updates(services: Services, params: Mapping[str, Any], system: System,
                        run: Callable[[dict[str, Any], DiceSource], dict[str, Any]],
                        schema: str) -> dict[str, Any]:
    """A method on a list of ``combatants`` that changes them (``exchange.end_round``,
    ``combatants.rest``): ``run`` with the request (``combatants_request`` without
    ``dice`` and ``seed``, checked against the system's ``schema`` when the daemon
    checks its requests: ``Services.check_request``) and the dice they ask for, and the
    answer given ``updates`` (and ``warnings`` for imports)."""
    request, refs = combatants_request(services, params, system)
    dice = dice_source(request.pop("dice", None), request.pop("seed", None))
    services.check_request(system, schema, request)
    result = run(request, dice)
    result["updates"] = exchange_updates(refs, system.id, result)
    if refs:
        result["warnings"] = warnings_of(refs)
    return result
