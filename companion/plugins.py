"""Plugins: rule systems and extra methods found through entry points.

An entry point of the ``mindscape.plugins`` group may load to an ``engine.System``
instance, a ``Plugin`` or a zero-argument callable returning either. The built-in systems
are registered the same way (``pyproject.toml`` names ``engine.<pkg>:SYSTEM``). A plugin
that fails in any way (import error or ``SystemExit``, wrong type, a member of the wrong
type, a schema that cannot be used, a method that is not namespaced or collides) is
reported with a message we wrote, logged with its traceback, and skipped; it never takes
the daemon down. Everything shared endpoints show of it (names, versions, descriptions,
a system's ``name``, ``source`` and schemas) is checked here, so ``rpc.discover``,
``systems.list`` and the status page cannot fail because of one plugin.

Load order decides every clash, so it does not depend on the file system: the built-in
systems first, then the others sorted by distribution name and entry point name. The
first plugin to load keeps its plugin name, each of its system ids and each namespace
of its methods; a later plugin that wants any of them is skipped whole.

The daemon trusts only its own systems to check their requests: a third-party system's
schemas are compiled here (``LoadedPlugins.request_schemas``) and the methods that call
it check each request first (``Services.check_request``), as the built-in systems'
``validate_request`` does.
"""

from __future__ import annotations

import logging
import re
import signal
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint
from typing import Any

from engine.errors import json_text
from engine.system import System

from .registry import (
    CompiledSchema,
    MethodError,
    MethodRegistry,
    MethodSpec,
    RegistryError,
    SchemaUnusable,
    compile_schema,
)
from .schemas import SYSTEM_ID

__all__ = [
    "LoadedPlugins",
    "MethodError",
    "MethodSpec",
    "Plugin",
    "PluginReport",
    "ends_rounds",
    "load_plugins",
    "rests",
    "runs_encounters",
]

log = logging.getLogger("mindscape.plugins")

#: The distribution whose entry points are the built-in systems (loaded first, so a
#: third-party plugin can never shadow a built-in system id).
BUILTIN_DISTRIBUTION = "mindscape"


@dataclass(frozen=True)
class Plugin:
    """What a plugin contributes: rule systems and ``namespace.verb`` methods."""

    name: str
    version: str
    systems: tuple[System, ...] = ()
    methods: tuple[MethodSpec, ...] = ()


@dataclass(frozen=True)
class PluginReport:
    """One entry point as ``companion.info`` shows it; ``error`` is ``None`` when loaded."""

    name: str
    version: str | None
    entry_point: str
    builtin: bool
    systems: tuple[str, ...] = ()
    methods: tuple[str, ...] = ()
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        """As ``companion.info`` lists it."""
        return {"name": self.name, "version": self.version, "entry_point": self.entry_point,
                "builtin": self.builtin, "systems": list(self.systems),
                "methods": list(self.methods), "error": self.error}


@dataclass
class LoadedPlugins:
    """Systems by id, the plugin that gave each, which run encounters, the extended
    method table, reports."""

    systems: dict[str, System] = field(default_factory=dict)
    system_plugin: dict[str, str] = field(default_factory=dict)
    #: the ids of the systems that run encounters (``runs_encounters``)
    encounter_systems: set[str] = field(default_factory=set)
    #: the ids of the systems that end rounds outside encounters (``ends_rounds``)
    round_end_systems: set[str] = field(default_factory=set)
    #: the ids of the systems that rest combatants (``rests``)
    rest_systems: set[str] = field(default_factory=set)
    methods: MethodRegistry = field(default_factory=MethodRegistry)
    reports: list[PluginReport] = field(default_factory=list)
    #: the namespace of each plugin method -> the plugin (its ``name``) that owns it
    namespaces: dict[str, str] = field(default_factory=dict)
    #: a third-party system's id -> its schemas by the ``System`` method that gives them
    #: (``request_schema``, ``end_round_schema`` ...), compiled: the daemon checks its
    #: requests (``Services.check_request``) and that its encounters may resolve
    #: (``Services.check_resolvable``); the built-in systems check their own. Its keys
    #: are exactly the third-party systems.
    request_schemas: dict[str, dict[str, CompiledSchema]] = field(default_factory=dict)


class PluginError(Exception):
    """Why a plugin was skipped, in words safe to show a client."""


def _distribution(ep: EntryPoint) -> tuple[str | None, str | None]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return None, None
    return str(dist.name), str(dist.version)


def load_order(ep: EntryPoint) -> tuple[bool, str, str, str]:
    """Where ``ep`` loads: the built-in systems first, then by distribution name
    (normalised as pip compares them: ``My_Plugin`` is ``my-plugin``; an entry point
    without a distribution first), entry point name and target."""
    dist = _distribution(ep)[0]
    normalised = re.sub(r"[-_.]+", "-", dist).lower() if dist is not None else ""
    return dist != BUILTIN_DISTRIBUTION, normalised, ep.name, ep.value


