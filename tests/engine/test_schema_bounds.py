"""A refused value is described in time that grows no faster than its size, and little
of it (engine/schemacheck.py, ``Validator`` and ``first_errors``; API.md "Limits":
"never a hang").

jsonschema compared every pair of items for ``uniqueItems`` when it could not sort them
(2000 objects took 10 s, 8000 over four minutes, one request blocking every client),
looked at each item of an array far over its ``maxItems``, built a validator object
for every good item of a long array, and described every bad value (half a minute for a
1 MiB request). The assertions count the work done, never the time (``comparisons``:
tests/conftest.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from engine.schemacheck import MAX_ERRORS, Validator, first_errors
from engine.system import schema_problems
from tests.engine.test_schemacheck import values


@pytest.fixture
def descents(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many subschemas ``Validator`` entered (a validator object built for each)."""
    count = [0]
    descend = Validator.descend

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        count[0] += 1
        return descend(self, *args, **kwargs)

    monkeypatch.setattr(Validator, "descend", counted)
    return count


def errors(schema: Any, value: Any) -> list[tuple[list[Any], str]]:
    return [(list(e.absolute_path), str(e.validator))
            for e in Validator(schema).iter_errors(value)]


@pytest.mark.parametrize("items", [
    [{"a": i} for i in range(3000)],                      # objects: not sortable
    [f"a{i}" for i in range(3000)] + [0],                # a string and a number
    [[i, str(i)] for i in range(3000)],                   # lists of mixed types
])
def test_unique_items_are_told_apart_by_hashing_not_by_comparing_every_pair(
        items: list[Any], comparisons: list[int]) -> None:
    schema = {"type": "array", "uniqueItems": True}
    assert errors(schema, items) == []
    assert errors(schema, [*items, items[1000]]) == [([], "uniqueItems")]
    assert comparisons[0] == 0  # jsonschema's way: 4.5 million comparisons here


