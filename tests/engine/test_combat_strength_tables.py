"""combat-strength tables: every cell of research-tables.md A, B and C, as loaded data.

The expected values below are transcribed from /work/shared/research-tables.md by
hand (rows in the printed order); the engine reads only data/tables.json.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from engine.combat_strength import SYSTEM, CombatStrength
from engine.dice import RandomDice, SuppliedDice
from engine.errors import InvalidInput, RulesViolation

DEFENSES = ["mind-blank", "shield-thoughts", "mental-barrier", "intellect-fortress",
            "tower-of-iron-will"]
ATTACKS = ["psionic-wave", "mind-thrust", "ego-whip", "id-insinuation", "psychic-implosion"]
DASH = None  # the printed "—", stored as null (no effect)

# research-tables.md A: Band | Psionic Blast, Mind Thrust, Ego Whip, Id Insinuation,
# Psychic Crush (%) against Mind Blank | Thought Shield | Mental Barrier |
# Intellect Fortress | Tower of Iron Will
TABLE_A: dict[str, list[list[int | None]]] = {
    "01-25": [[3, 7, 4, 1, 0], [12, 4, 0, 0, 1], [8, 3, 0, 0, 0], [1, 6, 8, 1, 1],
              [2, DASH, DASH, DASH, DASH]],
    "26-50": [[6, 9, 6, 2, 0], [15, 6, 1, 0, 2], [12, 4, 0, 0, 0], [2, 8, 10, 3, 3],
              [5, 2, 1, DASH, DASH]],
    "51-75": [[10, 12, 9, 4, 1], [18, 9, 2, 2, 3], [17, 6, 1, 1, 1], [4, 11, 13, 7, 6],
              [9, 4, 2, 1, DASH]],
    "76-100": [[15, 16, 13, 7, 2], [22, 13, 5, 4, 5], [23, 9, 3, 2, 3], [7, 15, 17, 12, 10],
               [14, 7, 5, 3, 2]],
    "101-125": [[21, 21, 18, 11, 4], [26, 18, 9, 7, 8], [30, 13, 6, 4, 6],
                [11, 20, 22, 18, 15], [20, 11, 9, 6, 4]],
    "126+": [[28, 27, 24, 16, 7], [30, 24, 16, 11, 12], [38, 18, 10, 7, 10],
             [16, 26, 28, 25, 21], [27, 16, 14, 10, 7]],
}

# research-tables.md B: attacker band x PB, MT, EW, II, PsC % against the defender's
# original ability <=59 | 60-109 | 110-159 | 160-209 | 210-259 | 260-309 | 310+
TABLE_B: dict[str, list[list[int | str]]] = {
    "01-25": [["D", "C", "C", 15, 10, 5, 5], ["W", "W", 40, 35, 30, 25, 20],
              [30, 25, 20, 15, 10, 5, 5], [40, 35, 30, 25, 20, 15, 10],
              [72, 60, 50, 40, 30, 20, 10]],
    "26-50": [["S", "D", "C", "C", 15, 10, 5], ["W", "W", "W", 40, 35, 30, 25],
              [35, 30, 25, 20, 15, 10, 5], ["R", 40, 35, 30, 25, 20, 15],
              [75, 62, 52, 42, 32, 22, 12]],
    "51-75": [["W", "S", "D", "C", "C", 15, 10], ["P", "W", "W", "W", 40, 35, 30],
              [40, 35, 30, 25, 20, 15, 10], ["R", "R", 40, 35, 30, 25, 20],
              [79, 65, 55, 45, 35, 25, 15]],
    "76-100": [["P", "W", "S", "D", "C", "C", 15], ["P", "P", "W", "W", "W", 40, 35],
               ["P", 40, 35, 30, 25, 20, 15], ["R", "R", "R", 40, 35, 30, 25],
               [84, 69, 59, 49, 39, 29, 19]],
    "101-125": [["K", "P", "W", "S", "D", "C", "C"], ["P", "P", "P", "W", "W", "W", 40],
                ["I", "P", 40, 35, 30, 25, 20], ["R", "R", "R", "R", 40, 35, 30],
                [90, 74, 64, 54, 44, 34, 24]],
    "126+": [["K", "K", "P", "W", "S", "D", "C"], ["P", "P", "P", "P", "W", "W", "W"],
             ["I", "I", "P", 40, 35, 30, 25], ["R", "R", "R", "R", "R", 40, 35],
             [97, 80, 70, 60, 50, 40, 30]],
}
B_COLUMNS = [("..59", 59), ("60-109", 109), ("110-159", 159), ("160-209", 209),
             ("210-259", 259), ("260-309", 309), ("310+", None)]

# research-tables.md B, letter codes (house default H-CS-DEFENSELESS)
LETTERS = {"K": ("dead", None), "I": ("idiocy", None), "P": ("permanent-insanity", None),
           "R": ("controlled", None), "W": ("psionic-wound", (1, 4, "weeks")),
           "S": ("asleep", (1, 4, "turns")), "D": ("dazed", (1, 4, "rounds")),
           "C": ("confused", (1, 4, "rounds"))}

# research-tables.md C: Int + Wis | Short | Medium | Long
TABLE_C_SAVE = [("..5", 5, 20, 19, 18), ("6-9", 9, 18, 17, 16), ("10-13", 13, 16, 15, 14),
                ("14-17", 17, 14, 13, 12), ("18-21", 21, 12, 11, 10), ("22-25", 25, 10, 9, 8),
                ("26-29", 29, 8, 7, 6), ("30-33", 33, 6, 5, 4), ("34-35", 35, 4, 3, 2),
                ("36-37", 37, 2, 1, 0), ("38+", None, 0, -1, -2)]
# research-tables.md C effects: (upper bound of the d100 range, effect)
TABLE_C_EFFECTS = {
    "..5": [(85, "dead"), (99, "coma"), (100, "asleep")],
    "6-9": [(10, "dead"), (90, "coma"), (99, "asleep"), (100, "stunned")],
    "10-13": [(1, "dead"), (15, "coma"), (90, "asleep"), (99, "stunned"), (100, "confused")],
    "14-17": [(1, "coma"), (10, "asleep"), (90, "stunned"), (99, "confused"), (100, "enraged")],
    "18-21": [(1, "asleep"), (15, "stunned"), (90, "confused"), (99, "enraged"),
              (100, "panicked")],
    "22-25": [(1, "stunned"), (15, "confused"), (90, "enraged"), (99, "panicked"),
              (100, "feebleminded")],
    "26-29": [(1, "confused"), (15, "enraged"), (90, "panicked"), (99, "feebleminded"),
              (100, "permanent-insanity")],
    "30-33": [(1, "enraged"), (15, "panicked"), (90, "feebleminded"),
              (99, "permanent-insanity"), (100, "temporary-insanity")],
    "34-35": [(1, "panicked"), (20, "feebleminded"), (85, "permanent-insanity"),
              (99, "temporary-insanity"), (100, "mild-insanity")],
    "36-37": [(1, "feebleminded"), (15, "permanent-insanity"), (90, "temporary-insanity"),
              (100, "mild-insanity")],
    "38+": [(1, "permanent-insanity"), (15, "temporary-insanity"), (100, "mild-insanity")],
}

DATA: dict[str, Any] = SYSTEM.tables.data


@pytest.mark.parametrize("band", list(TABLE_A))
def test_psionic_combat_matrix_table_a_every_band(band: str) -> None:
    """research-tables.md A: each band's 5x5 cells, the dash stored as null."""
    rows = DATA["combat"]["matrix"][band]
    for attack, expected in zip(ATTACKS, TABLE_A[band], strict=True):
        assert [rows[attack][d] for d in DEFENSES] == expected, (band, attack)


