"""The adapter interface: VTT data in, combatants out; before/after in, sheet updates out.

Adapters are pure: no network, no files (a mapping file's *contents* are passed in).
Malformed input raises ``engine.InvalidInput`` with JSON Pointer paths into the data.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

#: A system's combatant normaliser (``System.combatant``): raw combatant in, the full
#: combatant out, ``EngineError`` when it is refused.
Normalise = Callable[[Mapping[str, Any]], Mapping[str, Any]]


@dataclass(frozen=True)
class Imported:
    """What an adapter made of VTT data: the system's combatant object (as a caller
    would pass it to the engine, before the system normalises it) and what it assumed."""

    combatant: dict[str, Any]
    warnings: tuple[str, ...] = field(default_factory=tuple)
    #: JSON Pointer (inside the data) of where each field was read, for fields read
    #: from one place; derived and defaulted fields have none
    sources: dict[str, str] = field(default_factory=dict)


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
                after: Mapping[str, Any], *, normalise: Normalise | None = None,
                ) -> list[dict[str, Any]]:
        """The platform's write-back for one combatant: the fields that changed, each to
        where it was read or else to the psionic state store. Foundry: ``{uuid, update:
        {dotted.path: value}}``; Roll20: ``{character_id, attributes: {name: {current,
        max}}}``.

        With ``normalise`` (the system's ``combatant``), the write-back is also played on
        a copy of ``data``, imported again and normalised, and every writable field whose
        value then differs from ``after`` (a maximum the engine defaulted) is added, so
        that importing the written data gives ``after`` again."""

    def trimmed(self, data: Any, system: str) -> Any:
        """``data`` cut down to what ``import_`` and ``updates`` read of it for
        ``system``: for data ``import_`` accepts, both give on the result what they give
        on ``data`` (but for the JSON Pointers a warning may quote). An encounter
        keeps this instead of the whole sheet, which may hold far more (a Foundry
        actor's items and other modules' flags). ``data`` itself is not changed; the
        result may share parts with it. This default keeps everything."""
        return data

    def written_to(self, data: Any, system: str) -> Any:
        """Where ``updates`` writes the combatant of ``data`` back, as a value to compare
        (JSON-like; equal for two sheets written to the same place): an encounter
        refreshed from a sheet with the same combatant keeps it all the same when this
        differs (a Foundry token placed again, a token linked to its actor). This
        default is ``data`` itself: any change counts."""
        return data

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "vtt": self.vtt, "system": self.system,
                "default_system": self.default_system, "description": self.description}
