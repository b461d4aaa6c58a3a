"""The compiled quick checks (engine/schemacheck.py) agree with jsonschema: whatever a
predicate accepts jsonschema accepts, and the other way round, for every core method's
params schema, for every table schema and for hand-written schemas of each keyword."""

from __future__ import annotations

import copy
import json
import sys
from importlib import resources
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from engine import builtin_systems
from engine.schemacheck import QuickValidator, Validator, compile_check

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 2**64), st.sampled_from([0, 1, -1, 2**63]),
    st.floats(allow_nan=False, allow_infinity=False), st.sampled_from([1.0, 2.5, -0.0]),
    st.text(max_size=4), st.sampled_from(["", "revised-2e", "x" * 201, "d6", "ulcen"]))


def values(keys: list[str]) -> st.SearchStrategy[Any]:
    key = st.sampled_from([*keys, "x", "target", "mode", "attack"]) if keys else st.text(
        max_size=3)
    return st.recursive(SCALARS, lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(key, children, max_size=5)),
        max_leaves=8)


def property_names(schema: Any) -> list[str]:
    names: list[str] = []
    if isinstance(schema, dict):
        names += list(schema.get("properties") or {})
        for value in schema.values():
            names += property_names(value)
    elif isinstance(schema, list):
        for value in schema:
            names += property_names(value)
    return names


VALIDATORS: dict[str, Any] = {}
KEYWORD_SCHEMAS: list[dict[str, Any]] = [
    {"type": "integer", "minimum": 0, "maximum": 10},
    {"type": ["object", "null"], "properties": {"a": {"type": "string", "maxLength": 2}}},
    {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 3},
    {"enum": ["a", "b"]},
    {"required": ["a"], "additionalProperties": False, "properties": {"a": True}},
    {"additionalProperties": {"type": "integer"}, "maxProperties": 2, "minProperties": 1},
    {"not": {"anyOf": [{"required": ["dice"]}, {"required": ["seed"]}]}},
    {"minLength": 1},
    {"minimum": 1.5},
    {"type": "boolean"},
    {"items": False},
    {"const": 1},
    {"enum": [1, True, None, "a"]},
    {"oneOf": [{"type": "integer"}, {"minimum": 2}]},
    {"propertyNames": {"maxLength": 1}},
    {"uniqueItems": True},
    {"$defs": {"node": {"type": ["array", "integer"], "items": {"$ref": "#/$defs/node"}}},
     "$ref": "#/$defs/node"},
    {"pattern": "^[a-z]+-"},
    {"type": "string", "pattern": "d[0-9]"},
    {"allOf": [{"type": ["integer", "string"]}, {"minimum": 2}, {"maxLength": 1}]},
    {"allOf": [{"required": ["a"]}, {"properties": {"a": {"enum": [1, "a"]}}}]},
]


@pytest.mark.parametrize("schema", KEYWORD_SCHEMAS)
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_each_keyword_is_judged_as_jsonschema_judges_it(schema: dict[str, Any],
                                                         data: st.DataObject) -> None:
    check = compile_check(schema)
    assert check is not None
    value = data.draw(values(["a", "b", "dice", "seed"]))
    validator = VALIDATORS.setdefault(repr(schema), Validator(schema))
    assert check(value) == validator.is_valid(value)


