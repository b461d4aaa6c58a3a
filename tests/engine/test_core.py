"""Engine core: dice sources, penetration, expressions, exact distributions."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import FrozenInstanceError
from fractions import Fraction
from itertools import product

import pytest

from engine.dice import (
    LADDER,
    MAX_SIDES,
    DiceSource,
    RandomDice,
    Roll,
    SuppliedDice,
    dice_source,
    step_die,
    still_needed,
)
from engine.errors import (
    DiceNeeded,
    DiceSyntaxError,
    InvalidInput,
    LimitExceeded,
    RulesViolation,
)
from engine.expr import roll_expression
from engine.odds import Dist


def test_penetration_example_from_seed_000() -> None:
    """Seed 000: 'a six ... followed by a six and a one ... 6+(6-1)+(1-1) = 11'."""
    dice = SuppliedDice({"damage": [6, 6, 1]})
    die = dice.roll_penetrating("damage", 6, by="a")
    assert die.total == 11
    assert [r.follows for r in dice.rolls] == [None, 0, 1]
    assert not die.capped


def test_a_later_resolution_counts_follows_in_its_own_rolls() -> None:
    """Two exchanges from one source (an encounter segment): each resolution's rolls
    start at its own mark, and ``follows`` points into that list."""
    dice = SuppliedDice({"damage": [6, 1, 2, 6, 1, 2]})
    for _ in range(2):
        mark = dice.mark()
        dice.roll_penetrating("damage", 6, by="a")
        dice.roll("damage", 6, by="a")
        assert [(r.value, r.follows) for r in dice.rolls_since(mark)] == [
            (6, None), (1, 0), (2, None)]
    assert [r.follows for r in dice.rolls] == [None, 0, None, None, 3, None]


def test_the_record_of_the_dice_cannot_be_changed() -> None:
    """STYLE.md: results are immutable values. A die in the record (shared by every
    resolution that reports it), a penetrating die, and the rolls since any mark are
    all read-only."""
    dice = SuppliedDice({"damage": [3, 6, 2]})
    dice.roll("damage", 6)
    die = dice.roll_penetrating("damage", 6)
    with pytest.raises(FrozenInstanceError):
        dice.rolls[1].value = 1  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        die.total = 0  # type: ignore[misc]
    assert isinstance(dice.rolls_since(1), tuple) and isinstance(dice.rolls_since(0), tuple)
    assert [r.value for r in dice.rolls] == [3, 6, 2] and die.total == 7


def test_penetration_cap_is_reported() -> None:
    dice = SuppliedDice({"damage": [6] * 4})
    die = dice.roll_penetrating("damage", 6, cap=3)
    assert die.capped and die.follow_ups == 3 and die.total == 6 + 5 * 3


def test_a_chain_that_ends_below_the_maximum_at_the_cap_is_not_capped() -> None:
    """RULES.md §4: a result says when a cap was reached; a last follow-up below the
    maximum ends the chain by itself, so the cap cut nothing off."""
    die = SuppliedDice({"damage": [6, 6, 3]}).roll_penetrating("damage", 6, cap=2)
    assert (die.total, die.follow_ups, die.capped) == (6 + 5 + 2, 2, False)


def test_supplied_value_outside_faces_is_refused() -> None:
    with pytest.raises(InvalidInput) as err:
        SuppliedDice({"attack": [21]}).roll("attack", 20)
    assert err.value.problems[0].path == "/dice/attack/0"


def test_a_value_refused_for_its_die_is_not_used_up() -> None:
    """A 21 given for a d20 is refused where it stands and stays the next value: it is
    still reported unused, and a d100 asked next gets it."""
    dice = SuppliedDice({"attack": [21]})
    with pytest.raises(InvalidInput):
        dice.roll("attack", 20)
    assert dice.unused() == {"attack": [21]} and dice.rolls == ()
    assert dice.roll("attack", 100) == 21


def test_exhausted_purpose_raises_dice_needed() -> None:
    dice = SuppliedDice({"damage": [3]})
    with pytest.raises(DiceNeeded) as err:
        dice.roll_many("damage", 4, 4)
    assert (err.value.purpose, err.value.sides, err.value.needed) == ("damage", 4, 3)


def test_a_purpose_given_no_dice_needs_every_die_it_asks_for() -> None:
    """RULES.md §4: "dice needed" names the count still needed; a purpose absent from
    the supplied dice has none, so all of them (not one more)."""
    with pytest.raises(DiceNeeded) as err:
        SuppliedDice({"attack": [3]}).roll_many("damage", 6, 2)
    assert (err.value.purpose, err.value.sides, err.value.needed) == ("damage", 6, 2)


def test_one_die_past_the_last_supplied_value_is_dice_needed() -> None:
    """A single ``roll`` (no count asked for first) past the supplied values, or of a
    purpose given none, is "dice needed" for one die (RULES.md §4)."""
    dice = SuppliedDice({"attack": [3]})
    assert dice.roll("attack", 20) == 3
    for purpose in ("attack", "save"):
        with pytest.raises(DiceNeeded) as err:
            dice.roll(purpose, 20)
        assert (err.value.purpose, err.value.sides, err.value.needed) == (purpose, 20, 1)
    assert dice.rolls == (Roll("attack", 20, 3),)


def test_unused_dice_are_reported() -> None:
    dice = SuppliedDice({"attack": [12, 5], "save": [3]})
    dice.roll("attack", 20)
    assert dice.unused() == {"attack": [5], "save": [3]}


def test_a_purpose_whose_values_were_all_used_is_not_reported_unused() -> None:
    dice = SuppliedDice({"attack": [12], "save": [3], "damage": []})
    dice.roll("attack", 20)
    assert dice.unused() == {"save": [3]}


def test_random_source_is_reproducible_with_a_seed() -> None:
    a = [RandomDice(7).roll_many("x", 20, 10)]
    b = [RandomDice(7).roll_many("x", 20, 10)]
    assert a == b


def test_random_dice_show_every_face_of_their_die_and_no_other() -> None:
    """A random d6 is 1 to 6, the maximum included (it is what penetrates); a hundred
    seeded rolls show each face."""
    values = RandomDice(7).roll_many("x", 6, 100)
    assert sorted(set(values)) == [1, 2, 3, 4, 5, 6]


def test_die_ladder_stops_at_both_ends() -> None:
    assert LADDER == (4, 6, 8, 10, 12, 20)
    assert step_die(4, 2) == 8
    assert step_die(12, 2) == 20
    assert step_die(20, 1) == 20
    assert step_die(4, -1) == 4


def test_a_die_off_the_ladder_cannot_be_stepped() -> None:
    """Only the ladder's dice move along it: another size is invalid input at /die."""
    with pytest.raises(InvalidInput) as err:
        step_die(7, 1)
    assert [p.to_json() for p in err.value.problems] == [
        {"path": "/die", "message": "d7 is not on the die ladder [4, 6, 8, 10, 12, 20]"}]


