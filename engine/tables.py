"""Rules tables as data: JSON files checked against a JSON Schema when loaded."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from .errors import InvalidInput, Problem
from .schemacheck import QuickValidator


def load_tables(package: str, data: Any | None = None) -> Any:
    """Load ``<package>/data/tables.json`` (or ``data``, a GM's replacement) and
    validate it against ``<package>/data/tables.schema.json``.

    A table that fails its schema is ``InvalidInput`` with the path of each error. The
    schema is the engine's own (checked by its tests); the compiled quick check passes
    valid tables, and jsonschema names the problems of any other.
    """
    folder = resources.files(package).joinpath("data")
    schema = json.loads(folder.joinpath("tables.schema.json").read_text(encoding="utf-8"))
    if data is None:
        data = json.loads(folder.joinpath("tables.json").read_text(encoding="utf-8"))
    validator = QuickValidator(schema, check_schema=False)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        raise InvalidInput([
            Problem("/tables" + "".join(f"/{p}" for p in e.absolute_path), e.message)
            for e in errors
        ])
    return data
