"""docs/COMBATANTS.md is the quick reference of every combatant field the adapters read
and write: it must name each property of each system's combatant schema."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from adapters.core import FIELDS
from engine import builtin_systems

DOC = Path(__file__).resolve().parents[2] / "docs" / "COMBATANTS.md"


def named_fields(system: str | None) -> set[str]:
    """The field names in the first column of the doc's table for ``system`` (None: the
    table every combatant shares, before the first system's section)."""
    text = DOC.read_text(encoding="utf-8")
    sections = re.split(r"^## ", text, flags=re.MULTILINE)
    if system is None:
        body = sections[0]
    else:
        body = next(s for s in sections[1:] if s.startswith(f"`{system}`"))
    names: set[str] = set()
    for line in body.splitlines():
        cells = line.split("|")
        if line.startswith("|") and len(cells) > 2:
            names.update(re.findall(r"`([a-z_0-9]+)`", cells[1]))
    return names


@pytest.mark.parametrize("system", sorted(builtin_systems()))
def test_combatants_doc_names_every_schema_property(system: str) -> None:
    schema = builtin_systems()[system].combatant_schema()
    documented = named_fields(system) | named_fields(None)
    assert set(schema["properties"]) - documented == set()
    # and the adapters know every field but the id and name (adapters/core.py FIELDS)
    assert set(schema["properties"]) - {"id", "name"} == set(FIELDS[system])