def test_pool_limit() -> None:
    """API.md Limits: at most 100 dice in one pool; one more is refused, naming the
    limit at /pool_dice."""
    assert len(RandomDice(1).roll_many("attack", 6, 100)) == 100
    with pytest.raises(LimitExceeded) as err:
        RandomDice(1).roll_many("attack", 6, 101)
    assert [p.to_json() for p in err.value.problems] == [
        {"path": "/pool_dice", "message": "101 dice exceed the limit of 100 dice per pool"}]


def test_a_pool_over_the_limit_is_refused_before_any_die_is_asked_for() -> None:
    """A pool of 101 dice with 5 supplied is the limit, not "dice needed" for 96 more:
    supplying them would only be refused again."""
    with pytest.raises(LimitExceeded) as err:
        SuppliedDice({"attack": [1] * 5}).roll_many("attack", 6, 101)
    assert [p.path for p in err.value.problems] == ["/pool_dice"]


def test_a_die_has_one_to_max_sides_faces() -> None:
    """API.md Limits (1000 sides per die): a d1000 rolls, a d1001 or a d0 is refused."""
    dice = SuppliedDice({"x": [MAX_SIDES, 1]})
    assert (dice.roll("x", MAX_SIDES), dice.roll("x", 1)) == (MAX_SIDES, 1)
    for sides in (MAX_SIDES + 1, 0):
        with pytest.raises(InvalidInput) as err:
            RandomDice(1).roll("x", sides)
        assert [p.to_json() for p in err.value.problems] == [
            {"path": "/dice", "message": f"a die must have 1 to 1000 sides, not {sides}"}]


def test_empty_supplied_dice_are_supplied_dice_not_random_ones() -> None:
    """``dice: {}`` asks for physical dice and gives none: the first die is "dice
    needed", never a random value (RULES.md §4)."""
    with pytest.raises(DiceNeeded) as err:
        dice_source({}, 7).roll("attack", 20)
    assert (err.value.purpose, err.value.needed) == ("attack", 1)
    assert isinstance(dice_source(None, 7), RandomDice)


def test_still_needed_counts_the_later_dice_of_the_same_purpose_and_sides() -> None:
    """``still_needed`` adds what the later steps ask for of the short die (same purpose,
    same sides) and stops counting at the first step the rules refuse."""
    def rolls(*dice: tuple[str, int]) -> Callable[[DiceSource], object]:
        return lambda source: [source.roll(purpose, sides) for purpose, sides in dice]

    def refused(source: DiceSource) -> object:
        raise InvalidInput.at("/attack", "not allowed")

    short = DiceNeeded("attack", 20, 2)
    needed = still_needed(short, [rolls(("attack", 20), ("attack", 6), ("save", 20)),
                                  rolls(("attack", 20)), refused, rolls(("attack", 20))])
    assert (needed.purpose, needed.sides, needed.needed) == ("attack", 20, 4)


def test_still_needed_stops_counting_at_a_step_any_rule_refuses() -> None:
    """Not only invalid input ends the count: a later step the rules forbid (too few
    PSPs, say) is refused once the dice are there, so its dice are not asked for."""
    def attack(source: DiceSource) -> object:
        return source.roll("attack", 20)

    def too_few_psps(source: DiceSource) -> object:
        raise RulesViolation("psp", "not enough PSPs")

    needed = still_needed(DiceNeeded("attack", 20, 1), [attack, too_few_psps, attack])
    assert (needed.purpose, needed.sides, needed.needed) == ("attack", 20, 2)


def test_expression_with_penetration() -> None:
    out = roll_expression("2d6p+1", SuppliedDice({"expr": [6, 6, 1, 3]}))
    assert out["total"] == 6 + 5 + 0 + 3 + 1


@pytest.mark.parametrize("expr,pos", [("3d", 2), ("3d6+", 4), ("3x6", 1), ("2*3", 1), ("", 0)])
def test_expression_syntax_error_names_position(expr: str, pos: int) -> None:
    with pytest.raises(DiceSyntaxError) as err:
        roll_expression(expr, RandomDice(1))
    assert err.value.position == pos
    assert f"position {pos}" in err.value.problems[0].message


def test_expression_terms_add_and_subtract_as_written() -> None:
    """API.md ``dice.roll``: expressions like ``3d6+2`` and ``2d6p`` (penetrating): a
    die without a count is one die, ``-`` subtracts a die, a penetrating die or a
    number, ``d``/``p`` may be capitals, and spaces or tabs may sit between tokens,
    before the first and after the last."""
    out = roll_expression(" 3d6 - d4\t+ 2", SuppliedDice({"expr": [6, 5, 4, 3]}))
    assert out == {"expr": " 3d6 - d4\t+ 2", "total": 6 + 5 + 4 - 3 + 2,
                   "rolls": out["rolls"], "capped": False}
    assert [r["value"] for r in out["rolls"]] == [6, 5, 4, 3]
    assert roll_expression("d20-1 \t", SuppliedDice({"expr": [12]}))["total"] == 11
    assert roll_expression("10 - 1d4p", SuppliedDice({"expr": [4, 2]}))["total"] == 10 - 5
    assert roll_expression("2D6P", SuppliedDice({"expr": [6, 2, 3]}))["total"] == 6 + 1 + 3


