"""The in-process core: documents, validation, export, graphs.

Nothing under ``core`` may import textual or rich (a test checks ``sys.modules``), so the
headless command line and scripts can use it without a terminal UI.
"""
