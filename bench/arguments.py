"""Option types the benchmarks share: a run they cannot make (no second, no round, no
connection) is refused by argparse before anything starts, rather than ending in a
traceback after it."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def number(kind: type[int] | type[float], *, least: float | None = None,
           above: float | None = None) -> Callable[[str], int | float]:
    """An argparse type: a number of ``kind`` no smaller than ``least`` and larger than
    ``above`` (NaN is neither)."""
    def parse(text: str) -> int | float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if least is not None and not value >= least:
            raise argparse.ArgumentTypeError(f"{text} is less than {least:g}")
        if above is not None and not value > above:
            raise argparse.ArgumentTypeError(f"{text} is not above {above:g}")
        if value != value:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number")
        return value
    return parse
