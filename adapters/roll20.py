"""Roll20 characters: ``{id, name, controlledby, attribs: [{name, current, max}]}`` as the
Mod script sends them, and the VTT Enhancement Suite exports (schema_version 1, flat;
schema_version 3, ``{type: "character", character: {...}}``).

Attribute names are matched case-insensitively, as Roll20's own tools do. Psionic state
the sheet has no field for lives in ``psi_*`` attributes (see ``state_attribute``).
"""

from __future__ import annotations

import json
import re
from abc import abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from engine.errors import InvalidInput, json_text, pointer
from engine.revised_2e.house import WT_MTHAC0
from engine.revised_2e.rules import mthac0_for
from engine.system import slug

from .base import Adapter, Imported, Normalise
from .core import (
    ALIASES,
    ATTACKS,
    DEFENSES,
    FIELDS,
    SHEET_ONLY,
    Binding,
    Draft,
    check_states,
    check_system,
    class_group,
    class_groups,
    decode,
    diff_fields,
    finish,
    hit_dice_count,
    mode_id,
    modes,
    need_list,
    need_object,
    plain_json,
    pool_die,
    read_state,
    score,
    settle,
    shipped_tables,
    to_bool,
    to_int,
    to_text,
    warn_class_group,
)
from .intelligence import text_intelligence
from .mapping import parse_mapping, read_mapped

_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
# What a number box of the sheet holds when it holds a number (whole or not, in range or
# not, is ``to_int``'s to say); any other text is a roll expression, which the sheet
# accepts there: it rolls the box inside [[...]] ("21-@{level-class1}", "[[21-4]]").
_NUMBER_TEXT = re.compile(r"\s*[+-]?\d+(?:\.\d*)?\s*")
_LEVEL = re.compile(r"level-class(\d{1,2})")
_CLASS = re.compile(r"class\d{1,2}")
#: what is read of a character besides its attributes (``unwrap``)
_CHARACTER_KEYS: Final = ("schema_version", "type", "id", "_id", "oldId", "name")
#: the parts of an attribute that are read and written
_ATTRIBUTE_KEYS: Final = ("name", "current", "max")


def _rows(section: str, columns: str) -> re.Pattern[str]:
    """The attributes of a repeating section's rows, ``<section>_<row id>_<column>`` in
    lower case, with the row id as group 1 (Roll20's row ids may hold '_' too)."""
    return re.compile(f"{re.escape(section)}_(.+)_(?:{columns})")


#: the sections of the AD&D 2E Revised sheet's psionic attack and defense rows (the
#: pattern of a row's name attribute in each) and the section's first row outside the
#: repeating rows, if it has one (``Adnd2eRevised._revised``). The "Psionics Revised" tab
#: (Skills & Powers, Dark Sun) has the first two. The "Psionics Core" tab (Complete
#: Psionics Handbook) lists its Attack Modes and Defense Modes as power rows of
#: ``repeating_psion-attack5`` and ``repeating_psion-defense5``: both revisions of the
#: sheet found give those names (tests/fixtures/README.md). Earlier versions of this
#: adapter read ``repeating_psion-psion-attack5`` and ``-defense5``, names got by pairing
#: the earlier partial with the current tab; no sheet revision found stores rows there,
#: but rows of that name are still read, as this adapter always did.
_SECTIONS: Final = (
    ("attacks", _rows("repeating_psionic-attacks", "psionic-attack-name"),
     "psionic-attack-name"),
    ("defenses", _rows("repeating_psionic-defenses", "psionic-defense-name"),
     "psionic-defense-name"),
    ("attacks", _rows("repeating_psion-attack5", "psionattacking"), None),
    ("defenses", _rows("repeating_psion-defense5", "psiondefending"), None),
    ("attacks", _rows("repeating_psion-psion-attack5", "psionattacking"), None),
    ("defenses", _rows("repeating_psion-psion-defense5", "psiondefending"), None),
)
#: the sheet's boxes of points kept beside HP and PSP (temporary hit points, temporary
#: and stored PSPs), which the engine has no place for: the field each stands beside
_EXTRA: Final = (("tempHP", "hp"), ("tempPSP", "psp"), ("storedPSP", "psp"))
#: The hit die of each 2e class group (Player's Handbook: warriors d10, priests d8, rogues
#: and psionicists d6, wizards d4); a monster's Hit Dice are d8.
_GROUP_DIE: Final = {"warrior": 10, "priest": 8, "rogue": 6, "psionicist": 6, "wizard": 4}
#: the radio button choosing the sheet's page (2ESheet-base.html: 1 Character Sheet,
#: 2 Monster Sheet, 3 DM Screen, 4 Sheet Settings): it records the page last clicked
_PAGE: Final = "tab11"
_MONSTER_PAGE: Final = "2"
#: the Monster Sheet's "Hit Dice" box
_HIT_DICE: Final = "hitdice"
#: the Monster Sheet's "Intelligence" box (text: "8-10 (Average)", "Genius")
_MONSTER_INT: Final = "monsterintelligence"
#: the ability scores read, each with the Psionics Core tab's "Temporary Psionic Ability
#: Score modifier" box, which a sheet worker adds to the score into ``<Score>-psi``
#: (sheetWorkers.js: setupStaticCalculateTotal('intelligence-psi', ['intelligence',
#: 'psion-int-mod']))
_SCORES: Final = (("int", "Intelligence", "psion-int-mod"),
                  ("wis", "Wisdom", "psion-wis-mod"),
                  ("con", "Constitution", "psion-con-mod"))
