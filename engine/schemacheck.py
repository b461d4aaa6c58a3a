"""A quick yes for params that are valid, compiled once from a method's JSON Schema.

jsonschema walks a schema keyword by keyword and builds a validator object per
sub-schema it enters; for a params object with a few dozen values that is tens of
microseconds per call, a large share of a small call. Most calls are valid, so each
method also gets a plain Python predicate compiled from its schema: when it says "valid"
the call goes on; otherwise jsonschema runs as before and reports every problem with its
path (and has the last word: nothing it accepts is refused).

The engine uses the same predicates for exchange requests and combatants, the daemon
for method params.

Only a subset of JSON Schema 2020-12 is compiled (the keywords our schemas use:
``type``, ``properties``, ``required``, ``additionalProperties``, ``items``, ``enum``,
``const``, ``min/maxLength``, ``min/maxItems``, ``min/maxProperties``, ``minimum``,
``maximum``, ``not``, ``anyOf``, ``oneOf``, ``propertyNames``, ``uniqueItems``, local
``$ref`` into ``$defs``, and annotations). A schema with any other keyword gets no
predicate, and jsonschema alone decides. Each keyword follows the specification's
semantics exactly (a keyword applies only to instances of its type; ``1.0`` is an
integer; ``true`` is not a number; ``1`` is not ``true`` in an ``enum``);
``tests/engine/test_schemacheck.py`` checks the predicates against jsonschema on
generated values.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment",
                          "deprecated", "readOnly", "writeOnly"})
_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "items",
                       "enum", "const", "minLength", "maxLength", "minItems", "maxItems",
                       "minProperties", "maxProperties", "minimum", "maximum", "not",
                       "anyOf", "oneOf", "propertyNames", "uniqueItems", "$ref", "$defs",
                       "$schema", "$id"}) | _ANNOTATIONS


class Unsupported(Exception):
    """The schema uses a keyword this compiler does not handle."""


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and value.is_integer()


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": _is_integer,
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _type_check(spec: Any) -> Check:
    names = [spec] if isinstance(spec, str) else list(spec)
    checks = []
    for name in names:
        if name not in _TYPES:
            raise Unsupported(f"type {name!r}")
        checks.append(_TYPES[name])
    if len(checks) == 1:
        return checks[0]
    return lambda v: any(c(v) for c in checks)


def _same(a: Any, b: Any) -> bool:
    """JSON equality: numbers by value (1 == 1.0), but booleans are not numbers."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if _is_number(a) and _is_number(b):
        return bool(a == b)
    if isinstance(a, str) or a is None:
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return False


@dataclass
class _Context:
    """The root schema (for ``$ref``) and the references being compiled (for recursion)."""

    root: Mapping[str, Any]
    in_progress: dict[str, Check] = field(default_factory=dict)


def _reference(ref: Any, ctx: _Context) -> Check:
    """A local ``#/$defs/<name>`` reference; a recursive one calls through a cell."""
    prefix = "#/$defs/"
    if not isinstance(ref, str) or not ref.startswith(prefix):
        raise Unsupported(f"$ref {ref!r}")
    name = ref[len(prefix):]
    target = (ctx.root.get("$defs") or {}).get(name)
    if target is None or "/" in name or "~" in name:
        raise Unsupported(f"$ref {ref!r}")
    if name in ctx.in_progress:
        return ctx.in_progress[name]
    cell: list[Check] = []
    ctx.in_progress[name] = lambda v: cell[0](v)
    try:
        cell.append(_compile(target, ctx))
    finally:
        del ctx.in_progress[name]
    return cell[0]


def _all(checks: list[Check]) -> Check | None:
    """One predicate that holds when every one of ``checks`` does (``None`` for none)."""
    if not checks:
        return None
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks
        return lambda v: first(v) and second(v)
    listed = tuple(checks)

    def every(v: Any) -> bool:
        for check in listed:  # noqa: SIM110 (a plain loop is faster than all() here)
            if not check(v):
                return False
        return True

    return every


