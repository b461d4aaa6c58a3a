"""A plugin module that raises a ``BaseException`` of its own at import (and one that
raises ``KeyboardInterrupt``, with ``KEYBOARD`` set in the environment): the daemon
reports it and starts all the same."""

import os


class PluginAbort(BaseException):
    """Not an ``Exception``: a plugin's own idea of stopping everything."""


if os.environ.get("KEYBOARD"):
    raise KeyboardInterrupt
raise PluginAbort("secret detail")
