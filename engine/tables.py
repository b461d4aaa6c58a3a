"""Rules tables as data: JSON files checked against a JSON Schema."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from .errors import InvalidInput, Problem, pointer
from .schemacheck import QuickValidator


def load_tables(package: str, data: Any | None = None) -> Any:
    """``<package>/data/tables.json``, or ``data`` (a GM's replacement) once it has been
    validated against ``<package>/data/tables.schema.json``.

    A valid replacement is given back as a copy with every float that is a whole number
    an ``int``: JSON Schema counts ``150.0`` as an integer, so a GM's file may write one,
    and the rules count dice and compare percentages with ints.

    A replacement that fails the schema is ``InvalidInput`` with the path of each error:
    the compiled quick check passes a valid one, and jsonschema names the problems of
    any other. The shipped tables are part of the engine, checked against the same
    schema by its tests (``tests/engine/test_schemas.py``), not at every start.
    """
    folder = resources.files(package).joinpath("data")
    if data is None:
        return json.loads(folder.joinpath("tables.json").read_text(encoding="utf-8"))
    schema = json.loads(folder.joinpath("tables.schema.json").read_text(encoding="utf-8"))
    validator = QuickValidator(schema, check_schema=False)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        raise InvalidInput([
            Problem(pointer("/tables", *e.absolute_path), e.message)
            for e in errors
        ])
    return _whole_numbers(data)


def _whole_numbers(value: Any) -> Any:
    """A copy of ``value`` with every whole-number float an ``int``."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole_numbers(v) for v in value]
    return value
