"""The Roll20 Mod script sends of an AD&D 2E Revised character the attributes
``roll20.adnd2e-revised`` reads and no others (docs/ROLL20.md "What is sent for a
character"): the sheet holds hundreds, some of them kilobytes long (a Psionics Core power
row's macro box, which a sheet worker fills with the power's whole roll template), and
the bridge drops a request of more than 500 chat parts.

``roll20/adnd2e-revised-attributes.json`` sorts the attribute names of the sheet's
psionics tabs (the fixture files of tests/fixtures/README.md, each tab's power rows
expanded from its partial as the sheet's build does) and of the other tabs the adapter
reads into those the adapter reads and those it does not. The tests here check the list
against the adapter; vtt-module/roll20/test/mindscape.test.mjs checks the Mod script's
filter against the same list, so the two stay in step through it."""

from __future__ import annotations

import json
import re
from typing import Any

import adapters
from adapters.core import FIELDS
from adapters.roll20 import (
    _CLASS,
    _LEVEL,
    _ROW_MTHAC0,
    _SECTIONS,
    _SHEET_ATTRIBUTES,
    state_attribute,
)

from .support import FIXTURES, load

SHEET = adapters.get("roll20.adnd2e-revised")
LIST = "roll20/adnd2e-revised-attributes.json"
#: a Roll20 row id (20 characters of letters, digits, '-' and '_': an '_' in it too)
ROW = "-Mz_Row000000000001"
#: each psionics tab with the partial its power rows are built from: the Psionics
#: Revised tab (its discipline partial is no fixture: those rows are left out) and both
#: revisions of the Psionics Core tab
TABS = (
    ("adnd2e-revised-psionics-tab.html", None),
    ("adnd2e-revised-psionic-core-earlier.html", "adnd2e-revised-psionic-core-discipline.html"),
    ("adnd2e-revised-psionic-core-tab.html",
     "adnd2e-revised-psionic-core-discipline-current.html"),
)
#: the Attack Modes and Defense Modes rows as earlier versions of this project read them
#: (the earlier partial paired with the current tab: tests/fixtures/README.md), which
#: the adapter still reads
EARLIER_NAMES = (f"repeating_psion-psion-attack5_{ROW}_psionattacking",
                 f"repeating_psion-psion-defense5_{ROW}_psiondefending")
#: attributes of the sheet's other pages the adapter reads: the scores and hit points
#: (VTT.md's list), the class levels and classes of the Character Info tab
#: (2ESheet.html), the Monster Sheet's Hit Dice and Intelligence (monster-tab.html), the
#: page shown (2ESheet-base.html), Temp HP; and one the Mod script once sent, unread
OTHER_PAGES = ("Intelligence", "Wisdom", "Constitution", "HP", "HP_max", "tempHP",
               *(f"level-class{n}" for n in range(1, 6)), *(f"class{n}" for n in range(1, 6)),
               "hitdice", "monsterintelligence", "tab11", "race")


def expand(tab: str, partial: str | None) -> str:
    """``tab`` with each ``insert_<partial>_(args)`` line replaced by the partial, its
    ``#REPLACEn#`` by the n-th argument, as the sheet's build does; other inserts (the
    fold button, a partial that is no fixture) are left out."""
    def insert(match: re.Match[str]) -> str:
        if partial is None or match.group(1) != "psionic-core-discipline.html":
            return ""
        args = match.group(2).split(",")
        return re.sub(r"#REPLACE(\d+)#",
                      lambda m: args[int(m.group(1))] if int(m.group(1)) < len(args) else "",
                      partial)
    return re.sub(r"insert_([\w.-]+?)(?:_\(([^)]*)\))?(?=\s)", insert, tab)