#: the Psionics Revised tab's attack rows: a row's name, and its own MThAC0 and
#: adjustment (the first, unrepeated row's are the sheet's ``MThAC0`` and ``mthac0adj``,
#: read as the MTHAC0)
_ROW_NAME: Final = _SECTIONS[0][1]
_ROW_MTHAC0: Final = _rows("repeating_psionic-attacks", "mthac0|mthac0adj")
_ROWS: Final = "repeating_psionic-attacks_"

# Fields kept as the current and maximum of one attribute, as Roll20 sheets pair them.
_PAIRS: Final[dict[str, tuple[str, str]]] = {
    "psp": ("psi_psp", "current"), "psp_max": ("psi_psp", "max"),
    "attack_strength": ("psi_attack_strength", "current"),
    "attack_strength_max": ("psi_attack_strength", "max"),
    "defense_strength": ("psi_defense_strength", "current"),
    "defense_strength_max": ("psi_defense_strength", "max"),
    "pool": ("psi_pool", "current"), "hit_dice": ("psi_pool", "max"),
}


def state_attribute(name: str) -> tuple[str, str]:
    """The default Roll20 attribute (and part) holding combatant field ``name``:
    ``psi_<field>``, with current/maximum pairs sharing one attribute
    (``psi_pool`` = pool / hit_dice)."""
    return _PAIRS.get(name, (f"psi_{name}", "current"))


@dataclass(frozen=True)
class Character:
    """A Roll20 character out of its envelope, with its attributes indexed by lower-case
    name (the first of duplicate names wins, as ``getAttrByName`` finds one)."""

    id: str
    name: str
    path: str
    attrs: dict[str, tuple[str, Mapping[str, Any]]]
    envelope: Mapping[str, Any]

    def get(self, name: str, part: str = "current") -> tuple[Any, str] | None:
        """The ``part`` of attribute ``name`` and its JSON Pointer, or None if absent."""
        found = self.attrs.get(name.lower())
        if found is None:
            return None
        path, attr = found
        return attr.get(part), pointer(path, part)

    def spelled(self, name: str) -> str:
        """``name`` as the character spells it (Roll20 sets the existing attribute)."""
        found = self.attrs.get(name.lower())
        if found is None:
            return name
        text = found[1].get("name")
        return text if isinstance(text, str) else name


def unwrap(data: Any, warnings: list[str]) -> Character:
    """The character in ``data``, in any of the accepted envelopes."""
    top = need_object(data, "")
    raw, path = top, ""
    if _in_mapping_envelope(top):
        raw, path = need_object(top["character"], "/character"), "/character"
    version = raw.get("schema_version")
    if version is not None and (isinstance(version, bool) or version not in (1, 2, 3)):
        raise InvalidInput.at(pointer(path, "schema_version"), "VTT Enhancement Suite "
                              f"exports of schema_version 1-3 are read, not {json_text(version)}")
    if raw.get("type") == "character" and "character" in raw:
        path = pointer(path, "character")
        raw = need_object(raw["character"], path)
    ident: Any = None
    for key in ("id", "_id", "oldId"):
        if raw.get(key) is not None:
            ident = raw[key]
            if not isinstance(ident, str) or not _ID.fullmatch(ident):
                raise InvalidInput.at(pointer(path, key), "a character id is 1-64 letters, "
                                      f"digits, '-' or '_', got {json_text(ident, 40)}")
            break
    name = to_text(raw.get("name"), pointer(path, "name"), limit=200) or ""
    name = name.strip()
    if ident is None:
        ident = slug(name) or "character"
        warnings.append(f"the character has no id (id, _id or oldId); using {json_text(ident)}, "
                        "which Roll20 will not find for write-back")
    if not name:
        name = ident
        warnings.append(f"the character has no name; using its id {ident}")
    attribs_path = pointer(path, "attribs")
    attribs = raw.get("attribs")
    attrs: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for i, attr in enumerate([] if attribs is None else need_list(attribs, attribs_path)):
        attr_path = pointer(attribs_path, i)
        attr = need_object(attr, attr_path)
        attr_name = to_text(attr.get("name"), pointer(attr_path, "name"), limit=300)
        if not attr_name:
            raise InvalidInput.at(pointer(attr_path, "name"), "an attribute needs a name")
        for part in ("current", "max"):
            value = attr.get(part)
            if value is not None and (isinstance(value, list | Mapping)):
                raise InvalidInput.at(pointer(attr_path, part), "expected text or a number")
        attrs.setdefault(attr_name.lower(), (attr_path, attr))
    return Character(ident, name, path, attrs, top)


def _in_mapping_envelope(top: Mapping[str, Any]) -> bool:
    return "mapping" in top and "character" in top


def _attribute_key(attr: Any) -> str | None:
    """The lower-case name ``unwrap`` files an attribute under, if it has one."""
    name = attr.get("name") if isinstance(attr, Mapping) else None
    if isinstance(name, bool) or not isinstance(name, str | int | float):
        return None
    return str(name).lower()


