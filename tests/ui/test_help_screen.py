"""The help screen lists the keys a press would really reach: focused pane first, remapped keys shown."""
from __future__ import annotations

from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widget import Widget

from ctxfst_tui import config as cfg
from pilot import started
from ctxfst_tui.ui.screens.modals.help import (
    MOVING_AROUND,
    HelpScreen,
    KeyTable,
    binding_catalogue,
)

SMALL = (80, 24)


@pytest.fixture(autouse=True)
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never the real user's config or state, also once the app reads them."""
    monkeypatch.setenv(cfg.CONFIG_ENV, str(tmp_path / "config"))
    monkeypatch.setenv(cfg.STATE_ENV, str(tmp_path / "state"))


class Pad(Widget, can_focus=True):
    BINDINGS = [
        Binding("x", "poke", "Poke", id="pad.poke"),
        Binding("y", "yank", "Yank", id="pad.yank"),
        Binding("w", "wipe", "Wipe", id="pad.wipe"),  # disabled (check_action None): dimmed
        Binding("h", "hidden", "Hidden", id="pad.hidden"),  # check_action False: not listed
        Binding("s", "shadow", "Shadowing", id="pad.shadow"),
    ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return {"wipe": None, "hidden": False}.get(action, True)


class Home(Screen[None]):
    BINDINGS = [Binding("s", "thing", "Screen thing", id="screen.thing"),
                Binding("t", "other", "Other", id="screen.other")]

    def compose(self) -> ComposeResult:
        yield Pad(id="pad")

    def on_mount(self) -> None:
        self.query_one(Pad).focus()


class Small(App[None]):
    BINDINGS = [Binding("question_mark,f1", "help", "Help", id="help"),
                Binding("ctrl+s", "save", "Save", id="save")]

    def get_default_screen(self) -> Screen:
        return Home()

    def action_help(self) -> None:
        self.push_screen(HelpScreen())


def rows_by_id(screen: HelpScreen) -> dict[str, tuple[int, str, bool]]:
    """binding id → (group index, keys shown, enabled)."""
    assert screen.groups is not None
    return {r.binding_id: (i, r.keys, r.enabled) for i, g in enumerate(screen.groups) for r in g.rows if r.binding_id}


async def open_help(app: Small, pilot, key: str = "f1") -> HelpScreen:
    await pilot.press(key)
    await pilot.pause()
    assert isinstance(app.screen, HelpScreen), f"opened by {key!r}"
    return app.screen


async def test_help_closes_fits_80x24_and_lists_focused_screen_app_with_remapped_keys() -> None:
    """One app: each closing key in turn, the layout at 80x24, then the groups with a keymap."""
    app = Small()
    async with app.run_test(size=SMALL) as pilot:
        # Each of escape, q, ? and f1 closes it, and the focus goes back where it was.
        for key in ("escape", "q", "question_mark", "f1"):
            await open_help(app, pilot)
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, Home), f"closed by {key!r}"
            assert isinstance(app.screen.focused, Pad), f"focus back where it was after {key!r}"

        # Readable at 80x24: the dialog fits, the note is never cut off, the body scrolls.
        await open_help(app, pilot)
        dialog = app.screen.query_one("#help-dialog")
        assert dialog.region.right <= 80 and dialog.region.bottom <= 24
        note = app.screen.query_one("#help-note")
        assert note.region.bottom <= dialog.region.bottom  # the palette / config line is never cut off
        assert str(cfg.config_path()) in str(note.render())
        body = app.screen.query_one("#help-body")
        assert app.screen.focused is body  # arrows and page keys scroll it
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, Home) and isinstance(app.screen.focused, Pad)

        # Focused widget first, then the screen, then the app, with the keymap's keys.
        app.set_keymap({"pad.poke": "z,ctrl+x", "save": "f2"})
        screen = await open_help(app, pilot, "question_mark")
        titles = [g.title for g in screen.groups]
        assert titles[:3] == ["Pad (focused)", "Home", "Everywhere"]  # human titles, never class names
        assert titles[3:] in ([], [MOVING_AROUND])  # Textual's own keys without an id, if any, last
        rows = rows_by_id(screen)
        assert rows["pad.poke"] == (0, "z, ^x", True)  # the keymap's keys, not the declared x
        assert rows["pad.yank"] == (0, "y", True)
        assert rows["pad.wipe"] == (0, "w", False)
        assert "pad.hidden" not in rows
        assert rows["pad.shadow"][0] == 0 and "screen.thing" not in rows  # s reaches the pad, not the screen
        assert rows["screen.other"][0] == 1
        assert rows["save"] == (2, "f2", True) and rows["help"] == (2, "?, f1", True)
        # and it is what is drawn
        tables = list(screen.query(KeyTable))
        assert [t.rows for t in tables] == [g.rows for g in screen.groups]
        text = app.export_screenshot().replace("&#160;", " ")
        assert "pad.poke" in text and "Poke" in text and "Pad (focused)" in text


