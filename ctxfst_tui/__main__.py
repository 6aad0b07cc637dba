"""``python -m ctxfst_tui``: the same entry point as the ``ctxfst-tui`` script."""
import sys

from ctxfst_tui.cli import main

sys.exit(main())
