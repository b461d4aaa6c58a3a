"""``python -m companion`` runs the same CLI as the ``mindscape`` console script."""

from __future__ import annotations

from .cli import main

raise SystemExit(main())
