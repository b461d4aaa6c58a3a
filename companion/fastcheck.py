"""A quick yes for params that are valid, compiled once from a method's JSON Schema.

jsonschema walks a schema keyword by keyword and builds a validator object per
sub-schema it enters; for a params object with a few dozen values that is tens of
microseconds per call, a large share of a small call. Most calls are valid, so each
method also gets a plain Python predicate compiled from its schema: when it says "valid"
the call goes on; otherwise jsonschema runs as before and reports every problem with its
path (and has the last word: nothing it accepts is refused).

Only a subset of JSON Schema 2020-12 is compiled (the keywords our params schemas use:
``type``, ``properties``, ``required``, ``additionalProperties``, ``items``, ``enum`` of
strings, ``min/maxLength``, ``min/maxItems``, ``min/maxProperties``, ``minimum``,
``maximum``, ``not``, ``anyOf``, and annotations). A schema with any other keyword gets
no predicate, and jsonschema alone decides. Each keyword follows the specification's
semantics exactly (a keyword applies only to instances of its type; ``1.0`` is an
integer; ``true`` is not a number); ``tests/companion/test_fastcheck.py`` checks the
predicates against jsonschema on generated values.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment",
                          "deprecated", "readOnly", "writeOnly"})
_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "items",
                       "enum", "minLength", "maxLength", "minItems", "maxItems",
                       "minProperties", "maxProperties", "minimum", "maximum", "not",
                       "anyOf"}) | _ANNOTATIONS


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


def _compile(schema: Any) -> Check:
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
        if not all(isinstance(o, str) for o in options):
            raise Unsupported("enum of other values than strings")
        allowed = frozenset(options)
        checks.append(lambda v: isinstance(v, str) and v in allowed)

    object_checks = _object_checks(schema)
    if object_checks:
        checks.append(lambda v: not isinstance(v, dict) or all(c(v) for c in object_checks))

    array_checks = _array_checks(schema)
    if array_checks:
        checks.append(lambda v: not isinstance(v, list) or all(c(v) for c in array_checks))

    if "minLength" in schema or "maxLength" in schema:
        low, high = schema.get("minLength", 0), schema.get("maxLength")
        checks.append(lambda v: not isinstance(v, str) or (
            len(v) >= low and (high is None or len(v) <= high)))

    if "minimum" in schema or "maximum" in schema:
        minimum, maximum = schema.get("minimum"), schema.get("maximum")
        checks.append(lambda v: not _is_number(v) or (
            (minimum is None or v >= minimum) and (maximum is None or v <= maximum)))

    if "not" in schema:
        negated = _compile(schema["not"])
        checks.append(lambda v: not negated(v))

    if "anyOf" in schema:
        branches = [_compile(s) for s in schema["anyOf"]]
        checks.append(lambda v: any(b(v) for b in branches))

    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(c(v) for c in checks)


def _object_checks(schema: Mapping[str, Any]) -> list[Check]:
    checks: list[Check] = []
    properties = {k: _compile(s) for k, s in (schema.get("properties") or {}).items()}
    if "required" in schema:
        required = tuple(schema["required"])
        checks.append(lambda v: all(k in v for k in required))
    if properties:
        items = tuple(properties.items())
        checks.append(lambda v: all(c(v[k]) for k, c in items if k in v))
    if "additionalProperties" in schema:
        extra = schema["additionalProperties"]
        known = frozenset(properties)
        if extra is False:
            checks.append(lambda v: known.issuperset(v))
        else:
            extra_check = _compile(extra)
            checks.append(lambda v: all(extra_check(x) for k, x in v.items()
                                        if k not in known))
    if "minProperties" in schema or "maxProperties" in schema:
        low, high = schema.get("minProperties", 0), schema.get("maxProperties")
        checks.append(lambda v: len(v) >= low and (high is None or len(v) <= high))
    return checks


def _array_checks(schema: Mapping[str, Any]) -> list[Check]:
    checks: list[Check] = []
    if "items" in schema:
        item = _compile(schema["items"])
        checks.append(lambda v: all(item(x) for x in v))
    if "minItems" in schema or "maxItems" in schema:
        low, high = schema.get("minItems", 0), schema.get("maxItems")
        checks.append(lambda v: len(v) >= low and (high is None or len(v) <= high))
    return checks


def compile_check(schema: Mapping[str, Any]) -> Check | None:
    """A predicate that is true only for values ``schema`` accepts, or ``None`` when the
    schema uses a keyword outside the compiled subset."""
    try:
        return _compile(schema)
    except Unsupported:
        return None