def test_band_boundaries_are_the_1e_bands() -> None:
    """research-tables.md A: bands 01-25, 26-50, 51-75, 76-100, 101-125, 126+."""
    t = SYSTEM.tables
    assert [(b["id"], b["max"]) for b in DATA["bands"]] == [
        ("01-25", 25), ("26-50", 50), ("51-75", 75), ("76-100", 100), ("101-125", 125),
        ("126+", None)]
    assert [t.band(v) for v in (1, 25, 26, 50, 51, 100, 101, 125, 126, 999)] == [
        "01-25", "01-25", "26-50", "26-50", "51-75", "76-100", "101-125", "101-125", "126+",
        "126+"]


def test_default_combat_table_is_band_01_25() -> None:
    """RULES.md 2.5: the default table is the 1e matrix, band 01-25."""
    assert DATA["combat"]["default_band"] == "01-25"
    assert DATA["combat"]["percent_modes"] == ["psychic-implosion"]


@pytest.mark.parametrize("band", list(TABLE_B))
def test_defenseless_table_b_every_cell(band: str) -> None:
    """research-tables.md B: numbers, letters and the PsC percentages per band."""
    rows = DATA["defenseless"]["matrix"][band]
    for attack, expected in zip(ATTACKS, TABLE_B[band], strict=True):
        assert rows[attack] == expected, (band, attack)


