"""What a method handler may use: the app's services and the calling connection.

Handlers get everything through a ``Context``; they never read globals or the
environment.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from adapters.base import Adapter
from engine.errors import InvalidInput, RulesViolation, json_text
from engine.system import System

from .hub import Hub, Peer
from .plugins import LoadedPlugins
from .settings import Settings
from .store import EncounterStore

if TYPE_CHECKING:
    from .methods.encounter import PendingMemo


@dataclass
class Services:
    """The app's long-lived parts, opened and closed by ``create_app``'s cleanup context."""

    settings: Settings
    version: str
    store: EncounterStore
    plugins: LoadedPlugins
    adapters: dict[str, Adapter]
    hub: Hub
    started_at: float = field(default_factory=time.time)
    _locks: dict[str, tuple[asyncio.Lock, list[int]]] = field(default_factory=dict)
    #: answers that never change while the daemon runs (``companion.info`` ...)
    cache: dict[str, Any] = field(default_factory=dict)
    #: encounter id -> combatant id -> (adapter id, data as stored: what the adapter
    #: reads) of ``{adapter, data}`` combatants, for their write-back after a step
    #: (filled from the log once); the most recently used last, a few encounters at most
    adapter_refs: OrderedDict[str, dict[str, tuple[str, Any]]] = field(
        default_factory=OrderedDict)
    #: encounter id -> the pending choices ``encounter.log`` masks with, worked out from
    #: the stored states once; the most recently read last, a few encounters at most
    pending_memos: OrderedDict[str, PendingMemo] = field(default_factory=OrderedDict)

    @cached_property
    def http_context(self) -> Context:
        """The context of every plain HTTP call (no peer): one value, made once."""
        return Context(self)

    @property
    def systems(self) -> dict[str, System]:
        """Every rule system by id."""
        return self.plugins.systems

    def encounter_system(self, system_id: Any, path: str = "/system") -> System:
        """``system`` for an encounter: a system without round logic is invalid params
        (``systems.list`` says ``encounters: false`` for it)."""
        return self._system_able(system_id, path, self.plugins.encounter_systems,
                                 "does not run encounters", "encounters")

    def round_end_system(self, system_id: Any, path: str = "/system") -> System:
        """``system`` for ``exchange.end_round`` (``systems.list``: ``round_end``)."""
        return self._system_able(system_id, path, self.plugins.round_end_systems,
                                 "has no end of round outside an encounter", "round_end")

    def rest_system(self, system_id: Any, path: str = "/system") -> System:
        """``system`` for ``combatants.rest`` (``systems.list``: ``rest``)."""
        return self._system_able(system_id, path, self.plugins.rest_systems,
                                 "has no rule for resting", "rest")

    def _system_able(self, system_id: Any, path: str, able: set[str], lacks: str,
                     flag: str) -> System:
        system = self.system(system_id, path)
        if system.id not in able:
            raise InvalidInput.at(path, f"system {system.id} {lacks} (systems.list: {flag} "
                                        "false)")
        return system

    def system(self, system_id: Any, path: str = "/system") -> System:
        """The system called ``system_id``, or invalid params naming ``path``."""
        system = self.plugins.systems.get(system_id) if isinstance(system_id, str) else None
        if system is None:
            raise InvalidInput.at(path, f"unknown system {json_text(system_id)}; known: "
                                        f"{json_text(sorted(self.plugins.systems), 200)}")
        return system

    def check_request(self, system: System, schema: str, request: Mapping[str, Any]) -> None:
        """Invalid params naming every problem when ``request`` fails a third-party
        ``system``'s ``schema`` (the ``System`` method that gives it: ``request_schema``,
        ``end_round_schema`` ...), before the system sees it. The built-in systems check
        their own requests (``validate_request``): nothing is checked twice for them."""
        compiled = self.plugins.request_schemas.get(system.id, {}).get(schema)
        if compiled is not None:
            problems = compiled.problems(request)
            if problems:
                raise InvalidInput(problems)

    def check_resolvable(self, system: System, state: Mapping[str, Any],
                         force: bool) -> None:
        """RulesViolation ``choices-missing`` while a third-party ``system``'s encounter
        still waits for choices and the resolve is not forced (API.md: ``resolve`` once
        ``waiting_for`` is empty, or with ``force``). docs/PLUGINS.md asks such a system
        to refuse it itself, but one that forgets would take the missing choices as no
        attack and no defense, which only ``force`` may. The built-in systems refuse it
        themselves, in words of their own: nothing is checked twice for them."""
        if force or system.id not in self.plugins.request_schemas:
            return
        waiting = system.encounter_waiting_for(state)
        if waiting:
            raise RulesViolation("choices-missing", f"still waiting for "
                                 f"{', '.join(map(str, waiting))} (or resolve with force)")

    def adapter(self, adapter_id: Any, path: str = "/adapter") -> Adapter:
        """The adapter called ``adapter_id``, or invalid params naming ``path``."""
        adapter = self.adapters.get(adapter_id) if isinstance(adapter_id, str) else None
        if adapter is None:
            raise InvalidInput.at(path, f"unknown adapter {json_text(adapter_id)}; known: "
                                        f"{json_text(sorted(self.adapters), 200)}")
        return adapter

    @asynccontextmanager
    async def encounter_lock(self, encounter_id: str) -> AsyncIterator[None]:
        """Serialise writes to one encounter (read, compute, append with its revision).

        A lock lives only while someone holds or waits for it, so ids that name nothing
        (or encounters long finished) cost no memory.
        """
        entry = self._locks.get(encounter_id)
        if entry is None:
            entry = self._locks[encounter_id] = (asyncio.Lock(), [0])
        lock, users = entry
        users[0] += 1
        try:
            async with lock:
                yield
        finally:
            users[0] -= 1
            if users[0] == 0:
                del self._locks[encounter_id]


@dataclass(frozen=True)
class Context:
    """One call's view: the services and, on a WebSocket, the calling peer."""

    services: Services
    peer: Peer | None = None
