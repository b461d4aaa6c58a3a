"""A quick yes for params that are valid, compiled once from a method's JSON Schema.

jsonschema walks a schema keyword by keyword and builds a validator object per
sub-schema it enters; for a params object with a few dozen values that is tens of
microseconds per call, a large share of a small call. Most calls are valid, so each
method also gets a plain Python predicate written as source for its schema and compiled
once (``_Context`` below): when it says "valid" the call goes on; otherwise jsonschema
runs as before and reports the problems with their paths (and has the last word: nothing
it accepts is refused).

The engine uses the same predicates for exchange requests and combatants, the daemon
for method params.

Only a subset of JSON Schema 2020-12 is compiled (the keywords our schemas use:
``type``, ``properties``, ``required``, ``additionalProperties``, ``items``, ``enum``,
``const``, ``min/maxLength``, ``min/maxItems``, ``min/maxProperties``, ``minimum``,
``maximum``, ``pattern``, ``not``, ``allOf``, ``anyOf``, ``oneOf``, ``propertyNames``,
``uniqueItems``, local ``$ref`` into ``$defs``, ``$id`` and ``$schema`` at the root, and
annotations). A schema with any other keyword, or with ``$id`` or ``$schema`` below its
root, gets no predicate, and jsonschema alone decides (so does a schema nested deeper
than Python compiles the source). Each keyword follows the
specification's semantics exactly (a keyword applies only to instances of its type;
``1.0`` is an integer; ``true`` is not a number; ``1`` is not ``true`` in an ``enum``;
``pattern`` is Python's ``re.search``, as in jsonschema, but with ``$`` the end of the
string only (outside the multiline flag), as in ECMA-262: ``ecma_pattern``);
``tests/engine/test_schemacheck.py`` checks the predicates against ``Validator`` on
generated values.

``Validator`` is the jsonschema class every check uses (the engine's, the daemon's for
method params and plugin schemas, the adapters' for mapping files): jsonschema's own
2020-12 validator, changed so that describing a refused request (anyone with the token
can send one of 1 MiB) costs time in proportion to its size, and little of it:
``uniqueItems`` by hashing (jsonschema compares every pair of items it cannot sort:
2000 objects took 10 s, 8000 over four minutes); an array over its ``maxItems`` (an object
over its ``maxProperties``) reported by its size alone, without the keywords that look
at each item (member); a string over its ``maxLength`` reported without its
``pattern`` (which may backtrack); ``pattern`` reading ``$`` as ECMA-262 does (the end
of the string, never before a final newline: ``ecma_pattern``; ``patternProperties``
is left as jsonschema reads it); ``items`` and ``additionalProperties`` entering only
the items (members) that the quick yes of their subschema does not pass.
``first_errors`` takes at most ``MAX_ERRORS`` of its errors.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import jsonschema
import jsonschema.validators

Check = Callable[[Any], bool]

_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment",
                          "deprecated", "readOnly", "writeOnly"})
_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "items",
                       "enum", "const", "minLength", "maxLength", "minItems", "maxItems",
                       "minProperties", "maxProperties", "minimum", "maximum", "pattern",
                       "not", "allOf", "anyOf", "oneOf", "propertyNames", "uniqueItems",
                       "$ref", "$defs", "$schema", "$id"}) | _ANNOTATIONS
#: keywords compiled at the root only: below it they change what the subschema means
_ROOT_ONLY = frozenset({"$schema", "$id"})


class Unsupported(Exception):
    """The schema uses a keyword this compiler does not handle."""


def _ecma_source(pattern: str) -> str:
    """``pattern`` with each ``$`` that is an anchor written ``\\Z``: a JSON Schema
    pattern is an ECMA-262 regex, whose ``$`` (without the multiline flag) matches at
    the end of the string only, where Python's also matches before a final newline
    (``^[a-z]+$`` would take ``"abc\\n"``). A ``$`` escaped, or inside a character
    class, is the character itself and stays; so does one under the multiline flag
    (``(?m:…)``, a modifier of ECMA-262 2025 and Python alike, or Python's ``(?m)``),
    which matches before a line break in both."""
    out: list[str] = []
    i, in_class = 0, False
    # whether the multiline flag holds: the whole pattern's, then one per open group
    multiline = [_GLOBAL_MULTILINE.match(pattern) is not None]
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            out.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
            # Python reads a "]" first in the class ("[]a]", "[^]a]") as the character
            start = i + 2 if pattern.startswith("[^", i) else i + 1
            if pattern.startswith("]", start):
                out.append(pattern[i:start + 1])
                i = start + 1
                continue
        elif char == "(":
            flags = _SCOPED_FLAGS.match(pattern, i)
            on = multiline[-1]
            if flags is not None:
                on = "m" in flags["on"] or (on and "m" not in (flags["off"] or ""))
            multiline.append(on)
        elif char == ")" and len(multiline) > 1:
            multiline.pop()
        elif char == "$" and not multiline[-1]:
            char = r"\Z"
        out.append(char)
        i += 1
    return "".join(out)


#: Python's global inline flags at the start of a pattern, with multiline among them
_GLOBAL_MULTILINE = re.compile(r"\(\?[aiLsux]*m[aiLmsux]*\)")
#: a group with scoped flags (``(?m:``, ``(?i-m:``), the flags turned on and off
_SCOPED_FLAGS = re.compile(r"\(\?(?P<on>[aiLmsux]*)(?:-(?P<off>[imsx]+))?:")


@functools.lru_cache(maxsize=1024)
def ecma_pattern(pattern: str) -> re.Pattern[str]:
    """``pattern`` (a JSON Schema ``pattern``) compiled for ``search`` with ECMA-262's
    ``$`` (``_ecma_source``); ``re.error`` if Python cannot compile it."""
    return re.compile(_ecma_source(pattern))


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


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
    if set(map(type, values)) <= {str}:
        # The usual case (mode and condition names): strings are equal in JSON exactly
        # when they are in Python.
        return len(set(values)) == len(values)
    keys = [_json_key(v) for v in values]
    return len(set(keys)) == len(keys)


def _reference_name(ref: Any, ctx: _Context) -> str:
    """The function checking a local ``#/$defs/<name>`` reference (compiled once, so a
    recursive reference simply calls it)."""
    prefix = "#/$defs/"
    if not isinstance(ref, str) or not ref.startswith(prefix):
        raise Unsupported(f"$ref {ref!r}")
    name = ref[len(prefix):]
    target = (ctx.root.get("$defs") or {}).get(name)
    # "/" and "~" are JSON Pointer syntax, "%" a URI escape (the fragment is
    # percent-decoded first): the name as written is then not the definition meant.
    if target is None or "/" in name or "~" in name or "%" in name:
        raise Unsupported(f"$ref {ref!r}")
    if name not in ctx.refs:
        ctx.refs[name] = f"_ref{len(ctx.refs)}"
        ctx.define(ctx.refs[name], target)
    return ctx.refs[name]


class _Context:
    """Writes the source of the check functions for a root schema.

    Every sub-schema is checked inline in its parent's function (a property's value in
    a local variable, an array's items in a loop), so checking a whole combatant is
    one call; only ``$ref`` targets (which may recurse) and the branches of ``not``,
    ``anyOf`` and ``oneOf`` get functions of their own. Statements ``return False`` at
    the first failure."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.blocks: list[str] = []
        self.constants: dict[str, Any] = {}
        self.refs: dict[str, str] = {}
        self.count = 0

    def constant(self, value: Any) -> str:
        name = f"_k{len(self.constants)}"
        self.constants[name] = value
        return name

    def local(self) -> str:
        self.count += 1
        return f"_v{self.count}"

    def function(self, schema: Any) -> str:
        """The name of a new function checking ``schema``."""
        self.count += 1
        name = f"_s{self.count}"
        self.define(name, schema)
        return name

    def define(self, name: str, schema: Any) -> None:
        body = self.statements(schema, "v")
        self.blocks.append("\n".join([f"def {name}(v):", *_indent(body), "    return True"]))

    def statements(self, schema: Any, v: str) -> list[str]:
        """Statements that ``return False`` when the value in variable ``v`` fails
        ``schema``."""
        if schema is True or schema == {}:
            return []
        if schema is False:
            return ["return False"]
        if not isinstance(schema, Mapping):
            raise Unsupported("a schema that is not an object")
        unknown = set(schema) - _KEYWORDS
        if unknown:
            raise Unsupported(f"keywords {sorted(unknown)}")
        if schema is not self.root and not _ROOT_ONLY.isdisjoint(schema):
            # Below the root, $id moves the base its references are read against and
            # $schema picks another draft; every $ref here is read against the root
            # and every keyword as 2020-12 has it.
            raise Unsupported(f"{sorted(_ROOT_ONLY & set(schema))} in a subschema")
        out: list[str] = []
        # After a single "type" the value's kind is known: the keywords of that kind
        # need no guard, those of other kinds cannot apply.
        known = schema.get("type") if isinstance(schema.get("type"), str) else None

        def when(kind: tuple[str, ...], test: str, body: list[str]) -> list[str]:
            if known is None:
                return _guarded(test, body)
            return body if known in kind else []

        if "type" in schema:
            out.append(f"if not ({self.type_test(schema['type'], v)}): return False")
        if "enum" in schema:
            options = schema["enum"]
            if all(isinstance(o, str) for o in options):
                allowed = self.constant(frozenset(options))
                kind_test = "" if known == "string" else f"isinstance({v}, str) and "
                out.append(f"if not ({kind_test}{v} in {allowed}): return False")
            else:
                members = self.constant(tuple(options))
                out.append(f"if not any(_same({v}, o) for o in {members}): return False")
        if "const" in schema:
            out.append(f"if not _same({v}, {self.constant(schema['const'])}): return False")
        if "$ref" in schema:
            out.append(f"if not {_reference_name(schema['$ref'], self)}({v}): return False")
        out += when(("object",), f"isinstance({v}, dict)", self.object_statements(schema, v))
        out += when(("array",), f"isinstance({v}, list)", self.array_statements(schema, v))
        if lengths := self.outside(schema, "minLength", "maxLength", f"len({v})"):
            out += when(("string",), f"isinstance({v}, str)", [f"if {lengths}: return False"])
        if "pattern" in schema:
            # As ``_pattern`` does it: ``re.search`` (anywhere in the string), ``$``
            # the end of the string only, as ECMA-262 reads it.
            try:
                search = self.constant(ecma_pattern(schema["pattern"]).search)
            except (re.error, TypeError):
                raise Unsupported(f"pattern {schema['pattern']!r}") from None
            out += when(("string",), f"isinstance({v}, str)",
                        [f"if {search}({v}) is None: return False"])
        if numbers := self.outside(schema, "minimum", "maximum", v):
            out += when(("integer", "number"),
                        f"isinstance({v}, int | float) and not isinstance({v}, bool)",
                        [f"if {numbers}: return False"])
        if "not" in schema:
            out.append(f"if {self.function(schema['not'])}({v}): return False")
        for subschema in schema.get("allOf") or ():
            # Every branch must hold: its statements run here, one after the other.
            out += self.statements(subschema, v)
        if "anyOf" in schema:
            names = ", ".join(self.function(s) for s in schema["anyOf"]) + ","
            out.append(f"if not any(f({v}) for f in ({names})): return False")
        if "oneOf" in schema:
            names = ", ".join(self.function(s) for s in schema["oneOf"]) + ","
            out.append(f"if sum(1 for f in ({names}) if f({v})) != 1: return False")
        return out

    def outside(self, schema: Mapping[str, Any], low: str, high: str, measured: str) -> str:
        """A test that ``measured`` is below ``schema[low]`` or above ``schema[high]``
        (the bounds given; empty for none)."""
        return " or ".join(f"{measured} {op} {self.constant(schema[key])}"
                           for key, op in ((low, "<"), (high, ">")) if key in schema)

    @staticmethod
    def type_test(spec: Any, v: str) -> str:
        names = [spec] if isinstance(spec, str) else list(spec)
        for name in names:
            if name not in _TYPE_TESTS:
                raise Unsupported(f"type {name!r}")
        return " or ".join(f"({_TYPE_TESTS[n].format(v=v)})" for n in names) or "False"

    def object_statements(self, schema: Mapping[str, Any], v: str) -> list[str]:
        out: list[str] = []
        for key in schema.get("required") or ():
            out.append(f"if {self.constant(key)} not in {v}: return False")
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties", True)
        if extra is not True:
            declared = self.constant(frozenset(properties))
            if extra is False:
                out.append(f"if not {v}.keys() <= {declared}: return False")
            else:
                key, value = self.local(), self.local()
                # (no loop for a schema that admits every member: an empty body)
                if body := _guarded(f"{key} not in {declared}", self.statements(extra, value)):
                    out += [f"for {key}, {value} in {v}.items():", *_indent(body)]
        for name, subschema in properties.items():
            value = self.local()
            body = self.statements(subschema, value)
            if body:
                out += [f"{value} = {v}.get({self.constant(name)}, _MISSING)",
                        *_guarded(f"{value} is not _MISSING", body)]
        if sizes := self.outside(schema, "minProperties", "maxProperties", f"len({v})"):
            out.append(f"if {sizes}: return False")
        if "propertyNames" in schema:
            key = self.local()
            if body := self.statements(schema["propertyNames"], key):
                out += [f"for {key} in {v}:", *_indent(body)]
        return out

    def array_statements(self, schema: Mapping[str, Any], v: str) -> list[str]:
        out: list[str] = []
        if sizes := self.outside(schema, "minItems", "maxItems", f"len({v})"):
            out.append(f"if {sizes}: return False")
        if schema.get("uniqueItems") is True:
            out.append(f"if not _unique({v}): return False")
        if "items" in schema:
            item = self.local()
            body = self.statements(schema["items"], item)
            if body:
                out += [f"for {item} in {v}:", *_indent(body)]
        return out

    def build(self) -> Check:
        top = self.function(self.root)
        namespace: dict[str, Any] = {"_same": _same, "_unique": _unique,
                                     "_MISSING": _MISSING, **self.constants}
        exec(compile("\n\n".join(self.blocks), "<schemacheck>", "exec"), namespace)
        check: Check = namespace[top]
        return check