def test_defenseless_columns_and_letter_reading() -> None:
    """research-tables.md B: defender bands by original ability and the letter codes."""
    assert [(b["id"], b["max"]) for b in DATA["defenseless"]["defender_bands"]] == B_COLUMNS
    letters = DATA["defenseless"]["letters"]
    assert set(letters) == set(LETTERS)
    for key, (condition, duration) in LETTERS.items():
        assert letters[key]["condition"] == condition
        got = letters[key]["duration"]
        assert (None if got is None else (got["count"], got["sides"], got["unit"])) == duration
    # "the psychic-implosion row is a percentage chance of death"
    assert DATA["defenseless"]["percent_modes"] == {"psychic-implosion": "K"}


def test_wave_save_table_c_every_cell() -> None:
    """research-tables.md C: save target by Int + Wis and range."""
    bands = DATA["wave"]["int_wis_bands"]
    assert [(b["id"], b["max"]) for b in bands] == [(r[0], r[1]) for r in TABLE_C_SAVE]
    for band, _, short, medium, long in TABLE_C_SAVE:
        assert DATA["wave"]["save"][band] == {"short": short, "medium": medium, "long": long}


def test_wave_effect_table_c_every_row() -> None:
    """research-tables.md C: the d100 effect ranges of every Int + Wis band."""
    for band, expected in TABLE_C_EFFECTS.items():
        assert [(e["max"], e["condition"]) for e in DATA["wave"]["effects"][band]] == expected


def test_modes_and_costs_rules_2_2() -> None:
    """RULES.md 2.2: attack costs 20/4/7/10/14; defense modes cost nothing."""
    costs = {m["id"]: m["cost"] for m in DATA["modes"]["attacks"]}
    assert costs == {"psionic-wave": 20, "mind-thrust": 4, "ego-whip": 7,
                     "id-insinuation": 10, "psychic-implosion": 14}
    assert [(m["id"], m["cost"]) for m in DATA["modes"]["defenses"]] == [
        (d, 0) for d in DEFENSES]


def test_describe_gives_each_mode_its_1e_equivalent_rules_2_2() -> None:
    """RULES.md 2.2: each attack mode's 1e equivalent (psionic-wave is psionic blast,
    psychic-implosion psychic crush) and each defense's, as systems.describe tells them."""
    modes = SYSTEM.describe()["modes"]
    attacks = {m["id"]: (m["equivalent_1e"], m["cost"]) for m in modes["attacks"]}
    assert attacks == {"psionic-wave": ("psionic blast", 20), "mind-thrust": ("mind thrust", 4),
                       "ego-whip": ("ego whip", 7), "id-insinuation": ("id insinuation", 10),
                       "psychic-implosion": ("psychic crush", 14)}
    assert {m["id"]: m["equivalent_1e"] for m in modes["defenses"]}["shield-thoughts"] == \
        "thought shield"


def test_bonus_dice_figures_are_data() -> None:
    """Seed step iii: +1d6 per full 25, at most +5d6, -1d6 medium, -2d6 long."""
    assert DATA["bonus_dice"] == {"per": 25, "max": 5, "sides": 6,
                                  "range_penalty": {"short": 0, "medium": 1, "long": 2}}


def test_a_gm_replacement_table_changes_the_lookup() -> None:
    """RULES.md: a GM may load a replacement table file."""
    data = copy.deepcopy(DATA)
    data["combat"]["matrix"]["01-25"]["ego-whip"]["shield-thoughts"] = 9
    system = CombatStrength(data)
    assert system.tables.combat_value("01-25", "ego-whip", "shield-thoughts") == 9
    assert SYSTEM.tables.combat_value("01-25", "ego-whip", "shield-thoughts") == 3


def test_a_replacement_table_written_before_predicates_still_loads() -> None:
    """A GM's file from before conditions had a `predicate` loads, and its sentences
    read "is" and the condition's text."""
    data = copy.deepcopy(DATA)
    for condition in data["conditions"].values():
        del condition["predicate"]
    tables = CombatStrength(data).tables
    assert tables.condition_clause("Orm", "coma") == "Orm is in a coma"
    assert tables.condition_ended("Orm", "stunned") == "Orm is no longer stunned."


