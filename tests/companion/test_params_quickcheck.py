"""The method table's compiled quick checks (engine/schemacheck.py) agree with
jsonschema on every core method's params schema."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.methods import CORE
from tests.engine.test_schemacheck import property_names, values


@pytest.mark.parametrize("name", CORE.names())
@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_every_core_schema_is_judged_as_jsonschema_judges_it(name: str,
                                                              data: st.DataObject) -> None:
    registered = CORE.get(name)
    assert registered is not None and registered.fast is not None
    schema = registered.spec.params
    keys = property_names(schema)
    params = data.draw(st.one_of(
        values(keys),
        st.fixed_dictionaries({}, optional={k: values(keys) for k in keys})))
    assert registered.fast(params) == registered.validator.is_valid(params)
