"""Typed app state: every ``web.AppKey`` the daemon uses, declared here and nowhere else."""

from __future__ import annotations

from aiohttp import web

from .rpc import Dispatcher
from .security import TokenKeeper
from .services import Services
from .settings import Settings

SETTINGS = web.AppKey("settings", Settings)
TOKENS = web.AppKey("tokens", TokenKeeper)
SERVICES = web.AppKey("services", Services)
DISPATCHER = web.AppKey("dispatcher", Dispatcher)
