"""The source view on its own: opening big texts, keys, goto, highlights, tabs and control characters, copy."""
from __future__ import annotations

import time
from pathlib import Path

from textual.app import App, ComposeResult

from ctxfst_tui.ui.widgets.document.source_view import SourceView

STYLES = Path(__file__).resolve().parents[2] / "ctxfst_tui" / "ui" / "styles"
SIZE = (80, 24)


class Host(App[None]):
    CSS_PATH = STYLES / "source_view.tcss"

    def __init__(self) -> None:
        super().__init__()
        self.moved: list[int] = []

    def compose(self) -> ComposeResult:
        yield SourceView(id="source")

    def on_mount(self) -> None:
        self.query_one(SourceView).focus()

    def on_source_view_cursor_moved(self, message: SourceView.CursorMoved) -> None:
        self.moved.append(message.line)


def numbered(n: int, width: int = 60) -> str:
    """``n`` lines, each starting with its 1-based number."""
    return "".join(f"line {i + 1:>6} " + "x" * (width - 12) + "\n" for i in range(n))


def novel(size: int = 3_000_000) -> str:
    """A novel-like text: paragraphs of hard-wrapped lines, curly quotes, dashes and tabs."""
    para = ("“It is a truth universally acknowledged,” said she — and\tthen, after a pause, the rest of "
            "the sentence ran on, as sentences in novels do, over several lines of print.\n") * 4 + "\n"
    return para * (size // len(para) + 1)


def view(app: App) -> SourceView:
    return app.query_one(SourceView)


def visible_rows(sv: SourceView) -> range:
    top = sv.scroll_offset.y
    return range(top, top + sv.scrollable_content_region.height)


def cursor_visible(sv: SourceView) -> bool:
    return sv.cursor_row in visible_rows(sv)


def background(strip, text: str):  # noqa: ANN001, ANN201
    """The background colour of the first segment holding ``text``."""
    return next(s.style.bgcolor for s in strip if text in s.text)


async def check_a_3_mb_text_opens_fast_and_keeps_its_lines(app: Host, pilot) -> None:
    sv = view(app)
    text = novel()
    assert len(text) >= 3_000_000
    t = time.perf_counter()
    sv.show_text(text, "novel.txt")
    took = time.perf_counter() - t
    # bench/tui.py measures the speed (well under 0.3 s); this only catches a per-line cost gone
    # quadratic, which takes minutes: the suite's cores are shared with other workers
    assert took < 5.0, took
    await pilot.pause()
    assert sv.text == text
    assert sv.line_count == text.count("\n") + 1
    assert sv.read_only and sv.show_line_numbers
    assert sv.cursor_location == (0, 0)
    assert "novel.txt" in str(sv.border_title) and str(sv.border_subtitle) == "Ln 1, Col 1"
    assert "“It is a truth" in sv.render_line(0).text
    # Keys stay cheap at the end of it too.
    await pilot.press("ctrl+end")
    assert sv.cursor_location == (sv.line_count - 1, 0) and cursor_visible(sv)


async def check_keys_move_the_cursor_and_the_view_follows(app: Host, pilot) -> None:
    sv = view(app)
    sv.show_text(numbered(500), "n.txt")
    await pilot.pause()
    page = sv.scrollable_content_region.height
    await pilot.press("down", "down", "down")
    assert sv.cursor_location == (3, 0)
    assert sv.scroll_offset.y == 0
    await pilot.press("pagedown")
    assert sv.cursor_location == (3 + page, 0)
    assert sv.scroll_offset.y == page and cursor_visible(sv)
    await pilot.press("pageup")
    assert sv.cursor_location == (3, 0) and sv.scroll_offset.y == 0
    await pilot.press("end")
    assert sv.cursor_location == (3, 60)
    await pilot.press("right")  # past the end: the next line's start
    assert sv.cursor_location == (4, 0)
    await pilot.press("left")
    assert sv.cursor_location == (3, 60)
    await pilot.press("home")
    assert sv.cursor_location == (3, 0)
    await pilot.press("ctrl+end")
    assert sv.cursor_location == (500, 0)  # the empty line after the last "\n"
    assert cursor_visible(sv) and sv.scroll_offset.y == sv.max_scroll_y
    await pilot.press("up")
    assert sv.cursor_location == (499, 0)
    assert "line    500" in sv.render_line(499 - sv.scroll_offset.y).text
    await pilot.press("ctrl+home")
    assert sv.cursor_location == (0, 0) and sv.scroll_offset.y == 0
    sv.move_cursor((page - 1, 0))  # the last line in view (the first downs are checked above)
    assert sv.scroll_offset.y == 0 and cursor_visible(sv)
    for _ in range(6):  # down past the bottom edge: one line of scroll per line
        await pilot.press("down")
    assert sv.cursor_location == (page + 5, 0) and cursor_visible(sv)
    assert sv.scroll_offset.y == 6
    assert str(sv.border_subtitle) == f"Ln {page + 6}, Col 1"
    # The cursor line is drawn in its own style (and its number in the gutter's).
    row = page + 5 - sv.scroll_offset.y
    assert background(sv.render_line(row), "xxxx") == sv.get_component_rich_style("source-view--cursor-line").bgcolor
    assert background(sv.render_line(row - 1), "xxxx") != sv.get_component_rich_style("source-view--cursor-line").bgcolor


async def check_the_view_posts_when_the_cursor_changes_line(app: Host, pilot) -> None:
    sv = view(app)
    sv.show_text(numbered(50), "n.txt")
    await pilot.pause()
    app.moved.clear()
    await pilot.press("down", "end", "down")  # end stays on the line: no message
    sv.goto(40, 1)
    await pilot.pause()
    assert app.moved == [2, 3, 40]


async def check_goto_centres_the_line_even_when_jumped_to_while_hidden(app: Host, pilot) -> None:
    sv = view(app)
    sv.show_text(numbered(5000), "n.txt")
    await pilot.pause()
    height = sv.scrollable_content_region.height
    sv.goto(3000, 9)
    await pilot.pause()
    assert sv.cursor_location == (2999, 8)
    assert abs(sv.scroll_offset.y + height // 2 - 2999) <= 1
    assert str(sv.border_subtitle) == "Ln 3000, Col 9"
    sv.goto(0, 0)  # a whole-file finding: line 0
    await pilot.pause()
    assert sv.cursor_location == (0, 0) and sv.scroll_offset.y == 0
    sv.goto(99_999, 99)  # clamped to the text
    assert sv.cursor_location == (5000, 0)
    # Jumped to while its tab is hidden (zero size): centred once shown.
    sv.display = False
    await pilot.pause()
    sv.goto(1000, 1)
    sv.display = True
    await pilot.pause()
    await pilot.pause()
    assert sv.cursor_location == (999, 0)
    assert abs(sv.scroll_offset.y + height // 2 - 999) <= 1


async def check_keep_position_on_reload(app: Host, pilot) -> None:
    sv = view(app)
    sv.show_text(numbered(300), "n.txt")
    await pilot.pause()
    sv.goto(150, 5)
    await pilot.pause()
    where, top = sv.cursor_location, sv.scroll_offset.y
    sv.show_text(numbered(300).replace("line", "LINE"), "n.txt", keep_position=True)
    await pilot.pause()
    assert sv.cursor_location == where and sv.scroll_offset.y == top
    sv.show_text(numbered(10), "short.txt", keep_position=True)  # clamped when the text shrank
    await pilot.pause()
    assert sv.cursor_location == (10, 0)
    sv.show_text(numbered(300), "other.txt")
    assert sv.cursor_location == (0, 0) and sv.scroll_offset.y == 0


async def check_highlighted_lines_are_drawn_in_the_highlight_style(app: Host, pilot) -> None:
    sv = view(app)
    sv.show_text(numbered(100), "n.txt")
    await pilot.pause()
    highlight = sv.get_component_rich_style("source-view--highlight").bgcolor
    sv.highlight_lines(4, 6)
    await pilot.pause()
    assert sv.highlighted == [(4, 6)]
    rows = {y: background(sv.render_line(y), "line") for y in range(2, 8)}
    assert [y for y, bg in rows.items() if bg == highlight] == [3, 4, 5]  # lines 4-6
    gutter = sv.get_component_rich_style("source-view--highlight-gutter").bgcolor
    assert background(sv.render_line(3), "4 ") == gutter
    sv.highlight_ranges([(20, 21), (10, 10), (11, 12)])  # an entity's mentions: merged, sorted
    assert sv.highlighted == [(10, 12), (20, 21)]
    assert background(sv.render_line(11), "line") == highlight
    assert background(sv.render_line(12), "line") != highlight
    sv.clear_highlight()
    assert sv.highlighted == []
    assert background(sv.render_line(11), "line") != highlight


async def check_tabs_and_control_characters_are_drawn_visibly(app: Host, pilot) -> None:
    sv = view(app)
    sv.show_text("a\tb\x01c\x1b[31md\x7f\n\tx\r\ny\x0bz\n", "ctl.txt")
    await pilot.pause()
    assert sv.line_count == 4
    sv.move_cursor((3, 0))  # the cursor off the lines looked at
    strip = sv.render_line(0)
    assert strip.text.startswith(" 1 a   b␁c␛[31md␡ ")  # gutter, then a tab to the next stop of 4
    assert all("\x1b" not in s.text and "\x01" not in s.text for s in strip)
    control = sv.get_component_rich_style("source-view--control", partial=True).color
    assert next(s.style.color for s in strip if s.text == "␛") == control
    assert sv.render_line(1).text.startswith(" 2     x ")  # CRLF: no CR drawn
    assert sv.render_line(2).text.startswith(" 3 y␋z")  # a vertical tab is its own stand-in, not a line break
    # Columns count characters: the cursor on the tab is drawn over its whole width.
    sv.move_cursor((0, 1))
    cursor = sv.get_component_rich_style("source-view--cursor")
    under = [s.text for s in sv.render_line(0) if s.style.bgcolor == cursor.bgcolor]
    assert under == ["   "]


async def check_long_lines_scroll_sideways_and_a_click_sets_the_cursor(app: Host, pilot) -> None:
    sv = view(app)
    text = "short\n" + "".join(f"{i % 10}" for i in range(300)) + "END\nshort\n"
    sv.show_text(text, "wide.txt")
    await pilot.pause()
    await pilot.press("w")  # soft wrap off (it is on by default: tests/ui/test_narrow_terminal.py)
    assert not sv.soft_wrap
    await pilot.press("down", "end")
    assert sv.cursor_location == (1, 303)
    assert sv.scroll_offset.x > 200
    assert sv.render_line(1).text.rstrip().endswith("END")
    assert sv.render_line(1).text.startswith(" 2 ")  # the gutter stays
    await pilot.press("home")
    assert sv.scroll_offset.x == 0
    gutter = len(str(sv.line_count)) + 2
    await pilot.click(SourceView, offset=(gutter + 3, 0))
    assert sv.cursor_location == (0, 3)
    await pilot.click(SourceView, offset=(gutter + 40, 2))  # past the end of the line
    assert sv.cursor_location == (2, 5)
    await pilot.press("w")
    assert sv.soft_wrap


async def check_copy_puts_the_cursor_line_or_its_highlighted_range_on_the_clipboard(app: Host, pilot) -> None:
    sv = view(app)
    sv.show_text("one\ntwo\r\nthree\nfour\n", "c.txt")
    await pilot.pause()
    await pilot.press("down", "y")
    assert app.clipboard == "two"
    sv.highlight_lines(2, 3)
    await pilot.press("ctrl+c")
    assert app.clipboard == "two\nthree"
    await pilot.press("down", "down", "y")  # outside the highlight: the line alone
    assert app.clipboard == "four"


async def check_an_empty_text_shows_its_note(app: Host, pilot) -> None:
    sv = view(app)
    assert "No document open." in sv.render_line(0).text
    sv.show_text("", "binary.md", note="A binary file: nothing to show.")
    await pilot.pause()
    assert not sv.show_line_numbers
    assert "A binary file: nothing to show." in sv.render_line(0).text
    await pilot.press("down", "pagedown", "end", "y")  # nothing to move over or copy; no error
    assert sv.cursor_location == (0, 0) and app.clipboard == ""


# ------------------------------------------------------------------ the tests: one Host per group
# (starting an App costs more than most checks; each check starts with its own ``show_text``, which
# resets the cursor, the scroll and the highlights, so none depends on the one before)


async def test_a_3_mb_text_opens_fast_and_keeps_its_lines() -> None:
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        await check_a_3_mb_text_opens_fast_and_keeps_its_lines(app, pilot)


async def test_the_cursor_keys_messages_goto_and_reload() -> None:
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        await check_keys_move_the_cursor_and_the_view_follows(app, pilot)
        await check_the_view_posts_when_the_cursor_changes_line(app, pilot)
        await check_goto_centres_the_line_even_when_jumped_to_while_hidden(app, pilot)
        await check_keep_position_on_reload(app, pilot)


async def test_the_note_drawing_highlights_clicks_and_copy() -> None:
    app = Host()
    async with app.run_test(size=SIZE) as pilot:
        await check_an_empty_text_shows_its_note(app, pilot)  # first: what a fresh view shows
        await check_tabs_and_control_characters_are_drawn_visibly(app, pilot)
        await check_long_lines_scroll_sideways_and_a_click_sets_the_cursor(app, pilot)
        await check_highlighted_lines_are_drawn_in_the_highlight_style(app, pilot)
        await check_copy_puts_the_cursor_line_or_its_highlighted_range_on_the_clipboard(app, pilot)