def test_an_expression_is_capped_when_any_penetrating_die_is() -> None:
    """A chain that reaches the cap is reported (``capped``), whatever later dice do;
    every die names the roller given."""
    dice = SuppliedDice({"expr": [1] * 101 + [6, 3, 2]})
    out = roll_expression("1d1p + 1d6p + d4", dice, by="kara")
    assert out["capped"] is True
    assert out["total"] == 1 + (6 + 2) + 2
    assert {r["by"] for r in out["rolls"]} == {"kara"}


def test_an_expression_rolled_after_other_dice_reports_only_its_own() -> None:
    """``roll_expression`` on a source that has rolled before: its ``rolls`` are the
    expression's dice alone, and a follow-up's ``follows`` counts in that list."""
    dice = SuppliedDice({"attack": [7], "expr": [4, 4, 2]})
    dice.roll("attack", 20)
    out = roll_expression("1d4p", dice)
    assert [(r["purpose"], r["value"], r["follows"]) for r in out["rolls"]] == [
        ("expr", 4, None), ("expr", 4, 0), ("expr", 2, 1)]
    assert out["total"] == 4 + 3 + 1


def test_expression_limits_sit_exactly_at_their_edges() -> None:
    """API.md Limits: at most 100 dice in one expression; a die has 1 to 1000 faces,
    an expression at most 200 characters and a number at most 1000000 (7 digits).
    Past an edge is invalid params naming the limit, or the position of the term."""
    longest = "1+" * 99 + "10"
    assert len(longest) == 200
    assert roll_expression(longest, RandomDice(1))["total"] == 99 + 10
    with pytest.raises(LimitExceeded) as long_:
        roll_expression(longest + "0", RandomDice(1))
    assert long_.value.problems[0].message == "longer than 200 characters"
    with pytest.raises(LimitExceeded) as garbled:
        roll_expression("x" * 201, RandomDice(1))
    assert garbled.value.problems[0].message == "longer than 200 characters"
    assert len(roll_expression("100d1", RandomDice(1))["rolls"]) == 100
    with pytest.raises(LimitExceeded) as many:
        roll_expression("60d6+41d6", RandomDice(1))
    assert many.value.problems[0].message == \
        "101 dice exceed the limit of 100 dice per expression"
    assert roll_expression("1d1000", SuppliedDice({"expr": [1000]}))["total"] == 1000
    assert roll_expression("1000000 - 1", RandomDice(1))["total"] == 999_999
    refused = {"2+1d1001": (2, "a die has 1 to 1000 sides"),
               "2+1d0": (2, "a die has 1 to 1000 sides"),
               "2+0d6": (2, "the number of dice must be at least 1"),
               "1000001": (0, "a constant is at most 1000000"),
               "2+12345678": (2, "number too large"),
               "2 - 1000001": (4, "a constant is at most 1000000"),
               "d\u0666": (1, "expected the number of sides after 'd'"),
               "3x6": (1, 'unexpected "x"')}
    for expr, (position, message) in refused.items():
        with pytest.raises(DiceSyntaxError) as err:
            roll_expression(expr, RandomDice(1))
        assert err.value.position == position, expr
        assert err.value.problems[0].message == f"{message} at position {position}"


def test_expression_dice_bomb_is_limited() -> None:
    with pytest.raises(LimitExceeded):
        roll_expression("60d6+41d6", RandomDice(1))


def test_penetrating_dice_count_toward_an_expression_s_hundred_dice() -> None:
    """API.md Limits: at most 100 dice in one expression, penetrating ones among them
    (their follow-ups are bounded apart, 100 per die)."""
    assert len(roll_expression("99d6+1d6p", SuppliedDice({"expr": [1] * 100}))["rolls"]) == 100
    for expr in ("100d6+1d6p", "60d6p+41d6p"):
        with pytest.raises(LimitExceeded) as err:
            roll_expression(expr, RandomDice(1))
        assert err.value.problems[0].message == \
            "101 dice exceed the limit of 100 dice per expression"


def test_d1_penetration_loop_is_capped() -> None:
    out = roll_expression("1d1p", RandomDice(1))
    assert out["capped"] and len(out["rolls"]) == 101


def test_penetrating_distribution_against_brute_force() -> None:
    """Enumerate every chain of up to cap+1 d4 rolls and compare with ``Dist``; a chain
    of maxima stops at the cap and counts there, as rolling it does."""
    cap = 3
    dist = Dist.penetrating_die(4, cap=cap)
    expected: dict[int, Fraction] = {}
    for faces in product(range(1, 5), repeat=cap + 1):
        # every tuple is equally likely; its chain ends at the first face below 4
        total, p = 0, Fraction(1, 4 ** (cap + 1))
        for i, f in enumerate(faces):
            total += f if i == 0 else f - 1
            if f != 4:
                break
        expected[total] = expected.get(total, Fraction(0)) + p
    assert dict(dist.items()) == expected
    assert dist.truncated_mass == 0
    rolled = SuppliedDice({"d": [4] * (cap + 1)}).roll_penetrating("d", 4, cap=cap)
    assert rolled.capped and rolled.total == max(expected)
    assert dict(Dist.penetrating_die(1, cap=5).items()) == {1: 1}


@pytest.mark.parametrize("sides", [1, 2, 3, 6])
@pytest.mark.parametrize("cap", [0, 1, 3, 10])
def test_penetrating_dice_counted_directly_are_the_convolution_of_single_dice(
        sides: int, cap: int) -> None:
    """``penetrating_dice`` (the combat-strength odds' bonus dice) counts the sum in
    closed form; it must be exactly the repeated sum of ``penetrating_die``, itself
    checked against every chain above."""
    for count in range(5):
        direct = Dist.penetrating_dice(count, sides, cap)
        summed = Dist.penetrating_die(sides, cap).repeat(count)
        assert direct.items() == summed.items(), (count, sides, cap)
        assert (direct.total, direct.truncated) == (summed.total, summed.truncated)


