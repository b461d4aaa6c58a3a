"""The method table: every JSON-RPC method with its params schema, compiled once.

Like pygls's feature registry, building a table fails at once on a duplicate name, a
handler that is not ``async def`` or a schema that does not compile, so a mistake in a
core method stops the daemon at import and a mistake in a plugin is caught while it
loads (and reported) instead of on some later request.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import jsonschema
from jsonschema import Draft202012Validator

from engine.errors import Problem
from engine.schemacheck import Check, compile_check
from engine.system import schema_problems

from .jsontext import encode

if TYPE_CHECKING:
    from .services import Context

JSON = dict[str, Any]
Handler = Callable[["Context", JSON], Awaitable[Any]]

#: ``namespace.verb``: lower-case namespace, then a dot, then the verb.
METHOD_NAME = re.compile(r"^[a-z][a-z0-9-]*\.[a-z][a-zA-Z0-9_.-]*$")


class PreparedJSON:
    """A method result serialised once (``text`` is UTF-8 JSON), for answers that never
    change while the daemon runs; the RPC layer splices it into the response."""

    __slots__ = ("text", "value")

    def __init__(self, value: Any) -> None:
        self.value = value
        self.text = encode(value)


class RegistryError(Exception):
    """A method that cannot be registered; the message is written by us, safe to show."""


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
    #: JSON-RPC error codes the method may answer with besides -32602/-32603.
    errors: tuple[int, ...] = field(default_factory=tuple)
    #: True when the handler also checks the params (its ``{adapter, data}`` combatants
    #: imported) against the named system's ``request_schema``: the OpenRPC document
    #: then gives each system's schema too
    checked_by_system: bool = False


@dataclass(frozen=True)
class Registered:
    """A method ready to dispatch: its spec and its compiled params validator."""

    spec: MethodSpec
    validator: jsonschema.protocols.Validator
    #: True when ``{}`` is valid, so a call without params skips validation.
    accepts_empty: bool
    #: the quick yes compiled from the schema (``engine.schemacheck``), when it can be
    fast: Check | None = None

    def problems(self, params: JSON) -> list[Problem]:
        """Every way ``params`` fails the method's schema (JSON Pointer paths)."""
        if not params and self.accepts_empty:
            return []
        if self.fast is not None and self.fast(params):
            return []
        # jsonschema has the last word, and names every problem.
        return schema_problems(self.validator, params)


def compile_method(spec: MethodSpec, check_schemas: bool = True) -> Registered:
    """Check ``spec`` and compile its validator; ``RegistryError`` when it cannot be used.

    ``check_schemas=False`` skips checking the params and result schemas against the
    meta-schema: for the core methods, whose schemas the tests check (the OpenRPC
    document test), so that a start does not pay for it again."""
    if not METHOD_NAME.match(spec.name):
        raise RegistryError(f"method name {spec.name!r} is not of the form namespace.verb")
    if not inspect.iscoroutinefunction(spec.handler):
        raise RegistryError(f"method {spec.name}: the handler must be an async function")
    if spec.params.get("type") != "object":
        raise RegistryError(f"method {spec.name}: the params schema must describe an object")
    for what, schema in (("params", spec.params), ("result", spec.result)):
        if schema is None or not check_schemas:
            continue
        try:
            Draft202012Validator.check_schema(schema)
        except jsonschema.SchemaError:
            raise RegistryError(
                f"method {spec.name}: the {what} schema does not compile") from None
    validator = Draft202012Validator(spec.params)
    return Registered(spec, validator, validator.is_valid({}), compile_check(spec.params))


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

    def add_all(self, specs: Iterable[MethodSpec]) -> None:
        """Register every spec or none of them."""
        compiled = [compile_method(s) for s in specs]
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
