"""Fixtures shared by the engine's and the daemon's tests."""

from __future__ import annotations

from typing import Any

import jsonschema._utils
import pytest


@pytest.fixture
def comparisons(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times jsonschema's pairwise JSON equality ran (its ``uniqueItems``
    calls it for every pair of items it cannot sort): ``comparisons[0]``."""
    count = [0]
    equal = jsonschema._utils.equal

    def counted(one: Any, two: Any) -> bool:
        count[0] += 1
        return bool(equal(one, two))

    monkeypatch.setattr(jsonschema._utils, "equal", counted)
    return count
