"""Mindscape's companion daemon: a local JSON-RPC 2.0 service over HTTP and WebSocket.

``create_app(settings)`` in ``companion.app`` is the one composition root; the CLI in
``companion.cli`` resolves settings from the command line and starts it.
"""

from __future__ import annotations

#: JSON-RPC interface version (API.md); bumped on incompatible changes.
API_VERSION = "1"
