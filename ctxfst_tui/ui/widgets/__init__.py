"""Panes: they render what the screen hands them and post intent messages; no business logic."""
