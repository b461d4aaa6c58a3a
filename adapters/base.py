"""The adapter interface: VTT data in, combatants out; before/after in, sheet updates out.

Adapters are pure: no network, no files (a mapping file's *contents* are passed in).
Malformed input raises ``engine.InvalidInput`` with JSON Pointer paths into the data.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Imported:
    """What an adapter made of VTT data: the system's combatant object (as a caller
    would pass it to the engine, before the system normalises it) and what it assumed."""

    combatant: dict[str, Any]
    warnings: tuple[str, ...] = field(default_factory=tuple)


class Adapter(ABC):
    """One VTT data format (``foundry.dnd5e``, ``roll20.adnd2e-revised`` ...)."""

    #: ``<vtt>.<format>``
    id: str
    #: ``foundry`` or ``roll20``
    vtt: str
    #: the system this adapter is made for, or ``None`` when it serves any system
    system: str | None
    description: str
    #: the system ``adapters.import`` assumes when none is named (a sheet made for one
    #: game that still serves the others), or ``None``
    default_system: str | None = None

    @abstractmethod
    def import_(self, data: Any, system: str) -> Imported:
        """Turn raw VTT data into a combatant for ``system``."""

    @abstractmethod
    def updates(self, data: Any, system: str, before: Mapping[str, Any],
                after: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The platform's write-back for one combatant: only fields that changed and
        that this adapter read. Foundry: ``{uuid, update: {dotted.path: value}}``;
        Roll20: ``{character_id, attributes: {name: {current, max}}}``."""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "vtt": self.vtt, "system": self.system,
                "default_system": self.default_system, "description": self.description}