def _trimmed_character(raw: Any, read: Callable[[str], bool], *, inner: bool) -> Any:
    """``raw`` (a character, or an export holding one) with only what ``unwrap`` reads:
    its id, name and format keys, and the first attribute of each name that ``read``
    accepts, with only its name, current and max."""
    if not isinstance(raw, Mapping):
        return raw
    out = {key: raw[key] for key in _CHARACTER_KEYS if key in raw}
    if not inner and raw.get("type") == "character" and "character" in raw:
        out["character"] = _trimmed_character(raw["character"], read, inner=True)
    attribs = raw.get("attribs")
    if isinstance(attribs, list):
        kept: dict[str, dict[str, Any]] = {}
        for attr in attribs:
            key = _attribute_key(attr)
            if key is not None and key not in kept and read(key):
                kept[key] = {part: attr[part] for part in _ATTRIBUTE_KEYS if part in attr}
        out["attribs"] = list(kept.values())
    elif "attribs" in raw:
        out["attribs"] = attribs
    return out


def apply_attributes(data: Any, attributes: Mapping[str, Mapping[str, Any]]) -> Any:
    """``data`` (in any accepted envelope) as the Mod script leaves the character after
    setting ``attributes`` (``{name: {current?, max?}}``): the first attribute of that
    name (case-insensitive) set, a missing one created. ``data`` is not changed."""
    top = need_object(data, "")
    outer = dict(top)
    holder = outer
    if _in_mapping_envelope(top):
        holder = outer["character"] = dict(need_object(top["character"], "/character"))
    if holder.get("type") == "character" and "character" in holder:
        holder["character"] = dict(need_object(holder["character"], "/character"))
        holder = holder["character"]
    rows = list(need_list(holder.get("attribs") or [], "/attribs"))
    index: dict[str, int] = {}
    for i, row in enumerate(rows):
        name = row.get("name") if isinstance(row, Mapping) else None
        if isinstance(name, str):
            index.setdefault(name.lower(), i)
    for name, parts in attributes.items():
        at = index.get(name.lower())
        if at is None:
            at = index[name.lower()] = len(rows)
            rows.append({"name": name, "current": "", "max": ""})
        rows[at] = {**rows[at], **parts}
    holder["attribs"] = rows
    return outer


def encode(system: str, name: str, value: Any) -> Any:
    """A combatant value as a Roll20 attribute holds it: numbers stay numbers, lists of
    names become comma-separated text, objects and arrays JSON text, booleans 1/0."""
    kind = FIELDS[system][name].kind
    if value is None:
        return ""
    if kind == "bool":
        return "1" if value else "0"
    if kind in ("modes", "strings"):
        return ", ".join(str(v) for v in value)
    if kind in ("object", "array", "ints"):
        return json.dumps(value, separators=(",", ":"))
    return value


class Roll20Adapter(Adapter):
    """Shared envelope, ``psi_*`` state and write-back logic of the Roll20 adapters."""

    vtt = "roll20"

    @abstractmethod
    def sheet(self, char: Character, draft: Draft) -> bool:
        """Read the sheet's own attributes into ``draft``; true for a monster."""

    def finished(self, char: Character, draft: Draft) -> None:
        """Add what can be said only of the finished draft (the state store read, the
        defaults set): warnings only, never a field. This base says nothing."""

    def attributes_read(self, envelope: Mapping[str, Any], system: str
                        ) -> Callable[[str], bool]:
        """Whether ``read`` may look at an attribute, by its lower-case name: this base
        reads the psionic state's ``psi_*`` attributes (``state_attribute``)."""
        names = {state_attribute(name)[0].lower() for name in FIELDS[system]}
        return names.__contains__

    def trimmed(self, data: Any, system: str) -> Any:
        """The character with only its id, name, format keys and the attributes
        ``attributes_read`` names (the first of each name, as ``unwrap`` reads it; each
        with only name, current and max), and the mapping of a mapping's envelope. A
        sheet holds hundreds of attributes the adapter never reads."""
        if not isinstance(data, Mapping) or system not in FIELDS:
            return data
        try:
            read = self.attributes_read(data, system)
        except InvalidInput:
            return data
        if _in_mapping_envelope(data):
            return {"mapping": data["mapping"],
                    "character": _trimmed_character(data["character"], read, inner=False)}
        return _trimmed_character(data, read, inner=False)

    def written_to(self, data: Any, system: str) -> Any:
        """The character written to and the mapping of a mapping's envelope."""
        char = unwrap(data, [])
        mapping = char.envelope["mapping"] if _in_mapping_envelope(char.envelope) else None
        return {"character_id": char.id, "mapping": mapping}

    def read(self, data: Any, system: str) -> tuple[Character, Draft]:
        """The character and the assembled draft (shared by import and updates)."""
        draft = Draft(check_system(system, self.id))
        draft.store = lambda name: state_attribute(name)[0]
        char = unwrap(data, draft.warnings)
        npc = self.sheet(char, draft)

        def lookup(name: str) -> tuple[Any, str, Binding] | None:
            attr, part = state_attribute(name)
            found = char.get(attr, part)
            if found is None or found[0] is None or found[0] == "":
                return None
            if name in SHEET_ONLY:
                binding = draft.bindings.get(name)
                where = (f"from {binding.target}" if binding and binding.target
                         else "from the sheet's own attributes only")
                draft.warn(f"{char.spelled(attr)} is ignored: {name} is read {where}")
                return None
            return found[0], found[1], Binding(attr, part)

        read_state(draft, lookup)
        finish(draft, npc)
        self.finished(char, draft)
        return char, draft

    def import_(self, data: Any, system: str) -> Imported:
        """The combatant for ``system`` from a Roll20 character (or an export)."""
        char, draft = self.read(data, system)
        sources = {}
        for name, binding in draft.bindings.items():
            found = char.get(binding.target, binding.part) if binding.target else None
            if found is not None:
                sources[name] = found[1]
        sources.update(draft.origins)
        return draft.imported(char.id, char.name, sources)

    def updates(self, data: Any, system: str, before: Mapping[str, Any],
                after: Mapping[str, Any], *, normalise: Normalise | None = None,
                ) -> list[dict[str, Any]]:
        """``[{"character_id", "attributes": {name: {"current"?, "max"?}}}]`` for the
        fields that changed; ``max`` only when the maximum is written."""
        before, after = check_states(before, after)
        char, draft = self.read(data, system)
        attributes: dict[str, dict[str, Any]] = {}
        check = Draft(draft.system)

        def write(name: str, value: Any) -> bool:
            value = plain_json(decode(draft.system, name, value, f"/after/{name}", check),
                               f"/after/{name}")
            binding = draft.bindings.get(name)
            if binding is None:
                if name in SHEET_ONLY:
                    return False
                binding = Binding(*state_attribute(name))
            if not binding.writable:
                return False
            parts = attributes.setdefault(char.spelled(binding.target), {})
            text = encode(draft.system, name, value)
            if binding.part in parts and parts[binding.part] == text:
                return False
            parts[binding.part] = text
            return True

        for name, value in diff_fields(draft.system, before, after):
            write(name, value)
        if normalise is not None:
            def reimport() -> Mapping[str, Any]:
                _, again = self.read(apply_attributes(data, attributes), draft.system)
                return normalise(again.imported(char.id, char.name).combatant)

            settle(draft.system, after, write, reimport, draft.unread())
        return [{"character_id": char.id, "attributes": attributes}] if attributes else []


