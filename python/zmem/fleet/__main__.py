"""``python -m zmem.fleet``: the ``zmem-fleet`` command (:func:`zmem.fleet.cli.main`)."""

from __future__ import annotations

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
