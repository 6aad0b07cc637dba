"""FixedInput: typing repaints the field without asking the screen for a layout, and still scrolls."""
from __future__ import annotations

from textual.app import App, ComposeResult

from ctxfst_tui.ui.widgets.fixed_input import FixedInput


class OneField(App):
    CSS = "FixedInput { width: 20; } .-hidden { display: none; }"

    def compose(self) -> ComposeResult:
        yield FixedInput(id="field")


async def test_typing_scrolls_to_the_cursor_without_a_screen_layout_and_hiding_still_lays_out(monkeypatch):
    from textual.widget import Widget

    asked: list[bool] = []
    original = Widget.refresh

    def spy(self, *regions, repaint=True, layout=False, recompose=False):  # noqa: ANN001, ANN002, ANN202
        if isinstance(self, FixedInput):
            asked.append(layout)
        return original(self, *regions, repaint=repaint, layout=layout, recompose=recompose)

    monkeypatch.setattr(Widget, "refresh", spy)
    app = OneField()
    async with app.run_test(size=(40, 6)) as pilot:
        field = app.query_one(FixedInput)
        field.focus()
        await pilot.pause()
        asked.clear()
        text = "write-ahead log and connection pooling"
        await pilot.press(*text)
        await pilot.pause()
        assert field.value == text and field.cursor_position == len(text)
        assert asked and not any(asked), "typing asked the screen for a layout"
        assert field.scroll_x > 0  # the cursor at the end of 38 characters in a 20-cell field is in view
        assert field.virtual_size.width == len(text) + 1
        field.add_class("-hidden")
        await pilot.pause()
        assert any(asked) and field.region.width == 0  # a style change still re-arranges the screen
