"""The method table: every JSON-RPC method with its params schema, compiled once.

Like pygls's feature registry, building a table fails at once on a duplicate name, a
handler that is not ``async def``, a member of the wrong type or a schema that cannot be
used, so a mistake in a core method stops the daemon at import and a mistake in a plugin
is caught while it loads (and reported) instead of on some later request.

A schema "cannot be used" when it fails the meta-schema, or passes it but would fail
every call that reaches the fault: a ``$ref`` that resolves nowhere (a remote one is
never fetched: validators get a registry without retrieval), a loop of ``$ref`` (or
``allOf``/``anyOf``/... ) that never reaches a keyword of the value itself (validation
would recurse without end), or nesting so deep that checking it runs out of stack.
``compile_schema`` makes these checks; the plugin loader uses it for a plugin system's
schemas too.

A plugin method's handler answers with an error code of its own by raising
``MethodError``; ``errors.to_rpc_error`` passes on only a code the method declares
(``MethodSpec.errors``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jsonschema
from jsonschema import Draft202012Validator
from jsonschema_specifications import REGISTRY as META_SCHEMAS  # type: ignore[import-untyped]
from referencing import Registry
from referencing.exceptions import Unresolvable
from referencing.jsonschema import DRAFT202012

from engine.errors import Problem, json_text, pointer
from engine.schemacheck import Check, Validator, compile_check
from engine.system import schema_problems

from .jsontext import encode

if TYPE_CHECKING:
    from .services import Context

JSON = dict[str, Any]
Handler = Callable[["Context", JSON], Awaitable[Any]]

#: ``namespace.verb``: lower-case namespace, then a dot, then the verb. Matched whole
#: (``fullmatch``): ``$`` would let a name end in a newline.
METHOD_NAME = re.compile(r"[a-z][a-z0-9-]*\.[a-z][a-zA-Z0-9_.-]*")
#: Where validators look up a ``$ref``: no retrieval, so a remote ``$ref`` is never
#: fetched (jsonschema's default registry would fetch it over the network).
NO_RETRIEVAL: Registry[Any] = Registry()
#: The same for our own checks, with the JSON Schema meta-schemas (jsonschema adds them
#: to any registry it is given, so a ``$ref`` to one is fine).
_LOOKUP: Registry[Any] = META_SCHEMAS.combine(NO_RETRIEVAL)
#: Keywords that apply their subschemas to the value itself (not to a part of it): a
#: loop through only these (and ``$ref``) never ends.
_IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf")
_IN_PLACE_ONES = ("not", "if", "then", "else")


class PreparedJSON:
    """A method result serialised once (``text`` is UTF-8 JSON), for answers that never
    change while the daemon runs, or written piece by piece (``written``); the RPC
    layer splices it into the response."""

    __slots__ = ("text", "value")

    def __init__(self, value: Any) -> None:
        #: the result (``None`` when it was ``written`` as text)
        self.value = value
        self.text = encode(value)

    @classmethod
    def written(cls, text: bytes) -> PreparedJSON:
        """A result its method wrote as JSON text itself (``encounter.log`` writes each
        step as it reads it, so a long log's steps are never all held parsed)."""
        prepared = cls.__new__(cls)
        prepared.value = None
        prepared.text = text
        return prepared


class RegistryError(Exception):
    """A method that cannot be registered; the message is written by us, safe to show."""


class SchemaUnusable(Exception):
    """A schema that cannot be used; the message (written by us) says why, in words
    that follow "the schema": "does not compile", "has a $ref that resolves nowhere ..."."""


class MethodError(Exception):
    """Raised by a plugin method's handler to answer the call with an error of its own.

    The call is answered ``{code, message, data}`` as given (``data`` ``{}`` when it is
    ``None``) when ``code`` is one the method declares in ``MethodSpec.errors`` and not a
    JSON-RPC or core code of the daemon, ``message`` is text of 1 to
    ``errors.MAX_PLUGIN_ERROR_MESSAGE`` characters and ``data`` is ``None`` or a JSON
    object of at most ``errors.MAX_PLUGIN_ERROR_DATA`` bytes as JSON; otherwise it is
    -32603 with an error id, and the log says why. Raised anywhere else (by a plugin
    system's ``resolve``, say), it is -32603 too."""

    def __init__(self, code: int, message: str, data: Mapping[str, Any] | None = None
                 ) -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message
        self.data = data


@dataclass(frozen=True)
class MethodSpec:
    """One JSON-RPC method: ``name`` (``namespace.verb``), the JSON Schema of its params
    object, the ``async`` handler ``(context, params) -> result``, a description, and
    optionally the schema of its result (for the OpenRPC document)."""

    name: str
    params: Mapping[str, Any]
    handler: Handler
    description: str
    result: Mapping[str, Any] | None = None
    #: JSON-RPC error codes the method may answer with besides -32602/-32603 (a
    #: plugin's handler answers with a code of its own by raising ``MethodError``).
    errors: tuple[int, ...] = field(default_factory=tuple)
    #: True when the handler also checks the params (its ``{adapter, data}`` combatants
    #: imported) against the named system's ``request_schema``: the OpenRPC document
    #: then gives each system's schema too
    checked_by_system: bool = False
    #: with ``checked_by_system``, the ``System`` method that gives that schema: one of
    #: ``SYSTEM_SCHEMAS`` (the built-in ``exchange.end_round``,
    #: ``exchange.round_end_choices`` and ``combatants.rest`` are checked against
    #: ``end_round_schema``, ``round_end_choices_schema`` and ``rest_schema``)
    system_schema: str = "request_schema"


#: The ``System`` methods a ``MethodSpec`` may name as its ``system_schema``.
SYSTEM_SCHEMAS = ("request_schema", "end_round_schema", "round_end_choices_schema",
                  "rest_schema")


@dataclass(frozen=True)
class Registered:
    """A method ready to dispatch: its spec and its compiled params validator."""

    spec: MethodSpec
    validator: jsonschema.protocols.Validator
    #: True when ``{}`` is valid, so a call without params skips validation.
    accepts_empty: bool
    #: the quick yes compiled from the schema (``engine.schemacheck``), when it can be
    fast: Check | None = None
    #: True for a plugin's method (added after the core table): the RPC layer bounds its
    #: handler's time
    plugin: bool = False

    def problems(self, params: JSON) -> list[Problem]:
        """The ways ``params`` fails the method's schema (JSON Pointer paths; the first
        ``MAX_ERRORS``, ``schema_problems``)."""
        if not params and self.accepts_empty:
            return []
        if self.fast is not None and self.fast(params):
            return []
        # jsonschema has the last word, and names the problems (``schema_problems``).
        return schema_problems(self.validator, params)


def _shape_problem(spec: Any) -> str | None:
    """Why ``spec`` is not a ``MethodSpec`` of the declared member types, or ``None``."""
    if not isinstance(spec, MethodSpec):
        return f"lists a {type(spec).__name__} among its methods, not a MethodSpec"
    if not isinstance(spec.name, str) or not METHOD_NAME.fullmatch(spec.name):
        return f"method name {json_text(spec.name, 200)} is not of the form namespace.verb"
    name = spec.name
    if not inspect.iscoroutinefunction(spec.handler):
        return f"method {name}: the handler must be an async function"
    if not isinstance(spec.params, Mapping) or spec.params.get("type") != "object":
        return f"method {name}: the params schema must describe an object"
    if not isinstance(spec.description, str):
        return f"method {name}: the description must be a string"
    if spec.result is not None and not isinstance(spec.result, Mapping):
        return f"method {name}: the result schema must be an object (or None)"
    if not isinstance(spec.errors, tuple | list) or not all(
            isinstance(code, int) and not isinstance(code, bool) for code in spec.errors):
        return f"method {name}: errors must be a tuple of integer error codes"
    if not isinstance(spec.checked_by_system, bool):
        return f"method {name}: checked_by_system must be true or false"
    if spec.system_schema not in SYSTEM_SCHEMAS:
        return f"method {name}: system_schema must be one of {', '.join(SYSTEM_SCHEMAS)}"
    return None


def _reference_problem(schema: Mapping[str, Any]) -> str | None:
    """A ``$ref`` in ``schema`` that resolves nowhere, or a loop of references that
    applies to the same value without end; ``None`` when there is neither.

    A walk (not recursion: the schema may nest deeply) over every subschema, each with
    the resolver of its base URI (a nested ``$id`` moves it), then a depth-first search
    for a cycle among the edges that stay on the same value: ``$ref`` and the in-place
    applicators."""
    root = DRAFT202012.create_resource(schema)
    start = _LOOKUP.resolver_with_root(root)
    # id(subschema) -> subschemas applied to the same value (a $ref's target included)
    in_place: dict[int, list[int]] = {}
    seen: set[int] = set()
    stack: list[tuple[Any, Any]] = [(schema, start)]
    while stack:
        contents, resolver = stack.pop()
        if id(contents) in seen or not isinstance(contents, Mapping):
            continue
        seen.add(id(contents))
        edges = in_place.setdefault(id(contents), [])
        ref = contents.get("$ref")
        if isinstance(ref, str):
            try:
                resolved = resolver.lookup(ref)
            except Unresolvable:
                return f"has a $ref that resolves nowhere ({json_text(ref[:100], 300)}; remote " \
                       "schemas are never fetched)"
            edges.append(id(resolved.contents))
            stack.append((resolved.contents, resolved.resolver))
        for keyword in _IN_PLACE_LISTS:
            items = contents.get(keyword)
            if isinstance(items, list):
                edges.extend(id(item) for item in items)
        for keyword in _IN_PLACE_ONES:
            if keyword in contents:
                edges.append(id(contents[keyword]))
        dependent = contents.get("dependentSchemas")
        if isinstance(dependent, Mapping):
            edges.extend(id(item) for item in dependent.values())
        for sub in DRAFT202012.subresources_of(contents):
            stack.append((sub, resolver.in_subresource(DRAFT202012.create_resource(sub))))
    # Colours: absent = not visited, 1 = on the current path, 2 = done.
    colour: dict[int, int] = {}
    for node in in_place:
        if node in colour:
            continue
        path: list[tuple[int, Iterator[int]]] = [(node, iter(in_place[node]))]
        colour[node] = 1
        while path:
            current, todo = path[-1]
            step = next(todo, None)
            if step is None:
                colour[current] = 2
                path.pop()
            elif colour.get(step) == 1:
                return "has a loop of $ref that never reaches the value (validating " \
                       "would never end)"
            elif step not in colour:
                colour[step] = 1
                path.append((step, iter(in_place.get(step, ()))))
    return None


@dataclass(frozen=True)
class CompiledSchema:
    """A schema ready to check values: its ``Validator`` (no retrieval), whether
    ``{}`` is valid, and the quick yes compiled from it when it can be."""

    validator: jsonschema.protocols.Validator
    accepts_empty: bool
    fast: Check | None

    def problems(self, value: Any) -> list[Problem]:
        """The ways ``value`` fails the schema (JSON Pointer paths; the first
        ``MAX_ERRORS``, ``schema_problems``)."""
        if self.fast is not None and self.fast(value):
            return []
        return schema_problems(self.validator, value)


def _schema_place(path: Iterable[Any]) -> str:
    """Where in a schema a meta-schema error is, as a JSON Pointer (at most 100
    characters)."""
    place = pointer("", *path)
    if not place:
        return "the schema itself"
    return "the value at " + (place if len(place) <= 100 else place[:99] + "…")


def schema_problem(schema: Any) -> str | None:
    """Why ``schema`` cannot be used (``SchemaUnusable``'s words), or ``None``: it fails
    the meta-schema, has a ``$ref`` that resolves nowhere or a loop of them, is nested
    too deeply to check, or holds a value JSON cannot (a date as a ``default``: the
    meta-schema takes any value there, and ``rpc.discover`` could not be written)."""
    try:
        encode(schema)
    except (TypeError, ValueError):
        return "holds a value that is not JSON (a date, bytes or a set, say)"
    except RecursionError:
        return "is nested too deeply to check"
    try:
        Draft202012Validator.check_schema(schema)
        return _reference_problem(schema)
    except jsonschema.SchemaError as exc:
        # Where, so its author can find it; the meta-schema's own words quote the
        # plugin's values, so only the place is said.
        return f"does not compile (the meta-schema refuses {_schema_place(exc.path)})"
    except RecursionError:
        return "is nested too deeply to check"
    except Exception as exc:
        # (a fault of the checking libraries on some odd schema: still the plugin's)
        return f"cannot be checked ({type(exc).__name__})"


def compile_schema(schema: Mapping[str, Any], check: bool = True) -> CompiledSchema:
    """``schema`` compiled, or ``SchemaUnusable`` saying why it cannot be used.
    ``check=False`` skips ``schema_problem``: for schemas the tests check."""
    problem = schema_problem(schema) if check else None
    if problem is not None:
        raise SchemaUnusable(problem)
    try:
        validator = Validator(schema, registry=NO_RETRIEVAL)
        # Exercised once now, so a schema that fails every call fails here instead.
        accepts_empty = validator.is_valid({})
        fast = compile_check(schema)
    except RecursionError:
        raise SchemaUnusable("is nested too deeply to check") from None
    except Exception as exc:
        raise SchemaUnusable(f"cannot be used ({type(exc).__name__})") from None
    return CompiledSchema(validator, accepts_empty, fast)


def compile_method(spec: MethodSpec, check_schemas: bool = True, *,
                   plugin: bool = False) -> Registered:
    """Check ``spec`` and compile its validator; ``RegistryError`` when it cannot be used.

    ``check_schemas=False`` skips checking the params and result schemas against the
    meta-schema and for references that cannot work: for the core methods, whose
    schemas the tests check (the OpenRPC document test), so that a start does not pay
    for it again. ``plugin`` marks a plugin's method (``Registered.plugin``)."""
    problem = _shape_problem(spec)
    if problem is not None:
        raise RegistryError(problem)
    try:
        compiled = compile_schema(spec.params, check_schemas)
    except SchemaUnusable as exc:
        raise RegistryError(f"method {spec.name}: the params schema {exc}") from None
    if spec.result is not None and check_schemas:
        problem = schema_problem(spec.result)
        if problem is not None:
            raise RegistryError(f"method {spec.name}: the result schema {problem}")
    return Registered(spec, compiled.validator, compiled.accepts_empty, compiled.fast,
                      plugin)


class MethodRegistry:
    """An ordered table of methods by name; refuses duplicates. ``core=True`` for the
    daemon's own table, whose schemas are checked by the tests rather than at each
    start; every method added later (a plugin's) has its schemas checked."""

    def __init__(self, specs: Iterable[MethodSpec] = (), *, core: bool = False) -> None:
        self._methods: dict[str, Registered] = {}
        for spec in specs:
            self.add(spec, check_schemas=not core)

    def add(self, spec: MethodSpec, check_schemas: bool = True) -> None:
        """Register ``spec`` or raise ``RegistryError`` (duplicate, bad schema ...)."""
        if spec.name in self._methods:
            raise RegistryError(f"method {spec.name} is already registered")
        self._methods[spec.name] = compile_method(spec, check_schemas)

    def add_all(self, specs: Iterable[MethodSpec], *, plugin: bool = False) -> None:
        """Register every spec or none of them (``plugin``: they are a plugin's)."""
        compiled = [compile_method(s, plugin=plugin) for s in specs]
        names = [r.spec.name for r in compiled]
        for name in names:
            if name in self._methods or names.count(name) > 1:
                raise RegistryError(f"method {name} is already registered")
        for registered in compiled:
            self._methods[registered.spec.name] = registered

    def copy(self) -> MethodRegistry:
        """A new table with the same methods (to extend with plugins)."""
        other = MethodRegistry()
        other._methods = dict(self._methods)
        return other

    def get(self, name: str) -> Registered | None:
        """The registered method called ``name``, if any."""
        return self._methods.get(name)

    def names(self) -> list[str]:
        """Every method name, in registration order."""
        return list(self._methods)

    def namespaces(self) -> set[str]:
        """The namespaces in use (``encounter`` of ``encounter.add`` ...)."""
        return {name.split(".", 1)[0] for name in self._methods}

    def __iter__(self) -> Iterator[Registered]:
        return iter(self._methods.values())

    def __contains__(self, name: object) -> bool:
        return name in self._methods

    def __len__(self) -> int:
        return len(self._methods)