def _box(found: tuple[Any, str] | None) -> int | str | None:
    """What a number box the sheet rolls inside [[...]] (``MThAC0``, ``mthac0adj``)
    holds: its whole number (``InvalidInput`` for a number that is not whole or not
    within -100..100, as any number the adapter reads), its text when that is no number
    (a roll expression: the sheet rolls anything there), None when absent or empty."""
    if found is None:
        return None
    value, path = found
    if isinstance(value, str) and value.strip() and not _NUMBER_TEXT.fullmatch(value):
        return value
    return to_int(value, path, -100, 100)


def _number(char: Character, draft: Draft, field: str, attr: str, part: str = "current",
            writable: bool = False) -> int | None:
    found = char.get(attr, part)
    if found is None or field not in FIELDS[draft.system]:
        return None
    value = decode(draft.system, field, found[0], found[1], draft)
    if isinstance(value, int):
        draft.put(field, value, Binding(attr, part, writable))
        return value
    if writable:
        # an empty box of the sheet (PSP with no maximum): a value assumed for the
        # field goes back there
        draft.bind(field, Binding(attr, part, writable))
    return None


def _full(char: Character, draft: Draft, field: str, attr: str) -> None:
    """A current box left empty whose maximum (``<attr>`` max, or a separate
    ``<attr>_max``) is filled in is taken as full, with a warning; it stays bound to the
    current box, so the write-back fills that in."""
    if field not in FIELDS[draft.system] or field in draft.fields:
        return
    for name, part in ((attr, "max"), (f"{attr}_max", "current")):
        found = char.get(name, part)
        if found is not None and found[0] is not None and found[0] != "":
            value = decode(draft.system, field, found[0], found[1], draft)
            if isinstance(value, int):
                draft.put(field, value, Binding(attr, "current", True))
                draft.warn(f"{char.spelled(attr)} current is empty; taken as its maximum "
                           f"{value}")
            return


#: the AD&D 2E Revised sheet's attributes ``Adnd2eRevised.sheet`` reads by name,
#: lower-case (``_full`` reads ``HP_max`` and ``PSP_max`` too); its class levels and
#: the attributes of its rows (``_SECTIONS``) are matched by pattern
_SHEET_ATTRIBUTES: Final = frozenset({
    "hp", "hp_max", "psp", "psp_max", "mthac0", "mthac0adj", "temp-selfmac", "selfmac",
    "psi_die", _HIT_DICE, _PAGE, _MONSTER_INT,
    *(name.lower() for _, score_name, modifier in _SCORES for name in (score_name, modifier)),
    *(name.lower() for name, _ in _EXTRA),
    *(single for *_, single in _SECTIONS if single is not None)})