_MISSING = object()


def _indent(lines: list[str]) -> list[str]:
    return ["    " + line for line in lines]


def _guarded(test: str, body: list[str]) -> list[str]:
    return [f"if {test}:", *_indent(body)] if body else []


_TYPE_TESTS = {
    "object": "isinstance({v}, dict)",
    "array": "isinstance({v}, list)",
    "string": "isinstance({v}, str)",
    "integer": "isinstance({v}, int) and not isinstance({v}, bool) or "
               "isinstance({v}, float) and {v}.is_integer()",
    "number": "isinstance({v}, int | float) and not isinstance({v}, bool)",
    "boolean": "isinstance({v}, bool)",
    "null": "{v} is None",
}


def compile_check(schema: Mapping[str, Any]) -> Check | None:
    """A predicate that is true only for values ``schema`` accepts, or ``None`` when the
    schema uses a keyword outside the compiled subset or nests deeper than Python
    compiles its source."""
    # (SyntaxError: Python compiles at most 20 nested blocks and 100 levels of
    # indentation, and each array or object level takes a block or two)
    try:
        return _Context(schema).build()
    except (Unsupported, SyntaxError):
        return None


# -- jsonschema, bounded ---------------------------------------------------------------
#: Most errors ``first_errors`` takes. jsonschema builds each one (some tens of
#: microseconds apiece), and a 1 MiB request can hold hundreds of thousands of bad
#: values: describing them all took half a minute. A thousand take milliseconds.
MAX_ERRORS = 1000