def test_penetrating_dice_at_the_default_cap_are_exact_and_floats_unreduced() -> None:
    """At the shipped cap of 100 follow-ups: the same weights as the slow sum for three
    d6, and the JSON edge's floats (``float_items``, not reduced to Fractions first) are
    those of the exact probabilities."""
    direct = Dist.penetrating_dice(3, 6)
    assert direct.items() == Dist.penetrating_die(6).repeat(3).items()
    for dist in (direct.shift(4), Dist.die(6).repeat(3),
                 Dist.mixture([(Fraction(1, 3), Dist.die(4)), (Fraction(2, 3), direct)])):
        assert dist.float_items() == [(v, float(p)) for v, p in dist.items()]


def test_sum_and_compare_against_brute_force() -> None:
    a, b = Dist.die(6).repeat(2), Dist.die(4).repeat(3)
    gt = eq = lt = 0
    for x in product(range(1, 7), repeat=2):
        for y in product(range(1, 5), repeat=3):
            gt += sum(x) > sum(y)
            eq += sum(x) == sum(y)
            lt += sum(x) < sum(y)
    n = 36 * 64
    assert a.compare(b) == (Fraction(gt, n), Fraction(eq, n), Fraction(lt, n))


def dealt_by_enumeration(values: list[tuple[int, Fraction]]) -> dict[str, object] | None:
    """What ``Dist.dealt`` should say of equally likely ``values`` (each with its
    probability), from a sorted list of every value above 0 repeated by its weight."""
    hits = [(v, p) for v, p in values if v > 0]
    chance = sum((p for _, p in hits), Fraction(0))
    if not hits:
        return None
    step = min(p for _, p in hits)
    ladder = sorted(v for v, p in hits for _ in range(int(p / step)))
    assert len(ladder) * step == chance, "every probability a multiple of the least"

    def at(share: Fraction) -> int:  # the least value with at least that share at or below
        return next(v for i, v in enumerate(ladder, 1) if Fraction(i, len(ladder)) >= share)

    return {"chance": float(chance),
            "mean": float(sum((v * p for v, p in hits), Fraction(0)) / chance),
            "p10": at(Fraction(1, 10)), "median": at(Fraction(1, 2)),
            "p90": at(Fraction(9, 10)), "least": ladder[0], "most": ladder[-1]}


def test_damage_dealt_against_enumeration() -> None:
    """``dealt`` sums up the values above 0 exactly: chance, mean, percentiles."""
    cases = {
        "2d4 - 3": [(sum(x) - 3, Fraction(1, 16)) for x in product(range(1, 5), repeat=2)],
        "d6 - 6": [(f - 6, Fraction(1, 6)) for f in range(1, 7)],
        "d10 once": [(f, Fraction(1, 10)) for f in range(1, 11)],
        # the 10th percentile above the least value: a 1 is only 1 in 20 of them
        "d20 once": [(f, Fraction(1, 20)) for f in range(1, 21)],
        "3": [(3, Fraction(1))],
    }
    dists = {"2d4 - 3": Dist.die(4).repeat(2).shift(-3), "d6 - 6": Dist.die(6).shift(-6),
             "d10 once": Dist.die(10), "d20 once": Dist.die(20), "3": Dist.constant(3)}
    for name, dist in dists.items():
        assert dist.dealt() == dealt_by_enumeration(cases[name]), name
        assert dist.to_json()["dealt"] == dist.dealt()
    # a penetrating chain: every chain weighted by its own probability
    chain = Dist.penetrating_die(4, cap=3).shift(-2)
    assert chain.dealt() == dealt_by_enumeration(chain.items())
    assert Dist.die(6).shift(-6).dealt() is None
    # exactly on a share's edge: 1 and 2 of d2 each half; the median is 1, not 2
    assert Dist.die(2).dealt() == {"chance": 1.0, "mean": 1.5, "p10": 1, "median": 1,
                                   "p90": 2, "least": 1, "most": 2}


def test_schema_errors_speak_json_and_name_the_field() -> None:
    """Bad input gets a clear error naming the field: values as the caller wrote them
    (JSON, not Python), unexpected members named, long values cut short."""
    from engine import builtin_systems

    system = builtin_systems()["revised-2e"]
    request = {"attacker": {"id": "a", "name": "A", "kind": "psionicist", "level": True,
                            "psp": -1, "zz": 1, "notes": None},
               "defender": {"id": "b", "name": "x" * 500},
               "attack": {"mode": "nope", "multiplier": "2"}, "defense": None}
    with pytest.raises(InvalidInput) as err:
        system.validate_request(request)
    messages = {p.path: p.message for p in err.value.problems}
    assert messages["/attack/multiplier"] == '"2" is not of type "integer"'
    assert messages["/attacker/level"] == 'true is not of type "integer"'
    assert messages["/attacker/psp"] == "-1 is less than the minimum of 0"
    assert messages["/attacker"] == 'unexpected member(s) ["zz", "notes"]: not allowed here'
    assert messages["/attack/mode"].startswith('"nope" is not one of ["')
    assert all(len(m) < 300 for m in messages.values())


def test_house_rule_errors_and_forbidden_members_speak_json_too() -> None:
    from jsonschema import Draft202012Validator

    from engine import builtin_systems
    from engine.system import schema_problems

    system = builtin_systems()["revised-2e"]
    with pytest.raises(InvalidInput) as err:
        system.options({"H-2E-CRIT-MODS": 1, "H-NOPE": True})
    messages = {p.path: p.message for p in err.value.problems}
    assert messages["/options/H-2E-CRIT-MODS"] == "must be one of [true, false]"
    assert messages["/options/H-NOPE"].startswith('unknown house rule; known: ["H-2E-')
    with pytest.raises(InvalidInput) as err:
        builtin_systems()["combat-strength"].options({"H-CS-PEN-CAP": 101})
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("/options/H-CS-PEN-CAP", "must be an integer from 0 to 100")]
    # A {"not": {"anyOf": [{"required": ...}]}} names the member that is not allowed.
    schema = {"type": "object",
              "not": {"anyOf": [{"required": ["dice"]}, {"required": ["seed"]}]}}
    problems = schema_problems(Draft202012Validator(schema), {"seed": 1, "dice": {}})
    assert {(p.path, p.message) for p in problems} == {("/dice", "not allowed here"),
                                                       ("/seed", "not allowed here")}
    problems = schema_problems(Draft202012Validator({"not": {"type": "string"}}), "x")
    assert [p.message for p in problems] == ['must not match the schema {"type": "string"}']


