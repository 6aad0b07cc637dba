"""The key footer (issue #16, defect 7): at 80, 120 and 160 columns, in every view, each key shown is
shown whole (never `? Hel▏` or `u U U▏`), `? Help` is always there, the palette key stays at the
right edge, and a click on an entry presses its key."""
from __future__ import annotations

from rich.cells import cell_len

from ctxfst_tui.ui.app import WorkbenchApp
from ctxfst_tui.ui.screens.modals.help import HelpScreen
from ctxfst_tui.ui.widgets.footer import KeyFooter
from pilot import settle, started, workbench_folder

VIEWS = "123456"


def footer_line(app) -> str:
    return app.screen._compositor.render_strips()[-1].text


def entry_text(item) -> str:
    return f"{item.key_text} {item.description}".strip()


async def test_every_key_shown_whole_help_always_there_and_a_click_presses_it(tmp_path):
    app = WorkbenchApp(workbench_folder(tmp_path))
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await started(app, pilot)
        seen_views = set()
        for width, height, views in ((80, 24, VIEWS), (120, 40, "135"), (160, 40, "1")):
            await pilot.resize_terminal(width, height)
            for view in views:
                await pilot.press(view)
                await settle(app, pilot)
                if screen.focused is not None and "Input" in type(screen.focused).__name__:
                    await pilot.press("escape")  # a query field took the focus: leave it as a user would
                    await settle(app, pilot)
                footer = screen.query_one(KeyFooter)
                line = footer_line(app)
                shown = footer.shown
                where = f"{width} cols, view {view}: {line!r}"
                assert cell_len(line) == width, where
                assert shown and any(item.action == "help" for item in shown), where
                # every entry drawn is whole, in order, and nothing else is in the line
                drawn = " ".join(line.split("▏")[0].split())
                assert drawn == " ".join(" ".join(entry_text(item) for item in shown).split()), where
                # an entry left out is left out whole: none of its description is on the line
                for item in footer.items:
                    if item not in shown and item.description not in {i.description for i in shown}:
                        assert f" {item.key_text} {item.description}" not in line, where
                assert line.rstrip().endswith("▏^p palette"), where
                seen_views.add(tuple(entry_text(item) for item in shown))
            if width == 160:  # wide enough for the whole list of the document view
                await pilot.press("1")
                await settle(app, pilot)
                assert [i for i in screen.query_one(KeyFooter).items] == screen.query_one(KeyFooter).shown
        assert len(seen_views) >= 7  # the keys follow the view

        # a click on `? Help` opens the help screen
        footer = screen.query_one(KeyFooter)
        start, _end, _item = next(span for span in footer._spans if span[2].action == "help")
        await pilot.click(KeyFooter, offset=(start + 1, 0))
        await settle(app, pilot)
        assert isinstance(app.screen, HelpScreen)