class Adnd2eRevised(Roll20Adapter):
    """The Roll20 "AD&D 2E Revised" sheet (Skills & Powers / Dark Sun psionics tab)."""

    id = "roll20.adnd2e-revised"
    # Serves all three systems (the sheet's own fields feed revised-2e; the others read
    # psi_* attributes); adapters.import assumes revised-2e when no system is named.
    system = None
    #: the sheet is AD&D 2nd edition's, whose psionics revised-2e plays
    default_system = "revised-2e"
    description = ("Roll20 AD&D 2E Revised sheet: PSP, MThAC0, selfMAC, Intelligence, "
                   "Wisdom, Constitution (and the Psionics Core tab's temporary psionic "
                   "modifiers), HP, level-class1.. and class1.. (the Monster Sheet: "
                   "hitdice, monsterintelligence), psionic attack and defense rows of "
                   "both psionics tabs; other state in psi_* attributes (any of the "
                   "three systems)")

    def attributes_read(self, envelope: Mapping[str, Any], system: str
                        ) -> Callable[[str], bool]:
        """The ``psi_*`` attributes, the sheet's own (``_SHEET_ATTRIBUTES``), its classes
        and class levels and its psionic attack and defense rows (with the attack rows'
        own MThAC0 and adjustment). The Mod script sends these and no others
        (vtt-module/roll20/Mindscape.js ``ADND2E_READ``)."""
        state = super().attributes_read(envelope, system)

        def read(key: str) -> bool:
            return (key in _SHEET_ATTRIBUTES or state(key) or _LEVEL.fullmatch(key) is not None
                    or _CLASS.fullmatch(key) is not None
                    or any(rows.fullmatch(key) for _, rows, _ in _SECTIONS)
                    or _ROW_MTHAC0.fullmatch(key) is not None)

        return read

    def sheet(self, char: Character, draft: Draft) -> bool:
        """Read the sheet's attributes (documented in docs/ADAPTERS.md)."""
        level, monster, level_key = self._level(char, draft)
        for field, attr_name, modifier in _SCORES:
            if field not in FIELDS[draft.system]:
                continue
            mod = _modifier(char, draft, modifier)
            if field == "int" and monster:
                # The Monster Sheet's "Intelligence" box: text from the sheet's list
                # ("8-10 (Average)") or the stat block's words.
                given = char.get(_MONSTER_INT)
                if given is not None and text_intelligence(draft, given[0], given[1],
                                                           char.spelled(_MONSTER_INT)):
                    if mod:
                        draft.warn(f"{char.spelled(modifier)} {mod:+d} is not applied: int "
                                   f"is read from {char.spelled(_MONSTER_INT)}, not "
                                   f"{char.spelled(attr_name)}")
                    continue
            found = char.get(attr_name)
            value, path = found if found is not None else (None, char.path)
            if mod:
                value = _modified(char, draft, field, attr_name, modifier, mod, value, path)
            score(draft, field, value, path, default=10, where=attr_name)
        draft.put("level", level, Binding("", writable=False))
        if level_key is not None and not monster and draft.system == "revised-2e":
            # The class named beside the level taken (class1 for level-class1).
            text = _class_name(char, level_key)
            draft.put("class_group", class_group(text or ""), Binding("", writable=False))
        draft.put("hit_dice", level, Binding("", writable=False))
        if _number(char, draft, "hp", "HP", writable=True) is None:
            _full(char, draft, "hp", "HP")
        psp = _number(char, draft, "psp", "PSP", writable=True)
        if _number(char, draft, "psp_max", "PSP", "max", writable=True) is None \
                and char.get("PSP_max") is not None:
            _number(char, draft, "psp_max", "PSP_max", writable=True)
        if psp is None:
            _full(char, draft, "psp", "PSP")
        for extra, field in _EXTRA:
            found = char.get(extra)
            try:
                points = to_int(found[0], found[1]) if found else None
            except InvalidInput:
                points = None  # a box this adapter does not read is not a reason to refuse
            if points and field in draft.fields:
                # Said, not guessed at: whether they are lost or spent first is the GM's call.
                box = "HP" if field == "hp" else "PSP"
                draft.warn(f"{char.spelled(extra)} holds {points}: not counted (only {box} is "
                           f"read and written back); add them to {box} to count them")
        if draft.system == "revised-2e":
            self._revised(char, draft)
        elif draft.system == "power-pool":
            die = char.get("psi_die")
            if die is None or die[0] is None or die[0] == "":
                group = None if monster or level_key is None else \
                    _pool_group(draft, level)
                sides = _GROUP_DIE.get(group or "", 8)
                how = (f"d{sides}, the hit die of a {group}" if group in _GROUP_DIE
                       else "d8, a monster's hit die" if monster else "d8")
                draft.put("die", sides)
                draft.warn(f"{'no psi_die attribute' if die is None else 'psi_die is empty'}"
                           f"; the pool's die taken as {how}")
        return monster

    @staticmethod
    def _level(char: Character, draft: Draft) -> tuple[int, bool, str | None]:
        """The level (or Hit Dice), whether the sheet is a monster's and the
        ``level-classN`` the level was taken from.

        A sheet whose Monster Sheet has Hit Dice (``hitdice``) and no class level is a
        monster's, of those Hit Dice; one with class levels and no Hit Dice a
        character's. The page radio ``tab11`` only records the page last clicked, so it
        decides only what the sheet leaves open: a sheet holding both is a monster's when
        the Monster Sheet page is shown (``tab11`` 2), else a character's; one holding
        neither is a monster of 1 Hit Die when that page is shown, else a 1st-level
        character. A character's level is that of the class named a psionicist's
        (``classN`` holding "psion...": the sheet's MThAC0 help asks for "your relevant
        class level"), else its highest ``level-classN``."""
        levels: list[tuple[int, str]] = []
        for key, (path, attr) in char.attrs.items():  # one pass over the attributes
            if _LEVEL.fullmatch(key):
                level = to_int(attr.get("current"), pointer(path, "current"), 0, 100)
                if level:
                    levels.append((level, key))
        page = char.get(_PAGE)
        shown = page is not None and str(page[0]).strip() == _MONSTER_PAGE
        found = char.get(_HIT_DICE)
        hit_dice = hit_dice_count(found[0], found[1], draft.warn_level) if found else None
        listed = ", ".join(f"{key}={level}" for level, key in levels)
        if hit_dice and (shown or not levels):
            if levels:
                draft.warn(f"the Monster Sheet is shown ({char.spelled(_PAGE)} = 2): Hit Dice "
                           f"taken from {char.spelled(_HIT_DICE)}, {hit_dice}; class levels "
                           f"({listed}) ignored")
            return hit_dice, True, None
        if hit_dice:
            draft.warn(f"the sheet has both Hit Dice ({char.spelled(_HIT_DICE)} {hit_dice}) "
                       f"and class levels ({listed}), and the Monster Sheet page is not "
                       f"the one shown ({_PAGE}): read as a character, the Hit Dice "
                       "ignored")
        if not levels:
            if shown:
                draft.warn_level(f"no Hit Dice ({_HIT_DICE}) on the Monster Sheet; taken as 1")
                # The page shown is all that makes it a monster, and so gives revised-2e's
                # class group "monster": said apart from the level taken as 1, as the store
                # may set either without the other, each withdrawing its own warning.
                draft.warn_for("class_group", "read as a monster only because the Monster "
                               f"Sheet is the page shown ({char.spelled(_PAGE)} = 2): the "
                               "sheet has neither Hit Dice nor a class level; "
                               f"{draft.store('class_group')} sets its class group")
            else:
                draft.warn_level(f"no class level (level-class1..) nor Hit Dice "
                                 f"({_HIT_DICE}); taken as 1")
            return 1, shown, None
        if shown:
            # Said, as the page shown is the one hint of a monster the sheet gives.
            draft.warn(f"the Monster Sheet page is shown ({char.spelled(_PAGE)} = 2) but "
                       f"holds no Hit Dice ({_HIT_DICE}), and class levels are filled in "
                       f"({listed}): read as a character ({_PAGE} only records the page "
                       "last clicked)")
        # revised-2e counts the psionicist class's level; a power pool's Hit Dice are
        # the character's, the highest (as the ARS adapter takes them)
        psionic = [(level, key) for level, key in levels
                   if draft.system == "revised-2e"
                   and "psionicist" in class_groups(_class_name(char, key) or "")]
        # of classes at as many levels, the first on the sheet (class1 before class2)
        level, key = max(psionic or levels, key=lambda lk: (lk[0], -_class_number(lk[1])))
        tied = sum(1 for lv, _ in psionic or levels if lv == level) > 1
        # each class at its own level (a box may name several): the character saves with
        # the best of them
        draft.classes = tuple((_class_name(char, k) or k, lv) for lv, k in levels)
        draft.class_text = _class_text
        if len(levels) > 1:
            named = _class_name(char, key)
            used = (f"the psionicist class's ({json_text(named, 40)}, {key}), {level}"
                    if psionic else
                    f"the highest, {level}" + (
                        " (no class is named a psionicist's: Psion...)"
                        if draft.system == "revised-2e" else ""))
            draft.warn_level(f"several class levels ({listed}); level taken as {used}")
            # The class beside that level gives revised-2e's class group too (``sheet``):
            # said apart from the level, as the store may set either without the other,
            # each withdrawing its own warning.
            box = char.spelled(f"class{_class_number(key)}")
            warn_class_group(draft, f"several class levels ({listed})", named or "",
                             f"{json_text(named, 40)}, {box}", psionicist=bool(psionic),
                             tied=tied)
        return level, False, key

    def _revised(self, char: Character, draft: Draft) -> None:
        found = char.get("MThAC0")
        mthac0 = _box(found)
        adj_found = char.get("mthac0adj")
        adj = _box(adj_found)
        if isinstance(adj, str):
            # The sheet adds the box to its roll as it stands ("@{misc-mod}"); the engine
            # takes a number: ignored, and said.
            draft.warn(f"{char.spelled('mthac0adj')} holds {json_text(adj, 60)}, not a "
                       "whole number; the adjustment is ignored")
            adj = None
        if isinstance(mthac0, int):
            if adj:
                draft.warn(f"MThAC0 {mthac0} with adjustment {adj:+d} (added to the roll) "
                           f"taken as MTHAC0 {mthac0 - adj}")
                mthac0 -= adj
            draft.put("mthac0", mthac0, Binding("", writable=False))
        temp = char.get("temp-selfMAC")
        if temp is not None and temp[0] not in (None, ""):
            _number(char, draft, "mac", "temp-selfMAC")
            draft.warn("temporary MAC (temp-selfMAC) used instead of selfMAC")
        else:
            _number(char, draft, "mac", "selfMAC")
        rows: dict[str, list[tuple[str, str]]] = {"attacks": [], "defenses": []}
        for field, pattern, first in _SECTIONS:
            names = rows[field]
            single = char.get(first) if first is not None else None
            if single is not None:
                text = to_text(single[0], single[1], 200)
                if text:
                    names.append((text, single[1]))
            for key, (path, attr) in char.attrs.items():
                if pattern.fullmatch(key):
                    text = to_text(attr.get("current"), pointer(path, "current"), 200)
                    if text:
                        names.append((text, pointer(path, "current")))
        for field, names in rows.items():
            known = ATTACKS[draft.system] if field == "attacks" else DEFENSES[draft.system]
            found_modes = modes(draft.system, known, names, draft, field)
            if names:
                draft.put(field, found_modes, Binding("", writable=False))

    def finished(self, char: Character, draft: Draft) -> None:
        """Of a psionic mind in revised-2e, name the attack rows whose own MThAC0 is not
        the MTHAC0 it fights with (``_row_mthac0s``), and say where that MTHAC0 comes from
        when neither the sheet's MThAC0 box nor the state store (``psi_mthac0``) gave
        one: the box never set (the sheet shows and rolls its default 20, which Roll20
        does not store), left empty, or holding a roll expression; the engine derives it
        from the level."""
        kind, level = draft.fields.get("kind"), draft.fields.get("level")
        if draft.system != "revised-2e" or kind not in ("psionicist", "wild-talent"):
            return
        self._row_mthac0s(char, draft)
        if "mthac0" in draft.fields or not isinstance(level, int):
            return
        found = char.get("MThAC0")
        adj = _box(char.get("mthac0adj"))  # a number it cannot be was refused already
        held = None if found is None else found[0]
        if found is None:
            box = "MThAC0 was never set: the sheet shows and rolls its default 20"
        elif isinstance(held, str) and held.strip():
            box = (f"MThAC0 holds {json_text(held, 60)}, not a whole number (the sheet "
                   "rolls whatever its box holds)")
        else:
            box = "MThAC0 is empty"
        # The engine's own rule on its shipped tables, so the figure said is the one it
        # derives (a GM's replacement tables, which only the daemon knows, aside).
        tables = shipped_tables()
        base = int(tables.raw["mthac0"]["base"])
        derived = f"{base} - {level} = {mthac0_for(tables, 'psionicist', level, False)}"
        if kind == "wild-talent":
            derived = (f"{base} - ceil({level}/2) = {mthac0_for(tables, kind, level, True)}, "
                       f"or {derived} when {WT_MTHAC0} is off")
        draft.warn(f"{box}; MTHAC0 derived from the level instead ({kind}, COMBATANTS.md): "
                   f"{derived}"
                   + (f"; the adjustment {adj:+d} is not applied" if isinstance(adj, int)
                      and adj else ""))

    @staticmethod
    def _row_mthac0s(char: Character, draft: Draft) -> None:
        """Warn of each attack row whose own MThAC0 (less its adjustment) is not the
        MTHAC0 read (from MThAC0, or ``psi_mthac0``): the engine gives a combatant one
        MTHAC0 for every attack mode. Rows naming no attack mode, or whose MThAC0 box
        holds no whole number (a formula, blank, or the sheet's default 20, which Roll20
        does not store), are not compared."""
        known = ATTACKS[draft.system]
        mthac0 = draft.fields.get("mthac0")
        binding = draft.bindings.get("mthac0")
        source = binding.target if binding is not None and binding.target else "MThAC0"
        for key, (path, attr) in char.attrs.items():
            named = _ROW_NAME.fullmatch(key)
            if named is None:
                continue
            row = named.group(1)
            name = to_text(attr.get("current"), pointer(path, "current"), 200) or ""
            ident = mode_id(name)
            if ALIASES[draft.system].get(ident, ident) not in known:
                continue
            values = []
            for suffix in ("_mthac0", "_mthac0adj"):
                found = char.get(f"{_ROWS}{row}{suffix}")
                try:
                    values.append(to_int(found[0], found[1], -100, 100) if found else None)
                except InvalidInput:
                    values.append(None)
            own, adj = values
            if own is None or own - (adj or 0) == mthac0:
                continue
            shown = f"{own} with adjustment {adj:+d}, MTHAC0 {own - adj}" if adj else str(own)
            used = (f"the one read from {source}, {mthac0}" if mthac0 is not None
                    else "one derived from the level")
            draft.warn(f"attack row {json_text(name.strip(), 40)} has its own MThAC0 {shown} "
                       f"({char.spelled(f'{_ROWS}{row}_mthac0')}): not used; every attack "
                       f"uses {used}")


