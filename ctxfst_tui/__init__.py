"""ctxfst-tui: a terminal workbench for CtxFST documents."""

__version__ = "0.1.0"