def test_an_any_of_whose_one_branch_fits_the_value_is_named_inside_that_branch() -> None:
    """Bad input gets an error naming the field and the rule, whoever wrote the schema
    (a plugin's may say null-or-object with anyOf or oneOf): where one branch alone is
    of the value's type, its own errors are told (the member and its rule); a value of
    no branch's type is told the types there are; where several branches fit, or none
    has a type (id or name), the schema's own words stay."""
    from jsonschema import Draft202012Validator

    from engine.system import schema_problems

    schema = {"type": "object", "properties": {
        "defense": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/defense"}]},
        "sacrifice": {"oneOf": [{"type": "integer", "minimum": 1, "maximum": 9},
                                {"type": "array", "items": {"type": "integer",
                                                            "maximum": 9}}]},
        "who": {"anyOf": [{"required": ["id"]}, {"required": ["name"]}]},
        "either": {"anyOf": [{"type": "object", "required": ["x"]},
                             {"type": "object", "required": ["y"]}]}},
        "$defs": {"defense": {
            "type": "object", "required": ["mode"], "additionalProperties": False,
            "properties": {"mode": {"oneOf": [{"type": "null"},
                                              {"enum": ["blank", "tower"]}]}}}}}

    def problems(value: object) -> list[tuple[str, str]]:
        return [(p.path, p.message)
                for p in schema_problems(Draft202012Validator(schema), value)]

    assert problems({"defense": {"mode": "towr"}}) == [
        ("/defense/mode", '"towr" is not one of ["blank", "tower"]')]
    assert problems({"defense": {}}) == [("/defense", '"mode" is a required property')]
    assert problems({"defense": {"mode": None, "paid": 1}}) == [
        ("/defense", 'unexpected member(s) ["paid"]: not allowed here')]
    assert problems({"defense": "tower"}) == [
        ("/defense", '"tower" is not of type "null" or "object"')]
    assert problems({"sacrifice": [1, 12]}) == [
        ("/sacrifice/1", "12 is greater than the maximum of 9")]
    assert problems({"sacrifice": "3"}) == [
        ("/sacrifice", '"3" is not of type "integer" or "array"')]
    assert problems({"who": {}}) == [("/who", 'give "id" or "name": at least one is required')]
    assert problems({"either": {}}) == [
        ("/either", "{} is not valid under any of the given schemas")]


def test_an_any_of_with_a_false_or_a_nested_any_of_branch_is_told_every_type_it_takes() -> None:
    """Bad input gets an error naming the field and the rule, for any valid plugin
    schema: a branch that is the schema false (jsonschema gives its error no branch
    index) is told like any other, not an exception; a value of none of the types of
    an anyOf nested in a branch is told every type the whole anyOf takes (null too),
    not only the nested one's."""
    from jsonschema import Draft202012Validator

    from engine.system import schema_problems

    schema = {"type": "object", "properties": {
        "guard": {"anyOf": [False, {"type": "object", "required": ["side"]}]},
        "never": {"anyOf": [False, False]},
        "level": {"anyOf": [{"type": "null"}, {"$ref": "#/$defs/level"}]}},
        "$defs": {"level": {"oneOf": [{"type": "string", "maxLength": 2},
                                      {"type": "integer", "maximum": 9}]}}}

    def problems(value: object) -> list[tuple[str, str]]:
        return [(p.path, p.message)
                for p in schema_problems(Draft202012Validator(schema), value)]

    assert problems({"guard": {}}) == [("/guard", '"side" is a required property')]
    assert problems({"guard": "high"}) == [("/guard", '"high" is not of type "object"')]
    assert problems({"never": 1}) == [("/never", "1 is not valid under any of the given schemas")]
    assert problems({"level": {}}) == [
        ("/level", '{} is not of type "null" or "string" or "integer"')]
    assert problems({"level": 12}) == [("/level", "12 is greater than the maximum of 9")]


def test_schema_messages_speak_json_for_every_keyword_and_stay_short() -> None:
    """STYLE.md: messages that tell the caller how to fix the problem, in the caller's
    terms: every type a value may have, a const or a required member as JSON, a count
    of items or members against its limit, jsonschema's own message with the value as
    JSON, and no message past 300 characters (a list of every extra member is cut)."""
    from jsonschema import Draft202012Validator

    from engine.system import schema_problems

    def messages(schema: dict[str, object], value: object) -> list[str]:
        return [p.message for p in schema_problems(Draft202012Validator(schema), value)]

    assert messages({"type": ["integer", "null"]}, "x") == [
        '"x" is not of type "integer" or "null"']
    assert messages({"const": True}, None) == ["null is not true"]
    assert messages({"type": "object", "required": ["name"]}, {}) == [
        '"name" is a required property']
    assert messages({"type": "array", "maxItems": 2}, [1, 2, 3]) == [
        "has 3 items; at most 2 are allowed (maxItems)"]
    assert messages({"type": "object", "maxProperties": 1}, {"a": 1, "b": 2}) == [
        "has 2 members; at most 1 are allowed (maxProperties)"]
    assert messages({"maxLength": 3}, "abcd") == ['"abcd" is too long']
    # the value a keyword names after the instance is JSON too, not Python's repr
    assert messages({"pattern": "^[a-z]+$"}, "A") == ['"A" does not match "^[a-z]+$"']
    assert messages({"properties": {"x": False}}, {"x": None}) == [
        "null is not allowed here (the schema false allows nothing)"]
    assert messages({"dependentRequired": {"a": ["b"]}}, {"a": 1}) == [
        '"b" is required with "a" (dependentRequired)']
    # a member a patternProperties pattern matches is not unexpected
    assert messages({"patternProperties": {"^x-": {}}, "additionalProperties": False},
                    {"x-a": 1, "b": 2}) == ['unexpected member(s) ["b"]: not allowed here']
    assert messages({"prefixItems": [{}], "items": False}, [1, "x"]) == [
        "has 2 items; at most 1 are allowed (prefixItems, then items false)"]
    modes = [f"mode-{i:02d}" for i in range(20)]
    [enum] = messages({"enum": modes}, "nope")
    assert enum.startswith('"nope" is not one of ["mode-00", ') and '"mode-15"' in enum
    assert len(enum) == len('"nope" is not one of ') + 200 and enum.endswith("…")
    # jsonschema names every unevaluated member: 35 of them make exactly 300 characters,
    # which stay whole; one more and the message is cut to 300 with an ellipsis.
    closed = {"type": "object", "unevaluatedProperties": False}
    [whole] = messages(closed, {f"m{i:02d}": 1 for i in range(35)})
    assert len(whole) == 300 and whole.endswith(" were unexpected)")
    [cut] = messages(closed, {f"m{i:02d}": 1 for i in range(36)})
    assert len(cut) == 300 and cut.endswith("…")