def _pool_group(draft: Draft, level: int) -> str | None:
    """The class group whose hit die a character's power pool rolls: of the classes at
    the level taken (the highest), and of those a name writes ("Fighter/Psionicist"),
    the one of the largest die (``pool_die``: the pool is dice of one type), the first
    written of that die; ``None`` when none is of a known group."""
    groups = [(group, name) for name, at in draft.classes if at == level
              for group in dict.fromkeys(class_groups(name)) if group in _GROUP_DIE]
    several = {name for name, at in draft.classes if at == level
               and len(set(class_groups(name)) & set(_GROUP_DIE)) > 1}
    die = pool_die(draft, level, [
        (f"{_class_text(name)}{f' as a {group}' if name in several else ''}",
         _GROUP_DIE[group]) for group, name in groups])
    return next((group for group, _ in groups if _GROUP_DIE[group] == die), None)


def _class_number(level_key: str) -> int:
    """The number of a class level attribute (1 of ``level-class1``)."""
    return int(level_key.removeprefix("level-class"))


def _class_name(char: Character, level_key: str) -> str | None:
    """The class named beside a class level (``class1`` beside ``level-class1``)."""
    named = char.get(f"class{_class_number(level_key)}")
    return to_text(named[0], named[1], 200) if named else None


def _class_text(name: str) -> str:
    """A class as a warning names it: the text of its ``classN`` box quoted and cut
    short, as the other warnings quote what the sheet holds; the ``level-classN`` it
    stands beside, as it is, when that box is empty."""
    return name if _LEVEL.fullmatch(name) else json_text(name, 40)


