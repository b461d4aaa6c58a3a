"""A WebSocket client that stops reading (a frozen tab, the holder of a leaked token):
it authenticates with the token subprotocol, asks for large answers and never reads
them, so the daemon's send queue for it fills up and stays full."""

from __future__ import annotations

import base64
import json
import os
import socket
import struct


def _frame(text: str) -> bytes:
    """One masked text frame, as a client sends it."""
    data = text.encode()
    mask = os.urandom(4)
    size = len(data)
    if size < 126:
        head = bytes([0x81, 0x80 | size])
    elif size < 65536:
        head = bytes([0x81, 0x80 | 126]) + struct.pack("!H", size)
    else:
        head = bytes([0x81, 0x80 | 127]) + struct.pack("!Q", size)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data))


def stalled(host: str, port: int, token: str, requests: int = 200) -> socket.socket:
    """An authenticated socket that has asked for ``requests`` rpc.discover answers
    (about 120 KB each) with a 4 KB receive buffer, and reads none of them."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, port))
    key = base64.b64encode(os.urandom(16)).decode()
    sock.sendall((f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                  f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                  "Sec-WebSocket-Version: 13\r\n"
                  f"Sec-WebSocket-Protocol: mindscape.v1, token.{token}\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(1)
    assert head.startswith(b"HTTP/1.1 101"), head
    request = _frame(json.dumps({"jsonrpc": "2.0", "method": "rpc.discover", "id": 1}))
    sock.setblocking(False)
    for _ in range(requests):
        try:
            sock.sendall(request)
        except BlockingIOError:
            break
    return sock