#: (schema, value, valid): the edges of each keyword, which generated values rarely hit
EDGE_CASES: list[tuple[dict[str, Any], Any, bool]] = [
    # JSON equality: true is not 1, a longer list or object is not the same value
    ({"const": 1}, True, False), ({"const": True}, 1, False), ({"const": 1}, 1.0, True),
    ({"enum": [1, None]}, True, False), ({"enum": [[1], "a"]}, [True], False),
    ({"const": [1]}, [1, 2], False), ({"const": [1, 2]}, [1], False),
    ({"const": {"a": 1}}, {"a": 1, "b": 2}, False), ({"const": {"a": 1, "b": 2}}, {"a": 1}, False),
    ({"const": {"a": [1]}}, {"a": [1.0]}, True),
    # lists are equal item by item, in order: [1, 2] is not [2, 1], [1, 1] is not [1]
    ({"uniqueItems": True}, [[1, 2], [2, 1]], True), ({"uniqueItems": True}, [[1, 1], [1]], True),
    ({"uniqueItems": True}, [[1, 2], [1.0, 2]], False),
    # a list of strings alone (mode and condition names) is told apart as strings are
    ({"uniqueItems": True}, ["a", "b", "a"], False), ({"uniqueItems": True}, ["a", "b"], True),
    # bounds include their own value
    ({"minimum": 0, "maximum": 10}, 0, True), ({"minimum": 0, "maximum": 10}, 10, True),
    ({"minimum": 0, "maximum": 10}, -1, False), ({"minimum": 0, "maximum": 10}, 10.5, False),
    ({"minLength": 1, "maxLength": 2}, "ab", True), ({"minLength": 1, "maxLength": 2}, "", False),
    ({"minLength": 1, "maxLength": 2}, "abc", False),
    ({"minItems": 1, "maxItems": 2}, [0, 0], True), ({"minItems": 1, "maxItems": 2}, [], False),
    ({"minItems": 1, "maxItems": 2}, [0, 0, 0], False),
    ({"minProperties": 1, "maxProperties": 2}, {"a": 0, "b": 0}, True),
    ({"minProperties": 1, "maxProperties": 2}, {}, False),
    ({"minProperties": 1, "maxProperties": 2}, {"a": 0, "b": 0, "c": 0}, False),
    # true is no number; 1.0 is an integer
    ({"type": "number"}, True, False), ({"type": ["integer", "null"]}, False, False),
    ({"type": "integer"}, 1.0, True), ({"minimum": 2}, True, True),
    # additionalProperties is for the members "properties" does not name
    ({"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}},
     {"a": "s", "b": 1}, True),
    ({"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}},
     {"a": "s", "b": "t"}, False),
    # every branch of allOf, any of anyOf, exactly one of oneOf
    ({"allOf": [{"type": "integer"}, {"minimum": 2}]}, 1, False),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, 1, True),
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, 3, False),
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, 2.5, True),
    # a members' or names' schema that admits everything needs no loop (its body was
    # empty: the generated source did not compile)
    ({"properties": {"a": True}, "additionalProperties": {}}, {"b": 1}, True),
    ({"additionalProperties": {"title": "any"}}, {"b": 1}, True),
    ({"propertyNames": True}, {"b": 1}, True),
    # "uniqueItems": false asks nothing
    ({"uniqueItems": False}, [1, 1], True),
    # no branch holds (1.5: no integer, under 2); a single branch is still a list
    ({"oneOf": [{"type": "integer"}, {"minimum": 2}]}, 1.5, False),
    ({"anyOf": [{"type": "integer"}]}, 1, True), ({"oneOf": [{"type": "integer"}]}, "a", False),
    # an empty list of types admits nothing
    ({"type": []}, 1, False), ({"type": []}, None, False),
    # after a single "type", the keywords of other kinds do not apply
    ({"type": "integer", "minLength": 1, "required": ["a"], "maxItems": 0}, 5, True),
    ({"type": "string", "minimum": 1, "minProperties": 1, "uniqueItems": True}, "aa", True),
    # ``pattern`` is searched for anywhere, with or without "type"
    ({"pattern": "d[0-9]"}, "xd6", True), ({"type": "string", "pattern": "d[0-9]"}, "xd6", True),
    ({"pattern": "^d[0-9]"}, "xd6", False),
]


@pytest.mark.parametrize("schema,value,valid", EDGE_CASES)
def test_each_keyword_s_edges_are_judged_as_jsonschema_judges_them(
        schema: dict[str, Any], value: Any, valid: bool) -> None:
    """JSON Schema 2020-12 as jsonschema reads it (the module's promise: exactly the
    specification's semantics), at the values where a compiled test could be off by
    one or forget JSON equality."""
    check = compile_check(schema)
    assert check is not None
    assert (check(value), Draft202012Validator(schema).is_valid(value)) == (valid, valid)


@pytest.mark.parametrize("schema", [{"patternProperties": {"^a": True}}, {"$ref": "#/x"},
                                    {"$ref": "#/$defs/missing"}, {"type": "decimal"},
                                    {"properties": {"a": {"format": "email"}}},
                                    {"pattern": "("}, {"pattern": 5}])
def test_other_keywords_get_no_predicate(schema: dict[str, Any]) -> None:
    assert compile_check(schema) is None


