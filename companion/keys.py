"""Typed app state: every ``web.AppKey`` the daemon uses, declared here and nowhere else."""

from __future__ import annotations

from aiohttp import web

from .logs import AccessLog
from .rpc import Dispatcher, Outcome
from .services import Services
from .settings import Settings
from .tokens import TokenKeeper

SETTINGS = web.AppKey("settings", Settings)
TOKENS = web.AppKey("tokens", TokenKeeper)
SERVICES = web.AppKey("services", Services)
DISPATCHER = web.AppKey("dispatcher", Dispatcher)
ACCESS_LOG = web.AppKey("access_log", AccessLog)

#: Per request: what the JSON-RPC calls did, for the request log line.
OUTCOME = web.RequestKey("outcome", Outcome)
