"""``python -m ctxfst_tui``: the same entry point as the ``ctxfst-tui`` script."""
import sys

from .cli import main

sys.exit(main())