#: subschemas whose meaning depends on their own ``$id`` (the base their ``$ref`` is read
#: against: here their own ``$defs``) or ``$schema`` (draft 4 has no integer 1.0)
OWN_ID = {"$defs": {"b": {"type": "integer"}},
          "properties": {"x": {"$id": "https://plugin.example/other",
                               "$defs": {"b": {"type": "string"}}, "$ref": "#/$defs/b"}}}
OWN_DRAFT = {"properties": {"x": {"$schema": "http://json-schema.org/draft-04/schema#",
                                  "type": "integer"}}}


@pytest.mark.parametrize("schema,refused,accepted", [(OWN_ID, {"x": 5}, {"x": "s"}),
                                                     (OWN_DRAFT, {"x": 1.0}, {"x": 1})])
def test_a_subschema_with_its_own_id_or_draft_is_left_to_jsonschema(
        schema: dict[str, Any], refused: Any, accepted: Any) -> None:
    """A subschema's ``$id`` moves the base its references resolve against and its
    ``$schema`` picks another draft; the compiled subset reads neither, so such a schema
    gets no predicate, and a plugin's params are judged as jsonschema judges them."""
    assert compile_check(schema) is None
    for validator in (QuickValidator(schema), Draft202012Validator(schema)):
        assert (validator.is_valid(refused), validator.is_valid(accepted)) == (False, True)


