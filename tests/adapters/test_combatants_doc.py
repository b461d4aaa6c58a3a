"""docs/COMBATANTS.md is the quick reference of every combatant field the adapters read
and write: it must name each property of each system's combatant schema. docs/ADAPTERS.md
names the other mode names each system reads."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from adapters.core import ALIASES, FIELDS, mode_id
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


ADAPTERS_DOC = DOC.with_name("ADAPTERS.md")


def test_adapters_doc_names_every_mode_alias_of_each_system() -> None:
    """docs/ADAPTERS.md "The psionic state store": the other names each system reads for
    its own modes ("Thought Shield" → `shield-thoughts` in combat-strength ...) are the
    adapters' ``ALIASES``, each read as a sheet's name is (``mode_id``), and a system
    said to read only its own names has none."""
    text = " ".join(ADAPTERS_DOC.read_text(encoding="utf-8").split())
    sentence = re.search(r"a system reads another's name of one of its own modes: (.*?)\. ",
                         text)
    assert sentence, "ADAPTERS.md no longer has the sentence on mode names read here"
    said: dict[str, dict[str, str]] = {system: {} for system in ALIASES}
    for part in sentence.group(1).split("; "):
        if re.fullmatch(r"[a-z0-9-]+ reads only its own names", part):
            continue  # none: left empty in ``said``
        system = re.match(r"in ([a-z0-9-]+) ", part)
        assert system, part
        for name, mode in re.findall(r'"([^"]+)" → `([a-z-]+)`', part):
            said[system.group(1)][mode_id(name)] = mode
    assert said == ALIASES
