"""VTT adapters: Foundry and Roll20 data in, combatants out; before/after in, sheet
updates out. Pure: no network, no files (a mapping file's contents come in the data).

``registry()`` lists every adapter by id; ``get(id)`` finds one or raises
``InvalidInput`` at ``/adapter``. docs/ADAPTERS.md describes each adapter's fields.
"""

from __future__ import annotations

from functools import cache

from engine.errors import InvalidInput, json_text

from .base import Adapter, Imported
from .foundry import ADAPTERS as _FOUNDRY
from .roll20 import ADAPTERS as _ROLL20

__all__ = ["Adapter", "Imported", "get", "registry"]


@cache
def _all() -> dict[str, Adapter]:
    out: dict[str, Adapter] = {}
    for adapter in (*_FOUNDRY, *_ROLL20):
        if adapter.id in out:
            raise RuntimeError(f"duplicate adapter id {adapter.id}")
        out[adapter.id] = adapter
    return out


def registry() -> dict[str, Adapter]:
    """Every built-in adapter by id (a new dict each call; the adapters are shared)."""
    return dict(_all())


def get(adapter_id: object) -> Adapter:
    """The adapter named ``adapter_id``; InvalidInput at ``/adapter`` if there is none."""
    found = _all().get(adapter_id) if isinstance(adapter_id, str) else None
    if found is None:
        raise InvalidInput.at("/adapter", f"unknown adapter {json_text(adapter_id)}; "
                              f"known: {json_text(sorted(_all()), 200)}")
    return found
