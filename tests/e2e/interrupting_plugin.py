"""A plugin whose loading interrupts the daemon's start, as a GM's Ctrl+C (or a service
manager's SIGTERM) would while the start is under way: it sends its own process the
signal named by ``$MINDSCAPE_TEST_SIGNAL``, then lets the start go on for a moment so
that the signal arrives mid-start. Loaded only through the entry point that
``test_daemon.py`` installs; the plugin it offers is the sample plugin."""

from __future__ import annotations

import os
import signal
import time

from tests.sample_plugin import PLUGIN

__all__ = ["PLUGIN"]

os.kill(os.getpid(), signal.Signals[os.environ["MINDSCAPE_TEST_SIGNAL"]])
time.sleep(0.3)