def test_only_death_is_marked_kills() -> None:
    """research-tables.md B and C: K is "killed" and table C's first effect "death"; no
    other letter or effect (idiocy, insanity, a coma, a psionic wound) leaves no mind."""
    assert [c for c in SYSTEM.tables.conditions if SYSTEM.tables.kills(c)] == ["dead"]
    assert SYSTEM.tables.letters["K"].condition == "dead"


def test_kills_is_read_from_a_replacement_table_not_from_a_condition_s_name() -> None:
    """A GM's file marks which condition kills (`kills`), whatever it calls it; one from
    before the flag loads, and without it nothing kills: its dead can be attacked as
    before."""
    data = copy.deepcopy(DATA)
    data["conditions"]["slain"] = {"text": "slain", "predicate": "lies slain",
                                   "incapacitates": True, "kills": True}
    del data["conditions"]["dead"]["kills"]
    system = CombatStrength(data)
    ann = {"id": "ann", "name": "Ann", "attack_strength": 50, "defense_strength": 50}
    quo = {"id": "quo", "name": "Quo", "attack_strength": 50, "defense_strength": 50}
    request = {"attacker": ann, "attack": {"mode": "mind-thrust"}}
    with pytest.raises(RulesViolation) as err:
        system.resolve({**request, "defender": {**quo, "conditions": ["slain"]}},
                       SuppliedDice({}))
    assert (err.value.rule, err.value.detail) == (
        "target-dead", "Quo lies slain: there is no mind left to attack (/defender)")
    res = system.resolve({**request, "defender": {**quo, "conditions": ["dead"]}},
                         RandomDice(1))
    assert res.fields["table"] == "defenseless"


@pytest.mark.parametrize("breakage,path", [
    (lambda d: d["combat"]["matrix"].pop("26-50"), "/tables/combat/matrix"),
    (lambda d: d["defenseless"]["matrix"]["01-25"]["ego-whip"].pop(),
     "/tables/defenseless/matrix/01-25/ego-whip"),
    (lambda d: d["defenseless"]["matrix"]["01-25"]["ego-whip"].__setitem__(0, "Z"),
     "/tables/defenseless/matrix/01-25/ego-whip/0"),
    (lambda d: d["wave"]["effects"]["..5"].pop(), "/tables/wave/effects/..5"),
    (lambda d: d["combat"]["matrix"]["01-25"]["ego-whip"].__setitem__("mind-blank", "x"),
     "/tables/combat/matrix/01-25/ego-whip/mind-blank"),
    (lambda d: d["bands"][2].__setitem__("max", 10), "/tables/bands/2/max"),
    (lambda d: d["defenseless"]["matrix"]["01-25"]["psychic-implosion"].__setitem__(0, 101),
     "/tables/defenseless/matrix/01-25/psychic-implosion/0"),
    (lambda d: d["combat"]["matrix"]["01-25"]["psychic-implosion"].__setitem__(
        "mind-blank", 101), "/tables/combat/matrix/01-25/psychic-implosion/mind-blank"),
    # RULES.md 2.2: defense modes cost nothing (research-tables.md D's 1e costs would be
    # shown by systems.describe and charged by no exchange)
    (lambda d: d["modes"]["defenses"][4].__setitem__("cost", 10),
     "/tables/modes/defenses/4/cost"),
    # the cross-checks a JSON Schema cannot express (rules.Tables._cross_check)
    (lambda d: d["bands"][1].__setitem__("id", "01-25"), "/tables/bands"),
    (lambda d: d["bands"][2].__setitem__("max", 50), "/tables/bands/2/max"),
    (lambda d: d["bands"][2].__setitem__("max", None), "/tables/bands/2/max"),
    (lambda d: d["modes"]["attacks"][1].__setitem__("id", "psionic-wave"),
     "/tables/modes/attacks"),
    (lambda d: d["combat"].__setitem__("default_band", "01-24"), "/tables/combat/default_band"),
    (lambda d: d["defenseless"]["percent_modes"].__setitem__("psychic-implosion", "Z"),
     "/tables/defenseless/percent_modes/psychic-implosion"),
    (lambda d: d["defenseless"]["letters"]["D"].__setitem__("condition", "bewildered"),
     "/tables/defenseless/letters/D/condition"),
    (lambda d: d["defenseless"]["letters"]["D"]["duration"].__setitem__("unit", "moons"),
     "/tables/defenseless/letters/D/duration/unit"),
    (lambda d: d["wave"]["save"].pop("38+"), "/tables/wave/save"),
    (lambda d: d["wave"]["effects"]["..5"][1].__setitem__("max", 85),
     "/tables/wave/effects/..5"),
    (lambda d: d["wave"]["effects"]["..5"][0].__setitem__("condition", "bewildered"),
     "/tables/wave/effects/..5/0/condition"),
    # every banded axis is checked, not only the attacker's: the defender's original
    # total (table B's columns) and Int + Wis (table C's rows), and every band has its
    # row in table B and its effects in table C
    (lambda d: d["defenseless"]["defender_bands"][2].__setitem__("max", 100),
     "/tables/defenseless/defender_bands/2/max"),
    (lambda d: d["wave"]["int_wis_bands"][3].__setitem__("max", 13),
     "/tables/wave/int_wis_bands/3/max"),
    (lambda d: d["defenseless"]["matrix"].pop("26-50"), "/tables/defenseless/matrix"),
    (lambda d: d["wave"]["effects"].pop("38+"), "/tables/wave/effects"),
    # a percent mode of table A is the file's own list, whatever table B's are
    (lambda d: (d["combat"]["percent_modes"].append("id-insinuation"),
                d["combat"]["matrix"]["01-25"]["id-insinuation"].__setitem__("mind-blank", 150)),
     "/tables/combat/matrix/01-25/id-insinuation/mind-blank"),
])
def test_a_broken_replacement_table_is_refused_with_its_path(breakage: Any, path: str) -> None:
    """Tables are checked at load: a bad file names where it is wrong."""
    data = copy.deepcopy(DATA)
    breakage(data)
    with pytest.raises(InvalidInput) as err:
        CombatStrength(data)
    assert path in [p.path for p in err.value.problems]


