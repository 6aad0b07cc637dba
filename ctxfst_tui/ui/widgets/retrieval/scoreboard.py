"""The scoreboard: each query of the folder's queries.yaml with ✓/✗ and its first relevant rank,
and what the last edits changed on it.

Render-only: the pane hands it the rows (``show``) and the changes; Enter on a query posts
``Scoreboard.QueryChosen`` (the pane puts its text in the query box).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.content import Content
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from ctxfst_tui.ui.widgets.retrieval.results import fit

MUTED = "$text-muted"
MARK_STYLE = {True: "bold $text-success", False: "bold $text-error"}
HISTORY_SHOWN = 6


def row_prompt(row: Any, width: int = 40) -> Content:
    """Two lines: ✓/✗, the id and the first relevant rank; the query, cut to ``width`` cells."""
    return Content.assemble(
        (f"{row.mark} ", MARK_STYLE[row.hit]), (row.id, "$text-accent"), (f" {row.rank_text}", "bold"),
        ("\n  " + fit(row.query, max(8, width - 2)), MUTED),
    )


class Scoreboard(OptionList):
    """One option per query, in the file's order; the changes called out below them."""

    @dataclass(eq=False)
    class QueryChosen(Message):
        query: str

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: list[Any] = []
        self.changes: list[str] = []
        self._width = 0
        self._note = ""
        self._k = 3
        self.border_title = "Scoreboard"

    def show(self, rows: list[Any], history: list[str], k: int, note: str = "") -> None:
        keep = self.highlighted
        self._note, self._k = note, k
        self.rows = list(rows)
        self.changes = list(history[-HISTORY_SHOWN:])
        self._width = self.scrollable_content_region.width or 40
        options: list[Option] = [Option(row_prompt(r, self._width - 1), id=f"q:{r.id}") for r in self.rows]
        if not self.rows:
            options.append(Option(Content.styled(note or "No queries.yaml here: add one with ctrl+a.", MUTED), disabled=True))
        elif note:
            options.append(Option(Content.styled(note, "$text-error"), disabled=True))
        for change in reversed(self.changes):
            options.append(Option(Content.styled(change, "$text-warning"), disabled=True))
        self.clear_options()
        self.add_options(options)
        if self.rows:
            self.highlighted = keep if keep is not None and keep < len(self.rows) else 0
        hits = sum(r.hit for r in self.rows)
        self.border_subtitle = f"{hits}/{len(self.rows)} hit@{k}" if self.rows else ""

    def on_resize(self) -> None:
        if self.rows and self.scrollable_content_region.width != self._width:
            self.show(self.rows, self.changes, self._k, self._note)  # the queries are cut to the width

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if 0 <= event.option_index < len(self.rows):
            self.post_message(self.QueryChosen(self.rows[event.option_index].query))
