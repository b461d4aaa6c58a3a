"""Every schema the built-in systems build is a valid JSON Schema 2020-12.

The engine does not check its own schemas against the meta-schema when the daemon starts
(``System.schemas_tested``, ``QuickValidator(check_schema=False)``): this file does, for
each built-in system's request, combatant and choice schemas and its table schema, checks
the shipped tables against that schema (they are read without a check), shows that
a schema from anywhere else is still checked, and that a GM's replacement table is
refused with all its problems.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import jsonschema
import pytest

from engine import builtin_systems
from engine.errors import InvalidInput
from engine.schemacheck import QuickValidator, compile_check
from engine.tables import load_tables

SYSTEMS = builtin_systems()
PACKAGES = {"revised-2e": "engine.revised_2e", "combat-strength": "engine.combat_strength",
            "power-pool": "engine.power_pool"}


def data_file(system_id: str, name: str) -> Any:
    folder = resources.files(PACKAGES[system_id]).joinpath("data")
    return json.loads(folder.joinpath(name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("system_id", sorted(SYSTEMS))
@pytest.mark.parametrize("which", ["request_schema", "combatant_schema", "choice_schema"])
def test_each_built_in_schema_is_a_valid_schema(system_id: str, which: str) -> None:
    system = SYSTEMS[system_id]
    assert system.schemas_tested
    jsonschema.Draft202012Validator.check_schema(system.describe()[which])


@pytest.mark.parametrize("system_id", sorted(SYSTEMS))
def test_each_table_schema_is_valid_and_the_shipped_tables_pass_it(system_id: str) -> None:
    """The shipped tables are not validated when loaded: this is their check."""
    schema = data_file(system_id, "tables.schema.json")
    tables = data_file(system_id, "tables.json")
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(tables)
    check = compile_check(schema)
    assert check is not None, "a table schema uses a keyword the compiler lacks"
    assert check(tables)


def test_other_schemas_are_still_checked() -> None:
    with pytest.raises(jsonschema.SchemaError):
        QuickValidator({"type": "object", "required": "id"})
    # The engine's own schemas skip the check; the validator works the same.
    validator = QuickValidator({"type": "object", "required": ["id"]}, check_schema=False)
    assert validator.is_valid({"id": 1}) and not validator.is_valid({})
    assert [e.message for e in validator.iter_errors({})] == ["'id' is a required property"]


def test_a_replacement_table_is_refused_with_every_problem_in_path_order() -> None:
    """engine/tables.py: a GM's replacement that fails the table schema is
    ``InvalidInput`` with the path of each error: every one of them, ordered by where it
    is in the file (not in the order the schema checks them), each with jsonschema's
    message alone."""
    tables = data_file("revised-2e", "tables.json")
    tables["defenses"]["mind-blank"]["cost"] = -1
    tables["attacks"]["mind-thrust"]["cost"] = "x"
    tables["attack_roll"]["sides"] = 0
    with pytest.raises(InvalidInput) as err:
        load_tables("engine.revised_2e", tables)
    assert [(p.path, p.message) for p in err.value.problems] == [
        ("/tables/attack_roll/sides", "0 is less than the minimum of 2"),
        ("/tables/attacks/mind-thrust/cost", "'x' is not of type 'integer'"),
        ("/tables/defenses/mind-blank/cost", "-1 is less than the minimum of 0")]
    valid = data_file("revised-2e", "tables.json")
    assert load_tables("engine.revised_2e", valid) == valid


@pytest.mark.parametrize("system_id", sorted(SYSTEMS))
def test_a_replacement_table_reads_a_whole_number_with_a_point_as_an_int(
        system_id: str) -> None:
    """JSON Schema counts 4.0 as an integer, so a GM's file may write it: every system's
    tables read it as 4 (dice are counted and percentages compared with ints), in a copy
    that leaves the GM's object as it was."""
    original = data_file(system_id, "tables.json")
    written = json.loads(json.dumps(original), parse_int=float)
    as_written = json.dumps(written)
    package = f"engine.{system_id.replace('-', '_')}"
    loaded = load_tables(package, written)
    assert loaded == original
    assert json.dumps(loaded) == json.dumps(original)  # 4, not 4.0
    assert json.dumps(written) == as_written


@pytest.mark.parametrize("system_id", sorted(SYSTEMS))
def test_describe_explains_every_encounter_choice(system_id: str) -> None:
    """API.md: "`systems.describe` lists each system's choices under `encounter.choice`":
    every member of the choice schema a combatant can use is explained there."""
    system = SYSTEMS[system_id]
    described = system.describe()["encounter"]
    members = system.describe()["choice_schema"]["properties"]
    usable = {k for k, v in members.items() if v.get("type") != "null"}
    assert set(described["choice"]) == usable
    assert described["step"]
