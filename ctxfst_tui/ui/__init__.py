"""The Textual workbench: an App, its screens, the panes and their styles.

Everything that touches Textual lives here; the core (``ctxfst_tui.core``) never imports it.
"""
