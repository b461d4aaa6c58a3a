"""docs/PLUGINS.md: its worked example is the module the tests load, and does what the
guide says it does."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient

import companion.plugins
import engine
from companion.app import create_app
from companion.settings import Settings

from .conftest import Rpc, with_plugins
from .test_plugins import COIN

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "PLUGINS.md").read_text(encoding="utf-8")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", GUIDE, re.S)


def test_the_guides_example_is_the_sample_plugins_coin_duel() -> None:
    """The guide's coin_duel/__init__.py is tests/sample_plugin/coin_duel.py, letter for
    letter, and its pyproject.toml names that module's PLUGIN."""
    [module] = _blocks("python")
    assert module == (ROOT / "tests" / "sample_plugin" / "coin_duel.py").read_text(
        encoding="utf-8")
    [pyproject] = [b for b in _blocks("toml") if "[project]" in b]
    assert '[project.entry-points."mindscape.plugins"]\ncoin-duel = "coin_duel:PLUGIN"' \
        in pyproject
    assert COIN.value == "tests.sample_plugin.coin_duel:PLUGIN"


async def test_the_guides_example_calls_answer_as_the_guide_says(
        aiohttp_client: Any, tmp_path: Path) -> None:
    """docs/PLUGINS.md "Trying it"."""
    settings = Settings(home=tmp_path, plugins=with_plugins(COIN), log_stream=io.StringIO())
    client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    rpc = Rpc(client, settings.token_path.read_text().strip())
    [report] = [p for p in (await rpc.ok("companion.info"))["plugins"] if not p["builtin"]]
    assert report == {"name": "coin-duel", "version": "1.0", "entry_point": COIN.value,
                      "builtin": False, "systems": ["coin-duel"],
                      "methods": ["coin.house_rule"], "error": None}
    request = {"system": "coin-duel", "attacker": {"id": "ann", "name": "Ann"},
               "defender": {"id": "bo", "name": "Bo"}, "attack": {"call": "heads"}}
    result = await rpc.ok("exchange.resolve", {**request, "dice": {"attack": [1]}})
    assert (result["outcome"], result["face"]) == ("right", "heads")
    assert (result["defender"]["before"]["luck"], result["defender"]["after"]["luck"]) \
        == (3, 2)
    assert [(e["type"], e["combatant"]) for e in result["events"]] == [
        ("luck-spent", "ann"), ("luck-lost", "bo")]
    assert result["summary"] == "Ann calls heads; the coin shows heads."
    error = await rpc.error("exchange.resolve", {**request, "attack": {"call": "edge"}})
    assert error["data"]["errors"] == [
        {"path": "/attack/call", "message": '"edge" is not one of ["heads", "tails"]'}]
    error = await rpc.error("exchange.resolve", {**request, "extra": 1})
    assert error["code"] == -32602
    assert await rpc.error("coin.house_rule", {"id": "H-COIN-TRIPLE"}) == {
        "code": 4710, "message": "No such house rule",
        "data": {"id": "H-COIN-TRIPLE", "known": ["H-COIN-DOUBLE"]}}
    error = await rpc.error("exchange.resolve", {
        **request, "attacker": {"id": "ann", "name": "Ann", "luck": 11}})
    assert error["data"]["errors"][0]["path"] == "/attacker/luck"


def test_every_name_the_guide_imports_is_exported() -> None:
    """A name the guide gives as ``engine.X`` or ``companion.plugins.X`` is in that
    package's ``__all__``, so a plugin imports it from there, not from a module inside."""
    for package, prefix in ((engine, "engine"), (companion.plugins, "companion.plugins")):
        names = set(re.findall(rf"`{re.escape(prefix)}\.([A-Z]\w*)", GUIDE))
        assert names, prefix
        assert names <= set(package.__all__), (prefix, names - set(package.__all__))