def _modifier(char: Character, draft: Draft, name: str) -> int:
    """The Psionics Core tab's temporary psionic modifier box ``name`` (0 when absent or
    empty; text that is no whole number, which the sheet's worker counts as 0, is
    ignored with a warning)."""
    found = char.get(name)
    if found is None:
        return 0
    try:
        return to_int(found[0], found[1], -100, 100) or 0
    except InvalidInput:
        draft.warn(f"{char.spelled(name)} holds {json_text(found[0], 40)}, not a whole "
                   "number; ignored")
        return 0


def _modified(char: Character, draft: Draft, field: str, attr_name: str, modifier: str,
              mod: int, value: Any, path: str) -> Any:
    """The score ``value`` with the temporary psionic modifier ``mod`` added, as the
    sheet's worker sums them into ``<Score>-psi`` (the score the Psionics Core tab's
    powers roll against); with a warning. The sum is taken from the two boxes, not from
    ``<Score>-psi``, which the worker refreshes only when one of them changes. A score
    the sheet lacks is left to ``score``'s default, the modifier unapplied."""
    base = to_int(value, path, 0, 1000)
    if not base:
        draft.warn(f"{char.spelled(modifier)} {mod:+d} is not applied: no "
                   f"{char.spelled(attr_name)} score to add it to")
        return value
    total = max(base + mod, 1)
    draft.warn(f"{char.spelled(attr_name)} {base} with the Psionics Core tab's temporary "
               f"psionic modifier {char.spelled(modifier)} {mod:+d}: {field} {total}"
               + (" (at least 1, the lowest score)" if base + mod < 1 else ""))
    return total