def test_a_wave_table_missing_a_band_names_the_bands_as_json() -> None:
    """STYLE.md: values in messages are JSON: the bands table C needs are a JSON array
    of strings (["..5", ...]), not Python's ['..5', ...]."""
    data = copy.deepcopy(DATA)
    data["wave"]["save"].pop("38+")
    with pytest.raises(InvalidInput) as err:
        CombatStrength(data)
    [problem] = [p for p in err.value.problems if p.path == "/tables/wave/save"]
    bands = sorted(b["id"] for b in DATA["wave"]["int_wis_bands"])
    assert problem.message == f"needs exactly the bands {json.dumps(bands)}"


@pytest.mark.parametrize("breakage,path,message", [
    (lambda d: d["defenseless"]["letters"]["W"]["duration"].__setitem__("count", 0),
     "/tables/defenseless/letters/W/duration/count", "0 is less than the minimum of 1"),
    (lambda d: d["defenseless"]["letters"]["W"]["duration"].pop("unit"),
     "/tables/defenseless/letters/W/duration", "'unit' is a required property"),
    (lambda d: d["defenseless"]["letters"]["W"].__setitem__("duration", "1d4 weeks"),
     "/tables/defenseless/letters/W/duration", "'1d4 weeks' is not of type 'object', 'null'"),
    (lambda d: d["defenseless"]["matrix"]["01-25"]["ego-whip"].__setitem__(0, -1),
     "/tables/defenseless/matrix/01-25/ego-whip/0", "-1 is less than the minimum of 0"),
    (lambda d: d["defenseless"]["matrix"]["01-25"]["ego-whip"].__setitem__(0, "KO"),
     "/tables/defenseless/matrix/01-25/ego-whip/0", "'KO' does not match '^[A-Z]$'"),
])
def test_a_broken_letter_duration_or_defenseless_cell_is_named_with_its_rule(
        breakage: Any, path: str, message: str) -> None:
    """Bad input gets an error naming the field and the rule: a letter's duration (null,
    or {count, sides, unit}) and a cell of table B (points, or a condition letter) that
    break the schema are named at the member that is wrong with the rule it breaks, not
    as the whole value being "not valid under any of the given schemas"."""
    data = copy.deepcopy(DATA)
    breakage(data)
    with pytest.raises(InvalidInput) as err:
        CombatStrength(data)
    assert [(p.path, p.message) for p in err.value.problems] == [(path, message)]