def test_a_forbidden_member_is_named_only_where_the_caller_gave_it() -> None:
    """``exchange.odds`` takes no ``dice`` and no ``seed`` (API.md): a request with only
    ``seed`` is refused at ``/seed`` alone, a plain ``{"not": {"required": [...]}}`` names
    its member too, and a ``not`` that asks more than a member's presence is described
    as the schema it must not match, not blamed on a member."""
    from jsonschema import Draft202012Validator

    from engine.system import schema_problems

    either = {"type": "object",
              "not": {"anyOf": [{"required": ["dice"]}, {"required": ["seed"]}]}}
    problems = schema_problems(Draft202012Validator(either), {"seed": 1})
    assert [(p.path, p.message) for p in problems] == [("/seed", "not allowed here")]
    problems = schema_problems(Draft202012Validator({"not": {"required": ["dice"]}}),
                               {"dice": {}}, "/request")
    assert [(p.path, p.message) for p in problems] == [("/request/dice", "not allowed here")]
    typed = {"not": {"required": ["dice"], "properties": {"dice": {"type": "string"}}}}
    problems = schema_problems(Draft202012Validator(typed), {"dice": "x"})
    assert [p.path for p in problems] == [""]
    assert problems[0].message.startswith("must not match the schema {")


def test_a_resolution_is_read_only_all_the_way_down_and_to_json_shares_no_changeable_part(
        ) -> None:
    """STYLE.md: results are immutable values; a resolution given out stays as it was."""
    import copy
    import json
    import pickle

    from engine.results import Change, Event, FrozenDict, FrozenList, Resolution, freeze, thaw

    before = {"id": "a", "psp": 10, "mind": {"state": "closed"}, "conditions": []}
    after = {"id": "a", "psp": 4, "mind": {"state": "open"}, "conditions": ["stunned"]}
    res = Resolution("demo", "hit", Change("a", before, after), Change("a", before, before),
                     (), (Event("damage", "a", {"amount": 6, "tags": ["x"]}),
                          Event("stunned", "a")), "6 damage",
                     {"roll": {"natural": 20}}, unused_dice={"save": (7,)})
    after["mind"]["state"] = "changed by the caller"  # the record took a copy
    assert res.attacker.after["mind"]["state"] == "open"
    data = res.to_json()
    for changing in (lambda: data["attacker"]["after"].__setitem__("psp", 0),
                     lambda: data["attacker"]["after"]["conditions"].append("x"),
                     lambda: data["attacker"]["after"]["mind"].update(state="x"),
                     lambda: data["events"][0]["tags"].clear(),
                     lambda: data["roll"].pop("natural"),
                     lambda: data["unused_dice"]["save"].sort(),
                     lambda: data["unused_dice"].pop("save")):
        with pytest.raises(TypeError, match="read-only"):
            changing()
    # The top level is the caller's own; thaw gives a changeable deep copy.
    data["updates"] = []
    plain = thaw(data)
    plain["attacker"]["after"]["mind"]["state"] = "x"
    assert res.attacker.after["mind"]["state"] == "open"
    assert json.loads(json.dumps(res.to_json())) == thaw(res.to_json())
    assert [e["type"] for e in data["events"]] == ["damage", "stunned"]
    # docs/API.md: "others?": there only when the exchange touched another creature
    assert "others" not in data
    with_other = Resolution("demo", "hit", res.attacker, res.defender, (), (), "",
                            others=(Change("c", before, before),))
    assert with_other.to_json()["others"] == [{"id": "c", "before": before,
                                               "after": before}]
    frozen = freeze({"a": [1, {"b": 2}]})
    assert isinstance(frozen, FrozenDict) and isinstance(frozen["a"], FrozenList)
    assert freeze(frozen) is frozen and copy.deepcopy(frozen) is frozen
    assert pickle.loads(pickle.dumps(frozen)) == {"a": [1, {"b": 2}]}


def test_the_house_rules_one_call_gets_are_not_the_next_call_s_defaults() -> None:
    """RULES.md: every house default is "overridable per call": the effective values
    ``options`` gives one call are that call's own, so a caller that changes them (or
    a call that switches one) leaves every later call its defaults."""
    from engine import builtin_systems

    system = builtin_systems()["revised-2e"]
    first = system.options(None)
    assert first["H-2E-CRIT-MODS"] is True
    first["H-2E-CRIT-MODS"] = False
    assert system.options(None)["H-2E-CRIT-MODS"] is True
    assert system.options({})["H-2E-CRIT-MODS"] is True
    assert system.options({"H-2E-CRIT-MODS": False})["H-2E-CRIT-MODS"] is False
    assert system.options(None)["H-2E-CRIT-MODS"] is True


