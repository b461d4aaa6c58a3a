"""``GET /``: a small human status page (no token on it, no authentication needed)."""

from __future__ import annotations

import base64
import hashlib
import time
from html import escape

from aiohttp import web

from . import API_VERSION
from .keys import SERVICES
from .logs import shortened

#: Most characters shown of what a client sent (its user agent, the method it called)
SHOWN = 120

#: The page's one style sheet, the only thing its Content-Security-Policy lets it load.
STYLE = ("body{font:15px/1.45 system-ui,sans-serif;max-width:46em;margin:2em auto;"
         "padding:0 1em}\ncode{background:#eee;padding:0 .25em} .err{color:#a00}")

#: The page needs nothing but its own style sheet: no script, image, frame, form or
#: fetch, and no page may frame it. Should a name shown on it (a plugin's error, a
#: client's user agent) ever escape the escaping, the browser still runs nothing.
POLICY = ("default-src 'none'; style-src 'sha256-"
          + base64.b64encode(hashlib.sha256(STYLE.encode()).digest()).decode()
          + "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

#: Headers of the page: never cached, the policy above, no type sniffing, no referrer.
HEADERS = {"Cache-Control": "no-store", "Content-Security-Policy": POLICY,
           "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer"}


def _ago(when: float) -> str:
    seconds = max(0, int(time.time() - when))
    return f"{seconds} s ago" if seconds < 120 else f"{seconds // 60} min ago"


def _sent(text: str | None) -> str:
    """What a client sent, for the page: redacted as the log is (a client may put the
    token in a user agent or a method name, and this page needs no token), cut short,
    escaped."""
    return escape(shortened(text or "?", SHOWN))


def _list(items: list[str]) -> str:
    if not items:
        return "<p>none</p>"
    return "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


async def status_page(request: web.Request) -> web.Response:
    """Version, systems, adapters, plugins, how to pair a VTT, what is connected."""
    services = request.app[SERVICES]
    settings = services.settings
    host = request.headers.get('Host', f'127.0.0.1:{settings.port}')
    url, ws_url = f"http://{host}", f"ws://{host}"
    systems = [f"<b>{escape(s.id)}</b> — {escape(s.name)} <small>({escape(s.source)})</small>"
               for s in services.systems.values()]
    adapters = [f"<b>{escape(a.id)}</b> — {escape(a.description)}"
                for a in services.adapters.values()]
    plugins = []
    for report in services.plugins.reports:
        line = f"<b>{escape(report.name)}</b> {escape(report.version or '')}"
        if report.error:
            line += f" — <span class=err>skipped: {escape(report.error)}</span>"
        elif report.methods:
            line += " — methods " + ", ".join(escape(m) for m in report.methods)
        plugins.append(line)
    sockets = [f"#{p.number} from {escape(p.origin or p.remote or '?')} "
               f"({_sent(p.user_agent)}), connected {_ago(p.connected_at)}, "
               f"watching {len(p.watching)} encounter(s)"
               for p in sorted(services.hub.peers, key=lambda p: p.number)]
    clients = [f"{escape(c.origin or c.remote or '?')} ({_sent(c.user_agent)}): "
               f"{c.calls} call(s), last {_sent(c.last_method)} {_ago(c.last_seen)}"
               for c in services.hub.recent_clients()]
    body = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Mindscape companion</title>
<style>{STYLE}</style></head><body>
<h1>Mindscape companion</h1>
<p>Version {escape(services.version)}, API {API_VERSION}, running since
{escape(time.strftime('%Y-%m-%d %H:%M:%S %z', time.localtime(services.started_at)))}.
JSON-RPC at <code>{escape(url)}/rpc</code> and <code>{escape(ws_url)}/ws</code>.</p>
<h2>Pair a virtual tabletop</h2>
<ol>
<li>Show the access token in a terminal: <code>{escape(settings.token_command)}</code>
(it is stored in <code>{escape(str(settings.token_path))}</code>; it is not shown here).</li>
<li>Foundry VTT (as the GM): <i>Game Settings › Configure Settings › Mindscape › Pair
with the companion</i>; check the address <code>{escape(url)}</code>, paste the token and
press <i>Test the connection</i> (the token is a client setting, kept in that browser
only).</li>
<li>Roll20 (with the Mindscape bridge userscript): open the game as GM, click the
<i>Mindscape</i> badge bottom left, give <i>Companion URL</i> <code>{escape(url)}</code>
and the token, press <i>Save and test</i>; then type <code>!psi pair</code> in the chat,
paste the code it whispers to you under <i>Pairing code</i> and press <i>Save and
test</i> again: the badge turns to <i>Mindscape: connected</i> (see docs/ROLL20.md for
when <code>--allow-origin https://app.roll20.net</code> is needed).</li>
<li>Browsers on other pages than <code>{escape(', '.join(settings.allow_origins))}</code>
are refused; start the daemon with <code>--allow-origin https://your.foundry.host</code>
to allow another one.</li>
</ol>
<h2>Systems</h2>{_list(systems)}
<h2>Adapters</h2>{_list(adapters)}
<h2>Plugins</h2>{_list(plugins)}
<h2>Connected</h2>
<h3>WebSockets</h3>{_list(sockets)}
<h3>Recent HTTP clients</h3>{_list(clients)}
</body></html>
"""
    # A header that was not UTF-8 reaches us with surrogate escapes; the page shows
    # the replacement character for it instead of failing.
    return web.Response(body=body.encode("utf-8", "replace"),
                        content_type="text/html", charset="utf-8",
                        headers=HEADERS)


async def healthz(request: web.Request) -> web.Response:
    """Liveness without authentication and without detail."""
    return web.json_response({"status": "ok"})
