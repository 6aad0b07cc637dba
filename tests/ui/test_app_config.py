"""The App with its config, state and help screen, end to end: restore on start, keymap, theme, bad files."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxfst_tui import config as cfg
from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.modals.help import HelpScreen
from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen

from pilot import notifications, settle

DOC = '---\ntitle: "One"\nchunks:\n  - id: a:b\n    context: "x"\n---\n\n<Chunk id="a:b">\nText.\n</Chunk>\n'


@pytest.fixture(autouse=True)
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cfg.CONFIG_ENV, str(tmp_path / "config"))
    monkeypatch.setenv(cfg.STATE_ENV, str(tmp_path / "state"))


async def test_broken_config_and_state_still_start_then_state_saved_on_quit_and_restored(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.md").write_text(DOC)
    (folder / "sub" / "b.md").write_text(DOC)
    path = cfg.config_path()
    path.parent.mkdir(parents=True)
    path.write_text('theme = "nope\n')
    cfg.state_path().parent.mkdir(parents=True)
    cfg.state_path().write_text("{broken")

    # 1. A broken config and a broken state file: the app starts, says so; its quit saves the state.
    app = WorkbenchApp(folder)
    notified = notifications(app)
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(app, pilot)
        notes = [message for _, message, _ in notified]
        screen = app.screen
        assert isinstance(screen, WorkbenchScreen)
        screen.open(folder / "sub" / "b.md")
        await settle(app, pilot)
        await pilot.press("2")
        app.theme = "ctxfst-light"
        await pilot.press("q")
        await pilot.pause()
    assert any(":1:" in n and "not valid TOML" in n for n in notes)
    assert any("starting afresh" in n for n in notes)
    data = json.loads(cfg.state_path().read_text())
    entry = data["folders"][str(folder.resolve())]
    assert (entry["document"], entry["tab"], data["theme"]) == ("sub/b.md", "chunks", "ctxfst-light")
    assert data["model"] == {"source": "bundled"}

    # 2. The next start (no config file) restores the document, the tab and the theme.
    path.unlink()
    app = WorkbenchApp(folder)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(app, pilot)
        await settle(app, pilot)
        screen = app.screen
        assert isinstance(screen, WorkbenchScreen)
        assert screen.current == folder / "sub" / "b.md"
        assert str(screen.query_one("#lower").active) == "chunks-tab"
        assert app.theme == "ctxfst-light"


async def test_config_keys_theme_and_help(tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text(DOC)
    path = cfg.config_path()
    path.parent.mkdir(parents=True)
    path.write_text('theme = "ctxfst-high-contrast"\n[keys]\nhelp = "h"\nsavve = "f2"\n[model]\nn_threads = 3\n[layout]\ntab = "diagnosis"\n')
    app = WorkbenchApp(folder)
    notified = notifications(app)
    notes = []
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(app, pilot)
        notes = [message for _, message, _ in notified]
        assert app.theme == "ctxfst-high-contrast"
        assert app.models.settings.n_threads == 3
        assert str(app.screen.query_one("#lower").active) == "diagnosis-tab"
        await pilot.press("h")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        rows = {r.binding_id: r.keys for g in app.screen.groups for r in g.rows}
        assert rows["help"] == "h"
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, WorkbenchScreen)
    assert any("savve" in n and ":4:" in n for n in notes), notes