@pytest.mark.parametrize("table", ["combat", "defenseless"])
def test_a_psychic_implosion_percentage_above_100_is_refused_in_either_table(
        table: str) -> None:
    """research-tables.md A and B: Psychic Crush's cells are a percentage chance (d100),
    in the combat table (``combat.percent_modes``) as in the defenseless one
    (``defenseless.percent_modes``); a replacement file cannot give one above 100."""
    data = copy.deepcopy(DATA)
    row = data[table]["matrix"]["126+"]["psychic-implosion"]
    key = "tower-of-iron-will" if table == "combat" else 6
    row[key] = 150
    with pytest.raises(InvalidInput) as err:
        CombatStrength(data)
    assert [(p.path, p.message) for p in err.value.problems] == [
        (f"/tables/{table}/matrix/126+/psychic-implosion/{key}", "a percentage is at most 100")]
    row[key] = 100
    assert CombatStrength(data).tables.data[table]["matrix"]["126+"]["psychic-implosion"][
        key] == 100


def test_a_points_cell_above_100_is_not_a_percentage() -> None:
    """Only the percent modes' rows are percentages: Mind Thrust's table A cells are
    points, and a replacement file may make one 150."""
    data = copy.deepcopy(DATA)
    data["combat"]["matrix"]["01-25"]["mind-thrust"]["mind-blank"] = 150
    assert CombatStrength(data).tables.combat_value("01-25", "mind-thrust", "mind-blank") == 150


def test_a_points_cell_above_100_in_the_defenseless_table_is_not_a_percentage() -> None:
    """research-tables.md B: only the psychic-implosion row (``defenseless.percent_modes``)
    is a percentage; Ego Whip's numbers are points, and a replacement file may make one
    150."""
    data = copy.deepcopy(DATA)
    data["defenseless"]["matrix"]["01-25"]["ego-whip"][0] = 150
    tables = CombatStrength(data).tables
    assert tables.defenseless_value("01-25", "ego-whip", 0) == 150


def test_a_whole_number_written_with_a_decimal_point_reads_as_that_integer() -> None:
    """JSON Schema counts 150.0 and 25.0 as integers, so a GM's replacement file may write
    them so (Python's json writes a float that way): a Psychic Implosion chance of 150.0
    is refused like 150, and a bonus die per 25.0 points of Combat Strength counts like
    one per 25."""
    data = copy.deepcopy(DATA)
    data["combat"]["matrix"]["01-25"]["psychic-implosion"]["mind-blank"] = 150.0
    data["defenseless"]["matrix"]["01-25"]["psychic-implosion"][0] = 150.0
    with pytest.raises(InvalidInput) as err:
        CombatStrength(data)
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("/tables/defenseless/matrix/01-25/psychic-implosion/0", "a percentage is at most 100"),
        ("/tables/combat/matrix/01-25/psychic-implosion/mind-blank",
         "a percentage is at most 100")]
    data = copy.deepcopy(DATA)
    data["bonus_dice"]["per"] = 25.0
    ann = {"id": "ann", "name": "Ann", "attack_strength": 30, "defense_strength": 30}
    bo = {"id": "bo", "name": "Bo", "attack_strength": 30, "defense_strength": 60}
    request = {"attacker": ann, "defender": bo, "attack": {"mode": "mind-thrust"},
               "defense": {"mode": "mind-blank"}}
    res = CombatStrength(data).resolve(request, SuppliedDice({"damage": [1, 2]}))
    assert (res.fields["bonus_dice"], res.fields["damage"]) == (2, 12 + 1 + 2)


def test_a_value_beyond_a_closed_last_band_counts_as_the_last_band() -> None:
    """rules.find_band: a replacement file may close its last band (126-200 instead of
    126+); a Combat Strength above it still reads that band, not the first."""
    data = copy.deepcopy(DATA)
    data["bands"][-1]["max"] = 200
    tables = CombatStrength(data).tables
    assert [tables.band(v) for v in (200, 201, 999)] == ["126+", "126+", "126+"]


def test_a_condition_the_tables_do_not_know_reads_is_and_its_id() -> None:
    """rules.Tables.condition_clause: another system's condition (not in these tables)
    still makes a sentence, "Orm is hexed"."""
    assert "hexed" not in SYSTEM.tables.conditions
    assert SYSTEM.tables.condition_clause("Orm", "hexed") == "Orm is hexed"


def test_condition_duration_dice_sides_are_listed_once_each() -> None:
    """research-tables.md B: the letters W, S, D and C all last 1d4 (weeks, turns,
    rounds); the purpose condition-duration names the d4 once."""
    assert SYSTEM.tables.duration_sides() == [4]
    purposes = {p["purpose"]: p for p in SYSTEM.describe()["dice_purposes"]}
    assert purposes["condition-duration"]["sides"] == [4]