_Keyword = Callable[[Any, Any, Any, Any], Iterable[jsonschema.ValidationError] | None]
_DRAFT: Mapping[str, _Keyword] = jsonschema.Draft202012Validator.VALIDATORS
#: keywords that look at every item of an array, and at every member of an object
_EACH_ITEM = ("items", "prefixItems", "contains", "unevaluatedItems")
_EACH_MEMBER = ("additionalProperties", "patternProperties", "propertyNames",
                "unevaluatedProperties")


def _oversized(instance: Any, schema: Mapping[str, Any]) -> bool:
    """Whether ``instance`` is an array over the schema's ``maxItems`` or an object over
    its ``maxProperties``: refused by that keyword already, whatever its items hold."""
    if isinstance(instance, list):
        limit = schema.get("maxItems")
    elif isinstance(instance, dict):
        limit = schema.get("maxProperties")
    else:
        return False
    return isinstance(limit, int | float) and not isinstance(limit, bool) \
        and len(instance) > limit


def _unless_oversized(keyword: _Keyword) -> _Keyword:
    """``keyword``, skipped for an oversized value (``_oversized``): the value is
    refused either way, and checking each of its items (members) would cost time in
    proportion to a size the schema does not allow."""

    def check(validator: Any, value: Any, instance: Any, schema: Any
              ) -> Iterable[jsonschema.ValidationError] | None:
        if isinstance(schema, Mapping) and _oversized(instance, schema):
            return None
        return keyword(validator, value, instance, schema)

    return check


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any
                  ) -> Iterator[jsonschema.ValidationError]:
    """``uniqueItems`` by hashing (``_unique``): jsonschema compares every pair of items
    it cannot sort (objects, mixed types), which is quadratic."""
    if unique is True and isinstance(instance, list) and not _unique(instance):
        yield jsonschema.ValidationError(f"{instance!r} has non-unique elements")


