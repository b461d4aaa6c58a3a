"""The daemon's JSON text (``companion/jsontext.py``): orjson for speed, never a
different answer from the standard library's strict reading."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from companion.jsontext import encode, parse
from engine.results import freeze


def strict_stdlib(text: str) -> object:
    def refuse(name: str) -> object:
        raise ValueError(name)

    def finite(number: str) -> int | float:
        value = float(number)
        if math.isinf(value):
            raise ValueError(number)
        # JSON has one number type: a whole number is read as an int (within 2**53)
        return int(value) if value.is_integer() and abs(value) <= 2 ** 53 else value

    return json.loads(text, parse_constant=refuse, parse_float=finite)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=30)


@given(json_values)
def test_any_json_value_is_read_back_exactly_as_the_standard_library_reads_it(value: object
                                                                               ) -> None:
    text = json.dumps(value)
    got = parse(text.encode())
    expected = strict_stdlib(text)
    assert got == expected
    assert json.dumps(got) == json.dumps(expected)  # the same types too


@pytest.mark.parametrize(("text", "value"), [
    (b"2.0", 2), (b'{"hit_dice": 3.0}', {"hit_dice": 3}), (b"[1e2, -0.0, 2.5]", [100, 0, 2.5]),
    (b'{"a": [[{"b": 4.00}]], "name": "5.0"}', {"a": [[{"b": 4}]], "name": "5.0"}),
    (b"1e300", 1e300), (b"9007199254740993.0", 9007199254740992), (b"1E2", 100),
    (b"[2.5E1]", [25]), (b"-9007199254740992.0", -9007199254740992), (b"1e16", 1e16)])
def test_a_whole_number_written_with_a_fraction_or_an_exponent_is_an_integer(
        text: bytes, value: object) -> None:
    """JSON Schema's ``integer`` accepts 2.0, so a die count of 2.0 must count dice."""
    got = parse(text)
    assert got == value and json.dumps(got) == json.dumps(value)


def test_the_largest_whole_number_a_double_holds_is_read_and_one_more_is_refused() -> None:
    """As 1e999: an integer no double holds would be Infinity to a JavaScript client."""
    largest = int(sys.float_info.max)
    assert parse(str(largest).encode()) == largest
    assert parse(f"[-{largest}]".encode()) == [-largest]
    with pytest.raises(ValueError, match="out of range"):
        parse(str(largest + 1).encode())


def test_a_text_the_standard_library_reads_is_decoded_as_utf8() -> None:
    """A run of 19 digits sends the text to the standard library: still UTF-8, RFC 8259."""
    text = '{"id": 12345678901234567890, "name": "Fenka é"}'
    assert parse(text.encode()) == {"id": 12345678901234567890, "name": "Fenka é"}


@pytest.mark.parametrize("text", ["123456789012345678901234567890", "-9223372036854775809",
                                  '{"level": 18446744073709551616}'])
def test_integers_beyond_64_bits_stay_exact_integers(text: str) -> None:
    assert parse(text.encode()) == json.loads(text)
    assert type(parse(text.encode())) is type(json.loads(text))


@pytest.mark.parametrize("text", [b"NaN", b"[Infinity]", b"-Infinity", b"1e999",
                                  b'{"x": -1e400}', b"[1, 2", b"", b"\xff", b"\xef\xbb\xbf{}"])
def test_what_is_not_strict_json_is_refused(text: bytes) -> None:
    with pytest.raises(ValueError):
        parse(text)


@pytest.mark.parametrize("text", [b'"\\ud800x"', b'{"id": "\\udfff"}', b'{"\\ud800": 1}',
                                  b'[1, ["\\ude00\\ud83d"]]', '"\ud800"'])
def test_an_unpaired_surrogate_is_refused(text: bytes | str) -> None:
    """Not I-JSON (RFC 7493): no UTF-8 form to store or answer with."""
    with pytest.raises(ValueError, match="unpaired surrogate"):
        parse(text)


def test_a_surrogate_pair_escape_is_one_character() -> None:
    assert parse(b'{"name": "\\ud83d\\ude00 Fenka"}') == {"name": "\U0001f600 Fenka"}


def test_text_and_bytes_read_alike() -> None:
    assert parse('{"a": [1, "é"]}') == parse('{"a": [1, "é"]}'.encode()) == {"a": [1, "é"]}


def test_answers_are_compact_utf8_and_read_only_records_need_no_copy() -> None:
    value = {"name": "Fenka é", "n": [1, 2.5, None, True], "frozen": freeze({"a": [1]})}
    assert encode(value) == json.dumps(value | {"frozen": {"a": [1]}}, separators=(",", ":"),
                                       ensure_ascii=False).encode()


def test_what_orjson_cannot_write_falls_back_to_the_standard_library() -> None:
    assert encode({"big": 2 ** 70}) == b'{"big":1180591620717411303424}'
    assert encode({1: "x"}) == b'{"1":"x"}'


def test_the_standard_library_fallback_writes_compact_utf8_too() -> None:
    assert encode({"big": 2 ** 70, "name": "Fenka é"}) == (
        '{"big":1180591620717411303424,"name":"Fenka é"}'.encode())


def test_a_non_finite_float_beside_what_orjson_cannot_write_is_refused_not_written_nan(
        ) -> None:
    """The text is always JSON: the standard library's fallback writes no NaN either."""
    with pytest.raises(ValueError):
        encode({"big": 2 ** 70, "x": math.nan})
    with pytest.raises(ValueError):
        encode({"big": 2 ** 70, "x": -math.inf})


def test_a_datetime_is_refused_not_guessed() -> None:
    with pytest.raises(TypeError):
        encode({"at": datetime(2026, 1, 1, tzinfo=UTC)})


def test_a_non_json_value_is_refused_not_guessed() -> None:
    @dataclass
    class NotJSON:
        a: int

    with pytest.raises(TypeError):
        encode({"x": NotJSON(1)})


def test_a_lone_surrogate_is_written_as_its_escape() -> None:
    assert encode({"s": "\ud800", "t": "é"}) == b'{"s":"\\ud800","t":"\\u00e9"}'
    assert json.loads(encode({"s": "\ud800"})) == {"s": "\ud800"}


def test_a_non_finite_float_is_written_as_null() -> None:
    assert encode([math.nan, math.inf]) == b"[null,null]"
