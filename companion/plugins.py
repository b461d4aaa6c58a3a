"""Plugins: rule systems and extra methods found through entry points.

An entry point of the ``mindscape.plugins`` group may load to an ``engine.System``
instance, a ``Plugin`` or a zero-argument callable returning either. The built-in systems
are registered the same way (``pyproject.toml`` names ``engine.<pkg>:SYSTEM``). A plugin
that fails in any way (import error, wrong type, a schema that does not compile, a method
that is not namespaced or collides) is reported with a message we wrote, logged with
its traceback, and skipped; it never takes the daemon down.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint
from typing import Any

from engine.system import System

from .registry import MethodRegistry, MethodSpec, RegistryError

__all__ = ["LoadedPlugins", "MethodSpec", "Plugin", "PluginReport", "load_plugins"]

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
    """Systems by id, the plugin that gave each, the extended method table, reports."""

    systems: dict[str, System] = field(default_factory=dict)
    system_plugin: dict[str, str] = field(default_factory=dict)
    methods: MethodRegistry = field(default_factory=MethodRegistry)
    reports: list[PluginReport] = field(default_factory=list)


class PluginError(Exception):
    """Why a plugin was skipped, in words safe to show a client."""


def _distribution(ep: EntryPoint) -> tuple[str | None, str | None]:
    dist = getattr(ep, "dist", None)
    if dist is None:
        return None, None
    return str(dist.name), str(dist.version)


def _as_plugin(ep: EntryPoint, obj: Any, version: str | None) -> Plugin:
    if isinstance(obj, Plugin):
        return obj
    if isinstance(obj, System):
        return Plugin(name=ep.name, version=version or "unknown", systems=(obj,))
    raise PluginError(f"loads to a {type(obj).__name__}, not an engine.System or a "
                      "companion.plugins.Plugin")


def _load(ep: EntryPoint, version: str | None) -> Plugin:
    try:
        obj = ep.load()
    except Exception as exc:
        log.warning("plugin %s could not be imported", ep.name, exc_info=True)
        raise PluginError(f"could not be loaded ({type(exc).__name__}); "
                          "see the daemon log") from None
    if not isinstance(obj, Plugin | System) and callable(obj):
        try:
            obj = obj()
        except Exception as exc:
            log.warning("plugin %s factory failed", ep.name, exc_info=True)
            raise PluginError(f"its factory failed ({type(exc).__name__}); "
                              "see the daemon log") from None
    return _as_plugin(ep, obj, version)


def _check_systems(plugin: Plugin, loaded: LoadedPlugins) -> None:
    seen: set[str] = set()
    for system in plugin.systems:
        if not isinstance(system, System):
            raise PluginError(f"lists a {type(system).__name__} among its systems")
        system_id = getattr(system, "id", None)
        if not isinstance(system_id, str) or not system_id:
            raise PluginError("has a system without an id")
        if system_id in loaded.systems or system_id in seen:
            owner = loaded.system_plugin.get(system_id, plugin.name)
            raise PluginError(f"system {system_id} is already provided by {owner}")
        seen.add(system_id)


def _check_methods(plugin: Plugin, core: MethodRegistry, loaded: LoadedPlugins) -> None:
    reserved = core.namespaces() | {"rpc"}
    for spec in plugin.methods:
        if not isinstance(spec, MethodSpec):
            raise PluginError(f"lists a {type(spec).__name__} among its methods")
        namespace = spec.name.split(".", 1)[0]
        if spec.name in core or namespace in reserved:
            raise PluginError(f"method {spec.name} collides with the core namespace "
                              f"{namespace}")
    try:
        loaded.methods.copy().add_all(plugin.methods)
    except RegistryError as exc:
        raise PluginError(str(exc)) from None


def load_plugins(entry_points: Iterable[EntryPoint], core: MethodRegistry) -> LoadedPlugins:
    """Load every entry point (built-ins first), skipping and reporting broken ones."""
    loaded = LoadedPlugins(methods=core.copy())

    def order(ep: EntryPoint) -> int:
        # Stable: built-ins first, the others in the order the environment lists them.
        return 0 if _distribution(ep)[0] == BUILTIN_DISTRIBUTION else 1

    for ep in sorted(entry_points, key=order):
        dist, version = _distribution(ep)
        builtin = dist == BUILTIN_DISTRIBUTION
        try:
            plugin = _load(ep, version)
            _check_systems(plugin, loaded)
            _check_methods(plugin, core, loaded)
        except PluginError as exc:
            log.warning("plugin %s skipped: %s", ep.name, exc)
            loaded.reports.append(PluginReport(ep.name, version, ep.value, builtin,
                                               error=str(exc)))
            continue
        loaded.methods.add_all(plugin.methods)
        for system in plugin.systems:
            loaded.systems[system.id] = system
            loaded.system_plugin[system.id] = plugin.name
        loaded.reports.append(PluginReport(
            plugin.name, plugin.version, ep.value, builtin,
            systems=tuple(s.id for s in plugin.systems),
            methods=tuple(m.name for m in plugin.methods)))
    return loaded
