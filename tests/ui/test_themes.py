"""Themes come from the package (importlib.resources), then from the user's config dir."""
from __future__ import annotations

import os
from importlib.resources import files

from ctxfst_tui.config import config_dir
from ctxfst_tui.ui import themes
from ctxfst_tui.ui.themes import load_themes, user_themes_dir

from pilot import notifications

SHIPPED = {"ctxfst-dark", "ctxfst-light", "ctxfst-high-contrast"}


def test_shipped_themes_are_read_from_the_package_not_the_checkout():
    folder = themes.bundled_themes_dir()
    assert str(folder) == str(files("ctxfst_tui.themes_data"))
    assert {e.name for e in folder.iterdir() if e.name.endswith(".toml")} == {f"{n}.toml" for n in SHIPPED}
    assert not hasattr(themes, "THEMES_DIR")  # no path built relative to the repository any more
    found, problems = load_themes()
    assert SHIPPED <= {t.name for t in found} and problems == []


def test_user_themes_load_from_the_config_dir_and_a_broken_one_is_reported(tmp_path):
    mine = user_themes_dir()
    assert mine == config_dir() / "themes"
    mine.mkdir(parents=True)
    (mine / "mine.toml").write_text('name = "mine"\nprimary = "#123456"\n')
    (mine / "ctxfst-dark.toml").write_text('name = "ctxfst-dark"\nprimary = "#654321"\n')  # replaces the shipped one
    (mine / "bad.toml").write_text('name = "bad"\nprimary = "not a colour"\n')
    (mine / "extra.toml").write_text('name = "extra"\nprimary = "#000000"\nfont = "x"\n')
    os.mkfifo(mine / "pipe.toml")  # never opened: it would block the start
    (mine / "notes.txt").write_text("not a theme")
    found, problems = load_themes()
    names = [t.name for t in found]
    assert "mine" in names and SHIPPED <= set(names)
    assert names.count("ctxfst-dark") == 2  # the shipped one, then the user's
    last_dark = [t for t in found if t.name == "ctxfst-dark"][-1]
    assert last_dark.primary == "#654321"  # registered last: the user's wins
    assert sorted(p.split(": ")[0] for p in problems) == sorted(str(mine / n) for n in ("bad.toml", "extra.toml", "pipe.toml"))
    assert all("theme skipped" in p for p in problems)
    assert "unknown key font" in next(p for p in problems if "extra.toml" in p)


async def test_the_app_offers_a_user_theme_and_reports_a_broken_one(tmp_path):
    from ctxfst_tui.ui.app import WorkbenchApp

    mine = user_themes_dir()
    mine.mkdir(parents=True)
    (mine / "sea.toml").write_text('name = "sea"\nprimary = "#0a5f7a"\nbackground = "#001018"\ndark = true\n')
    (mine / "bad.toml").write_text("primary = = 1")
    app = WorkbenchApp(tmp_path, backend_factory=lambda s: None, watch_disk=False)
    notified = notifications(app)
    async with app.run_test() as pilot:
        await pilot.pause()
        assert any("bad.toml: theme skipped" in message for _, message, _ in notified)
        assert "sea" in app.available_themes
        app.theme = "sea"
        await pilot.pause()
        assert app.current_theme.primary == "#0a5f7a"