def _as_plugin(ep: EntryPoint, obj: Any, version: str | None) -> Plugin:
    if isinstance(obj, Plugin):
        return obj
    if isinstance(obj, System):
        return Plugin(name=ep.name, version=version or "unknown", systems=(obj,))
    raise PluginError(f"loads to an object of type {type(obj).__name__}, not an "
                      "engine.System or a companion.plugins.Plugin")


#: What a system id may be: as the built-in ones (revised-2e), within SYSTEM_ID's length
_SYSTEM_ID = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
MAX_SYSTEM_ID = SYSTEM_ID["maxLength"]


def _reraise_unless_plugins(exc: BaseException) -> None:
    """Let ``exc`` go on unless a plugin's own code raised it while it was imported or
    built. Whatever that code raises is its fault (``SystemExit`` from a module that
    parses ``sys.argv``, a ``BaseException`` subclass of its own, a ``CancelledError``:
    loading awaits nothing, so no cancellation arrives there), save a
    ``KeyboardInterrupt`` while Python's own Ctrl+C handler is in place, which may be
    the user's wish to stop. ``mindscape serve`` takes SIGINT with a handler of its own
    before plugins load: there a ``KeyboardInterrupt`` can only be the plugin's."""
    if isinstance(exc, KeyboardInterrupt) and \
            signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        raise exc


def _load(ep: EntryPoint, version: str | None) -> Plugin:
    try:
        obj = ep.load()
    except BaseException as exc:
        _reraise_unless_plugins(exc)
        log.warning("plugin %s could not be imported", ep.name, exc_info=True)
        raise PluginError(f"could not be loaded ({type(exc).__name__}); "
                          "see the daemon log") from None
    if not isinstance(obj, Plugin | System) and callable(obj):
        try:
            obj = obj()
        except BaseException as exc:
            _reraise_unless_plugins(exc)
            log.warning("plugin %s factory failed", ep.name, exc_info=True)
            raise PluginError(f"its factory failed ({type(exc).__name__}); "
                              "see the daemon log") from None
    return _as_plugin(ep, obj, version)


def _text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _check_plugin(plugin: Plugin, loaded: LoadedPlugins) -> None:
    """The ``Plugin`` itself: its name (not taken), version and the types of its two
    lists."""
    if not _text(plugin.name):
        raise PluginError("its Plugin name must be a non-empty string")
    if any(r.error is None and r.name == plugin.name for r in loaded.reports):
        raise PluginError(f"its Plugin name {plugin.name} is already taken by a plugin "
                          "loaded before it")
    if not _text(plugin.version):
        raise PluginError("its Plugin version must be a non-empty string")
    for what in ("systems", "methods"):
        if not isinstance(getattr(plugin, what), tuple | list):
            raise PluginError(f"its Plugin {what} must be a tuple (got a "
                              f"{type(getattr(plugin, what)).__name__})")


def _check_systems(plugin: Plugin, loaded: LoadedPlugins) -> None:
    seen: set[str] = set()
    for system in plugin.systems:
        if not isinstance(system, System):
            raise PluginError(f"lists a {type(system).__name__} among its systems")
        system_id = getattr(system, "id", None)
        if not isinstance(system_id, str) or not system_id:
            raise PluginError("has a system without an id")
        if len(system_id) > MAX_SYSTEM_ID or not _SYSTEM_ID.fullmatch(system_id):
            # callers name it in params (at most 100 characters) and rpc.discover in
            # schema ids (a "#" there makes the document's schemas invalid)
            raise PluginError(f"system id {json_text(system_id[:40], 300)} must be kebab-case "
                              '(lower-case letters and digits joined by "-"), at most '
                              f"{MAX_SYSTEM_ID} characters")
        for member in ("name", "source"):
            # shown by systems.list and the status page, which must not fail for it
            if not isinstance(getattr(system, member, None), str):
                raise PluginError(f"system {system_id} has no {member} (a string)")
        if system_id in loaded.systems or system_id in seen:
            owner = loaded.system_plugin.get(system_id, plugin.name)
            raise PluginError(f"system {system_id} is already provided by {owner}")
        seen.add(system_id)


def _system_schemas(system: System) -> dict[str, CompiledSchema]:
    """Every schema of a third-party ``system`` that ``rpc.discover`` shows or the
    daemon checks requests against, checked (as a plugin method's are) and compiled, by
    the ``System`` method that gives it; ``PluginError`` naming the first that cannot
    be used. (The built-in systems' tests check theirs: ``System.schemas_tested``.)"""
    which = ["combatant_schema", "request_schema"]
    if ends_rounds(system):
        which += ["end_round_schema", "round_end_choices_schema"]
    if rests(system):
        which.append("rest_schema")
    compiled: dict[str, CompiledSchema] = {}
    for name in which:
        try:
            schema = getattr(system, name)()
        except BaseException as exc:
            _reraise_unless_plugins(exc)
            log.warning("plugin system %s: %s() failed", system.id, name, exc_info=True)
            raise PluginError(f"system {system.id}: its {name}() failed "
                              f"({type(exc).__name__}); see the daemon log") from None
        if not isinstance(schema, Mapping):
            raise PluginError(f"system {system.id}: its {name}() must return a JSON "
                              f"object, not a {type(schema).__name__}")
        try:
            compiled[name] = compile_schema(schema)
        except SchemaUnusable as exc:
            raise PluginError(f"system {system.id}: its {name}() {exc}") from None
    return compiled