@pytest.mark.parametrize(("items", "unique"), [
    ([{"a": 1}, {"a": 1.0}], False),           # JSON has one kind of number
    ([1, True], True), ([0, False], True),      # but a boolean is none
    ([[1, True], [1, 1], [1, True]], False),    # jsonschema's sorted check misses this one
    ([{"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}], False),
    ([{"a": 1, "b": 2}, {"b": 2, "a": 1}], False), (["a", "b", None, {}], True),
    ([{"a": 1}, {"b": 1}], True),               # members are told apart by name too
    ([True, False, None], True),
])
def test_unique_items_follow_json_equality(items: list[Any], unique: bool) -> None:
    assert Validator({"uniqueItems": True}).is_valid(items) is unique


def test_a_subschema_that_names_its_draft_is_checked_by_hashing_too(
        comparisons: list[int]) -> None:
    """jsonschema picks the class of a subschema by its ``$schema``: the bounded class
    is registered for 2020-12, so naming it does not bring the quadratic check back."""
    schema = {"properties": {"a": {"$schema": "https://json-schema.org/draft/2020-12/schema",
                                   "uniqueItems": True}}}
    assert errors(schema, {"a": [{"a": i} for i in range(2000)] + [{"a": 0}]}) == [
        (["a"], "uniqueItems")]
    assert comparisons[0] == 0


def test_an_array_over_its_max_items_is_refused_by_its_length_alone(
        comparisons: list[int], descents: list[int]) -> None:
    """power-pool's ``decline`` (at most 8, each once): 5000 objects are one problem,
    and neither their uniqueness nor any item is looked at."""
    schema = {"type": "array", "maxItems": 8, "uniqueItems": True,
              "items": {"type": "string", "maxLength": 64}}
    assert errors(schema, [{"a": i} for i in range(5000)]) == [([], "maxItems")]
    assert comparisons[0] == 0 and descents[0] == 0
    assert errors(schema, ["a", "a", 1]) == [([], "uniqueItems"), ([2], "type")]


def test_an_object_over_its_max_properties_is_refused_by_its_size_alone(
        descents: list[int]) -> None:
    schema = {"type": "object", "maxProperties": 64, "propertyNames": {"maxLength": 2},
              "additionalProperties": {"type": "array"}}
    assert errors(schema, {f"k{i}": i for i in range(5000)}) == [([], "maxProperties")]
    assert descents[0] == 0


@pytest.mark.parametrize(("schema", "value", "limit"), [
    ({"maxItems": 1, "items": {"type": "string"}}, [1, 2], "maxItems"),
    ({"maxItems": 1, "prefixItems": [{"type": "string"}]}, [1, 2], "maxItems"),
    ({"maxItems": 1, "contains": {"type": "string"}}, [1, 2], "maxItems"),
    ({"maxItems": 1, "unevaluatedItems": {"type": "string"}}, [1, 2], "maxItems"),
    ({"maxProperties": 1, "additionalProperties": {"type": "string"}}, {"a": 1, "b": 2},
     "maxProperties"),
    ({"maxProperties": 1, "patternProperties": {"^": {"type": "string"}}}, {"a": 1, "b": 2},
     "maxProperties"),
    ({"maxProperties": 1, "propertyNames": {"maxLength": 0}}, {"a": 1, "b": 2},
     "maxProperties"),
    ({"maxProperties": 1, "unevaluatedProperties": {"type": "string"}}, {"a": 1, "b": 2},
     "maxProperties"),
    # items alike are not told apart either
    ({"maxItems": 1, "uniqueItems": True}, [1, 1], "maxItems"),
    # a limit written with a point is still an integer (2020-12), and still a limit
    ({"maxItems": 1.0, "items": {"type": "string"}}, [1, 2], "maxItems"),
    ({"maxProperties": 1.0, "additionalProperties": {"type": "string"}}, {"a": 1, "b": 2},
     "maxProperties"),
])
def test_no_keyword_that_looks_at_each_item_or_member_reports_on_an_oversized_value(
        schema: dict[str, Any], value: Any, limit: str) -> None:
    """API.md "Errors": an array over its ``maxItems`` (an object over its
    ``maxProperties``) is one problem, its items unchecked, whichever keyword would
    look at them (jsonschema's own class adds the keyword's problem)."""
    assert len(list(Draft202012Validator(schema).iter_errors(value))) > 1
    assert errors(schema, value) == [([], limit)]


def test_only_the_items_and_members_their_quick_check_refuses_are_entered(
        descents: list[int]) -> None:
    """jsonschema built a validator for each item it entered, good or bad: 330 000
    combatants ``{}`` beside a wrong ``system`` took 5 s to describe."""
    schema = {"type": "object", "properties": {
        "combatants": {"type": "array", "items": {"type": "object"}},
        "dice": {"additionalProperties": {"type": "array", "items": {"type": "integer"}}}}}
    value = {"combatants": [{}] * 20_000 + [5], "dice": {f"d{i}": [1] * 100
                                                          for i in range(200)} | {"x": [1.5]}}
    assert errors(value=value, schema=schema) == [
        (["combatants", 20_000], "type"), (["dice", "x", 0], "type")]
    # the two arrays, the one bad combatant, "x" and its bad die
    assert descents[0] == 5


def test_a_subschema_that_depends_on_where_it_sits_is_entered_item_by_item() -> None:
    """``#/$defs/...`` resolves against the whole document: the subschema alone would
    mean another thing, so it gets no quick check of its own (and is still right)."""
    schema = {"$defs": {"n": {"type": "integer"}},
              "items": {"$defs": {"n": {"type": "string"}}, "$ref": "#/$defs/n"}}
    assert errors(schema, [1, "a", 2]) == [([1], "type")]


#: subschemas whose ``$ref`` into the document's ``$defs`` is nested where a walk must
#: look for it: in a member of an object, and in an item of a list
IN_A_MEMBER = {"$defs": {"n": {"type": "string"}}, "properties": {"a": {"$ref": "#/$defs/n"}}}
IN_A_LIST = {"$defs": {"n": {"type": "string"}}, "allOf": [{"$ref": "#/$defs/n"}]}


@pytest.mark.parametrize("schema,value,path", [
    ({"items": IN_A_MEMBER}, [{"a": "s"}], [0, "a"]),
    ({"items": IN_A_LIST}, ["s"], [0]),
    ({"additionalProperties": IN_A_MEMBER}, {"k": {"a": "s"}}, ["k", "a"]),
    ({"additionalProperties": IN_A_LIST}, {"k": "s"}, ["k"]),
])
def test_a_reference_nested_in_a_subschema_is_resolved_against_the_whole_document(
        schema: dict[str, Any], value: Any, path: list[Any]) -> None:
    """However deep it sits, ``#/$defs/n`` is the document's ``n`` (an integer here), not
    the ``n`` of the subschema that holds it: an item or member is judged by that."""
    assert errors({"$defs": {"n": {"type": "integer"}}, **schema}, value) == [(path, "type")]


def test_a_subschema_that_names_another_draft_is_judged_by_that_draft() -> None:
    """``$schema`` in a subschema picks its draft (the module: jsonschema picks a
    subschema's class by it): draft 4 has no integer 1.0, so no 2020-12 quick check may
    pass that item or member."""
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "integer"}
    assert errors({"items": draft4}, [1, 1.0]) == [([1], "type")]
    assert errors({"additionalProperties": draft4}, {"a": 1.0}) == [(["a"], "type")]


def test_items_begin_after_the_prefix_items_and_are_named_by_their_index() -> None:
    """2020-12: ``items`` applies to the items after ``prefixItems`` only; an item's
    problem is at its own index."""
    schema = {"prefixItems": [{"type": "string"}], "items": {"type": "integer"}}
    assert errors(schema, ["a", 1, "b", 2]) == [([2], "type")]
    assert errors({"items": {"type": "integer"}}, [1, "a"]) == [([1], "type")]


@pytest.mark.parametrize("schema", [{"uniqueItems": True}, {"items": {"type": "integer"}},
                                    {"additionalProperties": {"type": "integer"}}])
def test_array_and_object_keywords_leave_other_values_alone(schema: dict[str, Any]) -> None:
    """A keyword applies only to instances of its type (JSON Schema 2020-12): a string
    has no items to be unique or integers, a list no members."""
    for value in ("aa", ["a"], {"a": "a"}):
        stock = [(list(e.absolute_path), str(e.validator))
                 for e in Draft202012Validator(schema).iter_errors(value)]
        assert errors(schema, value) == stock
    assert errors(schema, "aa") == []


class CountedErrors:
    """A validator whose errors are counted as they are taken."""

    def __init__(self, schema: Any) -> None:
        self.validator = Validator(schema)
        self.taken = 0

    def iter_errors(self, value: Any) -> Iterator[jsonschema.ValidationError]:
        for error in self.validator.iter_errors(value):
            self.taken += 1
            yield error


def test_a_check_stops_looking_after_max_errors() -> None:
    """Each error costs jsonschema tens of microseconds: half a million bad values (a
    1 MiB request) took half a minute to describe, for an answer of tens of MB. A
    thousand take milliseconds (engine/schemacheck.py)."""
    counted = CountedErrors({"type": "array", "items": {"type": "string"}})
    problems = schema_problems(counted, list(range(20_000)), "/attacks")
    assert counted.taken == MAX_ERRORS == len(problems) == 1000
    assert problems[0].path == "/attacks/0" and problems[-1].path == f"/attacks/{MAX_ERRORS - 1}"
    assert problems[0].message == '0 is not of type "string"'


def test_errors_are_listed_by_where_they_are_in_the_value() -> None:
    """``first_errors`` sorts what it takes by path: the problems of a refused request
    read in the value's order, not in the order of the schema's keywords."""
    schema = {"properties": {"b": {"type": "string"}, "a": {"type": "string"}},
              "required": ["c"]}
    found = first_errors(Validator(schema).iter_errors({"a": 1, "b": 2}))
    assert [(list(e.absolute_path), e.validator) for e in found] == [
        ([], "required"), (["a"], "type"), (["b"], "type")]


def test_a_list_over_its_limit_is_named_with_the_limit() -> None:
    [problem] = schema_problems(Validator({"properties": {"decline": {"maxItems": 8}}}),
                                {"decline": list(range(2000))})
    assert problem.path == "/decline"
    assert problem.message == "has 2000 items; at most 8 are allowed (maxItems)"


BOUNDED_SCHEMAS: list[dict[str, Any]] = [
    {"type": "array", "maxItems": 2, "uniqueItems": True, "items": {"type": "integer"}},
    {"maxItems": 1, "prefixItems": [{"type": "string"}], "items": {"type": "integer"}},
    {"maxItems": 3, "contains": {"type": "string"}, "unevaluatedItems": False,
     "prefixItems": [True]},
    {"maxProperties": 1, "patternProperties": {"^a": {"type": "integer"}},
     "additionalProperties": {"type": "string"}, "propertyNames": {"maxLength": 1}},
    {"maxProperties": 2, "properties": {"a": True}, "unevaluatedProperties": False},
    {"items": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "null"}}]}},
    {"additionalProperties": {"uniqueItems": True}, "properties": {"a": {"maxItems": 0}}},
    {"$defs": {"n": {"type": ["array", "integer"], "maxItems": 2, "items": {"$ref": "#/$defs/n"}}},
     "$ref": "#/$defs/n"},
    {"not": {"items": {"type": "integer"}, "maxItems": 1}},
    {"items": False}, {"items": True, "prefixItems": [{"type": "string"}]},
    {"additionalProperties": False, "properties": {"a": {}}}, {"uniqueItems": False},
]