def test_truncated_mass_is_carried_through_every_combinator() -> None:
    """engine/odds.py: "Mass that a distribution leaves out is carried as
    ``truncated_mass`` instead of being dropped", through sums, shifts, maps, mixtures
    and exact probabilities that sum to less than 1. Means (``mean``, ``dealt``) are
    over the kept outcomes; chances (``p``, ``compare``, ``dealt``) are shares of all
    of them, the cut-off mass in none."""
    cut = Dist({1: 1, 2: 2}, 4, 1)  # P(1) = 1/4, P(2) = 1/2, a quarter cut off
    assert cut.truncated_mass == Fraction(1, 4)
    assert cut.mean() == Fraction(5, 3)
    assert cut.shift(3).truncated_mass == Fraction(1, 4)
    assert cut.map(lambda v: 2 * v).truncated_mass == Fraction(1, 4)
    assert cut.add(Dist.die(2)).truncated_mass == Fraction(1, 4)
    assert cut.add(cut).truncated_mass == 1 - Fraction(3, 4) ** 2
    assert cut.repeat(2).items() == cut.add(cut).items()
    assert Dist.die(2).add(cut).truncated_mass == Fraction(1, 4)
    half = Dist.mixture([(Fraction(1, 2), cut), (Fraction(1, 2), Dist.die(2))])
    assert half.truncated_mass == Fraction(1, 8)
    assert dict(half.items()) == {1: Fraction(3, 8), 2: Fraction(1, 2)}
    short = Dist.from_probabilities({0: Fraction(1, 3), 5: Fraction(1, 6)})
    assert short.truncated_mass == Fraction(1, 2)
    assert short.to_json()["truncated_mass"] == 0.5
    assert cut.compare(Dist.constant(1)) == (Fraction(1, 2), Fraction(1, 4), Fraction(0))
    assert Dist.constant(1).compare(cut) == (Fraction(0), Fraction(1, 4), Fraction(1, 2))
    assert cut.p(lambda v: v > 0) == Fraction(3, 4)
    dealt = cut.dealt()
    assert dealt is not None and dealt["chance"] == 0.75 and dealt["mean"] == 5 / 3
    # all of it cut off: nothing is kept, and the mean of nothing is 0, not a division
    assert Dist({}, 2, 2).to_json() == {"mean": 0.0, "distribution": [],
                                        "truncated_mass": 1.0, "dealt": None}


