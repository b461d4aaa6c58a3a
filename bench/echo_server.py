"""The baseline: a bare aiohttp server that parses a JSON body and sends it back.

``python bench/echo_server.py PORT``; used by ``bench/rpc_throughput.py``.
"""

from __future__ import annotations

import sys

from aiohttp import web


async def echo(request: web.Request) -> web.Response:
    """Parse the JSON body and answer it as JSON (what any JSON endpoint must do)."""
    return web.json_response(await request.json())


def main() -> None:
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        print(f"usage: {sys.argv[0]} PORT", file=sys.stderr)
        raise SystemExit(2)
    app = web.Application()
    app.router.add_post("/rpc", echo)
    print("ready", flush=True)
    web.run_app(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=None,
                print=None)


if __name__ == "__main__":
    main()
