"""The real app, built by ``create_app`` and served by pytest-aiohttp's test server."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from companion.app import create_app
from companion.settings import Limits, Settings, installed_plugins

GROUP = "mindscape.plugins"
SAMPLE = EntryPoint("sample", "tests.sample_plugin:PLUGIN", GROUP)
FAULTY = EntryPoint("faulty", "tests.sample_plugin:FAULTY", GROUP)

ClientFactory = Callable[..., Any]


def with_plugins(*extra: EntryPoint) -> Callable[[], Iterable[EntryPoint]]:
    """The installed entry points (the built-in systems) plus ``extra``."""
    return lambda: [*installed_plugins(), *extra]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", plugins=with_plugins(SAMPLE, FAULTY),
                    limits=Limits(ws_auth_timeout=0.5), log_stream=io.StringIO())


class Rpc:
    """A test client with the token, and helpers for one call or a raw body."""

    def __init__(self, client: TestClient[Any, Any], token: str) -> None:
        self.client = client
        self.token = token
        self._id = 0

    @property
    def auth(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    async def post(self, body: Any, headers: dict[str, str] | None = None) -> Any:
        return await self.client.post("/rpc", json=body,
                                      headers={**self.auth, **(headers or {})})

    async def raw(self, body: Any) -> Any:
        response = await self.post(body)
        assert response.status == 200
        return await response.json()

    async def call(self, method: str, params: Any = None) -> dict[str, Any]:
        """The whole response object of one call."""
        self._id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": self._id}
        if params is not None:
            message["params"] = params
        answer: dict[str, Any] = await self.raw(message)
        assert answer["id"] == self._id
        return answer

    async def ok(self, method: str, params: Any = None) -> Any:
        """The result of a call that must succeed."""
        answer = await self.call(method, params)
        assert "error" not in answer, answer
        return answer["result"]

    async def error(self, method: str, params: Any = None) -> dict[str, Any]:
        """The error object of a call that must fail."""
        answer = await self.call(method, params)
        assert "result" not in answer, answer
        error: dict[str, Any] = answer["error"]
        return error


@pytest.fixture
async def client(aiohttp_client: ClientFactory, settings: Settings) -> TestClient[Any, Any]:
    result: TestClient[Any, Any] = await aiohttp_client(create_app(settings))
    return result


@pytest.fixture
def rpc(client: TestClient[Any, Any], settings: Settings) -> Rpc:
    return Rpc(client, settings.token_path.read_text().strip())
