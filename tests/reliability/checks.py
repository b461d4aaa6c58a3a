"""What no answer of the daemon may contain: exception text, tracebacks, source paths."""

from __future__ import annotations

import re

#: A Python traceback, an exception's repr (``KeyError('x')``, ``ValueError: ...``), a
#: source file path or a frame line.
LEAKS = re.compile(
    r"Traceback \(most recent call last\)"
    r"|\b[A-Z][A-Za-z]*(?:Error|Exception|Exit|Interrupt)\("
    r"|\b[A-Z][A-Za-z]*(?:Error|Exception): "
    r"|File \"[^\"]+\", line \d+"
    r"|/[\w./-]+\.py\b"
    r"|site-packages"
    r"|<(?:function|bound method|coroutine|object) [^>]*>")


def leaks(text: str) -> list[str]:
    """Every fragment of ``text`` that looks like an exception or a source path."""
    return [m.group(0) for m in LEAKS.finditer(text)]


def assert_clean(text: str) -> None:
    """Fail when ``text`` (a response body) carries exception text or a source path."""
    found = leaks(text)
    assert not found, f"the answer leaks {found[:3]}: {text[:500]}"
