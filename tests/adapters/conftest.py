"""The daemon's fixtures (the real app through ``create_app``), for the tests that check
adapters through the RPC methods that use them."""

from tests.companion.conftest import client, rpc, settings

__all__ = ["client", "rpc", "settings"]
