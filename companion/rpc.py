"""JSON-RPC 2.0 processing: the one module that talks to jsonrpcserver.

jsonrpcserver gets an explicit methods dict and our ``Context``; every method is
``async def``. Around it we do what it leaves out or does in a way we cannot accept:

- the envelope of every request (and of every batch element on its own) is checked
  here, so a malformed element gets its own -32600 while the others run, an empty batch
  is one -32600, and a batch over the limit is one -32602 naming the limit; jsonrpcserver is
  then handed the already-parsed request with a no-op deserializer and validator instead
  of validating the whole request against its JSON Schema again;
- params are checked against the method's schema compiled once at start-up;
- a plugin's handler gets ``PLUGIN_METHOD_TIMEOUT`` seconds, and whatever a handler
  raises (``SystemExit``, ``KeyboardInterrupt`` and a ``CancelledError`` of its own
  included; only the request's own cancellation goes on) is answered, never allowed to
  stop the daemon or drop the connection;
- exceptions become error objects in ``errors.to_rpc_error`` (one place) before
  jsonrpcserver sees them, because it copies exception text into responses; any error
  that still comes back from the library with text is scrubbed to an error id;
- each checked request goes straight to the library's per-request ``call`` (the call
  and its result check): the whole-body entry point would parse and schema-validate
  again and run every request in a new task through ``asyncio.gather`` (about 30 µs of
  38 µs per call), and its argument check binds an ``inspect`` signature our wrappers
  (``(context, /, *args, **params)``) always accept; the method lookup is done here
  already, to answer -32601 in our own words; a success's response object is built
  here too (the library's copies the result through two named tuples), an error's by
  the library;
- a method may answer with ``PreparedJSON`` (text serialised once, for answers that
  never change such as ``companion.info``), spliced into the response as it is.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from jsonrpcserver import Error, Success
from jsonrpcserver.async_dispatcher import call as call_method
from jsonrpcserver.dispatcher import create_request, to_response
from jsonrpcserver.response import to_serializable_one
from jsonrpcserver.result import SuccessResult

from engine.errors import Problem, json_text

from .errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    MESSAGES,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    RpcError,
    internal_error,
    invalid_params,
    logged_error_id,
    to_rpc_error,
)
from .jsontext import encode, parse
from .logs import kept
from .registry import MethodRegistry, PreparedJSON, Registered
from .services import Context

log = logging.getLogger("mindscape.rpc")

_ENVELOPE_MEMBERS = frozenset({"jsonrpc", "method", "params", "id"})
_NO_ID = object()
#: Seconds a plugin's method handler may take before the call is answered -32603 (its
#: work is cancelled). Handlers must be async and never block (API.md "Plugins"); this
#: bounds one that awaits something that never comes. A handler that blocks the event
#: loop cannot be interrupted by any timer: it stalls the daemon until it returns.
PLUGIN_METHOD_TIMEOUT = 30.0


@dataclass
class Outcome:
    """What happened to one HTTP body or WebSocket message, for the request log."""

    calls: list[tuple[str | None, int | None]] = field(default_factory=list)

    @property
    def methods(self) -> list[str | None]:
        """The method of each call (``None`` when the request had none)."""
        return [m for m, _ in self.calls]

    @property
    def last_method(self) -> str | None:
        """The method of the last call that named one (a batch's run in order)."""
        return next((m for m, _ in reversed(self.calls) if m is not None), None)

    @property
    def errors(self) -> list[int]:
        """The error code of each call that failed."""
        return [c for _, c in self.calls if c is not None]


def _error_response(error: RpcError, request_id: Any = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "error": error.to_json(), "id": request_id}


def _valid_id(value: Any) -> bool:
    return value is None or (isinstance(value, str | int | float) and not isinstance(value, bool))


def _envelope_problem(request: Any) -> str | None:
    """Why ``request`` is not a JSON-RPC 2.0 request object, or ``None``."""
    if not isinstance(request, dict):
        return "a request must be a JSON object"
    if request.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if not isinstance(request.get("method"), str):
        return "method must be a string"
    if "params" in request and not isinstance(request["params"], dict | list):
        return "params must be an object or an array"
    if "id" in request and type(request["id"]) not in (int, str) \
            and not _valid_id(request["id"]):
        return "id must be a string, a number or null"
    if not _ENVELOPE_MEMBERS.issuperset(request):
        return f"unknown members {json_text(sorted(set(request) - _ENVELOPE_MEMBERS))}"
    return None


def _invalid_request(detail: str, **data: Any) -> RpcError:
    return RpcError(INVALID_REQUEST, MESSAGES[INVALID_REQUEST], {"detail": detail, **data})


class Dispatcher:
    """Turns request bodies into response bodies for one method table."""

    def __init__(self, methods: MethodRegistry, max_batch: int) -> None:
        self.registry = methods
        self.max_batch = max_batch
        self._methods: dict[str, Callable[..., Any]] = {
            r.spec.name: self._bind(r) for r in methods}

    @staticmethod
    def _bind(registered: Registered) -> Callable[..., Any]:
        spec = registered.spec
        limit = PLUGIN_METHOD_TIMEOUT if registered.plugin else None
        # a plugin's MethodError is answered with its code when its method declares it
        declared = frozenset(spec.errors) if registered.plugin else frozenset()

        async def call(context: Context, /, **params: Any) -> Any:
            # (positional params never get here: ``_one`` answers them)
            checked = False
            try:
                if params or not registered.accepts_empty:
                    problems = registered.problems(params)
                    if problems:
                        return _as_result(invalid_params(problems))
                checked = True
                if limit is None:
                    result = await spec.handler(context, params)
                else:
                    timer = asyncio.timeout(limit)
                    try:
                        async with timer:
                            result = await spec.handler(context, params)
                    except TimeoutError:
                        if not timer.expired():
                            raise  # the handler's own (a network call of its own, say)
                        return _as_result(_timed_out(spec.name, limit))
            except Exception as exc:
                if checked and registered.plugin and isinstance(exc, RecursionError):
                    # the plugin's own runaway recursion, not params nested too deep
                    return _as_result(internal_error(spec.name))
                return _as_result(to_rpc_error(exc, spec.name, declared))
            except (SystemExit, KeyboardInterrupt):
                # A handler (a plugin's) that calls exit() must not stop the daemon; a
                # real Ctrl+C never arrives here (the CLI takes SIGINT with a handler).
                return _as_result(internal_error(spec.name))
            except asyncio.CancelledError:
                task = asyncio.current_task()
                if task is not None and task.cancelling():
                    raise  # this request itself is cancelled (client gone, shutdown)
                # A handler raised CancelledError of its own (a cancelled task it
                # awaited): a fault like any other, answered, not a silent hang-up.
                return _as_result(internal_error(spec.name))
            except BaseException:
                # GeneratorExit, or a plugin's own BaseException subclass: answered too;
                # let out, it dropped the connection and every answer of its batch.
                return _as_result(internal_error(spec.name))
            return Success(result)

        call.__name__ = spec.name
        return call

    async def handle(self, body: bytes | str, context: Context,
                     outcome: Outcome | None = None) -> bytes | None:
        """The response text for ``body``, or ``None`` when nothing is to be sent back
        (a notification or a batch of notifications)."""
        outcome = outcome if outcome is not None else Outcome()
        try:
            parsed = parse(body)
        except (ValueError, RecursionError):
            outcome.calls.append((None, PARSE_ERROR))
            return encode(_error_response(RpcError(PARSE_ERROR, MESSAGES[PARSE_ERROR])))
        if isinstance(parsed, list):
            if not parsed:
                outcome.calls.append((None, INVALID_REQUEST))
                return encode(_error_response(_invalid_request("an empty batch")))
            if len(parsed) > self.max_batch:
                # API.md "Limits": exceeding a limit is -32602 naming the limit.
                outcome.calls.append((None, INVALID_PARAMS))
                return encode(_error_response(invalid_params(
                    [Problem("", f"a batch holds at most {self.max_batch} calls, this one "
                                 f"has {len(parsed)}")], limit="max_batch", max=self.max_batch)))
            parts = []
            for element in parsed:
                answer = await self._one(element, context, outcome)
                if answer is not None:
                    parts.append(answer)
            return b"[" + b",".join(parts) + b"]" if parts else None
        return await self._one(parsed, context, outcome)

    async def _one(self, request: Any, context: Context, outcome: Outcome) -> bytes | None:
        problem = _envelope_problem(request)
        if problem is not None:
            outcome.calls.append((None, INVALID_REQUEST))
            request_id = request.get("id") if isinstance(request, dict) else None
            return encode(_error_response(_invalid_request(problem),
                                          request_id if _valid_id(request_id) else None))
        method = request["method"]
        request_id = request.get("id", _NO_ID)
        bound = self._methods.get(method)
        if bound is None:
            # a name no method has is the client's text: the log keeps it cut
            outcome.calls.append((kept(method), METHOD_NOT_FOUND))
            if request_id is _NO_ID:
                return None
            return encode(_error_response(
                RpcError(METHOD_NOT_FOUND, MESSAGES[METHOD_NOT_FOUND], {"method": method}),
                request_id))
        if type(request.get("params")) is list:
            # Even an empty array: our methods take their params by name.
            outcome.calls.append((method, INVALID_PARAMS))
            if request_id is _NO_ID:
                return None
            return encode(_error_response(invalid_params([Problem(
                "", "params must be an object (by-name); positional params are not "
                    "supported")]), request_id))
        parsed = create_request(request)
        result = await call_method(parsed, context, bound)
        if request_id is _NO_ID:
            outcome.calls.append((method, None))
            return None
        success = result.bind(_unwrapped)
        response: dict[str, Any]
        if type(success) is SuccessResult:
            # The usual answer, built here: the library's ``to_response`` copies it
            # through two named tuples, a measurable share of a small call.
            response = {"jsonrpc": "2.0", "result": success.result, "id": request_id}
        else:
            response = to_serializable_one(to_response(parsed, result))  # type: ignore[assignment]
        error = response.get("error")
        if error is not None and not _ours(error):
            # The library answered on its own (a fault inside it): keep its text out.
            response = _error_response(internal_error(method), request_id)
            error = response["error"]
        outcome.calls.append((method, error["code"] if error is not None else None))
        try:
            if error is None and isinstance(response["result"], PreparedJSON):
                return b'{"jsonrpc":"2.0","result":%s,"id":%s}' % (
                    response["result"].text, encode(request_id))
            return encode(response)
        except (TypeError, ValueError, RecursionError):
            # (nested deeper than either encoder goes: a plugin's result)
            outcome.calls[-1] = (method, INTERNAL_ERROR)
            return encode(_error_response(internal_error(method), request_id))


def _timed_out(method: str, seconds: float) -> RpcError:
    """-32603 for a plugin method that took too long, saying so, with an error id."""
    error_id = logged_error_id(log, "plugin method timed out after %s s", seconds,
                               exc_info=False, method=method)
    return RpcError(INTERNAL_ERROR, f"{MESSAGES[INTERNAL_ERROR]}: the plugin method "
                                    f"{method} did not answer within {seconds:g} s",
                    {"error_id": error_id})


def _unwrapped(success: SuccessResult) -> SuccessResult:
    # ``Result.bind(f)`` is ``f(value)`` for a success and the error itself otherwise.
    return success


def _as_result(error: RpcError) -> Any:
    # Tagging ``data`` lets the scrubber tell our errors from the library's own.
    return Error(error.code, error.message, _Tagged(error.data))


class _Tagged(dict[str, Any]):
    """Error data built by ``errors.py`` (a dict subclass serialises as a plain object)."""

    def __init__(self, data: Any) -> None:
        super().__init__(data if isinstance(data, dict) else {})


def _ours(error: dict[str, Any]) -> bool:
    return isinstance(error.get("data"), _Tagged)