def _with_methods(plugin: Plugin, core: MethodRegistry, loaded: LoadedPlugins
                  ) -> MethodRegistry:
    """The method table with ``plugin``'s methods added (each checked and compiled)."""
    reserved = core.namespaces() | {"rpc"}
    for spec in plugin.methods:
        if not isinstance(spec, MethodSpec):
            raise PluginError(f"lists a {type(spec).__name__} among its methods")
        if not isinstance(spec.name, str):
            raise PluginError(f"has a method whose name is a {type(spec.name).__name__}")
        namespace = spec.name.split(".", 1)[0]
        if spec.name in core or namespace in reserved:
            raise PluginError(f"method {spec.name} collides with the core namespace "
                              f"{namespace}")
        owner = loaded.namespaces.get(namespace, plugin.name)
        if owner != plugin.name:
            raise PluginError(f"method {spec.name}: the namespace {namespace} belongs to "
                              f"the plugin {owner}, loaded before it")
    methods = loaded.methods.copy()
    try:
        methods.add_all(plugin.methods, plugin=True)
    except RegistryError as exc:
        raise PluginError(str(exc)) from None
    return methods


#: The encounter hooks a system without round logic (``System.rounds``) must define.
ENCOUNTER_HOOKS = ("encounter_new", "encounter_add", "encounter_view",
                   "encounter_waiting_for", "encounter_declare", "encounter_resolve")


def runs_encounters(system: System) -> bool:
    """Whether ``system`` can run encounters: it has round logic (``rounds``, as the
    built-in systems do) or defines every encounter hook itself (as the sample plugin
    does). ``System``'s own hooks delegate to ``rounds``, so without either they fail."""
    if getattr(system, "rounds", None) is not None:
        return True
    return all(getattr(type(system), hook, None) is not getattr(System, hook)
               for hook in ENCOUNTER_HOOKS)


def ends_rounds(system: System) -> bool:
    """Whether ``system`` ends a round for combatants outside an encounter
    (``exchange.end_round``): it defines ``round_end``."""
    return getattr(type(system), "round_end", None) is not System.round_end


def rests(system: System) -> bool:
    """Whether ``system`` rests combatants (``combatants.rest``): it defines
    ``combatant_rest``."""
    return getattr(type(system), "combatant_rest", None) is not System.combatant_rest


def load_plugins(entry_points: Iterable[EntryPoint], core: MethodRegistry) -> LoadedPlugins:
    """Load every entry point in ``load_order``, skipping and reporting broken ones and
    ones that clash with a plugin loaded before them."""
    loaded = LoadedPlugins(methods=core.copy())
    for ep in sorted(entry_points, key=load_order):
        dist, version = _distribution(ep)
        builtin = dist == BUILTIN_DISTRIBUTION
        try:
            plugin = _load(ep, version)
            _check_plugin(plugin, loaded)
            _check_systems(plugin, loaded)
            # The built-in systems' tests check their schemas, and they check their
            # own requests (validate_request): no second check on the hot path.
            third_party = () if builtin else plugin.systems
            schemas = {s.id: _system_schemas(s) for s in third_party}
            methods = _with_methods(plugin, core, loaded)
            encounters = {s.id for s in plugin.systems if runs_encounters(s)}
            round_ends = {s.id for s in plugin.systems if ends_rounds(s)}
            resting = {s.id for s in plugin.systems if rests(s)}
        except PluginError as exc:
            log.warning("plugin %s skipped: %s", ep.name, exc)
            loaded.reports.append(PluginReport(ep.name, version, ep.value, builtin,
                                               error=str(exc)))
            continue
        except BaseException as exc:
            _reraise_unless_plugins(exc)
            # A check above met something it did not expect (a property of the plugin's
            # objects that raises, say): still the plugin's fault, never the daemon's.
            log.warning("plugin %s could not be checked", ep.name, exc_info=True)
            loaded.reports.append(PluginReport(
                ep.name, version, ep.value, builtin,
                error=f"could not be checked ({type(exc).__name__}); see the daemon log"))
            continue
        loaded.methods = methods
        for spec in plugin.methods:
            loaded.namespaces[spec.name.split(".", 1)[0]] = plugin.name
        loaded.request_schemas.update(schemas)
        for system in plugin.systems:
            loaded.systems[system.id] = system
            loaded.system_plugin[system.id] = plugin.name
            if system.id in encounters:
                loaded.encounter_systems.add(system.id)
            if system.id in round_ends:
                loaded.round_end_systems.add(system.id)
            if system.id in resting:
                loaded.rest_systems.add(system.id)
        loaded.reports.append(PluginReport(
            plugin.name, plugin.version, ep.value, builtin,
            systems=tuple(s.id for s in plugin.systems),
            methods=tuple(m.name for m in plugin.methods)))
    return loaded