def test_catalogue_lists_each_id_once_with_its_declared_keys() -> None:
    assert binding_catalogue([Pad, Home, Small]) == [
        ("help", "question_mark,f1", "Help"), ("pad.hidden", "h", "Hidden"), ("pad.poke", "x", "Poke"),
        ("pad.shadow", "s", "Shadowing"), ("pad.wipe", "w", "Wipe"), ("pad.yank", "y", "Yank"),
        ("save", "ctrl+s", "Save"), ("screen.other", "t", "Other"), ("screen.thing", "s", "Screen thing"),
    ]


# ---------------------------------------------------------------- the real workbench

DOC = '---\ntitle: "One"\nchunks:\n  - id: a:b\n    context: "x"\n---\n\n<Chunk id="a:b">\nText.\n</Chunk>\n'


async def test_workbench_help_lists_tree_screen_and_app_keys(tmp_path: Path) -> None:
    from ctxfst_tui.ui.app import WorkbenchApp
    from ctxfst_tui.ui.screens.workbench.screen import WorkbenchScreen
    from ctxfst_tui.ui.widgets.document.tree import DocumentTree

    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "one.md").write_text(DOC, encoding="utf-8")
    path = cfg.config_path()
    path.parent.mkdir(parents=True)
    path.write_text('[keys]\nreload = "f5"\n"tree.open" = "o"\nreloda = "f6"\n', encoding="utf-8")
    config = cfg.load_config()
    known = [i for i, _, _ in binding_catalogue()]
    assert {"reload", "tree.open", "save", "show-source"} <= set(known)
    [problem] = config.keymap_problems(known)
    assert problem.startswith(f"{path}:4:") and "did you mean 'reload'" in problem

    app = WorkbenchApp(folder)
    async with app.run_test(size=SMALL) as pilot:
        await started(app, pilot)
        app.set_keymap(config.keymap)
        assert isinstance(app.screen.focused, DocumentTree)
        await app.push_screen(HelpScreen())
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, HelpScreen)
        assert screen.groups[0].title == "Documents (focused)"
        rows = rows_by_id(screen)
        assert rows["tree.open"] == (0, "o", True)
        assert rows["reload"][:2] == (1, "f5") and rows["show-source"][0] == 1
        assert rows["save"][0] == rows["undo"][0] == rows["contextualize"][0] == 1  # the workbench's own keys
        assert rows["quit"][0] == rows["help"][0] == len(screen.groups) - 2  # "Everywhere": the App's
        assert screen.groups[len(screen.groups) - 2].title == "Everywhere"
        assert screen.groups[-1].title.startswith("Moving around")  # the tree's cursor keys, last
        assert all(r.binding_id is None for r in screen.groups[-1].rows)
        assert all(r.binding_id for g in screen.groups[:-1] for r in g.rows)
        await pilot.press("escape")  # the app's escape (cancel job) stands aside: no job runs
        await pilot.pause()
        assert isinstance(app.screen, WorkbenchScreen)


def test_config_tab_names_are_the_workbench_tabs() -> None:
    from ctxfst_tui.ui.screens.workbench import screen as workbench

    assert {f"{t}-tab" for t in cfg.TABS} == set(workbench.TABS)
