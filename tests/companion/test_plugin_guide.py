"""docs/PLUGINS.md: its worked example is the module the tests load, and does what the
guide says it does."""

from __future__ import annotations

import io
import json
import re
import sys
import tomllib
from importlib.metadata import PathDistribution
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

import companion.plugins
import engine
from companion.app import create_app
from companion.settings import Settings, installed_plugins

from .conftest import GROUP, Rpc
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


def _trying_it() -> str:
    """The guide's "Trying it", its lines joined (prose wraps where JSON may not)."""
    return " ".join(GUIDE[GUIDE.index("### Trying it"):].split())


def _install_from_the_guide(site: Path) -> None:
    """Do what the guide says: lay the package out as it shows, from its pyproject.toml
    and its module, and install it into ``site`` as pip would (the package, and a
    .dist-info with the project's name, version and entry points)."""
    layout = re.search(r"laid out as:\n\n```\n(.*?)```", GUIDE, re.S)
    assert layout is not None
    root, *files = [line.strip() for line in layout.group(1).splitlines()]
    assert root == "coin-duel/" and files == ["pyproject.toml", "coin_duel/__init__.py"]
    [pyproject] = [b for b in _blocks("toml") if "[project]" in b]
    project = tomllib.loads(pyproject)
    assert project["build-system"]["build-backend"] == "setuptools.build_meta"
    [package] = project["tool"]["setuptools"]["packages"]
    [module] = _blocks("python")
    (site / package).mkdir(parents=True)
    (site / files[1]).write_text(module, encoding="utf-8")
    meta = project["project"]
    info = site / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n")
    points = meta["entry-points"][GROUP]
    (info / "entry_points.txt").write_text(
        f"[{GROUP}]\n" + "".join(f"{n} = {t}\n" for n, t in points.items()))
    [entry_point] = PathDistribution(info).entry_points
    assert entry_point.group == GROUP


async def test_the_guides_example_installed_from_its_text_answers_as_the_guide_says(
        aiohttp_client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/PLUGINS.md "A worked example" and "Trying it": the package made of the
    guide's own blocks, laid out and installed as it says, loads under the daemon, and
    the calls it shows answer what it says they answer (taken from its text)."""
    site = tmp_path / "site"
    _install_from_the_guide(site)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "coin_duel", raising=False)
    try:
        # found as the daemon finds plugins: the environment's entry points
        settings = Settings(home=tmp_path / "home", plugins=installed_plugins,
                            log_stream=io.StringIO())
        client: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    finally:
        sys.modules.pop("coin_duel", None)
    rpc = Rpc(client, settings.token_path.read_text().strip())
    text = _trying_it()

    def said(pattern: str) -> Any:
        found = re.search(pattern, text)
        assert found is not None, pattern
        return json.loads(found.group(1))

    [report] = [p for p in (await rpc.ok("companion.info"))["plugins"] if not p["builtin"]]
    assert report == said(r"companion\.info` now lists `(\{.*?\})` under `plugins`")
    request = said(r"mindscape call exchange\.resolve '(\{.*?\})'")
    result = await rpc.ok("exchange.resolve", request)
    assert result["outcome"] == said(r'answers `"outcome": ("\w+")`')
    assert result["face"] == said(r'`"face": ("\w+")`')
    assert (result["defender"]["before"]["luck"], result["defender"]["after"]["luck"]) \
        == (3, 2)
    assert [(e["type"], e["combatant"]) for e in result["events"]] == [
        ("luck-spent", "ann"), ("luck-lost", "bo")]
    assert result["summary"] == said(r'the summary (".*?")\. The same call')
    edge = {**request, "attack": said(r'The same call with `"attack": (\{.*?\})`')}
    del edge["dice"]
    error = await rpc.error("exchange.resolve", edge)
    assert error["data"]["errors"] == [said(r"is -32602 with `(\{.*?\})`")]
    error = await rpc.error("exchange.resolve", {**request, "extra": 1})
    assert error["code"] == -32602
    asked = said(r"`coin\.house_rule` with `(\{.*?\})` answers")
    [answered] = [b for b in _blocks("json") if '"code": 4710' in b]
    assert await rpc.error("coin.house_rule", asked) == json.loads(answered)
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
