"""The shipped themes, packaged as ``ctxfst_tui.themes_data`` (see pyproject.toml's package-dir)."""