def attribute_names(html: str) -> set[str]:
    """Every attribute a page of the sheet stores: ``attr_<name>`` outside repeating
    sections, ``<section>_<row id>_<name>`` inside one."""
    names = set()
    for section, body in re.findall(r'<fieldset name="(repeating_[^"]+)"[^>]*>(.*?)</fieldset>',
                                    html, re.DOTALL):
        names |= {f"{section}_{ROW}_{name}" for name in re.findall(r'name="attr_([^"]+)"', body)}
    outside = re.sub(r"<fieldset.*?</fieldset>", "", html, flags=re.DOTALL)
    return names | set(re.findall(r'name="attr_([^"]+)"', outside))


def sheet_names() -> set[str]:
    """The attribute names the list sorts (and the ``psi_*`` attributes of every system,
    which the Mod script sends all of: they are Mindscape's own)."""
    names = {*OTHER_PAGES, *EARLIER_NAMES}
    for tab, partial in TABS:
        text = (FIXTURES / "roll20" / tab).read_text(encoding="utf-8")
        part = (FIXTURES / "roll20" / partial).read_text(encoding="utf-8") if partial else None
        names |= attribute_names(expand(text, part))
    return names | {state_attribute(field)[0] for fields in FIELDS.values() for field in fields}


def sorted_names(names: set[str]) -> list[str]:
    return sorted(names, key=lambda name: (name.lower(), name))


def read_by_the_adapter(name: str) -> bool:
    """Whether the adapter reads attribute ``name`` in any of the three systems."""
    return any(SHEET.attributes_read({}, system)(name.lower()) for system in FIELDS)


def the_list() -> dict[str, Any]:
    data: dict[str, Any] = load(LIST)
    return data


def test_the_list_sorts_the_sheets_attributes_as_the_adapter_reads_them() -> None:
    """Every name of the sheet files (and of OTHER_PAGES) is in the list, on the side the
    adapter puts it; a change to what the adapter reads changes the list (print
    ``expected`` and paste it in), and then the Mod script's test."""
    names = sheet_names()
    expected = {"read": sorted_names({n for n in names if read_by_the_adapter(n)}),
                "not_read": sorted_names({n for n in names if not read_by_the_adapter(n)})}
    got = the_list()
    assert {"read": got["read"], "not_read": got["not_read"]} == expected, \
        json.dumps(expected, indent=2)


def test_every_kind_of_attribute_the_adapter_reads_is_in_the_list() -> None:
    """The list covers the adapter's own tables: each name it reads by name, each
    pattern it reads by (class levels, classes, each section's rows, an attack row's own
    MThAC0 and adjustment), the psi_* state of every system."""
    read = {name.lower() for name in the_list()["read"]}
    assert read >= _SHEET_ATTRIBUTES, _SHEET_ATTRIBUTES - read
    for pattern in (_LEVEL, _CLASS, _ROW_MTHAC0, *(rows for _, rows, _ in _SECTIONS)):
        assert any(pattern.fullmatch(name) for name in read), pattern.pattern
    assert {state_attribute(field)[0] for fields in FIELDS.values() for field in fields} <= read


def test_the_big_boxes_of_the_psionics_tabs_are_not_sent() -> None:
    """The Psionics Core tab's power rows' macro boxes (both revisions: ``#REPLACE5#``
    and the earlier ``#REPLACE5#-macro``), its Psionics Storage and notes, the Psionics
    Revised tab's, the psionic proficiency rows and the worker's ``<Score>-psi`` sums
    are none of the adapter's: they are on the list's unread side."""
    not_read = set(the_list()["not_read"])
    for name in (f"repeating_psion-attack5_{ROW}_psionattacking-macro",
                 f"repeating_psion-defense5_{ROW}_psiondefending-macro",
                 f"repeating_psion-telepathy_{ROW}_psiontelepathic-macro",
                 f"repeating_psion-attack5_{ROW}_powerscore-nomod10",
                 "psionmem", "psionmem2", "abilitiesnotes2", "abilitiesnotes3",
                 f"repeating_psiprofs_{ROW}_psiprofname",
                 f"repeating_psionic-attacks_{ROW}_psionic-macro",
                 "Intelligence-psi", "psp-progress", "race"):
        assert name in not_read, name