def _compile(schema: Any, ctx: _Context) -> Check:
    if schema is True or schema == {}:
        return lambda v: True
    if schema is False:
        return lambda v: False
    if not isinstance(schema, Mapping):
        raise Unsupported("a schema that is not an object")
    unknown = set(schema) - _KEYWORDS
    if unknown:
        raise Unsupported(f"keywords {sorted(unknown)}")
    checks: list[Check] = []

    if "type" in schema:
        checks.append(_type_check(schema["type"]))

    if "enum" in schema:
        options = schema["enum"]
        if all(isinstance(o, str) for o in options):
            allowed = frozenset(options)
            checks.append(lambda v: isinstance(v, str) and v in allowed)
        else:
            members = tuple(options)
            checks.append(lambda v: any(_same(v, o) for o in members))

    if "const" in schema:
        constant = schema["const"]
        checks.append(lambda v: _same(v, constant))

    if "$ref" in schema:
        checks.append(_reference(schema["$ref"], ctx))

    object_check = _all(_object_checks(schema, ctx))
    if object_check is not None:
        checks.append(lambda v: not isinstance(v, dict) or object_check(v))

    array_check = _all(_array_checks(schema, ctx))
    if array_check is not None:
        checks.append(lambda v: not isinstance(v, list) or array_check(v))

    if "minLength" in schema or "maxLength" in schema:
        low, high = schema.get("minLength", 0), schema.get("maxLength")
        checks.append(lambda v: not isinstance(v, str) or (
            len(v) >= low and (high is None or len(v) <= high)))

    if "minimum" in schema or "maximum" in schema:
        minimum, maximum = schema.get("minimum"), schema.get("maximum")
        checks.append(lambda v: not _is_number(v) or (
            (minimum is None or v >= minimum) and (maximum is None or v <= maximum)))

    if "not" in schema:
        negated = _compile(schema["not"], ctx)
        checks.append(lambda v: not negated(v))

    if "anyOf" in schema:
        branches = [_compile(s, ctx) for s in schema["anyOf"]]
        checks.append(lambda v: any(b(v) for b in branches))

    if "oneOf" in schema:
        alternatives = [_compile(s, ctx) for s in schema["oneOf"]]
        checks.append(lambda v: sum(1 for b in alternatives if b(v)) == 1)

    return _all(checks) or (lambda v: True)


def _object_checks(schema: Mapping[str, Any], ctx: _Context) -> list[Check]:
    checks: list[Check] = []
    properties = {k: _compile(s, ctx) for k, s in (schema.get("properties") or {}).items()}
    if "required" in schema:
        required = tuple(schema["required"])
        checks.append(lambda v: all(k in v for k in required))
    if properties or "additionalProperties" in schema:
        extra = schema.get("additionalProperties", True)
        extra_check: Check | None = None if extra is True else _compile(extra, ctx)

        # One pass over the instance's members (not over every declared property):
        # combatants declare many optional fields and carry a few.
        def members(v: dict[str, Any]) -> bool:
            for key, value in v.items():
                check = properties.get(key, extra_check)
                if check is not None and not check(value):
                    return False
            return True

        checks.append(members)
    if "minProperties" in schema or "maxProperties" in schema:
        low, high = schema.get("minProperties", 0), schema.get("maxProperties")
        checks.append(lambda v: len(v) >= low and (high is None or len(v) <= high))
    if "propertyNames" in schema:
        name_check = _compile(schema["propertyNames"], ctx)
        checks.append(lambda v: all(name_check(k) for k in v))
    return checks


def _json_key(v: Any) -> Any:
    """A hashable key equal for values JSON calls equal (1 and 1.0 alike; true apart)."""
    if isinstance(v, bool):
        return ("b", v)
    if _is_number(v):
        return ("n", v)
    if isinstance(v, str):
        return ("s", v)
    if isinstance(v, list):
        return ("l", tuple(_json_key(x) for x in v))
    if isinstance(v, dict):
        return ("d", frozenset((k, _json_key(x)) for k, x in v.items()))
    return ("z", None)


def _unique(values: list[Any]) -> bool:
    """True when ``values`` are pairwise different as JSON values."""
    keys = [_json_key(v) for v in values]
    return len(set(keys)) == len(keys)


def _array_checks(schema: Mapping[str, Any], ctx: _Context) -> list[Check]:
    checks: list[Check] = []
    if schema.get("uniqueItems") is True:
        checks.append(_unique)
    if "items" in schema:
        item = _compile(schema["items"], ctx)

        def every_item(v: list[Any]) -> bool:
            for x in v:  # noqa: SIM110 (a plain loop is faster than all() here)
                if not item(x):
                    return False
            return True

        checks.append(every_item)
    if "minItems" in schema or "maxItems" in schema:
        low, high = schema.get("minItems", 0), schema.get("maxItems")
        checks.append(lambda v: len(v) >= low and (high is None or len(v) <= high))
    return checks


def compile_check(schema: Mapping[str, Any]) -> Check | None:
    """A predicate that is true only for values ``schema`` accepts, or ``None`` when the
    schema uses a keyword outside the compiled subset."""
    try:
        return _compile(schema, _Context(schema))
    except Unsupported:
        return None


class QuickValidator:
    """jsonschema's 2020-12 validator with the compiled quick yes in front of it.

    ``iter_errors`` of a value the quick check accepts yields nothing without asking
    jsonschema; anything else goes to jsonschema, which reports every problem.
    """

    def __init__(self, schema: Mapping[str, Any]) -> None:
        jsonschema.Draft202012Validator.check_schema(schema)
        self.schema = schema
        self.full = jsonschema.Draft202012Validator(schema)
        self.quick = compile_check(schema)

    def is_valid(self, value: Any) -> bool:
        if self.quick is not None and self.quick(value):
            return True
        return bool(self.full.is_valid(value))

    def iter_errors(self, value: Any) -> Iterator[jsonschema.ValidationError]:
        if self.quick is not None and self.quick(value):
            return iter(())
        return self.full.iter_errors(value)