class Roll20Generic(Roll20Adapter):
    """Any Roll20 sheet, through a mapping of combatant fields to attribute names."""

    id = "roll20.generic"
    system = None
    description = ("Any Roll20 sheet: {mapping, character} where mapping names the "
                   "attribute of each combatant field ('PSP|max' for a maximum)")

    def attributes_read(self, envelope: Mapping[str, Any], system: str
                        ) -> Callable[[str], bool]:
        """The ``psi_*`` attributes and the mapped ones (``InvalidInput`` for a mapping
        ``sheet`` would refuse)."""
        state = super().attributes_read(envelope, system)
        if "mapping" not in envelope:
            return state
        mapping = parse_mapping(envelope["mapping"], "/mapping")
        names = {source.path.partition("|")[0].lower()
                 for source in mapping.for_system(system).values()}
        if mapping.npc_attribute is not None:
            names.add(mapping.npc_attribute.lower())
        return lambda key: key in names or state(key)

    def sheet(self, char: Character, draft: Draft) -> bool:
        """Read each mapped attribute."""
        if "mapping" not in char.envelope:
            raise InvalidInput.at("/mapping", "roll20.generic needs {\"mapping\": {...}, "
                                  "\"character\": {...}}")
        mapping = parse_mapping(char.envelope["mapping"], "/mapping")
        draft.class_unread = mapping.class_unread(draft.system)
        for name, source in mapping.for_system(draft.system).items():
            attr, _, part = source.path.partition("|")
            part = part or "current"
            found = char.get(attr, part)
            value, path = (found if found is not None
                           else (None, pointer(char.path, "attribs")))
            read_mapped(draft, name, source, value, path, Binding(attr, part, source.write))
        npc = False
        if mapping.npc_attribute is not None:
            found = char.get(mapping.npc_attribute)
            if found is not None and mapping.npc_types:
                # the values named are the monsters' (the AD&D 2E Revised sheet's page
                # box tab11: "1" the Character Sheet, "2" the Monster Sheet), even one
                # that would read as true
                types = {t.strip().lower() for t in mapping.npc_types}
                npc = str(found[0]).strip().lower() in types
            elif found is not None:
                try:
                    npc = bool(to_bool(found[0], found[1]))
                except InvalidInput:
                    npc = False
        return npc


ADAPTERS: Final[tuple[Roll20Adapter, ...]] = (Adnd2eRevised(), Roll20Generic())