@pytest.mark.parametrize("schema", BOUNDED_SCHEMAS)
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_the_bounded_validator_judges_as_jsonschema_does(schema: dict[str, Any],
                                                        data: st.DataObject) -> None:
    """Same verdict as jsonschema's own class, and no problem it would not report (it
    may leave some out: the items of an oversized array)."""
    value = data.draw(values(["a", "b", "ab"]))
    bounded = {(tuple(e.absolute_path), e.validator) for e in
               Validator(schema).iter_errors(value)}
    stock = {(tuple(e.absolute_path), e.validator) for e in
             Draft202012Validator(schema).iter_errors(value)}
    assert bool(bounded) == bool(stock)
    assert bounded <= stock


ROOT = Path(__file__).resolve().parents[2]
#: ways to get a jsonschema validator other than ``Validator`` (or ``QuickValidator``)
UNBOUNDED = re.compile(r"Draft\d+Validator\(|validator_for\(|jsonschema\.validate\(|"
                       r"validators\.(?:create|extend)\(")


@pytest.mark.parametrize("package", ["engine", "companion", "adapters"])
def test_every_check_uses_the_bounded_validator(package: str) -> None:
    """Every validator of requests, choices, combatants, plugin schemas and mapping
    files is ``Validator`` (made once, in engine/schemacheck.py): one built any other
    way would bring the quadratic ``uniqueItems`` back."""
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
             for path in sorted((ROOT / package).rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if UNBOUNDED.search(line) and path != ROOT / "engine" / "schemacheck.py"]
    assert found == []
