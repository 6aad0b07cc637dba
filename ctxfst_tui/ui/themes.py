"""Themes as data: every ``*.toml`` in ``themes/`` becomes a Textual Theme.

A broken theme file is reported and skipped, never fatal, so a user's experiment
cannot stop the workbench from starting.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

from textual.theme import Theme

THEMES_DIR = Path(__file__).resolve().parents[2] / "themes"
DEFAULT_THEME = "ctxfst-dark"
THEME_FIELDS = {"primary", "secondary", "warning", "error", "success", "accent", "foreground",
                "background", "surface", "panel", "boost", "dark", "luminosity_spread", "text_alpha", "variables"}


def load_themes(folder: Path = THEMES_DIR) -> tuple[list[Theme], list[str]]:
    """(themes, one-line problems) from the ``*.toml`` files of ``folder``."""
    themes: list[Theme] = []
    problems: list[str] = []
    for path in sorted(folder.glob("*.toml")) if folder.is_dir() else []:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
            name = data.pop("name", path.stem)
            unknown = set(data) - THEME_FIELDS
            if unknown:
                raise ValueError(f"unknown key(s) {', '.join(sorted(unknown))}")
            if "primary" not in data:
                raise ValueError("'primary' is required")
            theme = Theme(name=str(name), **data)
            theme.to_color_system()  # fails now, on a bad colour, rather than at render time
            themes.append(theme)
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, TypeError, ValueError, Exception) as exc:
            problems.append(f"{path}: theme skipped: {exc}")
    return themes, problems
