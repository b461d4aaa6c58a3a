"""Typed app state: every ``web.AppKey`` the daemon uses, declared here and nowhere else."""

from __future__ import annotations

from aiohttp import web

from adapters.base import Adapter

from .hub import Hub
from .logs import AccessLog
from .plugins import LoadedPlugins
from .rpc import Dispatcher
from .services import Services
from .settings import Settings
from .store import EncounterStore
from .tokens import TokenKeeper

SETTINGS = web.AppKey("settings", Settings)
TOKENS = web.AppKey("tokens", TokenKeeper)
PLUGINS = web.AppKey("plugins", LoadedPlugins)
ADAPTERS = web.AppKey("adapters", dict[str, Adapter])
STORE = web.AppKey("store", EncounterStore)
HUB = web.AppKey("hub", Hub)
SERVICES = web.AppKey("services", Services)
DISPATCHER = web.AppKey("dispatcher", Dispatcher)
ACCESS_LOG = web.AppKey("access_log", AccessLog)