def test_map_sums_the_chances_of_values_sent_to_the_same_value() -> None:
    """``map`` is the distribution of ``fn`` of the value: where ``fn`` sends several
    values to one, their chances add up (half a d6, rounded down, counted face by face),
    and the truncated mass stays as it was."""
    halves: dict[int, Fraction] = {}
    for face in range(1, 7):
        halves[face // 2] = halves.get(face // 2, Fraction(0)) + Fraction(1, 6)
    assert dict(Dist.die(6).map(lambda v: v // 2).items()) == halves
    cut = Dist({1: 1, 2: 2}, 4, 1)  # P(1) = 1/4, P(2) = 1/2, a quarter cut off
    one = cut.map(lambda v: 7)
    assert one.items() == [(7, Fraction(3, 4))] and one.truncated_mass == Fraction(1, 4)


def test_floats_of_a_truncated_distribution_are_shares_of_every_outcome() -> None:
    """The JSON edge gives each value the chance ``items`` gives it, a share of all the
    outcomes with the cut-off mass among them, not a share of the kept ones only: the
    listed chances and ``truncated_mass`` sum to 1."""
    cut = Dist({1: 1, 2: 2}, 4, 1)  # P(1) = 1/4, P(2) = 1/2, a quarter cut off
    assert cut.float_items() == [(1, 0.25), (2, 0.5)]
    out = cut.to_json()
    assert out["distribution"] == [[1, 0.25], [2, 0.5]] and out["truncated_mass"] == 0.25


def test_a_value_of_no_chance_is_no_outcome() -> None:
    """A value whose weight is 0 cannot happen: it is not in the distribution given
    out, and damage dealt neither reaches it nor counts it; a value that can happen is
    listed, however unlikely."""
    dist = Dist.from_probabilities({0: Fraction(1, 2), 9: Fraction(0), 2: Fraction(1, 2)})
    assert dist.items() == [(0, Fraction(1, 2)), (2, Fraction(1, 2))]
    assert dist.to_json()["distribution"] == [[0, 0.5], [2, 0.5]]
    assert dist.dealt() == {"chance": 0.5, "mean": 2.0, "p10": 2, "median": 2, "p90": 2,
                            "least": 2, "most": 2}
    # a value that can happen is listed, however unlikely
    rare = Dist({0: 10 ** 301 - 1, 1: 1}, 10 ** 301)
    assert rare.to_json()["distribution"] == [[0, 1.0], [1, 1e-301]]


def test_frozen_json_refuses_every_change_and_thaws_to_plain_data() -> None:
    """STYLE.md: results are immutable values. engine/results.py: ``FrozenDict`` and
    ``FrozenList``'s changing methods raise ``TypeError``, any mapping or tuple is frozen
    too, copies and pickles give the value back, and ``thaw`` makes plain dicts and lists
    all the way down."""
    import copy
    import pickle
    from types import MappingProxyType

    from engine.results import Change, Event, FrozenDict, FrozenList, freeze, thaw

    frozen = freeze({"tags": ["a", "b"], "mind": MappingProxyType({"state": "open"}),
                     "pair": (1, 2)})
    assert isinstance(frozen["mind"], FrozenDict) and isinstance(frozen["pair"], FrozenList)
    tags = frozen["tags"]

    def merge() -> None:
        d = frozen
        d |= {"x": 1}

    def extend() -> None:
        t = tags
        t += ["c"]

    def repeat() -> None:
        t = tags
        t *= 2

    for changing in (lambda: frozen.setdefault("x", 1), merge, extend, repeat, tags.reverse,
                     lambda: frozen["mind"].update(state="closed")):
        with pytest.raises(TypeError, match="read-only"):
            changing()
    assert frozen["tags"] == ["a", "b"] and frozen["mind"] == {"state": "open"}
    assert hash(freeze([1, [2]])) == hash(freeze([1, [2]]))
    # an object is hashable too, also inside a list, and equal ones hash alike
    assert hash(freeze([{"a": [1], "b": {"c": 2}}])) == hash(freeze([{"b": {"c": 2}, "a": [1]}]))
    assert len({freeze({"a": 1}), freeze({"a": 1}), freeze({"a": 2})}) == 2
    assert copy.copy(frozen) is frozen and copy.copy(tags) is tags
    assert pickle.loads(pickle.dumps(tags)) == ["a", "b"]
    assert type(pickle.loads(pickle.dumps(tags))) is FrozenList
    plain = thaw(frozen)
    assert plain == {"tags": ["a", "b"], "mind": {"state": "open"}, "pair": [1, 2]}
    assert [type(v) for v in plain.values()] == [list, dict, list]
    assert type(thaw(tags)) is list and type(thaw(MappingProxyType({"a": [1]}))) is dict
    assert thaw((1, (2, {"a": 3}))) == [1, [2, {"a": 3}]]
    # objects in a list are thawed too (a resolution's rolls and events are such lists)
    rolls = thaw(freeze({"rolls": [{"value": 6, "tags": ["x"]}]}))["rolls"]
    assert type(rolls[0]) is dict and type(rolls[0]["tags"]) is list
    data = {"tags": ["x"]}
    event = Event("stunned", "a", data)
    data["tags"].append("y")
    assert event.to_json() == {"type": "stunned", "combatant": "a", "tags": ["x"]}
    after = {"conditions": ["stunned"]}
    change = Change("a", {}, after)
    after["conditions"].clear()
    assert change.after == {"conditions": ["stunned"]}
    with pytest.raises(TypeError, match="read-only"):
        change.after["conditions"].append("dazed")


def test_an_event_s_data_may_not_name_its_own_fields() -> None:
    """An event's data sits beside ``type`` and ``combatant`` in its JSON: a plugin's
    event whose data used either name would have overwritten them there, so it is
    refused when made, saying which names."""
    from engine.results import Event

    for data, taken in (({"type": "x"}, "['type']"),
                        ({"combatant": "b", "type": "x", "amount": 1},
                         "['combatant', 'type']")):
        with pytest.raises(ValueError, match=re.escape(f"may not name {taken}")):
            Event("stunned", "a", data)
    assert Event("stunned", "a", {"types": 1}).to_json()["type"] == "stunned"


def test_engine_errors_carry_their_fields_and_say_them() -> None:
    """engine/errors.py (API.md "Errors"): every refusal is an ``EngineError`` with
    structured fields the daemon maps to codes (a limit is invalid params, −32602), and
    a message that says them all, values as JSON."""
    from engine.errors import (
        EngineError,
        InvalidCombatant,
        Problem,
        RulesViolation,
        UnknownCombatant,
        json_text,
    )

    both = InvalidInput([Problem("", "not an object"), Problem("/psp", "-1 is too low")])
    assert len(both.problems) == 2
    assert str(both) == "/: not an object; /psp: -1 is too low"
    limit = LimitExceeded.at("/dice", "too many")
    assert isinstance(limit, LimitExceeded) and isinstance(limit, InvalidInput)
    assert isinstance(InvalidCombatant.at("/attacker", "bad"), InvalidCombatant)
    refused = RulesViolation("mode-not-known", "Kara does not know it", "kara")
    assert (refused.rule, refused.combatant, str(refused)) == (
        "mode-not-known", "kara", "mode-not-known: Kara does not know it")
    short = DiceNeeded("attack", 20)
    assert short.needed == 1 and str(short) == "need 1 more d20 for purpose 'attack'"
    unknown = UnknownCombatant("影", "/target")
    assert (unknown.id, unknown.path) == ("影", "/target")
    assert str(unknown) == 'no combatant "影" in this encounter'
    assert all(isinstance(e, EngineError) for e in (both, refused, short, unknown))
    # json_text: JSON, unescaped, cut at its limit with an ellipsis that counts
    assert json_text(["Zoë", True, None]) == '["Zoë", true, null]'
    assert json_text("x" * 8, limit=10) == '"xxxxxxxx"'
    assert json_text("x" * 9, limit=10) == '"xxxxxxxx…'
    # a message quotes a value whole up to 80 characters
    assert json_text("x" * 78) == '"' + "x" * 78 + '"'
    assert json_text("x" * 79) == '"' + "x" * 78 + "…"
    loop: list[object] = []
    loop.append(loop)
    assert json_text(loop) == "[[...]]"


def test_a_public_choice_of_a_system_that_says_nothing_more_did_nothing_to_tell() -> None:
    """``System.encounter_action``: a system that calls a choice public and keeps this
    hook declares it as ``encounter_declare`` does, with no events and an empty
    summary (which the daemon stores with the step)."""
    from engine import builtin_systems

    revised = builtin_systems()["revised-2e"]

    class Public(type(revised)):  # type: ignore[misc]
        def encounter_choice_is_public(self, choice: object) -> bool:
            return True

    system = Public()
    state = system.encounter_new(None)
    for cid in ("kara", "vel"):
        state, _ = system.encounter_add(state, {
            "id": cid, "kind": "psionicist", "level": 3, "psp_max": 30, "int": 14,
            "wis": 13, "attacks": ["mind-thrust"]})
    choice = {"attacks": []}
    declared, said = system.encounter_action(state, "kara", choice)
    assert said == {"events": [], "summary": ""}
    assert declared == system.encounter_declare(state, "kara", choice)


def test_house_rule_refusals_say_what_the_rule_takes() -> None:
    """RULES.md: a house default is switched per call by ``options``; a value it does not
    take is refused naming ``/options/<id>`` and what it takes (a run of more than ten
    integers by its ends), an unknown id with every known one in order."""
    from engine.options import HouseRule, resolve_options

    rules = [HouseRule("H-B", "b", 2, tuple(range(1, 12))),
             HouseRule("H-A", "a", 3, tuple(range(1, 11))),
             HouseRule("H-C", "c", 0, tuple(range(0, 60, 5)))]
    assert resolve_options(rules, {"H-B": 11}) == {"H-B": 11, "H-A": 3, "H-C": 0}
    with pytest.raises(InvalidInput) as err:
        resolve_options(rules, {"H-B": 12, "H-A": 11, "H-C": 7, "H-Z": True})
    assert {p.path: p.message for p in err.value.problems} == {
        "/options/H-B": "must be an integer from 1 to 11",
        "/options/H-A": "must be one of [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]",
        "/options/H-C": "must be one of [0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55]",
        "/options/H-Z": 'unknown house rule; known: ["H-A", "H-B", "H-C"]'}
    assert HouseRule("H-X", "An on/off rule.", True).to_json() == {
        "id": "H-X", "text": "An on/off rule.", "default": True, "choices": [True, False]}