class _Identity:
    """A schema as a cache key: the same object, not an equal one (a dict cannot be a
    key, and two equal schemas may sit where a ``$ref`` resolves differently)."""

    __slots__ = ("schema",)

    def __init__(self, schema: Any) -> None:
        self.schema = schema

    def __hash__(self) -> int:
        return id(self.schema)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Identity) and other.schema is self.schema


#: what makes a subschema mean something else on its own than where it sits (a ``$ref``
#: resolves against the whole document, ``$schema`` picks the draft)
_CONTEXTUAL = frozenset({"$ref", "$dynamicRef", "$id", "$anchor", "$dynamicAnchor",
                         "$schema"})


def _self_contained(schema: Any) -> bool:
    """Whether no object inside ``schema`` has a ``_CONTEXTUAL`` key."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            if not _CONTEXTUAL.isdisjoint(node):
                return False
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return True


@functools.lru_cache(maxsize=256)
def _alone(key: _Identity) -> Check | None:
    """The quick yes of one self-contained subschema, or ``None`` (compiled once per
    schema object: the cache holds the object, so its id is not reused meanwhile)."""
    if not isinstance(key.schema, Mapping) or not _self_contained(key.schema):
        return None
    try:
        return compile_check(key.schema)
    except RecursionError:
        # Nested deeper than the stack left lets its source be written (it is compiled
        # here from inside the walk of a value): jsonschema alone decides. Nothing else
        # is raised by a schema the daemon took: a plugin's is refused at load when its
        # check against the meta-schema fails on a pattern Python's re cannot compile
        # (companion.registry), and the engine's own are compiled by its tests.
        return None


def _items(validator: Any, items: Any, instance: Any, schema: Any
           ) -> Iterable[jsonschema.ValidationError] | None:
    """2020-12 ``items``, descending only into the items the subschema's quick yes does
    not pass: jsonschema builds a validator for each item it enters (about 13 µs), so
    describing a refused request walked every good item of a long array (330 000
    combatants ``{}`` took 5 s)."""
    quick = _alone(_Identity(items))
    if quick is None or not isinstance(instance, list):
        return _DRAFT["items"](validator, items, instance, schema)
    prefix = len(schema.get("prefixItems", ()))
    return (error for index in range(prefix, len(instance)) if not quick(instance[index])
            for error in validator.descend(instance[index], items, path=index))


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any
                           ) -> Iterable[jsonschema.ValidationError] | None:
    """``additionalProperties``, descending only into the members its subschema's quick
    yes does not pass (as ``_items``)."""
    quick = _alone(_Identity(extra))
    if quick is not None and isinstance(instance, dict):
        instance = {name: value for name, value in instance.items() if not quick(value)}
    return _DRAFT["additionalProperties"](validator, extra, instance, schema)


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any
             ) -> Iterable[jsonschema.ValidationError] | None:
    """``pattern``, skipped for a string over the schema's ``maxLength`` (refused by
    that keyword already). Python's ``re`` backtracks: a pattern as plain as
    ``[a-z]+:[0-9]+`` takes time in the square of the string's length where it does not
    match (a 1 MiB string: minutes, with every client waiting), so only strings
    ``maxLength`` allows reach it. The quick yes checks a schema's lengths before its
    pattern too. Only the ``maxLength`` of the pattern's own schema object counts: one
    in another ``allOf`` branch, or beside a ``$ref`` to the pattern's schema, lets the
    pattern run (docs/PLUGINS.md says so)."""
    limit = schema.get("maxLength") if isinstance(schema, Mapping) else None
    if isinstance(instance, str) and isinstance(limit, int | float) \
            and not isinstance(limit, bool) and len(instance) > limit:
        return None
    if isinstance(instance, str) and isinstance(pattern, str) \
            and not ecma_pattern(pattern).search(instance):
        # jsonschema's own message (its ``re.search`` lets ``$`` match before a final
        # newline: ECMA-262's does not, nor does this one's)
        return iter([jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")])
    return None


def _bounded_keywords() -> dict[str, _Keyword]:
    keywords = {name: _unless_oversized(_DRAFT[name]) for name in _EACH_ITEM + _EACH_MEMBER}
    keywords["items"] = _unless_oversized(_items)
    keywords["additionalProperties"] = _unless_oversized(_additional_properties)
    keywords["uniqueItems"] = _unless_oversized(_unique_items)
    keywords["pattern"] = _pattern
    return keywords


#: jsonschema's 2020-12 validator, bounded (see the module). Registered for the 2020-12
#: ``$schema``: jsonschema picks a subschema's class by its ``$schema`` (a plugin's
#: subschema may name it, and the meta-schema does), which would otherwise go back to
#: the unbounded class below that subschema. (The stubs leave ``extend`` untyped.)
Validator: type[jsonschema.protocols.Validator] = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
    jsonschema.Draft202012Validator, _bounded_keywords(), version="draft2020-12")


def first_errors(errors: Iterable[jsonschema.ValidationError], limit: int = MAX_ERRORS
                 ) -> list[jsonschema.ValidationError]:
    """At most ``limit`` of ``errors`` (a validator's ``iter_errors``, which finds them
    one by one), sorted by where they are in the value."""
    found = list(itertools.islice(errors, limit))
    return sorted(found, key=lambda e: list(e.absolute_path))


class QuickValidator:
    """``Validator`` with the compiled quick yes in front of it.

    ``iter_errors`` of a value the quick check accepts yields nothing without asking
    jsonschema; anything else goes to jsonschema, which reports the problems.

    ``schema`` is checked against the meta-schema first (``SchemaError`` if it is not a
    schema) unless ``check_schema`` is false: for the engine's own schemas, which its
    tests check (``tests/engine/test_schemas.py``), so starting the daemon does not pay
    for it again.
    """

    def __init__(self, schema: Mapping[str, Any], *, check_schema: bool = True) -> None:
        if check_schema:
            jsonschema.Draft202012Validator.check_schema(schema)
        self.schema = schema
        self.full = Validator(schema)
        self.quick = compile_check(schema)

    def is_valid(self, value: Any) -> bool:
        if self.quick is not None and self.quick(value):
            return True
        return bool(self.full.is_valid(value))

    def iter_errors(self, value: Any) -> Iterator[jsonschema.ValidationError]:
        if self.quick is not None and self.quick(value):
            return iter(())
        return self.full.iter_errors(value)