def test_an_id_and_a_draft_at_the_root_are_compiled() -> None:
    """At the root they change nothing the compiled subset reads: every reference is
    read against the root, and the root is always judged by 2020-12 (``Validator``)."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema",
              "$id": "https://plugin.example/root", "$defs": {"b": {"type": "integer"}},
              "properties": {"x": {"$ref": "#/$defs/b"}}}
    check = compile_check(schema)
    assert check is not None
    assert (check({"x": 5}), check({"x": "s"})) == (True, False)


@pytest.mark.parametrize("ref,meant", [("#/$defs/a/b", None), ("#/$defs/a~1b", 5)])
def test_a_reference_whose_name_is_a_pointer_path_or_escape_gets_no_predicate(
        ref: str, meant: Any) -> None:
    """``#/$defs/a/b`` is a JSON Pointer (``$defs`` → ``a`` → ``b``), and ``~1`` in it
    means ``/``: neither names the definition spelled the same way. jsonschema follows
    the pointer, so the compiler must not read the name as it stands."""
    schema = {"$defs": {"a/b": {"type": "integer"}, "a~1b": {"type": "string"},
                        "a": {"b": {"type": "null"}}},
              "$ref": ref}
    assert compile_check(schema) is None
    assert [v for v in (None, 5, "x") if Draft202012Validator(schema).is_valid(v)] == [meant]


def test_a_reference_with_a_percent_escape_gets_no_predicate() -> None:
    """A ``$ref`` is a URI, so ``%20`` in its fragment is a space: ``#/$defs/a%20b`` is
    the definition ``a b``, as jsonschema reads it. The compiled check read the name as
    it stands and said yes to 5, which jsonschema refuses."""
    schema = {"$defs": {"a%20b": {"type": "integer"}, "a b": {"type": "string"}},
              "$ref": "#/$defs/a%20b"}
    assert compile_check(schema) is None
    assert [v for v in (None, 5, "x") if QuickValidator(schema).is_valid(v)] == ["x"]


def test_a_schema_nested_deeper_than_python_compiles_is_left_to_jsonschema() -> None:
    """Each array level is a block of the generated source, and Python compiles at most
    20 nested blocks: the SyntaxError escaped ``compile_check``, so a plugin whose params
    nested 30 arrays deep was refused at load ("cannot be used (SyntaxError)") though
    jsonschema checks it. Such a schema gets no predicate, and jsonschema alone judges."""
    schema: dict[str, Any] = {"type": "integer"}
    deep: Any = 1
    for _ in range(30):
        schema, deep = {"type": "array", "items": schema}, [deep]
    assert compile_check(schema) is None
    validator = QuickValidator(schema)
    assert (validator.is_valid(deep), validator.is_valid(["x"])) == (True, False)


def test_a_reference_outside_defs_gets_no_predicate() -> None:
    """``#/anyOf/0`` is as long as ``#/$defs/`` and ends in a name ``$defs`` has: it is
    still a pointer elsewhere (to the first branch, integers), which the compiler does
    not read, so jsonschema alone judges it."""
    schema = {"$defs": {"0": True}, "anyOf": [{"type": "integer"}, True], "$ref": "#/anyOf/0"}
    assert compile_check(schema) is None
    assert [v for v in (None, 5, "x") if QuickValidator(schema).is_valid(v)] == [5]


@pytest.mark.parametrize("system_id", ["revised-2e", "combat-strength", "power-pool"])
@pytest.mark.parametrize("which", ["request_schema", "combatant_schema"])
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_system_schema_is_judged_as_jsonschema_judges_it(
        system_id: str, which: str, data: st.DataObject) -> None:
    schema = getattr(builtin_systems()[system_id], which)()
    check = compile_check(schema)
    assert check is not None, f"{system_id} {which} uses a keyword the compiler lacks"
    keys = property_names(schema)
    value = data.draw(st.one_of(
        values(keys), st.fixed_dictionaries({}, optional={k: values(keys) for k in keys})))
    validator = VALIDATORS.setdefault(f"{system_id}/{which}", Validator(schema))
    assert check(value) == validator.is_valid(value)


TABLE_PACKAGES = ["engine.revised_2e", "engine.combat_strength", "engine.power_pool"]


def _table_files(package: str) -> tuple[dict[str, Any], Any]:
    folder = resources.files(package).joinpath("data")
    return (json.loads(folder.joinpath("tables.schema.json").read_text(encoding="utf-8")),
            json.loads(folder.joinpath("tables.json").read_text(encoding="utf-8")))


@pytest.mark.parametrize("package", TABLE_PACKAGES)
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_changed_tables_are_judged_as_jsonschema_judges_them(package: str,
                                                             data: st.DataObject) -> None:
    """The table schemas (``pattern``, ``allOf``, ``$ref`` ...) on the shipped tables with
    one value somewhere replaced, removed or given an extra member."""
    schema, tables = _table_files(package)
    check = compile_check(schema)
    assert check is not None
    changed = copy.deepcopy(tables)
    parent: Any = changed
    key: Any = None
    while True:
        keys = list(parent) if isinstance(parent, dict) else list(range(len(parent)))
        if not keys:
            break
        key = data.draw(st.sampled_from(keys))
        if not isinstance(parent[key], dict | list) or data.draw(st.booleans()):
            break
        parent = parent[key]
    action = data.draw(st.sampled_from(["replace", "remove", "add"]))
    if action == "add" and isinstance(parent, dict):
        parent[data.draw(st.sampled_from(["x", "x-y", "7", "A"]))] = data.draw(SCALARS)
    elif action == "remove" and key is not None:
        del parent[key]
    elif key is not None:
        parent[key] = data.draw(values(["id", "name", "min", "max", "sides"]))
    validator = VALIDATORS.setdefault(package, Validator(schema))
    assert check(changed) == validator.is_valid(changed)


def test_a_typical_exchange_takes_the_quick_path() -> None:
    """A valid request must be judged valid by the compiled check itself (else every
    call pays for jsonschema), and a normalised combatant is a valid combatant."""
    system = builtin_systems()["revised-2e"]
    ulcen = {"id": "ulcen", "name": "Ulcen of Tyr", "kind": "psionicist", "level": 4,
             "psp": 40, "psp_max": 40, "int": 14, "wis": 13, "mac": 10,
             "attacks": ["mind-thrust"], "defenses": ["thought-shield"]}
    request = {"attacker": ulcen, "defender": {**ulcen, "id": "fenka"},
               "attack": {"mode": "mind-thrust", "multiplier": 4, "range": "short"},
               "defense": {"mode": "thought-shield"}}
    check = compile_check(system.request_schema())
    assert check is not None and check(request)
    assert Draft202012Validator(system.request_schema()).is_valid(request)
    full = system.combatant(ulcen)
    combatant_check = compile_check(system.combatant_schema())
    assert combatant_check is not None and combatant_check(full)
    assert not check({**request, "attacker": {**ulcen, "level": "4"}})


def test_a_subschema_too_deep_to_compile_inside_a_walk_is_left_to_jsonschema() -> None:
    """``Validator`` compiles the subschema of ``additionalProperties`` (and ``items``)
    as it walks a value, deeper in the stack than a schema is compiled at the start: one
    nested deeper than the stack left raises RecursionError there, and jsonschema alone
    judges (here an object without further members, which it accepts without entering
    the subschema); another error would be a fault, not swallowed."""
    deep: dict[str, Any] = {"type": "integer"}
    for _ in range(2 * sys.getrecursionlimit()):
        deep = {"allOf": [deep]}
    with pytest.raises(RecursionError):
        compile_check(deep)
    # "if" is outside the compiled subset: no predicate for the root, so the walk runs
    schema = {"type": "object", "if": True, "additionalProperties": deep}
    assert list(Validator(schema).iter_errors({})) == []
    assert [e.message for e in Validator(schema).iter_errors([])] == [
        "[] is not of type 'object'"]


@pytest.mark.parametrize("pattern,value,valid", [
    # ECMA-262 (JSON Schema's regex dialect): "$" is the end of the string only, where
    # Python's re also matches before a final newline
    ("^[A-Z]$", "A", True), ("^[A-Z]$", "A\n", False),
    ("^[a-z0-9]+(-[a-z0-9]+)*$", "mind-thrust\n", False),
    ("x(a|$)", "x", True), ("x(a|$)", "x\n", False),
    # a "$" escaped, or in a character class, is the character: it stays one
    (r"^a\$$", "a$", True), (r"^a\$$", "a$\n", False),
    ("^[$]$", "$", True), ("^[$]$", "$\n", False),
    (r"^a\\$", "a\\", True), (r"^a\\$", "a\\\n", False),
    (r"^[\]$]$", "$", True), (r"^[\]$]$", "$\n", False), ("^[]$]$", "]\n", False),
    # under the multiline flag (ECMA-262 2025's (?m:...) modifier; Python's (?m) at the
    # start) "$" matches before a line break, in both dialects: it stays "$"
    ("(?m:^a$)", "a\nb", True), ("(?m:a$)x$", "a\nx\n", False),
    ("(?m:(a)$)", "a\nb", True), ("(?m:a(?-m:$))", "a\nb", False),
    ("(?i:a$)", "a\n", False), ("(?:a$)", "a\n", False), ("(?m)^a$", "a\nb", True),
])
def test_a_pattern_s_dollar_is_the_end_of_the_string_as_in_ecma_262(
        pattern: str, value: str, valid: bool) -> None:
    """JSON Schema 2020-12 §6.3.3: a pattern is an ECMA-262 regular expression; its "$"
    (without the multiline flag) matches at the end of the input only. The quick yes,
    the full validator and the problems they report all say so (a plugin's schema too:
    every schema goes through this module)."""
    schema = {"type": "string", "pattern": pattern}
    check = compile_check(schema)
    assert check is not None
    validator = QuickValidator(schema)
    assert (check(value), Validator(schema).is_valid(value), validator.is_valid(value)) == (
        valid, valid, valid)
    assert [e.validator for e in validator.iter_errors(value)] == ([] if valid else ["pattern"])


def test_every_pattern_of_the_built_in_schemas_refuses_a_final_newline() -> None:
    """Each built-in table's pattern (engine/*/data/tables.schema.json) refuses a value
    it takes once a newline follows it, as a JavaScript client's check does."""
    taken = {"^[A-Z]$": "A", "^[a-z][a-z0-9-]*$": "mind-thrust",
             "^[a-z][a-z0-9]*(-[a-z0-9]+)*$": "mental-stab",
             "^[a-z0-9]+(-[a-z0-9]+)*$": "ego-whip"}
    found: set[str] = set()
    for package in ("engine.combat_strength", "engine.power_pool", "engine.revised_2e"):
        text = (resources.files(package) / "data" / "tables.schema.json").read_text("utf-8")
        found |= set(_patterns(json.loads(text)))
    assert found == set(taken)
    for pattern, value in taken.items():
        check = compile_check({"type": "string", "pattern": pattern})
        assert check is not None and check(value) and not check(value + "\n")
        assert Validator({"pattern": pattern}).is_valid(value)
        assert not Validator({"pattern": pattern}).is_valid(value + "\n")


def _patterns(schema: Any) -> list[str]:
    """Every ``pattern`` in ``schema``, at any depth."""
    if isinstance(schema, dict):
        own = [schema["pattern"]] if isinstance(schema.get("pattern"), str) else []
        return own + [p for v in schema.values() for p in _patterns(v)]
    if isinstance(schema, list):
        return [p for v in schema for p in _patterns(v)]
    return []
