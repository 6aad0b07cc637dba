"""Screens: each one mediates between its panes and calls the core."""
