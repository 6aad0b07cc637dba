"""Themes as data: every ``*.toml`` shipped with the package, then every one in the user's
``<config dir>/themes/``, becomes a Textual Theme.

The shipped ones are package data (``ctxfst_tui.themes_data``, the repository's ``themes/``
folder), read through importlib.resources so a wheel finds them as well as a checkout does. A
user theme of the same name replaces the shipped one. A broken theme file is reported and skipped,
never fatal, so a user's experiment cannot stop the workbench from starting.
"""
from __future__ import annotations

import tomllib
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from textual.theme import Theme

from ctxfst_tui.config import config_dir
from ctxfst_tui.core.text.plural import noun

THEMES_PACKAGE = "ctxfst_tui.themes_data"
DEFAULT_THEME = "ctxfst-dark"
THEME_FIELDS = {"primary", "secondary", "warning", "error", "success", "accent", "foreground",
                "background", "surface", "panel", "boost", "dark", "luminosity_spread", "text_alpha", "variables"}


def bundled_themes_dir() -> Traversable:
    """The shipped themes, wherever the package is installed."""
    return files(THEMES_PACKAGE)


def user_themes_dir() -> Path:
    """Where a user puts their own ``*.toml`` themes."""
    return config_dir() / "themes"


def load_themes(folder: Path | Traversable | None = None) -> tuple[list[Theme], list[str]]:
    """(themes, one-line problems): the ``*.toml`` files of ``folder``, or by default the shipped
    themes followed by the user's."""
    if folder is not None:
        return _load_folder(folder)
    themes, problems = _load_folder(bundled_themes_dir())
    mine, my_problems = _load_folder(user_themes_dir())
    return themes + mine, problems + my_problems


def _load_folder(folder: Path | Traversable) -> tuple[list[Theme], list[str]]:
    themes: list[Theme] = []
    problems: list[str] = []
    try:
        entries = sorted((e for e in folder.iterdir() if e.name.endswith(".toml")), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        entries = []
    except OSError as exc:
        return themes, [f"{folder}: themes not read: {exc.strerror or exc}"]
    for entry in entries:
        try:
            themes.append(_theme_from(entry))
        except Exception as exc:  # any broken file is one problem line, never a failed start
            problems.append(f"{entry}: theme skipped: {exc}")
    return themes, problems


def _theme_from(entry: Path | Traversable) -> Theme:
    if not entry.is_file():
        raise ValueError("not a regular file")
    data = tomllib.loads(entry.read_text(encoding="utf-8"))
    name = data.pop("name", entry.name.removesuffix(".toml"))
    unknown = set(data) - THEME_FIELDS
    if unknown:
        raise ValueError(f"unknown {noun(len(unknown), 'key')} {', '.join(sorted(unknown))}")
    if "primary" not in data:
        raise ValueError("'primary' is required")
    theme = Theme(name=str(name), **data)
    theme.to_color_system()  # fails now, on a bad colour, rather than at render time
    return theme
