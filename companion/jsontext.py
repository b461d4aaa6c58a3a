"""JSON text in and out of the daemon: orjson first, the standard library as the judge.

Parsing and writing JSON was about a fifth of an ``exchange.resolve`` call with the
standard library; orjson does both in a tenth of the time. It is stricter than the
standard library in a few places and looser in one, so:

- ``parse`` hands every text orjson refuses (NaN, Infinity, 1e999, lone surrogates,
  invalid UTF-8, too deep ...) to the standard-library parser, which decides with the
  daemon's own rules (``_finite``, ``_not_json``, ``_unpaired_surrogate``): a text is
  refused or accepted exactly as before, only the common case is faster. A string with
  an unpaired surrogate (``"\\ud800"`` alone) is refused: it is not I-JSON (RFC 7493),
  cannot be stored or written back as UTF-8, and would only fail later, somewhere worse.
  orjson turns integers beyond 64 bits into floats, so a text with a run of 19 digits
  or more is parsed by the standard library from the start (such digits in a string
  only cost the slower path).
- ``encode`` falls back to the standard library for what orjson cannot write (integers
  beyond 64 bits, lone surrogates, non-string keys), writing a lone surrogate as its
  ``\\u`` escape; a value neither can write raises ``TypeError`` or ``ValueError`` for
  the caller to answer -32603. orjson writes a
  non-finite float as ``null``: the text is always JSON.

JSON has one kind of number: ``2.0`` and ``2`` are the same value, and JSON Schema's
``integer`` accepts both. ``parse`` therefore reads a whole number written with a
fraction or an exponent (``2.0``, ``1e2``) as a Python ``int`` (within ±2**53, where a
double holds every whole number exactly), so the engine never meets a float where it
counts dice or PSPs. Only a text with a digit followed by ``.``, ``e`` or ``E`` can hold
such a number, and only such a text is walked.

orjson writes ``dict`` and ``list`` subclasses, so the engine's read-only records
(``engine.results``) are serialised without a copy.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

import orjson

#: a number orjson might not keep exactly: more than 18 digits in a row, found by
#: turning every digit into "0" and everything else into " " (C speed; a regular
#: expression took longer than parsing)
_DIGITS_ONLY = bytes(0x30 if 0x30 <= b <= 0x39 else 0x20 for b in range(256))
_LONG_RUN = b"0" * 19
#: only JSON's own types (and their subclasses): a dataclass or a datetime in an answer
#: is a bug to report, as the standard library would, not something to guess a shape for
_OPTIONS = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME
#: a number with a fraction or an exponent may be in the text (strings may match too)
_FLOAT_SYNTAX = re.compile(rb"[0-9][.eE]")
#: every whole number up to this is a double exactly
_EXACT = 2 ** 53
#: the largest whole number a double holds (beyond it a number is Infinity)
_LARGEST = int(sys.float_info.max)


def parse(body: bytes | str) -> Any:
    """The JSON value of ``body`` (UTF-8 bytes or text); ``ValueError`` or
    ``RecursionError`` when it is not strict JSON."""
    data = body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass")
    if _LONG_RUN not in data.translate(_DIGITS_ONLY):
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            pass
        else:
            return _whole_numbers(value) if _FLOAT_SYNTAX.search(data) else value
    # RFC 8259: JSON between systems is UTF-8 (decoding first skips the encoding
    # sniffing json.loads does on bytes).
    text = body.decode("utf-8") if isinstance(body, bytes) else body
    value = json.loads(text, parse_constant=_not_json, parse_float=_finite,
                       parse_int=_finite_int)
    _unpaired_surrogate(value)
    return value


def encode(value: Any) -> bytes:
    """``value`` as compact UTF-8 JSON text."""
    try:
        return orjson.dumps(value, option=_OPTIONS)
    except TypeError:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False)
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate has no UTF-8 form; its escape is still JSON.
            return json.dumps(value, separators=(",", ":"), allow_nan=False).encode()


def _whole_numbers(value: Any) -> Any:
    """``value`` with every float that is a whole number within ±2**53 made an ``int``
    (containers changed in place; a loop, not recursion: the text may nest 1024 deep)."""
    if type(value) is float:
        return _whole(value)
    stack = [value]
    while stack:
        container = stack.pop()
        items = container.items() if type(container) is dict else enumerate(container)
        for key, item in items:
            kind = type(item)
            if kind is float:
                whole = _whole(item)
                if whole is not item:
                    container[key] = whole
            elif kind is dict or kind is list:
                stack.append(item)
    return value


def _whole(number: float) -> int | float:
    return int(number) if number.is_integer() and -_EXACT <= number <= _EXACT else number


def _unpaired_surrogate(value: Any) -> None:
    """Raise ``ValueError`` when a string (member names too) in ``value`` holds an
    unpaired surrogate (orjson refuses such texts, so only this slower path sees them)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("a string holds an unpaired surrogate (\\ud800 to \\udfff "
                         "alone): not Unicode text") from None


def _finite(text: str) -> int | float:
    value = float(text)
    if value in (math.inf, -math.inf):
        # 1e999 is valid JSON text but no number JSON can carry back out.
        raise ValueError(f"{text[:20]} is out of range")
    return _whole(value)


def _finite_int(text: str) -> int:
    value = int(text)
    if abs(value) > _LARGEST:
        # as 1e999: no double holds it, so a JavaScript client would read Infinity
        raise ValueError(f"{text[:20]}... is out of range")
    return value


def _not_json(name: str) -> Any:
    # Python's parser accepts NaN and Infinity; JSON has neither, so neither do we.
    raise ValueError(f"{name} is not JSON")
