"""Every style is written with theme variables, so each theme (dark, light, high contrast, a
user's) colours every pane; a literal colour would look right in one theme and wrong in the rest."""
from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import ctxfst_tui.ui

STYLES = Path(ctxfst_tui.ui.__file__).parent / "styles"
COLOUR_WORDS = "red|green|blue|yellow|white|black|magenta|cyan|grey|gray|orange|purple|pink|ansi_\\w+"
LITERAL_COLOUR = re.compile(rf"#[0-9a-fA-F]{{3,8}}\b|\brgba?\(|\bhsla?\(|:\s*[^;$]*\b({COLOUR_WORDS})\b")


def css_sources() -> dict[str, str]:
    found = {p.name: p.read_text(encoding="utf-8") for p in STYLES.glob("*.tcss")}
    for info in pkgutil.walk_packages(ctxfst_tui.ui.__path__, "ctxfst_tui.ui."):
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            css = vars(value).get("DEFAULT_CSS") if isinstance(value, type) else None  # its own, not inherited
            if isinstance(value, type) and isinstance(css, str) and value.__module__ == info.name and css.strip():
                found[f"{info.name}.{name}"] = css
    return found


def test_there_are_styles_to_check():
    sources = css_sources()
    assert len([n for n in sources if n.endswith(".tcss")]) >= 10
    assert any("ConfirmScreen" in n for n in sources)


def test_styles_use_theme_variables_only():
    offenders = []
    for name, css in css_sources().items():
        css = re.sub(r"/\*.*?\*/", "", css, flags=re.S)
        for number, line in enumerate(css.splitlines(), 1):
            if LITERAL_COLOUR.search(line):
                offenders.append(f"{name}:{number}: {line.strip()}")
    assert offenders == []


def test_the_check_catches_literal_colours():
    for line in ("color: red;", "background: #ff0000;", "color: rgb(1, 2, 3);", "border: round ansi_blue;"):
        assert LITERAL_COLOUR.search(line), line
    for line in ("color: $text-muted;", "border: round $foreground 25%;", "background: $primary 40%;", "text-style: bold;"):
        assert not LITERAL_COLOUR.search(line), line
